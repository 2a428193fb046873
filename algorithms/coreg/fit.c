/*
 * fit.c -- robust polynomial fit of dense offsets against position
 * (gg_coreg_fit_*), host code in float64.
 *
 * Model, per axis (down and across fitted separately):
 *   offset(x, y) = sum_k c_k m_k(x, y),  m = 1, x, y, x^2, xy, y^2, x^3, x^2y, xy^2, y^3
 * with x = across (pixel) and y = down (line) of the window centre in the
 * primary, pixel i centred at coordinate i (GMTSAR's resamp convention),
 * and secondary = primary + offset.
 *
 * Why this estimator: dense offsets carry a few gross blunders (wrong
 * correlation peaks in decorrelated or featureless areas) plus a bulk of
 * near-Gaussian errors.  We (1) drop points under the SNR / peak
 * thresholds, (2) fit by iteratively reweighted least squares with Tukey's
 * biweight on residuals scaled by a MAD sigma (blunders get weight 0, the
 * bulk ~1), and (3) finally apply a hard k-sigma cut and refit by ordinary
 * least squares on the survivors, so the reported coefficients are a plain
 * LS estimate on a clean, stated set of points.  The solve runs on
 * coordinates normalised to [-1, 1] (conditioning of x^3 in pixels is
 * hopeless otherwise) and the result is expanded back to pixel monomials.
 *
 * MIT licence.
 */
#include "geogpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ncoef_of(int order) { return (order + 1) * (order + 2) / 2; }

/* exponents (i of x, j of y) of monomial k */
static void mono_ij(int k, int *i, int *j)
{
    int d = 0, base = 0;
    while (k >= base + d + 1) {
        base += d + 1;
        d++;
    }
    *j = k - base;
    *i = d - *j;
}

static void monomials(int n, double x, double y, double *m)
{
    for (int k = 0; k < n; k++) {
        int i, j;
        mono_ij(k, &i, &j);
        m[k] = pow(x, i) * pow(y, j);
    }
}

void gg_coreg_fit_options_default(gg_coreg_fit_options *o)
{
    memset(o, 0, sizeof *o);
    o->order = 1;
    o->min_snr = 0;
    o->min_peak = 0;
    o->tukey_c = 4.685;
    o->kcut = 3.0;
    o->max_iter = 50;
    o->min_points = 0;
}

/* Solves the n x n symmetric system A c = b (Gauss with partial pivoting);
 * 0 when singular. */
static int solve(int n, double *A, double *b, double *c)
{
    for (int col = 0; col < n; col++) {
        int piv = col;
        for (int r = col + 1; r < n; r++)
            if (fabs(A[r * n + col]) > fabs(A[piv * n + col]))
                piv = r;
        if (fabs(A[piv * n + col]) < 1e-12 * (1.0 + fabs(A[0])))
            return 0;
        if (piv != col) {
            for (int k = 0; k < n; k++) {
                double t = A[col * n + k];
                A[col * n + k] = A[piv * n + k];
                A[piv * n + k] = t;
            }
            double t = b[col];
            b[col] = b[piv];
            b[piv] = t;
        }
        for (int r = col + 1; r < n; r++) {
            const double f = A[r * n + col] / A[col * n + col];
            for (int k = col; k < n; k++)
                A[r * n + k] -= f * A[col * n + k];
            b[r] -= f * b[col];
        }
    }
    for (int r = n - 1; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < n; k++)
            s -= A[r * n + k] * c[k];
        c[r] = s / A[r * n + r];
    }
    return 1;
}

static int wls(int n, int np, const double *M, const double *v, const double *w, double *c)
{
    double A[100] = {0}, b[10] = {0};
    for (int p = 0; p < np; p++) {
        if (w[p] <= 0)
            continue;
        const double *m = M + (size_t)p * n;
        for (int r = 0; r < n; r++) {
            b[r] += w[p] * m[r] * v[p];
            for (int k = 0; k < n; k++)
                A[r * n + k] += w[p] * m[r] * m[k];
        }
    }
    return solve(n, A, b, c);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of |r| over points with mask, scaled to a Gaussian sigma */
static double mad_sigma(int np, const double *r, const unsigned char *mask, double *tmp)
{
    int k = 0;
    for (int p = 0; p < np; p++)
        if (mask[p])
            tmp[k++] = fabs(r[p]);
    if (!k)
        return 0;
    qsort(tmp, (size_t)k, sizeof *tmp, cmp_double);
    const double med = k % 2 ? tmp[k / 2] : 0.5 * (tmp[k / 2 - 1] + tmp[k / 2]);
    return 1.4826 * med;
}

/* One axis: fills c (normalised coordinates), *used, *rms. */
static gg_status fit_axis(int n, int np, const double *M, const double *v,
                          const gg_coreg_fit_options *o, int min_points, double *c, int *used,
                          double *rms, double *sigma_out, char *err, size_t errlen,
                          const char *axis)
{
    double *w = malloc(sizeof(double) * np * 3);
    unsigned char *mask = malloc((size_t)np);
    if (!w || !mask) {
        free(w);
        free(mask);
        snprintf(err, errlen, "coreg fit: out of memory");
        return GG_ERR_NOMEM;
    }
    double *r = w + np, *tmp = w + 2 * (size_t)np;
    for (int p = 0; p < np; p++) {
        w[p] = 1;
        mask[p] = 1;
    }
    gg_status st = GG_OK;
    if (!wls(n, np, M, v, w, c)) {
        st = GG_ERR_ARGUMENT;
        goto singular;
    }
    double sigma = 0;
    for (int it = 0; it < o->max_iter; it++) {
        for (int p = 0; p < np; p++) {
            double e = v[p];
            for (int k = 0; k < n; k++)
                e -= c[k] * M[(size_t)p * n + k];
            r[p] = e;
        }
        sigma = mad_sigma(np, r, mask, tmp);
        if (sigma < 1e-12) /* (nearly) exact data: nothing to reweight */
            break;
        for (int p = 0; p < np; p++) {
            const double u = r[p] / (o->tukey_c * sigma);
            w[p] = fabs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0;
        }
        double cn[10];
        if (!wls(n, np, M, v, w, cn)) {
            st = GG_ERR_ARGUMENT;
            goto singular;
        }
        double dmax = 0;
        for (int k = 0; k < n; k++) {
            dmax = fmax(dmax, fabs(cn[k] - c[k]));
            c[k] = cn[k];
        }
        if (dmax < 1e-10)
            break;
    }
    /* hard k-sigma cut on the robust fit, then a plain LS refit */
    for (int p = 0; p < np; p++) {
        double e = v[p];
        for (int k = 0; k < n; k++)
            e -= c[k] * M[(size_t)p * n + k];
        r[p] = e;
    }
    sigma = mad_sigma(np, r, mask, tmp);
    int nu = 0;
    for (int p = 0; p < np; p++) {
        mask[p] = sigma < 1e-12 ? fabs(r[p]) <= 1e-9 + 1e-9 * fabs(v[p])
                                : fabs(r[p]) <= o->kcut * sigma;
        w[p] = mask[p];
        nu += mask[p];
    }
    if (nu < min_points) {
        snprintf(err, errlen, "coreg fit: only %d %s offsets survive the %.3g-sigma outlier cut, "
                 "%d needed for order %d", nu, axis, o->kcut, min_points, o->order);
        st = GG_ERR_ARGUMENT;
        goto done;
    }
    if (!wls(n, np, M, v, w, c)) {
        st = GG_ERR_ARGUMENT;
        goto singular;
    }
    double ss = 0;
    for (int p = 0; p < np; p++)
        if (mask[p]) {
            double e = v[p];
            for (int k = 0; k < n; k++)
                e -= c[k] * M[(size_t)p * n + k];
            ss += e * e;
        }
    *used = nu;
    *rms = sqrt(ss / nu);
    *sigma_out = sigma;
    goto done;
singular:
    snprintf(err, errlen, "coreg fit: the %s offsets' positions do not determine an order-%d "
             "polynomial (points collinear or too clustered)", axis, o->order);
done:
    free(w);
    free(mask);
    return st;
}

/* Expands a polynomial in u = (x - cx) / sx, v = (y - cy) / sy into pixel
 * monomials of x, y. */
static void expand(int order, const double *cn, double cx, double sx, double cy, double sy,
                   double *out)
{
    const int n = ncoef_of(order);
    double P[4][4] = {{0}}; /* P[a][b]: coefficient of x^a y^b */
    static const double binom[4][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 1, 0}, {1, 3, 3, 1}};
    for (int k = 0; k < n; k++) {
        int i, j;
        mono_ij(k, &i, &j);
        /* u^i = sum_a C(i,a) x^a sx^-a (-cx/sx)^(i-a), same for v^j */
        for (int a = 0; a <= i; a++)
            for (int b = 0; b <= j; b++)
                P[a][b] += cn[k] * binom[i][a] * pow(sx, -a) * pow(-cx / sx, i - a) * binom[j][b] *
                           pow(sy, -b) * pow(-cy / sy, j - b);
    }
    for (int k = 0; k < n; k++) {
        int i, j;
        mono_ij(k, &i, &j);
        out[k] = P[i][j];
    }
}

int gg_coreg_fit_min_points(const gg_coreg_fit_options *o)
{
    if (o->min_points > 0)
        return o->min_points;
    /* GMTSAR's fitoffset asks for 8 points at order 1; we ask for at least
     * twice the unknowns so that the MAD scale means something. */
    const int nc = ncoef_of(o->order >= 1 && o->order <= 3 ? o->order : 1);
    return nc * 2 > 8 ? nc * 2 : 8;
}

gg_status gg_coreg_fit_points(const double *x, const double *y, const double *off_down,
                              const double *off_across, const double *snr, const double *peak,
                              int n, const gg_coreg_fit_options *opt, gg_coreg_fit *out, char *err,
                              size_t errlen)
{
    gg_coreg_fit_options o;
    if (opt)
        o = *opt;
    else
        gg_coreg_fit_options_default(&o);
    memset(out, 0, sizeof *out);
    if (o.order < 1 || o.order > 3) {
        snprintf(err, errlen, "coreg fit: order must be 1, 2 or 3, not %d", o.order);
        return GG_ERR_ARGUMENT;
    }
    if (!(o.tukey_c > 0) || !(o.kcut > 0) || o.max_iter < 0 || n < 0) {
        snprintf(err, errlen, "coreg fit: bad options (tukey_c and kcut must be > 0)");
        return GG_ERR_ARGUMENT;
    }
    const int nc = ncoef_of(o.order);
    const int min_points = gg_coreg_fit_min_points(&o);
    out->order = o.order;
    out->ncoef = nc;
    out->n_total = n;
    /* candidates: finite, and above the thresholds */
    int *idx = malloc(sizeof(int) * (n > 0 ? n : 1));
    if (!idx) {
        snprintf(err, errlen, "coreg fit: out of memory");
        return GG_ERR_NOMEM;
    }
    int nk = 0;
    for (int p = 0; p < n; p++) {
        if (!isfinite(x[p]) || !isfinite(y[p]) || !isfinite(off_down[p]) || !isfinite(off_across[p]))
            continue;
        if (snr && !(snr[p] >= o.min_snr))
            continue;
        if (peak && !(peak[p] >= o.min_peak))
            continue;
        idx[nk++] = p;
    }
    out->n_candidates = nk;
    if (nk < min_points) {
        snprintf(err, errlen, "coreg fit: only %d of %d offsets are valid with snr >= %g and peak >= "
                 "%g, %d needed for order %d (lower -snr / -minpeak, or use more windows)",
                 nk, n, o.min_snr, o.min_peak, min_points, o.order);
        free(idx);
        return GG_ERR_ARGUMENT;
    }
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (int q = 0; q < nk; q++) {
        xmin = fmin(xmin, x[idx[q]]);
        xmax = fmax(xmax, x[idx[q]]);
        ymin = fmin(ymin, y[idx[q]]);
        ymax = fmax(ymax, y[idx[q]]);
    }
    const double cx = 0.5 * (xmin + xmax), sx = xmax > xmin ? 0.5 * (xmax - xmin) : 1;
    const double cy = 0.5 * (ymin + ymax), sy = ymax > ymin ? 0.5 * (ymax - ymin) : 1;
    double *M = malloc(sizeof(double) * ((size_t)nk * nc + 2 * (size_t)nk));
    if (!M) {
        free(idx);
        snprintf(err, errlen, "coreg fit: out of memory");
        return GG_ERR_NOMEM;
    }
    double *vd = M + (size_t)nk * nc, *va = vd + nk;
    for (int q = 0; q < nk; q++) {
        const int p = idx[q];
        monomials(nc, (x[p] - cx) / sx, (y[p] - cy) / sy, M + (size_t)q * nc);
        vd[q] = off_down[p];
        va[q] = off_across[p];
    }
    double cd[10], ca[10];
    gg_status st = fit_axis(nc, nk, M, vd, &o, min_points, cd, &out->n_used_down, &out->rms_down,
                            &out->sigma_down, err, errlen, "down");
    if (st == GG_OK)
        st = fit_axis(nc, nk, M, va, &o, min_points, ca, &out->n_used_across, &out->rms_across,
                      &out->sigma_across, err, errlen, "across");
    if (st == GG_OK) {
        expand(o.order, cd, cx, sx, cy, sy, out->down);
        expand(o.order, ca, cx, sx, cy, sy, out->across);
    }
    free(M);
    free(idx);
    return st;
}

double gg_coreg_fit_eval(const gg_coreg_fit *f, int axis, double x, double y)
{
    double m[10];
    monomials(f->ncoef, x, y, m);
    const double *c = axis == 0 ? f->down : f->across;
    double s = 0;
    for (int k = 0; k < f->ncoef; k++)
        s += c[k] * m[k];
    return s;
}

static const char *const mono_names[10] = {"1", "x", "y", "x^2", "x*y", "y^2", "x^3", "x^2*y",
                                           "x*y^2", "y^3"};

gg_status gg_coreg_fit_json(const gg_coreg_fit *f, char *buf, size_t len)
{
    size_t k = 0;
#define PUT(...)                                                              \
    do {                                                                      \
        int w_ = snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__);       \
        if (w_ < 0)                                                           \
            return GG_ERR_ARGUMENT;                                           \
        k += (size_t)w_;                                                      \
    } while (0)
    PUT("{\n  \"order\": %d,\n  \"convention\": \"secondary = primary + offset; x = pixel "
        "(across), y = line (down), pixel centres at integers\",\n  \"terms\": [",
        f->order);
    for (int i = 0; i < f->ncoef; i++)
        PUT("%s\"%s\"", i ? ", " : "", mono_names[i]);
    PUT("],\n");
    for (int a = 0; a < 2; a++) {
        const double *c = a ? f->across : f->down;
        PUT("  \"%s\": [", a ? "across" : "down");
        for (int i = 0; i < f->ncoef; i++)
            PUT("%s%.17g", i ? ", " : "", c[i]);
        PUT("],\n");
    }
    PUT("  \"points\": %d,\n  \"candidates\": %d,\n", f->n_total, f->n_candidates);
    PUT("  \"used_down\": %d,\n  \"rejected_down\": %d,\n  \"rms_down\": %.6g,\n", f->n_used_down,
        f->n_candidates - f->n_used_down, f->rms_down);
    PUT("  \"used_across\": %d,\n  \"rejected_across\": %d,\n  \"rms_across\": %.6g\n}\n",
        f->n_used_across, f->n_candidates - f->n_used_across, f->rms_across);
#undef PUT
    return k < len ? GG_OK : GG_ERR_ARGUMENT;
}

gg_status gg_coreg_fit_prm(const gg_coreg_fit *f, char *buf, size_t len)
{
    /* GMTSAR resamp: r_s = r_m + (rshift + sub_int_r) + stretch_r r_m + a_stretch_r a_m,
     * a_s likewise, i.e. exactly our order-1 across / down polynomials.
     * Higher-order terms have no PRM field (GMTSAR's fitoffset drops them
     * too): the PRM lines carry only the linear part. */
    const double r0 = f->across[0], a0 = f->down[0];
    const double rs = floor(r0), as = floor(a0);
    if (!(fabs(r0) < 1e9 && fabs(a0) < 1e9)) { /* no int shift: never cast it */
        if (len)
            buf[0] = 0;
        return GG_ERR_ARGUMENT;
    }
    const int n = snprintf(buf, len,
                           "rshift = %d\nsub_int_r = %.6f\nstretch_r = %.12g\na_stretch_r = %.12g\n"
                           "ashift = %d\nsub_int_a = %.6f\nstretch_a = %.12g\na_stretch_a = %.12g\n",
                           (int)rs, r0 - rs, f->across[1], f->across[2], (int)as, a0 - as,
                           f->down[1], f->down[2]);
    return n > 0 && (size_t)n < len ? GG_OK : GG_ERR_ARGUMENT;
}

/* Reads the numbers of a JSON array that follows "key": in text. */
static int json_array(const char *text, const char *key, double *c, int max)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(text, pat);
    if (!p)
        return -1;
    p = strchr(p + strlen(pat), '[');
    if (!p)
        return -1;
    p++;
    int n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
            p++;
        if (*p == ']')
            return n;
        char *end;
        const double v = strtod(p, &end);
        if (end == p || n >= max || !isfinite(v))
            return -1;
        c[n++] = v;
        p = end;
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
            p++;
        if (*p == ',')
            p++;
        else if (*p != ']')
            return -1;
    }
}

static int plain_list(const char *s, double *c, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        const double v = strtod(s, &end);
        if (end == s || n >= max || !isfinite(v))
            return -1;
        c[n++] = v;
        s = end;
        while (*s == ' ')
            s++;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

gg_status gg_coreg_fit_parse(const char *text, gg_coreg_fit *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    int nd, na;
    if (strchr(text, '{')) {
        nd = json_array(text, "down", f->down, 10);
        na = json_array(text, "across", f->across, 10);
    } else {
        const char *semi = strchr(text, ';');
        char tmp[1024];
        if (!semi || (size_t)(semi - text) >= sizeof tmp) {
            snprintf(err, errlen, "coreg poly: expected the fit's JSON or 'down coefficients;across "
                     "coefficients' (comma-separated), not '%.80s'", text);
            return GG_ERR_ARGUMENT;
        }
        memcpy(tmp, text, (size_t)(semi - text));
        tmp[semi - text] = 0;
        nd = plain_list(tmp, f->down, 10);
        na = plain_list(semi + 1, f->across, 10);
    }
    int order = 0;
    for (int o = 1; o <= 3; o++)
        if (nd == ncoef_of(o) && na == nd)
            order = o;
    if (!order) {
        snprintf(err, errlen, "coreg poly: down and across need 3, 6 or 10 coefficients each "
                 "(order 1, 2, 3), got %d and %d", nd, na);
        return GG_ERR_ARGUMENT;
    }
    f->order = order;
    f->ncoef = nd;
    return GG_OK;
}
