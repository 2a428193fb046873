/*
 * coherence_kernels.h -- interferogram + boxcar coherence, one work item per
 * output pixel, written once in the kernel dialect (gpu/kernel_dialect.h)
 * for CPU, CUDA and OpenCL.
 *
 * Input: one buffer with two packed planes of interleaved complex samples,
 * primary s1 then secondary s2, each src_w x src_h.  Output: the requested
 * products as consecutive tile-sized planes (see gg_coherence_params).
 *
 * Output pixel (X, Y) (raster coordinates) has the look block
 * B = [X*lx, X*lx+lx) x [Y*ly, Y*ly+ly) and the window centre
 * c = (X*lx + (lx-1)/2, Y*ly + (ly-1)/2); its coherence window is
 * [cx-hx, cx+hx] x [cy-hy, cy+hy] clipped to the raster.  A sample counts
 * when s1 and s2 are both valid (gg_cvalid).
 *   interferogram = mean over B of s1*conj(s2)  (phase = phase(s1) - phase(s2))
 *   coherence     = |sum s1*conj(s2)| / sqrt(sum|s1|^2 * sum|s2|^2), in [0, 1]
 *   amplitude     = sqrt(sqrt(sum|s1|^2/n * sum|s2|^2/n))
 * with the sums over the valid samples of the window.
 *
 * MIT licence.
 */

GG_DEVICE_FN int gg_coh_imin(int a, int b) { return a < b ? a : b; }
GG_DEVICE_FN int gg_coh_imax(int a, int b) { return a > b ? a : b; }

/* Sums in float with per-row partials (short addition chains, as
 * multilook).  Against a float64 reference the coherence stays within
 * 3e-6 relative, and within 8e-7 for 51x51 windows on uncorrelated data
 * where the cross sum cancels most (tests/c/test_coherence.c), so the
 * kernel needs no double arithmetic. */
GG_KERNEL2(gg_k_coherence, gg_coherence_params, p, const float, in, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t plane = (size_t)p.src_w * (size_t)p.src_h; /* complex samples per band */
    const size_t npix = (size_t)gg_nx * (size_t)gg_ny;
    const size_t o = (size_t)y * (size_t)gg_nx + (size_t)x;
    const int bx = (p.dst_x0 + x) * p.looks_x, by = (p.dst_y0 + y) * p.looks_y;

    if (p.plane_ifg >= 0) {
        /* the look block lies inside the raster (output size is floor(W/lx)) */
        float sr = 0.0f, si = 0.0f;
        int n = 0;
        for (int j = 0; j < p.looks_y; j++) {
            const size_t row = (size_t)(by + j - p.src_y0) * (size_t)p.src_w;
            float rr = 0.0f, ri = 0.0f;
            for (int i = 0; i < p.looks_x; i++) {
                const size_t k = row + (size_t)(bx + i - p.src_x0);
                const float a = in[2 * k], b = in[2 * k + 1];
                const float c = in[2 * (plane + k)], d = in[2 * (plane + k) + 1];
                if (gg_cvalid(a, b, p.has_nodata, p.nodata) && gg_cvalid(c, d, p.has_nodata, p.nodata)) {
                    rr += a * c + b * d; /* (a + ib)(c - id) */
                    ri += b * c - a * d;
                    n++;
                }
            }
            sr += rr;
            si += ri;
        }
        const size_t q = (size_t)p.plane_ifg * npix + 2 * o;
        const float inv = n > 0 ? 1.0f / (float)n : 0.0f;
        out[q] = n > 0 ? sr * inv : p.dst_nodata;
        out[q + 1] = n > 0 ? si * inv : p.dst_nodata;
    }

    if (p.plane_coh < 0 && p.plane_amp < 0)
        return;
    const int cx = bx + (p.looks_x - 1) / 2, cy = by + (p.looks_y - 1) / 2;
    /* clipped to the raster and, defensively, to the uploaded window (which
     * covers every in-raster part of the window when planned right) */
    const int x0 = gg_coh_imax(cx - p.half_x, gg_coh_imax(0, p.src_x0));
    const int x1 = gg_coh_imin(cx + p.half_x, gg_coh_imin(p.img_w, p.src_x0 + p.src_w) - 1);
    const int y0 = gg_coh_imax(cy - p.half_y, gg_coh_imax(0, p.src_y0));
    const int y1 = gg_coh_imin(cy + p.half_y, gg_coh_imin(p.img_h, p.src_y0 + p.src_h) - 1);
    float s12r = 0.0f, s12i = 0.0f, p1 = 0.0f, p2 = 0.0f;
    int n = 0;
    for (int yy = y0; yy <= y1; yy++) {
        const size_t row = (size_t)(yy - p.src_y0) * (size_t)p.src_w;
        float rr = 0.0f, ri = 0.0f, r1 = 0.0f, r2 = 0.0f;
        for (int xx = x0; xx <= x1; xx++) {
            const size_t k = row + (size_t)(xx - p.src_x0);
            const float a = in[2 * k], b = in[2 * k + 1];
            const float c = in[2 * (plane + k)], d = in[2 * (plane + k) + 1];
            if (gg_cvalid(a, b, p.has_nodata, p.nodata) && gg_cvalid(c, d, p.has_nodata, p.nodata)) {
                rr += a * c + b * d;
                ri += b * c - a * d;
                r1 += a * a + b * b;
                r2 += c * c + d * d;
                n++;
            }
        }
        s12r += rr;
        s12i += ri;
        p1 += r1;
        p2 += r2;
    }
    if (p.plane_coh >= 0) {
        const float den = sqrt(p1) * sqrt(p2); /* no overflow of p1*p2 */
        /* rounding can push g just above 1; one sample is coherent with
         * itself exactly (rounding would give 0.99999994 at times) */
        const float g = n == 1 ? 1.0f : fmin(hypot(s12r, s12i) / den, 1.0f);
        out[(size_t)p.plane_coh * npix + o] = n > 0 && den > 0.0f ? g : p.dst_nodata;
    }
    if (p.plane_amp >= 0) {
        const float inv = n > 0 ? 1.0f / (float)n : 0.0f;
        out[(size_t)p.plane_amp * npix + o] = n > 0 ? sqrt(sqrt(p1 * inv) * sqrt(p2 * inv)) : p.dst_nodata;
    }
}
