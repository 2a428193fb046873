/*
 * gg_warp.c -- gdal_warp as a function (gg_warp_run, geogpu_gdal.h): the
 * sources, GDAL's transformer with gdalwarp's options, gdalwarp's output
 * grid, and the read -> device -> write pipeline over blocks of output
 * rows (see gg_warp.h for the method).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu_gdal.h"
#include "gg_app.h"
#include "gg_input_files.h"
#include "gg_ortho_direct.h"
#include "gg_output.h"
#include "gg_pipeline.h"
#include "gg_warp.h"

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
#define MAX_READERS 3
#define SLOTS 3
/* -et 0: the coarsest grid step tried (output pixels), and the
 * interpolation tolerance in source pixels: the grid must reproduce the
 * exact transform to well below anything resampling can see. */
#define STEP_MAX 32
#define EXACT_TOL 1e-6

/* ------------------------------------------------------------ the job */

typedef struct wsource {
    const char *name;
    /* one handle and one transformer (output pixel -> source pixel) per
     * reader, and one for the device worker's wider re-reads */
    GDALDatasetH ds[MAX_READERS + 1];
    void *tr[MAX_READERS + 1];
    int width, height;
    double xscale, yscale;        /* resampling kernel stretch (GDAL's) */
    gg_ortho_session *sess;       /* the worker's */
    /* an uncompressed striped GeoTIFF of the kernel's type: read with
     * preads of whole rows (gg_ortho_direct.h), several readers at once */
    ggo_direct *direct;
} wsource;

/* One source's part of a block. */
typedef struct wpart {
    double *nodes;
    size_t nodes_cap;
    int gnx, gny, step;
    int sx0, sy0, sw, sh;         /* source window */
    void *src;                    /* nplanes planes of sw x sh, kernel type */
    size_t src_cap;
    void *cbuf;                   /* complex sources: the interleaved read */
    size_t cbuf_cap;
} wpart;

typedef struct wslot {
    int y0, rows;
    wpart *part;                  /* nsrc */
    void *dst, *tmp;              /* nplanes planes of out_w x rows, kernel type */
    void *io;                     /* complex outputs: the interleaved write */
} wslot;

typedef struct warp {
    const ggw_options *o;
    const char *dst_name;
    int nsrc;
    wsource *src;
    int nbands, nplanes, complex; /* a complex band is two planes, re and im */
    GDALDataType dst_gdt;
    gg_type kt_src, kt_dst;       /* kernel sample types */
    char **to;                    /* transformer options */
    char *dst_wkt;
    double gt[6];
    int out_w, out_h;
    int has_srcnd, unified, has_dstnd;
    double *src_nd, *dst_nd;      /* per plane; NULL without */
    double tol;
    int rows, items, readers;
    gg_context *ctx;
    GDALDatasetH out;
    ggo_direct *direct;           /* the output written with pwrite, or NULL: GDAL */
    wslot slot[SLOTS];
    int steps[STEP_MAX + 1];      /* blocks per grid step (-v) */
    pthread_mutex_t mu;
    char err[1024];
} warp;

static int fail(warp *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(warp *w, const char *fmt, ...)
{
    pthread_mutex_lock(&w->mu);
    if (!w->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&w->mu);
    return 1;
}

static int clamp_int(double v, int lo, int hi)
{
    return !(v >= lo) ? lo : v > hi ? hi : (int)v;
}

/* Kernel sample type of a file type; complex types become two Float32
 * planes.  0 for a type the kernel does not take. */
static gg_type kernel_type(GDALDataType t, int *complex)
{
    *complex = GDALDataTypeIsComplex(t);
    switch (t) {
    case GDT_Byte:
        return GG_BYTE;
    case GDT_UInt16:
        return GG_UINT16;
    case GDT_Int16:
        return GG_INT16;
    case GDT_Float32:
    case GDT_CInt16:
    case GDT_CFloat32:
        return GG_FLOAT32;
    default:
        return (gg_type)0;
    }
}

static GDALDataType gdal_type(gg_type t)
{
    return t == GG_BYTE ? GDT_Byte : t == GG_UINT16 ? GDT_UInt16 : t == GG_INT16 ? GDT_Int16
                                                                                : GDT_Float32;
}

/* ------------------------------------------------------ sources and grid */

static char **transformer_options(const ggw_options *o)
{
    char **to = CSLDuplicate(o->to);
    if (o->s_srs)
        to = CSLSetNameValue(to, "SRC_SRS", o->s_srs);
    if (o->t_srs)
        to = CSLSetNameValue(to, "DST_SRS", o->t_srs);
    if (o->order)
        to = CSLSetNameValue(to, "MAX_GCP_ORDER", CPLSPrintf("%d", o->order));
    if (o->tps)
        to = CSLSetNameValue(to, "METHOD", "GCP_TPS");
    if (o->geoloc)
        to = CSLSetNameValue(to, "METHOD", "GEOLOC_ARRAY");
    return to;
}

/* The output CRS as WKT: -t_srs, else the first source's (its own CRS, its
 * GCPs', or its geolocation arrays'), as gdalwarp. */
static int output_crs(warp *w)
{
    const char *def = w->o->t_srs ? w->o->t_srs : w->o->s_srs;
    GDALDatasetH ds = w->src[0].ds[0];
    if (!def) {
        const char *p = GDALGetProjectionRef(ds);
        if (p && *p && !w->o->geoloc && !w->o->tps && !w->o->order)
            def = p;
        else if (GDALGetGCPCount(ds) > 0 && !w->o->geoloc)
            def = GDALGetGCPProjection(ds);
        else
            def = GDALGetMetadataItem(ds, "SRS", "GEOLOCATION");
        if (!def || !*def)
            def = p;
    }
    if (!def || !*def)
        return 0; /* no CRS: pixel coordinates throughout, as gdalwarp */
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (OSRSetFromUserInput(srs, def) != OGRERR_NONE) {
        OSRDestroySpatialReference(srs);
        return fail(w, "-t_srs '%s' is not understood", def);
    }
    OSRExportToWkt(srs, &w->dst_wkt);
    OSRDestroySpatialReference(srs);
    return 0;
}

static int open_sources(warp *w)
{
    char **pos = w->o->positional;
    w->nsrc = CSLCount(pos) - 1;
    w->src = calloc((size_t)w->nsrc, sizeof *w->src);
    if (!w->src)
        return fail(w, "out of memory");
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        ws->name = pos[s];
        ws->xscale = ws->yscale = 1.0;
        CPLErrorReset();
        ws->ds[0] = GDALOpen(ws->name, GA_ReadOnly);
        if (!ws->ds[0])
            return fail(w, "%s: cannot open: %s", ws->name, CPLGetLastErrorMsg());
        GDALDatasetH ds = ws->ds[0];
        ws->width = GDALGetRasterXSize(ds);
        ws->height = GDALGetRasterYSize(ds);
        const int nb = GDALGetRasterCount(ds);
        if (nb < 1)
            return fail(w, "%s: has no raster band", ws->name);
        const GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, 1));
        int cx = 0;
        const gg_type kt = kernel_type(t, &cx);
        if (!kt)
            return fail(w,
                        "%s: data type %s is not supported by gdal_warp (Byte, UInt16, Int16, "
                        "Float32, CInt16, CFloat32)",
                        ws->name, GDALGetDataTypeName(t));
        if (s == 0) {
            w->nbands = nb;
            w->kt_src = kt;
            w->complex = cx;
            w->dst_gdt = t;
        } else if (nb != w->nbands || kt != w->kt_src || cx != w->complex)
            return fail(w, "%s: has %d band(s) of %s, the first source %d of %s: sources must "
                           "match",
                        ws->name, nb, GDALGetDataTypeName(t), w->nbands,
                        GDALGetDataTypeName(w->dst_gdt));
    }
    for (int s = 0; s < w->nsrc && !w->complex; s++) {
        char why[256];
        (void)ggo_direct_open_source(w->src[s].name, w->src[s].width, w->src[s].height,
                                     w->nbands, gdal_type(w->kt_src), &w->src[s].direct, why,
                                     sizeof why);
    }
    w->nplanes = w->nbands * (w->complex ? 2 : 1);
    if (w->o->ot) {
        w->dst_gdt = GDALGetDataTypeByName(w->o->ot);
        if (GDALDataTypeIsComplex(w->dst_gdt) != w->complex)
            return fail(w, "-ot %s: a %s source is written as %s", w->o->ot,
                        w->complex ? "complex" : "real", w->complex ? "CFloat32" : "a real type");
    }
    int dummy;
    w->kt_dst = w->complex ? GG_FLOAT32 : kernel_type(w->dst_gdt, &dummy);
    return 0;
}

/* Parses a gdalwarp nodata list ("1 2 3", or "None") into v (n values, the
 * last repeated).  0 = none, 1 = set, -1 = bad. */
static int nodata_list(const char *text, int n, double *v)
{
    if (!text || EQUAL(text, "None"))
        return 0;
    char **t = CSLTokenizeString2(text, " ,", 0);
    const int c = CSLCount(t);
    int ok = c >= 1;
    for (int k = 0; ok && k < n; k++) {
        const char *s = t[k < c ? k : c - 1];
        char *end = NULL;
        v[k] = CPLStrtod(s, &end);
        ok = end && end != s && !*end;
    }
    CSLDestroy(t);
    return ok ? 1 : -1;
}

/* Nodata as gdalwarp: -srcnodata's list, else the bands' own (-123456.789
 * for a band without one when another has one); the output's: -dstnodata,
 * else the source's.  A complex band's imaginary plane takes 0. */
static int set_nodata(warp *w)
{
    const int nb = w->nbands;
    double *snd = calloc((size_t)nb, sizeof(double)), *dnd = calloc((size_t)nb, sizeof(double));
    w->src_nd = calloc((size_t)w->nplanes, sizeof(double));
    w->dst_nd = calloc((size_t)w->nplanes, sizeof(double));
    if (!snd || !dnd || !w->src_nd || !w->dst_nd) {
        free(snd);
        free(dnd);
        return fail(w, "out of memory");
    }
    int given = nodata_list(w->o->srcnodata, nb, snd);
    int rc = 0;
    if (given < 0)
        rc = fail(w, "-srcnodata '%s': one number per band (or None)", w->o->srcnodata);
    if (!rc && given == 0 && !w->o->srcnodata)
        for (int k = 0; k < nb; k++) {
            int has = 0;
            const double v = GDALGetRasterNoDataValue(GDALGetRasterBand(w->src[0].ds[0], k + 1),
                                                      &has);
            snd[k] = has ? v : -123456.789;
            w->has_srcnd |= has;
        }
    else
        w->has_srcnd = given > 0;
    const int dgiven = rc ? 0 : nodata_list(w->o->dstnodata, nb, dnd);
    if (dgiven < 0)
        rc = fail(w, "-dstnodata '%s': one number per band (or None)", w->o->dstnodata);
    w->has_dstnd = dgiven > 0 || (!w->o->dstnodata && w->has_srcnd);
    for (int k = 0; k < nb && !rc; k++) {
        const double d = dgiven > 0 ? dnd[k] : w->has_srcnd ? snd[k] : 0.0;
        const int per = w->complex ? 2 : 1;
        for (int c = 0; c < per; c++) {
            w->src_nd[k * per + c] = c ? 0.0 : snd[k];
            w->dst_nd[k * per + c] = c ? 0.0 : d;
        }
    }
    free(snd);
    free(dnd);
    /* gdalwarp sets UNIFIED_SRC_NODATA=YES when -srcnodata is given */
    w->unified = w->nplanes > 1 && given > 0;
    const char *u = CSLFetchNameValue(w->o->wo, "UNIFIED_SRC_NODATA");
    if (u)
        w->unified = w->nplanes > 1 && EQUAL(u, "YES");
    if (!w->has_srcnd) {
        free(w->src_nd);
        w->src_nd = NULL;
    }
    return rc;
}

/* The transformers, once the output grid and the readers are known: one
 * per reader (and one for the worker), each output pixel -> source pixel;
 * each with a dataset handle of its own. */
static int make_transformers(warp *w)
{
    for (int s = 0; s < w->nsrc; s++)
        for (int r = 1; r <= w->readers; r++) {
            const int k = r == w->readers ? MAX_READERS : r;
            CPLErrorReset();
            w->src[s].ds[k] = GDALOpen(w->src[s].name, GA_ReadOnly);
            if (!w->src[s].ds[k])
                return fail(w, "%s: cannot open: %s", w->src[s].name, CPLGetLastErrorMsg());
        }
    for (int s = 0; s < w->nsrc; s++)
        for (int r = 0; r <= w->readers; r++) {
            const int k = r == w->readers ? MAX_READERS : r;
            CPLErrorReset();
            w->src[s].tr[k] = GDALCreateGenImgProjTransformer2(w->src[s].ds[k], NULL, w->to);
            if (!w->src[s].tr[k])
                return fail(w, "%s: cannot create the transformer: %s", w->src[s].name,
                            CPLGetLastErrorMsg());
            GDALSetGenImgProjTransformerDstGeoTransform(w->src[s].tr[k], w->gt);
        }
    return 0;
}

/* gdalwarp's output grid (GDALWarpCreateOutput): each source's
 * GDALSuggestedWarpOutput2, their union at the finest resolution, then
 * -te (-te_srs), -tr (-tap), -ts as gdalwarp applies them. */
static int output_grid(warp *w)
{
    const ggw_options *o = w->o;
    double minx = HUGE_VAL, miny = HUGE_VAL, maxx = -HUGE_VAL, maxy = -HUGE_VAL;
    double resx = HUGE_VAL, resy = HUGE_VAL, gt1[6] = {0};
    int w1 = 0, h1 = 0;
    const int need = !(o->has_te && (o->has_tr || o->has_ts));
    for (int s = 0; s < w->nsrc && need; s++) {
        CPLErrorReset();
        void *tr = GDALCreateGenImgProjTransformer2(w->src[s].ds[0], NULL, w->to);
        if (!tr)
            return fail(w, "%s: cannot create the transformer: %s", w->src[s].name,
                        CPLGetLastErrorMsg());
        double gt[6], ext[4];
        int pw = 0, ph = 0;
        CPLErrorReset();
        const CPLErr e =
            GDALSuggestedWarpOutput2(w->src[s].ds[0], GDALGenImgProjTransform, tr, gt, &pw, &ph,
                                     ext, 0);
        GDALDestroyGenImgProjTransformer(tr);
        if (e != CE_None)
            return fail(w, "%s: cannot compute the output grid: %s", w->src[s].name,
                        CPLGetLastErrorMsg());
        minx = fmin(minx, ext[0]);
        miny = fmin(miny, ext[1]);
        maxx = fmax(maxx, ext[2]);
        maxy = fmax(maxy, ext[3]);
        resx = fmin(resx, gt[1]);
        resy = fmin(resy, fabs(gt[5]));
        if (s == 0) {
            memcpy(gt1, gt, sizeof gt1);
            w1 = pw;
            h1 = ph;
        }
    }
    if (o->has_te) {
        minx = o->te[0];
        miny = o->te[1];
        maxx = o->te[2];
        maxy = o->te[3];
        if (o->te_srs && w->dst_wkt) {
            OGRSpatialReferenceH a = OSRNewSpatialReference(NULL), b = OSRNewSpatialReference(w->dst_wkt);
            OGRCoordinateTransformationH ct = NULL;
            if (OSRSetFromUserInput(a, o->te_srs) == OGRERR_NONE) {
                OSRSetAxisMappingStrategy(a, OAMS_TRADITIONAL_GIS_ORDER);
                OSRSetAxisMappingStrategy(b, OAMS_TRADITIONAL_GIS_ORDER);
                ct = OCTNewCoordinateTransformation(a, b);
            }
            const int ok = ct && OCTTransformBounds(ct, o->te[0], o->te[1], o->te[2], o->te[3],
                                                    &minx, &miny, &maxx, &maxy, 21);
            if (ct)
                OCTDestroyCoordinateTransformation(ct);
            OSRDestroySpatialReference(a);
            OSRDestroySpatialReference(b);
            if (!ok)
                return fail(w, "-te_srs '%s': cannot transform -te into the output CRS",
                            o->te_srs);
        }
    }
    double gt[6] = {minx, 0, 0, maxy, 0, 0};
    double width = 0, height = 0;
    if (o->has_tr) {
        const double xr = o->tr[0], yr = o->tr[1];
        if (o->tap) {
            minx = floor(minx / xr) * xr;
            maxx = ceil(maxx / xr) * xr;
            miny = floor(miny / yr) * yr;
            maxy = ceil(maxy / yr) * yr;
        }
        width = floor((maxx - minx + xr / 2.0) / xr);
        height = floor((maxy - miny + yr / 2.0) / yr);
        gt[0] = minx;
        gt[1] = xr;
        gt[3] = maxy;
        gt[5] = -yr;
    } else if (o->has_ts) {
        width = o->ts[0];
        height = o->ts[1];
        if (width == 0)
            width = floor(height * (maxx - minx) / (maxy - miny) + 0.5);
        if (height == 0)
            height = floor(width * (maxy - miny) / (maxx - minx) + 0.5);
        gt[0] = minx;
        gt[1] = (maxx - minx) / width;
        gt[3] = maxy;
        gt[5] = -(maxy - miny) / height;
    } else if (o->has_te) {
        width = floor((maxx - minx + resx / 2.0) / resx);
        height = floor((maxy - miny + resy / 2.0) / resy);
        gt[1] = (maxx - minx) / width;
        gt[5] = -(maxy - miny) / height;
    } else if (w->nsrc == 1) {
        memcpy(gt, gt1, sizeof gt);
        width = w1;
        height = h1;
    } else {
        width = floor((maxx - minx + resx / 2.0) / resx);
        height = floor((maxy - miny + resy / 2.0) / resy);
        gt[1] = resx;
        gt[5] = -resy;
    }
    if (!(width >= 1 && height >= 1))
        return fail(w, "the output grid is empty (check -te, -tr and -ts)");
    if (width > 1e9 || height > 1e9 || width * height > 1e12)
        return fail(w, "the output grid of %.0f x %.0f pixels is too large (check -tr, -ts and "
                       "-te)",
                    width, height);
    memcpy(w->gt, gt, sizeof gt);
    w->out_w = (int)width;
    w->out_h = (int)height;
    return 0;
}

static int to_source(void *tr, double px, double py, double *x, double *y);

/* The output grid must meet a source: 65 x 65 output points through each
 * transformer, at least one inside its raster (gdalwarp would write an
 * output of nodata alone). */
static int check_footprint(warp *w)
{
    enum { M = 65 };
    for (int s = 0; s < w->nsrc; s++)
        for (int j = 0; j < M; j++)
            for (int i = 0; i < M; i++) {
                double x, y;
                if (to_source(w->src[s].tr[0], (i + 0.5) * w->out_w / M, (j + 0.5) * w->out_h / M,
                              &x, &y) &&
                    x >= 0 && y >= 0 && x <= w->src[s].width && y <= w->src[s].height)
                    return 0;
            }
    return fail(w, "the output grid misses every source (check -te, -te_srs and -t_srs)");
}

/* Source position of output position (px, py) through transformer tr;
 * 0 where it fails. */
static int to_source(void *tr, double px, double py, double *x, double *y)
{
    double z = 0;
    int ok = 0;
    *x = px;
    *y = py;
    GDALGenImgProjTransform(tr, TRUE, 1, x, y, &z, &ok);
    return ok && isfinite(*x) && isfinite(*y);
}

/* The kernel scales gdalwarp uses for one chunk covering the output
 * (GDALWarpKernel::PerformWarp): the output size over the source window's,
 * which ComputeSourceWindow takes from 21 points along each edge (a 21 x 21
 * grid when an edge point fails), clipped to the raster; a reciprocal
 * within 0.05 of an integer n becomes 1 / n. */
static void kernel_scales(warp *w, wsource *ws)
{
    enum { N = 21 };
    ws->xscale = ws->yscale = 1.0;
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int pass = 0; pass < 2; pass++) {
        int failed = 0;
        xmin = ymin = 1e300;
        xmax = ymax = -1e300;
        for (int j = 0; j < N; j++)
            for (int i = 0; i < N; i++) {
                if (pass == 0 && i > 0 && i < N - 1 && j > 0 && j < N - 1)
                    continue;
                const double px = (double)i / (N - 1) * w->out_w;
                const double py = (double)j / (N - 1) * w->out_h;
                double x, y;
                if (!to_source(ws->tr[0], px, py, &x, &y)) {
                    failed++;
                    continue;
                }
                xmin = fmin(xmin, x);
                xmax = fmax(xmax, x);
                ymin = fmin(ymin, y);
                ymax = fmax(ymax, y);
            }
        if (!failed)
            break;
    }
    if (!(xmax > xmin && ymax > ymin))
        return;
    const double cx = floor(fmax(0.0, xmin)), cy = floor(fmax(0.0, ymin));
    const double rawx = fmax(0.0, fmin(ws->width - cx, xmax - xmin));
    const double rawy = fmax(0.0, fmin(ws->height - cy, ymax - ymin));
    double s[2] = {rawx > 0 ? w->out_w / rawx : 1.0, rawy > 0 ? w->out_h / rawy : 1.0};
    for (int k = 0; k < 2; k++)
        if (s[k] < 1.0) {
            const double r = 1.0 / s[k];
            const int n = clamp_int(r + 0.5, 0, 1 << 20);
            if (fabs(r - n) < 0.05)
                s[k] = 1.0 / n;
        }
    ws->xscale = s[0];
    ws->yscale = s[1];
}

/* ------------------------------------------------------------ one block */

/* Cubic Lagrange interpolation of a node plane at block pixel (x, y), as
 * the kernel does it. */
static double interp(const double *plane, int nx, int step, double x, double y)
{
    const int gx = (int)x / step, gy = (int)y / step;
    const double f[2] = {(x - gx * step) / step, (y - gy * step) / step};
    double wt[2][4];
    for (int a = 0; a < 2; a++) {
        const double t = f[a];
        wt[a][0] = -t * (t - 1.0) * (t - 2.0) / 6.0;
        wt[a][1] = (t + 1.0) * (t - 1.0) * (t - 2.0) / 2.0;
        wt[a][2] = -(t + 1.0) * t * (t - 2.0) / 2.0;
        wt[a][3] = (t + 1.0) * t * (t - 1.0) / 6.0;
    }
    double acc = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++)
            acc += wt[1][j] * wt[0][i] * plane[(size_t)(gy + j) * nx + gx + i];
    return acc;
}

/* The nodes of a block at step S: source pixel and line of output pixel
 * centres, NaN where the transformer fails.  Returns 1 when every node is
 * finite, 0 when some failed, -1 out of memory. */
static int block_nodes(warp *w, void *tr, wpart *p, int y0, int rows, int S)
{
    p->step = S;
    p->gnx = (w->out_w - 1) / S + 4;
    p->gny = (rows - 1) / S + 4;
    const size_t n = (size_t)p->gnx * p->gny;
    if (p->nodes_cap < n) {
        free(p->nodes);
        p->nodes = malloc(n * 2 * sizeof(double) + n * (sizeof(double) + sizeof(int)));
        p->nodes_cap = p->nodes ? n : 0;
        if (!p->nodes)
            return -1;
    }
    double *x = p->nodes, *y = p->nodes + n, *z = p->nodes + 2 * n;
    int *ok = (int *)(p->nodes + 3 * n);
    for (int j = 0; j < p->gny; j++)
        for (int i = 0; i < p->gnx; i++) {
            x[(size_t)j * p->gnx + i] = (i - 1) * (double)S + 0.5;
            y[(size_t)j * p->gnx + i] = y0 + (j - 1) * (double)S + 0.5;
            z[(size_t)j * p->gnx + i] = 0;
        }
    GDALGenImgProjTransform(tr, TRUE, (int)n, x, y, z, ok);
    int all = 1;
    for (size_t i = 0; i < n; i++)
        if (!ok[i] || !isfinite(x[i]) || !isfinite(y[i])) {
            x[i] = y[i] = NAN;
            all = 0;
        }
    return all;
}

/* ------------------------------------------- gdalwarp's approximate rows */

/* At -et > 0 gdalwarp's warp kernel transforms each output row of a chunk
 * through GDAL's approximate transformer (GDALApproxTransform): the exact
 * transform at the row's first, middle and last pixel centres; where the
 * middle is within -et (the sum of its x and y errors, source pixels) of
 * the line between the ends, every pixel of the row is on that line, else
 * the row is halved ([0, mid) and [mid, n)) and each half treated alike,
 * down to runs of 5 pixels or fewer, which are transformed exactly (as is
 * a run where an exact transform fails).  This reproduces those pieces for
 * a chunk as wide as the output, as row pieces for the device (geogpu.h,
 * grid step 0): gdalwarp's coordinates to the bit, a few exact transforms
 * per row instead of one per pixel. */
#define PIECE GG_WARP_PIECE /* doubles per row piece */

typedef struct rowpieces {
    void *tr;
    double y, et;
    int src_w, src_h;  /* the source raster (gdalwarp's one-chunk window) */
    double *pc;      /* pieces, PIECE doubles each */
    double *ex;      /* exact (x, y) pairs */
    size_t npc, cap_pc, nex, cap_ex;
    int oom;
} rowpieces;

static double *take(double **buf, size_t *n, size_t *cap, size_t more, int *oom)
{
    if (*n + more > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *n + more)
            c *= 2;
        double *b = realloc(*buf, c * sizeof(double));
        if (!b) {
            *oom = 1;
            return NULL;
        }
        *buf = b;
        *cap = c;
    }
    double *p = *buf + *n;
    *n += more;
    return p;
}

/* Exact transforms of pixel centres i0 + k + 0.5 (k < n) of the row: a
 * piece of positions one by one (NaN where the transform fails). */
static void exact_piece(rowpieces *rp, int i0, int n)
{
    double *q = take(&rp->pc, &rp->npc, &rp->cap_pc, PIECE, &rp->oom);
    double *e = take(&rp->ex, &rp->nex, &rp->cap_ex, 2 * (size_t)n, &rp->oom);
    int *ok = malloc(sizeof(int) * (size_t)n);
    double *z = calloc((size_t)n, sizeof(double));
    if (!q || !e || !ok || !z) {
        rp->oom = 1;
        free(ok);
        free(z);
        return;
    }
    q[0] = i0;
    q[1] = n;
    q[2] = i0;
    q[3] = (double)(e - rp->ex); /* made absolute when the table is laid out */
    q[4] = 0;
    q[5] = q[6] = NAN;
    /* x and y interleaved in e: transform through two scratch halves */
    double *x = malloc(sizeof(double) * 2 * (size_t)n);
    if (!x) {
        rp->oom = 1;
        free(ok);
        free(z);
        return;
    }
    double *y = x + n;
    for (int k = 0; k < n; k++) {
        x[k] = i0 + k + 0.5;
        y[k] = rp->y;
    }
    GDALGenImgProjTransform(rp->tr, TRUE, n, x, y, z, ok);
    for (int k = 0; k < n; k++) {
        const int good = ok[k] && isfinite(x[k]) && isfinite(y[k]);
        e[2 * k] = good ? x[k] : NAN;
        e[2 * k + 1] = good ? y[k] : NAN;
    }
    free(x);
    free(ok);
    free(z);
}

/* Pixels first .. first+n-1 of a linear piece whose pixel base is at
 * (x0, y0). */
static void emit_linear(rowpieces *rp, int first, int n, int base, double x0, double y0,
                        double dx, double dy)
{
    double *q = take(&rp->pc, &rp->npc, &rp->cap_pc, PIECE, &rp->oom);
    if (!q)
        return;
    q[0] = first;
    q[1] = n;
    q[2] = base;
    q[3] = x0;
    q[4] = y0;
    q[5] = dx;
    q[6] = dy;
}

/* Whether gdalwarp's warp kernel transforms pixel position (x, y) again
 * exactly (GWKCheckAndComputeSrcOffsets): an approximate position that
 * misses the source window by less than a pixel is retried alone. */
static int retried(const rowpieces *rp, double x, double y)
{
    if (isnan(x) || isnan(y))
        return 0;
    if (x < 0)
        return x > -1;
    if (y < 0)
        return y > -1;
    if (x + 1e-10 > rp->src_w || y + 1e-10 > rp->src_h)
        return x + 1e-10 < rp->src_w + 1 && y + 1e-10 < rp->src_h + 1;
    return 0;
}

/* Pixels k of a linear piece (value a + b * k) near the band lo .. hi:
 * [*k0, *k1], clipped to 0 .. n-1; empty when *k0 > *k1. */
static void band_pixels(double a, double b, double lo, double hi, int n, int *k0, int *k1)
{
    if (b == 0) {
        *k0 = a > lo - 1 && a < hi + 1 ? 0 : n;
        *k1 = n - 1;
        return;
    }
    const double u = (lo - a) / b, v = (hi - a) / b;
    const double kmin = floor(fmin(u, v)) - 2, kmax = ceil(fmax(u, v)) + 2;
    *k0 = kmin < 0 ? 0 : kmin > n ? n : (int)kmin;
    *k1 = kmax > n - 1 ? n - 1 : kmax < -1 ? -1 : (int)kmax;
}

/* A linear piece of the approximate transformer, split around the pixels
 * gdalwarp transforms again exactly. */
static void linear_piece(rowpieces *rp, int i0, int n, double x0, double y0, double dx,
                         double dy)
{
    /* candidates: near x = 0, x = width, y = 0, y = height */
    int lo[4], hi[4];
    band_pixels(x0, dx, -1, 0, n, &lo[0], &hi[0]);
    band_pixels(x0, dx, rp->src_w, rp->src_w + 1, n, &lo[1], &hi[1]);
    band_pixels(y0, dy, -1, 0, n, &lo[2], &hi[2]);
    band_pixels(y0, dy, rp->src_h, rp->src_h + 1, n, &lo[3], &hi[3]);
    int start = 0; /* first pixel not yet emitted */
    for (int k = 0; k < n; k++) {
        int cand = 0;
        for (int b = 0; b < 4 && !cand; b++)
            cand = k >= lo[b] && k <= hi[b];
        if (!cand) { /* skip to the next candidate range */
            int next = n;
            for (int b = 0; b < 4; b++)
                if (lo[b] > k && lo[b] <= hi[b] && lo[b] < next)
                    next = lo[b];
            k = next - 1;
            continue;
        }
        const double d = (double)k;
        if (!retried(rp, x0 + dx * d, y0 + dy * d))
            continue;
        int e = k + 1; /* a run of retried pixels */
        while (e < n && retried(rp, x0 + dx * (double)e, y0 + dy * (double)e))
            e++;
        if (k > start)
            emit_linear(rp, i0 + start, k - start, i0, x0, y0, dx, dy);
        exact_piece(rp, i0 + k, e - k);
        start = e;
        k = e - 1;
    }
    if (start < n)
        emit_linear(rp, i0 + start, n - start, i0, x0, y0, dx, dy);
}

/* Exact transforms of up to 3 pixel centres; 1 when all succeed. */
static int transform3(rowpieces *rp, int n, const int *i, double *x, double *y)
{
    double z[3] = {0, 0, 0};
    int ok[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) {
        x[k] = i[k] + 0.5;
        y[k] = rp->y;
    }
    GDALGenImgProjTransform(rp->tr, TRUE, n, x, y, z, ok);
    for (int k = 0; k < n; k++)
        if (!ok[k] || !isfinite(x[k]) || !isfinite(y[k]))
            return 0;
    return 1;
}

/* Pixels i0 .. i0+n-1 (n > 5) with the exact positions of the first,
 * middle ((n-1)/2) and last in sx, sy. */
static void approx_run(rowpieces *rp, int i0, int n, const double *sx, const double *sy)
{
    const int mid = (n - 1) / 2;
    const double span = (double)(n - 1);
    const double dx = (sx[2] - sx[0]) / span, dy = (sy[2] - sy[0]) / span;
    const double err = fabs((sx[0] + dx * mid) - sx[1]) + fabs((sy[0] + dy * mid) - sy[1]);
    if (!(err > rp->et)) {
        linear_piece(rp, i0, n, sx[0], sy[0], dx, dy);
        return;
    }
    const int nl = mid, nr = n - mid;
    const int base_l = nl <= 5, base_r = nr <= 5;
    int pts[3], m = 0;
    if (!base_l) {
        pts[m++] = i0 + (nl - 1) / 2;
        pts[m++] = i0 + nl - 1;
    }
    if (!base_r)
        pts[m++] = i0 + mid + (nr - 1) / 2;
    double mx[3], my[3];
    if (m > 0 && !transform3(rp, m, pts, mx, my)) {
        exact_piece(rp, i0, n);
        return;
    }
    if (base_l)
        exact_piece(rp, i0, nl);
    else {
        const double lx[3] = {sx[0], mx[0], mx[1]}, ly[3] = {sy[0], my[0], my[1]};
        approx_run(rp, i0, nl, lx, ly);
    }
    if (base_r)
        exact_piece(rp, i0 + mid, nr);
    else {
        const int k = base_l ? 0 : 2;
        const double rx[3] = {sx[1], mx[k], sx[2]}, ry[3] = {sy[1], my[k], sy[2]};
        approx_run(rp, i0 + mid, nr, rx, ry);
    }
}

/* The row pieces of a block (grid step 0).  0, or -1 out of memory. */
static int row_pieces(warp *w, void *tr, int src_w, int src_h, wpart *p, int y0, int rows)
{
    rowpieces rp = {.tr = tr, .et = w->o->et, .src_w = src_w, .src_h = src_h};
    size_t *first = malloc(sizeof(size_t) * ((size_t)rows + 1));
    if (!first)
        return -1;
    const int n = w->out_w;
    for (int r = 0; r < rows && !rp.oom; r++) {
        first[r] = rp.npc / PIECE;
        rp.y = y0 + r + 0.5;
        const int ends[3] = {0, (n - 1) / 2, n - 1};
        double sx[3], sy[3];
        if (n <= 5 || !transform3(&rp, 3, ends, sx, sy))
            exact_piece(&rp, 0, n);
        else
            approx_run(&rp, 0, n, sx, sy);
    }
    first[rows] = rp.npc / PIECE;
    const size_t head = (size_t)rows + 1, total = head + rp.npc + rp.nex;
    int rc = rp.oom ? -1 : 0;
    if (!rc && p->nodes_cap < total) {
        free(p->nodes);
        p->nodes = malloc(total * sizeof(double));
        p->nodes_cap = p->nodes ? total : 0;
        if (!p->nodes)
            rc = -1;
    }
    if (!rc) {
        for (int r = 0; r <= rows; r++)
            p->nodes[r] = (double)first[r];
        memcpy(p->nodes + head, rp.pc, rp.npc * sizeof(double));
        memcpy(p->nodes + head + rp.npc, rp.ex, rp.nex * sizeof(double));
        for (size_t k = 0; k < rp.npc / PIECE; k++) {
            double *q = p->nodes + head + PIECE * k;
            if (isnan(q[5]))
                q[3] += (double)(head + rp.npc);
        }
        p->step = 0;
        p->gnx = (int)total;
        p->gny = rows;
    }
    free(first);
    free(rp.pc);
    free(rp.ex);
    return rc;
}

/* Interpolation error of a block's grid at 16 cell centres spread over it,
 * in source pixels (HUGE_VAL where a check point fails). */
static double grid_error(const warp *w, void *tr, const wpart *p, int y0, int rows)
{
    const int S = p->step;
    const size_t n = (size_t)p->gnx * p->gny;
    double err = 0;
    for (int t = 0; t < 16; t++) {
        const int ci = (int)((t % 4 + 0.5) * w->out_w / 4.0) / S;
        const int cj = (int)((t / 4 + 0.5) * rows / 4.0) / S;
        const double lx = ci * S + 0.5 * S, ly = cj * S + 0.5 * S;
        if (lx > w->out_w - 1 || ly > rows - 1)
            continue;
        double ex, ey;
        if (!to_source(tr, lx + 0.5, y0 + ly + 0.5, &ex, &ey))
            return HUGE_VAL;
        const double dx = interp(p->nodes, p->gnx, S, lx, ly) - ex;
        const double dy = interp(p->nodes + n, p->gnx, S, lx, ly) - ey;
        err = fmax(err, fmax(fabs(dx), fabs(dy)));
    }
    return err;
}

/* The coarsest grid whose interpolation stays within the tolerance; step
 * 1 (every pixel exact) where nodes fail or nothing coarser does. */
static int choose_grid(warp *w, void *tr, wpart *p, int y0, int rows)
{
    for (int S = STEP_MAX; S >= 1; S /= 2) {
        const int all = block_nodes(w, tr, p, y0, rows, S);
        if (all < 0)
            return fail(w, "out of memory for the coordinate grid");
        if (S == 1 || (all && grid_error(w, tr, p, y0, rows) <= w->tol))
            return 0;
    }
    return 0;
}

/* The block's source window: the nodes' extent plus margin, clipped. */
static void extend(double x, double y, double *b)
{
    if (!isfinite(x) || !isfinite(y))
        return;
    b[0] = fmin(b[0], x);
    b[1] = fmax(b[1], x);
    b[2] = fmin(b[2], y);
    b[3] = fmax(b[3], y);
}

static void block_window(const warp *w, const wsource *ws, wpart *p, int margin)
{
    double b[4] = {1e300, -1e300, 1e300, -1e300};
    if (p->step == 0) { /* row pieces: the ends of linear ones, every exact one */
        const size_t head = (size_t)p->gny + 1, npc = (size_t)p->nodes[p->gny];
        for (size_t k = 0; k < npc; k++) {
            const double *q = p->nodes + head + PIECE * k;
            if (isnan(q[5]))
                for (int i = 0; i < (int)q[1]; i++)
                    extend(p->nodes[(size_t)q[3] + 2 * i], p->nodes[(size_t)q[3] + 2 * i + 1], b);
            else {
                const double d0 = q[0] - q[2], d1 = q[0] + q[1] - 1 - q[2];
                extend(q[3] + q[5] * d0, q[4] + q[6] * d0, b);
                extend(q[3] + q[5] * d1, q[4] + q[6] * d1, b);
            }
        }
    } else {
        const size_t n = (size_t)p->gnx * p->gny;
        for (size_t i = 0; i < n; i++)
            extend(p->nodes[i], p->nodes[n + i], b);
    }
    const double xmin = b[0], xmax = b[1], ymin = b[2], ymax = b[3];
    (void)w;
    p->sx0 = p->sy0 = p->sw = p->sh = 0;
    if (xmin > xmax || xmax < -margin || ymax < -margin || xmin > ws->width + margin ||
        ymin > ws->height + margin)
        return;
    const int x0 = clamp_int(floor(xmin) - margin, 0, ws->width);
    const int y0 = clamp_int(floor(ymin) - margin, 0, ws->height);
    const int x1 = clamp_int(ceil(xmax) + margin, 0, ws->width);
    const int y1 = clamp_int(ceil(ymax) + margin, 0, ws->height);
    p->sx0 = x0;
    p->sy0 = y0;
    p->sw = x1 > x0 ? x1 - x0 : 0;
    p->sh = y1 > y0 ? y1 - y0 : 0;
}

static int first_margin(const warp *w, const wsource *ws, int step)
{
    const double s = fmin(fmin(ws->xscale, ws->yscale), 1.0);
    const int reach = w->o->resampling == GG_ORTHO_METHOD_LANCZOS ? 3 : 2;
    return 2 + reach + step / 2 + clamp_int(ceil(reach / s), 0, 1 << 20);
}

static int grow(void **buf, size_t *cap, size_t bytes)
{
    if (*cap >= bytes)
        return 1;
    free(*buf);
    *buf = malloc(bytes ? bytes : 1);
    *cap = *buf ? bytes : 0;
    return *buf != NULL;
}

/* Reads the block's source window (all bands) through ds into kernel
 * planes.  0, or 1 after reporting. */
static int read_window(warp *w, wsource *ws, GDALDatasetH ds, wpart *p)
{
    const size_t ks = gg_type_size(w->kt_src);
    const size_t plane = (size_t)p->sw * p->sh;
    if (!grow(&p->src, &p->src_cap, plane * ks * w->nplanes))
        return fail(w, "out of memory for a source window");
    if (plane == 0)
        return 0;
    CPLErrorReset();
    CPLErr e;
    if (ws->direct) { /* whole rows: the window widened to the raster's width */
        p->sx0 = 0;
        p->sw = ws->width;
        const size_t band = (size_t)p->sw * p->sh * ks;
        if (!grow(&p->src, &p->src_cap, band * w->nplanes))
            return fail(w, "out of memory for a source window");
        char why[512];
        if (ggo_direct_read(ws->direct, p->sy0, p->sh, p->src, band, why, sizeof why))
            return fail(w, "reading '%s' failed: %s", ws->name, why);
        return 0;
    }
    if (!w->complex)
        e = GDALDatasetRasterIO(ds, GF_Read, p->sx0, p->sy0, p->sw, p->sh, p->src, p->sw, p->sh,
                                gdal_type(w->kt_src), w->nbands, NULL, 0, 0, 0);
    else {
        if (!grow(&p->cbuf, &p->cbuf_cap, plane * 8 * w->nbands))
            return fail(w, "out of memory for a source window");
        e = GDALDatasetRasterIO(ds, GF_Read, p->sx0, p->sy0, p->sw, p->sh, p->cbuf, p->sw, p->sh,
                                GDT_CFloat32, w->nbands, NULL, 0, 0, 0);
        for (int b = 0; e == CE_None && b < w->nbands; b++) {
            const float *c = (const float *)p->cbuf + 2 * plane * b;
            float *re = (float *)p->src + 2 * plane * b, *im = re + plane;
            for (size_t i = 0; i < plane; i++) {
                re[i] = c[2 * i];
                im[i] = c[2 * i + 1];
            }
        }
    }
    if (e != CE_None)
        return fail(w, "reading '%s' failed: %s", ws->name, CPLGetLastErrorMsg());
    return 0;
}

/* ------------------------------------------------------------ the pipeline */

static int pipe_read(void *user, int reader, int item, int slot)
{
    warp *w = user;
    wslot *sl = &w->slot[slot];
    sl->y0 = item * w->rows;
    sl->rows = w->out_h - sl->y0 < w->rows ? w->out_h - sl->y0 : w->rows;
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        wpart *p = &sl->part[s];
        if (w->o->et > 0) {
            if (row_pieces(w, ws->tr[reader], ws->width, ws->height, p, sl->y0, sl->rows))
                return fail(w, "out of memory for the coordinates");
        } else if (choose_grid(w, ws->tr[reader], p, sl->y0, sl->rows))
            return 1;
        block_window(w, ws, p, first_margin(w, ws, p->step));
        if (read_window(w, ws, ws->ds[reader], p))
            return 1;
    }
    return 0;
}

static int make_session(warp *w, wsource *ws)
{
    gg_ortho_options oo;
    memset(&oo, 0, sizeof oo);
    oo.resampling = (gg_ortho_method)w->o->resampling;
    oo.height_scale = 1.0;
    oo.has_src_nodata = w->has_srcnd;
    oo.src_nodata = w->src_nd ? w->src_nd[0] : 0;
    oo.dst_init = w->dst_nd[0];
    oo.has_dst_nodata = w->has_dstnd;
    if (gg_ortho_session_create(w->ctx, NULL, NULL, &oo, &ws->sess) != GG_OK ||
        gg_ortho_session_set_scale(ws->sess, ws->xscale, ws->yscale) != GG_OK ||
        gg_ortho_session_set_bands(ws->sess, w->nplanes, w->src_nd, w->dst_nd, w->unified) !=
            GG_OK)
        return fail(w, "%s", gg_context_last_error(w->ctx));
    return 0;
}

/* Where a later source has a sample, it replaces what the earlier ones
 * left (gdalwarp's mosaic: sources warped in order onto one output). */
static void composite(const warp *w, wslot *sl)
{
    const size_t plane = (size_t)w->out_w * sl->rows;
    const size_t ks = gg_type_size(w->kt_dst);
    for (int k = 0; k < w->nplanes; k++) {
        const double fill = w->dst_nd[k];
        const char *t = (const char *)sl->tmp + k * plane * ks;
        char *d = (char *)sl->dst + k * plane * ks;
        for (size_t i = 0; i < plane; i++) {
            double v;
            GDALCopyWords(t + i * ks, gdal_type(w->kt_dst), 0, &v, GDT_Float64, 0, 1);
            if (v != fill)
                memcpy(d + i * ks, t + i * ks, ks);
        }
    }
}

static int pipe_compute(void *user, int worker, int item, int slot)
{
    warp *w = user;
    wslot *sl = &w->slot[slot];
    (void)worker;
    (void)item;
    const size_t plane = (size_t)w->out_w * sl->rows;
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        wpart *p = &sl->part[s];
        if (!ws->sess && make_session(w, ws))
            return 1;
        void *out = s == 0 ? sl->dst : sl->tmp;
        const gg_ortho_grid g = {p->nodes, p->gnx, p->gny, p->step};
        for (int attempt = 0;; attempt++) {
            const gg_ortho_image im = {p->src, w->kt_src, p->sx0, p->sy0, p->sw, p->sh,
                                       (size_t)p->sw, ws->width, ws->height};
            int missed = 0;
            if (gg_ortho_session_run_bands(ws->sess, &g, &im, w->nplanes, out, w->kt_dst,
                                           w->out_w, sl->rows, (size_t)w->out_w, plane,
                                           &missed) != GG_OK)
                return fail(w, "%s", gg_context_last_error(w->ctx));
            if (!missed)
                break;
            if (attempt == 2)
                return fail(w, "internal error: source window still too small");
            if (attempt == 0)
                block_window(w, ws, p, 64 + 4 * p->step);
            else {
                p->sx0 = p->sy0 = 0;
                p->sw = ws->width;
                p->sh = ws->height;
            }
            if (read_window(w, ws, ws->ds[MAX_READERS], p))
                return 1;
        }
        if (s > 0)
            composite(w, sl);
    }
    w->steps[sl->part[0].step]++;
    return 0;
}

static int pipe_write(void *user, int item, int slot)
{
    warp *w = user;
    wslot *sl = &w->slot[slot];
    (void)item;
    const size_t plane = (size_t)w->out_w * sl->rows;
    if (w->direct) {
        char why[512];
        if (ggo_direct_write(w->direct, sl->y0, sl->rows, sl->dst, why, sizeof why))
            return fail(w, "writing '%s' failed: %s", w->dst_name, why);
        return 0;
    }
    CPLErrorReset();
    CPLErr e;
    if (!w->complex)
        e = GDALDatasetRasterIO(w->out, GF_Write, 0, sl->y0, w->out_w, sl->rows, sl->dst,
                                w->out_w, sl->rows, gdal_type(w->kt_dst), w->nbands, NULL, 0, 0,
                                0);
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
        return fail(w, "writing '%s' failed: %s", w->dst_name, CPLGetLastErrorMsg());
    return 0;
}

static int pipe_progress(void *user, int written, int items)
{
    warp *w = user;
    if (!w->o->quiet && !GDALTermProgress((double)written / items, NULL, NULL))
        return fail(w, "interrupted");
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

static int run_pipeline(warp *w)
{
    const size_t ks = gg_type_size(w->kt_dst);
    const size_t plane = (size_t)w->out_w * w->rows;
    for (int k = 0; k < SLOTS; k++) {
        wslot *sl = &w->slot[k];
        sl->part = calloc((size_t)w->nsrc, sizeof *sl->part);
        sl->dst = malloc(plane * ks * w->nplanes);
        sl->tmp = w->nsrc > 1 ? malloc(plane * ks * w->nplanes) : NULL;
        sl->io = w->complex ? malloc(plane * 8 * w->nbands) : NULL;
        if (!sl->part || !sl->dst || (w->nsrc > 1 && !sl->tmp) || (w->complex && !sl->io))
            return fail(w, "out of memory for the output blocks");
    }
    const gg_pipeline_job job = {.user = w,
                                 .items = w->items,
                                 .slots = SLOTS,
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
        return fail(w, "cannot start the pipeline's threads");
    return rc;
}

/* ------------------------------------------------------------ the output */

/* -of, else the driver of the destination's extension, else GTiff (as
 * gdalwarp). */
static GDALDriverH output_driver(warp *w)
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

static int create_output(warp *w, GDALDriverH drv, const char *tmp)
{
    CPLErrorReset();
    w->out = GDALCreate(drv, tmp, w->out_w, w->out_h, w->nbands, w->dst_gdt, w->o->co);
    if (!w->out)
        return fail(w, "cannot create '%s': %s", w->dst_name, CPLGetLastErrorMsg());
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
    return 0;
}

/* Output block rows: about 64 MB of output per block, at least 16 rows. */
static void plan_blocks(warp *w)
{
    const double row_bytes =
        (double)w->out_w * gg_type_size(w->kt_dst) * w->nplanes * (w->nsrc > 1 ? 2 : 1) +
        0.0;
    double rows = 64.0 * 1048576.0 / fmax(row_bytes, 1.0);
    rows = fmax(16.0, fmin(rows, 1024.0));
    w->rows = rows > w->out_h ? w->out_h : (int)rows;
    w->items = (w->out_h + w->rows - 1) / w->rows;
}

static void warp_free(warp *w)
{
    for (int k = 0; k < SLOTS; k++) {
        wslot *sl = &w->slot[k];
        for (int s = 0; sl->part && s < w->nsrc; s++) {
            free(sl->part[s].nodes);
            free(sl->part[s].src);
            free(sl->part[s].cbuf);
        }
        free(sl->part);
        free(sl->dst);
        free(sl->tmp);
        free(sl->io);
    }
    for (int s = 0; w->src && s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        if (ws->sess)
            gg_ortho_session_destroy(ws->sess);
        if (ws->direct)
            (void)ggo_direct_close(ws->direct, NULL, 0);
        for (int k = 0; k <= MAX_READERS; k++) {
            if (ws->tr[k])
                GDALDestroyGenImgProjTransformer(ws->tr[k]);
            if (ws->ds[k])
                GDALClose(ws->ds[k]);
        }
    }
    free(w->src);
    free(w->src_nd);
    free(w->dst_nd);
    CSLDestroy(w->to);
    CPLFree(w->dst_wkt);
    pthread_mutex_destroy(&w->mu);
}

/* The whole warp of o's sources into its destination on ctx. */
/* The device, started on a thread of its own while the sources and the
 * grid are set up (a CUDA context takes 0.3-0.5 s to start). */
typedef struct device_start {
    const char *device;
    pthread_t th;
    int started;
    gg_context *ctx;
    gg_status st;
    char why[512];
} device_start;

static void *device_main(void *arg)
{
    device_start *d = arg;
    d->st = gg_context_create(d->device, &d->ctx, d->why, sizeof d->why);
    return NULL;
}

static void device_begin(device_start *d, const char *device)
{
    memset(d, 0, sizeof *d);
    d->device = device;
    d->started = pthread_create(&d->th, NULL, device_main, d) == 0;
    if (!d->started)
        device_main(d);
}

static gg_context *device_wait(device_start *d)
{
    if (d->started)
        pthread_join(d->th, NULL);
    d->started = 0;
    return d->st == GG_OK ? d->ctx : NULL;
}

static int warp_files(warp *w, gg_context *given, device_start *dev)
{
    const ggw_options *o = w->o;
    w->tol = EXACT_TOL;
    w->to = transformer_options(o);
    if (open_sources(w) || output_crs(w) || set_nodata(w) || output_grid(w))
        return 1;
    gg_context *ctx = given ? given : device_wait(dev);
    if (!ctx)
        return fail(w, "cannot start the device: %s", dev->why);
    if (!given)
        gg_app_notice(PROG, o->quiet, gg_context_notice(ctx));
    w->ctx = ctx;
    w->readers = gg_pipeline_readers();
    if (!strcmp(gg_context_backend(ctx), "cpu"))
        w->readers = 1; /* the CPU backend's threads take every core */
    if (w->readers > MAX_READERS)
        w->readers = MAX_READERS;
    if (make_transformers(w) || check_footprint(w))
        return 1;
    for (int s = 0; s < w->nsrc && o->resampling != GG_ORTHO_METHOD_NEAR; s++)
        kernel_scales(w, &w->src[s]);
    plan_blocks(w);
    if (o->verbose)
        fprintf(stderr, "%s: output %d x %d, origin %.10g %.10g, pixel %.10g x %.10g; %d block(s) "
                        "of %d rows; device %s\n",
                PROG, w->out_w, w->out_h, w->gt[0], w->gt[3], w->gt[1], w->gt[5], w->items,
                w->rows, gg_context_device_name(ctx));

    /* the destination: checked against every input, written under a
     * temporary name, committed whole or not at all */
    gg_input_files *inputs = gg_input_files_new();
    if (!inputs)
        return fail(w, "out of memory");
    int rc = 0;
    for (int s = 0; s < w->nsrc && !rc; s++)
        if (gg_input_files_add_dataset(inputs, w->src[s].ds[0], w->src[s].name))
            rc = fail(w, "out of memory");
    char why[1024] = "";
    if (!rc && gg_input_files_check_output(inputs, "the destination", w->dst_name, why,
                                           sizeof why))
        rc = fail(w, "%s", why);
    gg_input_files_free(inputs);
    if (rc)
        return 1;
    VSIStatBufL st;
    if (!o->overwrite && VSIStatL(w->dst_name, &st) == 0)
        return fail(w, "'%s' exists: give -overwrite to replace it (gdal_warp does not warp "
                       "into an existing file)",
                    w->dst_name);
    GDALDriverH drv = output_driver(w);
    if (!drv)
        return fail(w, "-of %s: unknown format", o->of);
    if (!GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL))
        return fail(w, "-of %s: gdal_warp writes formats that can create files (GTiff, HFA, "
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
            ggo_direct_open(tmp, w->out_w, w->out_h, w->nbands, w->dst_gdt, &w->direct, why,
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
        rc = fail(w, "writing '%s' failed: %s", w->dst_name, why);
    w->direct = NULL;
    if (w->out) {
        CPLErrorReset();
        GDALClose(w->out);
        if (CPLGetLastErrorType() == CE_Failure && !rc)
            rc = fail(w, "writing '%s' failed: %s", w->dst_name, CPLGetLastErrorMsg());
    }
    w->out = NULL;
    if (!rc && gg_output_commit(drv, tmp, w->dst_name,
                                EQUAL(GDALGetDriverShortName(drv), "GTiff"), why, sizeof why))
        rc = fail(w, "%s", why);
    if (rc)
        gg_output_discard(drv, tmp);
    CPLFree(tmp);
    if (!rc && o->verbose) {
        fprintf(stderr, "%s: blocks by grid step:", PROG);
        for (int s = 0; s <= STEP_MAX; s++)
            if (w->steps[s])
                fprintf(stderr, " %s%d:%d", s ? "" : "row pieces ", s, w->steps[s]);
        fprintf(stderr, "\n");
    }
    return rc;
}

/* ------------------------------------------------------------ RPC sources */

/* -rpc: gdal_ortho's pipeline (the RPC model and the DEM on the device),
 * its command line made from gdalwarp's. */
static int run_rpc(const ggw_options *o, gg_context *ctx, char *err, size_t errlen)
{
    char **a = CSLAddString(NULL, "gdal_ortho");
    char msg[512] = "";
    if (CSLCount(o->positional) != 2)
        snprintf(msg, sizeof msg, "-rpc takes one source");
    /* -et is accepted: the RPC path evaluates the model at every pixel */
    if (o->te_srs || o->tap)
        snprintf(msg, sizeof msg, "-rpc does not take -te_srs or -tap");
    if (o->resampling > GG_ORTHO_METHOD_CUBIC)
        snprintf(msg, sizeof msg, "-rpc resamples with near, bilinear or cubic");
    static const char *const keys[][2] = {{"RPC_DEM", "-dem"},
                                          {"RPC_DEMINTERPOLATION", "-dem_interp"},
                                          {"RPC_DEM_MISSING_VALUE", "-dem_missing"},
                                          {"RPC_HEIGHT", "-rpc_height"},
                                          {"RPC_DEM_SRS", "-dem_srs"}};
    for (int i = 0; o->to && o->to[i] && !msg[0]; i++) {
        char *key = NULL;
        const char *v = CPLParseNameValue(o->to[i], &key);
        int found = 0;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0] && key && v; k++)
            if (EQUAL(key, keys[k][0])) {
                a = CSLAddString(a, keys[k][1]);
                a = CSLAddString(a, v);
                found = 1;
            }
        if (!found)
            snprintf(msg, sizeof msg, "-to %s: with -rpc gdal_warp takes RPC_DEM, "
                                      "RPC_DEMINTERPOLATION, RPC_DEM_MISSING_VALUE, RPC_HEIGHT "
                                      "and RPC_DEM_SRS",
                     o->to[i]);
        CPLFree(key);
    }
    if (msg[0]) {
        CSLDestroy(a);
        if (err)
            snprintf(err, errlen, "ERROR 1: %s: %s", PROG, msg);
        else
            fprintf(stderr, "ERROR 1: %s: %s\n", PROG, msg);
        return 1;
    }
    static const char *const methods[] = {"near", "bilinear", "cubic"};
    a = CSLAddString(a, "-r");
    a = CSLAddString(a, methods[o->resampling]);
    if (o->t_srs) {
        a = CSLAddString(a, "-t_srs");
        a = CSLAddString(a, o->t_srs);
    }
    if (o->has_tr) {
        a = CSLAddString(a, "-tr");
        for (int k = 0; k < 2; k++)
            a = CSLAddString(a, CPLSPrintf("%.17g", o->tr[k]));
    }
    if (o->has_te) {
        a = CSLAddString(a, "-te");
        for (int k = 0; k < 4; k++)
            a = CSLAddString(a, CPLSPrintf("%.17g", o->te[k]));
    }
    if (o->has_ts) {
        a = CSLAddString(a, "-ts");
        for (int k = 0; k < 2; k++)
            a = CSLAddString(a, CPLSPrintf("%d", o->ts[k]));
    }
    const char *pairs[][2] = {{"-ot", o->ot},          {"-srcnodata", o->srcnodata},
                              {"-dstnodata", o->dstnodata}, {"-of", o->of},
                              {"-device", o->device}};
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
    VSIStatBufL st;
    int rc;
    if (!o->overwrite && VSIStatL(o->positional[1], &st) == 0) {
        const char *m = CPLSPrintf("'%s' exists: give -overwrite to replace it", o->positional[1]);
        if (err)
            snprintf(err, errlen, "ERROR 1: %s: %s", PROG, m);
        else
            fprintf(stderr, "ERROR 1: %s: %s\n", PROG, m);
        rc = 1;
    } else
        rc = gg_ortho_run(CSLCount(a), a, ctx, err, errlen);
    CSLDestroy(a);
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
    } else {
        device_start dev;
        memset(&dev, 0, sizeof dev);
        if (!ctx)
            device_begin(&dev, o.device);
        warp w;
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
        warp_free(&w); /* sessions first, then the context */
        gg_context *own = ctx ? NULL : device_wait(&dev);
        if (own)
            gg_context_destroy(own);
    }
    ggw_options_free(&o);
    CSLDestroy(args);
    return rc;
}
