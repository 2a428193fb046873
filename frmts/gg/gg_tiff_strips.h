/*
 * gg_tiff_strips.h -- a TIFF's strip table (StripOffsets, StripByteCounts,
 * RowsPerStrip of its first image), read from its header and first IFD in
 * a few preads.
 *
 * Why: GDAL gives a strip's offset as the metadata item BLOCK_OFFSET_0_<j>,
 * one call (and one string) per strip: 5.6 ms for the 8504 one-row strips
 * of an 8192^2 orthoimage on the development machine, most of the direct
 * writer's opening, on the scene set-up thread that bounds a batch
 * (bench/RESULTS.md, session 21).  The GG driver's stack read as it lies
 * (gg_stack_rows.cpp) finds its strips here too; geogpu.distributed's
 * Python tile reads parse the same table themselves (reads._strip_offsets:
 * the Python package does not reach the plugin's code).
 *
 * Classic TIFF and BigTIFF, either byte order.  Every count, offset and
 * size is checked against the file before it is used; the caller still
 * checks that the table is the image GDAL sees (its first and last strips
 * against GDAL's items).
 *
 * MIT licence.
 */
#ifndef GG_TIFF_STRIPS_H
#define GG_TIFF_STRIPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gg_tiff_strips {
    uint64_t *offsets;       /* n entries (malloc'd) */
    uint64_t *counts;        /* n entries (malloc'd) */
    uint32_t n;
    uint32_t rows_per_strip; /* 0xFFFFFFFF when the tag is absent (one strip) */
} gg_tiff_strips;

/* Reads the strip table of the TIFF open as fd (fsize bytes).  0 on
 * success (free with gg_tiff_strips_free); 1 with the reason in why when
 * the file is not a striped TIFF this reader understands. */
int gg_tiff_strips_read(int fd, uint64_t fsize, gg_tiff_strips *out, char *why, size_t whylen);

void gg_tiff_strips_free(gg_tiff_strips *s);

#ifdef __cplusplus
}
#endif
#endif
