/*
 * ptsel.c -- PtSel persistent-scatterer selection (a stack op): for every
 * pixel C, tau_max = the maximum temporal coherence of the arcs (C, N) to
 * its neighbours N in an r x r search window.
 *
 * Conventions (docs: notes/ptsel_and_coherence.md §1):
 *   - input: n CFloat32 bands.  Default: n single-reference interferograms
 *     of one orientation (conj=... harmonises mixed ones); band order is
 *     the order i<j of the pair network: chronological by secondary date,
 *     with the common reference counted after every band (the formula
 *     below places it last).  slc=yes: n coregistered SLCs, in order.
 *   - u = z/|z| per sample; zero, NaN/Inf or real part == nodata give u = 0
 *     (invalid); a_i = u_C,i conj(u_N,i); m = epochs valid at both ends.
 *   - interferograms: tau = |sum_i a_i + sum_{i<j} a_i conj(a_j)| / (m(m+1)/2)
 *     (the paper's C(n+1,2)-pair network, reference last), needs m >= 1;
 *     SLCs: tau = |sum_{k<l} a_k conj(a_l)| / (m(m-1)/2), needs m >= 2.
 *     Both in O(n) with a running prefix (ptsel_kernels.h); tau in [0, 1].
 *     tau(C,N) = tau(N,C): each arc is computed once, from the centre that
 *     has the other end in its forward half window (ptsel_kernels.h).
 *   - neighbours: |dx|, |dy| <= r/2, inside the image, not the centre and
 *     not closer than mindist (dx^2+dy^2 < mindist^2 excluded).
 *   - tau_max = max over valid arcs (no valid arc: nodata); best_dx/best_dy
 *     = offset of the first maximum in row-major window order; ps_mask = 1
 *     where tau_max >= threshold, 0 below, 255 nodata.
 *   - filter=yes (the paper's §6.4 coherence-weighted filter) appends n
 *     CFloat32 bands filtered_1 .. filtered_n (1-based stack band numbers),
 *     after tau_max [best_dx, best_dy] [ps_mask]:
 *         filtered_i(C) = sum_N w(N) u_i(N) / sum_{N: u_i(N) valid} w(N)
 *     over every pixel N of C's r x r window inside the image, C itself
 *     included and mindist not applied; u_i = the unit phasor of band i as
 *     above (after conj; 0 when invalid, so an invalid sample adds nothing
 *     and its weight is not counted for that band); w(N) = tau_max(N) of
 *     this op (nodata: 0).  A complex mean phasor (|.| <= 1), not
 *     renormalised; in slc mode the same on the SLC phasors.  Denominator
 *     0 (no valid weighted neighbour): NaN + NaN i.  Nodata of these bands
 *     is always NaN (dstnodata is for the real-valued bands).
 *     Needs tau_max on the output window grown by r/2, hence the stack on
 *     the window grown by 2(r/2): the source window grows by that much;
 *     tau_max is computed on the grown (image-clipped) window into device
 *     scratch with the same kernel, so the tau_max, best_dx/dy and ps_mask
 *     of the output window are bit-identical to a run without the filter;
 *     then the two box sums, separated (ptsel_kernels.h): row sums per
 *     column, window row and band, then per output pixel and band their
 *     sums over the window rows and the quotient.
 *
 * MIT licence.
 */
#include "../op.h"
#include "../kernel_ids.h"
#include "ptsel_params.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    int window;
    double mindist, threshold;
    int slc, offsets, mask;
    int filter;   /* append the coherence-weighted filtered bands */
    char *fnames; /* their names, NAME_LEN apart (after prepare) */
    int pairs; /* method=pairs: the paper's O(n^2) pair loop (benchmarks) */
    char *conj;   /* the conj option as given (syntax checked) */
    int *flags;   /* per input band: 1 = conjugate (after prepare) */
    int excl_d2;  /* dx^2+dy^2 below this is excluded (after prepare) */
} ps_state;

enum { PS_TAU, PS_DX, PS_DY, PS_MASK, PS_FILT };

#define NAME_LEN 24 /* "filtered_1000000" and its NUL fit */

static void ps_init(gg_op *op)
{
    ps_state *s = op->state;
    s->window = 11;
    s->mindist = 1.0;
    s->threshold = 0.71;
}

static void ps_cleanup(gg_op *op)
{
    ps_state *s = op->state;
    free(s->conj);
    free(s->flags);
    free(s->fnames);
    s->conj = NULL;
    s->flags = NULL;
    s->fnames = NULL;
}

/* Walks a list of 1-based band numbers ("3,7,12"; ',' ';' or blanks
 * between them).  Calls fn for each; returns 0 on a syntax error. */
static int each_band(const char *list, int (*fn)(int band, void *user), void *user)
{
    const char *p = list;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return 1;
        if (!isdigit((unsigned char)*p))
            return 0;
        char *end;
        const long v = strtol(p, &end, 10);
        if (v < 1 || v > 1000000)
            return 0;
        if (fn && !fn((int)v, user))
            return 0;
        p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ',' || *p == ';') {
            p++;
            while (*p == ' ' || *p == '\t')
                p++;
            if (!*p || *p == ',' || *p == ';')
                return 0; /* "3,,4" or a trailing comma */
        } else if (*p && !isdigit((unsigned char)*p)) {
            return 0;
        }
    }
}

static gg_status ps_set(gg_op *op, const char *key, const char *value)
{
    ps_state *s = op->state;
    if (!strcasecmp(key, "window")) {
        int v;
        if (!gg_parse_int(value, &v) || v < 3 || v % 2 == 0)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: window must be an odd integer >= 3, not '%s'", value);
        s->window = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "mindist")) {
        double v;
        if (!gg_parse_double(value, &v) || !isfinite(v) || v < 0)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: mindist must be a number >= 0, not '%s'", value);
        s->mindist = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "threshold")) {
        double v;
        if (!gg_parse_double(value, &v) || !(v > 0 && v <= 1))
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: threshold must be in (0, 1], not '%s'", value);
        s->threshold = v;
        return GG_OK;
    }
    if (!strcasecmp(key, "conj")) {
        if (!each_band(value, NULL, NULL))
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: conj must list 1-based band numbers like 3,7,12, not '%s'",
                               value);
        char *c = strdup(value);
        if (!c)
            return gg_op_error(op, GG_ERR_NOMEM, "ptsel: out of memory");
        free(s->conj);
        s->conj = c;
        return GG_OK;
    }
    if (!strcasecmp(key, "method")) {
        if (strcasecmp(value, "prefix") && strcasecmp(value, "pairs"))
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: method must be prefix or pairs, not '%s'", value);
        s->pairs = !strcasecmp(value, "pairs");
        return GG_OK;
    }
    int *flag = !strcasecmp(key, "slc")       ? &s->slc
                : !strcasecmp(key, "offsets") ? &s->offsets
                : !strcasecmp(key, "mask")    ? &s->mask
                : !strcasecmp(key, "filter")  ? &s->filter
                                              : NULL;
    if (flag) {
        if (!gg_parse_bool(value, flag))
            return gg_op_error(op, GG_ERR_ARGUMENT, "ptsel: %s must be yes or no, not '%s'", key,
                               value);
        return GG_OK;
    }
    return GG_ERR_UNSUPPORTED;
}

typedef struct {
    int *flags, nbands, bad;
} conj_ctx;

static int mark_conj(int band, void *user)
{
    conj_ctx *c = user;
    if (band > c->nbands) {
        c->bad = band;
        return 0;
    }
    c->flags[band - 1] = 1; /* a set: listing a band twice conjugates it once */
    return 1;
}

static gg_status ps_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    ps_state *s = op->state;
    if (in->type != GG_CFLOAT32)
        return gg_op_error(op, GG_ERR_UNSUPPORTED,
                           "ptsel: input must be complex (CFloat32 interferograms or SLCs)");
    if (in->bands < 2)
        return gg_op_error(op, GG_ERR_ARGUMENT, "ptsel: needs at least 2 epochs, got %d",
                           in->bands);
    if (s->window > in->width || s->window > in->height)
        return gg_op_error(op, GG_ERR_ARGUMENT, "ptsel: window %d is larger than the %dx%d image",
                           s->window, in->width, in->height);
    const int h = s->window / 2;
    const double md2 = s->mindist * s->mindist;
    if (md2 > 2.0 * h * h)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "ptsel: mindist %g excludes every neighbour of the %dx%d window",
                           s->mindist, s->window, s->window);
    /* integer d2 < md2  <=>  d2 < ceil(md2); the centre (d2 = 0) always */
    s->excl_d2 = md2 > 1.0 ? (int)ceil(md2) : 1;
    free(s->flags);
    s->flags = calloc((size_t)in->bands, sizeof *s->flags);
    if (!s->flags)
        return gg_op_error(op, GG_ERR_NOMEM, "ptsel: out of memory");
    if (s->conj) {
        conj_ctx c = {s->flags, in->bands, 0};
        if (!each_band(s->conj, mark_conj, &c))
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "ptsel: conj band %d out of range (the stack has %d bands)", c.bad,
                               in->bands);
    }
    free(s->fnames);
    s->fnames = NULL;
    if (s->filter) {
        s->fnames = malloc((size_t)in->bands * NAME_LEN);
        if (!s->fnames)
            return gg_op_error(op, GG_ERR_NOMEM, "ptsel: out of memory");
        for (int b = 0; b < in->bands; b++)
            snprintf(s->fnames + (size_t)b * NAME_LEN, NAME_LEN, "filtered_%d", b + 1);
    }
    out->width = in->width;
    out->height = in->height;
    out->bands = 1 + 2 * s->offsets + s->mask + (s->filter ? in->bands : 0);
    out->type = GG_FLOAT32;
    memcpy(out->geotransform, in->geotransform, sizeof out->geotransform);
    out->has_geotransform = in->has_geotransform;
    return GG_OK;
}

/* Output bands that come before the filtered ones. */
static int base_bands(const ps_state *s) { return 1 + 2 * s->offsets + s->mask; }

static int band_kind(const gg_op *op, int band)
{
    const ps_state *s = op->state;
    if (band == 0)
        return PS_TAU;
    if (band >= base_bands(s))
        return PS_FILT;
    if (s->offsets && band <= 2)
        return band == 1 ? PS_DX : PS_DY;
    return PS_MASK;
}

static gg_type ps_band_type(const gg_op *op, int band)
{
    const int k = band_kind(op, band);
    return k == PS_MASK ? GG_BYTE : k == PS_FILT ? GG_CFLOAT32 : GG_FLOAT32;
}

static const char *ps_band_name(const gg_op *op, int band)
{
    static const char *const names[] = {"tau_max", "best_dx", "best_dy", "ps_mask"};
    const ps_state *s = op->state;
    const int k = band_kind(op, band);
    if (k == PS_FILT)
        return s->fnames + (size_t)(band - base_bands(s)) * NAME_LEN;
    return names[k];
}

/* Float bands: NaN unless dstnodata is given (the input's nodata, often 0
 * for interferograms, is a valid tau); the mask: 255; the filtered bands
 * always NaN (0 or any other number is a possible mean phasor). */
static double ps_band_nodata(const gg_op *op, int band)
{
    const int k = band_kind(op, band);
    if (k == PS_MASK)
        return 255;
    if (k == PS_FILT)
        return NAN;
    return op->opt_dstnodata_set ? op->opt_dstnodata : NAN;
}

/* tau_max needs the stack r/2 around each centre; the filter needs tau_max
 * r/2 around each output pixel, so the stack 2(r/2) around it. */
static int source_halo(const ps_state *s) { return (s->filter ? 2 : 1) * (s->window / 2); }

static void ps_source_window(const gg_op *op, const gg_window *d, gg_window *src)
{
    const int g = source_halo(op->state);
    src->x0 = d->x0 - g;
    src->y0 = d->y0 - g;
    src->width = d->width + 2 * g;
    src->height = d->height + 2 * g;
}

/* Bands per filter launch: grid rows (the tau window's rows per band) up
 * to 65535. */
static int filter_group(int nbands, int rows)
{
    const int per = rows >= 65535 ? 1 : 65535 / rows;
    return per < nbands ? per : nbands;
}

/* Scratch slots.  A synchronous run (set -1) keeps its outputs in
 * OUT..FILT and an interleaved window in the arc planes' slot (ARCS, free
 * until the arcs); an asynchronous run of set s (0 or 1) uploads its
 * window and the conj flags into ASYNC_IN + s and keeps its outputs in
 * ASYNC_OUT + 3s .. + 2 until fetched, while the next run computes. */
enum { SL_Z, SL_FLAGS, SL_OUT, SL_MASK, SL_FILT, SL_ROWSUMS, SL_ARCS, SL_BEST };
#define ASYNC_IN 8
#define ASYNC_OUT 10
/* Marks of the copy queue for set s: its input buffer is free again (the
 * norm kernel has read it), its upload has landed, its outputs are done. */
#define MARK_IN_FREE(s) (s)
#define MARK_UPLOADED(s) (2 + (s))
#define MARK_DONE(s) (4 + (s))

static int out_slot(int set, int which) { return set < 0 ? SL_OUT + which : ASYNC_OUT + 3 * set + which; }

/* The output window of dst tile d0, and the tau window: the output
 * window grown by r/2 (clipped to the image) when the filter needs
 * tau_max around it. */
static void ps_windows(const gg_op *op, const gg_tile *d0, gg_window *dw, gg_window *tw)
{
    const ps_state *s = op->state;
    const int h = s->window / 2;
    *dw = (gg_window){d0->x0, d0->y0, d0->width, d0->height};
    *tw = *dw;
    if (s->filter) {
        const int x1 = dw->x0 + dw->width + h, y1 = dw->y0 + dw->height + h;
        tw->x0 = dw->x0 - h < 0 ? 0 : dw->x0 - h;
        tw->y0 = dw->y0 - h < 0 ? 0 : dw->y0 - h;
        tw->width = (x1 > op->in.width ? op->in.width : x1) - tw->x0;
        tw->height = (y1 > op->in.height ? op->in.height : y1) - tw->y0;
    }
}

/* Every epoch's window to the device, band-sequential planes in bz, the
 * conj flags in bflags.  Synchronous: uploaded at once (an interleaved
 * window into the arc planes' slot, sorted into bz by the norm kernel).
 * Set s: the window and the flags go into the set's input buffer on the
 * copy queue, once the run before last has read it; the main queue waits
 * for them.  Returns the raw interleaved window's buffer in *bil. */
static gg_status ps_upload(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                           int interleaved, const gg_tile *d0, size_t plane, int set,
                           gg_buffer *bz, gg_buffer **bil, gg_buffer **bflags)
{
    const ps_state *s = op->state;
    const size_t zbytes = (size_t)nsrc * plane * 8, fbytes = (size_t)nsrc * sizeof(int);
    gg_status st = gg_rt_scratch(ctx, SL_FLAGS, fbytes, bflags);
    if (set < 0) {
        if (interleaved) {
            const gg_tile v = gg_op_interleaved_view(op, src, nsrc, d0);
            if (st == GG_OK)
                st = gg_rt_scratch(ctx, SL_ARCS, zbytes, bil);
            if (st == GG_OK)
                st = gg_rt_write_tile(ctx, *bil, 0, 0, &v);
        } else {
            for (int b = 0; b < nsrc && st == GG_OK; b++) {
                const gg_tile v = gg_op_source_view(op, &src[b], d0);
                st = gg_rt_write_tile(ctx, bz, (size_t)b * plane * 8, 0, &v);
            }
        }
        return st == GG_OK ? gg_buffer_write(ctx, *bflags, 0, s->flags, fbytes) : st;
    }
    gg_buffer *in;
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, ASYNC_IN + set, zbytes + fbytes, &in);
    const int after = MARK_IN_FREE(set);
    if (interleaved) {
        const gg_tile v = gg_op_interleaved_view(op, src, nsrc, d0);
        if (st == GG_OK)
            st = gg_rt_write_tile_async(ctx, in, 0, 0, &v, after, -1);
    } else {
        for (int b = 0; b < nsrc && st == GG_OK; b++) {
            const gg_tile v = gg_op_source_view(op, &src[b], d0);
            st = gg_rt_write_tile_async(ctx, in, (size_t)b * plane * 8, 0, &v, after, -1);
        }
    }
    const gg_tile ft = {s->flags, GG_BYTE, (int)fbytes, 1, fbytes, 0, 0}; /* the ints' bytes */
    if (st == GG_OK)
        st = gg_rt_write_tile_async(ctx, in, zbytes, 0, &ft, after, MARK_UPLOADED(set));
    if (st == GG_OK)
        st = gg_rt_wait_mark(ctx, MARK_UPLOADED(set));
    if (st == GG_OK)
        st = gg_rt_copy(ctx, *bflags, 0, in, zbytes, fbytes);
    if (st == GG_OK && !interleaved)
        st = gg_rt_copy(ctx, bz, 0, in, 0, zbytes);
    *bil = in;
    return st;
}

/* Queues one run: the window's upload and every kernel; the outputs stay
 * in the device buffers of `set` (out_slot).  src: nsrc band tiles, or
 * (interleaved) one tile of nsrc samples a pixel. */
static gg_status ps_enqueue(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                            int interleaved, const gg_tile *d0, int set)
{
    const ps_state *s = op->state;
    gg_window dw, tw, need;
    ps_windows(op, d0, &dw, &tw);
    gg_op_source_window(op, &dw, &need);
    const size_t plane = (size_t)need.width * (size_t)need.height;
    const size_t npix = (size_t)d0->width * (size_t)d0->height;
    const size_t tnp = (size_t)tw.width * (size_t)tw.height;
    const int h = s->window / 2;

    gg_buffer *bz, *bflags = NULL, *bout, *bmask, *bfilt = NULL, *bil = NULL;
    gg_status st = gg_rt_scratch(ctx, SL_Z, (size_t)nsrc * plane * 8, &bz);
    if (st == GG_OK)
        st = ps_upload(ctx, op, src, nsrc, interleaved, d0, plane, set, bz, &bil, &bflags);
    if (st != GG_OK)
        return st;
    gg_ptsel_norm_params pn = {.nbands = nsrc,
                               .has_nodata = op->src_has_nodata,
                               .nodata = (float)op->src_nodata};
    gg_buffer *nb[2] = {bflags, bz}, *nbi[3] = {bflags, bil, bz};
    st = interleaved ? gg_rt_launch(ctx, GG_K_PTSEL_NORM_IL, need.width, need.height, &pn,
                                    sizeof pn, nbi, 3)
                     : gg_rt_launch(ctx, GG_K_PTSEL_NORM, need.width, need.height, &pn, sizeof pn,
                                    nb, 2);
    if (st == GG_OK && set >= 0)
        st = gg_rt_mark(ctx, MARK_IN_FREE(set));

    /* planes of the tau window: tau_max, [best_dx, best_dy], [weights] */
    const int nfloat = s->offsets ? 3 : 1;
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, out_slot(set, 0), (size_t)(nfloat + s->filter) * tnp * 4, &bout);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, out_slot(set, 1), s->mask ? tnp : 4, &bmask);
    if (st == GG_OK && s->filter)
        st = gg_rt_scratch(ctx, out_slot(set, 2), (size_t)nsrc * npix * 8, &bfilt);
    if (st != GG_OK)
        return st;
    /* arc centres: the tau window grown by r/2 up, left and right (the
     * backward arcs of its pixels start there), in plane coordinates */
    const int tx = tw.x0 - need.x0, ty = tw.y0 - need.y0;
    const int ax0 = tx - h < 0 ? 0 : tx - h, ay0 = ty - h < 0 ? 0 : ty - h;
    const int ax1 = tx + tw.width + h > need.width ? need.width : tx + tw.width + h;
    gg_ptsel_params p = {.src_w = need.width,
                         .src_h = need.height,
                         .t_x0 = tx,
                         .t_y0 = ty,
                         .t_w = tw.width,
                         .t_h = tw.height,
                         .a_x0 = ax0,
                         .a_y0 = ay0,
                         .a_w = ax1 - ax0,
                         .a_h = ty + tw.height - ay0,
                         .radius = h,
                         .nbands = nsrc,
                         .excl_d2 = s->excl_d2,
                         .slc = s->slc,
                         .offsets = s->offsets,
                         .mask = s->mask,
                         .threshold = (float)s->threshold,
                         .dst_nodata = (float)ps_band_nodata(op, 0),
                         .mask_nodata = 255,
                         .weights = s->filter};
    /* the forward half window in chunks of rows whose arc planes fit half
     * the free device memory and a quarter of the total (OpenCL devices
     * may refuse any larger single buffer: CL_DEVICE_MAX_MEM_ALLOC_SIZE
     * need not exceed that); all of it at once, as a rule.  An allocation
     * refused anyway halves the chunk. */
    const size_t apx = (size_t)p.a_w * (size_t)p.a_h;
    const size_t row_bytes = (size_t)s->window * apx * 4;
    size_t free_b = 0, total_b = 0;
    int chunk = h + 1;
    if (gg_context_memory(ctx, &free_b, &total_b) == GG_OK && free_b > 0) {
        const size_t cap = free_b / 2 < total_b / 4 || !total_b ? free_b / 2 : total_b / 4;
        const size_t fit = cap / row_bytes;
        chunk = fit < 1 ? 1 : fit < (size_t)chunk ? (int)fit : chunk;
    }
    gg_buffer *barcs, *bbest;
    while ((st = gg_rt_scratch(ctx, SL_ARCS, (size_t)chunk * row_bytes, &barcs)) ==
               GG_ERR_NOMEM &&
           chunk > 1)
        chunk /= 2;
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, SL_BEST, 2 * tnp * 4, &bbest);
    if (st == GG_OK) /* (tau_max, index) = (-1, past every index) */
        st = gg_rt_fill_float(ctx, bbest, 0, -1.0f, tnp);
    if (st == GG_OK)
        st = gg_rt_fill_float(ctx, bbest, tnp * 4, 16777216.0f, tnp);
    gg_buffer *ab[2] = {bz, barcs}, *mb[2] = {barcs, bbest};
    for (int dy0 = 0; dy0 <= h && st == GG_OK; dy0 += chunk) {
        p.dy0 = dy0;
        p.dy1 = dy0 + chunk - 1 > h ? h : dy0 + chunk - 1;
        st = gg_rt_launch(ctx, s->pairs ? GG_K_PTSEL_ARCS_PAIRS : GG_K_PTSEL_ARCS, p.a_w, p.a_h,
                          &p, sizeof p, ab, 2);
        if (st == GG_OK)
            st = gg_rt_launch(ctx, GG_K_PTSEL_ARCMAX, tw.width, tw.height, &p, sizeof p, mb, 2);
    }
    gg_buffer *kb[3] = {bbest, bout, bmask};
    if (st == GG_OK)
        st = gg_rt_launch(ctx, GG_K_PTSEL_FINISH, tw.width, tw.height, &p, sizeof p, kb, 3);
    if (st == GG_OK && s->filter) {
        gg_ptsel_filter_params fp = {.src_w = need.width,
                                     .src_h = need.height,
                                     .w_w = tw.width,
                                     .w_h = tw.height,
                                     .w_plane = nfloat, /* after tau_max [best_dx, best_dy] */
                                     .w_off_x = tw.x0 - need.x0,
                                     .w_off_y = tw.y0 - need.y0,
                                     .off_x = dw.x0 - tw.x0,
                                     .off_y = dw.y0 - tw.y0,
                                     .radius = h,
                                     .ny = d0->height,
                                     .nodata = NAN};
        /* bands in groups of at most 65535 grid rows (CUDA's grid height
         * limit, whatever the block height): the row sums of a group, then
         * its quotients */
        const int per = filter_group(nsrc, tw.height);
        gg_buffer *brs;
        st = gg_rt_scratch(ctx, SL_ROWSUMS,
                           (size_t)per * 3 * (size_t)tw.height * (size_t)d0->width * 4, &brs);
        gg_buffer *rb[3] = {bz, bout, brs}, *qb[2] = {brs, bfilt};
        for (int b0 = 0; b0 < nsrc && st == GG_OK; b0 += per) {
            const int nb_ = nsrc - b0 < per ? nsrc - b0 : per;
            fp.band0 = b0;
            st = gg_rt_launch(ctx, GG_K_PTSEL_FILTER_ROWS, d0->width, tw.height * nb_, &fp,
                              sizeof fp, rb, 3);
            if (st == GG_OK)
                st = gg_rt_launch(ctx, GG_K_PTSEL_FILTER, d0->width, d0->height * nb_, &fp,
                                  sizeof fp, qb, 2);
        }
    }
    if (st == GG_OK && set >= 0)
        st = gg_rt_mark(ctx, MARK_DONE(set));
    return st;
}

/* Downloads the outputs of a run queued in `set` (-1: synchronous) into
 * dst: the output window is the inner part of the tau window.  A set's
 * downloads go on the copy queue once its kernels are done, whatever the
 * main queue has been given since. */
static gg_status ps_fetch(gg_context *ctx, gg_op *op, gg_tile *dst, int ndst, int set)
{
    const ps_state *s = op->state;
    gg_window dw, tw;
    ps_windows(op, &dst[0], &dw, &tw);
    const size_t npix = (size_t)dw.width * (size_t)dw.height;
    const size_t tnp = (size_t)tw.width * (size_t)tw.height;
    const int ix = dw.x0 - tw.x0, iy = dw.y0 - tw.y0, after = set < 0 ? -1 : MARK_DONE(set);
    gg_status st = GG_OK;
    for (int b = 0; b < ndst && st == GG_OK; b++) {
        const int k = band_kind(op, b);
        const int slot = out_slot(set, k == PS_MASK ? 1 : k == PS_FILT ? 2 : 0);
        gg_buffer *buf;
        if ((st = gg_rt_scratch(ctx, slot, 0, &buf)) != GG_OK)
            break;
        int plane_w = tw.width, x = ix, y = iy;
        size_t offset = 0;
        if (k == PS_FILT) {
            plane_w = dw.width;
            x = y = 0;
            offset = (size_t)(b - base_bands(s)) * npix * 8;
        } else if (k != PS_MASK) {
            offset = (size_t)(k == PS_TAU ? 0 : k) * tnp * 4;
        }
        const size_t es = gg_type_size(dst[b].type), pitch = (size_t)plane_w * es;
        st = gg_rt_read_tile_after(ctx, buf, offset + (size_t)y * pitch + (size_t)x * es, pitch,
                                   &dst[b], after);
    }
    return st;
}

static gg_status ps_run(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc, int interleaved,
                        gg_tile *dst, int ndst)
{
    gg_status st = ps_enqueue(ctx, op, src, nsrc, interleaved, &dst[0], -1);
    if (st == GG_OK)
        st = ps_fetch(ctx, op, dst, ndst, -1);
    return st;
}

static gg_status ps_run_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                              gg_tile *dst, int ndst)
{
    return ps_run(ctx, op, src, nsrc, 0, dst, ndst);
}

static gg_status ps_run_stack_interleaved(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                          gg_tile *dst, int ndst)
{
    return ps_run(ctx, op, src, nsrc, 1, dst, ndst);
}

static gg_status ps_enqueue_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                  int interleaved, const gg_tile *dst, int ndst, int set)
{
    (void)ndst;
    return ps_enqueue(ctx, op, src, nsrc, interleaved, &dst[0], set);
}

static gg_status ps_fetch_stack(gg_context *ctx, gg_op *op, gg_tile *dst, int ndst, int set)
{
    return ps_fetch(ctx, op, dst, ndst, set);
}

/* An output pixel needs n complex samples, grown by the halo: strips are
 * full width (no growth in x) and taken as at least 64 rows (or the image)
 * high, so a halo of g rows on each side adds 2g/64; plus the output
 * planes (with the filter: the tau planes and weights on the window grown
 * by r/2, there too 3 row-sum floats per band, and n complex filtered
 * planes) and the arc planes of the half-window passes (at least as large
 * as the stack: an interleaved window is sorted from there). */
static double ps_bytes_per_pixel(const gg_op *op)
{
    const ps_state *s = op->state;
    const double h = s->window / 2;
    const double rows = op->in.height < 64 ? op->in.height : 64;
    const double grow = 1.0 + 2.0 * source_halo(s) / rows;
    const double tgrow = s->filter ? 1.0 + 2.0 * h / rows : 1.0;
    /* arc planes: at least 4 rows of the half window at a time (their
     * centres grown by r/2 above the tau window), and 2 best-so-far planes */
    const double rowsk = h + 1 < 4 ? h + 1 : 4;
    const double arcs = 4.0 * rowsk * s->window * (1.0 + h / rows) * tgrow;
    /* the arc planes' slot first holds an interleaved window as it came */
    const double stack = (double)op->in.bands * 8.0 * grow;
    return stack + (arcs > stack ? arcs : stack) +
           tgrow * (4.0 * ((s->offsets ? 3 : 1) + s->filter + 2) + (s->mask ? 1 : 0)) +
           (s->filter ? (double)op->in.bands * (8.0 + 12.0 * tgrow) : 0.0);
}

/* The options, described once (geogpu.h gg_option): key, flag, kind, range,
 * default, choices, help, required. */
static const gg_option ptsel_options[] = {
    {"window", "-window", GG_OPTION_INT, 3, GG_INT_MAX, "11", NULL,
     "search window r (odd, >= 3): neighbours up to r/2 pixels away in x "
     "and y", 0},
    {"mindist", "-mindist", GG_OPTION_FLOAT, 0, GG_UNBOUNDED, "1", NULL,
     "skip neighbours with dx^2+dy^2 < mindist^2 (the centre always)", 0},
    {"method", NULL, GG_OPTION_CHOICE, 0, 0, "prefix", "prefix,pairs",
     "prefix: exact O(n) per arc; pairs: the paper's O(n^2) pair loop (same "
     "result, for comparison)", 0},
    {"threshold", "-threshold", GG_OPTION_FLOAT, 0, 1, "0.71", NULL,
     "ps_mask is 1 where tau_max >= threshold (0 < threshold <= 1)", 0},
    {"conj", "-conj", GG_OPTION_STRING, 0, 0, NULL, NULL,
     "1-based bands to conjugate first (e.g. 3,7,12): one orientation for "
     "all ifgs", 0},
    {"slc", "-slc", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "the bands are coregistered SLCs (all pairs k<l), not single-reference "
     "interferograms", 0},
    {"offsets", "-offsets", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "add bands best_dx, best_dy: offset of the most coherent neighbour", 0},
    {"mask", "-mask", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "add the Byte band ps_mask (1 PS, 0 not, 255 nodata)", 0},
    {"filter", NULL, GG_OPTION_BOOL, 0, 1, "no", NULL,
     "add n CFloat32 bands filtered_1..filtered_n: each band's unit phasors "
     "averaged over the r x r window (centre included), weighted by tau_max "
     "(the paper's coherence-weighted filter; NaN where no neighbour weighs)", 0},
    {NULL, NULL, GG_OPTION_STRING, 0, 0, NULL, NULL, NULL, 0},
};

const gg_op_class gg_op_ptsel = {
    .name = "ptsel",
    .description = "PtSel persistent scatterers: maximum arc temporal coherence tau_max over an "
                   "r x r window of a CFloat32 stack (single-reference ifgs or SLCs)",
    .options = ptsel_options,
    .state_size = sizeof(ps_state),
    .inputs = -1,
    .init = ps_init,
    .set = ps_set,
    .prepare = ps_prepare,
    .source_window = ps_source_window,
    .bytes_per_pixel = ps_bytes_per_pixel,
    .stack = 1,
    .run_stack = ps_run_stack,
    .run_stack_interleaved = ps_run_stack_interleaved,
    .enqueue_stack = ps_enqueue_stack,
    .fetch_stack = ps_fetch_stack,
    .band_type = ps_band_type,
    .band_name = ps_band_name,
    .band_nodata = ps_band_nodata,
    .cleanup = ps_cleanup,
};
