/*
 * test_fmcw.c -- the FMCW weather-radar chain (gg_fmcw_*):
 *   1. a float64 reference of the whole chain, written here independently
 *      (naive DFTs, textbook order: window and mean removal in slow time,
 *      sorted Hildebrand-Sekhon), on one small simulated sector, on every
 *      device;
 *   2. accuracy against the simulated truth: exact spectra with
 *      rectangular windows gate by gate, realistic (exponential) spectra
 *      with Hamming windows as region means; velocity positive away;
 *      no NaN or infinity in valid gates; steady clutter removed;
 *   3. cpu vs the other devices on the same sectors;
 *   4. bad sectors (all zero, saturated), bad parameters and products;
 *   5. the spectral stage alone on a known spectrum;
 *   6. PPI gridding: a point target lands in the right cell.
 *
 * MIT licence.
 */
#include "check.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>

typedef double complex cplx;
#define NP GG_FMCW_NPRODUCTS
#define ND GG_FMCW_NODATA

static int run_chain(const char *dev, const gg_fmcw_params *p, const int16_t *sec, int nsec, int batch,
                     float *out, int *flags)
{
    gg_context *ctx = NULL;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        CHECK(0, "cannot open %s: %s", dev, err);
        return 1;
    }
    gg_fmcw *f = NULL;
    gg_status s = gg_fmcw_create(ctx, p, NULL, 0, batch, &f);
    CHECK(s == GG_OK, "create on %s: %s", dev, gg_context_last_error(ctx));
    const size_t sv = gg_fmcw_sector_values(p), G = (size_t)p->n_gates;
    for (int k = 0; s == GG_OK && k < nsec; k += batch) {
        const int n = nsec - k < batch ? nsec - k : batch;
        s = gg_fmcw_push(f, sec + (size_t)k * sv, n);
        CHECK(s == GG_OK, "push on %s: %s", dev, gg_fmcw_last_error(f));
        if (s == GG_OK)
            s = gg_fmcw_products(f, out + (size_t)k * NP * G);
        for (int i = 0; flags && i < n; i++)
            flags[k + i] = gg_fmcw_sector_flags(f, i);
    }
    gg_fmcw_destroy(f);
    gg_context_destroy(ctx);
    return s != GG_OK;
}

/* -------------------------------------------------- float64 reference */

static void dft(cplx *x, int n, int sign)
{
    cplx *y = malloc(sizeof(cplx) * (size_t)n);
    for (int k = 0; k < n; k++) {
        cplx s = 0;
        for (int j = 0; j < n; j++)
            s += x[j] * cexp(sign * I * 2.0 * M_PI * (double)((long)j * k % n) / n);
        y[k] = s;
    }
    memcpy(x, y, sizeof(cplx) * (size_t)n);
    free(y);
}

static double win(int type, int n, int N)
{
    const double c = cos(2.0 * M_PI * n / N);
    return type == GG_FMCW_WINDOW_HAMMING ? 0.54 - 0.46 * c : type == GG_FMCW_WINDOW_HANN ? 0.5 - 0.5 * c : 1.0;
}

static int cmpd(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* HS74: mean of the largest set of lowest points with var <= mean^2. */
static double ref_hs(const double *s, int n, int *all)
{
    double *t = malloc(sizeof(double) * (size_t)n);
    memcpy(t, s, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmpd);
    double best = t[0];
    *all = 0;
    for (int k = 1; k <= n; k++) {
        double m = 0, v = 0;
        for (int i = 0; i < k; i++)
            m += t[i];
        m /= k;
        for (int i = 0; i < k; i++)
            v += (t[i] - m) * (t[i] - m);
        v /= k;
        if (v <= m * m) {
            best = m;
            *all = k == n;
        }
    }
    free(t);
    return best;
}

/* products of one sector, [NP][G] */
static void reference(const gg_fmcw_params *p, const int16_t *sec, double *prod)
{
    const int M = p->n_sweeps, N = p->n_samples, G = p->n_gates;
    const size_t plane = (size_t)M * N;
    double wr2 = 0, wd2 = 0;
    for (int n = 0; n < N; n++)
        wr2 += win(p->window_range, n, N) * win(p->window_range, n, N);
    for (int m = 0; m < M; m++)
        wd2 += win(p->window_doppler, m, M) * win(p->window_doppler, m, M);
    const double va = 299792458.0 / p->carrier_hz / (4.0 * p->sweep_time_s), dv = 2 * va / M;
    cplx *spec[3];   /* [g][i] windowed Doppler spectra, velocity ascending */
    cplx *row = malloc(sizeof(cplx) * (size_t)(N > M ? N : M));
    for (int c = 0; c < 3; c++) {
        cplx *rg = malloc(sizeof(cplx) * (size_t)M * G);   /* [m][g] */
        for (int m = 0; m < M; m++) {
            for (int n = 0; n < N; n++) {
                const size_t i = (size_t)c * 2 * plane + (size_t)m * N + n;
                row[n] = win(p->window_range, n, N) * (sec[i] + I * sec[i + plane]);
            }
            dft(row, N, -1);
            for (int g = 0; g < G; g++)
                rg[(size_t)m * G + g] = row[g] / sqrt(N * wr2);
        }
        spec[c] = malloc(sizeof(cplx) * (size_t)M * G);
        for (int g = 0; g < G; g++) {
            cplx mean = 0;
            for (int m = 0; m < M; m++)
                mean += rg[(size_t)m * G + g];
            mean /= M;
            for (int m = 0; m < M; m++)
                row[m] = rg[(size_t)m * G + g] - (p->clutter_mean ? mean : 0);
            if (p->notch_bins > 0) {
                dft(row, M, -1);
                for (int j = 0; j < M; j++) {
                    const int sj = j > M / 2 ? j - M : j;
                    if (abs(sj) <= p->notch_bins)
                        row[j] = 0;
                }
                dft(row, M, +1);
                for (int m = 0; m < M; m++)
                    row[m] /= M;
            }
            for (int m = 0; m < M; m++)
                row[m] *= win(p->window_doppler, m, M);
            dft(row, M, -1);
            for (int j = 0; j < M; j++) {
                /* bin j turns as exp(+2 pi i j m / M): velocity -j dv */
                const int sj = j >= M / 2 ? j - M : j;
                int i = (int)lround((-sj * dv + va) / dv);
                i = ((i % M) + M) % M;
                spec[c][(size_t)g * M + i] = row[j] / sqrt(M * wd2);
            }
        }
        free(rg);
    }
    const double dr = 299792458.0 / (2 * p->bandwidth_hz);
    double *s = malloc(sizeof(double) * (size_t)M);
    const double a = p->window_doppler == GG_FMCW_WINDOW_HAMMING ? 0.54 : p->window_doppler == GG_FMCW_WINDOW_HANN ? 0.5 : 1;
    const double b = p->window_doppler == GG_FMCW_WINDOW_HAMMING ? 0.23 : p->window_doppler == GG_FMCW_WINDOW_HANN ? 0.25 : 0;
    const double wcorr = 2 * b * b / (a * a + 2 * b * b);
    /* the clutter filter's zeros (spread one bin by a window) are bridged
     * by a straight line over [lo, hi] around 0 m/s (bin M/2) */
    const int e = p->notch_bins + (b > 0 ? 1 : 0), filt = p->clutter_mean || p->notch_bins > 0;
    const int lo = filt ? M / 2 - e : 1, hi = filt ? M / 2 + e : 0;
    double *sp[3];
    cplx *xc = malloc(sizeof(cplx) * (size_t)M);
    for (int c = 0; c < 3; c++)
        sp[c] = malloc(sizeof(double) * (size_t)M);
    for (int g = 0; g < G; g++) {
        for (int i = 0; i < M; i++) {
            for (int c = 0; c < 3; c++)
                sp[c][i] = pow(cabs(spec[c][(size_t)g * M + i]), 2);
            xc[i] = spec[0][(size_t)g * M + i] * conj(spec[1][(size_t)g * M + i]);
        }
        for (int i = lo; i <= hi; i++) {
            const double t = (double)(i - lo + 1) / (hi - lo + 2);
            for (int c = 0; c < 3; c++)
                sp[c][i] = sp[c][lo - 1] + t * (sp[c][hi + 1] - sp[c][lo - 1]);
            xc[i] = xc[lo - 1] + t * (xc[hi + 1] - xc[lo - 1]);
        }
        double P[3], Nz[3], noise_h = 0;
        for (int c = 0; c < 3; c++) {
            double tot = 0;
            for (int i = 0; i < M; i++)
                tot += (s[i] = sp[c][i]);
            int all;
            const double nb = ref_hs(s, M, &all);
            if (c == 0)
                noise_h = nb;
            P[c] = all ? 0 : tot - nb * M;   /* no signal bin, no signal */
            Nz[c] = nb * M;
        }
        /* velocity and width of the H peak */
        for (int i = 0; i < M; i++)
            s[i] = sp[0][i];
        int pk = 0;
        for (int i = 1; i < M; i++)
            if (s[i] > s[pk])
                pk = i;
        int lo = 0, hi = 0;
        /* up to two bins in a row at or below the noise */
        while (hi - lo + 2 < M && (s[(pk + hi + 1) % M] > noise_h || s[(pk + hi + 2) % M] > noise_h))
            hi++;
        while (hi - lo + 2 < M && (s[(pk + lo - 1 + M) % M] > noise_h || s[(pk + lo - 2 + 2 * M) % M] > noise_h))
            lo--;
        double w = 0, m1 = 0, m2 = 0;
        for (int d = lo; d <= hi; d++) {
            const double e = s[(pk + d + M) % M] - noise_h;
            w += e, m1 += e * d, m2 += e * d * d;
        }
        const double mu = m1 / w, var = fmax(m2 / w - mu * mu - wcorr, 0);
        double v = dv * (pk + mu);
        v -= 2 * va * floor(v / (2 * va));
        cplx x = 0;
        for (int i = 0; i < M; i++)
            x += xc[i];
        const double r = p->range_offset_m + g * dr;
        const double snr = 10 * log10(P[0] / Nz[0]);
        const int valid = P[0] > 0 && snr >= p->min_snr_db && r > 0;
        double *o = prod + g;
        o[GG_FMCW_DBZ * G] = valid ? 10 * log10(P[0]) + p->radar_constant_h_db + 20 * log10(r / 1000) : ND;
        o[GG_FMCW_ZDR * G] = valid && P[1] > 0 ? 10 * log10(P[0] / P[1]) + p->zdr_offset_db : ND;
        o[GG_FMCW_LDR * G] = valid && P[2] > 0 ? 10 * log10(P[2] / P[0]) + p->ldr_offset_db : ND;
        o[GG_FMCW_VEL * G] = valid ? -va + v : ND;
        o[GG_FMCW_WIDTH * G] = valid ? dv * sqrt(var) : ND;
        o[GG_FMCW_RHOHV * G] = valid && P[1] > 0 ? cabs(x) / sqrt(P[0] * P[1]) : ND;
        o[GG_FMCW_PHIDP * G] = valid && P[1] > 0 ? carg(x) * 180 / M_PI : ND;
        for (int c = 0; c < 3; c++)
            o[(GG_FMCW_SNR + c) * G] = P[c] > 0 ? 10 * log10(P[c] / Nz[c]) : ND;
    }
    for (int c = 0; c < 3; c++)
        free(spec[c]), free(sp[c]);
    free(xc);
    free(row);
    free(s);
}

/* ------------------------------------------------------------ fields */

typedef struct fields {
    float *dbz, *zdr, *ldr, *vel, *width, *rho, *phi, *clut;
} fields;

static void fields_alloc(fields *f, int G)
{
    float **m[] = {&f->dbz, &f->zdr, &f->ldr, &f->vel, &f->width, &f->rho, &f->phi, &f->clut};
    for (int i = 0; i < 8; i++) {
        *m[i] = malloc(sizeof(float) * (size_t)G);
        for (int k = 0; k < G; k++)
            (*m[i])[k] = NAN;
    }
}

static void fields_free(fields *f)
{
    free(f->dbz), free(f->zdr), free(f->ldr), free(f->vel), free(f->width), free(f->rho), free(f->phi),
        free(f->clut);
}

static gg_fmcw_field as_field(const fields *f)
{
    gg_fmcw_field d = {f->dbz, f->zdr, f->ldr, f->vel, f->width, f->rho, f->phi, f->clut};
    return d;
}

static void small_params(gg_fmcw_params *p, int M, int N, int G)
{
    gg_fmcw_params_default(p);
    p->n_sweeps = M;
    p->n_samples = N;
    p->n_gates = G;
    p->sample_rate_hz = N / p->sweep_time_s;
}

/* -------------------------------------------------------------- tests */

static const double tol_ref[NP] = {0.01, 0.01, 0.01, 0.01, 0.01, 1e-4, 0.01, 0.01, 0.01, 0.01};

static void test_reference(char devs[][32], int ndev)
{
    gg_fmcw_params p;
    small_params(&p, 32, 32, 12);
    p.notch_bins = 1;
    p.window_range = GG_FMCW_WINDOW_HAMMING;
    p.window_doppler = GG_FMCW_WINDOW_HANN;
    p.zdr_offset_db = 0.3;
    const int G = p.n_gates;
    fields f;
    fields_alloc(&f, G);
    for (int k = 1; k < G; k++) {
        f.dbz[k] = 20 + 2 * k;
        f.zdr[k] = 0.5 + 0.1 * k;
        f.ldr[k] = -15;
        f.vel[k] = -6 + 1.1 * k;
        f.width[k] = 1.0 + 0.1 * k;
        f.rho[k] = 0.95;
        f.phi[k] = 10 * k;
        f.clut[k] = k % 3 == 0 ? 30 : NAN;
    }
    gg_fmcw_sim sim = {4.0, 1, 7};
    int16_t *sec = malloc(sizeof(int16_t) * gg_fmcw_sector_values(&p));
    gg_fmcw_field fd = as_field(&f);
    char err[256];
    CHECK(gg_fmcw_simulate(&p, &sim, &fd, sec, err, sizeof err) == GG_OK, "simulate: %s", err);
    double *ref = malloc(sizeof(double) * NP * G);
    reference(&p, sec, ref);
    float *out = malloc(sizeof(float) * NP * G);
    for (int d = 0; d < ndev; d++) {
        if (run_chain(devs[d], &p, sec, 1, 1, out, NULL))
            continue;
        int nvalid = 0;
        for (int q = 0; q < NP; q++)
            for (int g = 0; g < G; g++) {
                const double r = ref[q * G + g], v = out[q * G + g];
                if (r == ND || v == ND) {
                    CHECK(r == v, "%s %s gate %d: reference %g, got %g", devs[d], gg_fmcw_product_name(q), g, r, v);
                    continue;
                }
                nvalid++;
                double e = fabs(r - v);
                if (q == GG_FMCW_PHIDP)
                    e = fabs(remainder(r - v, 360.0));
                CHECK(e <= tol_ref[q], "%s %s gate %d: reference %.6f, got %.6f", devs[d],
                      gg_fmcw_product_name(q), g, r, v);
            }
        CHECK(nvalid > 8 * (G - 1), "%s: only %d valid values", devs[d], nvalid);
        printf("reference chain on %s: %d values compared\n", devs[d], nvalid);
    }
    free(out), free(ref), free(sec);
    fields_free(&f);
}

/* Truth per gate in blocks of 8 gates; returns the truth of gate k. */
static void make_truth(fields *f, int G, int sector, int realistic)
{
    for (int k = 0; k < G; k++) {
        const int blk = k / 8;
        if (k < 2)
            continue;   /* near bins: range 0 and leakage */
        f->dbz[k] = 15 + 5 * (blk % 5) + (realistic ? 0 : 0.5f * sector);
        f->zdr[k] = -0.5f + 0.6f * (blk % 4);
        f->ldr[k] = -12 - 3 * (blk % 3);
        /* velocities away from 0 m/s, both signs, also near +-v_a */
        const float vs[8] = {4.5f, -5.0f, 2.5f, -3.0f, 6.0f, -6.5f, 3.5f, -2.5f};
        f->vel[k] = vs[(blk + sector) % 8];
        f->width[k] = 0.8f + 0.4f * (blk % 3);
        f->rho[k] = 0.90f + 0.025f * (blk % 4);
        f->phi[k] = -40 + 25 * (blk % 4);
        f->clut[k] = blk % 2 ? 35 : NAN;
    }
}

static void test_accuracy(char devs[][32], int ndev, int realistic)
{
    /* exact: every gate with SNR >= 20 dB in the channels a product uses
     * (the estimators' own scatter at M = 256 stays below the tolerances
     * there); realistic: 8-gate block means of the gates with SNR >= 10 dB
     * (the tolerance bounds the bias; one gate's estimate scatters by
     * about 1/sqrt(independent spectral samples)) */
    gg_fmcw_params p;
    small_params(&p, realistic ? 128 : 256, 128, 64);
    p.carrier_hz = 9.4e9;
    p.sweep_time_s = 1e-3;   /* v_a = 7.97 m/s */
    if (!realistic)
        p.window_range = p.window_doppler = GG_FMCW_WINDOW_RECT;
    const int G = p.n_gates, S = realistic ? 96 : 4;
    const double min_snr = realistic ? 10 : 20;
    const size_t sv = gg_fmcw_sector_values(&p);
    int16_t *sec = malloc(sizeof(int16_t) * sv * S);
    fields *tr = calloc((size_t)S, sizeof(fields));
    gg_fmcw_sim sim = {8.0, realistic, 99};
    char err[256];
    for (int s = 0; s < S; s++) {
        fields_alloc(&tr[s], G);
        make_truth(&tr[s], G, realistic ? 0 : s, realistic);
        gg_fmcw_field fd = as_field(&tr[s]);
        sim.seed = 1000 + s;
        CHECK(gg_fmcw_simulate(&p, &sim, &fd, sec + s * sv, err, sizeof err) == GG_OK, "simulate: %s", err);
    }
    float *out = malloc(sizeof(float) * NP * G * S);
    const char *mode = realistic ? "realistic" : "exact";
    for (int d = 0; d < ndev; d++) {
        if (run_chain(devs[d], &p, sec, S, 4, out, NULL))
            continue;
        /* NaN/inf never; a valid gate has every product but LDR when HV is
         * in the noise */
        int bad = 0, checked = 0;
        for (size_t i = 0; i < (size_t)NP * G * S; i++)
            bad += !isfinite(out[i]);
        CHECK(bad == 0, "%s %s: %d NaN or infinite values", devs[d], mode, bad);
        /* per gate (exact) or per 8-gate block mean (realistic) */
        double maxe[NP] = {0}, maxse[NP] = {0};
        const double tol[NP] = {0.5, 0.2, 0.2, 0.1, 0.2, 0.01, 3.0, 0, 0, 0};
        /* block 0 starts at range 60 m, next to the empty bins 0 and 1 */
        for (int blk = realistic ? 1 : 0; blk < G / 8; blk++) {
            double acc[NP] = {0}, acc2[NP] = {0};
            int n = 0;
            for (int s = 0; s < S; s++)
                /* two gates from the block edges: the Hamming range
                 * window mixes neighbouring bins */
                for (int k = blk * 8 + 2; k < blk * 8 + 6; k++) {
                    const fields *t = &tr[s];
                    if (!isfinite(t->dbz[k]))
                        continue;
                    const double snr = gg_fmcw_sim_snr_db(&p, &sim, k, t->dbz[k]);
                    const double snr_x = snr + t->ldr[k], snr_v = snr - t->zdr[k];
                    if (snr < min_snr || snr_v < min_snr)
                        continue;
                    const float *o = out + (size_t)s * NP * G;
                    const double got[NP] = {o[k], o[G + k], snr_x >= min_snr ? o[2 * G + k] : t->ldr[k],
                                            o[3 * G + k], o[4 * G + k], o[5 * G + k], o[6 * G + k]};
                    const double want[NP] = {t->dbz[k], t->zdr[k], t->ldr[k], t->vel[k], t->width[k],
                                             t->rho[k], t->phi[k]};
                    for (int q = 0; q < 7; q++)
                        CHECK(got[q] != ND, "%s %s sector %d gate %d: %s nodata", devs[d], mode, s, k,
                              gg_fmcw_product_name(q));
                    checked++;
                    n++;
                    for (int q = 0; q < 7; q++) {
                        double e = got[q] - want[q];
                        if (q == GG_FMCW_PHIDP)
                            e = remainder(e, 360.0);
                        if (realistic) {
                            acc[q] += e;
                            acc2[q] += e * e;
                        } else if (fabs(e) > maxe[q] && !(q == GG_FMCW_RHOHV && fmin(snr, snr_v) < 30)) {
                            maxe[q] = fabs(e);
                        }
                        /* rho_hv's own scatter, ~sqrt(2 / (M SNR)), is 0.009 at
                         * 20 dB: gate by gate it is held to 0.01 from 30 dB */
                        if (!realistic && !(q == GG_FMCW_RHOHV && fmin(snr, snr_v) < 30))
                            CHECK(fabs(e) <= tol[q], "%s exact sector %d gate %d %s: truth %.3f got %.3f",
                                  devs[d], s, k, gg_fmcw_product_name(q), want[q], got[q]);
                    }
                }
            if (realistic && n > 0)
                for (int q = 0; q < 7; q++) {
                    const double e = fabs(acc[q] / n);
                    if (e > maxe[q])
                        maxe[q] = e;
                    const double se = sqrt(fmax(acc2[q] / n - (acc[q] / n) * (acc[q] / n), 0) / n);
                    CHECK(e <= tol[q], "%s realistic block %d %s: mean error %.3f (standard error %.3f) over %d gates",
                          devs[d], blk, gg_fmcw_product_name(q), acc[q] / n, se, n);
                    if (se > maxse[q])
                        maxse[q] = se;
                }
        }
        CHECK(checked > (realistic ? 1000 : 100), "%s %s: only %d gates checked", devs[d], mode, checked);
        printf("%s accuracy on %s, %d gates: max |error| DBZ %.3f ZDR %.3f LDR %.3f VEL %.3f WIDTH %.3f "
               "RHOHV %.4f PHIDP %.2f\n",
               mode, devs[d], checked, maxe[0], maxe[1], maxe[2], maxe[3], maxe[4], maxe[5], maxe[6]);
        if (realistic)
            printf("  largest standard error of a block mean: DBZ %.3f ZDR %.3f LDR %.3f VEL %.3f WIDTH %.3f "
                   "RHOHV %.4f\n", maxse[0], maxse[1], maxse[2], maxse[3], maxse[4], maxse[5]);
    }
    for (int s = 0; s < S; s++)
        fields_free(&tr[s]);
    free(tr), free(out), free(sec);
}

static void test_agreement(char devs[][32], int ndev)
{
    if (ndev < 2)
        return;
    gg_fmcw_params p;
    small_params(&p, 128, 256, 96);
    p.notch_bins = 2;
    const int G = p.n_gates, S = 6;
    const size_t sv = gg_fmcw_sector_values(&p);
    int16_t *sec = malloc(sizeof(int16_t) * sv * S);
    for (int s = 0; s < S; s++) {
        fields t;
        fields_alloc(&t, G);
        make_truth(&t, G, s, 1);
        gg_fmcw_field fd = as_field(&t);
        gg_fmcw_sim sim = {6.0, 1, 77 + s};
        gg_fmcw_simulate(&p, &sim, &fd, sec + s * sv, NULL, 0);
        fields_free(&t);
    }
    float *ref = malloc(sizeof(float) * NP * G * S), *out = malloc(sizeof(float) * NP * G * S);
    if (run_chain(devs[0], &p, sec, S, 3, ref, NULL) == 0)
        for (int d = 1; d < ndev; d++) {
            if (run_chain(devs[d], &p, sec, S, 2, out, NULL))
                continue;
            int diff = 0, n = 0;
            for (size_t i = 0; i < (size_t)NP * G * S; i++) {
                const int q = (int)(i / G) % NP;
                n++;
                double e = fabs((double)ref[i] - out[i]);
                if (q == GG_FMCW_PHIDP)
                    e = fabs(remainder(ref[i] - out[i], 360.0));
                if ((ref[i] == ND) != (out[i] == ND) || e > (q == GG_FMCW_RHOHV ? 1e-4 : 0.01))
                    diff++;
            }
            CHECK(diff == 0, "%s vs %s: %d of %d values differ", devs[0], devs[d], diff, n);
            printf("%s vs %s: %d values, %d differ\n", devs[0], devs[d], n, diff);
        }
    free(ref), free(out), free(sec);
}

/* Streaming: submit/collect over two contexts (streams) of one device,
 * from the processor's page-locked input, gives exactly what push gives
 * for the same batches (same device, same kernels), in the order asked,
 * with the flags of a bad sector; misuse is refused. */
static void test_streaming(char devs[][32], int ndev)
{
    gg_fmcw_params p;
    small_params(&p, 64, 128, 48);
    const int G = p.n_gates, S = 7, B = 3;
    const size_t sv = gg_fmcw_sector_values(&p);
    int16_t *sec = malloc(sizeof(int16_t) * sv * S);
    for (int s = 0; s < S; s++) {
        fields t;
        fields_alloc(&t, G);
        make_truth(&t, G, s, 1);
        gg_fmcw_field fd = as_field(&t);
        gg_fmcw_sim sim = {6.0, 1, 301 + s};
        gg_fmcw_simulate(&p, &sim, &fd, sec + s * sv, NULL, 0);
        fields_free(&t);
    }
    memset(sec + 4 * sv + 2 * (sv / 6), 0, sizeof(int16_t) * 2 * (sv / 6));   /* sector 4: VV all zero */
    const int asked[2] = {GG_FMCW_VEL, GG_FMCW_DBZ};
    float *ref = malloc(sizeof(float) * NP * G * S), *out = malloc(sizeof(float) * 2 * G * S);
    int rflags[7], sflags[7];
    for (int d = 0; d < ndev; d++) {
        if (run_chain(devs[d], &p, sec, S, B, ref, rflags))
            continue;
        gg_context *c1 = NULL, *c2 = NULL;
        char err[256];
        if (gg_context_create(devs[d], &c1, err, sizeof err) != GG_OK ||
            gg_context_create(devs[d], &c2, err, sizeof err) != GG_OK) {
            CHECK(0, "%s: %s", devs[d], err);
            gg_context_destroy(c1);
            continue;
        }
        gg_fmcw *f = NULL;
        CHECK(gg_fmcw_create(c1, &p, asked, 2, B, &f) == GG_OK, "create: %s", gg_context_last_error(c1));
        if (!f) {
            gg_context_destroy(c2), gg_context_destroy(c1);
            continue;
        }
        int n = -1;
        CHECK(gg_fmcw_streams(f) == 1, "one stream at first");
        CHECK(gg_fmcw_collect(f, out, NULL, &n) == GG_ERR_ARGUMENT && n == 0, "collect with nothing in flight");
        CHECK(gg_fmcw_add_stream(f, c1) == GG_ERR_ARGUMENT, "second stream on the processor's own context");
        CHECK(gg_fmcw_add_stream(f, c2) == GG_OK && gg_fmcw_streams(f) == 2, "add stream: %s",
              gg_fmcw_last_error(f));
        CHECK(gg_fmcw_add_stream(f, c2) == GG_ERR_ARGUMENT, "a third stream");
        int16_t *in = gg_fmcw_host_input(f);
        CHECK(in != NULL, "host input: %s", gg_fmcw_last_error(f));
        int ok = in != NULL, got = 0;
        /* submit(b0); per batch: refill the input, submit(b[k+1]), collect(b[k]) */
        for (int k = 0; ok && k < S; k += B) {
            const int nk = S - k < B ? S - k : B;
            memcpy(in, sec + (size_t)k * sv, sizeof(int16_t) * sv * nk);
            ok = gg_fmcw_submit(f, in, nk) == GG_OK;
            CHECK(ok, "submit %d on %s: %s", k, devs[d], gg_fmcw_last_error(f));
            if (ok && k == B) {   /* two in flight: a third, a push are refused */
                CHECK(gg_fmcw_submit(f, in, 1) == GG_ERR_ARGUMENT, "submit with both streams busy");
                CHECK(gg_fmcw_push(f, in, 1) == GG_ERR_ARGUMENT, "push while batches are in flight");
            }
            if (ok && k > 0) {
                ok = gg_fmcw_collect(f, out + (size_t)got * 2 * G, sflags + got, &n) == GG_OK && n == B;
                CHECK(ok, "collect on %s: %s (n %d)", devs[d], gg_fmcw_last_error(f), n);
                got += n;
            }
        }
        if (ok) {
            ok = gg_fmcw_collect(f, out + (size_t)got * 2 * G, sflags + got, &n) == GG_OK;
            got += n;
            CHECK(ok && got == S, "last collect on %s: %s (%d sectors)", devs[d], gg_fmcw_last_error(f), got);
            CHECK(gg_fmcw_sector_flags(f, 0) == rflags[S - 1] && gg_fmcw_sector_flags(f, n) == -1,
                  "sector flags refer to the last collected batch");
        }
        int diff = 0;
        for (int k = 0; ok && k < S; k++) {
            diff += sflags[k] != rflags[k];
            for (int i = 0; i < 2; i++)
                diff += memcmp(out + ((size_t)k * 2 + i) * G, ref + ((size_t)k * NP + asked[i]) * G,
                               sizeof(float) * G) != 0;
        }
        CHECK(ok && diff == 0 && rflags[4] == 1, "%s: streamed products or flags differ from push (%d rows), "
              "flag of the bad sector %d", devs[d], diff, rflags[4]);
        printf("streaming on %s: %d sectors over 2 streams, %d rows differ from push\n", devs[d], got, diff);
        /* push still works once everything is collected */
        CHECK(gg_fmcw_push(f, sec, 2) == GG_OK && gg_fmcw_products(f, out) == GG_OK &&
                  !memcmp(out, ref + (size_t)GG_FMCW_VEL * G, sizeof(float) * G),
              "push after streaming: %s", gg_fmcw_last_error(f));
        gg_fmcw_destroy(f);
        gg_context_destroy(c2);
        gg_context_destroy(c1);
    }
    free(ref), free(out), free(sec);
}

static void test_bad_input(const char *dev)
{
    gg_fmcw_params p;
    small_params(&p, 16, 32, 16);
    char err[256] = "";
    gg_fmcw_params q = p;
    q.n_gates = 64;
    CHECK(gg_fmcw_params_check(&q, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "n_gates"), "%s", err);
    q = p;
    q.bandwidth_hz = 0;
    CHECK(gg_fmcw_params_check(&q, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "bandwidth"), "%s", err);
    q = p;
    q.n_sweeps = 4096;
    CHECK(gg_fmcw_params_check(&q, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "n_sweeps"), "%s", err);
    int list[NP], n = 0;
    CHECK(gg_fmcw_parse_products("DBZ,FOO", list, &n, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "FOO"),
          "%s", err);
    CHECK(gg_fmcw_parse_products("dbz, VEL,snrhc", list, &n, err, sizeof err) == GG_OK && n == 3 &&
              list[1] == GG_FMCW_VEL && list[2] == GG_FMCW_SNR,
          "parse");
    CHECK(gg_fmcw_parse_products("DBZ,DBZ", list, &n, err, sizeof err) == GG_ERR_ARGUMENT, "repeat");

    /* sector 0 good, 1 all zero in VV, 2 saturated, 3 good */
    const int G = p.n_gates;
    const size_t sv = gg_fmcw_sector_values(&p), plane = (size_t)p.n_sweeps * p.n_samples;
    int16_t *sec = malloc(sizeof(int16_t) * sv * 4);
    fields t;
    fields_alloc(&t, G);
    for (int k = 2; k < G; k++)
        t.dbz[k] = 30, t.vel[k] = 3, t.zdr[k] = 1, t.ldr[k] = -20, t.rho[k] = 0.97f, t.width[k] = 1;
    gg_fmcw_field fd = as_field(&t);
    gg_fmcw_sim sim = {5.0, 1, 3};
    for (int s = 0; s < 4; s++) {
        sim.seed = 5 + s;
        gg_fmcw_simulate(&p, &sim, &fd, sec + s * sv, NULL, 0);
    }
    memset(sec + sv + 2 * plane, 0, sizeof(int16_t) * 2 * plane);
    for (size_t i = 0; i < sv; i += 7)
        sec[2 * sv + i] = (int16_t)(i % 2 ? 32767 : -32768);
    float *out = malloc(sizeof(float) * NP * G * 4);
    int flags[4] = {-1, -1, -1, -1};
    if (run_chain(dev, &p, sec, 4, 4, out, flags) == 0) {
        CHECK(flags[0] == 0 && flags[1] == 1 && flags[2] == 2 && flags[3] == 0, "flags %d %d %d %d", flags[0],
              flags[1], flags[2], flags[3]);
        int nd1 = 0, nd2 = 0, v0 = 0;
        for (int i = 0; i < NP * G; i++) {
            nd1 += out[NP * G + i] == ND;
            nd2 += out[2 * NP * G + i] == ND;
            v0 += out[i] != ND;
        }
        CHECK(nd1 == NP * G && nd2 == NP * G && v0 > NP * (G - 4), "bad sectors nodata %d %d, good valid %d",
              nd1, nd2, v0);
    }
    /* pushes beyond the batch and processors with bad parameters */
    gg_context *ctx = NULL;
    if (gg_context_create(dev, &ctx, err, sizeof err) == GG_OK) {
        gg_fmcw *f = NULL;
        q = p;
        q.n_avg = 0;
        CHECK(gg_fmcw_create(ctx, &q, NULL, 0, 1, &f) == GG_ERR_ARGUMENT && !f &&
                  strstr(gg_context_last_error(ctx), "n_avg"),
              "%s", gg_context_last_error(ctx));
        /* more rows than an int launch grid holds: refused before any allocation */
        q = p;
        q.n_samples = 1 << 20;
        q.n_gates = 1 << 20;
        CHECK(gg_fmcw_create(ctx, &q, NULL, 0, 683, &f) == GG_ERR_ARGUMENT && !f &&
                  strstr(gg_context_last_error(ctx), "at most 682 sectors"),
              "%s", gg_context_last_error(ctx));
        float dummy[4] = {1, 2, 3, 4};
        CHECK(gg_fmcw_spectral_moments(ctx, dummy, 1 << 12, 1 << 19, 64, 0, 0.1, 1, dummy) ==
                      GG_ERR_ARGUMENT &&
                  strstr(gg_context_last_error(ctx), "more than a launch takes"),
              "%s", gg_context_last_error(ctx));
        CHECK(gg_fmcw_create(ctx, &p, NULL, 0, 2, &f) == GG_OK, "create");
        CHECK(gg_fmcw_push(f, sec, 3) == GG_ERR_ARGUMENT, "push of 3 into a batch of 2");
        CHECK(gg_fmcw_products(f, out) == GG_ERR_ARGUMENT, "products before a push");
        gg_fmcw_destroy(f);
        gg_context_destroy(ctx);
    }
    fields_free(&t);
    free(sec), free(out);
}

/* A Gaussian spectrum on a flat noise floor through the spectral stage. */
static void test_spectral(char devs[][32], int ndev)
{
    const int M = 64, G = 3;
    float *s = malloc(sizeof(float) * M * G), out[5 * 3];
    const double v0 = 0, dv = 0.1887, noise = 2.0;
    const double mu[3] = {5.0, 0.3, 11.8}, sig[3] = {0.9, 0.4, 0.5}, P[3] = {400, 250, 300};   /* SNR 5, 3 and 3.7 dB */
    for (int g = 0; g < G; g++)
        for (int i = 0; i < M; i++) {
            double e = 0;
            for (int q = -2; q <= 2; q++) {
                const double d = v0 + i * dv - mu[g] + q * M * dv;
                e += exp(-d * d / (2 * sig[g] * sig[g]));
            }
            s[g * M + i] = (float)(noise * (1 + 0.3 * ((i * 7919 + g) % 11 - 5) / 5.0) +
                                   P[g] * dv / (sig[g] * sqrt(2 * M_PI)) * e);
        }
    for (int d = 0; d < ndev; d++) {
        gg_context *ctx = NULL;
        char err[256];
        if (gg_context_create(devs[d], &ctx, err, sizeof err) != GG_OK)
            continue;
        /* the floor varies by +-30 % like an average of ~30 spectra */
        CHECK(gg_fmcw_spectral_moments(ctx, s, 1, G, M, v0, dv, 30, out) == GG_OK, "%s",
              gg_context_last_error(ctx));
        for (int g = 0; g < G; g++) {
            CHECK(fabs(out[g] - noise) < 0.3, "%s gate %d noise %.3f", devs[d], g, out[g]);
            CHECK(fabs(out[G + g] / P[g] - 1) < 0.05, "%s gate %d power %.2f want %.2f", devs[d], g, out[G + g], P[g]);
            CHECK(fabs(remainder(out[3 * G + g] - mu[g], M * dv)) < 0.05, "%s gate %d vel %.3f want %.3f", devs[d], g,
                  out[3 * G + g], mu[g]);
            CHECK(fabs(out[4 * G + g] - sig[g]) < 0.1, "%s gate %d width %.3f want %.3f", devs[d], g, out[4 * G + g],
                  sig[g]);
        }
        gg_context_destroy(ctx);
    }
    free(s);
}

/* A point target at gate k0 of ray a0 (elevation 1 degree) on a PPI. */
static void test_ppi(const char *dev)
{
    gg_fmcw_params p;
    small_params(&p, 32, 256, 200);
    p.bandwidth_hz = 1.5e6;   /* 100 m gates */
    const int G = p.n_gates, S = 36, a0 = 7, k0 = 143;
    const double elev = 1.0, res = 50, maxr = 16000, dr = 299792458.0 / (2 * p.bandwidth_hz);
    const size_t sv = gg_fmcw_sector_values(&p);
    int16_t *sec = malloc(sizeof(int16_t) * sv * S);
    double az[36];
    for (int s = 0; s < S; s++) {
        fields t;
        fields_alloc(&t, G);
        if (s == a0)
            t.dbz[k0] = 45, t.vel[k0] = 2;
        gg_fmcw_field fd = as_field(&t);
        gg_fmcw_sim sim = {4.0, 0, 300 + s};
        gg_fmcw_simulate(&p, &sim, &fd, sec + s * sv, NULL, 0);
        fields_free(&t);
        az[s] = 5.0 + 10.0 * s;
    }
    p.min_snr_db = 10;
    float *out = malloc(sizeof(float) * NP * G * S), *dbz = malloc(sizeof(float) * G * S);
    if (run_chain(dev, &p, sec, S, 6, out, NULL) == 0) {
        for (int s = 0; s < S; s++)
            memcpy(dbz + (size_t)s * G, out + (size_t)s * NP * G, sizeof(float) * G);
        const int size = (int)(2 * ceil(maxr / res));
        float *grid = malloc(sizeof(float) * size * size);
        CHECK(gg_fmcw_grid_ppi(&p, dbz, S, az, 10.0, elev, res, maxr, size, grid) == GG_OK, "grid");
        /* the cell of the target, computed here (Doviak & Zrnic 2.28) */
        const double r = k0 * dr, ka = 4.0 / 3 * 6371000.0;
        const double th = elev * M_PI / 180, h = sqrt(r * r + ka * ka + 2 * r * ka * sin(th)) - ka;
        const double sg = ka * asin(r * cos(th) / (ka + h)), A = az[a0] * M_PI / 180;
        const int ci = (int)floor(sg * sin(A) / res + size / 2.0), cj = (int)floor(size / 2.0 - sg * cos(A) / res);
        const float want = dbz[(size_t)a0 * G + k0];
        CHECK(want > 40, "target gate %g dBZ", want);
        CHECK(grid[(size_t)cj * size + ci] == want, "target cell (%d, %d) holds %g, the gate %g", ci, cj,
              grid[(size_t)cj * size + ci], want);
        /* every strong cell lies in the target's ray within a gate of it */
        int nstrong = 0, stray = 0;
        for (int j = 0; j < size; j++)
            for (int i = 0; i < size; i++)
                if (grid[(size_t)j * size + i] != ND && grid[(size_t)j * size + i] > 30) {
                    const double x = (i + 0.5 - size / 2.0) * res, y = (size / 2.0 - j - 0.5) * res;
                    const double daz = fabs(remainder(atan2(x, y) * 180 / M_PI - az[a0], 360.0));
                    nstrong++;
                    stray += daz > 5.01 || fabs(hypot(x, y) - sg) > 1.5 * dr;
                }
        CHECK(nstrong >= 1 && stray == 0, "strong cells %d, %d away from the target", nstrong, stray);
        CHECK(gg_fmcw_grid_ppi(&p, dbz, S, az, 10.0, elev, 0, maxr, size, grid) == GG_ERR_ARGUMENT, "res 0");
        free(grid);
    }
    free(sec), free(out), free(dbz);
}

/* ------------------------------------------------ MRR-2 real spectra */

#define MND GG_MRR2_NODATA

/* float64 reference of the MRR-2 stage, written here from Metek's formulas:
 * the records r0..r1-1 of gate g averaged with their counts, eta = F CC
 * i^2 dH / (1e20 TF(i)) in 1/m per line, Hildebrand-Sekhon on eta with the
 * summed count on the gate's usable lines, the peak (lines above 1.2 x the
 * largest noise line, then one above it; at least minw), the noise as the
 * mean of the other usable lines, Ze = 10 log10(1e18 lambda^4 / (pi^5
 * |K|^2) sum(eta - noise)).
 * o[0..5]: ZE W WIDTH SNR NOISE FLAG. */
static void ref_mrr2(const gg_mrr2 *m, int r0, int r1, int g, int minw, double *o)
{
    const int G = m->n_gates, B = m->n_bins;
    const double lambda = 299792458.0 / 24.23e9, K2 = 0.92, dh = m->height[1] - m->height[0];
    double e[128], t[128];
    int flag = (g == 1 || g == 2 || g == G - 1) ? 1 : 0;
    double n = 0;
    for (int b = 0; b < B; b++)
        e[b] = 0;
    for (int r = r0; r < r1; r++) {
        const float *f = m->spectra + ((size_t)r * G + g) * B;
        int ok = m->n_spectra[r] > 0;
        for (int b = 0; b < B; b++)
            ok = ok && isfinite(f[b]);
        if (!ok) {
            flag |= 2;
            continue;
        }
        for (int b = 0; b < B; b++)
            e[b] += m->n_spectra[r] * (double)f[b];
        n += m->n_spectra[r];
    }
    for (int c = 0; c < 5; c++)
        o[c] = MND;
    o[5] = flag;
    const double eta_per_f = m->cc * (double)g * g * dh / (1e20 * m->tf[g]);
    if (!(n > 0) || !(eta_per_f > 0)) {
        o[5] = flag | 4;
        return;
    }
    /* the usable lines of the gate: the MRR-2 spectrum's ends are disturbed
     * (IMProToo's limits, docs/mrr2.md) */
    static const int first_line[32] = {0, 5, 4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                       2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 5};
    static const int end_line[32] = {64, 60, 61, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
                                     63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 62, 61, 63};
    const int a = G == 32 && B == 64 ? first_line[g] : 0, z = G == 32 && B == 64 ? end_line[g] : B;
    const int L = z - a;
    /* the peak is found on the averaged lines F (their integer ties decide
     * as on the device), eta = F eta_per_f after */
    for (int b = 0; b < B; b++)
        e[b] /= n;
    for (int b = a; b < z; b++)
        t[b - a] = e[b];
    qsort(t, (size_t)L, sizeof(double), cmpd);
    int nn = 1;
    double noise = t[0];
    for (int k = 1; k <= L; k++) {
        double mu = 0, var = 0;
        for (int i = 0; i < k; i++)
            mu += t[i];
        mu /= k;
        for (int i = 0; i < k; i++)
            var += (t[i] - mu) * (t[i] - mu);
        if (var / k <= mu * mu / n * (1 + 1e-9)) /* ties of integer lines: "at most" */
            nn = k, noise = mu;
    }
    const double limit = t[nn - 1], zc = 1e18 * pow(lambda, 4) / (pow(M_PI, 5) * K2);
    int pk = a;
    for (int b = a + 1; b < z; b++)
        if (e[b] > e[pk])
            pk = b;
    /* lines above 1.2 x the limit, then one more above the limit */
    int hi = 0, lo = 0;
    while (pk + hi + 1 < z && e[pk + hi + 1] > 1.2 * limit)
        hi++;
    if (pk + hi + 1 < z && e[pk + hi + 1] > limit)
        hi++;
    while (pk - lo - 1 >= a && e[pk - lo - 1] > 1.2 * limit)
        lo++;
    if (pk - lo - 1 >= a && e[pk - lo - 1] > limit)
        lo++;
    const int found = nn < L && hi + lo + 1 >= minw;
    if (found && hi + lo + 1 < L) { /* the noise: the other usable lines' mean */
        double sum = 0;
        for (int b = a; b < z; b++)
            if (b < pk - lo || b > pk + hi)
                sum += e[b];
        noise = sum / (L - hi - lo - 1);
    }
    o[4] = 10 * log10(zc * noise * eta_per_f * B);
    if (!found)
        return;
    double P = 0, m1 = 0, m2 = 0;
    for (int d = -lo; d <= hi; d++) {
        const double x = (e[pk + d] - noise) * eta_per_f;
        P += x, m1 += x * d, m2 += x * d * d;
    }
    if (!(P > 0))
        return;
    const double mu = m1 / P;
    o[0] = 10 * log10(zc * P);
    o[1] = GG_MRR2_DV * (pk + mu);
    o[2] = GG_MRR2_DV * sqrt(fmax(m2 / P - mu * mu, 0));
    o[3] = 10 * log10(P / (noise * eta_per_f * B));
}

static char *read_gz(const char *path, size_t *len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 23, n = 0;
    char *buf = malloc(cap);
    for (size_t r; (r = fread(buf + n, 1, cap - n, p)) > 0;) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    pclose(p);
    *len = n;
    return buf;
}

/* Device products against ref_mrr2 for every row and gate; returns the
 * number of disagreements (a detection decided differently, or a value
 * beyond the tolerance). */
static int mrr2_vs_ref(const char *dev, const gg_mrr2 *m, const gg_mrr2_options *o, const float *out,
                       int *ndet)
{
    const int G = m->n_gates, rows = gg_mrr2_rows(m, o->average_s, NULL);
    int *first = malloc(sizeof(int) * (size_t)(rows + 1)), bad = 0;
    gg_mrr2_rows(m, o->average_s, first);
    const double tol[6] = {0.01, 0.002, 0.002, 0.01, 0.01, 0};
    *ndet = 0;
    for (int r = 0; r < rows; r++)
        for (int g = 0; g < G; g++) {
            double ref[6];
            ref_mrr2(m, first[r], first[r + 1], g, o->min_width > 0 ? o->min_width : 3, ref);
            *ndet += out[((size_t)r * GG_MRR2_NPROD + GG_MRR2_ZE) * G + g] != MND;
            for (int c = 0; c < 6; c++) {
                const double a = ref[c];
                double b = out[((size_t)r * GG_MRR2_NPROD + c) * G + g];
                if (c == GG_MRR2_FLAG) /* bit 8 is the PIA's (the DSD stage: tests/python/test_mrr2.py) */
                    b = (double)((int)b & 7);
                double diff = fabs(a - b);
                if (c == GG_MRR2_W) /* one velocity either side of the wrap */
                    diff = fmin(diff, fabs(diff - 64 * GG_MRR2_DV));
                if ((a == MND) != (b == MND) || (a != MND && !(diff <= tol[c]))) {
                    if (bad++ < 20)
                        fprintf(stderr, "%s MRR-2 row %d gate %d plane %d: reference %.6g, got %.6g (SNR %g)\n", dev, r,
                                g, c, a, b, ref[3]);
                }
            }
        }
    free(first);
    return bad;
}

/* Known answer: one record, 3 gates, flat noise plus a 5-line box. */
static void test_mrr2_known(const char *dev)
{
    char text[8192], *p = text, line[512];
    const double F0 = 20, A = 1000, TF = 0.5, CC = 1265000;
    p += sprintf(p, "MRR 240308230000 UTC DVS 6.10 DSN 0505073657 BW 32500 CC %.0f MDQ 100 57 57 TYP RAW\n", CC);
    p += sprintf(p, "H  %9d%9d%9d\n", 0, 150, 300);
    p += sprintf(p, "TF %9.6f%9.6f%9.6f\n", TF, TF, TF);
    for (int b = 0; b < 64; b++) {
        /* gate 1: box of 5 at lines 20..24; gate 2: box of 2 at 40..41 (too narrow) */
        const double f1 = F0 + (b >= 20 && b <= 24 ? A : 0), f2 = F0 + (b == 40 || b == 41 ? A : 0);
        snprintf(line, sizeof line, "F%02d%9.0f%9.0f%9.0f\n", b, F0, f1, f2);
        p += sprintf(p, "%s", line);
    }
    gg_mrr2 *m = NULL;
    char err[256];
    CHECK(gg_mrr2_parse(text, strlen(text), &m, err, sizeof err) == GG_OK, "known: %s", err);
    if (!m)
        return;
    CHECK(m->n_spectra[0] == 57, "count %d", m->n_spectra[0]);
    gg_context *ctx = NULL;
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        gg_mrr2_free(m);
        return;
    }
    const int G = m->n_gates; /* the parser reads 32 gates; 3..31 are blank here */
    float *out = malloc(sizeof(float) * GG_MRR2_NPROD * (size_t)G);
    CHECK(G == 32, "gates %d", G);
    CHECK(gg_mrr2_products(ctx, m, NULL, out) == GG_OK, "%s", gg_context_last_error(ctx));
    /* gate 1 (i = 1): eta = F CC i^2 dH / (1e20 TF), Ze from the 5 A lines */
    const double lam = 299792458.0 / 24.23e9;
    const double eta = 5 * A * CC * 1 * 150 / (1e20 * TF);
    const double ze = 10 * log10(1e18 * pow(lam, 4) / (pow(M_PI, 5) * 0.92) * eta);
    CHECK(fabs(out[GG_MRR2_ZE * G + 1] - ze) < 1e-3, "%s: Ze %g, expected %g", dev, out[GG_MRR2_ZE * G + 1], ze);
    CHECK(fabs(out[GG_MRR2_W * G + 1] - 22 * GG_MRR2_DV) < 1e-5, "%s: W %g", dev, out[GG_MRR2_W * G + 1]);
    CHECK(fabs(out[GG_MRR2_WIDTH * G + 1] - sqrt(2.0) * GG_MRR2_DV) < 1e-5, "%s: width %g", dev,
          out[GG_MRR2_WIDTH * G + 1]);
    CHECK(fabs(out[GG_MRR2_SNR * G + 1] - 10 * log10(5 * A / (64 * F0))) < 1e-4, "%s: SNR %g", dev,
          out[GG_MRR2_SNR * G + 1]);
    CHECK(out[GG_MRR2_FLAG * G + 1] == 1, "gate 1 flagged as disturbed: %g", out[GG_MRR2_FLAG * G + 1]);
    /* gate 0 carries no eta; gate 2's two-line peak is narrower than 3 */
    CHECK(out[GG_MRR2_ZE * G + 0] == MND && out[GG_MRR2_FLAG * G + 0] == 4, "gate 0: %g flag %g",
          out[GG_MRR2_ZE * G], out[GG_MRR2_FLAG * G]);
    CHECK(out[GG_MRR2_ZE * G + 2] == MND && out[GG_MRR2_NOISE * G + 2] != MND, "gate 2: Ze %g",
          out[GG_MRR2_ZE * G + 2]);
    gg_mrr2_options o2 = {0, 2, 0, 0};
    CHECK(gg_mrr2_products(ctx, m, &o2, out) == GG_OK && out[GG_MRR2_ZE * G + 2] != MND &&
              fabs(out[GG_MRR2_W * G + 2] - 40.5 * GG_MRR2_DV) < 1e-5,
          "gate 2 with min width 2: Ze %g W %g", out[GG_MRR2_ZE * G + 2], out[GG_MRR2_W * G + 2]);
    /* a count of 0: the record is left out and flagged */
    m->n_spectra[0] = 0;
    CHECK(gg_mrr2_products(ctx, m, NULL, out) == GG_OK && out[GG_MRR2_ZE * G + 1] == MND &&
              out[GG_MRR2_FLAG * G + 1] == 1 + 2 + 4,
          "count 0: Ze %g flag %g", out[GG_MRR2_ZE * G + 1], out[GG_MRR2_FLAG * G + 1]);
    CHECK(out[GG_MRR2_FLAG * G + 5] == 2 + 4 && out[GG_MRR2_NOISE * G + 5] == MND, "blank gate 5: flag %g",
          out[GG_MRR2_FLAG * G + 5]);
    free(out);
    gg_context_destroy(ctx);
    gg_mrr2_free(m);
    /* a header with a count of 0 parses (flagged), one without a count does not */
    char *z = strstr(text, "MDQ 100 57 57");
    memcpy(z, "MDQ   0  0 57", 13);
    CHECK(gg_mrr2_parse(text, strlen(text), &m, err, sizeof err) == GG_OK && m->n_spectra[0] == 0, "zero count: %s",
          err);
    gg_mrr2_free(m);
    memcpy(z, "XYZ   0  0 57", 13);
    m = NULL;
    CHECK(gg_mrr2_parse(text, strlen(text), &m, err, sizeof err) == GG_ERR_ARGUMENT && !m &&
              strstr(err, "line 1") && strstr(err, "count"),
          "no count: %s", err);
}

static void test_mrr2(char devs[][32], int ndev)
{
    /* the copy in autotest_data, else ../shared/data beside the repo */
    char repo[1024], path[1200];
    snprintf(repo, sizeof repo, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *sl = strrchr(repo, '/');
        if (sl)
            *sl = 0;
    }
    for (int d = 0; d < ndev; d++)
        test_mrr2_known(devs[d]);
    snprintf(path, sizeof path, "%s/autotest_data/mrr2_spectra/0308.raw.gz", repo);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/../shared/data/mrr2_spectra/0308.raw.gz", repo);
        f = fopen(path, "rb");
    }
    if (!f) {   /* run from the repository root elsewhere (the GPU machine) */
        snprintf(path, sizeof path, "autotest_data/mrr2_spectra/0308.raw.gz");
        f = fopen(path, "rb");
    }
    if (!f) {
        printf("skipping MRR-2: 0308.raw.gz not found under %s\n", repo);
        return;
    }
    fclose(f);
    size_t len = 0;
    char *text = read_gz(path, &len);
    gg_mrr2 *m = NULL;
    char err[256];
    CHECK(text && gg_mrr2_parse(text, len, &m, err, sizeof err) == GG_OK, "parse: %s", err);
    free(text);
    if (!m)
        return;
    CHECK(m->n_records == 362 && m->n_gates == 32 && m->n_bins == 64, "%d records", m->n_records);
    CHECK(m->height[1] == 150 && m->height[31] == 4650 && m->cc == 1265000 && m->tf[17] == 1.0,
          "header: H %g %g CC %g TF %g", m->height[1], m->height[31], m->cc, m->tf[17]);
    CHECK(m->spectra[0] == 1090 && m->spectra[1] == 633 && m->spectra[64] == 375, "F00/F01 of gate 0, F00 of gate 1");
    int cmin = 1 << 30, cmax = 0;
    for (int r = 0; r < m->n_records; r++)
        cmin = m->n_spectra[r] < cmin ? m->n_spectra[r] : cmin, cmax = m->n_spectra[r] > cmax ? m->n_spectra[r] : cmax;
    CHECK(m->n_spectra[0] == 57 && cmin >= 40 && cmax <= 64, "averaged spectra per record %d..%d", cmin, cmax);
    CHECK(gg_mrr2_rows(m, 0, NULL) == 362 && gg_mrr2_rows(m, 60, NULL) >= 60 && gg_mrr2_rows(m, 60, NULL) <= 61,
          "rows: %d per record, %d per minute", gg_mrr2_rows(m, 0, NULL), gg_mrr2_rows(m, 60, NULL));
    const int G = 32;
    const gg_mrr2_options opts[2] = {{0, 0, 0, 0}, {60, 0, 0, 0}};
    float *res[2][4] = {{NULL}};
    for (int d = 0; d < ndev && d < 4; d++) {
        gg_context *ctx = NULL;
        if (gg_context_create(devs[d], &ctx, err, sizeof err) != GG_OK)
            continue;
        for (int a = 0; a < 2; a++) {
            const int rows = gg_mrr2_rows(m, opts[a].average_s, NULL);
            float *out = res[a][d] = malloc(sizeof(float) * (size_t)rows * GG_MRR2_NPROD * G);
            CHECK(gg_mrr2_products(ctx, m, &opts[a], out) == GG_OK, "%s: %s", devs[d], gg_context_last_error(ctx));
            int ndet = 0;
            const int bad = mrr2_vs_ref(devs[d], m, &opts[a], out, &ndet);
            CHECK(bad == 0, "%s, %g s: %d values differ from the float64 reference", devs[d], opts[a].average_s, bad);
            /* rain below the melting layer: detected nearly everywhere on
             * gates 3..10, falling at 4..9 m/s */
            int rain = 0, cells = 0;
            double vs = 0;
            for (int r = 0; r < rows; r++)
                for (int g = 3; g <= 10; g++) {
                    cells++;
                    const float w = out[((size_t)r * GG_MRR2_NPROD + GG_MRR2_W) * G + g];
                    if (w != MND)
                        rain++, vs += w;
                }
            CHECK(rain > 0.9 * cells && vs / rain > 4 && vs / rain < 9, "%s: %d of %d rain gates, mean W %.2f",
                  devs[d], rain, cells, rain ? vs / rain : 0);
            printf("MRR-2 on %s, %s: %d rows, %d gate values detected, rain gates 3..10: %d of %d, mean W "
                   "%.2f m/s\n",
                   devs[d], a ? "60 s" : "10 s", rows, ndet, rain, cells, vs / rain);
        }
        gg_context_destroy(ctx);
    }
    /* devices against each other, beyond the reference's tolerance */
    for (int a = 0; a < 2; a++)
        for (int d = 1; d < ndev && d < 4; d++)
            if (res[a][0] && res[a][d]) {
                const size_t n = (size_t)gg_mrr2_rows(m, opts[a].average_s, NULL) * GG_MRR2_NPROD * G;
                double worst = 0;
                int nd = 0;
                for (size_t i = 0; i < n; i++) {
                    const float x = res[a][0][i], y = res[a][d][i];
                    nd += (x == MND) != (y == MND);
                    if (x != MND && y != MND)
                        worst = fmax(worst, fabs(x - y));
                }
                CHECK(nd == 0 && worst < 0.01, "%s vs %s: %d detections differ, worst %g", devs[0], devs[d], nd,
                      worst);
            }
    for (int a = 0; a < 2; a++)
        for (int d = 0; d < 4; d++)
            free(res[a][d]);
    /* bad text */
    gg_mrr2 *b = NULL;
    const char *junk = "MRR 240308230000 UTC CC 1265000 MDQ 100 57 57\nH          0      abc\n";
    CHECK(gg_mrr2_parse(junk, strlen(junk), &b, err, sizeof err) == GG_ERR_ARGUMENT && !b && strstr(err, "line 2"),
          "%s", err);
    const char *badtime = "MRR 2403082300 UTC CC 1265000 MDQ 100 57 57\n";
    CHECK(gg_mrr2_parse(badtime, strlen(badtime), &b, err, sizeof err) == GG_ERR_ARGUMENT && !b &&
              strstr(err, "yymmddhhmmss"),
          "%s", err);
    CHECK(gg_mrr2_parse("hello\n", 6, &b, err, sizeof err) == GG_ERR_ARGUMENT && strstr(err, "MRR"), "%s", err);
    gg_mrr2_free(m);
}

int main(void)
{
    char devs[4][32];
    const int ndev = test_devices(devs, 4);
    CHECK(ndev > 0, "no device");
    test_reference(devs, ndev);
    test_accuracy(devs, ndev, 0);
    test_accuracy(devs, ndev, 1);
    test_agreement(devs, ndev);
    test_streaming(devs, ndev);
    test_spectral(devs, ndev);
    test_mrr2(devs, ndev);
    if (ndev > 0) {
        test_bad_input(devs[0]);
        test_ppi(devs[0]);
    }
    return check_summary("test_fmcw");
}
