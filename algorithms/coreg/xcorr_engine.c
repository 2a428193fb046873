/*
 * xcorr_engine.c -- batched window cross-correlation (see xcorr_engine.h).
 *
 * Quality mode, per batch of windows (PyCuAmpcor's pipeline, the steps in
 * coreg_kernels.h):
 *   1. extract template (primary) and search chip (secondary);
 *   2. detect, demean, correlate through one complex FFT of R' + i S' per
 *      window, normalise to a true NCC with sliding sums of the chip;
 *   3. integer peak, SNR (peak^2 / mean square of a 21x21 neighbourhood),
 *      covariance from the curvature;
 *   4. zoom: a sub-chip +-hz raw pixels around the peak; template and
 *      sub-chip deramped and FFT-oversampled x osf (both axes) as complex
 *      data, detected and correlated again (NCC), trimmed to zw x zw;
 *   5. the zw x zw surface interpolated x ovs by its DFT (the same values
 *      as zero-padding its FFT) on the (2 ovs + 1)^2 grid around its
 *      integer peak; the argmax gives the sub-pixel offset.
 *
 * MIT licence.
 */
#include "xcorr_engine.h"
#include "../kernel_ids.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gg_xc_engine {
    gg_context *ctx;
    gg_xc_config c;
    int batch;
    /* derived sizes */
    int sw, sh, pw, ph, lx, ly;                  /* raw stage */
    int hz, zcw, zch;                            /* zoom sub-chip */
    int rw2, rh2, sw2, sh2, pw2, ph2, lx2, ly2;  /* oversampled stage */
    int nreg;
    /* device buffers */
    gg_buffer *pos, *ws, *ref, *sec, *z, *x, *rs1, *rs2, *surf, *zc, *ros, *zos, *zsurf, *f,
        *g, *v, *tw, *out, *part;
};

int gg_xc_fast_size(int n)
{
    for (int m = n > 1 ? n : 1;; m++) {
        int r = m;
        static const int primes[] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % primes[i] == 0)
                r /= primes[i];
        if (r == 1)
            return m;
    }
}

static void derive(gg_xc_engine *e)
{
    const gg_xc_config *c = &e->c;
    e->sw = c->rw + 2 * c->hsx;
    e->sh = c->rh + 2 * c->hsy;
    e->pw = gg_xc_fast_size(e->sw);
    e->ph = gg_xc_fast_size(e->sh);
    e->lx = e->sw - c->rw + 1;
    e->ly = e->sh - c->rh + 1;
    /* zoom: zw samples at 1/osf px cover 2 hz raw px */
    e->hz = c->zw / (2 * c->osf);
    e->zcw = c->rw + 2 * e->hz;
    e->zch = c->rh + 2 * e->hz;
    e->rw2 = c->rw * c->osf;
    e->rh2 = c->rh * c->osf;
    e->sw2 = e->zcw * c->osf;
    e->sh2 = e->zch * c->osf;
    e->pw2 = gg_xc_fast_size(e->sw2);
    e->ph2 = gg_xc_fast_size(e->sh2);
    e->lx2 = e->sw2 - e->rw2 + 1;
    e->ly2 = e->sh2 - e->rh2 + 1;
    e->nreg = 2 * c->ovs + 1;
    if (e->nreg > c->zw * c->ovs)
        e->nreg = c->zw * c->ovs;
}

/* Columns of the statistics' partials (gg_k_xc_colstats): the widest of
 * template and chip over both stages. */
static int stat_cols(const gg_xc_engine *e)
{
    int n = e->c.rw > e->sw ? e->c.rw : e->sw;
    n = n > e->rw2 ? n : e->rw2;
    return n > e->sw2 ? n : e->sw2;
}

static double per_window_floats(const gg_xc_engine *e)
{
    const double zmax = fmax((double)e->pw * e->ph, (double)e->pw2 * e->ph2);
    const double rsmax = fmax((double)e->sh * e->lx, (double)e->sh2 * e->lx2);
    const gg_xc_config *c = &e->c;
    return 4 + GG_XC_WS + 2.0 * c->rw * c->rh + 2.0 * e->sw * e->sh + 4.0 * zmax + 2.0 * rsmax +
           (double)e->lx * e->ly + 2.0 * e->zcw * e->zch + 2.0 * e->rw2 * e->rh2 +
           2.0 * e->sw2 * e->sh2 + (double)e->lx2 * e->ly2 + 2.0 * c->zw * c->zw +
           2.0 * c->zw * e->nreg + (double)e->nreg * e->nreg + GG_XC_NBANDS +
           2.0 * GG_XC_PART_STATS * stat_cols(e);
}

double gg_xc_bytes_per_window(const gg_xc_config *cfg)
{
    gg_xc_engine e = {.c = *cfg};
    derive(&e);
    return 4.0 * per_window_floats(&e);
}

/* Host memory a batch may take on the CPU backend, whose buffers are host
 * memory.  One window needs gg_xc_bytes_per_window: 0.93 MB for a 64 x 64
 * template with search 20, 1.6 MB with search 64 (mostly the complex FFT
 * planes of the raw stage and of the x2 oversampled zoom stage); 64 MiB
 * holds 40-70 of them, more than the cores need (each step is threaded
 * over the windows of a batch), so the windows stream through in batches
 * of a bounded size whatever their number (bench/RESULTS.md, 2026-11-28,
 * "memory"). */
#define GG_XC_HOST_BUDGET (64.0 * 1024 * 1024)

int gg_xc_pick_batch(gg_context *ctx, const gg_xc_config *cfg, int want)
{
    size_t freeb = 0, total = 0;
    double budget = 256.0 * 1024 * 1024;
    if (gg_context_memory(ctx, &freeb, &total) == GG_OK && freeb > 0)
        budget = 0.4 * (double)freeb;
    /* beyond a few thousand windows a batch gains nothing and costs
     * host/device memory; keep it bounded whatever the image size */
    if (budget > 2048.0 * 1024 * 1024)
        budget = 2048.0 * 1024 * 1024;
    if (!strcmp(gg_context_backend(ctx), "cpu") && budget > GG_XC_HOST_BUDGET)
        budget = GG_XC_HOST_BUDGET;
    int b = (int)(budget / gg_xc_bytes_per_window(cfg));
    if (b > want)
        b = want;
    if (b > 8192)
        b = 8192;
    return b < 1 ? 1 : b;
}

gg_status gg_xc_twiddles(gg_context *ctx, int zw, int ovs, gg_buffer **out)
{
    const int M = zw * ovs;
    float *t = malloc(sizeof(float) * 2 * (size_t)zw * M);
    if (!t)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "xcorr: out of host memory");
    for (int f = 0; f < zw; f++) {
        const int fs = f < (zw + 1) / 2 ? f : f - zw; /* signed frequency */
        for (int m = 0; m < M; m++) {
            const double a = 2.0 * M_PI * (double)fs * m / M;
            float re = (float)cos(a), im = (float)sin(a);
            if (zw % 2 == 0 && f == zw / 2) { /* split Nyquist: (e^{+ia} + e^{-ia}) / 2 */
                re = (float)cos(M_PI * (double)m / ovs);
                im = 0.0f;
            }
            t[2 * ((size_t)f * M + m)] = re;
            t[2 * ((size_t)f * M + m) + 1] = im;
        }
    }
    gg_status s = gg_buffer_alloc(ctx, sizeof(float) * 2 * (size_t)zw * M, out);
    if (s == GG_OK)
        s = gg_buffer_write(ctx, *out, 0, t, sizeof(float) * 2 * (size_t)zw * M);
    free(t);
    return s;
}

void gg_xc_engine_free(gg_xc_engine *e)
{
    if (!e)
        return;
    gg_buffer **all[] = {&e->pos, &e->ws, &e->ref, &e->sec, &e->z, &e->x, &e->rs1, &e->rs2,
                         &e->surf, &e->zc, &e->ros, &e->zos, &e->zsurf, &e->f, &e->g, &e->v,
                         &e->tw, &e->out, &e->part};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i])
            gg_buffer_free(e->ctx, *all[i]);
    free(e);
}

gg_status gg_xc_engine_new(gg_context *ctx, const gg_xc_config *cfg, int batch, gg_xc_engine **out)
{
    *out = NULL;
    gg_xc_engine *e = calloc(1, sizeof *e);
    if (!e)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "xcorr: out of host memory");
    e->ctx = ctx;
    e->c = *cfg;
    e->batch = batch;
    derive(e);
    const size_t B = (size_t)batch, F = sizeof(float);
    const size_t zmax = (size_t)fmax((double)e->pw * e->ph, (double)e->pw2 * e->ph2);
    const size_t rsmax = (size_t)fmax((double)e->sh * e->lx, (double)e->sh2 * e->lx2);
    struct {
        gg_buffer **b;
        size_t bytes;
    } req[] = {
        {&e->pos, B * 4 * sizeof(int)},
        {&e->ws, B * GG_XC_WS * F},
        {&e->ref, B * 2 * cfg->rw * cfg->rh * F},
        {&e->sec, B * 2 * e->sw * e->sh * F},
        {&e->z, B * 2 * zmax * F},
        {&e->x, B * 2 * zmax * F},
        {&e->rs1, B * rsmax * F},
        {&e->rs2, B * rsmax * F},
        {&e->surf, B * e->lx * e->ly * F},
        {&e->zc, B * 2 * e->zcw * e->zch * F},
        {&e->ros, B * 2 * e->rw2 * e->rh2 * F},
        {&e->zos, B * 2 * e->sw2 * e->sh2 * F},
        {&e->zsurf, B * e->lx2 * e->ly2 * F},
        {&e->f, B * 2 * cfg->zw * cfg->zw * F},
        {&e->g, B * 2 * cfg->zw * e->nreg * F},
        {&e->v, B * e->nreg * e->nreg * F},
        {&e->out, B * GG_XC_NBANDS * F},
        {&e->part, B * GG_XC_PART_STATS * (size_t)stat_cols(e) * sizeof(double)},
    };
    gg_status s = GG_OK;
    for (size_t i = 0; i < sizeof req / sizeof req[0] && s == GG_OK; i++)
        s = gg_buffer_alloc(ctx, req[i].bytes, req[i].b);
    if (s == GG_OK)
        s = gg_xc_twiddles(ctx, cfg->zw, cfg->ovs, &e->tw);
    if (s != GG_OK) {
        gg_xc_engine_free(e);
        return s;
    }
    *out = e;
    return GG_OK;
}

gg_status gg_xc_launch(gg_context *ctx, int k, int nx, int ny, const gg_xc_params *p,
                       gg_buffer *b0, gg_buffer *b1, gg_buffer *b2, gg_buffer *b3, gg_buffer *b4)
{
    gg_buffer *bufs[5] = {b0, b1, b2, b3, b4};
    int n = 0;
    while (n < 5 && bufs[n])
        n++;
    return gg_rt_launch(ctx, k, nx, ny, p, sizeof *p, bufs, n);
}

static gg_status launch(gg_xc_engine *e, int k, int nx, int ny, const gg_xc_params *p,
                        gg_buffer *b0, gg_buffer *b1, gg_buffer *b2, gg_buffer *b3, gg_buffer *b4)
{
    return gg_xc_launch(e->ctx, k, nx, ny, p, b0, b1, b2, b3, b4);
}

/* Normalised (or raw) cross-correlation surfaces of template t (rw x rh)
 * in chip c (sw x sh), FFT plane pw x ph, into surf (lx x ly): stats
 * (column partials, then per window: the GMTSAR mode's two steps; invalid
 * samples stay NaN here, zero_invalid 0), pack, FFT, cross spectrum,
 * inverse FFT, sliding sums, normalisation. */
static gg_status correlate(gg_xc_engine *e, gg_xc_params p, gg_buffer *t, gg_buffer *c,
                           gg_buffer *surf)
{
    const int B = e->batch;
    gg_xc_params ps = p;
    ps.lx = p.rw > p.sw ? p.rw : p.sw; /* columns of the partials */
    gg_status s = launch(e, GG_K_XC_COLSTATS, ps.lx, B, &ps, t, c, e->part, NULL, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_WINSTATS, 1, B, &ps, e->part, e->ws, NULL, NULL, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_PACK, p.pw, p.ph * B, &p, t, c, e->ws, e->z, NULL);
    const int n[2] = {p.ph, p.pw};
    if (s == GG_OK)
        s = gg_fft(e->ctx, e->z, 2, n, B, 0);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_XSPEC, p.pw, p.ph * B, &p, e->z, e->x, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_fft(e->ctx, e->x, 2, n, B, 1);
    if (s == GG_OK && p.normalise)
        s = launch(e, GG_K_XC_ROWSUM, p.lx, p.sh * B, &p, c, e->ws, e->rs1, e->rs2, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_NORM, p.lx, p.ly * B, &p, e->x, e->rs1, e->rs2, e->ws, surf);
    return s;
}

/* FFT oversampling x osf of a batch of complex images (w x h) in `in`
 * (destroyed) into `out` (osf w x osf h). */
static gg_status oversample(gg_xc_engine *e, gg_xc_params p, gg_buffer *in, int w, int h,
                            gg_buffer *out)
{
    const int B = e->batch, o = e->c.osf;
    const int n[2] = {h, w}, m[2] = {h * o, w * o};
    p.bw = w;
    p.bh = h;
    p.ow = w * o;
    p.oh = h * o;
    p.scale = 1.0f / ((float)w * (float)h);
    gg_status s = gg_fft(e->ctx, in, 2, n, B, 0);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_PAD, p.ow, p.oh * B, &p, in, out, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_fft(e->ctx, out, 2, m, B, 1);
    return s;
}

static gg_status deramp(gg_xc_engine *e, gg_xc_params p, gg_buffer *img, int w, int h, int slot)
{
    p.bw = w;
    p.bh = h;
    p.slot = slot;
    gg_status s = launch(e, GG_K_XC_RAMP, 1, e->batch, &p, img, e->ws, NULL, NULL, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_DERAMP, w, h * e->batch, &p, e->ws, img, NULL, NULL, NULL);
    return s;
}

gg_status gg_xc_quality(gg_xc_engine *e, gg_buffer *tile, int tile_w, int tile_h, const int *pos,
                        int n, float *out)
{
    const gg_xc_config *c = &e->c;
    const int B = e->batch;
    if (n > B || n < 1)
        return gg_rt_fail(e->ctx, GG_ERR_INTERNAL, "xcorr: batch of %d windows for %d", n, B);
    /* unused batch slots get positions far outside the tile: invalid */
    int *hp = malloc(sizeof(int) * 4 * (size_t)B);
    if (!hp)
        return gg_rt_fail(e->ctx, GG_ERR_NOMEM, "xcorr: out of host memory");
    memcpy(hp, pos, sizeof(int) * 4 * (size_t)n);
    for (int i = 4 * n; i < 4 * B; i++)
        hp[i] = -(1 << 28);
    gg_status s = gg_buffer_write(e->ctx, e->pos, 0, hp, sizeof(int) * 4 * (size_t)B);
    free(hp);
    if (s != GG_OK)
        return s;

    gg_xc_params p = {0};
    p.nwin = B;
    p.tile_w = tile_w;
    p.tile_h = tile_h;
    p.ref_plane = 0;
    p.rw = c->rw;
    p.rh = c->rh;
    p.sw = e->sw;
    p.sh = e->sh;
    p.pw = e->pw;
    p.ph = e->ph;
    p.lx = e->lx;
    p.ly = e->ly;
    p.ux = e->lx;
    p.uy = e->ly;
    p.hz = e->hz;
    p.zw = c->zw;
    p.ovs = c->ovs;
    p.nreg = e->nreg;
    p.stat_half = c->stat_half;
    p.normalise = 1;
    p.deramp = c->deramp;
    p.has_nodata = c->has_nodata;
    p.nodata = c->nodata;
    p.min_valid = c->min_valid;
    p.dst_nodata = c->dst_nodata;
    p.hsx = (float)c->hsx;
    p.hsy = (float)c->hsy;
    p.gross_x = c->gross_x;
    p.gross_y = c->gross_y;
    p.osf = (float)c->osf;
    p.power = 1.0f;

    /* 1-3: raw correlation, integer peak, statistics */
    s = launch(e, GG_K_XC_EXTRACT, e->sw, e->sh * B, &p, tile, e->pos, e->ref, e->sec, NULL);
    p.stage = 0;
    if (s == GG_OK)
        s = correlate(e, p, e->ref, e->sec, e->surf);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_PEAK, 1, B, &p, e->surf, e->ws, NULL, NULL, NULL);

    /* 4: zoom sub-chip, deramp, oversample, correlate again */
    gg_xc_params q = p;
    q.bw = e->zcw;
    q.bh = e->zch;
    if (s == GG_OK)
        s = launch(e, GG_K_XC_ZEXTRACT, q.bw, q.bh * B, &q, e->sec, e->ws, e->zc, NULL, NULL);
    if (s == GG_OK)
        s = deramp(e, p, e->ref, c->rw, c->rh, GG_XC_RAMP);
    if (s == GG_OK)
        s = deramp(e, p, e->zc, e->zcw, e->zch, GG_XC_RAMP + 2);
    if (s == GG_OK)
        s = oversample(e, p, e->ref, c->rw, c->rh, e->ros);
    if (s == GG_OK)
        s = oversample(e, p, e->zc, e->zcw, e->zch, e->zos);
    q = p;
    q.rw = e->rw2;
    q.rh = e->rh2;
    q.sw = e->sw2;
    q.sh = e->sh2;
    q.pw = e->pw2;
    q.ph = e->ph2;
    q.lx = e->lx2;
    q.ly = e->ly2;
    q.stage = 1;
    if (s == GG_OK)
        s = correlate(e, q, e->ros, e->zos, e->zsurf);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_PEAK, 1, B, &q, e->zsurf, e->ws, NULL, NULL, NULL);

    /* 5: band-limited zoom of the zw x zw surface, argmax, outputs */
    q.stage = 0;
    if (s == GG_OK)
        s = launch(e, GG_K_XC_DFT, c->zw, c->zw * B, &q, e->zsurf, e->tw, e->ws, e->f, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_ZEVAL1, e->nreg, c->zw * B, &q, e->f, e->tw, e->ws, e->g, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_ZEVAL2, e->nreg, e->nreg * B, &q, e->g, e->tw, e->ws, e->v, NULL);
    if (s == GG_OK)
        s = launch(e, GG_K_XC_FINAL, 1, B, &q, e->v, e->ws, e->out, NULL, NULL);
    if (s == GG_OK)
        s = gg_buffer_read(e->ctx, e->out, 0, out, sizeof(float) * GG_XC_NBANDS * (size_t)n);
    return s;
}
