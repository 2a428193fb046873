/*
 * op.h -- how an operation is described (once) and implemented.  One file
 * per operation under algorithms/<capability>/ fills a gg_op_class; op.c
 * holds the registry, option storage, parsing helpers and the generic
 * calls of geogpu.h.
 */
#ifndef GG_OP_H
#define GG_OP_H

#include "geogpu.h"
#include "../gpu/runtime.h"

#include <math.h>

/* an unbounded end of a gg_option range */
#define GG_UNBOUNDED HUGE_VAL
#define GG_INT_MAX 2147483647.0

#define GG_OP_MAX_OPTIONS 32
#define GG_OP_MAX_IN_FLIGHT 2 /* asynchronous stack runs (two buffer sets) */

typedef struct gg_op_class {
    const char *name;
    const char *description;
    /* the op's own options (gg_option, geogpu.h), ended by an entry with
     * key NULL; gg_op_set checks kind and range from it before set() */
    const gg_option *options;
    size_t state_size;
    int inputs;          /* input rasters: N, -1 = one or more (0 means 1) */
    int prefers_tiles;   /* square blocks suit it better than strips */
    /* Sets defaults in op->state. */
    void (*init)(gg_op *op);
    /* Parses an op-specific option into op->state; GG_ERR_ARGUMENT with a
     * message (gg_op_error) when the value is bad; GG_ERR_UNSUPPORTED for
     * an unknown key. */
    gg_status (*set)(gg_op *op, const char *key, const char *value);
    gg_status (*prepare)(gg_op *op, const gg_raster_info *in, gg_raster_info *out);
    void (*source_window)(const gg_op *op, const gg_window *dst, gg_window *src);
    /* optional: whole-input statistics */
    gg_status (*accumulate)(gg_context *ctx, gg_op *op, int band, const gg_tile *src);
    gg_status (*finish_stats)(gg_context *ctx, gg_op *op, int band);
    void (*reset_stats)(gg_op *op, int band);
    gg_status (*run)(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst);
    double (*bytes_per_pixel)(const gg_op *op);
    /* stack ops (all bands in, all bands out); see geogpu.h */
    int stack;
    gg_status (*run_stack)(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                           gg_tile *dst, int ndst);
    /* optional: run_stack from one pixel-interleaved tile (see
     * gg_op_run_stack_interleaved); NULL: op.c sorts the bands on the host */
    gg_status (*run_stack_interleaved)(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                       gg_tile *dst, int ndst);
    /* optional: asynchronous stack runs (gg_op_submit_stack*; NULL: they
     * run at submit).  enqueue_stack queues a run without waiting for it:
     * its uploads on the copy queue into the input buffers of `set` (0 or
     * 1), its kernels on the main queue, its outputs left in the device
     * buffers of `set`; fetch_stack waits for the run of `set` and
     * downloads its outputs into dst (the tiles given to enqueue_stack).
     * src and dst have passed the checks of gg_op_run_stack*. */
    gg_status (*enqueue_stack)(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                               int interleaved, const gg_tile *dst, int ndst, int set);
    gg_status (*fetch_stack)(gg_context *ctx, gg_op *op, gg_tile *dst, int ndst, int set);
    gg_type (*band_type)(const gg_op *op, int band);      /* NULL: out.type */
    const char *(*band_name)(const gg_op *op, int band);  /* NULL: "" */
    double (*band_nodata)(const gg_op *op, int band);     /* NULL: dst_nodata */
    void (*cleanup)(gg_op *op);
} gg_op_class;

struct gg_op {
    const gg_op_class *cls;
    void *state;
    gg_raster_info in, out;
    int prepared;
    /* nodata in force after prepare */
    int src_has_nodata;
    double src_nodata;
    double dst_nodata;
    /* common options */
    int opt_srcnodata_set, opt_dstnodata_set;
    double opt_srcnodata, opt_dstnodata;
    /* options as given, for gg_op_options_string */
    int nopts;
    char *keys[GG_OP_MAX_OPTIONS], *vals[GG_OP_MAX_OPTIONS];
    char err[512];
    /* asynchronous stack runs in flight on pipe_ctx, oldest first: the
     * buffer set each was queued in (-1: it ran at submit) and a copy of
     * its output tiles */
    gg_context *pipe_ctx;
    int npending, next_set;
    struct gg_op_pending {
        int set, ndst;
        gg_tile *dst;
    } pending[GG_OP_MAX_IN_FLIGHT];
};

/* Sets the op's error message and returns s. */
gg_status gg_op_error(gg_op *op, gg_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Value parsers: 1 on success. */
int gg_parse_int(const char *s, int *v);
int gg_parse_double(const char *s, double *v);
int gg_parse_bool(const char *s, int *v);
/* "4x3", "4,3" or "4" (both = 4) */
int gg_parse_pair(const char *s, int *a, int *b);

/* Checks a tile against the type and window the op expects. */
gg_status gg_op_check_tiles(gg_op *op, const gg_tile *src, const gg_tile *dst);
/* The part of src that the output tile dst needs (gg_op_source_window),
 * as a view into src's memory.  Valid only after gg_op_check_tiles. */
gg_tile gg_op_source_view(const gg_op *op, const gg_tile *src, const gg_tile *dst);
/* The same for a pixel-interleaved tile of n samples a pixel, returned as
 * a plain tile of samples (width and stride in samples, x0 in pixels),
 * ready for gg_rt_write_tile. */
gg_tile gg_op_interleaved_view(const gg_op *op, const gg_tile *src, int n, const gg_tile *dst);
/* The device part of a one-input, one-output tile op: uploads the source
 * view (scratch slot 0), launches `kernel` over dst's grid with the
 * buffers (source, output) (output in slot 1) and downloads dst. */
gg_status gg_op_run_kernel(gg_context *ctx, const gg_tile *view, gg_tile *dst, int kernel,
                           const void *params, size_t params_size);
/* Fills a tile with the output nodata value. */
void gg_op_fill_nodata(const gg_op *op, gg_tile *dst);
/* Fills a tile with a value (Byte tiles take it as an integer). */
void gg_tile_fill(gg_tile *dst, double value);
/* Checks one source tile against the window the op needs (any band). */
gg_status gg_op_check_source(gg_op *op, const gg_tile *src, const gg_window *need);

extern const gg_op_class gg_op_multilook;
extern const gg_op_class gg_op_rotate;
extern const gg_op_class gg_op_radnorm;
extern const gg_op_class gg_op_coherence;
extern const gg_op_class gg_op_ptsel;
extern const gg_op_class gg_op_xcorr;
extern const gg_op_class gg_op_resample;

#endif
