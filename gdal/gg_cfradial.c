/*
 * gg_cfradial.c -- CF/Radial 1.4 netCDF from a radar product dataset
 * (gg_cfradial.h).  The layout is the convention's (NCAR CfRadial 1.4
 * document, sections 4-5): dimensions time (rays), range (gates), sweep
 * and string_length; coordinate variables time, range, azimuth,
 * elevation; the site as scalars; the sweep table (sweep_number,
 * sweep_mode, fixed_angle, start/end ray indices); one (time, range)
 * variable per field with units, standard_name and _FillValue.
 *
 * MIT licence.
 */
#include "gg_cfradial.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STRLEN 32
#define FILL (-9999.0f)

/* A comma-separated metadata list of exactly n numbers into v; 0 when
 * absent or of another length. */
static int md_list(GDALDatasetH ds, const char *key, int n, double *v)
{
    const char *s = GDALGetMetadataItem(ds, key, NULL);
    if (!s)
        return 0;
    char **items = CSLTokenizeString2(s, ",", 0);
    const int ok = CSLCount(items) == n;
    for (int i = 0; ok && i < n; i++)
        v[i] = CPLAtof(items[i]);
    CSLDestroy(items);
    return ok;
}

static double md_number(GDALDatasetH ds, const char *key, double dflt)
{
    const char *s = GDALGetMetadataItem(ds, key, NULL);
    return s ? CPLAtof(s) : dflt;
}

/* "2024-03-08T23:00:00Z" */
static void iso_time(double t, char *out)
{
    const time_t s = (time_t)floor(t);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, STRLEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The field of a band: CfRadial name, units, standard and long names, the
 * factor its values are written with (-1: W -> VEL). */
typedef struct field {
    char name[64];
    const char *units, *standard, *long_name;
    double factor;
} field;

static void field_of(GDALRasterBandH b, int is_mrr2, field *f)
{
    const char *d = GDALGetDescription(b);
    const char *std = GDALGetMetadataItem(b, "standard_name", NULL);
    snprintf(f->name, sizeof f->name, "%s", d && *d ? d : "FIELD");
    f->units = GDALGetRasterUnitType(b);
    f->standard = std && *std ? std : NULL;
    f->long_name = NULL;
    f->factor = 1.0;
    if (!is_mrr2)
        return;
    if (EQUAL(d, "ZE")) {
        snprintf(f->name, sizeof f->name, "DBZ");
        f->long_name = "equivalent reflectivity factor (attenuated)";
    } else if (EQUAL(d, "W")) {
        snprintf(f->name, sizeof f->name, "VEL");
        f->units = "m/s";
        f->standard = "radial_velocity_of_scatterers_away_from_instrument";
        f->long_name = "Doppler velocity, positive up (minus the fall velocity W)";
        f->factor = -1.0;
    } else if (EQUAL(d, "WIDTH")) {
        f->long_name = "Doppler spectrum width";
    } else if (EQUAL(d, "Z")) {
        f->long_name = "attenuation-corrected reflectivity factor from the drop sizes";
    } else if (EQUAL(d, "PIA")) {
        f->long_name = "two-way path-integrated attenuation";
    } else if (EQUAL(d, "RR")) {
        f->long_name = "rain rate";
    } else if (EQUAL(d, "LWC")) {
        f->long_name = "liquid water content";
    } else if (EQUAL(d, "NOISE")) {
        f->long_name = "noise level as a reflectivity";
    } else if (EQUAL(d, "FLAG")) {
        f->long_name = "quality flags: 1 disturbed gate, 2 record left out, 4 no data, 8 PIA above 10 dB";
    }
}

/* Whether a netCDF call succeeded; if not, its error, naming the file. */
static int nc_ok(const char *path, int e)
{
    if (e == NC_NOERR)
        return 1;
    CPLError(CE_Failure, CPLE_FileIO, "CfRadial: %s: %s", path, nc_strerror(e));
    return 0;
}

#define NC(call)                                                                             \
    do {                                                                                     \
        if (!nc_ok(path, (call)))                                                            \
            goto fail;                                                                       \
    } while (0)

/* In the steps below: return the first netCDF error (the caller reports it). */
#define TRY(call)                                                                            \
    do {                                                                                     \
        const int e_ = (call);                                                               \
        if (e_ != NC_NOERR)                                                                  \
            return e_;                                                                       \
    } while (0)

static int put_text(int nc, int var, const char *key, const char *value)
{
    return nc_put_att_text(nc, var, key, strlen(value), value);
}

/* What the file is written from: the product's size, per-ray times and
 * azimuths, gate ranges, elevation, instrument and fields. */
typedef struct cf_product {
    GDALDatasetH ds;
    int R, G, nb; /* rays, gates, bands */
    double *t, *rng, *az;
    double elev;
    int vertical, is_mrr2;
    const char *instrument;
    field *fields;
    char start[STRLEN], end[STRLEN];
} cf_product;

/* The netCDF ids of the dimensions and variables. */
typedef struct cf_ids {
    int dim_t, dim_r, dim_s, dim_c;
    int time, range, az, el, lat, lon, alt, vol, tcs, tce, sn, sm, fa, ss, se;
    int *field; /* one per band */
} cf_ids;

/* Fills p from the dataset's metadata; 1 after the error when the product
 * has no per-ray times and gate ranges.  free_product frees p either way. */
static int read_product(GDALDatasetH ds, cf_product *p)
{
    memset(p, 0, sizeof *p);
    const int R = GDALGetRasterYSize(ds), G = GDALGetRasterXSize(ds), nb = GDALGetRasterCount(ds);
    p->ds = ds;
    p->R = R;
    p->G = G;
    p->nb = nb;
    p->t = CPLMalloc(sizeof(double) * (size_t)(R > 0 ? R : 1));
    p->rng = CPLMalloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
    p->az = CPLMalloc(sizeof(double) * (size_t)(R > 0 ? R : 1));
    if (R < 1 || G < 1 || nb < 1 || !md_list(ds, "TIME_S", R, p->t) ||
        !md_list(ds, "RANGE_M", G, p->rng)) {
        CPLError(CE_Failure, CPLE_NotSupported,
                 "CfRadial: the product has no per-ray times (TIME_S) and gate ranges (RANGE_M): "
                 "only the polar sector products and MRR-2 spectra can be written as CfRadial");
        return 1;
    }
    p->elev = md_number(ds, "ELEVATION_DEG", 90.0);
    p->vertical = fabs(p->elev - 90.0) < 1e-6;
    if (!md_list(ds, "AZIMUTH_DEG", R, p->az))
        for (int r = 0; r < R; r++)
            p->az[r] = 0.0;
    p->instrument = GDALGetMetadataItem(ds, "INSTRUMENT", NULL);
    p->is_mrr2 = p->instrument && strstr(p->instrument, "MRR-2") != NULL;
    p->fields = CPLCalloc((size_t)nb, sizeof *p->fields);
    for (int b = 0; b < nb; b++)
        field_of(GDALGetRasterBand(ds, b + 1), p->is_mrr2, &p->fields[b]);
    iso_time(p->t[0], p->start);
    iso_time(p->t[R - 1], p->end);
    return 0;
}

static void free_product(cf_product *p)
{
    CPLFree(p->fields);
    CPLFree(p->t);
    CPLFree(p->rng);
    CPLFree(p->az);
}

static int define_dimensions(int nc, const cf_product *p, cf_ids *id)
{
    TRY(nc_def_dim(nc, "time", (size_t)p->R, &id->dim_t));
    TRY(nc_def_dim(nc, "range", (size_t)p->G, &id->dim_r));
    TRY(nc_def_dim(nc, "sweep", 1, &id->dim_s));
    return nc_def_dim(nc, "string_length", STRLEN, &id->dim_c);
}

/* The fields' names, comma-separated. */
static int put_field_names(int nc, const cf_product *p)
{
    char *names = CPLStrdup("");
    for (int b = 0; b < p->nb; b++) {
        char *more = CPLStrdup(CPLSPrintf("%s%s%s", names, b ? "," : "", p->fields[b].name));
        CPLFree(names);
        names = more;
    }
    const int e = put_text(nc, NC_GLOBAL, "field_names", names);
    CPLFree(names);
    return e;
}

/* Global attributes (CfRadial 1.4 section 4.1). */
static int put_global_attributes(int nc, const cf_product *p)
{
    TRY(put_text(nc, NC_GLOBAL, "Conventions", "CF/Radial instrument_parameters"));
    TRY(put_text(nc, NC_GLOBAL, "version", "1.4"));
    TRY(put_text(nc, NC_GLOBAL, "title", p->is_mrr2 ? "Metek MRR-2 products (geogpu)" : "FMCW radar products (geogpu)"));
    TRY(put_text(nc, NC_GLOBAL, "institution", ""));
    TRY(put_text(nc, NC_GLOBAL, "references", "geogpu docs/mrr2.md, docs/gdal_fmcw.md"));
    TRY(put_text(nc, NC_GLOBAL, "source", GDALGetDescription(p->ds)));
    TRY(put_text(nc, NC_GLOBAL, "history", "gdal_fmcw -of CfRadial"));
    TRY(put_text(nc, NC_GLOBAL, "comment", ""));
    TRY(put_text(nc, NC_GLOBAL, "instrument_name", p->instrument ? p->instrument : "FMCW radar"));
    TRY(put_text(nc, NC_GLOBAL, "platform_is_mobile", "false"));
    TRY(put_text(nc, NC_GLOBAL, "scan_name", p->vertical ? "vertically_pointing" : "ppi"));
    TRY(put_field_names(nc, p));
    TRY(put_text(nc, NC_GLOBAL, "time_coverage_start", p->start));
    return put_text(nc, NC_GLOBAL, "time_coverage_end", p->end);
}

/* The volume number, time coverage and the site's position. */
static int define_volume_and_site(int nc, cf_ids *id)
{
    TRY(nc_def_var(nc, "volume_number", NC_INT, 0, NULL, &id->vol));
    TRY(put_text(nc, id->vol, "long_name", "data_volume_index_number"));
    TRY(nc_def_var(nc, "time_coverage_start", NC_CHAR, 1, &id->dim_c, &id->tcs));
    TRY(put_text(nc, id->tcs, "long_name", "data_volume_start_time_utc"));
    TRY(nc_def_var(nc, "time_coverage_end", NC_CHAR, 1, &id->dim_c, &id->tce));
    TRY(put_text(nc, id->tce, "long_name", "data_volume_end_time_utc"));
    TRY(nc_def_var(nc, "latitude", NC_DOUBLE, 0, NULL, &id->lat));
    TRY(put_text(nc, id->lat, "long_name", "latitude"));
    TRY(put_text(nc, id->lat, "units", "degrees_north"));
    TRY(nc_def_var(nc, "longitude", NC_DOUBLE, 0, NULL, &id->lon));
    TRY(put_text(nc, id->lon, "long_name", "longitude"));
    TRY(put_text(nc, id->lon, "units", "degrees_east"));
    TRY(nc_def_var(nc, "altitude", NC_DOUBLE, 0, NULL, &id->alt));
    TRY(put_text(nc, id->alt, "long_name", "altitude"));
    TRY(put_text(nc, id->alt, "units", "meters"));
    return put_text(nc, id->alt, "positive", "up");
}

/* The range coordinate, with its gate spacing when constant. */
static int define_range(int nc, const cf_product *p, cf_ids *id)
{
    const int G = p->G;
    const double *rng = p->rng;
    TRY(nc_def_var(nc, "range", NC_FLOAT, 1, &id->dim_r, &id->range));
    TRY(put_text(nc, id->range, "standard_name", "projection_range_coordinate"));
    TRY(put_text(nc, id->range, "long_name", "range_to_measurement_volume"));
    TRY(put_text(nc, id->range, "units", "meters"));
    TRY(put_text(nc, id->range, "axis", "radial_range_coordinate"));
    int constant = G < 2;
    const double step = G > 1 ? rng[1] - rng[0] : 0.0;
    if (G > 1) {
        constant = 1;
        for (int g = 2; g < G; g++)
            constant &= fabs(rng[g] - rng[g - 1] - step) < 1e-3 * fabs(step);
    }
    TRY(put_text(nc, id->range, "spacing_is_constant", constant ? "true" : "false"));
    const float first = (float)rng[0], between = (float)step;
    TRY(nc_put_att_float(nc, id->range, "meters_to_center_of_first_gate", NC_FLOAT, 1, &first));
    if (constant)
        TRY(nc_put_att_float(nc, id->range, "meters_between_gates", NC_FLOAT, 1, &between));
    return NC_NOERR;
}

/* The coordinate variables: time, range, azimuth, elevation. */
static int define_coordinates(int nc, const cf_product *p, cf_ids *id)
{
    char units[80];
    snprintf(units, sizeof units, "seconds since %s", p->start);
    TRY(nc_def_var(nc, "time", NC_DOUBLE, 1, &id->dim_t, &id->time));
    TRY(put_text(nc, id->time, "standard_name", "time"));
    TRY(put_text(nc, id->time, "long_name", "time_in_seconds_since_volume_start"));
    TRY(put_text(nc, id->time, "units", units));
    TRY(put_text(nc, id->time, "calendar", "gregorian"));
    TRY(define_range(nc, p, id));
    TRY(nc_def_var(nc, "azimuth", NC_FLOAT, 1, &id->dim_t, &id->az));
    TRY(put_text(nc, id->az, "standard_name", "beam_azimuth_angle"));
    TRY(put_text(nc, id->az, "long_name", "ray_azimuth_angle"));
    TRY(put_text(nc, id->az, "units", "degrees"));
    TRY(put_text(nc, id->az, "axis", "radial_azimuth_coordinate"));
    TRY(nc_def_var(nc, "elevation", NC_FLOAT, 1, &id->dim_t, &id->el));
    TRY(put_text(nc, id->el, "standard_name", "beam_elevation_angle"));
    TRY(put_text(nc, id->el, "long_name", "ray_elevation_angle"));
    TRY(put_text(nc, id->el, "units", "degrees"));
    return put_text(nc, id->el, "axis", "radial_elevation_coordinate");
}

/* The sweep table: one sweep. */
static int define_sweep(int nc, cf_ids *id)
{
    TRY(nc_def_var(nc, "sweep_number", NC_INT, 1, &id->dim_s, &id->sn));
    TRY(put_text(nc, id->sn, "long_name", "sweep_index_number_0_based"));
    const int dims[2] = {id->dim_s, id->dim_c};
    TRY(nc_def_var(nc, "sweep_mode", NC_CHAR, 2, dims, &id->sm));
    TRY(put_text(nc, id->sm, "long_name", "scan_mode_for_sweep"));
    TRY(put_text(nc, id->sm, "options", "sector, coplane, rhi, vertical_pointing, idle, "
                                        "azimuth_surveillance, elevation_surveillance, "
                                        "sunscan, pointing, manual_ppi, manual_rhi"));
    TRY(nc_def_var(nc, "fixed_angle", NC_FLOAT, 1, &id->dim_s, &id->fa));
    TRY(put_text(nc, id->fa, "long_name", "ray_target_fixed_angle"));
    TRY(put_text(nc, id->fa, "units", "degrees"));
    TRY(nc_def_var(nc, "sweep_start_ray_index", NC_INT, 1, &id->dim_s, &id->ss));
    TRY(put_text(nc, id->ss, "long_name", "index_of_first_ray_in_sweep"));
    TRY(nc_def_var(nc, "sweep_end_ray_index", NC_INT, 1, &id->dim_s, &id->se));
    return put_text(nc, id->se, "long_name", "index_of_last_ray_in_sweep");
}

/* One (time, range) variable per band (id->field allocated by the caller). */
static int define_fields(int nc, const cf_product *p, cf_ids *id)
{
    for (int b = 0; b < p->nb; b++) {
        const field *f = &p->fields[b];
        const int dims[2] = {id->dim_t, id->dim_r};
        const float fill = FILL;
        TRY(nc_def_var(nc, f->name, NC_FLOAT, 2, dims, &id->field[b]));
        TRY(nc_put_att_float(nc, id->field[b], "_FillValue", NC_FLOAT, 1, &fill));
        if (f->units && *f->units)
            TRY(put_text(nc, id->field[b], "units", f->units));
        if (f->standard)
            TRY(put_text(nc, id->field[b], "standard_name", f->standard));
        TRY(put_text(nc, id->field[b], "long_name", f->long_name ? f->long_name : f->name));
        TRY(put_text(nc, id->field[b], "coordinates", "elevation azimuth range"));
    }
    return NC_NOERR;
}

/* The scalars and the sweep table's values. */
static int write_volume_site_and_sweep(int nc, const cf_product *p, const cf_ids *id)
{
    const int zero = 0, last = p->R - 1;
    const float fixed = (float)p->elev;
    char mode[STRLEN] = {0}, s0[STRLEN] = {0}, s1[STRLEN] = {0};
    snprintf(mode, sizeof mode, "%s", p->vertical ? "vertical_pointing" : "azimuth_surveillance");
    memcpy(s0, p->start, strlen(p->start));
    memcpy(s1, p->end, strlen(p->end));
    const size_t at0[2] = {0, 0}, cnt[2] = {1, STRLEN}, one = STRLEN;
    const double lat = md_number(p->ds, "LATITUDE", NAN), lon = md_number(p->ds, "LONGITUDE", NAN),
                 alt = md_number(p->ds, "ALTITUDE", NAN);
    TRY(nc_put_var_int(nc, id->vol, &zero));
    TRY(nc_put_vara_text(nc, id->tcs, at0, &one, s0));
    TRY(nc_put_vara_text(nc, id->tce, at0, &one, s1));
    TRY(nc_put_var_double(nc, id->lat, &lat));
    TRY(nc_put_var_double(nc, id->lon, &lon));
    TRY(nc_put_var_double(nc, id->alt, &alt));
    TRY(nc_put_var_int(nc, id->sn, &zero));
    TRY(nc_put_vara_text(nc, id->sm, at0, cnt, mode));
    TRY(nc_put_var_float(nc, id->fa, &fixed));
    TRY(nc_put_var_int(nc, id->ss, &zero));
    return nc_put_var_int(nc, id->se, &last);
}

/* The coordinates' values: times from the first whole second, ranges,
 * azimuths and elevations. */
static int write_coordinates(int nc, const cf_product *p, const cf_ids *id)
{
    const int R = p->R, G = p->G;
    double *rel = CPLMalloc(sizeof(double) * (size_t)R);
    float *fr = CPLMalloc(sizeof(float) * (size_t)(R > G ? R : G));
    for (int r = 0; r < R; r++)
        rel[r] = p->t[r] - floor(p->t[0]);
    int e = nc_put_var_double(nc, id->time, rel);
    for (int g = 0; g < G; g++)
        fr[g] = (float)p->rng[g];
    if (e == NC_NOERR)
        e = nc_put_var_float(nc, id->range, fr);
    for (int r = 0; r < R; r++)
        fr[r] = (float)p->az[r];
    if (e == NC_NOERR)
        e = nc_put_var_float(nc, id->az, fr);
    for (int r = 0; r < R; r++)
        fr[r] = (float)p->elev;
    if (e == NC_NOERR)
        e = nc_put_var_float(nc, id->el, fr);
    CPLFree(rel);
    CPLFree(fr);
    return e;
}

/* Each band's values (nodata and non-finite -> _FillValue), with progress
 * after each; 1 after the error. */
static int write_fields(int nc, const char *path, const cf_product *p, const cf_ids *id,
                        GDALProgressFunc progress, void *progress_arg)
{
    const int R = p->R, G = p->G, nb = p->nb;
    float *buf = VSI_MALLOC2_VERBOSE(sizeof(float), (size_t)R * G);
    if (!buf)
        return 1;
    int failed = 0;
    for (int b = 0; !failed && b < nb; b++) {
        GDALRasterBandH band = GDALGetRasterBand(p->ds, b + 1);
        int has_nd = 0;
        const double nd = GDALGetRasterNoDataValue(band, &has_nd);
        /* the product computes inside this read (an error names its file) */
        if (GDALRasterIO(band, GF_Read, 0, 0, G, R, buf, G, R, GDT_Float32, 0, 0) != CE_None) {
            failed = 1;
            break;
        }
        for (size_t i = 0; i < (size_t)R * G; i++)
            buf[i] = (has_nd && buf[i] == (float)nd) || !isfinite(buf[i])
                         ? FILL : (float)(buf[i] * p->fields[b].factor);
        failed = !nc_ok(path, nc_put_var_float(nc, id->field[b], buf));
        if (!failed && progress && !progress((b + 1.0) / nb, "", progress_arg)) {
            CPLError(CE_Failure, CPLE_UserInterrupt, "CfRadial: interrupted");
            failed = 1;
        }
    }
    VSIFree(buf);
    return failed;
}

int gg_cfradial_write(GDALDatasetH ds, const char *path, GDALProgressFunc progress,
                      void *progress_arg)
{
    cf_product p;
    cf_ids id;
    memset(&id, 0, sizeof id);
    int nc = -1, status = 1;
    if (read_product(ds, &p))
        goto done;
    /* the classic 64-bit-offset format (CfRadial's original): no HDF5
     * underneath, whose library, after a failed write (a full disk), crashed
     * the process at exit closing the file it could not flush */
    NC(nc_create(path, NC_CLOBBER | NC_64BIT_OFFSET, &nc));
    NC(define_dimensions(nc, &p, &id));
    NC(put_global_attributes(nc, &p));
    NC(define_volume_and_site(nc, &id));
    NC(define_coordinates(nc, &p, &id));
    NC(define_sweep(nc, &id));
    id.field = CPLMalloc(sizeof(int) * (size_t)p.nb);
    NC(define_fields(nc, &p, &id));
    NC(nc_enddef(nc));
    NC(write_volume_site_and_sweep(nc, &p, &id));
    NC(write_coordinates(nc, &p, &id));
    if (write_fields(nc, path, &p, &id, progress, progress_arg))
        goto fail;
    {
        const int e = nc_close(nc);
        nc = -1;
        NC(e);
    }
    status = 0;
    goto done;
fail:
    if (nc >= 0)
        nc_close(nc);
    VSIUnlink(path);
done:
    CPLFree(id.field);
    free_product(&p);
    return status;
}
