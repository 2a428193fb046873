/*
 * fmcw_timing.h -- per-stage timing of the FMCW processor (fmcw.c), for
 * bench_fmcw; not part of the public API (reached through the internal
 * static library geogpu_internal).
 *
 * MIT licence.
 */
#ifndef GG_FMCW_TIMING_H
#define GG_FMCW_TIMING_H

#include "geogpu.h"

/* Per-stage device times of the last push, in seconds (synchronising after
 * every stage when timing is on; off by default). */
typedef struct gg_fmcw_timing {
    double upload, convert, range_fft, corner_turn, doppler_fft, spectra, moments,
        download;
    /* parts of `moments`: the sort, the HS noise (chunk sums, scan,
     * combine), the peak block and the products */
    double sort, noise, block;
} gg_fmcw_timing;
void gg_fmcw_set_timing(gg_fmcw *f, int on);
void gg_fmcw_get_timing(const gg_fmcw *f, gg_fmcw_timing *t);

#endif
