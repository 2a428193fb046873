/*
 * gg_coreg_app.c -- gdal_coreg as library functions (gg_coreg_app.h):
 * coregistration in one command: dense offsets of the secondary against
 * the primary (the xcorr op on the device), a robust polynomial fit of
 * them (gg_coreg_fit), and the secondary resampled onto the primary grid
 * (the resample op) written through gg_app.
 *
 * The offsets are small (one pixel per window) and are read whole through
 * the GG driver (which processes the SLCs block by block); the fit is host
 * float64; the resampling goes through gg_app like every utility, so -of,
 * -co, -device, -q and -of GGVRT (a lazily resampled secondary) behave as
 * elsewhere.  The fit's files (-fit, -prm) are the resampled output's side
 * outputs: written under temporary names once it is, and committed with it
 * in one step (gg_output.h), or not at all.
 *
 * MIT licence.
 */
#include "gg_coreg_app.h"

#include "gg_app.h"
#include "gg_input_files.h"
#include "gg_output.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"
#include "gg_processed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "geogpu.h"

/* values of the hidden flags that gg_coreg_app hands to the resample step */
static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[1];
    /* -interp is the resample op's flag (its table); these are hidden,
     * and -carrier is this utility's (auto, handled by gg_coreg_app) */
    static const char *const keys[][2] = {{"-poly", "poly"}, {"-grid", "grid"},
                                          {"-outsize", "outsize"}, {"-carrier", "carrier"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (EQUAL(argv[*pi], keys[i][0])) {
            if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
                return -1;
            return gg_app_set(app, keys[i][1], v[0]);
        }
    return 0;
}

static const gg_app_flag flags[] = {
    {"-order", "<n>", "int", "polynomial order of the fit, 1 to 3 (default 1)"},
    {"-snr", "<min>", "float", "use only windows with SNR >= min (default 0)"},
    {"-minpeak", "<min>", "float", "use only windows with NCC peak >= min (default 0)"},
    {"-kcut", "<k>", "float", "final outlier cut in robust sigmas (default 3)"},
    {"-fit", "<file>", "file", "write the fit as JSON (coefficients, counts, RMS)"},
    {"-prm", "<file>", "file", "write GMTSAR's 8 PRM lines (linear part of the fit)"},
    {"-dense", NULL, "bool", "resample from the dense offsets (bilinear between window centres) "
                             "instead of the polynomial; nodata windows take the fit"},
    {"-offsets", "<file>", "dataset", "as -dense with the offsets of this raster (gdal_xcorr's "
                                      "output: band 1 down, band 2 across, optional snr band 3, "
                                      "peak band 7)"},
    {"-carrier", "<c>", "string", "the secondary's carrier, demodulated before the interpolation "
                                  "and restored at the sample point: auto (default: estimated from "
                                  "the secondary), none, or <azimuth>,<range> in cycles/pixel"},
    {NULL, NULL, NULL, NULL}};

static int side_outputs(gg_app *app, const char *product, gg_output_set *set);

static const gg_app_spec spec = {
    .name = "gdal_coreg",
    .operation = "resample",
    .purpose = "Coregisters a secondary SLC to a primary: dense sub-pixel offsets (gdal_xcorr's\n"
               "quality mode), a robust polynomial fit of them, and the secondary resampled\n"
               "onto the primary grid (CFloat32; pixels mapping outside the secondary are nodata).",
    /* the offsets' flags: the xcorr op's options (also_operation); -interp:
     * the resample op's */
    .synopsis = "[-ot CFloat32|CInt16]",
    .help = "  -ot CInt16         round and clamp the output to int16 I/Q (nodata 0 by default)\n"
            "  -skip default      here 64x64 on large images, closer on small ones: 10 windows\n"
            "                     per axis, at least a quarter window apart\n",
    .operands = "<primary> <secondary> <dst_dataset>",
    .required = NULL,
    .flags = flags,
    .also_operation = "xcorr",
    .parse_flag = parse_flag,
    .side_outputs = side_outputs,
    .register_drivers = NULL, /* the caller registers (gdal_coreg.c: GGRegisterDrivers) */
};

/* the resample step's own flag with a value (handed on with gg_app's) */
static const char *const rs_flags[] = {"-interp", NULL};

/* The first failure GDAL reports during a step (the most specific: a
 * failed read names its file; the layers above only repeat it). */
typedef struct first_error {
    int set;
    char msg[1024];
} first_error;

static void CPL_STDCALL keep_first_error(CPLErr cls, CPLErrorNum no, const char *msg)
{
    first_error *f = CPLGetErrorHandlerUserData();
    if (cls == CE_Warning)
        CPLDefaultErrorHandler(cls, no, msg);
    if (cls < CE_Failure || f->set)
        return;
    snprintf(f->msg, sizeof f->msg, "%s", !strncmp(msg, "GG: ", 4) ? msg + 4 : msg);
    f->set = 1;
}

static int fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "ERROR 1: gdal_coreg: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return 1;
}

/* The fit's files of the run in progress, for side_outputs: -fit's JSON
 * and -prm's lines (NULL: not asked). */
static const char *side_fit_path, *side_json, *side_prm_path, *side_prm;

static int write_text(gg_output_set *set, const char *path, const char *text)
{
    const char *tmp = gg_output_set_add(set, path, NULL);
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : fail("cannot write '%s'%s", path, "");
}

/* -fit and -prm as the resampled output's side outputs (gg_app_spec). */
static int side_outputs(gg_app *app, const char *product, gg_output_set *set)
{
    (void)app;
    (void)product;
    if (side_fit_path && write_text(set, side_fit_path, side_json))
        return 1;
    return side_prm_path && write_text(set, side_prm_path, side_prm);
}

/* Window centres (primary pixel coordinates, centres at integers) of an
 * nx x ny offset raster with geotransform ogt: offsets pixel centre ->
 * georeferenced (or primary pixel) coordinates -> primary pixel through
 * inv (the primary's inverse geotransform, NULL: none), then GDAL's
 * corner convention to centres-at-integers. */
static void window_centres(const double *ogt, const double *inv, int nx, int ny, double *xs,
                           double *ys)
{
    for (int Y = 0; Y < ny; Y++)
        for (int X = 0; X < nx; X++) {
            double gx = ogt[0] + ogt[1] * (X + 0.5) + ogt[2] * (Y + 0.5);
            double gy = ogt[3] + ogt[4] * (X + 0.5) + ogt[5] * (Y + 0.5);
            if (inv) {
                const double px = inv[0] + inv[1] * gx + inv[2] * gy;
                const double py = inv[3] + inv[4] * gx + inv[5] * gy;
                gx = px;
                gy = py;
            }
            xs[(size_t)Y * nx + X] = gx - 0.5;
            ys[(size_t)Y * nx + X] = gy - 0.5;
        }
}

/* Windows per axis the default spacing aims at: the xcorr op's 64 px
 * leaves a small image a handful of windows (a 250 x 250 SLC: 3 x 3), too
 * few for a robust fit. */
#define AUTO_WINDOWS 10

/* An "AxB" (or "A") option value of the xcorr op: the one set, else the
 * op table's default. */
static void xc_size(char **xc_opts, const char *key, int *a, int *b)
{
    const char *v = CSLFetchNameValue(xc_opts, key);
    int nxc = 0;
    const gg_option *xo = gg_op_options("xcorr", &nxc);
    for (int k = 0; !v && k < nxc; k++)
        if (!strcmp(xo[k].key, key))
            v = xo[k].default_value;
    *a = *b = 0;
    if (v && sscanf(v, "%d%*[xX,]%d", a, b) == 1)
        *b = *a;
}

/* The window spacing when neither -skip nor -count is given: as the
 * xcorr op's (64 px) on large images, closer on small ones so that there
 * are AUTO_WINDOWS windows per axis, but never closer than a quarter
 * window.  The room the windows have comes from the op itself (its grid
 * at a spacing of 1), so the grid's arithmetic stays the op's.  Adds
 * skip=... to *xc_opts; leaves it unchanged where the op refuses the
 * options (the real run reports that). */
static void auto_skip(char ***xc_opts, int width, int height)
{
    if (CSLFetchNameValue(*xc_opts, "skip") || CSLFetchNameValue(*xc_opts, "count"))
        return;
    char e[256];
    gg_op *op = NULL;
    if (gg_op_new("xcorr", &op, e, sizeof e) != GG_OK)
        return;
    int ok = 1;
    for (char **o = *xc_opts; ok && o && *o; o++) {
        char *key = NULL;
        const char *val = CPLParseNameValue(*o, &key);
        ok = key && gg_op_set(op, key, val) == GG_OK;
        CPLFree(key);
    }
    gg_raster_info in, out;
    memset(&in, 0, sizeof in);
    in.width = width;
    in.height = height;
    in.bands = 2;
    in.type = GG_CFLOAT32;
    ok = ok && gg_op_set(op, "skip", "1x1") == GG_OK && gg_op_prepare(op, &in, &out) == GG_OK;
    gg_op_free(op);
    if (!ok)
        return;
    int ww, wh, kx, ky;
    xc_size(*xc_opts, "window", &ww, &wh);
    xc_size(NULL, "skip", &kx, &ky); /* the op's default */
    const int span[2] = {out.width - 1, out.height - 1}, win[2] = {ww, wh};
    int k[2] = {kx, ky};
    for (int a = 0; a < 2; a++) {
        const int fit = span[a] / (AUTO_WINDOWS - 1), least = win[a] / 4 > 1 ? win[a] / 4 : 1;
        if (fit < k[a])
            k[a] = fit > least ? fit : least;
    }
    *xc_opts = CSLSetNameValue(*xc_opts, "skip", CPLSPrintf("%dx%d", k[0], k[1]));
}

/* What to change when the image gives too few windows (xc_opts: the
 * user's): -skip when one was given, else the window (the default spacing
 * is already as close as it goes). */
static const char *grid_hint(char **xc_opts)
{
    if (CSLFetchNameValue(xc_opts, "count"))
        return "a larger -count gives more";
    if (CSLFetchNameValue(xc_opts, "skip"))
        return "a smaller -skip (or -window, -search) gives more";
    int ww, wh;
    xc_size(xc_opts, "window", &ww, &wh);
    return CPLSPrintf("a smaller -window (e.g. -window %d %d) or -search gives more",
                      ww / 2 > 4 ? ww / 2 : 4, wh / 2 > 4 ? wh / 2 : 4);
}

/* Opens the primary and the secondary SLCs (names[0], names[1]), which must
 * be complex and of one size; 1 after the error (nothing left open). */
static int open_slcs(const char *const names[2], GDALDatasetH in[2])
{
    for (int k = 0; k < 2; k++) {
        /* read-only, no statistics: nothing is written next to the inputs;
         * GDAL's reason goes into the one error line */
        CPLErrorReset();
        CPLPushErrorHandler(CPLQuietErrorHandler);
        in[k] = GDALOpenEx(names[k], GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR,
                           NULL, NULL, NULL);
        CPLPopErrorHandler();
        if (!in[k]) {
            if (k)
                GDALClose(in[0]);
            const char *why = CPLGetLastErrorMsg();
            return fail("cannot open '%s'%s", names[k], *why ? CPLSPrintf(": %s", why) : "");
        }
    }
    int err = 0;
    const int w0 = GDALGetRasterXSize(in[0]), h0 = GDALGetRasterYSize(in[0]);
    const int w1 = GDALGetRasterXSize(in[1]), h1 = GDALGetRasterYSize(in[1]);
    if (w0 != w1 || h0 != h1)
        err = fail("%s", CPLSPrintf("primary is %dx%d but secondary is %dx%d: they must have the "
                                    "same size (crop or pad first)", w0, h0, w1, h1), "");
    for (int k = 0; !err && k < 2; k++) {
        const GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(in[k], 1));
        if (!GDALDataTypeIsComplex(t))
            err = fail("%s", CPLSPrintf("%s '%s' is %s, not a complex SLC", k ? "secondary" : "primary",
                                        names[k], GDALGetDataTypeName(t)), "");
    }
    if (err) {
        GDALClose(in[0]);
        GDALClose(in[1]);
        return 1;
    }
    return 0;
}

/* The xcorr op with the options opts set; NULL after the error. */
static gg_op *xcorr_op(char **opts)
{
    char e[512];
    gg_op *op = NULL;
    if (gg_op_new("xcorr", &op, e, sizeof e) != GG_OK) {
        fail("%s%s", e, "");
        return NULL;
    }
    for (char **o = opts; o && *o; o++) {
        char *key = NULL;
        const char *val = CPLParseNameValue(*o, &key);
        if (gg_op_set(op, key, val) != GG_OK) {
            fail("%s%s", gg_op_last_error(op), "");
            CPLFree(key);
            gg_op_free(op);
            return NULL;
        }
        CPLFree(key);
    }
    return op;
}

/* Bands 1, 2, 3 and 7 (down, across, snr, peak) of the nx x ny offset
 * raster into the four planes of n = nx * ny values from v.  A strip at a
 * time: one computation per strip (its other bands come from the block
 * cache), progress after each.  1 when all were read. */
static int read_offset_strips(GDALDatasetH ds, int nx, int ny, int quiet, double *v)
{
    const size_t n = (size_t)nx * ny;
    static const int bands[4] = {1, 2, 3, 7};
    int bx = 0, by = 0;
    GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
    if (by < 1)
        by = 1;
    int ok = quiet || GDALTermProgress(0.0, NULL, NULL);
    for (int y0 = 0; ok && y0 < ny; y0 += by) {
        const int rows = ny - y0 < by ? ny - y0 : by;
        for (int b = 0; ok && b < 4; b++)
            ok = GDALRasterIO(GDALGetRasterBand(ds, bands[b]), GF_Read, 0, y0, nx, rows,
                              v + b * n + (size_t)y0 * nx, nx, rows, GDT_Float64, 0,
                              0) == CE_None;
        if (ok && !quiet)
            GDALTermProgress((double)(y0 + rows) / ny, NULL, NULL);
    }
    return ok;
}

/* Step 1: dense offsets through the GG driver; fills the window centres
 * (primary pixel coordinates, centres at integers) and the bands.  The
 * windows are computed a strip of the offset raster at a time, with GDAL's
 * progress (the expensive step).  min_windows > 0: fewer windows than that
 * is an error before any computation. */
static int offsets(const char *primary, const char *secondary, const char *device,
                   char **xc_opts, int min_windows, int quiet, double **pts, int *npts, int *gnx,
                   int *gny)
{
    GDALDatasetH in[2];
    const char *const names[2] = {primary, secondary};
    if (open_slcs(names, in))
        return 1;
    const int w0 = GDALGetRasterXSize(in[0]), h0 = GDALGetRasterYSize(in[0]);
    double pgt[6], inv[6];
    const int has_pgt = GDALGetGeoTransform(in[0], pgt) == CE_None && GDALInvGeoTransform(pgt, inv);
    char **opts = CSLDuplicate(xc_opts);
    auto_skip(&opts, w0, h0);
    gg_op *op = xcorr_op(opts);
    if (!op) {
        CSLDestroy(opts);
        GDALClose(in[0]);
        GDALClose(in[1]);
        return 1;
    }
    /* one error line for the step: the first failure, not each layer's */
    first_error first = {0, ""};
    CPLPushErrorHandlerEx(keep_first_error, &first);
    GDALDatasetH ds = GGCreateProcessedDataset(op, 2, in, TRUE, device);
    if (!ds) {
        CPLPopErrorHandler();
        CSLDestroy(opts);
        return fail("%s%s", first.set ? first.msg : "cannot compute the offsets", "");
    }
    const int nx = GDALGetRasterXSize(ds), ny = GDALGetRasterYSize(ds);
    int ww, wh, sx, sy, kx, ky;
    xc_size(opts, "window", &ww, &wh);
    xc_size(opts, "search", &sx, &sy);
    xc_size(opts, "skip", &kx, &ky);
    CSLDestroy(opts);
    if (min_windows > 0 && nx * ny < min_windows) {
        GDALClose(ds);
        CPLPopErrorHandler();
        return fail("%s: %s", CPLSPrintf("the %dx%d image gives a grid of only %dx%d windows (window "
                                         "%dx%d, search %dx%d, skip %dx%d), fewer than the %d the fit "
                                         "needs", w0, h0, nx, ny, ww, wh, sx, sy, kx, ky, min_windows),
                    grid_hint(xc_opts));
    }
    if (!quiet)
        printf("offsets: %dx%d windows of %dx%d, %dx%d apart, search +-%dx%d\n", nx, ny, ww, wh,
               kx, ky, sx, sy);
    double ogt[6];
    GDALGetGeoTransform(ds, ogt);
    const size_t n = (size_t)nx * ny;
    double *v = CPLMalloc(sizeof(double) * n * 6); /* x y down across snr peak */
    const int ok = read_offset_strips(ds, nx, ny, quiet, v + 2 * n);
    GDALClose(ds);
    CPLPopErrorHandler();
    if (!ok) {
        CPLFree(v);
        return fail("computing the offsets failed%s%s", first.set ? ": " : "", first.msg);
    }
    window_centres(ogt, has_pgt ? inv : NULL, nx, ny, v, v + n);
    *pts = v;
    *npts = (int)n;
    *gnx = nx;
    *gny = ny;
    return 0;
}

/* -offsets: a dense offset raster written earlier (gdal_xcorr's bands:
 * 1 down, 2 across, 3 snr and 7 peak when there are 7 or more), its window
 * centres from its geotransform as in offsets(); nodata -> NaN. */
static int read_offsets(const char *primary, const char *path, double **pts, int *npts, int *gnx,
                        int *gny)
{
    GDALDatasetH p = GDALOpenEx(primary, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!p)
        return fail("cannot open '%s'%s", primary, "");
    double pgt[6], inv[6];
    const int has_pgt = GDALGetGeoTransform(p, pgt) == CE_None && GDALInvGeoTransform(pgt, inv);
    GDALClose(p);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds)
        return fail("cannot open the offsets '%s'%s", path, "");
    const int nx = GDALGetRasterXSize(ds), ny = GDALGetRasterYSize(ds), nb = GDALGetRasterCount(ds);
    double ogt[6];
    if (nb < 2 || GDALGetGeoTransform(ds, ogt) != CE_None) {
        GDALClose(ds);
        return fail("the offsets '%s' need 2 bands (down, across) and a geotransform giving the "
                    "window centres (%s)", path, "as gdal_xcorr writes them");
    }
    for (int b = 0; b < 2; b++)
        if (GDALDataTypeIsComplex(GDALGetRasterDataType(GDALGetRasterBand(ds, b + 1)))) {
            GDALClose(ds);
            return fail("the offsets '%s' must be real-valued%s", path, "");
        }
    const size_t n = (size_t)nx * ny;
    double *v = CPLMalloc(sizeof(double) * n * 6);
    const int bands[4] = {1, 2, nb >= 7 ? 3 : 0, nb >= 7 ? 7 : 0};
    int ok = 1;
    for (int b = 0; ok && b < 4; b++) {
        double *dst = v + (2 + b) * n;
        if (!bands[b]) { /* no snr / peak band: every window passes */
            for (size_t k = 0; k < n; k++)
                dst[k] = INFINITY;
            continue;
        }
        GDALRasterBandH band = GDALGetRasterBand(ds, bands[b]);
        ok = GDALRasterIO(band, GF_Read, 0, 0, nx, ny, dst, nx, ny, GDT_Float64, 0, 0) == CE_None;
        int has_nd = 0;
        const double nd = GDALGetRasterNoDataValue(band, &has_nd);
        for (size_t k = 0; ok && has_nd && !isnan(nd) && k < n; k++)
            if (dst[k] == nd)
                dst[k] = NAN;
    }
    GDALClose(ds);
    if (!ok) {
        CPLFree(v);
        return fail("cannot read the offsets '%s'%s", path, "");
    }
    window_centres(ogt, has_pgt ? inv : NULL, nx, ny, v, v + n);
    *pts = v;
    *npts = (int)n;
    *gnx = nx;
    *gny = ny;
    return 0;
}

/* -carrier <value> other than auto: checked by the resample op itself
 * (its message), before any work.  0 when valid. */
static int check_carrier(const char *value)
{
    char e[256];
    gg_op *op = NULL;
    if (gg_op_new("resample", &op, e, sizeof e) != GG_OK)
        return fail("%s%s", e, "");
    const int bad = gg_op_set(op, "carrier", value) != GG_OK;
    if (bad)
        fail("%s%s", gg_op_last_error(op), "");
    gg_op_free(op);
    return bad;
}

/* -carrier auto: the secondary's carrier (gg_coreg_carrier_*, the offset
 * step's lag-1 estimator over the image) from blocks of 64 lines spread
 * evenly over it, about 16 M samples at most (the mean phase step of
 * millions of samples is far more precise than the resampling needs, and
 * a large SLC is not read a second time in full).  Nodata: -srcnodata,
 * else the band's.  A real secondary has no carrier (0, 0). */
static int estimate_carrier(const char *path, const char *srcnodata, double *fy, double *fx)
{
    *fy = *fx = 0.0;
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds)
        return fail("cannot open '%s'%s", path, "");
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    if (!band || !GDALDataTypeIsComplex(GDALGetRasterDataType(band))) {
        GDALClose(ds);
        return 0;
    }
    const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds), rows = 64;
    int has_nd = 0;
    double nd = GDALGetRasterNoDataValue(band, &has_nd);
    if (srcnodata) {
        has_nd = 1;
        nd = CPLAtof(srcnodata);
    }
    const int nblk = (h + rows - 1) / rows;
    const double fit = 16777216.0 / ((double)w * rows); /* blocks within the sample budget */
    const int step = fit >= nblk ? 1 : (int)ceil(nblk / fmax(fit, 1.0));
    float *buf = VSIMalloc3((size_t)w, rows, 2 * sizeof(float));
    if (!buf) {
        GDALClose(ds);
        return fail("out of memory estimating the carrier of '%s'%s", path, "");
    }
    gg_coreg_carrier c;
    gg_coreg_carrier_init(&c);
    int ok = 1;
    for (int k = 0; ok && k < nblk; k += step) {
        const int y0 = k * rows, n = h - y0 < rows ? h - y0 : rows;
        ok = GDALRasterIO(band, GF_Read, 0, y0, w, n, buf, w, n, GDT_CFloat32, 0, 0) == CE_None;
        if (ok)
            gg_coreg_carrier_add(&c, buf, w, n, has_nd, (float)nd);
    }
    VSIFree(buf);
    GDALClose(ds);
    if (!ok)
        return fail("cannot read '%s' to estimate its carrier%s", path, "");
    gg_coreg_carrier_result(&c, fy, fx);
    return 0;
}

/* The dense grid for the resample op's grid= option: the window centres
 * must be a regular grid (no rotation); windows that are nodata or below
 * the fit's -snr / -minpeak thresholds take the fitted polynomial's value
 * (f NULL: there must be none).  NULL after reporting an error. */
static char *dense_grid(const double *v, int nx, int ny, const gg_coreg_fit *f,
                        const gg_coreg_fit_options *fo, int *filled)
{
    const size_t n = (size_t)nx * ny;
    const double *x = v, *y = v + n, *dn = v + 2 * n, *ac = v + 3 * n, *snr = v + 4 * n,
                 *pk = v + 5 * n;
    const double x0 = x[0], y0 = y[0], dx = nx > 1 ? x[1] - x[0] : 1, dy = ny > 1 ? y[nx] - y[0] : 1;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            const size_t k = (size_t)j * nx + i;
            if (fabs(x[k] - (x0 + i * dx)) > 1e-6 * (1 + fabs(x[k])) ||
                fabs(y[k] - (y0 + j * dy)) > 1e-6 * (1 + fabs(y[k])) || !(dx > 0) || !(dy > 0)) {
                fail("the offsets' window centres are not a regular grid in the primary's pixels "
                     "(%s)%s", "rotated or flipped geotransform", "");
                return NULL;
            }
        }
    /* "nx,ny,x0,y0,dx,dy;" then n down and n across values, %.9g each */
    const size_t cap = 128 + 2 * n * 18;
    char *t = CPLMalloc(cap);
    size_t k = (size_t)snprintf(t, cap, "%d,%d,%.17g,%.17g,%.17g,%.17g;", nx, ny, x0, y0, dx, dy);
    *filled = 0;
    for (int a = 0; a < 2; a++)
        for (size_t w = 0; w < n; w++) {
            double val = a ? ac[w] : dn[w];
            const int good = isfinite(dn[w]) && isfinite(ac[w]) && !(snr[w] < fo->min_snr) &&
                             !(pk[w] < fo->min_peak) && !isnan(snr[w]) && !isnan(pk[w]);
            if (!good) {
                if (!f) {
                    CPLFree(t);
                    fail("window %s of the offsets is nodata and there is no fit to fill it%s",
                         CPLSPrintf("(%d, %d)", (int)(w % nx), (int)(w / nx)), "");
                    return NULL;
                }
                val = gg_coreg_fit_eval(f, a ? 1 : 0, x[w], y[w]);
                *filled += a == 0;
            }
            k += (size_t)snprintf(t + k, cap - k, "%s%.9g", w ? "," : (a ? ";" : ""), val);
        }
    return t;
}


/* ---------------------------------------------------------------- options */

struct gg_coreg_app_options {
    int info;    /* --help, --version, --describe...: gg_app answers argv */
    char **argv; /* info: the command line as given */
    gg_coreg_fit_options fo;
    char *fit_path, *prm_path, *device, *off_path, *carrier, *srcnodata;
    char *pos[3]; /* <primary> <secondary> <dst_dataset> */
    int quiet, dense, has_dstnodata, int_out;
    char **xc;   /* the xcorr op's options (key=value) */
    char **rest; /* the resample step's command line, without the primary */
};

const gg_app_spec *gg_coreg_app_spec(void) { return &spec; }

void gg_coreg_app_options_free(gg_coreg_app_options *o)
{
    if (!o)
        return;
    CSLDestroy(o->argv);
    CPLFree(o->fit_path);
    CPLFree(o->prm_path);
    CPLFree(o->device);
    CPLFree(o->off_path);
    CPLFree(o->carrier);
    CPLFree(o->srcnodata);
    for (int k = 0; k < 3; k++)
        CPLFree(o->pos[k]);
    CSLDestroy(o->xc);
    CSLDestroy(o->rest);
    CPLFree(o);
}

static char *dup_or_null(const char *s) { return s ? CPLStrdup(s) : NULL; }

/* Whether the resample step's parser (gg_app) takes flag a: gg_app's own
 * flags, GDAL's general ones (--...) and the resample op's. */
static int resample_knows(const char *a)
{
    if (gg_app_flag_values(a, rs_flags, NULL) > 0 || EQUAL(a, "-q") || EQUAL(a, "-quiet") ||
        EQUAL(a, "-v") || (a[0] == '-' && a[1] == '-'))
        return 1;
    int n = 0;
    const gg_option *ro = gg_op_options("resample", &n);
    for (int k = 0; k < n; k++)
        if (ro[k].flag && EQUAL(a, ro[k].flag))
            return 1;
    return 0;
}

/* Whether a is a flag that gg_app answers alone (help, version, GDAL's
 * information flags). */
static int is_info_flag(const char *a)
{
    return EQUAL(a, "--help") || EQUAL(a, "-h") || EQUAL(a, "--version") ||
           EQUAL(a, "--describe") || EQUAL(a, "--help-general") || EQUAL(a, "--formats") ||
           EQUAL(a, "--format") || EQUAL(a, "--utility_version") || EQUAL(a, "-help");
}

/* The command line as gg_coreg_app_options_new reads it. */
typedef struct coreg_parse {
    const char *fit_path, *prm_path, *device, *pos[4], *off_path, *carrier, *srcnodata;
    int npos;
    char **xc, **rest;
} coreg_parse;

/* The flag parsers below: 1 when argv[*pi] was theirs (*pi on its last
 * value), 0 when not, -1 after a usage error. */

/* The offsets' flags: the xcorr op's table (handed to the op). */
static int parse_xcorr_flag(coreg_parse *c, int argc, char **argv, int *pi)
{
    const char *a = argv[*pi];
    int nxc = 0;
    const gg_option *xo = gg_op_options("xcorr", &nxc);
    for (int k = 0; k < nxc; k++)
        if (xo[k].flag && strcmp(xo[k].key, "srcnodata") && strcmp(xo[k].key, "dstnodata") &&
            EQUAL(a, xo[k].flag)) {
            const char *sw = NULL;
            const int nv = gg_app_option_values(&xo[k], &sw);
            if (*pi + nv >= argc) {
                fail("%s needs %s value(s) (see --help)", a, nv == 2 ? "2" : "1");
                return -1;
            }
            const char *val = nv == 0 ? sw
                              : nv == 1 ? argv[*pi + 1]
                                        : CPLSPrintf("%sx%s", argv[*pi + 1], argv[*pi + 2]);
            c->xc = CSLSetNameValue(c->xc, xo[k].key, val);
            *pi += nv;
            return 1;
        }
    return 0;
}

/* -dense, -offsets and -carrier. */
static int parse_dense_flag(gg_coreg_app_options *o, coreg_parse *c, int argc, char **argv,
                            int *pi)
{
    const char *a = argv[*pi];
    if (EQUAL(a, "-dense")) {
        o->dense = 1;
        return 1;
    }
    if (!EQUAL(a, "-offsets") && !EQUAL(a, "-carrier"))
        return 0;
    if (*pi + 1 >= argc) {
        fail("%s needs a value%s (see --help)", a, "");
        return -1;
    }
    if (EQUAL(a, "-offsets")) {
        c->off_path = argv[++*pi];
        o->dense = 1;
        return 1;
    }
    c->carrier = argv[++*pi];
    if (!EQUAL(c->carrier, "auto") && check_carrier(c->carrier))
        return -1;
    return 1;
}

/* The resample step's flags this step also needs to know: -dstnodata,
 * -srcnodata and -ot (handed on all the same). */
static void note_resample_flag(gg_coreg_app_options *o, coreg_parse *c, int argc, char **argv,
                               int i)
{
    const char *a = argv[i];
    if (EQUAL(a, "-dstnodata"))
        o->has_dstnodata = 1;
    if (EQUAL(a, "-srcnodata") && i + 1 < argc)
        c->srcnodata = argv[i + 1];
    if (EQUAL(a, "-ot") && i + 1 < argc) {
        const GDALDataType t = GDALGetDataTypeByName(argv[i + 1]);
        o->int_out = GDALDataTypeIsComplex(t) && !GDALDataTypeIsFloating(t);
    }
}

/* The fit's flags: -order, -snr, -minpeak, -kcut, -fit and -prm. */
static int parse_fit_flag(gg_coreg_app_options *o, coreg_parse *c, int argc, char **argv, int *pi)
{
    const char *a = argv[*pi];
    if (!(EQUAL(a, "-order") || EQUAL(a, "-snr") || EQUAL(a, "-minpeak") || EQUAL(a, "-kcut") ||
          EQUAL(a, "-fit") || EQUAL(a, "-prm")))
        return 0;
    if (*pi + 1 >= argc) {
        fail("%s needs a value%s (see --help)", a, "");
        return -1;
    }
    const char *val = argv[++*pi];
    char *end;
    const double d = strtod(val, &end);
    const int numeric = !EQUAL(a, "-fit") && !EQUAL(a, "-prm");
    if (numeric && (*end || !isfinite(d))) {
        fail("%s must be a number, not '%s'", a, val);
        return -1;
    }
    if (EQUAL(a, "-order")) {
        if (d != 1 && d != 2 && d != 3) {
            fail("-order must be 1, 2 or 3, not '%s'%s", val, "");
            return -1;
        }
        o->fo.order = (int)d;
    } else if (EQUAL(a, "-snr")) {
        o->fo.min_snr = d;
    } else if (EQUAL(a, "-minpeak")) {
        o->fo.min_peak = d;
    } else if (EQUAL(a, "-kcut")) {
        if (!(d > 0)) {
            fail("-kcut must be > 0, not '%s'%s", val, "");
            return -1;
        }
        o->fo.kcut = d;
    } else {
        *(EQUAL(a, "-fit") ? &c->fit_path : &c->prm_path) = val;
    }
    return 1;
}

/* Anything else: the resample step's flags (with their values) and the
 * operands, handed on to its command line; the primary is kept for the
 * offsets only.  Flags neither step knows are refused now, not by the
 * resample step after the offsets. */
static int hand_on(gg_coreg_app_options *o, coreg_parse *c, int argc, char **argv, int *pi)
{
    const char *a = argv[*pi];
    if (EQUAL(a, "-poly") || EQUAL(a, "-grid") || EQUAL(a, "-outsize") ||
        (a[0] == '-' && a[1] && !resample_knows(a))) {
        fail("unknown option %s%s (see --help)", a, "");
        return -1;
    }
    const int is_flag = a[0] == '-' && a[1];
    if (is_flag || c->npos > 0)
        c->rest = CSLAddString(c->rest, a);
    if (EQUAL(a, "-q") || EQUAL(a, "-quiet"))
        o->quiet = 1;
    if (is_flag) {
        const int nv = gg_app_flag_values(a, rs_flags, NULL);
        if (EQUAL(a, "-device") && *pi + 1 < argc)
            c->device = argv[*pi + 1];
        for (int k = 0; k < nv && *pi + 1 < argc; k++)
            c->rest = CSLAddString(c->rest, argv[++*pi]);
    } else if (c->npos < 4) {
        c->pos[c->npos++] = a;
    } else {
        c->npos++;
    }
    return 1;
}

gg_coreg_app_options *gg_coreg_app_options_new(int argc, char **argv, int *usage_error)
{
    if (usage_error)
        *usage_error = 0;
    gg_coreg_app_options *o = CPLCalloc(1, sizeof *o);
    for (int i = 1; i < argc; i++) /* help, version and GDAL's own: gg_app's */
        if (is_info_flag(argv[i])) {
            o->info = 1;
            for (int k = 0; k < argc; k++)
                o->argv = CSLAddString(o->argv, argv[k]);
            return o;
        }
    gg_coreg_fit_options_default(&o->fo);
    coreg_parse c;
    memset(&c, 0, sizeof c);
    c.carrier = "auto";
    c.rest = CSLAddString(c.rest, argv[0]);
    for (int i = 1; i < argc; i++) {
        int r = parse_xcorr_flag(&c, argc, argv, &i);
        if (!r)
            r = parse_dense_flag(o, &c, argc, argv, &i);
        if (!r) {
            note_resample_flag(o, &c, argc, argv, i);
            r = parse_fit_flag(o, &c, argc, argv, &i);
        }
        if (!r)
            r = hand_on(o, &c, argc, argv, &i);
        if (r < 0)
            goto usage;
    }
    if (c.npos != 3) {
        fail("needs <primary> <secondary> <dst_dataset>, got %s operand(s)%s (see --help)",
             CPLSPrintf("%d", c.npos), "");
        goto usage;
    }
    o->fit_path = dup_or_null(c.fit_path);
    o->prm_path = dup_or_null(c.prm_path);
    o->device = dup_or_null(c.device);
    o->off_path = dup_or_null(c.off_path);
    o->carrier = CPLStrdup(c.carrier);
    o->srcnodata = dup_or_null(c.srcnodata);
    for (int k = 0; k < 3; k++)
        o->pos[k] = CPLStrdup(c.pos[k]);
    o->xc = c.xc;
    o->rest = c.rest;
    return o;
usage:
    CSLDestroy(c.xc);
    CSLDestroy(c.rest);
    gg_coreg_app_options_free(o);
    if (usage_error)
        *usage_error = 1;
    return NULL;
}

/* -------------------------------------------------------------------- run */

/* Before any work: the destination, -fit and -prm are refused where an
 * input reads them (the SLCs, however named, and -offsets), where they
 * exist and are not regular files, and where two of them name one file.
 * 0, or 1 after the error. */
static int check_outputs(const gg_coreg_app_options *o)
{
    gg_input_files *inputs = gg_input_files_new();
    if (!inputs)
        return fail("out of memory%s%s", "", "");
    const char *srcs[3] = {o->pos[0], o->pos[1], o->off_path};
    int rc = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    for (int k = 0; k < 3 && !rc; k++) {
        if (!srcs[k])
            continue;
        GDALDatasetH h = GDALOpenEx(srcs[k], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        rc = gg_input_files_add_dataset(inputs, h, srcs[k]);
        if (h)
            GDALClose(h);
    }
    CPLPopErrorHandler();
    char why[2048];
    if (rc)
        snprintf(why, sizeof why, "out of memory");
    const char *const what[3] = {"the destination", "the -fit file", "the -prm file"};
    const char *const outs[3] = {o->pos[2], o->fit_path, o->prm_path};
    for (int k = 0; k < 3 && !rc; k++) {
        if (!outs[k])
            continue;
        rc = gg_input_files_check_output(inputs, what[k], outs[k], why, sizeof why);
        /* an unwritable side output fails before any work */
        if (!rc && k > 0)
            rc = gg_output_check_writable(what[k], outs[k], why, sizeof why);
        for (int j = 0; j < k && !rc; j++)
            if (outs[j] && gg_input_files_same(outs[j], outs[k])) {
                snprintf(why, sizeof why, "%s '%s' is also %s; every output needs its own file",
                         what[k], outs[k], what[j]);
                rc = 1;
            }
    }
    gg_input_files_free(inputs);
    return rc ? fail("%s%s", why, "") : 0;
}

/* Step 2: the robust fit of the offsets (f zeroed first: ncoef 0 when the
 * fit fails); on failure err says why, with a hint when the window grid
 * is small. */
static gg_status fit_offsets(const gg_coreg_app_options *o, const double *v, int n, int gnx,
                             int gny, gg_coreg_fit *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    const size_t N = (size_t)n;
    const gg_status st = gg_coreg_fit_points(v, v + N, v + 2 * N, v + 3 * N, v + 4 * N, v + 5 * N,
                                             n, &o->fo, f, err, errlen);
    if (st != GG_OK && n < 64) /* the likely cause: a small image for the windows */
        snprintf(err + strlen(err), errlen - strlen(err),
                 " (the offsets come from a grid of only %dx%d windows: %s)", gnx, gny,
                 o->off_path ? "a denser offset raster gives more" : grid_hint(o->xc));
    return st;
}

/* The polynomial as the resample op's poly= value: the down coefficients,
 * ';', the across ones. */
static void poly_text(const gg_coreg_fit *f, char *poly, size_t len)
{
    size_t k = 0;
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < f->ncoef; c++)
            k += (size_t)snprintf(poly + k, len - k, "%s%.17g", c ? "," : (a ? ";" : ""),
                                  a ? f->across[c] : f->down[c]);
}

/* The carrier handed to the resample op: -carrier's value, or with auto
 * the secondary's, estimated.  1 after the error. */
static int resolve_carrier(const gg_coreg_app_options *o, char *car, size_t len)
{
    snprintf(car, len, "%s", o->carrier);
    if (!EQUAL(o->carrier, "auto"))
        return 0;
    double fy, fx;
    if (estimate_carrier(o->pos[1], o->srcnodata, &fy, &fx))
        return 1;
    snprintf(car, len, "%.9g,%.9g", fy, fx);
    if (!o->quiet)
        printf("carrier (auto): %.4f cycles/line (azimuth), %.4f cycles/pixel (range)\n", fy, fx);
    return 0;
}

/* The resample step's command line: the one handed on, with the mapping
 * (-grid or -poly), int16 nodata, the primary's size and the carrier
 * after the program name.  NULL when there is nothing to hand on. */
static char **resample_args(const gg_coreg_app_options *o, const char *mapping, const char *car)
{
    GDALDatasetH p = GDALOpenEx(o->pos[0], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    const int pw = p ? GDALGetRasterXSize(p) : 0, ph = p ? GDALGetRasterYSize(p) : 0;
    if (p)
        GDALClose(p);
    char **args = NULL;
    for (int i = 0; o->rest[i]; i++) {
        if (i == 1) {
            args = CSLAddString(args, o->dense ? "-grid" : "-poly");
            args = CSLAddString(args, mapping);
            if (o->int_out && !o->has_dstnodata) { /* NaN has no int16 value: 0, as GMTSAR */
                args = CSLAddString(args, "-dstnodata");
                args = CSLAddString(args, "0");
            }
            args = CSLAddString(args, "-outsize");
            args = CSLAddString(args, CPLSPrintf("%dx%d", pw, ph));
            args = CSLAddString(args, "-carrier");
            args = CSLAddString(args, car);
        }
        args = CSLAddString(args, o->rest[i]);
    }
    if (CSLCount(o->rest) == 1) { /* unreachable: there are operands */
        CSLDestroy(args);
        return NULL;
    }
    return args;
}

/* Step 3: the resample op through gg_app, the fit's files (json, prm:
 * empty when there is no fit) committed with the raster (side_outputs). */
static int resample(const gg_coreg_app_options *o, char **args, const char *json,
                    const char *prm)
{
    side_fit_path = o->fit_path;
    side_json = json;
    side_prm_path = o->prm_path;
    side_prm = prm;
    const int rc = gg_app_main(&spec, CSLCount(args), args);
    side_fit_path = side_json = side_prm_path = side_prm = NULL;
    return rc;
}

int gg_coreg_app(const gg_coreg_app_options *o)
{
    if (o->info)
        return gg_app_main(&spec, CSLCount(o->argv), o->argv);
    if (gg_app_parse_only) /* tests/fuzz: the resample step parses the flags handed on */
        return gg_app_main(&spec, CSLCount(o->rest), o->rest);
    const char *const *pos = (const char *const *)o->pos;
    const int quiet = o->quiet, dense = o->dense;
    GDALAllRegister(); /* GDAL's (again: idempotent); the GG driver: the caller's */
    if (check_outputs(o))
        return 1;
    double *v = NULL;
    int n = 0, gnx = 0, gny = 0;
    if (!quiet && o->off_path)
        printf("offsets from %s...\n", o->off_path);
    /* the polynomial needs enough windows; dense offsets without holes
     * need none (the fit only fills them) */
    int rc = o->off_path ? read_offsets(pos[0], o->off_path, &v, &n, &gnx, &gny)
                         : offsets(pos[0], pos[1], o->device, o->xc,
                                   dense ? 0 : gg_coreg_fit_min_points(&o->fo), quiet, &v, &n,
                                   &gnx, &gny);
    if (rc)
        return rc;
    gg_coreg_fit f;
    char err[1024];
    const gg_status st = fit_offsets(o, v, n, gnx, gny, &f, err, sizeof err);
    /* dense: the fit only fills nodata windows (and feeds -fit/-prm), so a
     * fully valid grid needs none */
    char *grid = NULL;
    int filled = 0;
    if (dense && (st == GG_OK || (!o->fit_path && !o->prm_path)))
        grid = dense_grid(v, gnx, gny, st == GG_OK ? &f : NULL, &o->fo, &filled);
    CPLFree(v);
    if (dense && !grid)
        return st == GG_OK ? 1 : fail("%s%s", err, "");
    if (!dense && st != GG_OK)
        return fail("%s%s", err, "");
    char json[8192] = "", prm[1024] = "";
    if (st == GG_OK) {
        gg_coreg_fit_json(&f, json, sizeof json);
        gg_coreg_fit_prm(&f, prm, sizeof prm);
    }
    if (!quiet && st == GG_OK)
        printf("fit (order %d): %d of %d windows used, rms %.4f px down, %.4f px across\n", f.order,
               f.n_used_down < f.n_used_across ? f.n_used_down : f.n_used_across, f.n_total,
               f.rms_down, f.rms_across);
    if (!quiet && dense)
        printf("dense offsets: %dx%d windows, %d nodata filled from the fit\n", gnx, gny, filled);
    /* the polynomial as a plain coefficient list (it goes into .ggvrt
     * files as an op option) */
    char poly[1024], car[64];
    poly_text(&f, poly, sizeof poly);
    if (resolve_carrier(o, car, sizeof car)) {
        CPLFree(grid);
        return 1;
    }
    char **args = resample_args(o, dense ? grid : poly, car);
    CPLFree(grid);
    if (!args)
        return 1;
    rc = resample(o, args, json, prm);
    CSLDestroy(args);
    return rc;
}
