/*
 * fmcw_params.h -- parameter structs of the FMCW weather-radar kernels
 * (fmcw_kernels.h), shared by host and device code.  Plain int/float
 * members only, so C, CUDA and OpenCL C lay them out identically.
 *
 * MIT licence.
 */
#ifndef GG_FMCW_PARAMS_H
#define GG_FMCW_PARAMS_H

/* Bad-sample census of the raw int16 planes (one item per lane). */
typedef struct gg_fmcw_check_params {
    int plane;       /* samples per channel plane (n_sweeps * n_samples) */
    int lanes;       /* items per channel; item x counts samples x, x+lanes, ... */
} gg_fmcw_check_params;

/* int16 I/Q -> windowed, scaled complex; one item per sample. */
typedef struct gg_fmcw_convert_params {
    int n_samples, n_sweeps;
    float win_a, win_b;   /* window a - 2b cos(2 pi n / N) */
    float scale;          /* 1 / sqrt(N * sum w^2) */
} gg_fmcw_convert_params;

/* Corner turn [bc][sweep][bin] -> [bc][gate][sweep] for gates < n_gates. */
typedef struct gg_fmcw_corner_params {
    int n_samples, n_sweeps, n_gates;
} gg_fmcw_corner_params;

/* Doppler spectra -> power spectra of HH, VV, HV and the HH.VV* spectrum,
 * with clutter removal and the Doppler window as a spectral convolution. */
typedef struct gg_fmcw_spectra_params {
    int n_sweeps, n_gates;
    int clutter_mean;     /* zero Doppler bin 0 */
    int notch_bins;       /* also zero 0 < |j| <= notch_bins */
    float win_a, win_b;   /* Doppler window taps a, -b, -b */
    float scale;          /* power scale 1 / (M * sum w^2) */
    /* output bins notch_lo..notch_hi (velocity order; lo > hi: none) are
     * written as the straight line between bins lo-1 and hi+1 (see
     * gg_fmcw_moments_params), so every later pass reads plain arrays */
    int notch_lo, notch_hi;
} gg_fmcw_spectra_params;

/* Ascending order of every spectrum of n_bins (ties by index), for the
 * Hildebrand-Sekhon scan, by a bottom-up merge sort in per-element passes:
 * pass 0 ranks every bin inside its run of `width` bins; each later pass
 * merges runs of `width` pairwise (every bin binary-searches its place in
 * the partner run).  One item per bin. */
typedef struct gg_fmcw_sort_params {
    int n_bins;
    int width;
} gg_fmcw_sort_params;

/* Hildebrand-Sekhon noise and spectral moments, one item per gate.
 * mode 0 (chain): nchan 3 power spectra [row][3][gate][bin] + the HH.VV*
 *   spectrum [row][gate][bin] -> the GG_FMCW_NPRODUCTS planes per row;
 * mode 1 (spectral stage): one power spectrum [row][gate][bin] ->
 *   NOISE, POWER, SNR, VEL, WIDTH planes per row. */
typedef struct gg_fmcw_moments_params {
    int mode;
    int n_bins, n_gates;
    int n_avg;
    float v0, dv;             /* velocity of bin i: v0 + i dv */
    float width_corr;         /* window widening, in bins^2 */
    float min_snr_db;
    float radar_constant_db;  /* dBZ = 10 lg P + C + 20 lg r_km */
    float zdr_offset_db, ldr_offset_db;
    float range0_m, dr_m;     /* range of gate k: range0 + k dr */
    float nodata;
    /* bins lo..hi (inclusive, velocity order) hold the clutter filter's
     * zeros (and their spread by the Doppler window); the moments read them
     * as the straight line between bins lo-1 and hi+1 so that weather
     * spanning 0 m/s keeps its power and one block.  lo > hi: none. */
    int notch_lo, notch_hi;
    /* the per-spectrum reductions run as n_chunks items of `chunk` bins
     * each (parts, HS scan, block ends and sums), then one item per gate
     * combines them: no work item walks a whole spectrum */
    int chunk, n_chunks;
} gg_fmcw_moments_params;

#endif
