/*
 * ortho.c -- RPC + DEM orthorectification on the device (gg_ortho_*): the
 * session keeps the RPC coefficients and the DEM window on the device; each
 * call computes one block of output rows from a window of the source image
 * and a grid of exact coordinates.  The GDAL layer (gdal_plugins/apps/
 * gdal_ortho.c) reads the inputs, computes the grid with PROJ and writes.
 *
 * MIT licence.
 */
#define _POSIX_C_SOURCE 200809L
#include "../../gpu/runtime.h"
#include "../kernel_ids.h"
#include "../../gpu/kernel_dialect.h"
#include "ortho_params.h"
#define GG_ORTHO_MODEL_ONLY
#include "ortho_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gg_ortho_session {
    gg_context *ctx;
    gg_ortho_params base;      /* the per-session part of the params */
    gg_buffer *coef, *dem, *flag;
    gg_buffer *src, *dst, *grid; /* grown on demand, kept between blocks */
    size_t src_cap, dst_cap, grid_cap;
    /* the whole source image on the device (gg_ortho_session_set_source):
     * nbands planes of img_w x img_h samples, filled by put_rows */
    gg_buffer *image;
    gg_type image_type;
    int image_w, image_h, image_bands;
    /* gg_ortho_session_set_bands called (bands_set) for nbands bands,
     * whose nodata and fill values are in the coefficient buffer */
    int nbands, bands_set;
    double src_nodata, dst_init; /* the options' */
    /* queued blocks (gg_ortho_session_queue_resident): slot (head + i) % 2
     * holds the i-th oldest; each slot has its own device output, grid and
     * miss flag, so a block's kernel runs while the one before downloads */
    gg_buffer *qdst[GG_ORTHO_QUEUED], *qgrid[GG_ORTHO_QUEUED], *qflag[GG_ORTHO_QUEUED];
    size_t qdst_cap[GG_ORTHO_QUEUED], qgrid_cap[GG_ORTHO_QUEUED];
    struct queued {
        void *dst;
        gg_type dst_type;
        int width, height, nbands;
        size_t dst_stride, dst_plane;
    } q[GG_ORTHO_QUEUED];
    int qhead, nq;
    int queued_copies;         /* copy-queue uploads were queued: kernels wait for them */
    int planes;                /* of the coordinate grid: GG_ORTHO_GRID_PLANES or
                                * GG_ORTHO_SOURCE_PLANES */
};

/* Marks of the copy queue (gpu/runtime.h): every upload reaches MARK_UP,
 * which the kernels wait for; MARK_RUN(slot) follows a queued block's
 * kernels, which its download waits for. */
#define MARK_UP 0
#define MARK_RUN(slot) (1 + (slot))

/* The kernel's sample types (ortho_params.h) are gg_type's values. */
_Static_assert(GG_ORTHO_T_BYTE == GG_BYTE && GG_ORTHO_T_UINT16 == GG_UINT16 &&
                   GG_ORTHO_T_INT16 == GG_INT16 && GG_ORTHO_T_FLOAT32 == GG_FLOAT32,
               "ortho_params.h's sample types are not gg_type's");

static int type_ok(gg_type t)
{
    return t == GG_BYTE || t == GG_UINT16 || t == GG_INT16 || t == GG_FLOAT32;
}

static size_t type_size(gg_type t)
{
    return gg_type_size(t);
}

/* The params and coefficient array the kernel functions take. */
static void fill_model(const gg_ortho_rpc *r, gg_ortho_params *p, double coef[GG_ORTHO_NCOEF])
{
    p->lon_off = r->long_off;
    p->lon_scale = r->long_scale;
    p->lat_off = r->lat_off;
    p->lat_scale = r->lat_scale;
    p->h_off = r->height_off;
    p->h_scale = r->height_scale;
    p->line_off = r->line_off;
    p->line_scale = r->line_scale;
    p->samp_off = r->samp_off;
    p->samp_scale = r->samp_scale;
    memcpy(coef, r->line_num, 20 * sizeof(double));
    memcpy(coef + 20, r->line_den, 20 * sizeof(double));
    memcpy(coef + 40, r->samp_num, 20 * sizeof(double));
    memcpy(coef + 60, r->samp_den, 20 * sizeof(double));
}

void gg_ortho_rpc_forward(const gg_ortho_rpc *rpc, double lon, double lat, double h,
                          double *pixel, double *line)
{
    gg_ortho_params p;
    double coef[GG_ORTHO_NCOEF];
    memset(&p, 0, sizeof p);
    fill_model(rpc, &p, coef);
    gg_ortho_rfm(coef, p, lon, lat, h, pixel, line);
}

static void fill_height(const gg_ortho_dem *dem, const gg_ortho_options *opt, gg_ortho_params *p)
{
    p->rpc_height = opt->rpc_height;
    p->height_scale = opt->height_scale;
    p->has_dem_missing = opt->has_dem_missing;
    p->dem_missing = opt->dem_missing;
    p->dem_interp = (int)opt->dem_interp;
    p->geometry = dem && dem->data ? GG_ORTHO_GEOM_RPC_DEM : GG_ORTHO_GEOM_RPC;
    if (p->geometry == GG_ORTHO_GEOM_RPC_DEM) {
        p->dem_w = dem->raster_width;
        p->dem_h = dem->raster_height;
        p->dem_x0 = dem->x0;
        p->dem_y0 = dem->y0;
        p->dem_win_w = dem->width;
        p->dem_win_h = dem->height;
        p->has_dem_nodata = dem->has_nodata;
        p->dem_nodata = dem->nodata;
    }
}

int gg_ortho_height_at(const gg_ortho_dem *dem, const gg_ortho_options *opt, double x, double y,
                       double vshift, double *h)
{
    gg_ortho_params p;
    memset(&p, 0, sizeof p);
    fill_height(dem, opt, &p);
    return gg_ortho_height(dem ? dem->data : NULL, p, x, y, vshift, h);
}

double gg_ortho_bytes_per_pixel(gg_type src_type, gg_type dst_type,
                                double src_per_dst)
{
    /* source window (with its margin) + output; the grid is 40 bytes per
     * node, negligible at step >= 8 */
    return (double)type_size(src_type) * src_per_dst * 1.25 + (double)type_size(dst_type) + 1.0;
}

static gg_status check_rpc(gg_context *ctx, const gg_ortho_rpc *r)
{
    const double v[] = {r->line_off,   r->samp_off,   r->lat_off,   r->long_off,
                        r->height_off, r->line_scale, r->samp_scale, r->lat_scale,
                        r->long_scale, r->height_scale};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i]))
            return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: RPC offset or scale is not finite");
    if (r->line_scale == 0 || r->samp_scale == 0 || r->lat_scale == 0 || r->long_scale == 0 ||
        r->height_scale == 0)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: an RPC scale is zero");
    const double *c = r->line_num;
    for (int i = 0; i < 20; i++)
        if (!isfinite(r->line_num[i]) || !isfinite(r->line_den[i]) ||
            !isfinite(r->samp_num[i]) || !isfinite(r->samp_den[i]))
            return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: RPC coefficient %d is not finite", i);
    (void)c;
    return GG_OK;
}

gg_status gg_ortho_session_create(gg_context *ctx, const gg_ortho_rpc *rpc,
                                  const gg_ortho_dem *dem, const gg_ortho_options *opt,
                                  gg_ortho_session **out)
{
    if (!out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    if (!ctx || !opt)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: null argument");
    gg_status st = rpc ? check_rpc(ctx, rpc) : GG_OK;
    if (st != GG_OK)
        return st;
    if (!rpc && dem && dem->data)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: a DEM needs an RPC model");
    if ((int)opt->resampling < 0 || (int)opt->resampling > GG_ORTHO_METHOD_AVERAGE ||
        (int)opt->dem_interp < 0 || (int)opt->dem_interp > 2)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: unknown resampling method");
    if (rpc && opt->resampling > GG_ORTHO_METHOD_CUBIC)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "ortho: cubicspline, lanczos and average are for source-coordinate "
                          "grids");
    if (dem && dem->data &&
        (dem->width < 1 || dem->height < 1 || dem->x0 < 0 || dem->y0 < 0 ||
         dem->x0 + dem->width > dem->raster_width || dem->y0 + dem->height > dem->raster_height))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: DEM window outside its raster");
    gg_ortho_session *s = calloc(1, sizeof *s);
    if (!s)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "ortho: out of memory");
    s->ctx = ctx;
    double coef[GG_ORTHO_NCOEF] = {0};
    if (rpc)
        fill_model(rpc, &s->base, coef);
    fill_height(dem, opt, &s->base);
    if (!rpc)
        s->base.geometry = GG_ORTHO_GEOM_SOURCE;
    s->planes = rpc ? GG_ORTHO_GRID_PLANES : GG_ORTHO_SOURCE_PLANES;
    s->base.resampling = (int)opt->resampling;
    s->base.has_src_nodata = opt->has_src_nodata;
    s->src_nodata = opt->src_nodata;
    s->dst_init = opt->dst_init;
    s->base.avoid_nodata = opt->has_dst_nodata && opt->resampling != GG_ORTHO_METHOD_NEAR;
    s->base.nd_gate = opt->has_src_nodata && !opt->per_band_nodata;
    s->base.xscale = s->base.yscale = 1.0;
    s->base.nd_bands = 1;
    s->nbands = 1;
    /* the coefficients, then each band's source nodata and output fill
     * values (one band until gg_ortho_session_set_bands) */
    double cbuf[GG_ORTHO_NCOEF + 2];
    memcpy(cbuf, coef, sizeof coef);
    cbuf[GG_ORTHO_NCOEF] = opt->src_nodata;
    cbuf[GG_ORTHO_NCOEF + 1] = opt->dst_init;
    st = gg_buffer_alloc(ctx, sizeof cbuf, &s->coef);
    if (st == GG_OK)
        st = gg_buffer_write(ctx, s->coef, 0, cbuf, sizeof cbuf);
    if (st == GG_OK)
        st = gg_buffer_alloc(ctx, 16, &s->flag);
    if (st == GG_OK) {
        const int has_dem = s->base.geometry == GG_ORTHO_GEOM_RPC_DEM;
        const size_t n = has_dem ? (size_t)dem->width * (size_t)dem->height : 1;
        st = gg_buffer_alloc(ctx, n * sizeof(double), &s->dem);
        if (st == GG_OK && has_dem)
            st = gg_buffer_write(ctx, s->dem, 0, dem->data, n * sizeof(double));
    }
    if (st == GG_OK)
        st = gg_ortho_session_set_scale(s, 1.0, 1.0);
    if (st != GG_OK) {
        gg_ortho_session_destroy(s);
        return st;
    }
    *out = s;
    return GG_OK;
}

gg_status gg_ortho_session_set_scale(gg_ortho_session *s, double xscale, double yscale)
{
    if (!s)
        return GG_ERR_ARGUMENT;
    if (!(xscale > 0 && yscale > 0 && xscale < 1e6 && yscale < 1e6))
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: kernel scales must be positive");
    s->base.x_radius = s->base.y_radius = 0;
    s->base.xscale = s->base.yscale = 1.0;
    /* GDAL's warp kernel keeps the 4-sample formulas of bilinear and cubic
     * unless a scale is below 0.95; cubicspline and lanczos always take
     * the general path; nearest neighbour is never stretched, and average
     * takes each output pixel's footprint, whatever its size (its scales
     * only set how far outside the source a footprint may reach) */
    const int method = s->base.resampling;
    if (method == GG_ORTHO_AVERAGE) {
        /* average's margin around the source: 2 max(1, ceil(1 / scale)) */
        const double mx = 2.0 * fmax(1.0, ceil(1.0 / xscale));
        const double my = 2.0 * fmax(1.0, ceil(1.0 / yscale));
        s->base.x_radius = mx > 1e9 ? 1000000000 : (int)mx;
        s->base.y_radius = my > 1e9 ? 1000000000 : (int)my;
        return GG_OK;
    }
    if (method == GG_ORTHO_NEAR ||
        (method <= GG_ORTHO_CUBIC && xscale >= 0.95 && yscale >= 0.95))
        return GG_OK;
    const double radius = method == GG_ORTHO_LANCZOS ? 3.0
                          : method == GG_ORTHO_BILINEAR ? 1.0
                                                        : 2.0;
    s->base.xscale = xscale < 1.0 ? xscale : 1.0;
    s->base.yscale = yscale < 1.0 ? yscale : 1.0;
    /* radii compared as doubles: a tiny scale must fail here, not overflow the cast */
    const double xr = xscale < 1.0 ? ceil(radius / xscale) : radius;
    const double yr = yscale < 1.0 ? ceil(radius / yscale) : radius;
    s->base.x_radius = xr > 4096 ? 4097 : (int)xr;
    s->base.y_radius = yr > 4096 ? 4097 : (int)yr;
    if (s->base.x_radius > 4096 || s->base.y_radius > 4096)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT,
                          "ortho: output %.3g x %.3g times coarser than the source: too coarse "
                          "for a resampling kernel (use near)",
                          1.0 / xscale, 1.0 / yscale);
    return GG_OK;
}

gg_status gg_ortho_session_set_bands(gg_ortho_session *s, int nbands, const double *src_nodata,
                                     const double *dst_init, int unified)
{
    if (!s)
        return GG_ERR_ARGUMENT;
    if (nbands < 1 || nbands > 65535)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: band count %d out of range", nbands);
    const size_t ncbuf = (size_t)GG_ORTHO_NCOEF + 2 * (size_t)nbands;
    double *cbuf = malloc(sizeof(double) * ncbuf);
    gg_buffer *coef = NULL;
    gg_status st = cbuf ? GG_OK : gg_rt_fail(s->ctx, GG_ERR_NOMEM, "ortho: out of memory");
    if (st == GG_OK)
        st = gg_buffer_read(s->ctx, s->coef, 0, cbuf, GG_ORTHO_NCOEF * sizeof(double));
    if (st == GG_OK) {
        for (int b = 0; b < nbands; b++) {
            cbuf[GG_ORTHO_NCOEF + 2 * b] = src_nodata ? src_nodata[b] : s->src_nodata;
            cbuf[GG_ORTHO_NCOEF + 2 * b + 1] = dst_init ? dst_init[b] : s->dst_init;
        }
        st = gg_buffer_alloc(s->ctx, sizeof(double) * ncbuf, &coef);
    }
    if (st == GG_OK)
        st = gg_buffer_write(s->ctx, coef, 0, cbuf, sizeof(double) * ncbuf);
    free(cbuf);
    if (st != GG_OK) {
        if (coef)
            gg_buffer_free(s->ctx, coef);
        return st;
    }
    gg_buffer_free(s->ctx, s->coef);
    s->coef = coef;
    s->bands_set = 1;
    s->nbands = nbands;
    /* one band: the single-band rule (and no other plane is ever read) */
    const int multi = nbands > 1 && s->base.has_src_nodata;
    s->base.nd_bands = multi ? nbands : 1;
    s->base.nd_unified = multi && unified;
    if (multi)
        s->base.nd_gate = 1; /* gdalwarp's unified mask gates the pixel */
    return GG_OK;
}

/* The params of one band's launch: its nodata values are entry `band` of
 * the coefficient buffer's (the options' single entry before set_bands). */
static void band_params(const gg_ortho_session *s, gg_ortho_params *p, int band, int band_rows)
{
    p->band = s->bands_set ? band : 0;
    p->band_rows = band_rows;
}

void gg_ortho_session_destroy(gg_ortho_session *s)
{
    if (!s)
        return;
    if (s->queued_copies || s->nq) /* copies and kernels may still use the buffers */
        (void)gg_rt_finish(s->ctx);
    gg_buffer *b[] = {s->coef, s->dem, s->flag, s->src, s->dst, s->grid, s->image};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i])
            gg_buffer_free(s->ctx, b[i]);
    for (int i = 0; i < GG_ORTHO_QUEUED; i++) {
        gg_buffer *qb[] = {s->qdst[i], s->qgrid[i], s->qflag[i]};
        for (size_t j = 0; j < sizeof qb / sizeof qb[0]; j++)
            if (qb[j])
                gg_buffer_free(s->ctx, qb[j]);
    }
    free(s);
}

/* Keeps one device buffer per role, grown when a block needs more. */
static gg_status ensure(gg_ortho_session *s, gg_buffer **b, size_t *cap, size_t bytes)
{
    if (bytes == 0)
        bytes = 16;
    if (*b && *cap >= bytes)
        return GG_OK;
    if (*b)
        gg_buffer_free(s->ctx, *b);
    *b = NULL;
    *cap = 0;
    gg_status st = gg_buffer_alloc(s->ctx, bytes, b);
    if (st == GG_OK)
        *cap = bytes;
    return st;
}

static gg_status check_block(gg_ortho_session *s, const gg_ortho_grid *grid, void *dst,
                             gg_type dst_type, int width, int height, size_t dst_stride)
{
    if (width < 1 || height < 1 || dst_stride < (size_t)width || !type_ok(dst_type))
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: bad block or data type");
    /* average takes corners: twice the row pieces, a grid one corner wider */
    const int corners = s->base.resampling == GG_ORTHO_AVERAGE;
    if (grid->step == 0 && s->base.geometry == GG_ORTHO_GEOM_SOURCE) {
        const int rows = corners ? 2 * height : height;
        if (grid->ny != rows || grid->nx < rows + 1 || !grid->nodes || !dst)
            return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT,
                              "ortho: the row pieces do not cover the block");
        return GG_OK;
    }
    if (grid->step < 1 || grid->nx < (width - 1 + corners) / grid->step + 4 ||
        grid->ny < (height - 1 + corners) / grid->step + 4 || !grid->nodes || !dst)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT,
                          "ortho: the coordinate grid does not cover the block");
    return GG_OK;
}

/* Doubles of a block's grid: planes of nx x ny nodes, or nx for row
 * pieces (step 0). */
static size_t grid_doubles(const gg_ortho_session *s, const gg_ortho_grid *grid)
{
    if (grid->step == 0)
        return (size_t)grid->nx;
    return (size_t)s->planes * (size_t)grid->nx * (size_t)grid->ny;
}

/* Grid upload, kernel over the block, download of the block and of the
 * miss flag; p carries the window, srcbuf holds it. */
static gg_status run_block(gg_ortho_session *s, gg_ortho_params p, gg_buffer *srcbuf,
                           const gg_ortho_grid *grid, void *dst, gg_type dst_type, int width,
                           int height, size_t dst_stride, int *missed)
{
    gg_context *ctx = s->ctx;
    p.grid_nx = grid->nx;
    p.grid_ny = grid->ny;
    p.grid_step = grid->step;
    p.dst_type = (int)dst_type;
    const size_t dsz = type_size(dst_type);
    const size_t dst_bytes = (size_t)width * (size_t)height * dsz;
    const size_t grid_bytes = grid_doubles(s, grid) * sizeof(double);
    gg_status st = ensure(s, &s->dst, &s->dst_cap, dst_bytes);
    if (st == GG_OK)
        st = ensure(s, &s->grid, &s->grid_cap, grid_bytes);
    if (st == GG_OK)
        st = gg_buffer_write(ctx, s->grid, 0, grid->nodes, grid_bytes);
    const int zero[4] = {0, 0, 0, 0};
    if (st == GG_OK)
        st = gg_buffer_write(ctx, s->flag, 0, zero, sizeof zero);
    if (st != GG_OK)
        return st;
    if (s->queued_copies) /* rows put with put_rows_async */
        st = gg_rt_wait_mark(ctx, MARK_UP);
    if (st != GG_OK)
        return st;
    gg_buffer *bufs[6] = {srcbuf, s->dst, s->grid, s->dem, s->coef, s->flag};
    st = gg_rt_launch(ctx, GG_K_ORTHO, width, height, &p, sizeof p, bufs, 6);
    if (st != GG_OK)
        return st;
    gg_tile out = {dst, GG_BYTE, (int)(width * dsz), height, dst_stride * dsz, 0, 0};
    st = gg_rt_read_tile(ctx, s->dst, 0, 0, &out);
    if (st != GG_OK)
        return st;
    int flag[4];
    st = gg_buffer_read(ctx, s->flag, 0, flag, sizeof flag);
    if (st != GG_OK)
        return st;
    *missed = flag[0] != 0;
    return GG_OK;
}

/* The window of nbands planes (src->height rows of src->stride samples
 * each, one after the other) uploaded once; one launch per band. */
static gg_status run_window(gg_ortho_session *s, const gg_ortho_grid *grid,
                            const gg_ortho_image *src, int nbands, void *dst,
                            gg_type dst_type, int width, int height, size_t dst_stride,
                            size_t dst_plane, int *missed)
{
    if (!s || !grid || !src || !dst || !missed)
        return GG_ERR_ARGUMENT;
    gg_context *ctx = s->ctx;
    *missed = 0;
    gg_status st = check_block(s, grid, dst, dst_type, width, height, dst_stride);
    if (st != GG_OK)
        return st;
    if (!type_ok(src->type))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: bad block or data type");
    if (src->width < 0 || src->height < 0 || src->x0 < 0 || src->y0 < 0 ||
        src->x0 + src->width > src->raster_width || src->y0 + src->height > src->raster_height ||
        (src->width > 0 && src->stride < (size_t)src->width))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: source window outside the image");
    if (nbands < 1 || (nbands > 1 && dst_plane < (size_t)height * dst_stride))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: bad band count or output plane size");
    /* the multi-band nodata rule reads every band at a tap */
    if (s->base.nd_bands > 1 && nbands != s->nbands)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "ortho: the session's nodata rule needs all %d bands of the window "
                          "(gg_ortho_session_run_bands), got %d",
                          s->nbands, nbands);
    if (nbands > s->nbands && s->bands_set)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: %d bands, the session has %d", nbands,
                          s->nbands);

    gg_ortho_params p = s->base;
    p.img_w = src->raster_width;
    p.img_h = src->raster_height;
    p.win_x0 = src->x0;
    p.win_y0 = src->y0;
    p.win_w = src->width;
    p.win_h = src->height;
    p.src_type = (int)src->type;

    const size_t ssz = type_size(src->type);
    const size_t rows = (size_t)src->height * (size_t)nbands;
    const size_t src_bytes = (size_t)src->width * rows * ssz;
    st = ensure(s, &s->src, &s->src_cap, src_bytes);
    if (st != GG_OK)
        return st;
    if (src_bytes > 0) {
        /* the planes are contiguous: one tile of nbands * height rows */
        gg_tile t = {(void *)src->data, GG_BYTE, (int)(src->width * ssz), (int)rows,
                     src->stride * ssz, 0, 0};
        st = gg_rt_write_tile(ctx, s->src, 0, 0, &t);
        if (st != GG_OK)
            return st;
    }
    for (int k = 0; k < nbands; k++) {
        gg_ortho_params pk = p;
        pk.win_dy = k * src->height;
        band_params(s, &pk, k, src->height);
        int m = 0;
        char *out = (char *)dst + (size_t)k * dst_plane * type_size(dst_type);
        st = run_block(s, pk, s->src, grid, out, dst_type, width, height, dst_stride, &m);
        if (st != GG_OK)
            return st;
        *missed |= m;
    }
    return GG_OK;
}

gg_status gg_ortho_session_run(gg_ortho_session *s, const gg_ortho_grid *grid,
                               const gg_ortho_image *src, void *dst, gg_type dst_type,
                               int width, int height, size_t dst_stride, int *missed)
{
    return run_window(s, grid, src, 1, dst, dst_type, width, height, dst_stride, 0, missed);
}

gg_status gg_ortho_session_run_bands(gg_ortho_session *s, const gg_ortho_grid *grid,
                                     const gg_ortho_image *src, int nbands, void *dst,
                                     gg_type dst_type, int width, int height,
                                     size_t dst_stride, size_t dst_plane, int *missed)
{
    return run_window(s, grid, src, nbands, dst, dst_type, width, height, dst_stride, dst_plane,
                      missed);
}

size_t gg_ortho_source_bytes(gg_type type, int width, int height, int nbands)
{
    if (!type_ok(type) || width < 1 || height < 1 || nbands < 1)
        return 0;
    return type_size(type) * (size_t)width * (size_t)height * (size_t)nbands;
}

gg_status gg_ortho_session_set_source(gg_ortho_session *s, gg_type type, int width,
                                      int height, int nbands)
{
    if (!s)
        return GG_ERR_ARGUMENT;
    const size_t bytes = gg_ortho_source_bytes(type, width, height, nbands);
    if (!bytes)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: bad resident source size or type");
    if (s->image)
        gg_buffer_free(s->ctx, s->image);
    s->image = NULL;
    gg_status st = gg_buffer_alloc(s->ctx, bytes, &s->image);
    if (st != GG_OK)
        return st;
    s->image_type = type;
    s->image_w = width;
    s->image_h = height;
    s->image_bands = nbands;
    return GG_OK;
}

/* put_rows, blocking or queued on the copy queue (reaching MARK_UP). */
static gg_status put_rows(gg_ortho_session *s, int band, int y0, int rows, const void *data,
                          size_t stride, int queued)
{
    if (!s)
        return GG_ERR_ARGUMENT;
    if (!s->image)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: no resident source (set_source)");
    if (band < 0 || band >= s->image_bands || y0 < 0 || rows < 0 || y0 + rows > s->image_h ||
        !data || stride < (size_t)s->image_w)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: rows outside the resident source");
    if (rows == 0)
        return GG_OK;
    const size_t ssz = type_size(s->image_type);
    const size_t row = (size_t)s->image_w * ssz;
    const size_t offset = ((size_t)band * (size_t)s->image_h + (size_t)y0) * row;
    gg_tile t = {(void *)data, GG_BYTE, (int)row, rows, stride * ssz, 0, 0};
    gg_status st;
    if (queued) {
        st = gg_rt_write_tile_async(s->ctx, s->image, offset, row, &t, -1, MARK_UP);
        s->queued_copies = 1;
    } else {
        st = gg_rt_write_tile(s->ctx, s->image, offset, row, &t);
    }
    return st;
}

gg_status gg_ortho_session_put_rows(gg_ortho_session *s, int band, int y0, int rows,
                                    const void *data, size_t stride)
{
    return put_rows(s, band, y0, rows, data, stride, 0);
}

gg_status gg_ortho_session_put_rows_async(gg_ortho_session *s, int band, int y0, int rows,
                                          const void *data, size_t stride)
{
    return put_rows(s, band, y0, rows, data, stride, 1);
}

/* The params of a block of width x height output pixels over rows y0 ..
 * y0+rows-1 of the resident source (band set later by resident_band),
 * after checking the block and the rows. */
static gg_status resident_params(gg_ortho_session *s, const gg_ortho_grid *grid, void *dst,
                                 gg_type dst_type, int width, int height,
                                 size_t dst_stride, int y0, int rows, gg_ortho_params *p)
{
    const gg_status st = check_block(s, grid, dst, dst_type, width, height, dst_stride);
    if (st != GG_OK)
        return st;
    if (!s->image)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: no resident source (set_source)");
    if (y0 < 0 || rows < 0 || y0 + rows > s->image_h)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: rows outside the resident source");
    if (s->base.nd_bands > 1 && s->image_bands != s->nbands)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT,
                          "ortho: the resident source has %d bands, the nodata rule %d",
                          s->image_bands, s->nbands);
    *p = s->base;
    p->img_w = s->image_w;
    p->img_h = s->image_h;
    p->win_x0 = 0;
    p->win_w = s->image_w;
    p->win_y0 = y0;
    p->win_h = rows;
    p->src_type = (int)s->image_type;
    return GG_OK;
}

/* The window of `band` starts band * height + y0 rows into the image. */
static void resident_band(const gg_ortho_session *s, gg_ortho_params *p, int band)
{
    p->win_dy = band * s->image_h + p->win_y0;
    band_params(s, p, band, s->image_h);
}

gg_status gg_ortho_session_run_resident(gg_ortho_session *s, const gg_ortho_grid *grid,
                                        int band, int y0, int rows, void *dst,
                                        gg_type dst_type, int width, int height,
                                        size_t dst_stride, int *missed)
{
    if (!s || !grid || !dst || !missed)
        return GG_ERR_ARGUMENT;
    *missed = 0;
    gg_ortho_params p;
    const gg_status st =
        resident_params(s, grid, dst, dst_type, width, height, dst_stride, y0, rows, &p);
    if (st != GG_OK)
        return st;
    if (band < 0 || band >= s->image_bands)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: rows outside the resident source");
    if (s->bands_set && band >= s->nbands)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: band %d, the session has %d", band,
                          s->nbands);
    resident_band(s, &p, band);
    return run_block(s, p, s->image, grid, dst, dst_type, width, height, dst_stride, missed);
}

gg_status gg_ortho_session_queue_resident(gg_ortho_session *s, const gg_ortho_grid *grid,
                                          int y0, int rows, void *dst, gg_type dst_type,
                                          int width, int height, size_t dst_stride,
                                          size_t dst_plane)
{
    if (!s || !grid || !dst)
        return GG_ERR_ARGUMENT;
    gg_context *ctx = s->ctx;
    if (s->nq >= GG_ORTHO_QUEUED)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: %d blocks queued already (wait first)",
                          s->nq);
    gg_ortho_params p;
    gg_status st =
        resident_params(s, grid, dst, dst_type, width, height, dst_stride, y0, rows, &p);
    if (st != GG_OK)
        return st;
    const int nbands = s->image_bands;
    if (s->bands_set && nbands > s->nbands)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: %d bands, the session has %d", nbands,
                          s->nbands);
    if (nbands > 1 && dst_plane < (size_t)height * dst_stride)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "ortho: bad output plane size");
    const int slot = (s->qhead + s->nq) % GG_ORTHO_QUEUED;
    const size_t plane = (size_t)width * (size_t)height * type_size(dst_type);
    const size_t grid_bytes = grid_doubles(s, grid) * sizeof(double);
    /* nbands planes of the slot's output; with several bands the kernel
     * writes the session's one-plane buffer (main queue order keeps it
     * free), copied into its band's plane */
    st = ensure(s, &s->qdst[slot], &s->qdst_cap[slot], plane * (size_t)nbands);
    if (st == GG_OK && nbands > 1)
        st = ensure(s, &s->dst, &s->dst_cap, plane);
    if (st == GG_OK)
        st = ensure(s, &s->qgrid[slot], &s->qgrid_cap[slot], grid_bytes);
    if (st == GG_OK && !s->qflag[slot])
        st = gg_buffer_alloc(ctx, 16, &s->qflag[slot]);
    /* the grid goes up the copy queue (its nodes stay until the block's
     * wait); the flag is cleared and the kernels wait on the main queue */
    const size_t grid_row = (size_t)grid->nx * sizeof(double);
    gg_tile gt = {(void *)grid->nodes, GG_BYTE, (int)grid_row,
                  grid->step == 0 ? 1 : s->planes * grid->ny, grid_row, 0, 0};
    if (st == GG_OK)
        st = gg_rt_write_tile_async(ctx, s->qgrid[slot], 0, 0, &gt, -1, MARK_UP);
    s->queued_copies = 1;
    if (st == GG_OK)
        st = gg_rt_fill_float(ctx, s->qflag[slot], 0, 0.0f, 4);
    if (st == GG_OK)
        st = gg_rt_wait_mark(ctx, MARK_UP);
    p.grid_nx = grid->nx;
    p.grid_ny = grid->ny;
    p.grid_step = grid->step;
    p.dst_type = (int)dst_type;
    for (int k = 0; k < nbands && st == GG_OK; k++) {
        gg_ortho_params pk = p;
        resident_band(s, &pk, k);
        gg_buffer *out = nbands > 1 ? s->dst : s->qdst[slot];
        gg_buffer *bufs[6] = {s->image, out, s->qgrid[slot], s->dem, s->coef, s->qflag[slot]};
        st = gg_rt_launch(ctx, GG_K_ORTHO, width, height, &pk, sizeof pk, bufs, 6);
        if (st == GG_OK && nbands > 1)
            st = gg_rt_copy(ctx, s->qdst[slot], (size_t)k * plane, s->dst, 0, plane);
    }
    if (st == GG_OK)
        st = gg_rt_mark(ctx, MARK_RUN(slot));
    if (st != GG_OK) {
        (void)gg_rt_finish(ctx); /* nothing of the block left in flight */
        return st;
    }
    s->q[slot] = (struct queued){dst, dst_type, width, height, nbands, dst_stride, dst_plane};
    s->nq++;
    return GG_OK;
}

gg_status gg_ortho_session_wait(gg_ortho_session *s, int *missed)
{
    if (!s || !missed)
        return GG_ERR_ARGUMENT;
    *missed = 0;
    if (s->nq == 0)
        return gg_rt_fail(s->ctx, GG_ERR_ARGUMENT, "ortho: no block queued");
    const int slot = s->qhead;
    const struct queued *q = &s->q[slot];
    s->qhead = (s->qhead + 1) % GG_ORTHO_QUEUED;
    s->nq--;
    const size_t dsz = type_size(q->dst_type);
    const size_t plane = (size_t)q->width * (size_t)q->height * dsz;
    gg_status st = GG_OK;
    for (int k = 0; k < q->nbands && st == GG_OK; k++) {
        gg_tile out = {(char *)q->dst + (size_t)k * q->dst_plane * dsz, GG_BYTE,
                       (int)(q->width * dsz), q->height, q->dst_stride * dsz, 0, 0};
        st = gg_rt_read_tile_after(s->ctx, s->qdst[slot], (size_t)k * plane, 0, &out,
                                   MARK_RUN(slot));
    }
    int flag[4] = {0, 0, 0, 0}; /* the read blocks: a local will do */
    gg_tile ft = {flag, GG_BYTE, (int)sizeof flag, 1, sizeof flag, 0, 0};
    if (st == GG_OK)
        st = gg_rt_read_tile_after(s->ctx, s->qflag[slot], 0, 0, &ft, MARK_RUN(slot));
    if (st == GG_OK)
        *missed = flag[0] != 0;
    return st;
}

gg_status gg_ortho_session_flush(gg_ortho_session *s)
{
    if (!s)
        return GG_ERR_ARGUMENT;
    return gg_rt_finish(s->ctx);
}

gg_status gg_ortho_launch_info(gg_context *ctx, int *block_x, int *block_y, double *occupancy)
{
    if (!ctx)
        return GG_ERR_ARGUMENT;
    const gg_backend *vt = gg_rt_vt(ctx);
    if (!vt->launch_info)
        return gg_rt_fail(ctx, GG_ERR_UNSUPPORTED, "ortho: the backend reports no launch info");
    return gg_rt_check(ctx, vt->launch_info(gg_rt_dev(ctx), GG_K_ORTHO, block_x, block_y, occupancy),
                       "launch_info");
}
