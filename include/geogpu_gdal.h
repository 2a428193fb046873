/*
 * geogpu_gdal.h -- the public C interface of geogpu's GDAL layer
 * (libgeogpu_gdal): what needs GDAL but is neither a driver nor a main.
 * The compute library's own interface is geogpu.h.
 *
 * MIT licence.
 */
#ifndef GEOGPU_GDAL_H
#define GEOGPU_GDAL_H

#include <stddef.h>
#include <stdint.h>

#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ gdal_ortho */

/* gdal_ortho as a function: the whole utility (option parsing, the
 * reader / device / writer pipeline, the safe output path) behind one flat
 * entry point, so that a long-lived process -- a Dask
 * worker of geogpu.distributed -- can orthorectify scene after scene on one
 * device context it keeps, instead of starting a gdal_ortho process (and a
 * CUDA context, 0.25-0.57 s) per task.
 *
 * gdal_ortho's main is gg_ortho_run(argc, argv, NULL, NULL, 0) followed by
 * GDALDestroyDriverManager().
 *
 * Reentrancy: no process-wide state survives a call except GDAL's driver
 * registration (GDALAllRegister), what GDAL's generic options given in argv
 * set (--config K V: keep them out of a library call), and the pipelines'
 * kept host buffers (gg_ortho_buffers.h: up to about 1 GB, mutex-protected;
 * with a caller's context, page-locked through it;
 * gg_ortho_run_release frees them, and must run before that context is
 * destroyed).  No exit(), no signal handler.  Each thread of a call that does
 * GDAL work pushes its own error handler (CPLPushErrorHandlerEx, the call's
 * state as user data) and pops it before it ends.  GDAL's block cache size,
 * set to 256 MB for the call unless GDAL_CACHEMAX is configured, is put back
 * on return.  Calls on different contexts may run at once in different
 * threads (the cache size is then the last one restored); one context must
 * not be used by two calls at once (contexts are not thread-safe).
 */

/* Runs gdal_ortho's command line; returns its exit status (0: every scene
 * written; 1: a usage error, a device that cannot start, or at least one
 * scene failed -- the others are still written, as gdal_ortho -outdir).
 *
 * argv:   exactly gdal_ortho's argv, argv[0] the program name; not modified.
 * ctx:    NULL: the device named by -device (else auto) is started on its own
 *         thread while the first scene is set up, and destroyed before the
 *         return, as gdal_ortho does.  Non-NULL: every scene runs on ctx
 *         (-device is then parsed but not used) and ctx is left as it is.
 * err:    NULL: error lines go to stderr, as gdal_ortho prints them.
 *         Non-NULL: the first error line ("ERROR 1: gdal_ortho: <scene>:
 *         <cause>") goes into err (errlen bytes, NUL-terminated) instead of
 *         stderr; warnings, -v output, progress and the batch summary still
 *         go to stderr / stdout. */
int gg_ortho_run(int argc, char **argv, gg_context *ctx, char *err, size_t errlen);

/* Frees the host buffers kept for the next call, the page-locked ones
 * through the contexts they were allocated on: call it before destroying a
 * context given to gg_ortho_run (runs that create their own context free
 * theirs before returning). */
void gg_ortho_run_release(void);

/* ------------------------------------------------------------ gdal_warp */

/* gdal_warp as a function: gdalwarp's command line (argv[0] the program
 * name, then gdalwarp's options, the sources and the destination), run on
 * the device with gdalwarp's answer (docs/gdal_warp.md).  ctx and err as
 * gg_ortho_run's: NULL ctx starts the device of -device (else auto) for the
 * call; non-NULL err takes the first error line instead of stderr.
 * Returns the exit status: 0 when the destination was written whole, 1
 * otherwise (nothing is left at the destination then). */
int gg_warp_run(int argc, char **argv, gg_context *ctx, char *err, size_t errlen);

/* ------------------------------------------------------ TIFF strip tables */

/* A TIFF's strip table (StripOffsets, StripByteCounts, RowsPerStrip of its
 * first image), read from its header and first IFD in a few preads.
 *
 * Why: GDAL gives a strip's offset as the metadata item BLOCK_OFFSET_0_<j>,
 * one call (and one string) per strip, which dominated opening a TIFF of
 * thousands of one-row strips.  gdal_ortho's direct writer, the stack
 * reads of processed datasets and geogpu.distributed's tile reads all find
 * their strips here.
 *
 * Classic TIFF and BigTIFF, either byte order.  Every count, offset and
 * size is checked against the file before it is used; the caller still
 * checks that the table is the image GDAL sees (its first and last strips
 * against GDAL's items).
 */

typedef struct gg_tiff_strips {
    uint64_t *offsets;       /* n entries (malloc'd) */
    uint64_t *counts;        /* n entries (malloc'd) */
    uint32_t n;
    uint32_t rows_per_strip; /* 0xFFFFFFFF when the tag is absent (one strip) */
} gg_tiff_strips;

/* Reads the strip table of the TIFF open as fd (fsize bytes).  GG_OK
 * (free with gg_tiff_strips_free); GG_ERR_UNSUPPORTED with the reason in
 * why when the file is not a striped TIFF this reader understands (or
 * cannot be read). */
gg_status gg_tiff_strips_read(int fd, uint64_t fsize, gg_tiff_strips *out, char *why,
                              size_t whylen);

void gg_tiff_strips_free(gg_tiff_strips *s);

/* ------------------------------------------------- stacks as they lie */

/* An uncompressed, pixel-interleaved GeoTIFF of Float32 or CFloat32 in this
 * machine's byte order, cut in full-width strips that follow each other,
 * holds each row of a stack exactly as gg_op_run_stack_interleaved takes
 * it: a window of rows is then one read from the file. */
typedef struct gg_stack_layout {
    uint64_t offset;  /* of row 0 in the file */
    size_t row_bytes; /* one whole row, every band */
    int bands;
} gg_stack_layout;

/* 1 when the raster at path lies so as type (GG_FLOAT32 or GG_CFLOAT32),
 * with *out filled; 0 for anything else (no error is raised).  Opens the
 * file with GDAL (registering its drivers if none are). */
int gg_stack_layout_find(const char *path, gg_type type, gg_stack_layout *out);

/* ------------------------------------------------ the output transaction */

/* Every file a geogpu run writes is written under a temporary name in its
 * destination's folder and all are put in place together in one commit
 * step, or none (gdal/gg_output.h tells how: folder locks, the old files
 * kept aside until the new ones are in place, signals). */

/* The files of one run, committed together. */
typedef struct gg_output_set gg_output_set;

/* An empty set; NULL when out of memory. */
gg_output_set *gg_output_set_new(void);

/* Adds the destination dst and returns the name to write it under:
 * "<dir>/.<stem>.tmp<pid>-<n>.<ext>", in dst's folder (the commit is a
 * rename, not a copy), with ext (NULL: dst's own extension, so that
 * drivers that look at it behave).  Every file whose name starts with
 * "<dir>/.<stem>.tmp<pid>-<n>." is part of it (a driver's side files:
 * .aux.xml, .hdr, .dbf) and goes to "<dir>/<stem>.<rest>".  The name
 * belongs to the set; NULL when out of memory. */
const char *gg_output_set_add(gg_output_set *set, const char *dst, const char *ext);

/* How many destinations the set has, and the temporary of the i-th (in
 * the order added). */
int gg_output_set_count(const gg_output_set *set);
const char *gg_output_set_temporary(const gg_output_set *set, int i);

/* Puts every written file in place, in one commit step.  0 on
 * success; 1 with the reason in err (errlen bytes, one line naming the
 * file): every destination is as it was before, the temporaries removed. */
int gg_output_set_commit(gg_output_set *set, char *err, size_t errlen);

/* Removes the temporaries of a set not committed, then frees it. */
void gg_output_set_free(gg_output_set *set);

/* For programs (never a library call inside someone else's process):
 * SIGINT, SIGTERM and SIGHUP, where their disposition is the default one,
 * remove the temporaries and then end the process as the signal would
 * have (after a commit step in progress).  Idempotent. */
void gg_output_catch_signals(void);

#ifdef __cplusplus
}
#endif
#endif /* GEOGPU_GDAL_H */
