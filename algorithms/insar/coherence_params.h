/*
 * coherence_params.h -- parameter struct of the interferogram + boxcar
 * coherence kernel, shared by host code and device code.  Members are plain
 * int/float (no doubles), so C, CUDA and OpenCL C lay them out identically.
 *
 * MIT licence.
 */
#ifndef GG_COHERENCE_PARAMS_H
#define GG_COHERENCE_PARAMS_H

typedef struct gg_coherence_params {
    int img_w, img_h;          /* full input raster (window clipping) */
    int src_x0, src_y0;        /* raster position of the uploaded window */
    int src_w, src_h;          /* its size; band 2's plane follows band 1's */
    int dst_x0, dst_y0;        /* raster position of the output tile */
    int looks_x, looks_y;      /* look block of one output pixel */
    int half_x, half_y;        /* coherence window half sizes (w/2, h/2) */
    /* first output plane of each product, in tile-sized float planes
     * (the interferogram takes two: interleaved re, im); -1: not wanted */
    int plane_ifg, plane_coh, plane_amp;
    int has_nodata;
    float nodata;
    float dst_nodata;
} gg_coherence_params;

#endif
