/*
 * bench_ptsel.c -- PtSel at the paper's size on one device, through the
 * public op API exactly as the GDAL driver runs it (strips of output rows
 * sized by the block planner, each with its r/2 halo, host -> device ->
 * host), without file I/O.
 *
 *   bench_ptsel [-size WxH] [-n epochs] [-window r] [-reps R] [-method prefix|pairs]
 *               [-parallel] [-split rows|arcs] [-strips k] [-pinned] [-timeline]
 *               [-upweight u] [-lead f] [device | dev,dev,...[/rows|/arcsK|/leadF] ...]
 *
 * An argument with commas (or a '/' suffix) is one group of workers run in
 * parallel, after the single devices; the first single device's tau_max
 * is the reference every group's output is compared with, bit for bit.
 *
 * With -parallel the devices listed work together (a thread each, taking
 * strips of rows in turn, as gdal_ptsel -device cuda:all does): the
 * multi-GPU scaling figure.  A device listed twice gets two workers (two
 * contexts, two streams: one's upload overlaps the other's kernels).
 *   -split rows   the strips of the earlier measurements: the planner's
 *                 rows, but at least 2 strips per worker, all equal;
 *   -split arcs   (default) k strips per worker (-strips, default 1),
 *                 their boundaries chosen so that every strip has the same
 *                 estimated cost: the arcs its kernel computes (the half
 *                 window's forward arcs of its rows, plus the arcs into it
 *                 from the r/2 rows above, computed again) plus its upload
 *                 (rows with halo) at -upweight arcs per uploaded pixel
 *                 (default 124: n = 60, r = 51 on an H200, where uploading
 *                 a pixel's n samples takes as long as ~124 of its arcs).
 *                 The first strip has no halo above and the last no arcs
 *                 below, so both get more rows than the middle ones.
 *                 Worker w runs strips w, w + workers, ... (fixed).
 *   -lead f       with several workers on one device (listed twice): its
 *                 first worker's strip is f of the device's share, so its
 *                 kernels start while the other's strip still uploads
 *                 (group suffix /leadF, e.g. /lead0.25).
 *   -pinned       the stack in page-locked host memory (gg_host_alloc),
 *                 as an application keeping its stack pinned would: every
 *                 GPU's copy engine reads it directly, no staging copies.
 *   -timeline     per strip of the last parallel run: worker, rows, start
 *                 and end (ms).
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
static void make_stack(float *z, int W, int H, int n)
{
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
}

static int run_device(const char *dev, const float *stack, int W, int H, int n, int r, int reps,
                      const char *method, float *tau_out)
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
        if (tau_out)
            memcpy(tau_out, tau, (size_t)W * H * sizeof(float));
    }
    free(t);
    free(src);
    free(tau);
    gg_op_free(op);
    gg_context_destroy(ctx);
    return status;
}

/* ------------------------------------------------------ strip planning */

typedef struct strip {
    int y0, rows;
    int worker;           /* who ran it (last run) */
    double t_start, t_end; /* s after the run's start (last run) */
} strip;

/* Estimated cost of the strip of output rows [y0, y1) of an H-row image
 * (per image column, x edges ignored, mindist 1): the forward arcs of its
 * rows that stay inside the image (F: prefix sums over rows), the arcs of
 * the r/2 rows above into it (the kernel computes them again), and its
 * upload (rows with halo) at up arcs per pixel. */
static double strip_cost(const double *F, int H, int h, double up, int y0, int y1)
{
    double c = F[y1] - F[y0];
    for (int a = y0 - h < 0 ? 0 : y0 - h; a < y0; a++)
        for (int dy = y0 - a; dy <= h && a + dy < H; dy++)
            c += 2 * h + 1;
    const int u0 = y0 - h < 0 ? 0 : y0 - h, u1 = y1 + h > H ? H : y1 + h;
    return c + up * (u1 - u0);
}

/* Greedy cut with strip i's cost <= T * wt[i % nwt] and at most max_rows
 * rows: the number of strips (cuts into y0s when given). */
static int cut_strips(const double *F, int H, int h, double up, int max_rows, double T,
                      const double *wt, int nwt, int *y0s)
{
    int ns = 0;
    for (int y0 = 0; y0 < H;) {
        int y1 = y0 + 1;
        const double Ti = T * wt[ns % nwt];
        while (y1 < H && y1 - y0 < max_rows && strip_cost(F, H, h, up, y0, y1 + 1) <= Ti)
            y1++;
        if (y0s)
            y0s[ns] = y0;
        ns++;
        y0 = y1;
    }
    return ns;
}

/* Strips for the parallel run.  Returns the count; *out: malloc'ed.
 * wt[w]: worker w's share of the cost (strip i goes to worker i % nworkers). */
static int plan_strips(int split_arcs, int H, int h, double up, int nworkers, int per_worker,
                       const double *wt, int planner_rows, strip **out)
{
    int ns, *y0s = calloc((size_t)H + 1, sizeof *y0s);
    if (!split_arcs) {
        /* as measured before: the planner's rows, at least 2 strips per worker */
        int rows = planner_rows;
        if (rows > (H + 2 * nworkers - 1) / (2 * nworkers))
            rows = (H + 2 * nworkers - 1) / (2 * nworkers);
        ns = (H + rows - 1) / rows;
        for (int i = 0; i < ns; i++)
            y0s[i] = i * rows;
    } else {
        double *F = calloc((size_t)H + 1, sizeof *F);
        for (int c = 0; c < H; c++) {
            double f = h; /* dy = 0: dx = 1..h */
            for (int dy = 1; dy <= h && c + dy < H; dy++)
                f += 2 * h + 1;
            F[c + 1] = F[c] + f;
        }
        /* the smallest T that needs no more than the wanted strips */
        const int want = nworkers * per_worker;
        double wmin = 1;
        for (int w = 0; w < nworkers; w++)
            wmin = wt[w] < wmin ? wt[w] : wmin;
        /* hi: every strip may hold the whole image, so one strip does */
        double lo = 0, hi = strip_cost(F, H, h, up, 0, H) / wmin;
        for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
            const double mid = 0.5 * (lo + hi);
            if (cut_strips(F, H, h, up, planner_rows, mid, wt, nworkers, NULL) <= want)
                hi = mid;
            else
                lo = mid;
        }
        ns = cut_strips(F, H, h, up, planner_rows, hi, wt, nworkers, y0s);
        free(F);
    }
    y0s[ns] = H;
    strip *st = calloc((size_t)ns, sizeof *st);
    for (int i = 0; i < ns; i++)
        st[i] = (strip){y0s[i], y0s[i + 1] - y0s[i], -1, 0, 0};
    free(y0s);
    *out = st;
    return ns;
}

/* -parallel: every worker takes strips in turn until none is left. */
typedef struct par_job {
    const float *stack;
    float *tau;
    int W, H, n, nstrips, next, failed;
    int nworkers, fixed; /* fixed: worker w runs strips w, w + nworkers, ... */
    strip *strips;
    double t0;
    pthread_mutex_t lock;
} par_job;

typedef struct par_worker {
    par_job *job;
    gg_context *ctx;
    gg_op *op;
    int index;
} par_worker;

static void *par_run(void *p)
{
    par_worker *w = p;
    par_job *j = w->job;
    gg_tile *src = calloc((size_t)j->n, sizeof *src);
    for (int mine = w->index;; mine += j->nworkers) {
        pthread_mutex_lock(&j->lock);
        const int s = j->failed ? j->nstrips : j->fixed ? mine : j->next++;
        pthread_mutex_unlock(&j->lock);
        if (s >= j->nstrips || !src)
            break;
        strip *sp = &j->strips[s];
        sp->worker = w->index;
        sp->t_start = now_s() - j->t0;
        const int y = sp->y0;
        gg_window dw = {0, y, j->W, sp->rows}, sw;
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
        sp->t_end = now_s() - j->t0;
    }
    free(src);
    return NULL;
}

typedef struct par_opts {
    int split_arcs, per_worker, timeline;
    double upweight;
    double lead; /* > 0: a device's first worker takes this fraction of its share */
} par_opts;

/* Each worker's share of the cost: devices equal; a device's workers equal,
 * or with lead f and several workers on it, the first f and the others the
 * rest.  A small first strip starts the device's kernels early while its
 * other worker's larger strip is still uploading: upload and compute
 * overlap (two contexts, two streams). */
static void worker_shares(const char *const *devs, int ndev, double lead, double *wt)
{
    int ndevices = 0;
    for (int d = 0; d < ndev; d++) {
        int first = 1;
        for (int e = 0; e < d; e++)
            first &= strcmp(devs[e], devs[d]) != 0;
        ndevices += first;
    }
    for (int d = 0; d < ndev; d++) {
        int same = 0, rank = 0;
        for (int e = 0; e < ndev; e++) {
            same += !strcmp(devs[e], devs[d]);
            rank += e < d && !strcmp(devs[e], devs[d]);
        }
        const double share = same > 1 && lead > 0 && lead < 1
                                 ? (rank == 0 ? lead : (1 - lead) / (same - 1))
                                 : 1.0 / same;
        wt[d] = share / ndevices;
    }
}

static int run_parallel(const char *const *devs, int ndev, const float *stack, const float *ref,
                        int W, int H, int n, int r, int reps, const char *method,
                        const par_opts *po)
{
    par_worker *w = calloc((size_t)ndev, sizeof *w);
    pthread_t *th = calloc((size_t)ndev, sizeof *th);
    double *t = calloc((size_t)reps, sizeof *t);
    float *tau = malloc((size_t)W * H * sizeof(float));
    /* strips of equal cost go to the workers in a fixed order, so that
     * each worker's device buffers (sized by its first strip) fit every
     * later run; the rows split hands them out as workers come free */
    par_job job = {.stack = stack, .tau = tau, .W = W, .H = H, .n = n, .nworkers = ndev,
                   .fixed = po->split_arcs};
    pthread_mutex_init(&job.lock, NULL);
    char err[512], wbuf[16], names[1024] = "";
    snprintf(wbuf, sizeof wbuf, "%d", r);
    int status = !w || !th || !t || !tau;
    gg_raster_info in = {W, H, n, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, out;
    for (int d = 0; d < ndev && !status; d++) {
        w[d].job = &job;
        w[d].index = d;
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
    int planner_rows = 0;
    if (!status && gg_plan_rows(w[0].ctx, W, H, gg_op_bytes_per_pixel(w[0].op), r / 2,
                                &planner_rows) != GG_OK)
        status = 1;
    if (!status)
    {
        double wt[16];
        worker_shares(devs, ndev, po->lead, wt);
        job.nstrips = plan_strips(po->split_arcs, H, r / 2, po->upweight, ndev, po->per_worker,
                                  wt, planner_rows, &job.strips);
    }
    for (int rep = 0; rep < reps && !status; rep++) {
        job.next = 0;
        job.t0 = now_s();
        for (int d = 1; d < ndev; d++)
            pthread_create(&th[d], NULL, par_run, &w[d]);
        par_run(&w[0]);
        for (int d = 1; d < ndev; d++)
            pthread_join(th[d], NULL);
        t[rep] = now_s() - job.t0;
        status = job.failed;
    }
    if (!status) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        const double med = t[reps / 2], arcs = (double)W * H * ((double)r * r - 1);
        /* bit-identical to the single-device run (when there was one) */
        char same[64] = "-";
        if (ref) {
            size_t diff = 0;
            for (size_t i = 0; i < (size_t)W * H; i++)
                diff += memcmp(&tau[i], &ref[i], sizeof(float)) != 0;
            snprintf(same, sizeof same, diff ? "%zu pixels DIFFER" : "identical", diff);
        }
        int rmin = H, rmax = 0;
        for (int i = 0; i < job.nstrips; i++) {
            rmin = job.strips[i].rows < rmin ? job.strips[i].rows : rmin;
            rmax = job.strips[i].rows > rmax ? job.strips[i].rows : rmax;
        }
        printf("| %d workers in parallel (%s, %d strips) | %s | %d-%d | %.3f | %.3f-%.3f | %.2f | "
               "%.3f | %.3f | %s |\n",
               ndev, po->split_arcs ? "arcs" : "rows", job.nstrips, names, rmin, rmax, med, t[0],
               t[reps - 1], W * (double)H / med / 1e6, arcs / med / 1e9,
               16.0 * n * arcs / med / 1e12, same);
        if (po->timeline) {
            printf("\ntimeline of the last run (ms from its start):\n\n| strip | rows | worker | "
                   "start | end |\n|---:|---|---|---:|---:|\n");
            for (int i = 0; i < job.nstrips; i++)
                printf("| %d | %d+%d | %d %s | %.1f | %.1f |\n", i, job.strips[i].y0,
                       job.strips[i].rows, job.strips[i].worker, devs[job.strips[i].worker],
                       1e3 * job.strips[i].t_start, 1e3 * job.strips[i].t_end);
            printf("\n");
        }
    }
    for (int d = 0; d < ndev && w; d++) {
        gg_op_free(w[d].op);
        gg_context_destroy(w[d].ctx);
    }
    pthread_mutex_destroy(&job.lock);
    free(job.strips);
    free(w);
    free(th);
    free(t);
    free(tau);
    return status;
}

/* Splits "cuda:0,cuda:1/arcs2" into device names (devs, at most 16) and
 * the strip option after '/': rows, arcs or arcsK (K strips per worker). */
static int parse_group(char *g, const char **devs, par_opts *po)
{
    char *slash = strchr(g, '/');
    if (slash) {
        *slash = 0;
        const char *m = slash + 1;
        if (!strcmp(m, "rows"))
            po->split_arcs = 0;
        else if (!strncmp(m, "lead", 4)) {
            po->split_arcs = 1;
            po->lead = atof(m + 4);
            if (!(po->lead > 0 && po->lead < 1))
                return 0;
        } else if (!strncmp(m, "arcs", 4)) {
            po->split_arcs = 1;
            if (m[4])
                po->per_worker = atoi(m + 4);
            if (po->per_worker < 1)
                return 0;
        } else
            return 0;
    }
    int nd = 0;
    for (char *tok = strtok(g, ","); tok && nd < 16; tok = strtok(NULL, ","))
        devs[nd++] = tok;
    return nd;
}

int main(int argc, char **argv)
{
    int W = 3260, H = 2680, n = 60, r = 51, reps = 3, ndev = 0;
    const char *method = "prefix";
    int parallel = 0, pinned = 0;
    par_opts po = {.split_arcs = 1, .per_worker = 1, .timeline = 0, .upweight = 124, .lead = 0};
    const char *devs[16];
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
        } else if (!strcmp(argv[i], "-split") && i + 1 < argc) {
            po.split_arcs = !strcmp(argv[++i], "arcs");
        } else if (!strcmp(argv[i], "-strips") && i + 1 < argc) {
            po.per_worker = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-upweight") && i + 1 < argc) {
            po.upweight = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-lead") && i + 1 < argc) {
            po.lead = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-pinned")) {
            pinned = 1;
        } else if (!strcmp(argv[i], "-timeline")) {
            po.timeline = 1;
        } else if (argv[i][0] != '-' && ndev < 16) {
            devs[ndev++] = argv[i];
        } else {
            fprintf(stderr, "usage: bench_ptsel [-size WxH] [-n epochs] [-window r] [-reps R] "
                            "[-method prefix|pairs] [-parallel] [-split rows|arcs] [-strips k] "
                            "[-upweight u] [-lead f] [-pinned] [-timeline] "
                            "[device | dev,dev,...[/rows|/arcsK|/leadF] ...]\n");
            return 2;
        }
    }
    if (n < 2 || r < 3 || reps < 1 || po.per_worker < 1 || po.upweight < 0)
        return fprintf(stderr, "bench_ptsel: bad -n, -window or -reps\n"), 2;
    if (!ndev)
        devs[ndev++] = "cuda";
    const double t0 = now_s();
    const size_t stack_bytes = (size_t)W * H * n * 2 * sizeof(float);
    float *stack = NULL;
    gg_context *hctx = NULL; /* owns the pinned stack */
    if (pinned) {
        char err[512], dev0[64];
        /* a group's first device */
        snprintf(dev0, sizeof dev0, "%.*s", (int)strcspn(devs[0], ",/"), devs[0]);
        if (gg_context_create(dev0, &hctx, err, sizeof err) != GG_OK ||
            gg_host_alloc(hctx, stack_bytes, (void **)&stack) != GG_OK) {
            fprintf(stderr, "bench_ptsel: no pinned stack: %s\n",
                    hctx ? gg_context_last_error(hctx) : err);
            gg_context_destroy(hctx);
            return 1;
        }
    } else {
        stack = malloc(stack_bytes);
    }
    if (!stack)
        return fprintf(stderr, "bench_ptsel: out of memory for the %dx%dx%d stack\n", W, H, n), 1;
    const double t_alloc = now_s() - t0;
    make_stack(stack, W, H, n);
    printf("stack %dx%d, n = %d interferograms (%.2f GB CFloat32, %s host memory, allocated in "
           "%.1f s), window %d, method %s: made in %.1f s; median of %d runs\n\n", W, H, n,
           (double)stack_bytes / 1e9, pinned ? "page-locked" : "pageable", t_alloc, r, method,
           now_s() - t0, reps);
    printf("| device | name | rows per pass | median s | min-max s | Mpx/s | G arcs/s | TFLOP/s "
           "(16 n per arc) | pixels >= 0.71 (1 device) / tau_max vs 1 device (parallel) |\n"
           "|---|---|---:|---:|---|---:|---:|---:|---:|\n");
    int status = 0;
    /* the first single device's tau_max: what every parallel run must equal */
    float *ref = malloc((size_t)W * H * sizeof(float));
    int have_ref = 0;
    for (int d = 0; d < ndev; d++) {
        if (strchr(devs[d], ',') || strchr(devs[d], '/'))
            continue;
        const int rc = run_device(devs[d], stack, W, H, n, r, reps, method, have_ref ? NULL : ref);
        have_ref |= !rc;
        status |= rc;
    }
    if (parallel && ndev > 1)
        status |= run_parallel(devs, ndev, stack, have_ref ? ref : NULL, W, H, n, r, reps, method,
                               &po);
    /* groups: "dev,dev,..." (optionally "/rows", "/arcs", "/arcsK") run in parallel */
    for (int d = 0; d < ndev; d++) {
        if (!strchr(devs[d], ',') && !strchr(devs[d], '/'))
            continue;
        char g[512];
        snprintf(g, sizeof g, "%s", devs[d]);
        const char *gd[16];
        par_opts gpo = po;
        const int ng = parse_group(g, gd, &gpo);
        if (ng < 1) {
            fprintf(stderr, "bench_ptsel: bad device group '%s'\n", devs[d]);
            status = 1;
            continue;
        }
        status |= run_parallel(gd, ng, stack, have_ref ? ref : NULL, W, H, n, r, reps, method, &gpo);
    }
    free(ref);
    if (hctx) {
        gg_host_free(hctx, stack);
        gg_context_destroy(hctx);
    } else {
        free(stack);
    }
    return status;
}
