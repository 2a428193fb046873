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
    /* -window -mindist -threshold -conj -slc -offsets -mask: the ptsel op's
     * options (algorithms/insar/ptsel.c); -filter takes a folder, so it is
     * this utility's own flag (it sets the op's filter=yes) */
    const char *v[1];
    if (EQUAL(argv[*pi], "-filter")) {
        if (gg_app_values(app, argc, argv, pi, 1, v) < 0 ||
            gg_app_band_folder(app, "filtered_", v[0]) < 0)
            return -1;
        return gg_app_set(app, "filter", "yes");
    }
    return 0;
}

static const gg_app_flag flags[] = {
    {"-filter", "<outdir>", "folder", "also write each interferogram filtered (tau_max-weighted "
                                      "mean phasor of its r x r window) into this folder"},
    {NULL, NULL, NULL, NULL}};

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
    .operands = "<src_dataset> [<src_dataset>...] <dst_dataset>",
    .required = NULL,
    .flags = flags,
    .parse_flag = parse_flag,
    .register_drivers = GGRegisterDrivers,
};

int main(int argc, char **argv)
{
    return gg_app_main(&spec, argc, argv);
}
