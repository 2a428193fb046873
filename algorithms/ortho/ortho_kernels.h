/*
 * ortho_kernels.h -- RPC + DEM orthorectification, one work item per output
 * pixel (the indirect method, as gdalwarp -rpc -to RPC_DEM=...), written
 * once in the kernel dialect for CPU, CUDA and OpenCL.  The model functions
 * (RFM, DEM sampling) are also compiled on the host (ortho.c) as the
 * float64 reference the tests and the source-window planner use.
 *
 * Per output pixel (x, y) of a block:
 *   1. lon, lat, DEM pixel position and vertical datum shift from a grid of
 *      exact nodes (computed on the host with PROJ through GDAL, every
 *      grid_step output pixels), interpolated with 4x4 cubic Lagrange
 *      weights: a node is reproduced exactly and the error between nodes is
 *      O(step^4) (for UTM at 32 px that is ~1e-15 m; ortho.c documents the
 *      bound the host checks).
 *   2. DEM height exactly as GDAL's RPC transformer samples it
 *      (GDALRPCGetDEMHeight): position - 0.5 (pixel centres), truncation
 *      towards zero (not floor: GDAL casts to int), cubic = 4x4 cubic
 *      B-spline normalised by the weights of the non-nodata taps, falling
 *      back to bilinear within 2 px of the DEM edge, bilinear failing on any
 *      nodata tap and falling back to nearest within 1 px of the edge.
 *      A NaN DEM value is not "nodata" for GDAL (NaN never compares equal):
 *      it propagates and the pixel gets no sample, as in gdalwarp.
 *      Failure -> dem_missing if given, else the pixel gets no sample.
 *      h = vshift + rpc_height + dem * height_scale.
 *   3. Forward RFM in float64 (RPC00B terms), sample/line + 0.5 (an RPC's
 *      (0,0) is the centre of the first pixel, GDAL's its corner).
 *   4. Resampling as GDAL's warp kernel with no source masks
 *      (GWKResampleNoMasks...: near = (int)(x + 1e-10); bilinear and
 *      Catmull-Rom cubic on pixel centres with the 4-sample formulas,
 *      cubic falling back to bilinear within 1-2 px of the image edge,
 *      bilinear renormalising over in-image taps at the edge; when the
 *      output is coarser than the source, GDAL's stretched kernels, see
 *      gg_ortho_stretched), integer
 *      outputs clamped then rounded half up.  With a source nodata value
 *      invalid taps are left out (bilinear renormalises, cubic falls back
 *      to bilinear), the masked path of GDAL; and, as GDAL's masked path,
 *      a pixel whose containing source pixel is nodata gets no value.
 *      Several bands: gdalwarp's unified mask -- the containing pixel
 *      drops the output only where every band is nodata, and the taps are
 *      judged by this band's value (its default, UNIFIED_SRC_NODATA
 *      PARTIAL) or by all bands' (YES, what gdalwarp sets with -srcnodata).
 * A needed source tap outside the window on the device (but inside the
 * image) sets flag[0]; the host then runs the block again with a larger
 * window, so the window planning can never change the result.
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_KERNELS_H
#define GG_ORTHO_KERNELS_H

/* ---------------------------------------------------------- the RFM */

/* RPC00B polynomial of 20 terms at normalised (L, P, H). */
GG_DEVICE_FN double gg_ortho_poly(const GG_GLOBAL double *c, double L, double P, double H)
{
    return c[0] + c[1] * L + c[2] * P + c[3] * H + c[4] * L * P + c[5] * L * H + c[6] * P * H +
           c[7] * L * L + c[8] * P * P + c[9] * H * H + c[10] * P * L * H + c[11] * L * L * L +
           c[12] * L * P * P + c[13] * L * H * H + c[14] * L * L * P + c[15] * P * P * P +
           c[16] * P * H * H + c[17] * L * L * H + c[18] * P * P * H + c[19] * H * H * H;
}

/* Ground (lon, lat in degrees, ellipsoidal h in metres) -> GDAL pixel and
 * line (corner convention). */
GG_DEVICE_FN void gg_ortho_rfm(const GG_GLOBAL double *coef, gg_ortho_params p, double lon,
                               double lat, double h, double *pixel, double *line)
{
    double dlon = lon - p.lon_off;
    /* GDAL wraps the longitude difference across the antimeridian */
    if (dlon < -270.0)
        dlon += 360.0;
    else if (dlon > 270.0)
        dlon -= 360.0;
    const double L = dlon / p.lon_scale;
    const double P = (lat - p.lat_off) / p.lat_scale;
    const double H = (h - p.h_off) / p.h_scale;
    const double ln = gg_ortho_poly(coef, L, P, H) / gg_ortho_poly(coef + 20, L, P, H);
    const double sn = gg_ortho_poly(coef + 40, L, P, H) / gg_ortho_poly(coef + 60, L, P, H);
    *pixel = sn * p.samp_scale + p.samp_off + 0.5;
    *line = ln * p.line_scale + p.line_off + 0.5;
}

/* ------------------------------------------------------------ the DEM */

/* GDAL's ARE_REAL_EQUAL (float epsilon, 2 ulp, relative). */
GG_DEVICE_FN int gg_ortho_equal(double a, double b)
{
    return a == b || fabs(a - b) < 1.1920928955078125e-07 * fabs(a + b) * 2.0;
}

/* Cubic B-spline kernel. */
GG_DEVICE_FN double gg_ortho_bspline(double t)
{
    t = fabs(t);
    if (t < 1.0)
        return (4.0 + t * t * (3.0 * t - 6.0)) / 6.0;
    if (t < 2.0) {
        const double u = 2.0 - t;
        return u * u * u / 6.0;
    }
    return 0.0;
}

/* DEM sample at (wx, wy) of the device window; the caller checked that the
 * tap is inside the raster.  A tap outside the window reads as NaN (never
 * happens when the host sized the window with its margin). */
GG_DEVICE_FN double gg_ortho_dem_at(const GG_GLOBAL double *dem, gg_ortho_params p, int rx, int ry)
{
    const int wx = rx - p.dem_x0, wy = ry - p.dem_y0;
    if (wx < 0 || wy < 0 || wx >= p.dem_win_w || wy >= p.dem_win_h)
        return NAN;
    return dem[(size_t)wy * (size_t)p.dem_win_w + (size_t)wx];
}

/* Height of the DEM at raster position (x, y) (GDAL pixel/line, corner
 * convention).  Returns 1 and *z, or 0 where GDAL's sampler fails. */
GG_DEVICE_FN int gg_ortho_dem_sample(const GG_GLOBAL double *dem, gg_ortho_params p, double x,
                                     double y, double *z)
{
    /* far outside (and NaN): fail before any cast to int */
    if (!(x > -1e6 && x < 1e9 && y > -1e6 && y < 1e9))
        return 0;
    int interp = p.dem_interp;
    if (interp == GG_ORTHO_CUBIC) {
        const double fx = x - 0.5, fy = y - 0.5;
        const int ix = (int)fx, iy = (int)fy;
        const double dx = fx - ix, dy = fy - iy;
        if (ix - 1 >= 0 && iy - 1 >= 0 && ix + 3 <= p.dem_w && iy + 3 <= p.dem_h) {
            double sum = 0.0, wsum = 0.0;
            for (int j = 0; j < 4; j++) {
                const double wy = gg_ortho_bspline((double)(j - 1) - dy);
                for (int i = 0; i < 4; i++) {
                    const double v = gg_ortho_dem_at(dem, p, ix - 1 + i, iy - 1 + j);
                    if (p.has_dem_nodata && gg_ortho_equal(p.dem_nodata, v))
                        continue;
                    const double w = gg_ortho_bspline((double)(i - 1) - dx) * wy;
                    sum += v * w;
                    wsum += w;
                }
            }
            if (wsum == 0.0)
                return 0;
            *z = sum / wsum;
            return 1;
        }
        interp = GG_ORTHO_BILINEAR;
    }
    if (interp == GG_ORTHO_BILINEAR) {
        const double fx = x - 0.5, fy = y - 0.5;
        const int ix = (int)fx, iy = (int)fy;
        const double dx = fx - ix, dy = fy - iy;
        if (ix >= 0 && iy >= 0 && ix + 2 <= p.dem_w && iy + 2 <= p.dem_h) {
            const double v00 = gg_ortho_dem_at(dem, p, ix, iy);
            const double v10 = gg_ortho_dem_at(dem, p, ix + 1, iy);
            const double v01 = gg_ortho_dem_at(dem, p, ix, iy + 1);
            const double v11 = gg_ortho_dem_at(dem, p, ix + 1, iy + 1);
            if (p.has_dem_nodata &&
                (gg_ortho_equal(p.dem_nodata, v00) || gg_ortho_equal(p.dem_nodata, v10) ||
                 gg_ortho_equal(p.dem_nodata, v01) || gg_ortho_equal(p.dem_nodata, v11)))
                return 0;
            const double a = v00 * (1.0 - dx) + v10 * dx;
            const double b = v01 * (1.0 - dx) + v11 * dx;
            *z = a * (1.0 - dy) + b * dy;
            return 1;
        }
    }
    /* nearest (and the bilinear fallback near the edge) */
    const int ix = (int)x, iy = (int)y;
    if (!(ix >= 0 && iy >= 0 && ix < p.dem_w && iy < p.dem_h))
        return 0;
    const double v = gg_ortho_dem_at(dem, p, ix, iy);
    if (p.has_dem_nodata && gg_ortho_equal(p.dem_nodata, v))
        return 0;
    *z = v;
    return 1;
}

/* Ellipsoidal height used for the RFM, or 0 where the transform fails. */
GG_DEVICE_FN int gg_ortho_height(const GG_GLOBAL double *dem, gg_ortho_params p, double demx,
                                 double demy, double vshift, double *h)
{
    if (p.geometry != GG_ORTHO_GEOM_RPC_DEM) {
        *h = p.rpc_height;
        return 1;
    }
    double z = 0.0;
    if (!gg_ortho_dem_sample(dem, p, demx, demy, &z)) {
        if (!p.has_dem_missing)
            return 0;
        z = p.dem_missing;
    }
    *h = vshift + (p.rpc_height + z * p.height_scale);
    return 1;
}

#ifndef GG_ORTHO_MODEL_ONLY
/* ------------------------------------------------------ the source image */

GG_DEVICE_FN double gg_ortho_load(const GG_GLOBAL gg_u8 *src, int type, size_t i)
{
    if (type == GG_ORTHO_T_UINT16)
        return (double)((const GG_GLOBAL unsigned short *)src)[i];
    if (type == GG_ORTHO_T_FLOAT32)
        return (double)((const GG_GLOBAL float *)src)[i];
    if (type == GG_ORTHO_T_INT16)
        return (double)((const GG_GLOBAL short *)src)[i];
    return (double)src[i];
}

/* Speed of the single-band kernel on the CPU.  The multi-band check is the
 * rare path (a tap whose own band is nodata) and stays out of line; the
 * tap and the resampling functions are always inlined and take
 * UNIFIED_SRC_NODATA=YES as a constant argument (see gg_ortho_resample), so
 * the code that runs without it has no call in its tap loops.  Measured on
 * the CPU backend: without this, GCC stopped inlining the tap or kept the
 * call's registers live, and the kernel ran 15-65 % slower (GPUs inline
 * everything anyway). */
#if !defined(__CUDACC__) && !defined(__OPENCL_VERSION__) && !defined(__OPENCL_C_VERSION__) && \
    defined(__GNUC__)
#define GG_ORTHO_RARE_FN static __attribute__((noinline))
#define GG_ORTHO_HOT_FN static inline __attribute__((always_inline))
#else
#define GG_ORTHO_RARE_FN GG_DEVICE_FN
#define GG_ORTHO_HOT_FN GG_DEVICE_FN
#endif

/* Whether source pixel (ix, iy), inside the device window, holds data in
 * any of the nd_bands bands (gdalwarp's unified source mask: a pixel is
 * nodata only where every band matches its own nodata value).  The bands
 * are planes band_rows buffer rows apart; their nodata values follow the
 * RPC coefficients. */
GG_ORTHO_RARE_FN int gg_ortho_any_valid(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                        gg_ortho_params p, int ix, int iy)
{
    const size_t wx = (size_t)(ix - p.win_x0);
    const int wy = iy - p.win_y0 + p.win_dy - p.band * p.band_rows;
    for (int b = 0; b < p.nd_bands; b++) {
        const size_t row = (size_t)(wy + b * p.band_rows);
        const double v = gg_ortho_load(src, p.src_type, row * (size_t)p.win_w + wx);
        if (!gg_ortho_equal(coef[GG_ORTHO_NCOEF + 2 * b], v))
            return 1;
    }
    return 0;
}

/* Source sample at image position (ix, iy), which the caller checked is in
 * the image.  *ok = 0 when it is nodata (this band's, or with nd_unified
 * every band's); *miss = 1 when it is not in the device window. */
GG_ORTHO_HOT_FN double gg_ortho_tap(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                    gg_ortho_params p, int uni, double nd, int ix, int iy, int *ok,
                                    int *miss)
{
    const int wx = ix - p.win_x0, wy = iy - p.win_y0;
    if (wx < 0 || wy < 0 || wx >= p.win_w || wy >= p.win_h) {
        *miss = 1;
        *ok = 0;
        return 0.0;
    }
    const double v = gg_ortho_load(
        src, p.src_type, ((size_t)wy + (size_t)p.win_dy) * (size_t)p.win_w + (size_t)wx);
    *ok = !(p.has_src_nodata && gg_ortho_equal(nd, v));
    /* UNIFIED_SRC_NODATA=YES: this band's own nodata value counts as data
     * where another band has data.  uni is p.nd_unified made a constant at
     * the call sites (see gg_ortho_resample): the single-band code has no
     * trace of this path and keeps its speed on the CPU. */
    if (uni && !*ok)
        *ok = gg_ortho_any_valid(src, coef, p, ix, iy);
    return v;
}

/* Bilinear on pixel centres; in the interior with every tap valid the
 * 4-sample formula, else the taps inside the image (and valid), weights
 * renormalised.  Returns 0 when no weight is left. */
GG_ORTHO_HOT_FN int gg_ortho_bilinear(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                      gg_ortho_params p, int uni, double nd, double sx, double sy,
                                      double *out, int *miss)
{
    const double fx = sx - 0.5, fy = sy - 0.5;
    const int ix = (int)floor(fx), iy = (int)floor(fy);
    const double rx = 1.0 - (fx - ix), ry = 1.0 - (fy - iy);
    double v[4];
    int ok[4], inside[4];
    int all = 1;
    for (int k = 0; k < 4; k++) {
        const int tx = ix + (k & 1), ty = iy + (k >> 1);
        inside[k] = tx >= 0 && ty >= 0 && tx < p.img_w && ty < p.img_h;
        ok[k] = 0;
        v[k] = 0.0;
        if (inside[k])
            v[k] = gg_ortho_tap(src, coef, p, uni, nd, tx, ty, &ok[k], miss);
        all = all && inside[k] && ok[k];
    }
    if (all) {
        *out = (v[0] * rx + v[1] * (1.0 - rx)) * ry + (v[2] * rx + v[3] * (1.0 - rx)) * (1.0 - ry);
        return 1;
    }
    const double w[4] = {rx * ry, (1.0 - rx) * ry, rx * (1.0 - ry), (1.0 - rx) * (1.0 - ry)};
    double acc = 0.0, div = 0.0;
    for (int k = 0; k < 4; k++)
        if (inside[k] && ok[k]) {
            acc += v[k] * w[k];
            div += w[k];
        }
    if (div < 1e-5)
        return 0;
    *out = div == 1.0 ? acc : acc / div;
    return 1;
}

/* Catmull-Rom (a = -0.5) weights at fraction t. */
GG_DEVICE_FN void gg_ortho_cubic_weights(double t, double *w)
{
    const double ht = 0.5 * t, t3 = 3.0 * t, ht2 = ht * t;
    w[0] = ht * (-1.0 + t * (2.0 - t));
    w[1] = 1.0 + ht2 * (-5.0 + t3);
    w[2] = ht * (1.0 + t * (4.0 - t3));
    w[3] = ht2 * (-1.0 + t);
}

GG_ORTHO_HOT_FN int gg_ortho_cubic(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                   gg_ortho_params p, int uni, double nd, double sx, double sy,
                                   double *out, int *miss)
{
    const double fx = sx - 0.5, fy = sy - 0.5;
    const int ix = (int)floor(fx), iy = (int)floor(fy);
    if (ix - 1 < 0 || iy - 1 < 0 || ix + 2 >= p.img_w || iy + 2 >= p.img_h)
        return gg_ortho_bilinear(src, coef, p, uni, nd, sx, sy, out, miss);
    double wx[4], wy[4];
    gg_ortho_cubic_weights(fx - ix, wx);
    gg_ortho_cubic_weights(fy - iy, wy);
    double acc = 0.0;
    for (int j = 0; j < 4; j++) {
        double row = 0.0;
        for (int i = 0; i < 4; i++) {
            int ok = 1;
            const double v = gg_ortho_tap(src, coef, p, uni, nd, ix - 1 + i, iy - 1 + j, &ok, miss);
            if (!ok)
                return gg_ortho_bilinear(src, coef, p, uni, nd, sx, sy, out, miss);
            row += wx[i] * v;
        }
        acc += wy[j] * row;
    }
    *out = acc;
    return 1;
}

/* The B-spline of GDAL's warp kernel (GWKBSpline) as gdalwarp 3.6
 * evaluates it: the truncated powers (t+2)^3, (t+1)^3, t^3, (t-1)^3 without
 * the (t-2)^3 term, so past t = 2 (reached only by a kernel stretched for
 * downsampling) it does not vanish but gives -(t-2)^3 / 6.  Measured
 * against gdalwarp 3.6.2; kept for its answer. */
GG_DEVICE_FN double gg_ortho_gdal_bspline(double t)
{
    const double p2 = t + 2.0, p1 = t + 1.0, m1 = t - 1.0;
    double v = 0.0;
    if (p2 > 0.0) {
        v = p2 * p2 * p2;
        if (p1 > 0.0) {
            v += -4.0 * p1 * p1 * p1;
            if (t > 0.0) {
                v += 6.0 * t * t * t;
                if (m1 > 0.0)
                    v += -4.0 * m1 * m1 * m1;
            }
        }
    }
    return v * 0.166666666666666666666;
}

/* Lanczos-3 (GWKLanczosSinc), zero past 3. */
GG_DEVICE_FN double gg_ortho_lanczos(double t)
{
    if (t == 0.0)
        return 1.0;
    if (t > 3.0 || t < -3.0)
        return 0.0;
    const double px = 3.14159265358979323846 * t, pxr = px / 3.0;
    return sin(px) * sin(pxr) / (px * pxr);
}

/* GDAL's resampling kernels as functions of the (scaled) distance:
 * Catmull-Rom (a = -0.5), the triangle, GDAL's B-spline and Lanczos-3. */
GG_DEVICE_FN double gg_ortho_kernel(int method, double t)
{
    const double a = fabs(t);
    if (method == GG_ORTHO_BILINEAR)
        return a <= 1.0 ? 1.0 - a : 0.0;
    if (method == GG_ORTHO_CUBIC) {
        if (a <= 1.0)
            return t * t * (1.5 * a - 2.5) + 1.0;
        if (a <= 2.0)
            return t * t * (-0.5 * a + 2.5) - 4.0 * a + 2.0;
        return 0.0;
    }
    if (method == GG_ORTHO_CUBICSPLINE)
        return gg_ortho_gdal_bspline(t);
    return gg_ortho_lanczos(t);
}

/* Weight of tap i at fraction d along an axis of scale s: K((i - d) * s);
 * lanczos when downsampling weighs a tap by its index alone,
 * K_lanczos(i * s), as gdalwarp 3.6's general path does (its weights are
 * computed once per chunk; measured against gdalwarp 3.6.2). */
GG_DEVICE_FN double gg_ortho_tap_weight(int method, int i, double d, double s)
{
    if (method == GG_ORTHO_LANCZOS && s < 1.0)
        return gg_ortho_lanczos(i * s);
    return gg_ortho_kernel(method, (i - d) * s);
}

/* Downsampling (a scale below 0.95 on either axis), and cubicspline and
 * lanczos at every scale: GDAL's warp kernel stretches the kernel by
 * 1 / scale (1 when not downsampling) and takes the taps
 * 1 - radius .. radius around floor(position - 0.5), clipped to the image,
 * weights K((i - frac) * scale), the sum normalised by the product of the
 * row and column weight sums (GWKResampleNoMasksT).  With a source nodata
 * value, invalid taps are left out and the sum is normalised by the weight
 * of the valid ones, failing below 1e-6 (GWKResample, the masked path). */
GG_ORTHO_HOT_FN int gg_ortho_stretched(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                       gg_ortho_params p, int uni, double nd, double sx, double sy,
                                       double *out, int *miss)
{
    const int method = p.resampling;
    const double fx = sx - 0.5, fy = sy - 0.5;
    const int ix = (int)floor(fx), iy = (int)floor(fy);
    const double dx = fx - ix, dy = fy - iy;
    /* GDAL's first tap: ((filter radius + 1) % 2) - radius; bilinear's
     * extra tap at -radius has no weight and is left out */
    const int first = method == GG_ORTHO_LANCZOS ? 0 : 1;
    int i0 = first - p.x_radius, i1 = p.x_radius, j0 = first - p.y_radius, j1 = p.y_radius;
    if (ix + i0 < 0)
        i0 = -ix;
    if (ix + i1 > p.img_w - 1)
        i1 = p.img_w - 1 - ix;
    if (iy + j0 < 0)
        j0 = -iy;
    if (iy + j1 > p.img_h - 1)
        j1 = p.img_h - 1 - iy;
    if (method == GG_ORTHO_LANCZOS) {
        /* GDAL keeps the taps within the kernel's reach of 3 */
        if (p.xscale < 1.0) {
            while (i0 * p.xscale < -3.0)
                i0++;
            while (i1 * p.xscale > 3.0)
                i1--;
        } else {
            while (i0 - dx < -3.0)
                i0++;
            while (i1 - dx > 3.0)
                i1--;
        }
        if (p.yscale < 1.0) {
            while (j0 * p.yscale < -3.0)
                j0++;
            while (j1 * p.yscale > 3.0)
                j1--;
        } else {
            while (j0 - dy < -3.0)
                j0++;
            while (j1 - dy > 3.0)
                j1--;
        }
    }
    double wxsum = 0.0, wysum = 0.0, acc = 0.0, wvalid = 0.0;
    int nvalid = 0;
    for (int i = i0; i <= i1; i++)
        wxsum += gg_ortho_tap_weight(method, i, dx, p.xscale);
    for (int j = j0; j <= j1; j++) {
        const double wy = gg_ortho_tap_weight(method, j, dy, p.yscale);
        wysum += wy;
        double row = 0.0, rowv = 0.0;
        for (int i = i0; i <= i1; i++) {
            int ok = 1;
            const double v = gg_ortho_tap(src, coef, p, uni, nd, ix + i, iy + j, &ok, miss);
            if (!ok)
                continue;
            const double wx = gg_ortho_tap_weight(method, i, dx, p.xscale);
            row += v * wx;
            rowv += wx;
            nvalid++;
        }
        acc += row * wy;
        wvalid += rowv * wy;
    }
    /* bilinear and cubic: GDAL's no-mask path divides by the weights'
     * product; cubicspline and lanczos go its general path, which leaves a
     * sum within 1e-5 of 1 as it is */
    const int general = method > GG_ORTHO_CUBIC;
    if (!p.has_src_nodata) {
        const double w = wxsum * wysum;
        if (!general) {
            *out = acc / w;
            return 1;
        }
        if (w < 0.000001)
            return 0;
        *out = (w < 0.99999 || w > 1.00001) ? acc / w : acc;
        return 1;
    }
    /* with nodata, lanczos also needs half of its taps valid */
    if (wvalid < 0.000001 ||
        (method == GG_ORTHO_LANCZOS && nvalid < (j1 - j0 + 1) * (i1 - i0 + 1) / 2))
        return 0;
    *out = (wvalid < 0.99999 || wvalid > 1.00001) ? acc / wvalid : acc;
    return 1;
}

/* Bilinear, cubic or the stretched kernels at (sx, sy); uni: p.nd_unified,
 * passed as a constant so that each case compiles to its own code. */
GG_ORTHO_HOT_FN int gg_ortho_resample(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                      gg_ortho_params p, int uni, double nd, double sx, double sy,
                                      double *out, int *miss)
{
    if (p.x_radius > 0)
        return gg_ortho_stretched(src, coef, p, uni, nd, sx, sy, out, miss);
    if (p.resampling == GG_ORTHO_BILINEAR)
        return gg_ortho_bilinear(src, coef, p, uni, nd, sx, sy, out, miss);
    return gg_ortho_cubic(src, coef, p, uni, nd, sx, sy, out, miss);
}

/* Stores v into the destination: integers clamped, then rounded half up
 * (half away from zero for negatives), as GDAL's warp kernel. */
GG_DEVICE_FN void gg_ortho_store(GG_GLOBAL gg_u8 *dst, int type, size_t i, double v)
{
    if (type == GG_ORTHO_T_FLOAT32) {
        ((GG_GLOBAL float *)dst)[i] = (float)v;
        return;
    }
    double lo = 0.0, hi = 255.0;
    if (type == GG_ORTHO_T_UINT16)
        hi = 65535.0;
    else if (type == GG_ORTHO_T_INT16) {
        lo = -32768.0;
        hi = 32767.0;
    }
    if (!(v >= lo)) /* also NaN */
        v = lo;
    if (v > hi)
        v = hi;
    const double r = v < 0.0 ? -floor(-v + 0.5) : floor(v + 0.5);
    if (type == GG_ORTHO_T_UINT16)
        ((GG_GLOBAL unsigned short *)dst)[i] = (unsigned short)r;
    else if (type == GG_ORTHO_T_INT16)
        ((GG_GLOBAL short *)dst)[i] = (short)r;
    else
        dst[i] = (gg_u8)r;
}

/* Stores a resampled value.  gdalwarp 3.6 keeps a bilinear or cubic
 * result off the output's nodata on integer outputs: a value that rounds
 * onto it is moved one step down (up from the type's minimum); nearest
 * neighbour and Float32 outputs are stored as they are (measured against
 * gdalwarp 3.6.2, tests/python/test_ortho_nodata.py). */
GG_DEVICE_FN void gg_ortho_store_valid(GG_GLOBAL gg_u8 *dst, gg_ortho_params p, size_t i,
                                       double v, double dst_init)
{
    gg_ortho_store(dst, p.dst_type, i, v);
    if (!p.avoid_nodata || p.dst_type == GG_ORTHO_T_FLOAT32)
        return;
    double got, lo = 0.0;
    if (p.dst_type == GG_ORTHO_T_UINT16)
        got = (double)((GG_GLOBAL unsigned short *)dst)[i];
    else if (p.dst_type == GG_ORTHO_T_INT16) {
        got = (double)((GG_GLOBAL short *)dst)[i];
        lo = -32768.0;
    } else
        got = (double)dst[i];
    if (got == dst_init)
        gg_ortho_store(dst, p.dst_type, i, got == lo ? lo + 1.0 : got - 1.0);
}

/* Cubic Lagrange weights of nodes -1, 0, 1, 2 at fraction f in [0, 1). */
GG_DEVICE_FN void gg_ortho_lagrange(double f, double *w)
{
    w[0] = -f * (f - 1.0) * (f - 2.0) / 6.0;
    w[1] = (f + 1.0) * (f - 1.0) * (f - 2.0) / 2.0;
    w[2] = -(f + 1.0) * f * (f - 2.0) / 2.0;
    w[3] = (f + 1.0) * f * (f - 1.0) / 6.0;
}

/* One grid plane at node cell (gx, gy) with the Lagrange weights. */
GG_DEVICE_FN double gg_ortho_interp(const GG_GLOBAL double *gp, int nx, int gx, int gy,
                                    const double *wx, const double *wy)
{
    double acc = 0.0;
    for (int j = 0; j < 4; j++) {
        const GG_GLOBAL double *r = gp + (size_t)(gy + j) * (size_t)nx + (size_t)gx;
        acc += wy[j] * (wx[0] * r[0] + wx[1] * r[1] + wx[2] * r[2] + wx[3] * r[3]);
    }
    return acc;
}

/* Row pieces (grid step 0, geogpu.h's GG_WARP_PIECE layout): rows + 1
 * piece indices, GG_WARP_PIECE doubles per piece {first pixel, pixel
 * count, base pixel, x0, y0, x step, y step}, then exact (x, y) pairs; a
 * piece whose x step is NaN holds its pixels' positions one by one from
 * the double at index x0.  Pixel i of a linear piece is at
 * x0 + step * (i - base), gdalwarp's approximate transformer's formula. */
GG_DEVICE_FN void gg_ortho_row_piece(const GG_GLOBAL double *t, int rows, int x, int y,
                                     double *sx, double *sy)
{
    int lo = (int)t[y], hi = (int)t[y + 1] - 1;
    const GG_GLOBAL double *pc = t + rows + 1;
    while (lo < hi) { /* the last piece starting at or before x */
        const int mid = (lo + hi + 1) / 2;
        if ((int)pc[7 * mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    const GG_GLOBAL double *q = pc + 7 * lo;
    if (isnan(q[5])) {
        const size_t k = (size_t)q[3] + 2 * (size_t)(x - (int)q[0]);
        *sx = t[k];
        *sy = t[k + 1];
    } else {
        const double d = (double)(x - (int)q[2]);
        *sx = q[3] + q[5] * d;
        *sy = q[4] + q[6] * d;
    }
}

/* Source pixel index range [*i0, *i1) under the box side lo .. hi (lo <=
 * hi) along an axis of n pixels, GDAL's rounding (1e-10 inwards), an
 * empty range widened to the pixel after it. */
GG_DEVICE_FN void gg_ortho_box_side(double lo, double hi, int n, int *i0, int *i1)
{
    const double a = lo + 1e-10, b = hi - 1e-10;
    *i0 = a <= 0.0 ? 0 : a >= (double)n ? n : (int)floor(a);
    *i1 = b >= (double)n ? n : b <= -1.0 ? -1 : (int)ceil(b);
    if (*i0 == *i1 && *i1 < n)
        *i1 += 1;
}

/* Weight of source pixel i along an axis of box [lo, hi] over pixels
 * [i0, i1): the part of the first and last pixel inside the box, 1 between
 * (and 1 when the box lies within one pixel). */
GG_DEVICE_FN double gg_ortho_box_weight(int i, int i0, int i1, double lo, double hi)
{
    if (i == i0)
        return i0 + 1 == i1 ? 1.0 : 1.0 - (lo - (double)i0);
    return i + 1 == i1 ? 1.0 - ((double)i1 - hi) : 1.0;
}

/* Average: the mean of the source pixels under the output pixel's
 * footprint, the box between the source positions (x0, y0) and (x1, y1)
 * of its corners, each pixel weighted by the part of it inside the box
 * along x times along y; nodata pixels left out, no value when none is
 * left or when a corner lies farther than x_radius / y_radius outside the
 * source (gdalwarp 3.6's -r average, GWKAverageOrModeThread). */
GG_DEVICE_FN int gg_ortho_average(const GG_GLOBAL gg_u8 *src, const GG_GLOBAL double *coef,
                                  gg_ortho_params p, double nd, double x0, double y0, double x1,
                                  double y1, double *out, int *miss)
{
    if (isnan(x0) || isnan(y0) || isnan(x1) || isnan(y1))
        return 0;
    if (x0 > x1) {
        const double t = x0;
        x0 = x1;
        x1 = t;
    }
    if (y0 > y1) {
        const double t = y0;
        y0 = y1;
        y1 = t;
    }
    if (x0 < -(double)p.x_radius || x1 > (double)p.img_w + (double)p.x_radius ||
        y0 < -(double)p.y_radius || y1 > (double)p.img_h + (double)p.y_radius)
        return 0;
    int i0, i1, j0, j1;
    gg_ortho_box_side(x0, x1, p.img_w, &i0, &i1);
    gg_ortho_box_side(y0, y1, p.img_h, &j0, &j1);
    double acc = 0.0, wsum = 0.0;
    int n = 0;
    for (int j = j0; j < j1; j++) {
        const double wy = gg_ortho_box_weight(j, j0, j1, y0, y1);
        for (int i = i0; i < i1; i++) {
            int ok = 1;
            const double v = p.nd_unified ? gg_ortho_tap(src, coef, p, 1, nd, i, j, &ok, miss)
                                          : gg_ortho_tap(src, coef, p, 0, nd, i, j, &ok, miss);
            if (*miss)
                return 0;
            if (!ok)
                continue;
            const double wt = gg_ortho_box_weight(i, i0, i1, x0, x1) * wy;
            acc += v * wt;
            wsum += wt;
            n++;
        }
    }
    if (n == 0)
        return 0;
    *out = acc / wsum;
    return 1;
}

/* The source positions of block pixel (x, y)'s corners (x, y) and
 * (x + 1, y + 1) from a source-coordinate grid of corners (see
 * geogpu.h's GG_WARP_PIECE). */
GG_DEVICE_FN void gg_ortho_corners(const GG_GLOBAL double *grid, gg_ortho_params p, int x, int y,
                                   double *c)
{
    const int step = p.grid_step;
    if (step == 0) {
        gg_ortho_row_piece(grid, p.grid_ny, x, y, &c[0], &c[1]);
        gg_ortho_row_piece(grid, p.grid_ny, x, y + p.grid_ny / 2, &c[2], &c[3]);
        return;
    }
    const size_t plane = (size_t)p.grid_nx * (size_t)p.grid_ny;
    if (step == 1) {
        for (int k = 0; k < 2; k++) {
            const size_t n = (size_t)(y + 1 + k) * (size_t)p.grid_nx + (size_t)(x + 1 + k);
            c[2 * k] = grid[n];
            c[2 * k + 1] = grid[plane + n];
        }
        return;
    }
    for (int k = 0; k < 2; k++) {
        const int gx = (x + k) / step, gy = (y + k) / step;
        double wx[4], wy[4];
        gg_ortho_lagrange((double)(x + k - gx * step) / (double)step, wx);
        gg_ortho_lagrange((double)(y + k - gy * step) / (double)step, wy);
        c[2 * k] = gg_ortho_interp(grid, p.grid_nx, gx, gy, wx, wy);
        c[2 * k + 1] = gg_ortho_interp(grid + plane, p.grid_nx, gx, gy, wx, wy);
    }
}

/* src: the source window (win_w x win_h samples of src_type, packed, after
 *   win_dy rows of the buffer);
 * dst: the output block (gg_nx x gg_ny of dst_type, packed);
 * grid: planes of grid_nx x grid_ny nodes, node (i, j) at block pixel
 *   ((i - 1) * step, (j - 1) * step): for the RPC geometries
 *   GG_ORTHO_GRID_PLANES planes lon, lat, DEM pixel x, DEM pixel y,
 *   vertical shift; for GG_ORTHO_GEOM_SOURCE the source pixel and line
 *   (GDAL's corner convention), NaN where the transformer failed;
 * dem: the DEM window (float64); coef: GG_ORTHO_NCOEF coefficients, then
 *   per band its source nodata and output fill values;
 * flag: flag[0] set to 1 when a tap missed the source window. */
GG_KERNEL6(gg_k_ortho, gg_ortho_params, p, const gg_u8, src, gg_u8, dst, const double, grid,
           const double, dem, const double, coef, int, flag)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t o = (size_t)y * (size_t)gg_nx + (size_t)x;
    const double dst_init = coef[GG_ORTHO_NCOEF + 2 * p.band + 1];

    if (p.resampling == GG_ORTHO_AVERAGE) {
        double c[4], v = 0.0;
        int miss = 0;
        gg_ortho_corners(grid, p, x, y, c);
        const int ok = gg_ortho_average(src, coef, p, coef[GG_ORTHO_NCOEF + 2 * p.band], c[0],
                                        c[1], c[2], c[3], &v, &miss);
        if (miss)
            flag[0] = 1;
        if (ok && !miss)
            gg_ortho_store_valid(dst, p, o, v, dst_init);
        else
            gg_ortho_store(dst, p.dst_type, o, dst_init);
        return;
    }

    /* 1. node interpolation */
    const int step = p.grid_step;
    double sx = 0.0, sy = 0.0;
    if (step == 0) {
        /* row pieces (gdalwarp's approximate transformer, see
         * gg_ortho_row_piece) */
        gg_ortho_row_piece(grid, p.grid_ny, x, y, &sx, &sy);
    } else if (p.geometry == GG_ORTHO_GEOM_SOURCE && step == 1) {
        /* every pixel a node, taken as it is (a failed neighbour, NaN,
         * must not spread) */
        const size_t plane = (size_t)p.grid_nx * (size_t)p.grid_ny;
        const size_t n = (size_t)(y + 1) * (size_t)p.grid_nx + (size_t)(x + 1);
        sx = grid[n];
        sy = grid[plane + n];
    } else {
        const int gx = x / step, gy = y / step;
        double wx[4], wy[4];
        gg_ortho_lagrange((double)(x - gx * step) / (double)step, wx);
        gg_ortho_lagrange((double)(y - gy * step) / (double)step, wy);
        const size_t plane = (size_t)p.grid_nx * (size_t)p.grid_ny;
        if (p.geometry == GG_ORTHO_GEOM_SOURCE) {
            sx = gg_ortho_interp(grid, p.grid_nx, gx, gy, wx, wy);
            sy = gg_ortho_interp(grid + plane, p.grid_nx, gx, gy, wx, wy);
        } else {
            double g[GG_ORTHO_GRID_PLANES];
        for (int k = 0; k < GG_ORTHO_GRID_PLANES; k++)
                g[k] = gg_ortho_interp(grid + (size_t)k * plane, p.grid_nx, gx, gy, wx, wy);
            /* 2. height, 3. RFM */
            double h = 0.0;
            if (!gg_ortho_height(dem, p, g[2], g[3], g[4], &h)) {
                gg_ortho_store(dst, p.dst_type, o, dst_init);
                return;
            }
            gg_ortho_rfm(coef, p, g[0], g[1], h, &sx, &sy);
        }
    }

    /* 4. footprint (GDAL: x >= 0, (int)(x + 1e-10) < width) and resampling */
    if (!(sx >= 0.0 && sy >= 0.0 && sx < (double)p.img_w + 1.0 && sy < (double)p.img_h + 1.0)) {
        gg_ortho_store(dst, p.dst_type, o, dst_init);
        return;
    }
    const int ix = (int)(sx + 1e-10), iy = (int)(sy + 1e-10);
    if (ix >= p.img_w || iy >= p.img_h) {
        gg_ortho_store(dst, p.dst_type, o, dst_init);
        return;
    }
    int miss = 0, ok = 1;
    double v = 0.0;
    /* GDAL's masked warp kernels first look at the source pixel that
     * contains the position (the nearest-neighbour tap): when it is nodata
     * the output pixel gets no value, whatever the other taps of a bilinear
     * or cubic kernel hold (GWKRealCase/GWKGeneralCase skip it before
     * resampling); otherwise the kernel runs over the valid taps. */
    const int uni = p.nd_unified;
    const double nd = coef[GG_ORTHO_NCOEF + 2 * p.band]; /* this band's nodata */
    if (p.resampling == GG_ORTHO_NEAR || p.nd_gate) {
        v = uni ? gg_ortho_tap(src, coef, p, 1, nd, ix, iy, &ok, &miss)
                : gg_ortho_tap(src, coef, p, 0, nd, ix, iy, &ok, &miss);
        /* several bands: the gate is gdalwarp's unified mask, every band
         * nodata (nearest neighbour still takes this band's validity) */
        if (!ok && !miss && p.nd_bands > 1 && p.resampling != GG_ORTHO_NEAR)
            ok = gg_ortho_any_valid(src, coef, p, ix, iy);
    }
    if (p.resampling != GG_ORTHO_NEAR && ok && !miss)
        ok = uni ? gg_ortho_resample(src, coef, p, 1, nd, sx, sy, &v, &miss)
                 : gg_ortho_resample(src, coef, p, 0, nd, sx, sy, &v, &miss);
    if (miss)
        flag[0] = 1;
    if (ok && !miss)
        gg_ortho_store_valid(dst, p, o, v, dst_init);
    else
        gg_ortho_store(dst, p.dst_type, o, dst_init);
}
#endif /* GG_ORTHO_MODEL_ONLY */

#endif
