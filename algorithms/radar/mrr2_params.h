/*
 * mrr2_params.h -- parameters of the Metek MRR-2 spectral kernel
 * (mrr2_kernels.h), shared by host and device code.  Plain int/float
 * members only, so C, CUDA and OpenCL C lay them out identically.
 *
 * MIT licence.
 */
#ifndef GG_MRR2_PARAMS_H
#define GG_MRR2_PARAMS_H

#define GG_MRR2_MAX_BINS 128   /* spectral lines a gate may have (MRR-2: 64) */

/* One item per (gate, output row): the records of the row averaged
 * (weighted by their averaged-spectra counts), Hildebrand-Sekhon noise with
 * the summed count, the peak around the largest line, and the products. */
typedef struct gg_mrr2_params {
    int n_bins, n_gates, n_rows;
    int min_width;     /* lines above the noise limit a peak needs */
    float dv;          /* fall velocity of one line (m/s) */
    float ze_db;       /* 10 log10(1e18 lambda^4 / (pi^5 |K|^2)): eta (1/m) -> dBZ */
    float nodata;
    float dh;          /* gate spacing (m) */
    float pia_max_db;  /* attenuation correction up to this PIA (dB); beyond: nodata */
} gg_mrr2_params;

/* Per gate and spectral line, the drop-size table of the DSD kernel
 * (host-computed: Mie needs complex series): */
#define GG_MRR2_TAB_D 0      /* drop diameter (mm) of the line's fall velocity; 0: no rain drop */
#define GG_MRR2_TAB_DD 1     /* diameter interval of the line (mm) */
#define GG_MRR2_TAB_SB 2     /* backscattering cross section (m^2) */
#define GG_MRR2_TAB_SE 3     /* extinction cross section (m^2) */
#define GG_MRR2_TAB_N 4

#endif
