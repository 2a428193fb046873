/*
 * carrier.c -- the carrier (spectral centre) of a complex SLC, for the
 * carrier-aware resampling (resample op, carrier=): the mean phase step of
 * the lag-1 correlation along lines (azimuth) and along pixels (range),
 * accumulated over blocks of rows on the host in float64.  The estimator
 * is the offset step's deramp estimator (gg_k_xc_ramp), the same body
 * (coreg_device.h), here over the whole image instead of one window.
 *
 * MIT licence.
 */
#include "geogpu.h"

#include "../../gpu/kernel_dialect.h"
#include "coreg_params.h"
#include "coreg_device.h"

#include <math.h>
#include <string.h>

void gg_coreg_carrier_init(gg_coreg_carrier *c)
{
    memset(c, 0, sizeof *c);
}

void gg_coreg_carrier_add(gg_coreg_carrier *c, const float *cpx, int w, int h, int has_nodata,
                          float nodata)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const float *a = cpx + 2 * ((size_t)y * w + x);
            if (!gg_cvalid(a[0], a[1], has_nodata, nodata))
                continue;
            if (y + 1 < h) {
                const float *b = a + 2 * (size_t)w;
                if (gg_cvalid(b[0], b[1], has_nodata, nodata))
                    gg_xc_lag1_add(c->s[0], a[0], a[1], b[0], b[1]);
            }
            if (x + 1 < w && gg_cvalid(a[2], a[3], has_nodata, nodata))
                gg_xc_lag1_add(c->s[1], a[0], a[1], a[2], a[3]);
        }
}

void gg_coreg_carrier_result(const gg_coreg_carrier *c, double *fy, double *fx)
{
    /* the lag-1 phase is arg sum a conj(b) = minus the step per sample */
    const double twopi = 6.283185307179586476925;
    *fy = -gg_xc_lag1_phase(c->s[0]) / twopi;
    *fx = -gg_xc_lag1_phase(c->s[1]) / twopi;
    *fy += 0.0; /* no -0 in printed values */
    *fx += 0.0;
}
