/*
 * fmcw_driver.h -- C interface of the FMCW raster driver: raw FMCW
 * sectors (docs/fmcw_format.md) whose bands are the radar products,
 * computed lazily on the device (docs/driver_fmcw.md).
 *
 * MIT licence.
 */
#ifndef GG_FMCW_DRIVER_H
#define GG_FMCW_DRIVER_H

#include "gdal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the FMCW driver unless one of that name exists. */
void FMCWRegisterDriver(void);

/* Opens an FMCW file as a product dataset.
 *   products   : "DBZ,ZDR,..." or NULL/"" for all
 *   device     : as gg_context_create (NULL: GG_DEVICE, else auto)
 *   grid_res   : 0 for the polar raster (rows = sectors, columns = gates);
 *                > 0 for a PPI grid of that cell size (m), AEQD on the radar
 *   max_range  : grid extent (m); 0 = the last gate's ground range
 * NULL after a one-line CPLError.
 * The device starts on the first block read, or when the dataset is asked
 * for an item of its "GEOGPU" metadata domain: DEVICE (its description)
 * or DEVICE_NOTICE (the fallback notice under auto, "" when none); NULL
 * after a CPLError when the device cannot start. */
GDALDatasetH FMCWOpenProducts(const char *pszFilename, const char *products, const char *device,
                              double grid_res, double max_range);

#ifdef __cplusplus
}
#endif
#endif
