/*
 * backend.h -- the table of function pointers every compute backend fills.
 *
 * The CPU backend is linked into libgeogpu; CUDA and OpenCL live in their
 * own shared objects (libgeogpu_cuda.so, libgeogpu_opencl.so) loaded with
 * dlopen on first use, so nothing GDAL loads links CUDA or OpenCL directly.
 * Each of those exports one symbol:
 *
 *     const gg_backend *gg_backend_cuda_entry(void);
 *     const gg_backend *gg_backend_opencl_entry(void);
 *
 * A backend must not call back into libgeogpu: everything it needs comes
 * through this header (self-contained, plain C).
 */
#ifndef GG_BACKEND_H
#define GG_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GG_BACKEND_ABI 3   /* 2: the copy queue (write2d_async ... wait_mark); 3: host_register */
#define GG_ERRLEN 512
#define GG_NAMELEN 256
#define GGB_MARKS 8   /* marks of the copy queue (write2d_async ... wait_mark) */

typedef struct gg_backend gg_backend;
typedef struct gg_dev gg_dev;
typedef struct gg_mem gg_mem;   /* device allocation; backend-defined */

/* The common head of every device handle.  A backend allocates a larger
 * struct whose first member is gg_dev, and fills name. */
struct gg_dev {
    const gg_backend *vt;
    char name[GG_NAMELEN];   /* e.g. "cuda:0 NVIDIA H100 80GB HBM3" */
    char err[GG_ERRLEN];     /* message of the last failure */
};

/* Status codes shared with geogpu.h (same numeric values). */
enum {
    GGB_OK = 0,
    GGB_ERR_ARGUMENT = 1,
    GGB_ERR_NOMEM = 2,
    GGB_ERR_DEVICE = 3,
    GGB_ERR_UNAVAILABLE = 4,
    GGB_ERR_UNSUPPORTED = 5
};

/* Masked row/column sums over a float image (one read of the image):
 * a pixel counts when finite and (has_nodata == 0 or value != nodata).
 * Results are written as doubles to device buffers. */
typedef struct gg_rowcol_args {
    int width, height;      /* image size */
    int stride;             /* elements between rows */
    int has_nodata;
    float nodata;
} gg_rowcol_args;

struct gg_backend {
    int abi;                  /* GG_BACKEND_ABI */
    const char *name;         /* "cpu", "cuda", "opencl" */

    /* Writes one line per device into buf ("cuda:0 <name> <mem> MiB\n").
     * Returns the number of devices (0 when none; never fails loudly). */
    int (*list)(char *buf, size_t buflen);

    /* Opens a device.  index0/index1: cuda -> (device, -1);
     * opencl -> (platform, device); -1 means "first suitable GPU" for
     * opencl platform (auto mode) or "first device" for the index.
     * gpu_only: under auto, accept only GPU devices.
     * On failure returns a GGB_ERR_* code and writes the reason to err. */
    int (*open)(int index0, int index1, int gpu_only, gg_dev **out,
                char *err, size_t errlen);
    void (*close)(gg_dev *dev);

    int (*mem_info)(gg_dev *dev, size_t *free_bytes, size_t *total_bytes);

    int (*alloc)(gg_dev *dev, size_t bytes, gg_mem **out);
    void (*free)(gg_dev *dev, gg_mem *mem);
    /* Host <-> device copies of a 2-D region: rows of row_bytes, host rows
     * host_pitch bytes apart, device rows dev_pitch bytes apart starting at
     * dev_offset.  Blocking (the data is in place when they return). */
    int (*write2d)(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                   const void *src, size_t host_pitch, size_t row_bytes, size_t rows);
    int (*read2d)(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                  void *dst, size_t host_pitch, size_t row_bytes, size_t rows);
    /* Device-to-device copy (asynchronous, in queue order). */
    int (*copy)(gg_dev *dev, gg_mem *dst, size_t dst_offset, const gg_mem *src,
                size_t src_offset, size_t bytes);
    /* Fills bytes with a 32-bit pattern (bytes multiple of 4). */
    int (*fill32)(gg_dev *dev, gg_mem *dst, size_t offset, uint32_t pattern,
                  size_t bytes);

    /* Launches kernel `id` (see algorithms/kernels.def) over an nx x ny
     * grid of work items, with the params struct passed by value and
     * nbufs device buffers, in the order of the kernel's signature.
     * Asynchronous; errors of the launch itself are reported. */
    int (*launch)(gg_dev *dev, int id, int nx, int ny, const void *params,
                  size_t params_size, gg_mem *const *bufs, int nbufs);

    /* Masked row and column sums and counts of a float image (doubles). */
    int (*rowcol_sums)(gg_dev *dev, const gg_mem *img, const gg_rowcol_args *a,
                       gg_mem *row_sum, gg_mem *row_cnt,
                       gg_mem *col_sum, gg_mem *col_cnt);

    /* Batched in-place C2C single precision FFT plans (see gg_fft in
     * geogpu.h for the layout).  The runtime caches plans by shape. */
    int (*fft_plan)(gg_dev *dev, int rank, const int *n, int batch, void **plan);
    int (*fft_exec)(gg_dev *dev, void *plan, gg_mem *data, int inverse);
    void (*fft_destroy)(gg_dev *dev, void *plan);

    /* Waits for all queued work; reports asynchronous errors. */
    int (*finish)(gg_dev *dev);

    /* Launch configuration chosen for kernel id (for tests and -v):
     * work-group / thread-block size and the occupancy it reaches
     * (fraction of the maximum resident threads per multiprocessor;
     * 0 where the backend cannot tell). */
    int (*launch_info)(gg_dev *dev, int id, int *block_x, int *block_y,
                       double *occupancy);

    /* Host memory for transfer sources and destinations: page-locked
     * (pinned) where the backend can, so the copy engine reads and writes
     * it directly (CUDA: portable, i.e. pinned for every device), else
     * ordinary memory.  host_free takes only what host_alloc of the same
     * backend gave (NULL: nothing). */
    int (*host_alloc)(gg_dev *dev, size_t bytes, void **out);
    void (*host_free)(gg_dev *dev, void *p);

    /* Optional (NULL: the device has one queue; the runtime then uses
     * write2d and read2d): a copy queue beside the main one, so that
     * copies overlap the kernels queued on the main queue.
     * write2d_async queues write2d on it, starting once the main queue has
     * reached mark `after` (-1: at once); mark `done` (-1: none) is
     * reached when it has landed.  It returns once queued: the source may
     * change when `done` is reached (at once when the backend packed it
     * into its own staging).  read2d_after is read2d on the copy queue,
     * once the main queue has reached mark `after`: blocking, but not
     * delayed by kernels queued on the main queue after that mark.  mark
     * records mark m at the current end of the main queue; wait_mark makes
     * what is queued next on the main queue wait until mark m is reached
     * (CUDA: on the device; OpenCL: the host waits for it).  Marks
     * are 0 .. GGB_MARKS - 1; finish waits for both queues. */
    int (*write2d_async)(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                         const void *src, size_t host_pitch, size_t row_bytes, size_t rows,
                         int after, int done);
    int (*read2d_after)(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                        void *dst, size_t host_pitch, size_t row_bytes, size_t rows, int after);
    int (*mark)(gg_dev *dev, int m);
    int (*wait_mark)(gg_dev *dev, int m);

    /* Optional (NULL: not supported): page-locks memory the caller mapped
     * (a file's pages), so the copy engine reads (read_only) or writes it
     * in place; host_unregister undoes it before the caller unmaps.  The
     * CPU backend has nothing to lock and accepts any memory. */
    int (*host_register)(gg_dev *dev, void *p, size_t bytes, int read_only);
    void (*host_unregister)(gg_dev *dev, void *p);
};

typedef const gg_backend *(*gg_backend_entry_fn)(void);

/* The CPU backend, linked into libgeogpu. */
const gg_backend *gg_backend_cpu_entry(void);

#ifdef __cplusplus
}
#endif
#endif /* GG_BACKEND_H */
