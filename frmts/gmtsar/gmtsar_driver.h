/*
 * gmtsar_driver.h -- C interface of the GMTSAR raster driver: a GMTSAR PRM
 * file with its raw int16 I/Q SLC, opened as one CInt16 band with the PRM's
 * values as metadata (docs/driver_gmtsar.md).
 *
 * MIT licence.
 */
#ifndef GG_GMTSAR_DRIVER_H
#define GG_GMTSAR_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the GMTSAR driver unless one of that name exists. */
void GMTSARRegisterDriver(void);

#ifdef __cplusplus
}
#endif
#endif
