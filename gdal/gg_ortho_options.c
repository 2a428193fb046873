/*
 * gg_ortho_options.c -- the options of orthorectification, described once
 * (see gg_ortho_options.h): the table, the one setter every front end goes
 * through (gdal_ortho's flags, GG:ortho: keys, .ggvrt elements), and
 * gdal_ortho's command line, --help and --describe made from the table.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_options.h"
#include "gg_app.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "gdal.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "gdal_ortho"

/* ------------------------------------------------------------ the table */

/* The order is --help's and the GG: error message's.  A flag of several
 * values (placeholders below) joins them with ',' into the key's value. */
static const gg_option table[] = {
    {"dem", "-dem", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "DEM (any GDAL raster, band 1, with a CRS); without it, heights are -rpc_height only", 0},
    {"dem_interp", "-dem_interp", GG_OPTION_CHOICE, -HUGE_VAL, HUGE_VAL, "bilinear",
     "near,bilinear,cubic", "DEM interpolation (cubic: B-spline)", 0},
    {"dem_missing", "-dem_missing", GG_OPTION_FLOAT, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "height where the DEM has no value (outside it or nodata); without it, a DEM that "
     "does not cover the scene is an error",
     0},
    /* off by default: gdalwarp's RPC transformer takes NaN for a height */
    {"dem_nan_missing", "-dem_nan_missing", GG_OPTION_BOOL, 0, 1, "no", NULL,
     "NaN heights in the DEM are missing, as its nodata value is (bilinear: no height there, "
     "so -dem_missing; cubic: left out); default: a NaN height empties the pixels it touches, "
     "as in gdalwarp",
     0},
    {"dem_srs", "-dem_srs", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "CRS of the DEM, overriding its own (GDAL's RPC_DEM_SRS)", 0},
    {"rpc_height", "-rpc_height", GG_OPTION_FLOAT, -HUGE_VAL, HUGE_VAL, "0", NULL,
     "height added to every DEM height, the height without a DEM (GDAL's RPC_HEIGHT)", 0},
    {"t_srs", "-t_srs", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output CRS (default: WGS84 longitude/latitude, as gdalwarp)", 0},
    /* xres > 0; yres's sign is ignored, as gdalwarp ignores it */
    {"tr", "-tr", GG_OPTION_FLOAT, 0, HUGE_VAL, NULL, NULL,
     "output resolution in output CRS units (not with -ts)", 0},
    {"te", "-te", GG_OPTION_FLOAT, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output extent in the output CRS", 0},
    /* the output grid's limit a side (gg_ortho_scene.c GRID_MAX) */
    {"ts", "-ts", GG_OPTION_SIZE, 1, 1e9, NULL, NULL, "output size in pixels (not with -tr)", 0},
    {"r", "-r", GG_OPTION_CHOICE, -HUGE_VAL, HUGE_VAL, "near", "near,bilinear,cubic",
     "resampling (bilinear and cubic are stretched when downsampling, as gdalwarp's)", 0},
    {"srcnodata", "-srcnodata", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "source nodata, one value or one per band (default: the bands' own)", 0},
    {"dstnodata", "-dstnodata", GG_OPTION_STRING, -HUGE_VAL, HUGE_VAL, NULL, NULL,
     "output nodata, one value or one per band (default: the source's)", 0},
    {"ot", "-ot", GG_OPTION_CHOICE, -HUGE_VAL, HUGE_VAL, NULL, "Byte,UInt16,Int16,Float32",
     "output data type (default: the source's; other source types are read as Float32)", 0},
    {"grid_step", "-grid_step", GG_OPTION_INT, 1, 1024, NULL, NULL,
     "node spacing of the coordinate grid in output pixels (default: chosen per scene)", 0},
};
#define NOPTIONS ((int)(sizeof table / sizeof table[0]))

const gg_option *ggo_options_table(int *count)
{
    if (count)
        *count = NOPTIONS;
    return table;
}

/* The placeholders of the flags' values, where they say more than the
 * kind's "<key>" (gg_option has no field for them): the flags of several
 * values take as many as they name. */
static const char *several_values(const gg_option *o)
{
    static const char *const names[][2] = {
        {"dem", "<file>"},
        {"dem_missing", "<h>"},
        {"dem_srs", "<srs>"},
        {"rpc_height", "<h>"},
        {"t_srs", "<srs>"},
        {"tr", "<xres> <yres>"},
        {"te", "<xmin> <ymin> <xmax> <ymax>"},
        {"ts", "<width> <height>"},
        {"srcnodata", "\"<value>[ <value>]...\""}, /* one argument */
        {"dstnodata", "\"<value>[ <value>]...\""},
        {"grid_step", "<n>"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(o->key, names[k][0]))
            return names[k][1];
    return NULL;
}

int ggo_option_flag_values(const gg_option *o, const char **names)
{
    const char *several = several_values(o);
    int n = 0;
    if (several && several[0] == '<')
        for (const char *c = several; *c; c++)
            n += *c == '<';
    else
        n = o->kind == GG_OPTION_BOOL ? 0 : o->kind == GG_OPTION_SIZE ? 2 : 1;
    if (names)
        *names = several; /* NULL: the kind's ("<key>", "a|b|c") */
    return n;
}

static const gg_option *find(const char *key)
{
    for (int k = 0; k < NOPTIONS; k++)
        if (EQUAL(key, table[k].key))
            return &table[k];
    return NULL;
}

int ggo_is_option(const char *key) { return key && find(key) != NULL; }

static char names_text[512];
static void make_names(void)
{
    size_t len = 0;
    for (int k = 0; k < NOPTIONS && len < sizeof names_text; k++)
        len += (size_t)snprintf(names_text + len, sizeof names_text - len, "%s%s",
                                k ? ", " : "", table[k].key);
}

const char *ggo_option_names(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_names);
    return names_text;
}

/* ------------------------------------------------------------ the setter */

void ggo_options_default(ggo_options *o)
{
    memset(o, 0, sizeof *o);
    o->dem_interp = GG_ORTHO_METHOD_BILINEAR;
    o->resampling = GG_ORTHO_METHOD_NEAR;
}

/* One number (all of s, finite); 1 on success. */
static int number(const char *s, double *v)
{
    char *end = NULL;
    *v = CPLStrtod(s, &end);
    return end && !*end && end != s && isfinite(*v);
}

/* "a, b or c" from a choices list "a,b,c". */
static const char *choices_text(const char *choices)
{
    static __thread char buf[256];
    char **c = CSLTokenizeString2(choices, ",", 0);
    const int n = CSLCount(c);
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s",
                                i == 0 ? "" : i == n - 1 ? " or " : ", ", c[i]);
    CSLDestroy(c);
    return buf;
}

/* Sets table entry e from value.  shown names the option as the user gave
 * it, for the message: "-tr 0 0" (a flag; as_flag) or "tr=0,0" (a key).
 * 0, or 1 with the message in err. */
static int set_entry(ggo_options *o, const gg_option *e, const char *value, const char *shown,
                     int as_flag, char *err, size_t errlen)
{
#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), 1)
    const char *key = e->key;
    if (!strcmp(key, "srcnodata") || !strcmp(key, "dstnodata")) {
        /* gdalwarp's lists: one value per band, blank- (or comma-) separated */
        const int is_src = key[0] == 's';
        double *v = is_src ? o->srcnodata_v : o->dstnodata_v;
        char **t = CSLTokenizeString2(value, ", ", 0);
        const int n = CSLCount(t);
        int ok = n >= 1 && n <= GGO_MAX_NODATA;
        for (int i = 0; ok && i < n; i++)
            ok = number(t[i], &v[i]);
        CSLDestroy(t);
        if (!ok)
            return BAD("%s: expected 1 to %d numbers, one per band", shown, GGO_MAX_NODATA);
        if (is_src) {
            o->n_srcnodata = n;
            o->srcnodata = v[0];
            o->has_srcnodata = 1;
        } else {
            o->n_dstnodata = n;
            o->dstnodata = v[0];
            o->has_dstnodata = 1;
        }
        return 0;
    }
    switch (e->kind) {
    case GG_OPTION_BOOL: /* dem_nan_missing: the flag alone (as_flag), or yes/no */
        if (as_flag)
            o->dem_nan_missing = 1;
        else if (EQUAL(value, "yes") || EQUAL(value, "true") || EQUAL(value, "on") ||
                 EQUAL(value, "1"))
            o->dem_nan_missing = 1;
        else if (EQUAL(value, "no") || EQUAL(value, "false") || EQUAL(value, "off") ||
                 EQUAL(value, "0"))
            o->dem_nan_missing = 0;
        else
            return BAD("%s: use yes or no", shown);
        return 0;
    case GG_OPTION_STRING:
        if (!strcmp(key, "dem"))
            o->dem = value;
        else if (!strcmp(key, "dem_srs"))
            o->dem_srs = value;
        else if (!strcmp(key, "t_srs"))
            o->t_srs = value;
        return 0;
    case GG_OPTION_CHOICE: {
        int found = 0;
        if (!strcmp(key, "r") || !strcmp(key, "dem_interp")) {
            /* the choices, and GDAL's other name of near, "nearest" */
            found = ggo_parse_method(value, !strcmp(key, "r") ? &o->resampling : &o->dem_interp);
        } else {
            char **c = CSLTokenizeString2(e->choices, ",", 0);
            for (int i = 0; c[i] && !found; i++)
                found = EQUAL(c[i], value);
            CSLDestroy(c);
            if (found)
                o->ot = value;
        }
        if (!found)
            return BAD("%s: use %s", shown, choices_text(e->choices));
        return 0;
    }
    case GG_OPTION_INT: {
        double v;
        if (!number(value, &v) || v != floor(v) || v < e->min || v > e->max)
            return BAD("%s: an integer from %.0f to %.0f", shown, e->min, e->max);
        o->step = (int)v; /* grid_step, the one integer */
        return 0;
    }
    default:
        break;
    }
    /* numbers: one (dem_missing, rpc_height) or several (tr, te, ts) */
    const char *names = NULL;
    const int want = ggo_option_flag_values(e, &names);
    double v[4] = {0, 0, 0, 0};
    if (want == 1) {
        if (!number(value, &v[0]))
            return BAD("%s: '%s' is not a number", shown, value);
    }
    char **t = CSLTokenizeString2(value, ", ", 0);
    if (e->kind == GG_OPTION_SIZE && CSLCount(t) == 1 && strpbrk(value, "xX")) {
        CSLDestroy(t); /* a size as "WxH" */
        t = CSLTokenizeString2(value, "xX", 0);
    }
    const int n = want == 1 ? 1 : CSLCount(t);
    /* a key's "N" for both (tr=5, ts=500), as gdal_ortho's GG: keys take sizes */
    const int both = n == 1 && want == 2;
    if (n != want && !both) {
        CSLDestroy(t);
        char expected[128];
        snprintf(expected, sizeof expected, "%s", names ? names : "<value>");
        if (!as_flag)
            for (char *c = expected; *c; c++)
                if (*c == ' ')
                    *c = ',';
        return BAD("%s: %s expected", shown, expected);
    }
    for (int i = 0; i < n && want > 1; i++)
        if (!number(t[i], &v[i])) {
            const int r = BAD("%s: '%s' is not a number", shown, t[i]);
            CSLDestroy(t);
            return r;
        }
    CSLDestroy(t);
    if (both)
        v[1] = v[0];
    if (!strcmp(key, "dem_missing")) {
        o->dem_missing = v[0];
        o->has_dem_missing = 1;
    } else if (!strcmp(key, "rpc_height")) {
        o->rpc_height = v[0];
    } else if (!strcmp(key, "tr")) {
        if (!(v[0] > e->min) || v[1] == 0)
            return BAD("%s: resolutions must be positive", shown);
        o->tr[0] = v[0];
        o->tr[1] = v[1];
        o->has_tr = 1;
    } else if (!strcmp(key, "te")) {
        if (!(v[2] > v[0] && v[3] > v[1]))
            return BAD("%s: xmin < xmax and ymin < ymax are needed", shown);
        memcpy(o->te, v, sizeof o->te);
        o->has_te = 1;
    } else if (!strcmp(key, "ts")) {
        for (int i = 0; i < 2; i++) {
            if (v[i] < e->min || v[i] != floor(v[i]))
                return BAD("%s: width and height must be positive whole numbers", shown);
            if (v[i] > e->max)
                return BAD("%s: %.0f is too large (at most %.0f)", shown, v[i], e->max);
        }
        o->ts[0] = (int)v[0];
        o->ts[1] = (int)v[1];
        o->has_ts = 1;
    }
    if (o->has_tr && o->has_ts)
        return BAD(as_flag ? "-tr and -ts cannot be used together"
                           : "tr and ts cannot be used together");
    return 0;
#undef BAD
}

int ggo_set_option(ggo_options *o, const char *key, const char *value, char *err, size_t errlen)
{
    const gg_option *e = find(key);
    if (!e) {
        snprintf(err, errlen, "'%s' is not an option of ortho (options: %s)", key,
                 ggo_option_names());
        return 1;
    }
    char shown[512];
    snprintf(shown, sizeof shown, "%s=%s", key, value);
    return set_entry(o, e, value, shown, 0, err, errlen);
}

int ggo_check_options(int n, const char *const *keys, const char *const *values, char *err,
                      size_t errlen)
{
    ggo_options o;
    ggo_options_default(&o);
    for (int i = 0; i < n; i++)
        if (ggo_set_option(&o, keys[i], values[i], err, errlen))
            return 1;
    return 0;
}

/* ------------------------------------------------------ gdal_ortho's command line */

static const gg_app_flag own_flags[] = {
    {"-outdir", "<folder>", "folder",
     "batch mode: every operand is a source, written to <folder>/<source name>.tif"},
    {NULL, NULL, NULL, NULL}};

static const gg_app_spec spec = {
    .name = PROG,
    .operation = "ortho",
    .purpose = "Orthorectifies images with RPCs over a DEM on the GPU, with the geometry of\n"
               "gdalwarp -rpc -to RPC_DEM=<dem> -et 0 (see docs/gdal_ortho.md).",
    .operands = "<src_dataset> <dst_dataset>",
    .help = "\nSeveral scenes: gdal_ortho [options] -outdir <folder> <src_dataset>...\n",
    .flags = own_flags,
};

static const char *placeholders(const gg_option *o)
{
    const char *names = NULL;
    ggo_option_flag_values(o, &names);
    return names;
}

void ggo_print_usage(FILE *out)
{
    char *lines = CPLStrdup("");
    for (int k = 0; k < NOPTIONS; k++) /* the nodata lists: not gg_app's one value */
        if (!strcmp(table[k].key, "srcnodata") || !strcmp(table[k].key, "dstnodata")) {
            char *more = CPLStrdup(CPLSPrintf("%s  %s %s\n                     %s\n", lines,
                                              table[k].flag, several_values(&table[k]),
                                              table[k].help));
            CPLFree(lines);
            lines = more;
        }
    char *general = CPLStrdup(CPLSPrintf(
        "%s"
        "  -of <format>       output format (default GTiff; it must support Create)\n"
        "  -co <NAME>=<VALUE> creation option of the output format (repeatable)\n"
        "  -device <device>   auto, cpu, cuda[:N] or opencl[:P[:D]]\n"
        "                     (default: the GG_DEVICE configuration option, else auto)\n"
        "  -q                 quiet: no progress, no notices\n"
        "  -v                 output size, grid step, device and launch configuration\n",
        lines));
    gg_app_print_table_usage(&spec, table, NOPTIONS, placeholders,
                             "[-srcnodata \"<value>[ <value>]...\"] "
                             "[-dstnodata \"<value>[ <value>]...\"] [-of <format>] "
                             "[-co <NAME>=<VALUE>]... [-device <device>] [-q] [-v]",
                             general, out);
    CPLFree(lines);
    CPLFree(general);
}

void ggo_print_description(FILE *out)
{
    gg_app_print_table_description(&spec, table, NOPTIONS, placeholders, out);
}

void ggo_command_line_free(ggo_command_line *c)
{
    CSLDestroy(c->co);
    CSLDestroy(c->positional);
    c->co = c->positional = NULL;
}

static int is_flag(const char *a)
{
    /* "-5" and "-.5" are values, a lone "-" a name */
    return a[0] == '-' && a[1] && !strchr("0123456789.", a[1]);
}

int ggo_parse_command_line(ggo_command_line *c, int argc, char **argv, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    ggo_options_default(&c->g);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (EQUAL(a, "--help") || EQUAL(a, "-h") || EQUAL(a, "-help")) {
            ggo_print_usage(stdout);
            return GGO_CMD_DONE;
        }
        if (EQUAL(a, "--describe")) {
            ggo_print_description(stdout);
            return GGO_CMD_DONE;
        }
        if (EQUAL(a, "--version")) {
            gg_app_print_version(PROG);
            return GGO_CMD_DONE;
        }
    }
#define NEED(n)                                                                               \
    if (i + (n) >= argc) {                                                                    \
        snprintf(err, errlen, "%s needs %d value%s (see --help)", a, (n), (n) > 1 ? "s" : ""); \
        return GGO_CMD_ERROR;                                                                 \
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const gg_option *e = NULL;
        for (int k = 0; k < NOPTIONS && !e; k++)
            if (EQUAL(a, table[k].flag))
                e = &table[k];
        if (e) {
            const int n = ggo_option_flag_values(e, NULL);
            NEED(n);
            /* one value: kept by pointer (argv outlives the options); several:
             * joined as the key takes them, numbers the setter keeps as such */
            char joined[1024] = "", shown[1200];
            snprintf(shown, sizeof shown, "%s", e->flag);
            for (int k = 1; k <= n; k++) {
                const size_t len = strlen(joined);
                snprintf(joined + len, sizeof joined - len, "%s%s", k > 1 ? "," : "", argv[i + k]);
                const size_t sl = strlen(shown);
                snprintf(shown + sl, sizeof shown - sl, " %s", argv[i + k]);
            }
            if (set_entry(&c->g, e, n == 1 ? argv[i + 1] : joined, shown, 1, err, errlen))
                return GGO_CMD_ERROR;
            i += n;
        } else if (EQUAL(a, "-of") || EQUAL(a, "-co") || EQUAL(a, "-outdir") ||
                   EQUAL(a, "-device")) {
            NEED(1);
            const char *v = argv[++i];
            if (EQUAL(a, "-of"))
                c->format = v;
            else if (EQUAL(a, "-co"))
                c->co = CSLAddString(c->co, v);
            else if (EQUAL(a, "-outdir"))
                c->outdir = v;
            else
                c->device = v;
        } else if (EQUAL(a, "-q") || EQUAL(a, "-quiet")) {
            c->g.quiet = 1;
        } else if (EQUAL(a, "-v")) {
            c->g.verbose = 1;
        } else if (is_flag(a)) {
            snprintf(err, errlen, "unknown option %s (see --help)", a);
            return GGO_CMD_ERROR;
        } else {
            c->positional = CSLAddString(c->positional, a);
        }
    }
#undef NEED
    return GGO_CMD_RUN;
}
