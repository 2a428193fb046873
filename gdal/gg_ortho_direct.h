/*
 * gg_ortho_direct.h -- writes the pixels of an uncompressed, striped GeoTIFF
 * that GDAL created, straight into the file at the strip offsets GDAL
 * reports (pwrite, several threads), instead of through GDAL's block cache
 * and libtiff one strip at a time; and reads a source of that kind the
 * same way (pread), for the strip readers.
 *
 * GDAL does everything but the pixels: it creates the file (header, IFD,
 * georeferencing, nodata, colour interpretation) and, when the empty file
 * is closed, allocates every strip (extending the file, zeros, no data
 * written).  The file is then byte for byte what GDAL writes when given the
 * same pixels (tests/python/test_ortho_writer.py compares the two).  Any
 * layout this writer does not handle (compression, tiles, a nonzero nodata
 * GDAL would fill the strips with, a /vsi path, another format) is refused
 * up front with the reason, and the caller uses GDAL's writer.
 *
 * Errors: functions returning int return 0 on success and 1 with one line
 * in the caller's buffer.
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_DIRECT_H
#define GG_ORTHO_DIRECT_H

#include "gdal.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggo_direct ggo_direct;

/* Whether an output of `format` (NULL: GTiff) with creation options co,
 * at path, with the given nodata, can be written directly.  1 = yes; 0 =
 * no, why says why (for -v). */
int ggo_direct_eligible(const char *format, char **co, const char *path, int has_nodata,
                        double nodata, char *why, size_t whylen);

/* Opens the layout of the (closed, empty) file GDAL created at path:
 * strip offsets, interleave and byte order; checks size, bands and type.
 * *out NULL and 1 with the reason when the layout is not one this writer
 * handles (the caller then writes through GDAL).  Its threads come from the
 * layout: one unless rows are converted (interleave, byte swap). */
int ggo_direct_open(const char *path, int width, int height, int nbands, GDALDataType type,
                    ggo_direct **out, char *why, size_t whylen);

/* Writes output rows [y0, y0 + rows) of every band; planes holds nbands
 * planes of width x rows samples in the host's byte order.  Thread-safe
 * for disjoint row ranges only if the caller serialises (one writer). */
int ggo_direct_write(ggo_direct *d, int y0, int rows, const void *planes, char *err,
                     size_t errlen);

/* The same layout read from a source: an uncompressed striped GeoTIFF of
 * width x height x nbands of type, one band or band-interleaved, in the
 * host's byte order, opened for reading.  *out NULL and 1 with the reason
 * otherwise, and the caller reads through GDAL.  Why: GDAL reads a
 * one-row-strip file a strip at a time, loading each strip's offset on
 * first use; an 8192^2 UInt16 scene (8192 strips) took 24 ms through
 * GDAL's direct I/O against 10.5 ms in preads of 4 MiB (development
 * machine, bench/RESULTS.md, session 26). */
int ggo_direct_open_source(const char *path, int width, int height, int nbands,
                           GDALDataType type, ggo_direct **out, char *why, size_t whylen);

/* Reads source rows [y0, y0 + rows) of every band into buf, band k at
 * k * band_space bytes (rows of width samples).  Thread-safe (preads). */
int ggo_direct_read(const ggo_direct *d, int y0, int rows, void *buf, size_t band_space,
                    char *err, size_t errlen);

/* Strips and layout, for -v. */
const char *ggo_direct_describe(const ggo_direct *d);

/* Closes the file (reporting a failed close of an output); frees d.  d
 * NULL: 0. */
int ggo_direct_close(ggo_direct *d, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
