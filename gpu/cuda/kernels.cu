/*
 * kernels.cu -- the device code of the CUDA backend: every kernel of
 * algorithms/kernels.def compiled from its one shared body (through
 * gpu/kernel_dialect.h), the table the host code launches them from, and
 * the backend's own kernels (fill32, fused row/column sums).
 *
 * MIT licence.
 */
#include <math.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "../../algorithms/kernels.h"
#include "../../algorithms/kernel_ids.h"
#include "cuda_internal.h"

/* ------------------------------------------------------- kernel table */

/* kernel_ids.h numbers the same list in the same order, so position i of
 * this table is kernel id i; the host code checks .id anyway. */
const gg_cuda_kernel_desc gg_cuda_kernels[] = {
#define GG_KERNEL_DEF(id, fn, P, nbuf) {id, #fn, (const void *)fn, sizeof(P), nbuf, fn##_cuda_items},
#include "../../algorithms/kernels.def"
#undef GG_KERNEL_DEF
};
const int gg_cuda_kernel_count = (int)(sizeof(gg_cuda_kernels) / sizeof(gg_cuda_kernels[0]));
static_assert(sizeof(gg_cuda_kernels) / sizeof(gg_cuda_kernels[0]) == GG_K_COUNT,
              "kernel table out of step with kernel_ids.h");

/* ------------------------------------------------------------- fill32 */

/* Grid-stride fill.  dst may be only 4-byte aligned: the first `head`
 * words (0..3) are written one by one so the bulk can use 16-byte stores. */
static __global__ void gg_cuda_fill32_kernel(uint32_t *__restrict__ dst, size_t n,
                                             uint32_t head, uint32_t pattern)
{
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nthreads = (size_t)gridDim.x * blockDim.x;
    if (tid < head && tid < n)
        dst[tid] = pattern;
    if (n <= head)
        return;
    uint32_t *body = dst + head;
    const size_t rest = n - head;
    const size_t n4 = rest / 4;
    const uint4 v4 = make_uint4(pattern, pattern, pattern, pattern);
    uint4 *body4 = (uint4 *)body;
    for (size_t i = tid; i < n4; i += nthreads)
        body4[i] = v4;
    for (size_t i = n4 * 4 + tid; i < rest; i += nthreads)
        body[i] = pattern;
}

const void *gg_cuda_fill32_func(void)
{
    return (const void *)gg_cuda_fill32_kernel;
}

cudaError_t gg_cuda_enqueue_fill32(uint32_t *dst, size_t n, uint32_t pattern, int blocks,
                                   cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const uint32_t head = (uint32_t)(((16u - ((uintptr_t)dst & 15u)) & 15u) / 4u);
    /* no more blocks than there are 16-byte words to write */
    const size_t need = (n / 4 + 255) / 256 + 1;
    if ((size_t)blocks > need)
        blocks = (int)need;
    gg_cuda_fill32_kernel<<<blocks, 256, 0, stream>>>(dst, n, head, pattern);
    return cudaGetLastError();
}

/* ---------------------------------------------------- row/column sums */

/*
 * One read of the image gives both the row and the column sums.
 * A block covers GG_CUDA_ROWCOL_TILE_W columns of a strip of rows; its 8
 * warps take the strip's rows in turn, each warp reading a whole 256-column
 * row segment per step (two 512-byte coalesced float4 loads).  A lane owns 8
 * columns and keeps their partial sums in registers for the whole strip;
 * the row partial of a segment is reduced across the warp with shuffles and
 * added with one double atomic per warp and row.  At the end of the strip
 * the warps' column partials meet in shared memory, and one double atomic
 * per column and block adds them to the output.  Everything is summed in
 * double, as the CPU backend does, so results agree closely.
 */
#define RC_LOADS 2   /* float4 loads per lane per row */
#define RC_COLS (4 * RC_LOADS)   /* columns per lane */

static_assert(GG_CUDA_ROWCOL_TILE_W == 32 * RC_COLS, "tile width = warp width");

static __device__ __forceinline__ void rc_load(const float *__restrict__ row, int x, int width,
                                               int vec_ok, float v[4])
{
    if (vec_ok && x + 3 < width) {
        /* read once: stream past the caches */
        const float4 q = __ldcs((const float4 *)(row + x));
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
            v[j] = x + j < width ? __ldcs(row + x + j) : NAN;   /* NaN: not counted */
    }
}

static __global__ void __launch_bounds__(GG_CUDA_ROWCOL_THREADS)
gg_cuda_rowcol_kernel(const float *__restrict__ img, int width, int height, int stride,
                      int has_nodata, float nodata, int strip_rows,
                      double *__restrict__ row_sum, double *__restrict__ row_cnt,
                      double *__restrict__ col_sum, double *__restrict__ col_cnt)
{
    __shared__ double sh_sum[GG_CUDA_ROWCOL_WARPS][GG_CUDA_ROWCOL_TILE_W];
    __shared__ int sh_cnt[GG_CUDA_ROWCOL_WARPS][GG_CUDA_ROWCOL_TILE_W];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int tile_x = blockIdx.x * GG_CUDA_ROWCOL_TILE_W;
    const int y0 = blockIdx.y * strip_rows;
    const int y1 = min(height, y0 + strip_rows);
    /* 16-byte loads need 16-byte aligned rows (the buffer itself is) */
    const int vec_ok = (stride & 3) == 0;

    double csum[RC_COLS];
    int ccnt[RC_COLS];
#pragma unroll
    for (int i = 0; i < RC_COLS; i++) {
        csum[i] = 0.0;
        ccnt[i] = 0;
    }

#pragma unroll 2
    for (int y = y0 + warp; y < y1; y += GG_CUDA_ROWCOL_WARPS) {
        const float *row = img + (size_t)y * (size_t)stride;
        float v[RC_COLS];
#pragma unroll
        for (int l = 0; l < RC_LOADS; l++)
            rc_load(row, tile_x + l * 128 + lane * 4, width, vec_ok, v + 4 * l);
        double rs = 0.0;
        int rc = 0;
#pragma unroll
        for (int i = 0; i < RC_COLS; i++) {
            if (gg_valid(v[i], has_nodata, nodata)) {
                const double d = (double)v[i];
                csum[i] += d;
                ccnt[i]++;
                rs += d;
                rc++;
            }
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            rs += __shfl_down_sync(0xffffffffu, rs, off);
            rc += __shfl_down_sync(0xffffffffu, rc, off);
        }
        if (lane == 0 && rc != 0) {
            atomicAdd(row_sum + y, rs);
            atomicAdd(row_cnt + y, (double)rc);
        }
    }

    /* lane's column i is local column (i/4)*128 + lane*4 + i%4 */
#pragma unroll
    for (int i = 0; i < RC_COLS; i++) {
        const int c = (i / 4) * 128 + lane * 4 + (i & 3);
        sh_sum[warp][c] = csum[i];
        sh_cnt[warp][c] = ccnt[i];
    }
    __syncthreads();
    for (int c = threadIdx.x; c < GG_CUDA_ROWCOL_TILE_W; c += GG_CUDA_ROWCOL_THREADS) {
        double s = 0.0;
        int n = 0;
#pragma unroll
        for (int w = 0; w < GG_CUDA_ROWCOL_WARPS; w++) {
            s += sh_sum[w][c];
            n += sh_cnt[w][c];
        }
        const int x = tile_x + c;
        if (x < width && n != 0) {
            atomicAdd(col_sum + x, s);
            atomicAdd(col_cnt + x, (double)n);
        }
    }
}

const void *gg_cuda_rowcol_func(void)
{
    return (const void *)gg_cuda_rowcol_kernel;
}

/* The outputs start at zero for the atomics: one launch for all four
 * (cheaper than four memsets in a row). */
static __global__ void gg_cuda_rowcol_zero_kernel(double *__restrict__ row_sum,
                                                  double *__restrict__ row_cnt, int height,
                                                  double *__restrict__ col_sum,
                                                  double *__restrict__ col_cnt, int width)
{
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < height; i += stride) {
        row_sum[i] = 0.0;
        row_cnt[i] = 0.0;
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < width; i += stride) {
        col_sum[i] = 0.0;
        col_cnt[i] = 0.0;
    }
}

cudaError_t gg_cuda_enqueue_rowcol(const float *img, int width, int height, int stride,
                                   int has_nodata, float nodata, int strip_rows, int grid_y,
                                   double *row_sum, double *row_cnt, double *col_sum,
                                   double *col_cnt, cudaStream_t stream)
{
    const int longest = width > height ? width : height;
    const int zero_blocks = longest / 256 + 1 < 1024 ? longest / 256 + 1 : 1024;
    gg_cuda_rowcol_zero_kernel<<<zero_blocks, 256, 0, stream>>>(row_sum, row_cnt, height,
                                                                 col_sum, col_cnt, width);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    const dim3 grid((unsigned)((width + GG_CUDA_ROWCOL_TILE_W - 1) / GG_CUDA_ROWCOL_TILE_W),
                    (unsigned)grid_y);
    gg_cuda_rowcol_kernel<<<grid, GG_CUDA_ROWCOL_THREADS, 0, stream>>>(
        img, width, height, stride, has_nodata, nodata, strip_rows, row_sum, row_cnt, col_sum,
        col_cnt);
    return cudaGetLastError();
}
