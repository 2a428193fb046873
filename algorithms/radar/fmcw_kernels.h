/*
 * fmcw_kernels.h -- the FMCW weather-radar chain, written once in the kernel
 * dialect (gpu/kernel_dialect.h) for CPU, CUDA and OpenCL.  Host side:
 * fmcw.c.  Buffers, per batch of B sectors (bc = sector * 3 + channel,
 * channels HH, VV, HV):
 *   raw   int16 [B][3][I,Q][M sweeps][N samples]
 *   ws    complex [bc][M][N]        after convert and the range FFT
 *   dop   complex [bc][G gates][M]  after the corner turn and Doppler FFT
 *   pw    float [bc][G][M]          power spectra, velocity ascending
 *   xs    complex [B][G][M]         HH.VV* spectra
 *   out   float [B][GG_FMCW_NPRODUCTS][G]
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

/* Item (i, b * G + g): output bin i (velocity ascending from -v_a) of the
 * three power spectra and of HH.VV*.  A receding target's slow-time phase
 * turns as exp(-i 4 pi v t / lambda), i.e. Doppler bin j = -v / dv, so
 * output bin i takes FFT bin j = M/2 - i. */
GG_KERNEL3(gg_k_fmcw_spectra, gg_fmcw_spectra_params, p, const float, dop, float, pw, float, xs)
{
    const int i = GG_X, row = GG_Y;
    if (i >= gg_nx || row >= gg_ny)
        return;
    const int M = p.n_sweeps, G = p.n_gates;
    const int b = row / G, g = row - b * G;
    const int j = M / 2 - i;
    float re[3], im[3];
    for (int c = 0; c < 3; c++) {
        const size_t r = ((size_t)(b * 3 + c) * (size_t)G + (size_t)g) * (size_t)M;
        gg_fmcw_windowed(dop + 2 * r, j, p, &re[c], &im[c]);
        pw[r + (size_t)i] = p.scale * (re[c] * re[c] + im[c] * im[c]);
    }
    const size_t o = 2 * ((size_t)row * (size_t)M + (size_t)i);
    xs[o] = p.scale * (re[0] * re[1] + im[0] * im[1]);   /* h * conj(v) */
    xs[o + 1] = p.scale * (im[0] * re[1] - re[0] * im[1]);
}

/* Spectral value of bin k with the clutter notch bridged linearly. */
GG_DEVICE_FN float gg_fmcw_val(GG_GLOBAL const float *s, int k, int n, int lo, int hi)
{
    if (k < lo || k > hi)
        return s[k];
    const int a = (lo - 1 + n) % n, b = (hi + 1) % n;
    const float t = (float)(k - lo + 1) / (float)(hi - lo + 2);
    return s[a] + t * (s[b] - s[a]);
}

/* Sorting a spectrum per work item in private memory left a GPU nearly
 * idle (one thread per gate, 4 KB of local memory each: 1.2 ms per sector
 * on an H200); instead every bin finds its own rank among the bins of its
 * row (all threads of a warp read the same bin: a broadcast) and writes
 * itself to that place.  Item (k, row). */
GG_KERNEL2(gg_k_fmcw_rank, gg_fmcw_rank_params, p, const float, pw, float, sorted)
{
    const int k = GG_X, row = GG_Y;
    if (k >= gg_nx || row >= gg_ny)
        return;
    const int n = p.n_bins;
    GG_GLOBAL const float *s = pw + (size_t)row * (size_t)n;
    const float v = gg_fmcw_val(s, k, n, p.notch_lo, p.notch_hi);
    int rank = 0;
    for (int j = 0; j < n; j++) {
        const float u = gg_fmcw_val(s, j, n, p.notch_lo, p.notch_hi);
        rank += (u < v || (u == v && j < k)) ? 1 : 0;
    }
    sorted[(size_t)row * (size_t)n + (size_t)rank] = v;
}

/* Hildebrand & Sekhon (1974) on an ascending spectrum: the noise is the
 * largest set of the lowest points whose variance is at most mean^2 /
 * n_avg (white noise spectra are exponential: variance = mean^2).
 * Returns the mean noise power per bin; *all_noise when every bin is
 * noise. */
GG_DEVICE_FN double gg_fmcw_hs(GG_GLOBAL const float *sorted, int n, int n_avg, int *all_noise)
{
    double sum = 0.0, sum2 = 0.0, noise_sum = 0.0;
    int nn = 1;
    for (int k = 0; k < n; k++) {
        const double v = sorted[k];
        sum += v;
        sum2 += v * v;
        const double kk = (double)(k + 1);
        if (kk * sum2 - sum * sum <= sum * sum / (double)n_avg) {
            nn = k + 1;
            noise_sum = sum;
        }
    }
    *all_noise = nn == n;
    return noise_sum / (double)nn;
}

/* Mean velocity and width of the spectral peak: from the largest bin,
 * the contiguous (circular) block of bins above the mean noise, noise
 * removed; velocities relative to the peak so aliasing wraps correctly. */
GG_DEVICE_FN void gg_fmcw_vel_width(GG_GLOBAL const float *s, int n, int lo_n, int hi_n, double noise, float v0,
                                    float dv, float width_corr, float *vel, float *width)
{
    int ipk = 0;
    float vpk = gg_fmcw_val(s, 0, n, lo_n, hi_n);
    for (int k = 1; k < n; k++) {
        const float v = gg_fmcw_val(s, k, n, lo_n, hi_n);
        if (v > vpk) {
            vpk = v;
            ipk = k;
        }
    }
    /* offsets from ipk; the block ends where two bins in a row are at or
     * below the noise (one bin dips that low now and then inside weather
     * spectra, whose bins scatter exponentially) */
    int lo = 0, hi = 0;
    while (hi - lo + 2 < n && (gg_fmcw_val(s, (ipk + hi + 1) % n, n, lo_n, hi_n) > noise ||
                               gg_fmcw_val(s, (ipk + hi + 2) % n, n, lo_n, hi_n) > noise))
        hi++;
    while (hi - lo + 2 < n && (gg_fmcw_val(s, (ipk + lo - 1 + n) % n, n, lo_n, hi_n) > noise ||
                               gg_fmcw_val(s, (ipk + lo - 2 + 2 * n) % n, n, lo_n, hi_n) > noise))
        lo--;
    double w = 0.0, m1 = 0.0, m2 = 0.0;
    for (int d = lo; d <= hi; d++) {
        const double e = (double)gg_fmcw_val(s, (ipk + d + n) % n, n, lo_n, hi_n) - (double)noise;
        w += e;
        m1 += e * d;
        m2 += e * (double)d * d;
    }
    if (!(w > 0.0)) {
        *vel = v0 + dv * ipk;
        *width = 0.0f;
        return;
    }
    const double mean = m1 / w;
    double var = m2 / w - mean * mean - (double)width_corr;
    var = var > 0.0 ? var : 0.0;
    const double span = (double)dv * n;
    double v = (double)dv * ((double)ipk + mean);   /* from v0, in [0, span) */
    v = v - span * floor(v / span);
    *vel = (float)((double)v0 + v);
    *width = (float)((double)dv * sqrt(var));
}

GG_DEVICE_FN float gg_fmcw_db(double x) { return (float)(10.0 * log10(x)); }

/* One item per gate of one row (sector, or record of the spectral stage). */
GG_KERNEL4(gg_k_fmcw_moments, gg_fmcw_moments_params, p, const float, pw, const float, sorted, const float, xs,
           float, out)
{
    const int g = GG_X, row = GG_Y;
    if (g >= gg_nx || row >= gg_ny)
        return;
    const int M = p.n_bins, G = p.n_gates;
    const float nd = p.nodata;
    const int nch = p.mode == 0 ? 3 : 1;
    double noise[3];
    double pow_[3];
    for (int c = 0; c < nch; c++) {
        const size_t r = ((size_t)(row * nch + c) * (size_t)G + (size_t)g) * (size_t)M;
        GG_GLOBAL const float *ss = sorted + r;
        int all_noise;
        noise[c] = gg_fmcw_hs(ss, M, p.n_avg, &all_noise);
        double tot = 0.0;
        for (int k = 0; k < M; k++)
            tot += ss[k];
        /* every bin noise: no signal (not a rounding residue of either sign) */
        pow_[c] = all_noise ? 0.0 : tot - noise[c] * M;
    }
    GG_GLOBAL const float *sh = pw + ((size_t)(row * nch) * (size_t)G + (size_t)g) * (size_t)M;
    float vel, width;
    gg_fmcw_vel_width(sh, M, p.notch_lo, p.notch_hi, noise[0], p.v0, p.dv, p.width_corr, &vel, &width);
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
    GG_GLOBAL const float *x = xs + 2 * ((size_t)row * (size_t)G + (size_t)g) * (size_t)M;
    double xr = 0.0, xi = 0.0;
    for (int k = 0; k < M; k++) {
        if (k >= p.notch_lo && k <= p.notch_hi) {   /* bridged like the powers */
            const int a = (p.notch_lo - 1 + M) % M, b = (p.notch_hi + 1) % M;
            const float t = (float)(k - p.notch_lo + 1) / (float)(p.notch_hi - p.notch_lo + 2);
            xr += x[2 * a] + t * (x[2 * b] - x[2 * a]);
            xi += x[2 * a + 1] + t * (x[2 * b + 1] - x[2 * a + 1]);
        } else {
            xr += x[2 * k];
            xi += x[2 * k + 1];
        }
    }
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
