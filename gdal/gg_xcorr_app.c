/*
 * gg_xcorr_app.c -- gdal_xcorr's bodies (gg_xcorr_app.h): the quality
 * mode's spec and window table (-table), and -mode gmtsar as options from
 * argv plus a call (GDAL's style, GDALWarpAppOptionsNew + GDALWarp).
 *
 * MIT licence.
 */
#include "gg_xcorr_app.h"
#include "gg_app.h"
#include "gg_device_start.h"
#include "gg_output.h"

#include "cpl_conv.h"
#include "cpl_port.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"
#include "ogr_api.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "geogpu.h"
#include "gg_input_files.h"
#include "algorithms/coreg/gmtsar_xcorr.h" /* gg_xcorr_gmtsar_run (private: -zero_is_data) */
#include "gpu/fault.h" /* gg_fault_point (private, tests) */

/* ---------------------------------------------------- quality mode */

static const char *table_path;

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    /* -window -search -skip -start -count -gross -zoom -ovs -noderamp
     * -snr_window -minvalid: the xcorr op's options (algorithms/coreg/xcorr.c) */
    const char *v[1];
    if (EQUAL(argv[*pi], "-table")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        CPLFree((void *)table_path); /* -table given twice: the last one */
        table_path = CPLStrdup(v[0]);
        return 1;
    }
    if (EQUAL(argv[*pi], "-mode")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        if (!EQUAL(v[0], "quality"))
            return gg_app_usage_error(app, "-mode gmtsar must be the first argument (got -mode %s)",
                                      v[0]);
        return 1;
    }
    return 0;
}

/* The window table: one point per window (template centre, input pixel
 * and line) with the seven bands as fields, read from the raster written
 * under its temporary name; written to tmp (the caller renames it to path
 * with the raster). */
static int write_table(const char *raster, const char *path, const char *tmp)
{
    GDALDatasetH ds = GDALOpen(raster, GA_ReadOnly);
    if (!ds) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: cannot reopen '%s' for -table\n", raster);
        return 1;
    }
    const int nx = GDALGetRasterXSize(ds), ny = GDALGetRasterYSize(ds), nb = GDALGetRasterCount(ds);
    double gt[6];
    GDALGetGeoTransform(ds, gt);
    float *vals = CPLMalloc(sizeof(float) * (size_t)nx * ny * nb);
    /* every band of the product, one field each, named as the band */
    int ok = nb >= 1;
    for (int b = 0; ok && b < nb; b++)
        ok = GDALRasterIO(GDALGetRasterBand(ds, b + 1), GF_Read, 0, 0, nx, ny,
                          vals + (size_t)b * nx * ny, nx, ny, GDT_Float32, 0, 0) == CE_None;
    const char **names = CPLMalloc(sizeof(char *) * (size_t)(nb > 0 ? nb : 1));
    for (int b = 0; ok && b < nb; b++)
        names[b] = GDALGetDescription(GDALGetRasterBand(ds, b + 1));
    /* the driver: from the extension, CSV when unknown */
    const char *ext = CPLGetExtension(path);
    OGRSFDriverH drv = NULL;
    for (int i = 0; i < GDALGetDriverCount() && !drv && *ext; i++) {
        GDALDriverH d = GDALGetDriver(i);
        const char *exts = GDALGetMetadataItem(d, GDAL_DMD_EXTENSIONS, NULL);
        if (GDALGetMetadataItem(d, GDAL_DCAP_VECTOR, NULL) &&
            GDALGetMetadataItem(d, GDAL_DCAP_CREATE, NULL) && exts) {
            char **l = CSLTokenizeString(exts);
            if (CSLFindString(l, ext) >= 0)
                drv = (OGRSFDriverH)d;
            CSLDestroy(l);
        }
    }
    if (!drv)
        drv = (OGRSFDriverH)GDALGetDriverByName("CSV");
    if (ok && gg_fault_point("write")) { /* GG_FAULT=write:N (tests) */
        fprintf(stderr, "ERROR 1: gdal_xcorr: cannot write the table '%s': injected fault "
                        "(GG_FAULT)\n", path);
        ok = 0;
        path = NULL;
    }
    GDALDatasetH out = ok ? GDALCreate((GDALDriverH)drv, tmp, 0, 0, 0, GDT_Unknown, NULL) : NULL;
    OGRLayerH lyr = out ? GDALDatasetCreateLayer(out, "offsets", NULL, wkbPoint, NULL) : NULL;
    ok = ok && lyr;
    const char *cols[] = {"x", "y"};
    for (int i = 0; ok && i < 2; i++) {
        OGRFieldDefnH f = OGR_Fld_Create(cols[i], OFTReal);
        ok = OGR_L_CreateField(lyr, f, 1) == OGRERR_NONE;
        OGR_Fld_Destroy(f);
    }
    for (int b = 0; ok && b < nb; b++) {
        OGRFieldDefnH f = OGR_Fld_Create(names[b], OFTReal);
        ok = OGR_L_CreateField(lyr, f, 1) == OGRERR_NONE;
        OGR_Fld_Destroy(f);
    }
    for (int y = 0; ok && y < ny; y++)
        for (int x = 0; ok && x < nx; x++) {
            OGRFeatureH ft = OGR_F_Create(OGR_L_GetLayerDefn(lyr));
            const double px = gt[0] + gt[1] * (x + 0.5) + gt[2] * (y + 0.5);
            const double py = gt[3] + gt[4] * (x + 0.5) + gt[5] * (y + 0.5);
            OGR_F_SetFieldDouble(ft, 0, px);
            OGR_F_SetFieldDouble(ft, 1, py);
            for (int b = 0; b < nb; b++) {
                const float v = vals[(size_t)b * nx * ny + (size_t)y * nx + x];
                if (isfinite(v))
                    OGR_F_SetFieldDouble(ft, 2 + b, v);
                else
                    OGR_F_SetFieldNull(ft, 2 + b);
            }
            OGRGeometryH g = OGR_G_CreateGeometry(wkbPoint);
            OGR_G_SetPoint_2D(g, 0, px, py);
            OGR_F_SetGeometryDirectly(ft, g);
            ok = OGR_L_CreateFeature(lyr, ft) == OGRERR_NONE;
            OGR_F_Destroy(ft);
        }
    if (out)
        GDALClose(out);
    GDALClose(ds);
    CPLFree(vals);
    CPLFree(names);
    if (!ok && path)
        fprintf(stderr, "ERROR 1: gdal_xcorr: cannot write the table '%s'\n", path);
    return ok ? 0 : 1;
}

/* -table as the raster's side output: written with it, committed with it. */
static int table_side_output(gg_app *app, const char *product, gg_output_set *set)
{
    (void)app;
    if (!table_path)
        return 0;
    /* a table name without an extension is written as CSV (its driver
     * wants the extension on the temporary name) */
    const char *tmp = gg_output_set_add(set, table_path,
                                        *CPLGetExtension(table_path) ? NULL : "csv");
    if (!tmp) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: out of memory\n");
        return 1;
    }
    return write_table(product, table_path, tmp);
}

static const gg_app_flag flags[] = {
    {"-table", "<offsets.csv>", "file", "also write the windows as points (CSV or any OGR format)"},
    {"-mode", "gmtsar", "choice", "GMTSAR xcorr's interface (must be the first argument; "
                                  "gdal_xcorr -mode gmtsar --help)"},
    {NULL, NULL, NULL, NULL}};

static const gg_app_spec spec = {
    .name = "gdal_xcorr",
    .operation = "xcorr",
    .purpose = "Sub-pixel offsets of a secondary SLC against a primary on a grid of windows:\n"
               "normalised cross-correlation of amplitudes, x2 oversampling of both axes,\n"
               "a zoomed peak, SNR and covariance (PyCuAmpcor's estimator).  One output pixel\n"
               "per window, 8 Float32 bands: offset_down offset_across snr cov_down cov_across\n"
               "cov_down_across peak peak_ratio (secondary = primary + offset; peak_ratio near 1:\n"
               "a pure-noise window).  For GMTSAR's xcorr\n"
               "interface: gdal_xcorr -mode gmtsar master.PRM aligned.PRM ... (see --help there).",
    .operands = "<primary> <secondary> <dst_dataset>",
    .required = NULL,
    .flags = flags,
    .parse_flag = parse_flag,
    .side_outputs = table_side_output,
    .register_drivers = NULL, /* the main sets GGRegisterDrivers (gg_xcorr_app.h) */
};

const gg_app_spec *gg_xcorr_app_spec(void)
{
    return &spec;
}

/* flags of gdal_xcorr and gg_app that take values, to find the
 * destination (the last operand) for -table */
static int flag_values(const char *a)
{
    static const char *const one[] = {"-table", "-mode", NULL};
    int n = 0;
    const gg_option *o = gg_op_options("xcorr", &n); /* the op's flags and their values */
    for (int k = 0; k < n; k++)
        if (o[k].flag && EQUAL(a, o[k].flag))
            return gg_app_option_values(&o[k], NULL);
    return gg_app_flag_values(a, one, NULL);
}

/* 0 when a file can be created beside path (tried with a temporary name,
 * removed at once): an unwritable -table folder fails before the raster is
 * made, so that no output at all is left. */
static int table_writable(const char *path)
{
    char why[1024];
    if (gg_input_files_check_output(NULL, "the table", path, why, sizeof why)) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", why); /* not a regular file */
        return 1;
    }
    if (gg_output_check_writable("the table", path, why, sizeof why)) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", why);
        return 1;
    }
    return 0;
}

int gg_xcorr_app_table_check(int argc, char **argv)
{
    const char *table = NULL; /* the last -table, as parse_flag keeps */
    int help = 0;
    for (int i = 1; i < argc; i++) {
        help |= EQUAL(argv[i], "--help") || EQUAL(argv[i], "-h") || EQUAL(argv[i], "--version") ||
                EQUAL(argv[i], "--describe") ||
                EQUAL(argv[i], "--utility_version") || EQUAL(argv[i], "-help");
        if (EQUAL(argv[i], "-table") && i + 1 < argc)
            table = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1])
            i += flag_values(argv[i]);
    }
    return table && !help && !gg_app_parse_only && table_writable(table);
}

/* ----------------------------------------------------- -mode gmtsar */

struct gg_xcorr_gmtsar_app_options {
    gg_xcorr_gmtsar_options o;
    gg_xcorr_gmtsar_switches sw;
    char *prm[2];
    char *device; /* NULL: GG_DEVICE, else auto */
    char *outname;
    int quiet;
};

/* -mode gmtsar's options, described once: its flags, --help and
 * --describe come from this table (GMTSAR xcorr's flags and defaults). */
static const gg_option gmtsar_table[] = {
    {"nx", "-nx", GG_OPTION_INT, 1, 65536, "16", NULL, "patches across the range", 0},
    {"ny", "-ny", GG_OPTION_INT, 1, 65536, "32", NULL, "patches along the azimuth", 0},
    {"xsearch", "-xsearch", GG_OPTION_INT, 1, 65536, "64", NULL,
     "range search window in pixels (a power of 2)", 0},
    {"ysearch", "-ysearch", GG_OPTION_INT, 1, 65536, "64", NULL,
     "azimuth search window in lines (a power of 2)", 0},
    {"range_interp", "-range_interp", GG_OPTION_INT, 1, 65536, "2", NULL,
     "range interpolation factor of the patches before correlating", 0},
    {"norange", "-norange", GG_OPTION_BOOL, 0, 1, "no", NULL, "no range interpolation "
     "(-range_interp 1)", 0},
    {"interp", "-interp", GG_OPTION_INT, 1, 65536, "16", NULL,
     "interpolation factor of the correlation peak", 0},
    {"nointerp", "-nointerp", GG_OPTION_BOOL, 0, 1, "no", NULL, "integer offsets only "
     "(-interp 1)", 0},
    {"noshift", "-noshift", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "ignore the aligned PRM's rshift and ashift", 0},
    {"zero_is_data", "-zero_is_data", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "0+0i samples are data, as in GMTSAR (default: zero fill is invalid, so a patch with "
     "< 90 % nonzero samples gets corr 0)", 0},
    {"freq", "-freq", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "GMTSAR's frequency-domain correlation, the only one here (accepted as GMTSAR does)", 0},
    {"output", "-o", GG_OPTION_STRING, 0, 0, "freq_xcorr.dat", NULL,
     "the offsets file: x xoff y yoff corr, one line per patch", 0},
};
#define GMTSAR_NOPTIONS ((int)(sizeof gmtsar_table / sizeof gmtsar_table[0]))

static const gg_app_flag gmtsar_flags[] = {{NULL, NULL, NULL, NULL}};

static const gg_app_spec gmtsar_spec = {
    .name = "gdal_xcorr -mode gmtsar",
    .operation = "xcorr_gmtsar",
    .purpose = "GMTSAR xcorr's algorithm and interface (defects fixed: docs/gdal_xcorr.md). The two\n"
               "SLCs may differ in size (each PRM's num_rng_bins, num_valid_az).",
    .operands = "<master.PRM> <aligned.PRM>",
    .flags = gmtsar_flags,
};

static int gmtsar_usage(const char *msg)
{
    if (msg) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s (see --help)\n", msg);
        return 1;
    }
    gg_app_print_table_usage(&gmtsar_spec, gmtsar_table, GMTSAR_NOPTIONS, NULL,
                             "[-device <device>] [-q]",
                             "  -device <device>   auto, cpu, cuda[:N] or opencl[:P[:D]]\n"
                             "                     (default: the GG_DEVICE configuration option, "
                             "else auto)\n"
                             "  -q                 quiet: no progress, no notices\n",
                             stdout);
    return 0;
}

/* Sets option e of -mode gmtsar from its flag's value (a BOOL: the flag
 * given); NULL, or the message of a bad value. */
static const char *gmtsar_set(gg_xcorr_gmtsar_app_options *r, gg_xcorr_gmtsar_options *o,
                              const gg_option *e, const char *value, const char **outname)
{
    const char *k = e->key;
    if (e->kind == GG_OPTION_BOOL) {
        if (!strcmp(k, "norange"))
            o->range_interp = 1;
        else if (!strcmp(k, "nointerp"))
            o->interp = 1;
        else if (!strcmp(k, "noshift"))
            o->noshift = 1;
        else if (!strcmp(k, "zero_is_data"))
            r->sw.zero_is_data = 1;
        return NULL; /* -freq: the only mode */
    }
    if (e->kind == GG_OPTION_STRING) {
        *outname = value;
        return NULL;
    }
    char *end;
    const long v = strtol(value, &end, 10);
    if (!*value || *end || v < (long)e->min || v > (long)e->max)
        return CPLSPrintf("%s must be an integer from %g to %g, not '%s'", e->flag, e->min,
                          e->max, value);
    int *target = !strcmp(k, "nx")        ? &o->nx
                  : !strcmp(k, "ny")       ? &o->ny
                  : !strcmp(k, "xsearch")  ? &o->xsearch
                  : !strcmp(k, "ysearch")  ? &o->ysearch
                  : !strcmp(k, "interp")   ? &o->interp
                                           : &o->range_interp;
    *target = (int)v;
    return NULL;
}

/* An option's default from the table. */
static int gmtsar_default(const char *key)
{
    for (int k = 0; k < GMTSAR_NOPTIONS; k++)
        if (!strcmp(gmtsar_table[k].key, key))
            return atoi(gmtsar_table[k].default_value);
    return 0;
}

/* The caller's GDALProgressFunc as gg_xcorr_gmtsar's progress. */
typedef struct gm_progress_data {
    GDALProgressFunc fn;
    void *data;
} gm_progress_data;

static int gm_progress(double f, const char *m, void *u)
{
    const gm_progress_data *p = u;
    return p->fn(f, m, p->data);
}

static int gm_fail(gg_device_start *d, int rc)
{
    gg_device_start_end(d, 0);
    return rc;
}

static gg_xcorr_gmtsar_app_options *gm_usage(gg_xcorr_gmtsar_app_options *o, int *usage_error,
                                             const char *msg)
{
    *usage_error = gmtsar_usage(msg);
    gg_xcorr_gmtsar_app_options_free(o);
    return NULL;
}

gg_xcorr_gmtsar_app_options *gg_xcorr_gmtsar_app_options_new(int argc, char **argv,
                                                             int *usage_error)
{
    gg_xcorr_gmtsar_app_options *r = CPLCalloc(1, sizeof *r);
    gg_xcorr_gmtsar_options o = {.nx = gmtsar_default("nx"), .ny = gmtsar_default("ny"),
                                 .xsearch = gmtsar_default("xsearch"),
                                 .ysearch = gmtsar_default("ysearch"),
                                 .range_interp = gmtsar_default("range_interp"),
                                 .interp = gmtsar_default("interp"), .noshift = 0};
    const char *prm[2] = {NULL, NULL}, *device = NULL, *outname = gmtsar_table[GMTSAR_NOPTIONS - 1]
                                                                     .default_value;
    int np = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (EQUAL(a, "--help") || EQUAL(a, "-h") || EQUAL(a, "--help-general"))
            return gm_usage(r, usage_error, NULL);
        if (EQUAL(a, "--version")) {
            gg_app_print_version("gdal_xcorr");
            gg_xcorr_gmtsar_app_options_free(r);
            *usage_error = 0;
            return NULL;
        }
        if (EQUAL(a, "--describe")) {
            gg_app_print_table_description(&gmtsar_spec, gmtsar_table, GMTSAR_NOPTIONS, NULL,
                                           stdout);
            gg_xcorr_gmtsar_app_options_free(r);
            *usage_error = 0;
            return NULL;
        }
        const gg_option *e = NULL;
        for (int k = 0; k < GMTSAR_NOPTIONS && !e; k++)
            if (EQUAL(a, gmtsar_table[k].flag))
                e = &gmtsar_table[k];
        if (e) {
            const char *value = NULL;
            if (e->kind != GG_OPTION_BOOL) {
                if (i + 1 >= argc)
                    return gm_usage(r, usage_error, CPLSPrintf("%s needs a value", a));
                value = argv[++i];
            }
            const char *bad = gmtsar_set(r, &o, e, value, &outname);
            if (bad)
                return gm_usage(r, usage_error, bad);
        } else if (EQUAL(a, "-q")) {
            quiet = 1;
        } else if (EQUAL(a, "-device")) {
            if (i + 1 >= argc)
                return gm_usage(r, usage_error, CPLSPrintf("%s needs a value", a));
            device = argv[++i];
        } else if (a[0] == '-') {
            return gm_usage(r, usage_error, CPLSPrintf("unknown option %s", a));
        } else if (np < 2) {
            prm[np++] = a;
        } else {
            return gm_usage(r, usage_error, CPLSPrintf("unexpected argument '%s'", a));
        }
    }
    if (np < 2)
        return gm_usage(r, usage_error, "needs <master.PRM> <aligned.PRM>");
    if (o.xsearch & (o.xsearch - 1) || o.ysearch & (o.ysearch - 1))
        return gm_usage(r, usage_error, CPLSPrintf(
                            "-xsearch %d and -ysearch %d must be powers of 2", o.xsearch, o.ysearch));
    r->o = o;
    r->prm[0] = CPLStrdup(prm[0]);
    r->prm[1] = CPLStrdup(prm[1]);
    r->device = device ? CPLStrdup(device) : NULL;
    r->outname = CPLStrdup(outname);
    r->quiet = quiet;
    *usage_error = 0;
    return r;
}

void gg_xcorr_gmtsar_app_options_free(gg_xcorr_gmtsar_app_options *o)
{
    if (!o)
        return;
    CPLFree(o->prm[0]);
    CPLFree(o->prm[1]);
    CPLFree(o->device);
    CPLFree(o->outname);
    CPLFree(o);
}

int gg_xcorr_gmtsar_app(const gg_xcorr_gmtsar_app_options *opts, gg_context *ctx_in,
                        GDALProgressFunc progress, void *progress_data)
{
    /* without a context from the caller, the device starts on its own
     * thread, first thing, while this one reads the PRMs; a bad -device is
     * reported at the wait */
    gg_device_start dev;
    if (ctx_in)
        gg_device_start_given(&dev, NULL);
    else
        gg_device_start_begin(&dev, opts->device);
    const int quiet = opts->quiet;
    gg_xcorr_prm m, al;
    char err[1024];
    if (gg_xcorr_prm_read(opts->prm[0], &m, err, sizeof err) != GG_OK ||
        gg_xcorr_prm_read(opts->prm[1], &al, err, sizeof err) != GG_OK) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", err);
        return gm_fail(&dev, 1);
    }
    /* -o is refused before any work where it is a PRM or an SLC they name
     * (or exists and is not a regular file) */
    gg_input_files *inputs = gg_input_files_new();
    int clash = !inputs;
    if (!inputs)
        snprintf(err, sizeof err, "out of memory");
    clash = clash || gg_input_files_add_path(inputs, opts->prm[0], opts->prm[0]) ||
            gg_input_files_add_path(inputs, opts->prm[1], opts->prm[1]) ||
            gg_input_files_add_path(inputs, m.slc_file, opts->prm[0]) ||
            gg_input_files_add_path(inputs, al.slc_file, opts->prm[1]);
    if (inputs && clash)
        snprintf(err, sizeof err, "out of memory");
    clash = clash || gg_input_files_check_output(inputs, "-o", opts->outname, err, sizeof err);
    gg_input_files_free(inputs);
    if (clash) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", err);
        return gm_fail(&dev, 1);
    }
    if (!al.has_shift && !opts->o.noshift)
        fprintf(stderr, "Warning 1: gdal_xcorr: %s has no rshift/ashift: using 0 (as -noshift)\n",
                opts->prm[1]);
    gg_context *ctx = ctx_in;
    if (!ctx) {
        ctx = gg_device_start_wait(&dev);
        if (!ctx) {
            fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", dev.error);
            return gm_fail(&dev, 1);
        }
        const char *notice = gg_context_notice(ctx); /* auto fell back to the CPU */
        if (!quiet && *notice)
            fprintf(stderr, "gdal_xcorr: %s\n", strncmp(notice, "geogpu: ", 8) ? notice : notice + 8);
    }
    gg_xcorr_gmtsar_row *rows = NULL;
    int n = 0;
    gm_progress_data pd = {progress, progress_data};
    gg_status st = gg_xcorr_gmtsar_run(ctx, &m, &al, &opts->o, &opts->sw, 0, &rows, &n,
                                       quiet || !progress ? NULL : gm_progress, &pd, NULL);
    if (st != GG_OK) {
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", gg_context_last_error(ctx));
        return gm_fail(&dev, 1);
    }
    /* the output transaction (gg_output.h): a temporary in the
     * destination folder, put in place when complete */
    const char *outname = opts->outname;
    gg_output_set *set = gg_output_set_new();
    const char *tmp = set ? gg_output_set_add(set, outname, NULL) : NULL;
    FILE *f = tmp ? fopen(tmp, "w") : NULL;
    int ok = f != NULL;
    for (int i = 0; ok && i < n; i++)
        ok = fprintf(f, " %d %6.3f %d %6.3f %6.2f\n", (int)rows[i].x, rows[i].xoff, (int)rows[i].y,
                     rows[i].yoff, rows[i].corr) > 0;
    const int fault = ok && gg_fault_point("write"); /* GG_FAULT=write:N (tests) */
    if (f && fclose(f) != 0)
        ok = 0;
    char why[2048] = "";
    if (ok && (fault || gg_output_set_commit(set, why, sizeof why)))
        ok = 0;
    if (!ok && *why)
        fprintf(stderr, "ERROR 1: gdal_xcorr: %s\n", why);
    else if (!ok)
        fprintf(stderr, "ERROR 1: gdal_xcorr: cannot write '%s'%s\n", outname,
                fault ? ": injected fault (GG_FAULT)" : "");
    gg_output_set_free(set);
    gg_xcorr_free(rows);
    gg_device_start_end(&dev, 0);
    return ok ? 0 : 1;
}

