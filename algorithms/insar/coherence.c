/*
 * coherence.c -- interferogram and boxcar coherence of two co-registered
 * SLCs (a stack op: band 1 primary s1, band 2 secondary s2, CFloat32).
 *
 * Products, in the order asked for (option products):
 *   interferogram  CFloat32  mean of s1*conj(s2) over the look block
 *                            (phase = phase(primary) - phase(secondary),
 *                            the ref*conj(sec) convention of dolphin/ISCE)
 *   coherence      Float32   |sum s1*conj(s2)| / sqrt(sum|s1|^2 sum|s2|^2)
 *                            over the window, clamped to [0, 1]
 *   amplitude      Float32   sqrt(sqrt(mean|s1|^2 * mean|s2|^2)) over the
 *                            window (geometric mean of the two RMS amplitudes)
 * Sums run over valid samples only (both s1 and s2 finite, neither real
 * part equal to the input nodata).  The window is centred on the look
 * block of the output pixel (see coherence_kernels.h) and clipped to the
 * raster, so edges use fewer samples instead of going nodata.  With looks
 * the output is decimated like multilook (partial blocks dropped,
 * geotransform scaled).  No flat-earth or topographic phase is removed:
 * feed flattened (or coregistered and deramped) SLCs, else the coherence
 * is biased low.  Every band's nodata is NaN unless dstnodata is given
 * (the input nodata, often 0, is a valid coherence and amplitude).
 *
 * MIT licence.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "coherence_params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { COH_IFG, COH_COH, COH_AMP, COH_NPRODUCTS };
static const char *const product_names[COH_NPRODUCTS] = {"interferogram", "coherence", "amplitude"};

typedef struct {
    int wx, wy;                /* window size (odd) */
    int lx, ly;                /* looks */
    int nprod;
    int prod[COH_NPRODUCTS];   /* COH_* in output band order */
    double dst_nodata;         /* of every band, fixed at prepare */
} coh_state;

static void coh_init(gg_op *op)
{
    coh_state *s = op->state;
    s->wx = s->wy = 5;
    s->lx = s->ly = 1;
    s->nprod = COH_NPRODUCTS;
    for (int i = 0; i < COH_NPRODUCTS; i++)
        s->prod[i] = i;
    s->dst_nodata = NAN;
}

static gg_status set_products(gg_op *op, const char *value)
{
    coh_state *s = op->state;
    int prod[COH_NPRODUCTS], n = 0;
    const char *p = value;
    for (;;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed > 0 && p[trimmed - 1] == ' ')
            trimmed--;
        int found = -1;
        for (int i = 0; i < COH_NPRODUCTS; i++)
            if (trimmed == strlen(product_names[i]) && !strncasecmp(p, product_names[i], trimmed))
                found = i;
        if (found < 0)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "coherence: unknown product '%.*s' in products (known: "
                               "interferogram, coherence, amplitude)",
                               (int)trimmed, p);
        for (int i = 0; i < n; i++)
            if (prod[i] == found)
                return gg_op_error(op, GG_ERR_ARGUMENT, "coherence: product '%s' listed twice",
                                   product_names[found]);
        prod[n++] = found; /* n < COH_NPRODUCTS here: a fourth would repeat one */
        if (!p[len])
            break;
        p += len + 1;
    }
    s->nprod = n;
    memcpy(s->prod, prod, sizeof(int) * (size_t)n);
    return GG_OK;
}

static gg_status coh_set(gg_op *op, const char *key, const char *value)
{
    coh_state *s = op->state;
    if (!strcasecmp(key, "window")) {
        int a, b;
        if (!gg_parse_pair(value, &a, &b) || a < 1 || b < 1 || a % 2 == 0 || b % 2 == 0)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "coherence: window must be odd sizes like 5x5, not '%s'", value);
        s->wx = a;
        s->wy = b;
        return GG_OK;
    }
    if (!strcasecmp(key, "looks")) {
        int a, b;
        if (!gg_parse_pair(value, &a, &b) || a < 1 || b < 1)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "coherence: looks must be positive integers like 2x3, not '%s'", value);
        s->lx = a;
        s->ly = b;
        return GG_OK;
    }
    if (!strcasecmp(key, "products"))
        return set_products(op, value);
    return GG_ERR_UNSUPPORTED;
}

static gg_status coh_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    coh_state *s = op->state;
    if (in->type != GG_CFLOAT32)
        return gg_op_error(op, GG_ERR_UNSUPPORTED, "coherence: inputs must be complex (CFloat32 SLCs)");
    if (in->bands != 2)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "coherence: needs exactly 2 bands (primary, secondary), got %d", in->bands);
    if (s->lx > in->width || s->ly > in->height)
        return gg_op_error(op, GG_ERR_ARGUMENT, "coherence: looks %dx%d larger than the %dx%d image",
                           s->lx, s->ly, in->width, in->height);
    /* The generic code would take the input nodata for the output; here
     * that is wrong (0 is a real coherence), so NaN unless dstnodata is
     * given.  Recording it as the dstnodata in force keeps out->nodata
     * (band 1) and gg_op_band_nodata in step. */
    if (!op->opt_dstnodata_set) {
        op->opt_dstnodata_set = 1;
        op->opt_dstnodata = NAN;
    }
    s->dst_nodata = op->opt_dstnodata;
    out->width = in->width / s->lx;
    out->height = in->height / s->ly;
    out->bands = s->nprod;
    out->type = s->prod[0] == COH_IFG ? GG_CFLOAT32 : GG_FLOAT32;
    const double *g = in->geotransform;
    out->has_geotransform = in->has_geotransform;
    double gt[6] = {g[0], g[1] * s->lx, g[2] * s->ly, g[3], g[4] * s->lx, g[5] * s->ly};
    memcpy(out->geotransform, gt, sizeof gt);
    return GG_OK;
}

static int wants(const coh_state *s, int product)
{
    for (int i = 0; i < s->nprod; i++)
        if (s->prod[i] == product)
            return 1;
    return 0;
}

/* The look blocks of the output window plus, when coherence or amplitude
 * is wanted, the windows around their centres (the generic code clips). */
static void coh_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const coh_state *s = op->state;
    int x0 = d->x0 * s->lx, y0 = d->y0 * s->ly;
    int x1 = (d->x0 + d->width) * s->lx, y1 = (d->y0 + d->height) * s->ly; /* exclusive */
    if (wants(s, COH_COH) || wants(s, COH_AMP)) {
        const int hx = s->wx / 2, hy = s->wy / 2;
        const int cx0 = x0 + (s->lx - 1) / 2, cy0 = y0 + (s->ly - 1) / 2;
        const int cx1 = (d->x0 + d->width - 1) * s->lx + (s->lx - 1) / 2;
        const int cy1 = (d->y0 + d->height - 1) * s->ly + (s->ly - 1) / 2;
        if (cx0 - hx < x0)
            x0 = cx0 - hx;
        if (cy0 - hy < y0)
            y0 = cy0 - hy;
        if (cx1 + hx + 1 > x1)
            x1 = cx1 + hx + 1;
        if (cy1 + hy + 1 > y1)
            y1 = cy1 + hy + 1;
    }
    src->x0 = x0;
    src->y0 = y0;
    src->width = x1 - x0;
    src->height = y1 - y0;
}

static gg_status coh_run_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                               gg_tile *dst, int ndst)
{
    (void)nsrc;
    const coh_state *s = op->state;
    const gg_tile v1 = gg_op_source_view(op, &src[0], &dst[0]);
    const gg_tile v2 = gg_op_source_view(op, &src[1], &dst[0]);
    const size_t plane_bytes = (size_t)v1.width * v1.height * 8;
    const size_t npix = (size_t)dst[0].width * dst[0].height;
    gg_coherence_params p = {.img_w = op->in.width,
                             .img_h = op->in.height,
                             .src_x0 = v1.x0,
                             .src_y0 = v1.y0,
                             .src_w = v1.width,
                             .src_h = v1.height,
                             .dst_x0 = dst[0].x0,
                             .dst_y0 = dst[0].y0,
                             .looks_x = s->lx,
                             .looks_y = s->ly,
                             .half_x = s->wx / 2,
                             .half_y = s->wy / 2,
                             .plane_ifg = -1,
                             .plane_coh = -1,
                             .plane_amp = -1,
                             .has_nodata = op->src_has_nodata,
                             .nodata = (float)op->src_nodata,
                             .dst_nodata = (float)s->dst_nodata};
    int first[COH_NPRODUCTS], planes = 0;
    for (int i = 0; i < s->nprod; i++) {
        first[i] = planes;
        planes += s->prod[i] == COH_IFG ? 2 : 1;
        if (s->prod[i] == COH_IFG)
            p.plane_ifg = first[i];
        else if (s->prod[i] == COH_COH)
            p.plane_coh = first[i];
        else
            p.plane_amp = first[i];
    }
    gg_buffer *bin, *bout;
    gg_status st = gg_rt_scratch(ctx, 0, 2 * plane_bytes, &bin);
    if (st == GG_OK)
        st = gg_rt_write_tile(ctx, bin, 0, 0, &v1);
    if (st == GG_OK)
        st = gg_rt_write_tile(ctx, bin, plane_bytes, 0, &v2);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 1, (size_t)planes * npix * 4, &bout);
    if (st != GG_OK)
        return st;
    gg_buffer *bufs[2] = {bin, bout};
    st = gg_rt_launch(ctx, GG_K_COHERENCE, dst[0].width, dst[0].height, &p, sizeof p, bufs, 2);
    for (int i = 0; i < ndst && st == GG_OK; i++)
        st = gg_rt_read_tile(ctx, bout, (size_t)first[i] * npix * 4, 0, &dst[i]);
    return st;
}

static double coh_bytes_per_pixel(const gg_op *op)
{
    const coh_state *s = op->state;
    /* both bands of the look block in, every product out; the window halo
     * is a few rows per block and is left to the planner's margin */
    double out = 0;
    for (int i = 0; i < s->nprod; i++)
        out += s->prod[i] == COH_IFG ? 8 : 4;
    return 2.0 * 8.0 * s->lx * s->ly + out;
}

static gg_type coh_band_type(const gg_op *op, int band)
{
    const coh_state *s = op->state;
    return s->prod[band] == COH_IFG ? GG_CFLOAT32 : GG_FLOAT32;
}

static const char *coh_band_name(const gg_op *op, int band)
{
    const coh_state *s = op->state;
    return product_names[s->prod[band]];
}

static double coh_band_nodata(const gg_op *op, int band)
{
    (void)band;
    const coh_state *s = op->state;
    return s->dst_nodata;
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option coherence_options[] = {
    {"window", "-window", GG_OPTION_SIZE, 1, GG_INT_MAX, "5x5", NULL,
     "coherence window, odd sizes along x (range) and y (azimuth), e.g. 5x5", 0},
    {"looks", "-looks", GG_OPTION_SIZE, 1, GG_INT_MAX, "1x1", NULL,
     "looks along x and y: output decimated like multilook, e.g. 2x3", 0},
    {"products", NULL, GG_OPTION_STRING, 0, 0, "interferogram,coherence,amplitude", NULL,
     "output bands, in this order (comma list of interferogram, coherence, "
     "amplitude)", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_coherence = {
    .name = "coherence",
    .description = "interferogram primary*conj(secondary), boxcar coherence and amplitude "
                   "of two co-registered SLCs (2-band CFloat32 stack), optionally multilooked",
    .options = coherence_options,
    .state_size = sizeof(coh_state),
    .inputs = 2,
    .init = coh_init,
    .set = coh_set,
    .prepare = coh_prepare,
    .source_window = coh_source_window,
    .bytes_per_pixel = coh_bytes_per_pixel,
    .stack = 1,
    .run_stack = coh_run_stack,
    .band_type = coh_band_type,
    .band_name = coh_band_name,
    .band_nodata = coh_band_nodata,
};
