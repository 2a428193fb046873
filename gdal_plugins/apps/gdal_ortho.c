/*
 * gdal_ortho.c -- RPC + DEM orthorectification of one scene or many, the
 * geometry of `gdalwarp -rpc -to RPC_DEM=... -et 0` on the device.
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
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
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
#include <time.h>
#include <unistd.h>

#define PROG "gdal_ortho"

/* ------------------------------------------------------------ options */

typedef struct options {
    const char *dem, *dem_srs, *t_srs, *format, *outdir, *device, *ot;
    int dem_interp, resampling;
    int has_dem_missing;
    double dem_missing, rpc_height;
    int has_tr, has_te, has_ts;
    double tr[2], te[4];
    int ts[2];
    int has_srcnodata, has_dstnodata;
    double srcnodata, dstnodata;
    char **co;
    int quiet, verbose;
    int step;          /* grid step; 0: automatic */
} options;

static char last_error[2048];

static void CPL_STDCALL keep_error(CPLErr cls, CPLErrorNum no, const char *msg)
{
    (void)no;
    if (cls >= CE_Failure) {
        if (!last_error[0])
            snprintf(last_error, sizeof last_error, "%s", msg ? msg : "");
        return;
    }
    if (cls == CE_Warning)
        fprintf(stderr, "Warning 1: %s\n", msg);
}

/* Prints the run's one error line; returns 1. */
static int fail(const char *scene, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const char *scene, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (scene)
        fprintf(stderr, "ERROR 1: %s: %s: %s\n", PROG, scene, msg);
    else
        fprintf(stderr, "ERROR 1: %s: %s\n", PROG, msg);
    fflush(stderr);
    return 1;
}

static int parse_method(const char *s, int *out)
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

static const char *const method_names[] = {"near", "bilinear", "cubic"};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s [--help] [--version] [-dem <file>] [-dem_interp near|bilinear|cubic]\n"
            "       [-dem_missing <h>] [-dem_srs <srs>] [-rpc_height <h>] [-t_srs <srs>]\n"
            "       [-tr <xres> <yres>] [-te <xmin> <ymin> <xmax> <ymax>] [-ts <width> <height>]\n"
            "       [-r near|bilinear|cubic] [-srcnodata <v>] [-dstnodata <v>] [-ot <type>]\n"
            "       [-of <format>] [-co <NAME>=<VALUE>]... [-device <dev>] [-q] [-v]\n"
            "       <src> <dst>  |  -outdir <dir> <src> [<src>...]\n"
            "\n"
            "Orthorectifies images with RPCs over a DEM on the GPU, with the geometry of\n"
            "gdalwarp -rpc -to RPC_DEM=<dem> -et 0 (see docs/gdal_ortho.md).\n",
            PROG);
}

static int need(int argc, char **argv, int i, int n)
{
    if (i + n >= argc) {
        fail(NULL, "%s needs %d value%s (see --help)", argv[i], n, n > 1 ? "s" : "");
        return 0;
    }
    return 1;
}

static int number(const char *flag, const char *s, double *v)
{
    char *end = NULL;
    *v = CPLStrtod(s, &end);
    if (!end || *end || end == s) {
        fail(NULL, "%s: '%s' is not a number", flag, s);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ the scene */

typedef struct scene {
    const options *o;
    const char *src_name, *dst_name;
    GDALDatasetH src, dem;
    gg_ortho_rpc rpc;
    int nbands, width, height;
    GDALDataType src_gdt, dst_gdt;
    gg_ortho_type src_t, dst_t;
    OGRSpatialReferenceH dst_srs, wgs84, dem_srs;
    OGRCoordinateTransformationH to_ll, to_dem;   /* NULL: identity */
    double dem_inv_gt[6];
    int apply_vshift;
    double *dem_buf;
    gg_ortho_dem demw;
    gg_ortho_options oo;
    double gt[6];
    int out_w, out_h;
    int step;
    int has_srcnodata, has_dstnodata;
    double srcnodata, dstnodata;
} scene;

static gg_ortho_type to_ortho_type(GDALDataType t)
{
    switch (t) {
    case GDT_Byte: return GG_ORTHO_BYTE;
    case GDT_UInt16: return GG_ORTHO_UINT16;
    case GDT_Int16: return GG_ORTHO_INT16;
    default: return GG_ORTHO_FLOAT32;
    }
}

static GDALDataType to_gdal_type(gg_ortho_type t)
{
    return t == GG_ORTHO_BYTE ? GDT_Byte
           : t == GG_ORTHO_UINT16 ? GDT_UInt16
           : t == GG_ORTHO_INT16 ? GDT_Int16
                                 : GDT_Float32;
}

static const char *const rpc_keys[] = {"LINE_OFF",       "SAMP_OFF",       "LAT_OFF",
                                       "LONG_OFF",       "HEIGHT_OFF",     "LINE_SCALE",
                                       "SAMP_SCALE",     "LAT_SCALE",      "LONG_SCALE",
                                       "HEIGHT_SCALE",   "LINE_NUM_COEFF", "LINE_DEN_COEFF",
                                       "SAMP_NUM_COEFF", "SAMP_DEN_COEFF", NULL};

/* RPCs from wherever GDAL finds them (TIFF tag, _RPC.TXT, .RPB, DIMAP, NITF,
 * the RPC metadata domain). */
static int read_rpc(scene *sc)
{
    char **md = GDALGetMetadata(sc->src, "RPC");
    if (!md || !CSLCount(md))
        return fail(sc->src_name, "no RPCs (no RPC metadata, _RPC.TXT, .RPB or DIMAP found)");
    for (int i = 0; rpc_keys[i]; i++) {
        const char *v = CSLFetchNameValue(md, rpc_keys[i]);
        if (!v)
            return fail(sc->src_name, "RPC %s is missing", rpc_keys[i]);
        if (strstr(rpc_keys[i], "COEFF")) {
            char **t = CSLTokenizeString2(v, " ,", 0);
            const int n = CSLCount(t);
            CSLDestroy(t);
            if (n != 20)
                return fail(sc->src_name, "RPC %s has %d coefficients, 20 expected",
                            rpc_keys[i], n);
        }
    }
    GDALRPCInfoV2 info;
    if (!GDALExtractRPCInfoV2(md, &info))
        return fail(sc->src_name, "RPC metadata could not be parsed");
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
static char **transformer_options(const scene *sc, const char *dst_wkt)
{
    const options *o = sc->o;
    char **to = NULL;
    to = CSLSetNameValue(to, "METHOD", "RPC");
    if (o->dem) {
        to = CSLSetNameValue(to, "RPC_DEM", o->dem);
        to = CSLSetNameValue(to, "RPC_DEMINTERPOLATION", method_names[o->dem_interp]);
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
static int open_dem(scene *sc)
{
    const options *o = sc->o;
    if (!o->dem)
        return 0;
    sc->dem = GDALOpen(o->dem, GA_ReadOnly);
    if (!sc->dem)
        return fail(sc->src_name, "cannot open DEM %s", o->dem);
    double gt[6];
    if (GDALGetGeoTransform(sc->dem, gt) != CE_None)
        return fail(sc->src_name, "DEM %s has no geotransform", o->dem);
    if (!GDALInvGeoTransform(gt, sc->dem_inv_gt))
        return fail(sc->src_name, "DEM %s has a singular geotransform", o->dem);
    const char *def = o->dem_srs ? o->dem_srs : GDALGetProjectionRef(sc->dem);
    if (!def || !*def)
        return fail(sc->src_name, "DEM %s has no CRS (unknown CRS); give -dem_srs", o->dem);
    sc->dem_srs = srs_from(def);
    if (!sc->dem_srs)
        return fail(sc->src_name, "DEM CRS '%s' is not understood", def);
    const int compound = OSRIsCompound(sc->dem_srs);
    sc->apply_vshift = compound;
    OGRSpatialReferenceH ll = srs_from(compound ? "EPSG:4979" : "EPSG:4326");
    if (!OSRIsSame(ll, sc->dem_srs)) {
        sc->to_dem = OCTNewCoordinateTransformation(ll, sc->dem_srs);
        if (!sc->to_dem) {
            OSRDestroySpatialReference(ll);
            return fail(sc->src_name, "no transformation from WGS84 to the DEM CRS");
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
            fprintf(stderr,
                    "Warning 1: %s: %s: the DEM's heights are relative to a vertical datum "
                    "(%s) but PROJ applies no shift at the scene centre (its geoid grid is "
                    "probably not installed: see projsync); heights are used UNSHIFTED, as "
                    "gdalwarp does, which displaces the ground by tens of metres\n",
                    PROG, sc->src_name, OSRGetAttrValue(sc->dem_srs, "VERT_CS", 0)
                                            ? OSRGetAttrValue(sc->dem_srs, "VERT_CS", 0)
                                            : "vertical CRS");
    }
    return 0;
}

/* lon/lat (WGS84) -> DEM pixel position and vertical shift, in place:
 * x, y in, x, y, z (shift) out; ok[i] 0 on failure. */
static void ll_to_dem(const scene *sc, int n, double *x, double *y, double *z, int *ok)
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

/* Output pixel centres (px, py) -> the 5 grid planes at nodes[k*n + i]. */
static void exact_nodes(const scene *sc, int n, const double *px, const double *py, double *planes,
                        size_t plane, double lon_ref)
{
    double *x = planes, *y = planes + plane, *dx = planes + 2 * plane, *dy = planes + 3 * plane,
           *dz = planes + 4 * plane;
    int *ok = malloc(sizeof(int) * (size_t)n);
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
    free(ok);
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

typedef struct block {
    int y0, rows;
    int gnx, gny;
    double *nodes;
    int sx0, sy0, sw, sh;  /* source window */
    void *src;             /* nbands planes */
    void *dst;             /* nbands planes */
    int failed;
} block;

/* The grid nodes of a block of rows. */
static int block_grid(const scene *sc, block *b, double lon_ref)
{
    const int S = sc->step;
    b->gnx = (sc->out_w - 1) / S + 4;
    b->gny = (b->rows - 1) / S + 4;
    const size_t n = (size_t)b->gnx * b->gny;
    b->nodes = malloc(n * GG_ORTHO_PLANES * sizeof(double));
    double *px = malloc(n * sizeof(double)), *py = malloc(n * sizeof(double));
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
    exact_nodes(sc, (int)n, px, py, b->nodes, n, lon_ref);
    free(px);
    free(py);
    return 1;
}

/* Source window of a block: the RFM at every node with its DEM height
 * (HEIGHT_OFF where the DEM has none), plus a margin for the resampling
 * kernel and the terrain between nodes.  The kernel reports a tap outside
 * the window, so this only has to be right usually. */
static void block_window(const scene *sc, block *b, int margin)
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
    int x0 = (int)floor(xmin) - margin, y0 = (int)floor(ymin) - margin;
    int x1 = (int)ceil(xmax) + margin, y1 = (int)ceil(ymax) + margin;
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > sc->width ? sc->width : x1;
    y1 = y1 > sc->height ? sc->height : y1;
    b->sx0 = x0;
    b->sy0 = y0;
    b->sw = x1 > x0 ? x1 - x0 : 0;
    b->sh = y1 > y0 ? y1 - y0 : 0;
}

/* Margin of a block's first source window: the resampling kernel's reach
 * plus the terrain between grid nodes.  GG_ORTHO_MARGIN (tests) narrows it
 * to exercise the retry path. */
static int first_margin(const scene *sc)
{
    const char *env = getenv("GG_ORTHO_MARGIN");
    if (env && *env)
        return atoi(env);
    return 4 + sc->step / 2;
}

static size_t tsize(gg_ortho_type t)
{
    return t == GG_ORTHO_BYTE ? 1 : t == GG_ORTHO_FLOAT32 ? 4 : 2;
}

static int read_window(const scene *sc, GDALDatasetH ds, block *b)
{
    const size_t ss = tsize(sc->src_t);
    const size_t plane = (size_t)b->sw * b->sh;
    free(b->src);
    b->src = malloc(plane * ss * sc->nbands + 1);
    if (!b->src)
        return 0;
    if (plane == 0)
        return 1;
    for (int k = 0; k < sc->nbands; k++)
        if (GDALRasterIO(GDALGetRasterBand(ds, k + 1), GF_Read, b->sx0, b->sy0, b->sw, b->sh,
                         (char *)b->src + k * plane * ss, b->sw, b->sh, to_gdal_type(sc->src_t), 0,
                         0) != CE_None)
            return 0;
    return 1;
}

/* ------------------------------------------------- the 3-stage pipeline */

/* Used when the source does not fit on the device: one reader thread reads
 * each block's source window (windows of successive blocks overlap) and
 * computes the block's grid, the device thread runs the block, a writer
 * thread writes it.  The resident-source pipeline below replaces it
 * whenever the image fits. */

#define QDEPTH 3

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct pipe {
    scene *sc;
    gg_context *ctx;
    gg_ortho_session *sess;
    GDALDatasetH rds, wds;   /* reader's own source handle; the output */
    int nblocks, rows;
    block *blocks;
    int read_done, run_done, write_done; /* counts */
    int error;
    char msg[1024];
    double lon_ref;
    double t_grid, t_read, t_write; /* busy seconds of the reader / writer */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* resident source (see "the resident-source pipeline" below) */
    int resident;
    int nstrips, strip_rows;
    struct strip *strips;
    int *queue, nqueue, qhead;  /* requested strips, in request order */
    int *ready, nready;         /* read, waiting for the upload */
    void **pool;                /* free staging buffers */
    int npool;
    int grid_done, finished;
    double t_put, t_wait;       /* device thread: uploads, idle waits */
    double t_readers;           /* summed busy seconds of the readers */
} pipe_t;

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
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *reader_loop(pipe_t *p, scene *sc);

static void *reader(void *arg)
{
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandler(keep_error);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES");
    reader_loop(p, sc);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
    return NULL;
}

static void *reader_loop(pipe_t *p, scene *sc)
{
    for (int k = 0; k < p->nblocks; k++) {
        pthread_mutex_lock(&p->mu);
        while (!p->error && k - p->write_done >= QDEPTH)
            pthread_cond_wait(&p->cv, &p->mu);
        const int stop = p->error;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
        block *b = &p->blocks[k];
        const double t0 = wall();
        if (!block_grid(sc, b, p->lon_ref)) {
            pipe_fail(p, "out of memory");
            return NULL;
        }
        block_window(sc, b, first_margin(sc));
        const double t1 = wall();
        if (!read_window(sc, p->rds, b)) {
            pipe_fail(p, "reading %s failed: %s", sc->src_name, last_error);
            return NULL;
        }
        p->t_grid += t1 - t0;
        p->t_read += wall() - t1;
        pthread_mutex_lock(&p->mu);
        p->read_done = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static void *writer_loop(pipe_t *p);

static void *writer(void *arg)
{
    CPLPushErrorHandler(keep_error);
    writer_loop(arg);
    CPLPopErrorHandler();
    return NULL;
}

static void *writer_loop(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t ds = tsize(sc->dst_t);
    for (int k = 0; k < p->nblocks; k++) {
        pthread_mutex_lock(&p->mu);
        while (!p->error && p->run_done <= k)
            pthread_cond_wait(&p->cv, &p->mu);
        const int stop = p->error;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
        block *b = &p->blocks[k];
        const size_t plane = (size_t)sc->out_w * b->rows;
        const double t0 = wall();
        for (int i = 0; i < sc->nbands; i++)
            if (GDALRasterIO(GDALGetRasterBand(p->wds, i + 1), GF_Write, 0, b->y0, sc->out_w,
                             b->rows, (char *)b->dst + i * plane * ds, sc->out_w, b->rows,
                             to_gdal_type(sc->dst_t), 0, 0) != CE_None) {
                pipe_fail(p, "writing %s failed: %s", sc->dst_name, last_error);
                return NULL;
            }
        p->t_write += wall() - t0;
        free(b->dst);
        free(b->src);
        free(b->nodes);
        b->dst = b->src = NULL;
        b->nodes = NULL;
        pthread_mutex_lock(&p->mu);
        p->write_done = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (!sc->o->quiet)
            GDALTermProgress((double)(k + 1) / p->nblocks, NULL, NULL);
    }
    return NULL;
}

/* Device part of one block (all bands); retries with a wider window when
 * the kernel reports a tap outside it. */
static int run_block(pipe_t *p, block *b)
{
    scene *sc = p->sc;
    const size_t ds = tsize(sc->dst_t);
    const size_t plane = (size_t)sc->out_w * b->rows;
    b->dst = malloc(plane * ds * sc->nbands);
    if (!b->dst)
        return 0;
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    for (int attempt = 0; attempt < 3; attempt++) {
        int any_miss = 0;
        for (int k = 0; k < sc->nbands; k++) {
            gg_ortho_image im = {(char *)b->src + (size_t)k * b->sw * b->sh * tsize(sc->src_t),
                                 sc->src_t, b->sx0, b->sy0, b->sw, b->sh, (size_t)b->sw,
                                 sc->width, sc->height};
            int missed = 0;
            if (gg_ortho_session_run(p->sess, &g, &im, (char *)b->dst + k * plane * ds,
                                     sc->dst_t, sc->out_w, b->rows, (size_t)sc->out_w,
                                     &missed) != GG_OK) {
                pipe_fail(p, "%s", gg_context_last_error(p->ctx));
                return 0;
            }
            any_miss |= missed;
        }
        if (!any_miss)
            return 1;
        if (sc->o->verbose)
            fprintf(stderr, "%s: block at row %d needed a wider source window\n", PROG, b->y0);
        if (attempt == 0)
            block_window(sc, b, 64 + 4 * sc->step);
        else {
            b->sx0 = b->sy0 = 0;
            b->sw = sc->width;
            b->sh = sc->height;
        }
        /* the reader is done with this block: read the wider window here */
        if (!read_window(sc, sc->src, b)) {
            pipe_fail(p, "reading %s failed", sc->src_name);
            return 0;
        }
    }
    pipe_fail(p, "internal error: source window still too small");
    return 0;
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
        pthread_mutex_lock(&p->mu);
        while (!p->error && p->read_done <= k)
            pthread_cond_wait(&p->cv, &p->mu);
        const int stop = p->error;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        if (!run_block(p, &p->blocks[k]))
            break;
        pthread_mutex_lock(&p->mu);
        p->run_done = k + 1;
        pthread_cond_broadcast(&p->cv);
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
 * Host memory: the staging pool, GRID_AHEAD grids and QDEPTH output blocks,
 * whatever the image size.  The kernel reports any tap outside the rows it
 * was given, so the result never depends on the planning: a block that
 * missed is run again with more rows (finally all of them). */

#define GRID_AHEAD 16

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
    pthread_cond_broadcast(&p->cv);
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
    const size_t plane = (size_t)sc->width * (size_t)p->strip_rows * tsize(sc->src_t);
    while (p->nready > 0 && !p->error) {
        const int i = p->ready[--p->nready];
        strip *st = &p->strips[i];
        pthread_mutex_unlock(&p->mu);
        const double t0 = wall();
        gg_status rc = GG_OK;
        for (int k = 0; k < sc->nbands && rc == GG_OK; k++)
            rc = gg_ortho_session_put_rows(p->sess, k, st->y0, st->rows,
                                           (const char *)st->buf + (size_t)k * plane,
                                           (size_t)sc->width);
        p->t_put += wall() - t0;
        pthread_mutex_lock(&p->mu);
        if (rc != GG_OK) {
            if (!p->error)
                snprintf(p->msg, sizeof p->msg, "%s", gg_context_last_error(p->ctx));
            p->error = 1;
        }
        st->state = STRIP_ON_DEVICE;
        p->pool[p->npool++] = st->buf;
        st->buf = NULL;
        pthread_cond_broadcast(&p->cv);
    }
}

/* Device thread: waits until rows [y0, y1) are on the device, uploading
 * strips as they come.  0 on error. */
static int wait_rows(pipe_t *p, int y0, int y1)
{
    const double t0 = wall();
    pthread_mutex_lock(&p->mu);
    request_rows(p, y0, y1);
    for (;;) {
        upload_ready(p);
        if (p->error || rows_on_device(p, y0, y1))
            break;
        if (p->nready == 0)
            pthread_cond_wait(&p->cv, &p->mu);
    }
    const int ok = !p->error;
    pthread_mutex_unlock(&p->mu);
    p->t_wait += wall() - t0;
    return ok;
}

static void *grid_thread(void *arg)
{
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandler(keep_error);
    for (int k = 0; k < p->nblocks; k++) {
        pthread_mutex_lock(&p->mu);
        while (!p->error && k - p->run_done >= GRID_AHEAD)
            pthread_cond_wait(&p->cv, &p->mu);
        const int stop = p->error;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        block *b = &p->blocks[k];
        const double t0 = wall();
        if (!block_grid(sc, b, p->lon_ref)) {
            pipe_fail(p, "out of memory");
            break;
        }
        block_window(sc, b, first_margin(sc));
        p->t_grid += wall() - t0;
        pthread_mutex_lock(&p->mu);
        if (b->sh > 0)
            request_rows(p, b->sy0, b->sy0 + b->sh);
        p->grid_done = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    CPLPopErrorHandler();
    return NULL;
}

static void *strip_reader(void *arg)
{
    pipe_t *p = arg;
    scene *sc = p->sc;
    CPLPushErrorHandler(keep_error);
    /* uncompressed GeoTIFF: read straight into our buffer, not through
     * GDAL's block cache (4x faster for full-width strips) */
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", "YES");
    GDALDatasetH ds = GDALOpenEx(sc->src_name, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL,
                                 NULL);
    if (!ds)
        pipe_fail(p, "cannot open %s again for reading: %s", sc->src_name, last_error);
    const size_t ss = tsize(sc->src_t);
    while (ds) {
        pthread_mutex_lock(&p->mu);
        while (!p->error && !p->finished && !(p->qhead < p->nqueue && p->npool > 0))
            pthread_cond_wait(&p->cv, &p->mu);
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
        const CPLErr e = GDALDatasetRasterIO(
            ds, GF_Read, 0, st->y0, sc->width, st->rows, buf, sc->width, st->rows,
            to_gdal_type(sc->src_t), sc->nbands, NULL, (int)ss, (int)(ss * sc->width),
            (GSpacing)(ss * sc->width * (size_t)p->strip_rows));
        const double t1 = wall();
        pthread_mutex_lock(&p->mu);
        p->t_readers += t1 - t0;
        if (e != CE_None) {
            p->pool[p->npool++] = buf;
            pthread_mutex_unlock(&p->mu);
            pipe_fail(p, "reading %s failed: %s", sc->src_name, last_error);
            break;
        }
        st->buf = buf;
        st->state = STRIP_READ;
        p->ready[p->nready++] = i;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    if (ds)
        GDALClose(ds);
    CPLSetThreadLocalConfigOption("GTIFF_DIRECT_IO", NULL);
    CPLPopErrorHandler();
    return NULL;
}

/* Device part of one block from the resident source; more rows and a new
 * run when the kernel reports a tap outside the rows it had. */
static int run_block_resident(pipe_t *p, block *b)
{
    scene *sc = p->sc;
    const size_t ds = tsize(sc->dst_t);
    const size_t plane = (size_t)sc->out_w * b->rows;
    b->dst = malloc(plane * ds * sc->nbands);
    if (!b->dst) {
        pipe_fail(p, "out of memory");
        return 0;
    }
    gg_ortho_grid g = {b->nodes, b->gnx, b->gny, sc->step};
    int y0 = b->sh > 0 ? b->sy0 : 0, y1 = b->sh > 0 ? b->sy0 + b->sh : 0;
    for (int attempt = 0; attempt < 3; attempt++) {
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
        if (sc->o->verbose)
            fprintf(stderr, "%s: block at row %d needed more source rows\n", PROG, b->y0);
        if (attempt == 0) {
            block_window(sc, b, 64 + 4 * sc->step);
            y0 = b->sh > 0 ? b->sy0 : 0;
            y1 = b->sh > 0 ? b->sy0 + b->sh : 0;
        } else {
            y0 = 0;
            y1 = sc->height;
        }
    }
    pipe_fail(p, "internal error: source rows still missing");
    return 0;
}

/* Readers: GG_ORTHO_READERS, else half the processors, 2 to 8. */
static int reader_count(void)
{
    const char *env = getenv("GG_ORTHO_READERS");
    if (env && atoi(env) > 0)
        return atoi(env) > 64 ? 64 : atoi(env);
    const long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n < 2 ? 2 : n > 8 ? 8 : (int)n;
}

/* Runs every block with the source resident on the device.  0 on error
 * (p->msg says why). */
static int run_resident(pipe_t *p)
{
    scene *sc = p->sc;
    const size_t ss = tsize(sc->src_t);
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
    const int nbuf = 2 * nreaders + 2;
    p->strips = calloc((size_t)p->nstrips, sizeof(strip));
    p->queue = calloc((size_t)p->nstrips, sizeof(int));
    p->ready = calloc((size_t)p->nstrips, sizeof(int));
    p->pool = calloc((size_t)nbuf, sizeof(void *));
    int ok = p->strips && p->queue && p->ready && p->pool;
    for (int i = 0; ok && i < p->nstrips; i++) {
        p->strips[i].y0 = i * srows;
        p->strips[i].rows = i * srows + srows <= sc->height ? srows : sc->height - i * srows;
    }
    for (int i = 0; ok && i < nbuf; i++) {
        p->pool[i] = malloc(row_bytes * (size_t)srows);
        ok = p->pool[i] != NULL;
        p->npool += ok;
    }
    if (!ok) {
        snprintf(p->msg, sizeof p->msg, "out of memory for the read buffers");
        p->error = 1;
    }
    pthread_t tg, tw, tr[64];
    int nr = 0, have_tg = 0, have_tw = 0;
    if (!p->error) {
        have_tg = pthread_create(&tg, NULL, grid_thread, p) == 0;
        have_tw = pthread_create(&tw, NULL, writer, p) == 0;
        for (; nr < nreaders; nr++)
            if (pthread_create(&tr[nr], NULL, strip_reader, p) != 0)
                break;
        if (!have_tg || !have_tw || nr == 0)
            pipe_fail(p, "cannot start the pipeline threads");
    }
    for (int k = 0; k < p->nblocks && !p->error; k++) {
        /* the block's grid, and room in the output queue; meanwhile upload */
        const double t0 = wall();
        pthread_mutex_lock(&p->mu);
        for (;;) {
            upload_ready(p);
            if (p->error || (p->grid_done > k && k - p->write_done < QDEPTH))
                break;
            if (p->nready == 0)
                pthread_cond_wait(&p->cv, &p->mu);
        }
        pthread_mutex_unlock(&p->mu);
        p->t_wait += wall() - t0;
        if (p->error || !run_block_resident(p, &p->blocks[k]))
            break;
        pthread_mutex_lock(&p->mu);
        p->run_done = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->finished = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < nr; i++)
        pthread_join(tr[i], NULL);
    if (have_tg)
        pthread_join(tg, NULL);
    if (have_tw)
        pthread_join(tw, NULL);
    for (int i = 0; i < p->nstrips && p->strips; i++)
        if (p->strips[i].buf)
            p->pool[p->npool++] = p->strips[i].buf;
    for (int i = 0; i < p->npool; i++)
        free(p->pool[i]);
    free(p->strips);
    free(p->queue);
    free(p->ready);
    free(p->pool);
    p->strips = NULL;
    p->queue = p->ready = NULL;
    p->pool = NULL;
    return !p->error;
}

/* ---------------------------------------------------- grid and DEM setup */

/* Output grid: gdalwarp's (GDALSuggestedWarpOutput2 with the same RPC
 * transformer), then -te / -tr / -ts as gdalwarp applies them. */
static int output_grid(scene *sc)
{
    const options *o = sc->o;
    char *wkt = NULL;
    OSRExportToWkt(sc->dst_srs, &wkt);
    char **to = transformer_options(sc, wkt);
    CPLFree(wkt);
    last_error[0] = 0;
    void *tr = GDALCreateGenImgProjTransformer2(sc->src, NULL, to);
    CSLDestroy(to);
    if (!tr)
        return fail(sc->src_name, "cannot create the RPC transformer: %s", last_error);
    double gt[6], ext[4];
    int w = 0, h = 0;
    const int need_suggest = !(o->has_te && (o->has_tr || o->has_ts));
    if (need_suggest) {
        last_error[0] = 0;
        if (GDALSuggestedWarpOutput2(sc->src, GDALGenImgProjTransform, tr, gt, &w, &h, ext, 0) !=
            CE_None) {
            GDALDestroyGenImgProjTransformer(tr);
            return fail(sc->src_name, "cannot compute the output grid: %s", last_error);
        }
    }
    GDALDestroyGenImgProjTransformer(tr);
    double minx = ext[0], miny = ext[1], maxx = ext[2], maxy = ext[3];
    if (o->has_te) {
        minx = o->te[0];
        miny = o->te[1];
        maxx = o->te[2];
        maxy = o->te[3];
    }
    if (o->has_tr) {
        const double xr = o->tr[0], yr = fabs(o->tr[1]);
        w = (int)((maxx - minx + xr / 2.0) / xr);
        h = (int)((fabs(maxy - miny) + yr / 2.0) / yr);
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
        w = (int)((maxx - minx + xr / 2.0) / xr);
        h = (int)((maxy - miny + yr / 2.0) / yr);
        sc->gt[0] = minx;
        sc->gt[1] = (maxx - minx) / w;
        sc->gt[3] = maxy;
        sc->gt[5] = -(maxy - miny) / h;
    } else
        memcpy(sc->gt, gt, sizeof gt);
    sc->gt[2] = sc->gt[4] = 0.0;
    if (w < 1 || h < 1)
        return fail(sc->src_name, "the output grid is empty");
    sc->out_w = w;
    sc->out_h = h;
    return 0;
}

/* Reads the part of the DEM the output needs (+4 px), and checks coverage. */
static int load_dem(scene *sc)
{
    if (!sc->dem)
        return 0;
    /* a coarse pass over the whole output */
    const int nx = 33, ny = 33;
    const int n = nx * ny;
    double *px = malloc(sizeof(double) * n), *py = malloc(sizeof(double) * n);
    double *planes = malloc(sizeof(double) * n * GG_ORTHO_PLANES);
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            px[j * nx + i] = (double)i * sc->out_w / (nx - 1);
            py[j * nx + i] = (double)j * sc->out_h / (ny - 1);
        }
    exact_nodes(sc, n, px, py, planes, n, sc->rpc.long_off);
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
    int x0 = (int)floor(xmin) - 6, y0 = (int)floor(ymin) - 6;
    int x1 = (int)ceil(xmax) + 6, y1 = (int)ceil(ymax) + 6;
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > W ? W : x1;
    y1 = y1 > H ? H : y1;
    if (xmin > xmax || x1 <= x0 || y1 <= y0) {
        x0 = y0 = 0;
        x1 = y1 = 1;
    }
    sc->demw.x0 = x0;
    sc->demw.y0 = y0;
    sc->demw.width = x1 - x0;
    sc->demw.height = y1 - y0;
    sc->dem_buf = malloc(sizeof(double) * sc->demw.width * sc->demw.height);
    if (!sc->dem_buf)
        return fail(sc->src_name, "out of memory for the DEM window");
    last_error[0] = 0;
    if (GDALRasterIO(GDALGetRasterBand(sc->dem, 1), GF_Read, x0, y0, sc->demw.width,
                     sc->demw.height, sc->dem_buf, sc->demw.width, sc->demw.height, GDT_Float64, 0,
                     0) != CE_None)
        return fail(sc->src_name, "reading the DEM failed: %s", last_error);
    sc->demw.data = sc->dem_buf;
    return 0;
}

/* Without -dem_missing every ground point of the scene must be on the DEM:
 * samples 21 x 21 image points (inverse RPC at the DEM-free height
 * HEIGHT_OFF) and names the fraction outside the DEM. */
static int check_coverage(scene *sc)
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
        return fail(sc->src_name,
                    "the DEM does not cover the scene: %.1f%% of it is outside %s; give "
                    "-dem_missing <height> or a larger DEM",
                    100.0 * out / tried, sc->o->dem);
    return 0;
}

/* The output grid must meet the scene: 65 x 65 output points through the
 * model, at least one inside the image. */
static int check_footprint(scene *sc)
{
    const int m = 65, n = m * m;
    double *px = malloc(sizeof(double) * n), *py = malloc(sizeof(double) * n);
    double *pl = malloc(sizeof(double) * n * GG_ORTHO_PLANES);
    int inside = 0;
    if (!px || !py || !pl) {
        free(px);
        free(py);
        free(pl);
        return fail(sc->src_name, "out of memory");
    }
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) {
            px[j * m + i] = (double)i * sc->out_w / (m - 1);
            py[j * m + i] = (double)j * sc->out_h / (m - 1);
        }
    exact_nodes(sc, n, px, py, pl, n, sc->rpc.long_off);
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
        return fail(sc->src_name, "the output grid misses the scene's footprint");
    return 0;
}

/* Grid step: the largest of 64, 32, ..., 4 whose interpolation error at
 * cell centres stays below 1e-6 source pixels (through the RPC scales). */
static void choose_step(scene *sc)
{
    if (sc->o->step > 0) {
        sc->step = sc->o->step;
        return;
    }
    const double px_per_lon = fabs(sc->rpc.samp_scale / sc->rpc.long_scale);
    const double px_per_lat = fabs(sc->rpc.line_scale / sc->rpc.lat_scale);
    for (int S = 64; S >= 4; S /= 2) {
        sc->step = S;
        block b = {0};
        b.y0 = sc->out_h / 2;
        b.rows = S * 2 < sc->out_h - b.y0 ? S * 2 : sc->out_h - b.y0;
        if (b.rows < 1) {
            b.y0 = 0;
            b.rows = sc->out_h;
        }
        if (!block_grid(sc, &b, sc->rpc.long_off))
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
            exact_nodes(sc, 1, &qx, &qy, ex, 1, sc->rpc.long_off);
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

/* ------------------------------------------------------------ one scene */

static char *temporary_name(const char *dst)
{
    return CPLStrdup(CPLSPrintf("%s.tmp%ld%s", dst, (long)getpid(),
                                 strlen(CPLGetExtension(dst)) ? CPLSPrintf(".%s", CPLGetExtension(dst)) : ""));
}

/* The device starts (on a GPU: driver, context, kernel modules, a good
 * part of a second) on its own thread while the first scene's GDAL setup
 * (RPCs, output grid, DEM, checks) runs; the scene waits for it only when
 * it needs it. */
typedef struct device_start {
    const char *device;
    pthread_t th;
    int joined;
    gg_status st;
    gg_context *ctx;
    char err[512];
    double seconds;
} device_start;

static void *device_start_main(void *arg)
{
    device_start *d = arg;
    const double t0 = wall();
    d->st = gg_context_create(d->device, &d->ctx, d->err, sizeof d->err);
    d->seconds = wall() - t0;
    return NULL;
}

static void device_begin(device_start *d, const char *device)
{
    memset(d, 0, sizeof *d);
    d->device = device;
    if (pthread_create(&d->th, NULL, device_start_main, d) != 0) {
        device_start_main(d);
        d->joined = 1;
    }
}

/* The context, or NULL when the device could not start (d->err says why). */
static gg_context *device_wait(device_start *d)
{
    if (!d->joined) {
        pthread_join(d->th, NULL);
        d->joined = 1;
    }
    return d->st == GG_OK ? d->ctx : NULL;
}

/* Returned by process_scene when the device cannot start: fatal. */
#define SCENE_NO_DEVICE 2

static int process_scene(const options *o, device_start *dev, const char *src_name,
                         const char *dst_name)
{
    gg_context *ctx = NULL;
    const double t_start = wall();
    scene sc;
    memset(&sc, 0, sizeof sc);
    sc.o = o;
    sc.src_name = src_name;
    sc.dst_name = dst_name;
    int rc = 1;
    char *tmp = NULL;
    GDALDatasetH out = NULL, rds = NULL;
    GDALDriverH drv = NULL;
    gg_ortho_session *sess = NULL;
    pipe_t p;
    memset(&p, 0, sizeof p);

    last_error[0] = 0;
    sc.src = GDALOpen(src_name, GA_ReadOnly);
    if (!sc.src) {
        fail(src_name, "cannot open: %s", last_error);
        goto done;
    }
    sc.width = GDALGetRasterXSize(sc.src);
    sc.height = GDALGetRasterYSize(sc.src);
    sc.nbands = GDALGetRasterCount(sc.src);
    if (sc.nbands < 1) {
        fail(src_name, "has no raster band");
        goto done;
    }
    if (read_rpc(&sc))
        goto done;
    sc.src_gdt = GDALGetRasterDataType(GDALGetRasterBand(sc.src, 1));
    sc.src_t = to_ortho_type(sc.src_gdt);
    sc.dst_t = sc.src_t;
    if (o->ot) {
        GDALDataType t = GDALGetDataTypeByName(o->ot);
        if (t != GDT_Byte && t != GDT_UInt16 && t != GDT_Int16 && t != GDT_Float32) {
            fail(NULL, "-ot %s: supported types are Byte, UInt16, Int16, Float32", o->ot);
            goto done;
        }
        sc.dst_t = to_ortho_type(t);
    }
    sc.dst_gdt = to_gdal_type(sc.dst_t);

    /* CRSs: the RPC ground is WGS84 lon/lat; output -t_srs else that */
    sc.wgs84 = srs_from("EPSG:4326");
    sc.dst_srs = srs_from(o->t_srs ? o->t_srs : "EPSG:4326");
    if (!sc.dst_srs) {
        fail(NULL, "-t_srs '%s' is not understood", o->t_srs);
        goto done;
    }
    if (!OSRIsSame(sc.dst_srs, sc.wgs84)) {
        sc.to_ll = OCTNewCoordinateTransformation(sc.dst_srs, sc.wgs84);
        if (!sc.to_ll) {
            fail(src_name, "no transformation from -t_srs to WGS84");
            goto done;
        }
    }
    if (open_dem(&sc))
        goto done;
    sc.oo.resampling = (gg_ortho_method)o->resampling;
    sc.oo.dem_interp = (gg_ortho_method)o->dem_interp;
    sc.oo.rpc_height = o->rpc_height;
    sc.oo.height_scale = 1.0;
    sc.oo.has_dem_missing = o->has_dem_missing;
    sc.oo.dem_missing = o->dem_missing;
    /* nodata as gdalwarp: the source band's unless -srcnodata; the output's
     * is -dstnodata, else the source's */
    int has = 0;
    double nd = GDALGetRasterNoDataValue(GDALGetRasterBand(sc.src, 1), &has);
    sc.has_srcnodata = o->has_srcnodata || has;
    sc.srcnodata = o->has_srcnodata ? o->srcnodata : nd;
    sc.has_dstnodata = o->has_dstnodata || sc.has_srcnodata;
    sc.dstnodata = o->has_dstnodata ? o->dstnodata : sc.srcnodata;
    sc.oo.has_src_nodata = sc.has_srcnodata;
    sc.oo.src_nodata = sc.srcnodata;
    sc.oo.dst_init = sc.has_dstnodata ? sc.dstnodata : 0.0;

    if (check_coverage(&sc))
        goto done;
    if (output_grid(&sc))
        goto done;
    if (load_dem(&sc))
        goto done;
    if (check_footprint(&sc))
        goto done;
    choose_step(&sc);
    {
        /* GDAL widens the kernel when it downsamples by more than 5 % */
        const double scale = sqrt((double)sc.out_w * sc.out_h / ((double)sc.width * sc.height));
        if (scale < 0.95 && o->resampling != GG_ORTHO_METHOD_NEAR)
            fprintf(stderr,
                    "Warning 1: %s: %s: the output has %.2f times the source resolution; "
                    "gdalwarp would stretch its %s kernel, gdal_ortho keeps the 4x4 one\n",
                    PROG, src_name, scale, method_names[o->resampling]);
    }
    {
        const double t0 = wall();
        ctx = device_wait(dev);
        if (getenv("GG_ORTHO_TIMING"))
            fprintf(stderr,
                    "%s: timing: GDAL setup (RPCs, output grid, DEM, checks) %.3f s; device "
                    "start %.3f s on its own thread, waited %.3f s\n",
                    PROG, t0 - t_start, dev->seconds, wall() - t0);
        if (!ctx) {
            rc = SCENE_NO_DEVICE;
            goto done;
        }
    }
    if (o->verbose) {
        int bx = 0, by = 0;
        double occ = 0;
        gg_ortho_launch_info(ctx, &bx, &by, &occ);
        fprintf(stderr,
                "%s: %s: output %d x %d, grid step %d, device %s, work group %d x %d "
                "(occupancy %.2f)\n",
                PROG, src_name, sc.out_w, sc.out_h, sc.step, gg_context_device_name(ctx), bx, by,
                occ);
    }

    if (gg_ortho_session_create(ctx, &sc.rpc, sc.dem ? &sc.demw : NULL, &sc.oo, &sess) != GG_OK) {
        fail(src_name, "%s", gg_context_last_error(ctx));
        goto done;
    }

    /* output, under a temporary name */
    drv = GDALGetDriverByName(o->format ? o->format : "GTiff");
    if (!drv || !GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL)) {
        fail(NULL, "format %s cannot be created", o->format ? o->format : "GTiff");
        goto done;
    }
    tmp = temporary_name(dst_name);
    last_error[0] = 0;
    out = GDALCreate(drv, tmp, sc.out_w, sc.out_h, sc.nbands, sc.dst_gdt, o->co);
    if (!out) {
        fail(src_name, "cannot create %s: %s", dst_name, last_error[0] ? last_error : "");
        CPLFree(tmp);
        tmp = NULL;
        goto done;
    }
    GDALSetGeoTransform(out, sc.gt);
    {
        char *wkt = NULL;
        OSRExportToWkt(sc.dst_srs, &wkt);
        GDALSetProjection(out, wkt);
        CPLFree(wkt);
    }
    for (int k = 0; k < sc.nbands; k++) {
        GDALRasterBandH b = GDALGetRasterBand(out, k + 1);
        if (sc.has_dstnodata)
            GDALSetRasterNoDataValue(b, sc.dstnodata);
        GDALSetRasterColorInterpretation(
            b, GDALGetRasterColorInterpretation(GDALGetRasterBand(sc.src, k + 1)));
    }

    /* blocks: rows from free device memory, at least 8 blocks for overlap */
    {
        const double src_per_dst =
            fmax(1.0, (double)sc.width * sc.height / ((double)sc.out_w * sc.out_h)) * 2.0;
        int rows = 0;
        if (gg_plan_rows(ctx, sc.out_w, sc.out_h,
                         gg_ortho_bytes_per_pixel(sc.src_t, sc.dst_t, src_per_dst) * sc.nbands,
                         0, &rows) != GG_OK) {
            fail(src_name, "%s", gg_context_last_error(ctx));
            goto done;
        }
        /* the resident source: at least 32 blocks, so that reading,
         * running and writing overlap finely */
        p.resident = resident_source(&sc, ctx);
        const int cap = (sc.out_h + (p.resident ? 31 : 7)) / (p.resident ? 32 : 8);
        rows = rows < cap ? rows : cap;
        rows = rows < 16 ? (sc.out_h < 16 ? sc.out_h : 16) : rows;
        const long host_cap = (256L << 20) / ((long)sc.out_w * 8 * sc.nbands);
        if (host_cap >= 16 && rows > host_cap)
            rows = (int)host_cap;
        /* whole grid steps: the grid nodes are then the same output pixels
         * whatever the block height, so the result does not depend on the
         * device memory or the pipeline */
        rows = rows < sc.step ? sc.step : rows / sc.step * sc.step;
        if (getenv("GG_ORTHO_BLOCK_ROWS") && atoi(getenv("GG_ORTHO_BLOCK_ROWS")) > 0)
            rows = atoi(getenv("GG_ORTHO_BLOCK_ROWS")); /* tests */
        rows = rows > sc.out_h ? sc.out_h : rows;
        p.rows = rows;
        p.nblocks = (sc.out_h + rows - 1) / rows;
    }
    p.sc = &sc;
    p.ctx = ctx;
    p.sess = sess;
    p.wds = out;
    p.lon_ref = sc.rpc.long_off;
    rds = GDALOpen(src_name, GA_ReadOnly);
    p.rds = rds ? rds : sc.src;
    p.blocks = calloc((size_t)p.nblocks, sizeof(block));
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    for (int k = 0; k < p.nblocks; k++) {
        p.blocks[k].y0 = k * p.rows;
        p.blocks[k].rows = k * p.rows + p.rows <= sc.out_h ? p.rows : sc.out_h - k * p.rows;
    }
    if (p.resident &&
        gg_ortho_session_set_source(sess, sc.src_t, sc.width, sc.height, sc.nbands) != GG_OK)
        p.resident = 0; /* refused after all: the windowed pipeline */
    if (o->verbose)
        fprintf(stderr, "%s: %s: %d blocks of %d rows, source %s\n", PROG, src_name, p.nblocks,
                p.rows, p.resident ? "resident on the device" : "read per block window");
    if (!o->quiet)
        GDALTermProgress(0.0, NULL, NULL);
    const double t_pipe = wall();
    if (p.resident)
        run_resident(&p);
    else
        run_windowed(&p);
    if (getenv("GG_ORTHO_TIMING")) {
        double up, ke, dn;
        long long px;
        gg_ortho_session_times(sess, &up, &ke, &dn, &px);
        fprintf(stderr,
                "%s: timing: %d blocks, upload %.3f s, kernel %.4f s (%.2f Gpix/s), "
                "download %.3f s, %lld pixels x %d bands\n",
                PROG, p.nblocks, up, ke, ke > 0 ? px / ke / 1e9 : 0.0, dn, px / sc.nbands,
                sc.nbands);
        if (p.resident)
            fprintf(stderr,
                    "%s: timing: resident source, %d strips of %d rows; grid thread %.3f s, "
                    "readers %.3f s (summed), device thread: uploads %.3f s, idle %.3f s; "
                    "writer %.3f s; pipeline wall %.3f s\n",
                    PROG, p.nstrips, p.strip_rows, p.t_grid, p.t_readers, p.t_put, p.t_wait,
                    p.t_write, wall() - t_pipe);
        else
            fprintf(stderr,
                    "%s: timing: host grid+windows %.3f s, GDAL reads %.3f s, GDAL writes %.3f s; "
                    "pipeline wall %.3f s\n",
                    PROG, p.t_grid, p.t_read, p.t_write, wall() - t_pipe);
    }
    for (int k = 0; k < p.nblocks; k++) {
        free(p.blocks[k].nodes);
        free(p.blocks[k].src);
        free(p.blocks[k].dst);
    }
    free(p.blocks);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    if (p.error) {
        fail(src_name, "%s", p.msg);
        goto done;
    }
    {
        const double t0 = wall();
        last_error[0] = 0;
        GDALClose(out);
        out = NULL;
        if (getenv("GG_ORTHO_TIMING"))
            fprintf(stderr, "%s: timing: closing the output %.3f s\n", PROG, wall() - t0);
    }
    if (last_error[0]) {
        fail(src_name, "writing %s failed: %s", dst_name, last_error);
        goto done;
    }
    /* replace the destination only now */
    {
        VSIStatBufL st;
        if (VSIStatL(dst_name, &st) == 0)
            GDALDeleteDataset(drv, dst_name);
        if (GDALRenameDataset(drv, dst_name, tmp) != CE_None &&
            VSIRename(tmp, dst_name) != 0) {
            fail(src_name, "cannot rename the output to %s", dst_name);
            goto done;
        }
    }
    CPLFree(tmp);
    tmp = NULL;
    rc = 0;
done:
    if (out)
        GDALClose(out);
    if (tmp) {
        CPLPushErrorHandler(CPLQuietErrorHandler);
        if (drv)
            GDALDeleteDataset(drv, tmp);
        VSIUnlink(tmp);
        CPLPopErrorHandler();
        CPLFree(tmp);
    }
    gg_ortho_session_destroy(sess);
    if (rds)
        GDALClose(rds);
    if (sc.src)
        GDALClose(sc.src);
    if (sc.dem)
        GDALClose(sc.dem);
    free(sc.dem_buf);
    if (sc.to_ll)
        OCTDestroyCoordinateTransformation(sc.to_ll);
    if (sc.to_dem)
        OCTDestroyCoordinateTransformation(sc.to_dem);
    if (sc.dst_srs)
        OSRDestroySpatialReference(sc.dst_srs);
    if (sc.wgs84)
        OSRDestroySpatialReference(sc.wgs84);
    if (sc.dem_srs)
        OSRDestroySpatialReference(sc.dem_srs);
    return rc;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
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
    dev.joined = 1;
    dev.st = GG_ERR_UNAVAILABLE;
    if (want_device)
        device_begin(&dev, early_device);
    GDALAllRegister();
    argc = GDALGeneralCmdLineProcessor(argc, &argv, 0);
    if (argc < 1)
        return 1;
    options o;
    memset(&o, 0, sizeof o);
    o.dem_interp = GG_ORTHO_METHOD_BILINEAR;
    o.resampling = GG_ORTHO_METHOD_NEAR;
    char **pos = NULL;
    int rc = 1;
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
        } else if (EQUAL(a, "-dem") && need(argc, argv, i, 1))
            o.dem = argv[++i];
        else if (EQUAL(a, "-dem_srs") && need(argc, argv, i, 1))
            o.dem_srs = argv[++i];
        else if (EQUAL(a, "-t_srs") && need(argc, argv, i, 1))
            o.t_srs = argv[++i];
        else if (EQUAL(a, "-of") && need(argc, argv, i, 1))
            o.format = argv[++i];
        else if (EQUAL(a, "-ot") && need(argc, argv, i, 1))
            o.ot = argv[++i];
        else if (EQUAL(a, "-outdir") && need(argc, argv, i, 1))
            o.outdir = argv[++i];
        else if (EQUAL(a, "-device") && need(argc, argv, i, 1))
            o.device = argv[++i];
        else if (EQUAL(a, "-co") && need(argc, argv, i, 1))
            o.co = CSLAddString(o.co, argv[++i]);
        else if ((EQUAL(a, "-dem_interp") || EQUAL(a, "-r")) && need(argc, argv, i, 1)) {
            if (!parse_method(argv[++i], EQUAL(a, "-r") ? &o.resampling : &o.dem_interp)) {
                fail(NULL, "%s %s: use near, bilinear or cubic", a, argv[i]);
                goto end;
            }
        } else if (EQUAL(a, "-dem_missing") && need(argc, argv, i, 1)) {
            if (!number(a, argv[++i], &o.dem_missing))
                goto end;
            o.has_dem_missing = 1;
        } else if (EQUAL(a, "-rpc_height") && need(argc, argv, i, 1)) {
            if (!number(a, argv[++i], &o.rpc_height))
                goto end;
        } else if (EQUAL(a, "-srcnodata") && need(argc, argv, i, 1)) {
            if (!number(a, argv[++i], &o.srcnodata))
                goto end;
            o.has_srcnodata = 1;
        } else if (EQUAL(a, "-dstnodata") && need(argc, argv, i, 1)) {
            if (!number(a, argv[++i], &o.dstnodata))
                goto end;
            o.has_dstnodata = 1;
        } else if (EQUAL(a, "-grid_step") && need(argc, argv, i, 1)) {
            if (!number(a, argv[++i], &v) || v < 1 || v > 1024) {
                fail(NULL, "-grid_step: 1 to 1024");
                goto end;
            }
            o.step = (int)v;
        } else if (EQUAL(a, "-tr") && need(argc, argv, i, 2)) {
            if (!number(a, argv[i + 1], &o.tr[0]) || !number(a, argv[i + 2], &o.tr[1]))
                goto end;
            i += 2;
            if (!(o.tr[0] > 0) || o.tr[1] == 0) {
                fail(NULL, "-tr: resolutions must be positive");
                goto end;
            }
            o.has_tr = 1;
        } else if (EQUAL(a, "-ts") && need(argc, argv, i, 2)) {
            o.ts[0] = atoi(argv[i + 1]);
            o.ts[1] = atoi(argv[i + 2]);
            i += 2;
            if (o.ts[0] < 1 || o.ts[1] < 1) {
                fail(NULL, "-ts: width and height must be positive");
                goto end;
            }
            o.has_ts = 1;
        } else if (EQUAL(a, "-te") && need(argc, argv, i, 4)) {
            for (int k = 0; k < 4; k++)
                if (!number(a, argv[i + 1 + k], &o.te[k]))
                    goto end;
            i += 4;
            if (!(o.te[2] > o.te[0] && o.te[3] > o.te[1])) {
                fail(NULL, "-te: xmin < xmax and ymin < ymax are needed");
                goto end;
            }
            o.has_te = 1;
        } else if (EQUAL(a, "-q") || EQUAL(a, "-quiet"))
            o.quiet = 1;
        else if (EQUAL(a, "-v"))
            o.verbose = 1;
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
            fail(NULL, "unknown option %s (see --help)", a);
            goto end;
        } else
            pos = CSLAddString(pos, a);
    }
    if (o.has_tr && o.has_ts) {
        fail(NULL, "-tr and -ts cannot be used together");
        goto end;
    }
    const int npos = CSLCount(pos);
    if (o.outdir ? npos < 1 : npos != 2) {
        usage(stderr);
        fail(NULL, o.outdir ? "no source given" : "a source and a destination are needed "
                                                  "(several sources: -outdir)");
        goto end;
    }
    if (o.outdir) {
        VSIStatBufL st;
        if (VSIStatL(o.outdir, &st) != 0 || !VSI_ISDIR(st.st_mode)) {
            fail(NULL, "-outdir %s is not a folder", o.outdir);
            goto end;
        }
    }
    /* GDAL's block cache defaults to 5 % of the RAM: the whole output
     * would sit in it and be written by GDALClose at the end, on one
     * thread, after the pipeline.  A small cache makes the writer thread
     * write as it goes (and bounds host memory). */
    if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL))
        GDALSetCacheMax64((GIntBig)256 << 20);
    CPLPushErrorHandler(keep_error);
    if (!want_device || (o.device ? !dev.device || strcmp(o.device, dev.device) : !!dev.device)) {
        /* the early look-up missed (e.g. -device from an @argfile) */
        if (device_wait(&dev))
            gg_context_destroy(dev.ctx);
        device_begin(&dev, o.device);
        want_device = 1;
    }
    int failed = 0, notice_done = 0;
    const int nsrc = o.outdir ? npos : 1;
    for (int i = 0; i < nsrc; i++) {
        char dst[4096];
        if (o.outdir)
            snprintf(dst, sizeof dst, "%s", CPLFormFilename(o.outdir, CPLGetBasename(pos[i]), "tif"));
        else
            snprintf(dst, sizeof dst, "%s", pos[1]);
        VSIStatBufL a, b;
        if (VSIStatL(pos[i], &a) == 0 && VSIStatL(dst, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            fail(pos[i], "the destination is the source itself");
            failed++;
            continue;
        }
        if (o.outdir && !o.quiet)
            fprintf(stderr, "%s -> %s\n", pos[i], dst);
        const int r = process_scene(&o, &dev, pos[i], dst);
        if (dev.joined && dev.st == GG_OK && !notice_done) {
            notice_done = 1;
            if (*gg_context_notice(dev.ctx) && !o.quiet)
                fprintf(stderr, "%s: %s\n", PROG, gg_context_notice(dev.ctx));
        }
        if (r == SCENE_NO_DEVICE)
            break;
        failed += r;
    }
    CPLPopErrorHandler();
    const int no_device = !device_wait(&dev);
    if (no_device)
        fail(NULL, "device: %s", dev.err);
    else if (nsrc > 1 && failed)
        fprintf(stderr, "%s: %d of %d scenes failed\n", PROG, failed, nsrc);
    rc = failed || no_device ? 1 : 0;
end:
    if (want_device && device_wait(&dev))
        gg_context_destroy(dev.ctx);
    CSLDestroy(pos);
    CSLDestroy(o.co);
    CSLDestroy(argv);
    GDALDestroyDriverManager();
    return rc;
}
