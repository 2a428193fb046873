/*
 * fmcw_file.h -- the geogpu FMCW raw-sector NetCDF layout (docs/fmcw_format.md)
 * read and written through GDAL's multidimensional API (GDAL's netCDF
 * driver), so that libgeogpu needs neither GDAL nor libnetcdf.  Used by the
 * FMCW driver, gdal_fmcw and the tests.
 *
 * MIT licence.
 */
#ifndef GG_FMCW_FILE_H
#define GG_FMCW_FILE_H

#include "gdal.h"
#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct FMCWFile FMCWFile;

/* Site and scan metadata beside the processing parameters. */
typedef struct FMCWSite {
    double latitude, longitude, altitude;   /* degrees, degrees, m */
    double beam_width;                      /* degrees (azimuth) */
} FMCWSite;

/* Opens a file (or "FMCW:<file>") and checks the layout: every channel
 * variable present with dimensions (sector, sweep, sample), every required
 * radar parameter present and valid.  NULL after a one-line CPLError
 * naming the problem. */
FMCWFile *FMCWFileOpen(const char *pszFilename);
void FMCWFileClose(FMCWFile *f);
int FMCWFileSectorCount(const FMCWFile *f);
const gg_fmcw_params *FMCWFileParams(const FMCWFile *f);
const FMCWSite *FMCWFileSite(const FMCWFile *f);
const double *FMCWFileAzimuth(const FMCWFile *f);     /* [sectors] */
const double *FMCWFileElevation(const FMCWFile *f);   /* [sectors] */
const double *FMCWFileTime(const FMCWFile *f);        /* [sectors], s since 1970 */
/* Reads sectors [first, first + n) into the library's layout
 * (gg_fmcw_sector_values int16 per sector).  CE_Failure after a CPLError. */
CPLErr FMCWFileRead(FMCWFile *f, int first, int n, int16_t *out);

/* Writes a file of nsectors sectors; get_sector(k, buf, user) fills sector
 * k (gg_fmcw_sector_values values) and returns 0 on success.  Written to
 * pszFilename directly: callers write to a temporary name and rename. */
CPLErr FMCWFileWrite(const char *pszFilename, const gg_fmcw_params *p, const FMCWSite *site,
                     int nsectors, const double *azimuth, const double *elevation,
                     const double *time,
                     int (*get_sector)(int k, int16_t *buf, void *user), void *user,
                     GDALProgressFunc progress, void *progress_arg);

#ifdef __cplusplus
}
#endif
#endif
