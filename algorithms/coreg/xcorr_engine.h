/*
 * xcorr_engine.h -- batched window cross-correlation on any backend: the
 * steps both offset modes share (extraction from an uploaded tile,
 * detection, FFT correlation of many windows per plan, normalisation, peak,
 * FFT oversampling, band-limited zoom of the correlation surface).
 *
 * The quality mode (ampcor-like, xcorr.c) runs gg_xc_quality; the GMTSAR
 * mode (gmtsar_xcorr.c) strings the same steps together its own way.
 * Device buffers are allocated once per engine, for a fixed batch of
 * windows, so FFT plans (cached by shape in the context) are reused from
 * batch to batch.
 *
 * MIT licence.
 */
#ifndef GG_XCORR_ENGINE_H
#define GG_XCORR_ENGINE_H

#include "../op.h"
#include "coreg_params.h"

typedef struct gg_xc_config {
    int rw, rh;          /* template (reference window) size */
    int hsx, hsy;        /* half search: the chip is (rw + 2 hsx) x (rh + 2 hsy) */
    int zw;              /* zoom surface size (samples per axis, even, >= 4) */
    int ovs;             /* oversampling of the zoom surface */
    int osf;             /* raw oversampling before the zoom correlation (2) */
    int deramp;          /* remove the mean phase ramp before oversampling */
    int stat_half;       /* SNR window half size */
    float min_valid;     /* least valid fraction of template and chip */
    float gross_x, gross_y;
    int has_nodata;
    float nodata;
    float dst_nodata;
} gg_xc_config;

typedef struct gg_xc_engine gg_xc_engine;

/* Device bytes one window of a batch needs (for batch sizing). */
double gg_xc_bytes_per_window(const gg_xc_config *cfg);
/* A batch size that fits a fraction of free device memory, at most want. */
int gg_xc_pick_batch(gg_context *ctx, const gg_xc_config *cfg, int want);

gg_status gg_xc_engine_new(gg_context *ctx, const gg_xc_config *cfg, int batch,
                           gg_xc_engine **out);
void gg_xc_engine_free(gg_xc_engine *e);

/* Quality mode for n <= batch windows.  tile: two planes (primary, then
 * secondary) of tile_w x tile_h CFloat32 on the device; pos: 4 ints per
 * window (template x, y, chip x, y in tile coordinates); out: n *
 * GG_XC_NBANDS floats (down, across, snr, cov_dd, cov_aa, cov_da, peak,
 * peak_ratio). */
gg_status gg_xc_quality(gg_xc_engine *e, gg_buffer *tile, int tile_w, int tile_h, const int *pos,
                        int n, float *out);

/* Steps shared with the GMTSAR mode --------------------------------- */

/* Launches kernel k with up to 5 buffers (NULL-terminated list). */
gg_status gg_xc_launch(gg_context *ctx, int k, int nx, int ny, const gg_xc_params *p,
                       gg_buffer *b0, gg_buffer *b1, gg_buffer *b2, gg_buffer *b3, gg_buffer *b4);

/* Smallest n' >= n with no prime factor above 7 (FFT friendly). */
int gg_xc_fast_size(int n);
/* Twiddle table tw[f][m] = exp(+2 pi i f' m / (zw ovs)) (f' the signed
 * frequency of bin f; an even zw's Nyquist bin is split: cos) -> device. */
gg_status gg_xc_twiddles(gg_context *ctx, int zw, int ovs, gg_buffer **out);

#endif
