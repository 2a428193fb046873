/*
 * gg_warp_scene.h -- the warp engine of gdal_warp and GG:warp: (the GDAL
 * layer's internal header) the sources, GDAL's transformer with
 * gdalwarp's options, gdalwarp's output grid, and blocks of output rows
 * read and computed on the device (see gg_warp.h for the method).
 *
 * Errors: functions returning int return 0 on success and 1 after putting
 * one line into the scene's err (the first error is kept).
 *
 * MIT licence.
 */
#ifndef GG_WARP_SCENE_H
#define GG_WARP_SCENE_H

#include "geogpu.h"
#include "gg_ortho_direct.h"
#include "gg_warp.h"

#include "gdal.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GGW_MAX_READERS 3
#define GGW_SLOTS 3
/* -et 0: the coarsest grid step tried (output pixels) */
#define GGW_STEP_MAX 32


typedef struct wsource {
    const char *name;
    /* one handle and one transformer (output pixel -> source pixel) per
     * reader, and one for the device worker's wider re-reads */
    GDALDatasetH ds[GGW_MAX_READERS + 1];
    void *tr[GGW_MAX_READERS + 1];
    int width, height;
    double xscale, yscale;        /* resampling kernel stretch (GDAL's) */
    gg_ortho_session *sess;       /* the worker's */
    gg_ortho_session *vsess;      /* -dstalpha: Float32 with NaN where no value */
    /* an uncompressed striped GeoTIFF of the kernel's type: read with
     * preads of whole rows (gg_ortho_direct.h), several readers at once */
    ggo_direct *direct;
} wsource;

/* One source's part of a block. */
typedef struct wpart {
    double *nodes;
    size_t nodes_cap;
    int gnx, gny, step;
    int sx0, sy0, sw, sh;         /* source window */
    void *src;                    /* nplanes planes of sw x sh, kernel type */
    size_t src_cap;
    void *cbuf;                   /* complex sources: the interleaved read */
    size_t cbuf_cap;
} wpart;

typedef struct wslot {
    int y0, rows;
    wpart *part;                  /* nsrc */
    void *dst, *tmp;              /* nplanes planes of out_w x rows, kernel type (dst: and
                                   * the alpha plane with -dstalpha) */
    float *valid;                 /* -dstalpha: nplanes Float32 planes, NaN where no value */
    void *io;                     /* complex outputs: the interleaved write */
} wslot;

struct ggw_scene {
    const ggw_options *o;
    const char *dst_name;
    int nsrc;
    wsource *src;
    int nbands, nplanes, complex; /* a complex band is two planes, re and im */
    int alpha, out_bands;         /* -dstalpha: an alpha band after the nbands bands */
    GDALDataType dst_gdt;
    gg_type kt_src, kt_dst;       /* kernel sample types */
    char **to;                    /* transformer options */
    char *dst_wkt;
    double gt[6];
    int out_w, out_h;
    int has_srcnd, unified, has_dstnd;
    double *src_nd, *dst_nd;      /* per plane; NULL without */
    double tol;
    int rows, items, readers;
    gg_context *ctx;
    GDALDatasetH out;
    ggo_direct *direct;           /* the output written with pwrite, or NULL: GDAL */
    wslot slot[GGW_SLOTS];
    int steps[GGW_STEP_MAX + 1];      /* blocks per grid step (-v) */
    pthread_mutex_t mu;
    char err[1024];
};

typedef struct ggw_scene ggw_scene;

int ggw_fail(ggw_scene *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* GDAL's type of a kernel sample type. */
GDALDataType ggw_gdal_type(gg_type t);

/* Sources, output CRS, nodata and gdalwarp's output grid from w->o (set
 * by the caller, with w->mu initialised); no device, one dataset handle per
 * source. */
int ggw_scene_setup(ggw_scene *w);
/* Then `readers` readers (each its own handles and transformers, plus the
 * worker's), the footprint check and gdalwarp's kernel scales. */
int ggw_scene_readers(ggw_scene *w, int readers);
/* Rows of a block (w->rows) and blocks (w->items). */
void ggw_plan_rows(ggw_scene *w);
/* Buffers of a slot for blocks of up to rows rows. */
int ggw_slot_alloc(ggw_scene *w, wslot *sl, int rows);
/* The block sl->y0 .. sl->y0 + sl->rows - 1: its coordinates and source
 * windows through reader's handles (thread-safe across readers), then its
 * pixels on the device w->ctx into sl->dst (kernel planes; one thread). */
int ggw_read_rows(ggw_scene *w, int reader, wslot *sl);
int ggw_compute_rows(ggw_scene *w, wslot *sl);
/* Frees everything the scene holds (sessions before their context). */
void ggw_scene_free(ggw_scene *w);

/* Output pixel positions (x, y: n of them, GDAL's corner convention) to
 * source positions in place through transformer tr
 * (GDALGenImgProjTransform, output -> source): ok[i] 0 and NaN where it
 * fails. */
void ggw_to_source(void *tr, int n, double *x, double *y, int *ok);

/* gg_warp_rows.c: gdalwarp's approximate transformer along each row of a
 * block, as row pieces (geogpu.h, grid step 0), of pixel centres or, with
 * corners 1 (average), of both corner rows.  0, or -1 out of memory. */
int ggw_row_pieces(double et, void *tr, int out_w, int src_w, int src_h, int corners, wpart *p,
                   int y0, int rows);

#ifdef __cplusplus
}
#endif
#endif /* GG_WARP_SCENE_H */
