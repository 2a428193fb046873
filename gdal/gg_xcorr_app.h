/*
 * gg_xcorr_app.h -- gdal_xcorr's bodies as library functions (the GDAL
 * layer's internal header; the main in gdal_plugins/apps/gdal_xcorr.c is a
 * front end over them):
 *   - the default (quality) mode: the xcorr op as a gg_app utility, plus
 *     its window table (-table, any OGR vector format, written after the
 *     raster);
 *   - -mode gmtsar: GMTSAR xcorr's interface, in GDAL's style of
 *     GDALWarpAppOptionsNew + GDALWarp: options from argv, then a call.
 *
 * MIT licence.
 */
#ifndef GG_XCORR_APP_H
#define GG_XCORR_APP_H

#include "gg_app.h"

#include "gdal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- quality mode */

/* gdal_xcorr's spec.  register_drivers is NULL: the GDAL layer sits below
 * the drivers, so the main sets it (a copy of the spec with
 * GGRegisterDrivers) before gg_app_main.  The window table (-table: one
 * point per window, the seven bands as fields) is its side output,
 * written from the raster and renamed with it, or removed with it. */
const gg_app_spec *gg_xcorr_app_spec(void);

/* Before gg_app_main: 1 after reporting that the -table file (the last
 * -table of argv) cannot be created beside its path, so that no output at
 * all is left; 0 otherwise, and always 0 under --help, --version,
 * --describe or gg_app_parse_only. */
int gg_xcorr_app_table_check(int argc, char **argv);

/* ----------------------------------------------------- -mode gmtsar */

typedef struct gg_xcorr_gmtsar_app_options gg_xcorr_gmtsar_app_options;

/* Parses the arguments of -mode gmtsar (argv[0] is skipped: the program,
 * or "gmtsar"): <master.PRM> <aligned.PRM> [-nx <n>] [-ny <n>] [-xsearch
 * <n>] [-ysearch <n>] [-range_interp <n> | -norange] [-interp <n> |
 * -nointerp] [-noshift] [-zero_is_data] [-device <dev>] [-o
 * <freq_xcorr.dat>] [-q].
 * NULL with *usage_error 1 after reporting a usage error (one line), NULL
 * with *usage_error 0 after printing --help; else the options (free with
 * gg_xcorr_gmtsar_app_options_free). */
gg_xcorr_gmtsar_app_options *gg_xcorr_gmtsar_app_options_new(int argc, char **argv,
                                                             int *usage_error);
void gg_xcorr_gmtsar_app_options_free(gg_xcorr_gmtsar_app_options *o);

/* Reads the two PRM files, correlates the pair and writes the rows (x xoff
 * y yoff corr, one line per patch) to the -o file (freq_xcorr.dat) through
 * a temporary name, renamed when complete.  ctx: the device to run on
 * (kept); NULL starts the options' -device on its own thread while the
 * PRMs are read, prints its fallback notice unless -q, and destroys it.
 * progress: NULL or e.g. GDALTermProgress (not called under -q).  Errors
 * are reported as one line on stderr; returns the exit status (0, 1). */
int gg_xcorr_gmtsar_app(const gg_xcorr_gmtsar_app_options *o, gg_context *ctx,
                        GDALProgressFunc progress, void *progress_data);

#ifdef __cplusplus
}
#endif
#endif /* GG_XCORR_APP_H */
