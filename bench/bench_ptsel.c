/*
 * bench_ptsel.c -- PtSel at the paper's size on one device, through the
 * public op API exactly as the GDAL driver runs it (strips of output rows
 * sized by the block planner, each with its r/2 halo, host -> device ->
 * host), without file I/O.
 *
 *   bench_ptsel [-size WxH] [-n epochs] [-window r] [-reps R] [-method prefix|pairs]
 *               [-parallel] [device ...]
 *
 * With -parallel the devices listed work together (a thread each, taking
 * strips of rows in turn, as gdal_ptsel -device cuda:all does): the
 * multi-GPU scaling figure.
 *
 * Defaults are the PtSel paper's workload: 3260x2680 pixels, 60
 * interferograms, 51x51 window.  The synthetic stack has 5 % stable
 * (PS-like) pixels sharing a slowly varying phase history and random
 * phase elsewhere, so both code paths of the kernel (valid arcs, high and
 * low coherence) are exercised; 0.5 % of the samples are zero (invalid).
 *
 * Reports wall time per run (median), output pixels and arcs per second,
 * and the FP32 rate counted as 16 flops per epoch per arc (complex product
 * a = uC conj(uN), T += conj(a) P, P += a).
 *
 * MIT licence.
 */
#include "geogpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* xorshift64* in [0, 1) */
static double urand(unsigned long long *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Band-sequential stack: band k is W*H interleaved complex floats. */
static float *make_stack(int W, int H, int n)
{
    float *z = malloc((size_t)W * H * n * 2 * sizeof(float));
    if (!z)
        return NULL;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < H; y++) {
        unsigned long long s = 0x9E3779B97F4A7C15ULL ^ ((unsigned long long)y * 0x100000001B3ULL);
        for (int x = 0; x < W; x++) {
            const int stable = urand(&s) < 0.05;
            const double amp = 0.5 + urand(&s);
            for (int k = 0; k < n; k++) {
                const double ph = stable ? 0.03 * k + 0.2 * sin(0.01 * x) + 0.05 * urand(&s)
                                         : 2 * M_PI * urand(&s);
                const size_t o = (((size_t)k * H + y) * W + x) * 2;
                const int hole = urand(&s) < 0.005;
                z[o] = hole ? 0.0f : (float)(amp * cos(ph));
                z[o + 1] = hole ? 0.0f : (float)(amp * sin(ph));
            }
        }
    }
    return z;
}

static int run_device(const char *dev, const float *stack, int W, int H, int n, int r, int reps,
                      const char *method)
{
    char err[512];
    gg_context *ctx = NULL;
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        printf("| %s | cannot start: %s |\n", dev, err);
        return 1;
    }
    gg_op *op = NULL;
    char wbuf[16];
    snprintf(wbuf, sizeof wbuf, "%d", r);
    if (gg_op_new("ptsel", &op, err, sizeof err) != GG_OK || gg_op_set(op, "window", wbuf) != GG_OK ||
        gg_op_set(op, "method", method) != GG_OK) {
        printf("| %s | ptsel: %s %s |\n", dev, err, op ? gg_op_last_error(op) : "");
        gg_context_destroy(ctx);
        return 1;
    }
    gg_raster_info in = {W, H, n, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, out;
    if (gg_op_prepare(op, &in, &out) != GG_OK) {
        printf("| %s | prepare: %s |\n", dev, gg_op_last_error(op));
        gg_op_free(op);
        gg_context_destroy(ctx);
        return 1;
    }
    int rows = 0;
    if (gg_plan_rows(ctx, W, H, gg_op_bytes_per_pixel(op), r / 2, &rows) != GG_OK) {
        printf("| %s | planner: %s |\n", dev, gg_context_last_error(ctx));
        gg_op_free(op);
        gg_context_destroy(ctx);
        return 1;
    }
    float *tau = malloc((size_t)W * H * sizeof(float));
    gg_tile *src = calloc((size_t)n, sizeof *src);
    double *t = calloc((size_t)reps, sizeof *t);
    int status = 0;
    for (int rep = 0; rep < reps && !status; rep++) {
        const double t0 = now_s();
        for (int y = 0; y < H && !status; y += rows) {
            gg_window dw = {0, y, W, y + rows > H ? H - y : rows}, sw;
            gg_op_source_window(op, &dw, &sw);
            for (int k = 0; k < n; k++)
                src[k] = (gg_tile){(void *)(stack + (((size_t)k * H + sw.y0) * W + sw.x0) * 2),
                                   GG_CFLOAT32, sw.width, sw.height, (size_t)W, sw.x0, sw.y0};
            gg_tile dst = {tau + (size_t)y * W, GG_FLOAT32, dw.width, dw.height, (size_t)W, 0, y};
            if (gg_op_run_stack(ctx, op, src, n, &dst, 1) != GG_OK) {
                printf("| %s | run: %s |\n", dev, gg_op_last_error(op));
                status = 1;
            }
        }
        t[rep] = now_s() - t0;
    }
    if (!status) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        const double med = t[reps / 2];
        /* arcs per pixel: the window less the centre (mindist 1), edges
         * counted as if inside: an upper bound by < 2 % at this size */
        const double arcs = (double)W * H * ((double)r * r - 1);
        size_t valid = 0, ps = 0;
        for (size_t i = 0; i < (size_t)W * H; i++)
            if (!isnan(tau[i])) {
                valid++;
                ps += tau[i] >= 0.71f;
            }
        printf("| %s | %s | %d | %.3f | %.3f-%.3f | %.2f | %.3f | %.3f | %.2f %% |\n", dev,
               gg_context_device_name(ctx), rows, med, t[0], t[reps - 1], W * (double)H / med / 1e6,
               arcs / med / 1e9, 16.0 * n * arcs / med / 1e12, 100.0 * ps / (valid ? valid : 1));
    }
    free(t);
    free(src);
    free(tau);
    gg_op_free(op);
    gg_context_destroy(ctx);
    return status;
}

/* -parallel: every device takes strips in turn until none is left. */
typedef struct par_job {
    const float *stack;
    float *tau;
    int W, H, n, rows, nstrips, next, failed;
    pthread_mutex_t lock;
} par_job;

typedef struct par_worker {
    par_job *job;
    gg_context *ctx;
    gg_op *op;
} par_worker;

static void *par_run(void *p)
{
    par_worker *w = p;
    par_job *j = w->job;
    gg_tile *src = calloc((size_t)j->n, sizeof *src);
    for (;;) {
        pthread_mutex_lock(&j->lock);
        const int s = j->failed ? j->nstrips : j->next++;
        pthread_mutex_unlock(&j->lock);
        if (s >= j->nstrips || !src)
            break;
        const int y = s * j->rows;
        gg_window dw = {0, y, j->W, y + j->rows > j->H ? j->H - y : j->rows}, sw;
        gg_op_source_window(w->op, &dw, &sw);
        for (int k = 0; k < j->n; k++)
            src[k] = (gg_tile){(void *)(j->stack + (((size_t)k * j->H + sw.y0) * j->W + sw.x0) * 2),
                               GG_CFLOAT32, sw.width, sw.height, (size_t)j->W, sw.x0, sw.y0};
        gg_tile dst = {j->tau + (size_t)y * j->W, GG_FLOAT32, dw.width, dw.height, (size_t)j->W, 0, y};
        if (gg_op_run_stack(w->ctx, w->op, src, j->n, &dst, 1) != GG_OK) {
            fprintf(stderr, "bench_ptsel: %s: %s\n", gg_context_device_name(w->ctx),
                    gg_op_last_error(w->op));
            pthread_mutex_lock(&j->lock);
            j->failed = 1;
            pthread_mutex_unlock(&j->lock);
        }
    }
    free(src);
    return NULL;
}

static int run_parallel(const char *const *devs, int ndev, const float *stack, int W, int H, int n,
                        int r, int reps, const char *method)
{
    par_worker *w = calloc((size_t)ndev, sizeof *w);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    double *t = calloc((size_t)reps, sizeof *t);
    float *tau = malloc((size_t)W * H * sizeof(float));
    par_job job = {.stack = stack, .tau = tau, .W = W, .H = H, .n = n};
    pthread_mutex_init(&job.lock, NULL);
    char err[512], wbuf[16], names[1024] = "";
    snprintf(wbuf, sizeof wbuf, "%d", r);
    int status = !w || !th || !t || !tau;
    gg_raster_info in = {W, H, n, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, out;
    for (int d = 0; d < ndev && !status; d++) {
        w[d].job = &job;
        if (gg_context_create(devs[d], &w[d].ctx, err, sizeof err) != GG_OK ||
            gg_op_new("ptsel", &w[d].op, err, sizeof err) != GG_OK ||
            gg_op_set(w[d].op, "window", wbuf) != GG_OK ||
            gg_op_set(w[d].op, "method", method) != GG_OK || gg_op_prepare(w[d].op, &in, &out) != GG_OK) {
            printf("| %s | cannot start: %s |\n", devs[d], err);
            status = 1;
            break;
        }
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", d ? " + " : "",
                 gg_context_device_name(w[d].ctx));
    }
    /* strips: the planner's rows on the first device, but at least 2 strips
     * per device so that all of them work */
    if (!status && gg_plan_rows(w[0].ctx, W, H, gg_op_bytes_per_pixel(w[0].op), r / 2, &job.rows) != GG_OK)
        status = 1;
    if (!status) {
        if (job.rows > (H + 2 * ndev - 1) / (2 * ndev))
            job.rows = (H + 2 * ndev - 1) / (2 * ndev);
        job.nstrips = (H + job.rows - 1) / job.rows;
    }
    for (int rep = 0; rep < reps && !status; rep++) {
        job.next = 0;
        const double t0 = now_s();
        for (int d = 1; d < ndev; d++)
            pthread_create(&th[d], NULL, par_run, &w[d]);
        par_run(&w[0]);
        for (int d = 1; d < ndev; d++)
            pthread_join(th[d], NULL);
        t[rep] = now_s() - t0;
        status = job.failed;
    }
    if (!status) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        const double med = t[reps / 2], arcs = (double)W * H * ((double)r * r - 1);
        printf("| %d devices in parallel | %s | %d | %.3f | %.3f-%.3f | %.2f | %.3f | %.3f | - |\n",
               ndev, names, job.rows, med, t[0], t[reps - 1], W * (double)H / med / 1e6,
               arcs / med / 1e9, 16.0 * n * arcs / med / 1e12);
    }
    for (int d = 0; d < ndev && w; d++) {
        gg_op_free(w[d].op);
        gg_context_destroy(w[d].ctx);
    }
    pthread_mutex_destroy(&job.lock);
    free(w);
    free(th);
    free(t);
    free(tau);
    return status;
}

int main(int argc, char **argv)
{
    int W = 3260, H = 2680, n = 60, r = 51, reps = 3, ndev = 0;
    const char *method = "prefix";
    int parallel = 0;
    const char *devs[8];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-size") && i + 1 < argc) {
            if (sscanf(argv[++i], "%dx%d", &W, &H) != 2 || W < 1 || H < 1)
                return fprintf(stderr, "bench_ptsel: -size WxH\n"), 2;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-window") && i + 1 < argc) {
            r = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-parallel")) {
            parallel = 1;
        } else if (!strcmp(argv[i], "-method") && i + 1 < argc) {
            method = argv[++i];
        } else if (!strcmp(argv[i], "-reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && ndev < 8) {
            devs[ndev++] = argv[i];
        } else {
            fprintf(stderr, "usage: bench_ptsel [-size WxH] [-n epochs] [-window r] [-reps R] "
                            "[-method prefix|pairs] [-parallel] [device ...]\n");
            return 2;
        }
    }
    if (n < 2 || r < 3 || reps < 1)
        return fprintf(stderr, "bench_ptsel: bad -n, -window or -reps\n"), 2;
    if (!ndev)
        devs[ndev++] = "cuda";
    const double t0 = now_s();
    float *stack = make_stack(W, H, n);
    if (!stack)
        return fprintf(stderr, "bench_ptsel: out of memory for the %dx%dx%d stack\n", W, H, n), 1;
    printf("stack %dx%d, n = %d interferograms (%.2f GB CFloat32), window %d, method %s: made in "
           "%.1f s; median of %d runs\n\n", W, H, n, (double)W * H * n * 8 / 1e9, r, method,
           now_s() - t0, reps);
    printf("| device | name | rows per pass | median s | min-max s | Mpx/s | G arcs/s | TFLOP/s "
           "(16 n per arc) | pixels >= 0.71 |\n|---|---|---:|---:|---|---:|---:|---:|---:|\n");
    int status = 0;
    for (int d = 0; d < ndev; d++)
        status |= run_device(devs[d], stack, W, H, n, r, reps, method);
    if (parallel && ndev > 1)
        status |= run_parallel(devs, ndev, stack, W, H, n, r, reps, method);
    free(stack);
    return status;
}
