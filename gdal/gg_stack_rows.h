/*
 * gg_stack_rows.h -- a stack op's input read as it lies in its file.
 *
 * An uncompressed, pixel-interleaved GeoTIFF (GDAL's default for a
 * multi-band GTiff) of the type the op reads, in this machine's byte
 * order, cut in full-width strips that follow each other, holds each row
 * of the stack exactly as gg_op_run_stack_interleaved takes it.  Reading
 * a window is then one copy from the page cache, where GDAL's RasterIO
 * de-interleaves it band by band (1.7 GB/s a thread against 4.7 GB/s on
 * the development machine).  The same test as geogpu.distributed's
 * _file_rows, which does this for Dask tile tasks.
 *
 * MIT licence.
 */
#ifndef GG_STACK_ROWS_H
#define GG_STACK_ROWS_H

#include "gdal_priv.h"
#include "geogpu.h"

#include <string>

struct GGStackRows
{
    std::string osPath{};       // the file
    vsi_l_offset nOffset = 0;   // of row 0
    size_t nRowBytes = 0;       // a whole row, every band
    size_t nPixelBytes = 0;     // one pixel, every band
};

/* Whether poDS lies in its file as eType pixel-interleaved rows (then
 * *psRows says where); false for anything else.  Read so, the paper's
 * stack took gdal_ptsel 1.9-2.0 s against 2.7-2.9 s through RasterIO
 * (bench/RESULTS.md, session 20).  The file's strip table is read from its first
 * IFD (geogpu_gdal.h), checked against GDAL's first and last blocks:
 * call once per dataset. */
bool GGStackRowsFind(GDALDataset *poDS, GDALDataType eType, GGStackRows *psRows);

/* Window sWin, whole rows of the file (the strips of a stack op are), into
 * pabyDst, every band of a pixel together, read by up to nThreads threads
 * in slices of rows.  A short file is reported (CPLError) as CE_Failure. */
CPLErr GGStackRowsRead(const GGStackRows &sRows, const gg_window &sWin, GByte *pabyDst,
                       int nThreads);

#endif /* GG_STACK_ROWS_H */
