/*
 * gdal_radnorm.c -- row/column gain normalisation of a SAR image,
 * optionally quantised to Byte levels.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

#include "cpl_port.h"

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[1];
    if (EQUAL(argv[*pi], "-coef")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        return gg_app_set(app, "coef", v[0]);
    }
    if (EQUAL(argv[*pi], "-levels")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        return gg_app_set(app, "levels", v[0]);
    }
    return 0;
}

static const gg_app_spec spec = {
    .name = "gdal_radnorm",
    .operation = "radnorm",
    .purpose = "Removes row and column gain profiles: F = coef * I * M / (Rmean(row) * Cmean(col)),\n"
               "with M the mean of the image and Rmean, Cmean the means of its rows and columns\n"
               "(valid pixels only); the output mean is about <c>.  With -levels, F is rounded\n"
               "to Byte levels 0..n-1 (nodata 255).  Complex input is normalised on |z|.",
    .synopsis = "[-coef <c>] [-levels <n>]",
    .help = "  -coef <c>          target mean of the output, > 0 (default 1)\n"
            "  -levels <n>        quantise to n Byte levels 0..n-1, 2 <= n <= 255\n",
    .required = NULL,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
