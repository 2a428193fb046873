/*
 * gg_ortho_run.c -- gdal_ortho as a function (geogpu_gdal.h): RPC + DEM
 * orthorectification of one scene or many, the geometry of
 * `gdalwarp -rpc -to RPC_DEM=... -et 0` on the device.  gdal_ortho.c is a
 * main over it; geogpu.distributed calls it inside its Dask workers with the
 * worker's own device context (one context per worker, not one per scene).
 *
 * The GDAL layer does what needs GDAL/PROJ: RPCs from wherever GDAL finds
 * them, the output grid gdalwarp would choose (GDALSuggestedWarpOutput2
 * with the same RPC transformer), the DEM window, and per block of output
 * rows a grid of exact coordinates (output CRS -> lon/lat with PROJ, lon/lat
 * -> DEM CRS with the vertical datum shift) every `step` pixels; the device
 * interpolates that grid (4x4 cubic Lagrange, error checked below 1e-6
 * source px per scene) and does DEM sampling, RFM and resampling
 * (libgeogpu's gg_ortho_*).  Reading block k+1 and writing block k-1 run on
 * their own threads while the device computes block k.
 *
 * A call keeps its state in an `orun` (the first GDAL error of any of its
 * threads, where error lines go), never in globals: a worker process runs
 * call after call, and may run two at once on two contexts.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu.h"
#include "gg_ortho_buffers.h"
#include "gg_ortho_direct.h"
#include "geogpu_gdal.h"
#include "gg_ortho_scene.h"
#include "gg_app.h" /* gg_app_parse_only (tests/fuzz), the safe output path */

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"
#include "gdal_alg.h"
#include "ogr_srs_api.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PROG "gdal_ortho"

/* ------------------------------------------------------------ options */

typedef struct options {
    ggo_options g;     /* what the scene needs (shared with GG:ortho:) */
    const char *format, *outdir, *device;
    char **co;
    int pinned;        /* pipeline host buffers page-locked (gg_ortho_buffers.h) */
} options;

/* One call's state.  GDAL errors reach keep_error through the error
 * handler every thread of the call pushes with the orun as its user data
 * (CPLPushErrorHandlerEx), so two calls in one process keep their own. */
typedef struct orun {
    pthread_mutex_t mu;     /* last_error: written by any of the call's threads */
    char last_error[2048];  /* the first GDAL failure message since cleared */
    char *err;              /* the caller's buffer for the first error line, or NULL */
    size_t errlen;
    double t_main;          /* when the call started (GG_ORTHO_TIMING) */
} orun;

static void CPL_STDCALL keep_error(CPLErr cls, CPLErrorNum no, const char *msg)
{
    (void)no;
    orun *run = CPLGetErrorHandlerUserData();
    if (cls >= CE_Failure) {
        if (!run)
            return;
        pthread_mutex_lock(&run->mu);
        if (!run->last_error[0])
            snprintf(run->last_error, sizeof run->last_error, "%s", msg ? msg : "");
        pthread_mutex_unlock(&run->mu);
        return;
    }
    if (cls == CE_Warning)
        fprintf(stderr, "Warning 1: %s\n", msg);
}

/* A copy of the call's GDAL error for a pipeline thread (another thread
 * may be setting it). */
static const char *last_error_of(orun *run)
{
    static __thread char copy[sizeof run->last_error];
    pthread_mutex_lock(&run->mu);
    memcpy(copy, run->last_error, sizeof copy);
    pthread_mutex_unlock(&run->mu);
    return copy;
}

/* Reports the call's one error line (stderr, or the caller's buffer: the
 * first one); returns 1. */
static int fail(orun *run, const char *scene, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(orun *run, const char *scene, const char *fmt, ...)
{
    /* scenes of a batch overlap (their threads may fail at once) */
    static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&fail_mu);
    if (run->err) {
        if (!run->err[0]) {
            if (scene)
                snprintf(run->err, run->errlen, "ERROR 1: %s: %s: %s", PROG, scene, msg);
            else
                snprintf(run->err, run->errlen, "ERROR 1: %s: %s", PROG, msg);
        }
    } else {
        if (scene)
            fprintf(stderr, "ERROR 1: %s: %s: %s\n", PROG, scene, msg);
        else
            fprintf(stderr, "ERROR 1: %s: %s\n", PROG, msg);
        fflush(stderr);
    }
    pthread_mutex_unlock(&fail_mu);
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s [--help] [--version] [-dem <file>] [-dem_interp near|bilinear|cubic]\n"
            "       [-dem_missing <h>] [-dem_srs <srs>] [-rpc_height <h>] [-t_srs <srs>]\n"
            "       [-tr <xres> <yres>] [-te <xmin> <ymin> <xmax> <ymax>] [-ts <width> <height>]\n"
            "       [-r near|bilinear|cubic] [-srcnodata \"<v>[ <v>]...\"]\n"
            "       [-dstnodata \"<v>[ <v>]...\"] [-ot <type>]\n"
            "       [-of <format>] [-co <NAME>=<VALUE>]... [-device <dev>] [-q] [-v]\n"
            "       <src> <dst>  |  -outdir <dir> <src> [<src>...]\n"
            "\n"
            "Orthorectifies images with RPCs over a DEM on the GPU, with the geometry of\n"
            "gdalwarp -rpc -to RPC_DEM=<dem> -et 0 (see docs/gdal_ortho.md).\n",
            PROG);
}

static int need(orun *run, int argc, char **argv, int i, int n)
{
    if (i + n >= argc) {
        fail(run, NULL, "%s needs %d value%s (see --help)", argv[i], n, n > 1 ? "s" : "");
        return 0;
    }
    return 1;
}

static int number(orun *run, const char *flag, const char *s, double *v)
{
    char *end = NULL;
    *v = CPLStrtod(s, &end);
    if (!end || *end || end == s || !isfinite(*v)) { /* nan/inf: as GG:ortho:'s numbers() */
        fail(run, NULL, "%s: '%s' is not a number", flag, s);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the scene */

typedef ggo_scene scene;
typedef ggo_block block;

/* ------------------------------------------------- the 3-stage pipeline */

/* Used when the source does not fit on the device: one reader thread reads
 * each block's source window (windows of successive blocks overlap) and
 * computes the block's grid, the device thread runs the block, a writer
 * thread writes it.  The resident-source pipeline below replaces it
 * whenever the image fits. */

#define QDEPTH 3

/* Scenes of a batch whose device part is over and whose writer still
 * drains their queued blocks, beside the ones setting up and the one on the
 * device (each holds at most its queue; see queue_bytes).
 * GG_ORTHO_DRAINING=<n> (default 2, at most 8). */
static int draining_max(void)
{
    return ggo_env_int("GG_ORTHO_DRAINING", 2, 1, 8);
}

/* Output bytes a resident-source scene may queue for its writer
 * (GG_ORTHO_QUEUE_MB, default 256; 0: QDEPTH blocks).  The device is
 * handed to the next scene once the last block has run, so with room for
 * most of a scene's output the writer (one file, one thread: about 2.5 GB/s
 * into the page cache) no longer holds the device: the next scene reads
 * and computes while this one's blocks are written. */
static size_t queue_bytes(void)
{
    const char *env = getenv("GG_ORTHO_QUEUE_MB");
    if (env && *env) {
        const long mb = atol(env);
        return mb <= 0 ? 0 : (size_t)(mb > 65536 ? 65536 : mb) << 20;
    }
    return (size_t)256 << 20;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Who waits on the pipeline's state (pipe_t.cv): the device thread, the
 * readers (strip readers, or the windowed reader), the writer, the grid
 * thread. */
enum { WAKE_DEV, WAKE_READ, WAKE_WRITE, WAKE_GRID, WAKE_ROLES };
#define WAKES(r) (1 << (r))
#define WAKE_ALL (WAKES(WAKE_ROLES) - 1)

/* What the device thread is doing (pipe_t.dev_acc). */
enum {
    DEV_OTHER, DEV_IDLE, DEV_UPLOAD, DEV_QUEUE, DEV_SYNC, DEV_LOCK, DEV_SOURCE, DEV_BUFFER,
    DEV_PHASES
};

typedef struct pipe {
    scene *sc;
    orun *run;
    gg_context *ctx;
    gg_context *pin;         /* host buffers page-locked through it; NULL: pageable */
    gg_ortho_session *sess;
    GDALDatasetH rds, wds;   /* reader's own source handle; the output */
    int nblocks, rows;
    int qdepth;              /* blocks run and not yet written, at most */
    block *blocks;
    int read_done, run_done, write_done; /* counts */
    int error;
    char msg[1024];
    double lon_ref;
    double t_grid, t_read, t_write; /* busy seconds of the reader / writer */
    pthread_mutex_t mu;
    /* one condition per waiter (wake): a state change wakes only the
     * threads it concerns, not the eleven or so of a pipeline */
    pthread_cond_t cv[WAKE_ROLES];
    /* resident source (see "the resident-source pipeline" below) */
    int resident;
    int nstrips, strip_rows;
    struct strip *strips;
    int *queue, nqueue, qhead;  /* requested strips, in request order */
    int *ready, nready;         /* read, waiting for the upload */
    void **pool;                /* free staging buffers */
    int npool;
    /* blocks queued on the device (gg_ortho_session_queue_resident), the
     * device thread's alone: their kernels run while the one before
     * downloads and the next one's strips go up */
    int overlap;                /* GG_ORTHO_OVERLAP (default 1) */
    void **inflight;            /* strips whose queued upload may not have landed */
    int ninflight;
    int queued[GG_ORTHO_QUEUED], nqueued, qfirst; /* block numbers, oldest first */
    unsigned char *block_run;   /* block k's output is complete */
    /* the host stages (resident_start .. resident_stop) */
    int grid_ahead;             /* blocks the grid thread runs ahead of the device */
    pthread_t tg, tw, tr[64];
    int nr, have_tg, have_tw, started;
    int grid_done, finished;
    /* the device thread's time from its session to its release, by what it
     * was doing (dev_enter: each moment counts once; GG_ORTHO_TIMING) */
    int dev_phase, dev_on;
    double dev_t0, dev_acc[DEV_PHASES];
    double dev_cpu;             /* its processor seconds over the same span: the
                                   rest of the span it slept or waited for a processor */
    double dev_delay;           /* seconds of the span it waited, runnable, for a
                                   processor (schedstat's run delay) */
    int dev_nice_was;           /* its nice value before the turn (device_nice) */
    double t_readers;           /* summed busy seconds of the readers */
    ggo_direct *direct;         /* uncompressed GeoTIFF: pixels by pwrite, else NULL */
    ggo_direct *src_direct;     /* the source's rows by pread (strip readers), else NULL */
    /* the files' pixels mapped and registered (mapped_files): the copy
     * engine reads the source's strips and writes the blocks where they lie */
    ggo_map src_map, dst_map;
    int src_mapped, dst_mapped;
    double t_map, t_unmap;      /* seconds mapping and registering, undoing it */
    size_t dst_bytes;           /* one output block, all bands */
    /* called once the device has run the last block (the writer may still
     * be writing): the next scene of a batch may then take the device */
    void (*device_done)(struct pipe *p);
    struct scene_job *job;
    int left_at_release;     /* blocks still to write when the device went on */
    long write_delay_us;
    double t_up, t_kernel, t_down; /* the session's times, kept when it goes early */
    double t_released;       /* when the device went on (GG_ORTHO_TIMING's timeline) */
    long long t_px;
} pipe_t;

/* Host buffers (gg_ortho_buffers.h) kept: at most what the scenes in
 * flight hold (their queues and strips). */
static size_t keep_bytes(void)
{
    return queue_bytes() * (size_t)(1 + draining_max()) + ((size_t)256 << 20);
}

/* Wakes the waiters in mask (WAKES(role)...), mu held. */
static void wake(pipe_t *p, int mask)
{
    for (int r = 0; r < WAKE_ROLES; r++)
        if (mask & WAKES(r))
            pthread_cond_broadcast(&p->cv[r]);
}

static void pipe_fail(pipe_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pipe_fail(pipe_t *p, const char *fmt, ...)
{
    pthread_mutex_lock(&p->mu);
    if (!p->error) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, sizeof p->msg, fmt, ap);
        va_end(ap);
        p->error = 1;
    }
    wake(p, WAKE_ALL);
    pthread_mutex_unlock(&p->mu);
}

/* Device thread: from now on its time counts as phase; returns the phase
 * it leaves, to go back to (dev_enter(p, prev)). */
static int dev_enter(pipe_t *p, int phase)
{
    const int prev = p->dev_phase;
    if (p->dev_on) {
        const double now = wall();
        p->dev_acc[prev] += now - p->dev_t0;
        p->dev_t0 = now;
    }
    p->dev_phase = phase;
    return prev;
}

/* Device thread: takes the pipeline's lock, its wait counted as such. */
static void dev_lock(pipe_t *p)
{
    const int prev = dev_enter(p, DEV_LOCK);
    pthread_mutex_lock(&p->mu);
    dev_enter(p, prev);
}

/* Waits, as role (WAKE_*), until the pipeline counter *done reaches need,
 * or a stage fails; returns 0 on a failure. */
static int wait_for(pipe_t *p, int role, const int *done, int need)
{
    pthread_mutex_lock(&p->mu);
    while (!p->error && *done < need)
        pthread_cond_wait(&p->cv[role], &p->mu);
    const int ok = !p->error;
    pthread_mutex_unlock(&p->mu);
    return ok;
}

static void *reader_loop(pipe_t *p, scene *sc);
static void scene_progress(struct scene_job *j, double frac);

static void *reader(void *arg)
{
    ggo_bulk_thread("gg-read");
    const double c0 = ggo_thread_cpu();
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandlerEx(keep_error, p->run);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES");
    reader_loop(p, sc);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
    ggo_cpu_add(GGO_CPU_READERS, c0);
    return NULL;
}

static void *reader_loop(pipe_t *p, scene *sc)
{
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_READ, &p->write_done, k - p->qdepth + 1))
            return NULL;
        block *b = &p->blocks[k];
        const double t0 = wall();
        if (!ggo_block_grid(sc, b, p->lon_ref)) {
            pipe_fail(p, "out of memory");
            return NULL;
        }
        ggo_block_window(sc, b, ggo_first_margin(sc));
        const double t1 = wall();
        if (!ggo_read_window(sc, p->rds, b)) {
            pipe_fail(p, "reading %s failed: %s", sc->src_name, last_error_of(p->run));
            return NULL;
        }
        p->t_grid += t1 - t0;
        p->t_read += wall() - t1;
        pthread_mutex_lock(&p->mu);
        p->read_done = k + 1;
        wake(p, WAKES(WAKE_DEV));
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void *writer_loop(pipe_t *p);

static void *writer(void *arg)
{
    ggo_bulk_thread("gg-write");
    const double c0 = ggo_thread_cpu();
    CPLPushErrorHandlerEx(keep_error, ((pipe_t *)arg)->run);
    writer_loop(arg);
    CPLPopErrorHandler();
    ggo_cpu_add(GGO_CPU_WRITER, c0);
    return NULL;
}

static void *writer_loop(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t ds = gg_type_size(sc->dst_t);
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_WRITE, &p->run_done, k + 1))
            return NULL;
        block *b = &p->blocks[k];
        const size_t plane = (size_t)sc->out_w * b->rows;
        const double t0 = wall();
        if (p->write_delay_us > 0) /* GG_ORTHO_WRITE_DELAY_MS (tests: a slow disk) */
            usleep((useconds_t)p->write_delay_us);
        if (!p->dst_mapped) /* mapped: no outside fill (mapped_files) */
            ggo_fill_outside(sc, b->y0, b->rows, b->dst);
        if (gg_fault_point("write")) { /* GG_FAULT=write:N (tests) */
            pipe_fail(p, "writing %s failed: injected fault (GG_FAULT)", sc->dst_name);
            return NULL;
        }
        if (p->dst_mapped)
            ; /* the device wrote the block into the file */
        else if (p->direct) {
            char err[256];
            if (ggo_direct_write(p->direct, b->y0, b->rows, b->dst, err, sizeof err)) {
                pipe_fail(p, "writing %s failed: %s", sc->dst_name, err);
                return NULL;
            }
        } else {
            for (int i = 0; i < sc->nbands; i++)
                if (GDALRasterIO(GDALGetRasterBand(p->wds, i + 1), GF_Write, 0, b->y0, sc->out_w,
                                 b->rows, (char *)b->dst + i * plane * ds, sc->out_w, b->rows,
                                 ggo_to_gdal_type(sc->dst_t), 0, 0) != CE_None) {
                    pipe_fail(p, "writing %s failed: %s", sc->dst_name, last_error_of(p->run));
                    return NULL;
                }
        }
        p->t_write += wall() - t0;
        if (!p->dst_mapped)
            ggo_buffer_put(b->dst);
        free(b->src);
        free(b->nodes);
        b->dst = b->src = NULL;
        b->nodes = NULL;
        pthread_mutex_lock(&p->mu);
        p->write_done = k + 1; /* queue room; the windowed reader's next window */
        wake(p, WAKES(WAKE_DEV) | WAKES(WAKE_READ));
        pthread_mutex_unlock(&p->mu);
        /* the resident pipeline counts device blocks instead: its device
         * goes to the next scene of a batch before this writer is done */
        if (!p->resident)
            scene_progress(p->job, (double)(k + 1) / p->nblocks);
    }
    return NULL;
}

/* Device part of one block (all bands); retries with a wider window
 * (read on this thread: the reader is done with the block) when the kernel
 * reports a tap outside it. */
static int run_block(pipe_t *p, block *b)
{
    if (!b->dst)
        b->dst = ggo_buffer_get(p->pin, p->dst_bytes);
    if (ggo_run_block(p->sc, p->sess, p->ctx, p->sc->src, b, NULL)) {
        pipe_fail(p, "%s", p->sc->err);
        return 0;
    }
    return 1;
}

/* Runs every block through the windowed pipeline.  0 on error. */
static int run_windowed(pipe_t *p)
{
    pthread_t tr, tw;
    const int have_tr = pthread_create(&tr, NULL, reader, p) == 0;
    const int have_tw = pthread_create(&tw, NULL, writer, p) == 0;
    if (!have_tr || !have_tw)
        pipe_fail(p, "cannot start the pipeline threads");
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_DEV, &p->read_done, k + 1))
            break;
        if (!run_block(p, &p->blocks[k]))
            break;
        pthread_mutex_lock(&p->mu);
        p->run_done = k + 1;
        wake(p, WAKES(WAKE_WRITE));
        pthread_mutex_unlock(&p->mu);
    }
    if (have_tr)
        pthread_join(tr, NULL);
    if (have_tw)
        pthread_join(tw, NULL);
    return !p->error;
}

/* Whether the whole source goes on the device: GG_ORTHO_SOURCE=window or
 * resident forces one pipeline; otherwise resident when the image takes at
 * most half the free device memory (a quarter on the CPU backend, where
 * "device" memory is the host's). */
static int resident_source(const scene *sc, gg_context *ctx)
{
    const char *env = getenv("GG_ORTHO_SOURCE");
    if (env && EQUAL(env, "window"))
        return 0;
    const size_t bytes = gg_ortho_source_bytes(sc->src_t, sc->width, sc->height, sc->nbands);
    if (!bytes)
        return 0;
    if (env && EQUAL(env, "resident"))
        return 1;
    size_t free_b = 0, total_b = 0;
    if (gg_context_memory(ctx, &free_b, &total_b) != GG_OK)
        return 0;
    const int cpu = EQUAL(gg_context_backend(ctx), "cpu");
    return bytes <= free_b / (cpu ? 4 : 2);
}

/* ------------------------------------------ the resident-source pipeline
 *
 * When the whole source image fits in (a share of) device memory, each
 * source row is read from the file once and uploaded once, and every block
 * takes its rows from the device copy: the windows of a rotated footprint
 * overlap by most of their rows, so reading per block window read the
 * image several times over on one thread (the bound of the first version).
 *
 *   grid thread     block grids (PROJ) and source row ranges, running up to
 *                   GRID_AHEAD blocks ahead; requests the strips of full-width
 *                   source rows each block needs, in block order;
 *   reader threads  (several, each with its own GDAL handle) read requested
 *                   strips into a fixed pool of staging buffers;
 *   device thread   uploads read strips (the backend's copies are not
 *                   re-entrant, so only this thread talks to the device),
 *                   runs block k once its rows are on the device, downloads;
 *   writer thread   writes finished blocks in order.
 *
 * Host memory: the staging pool, GRID_AHEAD grids and the output blocks
 * queued for the writer (queue_bytes, at least QDEPTH), whatever the image
 * size.  The kernel reports any tap outside the rows it
 * was given, so the result never depends on the planning: a block that
 * missed is run again with more rows (finally all of them). */

/* Blocks the grid thread may run ahead of the device: at least
 * GRID_AHEAD, and as many as GRID_AHEAD_MB of grids hold (an 8192^2 scene's
 * 34 grids take 48 MB): the grid thread (PROJ, about 0.45 ms a block of an
 * 8192^2 scene) starts with the scene's set-up done, before its turn at the
 * device, and should not hold that turn up. */
#define GRID_AHEAD 16
#define GRID_AHEAD_MB 64

enum { STRIP_IDLE, STRIP_QUEUED, STRIP_READING, STRIP_READ, STRIP_ON_DEVICE };

typedef struct strip {
    int y0, rows;
    int state;
    void *buf;
} strip;

/* Queues the strips that cover source rows [y0, y1) (mu held). */
static void request_rows(pipe_t *p, int y0, int y1)
{
    if (y0 < 0)
        y0 = 0;
    if (y1 > p->sc->height)
        y1 = p->sc->height;
    if (y1 <= y0)
        return;
    for (int i = y0 / p->strip_rows; i <= (y1 - 1) / p->strip_rows; i++)
        if (p->strips[i].state == STRIP_IDLE && p->src_mapped) {
            p->strips[i].state = STRIP_READ; /* in the mapping: nothing to read */
            p->ready[p->nready++] = i;
        } else if (p->strips[i].state == STRIP_IDLE) {
            p->strips[i].state = STRIP_QUEUED;
            p->queue[p->nqueue++] = i;
        }
    wake(p, p->src_mapped ? WAKES(WAKE_DEV) : WAKES(WAKE_READ));
}

/* Are rows [y0, y1) on the device? (mu held) */
static int rows_on_device(const pipe_t *p, int y0, int y1)
{
    if (y0 < 0)
        y0 = 0;
    if (y1 > p->sc->height)
        y1 = p->sc->height;
    if (y1 <= y0)
        return 1;
    for (int i = y0 / p->strip_rows; i <= (y1 - 1) / p->strip_rows; i++)
        if (p->strips[i].state != STRIP_ON_DEVICE)
            return 0;
    return 1;
}

/* Device thread, mu held: uploads every strip the readers have finished
 * (mu released during each copy) and gives its buffer back to the pool. */
static void upload_ready(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t plane = (size_t)sc->width * (size_t)p->strip_rows * gg_type_size(sc->src_t);
    while (p->nready > 0 && !p->error) {
        const int i = p->ready[--p->nready];
        strip *st = &p->strips[i];
        pthread_mutex_unlock(&p->mu);
        const int prev = dev_enter(p, DEV_UPLOAD);
        gg_status rc = GG_OK;
        for (int k = 0; k < sc->nbands && rc == GG_OK; k++) {
            const void *rows =
                p->src_mapped ? (const void *)(p->src_map.px + k * p->src_map.band_bytes +
                                               (size_t)st->y0 * p->src_map.row_bytes)
                              : (const void *)((const char *)st->buf + (size_t)k * plane);
            rc = p->overlap ? gg_ortho_session_put_rows_async(p->sess, k, st->y0, st->rows, rows,
                                                              (size_t)sc->width)
                            : gg_ortho_session_put_rows(p->sess, k, st->y0, st->rows, rows,
                                                        (size_t)sc->width);
        }
        dev_enter(p, prev);
        dev_lock(p);
        if (rc != GG_OK) {
            if (!p->error)
                snprintf(p->msg, sizeof p->msg, "%s", gg_context_last_error(p->ctx));
            p->error = 1;
        }
        st->state = STRIP_ON_DEVICE;
        if (p->src_mapped)
            ; /* the mapping stays until resident_stop */
        else if (p->overlap) /* back to the pool once the copy queue has passed it */
            p->inflight[p->ninflight++] = st->buf;
        else {
            p->pool[p->npool++] = st->buf;
            wake(p, WAKES(WAKE_READ)); /* a free staging buffer */
        }
        st->buf = NULL;
    }
}

/* mu held: the strips whose uploads have landed go back to the pool. */
static void release_inflight(pipe_t *p)
{
    if (p->ninflight > 0)
        wake(p, WAKES(WAKE_READ));
    while (p->ninflight > 0)
        p->pool[p->npool++] = p->inflight[--p->ninflight];
}

static int complete_oldest(pipe_t *p);

/* Device thread, mu held, nothing to upload: instead of sleeping, it
 * completes the oldest queued block or, when the readers are out of
 * buffers, lets the queued uploads land.  1 when it did one (mu was
 * released meanwhile), 0 when the caller should wait. */
static int device_idle(pipe_t *p)
{
    if (p->nqueued > 0) {
        pthread_mutex_unlock(&p->mu);
        complete_oldest(p);
        dev_lock(p);
        return 1;
    }
    if (p->ninflight > 0 && p->npool == 0) {
        pthread_mutex_unlock(&p->mu);
        const int prev = dev_enter(p, DEV_SYNC);
        const gg_status rc = gg_ortho_session_flush(p->sess);
        dev_enter(p, prev);
        dev_lock(p);
        if (rc != GG_OK && !p->error) {
            snprintf(p->msg, sizeof p->msg, "%s", gg_context_last_error(p->ctx));
            p->error = 1;
        }
        release_inflight(p);
        return 1;
    }
    return 0;
}

/* Device thread: waits until rows [y0, y1) are on the device, uploading
 * strips as they come.  0 on error. */
static int wait_rows(pipe_t *p, int y0, int y1)
{
    const int prev = dev_enter(p, DEV_IDLE);
    dev_lock(p);
    request_rows(p, y0, y1);
    for (;;) {
        upload_ready(p);
        if (p->error || rows_on_device(p, y0, y1))
            break;
        if (p->nready == 0 && !device_idle(p))
            pthread_cond_wait(&p->cv[WAKE_DEV], &p->mu);
    }
    const int ok = !p->error;
    pthread_mutex_unlock(&p->mu);
    dev_enter(p, prev);
    return ok;
}

static void *grid_thread(void *arg)
{
    ggo_bulk_thread("gg-grid");
    const double c0 = ggo_thread_cpu();
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandlerEx(keep_error, p->run);
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_GRID, &p->run_done, k - p->grid_ahead + 1))
            break;
        block *b = &p->blocks[k];
        const double t0 = wall();
        if (!ggo_block_grid(sc, b, p->lon_ref)) {
            pipe_fail(p, "out of memory");
            break;
        }
        ggo_block_window(sc, b, ggo_first_margin(sc));
        p->t_grid += wall() - t0;
        pthread_mutex_lock(&p->mu);
        if (b->sh > 0)
            request_rows(p, b->sy0, b->sy0 + b->sh);
        p->grid_done = k + 1;
        wake(p, WAKES(WAKE_DEV));
        pthread_mutex_unlock(&p->mu);
    }
    CPLPopErrorHandler();
    ggo_cpu_add(GGO_CPU_GRID, c0);
    return NULL;
}

static void *strip_reader(void *arg)
{
    ggo_bulk_thread("gg-read");
    const double c0 = ggo_thread_cpu();
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandlerEx(keep_error, p->run);
    /* uncompressed GeoTIFF: read straight into our buffer, not through
     * GDAL's block cache (4x faster for full-width strips); preads from
     * the strip table where the layout allows (p->src_direct) */
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES");
    GDALDatasetH ds = p->src_direct ? NULL
                                    : GDALOpenEx(sc->src_name, GDAL_OF_RASTER | GDAL_OF_READONLY,
                                                 NULL, NULL, NULL);
    if (!ds && !p->src_direct)
        pipe_fail(p, "cannot open %s again for reading: %s", sc->src_name,
                  last_error_of(p->run));
    const size_t ss = gg_type_size(sc->src_t);
    const size_t band_space = ss * sc->width * (size_t)p->strip_rows;
    while (ds || p->src_direct) {
        pthread_mutex_lock(&p->mu);
        while (!p->error && !p->finished && !(p->qhead < p->nqueue && p->npool > 0))
            pthread_cond_wait(&p->cv[WAKE_READ], &p->mu);
        if (p->error || p->finished) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        const int i = p->queue[p->qhead++];
        strip *st = &p->strips[i];
        void *buf = p->pool[--p->npool];
        st->state = STRIP_READING;
        pthread_mutex_unlock(&p->mu);
        const double t0 = wall();
        char rerr[256] = "";
        CPLErr e = CE_None;
        if (gg_fault_point("read")) { /* GG_FAULT=read:N (tests) */
            CPLError(CE_Failure, CPLE_FileIO, "injected fault (GG_FAULT)");
            e = CE_Failure;
        } else if (p->src_direct) {
            if (ggo_direct_read(p->src_direct, st->y0, st->rows, buf, band_space, rerr,
                                sizeof rerr)) {
                CPLError(CE_Failure, CPLE_FileIO, "%s", rerr);
                e = CE_Failure;
            }
        } else
            e = GDALDatasetRasterIO(ds, GF_Read, 0, st->y0, sc->width, st->rows, buf, sc->width,
                                    st->rows, ggo_to_gdal_type(sc->src_t), sc->nbands, NULL,
                                    (int)ss, (int)(ss * sc->width), (GSpacing)band_space);
        const double t1 = wall();
        pthread_mutex_lock(&p->mu);
        p->t_readers += t1 - t0;
        if (e != CE_None) {
            p->pool[p->npool++] = buf;
            pthread_mutex_unlock(&p->mu);
            pipe_fail(p, "reading %s failed: %s", sc->src_name, last_error_of(p->run));
            break;
        }
        st->buf = buf;
        st->state = STRIP_READ;
        p->ready[p->nready++] = i;
        wake(p, WAKES(WAKE_DEV));
        pthread_mutex_unlock(&p->mu);
    }
    if (ds)
        GDALClose(ds);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
    ggo_cpu_add(GGO_CPU_READERS, c0);
    return NULL;
}

/* Where block b's output goes: a host buffer for the writer, or its rows
 * in the mapped output file. */
static void *block_output(pipe_t *p, const block *b)
{
    if (p->dst_mapped)
        return p->dst_map.px + (size_t)b->y0 * p->dst_map.row_bytes;
    return ggo_buffer_get(p->pin, p->dst_bytes);
}

/* Samples from one band of block b's output to the next. */
static size_t block_plane(const pipe_t *p, const block *b)
{
    if (p->dst_mapped)
        return p->dst_map.band_bytes / gg_type_size(p->sc->dst_t);
    return (size_t)p->sc->out_w * b->rows;
}

/* The source rows block b's attempt needs: its planned window (0), a
 * wider one (1), all rows (2). */
static void attempt_rows(pipe_t *p, block *b, int attempt, int *y0, int *y1)
{
    if (attempt == 1)
        ggo_block_window(p->sc, b, 64 + 4 * p->sc->step);
    if (attempt == 2) {
        *y0 = 0;
        *y1 = p->sc->height;
        return;
    }
    *y0 = b->sh > 0 ? b->sy0 : 0;
    *y1 = b->sh > 0 ? b->sy0 + b->sh : 0;
}

static void note_miss(const pipe_t *p, const block *b)
{
    if (p->sc->o->verbose)
        fprintf(stderr, "%s: block at row %d needed more source rows\n", PROG, b->y0);
}

/* Device part of one block from the resident source, run at once from
 * attempt `first` (attempt_rows); more rows and a new run when the kernel
 * reports a tap outside the rows it had. */
static int run_block_resident(pipe_t *p, block *b, int first)
{
    scene *sc = p->sc;
    const size_t ds = gg_type_size(sc->dst_t);
    const size_t plane = block_plane(p, b);
    if (!b->dst)
        b->dst = block_output(p, b);
    if (!b->dst) {
        pipe_fail(p, "out of memory");
        return 0;
    }
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    for (int attempt = first; attempt < 3; attempt++) {
        int y0, y1;
        attempt_rows(p, b, attempt, &y0, &y1);
        if (y1 > y0 && !wait_rows(p, y0, y1))
            return 0;
        int any_miss = 0;
        for (int k = 0; k < sc->nbands; k++) {
            int missed = 0;
            if (gg_ortho_session_run_resident(p->sess, &g, k, y0, y1 - y0,
                                              (char *)b->dst + k * plane * ds, sc->dst_t,
                                              sc->out_w, b->rows, (size_t)sc->out_w,
                                              &missed) != GG_OK) {
                pipe_fail(p, "%s", gg_context_last_error(p->ctx));
                return 0;
            }
            any_miss |= missed;
        }
        if (!any_miss)
            return 1;
        note_miss(p, b);
    }
    pipe_fail(p, "internal error: source rows still missing");
    return 0;
}

/* Device thread: block k's output is complete; run_done counts the
 * complete blocks from the first (the writer writes in order). */
static void block_finished(pipe_t *p, int k)
{
    dev_lock(p);
    p->block_run[k] = 1;
    const int before = p->run_done;
    while (p->run_done < p->nblocks && p->block_run[p->run_done])
        p->run_done++;
    if (p->run_done > before)
        wake(p, WAKES(WAKE_WRITE) | WAKES(WAKE_GRID));
    pthread_mutex_unlock(&p->mu);
    if (p->run_done > before)
        scene_progress(p->job, (double)p->run_done / p->nblocks);
}

/* Device thread: the oldest queued block's download; a block that missed
 * source rows runs again at once with more.  0 on error. */
static int complete_oldest(pipe_t *p)
{
    const int k = p->queued[p->qfirst];
    p->qfirst = (p->qfirst + 1) % GG_ORTHO_QUEUED;
    p->nqueued--;
    int missed = 0;
    const int prev = dev_enter(p, DEV_SYNC);
    const gg_status rc = gg_ortho_session_wait(p->sess, &missed);
    dev_enter(p, prev);
    dev_lock(p);
    release_inflight(p);
    pthread_mutex_unlock(&p->mu);
    if (rc != GG_OK) {
        pipe_fail(p, "%s", gg_context_last_error(p->ctx));
        return 0;
    }
    if (missed) {
        note_miss(p, &p->blocks[k]);
        if (!run_block_resident(p, &p->blocks[k], 1))
            return 0;
    }
    block_finished(p, k);
    return 1;
}

/* Device thread: queues block k (all bands) once its rows are on the
 * device, completing the oldest queued block first when the queue is
 * full.  0 on error. */
static int queue_block(pipe_t *p, int k)
{
    scene *sc = p->sc;
    block *b = &p->blocks[k];
    const int prev_buf = dev_enter(p, DEV_BUFFER); /* the process's buffer table: shared */
    b->dst = block_output(p, b);
    dev_enter(p, prev_buf);
    if (!b->dst) {
        pipe_fail(p, "out of memory");
        return 0;
    }
    int y0, y1;
    attempt_rows(p, b, 0, &y0, &y1);
    if (y1 > y0 && !wait_rows(p, y0, y1))
        return 0;
    if (p->nqueued == GG_ORTHO_QUEUED && !complete_oldest(p))
        return 0;
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    const int prev = dev_enter(p, DEV_QUEUE);
    const gg_status rc = gg_ortho_session_queue_resident(
        p->sess, &g, y0, y1 - y0, b->dst, sc->dst_t, sc->out_w, b->rows, (size_t)sc->out_w,
        block_plane(p, b));
    dev_enter(p, prev);
    if (rc != GG_OK) {
        pipe_fail(p, "%s", gg_context_last_error(p->ctx));
        return 0;
    }
    p->queued[(p->qfirst + p->nqueued) % GG_ORTHO_QUEUED] = k;
    p->nqueued++;
    return 1;
}

/* Whether the files' pixels are mapped for the copy engine:
 * GG_ORTHO_MAPPED=1 (both), =source or =output, wherever the backend can
 * register them (experiments, and tests on the CPU backend, where the
 * "uploads" are memcpy); off by default.  Measured on an H200 host (bench/RESULTS.md, session 28):
 * registering a scene's two files (2 x 134 MB in huge-page tmpfs) takes
 * 37-57 ms, and the driver holds the device thread's calls meanwhile, so
 * one GPU ran 112 scenes in 5.5-9.1 s against 1.6-1.8 s through the
 * threads. */
enum { MAP_SOURCE = 1, MAP_OUTPUT = 2 };
static int mapped_wanted(void)
{
    const char *env = getenv("GG_ORTHO_MAPPED");
    if (!env || !*env)
        return 0;
    if (EQUAL(env, "source"))
        return MAP_SOURCE;
    if (EQUAL(env, "output"))
        return MAP_OUTPUT;
    return CPLTestBool(env) ? MAP_SOURCE | MAP_OUTPUT : 0;
}

/* Maps and registers the source's pixels (the copy engine reads its
 * strips where they lie: no readers, no staging) and the output's (the
 * blocks are downloaded into the file: nothing for the writer to copy),
 * each where its layout and file system allow (ggo_direct_map); the
 * other, or both, go through the threads as before.  Why: each byte of a
 * scene crosses the host's memory three times through the threads (file to
 * staging, staging to device; device to buffer, buffer to file), which
 * several GPUs of one host contend for; but see mapped_wanted. */
static void map_files(pipe_t *p)
{
    scene *sc = p->sc;
    const int want = mapped_wanted();
    if (!want)
        return;
    const double t0 = wall();
    char why[256] = "";
    if (p->src_direct && (want & MAP_SOURCE)) {
        if (ggo_direct_map(p->src_direct, 0, &p->src_map, why, sizeof why) == 0 &&
            gg_host_register(p->ctx, p->src_map.base, p->src_map.len, GG_HOST_READ_ONLY) !=
                GG_OK) {
            snprintf(why, sizeof why, "%s", gg_context_last_error(p->ctx));
            ggo_direct_unmap(&p->src_map);
        }
        p->src_mapped = p->src_map.base != NULL;
        if (!p->src_mapped && sc->o->verbose)
            fprintf(stderr, "%s: %s: source not mapped (%s)\n", PROG, sc->src_name, why);
    }
    const size_t ds = gg_type_size(sc->dst_t);
    if (p->direct && !sc->outside_nd && (want & MAP_OUTPUT)) {
        if (ggo_direct_map(p->direct, 1, &p->dst_map, why, sizeof why) == 0 &&
            (p->dst_map.band_bytes % ds != 0 ||
             gg_host_register(p->ctx, p->dst_map.base, p->dst_map.len, 0) != GG_OK)) {
            snprintf(why, sizeof why, "%s",
                     p->dst_map.band_bytes % ds ? "bands not whole samples apart"
                                                : gg_context_last_error(p->ctx));
            ggo_direct_unmap(&p->dst_map);
        }
        p->dst_mapped = p->dst_map.base != NULL;
        if (!p->dst_mapped && sc->o->verbose)
            fprintf(stderr, "%s: %s: output not mapped (%s)\n", PROG, sc->dst_name, why);
    }
    p->t_map = wall() - t0;
    if (sc->o->verbose && (p->src_mapped || p->dst_mapped))
        fprintf(stderr, "%s: %s: %s%s%s mapped for the device's copies\n", PROG, sc->src_name,
                p->src_mapped ? "source" : "", p->src_mapped && p->dst_mapped ? " and " : "",
                p->dst_mapped ? "output" : "");
}

/* Unregisters and unmaps what map_files mapped (every copy is over). */
static void unmap_files(pipe_t *p)
{
    const double t0 = wall();
    if (p->dst_mapped) /* the blocks point into the mapping: not buffers */
        for (int k = 0; k < p->nblocks; k++)
            p->blocks[k].dst = NULL;
    if (p->src_mapped)
        gg_host_unregister(p->ctx, p->src_map.base);
    if (p->dst_mapped)
        gg_host_unregister(p->ctx, p->dst_map.base);
    ggo_direct_unmap(&p->src_map);
    ggo_direct_unmap(&p->dst_map);
    if (p->src_mapped || p->dst_mapped)
        p->t_unmap = wall() - t0;
    p->src_mapped = p->dst_mapped = 0;
}

/* Readers: GG_ORTHO_READERS, else half the processors, 2 to 8. */
static int reader_count(void)
{
    const int set = ggo_env_int("GG_ORTHO_READERS", 0, 0, 64);
    if (set > 0)
        return set;
    const long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n < 2 ? 2 : n > 8 ? 8 : (int)n;
}

/* The resident pipeline's host stages: strip table, staging pool and
 * threads (grid, writer, readers).  They need no device, so a batch starts
 * them once the scene is set up, before its turn: the first grids and
 * strips are then ready when the device comes.  0 on error (p->msg). */
static int resident_start(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t ss = gg_type_size(sc->src_t);
    const size_t row_bytes = (size_t)sc->width * ss * sc->nbands;
    /* strips of ~4 MB: fine enough to start the first block early */
    int srows = (int)((4u << 20) / (row_bytes ? row_bytes : 1));
    const char *env = getenv("GG_ORTHO_STRIP_ROWS"); /* tests: many small strips */
    if (env && atoi(env) > 0)
        srows = atoi(env);
    srows = srows < 1 ? 1 : srows > sc->height ? sc->height : srows;
    p->strip_rows = srows;
    p->nstrips = (sc->height + srows - 1) / srows;
    const int nreaders = reader_count();
    /* GG_ORTHO_STRIP_BUFFERS (experiments): strips read ahead of the
     * device; the default keeps every reader busy twice over */
    int nbuf = ggo_env_int("GG_ORTHO_STRIP_BUFFERS", 2 * nreaders + 2, 1, 4096);
    nbuf = nbuf > p->nstrips ? p->nstrips : nbuf;
    const double grid_mb = (double)((sc->out_w - 1) / sc->step + 4) *
                           ((p->rows - 1) / sc->step + 4) * GG_ORTHO_PLANES * 8.0 / 1048576.0;
    const double fit = GRID_AHEAD_MB / (grid_mb > 0 ? grid_mb : 1.0);
    p->grid_ahead = fit > p->nblocks ? p->nblocks : fit > GRID_AHEAD ? (int)fit : GRID_AHEAD;
    p->strips = calloc((size_t)p->nstrips, sizeof(strip));
    p->queue = calloc((size_t)p->nstrips, sizeof(int));
    p->ready = calloc((size_t)p->nstrips, sizeof(int));
    p->pool = calloc((size_t)nbuf, sizeof(void *));
    p->inflight = calloc((size_t)nbuf, sizeof(void *));
    p->block_run = calloc((size_t)p->nblocks, 1);
    p->overlap = ggo_env_int("GG_ORTHO_OVERLAP", 1, 0, 1);
    int ok = p->strips && p->queue && p->ready && p->pool && p->inflight && p->block_run;
    for (int i = 0; ok && i < p->nstrips; i++) {
        p->strips[i].y0 = i * srows;
        p->strips[i].rows = i * srows + srows <= sc->height ? srows : sc->height - i * srows;
    }
    char why[256] = "";
    if (ok && ggo_direct_open_source(sc->src_name, sc->width, sc->height, sc->nbands,
                                     ggo_to_gdal_type(sc->src_t), &p->src_direct, why,
                                     sizeof why) &&
        sc->o->verbose)
        fprintf(stderr, "%s: %s: source read through GDAL (%s)\n", PROG, sc->src_name, why);
    if (ok)
        map_files(p);
    /* a mapped source needs no readers and no staging */
    for (int i = 0; ok && !p->src_mapped && i < nbuf; i++) {
        p->pool[i] = ggo_buffer_get(p->pin, row_bytes * (size_t)srows);
        ok = p->pool[i] != NULL;
        p->npool += ok;
    }
    p->started = 1;
    if (!ok) {
        pipe_fail(p, "out of memory for the read buffers");
        return 0;
    }
    p->have_tg = pthread_create(&p->tg, NULL, grid_thread, p) == 0;
    p->have_tw = pthread_create(&p->tw, NULL, writer, p) == 0;
    for (p->nr = 0; !p->src_mapped && p->nr < nreaders; p->nr++)
        if (pthread_create(&p->tr[p->nr], NULL, strip_reader, p) != 0)
            break;
    if (!p->have_tg || !p->have_tw || (p->nr == 0 && !p->src_mapped))
        pipe_fail(p, "cannot start the pipeline threads");
    return !p->error;
}

/* Stops and joins the host stages (after the device part, or instead of
 * it on a failure) and frees what resident_start made. */
static void resident_stop(pipe_t *p)
{
    if (!p->started)
        return;
    /* the grid thread and the writer wait for blocks that will not run */
    if (p->run_done < p->nblocks)
        pipe_fail(p, "stopped");
    pthread_mutex_lock(&p->mu);
    p->finished = 1;
    wake(p, WAKE_ALL);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nr; i++)
        pthread_join(p->tr[i], NULL);
    if (p->have_tg)
        pthread_join(p->tg, NULL);
    if (p->have_tw)
        pthread_join(p->tw, NULL);
    p->nr = p->have_tg = p->have_tw = 0;
    unmap_files(p);
    for (int i = 0; i < p->nstrips && p->strips; i++)
        if (p->strips[i].buf)
            p->pool[p->npool++] = p->strips[i].buf;
    for (int i = 0; i < p->npool; i++)
        ggo_buffer_put(p->pool[i]);
    free(p->strips);
    free(p->queue);
    free(p->ready);
    free(p->pool);
    free(p->inflight);
    free(p->block_run);
    p->inflight = NULL;
    p->block_run = NULL;
    p->strips = NULL;
    p->queue = p->ready = NULL;
    p->pool = NULL;
    p->npool = p->ninflight = 0;
    if (p->src_direct) {
        char err[64];
        ggo_direct_close(p->src_direct, err, sizeof err);
        p->src_direct = NULL;
    }
    p->started = 0;
}

/* The device part of the resident pipeline (p->sess holds the source):
 * every block, then the device goes to the next scene (device_done)
 * while the writer drains.  0 on error (p->msg says why). */
static int run_resident(pipe_t *p)
{
    for (int k = 0; k < p->nblocks && !p->error; k++) {
        /* the block's grid, and room in the output queue; meanwhile upload */
        const int prev = dev_enter(p, DEV_IDLE);
        dev_lock(p);
        for (;;) {
            upload_ready(p);
            if (p->error || (p->grid_done > k && k - p->write_done < p->qdepth))
                break;
            if (p->nready == 0 && !device_idle(p))
                pthread_cond_wait(&p->cv[WAKE_DEV], &p->mu);
        }
        pthread_mutex_unlock(&p->mu);
        dev_enter(p, prev);
        if (p->error)
            break;
        if (p->overlap) {
            if (!queue_block(p, k))
                break;
        } else {
            if (!run_block_resident(p, &p->blocks[k], 0))
                break;
            block_finished(p, k);
        }
    }
    while (p->nqueued > 0 && !p->error && complete_oldest(p))
        ;
    if (p->ninflight > 0 || p->nqueued > 0 || p->error) { /* a failure left copies in flight */
        (void)gg_ortho_session_flush(p->sess);
        pthread_mutex_lock(&p->mu);
        release_inflight(p);
        pthread_mutex_unlock(&p->mu);
    }
    dev_lock(p);
    p->finished = 1;
    wake(p, WAKE_ALL);
    pthread_mutex_unlock(&p->mu);
    if (p->device_done) /* no more uploads or kernels: the device can go */
        p->device_done(p);
    resident_stop(p);
    return !p->error;
}

/* ------------------------------------------------------------ one scene */

/* The device starts (on a GPU: driver, context, kernel modules, a good
 * part of a second) on its own thread while the first scene's GDAL setup
 * (RPCs, output grid, DEM, checks) runs; the scene waits for it only when
 * it needs it. */
typedef struct device_start {
    const char *device;
    pthread_t th;
    pthread_mutex_t mu; /* joined: the scenes of a batch wait for it at once */
    int joined;
    gg_status st;
    gg_context *ctx;
    /* GG_ORTHO_SLOTS=2 in a batch: ctx's sibling, for the odd scenes,
     * opened at the first device_slots (under mu) */
    gg_context *ctx2;
    int slots_wanted, sibling_tried;
    char err[512];
    double seconds;
} device_start;

/* Scenes at the device at once (GG_ORTHO_SLOTS, 1 or 2, default 2; the
 * CPU backend 1): with 2 the odd scenes run on a sibling context, with
 * queues of their own, so that a scene's session and first uploads go on
 * while the one before downloads its last blocks, and the host steps of
 * one scene's turn overlap the other's copies. */
static int slots_wanted(void)
{
    return ggo_env_int("GG_ORTHO_SLOTS", 2, 1, 2);
}

static void *device_start_main(void *arg)
{
    device_start *d = arg;
    ggo_name_thread("gg-dev-start");
    const double t0 = wall();
    d->st = gg_context_create(d->device, &d->ctx, d->err, sizeof d->err);
    d->seconds = wall() - t0;
    return NULL;
}

static void device_begin(device_start *d, const char *device)
{
    memset(d, 0, sizeof *d);
    d->device = device;
    pthread_mutex_init(&d->mu, NULL);
    if (pthread_create(&d->th, NULL, device_start_main, d) != 0) {
        device_start_main(d);
        d->joined = 1;
    }
}

/* The context, or NULL when the device could not start (d->err says why). */
static gg_context *device_wait(device_start *d)
{
    pthread_mutex_lock(&d->mu);
    if (!d->joined) {
        pthread_join(d->th, NULL);
        d->joined = 1;
    }
    pthread_mutex_unlock(&d->mu);
    return d->st == GG_OK ? d->ctx : NULL;
}

/* Scenes at the device at once: 2 with a sibling context (a batch, on a
 * GPU backend, slots_wanted 2; opened once, by the first scene to ask;
 * a caller's context keeps its sibling for the next calls), else 1. */
static int device_slots(device_start *d)
{
    gg_context *ctx = device_wait(d);
    if (!ctx)
        return 1;
    pthread_mutex_lock(&d->mu);
    if (!d->sibling_tried) {
        d->sibling_tried = 1;
        if (d->slots_wanted > 1 && strcmp(gg_context_backend(ctx), "cpu") &&
            gg_context_sibling(ctx, &d->ctx2) != GG_OK)
            d->ctx2 = NULL; /* one scene at a time, as before */
    }
    pthread_mutex_unlock(&d->mu);
    return d->ctx2 ? 2 : 1;
}

/* The context of the scene with turn number index. */
static gg_context *device_ctx(device_start *d, int index)
{
    return device_slots(d) > 1 && index % 2 ? d->ctx2 : device_wait(d);
}

/* The output under its temporary name, georeferenced, with nodata and the
 * source's colour interpretation; NULL on failure (run->last_error says why). */
static GDALDatasetH create_output(orun *run, scene *sc, GDALDriverH drv, const char *tmp, char **co)
{
    run->last_error[0] = 0;
    GDALDatasetH out = GDALCreate(drv, tmp, sc->out_w, sc->out_h, sc->nbands, sc->dst_gdt, co);
    if (!out)
        return NULL;
    GDALSetGeoTransform(out, (double *)sc->gt);
    char *wkt = NULL;
    OSRExportToWkt(sc->dst_srs, &wkt);
    GDALSetProjection(out, wkt);
    CPLFree(wkt);
    for (int k = 0; k < sc->nbands; k++) {
        GDALRasterBandH b = GDALGetRasterBand(out, k + 1);
        if (sc->has_dstnodata)
            GDALSetRasterNoDataValue(b, sc->dst_nd[k]);
        GDALSetRasterColorInterpretation(
            b, GDALGetRasterColorInterpretation(GDALGetRasterBand(sc->src, k + 1)));
    }
    /* per-band nodata values a format cannot keep: a GeoTIFF has one for
     * all bands, the last one set (its bands report their own until the
     * file is reopened); the pixels gdalwarp never warps get the file's
     * fill, that value */
    if (sc->has_dstnodata) {
        const int one = EQUAL(GDALGetDriverShortName(drv), "GTiff");
        double *fnd = malloc(sizeof(double) * (size_t)sc->nbands);
        for (int k = 0; fnd && k < sc->nbands; k++) {
            int has = 0;
            fnd[k] = one ? sc->dst_nd[sc->nbands - 1]
                         : GDALGetRasterNoDataValue(GDALGetRasterBand(out, k + 1), &has);
            if (!one && !has)
                fnd[k] = sc->dst_nd[k];
        }
        int bw = 0, bh = 0;
        GDALGetBlockSize(GDALGetRasterBand(out, 1), &bw, &bh);
        if (!fnd || ggo_set_file_nodata(sc, fnd, bw, bh)) {
            free(fnd);
            snprintf(run->last_error, sizeof run->last_error, "out of memory");
            GDALClose(out);
            return NULL;
        }
        free(fnd);
    }
    return out;
}

/* Threads of the direct writer: GG_ORTHO_WRITERS, else 0 (the writer
 * chooses from the file's layout: one unless it converts rows). */
static int writer_threads(void)
{
    return ggo_env_int("GG_ORTHO_WRITERS", 0, 0, 32);
}

/* The scene's output under a temporary name (*tmp): *out, a GDAL dataset,
 * or *direct, the direct writer's file.  0, else 1 with why_not set. */
static int create_output_file(orun *run, const options *o, scene *sc, GDALDriverH drv,
                              const char *dst_name, char **tmp, GDALDatasetH *out,
                              ggo_direct **direct, char *why_not, size_t len)
{
    /* Output: gg_app's safe path (temporary name in the destination's
     * folder, renamed when complete, removed on failure), but not gg_app's
     * writer: that one copies a GDAL dataset strip by strip, so it would
     * pull the orthoimage through GG:ortho:'s blocks one at a time and
     * lose this pipeline (several readers, a grid thread, uploads, kernels
     * and writes all overlapping), which is what makes gdal_ortho fast. */
    *tmp = gg_app_temporary_name(dst_name);
    /* Uncompressed striped GeoTIFF: GDAL creates the file and, closed
     * empty, allocates every strip; the writer then puts the pixels at the
     * strip offsets with pwrite (gg_ortho_direct.c), the same bytes as
     * GDAL's writer but several times faster.  Anything else: GDAL. */
    char why[256] = "";
    /* the writer needs every band's nodata to be 0 (or none) */
    double nd_any = sc->dstnodata;
    for (int k = 0; sc->has_dstnodata && k < sc->nbands; k++)
        if (sc->dst_nd[k] != 0.0)
            nd_any = sc->dst_nd[k];
    const int try_direct = ggo_direct_eligible(o->format, o->co, *tmp, sc->has_dstnodata, nd_any,
                                               why, sizeof why);
    *out = create_output(run, sc, drv, *tmp, o->co);
    if (!*out) {
        snprintf(why_not, len, "cannot create %.900s: %.1000s", dst_name, run->last_error);
        CPLFree(*tmp);
        *tmp = NULL;
        return 1;
    }
    if (try_direct) {
        run->last_error[0] = 0;
        GDALClose(*out);
        *out = NULL;
        if (run->last_error[0])
            snprintf(why, sizeof why, "closing the empty file: %.231s", /* the 255 chars of why */
                     run->last_error);
        else if (ggo_direct_open(*tmp, sc->out_w, sc->out_h, sc->nbands, sc->dst_gdt,
                                 writer_threads(), direct, why, sizeof why) == 0)
            why[0] = 0;
        if (!*direct) { /* a layout the direct writer does not handle: GDAL's */
            gg_app_discard_output(drv, *tmp);
            *out = create_output(run, sc, drv, *tmp, o->co);
            if (!*out) {
                snprintf(why_not, len, "cannot create %.900s: %.1000s", dst_name, run->last_error);
                return 1;
            }
        }
    }
    if (o->g.verbose)
        fprintf(stderr, "%s: %s: writer: %s (%s)\n", PROG, sc->src_name,
                *direct ? "direct" : "GDAL", *direct ? ggo_direct_describe(*direct) : why);
    return 0;
}

/* Returned by process_scene when the device cannot start: fatal; and by
 * the scenes after it, which then stop without a word. */
#define SCENE_NO_DEVICE 2
#define SCENE_STOPPED 3

/* ------------------------------------------------- scenes that overlap
 *
 * A scene's GDAL set-up (RPCs, gdalwarp's output grid, the DEM window, the
 * output file: 40 ms for an 8192^2 scene, a third of its time on an H200)
 * needs no device, so each scene of a batch runs on a thread of its own and
 * the next one sets up while the previous one's pipeline runs.  The device
 * part (context, session, pipeline) is taken in turn, in the scenes' order,
 * so one scene at a time has the device and the pipeline's buffers, and the
 * outputs are those of scenes run one after the other.  A scene's GDAL and
 * PROJ objects are made, used and closed by its own thread and its
 * pipeline's, as before; each scene keeps its own GDAL error state (an
 * orun of its own) so that one scene's failure is never taken for
 * another's. */

/* Turns at the device: scenes take them and pass them in order, at most
 * `slots` at once (device_slots).  A scene's output lines (its "src ->
 * dst", progress, errors) appear while it is the oldest in turn, so that
 * two scenes at the device print one after the other. */
typedef struct turns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;   /* the oldest scene not passed: the turns before it are */
    int taken;  /* the next scene to take a turn */
    int slots;  /* scenes in turn at once; 0 until the first take */
    int stop;   /* the device did not start: the scenes after it stop */
    int notice_done;  /* the device's notice printed (by the first scene in turn) */
} turns;

typedef struct scene_job {
    orun run;                /* the scene's GDAL errors; err: the call's buffer */
    const options *o;
    device_start *dev;
    turns *t;
    int index;               /* turn number */
    const char *src;
    char dst[4096];
    pthread_t th;
    int started, passed;
    /* its output while in turn (turns): "src -> dst" shown, the progress
     * reached (shown once the scene is the oldest in turn) */
    int shown;
    double frac; /* -1: no progress yet */
    int rc;
} scene_job;

/* Under t->mu, the scene the oldest in turn: its "src -> dst" line and its
 * progress so far, once. */
static void show_scene(scene_job *j)
{
    if (j->shown || j->t->next != j->index)
        return;
    j->shown = 1;
    if (j->o->g.quiet)
        return;
    if (j->o->outdir)
        fprintf(stderr, "%s -> %s\n", j->src, j->dst);
    if (j->frac >= 0)
        GDALTermProgress(0.0, NULL, NULL);
    if (j->frac > 0)
        GDALTermProgress(j->frac, NULL, NULL);
}

/* A scene's progress (0..1): printed while it is the oldest in turn, else
 * kept for when it is (GDALTermProgress prints the steps it missed). */
static void scene_progress(scene_job *j, double frac)
{
    if (!j || j->o->g.quiet)
        return;
    pthread_mutex_lock(&j->t->mu);
    j->frac = frac;
    if (j->shown)
        GDALTermProgress(frac, NULL, NULL);
    else
        show_scene(j);
    pthread_mutex_unlock(&j->t->mu);
}

/* Waits for the scene's turn at the device (after the scene before it has
 * taken its own, with fewer than slots scenes in turn); 0 when the scenes
 * stop.  oldest: also waits until the turns before it are passed (a scene
 * that only reports a failure, or prints -v lines). */
static int take_turn(scene_job *j, int slots, int oldest)
{
    turns *t = j->t;
    pthread_mutex_lock(&t->mu);
    if (!t->slots)
        t->slots = slots;
    while ((t->taken != j->index || j->index >= t->next + t->slots ||
            (oldest && t->next != j->index)) &&
           !t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    const int go = !t->stop;
    if (t->taken == j->index)
        t->taken = j->index + 1;
    if (go)
        show_scene(j);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return go;
}

/* Gives the device to the next scene (once), after the scenes before it
 * have (turns pass in order: the output lines stay in order, and a scene
 * of the same slot waits for the oldest anyway); stop: the scenes after
 * stop. */
static void pass_turn(scene_job *j, int stop)
{
    if (j->passed)
        return;
    j->passed = 1;
    turns *t = j->t;
    pthread_mutex_lock(&t->mu);
    if (stop)
        t->stop = 1;
    while (t->next != j->index && !t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->next == j->index) {
        if (!t->stop) /* a scene that ran while another was the oldest */
            show_scene(j);
        t->next = j->index + 1;
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* GG_ORTHO_DEVICE_NICE=n (experiments; -20..19, default: unchanged): the
 * scene thread runs its device turn at nice n, so that it does not queue
 * for a processor behind the bulk threads of this worker or of others (a
 * negative n needs CAP_SYS_NICE or RLIMIT_NICE; refused, the turn runs as
 * before).  on: enter the turn (keeps the old value); 0: back to it. */
static void device_nice(pipe_t *p, int on)
{
#ifdef __linux__
    const char *env = getenv("GG_ORTHO_DEVICE_NICE");
    if (!env || !*env)
        return;
    const id_t tid = (id_t)syscall(SYS_gettid);
    if (on) {
        errno = 0;
        const int was = getpriority(PRIO_PROCESS, tid);
        p->dev_nice_was = errno ? 0 : was;
        const int n = ggo_env_int("GG_ORTHO_DEVICE_NICE", 0, -20, 19);
        if (setpriority(PRIO_PROCESS, tid, n) != 0 && p->sc->o->verbose)
            fprintf(stderr, "%s: GG_ORTHO_DEVICE_NICE=%d refused: %s\n", PROG, n,
                    strerror(errno));
    } else
        (void)setpriority(PRIO_PROCESS, tid, p->dev_nice_was);
#else
    (void)p;
    (void)on;
#endif
}

/* The scene's device part is over (pipe_t.device_done): its session goes,
 * keeping its times, and the next scene takes the device while this one's
 * writer drains its last blocks. */
static void release_device(pipe_t *p)
{
    dev_lock(p);
    dev_enter(p, DEV_OTHER);
    p->dev_on = 0; /* the turn's split ends here */
    p->dev_cpu = ggo_thread_cpu() - p->dev_cpu;
    p->dev_delay = ggo_thread_run_delay() - p->dev_delay;
    device_nice(p, 0);
    p->left_at_release = p->nblocks - p->write_done;
    pthread_mutex_unlock(&p->mu);
    p->t_released = wall();
    if (p->sess) {
        gg_ortho_session_times(p->sess, &p->t_up, &p->t_kernel, &p->t_down, &p->t_px);
        gg_ortho_session_destroy(p->sess);
        p->sess = NULL;
    }
    pass_turn(p->job, 0);
}

/* The scene's blocks (rows from free device memory), the pipeline's
 * state and, for a resident source, its host stages, started at once
 * (resident_start).  0, else 1 with why set. */
static int plan_scene(pipe_t *p, scene *sc, gg_context *ctx, const options *o, scene_job *job,
                      GDALDatasetH out, char *why, size_t len)
{
    const double src_per_dst =
        fmax(1.0, (double)sc->width * sc->height / ((double)sc->out_w * sc->out_h)) * 2.0;
    int rows = 0;
    if (gg_plan_rows(ctx, sc->out_w, sc->out_h,
                     gg_ortho_bytes_per_pixel(sc->src_t, sc->dst_t, src_per_dst) * sc->nbands, 0,
                     &rows) != GG_OK) {
        snprintf(why, len, "%s", gg_context_last_error(ctx));
        return 1;
    }
    /* the resident source: at least 32 blocks, so that reading,
     * running and writing overlap finely */
    p->resident = resident_source(sc, ctx);
    const int cap = (sc->out_h + (p->resident ? 31 : 7)) / (p->resident ? 32 : 8);
    rows = rows < cap ? rows : cap;
    rows = rows < 16 ? (sc->out_h < 16 ? sc->out_h : 16) : rows;
    const long host_cap = (256L << 20) / ((long)sc->out_w * 8 * sc->nbands);
    if (host_cap >= 16 && rows > host_cap)
        rows = (int)host_cap;
    /* whole grid steps: the grid nodes are then the same output pixels
     * whatever the block height, so the result does not depend on the
     * device memory or the pipeline */
    rows = rows < sc->step ? sc->step : rows / sc->step * sc->step;
    if (getenv("GG_ORTHO_BLOCK_ROWS") && atoi(getenv("GG_ORTHO_BLOCK_ROWS")) > 0)
        rows = atoi(getenv("GG_ORTHO_BLOCK_ROWS")); /* tests */
    rows = rows > sc->out_h ? sc->out_h : rows;
    p->rows = rows;
    p->nblocks = (sc->out_h + rows - 1) / rows;
    p->dst_bytes = (size_t)sc->out_w * (size_t)rows * gg_type_size(sc->dst_t) * (size_t)sc->nbands;
    p->sc = sc;
    p->run = &job->run;
    p->ctx = ctx;
    /* one pool of page-locked buffers for both slots (portable) */
    p->pin = o->pinned ? device_wait(job->dev) : NULL;
    p->wds = out;
    p->lon_ref = sc->rpc.long_off;
    p->job = job;
    p->device_done = release_device;
    p->left_at_release = -1;
    if (getenv("GG_ORTHO_WRITE_DELAY_MS"))
        p->write_delay_us = 1000L * atoi(getenv("GG_ORTHO_WRITE_DELAY_MS"));
    p->blocks = calloc((size_t)p->nblocks, sizeof(block));
    if (!p->blocks) {
        snprintf(why, len, "out of memory");
        return 1;
    }
    pthread_mutex_init(&p->mu, NULL);
    for (int r = 0; r < WAKE_ROLES; r++)
        pthread_cond_init(&p->cv[r], NULL);
    for (int k = 0; k < p->nblocks; k++) {
        p->blocks[k].y0 = k * p->rows;
        p->blocks[k].rows =
            k * p->rows + p->rows <= sc->out_h ? p->rows : sc->out_h - k * p->rows;
    }
    p->qdepth = QDEPTH;
    if (p->resident && p->dst_bytes > 0) {
        const size_t q = queue_bytes() / p->dst_bytes;
        if (q > (size_t)p->qdepth)
            p->qdepth = q < (size_t)p->nblocks ? (int)q : p->nblocks;
    }
    if (p->resident && !resident_start(p)) {
        snprintf(why, len, "%s", p->msg);
        return 1;
    }
    return 0;
}

/* The pipeline's blocks and state, on a failure before it ran or after. */
static void unplan_scene(pipe_t *p)
{
    if (!p->blocks)
        return;
    resident_stop(p);
    for (int k = 0; k < p->nblocks; k++) {
        free(p->blocks[k].nodes);
        free(p->blocks[k].src);
        ggo_buffer_put(p->blocks[k].dst);
    }
    free(p->blocks);
    p->blocks = NULL;
    pthread_mutex_destroy(&p->mu);
    for (int r = 0; r < WAKE_ROLES; r++)
        pthread_cond_destroy(&p->cv[r]);
}

static int process_scene(scene_job *job)
{
    orun *run = &job->run;
    const options *o = job->o;
    device_start *dev = job->dev;
    const char *src_name = job->src, *dst_name = job->dst;
    gg_context *ctx = NULL;
    const double t_start = wall();
    double c_role = ggo_thread_cpu();
    ggo_cpu_role role = GGO_CPU_SETUP;
    scene sc;
    memset(&sc, 0, sizeof sc);
    int rc = 1;
    char *tmp = NULL;
    GDALDatasetH out = NULL, rds = NULL;
    GDALDriverH drv = NULL;
    gg_ortho_session *sess = NULL;
    pipe_t p;
    memset(&p, 0, sizeof p);
    /* before the device's turn: GDAL only; a failure is reported in turn */
    char why_not[2048] = "";
    const int opened = ggo_scene_open(&sc, &o->g, src_name) == 0;
    if (!opened)
        snprintf(why_not, sizeof why_not, "%s", sc.err);
    sc.dst_name = dst_name;
    const double t_setup = wall() - t_start;
    double t_create_s = 0, t_ready = 0, t_pipe_end = 0, t_sess_s = 0;
    if (opened) {
        /* output, under a temporary name */
        drv = GDALGetDriverByName(o->format ? o->format : "GTiff");
        if (!drv || !GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL)) {
            snprintf(why_not, sizeof why_not, "format %s cannot be created",
                     o->format ? o->format : "GTiff");
            drv = NULL;
        } else {
            const double t_create = wall();
            create_output_file(run, o, &sc, drv, dst_name, &tmp, &out, &p.direct, why_not,
                               sizeof why_not);
            t_create_s = wall() - t_create;
        }
    }
    t_ready = wall(); /* set-up and output file done: ready for the device */
    /* the blocks, and the pipeline's host stages (grids, first strips)
     * started before the turn; the first scene waits here for the device
     * to start, as it would in its turn */
    const double t_dev0 = wall();
    if (!why_not[0] && (ctx = device_ctx(dev, job->index)) != NULL)
        plan_scene(&p, &sc, ctx, o, job, out, why_not, sizeof why_not);
    const double t_dev_wait = why_not[0] ? 0.0 : wall() - t_dev0; /* device start + planning */
    if (!take_turn(job, device_slots(dev), why_not[0] || o->g.verbose)) {
        rc = SCENE_STOPPED;
        goto done;
    }
    const double t_turn = wall();
    ggo_cpu_add(role, c_role);
    c_role = ggo_thread_cpu();
    role = GGO_CPU_TURN;
    if (why_not[0]) {
        fail(run, src_name, "%s", why_not);
        goto done;
    }
    {
        ctx = device_ctx(dev, job->index); /* at once: waited for before the turn */
        if (getenv("GG_ORTHO_TIMING"))
            fprintf(stderr,
                    "%s: timing: process start to the scene %.3f s; GDAL setup (RPCs, output "
                    "grid, DEM, checks) %.3f s, creating the output %.3f s (%s writer), both "
                    "before the device's turn; device start %.3f s on its own thread, waited "
                    "%.3f s (with the planning of the blocks)\n",
                    PROG, t_start - run->t_main, t_setup, t_create_s,
                    p.direct ? "direct" : "GDAL", dev->seconds, t_dev_wait);
        if (!ctx) {
            rc = SCENE_NO_DEVICE;
            goto done;
        }
        if (!__atomic_exchange_n(&job->t->notice_done, 1, __ATOMIC_ACQ_REL))
            /* the device's notice, once (by the first scene in turn) */
            gg_app_notice(PROG, o->g.quiet, gg_context_notice(device_wait(dev)));
    }
    if (o->g.verbose) {
        int bx = 0, by = 0;
        double occ = 0;
        gg_ortho_launch_info(ctx, &bx, &by, &occ);
        fprintf(stderr,
                "%s: %s: output %d x %d, grid step %d, device %s, work group %d x %d "
                "(occupancy %.2f)\n",
                PROG, src_name, sc.out_w, sc.out_h, sc.step, gg_context_device_name(ctx), bx, by,
                occ);
    }

    const double t_sess0 = wall();
    if (ggo_session_create(&sc, ctx, &sess)) {
        fail(run, src_name, "%s", sc.err);
        goto done;
    }
    t_sess_s = wall() - t_sess0;
    p.dev_on = 1; /* the device thread's split, from here to the release */
    p.dev_cpu = ggo_thread_cpu();
    p.dev_delay = ggo_thread_run_delay();
    device_nice(&p, 1);
    p.dev_t0 = wall();
    p.dev_phase = DEV_OTHER;

    p.sess = sess;
    const int prev_phase = dev_enter(&p, DEV_SOURCE);
    const int source_refused =
        p.resident &&
        gg_ortho_session_set_source(sess, sc.src_t, sc.width, sc.height, sc.nbands) != GG_OK;
    dev_enter(&p, prev_phase);
    if (source_refused) {
        /* refused after all: the windowed pipeline, from the start */
        resident_stop(&p);
        for (int k = 0; k < p.nblocks; k++) {
            free(p.blocks[k].nodes);
            p.blocks[k].nodes = NULL;
        }
        p.resident = p.error = p.finished = 0;
        p.grid_done = p.run_done = p.write_done = 0;
        p.qdepth = QDEPTH;
        p.msg[0] = 0;
    }
    if (!p.resident) {
        rds = GDALOpen(src_name, GA_ReadOnly);
        p.rds = rds ? rds : sc.src;
    }
    if (o->g.verbose)
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source %s, up to %d blocks queued for "
                "the writer\n", PROG, src_name, p.nblocks, p.rows,
                p.resident ? "resident on the device" : "read per block window", p.qdepth);
    scene_progress(job, 0.0);
    const double t_pipe = wall();
    if (p.resident)
        run_resident(&p);
    else
        run_windowed(&p);
    t_pipe_end = wall();
    device_nice(&p, 0); /* released already, or the windowed pipeline */
    if (!p.sess) /* released by the pipeline (release_device) */
        sess = NULL;
    if (getenv("GG_ORTHO_TIMING")) {
        double up = p.t_up, ke = p.t_kernel, dn = p.t_down;
        long long px = p.t_px;
        if (sess)
            gg_ortho_session_times(sess, &up, &ke, &dn, &px);
        fprintf(stderr,
                "%s: timing: %d blocks, upload %.3f s, kernel %.4f s (%.2f Gpix/s), "
                "download %.3f s, %lld pixels x %d bands\n",
                PROG, p.nblocks, up, ke, ke > 0 ? px / ke / 1e9 : 0.0, dn, px / sc.nbands,
                sc.nbands);
        if (p.resident)
            fprintf(stderr,
                    "%s: timing: resident source, %d strips of %d rows; files mapped "
                    "%.4f s, unmapped %.4f s; grid thread %.3f s, "
                    "readers %.3f s (summed), device thread from its session to its release: "
                    "uploads %.4f s, idle %.4f s, queueing blocks %.4f s, waiting for copies "
                    "%.4f s, locks %.4f s, the source's device memory %.4f s, output buffers "
                    "%.4f s, other %.4f s (its processor %.4f s, waiting for a processor "
                    "%.4f s); "
                    "writer %.3f s; pipeline wall %.3f s; device handed on with %d of %d "
                    "blocks to write (queue %d)\n",
                    PROG, p.nstrips, p.strip_rows, p.t_map, p.t_unmap, p.t_grid, p.t_readers,
                    p.dev_acc[DEV_UPLOAD], p.dev_acc[DEV_IDLE], p.dev_acc[DEV_QUEUE],
                    p.dev_acc[DEV_SYNC], p.dev_acc[DEV_LOCK], p.dev_acc[DEV_SOURCE],
                    p.dev_acc[DEV_BUFFER], p.dev_acc[DEV_OTHER], p.dev_on ? 0.0 : p.dev_cpu,
                    p.dev_on ? 0.0 : p.dev_delay,
                    p.t_write, wall() - t_pipe, p.left_at_release, p.nblocks, p.qdepth);
        else
            fprintf(stderr,
                    "%s: timing: host grid+windows %.3f s, GDAL reads %.3f s, GDAL writes %.3f s; "
                    "pipeline wall %.3f s\n",
                    PROG, p.t_grid, p.t_read, p.t_write, wall() - t_pipe);
    }
    const int pipe_failed = p.error;
    unplan_scene(&p);
    /* the device is free: the next scene's pipeline starts while this one
     * closes its output */
    gg_ortho_session_destroy(sess);
    sess = NULL;
    pass_turn(job, 0);
    ggo_cpu_add(role, c_role);
    c_role = ggo_thread_cpu();
    role = GGO_CPU_CLOSE;
    if (pipe_failed) {
        fail(run, src_name, "%s", p.msg);
        goto done;
    }
    {
        const double t0 = wall();
        run->last_error[0] = 0;
        if (p.direct) {
            char err[256];
            if (ggo_direct_close(p.direct, err, sizeof err))
                snprintf(run->last_error, sizeof run->last_error, "%s", err);
            p.direct = NULL;
        } else {
            GDALClose(out);
            out = NULL;
        }
        if (getenv("GG_ORTHO_TIMING"))
            fprintf(stderr, "%s: timing: closing the output %.3f s\n", PROG, wall() - t0);
    }
    if (run->last_error[0]) {
        fail(run, src_name, "writing %s failed: %s", dst_name, run->last_error);
        goto done;
    }
    /* replace the destination only now (gg_app's one output path) */
    {
        const double t0 = wall();
        if (gg_app_commit_output(PROG, drv, tmp, dst_name)) {
            /* gg_app printed its line; a caller's buffer gets one too */
            if (run->err)
                fail(run, src_name, "cannot move %s into place (see stderr)", dst_name);
            goto done;
        }
        if (getenv("GG_ORTHO_TIMING")) {
            const double now = wall();
            fprintf(stderr, "%s: timing: renaming into place %.3f s; scene %.3f s from its "
                    "turn at the device (%.3f s with the set-up and the wait), %.3f s since the "
                    "process started\n", PROG, now - t0, now - t_turn, now - t_start,
                    now - run->t_main);
            /* one line a scene, seconds since the call started: where a
             * batch's scenes wait for each other (bench/ortho_timeline.py) */
            const double released = p.t_released > 0 ? p.t_released : t_pipe_end;
            fprintf(stderr, "%s: timeline: pid %ld scene %d start %.4f set up %.4f turn %.4f "
                    "device done %.4f written %.4f renamed %.4f; session %.4f\n", PROG,
                    (long)getpid(), job->index, t_start - run->t_main, t_ready - run->t_main,
                    t_turn - run->t_main, released - run->t_main, t_pipe_end - run->t_main,
                    now - run->t_main, t_sess_s);
        }
    }
    CPLFree(tmp);
    tmp = NULL;
    rc = 0;
done:
    if (out)
        GDALClose(out);
    if (p.direct) {
        char err[256];
        ggo_direct_close(p.direct, err, sizeof err);
    }
    if (tmp) {
        gg_app_discard_output(drv, tmp);
        CPLFree(tmp);
    }
    unplan_scene(&p); /* stops a pipeline started before a failure */
    gg_ortho_session_destroy(sess);
    pass_turn(job, rc == SCENE_NO_DEVICE);
    if (rds)
        GDALClose(rds);
    ggo_scene_close(&sc);
    ggo_cpu_add(role, c_role);
    return rc;
}

static void *scene_main(void *arg)
{
    scene_job *j = arg;
    ggo_name_thread("gg-scene");
    CPLPushErrorHandlerEx(keep_error, &j->run);
    j->rc = process_scene(j);
    CPLPopErrorHandler();
    return NULL;
}

/* Scenes in flight at once: the one on the device and the next ones
 * setting up (GG_ORTHO_AHEAD, default 3; 0: one after the other).  One
 * set-up (mostly gdalwarp's output grid, on one thread: 25-30 ms) takes
 * longer than a scene's turn at the device (12-14 ms on an H200 with the
 * queued blocks), so with one ahead the device waits for it: two made a
 * Dask worker 16-20 % faster (session 22), three another 13 % (112 scenes
 * 2.25 -> 1.96 s; 4 GPUs 0.88 / 0.90 s; bench/RESULTS.md, session 24).  Set-ups
 * run side by side on their own GDAL handles, transformers and PROJ
 * contexts (ThreadSanitizer: no race in five batches at 2 and 3 ahead,
 * session 22; the one report of session 16 was not seen again). */
static int scenes_ahead(void)
{
    return ggo_env_int("GG_ORTHO_AHEAD", 3, 0, 8);
}

/* Waits for a scene's thread and counts its result. */
static void join_scene(scene_job *j, int *failed, int *no_device)
{
    if (j->started)
        pthread_join(j->th, NULL);
    j->started = 0;
    if (j->rc == SCENE_NO_DEVICE)
        *no_device = 1;
    else if (j->rc == 1)
        (*failed)++;
    pthread_mutex_destroy(&j->run.mu);
}

/* ------------------------------------------------------- the command line */

/* GG_ORTHO_TIMING: the call's processor seconds by role (ggo_cpu_role) and
 * the whole process's over the same time; the rest is this process's
 * other threads (the device's runtime, a Dask worker's own). */
static void print_processors(const double *cpu0, double proc0, double secs, int nscenes,
                             const long *bufs0)
{
    static const char *names[GGO_CPU_ROLES] = {"set-up",    "set-up helpers", "grids",
                                               "readers",   "writer",         "turn",
                                               "closing"};
    double now[GGO_CPU_ROLES], sum = 0;
    ggo_cpu_read(now);
    char line[512];
    int n = 0;
    for (int i = 0; i < GGO_CPU_ROLES; i++) {
        sum += now[i] - cpu0[i];
        n += snprintf(line + n, sizeof line - (size_t)n, "%s %.3f s, ", names[i],
                      now[i] - cpu0[i]);
    }
    const double proc = ggo_process_cpu() - proc0;
    long bufs[2];
    ggo_buffers_counts(&bufs[0], &bufs[1]);
    fprintf(stderr, "%s: processors: pid %ld, %d scenes, %sother threads %.3f s; process %.3f s "
            "over %.3f s wall; host buffers allocated %ld, freed %ld\n", PROG, (long)getpid(),
            nscenes, line, proc - sum, proc, secs, bufs[0] - bufs0[0], bufs[1] - bufs0[1]);
}

/* gdal_ortho's main, on the call's state; given: the caller's context. */
static int run_command_line(orun *run, int argc, char **caller_argv, gg_context *given)
{
    char **argv = caller_argv;
    /* the device starts first, in parallel with everything else (-device
     * is looked up in the raw arguments; a bad value is reported later) */
    const char *early_device = NULL;
    int want_device = 1;
    for (int i = 1; i < argc; i++) {
        if (EQUAL(argv[i], "-device") && i + 1 < argc)
            early_device = argv[i + 1];
        else if (EQUAL(argv[i], "--help") || EQUAL(argv[i], "-h") ||
                 EQUAL(argv[i], "--version"))
            want_device = 0;
    }
    device_start dev;
    memset(&dev, 0, sizeof dev);
    pthread_mutex_init(&dev.mu, NULL);
    dev.joined = 1;
    dev.st = GG_ERR_UNAVAILABLE;
    if (given) { /* the caller's context: nothing to start, nothing to destroy */
        dev.st = GG_OK;
        dev.ctx = given;
    }
    if (gg_app_parse_only)
        want_device = 0;
    if (want_device && !given)
        device_begin(&dev, early_device);
    GDALAllRegister();
    argc = GDALGeneralCmdLineProcessor(argc, &argv, 0);
    if (argc < 1) { /* handled (--formats...) or failed; argv is still the caller's */
        if (want_device && !given && device_wait(&dev))
            gg_context_destroy(dev.ctx);
        return 1;
    }
    options o;
    memset(&o, 0, sizeof o);
    ggo_options_default(&o.g);
    char **pos = NULL;
    int rc = 1;
    GIntBig cache_before = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        if (EQUAL(a, "--help") || EQUAL(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto end;
        } else if (EQUAL(a, "--version")) {
            printf("%s (geogpu %s, %s)\n", PROG, gg_version(), GDALVersionInfo("--version"));
            rc = 0;
            goto end;
        } else if (EQUAL(a, "-dem") && need(run, argc, argv, i, 1))
            o.g.dem = argv[++i];
        else if (EQUAL(a, "-dem_srs") && need(run, argc, argv, i, 1))
            o.g.dem_srs = argv[++i];
        else if (EQUAL(a, "-t_srs") && need(run, argc, argv, i, 1))
            o.g.t_srs = argv[++i];
        else if (EQUAL(a, "-of") && need(run, argc, argv, i, 1))
            o.format = argv[++i];
        else if (EQUAL(a, "-ot") && need(run, argc, argv, i, 1))
            o.g.ot = argv[++i];
        else if (EQUAL(a, "-outdir") && need(run, argc, argv, i, 1))
            o.outdir = argv[++i];
        else if (EQUAL(a, "-device") && need(run, argc, argv, i, 1))
            o.device = argv[++i];
        else if (EQUAL(a, "-co") && need(run, argc, argv, i, 1))
            o.co = CSLAddString(o.co, argv[++i]);
        else if ((EQUAL(a, "-dem_interp") || EQUAL(a, "-r")) && need(run, argc, argv, i, 1)) {
            if (!ggo_parse_method(argv[++i], EQUAL(a, "-r") ? &o.g.resampling : &o.g.dem_interp)) {
                fail(run, NULL, "%s %s: use near, bilinear or cubic", a, argv[i]);
                goto end;
            }
        } else if (EQUAL(a, "-dem_missing") && need(run, argc, argv, i, 1)) {
            if (!number(run, a, argv[++i], &o.g.dem_missing))
                goto end;
            o.g.has_dem_missing = 1;
        } else if (EQUAL(a, "-rpc_height") && need(run, argc, argv, i, 1)) {
            if (!number(run, a, argv[++i], &o.g.rpc_height))
                goto end;
        } else if ((EQUAL(a, "-srcnodata") || EQUAL(a, "-dstnodata")) &&
                   need(run, argc, argv, i, 1)) {
            /* one value, or one per band in one argument ("1 2 3"), as
             * gdalwarp */
            char msg[512];
            if (ggo_set_nodata(&o.g, EQUAL(a, "-srcnodata"), argv[++i], msg, sizeof msg)) {
                fail(run, NULL, "%s", msg);
                goto end;
            }
        } else if (EQUAL(a, "-grid_step") && need(run, argc, argv, i, 1)) {
            if (!number(run, a, argv[++i], &v) || v < 1 || v > 1024) {
                fail(run, NULL, "-grid_step: 1 to 1024");
                goto end;
            }
            o.g.step = (int)v;
        } else if (EQUAL(a, "-tr") && need(run, argc, argv, i, 2)) {
            if (!number(run, a, argv[i + 1], &o.g.tr[0]) ||
                !number(run, a, argv[i + 2], &o.g.tr[1]))
                goto end;
            i += 2;
            if (!(o.g.tr[0] > 0) || o.g.tr[1] == 0) {
                fail(run, NULL, "-tr: resolutions must be positive");
                goto end;
            }
            o.g.has_tr = 1;
        } else if (EQUAL(a, "-ts") && need(run, argc, argv, i, 2)) {
            double tw, th;
            if (!number(run, "-ts", argv[i + 1], &tw) || !number(run, "-ts", argv[i + 2], &th))
                goto end;
            i += 2;
            if (!(tw >= 1 && th >= 1 && tw <= INT_MAX && th <= INT_MAX && tw == floor(tw) &&
                  th == floor(th))) {
                fail(run, NULL, "-ts: width and height must be positive whole numbers");
                goto end;
            }
            o.g.ts[0] = (int)tw;
            o.g.ts[1] = (int)th;
            o.g.has_ts = 1;
        } else if (EQUAL(a, "-te") && need(run, argc, argv, i, 4)) {
            for (int k = 0; k < 4; k++)
                if (!number(run, a, argv[i + 1 + k], &o.g.te[k]))
                    goto end;
            i += 4;
            if (!(o.g.te[2] > o.g.te[0] && o.g.te[3] > o.g.te[1])) {
                fail(run, NULL, "-te: xmin < xmax and ymin < ymax are needed");
                goto end;
            }
            o.g.has_te = 1;
        } else if (EQUAL(a, "-q") || EQUAL(a, "-quiet"))
            o.g.quiet = 1;
        else if (EQUAL(a, "-v"))
            o.g.verbose = 1;
        else if (a[0] == '-' && a[1] && i + 1 <= argc && !strchr("0123456789.", a[1])) {
            if (i < argc && (EQUAL(a, "-dem") || EQUAL(a, "-t_srs") || EQUAL(a, "-tr") ||
                             EQUAL(a, "-te") || EQUAL(a, "-ts") || EQUAL(a, "-r") ||
                             EQUAL(a, "-of") || EQUAL(a, "-ot") || EQUAL(a, "-co") ||
                             EQUAL(a, "-outdir") || EQUAL(a, "-device") ||
                             EQUAL(a, "-dem_srs") || EQUAL(a, "-dem_interp") ||
                             EQUAL(a, "-dem_missing") || EQUAL(a, "-rpc_height") ||
                             EQUAL(a, "-srcnodata") || EQUAL(a, "-dstnodata") ||
                             EQUAL(a, "-grid_step")))
                goto end; /* need() reported it */
            fail(run, NULL, "unknown option %s (see --help)", a);
            goto end;
        } else
            pos = CSLAddString(pos, a);
    }
    if (o.g.has_tr && o.g.has_ts) {
        fail(run, NULL, "-tr and -ts cannot be used together");
        goto end;
    }
    const int npos = CSLCount(pos);
    if (o.outdir ? npos < 1 : npos != 2) {
        if (!run->err) /* a caller with its own error buffer gets the one line */
            usage(stderr);
        fail(run, NULL, o.outdir ? "no source given" : "a source and a destination are needed "
                                                  "(several sources: -outdir)");
        goto end;
    }
    if (o.outdir) {
        VSIStatBufL st;
        if (VSIStatL(o.outdir, &st) != 0 || !VSI_ISDIR(st.st_mode)) {
            fail(run, NULL, "-outdir %s is not a folder", o.outdir);
            goto end;
        }
        /* two sources of one name would write one output (and one
         * temporary name, set up side by side): refused before any runs */
        char **names = calloc((size_t)npos, sizeof *names);
        int dup = names ? -1 : -2, first = -1;
        for (int i = 0; names && i < npos && dup == -1; i++) {
            names[i] = CPLStrdup(CPLGetBasename(pos[i]));
            for (int k = 0; k < i && dup == -1; k++)
                if (!strcmp(names[k], names[i]))
                    dup = i, first = k;
        }
        for (int i = 0; names && i < npos; i++)
            CPLFree(names[i]);
        free(names);
        if (dup == -2) {
            fail(run, NULL, "out of memory");
            goto end;
        }
        if (dup >= 0) {
            fail(run, NULL, "%s and %s would both be written to %s (-outdir names each output "
                 "after its source)", pos[first], pos[dup],
                 CPLFormFilename(o.outdir, CPLGetBasename(pos[dup]), "tif"));
            goto end;
        }
    }
    if (gg_app_parse_only) {
        rc = 0;
        goto end;
    }
    /* GDAL's block cache defaults to 5 % of the RAM: the whole output
     * would sit in it and be written by GDALClose at the end, on one
     * thread, after the pipeline.  A small cache makes the writer thread
     * write as it goes (and bounds host memory). */
    if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL)) {
        cache_before = GDALGetCacheMax64(); /* put back on return: the process goes on */
        GDALSetCacheMax64((GIntBig)256 << 20);
    }
    CPLPushErrorHandlerEx(keep_error, run);
    if (!given &&
        (!want_device || (o.device ? !dev.device || strcmp(o.device, dev.device) : !!dev.device))) {
        /* the early look-up missed (e.g. -device from an @argfile) */
        if (device_wait(&dev))
            gg_context_destroy(dev.ctx);
        device_begin(&dev, o.device);
        want_device = 1;
    }
    int failed = 0, stopped = 0;
    const int nsrc = o.outdir ? npos : 1;
    dev.slots_wanted = nsrc > 1 ? slots_wanted() : 1; /* read by the scenes (device_slots) */
    const int ahead = scenes_ahead(), draining = draining_max();
    double cpu0[GGO_CPU_ROLES];
    ggo_cpu_read(cpu0);
    const double proc0 = ggo_process_cpu(), wall0 = wall();
    long bufs0[2];
    ggo_buffers_counts(&bufs0[0], &bufs0[1]);
    /* page-locked pipeline buffers (GG_ORTHO_PINNED=0: pageable): with
     * pageable ones the CUDA backend stages every copy, and a scene's turn
     * at an H200 took 30-31 ms against 20 ms (112 scenes of 8192^2 in one
     * process: 3.9-4.2 s against 3.1-3.2 s; one scene no slower;
     * bench/RESULTS.md, sessions 22 and 23) */
    const char *pinned = getenv("GG_ORTHO_PINNED");
    o.pinned = pinned && *pinned ? atoi(pinned) != 0 : 1;
    ggo_buffers_keep(keep_bytes());
    turns t;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    scene_job *jobs = calloc((size_t)nsrc, sizeof *jobs);
    int started = 0, joined = 0;
    if (!jobs) {
        fail(run, NULL, "out of memory");
        failed = nsrc;
    }
    for (int i = 0; jobs && i < nsrc && !stopped; i++) {
        scene_job *j = &jobs[started];
        if (o.outdir)
            snprintf(j->dst, sizeof j->dst, "%s",
                     CPLFormFilename(o.outdir, CPLGetBasename(pos[i]), "tif"));
        else
            snprintf(j->dst, sizeof j->dst, "%s", pos[1]);
        VSIStatBufL a, b;
        if (VSIStatL(pos[i], &a) == 0 && VSIStatL(j->dst, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            fail(run, pos[i], "the destination is the source itself");
            failed++;
            continue;
        }
        /* at most `ahead` scenes setting up beside the one that has the
         * device or waits for it (the turns before t.next are passed), and
         * draining_max() more whose writers drain; ahead 0: one at a time */
        pthread_mutex_lock(&t.mu);
        while (ahead > 0 && started - t.next > ahead + (t.slots > 1 ? t.slots - 1 : 0) &&
               !t.stop)
            pthread_cond_wait(&t.cv, &t.mu);
        pthread_mutex_unlock(&t.mu);
        while (joined < started - (ahead > 0 ? ahead + draining : 0))
            join_scene(&jobs[joined++], &failed, &stopped);
        if (stopped)
            break;
        pthread_mutex_init(&j->run.mu, NULL);
        j->run.err = run->err;
        j->run.errlen = run->errlen;
        j->run.t_main = run->t_main;
        j->o = &o;
        j->dev = &dev;
        j->t = &t;
        j->index = started;
        j->frac = -1;
        j->src = pos[i];
        started++;
        j->started = pthread_create(&j->th, NULL, scene_main, j) == 0;
        if (!j->started) /* no thread: this one here, the next after it */
            scene_main(j);
    }
    while (joined < started)
        join_scene(&jobs[joined++], &failed, &stopped);
    free(jobs);
    if (getenv("GG_ORTHO_TIMING"))
        print_processors(cpu0, proc0, wall() - wall0, started, bufs0);
    pthread_mutex_destroy(&t.mu);
    pthread_cond_destroy(&t.cv);
    CPLPopErrorHandler();
    const int no_device = !device_wait(&dev);
    if (no_device)
        fail(run, NULL, "device: %s", dev.err);
    else if (nsrc > 1 && failed)
        fprintf(stderr, "%s: %d of %d scenes failed\n", PROG, failed, nsrc);
    rc = failed || no_device ? 1 : 0;
end:
    /* the buffers page-locked through our own context go before it; a
     * caller's context runs again: its buffers are kept */
    if (!given)
        ggo_buffers_release(want_device ? device_wait(&dev) : NULL);
    if (want_device && !given && device_wait(&dev))
        gg_context_destroy(dev.ctx);
    if (cache_before >= 0)
        GDALSetCacheMax64(cache_before);
    CSLDestroy(pos);
    CSLDestroy(o.co);
    CSLDestroy(argv);
    return rc;
}

/* ------------------------------------------------------------ the entry point */

int gg_ortho_run(int argc, char **argv, gg_context *ctx, char *err, size_t errlen)
{
    orun run;
    memset(&run, 0, sizeof run);
    pthread_mutex_init(&run.mu, NULL);
    run.t_main = wall();
    if (err && errlen) {
        err[0] = 0;
        run.err = err;
        run.errlen = errlen;
    }
    const int rc = argc < 1 || !argv ? 1 : run_command_line(&run, argc, argv, ctx);
    pthread_mutex_destroy(&run.mu);
    return rc;
}

void gg_ortho_run_release(void)
{
    ggo_buffers_release_all();
}
