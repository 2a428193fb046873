/*
 * fmcw_sim.c -- the FMCW sector simulator (gg_fmcw_simulate), the oracle
 * of the tests and of gdal_fmcw -simulate.  Host code in float64.
 *
 * Signal model (the convention the processor inverts; docs/fmcw_format.md):
 *   - gate k is a beat tone at FFT bin k: sample n of sweep m carries
 *     a_k[m] exp(+2 pi i k n / N);
 *   - a target moving away at v turns the slow-time phase as
 *     exp(-4 pi i v m T / lambda), so its Doppler bin is j = -v / dv with
 *     dv = lambda / (2 M T);
 *   - a_k[m] = sum_j A(j) exp(+2 pi i j m / M): mean power per sweep
 *     sum_j |A(j)|^2 = P, the gate power in counts^2 that the radar
 *     equation turns into dBZ (10 lg P + C_h + 20 lg r_km);
 *   - |A(j)|^2 = P g(j) E(j), g a Gaussian in velocity (aliased into the
 *     Nyquist interval) of the given mean and width, E = 1 (exact mode:
 *     only the phases are random) or exponential (the standard weather
 *     signal simulation);
 *   - VV = sqrt(P_v g)(rho u + sqrt(1 - rho^2) w) exp(-i phidp), HH =
 *     sqrt(P_h g) u, HV independent at P_h * LDR; in exact mode w is made
 *     orthogonal to u (weighted by g) so that P_v and rho_hv hold exactly;
 *   - steady clutter (zero Doppler) of the given clutter-to-noise ratio on
 *     HH and VV; complex white noise of std noise_counts per component;
 *     rounding and clipping to int16.
 *
 * MIT licence.
 */
#include "geogpu.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef double complex cplx;

/* ------------------------------------------------------------- random */

typedef struct rng {
    unsigned long long s;
    int have;
    double spare;
} rng;

static double uniform(rng *r)   /* (0, 1) */
{
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(rng *r)
{
    if (r->have) {
        r->have = 0;
        return r->spare;
    }
    const double u = uniform(r), v = uniform(r);
    const double m = sqrt(-2.0 * log(u));
    r->spare = m * sin(2.0 * M_PI * v);
    r->have = 1;
    return m * cos(2.0 * M_PI * v);
}

/* complex Gaussian, E|z|^2 = 1 */
static cplx cgauss(rng *r)
{
    const double a = gauss(r), b = gauss(r);
    return (a + I * b) * M_SQRT1_2;
}

static cplx phasor(rng *r) { return cexp(I * 2.0 * M_PI * uniform(r)); }

/* ---------------------------------------------------- inverse DFT (+i) */

/* In place x[k] <- sum_j x[j] exp(+2 pi i j k / n); radix 2 when n is a
 * power of two, else direct (tmp: n values). */
static void idft(cplx *x, int n, cplx *tmp)
{
    if (n & (n - 1)) {
        for (int k = 0; k < n; k++) {
            cplx s = 0;
            for (int j = 0; j < n; j++)
                s += x[j] * cexp(I * 2.0 * M_PI * (double)((long long)j * k % n) / n);
            tmp[k] = s;
        }
        memcpy(x, tmp, sizeof(cplx) * (size_t)n);
        return;
    }
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            cplx t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        const cplx wl = cexp(I * 2.0 * M_PI / len);
        for (int i = 0; i < n; i += len) {
            cplx w = 1;
            for (int k = 0; k < len / 2; k++) {
                const cplx u = x[i + k], v = x[i + k + len / 2] * w;
                x[i + k] = u + v;
                x[i + k + len / 2] = u - v;
                w *= wl;
            }
        }
    }
}

/* ------------------------------------------------------------ simulator */

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

double gg_fmcw_sim_snr_db(const gg_fmcw_params *p, const gg_fmcw_sim *sim, int gate, double dbz)
{
    const double r = gg_fmcw_gate_range(p, gate);
    if (!(r > 0))
        return -INFINITY;
    const double P = pow(10.0, (dbz - p->radar_constant_h_db - 20.0 * log10(r * 1e-3)) / 10.0);
    /* noise per gate after the range FFT: 2 sigma^2 / N (rounding adds 1/12) */
    const double s2 = sim->noise_counts * sim->noise_counts + 1.0 / 12.0;
    return 10.0 * log10(P * p->n_samples / (2.0 * s2));
}

static int has(const float *f, int k) { return f && isfinite(f[k]); }

/* The arguments and the field's widths, rho_hv and velocities; err says
 * what is wrong. */
static gg_status check_simulate(const gg_fmcw_params *p, const gg_fmcw_sim *sim,
                                const gg_fmcw_field *fd, const int16_t *sector, char *err,
                                size_t errlen)
{
    char why[256];
    if (!p || !sim || !fd || !sector)
        return fail(err, errlen, "simulate: missing argument"), GG_ERR_ARGUMENT;
    if (gg_fmcw_params_check(p, why, sizeof why) != GG_OK)
        return fail(err, errlen, "simulate: %s", why), GG_ERR_ARGUMENT;
    if (!(sim->noise_counts >= 0))
        return fail(err, errlen, "simulate: noise_counts must be >= 0"), GG_ERR_ARGUMENT;
    const double va = gg_fmcw_nyquist_velocity(p);
    for (int k = 0; k < p->n_gates; k++) {
        if (!has(fd->dbz, k))
            continue;
        const double w = has(fd->width, k) ? fd->width[k] : 1.0;
        const double rho = has(fd->rhohv, k) ? fd->rhohv[k] : 1.0;
        if (!(w >= 0) || !(rho >= 0 && rho <= 1))
            return fail(err, errlen, "simulate: gate %d: width %g must be >= 0 and rhohv %g in [0, 1]",
                        k, w, rho),
                   GG_ERR_ARGUMENT;
        if (has(fd->vel, k) && fabs(fd->vel[k]) > 10 * va)
            return fail(err, errlen, "simulate: gate %d: velocity %g m/s", k, fd->vel[k]), GG_ERR_ARGUMENT;
    }
    return GG_OK;
}

/* The simulator's buffers: sweeps x[c][m][n], slow-time gate signals
 * a[c][k][m], and per-gate scratch of M (g, u, wv) or max(M, N) values. */
typedef struct sim_work {
    int M, N, G;
    cplx *x, *a;
    double *g;
    cplx *u, *wv, *tmp, *row;
} sim_work;

static void free_work(sim_work *w)
{
    free(w->x), free(w->a), free(w->g), free(w->u), free(w->wv), free(w->tmp), free(w->row);
}

/* 1 when every buffer was allocated (free_work frees them either way). */
static int alloc_work(sim_work *w, int M, int N, int G)
{
    const size_t plane = (size_t)M * N;
    const int nmax = M > N ? M : N;
    w->M = M, w->N = N, w->G = G;
    w->x = calloc(3 * plane, sizeof(cplx));
    w->a = calloc(3 * (size_t)G * M, sizeof(cplx));
    w->g = malloc(sizeof(double) * (size_t)M);
    w->u = malloc(sizeof(cplx) * (size_t)M), w->wv = malloc(sizeof(cplx) * (size_t)M);
    w->tmp = malloc(sizeof(cplx) * (size_t)nmax), w->row = malloc(sizeof(cplx) * (size_t)nmax);
    return w->x && w->a && w->g && w->u && w->wv && w->tmp && w->row;
}

/* The Doppler spectrum's shape g over FFT bins j (velocity -sj dv): a
 * Gaussian of mean vel and width wid, aliased, summing to 1. */
static void doppler_weights(double *g, int M, double vel, double wid, double va, double dv)
{
    double gs = 0;
    const long sj0 = lround(-vel / dv);
    const int jmax = (int)(((sj0 % M) + M) % M);   /* the bin of the mean velocity */
    for (int j = 0; j < M; j++) {
        const int sj = j >= M / 2 ? j - M : j;   /* -M/2 .. M/2-1 */
        const double vj = -sj * dv;
        double e = 0;
        if (wid > 0)
            for (int q = -3; q <= 3; q++) {
                const double d = vj - vel + q * 2.0 * va;
                e += exp(-d * d / (2.0 * wid * wid));
            }
        g[j] = e;
        gs += e;
    }
    if (!(gs > 0)) {   /* zero width: one bin */
        memset(g, 0, sizeof(double) * (size_t)M);
        g[jmax] = gs = 1.0;
    }
    for (int j = 0; j < M; j++)
        g[j] /= gs;
}

/* The random spectra u and wv; in exact mode wv orthogonal to u under
 * the weights g, with the same weighted norm. */
static void random_spectra(const gg_fmcw_sim *sim, const double *g, int M, rng *r, cplx *u,
                           cplx *wv)
{
    for (int j = 0; j < M; j++) {
        u[j] = sim->exponential ? cgauss(r) : phasor(r);
        wv[j] = sim->exponential ? cgauss(r) : phasor(r);
    }
    if (sim->exponential)
        return;
    cplx uw = 0;
    for (int j = 0; j < M; j++)
        uw += g[j] * wv[j] * conj(u[j]);
    double nw = 0;
    for (int j = 0; j < M; j++) {
        wv[j] -= uw * u[j];
        nw += g[j] * creal(wv[j] * conj(wv[j]));
    }
    const double sc = nw > 0 ? 1.0 / sqrt(nw) : 0.0;
    for (int j = 0; j < M; j++)
        wv[j] *= sc;
}

/* Gate k's slow-time signals on HH, VV and HV: steady clutter, then the
 * weather echo of the field's moments. */
static void add_gate(const gg_fmcw_params *p, const gg_fmcw_sim *sim, const gg_fmcw_field *fd,
                     int k, double va, double dv, rng *r, sim_work *w)
{
    const int M = w->M, N = w->N, G = w->G;
    double *g = w->g;
    cplx *u = w->u, *wv = w->wv, *tmp = w->tmp, *row = w->row;
    const double s2 = sim->noise_counts * sim->noise_counts + 1.0 / 12.0;
    const double rng_m = gg_fmcw_gate_range(p, k);
    cplx *ah = w->a + ((size_t)0 * G + k) * M, *av = w->a + ((size_t)1 * G + k) * M,
         *ax = w->a + ((size_t)2 * G + k) * M;
    if (has(fd->clutter_db, k)) {
        /* steady clutter: the same complex amplitude on every sweep */
        const cplx c = sqrt(pow(10.0, fd->clutter_db[k] / 10.0) * 2.0 * s2 / N) * phasor(r);
        for (int m = 0; m < M; m++) {
            ah[m] += c;
            av[m] += c;
        }
    }
    if (!has(fd->dbz, k) || !(rng_m > 0))
        return;
    const double Ph = pow(10.0, (fd->dbz[k] - p->radar_constant_h_db - 20.0 * log10(rng_m * 1e-3)) / 10.0);
    const double Pv = Ph / pow(10.0, (has(fd->zdr, k) ? fd->zdr[k] : 0.0) / 10.0);
    const double Px = has(fd->ldr, k) ? Ph * pow(10.0, fd->ldr[k] / 10.0) : 0.0;
    const double vel = has(fd->vel, k) ? fd->vel[k] : 0.0;
    const double wid = has(fd->width, k) ? fd->width[k] : 1.0;
    const double rho = has(fd->rhohv, k) ? fd->rhohv[k] : 1.0;
    const double phi = (has(fd->phidp, k) ? fd->phidp[k] : 0.0) * M_PI / 180.0;
    doppler_weights(g, M, vel, wid, va, dv);
    random_spectra(sim, g, M, r, u, wv);
    const double sr = sqrt(1.0 - rho * rho);
    for (int j = 0; j < M; j++) {
        tmp[j] = sqrt(Ph * g[j]) * u[j];
        row[j] = sqrt(Pv * g[j]) * (rho * u[j] + sr * wv[j]) * cexp(-I * phi);
    }
    idft(tmp, M, u);   /* u is free now */
    idft(row, M, u);
    for (int m = 0; m < M; m++) {
        ah[m] += tmp[m];
        av[m] += row[m];
    }
    if (Px > 0) {
        for (int j = 0; j < M; j++)
            tmp[j] = sqrt(Px * g[j]) * (sim->exponential ? cgauss(r) : phasor(r));
        idft(tmp, M, u);
        for (int m = 0; m < M; m++)
            ax[m] += tmp[m];
    }
}

/* Fast time: sweep m of channel c is the inverse DFT of its gates, plus
 * the receiver's noise. */
static void fast_time(const gg_fmcw_sim *sim, rng *r, sim_work *w)
{
    const int M = w->M, N = w->N, G = w->G;
    const size_t plane = (size_t)M * N;
    for (int c = 0; c < 3; c++)
        for (int m = 0; m < M; m++) {
            memset(w->row, 0, sizeof(cplx) * (size_t)N);
            for (int k = 0; k < G; k++)
                w->row[k] = w->a[((size_t)c * G + k) * M + m];
            idft(w->row, N, w->tmp);
            cplx *xr = w->x + (size_t)c * plane + (size_t)m * N;
            for (int n = 0; n < N; n++)
                xr[n] = w->row[n] + sim->noise_counts * (gauss(r) + I * gauss(r));
        }
}

/* The sweeps rounded and clipped to int16, as [c][I/Q][m][n]. */
static void quantise(const cplx *x, size_t plane, int16_t *sector)
{
    int clipped = 0;
    for (int c = 0; c < 3; c++)
        for (size_t i = 0; i < plane; i++) {
            double v[2] = {creal(x[(size_t)c * plane + i]), cimag(x[(size_t)c * plane + i])};
            for (int q = 0; q < 2; q++) {
                double t = nearbyint(v[q]);
                if (isnan(t)) /* a non-finite field value: never cast NaN */
                    t = 0, clipped++;
                if (t > 32767)
                    t = 32767, clipped++;
                if (t < -32768)
                    t = -32768, clipped++;
                sector[((size_t)c * 2 + q) * plane + i] = (int16_t)t;
            }
        }
    (void)clipped;
}

gg_status gg_fmcw_simulate(const gg_fmcw_params *p, const gg_fmcw_sim *sim,
                           const gg_fmcw_field *fd, int16_t *sector, char *err, size_t errlen)
{
    const gg_status st = check_simulate(p, sim, fd, sector, err, errlen);
    if (st != GG_OK)
        return st;
    const int M = p->n_sweeps, N = p->n_samples, G = p->n_gates;
    const double va = gg_fmcw_nyquist_velocity(p), dv = 2.0 * va / M;
    rng r = {sim->seed ? sim->seed : 1, 0, 0};
    sim_work w;
    if (!alloc_work(&w, M, N, G)) {
        free_work(&w);
        return fail(err, errlen, "simulate: out of memory"), GG_ERR_NOMEM;
    }
    for (int k = 0; k < G; k++)
        add_gate(p, sim, fd, k, va, dv, &r, &w);
    fast_time(sim, &r, &w);
    quantise(w.x, (size_t)M * N, sector);
    free_work(&w);
    return GG_OK;
}
