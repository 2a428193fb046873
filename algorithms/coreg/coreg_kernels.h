/*
 * coreg_kernels.h -- the steps of batched window cross-correlation
 * (xcorr_engine.c drives them), written once in the kernel dialect
 * (gpu/kernel_dialect.h) for CPU, CUDA and OpenCL.
 *
 * Layout: a batch of nwin windows; every per-window image is stored back
 * to back (window w's image starts at w * width * height), complex images
 * as interleaved float re, im.  Grids over images are (width, height*nwin):
 * item (x, Y) is pixel (x, Y % height) of window Y / height.  Per-window
 * scalars live in the state buffer `ws` (GG_XC_WS floats per window, slots
 * in coreg_params.h); kernels over windows use a (1, nwin) grid (the CPU
 * loop spreads rows over threads) and loop over that window's pixels (one
 * work item per window: fine for small surfaces; the GMTSAR mode's large
 * ones use the two-level reductions further down).
 *
 * Invalid samples (non-finite, the input nodata, or outside the uploaded
 * tile) are carried as NaN in the extracted chips; detection treats them
 * as the window mean (contributing nothing to the demeaned sums) and the
 * complex steps as 0.
 *
 * MIT licence.
 */

/* CPU loops with a copy of the params per thread (gpu/kernel_dialect.h) */
#undef GG_CPU_PARAMS
#define GG_CPU_PARAMS LOCAL

GG_DEVICE_FN int gg_xc_imin(int a, int b) { return a < b ? a : b; }
GG_DEVICE_FN int gg_xc_imax(int a, int b) { return a > b ? a : b; }

/* |c| of an extracted sample; NaN stays NaN */
GG_DEVICE_FN float gg_xc_amp(float re, float im) { return sqrt(re * re + im * im); }

/* Extract: template (rw x rh) and search chip (sw x sh) of every window
 * from the uploaded tile (two planes).  pos[4w..4w+3] = template x, y and
 * chip x, y in tile coordinates.  Grid (sw, sh*nwin). */
GG_KERNEL4(gg_k_xc_extract, gg_xc_params, p, const float, tile, const int, pos, float, ref,
           float, sec)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.sh, y = Y % p.sh;
    const size_t plane = (size_t)p.tile_w * (size_t)p.tile_h;
    const float qnan = NAN;
    {
        const int tx = pos[4 * w + 2] + x, ty = pos[4 * w + 3] + y;
        float re = qnan, im = qnan;
        if (tx >= 0 && ty >= 0 && tx < p.tile_w && ty < p.tile_h) {
            const size_t k = (size_t)(1 - p.ref_plane) * plane + (size_t)ty * p.tile_w + tx;
            re = tile[2 * k];
            im = tile[2 * k + 1];
            if (!gg_cvalid(re, im, p.has_nodata, p.nodata))
                re = im = qnan;
        }
        const size_t o = ((size_t)w * p.sh + y) * p.sw + x;
        sec[2 * o] = re;
        sec[2 * o + 1] = im;
    }
    if (x < p.rw && y < p.rh) {
        const int tx = pos[4 * w] + x, ty = pos[4 * w + 1] + y;
        float re = qnan, im = qnan;
        if (tx >= 0 && ty >= 0 && tx < p.tile_w && ty < p.tile_h) {
            const size_t k = (size_t)p.ref_plane * plane + (size_t)ty * p.tile_w + tx;
            re = tile[2 * k];
            im = tile[2 * k + 1];
            if (!gg_cvalid(re, im, p.has_nodata, p.nodata))
                re = im = qnan;
        }
        const size_t o = ((size_t)w * p.rh + y) * p.rw + x;
        ref[2 * o] = re;
        ref[2 * o + 1] = im;
    }
}

/* Pack: z = R' + i S' on the pw x ph correlation plane, R' the demeaned
 * template amplitude (zero beyond rw x rh), S' the demeaned chip amplitude
 * (zero beyond sw x sh); invalid samples count as 0.  Two real transforms
 * then cost one complex FFT (split again in gg_k_xc_xspec). */
GG_KERNEL4(gg_k_xc_pack, gg_xc_params, p, const float, ref, const float, sec, const float, ws,
           float, z)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.ph, y = Y % p.ph;
    GG_GLOBAL const float *s = ws + (size_t)w * GG_XC_WS;
    float a = 0.0f, b = 0.0f;
    const int tw = p.tw > 0 ? p.tw : p.rw, th = p.tw > 0 ? p.th : p.rh;
    if (x < tw && y < th) {
        const size_t k = ((size_t)w * p.rh + y + p.toy) * p.rw + x + p.tox;
        const float v = gg_xc_amp(ref[2 * k], ref[2 * k + 1]);
        a = isfinite(v) ? v - s[GG_XC_RMEAN] : 0.0f;
    }
    if (x < p.sw && y < p.sh) {
        const size_t k = ((size_t)w * p.sh + y) * p.sw + x;
        const float v = gg_xc_amp(sec[2 * k], sec[2 * k + 1]);
        b = isfinite(v) ? v - s[GG_XC_SMEAN] : 0.0f;
    }
    const size_t o = ((size_t)w * p.ph + y) * p.pw + x;
    z[2 * o] = a;
    z[2 * o + 1] = b;
}

/* Cross spectrum: with Z = FFT(R' + i S'), FR = (Z[k] + conj Z[-k]) / 2 and
 * FS = (Z[k] - conj Z[-k]) / 2i; out = conj(FR) FS, whose inverse FFT is
 * N * sum_u R'[u] S'[u + lag] (circular; no wrap for lags 0..sw-rw because
 * pw >= sw). */
GG_KERNEL2(gg_k_xc_xspec, gg_xc_params, p, const float, z, float, out)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.ph, y = Y % p.ph;
    const int xm = (p.pw - x) % p.pw, ym = (p.ph - y) % p.ph;
    const size_t base = (size_t)w * p.ph * p.pw;
    const size_t k = base + (size_t)y * p.pw + x, km = base + (size_t)ym * p.pw + xm;
    const float ar = z[2 * k], ai = z[2 * k + 1];
    const float br = z[2 * km], bi = -z[2 * km + 1]; /* conj Z[-k] */
    const float rr = 0.5f * (ar + br), ri = 0.5f * (ai + bi);         /* FR */
    const float sr = 0.5f * (ai - bi), si = -0.5f * (ar - br);        /* FS = (A-B)/(2i) */
    out[2 * k] = rr * sr + ri * si; /* conj(FR) * FS */
    out[2 * k + 1] = rr * si - ri * sr;
}

/* Row sums for the normalisation: for chip row y and lag l, the sum of S'
 * and of S'^2 over the rw samples from column l.  Grid (lx, sh*nwin). */
GG_KERNEL4(gg_k_xc_rowsum, gg_xc_params, p, const float, sec, const float, ws, float, rs1,
           float, rs2)
{
    const int l = GG_X, Y = GG_Y;
    if (l >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.sh, y = Y % p.sh;
    const float m = ws[(size_t)w * GG_XC_WS + GG_XC_SMEAN];
    GG_GLOBAL const float *row = sec + (((size_t)w * p.sh + y) * p.sw + l) * 2;
    float a = 0.0f, b = 0.0f;
    for (int v = 0; v < p.rw; v++) {
        const float amp = gg_xc_amp(row[2 * v], row[2 * v + 1]);
        const float d = isfinite(amp) ? amp - m : 0.0f;
        a += d;
        b += d * d;
    }
    const size_t o = ((size_t)w * p.sh + y) * p.lx + l;
    rs1[o] = a;
    rs2[o] = b;
}

/* Normalised cross-correlation at lag (k, l) (grid (lx, ly*nwin)):
 * c / sqrt(sum R'^2 * (sum S'^2 - (sum S')^2 / n)) with the chip sums over
 * the rw x rh block at that lag; normalise 0 writes the raw c. */
GG_KERNEL5(gg_k_xc_norm, gg_xc_params, p, const float, corr, const float, rs1, const float, rs2,
           const float, ws, float, out)
{
    const int l = GG_X, Y = GG_Y;
    if (l >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.ly, k = Y % p.ly;
    const float c = corr[2 * (((size_t)w * p.ph + k) * p.pw + l)] / ((float)p.pw * (float)p.ph);
    const size_t o = ((size_t)w * p.ly + k) * p.lx + l;
    if (!p.normalise) {
        out[o] = c;
        return;
    }
    double s1 = 0.0, s2 = 0.0;
    for (int u = 0; u < p.rh; u++) {
        const size_t q = ((size_t)w * p.sh + k + u) * p.lx + l;
        s1 += rs1[q];
        s2 += rs2[q];
    }
    const double n = (double)p.rw * (double)p.rh;
    const double var = s2 - s1 * s1 / n;
    const double den = sqrt((double)ws[(size_t)w * GG_XC_WS + GG_XC_RSS] * (var > 0.0 ? var : 0.0));
    out[o] = den > 0.0 ? (float)(c / den) : 0.0f;
}

/* Peak of a quality-mode surface (lx x ly per window), one item per
 * window (the GMTSAR mode's integer peak is gg_k_xc_colmax + winmax).
 *   stage 0: raw NCC surface: peak over ux x uy, SNR over the
 *            (2 stat_half + 1)^2 neighbourhood, covariance from the
 *            curvature, zoom start clamped into the surface;
 *   stage 1: zoom surface: integer peak over [0, zw)^2 -> ZPY, ZPX. */
GG_KERNEL2(gg_k_xc_peak, gg_xc_params, p, const float, surf, float, ws)
{
    if (GG_X >= gg_nx || GG_Y >= gg_ny)
        return;
    const int w = GG_X + GG_Y * gg_nx; /* grid (1, nwin): windows over CPU threads */
    GG_GLOBAL float *s = ws + (size_t)w * GG_XC_WS;
    GG_GLOBAL const float *c = surf + (size_t)w * p.lx * p.ly;
    const int ny = p.stage == 1 ? p.zw : p.uy, nx = p.stage == 1 ? p.zw : p.ux;
    int py = 0, px = 0;
    float best = -INFINITY;
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            const float v = c[y * p.lx + x];
            if (v > best) {
                best = v;
                py = y;
                px = x;
            }
        }
    if (p.stage == 1) {
        s[GG_XC_ZPY] = (float)py;
        s[GG_XC_ZPX] = (float)px;
        return;
    }
    s[GG_XC_PY] = (float)py;
    s[GG_XC_PX] = (float)px;
    s[GG_XC_PV] = best;
    /* SNR: peak^2 over the mean square of the other samples of the
     * statistics window (clipped to the surface) */
    double sq = 0.0;
    int n = 0;
    for (int y = gg_xc_imax(py - p.stat_half, 0); y <= gg_xc_imin(py + p.stat_half, p.ly - 1); y++)
        for (int x = gg_xc_imax(px - p.stat_half, 0); x <= gg_xc_imin(px + p.stat_half, p.lx - 1);
             x++) {
            const float v = c[y * p.lx + x];
            sq += (double)v * v;
            n++;
        }
    const double pk2 = (double)best * best;
    const double mean = n > 1 ? (sq - pk2) / (n - 1) : 0.0;
    s[GG_XC_SNR] = mean > 0.0 ? (float)(pk2 / mean) : 0.0f;
    /* peak ratio: the peak over the highest other local maximum (a sample
     * above its 8 neighbours within the searched lags) of the surface.  A
     * pure-noise surface has many maxima of similar height (ratio near 1);
     * a real match stands out whatever the SNR window sees. */
    float second = 0.0f;
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            const float v = c[y * p.lx + x];
            if (v <= second || (y == py && x == px))
                continue;
            int top = 1;
            for (int dy = -1; dy <= 1 && top; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    const int yy = y + dy, xx = x + dx;
                    if ((dy || dx) && yy >= 0 && yy < ny && xx >= 0 && xx < nx &&
                        c[yy * p.lx + xx] >= v) {
                        top = 0;
                        break;
                    }
                }
            if (top)
                second = v;
        }
    s[GG_XC_PRATIO] = second > 0.0f ? fmin(best / second, GG_XC_PRATIO_MAX) : GG_XC_PRATIO_MAX;
    /* covariance of the peak position from the surface curvature and a
     * (1 - peak) noise term scaled by the template size (ROI_PAC ampcor's
     * estimate); 99 when the peak is on the border or the surface flat */
    float cyy = 99.0f, cxx = 99.0f, cyx = 0.0f;
    if (py >= 1 && px >= 1 && py + 1 < p.ly && px + 1 < p.lx) {
        const float t = (float)p.rw * (float)p.rh;
        const float c11 = c[py * p.lx + px];
        const float dyy = -(c[(py + 1) * p.lx + px] + c[(py - 1) * p.lx + px] - 2.0f * c11) * t;
        const float dxx = -(c[py * p.lx + px + 1] + c[py * p.lx + px - 1] - 2.0f * c11) * t;
        const float dyx = (c[(py + 1) * p.lx + px + 1] + c[(py - 1) * p.lx + px - 1] -
                           c[(py + 1) * p.lx + px - 1] - c[(py - 1) * p.lx + px + 1]) * 0.25f * t;
        const float e = fmax(1.0f - best, 0.0f);
        const float n2 = 2.0f * e, n4 = 0.5f * e * e * t;
        const float u = dyx * dyx - dyy * dxx;
        if (fabs(u) >= 1e-2f) {
            const float u2 = u * u;
            cyy = (-n2 * u * dxx + n4 * (dxx * dxx + dyx * dyx)) / u2;
            cxx = (-n2 * u * dyy + n4 * (dyy * dyy + dyx * dyx)) / u2;
            cyx = (n2 * u * dyx - n4 * (dyy + dxx) * dyx) / u2;
        }
    }
    s[GG_XC_COV] = cyy;
    s[GG_XC_COV + 1] = cxx;
    s[GG_XC_COV + 2] = cyx;
    /* zoom sub-chip start: hz either side of the peak, kept inside the
     * surface (a peak near the border is then off-centre in the zoom) */
    const int my = p.ly - 1 - 2 * p.hz, mx = p.lx - 1 - 2 * p.hz;
    s[GG_XC_STY] = (float)gg_xc_imin(gg_xc_imax(py - p.hz, 0), my);
    s[GG_XC_STX] = (float)gg_xc_imin(gg_xc_imax(px - p.hz, 0), mx);
}

/* Zoom sub-chip (bw x bh) of each search chip (sw x sh) from the zoom
 * start; invalid samples become 0.  Grid (bw, bh*nwin). */
GG_KERNEL3(gg_k_xc_zextract, gg_xc_params, p, const float, sec, const float, ws, float, zc)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.bh, y = Y % p.bh;
    GG_GLOBAL const float *s = ws + (size_t)w * GG_XC_WS;
    const int sy = (int)s[GG_XC_STY] + y, sx = (int)s[GG_XC_STX] + x;
    const size_t k = ((size_t)w * p.sh + sy) * p.sw + sx;
    float re = sec[2 * k], im = sec[2 * k + 1];
    if (!isfinite(re) || !isfinite(im))
        re = im = 0.0f;
    const size_t o = ((size_t)w * p.bh + y) * p.bw + x;
    zc[2 * o] = re;
    zc[2 * o + 1] = im;
}

/* Mean phase step along y and x of each complex image (bw x bh), one
 * item per window, amplitude-weighted (arg of sum c[i] conj c[i+1]):
 * the carrier that deramping removes so that the spectrum is centred
 * before FFT oversampling.  Writes ws[slot], ws[slot+1].
 *
 * An axis whose lag-1 correlation is not significant gets no deramp
 * (step 0, gg_xc_lag1_phase): rotating a white spectrum by a random step
 * wraps part of it across Nyquist before the zero-padding, differently in
 * the template and the chip, and biases the zoomed peak by up to a pixel
 * (measured on the low-backscatter part of the Winnipeg SLC:
 * docs/gdal_xcorr.md).  The resampler's carrier (gdal_coreg -carrier,
 * algorithms/coreg/carrier.c) is the same estimator over the whole
 * secondary. */
GG_KERNEL2(gg_k_xc_ramp, gg_xc_params, p, const float, img, float, ws)
{
    if (GG_X >= gg_nx || GG_Y >= gg_ny)
        return;
    const int w = GG_X + GG_Y * gg_nx; /* grid (1, nwin): windows over CPU threads */
    GG_GLOBAL const float *c = img + (size_t)w * p.bw * p.bh * 2;
    double sy[4] = {0.0, 0.0, 0.0, 0.0}, sx[4] = {0.0, 0.0, 0.0, 0.0};
    if (p.deramp) {
        for (int y = 0; y < p.bh; y++)
            for (int x = 0; x < p.bw; x++) {
                const size_t k = (size_t)y * p.bw + x;
                const float ar = c[2 * k], ai = c[2 * k + 1];
                if (!isfinite(ar) || !isfinite(ai))
                    continue;
                if (x + 1 < p.bw) {
                    const float br = c[2 * (k + 1)], bi = c[2 * (k + 1) + 1];
                    if (isfinite(br) && isfinite(bi))
                        gg_xc_lag1_add(sx, ar, ai, br, bi);
                }
                if (y + 1 < p.bh) {
                    const float br = c[2 * (k + p.bw)], bi = c[2 * (k + p.bw) + 1];
                    if (isfinite(br) && isfinite(bi))
                        gg_xc_lag1_add(sy, ar, ai, br, bi);
                }
            }
    }
    GG_GLOBAL float *s = ws + (size_t)w * GG_XC_WS;
    s[p.slot] = (float)gg_xc_lag1_phase(sy);
    s[p.slot + 1] = (float)gg_xc_lag1_phase(sx);
}

/* Deramp in place: c * exp(i (phase_y y + phase_x x)), invalid -> 0.
 * Grid (bw, bh*nwin). */
GG_KERNEL2(gg_k_xc_deramp, gg_xc_params, p, const float, ws, float, img)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.bh, y = Y % p.bh;
    GG_GLOBAL const float *s = ws + (size_t)w * GG_XC_WS;
    const size_t k = ((size_t)w * p.bh + y) * p.bw + x;
    const float re = img[2 * k], im = img[2 * k + 1];
    if (!isfinite(re) || !isfinite(im)) {
        img[2 * k] = img[2 * k + 1] = 0.0f;
        return;
    }
    const double ph = (double)s[p.slot] * y + (double)s[p.slot + 1] * x;
    if (ph == 0.0)
        return;
    const double cs = cos(ph), sn = sin(ph);
    img[2 * k] = (float)(re * cs - im * sn);
    img[2 * k + 1] = (float)(re * sn + im * cs);
}

/* Index and weight of input frequency for output bin o of a zero-padded
 * spectrum (input n bins, output m >= n bins): positive frequencies stay
 * at the start, negative ones move to the end, and an even n's Nyquist
 * bin is split in halves between +n/2 and -n/2 (so real signals stay
 * real).  Returns -1 for the new zero bins. */
GG_DEVICE_FN int gg_xc_padmap(int o, int n, int m, float *wt)
{
    *wt = 1.0f;
    if (m == n)
        return o;
    const int h = n / 2;
    if (n % 2 == 0) {
        if (o < h)
            return o;
        if (o == h || o == m - h) {
            *wt = 0.5f;
            return h;
        }
        if (o > m - h)
            return o - m + n;
        return -1;
    }
    if (o <= h)
        return o;
    if (o >= m - h)
        return o - m + n;
    return -1;
}

/* Zero-pad spectra (bw x bh -> ow x oh) times scale.  Grid (ow, oh*nwin). */
GG_KERNEL2_CPU_OWN(gg_k_xc_pad, gg_xc_params, p, const float, in, float, out)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.oh, y = Y % p.oh;
    float wy, wx;
    const int iy = gg_xc_padmap(y, p.bh, p.oh, &wy), ix = gg_xc_padmap(x, p.bw, p.ow, &wx);
    const size_t o = ((size_t)w * p.oh + y) * p.ow + x;
    if (iy < 0 || ix < 0) {
        out[2 * o] = out[2 * o + 1] = 0.0f;
        return;
    }
    const size_t k = ((size_t)w * p.bh + iy) * p.bw + ix;
    const float f = wy * wx * p.scale;
    out[2 * o] = in[2 * k] * f;
    out[2 * o + 1] = in[2 * k + 1] * f;
}

#ifdef GG_KERNEL_CPU
/* The CPU's pad: the column map (gg_xc_padmap along x) is the same for
 * every row, so each thread tabulates it once and the rows become
 * branch-free gathers with the GPU item's factor, wy * wx * scale. */
static void gg_k_xc_pad_cpu(int nx, int ny, const void *pp, void *const *bufs)
{
#pragma omp parallel
    {
        const gg_xc_params p = *(const gg_xc_params *)pp;
        const float *const in = (const float *)bufs[0];
        float *const out = (float *)bufs[1];
        int *ixs = malloc(sizeof(int) * (size_t)nx);
        float *wxs = malloc(sizeof(float) * (size_t)nx);
        if (ixs && wxs)
            for (int x = 0; x < nx; x++)
                ixs[x] = gg_xc_padmap(x, p.bw, p.ow, &wxs[x]);
#pragma omp for schedule(static)
        for (int Y = 0; Y < ny; Y++) {
            if (!ixs || !wxs) { /* no table (out of memory): the GPU item */
                for (int x = 0; x < nx; x++)
                    gg_k_xc_pad_item(x, Y, nx, ny, p, in, out);
                continue;
            }
            const int w = Y / p.oh, y = Y % p.oh;
            float wy;
            const int iy = gg_xc_padmap(y, p.bh, p.oh, &wy);
            float *o = out + ((size_t)w * p.oh + y) * p.ow * 2;
            if (iy < 0) {
                for (int x = 0; x < nx; x++)
                    o[2 * x] = o[2 * x + 1] = 0.0f;
                continue;
            }
            const float *r = in + ((size_t)w * p.bh + iy) * p.bw * 2;
            for (int x = 0; x < nx; x++) {
                const int ix = ixs[x];
                const float f = wy * wxs[x] * p.scale;
                o[2 * x] = ix < 0 ? 0.0f : r[2 * ix] * f;
                o[2 * x + 1] = ix < 0 ? 0.0f : r[2 * ix + 1] * f;
            }
        }
        free(ixs);
        free(wxs);
    }
}
#endif

/* DFT of the zw x zw zoom surface of each window: F[k][l] =
 * sum_y sum_x v[y][x] exp(-2 pi i (k y + l x) / zw), the twiddles read from
 * tw (tw[f][ovs*y] = exp(+2 pi i f y / zw)).  The surface block starts at
 * (0, 0) of the lx x ly surface (stage 0) or at the integer peak - zw/2
 * (stage 1, GMTSAR; samples outside the ux x uy lags count as 0).
 * power != 1 raises the (non-negative) values to it first.
 * Grid (zw, zw*nwin). */
GG_KERNEL4(gg_k_xc_dft, gg_xc_params, p, const float, surf, const float, tw, const float, ws,
           float, F)
{
    const int l = GG_X, Y = GG_Y;
    if (l >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.zw, k = Y % p.zw;
    GG_GLOBAL const float *c = surf + (size_t)w * p.lx * p.ly;
    GG_GLOBAL const float *s = ws + (size_t)w * GG_XC_WS;
    int oy = 0, ox = 0;
    if (p.stage == 1) {
        oy = (int)s[GG_XC_PY] - p.zw / 2;
        ox = (int)s[GG_XC_PX] - p.zw / 2;
    }
    const int M = p.zw * p.ovs;
    float fr = 0.0f, fi = 0.0f;
    for (int y = 0; y < p.zw; y++) {
        const int sy = oy + y;
        for (int x = 0; x < p.zw; x++) {
            const int sx = ox + x;
            float v = 0.0f;
            if (sy >= 0 && sx >= 0 && sy < (p.stage == 1 ? p.uy : p.ly) &&
                sx < (p.stage == 1 ? p.ux : p.lx))
                v = c[sy * p.lx + sx];
            if (p.use_abs)
                v = fabs(v);
            if (p.power != 1.0f)
                v = v > 0.0f ? pow(v, p.power) : 0.0f;
            /* exp(-i a) exp(-i b) = conj(tw[k][y] tw[l][x]) */
            const size_t ty = 2 * ((size_t)k * M + (size_t)y * p.ovs);
            const size_t tx = 2 * ((size_t)l * M + (size_t)x * p.ovs);
            const float er = tw[ty] * tw[tx] - tw[ty + 1] * tw[tx + 1];
            const float ei = tw[ty] * tw[tx + 1] + tw[ty + 1] * tw[tx];
            fr += v * er;
            fi -= v * ei;
        }
    }
    const size_t o = ((size_t)w * p.zw + k) * p.zw + l;
    F[2 * o] = fr;
    F[2 * o + 1] = fi;
}

/* First sample (in 1/ovs zoom-sample units) of the searched region of the
 * interpolated surface: the whole period when nreg covers it, else
 * centred on the integer zoom peak. */
GG_DEVICE_FN int gg_xc_region0(int peak, gg_xc_params p)
{
    return p.nreg >= p.zw * p.ovs ? 0 : peak * p.ovs - (p.nreg - 1) / 2;
}

/* Band-limited interpolation of the zoom surface, separable, step 1 (along
 * x): G[k][j] = sum_l F[k][l] tw[l][m0x + j].  Grid (nreg, zw*nwin). */
GG_KERNEL4(gg_k_xc_zeval1, gg_xc_params, p, const float, F, const float, tw, const float, ws,
           float, G)
{
    const int j = GG_X, Y = GG_Y;
    if (j >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.zw, k = Y % p.zw;
    const int M = p.zw * p.ovs;
    const int peak = p.stage == 1 ? p.zw / 2 : (int)ws[(size_t)w * GG_XC_WS + GG_XC_ZPX];
    const int m = ((gg_xc_region0(peak, p) + j) % M + M) % M;
    GG_GLOBAL const float *f = F + ((size_t)w * p.zw + k) * p.zw * 2;
    float gr = 0.0f, gi = 0.0f;
    for (int l = 0; l < p.zw; l++) {
        const float ar = f[2 * l], ai = f[2 * l + 1];
        const float br = tw[2 * ((size_t)l * M + m)], bi = tw[2 * ((size_t)l * M + m) + 1];
        gr += ar * br - ai * bi;
        gi += ar * bi + ai * br;
    }
    const size_t o = ((size_t)w * p.zw + k) * p.nreg + j;
    G[2 * o] = gr;
    G[2 * o + 1] = gi;
}

/* Step 2 (along y): V[i][j] = Re sum_k G[k][j] tw[k][m0y + i] / zw^2.
 * Grid (nreg, nreg*nwin). */
GG_KERNEL4(gg_k_xc_zeval2, gg_xc_params, p, const float, G, const float, tw, const float, ws,
           float, V)
{
    const int j = GG_X, Y = GG_Y;
    if (j >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.nreg, i = Y % p.nreg;
    const int M = p.zw * p.ovs;
    const int peak = p.stage == 1 ? p.zw / 2 : (int)ws[(size_t)w * GG_XC_WS + GG_XC_ZPY];
    const int m = ((gg_xc_region0(peak, p) + i) % M + M) % M;
    float v = 0.0f;
    for (int k = 0; k < p.zw; k++) {
        const size_t q = ((size_t)w * p.zw + k) * p.nreg + j;
        v += G[2 * q] * tw[2 * ((size_t)k * M + m)] - G[2 * q + 1] * tw[2 * ((size_t)k * M + m) + 1];
    }
    V[((size_t)w * p.nreg + i) * p.nreg + j] = v / ((float)p.zw * (float)p.zw);
}

/* Final step of the quality mode, one item per window: argmax of the
 * interpolated region; offsets = zoom start + position / osf - half
 * search + gross, written with snr, covariance and peak value as
 * GG_XC_NBANDS floats per window (dst_nodata when invalid).  (The GMTSAR
 * mode's argmax is gg_k_xc_colmax + winmax, stage 1.) */
GG_KERNEL3(gg_k_xc_final, gg_xc_params, p, const float, V, float, ws, float, out)
{
    if (GG_X >= gg_nx || GG_Y >= gg_ny)
        return;
    const int w = GG_X + GG_Y * gg_nx; /* grid (1, nwin): windows over CPU threads */
    GG_GLOBAL float *s = ws + (size_t)w * GG_XC_WS;
    GG_GLOBAL const float *v = V + (size_t)w * p.nreg * p.nreg;
    int bi = 0, bj = 0;
    float best = -INFINITY;
    for (int i = 0; i < p.nreg; i++)
        for (int j = 0; j < p.nreg; j++)
            if (v[i * p.nreg + j] > best) {
                best = v[i * p.nreg + j];
                bi = i;
                bj = j;
            }
    const float my = (float)(gg_xc_region0((int)s[GG_XC_ZPY], p) + bi) / p.ovs;
    const float mx = (float)(gg_xc_region0((int)s[GG_XC_ZPX], p) + bj) / p.ovs;
    const float dy = s[GG_XC_STY] + my / p.osf - p.hsy + p.gross_y;
    const float dx = s[GG_XC_STX] + mx / p.osf - p.hsx + p.gross_x;
    const int ok = s[GG_XC_VALID] > 0.5f;
    GG_GLOBAL float *o = out + (size_t)w * GG_XC_NBANDS;
    o[0] = ok ? dy : p.dst_nodata;
    o[1] = ok ? dx : p.dst_nodata;
    o[2] = ok ? s[GG_XC_SNR] : p.dst_nodata;
    o[3] = ok ? s[GG_XC_COV] : p.dst_nodata;
    o[4] = ok ? s[GG_XC_COV + 1] : p.dst_nodata;
    o[5] = ok ? s[GG_XC_COV + 2] : p.dst_nodata;
    o[6] = ok ? best : p.dst_nodata;
    o[7] = ok ? s[GG_XC_PRATIO] : p.dst_nodata;
    s[GG_XC_OUT_Y] = dy;
    s[GG_XC_OUT_X] = dx;
    s[GG_XC_OUT_V] = best;
}

/* ------------------------------------------ GMTSAR mode, batched design
 *
 * gmtsar_xcorr.c runs every patch of a chunk (hundreds to all of them) in
 * one batch.  Its per-window reductions are two-level so that a batch of
 * N windows of C columns keeps N x C work items busy: a column kernel
 * (grid (C, N), item (x, w) walks column x of window w down its rows:
 * neighbouring items read neighbouring addresses) writes GG_XC_PART_*
 * doubles per column, then a window kernel (grid (1, N): on the CPU the
 * windows spread over threads) combines the C partials. */

/* int16 I/Q sample packed in an int (little endian: I low, Q high) ->
 * floats, without relying on narrowing or signed-shift behaviour. */
GG_DEVICE_FN float gg_xc_lo16(int v)
{
    return (float)(((v & 0xFFFF) ^ 0x8000) - 0x8000); /* sign extension, no branch */
}
GG_DEVICE_FN float gg_xc_hi16(int v)
{
    return (float)((((v >> 16) & 0xFFFF) ^ 0x8000) - 0x8000);
}

/* Patch extraction straight from the raw int16 I/Q lines: each file's
 * lines live in a device ring of tile_h lines (file line y in slot
 * y % tile_h) of that file's samples (tile_w master, a_tile_w aligned), so
 * a chunk uploads only the lines the previous chunks did not.  pos:
 * template (aligned file) x, y, then chip (master file) x, y, in file
 * coordinates.  Samples outside their file (columns or lines: src_h master,
 * a_src_h aligned; GMTSAR's stale rows, B2) are NaN, and so are 0+0i
 * samples when zero_nodata (zero fill).  Grid (sw, sh*nwin);
 * template and chip have the same size here (rw = sw, rh = sh). */
GG_KERNEL5(gg_k_xc_extract16, gg_xc_params, p, const int, ring_m, const int, ring_a,
           const int, pos, float, ref, float, sec)
{
    const int x = GG_X, Y = GG_Y;
    if (x >= gg_nx || Y >= gg_ny)
        return;
    const int w = Y / p.sh, y = Y % p.sh;
    const float qnan = NAN;
    const size_t o = ((size_t)w * p.sh + y) * p.sw + x;
    /* line and ring slot of both patches first, unconditionally: they
     * depend on the row only, so a CPU loop over x computes them once */
    const int tya = pos[4 * w + 1] + y, tym = pos[4 * w + 3] + y;
    const int slota = tya % p.tile_h, slotm = tym % p.tile_h;
    {
        const int tx = pos[4 * w] + x;
        float re = qnan, im = qnan;
        if (tx >= 0 && tya >= 0 && tx < p.a_tile_w && tya < p.a_src_h) {
            const int v = ring_a[(size_t)slota * p.a_tile_w + tx];
            if (!(p.zero_nodata && v == 0)) {
                re = gg_xc_lo16(v);
                im = gg_xc_hi16(v);
            }
        }
        ref[2 * o] = re;
        ref[2 * o + 1] = im;
    }
    {
        const int tx = pos[4 * w + 2] + x;
        float re = qnan, im = qnan;
        if (tx >= 0 && tym >= 0 && tx < p.tile_w && tym < p.src_h) {
            const int v = ring_m[(size_t)slotm * p.tile_w + tx];
            if (!(p.zero_nodata && v == 0)) {
                re = gg_xc_lo16(v);
                im = gg_xc_hi16(v);
            }
        }
        sec[2 * o] = re;
        sec[2 * o + 1] = im;
    }
}

/* Statistics of template and chip, both modes, step 1 (column partials):
 * for column x of template (rw x rh) and chip (sw x sh), the valid count,
 * mean and M2 (Welford, so a flat template gives exactly 0) of the
 * detected template amplitudes, the valid count and mean of the chip's.
 * zero_invalid also turns invalid (NaN) samples into 0 in place, for the
 * GMTSAR mode's FFTs (the quality mode keeps them NaN: its later steps
 * treat them as the mean).  Grid (max(rw, sw), nwin). */
/* One detected sample into a column's partials: the template's count,
 * mean and M2 (Welford) or the chip's count and mean.  The GPU item and
 * the CPU loop below both go through these, so they agree bit for bit. */
GG_DEVICE_FN void gg_xc_welford(float a, double *n, double *m, double *m2)
{
    *n += 1.0;
    const double d = a - *m;
    *m += d / *n;
    *m2 += d * (a - *m);
}
GG_DEVICE_FN void gg_xc_runmean(float a, double *n, double *m)
{
    *n += 1.0;
    *m += (a - *m) / *n;
}

GG_KERNEL3_CPU_OWN(gg_k_xc_colstats, gg_xc_params, p, float, ref, float, sec, double, part)
{
    const int x = GG_X, w = GG_Y;
    if (x >= gg_nx || w >= gg_ny)
        return;
    double nr = 0.0, mr = 0.0, m2 = 0.0, ns = 0.0, ms = 0.0;
    if (x < p.rw)
        for (int y = 0; y < p.rh; y++) {
            const size_t k = ((size_t)w * p.rh + y) * p.rw + x;
            const float a = gg_xc_amp(ref[2 * k], ref[2 * k + 1]);
            if (isfinite(a))
                gg_xc_welford(a, &nr, &mr, &m2);
            else if (p.zero_invalid) {
                ref[2 * k] = 0.0f;
                ref[2 * k + 1] = 0.0f;
            }
        }
    if (x < p.sw)
        for (int y = 0; y < p.sh; y++) {
            const size_t k = ((size_t)w * p.sh + y) * p.sw + x;
            const float a = gg_xc_amp(sec[2 * k], sec[2 * k + 1]);
            if (isfinite(a))
                gg_xc_runmean(a, &ns, &ms);
            else if (p.zero_invalid) {
                sec[2 * k] = 0.0f;
                sec[2 * k + 1] = 0.0f;
            }
        }
    GG_GLOBAL double *q = part + ((size_t)w * gg_nx + x) * GG_XC_PART_STATS;
    q[0] = nr;
    q[1] = mr;
    q[2] = m2;
    q[3] = ns;
    q[4] = ms;
}

#ifdef GG_KERNEL_CPU
/* The CPU's colstats: the same per-column recurrences, walked along rows.
 * A column walk on a CPU strides a whole row between samples and chains
 * every sample's division on the previous one; along a row, a block of
 * neighbouring columns advances together (independent divisions in
 * flight, contiguous reads).  Tasks are blocks of columns, as wide as
 * leaves two a thread (whole rows when the batch allows: on the
 * development VM 512 columns cost 30 % less than 64), so that a batch of
 * few windows still spreads over every thread. */
static void gg_k_xc_colstats_cpu(int nx, int ny, const void *pp, void *const *bufs)
{
    const long long want = ((long long)nx * ny / (2 * omp_get_max_threads()) + 15) / 16 * 16;
    const int cb = (int)(want < 64 ? gg_xc_imin(64, nx) : want > nx ? nx : want);
    const int nb = (nx + cb - 1) / cb;
#pragma omp parallel
    {
        const gg_xc_params p = *(const gg_xc_params *)pp;
        float *const ref = (float *)bufs[0], *const sec = (float *)bufs[1];
        double *const part = (double *)bufs[2];
        double *st = malloc(sizeof(double) * 5 * (size_t)cb);
#pragma omp for schedule(static)
        for (int t = 0; t < nb * ny; t++) {
            const int w = t / nb, x0 = (t % nb) * cb, x1 = gg_xc_imin(x0 + cb, nx);
            if (!st) { /* no state arrays (out of memory): the GPU items */
                for (int x = x0; x < x1; x++)
                    gg_k_xc_colstats_item(x, w, nx, ny, p, ref, sec, part);
                continue;
            }
            double *nr = st, *mr = st + cb, *m2 = st + 2 * cb, *ns = st + 3 * cb, *ms = st + 4 * cb;
            for (int i = 0; i < 5 * cb; i++)
                st[i] = 0.0;
            const int rx1 = gg_xc_imin(x1, p.rw), sx1 = gg_xc_imin(x1, p.sw);
            for (int y = 0; y < p.rh; y++) {
                float *row = ref + ((size_t)w * p.rh + y) * p.rw * 2;
                for (int x = x0; x < rx1; x++) {
                    const float a = gg_xc_amp(row[2 * x], row[2 * x + 1]);
                    if (isfinite(a))
                        gg_xc_welford(a, &nr[x - x0], &mr[x - x0], &m2[x - x0]);
                    else if (p.zero_invalid)
                        row[2 * x] = row[2 * x + 1] = 0.0f;
                }
            }
            for (int y = 0; y < p.sh; y++) {
                float *row = sec + ((size_t)w * p.sh + y) * p.sw * 2;
                for (int x = x0; x < sx1; x++) {
                    const float a = gg_xc_amp(row[2 * x], row[2 * x + 1]);
                    if (isfinite(a))
                        gg_xc_runmean(a, &ns[x - x0], &ms[x - x0]);
                    else if (p.zero_invalid)
                        row[2 * x] = row[2 * x + 1] = 0.0f;
                }
            }
            for (int x = x0; x < x1; x++) {
                double *q = part + ((size_t)w * nx + x) * GG_XC_PART_STATS;
                q[0] = nr[x - x0];
                q[1] = mr[x - x0];
                q[2] = m2[x - x0];
                q[3] = ns[x - x0];
                q[4] = ms[x - x0];
            }
        }
        free(st);
    }
}
#endif

/* Statistics, step 2 (per window): combines the column partials (Chan et
 * al.'s pairwise update) into VALID, RMEAN (mean detected template
 * amplitude over its valid samples), SMEAN (the chip's) and RSS (the
 * template's demeaned sum of squares).  stage 0 (first pass) sets VALID
 * from the valid fractions (>= min_valid) and a non-flat template; stage
 * 1 (oversampled / interpolated pass) only clears VALID when the template
 * is flat.  p.lx = columns of the partials.  Grid (1, nwin). */
GG_KERNEL2(gg_k_xc_winstats, gg_xc_params, p, const double, part, float, ws)
{
    const int w = GG_Y;
    if (GG_X >= gg_nx || w >= gg_ny)
        return;
    double nr = 0.0, mr = 0.0, m2 = 0.0, ns = 0.0, ms = 0.0;
    for (int x = 0; x < p.lx; x++) {
        GG_GLOBAL const double *q = part + ((size_t)w * p.lx + x) * GG_XC_PART_STATS;
        if (q[0] > 0.0) {
            const double n = nr + q[0], d = q[1] - mr;
            mr += d * q[0] / n;
            m2 += q[2] + d * d * nr * q[0] / n;
            nr = n;
        }
        if (q[3] > 0.0) {
            const double n = ns + q[3];
            ms += (q[4] - ms) * q[3] / n;
            ns = n;
        }
    }
    GG_GLOBAL float *s = ws + (size_t)w * GG_XC_WS;
    int valid = m2 > 0.0;
    if (p.stage == 0)
        valid = valid && nr >= p.min_valid * (float)(p.rw * p.rh) &&
                ns >= p.min_valid * (float)(p.sw * p.sh) && nr > 1.0 && ns > 1.0;
    else
        valid = valid && s[GG_XC_VALID] > 0.5f;
    s[GG_XC_VALID] = valid ? 1.0f : 0.0f;
    s[GG_XC_RMEAN] = (float)mr;
    s[GG_XC_SMEAN] = (float)ms;
    s[GG_XC_RSS] = (float)m2;
}

/* GMTSAR's quality value, the time-domain NCC at the integer peak
 * (PY, PX), step 1: sums of a b, a a, b b down column x of the tw x th
 * template (at tox, toy of ref) against the chip at that lag, a and b
 * the amplitudes less their whole-patch means (in float: GMTSAR
 * truncates them to integers, which gives 0 for small float data).
 * Grid (tw, nwin). */
GG_KERNEL4(gg_k_xc_coltcorr, gg_xc_params, p, const float, ref, const float, sec,
           const float, ws, double, part)
{
    const int x = GG_X, w = GG_Y;
    if (x >= gg_nx || w >= gg_ny)
        return;
    GG_GLOBAL const float *s = ws + (size_t)w * GG_XC_WS;
    const int py = (int)s[GG_XC_PY], px = (int)s[GG_XC_PX];
    const float mr = s[GG_XC_RMEAN], msec = s[GG_XC_SMEAN];
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int y = 0; y < p.th; y++) {
        const size_t k = ((size_t)w * p.rh + y + p.toy) * p.rw + x + p.tox;
        const size_t q = ((size_t)w * p.sh + y + py) * p.sw + x + px;
        const float va = gg_xc_amp(ref[2 * k], ref[2 * k + 1]);
        const float vb = gg_xc_amp(sec[2 * q], sec[2 * q + 1]);
        const double a = isfinite(va) ? va - mr : 0.0;
        const double b = isfinite(vb) ? vb - msec : 0.0;
        ab += a * b;
        aa += a * a;
        bb += b * b;
    }
    GG_GLOBAL double *o = part + ((size_t)w * gg_nx + x) * GG_XC_PART_TCORR;
    o[0] = ab;
    o[1] = aa;
    o[2] = bb;
}

/* Window step of the NCC: 100 |sum ab| / sqrt(sum aa sum bb) into NCC.
 * p.tw = columns of the partials.  Grid (1, nwin). */
GG_KERNEL2(gg_k_xc_wintcorr, gg_xc_params, p, const double, part, float, ws)
{
    const int w = GG_Y;
    if (GG_X >= gg_nx || w >= gg_ny)
        return;
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int x = 0; x < p.tw; x++) {
        GG_GLOBAL const double *q = part + ((size_t)w * p.tw + x) * GG_XC_PART_TCORR;
        ab += q[0];
        aa += q[1];
        bb += q[2];
    }
    ws[(size_t)w * GG_XC_WS + GG_XC_NCC] =
        aa > 0.0 && bb > 0.0 ? (float)(100.0 * fabs(ab) / sqrt(aa * bb)) : 0.0f;
}

/* Column step of an argmax over the ux x uy corner of a per-window
 * surface (rows lx apart, lx * ly per window): the largest value (|v|
 * when use_abs) of column x and its first row.  NaN never wins.  Grid
 * (ux, nwin). */
GG_KERNEL2(gg_k_xc_colmax, gg_xc_params, p, const float, surf, double, part)
{
    const int x = GG_X, w = GG_Y;
    if (x >= gg_nx || w >= gg_ny)
        return;
    GG_GLOBAL const float *c = surf + (size_t)w * p.lx * p.ly + x;
    float best = -INFINITY;
    int by = 0;
    for (int y = 0; y < p.uy; y++) {
        float v = c[(size_t)y * p.lx];
        if (p.use_abs)
            v = fabs(v);
        if (v > best) {
            best = v;
            by = y;
        }
    }
    GG_GLOBAL double *o = part + ((size_t)w * gg_nx + x) * GG_XC_PART_MAX;
    o[0] = best;
    o[1] = by;
}

/* Window step of the argmax: the first maximum in row-major order (the
 * largest value, then the smallest row, then the smallest column: the
 * same sample as a row-major scan with a strict >).  p.ux = columns of
 * the partials.
 *   stage 2: integer peak of the correlation surface -> PY, PX, PV;
 *   stage 1: argmax of the interpolated region (gg_k_xc_final's GMTSAR
 *            stage) -> OUT_Y, OUT_X, OUT_V.
 * Grid (1, nwin). */
GG_KERNEL2(gg_k_xc_winmax, gg_xc_params, p, const double, part, float, ws)
{
    const int w = GG_Y;
    if (GG_X >= gg_nx || w >= gg_ny)
        return;
    double best = -INFINITY;
    int bx = 0, by = 0;
    for (int x = 0; x < p.ux; x++) {
        GG_GLOBAL const double *q = part + ((size_t)w * p.ux + x) * GG_XC_PART_MAX;
        const int y = (int)q[1];
        if (q[0] > best || (q[0] == best && y < by)) {
            best = q[0];
            by = y;
            bx = x;
        }
    }
    GG_GLOBAL float *s = ws + (size_t)w * GG_XC_WS;
    if (p.stage == 2) {
        s[GG_XC_PY] = (float)by;
        s[GG_XC_PX] = (float)bx;
        s[GG_XC_PV] = (float)best;
        return;
    }
    const float fy = (float)(gg_xc_region0(p.zw / 2, p) + by) / p.ovs;
    const float fx = (float)(gg_xc_region0(p.zw / 2, p) + bx) / p.ovs;
    s[GG_XC_OUT_Y] = s[GG_XC_PY] - p.zw / 2 + fy;
    s[GG_XC_OUT_X] = s[GG_XC_PX] - p.zw / 2 + fx;
    s[GG_XC_OUT_V] = (float)best;
}

/* ------------------------------------------------------------ resample */

/* Weight of a tap at distance d from the sample point. */
GG_DEVICE_FN double gg_rs_weight(int kind, double d)
{
    const double a = fabs(d), pi = 3.14159265358979323846;
    if (kind == GG_RS_BILINEAR)
        return a < 1.0 ? 1.0 - a : 0.0;
    if (kind == GG_RS_BICUBIC) /* Keys, a = -0.5 */
        return a < 1.0 ? (1.5 * a - 2.5) * a * a + 1.0
                       : (a < 2.0 ? ((-0.5 * a + 2.5) * a - 4.0) * a + 2.0 : 0.0);
    const double s = a < 1e-12 ? 1.0 : sin(pi * a) / (pi * a);
    if (kind == GG_RS_SINC4)
        return s;
    return a < 4.0 ? s * (0.5 + 0.5 * cos(pi * a * 0.25)) : 0.0;
}

/* The secondary sampled at (sx, sy) into out[o..o+channels).  Taps
 * outside the secondary, nodata or NaN are left out and the others
 * renormalised (interpolation of a constant stays exact at edges); the
 * pixel is nodata when the sample point falls outside the secondary's
 * pixels or its nearest sample is invalid.
 *
 * Carrier-aware (complex input, car_y/car_x not both 0): an SLC whose
 * spectrum is centred on the carrier (f_y, f_x) (squint, Doppler) is
 * demodulated, interpolated and remodulated at the sample point, which is
 * the same as weighting tap (ix, iy) by w exp(-2 pi i (f_y (iy - sy) +
 * f_x (ix - sx))): phases relative to the sample point, so no absolute
 * phase reference and no large arguments.  The kernels are low-pass
 * around 0; without this they cut (and the truncation aliases) the part
 * of a spectrum centred elsewhere. */
GG_DEVICE_FN void gg_rs_sample(const gg_rs_params p, GG_GLOBAL const float *in,
                               GG_GLOBAL float *out, size_t o, double sx, double sy)
{
    const int nc = p.channels;
    if (!(sx >= -0.5 && sx < p.src_w - 0.5 && sy >= -0.5 && sy < p.src_h - 0.5)) {
        for (int c = 0; c < nc; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    int n, ix0, iy0;
    if (p.kind == GG_RS_NEAREST) {
        n = 1;
        ix0 = (int)floor(sx + 0.5);
        iy0 = (int)floor(sy + 0.5);
    } else {
        n = p.kind == GG_RS_BILINEAR ? 2 : (p.kind == GG_RS_SINC8 ? 8 : 4);
        ix0 = (int)floor(sx) - (n / 2 - 1);
        iy0 = (int)floor(sy) - (n / 2 - 1);
    }
    /* the nearest sample must be valid and in the tile */
    const int nx0 = (int)floor(sx + 0.5), ny0 = (int)floor(sy + 0.5);
    const int lnx = nx0 - p.tile_x0, lny = ny0 - p.tile_y0;
    int ok = lnx >= 0 && lny >= 0 && lnx < p.tile_w && lny < p.tile_h;
    if (ok) {
        const size_t k = ((size_t)lny * (size_t)p.tile_w + (size_t)lnx) * (size_t)nc;
        ok = nc == 2 ? gg_cvalid(in[k], in[k + 1], p.has_nodata, p.nodata)
                     : gg_valid(in[k], p.has_nodata, p.nodata);
    }
    const double twopi = 6.283185307179586476925;
    const int car = nc == 2 && (p.car_y != 0.0 || p.car_x != 0.0);
    double exr[8], exi[8]; /* the range factor of each tap column */
    for (int i = 0; car && i < n; i++) {
        const double ph = -twopi * p.car_x * ((double)(ix0 + i) - sx);
        exr[i] = cos(ph);
        exi[i] = sin(ph);
    }
    double acc0 = 0.0, acc1 = 0.0, wsum = 0.0;
    for (int j = 0; ok && j < n; j++) {
        const int iy = iy0 + j;
        if (iy < 0 || iy >= p.src_h)
            continue;
        const double wy = p.kind == GG_RS_NEAREST ? 1.0 : gg_rs_weight(p.kind, sy - iy);
        if (wy == 0.0)
            continue;
        double eyr = 1.0, eyi = 0.0;
        if (car) {
            const double ph = -twopi * p.car_y * ((double)iy - sy);
            eyr = cos(ph);
            eyi = sin(ph);
        }
        const int ly = iy - p.tile_y0;
        for (int i = 0; i < n; i++) {
            const int ix = ix0 + i;
            if (ix < 0 || ix >= p.src_w)
                continue;
            const double w = wy * (p.kind == GG_RS_NEAREST ? 1.0 : gg_rs_weight(p.kind, sx - ix));
            if (w == 0.0)
                continue;
            const int lx = ix - p.tile_x0;
            if (lx < 0 || ly < 0 || lx >= p.tile_w || ly >= p.tile_h) {
                ok = 0; /* a planning error: nodata, never an out-of-bounds read */
                break;
            }
            const size_t k = ((size_t)ly * (size_t)p.tile_w + (size_t)lx) * (size_t)nc;
            const float re = in[k], im = nc == 2 ? in[k + 1] : 0.0f;
            if (!(nc == 2 ? gg_cvalid(re, im, p.has_nodata, p.nodata)
                          : gg_valid(re, p.has_nodata, p.nodata)))
                continue;
            if (car) {
                const double er = eyr * exr[i] - eyi * exi[i], ei = eyr * exi[i] + eyi * exr[i];
                acc0 += w * (re * er - im * ei);
                acc1 += w * (re * ei + im * er);
            } else {
                acc0 += w * re;
                acc1 += w * im;
            }
            wsum += w;
        }
    }
    if (!ok || !(fabs(wsum) > 0.25)) {
        for (int c = 0; c < nc; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    out[o] = (float)(acc0 / wsum);
    if (nc == 2)
        out[o + 1] = (float)(acc1 / wsum);
}

/* One output pixel per work item, offsets from the polynomials. */
GG_KERNEL2(gg_k_rs_resample, gg_rs_params, p, const float, in, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t o = ((size_t)y * (size_t)gg_nx + (size_t)x) * (size_t)p.channels;
    const double X = (double)(p.dst_x0 + x), Y = (double)(p.dst_y0 + y);
    double m[10];
    m[0] = 1.0; m[1] = X; m[2] = Y;
    m[3] = X * X; m[4] = X * Y; m[5] = Y * Y;
    m[6] = X * X * X; m[7] = X * X * Y; m[8] = X * Y * Y; m[9] = Y * Y * Y;
    double dd = 0.0, da = 0.0;
    for (int k = 0; k < p.ncoef; k++) {
        dd += p.cd[k] * m[k];
        da += p.ca[k] * m[k];
    }
    gg_rs_sample(p, in, out, o, X + da, Y + dd);
}

/* One output pixel per work item, offsets bilinear between the nodes of a
 * dense offset grid (gdal_xcorr's windows): grid holds the sub-grid
 * [gi0, gi0 + gnx) x [gj0, gj0 + gny) of nodes as (down, across) pairs. */
GG_KERNEL3(gg_k_rs_resample_grid, gg_rs_params, p, const float, in, const float, grid, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t o = ((size_t)y * (size_t)gg_nx + (size_t)x) * (size_t)p.channels;
    const double X = (double)(p.dst_x0 + x), Y = (double)(p.dst_y0 + y);
    double tx, ty;
    const int i = gg_rs_cell(X, p.gx0, p.gdx, p.gNx, &tx) - p.gi0;
    const int j = gg_rs_cell(Y, p.gy0, p.gdy, p.gNy, &ty) - p.gj0;
    const int i1 = i + 1 < p.gnx ? i + 1 : i, j1 = j + 1 < p.gny ? j + 1 : j;
    if (i < 0 || j < 0 || i >= p.gnx || j >= p.gny) { /* a planning error: nodata */
        for (int c = 0; c < p.channels; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    double v[2];
    for (int c = 0; c < 2; c++) {
        const double a = grid[((size_t)j * p.gnx + i) * 2 + c];
        const double b = grid[((size_t)j * p.gnx + i1) * 2 + c];
        const double d = grid[((size_t)j1 * p.gnx + i) * 2 + c];
        const double e = grid[((size_t)j1 * p.gnx + i1) * 2 + c];
        v[c] = (1.0 - ty) * ((1.0 - tx) * a + tx * b) + ty * ((1.0 - tx) * d + tx * e);
    }
    gg_rs_sample(p, in, out, o, X + v[1], Y + v[0]);
}

#undef GG_CPU_PARAMS
#define GG_CPU_PARAMS SHARED
