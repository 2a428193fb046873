/*
 * gg_warp.c -- gdal_warp as a function (gg_warp_run, geogpu_gdal.h): the
 * command line, the device, the output (safe, direct where it can be) and
 * the read -> device -> write pipeline over the warp engine's blocks of
 * output rows (gg_warp_scene.h); RPC sources handed to gdal_ortho's.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu_gdal.h"
#include "gg_app.h"
#include "gg_device_start.h"
#include "gg_input_files.h"
#include "gg_ortho_direct.h"
#include "gg_output.h"
#include "gpu/pipeline.h"
#include "gg_processed.h"
#include "gg_warp.h"
#include "gg_warp_scene.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "gdal.h"
#include "gdal_alg.h"
#include "ogr_srs_api.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROG "gdal_warp"

/* ------------------------------------------------------------ the pipeline */

static int pipe_read(void *user, int reader, int item, int slot)
{
    ggw_scene *w = user;
    wslot *sl = &w->slot[slot];
    sl->y0 = item * w->rows;
    sl->rows = w->out_h - sl->y0 < w->rows ? w->out_h - sl->y0 : w->rows;
    return ggw_read_rows(w, reader, sl);
}

static int pipe_compute(void *user, int worker, int item, int slot)
{
    ggw_scene *w = user;
    (void)worker;
    (void)item;
    return ggw_compute_rows(w, &w->slot[slot]);
}

static int pipe_write(void *user, int item, int slot)
{
    ggw_scene *w = user;
    wslot *sl = &w->slot[slot];
    (void)item;
    const size_t plane = (size_t)w->out_w * sl->rows;
    if (w->direct) {
        char why[512];
        if (ggo_direct_write(w->direct, sl->y0, sl->rows, sl->dst, why, sizeof why))
            return ggw_fail(w, "writing '%s' failed: %s", w->dst_name, why);
        return 0;
    }
    CPLErrorReset();
    CPLErr e;
    if (!w->complex)
        e = GDALDatasetRasterIO(w->out, GF_Write, 0, sl->y0, w->out_w, sl->rows, sl->dst,
                                w->out_w, sl->rows, ggw_gdal_type(w->kt_dst), w->out_bands, NULL, 0,
                                0, 0);
    else {
        for (int b = 0; b < w->nbands; b++) {
            const float *re = (const float *)sl->dst + 2 * plane * b, *im = re + plane;
            float *c = (float *)sl->io + 2 * plane * b;
            for (size_t i = 0; i < plane; i++) {
                c[2 * i] = re[i];
                c[2 * i + 1] = im[i];
            }
        }
        e = GDALDatasetRasterIO(w->out, GF_Write, 0, sl->y0, w->out_w, sl->rows, sl->io,
                                w->out_w, sl->rows, GDT_CFloat32, w->nbands, NULL, 0, 0, 0);
    }
    if (e != CE_None)
        return ggw_fail(w, "writing '%s' failed: %s", w->dst_name, CPLGetLastErrorMsg());
    return 0;
}

static int pipe_progress(void *user, int written, int items)
{
    ggw_scene *w = user;
    if (!w->o->quiet && !GDALTermProgress((double)written / items, NULL, NULL))
        return ggw_fail(w, "interrupted");
    return 1;
}

static void pipe_thread_begin(void *user)
{
    (void)user;
    CPLPushErrorHandler(CPLQuietErrorHandler);
}

static void pipe_thread_end(void *user)
{
    (void)user;
    CPLPopErrorHandler();
}

static int run_pipeline(ggw_scene *w)
{
    for (int k = 0; k < GGW_SLOTS; k++)
        if (ggw_slot_alloc(w, &w->slot[k], w->rows))
            return 1;
    const gg_pipeline_job job = {.user = w,
                                 .items = w->items,
                                 .slots = GGW_SLOTS,
                                 .readers = w->readers,
                                 .workers = 1,
                                 .read = pipe_read,
                                 .compute = pipe_compute,
                                 .write = pipe_write,
                                 .progress = pipe_progress,
                                 .thread_begin = pipe_thread_begin,
                                 .thread_end = pipe_thread_end};
    CPLPushErrorHandler(CPLQuietErrorHandler);
    const int rc = gg_pipeline_run(&job);
    CPLPopErrorHandler();
    if (rc < 0)
        return ggw_fail(w, "cannot start the pipeline's threads");
    return rc;
}

/* ------------------------------------------------------------ the output */

/* -of, else the driver of the destination's extension, else GTiff (as
 * gdalwarp). */
static GDALDriverH output_driver(ggw_scene *w)
{
    if (w->o->of)
        return GDALGetDriverByName(w->o->of);
    const char *ext = CPLGetExtension(w->dst_name);
    if (*ext && !EQUAL(ext, "tif") && !EQUAL(ext, "tiff"))
        for (int i = 0; i < GDALGetDriverCount(); i++) {
            GDALDriverH d = GDALGetDriver(i);
            const char *exts = GDALGetMetadataItem(d, GDAL_DMD_EXTENSIONS, NULL);
            if (!GDALGetMetadataItem(d, GDAL_DCAP_RASTER, NULL) ||
                !GDALGetMetadataItem(d, GDAL_DCAP_CREATE, NULL) || !exts)
                continue;
            char **e = CSLTokenizeString2(exts, " ", 0);
            const int hit = CSLFindString(e, ext) >= 0;
            CSLDestroy(e);
            if (hit)
                return d;
        }
    return GDALGetDriverByName("GTiff");
}

static int create_output(ggw_scene *w, GDALDriverH drv, const char *tmp)
{
    CPLErrorReset();
    w->out = GDALCreate(drv, tmp, w->out_w, w->out_h, w->out_bands, w->dst_gdt, w->o->co);
    if (!w->out)
        return ggw_fail(w, "cannot create '%s': %s", w->dst_name, CPLGetLastErrorMsg());
    GDALSetGeoTransform(w->out, w->gt);
    if (w->dst_wkt)
        GDALSetProjection(w->out, w->dst_wkt);
    const int per = w->complex ? 2 : 1;
    for (int b = 0; b < w->nbands; b++) {
        GDALRasterBandH ob = GDALGetRasterBand(w->out, b + 1);
        GDALRasterBandH sb = GDALGetRasterBand(w->src[0].ds[0], b + 1);
        if (w->has_dstnd)
            GDALSetRasterNoDataValue(ob, w->dst_nd[b * per]);
        GDALSetRasterColorInterpretation(ob, GDALGetRasterColorInterpretation(sb));
        GDALColorTableH ct = GDALGetRasterColorTable(sb);
        if (ct)
            GDALSetRasterColorTable(ob, ct);
    }
    if (w->alpha) { /* gdalwarp gives -dstnodata to the alpha band too */
        GDALRasterBandH ab = GDALGetRasterBand(w->out, w->out_bands);
        GDALSetRasterColorInterpretation(ab, GCI_AlphaBand);
        if (w->has_dstnd)
            GDALSetRasterNoDataValue(ab, w->dst_nd[0]);
    }
    return 0;
}

/* The destination may be written: not a file any source reads, not a
 * device or a folder, and replaced only with -overwrite (gdal_warp does not
 * warp into an existing file). */
static int check_destination(ggw_scene *w)
{
    gg_input_files *inputs = gg_input_files_new();
    if (!inputs)
        return ggw_fail(w, "out of memory");
    int rc = 0;
    for (int s = 0; s < w->nsrc && !rc; s++)
        if (gg_input_files_add_dataset(inputs, w->src[s].ds[0], w->src[s].name))
            rc = ggw_fail(w, "out of memory");
    char why[1024] = "";
    if (!rc && gg_input_files_check_output(inputs, "the destination", w->dst_name, why,
                                           sizeof why))
        rc = ggw_fail(w, "%s", why);
    gg_input_files_free(inputs);
    VSIStatBufL st;
    if (!rc && !w->o->overwrite && VSIStatL(w->dst_name, &st) == 0)
        rc = ggw_fail(w, "'%s' exists: give -overwrite to replace it (gdal_warp does not warp "
                         "into an existing file)",
                      w->dst_name);
    return rc;
}

/* The warp of the files: the device, started on a thread of its own
 * (gg_device_start.h), is waited for once the sources and the grid are
 * set up. */
static int warp_files(ggw_scene *w, gg_context *given, gg_device_start *dev)
{
    const ggw_options *o = w->o;
    if (ggw_scene_setup(w))
        return 1;
    gg_context *ctx = given ? given : gg_device_start_wait(dev);
    if (!ctx)
        return ggw_fail(w, "cannot start the device: %s", dev->error);
    if (!given)
        gg_app_notice(PROG, o->quiet, gg_context_notice(ctx));
    w->ctx = ctx;
    /* the CPU backend's threads take every core: one reader */
    if (ggw_scene_readers(w, strcmp(gg_context_backend(ctx), "cpu") ? gg_pipeline_readers() : 1))
        return 1;
    ggw_plan_rows(w);
    if (o->verbose)
        fprintf(stderr, "%s: output %d x %d, origin %.10g %.10g, pixel %.10g x %.10g; %d block(s) "
                        "of %d rows; device %s\n",
                PROG, w->out_w, w->out_h, w->gt[0], w->gt[3], w->gt[1], w->gt[5], w->items,
                w->rows, gg_context_device_name(ctx));

    /* the destination: checked against every input, written under a
     * temporary name, committed whole or not at all */
    if (check_destination(w))
        return 1;
    int rc = 0;
    char why[1024] = "";
    GDALDriverH drv = output_driver(w);
    if (!drv)
        return ggw_fail(w, "-of %s: unknown format", o->of);
    if (!GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL))
        return ggw_fail(w, "-of %s: gdal_warp writes formats that can create files (GTiff, HFA, "
                       "netCDF, ENVI, ...); convert with gdal_translate afterwards",
                    GDALGetDriverShortName(drv));
    char *tmp = gg_output_temporary_name(w->dst_name);
    rc = create_output(w, drv, tmp);
    /* An uncompressed striped GeoTIFF: GDAL creates the file and, closed
     * empty, allocates every strip; the pixels then go to the strip
     * offsets with pwrite (gg_ortho_direct.h), the bytes GDAL's writer
     * would write.  Anything else: GDAL. */
    double nd_any = 0;
    for (int k = 0; w->has_dstnd && k < w->nplanes; k++)
        if (w->dst_nd[k] != 0.0)
            nd_any = w->dst_nd[k];
    if (!rc && !w->complex &&
        ggo_direct_eligible(o->of, o->co, tmp, w->has_dstnd, nd_any, why, sizeof why)) {
        CPLErrorReset();
        GDALClose(w->out);
        w->out = NULL;
        if (CPLGetLastErrorType() == CE_Failure ||
            ggo_direct_open(tmp, w->out_w, w->out_h, w->out_bands, w->dst_gdt, &w->direct, why,
                            sizeof why)) {
            gg_output_discard(drv, tmp); /* a layout it does not take: GDAL's writer */
            CPLFree(tmp);
            tmp = gg_output_temporary_name(w->dst_name);
            rc = create_output(w, drv, tmp);
        }
    }
    if (o->verbose)
        fprintf(stderr, "%s: writer: %s\n", PROG,
                w->direct ? ggo_direct_describe(w->direct) : why[0] ? why : "GDAL");
    rc = rc || run_pipeline(w);
    if (w->direct && ggo_direct_close(w->direct, why, sizeof why) && !rc)
        rc = ggw_fail(w, "writing '%s' failed: %s", w->dst_name, why);
    w->direct = NULL;
    if (w->out) {
        CPLErrorReset();
        GDALClose(w->out);
        if (CPLGetLastErrorType() == CE_Failure && !rc)
            rc = ggw_fail(w, "writing '%s' failed: %s", w->dst_name, CPLGetLastErrorMsg());
    }
    w->out = NULL;
    if (!rc && gg_output_commit(drv, tmp, w->dst_name,
                                EQUAL(GDALGetDriverShortName(drv), "GTiff"), why, sizeof why))
        rc = ggw_fail(w, "%s", why);
    if (rc)
        gg_output_discard(drv, tmp);
    CPLFree(tmp);
    if (!rc && o->verbose) {
        fprintf(stderr, "%s: blocks by grid step:", PROG);
        for (int s = 0; s <= GGW_STEP_MAX; s++)
            if (w->steps[s])
                fprintf(stderr, " %s%d:%d", s ? "" : "row pieces ", s, w->steps[s]);
        fprintf(stderr, "\n");
    }
    return rc;
}

/* ------------------------------------------------------------ -of GGVRT */

static int is_ggvrt(const ggw_options *o)
{
    const char *dst = o->positional[CSLCount(o->positional) - 1];
    return o->of ? EQUAL(o->of, "GGVRT") || EQUAL(o->of, "GG")
                 : EQUAL(CPLGetExtension(dst), "ggvrt");
}

/* The warp as a .ggvrt (GG:warp:'s XML form) instead of pixels: set up and
 * checked as the GG driver will open it (no device), then written safely. */
static int write_ggvrt(ggw_scene *w)
{
    const ggw_options *o = w->o;
    if (ggw_scene_setup(w) || ggw_scene_readers(w, 1) || check_destination(w))
        return 1;
    int rc = 0;
    char why[1024] = "";
    const int n = CSLCount(o->keyvals);
    char **keys = calloc((size_t)n + 1, sizeof(char *));
    const char **values = calloc((size_t)n + 1, sizeof(char *));
    if (!keys || !values) {
        free(keys);
        free(values);
        return ggw_fail(w, "out of memory");
    }
    for (int i = 0; i < n; i++)
        values[i] = CPLParseNameValue(o->keyvals[i], &keys[i]);
    char *tmp = gg_output_temporary_name(w->dst_name);
    if (GGWriteGGVRTNamed(tmp, "warp", n, (const char *const *)keys, values, w->nsrc,
                          (const char *const *)o->positional) != CE_None)
        rc = ggw_fail(w, "cannot write '%s': %s", w->dst_name, CPLGetLastErrorMsg());
    else if (gg_output_commit(NULL, tmp, w->dst_name, 1, why, sizeof why))
        rc = ggw_fail(w, "%s", why);
    if (rc)
        gg_output_discard(NULL, tmp);
    CPLFree(tmp);
    for (int i = 0; i < n; i++)
        CPLFree(keys[i]);
    free(keys);
    free(values);
    return rc;
}

/* ------------------------------------------------------------ RPC sources */

/* -rpc: gdal_ortho's pipeline (the RPC model and the DEM on the device),
 * its command line made from gdalwarp's. */
static int run_rpc(const ggw_options *o, gg_context *ctx, char *err, size_t errlen)
{
    char msg[512] = "";
    char **kv = ggw_rpc_options(o, msg, sizeof msg);
    if (!kv && !msg[0])
        snprintf(msg, sizeof msg, "out of memory");
    if (!msg[0] && CSLCount(o->positional) != 2)
        snprintf(msg, sizeof msg, "-rpc takes one source");
    VSIStatBufL st;
    if (!msg[0] && !o->overwrite && VSIStatL(o->positional[1], &st) == 0)
        snprintf(msg, sizeof msg, "'%s' exists: give -overwrite to replace it", o->positional[1]);
    if (msg[0]) {
        CSLDestroy(kv);
        if (err)
            snprintf(err, errlen, "ERROR 1: %s: %s", PROG, msg);
        else
            fprintf(stderr, "ERROR 1: %s: %s\n", PROG, msg);
        return 1;
    }
    /* gdal_ortho's flags are its keys; several values go one by one */
    char **a = CSLAddString(NULL, PROG); /* gdal_ortho's errors then name gdal_warp */
    for (int i = 0; kv[i]; i++) {
        char *key = NULL;
        const char *v = CPLParseNameValue(kv[i], &key);
        a = CSLAddString(a, CPLSPrintf("-%s", key));
        const int several = EQUAL(key, "tr") || EQUAL(key, "te") || EQUAL(key, "ts");
        char **t = CSLTokenizeString2(v, several ? "," : "", 0);
        for (int k = 0; t && t[k]; k++)
            a = CSLAddString(a, t[k]);
        if (!several && (!t || !t[0]))
            a = CSLAddString(a, v);
        CSLDestroy(t);
        CPLFree(key);
    }
    const char *pairs[][2] = {{"-of", o->of}, {"-device", o->device}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        if (pairs[k][1]) {
            a = CSLAddString(a, pairs[k][0]);
            a = CSLAddString(a, pairs[k][1]);
        }
    for (int i = 0; o->co && o->co[i]; i++) {
        a = CSLAddString(a, "-co");
        a = CSLAddString(a, o->co[i]);
    }
    if (o->quiet)
        a = CSLAddString(a, "-q");
    if (o->verbose)
        a = CSLAddString(a, "-v");
    a = CSLAddString(a, o->positional[0]);
    a = CSLAddString(a, o->positional[1]);
    const int rc = gg_ortho_run(CSLCount(a), a, ctx, err, errlen);
    CSLDestroy(a);
    CSLDestroy(kv);
    return rc;
}

/* ------------------------------------------------------------ the entry point */

static int report(char *err, size_t errlen, const char *msg)
{
    if (err)
        snprintf(err, errlen, "ERROR 1: %s: %s", PROG, msg);
    else
        fprintf(stderr, "ERROR 1: %s: %s\n", PROG, msg);
    return 1;
}

int gg_warp_run(int argc, char **argv, gg_context *ctx, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    for (int i = 1; i < argc; i++) /* ours, before GDAL answers with its version alone */
        if (EQUAL(argv[i], "--version") || EQUAL(argv[i], "--utility_version")) {
            gg_app_print_version(PROG);
            return 0;
        }
    GDALAllRegister();
    char **args = CSLDuplicate(argv);
    argc = GDALGeneralCmdLineProcessor(argc, &args, 0);
    if (argc < 1) {
        CSLDestroy(args);
        return argc == 0 ? 0 : 1;
    }
    ggw_options o;
    char msg[1024];
    const int parsed = ggw_parse_command_line(&o, argc, args, msg, sizeof msg);
    int rc = 0;
    if (parsed == GGW_CMD_ERROR) {
        rc = report(err, errlen, CPLSPrintf("%s (see --help)", msg));
    } else if (parsed == GGW_CMD_DONE || gg_app_parse_only) {
        rc = 0;
    } else if (o.rpc) {
        rc = run_rpc(&o, ctx, err, errlen);
    } else if (is_ggvrt(&o)) {
        ggw_scene w;
        memset(&w, 0, sizeof w);
        pthread_mutex_init(&w.mu, NULL);
        w.o = &o;
        w.dst_name = o.positional[CSLCount(o.positional) - 1];
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const int failed = write_ggvrt(&w);
        CPLPopErrorHandler();
        if (failed)
            rc = report(err, errlen, w.err[0] ? w.err : "failed");
        ggw_scene_free(&w);
        pthread_mutex_destroy(&w.mu);
    } else {
        gg_device_start dev;
        if (ctx)
            gg_device_start_given(&dev, NULL);
        else
            gg_device_start_begin(&dev, o.device);
        ggw_scene w;
        memset(&w, 0, sizeof w);
        pthread_mutex_init(&w.mu, NULL);
        w.o = &o;
        w.dst_name = o.positional[CSLCount(o.positional) - 1];
        /* GDAL's messages become the cause in ours: one line per failure */
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const int failed = warp_files(&w, ctx, &dev);
        CPLPopErrorHandler();
        if (failed)
            rc = report(err, errlen, w.err[0] ? w.err : "failed");
        ggw_scene_free(&w);
        pthread_mutex_destroy(&w.mu); /* sessions first, then the context */
        gg_device_start_end(&dev, 0);
    }
    ggw_options_free(&o);
    CSLDestroy(args);
    return rc;
}
