/*
 * fmcw.c -- the FMCW weather-radar processor (gg_fmcw_*): parameters,
 * product names, device buffers and the per-push chain
 *   census (bad samples) -> convert (range window) -> range FFT ->
 *   corner turn -> Doppler FFT -> spectra (clutter filter, Doppler window,
 *   HH/VV/HV power and HH.VV*) -> moments (Hildebrand-Sekhon, products).
 * Kernels: fmcw_kernels.h.  Both FFTs are batched contiguous transforms
 * through gg_fmcw's context (gg_fft).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "../../gpu/runtime.h"
#include "../kernel_ids.h"
#include "fmcw_params.h"
#include "fmcw_timing.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define C_LIGHT 299792458.0
#define CHECK_LANES_MAX 4096
/* Bins per chunk of the spectral stage's per-chunk passes and per run of
 * the sort's first pass (see fmcw_kernels.h). */
#define SPEC_CHUNK 32
#define SORT_RUN 64
#define NPART 6   /* = GG_FMCW_NPART */

static const char *const names[GG_FMCW_NPRODUCTS] = {
    "DBZ", "ZDR", "LDR", "VEL", "WIDTH", "RHOHV", "PHIDP", "SNR", "SNRVC", "SNRHX"};
static const char *const units[GG_FMCW_NPRODUCTS] = {
    "dBZ", "dB", "dB", "m/s", "m/s", "1", "degrees", "dB", "dB", "dB"};
static const char *const standard[GG_FMCW_NPRODUCTS] = {
    "equivalent_reflectivity_factor",
    "log_differential_reflectivity_hv",
    "log_linear_depolarization_ratio_h",
    "radial_velocity_of_scatterers_away_from_instrument",
    "doppler_spectrum_width",
    "cross_correlation_ratio_hv",
    "differential_phase_hv",
    "signal_to_noise_ratio_copolar_h",
    "signal_to_noise_ratio_copolar_v",
    "signal_to_noise_ratio_crosspolar_h"};

const char *gg_fmcw_product_name(int k) { return k >= 0 && k < GG_FMCW_NPRODUCTS ? names[k] : ""; }
const char *gg_fmcw_product_units(int k) { return k >= 0 && k < GG_FMCW_NPRODUCTS ? units[k] : ""; }
const char *gg_fmcw_product_standard_name(int k)
{
    return k >= 0 && k < GG_FMCW_NPRODUCTS ? standard[k] : "";
}

int gg_fmcw_product_index(const char *name)
{
    for (int k = 0; name && k < GG_FMCW_NPRODUCTS; k++)
        if (!strcasecmp(name, names[k]))
            return k;
    /* CfRadial spelling of the H co-polar SNR */
    if (name && !strcasecmp(name, "SNRHC"))
        return GG_FMCW_SNR;
    return -1;
}

gg_status gg_fmcw_parse_products(const char *csv, int *list, int *n, char *err, size_t errlen)
{
    *n = 0;
    if (!csv || !*csv) {
        for (int k = 0; k < GG_FMCW_NPRODUCTS; k++)
            list[(*n)++] = k;
        return GG_OK;
    }
    const char *p = csv;
    for (;;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        size_t t = len;
        while (t > 0 && p[t - 1] == ' ')
            t--;
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(t < 31 ? t : 31), p);
        const int k = t < 31 ? gg_fmcw_product_index(name) : -1;
        if (k < 0) {
            if (err)
                snprintf(err, errlen,
                         "unknown product '%.*s' (known: DBZ, ZDR, LDR, VEL, WIDTH, RHOHV, PHIDP, "
                         "SNR, SNRVC, SNRHX)",
                         (int)(t < 64 ? t : 64), p);
            return GG_ERR_ARGUMENT;
        }
        for (int i = 0; i < *n; i++)
            if (list[i] == k) {
                if (err)
                    snprintf(err, errlen, "product '%s' listed twice", names[k]);
                return GG_ERR_ARGUMENT;
            }
        list[(*n)++] = k;
        if (!p[len])
            break;
        p += len + 1;
    }
    return GG_OK;
}

/* ------------------------------------------------------------ parameters */

void gg_fmcw_params_default(gg_fmcw_params *p)
{
    memset(p, 0, sizeof *p);
    p->n_samples = 1024;
    p->n_sweeps = 512;
    p->n_gates = 512;
    p->carrier_hz = 9.4e9;
    p->bandwidth_hz = 5e6;       /* 30 m bins, as the paper */
    p->sweep_time_s = 1e-3;
    p->sample_rate_hz = 1024.0 / 1e-3;
    p->radar_constant_h_db = -7.0;
    p->window_range = GG_FMCW_WINDOW_HAMMING;
    p->window_doppler = GG_FMCW_WINDOW_HAMMING;
    p->clutter_mean = 1;
    p->notch_bins = 0;
    p->min_snr_db = -20.0;
    p->n_avg = 1;
    p->max_clipped_fraction = 0.001;
}

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

gg_status gg_fmcw_params_check(const gg_fmcw_params *p, char *err, size_t errlen)
{
    if (!p)
        return bad(err, errlen, "no radar parameters"), GG_ERR_ARGUMENT;
    if (p->n_samples < 2 || p->n_samples > (1 << 20))
        return bad(err, errlen, "n_samples %d out of range (2..1048576)", p->n_samples), GG_ERR_ARGUMENT;
    if (p->n_sweeps < 4 || p->n_sweeps > GG_FMCW_MAX_SWEEPS)
        return bad(err, errlen, "n_sweeps %d out of range (4..%d)", p->n_sweeps, GG_FMCW_MAX_SWEEPS),
               GG_ERR_ARGUMENT;
    if (p->n_gates < 1 || p->n_gates > p->n_samples)
        return bad(err, errlen, "n_gates %d out of range (1..n_samples %d)", p->n_gates, p->n_samples),
               GG_ERR_ARGUMENT;
    if (!(p->carrier_hz > 0) || !isfinite(p->carrier_hz))
        return bad(err, errlen, "carrier_frequency must be positive"), GG_ERR_ARGUMENT;
    if (!(p->bandwidth_hz > 0) || !isfinite(p->bandwidth_hz))
        return bad(err, errlen, "sweep_bandwidth must be positive"), GG_ERR_ARGUMENT;
    if (!(p->sweep_time_s > 0) || !isfinite(p->sweep_time_s))
        return bad(err, errlen, "sweep_time must be positive"), GG_ERR_ARGUMENT;
    if (!isfinite(p->radar_constant_h_db) || !isfinite(p->zdr_offset_db) ||
        !isfinite(p->ldr_offset_db) || !isfinite(p->range_offset_m) || !isfinite(p->min_snr_db))
        return bad(err, errlen, "calibration constants must be finite"), GG_ERR_ARGUMENT;
    if (p->window_range < 0 || p->window_range > 2 || p->window_doppler < 0 || p->window_doppler > 2)
        return bad(err, errlen, "unknown window"), GG_ERR_ARGUMENT;
    if (p->notch_bins < 0 || p->notch_bins >= p->n_sweeps / 2)
        return bad(err, errlen, "notch_bins %d out of range (0..%d)", p->notch_bins,
                   p->n_sweeps / 2 - 1),
               GG_ERR_ARGUMENT;
    if (p->n_avg < 1)
        return bad(err, errlen, "n_avg must be at least 1"), GG_ERR_ARGUMENT;
    if (!(p->max_clipped_fraction >= 0 && p->max_clipped_fraction <= 1))
        return bad(err, errlen, "max_clipped_fraction must be in [0, 1]"), GG_ERR_ARGUMENT;
    return GG_OK;
}

double gg_fmcw_range_resolution(const gg_fmcw_params *p) { return C_LIGHT / (2.0 * p->bandwidth_hz); }
double gg_fmcw_wavelength(const gg_fmcw_params *p) { return C_LIGHT / p->carrier_hz; }
double gg_fmcw_nyquist_velocity(const gg_fmcw_params *p)
{
    return gg_fmcw_wavelength(p) / (4.0 * p->sweep_time_s);
}
double gg_fmcw_gate_range(const gg_fmcw_params *p, int gate)
{
    return p->range_offset_m + gate * gg_fmcw_range_resolution(p);
}
size_t gg_fmcw_sector_values(const gg_fmcw_params *p)
{
    return (size_t)6 * (size_t)p->n_sweeps * (size_t)p->n_samples;
}

/* Taps of the periodic window a - 2b cos(2 pi n / N). */
static void window_taps(int w, float *a, float *b)
{
    *a = w == GG_FMCW_WINDOW_HAMMING ? 0.54f : w == GG_FMCW_WINDOW_HANN ? 0.5f : 1.0f;
    *b = w == GG_FMCW_WINDOW_HAMMING ? 0.23f : w == GG_FMCW_WINDOW_HANN ? 0.25f : 0.0f;
}

/* ------------------------------------------------------------ processor */

/* One set of device buffers on one context (CUDA stream / OpenCL queue):
 * a batch in flight owns its slot from gg_fmcw_submit to gg_fmcw_collect. */
typedef struct fmcw_slot {
    gg_context *ctx;
    gg_buffer *raw, *ws, *dop, *pw, *xs, *out, *cnt;
    struct spec_bufs {   /* the spectral stage's work buffers */
        gg_buffer *sorted, *tmp, *parts, *hs, *stat, *ends, *msum;
    } sb;
    float *host_out;       /* [max_batch][NPROD][G], page-locked (gg_host_alloc) */
    int *host_cnt;         /* [max_batch * 3][lanes], page-locked */
    int n;                 /* sectors queued in this slot */
} fmcw_slot;

#define FMCW_SLOTS 2

struct gg_fmcw {
    gg_context *ctx;       /* = slot[0].ctx */
    gg_fmcw_params p;
    int products[GG_FMCW_NPRODUCTS], nproducts;
    int max_batch, lanes;
    fmcw_slot slot[FMCW_SLOTS];
    int nslots;            /* 1, or 2 after gg_fmcw_add_stream */
    int head, inflight;    /* oldest batch in flight, batches in flight */
    int last;              /* slot of the last collected batch (-1: none) */
    int n;                 /* sectors of the last collected batch */
    int *flags;            /* [max_batch] flags of the last collected batch */
    int16_t *host_in;      /* gg_fmcw_host_input (page-locked, on ctx), lazily */
    gg_context *tctx;      /* context the timing mode synchronises */
    int timing;
    gg_fmcw_timing t;
    char err[1024];
};

static gg_status ffail(gg_fmcw *f, gg_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static gg_status ffail(gg_fmcw *f, gg_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, sizeof f->err, fmt, ap);
    va_end(ap);
    return s;
}

/* A failed runtime call: keep the context's message. */
static gg_status rfail(gg_fmcw *f, gg_context *ctx, gg_status s)
{
    snprintf(f->err, sizeof f->err, "%s", gg_context_last_error(ctx));
    return s;
}

const char *gg_fmcw_last_error(const gg_fmcw *f) { return f ? f->err : "no processor"; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* With timing on, waits for the queue and adds the time since *t0 to acc. */
static gg_status stage(gg_fmcw *f, double *acc, double *t0)
{
    if (!f->timing)
        return GG_OK;
    gg_status s = gg_rt_finish(f->tctx);
    const double t = now();
    *acc += t - *t0;
    *t0 = t;
    return s;
}

static int n_chunks(int M) { return (M + SPEC_CHUNK - 1) / SPEC_CHUNK; }

/* Work buffers of the spectral stage for `rows` rows of nch spectra of G
 * gates x M bins. */
static gg_status spec_alloc(gg_context *ctx, size_t rows, int nch, int G, int M, struct spec_bufs *b)
{
    const size_t S = rows * (size_t)nch * (size_t)G, NC = (size_t)n_chunks(M), SG = rows * (size_t)G;
    gg_status s;
    if ((s = gg_buffer_alloc(ctx, S * M * 4, &b->sorted)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, S * M * 4, &b->tmp)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, S * NC * NPART * 8, &b->parts)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, S * NC * 2 * 8, &b->hs)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, S * 4 * 8, &b->stat)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, SG * NC * 2 * 4, &b->ends)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, SG * NC * 3 * 8, &b->msum)) != GG_OK)
        return s;
    return GG_OK;
}

static void spec_free(gg_context *ctx, struct spec_bufs *b)
{
    gg_buffer *v[] = {b->sorted, b->tmp, b->parts, b->hs, b->stat, b->ends, b->msum};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        gg_buffer_free(ctx, v[i]);
    memset(b, 0, sizeof *b);
}

/* The spectral stage on `rows` rows of power spectra pw ([row][nch][G][M],
 * the clutter notch already bridged) and, in the chain, the HH.VV*
 * spectra xs: sort, Hildebrand-Sekhon noise, block moments, products into
 * out.  Every pass has one item per bin or per chunk of SPEC_CHUNK bins
 * (fmcw_kernels.h). */
static gg_status spec_run(gg_context *ctx, const gg_fmcw_moments_params *mp0, gg_buffer *pw, gg_buffer *xs,
                          struct spec_bufs *b, gg_buffer *out, int rows, gg_fmcw *f)
{
    /* f (the chain; NULL for the spectral stage) times the sub-stages */
    gg_fmcw_timing tdummy;
    gg_fmcw_timing *tm = f ? &f->t : &tdummy;
    double t0 = now();
#define SUBSTAGE(acc) \
    if (f && (s = stage(f, &tm->acc, &t0)) != GG_OK) \
        return s
    gg_fmcw_moments_params mp = *mp0;
    const int M = mp.n_bins, G = mp.n_gates, nch = mp.mode == 0 ? 3 : 1;
    const int S = rows * nch * G;
    mp.chunk = SPEC_CHUNK;
    mp.n_chunks = n_chunks(M);
    gg_status s;
    /* ascending sort: runs of SORT_RUN ranked in place, then merged */
    gg_fmcw_sort_params sp = {M, SORT_RUN < M ? SORT_RUN : M};
    gg_buffer *v[5], *src = b->tmp, *dst = b->sorted;
    v[0] = pw;
    v[1] = src;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_SORT0, M, S, &sp, sizeof sp, v, 2)) != GG_OK)
        return s;
    for (; sp.width < M; sp.width *= 2) {
        v[0] = src;
        v[1] = dst;
        if ((s = gg_rt_launch(ctx, GG_K_FMCW_MERGE, M, S, &sp, sizeof sp, v, 2)) != GG_OK)
            return s;
        gg_buffer *t = src;
        src = dst;
        dst = t;
    }
    gg_buffer *sorted = src;
    SUBSTAGE(sort);
    v[0] = sorted;
    v[1] = pw;
    v[2] = xs;
    v[3] = b->parts;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_PARTS, mp.n_chunks, S, &mp, sizeof mp, v, 4)) != GG_OK)
        return s;
    v[0] = sorted;
    v[1] = b->parts;
    v[2] = b->hs;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_HS, mp.n_chunks, S, &mp, sizeof mp, v, 3)) != GG_OK)
        return s;
    v[0] = b->parts;
    v[1] = b->hs;
    v[2] = b->stat;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_NOISE, G, rows * nch, &mp, sizeof mp, v, 3)) != GG_OK)
        return s;
    SUBSTAGE(noise);
    v[0] = pw;
    v[1] = b->stat;
    v[2] = b->ends;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_ENDS, mp.n_chunks, rows * G, &mp, sizeof mp, v, 3)) != GG_OK)
        return s;
    v[3] = b->msum;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_BLOCKSUM, mp.n_chunks, rows * G, &mp, sizeof mp, v, 4)) != GG_OK)
        return s;
    v[0] = b->stat;
    v[1] = b->parts;
    v[2] = b->msum;
    v[3] = out;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_FINAL, G, rows, &mp, sizeof mp, v, 4)) != GG_OK)
        return s;
    SUBSTAGE(block);
#undef SUBSTAGE
    return GG_OK;
}

/* A slot's device buffers and page-locked result buffers on ctx. */
static gg_status slot_alloc(gg_fmcw *f, gg_context *ctx, fmcw_slot *sl)
{
    const size_t M = (size_t)f->p.n_sweeps, N = (size_t)f->p.n_samples, G = (size_t)f->p.n_gates;
    const size_t B = (size_t)f->max_batch, plane = M * N, lanes = (size_t)f->lanes;
    sl->ctx = ctx;
    gg_status s;
    void *ho = NULL, *hc = NULL;
    if ((s = gg_buffer_alloc(ctx, B * 6 * plane * 2, &sl->raw)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * 3 * plane * 8, &sl->ws)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * 3 * G * M * 8, &sl->dop)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * 3 * G * M * 4, &sl->pw)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * G * M * 8, &sl->xs)) != GG_OK ||
        (s = spec_alloc(ctx, B, 3, (int)G, (int)M, &sl->sb)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * GG_FMCW_NPRODUCTS * G * 4, &sl->out)) != GG_OK ||
        (s = gg_buffer_alloc(ctx, B * 3 * lanes * 4, &sl->cnt)) != GG_OK)
        return s;
    /* downloads land in page-locked memory (the copy engine writes it
     * directly, no staging) */
    if ((s = gg_host_alloc(ctx, B * GG_FMCW_NPRODUCTS * G * sizeof(float), &ho)) != GG_OK)
        return s;
    sl->host_out = ho;
    if ((s = gg_host_alloc(ctx, B * 3 * lanes * sizeof(int), &hc)) != GG_OK)
        return s;
    sl->host_cnt = hc;
    return GG_OK;
}

static void slot_free(fmcw_slot *sl)
{
    if (!sl->ctx)
        return;
    gg_buffer *b[] = {sl->raw, sl->ws, sl->dop, sl->pw, sl->xs, sl->out, sl->cnt};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        gg_buffer_free(sl->ctx, b[i]);
    spec_free(sl->ctx, &sl->sb);
    gg_host_free(sl->ctx, sl->host_out);
    gg_host_free(sl->ctx, sl->host_cnt);
    memset(sl, 0, sizeof *sl);
}

gg_status gg_fmcw_create(gg_context *ctx, const gg_fmcw_params *p, const int *products,
                         int nproducts, int max_batch, gg_fmcw **out)
{
    if (!out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    char err[512];
    if (!ctx)
        return GG_ERR_ARGUMENT;
    if (gg_fmcw_params_check(p, err, sizeof err) != GG_OK)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "fmcw: %s", err);
    if (max_batch < 1 || max_batch > 4096)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "fmcw: max_batch %d out of range (1..4096)", max_batch);
    /* launch grids count their rows in int: a batch's 3 channels of
     * n_gates (or n_sweeps) rows each must fit */
    const int grid_rows = p->n_gates > p->n_sweeps ? p->n_gates : p->n_sweeps;
    if ((size_t)max_batch * 3 * (size_t)grid_rows > INT_MAX)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "fmcw: max_batch %d x 3 channels x %d gates is more rows than a launch "
                          "takes (%d); use at most %d sectors a batch",
                          max_batch, grid_rows, INT_MAX, (int)(INT_MAX / (3 * (size_t)grid_rows)));
    gg_fmcw *f = calloc(1, sizeof *f);
    if (!f)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "fmcw: out of memory");
    f->ctx = ctx;
    f->p = *p;
    f->max_batch = max_batch;
    if (!products || nproducts <= 0) {
        for (int k = 0; k < GG_FMCW_NPRODUCTS; k++)
            f->products[f->nproducts++] = k;
    } else {
        if (nproducts > GG_FMCW_NPRODUCTS) {
            free(f);
            return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "fmcw: too many products");
        }
        for (int i = 0; i < nproducts; i++) {
            if (products[i] < 0 || products[i] >= GG_FMCW_NPRODUCTS) {
                free(f);
                return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "fmcw: unknown product %d", products[i]);
            }
            f->products[f->nproducts++] = products[i];
        }
    }
    const size_t M = (size_t)p->n_sweeps, N = (size_t)p->n_samples;
    const size_t B = (size_t)max_batch, plane = M * N;
    /* census lanes: enough that one lane's counts fit 15 bits */
    size_t lanes = CHECK_LANES_MAX;
    while (plane / lanes > 32000)
        lanes *= 2;
    if (lanes > plane)
        lanes = plane;
    f->lanes = (int)lanes;
    f->nslots = 1;
    f->last = -1;
    f->tctx = ctx;
    f->flags = calloc(B, sizeof(int));
    gg_status s = f->flags ? slot_alloc(f, ctx, &f->slot[0])
                           : gg_rt_fail(ctx, GG_ERR_NOMEM, "fmcw: out of host memory");
    if (s != GG_OK) {
        gg_fmcw_destroy(f);
        return s;
    }
    *out = f;
    return GG_OK;
}

gg_status gg_fmcw_add_stream(gg_fmcw *f, gg_context *ctx2)
{
    if (!f)
        return GG_ERR_ARGUMENT;
    if (!ctx2 || ctx2 == f->ctx)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: the second stream needs a context of its own");
    if (f->nslots != 1 || f->inflight)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: %s",
                     f->nslots != 1 ? "the processor has its second stream already"
                                    : "a stream cannot be added while batches are in flight");
    /* same device: one plan of buffers, products identical whichever
     * stream ran a batch */
    if (strcmp(gg_context_backend(ctx2), gg_context_backend(f->ctx)) ||
        strcmp(gg_context_device_name(ctx2), gg_context_device_name(f->ctx)))
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: the second stream is on %s %s, the processor on %s %s",
                     gg_context_backend(ctx2), gg_context_device_name(ctx2),
                     gg_context_backend(f->ctx), gg_context_device_name(f->ctx));
    gg_status s = slot_alloc(f, ctx2, &f->slot[1]);
    if (s != GG_OK) {
        rfail(f, ctx2, s);
        slot_free(&f->slot[1]);
        return s;
    }
    f->nslots = 2;
    return GG_OK;
}

int gg_fmcw_streams(const gg_fmcw *f) { return f ? f->nslots : 0; }

int16_t *gg_fmcw_host_input(gg_fmcw *f)
{
    if (!f)
        return NULL;
    if (!f->host_in) {
        void *p = NULL;
        if (gg_host_alloc(f->ctx, (size_t)f->max_batch * gg_fmcw_sector_values(&f->p) * 2, &p) != GG_OK) {
            rfail(f, f->ctx, GG_ERR_NOMEM);
            return NULL;
        }
        f->host_in = p;
    }
    return f->host_in;
}

void gg_fmcw_destroy(gg_fmcw *f)
{
    if (!f)
        return;
    /* a batch still in flight: let its queue drain before freeing */
    for (int i = 0; i < f->nslots; i++)
        if (f->slot[i].ctx)
            (void)gg_rt_finish(f->slot[i].ctx);
    for (int i = FMCW_SLOTS - 1; i >= 0; i--)
        slot_free(&f->slot[i]);
    gg_host_free(f->ctx, f->host_in);
    free(f->flags);
    free(f);
}

void gg_fmcw_set_timing(gg_fmcw *f, int on) { f->timing = on; }
void gg_fmcw_get_timing(const gg_fmcw *f, gg_fmcw_timing *t) { *t = f->t; }

/* Fills the moments parameters of the chain (also used by the spectral
 * stage with its own velocity axis). */
static gg_fmcw_moments_params moments_params(const gg_fmcw_params *p)
{
    gg_fmcw_moments_params m;
    memset(&m, 0, sizeof m);
    float a, b;
    window_taps(p->window_doppler, &a, &b);
    const double va = gg_fmcw_nyquist_velocity(p);
    m.mode = 0;
    m.n_bins = p->n_sweeps;
    m.n_gates = p->n_gates;
    m.n_avg = p->n_avg;
    m.dv = (float)(2.0 * va / p->n_sweeps);
    m.v0 = (float)(-va);
    /* the window's spectral kernel |a|^2, |b|^2, |b|^2 adds its variance */
    m.width_corr = (float)(2.0 * b * b / (a * a + 2.0 * b * b));
    m.min_snr_db = (float)p->min_snr_db;
    m.radar_constant_db = (float)p->radar_constant_h_db;
    m.zdr_offset_db = (float)p->zdr_offset_db;
    m.ldr_offset_db = (float)p->ldr_offset_db;
    m.range0_m = (float)p->range_offset_m;
    m.dr_m = (float)gg_fmcw_range_resolution(p);
    m.nodata = GG_FMCW_NODATA;
    /* output bin M/2 is 0 m/s; the window spreads the filter's zeros by
     * one bin */
    if (p->clutter_mean || p->notch_bins > 0) {
        const int e = p->notch_bins + (b > 0.0f ? 1 : 0);
        m.notch_lo = p->n_sweeps / 2 - e;
        m.notch_hi = p->n_sweeps / 2 + e;
    } else {
        m.notch_lo = 1;
        m.notch_hi = 0;
    }
    return m;
}

/* Uploads n sectors into slot sl and queues the chain on its context
 * (asynchronous on GPUs: returns once the upload has completed, with the
 * kernels queued). */
static gg_status slot_queue(gg_fmcw *f, fmcw_slot *sl, const int16_t *sectors, int n)
{
    const gg_fmcw_params *p = &f->p;
    const int M = p->n_sweeps, N = p->n_samples, G = p->n_gates;
    gg_context *ctx = sl->ctx;
    gg_status s;
    f->tctx = ctx;
    double t0 = now();
    memset(&f->t, 0, sizeof f->t);
    if ((s = gg_buffer_write(ctx, sl->raw, 0, sectors, (size_t)n * gg_fmcw_sector_values(p) * 2)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.upload, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    gg_fmcw_check_params cp = {M * N, f->lanes};
    gg_buffer *b2[4];
    b2[0] = sl->raw;
    b2[1] = sl->cnt;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_CHECK, f->lanes, n * 3, &cp, sizeof cp, b2, 2)) != GG_OK)
        return rfail(f, ctx, s);
    gg_fmcw_convert_params kp;
    float a, b;
    window_taps(p->window_range, &a, &b);
    kp.n_samples = N;
    kp.n_sweeps = M;
    kp.win_a = a;
    kp.win_b = b;
    kp.scale = (float)(1.0 / ((double)N * sqrt((double)a * a + 2.0 * (double)b * b)));
    b2[1] = sl->ws;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_CONVERT, N, n * 3 * M, &kp, sizeof kp, b2, 2)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.convert, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = gg_fft(ctx, sl->ws, 1, &N, n * 3 * M, 0)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.range_fft, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    gg_fmcw_corner_params cp2 = {N, M, G};
    b2[0] = sl->ws;
    b2[1] = sl->dop;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_CORNER, M, n * 3 * G, &cp2, sizeof cp2, b2, 2)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.corner_turn, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = gg_fft(ctx, sl->dop, 1, &M, n * 3 * G, 0)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.doppler_fft, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    gg_fmcw_moments_params mp = moments_params(p);
    gg_fmcw_spectra_params sp;
    window_taps(p->window_doppler, &a, &b);
    sp.n_sweeps = M;
    sp.n_gates = G;
    sp.clutter_mean = p->clutter_mean;
    sp.notch_bins = p->notch_bins;
    sp.win_a = a;
    sp.win_b = b;
    sp.scale = (float)(1.0 / ((double)M * (double)M * ((double)a * a + 2.0 * (double)b * b)));
    sp.notch_lo = mp.notch_lo;
    sp.notch_hi = mp.notch_hi;
    b2[0] = sl->dop;
    b2[1] = sl->pw;
    b2[2] = sl->xs;
    if ((s = gg_rt_launch(ctx, GG_K_FMCW_SPECTRA, M, n * G, &sp, sizeof sp, b2, 3)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.spectra, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = spec_run(ctx, &mp, sl->pw, sl->xs, &sl->sb, sl->out, n, f)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.moments, &t0)) != GG_OK)
        return rfail(f, ctx, s);
    sl->n = n;
    return GG_OK;
}

/* Waits for slot sl's batch and downloads its products and census; sets
 * the flags of the last collected batch. */
static gg_status slot_finish(gg_fmcw *f, fmcw_slot *sl)
{
    const gg_fmcw_params *p = &f->p;
    const int M = p->n_sweeps, N = p->n_samples, G = p->n_gates, n = sl->n;
    gg_context *ctx = sl->ctx;
    gg_status s;
    f->tctx = ctx;
    double t0 = now();
    f->n = 0;
    f->last = -1;
    if ((s = gg_buffer_read(ctx, sl->out, 0, sl->host_out, (size_t)n * GG_FMCW_NPRODUCTS * G * 4)) != GG_OK ||
        (s = gg_buffer_read(ctx, sl->cnt, 0, sl->host_cnt, (size_t)n * 3 * f->lanes * 4)) != GG_OK)
        return rfail(f, ctx, s);
    if ((s = stage(f, &f->t.download, &t0)) != GG_OK)
        return rfail(f, ctx, s);

    /* bad sectors: every product nodata */
    const double plane = (double)M * N;
    for (int k = 0; k < n; k++) {
        f->flags[k] = 0;
        for (int c = 0; c < 3; c++) {
            long long zeros = 0, clips = 0;
            const int *cnt = sl->host_cnt + ((size_t)k * 3 + c) * f->lanes;
            for (int l = 0; l < f->lanes; l++) {
                zeros += cnt[l] & 0xffff;
                clips += (cnt[l] >> 16) & 0xffff;
            }
            if (zeros == (long long)plane)
                f->flags[k] = f->flags[k] ? f->flags[k] : 1;
            else if ((double)clips > p->max_clipped_fraction * plane)
                f->flags[k] = f->flags[k] ? f->flags[k] : 2;
        }
        if (f->flags[k]) {
            float *o = sl->host_out + (size_t)k * GG_FMCW_NPRODUCTS * G;
            for (size_t i = 0; i < (size_t)GG_FMCW_NPRODUCTS * G; i++)
                o[i] = GG_FMCW_NODATA;
        }
    }
    f->n = n;
    f->last = (int)(sl - f->slot);
    return GG_OK;
}

gg_status gg_fmcw_submit(gg_fmcw *f, const int16_t *sectors, int n)
{
    if (!f)
        return GG_ERR_ARGUMENT;
    if (!sectors || n < 1 || n > f->max_batch)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: submit of %d sectors (1..%d)", n, f->max_batch);
    if (f->inflight == f->nslots)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: %d batch%s in flight (the processor's streams); collect one first",
                     f->inflight, f->inflight > 1 ? "es" : "");
    fmcw_slot *sl = &f->slot[(f->head + f->inflight) % f->nslots];
    const gg_status s = slot_queue(f, sl, sectors, n);
    if (s != GG_OK)
        return s;
    f->inflight++;
    return GG_OK;
}

/* Copies the selected products of the last collected batch to out. */
static void copy_products(const gg_fmcw *f, float *out)
{
    const fmcw_slot *sl = &f->slot[f->last];
    const size_t G = (size_t)f->p.n_gates;
    for (int k = 0; k < f->n; k++)
        for (int i = 0; i < f->nproducts; i++)
            memcpy(out + ((size_t)k * f->nproducts + i) * G,
                   sl->host_out + ((size_t)k * GG_FMCW_NPRODUCTS + f->products[i]) * G, G * sizeof(float));
}

gg_status gg_fmcw_collect(gg_fmcw *f, float *out, int *flags, int *n)
{
    if (!f)
        return GG_ERR_ARGUMENT;
    if (n)
        *n = 0;
    if (!f->inflight)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: nothing submitted to collect");
    fmcw_slot *sl = &f->slot[f->head];
    f->head = (f->head + 1) % f->nslots;
    f->inflight--;
    const gg_status s = slot_finish(f, sl);
    if (s != GG_OK)
        return s;
    if (out)
        copy_products(f, out);
    if (flags)
        memcpy(flags, f->flags, (size_t)f->n * sizeof(int));
    if (n)
        *n = f->n;
    return GG_OK;
}

gg_status gg_fmcw_push(gg_fmcw *f, const int16_t *sectors, int n)
{
    if (!f)
        return GG_ERR_ARGUMENT;
    if (!sectors || n < 1 || n > f->max_batch)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: push of %d sectors (1..%d)", n, f->max_batch);
    if (f->inflight)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: push while submitted batches are in flight; collect them first");
    f->n = 0;
    f->last = -1;
    gg_status s = gg_fmcw_submit(f, sectors, n);
    if (s == GG_OK)
        s = gg_fmcw_collect(f, NULL, NULL, NULL);
    return s;
}

gg_status gg_fmcw_products(gg_fmcw *f, float *out)
{
    if (!f || !out)
        return GG_ERR_ARGUMENT;
    if (f->n == 0 || f->last < 0)
        return ffail(f, GG_ERR_ARGUMENT, "fmcw: no sectors pushed");
    copy_products(f, out);
    return GG_OK;
}

int gg_fmcw_sector_flags(const gg_fmcw *f, int sector)
{
    return f && f->last >= 0 && sector >= 0 && sector < f->n ? f->flags[sector] : -1;
}

/* ------------------------------------------------------- spectral stage */

gg_status gg_fmcw_spectral_moments(gg_context *ctx, const float *spectra, int rows, int n_gates,
                                   int n_bins, double v0, double dv, int n_avg, float *out)
{
    if (!ctx || !spectra || !out || rows < 1 || n_gates < 1 || n_bins < 4 ||
        n_bins > GG_FMCW_MAX_SWEEPS || !(dv > 0) || n_avg < 1)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "fmcw: spectral moments need rows, gates >= 1, 4..%d bins, dv > 0, n_avg >= 1",
                          GG_FMCW_MAX_SWEEPS);
    if ((size_t)rows * n_gates > INT_MAX) /* the launch grids' rows are int */
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "fmcw: %d rows x %d gates of spectra is more than a launch takes (%d)",
                          rows, n_gates, INT_MAX);
    const size_t nin = (size_t)rows * n_gates * n_bins, nout = (size_t)rows * 5 * n_gates;
    gg_buffer *in = NULL, *dummy = NULL, *o = NULL;
    struct spec_bufs sb;
    memset(&sb, 0, sizeof sb);
    gg_status s;
    if ((s = gg_buffer_alloc(ctx, nin * 4, &in)) == GG_OK &&
        (s = spec_alloc(ctx, (size_t)rows, 1, n_gates, n_bins, &sb)) == GG_OK &&
        (s = gg_buffer_alloc(ctx, 8, &dummy)) == GG_OK &&
        (s = gg_buffer_alloc(ctx, nout * 4, &o)) == GG_OK &&
        (s = gg_buffer_write(ctx, in, 0, spectra, nin * 4)) == GG_OK) {
        gg_fmcw_moments_params mp;
        memset(&mp, 0, sizeof mp);
        mp.mode = 1;
        mp.n_bins = n_bins;
        mp.n_gates = n_gates;
        mp.n_avg = n_avg;
        mp.v0 = (float)v0;
        mp.dv = (float)dv;
        mp.min_snr_db = -1e30f;
        mp.nodata = GG_FMCW_NODATA;
        mp.notch_lo = 1;
        mp.notch_hi = 0;
        if ((s = spec_run(ctx, &mp, in, dummy, &sb, o, rows, NULL)) == GG_OK)
            s = gg_buffer_read(ctx, o, 0, out, nout * 4);
    }
    gg_buffer_free(ctx, in);
    spec_free(ctx, &sb);
    gg_buffer_free(ctx, dummy);
    gg_buffer_free(ctx, o);
    return s;
}
