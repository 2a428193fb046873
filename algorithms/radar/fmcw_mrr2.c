/*
 * fmcw_mrr2.c -- Metek MRR-2 raw spectra: the text parser and the spectral
 * stage (range and transfer-function correction, then the chain's own
 * Hildebrand-Sekhon and moment kernel through gg_fmcw_spectral_moments).
 * Real FMCW spectra for the tests (../shared/data/mrr2_spectra).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "../../gpu/runtime.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG 3
#define FIELD 9

static gg_status perr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static gg_status perr(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return GG_ERR_ARGUMENT;
}

/* Fixed-width field i of a line (without its line end); NaN when blank or
 * past the end; *bad on text that is not a number. */
static double field(const char *line, size_t len, int i, int *bad)
{
    const size_t a = TAG + (size_t)i * FIELD;
    if (a >= len)
        return NAN;
    char buf[FIELD + 1];
    size_t n = len - a < FIELD ? len - a : FIELD;
    memcpy(buf, line + a, n);
    buf[n] = 0;
    char *p = buf;
    while (*p == ' ')
        p++;
    if (!*p)
        return NAN;
    char *end;
    const double v = strtod(p, &end);
    while (*end == ' ')
        end++;
    if (*end)
        *bad = 1;
    return v;
}

void gg_mrr2_free(gg_mrr2 *m)
{
    if (!m)
        return;
    free(m->height);
    free(m->tf);
    free(m->spectra);
    free(m->time);
    free(m);
}

gg_status gg_mrr2_parse(const char *text, size_t len, gg_mrr2 **out, char *err, size_t errlen)
{
    if (!out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    if (!text)
        return perr(err, errlen, "MRR-2: no text");
    /* records first, to size the arrays */
    int nrec = 0;
    for (size_t i = 0; i + 3 <= len; i++)
        if ((i == 0 || text[i - 1] == '\n') && i + 3 <= len && !memcmp(text + i, "MRR", 3))
            nrec++;
    if (nrec == 0)
        return perr(err, errlen, "MRR-2: no 'MRR' record header found");
    gg_mrr2 *m = calloc(1, sizeof *m);
    const int G = 32, B = 64;
    if (!m)
        return GG_ERR_NOMEM;
    m->n_gates = G;
    m->n_bins = B;
    m->height = calloc(G, sizeof(double));
    m->tf = calloc(G, sizeof(double));
    m->spectra = malloc(sizeof(float) * (size_t)nrec * G * B);
    m->time = calloc((size_t)nrec, sizeof *m->time);
    if (!m->height || !m->tf || !m->spectra || !m->time) {
        gg_mrr2_free(m);
        return GG_ERR_NOMEM;
    }
    for (size_t i = 0; i < (size_t)nrec * G * B; i++)
        m->spectra[i] = NAN;
    int r = -1, lineno = 0, have_h = 0, have_tf = 0;
    size_t pos = 0;
    char buf[1024]; /* one line, NUL-terminated: text need not be */
    while (pos < len) {
        const char *src = text + pos;
        const char *nl = memchr(src, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - src) : len - pos;
        pos += ll + 1;
        lineno++;
        while (ll > 0 && (src[ll - 1] == '\r' || src[ll - 1] == ' '))
            ll--;
        if (ll == 0)
            continue;
        if (ll >= sizeof buf) {
            gg_mrr2_free(m);
            return perr(err, errlen, "MRR-2: line %d is longer than %zu characters", lineno,
                        sizeof buf - 1);
        }
        memcpy(buf, src, ll);
        buf[ll] = '\0';
        const char *line = buf;
        int bad = 0;
        if (!strncmp(line, "MRR", 3)) {
            if (++r >= nrec) { /* counted above: cannot happen, but never write past */
                gg_mrr2_free(m);
                return perr(err, errlen, "MRR-2: record count changed while parsing");
            }
            sscanf(line, "MRR %15s", m->time[r]);
            const char *cc = strstr(line, " CC ");
            if (r == 0 && cc)
                m->cc = strtod(cc + 4, NULL);
        } else if (r < 0) {
            gg_mrr2_free(m);
            return perr(err, errlen, "MRR-2: line %d comes before the first record header", lineno);
        } else if (line[0] == 'H' && line[1] == ' ') {
            for (int g = 0; g < G; g++)
                m->height[g] = field(line, ll, g, &bad);
            have_h = 1;
        } else if (!strncmp(line, "TF", 2)) {
            for (int g = 0; g < G; g++)
                m->tf[g] = field(line, ll, g, &bad);
            have_tf = 1;
        } else if (line[0] == 'F' && line[1] >= '0' && line[1] <= '9' && line[2] >= '0' && line[2] <= '9') {
            const int b = (line[1] - '0') * 10 + (line[2] - '0');
            if (b >= B) {
                gg_mrr2_free(m);
                return perr(err, errlen, "MRR-2: line %d: spectral line F%02d beyond F63", lineno, b);
            }
            for (int g = 0; g < G; g++)
                m->spectra[((size_t)r * G + g) * B + b] = (float)field(line, ll, g, &bad);
        }
        /* other line types (D, N, ... in processed files) are ignored */
        if (bad) {
            gg_mrr2_free(m);
            return perr(err, errlen, "MRR-2: line %d: a field is not a number", lineno);
        }
    }
    if (!have_h || !have_tf || !(m->cc > 0)) {
        gg_mrr2_free(m);
        return perr(err, errlen, "MRR-2: missing %s", !have_h ? "the H (height) line"
                                                      : !have_tf ? "the TF (transfer function) line"
                                                                 : "the CC calibration constant");
    }
    m->n_records = nrec;
    *out = m;
    return GG_OK;
}

gg_status gg_mrr2_moments(gg_context *ctx, const gg_mrr2 *m, int n_avg, float *out)
{
    if (!ctx || !m || !out)
        return GG_ERR_ARGUMENT;
    const int G = m->n_gates, B = m->n_bins, R = m->n_records;
    const double dh = m->height[1] - m->height[0];
    if (!(dh > 0))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "MRR-2: heights must increase");
    float *eta = malloc(sizeof(float) * (size_t)R * G * B);
    if (!eta)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "MRR-2: out of memory");
    for (int r = 0; r < R; r++)
        for (int g = 0; g < G; g++) {
            const float *f = m->spectra + ((size_t)r * G + g) * B;
            float *e = eta + ((size_t)r * G + g) * B;
            int ok = m->tf[g] > 0;
            for (int b = 0; b < B && ok; b++)
                ok = isfinite(f[b]);
            /* a gate without a usable spectrum: all zero, hence no signal */
            const double k = ok ? (double)g * g * dh / (m->cc * m->tf[g]) : 0.0;
            for (int b = 0; b < B; b++)
                e[b] = ok ? (float)(f[b] * k) : 0.0f;
        }
    const gg_status s = gg_fmcw_spectral_moments(ctx, eta, R, G, B, 0.0, GG_MRR2_DV, n_avg, out);
    free(eta);
    return s;
}
