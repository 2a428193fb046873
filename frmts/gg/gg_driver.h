/*
 * gg_driver.h -- the GG virtual processing driver (GG: connection strings,
 * .ggvrt files, GG:ortho:), for the plugin entry point and the utilities,
 * which carry the driver so that they work without the plugin.
 *
 * MIT licence.
 */
#ifndef GG_DRIVER_H
#define GG_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the GG driver with GDAL's driver manager unless a driver of
 * that name already exists.  Starts no device. */
void GGRegisterDriver(void);

#ifdef __cplusplus
}

struct GGSpec;
class GDALDataset;
/* "ortho" is not an op of the registry (it needs GDAL/PROJ and reads its
 * source anywhere): GG:ortho: opens its own dataset (ggortho.cpp). */
GDALDataset *GGOrthoOpen(const GGSpec &oSpec, const char *pszName, bool bConnection);
/* "warp" likewise: GG:warp: opens gdal_warp's output (ggwarp.cpp). */
GDALDataset *GGWarpOpen(const GGSpec &oSpec, const char *pszName, bool bConnection);
#endif
#endif /* GG_DRIVER_H */
