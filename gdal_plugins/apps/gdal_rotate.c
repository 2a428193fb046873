/*
 * gdal_rotate.c -- rotate a raster about its centre and scale it, with
 * bilinear interpolation (OpenCV getRotationMatrix2D + warpAffine geometry).
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

#include "cpl_port.h"

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[2];
    if (EQUAL(argv[*pi], "-angle")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        return gg_app_set(app, "angle", v[0]);
    }
    if (EQUAL(argv[*pi], "-scale")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
            return -1;
        return gg_app_set(app, "scale", v[0]);
    }
    if (EQUAL(argv[*pi], "-outsize")) {
        if (gg_app_values(app, argc, argv, pi, 2, v) < 0)
            return -1;
        return gg_app_set_pair(app, "-outsize", "outsize", v[0], v[1]);
    }
    return 0;
}

static const char *const required[] = {"-angle", NULL};

static const gg_app_spec spec = {
    .name = "gdal_rotate",
    .operation = "rotate",
    .purpose = "Rotates a raster about its centre by <degrees> (counter-clockwise as displayed)\n"
               "and scales it by <s>, with bilinear interpolation; the output stays\n"
               "georeferenced where the input was.",
    .synopsis = "-angle <degrees> [-scale <s>] [-outsize <width> <height>]",
    .help = "  -angle <degrees>   rotation, counter-clockwise as displayed\n"
            "  -scale <s>         scale factor, > 0 (default 1)\n"
            "  -outsize <w> <h>   output size in pixels (default: the input size)\n",
    .required = required,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
