/*
 * coreg_params.h -- parameter struct and per-window state layout of the
 * coregistration kernels (coreg_kernels.h), shared by host and device code.
 * Members are plain int/float, so C, CUDA and OpenCL C lay them out
 * identically.
 *
 * One struct serves every step of the batched correlation engine
 * (xcorr_engine.c); each kernel reads only the members its comment names.
 *
 * MIT licence.
 */
#ifndef GG_COREG_PARAMS_H
#define GG_COREG_PARAMS_H

/* Per-window state: GG_XC_WS floats per window in one device buffer.
 * Integers (peak positions) are stored as floats (exact below 2^24). */
#define GG_XC_WS 32
#define GG_XC_VALID 0      /* 1: window usable so far, 0: nodata */
#define GG_XC_RMEAN 1      /* mean detected amplitude of the template */
#define GG_XC_SMEAN 2      /* mean detected amplitude of the search chip */
#define GG_XC_RSS 3        /* sum of squares of the demeaned template */
#define GG_XC_PY 4         /* integer peak (lag index) of the raw surface, y */
#define GG_XC_PX 5
#define GG_XC_PV 6         /* raw peak value */
#define GG_XC_SNR 7
#define GG_XC_COV 8        /* 8, 9, 10: cov_yy (down), cov_xx (across), cov_yx */
#define GG_XC_STY 11       /* zoom sub-chip start (lag index) */
#define GG_XC_STX 12
#define GG_XC_RAMP 13      /* 13..16: phase steps (y, x) of the template, then of the chip */
#define GG_XC_ZPY 17       /* integer peak of the zoom surface */
#define GG_XC_ZPX 18
#define GG_XC_OUT_Y 19     /* final offsets (secondary = primary + offset) */
#define GG_XC_OUT_X 20
#define GG_XC_OUT_V 21     /* peak value of the interpolated surface */
#define GG_XC_NCC 22       /* gmtsar: time-domain NCC (0..100) at the integer peak */
#define GG_XC_PRATIO 23    /* raw peak over the highest other local maximum of the surface */

/* Quality-mode outputs, one float per band per window. */
#define GG_XC_NBANDS 8     /* down, across, snr, cov_dd, cov_aa, cov_da, peak, peak_ratio */
#define GG_XC_PRATIO_MAX 100.0f /* peak_ratio when no other local maximum is above 0 */

typedef struct gg_xc_params {
    int nwin;              /* windows in the batch */
    int tile_w, tile_h;    /* one plane of the uploaded tile (plane 1 follows plane 0) */
    int ref_plane;         /* tile plane of the template (0 primary, 1 secondary) */
    int rw, rh;            /* template size */
    int sw, sh;            /* search chip size */
    int pw, ph;            /* correlation FFT plane (>= sw, sh) */
    int lx, ly;            /* lags of the correlation surface (sw-rw+1, sh-rh+1) */
    int ux, uy;            /* lags searched for the peak (<= lx, ly) */
    int bw, bh;            /* a batch image (ramp, deramp, pad input, zoom chip) */
    int ow, oh;            /* pad output */
    int hz;                /* half zoom window in raw pixels (0: no zoom stage) */
    int zw;                /* zoom surface size (samples per axis) */
    int ovs;               /* oversampling of the zoom surface */
    int nreg;              /* interpolated points per axis searched */
    int stat_half;         /* SNR window half size (0: no statistics) */
    int stage;             /* kernel-specific switch (see each kernel) */
    int normalise;         /* norm: 1 NCC, 0 raw correlation */
    int use_abs;           /* colmax, dft: 1 uses |c| (GMTSAR), 0 c */
    int slot;              /* ramp: first state slot written */
    int deramp;            /* ramp: 0 writes zero steps */
    int has_nodata;
    float nodata;
    float min_valid;       /* stats: least valid fraction of template and chip */
    float dst_nodata;
    float scale;           /* pad: factor applied to the spectrum */
    float hsx, hsy;        /* half search (raw px) */
    float gross_x, gross_y;/* gross offset added to the result */
    float osf;             /* raw oversampling factor of the zoom stage */
    float power;           /* dft: exponent applied to the surface (1 or 0.25) */
    int tw, th;            /* pack/tcorr: template inside ref at (tox, toy) (tw 0: whole ref) */
    int tox, toy;
    int src_h;             /* extract16: lines of the master SLC (rows outside are invalid);
                            * tile_w: its ring's line length (samples) */
    int zero_invalid;      /* colstats: 1 turns invalid samples into 0 in place (for FFTs) */
    int a_tile_w, a_src_h; /* extract16: the aligned SLC's line length and lines (its own
                            * num_rng_bins / num_valid_az, GMTSAR's s_nx / s_ny) */
    int zero_nodata;       /* extract16: 1 makes 0+0i samples invalid (zero fill) */
} gg_xc_params;

/* Column partials of the two-level reductions (both modes' statistics,
 * the GMTSAR mode's peak and NCC): doubles per column of each window. */
#define GG_XC_PART_STATS 5 /* template n, mean, M2 (Welford); chip n, mean */
#define GG_XC_PART_TCORR 3 /* sum ab, aa, bb */
#define GG_XC_PART_MAX 2   /* best value, its row */
#define GG_XC_PART_MAXN 5  /* the largest of the three */


/* resample (resample.c, gg_k_rs_resample): the secondary sampled at
 * (X + across(X, Y), Y + down(X, Y)) for each output pixel (X, Y); the
 * polynomials in pixel monomials 1, x, y, x^2, xy, y^2, x^3, x^2y, xy^2, y^3,
 * or (gg_k_rs_resample_grid) bilinear in a dense grid of offsets.  A
 * complex secondary is interpolated carrier-aware (gg_rs_sample).
 * Doubles first so that every compiler lays the struct out alike. */
#define GG_RS_NEAREST 0
#define GG_RS_BILINEAR 1
#define GG_RS_BICUBIC 2
#define GG_RS_SINC4 3   /* GMTSAR resamp's 4x4 sinc, normalised by its weight sum */
#define GG_RS_SINC8 4   /* 8x8 Hann-windowed sinc, normalised */
typedef struct gg_rs_params {
    double cd[10], ca[10];  /* down, across coefficients */
    double gx0, gy0, gdx, gdy; /* grid= : node (i, j) at primary pixel (gx0 + i gdx, gy0 + j gdy) */
    double car_y, car_x;    /* carrier=: the secondary's carrier, cycles per line (azimuth)
                             * and per pixel (range); 0, 0: none (complex input only) */
    int ncoef, kind;
    int channels;           /* 2 complex, 1 real */
    int src_w, src_h;       /* the whole secondary */
    int tile_x0, tile_y0, tile_w, tile_h;
    int dst_x0, dst_y0;
    int has_nodata;
    float nodata, dst_nodata;
    int gNx, gNy;           /* grid= : nodes of the whole grid */
    int gi0, gj0, gnx, gny; /* grid= : the sub-grid uploaded for this tile */
    int pad_, pad2_;
} gg_rs_params;

#endif
