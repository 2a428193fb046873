/*
 * gdal_warp.c -- gdalwarp's command line on the device: map reprojection,
 * GCP polynomials and thin-plate splines, geolocation arrays and RPCs
 * (docs/gdal_warp.md).  The whole utility is gg_warp_run (gdal/gg_warp.c);
 * this main starts its own device (-device), removes its temporaries when
 * a signal ends it, and returns the exit status.
 *
 * MIT licence.
 */
#include "geogpu_gdal.h"
#include "gg_output.h"
#include "register_drivers.h"

#include "gdal.h"

int main(int argc, char **argv)
{
    gg_output_catch_signals(); /* an interrupted run leaves no temporary */
    GDALAllRegister();
    GGRegisterDrivers(); /* GG:, FMCW and GMTSAR sources without the plugin */
    const int rc = gg_warp_run(argc, argv, NULL, NULL, 0);
    GDALDestroyDriverManager();
    return rc;
}
