/*
 * mrr2_file.h -- Metek MRR-2 raw spectra files (.raw, or gzipped .raw.gz)
 * read through GDAL's virtual file system and parsed by libgeogpu
 * (gg_mrr2_parse).  Used by the FMCW driver (MRR-2 files open as time x
 * height products) and gdal_fmcw.
 *
 * MIT licence.
 */
#ifndef GG_MRR2_FILE_H
#define GG_MRR2_FILE_H

#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the file (gzipped or not; "FMCW:" prefix allowed) starts with an
 * MRR-2 record header ("MRR "), else 0.  Quiet: reports nothing. */
int MRR2FileIdentify(const char *pszFilename);

/* Reads and parses the whole file.  NULL after one CPLError line naming the
 * file (and the line, for a parse error): unreadable, truncated or corrupt
 * gzip stream, not MRR-2 spectra. */
gg_mrr2 *MRR2FileRead(const char *pszFilename);

#ifdef __cplusplus
}
#endif
#endif
