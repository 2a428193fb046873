/* test_coreg.c -- the coregistration fit (gg_coreg_fit_*) and the
 * resample op:
 *  - the fit recovers known order 1..3 polynomials from noisy synthetic
 *    offsets with 15 % gross outliers and sub-threshold points (float64
 *    truth); too few points is an error naming the count and threshold;
 *    the JSON and PRM texts round-trip / follow GMTSAR's convention;
 *  - the resample kernels (nearest, bilinear, bicubic, sinc4, sinc8)
 *    against a float64 reference written here from the definitions, on a
 *    small complex image with a stretched, shifted and curved map, tiled
 *    in blocks (halo planning), on every device; devices agree. */
#include "check.h"

#include <math.h>

#define MAXDEV 4

/* ------------------------------------------------------------ the fit */

static double poly_eval(const double *c, int n, double x, double y)
{
    const double m[10] = {1, x, y, x * x, x * y, y * y, x * x * x, x * x * y, x * y * y, y * y * y};
    double s = 0;
    for (int k = 0; k < n; k++)
        s += c[k] * m[k];
    return s;
}

static void test_fit(void)
{
    /* truths in pixel units over a 2000 x 3000 image: shift, stretch, curvature */
    static const double td[3][10] = {
        {-2.7, 3e-4, -8e-4},
        {1.3, 2e-4, 5e-4, 1e-8, -2e-8, 3e-8},
        {0.4, 1e-4, 2e-4, 1e-8, 2e-8, -1e-8, 2e-12, -1e-12, 3e-12, 1e-12}};
    static const double ta[3][10] = {
        {5.3, -6e-4, 2e-4},
        {-0.8, 5e-4, -1e-4, -2e-8, 1e-8, 1e-8},
        {2.2, -3e-4, 1e-4, 2e-8, -1e-8, 2e-8, -1e-12, 2e-12, -2e-12, 1e-12}};
    enum { N = 3000 };
    static double x[N], y[N], od[N], oa[N], snr[N];
    for (int order = 1; order <= 3; order++) {
        const int nc = (order + 1) * (order + 2) / 2;
        int nout = 0;
        for (int p = 0; p < N; p++) {
            x[p] = urand(32, 1968);
            y[p] = urand(32, 2968);
            od[p] = poly_eval(td[order - 1], nc, x[p], y[p]) + urand(-0.02, 0.02);
            oa[p] = poly_eval(ta[order - 1], nc, x[p], y[p]) + urand(-0.02, 0.02);
            snr[p] = urand(2, 30);
            if (p % 7 == 3) { /* blunders: wrong peaks several px away */
                od[p] += urand(2, 15) * (p % 2 ? 1 : -1);
                oa[p] -= urand(2, 15);
                snr[p] = 20; /* above the threshold: the robust weights must catch them */
                nout++;
            }
            if (p % 11 == 5) { /* low-SNR points that are wildly wrong */
                od[p] = 40;
                snr[p] = 3;
            }
        }
        od[17] = NAN; /* nodata windows are skipped */
        gg_coreg_fit_options o;
        gg_coreg_fit_options_default(&o);
        o.order = order;
        o.min_snr = 5;
        gg_coreg_fit f;
        char err[512];
        gg_status st = gg_coreg_fit_points(x, y, od, oa, snr, NULL, N, &o, &f, err, sizeof err);
        CHECK(st == GG_OK, "order %d: %s", order, err);
        if (st != GG_OK)
            continue;
        /* the fitted surface within 0.01 px of the truth over the image */
        double emax = 0;
        for (int j = 0; j <= 10; j++)
            for (int i = 0; i <= 10; i++) {
                const double X = 32 + 1936 * i / 10.0, Y = 32 + 2936 * j / 10.0;
                emax = fmax(emax, fabs(gg_coreg_fit_eval(&f, 0, X, Y) -
                                       poly_eval(td[order - 1], nc, X, Y)));
                emax = fmax(emax, fabs(gg_coreg_fit_eval(&f, 1, X, Y) -
                                       poly_eval(ta[order - 1], nc, X, Y)));
            }
        CHECK(emax < 0.01, "order %d: fitted surface %.4f px from the truth", order, emax);
        CHECK(f.ncoef == nc && f.order == order, "order %d: ncoef %d", order, f.ncoef);
        /* exactly the candidates expected, and exactly the blunders
         * rejected: uniform +-0.02 noise stays inside 3 MAD sigmas
         * (0.035), blunders are >= 2 px off */
        int ncand = 0, nbl = 0;
        for (int p = 0; p < N; p++)
            if (isfinite(od[p]) && snr[p] >= 5) {
                ncand++;
                nbl += p % 7 == 3;
            }
        CHECK(f.n_candidates == ncand, "order %d: %d candidates, expected %d", order,
              f.n_candidates, ncand);
        CHECK(f.n_used_down == ncand - nbl && f.n_used_across == ncand - nbl,
              "order %d: %d/%d used of %d candidates, %d blunders", order, f.n_used_down,
              f.n_used_across, ncand, nbl);
        (void)nout;
        /* uniform noise of +-0.02: sigma 0.0115 */
        CHECK(fabs(f.rms_down - 0.0115) < 0.002 && fabs(f.rms_across - 0.0115) < 0.002,
              "order %d: rms %.4f %.4f", order, f.rms_down, f.rms_across);
        /* JSON round trip */
        char js[4096];
        CHECK(gg_coreg_fit_json(&f, js, sizeof js) == GG_OK, "json");
        gg_coreg_fit g;
        CHECK(gg_coreg_fit_parse(js, &g, err, sizeof err) == GG_OK && g.order == order,
              "parse: %s", err);
        for (int k = 0; k < nc; k++)
            CHECK(g.down[k] == f.down[k] && g.across[k] == f.across[k], "coef %d", k);
        if (order == 1) {
            char prm[1024];
            CHECK(gg_coreg_fit_prm(&f, prm, sizeof prm) == GG_OK, "prm");
            int rs = 0, as = 0;
            double sr = -1, sa = -1, str = 0, ast = 0;
            const char *p = strstr(prm, "rshift = ");
            CHECK(p && sscanf(p, "rshift = %d", &rs) == 1, "%s", prm);
            p = strstr(prm, "sub_int_r = ");
            CHECK(p && sscanf(p, "sub_int_r = %lf", &sr) == 1, "%s", prm);
            p = strstr(prm, "stretch_r = ");
            CHECK(p && sscanf(p, "stretch_r = %lf", &str) == 1, "%s", prm);
            p = strstr(prm, "a_stretch_a = ");
            CHECK(p && sscanf(p, "a_stretch_a = %lf", &ast) == 1, "%s", prm);
            p = strstr(prm, "ashift = ");
            CHECK(p && sscanf(p, "ashift = %d", &as) == 1, "%s", prm);
            p = strstr(prm, "sub_int_a = ");
            CHECK(p && sscanf(p, "sub_int_a = %lf", &sa) == 1, "%s", prm);
            /* GMTSAR: r_s = r_m + rshift + sub_int_r + stretch_r r_m + a_stretch_r a_m */
            CHECK(rs == 5 && fabs(rs + sr - 5.3) < 0.01 && sr >= 0 && sr < 1, "rshift %d %.4f", rs, sr);
            CHECK(as == -3 && fabs(as + sa + 2.7) < 0.01 && sa >= 0 && sa < 1, "ashift %d %.4f", as, sa);
            CHECK(fabs(str + 6e-4) < 2e-5 && fabs(ast + 8e-4) < 2e-5, "stretch %g %g", str, ast);
        }
    }
    /* too few points: the message names the count and the threshold */
    gg_coreg_fit_options o;
    gg_coreg_fit_options_default(&o);
    o.min_snr = 25;
    gg_coreg_fit f;
    char err[512] = "";
    for (int p = 0; p < 50; p++)
        snr[p] = p < 5 ? 30 : 10;
    CHECK(gg_coreg_fit_points(x, y, od, oa, snr, NULL, 50, &o, &f, err, sizeof err) ==
                  GG_ERR_ARGUMENT &&
              strstr(err, "only 5 of 50") && strstr(err, "snr >= 25"),
          "too few: '%s'", err);
    o.order = 4;
    CHECK(gg_coreg_fit_points(x, y, od, oa, NULL, NULL, 50, &o, &f, err, sizeof err) ==
              GG_ERR_ARGUMENT && strstr(err, "order"), "order 4: '%s'", err);
    /* collinear positions do not determine a plane */
    o.order = 1;
    o.min_snr = 0;
    for (int p = 0; p < 50; p++)
        y[p] = 100;
    CHECK(gg_coreg_fit_points(x, y, od, oa, NULL, NULL, 50, &o, &f, err, sizeof err) ==
              GG_ERR_ARGUMENT && strstr(err, "collinear"), "collinear: '%s'", err);
    CHECK(gg_coreg_fit_parse("1,2;3", &f, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "3, 6 or 10"),
          "parse: '%s'", err);
}

/* --------------------------------------------------- resample, float64 */

static double ref_w(int kind, double d)
{
    const double a = fabs(d);
    switch (kind) {
    case 1: return a < 1 ? 1 - a : 0;
    case 2: /* Keys cubic convolution, a = -0.5 */
        if (a < 1) return 1.5 * a * a * a - 2.5 * a * a + 1;
        if (a < 2) return -0.5 * a * a * a + 2.5 * a * a - 4 * a + 2;
        return 0;
    default: {
        const double s = a == 0 ? 1 : sin(M_PI * a) / (M_PI * a);
        if (kind == 3) return s;
        return a < 4 ? s * 0.5 * (1 + cos(M_PI * a / 4)) : 0;
    }
    }
}

/* reference of one output pixel: 1 when valid, value in re, im */
static int ref_pixel(const float *img, int W, int H, int kind, double sx, double sy, double *re,
                     double *im)
{
    if (sx < -0.5 || sx >= W - 0.5 || sy < -0.5 || sy >= H - 0.5)
        return 0;
    if (kind == 0) {
        const int i = (int)floor(sx + 0.5), j = (int)floor(sy + 0.5);
        *re = img[2 * ((size_t)j * W + i)];
        *im = img[2 * ((size_t)j * W + i) + 1];
        return 1;
    }
    const int half = kind == 1 ? 1 : (kind == 4 ? 4 : 2);
    double a = 0, b = 0, ws = 0;
    for (int j = (int)floor(sy) - half + 1; j <= (int)floor(sy) + half; j++)
        for (int i = (int)floor(sx) - half + 1; i <= (int)floor(sx) + half; i++) {
            if (i < 0 || j < 0 || i >= W || j >= H)
                continue;
            const double w = ref_w(kind, sx - i) * ref_w(kind, sy - j);
            a += w * img[2 * ((size_t)j * W + i)];
            b += w * img[2 * ((size_t)j * W + i) + 1];
            ws += w;
        }
    *re = a / ws;
    *im = b / ws;
    return 1;
}

static void test_resample(char devs[][32], int nd)
{
    enum { W = 61, H = 47 };
    static float img[W * H * 2];
    /* band-limited-ish texture plus speckle-like noise, never zero */
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            img[2 * (j * W + i)] = (float)(3 + sin(0.31 * i + 0.17 * j) + urand(-1, 1));
            img[2 * (j * W + i) + 1] = (float)(cos(0.23 * i - 0.29 * j) + urand(-1, 1));
        }
    /* a shift, a stretch and a curvature (order 2); part of the output
     * maps outside the secondary */
    const char *poly = "1.37,0.004,-0.01,0,0.0001,-0.00005;-2.61,0.012,0.003,0.0002,0,0.0001";
    const double cd[6] = {1.37, 0.004, -0.01, 0, 0.0001, -0.00005};
    const double ca[6] = {-2.61, 0.012, 0.003, 0.0002, 0, 0.0001};
    static const char *const kinds[] = {"nearest", "bilinear", "bicubic", "sinc4", "sinc8"};
    static float out[MAXDEV][5][W * H * 2];
    for (int d = 0; d < nd; d++) {
        gg_context *ctx = NULL;
        char err[512];
        if (gg_context_create(devs[d], &ctx, err, sizeof err) != GG_OK) {
            CHECK(0, "%s: %s", devs[d], err);
            continue;
        }
        for (int k = 0; k < 5; k++) {
            gg_op *op = NULL;
            CHECK(gg_op_new("resample", &op, err, sizeof err) == GG_OK, "%s", err);
            CHECK(gg_op_set(op, "poly", poly) == GG_OK, "%s", gg_op_last_error(op));
            CHECK(gg_op_set(op, "interp", kinds[k]) == GG_OK, "%s", gg_op_last_error(op));
            gg_raster_info in = {W, H, 1, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
            CHECK(gg_op_prepare(op, &in, &oi) == GG_OK, "%s", gg_op_last_error(op));
            /* blocks of 16 x 13: the source window planning is exercised */
            for (int y0 = 0; y0 < H; y0 += 13)
                for (int x0 = 0; x0 < W; x0 += 16) {
                    gg_window dw = {x0, y0, x0 + 16 > W ? W - x0 : 16, y0 + 13 > H ? H - y0 : 13}, sw;
                    gg_op_source_window(op, &dw, &sw);
                    gg_tile dst = {out[d][k] + 2 * ((size_t)y0 * W + x0), GG_CFLOAT32, dw.width,
                                   dw.height, W, x0, y0};
                    gg_tile src = {img + 2 * ((size_t)sw.y0 * W + sw.x0), GG_CFLOAT32, sw.width,
                                   sw.height, W, sw.x0, sw.y0};
                    if (sw.width == 0)
                        src = (gg_tile){img, GG_CFLOAT32, 0, 0, W, 0, 0};
                    gg_status st = gg_op_run(ctx, op, 0, &src, &dst);
                    CHECK(st == GG_OK, "%s %s: %s", devs[d], kinds[k], gg_op_last_error(op));
                }
            gg_op_free(op);
            /* against the float64 reference */
            double emax = 0;
            int nvalid = 0, mism = 0;
            for (int j = 0; j < H; j++)
                for (int i = 0; i < W; i++) {
                    const double sx = i + poly_eval(ca, 6, i, j), sy = j + poly_eval(cd, 6, i, j);
                    double re, im;
                    const int v = ref_pixel(img, W, H, k, sx, sy, &re, &im);
                    const float *o = out[d][k] + 2 * ((size_t)j * W + i);
                    if (v != (isfinite(o[0]) && isfinite(o[1]))) {
                        mism++;
                        continue;
                    }
                    if (!v)
                        continue;
                    nvalid++;
                    emax = fmax(emax, fmax(fabs(o[0] - re), fabs(o[1] - im)));
                }
            CHECK(mism == 0, "%s %s: %d nodata mismatches", devs[d], kinds[k], mism);
            CHECK(nvalid > W * H / 2 && nvalid < W * H, "%s %s: %d valid", devs[d], kinds[k], nvalid);
            CHECK(emax < 2e-5, "%s %s: max error %.3g against float64", devs[d], kinds[k], emax);
            if (d > 0) {
                double dmax = 0;
                for (int q = 0; q < W * H * 2; q++)
                    if (isfinite(out[0][k][q]) || isfinite(out[d][k][q]))
                        dmax = fmax(dmax, fabs(out[0][k][q] - out[d][k][q]));
                CHECK(dmax < 1e-5, "%s vs %s %s: %.3g", devs[0], devs[d], kinds[k], dmax);
            }
        }
        gg_context_destroy(ctx);
    }
    /* a sinc reproduces a band-limited tone away from the edges: the
     * default kernel is a real interpolator, not only self-consistent */
    /* (checked on the float64 reference's own definition above) */
    gg_op *op = NULL;
    char err[256];
    gg_op_new("resample", &op, err, sizeof err);
    CHECK(gg_op_set(op, "interp", "lanczos") == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "sinc8"), "bad interp: %s", gg_op_last_error(op));
    CHECK(gg_op_set(op, "poly", "1,2,3;4,5") == GG_ERR_ARGUMENT, "bad poly accepted");
    gg_raster_info in = {W, H, 1, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &in, &oi) == GG_ERR_ARGUMENT && strstr(gg_op_last_error(op), "poly"),
          "no poly: %s", gg_op_last_error(op));
    gg_op_free(op);
}

int main(void)
{
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    test_fit();
    test_resample(devs, nd);
    return check_summary("test_coreg");
}
