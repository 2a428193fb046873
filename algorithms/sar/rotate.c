/*
 * rotate.c -- rotation about the image centre and scaling, inverse-mapped
 * with bilinear interpolation.  The geometry is OpenCV's
 * getRotationMatrix2D(centre, angle, scale) + warpAffine: positive angles
 * turn the picture counter-clockwise as displayed (y down), pixel i has its
 * centre at coordinate i, and the source centre ((W-1)/2, (H-1)/2) lands on
 * the output centre.  Unlike warpAffine the weights are exact (OpenCV
 * quantises them to 1/32 pixel) and nodata is honoured (see the kernel).
 * The output geotransform is the input's composed with the inverse map, so
 * the rotated raster still lies on the ground where the input did.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "rotate.h"

#include <math.h>
#include <string.h>
#include <strings.h>

typedef struct {
    double angle, scale;
    int out_w, out_h; /* 0 = input size */
    gg_rotate_params p;
} rot_state;

static void rot_init(gg_op *op)
{
    rot_state *s = op->state;
    s->scale = 1.0;
}

static gg_status rot_set(gg_op *op, const char *key, const char *value)
{
    rot_state *s = op->state;
    double v;
    if (!strcasecmp(key, "angle")) {
        if (!gg_parse_double(value, &v) || !isfinite(v))
            return gg_op_error(op, GG_ERR_ARGUMENT, "rotate: angle must be a finite number of degrees, not '%s'", value);
        s->angle = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "scale")) {
        if (!gg_parse_double(value, &v) || !isfinite(v) || v <= 0)
            return gg_op_error(op, GG_ERR_ARGUMENT, "rotate: scale must be a positive number, not '%s'", value);
        s->scale = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "outsize")) {
        int w, h;
        if (!gg_parse_pair(value, &w, &h) || w < 1 || h < 1 || w > 1000000 || h > 1000000)
            return gg_op_error(op, GG_ERR_ARGUMENT, "rotate: outsize must be positive integers like 1024x768, not '%s'", value);
        s->out_w = w;
        s->out_h = h;
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

void gg_rotate_geometry(double angle_deg, double scale, int W, int H, int Wo, int Ho,
                        int channels, gg_rotate_params *p)
{
    /* forward (OpenCV): d = s * [[cos, sin], [-sin, cos]] * (src - c_src);
     * inverse: src - c_src = (1/s) * [[cos, -sin], [sin, cos]] * d */
    const double a = angle_deg * (M_PI / 180.0), c = cos(a), sn = sin(a);
    memset(p, 0, sizeof *p);
    p->m00 = c / scale;
    p->m01 = -sn / scale;
    p->m10 = sn / scale;
    p->m11 = c / scale;
    p->src_cx = (W - 1) / 2.0;
    p->src_cy = (H - 1) / 2.0;
    p->dst_cx = (Wo - 1) / 2.0;
    p->dst_cy = (Ho - 1) / 2.0;
    p->max_sx = W - 0.5 + GG_ROTATE_EDGE_TOL;
    p->max_sy = H - 0.5 + GG_ROTATE_EDGE_TOL;
    p->src_w = W;
    p->src_h = H;
    p->channels = channels;
}

static gg_status rot_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    rot_state *s = op->state;
    out->width = s->out_w ? s->out_w : in->width;
    out->height = s->out_h ? s->out_h : in->height;
    out->type = in->type;
    gg_rotate_params *p = &s->p;
    gg_rotate_geometry(s->angle, s->scale, in->width, in->height, out->width, out->height,
                       in->type == GG_CFLOAT32 ? 2 : 1, p);
    /* Geotransform: output corner coordinates (P, L) map to input corner
     * coordinates p = A0 + A1 P + A2 L, l = B0 + B1 P + B2 L (pixel centres
     * are at +0.5 in GDAL's convention, at +0 in the kernel's). */
    const double A1 = p->m00, A2 = p->m01, B1 = p->m10, B2 = p->m11;
    const double A0 = p->src_cx + 0.5 - A1 * (p->dst_cx + 0.5) - A2 * (p->dst_cy + 0.5);
    const double B0 = p->src_cy + 0.5 - B1 * (p->dst_cx + 0.5) - B2 * (p->dst_cy + 0.5);
    const double *g = in->geotransform;
    double gt[6] = {g[0] + g[1] * A0 + g[2] * B0, g[1] * A1 + g[2] * B1, g[1] * A2 + g[2] * B2,
                    g[3] + g[4] * A0 + g[5] * B0, g[4] * A1 + g[5] * B1, g[4] * A2 + g[5] * B2};
    memcpy(out->geotransform, gt, sizeof gt);
    out->has_geotransform = in->has_geotransform;
    return GG_OK;
}

/* Source window: the 2x2 cells that the output window's pixel centres
 * sample, i.e. the bounding box of its four corner centres mapped back
 * (the map is affine), clamped like the kernel clamps, plus a pixel of
 * margin for rounding. */
static void rot_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const rot_state *s = op->state;
    const gg_rotate_params *p = &s->p;
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int k = 0; k < 4; k++) {
        const double dx = (d->x0 + ((k & 1) ? d->width - 1 : 0)) - p->dst_cx;
        const double dy = (d->y0 + ((k & 2) ? d->height - 1 : 0)) - p->dst_cy;
        const double sx = p->src_cx + p->m00 * dx + p->m01 * dy;
        const double sy = p->src_cy + p->m10 * dx + p->m11 * dy;
        xmin = fmin(xmin, sx);
        xmax = fmax(xmax, sx);
        ymin = fmin(ymin, sy);
        ymax = fmax(ymax, sy);
    }
    if (d->width <= 0 || d->height <= 0 || xmax < -0.5 || ymax < -0.5 || xmin > p->src_w - 0.5 ||
        ymin > p->src_h - 0.5) {
        src->x0 = src->y0 = src->width = src->height = 0;
        return;
    }
    const double x0 = floor(fmin(fmax(xmin, 0.0), p->src_w - 1.0)) - 1;
    const double x1 = floor(fmin(fmax(xmax, 0.0), p->src_w - 1.0)) + 2;
    const double y0 = floor(fmin(fmax(ymin, 0.0), p->src_h - 1.0)) - 1;
    const double y1 = floor(fmin(fmax(ymax, 0.0), p->src_h - 1.0)) + 2;
    src->x0 = (int)x0;
    src->y0 = (int)y0;
    src->width = (int)(x1 - x0) + 1;
    src->height = (int)(y1 - y0) + 1;
}

static gg_status rot_run(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst)
{
    (void)band;
    const rot_state *s = op->state;
    gg_tile view = gg_op_source_view(op, src, dst);
    gg_rotate_params p = s->p;
    p.tile_x0 = view.x0;
    p.tile_y0 = view.y0;
    p.tile_w = view.width;
    p.tile_h = view.height;
    p.dst_x0 = dst->x0;
    p.dst_y0 = dst->y0;
    p.has_nodata = op->src_has_nodata;
    p.nodata = (float)op->src_nodata;
    p.dst_nodata = (float)op->dst_nodata;
    return gg_op_run_kernel(ctx, &view, dst, GG_K_ROTATE, &p, sizeof p);
}

static double rot_bytes_per_pixel(const gg_op *op)
{
    const rot_state *s = op->state;
    /* a block of output rows needs up to ~2/scale^2 as many input pixels
     * (rotated bounding box) */
    const double es = (double)gg_type_size(op->in.type);
    return es * (1.0 + 2.0 / (s->scale * s->scale));
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option rotate_options[] = {
    {"angle", "-angle", GG_OPTION_FLOAT, -GG_UNBOUNDED, GG_UNBOUNDED, "0", NULL,
     "rotation in degrees, counter-clockwise as displayed", 1},
    {"scale", "-scale", GG_OPTION_FLOAT, 0, GG_UNBOUNDED, "1", NULL,
     "scale factor (>0)", 0},
    {"outsize", "-outsize", GG_OPTION_SIZE, 1, 1000000, NULL, NULL,
     "output size WxH (default: the input size)", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_rotate = {
    .name = "rotate",
    .description = "rotate about the image centre and scale, bilinear interpolation "
                   "(OpenCV getRotationMatrix2D + warpAffine geometry)",
    .options = rotate_options,
    .state_size = sizeof(rot_state),
    .prefers_tiles = 1,
    .init = rot_init,
    .set = rot_set,
    .prepare = rot_prepare,
    .source_window = rot_source_window,
    .run = rot_run,
    .bytes_per_pixel = rot_bytes_per_pixel,
};
