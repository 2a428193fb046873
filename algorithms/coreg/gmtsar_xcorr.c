/*
 * gmtsar_xcorr.c -- GMTSAR xcorr's algorithm (the `-mode gmtsar` of
 * gdal_xcorr) on the shared correlation steps of xcorr_engine.c; the PRM
 * files and their int16 I/Q SLCs come from gmtsar_prm.c.
 *
 * Per patch (GMTSAR do_freq_xcorr + highres_corr):
 *   1. npx x npy complex patches of master and aligned, the aligned one at
 *      (x + rshift, y + ashift + floor(y astretcha));
 *   2. range (rows) FFT-interpolated x ri, the middle npx samples kept;
 *   3. detection, the whole-patch mean removed from each;
 *   4. the aligned patch masked to its central 2 xsearch x 2 ysearch
 *      (template); un-normalised correlation against the master patch by
 *      FFT; integer peak of |c| over lags [-search, search);
 *   5. quality value: time-domain NCC x 100 at the integer peak;
 *   6. sub-pixel: 8 x 8 block of |c|^(1/4) at peak-4 .. peak+3 upsampled
 *      x interp (band-limited, whole 8 interp grid), argmax.
 * Output per patch: x xoff y yoff corr as GMTSAR writes freq_xcorr.dat.
 *
 * GMTSAR defects fixed here (docs/gdal_xcorr.md, "GMTSAR mode"):
 *   B1 sub-pixel block past the surface: samples outside count as 0 (no
 *      out-of-bounds or stale reads);
 *   B2 rows outside the file are invalid samples (never stale rows);
 *   B3 NaN: invalid samples, the patch reported with corr 0 when fewer
 *      than 90 % are valid (never an abort);
 *   B4 the NCC uses float amplitudes (not int-truncated);
 *   B5 corr 0 patches keep their integer offset (no +4 shift), and a
 *      patch whose NCC is exactly 0 (a flat master patch: its |c| surface
 *      is all 0, so both argmaxes are arbitrary) is marked: corr 0, the
 *      zero-lag offset;
 *   B6 the kept interpolated samples are centred for any ri;
 *   B7 nothing is printed;
 *   B8, B9 master and aligned may differ in size, as in GMTSAR (each PRM's
 *      num_rng_bins, num_valid_az; the patch grid is the master's): each
 *      file is read with its own line length, and the aligned's lines past
 *      its end and columns past its width are invalid samples (GMTSAR
 *      correlates stale lines / runs into the next line there);
 *   B10 0+0i samples (zero fill) are invalid samples unless zero_is_data
 *      (-zero_is_data, GMTSAR's behaviour).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "xcorr_engine.h"
#include "gmtsar_xcorr.h"
#include "gpu/fault.h"
#include "gpu/pipeline.h"
#include "../kernel_ids.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ the run
 *
 * The GPU design (issue 3):
 *  - patches run in chunks of whole location rows, as many as device
 *    memory allows (and at least a few chunks, so that the next chunk's
 *    lines are read and uploaded while the device works on this one); on
 *    the CPU backend, whose buffers are host memory, chunks within a small
 *    host budget, down to parts of a location row;
 *    every step of a chunk is one launch or one batched gg_fft over all its
 *    patches, so the FFT plans (cached by shape in the context; FFTW's
 *    multi-threaded batch plans on the CPU) serve every chunk and every run;
 *  - each SLC file is read once, in order, by reader threads into a small
 *    pool of host pieces that are uploaded into a device ring of int16 I/Q
 *    lines: a chunk uploads only the lines earlier chunks did not, and the
 *    patches are cut out of the ring on the device (never whole lines again
 *    per patch row, never converted to float on the host);
 *  - per-window reductions are two-level (column kernels, then window
 *    kernels: coreg_kernels.h), not one work item looping over a window.
 */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One piece of lines to read from a file and upload to its ring. */
typedef struct {
    int file, y0, n;
} gm_job;

typedef struct {
    gg_buffer *ring[2], *pos, *ws, *ref, *sec, *big, *z, *surf, *part, *f, *g, *v, *tw;
} gm_bufs;

static void free_bufs(gg_context *ctx, gm_bufs *b)
{
    gg_buffer **all[] = {&b->ring[0], &b->ring[1], &b->pos, &b->ws, &b->ref, &b->sec, &b->big,
                         &b->z, &b->surf, &b->part, &b->f, &b->g, &b->v, &b->tw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i])
            gg_buffer_free(ctx, *all[i]);
}

/* Sizes of one run. */
typedef struct {
    int W, H;              /* master: samples per line, lines (the patch grid's image) */
    int Wa, Ha;            /* aligned: its own samples per line and lines */
    int nx, ny, xs, ys, ri, interp, npx, npy, nxc, nyc, pw, ph, lx, ly, zw, nreg;
    int x_inc, y_inc, rshift, ashift;
    int zero_is_data;      /* 1: 0+0i samples are data (GMTSAR); 0: invalid (zero fill) */
    double astretch;
} gm_geom;

static int gm_x(const gm_geom *g, int i) { return g->npx + (i + 2) * g->x_inc; }
static int gm_y(const gm_geom *g, int j) { return g->npy + j * g->y_inc; }
static int gm_ya(const gm_geom *g, int j)
{
    const int y = gm_y(g, j);
    return y + g->ashift + (int)floor(y * g->astretch);
}
/* First patch line in file f (0 master, 1 aligned) of location row j. */
static int gm_r0(const gm_geom *g, int f, int j) { return (f ? gm_ya(g, j) : gm_y(g, j)) - g->npy / 2; }

/* Lines [lo, hi) of file f that location rows ja..jb need, clipped to
 * that file's own lines (empty: lo >= hi). */
static void gm_span(const gm_geom *g, int f, int ja, int jb, int *lo, int *hi)
{
    int a = gm_r0(g, f, ja), b = a + g->npy;
    for (int j = ja + 1; j <= jb; j++) {
        const int r = gm_r0(g, f, j);
        a = r < a ? r : a;
        b = r + g->npy > b ? r + g->npy : b;
    }
    const int H = f ? g->Ha : g->H;
    *lo = a < 0 ? 0 : a;
    *hi = b > H ? H : b;
}

static double gm_patch_bytes(const gm_geom *g)
{
    const double F = 4.0, cplx = 8.0;
    const double big = fmax((double)g->ri * g->npx * g->npy, (double)g->pw * g->ph);
    const double cols = g->npx > g->nreg ? g->npx : g->nreg;
    return cplx * (2.0 * g->npx * g->npy + big + (double)g->pw * g->ph) +
           F * (double)g->lx * g->ly + 8.0 * GG_XC_PART_MAXN * cols + F * GG_XC_WS + 16.0 +
           cplx * (double)g->zw * (g->zw + g->nreg) + F * (double)g->nreg * g->nreg;
}

/* Location rows [*ja, *jb] (1-based) and patches [*w0, *w1) of chunk c,
 * Bp patches per chunk in row-major order. */
static void gm_chunk_span(const gm_geom *g, int Bp, int c, int *w0, int *w1, int *ja, int *jb)
{
    const int N = g->nx * g->ny;
    *w0 = c * Bp;
    *w1 = *w0 + Bp < N ? *w0 + Bp : N;
    *ja = 1 + *w0 / g->nx;
    *jb = 1 + (*w1 - 1) / g->nx;
}

/* Ring lines of file f for chunks of Bp patches. */
static int gm_cap(const gm_geom *g, int f, int Bp)
{
    int cap = 1;
    const int N = g->nx * g->ny;
    for (int c = 0; c * Bp < N; c++) {
        int w0, w1, ja, jb, lo, hi;
        gm_chunk_span(g, Bp, c, &w0, &w1, &ja, &jb);
        gm_span(g, f, ja, jb, &lo, &hi);
        if (hi - lo > cap)
            cap = hi - lo;
    }
    return cap;
}

/* Memory of a plan of Bp patches per chunk: its buffers and both rings. */
static double gm_plan_bytes(const gm_geom *g, int Bp)
{
    return Bp * gm_patch_bytes(g) +
           4.0 * ((double)g->W * gm_cap(g, 0, Bp) + (double)g->Wa * gm_cap(g, 1, Bp));
}

/* Host memory the CPU backend's chunk buffers and line rings may take
 * (MiB).  What the standard job needs (11304-sample lines, search 128,
 * ri 2): the lines of one location row of both files, 2 x 512 x 11304 x 4
 * bytes = 46 MB (GMTSAR holds the same lines), and per patch 10.3 MB of
 * buffers (master and aligned patches 2 x 2 MiB, the x ri interpolation
 * 4 MiB, the correlation plane 2 MiB, the surface and the sub-pixel
 * blocks 0.3 MiB): 128 MiB holds the rings and 7 patches, enough to keep
 * the cores busy (bench/RESULTS.md, 2026-11-28, "memory"). */
#define GM_HOST_BUDGET_MB 128.0

/* Bytes of one line piece the readers fill, in page-locked memory
 * (gg_host_alloc) that a GPU's copy engine reads directly.  Small pieces
 * keep the pool small on every backend: the pool of 16 MB pageable pieces
 * and the staging ring their uploads went through were about half of a
 * CUDA process's peak memory (bench/RESULTS.md, 2026-11-28, "GMTSAR mode's
 * line pieces"). */
#define GM_PIECE ((size_t)2 << 20)

/* Threads reading SLC lines: their reads hide
 * behind the uploads (bench/RESULTS.md, 2026-11-21, "GMTSAR-mode offsets
 * redesigned" and "start-up": read wait 0.007-0.034 s of a 0.1 s run). */
#define GM_READERS 4

/* Patches per chunk: whole location rows, as many as fit half the free
 * device memory, and at most a quarter of the rows so that reading
 * overlaps the device work; on the CPU backend (host memory) within
 * GM_HOST_BUDGET_MB, down to parts of a location row.  forced > 0: that
 * many location rows, forced < 0: -forced patches (tests of the
 * multi-chunk path). */
static int gm_chunk_patches(gg_context *ctx, const gm_geom *g, int forced)
{
    const int N = g->nx * g->ny;
    if (forced > 0)
        return (forced < g->ny ? forced : g->ny) * g->nx;
    if (forced < 0)
        return -forced < N ? -forced : N;
    size_t freeb = 0, total = 0;
    double budget = 1024.0 * 1024 * 1024;
    if (gg_context_memory(ctx, &freeb, &total) == GG_OK && freeb > 0)
        budget = 0.5 * (double)freeb;
    const int cpu = !strcmp(gg_context_backend(ctx), "cpu");
    if (cpu)
        budget = fmin(budget, GM_HOST_BUDGET_MB * 1048576.0);
    const int nchunks_min = g->ny < 4 ? g->ny : 4;
    int Bp = (g->ny + nchunks_min - 1) / nchunks_min * g->nx;
    while (Bp > g->nx && gm_plan_bytes(g, Bp) > budget)
        Bp -= g->nx;
    /* parts of a location row only where the buffers are host memory: on a
     * GPU a launch needs at least a row of patches to fill it */
    while (cpu && Bp > 1 && gm_plan_bytes(g, Bp) > budget)
        Bp--;
    /* even chunks: the same FFT batch (plan) for all but maybe the last;
     * chunks of whole rows stay whole rows */
    const int nc = (N + Bp - 1) / Bp;
    const int whole = Bp % g->nx == 0;
    Bp = (N + nc - 1) / nc;
    if (whole)
        Bp = (Bp + g->nx - 1) / g->nx * g->nx;
    return Bp < N ? Bp : N;
}

/* Range interpolation x ri of a batch of npx x npy patches in place
 * (through big), the middle npx samples kept. */
static gg_status range_interp(gg_context *ctx, gm_bufs *b, gg_buffer *img, int B, int npx,
                              int npy, int ri)
{
    gg_xc_params p = {0};
    p.nwin = B;
    p.bw = npx;
    p.bh = npy;
    p.ow = ri * npx;
    p.oh = npy;
    p.scale = 1.0f / npx;
    int n1 = npx, n2 = ri * npx;
    gg_status s = gg_fft(ctx, img, 1, &n1, B * npy, 0);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_PAD, p.ow, p.oh * B, &p, img, b->big, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_fft(ctx, b->big, 1, &n2, B * npy, 1);
    /* crop: zoom-extract from the start (0, (ri - 1) npx / 2) set in ws */
    p.sw = ri * npx;
    p.sh = npy;
    p.bw = npx;
    p.bh = npy;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_ZEXTRACT, npx, npy * B, &p, b->big, b->ws, img, NULL, NULL);
    return s;
}

/* Every device step of one chunk of B patches (pos and ws uploaded). */
static gg_status gm_chunk(gg_context *ctx, gm_bufs *b, const gm_geom *g, int cap, int B)
{
    const int npx = g->npx, npy = g->npy;
    gg_xc_params p = {0};
    p.nwin = B;
    p.tile_w = g->W;
    p.tile_h = cap;
    p.src_h = g->H;
    p.a_tile_w = g->Wa;
    p.a_src_h = g->Ha;
    p.zero_nodata = !g->zero_is_data;
    p.rw = p.sw = npx;
    p.rh = p.sh = npy;
    p.min_valid = 0.9f;
    p.power = 1.0f;
    /* 1. patches (NaN outside the files), validity, NaN -> 0 */
    gg_status s = gg_xc_launch(ctx, GG_K_XC_EXTRACT16, npx, npy * B, &p, b->ring[0], b->ring[1],
                               b->pos, b->ref, b->sec);
    p.stage = 0;
    p.lx = npx; /* partial columns */
    p.zero_invalid = 1;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_COLSTATS, npx, B, &p, b->ref, b->sec, b->part, NULL, NULL);
    p.zero_invalid = 0;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_WINSTATS, 1, B, &p, b->part, b->ws, NULL, NULL, NULL);
    /* 2. range interpolation, whole-patch means of the interpolated ones */
    if (s == GG_OK && g->ri > 1)
        s = range_interp(ctx, b, b->ref, B, npx, npy, g->ri);
    if (s == GG_OK && g->ri > 1)
        s = range_interp(ctx, b, b->sec, B, npx, npy, g->ri);
    p.stage = 1;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_COLSTATS, npx, B, &p, b->ref, b->sec, b->part, NULL, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_WINSTATS, 1, B, &p, b->part, b->ws, NULL, NULL, NULL);
    /* 3. correlation of the central nxc x nyc of the aligned patch with
     * the master patch: one batched 2-D FFT pair; raw c into surf */
    p.tw = g->nxc;
    p.th = g->nyc;
    p.tox = g->xs;
    p.toy = g->ys;
    p.pw = g->pw;
    p.ph = g->ph;
    p.lx = g->lx;
    p.ly = g->ly;
    p.ux = g->nxc;
    p.uy = g->nyc;
    p.normalise = 0;
    const int n2[2] = {g->ph, g->pw};
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_PACK, g->pw, g->ph * B, &p, b->ref, b->sec, b->ws, b->z, NULL);
    if (s == GG_OK)
        s = gg_fft(ctx, b->z, 2, n2, B, 0);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_XSPEC, g->pw, g->ph * B, &p, b->z, b->big, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_fft(ctx, b->big, 2, n2, B, 1);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_NORM, g->lx, g->ly * B, &p, b->big, b->big, b->big, b->ws,
                         b->surf);
    /* 4. integer peak of |c| over lags [0, 2 search), NCC there */
    p.use_abs = 1;
    p.stage = 2;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_COLMAX, p.ux, B, &p, b->surf, b->part, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_WINMAX, 1, B, &p, b->part, b->ws, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_COLTCORR, p.tw, B, &p, b->ref, b->sec, b->ws, b->part, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_WINTCORR, 1, B, &p, b->part, b->ws, NULL, NULL, NULL);
    /* 5. sub-pixel: 8 x 8 of |c|^(1/4) around the peak, x interp */
    p.stage = 1;
    p.zw = g->zw;
    p.ovs = g->interp;
    p.nreg = g->nreg;
    p.power = 0.25f;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_DFT, g->zw, g->zw * B, &p, b->surf, b->tw, b->ws, b->f, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_ZEVAL1, g->nreg, g->zw * B, &p, b->f, b->tw, b->ws, b->g, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_ZEVAL2, g->nreg, g->nreg * B, &p, b->g, b->tw, b->ws, b->v,
                         NULL);
    gg_xc_params q = p;
    q.lx = q.ly = q.ux = q.uy = g->nreg;
    q.use_abs = 0;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_COLMAX, g->nreg, B, &q, b->v, b->part, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_WINMAX, 1, B, &q, b->part, b->ws, NULL, NULL, NULL);
    return s;
}

/* Sizes and the patch grid of a run (GMTSAR's get_locations.c), checked:
 * GG_ERR_ARGUMENT with the message in err when they do not fit. */
static gg_status gm_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gg_status gm_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return GG_ERR_ARGUMENT;
}

static gg_status gm_geometry(const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                             const gg_xcorr_gmtsar_options *o, int zero_is_data, gm_geom *gp,
                             char *err, size_t errlen)
{
    memset(gp, 0, sizeof *gp);
    gm_geom g = {0};
    const int xs = o->xsearch, ys = o->ysearch;
    g.xs = xs;
    g.ys = ys;
    g.ri = o->range_interp < 1 ? 1 : o->range_interp;
    g.npx = 4 * xs;
    g.npy = 4 * ys;
    g.nxc = 2 * xs;
    g.nyc = 2 * ys;
    g.interp = o->interp < 1 ? 1 : o->interp;
    g.nx = o->nx;
    g.ny = o->ny;
    /* each file keeps its own size (GMTSAR's m_nx/m_ny and s_nx/s_ny, each
     * from its PRM): the patch grid comes from the master's, the aligned
     * file is read with its own line length, and its samples outside it
     * (columns or lines) are invalid */
    g.W = m->width;
    g.H = m->height;
    g.Wa = a->width;
    g.Ha = a->height;
    g.zero_is_data = zero_is_data != 0;
    if (o->nx < 1 || o->ny < 1)
        return gm_fail(err, errlen, "-nx %d and -ny %d must be positive", o->nx, o->ny);
    if ((long long)o->nx * o->ny > 2147483647LL) /* the row count is an int */
        return gm_fail(err, errlen, "-nx %d x -ny %d locations are too many", o->nx, o->ny);
    if ((xs & (xs - 1)) || (ys & (ys - 1)) || xs < 4 || ys < 4)
        return gm_fail(err, errlen, "xsearch %d and ysearch %d must be powers of 2 >= 4",
                       xs, ys);
    g.rshift = o->noshift || !a->has_shift ? 0 : a->rshift;
    g.ashift = o->noshift || !a->has_shift ? 0 : a->ashift;
    g.astretch = m->prf > 0 && a->prf > 0 ? (a->prf - m->prf) / m->prf : 0.0;
    if (!(fabs(g.astretch) <= 1.0)) /* floor(y astretch) becomes a line number */
        return gm_fail(err, errlen, "PRF of the aligned image (%g) is more than twice the "
                       "master's (%g)", a->prf, m->prf);
    /* GMTSAR's patch grid (get_locations.c) */
    g.x_inc = (m->width - 2 * (xs + g.nxc)) / (o->nx + 3);
    g.y_inc = (m->height - 2 * (ys + g.nyc)) / (o->ny + 1);
    if (g.x_inc < 1 || g.y_inc < 1 || g.npx > m->width || g.npy > m->height)
        return gm_fail(err, errlen,
                       "search %dx%d (patch %dx%d) and %dx%d locations do not fit the %dx%d image",
                       xs, ys, g.npx, g.npy, o->nx, o->ny, m->width, m->height);
    g.pw = gg_xc_fast_size(g.npx);
    g.ph = gg_xc_fast_size(g.npy);
    g.lx = g.npx - g.nxc + 1;
    g.ly = g.npy - g.nyc + 1;
    g.zw = 8;
    g.nreg = g.zw * g.interp;

    *gp = g;
    return GG_OK;
}

/* Uploads lines [y0, y0 + n) of a file into its ring (slot = line % cap). */
static gg_status gm_upload(gg_context *ctx, gg_buffer *ring, int W, int cap, int y0, int n,
                           const unsigned char *src)
{
    gg_status s = GG_OK;
    while (n > 0 && s == GG_OK) {
        const int slot = y0 % cap, k = n < cap - slot ? n : cap - slot;
        s = gg_buffer_write(ctx, ring, (size_t)slot * W * 4, src, (size_t)k * W * 4);
        src += (size_t)k * W * 4;
        y0 += k;
        n -= k;
    }
    return s;
}

/* One run: its plan (chunks and the line pieces they read), its buffers,
 * and the state of the pipeline job that feeds it (gpu/pipeline.h): items
 * are the pieces, read by reader threads into page-locked slots and
 * uploaded in order on the calling thread, which launches each chunk once
 * its last piece is up and reads the previous chunk's results meanwhile. */
typedef struct {
    gg_context *ctx;
    const gm_geom *g;
    const gg_xcorr_gmtsar_options *o;
    const char *path[2];   /* master, aligned SLC */
    int fd[2];
    int Wf[2];             /* samples per line of each file */
    int Bp, nchunks, cap;
    gm_job *jobs;
    int njobs;
    int *chunk_job0;       /* chunk c reads pieces [chunk_job0[c], chunk_job0[c + 1]) */
    gm_bufs b;
    float *ws;
    int *pos;
    unsigned char *pool;   /* one page-locked block: the slots' pieces */
    size_t piece_bytes;
    gg_xcorr_gmtsar_row *rows;
    gg_progress_fn progress;
    void *user;
    int sync;              /* timing mode: wait for each chunk's kernels */
    int next_chunk, pending, pending_n; /* next to launch; launched, results not read */
    gg_status s;           /* the calling thread's first failure (message set) */
    pthread_mutex_t mu;    /* guards what reader threads report: */
    int err_job, err_injected; /* the first piece that could not be read */
    double busy_s;         /* summed reading seconds of all reader threads */
    double t_up, t_kern, t_compute; /* uploads, kernels, all of gm_compute */
    double t_wait;         /* the device thread's time outside gm_compute in the pipeline */
} gm_run;

/* Reads piece `item` into its slot (a reader thread of the job). */
static int gm_read(void *user, int reader, int item, int slot)
{
    (void)reader;
    gm_run *r = user;
    const gm_job *j = &r->jobs[item];
    const size_t bytes = (size_t)j->n * r->Wf[j->file] * 4;
    const off_t off = (off_t)j->y0 * r->Wf[j->file] * 4;
    unsigned char *dst = r->pool + r->piece_bytes * (size_t)slot;
    const double t0 = now_s();
    size_t done = 0;
    /* GG_FAULT=read:N (tests): the N-th piece read, counted over the
     * process like every fault point, fails as a short read would */
    const int fault = gg_fault_point("read");
    while (!fault && done < bytes) {
        const ssize_t k = pread(r->fd[j->file], dst + done, bytes - done, off + (off_t)done);
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    const double t = now_s() - t0;
    pthread_mutex_lock(&r->mu);
    r->busy_s += t;
    const int bad = done < bytes;
    if (bad && (r->err_job < 0 || item < r->err_job)) {
        r->err_job = item;
        r->err_injected = fault;
    }
    pthread_mutex_unlock(&r->mu);
    return bad;
}

/* Reads the results of the launched chunk into rows (its kernels are done
 * by the time its results are read back). */
static gg_status gm_harvest(gm_run *r)
{
    const gm_geom *g = r->g;
    const double t0 = now_s();
    gg_status s = gg_buffer_read(r->ctx, r->b.ws, 0, r->ws,
                                 sizeof(float) * GG_XC_WS * (size_t)r->pending_n);
    r->t_kern += now_s() - t0;
    for (int w = 0; s == GG_OK && w < r->pending_n; w++) {
        const float *q = r->ws + (size_t)w * GG_XC_WS;
        const int wg = r->pending * r->Bp + w, j = 1 + wg / g->nx, i = wg % g->nx;
        gg_xcorr_gmtsar_row *row = &r->rows[(size_t)(j - 1) * g->nx + i];
        /* marked (corr 0, the zero-lag offset): too few valid samples, a
         * flat template, or a degenerate patch whose NCC is exactly 0 (a
         * flat master patch, e.g. all zero: its |c| surface is all 0, so
         * the integer argmax and the sub-pixel argmax of it are
         * arbitrary, B5) */
        const int valid = q[GG_XC_VALID] > 0.5f && q[GG_XC_NCC] > 0.0f;
        /* lags: master = aligned + (lag - search): offset = -(lag - search) */
        const double ly_ = valid ? q[GG_XC_OUT_Y] : g->ys, lx_ = valid ? q[GG_XC_OUT_X] : g->xs;
        const int y = gm_y(g, j);
        row->x = gm_x(g, i);
        row->y = y;
        row->xoff = -(lx_ - g->xs) / g->ri + g->rshift;
        row->yoff = -(ly_ - g->ys) + g->ashift + floor(y * g->astretch);
        row->corr = valid ? q[GG_XC_NCC] : 0.0;
    }
    if (s == GG_OK && r->progress &&
        !r->progress((double)(r->pending + 1) / r->nchunks, "", r->user))
        s = gg_rt_fail(r->ctx, GG_ERR_CANCELLED, "cancelled");
    r->pending = -1;
    return s;
}

/* Uploads chunk c's positions and state and queues every step of it. */
static gg_status gm_launch(gm_run *r, int c)
{
    const gm_geom *g = r->g;
    int w0, w1, ja, jb;
    gm_chunk_span(g, r->Bp, c, &w0, &w1, &ja, &jb);
    const int n = w1 - w0;
    for (int w = 0; w < n; w++) {
        const int j = 1 + (w0 + w) / g->nx, i = (w0 + w) % g->nx, x = gm_x(g, i);
        r->pos[4 * w] = x + g->rshift - g->npx / 2; /* aligned patch (template source) */
        r->pos[4 * w + 1] = gm_r0(g, 1, j);
        r->pos[4 * w + 2] = x - g->npx / 2;        /* master patch (search) */
        r->pos[4 * w + 3] = gm_r0(g, 0, j);
    }
    memset(r->ws, 0, sizeof(float) * GG_XC_WS * (size_t)n);
    for (int w = 0; w < n; w++) /* range-interpolation crop start */
        r->ws[(size_t)w * GG_XC_WS + GG_XC_STX] = (float)((g->ri - 1) * g->npx / 2);
    double t0 = now_s();
    gg_status s = gg_buffer_write(r->ctx, r->b.pos, 0, r->pos, sizeof(int) * 4 * (size_t)n);
    if (s == GG_OK)
        s = gg_buffer_write(r->ctx, r->b.ws, 0, r->ws, sizeof(float) * GG_XC_WS * (size_t)n);
    r->t_up += now_s() - t0;
    t0 = now_s();
    if (s == GG_OK)
        s = gm_chunk(r->ctx, &r->b, g, r->cap, n);
    r->pending = c;
    r->pending_n = n;
    if (s == GG_OK && r->sync) /* timing mode: the kernels alone */
        s = gg_buffer_read(r->ctx, r->b.ws, 0, r->ws, sizeof(float));
    r->t_kern += now_s() - t0;
    return s;
}

/* Launches every chunk whose pieces are all uploaded (the first `done`
 * pieces), reading the previous chunk's results before each launch. */
static gg_status gm_launch_ready(gm_run *r, int done)
{
    gg_status s = GG_OK;
    while (s == GG_OK && r->next_chunk < r->nchunks && r->chunk_job0[r->next_chunk + 1] <= done) {
        if (r->pending >= 0)
            s = gm_harvest(r);
        if (s == GG_OK)
            s = gm_launch(r, r->next_chunk++);
    }
    return s;
}

/* Uploads piece `item` from its slot, then launches what it completes
 * (the job's worker, on the calling thread: the context's thread). */
static int gm_compute(void *user, int worker, int item, int slot)
{
    (void)worker;
    gm_run *r = user;
    const double t0 = now_s();
    const gm_job *j = &r->jobs[item];
    r->s = gm_upload(r->ctx, r->b.ring[j->file], r->Wf[j->file], r->cap, j->y0, j->n,
                     r->pool + r->piece_bytes * (size_t)slot);
    r->t_up += now_s() - t0;
    if (r->s == GG_OK)
        r->s = gm_launch_ready(r, item + 1);
    r->t_compute += now_s() - t0;
    return r->s != GG_OK;
}

/* The plan: Bp patches per chunk, ring lines, and the pieces each chunk
 * reads (lines of earlier chunks still in the ring are not read again),
 * simulating the rings' contents. */
static gg_status gm_plan(gm_run *r, int chunk_rows)
{
    const gm_geom *g = r->g;
    const int N = g->nx * g->ny;
    r->Bp = gm_chunk_patches(r->ctx, g, chunk_rows);
    r->nchunks = (N + r->Bp - 1) / r->Bp;
    const int cap0 = gm_cap(g, 0, r->Bp), cap1 = gm_cap(g, 1, r->Bp);
    r->cap = cap1 > cap0 ? cap1 : cap0;
    const int Wmax = g->W > g->Wa ? g->W : g->Wa;
    /* pieces of at most GM_PIECE bytes (of the wider file's lines): a pool
     * of them bounds host memory */
    int piece = (int)(GM_PIECE / ((size_t)Wmax * 4)); /* W * 4 may pass 2^32 */
    piece = piece < 1 ? 1 : piece;
    r->piece_bytes = (size_t)piece * Wmax * 4;
    int *tag[2] = {malloc(sizeof(int) * (size_t)r->cap), malloc(sizeof(int) * (size_t)r->cap)};
    int jcap = 64;
    r->jobs = malloc(sizeof *r->jobs * (size_t)jcap);
    r->chunk_job0 = malloc(sizeof(int) * ((size_t)r->nchunks + 1));
    gg_status s = tag[0] && tag[1] && r->jobs && r->chunk_job0
                      ? GG_OK : gg_rt_fail(r->ctx, GG_ERR_NOMEM, "out of host memory");
    for (int f = 0; f < 2 && s == GG_OK; f++)
        for (int i = 0; i < r->cap; i++)
            tag[f][i] = -1;
    for (int c = 0; c < r->nchunks && s == GG_OK; c++) {
        r->chunk_job0[c] = r->njobs;
        int w0, w1, ja, jb;
        gm_chunk_span(g, r->Bp, c, &w0, &w1, &ja, &jb);
        for (int f = 0; f < 2 && s == GG_OK; f++) {
            int lo, hi;
            gm_span(g, f, ja, jb, &lo, &hi);
            for (int y = lo; y < hi && s == GG_OK;) {
                if (tag[f][y % r->cap] == y) {
                    y++;
                    continue;
                }
                int n = 0;
                while (y + n < hi && n < piece && tag[f][(y + n) % r->cap] != y + n) {
                    tag[f][(y + n) % r->cap] = y + n;
                    n++;
                }
                if (r->njobs == jcap) {
                    gm_job *t = realloc(r->jobs, sizeof *r->jobs * (size_t)(jcap *= 2));
                    if (!t) {
                        s = gg_rt_fail(r->ctx, GG_ERR_NOMEM, "out of host memory");
                        break;
                    }
                    r->jobs = t;
                }
                r->jobs[r->njobs++] = (gm_job){f, y, n};
                y += n;
            }
        }
    }
    if (s == GG_OK)
        r->chunk_job0[r->nchunks] = r->njobs;
    free(tag[0]);
    free(tag[1]);
    return s;
}

/* Device buffers for chunks of Bp patches, both rings, the host copies of
 * positions and state. */
static gg_status gm_alloc(gm_run *r)
{
    const gm_geom *g = r->g;
    const int B = r->Bp;
    gm_bufs *b = &r->b;
    const size_t F = sizeof(float), C = 2 * sizeof(float);
    const size_t np = (size_t)g->npx * g->npy, nfft = (size_t)g->pw * g->ph;
    const size_t nbig = (size_t)g->ri * np > nfft ? (size_t)g->ri * np : nfft;
    const int pcols = g->npx > g->nreg ? g->npx : g->nreg;
    struct {
        gg_buffer **p;
        size_t bytes;
    } req[] = {{&b->ring[0], (size_t)r->cap * r->Wf[0] * 4},
               {&b->ring[1], (size_t)r->cap * r->Wf[1] * 4},
               {&b->pos, (size_t)B * 4 * sizeof(int)},
               {&b->ws, (size_t)B * GG_XC_WS * F},
               {&b->ref, (size_t)B * np * C},
               {&b->sec, (size_t)B * np * C},
               {&b->big, (size_t)B * nbig * C},
               {&b->z, (size_t)B * nfft * C},
               {&b->surf, (size_t)B * g->lx * g->ly * F},
               {&b->part, (size_t)B * pcols * GG_XC_PART_MAXN * sizeof(double)},
               {&b->f, (size_t)B * g->zw * g->zw * C},
               {&b->g, (size_t)B * g->zw * g->nreg * C},
               {&b->v, (size_t)B * g->nreg * g->nreg * F}};
    gg_status s = GG_OK;
    for (size_t i = 0; i < sizeof req / sizeof req[0] && s == GG_OK; i++)
        s = gg_buffer_alloc(r->ctx, req[i].bytes, req[i].p);
    if (s == GG_OK)
        s = gg_xc_twiddles(r->ctx, g->zw, g->interp, &b->tw);
    r->ws = calloc((size_t)B * GG_XC_WS, F);
    r->pos = malloc(sizeof(int) * 4 * (size_t)B);
    r->rows = calloc((size_t)r->o->nx * r->o->ny, sizeof *r->rows);
    if (s == GG_OK && (!r->ws || !r->pos || !r->rows))
        s = gg_rt_fail(r->ctx, GG_ERR_NOMEM, "out of host memory");
    return s;
}

/* Reads every piece through the pipeline while the chunks run. */
static gg_status gm_feed(gm_run *r)
{
    gg_context *ctx = r->ctx;
    r->fd[0] = open(r->path[0], O_RDONLY);
    r->fd[1] = open(r->path[1], O_RDONLY);
    if (r->fd[0] < 0 || r->fd[1] < 0)
        return gg_rt_fail(ctx, GG_ERR_IO, "cannot open the SLC files '%s', '%s'", r->path[0],
                          r->path[1]);
    const int cpu = !strcmp(gg_context_backend(ctx), "cpu");
    int slots = (cpu ? 2 : 3) * GM_READERS;
    if (slots > r->njobs) /* fewer pieces to read than slots: less host memory */
        slots = r->njobs > 0 ? r->njobs : 1;
    void *pool = NULL;
    gg_status s = gg_host_alloc(ctx, r->piece_bytes * (size_t)slots, &pool); /* message set */
    r->pool = pool;
    if (s == GG_OK)
        s = gm_launch_ready(r, 0); /* chunks that need no piece (none in practice) */
    const gg_pipeline_job job = {.user = r, .items = r->njobs, .slots = slots,
                                 .readers = GM_READERS, .workers = 1, .read = gm_read,
                                 .compute = gm_compute};
    const double t0 = now_s();
    const int rc = s == GG_OK ? gg_pipeline_run(&job) : 0;
    const double t_run = now_s() - t0;
    if (s == GG_OK && rc < 0)
        s = gg_rt_fail(ctx, GG_ERR_INTERNAL, "cannot start the reader threads");
    if (s == GG_OK && r->s != GG_OK)
        s = r->s;
    if (s == GG_OK && r->err_job >= 0) {
        const gm_job *j = &r->jobs[r->err_job];
        s = gg_rt_fail(ctx, GG_ERR_IO, "cannot read lines %d..%d of '%s'%s", j->y0,
                       j->y0 + j->n - 1, r->path[j->file],
                       r->err_injected ? ": injected fault (GG_FAULT)" : "");
    }
    /* the device thread's time outside its callbacks: waiting for lines */
    r->t_wait = t_run - r->t_compute;
    if (s == GG_OK)
        s = gm_launch_ready(r, r->njobs);
    if (s == GG_OK && r->pending >= 0)
        s = gm_harvest(r);
    return s;
}

gg_status gg_xcorr_gmtsar(gg_context *ctx, const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                          const gg_xcorr_gmtsar_options *o, gg_xcorr_gmtsar_row **rows_out,
                          int *nrows_out, gg_progress_fn progress, void *user)
{
    return gg_xcorr_gmtsar_timed(ctx, m, a, o, rows_out, nrows_out, progress, user, NULL);
}

gg_status gg_xcorr_gmtsar_timed(gg_context *ctx, const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                                const gg_xcorr_gmtsar_options *o, gg_xcorr_gmtsar_row **rows_out,
                                int *nrows_out, gg_progress_fn progress, void *user,
                                gg_xcorr_timing *timing)
{
    return gg_xcorr_gmtsar_chunked(ctx, m, a, o, 0, rows_out, nrows_out, progress, user, timing);
}

gg_status gg_xcorr_gmtsar_chunked(gg_context *ctx, const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                                  const gg_xcorr_gmtsar_options *o, int chunk_rows,
                                  gg_xcorr_gmtsar_row **rows_out, int *nrows_out,
                                  gg_progress_fn progress, void *user, gg_xcorr_timing *timing)
{
    return gg_xcorr_gmtsar_run(ctx, m, a, o, NULL, chunk_rows, rows_out, nrows_out, progress,
                               user, timing);
}

gg_status gg_xcorr_gmtsar_run(gg_context *ctx, const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                              const gg_xcorr_gmtsar_options *o, const gg_xcorr_gmtsar_switches *sw,
                              int chunk_rows, gg_xcorr_gmtsar_row **rows_out, int *nrows_out,
                              gg_progress_fn progress, void *user, gg_xcorr_timing *timing)
{
    const double t_start = now_s();
    *rows_out = NULL;
    *nrows_out = 0;
    gm_geom g;
    char gerr[512];
    if (gm_geometry(m, a, o, sw ? sw->zero_is_data : 0, &g, gerr, sizeof gerr) != GG_OK)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "%s", gerr);
    gm_run r = {.ctx = ctx, .g = &g, .o = o, .path = {m->slc_file, a->slc_file},
                .fd = {-1, -1}, .Wf = {g.W, g.Wa}, .progress = progress, .user = user,
                .sync = timing && timing->sync, .pending = -1, .err_job = -1};
    pthread_mutex_init(&r.mu, NULL);
    gg_status s = gm_plan(&r, chunk_rows);
    if (s == GG_OK)
        s = gm_alloc(&r);
    if (s == GG_OK)
        s = gm_feed(&r);
    if (timing) {
        timing->chunks = r.nchunks;
        timing->patches_per_chunk = r.Bp;
        timing->ring_lines = r.cap;
        timing->read_wait_s = r.t_wait;
        timing->read_busy_s = r.busy_s;
        timing->upload_s = r.t_up;
        timing->kernel_s = r.t_kern;
        timing->bytes_read = 0;
        for (int i = 0; i < r.njobs; i++)
            timing->bytes_read += 4.0 * r.Wf[r.jobs[i].file] * r.jobs[i].n;
        timing->total_s = now_s() - t_start;
    }
    pthread_mutex_destroy(&r.mu);
    for (int f = 0; f < 2; f++)
        if (r.fd[f] >= 0)
            close(r.fd[f]);
    gg_host_free(ctx, r.pool);
    free(r.jobs);
    free(r.chunk_job0);
    free(r.ws);
    free(r.pos);
    free_bufs(ctx, &r.b);
    if (s != GG_OK) { /* the message was set where it failed (device, host, reader) */
        free(r.rows);
        return s;
    }
    *rows_out = r.rows;
    *nrows_out = o->nx * o->ny;
    return GG_OK;
}

void gg_xcorr_free(void *p) { free(p); }
