/*
 * gdal_rotate.c -- rotate a raster about its centre and scale it, with
 * bilinear interpolation (OpenCV getRotationMatrix2D + warpAffine geometry).
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

static const gg_app_spec spec = {
    .name = "gdal_rotate",
    .operation = "rotate",
    .purpose = "Rotates a raster about its centre by <degrees> (counter-clockwise as displayed)\n"
               "and scales it by <s>, with bilinear interpolation; the output stays\n"
               "georeferenced where the input was.",
    /* -angle, -scale, -outsize: the rotate op's options (algorithms/sar/rotate.c) */
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
