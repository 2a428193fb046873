/*
 * gg_ortho_scene.c -- the GDAL side of RPC orthorectification (see
 * gg_ortho_scene.h), shared by gdal_ortho and the GG driver's GG:ortho:
 * datasets so that both compute the same grid, windows and pixels.
 *
 * Everything that needs GDAL/PROJ is here: RPCs from wherever GDAL finds
 * them, the output grid gdalwarp would choose (GDALSuggestedWarpOutput2
 * with the same RPC transformer), the DEM window, and per block of output
 * rows a grid of exact coordinates (output CRS -> lon/lat with PROJ, lon/lat
 * -> DEM CRS with the vertical datum shift) every `step` pixels; the device
 * interpolates that grid (4x4 cubic Lagrange, error checked below 1e-6
 * source px per scene) and does DEM sampling, RFM and resampling.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_scene.h"
#include "gg_work_limit.h"
#include "gpu/fault.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal_alg.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The host allocations of the scene set-up and of its blocks: malloc and
 * calloc, failing on GG_FAULT=hostalloc:N (tests) as when memory runs out,
 * so that every caller's "out of memory" path is run (an unchecked one
 * crashed gdal_ortho and GG:ortho: under ulimit -v). */
static void *host_alloc(size_t n)
{
    return gg_fault_point("hostalloc") ? NULL : malloc(n);
}

static void *host_calloc(size_t n, size_t size)
{
    return gg_fault_point("hostalloc") ? NULL : calloc(n, size);
}

/* (int)v for a double that may be huge or NaN (corrupt metadata, a
 * diverging model): clamped into [lo, hi] first, NaN gives lo. */
static int clamp_int(double v, int lo, int hi)
{
    return !(v > lo) ? lo : v < hi ? (int)v : hi;
}

/* Keeps the first error line of the scene; returns 1. */
static int ggo_fail(ggo_scene *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ggo_fail(ggo_scene *sc, const char *fmt, ...)
{
    if (sc->err[0])
        return 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->err, sizeof sc->err, fmt, ap);
    va_end(ap);
    return 1;
}

int ggo_parse_method(const char *s, int *out)
{
    if (EQUAL(s, "near") || EQUAL(s, "nearest"))
        *out = GG_ORTHO_METHOD_NEAR;
    else if (EQUAL(s, "bilinear"))
        *out = GG_ORTHO_METHOD_BILINEAR;
    else if (EQUAL(s, "cubic"))
        *out = GG_ORTHO_METHOD_CUBIC;
    else
        return 0;
    return 1;
}

const char *const ggo_method_names[3] = {"near", "bilinear", "cubic"};

/* ------------------------------------------------------------ the scene */



/* The sample type gdal_ortho computes a GDAL type in: Byte, UInt16 and
 * Int16 as they are, anything else as Float32. */
static gg_type ggo_type_of(GDALDataType t)
{
    switch (t) {
    case GDT_Byte: return GG_BYTE;
    case GDT_UInt16: return GG_UINT16;
    case GDT_Int16: return GG_INT16;
    default: return GG_FLOAT32;
    }
}

GDALDataType ggo_to_gdal_type(gg_type t)
{
    return t == GG_BYTE ? GDT_Byte : t == GG_UINT16 ? GDT_UInt16 : t == GG_INT16 ? GDT_Int16
                                                                            : GDT_Float32;
}

static const char *const rpc_keys[] = {"LINE_OFF",       "SAMP_OFF",       "LAT_OFF",
                                       "LONG_OFF",       "HEIGHT_OFF",     "LINE_SCALE",
                                       "SAMP_SCALE",     "LAT_SCALE",      "LONG_SCALE",
                                       "HEIGHT_SCALE",   "LINE_NUM_COEFF", "LINE_DEN_COEFF",
                                       "SAMP_NUM_COEFF", "SAMP_DEN_COEFF", NULL};

/* RPCs from wherever GDAL finds them (TIFF tag, _RPC.TXT, .RPB, DIMAP, NITF,
 * the RPC metadata domain). */
static int read_rpc(ggo_scene *sc)
{
    char **md = GDALGetMetadata(sc->src, "RPC");
    if (!md || !CSLCount(md))
        return ggo_fail(sc, "no RPCs (no RPC metadata, _RPC.TXT, .RPB or DIMAP found)");
    for (int i = 0; rpc_keys[i]; i++) {
        const char *v = CSLFetchNameValue(md, rpc_keys[i]);
        if (!v)
            return ggo_fail(sc, "RPC %s is missing", rpc_keys[i]);
        if (strstr(rpc_keys[i], "COEFF")) {
            char **t = CSLTokenizeString2(v, " ,", 0);
            const int n = CSLCount(t);
            CSLDestroy(t);
            if (n != 20)
                return ggo_fail(sc, "RPC %s has %d coefficients, 20 expected",
                            rpc_keys[i], n);
        }
    }
    GDALRPCInfoV2 info;
    if (!GDALExtractRPCInfoV2(md, &info))
        return ggo_fail(sc, "RPC metadata could not be parsed");
    gg_ortho_rpc *r = &sc->rpc;
    r->line_off = info.dfLINE_OFF;
    r->samp_off = info.dfSAMP_OFF;
    r->lat_off = info.dfLAT_OFF;
    r->long_off = info.dfLONG_OFF;
    r->height_off = info.dfHEIGHT_OFF;
    r->line_scale = info.dfLINE_SCALE;
    r->samp_scale = info.dfSAMP_SCALE;
    r->lat_scale = info.dfLAT_SCALE;
    r->long_scale = info.dfLONG_SCALE;
    r->height_scale = info.dfHEIGHT_SCALE;
    memcpy(r->line_num, info.adfLINE_NUM_COEFF, sizeof r->line_num);
    memcpy(r->line_den, info.adfLINE_DEN_COEFF, sizeof r->line_den);
    memcpy(r->samp_num, info.adfSAMP_NUM_COEFF, sizeof r->samp_num);
    memcpy(r->samp_den, info.adfSAMP_DEN_COEFF, sizeof r->samp_den);
    return 0;
}

static OGRSpatialReferenceH srs_from(const char *def)
{
    OGRSpatialReferenceH s = OSRNewSpatialReference(NULL);
    if (OSRSetFromUserInput(s, def) != OGRERR_NONE) {
        OSRDestroySpatialReference(s);
        return NULL;
    }
    OSRSetAxisMappingStrategy(s, OAMS_TRADITIONAL_GIS_ORDER);
    return s;
}

/* The transformer options gdalwarp would get for this run. */
static char **transformer_options(const ggo_scene *sc, const char *dst_wkt)
{
    const ggo_options *o = sc->o;
    char **to = NULL;
    to = CSLSetNameValue(to, "METHOD", "RPC");
    if (o->dem) {
        to = CSLSetNameValue(to, "RPC_DEM", o->dem);
        to = CSLSetNameValue(to, "RPC_DEMINTERPOLATION", ggo_method_names[o->dem_interp]);
    }
    if (o->has_dem_missing)
        to = CSLSetNameValue(to, "RPC_DEM_MISSING_VALUE", CPLSPrintf("%.17g", o->dem_missing));
    if (o->rpc_height != 0)
        to = CSLSetNameValue(to, "RPC_HEIGHT", CPLSPrintf("%.17g", o->rpc_height));
    if (o->dem_srs)
        to = CSLSetNameValue(to, "RPC_DEM_SRS", o->dem_srs);
    if (dst_wkt)
        to = CSLSetNameValue(to, "DST_SRS", dst_wkt);
    return to;
}

/* DEM: its CRS, the WGS84 -> DEM transformation (with the vertical datum
 * when the CRS has one: geoid heights become ellipsoidal), the geoid check. */
static int open_dem(ggo_scene *sc)
{
    const ggo_options *o = sc->o;
    if (!o->dem)
        return 0;
    sc->dem = GDALOpen(o->dem, GA_ReadOnly);
    if (!sc->dem)
        return ggo_fail(sc, "cannot open DEM %s", o->dem);
    double gt[6];
    if (GDALGetGeoTransform(sc->dem, gt) != CE_None)
        return ggo_fail(sc, "DEM %s has no geotransform", o->dem);
    if (!GDALInvGeoTransform(gt, sc->dem_inv_gt))
        return ggo_fail(sc, "DEM %s has a singular geotransform", o->dem);
    const char *def = o->dem_srs ? o->dem_srs : GDALGetProjectionRef(sc->dem);
    if (!def || !*def)
        return ggo_fail(sc, "DEM %s has no CRS (unknown CRS); give -dem_srs", o->dem);
    sc->dem_srs = srs_from(def);
    if (!sc->dem_srs)
        return ggo_fail(sc, "DEM CRS '%s' is not understood", def);
    const int compound = OSRIsCompound(sc->dem_srs);
    sc->apply_vshift = compound;
    OGRSpatialReferenceH ll = srs_from(compound ? "EPSG:4979" : "EPSG:4326");
    if (!OSRIsSame(ll, sc->dem_srs)) {
        sc->to_dem = OCTNewCoordinateTransformation(ll, sc->dem_srs);
        if (!sc->to_dem) {
            OSRDestroySpatialReference(ll);
            return ggo_fail(sc, "no transformation from WGS84 to the DEM CRS");
        }
    }
    OSRDestroySpatialReference(ll);
    GDALRasterBandH b = GDALGetRasterBand(sc->dem, 1);
    sc->demw.raster_width = GDALGetRasterXSize(sc->dem);
    sc->demw.raster_height = GDALGetRasterYSize(sc->dem);
    int has = 0;
    const double nd = GDALGetRasterNoDataValue(b, &has);
    sc->demw.has_nodata = has;
    sc->demw.nodata = nd;
    if (compound && sc->to_dem) {
        /* Geoid policy: a vertical CRS must shift heights; PROJ without the
         * grid returns them unshifted, which GDAL accepts silently. */
        double x = sc->rpc.long_off, y = sc->rpc.lat_off, z = 0;
        int ok = 0;
        OCTTransformEx(sc->to_dem, 1, &x, &y, &z, &ok);
        if (!ok || fabs(z) < 1e-6)
            CPLError(CE_Warning, CPLE_AppDefined,
                     "%s: the DEM's heights are relative to a vertical datum "
                     "(%s) but PROJ applies no shift at the scene centre (its geoid grid is "
                     "probably not installed: see projsync); heights are used UNSHIFTED, as "
                     "gdalwarp does, which displaces the ground by tens of metres",
                     sc->src_name, OSRGetAttrValue(sc->dem_srs, "VERT_CS", 0)
                                       ? OSRGetAttrValue(sc->dem_srs, "VERT_CS", 0)
                                       : "vertical CRS");
    }
    return 0;
}

/* lon/lat (WGS84) -> DEM pixel position and vertical shift, in place:
 * x, y in, x, y, z (shift) out; ok[i] 0 on failure. */
static void ll_to_dem(const ggo_scene *sc, int n, double *x, double *y, double *z, int *ok)
{
    for (int i = 0; i < n; i++)
        z[i] = 0.0;
    if (sc->to_dem)
        OCTTransformEx(sc->to_dem, n, x, y, z, ok);
    for (int i = 0; i < n; i++) {
        if (sc->to_dem && !ok[i]) {
            x[i] = y[i] = z[i] = NAN;
            continue;
        }
        ok[i] = 1;
        const double gx = x[i], gy = y[i];
        x[i] = sc->dem_inv_gt[0] + gx * sc->dem_inv_gt[1] + gy * sc->dem_inv_gt[2];
        y[i] = sc->dem_inv_gt[3] + gx * sc->dem_inv_gt[4] + gy * sc->dem_inv_gt[5];
        /* GDAL's CT goes WGS84 -> DEM: heights over the geoid come back
         * with the opposite sign of the shift */
        z[i] = sc->apply_vshift ? -z[i] : 0.0;
    }
}

/* Output pixel centres (px, py) -> the 5 grid planes at nodes[k*n + i].
 * 0, or 1 when out of memory (never for one point). */
static int exact_nodes(const ggo_scene *sc, int n, const double *px, const double *py,
                       double *planes, size_t plane, double lon_ref)
{
    double *x = planes, *y = planes + plane, *dx = planes + 2 * plane, *dy = planes + 3 * plane,
           *dz = planes + 4 * plane;
    int one;
    int *ok = n == 1 ? &one : host_alloc(sizeof(int) * (size_t)n);
    if (!ok)
        return 1;
    for (int i = 0; i < n; i++) {
        x[i] = sc->gt[0] + px[i] * sc->gt[1] + py[i] * sc->gt[2];
        y[i] = sc->gt[3] + px[i] * sc->gt[4] + py[i] * sc->gt[5];
        ok[i] = 1;
    }
    if (sc->to_ll)
        OCTTransformEx(sc->to_ll, n, x, y, NULL, ok);
    for (int i = 0; i < n; i++) {
        if (!ok[i])
            x[i] = y[i] = NAN;
        dx[i] = x[i];
        dy[i] = y[i];
    }
    if (sc->dem)
        ll_to_dem(sc, n, dx, dy, dz, ok);
    else
        for (int i = 0; i < n; i++)
            dx[i] = dy[i] = dz[i] = 0.0;
    /* continuous longitudes across the antimeridian (the RFM wraps them) */
    for (int i = 0; i < n; i++) {
        if (x[i] - lon_ref > 180.0)
            x[i] -= 360.0;
        else if (x[i] - lon_ref < -180.0)
            x[i] += 360.0;
    }
    if (ok != &one)
        free(ok);
    return 0;
}

/* Lagrange interpolation of plane k of a block grid at block pixel (x, y),
 * as the kernel does. */
static double interp(const double *nodes, int nx, int ny, int step, int k, double x, double y)
{
    const int gx = (int)x / step, gy = (int)y / step;
    const double fx = (x - gx * step) / step, fy = (y - gy * step) / step;
    double wx[4], wy[4];
    const double f[2] = {fx, fy};
    double *w[2] = {wx, wy};
    for (int a = 0; a < 2; a++) {
        const double t = f[a];
        w[a][0] = -t * (t - 1.0) * (t - 2.0) / 6.0;
        w[a][1] = (t + 1.0) * (t - 1.0) * (t - 2.0) / 2.0;
        w[a][2] = -(t + 1.0) * t * (t - 2.0) / 2.0;
        w[a][3] = (t + 1.0) * t * (t - 1.0) / 6.0;
    }
    const double *p = nodes + (size_t)k * nx * ny;
    double acc = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++)
            acc += wy[j] * wx[i] * p[(size_t)(gy + j) * nx + gx + i];
    return acc;
}



/* The grid nodes of a block of rows. */
int ggo_block_grid(const ggo_scene *sc, ggo_block *b, double lon_ref)
{
    const int S = sc->step;
    b->gnx = (sc->out_w - 1) / S + 4;
    b->gny = (b->rows - 1) / S + 4;
    const size_t n = (size_t)b->gnx * b->gny;
    b->nodes = host_alloc(n * GG_ORTHO_PLANES * sizeof(double));
    double *px = host_alloc(n * sizeof(double)), *py = host_alloc(n * sizeof(double));
    if (!b->nodes || !px || !py) {
        free(px);
        free(py);
        return 0;
    }
    for (int j = 0; j < b->gny; j++)
        for (int i = 0; i < b->gnx; i++) {
            px[(size_t)j * b->gnx + i] = (i - 1) * S + 0.5;
            py[(size_t)j * b->gnx + i] = b->y0 + (j - 1) * S + 0.5;
        }
    const int failed = exact_nodes(sc, (int)n, px, py, b->nodes, n, lon_ref);
    free(px);
    free(py);
    if (failed) {
        free(b->nodes);
        b->nodes = NULL;
        return 0;
    }
    return 1;
}

/* Source window of a block: the RFM at every node with its DEM height
 * (HEIGHT_OFF where the DEM has none), plus a margin for the resampling
 * kernel and the terrain between nodes.  The kernel reports a tap outside
 * the window, so this only has to be right usually. */
void ggo_block_window(const ggo_scene *sc, ggo_block *b, int margin)
{
    const size_t n = (size_t)b->gnx * b->gny;
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (size_t i = 0; i < n; i++) {
        const double lon = b->nodes[i], lat = b->nodes[n + i];
        if (!isfinite(lon) || !isfinite(lat))
            continue;
        double h = sc->rpc.height_off;
        if (!gg_ortho_height_at(sc->dem ? &sc->demw : NULL, &sc->oo, b->nodes[2 * n + i],
                                b->nodes[3 * n + i], b->nodes[4 * n + i], &h) ||
            !isfinite(h))
            h = sc->rpc.height_off;
        double x, y;
        gg_ortho_rpc_forward(&sc->rpc, lon, lat, h, &x, &y);
        if (!isfinite(x) || !isfinite(y))
            continue;
        xmin = fmin(xmin, x);
        xmax = fmax(xmax, x);
        ymin = fmin(ymin, y);
        ymax = fmax(ymax, y);
    }
    if (xmin > xmax || xmax < -margin || ymax < -margin || xmin > sc->width + margin ||
        ymin > sc->height + margin) {
        b->sx0 = b->sy0 = b->sw = b->sh = 0;
        return;
    }
    const int x0 = clamp_int(floor(xmin) - margin, 0, sc->width);
    const int y0 = clamp_int(floor(ymin) - margin, 0, sc->height);
    const int x1 = clamp_int(ceil(xmax) + margin, 0, sc->width);
    const int y1 = clamp_int(ceil(ymax) + margin, 0, sc->height);
    b->sx0 = x0;
    b->sy0 = y0;
    b->sw = x1 > x0 ? x1 - x0 : 0;
    b->sh = y1 > y0 ? y1 - y0 : 0;
}

/* Margin of a block's first source window: the resampling kernel's reach
 * plus the terrain between grid nodes. */
int ggo_first_margin(const ggo_scene *sc)
{
    /* the stretched kernel reaches ceil(2 / scale) source pixels */
    const double sc_min = fmin(fmin(sc->xscale, sc->yscale), 1.0);
    return 4 + sc->step / 2 + (sc_min < 0.95 ? clamp_int(ceil(2.0 / sc_min), 0, 1 << 20) : 0);
}

void ggo_name_thread(const char *name)
{
#ifdef __linux__
    (void)pthread_setname_np(pthread_self(), name); /* 15 characters at most */
#else
    (void)name;
#endif
}

int ggo_read_window(const ggo_scene *sc, GDALDatasetH ds, ggo_block *b)
{
    const size_t ss = gg_type_size(sc->src_t);
    const size_t plane = (size_t)b->sw * b->sh;
    free(b->src);
    b->src = host_alloc(plane * ss * sc->nbands + 1);
    if (!b->src)
        return 0;
    if (plane == 0)
        return 1;
    if (gg_fault_point("read")) { /* GG_FAULT=read:N (tests) */
        CPLError(CE_Failure, CPLE_FileIO, "injected fault (GG_FAULT)");
        return 0;
    }
    for (int k = 0; k < sc->nbands; k++)
        if (GDALRasterIO(GDALGetRasterBand(ds, k + 1), GF_Read, b->sx0, b->sy0, b->sw, b->sh,
                         (char *)b->src + k * plane * ss, b->sw, b->sh, ggo_to_gdal_type(sc->src_t), 0,
                         0) != CE_None)
            return 0;
    return 1;
}

/* ------------------------------------------- gdalwarp's grid, sampled in parallel */

/* GDALSuggestedWarpOutput2 samples the source's edges, and where a point
 * fails (an RPC inverse that does not converge over steep DEM slopes) a
 * 101 x 101 grid, in a few large transformer calls, then refines failures
 * a point at a time.  The large calls are split here over threads, each
 * with its own transformer made the same way (transformers keep DEM
 * caches: not shared); each point's result depends on that point only, so
 * the grid is GDAL's to the bit (bench/probe_setup.c checks it, and
 * test_ortho compares gdal_ortho's grid with gdalwarp's where points fail).
 * A Dask worker's set-up of an 8192^2 scene on an H200 host: 0.034-0.036 s
 * -> 0.023-0.026 s with 4 threads; 8 are no faster (bench/RESULTS.md,
 * session 22); GDAL's call alone was 15 % slower on one GPU and no faster
 * on two or four (sessions 30 and 31). */
#define GRID_THREADS 4
#define GRID_SPLIT_MIN 64 /* points: below this a call stays on one thread */
typedef struct {
    void *tr[GRID_THREADS];
    int n;
} split_tr;

typedef struct {
    void *tr;
    int inv, n, ret;
    double *x, *y, *z;
    int *ok;
    CPLErr err; /* a helper's last GDAL error, raised again on the caller's thread */
    CPLErrorNum err_no;
    char msg[256];
} split_job;

static void *split_run(void *arg)
{
    split_job *j = arg;
    j->ret = GDALGenImgProjTransform(j->tr, j->inv, j->n, j->x, j->y, j->z, j->ok);
    return NULL;
}

/* On a helper thread: GDAL's error handlers are per thread, so the
 * caller's (quiet or collecting) would not see this thread's errors. */
static void *split_helper(void *arg)
{
    ggo_name_thread("gg-grid-help");
    split_job *j = arg;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();
    split_run(j);
    j->err = CPLGetLastErrorType();
    j->err_no = CPLGetLastErrorNo();
    snprintf(j->msg, sizeof j->msg, "%s", CPLGetLastErrorMsg());
    CPLPopErrorHandler();
    return NULL;
}

static int split_transform(void *arg, int inv, int n, double *x, double *y, double *z, int *ok)
{
    const split_tr *s = arg;
    if (s->n < 2 || n < GRID_SPLIT_MIN)
        return GDALGenImgProjTransform(s->tr[0], inv, n, x, y, z, ok);
    split_job jb[GRID_THREADS];
    pthread_t th[GRID_THREADS];
    int started[GRID_THREADS] = {0};
    for (int i = 0; i < s->n; i++) {
        const int a = (int)((long)n * i / s->n), b = (int)((long)n * (i + 1) / s->n);
        jb[i] = (split_job){s->tr[i], inv, b - a, 0, x + a, y + a, z + a, ok + a, CE_None, 0, ""};
        started[i] = i > 0 && pthread_create(&th[i], NULL, split_helper, &jb[i]) == 0;
    }
    for (int i = 0; i < s->n; i++)
        if (!started[i]) /* this thread's share, and any that could not start */
            split_run(&jb[i]);
    int ret = 1;
    for (int i = 0; i < s->n; i++) {
        if (started[i]) {
            pthread_join(th[i], NULL);
            if (jb[i].err != CE_None)
                CPLError(jb[i].err, jb[i].err_no, "%s", jb[i].msg);
        }
        ret = ret && jb[i].ret;
    }
    return ret;
}

static int grid_threads(void)
{
    const long procs = sysconf(_SC_NPROCESSORS_ONLN);
    return procs > 0 && GRID_THREADS > procs ? (int)procs : GRID_THREADS;
}

/* GDALSuggestedWarpOutput2 through tr (made from sc->src with options to),
 * with dst_gt set on each helper transformer when given (warped_window). */
static CPLErr suggest_grid(const ggo_scene *sc, void *tr, char **to, const double *dst_gt,
                           double gt[6], int *w, int *h, double ext[4])
{
    split_tr s = {{tr}, 1};
    const int want = grid_threads();
    while (s.n < want) {
        void *t = GDALCreateGenImgProjTransformer2(sc->src, NULL, to);
        if (!t)
            break; /* fewer threads: the same grid */
        if (dst_gt)
            GDALSetGenImgProjTransformerDstGeoTransform(t, dst_gt);
        s.tr[s.n++] = t;
    }
    const CPLErr e = GDALSuggestedWarpOutput2(sc->src, split_transform, &s, gt, w, h, ext, 0);
    for (int i = 1; i < s.n; i++)
        GDALDestroyGenImgProjTransformer(s.tr[i]);
    return e;
}

/* ---------------------------------------------------- grid and DEM setup */

/* Pixel count along one axis of the output grid; anything past GRID_MAX
 * (which output_grid refuses) is reported as GRID_MAX + 1. */
#define GRID_MAX 1000000000
static int grid_size(double n)
{
    return !(n >= 0) ? 0 : n > GRID_MAX ? GRID_MAX + 1 : (int)n;
}

/* Output grid: gdalwarp's (GDALSuggestedWarpOutput2 with the same RPC
 * transformer), then -te / -tr / -ts as gdalwarp applies them. */
static int output_grid(ggo_scene *sc)
{
    const ggo_options *o = sc->o;
    char *wkt = NULL;
    OSRExportToWkt(sc->dst_srs, &wkt);
    char **to = transformer_options(sc, wkt);
    CPLFree(wkt);
    CPLErrorReset();
    void *tr = GDALCreateGenImgProjTransformer2(sc->src, NULL, to);
    if (!tr) {
        CSLDestroy(to);
        return ggo_fail(sc, "cannot create the RPC transformer: %s", CPLGetLastErrorMsg());
    }
    double gt[6], ext[4];
    int w = 0, h = 0;
    const int need_suggest = !(o->has_te && (o->has_tr || o->has_ts));
    if (need_suggest) {
        CPLErrorReset();
        if (suggest_grid(sc, tr, to, NULL, gt, &w, &h, ext) != CE_None) {
            GDALDestroyGenImgProjTransformer(tr);
            CSLDestroy(to);
            return ggo_fail(sc, "cannot compute the output grid: %s", CPLGetLastErrorMsg());
        }
    }
    GDALDestroyGenImgProjTransformer(tr);
    CSLDestroy(to);
    double minx = ext[0], miny = ext[1], maxx = ext[2], maxy = ext[3];
    if (o->has_te) {
        minx = o->te[0];
        miny = o->te[1];
        maxx = o->te[2];
        maxy = o->te[3];
    }
    if (o->has_tr) {
        const double xr = o->tr[0], yr = fabs(o->tr[1]);
        w = grid_size((maxx - minx + xr / 2.0) / xr);
        h = grid_size((fabs(maxy - miny) + yr / 2.0) / yr);
        sc->gt[0] = minx;
        sc->gt[1] = xr;
        sc->gt[3] = maxy;
        sc->gt[5] = -yr;
    } else if (o->has_ts) {
        w = o->ts[0];
        h = o->ts[1];
        sc->gt[0] = minx;
        sc->gt[1] = (maxx - minx) / w;
        sc->gt[3] = maxy;
        sc->gt[5] = -(maxy - miny) / h;
    } else if (o->has_te) {
        const double xr = gt[1], yr = fabs(gt[5]);
        w = grid_size((maxx - minx + xr / 2.0) / xr);
        h = grid_size((maxy - miny + yr / 2.0) / yr);
        sc->gt[0] = minx;
        sc->gt[1] = (maxx - minx) / w;
        sc->gt[3] = maxy;
        sc->gt[5] = -(maxy - miny) / h;
    } else
        memcpy(sc->gt, gt, sizeof gt);
    sc->gt[2] = sc->gt[4] = 0.0;
    if (w < 1 || h < 1)
        return ggo_fail(sc, "the output grid is empty");
    if (w > GRID_MAX || h > GRID_MAX)
        return ggo_fail(sc,
                        "the output grid of %d x %d pixels is too large (at most %d a side: "
                        "check -tr, -ts and -te)",
                        w, h, GRID_MAX);
    /* the work estimate before the set-up that grows with the grid (its
     * DEM window, footprint and node grids: seconds and gigabytes for a
     * polar scene's grid at 5 m), so a grid far larger than meant stops
     * at once (gg_work_limit.h) */
    char why[1024];
    const double read_bytes =
        (double)sc->width * sc->height * sc->nbands * (double)gg_type_size(sc->src_t);
    const double write_bytes = (double)w * h * sc->nbands * (double)gg_type_size(sc->dst_t);
    if (gg_work_limit_check(CPLSPrintf("the output grid of %d x %d pixels (check -tr, -ts and -te)",
                                       w, h),
                            read_bytes, write_bytes, why, sizeof why))
        return ggo_fail(sc, "%s", why);
    sc->out_w = w;
    sc->out_h = h;
    return 0;
}

/* -dem_nan_missing: NaN heights become the DEM's nodata value (a value the
 * kernels recognise; NaN compares equal to nothing), so a NaN counts as
 * nodata does: bilinear has no height there and uses -dem_missing, cubic
 * leaves the tap out.  A DEM without a nodata value gets one no height
 * can be. */
static void nan_heights_missing(gg_ortho_dem *dem, double *buf)
{
    if (!dem->has_nodata || isnan(dem->nodata)) {
        dem->has_nodata = 1;
        dem->nodata = -1e300;
    }
    const size_t n = (size_t)dem->width * (size_t)dem->height;
    for (size_t i = 0; i < n; i++)
        if (isnan(buf[i]))
            buf[i] = dem->nodata;
}

/* Reads the part of the DEM the output needs (+4 px), and checks coverage. */
static int load_dem(ggo_scene *sc)
{
    if (!sc->dem)
        return 0;
    /* a coarse pass over the whole output */
    const int nx = 33, ny = 33;
    const int n = nx * ny;
    double *px = host_alloc(sizeof(double) * n), *py = host_alloc(sizeof(double) * n);
    double *planes = host_alloc(sizeof(double) * n * GG_ORTHO_PLANES);
    if (px && py && planes)
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                px[j * nx + i] = (double)i * sc->out_w / (nx - 1);
                py[j * nx + i] = (double)j * sc->out_h / (ny - 1);
            }
    if (!px || !py || !planes || exact_nodes(sc, n, px, py, planes, n, sc->rpc.long_off)) {
        free(px);
        free(py);
        free(planes);
        return ggo_fail(sc, "out of memory");
    }
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int i = 0; i < n; i++) {
        const double x = planes[2 * n + i], y = planes[3 * n + i];
        if (!isfinite(x) || !isfinite(y))
            continue;
        xmin = fmin(xmin, x);
        xmax = fmax(xmax, x);
        ymin = fmin(ymin, y);
        ymax = fmax(ymax, y);
    }
    free(px);
    free(py);
    free(planes);
    const int W = sc->demw.raster_width, H = sc->demw.raster_height;
    int x0 = clamp_int(floor(xmin) - 6, 0, W), y0 = clamp_int(floor(ymin) - 6, 0, H);
    int x1 = clamp_int(ceil(xmax) + 6, 0, W), y1 = clamp_int(ceil(ymax) + 6, 0, H);
    if (xmin > xmax || x1 <= x0 || y1 <= y0) {
        x0 = y0 = 0;
        x1 = y1 = 1;
    }
    sc->demw.x0 = x0;
    sc->demw.y0 = y0;
    sc->demw.width = x1 - x0;
    sc->demw.height = y1 - y0;
    sc->dem_buf = host_alloc(sizeof(double) * sc->demw.width * sc->demw.height);
    if (!sc->dem_buf)
        return ggo_fail(sc, "out of memory for the DEM window");
    CPLErrorReset();
    if (GDALRasterIO(GDALGetRasterBand(sc->dem, 1), GF_Read, x0, y0, sc->demw.width,
                     sc->demw.height, sc->dem_buf, sc->demw.width, sc->demw.height, GDT_Float64, 0,
                     0) != CE_None)
        return ggo_fail(sc, "reading the DEM failed: %s", CPLGetLastErrorMsg());
    if (sc->o->dem_nan_missing)
        nan_heights_missing(&sc->demw, sc->dem_buf);
    sc->demw.data = sc->dem_buf;
    return 0;
}

/* Without -dem_missing every ground point of the scene must be on the DEM:
 * samples 21 x 21 image points (inverse RPC at the DEM-free height
 * HEIGHT_OFF) and names the fraction outside the DEM. */
static int check_coverage(ggo_scene *sc)
{
    if (!sc->dem || sc->o->has_dem_missing)
        return 0;
    GDALRPCInfoV2 info;
    GDALExtractRPCInfoV2(GDALGetMetadata(sc->src, "RPC"), &info);
    char **to = CSLSetNameValue(NULL, "RPC_HEIGHT", CPLSPrintf("%.17g", sc->rpc.height_off));
    void *tr = GDALCreateRPCTransformerV2(&info, FALSE, 0.1, to);
    CSLDestroy(to);
    if (!tr)
        return 0;
    const int m = 21, n = m * m;
    double x[21 * 21], y[21 * 21], z[21 * 21];
    int ok[21 * 21];
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) {
            x[j * m + i] = (double)i * sc->width / (m - 1);
            y[j * m + i] = (double)j * sc->height / (m - 1);
            z[j * m + i] = 0;
        }
    GDALRPCTransform(tr, FALSE, n, x, y, z, ok);
    GDALDestroyRPCTransformer(tr);
    double vs[21 * 21];
    ll_to_dem(sc, n, x, y, vs, ok);
    int out = 0, tried = 0;
    for (int i = 0; i < n; i++) {
        tried++;
        if (!ok[i] || !(x[i] >= 0 && y[i] >= 0 && x[i] <= sc->demw.raster_width &&
                        y[i] <= sc->demw.raster_height))
            out++;
    }
    if (out > 0)
        return ggo_fail(sc,
                        "the DEM does not cover the scene: %.1f%% of it is outside %s; give "
                        "-dem_missing <height> or a larger DEM",
                        100.0 * out / tried, sc->o->dem);
    return 0;
}

/* The output grid must meet the scene: 65 x 65 output points through the
 * model, at least one inside the image. */
static int check_footprint(ggo_scene *sc)
{
    const int m = 65, n = m * m;
    double *px = host_alloc(sizeof(double) * n), *py = host_alloc(sizeof(double) * n);
    double *pl = host_alloc(sizeof(double) * n * GG_ORTHO_PLANES);
    int inside = 0;
    if (!px || !py || !pl) {
        free(px);
        free(py);
        free(pl);
        return ggo_fail(sc, "out of memory");
    }
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) {
            px[j * m + i] = (double)i * sc->out_w / (m - 1);
            py[j * m + i] = (double)j * sc->out_h / (m - 1);
        }
    if (exact_nodes(sc, n, px, py, pl, n, sc->rpc.long_off)) {
        free(px);
        free(py);
        free(pl);
        return ggo_fail(sc, "out of memory");
    }
    for (int i = 0; i < n && !inside; i++) {
        double h = sc->rpc.height_off, x, y;
        if (!isfinite(pl[i]) || !isfinite(pl[n + i]))
            continue;
        if (!gg_ortho_height_at(sc->dem ? &sc->demw : NULL, &sc->oo, pl[2 * n + i],
                                pl[3 * n + i], pl[4 * n + i], &h) || !isfinite(h))
            h = sc->rpc.height_off;
        gg_ortho_rpc_forward(&sc->rpc, pl[i], pl[n + i], h, &x, &y);
        inside = x >= 0 && y >= 0 && x <= sc->width && y <= sc->height;
    }
    free(px);
    free(py);
    free(pl);
    if (!inside)
        return ggo_fail(sc, "the output grid misses the scene's footprint");
    return 0;
}

/* Grid step: the largest of 64, 32, ..., 4 whose interpolation error at
 * cell centres stays below 1e-6 source pixels (through the RPC scales). */
static void choose_step(ggo_scene *sc)
{
    if (sc->o->step > 0) {
        sc->step = sc->o->step;
        return;
    }
    const double px_per_lon = fabs(sc->rpc.samp_scale / sc->rpc.long_scale);
    const double px_per_lat = fabs(sc->rpc.line_scale / sc->rpc.lat_scale);
    for (int S = 64; S >= 4; S /= 2) {
        sc->step = S;
        ggo_block b = {0};
        b.y0 = sc->out_h / 2;
        b.rows = S * 2 < sc->out_h - b.y0 ? S * 2 : sc->out_h - b.y0;
        if (b.rows < 1) {
            b.y0 = 0;
            b.rows = sc->out_h;
        }
        if (!ggo_block_grid(sc, &b, sc->rpc.long_off))
            return;
        double err = 0;
        const int n = 8;
        for (int t = 0; t < n; t++) {
            const double cx = fmin(sc->out_w - 1, (t + 0.5) * sc->out_w / n) - 0.5 * S;
            const double lx = floor(fmax(cx, 0) / S) * S + 0.5 * S, ly = 0.5 * S;
            if (lx >= sc->out_w || ly >= b.rows)
                continue;
            double ex[GG_ORTHO_PLANES];
            double qx = lx + 0.5, qy = b.y0 + ly + 0.5;
            (void)exact_nodes(sc, 1, &qx, &qy, ex, 1, sc->rpc.long_off); /* one point */
            const double dlon = interp(b.nodes, b.gnx, b.gny, S, 0, lx, ly) - ex[0];
            const double dlat = interp(b.nodes, b.gnx, b.gny, S, 1, lx, ly) - ex[1];
            if (isfinite(dlon) && isfinite(dlat))
                err = fmax(err, fmax(fabs(dlon) * px_per_lon, fabs(dlat) * px_per_lat));
        }
        free(b.nodes);
        if (err <= 1e-6)
            return;
    }
}
/* ------------------------------------------------- kernel stretch */

/* Source position of output position (px, py) (corner convention) through
 * the model, as GDAL's RPC transformer with the DEM; 0 where it fails. */
static int to_source(const ggo_scene *sc, double px, double py, double *x, double *y)
{
    double pl[GG_ORTHO_PLANES];
    (void)exact_nodes(sc, 1, &px, &py, pl, 1, sc->rpc.long_off); /* one point */
    double h = 0;
    if (!isfinite(pl[0]) || !isfinite(pl[1]) ||
        !gg_ortho_height_at(sc->dem ? &sc->demw : NULL, &sc->oo, pl[2], pl[3], pl[4], &h) ||
        !isfinite(h))
        return 0;
    gg_ortho_rpc_forward(&sc->rpc, pl[0], pl[1], h, x, y);
    return isfinite(*x) && isfinite(*y);
}

/* The output window gdalwarp warps for an RPC source (AdjustOutputExtentForRPC,
 * gdalwarp_lib.cpp): the source footprint's extent in output pixels
 * (GDALSuggestedWarpOutput2 through the same transformer) padded by 5 px,
 * within the output.  Whole output if that fails. */
static void warped_window(const ggo_scene *sc, int *x0, int *y0, int *x1, int *y1)
{
    *x0 = *y0 = 0;
    *x1 = sc->out_w;
    *y1 = sc->out_h;
    /* without -te the output's extent is that footprint extent itself, and
     * the padded window the whole output: no second transformer needed */
    if (!sc->o->has_te)
        return;
    char *wkt = NULL;
    OSRExportToWkt(sc->dst_srs, &wkt);
    char **to = transformer_options(sc, wkt);
    CPLFree(wkt);
    CPLPushErrorHandler(CPLQuietErrorHandler);
    void *tr = GDALCreateGenImgProjTransformer2(sc->src, NULL, to);
    if (tr) {
        GDALSetGenImgProjTransformerDstGeoTransform(tr, sc->gt);
        double gt[6], ext[4];
        int w = 0, h = 0;
        if (suggest_grid(sc, tr, to, sc->gt, gt, &w, &h, ext) == CE_None &&
            fabs(ext[0]) < 1e9 && fabs(ext[1]) < 1e9 && fabs(ext[2]) < 1e9 && fabs(ext[3]) < 1e9) {
            const int pad = 5;
            *x0 = (int)fmax(0, floor(ext[0]) - pad);
            *y0 = (int)fmax(0, floor(ext[1]) - pad);
            *x1 = (int)fmin(sc->out_w, ceil(ext[2]) + pad);
            *y1 = (int)fmin(sc->out_h, ceil(ext[3]) + pad);
        }
        GDALDestroyGenImgProjTransformer(tr);
    }
    CSLDestroy(to);
    CPLPopErrorHandler();
    if (*x1 <= *x0 || *y1 <= *y0) {
        *x0 = *y0 = 0;
        *x1 = sc->out_w;
        *y1 = sc->out_h;
    }
}

void ggo_chunk_scales(int (*to_source)(void *arg, double px, double py, double *x, double *y),
                      void *arg, int wx0, int wy0, int ww, int wh, int src_w, int src_h,
                      double *xscale, double *yscale, double *raw_w, double *raw_h)
{
    enum { N = 21 };
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    *xscale = *yscale = 1.0;
    *raw_w = *raw_h = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        int failed = 0;
        xmin = ymin = 1e300;
        xmax = ymax = -1e300;
        for (int j = 0; j < N; j++)
            for (int i = 0; i < N; i++) {
                if (pass == 0 && i > 0 && i < N - 1 && j > 0 && j < N - 1)
                    continue; /* edges only */
                const double px = wx0 + (i == N - 1 ? ww : (double)i / (N - 1) * ww);
                const double py = wy0 + (j == N - 1 ? wh : (double)j / (N - 1) * wh);
                double x, y;
                if (!to_source(arg, px, py, &x, &y)) {
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
    const double rawx = fmax(0.0, fmin(src_w - cx, xmax - xmin));
    const double rawy = fmax(0.0, fmin(src_h - cy, ymax - ymin));
    double s[2] = {rawx > 0 ? ww / rawx : 1.0, rawy > 0 ? wh / rawy : 1.0};
    for (int k = 0; k < 2; k++)
        if (s[k] < 1.0) {
            const double r = 1.0 / s[k];
            const int n = clamp_int(r + 0.5, 0, 1 << 20);
            if (fabs(r - n) < 0.05)
                s[k] = 1.0 / n;
        }
    *xscale = s[0];
    *yscale = s[1];
    *raw_w = rawx;
    *raw_h = rawy;
}

static int scene_to_source(void *arg, double px, double py, double *x, double *y)
{
    return to_source(arg, px, py, x, y);
}

/* gdal_ortho's kernel scales: gdalwarp's for the window it warps, in one
 * chunk (ggo_chunk_scales).  gdalwarp computes them per chunk: when it
 * splits a large output into several chunks (-wm) its scales, and so its
 * stretched pixels, may differ slightly from chunk to chunk; gdal_ortho
 * uses the one-chunk scales everywhere. */
static void kernel_scales(ggo_scene *sc)
{
    int wx0, wy0, wx1, wy1;
    warped_window(sc, &wx0, &wy0, &wx1, &wy1);
    const int ww = wx1 - wx0, wh = wy1 - wy0;
    double rawx = 0, rawy = 0;
    ggo_chunk_scales(scene_to_source, sc, wx0, wy0, ww, wh, sc->width, sc->height, &sc->xscale,
                     &sc->yscale, &rawx, &rawy);
    if (sc->o->verbose)
        fprintf(stderr,
                "gdal_ortho: kernel scales %.6f %.6f (output window %d,%d %dx%d, source "
                "window %.3f x %.3f px)\n",
                sc->xscale, sc->yscale, wx0, wy0, ww, wh, rawx, rawy);
}

/* ------------------------------------------------------------ the scene */

int ggo_scene_open(ggo_scene *sc, const ggo_options *o, const char *src_name)
{
    memset(sc, 0, sizeof *sc);
    sc->o = o;
    sc->src_name = src_name;
    sc->xscale = sc->yscale = 1.0;
    CPLErrorReset();
    sc->src = GDALOpen(src_name, GA_ReadOnly);
    if (!sc->src)
        return ggo_fail(sc, "cannot open: %s", CPLGetLastErrorMsg());
    sc->width = GDALGetRasterXSize(sc->src);
    sc->height = GDALGetRasterYSize(sc->src);
    sc->nbands = GDALGetRasterCount(sc->src);
    if (sc->nbands < 1)
        return ggo_fail(sc, "has no raster band");
    if (read_rpc(sc))
        return 1;
    sc->src_gdt = GDALGetRasterDataType(GDALGetRasterBand(sc->src, 1));
    sc->src_t = ggo_type_of(sc->src_gdt);
    sc->dst_t = sc->src_t;
    if (o->ot) {
        GDALDataType t = GDALGetDataTypeByName(o->ot);
        if (t != GDT_Byte && t != GDT_UInt16 && t != GDT_Int16 && t != GDT_Float32)
            return ggo_fail(sc, "-ot %s: supported types are Byte, UInt16, Int16, Float32",
                            o->ot);
        sc->dst_t = ggo_type_of(t);
    }
    sc->dst_gdt = ggo_to_gdal_type(sc->dst_t);

    /* CRSs: the RPC ground is WGS84 lon/lat; output -t_srs else that */
    sc->wgs84 = srs_from("EPSG:4326");
    sc->dst_srs = srs_from(o->t_srs ? o->t_srs : "EPSG:4326");
    if (!sc->dst_srs)
        return ggo_fail(sc, "-t_srs '%s' is not understood", o->t_srs);
    if (!OSRIsSame(sc->dst_srs, sc->wgs84)) {
        sc->to_ll = OCTNewCoordinateTransformation(sc->dst_srs, sc->wgs84);
        if (!sc->to_ll)
            return ggo_fail(sc, "no transformation from -t_srs to WGS84");
    }
    if (open_dem(sc))
        return 1;
    sc->oo.resampling = (gg_ortho_method)o->resampling;
    sc->oo.dem_interp = (gg_ortho_method)o->dem_interp;
    sc->oo.rpc_height = o->rpc_height;
    sc->oo.height_scale = 1.0;
    sc->oo.has_dem_missing = o->has_dem_missing;
    sc->oo.dem_missing = o->dem_missing;
    /* nodata as gdalwarp (per band): -srcnodata's list, the last value
     * repeated; else the bands' own values when any band has one (-123456.789
     * for a band without, as gdalwarp).  The output's: -dstnodata's list,
     * else the source's. */
    const int nb = sc->nbands;
    sc->src_nd = host_calloc((size_t)nb, sizeof(double));
    sc->dst_nd = host_calloc((size_t)nb, sizeof(double));
    if (!sc->src_nd || !sc->dst_nd)
        return ggo_fail(sc, "out of memory");
    int any_own = 0;
    for (int k = 0; k < nb && !o->has_srcnodata; k++) {
        int has = 0;
        const double nd = GDALGetRasterNoDataValue(GDALGetRasterBand(sc->src, k + 1), &has);
        sc->src_nd[k] = has ? nd : -123456.789;
        any_own |= has;
    }
    for (int k = 0; k < nb && o->has_srcnodata; k++)
        sc->src_nd[k] = o->srcnodata_v[k < o->n_srcnodata ? k : o->n_srcnodata - 1];
    sc->has_srcnodata = o->has_srcnodata || any_own;
    sc->srcnodata = sc->src_nd[0];
    sc->has_dstnodata = o->has_dstnodata || sc->has_srcnodata;
    for (int k = 0; k < nb; k++)
        sc->dst_nd[k] = o->has_dstnodata
                            ? o->dstnodata_v[k < o->n_dstnodata ? k : o->n_dstnodata - 1]
                        : sc->has_srcnodata ? sc->src_nd[k]
                                            : 0.0;
    sc->dstnodata = sc->dst_nd[0];
    sc->oo.has_src_nodata = sc->has_srcnodata;
    sc->oo.src_nodata = sc->srcnodata;
    sc->oo.dst_init = sc->dst_nd[0];
    sc->oo.has_dst_nodata = sc->has_dstnodata;
    /* several bands: gdalwarp's unified mask (gg_ortho_session_set_bands);
     * gdalwarp sets UNIFIED_SRC_NODATA=YES with -srcnodata, else its
     * default PARTIAL applies */
    sc->oo.per_band_nodata = 0;
    sc->nd_unified = nb > 1 && o->has_srcnodata;
    if (!sc->has_srcnodata) {
        free(sc->src_nd);
        sc->src_nd = NULL;
    }

    if (check_coverage(sc) || output_grid(sc) || load_dem(sc) || check_footprint(sc))
        return 1;
    choose_step(sc);
    if (o->resampling != GG_ORTHO_METHOD_NEAR)
        kernel_scales(sc);
    return 0;
}

void ggo_scene_close(ggo_scene *sc)
{
    if (sc->src)
        GDALClose(sc->src);
    if (sc->dem)
        GDALClose(sc->dem);
    free(sc->dem_buf);
    free(sc->src_nd);
    free(sc->dst_nd);
    free(sc->outside_nd);
    sc->src_nd = sc->dst_nd = sc->outside_nd = NULL;
    if (sc->to_ll)
        OCTDestroyCoordinateTransformation(sc->to_ll);
    if (sc->to_dem)
        OCTDestroyCoordinateTransformation(sc->to_dem);
    if (sc->dst_srs)
        OSRDestroySpatialReference(sc->dst_srs);
    if (sc->wgs84)
        OSRDestroySpatialReference(sc->wgs84);
    if (sc->dem_srs)
        OSRDestroySpatialReference(sc->dem_srs);
    sc->src = sc->dem = NULL;
    sc->dem_buf = NULL;
    sc->to_ll = sc->to_dem = NULL;
    sc->dst_srs = sc->wgs84 = sc->dem_srs = NULL;
}

int ggo_set_file_nodata(ggo_scene *sc, const double *file_nd, int block_w, int block_h)
{
    int differ = 0;
    for (int k = 0; sc->has_dstnodata && k < sc->nbands; k++)
        differ |= file_nd[k] != sc->dst_nd[k];
    if (!differ)
        return 0;
    free(sc->outside_nd);
    sc->outside_nd = host_alloc(sizeof(double) * (size_t)sc->nbands);
    if (!sc->outside_nd)
        return ggo_fail(sc, "out of memory");
    memcpy(sc->outside_nd, file_nd, sizeof(double) * (size_t)sc->nbands);
    warped_window(sc, &sc->win_x0, &sc->win_y0, &sc->win_x1, &sc->win_y1);
    const int bw = block_w > 0 ? block_w : 1, bh = block_h > 0 ? block_h : 1;
    sc->win_x0 = sc->win_x0 / bw * bw;
    sc->win_y0 = sc->win_y0 / bh * bh;
    sc->win_x1 = (sc->win_x1 + bw - 1) / bw * bw;
    sc->win_y1 = (sc->win_y1 + bh - 1) / bh * bh;
    return 0;
}

void ggo_fill_outside(const ggo_scene *sc, int y0, int rows, void *dst)
{
    if (!sc->outside_nd)
        return;
    const size_t ds = gg_type_size(sc->dst_t);
    const size_t plane = (size_t)sc->out_w * (size_t)rows;
    for (int k = 0; k < sc->nbands; k++) {
        char *pl = (char *)dst + (size_t)k * plane * ds;
        for (int r = 0; r < rows; r++) {
            const int y = y0 + r;
            const int in = y >= sc->win_y0 && y < sc->win_y1;
            const int spans[2][2] = {{0, in ? sc->win_x0 : sc->out_w},
                                     {in ? sc->win_x1 : sc->out_w, sc->out_w}};
            for (int s = 0; s < 2; s++)
                if (spans[s][1] > spans[s][0])
                    GDALCopyWords(&sc->outside_nd[k], GDT_Float64, 0,
                                  pl + ((size_t)r * sc->out_w + (size_t)spans[s][0]) * ds,
                                  ggo_to_gdal_type(sc->dst_t), (int)ds,
                                  spans[s][1] - spans[s][0]);
        }
    }
}

int ggo_session_create(ggo_scene *sc, gg_context *ctx, gg_ortho_session **out)
{
    if (gg_ortho_session_create(ctx, &sc->rpc, sc->dem ? &sc->demw : NULL, &sc->oo, out) !=
        GG_OK)
        return ggo_fail(sc, "%s", gg_context_last_error(ctx));
    if (gg_ortho_session_set_scale(*out, sc->xscale, sc->yscale) != GG_OK ||
        gg_ortho_session_set_bands(*out, sc->nbands, sc->src_nd, sc->dst_nd, sc->nd_unified) !=
            GG_OK) {
        gg_ortho_session_destroy(*out);
        *out = NULL;
        return ggo_fail(sc, "%s", gg_context_last_error(ctx));
    }
    return 0;
}

/* ------------------------------------------------------------ one block */

int ggo_run_block(ggo_scene *sc, gg_ortho_session *sess, gg_context *ctx, GDALDatasetH ds,
                  ggo_block *b, int *widened)
{
    const size_t dsz = gg_type_size(sc->dst_t);
    const size_t plane = (size_t)sc->out_w * b->rows;
    if (!b->dst)
        b->dst = host_alloc(plane * dsz * sc->nbands);
    if (!b->dst)
        return ggo_fail(sc, "out of memory");
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    for (int attempt = 0; attempt < 3; attempt++) {
        /* all bands at once: the multi-band nodata rule reads them all */
        gg_ortho_image im = {b->src, sc->src_t, b->sx0, b->sy0, b->sw, b->sh, (size_t)b->sw,
                             sc->width, sc->height};
        int any_miss = 0;
        if (gg_ortho_session_run_bands(sess, &g, &im, sc->nbands, b->dst, sc->dst_t, sc->out_w,
                                       b->rows, (size_t)sc->out_w, plane, &any_miss) != GG_OK)
            return ggo_fail(sc, "%s", gg_context_last_error(ctx));
        if (!any_miss)
            return 0;
        if (widened)
            ++*widened;
        if (sc->o->verbose)
            fprintf(stderr, "gdal_ortho: block at row %d needed a wider source window\n", b->y0);
        if (attempt == 0)
            ggo_block_window(sc, b, 64 + 4 * sc->step);
        else {
            b->sx0 = b->sy0 = 0;
            b->sw = sc->width;
            b->sh = sc->height;
        }
        if (!ggo_read_window(sc, ds, b))
            return ggo_fail(sc, "reading %s failed: %s", sc->src_name, CPLGetLastErrorMsg());
    }
    return ggo_fail(sc, "internal error: source window still too small");
}

int ggo_compute_block(ggo_scene *sc, gg_ortho_session *sess, gg_context *ctx, int y0, int rows,
                      void *dst)
{
    ggo_block b;
    memset(&b, 0, sizeof b);
    b.y0 = y0;
    b.rows = rows;
    b.dst = dst;
    int rc = 0;
    if (!ggo_block_grid(sc, &b, sc->rpc.long_off))
        rc = ggo_fail(sc, "out of memory");
    if (!rc) {
        ggo_block_window(sc, &b, ggo_first_margin(sc));
        CPLErrorReset();
        if (!ggo_read_window(sc, sc->src, &b))
            rc = ggo_fail(sc, "reading %s failed: %s", sc->src_name, CPLGetLastErrorMsg());
    }
    if (!rc)
        rc = ggo_run_block(sc, sess, ctx, sc->src, &b, NULL);
    free(b.nodes);
    free(b.src);
    return rc;
}

/* The options (ggo_options_default, ggo_set_option, ggo_is_option,
 * ggo_option_names) are described and set in gg_ortho_options.c. */
