/*
 * gdal_radnorm.c -- row/column gain normalisation of a SAR image,
 * optionally quantised to Byte levels.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

static const gg_app_spec spec = {
    .name = "gdal_radnorm",
    .operation = "radnorm",
    .purpose = "Removes row and column gain profiles: F = coef * I * M / (Rmean(row) * Cmean(col)),\n"
               "with M the mean of the image and Rmean, Cmean the means of its rows and columns\n"
               "(valid pixels only); the output mean is about <c>.  With -levels, F is rounded\n"
               "to Byte levels 0..n-1 (nodata 255).  Complex input is normalised on |z|.",
    /* -coef, -levels: the radnorm op's options (algorithms/sar/radnorm.c) */
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
