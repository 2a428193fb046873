/*
 * cpu_backend.c -- the CPU backend: "device" memory is host memory,
 * kernels are the shared kernel bodies run as OpenMP loops, FFTs are FFTW3f.
 */
#define _GNU_SOURCE
#include "../backend.h"
#include "../../algorithms/kernel_ids.h"
#include "../../algorithms/kernels.h"

#include <fftw3.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gg_mem {
    size_t bytes;
    unsigned char *p;
};

typedef void (*cpu_kernel_fn)(int nx, int ny, const void *params, void *const *bufs);

static const struct {
    cpu_kernel_fn fn;
    size_t params_size;
    int nbufs;
} kernels[GG_K_COUNT] = {
#define GG_KERNEL_DEF(id, fn, P, nbuf) [id] = {fn##_cpu, sizeof(P), nbuf},
#include "../../algorithms/kernels.def"
#undef GG_KERNEL_DEF
};

/* FFTW's planner is not thread-safe. */
static pthread_mutex_t fftw_lock = PTHREAD_MUTEX_INITIALIZER;

static void cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown processor");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            const char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                snprintf(buf, n, "%.*s", (int)strcspn(c, "\n"), c);
            }
            break;
        }
    }
    fclose(f);
}

static int cpu_list(char *buf, size_t n)
{
    char model[200];
    cpu_model(model, sizeof model);
    snprintf(buf, n, "cpu %s (%d threads)\n", model, omp_get_max_threads());
    return 1;
}

static int cpu_open(int i0, int i1, int gpu_only, gg_dev **out, char *err, size_t errlen)
{
    (void)i0;
    (void)i1;
    if (gpu_only) {
        snprintf(err, errlen, "the CPU is not a GPU");
        return GGB_ERR_UNAVAILABLE;
    }
    gg_dev *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return GGB_ERR_NOMEM;
    }
    d->vt = gg_backend_cpu_entry();
    char model[200];
    cpu_model(model, sizeof model);
    snprintf(d->name, sizeof d->name, "cpu %s (%d threads)", model, omp_get_max_threads());
    *out = d;
    return GGB_OK;
}

static void cpu_close(gg_dev *d) { free(d); }

static size_t meminfo_field(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    size_t kb = 0, klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') {
            kb = strtoull(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb * 1024;
}

static int cpu_mem_info(gg_dev *d, size_t *free_b, size_t *total_b)
{
    (void)d;
    *total_b = meminfo_field("MemTotal");
    *free_b = meminfo_field("MemAvailable");
    if (!*total_b) { /* no /proc: assume 4 GiB */
        *total_b = (size_t)4 << 30;
        *free_b = *total_b / 2;
    }
    return GGB_OK;
}

static int cpu_alloc(gg_dev *d, size_t bytes, gg_mem **out)
{
    gg_mem *m = malloc(sizeof *m);
    void *p = NULL;
    if (!m || posix_memalign(&p, 64, (bytes + 63) & ~(size_t)63)) {
        free(m);
        snprintf(d->err, GG_ERRLEN, "cannot allocate %zu bytes of host memory", bytes);
        return GGB_ERR_NOMEM;
    }
    m->bytes = bytes;
    m->p = p;
    *out = m;
    return GGB_OK;
}

static void cpu_free(gg_dev *d, gg_mem *m)
{
    (void)d;
    if (m) {
        free(m->p);
        free(m);
    }
}

static int span_ok(gg_dev *d, const gg_mem *m, size_t off, size_t pitch, size_t row, size_t rows)
{
    if (rows && (row > pitch || off + pitch * (rows - 1) + row > m->bytes)) {
        snprintf(d->err, GG_ERRLEN, "copy outside a %zu-byte buffer", m->bytes);
        return 0;
    }
    return 1;
}

static int cpu_write2d(gg_dev *d, gg_mem *dst, size_t off, size_t dpitch, const void *src,
                       size_t hpitch, size_t row, size_t rows)
{
    if (!span_ok(d, dst, off, dpitch, row, rows))
        return GGB_ERR_ARGUMENT;
    for (size_t r = 0; r < rows; r++)
        memcpy(dst->p + off + r * dpitch, (const unsigned char *)src + r * hpitch, row);
    return GGB_OK;
}

static int cpu_read2d(gg_dev *d, const gg_mem *src, size_t off, size_t dpitch, void *dst,
                      size_t hpitch, size_t row, size_t rows)
{
    if (!span_ok(d, src, off, dpitch, row, rows))
        return GGB_ERR_ARGUMENT;
    for (size_t r = 0; r < rows; r++)
        memcpy((unsigned char *)dst + r * hpitch, src->p + off + r * dpitch, row);
    return GGB_OK;
}

static int cpu_copy(gg_dev *d, gg_mem *dst, size_t doff, const gg_mem *src, size_t soff, size_t n)
{
    if (doff + n > dst->bytes || soff + n > src->bytes) {
        snprintf(d->err, GG_ERRLEN, "device copy out of bounds");
        return GGB_ERR_ARGUMENT;
    }
    memmove(dst->p + doff, src->p + soff, n);
    return GGB_OK;
}

static int cpu_fill32(gg_dev *d, gg_mem *dst, size_t off, uint32_t pattern, size_t n)
{
    if (off + n > dst->bytes || (n & 3) || (off & 3)) {
        snprintf(d->err, GG_ERRLEN, "fill out of bounds or unaligned");
        return GGB_ERR_ARGUMENT;
    }
    uint32_t *p = (uint32_t *)(dst->p + off);
    for (size_t i = 0; i < n / 4; i++)
        p[i] = pattern;
    return GGB_OK;
}

static int cpu_launch(gg_dev *d, int id, int nx, int ny, const void *params, size_t psize,
                      gg_mem *const *bufs, int nbufs)
{
    if (id < 0 || id >= GG_K_COUNT || psize != kernels[id].params_size || nbufs != kernels[id].nbufs) {
        snprintf(d->err, GG_ERRLEN, "kernel %d called with wrong parameters", id);
        return GGB_ERR_ARGUMENT;
    }
    if (nx <= 0 || ny <= 0)
        return GGB_OK;
    void *ptrs[8];
    for (int i = 0; i < nbufs; i++)
        ptrs[i] = bufs[i]->p;
    kernels[id].fn(nx, ny, params, ptrs);
    return GGB_OK;
}

static int cpu_rowcol_sums(gg_dev *d, const gg_mem *img, const gg_rowcol_args *a, gg_mem *rs,
                           gg_mem *rc, gg_mem *cs, gg_mem *cc)
{
    const size_t W = (size_t)a->width, H = (size_t)a->height;
    if (a->width < 0 || a->height < 0 || (size_t)a->stride < W ||
        (H && ((H - 1) * (size_t)a->stride + W) * 4 > img->bytes) || rs->bytes < H * 8 ||
        rc->bytes < H * 8 || cs->bytes < W * 8 || cc->bytes < W * 8) {
        snprintf(d->err, GG_ERRLEN, "row/column sums: buffers too small");
        return GGB_ERR_ARGUMENT;
    }
    const float *p = (const float *)img->p;
    double *row_sum = (double *)rs->p, *row_cnt = (double *)rc->p;
    double *col_sum = (double *)cs->p, *col_cnt = (double *)cc->p;
    /* one read of the image: each thread keeps its own column partials */
    const int nt = omp_get_max_threads();
    double *part = calloc((size_t)nt * 2 * W + 1, sizeof(double));
    if (!part) {
        snprintf(d->err, GG_ERRLEN, "row/column sums: out of host memory");
        return GGB_ERR_NOMEM;
    }
#pragma omp parallel num_threads(nt)
    {
        double *cs_l = part + (size_t)omp_get_thread_num() * 2 * W, *cc_l = cs_l + W;
#pragma omp for schedule(static)
        for (size_t y = 0; y < H; y++) {
            const float *r = p + y * (size_t)a->stride;
            double s = 0, n = 0;
            for (size_t x = 0; x < W; x++) {
                const float v = r[x];
                if (gg_valid(v, a->has_nodata, a->nodata)) {
                    s += v;
                    n += 1;
                    cs_l[x] += v;
                    cc_l[x] += 1;
                }
            }
            row_sum[y] = s;
            row_cnt[y] = n;
        }
    }
    for (size_t x = 0; x < W; x++) {
        double s = 0, n = 0;
        for (int t = 0; t < nt; t++) {
            s += part[(size_t)t * 2 * W + x];
            n += part[(size_t)t * 2 * W + W + x];
        }
        col_sum[x] = s;
        col_cnt[x] = n;
    }
    free(part);
    return GGB_OK;
}

/* A rank-2 batch runs as FFTW's transforms of each row, then its column
 * transforms on blocks of CPU_FFT_COLS columns copied into a small
 * per-thread buffer, both in one parallel region (one-thread plans).
 * FFTW's own 2-D plan makes the same two passes with the same codelets,
 * but walks each column down the whole image (a stride of a full row: on
 * a 512 x 512 image every access of a column pass lands in the same cache
 * sets), which took 16 ms of the 17 ms an image cost on the development
 * VM; a block of columns in a buffer takes about 2 ms.  The split is kept
 * only when it reproduces FFTW's 2-D plan bit for bit on a test image
 * (checked once a plan, both directions): otherwise FFTW's plan runs, so
 * results never depend on the split. */
#define CPU_FFT_COLS 16

typedef struct cpu_fft {
    fftwf_plan fwd, inv;   /* FFTW's plans of the whole batch */
    int split;             /* rank 2 run as rows + column blocks */
    int n0, n1, batch;     /* rank 2: rows, columns per image; images */
    fftwf_plan rfwd, rinv; /* split: one row */
    fftwf_plan cfwd, cinv; /* split: CPU_FFT_COLS columns in a buffer */
    fftwf_plan efwd, einv; /* split: the last, narrower block (n1 % CPU_FFT_COLS) */
    size_t bytes;
} cpu_fft;

static void cpu_fft_free_plans(cpu_fft *f)
{
    fftwf_plan *all[] = {&f->fwd, &f->inv, &f->rfwd, &f->rinv, &f->cfwd, &f->cinv, &f->efwd, &f->einv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i]) {
            fftwf_destroy_plan(*all[i]);
            *all[i] = NULL;
        }
}

/* The split over images [i0, i1) of p: rows, then blocks of columns. */
static int cpu_fft_split_run(const cpu_fft *f, fftwf_complex *p, int i0, int i1, int inverse)
{
    const int K = CPU_FFT_COLS, nb = (f->n1 + K - 1) / K, n0 = f->n0, n1 = f->n1;
    int ok = 1;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (long long r = (long long)i0 * n0; r < (long long)i1 * n0; r++)
            fftwf_execute_dft(inverse ? f->rinv : f->rfwd, p + r * n1, p + r * n1);
        fftwf_complex *buf = fftwf_malloc(sizeof(fftwf_complex) * (size_t)n0 * K);
        if (!buf) {
#pragma omp atomic write
            ok = 0;
        }
#pragma omp for schedule(static)
        for (int t = i0 * nb; t < i1 * nb; t++) {
            if (!buf)
                continue;
            fftwf_complex *img = p + (size_t)(t / nb) * n0 * n1;
            const int x0 = (t % nb) * K, k = n1 - x0 < K ? n1 - x0 : K;
            for (int y = 0; y < n0; y++)
                memcpy(buf + (size_t)y * k, img + (size_t)y * n1 + x0, sizeof(fftwf_complex) * k);
            fftwf_execute_dft(k == K ? (inverse ? f->cinv : f->cfwd) : (inverse ? f->einv : f->efwd),
                              buf, buf);
            for (int y = 0; y < n0; y++)
                memcpy(img + (size_t)y * n1 + x0, buf + (size_t)y * k, sizeof(fftwf_complex) * k);
        }
        fftwf_free(buf);
    }
    return ok;
}

/* Plans the split of a rank-2 batch (FFTW's planner lock held, tmp: a
 * placeholder of the whole batch, never touched) and keeps it when it
 * reproduces FFTW's 2-D transform of one image bit for bit in both
 * directions (two images of memory while it checks). */
static void cpu_fft_plan_split(cpu_fft *f, const int *n, int batch, fftwf_complex *tmp)
{
    const int K = CPU_FFT_COLS, n0 = n[0], n1 = n[1], e = n1 % K;
    f->n0 = n0;
    f->n1 = n1;
    f->batch = batch;
    /* one-thread plans of one row and of one block of columns (in a
     * buffer), which the threads of one parallel region run */
#ifdef GG_HAVE_FFTW_OMP
    fftwf_plan_with_nthreads(1);
#endif
    f->rfwd = fftwf_plan_dft_1d(n1, tmp, tmp, FFTW_FORWARD, FFTW_ESTIMATE);
    f->rinv = fftwf_plan_dft_1d(n1, tmp, tmp, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (n1 >= K) {
        f->cfwd = fftwf_plan_many_dft(1, &n0, K, tmp, NULL, K, 1, tmp, NULL, K, 1, FFTW_FORWARD,
                                      FFTW_ESTIMATE);
        f->cinv = fftwf_plan_many_dft(1, &n0, K, tmp, NULL, K, 1, tmp, NULL, K, 1, FFTW_BACKWARD,
                                      FFTW_ESTIMATE);
    }
    if (e) {
        f->efwd = fftwf_plan_many_dft(1, &n0, e, tmp, NULL, e, 1, tmp, NULL, e, 1, FFTW_FORWARD,
                                      FFTW_ESTIMATE);
        f->einv = fftwf_plan_many_dft(1, &n0, e, tmp, NULL, e, 1, tmp, NULL, e, 1, FFTW_BACKWARD,
                                      FFTW_ESTIMATE);
    }
    /* the reference: FFTW's 2-D plan of one image, threaded as the batch's */
#ifdef GG_HAVE_FFTW_OMP
    fftwf_plan_with_nthreads(omp_get_max_threads());
#endif
    const size_t ni = (size_t)n0 * n1;
    fftwf_complex *ref = fftwf_malloc(sizeof(fftwf_complex) * ni);
    fftwf_complex *tst = fftwf_malloc(sizeof(fftwf_complex) * ni);
    fftwf_plan r1[2] = {NULL, NULL};
    if (ref) {
        r1[0] = fftwf_plan_many_dft(2, n, 1, ref, NULL, 1, (int)ni, ref, NULL, 1, (int)ni,
                                    FFTW_FORWARD, FFTW_ESTIMATE);
        r1[1] = fftwf_plan_many_dft(2, n, 1, ref, NULL, 1, (int)ni, ref, NULL, 1, (int)ni,
                                    FFTW_BACKWARD, FFTW_ESTIMATE);
    }
    int same = ref && tst && r1[0] && r1[1] && f->rfwd && f->rinv && (n1 < K || (f->cfwd && f->cinv)) &&
               (!e || (f->efwd && f->einv));
    for (int inv = 0; same && inv < 2; inv++) {
        /* a deterministic test image (xorshift), the same in both */
        unsigned long long x = 0x9E3779B97F4A7C15ULL;
        for (size_t i = 0; i < 2 * ni; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((float *)ref)[i] = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5);
        }
        memcpy(tst, ref, sizeof(fftwf_complex) * ni);
        fftwf_execute(r1[inv]);
        same = cpu_fft_split_run(f, tst, 0, 1, inv) &&
               !memcmp(tst, ref, sizeof(fftwf_complex) * ni);
    }
    for (int i = 0; i < 2; i++)
        if (r1[i])
            fftwf_destroy_plan(r1[i]);
    fftwf_free(ref);
    fftwf_free(tst);
    f->split = same;
    if (!same) { /* FFTW's 2-D plan then */
        fftwf_plan *sp[] = {&f->rfwd, &f->rinv, &f->cfwd, &f->cinv, &f->efwd, &f->einv};
        for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
            if (*sp[i]) {
                fftwf_destroy_plan(*sp[i]);
                *sp[i] = NULL;
            }
    }
}

static int cpu_fft_plan(gg_dev *d, int rank, const int *n, int batch, void **out)
{
    cpu_fft *f = calloc(1, sizeof *f);
    if (!f)
        return GGB_ERR_NOMEM;
    const int dist = rank == 2 ? n[0] * n[1] : n[0];
    f->bytes = (size_t)dist * (size_t)batch * 8;
    pthread_mutex_lock(&fftw_lock);
#ifdef GG_HAVE_FFTW_OMP
    static int threads_ready;
    if (!threads_ready)
        threads_ready = fftwf_init_threads();
    if (threads_ready)
        fftwf_plan_with_nthreads(omp_get_max_threads());
#endif
    /* FFTW_ESTIMATE never touches the arrays, so a placeholder works; it
     * is 64-byte aligned like every buffer the plan will run on. */
    fftwf_complex *tmp = fftwf_malloc(f->bytes);
    if (tmp) {
        f->fwd = fftwf_plan_many_dft(rank, n, batch, tmp, NULL, 1, dist, tmp, NULL, 1, dist,
                                     FFTW_FORWARD, FFTW_ESTIMATE);
        f->inv = fftwf_plan_many_dft(rank, n, batch, tmp, NULL, 1, dist, tmp, NULL, 1, dist,
                                     FFTW_BACKWARD, FFTW_ESTIMATE);
        /* the split runs its plans row by row: rows a multiple of 64 bytes
         * long keep each one aligned as the batch's buffer */
        if (rank == 2 && f->fwd && f->inv && n[1] % 8 == 0)
            cpu_fft_plan_split(f, n, batch, tmp);
        fftwf_free(tmp);
    }
    pthread_mutex_unlock(&fftw_lock);
    if (!f->fwd || !f->inv) {
        snprintf(d->err, GG_ERRLEN, "FFTW could not plan a rank-%d FFT", rank);
        cpu_fft_free_plans(f);
        free(f);
        return GGB_ERR_DEVICE;
    }
    *out = f;
    return GGB_OK;
}

static int cpu_fft_exec(gg_dev *d, void *plan, gg_mem *data, int inverse)
{
    cpu_fft *f = plan;
    if (data->bytes < f->bytes) {
        snprintf(d->err, GG_ERRLEN, "FFT buffer too small");
        return GGB_ERR_ARGUMENT;
    }
    fftwf_complex *p = (fftwf_complex *)data->p;
    if (f->split) {
        if (cpu_fft_split_run(f, p, 0, f->batch, inverse))
            return GGB_OK;
        snprintf(d->err, GG_ERRLEN, "FFT: out of host memory");
        return GGB_ERR_NOMEM;
    }
    fftwf_execute_dft(inverse ? f->inv : f->fwd, p, p);
    return GGB_OK;
}

static void cpu_fft_destroy(gg_dev *d, void *plan)
{
    (void)d;
    cpu_fft *f = plan;
    if (!f)
        return;
    pthread_mutex_lock(&fftw_lock);
    cpu_fft_free_plans(f);
    pthread_mutex_unlock(&fftw_lock);
    free(f);
}

static int cpu_finish(gg_dev *d)
{
    (void)d;
    return GGB_OK;
}

static int cpu_launch_info(gg_dev *d, int id, int *bx, int *by, double *occ)
{
    (void)d;
    (void)id;
    *bx = 1;
    *by = 1;
    *occ = 0;
    return GGB_OK;
}

/* Host memory: nothing to pin for the CPU; 64-byte aligned. */
static int cpu_host_alloc(gg_dev *d, size_t bytes, void **out)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1)) {
        snprintf(d->err, GG_ERRLEN, "cannot allocate %zu bytes of host memory", bytes);
        return GGB_ERR_NOMEM;
    }
    *out = p;
    return GGB_OK;
}

static void cpu_host_free(gg_dev *d, void *p)
{
    (void)d;
    free(p);
}

/* Any memory is "registered" for the CPU: its copies are memcpy. */
static int cpu_host_register(gg_dev *d, void *p, size_t bytes, int read_only)
{
    (void)d;
    (void)p;
    (void)bytes;
    (void)read_only;
    return GGB_OK;
}

static void cpu_host_unregister(gg_dev *d, void *p)
{
    (void)d;
    (void)p;
}

static const gg_backend cpu_backend = {
    .abi = GG_BACKEND_ABI,
    .name = "cpu",
    .list = cpu_list,
    .open = cpu_open,
    .close = cpu_close,
    .mem_info = cpu_mem_info,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .write2d = cpu_write2d,
    .read2d = cpu_read2d,
    .copy = cpu_copy,
    .fill32 = cpu_fill32,
    .launch = cpu_launch,
    .rowcol_sums = cpu_rowcol_sums,
    .fft_plan = cpu_fft_plan,
    .fft_exec = cpu_fft_exec,
    .fft_destroy = cpu_fft_destroy,
    .finish = cpu_finish,
    .launch_info = cpu_launch_info,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .host_register = cpu_host_register,
    .host_unregister = cpu_host_unregister,
};

const gg_backend *gg_backend_cpu_entry(void) { return &cpu_backend; }
