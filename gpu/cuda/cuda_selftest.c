/*
 * cuda_selftest.c -- checks libgeogpu_cuda.so on its own, through the
 * backend table only (no libgeogpu): transfers, fill, copy, every kernel
 * against the same kernel body compiled for the CPU, row/column sums, FFTs,
 * argument errors; then times the bandwidth-bound operations on an
 * 8192 x 8192 float image.
 *
 *   geogpu_cuda_selftest [path/to/libgeogpu_cuda.so] [device]
 *
 * Exit status 0: all checks passed; 77: no CUDA device (skipped); 1: failed.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../backend.h"
#include "../../algorithms/kernel_ids.h"
#include "../../algorithms/kernels.h"   /* CPU build of the kernel bodies: the reference */

static const gg_backend *B;
static gg_dev *D;
static int failures;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                           \
            printf(" [dev err: %s]\n", D ? D->err : "");                   \
        }                                                                  \
    } while (0)

#define OK(call) CHECK((call) == GGB_OK, "%s", #call)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift: reproducible data without libc rand state */
static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static float *random_floats(size_t n, double nan_frac, double nodata_frac, float nodata)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        const double u = urand();
        p[i] = u < nan_frac                ? NAN
               : u < nan_frac + nodata_frac ? nodata
                                             : (float)(urand() * 100.0 + 0.5);
    }
    return p;
}

static gg_mem *dev_alloc(size_t bytes)
{
    gg_mem *m = NULL;
    OK(B->alloc(D, bytes, &m));
    return m;
}

static void upload(gg_mem *m, const void *p, size_t bytes)
{
    OK(B->write2d(D, m, 0, bytes, p, bytes, bytes, 1));
}

static void download(const gg_mem *m, void *p, size_t bytes)
{
    OK(B->read2d(D, m, 0, bytes, p, bytes, bytes, 1));
}

/* float arrays equal within tol (relative), NaN matching NaN; returns the
 * number of mismatches */
static size_t compare_floats(const float *got, const float *want, size_t n, double tol,
                             const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float a = got[i], b = want[i];
        if (isnan(a) && isnan(b))
            continue;
        if (fabs((double)a - (double)b) <= tol * fmax(1.0, fabs((double)b)))
            continue;
        if (bad < 5)
            printf("  %s[%zu]: got %.9g want %.9g\n", what, i, a, b);
        bad++;
    }
    return bad;
}

/* ----------------------------------------------------------- transfers */

static void test_transfers(void)
{
    /* 2-D sub-regions, small (direct) and large (staged, with rows larger
     * than a staging slot too) */
    const size_t cases[][3] = {
        /* row_bytes, rows, pitch slack */
        {100, 7, 28},
        {4096, 300, 0},
        {3000, 5000, 100},              /* 15 MB: several staging pieces */
        {(size_t)20 << 20, 2, 12},      /* rows of 20 MiB: segments */
        {(size_t)48 << 20, 1, 0},       /* one 48 MiB row (gg_buffer_write form) */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t row = cases[c][0], rows = cases[c][1];
        const size_t dpitch = row + cases[c][2], hpitch = row + 2 * cases[c][2] + 1;
        const size_t off = 64;
        const size_t dbytes = off + rows * dpitch;
        unsigned char *h = malloc(rows * hpitch), *back = malloc(rows * hpitch);
        for (size_t i = 0; i < rows * hpitch; i++)
            h[i] = (unsigned char)(i * 131 + c);
        memset(back, 0xEE, rows * hpitch);
        gg_mem *m = dev_alloc(dbytes);
        OK(B->fill32(D, m, 0, 0xA5A5A5A5u, dbytes / 4 * 4));
        OK(B->write2d(D, m, off, dpitch, h, hpitch, row, rows));
        OK(B->read2d(D, m, off, dpitch, back, hpitch, row, rows));
        size_t bad = 0;
        for (size_t r = 0; r < rows; r++)
            bad += memcmp(h + r * hpitch, back + r * hpitch, row) != 0;
        /* the gaps between rows on the device were not touched */
        unsigned char *all = malloc(dbytes);
        download(m, all, dbytes);
        size_t gap_bad = 0;
        for (size_t r = 0; r + 1 < rows && dpitch > row; r++)
            for (size_t i = row; i < dpitch; i++)
                gap_bad += all[off + r * dpitch + i] != 0xA5;
        CHECK(bad == 0 && gap_bad == 0, "transfer case %zu (%zu x %zu): %zu rows differ, %zu gap bytes",
              c, row, rows, bad, gap_bad);
        free(all);
        free(h);
        free(back);
        B->free(D, m);
    }
    /* out of range and bad pitch are argument errors */
    gg_mem *m = dev_alloc(1000);
    char buf[2000] = {0};
    CHECK(B->write2d(D, m, 1, 1000, buf, 1000, 1000, 1) == GGB_ERR_ARGUMENT, "overrun write");
    CHECK(B->read2d(D, m, 0, 10, buf, 20, 20, 3) == GGB_ERR_ARGUMENT, "pitch < row");
    CHECK(B->read2d(D, m, 0, 400, buf, 400, 400, 3) == GGB_ERR_ARGUMENT, "overrun read");
    B->free(D, m);
}

static void test_fill_copy(void)
{
    const size_t n = 1000003;
    gg_mem *a = dev_alloc(n * 4), *b = dev_alloc(n * 4);
    uint32_t *h = malloc(n * 4);
    OK(B->fill32(D, a, 0, 0x01020304u, n * 4));
    OK(B->fill32(D, a, 12, 0xDEADBEEFu, 4 * 777));   /* 16-byte unaligned start... */
    OK(B->fill32(D, a, 4 * 5001, 0x7FC00000u, 4 * 3)); /* ...and a 3-word fill */
    OK(B->fill32(D, b, 0, 0, n * 4));
    OK(B->copy(D, b, 8, a, 4, (n - 2) * 4));
    download(b, h, n * 4);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t src = i - 1;   /* b[i] = a[i - 1] for i >= 2 */
        uint32_t want = 0;
        if (i >= 2) {
            want = 0x01020304u;
            if (src >= 3 && src < 3 + 777)
                want = 0xDEADBEEFu;
            if (src >= 5001 && src < 5004)
                want = 0x7FC00000u;
        }
        bad += h[i] != want;
    }
    CHECK(bad == 0, "fill32/copy: %zu words wrong", bad);
    CHECK(B->fill32(D, a, 2, 0, 8) == GGB_ERR_ARGUMENT, "unaligned fill offset");
    CHECK(B->copy(D, b, 0, a, 8, n * 4) == GGB_ERR_ARGUMENT, "copy overrun");
    free(h);
    B->free(D, a);
    B->free(D, b);
}

/* -------------------------------------------------------------- kernels */

typedef void (*cpu_kernel_fn)(int nx, int ny, const void *pp, void *const *bufs);

/* Runs kernel id on the device and its CPU twin on the host over the same
 * inputs (bufs[0..ninputs-1]) and compares the last buffer. */
static void run_kernel_case(const char *what, int id, cpu_kernel_fn cpu, int nx, int ny,
                            const void *params, size_t psize, int nbufs, void **host,
                            const size_t *bytes, int out_is_u8, double tol, size_t allowed)
{
    gg_mem *m[4];
    for (int i = 0; i < nbufs; i++) {
        m[i] = dev_alloc(bytes[i]);
        if (i < nbufs - 1)
            upload(m[i], host[i], bytes[i]);
        else
            OK(B->fill32(D, m[i], 0, 0, bytes[i] / 4 * 4));
    }
    OK(B->launch(D, id, nx, ny, params, psize, m, nbufs));
    OK(B->finish(D));
    const size_t ob = bytes[nbufs - 1];
    void *got = calloc(1, ob);
    memset(host[nbufs - 1], 0, ob);
    download(m[nbufs - 1], got, ob);
    cpu(nx, ny, params, host);
    size_t bad;
    if (out_is_u8) {
        bad = 0;
        const unsigned char *g = got, *w = host[nbufs - 1];
        for (size_t i = 0; i < ob; i++)
            bad += abs((int)g[i] - (int)w[i]) > 1;
    } else {
        bad = compare_floats(got, host[nbufs - 1], ob / 4, tol, what);
    }
    CHECK(bad <= allowed, "kernel %s: %zu of %zu outputs differ", what, bad,
          out_is_u8 ? ob : ob / 4);
    printf("  kernel %-22s %5d x %-5d ok (%zu differ)\n", what, nx, ny, bad);
    int bx = 0, by = 0;
    double occ = 0;
    OK(B->launch_info(D, id, &bx, &by, &occ));
    printf("    block %d x %d, occupancy %.2f\n", bx, by, occ);
    CHECK(bx > 0 && by > 0 && occ > 0 && occ <= 1.0, "launch_info");
    /* wrong params size / buffer count are argument errors */
    CHECK(B->launch(D, id, nx, ny, params, psize + 4, m, nbufs) == GGB_ERR_ARGUMENT,
          "params size check");
    CHECK(B->launch(D, id, nx, ny, params, psize, m, nbufs - 1) == GGB_ERR_ARGUMENT,
          "nbufs check");
    OK(B->launch(D, id, 0, ny, params, psize, m, nbufs));   /* empty grid: no-op */
    for (int i = 0; i < nbufs; i++)
        B->free(D, m[i]);
    free(got);
}

static void test_kernels(void)
{
    const int W = 1001, H = 603;
    const float nodata = -9999.0f;
    float *real = random_floats((size_t)W * H, 0.01, 0.02, nodata);
    float *cplx = random_floats((size_t)W * H * 2, 0.005, 0.01, nodata);

    { /* multilook, real and intensity */
        gg_multilook_params p = {.in_stride = W, .looks_x = 3, .looks_y = 2, .mode = GG_ML_REAL,
                                 .has_nodata = 1, .nodata = nodata, .dst_nodata = -1.0f};
        const int ox = W / 3, oy = H / 2;
        size_t bytes[2] = {(size_t)W * H * 4, (size_t)ox * oy * 4};
        void *host[2] = {real, malloc(bytes[1])};
        run_kernel_case("multilook real", GG_K_MULTILOOK, gg_k_multilook_cpu, ox, oy, &p,
                        sizeof p, 2, host, bytes, 0, 1e-5, 0);
        p.mode = GG_ML_INTENSITY;
        void *host2[2] = {cplx, host[1]};
        size_t bytes2[2] = {(size_t)W * H * 8, bytes[1]};
        run_kernel_case("multilook intensity", GG_K_MULTILOOK, gg_k_multilook_cpu, ox, oy, &p,
                        sizeof p, 2, host2, bytes2, 0, 1e-5, 0);
        p.mode = GG_ML_COMPLEX;
        void *host3[2] = {cplx, malloc(bytes[1] * 2)};
        size_t bytes3[2] = {(size_t)W * H * 8, bytes[1] * 2};
        run_kernel_case("multilook complex", GG_K_MULTILOOK, gg_k_multilook_cpu, ox, oy, &p,
                        sizeof p, 2, host3, bytes3, 0, 1e-5, 0);
        free(host[1]);
        free(host3[1]);
    }
    { /* rotate by 30 degrees, scale 1.3, real and complex */
        const double a = 30.0 * M_PI / 180.0, s = 1.0 / 1.3;
        const int dw = 900, dh = 700;
        gg_rotate_params p = {.m00 = s * cos(a), .m01 = s * sin(a), .m10 = -s * sin(a),
                              .m11 = s * cos(a), .src_cx = (W - 1) / 2.0, .src_cy = (H - 1) / 2.0,
                              .dst_cx = (dw - 1) / 2.0, .dst_cy = (dh - 1) / 2.0, .src_w = W,
                              .src_h = H, .tile_x0 = 0, .tile_y0 = 0, .tile_w = W, .tile_h = H,
                              .dst_x0 = 0, .dst_y0 = 0, .channels = 1, .has_nodata = 1,
                              .nodata = nodata, .dst_nodata = -1.0f};
        size_t bytes[2] = {(size_t)W * H * 4, (size_t)dw * dh * 4};
        void *host[2] = {real, malloc(bytes[1] * 2)};
        /* a weight exactly at a tie may round differently with FMA: allow a few */
        run_kernel_case("rotate real", GG_K_ROTATE, gg_k_rotate_cpu, dw, dh, &p, sizeof p, 2, host,
                        bytes, 0, 1e-4, 20);
        p.channels = 2;
        size_t bytes2[2] = {(size_t)W * H * 8, (size_t)dw * dh * 8};
        void *host2[2] = {cplx, host[1]};
        run_kernel_case("rotate complex", GG_K_ROTATE, gg_k_rotate_cpu, dw, dh, &p, sizeof p, 2,
                        host2, bytes2, 0, 1e-4, 40);
        free(host[1]);
    }
    { /* cabs */
        gg_cabs_params p = {.has_nodata = 1, .nodata = nodata};
        size_t bytes[2] = {(size_t)W * H * 8, (size_t)W * H * 4};
        void *host[2] = {cplx, malloc(bytes[1])};
        run_kernel_case("cabs", GG_K_CABS, gg_k_cabs_cpu, W, H, &p, sizeof p, 2, host, bytes, 0,
                        1e-6, 0);
        free(host[1]);
    }
    { /* radnorm float and quantised */
        float *rm = random_floats(H, 0.0, 0.0, 0), *cm = random_floats(W, 0.0, 0.0, 0);
        rm[5] = 0.0f;     /* divisor 0: nodata */
        cm[7] = NAN;
        gg_radnorm_params p = {.scale = 2.5, .has_nodata = 1, .nodata = nodata,
                               .dst_nodata = -1.0f, .levels = 256, .dst_nodata_u8 = 0};
        size_t bytes[4] = {(size_t)W * H * 4, (size_t)H * 4, (size_t)W * 4, (size_t)W * H * 4};
        void *host[4] = {real, rm, cm, malloc(bytes[3])};
        run_kernel_case("radnorm", GG_K_RADNORM, gg_k_radnorm_cpu, W, H, &p, sizeof p, 4, host,
                        bytes, 0, 1e-6, 0);
        /* quantised: scale so levels are actually hit */
        p.scale = 40000.0;
        size_t bytesq[4] = {bytes[0], bytes[1], bytes[2], (size_t)W * H};
        run_kernel_case("radnorm_q", GG_K_RADNORM_Q, gg_k_radnorm_q_cpu, W, H, &p, sizeof p, 4,
                        host, bytesq, 1, 0, 0);
        free(host[3]);
        free(rm);
        free(cm);
    }
    CHECK(B->launch(D, GG_K_COUNT, 1, 1, NULL, 0, NULL, 0) == GGB_ERR_ARGUMENT, "bad kernel id");
    free(real);
    free(cplx);
}

/* -------------------------------------------------------- row/col sums */

static void rowcol_reference(const float *img, int w, int h, int stride, int has_nd, float nd,
                             double *rs, double *rc, double *cs, double *cc)
{
    memset(cs, 0, (size_t)w * 8);
    memset(cc, 0, (size_t)w * 8);
    for (int y = 0; y < h; y++) {
        double s = 0, n = 0;
        for (int x = 0; x < w; x++) {
            const float v = img[(size_t)y * stride + x];
            if (gg_valid(v, has_nd, nd)) {
                s += v;
                n += 1;
                cs[x] += v;
                cc[x] += 1;
            }
        }
        rs[y] = s;
        rc[y] = n;
    }
}

static size_t compare_doubles(const double *got, const double *want, size_t n, double tol,
                              const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])))
            continue;
        if (bad < 5)
            printf("  %s[%zu]: got %.17g want %.17g\n", what, i, got[i], want[i]);
        bad++;
    }
    return bad;
}

static void test_rowcol(int w, int h, int stride, int has_nd)
{
    const float nd = 0.0f;
    float *img = random_floats((size_t)stride * h, 0.02, 0.05, nd);
    double *ref = malloc(((size_t)w + h) * 2 * 8), *got = malloc(((size_t)w + h) * 2 * 8);
    double *rs = ref, *rc = ref + h, *cs = ref + 2 * h, *cc = ref + 2 * h + w;
    rowcol_reference(img, w, h, stride, has_nd, nd, rs, rc, cs, cc);
    gg_mem *m = dev_alloc((size_t)stride * h * 4);
    upload(m, img, (size_t)stride * h * 4);
    gg_mem *o[4] = {dev_alloc((size_t)h * 8), dev_alloc((size_t)h * 8), dev_alloc((size_t)w * 8),
                    dev_alloc((size_t)w * 8)};
    for (int i = 0; i < 4; i++)   /* stale values must be overwritten */
        OK(B->fill32(D, o[i], 0, 0x3F800000u, (i < 2 ? (size_t)h : (size_t)w) * 8));
    gg_rowcol_args a = {.width = w, .height = h, .stride = stride, .has_nodata = has_nd,
                        .nodata = nd};
    OK(B->rowcol_sums(D, m, &a, o[0], o[1], o[2], o[3]));
    OK(B->finish(D));
    download(o[0], got, (size_t)h * 8);
    download(o[1], got + h, (size_t)h * 8);
    download(o[2], got + 2 * h, (size_t)w * 8);
    download(o[3], got + 2 * h + w, (size_t)w * 8);
    size_t bad = compare_doubles(got, rs, h, 1e-10, "row_sum") +
                 compare_doubles(got + h, rc, h, 0, "row_cnt") +
                 compare_doubles(got + 2 * h, cs, w, 1e-10, "col_sum") +
                 compare_doubles(got + 2 * h + w, cc, w, 0, "col_cnt");
    CHECK(bad == 0, "rowcol_sums %d x %d stride %d nodata %d: %zu values differ", w, h, stride,
          has_nd, bad);
    printf("  rowcol_sums %5d x %-5d stride %-5d nodata %d ok\n", w, h, stride, has_nd);
    for (int i = 0; i < 4; i++)
        B->free(D, o[i]);
    B->free(D, m);
    free(img);
    free(ref);
    free(got);
}

/* ------------------------------------------------------------------ FFT */

static void naive_dft(const float *in, double *out, int rank, const int *n, int batch, int inv)
{
    const int n0 = n[0], n1 = rank == 2 ? n[1] : 1, pts = n0 * n1;
    const double sgn = inv ? 1.0 : -1.0;
    for (int b = 0; b < batch; b++)
        for (int k0 = 0; k0 < n0; k0++)
            for (int k1 = 0; k1 < n1; k1++) {
                double re = 0, im = 0;
                for (int j0 = 0; j0 < n0; j0++)
                    for (int j1 = 0; j1 < n1; j1++) {
                        const double ph = sgn * 2 * M_PI *
                                          ((double)k0 * j0 / n0 + (double)k1 * j1 / n1);
                        const float *z = in + 2 * ((size_t)b * pts + j0 * n1 + j1);
                        re += z[0] * cos(ph) - z[1] * sin(ph);
                        im += z[0] * sin(ph) + z[1] * cos(ph);
                    }
                double *o = out + 2 * ((size_t)b * pts + k0 * n1 + k1);
                o[0] = re;
                o[1] = im;
            }
}

static void test_fft(int rank, int n0, int n1, int batch)
{
    const int n[2] = {n0, n1};
    const size_t pts = (size_t)n0 * (rank == 2 ? n1 : 1), total = pts * batch;
    float *x = random_floats(total * 2, 0, 0, 0), *y = malloc(total * 8);
    double *ref = malloc(total * 16);
    void *plan = NULL;
    OK(B->fft_plan(D, rank, n, batch, &plan));
    if (!plan)
        return;
    gg_mem *m = dev_alloc(total * 8);
    for (int inv = 0; inv <= 1; inv++) {
        upload(m, x, total * 8);
        OK(B->fft_exec(D, plan, m, inv));
        OK(B->finish(D));
        download(m, y, total * 8);
        naive_dft(x, ref, rank, n, batch, inv);
        double err = 0, norm = 0;
        for (size_t i = 0; i < total * 2; i++) {
            err = fmax(err, fabs(y[i] - ref[i]));
            norm = fmax(norm, fabs(ref[i]));
        }
        CHECK(err <= 1e-5 * norm, "fft rank %d %dx%d batch %d %s: max error %g of %g", rank, n0,
              n1, batch, inv ? "inverse" : "forward", err, norm);
    }
    printf("  fft rank %d %d x %d batch %d ok\n", rank, n0, rank == 2 ? n1 : 1, batch);
    gg_mem *small = dev_alloc(8);
    CHECK(B->fft_exec(D, plan, small, 0) == GGB_ERR_ARGUMENT, "fft on too small a buffer");
    B->free(D, small);
    B->fft_destroy(D, plan);
    B->free(D, m);
    free(x);
    free(y);
    free(ref);
}

/* ---------------------------------------------------------- bandwidth */

static void bench(void)
{
    const int W = 8192, H = 8192;
    const size_t n = (size_t)W * H, bytes = n * 4;
    float *img = random_floats(n, 0.01, 0.0, 0);
    float *back = malloc(bytes);
    gg_mem *a = dev_alloc(bytes), *b = dev_alloc(bytes);
    gg_mem *o[4] = {dev_alloc(H * 8), dev_alloc(H * 8), dev_alloc(W * 8), dev_alloc(W * 8)};
    const int reps = 10;
    double t;

    upload(a, img, bytes);   /* warm-up: staging allocation, first-touch */
    t = now();
    for (int i = 0; i < 3; i++)
        upload(a, img, bytes);
    t = (now() - t) / 3;
    printf("  write2d pageable 256 MiB: %.2f ms, %.1f GB/s\n", t * 1e3, bytes / t / 1e9);
    download(a, back, bytes);
    t = now();
    for (int i = 0; i < 3; i++)
        download(a, back, bytes);
    t = (now() - t) / 3;
    printf("  read2d  pageable 256 MiB: %.2f ms, %.1f GB/s\n", t * 1e3, bytes / t / 1e9);
    CHECK(memcmp(img, back, bytes) == 0, "256 MiB round trip");

    OK(B->copy(D, b, 0, a, 0, bytes));
    OK(B->finish(D));
    t = now();
    for (int i = 0; i < reps; i++)
        OK(B->copy(D, b, 0, a, 0, bytes));
    OK(B->finish(D));
    t = (now() - t) / reps;
    const double copy_bw = 2.0 * bytes / t / 1e9;
    printf("  copy 256 MiB: %.3f ms, %.0f GB/s (read + write)\n", t * 1e3, copy_bw);

    OK(B->fill32(D, b, 0, 0, bytes));
    OK(B->finish(D));
    t = now();
    for (int i = 0; i < reps; i++)
        OK(B->fill32(D, b, 0, 0x3F800000u, bytes));
    OK(B->finish(D));
    t = (now() - t) / reps;
    printf("  fill32 256 MiB: %.3f ms, %.0f GB/s\n", t * 1e3, bytes / t / 1e9);

    gg_rowcol_args ra = {.width = W, .height = H, .stride = W, .has_nodata = 1, .nodata = 0};
    OK(B->rowcol_sums(D, a, &ra, o[0], o[1], o[2], o[3]));
    OK(B->finish(D));
    t = now();
    for (int i = 0; i < reps; i++)
        OK(B->rowcol_sums(D, a, &ra, o[0], o[1], o[2], o[3]));
    OK(B->finish(D));
    t = (now() - t) / reps;
    printf("  rowcol_sums 8192 x 8192: %.3f ms, %.0f GB/s read (%.0f%% of copy read+write rate)\n",
           t * 1e3, bytes / t / 1e9, 100.0 * (bytes / t / 1e9) / copy_bw);

    float *rm = malloc(H * 4), *cm = malloc(W * 4);
    for (int i = 0; i < H; i++)
        rm[i] = 1.0f + i % 7;
    for (int i = 0; i < W; i++)
        cm[i] = 1.0f + i % 5;
    gg_mem *mr = dev_alloc(H * 4), *mc = dev_alloc(W * 4);
    upload(mr, rm, H * 4);
    upload(mc, cm, W * 4);
    gg_radnorm_params p = {.scale = 1.0, .has_nodata = 1, .nodata = 0, .dst_nodata = -1,
                           .levels = 256, .dst_nodata_u8 = 0};
    gg_mem *args[4] = {a, mr, mc, b};
    OK(B->launch(D, GG_K_RADNORM, W, H, &p, sizeof p, args, 4));
    OK(B->finish(D));
    t = now();
    for (int i = 0; i < reps; i++)
        OK(B->launch(D, GG_K_RADNORM, W, H, &p, sizeof p, args, 4));
    OK(B->finish(D));
    t = (now() - t) / reps;
    printf("  radnorm 8192 x 8192: %.3f ms, %.0f GB/s (read + write)\n", t * 1e3,
           2.0 * bytes / t / 1e9);

    B->free(D, mr);
    B->free(D, mc);
    free(rm);
    free(cm);
    for (int i = 0; i < 4; i++)
        B->free(D, o[i]);
    B->free(D, a);
    B->free(D, b);
    free(img);
    free(back);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "libgeogpu_cuda.so";
    const int index = argc > 2 ? atoi(argv[2]) : -1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    gg_backend_entry_fn entry = (gg_backend_entry_fn)dlsym(h, "gg_backend_cuda_entry");
    if (!entry || !(B = entry()) || B->abi != GG_BACKEND_ABI) {
        printf("FAIL: no usable gg_backend_cuda_entry\n");
        return 1;
    }
    char list[4096];
    const int count = B->list(list, sizeof list);
    printf("list: %d device(s)\n%s", count, list);
    char err[GG_ERRLEN] = "";
    int rc = B->open(index, -1, 1, &D, err, sizeof err);
    if (rc != GGB_OK) {
        printf("open: %d %s\n", rc, err);
        if (rc == GGB_ERR_UNAVAILABLE && count == 0) {
            printf("SKIP: no CUDA device\n");
            return 77;
        }
        return 1;
    }
    printf("device: %s\n", D->name);
    size_t fr = 0, tot = 0;
    OK(B->mem_info(D, &fr, &tot));
    printf("memory: %zu MiB free of %zu MiB\n", fr >> 20, tot >> 20);
    CHECK(B->open(count, -1, 0, &(gg_dev *){NULL}, err, sizeof err) == GGB_ERR_UNAVAILABLE,
          "open past the last device");
    printf("open(cuda:%d): %s\n", count, err);

    test_transfers();
    test_fill_copy();
    test_kernels();
    test_rowcol(8192, 1000, 8192, 1);
    test_rowcol(1000, 777, 1003, 1);   /* stride not a multiple of 4: scalar loads */
    test_rowcol(257, 3001, 260, 0);
    test_rowcol(1, 5, 1, 1);
    test_fft(1, 64, 1, 5);
    test_fft(1, 60, 1, 3);
    test_fft(2, 16, 24, 2);
    OK(B->finish(D));
    if (!getenv("GG_SELFTEST_NO_BENCH"))
        bench();
    OK(B->finish(D));
    B->close(D);
    printf("%s (%d failure%s)\n", failures ? "FAILED" : "PASSED", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
