/*
 * gdal_ptsel.c -- persistent-scatterer selection: the PtSel maximum arc
 * temporal coherence of every pixel over a stack of interferograms (or
 * SLCs), computed exactly in O(n) per arc.
 *
 * MIT licence.
 */
#include "gg_app.h"
#include "register_drivers.h"

#include "cpl_port.h"

static int parse_flag(gg_app *app, int argc, char **argv, int *pi)
{
    const char *v[1];
    static const char *const valued[][2] = {{"-window", "window"},
                                           {"-mindist", "mindist"},
                                           {"-threshold", "threshold"},
                                           {"-conj", "conj"}};
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
        if (EQUAL(argv[*pi], valued[k][0])) {
            if (gg_app_values(app, argc, argv, pi, 1, v) < 0)
                return -1;
            return gg_app_set(app, valued[k][1], v[0]);
        }
    if (EQUAL(argv[*pi], "-slc"))
        return gg_app_set(app, "slc", "yes");
    if (EQUAL(argv[*pi], "-offsets"))
        return gg_app_set(app, "offsets", "yes");
    if (EQUAL(argv[*pi], "-mask"))
        return gg_app_set(app, "mask", "yes");
    if (EQUAL(argv[*pi], "-filter")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0 ||
            gg_app_band_folder(app, "filtered_", v[0]) < 0)
            return -1;
        return gg_app_set(app, "filter", "yes");
    }
    return 0;
}

static const gg_app_spec spec = {
    .name = "gdal_ptsel",
    .operation = "ptsel",
    .purpose = "PtSel persistent-scatterer coherence: for every pixel, the largest temporal\n"
               "coherence of its arcs to the neighbours in an r x r window, over a stack of\n"
               "single-reference interferograms (or, with -slc, coregistered SLCs).  The\n"
               "sources are stacked band by band in the order given (chronological, the\n"
               "reference last).  With -mask the bands differ in type (Byte mask beside\n"
               "Float32 tau), so every band goes to its own file <dst stem>_<band><ext>\n"
               "(tau_max, best_dx, best_dy, ps_mask), unless the format is VRT or GGVRT.\n"
               "With -filter <outdir> the coherence-weighted filtered interferograms go to\n"
               "<outdir>/<dst stem>_filtered_<k><ext>, k the stack band.",
    .synopsis = "[-window <r>] [-mindist <d>] [-threshold <t>] [-conj <i,j,...>] [-slc]\n"
                "       [-offsets] [-mask] [-filter <outdir>]",
    .help = "  -window <r>        odd search window (default 11)\n"
            "  -mindist <d>       skip neighbours closer than d pixels (default 1)\n"
            "  -threshold <t>     PS threshold of the mask (default 0.71)\n"
            "  -conj <i,j,...>    conjugate these stack bands (1-based) so orientations agree\n"
            "  -slc               the sources are SLCs (no common reference)\n"
            "  -offsets           add the best neighbour's offset (best_dx, best_dy bands)\n"
            "  -mask              add the PS mask (Byte: 1 PS, 0 not, 255 nodata)\n"
            "  -filter <outdir>   also write each interferogram filtered: every phasor replaced\n"
            "                     by the tau_max-weighted mean phasor of its r x r window\n",
    .operands = "<src_dataset> [<src_dataset>...] <dst_dataset>",
    .required = NULL,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
