/*
 * gg_warp_rows.c -- gdalwarp's approximate transformer reproduced as row
 * pieces for the device (gg_warp_scene.h).
 *
 * MIT licence.
 */
#include "gg_warp_scene.h"

#include "gdal_alg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* At -et > 0 gdalwarp's warp kernel transforms each output row of a chunk
 * through GDAL's approximate transformer (GDALApproxTransform): the exact
 * transform at the row's first, middle and last pixel centres; where the
 * middle is within -et (the sum of its x and y errors, source pixels) of
 * the line between the ends, every pixel of the row is on that line, else
 * the row is halved ([0, mid) and [mid, n)) and each half treated alike,
 * down to runs of 5 pixels or fewer, which are transformed exactly (as is
 * a run where an exact transform fails).  This reproduces those pieces for
 * a chunk as wide as the output, as row pieces for the device (geogpu.h,
 * grid step 0): gdalwarp's coordinates to the bit, a few exact transforms
 * per row instead of one per pixel. */
#define PIECE GG_WARP_PIECE /* doubles per row piece */

typedef struct rowpieces {
    void *tr;
    double y, et;
    double xoff;       /* pixel i's position: i + xoff (0.5 centres, 0 or 1 corners) */
    int retry;         /* gdalwarp's exact retry near the source's edges */
    int src_w, src_h;  /* the source raster (gdalwarp's one-chunk window) */
    double *pc;      /* pieces, PIECE doubles each */
    double *ex;      /* exact (x, y) pairs */
    size_t npc, cap_pc, nex, cap_ex;
    int oom;
} rowpieces;

static double *take(double **buf, size_t *n, size_t *cap, size_t more, int *oom)
{
    if (*n + more > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *n + more)
            c *= 2;
        double *b = realloc(*buf, c * sizeof(double));
        if (!b) {
            *oom = 1;
            return NULL;
        }
        *buf = b;
        *cap = c;
    }
    double *p = *buf + *n;
    *n += more;
    return p;
}

/* Exact transforms of pixel positions i0 + k + xoff (k < n) of the row:
 * a piece of positions one by one (NaN where the transform fails). */
static void exact_piece(rowpieces *rp, int i0, int n)
{
    double *q = take(&rp->pc, &rp->npc, &rp->cap_pc, PIECE, &rp->oom);
    double *e = take(&rp->ex, &rp->nex, &rp->cap_ex, 2 * (size_t)n, &rp->oom);
    int *ok = malloc(sizeof(int) * (size_t)n);
    double *z = calloc((size_t)n, sizeof(double));
    if (!q || !e || !ok || !z) {
        rp->oom = 1;
        free(ok);
        free(z);
        return;
    }
    q[0] = i0;
    q[1] = n;
    q[2] = i0;
    q[3] = (double)(e - rp->ex); /* made absolute when the table is laid out */
    q[4] = 0;
    q[5] = q[6] = NAN;
    /* x and y interleaved in e: transform through two scratch halves */
    double *x = malloc(sizeof(double) * 2 * (size_t)n);
    if (!x) {
        rp->oom = 1;
        free(ok);
        free(z);
        return;
    }
    double *y = x + n;
    for (int k = 0; k < n; k++) {
        x[k] = i0 + k + rp->xoff;
        y[k] = rp->y;
    }
    (void)z;
    ggw_to_source(rp->tr, n, x, y, ok);
    for (int k = 0; k < n; k++) {
        const int good = ok[k] && isfinite(x[k]) && isfinite(y[k]);
        e[2 * k] = good ? x[k] : NAN;
        e[2 * k + 1] = good ? y[k] : NAN;
    }
    free(x);
    free(ok);
    free(z);
}

/* Pixels first .. first+n-1 of a linear piece whose pixel base is at
 * (x0, y0). */
static void emit_linear(rowpieces *rp, int first, int n, int base, double x0, double y0,
                        double dx, double dy)
{
    double *q = take(&rp->pc, &rp->npc, &rp->cap_pc, PIECE, &rp->oom);
    if (!q)
        return;
    q[0] = first;
    q[1] = n;
    q[2] = base;
    q[3] = x0;
    q[4] = y0;
    q[5] = dx;
    q[6] = dy;
}

/* Whether gdalwarp's warp kernel transforms pixel position (x, y) again
 * exactly (GWKCheckAndComputeSrcOffsets): an approximate position that
 * misses the source window by less than a pixel is retried alone. */
static int retried(const rowpieces *rp, double x, double y)
{
    if (isnan(x) || isnan(y))
        return 0;
    if (x < 0)
        return x > -1;
    if (y < 0)
        return y > -1;
    if (x + 1e-10 > rp->src_w || y + 1e-10 > rp->src_h)
        return x + 1e-10 < rp->src_w + 1 && y + 1e-10 < rp->src_h + 1;
    return 0;
}

/* Pixels k of a linear piece (value a + b * k) near the band lo .. hi:
 * [*k0, *k1], clipped to 0 .. n-1; empty when *k0 > *k1. */
static void band_pixels(double a, double b, double lo, double hi, int n, int *k0, int *k1)
{
    if (b == 0) {
        *k0 = a > lo - 1 && a < hi + 1 ? 0 : n;
        *k1 = n - 1;
        return;
    }
    const double u = (lo - a) / b, v = (hi - a) / b;
    const double kmin = floor(fmin(u, v)) - 2, kmax = ceil(fmax(u, v)) + 2;
    *k0 = kmin < 0 ? 0 : kmin > n ? n : (int)kmin;
    *k1 = kmax > n - 1 ? n - 1 : kmax < -1 ? -1 : (int)kmax;
}

/* A linear piece of the approximate transformer, split around the pixels
 * gdalwarp transforms again exactly. */
static void linear_piece(rowpieces *rp, int i0, int n, double x0, double y0, double dx,
                         double dy)
{
    if (!rp->retry) {
        emit_linear(rp, i0, n, i0, x0, y0, dx, dy);
        return;
    }
    /* candidates: near x = 0, x = width, y = 0, y = height */
    int lo[4], hi[4];
    band_pixels(x0, dx, -1, 0, n, &lo[0], &hi[0]);
    band_pixels(x0, dx, rp->src_w, rp->src_w + 1, n, &lo[1], &hi[1]);
    band_pixels(y0, dy, -1, 0, n, &lo[2], &hi[2]);
    band_pixels(y0, dy, rp->src_h, rp->src_h + 1, n, &lo[3], &hi[3]);
    int start = 0; /* first pixel not yet emitted */
    for (int k = 0; k < n; k++) {
        int cand = 0;
        for (int b = 0; b < 4 && !cand; b++)
            cand = k >= lo[b] && k <= hi[b];
        if (!cand) { /* skip to the next candidate range */
            int next = n;
            for (int b = 0; b < 4; b++)
                if (lo[b] > k && lo[b] <= hi[b] && lo[b] < next)
                    next = lo[b];
            k = next - 1;
            continue;
        }
        const double d = (double)k;
        if (!retried(rp, x0 + dx * d, y0 + dy * d))
            continue;
        int e = k + 1; /* a run of retried pixels */
        while (e < n && retried(rp, x0 + dx * (double)e, y0 + dy * (double)e))
            e++;
        if (k > start)
            emit_linear(rp, i0 + start, k - start, i0, x0, y0, dx, dy);
        exact_piece(rp, i0 + k, e - k);
        start = e;
        k = e - 1;
    }
    if (start < n)
        emit_linear(rp, i0 + start, n - start, i0, x0, y0, dx, dy);
}

/* Exact transforms of up to 3 pixel positions; 1 when all succeed. */
static int transform3(rowpieces *rp, int n, const int *i, double *x, double *y)
{
    double z[3] = {0, 0, 0};
    int ok[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) {
        x[k] = i[k] + rp->xoff;
        y[k] = rp->y;
    }
    (void)z;
    ggw_to_source(rp->tr, n, x, y, ok);
    for (int k = 0; k < n; k++)
        if (!ok[k] || !isfinite(x[k]) || !isfinite(y[k]))
            return 0;
    return 1;
}

/* Pixels i0 .. i0+n-1 (n > 5) with the exact positions of the first,
 * middle ((n-1)/2) and last in sx, sy. */
static void approx_run(rowpieces *rp, int i0, int n, const double *sx, const double *sy)
{
    const int mid = (n - 1) / 2;
    const double span = (double)(n - 1);
    const double dx = (sx[2] - sx[0]) / span, dy = (sy[2] - sy[0]) / span;
    const double err = fabs((sx[0] + dx * mid) - sx[1]) + fabs((sy[0] + dy * mid) - sy[1]);
    if (!(err > rp->et)) {
        linear_piece(rp, i0, n, sx[0], sy[0], dx, dy);
        return;
    }
    const int nl = mid, nr = n - mid;
    const int base_l = nl <= 5, base_r = nr <= 5;
    int pts[3], m = 0;
    if (!base_l) {
        pts[m++] = i0 + (nl - 1) / 2;
        pts[m++] = i0 + nl - 1;
    }
    if (!base_r)
        pts[m++] = i0 + mid + (nr - 1) / 2;
    double mx[3], my[3];
    if (m > 0 && !transform3(rp, m, pts, mx, my)) {
        exact_piece(rp, i0, n);
        return;
    }
    if (base_l)
        exact_piece(rp, i0, nl);
    else {
        const double lx[3] = {sx[0], mx[0], mx[1]}, ly[3] = {sy[0], my[0], my[1]};
        approx_run(rp, i0, nl, lx, ly);
    }
    if (base_r)
        exact_piece(rp, i0 + mid, nr);
    else {
        const int k = base_l ? 0 : 2;
        const double rx[3] = {sx[1], mx[k], sx[2]}, ry[3] = {sy[1], my[k], sy[2]};
        approx_run(rp, i0 + mid, nr, rx, ry);
    }
}

/* The row pieces of a block (grid step 0): pixel centres; with corners
 * (average) the rows of corners (x, y), then of corners (x + 1, y + 1),
 * which gdalwarp's average transforms without its edge retry.  0, or -1
 * out of memory. */
int ggw_row_pieces(double et, void *tr, int out_w, int src_w, int src_h, int corners, wpart *p,
                   int y0, int rows)
{
    rowpieces rp = {.tr = tr, .et = et, .src_w = src_w, .src_h = src_h, .retry = !corners};
    const int total_rows = corners ? 2 * rows : rows;
    size_t *first = malloc(sizeof(size_t) * ((size_t)total_rows + 1));
    if (!first)
        return -1;
    const int n = out_w;
    for (int r = 0; r < total_rows && !rp.oom; r++) {
        first[r] = rp.npc / PIECE;
        const double off = !corners ? 0.5 : r < rows ? 0.0 : 1.0;
        rp.xoff = off;
        rp.y = y0 + r % rows + off;
        const int ends[3] = {0, (n - 1) / 2, n - 1};
        double sx[3], sy[3];
        if (n <= 5 || !transform3(&rp, 3, ends, sx, sy))
            exact_piece(&rp, 0, n);
        else
            approx_run(&rp, 0, n, sx, sy);
    }
    first[total_rows] = rp.npc / PIECE;
    const size_t head = (size_t)total_rows + 1, total = head + rp.npc + rp.nex;
    int rc = rp.oom ? -1 : 0;
    if (!rc && p->nodes_cap < total) {
        free(p->nodes);
        p->nodes = malloc(total * sizeof(double));
        p->nodes_cap = p->nodes ? total : 0;
        if (!p->nodes)
            rc = -1;
    }
    if (!rc) {
        for (int r = 0; r <= total_rows; r++)
            p->nodes[r] = (double)first[r];
        memcpy(p->nodes + head, rp.pc, rp.npc * sizeof(double));
        memcpy(p->nodes + head + rp.npc, rp.ex, rp.nex * sizeof(double));
        for (size_t k = 0; k < rp.npc / PIECE; k++) {
            double *q = p->nodes + head + PIECE * k;
            if (isnan(q[5]))
                q[3] += (double)(head + rp.npc);
        }
        p->step = 0;
        p->gnx = (int)total;
        p->gny = total_rows;
    }
    free(first);
    free(rp.pc);
    free(rp.ex);
    return rc;
}
