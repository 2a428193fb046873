/*
 * bench_kernels.c -- memory-bandwidth benchmark of the airborne-SAR kernels
 * on each backend, straight through the backend table (no host tiling, no
 * transfers inside the timed region).
 *
 *   bench_kernels [-size N|WxH] [-reps R] [-warmup W] [-batch K] [-xfer-mb M]
 *                 [-o table.md] [-list | -probe] [DEVICE[,DEVICE...] ...]
 *
 * Devices default to "cuda,opencl".  For each device it measures
 *   - the device-to-device copy bandwidth (vt->copy, bytes read + written),
 *     the ceiling every kernel here is compared with (they are all
 *     memory-bound: a few flops per byte);
 *   - host->device and device->host rates of one M MiB tile through
 *     gg_buffer_write / gg_buffer_read (pageable host memory, as the
 *     utilities use);
 *   - each kernel: median / min / max of R timed runs after W warm-ups,
 *     each run bracketed by vt->finish (host CLOCK_MONOTONIC), counting the
 *     fewest bytes it must move (input read once + output written once).
 * Every kernel's output is poisoned with a NaN pattern (vt->fill32) before
 * a checked run, then read back and scanned: every element written, all
 * finite, and a random sample equal to a float64 host reference.  Inputs
 * are random and non-zero.  Exit status 1 if any check or call failed.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "rng.h" /* tests/tools/rng.h, shared with gg_make_input */
#include "gpu/runtime.h"
#include "kernel_ids.h"
#include "sar/rotate.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POISON_F32 0x7FC0DEADu /* a quiet NaN no kernel computes */
#define POISON_U8 0xFEFEFEFEu  /* 254: above every level used here */
#define RN_LEVELS 200
#define DST_NODATA (-9999.0f)
#define NSAMPLE 4000

/* ------------------------------------------------------------ helpers */

static int g_fail;

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    g_fail = 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}


static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of host memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

/* ------------------------------------------------------------ state */

enum { K_ML_REAL, K_ML_INT, K_ROTATE, K_ROWCOL, K_RADNORM, K_RADNORM_Q, K_N };
static const char *k_names[K_N] = {"multilook 4x4 real",  "multilook 4x4 complex->intensity",
                                   "rotate 30deg scale 1", "rowcol_sums",
                                   "radnorm apply (Float32)", "radnorm apply (Byte, 200 levels)"};
static const int k_ids[K_N] = {GG_K_MULTILOOK, GG_K_MULTILOOK, GG_K_ROTATE, -1, GG_K_RADNORM,
                               GG_K_RADNORM_Q};

typedef struct {
    gg_context *ctx;
    const gg_backend *vt;
    gg_dev *dev;
    int W, H;
    /* host data */
    float *h_real, *h_cplx, *h_rmean, *h_cmean;
    double *h_gy, *h_gx;
    /* device buffers */
    gg_buffer *real_in, *cplx_in, *big_dst, *out, *rmean, *cmean, *rs, *rc, *cs, *cc;
    gg_multilook_params ml;
    gg_rotate_params rot;
    gg_radnorm_params rn;
    gg_rowcol_args rca;
} bench;

typedef struct {
    const char *name;
    double bytes, med, min, max; /* seconds */
    int bx, by, has_info;
    double occ;
    const char *check;
} row;

static int dev_call(bench *b, int rc, const char *what)
{
    if (rc != GGB_OK) {
        fail("%s: %s: %s", gg_context_device_name(b->ctx), what, b->dev->err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ kernels */

static int ml_size(const bench *b, int *ox, int *oy)
{
    *ox = b->W / 4;
    *oy = b->H / 4;
    return 0;
}

static int run_kernel(bench *b, int k)
{
    int ox, oy;
    gg_mem *m2[2], *m4[4];
    gg_multilook_params ml = b->ml;
    switch (k) {
    case K_ML_REAL:
    case K_ML_INT:
        ml_size(b, &ox, &oy);
        ml.mode = k == K_ML_REAL ? GG_ML_REAL : GG_ML_INTENSITY;
        m2[0] = gg_rt_mem(k == K_ML_REAL ? b->real_in : b->cplx_in);
        m2[1] = gg_rt_mem(b->out);
        return b->vt->launch(b->dev, GG_K_MULTILOOK, ox, oy, &ml, sizeof ml, m2, 2);
    case K_ROTATE:
        m2[0] = gg_rt_mem(b->real_in);
        m2[1] = gg_rt_mem(b->out);
        return b->vt->launch(b->dev, GG_K_ROTATE, b->W, b->H, &b->rot, sizeof b->rot, m2, 2);
    case K_ROWCOL:
        return b->vt->rowcol_sums(b->dev, gg_rt_mem(b->real_in), &b->rca, gg_rt_mem(b->rs),
                                  gg_rt_mem(b->rc), gg_rt_mem(b->cs), gg_rt_mem(b->cc));
    case K_RADNORM:
    case K_RADNORM_Q:
        m4[0] = gg_rt_mem(b->real_in);
        m4[1] = gg_rt_mem(b->rmean);
        m4[2] = gg_rt_mem(b->cmean);
        m4[3] = gg_rt_mem(b->out);
        return b->vt->launch(b->dev, k == K_RADNORM ? GG_K_RADNORM : GG_K_RADNORM_Q, b->W, b->H,
                             &b->rn, sizeof b->rn, m4, 4);
    }
    return GGB_ERR_ARGUMENT;
}

static double k_bytes(const bench *b, int k)
{
    const double n = (double)b->W * b->H, nl = (double)(b->W / 4) * (b->H / 4);
    switch (k) {
    case K_ML_REAL: return 4 * n + 4 * nl;
    case K_ML_INT: return 8 * n + 4 * nl;
    case K_ROTATE: return 4 * n + 4 * n;
    case K_ROWCOL: return 4 * n + 16.0 * (b->W + b->H);
    case K_RADNORM: return 4 * n + 4.0 * (b->W + b->H) + 4 * n;
    case K_RADNORM_Q: return 4 * n + 4.0 * (b->W + b->H) + 1 * n;
    }
    return 0;
}

/* float64 references of single output elements */
static double ref_ml(const bench *b, int k, int x, int y)
{
    double s = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            const size_t idx = (size_t)(4 * y + j) * b->W + (size_t)(4 * x + i);
            if (k == K_ML_REAL) {
                s += b->h_real[idx];
            } else {
                const double re = b->h_cplx[2 * idx], im = b->h_cplx[2 * idx + 1];
                s += re * re + im * im;
            }
        }
    return s / 16.0;
}

static double ref_rotate(const bench *b, int x, int y, int *valid)
{
    const gg_rotate_params *p = &b->rot;
    const double dx = x - p->dst_cx, dy = y - p->dst_cy;
    const double sx = p->src_cx + p->m00 * dx + p->m01 * dy;
    const double sy = p->src_cy + p->m10 * dx + p->m11 * dy;
    *valid = sx >= -0.5 && sx <= p->src_w - 0.5 && sy >= -0.5 && sy <= p->src_h - 0.5;
    /* within rounding of the footprint edge the device (FMA contraction)
     * may decide either way: not a sample to judge by */
    const double margin = fmin(fmin(fabs(sx + 0.5), fabs(sx - (p->src_w - 0.5))),
                               fmin(fabs(sy + 0.5), fabs(sy - (p->src_h - 0.5))));
    if (margin < 1e-6)
        *valid = -1;
    if (*valid != 1)
        return DST_NODATA;
    const double cx = fmin(fmax(sx, 0.0), p->src_w - 1.0), cy = fmin(fmax(sy, 0.0), p->src_h - 1.0);
    int ix = (int)floor(cx), iy = (int)floor(cy);
    if (ix > p->src_w - 2)
        ix = p->src_w - 2;
    if (iy > p->src_h - 2)
        iy = p->src_h - 2;
    const double fx = cx - ix, fy = cy - iy;
    const float *in = b->h_real;
    const size_t W = (size_t)b->W, r0 = (size_t)iy * W, r1 = r0 + W;
    return (1 - fx) * (1 - fy) * in[r0 + ix] + fx * (1 - fy) * in[r0 + ix + 1] +
           (1 - fx) * fy * in[r1 + ix] + fx * fy * in[r1 + ix + 1];
}

static double ref_radnorm(const bench *b, int x, int y)
{
    const double v = b->h_real[(size_t)y * b->W + x];
    const double d = (double)b->h_rmean[y] * (double)b->h_cmean[x];
    return b->rn.scale * (v / d);
}

/* Poisons the output, runs once, reads back and scans.  Returns a short
 * verdict for the table. */
static const char *check_kernel(bench *b, int k, uint64_t seed)
{
    const size_t n = (size_t)b->W * b->H;
    const int W = b->W, H = b->H;
    int ox = W, oy = H;
    if (k == K_ML_REAL || k == K_ML_INT)
        ml_size(b, &ox, &oy);
    const size_t nout = (size_t)ox * oy;

    if (k == K_ROWCOL) {
        gg_mem *bufs[4] = {gg_rt_mem(b->rs), gg_rt_mem(b->rc), gg_rt_mem(b->cs), gg_rt_mem(b->cc)};
        const size_t len[4] = {(size_t)H * 8, (size_t)H * 8, (size_t)W * 8, (size_t)W * 8};
        for (int i = 0; i < 4; i++)
            if (dev_call(b, b->vt->fill32(b->dev, bufs[i], 0, POISON_F32, len[i]), "fill32"))
                return "ERROR";
        if (dev_call(b, run_kernel(b, k), k_names[k]) || dev_call(b, b->vt->finish(b->dev), "finish"))
            return "ERROR";
        double *h = xmalloc(2 * ((size_t)W + H) * sizeof *h);
        double *hr = h, *hrc = h + H, *hcs = h + 2 * H, *hcc = h + 2 * H + W;
        if (gg_buffer_read(b->ctx, b->rs, 0, hr, (size_t)H * 8) || gg_buffer_read(b->ctx, b->rc, 0, hrc, (size_t)H * 8) ||
            gg_buffer_read(b->ctx, b->cs, 0, hcs, (size_t)W * 8) || gg_buffer_read(b->ctx, b->cc, 0, hcc, (size_t)W * 8)) {
            fail("%s: read back: %s", k_names[k], gg_context_last_error(b->ctx));
            free(h);
            return "ERROR";
        }
        size_t bad = 0;
        for (int y = 0; y < H; y++)
            bad += !isfinite(hr[y]) || hrc[y] != W;
        for (int x = 0; x < W; x++)
            bad += !isfinite(hcs[x]) || hcc[x] != H;
        double worst = 0;
        uint64_t s = seed;
        for (int t = 0; t < 32; t++) { /* 16 rows, 16 columns in float64 */
            double ref = 0, got;
            if (t < 16) {
                const int y = (int)(u01(&s) * H);
                for (int x = 0; x < W; x++)
                    ref += b->h_real[(size_t)y * W + x];
                got = hr[y];
            } else {
                const int x = (int)(u01(&s) * W);
                for (int y = 0; y < H; y++)
                    ref += b->h_real[(size_t)y * W + x];
                got = hcs[x];
            }
            worst = fmax(worst, fabs(got - ref) / fabs(ref));
        }
        free(h);
        if (bad || !(worst <= 1e-5)) {
            fail("%s on %s: %zu unwritten/wrong sums or counts, worst relative error %.3g",
                 k_names[k], gg_context_device_name(b->ctx), bad, worst);
            return "FAIL";
        }
        return "ok";
    }

    const int is_u8 = k == K_RADNORM_Q;
    const size_t es = is_u8 ? 1 : 4;
    if (dev_call(b, b->vt->fill32(b->dev, gg_rt_mem(b->out), 0, is_u8 ? POISON_U8 : POISON_F32,
                                  (nout * es + 3) / 4 * 4), "fill32"))
        return "ERROR";
    if (dev_call(b, run_kernel(b, k), k_names[k]) || dev_call(b, b->vt->finish(b->dev), "finish"))
        return "ERROR";
    void *h = xmalloc(nout * es);
    if (gg_buffer_read(b->ctx, b->out, 0, h, nout * es) != GG_OK) {
        fail("%s: read back: %s", k_names[k], gg_context_last_error(b->ctx));
        free(h);
        return "ERROR";
    }
    size_t unwritten = 0, nonfinite = 0;
    if (is_u8) {
        const unsigned char *o = h;
        for (size_t i = 0; i < nout; i++)
            unwritten += o[i] >= RN_LEVELS;
    } else {
        const float *o = h;
        for (size_t i = 0; i < nout; i++) {
            uint32_t bits;
            memcpy(&bits, &o[i], 4);
            unwritten += bits == POISON_F32;
            nonfinite += !isfinite(o[i]);
        }
    }
    /* random sample against float64 */
    double worst = 0;
    size_t mism = 0;
    uint64_t s = seed;
    for (int t = 0; t < NSAMPLE; t++) {
        const int x = (int)(u01(&s) * ox), y = (int)(u01(&s) * oy);
        const size_t o = (size_t)y * ox + x;
        double ref, got;
        int valid = 1;
        if (k == K_ML_REAL || k == K_ML_INT)
            ref = ref_ml(b, k, x, y);
        else if (k == K_ROTATE)
            ref = ref_rotate(b, x, y, &valid);
        else
            ref = ref_radnorm(b, x, y);
        if (is_u8) {
            const double q = fmin(fmax(floor(ref + 0.5), 0), RN_LEVELS - 1);
            got = ((unsigned char *)h)[o];
            mism += fabs(got - q) > 1; /* a tie may round either way */
            continue;
        }
        got = ((float *)h)[o];
        if (valid < 0)
            continue;
        if (!isfinite(got)) { /* fmax below would drop a NaN */
            mism++;
            continue;
        }
        if (!valid || got == DST_NODATA) {
            mism += got != (float)ref;
            continue;
        }
        worst = fmax(worst, fabs(got - ref) / fmax(fabs(ref), 1e-3));
    }
    (void)n;
    free(h);
    const double tol = k == K_ROTATE ? 1e-4 : 1e-5;
    if (unwritten || nonfinite || mism || !(worst <= tol)) {
        fail("%s on %s: %zu of %zu outputs unwritten, %zu not finite, %zu sample mismatches, "
             "worst relative error %.3g (tolerance %.0e)",
             k_names[k], gg_context_device_name(b->ctx), unwritten, nout, nonfinite, mism, worst, tol);
        return "FAIL";
    }
    return "ok";
}

/* Median/min/max of reps runs of op k (k < 0: the copy) after warm-ups. */
static int g_batch = 1; /* launches per timed run (-batch) */

static int time_runs(bench *b, int k, int warmup, int reps, row *r)
{
    double *t = xmalloc((size_t)reps * sizeof *t);
    const size_t cbytes = (size_t)b->W * b->H * 8;
    for (int i = -warmup; i < reps; i++) {
        if (dev_call(b, b->vt->finish(b->dev), "finish")) {
            free(t);
            return -1;
        }
        const double t0 = now_s();
        int rc = GGB_OK;
        for (int j = 0; j < g_batch && rc == GGB_OK; j++)
            rc = k < 0 ? b->vt->copy(b->dev, gg_rt_mem(b->big_dst), 0, gg_rt_mem(b->cplx_in), 0, cbytes)
                       : run_kernel(b, k);
        if (rc == GGB_OK)
            rc = b->vt->finish(b->dev);
        const double t1 = now_s();
        if (dev_call(b, rc, k < 0 ? "copy" : k_names[k])) {
            free(t);
            return -1;
        }
        if (i >= 0)
            t[i] = (t1 - t0) / g_batch;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    r->med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    r->min = t[0];
    r->max = t[reps - 1];
    free(t);
    return 0;
}

/* gg_buffer_write/read of one xfer-byte tile (pageable host memory). */
static int time_transfers(bench *b, size_t xfer, int reps, double *h2d, double *d2h)
{
    unsigned char *host = xmalloc(xfer);
    for (size_t i = 0; i < xfer; i++)
        host[i] = (unsigned char)(i * 131u + 7u);
    gg_buffer *d = NULL;
    if (gg_buffer_alloc(b->ctx, xfer, &d) != GG_OK) {
        fail("transfer buffer: %s", gg_context_last_error(b->ctx));
        free(host);
        return -1;
    }
    double *t = xmalloc((size_t)reps * 2 * sizeof *t);
    int rc = 0;
    for (int i = -2; i < reps && !rc; i++) {
        double t0 = now_s();
        rc = gg_buffer_write(b->ctx, d, 0, host, xfer);
        double t1 = now_s();
        if (!rc)
            rc = gg_buffer_read(b->ctx, d, 0, host, xfer);
        double t2 = now_s();
        if (i >= 0) {
            t[i] = t1 - t0;
            t[reps + i] = t2 - t1;
        }
    }
    if (rc) {
        fail("transfer: %s", gg_context_last_error(b->ctx));
    } else {
        /* the round trip must preserve the data */
        for (size_t i = 0; i < xfer; i += 4093)
            if (host[i] != (unsigned char)(i * 131u + 7u)) {
                fail("transfer round trip corrupted byte %zu", i);
                break;
            }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        qsort(t + reps, (size_t)reps, sizeof *t, cmp_double);
        *h2d = xfer / t[reps / 2] / 1e9;
        *d2h = xfer / t[reps + reps / 2] / 1e9;
    }
    free(t);
    gg_buffer_free(b->ctx, d);
    free(host);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------ setup */

/* Random non-zero data with separable gain profiles, like an airborne
 * SAR image before normalisation: I = g(y) h(x) * Exp(1) speckle. */
static void make_data(bench *b, uint64_t seed)
{
    const int W = b->W, H = b->H;
    b->h_gy = xmalloc((size_t)H * sizeof(double));
    b->h_gx = xmalloc((size_t)W * sizeof(double));
    for (int y = 0; y < H; y++)
        b->h_gy[y] = 1.0 + 0.5 * sin(6.283185307179586 * y / H);
    for (int x = 0; x < W; x++)
        b->h_gx[x] = 0.5 + (double)x / W;
    b->h_real = xmalloc((size_t)W * H * 4);
    b->h_cplx = xmalloc((size_t)W * H * 8);
#pragma omp parallel for schedule(static)
    for (int y = 0; y < H; y++) {
        uint64_t s = mix64(seed ^ ((uint64_t)y << 20));
        float *r = b->h_real + (size_t)y * W, *c = b->h_cplx + 2 * (size_t)y * W;
        for (int x = 0; x < W; x++) {
            r[x] = (float)(b->h_gy[y] * b->h_gx[x] * -log(u01(&s)));
            /* circular Gaussian (Box-Muller), scaled by the gains */
            const double rad = sqrt(-2.0 * log(u01(&s))), ph = 6.283185307179586 * u01(&s);
            const double g = sqrt(b->h_gy[y] * b->h_gx[x]);
            c[2 * x] = (float)(g * rad * cos(ph));
            c[2 * x + 1] = (float)(g * rad * sin(ph));
        }
    }
    b->h_rmean = xmalloc((size_t)H * 4);
    b->h_cmean = xmalloc((size_t)W * 4);
    for (int y = 0; y < H; y++)
        b->h_rmean[y] = (float)b->h_gy[y];
    for (int x = 0; x < W; x++)
        b->h_cmean[x] = (float)b->h_gx[x];
}

static void free_data(bench *b)
{
    free(b->h_real);
    free(b->h_cplx);
    free(b->h_rmean);
    free(b->h_cmean);
    free(b->h_gy);
    free(b->h_gx);
}

static void set_params(bench *b)
{
    const int W = b->W, H = b->H;
    b->ml = (gg_multilook_params){.in_stride = W, .looks_x = 4, .looks_y = 4, .mode = GG_ML_REAL,
                                  .dst_nodata = DST_NODATA};
    /* 30 degrees, scale 1, whole image in one tile, output the input's size */
    gg_rotate_params *p = &b->rot;
    gg_rotate_geometry(30.0, 1.0, W, H, W, H, 1, p);
    p->tile_w = W;
    p->tile_h = H;
    p->dst_nodata = DST_NODATA;
    b->rn = (gg_radnorm_params){.scale = 20.0, .dst_nodata = DST_NODATA, .levels = RN_LEVELS,
                                .dst_nodata_u8 = 255};
    b->rca = (gg_rowcol_args){.width = W, .height = H, .stride = W};
}

static int alloc_all(bench *b)
{
    const size_t n = (size_t)b->W * b->H;
    struct {
        gg_buffer **p;
        size_t bytes;
    } a[] = {{&b->real_in, n * 4},  {&b->cplx_in, n * 8},          {&b->big_dst, n * 8},
             {&b->out, n * 4},      {&b->rmean, (size_t)b->H * 4}, {&b->cmean, (size_t)b->W * 4},
             {&b->rs, (size_t)b->H * 8}, {&b->rc, (size_t)b->H * 8}, {&b->cs, (size_t)b->W * 8},
             {&b->cc, (size_t)b->W * 8}};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        if (gg_buffer_alloc(b->ctx, a[i].bytes, a[i].p) != GG_OK) {
            fail("%s: allocating %zu bytes: %s", gg_context_device_name(b->ctx), a[i].bytes,
                 gg_context_last_error(b->ctx));
            return -1;
        }
    if (gg_buffer_write(b->ctx, b->real_in, 0, b->h_real, n * 4) ||
        gg_buffer_write(b->ctx, b->cplx_in, 0, b->h_cplx, n * 8) ||
        gg_buffer_write(b->ctx, b->rmean, 0, b->h_rmean, (size_t)b->H * 4) ||
        gg_buffer_write(b->ctx, b->cmean, 0, b->h_cmean, (size_t)b->W * 4)) {
        fail("upload: %s", gg_context_last_error(b->ctx));
        return -1;
    }
    return 0;
}

static void free_all(bench *b)
{
    gg_buffer *bufs[] = {b->real_in, b->cplx_in, b->big_dst, b->out, b->rmean,
                         b->cmean,   b->rs,      b->rc,      b->cs,  b->cc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        gg_buffer_free(b->ctx, bufs[i]);
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_kernels [-size N|WxH] [-reps R] [-warmup W] [-batch K] [-xfer-mb M] [-seed S]\n"
            "                     [-o table.md] [-list | -probe] [DEVICE[,DEVICE...] ...]\n"
            "  -list: devices the runtime sees; -probe: open each DEVICE, say why not\n"
            "  defaults: -size 8192 -reps 20 -warmup 3 -batch 1 -xfer-mb 256, devices cuda,opencl\n"
            "  -batch K: K launches between two finish calls per timed run, time / K\n"
            "            (takes the launch + synchronisation latency out of short kernels)\n");
    exit(2);
}

static void emit(FILE *f1, FILE *f2, const char *fmt, ...)
{
    FILE *fs[2] = {f1, f2};
    for (int i = 0; i < 2; i++) {
        if (!fs[i])
            continue;
        va_list ap;
        va_start(ap, fmt);
        vfprintf(fs[i], fmt, ap);
        va_end(ap);
    }
}

int main(int argc, char **argv)
{
    int W = 8192, H = 8192, reps = 20, warmup = 3, list = 0;
    double xfer_mb = 256;
    uint64_t seed = 20261121;
    const char *outpath = NULL;
    char devlist[1024] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int more = i + 1 < argc;
        if (!strcmp(a, "-size") && more) {
            if (sscanf(argv[++i], "%dx%d", &W, &H) == 1)
                H = W;
        } else if (!strcmp(a, "-reps") && more) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(a, "-warmup") && more) {
            warmup = atoi(argv[++i]);
        } else if (!strcmp(a, "-xfer-mb") && more) {
            xfer_mb = atof(argv[++i]);
        } else if (!strcmp(a, "-batch") && more) {
            g_batch = atoi(argv[++i]);
        } else if (!strcmp(a, "-seed") && more) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "-o") && more) {
            outpath = argv[++i];
        } else if (!strcmp(a, "-list")) {
            list = 1;
        } else if (!strcmp(a, "-probe")) {
            list = 2;
        } else if (a[0] == '-') {
            usage();
        } else {
            if (*devlist)
                strncat(devlist, ",", sizeof devlist - strlen(devlist) - 1);
            strncat(devlist, a, sizeof devlist - strlen(devlist) - 1);
        }
    }
    if (list == 1) {
        char buf[8192];
        gg_list_devices(buf, sizeof buf);
        fputs(buf, stdout);
        return 0;
    }
    if (list == 2) { /* opens each device: its name, or why it cannot start */
        int bad = 0;
        char *save = NULL;
        for (char *dev = strtok_r(devlist, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
            gg_context *ctx = NULL;
            char err[512];
            if (gg_context_create(dev, &ctx, err, sizeof err) == GG_OK) {
                printf("%s: OK %s\n", dev, gg_context_device_name(ctx));
                gg_context_destroy(ctx);
            } else {
                printf("%s: UNAVAILABLE %s\n", dev, err);
                bad = 1;
            }
        }
        return bad;
    }
    if (W < 16 || H < 16 || W % 4 || H % 4 || reps < 1 || warmup < 0 || xfer_mb <= 0 || g_batch < 1)
        usage();
    if (!*devlist)
        snprintf(devlist, sizeof devlist, "cuda,opencl");
    const size_t xfer = (size_t)(xfer_mb * 1048576.0) / 4 * 4;

    FILE *of = outpath ? fopen(outpath, "w") : NULL;
    if (outpath && !of) {
        perror(outpath);
        return 2;
    }
    bench base = {.W = W, .H = H};
    fprintf(stderr, "bench_kernels: generating %dx%d random inputs...\n", W, H);
    make_data(&base, seed);
    set_params(&base);

    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    emit(stdout, of, "\n## bench_kernels, %s\n\n", date);
    emit(stdout, of, "Image %dx%d (Float32 %.0f MiB, CFloat32 %.0f MiB), %d timed runs after %d "
                     "warm-ups, %d launch%s per timed run, median (min-max) per launch; bytes = input "
                     "read once + output written once; host wall clock around vt->finish; "
                     "transfers: one %.0f MiB tile, pageable host memory.\n",
         W, H, W * (double)H * 4 / 1048576, W * (double)H * 8 / 1048576, reps, warmup, g_batch,
         g_batch > 1 ? "es" : "", xfer / 1048576.0);

    char *save = NULL;
    for (char *dev = strtok_r(devlist, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
        bench b = base;
        char err[512];
        if (gg_context_create(dev, &b.ctx, err, sizeof err) != GG_OK) {
            fail("device %s: %s", dev, err);
            emit(stdout, of, "\n### %s: cannot start (%s)\n", dev, err);
            continue;
        }
        b.vt = gg_rt_vt(b.ctx);
        b.dev = gg_rt_dev(b.ctx);
        size_t fr = 0, tot = 0;
        gg_context_memory(b.ctx, &fr, &tot);
        emit(stdout, of, "\n### %s — %s (%.1f GiB, %.1f free)\n\n", dev,
             gg_context_device_name(b.ctx), tot / 1073741824.0, fr / 1073741824.0);
        if (alloc_all(&b)) {
            free_all(&b);
            gg_context_destroy(b.ctx);
            continue;
        }
        row copy = {.name = "device copy (vt->copy)", .bytes = 2.0 * W * (double)H * 8};
        if (time_runs(&b, -1, warmup, reps, &copy)) {
            free_all(&b);
            gg_context_destroy(b.ctx);
            continue;
        }
        const double copy_gbs = copy.bytes / copy.med / 1e9;
        double h2d = 0, d2h = 0;
        time_transfers(&b, xfer, reps < 10 ? reps : 10, &h2d, &d2h);
        emit(stdout, of, "device-to-device copy: %.1f GB/s (%.0f MiB read + written, %.3f ms); "
                         "host->device %.1f GB/s, device->host %.1f GB/s\n\n",
             copy_gbs, copy.bytes / 1048576, copy.med * 1e3, h2d, d2h);
        emit(stdout, of, "| kernel | MiB moved | median ms | min-max ms | GB/s | %% of copy | "
                         "block | occupancy | check |\n");
        emit(stdout, of, "|---|---:|---:|---:|---:|---:|---|---:|---|\n");
        emit(stdout, of, "| %s | %.0f | %.3f | %.3f-%.3f | %.1f | 100 | - | - | - |\n", copy.name,
             copy.bytes / 1048576, copy.med * 1e3, copy.min * 1e3, copy.max * 1e3, copy_gbs);
        for (int k = 0; k < K_N; k++) {
            row r = {.name = k_names[k], .bytes = k_bytes(&b, k)};
            r.check = check_kernel(&b, k, seed + 17 * (uint64_t)k);
            if (time_runs(&b, k, warmup, reps, &r)) {
                emit(stdout, of, "| %s | - | - | - | - | - | - | - | ERROR |\n", r.name);
                continue;
            }
            char blk[32] = "-", occ[32] = "-";
            if (k_ids[k] >= 0 &&
                b.vt->launch_info(b.dev, k_ids[k], &r.bx, &r.by, &r.occ) == GGB_OK) {
                snprintf(blk, sizeof blk, "%dx%d", r.bx, r.by);
                if (r.occ > 0)
                    snprintf(occ, sizeof occ, "%.0f%%", 100 * r.occ);
            }
            const double gbs = r.bytes / r.med / 1e9;
            emit(stdout, of, "| %s | %.0f | %.3f | %.3f-%.3f | %.1f | %.0f | %s | %s | %s |\n",
                 r.name, r.bytes / 1048576, r.med * 1e3, r.min * 1e3, r.max * 1e3, gbs,
                 100 * gbs / copy_gbs, blk, occ, r.check);
        }
        free_all(&b);
        gg_context_destroy(b.ctx);
    }
    free_data(&base);
    emit(stdout, of, "\n%s\n", g_fail ? "RESULT: FAILED (see messages above)" : "RESULT: all checks passed");
    if (of)
        fclose(of);
    return g_fail ? 1 : 0;
}
