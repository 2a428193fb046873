/*
 * rotate.h -- the rotation geometry, shared by the rotate op and the
 * kernel benchmark (host code only; the kernel reads gg_rotate_params).
 */
#ifndef GG_SAR_ROTATE_H
#define GG_SAR_ROTATE_H

#include "sar_params.h"

/* Fills the geometry of p (inverse map, centres, footprint limits, source
 * size, channels) for a W x H source and a Wo x Ho output; the tile and
 * nodata fields are left zero for the caller. */
void gg_rotate_geometry(double angle_deg, double scale, int W, int H, int Wo, int Ho,
                        int channels, gg_rotate_params *p);

#endif
