/*
 * cuda_internal.h -- what the CUDA backend's host code (cuda_backend.cu)
 * needs from its device code (kernels.cu).  Private to libgeogpu_cuda.
 *
 * MIT licence.
 */
#ifndef GG_CUDA_INTERNAL_H
#define GG_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* One entry per line of algorithms/kernels.def, in id order. */
typedef struct gg_cuda_kernel_desc {
    int id;               /* GG_K_* */
    const char *name;     /* function name, for messages */
    const void *func;     /* host stub, for cudaLaunchKernel / occupancy */
    size_t params_size;   /* sizeof the params struct */
    int nbufs;            /* device buffers after the params */
    int items_x;          /* pixels of a row per thread (kernel_dialect.h) */
} gg_cuda_kernel_desc;

extern const gg_cuda_kernel_desc gg_cuda_kernels[];
extern const int gg_cuda_kernel_count;

/* Threads per block of the row/column sum kernel (fixed: its shared
 * memory and its warp layout depend on it). */
#define GG_CUDA_ROWCOL_THREADS 256
/* Image columns one block of that kernel covers. */
#define GG_CUDA_ROWCOL_TILE_W 256
/* Rows of a strip are dealt to the block's warps; strips are a multiple. */
#define GG_CUDA_ROWCOL_WARPS (GG_CUDA_ROWCOL_THREADS / 32)

/* Host stubs of the backend's own kernels, for occupancy queries. */
const void *gg_cuda_rowcol_func(void);
const void *gg_cuda_fill32_func(void);

/* Enqueue a fill of n 32-bit words at dst (4-byte aligned) on stream. */
cudaError_t gg_cuda_enqueue_fill32(uint32_t *dst, size_t n, uint32_t pattern, int blocks,
                                   cudaStream_t stream);

/* Enqueue the masked row/column sums (zeroing the outputs first).
 * grid_y blocks down the image, each covering strip_rows rows. */
cudaError_t gg_cuda_enqueue_rowcol(const float *img, int width, int height, int stride,
                                   int has_nodata, float nodata, int strip_rows, int grid_y,
                                   double *row_sum, double *row_cnt, double *col_sum,
                                   double *col_cnt, cudaStream_t stream);

#endif /* GG_CUDA_INTERNAL_H */
