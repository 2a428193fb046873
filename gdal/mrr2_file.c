/*
 * mrr2_file.c -- Metek MRR-2 raw files through GDAL's virtual file system
 * (mrr2_file.h).  A gzipped file is read through /vsigzip/, so the whole
 * file need not be decompressed on disk; libgeogpu parses the text.
 *
 * MIT licence.
 */
#include "mrr2_file.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <stdlib.h>
#include <string.h>

static const char *strip_prefix(const char *name)
{
    return STARTS_WITH_CI(name, "FMCW:") ? name + 5 : name;
}

/* The path to read: /vsigzip/ in front of a gzip stream (by its magic
 * bytes, whatever the name ends with).  CPLFree() it; NULL if unreadable. */
static char *read_path(const char *name)
{
    VSILFILE *f = VSIFOpenL(name, "rb");
    if (!f)
        return NULL;
    unsigned char magic[2] = {0, 0};
    const size_t n = VSIFReadL(magic, 1, 2, f);
    VSIFCloseL(f);
    if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b && !STARTS_WITH(name, "/vsigzip/"))
        return CPLStrdup(CPLSPrintf("/vsigzip/%s", name));
    return CPLStrdup(name);
}

int MRR2FileIdentify(const char *pszFilename)
{
    const char *name = strip_prefix(pszFilename);
    CPLPushErrorHandler(CPLQuietErrorHandler);
    char *path = read_path(name);
    int yes = 0;
    if (path) {
        VSILFILE *f = VSIFOpenL(path, "rb");
        char head[4] = {0};
        if (f) {
            yes = VSIFReadL(head, 1, 4, f) == 4 && !memcmp(head, "MRR ", 4);
            VSIFCloseL(f);
        }
    }
    CPLFree(path);
    CPLPopErrorHandler();
    CPLErrorReset();
    return yes;
}

gg_mrr2 *MRR2FileRead(const char *pszFilename)
{
    const char *name = strip_prefix(pszFilename);
    /* GDAL's own messages ("decompression failed with z_err = -5") would
     * not name the file: quiet while reading, one line of ours after */
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();
    char *path = read_path(name);
    VSILFILE *f = path ? VSIFOpenL(path, "rb") : NULL;
    char *text = NULL;
    size_t len = 0, cap = 0;
    int failed = !f;
    while (f && !failed) {
        if (len + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            char *more = VSIRealloc(text, cap);
            if (!more) {
                failed = 2;
                break;
            }
            text = more;
        }
        const size_t want = cap - len, n = VSIFReadL(text + len, 1, want, f);
        len += n;
        if (CPLGetLastErrorType() == CE_Failure)
            failed = 1;
        else if (n < want)
            break; /* the end */
    }
    char why[512];
    snprintf(why, sizeof why, "%s", CPLGetLastErrorType() == CE_Failure ? CPLGetLastErrorMsg() : "");
    if (f)
        VSIFCloseL(f);
    CPLFree(path);
    CPLPopErrorHandler();
    CPLErrorReset();
    if (failed) {
        VSIFree(text);
        if (failed == 2)
            CPLError(CE_Failure, CPLE_OutOfMemory, "MRR-2: %s: out of memory", name);
        else if (!f)
            CPLError(CE_Failure, CPLE_OpenFailed, "MRR-2: %s: cannot be opened", name);
        else
            CPLError(CE_Failure, CPLE_FileIO, "MRR-2: %s: truncated or corrupt (%s)", name,
                     strstr(why, "decompression") ? "the gzip stream ends early or is damaged"
                                                  : why);
        return NULL;
    }
    gg_mrr2 *m = NULL;
    char err[512] = "";
    const gg_status s = gg_mrr2_parse(text, len, &m, err, sizeof err);
    VSIFree(text);
    if (s != GG_OK) {
        /* "MRR-2: line 14: ..." -> "MRR-2: <file>: line 14: ..." */
        const char *msg = STARTS_WITH(err, "MRR-2: ") ? err + 7 : err;
        CPLError(CE_Failure, CPLE_AppDefined, "MRR-2: %s: %s", name,
                 *msg ? msg : "not MRR-2 spectra");
        return NULL;
    }
    return m;
}
