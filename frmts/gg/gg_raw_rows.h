/*
 * gg_raw_rows.h -- from C: whether a raster lies in its file as whole rows
 * of a type (GGStackRowsFind of gg_stack_rows.h: one uncompressed
 * GeoTIFF, pixel-interleaved, this machine's byte order, full-width strips
 * that follow each other).  gdal_ortho's mapped source uses it.
 *
 * MIT licence.
 */
#ifndef GG_RAW_ROWS_H
#define GG_RAW_ROWS_H

#include "gdal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when ds lies in its file as rows of `type` (every band of a pixel
 * together): *offset is where row 0 starts, *row_bytes the size of a row;
 * else 0 (GG_RAW_READS=NO: always 0).  Milliseconds for thousands of
 * strips: not on a hot thread. */
int gg_raw_rows_find(GDALDatasetH ds, GDALDataType type, unsigned long long *offset,
                     size_t *row_bytes);

#ifdef __cplusplus
}
#endif
#endif
