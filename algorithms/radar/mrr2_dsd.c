/*
 * mrr2_dsd.c -- the drop-size table of the Metek MRR-2 products (host
 * side of gg_k_mrr2_dsd, mrr2_kernels.h): for every gate and spectral line,
 * the diameter of a rain drop falling at the line's velocity, its interval,
 * and the drop's backscattering and extinction cross sections (Mie theory:
 * at 24 GHz drops above ~1.5 mm are no longer Rayleigh scatterers, and
 * Metek's drop-size products and attenuation use Mie cross sections).
 *
 * Facts used (MRR-2 manual, "physical basics"; Atlas et al. 1973; Liebe et
 * al. 1991; Bohren & Huffman 1983), all written here from the formulas:
 *   - terminal fall velocity v(D) = (9.65 - 10.3 exp(-0.6 D)) dv(h) m/s,
 *     D in mm, with the air-density correction dv(h) = 1 + 3.68e-5 h +
 *     1.71e-9 h^2 (h in m), inverted for D; drops from D(v = 0) = 0.109 mm
 *     to 6 mm;
 *   - water's permittivity: Liebe's double-Debye model at 10 degC;
 *   - Mie coefficients a_n, b_n by upward recurrences of the Riccati-Bessel
 *     functions and a downward one for the logarithmic derivative.
 *
 * MIT licence.
 */
#include "../../gpu/runtime.h"
#include "mrr2_params.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>

#define WATER_T_C 10.0
#define D_MAX_MM 6.0

/* Liebe, Hufford & Manabe (1991), double Debye; e^{-i w t}: Im > 0 absorbs. */
static double complex water_permittivity(double f_hz, double t_c)
{
    const double th = 300.0 / (273.15 + t_c) - 1.0, f = f_hz * 1e-9;
    const double e0 = 77.66 + 103.3 * th, e1 = 0.0671 * e0, e2 = 3.52;
    const double fp = 20.20 - 146.0 * th + 316.0 * th * th, fs = 39.8 * fp;
    return e2 + (e0 - e1) / (1.0 - I * f / fp) + (e1 - e2) / (1.0 - I * f / fs);
}

/* Backscattering and extinction efficiencies of a sphere of size parameter
 * x = pi D / lambda and refractive index m. */
static void mie(double x, double complex m, double *qb, double *qe)
{
    const double complex y = m * x;
    const int nstop = (int)(x + 4.0 * cbrt(x) + 2.0);
    const int nmx = (int)fmax((double)nstop, cabs(y)) + 16;
    double complex *dl = malloc(sizeof(double complex) * (size_t)(nmx + 1));
    if (!dl) {
        *qb = *qe = NAN;
        return;
    }
    dl[nmx] = 0.0;
    for (int n = nmx; n > 0; n--)
        dl[n - 1] = n / y - 1.0 / (dl[n] + n / y);
    double psi0 = cos(x), psi1 = sin(x), chi0 = -sin(x), chi1 = cos(x);
    double complex xi1 = psi1 - I * chi1, back = 0.0;
    double ext = 0.0;
    for (int n = 1; n <= nstop; n++) {
        const double psi = (2.0 * n - 1.0) * psi1 / x - psi0;
        const double chi = (2.0 * n - 1.0) * chi1 / x - chi0;
        const double complex xi = psi - I * chi;
        const double complex da = dl[n] / m + n / x, db = m * dl[n] + n / x;
        const double complex an = (da * psi - psi1) / (da * xi - xi1);
        const double complex bn = (db * psi - psi1) / (db * xi - xi1);
        ext += (2.0 * n + 1.0) * creal(an + bn);
        back += (2.0 * n + 1.0) * ((n % 2) ? -1.0 : 1.0) * (an - bn);
        psi0 = psi1, psi1 = psi, chi0 = chi1, chi1 = chi, xi1 = psi1 - I * chi1;
    }
    free(dl);
    *qe = 2.0 * ext / (x * x);
    *qb = creal(back * conj(back)) / (x * x);
}

/* Diameter (mm) of a rain drop falling at v (m/s) where the density
 * correction is dv; 0 when no drop of 0..D_MAX_MM falls that fast. */
static double diameter(double v, double dv)
{
    const double u = 9.65 - v / dv;
    if (!(u > 0.0) || u > 10.3)
        return 0.0;
    const double d = -log(u / 10.3) / 0.6;
    return d <= D_MAX_MM ? d : 0.0;
}

gg_status gg_mrr2_drop_table(const gg_mrr2 *m, const gg_mrr2_options *o, float *tab)
{
    if (!m || !tab || !m->height || m->n_gates < 1 || m->n_bins < 1)
        return GG_ERR_ARGUMENT;
    const double f = o && o->frequency_hz > 0 ? o->frequency_hz : GG_MRR2_FREQUENCY;
    const double lambda = 299792458.0 / f;
    const double complex mw = csqrt(water_permittivity(f, WATER_T_C));
    const int G = m->n_gates, B = m->n_bins;
    for (int g = 0; g < G; g++) {
        const double h = m->height[g] > 0 ? m->height[g] : 0.0;
        const double dv = 1.0 + 3.68e-5 * h + 1.71e-9 * h * h;
        for (int b = 0; b < B; b++) {
            float *t = tab + ((size_t)g * B + b) * GG_MRR2_TAB_N;
            const double v = b * GG_MRR2_DV, d = b > 0 ? diameter(v, dv) : 0.0;
            t[GG_MRR2_TAB_D] = t[GG_MRR2_TAB_DD] = t[GG_MRR2_TAB_SB] = t[GG_MRR2_TAB_SE] = 0.0f;
            if (!(d > 0.0))
                continue;
            /* the line spans v +- dv/2; its lower end may be below D(v=0) */
            const double lo = fmax(diameter(v - 0.5 * GG_MRR2_DV, dv), diameter(0.0, dv));
            const double hi = diameter(v + 0.5 * GG_MRR2_DV, dv);
            if (!(hi > lo))
                continue;
            double qb, qe;
            const double r = 0.5e-3 * d, x = 2.0 * M_PI * r / lambda;
            mie(x, mw, &qb, &qe);
            t[GG_MRR2_TAB_D] = (float)d;
            t[GG_MRR2_TAB_DD] = (float)(hi - lo);
            t[GG_MRR2_TAB_SB] = (float)(qb * M_PI * r * r);
            t[GG_MRR2_TAB_SE] = (float)(qe * M_PI * r * r);
        }
    }
    return GG_OK;
}
