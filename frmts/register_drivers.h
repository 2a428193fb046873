/*
 * register_drivers.h -- registers every geogpu GDAL driver (GG, FMCW,
 * GMTSAR), for the plugin's entry point and for the utilities, which carry
 * the drivers.
 *
 * MIT licence.
 */
#ifndef GG_REGISTER_DRIVERS_H
#define GG_REGISTER_DRIVERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Each driver is registered unless one of its name exists.  Starts no
 * device. */
void GGRegisterDrivers(void);

#ifdef __cplusplus
}
#endif
#endif
