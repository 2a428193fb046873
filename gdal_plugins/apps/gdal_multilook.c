/*
 * gdal_multilook.c -- multilook a raster: average non-overlapping blocks of
 * x_looks x y_looks pixels (intensity of complex input).
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

#include "cpl_port.h"

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[2];
    if (EQUAL(argv[*pi], "-looks")) {
        if (gg_app_values(app, argc, argv, pi, 2, v) < 0)
            return -1;
        return gg_app_set_pair(app, "-looks", "looks", v[0], v[1]);
    }
    if (EQUAL(argv[*pi], "-complex"))
        return gg_app_set(app, "complex", "yes");
    return 0;
}

static const char *const required[] = {"-looks", NULL};

static const gg_app_spec spec = {
    .name = "gdal_multilook",
    .operation = "multilook",
    .purpose = "Averages non-overlapping blocks of <x_looks> x <y_looks> pixels: the intensity\n"
               "|z|^2 of complex input (the complex mean with -complex), the values of real\n"
               "input.  Partial blocks at the right and bottom edges are dropped.",
    .synopsis = "-looks <x_looks> <y_looks> [-complex]",
    .help = "  -looks <x> <y>     looks along x (range, columns) and y (azimuth, rows)\n"
            "  -complex           average complex values instead of intensity (complex input)\n",
    .required = required,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
