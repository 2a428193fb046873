/*
 * gg_fmcw_app.h -- gdal_fmcw's bodies as library functions (the GDAL
 * layer's internal header; the main in gdal_plugins/apps/gdal_fmcw.c is a
 * front end over them):
 *   - the products: a gg_app utility whose source is opened as
 *     "FMCW:<file>" through GDALOpenEx with the FMCW driver's open options
 *     (PRODUCTS, DEVICE, GRID_RES, MAX_RANGE; docs/driver_fmcw.md), so the
 *     driver must be registered (the main's register_drivers);
 *   - -simulate: a simulated raw file (docs/fmcw_format.md) through
 *     fmcw_file.h, in GDAL's style of GDALWarpAppOptionsNew + GDALWarp.
 *
 * MIT licence.
 */
#ifndef GG_FMCW_APP_H
#define GG_FMCW_APP_H

#include "gg_app.h"

#include "gdal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- products */

/* gdal_fmcw's spec.  register_drivers is NULL: the GDAL layer sits below
 * the drivers, so the main sets it (a copy of the spec with
 * GGRegisterDrivers, which registers the FMCW driver) before
 * gg_app_main. */
const gg_app_spec *gg_fmcw_app_spec(void);

/* ------------------------------------------------------- -simulate */

typedef struct gg_fmcw_simulate_app_options gg_fmcw_simulate_app_options;

/* Parses gdal_fmcw -simulate's arguments (argv[0] is skipped; "-simulate"
 * itself is ignored wherever it is): [-sectors <n>] [-sweeps <M>]
 * [-samples <N>] [-gates <G>] [-bandwidth <Hz>] [-carrier <Hz>]
 * [-sweep_time <s>] [-elevation <deg>] [-noise <counts>] [-seed <n>]
 * [-target <range_m>,<azimuth_deg>,<dbz>]... [-lat <deg>] [-lon <deg>] [-q]
 * <dst.nc>.  NULL with *usage_error 1 after reporting an error (one line),
 * NULL with *usage_error 0 after printing --help; else the options (free
 * with gg_fmcw_simulate_app_options_free). */
gg_fmcw_simulate_app_options *gg_fmcw_simulate_app_options_new(int argc, char **argv,
                                                               int *usage_error);
void gg_fmcw_simulate_app_options_free(gg_fmcw_simulate_app_options *o);

/* Writes the simulated file to dst (NULL: the command line's <dst.nc>)
 * through a temporary name in its folder, renamed when complete.  GDAL's
 * drivers must be registered (GDALAllRegister).  progress: NULL or e.g.
 * GDALTermProgress (not called under -q).  Errors are reported as one line
 * on stderr (GDAL's own messages are kept quiet meanwhile); returns the
 * exit status (0, 1). */
int gg_fmcw_simulate_app(const char *dst, const gg_fmcw_simulate_app_options *o,
                         GDALProgressFunc progress, void *progress_data);

#ifdef __cplusplus
}
#endif
#endif /* GG_FMCW_APP_H */
