/*
 * fmcw_kernels.h -- the FMCW weather-radar chain, written once in the kernel
 * dialect (gpu/kernel_dialect.h) for CPU, CUDA and OpenCL.  Host side:
 * fmcw.c.  Buffers, per batch of B sectors (bc = sector * 3 + channel,
 * channels HH, VV, HV):
 *   raw   int16 [B][3][I,Q][M sweeps][N samples]
 *   ws    complex [bc][M][N]        after convert and the range FFT
 *   dop   complex [bc][G gates][M]  after the corner turn and Doppler FFT
 *   pw    float [bc][G][M]          power spectra, velocity ascending,
 *                                   the clutter notch bridged
 *   xs    complex [B][G][M]         HH.VV* spectra, bridged alike
 *   sorted float [bc][G][M]         every power spectrum ascending
 *   parts, hs, stat, ends, msum     per-chunk partial results (below)
 *   out   float [B][GG_FMCW_NPRODUCTS][G]
 * One gate's spectrum is contiguous ([..][gate][bin]); the spectral stage
 * works on chunks of `chunk` bins of it, so that every pass has
 * gates x chunks items and none walks a whole spectrum serially (the
 * one-item-per-gate version spent 298 us per sector here on an H200).
 *
 * MIT licence.
 */

#define GG_FMCW_NPROD 10        /* = GG_FMCW_NPRODUCTS */
#define GG_FMCW_PI 3.14159265358979323846

/* Census of bad samples: item x of channel plane y counts, over samples x,
 * x + lanes, ... (adjacent items read adjacent samples), the all-zero
 * samples (I = Q = 0) in the low 16 bits and the full-scale ones (|I| or
 * |Q| >= 32767) in the high 16 bits.  The host sums the lanes. */
GG_KERNEL2(gg_k_fmcw_check, gg_fmcw_check_params, p, const short, raw, int, cnt)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t base = (size_t)y * 2 * (size_t)p.plane;   /* I plane; Q follows */
    int zeros = 0, clips = 0;
    for (int k = x; k < p.plane; k += p.lanes) {
        const int i = raw[base + (size_t)k], q = raw[base + (size_t)p.plane + (size_t)k];
        zeros += (i == 0 && q == 0) ? 1 : 0;
        clips += (i >= 32767 || i <= -32767 || q >= 32767 || q <= -32767) ? 1 : 0;
    }
    cnt[(size_t)y * (size_t)p.lanes + (size_t)x] = zeros | (clips << 16);
}

/* int16 I/Q planes -> complex samples times the range window and the
 * scale that makes |range FFT|^2 the power per sweep of a distributed
 * target (window loss undone).  Item (n, row), row = bc * M + m. */
GG_STREAM_KERNEL2(gg_k_fmcw_convert, gg_fmcw_convert_params, p, const short, raw, float, ws)
{
    const int n = GG_X, row = GG_Y;
    if (n >= gg_nx || row >= gg_ny)
        return;
    const int bc = row / p.n_sweeps, m = row - bc * p.n_sweeps;
    const size_t plane = (size_t)p.n_sweeps * (size_t)p.n_samples;
    const size_t k = (size_t)bc * 2 * plane + (size_t)m * (size_t)p.n_samples + (size_t)n;
    const float w = p.scale * (p.win_a - 2.0f * p.win_b *
                                             cos((float)(2.0 * GG_FMCW_PI) * (float)n / (float)p.n_samples));
    const size_t o = 2 * ((size_t)row * (size_t)p.n_samples + (size_t)n);
    ws[o] = w * (float)raw[k];
    ws[o + 1] = w * (float)raw[k + plane];
}

/* Corner turn: item (m, bc * G + g) copies range bin g of sweep m, so that
 * the Doppler FFT runs on contiguous rows.  Writes are coalesced. */
GG_KERNEL2(gg_k_fmcw_corner, gg_fmcw_corner_params, p, const float, ws, float, dop)
{
    const int m = GG_X, row = GG_Y;
    if (m >= gg_nx || row >= gg_ny)
        return;
    const int bc = row / p.n_gates, g = row - bc * p.n_gates;
    const size_t i = 2 * (((size_t)bc * (size_t)p.n_sweeps + (size_t)m) * (size_t)p.n_samples + (size_t)g);
    const size_t o = 2 * ((size_t)row * (size_t)p.n_sweeps + (size_t)m);
    dop[o] = ws[i];
    dop[o + 1] = ws[i + 1];
}

/* One Doppler coefficient X(j) of an unwindowed spectrum with the clutter
 * filter applied: bin 0 is M times the slow-time mean, so zeroing it is
 * exactly the mean removal; the notch zeroes 0 < |j| <= notch_bins too. */
GG_DEVICE_FN void gg_fmcw_coef(GG_GLOBAL const float *row, int j, int M, int clutter_mean,
                               int notch, float *re, float *im)
{
    j = ((j % M) + M) % M;
    const int sj = j > M / 2 ? j - M : j;      /* signed bin */
    const int a = sj < 0 ? -sj : sj;
    const int zero = (clutter_mean && a == 0) || (notch > 0 && a <= notch);
    *re = zero ? 0.0f : row[2 * j];
    *im = zero ? 0.0f : row[2 * j + 1];
}

/* Windowed spectrum value: the periodic window a - 2b cos(2 pi m / M)
 * applied in slow time equals the convolution a X(j) - b X(j-1) - b X(j+1)
 * of the unwindowed spectrum (exact), and clutter filtering before it
 * equals mean removal before windowing. */
GG_DEVICE_FN void gg_fmcw_windowed(GG_GLOBAL const float *row, int j, gg_fmcw_spectra_params p,
                                   float *re, float *im)
{
    float r0, i0, r1, i1, r2, i2;
    gg_fmcw_coef(row, j, p.n_sweeps, p.clutter_mean, p.notch_bins, &r0, &i0);
    gg_fmcw_coef(row, j - 1, p.n_sweeps, p.clutter_mean, p.notch_bins, &r1, &i1);
    gg_fmcw_coef(row, j + 1, p.n_sweeps, p.clutter_mean, p.notch_bins, &r2, &i2);
    *re = p.win_a * r0 - p.win_b * (r1 + r2);
    *im = p.win_a * i0 - p.win_b * (i1 + i2);
}

/* Power of the three channels and HH.VV* at output bin i (velocity
 * ascending from -v_a).  A receding target's slow-time phase turns as
 * exp(-i 4 pi v t / lambda), i.e. Doppler bin j = -v / dv, so output bin i
 * takes FFT bin j = M/2 - i.  r0: offset of the HH row, rs: channel
 * stride (complex values). */
GG_DEVICE_FN void gg_fmcw_bin(GG_GLOBAL const float *dop, size_t r0, size_t rs, int i,
                              gg_fmcw_spectra_params p, float *pw3, float *xr, float *xi)
{
    const int j = p.n_sweeps / 2 - i;
    float re[3], im[3];
    for (int c = 0; c < 3; c++) {
        gg_fmcw_windowed(dop + 2 * (r0 + (size_t)c * rs), j, p, &re[c], &im[c]);
        pw3[c] = p.scale * (re[c] * re[c] + im[c] * im[c]);
    }
    *xr = p.scale * (re[0] * re[1] + im[0] * im[1]);   /* h * conj(v) */
    *xi = p.scale * (im[0] * re[1] - re[0] * im[1]);
}

/* Item (i, b * G + g): output bin i of the three power spectra and of
 * HH.VV*.  Bins notch_lo..notch_hi hold the clutter filter's zeros (and
 * their spread by the Doppler window); they are written as the straight
 * line between bins lo-1 and hi+1 (computed here again, cheap) so that
 * weather spanning 0 m/s keeps its power and one block, and every later
 * pass reads plain arrays. */
GG_KERNEL3(gg_k_fmcw_spectra, gg_fmcw_spectra_params, p, const float, dop, float, pw, float, xs)
{
    const int i = GG_X, row = GG_Y;
    if (i >= gg_nx || row >= gg_ny)
        return;
    const int M = p.n_sweeps, G = p.n_gates;
    const int b = row / G, g = row - b * G;
    const size_t r0 = ((size_t)(b * 3) * (size_t)G + (size_t)g) * (size_t)M, rs = (size_t)G * (size_t)M;
    float v[3], xr, xi;
    if (i >= p.notch_lo && i <= p.notch_hi) {
        const int ia = (p.notch_lo - 1 + M) % M, ib = (p.notch_hi + 1) % M;
        const float t = (float)(i - p.notch_lo + 1) / (float)(p.notch_hi - p.notch_lo + 2);
        float va[3], vb[3], ar, ai, br, bi;
        gg_fmcw_bin(dop, r0, rs, ia, p, va, &ar, &ai);
        gg_fmcw_bin(dop, r0, rs, ib, p, vb, &br, &bi);
        for (int c = 0; c < 3; c++)
            v[c] = va[c] + t * (vb[c] - va[c]);
        xr = ar + t * (br - ar);
        xi = ai + t * (bi - ai);
    } else {
        gg_fmcw_bin(dop, r0, rs, i, p, v, &xr, &xi);
    }
    for (int c = 0; c < 3; c++)
        pw[r0 + (size_t)c * rs + (size_t)i] = v[c];
    const size_t o = 2 * ((size_t)row * (size_t)M + (size_t)i);
    xs[o] = xr;
    xs[o + 1] = xi;
}

/* ---- Ascending sort of every spectrum (Hildebrand-Sekhon needs the
 * prefix sums of the sorted bins).  Sorting per work item in private
 * memory left a GPU nearly idle (1.2 ms per sector on an H200) and ranking
 * every bin against its whole row costs M^2 per spectrum; a bottom-up
 * merge sort costs M log M in per-element passes.  Ties go by index, so
 * the result equals a stable sort. */

/* Pass 0, item (k, row): bin k's rank inside its run of p.width bins (all
 * items of a warp read the same bin: a broadcast). */
GG_KERNEL2(gg_k_fmcw_sort0, gg_fmcw_sort_params, p, const float, in, float, out)
{
    const int k = GG_X, row = GG_Y;
    if (k >= gg_nx || row >= gg_ny)
        return;
    const int n = p.n_bins;
    GG_GLOBAL const float *s = in + (size_t)row * (size_t)n;
    const int cb = k - k % p.width, ce = cb + p.width < n ? cb + p.width : n;
    const float v = s[k];
    int rank = 0;
    for (int j = cb; j < ce; j++) {
        const float u = s[j];
        rank += (u < v || (u == v && j < k)) ? 1 : 0;
    }
    out[(size_t)row * (size_t)n + (size_t)(cb + rank)] = v;
}

/* Merge pass, item (k, row): runs of p.width are merged pairwise; bin k
 * lands at its offset in its own run plus the number of bins of the
 * partner run before it (strictly smaller when it sits in the left run,
 * smaller or equal in the right one: a stable merge). */
GG_KERNEL2(gg_k_fmcw_merge, gg_fmcw_sort_params, p, const float, in, float, out)
{
    const int k = GG_X, row = GG_Y;
    if (k >= gg_nx || row >= gg_ny)
        return;
    const int n = p.n_bins, L = p.width;
    GG_GLOBAL const float *s = in + (size_t)row * (size_t)n;
    const int run = k / L, base = (run - (run & 1)) * L;
    const float v = s[k];
    int pos;
    if ((run & 1) == 0) {
        const int first = base + L;
        int lo = first < n ? first : n, hi = base + 2 * L < n ? base + 2 * L : n;
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (s[mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        pos = k + (lo - (first < n ? first : n));
    } else {
        int lo = base, hi = base + L;
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (s[mid] <= v)
                lo = mid + 1;
            else
                hi = mid;
        }
        pos = k - L + (lo - base);
    }
    out[(size_t)row * (size_t)n + (size_t)pos] = v;
}

/* ---- Spectral stage on chunks.  Spectrum index sp = (row * nch + c) * G
 * + g (nch = 3 channels in the chain, 1 in the spectral stage); NC =
 * p.n_chunks chunks of p.chunk bins. */

#define GG_FMCW_NPART 6    /* parts: sum, sum of squares (sorted), max, argmax (power), HH.VV* re, im */

/* Item (chunk, sp): chunk sums of the sorted spectrum, the first largest
 * bin of the power spectrum, and (HH spectra of the chain) the chunk sum
 * of HH.VV*. */
GG_KERNEL4(gg_k_fmcw_parts, gg_fmcw_moments_params, p, const float, sorted, const float, pw, const float, xs,
           double, parts)
{
    const int c = GG_X, sp = GG_Y;
    if (c >= gg_nx || sp >= gg_ny)
        return;
    const int M = p.n_bins, G = p.n_gates, nch = p.mode == 0 ? 3 : 1;
    const int k0 = c * p.chunk, k1 = k0 + p.chunk < M ? k0 + p.chunk : M;
    GG_GLOBAL const float *ss = sorted + (size_t)sp * (size_t)M;
    GG_GLOBAL const float *sw = pw + (size_t)sp * (size_t)M;
    double s1 = 0.0, s2 = 0.0;
    float mx = sw[k0];
    int im = k0;
    for (int k = k0; k < k1; k++) {
        const double v = ss[k];
        s1 += v;
        s2 += v * v;
        const float u = sw[k];
        if (u > mx) {
            mx = u;
            im = k;
        }
    }
    double xr = 0.0, xi = 0.0;
    const int g = sp % G, rc = sp / G, row = rc / nch, ch = rc - row * nch;
    if (p.mode == 0 && ch == 0) {
        GG_GLOBAL const float *x = xs + 2 * ((size_t)row * (size_t)G + (size_t)g) * (size_t)M;
        for (int k = k0; k < k1; k++) {
            xr += x[2 * k];
            xi += x[2 * k + 1];
        }
    }
    const size_t o = ((size_t)sp * (size_t)p.n_chunks + (size_t)c) * GG_FMCW_NPART;
    parts[o] = s1;
    parts[o + 1] = s2;
    parts[o + 2] = mx;
    parts[o + 3] = im;
    parts[o + 4] = xr;
    parts[o + 5] = xi;
}

/* Hildebrand & Sekhon (1974) on the ascending spectrum: the noise is the
 * largest set of the lowest points whose variance is at most mean^2 /
 * n_avg (white noise spectra are exponential: variance = mean^2).  Item
 * (chunk, sp) tests every candidate k of its chunk, starting from the sums
 * of the chunks below, and keeps the largest k that passes (0: none) with
 * its sum. */
GG_KERNEL3(gg_k_fmcw_hs, gg_fmcw_moments_params, p, const float, sorted, const double, parts, double, hs)
{
    const int c = GG_X, sp = GG_Y;
    if (c >= gg_nx || sp >= gg_ny)
        return;
    const int M = p.n_bins;
    const size_t pb = (size_t)sp * (size_t)p.n_chunks;
    double sum = 0.0, sum2 = 0.0, noise_sum = 0.0;
    for (int cc = 0; cc < c; cc++) {
        sum += parts[(pb + (size_t)cc) * GG_FMCW_NPART];
        sum2 += parts[(pb + (size_t)cc) * GG_FMCW_NPART + 1];
    }
    const int k0 = c * p.chunk, k1 = k0 + p.chunk < M ? k0 + p.chunk : M;
    GG_GLOBAL const float *ss = sorted + (size_t)sp * (size_t)M;
    int nn = 0;
    for (int k = k0; k < k1; k++) {
        const double v = ss[k];
        sum += v;
        sum2 += v * v;
        const double kk = (double)(k + 1);
        if (kk * sum2 - sum * sum <= sum * sum / (double)p.n_avg) {
            nn = k + 1;
            noise_sum = sum;
        }
    }
    hs[(pb + (size_t)c) * 2] = nn;
    hs[(pb + (size_t)c) * 2 + 1] = noise_sum;
}

/* Item (g, row * nch + c): per spectrum, the HS noise (mean per bin), the
 * signal power (0 when every bin is noise: no signal, not a rounding
 * residue of either sign) and the first largest bin. */
GG_KERNEL3(gg_k_fmcw_noise, gg_fmcw_moments_params, p, const double, parts, const double, hs, double, stat)
{
    const int g = GG_X, rc = GG_Y;
    if (g >= gg_nx || rc >= gg_ny)
        return;
    const size_t sp = (size_t)rc * (size_t)p.n_gates + (size_t)g, pb = sp * (size_t)p.n_chunks;
    double tot = 0.0, noise_sum = 0.0, mx = 0.0;
    int nn = 1, ipk = 0;
    for (int c = 0; c < p.n_chunks; c++) {
        GG_GLOBAL const double *q = parts + (pb + (size_t)c) * GG_FMCW_NPART;
        tot += q[0];
        if (c == 0 || q[2] > mx) {
            mx = q[2];
            ipk = (int)q[3];
        }
        const int k = (int)hs[(pb + (size_t)c) * 2];
        if (k > 0) {
            nn = k;
            noise_sum = hs[(pb + (size_t)c) * 2 + 1];
        }
    }
    const double noise = noise_sum / (double)nn;
    stat[sp * 4] = noise;
    stat[sp * 4 + 1] = nn == p.n_bins ? 0.0 : tot - noise * p.n_bins;
    stat[sp * 4 + 2] = ipk;
    stat[sp * 4 + 3] = nn;
}

/* The spectral peak's block: from the largest bin, the contiguous
 * (circular) bins above the mean noise; it ends where two bins in a row
 * are at or below the noise (one bin dips that low now and then inside
 * weather spectra, whose bins scatter exponentially), and spans at most
 * n - 1 bins.  Item (chunk, row * G + g) finds, among the offsets q of its
 * chunk, the first end above the peak (bins ipk+q+1, ipk+q+2 at or below
 * the noise) and below it (ipk-q-1, ipk-q-2); n when none. */
GG_KERNEL3(gg_k_fmcw_ends, gg_fmcw_moments_params, p, const float, pw, const double, stat, int, ends)
{
    const int c = GG_X, sg = GG_Y;
    if (c >= gg_nx || sg >= gg_ny)
        return;
    const int n = p.n_bins, G = p.n_gates, nch = p.mode == 0 ? 3 : 1;
    const size_t s0 = (size_t)(sg / G) * (size_t)nch * (size_t)G + (size_t)(sg % G);
    GG_GLOBAL const float *s = pw + s0 * (size_t)n;
    const double noise = stat[s0 * 4];
    const int ipk = (int)stat[s0 * 4 + 2];
    const int q0 = c * p.chunk, q1 = q0 + p.chunk < n ? q0 + p.chunk : n;
    int eh = n, el = n;
    for (int q = q0; q < q1; q++) {
        if (eh == n && q <= n - 3 && !(s[(ipk + q + 1) % n] > noise || s[(ipk + q + 2) % n] > noise))
            eh = q;
        if (el == n && q <= n - 2 && !(s[(ipk - q - 1 + n) % n] > noise || s[(ipk - q - 2 + 2 * n) % n] > noise))
            el = q;
    }
    const size_t o = ((size_t)sg * (size_t)p.n_chunks + (size_t)c) * 2;
    ends[o] = eh;
    ends[o + 1] = el;
}

/* Item (chunk, row * G + g): the block is offsets lo..hi from the peak
 * (hi: the first end above, at most n - 2; lo: the first end below, so
 * that the block keeps at most n - 1 bins); the chunk's share of the
 * noise-removed power and its first two moments in bins from the peak. */
GG_KERNEL4(gg_k_fmcw_blocksum, gg_fmcw_moments_params, p, const float, pw, const double, stat, const int, ends,
           double, msum)
{
    const int c = GG_X, sg = GG_Y;
    if (c >= gg_nx || sg >= gg_ny)
        return;
    const int n = p.n_bins, G = p.n_gates, nch = p.mode == 0 ? 3 : 1;
    const size_t s0 = (size_t)(sg / G) * (size_t)nch * (size_t)G + (size_t)(sg % G);
    GG_GLOBAL const float *s = pw + s0 * (size_t)n;
    const double noise = stat[s0 * 4];
    const int ipk = (int)stat[s0 * 4 + 2];
    int eh = n, el = n;
    for (int cc = 0; cc < p.n_chunks; cc++) {
        const size_t e = ((size_t)sg * (size_t)p.n_chunks + (size_t)cc) * 2;
        eh = ends[e] < eh ? ends[e] : eh;
        el = ends[e + 1] < el ? ends[e + 1] : el;
    }
    const int hi = eh < n - 2 ? eh : n - 2;
    const int lo = -(el < n - 2 - hi ? el : n - 2 - hi);
    const int d0 = lo + c * p.chunk, d1 = d0 + p.chunk - 1 < hi ? d0 + p.chunk - 1 : hi;
    double w = 0.0, m1 = 0.0, m2 = 0.0;
    for (int d = d0; d <= d1; d++) {
        const double e = (double)s[(ipk + d + n) % n] - noise;
        w += e;
        m1 += e * d;
        m2 += e * (double)d * d;
    }
    const size_t o = ((size_t)sg * (size_t)p.n_chunks + (size_t)c) * 3;
    msum[o] = w;
    msum[o + 1] = m1;
    msum[o + 2] = m2;
}

GG_DEVICE_FN float gg_fmcw_db(double x) { return (float)(10.0 * log10(x)); }

/* One item per gate of one row (sector, or record of the spectral stage):
 * combines the chunk results into the products. */
GG_KERNEL4(gg_k_fmcw_final, gg_fmcw_moments_params, p, const double, stat, const double, parts, const double, msum,
           float, out)
{
    const int g = GG_X, row = GG_Y;
    if (g >= gg_nx || row >= gg_ny)
        return;
    const int M = p.n_bins, G = p.n_gates, NC = p.n_chunks;
    const float nd = p.nodata;
    const int nch = p.mode == 0 ? 3 : 1;
    double noise[3], pow_[3];
    for (int c = 0; c < nch; c++) {
        const size_t sp = (size_t)(row * nch + c) * (size_t)G + (size_t)g;
        noise[c] = stat[sp * 4];
        pow_[c] = stat[sp * 4 + 1];
    }
    const size_t s0 = (size_t)(row * nch) * (size_t)G + (size_t)g;
    const size_t sg = (size_t)row * (size_t)G + (size_t)g;
    const int ipk = (int)stat[s0 * 4 + 2];
    double w = 0.0, m1 = 0.0, m2 = 0.0, xr = 0.0, xi = 0.0;
    for (int c = 0; c < NC; c++) {
        GG_GLOBAL const double *q = msum + (sg * (size_t)NC + (size_t)c) * 3;
        w += q[0];
        m1 += q[1];
        m2 += q[2];
        xr += parts[(s0 * (size_t)NC + (size_t)c) * GG_FMCW_NPART + 4];
        xi += parts[(s0 * (size_t)NC + (size_t)c) * GG_FMCW_NPART + 5];
    }
    /* mean velocity and width of the block, relative to the peak so that
     * aliasing wraps correctly */
    float vel, width;
    if (!(w > 0.0)) {
        vel = p.v0 + p.dv * ipk;
        width = 0.0f;
    } else {
        const double mean = m1 / w;
        double var = m2 / w - mean * mean - (double)p.width_corr;
        var = var > 0.0 ? var : 0.0;
        const double span = (double)p.dv * M;
        double v = (double)p.dv * ((double)ipk + mean);   /* from v0, in [0, span) */
        v = v - span * floor(v / span);
        vel = (float)((double)p.v0 + v);
        width = (float)((double)p.dv * sqrt(var));
    }
    /* noise power of the gate; a noiseless spectrum (synthetic) counts as
     * 100 dB SNR rather than infinite */
    double nz[3], snr[3];
    for (int c = 0; c < nch; c++) {
        nz[c] = noise[c] * M;
        if (!(nz[c] > 0.0))
            nz[c] = pow_[c] > 0.0 ? pow_[c] * 1e-10 : 1.0;
        snr[c] = pow_[c] > 0.0 ? 10.0 * log10(pow_[c] / nz[c]) : -1e30;
    }
    const size_t o = (size_t)row * (size_t)(p.mode == 0 ? GG_FMCW_NPROD : 5) * (size_t)G + (size_t)g;
    const int has_signal = pow_[0] > 0.0 && snr[0] >= (double)p.min_snr_db;
    if (p.mode == 1) {
        out[o] = (float)noise[0];
        out[o + (size_t)G] = has_signal ? (float)pow_[0] : nd;
        out[o + 2 * (size_t)G] = pow_[0] > 0.0 ? (float)snr[0] : nd;
        out[o + 3 * (size_t)G] = has_signal ? vel : nd;
        out[o + 4 * (size_t)G] = has_signal ? width : nd;
        return;
    }
    const float r = p.range0_m + p.dr_m * (float)g;
    const int valid = has_signal && r > 0.0f;
    const double ph = pow_[0], pv = pow_[1], px = pow_[2];
    out[o + 0 * (size_t)G] = valid ? gg_fmcw_db(ph) + p.radar_constant_db + 20.0f * (float)log10((double)r * 1e-3) : nd;
    out[o + 1 * (size_t)G] = valid && pv > 0.0 ? gg_fmcw_db(ph / pv) + p.zdr_offset_db : nd;
    out[o + 2 * (size_t)G] = valid && px > 0.0 ? gg_fmcw_db(px / ph) + p.ldr_offset_db : nd;
    out[o + 3 * (size_t)G] = valid ? vel : nd;
    out[o + 4 * (size_t)G] = valid ? width : nd;
    out[o + 5 * (size_t)G] = valid && pv > 0.0 ? (float)(sqrt(xr * xr + xi * xi) / sqrt(ph * pv)) : nd;
    out[o + 6 * (size_t)G] = valid && pv > 0.0 ? (float)(atan2(xi, xr) * (180.0 / GG_FMCW_PI)) : nd;
    out[o + 7 * (size_t)G] = pow_[0] > 0.0 ? (float)snr[0] : nd;
    out[o + 8 * (size_t)G] = pow_[1] > 0.0 ? (float)snr[1] : nd;
    out[o + 9 * (size_t)G] = pow_[2] > 0.0 ? (float)snr[2] : nd;
}
