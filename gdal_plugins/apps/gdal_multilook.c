/*
 * gdal_multilook.c -- multilook a raster: average non-overlapping blocks of
 * x_looks x y_looks pixels (intensity of complex input).
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

static const gg_app_spec spec = {
    .name = "gdal_multilook",
    .operation = "multilook",
    .purpose = "Averages non-overlapping blocks of <x_looks> x <y_looks> pixels: the intensity\n"
               "|z|^2 of complex input (the complex mean with -complex), the values of real\n"
               "input.  Partial blocks at the right and bottom edges are dropped.",
    /* -looks, -complex: the multilook op's options (algorithms/sar/multilook.c) */
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
