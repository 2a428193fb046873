/*
 * geogpu.h -- the one public header of libgeogpu.
 *
 * GPU-accelerated radar and remote-sensing processing with one C API over
 * three backends (CPU, CUDA, OpenCL).  Conventions, as in PROJ and SQLite:
 *   - every symbol starts with gg_ / GG_;
 *   - handles are opaque; functions that can fail return gg_status;
 *   - one error style: the message of a failure is kept by the handle
 *     the call was given (gg_context_last_error, gg_op_last_error,
 *     gg_fmcw_last_error); calls that have no handle yet (constructors,
 *     parsers, checks) write it into the caller's err buffer of errlen
 *     bytes instead;
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
    GG_BYTE = 3,      /* unsigned char (quantised outputs, ortho images) */
    GG_UINT16 = 4,    /* unsigned short (ortho images) */
    GG_INT16 = 5      /* short (ortho images) */
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

/* A second context on ctx's device, with queues of its own: work queued on
 * the two may overlap on the device (one scene's downloads beside the next
 * one's uploads).  Made at the first call and kept by ctx, which destroys
 * it (do not destroy it yourself); later calls return the same one.  Host
 * memory page-locked through either context serves both.  Each context
 * stays for one thread at a time; GG_DEVICE_MEMORY caps each on its own. */
GG_API gg_status gg_context_sibling(gg_context *ctx, gg_context **out);

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
/* The options of an op, described once: every front end (the utilities'
 * flags and --help/--describe, GG: keys, .ggvrt elements, Python keyword
 * arguments, QGIS parameters) and gg_op_set's checks come from this table. */
typedef enum gg_option_kind {
    GG_OPTION_INT,    /* an integer in [min, max] */
    GG_OPTION_FLOAT,  /* a number in [min, max] */
    GG_OPTION_BOOL,   /* yes/no (also true/false, on/off, 1/0) */
    GG_OPTION_SIZE,   /* two integers "WxH" (or "W,H", or "N" for both), each in [min, max] */
    GG_OPTION_CHOICE, /* one of choices */
    GG_OPTION_STRING  /* free text the op checks itself */
} gg_option_kind;

typedef struct gg_option {
    const char *key;           /* GG: key, .ggvrt element, Python keyword */
    const char *flag;          /* command-line flag, "-looks"; NULL: none.  A BOOL's flag
                                * takes no value and sets the opposite of its default
                                * ("-complex": yes, "-noderamp": deramp=no); a SIZE's takes
                                * two values, others one */
    gg_option_kind kind;
    double min, max;           /* accepted range of a number or of each component of a size
                                * (inclusive; -HUGE_VAL/HUGE_VAL: unbounded); the op may
                                * check more (odd sizes, > 0) */
    const char *default_value; /* NULL: none, or computed from the input */
    const char *choices;       /* CHOICE: "a,b,c"; NULL otherwise */
    const char *help;          /* one line */
    int required;              /* the utility requires it */
} gg_option;

/* The option table of an op (its own, then the common srcnodata and
 * dstnodata), *count entries; NULL (count 0) if the op is unknown. */
GG_API const gg_option *gg_op_options(const char *name, int *count);

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
/* The same from one pixel-interleaved tile of every input band (a GeoTIFF
 * stack's own layout, INTERLEAVE=PIXEL, read as it lies in the file): each
 * pixel of src holds nsrc consecutive samples of src->type, band 1 first;
 * src->stride counts pixels (of nsrc samples) between rows.  Ops that can
 * take the layout on the device (ptsel) copy it to the device as it is and
 * sort the bands out there; the others are given band planes sorted on the
 * host.  The outputs are those of gg_op_run_stack. */
GG_API gg_status gg_op_run_stack_interleaved(gg_context *ctx, gg_op *op, const gg_tile *src,
                                             int nsrc, gg_tile *dst, int ndst);

/* Asynchronous stack runs: a pipeline of windows on one context.
 * gg_op_submit_stack and gg_op_submit_stack_interleaved take what
 * gg_op_run_stack and gg_op_run_stack_interleaved take, queue the run and
 * return before it ends; gg_op_collect waits for the oldest run submitted
 * and not yet collected, and fills its dst tiles.  Submit window k + 1,
 * then collect window k: on a device with a copy queue (CUDA, OpenCL), the
 * upload of k + 1 and the download of k overlap the kernels of k and k + 1.
 * The outputs are those of gg_op_run_stack*, bit for bit.
 *   - At most two runs are in flight; a third submit is refused.
 *   - Until a run is collected, its src and dst memory must stay
 *     allocated, src unchanged and dst unread; page-locked memory
 *     (gg_host_alloc) lets the copies run without the host.
 *   - Meanwhile the context serves only this op's submits and collects:
 *     other op calls on it, and gg_op_prepare of this op, are refused.
 *   - A failed submit or collect waits for the device and drops every run
 *     in flight; gg_op_free does the same.
 * Ops without an asynchronous path (all but ptsel) run at submit; their
 * collect returns at once. */
GG_API gg_status gg_op_submit_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                    gg_tile *dst, int ndst);
GG_API gg_status gg_op_submit_stack_interleaved(gg_context *ctx, gg_op *op, const gg_tile *src,
                                                int nsrc, gg_tile *dst, int ndst);
GG_API gg_status gg_op_collect(gg_context *ctx, gg_op *op);
/* Runs submitted and not yet collected. */
GG_API int gg_op_in_flight(const gg_op *op);

/* Device bytes an op needs per output pixel (for gg_plan_rows). */
GG_API double gg_op_bytes_per_pixel(const gg_op *op);

/* ======================================================= FMCW weather radar
 * gg_fmcw_*: dual-polarisation FMCW weather-radar processing with a push
 * API (a live receiver or a file feeds sectors one by one).  Not an op: a
 * sector (three channels HH, VV, HV of n_sweeps x n_samples int16 I/Q) goes
 * in, one row per product (n_gates range bins) comes out.  Chain (see
 * docs/fmcw_format.md): range window, range FFT, corner turn, Doppler FFT,
 * clutter suppression (slow-time mean = zero-Doppler bin; optional notch),
 * Doppler window (as its exact 3-tap spectral convolution), power and
 * HH.VV* spectra, Hildebrand-Sekhon noise per gate, spectral moments,
 * products.  Velocity is positive away from the radar (CfRadial VEL). */

#define GG_FMCW_NODATA (-9999.0f)
#define GG_FMCW_MAX_SWEEPS 1024   /* a gate's spectrum is sorted in a private array */

typedef enum gg_fmcw_window {
    GG_FMCW_WINDOW_HAMMING = 0,   /* periodic 0.54 - 0.46 cos */
    GG_FMCW_WINDOW_HANN = 1,      /* periodic 0.5 - 0.5 cos */
    GG_FMCW_WINDOW_RECT = 2
} gg_fmcw_window;

/* Products, in the canonical order (CfRadial short names). */
typedef enum gg_fmcw_product {
    GG_FMCW_DBZ = 0,   /* dBZ   equivalent reflectivity (H) */
    GG_FMCW_ZDR,       /* dB    differential reflectivity */
    GG_FMCW_LDR,       /* dB    linear depolarisation ratio HV/HH */
    GG_FMCW_VEL,       /* m/s   mean Doppler velocity, + away */
    GG_FMCW_WIDTH,     /* m/s   Doppler spectrum width */
    GG_FMCW_RHOHV,     /* 1     co-polar correlation coefficient */
    GG_FMCW_PHIDP,     /* deg   differential phase arg(sum HH.VV*) */
    GG_FMCW_SNR,       /* dB    signal-to-noise ratio, H co-polar (SNRHC) */
    GG_FMCW_SNRVC,     /* dB    V co-polar */
    GG_FMCW_SNRHX,     /* dB    cross-polar */
    GG_FMCW_NPRODUCTS
} gg_fmcw_product;

GG_API const char *gg_fmcw_product_name(int product);        /* "DBZ" */
GG_API const char *gg_fmcw_product_units(int product);       /* "dBZ" */
GG_API const char *gg_fmcw_product_standard_name(int product);
/* Product index by (case-insensitive) short name, -1 if unknown. */
GG_API int gg_fmcw_product_index(const char *name);
/* Parses "DBZ,ZDR,VEL" into list[] (at most GG_FMCW_NPRODUCTS, no
 * repeats); "" or NULL means all.  GG_ERR_ARGUMENT with the reason in err. */
GG_API gg_status gg_fmcw_parse_products(const char *csv, int *list, int *n,
                                        char *err, size_t errlen);

typedef struct gg_fmcw_params {
    int n_samples;            /* N: fast-time samples per sweep */
    int n_sweeps;             /* M: sweeps (slow time) per sector */
    int n_gates;              /* range bins kept, 1..N (FFT bins 0..n_gates-1) */
    double carrier_hz;        /* carrier frequency (wavelength c/f) */
    double bandwidth_hz;      /* sweep bandwidth B: range bin c/(2B) */
    double sweep_time_s;      /* sweep repetition time T */
    double sample_rate_hz;    /* fast-time sample rate (metadata) */
    double radar_constant_h_db; /* dBZ = 10lg P_h + C_h + 20lg r_km (P in counts^2) */
    double zdr_offset_db;     /* added to ZDR */
    double ldr_offset_db;     /* added to LDR */
    double range_offset_m;    /* range of FFT bin 0 (gate k: offset + k dR) */
    int window_range;         /* gg_fmcw_window */
    int window_doppler;       /* gg_fmcw_window */
    int clutter_mean;         /* 1: subtract the slow-time mean (zero Doppler) */
    int notch_bins;           /* also zero Doppler bins 0 < |j| <= notch_bins */
    double min_snr_db;        /* gates with SNR(H) below are nodata */
    int n_avg;                /* spectra averaged (Hildebrand-Sekhon), >= 1 */
    double max_clipped_fraction; /* a sector with more full-scale samples is bad */
} gg_fmcw_params;

/* Defaults: the paper's geometry (N 1024, M 512, 512 gates of 30 m:
 * B = 5 MHz), X band 9.4 GHz, T = 1 ms, Hamming windows, mean removal on,
 * no notch, min_snr_db -20, n_avg 1, max_clipped_fraction 0.001. */
GG_API void gg_fmcw_params_default(gg_fmcw_params *p);
/* Checks a parameter set; GG_ERR_ARGUMENT naming the bad member. */
GG_API gg_status gg_fmcw_params_check(const gg_fmcw_params *p, char *err, size_t errlen);
/* Derived: range bin (m), wavelength (m), Nyquist velocity (m/s), and the
 * range of gate k (m). */
GG_API double gg_fmcw_range_resolution(const gg_fmcw_params *p);
GG_API double gg_fmcw_wavelength(const gg_fmcw_params *p);
GG_API double gg_fmcw_nyquist_velocity(const gg_fmcw_params *p);
GG_API double gg_fmcw_gate_range(const gg_fmcw_params *p, int gate);

typedef struct gg_fmcw gg_fmcw;

/* A processor on ctx (not owned) for products[0..nproducts) (NULL: all),
 * taking up to max_batch sectors per push.  Device buffers are allocated
 * here, once. */
GG_API gg_status gg_fmcw_create(gg_context *ctx, const gg_fmcw_params *p,
                                const int *products, int nproducts, int max_batch,
                                gg_fmcw **out);
GG_API void gg_fmcw_destroy(gg_fmcw *f);
GG_API const char *gg_fmcw_last_error(const gg_fmcw *f);

/* Host layout of one sector (int16, native endian):
 *   [channel HH, VV, HV][component I, Q][sweep][sample]
 * i.e. 6 planes of n_sweeps x n_samples; sectors back to back. */
GG_API size_t gg_fmcw_sector_values(const gg_fmcw_params *p);

/* Processes n (1..max_batch) sectors; the products are then available from
 * gg_fmcw_products until the next push.  A sector whose channel is all zero
 * or has more clipped (full-scale) samples than allowed gets nodata in every
 * product and a non-zero flag (gg_fmcw_sector_flags). */
GG_API gg_status gg_fmcw_push(gg_fmcw *f, const int16_t *sectors, int n);
/* out: [sector][product (in the order asked)][gate] floats, for the n
 * sectors of the last push. */
GG_API gg_status gg_fmcw_products(gg_fmcw *f, float *out);
/* Per-sector flags of the last push: 0 good, 1 a channel all zero,
 * 2 too many clipped samples. */
GG_API int gg_fmcw_sector_flags(const gg_fmcw *f, int sector);

/* Streaming (a live receiver, or a file read batch by batch): submit
 * queues a batch and returns once its upload has completed (the host
 * buffer is free again) with the chain queued on the device; collect
 * waits for the oldest submitted batch and gives its products
 * ([sector][product asked][gate], out may be NULL), flags (may be NULL)
 * and sector count (*n, may be NULL); gg_fmcw_products and
 * gg_fmcw_sector_flags then also refer to it.  A processor has one stream
 * (its context) and so holds one batch in flight; gg_fmcw_add_stream gives
 * it a second context on the same device (gg_context_sibling; its own
 * CUDA stream / OpenCL queue; not owned, destroyed after the processor) and a second set of
 * device buffers, and submitted batches alternate between the two: the
 * upload of batch k+1 overlaps the processing of batch k.  Pattern:
 *   submit(b0); for k: { [fill the next input]; submit(b[k+1]); collect(b[k]); }
 * Submitting with every stream busy, collecting with nothing in flight, or
 * gg_fmcw_push while batches are in flight: GG_ERR_ARGUMENT.
 * gg_fmcw_push is submit + collect. */
GG_API gg_status gg_fmcw_add_stream(gg_fmcw *f, gg_context *ctx2);
GG_API int gg_fmcw_streams(const gg_fmcw *f);
GG_API gg_status gg_fmcw_submit(gg_fmcw *f, const int16_t *sectors, int n);
GG_API gg_status gg_fmcw_collect(gg_fmcw *f, float *out, int *flags, int *n);
/* Page-locked (gg_host_alloc) input memory of max_batch sectors owned by
 * the processor (allocated on first call, freed by gg_fmcw_destroy; NULL
 * with gg_fmcw_last_error when it cannot be had).  Filling it and passing
 * it to submit/push uploads at the copy engine's full speed, with no
 * staging copy; it may be refilled as soon as submit returns. */
GG_API int16_t *gg_fmcw_host_input(gg_fmcw *f);

/* ---- spectral stage alone (e.g. Metek MRR-2 spectra) ----
 * Power spectra in [row][gate][bin] (n_bins bins, velocity of bin j is
 * v0 + j*dv, aliasing interval n_bins*dv) -> per gate: noise (per bin), power
 * (noise removed, summed over bins), SNR (dB), mean velocity, width
 * (Hildebrand-Sekhon noise, the same moment code as the chain).
 * out: [row][5][gate]: NOISE, POWER, SNR, VEL, WIDTH; nodata where no
 * signal. */
GG_API gg_status gg_fmcw_spectral_moments(gg_context *ctx, const float *spectra, int rows,
                                          int n_gates, int n_bins, double v0, double dv,
                                          int n_avg, float *out);

/* ---- simulator (the oracle of the tests) ----
 * Fields of one sector, each [n_gates] (truth at FFT bin k); power as the
 * reflectivity the processor must give back. */
typedef struct gg_fmcw_field {
    const float *dbz;     /* dBZ (H) */
    const float *zdr;     /* dB */
    const float *ldr;     /* dB */
    const float *vel;     /* m/s, + away */
    const float *width;   /* m/s */
    const float *rhohv;   /* 0..1 */
    const float *phidp;   /* deg */
    const float *clutter_db; /* zero-Doppler clutter power rel. the noise per
                                gate (dB, H and V; NULL: none) */
} gg_fmcw_field;

typedef struct gg_fmcw_sim {
    double noise_counts;   /* std of I and of Q of the receiver noise (counts) */
    int exponential;       /* 1: exponential spectral amplitudes (realistic);
                              0: exact Gaussian amplitudes, random phases */
    unsigned long long seed; /* xorshift state; 0 is taken as 1 (so seeds 0 and 1 give
                                the same sector) */
} gg_fmcw_sim;

/* Writes one sector (gg_fmcw_sector_values int16) from the fields:
 * Gaussian Doppler spectra of the given power, velocity, width, ZDR, LDR,
 * rho_hv and phi_dp per gate, put at the gate's beat frequency, plus
 * complex white noise and steady clutter, rounded (and clipped) to int16.
 * GG_ERR_ARGUMENT when a field value is out of range. */
GG_API gg_status gg_fmcw_simulate(const gg_fmcw_params *p, const gg_fmcw_sim *sim,
                                  const gg_fmcw_field *field, int16_t *sector,
                                  char *err, size_t errlen);
/* The SNR (dB, H channel) a gate of this dBZ has in the simulator. */
GG_API double gg_fmcw_sim_snr_db(const gg_fmcw_params *p, const gg_fmcw_sim *sim, int gate,
                                 double dbz);

/* ---- PPI gridding ----
 * Nearest-gate polar -> azimuthal-equidistant grid (4/3-Earth beam model).
 * polar: [n_az][n_gates] floats, ray i centred at azimuth az_deg[i]
 * (clockwise from north), beam width dazimuth; grid width x height cells
 * of res_m, centred on the radar (x right = east, y up = north, row 0 is
 * the northernmost).  Cells beyond max_range_m or between rays are nodata. */
GG_API gg_status gg_fmcw_grid_ppi(const gg_fmcw_params *p, const float *polar, int n_az,
                                  const double *az_deg, double beam_width_deg,
                                  double elevation_deg, double res_m, double max_range_m,
                                  int size, float *grid);
/* Ground distance and height of a gate (4/3 Earth, radius 6371 km). */
GG_API void gg_fmcw_beam(double range_m, double elevation_deg, double *ground_m,
                         double *height_m);

/* ---- Metek MRR-2 raw spectra (24 GHz FMCW, vertically pointing) ----
 * The text format of its .raw files (decompressed): per record an "MRR"
 * header line (time yymmddhhmmss UTC, CC calibration constant, "MDQ q n m":
 * n is the number of spectra the record averages), "H" gate heights, "TF"
 * transfer function per gate, "F00".."F63" spectral lines, 32 fixed-width
 * (9 character) fields after a 3-character tag; blank fields are missing
 * (NaN).  A header without a count is an error; a count of 0 is kept (0)
 * and its record is left out of the products (flagged). */
typedef struct gg_mrr2 {
    int n_records, n_gates, n_bins;
    double cc;              /* calibration constant of the first record */
    double *height;         /* [n_gates] m */
    double *tf;             /* [n_gates] */
    float *spectra;         /* [record][gate][bin] raw F values */
    char (*time)[16];       /* [record] "yymmddhhmmss" */
    int *n_spectra;         /* [record] spectra averaged in the record (0: left out) */
    long long *seconds;     /* [record] seconds since 1970-01-01 UTC (years 20yy) */
} gg_mrr2;

GG_API gg_status gg_mrr2_parse(const char *text, size_t len, gg_mrr2 **out, char *err,
                               size_t errlen);
GG_API void gg_mrr2_free(gg_mrr2 *m);

#define GG_MRR2_DV 0.1887          /* fall velocity of one spectral line (m/s) */
#define GG_MRR2_FREQUENCY 24.23e9  /* MRR-2 transmit frequency (Hz): lambda = c / f */
#define GG_MRR2_K2 0.92            /* |K|^2 of water */
#define GG_MRR2_NODATA (-9999.0f)
#define GG_MRR2_PIA_MAX_DB 10.0    /* attenuation corrected up to this PIA (Metek's limit) */

typedef struct gg_mrr2_options {
    double average_s;   /* records whose times fall in the same clock interval of
                           this many seconds are averaged (60: the instrument's AVE);
                           <= 0: none, one row per record */
    int min_width;      /* spectral lines above the noise limit a peak needs (0: 3) */
    double frequency_hz;/* 0: GG_MRR2_FREQUENCY */
    double k2;          /* 0: GG_MRR2_K2 */
} gg_mrr2_options;

/* Output rows for an averaging interval (<= 0: one per record), and, when
 * first is not NULL, the first record of each row in first[0..rows] (first
 * [rows] = n_records).  Records are taken in file order; a new row starts
 * when a record's interval differs from the previous record's. */
GG_API int gg_mrr2_rows(const gg_mrr2 *m, double average_s, int *first);

/* Products per output row and gate, planes GG_MRR2_ZE..GG_MRR2_FLAG:
 *  ZE    equivalent reflectivity (dBZ): 10 log10(1e18 lambda^4 / (pi^5 |K|^2)
 *        sum eta) over the peak's lines, eta = F CC i^2 dH / (1e20 TF(i))
 *        less the noise (Metek's calibration; i the gate index, dH the gate
 *        spacing, lambda in m);
 *  W     mean fall velocity (m/s, positive down, line j is j * 0.1887 m/s,
 *        not dealiased: in [0, 64 * 0.1887));
 *  WIDTH spectral width (m/s); SNR (dB, peak power over the noise of all lines);
 *  NOISE the noise of the gate as a reflectivity (dBZ);
 *  FLAG  bits: 1 gate 1, 2 or the last (disturbed; gate 0 carries no eta),
 *        2 a record of the row was left out (count 0 or a missing line),
 *        4 no data (gate 0, TF <= 0 or no usable record), 8 the PIA passed
 *        GG_MRR2_PIA_MAX_DB at or below the gate (Z, RR, LWC nodata);
 *  Z     attenuation-corrected reflectivity from the drop sizes (dBZ):
 *        10 log10 sum N(D) D^6 dD, D in mm;
 *  PIA   two-way path-integrated attenuation to the gate's centre (dB);
 *  RR    rain rate (mm/h): pi/6 sum N(D) D^3 v(D) dD;
 *  LWC   liquid water content (g/m^3): pi/6 rho_w sum N(D) D^3 dD.
 * Drop sizes (Metek's rain assumption, meaningless in snow): the peak's
 * lines less the noise, eta corrected by the attenuation below, N(D) =
 * eta(D) / sigma_b(D) with Mie cross sections of water at 10 degC and
 * v(D) = (9.65 - 10.3 exp(-0.6 D)) (1 + 3.68e-5 h + 1.71e-9 h^2); the
 * gate's attenuation k = sum N(D) sigma_e(D) dD, from the lowest gate up
 * (see gg_mrr2_drop_table).
 * Noise: Hildebrand-Sekhon with the row's summed count of spectra; the
 * peak: the lines above the largest noise line around the largest line, at
 * least min_width of them.  Nodata GG_MRR2_NODATA.  out: [rows][GG_MRR2_NPROD]
 * [n_gates] with rows from gg_mrr2_rows; o NULL: defaults. */
enum { GG_MRR2_ZE, GG_MRR2_W, GG_MRR2_WIDTH, GG_MRR2_SNR, GG_MRR2_NOISE, GG_MRR2_FLAG,
       GG_MRR2_Z, GG_MRR2_PIA, GG_MRR2_RR, GG_MRR2_LWC, GG_MRR2_NPROD };
GG_API gg_status gg_mrr2_products(gg_context *ctx, const gg_mrr2 *m, const gg_mrr2_options *o,
                                  float *out);
/* The same, and when nd is not NULL the drop-size distribution N(D)
 * (m^-3 mm^-1) of each row, gate and spectral line, [rows][n_gates]
 * [n_bins]: 0 on lines of no rain drop (gg_mrr2_drop_table's diameter 0)
 * or outside the peak, nodata where the gate has no signal or its PIA
 * passed the limit. */
GG_API gg_status gg_mrr2_products_dsd(gg_context *ctx, const gg_mrr2 *m,
                                      const gg_mrr2_options *o, float *out, float *nd);
/* The drop-size table, [n_gates][n_bins][4]: per gate and line, the
 * diameter D (mm) of a rain drop falling at the line's velocity j * 0.1887
 * m/s at the gate's height (0: none, D above 6 mm or line 0), the
 * diameter interval of the line (mm), the backscattering and extinction
 * cross sections (m^2, Mie, water at 10 degC, o's frequency). */
GG_API gg_status gg_mrr2_drop_table(const gg_mrr2 *m, const gg_mrr2_options *o, float *tab);

/* Product names (band descriptions: "ZE", "W", ...), units ("dBZ", "m/s";
 * "" for FLAG) and CF standard names; "" out of range. */
GG_API const char *gg_mrr2_product_name(int product);
GG_API const char *gg_mrr2_product_units(int product);
GG_API const char *gg_mrr2_product_standard_name(int product);
GG_API int gg_mrr2_product_index(const char *name);  /* case-insensitive; -1 unknown */
/* "ZE,W,..." (case-insensitive, NULL or "": all, in plane order) -> list
 * of planes (GG_MRR2_NPROD entries at most); GG_ERR_ARGUMENT with a one-line
 * message naming the unknown or repeated product. */
GG_API gg_status gg_mrr2_parse_products(const char *csv, int *list, int *n, char *err,
                                        size_t errlen);

/* ============================================================ ortho (gg_ortho_*)
 * RPC + DEM orthorectification (gdal_ortho), the indirect method of
 * gdalwarp -rpc -to RPC_DEM=... with its conventions (see
 * algorithms/ortho/ortho_kernels.h).  libgeogpu has no GDAL: the GDAL layer
 * reads RPCs, DEM and pixels and computes, with PROJ, the exact lon/lat of a
 * coarse grid of output pixels; the device interpolates that grid and does
 * the per-pixel DEM sampling, RFM and resampling. */

/* Image and output samples: GG_BYTE, GG_UINT16, GG_INT16 or GG_FLOAT32. */

/* Resampling / DEM interpolation: 0 near, 1 bilinear, 2 cubic (the image:
 * Catmull-Rom; the DEM: cubic B-spline, as GDAL); the image of a
 * source-coordinate session (gdal_warp) also 3 cubicspline (B-spline),
 * 4 lanczos (Lanczos-3), GDAL's general kernels, and 5 average (the
 * area-weighted mean of the source pixels under each output pixel: its
 * coordinates are those of the output pixels' corners, see
 * GG_WARP_PIECE). */
typedef enum gg_ortho_method {
    GG_ORTHO_METHOD_NEAR = 0, GG_ORTHO_METHOD_BILINEAR = 1, GG_ORTHO_METHOD_CUBIC = 2,
    GG_ORTHO_METHOD_CUBICSPLINE = 3, GG_ORTHO_METHOD_LANCZOS = 4, GG_ORTHO_METHOD_AVERAGE = 5
} gg_ortho_method;

/* An RPC00B model (GDAL's RPC metadata domain, RFC 22). */
typedef struct gg_ortho_rpc {
    double line_off, samp_off, lat_off, long_off, height_off;
    double line_scale, samp_scale, lat_scale, long_scale, height_scale;
    double line_num[20], line_den[20], samp_num[20], samp_den[20];
} gg_ortho_rpc;

typedef struct gg_ortho_options {
    gg_ortho_method resampling;   /* source image */
    gg_ortho_method dem_interp;   /* DEM (GDAL's default: bilinear) */
    double rpc_height;            /* added to the DEM (RPC_HEIGHT) */
    double height_scale;          /* DEM multiplier (RPC_HEIGHT_SCALE), 1 */
    int has_dem_missing;
    double dem_missing;           /* height where the DEM has nothing */
    int has_src_nodata;
    double src_nodata;
    double dst_init;              /* output pixels without a sample */
    /* dst_init is the output's nodata: an integer output pixel that
     * bilinear or cubic resampling rounds onto it is moved one step off
     * (down, up from the type's minimum), as gdalwarp 3.6 does */
    int has_dst_nodata;
    /* 1: taps judged band by band and no containing-pixel rule (gdalwarp's
     * UNIFIED_SRC_NODATA=NO); 0: the containing pixel's nodata drops the
     * output pixel.  gg_ortho_session_set_bands with several bands replaces
     * this by gdalwarp's default multi-band rule. */
    int per_band_nodata;
} gg_ortho_options;

/* A window of a DEM raster, float64 row-major; data NULL: no DEM. */
typedef struct gg_ortho_dem {
    const double *data;
    int width, height;            /* of the window */
    int x0, y0;                   /* window position in the raster */
    int raster_width, raster_height;
    int has_nodata;
    double nodata;
} gg_ortho_dem;

/* Exact coordinates of every step-th output pixel of a block: 5 planes of
 * nx * ny doubles (lon, lat in degrees; DEM pixel x, y in the DEM raster's
 * corner convention; vertical datum shift in metres), node (i, j) at block
 * pixel ((i - 1) * step, (j - 1) * step).  Needs
 * nx >= (block width - 1) / step + 4, ny likewise. */
#define GG_ORTHO_PLANES 5
typedef struct gg_ortho_grid {
    const double *nodes;
    int nx, ny, step;
} gg_ortho_grid;

/* A window of the source image (packed rows of `stride` samples). */
typedef struct gg_ortho_image {
    const void *data;
    gg_type type;
    int x0, y0, width, height;    /* the window */
    size_t stride;
    int raster_width, raster_height;
} gg_ortho_image;

/* The grid of a source-coordinate session (rpc NULL): GG_WARP_PLANES
 * planes, the source pixel and line (GDAL's corner convention) of each
 * node, as any transformer gives them on the host (gdal_warp: PROJ, GCP
 * polynomials, thin-plate splines, geolocation arrays); NaN where the
 * transformer failed.  With step 1 every output pixel is a node and is
 * taken as it is; otherwise nodes are interpolated as above, so a NaN
 * node leaves the pixels around it without a sample.
 * Step 0: row pieces instead of nodes, gdalwarp's approximate
 * transformer along each row: nodes holds nx doubles, ny = the block's
 * height: ny + 1 piece indices (row r has pieces index[r] .. index[r+1]-1,
 * in pixel order), GG_WARP_PIECE doubles per piece {first pixel, pixel
 * count, base pixel, source x0 and line y0 at the base pixel, their steps
 * per pixel}, then the exact positions of pieces whose x step is NaN, as
 * (x, line) pairs from the double at index x0.  Pixel i of a linear piece
 * is at x0 + step * (i - base pixel).
 * Average (GG_ORTHO_METHOD_AVERAGE) takes the corners of output pixels,
 * not their centres: grid nodes and exact positions are those of corner
 * (x, y) for pixel (x, y), the grid covering the block's width + 1 and
 * height + 1 corners; row pieces come twice (ny = 2 x the block's height):
 * rows 0 .. h-1 give corner (x, y) of pixel x, rows h .. 2h-1 its corner
 * (x + 1, y + 1), as gdalwarp transforms the two corner rows. */
#define GG_WARP_PLANES 2
#define GG_WARP_PIECE 7

typedef struct gg_ortho_session gg_ortho_session;

/* Checks the model and options, uploads the DEM window and coefficients.
 * rpc NULL (and dem NULL): a source-coordinate session (GG_WARP_PLANES). */
GG_API gg_status gg_ortho_session_create(gg_context *ctx, const gg_ortho_rpc *rpc,
                                         const gg_ortho_dem *dem, const gg_ortho_options *opt,
                                         gg_ortho_session **out);
GG_API void gg_ortho_session_destroy(gg_ortho_session *s);
/* Downsampling: the ratio of output to source resolution along x and y as
 * gdalwarp computes it for the chunk (dfXScale, dfYScale; 1 = none, the
 * default).  Below 0.95 on either axis bilinear and cubic use GDAL's
 * stretched kernels (taps 1 - ceil(r / scale) .. ceil(r / scale), weights
 * K(d * min(scale, 1))) instead of the 4-sample formulas. */
GG_API gg_status gg_ortho_session_set_scale(gg_ortho_session *s, double xscale, double yscale);
/* One output block of width x height pixels of dst_type into dst (rows
 * dst_stride samples apart).  *missed is set to 1 when a sample needed a
 * source pixel outside src's window (the block is then incomplete: run it
 * again with a larger window). */
GG_API gg_status gg_ortho_session_run(gg_ortho_session *s, const gg_ortho_grid *grid,
                                      const gg_ortho_image *src, void *dst,
                                      gg_type dst_type, int width, int height,
                                      size_t dst_stride, int *missed);
/* Several bands (gdalwarp's multi-band nodata rule): nbands source
 * nodata values (NULL: the options' src_nodata for all) and output
 * nodata / fill values (NULL: dst_init for all), and unified 1 for
 * gdalwarp's UNIFIED_SRC_NODATA=YES (what gdalwarp sets with -srcnodata
 * over several bands: a source pixel is nodata only where every band is),
 * 0 for its default (PARTIAL: taps judged band by band, an output pixel
 * dropped where every band of its containing source pixel is nodata).
 * With a source nodata value and nbands > 1, blocks must then be run with
 * all bands: gg_ortho_session_run_bands, or run_resident on a resident
 * source of nbands bands (all bands of the rows put). */
GG_API gg_status gg_ortho_session_set_bands(gg_ortho_session *s, int nbands,
                                            const double *src_nodata, const double *dst_init,
                                            int unified);
/* As gg_ortho_session_run for nbands bands: src->data holds nbands planes
 * of src->height rows of src->stride samples, one after the other; dst
 * nbands planes dst_plane samples apart. */
GG_API gg_status gg_ortho_session_run_bands(gg_ortho_session *s, const gg_ortho_grid *grid,
                                            const gg_ortho_image *src, int nbands, void *dst,
                                            gg_type dst_type, int width, int height,
                                            size_t dst_stride, size_t dst_plane, int *missed);
/* The whole source image resident on the device: each source row is read
 * and uploaded once (put_rows, in any order, e.g. by strips as readers
 * finish them) and every block reads its rows from there.  source_bytes:
 * device bytes it takes (0 for a bad size or type). */
GG_API size_t gg_ortho_source_bytes(gg_type type, int width, int height, int nbands);
GG_API gg_status gg_ortho_session_set_source(gg_ortho_session *s, gg_type type, int width,
                                             int height, int nbands);
/* Rows y0 .. y0+rows-1 of band (0-based), `stride` samples apart in data. */
GG_API gg_status gg_ortho_session_put_rows(gg_ortho_session *s, int band, int y0, int rows,
                                           const void *data, size_t stride);
/* As gg_ortho_session_run with the resident source; the caller has put
 * rows y0 .. y0+rows-1 (all columns) of band: taps outside them set
 * *missed, exactly as a window would. */
GG_API gg_status gg_ortho_session_run_resident(gg_ortho_session *s, const gg_ortho_grid *grid,
                                               int band, int y0, int rows, void *dst,
                                               gg_type dst_type, int width, int height,
                                               size_t dst_stride, int *missed);
/* Pipelined resident blocks: where the device has a copy queue (CUDA,
 * OpenCL) uploads and downloads run beside the kernels; elsewhere the same
 * calls run at once, with the same results.
 * put_rows_async: put_rows queued; data must stay unchanged until the next
 * gg_ortho_session_wait or gg_ortho_session_flush returns.
 * queue_resident: every band of the resident source for one block (rows
 * y0 .. y0+rows-1 put or queued), band b into dst + b * dst_plane samples;
 * returns once queued.  At most GG_ORTHO_QUEUED blocks are queued; the
 * grid's nodes and dst must stay until the block's wait.
 * wait: completes the oldest queued block: on return its output is in dst,
 * *missed is set as by run_resident (any band), and every upload queued
 * before the call has landed.  flush: every queued upload has landed. */
#define GG_ORTHO_QUEUED 2
GG_API gg_status gg_ortho_session_put_rows_async(gg_ortho_session *s, int band, int y0,
                                                 int rows, const void *data, size_t stride);
GG_API gg_status gg_ortho_session_queue_resident(gg_ortho_session *s, const gg_ortho_grid *grid,
                                                 int y0, int rows, void *dst,
                                                 gg_type dst_type, int width, int height,
                                                 size_t dst_stride, size_t dst_plane);
GG_API gg_status gg_ortho_session_wait(gg_ortho_session *s, int *missed);
GG_API gg_status gg_ortho_session_flush(gg_ortho_session *s);
/* Device bytes per output pixel of a block whose source window has about
 * src_per_dst source pixels per output pixel (for gg_plan_rows). */
GG_API double gg_ortho_bytes_per_pixel(gg_type src_type, gg_type dst_type,
                                       double src_per_dst);

/* Float64 reference on the host, the same code as the device's. */
GG_API void gg_ortho_rpc_forward(const gg_ortho_rpc *rpc, double lon, double lat, double h,
                                 double *pixel, double *line);
/* Height (vshift + rpc_height + DEM * scale) at DEM raster position (x, y):
 * 1 on success, 0 where GDAL's transformer fails. */
GG_API int gg_ortho_height_at(const gg_ortho_dem *dem, const gg_ortho_options *opt, double x,
                              double y, double vshift, double *h);
/* Launch configuration of the ortho kernel on ctx's device. */
GG_API gg_status gg_ortho_launch_info(gg_context *ctx, int *block_x, int *block_y,
                                      double *occupancy);

/* ------------------------------------------ coregistration (gg_xcorr_) */

/* GMTSAR PRM files: text lines "name = value" (blanks around '=').
 * gg_gmtsar_prm_line splits one line in place (key and value trimmed):
 * 0 when it has no '=' or an empty name.  gg_gmtsar_prm_each calls fn for
 * each such line of the file, in file order, until fn returns non-zero. */
typedef int (*gg_prm_entry_fn)(const char *key, const char *value, void *user);
GG_API int gg_gmtsar_prm_line(char *line, char **key, char **value);
GG_API gg_status gg_gmtsar_prm_each(const char *path, gg_prm_entry_fn fn, void *user, char *err,
                                    size_t errlen);

/* GMTSAR's xcorr interface (gdal_xcorr -mode gmtsar); the quality mode is
 * the "xcorr" op.  A GMTSAR PRM with its raw int16 I/Q SLC file. */
typedef struct gg_xcorr_prm {
    char slc_file[1024];   /* the SLC found (docs/driver_gmtsar.md) */
    int width, height;     /* num_rng_bins, num_valid_az * num_patches */
    double prf;
    int rshift, ashift, has_shift;
} gg_xcorr_prm;

/* Reads a PRM, finds its SLC (SLC_file beside the PRM or as given, else
 * the PRM's name with .SLC, else an input_file naming a .SLC) and checks
 * it (int16 I/Q, exists, not truncated): the GMTSAR driver's reader too. */
GG_API gg_status gg_xcorr_prm_read(const char *path, gg_xcorr_prm *out, char *err, size_t errlen);

typedef struct gg_xcorr_gmtsar_options {
    int nx, ny;              /* locations in range, azimuth (GMTSAR -nx 16 -ny 32) */
    int xsearch, ysearch;    /* powers of 2 (64 64) */
    int range_interp;        /* 2; 1 = -norange */
    int interp;              /* correlation-surface upsampling (16) */
    int noshift;             /* ignore the aligned PRM's rshift/ashift */
} gg_xcorr_gmtsar_options;

/* One line of freq_xcorr.dat: x xoff y yoff corr. */
typedef struct gg_xcorr_gmtsar_row {
    double x, xoff, y, yoff, corr;
} gg_xcorr_gmtsar_row;

/* Runs GMTSAR's algorithm (defects fixed, see docs/gdal_xcorr.md) on ctx's
 * device: *rows (nx * ny, azimuth-major) freed with gg_xcorr_free. */
GG_API gg_status gg_xcorr_gmtsar(gg_context *ctx, const gg_xcorr_prm *master,
                                 const gg_xcorr_prm *aligned, const gg_xcorr_gmtsar_options *opt,
                                 gg_xcorr_gmtsar_row **rows, int *nrows, gg_progress_fn progress,
                                 void *user);
GG_API void gg_xcorr_free(void *p);

/* ------------------------------------------- coregistration fit (gg_coreg_fit_) */

/* Robust polynomial fit of dense offsets (algorithms/coreg/fit.c), float64.
 * offset(x, y) = sum_k c_k m_k(x, y) with m = 1, x, y, x^2, xy, y^2, x^3,
 * x^2y, xy^2, y^3 (3, 6 or 10 terms for order 1, 2, 3); x = pixel
 * (across), y = line (down) in the primary, pixel centres at integers;
 * secondary = primary + offset.  Down and across are fitted separately. */
typedef struct gg_coreg_fit_options {
    int order;          /* 1..3 (1) */
    double min_snr;     /* points with snr < min_snr are not used (0) */
    double min_peak;    /* points with peak < min_peak are not used (0) */
    double tukey_c;     /* Tukey biweight constant, in MAD sigmas (4.685) */
    double kcut;        /* final hard cut at kcut MAD sigmas (3) */
    int max_iter;       /* IRLS iterations (50) */
    int min_points;     /* least points (0: max(8, 2 * terms)) */
} gg_coreg_fit_options;

typedef struct gg_coreg_fit {
    int order, ncoef;
    double down[10], across[10];     /* pixel-unit monomial coefficients */
    int n_total, n_candidates;        /* given; finite and above the thresholds */
    int n_used_down, n_used_across;   /* survivors of the outlier cut */
    double rms_down, rms_across;      /* residual RMS of the survivors (px) */
    double sigma_down, sigma_across;  /* MAD sigma of the robust fit (px) */
} gg_coreg_fit;

GG_API void gg_coreg_fit_options_default(gg_coreg_fit_options *o);
/* n points; snr and peak may be NULL (no threshold).  Too few points is
 * GG_ERR_ARGUMENT with a message naming the count and the threshold. */
GG_API gg_status gg_coreg_fit_points(const double *x, const double *y, const double *off_down,
                                     const double *off_across, const double *snr,
                                     const double *peak, int n, const gg_coreg_fit_options *o,
                                     gg_coreg_fit *out, char *err, size_t errlen);
/* The least usable points gg_coreg_fit_points takes with options o. */
GG_API int gg_coreg_fit_min_points(const gg_coreg_fit_options *o);
/* axis 0 = down, 1 = across */
GG_API double gg_coreg_fit_eval(const gg_coreg_fit *f, int axis, double x, double y);
/* JSON text (coefficients, order, counts used/rejected, RMS). */
GG_API gg_status gg_coreg_fit_json(const gg_coreg_fit *f, char *buf, size_t len);
/* GMTSAR's eight PRM lines (rshift sub_int_r stretch_r a_stretch_r ashift
 * sub_int_a stretch_a a_stretch_a): the linear part of the fit. */
GG_API gg_status gg_coreg_fit_prm(const gg_coreg_fit *f, char *buf, size_t len);
/* Parses gg_coreg_fit_json's text, or "d0,d1,...;a0,a1,..." (down;across). */
GG_API gg_status gg_coreg_fit_parse(const char *text, gg_coreg_fit *f, char *err, size_t errlen);

/* Carrier of a complex SLC (algorithms/coreg/carrier.c), for the resample
 * op's carrier= option: the mean phase step of the lag-1 correlation along
 * lines (azimuth) and pixels (range), float64, over blocks of rows added
 * one by one (pairs across blocks are not counted).  An axis whose lag-1
 * correlation is not significant (|corr| < 3 / sqrt(pairs): a white
 * spectrum) has carrier 0. */
typedef struct gg_coreg_carrier {
    double s[2][4];   /* azimuth, range: sum a conj b (re, im), power, pairs */
} gg_coreg_carrier;
GG_API void gg_coreg_carrier_init(gg_coreg_carrier *c);
/* h rows of w interleaved (re, im) floats; samples that are not finite or
 * whose real part is nodata (when has_nodata) are left out. */
GG_API void gg_coreg_carrier_add(gg_coreg_carrier *c, const float *cpx, int w, int h,
                                 int has_nodata, float nodata);
/* The carrier in cycles per line (*fy) and per pixel (*fx), in [-0.5, 0.5]. */
GG_API void gg_coreg_carrier_result(const gg_coreg_carrier *c, double *fy, double *fx);

/* ===================================================================
 * Page-locked host memory (gg_host_*)
 *
 * Host buffers that tiles are uploaded from or downloaded to: on CUDA
 * page-locked and portable (pinned for every GPU), so transfers go
 * straight to the copy engine at full link speed without the staging
 * copies of pageable memory, and several GPUs can upload at once without
 * contending for CPU memory bandwidth; on the CPU and OpenCL backends
 * ordinary 64-byte aligned memory.  Pinning costs about 0.07 s per GB on
 * CUDA (huge pages faulted in by several threads, then registered):
 * allocate once and reuse.  Free with gg_host_free on a context of the
 * same backend, before the last context of that backend is destroyed.
 * =================================================================== */
GG_API gg_status gg_host_alloc(gg_context *ctx, size_t bytes, void **out);
GG_API void gg_host_free(gg_context *ctx, void *p);

/* Memory the caller mapped (a file's pages), page-locked so transfers
 * read it (GG_HOST_READ_ONLY: a read-only mapping) or write it where it
 * lies, without a copy through a buffer of the caller's.  Every page is
 * faulted in here: a page that cannot be had is an error of this call,
 * never a signal later.  GG_ERR_UNSUPPORTED where the backend or driver
 * cannot (OpenCL; the caller then copies through its own buffers); the
 * CPU backend accepts any memory.  gg_host_unregister before unmapping,
 * on a context of the same backend. */
#define GG_HOST_READ_ONLY 1
GG_API gg_status gg_host_register(gg_context *ctx, void *p, size_t bytes, int flags);
GG_API void gg_host_unregister(gg_context *ctx, void *p);

#ifdef __cplusplus
}
#endif
#endif /* GEOGPU_H */
