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
#include "gg_ortho_options.h"
#include "gg_app.h" /* gg_app_parse_only (tests/fuzz), gg_app_notice */
#include "gg_input_files.h"
#include "gg_output.h"
#include "gpu/pipeline.h"
#include "gpu/fault.h"

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
#include <sys/stat.h>
#include <unistd.h>

#define PROG "gdal_ortho"

/* ------------------------------------------------------------ options */

typedef struct options {
    ggo_options g;     /* what the scene needs (shared with GG:ortho:) */
    const char *format, *outdir, *device;
    char **co;
} options;

/* One call's state.  GDAL errors reach keep_error through the error
 * handler every thread of the call pushes with the orun as its user data
 * (CPLPushErrorHandlerEx), so two calls in one process keep their own. */
typedef struct orun {
    pthread_mutex_t mu;     /* last_error: written by any of the call's threads */
    char last_error[2048];  /* the first GDAL failure message since cleared */
    char *err;              /* the caller's buffer for the first error line, or NULL */
    size_t errlen;
    const char *prog;       /* the program its error lines name (gdal_warp -rpc runs here) */
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
                snprintf(run->err, run->errlen, "ERROR 1: %s: %s: %s", run->prog, scene, msg);
            else
                snprintf(run->err, run->errlen, "ERROR 1: %s: %s", run->prog, msg);
        }
    } else {
        if (scene)
            fprintf(stderr, "ERROR 1: %s: %s: %s\n", run->prog, scene, msg);
        else
            fprintf(stderr, "ERROR 1: %s: %s\n", run->prog, msg);
        fflush(stderr);
    }
    pthread_mutex_unlock(&fail_mu);
    return 1;
}

/* ------------------------------------------------------------ the scene */

typedef ggo_scene scene;
typedef ggo_block block;

/* ------------------------------------------------- the 3-stage pipeline */

/* Blocks in flight in the windowed pipeline (run_windowed); the
 * resident-source pipeline below replaces it whenever the image fits. */
#define QDEPTH 3

/* Scenes of a batch whose device part is over and whose writer still
 * drains their queued blocks, beside the ones setting up and the one on the
 * device (each holds at most its queue; see QUEUE_BYTES).  Four were no
 * faster than two on one, two or four H200s (bench/RESULTS.md, sessions 22,
 * 25 and 29). */
#define DRAINING 2

/* Output bytes a resident-source scene may queue for its writer.  The
 * device is handed to the next scene once the last block has run, so with
 * room for most of a scene's output the writer (one file, one thread: about
 * 2.5 GB/s into the page cache) no longer holds the device: the next scene
 * reads and computes while this one's blocks are written (112 scenes of
 * 8192^2 on 4 H200s: 1.48 s against 2.03 s with a 3-block queue;
 * bench/RESULTS.md, session 16). */
#define QUEUE_BYTES ((size_t)256 << 20)

/* Who waits on the resident source's state (pipe_t.cv): the device
 * thread, the strip readers, the grid thread. */
enum { WAKE_DEV, WAKE_READ, WAKE_GRID, WAKE_ROLES };
#define WAKES(r) (1 << (r))
#define WAKE_ALL (WAKES(WAKE_ROLES) - 1)

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
    int run_done;            /* blocks complete (resident pipeline) */
    int error;
    char msg[1024];
    double lon_ref;
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
    int npool, nbuf;            /* free, and in all */
    /* blocks queued on the device (gg_ortho_session_queue_resident), the
     * device thread's alone: their kernels run while the one before
     * downloads and the next one's strips go up (112 scenes of 8192^2 on
     * one H200: 2.47 s against 2.67 s with each copy and kernel in turn;
     * bench/RESULTS.md, session 24) */
    void **inflight;            /* strips whose queued upload may not have landed */
    int ninflight;
    int queued[GG_ORTHO_QUEUED], nqueued, qfirst; /* block numbers, oldest first */
    /* the source feeder (resident_start .. resident_stop) */
    int grid_ahead;             /* blocks the grid thread runs ahead of the device */
    pthread_t tg, tr[64];
    int nr, have_tg, started;
    int grid_done, finished;
    ggo_direct *direct;         /* uncompressed GeoTIFF: pixels by pwrite, else NULL */
    ggo_direct *src_direct;     /* the source's rows by pread (strip readers), else NULL */
    const gg_pipeline_job *job_running; /* the output pipeline's job while it runs */
    size_t dst_bytes;           /* one output block, all bands */
    /* called once the device has run the last block (the writer may still
     * be writing): the next scene of a batch may then take the device */
    void (*device_done)(struct pipe *p);
    struct scene_job *job;
} pipe_t;

/* Host buffers (gg_ortho_buffers.h) kept: at most what the scenes in
 * flight hold (their queues and strips). */
#define KEEP_BYTES (QUEUE_BYTES * (1 + DRAINING) + ((size_t)256 << 20))

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

static void scene_progress(struct scene_job *j, double frac);

/* Block k's source window read, with its coordinate grid (windowed
 * pipeline, reader thread); 1 after pipe_fail. */
static int read_block(pipe_t *p, int k)
{
    scene *sc = p->sc;
    block *b = &p->blocks[k];
    if (!ggo_block_grid(sc, b, p->lon_ref)) {
        pipe_fail(p, "out of memory");
        return 1;
    }
    ggo_block_window(sc, b, ggo_first_margin(sc));
    if (!ggo_read_window(sc, p->rds, b)) {
        pipe_fail(p, "reading %s failed: %s", sc->src_name, last_error_of(p->run));
        return 1;
    }
    return 0;
}

/* Block k's output written and its buffers freed (the pipeline's writer,
 * either pipeline); 1 after pipe_fail, or at once after a failure of
 * another stage. */
static int write_block(pipe_t *p, int k)
{
    pthread_mutex_lock(&p->mu);
    const int failed = p->error;
    pthread_mutex_unlock(&p->mu);
    if (failed)
        return 1;
    scene *sc = p->sc;
    const size_t ds = gg_type_size(sc->dst_t);
    block *b = &p->blocks[k];
    const size_t plane = (size_t)sc->out_w * b->rows;
    ggo_fill_outside(sc, b->y0, b->rows, b->dst);
    if (gg_fault_point("write")) { /* GG_FAULT=write:N (tests) */
        pipe_fail(p, "writing %s failed: injected fault (GG_FAULT)", sc->dst_name);
        return 1;
    }
    if (p->direct) {
        char err[256];
        if (ggo_direct_write(p->direct, b->y0, b->rows, b->dst, err, sizeof err)) {
            pipe_fail(p, "writing %s failed: %s", sc->dst_name, err);
            return 1;
        }
    } else {
        for (int i = 0; i < sc->nbands; i++)
            if (GDALRasterIO(GDALGetRasterBand(p->wds, i + 1), GF_Write, 0, b->y0, sc->out_w,
                             b->rows, (char *)b->dst + i * plane * ds, sc->out_w, b->rows,
                             ggo_to_gdal_type(sc->dst_t), 0, 0) != CE_None) {
                pipe_fail(p, "writing %s failed: %s", sc->dst_name, last_error_of(p->run));
                return 1;
            }
    }
    ggo_buffer_put(b->dst);
    free(b->src);
    free(b->nodes);
    b->dst = b->src = NULL;
    b->nodes = NULL;
    return 0;
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

/* The windowed pipeline (gpu/pipeline.h), used when the source does not fit
 * on the device: a reader thread reads each block's source window (windows
 * of successive blocks overlap) and computes the block's grid, the device
 * runs the block on this thread, a writer thread writes it; up to QDEPTH
 * blocks in flight. */
static int windowed_read(void *user, int reader, int item, int slot)
{
    (void)reader;
    (void)slot;
    return read_block(user, item);
}

static int windowed_compute(void *user, int worker, int item, int slot)
{
    (void)worker;
    (void)slot;
    pipe_t *p = user;
    return !run_block(p, &p->blocks[item]);
}

static int pipeline_write(void *user, int item, int slot)
{
    (void)slot;
    return write_block(user, item);
}

static int windowed_progress(void *user, int written, int items)
{
    pipe_t *p = user;
    scene_progress(p->job, (double)written / items);
    return 1;
}

static void windowed_thread_begin(void *user)
{
    pipe_t *p = user;
    CPLPushErrorHandlerEx(keep_error, p->run);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES"); /* the source windows' reads */
}

static void windowed_thread_end(void *user)
{
    (void)user;
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
}

/* Runs every block through the windowed pipeline.  0 on error. */
static int run_windowed(pipe_t *p)
{
    const gg_pipeline_job job = {.user = p, .items = p->nblocks, .slots = QDEPTH, .readers = 1,
                                 .workers = 1, .read = windowed_read, .compute = windowed_compute,
                                 .write = pipeline_write, .progress = windowed_progress,
                                 .thread_begin = windowed_thread_begin,
                                 .thread_end = windowed_thread_end};
    if (gg_pipeline_run(&job) < 0)
        pipe_fail(p, "cannot start the pipeline's threads");
    return !p->error;
}

/* Whether the whole source goes on the device: when the image takes at
 * most half the free device memory (a quarter on the CPU backend, where
 * "device" memory is the host's).  Resident, each source row is read once
 * (ZY-3-size scene on an H100: 1.31 s against 4.06 s with per-block
 * windows; bench/RESULTS.md, 2026-11-21 "resident source, several
 * readers"); the windowed pipeline is for sources that do not fit. */
static int resident_source(const scene *sc, gg_context *ctx)
{
    const size_t bytes = gg_ortho_source_bytes(sc->src_t, sc->width, sc->height, sc->nbands);
    if (!bytes)
        return 0;
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
 * The source feeder, started before the scene's turn at the device:
 *   grid thread     block grids (PROJ) and source row ranges, running up to
 *                   GRID_AHEAD blocks ahead; requests the strips of full-width
 *                   source rows each block needs, in block order;
 *   reader threads  (several, each with its own GDAL handle) read requested
 *                   strips into a fixed pool of staging buffers.
 * The output, in its turn: the one pipeline (gpu/pipeline.h) with a block
 * per item and no read stage,
 *   device thread   (its worker) uploads read strips (the backend's copies
 *                   are not re-entrant, so only this thread talks to the
 *                   device), queues block k once its rows are on the
 *                   device and completes the oldest queued block (a
 *                   deferred job: block k is written once complete);
 *   writer thread   (the pipeline's) writes complete blocks in order.
 *
 * Host memory: the staging pool, GRID_AHEAD grids and the output blocks
 * queued for the writer (the pipeline's slots: QUEUE_BYTES, at least
 * QDEPTH), whatever the image size.  The kernel reports any tap outside the rows it
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
        if (p->strips[i].state == STRIP_IDLE) {
            p->strips[i].state = STRIP_QUEUED;
            p->queue[p->nqueue++] = i;
        }
    wake(p, WAKES(WAKE_READ));
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
        gg_status rc = GG_OK;
        for (int k = 0; k < sc->nbands && rc == GG_OK; k++)
            rc = gg_ortho_session_put_rows_async(p->sess, k, st->y0, st->rows,
                                                 (const char *)st->buf + (size_t)k * plane,
                                                 (size_t)sc->width);
        pthread_mutex_lock(&p->mu);
        if (rc != GG_OK) {
            if (!p->error)
                snprintf(p->msg, sizeof p->msg, "%s", gg_context_last_error(p->ctx));
            p->error = 1;
        }
        st->state = STRIP_ON_DEVICE;
        /* back to the pool once the copy queue has passed it */
        p->inflight[p->ninflight++] = st->buf;
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

/* Device thread, mu held (released meanwhile): the queued uploads land
 * and their staging buffers go back to the pool. */
static void land_uploads(pipe_t *p)
{
    pthread_mutex_unlock(&p->mu);
    const gg_status rc = gg_ortho_session_flush(p->sess);
    pthread_mutex_lock(&p->mu);
    if (rc != GG_OK && !p->error) {
        snprintf(p->msg, sizeof p->msg, "%s", gg_context_last_error(p->ctx));
        p->error = 1;
    }
    release_inflight(p);
}

/* Device thread, mu held, nothing to upload: instead of sleeping, it
 * completes the oldest queued block or, when the readers are out of
 * buffers, lets the queued uploads land.  1 when it did one (mu was
 * released meanwhile), 0 when the caller should wait. */
static int device_idle(pipe_t *p)
{
    if (p->nqueued > 0) {
        pthread_mutex_unlock(&p->mu);
        complete_oldest(p);
        pthread_mutex_lock(&p->mu);
        return 1;
    }
    if (p->ninflight > 0 && p->npool == 0) {
        land_uploads(p);
        return 1;
    }
    return 0;
}

/* Device thread: waits until rows [y0, y1) are on the device, uploading
 * strips as they come.  0 on error. */
static int wait_rows(pipe_t *p, int y0, int y1)
{
    pthread_mutex_lock(&p->mu);
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
    return ok;
}

static void *grid_thread(void *arg)
{
    ggo_name_thread("gg-grid");
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandlerEx(keep_error, p->run);
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_GRID, &p->run_done, k - p->grid_ahead + 1))
            break;
        block *b = &p->blocks[k];
        if (!ggo_block_grid(sc, b, p->lon_ref)) {
            pipe_fail(p, "out of memory");
            break;
        }
        ggo_block_window(sc, b, ggo_first_margin(sc));
        pthread_mutex_lock(&p->mu);
        if (b->sh > 0)
            request_rows(p, b->sy0, b->sy0 + b->sh);
        p->grid_done = k + 1;
        wake(p, WAKES(WAKE_DEV));
        pthread_mutex_unlock(&p->mu);
    }
    CPLPopErrorHandler();
    return NULL;
}

/* Why a read of rows y0 .. y0+rows-1 failed without a GDAL message: a
 * strip they lie in ends past the end of the file, or no reason known. */
static const char *truncation(GDALDatasetH ds, const char *name, int y0, int rows)
{
    static __thread char why[256];
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    int bx = 0, by = 0;
    GDALGetBlockSize(b, &bx, &by);
    VSIStatBufL st;
    const int have_size = VSIStatL(name, &st) == 0;
    for (int j = by > 0 ? y0 / by : 0; have_size && by > 0 && j * by < y0 + rows; j++) {
        const char *off = GDALGetMetadataItem(b, CPLSPrintf("BLOCK_OFFSET_0_%d", j), "TIFF");
        const char *size = GDALGetMetadataItem(b, CPLSPrintf("BLOCK_SIZE_0_%d", j), "TIFF");
        if (!off || !size)
            break;
        const GIntBig end = CPLAtoGIntBig(off) + CPLAtoGIntBig(size);
        if (end > (GIntBig)st.st_size) {
            snprintf(why, sizeof why,
                     "the file ends at byte %lld, before the end of its strip %d (byte %lld): it "
                     "is truncated",
                     (long long)st.st_size, j, (long long)end);
            return why;
        }
    }
    snprintf(why, sizeof why, "GDAL gave no reason (rows %d to %d)", y0, y0 + rows - 1);
    return why;
}

static void *strip_reader(void *arg)
{
    ggo_name_thread("gg-read");
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
        } else {
            e = GDALDatasetRasterIO(ds, GF_Read, 0, st->y0, sc->width, st->rows, buf, sc->width,
                                    st->rows, ggo_to_gdal_type(sc->src_t), sc->nbands, NULL,
                                    (int)ss, (int)(ss * sc->width), (GSpacing)band_space);
            /* GDAL's direct I/O fails without a word on a truncated file */
            if (e != CE_None && !last_error_of(p->run)[0])
                CPLError(CE_Failure, CPLE_FileIO, "%s",
                         truncation(ds, sc->src_name, st->y0, st->rows));
        }
        pthread_mutex_lock(&p->mu);
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
        /* and a device thread waiting for room in the output queue: it
         * uploads the strip meanwhile */
        const gg_pipeline_job *job = p->job_running;
        pthread_mutex_unlock(&p->mu);
        if (job)
            gg_pipeline_wake(job);
    }
    if (ds)
        GDALClose(ds);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
    return NULL;
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

/* Device part of a queued block that missed source rows, run again at
 * once from the resident source with more rows (attempt_rows 1, then 2)
 * until the kernel reports no tap outside the rows it had. */
static int rerun_block_resident(pipe_t *p, block *b)
{
    scene *sc = p->sc;
    const size_t ds = gg_type_size(sc->dst_t);
    const size_t plane = (size_t)sc->out_w * b->rows;
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    for (int attempt = 1; attempt < 3; attempt++) {
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

/* Device thread: block k's output is complete (blocks complete in order,
 * oldest queued first): the writer may write it, the grid thread go on.
 * Progress follows the device, not the writer: a batch's next scene
 * prints its lines once this one has passed the device on. */
static void block_finished(pipe_t *p, int k)
{
    gg_pipeline_computed(k);
    pthread_mutex_lock(&p->mu);
    p->run_done = k + 1;
    wake(p, WAKES(WAKE_GRID));
    pthread_mutex_unlock(&p->mu);
    scene_progress(p->job, (double)(k + 1) / p->nblocks);
}

/* Device thread: the oldest queued block's download; a block that missed
 * source rows runs again at once with more.  0 on error. */
static int complete_oldest(pipe_t *p)
{
    const int k = p->queued[p->qfirst];
    p->qfirst = (p->qfirst + 1) % GG_ORTHO_QUEUED;
    p->nqueued--;
    int missed = 0;
    const gg_status rc = gg_ortho_session_wait(p->sess, &missed);
    pthread_mutex_lock(&p->mu);
    release_inflight(p);
    pthread_mutex_unlock(&p->mu);
    if (rc != GG_OK) {
        pipe_fail(p, "%s", gg_context_last_error(p->ctx));
        return 0;
    }
    if (missed) {
        note_miss(p, &p->blocks[k]);
        if (!rerun_block_resident(p, &p->blocks[k]))
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
    b->dst = ggo_buffer_get(p->pin, p->dst_bytes);
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
    const gg_status rc = gg_ortho_session_queue_resident(
        p->sess, &g, y0, y1 - y0, b->dst, sc->dst_t, sc->out_w, b->rows, (size_t)sc->out_w,
        (size_t)sc->out_w * b->rows);
    if (rc != GG_OK) {
        pipe_fail(p, "%s", gg_context_last_error(p->ctx));
        return 0;
    }
    p->queued[(p->qfirst + p->nqueued) % GG_ORTHO_QUEUED] = k;
    p->nqueued++;
    return 1;
}

/* Strip readers: half the processors, 2 to 8 (2, 3 or 4 made no batch
 * faster that held on 4 H200s; bench/RESULTS.md, session 30). */
static int reader_count(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n < 2 ? 2 : n > 8 ? 8 : (int)n;
}

/* The source feeder: strip table, staging pool and threads (grid,
 * readers).  It needs no device, so a batch starts it once the scene is
 * set up, before its turn: the first grids and strips are then ready when
 * the device comes.  0 on error (p->msg). */
static int resident_start(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t ss = gg_type_size(sc->src_t);
    const size_t row_bytes = (size_t)sc->width * ss * sc->nbands;
    /* strips of ~4 MB: fine enough to start the first block early */
    int srows = (int)((4u << 20) / (row_bytes ? row_bytes : 1));
    srows = srows < 1 ? 1 : srows > sc->height ? sc->height : srows;
    p->strip_rows = srows;
    p->nstrips = (sc->height + srows - 1) / srows;
    const int nreaders = reader_count();
    /* strips read ahead of the device: every reader busy twice over (the
     * whole source read ahead was no faster; bench/RESULTS.md, session 27) */
    int nbuf = 2 * nreaders + 2;
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
    int ok = p->strips && p->queue && p->ready && p->pool && p->inflight;
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
    for (int i = 0; ok && i < nbuf; i++) {
        p->pool[i] = ggo_buffer_get(p->pin, row_bytes * (size_t)srows);
        ok = p->pool[i] != NULL;
        p->npool += ok;
    }
    p->nbuf = p->npool;
    p->started = 1;
    if (!ok) {
        pipe_fail(p, "out of memory for the read buffers");
        return 0;
    }
    p->have_tg = pthread_create(&p->tg, NULL, grid_thread, p) == 0;
    for (p->nr = 0; p->nr < nreaders; p->nr++)
        if (pthread_create(&p->tr[p->nr], NULL, strip_reader, p) != 0)
            break;
    if (!p->have_tg || p->nr == 0)
        pipe_fail(p, "cannot start the pipeline threads");
    return !p->error;
}

/* Stops and joins the source feeder (after the pipeline, or instead of
 * it on a failure) and frees what resident_start made. */
static void resident_stop(pipe_t *p)
{
    if (!p->started)
        return;
    /* the grid thread waits for blocks that will not run */
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
    p->nr = p->have_tg = 0;
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
    p->inflight = NULL;
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

/* The device's part is over (every block complete, or a failure): the
 * queued copies land, the feeder stops and the device goes to the next
 * scene (device_done) while the writer drains. */
static void resident_device_done(pipe_t *p)
{
    if (p->finished)
        return;
    if (p->ninflight > 0 || p->nqueued > 0 || p->error) { /* a failure left copies in flight */
        (void)gg_ortho_session_flush(p->sess);
        pthread_mutex_lock(&p->mu);
        release_inflight(p);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->finished = 1;
    wake(p, WAKE_ALL);
    pthread_mutex_unlock(&p->mu);
    if (p->device_done)
        p->device_done(p);
}

/* compute(k): block k queued once its grid is done and its rows are on
 * the device (uploading meanwhile); the last block drains the queue and
 * hands the device on. */
static int resident_compute(void *user, int worker, int item, int slot)
{
    (void)worker;
    (void)slot;
    pipe_t *p = user;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        upload_ready(p);
        if (p->error || p->grid_done > item)
            break;
        if (p->nready == 0 && !device_idle(p))
            pthread_cond_wait(&p->cv[WAKE_DEV], &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    if (p->error || !queue_block(p, item))
        return 1;
    if (item < p->nblocks - 1)
        return 0;
    while (p->nqueued > 0 && complete_oldest(p))
        ;
    resident_device_done(p);
    return p->error;
}

/* While the writer frees a slot: uploads, the oldest queued block, or
 * the queued uploads landed (the readers then have every staging buffer
 * while the device thread sleeps). */
static int resident_idle(void *user, int worker)
{
    (void)worker;
    pipe_t *p = user;
    pthread_mutex_lock(&p->mu);
    int did = p->nready > 0;
    upload_ready(p);
    did = did || (!p->error && device_idle(p));
    if (!did && !p->error && p->ninflight > 0) {
        land_uploads(p);
        did = 1;
    }
    did = p->error ? -1 : did;
    pthread_mutex_unlock(&p->mu);
    return did;
}

static void resident_thread_begin(void *user)
{
    pipe_t *p = user;
    ggo_name_thread("gg-write");
    CPLPushErrorHandlerEx(keep_error, p->run);
}

static void resident_thread_end(void *user)
{
    (void)user;
    CPLPopErrorHandler();
}

/* The resident pipeline (p->sess holds the source, the feeder runs): one
 * gg_pipeline job, blocks queued for the writer in its slots (qdepth).
 * 0 on error (p->msg says why). */
static int run_resident(pipe_t *p)
{
    const gg_pipeline_job job = {.user = p, .items = p->nblocks, .slots = p->qdepth,
                                 .workers = 1, .compute = resident_compute,
                                 .write = pipeline_write, .thread_begin = resident_thread_begin,
                                 .thread_end = resident_thread_end, .deferred = 1,
                                 .idle = resident_idle};
    pthread_mutex_lock(&p->mu);
    p->job_running = &job;
    pthread_mutex_unlock(&p->mu);
    const int rc = gg_pipeline_run(&job);
    pthread_mutex_lock(&p->mu);
    p->job_running = NULL;
    pthread_mutex_unlock(&p->mu);
    if (rc < 0)
        pipe_fail(p, "cannot start the pipeline's threads");
    else if (rc)
        pipe_fail(p, "internal error: the pipeline stopped"); /* kept: a stage's own message */
    resident_device_done(p); /* after a failure: not done yet */
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
    /* a batch: ctx's sibling, for the odd scenes, opened at the first
     * device_slots (under mu) */
    gg_context *ctx2;
    int batch, sibling_tried;
    char err[512];
} device_start;

static void *device_start_main(void *arg)
{
    device_start *d = arg;
    ggo_name_thread("gg-dev-start");
    d->st = gg_context_create(d->device, &d->ctx, d->err, sizeof d->err);
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
 * GPU backend; opened once, by the first scene to ask; a caller's context
 * keeps its sibling for the next calls), else 1.  With 2 the odd scenes
 * run on the sibling, with queues of their own, so that a scene's session
 * and first uploads go on while the one before downloads its last blocks,
 * and the host steps of one scene's turn overlap the other's copies (two
 * H200s: 5-20 % faster than one scene at a time; bench/RESULTS.md,
 * session 29). */
static int device_slots(device_start *d)
{
    gg_context *ctx = device_wait(d);
    if (!ctx)
        return 1;
    pthread_mutex_lock(&d->mu);
    if (!d->sibling_tried) {
        d->sibling_tried = 1;
        if (d->batch && strcmp(gg_context_backend(ctx), "cpu") &&
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

/* The scene's output under a temporary name (*tmp): *out, a GDAL dataset,
 * or *direct, the direct writer's file.  0, else 1 with why_not set. */
static int create_output_file(orun *run, const options *o, scene *sc, GDALDriverH drv,
                              const char *dst_name, char **tmp, GDALDatasetH *out,
                              ggo_direct **direct, char *why_not, size_t len)
{
    /* Output: the safe output path (gg_output.h: temporary name in the
     * destination's folder, renamed when complete, removed on failure or
     * on a signal), but not gg_app's
     * writer: that one copies a GDAL dataset strip by strip, so it would
     * pull the orthoimage through GG:ortho:'s blocks one at a time and
     * lose this pipeline (several readers, a grid thread, uploads, kernels
     * and writes all overlapping), which is what makes gdal_ortho fast. */
    *tmp = gg_output_temporary_name(dst_name);
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
        else if (ggo_direct_open(*tmp, sc->out_w, sc->out_h, sc->nbands, sc->dst_gdt, direct, why,
                                 sizeof why) == 0)
            why[0] = 0;
        if (!*direct) { /* a layout the direct writer does not handle: GDAL's */
            gg_output_discard(drv, *tmp);
            CPLFree(*tmp);
            *tmp = gg_output_temporary_name(dst_name); /* the same name, tracked again */
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

/* The scene's device part is over (pipe_t.device_done): its session goes,
 * keeping its times, and the next scene takes the device while this one's
 * writer drains its last blocks. */
static void release_device(pipe_t *p)
{
    if (p->sess) {
        gg_ortho_session_destroy(p->sess);
        p->sess = NULL;
    }
    pass_turn(p->job, 0);
}

/* The scene's blocks (rows from free device memory), the pipeline's
 * state and, for a resident source, its host stages, started at once
 * (resident_start).  0, else 1 with why set. */
static int plan_scene(pipe_t *p, scene *sc, gg_context *ctx, scene_job *job, GDALDatasetH out,
                      char *why, size_t len)
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
    rows = rows > sc->out_h ? sc->out_h : rows;
    p->rows = rows;
    p->nblocks = (sc->out_h + rows - 1) / rows;
    p->dst_bytes = (size_t)sc->out_w * (size_t)rows * gg_type_size(sc->dst_t) * (size_t)sc->nbands;
    p->sc = sc;
    p->run = &job->run;
    p->ctx = ctx;
    /* page-locked pipeline buffers, one pool for both slots (portable):
     * with pageable ones the CUDA backend stages every copy, and a scene's
     * turn at an H200 took 30-31 ms against 20 ms (112 scenes of 8192^2 in
     * one process: 6.3-6.6 s against 3.1-3.3 s; bench/RESULTS.md, session
     * 23) */
    p->pin = device_wait(job->dev);
    p->wds = out;
    p->lon_ref = sc->rpc.long_off;
    p->job = job;
    p->device_done = release_device;
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
        const size_t q = QUEUE_BYTES / p->dst_bytes;
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
    if (opened) {
        /* output, under a temporary name */
        drv = GDALGetDriverByName(o->format ? o->format : "GTiff");
        if (!drv || !GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL)) {
            snprintf(why_not, sizeof why_not, "format %s cannot be created",
                     o->format ? o->format : "GTiff");
            drv = NULL;
        } else
            create_output_file(run, o, &sc, drv, dst_name, &tmp, &out, &p.direct, why_not,
                               sizeof why_not);
    }
    /* the blocks, and the pipeline's host stages (grids, first strips)
     * started before the turn; the first scene waits here for the device
     * to start, as it would in its turn */
    if (!why_not[0] && (ctx = device_ctx(dev, job->index)) != NULL)
        plan_scene(&p, &sc, ctx, job, out, why_not, sizeof why_not);
    if (!take_turn(job, device_slots(dev), why_not[0] || o->g.verbose)) {
        rc = SCENE_STOPPED;
        goto done;
    }
    if (why_not[0]) {
        fail(run, src_name, "%s", why_not);
        goto done;
    }
    {
        ctx = device_ctx(dev, job->index); /* at once: waited for before the turn */
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

    if (ggo_session_create(&sc, ctx, &sess)) {
        fail(run, src_name, "%s", sc.err);
        goto done;
    }
    p.sess = sess;
    if (p.resident &&
        gg_ortho_session_set_source(sess, sc.src_t, sc.width, sc.height, sc.nbands) != GG_OK) {
        /* refused after all: the windowed pipeline, from the start */
        resident_stop(&p);
        for (int k = 0; k < p.nblocks; k++) {
            free(p.blocks[k].nodes);
            p.blocks[k].nodes = NULL;
        }
        p.resident = p.error = p.finished = 0;
        p.grid_done = p.run_done = 0;
        p.qdepth = QDEPTH;
        p.msg[0] = 0;
    }
    if (!p.resident) {
        rds = GDALOpen(src_name, GA_ReadOnly);
        p.rds = rds ? rds : sc.src;
    }
    if (o->g.verbose && p.resident)
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source resident on the device (%d strips "
                "of %d rows, %d readers, %d staging buffers), up to %d blocks queued for the "
                "writer\n", PROG, src_name, p.nblocks, p.rows, p.nstrips, p.strip_rows, p.nr,
                p.nbuf, p.qdepth);
    else if (o->g.verbose)
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source read per block window, up to %d "
                "blocks queued for the writer\n", PROG, src_name, p.nblocks, p.rows, p.qdepth);
    scene_progress(job, 0.0);
    if (p.resident)
        run_resident(&p);
    else
        run_windowed(&p);
    if (!p.sess) /* released by the pipeline (release_device) */
        sess = NULL;
    const int pipe_failed = p.error;
    unplan_scene(&p);
    /* the device is free: the next scene's pipeline starts while this one
     * closes its output */
    gg_ortho_session_destroy(sess);
    sess = NULL;
    pass_turn(job, 0);
    if (pipe_failed) {
        fail(run, src_name, "%s", p.msg);
        goto done;
    }
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
    if (run->last_error[0]) {
        fail(run, src_name, "writing %s failed: %s", dst_name, run->last_error);
        goto done;
    }
    /* replace the destination only now (the one output path) */
    char why_commit[512];
    if (gg_output_commit(drv, tmp, dst_name, 0, why_commit, sizeof why_commit)) {
        fail(run, src_name, "%s", why_commit);
        goto done;
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
        gg_output_discard(drv, tmp);
        CPLFree(tmp);
    }
    unplan_scene(&p); /* stops a pipeline started before a failure */
    gg_ortho_session_destroy(sess);
    pass_turn(job, rc == SCENE_NO_DEVICE);
    if (rds)
        GDALClose(rds);
    ggo_scene_close(&sc);
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

/* Scenes setting up ahead of the one on the device.  One set-up (mostly
 * gdalwarp's output grid: 25-30 ms) takes longer than a scene's turn at
 * the device (12-14 ms on an H200 with the queued blocks), so with one
 * ahead the device waits for it: two made a Dask worker 16-20 % faster
 * (session 22), three another 13 % (112 scenes 2.25 -> 1.96 s; 4 GPUs
 * 0.88 / 0.90 s; bench/RESULTS.md, session 24; five were no faster,
 * sessions 25, 29 and 31).  Set-ups
 * run side by side on their own GDAL handles, transformers and PROJ
 * contexts (ThreadSanitizer: no race in five batches at 2 and 3 ahead,
 * session 22; the one report of session 16 was not seen again). */
#define AHEAD 3

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
        else if (EQUAL(argv[i], "--help") || EQUAL(argv[i], "-h") || EQUAL(argv[i], "-help") ||
                 EQUAL(argv[i], "--version") || EQUAL(argv[i], "--describe") ||
                 EQUAL(argv[i], "--utility_version"))
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
    for (int i = 1; i < argc; i++) /* ours, before GDAL answers with its version alone */
        if (EQUAL(argv[i], "--version") || EQUAL(argv[i], "--utility_version")) {
            gg_app_print_version(PROG);
            return 0;
        }
    GDALAllRegister();
    argc = GDALGeneralCmdLineProcessor(argc, &argv, 0);
    if (argc < 1) { /* handled (--formats...) or failed; argv is still the caller's */
        if (want_device && !given && device_wait(&dev))
            gg_context_destroy(dev.ctx);
        return argc == 0 ? 0 : 1;
    }
    options o;
    memset(&o, 0, sizeof o);
    char **pos = NULL;
    int rc = 1;
    GIntBig cache_before = -1;
    {
        /* the one parser of ortho's options (gg_ortho_options.c), the
         * GG:ortho: keys' */
        ggo_command_line c;
        char msg[1024] = "";
        const int parsed = ggo_parse_command_line(&c, argc, argv, msg, sizeof msg);
        o.g = c.g;
        o.format = c.format;
        o.outdir = c.outdir;
        o.device = c.device;
        o.co = c.co;
        pos = c.positional;
        if (parsed == GGO_CMD_ERROR)
            fail(run, NULL, "%s", msg);
        if (parsed != GGO_CMD_RUN) {
            rc = parsed == GGO_CMD_DONE ? 0 : 1;
            goto end;
        }
    }
    const int npos = CSLCount(pos);
    if (o.outdir ? npos < 1 : npos != 2) {
        fail(run, NULL, o.outdir ? "no source given (see --help)"
                                 : "a source and a destination are needed (several sources: "
                                   "-outdir; see --help)");
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
    dev.batch = nsrc > 1; /* read by the scenes (device_slots) */
    ggo_buffers_keep(KEEP_BYTES);
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
    /* every file any scene or the DEM reads (a VRT's sources, a GG:
     * string's inputs): no scene's output may replace one */
    gg_input_files *inputs = gg_input_files_new();
    for (int i = 0; inputs && i < nsrc + 1; i++) {
        const char *name = i < nsrc ? pos[i] : o.g.dem;
        if (!name)
            continue;
        CPLPushErrorHandler(CPLQuietErrorHandler); /* a bad source is reported by its scene */
        GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER, NULL, NULL, NULL);
        CPLPopErrorHandler();
        CPLErrorReset();
        if (ds ? gg_input_files_add_dataset(inputs, ds, name)
               : gg_input_files_add_path(inputs, name, name)) {
            gg_input_files_free(inputs);
            inputs = NULL;
        }
        if (ds)
            GDALClose(ds);
    }
    if (!inputs) {
        fail(run, NULL, "out of memory");
        failed = nsrc;
    }
    for (int i = 0; jobs && inputs && i < nsrc && !stopped; i++) {
        scene_job *j = &jobs[started];
        if (o.outdir)
            snprintf(j->dst, sizeof j->dst, "%s",
                     CPLFormFilename(o.outdir, CPLGetBasename(pos[i]), "tif"));
        else
            snprintf(j->dst, sizeof j->dst, "%s", pos[1]);
        char why[2048];
        if (gg_input_files_check_output(inputs, "the destination", j->dst, why, sizeof why)) {
            fail(run, pos[i], "%s", why);
            failed++;
            continue;
        }
        /* at most AHEAD scenes setting up beside the ones that have the
         * device or wait for it (the turns before t.next are passed), and
         * DRAINING more whose writers drain */
        pthread_mutex_lock(&t.mu);
        while (started - t.next > AHEAD + (t.slots > 1 ? t.slots - 1 : 0) && !t.stop)
            pthread_cond_wait(&t.cv, &t.mu);
        pthread_mutex_unlock(&t.mu);
        while (joined < started - (AHEAD + DRAINING))
            join_scene(&jobs[joined++], &failed, &stopped);
        if (stopped)
            break;
        pthread_mutex_init(&j->run.mu, NULL);
        j->run.err = run->err;
        j->run.errlen = run->errlen;
        j->run.prog = run->prog;
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
    gg_input_files_free(inputs);
    free(jobs);
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
    if (err && errlen) {
        err[0] = 0;
        run.err = err;
        run.errlen = errlen;
    }
    /* gdal_warp -rpc hands its run over under its own name */
    run.prog = argc >= 1 && argv && argv[0] && EQUAL(CPLGetFilename(argv[0]), "gdal_warp")
                   ? "gdal_warp"
                   : PROG;
    const int rc = argc < 1 || !argv ? 1 : run_command_line(&run, argc, argv, ctx);
    pthread_mutex_destroy(&run.mu);
    return rc;
}

void gg_ortho_run_release(void)
{
    ggo_buffers_release_all();
}
