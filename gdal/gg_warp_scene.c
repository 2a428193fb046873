/*
 * gg_warp_scene.c -- the warp engine (gg_warp_scene.h): sources, gdalwarp's
 * transformer and output grid, and blocks of output rows on the device.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_warp_scene.h"
#include "gg_work_limit.h"
#include "gg_ortho_scene.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "gdal_alg.h"
#include "ogr_srs_api.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -et 0: the interpolation tolerance of the coordinate grid in source
 * pixels: the grid must reproduce the exact transform to well below
 * anything resampling can see. */
#define EXACT_TOL 1e-6

int ggw_fail(ggw_scene *w, const char *fmt, ...)
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

GDALDataType ggw_gdal_type(gg_type t)
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
static int output_crs(ggw_scene *w)
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
        return ggw_fail(w, "-t_srs '%s' is not understood", def);
    }
    OSRExportToWkt(srs, &w->dst_wkt);
    OSRDestroySpatialReference(srs);
    return 0;
}

static int open_sources(ggw_scene *w)
{
    char **pos = w->o->positional;
    w->nsrc = CSLCount(pos) - 1;
    w->src = calloc((size_t)w->nsrc, sizeof *w->src);
    if (!w->src)
        return ggw_fail(w, "out of memory");
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        ws->name = pos[s];
        ws->xscale = ws->yscale = 1.0;
        CPLErrorReset();
        ws->ds[0] = GDALOpen(ws->name, GA_ReadOnly);
        if (!ws->ds[0])
            return ggw_fail(w, "%s: cannot open: %s", ws->name, CPLGetLastErrorMsg());
        GDALDatasetH ds = ws->ds[0];
        ws->width = GDALGetRasterXSize(ds);
        ws->height = GDALGetRasterYSize(ds);
        const int nb = GDALGetRasterCount(ds);
        if (nb < 1)
            return ggw_fail(w, "%s: has no raster band", ws->name);
        const GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, 1));
        int cx = 0;
        const gg_type kt = kernel_type(t, &cx);
        if (!kt)
            return ggw_fail(w,
                        "%s: data type %s is not supported by gdal_warp (Byte, UInt16, Int16, "
                        "Float32, CInt16, CFloat32)",
                        ws->name, GDALGetDataTypeName(t));
        if (s == 0) {
            w->nbands = nb;
            w->kt_src = kt;
            w->complex = cx;
            w->dst_gdt = t;
        } else if (nb != w->nbands || kt != w->kt_src || cx != w->complex)
            return ggw_fail(w, "%s: has %d band(s) of %s, the first source %d of %s: sources must "
                           "match",
                        ws->name, nb, GDALGetDataTypeName(t), w->nbands,
                        GDALGetDataTypeName(w->dst_gdt));
    }
    w->nplanes = w->nbands * (w->complex ? 2 : 1);
    w->alpha = w->o->dstalpha;
    w->out_bands = w->nbands + w->alpha;
    if (w->alpha && w->complex)
        return ggw_fail(w, "-dstalpha: not for complex data (%s)", w->src[0].name);
    if (w->o->ot) {
        w->dst_gdt = GDALGetDataTypeByName(w->o->ot);
        if (GDALDataTypeIsComplex(w->dst_gdt) != w->complex)
            return ggw_fail(w, "-ot %s: a %s source is written as %s", w->o->ot,
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
static int set_nodata(ggw_scene *w)
{
    const int nb = w->nbands;
    double *snd = calloc((size_t)nb, sizeof(double)), *dnd = calloc((size_t)nb, sizeof(double));
    w->src_nd = calloc((size_t)w->nplanes, sizeof(double));
    w->dst_nd = calloc((size_t)w->nplanes, sizeof(double));
    if (!snd || !dnd || !w->src_nd || !w->dst_nd) {
        free(snd);
        free(dnd);
        return ggw_fail(w, "out of memory");
    }
    int given = nodata_list(w->o->srcnodata, nb, snd);
    int rc = 0;
    if (given < 0)
        rc = ggw_fail(w, "-srcnodata '%s': one number per band (or None)", w->o->srcnodata);
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
        rc = ggw_fail(w, "-dstnodata '%s': one number per band (or None)", w->o->dstnodata);
    /* with -dstalpha the alpha band says what has no value: the source's
     * nodata is not carried to the output (only -dstnodata is) */
    w->has_dstnd = dgiven > 0 || (!w->o->dstnodata && w->has_srcnd && !w->o->dstalpha);
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

/* gdalwarp's working type: the output's type widened to hold the nodata
 * values (GDALWarpResolveWorkingDataType, which looks at the output's
 * bands, not the source's).  Sources are read in it, so a Float32 source
 * written as Byte is resampled from Byte values, as gdalwarp does; a
 * working type the kernel does not take (Int32, Float64) becomes Float32.
 * Uncompressed GeoTIFF sources of that type are read directly. */
static void working_type(ggw_scene *w)
{
    if (!w->complex) {
        GDALDataType t = w->dst_gdt;
        for (int k = 0; k < w->nplanes; k++) {
            if (w->src_nd)
                t = GDALDataTypeUnionWithValue(t, w->src_nd[k], FALSE);
            if (w->has_dstnd)
                t = GDALDataTypeUnionWithValue(t, w->dst_nd[k], FALSE);
        }
        int cx;
        const gg_type kt = kernel_type(t, &cx);
        w->kt_src = kt ? kt : GG_FLOAT32;
    }
    for (int s = 0; s < w->nsrc && !w->complex; s++) {
        char why[256];
        (void)ggo_direct_open_source(w->src[s].name, w->src[s].width, w->src[s].height,
                                     w->nbands, ggw_gdal_type(w->kt_src), &w->src[s].direct, why,
                                     sizeof why);
    }
}

/* The transformers, once the output grid and the readers are known: one
 * per reader (and one for the worker), each output pixel -> source pixel;
 * each with a dataset handle of its own. */
static int make_transformers(ggw_scene *w)
{
    for (int s = 0; s < w->nsrc; s++)
        for (int r = 1; r <= w->readers; r++) {
            const int k = r == w->readers ? GGW_MAX_READERS : r;
            CPLErrorReset();
            w->src[s].ds[k] = GDALOpen(w->src[s].name, GA_ReadOnly);
            if (!w->src[s].ds[k])
                return ggw_fail(w, "%s: cannot open: %s", w->src[s].name, CPLGetLastErrorMsg());
        }
    for (int s = 0; s < w->nsrc; s++)
        for (int r = 0; r <= w->readers; r++) {
            const int k = r == w->readers ? GGW_MAX_READERS : r;
            CPLErrorReset();
            w->src[s].tr[k] = GDALCreateGenImgProjTransformer2(w->src[s].ds[k], NULL, w->to);
            if (!w->src[s].tr[k])
                return ggw_fail(w, "%s: cannot create the transformer: %s", w->src[s].name,
                            CPLGetLastErrorMsg());
            GDALSetGenImgProjTransformerDstGeoTransform(w->src[s].tr[k], w->gt);
        }
    return 0;
}

/* gdalwarp's output grid (GDALWarpCreateOutput): each source's
 * GDALSuggestedWarpOutput2, their union at the finest resolution, then
 * -te (-te_srs), -tr (-tap), -ts as gdalwarp applies them. */
static int output_grid(ggw_scene *w)
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
            return ggw_fail(w, "%s: cannot create the transformer: %s", w->src[s].name,
                        CPLGetLastErrorMsg());
        double gt[6], ext[4];
        int pw = 0, ph = 0;
        CPLErrorReset();
        const CPLErr e =
            GDALSuggestedWarpOutput2(w->src[s].ds[0], GDALGenImgProjTransform, tr, gt, &pw, &ph,
                                     ext, 0);
        GDALDestroyGenImgProjTransformer(tr);
        if (e != CE_None)
            return ggw_fail(w, "%s: cannot compute the output grid: %s", w->src[s].name,
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
                return ggw_fail(w, "-te_srs '%s': cannot transform -te into the output CRS",
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
        return ggw_fail(w, "the output grid is empty (check -te, -tr and -ts)");
    if (width > 1e9 || height > 1e9 || width * height > 1e12)
        return ggw_fail(w, "the output grid of %.0f x %.0f pixels is too large (check -tr, -ts and "
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
static int check_footprint(ggw_scene *w)
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
    return ggw_fail(w, "the output grid misses every source (check -te, -te_srs and -t_srs)");
}

void ggw_to_source(void *tr, int n, double *x, double *y, int *ok)
{
    double *z = calloc((size_t)n, sizeof(double));
    if (z)
        GDALGenImgProjTransform(tr, TRUE, n, x, y, z, ok);
    for (int i = 0; i < n; i++)
        if (!z || !ok[i] || !isfinite(x[i]) || !isfinite(y[i])) {
            ok[i] = 0;
            x[i] = y[i] = NAN;
        }
    free(z);
}

/* Source position of output position (px, py) through transformer tr;
 * 0 where it fails. */
static int to_source(void *tr, double px, double py, double *x, double *y)
{
    int ok = 0;
    *x = px;
    *y = py;
    ggw_to_source(tr, 1, x, y, &ok);
    return ok;
}

static int tr_to_source(void *tr, double px, double py, double *x, double *y)
{
    return to_source(tr, px, py, x, y);
}

/* The kernel scales gdalwarp uses for one chunk covering the output
 * (ggo_chunk_scales, gdal_ortho's). */
static void kernel_scales(ggw_scene *w, wsource *ws)
{
    double rw, rh;
    ggo_chunk_scales(tr_to_source, ws->tr[0], 0, 0, w->out_w, w->out_h, ws->width, ws->height,
                     &ws->xscale, &ws->yscale, &rw, &rh);
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

/* Average takes the output pixels' corners, the other methods their
 * centres (geogpu.h, GG_WARP_PIECE). */
static int corners(const ggw_scene *w)
{
    return w->o->resampling == GG_ORTHO_METHOD_AVERAGE;
}

/* The nodes of a block at step S: source pixel and line of output pixel
 * centres (corners), NaN where the transformer fails.  Returns 1 when
 * every node is finite, 0 when some failed, -1 out of memory. */
static int block_nodes(ggw_scene *w, void *tr, wpart *p, int y0, int rows, int S)
{
    const int c = corners(w);
    const double off = c ? 0.0 : 0.5;
    p->step = S;
    p->gnx = (w->out_w - 1 + c) / S + 4;
    p->gny = (rows - 1 + c) / S + 4;
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
            x[(size_t)j * p->gnx + i] = (i - 1) * (double)S + off;
            y[(size_t)j * p->gnx + i] = y0 + (j - 1) * (double)S + off;
            z[(size_t)j * p->gnx + i] = 0;
        }
    (void)z;
    ggw_to_source(tr, (int)n, x, y, ok);
    int all = 1;
    for (size_t i = 0; i < n; i++)
        if (!ok[i] || !isfinite(x[i]) || !isfinite(y[i])) {
            x[i] = y[i] = NAN;
            all = 0;
        }
    return all;
}

/* Interpolation error of a block's grid at 16 cell centres spread over it,
 * in source pixels (HUGE_VAL where a check point fails). */
static double grid_error(const ggw_scene *w, void *tr, const wpart *p, int y0, int rows)
{
    const int S = p->step;
    const size_t n = (size_t)p->gnx * p->gny;
    const double off = corners(w) ? 0.0 : 0.5;
    double err = 0;
    for (int t = 0; t < 16; t++) {
        const int ci = (int)((t % 4 + 0.5) * w->out_w / 4.0) / S;
        const int cj = (int)((t / 4 + 0.5) * rows / 4.0) / S;
        const double lx = ci * S + 0.5 * S, ly = cj * S + 0.5 * S;
        if (lx > w->out_w - 1 || ly > rows - 1)
            continue;
        double ex, ey;
        if (!to_source(tr, lx + off, y0 + ly + off, &ex, &ey))
            return HUGE_VAL;
        const double dx = interp(p->nodes, p->gnx, S, lx, ly) - ex;
        const double dy = interp(p->nodes + n, p->gnx, S, lx, ly) - ey;
        err = fmax(err, fmax(fabs(dx), fabs(dy)));
    }
    return err;
}

/* The coarsest grid whose interpolation stays within the tolerance; step
 * 1 (every pixel exact) where nodes fail or nothing coarser does. */
static int choose_grid(ggw_scene *w, void *tr, wpart *p, int y0, int rows)
{
    for (int S = GGW_STEP_MAX; S >= 1; S /= 2) {
        const int all = block_nodes(w, tr, p, y0, rows, S);
        if (all < 0)
            return ggw_fail(w, "out of memory for the coordinate grid");
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

static void block_window(const ggw_scene *w, const wsource *ws, wpart *p, int margin)
{
    double b[4] = {1e300, -1e300, 1e300, -1e300};
    if (p->step == 0) { /* row pieces: the ends of linear ones, every exact one */
        const size_t head = (size_t)p->gny + 1, npc = (size_t)p->nodes[p->gny];
        for (size_t k = 0; k < npc; k++) {
            const double *q = p->nodes + head + GG_WARP_PIECE * k;
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

static int first_margin(const ggw_scene *w, const wsource *ws, int step)
{
    const double s = fmin(fmin(ws->xscale, ws->yscale), 1.0);
    if (corners(w)) /* the footprint lies between the corners */
        return 2 + step / 2;
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
static int read_window(ggw_scene *w, wsource *ws, GDALDatasetH ds, wpart *p)
{
    const size_t ks = gg_type_size(w->kt_src);
    const size_t plane = (size_t)p->sw * p->sh;
    if (!grow(&p->src, &p->src_cap, plane * ks * w->nplanes))
        return ggw_fail(w, "out of memory for a source window");
    if (plane == 0)
        return 0;
    CPLErrorReset();
    CPLErr e;
    if (ws->direct) { /* whole rows: the window widened to the raster's width */
        p->sx0 = 0;
        p->sw = ws->width;
        const size_t band = (size_t)p->sw * p->sh * ks;
        if (!grow(&p->src, &p->src_cap, band * w->nplanes))
            return ggw_fail(w, "out of memory for a source window");
        char why[512];
        if (ggo_direct_read(ws->direct, p->sy0, p->sh, p->src, band, why, sizeof why))
            return ggw_fail(w, "reading '%s' failed: %s", ws->name, why);
        return 0;
    }
    if (!w->complex)
        e = GDALDatasetRasterIO(ds, GF_Read, p->sx0, p->sy0, p->sw, p->sh, p->src, p->sw, p->sh,
                                ggw_gdal_type(w->kt_src), w->nbands, NULL, 0, 0, 0);
    else {
        if (!grow(&p->cbuf, &p->cbuf_cap, plane * 8 * w->nbands))
            return ggw_fail(w, "out of memory for a source window");
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
        return ggw_fail(w, "reading '%s' failed: %s", ws->name, CPLGetLastErrorMsg());
    return 0;
}

/* The source's session; valid 1: the same resampling written as Float32
 * with NaN where a pixel gets no value (what -dstalpha's alpha band and
 * mosaics under it are made from: a value may equal any fill). */
static int make_session(ggw_scene *w, wsource *ws, int valid)
{
    gg_ortho_options oo;
    memset(&oo, 0, sizeof oo);
    oo.resampling = (gg_ortho_method)w->o->resampling;
    oo.height_scale = 1.0;
    oo.has_src_nodata = w->has_srcnd;
    oo.src_nodata = w->src_nd ? w->src_nd[0] : 0;
    oo.dst_init = valid ? NAN : w->dst_nd[0];
    oo.has_dst_nodata = valid ? 0 : w->has_dstnd;
    double *nan = valid ? malloc(sizeof(double) * w->nplanes) : NULL;
    if (valid && !nan)
        return ggw_fail(w, "out of memory");
    for (int k = 0; valid && k < w->nplanes; k++)
        nan[k] = NAN;
    gg_ortho_session **s = valid ? &ws->vsess : &ws->sess;
    const int rc =
        gg_ortho_session_create(w->ctx, NULL, NULL, &oo, s) != GG_OK ||
        gg_ortho_session_set_scale(*s, ws->xscale, ws->yscale) != GG_OK ||
        gg_ortho_session_set_bands(*s, w->nplanes, w->src_nd, valid ? nan : w->dst_nd,
                                   w->unified) != GG_OK;
    free(nan);
    return rc ? ggw_fail(w, "%s", gg_context_last_error(w->ctx)) : 0;
}

/* -dstalpha: the alpha plane after the bands, the type's maximum where
 * any band of the first source got a value (gdalwarp: 255 for Byte and
 * Float32, 65535 UInt16, 32767 Int16), else 0. */
static void alpha_plane(const ggw_scene *w, wslot *sl)
{
    const size_t plane = (size_t)w->out_w * sl->rows;
    const size_t ks = gg_type_size(w->kt_dst);
    const double top = w->kt_dst == GG_UINT16 ? 65535 : w->kt_dst == GG_INT16 ? 32767 : 255;
    char *a = (char *)sl->dst + (size_t)w->nplanes * plane * ks;
    for (size_t i = 0; i < plane; i++) {
        int any = 0;
        for (int k = 0; k < w->nplanes && !any; k++)
            any = !isnan(sl->valid[k * plane + i]);
        const double v = any ? top : 0;
        GDALCopyWords(&v, GDT_Float64, 0, a + i * ks, ggw_gdal_type(w->kt_dst), 0, 1);
    }
}

/* Where a later source has a sample, it replaces what the earlier ones
 * left (gdalwarp's mosaic: sources warped in order onto one output); with
 * -dstalpha where its validity plane has a value, and the alpha plane
 * gains it. */
static void composite(const ggw_scene *w, wslot *sl)
{
    const size_t plane = (size_t)w->out_w * sl->rows;
    const size_t ks = gg_type_size(w->kt_dst);
    const double top = w->kt_dst == GG_UINT16 ? 65535 : w->kt_dst == GG_INT16 ? 32767 : 255;
    char *a = (char *)sl->dst + (size_t)w->nplanes * plane * ks;
    for (int k = 0; k < w->nplanes; k++) {
        const double fill = w->dst_nd[k];
        const char *t = (const char *)sl->tmp + k * plane * ks;
        char *d = (char *)sl->dst + k * plane * ks;
        for (size_t i = 0; i < plane; i++) {
            double v;
            if (w->alpha) {
                if (isnan(sl->valid[k * plane + i]))
                    continue;
                GDALCopyWords(&top, GDT_Float64, 0, a + i * ks, ggw_gdal_type(w->kt_dst), 0, 1);
            } else {
                GDALCopyWords(t + i * ks, ggw_gdal_type(w->kt_dst), 0, &v, GDT_Float64, 0, 1);
                if (v == fill)
                    continue;
            }
            memcpy(d + i * ks, t + i * ks, ks);
        }
    }
}


int ggw_scene_setup(ggw_scene *w)
{
    w->tol = EXACT_TOL;
    w->to = transformer_options(w->o);
    if (open_sources(w) || output_crs(w) || set_nodata(w))
        return 1;
    working_type(w);
    if (output_grid(w))
        return 1;
    /* the work estimate before the device and the readers start, so that
     * a grid far larger than meant stops at once (gg_work_limit.h) */
    double read_bytes = 0;
    for (int s = 0; s < w->nsrc; s++)
        read_bytes += (double)w->src[s].width * w->src[s].height * w->nplanes *
                      (double)gg_type_size(w->kt_src);
    const double write_bytes = (double)w->out_w * w->out_h *
                               (w->nplanes + w->alpha) * (double)gg_type_size(w->kt_dst);
    char why[1024];
    if (gg_work_limit_check(CPLSPrintf("the output grid of %d x %d pixels (check -tr, -ts and "
                                       "-te)",
                                       w->out_w, w->out_h),
                            read_bytes, write_bytes, why, sizeof why))
        return ggw_fail(w, "%s", why);
    return 0;
}

int ggw_scene_readers(ggw_scene *w, int readers)
{
    w->readers = readers < 1 ? 1 : readers > GGW_MAX_READERS ? GGW_MAX_READERS : readers;
    if (make_transformers(w) || check_footprint(w))
        return 1;
    for (int s = 0; s < w->nsrc && w->o->resampling != GG_ORTHO_METHOD_NEAR; s++)
        kernel_scales(w, &w->src[s]);
    return 0;
}

/* Output block rows: about 64 MB of output per block, 16 to 1024 rows;
 * the same for gdal_warp and GG:warp, so that -et 0 grids are chosen over
 * the same blocks and the pixels are the same. */
void ggw_plan_rows(ggw_scene *w)
{
    const double row_bytes =
        (double)w->out_w * gg_type_size(w->kt_dst) * w->nplanes * (w->nsrc > 1 ? 2 : 1);
    double rows = 64.0 * 1048576.0 / fmax(row_bytes, 1.0);
    rows = fmax(16.0, fmin(rows, 1024.0));
    w->rows = rows > w->out_h ? w->out_h : (int)rows;
    w->items = (w->out_h + w->rows - 1) / w->rows;
}

int ggw_slot_alloc(ggw_scene *w, wslot *sl, int rows)
{
    const size_t ks = gg_type_size(w->kt_dst);
    const size_t plane = (size_t)w->out_w * rows;
    sl->part = calloc((size_t)w->nsrc, sizeof *sl->part);
    sl->dst = malloc(plane * ks * (w->nplanes + w->alpha));
    sl->tmp = w->nsrc > 1 ? malloc(plane * ks * w->nplanes) : NULL;
    sl->io = w->complex ? malloc(plane * 8 * w->nbands) : NULL;
    sl->valid = w->alpha ? malloc(plane * sizeof(float) * w->nplanes) : NULL;
    if (!sl->part || !sl->dst || (w->nsrc > 1 && !sl->tmp) || (w->complex && !sl->io) ||
        (w->alpha && !sl->valid))
        return ggw_fail(w, "out of memory for the output blocks");
    return 0;
}

static void slot_free(ggw_scene *w, wslot *sl)
{
    for (int s = 0; sl->part && s < w->nsrc; s++) {
        free(sl->part[s].nodes);
        free(sl->part[s].src);
        free(sl->part[s].cbuf);
    }
    free(sl->part);
    free(sl->dst);
    free(sl->tmp);
    free(sl->io);
    free(sl->valid);
    memset(sl, 0, sizeof *sl);
}

int ggw_read_rows(ggw_scene *w, int reader, wslot *sl)
{
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        wpart *p = &sl->part[s];
        if (w->o->et > 0) {
            if (ggw_row_pieces(w->o->et, ws->tr[reader], w->out_w, ws->width, ws->height,
                               corners(w), p, sl->y0, sl->rows))
                return ggw_fail(w, "out of memory for the coordinates");
        } else if (choose_grid(w, ws->tr[reader], p, sl->y0, sl->rows))
            return 1;
        block_window(w, ws, p, first_margin(w, ws, p->step));
        if (read_window(w, ws, ws->ds[reader], p))
            return 1;
    }
    return 0;
}

int ggw_compute_rows(ggw_scene *w, wslot *sl)
{
    const size_t plane = (size_t)w->out_w * sl->rows;
    for (int s = 0; s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        wpart *p = &sl->part[s];
        if ((!ws->sess && make_session(w, ws, 0)) ||
            (w->alpha && !ws->vsess && make_session(w, ws, 1)))
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
                return ggw_fail(w, "%s", gg_context_last_error(w->ctx));
            if (!missed)
                break;
            if (attempt == 2)
                return ggw_fail(w, "internal error: source window still too small");
            if (attempt == 0)
                block_window(w, ws, p, 64 + 4 * p->step);
            else {
                p->sx0 = p->sy0 = 0;
                p->sw = ws->width;
                p->sh = ws->height;
            }
            if (read_window(w, ws, ws->ds[GGW_MAX_READERS], p))
                return 1;
        }
        if (w->alpha) { /* the same taps: the window is large enough now */
            int missed = 0;
            const gg_ortho_image im = {p->src, w->kt_src, p->sx0, p->sy0, p->sw, p->sh,
                                       (size_t)p->sw, ws->width, ws->height};
            if (gg_ortho_session_run_bands(ws->vsess, &g, &im, w->nplanes, sl->valid,
                                           GG_FLOAT32, w->out_w, sl->rows, (size_t)w->out_w,
                                           plane, &missed) != GG_OK)
                return ggw_fail(w, "%s", gg_context_last_error(w->ctx));
            if (s == 0)
                alpha_plane(w, sl);
        }
        if (s > 0)
            composite(w, sl);
    }
    w->steps[sl->part[0].step]++;
    return 0;
}

void ggw_scene_free(ggw_scene *w)
{
    for (int k = 0; k < GGW_SLOTS; k++)
        slot_free(w, &w->slot[k]);
    for (int s = 0; w->src && s < w->nsrc; s++) {
        wsource *ws = &w->src[s];
        if (ws->sess)
            gg_ortho_session_destroy(ws->sess);
        if (ws->vsess)
            gg_ortho_session_destroy(ws->vsess);
        if (ws->direct)
            (void)ggo_direct_close(ws->direct, NULL, 0);
        for (int k = 0; k <= GGW_MAX_READERS; k++) {
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
    w->src = NULL;
    w->src_nd = w->dst_nd = NULL;
    w->to = NULL;
    w->dst_wkt = NULL;
}
