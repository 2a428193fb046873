/*
 * gg_warp_options.c -- gdal_warp's options, described once (a gg_option
 * table: --help and --describe come from it), and the parser of gdalwarp's
 * command line.
 *
 * MIT licence.
 */
#include "gg_warp.h"
#include "gg_app.h"

#include "cpl_conv.h"
#include "cpl_string.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "gdal_warp"

/* gdalwarp's flags, in --help's order. */
static const gg_option table[] = {
    {"s_srs", "-s_srs", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "source CRS (default: the source's own)", 0},
    {"t_srs", "-t_srs", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output CRS (default: the source's)", 0},
    {"te", "-te", GG_OPTION_FLOAT, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output extent (in the output CRS, or -te_srs's)", 0},
    {"te_srs", "-te_srs", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "CRS of -te's coordinates", 0},
    {"tr", "-tr", GG_OPTION_FLOAT, 0, HUGE_VAL, NULL, NULL,
     "output resolution in output CRS units (not with -ts)", 0},
    {"ts", "-ts", GG_OPTION_SIZE, 0, 1e9, NULL, NULL,
     "output size in pixels (0 for one side: kept in proportion)", 0},
    {"tap", "-tap", GG_OPTION_BOOL, -HUGE_VAL, HUGE_VAL, "no", NULL,
     "align the extent on -tr's resolution", 0},
    {"r", "-r", GG_OPTION_CHOICE, -HUGE_VAL, HUGE_VAL, "near",
     "near,bilinear,cubic,cubicspline,lanczos,average", "resampling, with gdalwarp's kernels", 0},
    {"et", "-et", GG_OPTION_FLOAT, 0, HUGE_VAL, "0.125", NULL,
     "error threshold of the coordinate grid in source pixels (0: exact)", 0},
    {"order", "-order", GG_OPTION_INT, 1, 3, NULL, NULL, "GCP polynomial order", 0},
    {"tps", "-tps", GG_OPTION_BOOL, -HUGE_VAL, HUGE_VAL, "no", NULL,
     "thin-plate spline through the GCPs", 0},
    {"dstalpha", "-dstalpha", GG_OPTION_BOOL, -HUGE_VAL, HUGE_VAL, "no", NULL,
     "add an alpha band: the type's maximum where a source pixel reached, 0 elsewhere", 0},
    {"rpc", "-rpc", GG_OPTION_BOOL, -HUGE_VAL, HUGE_VAL, "no", NULL,
     "the source's RPCs (with -to RPC_DEM=<dem>: gdal_ortho's device pipeline)", 0},
    {"geoloc", "-geoloc", GG_OPTION_BOOL, -HUGE_VAL, HUGE_VAL, "no", NULL,
     "the source's geolocation arrays (GEOLOCATION metadata)", 0},
    {"to", "-to", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "transformer option <NAME>=<VALUE> (repeatable)", 0},
    {"srcnodata", "-srcnodata", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "source nodata, one value or one per band (default: the bands' own)", 0},
    {"dstnodata", "-dstnodata", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output nodata, one value or one per band (default: the source's)", 0},
    {"ot", "-ot", GG_OPTION_CHOICE, -HUGE_VAL, HUGE_VAL, NULL,
     "Byte,UInt16,Int16,Float32,CFloat32", "output data type (default: the source's)", 0},
    {"wo", "-wo", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "warp option <NAME>=<VALUE> (repeatable; UNIFIED_SRC_NODATA is honoured)", 0},
};
#define NOPTIONS ((int)(sizeof table / sizeof table[0]))

const gg_option *ggw_options_table(int *count)
{
    if (count)
        *count = NOPTIONS;
    return table;
}

static const char *placeholders(const gg_option *o)
{
    static const char *const names[][2] = {
        {"s_srs", "<srs>"},
        {"t_srs", "<srs>"},
        {"te_srs", "<srs>"},
        {"te", "<xmin> <ymin> <xmax> <ymax>"},
        {"tr", "<xres> <yres>"},
        {"ts", "<width> <height>"},
        {"et", "<error>"},
        {"order", "<n>"},
        {"to", "<NAME>=<VALUE>"},
        {"wo", "<NAME>=<VALUE>"},
        {"srcnodata", "\"<value>[ <value>]...\""},
        {"dstnodata", "\"<value>[ <value>]...\""},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(o->key, names[k][0]))
            return names[k][1];
    return NULL;
}

static const gg_app_flag own_flags[] = {{NULL, NULL, NULL, NULL}};

static const gg_app_spec spec = {
    .name = PROG,
    .operation = "warp",
    .purpose = "Warps rasters on the GPU with gdalwarp's command line and answer: map\n"
               "reprojection, GCPs (-order, -tps), geolocation arrays (-geoloc) and RPCs\n"
               "(docs/gdal_warp.md).",
    .operands = "<src_dataset>... <dst_dataset>",
    .help = "\n-wm <memory> and -multi are accepted and ignored: blocks are planned from\n"
            "device memory.\n",
    .flags = own_flags,
};

void ggw_print_usage(FILE *out)
{
    gg_app_print_table_usage(
        &spec, table, NOPTIONS, placeholders,
        "[-of <format>] [-co <NAME>=<VALUE>]... [-overwrite] [-device <device>] [-q] [-v]",
        "  -of <format>       output format (default GTiff; it must support Create)\n"
        "  -co <NAME>=<VALUE> creation option of the output format (repeatable)\n"
        "  -overwrite         replace an existing output\n"
        "  -device <device>   auto, cpu, cuda[:N] or opencl[:P[:D]]\n"
        "                     (default: the GG_DEVICE configuration option, else auto)\n"
        "  -q                 quiet: no progress, no notices\n"
        "  -v                 output grid, grid steps and device\n",
        out);
}

void ggw_print_description(FILE *out)
{
    gg_app_print_table_description(&spec, table, NOPTIONS, placeholders, out);
}

void ggw_options_free(ggw_options *o)
{
    CSLDestroy(o->co);
    CSLDestroy(o->to);
    CSLDestroy(o->wo);
    CSLDestroy(o->positional);
    CSLDestroy(o->keyvals);
    o->co = o->to = o->wo = o->positional = o->keyvals = NULL;
}

int ggw_is_option(const char *key)
{
    for (int k = 0; key && k < NOPTIONS; k++)
        if (EQUAL(table[k].key, key))
            return 1;
    return 0;
}

int ggw_parse_keys(ggw_options *o, char ***argv, int n, const char *const *keys,
                   const char *const *values, int ninputs, const char *const *inputs, char *err,
                   size_t errlen)
{
    char **a = CSLAddString(NULL, PROG);
    *argv = NULL;
    for (int i = 0; i < n; i++) {
        const gg_option *e = NULL;
        for (int k = 0; k < NOPTIONS && !e; k++)
            if (EQUAL(table[k].key, keys[i]))
                e = &table[k];
        if (!e) {
            memset(o, 0, sizeof *o);
            CSLDestroy(a);
            char names[512] = "";
            for (int k = 0; k < NOPTIONS; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         k ? ", " : "", table[k].key);
            snprintf(err, errlen, "'%s' is not an option of warp (options: %s)", keys[i], names);
            return GGW_CMD_ERROR;
        }
        if (e->kind == GG_OPTION_BOOL) {
            if (CPLTestBool(values[i]))
                a = CSLAddString(a, e->flag);
            continue;
        }
        a = CSLAddString(a, e->flag);
        const char *names = placeholders(e);
        int want = 0;
        for (const char *c = names && names[0] == '<' ? names : ""; *c; c++)
            want += *c == '<';
        if (want > 1) { /* several values: "a,b" (a size also "WxH") */
            char **t = CSLTokenizeString2(values[i], ",xX", 0);
            for (int k = 0; t && t[k]; k++)
                a = CSLAddString(a, t[k]);
            CSLDestroy(t);
        } else
            a = CSLAddString(a, values[i]);
    }
    for (int i = 0; i < ninputs; i++)
        a = CSLAddString(a, inputs[i]);
    a = CSLAddString(a, "GG:warp"); /* the destination of the command line: not written */
    *argv = a;
    return ggw_parse_command_line(o, CSLCount(a), a, err, errlen);
}

char **ggw_rpc_options(const ggw_options *o, char *err, size_t errlen)
{
    /* -et is accepted: the RPC path evaluates the model at every pixel */
    if (o->te_srs || o->tap || o->dstalpha) {
        snprintf(err, errlen, "-rpc does not take -te_srs, -tap or -dstalpha");
        return NULL;
    }
    if (o->resampling > GG_ORTHO_METHOD_CUBIC) {
        snprintf(err, errlen, "-rpc resamples with near, bilinear or cubic");
        return NULL;
    }
    static const char *const to_keys[][2] = {{"RPC_DEM", "dem"},
                                             {"RPC_DEMINTERPOLATION", "dem_interp"},
                                             {"RPC_DEM_MISSING_VALUE", "dem_missing"},
                                             {"RPC_HEIGHT", "rpc_height"},
                                             {"RPC_DEM_SRS", "dem_srs"}};
    static const char *const methods[] = {"near", "bilinear", "cubic"};
    char **kv = CSLAddString(NULL, CPLSPrintf("r=%s", methods[o->resampling]));
    for (int i = 0; o->to && o->to[i]; i++) {
        char *key = NULL;
        const char *v = CPLParseNameValue(o->to[i], &key);
        int found = 0;
        for (size_t k = 0; k < sizeof to_keys / sizeof to_keys[0] && key && v && !found; k++)
            if (EQUAL(key, to_keys[k][0])) {
                kv = CSLAddString(kv, CPLSPrintf("%s=%s", to_keys[k][1], v));
                found = 1;
            }
        CPLFree(key);
        if (!found) {
            snprintf(err, errlen,
                     "-to %s: with -rpc gdal_warp takes RPC_DEM, RPC_DEMINTERPOLATION, "
                     "RPC_DEM_MISSING_VALUE, RPC_HEIGHT and RPC_DEM_SRS",
                     o->to[i]);
            CSLDestroy(kv);
            return NULL;
        }
    }
    if (o->t_srs)
        kv = CSLAddString(kv, CPLSPrintf("t_srs=%s", o->t_srs));
    if (o->has_tr)
        kv = CSLAddString(kv, CPLSPrintf("tr=%.17g,%.17g", o->tr[0], o->tr[1]));
    if (o->has_te)
        kv = CSLAddString(kv, CPLSPrintf("te=%.17g,%.17g,%.17g,%.17g", o->te[0], o->te[1],
                                         o->te[2], o->te[3]));
    if (o->has_ts)
        kv = CSLAddString(kv, CPLSPrintf("ts=%d,%d", o->ts[0], o->ts[1]));
    if (o->ot)
        kv = CSLAddString(kv, CPLSPrintf("ot=%s", o->ot));
    if (o->srcnodata)
        kv = CSLAddString(kv, CPLSPrintf("srcnodata=%s", o->srcnodata));
    if (o->dstnodata)
        kv = CSLAddString(kv, CPLSPrintf("dstnodata=%s", o->dstnodata));
    return kv;
}

/* The table's entry of a key. */
static const gg_option *entry(const char *key)
{
    for (int k = 0; k < NOPTIONS; k++)
        if (!strcmp(table[k].key, key))
            return &table[k];
    return NULL;
}

static int number(const char *s, double *v)
{
    char *end = NULL;
    *v = CPLStrtod(s, &end);
    return end && !*end && end != s && isfinite(*v);
}

static int is_flag(const char *a)
{
    /* "-5" and "-.5" are values, a lone "-" a name */
    return a[0] == '-' && a[1] && !strchr("0123456789.", a[1]);
}

/* gdalwarp flags gdal_warp does not do, refused by name. */
static const char *const unsupported[] = {
    "-cutline", "-cl", "-cwhere", "-csql", "-cblend", "-crop_to_cutline", "-srcalpha",
    "-nosrcalpha", "-refine_gcps", "-wt", "-novshiftgrid", "-vshift", "-nomd", "-cvmd",
    "-setci", "-oo", "-doo", "-ovr", "-if", "-b", "-srcband", "-dstband", NULL};

/* In the parsers below: the usage error, one line in err. */
#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), GGW_CMD_ERROR)

/* --help, --describe and --version, answered on stdout (GGW_CMD_DONE);
 * GGW_CMD_RUN for any other flag. */
static int answer_info_flag(const char *a)
{
    if (EQUAL(a, "--help") || EQUAL(a, "-h") || EQUAL(a, "--help-general")) {
        ggw_print_usage(stdout);
        return GGW_CMD_DONE;
    }
    if (EQUAL(a, "--describe")) {
        ggw_print_description(stdout);
        return GGW_CMD_DONE;
    }
    if (EQUAL(a, "--version")) {
        gg_app_print_version(PROG);
        return GGW_CMD_DONE;
    }
    return GGW_CMD_RUN;
}

/* The option a switch sets; NULL when a is not a switch. */
static int *switch_of(ggw_options *o, const char *a)
{
    return EQUAL(a, "-tap")         ? &o->tap
           : EQUAL(a, "-dstalpha")  ? &o->dstalpha
           : EQUAL(a, "-tps")       ? &o->tps
           : EQUAL(a, "-rpc")       ? &o->rpc
           : EQUAL(a, "-geoloc")    ? &o->geoloc
           : EQUAL(a, "-overwrite") ? &o->overwrite
           : EQUAL(a, "-q") || EQUAL(a, "-quiet") ? &o->quiet
           : EQUAL(a, "-v")         ? &o->verbose
                                    : NULL;
}

/* -te, -tr and -ts: their want numeric values v[0..want). */
static int parse_numbers_flag(ggw_options *o, const char *a, char **v, int want, char *err,
                              size_t errlen)
{
    double d[4];
    for (int k = 0; k < want; k++)
        if (!number(v[k], &d[k]))
            return BAD("%s: '%s' is not a number", a, v[k]);
    if (EQUAL(a, "-te")) {
        if (!(d[2] > d[0] && d[3] > d[1]))
            return BAD("-te: xmin < xmax and ymin < ymax are needed");
        memcpy(o->te, d, sizeof o->te);
        o->has_te = 1;
    } else if (EQUAL(a, "-tr")) {
        if (!(d[0] > 0) || d[1] == 0)
            return BAD("-tr: resolutions must be positive");
        o->tr[0] = d[0];
        o->tr[1] = fabs(d[1]);
        o->has_tr = 1;
    } else {
        for (int k = 0; k < 2; k++)
            if (d[k] < 0 || d[k] > 1e9 || d[k] != floor(d[k]))
                return BAD("-ts: width and height must be whole numbers from 0 to 1e9");
        if (d[0] == 0 && d[1] == 0)
            return BAD("-ts 0 0: give at least one side");
        o->ts[0] = (int)d[0];
        o->ts[1] = (int)d[1];
        o->has_ts = 1;
    }
    char joined[512] = "";
    for (int k = 0; k < want; k++)
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", k ? "," : "",
                 v[k]);
    o->keyvals = CSLAddString(o->keyvals, CPLSPrintf("%s=%s", a + 1, joined));
    return GGW_CMD_RUN;
}

/* -ot and -r: v must be one of the flag's choices in the table. */
static int parse_choice_flag(ggw_options *o, const char *a, const char *v, char *err,
                             size_t errlen)
{
    if (EQUAL(a, "-ot")) {
        const gg_option *e = entry("ot");
        char **c = CSLTokenizeString2(e->choices, ",", 0);
        int found = 0;
        for (int k = 0; c[k] && !found; k++)
            found = EQUAL(c[k], v);
        CSLDestroy(c);
        if (!found)
            return BAD("-ot %s: gdal_warp writes Byte, UInt16, Int16, Float32 or CFloat32", v);
        o->ot = v;
        return GGW_CMD_RUN;
    }
    /* the table's choices, in gg_ortho_method's order */
    const gg_option *e = entry("r");
    char **m = CSLTokenizeString2(e->choices, ",", 0);
    int found = CSLFindString(m, v);
    CSLDestroy(m);
    if (EQUAL(v, "nearest"))
        found = 0;
    if (found < 0)
        return BAD("-r %s: gdal_warp resamples with %s", v, e->choices);
    o->resampling = found;
    return GGW_CMD_RUN;
}

/* A flag with one value v. */
static int parse_value_flag(ggw_options *o, const char *a, const char *v, char *err,
                            size_t errlen)
{
    double d;
    if (ggw_is_option(a + 1))
        o->keyvals = CSLAddString(o->keyvals, CPLSPrintf("%s=%s", a + 1, v));
    if (EQUAL(a, "-s_srs"))
        o->s_srs = v;
    else if (EQUAL(a, "-t_srs"))
        o->t_srs = v;
    else if (EQUAL(a, "-te_srs"))
        o->te_srs = v;
    else if (EQUAL(a, "-ot") || EQUAL(a, "-r"))
        return parse_choice_flag(o, a, v, err, errlen);
    else if (EQUAL(a, "-of"))
        o->of = v;
    else if (EQUAL(a, "-co"))
        o->co = CSLAddString(o->co, v);
    else if (EQUAL(a, "-to"))
        o->to = CSLAddString(o->to, v);
    else if (EQUAL(a, "-wo"))
        o->wo = CSLAddString(o->wo, v);
    else if (EQUAL(a, "-wm"))
        return GGW_CMD_RUN; /* accepted: blocks come from the planner */
    else if (EQUAL(a, "-device"))
        o->device = v;
    else if (EQUAL(a, "-srcnodata"))
        o->srcnodata = v;
    else if (EQUAL(a, "-dstnodata"))
        o->dstnodata = v;
    else if (EQUAL(a, "-et")) {
        if (!number(v, &d) || d < 0)
            return BAD("-et: '%s' is not a non-negative number", v);
        o->et = d;
        o->has_et = 1;
    } else if (EQUAL(a, "-order")) {
        if (!number(v, &d) || d != floor(d) || d < 1 || d > 3)
            return BAD("-order: 1, 2 or 3");
        o->order = (int)d;
    } else
        return BAD("unknown option %s", a);
    return GGW_CMD_RUN;
}

/* The options that need or exclude others, and the operands. */
static int check_combination(const ggw_options *o, char *err, size_t errlen)
{
    if (o->has_tr && o->has_ts)
        return BAD("-tr and -ts cannot be used together");
    if (o->tap && !o->has_tr)
        return BAD("-tap needs -tr");
    if (o->te_srs && !o->has_te)
        return BAD("-te_srs needs -te");
    if ((o->tps != 0) + (o->rpc != 0) + (o->geoloc != 0) + (o->order != 0) > 1)
        return BAD("-order, -tps, -rpc and -geoloc choose one transformer: give one");
    if (CSLCount(o->positional) < 2)
        return BAD("a source and a destination are needed");
    return GGW_CMD_RUN;
}

int ggw_parse_command_line(ggw_options *o, int argc, char **argv, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->et = 0.125;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!is_flag(a)) {
            o->positional = CSLAddString(o->positional, a);
            continue;
        }
        int rc = answer_info_flag(a);
        if (rc != GGW_CMD_RUN)
            return rc;
        int *sw = switch_of(o, a);
        if (sw) {
            *sw = 1;
            if (!EQUAL(a, "-overwrite") && !EQUAL(a, "-q") && !EQUAL(a, "-quiet") &&
                !EQUAL(a, "-v"))
                o->keyvals = CSLAddString(o->keyvals, CPLSPrintf("%s=yes", a + 1));
            continue;
        }
        if (EQUAL(a, "-multi"))
            continue; /* accepted: the device pipeline always overlaps */
        for (int k = 0; unsupported[k]; k++)
            if (EQUAL(a, unsupported[k]))
                return BAD("%s is not supported by gdal_warp (see docs/gdal_warp.md)", a);
        /* flags with values */
        int want = 1;
        if (EQUAL(a, "-te"))
            want = 4;
        else if (EQUAL(a, "-tr") || EQUAL(a, "-ts"))
            want = 2;
        if (i + want >= argc)
            return BAD("%s needs %d value%s", a, want, want > 1 ? "s" : "");
        if (want > 1) /* -te, -tr, -ts */
            rc = parse_numbers_flag(o, a, argv + i + 1, want, err, errlen);
        else
            rc = parse_value_flag(o, a, argv[i + 1], err, errlen);
        if (rc != GGW_CMD_RUN)
            return rc;
        i += want;
    }
    return check_combination(o, err, errlen);
}

#undef BAD
