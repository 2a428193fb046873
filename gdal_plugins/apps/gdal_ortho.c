/*
 * gdal_ortho.c -- RPC + DEM orthorectification of one scene or many, the
 * geometry of `gdalwarp -rpc -to RPC_DEM=... -et 0` on the device
 * (docs/gdal_ortho.md).
 *
 * The whole utility -- options, the reader / device / writer pipeline, the
 * safe output path -- is gg_ortho_run (gdal/gg_ortho_run.c), so that a
 * long-lived process (geogpu.distributed's Dask workers) runs exactly this
 * program on a device context it keeps.  This main starts its own device
 * (-device), prints errors on stderr, removes its temporaries when a
 * signal ends it, and returns the exit status.
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
    const int rc = gg_ortho_run(argc, argv, NULL, NULL, 0);
    GDALDestroyDriverManager();
    return rc;
}
