/*
 * mrr2_kernels.h -- the Metek MRR-2 spectral stage, written once in the
 * kernel dialect (gpu/kernel_dialect.h) for the CPU, OpenCL and CUDA
 * backends.  Host side: fmcw_mrr2.c.
 *
 * MIT licence.
 */

/* Product planes of one output row (see gg_mrr2_products in geogpu.h). */
#define GG_MRR2_P_ZE 0
#define GG_MRR2_P_W 1
#define GG_MRR2_P_WIDTH 2
#define GG_MRR2_P_SNR 3
#define GG_MRR2_P_NOISE 4
#define GG_MRR2_P_FLAG 5
#define GG_MRR2_P_Z 6
#define GG_MRR2_P_PIA 7
#define GG_MRR2_P_RR 8
#define GG_MRR2_P_LWC 9
#define GG_MRR2_NP 10

/* A peak ends at the first line at most this many times the noise limit
 * (the line itself is kept if above the limit): MRR-2 peaks have broad
 * shoulders that the bare limit cuts too late in weak echoes (the edge rule
 * of IMProToo, Maahn & Kollias 2012, whose products users compare with). */
#define GG_MRR2_EDGE 1.2

/* Item (gate g, output row).  Buffers: raw spectral lines F [record][gate]
 * [bin]; counts [record] (spectra each record averages; <= 0: left out);
 * rows [n_rows + 1] (records rows[i] .. rows[i+1]-1 make row i); gate_k
 * [gate][3]: Metek's calibration CC i^2 dH / (1e20 TF(i)) (eta per unit of
 * F; 0: a gate without eta) and the gate's usable lines [first, end) (the
 * lines near the spectrum's ends are disturbed, more so at the lowest and
 * highest gates); out [row][GG_MRR2_NP][gate] (planes ZE..FLAG); sig [row]
 * [gate][bin]: the peak's eta per line less the noise (1/m), 0 elsewhere
 * and where no signal, for the DSD kernel.
 *
 * The average of the records is weighted by their counts, so it is the
 * mean of all N single spectra; white noise averaged over N spectra has
 * variance mean^2 / N, and Hildebrand & Sekhon (1974) take as noise the
 * most lowest of the usable lines whose variance is at most that; their
 * largest value is the noise limit.  The peak: from the largest usable
 * line, the contiguous lines above GG_MRR2_EDGE times the limit, and then
 * one more on each side if it is above the limit, within the usable lines;
 * fewer than min_width lines is not signal.  The noise removed is the mean
 * of the usable lines outside the peak (the Hildebrand-Sekhon mean is
 * biased low: it is the mean of the lowest lines).  Power, mean velocity
 * (line j at j dv) and width are the moments of the peak's lines less that
 * noise. */
GG_KERNEL6(gg_k_mrr2_moments, gg_mrr2_params, p, const float, spec, const float, counts,
           const int, rows, const float, gate_k, float, out, float, sig)
{
    const int g = GG_X, row = GG_Y;
    if (g >= gg_nx || row >= gg_ny)
        return;
    const int B = p.n_bins, G = p.n_gates;
    const float nd = p.nodata;
    const size_t o = (size_t)row * GG_MRR2_NP * (size_t)G + (size_t)g;
    GG_GLOBAL float *sg = sig + ((size_t)row * (size_t)G + (size_t)g) * (size_t)B;
    for (int b = 0; b < B; b++)
        sg[b] = 0.0f;
    int flag = (g == 1 || g == 2 || g == G - 1) ? 1 : 0;
    double s[GG_MRR2_MAX_BINS], t[GG_MRR2_MAX_BINS];
    for (int b = 0; b < B; b++)
        s[b] = 0.0;
    double n = 0.0;
    for (int r = rows[row]; r < rows[row + 1]; r++) {
        const float c = counts[r];
        GG_GLOBAL const float *f = spec + ((size_t)r * (size_t)G + (size_t)g) * (size_t)B;
        int ok = c > 0.0f;
        for (int b = 0; b < B && ok; b++)
            ok = f[b] == f[b] && f[b] > -3.0e38f && f[b] < 3.0e38f;
        if (!ok) {
            flag |= 2;
            continue;
        }
        for (int b = 0; b < B; b++)
            s[b] += (double)c * (double)f[b];
        n += (double)c;
    }
    const double k = (double)gate_k[3 * g];
    const int a = (int)gate_k[3 * g + 1], e = (int)gate_k[3 * g + 2], L = e - a;
    float ze = nd, w = nd, width = nd, snr = nd, noise_db = nd;
    if (!(n > 0.0) || !(k > 0.0) || a < 0 || e > B || L < 4) {
        flag |= 4;
    } else {
        for (int b = 0; b < B; b++)
            s[b] /= n;
        for (int b = a; b < e; b++) {
            /* insertion into the ascending copy of the usable lines */
            int i = b - a;
            while (i > 0 && t[i - 1] > s[b]) {
                t[i] = t[i - 1];
                i--;
            }
            t[i] = s[b];
        }
        /* running mean and squared deviations (Welford): the variance of
         * averaged spectra is a small difference of large sums */
        double mu = 0.0, m2 = 0.0, noise = 0.0;
        int nn = 1;
        for (int i = 0; i < L; i++) {
            const double d = t[i] - mu;
            mu += d / (double)(i + 1);
            m2 += d * (t[i] - mu);
            /* "at most", with exact ties (integer lines) kept on every device */
            if (m2 / (double)(i + 1) <= mu * mu / n * (1.0 + 1e-9)) {
                nn = i + 1;
                noise = mu;
            }
        }
        const double limit = t[nn - 1], edge = GG_MRR2_EDGE * limit;
        int ipk = a;
        for (int b = a + 1; b < e; b++)
            if (s[b] > s[ipk])
                ipk = b;
        int hi = 0, lo = 0;
        while (ipk + hi + 1 < e && s[ipk + hi + 1] > edge)
            hi++;
        if (ipk + hi + 1 < e && s[ipk + hi + 1] > limit)
            hi++;
        while (ipk - lo - 1 >= a && s[ipk - lo - 1] > edge)
            lo++;
        if (ipk - lo - 1 >= a && s[ipk - lo - 1] > limit)
            lo++;
        const int found = nn < L && hi + lo + 1 >= p.min_width;
        if (found && hi + lo + 1 < L) {
            double out_sum = 0.0;
            for (int b = a; b < e; b++)
                out_sum += (b < ipk - lo || b > ipk + hi) ? s[b] : 0.0;
            noise = out_sum / (double)(L - hi - lo - 1);
        }
        if (noise > 0.0)
            noise_db = (float)(10.0 * log10(noise * (double)B * k)) + p.ze_db;
        if (found) {
            double pw = 0.0, m1 = 0.0, m2 = 0.0;
            for (int d = -lo; d <= hi; d++) {
                const double x = s[ipk + d] - noise;
                pw += x;
                m1 += x * d;
                m2 += x * (double)d * d;
            }
            if (pw > 0.0) {
                const double mean = m1 / pw;
                double var = m2 / pw - mean * mean;
                var = var > 0.0 ? var : 0.0;
                ze = (float)(10.0 * log10(pw * k)) + p.ze_db;
                w = (float)((double)p.dv * ((double)ipk + mean));
                width = (float)((double)p.dv * sqrt(var));
                snr = noise > 0.0 ? (float)(10.0 * log10(pw / (noise * (double)B))) : 100.0f;
                for (int d = -lo; d <= hi; d++)
                    sg[ipk + d] = (float)((s[ipk + d] - noise) * k);
            }
        }
    }
    out[o + GG_MRR2_P_ZE * (size_t)G] = ze;
    out[o + GG_MRR2_P_W * (size_t)G] = w;
    out[o + GG_MRR2_P_WIDTH * (size_t)G] = width;
    out[o + GG_MRR2_P_SNR * (size_t)G] = snr;
    out[o + GG_MRR2_P_NOISE * (size_t)G] = noise_db;
    out[o + GG_MRR2_P_FLAG * (size_t)G] = (float)flag;
}

/* Item: one output row; the gates are walked upward, since each gate's
 * attenuation correction needs the attenuation of every gate below it
 * (Metek's path-integrated attenuation, computed from the drop sizes).
 * Buffers: sig [row][gate][bin] (the moments kernel's signal), tab
 * [gate][bin][GG_MRR2_TAB_N] (drop diameter, its interval, backscattering
 * and extinction cross sections of each line), out (planes Z, PIA, RR,
 * LWC written, FLAG read and bit 8 added), nd [row][gate][bin] (N(D),
 * m^-3 mm^-1; nodata where no signal).
 *
 * Per gate: the number of drops of line j is n_j = eta_j / sigma_b(D_j)
 * (m^-3), with eta corrected by the two-way attenuation below the gate and
 * over its own lower half, exp(2 (sum of k below) dh + k dh); the gate's
 * specific attenuation k = sum n_j sigma_e(D_j) depends on the corrected
 * eta, so it is iterated (a few steps converge at the PIAs the correction
 * is made for).  Z = sum n_j D_j^6, RR = pi/6 sum n_j D_j^3 v_j (mm/h),
 * LWC = pi/6 rho_w sum n_j D_j^3 (g/m^3).  Beyond pia_max_db (Metek: 10
 * dB) the correction is not trusted: Z, RR, LWC and N(D) are nodata there
 * and above, with FLAG bit 8. */
GG_KERNEL4(gg_k_mrr2_dsd, gg_mrr2_params, p, const float, sig, const float, tab, float, out,
           float, nd)
{
    const int row = GG_X;
    if (row >= gg_nx || GG_Y >= gg_ny)
        return;
    const int B = p.n_bins, G = p.n_gates;
    const float ndv = p.nodata;
    const double dh = (double)p.dh;
    double below = 0.0; /* sum of k dh over the gates below (nepers, one way) */
    int lost = 0;       /* the PIA passed pia_max_db at or below this gate */
    for (int g = 0; g < G; g++) {
        const size_t o = (size_t)row * GG_MRR2_NP * (size_t)G + (size_t)g;
        GG_GLOBAL const float *e = sig + ((size_t)row * (size_t)G + (size_t)g) * (size_t)B;
        GG_GLOBAL const float *t = tab + (size_t)g * (size_t)B * GG_MRR2_TAB_N;
        GG_GLOBAL float *n = nd + ((size_t)row * (size_t)G + (size_t)g) * (size_t)B;
        int flag = (int)out[o + GG_MRR2_P_FLAG * (size_t)G];
        const int signal = out[o + GG_MRR2_P_ZE * (size_t)G] != ndv;
        double k = 0.0;
        if (signal) {
            for (int it = 0; it < 4; it++) {
                const double a = exp(2.0 * below + k * dh);
                double kk = 0.0;
                for (int b = 0; b < B; b++)
                    if (t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_D] > 0.0f && e[b] > 0.0f)
                        kk += (double)e[b] * a / (double)t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_SB] *
                              (double)t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_SE];
                k = kk;
            }
        }
        const double a = exp(2.0 * below + k * dh);
        const double pia_db = 10.0 * log10(a);
        if (pia_db > (double)p.pia_max_db)
            lost = 1;
        float z = ndv, rr = ndv, lwc = ndv;
        if (!signal || lost || (flag & 4)) {
            for (int b = 0; b < B; b++)
                n[b] = ndv;
        } else {
            double z6 = 0.0, r3 = 0.0, m3 = 0.0;
            for (int b = 0; b < B; b++) {
                const double d = (double)t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_D];
                if (!(d > 0.0) || !(e[b] > 0.0f)) {
                    n[b] = 0.0f;
                    continue;
                }
                const double nj = (double)e[b] * a / (double)t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_SB];
                n[b] = (float)(nj / (double)t[b * GG_MRR2_TAB_N + GG_MRR2_TAB_DD]);
                z6 += nj * d * d * d * d * d * d;
                m3 += nj * d * d * d;
                r3 += nj * d * d * d * (double)p.dv * (double)b;
            }
            /* mm^3 m^-3 -> m^3 m^-3 (1e-9); rain rate in mm/h: x 3.6e6 */
            rr = (float)(3.14159265358979 / 6.0 * 3.6e-3 * r3);
            lwc = (float)(3.14159265358979 / 6.0 * 1e-3 * m3);
            z = z6 > 0.0 ? (float)(10.0 * log10(z6)) : ndv;
        }
        if (lost)
            flag |= 8;
        out[o + GG_MRR2_P_Z * (size_t)G] = z;
        out[o + GG_MRR2_P_PIA * (size_t)G] = (flag & 4) ? ndv : (float)pia_db;
        out[o + GG_MRR2_P_RR * (size_t)G] = rr;
        out[o + GG_MRR2_P_LWC * (size_t)G] = lwc;
        out[o + GG_MRR2_P_FLAG * (size_t)G] = (float)flag;
        below += k * dh;
    }
}
