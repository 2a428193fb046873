/* test_xcorr.c -- the xcorr (quality-mode dense offsets) stack op on every
 * test device:
 *   1. peer known answer: PyCuAmpcor's golden outputs on isce3's white-noise
 *      pair (autotest_data/ampcor_whitenoise, or ../shared/data; skipped
 *      when absent) with the golden parameters: offsets within 0.1 px
 *      everywhere and 0.02 px on average (isce3's tolerances), SNR within
 *      1/64 relative, covariance within 1/64 relative, correlation peak
 *      within 0.02;
 *   2. fractional-shift sweep on synthetic band-limited speckle
 *      (coherence 0.6, shifts 0.0..0.9 on both axes): |mean bias| <= 0.02 px,
 *      also with a tapered (Winnipeg-like) azimuth spectrum; the quality
 *      flag (peak_ratio) separating pure-noise windows from weak real ones
 *      where the SNR does not;
 *   3. a float64 reference of the whole estimator, written here from the
 *      specification (docs/gdal_xcorr.md) with naive DFTs and direct sums,
 *      on a small case: offsets within 0.01 px (1/ovs/2 grid), SNR and peak
 *      within 1e-3 relative;
 *   4. devices agree: offsets within 0.01 px on valid windows, same masks;
 *   5. invalid windows (NaN block, nodata) are nodata, never an abort;
 *   6. bad options are refused with a message;
 *   7. GMTSAR mode: a float64 reference of GMTSAR's algorithm (fixes
 *      included) on every device, the planner's chunks vs one location row
 *      per chunk (wrapping line rings, through the internal
 *      gg_xcorr_gmtsar_chunked), devices against each other, patches off
 *      the file (corr 0, no abort);
 *   8. GMTSAR mode's edges, each against the float64 reference (which
 *      takes each file's own size, invalid samples and the marking rules)
 *      and across devices: pairs of different sizes (aligned shorter,
 *      longer and wider, narrower; master shorter), zero-filled borders
 *      (with and without -zero_is_data), correlation-0 patches (an
 *      all-zero and a constant master patch: offsets exactly 0);
 *   9. GMTSAR mode's steps at kernel level (gmtsar_kernels): the CPU
 *      backend's extract16, colstats and pad against their definitions bit
 *      for bit, its rank-2 FFT against FFTW's 2-D plan bit for bit, other
 *      devices against the CPU.
 * One command runs one test: test_xcorr <name> (names at main).
 *
 * MIT licence. */
#include "check.h"
#include "algorithms/coreg/gmtsar_xcorr.h"
#include "algorithms/coreg/coreg_params.h"
#include "algorithms/coreg/xcorr_engine.h"
#include "algorithms/kernel_ids.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <stdint.h>
#include <execinfo.h>
#include <signal.h>

#define MAXDEV 4

/* ------------------------------------------------------------- helpers */

typedef struct {
    int nx, ny;
    float *b[GG_XC_NBANDS];
} xc_result;

static void result_free(xc_result *r)
{
    for (int i = 0; i < GG_XC_NBANDS; i++)
        free(r->b[i]);
    memset(r, 0, sizeof *r);
}

/* Runs xcorr over the whole image in one tile. opts: "key=value" list. */
static int run_xcorr(const char *dev, const float *a, const float *b, int W, int H,
                     const char *const *opts, int has_nodata, double nodata, xc_result *r)
{
    gg_context *ctx = NULL;
    char err[512];
    memset(r, 0, sizeof *r);
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        fprintf(stderr, "context %s: %s\n", dev, err);
        return -1;
    }
    gg_op *op = NULL;
    int rc = -1;
    if (gg_op_new("xcorr", &op, err, sizeof err) != GG_OK)
        goto done;
    for (int i = 0; opts && opts[i]; i++) {
        char key[64];
        const char *eq = strchr(opts[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - opts[i]), opts[i]);
        if (gg_op_set(op, key, eq + 1) != GG_OK) {
            fprintf(stderr, "set %s: %s\n", opts[i], gg_op_last_error(op));
            goto done;
        }
    }
    gg_raster_info in = {.width = W, .height = H, .bands = 2, .type = GG_CFLOAT32,
                         .has_nodata = has_nodata, .nodata = nodata}, out;
    if (gg_op_prepare(op, &in, &out) != GG_OK) {
        fprintf(stderr, "prepare: %s\n", gg_op_last_error(op));
        goto done;
    }
    r->nx = out.width;
    r->ny = out.height;
    gg_tile src[2] = {{(void *)a, GG_CFLOAT32, W, H, (size_t)W, 0, 0},
                      {(void *)b, GG_CFLOAT32, W, H, (size_t)W, 0, 0}};
    gg_tile dst[GG_XC_NBANDS];
    for (int i = 0; i < GG_XC_NBANDS; i++) {
        r->b[i] = calloc((size_t)out.width * out.height, sizeof(float));
        dst[i] = (gg_tile){r->b[i], GG_FLOAT32, out.width, out.height, (size_t)out.width, 0, 0};
    }
    if (gg_op_run_stack(ctx, op, src, 2, dst, GG_XC_NBANDS) != GG_OK) {
        fprintf(stderr, "run: %s\n", gg_op_last_error(op));
        goto done;
    }
    rc = 0;
done:
    if (rc && op && !err[0])
        snprintf(err, sizeof err, "%s", gg_op_last_error(op));
    gg_op_free(op);
    gg_context_destroy(ctx);
    return rc;
}

static float *read_raw(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    float *d = malloc(n * sizeof(float));
    if (fread(d, sizeof(float), n, f) != n) {
        free(d);
        d = NULL;
    }
    fclose(f);
    return d;
}

/* ------------------------------------------------------- 1. golden */

static const char *data_dir(void)
{
    static char dir[1024];
    const char *cands[] = {getenv("GG_AMPCOR_DIR"), GG_SOURCE_DIR "/autotest_data/ampcor_whitenoise",
                           GG_SOURCE_DIR "/../shared/data/ampcor_whitenoise"};
    for (int i = 0; i < 3; i++) {
        if (!cands[i])
            continue;
        snprintf(dir, sizeof dir, "%s/img1_WN_512x512_1x1_128", cands[i]);
        FILE *f = fopen(dir, "rb");
        if (f) {
            fclose(f);
            snprintf(dir, sizeof dir, "%s", cands[i]);
            return dir;
        }
    }
    return NULL;
}

static const char *golden_opts[] = {"window=64x32", "search=20x20", "skip=32x32", "start=20x20",
                                    "count=12x13", "zoom=8", "ovs=64", "deramp=yes",
                                    "snrwindow=21", NULL};

static void test_golden(const char *dev, xc_result *keep)
{
    const char *dir = data_dir();
    if (!dir) {
        printf("golden: ampcor_whitenoise data not found, skipped\n");
        return;
    }
    char p[1200];
    const int W = 512, H = 512, NX = 12, NY = 13;
    snprintf(p, sizeof p, "%s/img1_WN_512x512_1x1_128", dir);
    float *a = read_raw(p, (size_t)2 * W * H);
    snprintf(p, sizeof p, "%s/img2_WN_512x512_1x1_128", dir);
    float *b = read_raw(p, (size_t)2 * W * H);
    snprintf(p, sizeof p, "%s/golden/dense_offsets", dir);
    float *go = read_raw(p, (size_t)2 * NX * NY);
    snprintf(p, sizeof p, "%s/golden/snr", dir);
    float *gs = read_raw(p, (size_t)NX * NY);
    snprintf(p, sizeof p, "%s/golden/covariance", dir);
    float *gc = read_raw(p, (size_t)3 * NX * NY);
    snprintf(p, sizeof p, "%s/golden/correlation_peak", dir);
    float *gp = read_raw(p, (size_t)NX * NY);
    CHECK(a && b && go && gs && gc && gp, "golden files readable in %s", dir);
    if (!(a && b && go && gs && gc && gp))
        goto out;
    xc_result r;
    CHECK(run_xcorr(dev, a, b, W, H, golden_opts, 0, 0, &r) == 0, "%s: golden run", dev);
    if (!r.b[0])
        goto out;
    CHECK(r.nx == NX && r.ny == NY, "%s: golden grid %dx%d", dev, r.nx, r.ny);
    /* The golden's true offset is 0 (white noise pair): where the golden
     * itself is within 0.1 px of that truth it must agree with us within
     * 0.1 px; everywhere our own error against the truth must stay within
     * 0.1 px.  (One golden window, -0.133 px across, misses the truth by
     * more than the tolerance; there we differ by 0.11 px.) */
    double maxd = 0, sumd[2] = {0, 0}, maxsnr = 0, maxcov = 0, maxerr = 0;
    double rms_ours = 0, rms_gold = 0;
    int skipped = 0;
    for (int i = 0; i < NX * NY; i++) {
        for (int k = 0; k < 2; k++) {
            const double d = r.b[k][i] - go[2 * i + k];
            if (fabs(go[2 * i + k]) <= 0.1)
                maxd = fmax(maxd, fabs(d));
            else
                skipped++;
            sumd[k] += d;
            maxerr = fmax(maxerr, fabs(r.b[k][i]));
            rms_ours += (double)r.b[k][i] * r.b[k][i];
            rms_gold += (double)go[2 * i + k] * go[2 * i + k];
        }
        maxsnr = fmax(maxsnr, fabs(r.b[2][i] - gs[i]) / gs[i]);
        for (int k = 0; k < 3; k++) /* cov_da is ~1e-6: relative to the diagonal */
            maxcov = fmax(maxcov, fabs(r.b[3 + k][i] - gc[3 * i + k]) /
                                      (k == 2 ? fabs(gc[3 * i]) : fabs(gc[3 * i + k])));
        CHECK(r.b[6][i] > 0.3 && r.b[6][i] <= 1.0, "%s: window %d peak %.3f", dev, i, r.b[6][i]);
    }
    const double n = NX * NY;
    printf("%s golden: max |d| %.4f px (%d golden values off the truth by > 0.1 left out), mean d "
           "%.4f / %.4f px, rms vs truth ours %.4f golden %.4f, max |ours| %.4f, SNR rel %.2e, "
           "cov rel %.2e\n", dev, maxd, skipped, sumd[0] / n, sumd[1] / n, sqrt(rms_ours / (2 * n)),
           sqrt(rms_gold / (2 * n)), maxerr, maxsnr, maxcov);
    CHECK(maxd <= 0.1, "%s: golden offsets max |diff| %.4f > 0.1 px", dev, maxd);
    CHECK(skipped <= 2, "%s: %d golden values left out", dev, skipped);
    CHECK(maxerr <= 0.1, "%s: max |offset| %.4f > 0.1 px on a zero-offset pair", dev, maxerr);
    CHECK(fabs(sumd[0] / n) <= 0.02 && fabs(sumd[1] / n) <= 0.02,
          "%s: golden mean diff %.4f %.4f > 0.02 px", dev, sumd[0] / n, sumd[1] / n);
    CHECK(maxsnr <= 1.0 / 64, "%s: golden SNR rel diff %.4f > 1/64", dev, maxsnr);
    CHECK(maxcov <= 1.0 / 64, "%s: golden covariance rel diff %.4f > 1/64", dev, maxcov);
    if (keep)
        *keep = r;
    else
        result_free(&r);
out:
    free(a);
    free(b);
    free(go);
    free(gs);
    free(gc);
    free(gp);
}

/* ---------------------------------------------- synthetic speckle */

/* Band-limited (frac of each axis' band) circular complex Gaussian speckle
 * pair: s2 = coh * s1 shifted by (dx, dy) + sqrt(1 - coh^2) * independent
 * speckle (feature at x in s1 appears at x + dx in s2).  Spectra shaped
 * with the library's FFT on the CPU (the generator, not what is tested). */
static void make_pair_spectrum(int W, int H, double dx, double dy, double coh, double frac,
                               int az_taper, float *s1, float *s2);
static void make_pair(int W, int H, double dx, double dy, double coh, double frac, float *s1,
                      float *s2)
{
    make_pair_spectrum(W, H, dx, dy, coh, frac, 0, s1, s2);
}

/* make_pair with, when az_taper, the azimuth (down) spectrum over the
 * whole band weighted by cos(pi f) in amplitude (f in cycles per line):
 * the shape of the Winnipeg SLC's measured azimuth power spectrum (about
 * cos^2: 0.8-0.9 at the centre, 0.35 at +-0.3, 0.02-0.15 at the band
 * edges; autotest_data/winnipeg_slc), range band-limited to frac as
 * make_pair. */
static void make_pair_spectrum(int W, int H, double dx, double dy, double coh, double frac,
                               int az_taper, float *s1, float *s2)
{
    gg_context *ctx = NULL;
    char err[256];
    gg_context_create("cpu", &ctx, err, sizeof err);
    const size_t n = (size_t)W * H;
    float *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
    for (size_t i = 0; i < n; i++) { /* Box-Muller */
        for (int k = 0; k < 2; k++) {
            float *t = k ? b : a;
            const double u1 = urand(1e-12, 1), u2 = urand(0, 1), u3 = urand(1e-12, 1),
                         u4 = urand(0, 1);
            t[2 * i] = (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
            t[2 * i + 1] = (float)(sqrt(-2 * log(u3)) * cos(2 * M_PI * u4));
        }
    }
    gg_buffer *buf;
    gg_buffer_alloc(ctx, n * 8, &buf);
    const int shape[2] = {H, W};
    for (int k = 0; k < 2; k++) {
        float *t = k ? b : a;
        gg_buffer_write(ctx, buf, 0, t, n * 8);
        gg_fft(ctx, buf, 2, shape, 1, 0);
        gg_buffer_read(ctx, buf, 0, t, n * 8);
    }
    /* band limit, shift the coherent part */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * W + x;
            const int fy = y <= H / 2 ? y : y - H, fx = x <= W / 2 ? x : x - W;
            const int keep = (az_taper || abs(fy) < frac * H / 2) && abs(fx) < frac * W / 2;
            if (!keep) {
                a[2 * i] = a[2 * i + 1] = b[2 * i] = b[2 * i + 1] = 0;
            } else if (az_taper) {
                const float t = (float)cos(M_PI * (double)fy / H);
                a[2 * i] *= t;
                a[2 * i + 1] *= t;
                b[2 * i] *= t;
                b[2 * i + 1] *= t;
            }
            const double ph = -2 * M_PI * ((double)fx * dx / W + (double)fy * dy / H);
            const double cr = cos(ph), ci = sin(ph);
            const double re = a[2 * i], im = a[2 * i + 1];
            c[2 * i] = (float)(coh * (re * cr - im * ci) + sqrt(1 - coh * coh) * b[2 * i]);
            c[2 * i + 1] = (float)(coh * (re * ci + im * cr) + sqrt(1 - coh * coh) * b[2 * i + 1]);
        }
    for (int k = 0; k < 2; k++) {
        float *t = k ? c : a;
        float *o = k ? s2 : s1;
        gg_buffer_write(ctx, buf, 0, t, n * 8);
        gg_fft(ctx, buf, 2, shape, 1, 1);
        gg_buffer_read(ctx, buf, 0, o, n * 8);
        for (size_t i = 0; i < 2 * n; i++)
            o[i] *= 100.0f / (float)n;
    }
    gg_buffer_free(ctx, buf);
    gg_context_destroy(ctx);
    free(a);
    free(b);
    free(c);
}

/* ----------------------------------- 2b. quality flag (peak_ratio) */

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Quantile q of the finite values of v (n of them; sorted in place). */
static float quantile(float *v, int n, double q)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[m++] = v[i];
    if (!m)
        return NAN;
    qsort(v, (size_t)m, sizeof *v, cmp_float);
    return v[(int)(q * (m - 1) + 0.5)];
}

/* Pure-noise windows (independent speckle) against weakly correlated ones
 * (coherence 0.45), both with the tapered (Winnipeg-like) azimuth
 * spectrum, at a small and a larger search (6 and 20 px).  The SNR of
 * pure noise grows with the search (more lags to pick the largest from)
 * and most noise windows pass -snr 5 at both; the peak_ratio band of pure
 * noise stays near 1 at any search, so one threshold (1.5,
 * docs/gdal_xcorr.md) removes the noise and keeps the weak matches.  The
 * windows overlap (skip 16 of 64), so a fraction over one pair varies by
 * a few per cent from realisation to realisation (noise passing 1.5:
 * 2.8-5.4 % at search 6): the bounds are 10 % and 80 %. */
static void test_quality_flag(const char *dev)
{
    const int W = 512, H = 512;
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    const double thr = 1.5;
    for (int c = 0; c < 4; c++) {
        const int weak = c & 1, search = c < 2 ? 6 : 20;
        char sopt[32];
        snprintf(sopt, sizeof sopt, "search=%dx%d", search, search);
        const char *opts[] = {"window=64x64", sopt, "skip=16x16", "zoom=16", "ovs=16", NULL};
        make_pair_spectrum(W, H, 0.4, -0.3, weak ? 0.45 : 0.0, 0.8, 1, s1, s2);
        xc_result r;
        if (run_xcorr(dev, s1, s2, W, H, opts, 0, 0, &r) != 0) {
            CHECK(0, "%s: quality flag run", dev);
            break;
        }
        const int n = r.nx * r.ny;
        int m = 0, right = 0;
        double above = 0, snr5 = 0;
        for (int i = 0; i < n; i++) {
            if (!isfinite(r.b[7][i]))
                continue;
            m++;
            above += r.b[7][i] >= thr;
            snr5 += r.b[2][i] >= 5;
            right += fabs(r.b[0][i] + 0.3) < 0.5 && fabs(r.b[1][i] - 0.4) < 0.5;
            CHECK(r.b[7][i] >= 1.0f && r.b[7][i] <= GG_XC_PRATIO_MAX, "%s: peak_ratio %g", dev,
                  r.b[7][i]);
        }
        CHECK(m == n && m > 0, "%s: %d of %d windows valid", dev, m, n);
        if (!m)
            break;
        above /= m;
        snr5 /= m;
        float sq[3], pq[3];
        const double qs[3] = {0.05, 0.5, 0.95};
        for (int j = 0; j < 3; j++) {
            sq[j] = quantile(r.b[2], n, qs[j]);
            pq[j] = quantile(r.b[7], n, qs[j]);
        }
        printf("%s quality flag, %s, search %d: %d windows, %d within 0.5 px of the shift; SNR "
               "5/50/95 %% %.1f %.1f %.1f, SNR >= 5 %.1f %%; peak_ratio 5/50/95 %% %.2f %.2f "
               "%.2f, >= %.1f %.1f %%\n", dev, weak ? "coherence 0.45" : "pure noise", search, n,
               right, sq[0], sq[1], sq[2], 100 * snr5, pq[0], pq[1], pq[2], thr, 100 * above);
        if (weak) {
            CHECK(right >= 0.9 * n, "%s: only %d of %d weak windows found the shift", dev, right, n);
            CHECK(above >= 0.8, "%s: search %d: only %.3f of weak real windows have peak_ratio "
                  ">= %.1f", dev, search, above, thr);
        } else {
            /* the SNR keeps most noise windows at -snr 5; the ratio removes them */
            CHECK(snr5 >= 0.5, "%s: search %d: noise windows with SNR >= 5: %.2f (meant to be "
                  "hard for the SNR)", dev, search, snr5);
            CHECK(above <= 0.1, "%s: search %d: %.3f of pure-noise windows have peak_ratio >= "
                  "%.1f", dev, search, above, thr);
        }
        result_free(&r);
    }
    free(s1);
    free(s2);
}

/* ------------------------------------------- 2. fractional sweep */

static void test_sweep(const char *dev, int az_taper)
{
    const int W = 512, H = 512;
    const char *label = az_taper ? "tapered sweep" : "sweep";
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    const char *opts[] = {"window=64x64", "search=6x6", "skip=32x32", "zoom=16", "ovs=64", NULL};
    double worst = 0;
    for (int axis = 0; axis < 2; axis++)
        for (int f = 0; f <= 9; f++) {
            const double sh = 1 + 0.1 * f; /* integer part 1 exercises the search too */
            const double dx = axis ? 0.3 : sh, dy = axis ? sh : -0.3;
            make_pair_spectrum(W, H, dx, dy, 0.6, 0.8, az_taper, s1, s2);
            xc_result r;
            if (run_xcorr(dev, s1, s2, W, H, opts, 0, 0, &r) != 0) {
                CHECK(0, "%s: %s run", dev, label);
                continue;
            }
            double by = 0, bx = 0;
            int n = 0, out = 0;
            for (int i = 0; i < r.nx * r.ny; i++) {
                const double ey = r.b[0][i] - dy, ex = r.b[1][i] - dx;
                if (!isfinite(ey) || fabs(ey) > 1 || fabs(ex) > 1) {
                    out++;
                    continue;
                }
                by += ey;
                bx += ex;
                n++;
            }
            by /= n;
            bx /= n;
            const double bias = axis ? by : bx;
            worst = fmax(worst, fabs(bias));
            printf("%s %s %s shift %.1f: bias %+.4f px (other axis %+.4f), %d windows, %d "
                   "outliers\n", dev, label, axis ? "down" : "across", sh, bias, axis ? bx : by, n,
                   out);
            CHECK(fabs(by) <= 0.02 && fabs(bx) <= 0.02, "%s: %s bias %.4f %.4f > 0.02 px", dev,
                  label, by, bx);
            CHECK(out <= r.nx * r.ny / 20, "%s: %d outliers of %d", dev, out, r.nx * r.ny);
            result_free(&r);
        }
    printf("%s %s: worst |bias| %.4f px\n", dev, label, worst);
    free(s1);
    free(s2);
}

/* ------------------------------------- 3. float64 reference */

typedef double complex dcx;

/* zero-padded DFT oversampling (x o) of a w x h complex image, split
 * Nyquist, normalised; naive DFTs */
static void ref_oversample(const dcx *in, int w, int h, int o, dcx *out)
{
    const int W = w * o, H = h * o;
    dcx *F = calloc((size_t)w * h, sizeof(dcx));
    for (int ky = 0; ky < h; ky++)
        for (int kx = 0; kx < w; kx++) {
            dcx a = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    a += in[y * w + x] * cexp(-2 * M_PI * I * ((double)ky * y / h + (double)kx * x / w));
            F[ky * w + kx] = a / (w * h);
        }
    for (int Y = 0; Y < H; Y++)
        for (int X = 0; X < W; X++) {
            dcx a = 0;
            for (int ky = 0; ky < h; ky++) {
                const int fy = ky < (h + 1) / 2 ? ky : ky - h;
                const double wy = (h % 2 == 0 && ky == h / 2) ? 0.5 : 1;
                for (int kx = 0; kx < w; kx++) {
                    const int fx = kx < (w + 1) / 2 ? kx : kx - w;
                    const double wx = (w % 2 == 0 && kx == w / 2) ? 0.5 : 1;
                    /* a split Nyquist bin contributes at +f and -f */
                    for (int sy = 0; sy < (wy < 1 ? 2 : 1); sy++)
                        for (int sx = 0; sx < (wx < 1 ? 2 : 1); sx++) {
                            const double gy = sy ? -fy : fy, gx = sx ? -fx : fx;
                            a += wy * wx * F[ky * w + kx] *
                                 cexp(2 * M_PI * I * (gy * Y / H + gx * X / W));
                        }
                }
            }
            out[Y * W + X] = a;
        }
    free(F);
}

/* NCC of amplitudes: template t (rw x rh) in chip c (sw x sh) at lags
 * ly x lx, by direct sums */
static void ref_ncc(const double *t, int rw, int rh, const double *c, int sw, int ly, int lx,
                    double *out)
{
    double mt = 0;
    for (int i = 0; i < rw * rh; i++)
        mt += t[i];
    mt /= rw * rh;
    double tt = 0;
    for (int i = 0; i < rw * rh; i++)
        tt += (t[i] - mt) * (t[i] - mt);
    for (int k = 0; k < ly; k++)
        for (int l = 0; l < lx; l++) {
            double mc = 0;
            for (int u = 0; u < rh; u++)
                for (int v = 0; v < rw; v++)
                    mc += c[(k + u) * sw + l + v];
            mc /= rw * rh;
            double tc = 0, cc = 0;
            for (int u = 0; u < rh; u++)
                for (int v = 0; v < rw; v++) {
                    const double d = c[(k + u) * sw + l + v] - mc;
                    tc += (t[u * rw + v] - mt) * d;
                    cc += d * d;
                }
            out[k * lx + l] = tc / sqrt(tt * cc);
        }
}

/* The mean phase step per axis removed, unless the lag-1 correlation
 * |sum c[i] conj c[i+1]| / (mean power of the pairs) is below 3 / sqrt(pairs):
 * a white spectrum has no carrier to remove (docs/gdal_xcorr.md). */
static void ref_deramp(dcx *c, int w, int h)
{
    dcx sy = 0, sx = 0;
    double py2 = 0, px2 = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const double p = creal(c[y * w + x] * conj(c[y * w + x]));
            if (x + 1 < w) {
                sx += c[y * w + x] * conj(c[y * w + x + 1]);
                px2 += 0.5 * (p + creal(c[y * w + x + 1] * conj(c[y * w + x + 1])));
            }
            if (y + 1 < h) {
                sy += c[y * w + x] * conj(c[(y + 1) * w + x]);
                py2 += 0.5 * (p + creal(c[(y + 1) * w + x] * conj(c[(y + 1) * w + x])));
            }
        }
    const double py = cabs(sy) * sqrt((double)w * (h - 1)) >= 3 * py2 ? carg(sy) : 0;
    const double px = cabs(sx) * sqrt((double)(w - 1) * h) >= 3 * px2 ? carg(sx) : 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            c[y * w + x] *= cexp(I * (py * y + px * x));
}

/* The estimator of one window, from its template position (rx, ry) in a
 * and chip position in b: out[0..6] as the op's bands. */
static void ref_window(const float *a, const float *b, int W, int rx, int ry, int rw, int rh,
                       int hs, int zw, int ovs, double *out)
{
    const int sw = rw + 2 * hs, sh = rh + 2 * hs, L = 2 * hs + 1, hz = zw / 4;
    dcx *tc = malloc(sizeof(dcx) * rw * rh), *cc = malloc(sizeof(dcx) * sw * sh);
    double *ta = malloc(sizeof(double) * rw * rh), *ca = malloc(sizeof(double) * sw * sh);
    for (int y = 0; y < rh; y++)
        for (int x = 0; x < rw; x++) {
            const size_t k = (size_t)(ry + y) * W + rx + x;
            tc[y * rw + x] = a[2 * k] + I * a[2 * k + 1];
            ta[y * rw + x] = cabs(tc[y * rw + x]);
        }
    for (int y = 0; y < sh; y++)
        for (int x = 0; x < sw; x++) {
            const size_t k = (size_t)(ry - hs + y) * W + rx - hs + x;
            cc[y * sw + x] = b[2 * k] + I * b[2 * k + 1];
            ca[y * sw + x] = cabs(cc[y * sw + x]);
        }
    double *surf = malloc(sizeof(double) * L * L);
    ref_ncc(ta, rw, rh, ca, sw, L, L, surf);
    int py = 0, px = 0;
    for (int i = 0; i < L * L; i++)
        if (surf[i] > surf[py * L + px])
            py = i / L, px = i % L;
    const double pk = surf[py * L + px];
    double sq = 0;
    int n = 0;
    for (int y = py - 10; y <= py + 10; y++)
        for (int x = px - 10; x <= px + 10; x++)
            if (y >= 0 && x >= 0 && y < L && x < L) {
                sq += surf[y * L + x] * surf[y * L + x];
                n++;
            }
    out[2] = pk * pk / ((sq - pk * pk) / (n - 1));
    /* zoom */
    const int st_y = py - hz < 0 ? 0 : (py - hz > L - 1 - 2 * hz ? L - 1 - 2 * hz : py - hz);
    const int st_x = px - hz < 0 ? 0 : (px - hz > L - 1 - 2 * hz ? L - 1 - 2 * hz : px - hz);
    const int zcw = rw + 2 * hz, zch = rh + 2 * hz;
    dcx *zc = malloc(sizeof(dcx) * zcw * zch);
    for (int y = 0; y < zch; y++)
        for (int x = 0; x < zcw; x++)
            zc[y * zcw + x] = cc[(st_y + y) * sw + st_x + x];
    ref_deramp(tc, rw, rh);
    ref_deramp(zc, zcw, zch);
    dcx *to = malloc(sizeof(dcx) * 4 * rw * rh), *zo = malloc(sizeof(dcx) * 4 * zcw * zch);
    ref_oversample(tc, rw, rh, 2, to);
    ref_oversample(zc, zcw, zch, 2, zo);
    double *toa = malloc(sizeof(double) * 4 * rw * rh), *zoa = malloc(sizeof(double) * 4 * zcw * zch);
    for (int i = 0; i < 4 * rw * rh; i++)
        toa[i] = cabs(to[i]);
    for (int i = 0; i < 4 * zcw * zch; i++)
        zoa[i] = cabs(zo[i]);
    const int L2 = 4 * hz + 1;
    double *zs = malloc(sizeof(double) * L2 * L2);
    ref_ncc(toa, 2 * rw, 2 * rh, zoa, 2 * zcw, L2, L2, zs);
    int zy = 0, zx = 0;
    for (int y = 0; y < zw; y++)
        for (int x = 0; x < zw; x++)
            if (zs[y * L2 + x] > zs[zy * L2 + zx])
                zy = y, zx = x;
    /* band-limited interpolation of the zw x zw surface at m/ovs, m within
     * one sample of the integer peak */
    dcx *F = calloc((size_t)zw * zw, sizeof(dcx));
    for (int ky = 0; ky < zw; ky++)
        for (int kx = 0; kx < zw; kx++)
            for (int y = 0; y < zw; y++)
                for (int x = 0; x < zw; x++)
                    F[ky * zw + kx] += zs[y * L2 + x] *
                                       cexp(-2 * M_PI * I * ((double)ky * y + (double)kx * x) / zw);
    double best = -1e300, by = 0, bx = 0;
    for (int my = zy * ovs - ovs; my <= zy * ovs + ovs; my++)
        for (int mx = zx * ovs - ovs; mx <= zx * ovs + ovs; mx++) {
            double v = 0;
            for (int ky = 0; ky < zw; ky++)
                for (int kx = 0; kx < zw; kx++) {
                    const int fy = ky < zw / 2 ? ky : ky - zw, fx = kx < zw / 2 ? kx : kx - zw;
                    /* the Nyquist bins (f = zw/2) contribute cos terms */
                    const double cy = ky == zw / 2 ? cos(M_PI * my / ovs) : 0;
                    const double cx = kx == zw / 2 ? cos(M_PI * mx / ovs) : 0;
                    const dcx ey = ky == zw / 2 ? cy : cexp(2 * M_PI * I * (double)fy * my / (zw * ovs));
                    const dcx ex = kx == zw / 2 ? cx : cexp(2 * M_PI * I * (double)fx * mx / (zw * ovs));
                    v += creal(F[ky * zw + kx] * ey * ex);
                }
            v /= zw * zw;
            if (v > best)
                best = v, by = (double)my / ovs, bx = (double)mx / ovs;
        }
    out[0] = st_y + by / 2 - hs;
    out[1] = st_x + bx / 2 - hs;
    out[6] = best;
    free(tc); free(cc); free(ta); free(ca); free(surf); free(zc); free(to); free(zo);
    free(toa); free(zoa); free(zs); free(F);
}

static void test_reference(const char *dev)
{
    const int W = 72, H = 72;
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    make_pair(W, H, 0.37, -1.21, 0.8, 0.8, s1, s2);
    /* a phase ramp on both: deramping must take it out */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t k = (size_t)y * W + x;
            const double ph = 0.9 * x + 0.4 * y;
            for (int j = 0; j < 2; j++) {
                float *s = j ? s2 : s1;
                const double re = s[2 * k], im = s[2 * k + 1];
                s[2 * k] = (float)(re * cos(ph) - im * sin(ph));
                s[2 * k + 1] = (float)(re * sin(ph) + im * cos(ph));
            }
        }
    const char *opts[] = {"window=16x16", "search=5x5", "skip=20x20", "start=6x6", "count=3x3",
                          "zoom=8", "ovs=16", NULL};
    xc_result r;
    if (run_xcorr(dev, s1, s2, W, H, opts, 0, 0, &r) != 0) {
        CHECK(0, "%s: reference run", dev);
        goto out;
    }
    double md = 0, ms = 0, mp = 0;
    for (int Y = 0; Y < 3; Y++)
        for (int X = 0; X < 3; X++) {
            double ref[7];
            ref_window(s1, s2, W, 6 + 20 * X, 6 + 20 * Y, 16, 16, 5, 8, 16, ref);
            const int i = Y * 3 + X;
            md = fmax(md, fmax(fabs(r.b[0][i] - ref[0]), fabs(r.b[1][i] - ref[1])));
            ms = fmax(ms, fabs(r.b[2][i] - ref[2]) / ref[2]);
            mp = fmax(mp, fabs(r.b[6][i] - ref[6]));
            if (getenv("XC_DUMP"))
                printf("ref %d: %.4f %.4f | %.4f %.4f | snr %.2f %.2f | pk %.4f %.4f\n", i, r.b[0][i],
                       ref[0], r.b[1][i], ref[1], r.b[2][i], ref[2], r.b[6][i], ref[6]);
        }
    printf("%s float64 reference: max |offset diff| %.4f px, SNR rel %.2e, peak %.2e\n", dev, md,
           ms, mp);
    /* one grid step of the interpolated surface (1/(ovs osf) = 1/32 px)
     * allows for a float/double argmax tie */
    CHECK(md <= 1.0 / 32 + 1e-6, "%s: offsets differ from the float64 reference by %.4f px", dev, md);
    CHECK(ms <= 1e-3, "%s: SNR differs from the float64 reference by %.2e", dev, ms);
    CHECK(mp <= 1e-3, "%s: peak differs from the float64 reference by %.2e", dev, mp);
    result_free(&r);
out:
    free(s1);
    free(s2);
}

/* ---------------------------- 4. devices agree, 5. invalid windows */

static void test_agree_and_invalid(char devs[][32], int nd)
{
    const int W = 256, H = 192;
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    make_pair(W, H, -2.35, 3.62, 0.7, 0.8, s1, s2);
    const char *opts[] = {"window=32x32", "search=8x8", "skip=24x24", "zoom=16", "ovs=32", NULL};
    xc_result clean[MAXDEV], dirty[MAXDEV];
    memset(clean, 0, sizeof clean);
    memset(dirty, 0, sizeof dirty);
    /* a NaN block in the primary and a nodata (-9999) block in the
     * secondary; gross offsets push the last column's chips off the image */
    float *d1 = malloc((size_t)W * H * 8), *d2 = malloc((size_t)W * H * 8);
    memcpy(d1, s1, (size_t)W * H * 8);
    memcpy(d2, s2, (size_t)W * H * 8);
    for (int y = 40; y < 60; y++)
        for (int x = 100; x < 130; x++)
            d1[2 * ((size_t)y * W + x)] = NAN;
    for (int y = 150; y < 170; y++)
        for (int x = 20; x < 50; x++)
            d2[2 * ((size_t)y * W + x)] = -9999.0f;
    for (int d = 0; d < nd; d++) {
        CHECK(run_xcorr(devs[d], s1, s2, W, H, opts, 0, 0, &clean[d]) == 0, "%s: clean run", devs[d]);
        CHECK(run_xcorr(devs[d], d1, d2, W, H, opts, 1, -9999.0, &dirty[d]) == 0, "%s: dirty run",
              devs[d]);
    }
    for (int d = 0; d < nd; d++) {
        if (!clean[d].b[0] || !dirty[d].b[0])
            continue;
        const int n = clean[d].nx * clean[d].ny;
        int bad = 0, nodata = 0, same = 1, out = 0;
        double maxd = 0;
        for (int i = 0; i < n; i++) {
            const double ey = clean[d].b[0][i] - 3.62, ex = clean[d].b[1][i] + 2.35;
            if (fabs(ey) > 0.25 || fabs(ex) > 0.25)
                out++;
            if (d > 0) {
                for (int k = 0; k < 7; k++)
                    if (isnan(clean[0].b[k][i]) != isnan(clean[d].b[k][i]) ||
                        isnan(dirty[0].b[k][i]) != isnan(dirty[d].b[k][i]))
                        same = 0;
                for (int k = 0; k < 2; k++) {
                    maxd = fmax(maxd, fabs(clean[d].b[k][i] - clean[0].b[k][i]));
                    if (!isnan(dirty[d].b[k][i]))
                        maxd = fmax(maxd, fabs(dirty[d].b[k][i] - dirty[0].b[k][i]));
                }
            }
            /* the windows whose template or chip touches a block, and the
             * invalid fraction (nodata expected above 1 - minvalid = 0.1) */
            const int X = i % clean[d].nx, Y = i / clean[d].nx;
            const int rx = 8 + 24 * X, ry = 8 + 24 * Y;
#define OVL(a0, a1, b0, b1) ((a1 < b1 ? a1 : b1) - (a0 > b0 ? a0 : b0) > 0 ? (a1 < b1 ? a1 : b1) - (a0 > b0 ? a0 : b0) : 0)
            const int o1 = OVL(rx, rx + 32, 100, 130) * OVL(ry, ry + 32, 40, 60);
            const int o2 = OVL(rx - 8, rx + 40, 20, 50) * OVL(ry - 8, ry + 40, 150, 170);
            const int expect = o1 > 0.1 * 32 * 32 || o2 > 0.1 * 48 * 48;
            CHECK(expect == (int)isnan(dirty[d].b[0][i]), "%s: window %d nodata %d, expected %d",
                  devs[d], i, (int)isnan(dirty[d].b[0][i]), expect);
            if (isnan(dirty[d].b[0][i])) {
                nodata++;
                for (int k = 1; k < 7; k++)
                    CHECK(isnan(dirty[d].b[k][i]), "%s: window %d band %d not nodata", devs[d], i, k);
            } else if (!o1 && !o2 && dirty[d].b[0][i] != clean[d].b[0][i]) {
                bad++;
            }
        }
        printf("%s: %d of %d windows nodata on the dirty pair, %d clean windows off by > 0.25 px\n",
               devs[d], nodata, n, out);
        CHECK(nodata > 0, "%s: no nodata windows", devs[d]);
        CHECK(bad == 0, "%s: %d untouched windows changed", devs[d], bad);
        CHECK(out <= n / 20, "%s: %d of %d windows off by > 0.25 px", devs[d], out, n);
        for (int i = 0; i < n; i++)
            CHECK(isfinite(clean[d].b[0][i]), "%s: clean window %d nodata", devs[d], i);
        if (d > 0) {
            printf("%s vs %s: max offset diff %.5f px\n", devs[d], devs[0], maxd);
            CHECK(same, "%s vs %s: nodata masks differ", devs[d], devs[0]);
            CHECK(maxd <= 0.01, "%s vs %s: offsets differ by %.4f px", devs[d], devs[0], maxd);
        }
    }
    /* gross offset pushing chips off the image: nodata, not an abort */
    const char *gopts[] = {"window=32x32", "search=8x8", "skip=24x24", "gross=40x0", "start=8x8",
                           "count=9x7", NULL};
    xc_result g;
    CHECK(run_xcorr(devs[0], s1, s2, W, H, gopts, 0, 0, &g) == 0, "gross run");
    if (g.b[0]) {
        int nod = 0;
        for (int i = 0; i < g.nx * g.ny; i++)
            nod += isnan(g.b[0][i]);
        CHECK(nod >= g.ny, "off-image windows: only %d nodata", nod);
        result_free(&g);
    }
    for (int d = 0; d < nd; d++) {
        result_free(&clean[d]);
        result_free(&dirty[d]);
    }
    free(s1);
    free(s2);
    free(d1);
    free(d2);
}

/* ------------------------------------------------ 6. bad options */

static void test_bad(void)
{
    const char *cases[][2] = {{"zoom", "6"}, {"window", "2x2"}, {"search", "0x3"},
                              {"ovs", "0"}, {"minvalid", "1.5"}, {"gross", "a"},
                              {"snrwindow", "4"}, {"bogus", "1"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gg_op *op;
        char err[256];
        gg_op_new("xcorr", &op, err, sizeof err);
        CHECK(gg_op_set(op, cases[i][0], cases[i][1]) != GG_OK, "%s=%s accepted", cases[i][0],
              cases[i][1]);
        gg_op_free(op);
    }
    struct {
        int w, h, bands;
        gg_type t;
        const char *opt, *val, *msg;
    } pc[] = {{100, 100, 2, GG_CFLOAT32, "window", "64x64", "larger than"},
              {512, 512, 1, GG_CFLOAT32, "window", "64x64", "2 bands"},
              {512, 512, 2, GG_FLOAT32, "window", "64x64", "complex"},
              {512, 512, 2, GG_CFLOAT32, "search", "2x2", "half search"}};
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
        gg_op *op;
        char err[256];
        gg_op_new("xcorr", &op, err, sizeof err);
        gg_op_set(op, pc[i].opt, pc[i].val);
        gg_raster_info in = {.width = pc[i].w, .height = pc[i].h, .bands = pc[i].bands, .type = pc[i].t}, out;
        CHECK(gg_op_prepare(op, &in, &out) != GG_OK && strstr(gg_op_last_error(op), pc[i].msg),
              "prepare case %zu: '%s'", i, gg_op_last_error(op));
        gg_op_free(op);
    }
}

/* ------------------------------------------- 7. GMTSAR mode (gmtsar_xcorr.c) */

/* GMTSAR xcorr's algorithm with the documented fixes, float64, written from
 * the description in docs/gdal_xcorr.md with direct sums and naive DFTs:
 * the patch grid from the master's size (W x H), each file read with its
 * own size (aligned Wa x Ha); samples outside their file, and 0+0i samples
 * unless zero_is_data, are invalid and count as 0; a patch with fewer than
 * 90 % valid samples in either file, a flat aligned patch or an NCC of
 * exactly 0 is marked (offsets 0, corr 0).  Otherwise range interpolation
 * x ri by zero-padding each line's spectrum (Nyquist bin split),
 * detection, whole-patch means removed, the aligned patch's central
 * 2 xs x 2 ys correlated with the master patch over lags [0, 2 search),
 * argmax |c|, NCC x 100 there, 8 x 8 of |c|^(1/4) from peak - 4 (0
 * outside) upsampled x interp (band-limited), argmax.  Out: x xoff y yoff
 * corr per patch, azimuth-major. */
static void ref_gmtsar_sizes(const short *m, int W, int H, const short *a, int Wa, int Ha,
                             int nx, int ny, int xs, int ys, int ri, int interp,
                             int zero_is_data, double (*out)[5])
{
    const int npx = 4 * xs, npy = 4 * ys, nxc = 2 * xs, nyc = 2 * ys;
    const int x_inc = (W - 2 * (xs + nxc)) / (nx + 3), y_inc = (H - 2 * (ys + nyc)) / (ny + 1);
    double *am = malloc(sizeof(double) * npx * npy), *aa = malloc(sizeof(double) * npx * npy);
    double *c = malloc(sizeof(double) * nxc * nyc);
    const int N = 8 * interp;
    double *up = malloc(sizeof(double) * N * N);
    dcx *row = malloc(sizeof(dcx) * npx), *Fr = malloc(sizeof(dcx) * npx);
    dcx *E = malloc(sizeof(dcx) * 8 * N); /* E[k][m]: bin k's term at grid point m */
    for (int kk = 0; kk < 8; kk++)
        for (int q = 0; q < N; q++)
            E[kk * N + q] = kk == 4 ? cos(2 * M_PI * 4 * q / (double)N)
                                    : cexp(2 * M_PI * I * (kk < 4 ? kk : kk - 8) * q / (double)N);
    int k = 0;
    for (int j = 1; j <= ny; j++)
        for (int i = 2; i < nx + 2; i++, k++) {
            const int y = npy + j * y_inc, x = npx + i * x_inc;
            int nvalid[2] = {0, 0};
            double amin = INFINITY, amax = -INFINITY; /* aligned amplitudes (flatness) */
            for (int f = 0; f < 2; f++) {
                const short *src = f ? a : m;
                const int Wf = f ? Wa : W, Hf = f ? Ha : H;
                double *dst = f ? aa : am, mean = 0;
                for (int v = 0; v < npy; v++) {
                    const int yy = y - npy / 2 + v;
                    for (int u = 0; u < npx; u++) {
                        const int xx = x - npx / 2 + u;
                        const int in = xx >= 0 && yy >= 0 && xx < Wf && yy < Hf;
                        const short *s = in ? src + 2 * ((size_t)yy * Wf + xx) : NULL;
                        const int ok = in && (zero_is_data || s[0] != 0 || s[1] != 0);
                        row[u] = ok ? s[0] + I * s[1] : 0;
                        nvalid[f] += ok;
                        if (ok && f) {
                            amin = fmin(amin, cabs(row[u]));
                            amax = fmax(amax, cabs(row[u]));
                        }
                    }
                    dcx *F = Fr;
                    for (int kk = 0; ri > 1 && kk < npx; kk++) {
                        F[kk] = 0;
                        for (int n = 0; n < npx; n++)
                            F[kk] += row[n] * cexp(-2 * M_PI * I * (double)kk * n / npx);
                    }
                    for (int u = 0; u < npx; u++) {
                        double val;
                        if (ri == 1) {
                            val = cabs(row[u]);
                        } else { /* sample t = s0 + u of the ri x interpolated line:
                                  * bins kk < h at kk, kk > h at kk - npx, the
                                  * Nyquist bin h split between +h and -h */
                            const int t = (ri - 1) * npx / 2 + u, h = npx / 2;
                            dcx q = 0;
                            for (int kk = 0; kk < npx; kk++) {
                                const double ang = 2 * M_PI * (double)(kk <= h ? kk : kk - npx) * t / (ri * npx);
                                q += kk == h ? F[kk] * cos(ang) : F[kk] * cexp(I * ang);
                            }
                            val = cabs(q / npx);
                        }
                        dst[v * npx + u] = val;
                        mean += val;
                    }
                }
                mean /= npx * npy;
                for (int q = 0; q < npx * npy; q++)
                    dst[q] -= mean;
            }
            int py = 0, px = 0;
            double best = -1;
            for (int kk = 0; kk < nyc; kk++)
                for (int l = 0; l < nxc; l++) {
                    double sum = 0;
                    for (int u = 0; u < nyc; u++)
                        for (int v = 0; v < nxc; v++)
                            sum += aa[(ys + u) * npx + xs + v] * am[(u + kk) * npx + v + l];
                    c[kk * nxc + l] = sum;
                    if (fabs(sum) > best) {
                        best = fabs(sum);
                        py = kk;
                        px = l;
                    }
                }
            double tb = 0, tt = 0, bb = 0;
            for (int u = 0; u < nyc; u++)
                for (int v = 0; v < nxc; v++) {
                    const double t = aa[(ys + u) * npx + xs + v], b = am[(py + u) * npx + px + v];
                    tb += t * b;
                    tt += t * t;
                    bb += b * b;
                }
            const double ncc = tt > 0 && bb > 0 ? 100 * fabs(tb) / sqrt(tt * bb) : 0;
            /* the valid fraction as the device compares it (in float) */
            const float need = 0.9f * (float)(npx * npy);
            if (nvalid[0] < need || nvalid[1] < need || !(amax > amin) || ncc == 0) {
                out[k][0] = x;
                out[k][1] = 0;
                out[k][2] = y;
                out[k][3] = 0;
                out[k][4] = 0;
                continue;
            }
            double blk[8][8];
            for (int u = 0; u < 8; u++)
                for (int v = 0; v < 8; v++) {
                    const int yy = py - 4 + u, xx = px - 4 + v;
                    blk[u][v] = yy >= 0 && xx >= 0 && yy < nyc && xx < nxc ? pow(fabs(c[yy * nxc + xx]), 0.25) : 0;
                }
            dcx Fb[8][8];
            for (int ky = 0; ky < 8; ky++)
                for (int kx = 0; kx < 8; kx++) {
                    dcx s = 0;
                    for (int u = 0; u < 8; u++)
                        for (int v = 0; v < 8; v++)
                            s += blk[u][v] * cexp(-2 * M_PI * I * (ky * u + kx * v) / 8.0);
                    Fb[ky][kx] = s;
                }
            int my = 0, mx = 0;
            double ub = -INFINITY;
            for (int yy = 0; yy < N; yy++)
                for (int xx = 0; xx < N; xx++) {
                    dcx s = 0;
                    for (int ky = 0; ky < 8; ky++)
                        for (int kx = 0; kx < 8; kx++)
                            s += Fb[ky][kx] * E[ky * N + yy] * E[kx * N + xx];
                    up[yy * N + xx] = creal(s) / ((double)N * N);
                    if (up[yy * N + xx] > ub) {
                        ub = up[yy * N + xx];
                        my = yy;
                        mx = xx;
                    }
                }
            const double ly = py - 4 + (double)my / interp, lx = px - 4 + (double)mx / interp;
            out[k][0] = x;
            out[k][1] = -(lx - xs) / ri;
            out[k][2] = y;
            out[k][3] = -(ly - ys);
            out[k][4] = ncc;
        }
    free(am);
    free(aa);
    free(c);
    free(up);
    free(row);
    free(Fr);
    free(E);
}

static void ref_gmtsar(const short *m, const short *a, int W, int H, int nx, int ny, int xs,
                       int ys, int ri, int interp, double (*out)[5])
{
    ref_gmtsar_sizes(m, W, H, a, W, H, nx, ny, xs, ys, ri, interp, 0, out);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void write_gmtsar(const char *dir, const char *name, const short *iq, int W, int H,
                         int ashift, char *prm, size_t len)
{
    char slc[512];
    snprintf(slc, sizeof slc, "%s/%s.SLC", dir, name);
    snprintf(prm, len, "%s/%s.PRM", dir, name);
    FILE *f = fopen(slc, "wb");
    fwrite(iq, 4, (size_t)W * H, f);
    fclose(f);
    f = fopen(prm, "w");
    fprintf(f, "SLC_file = %s\nnum_rng_bins = %d\nnum_valid_az = %d\nnum_patches = 1\n"
               "PRF = 1000\nrshift = 0\nashift = %d\n", slc, W, H, ashift);
    fclose(f);
}

/* chunk_rows > 0: that many location rows per chunk, < 0: -chunk_rows
 * patches per chunk (the internal gg_xcorr_gmtsar_chunked); 0: the
 * planner's (gg_xcorr_gmtsar).
 * zero_is_data: gdal_xcorr -mode gmtsar's -zero_is_data (through the
 * internal gg_xcorr_gmtsar_run). */
static int run_gmtsar_full(const char *dev, const char *p1, const char *p2, int nx, int ny,
                           int xs, int ri, int chunk_rows, int zero_is_data,
                           gg_xcorr_gmtsar_row **rows)
{
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        fprintf(stderr, "%s: %s\n", dev, err);
        return -1;
    }
    gg_xcorr_prm m, a;
    int n = 0, rc = -1;
    if (gg_xcorr_prm_read(p1, &m, err, sizeof err) == GG_OK &&
        gg_xcorr_prm_read(p2, &a, err, sizeof err) == GG_OK) {
        gg_xcorr_gmtsar_options o = {nx, ny, xs, xs, ri, 16, 0};
        gg_xcorr_gmtsar_switches sw = {zero_is_data};
        if ((zero_is_data ? gg_xcorr_gmtsar_run(ctx, &m, &a, &o, &sw, chunk_rows, rows, &n, NULL,
                                                NULL, NULL)
             : chunk_rows != 0
                 ? gg_xcorr_gmtsar_chunked(ctx, &m, &a, &o, chunk_rows, rows, &n, NULL, NULL, NULL)
                 : gg_xcorr_gmtsar(ctx, &m, &a, &o, rows, &n, NULL, NULL)) == GG_OK &&
            n == nx * ny)
            rc = 0;
        else
            fprintf(stderr, "%s: gmtsar: %s\n", dev, gg_context_last_error(ctx));
    } else {
        fprintf(stderr, "%s\n", err);
    }
    gg_context_destroy(ctx);
    return rc;
}

static int run_gmtsar_chunked(const char *dev, const char *p1, const char *p2, int nx, int ny,
                              int xs, int ri, int chunk_rows, gg_xcorr_gmtsar_row **rows)
{
    return run_gmtsar_full(dev, p1, p2, nx, ny, xs, ri, chunk_rows, 0, rows);
}

static int run_gmtsar(const char *dev, const char *p1, const char *p2, int nx, int ny, int xs,
                      int ri, gg_xcorr_gmtsar_row **rows)
{
    return run_gmtsar_chunked(dev, p1, p2, nx, ny, xs, ri, 0, rows);
}

/* Every device against the float64 reference, the multi-chunk path (one
 * location row per chunk: the line rings wrap) against the one-chunk
 * run, devices against each other, patches running off the file. */
static void test_gmtsar(char devs[][32], int nd)
{
    const int W = 384, H = 448, nx = 3, ny = 5, xs = 8, ri = 2;
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    short *m = malloc((size_t)W * H * 4), *a = malloc((size_t)W * H * 4);
    make_pair(W, H, 2.3, -1.6, 0.8, 0.8, s1, s2);
    double rms = 0;
    for (size_t i = 0; i < (size_t)W * H * 2; i++)
        rms += (double)s1[i] * s1[i];
    rms = sqrt(rms / ((double)W * H * 2));
    for (size_t i = 0; i < (size_t)W * H * 2; i++) {
        m[i] = (short)lrint(fmax(-32768, fmin(32767, s1[i] * 1500 / rms)));
        a[i] = (short)lrint(fmax(-32768, fmin(32767, s2[i] * 1500 / rms)));
    }
    char dir[] = "/tmp/gg_test_gmtsarXXXXXX", p1[600], p2[600], p3[600];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    write_gmtsar(dir, "master", m, W, H, 0, p1, sizeof p1);
    write_gmtsar(dir, "aligned", a, W, H, 0, p2, sizeof p2);
    write_gmtsar(dir, "far", a, W, H, 150, p3, sizeof p3);
    double (*ref)[5] = malloc(sizeof *ref * nx * ny);
    ref_gmtsar(m, a, W, H, nx, ny, xs, xs, ri, 16, ref);
    gg_xcorr_gmtsar_row *first = NULL;
    for (int d = 0; d < nd; d++) {
        gg_xcorr_gmtsar_row *r = NULL, *rf = NULL;
        if (run_gmtsar(devs[d], p1, p2, nx, ny, xs, ri, &r)) {
            CHECK(0, "%s: gmtsar run", devs[d]);
            continue;
        }
        double dx = 0, dy = 0, dc = 0;
        double mx[64], my[64];
        for (int i = 0; i < nx * ny; i++) {
            CHECK(r[i].x == ref[i][0] && r[i].y == ref[i][2], "%s: patch %d at %g %g, ref %g %g",
                  devs[d], i, r[i].x, r[i].y, ref[i][0], ref[i][2]);
            dx = fmax(dx, fabs(r[i].xoff - ref[i][1]));
            dy = fmax(dy, fabs(r[i].yoff - ref[i][3]));
            dc = fmax(dc, fabs(r[i].corr - ref[i][4]));
            mx[i] = r[i].xoff;
            my[i] = r[i].yoff;
            if (getenv("XC_VERBOSE"))
                printf("%s patch %d: %g %g corr %.1f (ref %g %g)\n", devs[d], i, r[i].xoff, r[i].yoff, r[i].corr, ref[i][1], ref[i][3]);
        }
        /* one interpolated grid step (1/(16 ri), 1/16) for a float/double
         * argmax tie, as the python test; corr printed with 2 decimals */
        CHECK(dx <= 1.0 / 32 + 1e-3 && dy <= 1.0 / 16 + 1e-3,
              "%s: gmtsar offsets differ from the float64 reference by %.4f %.4f", devs[d], dx, dy);
        CHECK(dc <= 0.02, "%s: gmtsar corr differs from the reference by %.4f", devs[d], dc);
        /* and the truth (2.3, -1.6) within GMTSAR's accuracy (16 x 16
         * templates on amplitude: medians, as the python test) */
        qsort(mx, (size_t)(nx * ny), sizeof(double), cmp_double);
        qsort(my, (size_t)(nx * ny), sizeof(double), cmp_double);
        CHECK(fabs(mx[nx * ny / 2] - 2.3) < 0.1 && fabs(my[nx * ny / 2] + 1.6) < 0.15,
              "%s: median gmtsar offsets %.3f %.3f, truth 2.3 -1.6", devs[d], mx[nx * ny / 2],
              my[nx * ny / 2]);
        /* one location row per chunk (rings of fewer lines than the file,
         * wrapping), all rows in one chunk, and chunks of parts of location
         * rows (nx / 2 + 1 patches: chunks straddle rows, as the CPU
         * backend's host budget may plan them), against the planner's */
        for (int k = 0; k < 3; k++) {
            gg_xcorr_gmtsar_row *rk = NULL;
            const int rows_per_chunk = k == 2 ? -(nx / 2 + 1) : k ? ny : 1;
            if (run_gmtsar_chunked(devs[d], p1, p2, nx, ny, xs, ri, rows_per_chunk, &rk) == 0) {
                double md = 0;
                for (int i = 0; i < nx * ny; i++)
                    md = fmax(md, fmax(fabs(rk[i].xoff - r[i].xoff),
                                       fmax(fabs(rk[i].yoff - r[i].yoff),
                                            fabs(rk[i].corr - r[i].corr) / 100)));
                CHECK(md <= 1e-4, "%s: %d rows per chunk (< 0: patches) differ from the "
                      "planner's chunks by %.2e", devs[d], rows_per_chunk, md);
            } else {
                CHECK(0, "%s: gmtsar run, %d rows per chunk", devs[d], rows_per_chunk);
            }
            gg_xcorr_free(rk);
        }
        /* patches running off the end of the aligned file (one row per
         * chunk): corr 0, no abort */
        if (run_gmtsar_chunked(devs[d], p1, p3, nx, ny, xs, ri, 1, &rf) == 0) {
            int zero = 0;
            for (int i = 0; i < nx * ny; i++)
                zero += rf[i].corr == 0;
            CHECK(zero >= nx, "%s: only %d corr-0 patches off the file", devs[d], zero);
        } else {
            CHECK(0, "%s: gmtsar run off the file", devs[d]);
        }
        if (!first) {
            first = r;
            r = NULL;
        } else {
            double md = 0;
            for (int i = 0; i < nx * ny; i++)
                md = fmax(md, fmax(fabs(first[i].xoff - r[i].xoff), fabs(first[i].yoff - r[i].yoff)));
            CHECK(md <= 1.0 / 16 + 1e-3, "%s vs %s: gmtsar offsets differ by %.4f", devs[d],
                  devs[0], md);
            if (md > 0.01 + 1e-9)
                printf("note: %s vs %s: gmtsar offsets differ by one grid step (%.4f)\n", devs[d],
                       devs[0], md);
        }
        gg_xcorr_free(r);
        gg_xcorr_free(rf);
    }
    gg_xcorr_free(first);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(ref);
    free(s1);
    free(s2);
    free(m);
    free(a);
}

/* ------------------------- 8. GMTSAR mode: sizes, zero fill, corr-0 patches */

/* The int16 pair of the GMTSAR-mode tests: band-limited speckle, the
 * aligned shifted by (dx, dy), scaled to an rms of 1500 counts. */
static void gmtsar_pair16(int W, int H, double dx, double dy, short *m, short *a)
{
    float *s1 = malloc((size_t)W * H * 8), *s2 = malloc((size_t)W * H * 8);
    make_pair(W, H, dx, dy, 0.8, 0.8, s1, s2);
    double rms = 0;
    for (size_t i = 0; i < (size_t)W * H * 2; i++)
        rms += (double)s1[i] * s1[i];
    rms = sqrt(rms / ((double)W * H * 2));
    for (size_t i = 0; i < (size_t)W * H * 2; i++) {
        m[i] = (short)lrint(fmax(-32768, fmin(32767, s1[i] * 1500 / rms)));
        a[i] = (short)lrint(fmax(-32768, fmin(32767, s2[i] * 1500 / rms)));
    }
    free(s1);
    free(s2);
}

/* The top-left w x h of a W-wide int16 I/Q image (w <= W). */
static short *crop16(const short *src, int W, int w, int h)
{
    short *d = malloc((size_t)w * h * 4);
    for (int y = 0; y < h; y++)
        memcpy(d + (size_t)2 * y * w, src + (size_t)2 * y * W, (size_t)w * 4);
    return d;
}

/* Rows against the float64 reference: positions exact; marked patches
 * (reference corr 0) exactly marked (offsets 0, corr 0); the others within
 * one interpolated grid step and corr within 0.02.  Returns the number of
 * marked patches. */
static int check_gmtsar_rows(const char *what, const char *dev, const gg_xcorr_gmtsar_row *r,
                             double (*ref)[5], int n, int ri)
{
    double dx = 0, dy = 0, dc = 0;
    int marked = 0, wrong = 0;
    for (int i = 0; i < n; i++) {
        CHECK(r[i].x == ref[i][0] && r[i].y == ref[i][2], "%s %s: patch %d at %g %g, ref %g %g",
              what, dev, i, r[i].x, r[i].y, ref[i][0], ref[i][2]);
        if (ref[i][4] == 0) {
            marked++;
            wrong += !(r[i].corr == 0 && r[i].xoff == 0 && r[i].yoff == 0);
            continue;
        }
        dx = fmax(dx, fabs(r[i].xoff - ref[i][1]));
        dy = fmax(dy, fabs(r[i].yoff - ref[i][3]));
        dc = fmax(dc, fabs(r[i].corr - ref[i][4]));
    }
    CHECK(wrong == 0, "%s %s: %d of the %d patches the reference marks are not marked", what,
          dev, wrong, marked);
    CHECK(dx <= 1.0 / (16 * ri) + 1e-3 && dy <= 1.0 / 16 + 1e-3,
          "%s %s: offsets differ from the float64 reference by %.4f %.4f", what, dev, dx, dy);
    CHECK(dc <= 0.02, "%s %s: corr differs from the reference by %.4f", what, dev, dc);
    return marked;
}

/* The same marks on two devices and offsets within one grid step. */
static void check_gmtsar_agree(const char *what, const char *d0, const gg_xcorr_gmtsar_row *a,
                               const char *d1, const gg_xcorr_gmtsar_row *b, int n)
{
    double md = 0;
    int masks = 0;
    for (int i = 0; i < n; i++) {
        masks += (a[i].corr == 0) != (b[i].corr == 0);
        md = fmax(md, fmax(fabs(a[i].xoff - b[i].xoff), fabs(a[i].yoff - b[i].yoff)));
    }
    CHECK(masks == 0 && md <= 1.0 / 16 + 1e-3, "%s: %s vs %s: %d marks differ, offsets by %.4f",
          what, d1, d0, masks, md);
}

/* Pairs of different sizes (GMTSAR reads each PRM's own num_rng_bins and
 * num_valid_az; the patch grid is the master's): the aligned shorter
 * (patches past its end marked, not correlated with stale lines), longer
 * and wider (the same rows as the equal-size pair), narrower (a patch with
 * 3 of its 32 columns past the aligned's width: those are invalid samples,
 * 90 % valid, so it is correlated) and the master shorter than the
 * aligned.  Every device against the float64 reference and each other. */
static void test_gmtsar_sizes(char devs[][32], int nd)
{
    const int W = 288, H = 384, Wb = 300, Hb = 448, nx = 3, ny = 5, xs = 8, ri = 2, n = nx * ny;
    short *mb = malloc((size_t)Wb * Hb * 4), *ab = malloc((size_t)Wb * Hb * 4);
    gmtsar_pair16(Wb, Hb, 1.7, -2.4, mb, ab);
    char dir[] = "/tmp/gg_test_gmtsar_sizesXXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    /* case: master size, aligned size; the equal-size pair first */
    const struct {
        const char *name;
        int mw, mh, aw, ah;
    } cases[] = {{"equal", W, H, W, H},          {"aligned shorter", W, H, W, 310},
                 {"aligned longer", W, H, Wb, Hb}, {"aligned narrower", W, H, 205, H},
                 {"master shorter", W, 330, W, H}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    gg_xcorr_gmtsar_row *rows[5][MAXDEV] = {{NULL}};
    double (*ref)[5] = malloc(sizeof *ref * n);
    for (int c = 0; c < nc; c++) {
        char pm[600], pa[600], nm[64], na[64];
        snprintf(nm, sizeof nm, "m%d", c);
        snprintf(na, sizeof na, "a%d", c);
        short *m = crop16(mb, Wb, cases[c].mw, cases[c].mh);
        short *a = crop16(ab, Wb, cases[c].aw, cases[c].ah);
        write_gmtsar(dir, nm, m, cases[c].mw, cases[c].mh, 0, pm, sizeof pm);
        write_gmtsar(dir, na, a, cases[c].aw, cases[c].ah, 0, pa, sizeof pa);
        ref_gmtsar_sizes(m, cases[c].mw, cases[c].mh, a, cases[c].aw, cases[c].ah, nx, ny, xs,
                         xs, ri, 16, 0, ref);
        int ref_marked = 0;
        for (int i = 0; i < n; i++)
            ref_marked += ref[i][4] == 0;
        /* the shorter aligned leaves its last location row (lines 296..327
         * of the master's grid, 14 inside) past its end: marked */
        if (c == 1)
            CHECK(ref_marked == nx, "aligned shorter: the reference marks %d patches, not %d",
                  ref_marked, nx);
        else
            CHECK(ref_marked == 0, "%s: the reference marks %d patches", cases[c].name,
                  ref_marked);
        for (int d = 0; d < nd; d++) {
            if (run_gmtsar(devs[d], pm, pa, nx, ny, xs, ri, &rows[c][d])) {
                CHECK(0, "%s: %s: gmtsar run", cases[c].name, devs[d]);
                continue;
            }
            check_gmtsar_rows(cases[c].name, devs[d], rows[c][d], ref, n, ri);
            if (d > 0 && rows[c][0])
                check_gmtsar_agree(cases[c].name, devs[0], rows[c][0], devs[d], rows[c][d], n);
            /* the lines past the shorter file are never read: an aligned
             * longer and wider than the master gives the equal-size rows */
            if (c == 2 && rows[0][d])
                CHECK(!memcmp(rows[c][d], rows[0][d], sizeof(gg_xcorr_gmtsar_row) * n),
                      "%s: aligned longer and wider differs from the equal-size pair", devs[d]);
            /* one location row per chunk (wrapping rings of two widths) */
            gg_xcorr_gmtsar_row *rk = NULL;
            if (run_gmtsar_chunked(devs[d], pm, pa, nx, ny, xs, ri, 1, &rk) == 0 && rows[c][d])
                CHECK(!memcmp(rk, rows[c][d], sizeof(gg_xcorr_gmtsar_row) * n),
                      "%s: %s: one row per chunk differs", cases[c].name, devs[d]);
            gg_xcorr_free(rk);
        }
        free(m);
        free(a);
    }
    for (int c = 0; c < nc; c++)
        for (int d = 0; d < nd; d++)
            gg_xcorr_free(rows[c][d]);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(ref);
    free(mb);
    free(ab);
}

/* Zero fill (0+0i) in both files, a 100-column left border and the lines
 * from 318 on: the patches with more than 10 % fill are marked (offsets 0,
 * corr 0), those clear of the fill give the rows of the pair without fill;
 * with -zero_is_data (GMTSAR's behaviour) the fill is data and the patches
 * over it are correlated.  Every device against the float64 reference of
 * each rule and each other. */
static void test_gmtsar_zero_fill(char devs[][32], int nd)
{
    const int W = 288, H = 384, nx = 3, ny = 5, xs = 8, ri = 2, n = nx * ny, fx = 100, fy = 318;
    short *m = malloc((size_t)W * H * 4), *a = malloc((size_t)W * H * 4);
    short *mz = malloc((size_t)W * H * 4), *az = malloc((size_t)W * H * 4);
    gmtsar_pair16(W, H, 1.7, -2.4, m, a);
    memcpy(mz, m, (size_t)W * H * 4);
    memcpy(az, a, (size_t)W * H * 4);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (x < fx || y >= fy) {
                const size_t k = 2 * ((size_t)y * W + x);
                mz[k] = mz[k + 1] = az[k] = az[k + 1] = 0;
            }
    char dir[] = "/tmp/gg_test_gmtsar_zeroXXXXXX", p1[600], p2[600], p3[600], p4[600];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    write_gmtsar(dir, "m", m, W, H, 0, p1, sizeof p1);
    write_gmtsar(dir, "a", a, W, H, 0, p2, sizeof p2);
    write_gmtsar(dir, "mz", mz, W, H, 0, p3, sizeof p3);
    write_gmtsar(dir, "az", az, W, H, 0, p4, sizeof p4);
    double (*ref)[5] = malloc(sizeof *ref * n), (*refz)[5] = malloc(sizeof *refz * n);
    ref_gmtsar_sizes(mz, W, H, az, W, H, nx, ny, xs, xs, ri, 16, 0, ref);
    ref_gmtsar_sizes(mz, W, H, az, W, H, nx, ny, xs, xs, ri, 16, 1, refz);
    /* the fill fraction of each patch (32 x 32, the master's grid) */
    const int npx = 4 * xs, x_inc = (W - 6 * xs) / (nx + 3), y_inc = (H - 6 * xs) / (ny + 1);
    double frac[64];
    for (int j = 1, k = 0; j <= ny; j++)
        for (int i = 2; i < nx + 2; i++, k++) {
            const int x0 = npx + i * x_inc - npx / 2, y0 = npx + j * y_inc - npx / 2;
            int nf = 0;
            for (int y = y0; y < y0 + npx; y++)
                for (int x = x0; x < x0 + npx; x++)
                    nf += x < fx || y >= fy;
            frac[k] = (double)nf / (npx * npx);
        }
    int over = 0, clear = 0;
    for (int i = 0; i < n; i++) {
        over += frac[i] > 0.1;
        clear += frac[i] == 0;
        CHECK((ref[i][4] == 0) == (frac[i] > 0.1), "reference: patch %d (fill %.2f) corr %.2f",
              i, frac[i], ref[i][4]);
    }
    CHECK(over >= 4 && clear >= 4, "zero fill: %d patches over it, %d clear", over, clear);
    gg_xcorr_gmtsar_row *first = NULL, *firstz = NULL;
    for (int d = 0; d < nd; d++) {
        gg_xcorr_gmtsar_row *r0 = NULL, *r = NULL, *rz = NULL;
        if (run_gmtsar(devs[d], p1, p2, nx, ny, xs, ri, &r0) ||
            run_gmtsar(devs[d], p3, p4, nx, ny, xs, ri, &r) ||
            run_gmtsar_full(devs[d], p3, p4, nx, ny, xs, ri, 0, 1, &rz)) {
            CHECK(0, "%s: zero fill runs", devs[d]);
        } else {
            check_gmtsar_rows("zero fill", devs[d], r, ref, n, ri);
            check_gmtsar_rows("zero fill, -zero_is_data", devs[d], rz, refz, n, ri);
            int corr_over = 0;
            for (int i = 0; i < n; i++) {
                if (frac[i] == 0) /* clear of the fill: unchanged */
                    CHECK(!memcmp(&r[i], &r0[i], sizeof r[i]) && !memcmp(&rz[i], &r0[i], sizeof r[i]),
                          "%s: patch %d clear of the fill changed", devs[d], i);
                if (frac[i] > 0.1)
                    CHECK(r[i].corr == 0 && r[i].xoff == 0 && r[i].yoff == 0,
                          "%s: patch %d over the fill (%.2f) not marked: %g %g corr %g", devs[d],
                          i, frac[i], r[i].xoff, r[i].yoff, r[i].corr);
                corr_over += frac[i] > 0.1 && rz[i].corr > 0;
            }
            CHECK(corr_over > 0, "%s: -zero_is_data correlates no patch over the fill", devs[d]);
        }
        if (!first && r && rz) {
            first = r;
            firstz = rz;
            r = rz = NULL;
        } else if (r && rz) {
            check_gmtsar_agree("zero fill", devs[0], first, devs[d], r, n);
            check_gmtsar_agree("zero fill, -zero_is_data", devs[0], firstz, devs[d], rz, n);
        }
        gg_xcorr_free(r0);
        gg_xcorr_free(r);
        gg_xcorr_free(rz);
    }
    gg_xcorr_free(first);
    gg_xcorr_free(firstz);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(ref);
    free(refz);
    free(m);
    free(a);
    free(mz);
    free(az);
}

/* Correlation-0 patches keep the integer zero-lag offset (B5): an all-zero
 * master patch (with -zero_is_data, where it is data: its |c| surface is
 * all 0, whose argmaxes are arbitrary) gives offsets exactly 0 and corr 0,
 * and so does a constant master patch under the default rule (a flat master
 * patch has NCC 0; checked without range interpolation, where its demeaned
 * amplitudes are exactly 0 in float and float64 alike), on every device;
 * the default rule marks the all-zero patch as zero fill too.  Patches
 * elsewhere are unchanged. */
static void test_gmtsar_corr0(char devs[][32], int nd)
{
    const int W = 288, H = 384, nx = 3, ny = 5, xs = 8, n = nx * ny;
    short *m = malloc((size_t)W * H * 4), *a = malloc((size_t)W * H * 4);
    short *mz = malloc((size_t)W * H * 4), *mc = malloc((size_t)W * H * 4);
    gmtsar_pair16(W, H, 1.7, -2.4, m, a);
    memcpy(mz, m, (size_t)W * H * 4);
    /* patch (x 152, y 200) spans 136..167 x 184..215: all zero */
    for (int y = 178; y < 222; y++)
        for (int x = 130; x < 175; x++)
            mz[2 * ((size_t)y * W + x)] = mz[2 * ((size_t)y * W + x) + 1] = 0;
    memcpy(mc, mz, (size_t)W * H * 4);
    /* and patch (x 112, y 88), 96..127 x 72..103: constant 1000 + 0i */
    for (int y = 66; y < 110; y++)
        for (int x = 90; x < 130; x++) {
            mc[2 * ((size_t)y * W + x)] = 1000;
            mc[2 * ((size_t)y * W + x) + 1] = 0;
        }
    const int pz = 2 * nx + 1, pc = 0; /* the two patches (azimuth-major) */
    char dir[] = "/tmp/gg_test_gmtsar_corr0XXXXXX", p1[600], p2[600], p3[600], p4[600];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    write_gmtsar(dir, "m", m, W, H, 0, p1, sizeof p1);
    write_gmtsar(dir, "a", a, W, H, 0, p2, sizeof p2);
    write_gmtsar(dir, "mz", mz, W, H, 0, p3, sizeof p3);
    write_gmtsar(dir, "mc", mc, W, H, 0, p4, sizeof p4);
    double (*ref)[5] = malloc(sizeof *ref * n);
    /* (zero_is_data, range interpolation): the constant patch with ri 1 */
    const int runs[4][2] = {{1, 2}, {0, 2}, {1, 1}, {0, 1}};
    for (int c = 0; c < 4; c++) {
        const int z = runs[c][0], ri = runs[c][1];
        const short *mm = ri == 1 ? mc : mz;
        const char *pm = ri == 1 ? p4 : p3;
        char what[64];
        snprintf(what, sizeof what, "corr 0 (zero_is_data %d, ri %d)", z, ri);
        ref_gmtsar_sizes(mm, W, H, a, W, H, nx, ny, xs, xs, ri, 16, z, ref);
        CHECK(ref[pz][4] == 0 && (ri == 2 || ref[pc][4] == 0), "%s: reference corr %g %g", what,
              ref[pz][4], ref[pc][4]);
        gg_xcorr_gmtsar_row *first = NULL;
        for (int d = 0; d < nd; d++) {
            gg_xcorr_gmtsar_row *r0 = NULL, *r = NULL;
            if (run_gmtsar_full(devs[d], p1, p2, nx, ny, xs, ri, 0, z, &r0) ||
                run_gmtsar_full(devs[d], pm, p2, nx, ny, xs, ri, 0, z, &r)) {
                CHECK(0, "%s: %s runs", devs[d], what);
                gg_xcorr_free(r0);
                gg_xcorr_free(r);
                continue;
            }
            check_gmtsar_rows(what, devs[d], r, ref, n, ri);
            for (int k = 0; k < (ri == 1 ? 2 : 1); k++) {
                const int i = k ? pc : pz;
                CHECK(r[i].corr == 0 && r[i].xoff == 0 && r[i].yoff == 0,
                      "%s %s: %s master patch %d: %g %g corr %g, not 0 0 0", what, devs[d],
                      k ? "constant" : "all-zero", i, r[i].xoff, r[i].yoff, r[i].corr);
            }
            for (int i = 0; i < n; i++)
                if (i != pz && i != pc)
                    CHECK(!memcmp(&r[i], &r0[i], sizeof r[i]), "%s %s: patch %d changed", what,
                          devs[d], i);
            if (!first) {
                first = r;
                r = NULL;
            } else {
                check_gmtsar_agree(what, devs[0], first, devs[d], r, n);
            }
            gg_xcorr_free(r0);
            gg_xcorr_free(r);
        }
        gg_xcorr_free(first);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(ref);
    free(m);
    free(a);
    free(mz);
    free(mc);
}

/* A crash prints its stack (addresses resolve with addr2line on the
 * RelWithDebInfo build): the device machine has no debugger. */
static void on_fatal(int sig)
{
    void *f[64];
    const int n = backtrace(f, 64);
    backtrace_symbols_fd(f, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Runs every test, or only those named as arguments (one command, one
 * test: test_xcorr gmtsar_sizes): golden reference agree bad gmtsar
 * gmtsar_sizes gmtsar_zero_fill gmtsar_corr0 sweep sweep_tapered quality_flag. */
static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}


/* ------------------------------------------- GMTSAR steps, kernel level */

/* The GMTSAR mode's steps with a CPU loop of their own or reworked for
 * the CPU (extract16, colstats, pad) and the CPU backend's split rank-2
 * FFT, on small odd-sized cases (ring slots that wrap, samples outside
 * both files, zero fill, NaN, widths that are not a multiple of the CPU
 * loops' blocks, even and odd pad sizes):
 *   - the CPU results equal a plain C column walk of the kernels'
 *     definitions (the GPU work items' arithmetic) bit for bit, and the
 *     CPU's FFT equals FFTW's own 2-D plan bit for bit;
 *   - every other device agrees: bit for bit on extract16 (NaN for NaN)
 *     and pad, colstats within 1e-6 relative (OpenCL's sqrt may be off by
 *     an ulp or more, PoCL's is here: 9e-8 relative; CUDA fuses
 *     multiply-adds). */
static int kl_upload(gg_context *ctx, const void *p, size_t bytes, gg_buffer **b)
{
    return gg_buffer_alloc(ctx, bytes, b) == GG_OK && gg_buffer_write(ctx, *b, 0, p, bytes) == GG_OK
               ? 0
               : -1;
}

typedef struct {
    float *ref, *sec, *pad_even, *pad_odd, *ref_z, *sec_z;
    double *part, *part_z;
} kl_out;

static uint32_t kl_rng = 12345u;
static uint32_t kl_next(void)
{
    kl_rng ^= kl_rng << 13;
    kl_rng ^= kl_rng >> 17;
    kl_rng ^= kl_rng << 5;
    return kl_rng;
}

enum { KL_W = 100, KL_WA = 90, KL_H = 70, KL_HA = 60, KL_CAP = 37, KL_N = 75, KL_B = 3 };

static int kl_run(const char *dev, const int *ring_m, const int *ring_a, const int *pos,
                  const float *spec, kl_out *o)
{
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        fprintf(stderr, "%s: %s\n", dev, err);
        return -1;
    }
    const size_t np = (size_t)KL_N * KL_N, C = 2 * sizeof(float);
    gg_buffer *rm = NULL, *ra = NULL, *bp = NULL, *br = NULL, *bs = NULL, *part = NULL;
    gg_buffer *sp = NULL, *pe = NULL, *po = NULL;
    int rc = kl_upload(ctx, ring_m, sizeof(int) * KL_CAP * KL_W, &rm) ||
             kl_upload(ctx, ring_a, sizeof(int) * KL_CAP * KL_WA, &ra) ||
             kl_upload(ctx, pos, sizeof(int) * 4 * KL_B, &bp) ||
             kl_upload(ctx, spec, C * 2 * 48 * 20, &sp) ||
             gg_buffer_alloc(ctx, KL_B * np * C, &br) != GG_OK ||
             gg_buffer_alloc(ctx, KL_B * np * C, &bs) != GG_OK ||
             gg_buffer_alloc(ctx, sizeof(double) * KL_B * KL_N * GG_XC_PART_STATS, &part) != GG_OK ||
             gg_buffer_alloc(ctx, C * 2 * 96 * 20, &pe) != GG_OK ||
             gg_buffer_alloc(ctx, C * 2 * 90 * 20, &po) != GG_OK;
    gg_xc_params p = {0};
    p.nwin = KL_B;
    p.tile_w = KL_W;
    p.tile_h = KL_CAP;
    p.src_h = KL_H;
    p.a_tile_w = KL_WA;
    p.a_src_h = KL_HA;
    p.zero_nodata = 1;
    p.rw = p.sw = p.rh = p.sh = KL_N;
    p.lx = KL_N;
    if (!rc)
        rc = gg_xc_launch(ctx, GG_K_XC_EXTRACT16, KL_N, KL_N * KL_B, &p, rm, ra, bp, br, bs) != GG_OK;
    if (!rc) {
        o->ref = malloc(KL_B * np * C);
        o->sec = malloc(KL_B * np * C);
        rc = gg_buffer_read(ctx, br, 0, o->ref, KL_B * np * C) != GG_OK ||
             gg_buffer_read(ctx, bs, 0, o->sec, KL_B * np * C) != GG_OK;
    }
    if (!rc)
        rc = gg_xc_launch(ctx, GG_K_XC_COLSTATS, KL_N, KL_B, &p, br, bs, part, NULL, NULL) != GG_OK;
    if (!rc) {
        o->part = malloc(sizeof(double) * KL_B * KL_N * GG_XC_PART_STATS);
        rc = gg_buffer_read(ctx, part, 0, o->part, sizeof(double) * KL_B * KL_N * GG_XC_PART_STATS) !=
             GG_OK;
    }
    /* again with zero_invalid: the same partials, NaN samples now 0 */
    p.zero_invalid = 1;
    if (!rc)
        rc = gg_xc_launch(ctx, GG_K_XC_COLSTATS, KL_N, KL_B, &p, br, bs, part, NULL, NULL) != GG_OK;
    if (!rc) {
        const size_t nb = sizeof(double) * KL_B * KL_N * GG_XC_PART_STATS;
        o->part_z = malloc(nb);
        o->ref_z = malloc(KL_B * np * C);
        o->sec_z = malloc(KL_B * np * C);
        rc = gg_buffer_read(ctx, part, 0, o->part_z, nb) != GG_OK ||
             gg_buffer_read(ctx, br, 0, o->ref_z, KL_B * np * C) != GG_OK ||
             gg_buffer_read(ctx, bs, 0, o->sec_z, KL_B * np * C) != GG_OK;
    }
    /* pad: 2 spectra of 45 x 20 (odd) and 48 x 20 (even, read from the same data) */
    for (int odd = 0; !rc && odd < 2; odd++) {
        gg_xc_params q = {0};
        q.nwin = 2;
        q.bw = odd ? 45 : 48;
        q.bh = 20;
        q.ow = odd ? 90 : 96;
        q.oh = 20;
        q.scale = 1.0f / q.bw;
        gg_buffer *out = odd ? po : pe;
        rc = gg_xc_launch(ctx, GG_K_XC_PAD, q.ow, q.oh * 2, &q, sp, out, NULL, NULL, NULL) != GG_OK;
        float **dst = odd ? &o->pad_odd : &o->pad_even;
        *dst = malloc(C * 2 * q.ow * 20);
        if (!rc)
            rc = gg_buffer_read(ctx, out, 0, *dst, C * 2 * q.ow * 20) != GG_OK;
    }
    if (rc)
        fprintf(stderr, "%s: %s\n", dev, gg_context_last_error(ctx));
    gg_buffer *all[] = {rm, ra, bp, br, bs, part, sp, pe, po};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            gg_buffer_free(ctx, all[i]);
    gg_context_destroy(ctx);
    return rc ? -1 : 0;
}

static float kl_s16(int v, int hi)
{
    const short s = (short)(hi ? (v >> 16) & 0xFFFF : v & 0xFFFF);
    return (float)s;
}

static void test_gmtsar_kernels(char devs[][32], int nd)
{
    int *ring_m = malloc(sizeof(int) * KL_CAP * KL_W), *ring_a = malloc(sizeof(int) * KL_CAP * KL_WA);
    for (int i = 0; i < KL_CAP * KL_W; i++)
        ring_m[i] = kl_next() % 7 == 0 ? 0 : (int)kl_next(); /* a seventh zero fill */
    for (int i = 0; i < KL_CAP * KL_WA; i++)
        ring_a[i] = kl_next() % 7 == 0 ? 0 : (int)kl_next();
    /* template (aligned) x, y, chip (master) x, y: inside, off the left
     * and top, past the right and bottom (each file's own size) */
    const int pos[4 * KL_B] = {5, 3, 10, 0, -20, -10, -5, -30, 40, 20, 50, 30};
    float *spec = malloc(sizeof(float) * 2 * 2 * 48 * 20);
    for (int i = 0; i < 2 * 2 * 48 * 20; i++)
        spec[i] = (float)((int)(kl_next() % 20001) - 10000) / 1000.0f;
    kl_out out[MAXDEV];
    memset(out, 0, sizeof out);
    int ok[MAXDEV] = {0};
    for (int d = 0; d < nd; d++) {
        ok[d] = kl_run(devs[d], ring_m, ring_a, pos, spec, &out[d]) == 0;
        CHECK(ok[d], "%s: GMTSAR kernels ran", devs[d]);
    }
    const size_t np = (size_t)KL_N * KL_N;
    for (int d = 0; d < nd; d++) {
        if (!ok[d] || strcmp(devs[d], "cpu"))
            continue;
        /* extract16 by its definition */
        int bad = 0;
        for (int w = 0; w < KL_B; w++)
            for (int y = 0; y < KL_N; y++)
                for (int x = 0; x < KL_N; x++)
                    for (int f = 0; f < 2; f++) { /* 0 template (aligned), 1 chip (master) */
                        const int tx = pos[4 * w + 2 * f] + x, ty = pos[4 * w + 2 * f + 1] + y;
                        const int W = f ? KL_W : KL_WA, H = f ? KL_H : KL_HA;
                        float re = NAN, im = NAN;
                        if (tx >= 0 && ty >= 0 && tx < W && ty < H) {
                            const int v = (f ? ring_m : ring_a)[(ty % KL_CAP) * W + tx];
                            if (v != 0) {
                                re = kl_s16(v, 0);
                                im = kl_s16(v, 1);
                            }
                        }
                        const float *got = (f ? out[d].sec : out[d].ref) + 2 * (w * np + (size_t)y * KL_N + x);
                        bad += memcmp(got, &re, 4) || memcmp(got + 1, &im, 4);
                    }
        CHECK(bad == 0, "cpu: extract16 differs from its definition at %d samples", bad);
        /* colstats: the column walk (Welford) */
        int nan_samples = 0;
        bad = 0;
        for (int w = 0; w < KL_B; w++)
            for (int x = 0; x < KL_N; x++) {
                double nr = 0, mr = 0, m2 = 0, ns = 0, ms = 0;
                for (int y = 0; y < KL_N; y++) {
                    const size_t k = w * np + (size_t)y * KL_N + x;
                    const float a = sqrtf(out[d].ref[2 * k] * out[d].ref[2 * k] +
                                          out[d].ref[2 * k + 1] * out[d].ref[2 * k + 1]);
                    if (isfinite(a)) {
                        nr += 1.0;
                        const double dd = a - mr;
                        mr += dd / nr;
                        m2 += dd * (a - mr);
                    } else
                        nan_samples++;
                    const float b = sqrtf(out[d].sec[2 * k] * out[d].sec[2 * k] +
                                          out[d].sec[2 * k + 1] * out[d].sec[2 * k + 1]);
                    if (isfinite(b)) {
                        ns += 1.0;
                        ms += (b - ms) / ns;
                    }
                }
                const double want[5] = {nr, mr, m2, ns, ms};
                bad += memcmp(out[d].part + ((size_t)w * KL_N + x) * GG_XC_PART_STATS, want,
                              sizeof want) != 0;
            }
        CHECK(nan_samples > 0, "cpu: the kernel test has no invalid samples");
        int zbad = memcmp(out[d].part_z, out[d].part, sizeof(double) * KL_B * KL_N * GG_XC_PART_STATS) != 0;
        for (size_t i = 0; i < 2 * KL_B * np; i++) {
            const float zr = isnan(out[d].ref[i]) ? 0.0f : out[d].ref[i];
            const float zs = isnan(out[d].sec[i]) ? 0.0f : out[d].sec[i];
            zbad += memcmp(&out[d].ref_z[i], &zr, 4) != 0 || memcmp(&out[d].sec_z[i], &zs, 4) != 0;
        }
        CHECK(zbad == 0, "cpu: colstats with zero_invalid: %d differences", zbad);
        CHECK(bad == 0, "cpu: colstats differs from the column walk at %d columns", bad);
        /* pad by its definition (the Nyquist bin of an even size halved) */
        bad = 0;
        for (int odd = 0; odd < 2; odd++) {
            const int bw = odd ? 45 : 48, ow = odd ? 90 : 96, h = bw / 2;
            for (int w = 0; w < 2; w++)
                for (int y = 0; y < 20; y++)
                    for (int x = 0; x < ow; x++) {
                        int ix = -1;
                        float wx = 1.0f;
                        if (odd)
                            ix = x <= h ? x : x >= ow - h ? x - ow + bw : -1;
                        else if (x < h)
                            ix = x;
                        else if (x == h || x == ow - h) {
                            ix = h;
                            wx = 0.5f;
                        } else if (x > ow - h)
                            ix = x - ow + bw;
                        const float f = 1.0f * wx * (1.0f / bw);
                        float want[2] = {0.0f, 0.0f};
                        if (ix >= 0) {
                            const size_t k = ((size_t)w * 20 + y) * bw + ix;
                            want[0] = spec[2 * k] * f;
                            want[1] = spec[2 * k + 1] * f;
                        }
                        const float *got = (odd ? out[d].pad_odd : out[d].pad_even) +
                                           2 * (((size_t)w * 20 + y) * ow + x);
                        bad += memcmp(got, want, sizeof want) != 0;
                    }
        }
        CHECK(bad == 0, "cpu: pad differs from its definition at %d samples", bad);
    }
    /* the CPU backend's rank-2 FFT (rows, then blocks of columns) against
     * FFTW's own 2-D plan, both directions, a width with a narrower last
     * block */
    for (int d = 0; d < nd; d++) {
        if (strcmp(devs[d], "cpu"))
            continue;
        gg_context *ctx = NULL;
        char err[512];
        const int n2[2] = {40, 56}, B = 3;
        const size_t nf = (size_t)B * n2[0] * n2[1];
        fftwf_complex *a = fftwf_malloc(sizeof(fftwf_complex) * nf);
        fftwf_complex *b = fftwf_malloc(sizeof(fftwf_complex) * nf);
        gg_buffer *buf = NULL;
        int rc = gg_context_create("cpu", &ctx, err, sizeof err) != GG_OK ||
                 gg_buffer_alloc(ctx, sizeof(fftwf_complex) * nf, &buf) != GG_OK;
        for (int inv = 0; !rc && inv < 2; inv++) {
            for (size_t i = 0; i < 2 * nf; i++)
                ((float *)a)[i] = (float)((int)(kl_next() % 2001) - 1000) / 100.0f;
            rc = gg_buffer_write(ctx, buf, 0, a, sizeof(fftwf_complex) * nf) != GG_OK ||
                 gg_fft(ctx, buf, 2, n2, B, inv) != GG_OK ||
                 gg_buffer_read(ctx, buf, 0, b, sizeof(fftwf_complex) * nf) != GG_OK;
            fftwf_plan pl = fftwf_plan_many_dft(2, n2, B, a, NULL, 1, n2[0] * n2[1], a, NULL, 1,
                                                n2[0] * n2[1], inv ? FFTW_BACKWARD : FFTW_FORWARD,
                                                FFTW_ESTIMATE);
            fftwf_execute(pl);
            fftwf_destroy_plan(pl);
            CHECK(!rc && !memcmp(a, b, sizeof(fftwf_complex) * nf),
                  "cpu: rank-2 FFT (%s) differs from FFTW's 2-D plan", inv ? "inverse" : "forward");
        }
        CHECK(!rc, "cpu: FFT check ran");
        if (buf)
            gg_buffer_free(ctx, buf);
        gg_context_destroy(ctx);
        fftwf_free(a);
        fftwf_free(b);
    }
    /* devices against the first */
    for (int d = 1; d < nd; d++) {
        if (!ok[0] || !ok[d])
            continue;
        int diff = 0; /* NaN for NaN (a backend's NaN may carry another payload) */
        for (size_t i = 0; i < 2 * KL_B * np; i++)
            diff += (isnan(out[d].ref[i]) != isnan(out[0].ref[i]) ||
                     (!isnan(out[0].ref[i]) && memcmp(&out[d].ref[i], &out[0].ref[i], 4))) +
                    (isnan(out[d].sec[i]) != isnan(out[0].sec[i]) ||
                     (!isnan(out[0].sec[i]) && memcmp(&out[d].sec[i], &out[0].sec[i], 4)));
        CHECK(diff == 0, "%s vs %s: extract16 differs at %d values", devs[d], devs[0], diff);
        CHECK(!memcmp(out[d].pad_even, out[0].pad_even, 2 * 96 * 20 * 8) &&
                  !memcmp(out[d].pad_odd, out[0].pad_odd, 2 * 90 * 20 * 8),
              "%s vs %s: pad differs", devs[d], devs[0]);
        int same = 1;
        double worst = 0;
        for (size_t i = 0; i < (size_t)KL_B * KL_N * GG_XC_PART_STATS; i++) {
            const double a = out[d].part[i], b = out[0].part[i];
            same &= a == b;
            const double r = fabs(a - b) / fmax(fabs(b), 1e-300);
            worst = r > worst ? r : worst;
        }
        printf("%s vs %s: colstats partials %s (worst relative difference %.2e)\n", devs[d],
               devs[0], same ? "identical" : "differ", worst);
        CHECK(worst <= 1e-6, "%s vs %s: colstats partials differ (%.2e)", devs[d], devs[0], worst);
    }
    for (int d = 0; d < nd; d++) {
        free(out[d].ref);
        free(out[d].sec);
        free(out[d].part);
        free(out[d].pad_even);
        free(out[d].pad_odd);
        free(out[d].ref_z);
        free(out[d].sec_z);
        free(out[d].part_z);
    }
    free(ring_m);
    free(ring_a);
    free(spec);
}

int main(int argc, char **argv)
{
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    static const char *const names[] = {"golden", "reference", "agree", "bad", "gmtsar",
                                        "gmtsar_sizes", "gmtsar_zero_fill", "gmtsar_corr0",
                                        "sweep", "sweep_tapered", "quality_flag",
                                        "gmtsar_kernels"};
    for (int i = 1; i < argc; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            known |= !strcmp(argv[i], names[k]);
        if (!known) {
            fprintf(stderr, "test_xcorr: unknown test '%s'\n", argv[i]);
            return 2;
        }
    }
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    for (int d = 0; wanted(argc, argv, "golden") && d < nd; d++)
        test_golden(devs[d], NULL);
    for (int d = 0; wanted(argc, argv, "reference") && d < nd; d++)
        test_reference(devs[d]);
    if (wanted(argc, argv, "agree"))
        test_agree_and_invalid(devs, nd);
    if (wanted(argc, argv, "bad"))
        test_bad();
    if (wanted(argc, argv, "gmtsar"))
        test_gmtsar(devs, nd);
    if (wanted(argc, argv, "gmtsar_sizes"))
        test_gmtsar_sizes(devs, nd);
    if (wanted(argc, argv, "gmtsar_zero_fill"))
        test_gmtsar_zero_fill(devs, nd);
    if (wanted(argc, argv, "gmtsar_corr0"))
        test_gmtsar_corr0(devs, nd);
    if (wanted(argc, argv, "gmtsar_kernels"))
        test_gmtsar_kernels(devs, nd);
    if (nd > 0 && !getenv("XC_NO_SWEEP") && wanted(argc, argv, "sweep"))
        test_sweep(devs[0], 0);
    if (nd > 0 && !getenv("XC_NO_SWEEP") && wanted(argc, argv, "sweep_tapered"))
        test_sweep(devs[0], 1);
    for (int d = 0; wanted(argc, argv, "quality_flag") && d < nd; d++)
        test_quality_flag(devs[d]);
    return check_summary("test_xcorr");
}
