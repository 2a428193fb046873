/*
 * gg_coreg_app.h -- gdal_coreg as library functions, in the style of
 * GDAL's utilities (GDALWarpAppOptionsNew + GDALWarp): the command line
 * parsed into an options object, then one call that runs it.  Internal to
 * the GDAL layer and its front ends (not installed).
 *
 * The operands stay file names (<primary> <secondary> <dst_dataset>), not
 * open datasets: the offsets step, the carrier estimate and the resample
 * step (gg_app) each open the inputs themselves, as gdal_coreg always did.
 *
 * The caller registers GDAL's drivers and the GG driver first
 * (GDALAllRegister, then GGRegisterDrivers), as gdal_coreg's main does.
 *
 * MIT licence.
 */
#ifndef GG_COREG_APP_H
#define GG_COREG_APP_H

#include "gg_app.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parsed command line of one gdal_coreg run, opaque. */
typedef struct gg_coreg_app_options gg_coreg_app_options;

/* Parses gdal_coreg's command line (argv[0] the program name, then flags
 * and the three operands), copying what it keeps.  --help, -h, -help,
 * --version, --utility_version and --describe anywhere make an options
 * object that gg_coreg_app answers through gg_app (usage, version, JSON
 * description).  NULL after printing a usage error ("ERROR 1: gdal_coreg:
 * ..." on stderr), with *usage_error (may be NULL) set to 1; otherwise
 * *usage_error is 0. */
gg_coreg_app_options *gg_coreg_app_options_new(int argc, char **argv, int *usage_error);

/* Runs it: offsets (the xcorr op through the GG driver, or -offsets),
 * the robust fit, the dense grid or the polynomial, the carrier, the
 * resample step through gg_app_main (which ends with
 * GDALDestroyDriverManager, as every gg_app utility), then the -fit and
 * -prm files.  Returns the exit status (0 success, 1 failure), messages
 * and progress as gdal_coreg prints them.  With gg_app_parse_only set it
 * only parses the flags handed on to the resample step and returns. */
int gg_coreg_app(const gg_coreg_app_options *o);

void gg_coreg_app_options_free(gg_coreg_app_options *o);

/* gdal_coreg's gg_app spec (the resample step's; --help and --describe
 * list its flags).  Its register_drivers is NULL: the caller registers. */
const gg_app_spec *gg_coreg_app_spec(void);

#ifdef __cplusplus
}
#endif
#endif /* GG_COREG_APP_H */
