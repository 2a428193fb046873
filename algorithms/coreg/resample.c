/*
 * resample.c -- the secondary SLC resampled onto the primary grid from a
 * coregistration polynomial (the "resample" op; gg_coreg_fit for the
 * polynomial and its conventions) or from a dense grid of offsets (one
 * node per xcorr window, bilinear between the window centres, constant
 * beyond the outer ones).  Output pixel (X, Y) is the secondary
 * sampled at (X + across(X, Y), Y + down(X, Y)), pixel centres at integers,
 * with nearest, bilinear, bicubic (Keys -0.5), GMTSAR resamp's 4x4 sinc or
 * an 8x8 Hann-windowed sinc (default).  A complex secondary with a
 * carrier (carrier=fy,fx: its spectrum's centre in cycles per line and
 * per pixel; gdal_coreg estimates it, gg_coreg_carrier_*) is demodulated,
 * interpolated and remodulated at the sample point (gg_rs_sample); with
 * none (the default) real and imaginary parts are interpolated as they
 * are, as GMTSAR resamp does.  Pixels that map outside the secondary are
 * nodata (NaN by default).
 *
 * MIT licence.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "../../gpu/kernel_dialect.h"
#include "coreg_params.h"
#include "coreg_device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A dense offset grid: node (i, j) at primary pixel (x0 + i dx, y0 + j dy)
 * holds (down, across) in v[2 (j nx + i) ..]. */
typedef struct {
    int nx, ny;
    double x0, y0, dx, dy;
    float *v;
} rs_grid;

typedef struct {
    gg_coreg_fit fit;
    int have_poly;
    rs_grid grid;           /* grid= (v NULL: none) */
    int kind;
    int out_w, out_h;
    double car_y, car_x;    /* carrier= (cycles per line, per pixel) */
    gg_rs_params p;
} rs_state;

static const char *const kind_names[] = {"nearest", "bilinear", "bicubic", "sinc4", "sinc8"};

static void rs_init(gg_op *op)
{
    rs_state *s = op->state;
    s->kind = GG_RS_SINC8;
}

static void rs_cleanup(gg_op *op)
{
    rs_state *s = op->state;
    free(s->grid.v);
    s->grid.v = NULL;
}

/* Text of an option: the value itself when it looks like data (has one of
 * the characters in `data`), else the file it names (NULL if unreadable).
 * *owned is set when the text was read (free it). */
static const char *rs_text(const char *value, const char *data, char **owned)
{
    *owned = NULL;
    if (strpbrk(value, data))
        return value;
    FILE *f = fopen(value, "rb");
    if (!f)
        return value;
    size_t cap = 65536, n = 0;
    char *t = malloc(cap);
    while (t) {
        n += fread(t + n, 1, cap - 1 - n, f);
        if (n < cap - 1)
            break;
        char *u = realloc(t, cap *= 2);
        if (!u) {
            free(t);
            t = NULL;
        } else {
            t = u;
        }
    }
    fclose(f);
    if (!t)
        return NULL;
    t[n] = 0;
    *owned = t;
    return t;
}

/* Parses "nx,ny,x0,y0,dx,dy;d(0,0),d(1,0),...;a(0,0),a(1,0),..." (down
 * then across values of the nx x ny nodes, rows of constant y first; node
 * (i, j) at primary pixel (x0 + i dx, y0 + j dy), centres at integers).
 * Every value must be finite: gdal_coreg fills nodata windows first. */
static gg_status rs_parse_grid(gg_op *op, const char *text, rs_grid *g)
{
    char *end;
    double h[6];
    const char *c = text;
    for (int k = 0; k < 6; k++) {
        h[k] = strtod(c, &end);
        if (end == c || *end != (k < 5 ? ',' : ';'))
            return gg_op_error(op, GG_ERR_ARGUMENT, "resample: grid must start with "
                               "'nx,ny,x0,y0,dx,dy;' (field %d is bad)", k + 1);
        c = end + 1;
    }
    if (h[0] < 1 || h[1] < 1 || h[0] > 1e6 || h[1] > 1e6 || h[0] != floor(h[0]) ||
        h[1] != floor(h[1]) || !(h[4] > 0) || !(h[5] > 0) || !isfinite(h[2] + h[3] + h[4] + h[5]))
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: grid needs nx, ny >= 1 and spacings "
                           "dx, dy > 0 (got %g,%g,%g,%g,%g,%g)", h[0], h[1], h[2], h[3], h[4], h[5]);
    g->nx = (int)h[0];
    g->ny = (int)h[1];
    g->x0 = h[2];
    g->y0 = h[3];
    g->dx = h[4];
    g->dy = h[5];
    const size_t n = (size_t)g->nx * g->ny;
    free(g->v);
    g->v = malloc(sizeof(float) * 2 * n);
    if (!g->v)
        return gg_op_error(op, GG_ERR_NOMEM, "resample: out of memory for a %dx%d grid", g->nx,
                           g->ny);
    for (int axis = 0; axis < 2; axis++)
        for (size_t k = 0; k < n; k++) {
            const double v = strtod(c, &end);
            const char want = k + 1 < n ? ',' : (axis ? 0 : ';');
            if (end == c || *end != want || !isfinite(v)) {
                free(g->v);
                g->v = NULL;
                return gg_op_error(op, GG_ERR_ARGUMENT, "resample: grid value %zu of the %s "
                                   "offsets is missing or not finite (%zu values expected per "
                                   "axis)", k + 1, axis ? "across" : "down", n);
            }
            g->v[2 * k + (size_t)axis] = (float)v;
            c = end + 1;
        }
    return GG_OK;
}

/* The value of poly= is the fit's JSON, "d0,..;a0,.." or a file holding
 * either (gdal_coreg -fit writes one). */
static gg_status rs_set(gg_op *op, const char *key, const char *value)
{
    rs_state *s = op->state;
    if (!strcasecmp(key, "poly")) {
        char err[256], *text = NULL;
        FILE *f = strchr(value, '{') || strchr(value, ';') ? NULL : fopen(value, "rb");
        if (f) {
            text = calloc(1, 65536);
            if (text)
                fread(text, 1, 65535, f);
            fclose(f);
        }
        gg_status st = gg_coreg_fit_parse(text ? text : value, &s->fit, err, sizeof err);
        free(text);
        if (st != GG_OK)
            return gg_op_error(op, GG_ERR_ARGUMENT, "resample: %s", err);
        s->have_poly = 1;
        return GG_OK;
    }
    if (!strcasecmp(key, "grid")) {
        char *owned;
        const char *text = rs_text(value, ",;", &owned);
        gg_status st = text ? rs_parse_grid(op, text, &s->grid)
                            : gg_op_error(op, GG_ERR_NOMEM, "resample: out of memory");
        free(owned);
        return st;
    }
    if (!strcasecmp(key, "interp")) {
        for (int k = 0; k < 5; k++)
            if (!strcasecmp(value, kind_names[k])) {
                s->kind = k;
                return GG_OK;
            }
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: interp must be nearest, bilinear, "
                           "bicubic, sinc4 or sinc8, not '%s'", value);
    }
    if (!strcasecmp(key, "carrier")) {
        /* "none", or the carrier "fy,fx" in cycles per line (azimuth) and
         * per pixel (range), each in [-0.5, 0.5] */
        if (!strcasecmp(value, "none")) {
            s->car_y = s->car_x = 0.0;
            return GG_OK;
        }
        char *end;
        const double fy = strtod(value, &end);
        const double fx = *end == ',' ? strtod(end + 1, &end) : NAN;
        if (*end || !(fabs(fy) <= 0.5) || !(fabs(fx) <= 0.5))
            return gg_op_error(op, GG_ERR_ARGUMENT, "resample: carrier must be 'none' or "
                               "'<azimuth>,<range>' in cycles per pixel, each in [-0.5, 0.5], "
                               "not '%s'", value);
        s->car_y = fy;
        s->car_x = fx;
        return GG_OK;
    }
    if (!strcasecmp(key, "outsize")) {
        int w, h;
        if (!gg_parse_pair(value, &w, &h) || w < 1 || h < 1 || w > 10000000 || h > 10000000)
            return gg_op_error(op, GG_ERR_ARGUMENT, "resample: outsize must be positive integers "
                               "like 1024x768, not '%s'", value);
        s->out_w = w;
        s->out_h = h;
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

static gg_status rs_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    rs_state *s = op->state;
    if (!s->have_poly && !s->grid.v)
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: needs poly= (the coregistration fit: "
                           "JSON, a file, or 'down coefficients;across coefficients') or grid= "
                           "(dense offsets)");
    if (s->have_poly && s->grid.v)
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: give poly= or grid=, not both");
    if (in->type != GG_CFLOAT32 && in->type != GG_FLOAT32)
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: the secondary must be CFloat32 or "
                           "Float32");
    out->width = s->out_w ? s->out_w : in->width;
    out->height = s->out_h ? s->out_h : in->height;
    out->type = in->type;
    gg_rs_params *p = &s->p;
    memset(p, 0, sizeof *p);
    memcpy(p->cd, s->fit.down, sizeof p->cd);
    memcpy(p->ca, s->fit.across, sizeof p->ca);
    p->ncoef = s->fit.ncoef;
    p->kind = s->kind;
    p->channels = in->type == GG_CFLOAT32 ? 2 : 1;
    p->src_w = in->width;
    p->src_h = in->height;
    p->gNx = s->grid.nx;
    p->gNy = s->grid.ny;
    p->gx0 = s->grid.x0;
    p->gy0 = s->grid.y0;
    p->gdx = s->grid.dx > 0 ? s->grid.dx : 1;
    p->gdy = s->grid.dy > 0 ? s->grid.dy : 1;
    /* a real secondary has no carrier to speak of */
    p->car_y = p->channels == 2 ? s->car_y : 0.0;
    p->car_x = p->channels == 2 ? s->car_x : 0.0;
    return GG_OK;
}

/* Nodes [*i0, *i1] along one axis that positions [a, b] interpolate from
 * (cells i, i + 1, clamped: the kernels' gg_rs_cell, coreg_device.h). */
static void rs_node_range(double a, double b, double g0, double d, int n, int *i0, int *i1)
{
    double t;
    *i0 = gg_rs_cell(a, g0, d, n, &t);
    *i1 = gg_rs_cell(b, g0, d, n, &t) + 1;
    if (*i1 > n - 1)
        *i1 = n - 1;
}

/* Bounding box of the mapped positions over the output window (sampled
 * on a 9 x 9 grid: the polynomials are at most cubic and smooth over a
 * block) plus the widest kernel's reach and a pixel of margin. */
static void rs_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const rs_state *s = op->state;
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    if (s->grid.v) {
        /* bilinear values lie between those of the nodes used */
        const rs_grid *g = &s->grid;
        int i0, i1, j0, j1;
        rs_node_range(d->x0, d->x0 + d->width - 1, g->x0, g->dx, g->nx, &i0, &i1);
        rs_node_range(d->y0, d->y0 + d->height - 1, g->y0, g->dy, g->ny, &j0, &j1);
        double dmin = 1e300, dmax = -1e300, amin = 1e300, amax = -1e300;
        for (int j = j0; j <= j1; j++)
            for (int i = i0; i <= i1; i++) {
                const float *v = g->v + 2 * ((size_t)j * g->nx + i);
                dmin = fmin(dmin, v[0]);
                dmax = fmax(dmax, v[0]);
                amin = fmin(amin, v[1]);
                amax = fmax(amax, v[1]);
            }
        xmin = d->x0 + amin;
        xmax = d->x0 + d->width - 1 + amax;
        ymin = d->y0 + dmin;
        ymax = d->y0 + d->height - 1 + dmax;
    }
    for (int j = 0; !s->grid.v && j <= 8; j++)
        for (int i = 0; i <= 8; i++) {
            const double X = d->x0 + (d->width - 1) * i / 8.0;
            const double Y = d->y0 + (d->height - 1) * j / 8.0;
            const double sx = X + gg_coreg_fit_eval(&s->fit, 1, X, Y);
            const double sy = Y + gg_coreg_fit_eval(&s->fit, 0, X, Y);
            xmin = fmin(xmin, sx);
            xmax = fmax(xmax, sx);
            ymin = fmin(ymin, sy);
            ymax = fmax(ymax, sy);
        }
    const int W = s->p.src_w, H = s->p.src_h, m = 6;
    if (d->width <= 0 || d->height <= 0 || xmax < -m || ymax < -m || xmin > W + m ||
        ymin > H + m || !isfinite(xmin + xmax + ymin + ymax)) {
        src->x0 = src->y0 = src->width = src->height = 0;
        return;
    }
    const int x0 = (int)fmax(0, floor(xmin) - m), x1 = (int)fmin(W - 1, ceil(xmax) + m);
    const int y0 = (int)fmax(0, floor(ymin) - m), y1 = (int)fmin(H - 1, ceil(ymax) + m);
    if (x1 < x0 || y1 < y0) {
        src->x0 = src->y0 = src->width = src->height = 0;
        return;
    }
    src->x0 = x0;
    src->y0 = y0;
    src->width = x1 - x0 + 1;
    src->height = y1 - y0 + 1;
}

static gg_status rs_run(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst)
{
    (void)band;
    const rs_state *s = op->state;
    gg_tile view = gg_op_source_view(op, src, dst);
    gg_rs_params p = s->p;
    p.tile_x0 = view.x0;
    p.tile_y0 = view.y0;
    p.tile_w = view.width;
    p.tile_h = view.height;
    p.dst_x0 = dst->x0;
    p.dst_y0 = dst->y0;
    p.has_nodata = op->src_has_nodata;
    p.nodata = (float)op->src_nodata;
    p.dst_nodata = (float)op->dst_nodata;
    if (!s->grid.v)
        return gg_op_run_kernel(ctx, &view, dst, GG_K_RS_RESAMPLE, &p, sizeof p);
    /* the nodes this tile interpolates from, uploaded with the source */
    const rs_grid *g = &s->grid;
    int i0, i1, j0, j1;
    rs_node_range(dst->x0, dst->x0 + dst->width - 1, g->x0, g->dx, g->nx, &i0, &i1);
    rs_node_range(dst->y0, dst->y0 + dst->height - 1, g->y0, g->dy, g->ny, &j0, &j1);
    p.gi0 = i0;
    p.gj0 = j0;
    p.gnx = i1 - i0 + 1;
    p.gny = j1 - j0 + 1;
    const size_t row = sizeof(float) * 2 * (size_t)p.gnx;
    float *sub = malloc(row * (size_t)p.gny);
    if (!sub)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "resample: out of host memory");
    for (int j = 0; j < p.gny; j++)
        memcpy(sub + 2 * (size_t)j * p.gnx, g->v + 2 * ((size_t)(j0 + j) * g->nx + i0), row);
    gg_buffer *bin, *bgrid, *bout;
    gg_status st = gg_rt_upload_tile(ctx, 0, &view, &bin);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 2, row * (size_t)p.gny, &bgrid);
    if (st == GG_OK)
        st = gg_buffer_write(ctx, bgrid, 0, sub, row * (size_t)p.gny);
    free(sub);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 1, (size_t)dst->width * dst->height * gg_type_size(dst->type), &bout);
    if (st != GG_OK)
        return st;
    gg_buffer *bufs[3] = {bin, bgrid, bout};
    st = gg_rt_launch(ctx, GG_K_RS_RESAMPLE_GRID, dst->width, dst->height, &p, sizeof p, bufs, 3);
    return st == GG_OK ? gg_rt_download_tile(ctx, bout, dst) : st;
}

static double rs_bytes_per_pixel(const gg_op *op)
{
    /* output + about as much input (offsets are small) with its halo */
    return 2.5 * (double)gg_type_size(op->in.type);
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option resample_options[] = {
    {"poly", NULL, GG_OPTION_STRING, 0, 0, NULL, NULL,
     "the fit: its JSON, a JSON file, or 'd0,d1,..;a0,a1,..' (down;across "
     "pixel-monomial coefficients)", 0},
    {"grid", NULL, GG_OPTION_STRING, 0, 0, NULL, NULL,
     "dense offsets instead of poly: 'nx,ny,x0,y0,dx,dy;down values;across "
     "values' (nodes at primary pixel x0 + i dx, y0 + j dy; bilinear "
     "between) or a file holding it", 0},
    {"interp", "-interp", GG_OPTION_CHOICE, 0, 0, "sinc8", "nearest,bilinear,bicubic,sinc4,sinc8",
     "nearest, bilinear, bicubic, sinc4 (GMTSAR) or sinc8", 0},
    {"carrier", NULL, GG_OPTION_STRING, 0, 0, "none", NULL,
     "the complex secondary's carrier 'azimuth,range' in cycles per pixel "
     "(demodulated before the interpolation, restored at the sample point), "
     "or none", 0},
    {"outsize", NULL, GG_OPTION_SIZE, 1, 10000000, NULL, NULL,
     "output size WxH, the primary's (default: the input size)", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_resample = {
    .name = "resample",
    .description = "resample a secondary SLC onto the primary grid from a coregistration "
                   "polynomial (gdal_coreg's fit) or a dense offset grid",
    .options = resample_options,
    .state_size = sizeof(rs_state),
    .prefers_tiles = 1,
    .init = rs_init,
    .set = rs_set,
    .prepare = rs_prepare,
    .source_window = rs_source_window,
    .run = rs_run,
    .bytes_per_pixel = rs_bytes_per_pixel,
    .cleanup = rs_cleanup,
};
