/* reference.c -- float64 references of the ops (see reference.h). */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

int ref_valid(double v, int has_nodata, double nodata)
{
    return isfinite(v) && !(has_nodata && v == nodata);
}

static int sample_valid(const float *in, size_t k, int nc, int has_nodata, double nodata)
{
    if (nc == 1)
        return ref_valid(in[k], has_nodata, nodata);
    return isfinite(in[2 * k]) && isfinite(in[2 * k + 1]) && !(has_nodata && in[2 * k] == nodata);
}

void ref_multilook(const float *in, int W, int H, int nc, int lx, int ly, int mode,
                   int has_nodata, double nodata, double dst_nodata, double *out)
{
    const int Wo = W / lx, Ho = H / ly, oc = mode == 2 ? 2 : 1;
    for (int oy = 0; oy < Ho; oy++)
        for (int ox = 0; ox < Wo; ox++) {
            double s0 = 0, s1 = 0;
            int n = 0;
            for (int j = 0; j < ly; j++)
                for (int i = 0; i < lx; i++) {
                    const size_t k = (size_t)(oy * ly + j) * W + (size_t)(ox * lx + i);
                    if (!sample_valid(in, k, nc, has_nodata, nodata))
                        continue;
                    n++;
                    if (nc == 1) {
                        s0 += in[k];
                    } else if (mode == 1) {
                        s0 += (double)in[2 * k] * in[2 * k] + (double)in[2 * k + 1] * in[2 * k + 1];
                    } else {
                        s0 += in[2 * k];
                        s1 += in[2 * k + 1];
                    }
                }
            const size_t o = ((size_t)oy * Wo + ox) * oc;
            out[o] = n ? s0 / n : dst_nodata;
            if (oc == 2)
                out[o + 1] = n ? s1 / n : dst_nodata;
        }
}

void ref_rotate(const float *in, int W, int H, int nc, double angle_deg, double scale, int Wo,
                int Ho, int has_nodata, double nodata, double dst_nodata, double *out)
{
    const double a = angle_deg * M_PI / 180.0, c = cos(a), s = sin(a);
    for (int Y = 0; Y < Ho; Y++)
        for (int X = 0; X < Wo; X++) {
            double *o = out + ((size_t)Y * Wo + X) * nc;
            const double dx = X - (Wo - 1) / 2.0, dy = Y - (Ho - 1) / 2.0;
            const double sx = (W - 1) / 2.0 + (c * dx - s * dy) / scale;
            const double sy = (H - 1) / 2.0 + (s * dx + c * dy) / scale;
            for (int k = 0; k < nc; k++)
                o[k] = dst_nodata;
            if (!(sx >= -0.5 - 1e-6 && sx <= W - 0.5 + 1e-6 && sy >= -0.5 - 1e-6 && sy <= H - 0.5 + 1e-6))
                continue;
            const double cx = fmin(fmax(sx, 0), W - 1), cy = fmin(fmax(sy, 0), H - 1);
            int ix = (int)floor(cx), iy = (int)floor(cy);
            if (W >= 2 && ix > W - 2)
                ix = W - 2;
            if (H >= 2 && iy > H - 2)
                iy = H - 2;
            const double fx = cx - ix, fy = cy - iy;
            const int xs[2] = {ix, W >= 2 ? ix + 1 : ix}, ys[2] = {iy, H >= 2 ? iy + 1 : iy};
            const int nx = fx > 0.500001, ny = fy > 0.500001; /* ties to the lower index */
            if (!sample_valid(in, (size_t)ys[ny] * W + xs[nx], nc, has_nodata, nodata))
                continue;
            double acc[2] = {0, 0}, wsum = 0;
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    const size_t k = (size_t)ys[j] * W + xs[i];
                    if (!sample_valid(in, k, nc, has_nodata, nodata))
                        continue;
                    const double w = (i ? fx : 1 - fx) * (j ? fy : 1 - fy);
                    wsum += w;
                    for (int q = 0; q < nc; q++)
                        acc[q] += w * in[k * nc + q];
                }
            for (int q = 0; q < nc; q++)
                o[q] = acc[q] / wsum;
        }
}

void ref_radnorm(const float *in, int W, int H, int nc, double coef, int levels,
                 int has_nodata, double nodata, double dst_nodata, double *out)
{
    double *val = malloc(sizeof(double) * (size_t)W * H);
    double *rs = calloc((size_t)(2 * H + 2 * W), sizeof(double));
    double *rc = rs + H, *cs = rc + H, *cc = cs + W;
    double tot = 0, cnt = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t k = (size_t)y * W + x;
            double v = NAN;
            if (nc == 1 && ref_valid(in[k], has_nodata, nodata))
                v = in[k];
            if (nc == 2 && sample_valid(in, k, 2, has_nodata, nodata))
                v = hypot(in[2 * k], in[2 * k + 1]);
            val[k] = v;
            if (isnan(v))
                continue;
            rs[y] += v;
            rc[y] += 1;
            cs[x] += v;
            cc[x] += 1;
            tot += v;
            cnt += 1;
        }
    const double M = tot / cnt;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t k = (size_t)y * W + x;
            const double R = rc[y] ? rs[y] / rc[y] : NAN, C = cc[x] ? cs[x] / cc[x] : NAN;
            if (isnan(val[k]) || !(R * C > 0)) {
                out[k] = dst_nodata;
                continue;
            }
            const double F = coef * val[k] * M / (R * C);
            out[k] = levels ? fmin(fmax(floor(F + 0.5), 0), levels - 1) : F;
        }
    free(val);
    free(rs);
}

void ref_dft(const float *in, int rank, const int *n, int batch, int inverse, double *out)
{
    const int n0 = n[0], n1 = rank == 2 ? n[1] : 1;
    const size_t plane = (size_t)n0 * n1;
    const double sign = inverse ? 1.0 : -1.0;
    for (int b = 0; b < batch; b++)
        for (int k0 = 0; k0 < n0; k0++)
            for (int k1 = 0; k1 < n1; k1++) {
                double re = 0, im = 0;
                for (int j0 = 0; j0 < n0; j0++)
                    for (int j1 = 0; j1 < n1; j1++) {
                        const double ph = sign * 2 * M_PI *
                                          ((double)k0 * j0 / n0 + (double)k1 * j1 / n1);
                        const size_t k = b * plane + (size_t)j0 * n1 + j1;
                        const double xr = in[2 * k], xi = in[2 * k + 1];
                        re += xr * cos(ph) - xi * sin(ph);
                        im += xr * sin(ph) + xi * cos(ph);
                    }
                const size_t o = b * plane + (size_t)k0 * n1 + k1;
                out[2 * o] = re;
                out[2 * o + 1] = im;
            }
}

double ref_rel_l2(const float *a, const double *b, size_t n, double nodata, size_t *mismatch)
{
    double num = 0, den = 0;
    size_t mm = 0;
    for (size_t i = 0; i < n; i++) {
        const int va = !isnan(a[i]) && (isnan(nodata) || a[i] != (float)nodata);
        const int vb = !isnan(b[i]) && (isnan(nodata) || b[i] != nodata);
        if (va != vb) {
            mm++;
            continue;
        }
        if (!va)
            continue;
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    if (mismatch)
        *mismatch = mm;
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}
