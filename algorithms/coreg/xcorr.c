/*
 * xcorr.c -- dense sub-pixel offsets between two SLCs (a stack op: band 1
 * primary, band 2 secondary, CFloat32), quality mode: PyCuAmpcor's
 * estimator (xcorr_engine.c) on a regular grid of windows.
 *
 * Output pixel (X, Y) is window (X, Y): its template (window w x h) starts
 * at primary pixel (start_x + X skip_x, start_y + Y skip_y); the search
 * chip in the secondary starts search (+ gross) before it and is
 * 2 search larger.  Seven Float32 bands per window:
 *   1 offset_down, 2 offset_across  (secondary = primary + offset, px)
 *   3 snr                            (peak^2 / mean square around it)
 *   4-6 cov_down, cov_across, cov_down_across  (px^2; 99 = unreliable)
 *   7 peak                           (NCC peak of the oversampled surface)
 *   8 peak_ratio                     (raw NCC peak over the highest other
 *                                     local maximum: ~1 for pure noise)
 * Windows whose template or chip has fewer valid samples than minvalid
 * (NaN, nodata, outside the image) are nodata in every band: never an
 * abort.  The output geotransform places pixel (X, Y) at the template's
 * centre (in input pixel/line units when the input has none).
 *
 * MIT licence.
 */
#include "../op.h"
#include "xcorr_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    int ww, wh;        /* window */
    int sx, sy;        /* half search */
    int kx, ky;        /* skip */
    int x0, y0;        /* start (-1: default) */
    int gx, gy;        /* gross offset */
    int nx, ny;        /* window count (0: as many as fit) */
    int zoom, ovs, deramp, snrwin;
    double minvalid;
    double dst_nodata;
} xc_state;

static const char *const band_names[GG_XC_NBANDS] = {
    "offset_down", "offset_across", "snr", "cov_down", "cov_across", "cov_down_across", "peak",
    "peak_ratio"};

static void xc_init(gg_op *op)
{
    xc_state *s = op->state;
    s->ww = s->wh = 64;
    s->sx = s->sy = 20;
    s->kx = s->ky = 64;
    s->x0 = s->y0 = -1;
    s->zoom = 16;
    s->ovs = 64;
    s->deramp = 1;
    s->snrwin = 21;
    s->minvalid = 0.9;
    s->dst_nodata = NAN;
}

static gg_status pair(gg_op *op, const char *key, const char *value, int lo, int *a, int *b)
{
    int u, v;
    /* at most 1e6: window positions are sums and products of these in int */
    if (!gg_parse_pair(value, &u, &v) || u < lo || v < lo || u > 1000000 || v > 1000000)
        return gg_op_error(op, GG_ERR_ARGUMENT, "xcorr: %s must be two integers in %d..1000000 "
                           "like 64x32, not '%s'", key, lo, value);
    *a = u;
    *b = v;
    return GG_OK;
}

/* gg_parse_pair takes no signs: gross offsets may be negative */
static int parse_signed_pair(const char *s, int *a, int *b)
{
    char *end;
    long u = strtol(s, &end, 10);
    if (end == s)
        return 0;
    if (!*end) {
        if (u < -1000000 || u > 1000000) /* also strtol's LONG_MIN: no labs */
            return 0;
        *a = *b = (int)u;
        return 1;
    }
    if (*end != 'x' && *end != 'X' && *end != ',')
        return 0;
    const char *t = end + 1;
    long v = strtol(t, &end, 10);
    if (end == t || *end || u < -1000000 || u > 1000000 || v < -1000000 || v > 1000000)
        return 0;
    *a = (int)u;
    *b = (int)v;
    return 1;
}

static gg_status xc_set(gg_op *op, const char *key, const char *value)
{
    xc_state *s = op->state;
    if (!strcasecmp(key, "window"))
        return pair(op, key, value, 4, &s->ww, &s->wh);
    if (!strcasecmp(key, "search"))
        return pair(op, key, value, 1, &s->sx, &s->sy);
    if (!strcasecmp(key, "skip"))
        return pair(op, key, value, 1, &s->kx, &s->ky);
    if (!strcasecmp(key, "start"))
        return pair(op, key, value, 0, &s->x0, &s->y0);
    if (!strcasecmp(key, "count"))
        return pair(op, key, value, 1, &s->nx, &s->ny);
    if (!strcasecmp(key, "gross")) {
        if (!parse_signed_pair(value, &s->gx, &s->gy))
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "xcorr: gross must be two integers (pixels) like 3x-2, not '%s'", value);
        return GG_OK;
    }
    if (!strcasecmp(key, "zoom")) {
        int v;
        if (!gg_parse_int(value, &v) || v < 4 || v > 64 || v % 4)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "xcorr: zoom (zoom window, samples) must be a multiple of 4 in 4..64, "
                               "not '%s'", value);
        s->zoom = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "ovs")) {
        int v;
        if (!gg_parse_int(value, &v) || v < 1 || v > 256)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "xcorr: ovs (surface oversampling) must be in 1..256, not '%s'", value);
        s->ovs = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "deramp")) {
        if (!gg_parse_bool(value, &s->deramp))
            return gg_op_error(op, GG_ERR_ARGUMENT, "xcorr: deramp must be yes or no, not '%s'", value);
        return GG_OK;
    }
    if (!strcasecmp(key, "snrwindow")) {
        int v;
        if (!gg_parse_int(value, &v) || v < 3 || v % 2 == 0)
            return gg_op_error(op, GG_ERR_ARGUMENT, "xcorr: snrwindow must be odd and >= 3, not '%s'",
                               value);
        s->snrwin = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "minvalid")) {
        double v;
        if (!gg_parse_double(value, &v) || !(v > 0.0 && v <= 1.0))
            return gg_op_error(op, GG_ERR_ARGUMENT, "xcorr: minvalid must be in (0, 1], not '%s'",
                               value);
        s->minvalid = v;
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

static int start_x(const xc_state *s) { return s->x0 >= 0 ? s->x0 : (s->sx - s->gx > 0 ? s->sx - s->gx : 0); }
static int start_y(const xc_state *s) { return s->y0 >= 0 ? s->y0 : (s->sy - s->gy > 0 ? s->sy - s->gy : 0); }

static gg_status xc_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    xc_state *s = op->state;
    if (in->type != GG_CFLOAT32)
        return gg_op_error(op, GG_ERR_UNSUPPORTED,
                           "xcorr: inputs must be complex SLCs (CFloat32 or CInt16); real (detected) "
                           "input is not supported");
    if (in->bands != 2)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "xcorr: needs exactly 2 bands (primary, secondary), got %d", in->bands);
    const int hz = s->zoom / 4;
    if (hz > s->sx || hz > s->sy)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "xcorr: zoom window %d needs a half search of at least %d px (have %dx%d)",
                           s->zoom, hz, s->sx, s->sy);
    const int sw = s->ww + 2 * s->sx, sh = s->wh + 2 * s->sy;
    if (sw > in->width || sh > in->height)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "xcorr: search chip %dx%d (window + 2 x search) larger than the %dx%d image",
                           sw, sh, in->width, in->height);
    const int x0 = start_x(s), y0 = start_y(s);
    int nx = s->nx, ny = s->ny;
    const int fx = in->width - x0 - s->gx + s->sx - sw, fy = in->height - y0 - s->gy + s->sy - sh;
    if (!nx)
        nx = fx >= 0 ? fx / s->kx + 1 : 0;
    if (!ny)
        ny = fy >= 0 ? fy / s->ky + 1 : 0;
    if (nx < 1 || ny < 1 || x0 >= in->width || y0 >= in->height)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "xcorr: no window fits: start %d,%d, window %dx%d, search %dx%d, gross "
                           "%d,%d in a %dx%d image", x0, y0, s->ww, s->wh, s->sx, s->sy, s->gx,
                           s->gy, in->width, in->height);
    /* count= with a large skip: the last window's position must stay an int */
    if ((double)x0 + (double)(nx - 1) * s->kx > 1e9 || (double)y0 + (double)(ny - 1) * s->ky > 1e9)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "xcorr: count %dx%d with skip %dx%d reaches past pixel 1e9", nx, ny,
                           s->kx, s->ky);
    if (!op->opt_dstnodata_set) { /* 0 is a real offset: NaN unless given */
        op->opt_dstnodata_set = 1;
        op->opt_dstnodata = NAN;
    }
    s->dst_nodata = op->opt_dstnodata;
    s->nx = nx;
    s->ny = ny;
    out->width = nx;
    out->height = ny;
    out->bands = GG_XC_NBANDS;
    out->type = GG_FLOAT32;
    /* pixel (X, Y) centred on its template's centre */
    const double *g = in->has_geotransform ? in->geotransform : (const double[6]){0, 1, 0, 0, 0, 1};
    const double cx = x0 + 0.5 * s->ww - 0.5 * s->kx, cy = y0 + 0.5 * s->wh - 0.5 * s->ky;
    out->geotransform[0] = g[0] + g[1] * cx + g[2] * cy;
    out->geotransform[1] = g[1] * s->kx;
    out->geotransform[2] = g[2] * s->ky;
    out->geotransform[3] = g[3] + g[4] * cx + g[5] * cy;
    out->geotransform[4] = g[4] * s->kx;
    out->geotransform[5] = g[5] * s->ky;
    out->has_geotransform = 1;
    return GG_OK;
}

static void xc_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const xc_state *s = op->state;
    const int x0 = start_x(s) + d->x0 * s->kx, y0 = start_y(s) + d->y0 * s->ky;
    const int x1 = start_x(s) + (d->x0 + d->width - 1) * s->kx + s->ww;
    const int y1 = start_y(s) + (d->y0 + d->height - 1) * s->ky + s->wh;
    const int cx0 = x0 + s->gx - s->sx, cy0 = y0 + s->gy - s->sy;
    const int cx1 = x1 + s->gx + s->sx, cy1 = y1 + s->gy + s->sy;
    src->x0 = x0 < cx0 ? x0 : cx0;
    src->y0 = y0 < cy0 ? y0 : cy0;
    src->width = (x1 > cx1 ? x1 : cx1) - src->x0;
    src->height = (y1 > cy1 ? y1 : cy1) - src->y0;
}

static void config(const gg_op *op, gg_xc_config *c)
{
    const xc_state *s = op->state;
    memset(c, 0, sizeof *c);
    c->rw = s->ww;
    c->rh = s->wh;
    c->hsx = s->sx;
    c->hsy = s->sy;
    c->zw = s->zoom;
    c->ovs = s->ovs;
    c->osf = 2;
    c->deramp = s->deramp;
    c->stat_half = s->snrwin / 2;
    c->min_valid = (float)s->minvalid;
    c->gross_x = (float)s->gx;
    c->gross_y = (float)s->gy;
    c->has_nodata = op->src_has_nodata;
    c->nodata = (float)op->src_nodata;
    c->dst_nodata = (float)s->dst_nodata;
}

static gg_status xc_run_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                              gg_tile *dst, int ndst)
{
    (void)nsrc;
    const xc_state *s = op->state;
    const gg_tile v1 = gg_op_source_view(op, &src[0], &dst[0]);
    const gg_tile v2 = gg_op_source_view(op, &src[1], &dst[0]);
    const size_t plane = (size_t)v1.width * v1.height * 8;
    gg_xc_config cfg;
    config(op, &cfg);
    const int W = dst[0].width, H = dst[0].height, n = W * H;
    const int B = gg_xc_pick_batch(ctx, &cfg, n);

    gg_buffer *tile;
    gg_status st = gg_rt_scratch(ctx, 0, 2 * plane, &tile);
    if (st == GG_OK)
        st = gg_rt_write_tile(ctx, tile, 0, 0, &v1);
    if (st == GG_OK)
        st = gg_rt_write_tile(ctx, tile, plane, 0, &v2);
    if (st != GG_OK)
        return st;
    gg_xc_engine *e = NULL;
    st = gg_xc_engine_new(ctx, &cfg, B, &e);
    if (st != GG_OK)
        return st;
    int *pos = malloc(sizeof(int) * 4 * (size_t)B);
    float *res = malloc(sizeof(float) * GG_XC_NBANDS * (size_t)B);
    if (!pos || !res)
        st = gg_rt_fail(ctx, GG_ERR_NOMEM, "xcorr: out of host memory");
    for (int first = 0; st == GG_OK && first < n; first += B) {
        const int m = n - first < B ? n - first : B;
        for (int i = 0; i < m; i++) {
            const int X = dst[0].x0 + (first + i) % W, Y = dst[0].y0 + (first + i) / W;
            const int rx = start_x(s) + X * s->kx, ry = start_y(s) + Y * s->ky;
            pos[4 * i] = rx - v1.x0;
            pos[4 * i + 1] = ry - v1.y0;
            pos[4 * i + 2] = rx + s->gx - s->sx - v1.x0;
            pos[4 * i + 3] = ry + s->gy - s->sy - v1.y0;
        }
        st = gg_xc_quality(e, tile, v1.width, v1.height, pos, m, res);
        for (int i = 0; st == GG_OK && i < m; i++) {
            const int x = (first + i) % W, y = (first + i) / W;
            for (int b = 0; b < ndst && b < GG_XC_NBANDS; b++)
                ((float *)dst[b].data)[(size_t)y * dst[b].stride + x] = res[GG_XC_NBANDS * i + b];
        }
    }
    free(pos);
    free(res);
    gg_xc_engine_free(e);
    return st;
}

static double xc_bytes_per_pixel(const gg_op *op)
{
    gg_xc_config c;
    config(op, &c);
    /* one output pixel is one window; the engine batches within a block */
    return gg_xc_bytes_per_window(&c);
}

static const char *xc_band_name(const gg_op *op, int band)
{
    (void)op;
    return band >= 0 && band < GG_XC_NBANDS ? band_names[band] : "";
}

static double xc_band_nodata(const gg_op *op, int band)
{
    (void)band;
    const xc_state *s = op->state;
    return s->dst_nodata;
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option xcorr_options[] = {
    {"window", "-window", GG_OPTION_SIZE, 4, 1000000, "64x64", NULL,
     "template (reference window) size across x down, e.g. 64x32", 0},
    {"search", "-search", GG_OPTION_SIZE, 1, 1000000, "20x20", NULL,
     "half search range across x down (px)", 0},
    {"skip", "-skip", GG_OPTION_SIZE, 1, 1000000, "64x64", NULL,
     "window spacing across x down (px)", 0},
    {"start", "-start", GG_OPTION_SIZE, 0, 1000000, NULL, NULL,
     "first template's top-left pixel (default: search - gross)", 0},
    {"count", "-count", GG_OPTION_SIZE, 1, 1000000, NULL, NULL,
     "windows across x down (default: all whose chip fits)", 0},
    {"gross", "-gross", GG_OPTION_SIZE, -1000000, 1000000, "0x0", NULL,
     "integer gross offset across x down added to the search chip", 0},
    {"zoom", "-zoom", GG_OPTION_INT, 4, 64, "16", NULL,
     "zoom window (samples of the x2 oversampled surface), multiple of 4", 0},
    {"ovs", "-ovs", GG_OPTION_INT, 1, 256, "64", NULL,
     "oversampling of the zoom surface", 0},
    {"deramp", "-noderamp", GG_OPTION_BOOL, 0, 1, "yes", NULL,
     "remove the mean phase ramp before oversampling", 0},
    {"snrwindow", "-snr_window", GG_OPTION_INT, 3, GG_INT_MAX, "21", NULL,
     "SNR statistics window (odd)", 0},
    {"minvalid", "-minvalid", GG_OPTION_FLOAT, 0, 1, "0.9", NULL,
     "least valid fraction of template and chip, else nodata", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_xcorr = {
    .name = "xcorr",
    .description = "dense sub-pixel offsets of a secondary SLC against a primary (2-band CFloat32 "
                   "stack): NCC, x2 oversampling, zoomed peak, SNR, covariance (PyCuAmpcor's "
                   "estimator); one output pixel per window",
    .options = xcorr_options,
    .state_size = sizeof(xc_state),
    .inputs = 2,
    .init = xc_init,
    .set = xc_set,
    .prepare = xc_prepare,
    .source_window = xc_source_window,
    .bytes_per_pixel = xc_bytes_per_pixel,
    .stack = 1,
    .run_stack = xc_run_stack,
    .band_name = xc_band_name,
    .band_nodata = xc_band_nodata,
};
