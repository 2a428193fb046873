/*
 * coreg_device.h -- the coregistration helpers that host code and the
 * kernels (coreg_kernels.h) both run: one body for the grid cell of the
 * dense-offset resampling and for the lag-1 (carrier) estimator.
 *
 * Written in the kernel dialect (gpu/kernel_dialect.h: GG_DEVICE_FN is
 * "static inline" in host builds), so a host file includes
 * kernel_dialect.h, coreg_params.h, then this; the kernels get it from
 * algorithms/kernels.h and the OpenCL source list (CMakeLists.txt,
 * GG_KERNEL_SOURCES), ahead of coreg_kernels.h.  No device pointers here:
 * plain values and private arrays only.
 *
 * MIT licence.
 */
#ifndef GG_COREG_DEVICE_H
#define GG_COREG_DEVICE_H

/* Grid cell and weight along one axis: position v on nodes g0 + i d,
 * i = 0 .. n - 1, clamped to the end nodes (constant beyond them).
 * Returns the cell i (nodes i and i + 1, or i alone when n = 1); *t the
 * weight of node i + 1. */
GG_DEVICE_FN int gg_rs_cell(double v, double g0, double d, int n, double *t)
{
    double f = (v - g0) / d;
    f = f < 0.0 ? 0.0 : (f > n - 1 ? (double)(n - 1) : f);
    int i = (int)floor(f);
    if (i > n - 2)
        i = n - 2 < 0 ? 0 : n - 2;
    *t = n > 1 ? f - i : 0.0;
    return i;
}

/* Lag-1 correlation of a complex image along one axis, accumulated pair
 * by pair: s[0] + i s[1] = sum a conj(b) over the valid pairs (a, b) of
 * neighbours (b one sample after a), s[2] = sum (|a|^2 + |b|^2) / 2,
 * s[3] = pairs.  Both samples must be valid (the caller checks). */
GG_DEVICE_FN void gg_xc_lag1_add(double *s, float ar, float ai, float br, float bi)
{
    s[0] += (double)ar * br + (double)ai * bi;
    s[1] += (double)ai * br - (double)ar * bi;
    s[2] += 0.5 * ((double)ar * ar + (double)ai * ai + (double)br * br + (double)bi * bi);
    s[3] += 1.0;
}

/* Phase of the accumulated lag-1 correlation, arg sum a conj(b) (minus
 * the carrier's phase step per sample), or 0 when the correlation is not
 * significant: |sum a conj b| / sum |c|^2 below 3 / sqrt(pairs), i.e. data
 * indistinguishable from a white (full-band) spectrum, whose "carrier" is
 * noise (white noise passes the bound with probability ~exp(-9); a
 * band-limited SAR spectrum, |lag-1| = sinc(bandwidth fraction) >= 0.1 up
 * to 90 % of the band, passes it beyond ~1000 pairs). */
GG_DEVICE_FN double gg_xc_lag1_phase(const double *s)
{
    const int ok = s[3] > 0.0 && sqrt(s[0] * s[0] + s[1] * s[1]) * sqrt(s[3]) >= 3.0 * s[2];
    return ok ? atan2(s[1], s[0]) : 0.0;
}

#endif
