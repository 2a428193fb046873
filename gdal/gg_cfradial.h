/*
 * gg_cfradial.h -- writes a radar product dataset (the FMCW driver's: MRR-2
 * time x height, or the polar sector products) as CF/Radial 1.4 netCDF,
 * the form Py-ART (pyart.io.read_cfradial) and xradar
 * (open_cfradial1_datatree) read.  Through libnetcdf's C API: GDAL's
 * netCDF driver writes CF grids, not CfRadial's ray/range/sweep layout.
 *
 * MIT licence.
 */
#ifndef GG_CFRADIAL_H
#define GG_CFRADIAL_H

#include "gdal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One sweep of the dataset's rows (rays) and columns (gates).  The dataset
 * must carry the metadata TIME_S (per row, seconds since 1970 UTC) and
 * RANGE_M (per column, m); ELEVATION_DEG (90: a vertically pointing
 * sweep), AZIMUTH_DEG (per row; else 0), LATITUDE, LONGITUDE, ALTITUDE
 * and INSTRUMENT are used when present.  Bands become fields by their
 * description: CfRadial short names (DBZ, VEL, ...) as they are; the
 * MRR-2 products ZE -> DBZ, W -> VEL = -W (CfRadial's velocity is positive
 * away from the radar; W is positive falling, toward it), others by their
 * own names.  Written to path directly (callers write a temporary and
 * rename).  0, or 1 after one CPLError (the file removed). */
int gg_cfradial_write(GDALDatasetH ds, const char *path, GDALProgressFunc progress,
                      void *progress_arg);

#ifdef __cplusplus
}
#endif
#endif
