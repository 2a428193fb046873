/*
 * ptsel_params.h -- parameter structs of the PtSel kernels (persistent
 * scatterer selection by maximum arc temporal coherence), shared by host
 * code and device code.  Members are plain int/float/double, doubles first,
 * so C, CUDA and OpenCL C lay them out identically.
 *
 * MIT licence.
 */
#ifndef GG_PTSEL_PARAMS_H
#define GG_PTSEL_PARAMS_H

/* Normalisation u = z/|z| of every sample of an n-band stack, in place. */
typedef struct gg_ptsel_norm_params {
    int nbands;      /* epochs (planes) */
    int has_nodata;  /* real part == nodata marks an invalid sample */
    float nodata;
    int pad_;
} gg_ptsel_norm_params;

/* The arc passes (ptsel_kernels.h).  Coordinates are in the source plane
 * (the source window held on the device); the tau window T is where
 * tau_max is wanted, the region A (T grown by r/2 up, left and right,
 * clipped to the plane) holds the arc centres of pass 1. */
typedef struct gg_ptsel_params {
    int src_w, src_h;    /* plane size */
    int t_x0, t_y0, t_w, t_h; /* tau window */
    int a_x0, a_y0, a_w, a_h; /* arc-centre region */
    int dy0, dy1;        /* rows of the forward half window in this chunk */
    int radius;          /* window radius r/2 (not "half": an OpenCL type) */
    int nbands;
    int excl_d2;         /* neighbours with dx^2+dy^2 < excl_d2 are skipped (>= 1) */
    int slc;             /* 1: SLC stack (pairs k<l); 0: single-reference ifgs */
    int offsets;         /* write the best_dx, best_dy planes */
    int mask;            /* write the Byte ps_mask */
    float threshold;     /* ps_mask = tau_max >= threshold */
    float dst_nodata;    /* float planes */
    int mask_nodata;     /* Byte plane */
    int weights;         /* also write the filter's weight plane (tau_max, 0 for nodata) */
} gg_ptsel_params;

/* Coherence-weighted filter, both passes (ptsel_kernels.h): the row sums
 * run over nx x (w_h * bands of this launch), the quotient over
 * nx x (ny * bands of this launch); grid row Y is local band Y / w_h or
 * Y / ny, i.e. stack band band0 + that. */
typedef struct gg_ptsel_filter_params {
    int src_w, src_h;    /* stack plane size (the source window on the device) */
    int w_w, w_h;        /* weight plane size (the tau window) */
    int w_plane;         /* the weights are plane w_plane (w_w x w_h floats) of their buffer */
    int w_off_x, w_off_y; /* weight plane (0,0) in stack plane coordinates */
    int off_x, off_y;    /* output pixel (0,0) in weight plane coordinates */
    int radius;          /* window radius r/2 */
    int ny;              /* output rows */
    int band0;           /* first band of this launch */
    float nodata;        /* written where no valid weighted neighbour exists (NaN) */
    int pad_;
} gg_ptsel_filter_params;

#endif
