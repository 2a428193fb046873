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
 * This file: the command line, the call's errors, and one scene from its
 * set-up (output file, blocks) to its committed output.  The scenes'
 * threads and turns at the device are gg_ortho_batch.c's; the pipelines
 * gg_ortho_pipe.c's and gg_ortho_resident.c's.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_run_internal.h"
#include "geogpu_gdal.h"
#include "gg_app.h" /* gg_app_parse_only (tests/fuzz), gg_app_print_version */
#include "gg_ortho_buffers.h"
#include "gg_ortho_options.h"
#include "gg_output.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"
#include "ogr_srs_api.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- the call's errors */

void CPL_STDCALL ggo_keep_error(CPLErr cls, CPLErrorNum no, const char *msg)
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
const char *ggo_run_last_error(orun *run)
{
    static __thread char copy[sizeof run->last_error];
    pthread_mutex_lock(&run->mu);
    memcpy(copy, run->last_error, sizeof copy);
    pthread_mutex_unlock(&run->mu);
    return copy;
}

/* Reports the call's one error line (stderr, or the caller's buffer: the
 * first one); returns 1. */
int ggo_run_fail(orun *run, const char *scene, const char *fmt, ...)
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

/* ------------------------------------------------------------ one scene */

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

/* The scene's blocks (rows from free device memory), the pipeline's
 * state and, for a resident source, its host stages, started at once
 * (ggo_resident_start).  0, else 1 with why set. */
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
    p->resident = ggo_resident_source(sc, ctx);
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
    p->pin = ggo_device_wait(job->dev);
    p->wds = out;
    p->lon_ref = sc->rpc.long_off;
    p->job = job;
    p->device_done = ggo_release_device;
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
    if (p->resident && !ggo_resident_start(p)) {
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
    ggo_resident_stop(p);
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

/* Before the scene's turn, GDAL only: the scene opened, its output created
 * under a temporary name, its blocks planned and a resident source's feeder
 * started (the first scene waits here for the device to start, as it would
 * in its turn).  A failure is left in why_not, to be reported in turn. */
static void set_up_scene(scene_job *job, scene *sc, pipe_t *p, GDALDriverH *drv, char **tmp,
                         GDALDatasetH *out, char *why_not, size_t len)
{
    const options *o = job->o;
    const int opened = ggo_scene_open(sc, &o->g, job->src) == 0;
    if (!opened)
        snprintf(why_not, len, "%s", sc->err);
    sc->dst_name = job->dst;
    if (opened) {
        *drv = GDALGetDriverByName(o->format ? o->format : "GTiff");
        if (!*drv || !GDALGetMetadataItem(*drv, GDAL_DCAP_CREATE, NULL)) {
            snprintf(why_not, len, "format %s cannot be created", o->format ? o->format : "GTiff");
            *drv = NULL;
        } else
            create_output_file(&job->run, o, sc, *drv, job->dst, tmp, out, &p->direct, why_not,
                               len);
    }
    gg_context *ctx;
    if (!why_not[0] && (ctx = ggo_device_ctx(job->dev, job->index)) != NULL)
        plan_scene(p, sc, ctx, job, *out, why_not, len);
}

/* The session refused the resident source after all: the windowed
 * pipeline, from the start. */
static void fall_back_to_windowed(pipe_t *p)
{
    ggo_resident_stop(p);
    for (int k = 0; k < p->nblocks; k++) {
        free(p->blocks[k].nodes);
        p->blocks[k].nodes = NULL;
    }
    p->resident = p->error = p->finished = 0;
    p->grid_done = p->run_done = 0;
    p->qdepth = QDEPTH;
    p->msg[0] = 0;
}

/* -v: the output grid and the device's launch shape. */
static void note_launch(const scene *sc, gg_context *ctx, const char *src_name)
{
    int bx = 0, by = 0;
    double occ = 0;
    gg_ortho_launch_info(ctx, &bx, &by, &occ);
    fprintf(stderr,
            "%s: %s: output %d x %d, grid step %d, device %s, work group %d x %d "
            "(occupancy %.2f)\n",
            PROG, src_name, sc->out_w, sc->out_h, sc->step, gg_context_device_name(ctx), bx, by,
            occ);
}

/* -v: how the blocks run. */
static void note_blocks(const pipe_t *p, const char *src_name)
{
    if (p->resident)
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source resident on the device (%d strips "
                "of %d rows, %d readers, %d staging buffers), up to %d blocks queued for the "
                "writer\n", PROG, src_name, p->nblocks, p->rows, p->nstrips, p->strip_rows, p->nr,
                p->nbuf, p->qdepth);
    else
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source read per block window, up to %d "
                "blocks queued for the writer\n", PROG, src_name, p->nblocks, p->rows, p->qdepth);
}

/* The output closed and put in the destination's place (the one output
 * path); *out, p->direct and *tmp are then gone.  0, else 1 (reported). */
static int finish_output(orun *run, pipe_t *p, GDALDatasetH *out, GDALDriverH drv, char **tmp,
                         const char *src_name, const char *dst_name)
{
    run->last_error[0] = 0;
    if (p->direct) {
        char err[256];
        if (ggo_direct_close(p->direct, err, sizeof err))
            snprintf(run->last_error, sizeof run->last_error, "%s", err);
        p->direct = NULL;
    } else {
        GDALClose(*out);
        *out = NULL;
    }
    if (run->last_error[0])
        return ggo_run_fail(run, src_name, "writing %s failed: %s", dst_name, run->last_error);
    char why_commit[512];
    if (gg_output_commit(drv, *tmp, dst_name, 0, why_commit, sizeof why_commit))
        return ggo_run_fail(run, src_name, "%s", why_commit);
    CPLFree(*tmp);
    *tmp = NULL;
    return 0;
}

int ggo_process_scene(scene_job *job)
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
    char why_not[2048] = "";
    set_up_scene(job, &sc, &p, &drv, &tmp, &out, why_not, sizeof why_not);
    if (!ggo_take_turn(job, ggo_device_slots(dev), why_not[0] || o->g.verbose)) {
        rc = SCENE_STOPPED;
        goto done;
    }
    if (why_not[0]) {
        ggo_run_fail(run, src_name, "%s", why_not);
        goto done;
    }
    ctx = ggo_device_ctx(dev, job->index); /* at once: waited for before the turn */
    if (!ctx) {
        rc = SCENE_NO_DEVICE;
        goto done;
    }
    ggo_device_notice(job);
    if (o->g.verbose)
        note_launch(&sc, ctx, src_name);
    if (ggo_session_create(&sc, ctx, &sess)) {
        ggo_run_fail(run, src_name, "%s", sc.err);
        goto done;
    }
    p.sess = sess;
    if (p.resident &&
        gg_ortho_session_set_source(sess, sc.src_t, sc.width, sc.height, sc.nbands) != GG_OK)
        fall_back_to_windowed(&p);
    if (!p.resident) {
        rds = GDALOpen(src_name, GA_ReadOnly);
        p.rds = rds ? rds : sc.src;
    }
    if (o->g.verbose)
        note_blocks(&p, src_name);
    ggo_scene_progress(job, 0.0);
    if (p.resident)
        ggo_run_resident(&p);
    else
        ggo_run_windowed(&p);
    if (!p.sess) /* released by the pipeline (ggo_release_device) */
        sess = NULL;
    const int pipe_failed = p.error;
    unplan_scene(&p);
    /* the device is free: the next scene's pipeline starts while this one
     * closes its output */
    gg_ortho_session_destroy(sess);
    sess = NULL;
    ggo_pass_turn(job, 0);
    if (pipe_failed) {
        ggo_run_fail(run, src_name, "%s", p.msg);
        goto done;
    }
    if (!finish_output(run, &p, &out, drv, &tmp, src_name, dst_name))
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
    ggo_pass_turn(job, rc == SCENE_NO_DEVICE);
    if (rds)
        GDALClose(rds);
    ggo_scene_close(&sc);
    return rc;
}

/* ------------------------------------------------------- the command line */

/* -device, looked up in the raw arguments so that the device starts first,
 * in parallel with everything else (a bad value is reported later);
 * returns 0 when no device is wanted (--help, --version...). */
static int early_device(int argc, char **argv, const char **device)
{
    int want_device = 1;
    for (int i = 1; i < argc; i++) {
        if (EQUAL(argv[i], "-device") && i + 1 < argc)
            *device = argv[i + 1];
        else if (EQUAL(argv[i], "--help") || EQUAL(argv[i], "-h") || EQUAL(argv[i], "-help") ||
                 EQUAL(argv[i], "--version") || EQUAL(argv[i], "--describe") ||
                 EQUAL(argv[i], "--utility_version"))
            want_device = 0;
    }
    return want_device;
}

/* The options, by the one parser of ortho's options (gg_ortho_options.c,
 * the GG:ortho: keys'): GGO_CMD_RUN, GGO_CMD_DONE, or GGO_CMD_ERROR
 * (reported).  o->co and *pos are the caller's to free, whatever it
 * returns. */
static int parse_options(orun *run, options *o, char ***pos, int argc, char **argv)
{
    ggo_command_line c;
    char msg[1024] = "";
    const int parsed = ggo_parse_command_line(&c, argc, argv, msg, sizeof msg);
    o->g = c.g;
    o->format = c.format;
    o->outdir = c.outdir;
    o->device = c.device;
    o->co = c.co;
    *pos = c.positional;
    if (parsed == GGO_CMD_ERROR)
        ggo_run_fail(run, NULL, "%s", msg);
    return parsed;
}

/* -outdir names each output after its source: two sources of one name
 * would write one output (and one temporary name, set up side by side),
 * so they are refused before any runs.  0, else 1 (reported). */
static int check_output_names(orun *run, const char *outdir, char **pos, int npos)
{
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
    if (dup == -2)
        return ggo_run_fail(run, NULL, "out of memory");
    if (dup >= 0)
        return ggo_run_fail(run, NULL, "%s and %s would both be written to %s (-outdir names "
                            "each output after its source)", pos[first], pos[dup],
                            CPLFormFilename(outdir, CPLGetBasename(pos[dup]), "tif"));
    return 0;
}

/* The sources and destination: one of each, or sources and a folder
 * (-outdir).  0, else 1 (reported). */
static int check_positional(orun *run, const options *o, char **pos)
{
    const int npos = CSLCount(pos);
    if (o->outdir ? npos < 1 : npos != 2)
        return ggo_run_fail(run, NULL, o->outdir ? "no source given (see --help)"
                                                 : "a source and a destination are needed "
                                                   "(several sources: -outdir; see --help)");
    if (!o->outdir)
        return 0;
    VSIStatBufL st;
    if (VSIStatL(o->outdir, &st) != 0 || !VSI_ISDIR(st.st_mode))
        return ggo_run_fail(run, NULL, "-outdir %s is not a folder", o->outdir);
    return check_output_names(run, o->outdir, pos, npos);
}

/* gdal_ortho's main, on the call's state; given: the caller's context. */
static int run_command_line(orun *run, int argc, char **caller_argv, gg_context *given)
{
    char **argv = caller_argv;
    const char *device = NULL;
    int want_device = early_device(argc, argv, &device);
    device_start dev;
    ggo_device_none(&dev, given);
    if (gg_app_parse_only)
        want_device = 0;
    if (want_device && !given)
        ggo_device_begin(&dev, device);
    for (int i = 1; i < argc; i++) /* ours, before GDAL answers with its version alone */
        if (EQUAL(argv[i], "--version") || EQUAL(argv[i], "--utility_version")) {
            gg_app_print_version(PROG);
            return 0;
        }
    GDALAllRegister();
    argc = GDALGeneralCmdLineProcessor(argc, &argv, 0);
    if (argc < 1) { /* handled (--formats...) or failed; argv is still the caller's */
        if (want_device && !given && ggo_device_wait(&dev))
            gg_context_destroy(dev.start.ctx);
        return argc == 0 ? 0 : 1;
    }
    options o;
    memset(&o, 0, sizeof o);
    char **pos = NULL;
    int rc = 1;
    GIntBig cache_before = -1;
    const int parsed = parse_options(run, &o, &pos, argc, argv);
    if (parsed != GGO_CMD_RUN) {
        rc = parsed == GGO_CMD_DONE ? 0 : 1;
        goto end;
    }
    if (check_positional(run, &o, pos))
        goto end;
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
    CPLPushErrorHandlerEx(ggo_keep_error, run);
    if (!given &&
        (!want_device || (o.device ? !dev.start.device || strcmp(o.device, dev.start.device) : !!dev.start.device))) {
        /* the early look-up missed (e.g. -device from an @argfile) */
        if (ggo_device_wait(&dev))
            gg_context_destroy(dev.start.ctx);
        ggo_device_begin(&dev, o.device);
        want_device = 1;
    }
    const int nsrc = o.outdir ? CSLCount(pos) : 1;
    const int failed = ggo_run_scenes(run, &o, pos, nsrc, &dev);
    CPLPopErrorHandler();
    const int no_device = !ggo_device_wait(&dev);
    if (no_device)
        ggo_run_fail(run, NULL, "device: %s", dev.start.error);
    else if (nsrc > 1 && failed)
        fprintf(stderr, "%s: %d of %d scenes failed\n", PROG, failed, nsrc);
    rc = failed || no_device ? 1 : 0;
end:
    /* the buffers page-locked through our own context go before it; a
     * caller's context runs again: its buffers are kept */
    if (!given)
        ggo_buffers_release(want_device ? ggo_device_wait(&dev) : NULL);
    if (want_device && !given && ggo_device_wait(&dev))
        gg_context_destroy(dev.start.ctx);
    if (cache_before >= 0)
        GDALSetCacheMax64(cache_before);
    CSLDestroy(pos);
    CSLDestroy(o.co);
    CSLDestroy(argv);
    return rc;
}

/* ---------------------------------------------------- the entry point */

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
