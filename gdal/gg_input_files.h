/*
 * gg_input_files.h -- the files a run reads, and the check every output
 * name passes before anything is written: an output that is (the same
 * device and inode, links resolved) or would replace a file an input
 * reads is refused, however the input was named (a file, a GG: string, a
 * .ggvrt, a GDAL VRT, a GMTSAR PRM and the SLC it names); so is an
 * existing output that is not a regular file (a device, a FIFO, a folder).
 *
 * MIT licence.
 */
#ifndef GG_INPUT_FILES_H
#define GG_INPUT_FILES_H

#include "gdal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gg_input_files gg_input_files;

/* An empty list; NULL when out of memory. */
gg_input_files *gg_input_files_new(void);
void gg_input_files_free(gg_input_files *list);

/* Adds one file read on behalf of the source named source (as the user
 * wrote it).  0, or 1 when out of memory. */
int gg_input_files_add_path(gg_input_files *list, const char *path, const char *source);

/* Adds every file the opened dataset ds reads (GDALGetFileList: a VRT's
 * sources, a GG dataset's inputs, recursively) and, when it names a file,
 * source itself.  0, or 1 when out of memory. */
int gg_input_files_add_dataset(gg_input_files *list, GDALDatasetH ds, const char *source);

/* The source whose files include path (the same existing file, or the same
 * name for a file that does not exist), or NULL. */
const char *gg_input_files_reader(const gg_input_files *list, const char *path);

/* Whether a and b name one file: the same existing file (device and
 * inode), or, where it does not exist, the same name in the same folder. */
int gg_input_files_same(const char *a, const char *b);

/* The check of one output name before anything is written: 0 when path may
 * be written; 1 with a one-line reason in err (errlen bytes) when path
 * exists and is not a regular file ("'<path>' is not a regular file") or
 * when an input reads it ("<what> '<path>' is read by the source '<src>';
 * inputs are never overwritten").  what: "the destination", "the -fit
 * file", ...; list may be NULL (the regular-file check alone). */
int gg_input_files_check_output(const gg_input_files *list, const char *what, const char *path,
                                char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GG_INPUT_FILES_H */
