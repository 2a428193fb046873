/*
 * gg_ortho_pipe.c -- one scene's pipeline in gdal_ortho: its failure and
 * wake-ups (pipe_t), the writer both pipelines end in, and the windowed
 * pipeline, used when the source does not fit on the device (the
 * resident-source one, gg_ortho_resident.c, when it does).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_run_internal.h"
#include "gg_ortho_buffers.h"
#include "gpu/fault.h"

#include "cpl_conv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ggo_wake(pipe_t *p, int mask)
{
    for (int r = 0; r < WAKE_ROLES; r++)
        if (mask & WAKES(r))
            pthread_cond_broadcast(&p->cv[r]);
}

void ggo_pipe_fail(pipe_t *p, const char *fmt, ...)
{
    pthread_mutex_lock(&p->mu);
    if (!p->error) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, sizeof p->msg, fmt, ap);
        va_end(ap);
        p->error = 1;
    }
    ggo_wake(p, WAKE_ALL);
    pthread_mutex_unlock(&p->mu);
}

/* Block k's source window read, with its coordinate grid (windowed
 * pipeline, reader thread); 1 after ggo_pipe_fail. */
static int read_block(pipe_t *p, int k)
{
    scene *sc = p->sc;
    block *b = &p->blocks[k];
    if (!ggo_block_grid(sc, b, p->lon_ref)) {
        ggo_pipe_fail(p, "out of memory");
        return 1;
    }
    ggo_block_window(sc, b, ggo_first_margin(sc));
    if (!ggo_read_window(sc, p->rds, b)) {
        ggo_pipe_fail(p, "reading %s failed: %s", sc->src_name, ggo_run_last_error(p->run));
        return 1;
    }
    return 0;
}

/* Block k's output written and its buffers freed (the pipeline's writer,
 * either pipeline); 1 after ggo_pipe_fail, or at once after a failure of
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
        ggo_pipe_fail(p, "writing %s failed: injected fault (GG_FAULT)", sc->dst_name);
        return 1;
    }
    if (p->direct) {
        char err[256];
        if (ggo_direct_write(p->direct, b->y0, b->rows, b->dst, err, sizeof err)) {
            ggo_pipe_fail(p, "writing %s failed: %s", sc->dst_name, err);
            return 1;
        }
    } else {
        for (int i = 0; i < sc->nbands; i++)
            if (GDALRasterIO(GDALGetRasterBand(p->wds, i + 1), GF_Write, 0, b->y0, sc->out_w,
                             b->rows, (char *)b->dst + i * plane * ds, sc->out_w, b->rows,
                             ggo_to_gdal_type(sc->dst_t), 0, 0) != CE_None) {
                ggo_pipe_fail(p, "writing %s failed: %s", sc->dst_name,
                              ggo_run_last_error(p->run));
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

int ggo_pipeline_write(void *user, int item, int slot)
{
    (void)slot;
    return write_block(user, item);
}

/* Device part of one block (all bands); retries with a wider window
 * (read on this thread: the reader is done with the block) when the kernel
 * reports a tap outside it. */
static int run_block(pipe_t *p, block *b)
{
    if (!b->dst)
        b->dst = ggo_buffer_get(p->pin, p->dst_bytes);
    if (ggo_run_block(p->sc, p->sess, p->ctx, p->sc->src, b, NULL)) {
        ggo_pipe_fail(p, "%s", p->sc->err);
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

static int windowed_progress(void *user, int written, int items)
{
    pipe_t *p = user;
    ggo_scene_progress(p->job, (double)written / items);
    return 1;
}

static void windowed_thread_begin(void *user)
{
    pipe_t *p = user;
    CPLPushErrorHandlerEx(ggo_keep_error, p->run);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES"); /* the source windows' reads */
}

static void windowed_thread_end(void *user)
{
    (void)user;
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
}

int ggo_run_windowed(pipe_t *p)
{
    const gg_pipeline_job job = {.user = p, .items = p->nblocks, .slots = QDEPTH, .readers = 1,
                                 .workers = 1, .read = windowed_read, .compute = windowed_compute,
                                 .write = ggo_pipeline_write, .progress = windowed_progress,
                                 .thread_begin = windowed_thread_begin,
                                 .thread_end = windowed_thread_end};
    if (gg_pipeline_run(&job) < 0)
        ggo_pipe_fail(p, "cannot start the pipeline's threads");
    return !p->error;
}
