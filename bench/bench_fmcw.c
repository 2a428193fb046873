/*
 * bench_fmcw.c -- FMCW weather-radar chain throughput through the public
 * push API (no GDAL): sectors of 3 x n_sweeps x n_samples int16 I/Q
 * (default the paper's 3 x 512 x 1024, all 512 gates kept) through every
 * product.
 *
 *   bench_fmcw [-device D] [-batch B] [-streams T] [-sectors S] [-sweeps M]
 *              [-samples N] [-gates G] [-pinned 0|1]
 *
 * Reports
 *   - host-to-device bandwidth of one batch's raw data (gg_buffer_write)
 *     from pageable memory (the backend's own staged copy) and, with
 *     -pinned 1 (default) on CUDA, from page-locked memory (gg_host_alloc:
 *     the copy engine reads it directly), beside the rate each allows;
 *   - per-stage times of one push (timing mode of the internal header
 *     algorithms/radar/fmcw_timing.h: a device sync per stage);
 *   - one processor sustained: push (one stream, nothing overlapped) and
 *     streaming (gg_fmcw_add_stream + submit/collect: the upload of batch
 *     k+1 overlaps the chain of batch k) from its page-locked input;
 *   - sustained sectors/s with T workers: each worker owns a context
 *     (its own CUDA stream / OpenCL queue) and a processor on the same
 *     device and pushes batches in turn, so one worker's upload overlaps
 *     another's kernels -- the paper's stream overlap without backend
 *     changes.
 * The input is 8 distinct simulated sectors (a storm with noise and
 * clutter) used in rotation.
 *
 * MIT licence.
 */
#include "geogpu.h"
#include "radar/fmcw_timing.h" /* internal: gg_fmcw_set_timing, gg_fmcw_get_timing */

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

#define NDISTINCT 8

/* Input buffers: page-locked through the runtime (gg_host_alloc: pinned
 * on CUDA, so the backend copies them without staging; ordinary memory on
 * the CPU and OpenCL backends), or with -pinned 0 pageable malloc. */
static int pinned_wanted = 1;
static void *host_buf(gg_context *ctx, size_t bytes)
{
    void *p = NULL;
    if (pinned_wanted)
        return gg_host_alloc(ctx, bytes, &p) == GG_OK ? p : NULL;
    return malloc(bytes);
}
static void host_buf_free(gg_context *ctx, void *p)
{
    if (pinned_wanted)
        gg_host_free(ctx, p);
    else
        free(p);
}

typedef struct worker {
    const char *device;
    const gg_fmcw_params *p;
    const int16_t *input;   /* NDISTINCT sectors */
    int batch, nbatches, id;
    double seconds;
    int failed;
    char err[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    gg_context *ctx = NULL;
    gg_fmcw *f = NULL;
    if (gg_context_create(w->device, &ctx, w->err, sizeof w->err) != GG_OK) {
        w->failed = 1;
        return NULL;
    }
    if (gg_fmcw_create(ctx, w->p, NULL, 0, w->batch, &f) != GG_OK) {
        snprintf(w->err, sizeof w->err, "%s", gg_context_last_error(ctx));
        w->failed = 1;
        gg_context_destroy(ctx);
        return NULL;
    }
    const size_t sv = gg_fmcw_sector_values(w->p);
    float *out = malloc(sizeof(float) * GG_FMCW_NPRODUCTS * w->p->n_gates * w->batch);
    int16_t *buf = host_buf(ctx, sizeof(int16_t) * sv * w->batch);
    if (!buf) {
        snprintf(w->err, sizeof w->err, "no input memory: %s", gg_context_last_error(ctx));
        w->failed = 1;
        gg_fmcw_destroy(f);
        gg_context_destroy(ctx);
        return NULL;
    }
    for (int b = 0; b < w->batch; b++)
        memcpy(buf + b * sv, w->input + ((b + w->id) % NDISTINCT) * sv, sizeof(int16_t) * sv);
    /* warm-up: plans, kernels, buffers */
    if (gg_fmcw_push(f, buf, w->batch) != GG_OK || gg_fmcw_products(f, out) != GG_OK) {
        snprintf(w->err, sizeof w->err, "%s", gg_fmcw_last_error(f));
        w->failed = 1;
    }
    const double t0 = now_s();
    for (int i = 0; i < w->nbatches && !w->failed; i++)
        if (gg_fmcw_push(f, buf, w->batch) != GG_OK || gg_fmcw_products(f, out) != GG_OK) {
            snprintf(w->err, sizeof w->err, "%s", gg_fmcw_last_error(f));
            w->failed = 1;
        }
    w->seconds = now_s() - t0;
    free(out);
    host_buf_free(ctx, buf);
    gg_fmcw_destroy(f);
    gg_context_destroy(ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *device = "auto";
    int batch = 4, streams = 2, sectors = 512;
    gg_fmcw_params p;
    gg_fmcw_params_default(&p);
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-device")) device = v;
        else if (!strcmp(a, "-batch")) batch = atoi(v);
        else if (!strcmp(a, "-streams")) streams = atoi(v);
        else if (!strcmp(a, "-sectors")) sectors = atoi(v);
        else if (!strcmp(a, "-sweeps")) p.n_sweeps = atoi(v);
        else if (!strcmp(a, "-samples")) p.n_samples = atoi(v);
        else if (!strcmp(a, "-gates")) p.n_gates = atoi(v);
        else if (!strcmp(a, "-pinned")) pinned_wanted = atoi(v);
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    /* page-locking is a CUDA matter; OpenCL and the CPU copy on their own */
    if (!strncmp(device, "opencl", 6) || !strncmp(device, "cpu", 3))
        pinned_wanted = 0;
    char err[512];
    if (gg_fmcw_params_check(&p, err, sizeof err) != GG_OK || batch < 1 || streams < 1 || sectors < 1) {
        fprintf(stderr, "bad parameters: %s\n", err);
        return 2;
    }
    const size_t sv = gg_fmcw_sector_values(&p);
    int16_t *input = malloc(sizeof(int16_t) * sv * NDISTINCT);
    const int G = p.n_gates;
    float *fld = malloc(sizeof(float) * 8 * G);
    for (int s = 0; s < NDISTINCT; s++) {
        for (int g = 0; g < G; g++) {
            const double core = exp(-0.5 * pow((g - 0.4 * G) / (0.1 * G), 2));
            fld[g] = g ? (float)(20 + 30 * core) : NAN;
            fld[G + g] = (float)(0.3 + 2 * core);
            fld[2 * G + g] = -25;
            fld[3 * G + g] = (float)(5.0 * sin(0.7 * s));
            fld[4 * G + g] = (float)(1 + core);
            fld[5 * G + g] = 0.98f;
            fld[6 * G + g] = (float)(0.05 * g);
            fld[7 * G + g] = g < 6 ? 40.0f : NAN;
        }
        gg_fmcw_field fd = {fld, fld + G, fld + 2 * G, fld + 3 * G, fld + 4 * G, fld + 5 * G, fld + 6 * G,
                            fld + 7 * G};
        gg_fmcw_sim sim = {8.0, 1, 11 + s};
        if (gg_fmcw_simulate(&p, &sim, &fd, input + s * sv, err, sizeof err) != GG_OK) {
            fprintf(stderr, "simulate: %s\n", err);
            return 1;
        }
    }
    free(fld);

    gg_context *ctx = NULL;
    if (gg_context_create(device, &ctx, err, sizeof err) != GG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const double mb = sv * 2.0 / 1e6;
    double h2d_pinned = 0;
    printf("device %s\nsector 3 x %d sweeps x %d samples int16 I/Q (%.2f MB), %d gates kept, batch %d\n",
           gg_context_device_name(ctx), p.n_sweeps, p.n_samples, mb, G, batch);

    /* host-to-device bandwidth of one batch, the backend's own path */
    gg_buffer *b = NULL;
    const size_t bytes = sv * 2 * (size_t)batch;
    int16_t *big = malloc(bytes);
    for (int k = 0; k < batch; k++)
        memcpy(big + k * sv, input + (k % NDISTINCT) * sv, sv * 2);
    if (gg_buffer_alloc(ctx, bytes, &b) == GG_OK) {
        gg_buffer_write(ctx, b, 0, big, bytes);
        const int reps = 20;
        const double t0 = now_s();
        for (int r = 0; r < reps; r++)
            gg_buffer_write(ctx, b, 0, big, bytes);
        const double dt = (now_s() - t0) / reps;
        printf("host-to-device (pageable, staged): %.2f GB/s -> at most %.0f sectors/s from host memory\n",
               bytes / dt / 1e9, batch / dt);
        void *pbig = NULL;
        if (pinned_wanted && gg_host_alloc(ctx, bytes, &pbig) == GG_OK) {
            memcpy(pbig, big, bytes);
            gg_buffer_write(ctx, b, 0, pbig, bytes);
            const double t1 = now_s();
            for (int r = 0; r < reps; r++)
                gg_buffer_write(ctx, b, 0, pbig, bytes);
            const double dt1 = (now_s() - t1) / reps;
            h2d_pinned = bytes / dt1;
            printf("host-to-device (gg_host_alloc, page-locked on CUDA): %.2f GB/s -> at most %.0f sectors/s\n",
                   bytes / dt1 / 1e9, batch / dt1);
        } else {
            printf("host-to-device (pinned): not measured\n");
        }
        gg_host_free(ctx, pbig);
        gg_buffer_free(ctx, b);
    }
    free(big);

    /* per-stage times */
    gg_fmcw *f = NULL;
    if (gg_fmcw_create(ctx, &p, NULL, 0, batch, &f) != GG_OK) {
        fprintf(stderr, "%s\n", gg_context_last_error(ctx));
        return 1;
    }
    int16_t *buf = host_buf(ctx, sizeof(int16_t) * sv * batch);
    if (!buf) {
        fprintf(stderr, "no input memory: %s\n", gg_context_last_error(ctx));
        return 1;
    }
    for (int k = 0; k < batch; k++)
        memcpy(buf + k * sv, input + (k % NDISTINCT) * sv, sv * 2);
    gg_fmcw_set_timing(f, 1);
    gg_fmcw_timing sum = {0}, t;
    const int reps = 10;
    gg_fmcw_push(f, buf, batch);
    for (int r = 0; r < reps; r++) {
        if (gg_fmcw_push(f, buf, batch) != GG_OK) {
            fprintf(stderr, "%s\n", gg_fmcw_last_error(f));
            return 1;
        }
        gg_fmcw_get_timing(f, &t);
        sum.upload += t.upload, sum.convert += t.convert, sum.range_fft += t.range_fft;
        sum.corner_turn += t.corner_turn, sum.doppler_fft += t.doppler_fft, sum.spectra += t.spectra;
        sum.moments += t.moments, sum.download += t.download;
        sum.sort += t.sort, sum.noise += t.noise, sum.block += t.block;
    }
    const double k = 1e6 / reps / batch;
    const double dev = sum.convert + sum.range_fft + sum.corner_turn + sum.doppler_fft + sum.spectra + sum.moments;
    printf("per sector (us, synchronised stages): upload %.1f | census+convert %.1f | range FFT %.1f | corner turn "
           "%.1f | Doppler FFT %.1f | spectra %.1f | HS+moments %.1f | download %.1f | device compute %.1f\n",
           sum.upload * k, sum.convert * k, sum.range_fft * k, sum.corner_turn * k, sum.doppler_fft * k,
           sum.spectra * k, sum.moments * k, sum.download * k, dev * k);
    printf("  HS+moments = sort %.1f | HS noise %.1f | peak block + products %.1f (us per sector)\n", sum.sort * k,
           sum.noise * k, sum.block * k);
    gg_fmcw_set_timing(f, 0);
    host_buf_free(ctx, buf);

    /* one processor, sustained: push (one stream: upload, then chain, then
     * download, nothing overlapped) and streaming (gg_fmcw_add_stream +
     * submit/collect: the upload of batch k+1 overlaps the chain of batch
     * k), both from the processor's page-locked input (gg_fmcw_host_input;
     * the batch stays in place, as a receiver's DMA buffer would be) */
    const int nb1 = (sectors + batch - 1) / batch;
    int16_t *in = pinned_wanted ? gg_fmcw_host_input(f) : NULL;
    int16_t *pageable = NULL;
    if (!in) {
        if (pinned_wanted)
            printf("single processor: no page-locked input (%s), pageable\n", gg_fmcw_last_error(f));
        in = pageable = malloc(sizeof(int16_t) * sv * batch);
    }
    for (int k = 0; k < batch; k++)
        memcpy(in + k * sv, input + (k % NDISTINCT) * sv, sv * 2);
    float *prod = malloc(sizeof(float) * GG_FMCW_NPRODUCTS * G * batch);
    double t1 = now_s();
    int bad = 0;
    for (int i = 0; i < nb1 && !bad; i++)
        bad = gg_fmcw_push(f, in, batch) != GG_OK || gg_fmcw_products(f, prod) != GG_OK;
    const double push_s = now_s() - t1;
    if (bad) {
        fprintf(stderr, "push: %s\n", gg_fmcw_last_error(f));
        return 1;
    }
    printf("single processor, push (1 stream): %d batches of %d in %.3f s: %.0f sectors/s\n", nb1, batch, push_s,
           nb1 * batch / push_s);
    gg_context *ctx2 = NULL;
    if (gg_context_create(device, &ctx2, err, sizeof err) != GG_OK || gg_fmcw_add_stream(f, ctx2) != GG_OK) {
        printf("single processor, streaming: no second stream (%s)\n", ctx2 ? gg_fmcw_last_error(f) : err);
    } else {
        int n = 0;
        /* warm-up of the second stream's plans */
        bad = gg_fmcw_submit(f, in, batch) != GG_OK || gg_fmcw_submit(f, in, batch) != GG_OK ||
              gg_fmcw_collect(f, prod, NULL, &n) != GG_OK || gg_fmcw_collect(f, prod, NULL, &n) != GG_OK;
        t1 = now_s();
        bad = bad || gg_fmcw_submit(f, in, batch) != GG_OK;
        for (int i = 1; i <= nb1 && !bad; i++) {
            if (i < nb1)
                bad = gg_fmcw_submit(f, in, batch) != GG_OK;
            bad = bad || gg_fmcw_collect(f, prod, NULL, &n) != GG_OK;
        }
        const double st_s = now_s() - t1;
        if (bad) {
            fprintf(stderr, "streaming: %s\n", gg_fmcw_last_error(f));
            return 1;
        }
        printf("single processor, streaming (2 streams, submit/collect): %d batches of %d in %.3f s: %.0f "
               "sectors/s (%.2f GB/s of raw input)%s\n",
               nb1, batch, st_s, nb1 * batch / st_s, nb1 * batch * mb / 1e3 / st_s,
               pageable ? " [pageable input]" : "");
        if (h2d_pinned > 0 && !pageable)
            printf("single processor streaming input rate = %.0f %% of the pinned host-to-device bandwidth\n",
                   100.0 * nb1 * batch * mb * 1e6 / st_s / h2d_pinned);
    }
    free(prod);
    free(pageable);
    gg_fmcw_destroy(f);
    gg_context_destroy(ctx2);
    gg_context_destroy(ctx);

    /* sustained throughput, T workers on the device */
    worker *w = calloc((size_t)streams, sizeof *w);
    pthread_t *th = calloc((size_t)streams, sizeof *th);
    const int nb = (sectors + batch * streams - 1) / (batch * streams);
    const double t0 = now_s();
    for (int i = 0; i < streams; i++) {
        w[i] = (worker){device, &p, input, batch, nb, i, 0, 0, ""};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    int failed = 0;
    for (int i = 0; i < streams; i++) {
        pthread_join(th[i], NULL);
        if (w[i].failed) {
            fflush(stdout);
            fprintf(stderr, "worker %d: %s\n", i, w[i].err);
            failed = 1;
        }
    }
    const double wall = now_s() - t0;
    double tmax = 0;
    for (int i = 0; i < streams; i++)
        tmax = w[i].seconds > tmax ? w[i].seconds : tmax;
    const double total = (double)nb * batch * streams;
    printf("sustained: %d workers x %d batches of %d = %.0f sectors in %.3f s: %.0f sectors/s (%.2f GB/s of raw "
           "input) [wall incl. setup %.3f s]\n",
           streams, nb, batch, total, tmax, total / tmax, total * mb / 1e3 / tmax, wall);
    if (h2d_pinned > 0)
        printf("sustained input rate = %.0f %% of the pinned host-to-device bandwidth\n",
               100.0 * total * mb * 1e6 / tmax / h2d_pinned);
    free(w), free(th), free(input);
    return failed;
}
