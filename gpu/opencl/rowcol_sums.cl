/*
 * rowcol_sums.cl -- masked row and column sums of a float image, for the
 * OpenCL backend (driven by opencl_rowcol.c).  Embedded after the shared
 * kernel sources, so gg_valid comes from gpu/kernel_dialect.h.
 *
 * OpenCL 1.2 has no double atomics, so the work is split so that every
 * partial sum has exactly one writer:
 *   - the image is cut into tiles of GG_RC_TW columns x GG_RC_TH rows;
 *     work-group (gc, gr) of an ngc x ngr grid takes the column blocks
 *     cb = gc, gc + ngc, ... and within each the row blocks
 *     rb = gr, gr + ngr, ...;
 *   - column partials of a column block stay in registers over all the
 *     group's row blocks and are written once, to pcol[gr][c];
 *   - row partials of each tile are added to prow[gc][r], which only this
 *     group, and in it always the same work item, touches;
 *   - gg_rowcol_reduce then adds the ngc row or ngr column partials.
 * The image is read once and the scratch is bounded by
 * (ngc * height + ngr * width) (sum, count) pairs of doubles.
 */
#define GG_RC_LX 32 /* work-group width: a warp reads 128 contiguous bytes */
#define GG_RC_LY 8
#define GG_RC_CPI 4 /* columns per work item */
#define GG_RC_RPI 4 /* rows per work item */
#define GG_RC_TW (GG_RC_LX * GG_RC_CPI) /* tile width, 128 */
#define GG_RC_TH (GG_RC_LY * GG_RC_RPI) /* tile height, 32 */
/* local scratch: TH rows of LX (+1 against bank conflicts) row partials,
 * reused for LY rows of TW column partials */
#define GG_RC_LOCAL (GG_RC_TH * (GG_RC_LX + 1) > GG_RC_LY * GG_RC_TW ? \
                     GG_RC_TH * (GG_RC_LX + 1) : GG_RC_LY * GG_RC_TW)

__kernel __attribute__((reqd_work_group_size(GG_RC_LX, GG_RC_LY, 1)))
void gg_rowcol_partial(__global const float *img, int width, int height, int stride,
                       int has_nodata, float nodata, __global double *prow,
                       __global double *pcol)
{
    __local double lsum[GG_RC_LOCAL];
    __local int lcnt[GG_RC_LOCAL];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int lid = ly * GG_RC_LX + lx;
    const int gc = (int)get_group_id(0), gr = (int)get_group_id(1);
    const int ngc = (int)get_num_groups(0), ngr = (int)get_num_groups(1);
    const int ncb = (width + GG_RC_TW - 1) / GG_RC_TW;
    const int nrb = (height + GG_RC_TH - 1) / GG_RC_TH;

    /* loop bounds depend on the group only, so every barrier is uniform */
    for (int cb = gc; cb < ncb; cb += ngc) {
        double cs[GG_RC_CPI];
        int cn[GG_RC_CPI];
        for (int j = 0; j < GG_RC_CPI; j++) {
            cs[j] = 0.0;
            cn[j] = 0;
        }
        for (int rb = gr; rb < nrb; rb += ngr) {
            for (int k = 0; k < GG_RC_RPI; k++) {
                const int t = ly + GG_RC_LY * k; /* row inside the tile */
                const int r = rb * GG_RC_TH + t;
                double rs = 0.0;
                int rn = 0;
                if (r < height) {
                    __global const float *row = img + (size_t)r * (size_t)stride;
                    for (int j = 0; j < GG_RC_CPI; j++) {
                        const int c = cb * GG_RC_TW + lx + GG_RC_LX * j;
                        if (c < width) {
                            const float v = row[c];
                            if (gg_valid(v, has_nodata, nodata)) {
                                rs += (double)v;
                                rn++;
                                cs[j] += (double)v;
                                cn[j]++;
                            }
                        }
                    }
                }
                lsum[t * (GG_RC_LX + 1) + lx] = rs;
                lcnt[t * (GG_RC_LX + 1) + lx] = rn;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid < GG_RC_TH) {
                const int r = rb * GG_RC_TH + lid;
                if (r < height) {
                    double s = 0.0;
                    int n = 0;
                    for (int i = 0; i < GG_RC_LX; i++) {
                        s += lsum[lid * (GG_RC_LX + 1) + i];
                        n += lcnt[lid * (GG_RC_LX + 1) + i];
                    }
                    __global double *p = prow + 2 * ((size_t)gc * (size_t)height + (size_t)r);
                    if (cb == gc) { /* first column block of this group: initialise */
                        p[0] = s;
                        p[1] = (double)n;
                    } else {
                        p[0] += s;
                        p[1] += (double)n;
                    }
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        for (int j = 0; j < GG_RC_CPI; j++) {
            lsum[ly * GG_RC_TW + lx + GG_RC_LX * j] = cs[j];
            lcnt[ly * GG_RC_TW + lx + GG_RC_LX * j] = cn[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < GG_RC_TW) {
            const int c = cb * GG_RC_TW + lid;
            if (c < width) {
                double s = 0.0;
                int n = 0;
                for (int i = 0; i < GG_RC_LY; i++) {
                    s += lsum[i * GG_RC_TW + lid];
                    n += lcnt[i * GG_RC_TW + lid];
                }
                __global double *p = pcol + 2 * ((size_t)gr * (size_t)width + (size_t)c);
                p[0] = s;
                p[1] = (double)n;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
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
