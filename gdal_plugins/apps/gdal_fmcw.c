/*
 * gdal_fmcw.c -- dual-polarisation FMCW weather-radar products from raw
 * sectors (docs/gdal_fmcw.md):
 *   gdal_fmcw [-products DBZ,ZDR,...] [-grid <res_m> [-max_range <m>]] src dst
 *       polar products (rows = sectors, columns = range gates), or one PPI
 *       GeoTIFF per product on an azimuthal-equidistant grid;
 *   gdal_fmcw -simulate [options] dst.nc
 *       writes a simulated raw file (the test oracle).
 * The bodies are in the GDAL layer (gdal/gg_fmcw_app.h): the products go
 * through the FMCW driver (frmts/fmcw, registered here) and gg_app's option
 * parser and safe output writer.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "gg_fmcw_app.h"
#include "gg_output.h"
#include "register_drivers.h"

#include "cpl_port.h"
#include "cpl_string.h"
#include "gdal.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (EQUAL(argv[i], "-simulate")) {
            gg_output_catch_signals(); /* an interrupted run leaves no temporary */
            GDALAllRegister();
            /* GDAL's general options (--help-general, --config, --debug...) as
             * in the products mode; --help and --version are the mode's own */
            static const char *const own[] = {"--help", "-h", "--version", NULL};
            char **args = NULL;
            argc = gg_app_general_options(argc, argv, own, &args);
            if (argc < 1) {
                GDALDestroyDriverManager();
                return argc == 0 ? 0 : 1; /* answered (--help-general...) or refused */
            }
            int usage_error = 0;
            gg_fmcw_simulate_app_options *o = gg_fmcw_simulate_app_options_new(argc, args, &usage_error);
            CSLDestroy(args);
            int rc = usage_error; /* 0 after --help */
            if (o && !gg_app_parse_only)
                rc = gg_fmcw_simulate_app(NULL, o, GDALTermProgress, NULL);
            gg_fmcw_simulate_app_options_free(o);
            GDALDestroyDriverManager();
            return rc;
        }
    gg_app_spec spec = *gg_fmcw_app_spec();
    spec.register_drivers = GGRegisterDrivers; /* the FMCW driver opens the source */
    return gg_app_main(&spec, argc, argv);
}
