/*
 * runtime.h -- internal runtime API used by the op implementations
 * (algorithms/).  Not installed.
 */
#ifndef GG_RUNTIME_H
#define GG_RUNTIME_H

#include "geogpu.h"
#include "backend.h"

#define GG_SCRATCH_SLOTS 8

/* Sets ctx's error message and returns status s. */
gg_status gg_rt_fail(gg_context *ctx, gg_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Turns a backend return code into a gg_status, copying the device's
 * message into the context on failure. */
gg_status gg_rt_check(gg_context *ctx, int backend_rc, const char *what);

const gg_backend *gg_rt_vt(const gg_context *ctx);
gg_dev *gg_rt_dev(const gg_context *ctx);
gg_mem *gg_rt_mem(const gg_buffer *b);

/* A device buffer of at least `bytes`, kept by the context in `slot` and
 * reused by later calls (allocation is slow on GPUs). Valid until the next
 * call with the same slot. */
gg_status gg_rt_scratch(gg_context *ctx, int slot, size_t bytes, gg_buffer **out);

/* Host tile <-> device rows from byte `offset`, device rows `dev_pitch`
 * bytes apart (0: packed, the tile's row length). */
gg_status gg_rt_write_tile(gg_context *ctx, gg_buffer *b, size_t offset, size_t dev_pitch,
                           const gg_tile *t);
gg_status gg_rt_read_tile(gg_context *ctx, const gg_buffer *b, size_t offset, size_t dev_pitch,
                          gg_tile *t);
/* Copies a host tile into a packed device buffer (scratch slot). */
gg_status gg_rt_upload_tile(gg_context *ctx, int slot, const gg_tile *t, gg_buffer **out);
/* Copies a packed device buffer into a host tile (honours its stride). */
gg_status gg_rt_download_tile(gg_context *ctx, const gg_buffer *b, gg_tile *t);

/* Fills `count` floats from byte `offset` of b with value v. */
gg_status gg_rt_fill_float(gg_context *ctx, gg_buffer *b, size_t offset, float v, size_t count);

gg_status gg_rt_launch(gg_context *ctx, int kernel, int nx, int ny, const void *params,
                       size_t params_size, gg_buffer *const *bufs, int nbufs);
gg_status gg_rt_finish(gg_context *ctx);

#endif
