/*
 * gg_ortho_buffers.h -- the host buffers of gdal_ortho's pipelines (source
 * strips the readers fill and the device uploads, output blocks the device
 * downloads into and the writer writes), kept and reused across blocks,
 * scenes and calls.
 *
 * Fresh buffers of a few MB come from mmap and are page-faulted in on first
 * touch; pageable ones also cost the CUDA backend a staging copy each way
 * (about 0.5 GB of memory traffic per 8192^2 scene).  A buffer may be
 * page-locked (gg_host_alloc on a context): the copy engine then reads and
 * writes it directly.  gdal_ortho pins them: since the CUDA backend pins
 * huge-page mappings (session 20) it costs less than the staging it saves,
 * even for one scene in one process (bench/RESULTS.md, session 23).
 *
 * Buffers kept: up to ggo_buffers_keep bytes; a request takes a kept buffer
 * of the same kind (pageable, or page-locked through the same context) of
 * its size up to 5/4 of it.  Thread-safe (one mutex).  Page-locked buffers
 * are freed through their context: ggo_buffers_release(ctx) before that
 * context is destroyed.
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_BUFFERS_H
#define GG_ORTHO_BUFFERS_H

#include "geogpu.h"

#include <stddef.h>

/* A buffer of at least bytes: page-locked through pin (NULL: pageable;
 * pageable as well when pinning fails).  NULL when out of memory. */
void *ggo_buffer_get(gg_context *pin, size_t bytes);

/* Gives a buffer from ggo_buffer_get back (kept, or freed when the kept
 * ones reach the limit).  NULL: nothing. */
void ggo_buffer_put(void *p);

/* At most this many bytes kept (frees kept buffers beyond it). */
void ggo_buffers_keep(size_t bytes);

/* Frees the kept pageable buffers and those page-locked through ctx (ctx
 * NULL: the pageable ones only). */
void ggo_buffers_release(gg_context *ctx);

/* Frees every kept buffer, the page-locked ones through the contexts that
 * allocated them, which must all still exist. */
void ggo_buffers_release_all(void);

#endif
