/*
 * gg_ortho_run.h -- gdal_ortho as a function: the whole utility (option
 * parsing, the reader / device / writer pipeline, the safe output path)
 * behind one flat entry point, so that a long-lived process -- a Dask
 * worker of geogpu.distributed -- can orthorectify scene after scene on one
 * device context it keeps, instead of starting a gdal_ortho process (and a
 * CUDA context, 0.25-0.57 s) per task.
 *
 * gdal_ortho's main is gg_ortho_run(argc, argv, NULL, NULL, 0) followed by
 * GDALDestroyDriverManager().  The function is exported from the GDAL
 * plugin (gdal_GeoGPU.so) with default visibility for ctypes.
 *
 * Reentrancy: no process-wide state survives a call except GDAL's driver
 * registration (GDALAllRegister), what GDAL's generic options given in argv
 * set (--config K V: keep them out of a library call), and the pipelines'
 * kept host buffers (gg_ortho_buffers.h: up to about 1 GB, mutex-protected;
 * with a caller's context, page-locked through it unless GG_ORTHO_PINNED=0;
 * gg_ortho_run_release frees them, and must run before that context is
 * destroyed).  No exit(), no signal handler.  Each thread of a call that does
 * GDAL work pushes its own error handler (CPLPushErrorHandlerEx, the call's
 * state as user data) and pops it before it ends.  GDAL's block cache size,
 * set to 256 MB for the call unless GDAL_CACHEMAX is configured, is put back
 * on return.  Calls on different contexts may run at once in different
 * threads (the cache size is then the last one restored); one context must
 * not be used by two calls at once (contexts are not thread-safe).
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_RUN_H
#define GG_ORTHO_RUN_H

#include <stddef.h>

#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GG_ORTHO_RUN_API __attribute__((visibility("default")))

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
GG_ORTHO_RUN_API int gg_ortho_run(int argc, char **argv, gg_context *ctx, char *err,
                                  size_t errlen);

/* Frees the host buffers kept for the next call, the page-locked ones
 * through the contexts they were allocated on: call it before destroying a
 * context given to gg_ortho_run (runs that create their own context free
 * theirs before returning). */
GG_ORTHO_RUN_API void gg_ortho_run_release(void);

#ifdef __cplusplus
}
#endif
#endif /* GG_ORTHO_RUN_H */
