/*
 * gg_ortho_resident.c -- gdal_ortho's resident-source pipeline.
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
 * QDEPTH), whatever the image size.  The kernel reports any tap outside
 * the rows it was given, so the result never depends on the planning: a
 * block that missed is run again with more rows (finally all of them).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_run_internal.h"
#include "gg_ortho_buffers.h"
#include "gpu/fault.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Whether the whole source goes on the device: when the image takes at
 * most half the free device memory (a quarter on the CPU backend, where
 * "device" memory is the host's).  Resident, each source row is read once
 * (ZY-3-size scene on an H100: 1.31 s against 4.06 s with per-block
 * windows; bench/RESULTS.md, 2026-11-21 "resident source, several
 * readers"); the windowed pipeline is for sources that do not fit. */
int ggo_resident_source(const scene *sc, gg_context *ctx)
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
    ggo_wake(p, WAKES(WAKE_READ));
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
        ggo_wake(p, WAKES(WAKE_READ));
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
    CPLPushErrorHandlerEx(ggo_keep_error, p->run);
    for (int k = 0; k < p->nblocks; k++) {
        if (!wait_for(p, WAKE_GRID, &p->run_done, k - p->grid_ahead + 1))
            break;
        block *b = &p->blocks[k];
        if (!ggo_block_grid(sc, b, p->lon_ref)) {
            ggo_pipe_fail(p, "out of memory");
            break;
        }
        ggo_block_window(sc, b, ggo_first_margin(sc));
        pthread_mutex_lock(&p->mu);
        if (b->sh > 0)
            request_rows(p, b->sy0, b->sy0 + b->sh);
        p->grid_done = k + 1;
        ggo_wake(p, WAKES(WAKE_DEV));
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
    CPLPushErrorHandlerEx(ggo_keep_error, p->run);
    /* uncompressed GeoTIFF: read straight into our buffer, not through
     * GDAL's block cache (4x faster for full-width strips); preads from
     * the strip table where the layout allows (p->src_direct) */
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES");
    GDALDatasetH ds = p->src_direct ? NULL
                                    : GDALOpenEx(sc->src_name, GDAL_OF_RASTER | GDAL_OF_READONLY,
                                                 NULL, NULL, NULL);
    if (!ds && !p->src_direct)
        ggo_pipe_fail(p, "cannot open %s again for reading: %s", sc->src_name,
                  ggo_run_last_error(p->run));
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
            if (e != CE_None && !ggo_run_last_error(p->run)[0])
                CPLError(CE_Failure, CPLE_FileIO, "%s",
                         truncation(ds, sc->src_name, st->y0, st->rows));
        }
        pthread_mutex_lock(&p->mu);
        if (e != CE_None) {
            p->pool[p->npool++] = buf;
            pthread_mutex_unlock(&p->mu);
            ggo_pipe_fail(p, "reading %s failed: %s", sc->src_name, ggo_run_last_error(p->run));
            break;
        }
        st->buf = buf;
        st->state = STRIP_READ;
        p->ready[p->nready++] = i;
        ggo_wake(p, WAKES(WAKE_DEV));
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
                ggo_pipe_fail(p, "%s", gg_context_last_error(p->ctx));
                return 0;
            }
            any_miss |= missed;
        }
        if (!any_miss)
            return 1;
        note_miss(p, b);
    }
    ggo_pipe_fail(p, "internal error: source rows still missing");
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
    ggo_wake(p, WAKES(WAKE_GRID));
    pthread_mutex_unlock(&p->mu);
    ggo_scene_progress(p->job, (double)(k + 1) / p->nblocks);
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
        ggo_pipe_fail(p, "%s", gg_context_last_error(p->ctx));
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
        ggo_pipe_fail(p, "out of memory");
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
        ggo_pipe_fail(p, "%s", gg_context_last_error(p->ctx));
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
int ggo_resident_start(pipe_t *p)
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
        ggo_pipe_fail(p, "out of memory for the read buffers");
        return 0;
    }
    p->have_tg = pthread_create(&p->tg, NULL, grid_thread, p) == 0;
    for (p->nr = 0; p->nr < nreaders; p->nr++)
        if (pthread_create(&p->tr[p->nr], NULL, strip_reader, p) != 0)
            break;
    if (!p->have_tg || p->nr == 0)
        ggo_pipe_fail(p, "cannot start the pipeline threads");
    return !p->error;
}

/* Stops and joins the source feeder (after the pipeline, or instead of
 * it on a failure) and frees what ggo_resident_start made. */
void ggo_resident_stop(pipe_t *p)
{
    if (!p->started)
        return;
    /* the grid thread waits for blocks that will not run */
    if (p->run_done < p->nblocks)
        ggo_pipe_fail(p, "stopped");
    pthread_mutex_lock(&p->mu);
    p->finished = 1;
    ggo_wake(p, WAKE_ALL);
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
    ggo_wake(p, WAKE_ALL);
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
    CPLPushErrorHandlerEx(ggo_keep_error, p->run);
}

static void resident_thread_end(void *user)
{
    (void)user;
    CPLPopErrorHandler();
}

/* The resident pipeline (p->sess holds the source, the feeder runs): one
 * gg_pipeline job, blocks queued for the writer in its slots (qdepth).
 * 0 on error (p->msg says why). */
int ggo_run_resident(pipe_t *p)
{
    const gg_pipeline_job job = {.user = p, .items = p->nblocks, .slots = p->qdepth,
                                 .workers = 1, .compute = resident_compute,
                                 .write = ggo_pipeline_write, .thread_begin = resident_thread_begin,
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
        ggo_pipe_fail(p, "cannot start the pipeline's threads");
    else if (rc)
        ggo_pipe_fail(p, "internal error: the pipeline stopped"); /* kept: a stage's own message */
    resident_device_done(p); /* after a failure: not done yet */
    ggo_resident_stop(p);
    return !p->error;
}
