/*
 * fmcw_mrr2.c -- Metek MRR-2 raw spectra: the text parser (with each
 * record's count of averaged spectra) and the spectral stage on the device
 * (mrr2_kernels.h): time averaging, Metek's calibration, Hildebrand-Sekhon
 * noise with the count, the peak and its moments, Ze in dBZ.
 * Real FMCW spectra for the tests (autotest_data/mrr2_spectra).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "../../gpu/runtime.h"
#include "../kernel_ids.h"
#include "mrr2_params.h"

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

/* "yymmddhhmmss" (20yy, UTC) -> seconds since 1970; 0 when malformed. */
static int record_time(const char *t, long long *sec)
{
    int v[6];
    if (strlen(t) != 12)
        return 0;
    for (int i = 0; i < 12; i++)
        if (t[i] < '0' || t[i] > '9')
            return 0;
    for (int i = 0; i < 6; i++)
        v[i] = (t[2 * i] - '0') * 10 + (t[2 * i + 1] - '0');
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
        return 0;
    /* days from civil (proleptic Gregorian) */
    long long y = 2000 + v[0] - (v[1] <= 2);
    const long long era = y / 400, yoe = y - era * 400;
    const long long doy = (153 * (v[1] + (v[1] > 2 ? -3 : 9)) + 2) / 5 + v[2] - 1;
    const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const long long days = era * 146097 + doe - 719468;
    *sec = days * 86400 + v[3] * 3600 + v[4] * 60 + v[5];
    return 1;
}

void gg_mrr2_free(gg_mrr2 *m)
{
    if (!m)
        return;
    free(m->height);
    free(m->tf);
    free(m->spectra);
    free(m->time);
    free(m->n_spectra);
    free(m->seconds);
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
    m->n_spectra = calloc((size_t)nrec, sizeof *m->n_spectra);
    m->seconds = calloc((size_t)nrec, sizeof *m->seconds);
    if (!m->height || !m->tf || !m->spectra || !m->time || !m->n_spectra || !m->seconds) {
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
            if (!record_time(m->time[r], &m->seconds[r])) {
                /* the message quotes the record's time: written before m goes */
                const gg_status st = perr(err, errlen,
                                          "MRR-2: line %d: record time '%s' is not yymmddhhmmss",
                                          lineno, m->time[r]);
                gg_mrr2_free(m);
                return st;
            }
            const char *cc = strstr(line, " CC ");
            if (r == 0 && cc)
                m->cc = strtod(cc + 4, NULL);
            /* "MDQ q n m": n spectra averaged (as Metek's raw format and
             * IMProToo read it) */
            const char *mdq = strstr(line, " MDQ ");
            long q = -1, nsp = -1;
            if (!mdq || sscanf(mdq + 5, "%ld %ld", &q, &nsp) != 2 || nsp < 0 || nsp > 1000000) {
                gg_mrr2_free(m);
                return perr(err, errlen,
                            "MRR-2: line %d: record header has no count of averaged spectra "
                            "(\"MDQ q n m\")", lineno);
            }
            m->n_spectra[r] = (int)nsp;
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

/* The spectral lines [first, end) of gate g a peak and the noise are taken
 * from.  The lines at both ends of an MRR-2 spectrum are disturbed, most
 * at the lowest and highest gates; IMProToo (Maahn & Kollias 2012) found
 * these limits for the 32-gate, 64-line MRR-2, and on the real file they
 * bring geogpu's Ze within 0.34 dB RMS of it (1.01 dB with every line).
 * Other shapes: every line. */
static void mrr2_usable_lines(int g, int G, int B, int *first, int *end)
{
    static const unsigned char lo[32] = {0, 5, 4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                         2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 5};
    static const unsigned char hi[32] = {64, 60, 61, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
                                         63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 62, 61, 63};
    *first = 0;
    *end = B;
    if (G == 32 && B == 64 && g >= 0 && g < 32) {
        *first = lo[g];
        *end = hi[g];
    }
}

int gg_mrr2_rows(const gg_mrr2 *m, double average_s, int *first)
{
    if (!m || m->n_records < 1 || !m->seconds)
        return 0;
    int rows = 0;
    long long prev = 0;
    for (int r = 0; r < m->n_records; r++) {
        long long k = r;
        if (average_s > 0) {
            const double q = floor((double)m->seconds[r] / average_s);
            k = (long long)q;
        }
        if (r == 0 || k != prev) {
            if (first)
                first[rows] = r;
            rows++;
        }
        prev = k;
    }
    if (first)
        first[rows] = m->n_records;
    return rows;
}

gg_status gg_mrr2_products(gg_context *ctx, const gg_mrr2 *m, const gg_mrr2_options *o,
                           float *out)
{
    return gg_mrr2_products_dsd(ctx, m, o, out, NULL);
}

gg_status gg_mrr2_products_dsd(gg_context *ctx, const gg_mrr2 *m, const gg_mrr2_options *o,
                               float *out, float *nd)
{
    if (!ctx || !m || !out)
        return GG_ERR_ARGUMENT;
    const int G = m->n_gates, B = m->n_bins, R = m->n_records;
    if (R < 1 || G < 2 || B < 4 || B > GG_MRR2_MAX_BINS || !m->spectra || !m->height || !m->tf ||
        !m->n_spectra || !m->seconds)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "MRR-2: products need records, >= 2 gates, 4..%d lines, counts and times",
                          GG_MRR2_MAX_BINS);
    gg_mrr2_options opt = {0, 3, GG_MRR2_FREQUENCY, GG_MRR2_K2};
    if (o) {
        opt.average_s = o->average_s;
        if (o->min_width > 0)
            opt.min_width = o->min_width;
        if (o->frequency_hz > 0)
            opt.frequency_hz = o->frequency_hz;
        if (o->k2 > 0)
            opt.k2 = o->k2;
    }
    if (!isfinite(opt.average_s) || !isfinite(opt.frequency_hz) || !isfinite(opt.k2))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "MRR-2: options must be finite");
    const double dh = m->height[1] - m->height[0];
    if (!(dh > 0))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "MRR-2: heights must increase");
    if (!(m->cc > 0))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "MRR-2: calibration constant CC must be > 0");
    const int rows = gg_mrr2_rows(m, opt.average_s, NULL);
    int *first = malloc(sizeof(int) * ((size_t)rows + 1));
    float *cnt = malloc(sizeof(float) * (size_t)R), *k = malloc(sizeof(float) * 3 * (size_t)G);
    float *tab = malloc(sizeof(float) * (size_t)G * B * GG_MRR2_TAB_N);
    if (!first || !cnt || !k || !tab) {
        free(first), free(cnt), free(k), free(tab);
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "MRR-2: out of memory");
    }
    gg_mrr2_rows(m, opt.average_s, first);
    for (int r = 0; r < R; r++)
        cnt[r] = (float)m->n_spectra[r];
    /* Metek: eta = F CC i^2 dH / (1e20 TF(i)); and the usable lines */
    for (int g = 0; g < G; g++) {
        k[3 * g] = m->tf[g] > 0 && isfinite(m->tf[g])
                       ? (float)(m->cc * (double)g * g * dh / (1e20 * m->tf[g])) : 0.0f;
        int first = 0, end = B;
        mrr2_usable_lines(g, G, B, &first, &end);
        k[3 * g + 1] = (float)first;
        k[3 * g + 2] = (float)end;
    }
    const double lambda = 299792458.0 / opt.frequency_hz;
    gg_mrr2_params p;
    memset(&p, 0, sizeof p);
    p.n_bins = B;
    p.n_gates = G;
    p.n_rows = rows;
    p.min_width = opt.min_width;
    p.dv = (float)GG_MRR2_DV;
    p.ze_db = (float)(10.0 * log10(1e18 * pow(lambda, 4) / (pow(M_PI, 5) * opt.k2)));
    p.nodata = GG_MRR2_NODATA;
    p.dh = (float)dh;
    p.pia_max_db = (float)GG_MRR2_PIA_MAX_DB;
    gg_mrr2_drop_table(m, &opt, tab);
    const size_t nin = (size_t)R * G * B, nout = (size_t)rows * GG_MRR2_NPROD * G;
    const size_t nsig = (size_t)rows * G * B;
    /* spectra, counts, rows, gate constants, products, signal; drop table, N(D) */
    gg_buffer *v[8] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    gg_status s;
    if ((s = gg_buffer_alloc(ctx, nin * 4, &v[0])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, (size_t)R * 4, &v[1])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, ((size_t)rows + 1) * 4, &v[2])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, (size_t)G * 3 * 4, &v[3])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, nout * 4, &v[4])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, nsig * 4, &v[5])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, (size_t)G * B * GG_MRR2_TAB_N * 4, &v[6])) == GG_OK &&
        (s = gg_buffer_alloc(ctx, nsig * 4, &v[7])) == GG_OK &&
        (s = gg_buffer_write(ctx, v[0], 0, m->spectra, nin * 4)) == GG_OK &&
        (s = gg_buffer_write(ctx, v[1], 0, cnt, (size_t)R * 4)) == GG_OK &&
        (s = gg_buffer_write(ctx, v[2], 0, first, ((size_t)rows + 1) * 4)) == GG_OK &&
        (s = gg_buffer_write(ctx, v[3], 0, k, (size_t)G * 3 * 4)) == GG_OK &&
        (s = gg_buffer_write(ctx, v[6], 0, tab, (size_t)G * B * GG_MRR2_TAB_N * 4)) == GG_OK &&
        (s = gg_rt_launch(ctx, GG_K_MRR2_MOMENTS, G, rows, &p, sizeof p, v, 6)) == GG_OK) {
        /* then, row by row upward in height, the attenuation and drop sizes */
        gg_buffer *d[4] = {v[5], v[6], v[4], v[7]};
        if ((s = gg_rt_launch(ctx, GG_K_MRR2_DSD, rows, 1, &p, sizeof p, d, 4)) == GG_OK &&
            (s = gg_buffer_read(ctx, v[4], 0, out, nout * 4)) == GG_OK && nd)
            s = gg_buffer_read(ctx, v[7], 0, nd, nsig * 4);
    }
    for (int i = 0; i < 8; i++)
        gg_buffer_free(ctx, v[i]);
    free(first), free(cnt), free(k), free(tab);
    return s;
}
