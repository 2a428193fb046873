/*
 * gdal_coreg.c -- coregistration in one command: dense offsets of the
 * secondary against the primary, a robust polynomial fit of them, and the
 * secondary resampled onto the primary grid (docs/gdal_coreg.md).
 *
 * The whole utility -- its command line, the offsets, the fit, the dense
 * grid, the carrier, the resample step through gg_app and the -fit / -prm
 * files -- is gg_coreg_app (gdal/gg_coreg_app.c), in the style of GDAL's
 * GDALWarpAppOptionsNew + GDALWarp.  This main registers the drivers the
 * utility carries (no plugin needed), parses, runs and returns the exit
 * status.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "gg_coreg_app.h"
#include "register_drivers.h"

#include "cpl_string.h"
#include "gdal.h"

int main(int argc, char **argv)
{
    GDALAllRegister();
    GGRegisterDrivers();
    /* GDAL's general options (--config, --debug, --optfile, --help-general,
     * --formats...) taken here, values and all, before the utility's own
     * parser sees the operands; --version, --help and --describe are gg_app's */
    static const char *const own[] = {"--version", "--utility_version", "--help", "-h",
                                      "-help", "--describe", NULL};
    char **args = NULL;
    argc = gg_app_general_options(argc, argv, own, &args);
    if (argc < 1) {
        GDALDestroyDriverManager();
        return argc == 0 ? 0 : 1; /* answered (--help-general...) or refused */
    }
    int usage_error = 0;
    gg_coreg_app_options *o = gg_coreg_app_options_new(argc, args, &usage_error);
    const int rc = o ? gg_coreg_app(o) : 1; /* NULL: a usage error, already printed */
    gg_coreg_app_options_free(o);
    CSLDestroy(args);
    GDALDestroyDriverManager();
    return rc;
}
