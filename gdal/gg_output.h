/*
 * gg_output.h -- the safe output path of every file a geogpu run writes:
 * written under a temporary name in its destination's folder, renamed over
 * the destination on success, removed on failure -- and, in a program that
 * asked for it (gg_output_catch_signals), removed when SIGINT, SIGTERM or
 * SIGHUP ends the process, so that an interrupted run leaves nothing
 * behind either.
 *
 * MIT licence.
 */
#ifndef GG_OUTPUT_H
#define GG_OUTPUT_H

#include "gdal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "<dir>/.<stem>.tmp<pid>.<ext>" for dst: same folder (the rename is a
 * rename, not a copy), same extension (drivers that look at it behave).
 * The name is tracked for removal on a signal until it is committed or
 * discarded.  CPLFree() it. */
char *gg_output_temporary_name(const char *dst);

/* Replaces dst by the finished (closed) temporary tmp: an existing dst is
 * deleted with its own driver (all its files) unless single_file (then
 * rename() replaces it atomically), then tmp is renamed: a plain rename
 * when single_file, else GDALRenameDataset with drv (NULL: the driver
 * GDAL identifies), all the dataset's files.  0 on success; 1 with the reason in err
 * (errlen bytes), tmp left for gg_output_discard. */
int gg_output_commit(GDALDriverH drv, const char *tmp, const char *dst, int single_file,
                     char *err, size_t errlen);

/* Removes whatever a failed write left under tmp (with drv: all the
 * dataset's files), quietly, and stops tracking it. */
void gg_output_discard(GDALDriverH drv, const char *tmp);

/* For programs (never a library call inside someone else's process):
 * SIGINT, SIGTERM and SIGHUP, where their disposition is the default one,
 * remove the tracked temporaries (the file and its .aux.xml) and then end
 * the process as the signal would have.  Idempotent. */
void gg_output_catch_signals(void);

#ifdef __cplusplus
}
#endif
#endif /* GG_OUTPUT_H */
