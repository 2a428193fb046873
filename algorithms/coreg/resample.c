/*
 * resample.c -- the secondary SLC resampled onto the primary grid from a
 * coregistration polynomial (the "resample" op; gg_coreg_fit for the
 * polynomial and its conventions).  Output pixel (X, Y) is the secondary
 * sampled at (X + across(X, Y), Y + down(X, Y)), pixel centres at integers,
 * with nearest, bilinear, bicubic (Keys -0.5), GMTSAR resamp's 4x4 sinc or
 * an 8x8 Hann-windowed sinc (default).  Real and imaginary parts are
 * interpolated separately with no Doppler deramping (as GMTSAR resamp).
 * Pixels that map outside the secondary are nodata (NaN by default).
 *
 * MIT licence.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "coreg_params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    gg_coreg_fit fit;
    int have_poly;
    int kind;
    int out_w, out_h;
    gg_rs_params p;
} rs_state;

static const char *const kind_names[] = {"nearest", "bilinear", "bicubic", "sinc4", "sinc8"};

static void rs_init(gg_op *op)
{
    rs_state *s = op->state;
    s->kind = GG_RS_SINC8;
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
    if (!strcasecmp(key, "interp")) {
        for (int k = 0; k < 5; k++)
            if (!strcasecmp(value, kind_names[k])) {
                s->kind = k;
                return GG_OK;
            }
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: interp must be nearest, bilinear, "
                           "bicubic, sinc4 or sinc8, not '%s'", value);
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
    if (!s->have_poly)
        return gg_op_error(op, GG_ERR_ARGUMENT, "resample: needs poly= (the coregistration fit: "
                           "JSON, a file, or 'down coefficients;across coefficients')");
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
    return GG_OK;
}

/* Bounding box of the mapped positions over the output window (sampled
 * on a 9 x 9 grid: the polynomials are at most cubic and smooth over a
 * block) plus the widest kernel's reach and a pixel of margin. */
static void rs_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const rs_state *s = op->state;
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int j = 0; j <= 8; j++)
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
    return gg_op_run_kernel(ctx, &view, dst, GG_K_RS_RESAMPLE, &p, sizeof p);
}

static double rs_bytes_per_pixel(const gg_op *op)
{
    /* output + about as much input (offsets are small) with its halo */
    return 2.5 * (double)gg_type_size(op->in.type);
}

const gg_op_class gg_op_resample = {
    .name = "resample",
    .description = "resample a secondary SLC onto the primary grid from a coregistration "
                   "polynomial (gdal_coreg's fit)",
    .options = "poly|string||the fit: its JSON, a JSON file, or 'd0,d1,..;a0,a1,..' "
               "(down;across pixel-monomial coefficients)\n"
               "interp|string|sinc8|nearest, bilinear, bicubic, sinc4 (GMTSAR) or sinc8\n"
               "outsize|size||output size WxH, the primary's (default: the input size)\n",
    .state_size = sizeof(rs_state),
    .prefers_tiles = 1,
    .init = rs_init,
    .set = rs_set,
    .prepare = rs_prepare,
    .source_window = rs_source_window,
    .run = rs_run,
    .bytes_per_pixel = rs_bytes_per_pixel,
};
