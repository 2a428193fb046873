/*
 * gg_output.h -- the one output transaction of a geogpu run: every file a
 * run writes (rasters, band files, tables, JSON, PRM lines, PNGs, GGVRT)
 * is written under a temporary name in its destination's folder, and all
 * are put in place together in one commit step, or none is:
 *
 *  - the commit holds an advisory lock (flock) on each destination folder,
 *    so that concurrent runs on one destination end with one run's
 *    complete set, never a mix;
 *  - each existing destination (with the side files its driver lists, such
 *    as an old .aux.xml) is kept aside under a hidden name until every new
 *    file is in place; a failure on the way puts every old file back, so
 *    that nothing at a destination changes;
 *  - in a program that asked for it (gg_output_catch_signals), SIGINT,
 *    SIGTERM and SIGHUP remove the temporaries and end the process as the
 *    signal would; one arriving during a commit step waits until the step
 *    has finished (or rolled back), so an interrupted run leaves either
 *    the old set or the new one, and no temporary.
 *
 * MIT licence.
 */
#ifndef GG_OUTPUT_H
#define GG_OUTPUT_H

#include "gdal.h"
#include "geogpu_gdal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gg_output_set: new, add, count, temporary, commit, free -- public
 * (include/geogpu_gdal.h: the Python package writes its PNGs through
 * them). */

/* 0 when a file can be created in path's folder (a hidden probe, removed
 * at once), so that an unwritable side output fails before any work; 1
 * with "cannot write <what> '<path>': <reason>" in err. */
int gg_output_check_writable(const char *what, const char *path, char *err, size_t errlen);

/* One destination on its own (gdal_ortho's scenes), the same transaction:
 * gg_output_temporary_name gives the temporary (CPLFree() it),
 * gg_output_commit puts it and its side files in place (drv and
 * single_file are not needed: the files are found by the temporary's
 * name), gg_output_discard removes what a failed write left. */
char *gg_output_temporary_name(const char *dst);
int gg_output_commit(GDALDriverH drv, const char *tmp, const char *dst, int single_file,
                     char *err, size_t errlen);
void gg_output_discard(GDALDriverH drv, const char *tmp);

#ifdef __cplusplus
}
#endif
#endif /* GG_OUTPUT_H */
