/*
 * gdal_xcorr.c -- sub-pixel offsets between two SLCs.
 *
 * Default (quality) mode: the xcorr op through gg_app (dense grid of
 * windows, one output pixel per window, 7 Float32 bands), plus an optional
 * window table (-table, any OGR vector format, written with the raster).
 * -mode gmtsar: GMTSAR xcorr's interface (freq_xcorr.dat from two PRMs).
 * The bodies are in the GDAL layer (gdal/gg_xcorr_app.h); this front end
 * adds the drivers.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "gg_output.h"
#include "gg_xcorr_app.h"
#include "register_drivers.h"

#include "cpl_port.h"
#include "cpl_string.h"
#include "gdal.h"

int main(int argc, char **argv)
{
    if (argc > 2 && EQUAL(argv[1], "-mode") && EQUAL(argv[2], "gmtsar")) {
        gg_output_catch_signals(); /* an interrupted run leaves no temporary */
        /* GDAL's general options (--help-general, --config, --debug,
         * --formats, --optfile) as in the default mode; --version, --help
         * and --describe are the mode's own (GDAL would answer --version
         * with its version alone) */
        char **mode = CSLAddString(NULL, argv[0]); /* without "-mode gmtsar" */
        for (int i = 3; i < argc; i++)
            mode = CSLAddString(mode, argv[i]);
        static const char *const own[] = {"--version", "--help", "-h", "--describe", NULL};
        GDALAllRegister();
        GGRegisterDrivers();
        char **args = NULL;
        const int n = gg_app_general_options(argc - 2, mode, own, &args);
        CSLDestroy(mode);
        if (n < 1)
            return n == 0 ? 0 : 1; /* answered (--help-general...) or refused */
        int usage_error = 0;
        gg_xcorr_gmtsar_app_options *o = gg_xcorr_gmtsar_app_options_new(n, args, &usage_error);
        CSLDestroy(args);
        if (!o)
            return usage_error; /* 0 after --help */
        /* the device starts in gg_xcorr_gmtsar_app (NULL context) */
        const int rc = gg_app_parse_only ? 0 : gg_xcorr_gmtsar_app(o, NULL, GDALTermProgress, NULL);
        gg_xcorr_gmtsar_app_options_free(o);
        return rc;
    }
    if (gg_xcorr_app_table_check(argc, argv))
        return 1;
    gg_app_spec spec = *gg_xcorr_app_spec();
    spec.register_drivers = GGRegisterDrivers;
    return gg_app_main(&spec, argc, argv);
}
