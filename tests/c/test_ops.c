/* test_ops.c -- the three airborne-SAR ops on every test device: against
 * the float64 references (relative L2 error <= 1e-5 multilook/radnorm,
 * <= 1e-4 rotate, identical nodata masks), tiled runs identical to
 * whole-image runs, devices agreeing with each other, bad options
 * rejected with a message. */
#include "check.h"
#include "reference.h"

#include <math.h>

#define MAXDEV 4

/* Runs an op over the whole raster in tiles of tw x th output pixels,
 * through the public API exactly as the GDAL driver does. */
static gg_status run_tiled(gg_context *ctx, gg_op *op, const gg_raster_info *ii, const float *in,
                           const gg_raster_info *oi, void *out, int tw, int th)
{
    const size_t ies = ii->type == GG_CFLOAT32 ? 8 : 4, oes = gg_type_size(oi->type);
    gg_status s = GG_OK;
    if (gg_op_needs_stats(op)) { /* statistics over input strips of 7 rows */
        for (int y = 0; y < ii->height && s == GG_OK; y += 7) {
            gg_tile t = {(void *)((const char *)in + (size_t)y * ii->width * ies), ii->type,
                         ii->width, y + 7 > ii->height ? ii->height - y : 7, (size_t)ii->width, 0, y};
            s = gg_op_accumulate(ctx, op, 0, &t);
        }
        if (s == GG_OK)
            s = gg_op_finish_stats(ctx, op, 0);
    }
    for (int y = 0; y < oi->height && s == GG_OK; y += th)
        for (int x = 0; x < oi->width && s == GG_OK; x += tw) {
            gg_window dw = {x, y, x + tw > oi->width ? oi->width - x : tw,
                            y + th > oi->height ? oi->height - y : th}, sw;
            s = gg_op_source_window(op, &dw, &sw);
            gg_tile src = {(void *)((const char *)in + ((size_t)sw.y0 * ii->width + sw.x0) * ies),
                           ii->type, sw.width, sw.height, (size_t)ii->width, sw.x0, sw.y0};
            gg_tile dst = {(char *)out + ((size_t)y * oi->width + x) * oes, oi->type, dw.width,
                           dw.height, (size_t)oi->width, x, y};
            if (s == GG_OK)
                s = gg_op_run(ctx, op, 0, &src, &dst);
        }
    return s;
}

typedef struct {
    const char *op;
    const char *opts[4][2];
    int W, H, complex_in;
    int has_nodata;
    double nodata;
} op_case;

/* Builds and runs one case on one device; returns the output (caller
 * frees) as floats (Byte outputs widened) and fills *oi. */
static float *run_case(const char *dev, const op_case *c, const float *in, int tw, int th,
                       gg_raster_info *oi)
{
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        CHECK(0, "%s: %s", dev, err);
        return NULL;
    }
    gg_op *op = NULL;
    CHECK(gg_op_new(c->op, &op, err, sizeof err) == GG_OK, "%s", err);
    for (int i = 0; i < 4 && c->opts[i][0]; i++)
        CHECK(gg_op_set(op, c->opts[i][0], c->opts[i][1]) == GG_OK, "%s", gg_op_last_error(op));
    gg_raster_info ii = {c->W, c->H, 1, c->complex_in ? GG_CFLOAT32 : GG_FLOAT32,
                         {100, 2, 0, 500, 0, -2}, 1, c->has_nodata, c->nodata};
    float *outf = NULL;
    if (gg_op_prepare(op, &ii, oi) == GG_OK) {
        const size_t n = (size_t)oi->width * oi->height * (oi->type == GG_CFLOAT32 ? 2 : 1);
        void *out = malloc(n * 4);
        gg_status s = run_tiled(ctx, op, &ii, in, oi, out, tw, th);
        CHECK(s == GG_OK, "%s %s: %s", dev, c->op, gg_op_last_error(op));
        outf = malloc(n * 4);
        for (size_t i = 0; i < n; i++)
            outf[i] = oi->type == GG_BYTE ? ((unsigned char *)out)[i] : ((float *)out)[i];
        free(out);
    } else {
        CHECK(0, "%s prepare: %s", c->op, gg_op_last_error(op));
    }
    gg_op_free(op);
    gg_context_destroy(ctx);
    return outf;
}

static const char *opt(const op_case *c, const char *key, const char *dflt)
{
    for (int i = 0; i < 4 && c->opts[i][0]; i++)
        if (!strcmp(c->opts[i][0], key))
            return c->opts[i][1];
    return dflt;
}

static double *reference(const op_case *c, const float *in, const gg_raster_info *oi)
{
    const size_t n = (size_t)oi->width * oi->height * (oi->type == GG_CFLOAT32 ? 2 : 1);
    double *ref = malloc(n * sizeof(double));
    const int nc = c->complex_in ? 2 : 1;
    if (!strcmp(c->op, "multilook")) {
        int lx, ly;
        sscanf(opt(c, "looks", "1x1"), "%dx%d", &lx, &ly);
        const int mode = nc == 1 ? 0 : (!strcmp(opt(c, "complex", "no"), "yes") ? 2 : 1);
        ref_multilook(in, c->W, c->H, nc, lx, ly, mode, c->has_nodata, c->nodata, oi->nodata, ref);
    } else if (!strcmp(c->op, "rotate")) {
        ref_rotate(in, c->W, c->H, nc, atof(opt(c, "angle", "0")), atof(opt(c, "scale", "1")),
                   oi->width, oi->height, c->has_nodata, c->nodata, oi->nodata, ref);
    } else {
        ref_radnorm(in, c->W, c->H, nc, atof(opt(c, "coef", "1")), atoi(opt(c, "levels", "0")),
                    c->has_nodata, c->nodata, oi->nodata, ref);
    }
    return ref;
}

static float *make_input(const op_case *c)
{
    const size_t n = (size_t)c->W * c->H * (c->complex_in ? 2 : 1);
    float *in = malloc(n * 4);
    /* positive values with a smooth gain (so radnorm has structure) and
     * sprinkled NaN and nodata samples */
    for (int y = 0; y < c->H; y++)
        for (int x = 0; x < c->W; x++) {
            const size_t k = (size_t)y * c->W + x;
            const double g = (1.0 + 0.5 * sin(0.21 * y)) * (1.5 + cos(0.13 * x));
            for (int q = 0; q < (c->complex_in ? 2 : 1); q++)
                in[k * (c->complex_in ? 2 : 1) + q] = (float)(g * urand(0.2, 2.0) * (q ? -1 : 1));
            const double r = urand(0, 1);
            if (r < 0.02)
                in[k * (c->complex_in ? 2 : 1)] = NAN;
            else if (r < 0.04 && c->has_nodata)
                in[k * (c->complex_in ? 2 : 1)] = (float)c->nodata;
        }
    return in;
}

static void test_cases(char devs[][32], int nd)
{
    const op_case cases[] = {
        {"multilook", {{"looks", "4x3"}}, 37, 29, 0, 1, -9999},
        {"multilook", {{"looks", "2x5"}}, 37, 29, 1, 0, 0},
        {"multilook", {{"looks", "3x3"}, {"complex", "yes"}}, 37, 29, 1, 1, 0},
        {"multilook", {{"looks", "1x1"}}, 16, 9, 0, 0, 0},
        {"rotate", {{"angle", "30"}, {"scale", "1.5"}}, 41, 33, 0, 1, -9999},
        {"rotate", {{"angle", "-73.5"}, {"outsize", "50x20"}}, 41, 33, 0, 0, 0},
        {"rotate", {{"angle", "90"}}, 20, 13, 1, 0, 0},
        {"rotate", {{"angle", "0"}}, 23, 17, 0, 1, -1},
        {"rotate", {{"angle", "200"}, {"scale", "0.4"}, {"outsize", "31x19"}}, 64, 48, 1, 1, 0},
        {"radnorm", {{"coef", "35"}}, 37, 29, 0, 1, -9999},
        {"radnorm", {{"coef", "2"}}, 30, 21, 1, 0, 0},
        {"radnorm", {{"coef", "100"}, {"levels", "200"}}, 37, 29, 0, 1, -9999},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const op_case *c = &cases[k];
        float *in = make_input(c);
        float *first = NULL;
        size_t n = 0;
        for (int d = 0; d < nd; d++) {
            gg_raster_info oi;
            /* whole image in one tile, then in small uneven tiles */
            float *whole = run_case(devs[d], c, in, 1 << 20, 1 << 20, &oi);
            float *tiled = run_case(devs[d], c, in, 7, 5, &oi);
            if (!whole || !tiled) {
                free(whole);
                free(tiled);
                continue;
            }
            n = (size_t)oi.width * oi.height * (oi.type == GG_CFLOAT32 ? 2 : 1);
            double *ref = reference(c, in, &oi);
            size_t mm = 0;
            const double tol = !strcmp(c->op, "rotate") ? 1e-4 : 1e-5;
            double e = ref_rel_l2(whole, ref, n, oi.nodata, &mm);
            /* quantised output: round-half cases may flip by one level */
            if (!strcmp(opt(c, "levels", "0"), "0"))
                CHECK(e <= tol && mm == 0, "%s %s case %zu: rel err %.3g, %zu mask mismatches", devs[d],
                      c->op, k, e, mm);
            else {
                size_t off = 0;
                for (size_t i = 0; i < n; i++)
                    off += fabs(whole[i] - ref[i]) > 1.0 || (fabs(whole[i] - ref[i]) > 0 && (ref[i] == 255 || whole[i] == 255));
                CHECK(off == 0 && e <= 1e-2, "%s quantised case %zu: %zu levels off, rel err %.3g", devs[d], k, off, e);
            }
            printf("  %-6s %-9s case %2zu: rel err %.2e (%dx%d -> %dx%d)\n", devs[d], c->op, k, e, c->W,
                   c->H, oi.width, oi.height);
            CHECK(!memcmp(whole, tiled, n * 4), "%s %s case %zu: tiled run differs from whole run",
                  devs[d], c->op, k);
            /* devices agree with the first one */
            if (!first) {
                first = whole;
                whole = NULL;
            } else {
                double num = 0, den = 0;
                size_t mism = 0;
                for (size_t i = 0; i < n; i++) {
                    if (isnan(first[i]) != isnan(whole[i]) || (first[i] == (float)oi.nodata) != (whole[i] == (float)oi.nodata)) {
                        mism++;
                        continue;
                    }
                    if (isnan(first[i]) || first[i] == (float)oi.nodata)
                        continue;
                    num += (double)(first[i] - whole[i]) * (first[i] - whole[i]);
                    den += (double)first[i] * first[i];
                }
                const double agree = den > 0 ? sqrt(num / den) : 0;
                CHECK(mism == 0 && agree <= tol, "%s vs %s %s case %zu: rel diff %.3g, %zu mask diffs",
                      devs[d], devs[0], c->op, k, agree, mism);
            }
            free(ref);
            free(whole);
            free(tiled);
        }
        free(first);
        free(in);
    }
}

static void expect_bad(const char *opname, const char *key, const char *value, const char *word)
{
    gg_op *op = NULL;
    char err[512];
    if (gg_op_new(opname, &op, err, sizeof err) != GG_OK)
        return;
    CHECK(gg_op_set(op, key, value) == GG_ERR_ARGUMENT, "%s %s=%s accepted", opname, key, value);
    CHECK(strstr(gg_op_last_error(op), word) != NULL, "%s %s=%s: message '%s' lacks '%s'", opname,
          key, value, gg_op_last_error(op), word);
    gg_op_free(op);
}

static void test_bad_options(void)
{
    expect_bad("multilook", "looks", "0x4", "looks");
    expect_bad("multilook", "looks", "abc", "looks");
    expect_bad("multilook", "looks", "4x", "looks");
    expect_bad("rotate", "angle", "nan", "angle");
    expect_bad("rotate", "angle", "inf", "angle");
    expect_bad("rotate", "scale", "0", "scale");
    expect_bad("rotate", "scale", "-1", "scale");
    expect_bad("rotate", "outsize", "0x10", "outsize");
    expect_bad("radnorm", "levels", "1", "levels");
    expect_bad("radnorm", "levels", "300", "levels");
    expect_bad("radnorm", "coef", "-2", "coef");
    expect_bad("radnorm", "nosuch", "1", "unknown option");
    expect_bad("multilook", "srcnodata", "x", "srcnodata");

    char err[512];
    gg_op *op = NULL;
    CHECK(gg_op_new("nosuchop", &op, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "unknown operation"),
          "unknown op: %s", err);
    /* looks larger than the image fail at prepare, naming the sizes */
    CHECK(gg_op_new("multilook", &op, err, sizeof err) == GG_OK, "%s", err);
    gg_op_set(op, "looks", "8x8");
    gg_raster_info ii = {5, 5, 1, GG_FLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "larger than the 5x5 image"),
          "looks too large: %s", gg_op_last_error(op));
    gg_op_free(op);
    /* the options string round-trips into the GG: form */
    CHECK(gg_op_new("rotate", &op, err, sizeof err) == GG_OK, "%s", err);
    gg_op_set(op, "angle", "30");
    gg_op_set(op, "scale", "1.5");
    char buf[256];
    CHECK(gg_op_options_string(op, buf, sizeof buf) == GG_OK && !strcmp(buf, "angle=30:scale=1.5"),
          "options string '%s'", buf);
    gg_op_free(op);
    /* radnorm refuses to run before its statistics exist */
    CHECK(gg_op_new("radnorm", &op, err, sizeof err) == GG_OK, "%s", err);
    gg_raster_info ri = {4, 4, 1, GG_FLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0};
    gg_op_prepare(op, &ri, &oi);
    float src[16], dst[16];
    for (int i = 0; i < 16; i++)
        src[i] = 1.0f + (float)i;
    gg_tile ts = {src, GG_FLOAT32, 4, 4, 4, 0, 0}, td = {dst, GG_FLOAT32, 4, 4, 4, 0, 0};
    gg_context *ctx = NULL;
    gg_context_create("cpu", &ctx, err, sizeof err);
    CHECK(gg_op_run(ctx, op, 0, &ts, &td) == GG_ERR_ARGUMENT && strstr(gg_op_last_error(op), "statistics"),
          "radnorm without stats: %s", gg_op_last_error(op));
    /* an all-invalid band has no statistics to normalise with */
    for (int i = 0; i < 16; i++)
        src[i] = NAN;
    gg_op_accumulate(ctx, op, 0, &ts);
    CHECK(gg_op_finish_stats(ctx, op, 0) == GG_ERR_ARGUMENT && strstr(gg_op_last_error(op), "no valid pixels"),
          "all-NaN radnorm: %s", gg_op_last_error(op));
    gg_context_destroy(ctx);
    gg_op_free(op);
}

/* The output geotransform of rotate georeferences the output: the ground
 * point of an output pixel centre equals the input's ground point of the
 * source position it samples. */
static void test_rotate_geotransform(void)
{
    gg_op *op = NULL;
    char err[512];
    gg_op_new("rotate", &op, err, sizeof err);
    gg_op_set(op, "angle", "30");
    gg_op_set(op, "scale", "1.5");
    gg_op_set(op, "outsize", "70x50");
    const double *g;
    gg_raster_info ii = {40, 30, 1, GG_FLOAT32, {1000, 10, 1, 5000, 2, -10}, 1, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "%s", gg_op_last_error(op));
    g = ii.geotransform;
    const double a = 30 * M_PI / 180;
    for (int X = 0; X < 70; X += 23)
        for (int Y = 0; Y < 50; Y += 17) {
            const double dx = X - 34.5, dy = Y - 24.5;
            const double sx = 19.5 + (cos(a) * dx - sin(a) * dy) / 1.5;
            const double sy = 14.5 + (sin(a) * dx + cos(a) * dy) / 1.5;
            const double ex = g[0] + (sx + 0.5) * g[1] + (sy + 0.5) * g[2];
            const double ey = g[3] + (sx + 0.5) * g[4] + (sy + 0.5) * g[5];
            const double *o = oi.geotransform;
            const double gx = o[0] + (X + 0.5) * o[1] + (Y + 0.5) * o[2];
            const double gy = o[3] + (X + 0.5) * o[4] + (Y + 0.5) * o[5];
            CHECK(fabs(gx - ex) < 1e-9 && fabs(gy - ey) < 1e-9, "GT at %d,%d: %g,%g vs %g,%g", X, Y, gx, gy, ex, ey);
        }
    gg_op_free(op);
}

int main(void)
{
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    test_cases(devs, nd);
    test_bad_options();
    test_rotate_geotransform();
    return check_summary("test_ops");
}
