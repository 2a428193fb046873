/*
 * opencl_internal.h -- state shared by the files of the OpenCL backend
 * (device handle, buffers, error helpers).  Not installed.
 */
#ifndef GG_OPENCL_INTERNAL_H
#define GG_OPENCL_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#ifdef __APPLE__
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include "backend.h"
#include "kernel_ids.h"

/* A device allocation: the size is kept for bounds checks and for the
 * free-memory estimate. */
struct gg_mem {
    cl_mem buf;
    size_t bytes;
};

typedef struct gg_cl_dev {
    gg_dev base; /* must stay first: the runtime sees a gg_dev * */
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;

    /* The copy queue (write2d_async, read2d_after) beside the main one,
     * and the marks both queues record and wait on (events; NULL: not
     * recorded yet, and waiting on it waits for nothing). */
    cl_command_queue upload;
    cl_event marks[GGB_MARKS];

    /* Kernel objects hold their arguments, so setting arguments and
     * enqueueing must not interleave between threads; the lock also guards
     * the lazy kernel cache and the counters below. */
    pthread_mutex_t lock;
    cl_kernel kernels[GG_K_COUNT];
    size_t local_size[GG_K_COUNT][2]; /* chosen on first use */
    int param_size[GG_K_COUNT];       /* sizeof(params) on the device */
    int param_sizes_known;

    size_t total_mem;     /* CL_DEVICE_GLOBAL_MEM_SIZE */
    size_t max_alloc;     /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    size_t allocated;     /* bytes currently allocated through this handle */
    int has_amd_free_mem; /* cl_amd_device_attribute_query */
    size_t max_wg_size;
    size_t max_item_size[3];

    /* rowcol_sums: two kernels and their partial-sum scratch, grown on
     * demand and reused (the in-order queue serialises the users). */
    cl_kernel k_rowcol_cols, k_rowcol_rows, k_rowcol_reduce;
    cl_mem rc_row_scratch, rc_col_scratch;
    size_t rc_row_bytes, rc_col_bytes;
} gg_cl_dev;

static inline gg_cl_dev *gg_cl(gg_dev *dev) { return (gg_cl_dev *)dev; }

/* "CL_INVALID_VALUE" etc.; "unknown OpenCL error" for codes not listed. */
const char *gg_cl_error_name(cl_int code);

/* Writes a message into dev->err and returns code. */
int gg_cl_fail(gg_cl_dev *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats "<what> failed: <name> (<code>)" into dev->err and returns the
 * matching GGB_ERR_* (allocation failures -> GGB_ERR_NOMEM). */
int gg_cl_fail_call(gg_cl_dev *d, const char *what, cl_int code);

/* Creates (once) the kernel `name` of the embedded program. */
int gg_cl_get_kernel(gg_cl_dev *d, const char *name, cl_kernel *out);

/* rowcol_sums (opencl_rowcol.c) and its cleanup at close. */
int gg_cl_rowcol_sums(gg_dev *dev, const gg_mem *img, const gg_rowcol_args *a,
                      gg_mem *row_sum, gg_mem *row_cnt, gg_mem *col_sum,
                      gg_mem *col_cnt);
void gg_cl_rowcol_release(gg_cl_dev *d);

/* VkFFT plans (opencl_fft.c). */
int gg_cl_fft_plan(gg_dev *dev, int rank, const int *n, int batch, void **plan);
int gg_cl_fft_exec(gg_dev *dev, void *plan, gg_mem *data, int inverse);
void gg_cl_fft_destroy(gg_dev *dev, void *plan);

#endif /* GG_OPENCL_INTERNAL_H */
