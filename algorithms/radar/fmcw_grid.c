/*
 * fmcw_grid.c -- PPI gridding of polar products onto an azimuthal-
 * equidistant grid centred on the radar, and the 4/3-Earth beam model
 * (Doviak & Zrnic eq. 2.28).  Host code: one nearest-gate lookup per
 * cell, cheap next to the chain.
 *
 * MIT licence.
 */
#include "geogpu.h"

#include <math.h>
#include <stddef.h>

#define KE_A (4.0 / 3.0 * 6371000.0)   /* effective Earth radius */

void gg_fmcw_beam(double r, double elevation_deg, double *ground_m, double *height_m)
{
    const double th = elevation_deg * M_PI / 180.0;
    const double h = sqrt(r * r + KE_A * KE_A + 2.0 * r * KE_A * sin(th)) - KE_A;
    if (height_m)
        *height_m = h;
    if (ground_m)
        *ground_m = KE_A * asin(r * cos(th) / (KE_A + h));
}

/* Slant range of the beam at ground distance s: the triangle Earth
 * centre - radar - gate has the angle s/ke_a at the centre and 90 deg +
 * elevation at the radar, so r = ke_a sin(g) / cos(g + elevation). */
static double slant_range(double s, double th)
{
    const double g = s / KE_A;
    const double c = cos(g + th);
    return c > 1e-9 ? KE_A * sin(g) / c : INFINITY;
}

gg_status gg_fmcw_grid_ppi(const gg_fmcw_params *p, const float *polar, int n_az,
                           const double *az_deg, double beam_width_deg, double elevation_deg,
                           double res_m, double max_range_m, int size, float *grid)
{
    if (!p || !polar || !az_deg || !grid || n_az < 1 || size < 1 || !(res_m > 0) ||
        !(max_range_m > 0) || !(beam_width_deg > 0) || !(elevation_deg > -10 && elevation_deg < 90))
        return GG_ERR_ARGUMENT;
    const double th = elevation_deg * M_PI / 180.0, dr = gg_fmcw_range_resolution(p);
    const int G = p->n_gates;
    const double half = 0.5 * beam_width_deg + 1e-9;
#pragma omp parallel for schedule(static)
    for (int j = 0; j < size; j++) {
        const double y = (0.5 * size - j - 0.5) * res_m;   /* north up, row 0 north */
        for (int i = 0; i < size; i++) {
            const double x = (i + 0.5 - 0.5 * size) * res_m;
            float v = GG_FMCW_NODATA;
            const double s = hypot(x, y);
            if (s <= max_range_m) {
                double az = atan2(x, y) * 180.0 / M_PI;
                if (az < 0)
                    az += 360.0;
                int best = -1;
                double bd = 1e300;
                for (int a = 0; a < n_az; a++) {
                    double d = fabs(fmod(az - az_deg[a] + 540.0, 360.0) - 180.0);
                    if (d < bd) {
                        bd = d;
                        best = a;
                    }
                }
                const long k = lround((slant_range(s, th) - p->range_offset_m) / dr);
                if (best >= 0 && bd <= half && k >= 0 && k < G)
                    v = polar[(size_t)best * G + (size_t)k];
            }
            grid[(size_t)j * size + i] = v;
        }
    }
    return GG_OK;
}
