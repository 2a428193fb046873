/*
 * sar_kernels.h -- per-pixel kernels of the airborne-SAR products
 * (multilook, rotation+scaling, row/column gain normalisation), written
 * once in the kernel dialect (gpu/kernel_dialect.h) for CPU, CUDA and
 * OpenCL.  All device buffers are packed (row length = grid width unless a
 * stride is given).
 */

/* Multilook: one work item per output pixel averages a looks_x x looks_y
 * block of valid samples; no valid sample gives dst_nodata. */
GG_KERNEL2(gg_k_multilook, gg_multilook_params, p, const float, in, float, out)
{
    const int ox = GG_X, oy = GG_Y;
    if (ox >= gg_nx || oy >= gg_ny)
        return;
    float s0 = 0.0f, s1 = 0.0f;
    int n = 0;
    for (int j = 0; j < p.looks_y; j++) {
        const size_t row = (size_t)(oy * p.looks_y + j) * (size_t)p.in_stride;
        float r0 = 0.0f, r1 = 0.0f; /* per-row partial sums: shorter chains */
        for (int i = 0; i < p.looks_x; i++) {
            const size_t k = row + (size_t)(ox * p.looks_x + i);
            if (p.mode == GG_ML_REAL) {
                const float v = in[k];
                if (gg_valid(v, p.has_nodata, p.nodata)) {
                    r0 += v;
                    n++;
                }
            } else {
                const float re = in[2 * k], im = in[2 * k + 1];
                if (gg_cvalid(re, im, p.has_nodata, p.nodata)) {
                    if (p.mode == GG_ML_INTENSITY) {
                        r0 += re * re + im * im;
                    } else {
                        r0 += re;
                        r1 += im;
                    }
                    n++;
                }
            }
        }
        s0 += r0;
        s1 += r1;
    }
    const size_t o = (size_t)oy * (size_t)gg_nx + (size_t)ox;
    const float inv = n > 0 ? 1.0f / (float)n : 0.0f;
    if (p.mode == GG_ML_COMPLEX) {
        out[2 * o] = n > 0 ? s0 * inv : p.dst_nodata;
        out[2 * o + 1] = n > 0 ? s1 * inv : p.dst_nodata;
    } else {
        out[o] = n > 0 ? s0 * inv : p.dst_nodata;
    }
}

/* Rotation + scaling, inverse-mapped bilinear interpolation.
 * A destination pixel is valid when its centre maps inside the source
 * footprint [-0.5, W-0.5] x [-0.5, H-0.5] (1e-6 px tolerance) and the
 * nearest source pixel (ties to the lower index) is
 * valid; the sample position is clamped to the pixel-centre hull (edge
 * replication) and the bilinear weights are renormalised over the valid
 * neighbours, so nodata areas neither grow nor shrink. */
GG_KERNEL2(gg_k_rotate, gg_rotate_params, p, const float, in, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const int nc = p.channels;
    const size_t o = ((size_t)y * (size_t)gg_nx + (size_t)x) * (size_t)nc;
    const double dx = (double)(p.dst_x0 + x) - p.dst_cx;
    const double dy = (double)(p.dst_y0 + y) - p.dst_cy;
    const double sx = p.src_cx + p.m00 * dx + p.m01 * dy;
    const double sy = p.src_cy + p.m10 * dx + p.m11 * dy;
    const int inside = sx >= -0.5 - GG_ROTATE_EDGE_TOL && sx <= p.max_sx && sy >= -0.5 - GG_ROTATE_EDGE_TOL &&
             sy <= p.max_sy;
    if (!inside) { /* also keeps the integer conversions below in range */
        for (int c = 0; c < nc; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    /* The 2x2 cell and the fractions, with the sample clamped to the hull
     * of pixel centres [0, W-1] (edge replication): one floor per axis,
     * the clamping done on the integer cell (double work is the costly
     * part of this kernel on GPUs). */
    const double flx = floor(sx), fly = floor(sy);
    int ix = (int)flx, iy = (int)fly;
    float fx = (float)(sx - flx), fy = (float)(sy - fly);
    if (ix < 0) {
        ix = 0;
        fx = 0.0f;
    }
    if (ix > p.src_w - 2) {
        ix = p.src_w >= 2 ? p.src_w - 2 : 0;
        fx = p.src_w >= 2 ? 1.0f : 0.0f;
    }
    if (iy < 0) {
        iy = 0;
        fy = 0.0f;
    }
    if (iy > p.src_h - 2) {
        iy = p.src_h >= 2 ? p.src_h - 2 : 0;
        fy = p.src_h >= 2 ? 1.0f : 0.0f;
    }
    const int ix1 = p.src_w >= 2 ? ix + 1 : ix, iy1 = p.src_h >= 2 ? iy + 1 : iy;
    /* to tile coordinates; a cell outside the tile is a planning error:
     * give nodata rather than read out of bounds */
    const int lx0 = ix - p.tile_x0, lx1 = ix1 - p.tile_x0;
    const int ly0 = iy - p.tile_y0, ly1 = iy1 - p.tile_y0;
    if (lx0 < 0 || ly0 < 0 || lx1 >= p.tile_w || ly1 >= p.tile_h) {
        for (int c = 0; c < nc; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    const size_t tw = (size_t)p.tile_w;
    const size_t k00 = ((size_t)ly0 * tw + (size_t)lx0) * (size_t)nc;
    const size_t k01 = ((size_t)ly0 * tw + (size_t)lx1) * (size_t)nc;
    const size_t k10 = ((size_t)ly1 * tw + (size_t)lx0) * (size_t)nc;
    const size_t k11 = ((size_t)ly1 * tw + (size_t)lx1) * (size_t)nc;
    const float w00 = (1.0f - fx) * (1.0f - fy), w01 = fx * (1.0f - fy);
    const float w10 = (1.0f - fx) * fy, w11 = fx * fy;
    int v00, v01, v10, v11;
    if (nc == 1) {
        v00 = gg_valid(in[k00], p.has_nodata, p.nodata);
        v01 = gg_valid(in[k01], p.has_nodata, p.nodata);
        v10 = gg_valid(in[k10], p.has_nodata, p.nodata);
        v11 = gg_valid(in[k11], p.has_nodata, p.nodata);
    } else {
        v00 = gg_cvalid(in[k00], in[k00 + 1], p.has_nodata, p.nodata);
        v01 = gg_cvalid(in[k01], in[k01 + 1], p.has_nodata, p.nodata);
        v10 = gg_cvalid(in[k10], in[k10 + 1], p.has_nodata, p.nodata);
        v11 = gg_cvalid(in[k11], in[k11 + 1], p.has_nodata, p.nodata);
    }
    /* nearest neighbour decides validity; ties (up to 1e-6 px, which
     * exact half-pixel geometry produces) go to the lower index */
    const int hx = fx > 0.500001f, hy = fy > 0.500001f;
    const int nearest = hy ? (hx ? v11 : v10) : (hx ? v01 : v00);
    if (!nearest) {
        for (int c = 0; c < nc; c++)
            out[o + c] = p.dst_nodata;
        return;
    }
    const float a00 = v00 ? w00 : 0.0f, a01 = v01 ? w01 : 0.0f;
    const float a10 = v10 ? w10 : 0.0f, a11 = v11 ? w11 : 0.0f;
    const float wsum = a00 + a01 + a10 + a11;
    for (int c = 0; c < nc; c++) {
        /* an invalid neighbour has weight 0 but may hold NaN: select, not multiply */
        const float s = (v00 ? a00 * in[k00 + c] : 0.0f) + (v01 ? a01 * in[k01 + c] : 0.0f) +
                        (v10 ? a10 * in[k10 + c] : 0.0f) + (v11 ? a11 * in[k11 + c] : 0.0f);
        out[o + c] = s / wsum;
    }
}

/* |z| of complex samples; invalid samples become NaN (radnorm on SLCs). */
GG_STREAM_KERNEL2(gg_k_cabs, gg_cabs_params, p, const float, in, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t k = (size_t)y * (size_t)gg_nx + (size_t)x;
    const float re = in[2 * k], im = in[2 * k + 1];
    out[k] = gg_cvalid(re, im, p.has_nodata, p.nodata) ? hypot(re, im) : NAN;
}

/* Gain normalisation F = scale * I / (rmean[y] * cmean[x]). */
GG_DEVICE_FN float gg_radnorm_value(gg_radnorm_params p, float v, float rm, float cm, int *ok)
{
    const float d = rm * cm;
    *ok = gg_valid(v, p.has_nodata, p.nodata) && d > 0.0f && isfinite(d);
    return *ok ? (float)p.scale * (v / d) : 0.0f;
}

GG_STREAM_KERNEL4(gg_k_radnorm, gg_radnorm_params, p, const float, in, const float, rmean,
           const float, cmean, float, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t k = (size_t)y * (size_t)gg_nx + (size_t)x;
    int ok;
    const float f = gg_radnorm_value(p, in[k], rmean[y], cmean[x], &ok);
    out[k] = ok ? f : p.dst_nodata;
}

/* Quantised: round half up to an integer level, clamp to [0, levels-1]. */
GG_STREAM_KERNEL4(gg_k_radnorm_q, gg_radnorm_params, p, const float, in, const float, rmean,
           const float, cmean, gg_u8, out)
{
    const int x = GG_X, y = GG_Y;
    if (x >= gg_nx || y >= gg_ny)
        return;
    const size_t k = (size_t)y * (size_t)gg_nx + (size_t)x;
    int ok;
    const float f = gg_radnorm_value(p, in[k], rmean[y], cmean[x], &ok);
    const float q = fmin(fmax(floor(f + 0.5f), 0.0f), (float)(p.levels - 1));
    out[k] = ok ? (gg_u8)q : (gg_u8)p.dst_nodata_u8;
}
