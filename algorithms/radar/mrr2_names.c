/*
 * mrr2_names.c -- the names of the Metek MRR-2 products (gg_mrr2_products'
 * planes): band descriptions, units and standard names for the GDAL layer,
 * and the product list a user gives (-products, PRODUCTS=).
 *
 * MIT licence.
 */
#include "geogpu.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const names[GG_MRR2_NPROD] = {"ZE",   "W", "WIDTH", "SNR", "NOISE",
                                                  "FLAG", "Z", "PIA",   "RR",  "LWC"};
static const char *const units[GG_MRR2_NPROD] = {"dBZ", "m/s", "m/s", "dB",   "dBZ",
                                                  "",    "dBZ", "dB",  "mm/h", "g/m3"};
/* CF / CfRadial standard names where one exists (W is positive downward:
 * toward the instrument, which looks up) */
static const char *const standard[GG_MRR2_NPROD] = {
    "equivalent_reflectivity_factor", "radial_velocity_of_scatterers_toward_instrument",
    "doppler_spectrum_width", "signal_to_noise_ratio", "noise_equivalent_reflectivity_factor",
    "quality_flag", "equivalent_reflectivity_factor", "path_integrated_attenuation",
    "rainfall_rate", "liquid_water_content"};

const char *gg_mrr2_product_name(int k) { return k >= 0 && k < GG_MRR2_NPROD ? names[k] : ""; }
const char *gg_mrr2_product_units(int k) { return k >= 0 && k < GG_MRR2_NPROD ? units[k] : ""; }
const char *gg_mrr2_product_standard_name(int k)
{
    return k >= 0 && k < GG_MRR2_NPROD ? standard[k] : "";
}

int gg_mrr2_product_index(const char *name)
{
    for (int k = 0; name && k < GG_MRR2_NPROD; k++)
        if (!strcasecmp(name, names[k]))
            return k;
    return -1;
}

gg_status gg_mrr2_parse_products(const char *csv, int *list, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (!csv || !*csv) {
        for (int k = 0; k < GG_MRR2_NPROD; k++)
            list[(*n)++] = k;
        return GG_OK;
    }
    const char *p = csv;
    for (;;) {
        while (*p == ' ')
            p++;
        const size_t len = strcspn(p, ",");
        size_t t = len;
        while (t > 0 && p[t - 1] == ' ')
            t--;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(t < 31 ? t : 31), p);
        const int k = t < 31 ? gg_mrr2_product_index(name) : -1;
        if (k < 0) {
            if (err) {
                char known[256] = "";
                for (int i = 0; i < GG_MRR2_NPROD; i++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                             i ? ", " : "", names[i]);
                snprintf(err, errlen, "unknown MRR-2 product '%.*s' (known: %s)",
                         (int)(t < 64 ? t : 64), p, known);
            }
            return GG_ERR_ARGUMENT;
        }
        for (int i = 0; i < *n; i++)
            if (list[i] == k) {
                if (err)
                    snprintf(err, errlen, "product '%s' listed twice", names[k]);
                return GG_ERR_ARGUMENT;
            }
        list[(*n)++] = k;
        if (!p[len])
            break;
        p += len + 1;
    }
    return GG_OK;
}
