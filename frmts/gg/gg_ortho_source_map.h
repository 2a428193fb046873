/*
 * gg_ortho_source_map.h -- a scene's source handed to the device from the
 * page cache: the file mapped read-only and registered with the backend
 * (gg_host_register), so that gdal_ortho's resident-source pipeline uploads
 * its strips with no reader threads and no host copy.
 *
 * Why: four ortho workers on one host are bound by host memory traffic
 * (bench/RESULTS.md, sessions 16-21).  The readers' pread moved every
 * source through memory twice more (134 MB read and written for an 8192^2
 * UInt16 scene) and took 33 ms of reader threads per scene with one
 * worker, 60 ms with four.  Mapping and registering a resident file takes
 * 3-7 ms on one thread (bench/probe_map.c).
 *
 * Used when the source has one band and lies in its file as rows of its
 * type (gg_raw_rows_find: an uncompressed GeoTIFF in full-width strips that
 * follow each other, in this machine's byte order), every page of it is in
 * the page cache already (tmpfs, or a file read recently: the readers stay
 * the faster way from a disk), and the backend registers (CUDA with
 * read-only registration; the CPU backend, which reads host memory itself).
 * GG_RAW_READS=NO: never (the readers, for comparison).
 *
 * The layout look-up, mapping and registration (about 0.02 s for an
 * 8192^2 scene of 1-row strips, most of it GDAL's strip offsets) run on a
 * thread of their own while the scene sets up (0.03-0.04 s).
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_SOURCE_MAP_H
#define GG_ORTHO_SOURCE_MAP_H

#include "gdal.h"
#include "geogpu.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggo_source_map ggo_source_map;

/* Starts mapping the source at `path` on a thread of its own, beside the
 * scene's set-up; it registers through ctx when ctx is not NULL (a context
 * that already exists), else ggo_source_map_rows does.  NULL when it
 * cannot apply at all (GG_RAW_READS=NO, no memory). */
ggo_source_map *ggo_source_map_begin(const char *path, gg_context *ctx);

/* Waits for the thread; the registered rows of the source (row y at
 * rows + y * row_bytes), or NULL when it does not apply (the caller reads
 * as before): not one band of width x height of `type` lying as rows in
 * a resident file.  ctx: the scene's context, for a registration still to
 * do.  *seconds: the time the mapping took, on its thread and here. */
const unsigned char *ggo_source_map_rows(ggo_source_map *m, gg_context *ctx, int width,
                                         int height, GDALDataType type, size_t *row_bytes,
                                         double *seconds);

/* Unregisters (once no transfer reads the rows any more) and unmaps; frees m.
 * m NULL: nothing. */
void ggo_source_map_end(ggo_source_map *m);

#ifdef __cplusplus
}
#endif
#endif
