/*
 * register_drivers.c -- every geogpu GDAL driver, registered at once.
 *
 * MIT licence.
 */
#include "register_drivers.h"

#include "fmcw_driver.h"
#include "gg_driver.h"
#include "gmtsar_driver.h"

void GGRegisterDrivers(void)
{
    GGRegisterDriver();
    FMCWRegisterDriver();
    GMTSARRegisterDriver();
}
