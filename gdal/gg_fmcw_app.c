/*
 * gg_fmcw_app.c -- gdal_fmcw's bodies (gg_fmcw_app.h): the products'
 * spec (the source opened through the FMCW driver as "FMCW:<file>") and
 * -simulate as options from argv plus a call (GDAL's style,
 * GDALWarpAppOptionsNew + GDALWarp).
 *
 * MIT licence.
 */
#include "gg_fmcw_app.h"
#include "gg_output.h"
#include "fmcw_file.h"
#include "gg_cfradial.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------- products */

static char products[256];
static double grid_res = 0, max_range = 0, average = 0;
static int grid_given = 0;

static int parse_number(gg_app *app, const char *flag, const char *v, double *out)
{
    char *end;
    const double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d))
        return gg_app_usage_error(app, "%s takes a number, not '%s'", flag, v);
    *out = d;
    return 1;
}

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[1];
    if (EQUAL(argv[*pi], "-products")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        int list[GG_FMCW_NPRODUCTS + GG_MRR2_NPROD], n;
        char err[256], err2[256];
        /* sector or MRR-2 product names: the source tells which apply (the
         * driver refuses the other kind's) */
        if (gg_fmcw_parse_products(v[0], list, &n, err, sizeof err) != GG_OK &&
            gg_mrr2_parse_products(v[0], list, &n, err2, sizeof err2) != GG_OK)
            return gg_app_usage_error(app, "-products: %s; %s", err, err2);
        snprintf(products, sizeof products, "%s", v[0]);
        return 1;
    }
    if (EQUAL(argv[*pi], "-grid")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0 || parse_number(app, "-grid", v[0], &grid_res) < 0)
            return -1;
        if (!(grid_res > 0))
            return gg_app_usage_error(app, "-grid resolution must be positive, not '%s'", v[0]);
        grid_given = 1;
        gg_app_per_band_files(app);
        return 1;
    }
    if (EQUAL(argv[*pi], "-average")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0 || parse_number(app, "-average", v[0], &average) < 0)
            return -1;
        if (!(average > 0 && average <= 86400))
            return gg_app_usage_error(app, "-average takes seconds in (0, 86400], not '%s'", v[0]);
        return 1;
    }
    if (EQUAL(argv[*pi], "-max_range")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0 || parse_number(app, "-max_range", v[0], &max_range) < 0)
            return -1;
        if (!(max_range > 0))
            return gg_app_usage_error(app, "-max_range must be positive, not '%s'", v[0]);
        return 1;
    }
    return 0;
}

/* The product dataset: "FMCW:<src>" through GDALOpenEx with the FMCW
 * driver's open options (the driver's Open takes them as
 * FMCWOpenProducts(src, products, device, grid_res, max_range) would). */
static void *open_source(gg_app *app, const char *src, const char *device)
{
    (void)app;
    if (max_range > 0 && !grid_given) {
        CPLError(CE_Failure, CPLE_IllegalArg, "-max_range needs -grid");
        return NULL;
    }
    char **oo = NULL;
    if (*products)
        oo = CSLSetNameValue(oo, "PRODUCTS", products);
    if (device && *device)
        oo = CSLSetNameValue(oo, "DEVICE", device);
    if (grid_res != 0)
        oo = CSLSetNameValue(oo, "GRID_RES", CPLSPrintf("%.17g", grid_res));
    if (max_range != 0)
        oo = CSLSetNameValue(oo, "MAX_RANGE", CPLSPrintf("%.17g", max_range));
    if (average != 0)
        oo = CSLSetNameValue(oo, "AVERAGE", CPLSPrintf("%.17g", average));
    char *name = CPLStrdup(CPLSPrintf("FMCW:%s", src));
    GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER, (const char *const *)NULL,
                                 (const char *const *)oo, NULL);
    CPLFree(name);
    CSLDestroy(oo);
    return ds;
}

/* -of CfRadial: the product (polar sectors or MRR-2 time x height) as
 * CF/Radial 1.4 netCDF (gg_cfradial.h). */
static int write_cfradial(gg_app *app, void *product, const char *tmp,
                          int (*progress)(double, const char *, void *), void *progress_arg)
{
    (void)app;
    return gg_cfradial_write((GDALDatasetH)product, tmp, progress, progress_arg);
}

static const gg_app_flag flags[] = {
    {"-products", "<list>", "string", "comma-separated products, CfRadial short names; MRR-2: ZE, W, "
                                      "WIDTH, SNR, NOISE, FLAG, Z, PIA, RR, LWC (default all)"},
    {"-average", "<seconds>", "float", "MRR-2: average the records of each clock interval of this "
                                       "length (60: the instrument's AVE; default: every record)"},
    {"-grid", "<res_m>", "float", "PPI grid of this cell size (m) instead of the polar raster"},
    {"-max_range", "<m>", "float", "extent of the PPI grid (with -grid; default: the last gate's "
                                   "ground range)"},
    {NULL, NULL, NULL, NULL}};

static const gg_app_spec spec = {
    .name = "gdal_fmcw",
    .operation = NULL,
    .purpose = "Dual-polarisation FMCW weather-radar products (DBZ, ZDR, LDR, VEL, WIDTH, RHOHV,\n"
               "PHIDP, SNR, SNRVC, SNRHX) from raw HH/VV/HV sectors (docs/fmcw_format.md): a polar\n"
               "raster (rows = sectors, columns = range gates, one band per product), or with\n"
               "-grid one PPI GeoTIFF per product, <dst stem>_<PRODUCT><ext>, in an azimuthal-\n"
               "equidistant CRS centred on the radar.  Metek MRR-2 raw spectra (.raw, .raw.gz):\n"
               "a time x height raster (rows = records or -average intervals, columns = gates),\n"
               "one band per product (docs/mrr2.md).  -of CfRadial writes CF/Radial 1.4 netCDF\n"
               "(Py-ART, xradar) of the polar or MRR-2 products.  gdal_fmcw -simulate writes a\n"
               "simulated file (gdal_fmcw -simulate --help).",
    .operands = "<src_fmcw_or_mrr2_file> <dst_dataset>",
    .required = NULL,
    .flags = flags,
    .parse_flag = parse_flag,
    .open_source = open_source,
    .own_format = "CfRadial",
    .write_format = write_cfradial,
    .register_drivers = NULL, /* the main sets GGRegisterDrivers (gg_fmcw_app.h) */
};

const gg_app_spec *gg_fmcw_app_spec(void)
{
    return &spec;
}

/* ------------------------------------------------------------ simulate */

typedef struct sim_target {
    double range, az, dbz;
} sim_target;

typedef struct sim_job {
    gg_fmcw_params p;
    int nsec;
    double noise;
    unsigned long long seed;
    sim_target targets[16];
    int ntargets;
    double *az;
} sim_job;

/* A storm: a reflectivity cell east-north-east of the radar over 20 dBZ
 * rain, a uniform wind from the west (radial velocity + away), drops
 * flattening with intensity (ZDR up), LDR -25 dB, rho_hv 0.98 falling in
 * the core, phi_dp accumulating along the ray, ground clutter in the
 * first gates.  Point targets (-target) replace the storm. */
static int sim_sector(int k, int16_t *buf, void *user)
{
    sim_job *j = user;
    const int G = j->p.n_gates;
    float *f = malloc(sizeof(float) * 8 * (size_t)G);
    if (!f)
        return 1;
    for (int i = 0; i < 8 * G; i++)
        f[i] = NAN;
    float *dbz = f, *zdr = f + G, *ldr = f + 2 * G, *vel = f + 3 * G, *wid = f + 4 * G, *rho = f + 5 * G,
          *phi = f + 6 * G, *clu = f + 7 * G;
    const double az = j->az[k] * M_PI / 180, dr = gg_fmcw_range_resolution(&j->p), rmax = G * dr;
    const double va = gg_fmcw_nyquist_velocity(&j->p);
    double phiacc = 0;
    for (int g = 1; g < G; g++) {
        const double r = gg_fmcw_gate_range(&j->p, g);
        if (j->ntargets) {
            for (int t = 0; t < j->ntargets; t++) {
                const double bw = 360.0 / j->nsec;
                /* the sector [centre - bw/2, centre + bw/2) holding the target */
                const double daz = remainder(j->targets[t].az - j->az[k], 360.0);
                if (daz >= -bw / 2 && daz < bw / 2 && lround((j->targets[t].range - j->p.range_offset_m) / dr) == g) {
                    dbz[g] = (float)j->targets[t].dbz;
                    vel[g] = 0.25f * (float)va, wid[g] = 0.5f, zdr[g] = 0, ldr[g] = -30, rho[g] = 0.99f, phi[g] = 0;
                }
            }
            continue;
        }
        const double x = r * sin(az), y = r * cos(az);
        const double cx = 0.45 * rmax, cy = 0.2 * rmax, L = 0.12 * rmax;
        const double d2 = ((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (L * L);
        const double core = exp(-0.5 * d2);
        dbz[g] = (float)(20 + 30 * core);
        zdr[g] = (float)(0.3 + 2.2 * core);
        ldr[g] = -25;
        vel[g] = (float)(0.6 * va * sin(az));   /* wind from the west */
        wid[g] = (float)(1.0 + 1.0 * core);
        rho[g] = (float)(0.985 - 0.03 * core);
        phiacc += 0.02 + 0.3 * core;
        phi[g] = (float)(10 + phiacc);
        if (g < 6)
            clu[g] = 40;
    }
    gg_fmcw_field fd = {dbz, zdr, ldr, vel, wid, rho, phi, clu};
    gg_fmcw_sim sim = {j->noise, 1, j->seed * 1000003ULL + (unsigned long long)k};
    char err[256];
    const gg_status s = gg_fmcw_simulate(&j->p, &sim, &fd, buf, err, sizeof err);
    free(f);
    if (s != GG_OK)
        CPLError(CE_Failure, CPLE_AppDefined, "%s", err);
    return s != GG_OK;
}

static int simulate_usage(int rc)
{
    fprintf(rc ? stderr : stdout,
            "Usage: gdal_fmcw -simulate [--help] [--help-general] [--version]\n"
            "       [-sectors <n>] [-sweeps <M>] [-samples <N>] [-gates <G>]\n"
            "       [-bandwidth <Hz>] [-carrier <Hz>] [-sweep_time <s>] [-elevation <deg>]\n"
            "       [-noise <counts>] [-seed <n>] [-target <range_m>,<azimuth_deg>,<dbz>]...\n"
            "       [-lat <deg>] [-lon <deg>] [-q] <dst.nc>\n\n"
            "Writes a simulated FMCW raw file (docs/fmcw_format.md): a storm (default) or\n"
            "point targets, with noise and ground clutter.  Defaults: 72 sectors, 64 sweeps,\n"
            "512 samples, 256 gates of 30 m, 9.4 GHz, 1 ms sweeps, elevation 0.5 deg.\n");
    return rc;
}

struct gg_fmcw_simulate_app_options {
    sim_job j; /* j.az: set by the run */
    double elev;
    FMCWSite site;
    char *dst;
    int quiet;
};

static gg_fmcw_simulate_app_options *sim_fail(gg_fmcw_simulate_app_options *o, int *usage_error,
                                              int rc)
{
    *usage_error = rc;
    gg_fmcw_simulate_app_options_free(o);
    return NULL;
}

/* -target <range_m>,<azimuth_deg>,<dbz>: one more point target; 1 after
 * the error. */
static int add_target(sim_job *j, const char *v)
{
    double r, az, z;
    if (j->ntargets >= 16 || sscanf(v, "%lf,%lf,%lf", &r, &az, &z) != 3 ||
        !isfinite(r + az + z) || fabs(r) > 1e9 || fabs(az) > 1e9 || fabs(z) > 1e9) {
        fprintf(stderr, "ERROR 1: gdal_fmcw: -target takes <range_m>,<azimuth_deg>,<dbz>, finite numbers (16 at most)\n");
        return 1;
    }
    j->targets[j->ntargets++] = (sim_target){r, az, z};
    return 0;
}

/* A numeric flag's value d into o; 1 after the error. */
static int set_sim_number(gg_fmcw_simulate_app_options *o, const char *a, const char *v, double d)
{
    sim_job *j = &o->j;
    /* counts and the seed: whole numbers in range before any cast
     * (the ranges themselves are checked by check_sim_options) */
    const int count = EQUAL(a, "-sectors") || EQUAL(a, "-sweeps") || EQUAL(a, "-samples") ||
                      EQUAL(a, "-gates");
    if ((count && !(d == floor(d) && d >= 0 && d <= INT_MAX)) ||
        (EQUAL(a, "-seed") && !(d == floor(d) && d >= 0 && d < 18446744073709551616.0))) {
        fprintf(stderr, "ERROR 1: gdal_fmcw: %s takes a whole number %s, not '%s'\n", a,
                count ? "in 0..2147483647" : ">= 0 below 2^64", v);
        return 1;
    }
    if (EQUAL(a, "-sectors")) j->nsec = (int)d;
    else if (EQUAL(a, "-sweeps")) j->p.n_sweeps = (int)d;
    else if (EQUAL(a, "-samples")) j->p.n_samples = (int)d;
    else if (EQUAL(a, "-gates")) j->p.n_gates = (int)d;
    else if (EQUAL(a, "-bandwidth")) j->p.bandwidth_hz = d;
    else if (EQUAL(a, "-carrier")) j->p.carrier_hz = d;
    else if (EQUAL(a, "-sweep_time")) j->p.sweep_time_s = d;
    else if (EQUAL(a, "-elevation")) o->elev = d;
    else if (EQUAL(a, "-noise")) j->noise = d;
    else if (EQUAL(a, "-seed")) j->seed = (unsigned long long)d;
    else if (EQUAL(a, "-lat")) o->site.latitude = d;
    else if (EQUAL(a, "-lon")) o->site.longitude = d;
    else {
        fprintf(stderr, "ERROR 1: gdal_fmcw: unknown option '%s' (see -simulate --help)\n", a);
        return 1;
    }
    return 0;
}

/* A flag with a value, argv[*pi] (*pi left on the value); 1 after the error. */
static int parse_sim_flag(gg_fmcw_simulate_app_options *o, int argc, char **argv, int *pi)
{
    const char *a = argv[*pi];
    /* an unknown flag is named as such, before its value is looked at */
    static const char *const known[] = {"-sectors", "-sweeps", "-samples", "-gates",
                                        "-bandwidth", "-carrier", "-sweep_time",
                                        "-elevation", "-noise", "-seed", "-lat", "-lon",
                                        "-target", NULL};
    int k = 0;
    while (known[k] && !EQUAL(a, known[k]))
        k++;
    if (!known[k]) {
        fprintf(stderr, "ERROR 1: gdal_fmcw: unknown option '%s' (see -simulate --help)\n", a);
        return 1;
    }
    if (*pi + 1 >= argc) {
        fprintf(stderr, "ERROR 1: gdal_fmcw: %s needs a value (see -simulate --help)\n", a);
        return 1;
    }
    const char *v = argv[++*pi];
    char *end;
    const double d = strtod(v, &end);
    const int num = end != v && !*end && isfinite(d);
    if (EQUAL(a, "-target"))
        return add_target(&o->j, v);
    if (!num) {
        fprintf(stderr, "ERROR 1: gdal_fmcw: %s takes a number, not '%s'\n", a, v);
        return 1;
    }
    return set_sim_number(o, a, v, d);
}

/* The destination and the radar's parameters as a whole; 1 after the error. */
static int check_sim_options(gg_fmcw_simulate_app_options *o, const char *dst)
{
    sim_job *j = &o->j;
    char err[256];
    j->p.sample_rate_hz = j->p.n_samples / j->p.sweep_time_s;
    if (!dst)
        return fprintf(stderr, "ERROR 1: gdal_fmcw: missing destination file (see -simulate --help)\n"), 1;
    if (!EQUAL(CPLGetExtension(dst), "nc"))
        return fprintf(stderr, "ERROR 1: gdal_fmcw: -simulate writes NetCDF: the destination '%s' "
                               "must end in .nc\n", dst), 1;
    if (j->nsec < 1 || j->nsec > 100000)
        return fprintf(stderr, "ERROR 1: gdal_fmcw: -sectors %d out of range\n", j->nsec), 1;
    if (gg_fmcw_params_check(&j->p, err, sizeof err) != GG_OK)
        return fprintf(stderr, "ERROR 1: gdal_fmcw: %s\n", err), 1;
    if (!(j->noise >= 0))
        return fprintf(stderr, "ERROR 1: gdal_fmcw: -noise must be >= 0\n"), 1;
    return 0;
}

gg_fmcw_simulate_app_options *gg_fmcw_simulate_app_options_new(int argc, char **argv,
                                                               int *usage_error)
{
    gg_fmcw_simulate_app_options *o = CPLCalloc(1, sizeof *o);
    sim_job *j = &o->j;
    gg_fmcw_params_default(&j->p);
    j->p.n_sweeps = 64;
    j->p.n_samples = 512;
    j->p.n_gates = 256;
    j->nsec = 72;
    j->noise = 8;
    j->seed = 1;
    o->elev = 0.5;
    o->site = (FMCWSite){52.0, 4.9, 10.0, 0};
    const char *dst = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (EQUAL(a, "-simulate"))
            continue;
        if (EQUAL(a, "--help") || EQUAL(a, "-h"))
            return sim_fail(o, usage_error, simulate_usage(0));
        if (EQUAL(a, "--version")) {
            gg_app_print_version("gdal_fmcw");
            return sim_fail(o, usage_error, 0);
        }
        if (EQUAL(a, "-q")) {
            o->quiet = 1;
            continue;
        }
        if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
            if (parse_sim_flag(o, argc, argv, &i))
                return sim_fail(o, usage_error, 1);
            continue;
        }
        if (dst) {
            fprintf(stderr, "ERROR 1: gdal_fmcw: -simulate takes one destination, not '%s' too\n", a);
            return sim_fail(o, usage_error, 1);
        }
        dst = a;
    }
    if (check_sim_options(o, dst))
        return sim_fail(o, usage_error, 1);
    o->dst = CPLStrdup(dst);
    *usage_error = 0;
    return o;
}

void gg_fmcw_simulate_app_options_free(gg_fmcw_simulate_app_options *o)
{
    if (!o)
        return;
    CPLFree(o->dst);
    CPLFree(o);
}

int gg_fmcw_simulate_app(const char *dst, const gg_fmcw_simulate_app_options *o,
                         GDALProgressFunc progress, void *progress_data)
{
    if (!dst)
        dst = o->dst;
    sim_job j = o->j;
    FMCWSite site = o->site;
    const double elev = o->elev;
    CPLPushErrorHandler(CPLQuietErrorHandler); /* errors: one line below */
    site.beam_width = 360.0 / j.nsec;
    double *az = malloc(sizeof(double) * (size_t)j.nsec * 3);
    j.az = az;
    for (int k = 0; k < j.nsec; k++) {
        az[k] = (k + 0.5) * 360.0 / j.nsec;
        az[j.nsec + k] = elev;
        az[2 * j.nsec + k] = 1.7e9 + k * j.p.n_sweeps * j.p.sweep_time_s;
    }
    /* the output transaction: a tracked temporary (removed on a signal in
     * a program that catches them), put in place by the commit step */
    char *tmp = gg_output_temporary_name(dst);
    const int dummy = o->quiet || !progress;
    const CPLErr e = FMCWFileWrite(tmp, &j.p, &site, j.nsec, az, az + j.nsec, az + 2 * j.nsec, sim_sector, &j,
                                   dummy ? GDALDummyProgress : progress, dummy ? NULL : progress_data);
    char why[1024] = "";
    int rc = 1;
    if (e == CE_None && gg_output_commit(NULL, tmp, dst, 1, why, sizeof why) == 0)
        rc = 0;
    else {
        gg_output_discard(NULL, tmp);
        fprintf(stderr, "ERROR 1: gdal_fmcw: cannot write '%s': %s\n", dst,
                why[0] ? why : CPLGetLastErrorMsg());
    }
    CPLFree(tmp);
    free(az);
    CPLPopErrorHandler();
    return rc;
}
