/*
 * geogpu.h -- the one public header of libgeogpu.
 *
 * GPU-accelerated radar and remote-sensing processing with one C API over
 * three backends (CPU, CUDA, OpenCL).  Conventions, as in PROJ and SQLite:
 *   - every symbol starts with gg_ / GG_;
 *   - handles are opaque; functions return gg_status;
 *   - the context keeps the last error message (gg_context_last_error);
 *   - the library never prints and never exits.
 *
 * Two levels of API:
 *   1. the runtime: contexts (one device each), device memory, FFT plans, the
 *      block planner;
 *   2. operations ("ops"): every algorithm is described once as an op with
 *      string-typed options, an output description, a source window for any
 *      output window, and a tile function (tile + halo in, tile out).  The GDAL
 *      driver, the gdal_* utilities, Python and Dask all drive ops through the
 *      same calls.
 *
 * MIT licence.
 */
#ifndef GEOGPU_H
#define GEOGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GG_API __declspec(dllexport)
#else
#define GG_API __attribute__((visibility("default")))
#endif

#define GG_VERSION_MAJOR 0
#define GG_VERSION_MINOR 1
#define GG_VERSION_PATCH 0
#define GG_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ status */

typedef enum gg_status {
    GG_OK = 0,
    GG_ERR_ARGUMENT,      /* a bad option or argument from the caller */
    GG_ERR_NOMEM,         /* host or device allocation failed */
    GG_ERR_DEVICE,        /* a device call failed (launch, transfer, FFT) */
    GG_ERR_UNAVAILABLE,   /* the requested backend or device cannot start */
    GG_ERR_UNSUPPORTED,   /* data type or feature not supported */
    GG_ERR_IO,            /* reading or writing data failed */
    GG_ERR_CANCELLED,     /* the progress callback asked to stop */
    GG_ERR_INTERNAL
} gg_status;

GG_API const char *gg_status_string(gg_status s);
GG_API const char *gg_version(void);

/* Progress callback, signature-compatible with GDALProgressFunc:
 * returns non-zero to continue, 0 to cancel. */
typedef int (*gg_progress_fn)(double complete, const char *message, void *user);

/* ------------------------------------------------------------- data types */

typedef enum gg_type {
    GG_FLOAT32 = 1,   /* float */
    GG_CFLOAT32 = 2,  /* interleaved float re, im */
    GG_BYTE = 3       /* unsigned char (quantised outputs) */
} gg_type;

GG_API size_t gg_type_size(gg_type t);

/* ---------------------------------------------------------------- context */

typedef struct gg_context gg_context;

/* Creates a context on one device.
 * device: "auto" (first CUDA device, else first OpenCL GPU, else CPU),
 *         "cpu", "cuda", "cuda:N", "opencl", "opencl:P", "opencl:P:D".
 *         NULL or "" means the GG_DEVICE environment variable, else "auto".
 * On failure *out is NULL; when err is non-NULL the reason is copied there.
 * Under "auto", a backend that fails to start is skipped and a one-line
 * notice is available from gg_context_notice(). */
GG_API gg_status gg_context_create(const char *device, gg_context **out,
                                   char *err, size_t errlen);
GG_API void gg_context_destroy(gg_context *ctx);

/* "cpu", "cuda" or "opencl". */
GG_API const char *gg_context_backend(const gg_context *ctx);
/* Human-readable device description, e.g. "cuda:0 NVIDIA H100 80GB HBM3". */
GG_API const char *gg_context_device_name(const gg_context *ctx);
/* Fallback notice under "auto" (empty string when there was none). */
GG_API const char *gg_context_notice(const gg_context *ctx);
/* Message of the last failed call on this context. */
GG_API const char *gg_context_last_error(const gg_context *ctx);

/* Free and total device memory in bytes.  GG_DEVICE_MEMORY (e.g. "64MB")
 * caps what the planner sees, for tests of the blocked paths. */
GG_API gg_status gg_context_memory(gg_context *ctx, size_t *free_bytes,
                                   size_t *total_bytes);

/* Checks the syntax of a device spec without starting anything:
 * GG_OK, or GG_ERR_ARGUMENT with the reason in err. */
GG_API gg_status gg_device_check(const char *device, char *err, size_t errlen);

/* Lists the devices the runtime can see, one per line
 * ("cpu ...", "cuda:0 ...", "opencl:0:0 ..."), into buf. */
GG_API gg_status gg_list_devices(char *buf, size_t buflen);

/* Test-only fault injection: with GG_FAULT="<kind>:<N>[,...]" in the
 * environment, returns 1 on the N-th call (process-wide) of that kind
 * (alloc, launch, transfer, fft, read, write), 0 otherwise.  The library
 * checks alloc/launch/transfer/fft itself; the GDAL layer calls it before
 * reading an input block ("read") and writing an output block ("write"). */
GG_API int gg_fault_point(const char *kind);

/* ------------------------------------------------------------ device memory */

typedef struct gg_buffer gg_buffer;

GG_API gg_status gg_buffer_alloc(gg_context *ctx, size_t bytes, gg_buffer **out);
GG_API void gg_buffer_free(gg_context *ctx, gg_buffer *buf);
GG_API gg_status gg_buffer_write(gg_context *ctx, gg_buffer *dst, size_t offset,
                                 const void *src, size_t bytes);
GG_API gg_status gg_buffer_read(gg_context *ctx, const gg_buffer *src, size_t offset,
                                void *dst, size_t bytes);

/* -------------------------------------------------------------------- FFT */

/* Batched complex-to-complex single-precision FFTs on interleaved CFloat32
 * data, in place.  rank 1: n[0] points, batch transforms back to back;
 * rank 2: n[0] rows x n[1] columns (row-major), batch planes back to back.
 * Plans are created once per shape and cached in the context.
 * Forward uses exp(-2*pi*i*k*n/N); the inverse is unnormalised. */
GG_API gg_status gg_fft(gg_context *ctx, gg_buffer *data, int rank, const int *n,
                        int batch, int inverse);

/* ------------------------------------------------------------ block planner */

/* Picks the largest block of output rows (full width) whose device
 * footprint fits a safety fraction of free device memory.
 *   bytes_per_px : device bytes needed per output pixel (inputs included)
 *   halo_rows    : extra input rows needed above and below a block
 *   bytes_per_row_extra : device bytes per output row independent of width
 * Returns rows >= 1, or GG_ERR_NOMEM if not even one row fits. */
GG_API gg_status gg_plan_rows(gg_context *ctx, int width, int height,
                              double bytes_per_px, int halo_rows,
                              int *rows_out);

/* -------------------------------------------------------------------- ops */

typedef struct gg_op gg_op;

/* A tile of host memory: a window of a raster. */
typedef struct gg_tile {
    void *data;
    gg_type type;
    int width, height;   /* size of the tile */
    size_t stride;       /* elements (not bytes) between rows */
    int x0, y0;          /* position of the tile's top-left in the full raster */
} gg_tile;

/* A window of a raster. */
typedef struct gg_window {
    int x0, y0, width, height;
} gg_window;

/* What an op is told about its input, and tells about its output. */
typedef struct gg_raster_info {
    int width, height, bands;
    gg_type type;
    double geotransform[6];   /* GDAL convention */
    int has_geotransform;
    int has_nodata;
    double nodata;
} gg_raster_info;

/* Names of all ops, NULL-terminated. */
GG_API const char *const *gg_op_names(void);
/* One-line description of an op, or NULL if unknown. */
GG_API const char *gg_op_description(const char *name);
/* Option list of an op: "key|type|default|description" lines, for help
 * texts, GDAL option lists and the QGIS provider. */
GG_API const char *gg_op_option_list(const char *name);

/* Number of input rasters an op takes: N, or -1 for "one or more" (their
 * bands are stacked in order into the op's input); 0 if the op is unknown. */
GG_API int gg_op_input_count(const char *name);

/* Creates an op by name with its default options. */
GG_API gg_status gg_op_new(const char *name, gg_op **out, char *err, size_t errlen);
GG_API void gg_op_free(gg_op *op);
GG_API const char *gg_op_name(const gg_op *op);
/* Sets one option from its string form; validates it.  Keys common to all
 * ops: srcnodata, dstnodata. */
GG_API gg_status gg_op_set(gg_op *op, const char *key, const char *value);
/* The options set so far, in the order first set, with canonical
 * (lower-case) keys: count, then key and value of entry i. */
GG_API int gg_op_option_count(const gg_op *op);
GG_API gg_status gg_op_option_at(const gg_op *op, int i, const char **key, const char **value);
/* Writes the options back as "key=value:key=value" (the GG: form). */
GG_API gg_status gg_op_options_string(const gg_op *op, char *buf, size_t buflen);
/* Last error message of op-level calls (gg_op_set, gg_op_prepare, ...). */
GG_API const char *gg_op_last_error(const gg_op *op);

/* Fixes the input description and computes the output's.  Must be called
 * before the calls below; it validates the options against the input
 * (e.g. looks larger than the image). */
GG_API gg_status gg_op_prepare(gg_op *op, const gg_raster_info *input,
                               gg_raster_info *output);

/* The input window (clipped to the input raster) that the output window
 * needs, halo included.  An empty window (width or height 0) means the
 * output window needs no input at all (it is all nodata). */
GG_API gg_status gg_op_source_window(const gg_op *op, const gg_window *dst,
                                     gg_window *src);

/* Block shape that suits an op: 0 = full-width strips of rows, 1 = square
 * tiles (ops whose source window of a strip would be far larger than the
 * strip, such as rotate). */
GG_API int gg_op_prefers_tiles(const gg_op *op);

/* Ops that need statistics over the whole input (radnorm) return 1 here.
 * Then every input tile of the band must be passed once to
 * gg_op_accumulate before gg_op_run on that band. */
GG_API int gg_op_needs_stats(const gg_op *op);
GG_API gg_status gg_op_accumulate(gg_context *ctx, gg_op *op, int band,
                                  const gg_tile *src);
/* Forgets a band's accumulated statistics (an interrupted pass restarts). */
GG_API gg_status gg_op_reset_stats(gg_op *op, int band);
/* Statistics complete for a band (all tiles seen). */
GG_API gg_status gg_op_finish_stats(gg_context *ctx, gg_op *op, int band);

/* Computes an output tile from the source tile that covers
 * gg_op_source_window(dst window).  src->type must be the input type given
 * to prepare, dst->type the output type. */
GG_API gg_status gg_op_run(gg_context *ctx, gg_op *op, int band,
                           const gg_tile *src, gg_tile *dst);

/* ---------------------------------------------------------- stack ops */

/* Stack ops (coherence, ptsel) read every input band at once (a stack of
 * epochs, or primary and secondary) and write every output band at once;
 * their output bands may differ in type, name and nodata.  For them:
 *   - gg_raster_info.bands of the input is the stack depth;
 *   - gg_op_prepare's output .bands is the number of output bands and .type
 *     the type of band 0; gg_op_band_type/name/nodata describe each band;
 *   - gg_op_source_window applies to every input band;
 *   - gg_op_run_stack replaces gg_op_run. */
GG_API int gg_op_is_stack(const gg_op *op);
GG_API gg_type gg_op_band_type(const gg_op *op, int band);
/* Short name of an output band ("coherence", "tau_max", ...), for band
 * descriptions; "" when the op names none. */
GG_API const char *gg_op_band_name(const gg_op *op, int band);
GG_API double gg_op_band_nodata(const gg_op *op, int band);
/* src: nsrc tiles (one per input band, all covering the same window);
 * dst: ndst tiles (one per output band, all the same window). */
GG_API gg_status gg_op_run_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                 gg_tile *dst, int ndst);

/* Device bytes an op needs per output pixel (for gg_plan_rows). */
GG_API double gg_op_bytes_per_pixel(const gg_op *op);

#ifdef __cplusplus
}
#endif
#endif /* GEOGPU_H */
