/*
 * gg_product_write.c -- a product to its file(s) through the pipeline
 * (gg_product_write.h).
 *
 * MIT licence.
 */
#include "gg_product_write.h"
#include "gg_output.h"
#include "gpu/pipeline.h"
#include "gg_processed.h"
#include "gpu/fault.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"

#include <math.h>
#include <string.h>

/* Strips in flight: one per reader, one on each device, one being
 * written; at most MAX_SLOTS. */
#define MAX_SLOTS 10

typedef struct job {
    GDALDatasetH *dss;
    int ndev, processed;    /* processed: dss are processed datasets (GGStrip) */
    GDALDatasetH *outs;     /* per band, or one dataset holding every band */
    int per_band, nb, W, H, rows;
    GDALDataType *types;    /* written type of each band */
    GGStrip *strips[MAX_SLOTS]; /* processed */
    void **bufs[MAX_SLOTS]; /* others: one plane per band */
    const gg_product_write_options *o;
    const char *dst;
} job;

static void thread_begin(void *user)
{
    const job *j = user;
    if (j->o->error_handler)
        CPLPushErrorHandlerEx(j->o->error_handler, j->o->error_handler_data);
}

static void thread_end(void *user)
{
    const job *j = user;
    if (j->o->error_handler)
        CPLPopErrorHandler();
}

static int read_strip(void *user, int reader, int item, int slot)
{
    job *j = user;
    if (j->processed)
        return GGStripRead(j->dss[0], j->strips[slot], item, reader) != CE_None;
    const int y = item * j->rows, h = y + j->rows > j->H ? j->H - y : j->rows;
    for (int b = 0; b < j->nb; b++) /* the product computes inside its reads */
        if (GDALRasterIO(GDALGetRasterBand(j->dss[0], b + 1), GF_Read, 0, y, j->W, h,
                         j->bufs[slot][b], j->W, h, j->types[b], 0, 0) != CE_None)
            return 1;
    return 0;
}

static int compute_strip(void *user, int worker, int item, int slot)
{
    (void)item;
    job *j = user;
    return GGStripCompute(j->dss[worker], j->strips[slot]) != CE_None;
}

/* The first +-Inf of a computed band (h rows of W samples; complex: 2W
 * numbers a row) that is not its nodata value, as its row, or -1.  An op
 * treats infinite inputs as invalid, so an infinite output is an overflow
 * of the band's type (a multilook of 3.4e38s sums past FLT_MAX), not a
 * value: written, it would pass for a result. */
static int first_inf_row(const void *data, GDALDataType type, int W, int h, double nodata,
                         int has_nodata)
{
    const int per_row = GDALDataTypeIsComplex(type) ? 2 * W : W;
    for (int y = 0; y < h; y++) {
        if (type == GDT_Float32 || type == GDT_CFloat32) {
            const float *r = (const float *)data + (size_t)y * per_row;
            for (int x = 0; x < per_row; x++)
                if (isinf(r[x]) && !(has_nodata && r[x] == nodata))
                    return y;
        } else if (type == GDT_Float64 || type == GDT_CFloat64) {
            const double *r = (const double *)data + (size_t)y * per_row;
            for (int x = 0; x < per_row; x++)
                if (isinf(r[x]) && !(has_nodata && r[x] == nodata))
                    return y;
        }
    }
    return -1;
}

static int write_strip(void *user, int item, int slot)
{
    job *j = user;
    for (int b = 0; b < j->nb; b++) {
        GDALRasterBandH ob = j->per_band ? GDALGetRasterBand(j->outs[b], 1)
                                         : GDALGetRasterBand(j->outs[0], b + 1);
        if (gg_fault_point("write")) { /* GG_FAULT=write:N (tests) */
            CPLError(CE_Failure, CPLE_FileIO, "writing the output failed: injected fault "
                                              "(GG_FAULT)");
            return 1;
        }
        int y0 = item * j->rows, h = y0 + j->rows > j->H ? j->H - y0 : j->rows;
        const void *data = j->bufs[slot] ? j->bufs[slot][b] : NULL;
        GDALDataType type = j->types[b];
        if (j->processed) {
            data = GGStripBand(j->strips[slot], b, &y0, &h);
            GDALRasterBandH band = GDALGetRasterBand(j->dss[0], b + 1);
            type = GDALGetRasterDataType(band);
            int has_nd = 0;
            const double nd = GDALGetRasterNoDataValue(band, &has_nd);
            const int row = first_inf_row(data, type, j->W, h, nd, has_nd);
            if (row >= 0) {
                const char *name = GDALGetDescription(band);
                CPLError(CE_Failure, CPLE_AppDefined,
                         "the product overflows %s: band %d%s%s%s is infinite at row %d from "
                         "finite inputs (values too large for the type); '%s' not written",
                         GDALGetDataTypeName(type), b + 1, *name ? " (" : "", name,
                         *name ? ")" : "", y0 + row, j->dst);
                return 1;
            }
        }
        if (GDALRasterIO(ob, GF_Write, 0, y0, j->W, h, (void *)data, j->W, h, type, 0, 0) !=
            CE_None)
            return 1;
    }
    /* The strip's blocks go to the file now, on this thread: left in
     * GDAL's block cache (5 % of the memory by default), the output would
     * be written by GDALClose at the end, after the pipeline, on one
     * thread.  Every band of the strip is in the cache first, so a
     * pixel-interleaved block is written once, whole. */
    for (int b = 0; b < j->nb; b++)
        if (GDALFlushRasterCache(j->per_band ? GDALGetRasterBand(j->outs[b], 1)
                                             : GDALGetRasterBand(j->outs[0], b + 1)) != CE_None)
            return 1;
    return 0;
}

static int progress(void *user, int written, int items)
{
    const job *j = user;
    if (!j->o->progress || j->o->progress((double)written / items, "", j->o->progress_arg))
        return 1;
    CPLError(CE_Failure, CPLE_UserInterrupt, "interrupted");
    return 0;
}

int gg_product_write_supported(GDALDriverH driver)
{
    return driver && GDALGetMetadataItem(driver, GDAL_DCAP_CREATE, NULL) &&
           !EQUAL(GDALGetDriverShortName(driver), "VRT");
}

/* The output file f (of nfiles) under its temporary name, georeferenced,
 * with the product's metadata, band descriptions and nodata. */
static GDALDatasetH create_file(const job *j, GDALDatasetH ds, int f, const char *tmp)
{
    const int b0 = j->per_band ? f : 0, b1 = j->per_band ? f + 1 : j->nb;
    GDALDatasetH out = GDALCreate(j->o->driver, tmp, j->W, j->H, b1 - b0, j->types[b0],
                                  j->o->creation_options);
    if (!out)
        return NULL;
    double gt[6];
    if (GDALGetGeoTransform(ds, gt) == CE_None)
        GDALSetGeoTransform(out, gt);
    const char *wkt = GDALGetProjectionRef(ds);
    if (wkt && *wkt)
        GDALSetProjection(out, wkt);
    char **md = GDALGetMetadata(ds, NULL);
    if (md)
        GDALSetMetadata(out, md, NULL);
    for (int b = b0; b < b1; b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
        GDALRasterBandH ob = GDALGetRasterBand(out, b - b0 + 1);
        int has_nd = 0;
        const double nd = GDALGetRasterNoDataValue(band, &has_nd);
        if (has_nd)
            GDALSetRasterNoDataValue(ob, nd);
        GDALSetDescription(ob, GDALGetDescription(band));
        const char *unit = GDALGetRasterUnitType(band);
        if (unit && *unit)
            GDALSetRasterUnitType(ob, unit);
        char **band_md = GDALGetMetadata(band, NULL);
        if (band_md)
            GDALSetMetadata(ob, band_md, NULL);
        int has_offset = 0, has_scale = 0;
        const double offset = GDALGetRasterOffset(band, &has_offset);
        const double scale = GDALGetRasterScale(band, &has_scale);
        if (has_offset && offset != 0.0)
            GDALSetRasterOffset(ob, offset);
        if (has_scale && scale != 1.0)
            GDALSetRasterScale(ob, scale);
        const GDALColorInterp ci = GDALGetRasterColorInterpretation(band);
        if (ci != GCI_Undefined && ci != GDALGetRasterColorInterpretation(ob))
            GDALSetRasterColorInterpretation(ob, ci);
    }
    return out;
}

char **gg_product_write_names(GDALDatasetH ds, const char *dst,
                              const gg_product_write_options *o)
{
    if (!o->per_band)
        return CSLAddString(NULL, dst);
    char **finals = NULL;
    char *path = CPLStrdup(CPLGetPath(dst)), *stem = CPLStrdup(CPLGetBasename(dst));
    char *ext = CPLStrdup(CPLGetExtension(dst));
    for (int f = 0; f < GDALGetRasterCount(ds); f++) {
        const char *name = GDALGetDescription(GDALGetRasterBand(ds, f + 1));
        const char *leaf = CPLSPrintf("%s_%s", stem, *name ? name : CPLSPrintf("band%d", f + 1));
        const int elsewhere = o->band_prefix &&
                              !strncmp(name, o->band_prefix, strlen(o->band_prefix));
        finals = CSLAddString(finals, CPLFormFilename(elsewhere ? o->band_folder : path, leaf,
                                                      *ext ? ext : NULL));
    }
    CPLFree(path);
    CPLFree(stem);
    CPLFree(ext);
    return finals;
}

int gg_product_write(GDALDatasetH *dss, int ndev, const char *dst,
                     const gg_product_write_options *o)
{
    GDALDatasetH ds = dss[0];
    job j = {.dss = dss, .ndev = ndev, .o = o, .per_band = o->per_band, .dst = dst};
    j.processed = GGDatasetStripCount(ds) > 0;
    if (!j.processed)
        j.ndev = 1;
    j.nb = GDALGetRasterCount(ds);
    j.W = GDALGetRasterXSize(ds);
    j.H = GDALGetRasterYSize(ds);
    const int nfiles = j.per_band ? j.nb : 1;
    j.outs = CPLCalloc((size_t)nfiles, sizeof *j.outs);
    j.types = CPLCalloc((size_t)j.nb, sizeof *j.types);
    for (int b = 0; b < j.nb; b++)
        j.types[b] = o->type != GDT_Unknown ? o->type
                                            : GDALGetRasterDataType(GDALGetRasterBand(ds, b + 1));
    char **finals = gg_product_write_names(ds, dst, o), **tmps = NULL;
    gg_output_set *set = o->set ? o->set : gg_output_set_new();
    int rc = 0;
    for (int f = 0; f < nfiles && !rc; f++) {
        const char *tmp = set ? gg_output_set_add(set, finals[f], NULL) : NULL;
        if (!tmp) {
            CPLError(CE_Failure, CPLE_OutOfMemory, "out of memory");
            rc = 1;
            break;
        }
        tmps = CSLAddString(tmps, tmp);
        j.outs[f] = create_file(&j, ds, f, tmps[f]);
        if (!j.outs[f]) {
            CPLError(CE_Failure, CPLE_FileIO, "cannot create '%s'", finals[f]);
            rc = 1;
        }
    }

    int items = 0;
    if (j.processed) {
        items = GGDatasetStripCount(ds);
    } else {
        int bx = 0, by = 0;
        GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
        j.rows = by > 0 ? by : 1;
        items = (j.H + j.rows - 1) / j.rows;
    }
    /* A processed dataset's strips are read by several readers at once,
     * other products (which compute inside their reads) by one; so are
     * strips computed on the CPU backend, whose threads take every core
     * (gdal_rotate -device cpu, 8192^2 on 16 cores: 1.40 s with three
     * readers, 1.08 s with one; bench/RESULTS.md, 2026-11-28). */
    int on_cpu = 0; /* asked without waiting for a device that starts in the background */
    for (int k = 0; k < j.ndev; k++)
        on_cpu |= !strcmp(GGDatasetBackend(dss[k]), "cpu");
    const int readers = j.processed && !on_cpu ? gg_pipeline_readers() : 1;
    const int want = readers + j.ndev + 1;
    const int slots = want < 3 ? 3 : want > MAX_SLOTS ? MAX_SLOTS : want;
    for (int s = 0; s < slots && !rc; s++) {
        if (j.processed) {
            rc = !(j.strips[s] = GGStripCreate());
            continue;
        }
        j.bufs[s] = CPLCalloc((size_t)j.nb, sizeof *j.bufs[s]);
        for (int b = 0; b < j.nb && !rc; b++)
            rc = !(j.bufs[s][b] = VSIMalloc3((size_t)j.W, (size_t)j.rows,
                                             (size_t)GDALGetDataTypeSizeBytes(j.types[b])));
        if (rc)
            CPLError(CE_Failure, CPLE_OutOfMemory, "out of memory for a %dx%d strip", j.W,
                     j.rows);
    }
    if (!rc) {
        const gg_pipeline_job pj = {.user = &j, .items = items, .slots = slots, .readers = readers,
                                    .workers = j.ndev, .read = read_strip,
                                    .compute = j.processed ? compute_strip : NULL,
                                    .write = write_strip, .progress = progress,
                                    .thread_begin = thread_begin, .thread_end = thread_end};
        rc = gg_pipeline_run(&pj);
        if (rc < 0)
            CPLError(CE_Failure, CPLE_OutOfMemory, "cannot start the pipeline's threads");
        rc = rc != 0;
    }
    for (int f = 0; f < nfiles; f++)
        if (j.outs[f]) {
            const GUInt32 before = CPLGetErrorCounter();
            GDALClose(j.outs[f]); /* flushes: errors while writing show up here */
            if (CPLGetErrorCounter() != before && CPLGetLastErrorType() >= CE_Failure)
                rc = 1;
        }
    if (!rc && !o->set) {
        char why[2048];
        if (gg_output_set_commit(set, why, sizeof why)) {
            CPLError(CE_Failure, CPLE_FileIO, "%s", why);
            rc = 1;
        }
    }
    if (!o->set)
        gg_output_set_free(set); /* removes what a failure left */
    for (int s = 0; s < MAX_SLOTS; s++) {
        GGStripFree(j.strips[s]);
        for (int b = 0; j.bufs[s] && b < j.nb; b++)
            VSIFree(j.bufs[s][b]);
        CPLFree(j.bufs[s]);
    }
    CPLFree(j.outs);
    CPLFree(j.types);
    CSLDestroy(finals);
    CSLDestroy(tmps);
    return rc;
}
