/*
 * multilook.c -- averages non-overlapping looks_x x looks_y blocks:
 * intensity |z|^2 of complex input (or, with complex=yes, the complex
 * values), the values themselves for real input.  Partial edge blocks are
 * dropped; the geotransform is scaled so that output pixel (0,0) covers the
 * same ground as the first block.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "sar_params.h"

#include <math.h>
#include <string.h>
#include <strings.h>

typedef struct {
    int lx, ly, complex_mean, mode;
} ml_state;

static void ml_init(gg_op *op)
{
    ml_state *s = op->state;
    s->lx = s->ly = 1;
}

static gg_status ml_set(gg_op *op, const char *key, const char *value)
{
    ml_state *s = op->state;
    if (!strcasecmp(key, "looks")) {
        int a, b;
        if (!gg_parse_pair(value, &a, &b) || a < 1 || b < 1)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "multilook: looks must be positive integers like 4x4, not '%s'", value);
        s->lx = a;
        s->ly = b;
        return GG_OK;
    }
    if (!strcasecmp(key, "complex")) {
        if (!gg_parse_bool(value, &s->complex_mean))
            return gg_op_error(op, GG_ERR_ARGUMENT, "multilook: complex must be yes or no");
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

static gg_status ml_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    ml_state *s = op->state;
    if (s->lx > in->width || s->ly > in->height)
        return gg_op_error(op, GG_ERR_ARGUMENT, "multilook: looks %dx%d larger than the %dx%d image",
                           s->lx, s->ly, in->width, in->height);
    out->width = in->width / s->lx;
    out->height = in->height / s->ly;
    if (in->type == GG_CFLOAT32) {
        s->mode = s->complex_mean ? GG_ML_COMPLEX : GG_ML_INTENSITY;
        out->type = s->complex_mean ? GG_CFLOAT32 : GG_FLOAT32;
    } else {
        s->mode = GG_ML_REAL;
        out->type = GG_FLOAT32;
    }
    const double *g = in->geotransform;
    out->has_geotransform = in->has_geotransform;
    double gt[6] = {g[0], g[1] * s->lx, g[2] * s->ly, g[3], g[4] * s->lx, g[5] * s->ly};
    memcpy(out->geotransform, gt, sizeof gt);
    return GG_OK;
}

static void ml_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const ml_state *s = op->state;
    src->x0 = d->x0 * s->lx;
    src->y0 = d->y0 * s->ly;
    src->width = d->width * s->lx;
    src->height = d->height * s->ly;
}

static gg_status ml_run(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst)
{
    (void)band;
    const ml_state *s = op->state;
    gg_tile view = gg_op_source_view(op, src, dst);
    gg_multilook_params p = {.in_stride = view.width,
                             .looks_x = s->lx,
                             .looks_y = s->ly,
                             .mode = s->mode,
                             .has_nodata = op->src_has_nodata,
                             .nodata = (float)op->src_nodata,
                             .dst_nodata = (float)op->dst_nodata};
    return gg_op_run_kernel(ctx, &view, dst, GG_K_MULTILOOK, &p, sizeof p);
}

static double ml_bytes_per_pixel(const gg_op *op)
{
    const ml_state *s = op->state;
    return (double)s->lx * s->ly * gg_type_size(op->in.type) + gg_type_size(op->out.type);
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option multilook_options[] = {
    {"looks", "-looks", GG_OPTION_SIZE, 1, GG_INT_MAX, "1x1", NULL,
     "looks along x (range) and y (azimuth), e.g. 4x4", 1},
    {"complex", "-complex", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "average complex values instead of intensity |z|^2", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_multilook = {
    .name = "multilook",
    .description = "average non-overlapping blocks of looks_x x looks_y pixels "
                   "(intensity of complex input, or complex mean with complex=yes)",
    .options = multilook_options,
    .state_size = sizeof(ml_state),
    .init = ml_init,
    .set = ml_set,
    .prepare = ml_prepare,
    .source_window = ml_source_window,
    .run = ml_run,
    .bytes_per_pixel = ml_bytes_per_pixel,
};
