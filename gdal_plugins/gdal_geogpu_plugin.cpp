/*
 * gdal_geogpu_plugin.cpp -- entry point of the GDAL plugin gdal_GeoGPU.so.
 * GDAL derives the symbol name from the file name: GDALRegister_GeoGPU.
 * Registration only declares the drivers (GG, FMCW, GMTSAR); no device starts
 * until a block is read.
 *
 * MIT licence.
 */
#include "register_drivers.h"

#include "gdal.h"

extern "C" __attribute__((visibility("default"))) void GDALRegister_GeoGPU(void);

void GDALRegister_GeoGPU(void)
{
    // The C++ driver ABI changes between GDAL minor versions.
    if (!GDAL_CHECK_VERSION("gdal_GeoGPU"))
        return;
    GGRegisterDrivers();
}
