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

#define NC(call)                                                                             \
    do {                                                                                     \
        const int e_ = (call);                                                               \
        if (e_ != NC_NOERR) {                                                                \
            CPLError(CE_Failure, CPLE_FileIO, "CfRadial: %s: %s", path, nc_strerror(e_));   \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)

static int put_text(int nc, int var, const char *key, const char *value)
{
    return nc_put_att_text(nc, var, key, strlen(value), value);
}

int gg_cfradial_write(GDALDatasetH ds, const char *path, GDALProgressFunc progress,
                      void *progress_arg)
{
    const int R = GDALGetRasterYSize(ds), G = GDALGetRasterXSize(ds), nb = GDALGetRasterCount(ds);
    double *t = CPLMalloc(sizeof(double) * (size_t)(R > 0 ? R : 1));
    double *rng = CPLMalloc(sizeof(double) * (size_t)(G > 0 ? G : 1));
    double *az = CPLMalloc(sizeof(double) * (size_t)(R > 0 ? R : 1));
    float *buf = NULL;
    field *fields = NULL;
    int nc = -1, status = 1;
    if (R < 1 || G < 1 || nb < 1 || !md_list(ds, "TIME_S", R, t) || !md_list(ds, "RANGE_M", G, rng)) {
        CPLError(CE_Failure, CPLE_NotSupported,
                 "CfRadial: the product has no per-ray times (TIME_S) and gate ranges (RANGE_M): "
                 "only the polar sector products and MRR-2 spectra can be written as CfRadial");
        goto done;
    }
    const double elev = md_number(ds, "ELEVATION_DEG", 90.0);
    const int vertical = fabs(elev - 90.0) < 1e-6;
    if (!md_list(ds, "AZIMUTH_DEG", R, az))
        for (int r = 0; r < R; r++)
            az[r] = 0.0;
    const char *instrument = GDALGetMetadataItem(ds, "INSTRUMENT", NULL);
    const int is_mrr2 = instrument && strstr(instrument, "MRR-2") != NULL;
    fields = CPLCalloc((size_t)nb, sizeof *fields);
    for (int b = 0; b < nb; b++)
        field_of(GDALGetRasterBand(ds, b + 1), is_mrr2, &fields[b]);

    char start[STRLEN], end[STRLEN];
    iso_time(t[0], start);
    iso_time(t[R - 1], end);
    int dim_t, dim_r, dim_s, dim_c, v_time, v_range, v_az, v_el, v_lat, v_lon, v_alt, v_vol,
        v_tcs, v_tce, v_sn, v_sm, v_fa, v_ss, v_se;
    /* the classic 64-bit-offset format (CfRadial's original): no HDF5
     * underneath, whose library, after a failed write (a full disk), crashed
     * the process at exit closing the file it could not flush */
    NC(nc_create(path, NC_CLOBBER | NC_64BIT_OFFSET, &nc));
    NC(nc_def_dim(nc, "time", (size_t)R, &dim_t));
    NC(nc_def_dim(nc, "range", (size_t)G, &dim_r));
    NC(nc_def_dim(nc, "sweep", 1, &dim_s));
    NC(nc_def_dim(nc, "string_length", STRLEN, &dim_c));
    /* global attributes (CfRadial 1.4 section 4.1) */
    NC(put_text(nc, NC_GLOBAL, "Conventions", "CF/Radial instrument_parameters"));
    NC(put_text(nc, NC_GLOBAL, "version", "1.4"));
    NC(put_text(nc, NC_GLOBAL, "title", is_mrr2 ? "Metek MRR-2 products (geogpu)" : "FMCW radar products (geogpu)"));
    NC(put_text(nc, NC_GLOBAL, "institution", ""));
    NC(put_text(nc, NC_GLOBAL, "references", "geogpu docs/mrr2.md, docs/gdal_fmcw.md"));
    NC(put_text(nc, NC_GLOBAL, "source", GDALGetDescription(ds)));
    NC(put_text(nc, NC_GLOBAL, "history", "gdal_fmcw -of CfRadial"));
    NC(put_text(nc, NC_GLOBAL, "comment", ""));
    NC(put_text(nc, NC_GLOBAL, "instrument_name", instrument ? instrument : "FMCW radar"));
    NC(put_text(nc, NC_GLOBAL, "platform_is_mobile", "false"));
    NC(put_text(nc, NC_GLOBAL, "scan_name", vertical ? "vertically_pointing" : "ppi"));
    {
        char *names = CPLStrdup("");
        for (int b = 0; b < nb; b++) {
            char *more = CPLStrdup(CPLSPrintf("%s%s%s", names, b ? "," : "", fields[b].name));
            CPLFree(names);
            names = more;
        }
        const int e = put_text(nc, NC_GLOBAL, "field_names", names);
        CPLFree(names);
        NC(e);
    }
    NC(put_text(nc, NC_GLOBAL, "time_coverage_start", start));
    NC(put_text(nc, NC_GLOBAL, "time_coverage_end", end));

    NC(nc_def_var(nc, "volume_number", NC_INT, 0, NULL, &v_vol));
    NC(put_text(nc, v_vol, "long_name", "data_volume_index_number"));
    NC(nc_def_var(nc, "time_coverage_start", NC_CHAR, 1, &dim_c, &v_tcs));
    NC(put_text(nc, v_tcs, "long_name", "data_volume_start_time_utc"));
    NC(nc_def_var(nc, "time_coverage_end", NC_CHAR, 1, &dim_c, &v_tce));
    NC(put_text(nc, v_tce, "long_name", "data_volume_end_time_utc"));
    NC(nc_def_var(nc, "latitude", NC_DOUBLE, 0, NULL, &v_lat));
    NC(put_text(nc, v_lat, "long_name", "latitude"));
    NC(put_text(nc, v_lat, "units", "degrees_north"));
    NC(nc_def_var(nc, "longitude", NC_DOUBLE, 0, NULL, &v_lon));
    NC(put_text(nc, v_lon, "long_name", "longitude"));
    NC(put_text(nc, v_lon, "units", "degrees_east"));
    NC(nc_def_var(nc, "altitude", NC_DOUBLE, 0, NULL, &v_alt));
    NC(put_text(nc, v_alt, "long_name", "altitude"));
    NC(put_text(nc, v_alt, "units", "meters"));
    NC(put_text(nc, v_alt, "positive", "up"));
    {
        char units[80];
        snprintf(units, sizeof units, "seconds since %s", start);
        NC(nc_def_var(nc, "time", NC_DOUBLE, 1, &dim_t, &v_time));
        NC(put_text(nc, v_time, "standard_name", "time"));
        NC(put_text(nc, v_time, "long_name", "time_in_seconds_since_volume_start"));
        NC(put_text(nc, v_time, "units", units));
        NC(put_text(nc, v_time, "calendar", "gregorian"));
    }
    NC(nc_def_var(nc, "range", NC_FLOAT, 1, &dim_r, &v_range));
    NC(put_text(nc, v_range, "standard_name", "projection_range_coordinate"));
    NC(put_text(nc, v_range, "long_name", "range_to_measurement_volume"));
    NC(put_text(nc, v_range, "units", "meters"));
    NC(put_text(nc, v_range, "axis", "radial_range_coordinate"));
    {
        int constant = G < 2;
        const double step = G > 1 ? rng[1] - rng[0] : 0.0;
        if (G > 1) {
            constant = 1;
            for (int g = 2; g < G; g++)
                constant &= fabs(rng[g] - rng[g - 1] - step) < 1e-3 * fabs(step);
        }
        NC(put_text(nc, v_range, "spacing_is_constant", constant ? "true" : "false"));
        const float first = (float)rng[0], between = (float)step;
        NC(nc_put_att_float(nc, v_range, "meters_to_center_of_first_gate", NC_FLOAT, 1, &first));
        if (constant)
            NC(nc_put_att_float(nc, v_range, "meters_between_gates", NC_FLOAT, 1, &between));
    }
    NC(nc_def_var(nc, "azimuth", NC_FLOAT, 1, &dim_t, &v_az));
    NC(put_text(nc, v_az, "standard_name", "beam_azimuth_angle"));
    NC(put_text(nc, v_az, "long_name", "ray_azimuth_angle"));
    NC(put_text(nc, v_az, "units", "degrees"));
    NC(put_text(nc, v_az, "axis", "radial_azimuth_coordinate"));
    NC(nc_def_var(nc, "elevation", NC_FLOAT, 1, &dim_t, &v_el));
    NC(put_text(nc, v_el, "standard_name", "beam_elevation_angle"));
    NC(put_text(nc, v_el, "long_name", "ray_elevation_angle"));
    NC(put_text(nc, v_el, "units", "degrees"));
    NC(put_text(nc, v_el, "axis", "radial_elevation_coordinate"));
    NC(nc_def_var(nc, "sweep_number", NC_INT, 1, &dim_s, &v_sn));
    NC(put_text(nc, v_sn, "long_name", "sweep_index_number_0_based"));
    {
        const int dims[2] = {dim_s, dim_c};
        NC(nc_def_var(nc, "sweep_mode", NC_CHAR, 2, dims, &v_sm));
        NC(put_text(nc, v_sm, "long_name", "scan_mode_for_sweep"));
        NC(put_text(nc, v_sm, "options", "sector, coplane, rhi, vertical_pointing, idle, "
                                         "azimuth_surveillance, elevation_surveillance, "
                                         "sunscan, pointing, manual_ppi, manual_rhi"));
    }
    NC(nc_def_var(nc, "fixed_angle", NC_FLOAT, 1, &dim_s, &v_fa));
    NC(put_text(nc, v_fa, "long_name", "ray_target_fixed_angle"));
    NC(put_text(nc, v_fa, "units", "degrees"));
    NC(nc_def_var(nc, "sweep_start_ray_index", NC_INT, 1, &dim_s, &v_ss));
    NC(put_text(nc, v_ss, "long_name", "index_of_first_ray_in_sweep"));
    NC(nc_def_var(nc, "sweep_end_ray_index", NC_INT, 1, &dim_s, &v_se));
    NC(put_text(nc, v_se, "long_name", "index_of_last_ray_in_sweep"));
    int *v_field = CPLMalloc(sizeof(int) * (size_t)nb);
    for (int b = 0; b < nb; b++) {
        const int dims[2] = {dim_t, dim_r};
        const float fill = FILL;
        int e = nc_def_var(nc, fields[b].name, NC_FLOAT, 2, dims, &v_field[b]);
        if (e == NC_NOERR)
            e = nc_put_att_float(nc, v_field[b], "_FillValue", NC_FLOAT, 1, &fill);
        if (e == NC_NOERR && fields[b].units && *fields[b].units)
            e = put_text(nc, v_field[b], "units", fields[b].units);
        if (e == NC_NOERR && fields[b].standard)
            e = put_text(nc, v_field[b], "standard_name", fields[b].standard);
        if (e == NC_NOERR)
            e = put_text(nc, v_field[b], "long_name",
                         fields[b].long_name ? fields[b].long_name : fields[b].name);
        if (e == NC_NOERR)
            e = put_text(nc, v_field[b], "coordinates", "elevation azimuth range");
        if (e != NC_NOERR) {
            CPLFree(v_field);
            NC(e);
        }
    }
    NC(nc_enddef(nc));

    {
        const int zero = 0, last = R - 1;
        const float fixed = (float)elev;
        char mode[STRLEN] = {0}, s0[STRLEN] = {0}, s1[STRLEN] = {0};
        snprintf(mode, sizeof mode, "%s", vertical ? "vertical_pointing" : "azimuth_surveillance");
        memcpy(s0, start, strlen(start));
        memcpy(s1, end, strlen(end));
        const size_t at0[2] = {0, 0}, cnt[2] = {1, STRLEN}, one = STRLEN;
        const double lat = md_number(ds, "LATITUDE", NAN), lon = md_number(ds, "LONGITUDE", NAN),
                     alt = md_number(ds, "ALTITUDE", NAN);
        NC(nc_put_var_int(nc, v_vol, &zero));
        NC(nc_put_vara_text(nc, v_tcs, at0, &one, s0));
        NC(nc_put_vara_text(nc, v_tce, at0, &one, s1));
        NC(nc_put_var_double(nc, v_lat, &lat));
        NC(nc_put_var_double(nc, v_lon, &lon));
        NC(nc_put_var_double(nc, v_alt, &alt));
        NC(nc_put_var_int(nc, v_sn, &zero));
        NC(nc_put_vara_text(nc, v_sm, at0, cnt, mode));
        NC(nc_put_var_float(nc, v_fa, &fixed));
        NC(nc_put_var_int(nc, v_ss, &zero));
        NC(nc_put_var_int(nc, v_se, &last));
    }
    {
        double *rel = CPLMalloc(sizeof(double) * (size_t)R);
        float *fr = CPLMalloc(sizeof(float) * (size_t)(R > G ? R : G));
        for (int r = 0; r < R; r++)
            rel[r] = t[r] - floor(t[0]);
        int e = nc_put_var_double(nc, v_time, rel);
        for (int g = 0; g < G; g++)
            fr[g] = (float)rng[g];
        if (e == NC_NOERR)
            e = nc_put_var_float(nc, v_range, fr);
        for (int r = 0; r < R; r++)
            fr[r] = (float)az[r];
        if (e == NC_NOERR)
            e = nc_put_var_float(nc, v_az, fr);
        for (int r = 0; r < R; r++)
            fr[r] = (float)elev;
        if (e == NC_NOERR)
            e = nc_put_var_float(nc, v_el, fr);
        CPLFree(rel);
        CPLFree(fr);
        if (e != NC_NOERR) {
            CPLFree(v_field);
            NC(e);
        }
    }
    buf = VSI_MALLOC2_VERBOSE(sizeof(float), (size_t)R * G);
    if (!buf) {
        CPLFree(v_field);
        goto fail;
    }
    for (int b = 0; b < nb; b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
        int has_nd = 0;
        const double nd = GDALGetRasterNoDataValue(band, &has_nd);
        /* the product computes inside this read (an error names its file) */
        if (GDALRasterIO(band, GF_Read, 0, 0, G, R, buf, G, R, GDT_Float32, 0, 0) != CE_None) {
            CPLFree(v_field);
            goto fail;
        }
        for (size_t i = 0; i < (size_t)R * G; i++)
            buf[i] = (has_nd && buf[i] == (float)nd) || !isfinite(buf[i])
                         ? FILL : (float)(buf[i] * fields[b].factor);
        const int e = nc_put_var_float(nc, v_field[b], buf);
        if (e != NC_NOERR) {
            CPLFree(v_field);
            NC(e);
        }
        if (progress && !progress((b + 1.0) / nb, "", progress_arg)) {
            CPLError(CE_Failure, CPLE_UserInterrupt, "CfRadial: interrupted");
            CPLFree(v_field);
            goto fail;
        }
    }
    CPLFree(v_field);
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
    VSIFree(buf);
    CPLFree(fields);
    CPLFree(t);
    CPLFree(rng);
    CPLFree(az);
    return status;
}
