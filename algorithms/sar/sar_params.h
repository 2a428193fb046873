/*
 * sar_params.h -- parameter structs of the airborne-SAR product kernels,
 * shared by host code and device code.  Members are plain int/float/double,
 * doubles first, so C, CUDA and OpenCL C lay them out identically.
 */
#ifndef GG_SAR_PARAMS_H
#define GG_SAR_PARAMS_H

/* multilook modes */
#define GG_ML_REAL 0       /* mean of real values */
#define GG_ML_INTENSITY 1  /* mean of |z|^2 of complex values */
#define GG_ML_COMPLEX 2    /* mean of complex values */

typedef struct gg_multilook_params {
    int in_stride;   /* pixels (complex pixels for complex input) between rows */
    int looks_x, looks_y;
    int mode;        /* GG_ML_* */
    int has_nodata;
    float nodata;
    float dst_nodata;
    int pad_;
} gg_multilook_params;

/* Inverse map of a rotation+scaling: a destination pixel centre (X, Y)
 * samples the source at
 *   sx = src_cx + m00*(X - dst_cx) + m01*(Y - dst_cy)
 *   sy = src_cy + m10*(X - dst_cx) + m11*(Y - dst_cy)
 * in pixel-centre coordinates (pixel i has its centre at i, as OpenCV). */
/* Footprint tolerance in pixels: rotations by multiples of 90 degrees put
 * samples exactly on the edge, where rounding must not decide. */
#define GG_ROTATE_EDGE_TOL 1e-6

typedef struct gg_rotate_params {
    double m00, m01, m10, m11;
    double src_cx, src_cy, dst_cx, dst_cy;
    double max_sx, max_sy;                     /* footprint limits W-0.5, H-0.5 (+tolerance) */
    int src_w, src_h;                          /* full source raster */
    int tile_x0, tile_y0, tile_w, tile_h;      /* source tile held in the input buffer */
    int dst_x0, dst_y0;                        /* destination tile origin */
    int channels;                              /* 1 real, 2 complex */
    int has_nodata;
    float nodata, dst_nodata;
} gg_rotate_params;

typedef struct gg_cabs_params {
    int has_nodata;
    float nodata;
} gg_cabs_params;

/* F = scale * I / (rmean[row] * cmean[col]), scale = coef * global mean. */
typedef struct gg_radnorm_params {
    double scale;
    int has_nodata;
    float nodata;
    float dst_nodata;  /* float output */
    int levels;        /* quantised output 0..levels-1 */
    int dst_nodata_u8; /* quantised output nodata */
    int pad_;
} gg_radnorm_params;

#endif
