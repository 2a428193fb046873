/* test_ptsel.c -- the ptsel stack op on every test device:
 *   - against a float64 implementation of the PtSel paper's O(n^2) pair
 *     formula (explicit loop over the i<j pairs, same validity rules), on
 *     small random stacks with NaN holes, zero samples and nodata, in the
 *     interferogram and SLC modes: tau_max within 1e-5 absolute, identical
 *     nodata masks;
 *   - best_dx/best_dy point at an arc whose reference tau is tau_max, the
 *     mask is tau_max >= threshold (255 on nodata);
 *   - tiled runs (uneven tiles) identical to one whole run; devices agree;
 *   - strips of rows spread over two contexts of one device, run by two
 *     threads at once (as gdal_ptsel -device cuda:all and bench_ptsel
 *     -parallel spread a stack over GPUs): every band bit-identical to one
 *     whole run, with and without the filter;
 *   - the stack in page-locked host memory (gg_host_alloc; on CUDA the
 *     copy engine reads it directly instead of through the staging ring):
 *     bit-identical to the same run from ordinary memory;
 *   - asynchronous runs (gg_op_submit_stack*, collected one behind):
 *     bit-identical to synchronous ones; misuse refused with its reason;
 *   - conjugating every band leaves tau unchanged, one band changes it;
 *   - filter=yes (coherence-weighted filter): the filtered_i bands against
 *     a float64 implementation built on the reference tau_max (ifg and slc
 *     modes, windows 3 and 5), within 1e-5 absolute in the real and
 *     imaginary parts, identical NaN masks; the other bands bit-identical
 *     to a run without the filter; tiled runs identical; devices agree;
 *   - bad options and inputs rejected with their messages;
 *   - the real psps Houston stack (92 interferograms, when
 *     ../shared/data/psps_houston exists next to the repository or
 *     GG_PSPS_DIR names it): a 60x60 crop against the reference (tau_max
 *     and the filtered bands), and the fraction of pixels with
 *     tau_max >= 0.71. */
#define _GNU_SOURCE
#include "check.h"

#include <complex.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#define MAXDEV 4
#define TOL 1e-5

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------ reference */

/* A stack: n band-sequential planes of W x H interleaved complex floats;
 * with `interleaved`, W x H pixels of n complex samples each (a
 * pixel-interleaved GeoTIFF's layout), run through
 * gg_op_run_stack_interleaved. */
typedef struct {
    int W, H, n;
    const float *z;
    int has_nodata;
    double nodata;
    int interleaved;
    int pipelined; /* gg_op_submit_stack*: submit tile k + 1, then collect tile k */
} stack;

/* The pixel-interleaved copy of a band-sequential stack. */
static stack interleave(const stack *s)
{
    const size_t np = (size_t)s->W * s->H;
    float *z = malloc(np * s->n * 8);
    for (size_t k = 0; z && k < np; k++)
        for (int b = 0; b < s->n; b++)
            memcpy(z + 2 * (k * s->n + b), s->z + 2 * ((size_t)b * np + k), 8);
    stack t = *s;
    t.z = z;
    t.interleaved = 1;
    return t;
}

typedef struct {
    int window, slc;
    double mindist, threshold;
    int conj[128]; /* per band, 0-based */
} ref_opts;

/* Unit phasors in double; invalid samples (zero, NaN/Inf, real part ==
 * nodata) are 0. */
static double complex *ref_unit(const stack *s, const ref_opts *o)
{
    const size_t np = (size_t)s->W * s->H;
    double complex *u = malloc(np * s->n * sizeof *u);
    for (int b = 0; b < s->n; b++)
        for (size_t k = 0; k < np; k++) {
            const float re = s->z[2 * (b * np + k)], im = s->z[2 * (b * np + k) + 1];
            const int ok = isfinite(re) && isfinite(im) && !(re == 0 && im == 0) &&
                           !(s->has_nodata && re == (float)s->nodata);
            double complex v = (double)re + I * (o->conj[b] ? -(double)im : (double)im);
            u[b * np + k] = ok ? v / cabs(v) : 0;
        }
    return u;
}

/* The paper's tau of arc (C, N): the sum over the network of pairs, each
 * pair term a_i conj(a_j) written out (O(n^2)); -1 when the arc has too
 * few valid epochs. */
static double ref_arc(const stack *s, const ref_opts *o, const double complex *u, size_t c,
                      size_t nb)
{
    const size_t np = (size_t)s->W * s->H;
    double complex a[256];
    int valid[256], m = 0;
    for (int i = 0; i < s->n; i++) {
        const double complex uc = u[i * np + c], un = u[i * np + nb];
        valid[i] = uc != 0 && un != 0;
        a[i] = valid[i] ? uc * conj(un) : 0;
        m += valid[i];
    }
    double complex sum = 0;
    double pairs;
    if (o->slc) {
        if (m < 2)
            return -1;
        for (int k = 0; k < s->n; k++)
            for (int l = k + 1; l < s->n; l++)
                if (valid[k] && valid[l])
                    sum += a[k] * conj(a[l]);
        pairs = m * (m - 1) / 2.0;
    } else {
        if (m < 1)
            return -1;
        /* the n single-reference ifgs, then every pair i<j (the reference
         * is the last epoch of the network) */
        for (int i = 0; i < s->n; i++)
            if (valid[i])
                sum += a[i];
        for (int i = 0; i < s->n; i++)
            for (int j = i + 1; j < s->n; j++)
                if (valid[i] && valid[j])
                    sum += a[i] * conj(a[j]);
        pairs = m * (m + 1) / 2.0;
    }
    const double t = cabs(sum) / pairs;
    return t > 1 ? 1 : t;
}

static int ref_excluded(const ref_opts *o, int dx, int dy)
{
    return (dx == 0 && dy == 0) || (double)(dx * dx + dy * dy) < o->mindist * o->mindist;
}

/* tau_max per pixel (NaN: no valid arc). */
static double *ref_ptsel(const stack *s, const ref_opts *o, const double complex *u)
{
    const int h = o->window / 2;
    double *t = malloc((size_t)s->W * s->H * sizeof *t);
#pragma omp parallel for schedule(dynamic)
    for (int y = 0; y < s->H; y++)
        for (int x = 0; x < s->W; x++) {
            double best = -1;
            for (int dy = -h; dy <= h; dy++)
                for (int dx = -h; dx <= h; dx++) {
                    const int nx = x + dx, ny = y + dy;
                    if (nx < 0 || ny < 0 || nx >= s->W || ny >= s->H || ref_excluded(o, dx, dy))
                        continue;
                    const double a = ref_arc(s, o, u, (size_t)y * s->W + x, (size_t)ny * s->W + nx);
                    if (a > best)
                        best = a;
                }
            t[(size_t)y * s->W + x] = best >= 0 ? best : NAN;
        }
    return t;
}

/* The coherence-weighted filter, straight from its definition (ptsel.c):
 * for each band i and pixel C, sum w(N) u_i(N) / sum w(N) over the pixels
 * N of C's window inside the image (C included) where u_i(N) is valid, with
 * w = the reference tau_max (NaN: 0).  n band-sequential planes; NaN + NaN i
 * where the denominator is 0. */
static double complex *ref_filter(const stack *s, const ref_opts *o, const double complex *u,
                                  const double *tau)
{
    const int h = o->window / 2;
    const size_t np = (size_t)s->W * s->H;
    double complex *f = malloc(np * s->n * sizeof *f);
    for (int b = 0; b < s->n; b++)
        for (int y = 0; y < s->H; y++)
            for (int x = 0; x < s->W; x++) {
                double complex num = 0;
                double den = 0;
                for (int dy = -h; dy <= h; dy++)
                    for (int dx = -h; dx <= h; dx++) {
                        const int nx = x + dx, ny = y + dy;
                        if (nx < 0 || ny < 0 || nx >= s->W || ny >= s->H)
                            continue;
                        const size_t k = (size_t)ny * s->W + nx;
                        const double w = isnan(tau[k]) ? 0 : tau[k];
                        if (u[b * np + k] == 0)
                            continue;
                        num += w * u[b * np + k];
                        den += w;
                    }
                f[b * np + (size_t)y * s->W + x] = den > 0 ? num / den : NAN + I * NAN;
            }
    return f;
}

/* ------------------------------------------------------------ the op */

typedef struct {
    float *tau, *dx, *dy;
    unsigned char *mask;
    float *filt;   /* filtered_1..n: n planes of interleaved complex, or NULL */
    int nfilt;     /* n when filtered, else 0 */
    int nbands;
    int bad_names; /* filtered bands misnamed, mistyped or out of order */
} result;

static void result_free(result *r)
{
    free(r->tau);
    free(r->dx);
    free(r->dy);
    free(r->mask);
    free(r->filt);
    memset(r, 0, sizeof *r);
}

/* Runs ptsel over the stack in output tiles of tw x th through the public
 * API, as the GDAL driver does.  opts: key/value pairs, NULL-terminated. */
static gg_status run_ptsel(gg_context *ctx, const stack *s, const char *const *opts, int tw, int th,
                           result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    gg_op *op = NULL;
    gg_status st = gg_op_new("ptsel", &op, err, errlen);
    for (int i = 0; st == GG_OK && opts && opts[i]; i += 2)
        if ((st = gg_op_set(op, opts[i], opts[i + 1])) != GG_OK)
            snprintf(err, errlen, "%s", gg_op_last_error(op));
    gg_raster_info ii = {s->W, s->H, s->n, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, s->has_nodata,
                         s->nodata}, oi;
    if (st == GG_OK && (st = gg_op_prepare(op, &ii, &oi)) != GG_OK)
        snprintf(err, errlen, "%s", gg_op_last_error(op));
    if (st != GG_OK) {
        gg_op_free(op);
        return st;
    }
    const size_t np = (size_t)s->W * s->H;
    r->nbands = oi.bands;
    void *planes[4 + 256] = {0};
    int nfilt = 0;
    for (int b = 0; b < oi.bands; b++) {
        const char *name = gg_op_band_name(op, b);
        if (!strncmp(name, "filtered_", 9)) {
            /* 1-based stack band numbers, in order, after the other bands */
            if (!r->filt)
                r->filt = malloc(np * 8 * s->n);
            char want[32];
            snprintf(want, sizeof want, "filtered_%d", nfilt + 1);
            r->bad_names += strcmp(name, want) != 0 || gg_op_band_type(op, b) != GG_CFLOAT32 ||
                            !isnan(gg_op_band_nodata(op, b)) || nfilt >= s->n;
            planes[b] = r->filt + 2 * np * (size_t)(nfilt < s->n ? nfilt : 0);
            nfilt++;
        } else if (nfilt) {
            snprintf(err, errlen, "band %d (%s) follows the filtered bands", b + 1, name);
            gg_op_free(op);
            return GG_ERR_ARGUMENT;
        } else if (!strcmp(name, "tau_max"))
            planes[b] = r->tau = malloc(np * 4);
        else if (!strcmp(name, "best_dx"))
            planes[b] = r->dx = malloc(np * 4);
        else if (!strcmp(name, "best_dy"))
            planes[b] = r->dy = malloc(np * 4);
        else
            planes[b] = r->mask = malloc(np);
    }
    r->bad_names += nfilt && nfilt != s->n;
    r->nfilt = nfilt;
    gg_tile src[256], dst[4 + 256];
    for (int y = 0; y < s->H && st == GG_OK; y += th)
        for (int x = 0; x < s->W && st == GG_OK; x += tw) {
            gg_window dw = {x, y, x + tw > s->W ? s->W - x : tw, y + th > s->H ? s->H - y : th}, sw;
            gg_op_source_window(op, &dw, &sw);
            for (int b = 0; b < (s->interleaved ? 1 : s->n); b++)
                src[b] = (gg_tile){(void *)(s->z + (s->interleaved
                                                        ? 2 * ((size_t)sw.y0 * s->W + sw.x0) * s->n
                                                        : 2 * ((size_t)b * np +
                                                               (size_t)sw.y0 * s->W + sw.x0))),
                                   GG_CFLOAT32, sw.width, sw.height, (size_t)s->W, sw.x0, sw.y0};
            for (int b = 0; b < oi.bands; b++) {
                const gg_type t = gg_op_band_type(op, b);
                dst[b] = (gg_tile){(char *)planes[b] + ((size_t)y * s->W + x) * gg_type_size(t), t,
                                   dw.width, dw.height, (size_t)s->W, x, y};
            }
            if (s->pipelined) {
                st = s->interleaved
                         ? gg_op_submit_stack_interleaved(ctx, op, src, s->n, dst, oi.bands)
                         : gg_op_submit_stack(ctx, op, src, s->n, dst, oi.bands);
                if (st == GG_OK && gg_op_in_flight(op) == 2)
                    st = gg_op_collect(ctx, op);
            } else {
                st = s->interleaved ? gg_op_run_stack_interleaved(ctx, op, src, s->n, dst, oi.bands)
                                    : gg_op_run_stack(ctx, op, src, s->n, dst, oi.bands);
            }
            if (st != GG_OK)
                snprintf(err, errlen, "%s", gg_op_last_error(op));
        }
    while (st == GG_OK && gg_op_in_flight(op))
        if ((st = gg_op_collect(ctx, op)) != GG_OK)
            snprintf(err, errlen, "%s", gg_op_last_error(op));
    gg_op_free(op);
    return st;
}

/* ------------------------------------------------------------ data */

/* A smooth common phase screen (cancels on short arcs), per-pixel noise
 * from stable (PS-like) to random, random amplitudes, and invalid samples:
 * NaN, zeros, nodata, an all-invalid 3x3 block, a pixel valid in one epoch
 * only, huge and tiny amplitudes. */
static float *make_stack(int W, int H, int n, int has_nodata, double nodata)
{
    const size_t np = (size_t)W * H;
    float *z = malloc(np * n * 2 * sizeof(float));
    for (size_t k = 0; k < np; k++) {
        const int x = (int)(k % W), y = (int)(k / W);
        const double cls = urand(0, 1);
        const double sigma = cls < 0.3 ? 0.15 : cls < 0.6 ? 0.7 : 1e9;
        const double trend = urand(-0.2, 0.2);
        for (int b = 0; b < n; b++) {
            const double screen = 1.3 * b * sin(0.23 * x + 0.11 * y + 0.7 * b);
            const double ph = sigma > 1e8 ? urand(-M_PI, M_PI)
                                          : screen + trend * b + sigma * urand(-1.7, 1.7);
            double amp = urand(0.2, 3.0);
            if (k % 97 == 5)
                amp *= 1e30;
            else if (k % 89 == 7)
                amp *= 1e-30;
            float *p = z + 2 * ((size_t)b * np + k);
            p[0] = (float)(amp * cos(ph));
            p[1] = (float)(amp * sin(ph));
            const double r = urand(0, 1);
            if (r < 0.02)
                p[r < 0.01 ? 0 : 1] = NAN;
            else if (r < 0.035)
                p[0] = p[1] = 0;
            else if (r < 0.05 && has_nodata)
                p[0] = (float)nodata;
            else if (r < 0.052)
                p[1] = INFINITY;
            if ((x >= 4 && x <= 6 && y >= 3 && y <= 5) || (k == np - 3 && b > 0))
                p[0] = NAN;
        }
    }
    return z;
}

/* ------------------------------------------------------------ checks */

static double max_abs_diff(const float *a, const double *b, size_t n, size_t *nan_mismatch)
{
    double e = 0;
    *nan_mismatch = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i])) {
            (*nan_mismatch)++;
            continue;
        }
        if (!isnan(a[i]) && fabs(a[i] - b[i]) > e)
            e = fabs(a[i] - b[i]);
    }
    return e;
}

static double max_abs_diff_f(const float *a, const float *b, size_t n, size_t *nan_mismatch)
{
    double e = 0;
    *nan_mismatch = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i])) {
            (*nan_mismatch)++;
            continue;
        }
        if (!isnan(a[i]) && fabs((double)a[i] - b[i]) > e)
            e = fabs((double)a[i] - b[i]);
    }
    return e;
}

/* Bit-identical bands; a's filtered bands only where b has them too (b
 * may be a run without the filter: then the other bands must match). */
static int same_bands(const result *a, const result *b, size_t np)
{
    return !memcmp(a->tau, b->tau, np * 4) && !a->dx == !b->dx &&
           (!a->dx || (!memcmp(a->dx, b->dx, np * 4) && !memcmp(a->dy, b->dy, np * 4))) &&
           !a->mask == !b->mask && (!a->mask || !memcmp(a->mask, b->mask, np));
}

static int same_result(const result *a, const result *b, size_t np)
{
    return a->nbands == b->nbands && same_bands(a, b, np) && a->nfilt == b->nfilt &&
           (!a->filt || !memcmp(a->filt, b->filt, np * 8 * (size_t)a->nfilt));
}

/* Offsets point at an allowed neighbour whose reference tau is tau_max;
 * the mask is tau_max >= threshold; nodata agrees across bands. */
static void check_bands(const char *what, const stack *s, const ref_opts *o, const double complex *u,
                        const double *ref, const result *r)
{
    const int h = o->window / 2;
    size_t bad_off = 0, bad_mask = 0;
    double worst = 0;
    for (int y = 0; y < s->H; y++)
        for (int x = 0; x < s->W; x++) {
            const size_t k = (size_t)y * s->W + x;
            const int nd = isnan(r->tau[k]);
            if (r->mask && (nd ? r->mask[k] != 255 : r->mask[k] != (r->tau[k] >= (float)o->threshold)))
                bad_mask++;
            if (!r->dx)
                continue;
            if (nd) {
                bad_off += !isnan(r->dx[k]) || !isnan(r->dy[k]);
                continue;
            }
            const int dx = (int)r->dx[k], dy = (int)r->dy[k];
            const int nx = x + dx, ny = y + dy;
            if (r->dx[k] != dx || r->dy[k] != dy || abs(dx) > h || abs(dy) > h || nx < 0 ||
                ny < 0 || nx >= s->W || ny >= s->H || ref_excluded(o, dx, dy)) {
                bad_off++;
                continue;
            }
            const double t = ref_arc(s, o, u, k, (size_t)ny * s->W + nx);
            if (fabs(t - ref[k]) > worst)
                worst = fabs(t - ref[k]);
        }
    CHECK(bad_mask == 0, "%s: %zu ps_mask values inconsistent with tau_max", what, bad_mask);
    CHECK(bad_off == 0 && worst <= TOL, "%s: %zu bad offsets; best arc's tau off by %.3g", what,
          bad_off, worst);
}

typedef struct {
    int W, H, n;
    int has_nodata;
    double nodata;
    const char *opts[16]; /* key, value, ..., NULL */
} pcase;

static const char *opt_of(const pcase *c, const char *key, const char *dflt)
{
    for (int i = 0; c->opts[i]; i += 2)
        if (!strcmp(c->opts[i], key))
            return c->opts[i + 1];
    return dflt;
}

static void fill_ref_opts(const char *const *opts, int n, ref_opts *o)
{
    memset(o, 0, sizeof *o);
    o->window = 11;
    o->mindist = 1;
    o->threshold = 0.71;
    for (int i = 0; opts[i]; i += 2) {
        const char *k = opts[i], *v = opts[i + 1];
        if (!strcmp(k, "window"))
            o->window = atoi(v);
        else if (!strcmp(k, "mindist"))
            o->mindist = atof(v);
        else if (!strcmp(k, "threshold"))
            o->threshold = atof(v);
        else if (!strcmp(k, "slc"))
            o->slc = !strcmp(v, "yes");
        else if (!strcmp(k, "conj"))
            for (const char *p = v; *p;) {
                const int b = (int)strtol(p, (char **)&p, 10);
                if (b >= 1 && b <= n)
                    o->conj[b - 1] = 1;
                while (*p == ',')
                    p++;
            }
    }
}

static void test_cases(gg_context **ctx, char devs[][32], int nd)
{
    static const pcase cases[] = {
        {23, 17, 2, 0, 0, {"window", "3", NULL}},
        {23, 17, 5, 1, -9999, {"window", "5", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 13, 1, 0, {"window", "7", "mindist", "2.5", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 5, 0, 0, {"window", "5", "slc", "yes", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 13, 1, -9999,
         {"window", "7", "mindist", "2.5", "slc", "yes", "conj", "2,5", "mask", "yes",
          "threshold", "0.4", NULL}},
        {23, 17, 2, 1, -9999, {"window", "3", "slc", "yes", "offsets", "yes", NULL}},
        {23, 17, 13, 0, 0,
         {"window", "3", "mindist", "1.2", "conj", "1,13", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 13, 0, 0, {"window", "5", "mindist", "2", "mask", "yes", "threshold", "0.5", NULL}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const pcase *c = &cases[ci];
        float *z = make_stack(c->W, c->H, c->n, c->has_nodata, c->nodata);
        const stack s = {c->W, c->H, c->n, z, c->has_nodata, c->nodata, 0, 0};
        const size_t np = (size_t)c->W * c->H;
        ref_opts o;
        fill_ref_opts(c->opts, c->n, &o);
        double complex *u = ref_unit(&s, &o);
        double *ref = ref_ptsel(&s, &o, u);
        size_t nref = 0, nps = 0;
        for (size_t k = 0; k < np; k++)
            if (!isnan(ref[k])) {
                nref++;
                nps += ref[k] >= o.threshold;
            }
        result first = {0};
        for (int d = 0; d < nd; d++) {
            char err[512] = "", what[160];
            snprintf(what, sizeof what, "%s case %zu (n=%d, window %d, mindist %g, %s)", devs[d], ci,
                     c->n, o.window, o.mindist, o.slc ? "slc" : "ifg");
            result whole, tiled, tiled2;
            gg_status st = run_ptsel(ctx[d], &s, c->opts, 1 << 20, 1 << 20, &whole, err, sizeof err);
            CHECK(st == GG_OK, "%s: %s", what, err);
            if (st != GG_OK) {
                result_free(&whole);
                continue;
            }
            CHECK(whole.nbands == 1 + 2 * !strcmp(opt_of(c, "offsets", "no"), "yes") +
                                     !strcmp(opt_of(c, "mask", "no"), "yes"),
                  "%s: %d output bands", what, whole.nbands);
            size_t mm;
            const double e = max_abs_diff(whole.tau, ref, np, &mm);
            CHECK(e <= TOL && mm == 0, "%s: max |tau - ref| %.3g, %zu nodata mismatches", what, e, mm);
            printf("  %-7s case %zu: n=%2d window %d mindist %-3g %s: max |err| %.2e  (%zu valid, "
                   "%zu >= %.2f)\n",
                   devs[d], ci, c->n, o.window, o.mindist, o.slc ? "slc" : "ifg", e, nref, nps,
                   o.threshold);
            check_bands(what, &s, &o, u, ref, &whole);
            /* uneven tiles, two shapes */
            st = run_ptsel(ctx[d], &s, c->opts, 7, 5, &tiled, err, sizeof err);
            CHECK(st == GG_OK && same_result(&whole, &tiled, np), "%s: 7x5 tiles differ from the "
                  "whole run %s", what, err);
            st = run_ptsel(ctx[d], &s, c->opts, 10, 3, &tiled2, err, sizeof err);
            CHECK(st == GG_OK && same_result(&whole, &tiled2, np), "%s: 10x3 tiles differ from the "
                  "whole run %s", what, err);
            result_free(&tiled);
            result_free(&tiled2);
            /* the same stack pixel-interleaved: sorted on the device, the
             * same bits */
            const stack si = interleave(&s);
            st = run_ptsel(ctx[d], &si, c->opts, 1 << 20, 1 << 20, &tiled, err, sizeof err);
            CHECK(st == GG_OK && same_result(&whole, &tiled, np), "%s: the pixel-interleaved "
                  "stack gives other results %s", what, err);
            st = run_ptsel(ctx[d], &si, c->opts, 7, 5, &tiled2, err, sizeof err);
            CHECK(st == GG_OK && same_result(&whole, &tiled2, np), "%s: the pixel-interleaved "
                  "stack in 7x5 tiles gives other results %s", what, err);
            result_free(&tiled);
            result_free(&tiled2);
            free((void *)si.z);
            if (!first.tau) {
                first = whole;
                continue;
            }
            const double agree = max_abs_diff_f(whole.tau, first.tau, np, &mm);
            size_t mask_diff = 0;
            if (whole.mask)
                for (size_t k = 0; k < np; k++)
                    mask_diff += whole.mask[k] != first.mask[k] &&
                                 fabs(whole.tau[k] - o.threshold) > TOL;
            CHECK(agree <= TOL && mm == 0 && mask_diff == 0,
                  "%s vs %s: max diff %.3g, %zu nodata and %zu mask differences", what, devs[0],
                  agree, mm, mask_diff);
            result_free(&whole);
        }
        result_free(&first);
        free(ref);
        free(u);
        free(z);
    }
}

/* Max |difference| of the real and of the imaginary parts of complex
 * planes against the reference; NaN masks compared part by part; *maxmod:
 * the largest modulus seen (a mean phasor: at most 1). */
static double max_cdiff(const float *f, const double complex *ref, size_t n, size_t *mm,
                        double *maxmod)
{
    double e = 0;
    *mm = 0;
    *maxmod = 0;
    for (size_t i = 0; i < n; i++) {
        const double re = f[2 * i], im = f[2 * i + 1];
        const double rr = creal(ref[i]), ri = cimag(ref[i]);
        if (isnan(re) != isnan(rr) || isnan(im) != isnan(ri)) {
            (*mm)++;
            continue;
        }
        if (isnan(re))
            continue;
        e = fmax(e, fmax(fabs(re - rr), fabs(im - ri)));
        *maxmod = fmax(*maxmod, hypot(re, im));
    }
    return e;
}

static double max_cdiff_f(const float *a, const float *b, size_t n, size_t *mm)
{
    return max_abs_diff_f(a, b, 2 * n, mm);
}

/* filter=yes: the filtered bands against ref_filter; every other band
 * bit-identical to a run without the filter; tiles; devices. */
static void test_filter(gg_context **ctx, char devs[][32], int nd)
{
    static const pcase cases[] = {
        {23, 17, 6, 1, -9999, {"window", "3", "filter", "yes", NULL}},
        {23, 17, 6, 0, 0, {"window", "5", "filter", "yes", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 2, 0, 0, {"window", "3", "filter", "yes", "conj", "2", NULL}},
        {23, 17, 5, 1, 0, {"window", "3", "slc", "yes", "filter", "yes", "mask", "yes", NULL}},
        {23, 17, 7, 1, -9999,
         {"window", "5", "slc", "yes", "filter", "yes", "conj", "2,5", "offsets", "yes",
          "mindist", "1.5", NULL}},
        /* a dstnodata that is no weight: the filter must not read it as one */
        {23, 17, 9, 1, -9999,
         {"window", "5", "filter", "yes", "dstnodata", "-9999", "mask", "yes", NULL}},
        {19, 13, 4, 0, 0,
         {"window", "5", "slc", "yes", "filter", "yes", "method", "pairs", "dstnodata", "0", NULL}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const pcase *c = &cases[ci];
        float *z = make_stack(c->W, c->H, c->n, c->has_nodata, c->nodata);
        const stack s = {c->W, c->H, c->n, z, c->has_nodata, c->nodata, 0, 0};
        const size_t np = (size_t)c->W * c->H;
        ref_opts o;
        fill_ref_opts(c->opts, c->n, &o);
        double complex *u = ref_unit(&s, &o);
        double *ref = ref_ptsel(&s, &o, u);
        double complex *fref = ref_filter(&s, &o, u, ref);
        size_t nvalid = 0;
        for (size_t k = 0; k < np * c->n; k++)
            nvalid += !isnan(creal(fref[k]));
        const double dstnd = atof(opt_of(c, "dstnodata", "nan"));
        /* the options without filter=yes */
        const char *plain[16];
        int np_ = 0;
        for (int i = 0; c->opts[i]; i += 2)
            if (strcmp(c->opts[i], "filter")) {
                plain[np_++] = c->opts[i];
                plain[np_++] = c->opts[i + 1];
            }
        plain[np_] = NULL;
        result first = {0};
        for (int d = 0; d < nd; d++) {
            char err[512] = "", what[160];
            snprintf(what, sizeof what, "%s filter case %zu (n=%d, window %d, %s)", devs[d], ci,
                     c->n, o.window, o.slc ? "slc" : "ifg");
            result whole, nofilt, tiled, tiled2;
            gg_status st = run_ptsel(ctx[d], &s, c->opts, 1 << 20, 1 << 20, &whole, err, sizeof err);
            CHECK(st == GG_OK, "%s: %s", what, err);
            gg_status st2 = run_ptsel(ctx[d], &s, plain, 1 << 20, 1 << 20, &nofilt, err, sizeof err);
            CHECK(st2 == GG_OK, "%s without filter: %s", what, err);
            if (st != GG_OK || st2 != GG_OK) {
                result_free(&whole);
                result_free(&nofilt);
                continue;
            }
            CHECK(whole.filt && whole.nfilt == c->n && whole.bad_names == 0 &&
                      whole.nbands == nofilt.nbands + c->n,
                  "%s: %d output bands, %d filtered, %d misdescribed", what, whole.nbands,
                  whole.nfilt, whole.bad_names);
            CHECK(same_bands(&whole, &nofilt, np),
                  "%s: tau_max/offsets/mask differ from the run without filter", what);
            if (!whole.filt) {
                result_free(&whole);
                result_free(&nofilt);
                continue;
            }
            /* tau against the reference (dstnodata -> NaN) */
            for (size_t k = 0; k < np; k++)
                if (whole.tau[k] == (float)dstnd)
                    whole.tau[k] = NAN;
            size_t mm, fmm;
            const double et = max_abs_diff(whole.tau, ref, np, &mm);
            double maxmod;
            const double ef = max_cdiff(whole.filt, fref, np * c->n, &fmm, &maxmod);
            CHECK(et <= TOL && mm == 0, "%s: max |tau - ref| %.3g, %zu nodata mismatches", what,
                  et, mm);
            CHECK(ef <= TOL && fmm == 0, "%s: filtered max |err| %.3g, %zu nodata mismatches", what,
                  ef, fmm);
            CHECK(maxmod <= 1 + 1e-6, "%s: filtered modulus %.9g > 1", what, maxmod);
            printf("  %-7s filter case %zu: n=%d window %d %s: max |err| re/im %.2e (%zu of %zu "
                   "valid), max |f| %.4f\n",
                   devs[d], ci, c->n, o.window, o.slc ? "slc" : "ifg", ef, nvalid,
                   np * (size_t)c->n, maxmod);
            /* the all-invalid 3x3 block (x 4..6, y 3..5) has no valid
             * sample: with window 3 its centre has no valid neighbour */
            if (o.window == 3)
                for (int b = 0; b < c->n; b++) {
                    const float *f = whole.filt + 2 * ((size_t)b * np + 4 * (size_t)c->W + 5);
                    CHECK(isnan(f[0]) && isnan(f[1]), "%s: band %d at (5,4) is %g%+gi, not NaN",
                          what, b + 1, f[0], f[1]);
                }
            st = run_ptsel(ctx[d], &s, c->opts, 7, 5, &tiled, err, sizeof err);
            CHECK(st == GG_OK && same_bands(&tiled, &nofilt, np) && tiled.filt &&
                      !memcmp(tiled.filt, whole.filt, np * 8 * (size_t)c->n),
                  "%s: 7x5 tiles differ from the whole run %s", what, err);
            st = run_ptsel(ctx[d], &s, c->opts, 10, 3, &tiled2, err, sizeof err);
            CHECK(st == GG_OK && same_bands(&tiled2, &nofilt, np) && tiled2.filt &&
                      !memcmp(tiled2.filt, whole.filt, np * 8 * (size_t)c->n),
                  "%s: 10x3 tiles differ from the whole run %s", what, err);
            result_free(&tiled);
            const stack si = interleave(&s);
            st = run_ptsel(ctx[d], &si, c->opts, 10, 3, &tiled, err, sizeof err);
            CHECK(st == GG_OK && same_bands(&tiled, &nofilt, np) && tiled.filt &&
                      !memcmp(tiled.filt, whole.filt, np * 8 * (size_t)c->n),
                  "%s: the pixel-interleaved stack in 10x3 tiles differs %s", what, err);
            free((void *)si.z);
            result_free(&tiled);
            result_free(&tiled2);
            result_free(&nofilt);
            if (!first.filt) {
                first = whole;
                continue;
            }
            const double agree = max_cdiff_f(whole.filt, first.filt, np * c->n, &mm);
            CHECK(agree <= TOL && mm == 0, "%s vs %s: filtered differ by %.3g, %zu nodata", what,
                  devs[0], agree, mm);
            printf("  %-7s filter case %zu: vs %s: max diff %.2e\n", devs[d], ci, devs[0], agree);
            result_free(&whole);
        }
        result_free(&first);
        free(fref);
        free(ref);
        free(u);
        free(z);
    }
}

/* tau does not change when every a_i is conjugated; conjugating one
 * interferogram changes it (notes §1). */
static void test_conj_identity(gg_context **ctx, char devs[][32], int nd)
{
    const int W = 23, H = 17, n = 6;
    float *z = make_stack(W, H, n, 0, 0);
    const stack s = {W, H, n, z, 0, 0, 0, 0};
    const size_t np = (size_t)W * H;
    for (int d = 0; d < nd; d++)
        for (int slc = 0; slc < 2; slc++) {
            const char *mode = slc ? "yes" : "no";
            const char *plain[] = {"window", "5", "slc", mode, NULL};
            const char *all[] = {"window", "5", "slc", mode, "conj", "1,2,3,4,5,6", NULL};
            const char *one[] = {"window", "5", "slc", mode, "conj", "3", NULL};
            result a, b, c;
            char err[512] = "";
            gg_status s1 = run_ptsel(ctx[d], &s, plain, 1 << 20, 1 << 20, &a, err, sizeof err);
            gg_status s2 = run_ptsel(ctx[d], &s, all, 1 << 20, 1 << 20, &b, err, sizeof err);
            gg_status s3 = run_ptsel(ctx[d], &s, one, 1 << 20, 1 << 20, &c, err, sizeof err);
            CHECK(s1 == GG_OK && s2 == GG_OK && s3 == GG_OK, "%s conj runs: %s", devs[d], err);
            if (s1 == GG_OK && s2 == GG_OK && s3 == GG_OK) {
                size_t mm1, mm2;
                const double dall = max_abs_diff_f(a.tau, b.tau, np, &mm1);
                const double done = max_abs_diff_f(a.tau, c.tau, np, &mm2);
                CHECK(dall <= 1e-6 && mm1 == 0, "%s %s: conj of every band changed tau by %.3g",
                      devs[d], slc ? "slc" : "ifg", dall);
                CHECK(done > 1e-2, "%s %s: conj of one band changed tau by only %.3g", devs[d],
                      slc ? "slc" : "ifg", done);
                printf("  %-7s %s: conj all bands: max |dtau| %.2e; conj band 3: max |dtau| %.3f\n",
                       devs[d], slc ? "slc" : "ifg", dall, done);
            }
            result_free(&a);
            result_free(&b);
            result_free(&c);
        }
    free(z);
}

/* ------------------------------------------- strips over two contexts */

/* Planes for a result laid out like `like` (same bands), NaN-free garbage
 * (0xAB bytes) so that a strip left unwritten shows. */
static int alloc_like(result *r, const result *like, size_t np, int n)
{
    memset(r, 0, sizeof *r);
    r->nbands = like->nbands;
    r->nfilt = like->nfilt;
    r->tau = malloc(np * 4);
    if (like->dx) {
        r->dx = malloc(np * 4);
        r->dy = malloc(np * 4);
    }
    if (like->mask)
        r->mask = malloc(np);
    if (like->filt)
        r->filt = malloc(np * 8 * (size_t)n);
    if (!r->tau || (like->dx && (!r->dx || !r->dy)) || (like->mask && !r->mask) ||
        (like->filt && !r->filt))
        return 0;
    memset(r->tau, 0xAB, np * 4);
    if (r->dx) {
        memset(r->dx, 0xAB, np * 4);
        memset(r->dy, 0xAB, np * 4);
    }
    if (r->mask)
        memset(r->mask, 0xAB, np);
    if (r->filt)
        memset(r->filt, 0xAB, np * 8 * (size_t)n);
    return 1;
}

typedef struct split_job {
    const stack *s;
    const char *const *opts;
    const int *y0s; /* strip starts, y0s[nstrips] = H */
    int nstrips, next, failed;
    result *r;
    pthread_mutex_t lock;
    char err[512];
} split_job;

typedef struct split_worker {
    split_job *job;
    gg_context *ctx;
} split_worker;

/* One worker: its own op on its own context, full-width strips taken in
 * turn, written into the shared planes (each strip its own rows). */
static void *split_run(void *arg)
{
    split_worker *w = arg;
    split_job *j = w->job;
    const stack *s = j->s;
    char err[512] = "";
    gg_op *op = NULL;
    gg_status st = gg_op_new("ptsel", &op, err, sizeof err);
    for (int i = 0; st == GG_OK && j->opts[i]; i += 2)
        st = gg_op_set(op, j->opts[i], j->opts[i + 1]);
    gg_raster_info ii = {s->W, s->H, s->n, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, s->has_nodata,
                         s->nodata}, oi;
    if (st == GG_OK)
        st = gg_op_prepare(op, &ii, &oi);
    const size_t np = (size_t)s->W * s->H;
    gg_tile *src = calloc((size_t)s->n, sizeof *src), *dst = calloc(4 + (size_t)s->n, sizeof *dst);
    if (!src || !dst)
        st = GG_ERR_NOMEM;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        const int k = st != GG_OK || j->failed ? j->nstrips : j->next++;
        pthread_mutex_unlock(&j->lock);
        if (k >= j->nstrips)
            break;
        const int y = j->y0s[k];
        gg_window dw = {0, y, s->W, j->y0s[k + 1] - y}, sw;
        gg_op_source_window(op, &dw, &sw);
        for (int b = 0; b < s->n; b++)
            src[b] = (gg_tile){(void *)(s->z + 2 * ((size_t)b * np + (size_t)sw.y0 * s->W + sw.x0)),
                               GG_CFLOAT32, sw.width, sw.height, (size_t)s->W, sw.x0, sw.y0};
        int nf = 0;
        for (int b = 0; b < oi.bands; b++) {
            const char *name = gg_op_band_name(op, b);
            const gg_type t = gg_op_band_type(op, b);
            char *plane = !strncmp(name, "filtered_", 9) ? (char *)(j->r->filt + 2 * np * (size_t)nf++)
                          : !strcmp(name, "tau_max")      ? (char *)j->r->tau
                          : !strcmp(name, "best_dx")      ? (char *)j->r->dx
                          : !strcmp(name, "best_dy")      ? (char *)j->r->dy
                                                          : (char *)j->r->mask;
            dst[b] = (gg_tile){plane + (size_t)y * s->W * gg_type_size(t), t, dw.width, dw.height,
                               (size_t)s->W, 0, y};
        }
        st = gg_op_run_stack(w->ctx, op, src, s->n, dst, oi.bands);
    }
    if (st != GG_OK) {
        pthread_mutex_lock(&j->lock);
        if (!j->failed)
            snprintf(j->err, sizeof j->err, "%s: %s", gg_context_device_name(w->ctx),
                     op ? gg_op_last_error(op) : err);
        j->failed = 1;
        pthread_mutex_unlock(&j->lock);
    }
    free(src);
    free(dst);
    gg_op_free(op);
    return NULL;
}

static void test_split_contexts(gg_context **ctx, char devs[][32], int nd)
{
    static const pcase cases[] = {
        {23, 17, 13, 1, -9999, {"window", "7", "offsets", "yes", "mask", "yes", NULL}},
        {23, 17, 5, 0, 0, {"window", "5", "slc", "yes", "mindist", "1.5", "mask", "yes", NULL}},
        {23, 17, 5, 1, -9999, {"window", "5", "filter", "yes", "offsets", "yes", NULL}},
    };
    /* uneven strips, some shorter than the halo (r/2 = 3 or 2 rows) */
    static const int y0s[] = {0, 1, 4, 9, 10, 15, 17};
    const int nstrips = (int)(sizeof y0s / sizeof y0s[0]) - 1;
    for (int d = 0; d < nd; d++) {
        char err[512] = "";
        gg_context *other = NULL;
        if (gg_context_create(devs[d], &other, err, sizeof err) != GG_OK) {
            CHECK(0, "%s: a second context: %s", devs[d], err);
            continue;
        }
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            const pcase *c = &cases[ci];
            float *z = make_stack(c->W, c->H, c->n, c->has_nodata, c->nodata);
            const stack s = {c->W, c->H, c->n, z, c->has_nodata, c->nodata, 0, 0};
            const size_t np = (size_t)c->W * c->H;
            result whole, split;
            gg_status st = run_ptsel(ctx[d], &s, c->opts, 1 << 20, 1 << 20, &whole, err, sizeof err);
            CHECK(st == GG_OK, "%s split case %zu: whole run: %s", devs[d], ci, err);
            if (st == GG_OK && alloc_like(&split, &whole, np, c->n)) {
                split_job job = {.s = &s, .opts = c->opts, .y0s = y0s, .nstrips = nstrips,
                                 .r = &split};
                pthread_mutex_init(&job.lock, NULL);
                split_worker w[2] = {{&job, ctx[d]}, {&job, other}};
                pthread_t th;
                const int threaded = pthread_create(&th, NULL, split_run, &w[1]) == 0;
                split_run(&w[0]);
                if (threaded)
                    pthread_join(th, NULL);
                else
                    split_run(&w[1]);
                pthread_mutex_destroy(&job.lock);
                CHECK(!job.failed, "%s split case %zu: %s", devs[d], ci, job.err);
                CHECK(job.failed || same_result(&whole, &split, np),
                      "%s split case %zu: %d strips over two contexts differ from the whole run",
                      devs[d], ci, nstrips);
                printf("  %-7s split case %zu: %d strips over 2 contexts, 2 threads: %s\n", devs[d],
                       ci, nstrips, !job.failed && same_result(&whole, &split, np)
                                        ? "bit-identical" : "DIFFERENT");
                result_free(&split);
            } else if (st == GG_OK) {
                CHECK(0, "%s split case %zu: out of memory", devs[d], ci);
                result_free(&split);
            }
            result_free(&whole);
            free(z);
        }
        gg_context_destroy(other);
    }
}

/* The stack in gg_host_alloc memory (page-locked on CUDA: uploaded by
 * the copy engine directly, where ordinary memory goes through the
 * staging ring): the same bits as from malloc'ed memory.  Large enough
 * (8 MiB) that the CUDA backend would stage it if it were pageable. */
static void test_pinned_source(gg_context **ctx, char devs[][32], int nd)
{
    const pcase c = {256, 192, 24, 1, -9999, {"window", "5", "offsets", "yes", "mask", "yes", NULL}};
    float *z = make_stack(c.W, c.H, c.n, c.has_nodata, c.nodata);
    const size_t bytes = (size_t)c.W * c.H * c.n * 8, np = (size_t)c.W * c.H;
    for (int d = 0; d < nd && z; d++) {
        float *pz = NULL;
        char err[512] = "";
        gg_status st = gg_host_alloc(ctx[d], bytes, (void **)&pz);
        CHECK(st == GG_OK && pz, "%s: gg_host_alloc of %zu bytes: %s", devs[d], bytes,
              gg_context_last_error(ctx[d]));
        if (st != GG_OK || !pz)
            continue;
        memcpy(pz, z, bytes);
        const stack a = {c.W, c.H, c.n, z, c.has_nodata, c.nodata, 0, 0};
        const stack b = {c.W, c.H, c.n, pz, c.has_nodata, c.nodata, 0, 0};
        result ra, rb;
        st = run_ptsel(ctx[d], &a, c.opts, 1 << 20, 1 << 20, &ra, err, sizeof err);
        CHECK(st == GG_OK, "%s pinned: ordinary-memory run: %s", devs[d], err);
        gg_status st2 = run_ptsel(ctx[d], &b, c.opts, 1 << 20, 1 << 20, &rb, err, sizeof err);
        CHECK(st2 == GG_OK, "%s pinned: page-locked run: %s", devs[d], err);
        size_t valid = 0;
        for (size_t k = 0; st == GG_OK && k < np; k++)
            valid += !isnan(ra.tau[k]);
        CHECK(st != GG_OK || valid > np / 2, "%s pinned: only %zu of %zu pixels valid", devs[d],
              valid, np);
        const int same = st == GG_OK && st2 == GG_OK && same_result(&ra, &rb, np);
        CHECK(same, "%s: the stack from page-locked memory gives other results", devs[d]);
        printf("  %-7s stack (%zu MiB) from gg_host_alloc memory: %s\n", devs[d], bytes >> 20,
               same ? "bit-identical" : "DIFFERENT");
        result_free(&ra); /* run_ptsel clears it first: safe after a failure too */
        result_free(&rb);
        gg_host_free(ctx[d], pz);
    }
    free(z);
}

/* Asynchronous runs (gg_op_submit_stack*, two in flight, collected one
 * behind): every band bit-identical to synchronous runs of the same
 * tiles, from band planes and interleaved windows, ordinary and
 * page-locked memory, uneven tiles (the device buffers grow between runs
 * in flight), with and without the filter. */
static void test_pipelined(gg_context **ctx, char devs[][32], int nd)
{
    const int W = 37, H = 29, n = 6;
    float *z = make_stack(W, H, n, 1, -9999.0);
    const size_t np = (size_t)W * H, bytes = np * n * 8;
    static const char *const plain[] = {"window", "5", NULL};
    static const char *const all[] = {"window", "7", "offsets", "yes", "mask", "yes", NULL};
    static const char *const filt[] = {"window", "5", "filter", "yes", "offsets", "yes", "mask",
                                       "yes", "conj", "2", NULL};
    static const char *const slc[] = {"window", "5", "slc", "yes", "mindist", "1.5", NULL};
    const struct {
        const char *name;
        const char *const *opts;
        int tw, th;
    } cases[] = {{"window 5, 9x7 tiles", plain, 9, 7},
                 {"offsets+mask, strips of 4 rows", all, 1 << 20, 4},
                 {"filter, 16x11 tiles", filt, 16, 11},
                 {"slc, 37x29 in one tile", slc, 1 << 20, 1 << 20}};
    for (int d = 0; d < nd && z; d++) {
        float *pz = NULL;
        if (gg_host_alloc(ctx[d], bytes, (void **)&pz) != GG_OK || !pz) {
            CHECK(0, "%s: gg_host_alloc: %s", devs[d], gg_context_last_error(ctx[d]));
            continue;
        }
        memcpy(pz, z, bytes);
        stack planes = {W, H, n, z, 1, -9999.0, 0, 0};
        stack il = interleave(&planes);
        int same_all = 1, ran = 0;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int layout = 0; layout < 3; layout++) { /* planes, pinned planes, interleaved */
                stack a = layout == 2 ? il : planes;
                if (layout == 1)
                    a.z = pz;
                stack b = a;
                b.pipelined = 1;
                result ra, rb;
                char err[512] = "";
                gg_status s1 = run_ptsel(ctx[d], &a, cases[c].opts, cases[c].tw, cases[c].th,
                                         &ra, err, sizeof err);
                gg_status s2 = run_ptsel(ctx[d], &b, cases[c].opts, cases[c].tw, cases[c].th,
                                         &rb, err, sizeof err);
                CHECK(s1 == GG_OK && s2 == GG_OK, "%s pipelined %s: %s", devs[d], cases[c].name,
                      err);
                size_t valid = 0;
                for (size_t k = 0; s1 == GG_OK && k < np; k++)
                    valid += !isnan(ra.tau[k]);
                CHECK(s1 != GG_OK || valid > np / 2, "%s pipelined %s: %zu of %zu valid", devs[d],
                      cases[c].name, valid, np);
                const int same = s1 == GG_OK && s2 == GG_OK && same_result(&ra, &rb, np) &&
                                 (!ra.filt || !memcmp(ra.filt, rb.filt, np * 8 * n));
                CHECK(same, "%s pipelined %s (%s): results differ from synchronous runs",
                      devs[d], cases[c].name,
                      layout == 0 ? "planes" : layout == 1 ? "page-locked" : "interleaved");
                same_all &= same;
                ran++;
                result_free(&ra);
                result_free(&rb);
            }
        printf("  %-7s %d pipelined runs (submit k + 1, collect k) vs synchronous: %s\n", devs[d],
               ran, same_all ? "bit-identical" : "DIFFERENT");
        free((void *)il.z);
        gg_host_free(ctx[d], pz);
    }
    free(z);
}

/* Misuse of the asynchronous calls is refused with its reason, and the
 * context is usable again once the runs are collected or the op freed. */
static void test_pipeline_bad_calls(gg_context *ctx)
{
    gg_op *op = NULL, *other = NULL;
    char err[512];
    if (gg_op_new("ptsel", &op, err, sizeof err) != GG_OK || gg_op_set(op, "window", "3") != GG_OK ||
        gg_op_new("ptsel", &other, err, sizeof err) != GG_OK ||
        gg_op_set(other, "window", "3") != GG_OK) {
        CHECK(0, "ptsel: %s", err);
        gg_op_free(op);
        gg_op_free(other);
        return;
    }
    gg_raster_info ii = {12, 10, 4, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK && gg_op_prepare(other, &ii, &oi) == GG_OK,
          "prepare: %s", gg_op_last_error(op));
    float *z = calloc((size_t)12 * 10 * 4 * 2, sizeof *z), tau[3][120];
    for (int i = 0; i < 12 * 10 * 4 * 2; i++)
        z[i] = (float)((i * 37) % 11) - 5.0f;
    gg_tile src = {z, GG_CFLOAT32, 12, 10, 12, 0, 0};
    gg_tile dst[3];
    for (int k = 0; k < 3; k++)
        dst[k] = (gg_tile){tau[k], GG_FLOAT32, 12, 10, 12, 0, 0};
    CHECK(gg_op_collect(ctx, op) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "no run in flight"),
          "collect with nothing in flight: '%s'", gg_op_last_error(op));
    CHECK(gg_op_submit_stack_interleaved(ctx, op, &src, 4, &dst[0], 1) == GG_OK &&
              gg_op_submit_stack_interleaved(ctx, op, &src, 4, &dst[1], 1) == GG_OK,
          "two submits: %s", gg_op_last_error(op));
    CHECK(gg_op_in_flight(op) == 2, "%d runs in flight, not 2", gg_op_in_flight(op));
    CHECK(gg_op_submit_stack_interleaved(ctx, op, &src, 4, &dst[2], 1) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "2 runs in flight already"),
          "a third submit: '%s'", gg_op_last_error(op));
    CHECK(gg_op_run_stack_interleaved(ctx, other, &src, 4, &dst[2], 1) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(other), "another op's runs in flight"),
          "another op on the busy context: '%s'", gg_op_last_error(other));
    CHECK(gg_op_run_stack_interleaved(ctx, op, &src, 4, &dst[2], 1) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "this op's runs in flight"),
          "a synchronous run of the op on its busy context: '%s'", gg_op_last_error(op));
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "runs in flight"),
          "prepare with runs in flight: '%s'", gg_op_last_error(op));
    CHECK(gg_op_collect(ctx, op) == GG_OK && gg_op_collect(ctx, op) == GG_OK &&
              gg_op_in_flight(op) == 0,
          "collect both: %s", gg_op_last_error(op));
    CHECK(gg_op_run_stack_interleaved(ctx, other, &src, 4, &dst[2], 1) == GG_OK,
          "the other op after the collects: %s", gg_op_last_error(other));
    int same = 1;
    for (int i = 0; i < 120; i++)
        same &= tau[0][i] == tau[2][i] && tau[1][i] == tau[2][i] && tau[2][i] >= 0.0f;
    CHECK(same, "collected runs differ from the synchronous one");
    /* freeing an op with a run in flight waits for it and frees the context */
    CHECK(gg_op_submit_stack_interleaved(ctx, op, &src, 4, &dst[0], 1) == GG_OK, "submit: %s",
          gg_op_last_error(op));
    gg_op_free(op);
    CHECK(gg_op_run_stack_interleaved(ctx, other, &src, 4, &dst[2], 1) == GG_OK,
          "the other op after freeing the busy one: %s", gg_op_last_error(other));
    free(z);
    gg_op_free(other);
}

/* gg_op_run_stack_interleaved refuses what it cannot read, with the
 * reason, and writes nothing. */
static void test_interleaved_bad_calls(gg_context *ctx)
{
    gg_op *op = NULL;
    char err[512];
    if (gg_op_new("ptsel", &op, err, sizeof err) != GG_OK || gg_op_set(op, "window", "3") != GG_OK) {
        CHECK(0, "ptsel: %s", err);
        gg_op_free(op);
        return;
    }
    gg_raster_info ii = {12, 10, 4, GG_CFLOAT32, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "prepare: %s", gg_op_last_error(op));
    float *z = calloc((size_t)12 * 10 * 4 * 2, sizeof *z), tau[120];
    for (int i = 0; i < 12 * 10 * 4 * 2; i++)
        z[i] = (float)((i * 37) % 11) - 5.0f;
    for (int i = 0; i < 120; i++)
        tau[i] = 42.0f;
    gg_tile src = {z, GG_CFLOAT32, 12, 10, 12, 0, 0}, dst = {tau, GG_FLOAT32, 12, 10, 12, 0, 0};
    gg_tile bad = src;
    CHECK(gg_op_run_stack_interleaved(ctx, op, &src, 3, &dst, 1) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "3 input and 1 output tiles given, the op takes 4"),
          "interleaved, 3 bands for 4: '%s'", gg_op_last_error(op));
    bad.stride = 11;
    CHECK(gg_op_run_stack_interleaved(ctx, op, &bad, 4, &dst, 1) == GG_ERR_ARGUMENT &&
              strstr(gg_op_last_error(op), "source tile does not cover"),
          "interleaved, stride < width: '%s'", gg_op_last_error(op));
    bad = src;
    bad.height = 9;
    CHECK(gg_op_run_stack_interleaved(ctx, op, &bad, 4, &dst, 1) == GG_ERR_ARGUMENT,
          "interleaved, a window short of a row accepted");
    bad = src;
    bad.type = GG_FLOAT32;
    CHECK(gg_op_run_stack_interleaved(ctx, op, &bad, 4, &dst, 1) == GG_ERR_ARGUMENT,
          "interleaved, Float32 samples accepted");
    CHECK(gg_op_run_stack_interleaved(ctx, op, NULL, 4, &dst, 1) == GG_ERR_ARGUMENT,
          "interleaved, no source accepted");
    int untouched = 1;
    for (int i = 0; i < 120; i++)
        untouched &= tau[i] == 42.0f;
    CHECK(untouched, "a refused interleaved call wrote output");
    CHECK(gg_op_run_stack_interleaved(ctx, op, &src, 4, &dst, 1) == GG_OK, "interleaved: %s",
          gg_op_last_error(op));
    size_t valid = 0;
    for (int i = 0; i < 120; i++)
        valid += tau[i] >= 0.0f && tau[i] <= 1.0f;
    CHECK(valid == 120, "interleaved: %zu of 120 tau_max in [0, 1]", valid);
    free(z);
    gg_op_free(op);
}

/* method=pairs (the paper's O(n^2) pair loop, same kernel) and the prefix
 * form are the same function: they agree to float rounding. */
static void test_pairs_method(gg_context **ctx, char devs[][32], int nd)
{
    const int W = 19, H = 13, n = 11;
    float *z = make_stack(W, H, n, 0, 0);
    const stack s = {W, H, n, z, 0, 0, 0, 0};
    const size_t np = (size_t)W * H;
    for (int d = 0; d < nd; d++)
        for (int slc = 0; slc < 2; slc++) {
            const char *mode = slc ? "yes" : "no";
            const char *prefix[] = {"window", "5", "slc", mode, NULL};
            const char *pairs[] = {"window", "5", "slc", mode, "method", "pairs", NULL};
            result a, b;
            char err[512] = "";
            gg_status s1 = run_ptsel(ctx[d], &s, prefix, 1 << 20, 1 << 20, &a, err, sizeof err);
            gg_status s2 = run_ptsel(ctx[d], &s, pairs, 7, 5, &b, err, sizeof err);
            CHECK(s1 == GG_OK && s2 == GG_OK, "%s method=pairs runs: %s", devs[d], err);
            if (s1 == GG_OK && s2 == GG_OK) {
                size_t mm;
                const double diff = max_abs_diff_f(a.tau, b.tau, np, &mm);
                CHECK(diff <= 1e-5 && mm == 0, "%s %s: pairs vs prefix differ by %.3g (%zu masks)",
                      devs[d], slc ? "slc" : "ifg", diff, mm);
                printf("  %-7s %s: method=pairs vs prefix: max |dtau| %.2e\n", devs[d],
                       slc ? "slc" : "ifg", diff);
            }
            result_free(&a);
            result_free(&b);
        }
    free(z);
}

static void expect_bad_set(const char *key, const char *value, const char *msg)
{
    gg_op *op = NULL;
    char err[512];
    if (gg_op_new("ptsel", &op, err, sizeof err) != GG_OK) {
        CHECK(0, "ptsel: %s", err);
        return;
    }
    CHECK(gg_op_set(op, key, value) == GG_ERR_ARGUMENT, "ptsel %s=%s accepted", key, value);
    CHECK(strstr(gg_op_last_error(op), msg) != NULL, "ptsel %s=%s: message '%s' lacks '%s'", key,
          value, gg_op_last_error(op), msg);
    gg_op_free(op);
}

static void expect_bad_prepare(const char *key, const char *value, int W, int H, int bands,
                               gg_type type, const char *msg)
{
    gg_op *op = NULL;
    char err[512];
    gg_op_new("ptsel", &op, err, sizeof err);
    if (key)
        CHECK(gg_op_set(op, key, value) == GG_OK, "ptsel %s=%s: %s", key, value,
              gg_op_last_error(op));
    gg_raster_info ii = {W, H, bands, type, {0, 1, 0, 0, 0, 1}, 0, 0, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) != GG_OK, "ptsel %s=%s on %dx%dx%d accepted", key ? key : "",
          value ? value : "", W, H, bands);
    CHECK(strstr(gg_op_last_error(op), msg) != NULL, "ptsel prepare: message '%s' lacks '%s'",
          gg_op_last_error(op), msg);
    gg_op_free(op);
}

static void test_bad_options(void)
{
    const char *odd = "ptsel: window must be an odd integer >= 3";
    expect_bad_set("window", "4", odd);
    expect_bad_set("window", "1", odd);
    expect_bad_set("window", "-3", odd);
    expect_bad_set("window", "abc", odd);
    expect_bad_set("mindist", "-1", "mindist");
    expect_bad_set("mindist", "x", "mindist");
    expect_bad_set("threshold", "0", "threshold");
    expect_bad_set("threshold", "1.5", "threshold");
    expect_bad_set("threshold", "nan", "threshold");
    expect_bad_set("conj", "0", "conj");
    expect_bad_set("conj", "a", "conj");
    expect_bad_set("conj", "3,,4", "conj");
    expect_bad_set("conj", "3,", "conj");
    expect_bad_set("conj", "-2", "conj");
    expect_bad_set("slc", "maybe", "slc");
    expect_bad_set("offsets", "2", "offsets");
    expect_bad_set("mask", "x", "mask");
    expect_bad_set("filter", "maybe", "filter");
    expect_bad_set("nosuch", "1", "unknown option");

    expect_bad_prepare(NULL, NULL, 20, 20, 5, GG_FLOAT32,
                       "ptsel: input must be complex (CFloat32 interferograms or SLCs)");
    expect_bad_prepare(NULL, NULL, 20, 20, 1, GG_CFLOAT32, "ptsel: needs at least 2 epochs, got 1");
    expect_bad_prepare("window", "11", 20, 9, 3, GG_CFLOAT32, "window 11 is larger than the 20x9 image");
    expect_bad_prepare("conj", "2,7", 20, 20, 5, GG_CFLOAT32, "conj band 7 out of range");
    expect_bad_prepare("mindist", "7.1", 20, 20, 5, GG_CFLOAT32, "excludes every neighbour");

    /* what the op tells about itself */
    const char *const *names = gg_op_names();
    int found = 0;
    for (int i = 0; names[i]; i++)
        found |= !strcmp(names[i], "ptsel");
    CHECK(found, "ptsel missing from gg_op_names");
    CHECK(gg_op_input_count("ptsel") == -1, "ptsel input count %d", gg_op_input_count("ptsel"));
    int nopt = 0;
    const gg_option *opts = gg_op_options("ptsel", &nopt);
    CHECK(opts && nopt > 2 && !strcmp(opts[0].key, "window") && opts[0].kind == GG_OPTION_INT &&
              !strcmp(opts[0].default_value, "11") && !strcmp(opts[0].flag, "-window") &&
              !strcmp(opts[nopt - 1].key, "dstnodata"),
          "ptsel option table");
    gg_op *op = NULL;
    char err[512];
    gg_op_new("ptsel", &op, err, sizeof err);
    gg_op_set(op, "offsets", "yes");
    gg_op_set(op, "mask", "yes");
    gg_op_set(op, "conj", "1, 3");
    gg_raster_info ii = {30, 20, 4, GG_CFLOAT32, {5, 2, 0, 9, 0, -2}, 1, 1, 0}, oi;
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "prepare: %s", gg_op_last_error(op));
    CHECK(gg_op_is_stack(op) && oi.bands == 4 && oi.width == 30 && oi.height == 20 &&
              oi.type == GG_FLOAT32 && oi.has_geotransform && oi.geotransform[0] == 5,
          "output description");
    const char *want[] = {"tau_max", "best_dx", "best_dy", "ps_mask"};
    for (int b = 0; b < 4; b++)
        CHECK(!strcmp(gg_op_band_name(op, b), want[b]), "band %d named %s", b,
              gg_op_band_name(op, b));
    CHECK(gg_op_band_type(op, 0) == GG_FLOAT32 && gg_op_band_type(op, 2) == GG_FLOAT32 &&
              gg_op_band_type(op, 3) == GG_BYTE,
          "band types");
    /* input nodata 0 is a valid tau: float bands stay NaN */
    CHECK(isnan(gg_op_band_nodata(op, 0)) && isnan(gg_op_band_nodata(op, 1)) &&
              gg_op_band_nodata(op, 3) == 255,
          "band nodata %g %g %g", gg_op_band_nodata(op, 0), gg_op_band_nodata(op, 1),
          gg_op_band_nodata(op, 3));
    CHECK(gg_op_bytes_per_pixel(op) > 4 * 8, "bytes per pixel %g", gg_op_bytes_per_pixel(op));
    const double bpp = gg_op_bytes_per_pixel(op);
    gg_window dw = {10, 5, 4, 3}, sw;
    gg_op_source_window(op, &dw, &sw);
    CHECK(sw.x0 == 5 && sw.y0 == 0 && sw.width == 14 && sw.height == 13, "source window %d %d %dx%d",
          sw.x0, sw.y0, sw.width, sw.height);
    gg_op_free(op);

    /* filter=yes: n CFloat32 bands after the others, the source window
     * grown by 2(r/2) */
    gg_op_new("ptsel", &op, err, sizeof err);
    gg_op_set(op, "offsets", "yes");
    gg_op_set(op, "mask", "yes");
    gg_op_set(op, "filter", "yes");
    gg_op_set(op, "dstnodata", "-1");
    CHECK(gg_op_prepare(op, &ii, &oi) == GG_OK, "prepare: %s", gg_op_last_error(op));
    CHECK(oi.bands == 8 && oi.type == GG_FLOAT32, "filter: %d bands", oi.bands);
    for (int b = 0; b < 4; b++)
        CHECK(!strcmp(gg_op_band_name(op, b), want[b]), "band %d named %s", b,
              gg_op_band_name(op, b));
    for (int b = 4; b < 8; b++) {
        char name[32];
        snprintf(name, sizeof name, "filtered_%d", b - 3);
        CHECK(!strcmp(gg_op_band_name(op, b), name) && gg_op_band_type(op, b) == GG_CFLOAT32 &&
                  isnan(gg_op_band_nodata(op, b)),
              "band %d: %s, type %d, nodata %g", b, gg_op_band_name(op, b), gg_op_band_type(op, b),
              gg_op_band_nodata(op, b));
    }
    CHECK(gg_op_band_nodata(op, 0) == -1 && gg_op_band_nodata(op, 3) == 255, "filter: nodata");
    CHECK(gg_op_bytes_per_pixel(op) > bpp + 4 * 8, "filter: bytes per pixel %g vs %g",
          gg_op_bytes_per_pixel(op), bpp);
    gg_op_source_window(op, &dw, &sw);
    CHECK(sw.x0 == 0 && sw.y0 == 0 && sw.width == 24 && sw.height == 18,
          "filter: source window %d %d %dx%d", sw.x0, sw.y0, sw.width, sw.height);
    gg_op_free(op);
}

/* -------------------------------------------------------- psps Houston */

typedef struct {
    int d1, d2;
    char name[256];
} igram;

static int cmp_secondary(const void *a, const void *b)
{
    const igram *x = a, *y = b;
    const int ref = 20180115;
    const int sx = x->d1 == ref ? x->d2 : x->d1, sy = y->d1 == ref ? y->d2 : y->d1;
    return (sx > sy) - (sx < sy);
}

static void psps_dir(char *buf, size_t len)
{
    const char *env = getenv("GG_PSPS_DIR");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return;
    }
    /* this file is <repo>/tests/c/test_ptsel.c; the data is <repo>/../shared/data */
    snprintf(buf, len, "%s", __FILE__);
    char *cut = strstr(buf, "tests/c/test_ptsel.c");
    if (cut)
        snprintf(cut, len - (size_t)(cut - buf), "../shared/data/psps_houston");
    else
        snprintf(buf, len, "../shared/data/psps_houston");
}

static void test_psps(gg_context **ctx, char devs[][32], int nd)
{
    char dir[1024], path[1300];
    psps_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/igrams", dir);
    DIR *dh = opendir(path);
    if (!dh) {
        printf("SKIP psps regression: %s not found\n", path);
        return;
    }
    igram ig[128];
    int n = 0;
    for (struct dirent *e; (e = readdir(dh)) != NULL;) {
        int a, b;
        char tail[8] = "";
        if (sscanf(e->d_name, "%8d_%8d.%3s", &a, &b, tail) == 3 && !strcmp(tail, "int") && n < 128) {
            ig[n].d1 = a;
            ig[n].d2 = b;
            snprintf(ig[n].name, sizeof ig[n].name, "%s", e->d_name);
            n++;
        }
    }
    closedir(dh);
    CHECK(n == 92, "psps: %d interferograms found in %s, expected 92", n, path);
    if (n < 2)
        return;
    /* chronological by secondary date; EARLIER_LATER names: the
     * DATE_20180115 ones have the other orientation and are conjugated */
    qsort(ig, (size_t)n, sizeof ig[0], cmp_secondary);
    const int W = 200, H = 200;
    const size_t np = (size_t)W * H;
    float *z = malloc(np * n * 8);
    char conj[1024] = "";
    int nconj = 0, ok = 1;
    for (int b = 0; b < n && ok; b++) {
        snprintf(path, sizeof path, "%s/igrams/%s", dir, ig[b].name);
        FILE *f = fopen(path, "rb");
        ok = f && fread(z + 2 * (size_t)b * np, 8, np, f) == np; /* little-endian, as the host */
        if (f)
            fclose(f);
        CHECK(ok, "psps: cannot read %s", path);
        CHECK(ig[b].d1 == 20180115 || ig[b].d2 == 20180115, "psps: %s lacks the reference date",
              ig[b].name);
        if (ig[b].d2 == 20180115) {
            snprintf(conj + strlen(conj), sizeof conj - strlen(conj), "%s%d", nconj ? "," : "", b + 1);
            nconj++;
        }
    }
    if (!ok) {
        free(z);
        return;
    }
    CHECK(nconj == 29, "psps: %d DATE_20180115 interferograms, expected 29", nconj);
    const char *opts[] = {"window", "11", "conj", conj, NULL};

    /* 60x60 crop at rows/cols 70..129, against the O(n^2) reference */
    const int CW = 60, C0 = 70;
    const size_t cnp = (size_t)CW * CW;
    float *cz = malloc(cnp * n * 8);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < CW; y++)
            memcpy(cz + 2 * ((size_t)b * cnp + (size_t)y * CW),
                   z + 2 * ((size_t)b * np + (size_t)(C0 + y) * W + C0), (size_t)CW * 8);
    const stack crop = {CW, CW, n, cz, 0, 0, 0, 0};
    ref_opts o;
    fill_ref_opts(opts, n, &o);
    double t0 = now_s();
    double complex *u = ref_unit(&crop, &o);
    double *ref = ref_ptsel(&crop, &o, u);
    double complex *fref = ref_filter(&crop, &o, u, ref);
    size_t rps = 0, rvalid = 0;
    for (size_t k = 0; k < cnp; k++)
        if (!isnan(ref[k])) {
            rvalid++;
            rps += ref[k] >= 0.71;
        }
    printf("  psps 60x60 crop, n = %d, window 11: float64 O(n^2) reference in %.1f s, "
           "tau_max >= 0.71 on %.2f %% (%zu of %zu)\n",
           n, now_s() - t0, 100.0 * rps / (rvalid ? rvalid : 1), rps, rvalid);
    for (int d = 0; d < nd; d++) {
        result r;
        char err[512] = "";
        t0 = now_s();
        gg_status st = run_ptsel(ctx[d], &crop, opts, 1 << 20, 1 << 20, &r, err, sizeof err);
        const double dt = now_s() - t0;
        CHECK(st == GG_OK, "psps crop %s: %s", devs[d], err);
        if (st == GG_OK) {
            size_t mm, ps = 0, valid = 0;
            const double e = max_abs_diff(r.tau, ref, cnp, &mm);
            for (size_t k = 0; k < cnp; k++)
                if (!isnan(r.tau[k])) {
                    valid++;
                    ps += r.tau[k] >= 0.71f;
                }
            CHECK(e <= TOL && mm == 0, "psps crop %s: max |tau - ref| %.3g, %zu nodata mismatches",
                  devs[d], e, mm);
            printf("  %-7s psps crop: max |err| %.2e, >= 0.71 on %.2f %%, %.3f s\n", devs[d], e,
                   100.0 * ps / (valid ? valid : 1), dt);
        }
        result_free(&r);
        /* the filtered interferograms, uneven tiles */
        const char *fopts[] = {"window", "11", "conj", conj, "filter", "yes", NULL};
        t0 = now_s();
        st = run_ptsel(ctx[d], &crop, fopts, 37, 23, &r, err, sizeof err);
        const double fdt = now_s() - t0;
        CHECK(st == GG_OK && r.filt, "psps crop filter %s: %s", devs[d], err);
        if (st == GG_OK && r.filt) {
            size_t mm;
            double maxmod;
            const double e = max_cdiff(r.filt, fref, cnp * n, &mm, &maxmod);
            CHECK(e <= TOL && mm == 0 && maxmod <= 1 + 1e-6,
                  "psps crop filter %s: max |err| %.3g, %zu nodata mismatches, max |f| %.9g",
                  devs[d], e, mm, maxmod);
            printf("  %-7s psps crop filter: max |err| re/im %.2e, %.3f s\n", devs[d], e, fdt);
        }
        result_free(&r);
    }
    free(fref);
    free(ref);
    free(u);

    /* the whole 200x200 stack on each device (the CPU's answer reported) */
    const stack full = {W, H, n, z, 0, 0, 0, 0};
    result base = {0};
    for (int d = 0; d < nd; d++) {
        result r;
        char err[512] = "";
        t0 = now_s();
        gg_status st = run_ptsel(ctx[d], &full, opts, 1 << 20, 1 << 20, &r, err, sizeof err);
        const double dt = now_s() - t0;
        CHECK(st == GG_OK, "psps full %s: %s", devs[d], err);
        if (st != GG_OK) {
            result_free(&r);
            continue;
        }
        size_t ps = 0, valid = 0;
        for (size_t k = 0; k < np; k++)
            if (!isnan(r.tau[k])) {
                valid++;
                ps += r.tau[k] >= 0.71f;
            }
        printf("  %-7s psps full 200x200: tau_max >= 0.71 on %.3f %% (%zu of %zu), %.3f s\n",
               devs[d], 100.0 * ps / (valid ? valid : 1), ps, valid, dt);
        if (!base.tau) {
            base = r;
            continue;
        }
        size_t mm;
        const double e = max_abs_diff_f(r.tau, base.tau, np, &mm);
        CHECK(e <= TOL && mm == 0, "psps full %s vs %s: max diff %.3g, %zu nodata mismatches",
              devs[d], devs[0], e, mm);
        result_free(&r);
    }
    result_free(&base);
    free(cz);
    free(z);
}

int main(void)
{
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    gg_context *ctx[MAXDEV] = {0};
    int nok = 0;
    char okdevs[MAXDEV][32];
    for (int d = 0; d < nd; d++) {
        char err[512];
        gg_context *c = NULL;
        if (gg_context_create(devs[d], &c, err, sizeof err) != GG_OK) {
            CHECK(0, "%s: %s", devs[d], err);
            continue;
        }
        printf("device %s: %s\n", devs[d], gg_context_device_name(c));
        ctx[nok] = c;
        snprintf(okdevs[nok++], 32, "%.31s", devs[d]);
    }
    test_cases(ctx, okdevs, nok);
    test_conj_identity(ctx, okdevs, nok);
    test_pairs_method(ctx, okdevs, nok);
    test_split_contexts(ctx, okdevs, nok);
    test_pinned_source(ctx, okdevs, nok);
    test_pipelined(ctx, okdevs, nok);
    test_filter(ctx, okdevs, nok);
    test_bad_options();
    if (nok) {
        test_interleaved_bad_calls(ctx[0]);
        test_pipeline_bad_calls(ctx[0]);
    }
    test_psps(ctx, okdevs, nok);
    for (int d = 0; d < nok; d++)
        gg_context_destroy(ctx[d]);
    return check_summary("test_ptsel");
}
