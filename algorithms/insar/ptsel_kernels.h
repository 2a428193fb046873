/*
 * ptsel_kernels.h -- the PtSel kernels (algorithms/insar/ptsel.c), written
 * once in the kernel dialect (gpu/kernel_dialect.h) for CPU, CUDA and
 * OpenCL.
 *
 * Device layout: the source window of the n epochs as n band-sequential
 * planes of interleaved complex floats (plane b at 2*b*src_w*src_h floats),
 * so that neighbouring work items (neighbouring centres) read neighbouring
 * samples of the same epoch.
 *
 * MIT licence.
 */

/* 1/sqrt(v): the hardware reciprocal square root where there is one. */
GG_DEVICE_FN float gg_ptsel_rsqrt(float v)
{
#if defined(__CUDACC__)
    return rsqrtf(v);
#elif defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
    return rsqrt(v);
#else
    return 1.0f / sqrtf(v);
#endif
}

/* u = z/|z| for every epoch of a pixel (one work item per pixel, the
 * epochs looped) into the band-sequential planes z.  The samples are read
 * from in[at + b * step]: from z itself (in place, each step a coalesced
 * read of one plane) or from the stack as it lies in a pixel-interleaved
 * file (step 2: the pixel's epochs side by side).  conj[b] conjugates epoch
 * b first.  Invalid samples (zero, NaN/Inf, real part == nodata) become
 * u = 0, so every product they enter vanishes by itself.  z is scaled by
 * max(|re|, |im|) before squaring: neither huge values (|z|^2 overflowing)
 * nor tiny ones (underflowing to 0) are lost. */
GG_DEVICE_FN void gg_ptsel_unit_pixel(int x, int y, int gg_nx, int gg_ny, gg_ptsel_norm_params p,
                                      GG_GLOBAL const int *conj, GG_GLOBAL const float *in,
                                      size_t at, size_t step, GG_GLOBAL float *z)
{
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t zstep = 2 * (size_t)gg_nx * (size_t)gg_ny;
    size_t e = 2 * ((size_t)y * (size_t)gg_nx + (size_t)x);
    for (int b = 0; b < p.nbands; b++, e += zstep, at += step) {
        const float re = in[at];
        const float im = conj[b] ? -in[at + 1] : in[at + 1];
        const float s = fmax(fabs(re), fabs(im));
        float ur = 0.0f, ui = 0.0f;
        if (gg_cvalid(re, im, p.has_nodata, p.nodata) && s > 0.0f) {
            const float xr = re / s, xi = im / s;
            const float r = gg_ptsel_rsqrt(xr * xr + xi * xi);
            ur = xr * r;
            ui = xi * r;
        }
        z[e] = ur;
        z[e + 1] = ui;
    }
}

GG_STREAM_KERNEL2(gg_k_ptsel_norm, gg_ptsel_norm_params, p, const int, conj, float, z)
{
    const int x = GG_X, y = GG_Y;
    gg_ptsel_unit_pixel(x, y, gg_nx, gg_ny, p, conj, z,
                        2 * ((size_t)y * (size_t)gg_nx + (size_t)x),
                        2 * (size_t)gg_nx * (size_t)gg_ny, z);
}

/* The same from the pixel-interleaved window il (nx x ny pixels of nbands
 * complex samples, packed) into the planes z. */
GG_STREAM_KERNEL3(gg_k_ptsel_norm_il, gg_ptsel_norm_params, p, const int, conj, const float, il,
                  float, z)
{
    const int x = GG_X, y = GG_Y;
    gg_ptsel_unit_pixel(x, y, gg_nx, gg_ny, p, conj, il,
                        2 * ((size_t)y * (size_t)gg_nx + (size_t)x) * (size_t)p.nbands, 2, z);
}

/* Half-window symmetry: tau(C,N) = tau(N,C) (the arc phasors from the other
 * end are the conjugates, so |P + T| is the same), so each arc is computed
 * once, from the end that sees the other in its forward half window
 *     F = {(dx, dy): dy = 0 and 0 < dx <= r/2, or 0 < dy <= r/2 and |dx| <= r/2}
 * (K = (r^2 - 1)/2 offsets), in three passes:
 *   1. gg_k_ptsel_arcs: one work item per arc centre q of the region A (the
 *      tau window grown by r/2 up, left and right); it writes tau of its
 *      forward arcs (rows dy0..dy1 of F, a chunk sized to device memory)
 *      to one plane per offset, -1 where there is no arc.  A centre outside
 *      the tau window computes only arcs that end inside it.
 *   2. gg_k_ptsel_arcmax: one work item per tau-window pixel p folds the
 *      chunk's forward arcs (p, p + f) and backward arcs (p - f, p) into a
 *      running (tau_max, window index) pair; ties keep the smaller
 *      row-major window index, the first maximum a full-window scan finds.
 *   3. gg_k_ptsel_finish turns that pair into the output planes.
 * Half the arithmetic of scanning every centre's full window; the arc
 * planes cost 12 bytes of memory traffic per arc against ~12 n flops. */

/* Offset index k of F -> (dx, dy), and the index of row dy's first offset. */
GG_DEVICE_FN int gg_ptsel_row_k0(int dy, int h) { return dy == 0 ? 0 : h + (dy - 1) * (2 * h + 1); }

/* Neighbours evaluated together in one pass over the epochs: the
 * centre's samples are loaded once for all of them and their prefix chains
 * are independent (instruction-level parallelism).  On an H200 (paper
 * workload 3260x2680, n = 60, r = 51, through the op API, full-window
 * scan) one neighbour at a time took 3.80 s, groups of 2 / 4 / 8 took
 * 2.38 / 1.59 / 2.37 s (8: register pressure); 4 uses 64 registers, no
 * spills. */
#ifndef GG_PTSEL_GROUP
#define GG_PTSEL_GROUP 4
#endif

/* Pass 1 for centre q = (a_x0 + x, a_y0 + y) in plane coordinates.
 *
 * For each forward neighbour N (inside the plane, not closer than mindist)
 * the arc phasors a_j = u_C,j conj(u_N,j) go through one O(n) pass (notes
 * §1, exact regrouping of the paper's pair sum):  T += conj(a_j) P;
 * P += a_j;  so that P = sum a_i and T = sum_{i<j} a_i conj(a_j).  m counts
 * the epochs valid at both ends.
 *   interferograms: tau = |P + T| / (m(m+1)/2), needs m >= 1
 *   SLCs:           tau = |T| / (m(m-1)/2),     needs m >= 2
 * clamped to 1 (rounding can push it just above).
 * pairs = 1 replaces the prefix pass by the paper's O(n^2) pair loop
 * (T = sum_{i<j} a_i conj(a_j) term by term), for measuring the speed-up on
 * the same code (method=pairs); a compile-time constant in each kernel, so
 * the prefix kernel carries none of it. */
GG_DEVICE_FN void gg_ptsel_arcs(int x, int y, int gg_nx, int gg_ny, gg_ptsel_params p,
                                GG_GLOBAL const float *u, GG_GLOBAL float *arcs, const int pairs)
{
    if (x >= gg_nx || y >= gg_ny)
        return;
    const int h = p.radius;
    const size_t step = 2 * (size_t)p.src_w * (size_t)p.src_h;
    const size_t apx = (size_t)gg_nx * (size_t)gg_ny;
    const int cx = x + p.a_x0, cy = y + p.a_y0;
    const int tx1 = p.t_x0 + p.t_w, ty1 = p.t_y0 + p.t_h;
    const int inside = cx >= p.t_x0 && cx < tx1 && cy >= p.t_y0 && cy < ty1;
    const size_t c2 = 2 * ((size_t)cy * (size_t)p.src_w + (size_t)cx);
    const int minm = p.slc ? 2 : 1;
    const int kbase = gg_ptsel_row_k0(p.dy0, h);
    const size_t q = (size_t)y * (size_t)gg_nx + (size_t)x;
    for (int dy = p.dy0; dy <= p.dy1; dy++) {
        const int ny_ = cy + dy;
        const int dxs = dy == 0 ? 1 : -h;
        const int krow = gg_ptsel_row_k0(dy, h) - kbase - dxs; /* + dx = plane */
        for (int dx0 = dxs; dx0 <= h; dx0 += GG_PTSEL_GROUP) {
            /* a group of up to GG_PTSEL_GROUP neighbours of this row; one
             * that is not a wanted arc (outside, excluded, past the row,
             * both ends outside the tau window) reads the centre instead
             * and is written as -1 */
            int use[GG_PTSEL_GROUP];
            size_t en[GG_PTSEL_GROUP];
            float pr[GG_PTSEL_GROUP], pi[GG_PTSEL_GROUP], tr[GG_PTSEL_GROUP], ti[GG_PTSEL_GROUP];
            int m[GG_PTSEL_GROUP];
            int any = 0;
            for (int k = 0; k < GG_PTSEL_GROUP; k++) {
                const int dx = dx0 + k, nx_ = cx + dx;
                use[k] = dx <= h && ny_ < p.src_h && nx_ >= 0 && nx_ < p.src_w &&
                         dx * dx + dy * dy >= p.excl_d2 &&
                         (inside || (nx_ >= p.t_x0 && nx_ < tx1 && ny_ >= p.t_y0 && ny_ < ty1));
                any |= use[k];
                en[k] = use[k] ? 2 * ((size_t)ny_ * (size_t)p.src_w + (size_t)nx_) : c2;
                pr[k] = pi[k] = tr[k] = ti[k] = 0.0f;
                m[k] = 0;
            }
            if (any) {
                size_t ec = c2;
                for (int j = 0; j < p.nbands; j++, ec += step) {
                    const float cr = u[ec], ci = u[ec + 1];
                    for (int k = 0; k < GG_PTSEL_GROUP; k++) {
                        const float nr = u[en[k]], ni = u[en[k] + 1];
                        const float ar = cr * nr + ci * ni, ai = ci * nr - cr * ni;
                        /* |a| is 1 for a valid pair and exactly 0 otherwise */
                        m[k] += (ar * ar + ai * ai > 0.25f) ? 1 : 0;
                        if (pairs) {
                            /* a_i conj(a_j) for every i < j, recomputing a_i */
                            const size_t n0 = en[k] - (size_t)j * step;
                            for (int i = 0; i < j; i++) {
                                const size_t oi = (size_t)i * step;
                                const float c_r = u[c2 + oi], c_i = u[c2 + oi + 1];
                                const float n_r = u[n0 + oi], n_i = u[n0 + oi + 1];
                                const float br = c_r * n_r + c_i * n_i,
                                            bi = c_i * n_r - c_r * n_i;
                                tr[k] += br * ar + bi * ai;
                                ti[k] += bi * ar - br * ai;
                            }
                        } else {
                            tr[k] += ar * pr[k] + ai * pi[k]; /* conj(a) * P */
                            ti[k] += ar * pi[k] - ai * pr[k];
                        }
                        pr[k] += ar;
                        pi[k] += ai;
                        en[k] += step;
                    }
                }
            }
            for (int k = 0; k < GG_PTSEL_GROUP; k++) {
                const int dx = dx0 + k;
                if (dx > h)
                    break;
                float tau = -1.0f;
                if (use[k] && m[k] >= minm) {
                    float num, den;
                    if (p.slc) {
                        num = sqrt(tr[k] * tr[k] + ti[k] * ti[k]);
                        den = 0.5f * (float)m[k] * (float)(m[k] - 1);
                    } else {
                        const float sr = pr[k] + tr[k], si = pi[k] + ti[k];
                        num = sqrt(sr * sr + si * si);
                        den = 0.5f * (float)m[k] * (float)(m[k] + 1);
                    }
                    tau = fmin(num / den, 1.0f);
                }
                arcs[(size_t)(krow + dx) * apx + q] = tau;
            }
        }
    }
}

GG_KERNEL2(gg_k_ptsel_arcs, gg_ptsel_params, p, const float, u, float, arcs)
{
    gg_ptsel_arcs(GG_X, GG_Y, gg_nx, gg_ny, p, u, arcs, 0);
}

GG_KERNEL2(gg_k_ptsel_arcs_pairs, gg_ptsel_params, p, const float, u, float, arcs)
{
    gg_ptsel_arcs(GG_X, GG_Y, gg_nx, gg_ny, p, u, arcs, 1);
}

/* Pass 2 for tau-window pixel (x, y): best holds two planes over the tau
 * window, tau_max so far (-1: none) and its row-major window index (as a
 * float; exact up to 2^24). */
GG_KERNEL2(gg_k_ptsel_arcmax, gg_ptsel_params, p, const float, arcs, float, best)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const int h = p.radius, r = 2 * h + 1;
    const size_t apx = (size_t)p.a_w * (size_t)p.a_h;
    const size_t tnp = (size_t)gg_nx * (size_t)gg_ny;
    const size_t o = (size_t)y * (size_t)gg_nx + (size_t)x;
    /* p in A's coordinates */
    const int ax = x + p.t_x0 - p.a_x0, ay = y + p.t_y0 - p.a_y0;
    float bt = best[o], bi = best[tnp + o];
    const int kbase = gg_ptsel_row_k0(p.dy0, h);
    for (int dy = p.dy0; dy <= p.dy1; dy++) {
        const int dxs = dy == 0 ? 1 : -h;
        const int krow = gg_ptsel_row_k0(dy, h) - kbase - dxs;
        for (int dx = dxs; dx <= h; dx++) {
            const size_t plane = (size_t)(krow + dx) * apx;
            /* forward arc (p, p + f), window index of +f */
            float t = arcs[plane + (size_t)ay * (size_t)p.a_w + (size_t)ax];
            float idx = (float)((dy + h) * r + dx + h);
            if (t > bt || (t == bt && t >= 0.0f && idx < bi)) {
                bt = t;
                bi = idx;
            }
            /* backward arc (p - f, p), window index of -f */
            const int bx = ax - dx, by = ay - dy;
            if (bx >= 0 && bx < p.a_w && by >= 0) {
                t = arcs[plane + (size_t)by * (size_t)p.a_w + (size_t)bx];
                idx = (float)((h - dy) * r + h - dx);
                if (t > bt || (t == bt && t >= 0.0f && idx < bi)) {
                    bt = t;
                    bi = idx;
                }
            }
        }
    }
    best[o] = bt;
    best[tnp + o] = bi;
}

/* Pass 3: the output planes of the tau window from (tau_max, index). */
GG_KERNEL3(gg_k_ptsel_finish, gg_ptsel_params, p, const float, best, float, out, gg_u8, mask)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const int r = 2 * p.radius + 1;
    const size_t np = (size_t)gg_nx * (size_t)gg_ny;
    const size_t o = (size_t)y * (size_t)gg_nx + (size_t)x;
    const float bt = best[o];
    const int ok = bt >= 0.0f;
    const int idx = (int)best[np + o];
    out[o] = ok ? bt : p.dst_nodata;
    if (p.offsets) {
        out[np + o] = ok ? (float)(idx % r - p.radius) : p.dst_nodata;
        out[2 * np + o] = ok ? (float)(idx / r - p.radius) : p.dst_nodata;
    }
    if (p.mask)
        mask[o] = (gg_u8)(ok ? (bt >= p.threshold ? 1 : 0) : p.mask_nodata);
    /* the filter's weights in a plane of their own: dst_nodata may be any
     * value, even one a valid tau can take, so the tau plane cannot say
     * which pixels weigh 0 */
    if (p.weights)
        out[(size_t)(p.offsets ? 3 : 1) * np + o] = ok ? bt : 0.0f;
}

/* The coherence-weighted filter (ptsel.c, filter=yes):
 *     filtered = sum_N w(N) u(N) / sum_{N: u(N) valid} w(N)
 * over the pixels N of the r x r window inside the image, the centre
 * included, where w is the weight plane (tau_max, 0 for nodata) and u the
 * normalised stack (0 when invalid, so it adds nothing to the numerator;
 * its weight is kept out of the denominator).  Both sums are box sums of
 * per-pixel products, so they separate: gg_k_ptsel_filter_rows sums each
 * window row (r terms), gg_k_ptsel_filter sums r of those row sums: 2r
 * reads per pixel and band instead of r^2.  On 2 CPU cores (200x200,
 * n = 20, whole image) a one-pass r^2 kernel added 80 % (r = 11) and 70 %
 * (r = 35) to the op's time, these two passes 18 % and 5 %.  Summing rows
 * first also keeps float rounding at O(r) ulps instead of O(r^2).
 *
 * Row sums: one work item per output column, weight-plane row and band
 * (grid nx x (w_h * bands of this launch)); neighbouring work items are
 * neighbouring columns of one band, so every read is coalesced.  Three
 * planes per band, w_h x nx floats each: sum w u (re, im) and sum w over
 * the valid u. */
GG_KERNEL3(gg_k_ptsel_filter_rows, gg_ptsel_filter_params, p, const float, u, const float, w,
           float, rs)
{
    const int x = GG_X, gy = GG_Y;
    if (x >= gg_nx || gy >= gg_ny)
        return;
    const int bl = gy / p.w_h, ty = gy - bl * p.w_h;
    const int cx = x + p.off_x; /* the column's centre in the weight plane */
    /* the weight plane is the image-clipped tau window, so "inside it" is
     * "inside the image" for every pixel of the window */
    const int x0 = cx - p.radius < 0 ? 0 : cx - p.radius;
    const int x1 = cx + p.radius >= p.w_w ? p.w_w - 1 : cx + p.radius;
    const size_t wrow = ((size_t)p.w_plane * (size_t)p.w_h + (size_t)ty) * (size_t)p.w_w;
    const size_t urow = (size_t)(p.band0 + bl) * 2 * (size_t)p.src_w * (size_t)p.src_h +
                        2 * ((size_t)(ty + p.w_off_y) * (size_t)p.src_w + (size_t)p.w_off_x);
    float rr = 0.0f, ri = 0.0f, rw = 0.0f;
    for (int tx = x0; tx <= x1; tx++) {
        const float wt = w[wrow + (size_t)tx];
        const float ur = u[urow + 2 * (size_t)tx], ui = u[urow + 2 * (size_t)tx + 1];
        rr += wt * ur;
        ri += wt * ui;
        /* u is exactly 0 when invalid (gg_k_ptsel_norm) */
        rw += (ur != 0.0f || ui != 0.0f) ? wt : 0.0f;
    }
    const size_t plane = (size_t)p.w_h * (size_t)gg_nx;
    const size_t o = (size_t)bl * 3 * plane + (size_t)ty * (size_t)gg_nx + (size_t)x;
    rs[o] = rr;
    rs[o + plane] = ri;
    rs[o + 2 * plane] = rw;
}

/* The column sums of the row sums and the quotient: one work item per
 * output pixel and band (grid nx x (ny * bands of this launch)); a zero
 * denominator gives p.nodata; out holds every band's complex plane. */
GG_KERNEL2(gg_k_ptsel_filter, gg_ptsel_filter_params, p, const float, rs, float, out)
{
    const int x = GG_X, gy = GG_Y;
    if (x >= gg_nx || gy >= gg_ny)
        return;
    const int bl = gy / p.ny, y = gy - bl * p.ny;
    const int cy = y + p.off_y; /* centre row in the weight plane */
    const int y0 = cy - p.radius < 0 ? 0 : cy - p.radius;
    const int y1 = cy + p.radius >= p.w_h ? p.w_h - 1 : cy + p.radius;
    const size_t plane = (size_t)p.w_h * (size_t)gg_nx;
    size_t e = (size_t)bl * 3 * plane + (size_t)y0 * (size_t)gg_nx + (size_t)x;
    float sr = 0.0f, si = 0.0f, sw = 0.0f;
    for (int ty = y0; ty <= y1; ty++, e += (size_t)gg_nx) {
        sr += rs[e];
        si += rs[e + plane];
        sw += rs[e + 2 * plane];
    }
    const size_t o = 2 * (((size_t)(p.band0 + bl) * (size_t)p.ny + (size_t)y) * (size_t)gg_nx +
                          (size_t)x);
    const int ok = sw > 0.0f;
    out[o] = ok ? sr / sw : p.nodata;
    out[o + 1] = ok ? si / sw : p.nodata;
}
