/* test_coherence.c -- the coherence stack op on every test device: each
 * product against a float64 reference written from the specification
 * (interferogram within 1e-5 absolute, coherence and amplitude within 1e-5
 * relative, identical nodata masks), tiled runs identical to whole runs,
 * devices agreeing, a 1x1 window giving coherence 1, the output
 * description (band types, names, nodata, geotransform), and bad options
 * and inputs rejected with their messages.
 *
 * MIT licence. */
#include "check.h"

#include <math.h>

#define MAXDEV 4

enum { P_IFG, P_COH, P_AMP };

/* ------------------------------------------------------------ reference */

static int ref_sample_ok(const float *s, size_t k, int has_nodata, double nodata)
{
    return isfinite(s[2 * k]) && isfinite(s[2 * k + 1]) && !(has_nodata && s[2 * k] == nodata);
}

/* Straight from the specification, in double: ifg Wo*Ho*2, coh and amp
 * Wo*Ho, NaN where undefined. */
static void ref_coherence(const float *s1, const float *s2, int W, int H, int wx, int wy, int lx,
                          int ly, int has_nodata, double nodata, double *ifg, double *coh,
                          double *amp)
{
    const int Wo = W / lx, Ho = H / ly;
    for (int Y = 0; Y < Ho; Y++)
        for (int X = 0; X < Wo; X++) {
            const size_t o = (size_t)Y * Wo + X;
            double re = 0, im = 0;
            int n = 0;
            for (int y = Y * ly; y < Y * ly + ly; y++)
                for (int x = X * lx; x < X * lx + lx; x++) {
                    const size_t k = (size_t)y * W + x;
                    if (!ref_sample_ok(s1, k, has_nodata, nodata) || !ref_sample_ok(s2, k, has_nodata, nodata))
                        continue;
                    const double a = s1[2 * k], b = s1[2 * k + 1], c = s2[2 * k], d = s2[2 * k + 1];
                    re += a * c + b * d;
                    im += b * c - a * d;
                    n++;
                }
            ifg[2 * o] = n ? re / n : NAN;
            ifg[2 * o + 1] = n ? im / n : NAN;
            const int cx = X * lx + (lx - 1) / 2, cy = Y * ly + (ly - 1) / 2;
            double sr = 0, si = 0, p1 = 0, p2 = 0;
            n = 0;
            for (int y = cy - wy / 2; y <= cy + wy / 2; y++)
                for (int x = cx - wx / 2; x <= cx + wx / 2; x++) {
                    if (x < 0 || y < 0 || x >= W || y >= H)
                        continue;
                    const size_t k = (size_t)y * W + x;
                    if (!ref_sample_ok(s1, k, has_nodata, nodata) || !ref_sample_ok(s2, k, has_nodata, nodata))
                        continue;
                    const double a = s1[2 * k], b = s1[2 * k + 1], c = s2[2 * k], d = s2[2 * k + 1];
                    sr += a * c + b * d;
                    si += b * c - a * d;
                    p1 += a * a + b * b;
                    p2 += c * c + d * d;
                    n++;
                }
            const double den = sqrt(p1 * p2);
            coh[o] = n && den > 0 ? fmin(fmax(sqrt(sr * sr + si * si) / den, 0), 1) : NAN;
            amp[o] = n ? sqrt(sqrt((p1 / n) * (p2 / n))) : NAN;
        }
}

/* ----------------------------------------------------------------- data */

static double gauss(void)
{
    double u = urand(1e-12, 1), v = urand(0, 1);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* s2 = rho*s1*e^{i phi} + sqrt(1-rho^2)*noise with rho rising from 0 at the
 * left edge to rho_max at the right (so coherence spans 0..1), a gentle phase
 * ramp, a smooth gain,
 * NaN holes (single samples and a 7x7 block), exact zeros, and a nodata
 * border (s1: top row and left column; s2: right column) when has_nodata. */
static void make_stack(int W, int H, double rho_max, int has_nodata, double nodata, float *s1, float *s2)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t k = (size_t)y * W + x;
            const double rho = rho_max * (W > 1 ? (double)x / (W - 1) : 1);
            const double g = (1.0 + 0.4 * sin(0.23 * y)) * (1.2 + 0.5 * cos(0.17 * x));
            const double ar = gauss() * g, ai = gauss() * g;
            const double phi = 0.05 * x - 0.03 * y, c = cos(phi), s = sin(phi);
            const double q = sqrt(1 - rho * rho);
            s1[2 * k] = (float)ar;
            s1[2 * k + 1] = (float)ai;
            s2[2 * k] = (float)(rho * (ar * c - ai * s) + q * gauss() * g);
            s2[2 * k + 1] = (float)(rho * (ar * s + ai * c) + q * gauss() * g);
            const double r = urand(0, 1);
            if (r < 0.01)
                s1[2 * k + (x & 1)] = NAN;
            else if (r < 0.02)
                s2[2 * k + (y & 1)] = NAN;
            else if (r < 0.025)
                s2[2 * k] = s2[2 * k + 1] = 0; /* valid, zero power */
            if (x >= W / 3 && x < W / 3 + 7 && y >= H / 2 && y < H / 2 + 7)
                s1[2 * k + 1] = NAN;
            if (has_nodata && (x == 0 || y == 0))
                s1[2 * k] = (float)nodata;
            if (has_nodata && x == W - 1)
                s2[2 * k] = (float)nodata;
        }
}

/* --------------------------------------------------------------- runner */

typedef struct {
    int W, H;
    const char *window, *looks, *products; /* NULL: default */
    int has_nodata;
    double nodata;
    double rho_max; /* 0: uncorrelated everywhere (the cross sums cancel) */
} coh_case;

typedef struct {
    int Wo, Ho, nb;
    int prod[3];       /* P_* of each output band */
    float *out[3];     /* by P_*: ifg Wo*Ho*2, coh, amp (NULL when not produced) */
    double gt[6];
} coh_result;

static void result_free(coh_result *r)
{
    for (int i = 0; i < 3; i++)
        free(r->out[i]);
    memset(r, 0, sizeof *r);
}

static int prod_of(const char *name)
{
    return !strcmp(name, "interferogram") ? P_IFG : !strcmp(name, "coherence") ? P_COH : P_AMP;
}

/* Runs a case in tiles of tw x th output pixels through the public API,
 * as the GDAL driver does: one source window for both bands, one call per
 * tile writing every band; `interleaved`: from one pixel-interleaved copy
 * of both bands (gg_op_run_stack_interleaved, which coherence serves by
 * sorting the bands on the host).  Returns 0 on failure (recorded). */
static int run_case(const char *dev, const coh_case *c, const float *s1, const float *s2, int tw,
                    int th, int interleaved, coh_result *r)
{
    memset(r, 0, sizeof *r);
    float *il = NULL;
    if (interleaved) {
        const size_t n = (size_t)c->W * c->H;
        il = malloc(n * 16);
        for (size_t k = 0; il && k < n; k++) {
            memcpy(il + 4 * k, s1 + 2 * k, 8);
            memcpy(il + 4 * k + 2, s2 + 2 * k, 8);
        }
        if (!il) {
            CHECK(0, "out of memory");
            return 0;
        }
    }
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        CHECK(0, "%s: %s", dev, err);
        free(il);
        return 0;
    }
    gg_op *op = NULL;
    int ok = 0;
    CHECK(gg_op_new("coherence", &op, err, sizeof err) == GG_OK, "%s", err);
    CHECK(gg_op_is_stack(op), "coherence is not a stack op");
    if (c->window)
        CHECK(gg_op_set(op, "window", c->window) == GG_OK, "%s", gg_op_last_error(op));
    if (c->looks)
        CHECK(gg_op_set(op, "looks", c->looks) == GG_OK, "%s", gg_op_last_error(op));
    if (c->products)
        CHECK(gg_op_set(op, "products", c->products) == GG_OK, "%s", gg_op_last_error(op));
    gg_raster_info ii = {c->W, c->H, 2, GG_CFLOAT32, {100, 2, 0.5, 500, 0.25, -2}, 1, c->has_nodata,
                         c->nodata}, oi;
    if (gg_op_prepare(op, &ii, &oi) != GG_OK) {
        CHECK(0, "prepare: %s", gg_op_last_error(op));
        goto done;
    }
    r->Wo = oi.width;
    r->Ho = oi.height;
    r->nb = oi.bands;
    memcpy(r->gt, oi.geotransform, sizeof r->gt);
    const size_t npix = (size_t)oi.width * oi.height;
    for (int b = 0; b < oi.bands; b++) {
        r->prod[b] = prod_of(gg_op_band_name(op, b));
        r->out[r->prod[b]] = malloc(npix * (r->prod[b] == P_IFG ? 8 : 4));
    }
    gg_status s = GG_OK;
    for (int y = 0; y < oi.height && s == GG_OK; y += th)
        for (int x = 0; x < oi.width && s == GG_OK; x += tw) {
            gg_window dw = {x, y, x + tw > oi.width ? oi.width - x : tw,
                            y + th > oi.height ? oi.height - y : th}, sw;
            s = gg_op_source_window(op, &dw, &sw);
            const size_t so = ((size_t)sw.y0 * c->W + sw.x0) * 2;
            gg_tile src[2] = {{(void *)(s1 + so), GG_CFLOAT32, sw.width, sw.height, (size_t)c->W, sw.x0, sw.y0},
                              {(void *)(s2 + so), GG_CFLOAT32, sw.width, sw.height, (size_t)c->W, sw.x0, sw.y0}};
            gg_tile dst[3];
            for (int b = 0; b < oi.bands; b++) {
                const int nc = r->prod[b] == P_IFG ? 2 : 1;
                dst[b] = (gg_tile){r->out[r->prod[b]] + ((size_t)y * oi.width + x) * nc,
                                   gg_op_band_type(op, b), dw.width, dw.height, (size_t)oi.width, x, y};
            }
            if (il)
                src[0] = (gg_tile){(void *)(il + 2 * so), GG_CFLOAT32, sw.width, sw.height,
                                   (size_t)c->W, sw.x0, sw.y0};
            if (s == GG_OK)
                s = il ? gg_op_run_stack_interleaved(ctx, op, src, 2, dst, oi.bands)
                       : gg_op_run_stack(ctx, op, src, 2, dst, oi.bands);
        }
    CHECK(s == GG_OK, "%s: %s", dev, gg_op_last_error(op));
    ok = s == GG_OK;
done:
    free(il);
    gg_op_free(op);
    gg_context_destroy(ctx);
    return ok;
}

/* ----------------------------------------------------------- comparison */

typedef struct {
    double ifg_abs, coh_abs, coh_rel, amp_rel;
    size_t mask;
} errs;

/* Error of one product against a double reference; rel: relative to the
 * reference value (absolute when rel is 0). */
static double max_err(const float *a, const double *ref, size_t n, int rel, size_t *mask)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(ref[i])) {
            (*mask)++;
            continue;
        }
        if (isnan(ref[i]))
            continue;
        double d = fabs(a[i] - ref[i]);
        if (rel)
            d = ref[i] != 0 ? d / fabs(ref[i]) : (a[i] != 0 ? INFINITY : 0);
        if (d > e)
            e = d;
    }
    return e;
}

#define TOL 1e-5

static void test_cases(char devs[][32], int nd)
{
    const coh_case cases[] = {
        {37, 29, "1x1", NULL, NULL, 1, -9999, 1},
        {37, 29, "3x5", NULL, NULL, 1, -9999, 1},
        {37, 29, NULL, NULL, NULL, 0, 0, 1}, /* default 5x5, all products */
        {37, 29, "11x11", NULL, NULL, 1, 0, 1},
        {37, 29, "3x5", "2x3", NULL, 1, -9999, 1},
        {37, 29, "5x5", "2x3", "amplitude,interferogram", 0, 0, 1},
        {37, 29, "11x11", "2x3", "coherence", 1, -9999, 1},
        {37, 29, "1x1", "2x3", "coherence,amplitude,interferogram", 0, 0, 1},
        {61, 47, "51x51", NULL, NULL, 1, -9999, 1},
        {61, 47, "51x51", "2x3", NULL, 0, 0, 1},
        {61, 47, "51x51", NULL, NULL, 1, -9999, 0}, /* coherence ~0.02 everywhere */
        {12, 9, "5", "3", "interferogram", 1, -9999, 1}, /* no halo needed */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const coh_case *c = &cases[ci];
        const size_t n = (size_t)c->W * c->H;
        float *s1 = malloc(n * 8), *s2 = malloc(n * 8);
        make_stack(c->W, c->H, c->rho_max, c->has_nodata, c->nodata, s1, s2);
        int wx = 5, wy = 5, lx = 1, ly = 1;
        if (c->window && sscanf(c->window, "%dx%d", &wx, &wy) == 1)
            wy = wx;
        if (c->looks && sscanf(c->looks, "%dx%d", &lx, &ly) == 1)
            ly = lx;
        const int Wo = c->W / lx, Ho = c->H / ly;
        const size_t no = (size_t)Wo * Ho;
        double *rifg = malloc(no * 16), *rcoh = malloc(no * 8), *ramp = malloc(no * 8);
        ref_coherence(s1, s2, c->W, c->H, wx, wy, lx, ly, c->has_nodata, c->nodata, rifg, rcoh, ramp);
        size_t valid = 0, lo = 0, hi = 0;
        for (size_t i = 0; i < no; i++) {
            valid += !isnan(rifg[2 * i]) && !isnan(rcoh[i]);
            lo += rcoh[i] < 0.3;
            hi += rcoh[i] > 0.8;
        }
        /* some outputs are nodata (the 7x7 hole), most are not */
        CHECK(valid > no / 2 && valid < no, "case %zu: reference has %zu of %zu valid", ci, valid, no);
        const int coh_wanted = !c->products || strstr(c->products, "coherence");
        /* 51x51 windows average most of the ramp */
        if (wx * wy > 1 && wx <= 11 && c->rho_max > 0 && coh_wanted)
            CHECK(lo > 0 && hi > 0, "case %zu: coherence does not span (%zu low, %zu high)", ci, lo, hi);
        coh_result first = {0};
        for (int d = 0; d < nd; d++) {
            coh_result whole, tiled;
            /* whole image in one tile, then small uneven tiles */
            if (!run_case(devs[d], c, s1, s2, 1 << 20, 1 << 20, 0, &whole))
                continue;
            if (!run_case(devs[d], c, s1, s2, 7, 5, 0, &tiled)) {
                result_free(&whole);
                continue;
            }
            coh_result il;
            if (run_case(devs[d], c, s1, s2, 7, 5, 1, &il)) {
                for (int p = 0; p < 3; p++)
                    if (whole.out[p])
                        CHECK(il.out[p] && !memcmp(whole.out[p], il.out[p],
                                                   no * (p == P_IFG ? 8 : 4)),
                              "%s case %zu: product %d from the pixel-interleaved bands differs",
                              devs[d], ci, p);
                result_free(&il);
            }
            CHECK(whole.Wo == Wo && whole.Ho == Ho, "case %zu: output %dx%d, expected %dx%d", ci, whole.Wo,
                  whole.Ho, Wo, Ho);
            const double g[6] = {100, 2.0 * lx, 0.5 * ly, 500, 0.25 * lx, -2.0 * ly};
            CHECK(!memcmp(whole.gt, g, sizeof g), "case %zu: geotransform %g %g %g %g %g %g", ci,
                  whole.gt[0], whole.gt[1], whole.gt[2], whole.gt[3], whole.gt[4], whole.gt[5]);
            errs e = {0};
            if (whole.out[P_IFG])
                e.ifg_abs = max_err(whole.out[P_IFG], rifg, 2 * no, 0, &e.mask);
            if (whole.out[P_COH]) {
                e.coh_abs = max_err(whole.out[P_COH], rcoh, no, 0, &e.mask);
                e.coh_rel = max_err(whole.out[P_COH], rcoh, no, 1, &e.mask);
                e.mask /= 2;
            }
            if (whole.out[P_AMP])
                e.amp_rel = max_err(whole.out[P_AMP], ramp, no, 1, &e.mask);
            CHECK(e.ifg_abs <= TOL && e.coh_rel <= TOL && e.amp_rel <= TOL && e.mask == 0,
                  "%s case %zu (window %dx%d, looks %dx%d): ifg abs %.3g, coh rel %.3g, amp rel %.3g, "
                  "%zu mask mismatches",
                  devs[d], ci, wx, wy, lx, ly, e.ifg_abs, e.coh_rel, e.amp_rel, e.mask);
            char txt[3][64];
            snprintf(txt[0], 64, whole.out[P_IFG] ? "ifg abs %.2e" : "ifg -", e.ifg_abs);
            snprintf(txt[1], 64, whole.out[P_COH] ? "coh abs %.2e rel %.2e" : "coh -", e.coh_abs, e.coh_rel);
            snprintf(txt[2], 64, whole.out[P_AMP] ? "amp rel %.2e" : "amp -", e.amp_rel);
            printf("  %-7s window %2dx%-2d looks %dx%d on %dx%d%s: %s  %s  %s\n", devs[d], wx, wy, lx, ly,
                   c->W, c->H, c->rho_max > 0 ? "" : " (rho 0)", txt[0], txt[1], txt[2]);
            /* a 1x1 window: every valid pixel is perfectly coherent */
            if (wx == 1 && wy == 1 && whole.out[P_COH])
                for (size_t i = 0; i < no; i++)
                    if (!isnan(whole.out[P_COH][i]) && whole.out[P_COH][i] != 1.0f) {
                        CHECK(0, "%s case %zu: 1x1 coherence %.9g at %zu", devs[d], ci,
                              whole.out[P_COH][i], i);
                        break;
                    }
            for (int p = 0; p < 3; p++)
                if (whole.out[p])
                    CHECK(tiled.out[p] && !memcmp(whole.out[p], tiled.out[p], no * (p == P_IFG ? 8 : 4)),
                          "%s case %zu: tiled product %d differs from the whole run", devs[d], ci, p);
            if (!first.out[0] && !first.out[1] && !first.out[2]) {
                first = whole;
            } else {
                /* devices agree with the first: same masks, within the tolerance */
                for (int p = 0; p < 3; p++) {
                    if (!whole.out[p])
                        continue;
                    const size_t m = p == P_IFG ? 2 * no : no;
                    size_t mism = 0;
                    double worst = 0;
                    for (size_t i = 0; i < m; i++) {
                        const float a = whole.out[p][i], b = first.out[p][i];
                        if (isnan(a) != isnan(b)) {
                            mism++;
                            continue;
                        }
                        if (isnan(a))
                            continue;
                        double dlt = fabs(a - b);
                        if (p != P_IFG)
                            dlt /= fmax(fabs(b), 1e-30);
                        worst = fmax(worst, dlt);
                    }
                    CHECK(mism == 0 && worst <= 2 * TOL, "%s vs %s case %zu product %d: diff %.3g, %zu mask diffs",
                          devs[d], devs[0], ci, p, worst, mism);
                }
                result_free(&whole);
            }
            result_free(&tiled);
        }
        result_free(&first);
        free(rifg);
        free(rcoh);
        free(ramp);
        free(s1);
        free(s2);
    }
}

/* ------------------------------------------------------ output description */

static void test_description(void)
{
    gg_op *op = NULL;
    char err[512];
    CHECK(gg_op_new("coherence", &op, err, sizeof err) == GG_OK, "%s", err);
    CHECK(gg_op_input_count("coherence") == 2, "input count %d", gg_op_input_count("coherence"));
    gg_raster_info ii = {40, 30, 2, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 1, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "%s", gg_op_last_error(op));
    const char *names[3] = {"interferogram", "coherence", "amplitude"};
    const gg_type types[3] = {GG_CFLOAT32, GG_FLOAT32, GG_FLOAT32};
    CHECK(oi.bands == 3 && oi.type == GG_CFLOAT32 && oi.width == 40 && oi.height == 30,
          "default output %dx%d, %d bands, type %d", oi.width, oi.height, oi.bands, oi.type);
    /* input nodata 0 is a real coherence: output nodata stays NaN */
    CHECK(oi.has_nodata && isnan(oi.nodata), "output nodata %g", oi.nodata);
    for (int b = 0; b < 3; b++) {
        CHECK(!strcmp(gg_op_band_name(op, b), names[b]), "band %d name '%s'", b, gg_op_band_name(op, b));
        CHECK(gg_op_band_type(op, b) == types[b], "band %d type %d", b, gg_op_band_type(op, b));
        CHECK(isnan(gg_op_band_nodata(op, b)), "band %d nodata %g", b, gg_op_band_nodata(op, b));
    }
    CHECK(gg_op_bytes_per_pixel(op) >= 16 + 16, "bytes per pixel %g", gg_op_bytes_per_pixel(op));
    /* the per-band call is refused */
    float buf[8] = {0};
    gg_tile t = {buf, GG_CFLOAT32, 1, 1, 1, 0, 0};
    gg_context *ctx = NULL;
    gg_context_create("cpu", &ctx, err, sizeof err);
    CHECK(gg_op_run(ctx, op, 0, &t, &t) == GG_ERR_ARGUMENT && strstr(gg_op_last_error(op), "gg_op_run_stack"),
          "gg_op_run accepted: %s", gg_op_last_error(op));
    gg_context_destroy(ctx);
    gg_op_free(op);

    /* chosen order and a source window with its halo */
    CHECK(gg_op_new("coherence", &op, err, sizeof err) == GG_OK, "%s", err);
    gg_op_set(op, "products", " Amplitude ,coherence");
    gg_op_set(op, "window", "5x3");
    gg_op_set(op, "looks", "2x3");
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "%s", gg_op_last_error(op));
    CHECK(oi.bands == 2 && oi.type == GG_FLOAT32 && oi.width == 20 && oi.height == 10 &&
              !strcmp(gg_op_band_name(op, 0), "amplitude") && !strcmp(gg_op_band_name(op, 1), "coherence"),
          "products order: %d bands, '%s' '%s'", oi.bands, gg_op_band_name(op, 0), gg_op_band_name(op, 1));
    /* output (3..5, 2..3): blocks x 6..11, y 6..11; centres x 6..10, y 7..10;
     * window halo 2, 1 */
    gg_window dw = {3, 2, 3, 2}, sw;
    gg_op_source_window(op, &dw, &sw);
    CHECK(sw.x0 == 4 && sw.y0 == 6 && sw.width == 9 && sw.height == 6, "source window %d,%d %dx%d",
          sw.x0, sw.y0, sw.width, sw.height);
    gg_op_free(op);

    /* dstnodata, when given, is every band's nodata */
    CHECK(gg_op_new("coherence", &op, err, sizeof err) == GG_OK, "%s", err);
    gg_op_set(op, "dstnodata", "-1");
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK && oi.nodata == -1 && gg_op_band_nodata(op, 2) == -1,
          "dstnodata: %g %g", oi.nodata, gg_op_band_nodata(op, 2));
    gg_op_free(op);
}

/* --------------------------------------------------- bad options and inputs */

static void expect_bad(const char *key, const char *value, const char *word)
{
    gg_op *op = NULL;
    char err[512];
    if (gg_op_new("coherence", &op, err, sizeof err) != GG_OK)
        return;
    CHECK(gg_op_set(op, key, value) == GG_ERR_ARGUMENT, "%s=%s accepted", key, value);
    CHECK(strstr(gg_op_last_error(op), word) != NULL, "%s=%s: message '%s' lacks '%s'", key, value,
          gg_op_last_error(op), word);
    gg_op_free(op);
}

static void expect_bad_input(int W, int H, int bands, gg_type type, const char *looks, const char *msg)
{
    gg_op *op = NULL;
    char err[512];
    if (gg_op_new("coherence", &op, err, sizeof err) != GG_OK)
        return;
    if (looks)
        gg_op_set(op, "looks", looks);
    gg_raster_info ii = {W, H, bands, type, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) != GG_OK && strstr(gg_op_last_error(op), msg),
          "input %dx%d %d bands type %d: '%s' lacks '%s'", W, H, bands, type, gg_op_last_error(op), msg);
    gg_op_free(op);
}

static void test_bad(void)
{
    const char *win = "coherence: window must be odd sizes like 5x5";
    expect_bad("window", "4x4", win);
    expect_bad("window", "5x4", win);
    expect_bad("window", "0", win);
    expect_bad("window", "-3x3", win);
    expect_bad("window", "abc", win);
    expect_bad("looks", "0x2", "looks");
    expect_bad("looks", "2x", "looks");
    expect_bad("products", "phase", "unknown product 'phase'");
    expect_bad("products", "coherence,Coherence", "listed twice");
    expect_bad("products", "", "unknown product");
    expect_bad("products", "coherence,,amplitude", "unknown product");
    expect_bad("nosuch", "1", "unknown option");
    expect_bad_input(10, 10, 2, GG_FLOAT32, NULL, "coherence: inputs must be complex (CFloat32 SLCs)");
    expect_bad_input(10, 10, 3, GG_CFLOAT32, NULL,
                     "coherence: needs exactly 2 bands (primary, secondary), got 3");
    expect_bad_input(10, 10, 1, GG_CFLOAT32, NULL,
                     "coherence: needs exactly 2 bands (primary, secondary), got 1");
    expect_bad_input(10, 7, 2, GG_CFLOAT32, "4x8", "larger than the 10x7 image");
    char err[512];
    gg_op *op = NULL;
    CHECK(gg_op_new("nosuchop", &op, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "coherence"),
          "known list: %s", err);
}

int main(void)
{
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    test_cases(devs, nd);
    test_description();
    test_bad();
    return check_summary("test_coherence");
}
