/*
 * radnorm.c -- row/column gain normalisation ("quantisation" in the
 * airborne-SAR paper):
 *     F(x,y) = coef * I(x,y) * M / (Rmean(y) * Cmean(x))
 * with M the global mean and Rmean/Cmean the means of row y and column x,
 * all over valid pixels only.  If I = g(y) h(x) sigma, F = coef * sigma /
 * mean(sigma): both gain profiles are removed and the output mean is coef.
 * The paper's printed formula drops the pixel value I(x,y); it is restored.
 * levels=n writes F rounded and clamped to 0..n-1 as Byte.
 * Complex input is normalised on its amplitude |z|.
 *
 * Two passes: gg_op_accumulate over every input tile (one fused read gives
 * row and column sums), then gg_op_run per output tile.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "sar_params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    double *row_sum, *row_cnt, *col_sum, *col_cnt; /* accumulating */
    float *rmean, *cmean;                          /* finished */
    double mean;
    int done;
} rn_band;

typedef struct {
    double coef;
    int levels;
    int nbands;
    rn_band *bands;
} rn_state;

static void rn_init(gg_op *op)
{
    rn_state *s = op->state;
    s->coef = 1.0;
}

static gg_status rn_set(gg_op *op, const char *key, const char *value)
{
    rn_state *s = op->state;
    if (!strcasecmp(key, "coef")) {
        double v;
        if (!gg_parse_double(value, &v) || !isfinite(v) || v <= 0)
            return gg_op_error(op, GG_ERR_ARGUMENT, "radnorm: coef must be a positive number, not '%s'", value);
        s->coef = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "levels")) {
        int v;
        if (!gg_parse_int(value, &v) || v == 1 || v < 0 || v > 255)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "radnorm: levels must be 0 (no quantisation) or 2..255, not '%s'", value);
        s->levels = v;
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

static void rn_free_bands(rn_state *s)
{
    for (int b = 0; b < s->nbands; b++) {
        free(s->bands[b].row_sum);
        free(s->bands[b].rmean);
    }
    free(s->bands);
    s->bands = NULL;
    s->nbands = 0;
}

static void rn_cleanup(gg_op *op) { rn_free_bands(op->state); }

static gg_status rn_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    rn_state *s = op->state;
    out->width = in->width;
    out->height = in->height;
    out->type = s->levels ? GG_BYTE : GG_FLOAT32;
    /* a quantised level must never read as nodata */
    if (s->levels && op->opt_dstnodata_set && op->opt_dstnodata >= 0 && op->opt_dstnodata < s->levels)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "radnorm: dstnodata %g is one of the levels 0..%d", op->opt_dstnodata,
                           s->levels - 1);
    memcpy(out->geotransform, in->geotransform, sizeof out->geotransform);
    out->has_geotransform = in->has_geotransform;
    rn_free_bands(s);
    s->bands = calloc((size_t)in->bands, sizeof *s->bands);
    if (!s->bands)
        return gg_op_error(op, GG_ERR_NOMEM, "radnorm: out of memory");
    s->nbands = in->bands;
    const size_t W = (size_t)in->width, H = (size_t)in->height;
    for (int b = 0; b < in->bands; b++) {
        rn_band *bd = &s->bands[b];
        bd->row_sum = calloc(2 * (H + W), sizeof(double)); /* one block: row sum/cnt, col sum/cnt */
        bd->rmean = malloc((H + W) * sizeof(float));
        if (!bd->row_sum || !bd->rmean)
            return gg_op_error(op, GG_ERR_NOMEM, "radnorm: out of memory");
        bd->row_cnt = bd->row_sum + H;
        bd->col_sum = bd->row_cnt + H;
        bd->col_cnt = bd->col_sum + W;
        bd->cmean = bd->rmean + H;
    }
    return GG_OK;
}

static void rn_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    (void)op;
    *src = *d;
}

/* Uploads a tile as float: complex tiles become |z| (invalid -> NaN). */
static gg_status upload_float(gg_context *ctx, gg_op *op, const gg_tile *t, gg_buffer **out)
{
    gg_buffer *raw;
    gg_status st = gg_rt_upload_tile(ctx, 0, t, &raw);
    if (st != GG_OK || t->type == GG_FLOAT32) {
        *out = raw;
        return st;
    }
    st = gg_rt_scratch(ctx, 2, (size_t)t->width * t->height * 4, out);
    if (st != GG_OK)
        return st;
    gg_cabs_params p = {.has_nodata = op->src_has_nodata, .nodata = (float)op->src_nodata};
    gg_buffer *bufs[2] = {raw, *out};
    return gg_rt_launch(ctx, GG_K_CABS, t->width, t->height, &p, sizeof p, bufs, 2);
}

static gg_status rn_accumulate(gg_context *ctx, gg_op *op, int band, const gg_tile *src)
{
    rn_state *s = op->state;
    rn_band *bd = &s->bands[band];
    if (src->width == 0 || src->height == 0)
        return GG_OK;
    gg_buffer *img;
    const size_t W = (size_t)src->width, H = (size_t)src->height;
    gg_status st = upload_float(ctx, op, src, &img);
    if (st != GG_OK)
        return st;
    gg_buffer *rs, *rc, *cs, *cc;
    if ((st = gg_rt_scratch(ctx, 4, H * 8, &rs)) != GG_OK || (st = gg_rt_scratch(ctx, 5, H * 8, &rc)) != GG_OK ||
        (st = gg_rt_scratch(ctx, 6, W * 8, &cs)) != GG_OK || (st = gg_rt_scratch(ctx, 7, W * 8, &cc)) != GG_OK)
        return st;
    gg_rowcol_args a = {.width = (int)W,
                        .height = (int)H,
                        .stride = (int)W,
                        .has_nodata = src->type == GG_FLOAT32 && op->src_has_nodata,
                        .nodata = (float)op->src_nodata};
    st = gg_rt_check(ctx,
                     gg_rt_vt(ctx)->rowcol_sums(gg_rt_dev(ctx), gg_rt_mem(img), &a, gg_rt_mem(rs),
                                                gg_rt_mem(rc), gg_rt_mem(cs), gg_rt_mem(cc)),
                     "row/column sums");
    double *host = malloc(2 * (H + W) * sizeof(double));
    if (!host)
        return gg_op_error(op, GG_ERR_NOMEM, "radnorm: out of memory");
    if (st == GG_OK)
        st = gg_buffer_read(ctx, rs, 0, host, H * 8);
    if (st == GG_OK)
        st = gg_buffer_read(ctx, rc, 0, host + H, H * 8);
    if (st == GG_OK)
        st = gg_buffer_read(ctx, cs, 0, host + 2 * H, W * 8);
    if (st == GG_OK)
        st = gg_buffer_read(ctx, cc, 0, host + 2 * H + W, W * 8);
    if (st == GG_OK) {
        for (size_t y = 0; y < H; y++) {
            bd->row_sum[src->y0 + y] += host[y];
            bd->row_cnt[src->y0 + y] += host[H + y];
        }
        for (size_t x = 0; x < W; x++) {
            bd->col_sum[src->x0 + x] += host[2 * H + x];
            bd->col_cnt[src->x0 + x] += host[2 * H + W + x];
        }
        bd->done = 0;
    }
    free(host);
    return st;
}

static void rn_reset_stats(gg_op *op, int band)
{
    rn_state *s = op->state;
    rn_band *bd = &s->bands[band];
    const size_t W = (size_t)op->in.width, H = (size_t)op->in.height;
    memset(bd->row_sum, 0, 2 * (H + W) * sizeof(double));
    bd->done = 0;
}

static gg_status rn_finish_stats(gg_context *ctx, gg_op *op, int band)
{
    (void)ctx;
    rn_state *s = op->state;
    rn_band *bd = &s->bands[band];
    const int W = op->in.width, H = op->in.height;
    double sum = 0, cnt = 0;
    for (int y = 0; y < H; y++) {
        sum += bd->row_sum[y];
        cnt += bd->row_cnt[y];
        bd->rmean[y] = bd->row_cnt[y] > 0 ? (float)(bd->row_sum[y] / bd->row_cnt[y]) : NAN;
    }
    for (int x = 0; x < W; x++)
        bd->cmean[x] = bd->col_cnt[x] > 0 ? (float)(bd->col_sum[x] / bd->col_cnt[x]) : NAN;
    if (cnt <= 0)
        return gg_op_error(op, GG_ERR_ARGUMENT, "radnorm: band %d has no valid pixels", band + 1);
    bd->mean = sum / cnt;
    if (!(bd->mean > 0))
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "radnorm: band %d has a non-positive mean (%g); the input must be "
                           "amplitude or intensity", band + 1, bd->mean);
    bd->done = 1;
    return GG_OK;
}

static gg_status rn_run(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst)
{
    rn_state *s = op->state;
    const rn_band *bd = &s->bands[band];
    if (!bd->done)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "radnorm: statistics of band %d were not computed (gg_op_accumulate "
                           "over the whole input, then gg_op_finish_stats)", band + 1);
    gg_tile view = gg_op_source_view(op, src, dst);
    gg_buffer *img, *rm, *cm, *out;
    gg_status st = upload_float(ctx, op, &view, &img);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 4, (size_t)dst->height * 4, &rm);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 5, (size_t)dst->width * 4, &cm);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 1, (size_t)dst->width * dst->height * gg_type_size(dst->type), &out);
    if (st == GG_OK)
        st = gg_buffer_write(ctx, rm, 0, bd->rmean + dst->y0, (size_t)dst->height * 4);
    if (st == GG_OK)
        st = gg_buffer_write(ctx, cm, 0, bd->cmean + dst->x0, (size_t)dst->width * 4);
    if (st != GG_OK)
        return st;
    gg_radnorm_params p = {.scale = s->coef * bd->mean,
                           .has_nodata = view.type == GG_FLOAT32 && op->src_has_nodata,
                           .nodata = (float)op->src_nodata,
                           .dst_nodata = (float)op->dst_nodata,
                           .levels = s->levels,
                           .dst_nodata_u8 = s->levels ? (int)op->dst_nodata : 0};
    gg_buffer *bufs[4] = {img, rm, cm, out};
    st = gg_rt_launch(ctx, s->levels ? GG_K_RADNORM_Q : GG_K_RADNORM, dst->width, dst->height, &p,
                      sizeof p, bufs, 4);
    if (st == GG_OK)
        st = gg_rt_download_tile(ctx, out, dst);
    return st;
}

static double rn_bytes_per_pixel(const gg_op *op)
{
    return (double)gg_type_size(op->in.type) + 4.0 + gg_type_size(op->out.type);
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option radnorm_options[] = {
    {"coef", "-coef", GG_OPTION_FLOAT, 0, GG_UNBOUNDED, "1", NULL,
     "target mean of the output", 0},
    {"levels", "-levels", GG_OPTION_INT, 0, 255, "0", NULL,
     "quantise to this many Byte levels 0..levels-1, 2..255 (0: Float32 "
     "output; Byte nodata 255)", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_radnorm = {
    .name = "radnorm",
    .description = "row/column gain normalisation F = coef*I*M/(Rmean*Cmean), "
                   "optionally quantised to Byte levels",
    .options = radnorm_options,
    .state_size = sizeof(rn_state),
    .init = rn_init,
    .set = rn_set,
    .prepare = rn_prepare,
    .source_window = rn_source_window,
    .accumulate = rn_accumulate,
    .finish_stats = rn_finish_stats,
    .reset_stats = rn_reset_stats,
    .run = rn_run,
    .bytes_per_pixel = rn_bytes_per_pixel,
    .cleanup = rn_cleanup,
};
