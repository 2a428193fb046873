/*
 * runtime.h -- internal runtime API used by the op implementations
 * (algorithms/).  Not installed.
 */
#ifndef GG_RUNTIME_H
#define GG_RUNTIME_H

#include "geogpu.h"
#include "backend.h"

/* Slots 0-7: any op, within one call.  Slots 8-15: an op's asynchronous
 * runs (gg_op_submit_stack*), whose buffers outlive the call. */
#define GG_SCRATCH_SLOTS 16

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

/* The copy queue (backend write2d_async ...): gg_rt_write_tile_async
 * queues an upload on it, after the main queue has reached mark `after`
 * (-1: at once), reaching mark `done` when landed; gg_rt_read_tile_after
 * downloads (blocking) once the main queue has reached mark `after`,
 * whatever was queued on the main queue since (-1: gg_rt_read_tile, after
 * everything queued); gg_rt_mark records a mark
 * on the main queue, gg_rt_wait_mark makes it wait for one.  A device
 * with one queue copies at once, in order, and the marks are no-ops: the
 * same results, without overlap. */
int gg_rt_can_overlap(const gg_context *ctx);
gg_status gg_rt_write_tile_async(gg_context *ctx, gg_buffer *b, size_t offset, size_t dev_pitch,
                                 const gg_tile *t, int after, int done);
gg_status gg_rt_read_tile_after(gg_context *ctx, const gg_buffer *b, size_t offset,
                                size_t dev_pitch, gg_tile *t, int after);
gg_status gg_rt_mark(gg_context *ctx, int m);
gg_status gg_rt_wait_mark(gg_context *ctx, int m);
/* Device-to-device copy, in queue order. */
gg_status gg_rt_copy(gg_context *ctx, gg_buffer *dst, size_t dst_offset, const gg_buffer *src,
                     size_t src_offset, size_t bytes);
/* The op whose asynchronous runs are in flight on ctx (NULL: none): while
 * set, other ops must not use the context. */
const void *gg_rt_pipeline_owner(const gg_context *ctx);
void gg_rt_set_pipeline_owner(gg_context *ctx, const void *owner);

gg_status gg_rt_launch(gg_context *ctx, int kernel, int nx, int ny, const void *params,
                       size_t params_size, gg_buffer *const *bufs, int nbufs);
gg_status gg_rt_finish(gg_context *ctx);

#endif
