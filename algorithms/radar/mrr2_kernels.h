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
#define GG_MRR2_NP 6

/* Item (gate g, output row).  Buffers: raw spectral lines F [record][gate]
 * [bin]; counts [record] (spectra each record averages; <= 0: left out);
 * rows [n_rows + 1] (records rows[i] .. rows[i+1]-1 make row i); gate_k
 * [gate] (Metek's calibration CC i^2 dH / (1e20 TF(i)), eta per unit of F;
 * 0: a gate without eta); out [row][GG_MRR2_NP][gate].
 *
 * The average of the records is weighted by their counts, so it is the
 * mean of all N single spectra; white noise averaged over N spectra has
 * variance mean^2 / N, and Hildebrand & Sekhon (1974) take as noise the
 * most lowest lines whose variance is at most that.  Their largest value
 * (the noise limit) bounds the peak: from the largest line, the contiguous
 * (circular) lines above the limit; a peak of fewer than min_width lines
 * is not taken as signal.  Power, mean velocity and width are the moments
 * of the peak's lines less the mean noise. */
GG_KERNEL5(gg_k_mrr2_moments, gg_mrr2_params, p, const float, spec, const float, counts,
           const int, rows, const float, gate_k, float, out)
{
    const int g = GG_X, row = GG_Y;
    if (g >= gg_nx || row >= gg_ny)
        return;
    const int B = p.n_bins, G = p.n_gates;
    const float nd = p.nodata;
    const size_t o = (size_t)row * GG_MRR2_NP * (size_t)G + (size_t)g;
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
    const double k = (double)gate_k[g];
    float ze = nd, w = nd, width = nd, snr = nd, noise_db = nd;
    if (!(n > 0.0) || !(k > 0.0)) {
        flag |= 4;
    } else {
        for (int b = 0; b < B; b++) {
            s[b] /= n;
            /* insertion into the ascending copy */
            int i = b;
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
        for (int i = 0; i < B; i++) {
            const double d = t[i] - mu;
            mu += d / (double)(i + 1);
            m2 += d * (t[i] - mu);
            /* "at most", with exact ties (integer lines) kept on every device */
            if (m2 / (double)(i + 1) <= mu * mu / n * (1.0 + 1e-9)) {
                nn = i + 1;
                noise = mu;
            }
        }
        const double limit = t[nn - 1];
        if (noise > 0.0)
            noise_db = (float)(10.0 * log10(noise * (double)B * k)) + p.ze_db;
        int ipk = 0;
        for (int b = 1; b < B; b++)
            if (s[b] > s[ipk])
                ipk = b;
        int hi = 0, lo = 0;
        while (hi + lo + 1 < B && s[(ipk + hi + 1) % B] > limit)
            hi++;
        while (hi + lo + 1 < B && s[(ipk - lo - 1 + B) % B] > limit)
            lo++;
        if (nn < B && hi + lo + 1 >= p.min_width) {
            double pw = 0.0, m1 = 0.0, m2 = 0.0;
            for (int d = -lo; d <= hi; d++) {
                const double e = s[(ipk + d + B) % B] - noise;
                pw += e;
                m1 += e * d;
                m2 += e * (double)d * d;
            }
            if (pw > 0.0) {
                const double mean = m1 / pw;
                double var = m2 / pw - mean * mean;
                var = var > 0.0 ? var : 0.0;
                const double span = (double)p.dv * B;
                double v = (double)p.dv * ((double)ipk + mean);
                v = v - span * floor(v / span);
                ze = (float)(10.0 * log10(pw * k)) + p.ze_db;
                w = (float)v;
                width = (float)((double)p.dv * sqrt(var));
                snr = noise > 0.0 ? (float)(10.0 * log10(pw / (noise * (double)B))) : 100.0f;
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
