/*
 * cuda_backend.cu -- the CUDA backend of geogpu (libgeogpu_cuda.so).
 *
 * libgeogpu dlopens this library and calls gg_backend_cuda_entry(), the one
 * exported symbol; everything else is hidden.  The CUDA runtime is linked
 * statically, so the only CUDA pieces needed at run time are the driver
 * (libcuda.so.1, loaded by the runtime on first use) and cuFFT.
 *
 * A device handle owns one stream; every operation is queued on it, and
 * every entry point makes the handle's device current first, so a handle
 * may move between host threads (used by one at a time).  A second stream
 * carries write2d_async and read2d_after, so that copies overlap the
 * kernels queued on the first; events ("marks") order the two.
 *
 * MIT licence.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda_runtime_api.h>
#include <cufft.h>

#include "../backend.h"
#include "../host_pool.h"
#include "../../algorithms/kernel_ids.h"
#include "cuda_internal.h"

#define GG_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

GG_CUDA_EXPORT const gg_backend *gg_backend_cuda_entry(void);

/* Pinned staging for host <-> device copies of pageable memory: a ring of
 * slots, so the CPU packs (or unpacks) one slot while the copy engine
 * moves another.  Allocated on the first large transfer. */
#define STAGING_SLOTS 4
#define STAGING_SLOT_BYTES ((size_t)8 << 20)
/* Smaller transfers go straight from pageable memory: staging buys
 * nothing there. */
#define DIRECT_COPY_MAX ((size_t)1 << 20)
/* One CPU thread copies pageable memory at about 8-10 GB/s, a fifth of
 * what PCIe 5 moves, so the staging slots are packed and unpacked by
 * several threads (H200 host, 256 MiB: 1 thread 9 GB/s, 4 threads 35,
 * 8 threads 50; the driver's own pageable path: 10 up, 18 down), one
 * per PARALLEL_COPY_MIN bytes, kept threads of gpu/host_pool.c. */
#define PARALLEL_COPY_MIN ((size_t)1 << 20)
#define COPY_THREADS_MAX 8

/* Largest block of the per-pixel kernels (threads).  Measured on an H200
 * with one-item-per-thread kernels: 256-thread blocks (64 x 4) move 5 to
 * 10% more data per second than 512 or 1024, at the same occupancy. */
#define KERNEL_BLOCK_LIMIT 256

typedef struct kernel_config {
    int ready;
    int block_x, block_y;
    double occupancy;
} kernel_config;

typedef struct cuda_dev {
    gg_dev base;             /* must stay first */
    int ordinal;
    cudaStream_t stream;
    cudaStream_t upload;     /* the copy stream of write2d_async, read2d_after */
    cudaEvent_t marks[GGB_MARKS];
    int sm_count;
    int max_threads_per_sm;
    int max_grid_y;

    unsigned char *staging;  /* STAGING_SLOTS * STAGING_SLOT_BYTES, pinned */
    cudaEvent_t slot_done[STAGING_SLOTS];
    int staging_failed;      /* cudaHostAlloc refused once: copy directly */
    int copy_threads;        /* host threads packing / unpacking staging */

    kernel_config kcfg[GG_K_COUNT];
    int fill_blocks;         /* grid of the fill kernel */
    int rowcol_blocks_per_sm;
} cuda_dev;

struct gg_mem {
    void *ptr;
    size_t bytes;
};

typedef struct fft_plan {
    cufftHandle handle;
    size_t bytes;            /* bytes of the data one execution touches */
} fft_plan;

static int choose_copy_threads(void);

/* ------------------------------------------------------------ errors */

static void put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void put_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int set_err(cuda_dev *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_err(cuda_dev *d, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->base.err, sizeof d->base.err, fmt, ap);
    va_end(ap);
    return code;
}

/* Records a failed CUDA runtime call and maps it to a status.  Clears the
 * runtime's last-error slot so a later launch check does not report it
 * again (sticky errors stay: the context is lost for good). */
static int cuda_fail(cuda_dev *d, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    set_err(d, 0, "CUDA: %s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return e == cudaErrorMemoryAllocation ? GGB_ERR_NOMEM : GGB_ERR_DEVICE;
}

static const char *cufft_result_name(cufftResult r)
{
    switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (out of memory)";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT error";
    }
}

static int cufft_fail(cuda_dev *d, cufftResult r, const char *what)
{
    (void)cudaGetLastError();
    set_err(d, 0, "CUDA: %s failed: %s (%d)", what, cufft_result_name(r), (int)r);
    switch (r) {
    case CUFFT_ALLOC_FAILED: return GGB_ERR_NOMEM;
    case CUFFT_INVALID_SIZE:
    case CUFFT_INVALID_VALUE:
    case CUFFT_INVALID_TYPE: return GGB_ERR_ARGUMENT;
    case CUFFT_NOT_SUPPORTED:
    case CUFFT_NOT_IMPLEMENTED: return GGB_ERR_UNSUPPORTED;
    default: return GGB_ERR_DEVICE;
    }
}

/* Makes the handle's device current on the calling thread. */
static int use_device(cuda_dev *d)
{
    const cudaError_t e = cudaSetDevice(d->ordinal);
    return e == cudaSuccess ? GGB_OK : cuda_fail(d, e, "cudaSetDevice");
}

static cuda_dev *as_cuda(gg_dev *dev)
{
    return (cuda_dev *)dev;
}

/* True when [off, off + (rows-1)*pitch + row_bytes) lies inside size bytes
 * (overflow-safe); empty regions always fit. */
static int region_fits(size_t size, size_t off, size_t pitch, size_t row_bytes, size_t rows)
{
    if (rows == 0 || row_bytes == 0)
        return 1;
    size_t span;
    if (__builtin_mul_overflow(rows - 1, pitch, &span) ||
        __builtin_add_overflow(span, row_bytes, &span) ||
        __builtin_add_overflow(span, off, &span))
        return 0;
    return span <= size;
}

/* ------------------------------------------------------ device query */

/* Why the runtime cannot be used at all, as one line. */
static void describe_no_runtime(cudaError_t e, char *err, size_t errlen)
{
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaGetLastError();
    if (e == cudaErrorNoDevice) {
        put_err(err, errlen, "CUDA: no CUDA device found (cudaErrorNoDevice)");
    } else if (e == cudaErrorInsufficientDriver && driver == 0) {
        put_err(err, errlen, "CUDA: no CUDA driver found (cudaErrorInsufficientDriver)");
    } else if (e == cudaErrorInsufficientDriver) {
        put_err(err, errlen,
                "CUDA: the driver supports CUDA %d.%d but this build needs CUDA %d.%d "
                "(cudaErrorInsufficientDriver)",
                driver / 1000, (driver % 1000) / 10, CUDART_VERSION / 1000,
                (CUDART_VERSION % 1000) / 10);
    } else {
        put_err(err, errlen, "CUDA: cannot use the CUDA driver: %s (%s)", cudaGetErrorString(e),
                cudaGetErrorName(e));
    }
}

static int cuda_list(char *buf, size_t buflen)
{
    int count = 0;
    if (buf && buflen)
        buf[0] = '\0';
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    size_t used = 0;
    for (int i = 0; i < count; i++) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(prop.name, sizeof prop.name, "(properties unavailable)");
            prop.totalGlobalMem = 0;
            prop.major = prop.minor = 0;
        }
        if (buf && used < buflen) {
            const int n = snprintf(buf + used, buflen - used, "cuda:%d %.200s %zu MiB sm_%d%d\n", i,
                                   prop.name, (size_t)(prop.totalGlobalMem >> 20), prop.major,
                                   prop.minor);
            if (n > 0)
                used += (size_t)n < buflen - used ? (size_t)n : buflen - used - 1;
        }
    }
    return count;
}

/* ------------------------------------------------------- open / close */

static void release(cuda_dev *d)
{
    if (d->stream)
        (void)cudaStreamSynchronize(d->stream);
    if (d->upload)
        (void)cudaStreamSynchronize(d->upload);
    for (int i = 0; i < STAGING_SLOTS; i++)
        if (d->slot_done[i])
            (void)cudaEventDestroy(d->slot_done[i]);
    for (int i = 0; i < GGB_MARKS; i++)
        if (d->marks[i])
            (void)cudaEventDestroy(d->marks[i]);
    if (d->staging)
        (void)cudaFreeHost(d->staging);
    if (d->upload)
        (void)cudaStreamDestroy(d->upload);
    if (d->stream)
        (void)cudaStreamDestroy(d->stream);
    (void)cudaGetLastError();
    free(d);
}

static int cuda_open(int index0, int index1, int gpu_only, gg_dev **out, char *err,
                     size_t errlen)
{
    (void)index1;
    (void)gpu_only;   /* every CUDA device is a GPU */
    if (!out)
        return GGB_ERR_ARGUMENT;
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        describe_no_runtime(e, err, errlen);
        return GGB_ERR_UNAVAILABLE;
    }
    if (count <= 0) {
        put_err(err, errlen, "CUDA: no CUDA device found");
        return GGB_ERR_UNAVAILABLE;
    }
    const int ordinal = index0 < 0 ? 0 : index0;
    if (ordinal >= count) {
        put_err(err, errlen, "CUDA: cuda:%d requested but only %d CUDA device%s", ordinal,
                count, count == 1 ? "" : "s");
        return GGB_ERR_UNAVAILABLE;
    }

    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, ordinal);
    if (e == cudaSuccess)
        e = cudaSetDevice(ordinal);   /* also creates the primary context */
    /* How the host waits for the device stays CUDA's own choice (it spins
     * while it has fewer contexts than processors): sleeping waits saved
     * the waiting thread's processor but no time (bench/RESULTS.md,
     * sessions 25, 26 and 30). */
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        put_err(err, errlen, "CUDA: cannot open cuda:%d: %s (%s)", ordinal,
                cudaGetErrorString(e), cudaGetErrorName(e));
        return GGB_ERR_UNAVAILABLE;
    }
    if (prop.major * 10 + prop.minor < 75) {
        put_err(err, errlen, "CUDA: cuda:%d %s is sm_%d%d; this build needs sm_75 or newer",
                ordinal, prop.name, prop.major, prop.minor);
        return GGB_ERR_UNAVAILABLE;
    }
    /* Loads the module now (lazy loading would defer it to the first
     * launch): a device our fatbinary cannot serve is refused here. */
    cudaFuncAttributes fa;
    e = cudaFuncGetAttributes(&fa, gg_cuda_fill32_func());
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        put_err(err, errlen, "CUDA: cuda:%d %s cannot load this build's kernels: %s (%s)",
                ordinal, prop.name, cudaGetErrorString(e), cudaGetErrorName(e));
        return GGB_ERR_UNAVAILABLE;
    }

    cuda_dev *d = (cuda_dev *)calloc(1, sizeof *d);
    if (!d) {
        put_err(err, errlen, "CUDA: out of host memory");
        return GGB_ERR_NOMEM;
    }
    d->base.vt = gg_backend_cuda_entry();
    d->ordinal = ordinal;
    d->sm_count = prop.multiProcessorCount;
    d->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    d->max_grid_y = prop.maxGridSize[1];

    /* Non-blocking: no implicit ordering with the legacy default stream
     * that other code in the process may use. */
    e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&d->upload, cudaStreamNonBlocking);
    for (int i = 0; i < STAGING_SLOTS && e == cudaSuccess; i++)
        e = cudaEventCreateWithFlags(&d->slot_done[i], cudaEventDisableTiming);
    for (int i = 0; i < GGB_MARKS && e == cudaSuccess; i++)
        e = cudaEventCreateWithFlags(&d->marks[i], cudaEventDisableTiming);
    if (e != cudaSuccess) {
        put_err(err, errlen, "CUDA: cannot create a stream on cuda:%d: %s (%s)", ordinal,
                cudaGetErrorString(e), cudaGetErrorName(e));
        release(d);
        return e == cudaErrorMemoryAllocation ? GGB_ERR_NOMEM : GGB_ERR_UNAVAILABLE;
    }

    d->copy_threads = choose_copy_threads();

    int fill_per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fill_per_sm, gg_cuda_fill32_func(), 256,
                                                      0) != cudaSuccess ||
        fill_per_sm < 1)
        fill_per_sm = 1;
    d->fill_blocks = d->sm_count * fill_per_sm * 2;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d->rowcol_blocks_per_sm,
                                                      gg_cuda_rowcol_func(),
                                                      GG_CUDA_ROWCOL_THREADS, 0) != cudaSuccess ||
        d->rowcol_blocks_per_sm < 1)
        d->rowcol_blocks_per_sm = 1;
    (void)cudaGetLastError();

    const size_t gib = (size_t)1 << 30;
    snprintf(d->base.name, sizeof d->base.name, "cuda:%d %.200s (%zu GiB, sm_%d%d)", ordinal,
             prop.name, (prop.totalGlobalMem + gib / 2) / gib, prop.major, prop.minor);
    *out = &d->base;
    return GGB_OK;
}

static void cuda_close(gg_dev *dev)
{
    if (!dev)
        return;
    cuda_dev *d = as_cuda(dev);
    (void)cudaSetDevice(d->ordinal);
    release(d);
}

/* ------------------------------------------------------------ memory */

static int cuda_mem_info(gg_dev *dev, size_t *free_bytes, size_t *total_bytes)
{
    cuda_dev *d = as_cuda(dev);
    int rc = use_device(d);
    if (rc)
        return rc;
    size_t f = 0, t = 0;
    const cudaError_t e = cudaMemGetInfo(&f, &t);
    if (e != cudaSuccess)
        return cuda_fail(d, e, "cudaMemGetInfo");
    if (free_bytes)
        *free_bytes = f;
    if (total_bytes)
        *total_bytes = t;
    return GGB_OK;
}

static int cuda_alloc(gg_dev *dev, size_t bytes, gg_mem **out)
{
    cuda_dev *d = as_cuda(dev);
    if (!out)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: alloc: no output pointer");
    *out = NULL;
    int rc = use_device(d);
    if (rc)
        return rc;
    gg_mem *m = (gg_mem *)calloc(1, sizeof *m);
    if (!m)
        return set_err(d, GGB_ERR_NOMEM, "CUDA: out of host memory");
    if (bytes > 0) {
        const cudaError_t e = cudaMalloc(&m->ptr, bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            free(m);
            size_t f = 0, t = 0;
            (void)cudaMemGetInfo(&f, &t);
            (void)cudaGetLastError();
            set_err(d, 0, "CUDA: cudaMalloc of %zu MiB failed: %s (%s); %zu of %zu MiB free",
                    bytes >> 20, cudaGetErrorString(e), cudaGetErrorName(e), f >> 20, t >> 20);
            return e == cudaErrorMemoryAllocation ? GGB_ERR_NOMEM : GGB_ERR_DEVICE;
        }
    }
    m->bytes = bytes;
    *out = m;
    return GGB_OK;
}

static void cuda_free(gg_dev *dev, gg_mem *mem)
{
    if (!mem)
        return;
    cuda_dev *d = as_cuda(dev);
    if (mem->ptr && use_device(d) == GGB_OK) {
        /* cudaFree waits for work still using the memory */
        const cudaError_t e = cudaFree(mem->ptr);
        if (e != cudaSuccess)
            cuda_fail(d, e, "cudaFree");
    }
    free(mem);
}

/* Pinned staging, allocated once per handle on first need.  Returns 0
 * when it cannot be had (the caller then copies directly). */
static int have_staging(cuda_dev *d)
{
    if (d->staging)
        return 1;
    if (d->staging_failed)
        return 0;
    void *p = NULL;
    if (cudaHostAlloc(&p, (size_t)STAGING_SLOTS * STAGING_SLOT_BYTES, cudaHostAllocDefault) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        d->staging_failed = 1;
        return 0;
    }
    d->staging = (unsigned char *)p;
    return 1;
}

/* Pageable host memory that is large enough to be worth staging, when
 * enough threads pack the slots to beat the driver's own pageable path
 * (2 for uploads, 4 for downloads, from the figures above). */
static int should_stage(cuda_dev *d, const void *host, size_t row_bytes, size_t rows,
                        int download)
{
    if (row_bytes * rows <= DIRECT_COPY_MAX || d->copy_threads < (download ? 4 : 2))
        return 0;
    cudaPointerAttributes pa;
    if (cudaPointerGetAttributes(&pa, host) == cudaSuccess && pa.type != cudaMemoryTypeUnregistered)
        return 0;   /* already pinned (or managed): the copy engine reads it directly */
    (void)cudaGetLastError();
    return have_staging(d);
}

/* The transfer is cut into pieces that each fit one staging slot: whole
 * rows when a row fits a slot, else segments of a single row. */
typedef struct piece {
    size_t row, col;        /* first row, byte offset inside the row */
    size_t rows, bytes;     /* rows of `bytes` bytes */
} piece;

typedef struct piece_plan {
    size_t rows, row_bytes;
    size_t rows_per_piece;  /* > 0: whole rows */
    size_t segs_per_row;    /* otherwise: segments per row */
    size_t count;
} piece_plan;

static piece_plan plan_pieces(size_t row_bytes, size_t rows)
{
    piece_plan p;
    p.rows = rows;
    p.row_bytes = row_bytes;
    if (row_bytes <= STAGING_SLOT_BYTES) {
        p.rows_per_piece = STAGING_SLOT_BYTES / row_bytes;
        p.segs_per_row = 0;
        p.count = (rows + p.rows_per_piece - 1) / p.rows_per_piece;
    } else {
        p.rows_per_piece = 0;
        p.segs_per_row = (row_bytes + STAGING_SLOT_BYTES - 1) / STAGING_SLOT_BYTES;
        p.count = rows * p.segs_per_row;
    }
    return p;
}

static piece piece_at(const piece_plan *p, size_t k)
{
    piece q;
    if (p->rows_per_piece) {
        q.row = k * p->rows_per_piece;
        q.col = 0;
        q.rows = p->rows - q.row < p->rows_per_piece ? p->rows - q.row : p->rows_per_piece;
        q.bytes = p->row_bytes;
    } else {
        q.row = k / p->segs_per_row;
        q.col = (k % p->segs_per_row) * STAGING_SLOT_BYTES;
        q.rows = 1;
        q.bytes = p->row_bytes - q.col < STAGING_SLOT_BYTES ? p->row_bytes - q.col
                                                            : STAGING_SLOT_BYTES;
    }
    return q;
}

/* Queues a 2-D copy (1-D when a single row: no pitch rules then). */
static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch,
                             size_t bytes, size_t rows, cudaMemcpyKind kind, cudaStream_t s)
{
    if (rows == 1)
        return cudaMemcpyAsync(dst, src, bytes, kind, s);
    return cudaMemcpy2DAsync(dst, dpitch, src, spitch, bytes, rows, kind, s);
}

/* One part of a host copy: rows [r0, r1) of part k of `parts`, or (one
 * contiguous run) a slice cut at 64-byte lines. */
typedef struct copy_job {
    unsigned char *dst;
    const unsigned char *src;
    size_t dpitch, spitch, bytes, rows;
    int parts, contiguous;
} copy_job;

static void copy_part(void *arg, int k)
{
    const copy_job *j = (const copy_job *)arg;
    if (j->contiguous) {
        const size_t total = j->bytes * j->rows;
        const size_t a = total * (size_t)k / (size_t)j->parts / 64 * 64;
        const size_t b = k + 1 == j->parts ? total
                                           : total * (size_t)(k + 1) / (size_t)j->parts / 64 * 64;
        memcpy(j->dst + a, j->src + a, b - a);
        return;
    }
    const size_t r0 = j->rows * (size_t)k / (size_t)j->parts;
    const size_t r1 = j->rows * (size_t)(k + 1) / (size_t)j->parts;
    for (size_t r = r0; r < r1; r++)
        memcpy(j->dst + r * j->dpitch, j->src + r * j->spitch, j->bytes);
}

/* Copies rows of `bytes` bytes, spitch apart, to dst (dpitch apart), on
 * up to `threads` threads of the host pool, one per PARALLEL_COPY_MIN. */
static void host_copy_rows(unsigned char *dst, size_t dpitch, const unsigned char *src,
                           size_t spitch, size_t bytes, size_t rows, int threads)
{
    const size_t total = bytes * rows;
    const size_t most = total / PARALLEL_COPY_MIN;
    const int contiguous = rows == 1 || (dpitch == bytes && spitch == bytes);
    int parts = most < (size_t)threads ? (int)most : threads;
    if (!contiguous && (size_t)parts > rows)
        parts = (int)rows;
    copy_job j = {dst, src, dpitch, spitch, bytes, rows, parts < 1 ? 1 : parts, contiguous};
    gg_pool_run(j.parts, j.parts, copy_part, &j);
}

/* Threads for staging copies: half the processors (leaving the rest to
 * the caller's own work), at most COPY_THREADS_MAX.  Two threads instead
 * changed nothing measurable (bench/RESULTS.md, 2026-11-21, "the cause of
 * the lost efficiency", and session 15). */
static int choose_copy_threads(void)
{
    const int n = gg_pool_processors() / 2;
    return n < 1 ? 1 : n > COPY_THREADS_MAX ? COPY_THREADS_MAX : n;
}

static int check_2d(cuda_dev *d, const gg_mem *m, size_t dev_offset, size_t *dev_pitch,
                    const void *host, size_t *host_pitch, size_t row_bytes, size_t rows,
                    const char *what)
{
    if (!m || (!host && rows && row_bytes))
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: %s: null buffer", what);
    if (rows <= 1) {
        *dev_pitch = row_bytes;   /* pitches of a single row do not matter */
        *host_pitch = row_bytes;
    }
    if (*dev_pitch < row_bytes || *host_pitch < row_bytes)
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: %s: pitch (device %zu, host %zu) below the row size %zu", what,
                       *dev_pitch, *host_pitch, row_bytes);
    if (!region_fits(m->bytes, dev_offset, *dev_pitch, row_bytes, rows))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: %s: %zu rows of %zu bytes (pitch %zu) at offset %zu overrun "
                       "the %zu-byte buffer",
                       what, rows, row_bytes, *dev_pitch, dev_offset, m->bytes);
    return GGB_OK;
}

/* Queues the upload of rows on stream `st`: straight from the source when
 * it is pinned (or small), else through the staging ring, the CPU packing
 * piece k into slot k % SLOTS while the copy engine drains the slots
 * filled before.  A slot is packed only once its previous copy has ended
 * (its event), whichever stream queued that copy.  Returns with the copies
 * queued; the caller synchronizes or records an event. */
static cudaError_t queue_upload(cuda_dev *d, cudaStream_t st, unsigned char *dbase,
                                size_t dev_pitch, const unsigned char *hbase, size_t host_pitch,
                                size_t row_bytes, size_t rows)
{
    if (!should_stage(d, hbase, row_bytes, rows, 0))
        return copy_rows(dbase, dev_pitch, hbase, host_pitch, row_bytes, rows,
                         cudaMemcpyHostToDevice, st);
    cudaError_t e = cudaSuccess;
    const piece_plan plan = plan_pieces(row_bytes, rows);
    for (size_t k = 0; k < plan.count && e == cudaSuccess; k++) {
        const int s = (int)(k % STAGING_SLOTS);
        unsigned char *slot = d->staging + (size_t)s * STAGING_SLOT_BYTES;
        if ((e = cudaEventSynchronize(d->slot_done[s])) != cudaSuccess)
            break;
        const piece q = piece_at(&plan, k);
        host_copy_rows(slot, q.bytes, hbase + q.row * host_pitch + q.col, host_pitch, q.bytes,
                       q.rows, d->copy_threads);
        e = copy_rows(dbase + q.row * dev_pitch + q.col, dev_pitch, slot, q.bytes, q.bytes,
                      q.rows, cudaMemcpyHostToDevice, st);
        if (e == cudaSuccess)
            e = cudaEventRecord(d->slot_done[s], st);
    }
    return e;
}

/* After a failed copy: both streams idle (the staging slots too). */
static int copy_failed(cuda_dev *d, cudaError_t e, const char *what)
{
    const int rc = cuda_fail(d, e, what);
    (void)cudaStreamSynchronize(d->stream);
    (void)cudaStreamSynchronize(d->upload);
    (void)cudaGetLastError();
    return rc;
}

static int cuda_write2d(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                        const void *src, size_t host_pitch, size_t row_bytes, size_t rows)
{
    cuda_dev *d = as_cuda(dev);
    int rc = check_2d(d, dst, dev_offset, &dev_pitch, src, &host_pitch, row_bytes, rows,
                      "write2d");
    if (rc)
        return rc;
    if (rows == 0 || row_bytes == 0)
        return GGB_OK;
    if ((rc = use_device(d)))
        return rc;
    cudaError_t e = queue_upload(d, d->stream, (unsigned char *)dst->ptr + dev_offset, dev_pitch,
                                 (const unsigned char *)src, host_pitch, row_bytes, rows);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(d->stream);
    return e == cudaSuccess ? GGB_OK : copy_failed(d, e, "write2d copy");
}

/* write2d on the upload stream: it waits (on the device) for mark `after`
 * of the main stream, and mark `done` is reached when it has landed.  It
 * returns once queued; a pageable source is packed into the staging ring
 * meanwhile, so the source may change once it returns unless it is
 * pinned (then only once `done` is reached). */
static int cuda_write2d_async(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                              const void *src, size_t host_pitch, size_t row_bytes, size_t rows,
                              int after, int done)
{
    cuda_dev *d = as_cuda(dev);
    int rc = check_2d(d, dst, dev_offset, &dev_pitch, src, &host_pitch, row_bytes, rows,
                      "write2d_async");
    if (rc)
        return rc;
    if (after >= GGB_MARKS || done >= GGB_MARKS)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: write2d_async: mark out of range");
    if ((rc = use_device(d)))
        return rc;
    cudaError_t e = after >= 0 ? cudaStreamWaitEvent(d->upload, d->marks[after], 0) : cudaSuccess;
    if (e == cudaSuccess && rows && row_bytes)
        e = queue_upload(d, d->upload, (unsigned char *)dst->ptr + dev_offset, dev_pitch,
                         (const unsigned char *)src, host_pitch, row_bytes, rows);
    if (e == cudaSuccess && done >= 0)
        e = cudaEventRecord(d->marks[done], d->upload);
    return e == cudaSuccess ? GGB_OK : copy_failed(d, e, "write2d_async copy");
}

/* Records mark m on the main stream, or (wait) makes the main stream wait
 * for it. */
static int mark_on_main(gg_dev *dev, int m, int wait)
{
    cuda_dev *d = as_cuda(dev);
    if (m < 0 || m >= GGB_MARKS)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: mark %d out of range", m);
    int rc = use_device(d);
    if (rc)
        return rc;
    const cudaError_t e = wait ? cudaStreamWaitEvent(d->stream, d->marks[m], 0)
                               : cudaEventRecord(d->marks[m], d->stream);
    return e == cudaSuccess ? GGB_OK
                            : cuda_fail(d, e, wait ? "cudaStreamWaitEvent" : "cudaEventRecord");
}

static int cuda_mark(gg_dev *dev, int m) { return mark_on_main(dev, m, 0); }

static int cuda_wait_mark(gg_dev *dev, int m) { return mark_on_main(dev, m, 1); }

/* Downloads rows on stream `st` and waits for them: straight into the
 * destination when it is pinned (or small), else through the staging
 * ring, the copy engine running up to SLOTS pieces ahead while the CPU
 * unpacks piece k as soon as it has landed, then refills that slot. */
static cudaError_t download(cuda_dev *d, cudaStream_t st, unsigned char *hbase, size_t host_pitch,
                            const unsigned char *dbase, size_t dev_pitch, size_t row_bytes,
                            size_t rows)
{
    cudaError_t e;
    if (!should_stage(d, hbase, row_bytes, rows, 1)) {
        e = copy_rows(hbase, host_pitch, dbase, dev_pitch, row_bytes, rows,
                      cudaMemcpyDeviceToHost, st);
        return e == cudaSuccess ? cudaStreamSynchronize(st) : e;
    }
    const piece_plan plan = plan_pieces(row_bytes, rows);
    size_t queued = 0;
    for (size_t k = 0; k < plan.count; k++) {
        while (queued < plan.count && queued < k + STAGING_SLOTS) {
            const int s = (int)(queued % STAGING_SLOTS);
            unsigned char *slot = d->staging + (size_t)s * STAGING_SLOT_BYTES;
            const piece q = piece_at(&plan, queued);
            /* the slot may still feed a copy queued on the other stream */
            e = cudaStreamWaitEvent(st, d->slot_done[s], 0);
            if (e == cudaSuccess)
                e = copy_rows(slot, q.bytes, dbase + q.row * dev_pitch + q.col, dev_pitch,
                              q.bytes, q.rows, cudaMemcpyDeviceToHost, st);
            if (e == cudaSuccess)
                e = cudaEventRecord(d->slot_done[s], st);
            if (e != cudaSuccess)
                return e;
            queued++;
        }
        const int s = (int)(k % STAGING_SLOTS);
        if ((e = cudaEventSynchronize(d->slot_done[s])) != cudaSuccess)
            return e;
        const piece q = piece_at(&plan, k);
        host_copy_rows(hbase + q.row * host_pitch + q.col, host_pitch,
                       d->staging + (size_t)s * STAGING_SLOT_BYTES, q.bytes, q.bytes, q.rows,
                       d->copy_threads);
    }
    return cudaStreamSynchronize(st);
}

static int cuda_read2d(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                       void *dst, size_t host_pitch, size_t row_bytes, size_t rows)
{
    cuda_dev *d = as_cuda(dev);
    int rc = check_2d(d, src, dev_offset, &dev_pitch, dst, &host_pitch, row_bytes, rows,
                      "read2d");
    if (rc)
        return rc;
    if (rows == 0 || row_bytes == 0)
        return GGB_OK;
    if ((rc = use_device(d)))
        return rc;
    const cudaError_t e = download(d, d->stream, (unsigned char *)dst, host_pitch,
                                   (const unsigned char *)src->ptr + dev_offset, dev_pitch,
                                   row_bytes, rows);
    return e == cudaSuccess ? GGB_OK : copy_failed(d, e, "read2d copy");
}

/* read2d on the copy stream, once the main stream has reached mark
 * `after`: the kernels queued on the main stream since do not delay it. */
static int cuda_read2d_after(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                             void *dst, size_t host_pitch, size_t row_bytes, size_t rows,
                             int after)
{
    cuda_dev *d = as_cuda(dev);
    int rc = check_2d(d, src, dev_offset, &dev_pitch, dst, &host_pitch, row_bytes, rows,
                      "read2d_after");
    if (rc)
        return rc;
    if (after >= GGB_MARKS)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: read2d_after: mark out of range");
    if (rows == 0 || row_bytes == 0)
        return GGB_OK;
    if ((rc = use_device(d)))
        return rc;
    cudaError_t e = after >= 0 ? cudaStreamWaitEvent(d->upload, d->marks[after], 0) : cudaSuccess;
    if (e == cudaSuccess)
        e = download(d, d->upload, (unsigned char *)dst, host_pitch,
                     (const unsigned char *)src->ptr + dev_offset, dev_pitch, row_bytes, rows);
    return e == cudaSuccess ? GGB_OK : copy_failed(d, e, "read2d_after copy");
}

static int cuda_copy(gg_dev *dev, gg_mem *dst, size_t dst_offset, const gg_mem *src,
                     size_t src_offset, size_t bytes)
{
    cuda_dev *d = as_cuda(dev);
    if (!dst || !src)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: copy: null buffer");
    if (!region_fits(dst->bytes, dst_offset, bytes, bytes, 1) ||
        !region_fits(src->bytes, src_offset, bytes, bytes, 1))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: copy: %zu bytes from offset %zu of %zu to offset %zu of %zu "
                       "overrun a buffer",
                       bytes, src_offset, src->bytes, dst_offset, dst->bytes);
    if (bytes == 0)
        return GGB_OK;
    int rc = use_device(d);
    if (rc)
        return rc;
    const cudaError_t e =
        cudaMemcpyAsync((unsigned char *)dst->ptr + dst_offset,
                        (const unsigned char *)src->ptr + src_offset, bytes,
                        cudaMemcpyDeviceToDevice, d->stream);
    return e == cudaSuccess ? GGB_OK : cuda_fail(d, e, "device copy");
}

static int cuda_fill32(gg_dev *dev, gg_mem *dst, size_t offset, uint32_t pattern, size_t bytes)
{
    cuda_dev *d = as_cuda(dev);
    if (!dst)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: fill32: null buffer");
    if ((offset | bytes) & 3)
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: fill32: offset %zu and size %zu must be multiples of 4", offset,
                       bytes);
    if (!region_fits(dst->bytes, offset, bytes, bytes, 1))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: fill32: %zu bytes at offset %zu overrun the %zu-byte buffer",
                       bytes, offset, dst->bytes);
    if (bytes == 0)
        return GGB_OK;
    int rc = use_device(d);
    if (rc)
        return rc;
    const cudaError_t e =
        gg_cuda_enqueue_fill32((uint32_t *)((unsigned char *)dst->ptr + offset), bytes / 4,
                               pattern, d->fill_blocks, d->stream);
    return e == cudaSuccess ? GGB_OK : cuda_fail(d, e, "fill32 kernel launch");
}

/* ----------------------------------------------------------- kernels */

static const gg_cuda_kernel_desc *kernel_desc(int id)
{
    if (id < 0 || id >= gg_cuda_kernel_count || gg_cuda_kernels[id].id != id)
        return NULL;
    return &gg_cuda_kernels[id];
}

/* Block shape of a kernel on this device, chosen on first use: the block
 * size that maximises occupancy (capped at KERNEL_BLOCK_LIMIT), laid out
 * 64 (or 32) threads wide so each warp reads one 128-byte row segment. */
static int kernel_config_of(cuda_dev *d, const gg_cuda_kernel_desc *k, kernel_config **out)
{
    kernel_config *c = &d->kcfg[k->id];
    if (!c->ready) {
        int min_grid = 0, block = 0;
        cudaError_t e = cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, k->func, 0,
                                                           KERNEL_BLOCK_LIMIT);
        if (e != cudaSuccess)
            return cuda_fail(d, e, "cudaOccupancyMaxPotentialBlockSize");
        block = block / 32 * 32;
        if (block < 32)
            block = 32;
        c->block_x = block >= 128 && block % 64 == 0 ? 64 : 32;
        c->block_y = block / c->block_x;
        int active = 0;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, k->func,
                                                          c->block_x * c->block_y, 0);
        if (e != cudaSuccess)
            return cuda_fail(d, e, "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        c->occupancy = d->max_threads_per_sm > 0
                           ? (double)active * c->block_x * c->block_y / d->max_threads_per_sm
                           : 0.0;
        c->ready = 1;
    }
    *out = c;
    return GGB_OK;
}

static int cuda_launch(gg_dev *dev, int id, int nx, int ny, const void *params,
                       size_t params_size, gg_mem *const *bufs, int nbufs)
{
    cuda_dev *d = as_cuda(dev);
    const gg_cuda_kernel_desc *k = kernel_desc(id);
    if (!k)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: launch: unknown kernel id %d", id);
    if (!params || params_size != k->params_size)
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: launch %s: params of %zu bytes, the kernel takes %zu", k->name,
                       params_size, k->params_size);
    if (nbufs != k->nbufs || (nbufs > 0 && !bufs))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: launch %s: %d buffers given, the kernel takes %d", k->name, nbufs,
                       k->nbufs);
    if (nx < 0 || ny < 0)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: launch %s: negative grid %d x %d", k->name,
                       nx, ny);
    void *ptrs[6];
    for (int i = 0; i < nbufs; i++) {
        if (!bufs[i])
            return set_err(d, GGB_ERR_ARGUMENT, "CUDA: launch %s: buffer %d is null", k->name,
                           i);
        ptrs[i] = bufs[i]->ptr;
    }
    if (nx == 0 || ny == 0)
        return GGB_OK;
    int rc = use_device(d);
    if (rc)
        return rc;
    kernel_config *c;
    if ((rc = kernel_config_of(d, k, &c)))
        return rc;

    /* each thread covers k->items_x pixels of a row (kernel_dialect.h) */
    const int span_x = c->block_x * k->items_x;
    dim3 block((unsigned)c->block_x, (unsigned)c->block_y, 1);
    dim3 grid((unsigned)((nx + span_x - 1) / span_x),
              (unsigned)((ny + c->block_y - 1) / c->block_y), 1);
    if (grid.y > (unsigned)d->max_grid_y) {
        /* very tall grid: the kernels index rows by blockIdx.y alone, so
         * use the tallest block the kernel allows instead */
        cudaFuncAttributes fa;
        cudaError_t e = cudaFuncGetAttributes(&fa, k->func);
        if (e != cudaSuccess)
            return cuda_fail(d, e, "cudaFuncGetAttributes");
        block.x = 32;
        block.y = (unsigned)(fa.maxThreadsPerBlock / 32);
        grid.x = (unsigned)((nx + 32 * k->items_x - 1) / (32 * k->items_x));
        grid.y = (unsigned)((ny + (int)block.y - 1) / (int)block.y);
        if (grid.y > (unsigned)d->max_grid_y)
            return set_err(d, GGB_ERR_ARGUMENT,
                           "CUDA: launch %s: %d rows exceed one launch; split the work",
                           k->name, ny);
    }

    void *args[2 + 1 + 6];
    args[0] = &nx;
    args[1] = &ny;
    args[2] = (void *)params;   /* read only: the runtime copies it */
    for (int i = 0; i < nbufs; i++)
        args[3 + i] = &ptrs[i];
    cudaError_t e = cudaLaunchKernel(k->func, grid, block, args, 0, d->stream);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "launch of %s (%d x %d)", k->name, nx, ny);
        return cuda_fail(d, e, what);
    }
    return GGB_OK;
}

static int cuda_launch_info(gg_dev *dev, int id, int *block_x, int *block_y, double *occupancy)
{
    cuda_dev *d = as_cuda(dev);
    const gg_cuda_kernel_desc *k = kernel_desc(id);
    if (!k)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: launch_info: unknown kernel id %d", id);
    int rc = use_device(d);
    if (rc)
        return rc;
    kernel_config *c;
    if ((rc = kernel_config_of(d, k, &c)))
        return rc;
    if (block_x)
        *block_x = c->block_x;
    if (block_y)
        *block_y = c->block_y;
    if (occupancy)
        *occupancy = c->occupancy;
    return GGB_OK;
}

static int cuda_rowcol_sums(gg_dev *dev, const gg_mem *img, const gg_rowcol_args *a,
                            gg_mem *row_sum, gg_mem *row_cnt, gg_mem *col_sum, gg_mem *col_cnt)
{
    cuda_dev *d = as_cuda(dev);
    if (!img || !a || !row_sum || !row_cnt || !col_sum || !col_cnt)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: rowcol_sums: null argument");
    if (a->width < 0 || a->height < 0 || a->stride < a->width)
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: rowcol_sums: bad image %d x %d, stride %d", a->width, a->height,
                       a->stride);
    const size_t w = (size_t)a->width, h = (size_t)a->height;
    if (!region_fits(img->bytes, 0, (size_t)a->stride * sizeof(float), w * sizeof(float), h))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: rowcol_sums: %d x %d image (stride %d) overruns its %zu-byte "
                       "buffer",
                       a->width, a->height, a->stride, img->bytes);
    if (row_sum->bytes < h * sizeof(double) || row_cnt->bytes < h * sizeof(double) ||
        col_sum->bytes < w * sizeof(double) || col_cnt->bytes < w * sizeof(double))
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: rowcol_sums: output buffers too small for %d x %d", a->width,
                       a->height);
    int rc = use_device(d);
    if (rc)
        return rc;
    cudaError_t e;
    if (w == 0 || h == 0) {
        /* nothing to read; the sums of the other axis are zero */
        e = cudaSuccess;
        if (h && ((e = cudaMemsetAsync(row_sum->ptr, 0, h * sizeof(double), d->stream)) ||
                  (e = cudaMemsetAsync(row_cnt->ptr, 0, h * sizeof(double), d->stream))))
            return cuda_fail(d, e, "rowcol_sums zeroing");
        if (w && ((e = cudaMemsetAsync(col_sum->ptr, 0, w * sizeof(double), d->stream)) ||
                  (e = cudaMemsetAsync(col_cnt->ptr, 0, w * sizeof(double), d->stream))))
            return cuda_fail(d, e, "rowcol_sums zeroing");
        return GGB_OK;
    }

    /* Strips tall enough to keep the column atomics few, short enough to
     * give about two waves of blocks over the whole device. */
    const long long tiles_x = (a->width + GG_CUDA_ROWCOL_TILE_W - 1) / GG_CUDA_ROWCOL_TILE_W;
    const long long target = 2LL * d->sm_count * d->rowcol_blocks_per_sm;
    long long strips = (target + tiles_x - 1) / tiles_x;
    if (strips < 1)
        strips = 1;
    long long strip_rows = ((long long)h + strips - 1) / strips;
    strip_rows = (strip_rows + GG_CUDA_ROWCOL_WARPS - 1) / GG_CUDA_ROWCOL_WARPS *
                 GG_CUDA_ROWCOL_WARPS;
    const long long min_rows = ((long long)h + d->max_grid_y - 1) / d->max_grid_y;
    if (strip_rows < min_rows)
        strip_rows = min_rows;
    const long long grid_y = ((long long)h + strip_rows - 1) / strip_rows;

    e = gg_cuda_enqueue_rowcol((const float *)img->ptr, a->width, a->height, a->stride,
                               a->has_nodata, a->nodata, (int)strip_rows, (int)grid_y,
                               (double *)row_sum->ptr, (double *)row_cnt->ptr,
                               (double *)col_sum->ptr, (double *)col_cnt->ptr, d->stream);
    return e == cudaSuccess ? GGB_OK : cuda_fail(d, e, "rowcol_sums kernel launch");
}

/* --------------------------------------------------------------- FFT */

static int cuda_fft_plan(gg_dev *dev, int rank, const int *n, int batch, void **plan)
{
    cuda_dev *d = as_cuda(dev);
    if (!plan || !n || (rank != 1 && rank != 2) || batch < 1 || n[0] < 1 ||
        (rank == 2 && n[1] < 1))
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: fft_plan: bad shape (rank %d, batch %d)",
                       rank, batch);
    *plan = NULL;
    int rc = use_device(d);
    if (rc)
        return rc;
    fft_plan *p = (fft_plan *)calloc(1, sizeof *p);
    if (!p)
        return set_err(d, GGB_ERR_NOMEM, "CUDA: out of host memory");
    long long dims[2] = {n[0], rank == 2 ? n[1] : 1};
    const long long points = dims[0] * dims[1];
    p->bytes = (size_t)points * (size_t)batch * 2 * sizeof(float);

    cufftResult r = cufftCreate(&p->handle);
    if (r != CUFFT_SUCCESS) {
        free(p);
        return cufft_fail(d, r, "cufftCreate");
    }
    size_t work = 0;
    /* NULL embeds: plain contiguous layout, transforms `points` apart;
     * the 64-bit call allows more than 2^31 elements in all. */
    r = cufftMakePlanMany64(p->handle, rank, dims, NULL, 1, points, NULL, 1, points, CUFFT_C2C,
                            batch, &work);
    if (r == CUFFT_SUCCESS)
        r = cufftSetStream(p->handle, d->stream);
    if (r != CUFFT_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "cuFFT plan (rank %d, %lld x %lld, batch %d)", rank,
                 dims[0], dims[1], batch);
        rc = cufft_fail(d, r, what);
        cufftDestroy(p->handle);
        free(p);
        return rc;
    }
    *plan = p;
    return GGB_OK;
}

static int cuda_fft_exec(gg_dev *dev, void *plan, gg_mem *data, int inverse)
{
    cuda_dev *d = as_cuda(dev);
    fft_plan *p = (fft_plan *)plan;
    if (!p || !data)
        return set_err(d, GGB_ERR_ARGUMENT, "CUDA: fft_exec: null plan or buffer");
    if (data->bytes < p->bytes)
        return set_err(d, GGB_ERR_ARGUMENT,
                       "CUDA: fft_exec: the plan needs %zu bytes, the buffer has %zu", p->bytes,
                       data->bytes);
    int rc = use_device(d);
    if (rc)
        return rc;
    cufftComplex *z = (cufftComplex *)data->ptr;
    const cufftResult r = cufftExecC2C(p->handle, z, z, inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
    return r == CUFFT_SUCCESS ? GGB_OK : cufft_fail(d, r, "cufftExecC2C");
}

static void cuda_fft_destroy(gg_dev *dev, void *plan)
{
    fft_plan *p = (fft_plan *)plan;
    if (!p)
        return;
    cuda_dev *d = as_cuda(dev);
    if (use_device(d) == GGB_OK)
        cufftDestroy(p->handle);
    free(p);
}

/* ------------------------------------------------------------ finish */

static int cuda_finish(gg_dev *dev)
{
    cuda_dev *d = as_cuda(dev);
    int rc = use_device(d);
    if (rc)
        return rc;
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(d->upload);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess) {
        set_err(d, 0, "CUDA: queued work failed: %s (%s)", cudaGetErrorString(e),
                cudaGetErrorName(e));
        return e == cudaErrorMemoryAllocation ? GGB_ERR_NOMEM : GGB_ERR_DEVICE;
    }
    return GGB_OK;
}

/* Page-locked host memory, portable: pinned for every device (and every
 * handle), so uploads from it on any GPU go straight to the copy engine
 * (should_stage sees it as registered and skips the staging ring).
 *
 * By default an anonymous mapping advised for transparent huge pages,
 * faulted in by the copy threads, then registered (cudaHostRegister of
 * resident pages is quick): cudaHostAlloc faults and pins the pages on one
 * thread (640 MiB: 0.27 s on an H200 host, bench/probe_pin.c), which a
 * Dask worker's first page-locked batch paid (bench/RESULTS.md, session
 * 20: 7x cheaper to pin, the same upload rate).  cudaHostAlloc remains the
 * fallback where registering fails.  Registered blocks are listed: any
 * handle of this backend may free them. */
typedef struct pinned_block {
    void *p, *base;          /* what the caller got; the mapping */
    size_t len;              /* of the mapping */
    struct pinned_block *next;
} pinned_block;

static pinned_block *pinned_blocks;
static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

typedef struct fault_job {
    unsigned char *p;
    size_t pages;
    int parts;
} fault_job;

static void fault_part(void *arg, int k)
{
    const fault_job *j = (const fault_job *)arg;
    const size_t a = j->pages * (size_t)k / (size_t)j->parts;
    const size_t b = j->pages * (size_t)(k + 1) / (size_t)j->parts;
    for (size_t i = a; i < b; i++)
        j->p[i * 4096] = 0;
}

/* One write per base page, on `threads` threads of the host pool: each
 * faults its own huge pages (the kernel zeroes them), the bulk of the
 * cost, in parallel. */
static void fault_in(unsigned char *p, size_t n, int threads)
{
    fault_job j = {p, n / 4096, threads < 1 ? 1 : threads};
    gg_pool_run(j.parts, j.parts, fault_part, &j);
}

/* A registered huge-page mapping of `bytes`, or NULL (the caller falls
 * back on cudaHostAlloc).  The block starts on a huge-page boundary. */
static void *host_register(size_t bytes, int threads)
{
    pinned_block *b = (pinned_block *)malloc(sizeof *b);
    if (!b || bytes > SIZE_MAX - 2 * HUGE_PAGE_BYTES) {
        free(b);
        return NULL;
    }
    const size_t n = (bytes + HUGE_PAGE_BYTES - 1) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    b->len = n + HUGE_PAGE_BYTES; /* room to align the start */
    b->base = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b->base == MAP_FAILED) {
        free(b);
        return NULL;
    }
    const uintptr_t a = ((uintptr_t)b->base + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
    b->p = (void *)a;
#ifdef MADV_HUGEPAGE
    (void)madvise(b->p, n, MADV_HUGEPAGE);
#endif
    fault_in((unsigned char *)b->p, n, threads);
    if (cudaHostRegister(b->p, n, cudaHostRegisterPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        munmap(b->base, b->len);
        free(b);
        return NULL;
    }
    pthread_mutex_lock(&pinned_lock);
    b->next = pinned_blocks;
    pinned_blocks = b;
    pthread_mutex_unlock(&pinned_lock);
    return b->p;
}

/* Unregisters and unmaps p when host_register gave it: 1, else 0. */
static int host_unregister(void *p)
{
    pthread_mutex_lock(&pinned_lock);
    pinned_block **link = &pinned_blocks;
    while (*link && (*link)->p != p)
        link = &(*link)->next;
    pinned_block *b = *link;
    if (b)
        *link = b->next;
    pthread_mutex_unlock(&pinned_lock);
    if (!b)
        return 0;
    (void)cudaHostUnregister(p);
    (void)cudaGetLastError();
    munmap(b->base, b->len);
    free(b);
    return 1;
}

static int cuda_host_alloc(gg_dev *dev, size_t bytes, void **out)
{
    cuda_dev *d = as_cuda(dev);
    int rc = use_device(d);
    if (rc)
        return rc;
    void *p = host_register(bytes ? bytes : 1, d->copy_threads);
    if (p) {
        *out = p;
        return GGB_OK;
    }
    const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return set_err(d, GGB_ERR_NOMEM, "CUDA: cudaHostAlloc of %zu MiB failed: %s (%s)",
                       bytes >> 20, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    *out = p;
    return GGB_OK;
}

static void cuda_host_free(gg_dev *dev, void *p)
{
    if (!p || host_unregister(p))
        return;
    cuda_dev *d = as_cuda(dev);
    const cudaError_t e = cudaFreeHost(p);
    if (e != cudaSuccess)
        cuda_fail(d, e, "cudaFreeHost");
}

/* A mapped file's pages, page-locked for every device: the copy engine
 * then reads (read_only: cudaHostRegisterReadOnly, so a read-only mapping
 * can be locked) or writes them where they lie. */
static int cuda_host_register(gg_dev *dev, void *p, size_t bytes, int read_only)
{
    cuda_dev *d = as_cuda(dev);
    int rc = use_device(d);
    if (rc)
        return rc;
    const unsigned flags = cudaHostRegisterPortable | (read_only ? cudaHostRegisterReadOnly : 0u);
    const cudaError_t e = cudaHostRegister(p, bytes, flags);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return set_err(d, GGB_ERR_UNSUPPORTED, "CUDA: cudaHostRegister of %zu MiB%s failed: %s",
                       bytes >> 20, read_only ? " (read-only)" : "", cudaGetErrorString(e));
    }
    return GGB_OK;
}

static void cuda_host_unregister(gg_dev *dev, void *p)
{
    cuda_dev *d = as_cuda(dev);
    if (use_device(d))
        return;
    if (cudaHostUnregister(p) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ------------------------------------------------------------- entry */

static const gg_backend cuda_backend = {
    /* abi */ GG_BACKEND_ABI,
    /* name */ "cuda",
    /* list */ cuda_list,
    /* open */ cuda_open,
    /* close */ cuda_close,
    /* mem_info */ cuda_mem_info,
    /* alloc */ cuda_alloc,
    /* free */ cuda_free,
    /* write2d */ cuda_write2d,
    /* read2d */ cuda_read2d,
    /* copy */ cuda_copy,
    /* fill32 */ cuda_fill32,
    /* launch */ cuda_launch,
    /* rowcol_sums */ cuda_rowcol_sums,
    /* fft_plan */ cuda_fft_plan,
    /* fft_exec */ cuda_fft_exec,
    /* fft_destroy */ cuda_fft_destroy,
    /* finish */ cuda_finish,
    /* launch_info */ cuda_launch_info,
    /* host_alloc */ cuda_host_alloc,
    /* host_free */ cuda_host_free,
    /* write2d_async */ cuda_write2d_async,
    /* read2d_after */ cuda_read2d_after,
    /* mark */ cuda_mark,
    /* wait_mark */ cuda_wait_mark,
    /* host_register */ cuda_host_register,
    /* host_unregister */ cuda_host_unregister,
};

GG_CUDA_EXPORT const gg_backend *gg_backend_cuda_entry(void)
{
    return &cuda_backend;
}
