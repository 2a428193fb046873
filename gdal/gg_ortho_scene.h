/*
 * gg_ortho_scene.h -- the GDAL side of RPC orthorectification, shared by
 * gdal_ortho (pipelined, batches) and the GG driver's lazy GG:ortho:
 * datasets: RPCs from wherever GDAL finds them, the output grid gdalwarp
 * would choose, the DEM window and its checks, the coordinate grid of a
 * block of output rows (PROJ) and its source window.  libgeogpu's
 * gg_ortho_* does the per-pixel work on the device.
 *
 * Errors: functions returning int return 0 on success and 1 after putting
 * one line naming the problem into sc->err (the first error is kept).
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_SCENE_H
#define GG_ORTHO_SCENE_H

#include "gdal.h"
#include "geogpu.h"
#include "ogr_srs_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most nodata values a -srcnodata / -dstnodata list holds. */
#define GGO_MAX_NODATA 256

/* What the user asked for: gdal_ortho's flags, GG:ortho:'s keys. */
typedef struct ggo_options {
    const char *dem, *dem_srs, *t_srs, *ot;
    int dem_interp, resampling;   /* gg_ortho_method */
    int has_dem_missing;
    double dem_missing, rpc_height;
    int dem_nan_missing;          /* NaN heights are the DEM's nodata */
    int has_tr, has_te, has_ts;
    double tr[2], te[4];
    int ts[2];
    int has_srcnodata, has_dstnodata;
    double srcnodata, dstnodata;  /* the first value of each list */
    /* gdalwarp's lists, one value per band ("-srcnodata '1 2 3'"); bands
     * past the list take its last value */
    int n_srcnodata, n_dstnodata;
    double srcnodata_v[GGO_MAX_NODATA], dstnodata_v[GGO_MAX_NODATA];
    int step;                     /* grid step; 0: automatic */
    int quiet, verbose;
} ggo_options;

/* One scene, set up by ggo_scene_open. */
typedef struct ggo_scene {
    const ggo_options *o;
    const char *src_name, *dst_name;
    GDALDatasetH src, dem;
    gg_ortho_rpc rpc;
    int nbands, width, height;
    GDALDataType src_gdt, dst_gdt;
    gg_type src_t, dst_t;
    OGRSpatialReferenceH dst_srs, wgs84, dem_srs;
    OGRCoordinateTransformationH to_ll, to_dem; /* NULL: identity */
    double dem_inv_gt[6];
    int apply_vshift;
    double *dem_buf;
    gg_ortho_dem demw;
    gg_ortho_options oo;          /* what the device session gets */
    double gt[6];                 /* output grid */
    int out_w, out_h;
    int step;                     /* coordinate grid step (output px) */
    int has_srcnodata, has_dstnodata;
    double srcnodata, dstnodata;  /* band 1's */
    /* per band (nbands each): source nodata (gdalwarp's -123456.789 for a
     * band without one when another has one) and output nodata; NULL
     * without nodata.  nd_unified: gdalwarp's UNIFIED_SRC_NODATA=YES */
    double *src_nd, *dst_nd;
    int nd_unified;
    /* the output file keeps other nodata values than dst_nd (a GeoTIFF
     * keeps one for all bands): gdalwarp leaves the pixels outside the
     * window it warps to the file's fill, its nodata value; NULL: none */
    double *outside_nd;
    int win_x0, win_y0, win_x1, win_y1;
    /* resampling kernel stretch when downsampling (GDAL's XSCALE/YSCALE,
     * see ggo_scene_open); 1 = none */
    double xscale, yscale;
    char err[1024];
} ggo_scene;

/* A block of output rows: its coordinate grid, source window and pixels. */
typedef struct ggo_block {
    int y0, rows;
    int gnx, gny;
    double *nodes;
    int sx0, sy0, sw, sh;         /* source window */
    void *src;                    /* nbands planes */
    void *dst;                    /* nbands planes */
    int failed;
} ggo_block;

extern const char *const ggo_method_names[3];

/* "near" (or "nearest"), "bilinear", "cubic" -> gg_ortho_method; 0 if unknown. */
int ggo_parse_method(const char *s, int *out);

/* The options, from their one description (gg_ortho_options.c, whose
 * table also makes gdal_ortho's flags): */
/* gdal_ortho's defaults: -r near, -dem_interp bilinear (GDAL's). */
void ggo_options_default(ggo_options *o);
/* Sets option key (GG:ortho: / .ggvrt form: tr=xres,yres, te=xmin,ymin,
 * xmax,ymax, ts=w,h, r=cubic, srcnodata=1,2,3 ...) from value, checked
 * against the table as gdal_ortho's flags are; strings are kept by
 * pointer (value must outlive o).  0, or 1 with a message in err. */
int ggo_set_option(ggo_options *o, const char *key, const char *value, char *err,
                   size_t errlen);
/* Whether key is a GG:ortho: option. */
int ggo_is_option(const char *key);
/* "dem, dem_interp, ..." (the table's keys) for error messages. */
const char *ggo_option_names(void);

/* Opens src_name and sets everything up without a device: RPCs, types,
 * CRSs, DEM, nodata, coverage, output grid, DEM window, footprint check,
 * grid step, kernel stretch. */
int ggo_scene_open(ggo_scene *sc, const ggo_options *o, const char *src_name);
void ggo_scene_close(ggo_scene *sc);

/* Names the calling thread (as top and /proc/<pid>/task/<tid>/comm show
 * it: "gg-read", "gg-scene", ...); Linux only, at most 15 characters. */
void ggo_name_thread(const char *name);
GDALDataType ggo_to_gdal_type(gg_type t);
/* The coordinate grid of a block (b->y0, b->rows set); 0 out of memory. */
int ggo_block_grid(const ggo_scene *sc, ggo_block *b, double lon_ref);
/* The block's source window, with margin source px around it. */
void ggo_block_window(const ggo_scene *sc, ggo_block *b, int margin);
/* Margin of a block's first source window. */
int ggo_first_margin(const ggo_scene *sc);
/* Reads the block's source window (all bands) from ds; 0 on failure. */
int ggo_read_window(const ggo_scene *sc, GDALDatasetH ds, ggo_block *b);
/* Device part of a block (grid and window already there) into b->dst,
 * nbands planes of out_w x rows: runs the session, widening the source
 * window (read from ds) when the kernel reports a tap outside it.
 * *widened (may be NULL) counts the retries. */
int ggo_run_block(ggo_scene *sc, gg_ortho_session *sess, gg_context *ctx, GDALDatasetH ds,
                  ggo_block *b, int *widened);
/* A whole block: grid, window, read, device, into dst (nbands planes of
 * out_w x b->rows, dst_t); frees its own buffers. */
int ggo_compute_block(ggo_scene *sc, gg_ortho_session *sess, gg_context *ctx, int y0, int rows,
                      void *dst);
/* The nodata values the output file ended up with (nbands): where they
 * differ from dst_nd, ggo_fill_outside gives the pixels outside gdalwarp's
 * warped window the file's value, as gdalwarp leaves them: the window
 * widened to the file's blocks (block_w x block_h) -- a block gdalwarp
 * writes in part is filled with the band's own value.  0, or 1. */
int ggo_set_file_nodata(ggo_scene *sc, const double *file_nd, int block_w, int block_h);
/* Applies that to a block of rows y0 .. y0+rows-1 (nbands planes). */
void ggo_fill_outside(const ggo_scene *sc, int y0, int rows, void *dst);
/* The kernel scales gdalwarp uses when it warps an output window (wx0,
 * wy0, ww x wh output pixels) in one chunk (GDALWarpKernel::PerformWarp):
 * the window's size over its source window's, which ComputeSourceWindow
 * takes from 21 points along each edge (a 21 x 21 grid when an edge point
 * fails) through to_source (output -> source position, 0 where it fails),
 * clipped to the src_w x src_h raster; a reciprocal within 0.05 of an
 * integer n becomes 1 / n.  1 and 1 when the window has no source extent;
 * raw_w, raw_h: the source window's size (for -v). */
void ggo_chunk_scales(int (*to_source)(void *arg, double px, double py, double *x, double *y),
                      void *arg, int wx0, int wy0, int ww, int wh, int src_w, int src_h,
                      double *xscale, double *yscale, double *raw_w, double *raw_h);
/* Creates the device session of the scene on ctx. */
int ggo_session_create(ggo_scene *sc, gg_context *ctx, gg_ortho_session **out);

#ifdef __cplusplus
}
#endif
#endif
