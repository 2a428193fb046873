/*
 * gdal_insar.c -- interferogram, boxcar coherence and amplitude of two
 * coregistered SLCs.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

#include "cpl_port.h"
#include "cpl_string.h"

#include <stdio.h>
#include <string.h>

/* the products asked for, in the order given ("" = all) */
static char products[64];

static int add_product(gg_app *app, const char *name)
{
    if (strlen(products) + strlen(name) + 2 > sizeof products)
        return gg_app_usage_error(app, "-%s given twice", name);
    if (*products)
        strcat(products, ",");
    strcat(products, name);
    return gg_app_set(app, "products", products);
}

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    (void)argc;
    if (EQUAL(argv[*pi], "-interferogram") || EQUAL(argv[*pi], "-coherence") ||
        EQUAL(argv[*pi], "-amplitude"))
        return add_product(app, argv[*pi] + 1);
    return 0;
}

static const gg_app_flag flags[] = {
    {"-interferogram", NULL, "bool", "write the interferogram (complex mean over the look block)"},
    {"-coherence", NULL, "bool", "write the coherence, in [0, 1]"},
    {"-amplitude", NULL, "bool", "write the amplitude (geometric mean of the RMS amplitudes)"},
    {NULL, NULL, NULL, NULL}};

static const gg_app_spec spec = {
    .name = "gdal_insar",
    .operation = "coherence",
    .purpose = "Interferogram primary x conj(secondary), boxcar coherence\n"
               "|sum s1 s2*| / sqrt(sum |s1|^2 sum |s2|^2) and amplitude of two coregistered\n"
               "SLCs, optionally decimated by looks.  Products of different types (the complex\n"
               "interferogram beside the real coherence) are written one file per product,\n"
               "<dst stem>_<product><ext>, unless the format is VRT or GGVRT.",
    /* -window, -looks: the coherence op's options (algorithms/insar/coherence.c);
     * the products are this utility's own flags (the op's products= key) */
    .help = "  (none of -interferogram, -coherence, -amplitude: all three, in this order)\n",
    .operands = "<primary> <secondary> <dst_dataset>",
    .required = NULL,
    .flags = flags,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
