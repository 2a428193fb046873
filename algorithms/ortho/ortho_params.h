/*
 * ortho_params.h -- parameter struct of the RPC orthorectification kernel,
 * shared by host code and device code.  Doubles first, then ints, and an
 * even number of ints, so C, CUDA and OpenCL C lay the struct out alike
 * (the OpenCL backend checks the size against the host's).
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_PARAMS_H
#define GG_ORTHO_PARAMS_H

/* Source / destination sample types of the kernel: gg_type's values
 * (geogpu.h, which device code does not include; ortho.c checks them). */
#define GG_ORTHO_T_FLOAT32 1
#define GG_ORTHO_T_BYTE 3
#define GG_ORTHO_T_UINT16 4
#define GG_ORTHO_T_INT16 5

/* Resampling of the source image and interpolation of the DEM (the DEM
 * takes the first three). */
#define GG_ORTHO_NEAR 0
#define GG_ORTHO_BILINEAR 1
#define GG_ORTHO_CUBIC 2
#define GG_ORTHO_CUBICSPLINE 3
#define GG_ORTHO_LANCZOS 4
#define GG_ORTHO_AVERAGE 5

/* Geometry of a session (the `geometry` field): the grid holds ground
 * coordinates for the RPC model, without or with a DEM, or the source
 * pixel and line themselves (gdal_warp: any transformer, run on the host
 * at the nodes). */
#define GG_ORTHO_GEOM_RPC 0
#define GG_ORTHO_GEOM_RPC_DEM 1
#define GG_ORTHO_GEOM_SOURCE 2

/* Planes of the coordinate grid (see ortho_kernels.h): RPC geometries,
 * source-coordinate geometry. */
#define GG_ORTHO_GRID_PLANES 5
#define GG_ORTHO_SOURCE_PLANES 2

/* Layout of the coefficient buffer: the 20 coefficients of the line
 * numerator, line denominator, sample numerator, sample denominator, in
 * RPC00B term order; then per band its source nodata value and its output
 * fill (nodata) value. */
#define GG_ORTHO_NCOEF 80

typedef struct gg_ortho_params {
    /* RPC normalisation, applied in float64 */
    double lon_off, lon_scale, lat_off, lat_scale, h_off, h_scale;
    double line_off, line_scale, samp_off, samp_scale;
    /* height = vshift + rpc_height + dem * height_scale (GDAL's order) */
    double rpc_height, height_scale, dem_missing, dem_nodata;
    /* the source nodata value and the value of output pixels that get no
     * sample are per band, in the coefficient buffer after the RPC
     * coefficients: coef[GG_ORTHO_NCOEF + 2 * band] and [... + 1].  (The
     * struct stays at 256 bytes: on the CPU, GCC handles a larger by-value
     * struct worse: the kernel ran ~1.5x slower at 264 bytes.) */
    /* resampling kernel stretch when downsampling (GDAL's XSCALE/YSCALE,
     * min(scale, 1)); used when x_radius > 0 */
    double xscale, yscale;
    /* block of output pixels: gg_nx x gg_ny; grid nodes */
    int grid_nx, grid_ny, grid_step;
    /* rows of the source buffer before the window's first row of this
     * band: band * win_h when the buffer holds the window's bands; band *
     * img_h + win_y0 when it holds the whole image (all bands) resident on
     * the device */
    int win_dy;
    /* source raster and the window of it that is on the device (rows of
     * win_w samples in the buffer) */
    int img_w, img_h, win_x0, win_y0, win_w, win_h;
    /* GG_ORTHO_GEOM_*; then the DEM raster and the window of it on the
     * device (GG_ORTHO_GEOM_RPC: heights are rpc_height only) */
    int geometry, dem_w, dem_h, dem_x0, dem_y0, dem_win_w, dem_win_h;
    int dem_interp, has_dem_missing, has_dem_nodata;
    int resampling, src_type, dst_type, has_src_nodata;
    /* taps of the stretched kernel: 1 - radius .. radius around the pixel
     * (-radius .. radius for lanczos; GDAL's nXRadius = ceil(filter
     * radius / scale)); 0: the 4-sample formulas (bilinear and cubic at
     * scales >= 0.95).  Average: how far (source pixels) the corners of an
     * output pixel may lie outside the source for it to get a value,
     * gdalwarp's 2 max(1, ceil(1 / scale)) */
    int x_radius, y_radius;
    /* 1: the fill value is the output's nodata and resampled integer values must
     * not land on it (see gg_ortho_store_valid); nd_gate 1: a nodata source
     * pixel under the position gives no value (GDAL's unified mask) */
    int avoid_nodata, nd_gate;
    /* several bands (gdalwarp's unified source mask): nd_bands bands lie
     * band_rows buffer rows apart, this launch's band is `band`, and their
     * nodata values follow the RPC coefficients (see above).
     * The containing-pixel rule (nd_gate) drops a pixel only where every
     * band is nodata; nd_unified 1 (UNIFIED_SRC_NODATA=YES, gdalwarp
     * -srcnodata over several bands): a tap is valid where any band is,
     * 0 (its default, PARTIAL): where this band is.  nd_bands 1: the
     * single-band rule, no other band is read. */
    int nd_bands, band, band_rows, nd_unified;
} gg_ortho_params;

#endif
