/*
 * rowcol_sums.cl -- masked row and column sums of a float image, for the
 * OpenCL backend (driven by opencl_rowcol.c).  Embedded after the shared
 * kernel sources, so gg_valid comes from gpu/kernel_dialect.h.
 *
 * OpenCL 1.2 has no double atomics, so every partial sum has one writer,
 * and no kernel uses local memory or barriers (an earlier single-read
 * version with private arrays live across barriers in loops computed
 * wrong sums on PoCL 5's cpu device):
 *   - gg_rowcol_cols: work item (c, s) sums column c over the rows of
 *     strip s (adjacent items read adjacent columns: coalesced);
 *   - gg_rowcol_rows: work item (r, k) sums row r over the columns of
 *     chunk k;
 *   - gg_rowcol_reduce adds the partials of each row and column.
 * The image is read twice (the CUDA backend's fused kernel reads it once).
 */

__kernel void gg_rowcol_cols(__global const float *img, int width, int height, int stride,
                             int has_nodata, float nodata, int strip_rows,
                             __global double *pcol)
{
    const int c = (int)get_global_id(0), s = (int)get_global_id(1);
    if (c >= width)
        return;
    const int r0 = s * strip_rows, r1 = min(height, r0 + strip_rows);
    double sum = 0.0;
    int n = 0;
    for (int r = r0; r < r1; r++) {
        const float v = img[(size_t)r * (size_t)stride + (size_t)c];
        if (gg_valid(v, has_nodata, nodata)) {
            sum += (double)v;
            n++;
        }
    }
    __global double *p = pcol + 2 * ((size_t)s * (size_t)width + (size_t)c);
    p[0] = sum;
    p[1] = (double)n;
}

__kernel void gg_rowcol_rows(__global const float *img, int width, int height, int stride,
                             int has_nodata, float nodata, int chunk_cols,
                             __global double *prow)
{
    const int r = (int)get_global_id(0), k = (int)get_global_id(1);
    if (r >= height)
        return;
    const int c0 = k * chunk_cols, c1 = min(width, c0 + chunk_cols);
    __global const float *row = img + (size_t)r * (size_t)stride;
    double sum = 0.0;
    int n = 0;
    for (int c = c0; c < c1; c++) {
        const float v = row[c];
        if (gg_valid(v, has_nodata, nodata)) {
            sum += (double)v;
            n++;
        }
    }
    __global double *p = prow + 2 * ((size_t)k * (size_t)height + (size_t)r);
    p[0] = sum;
    p[1] = (double)n;
}

/* One work item per output: items [0, height) finish the row sums, items
 * [height, height + width) the column sums. */
__kernel void gg_rowcol_reduce(__global const double *prow, __global const double *pcol,
                               int width, int height, int ngc, int ngr,
                               __global double *row_sum, __global double *row_cnt,
                               __global double *col_sum, __global double *col_cnt)
{
    const int i = (int)get_global_id(0);
    double s = 0.0, n = 0.0;
    if (i < height) {
        for (int g = 0; g < ngc; g++) {
            const size_t k = 2 * ((size_t)g * (size_t)height + (size_t)i);
            s += prow[k];
            n += prow[k + 1];
        }
        row_sum[i] = s;
        row_cnt[i] = n;
    } else if (i < height + width) {
        const int c = i - height;
        for (int g = 0; g < ngr; g++) {
            const size_t k = 2 * ((size_t)g * (size_t)width + (size_t)c);
            s += pcol[k];
            n += pcol[k + 1];
        }
        col_sum[c] = s;
        col_cnt[c] = n;
    }
}
