/*
 * gg_app.c -- the shared body of the geogpu gdal_* utilities: one option
 * parser, one progress path and one output-writing path, so that every
 * utility behaves like the others and like GDAL's own programs.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_app.h"
#include "gpu/fault.h"

#include "gg_input_files.h"
#include "gg_output.h"
#include "gg_work_limit.h"
#include "gg_product_write.h"
#include "gg_processed.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"
#include "gdal.h"
#include "gdal_utils.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct gg_app {
    const gg_app_spec *spec;
    gg_op *op;            /* until handed to the processed dataset */
    char **srcs;          /* the source datasets, in order */
    const char *dst;
    char **positional;    /* every non-flag argument: sources, then dst */
    const char *band_prefix, *band_folder; /* gg_app_band_folder */
    const char *format;   /* -of */
    const char *type;     /* -ot */
    const char *device;   /* -device */
    char **creation_options; /* -co, repeatable */
    char **flags_given;   /* the utility's own flags seen, for "required" */
    int quiet, verbose;
    int per_band_files;   /* gg_app_per_band_files */
    /* The first failure GDAL reported during the run; printed once, as the
     * run's one error line. */
    int failures;
    CPLErrorNum error_no;
    char error_msg[2048];
};

/* ----------------------------------------------------------------- errors */

/* Keeps the first failure instead of printing every one: a failed block read
 * makes GDAL report the same problem several times on the way up. */
static pthread_mutex_t errors_lock = PTHREAD_MUTEX_INITIALIZER;

static void CPL_STDCALL collect_errors(CPLErr err_class, CPLErrorNum err_no, const char *msg)
{
    gg_app *app = (gg_app *)CPLGetErrorHandlerUserData();
    if (err_class == CE_Failure || err_class == CE_Fatal) {
        /* worker threads (several devices) report here too */
        pthread_mutex_lock(&errors_lock);
        if (app->failures++ == 0) {
            app->error_no = err_no;
            snprintf(app->error_msg, sizeof app->error_msg, "%s", msg ? msg : "");
        }
        pthread_mutex_unlock(&errors_lock);
        return;
    }
    CPLDefaultErrorHandler(err_class, err_no, msg);
}

/* "GG: multilook: looks 8x8 ..." -> "looks 8x8 ...": the utility's name
 * replaces the driver's and the op's prefixes. */
static const char *strip_prefixes(const gg_app *app, const char *msg)
{
    if (!strncmp(msg, "GG: ", 4))
        msg += 4;
    const size_t n = app->spec->operation ? strlen(app->spec->operation) : 0;
    if (!n)
        return msg;
    if (!strncmp(msg, app->spec->operation, n) && !strncmp(msg + n, ": ", 2))
        msg += n + 2;
    return msg;
}

static void print_error(const gg_app *app, CPLErrorNum err_no, const char *msg)
{
    /* CPLDefaultErrorHandler's format, so scripts see one familiar line */
    fprintf(stderr, "ERROR %d: %s: %s\n", (int)err_no, app->spec->name, strip_prefixes(app, msg));
    fflush(stderr);
}

/* Reports a failed step: GDAL's first message if it gave one, else ours. */
static int fail(gg_app *app, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(gg_app *app, const char *fmt, ...)
{
    if (app->failures > 0) {
        print_error(app, app->error_no, app->error_msg);
    } else {
        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        print_error(app, CPLE_AppDefined, msg);
    }
    app->failures = 0;
    return 1;
}

int gg_app_usage_error(gg_app *app, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ERROR 1: %s: %s (see --help)\n", app->spec->name, msg);
    return -1;
}

/* ---------------------------------------------------------------- options */

int gg_app_values(gg_app *app, int argc, char **argv, int *pi, int n, const char **values)
{
    if (*pi + n >= argc)
        return gg_app_usage_error(app, "%s needs %d value%s", argv[*pi], n, n == 1 ? "" : "s");
    for (int k = 0; k < n; k++)
        values[k] = argv[*pi + 1 + k];
    *pi += n;
    return 1;
}

int gg_app_band_folder(gg_app *app, const char *prefix, const char *folder)
{
    VSIStatBufL st;
    if (VSIStatL(folder, &st) != 0 || !VSI_ISDIR(st.st_mode))
        return gg_app_usage_error(app, "the folder '%s' does not exist", folder);
    app->band_prefix = prefix;
    app->band_folder = folder;
    return 1;
}

void gg_app_per_band_files(gg_app *app) { app->per_band_files = 1; }

int gg_app_set(gg_app *app, const char *key, const char *value)
{
    if (!app->op)
        return gg_app_usage_error(app, "-%s does not apply to this utility", key);
    if (gg_op_set(app->op, key, value) != GG_OK) {
        print_error(app, CPLE_IllegalArg, gg_op_last_error(app->op));
        return -1;
    }
    return 1;
}

static int is_positive_int(const char *s)
{
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    return end != s && !*end && !errno && v >= 1 && v <= 2147483647L;
}

int gg_app_set_pair(gg_app *app, const char *flag, const char *key, const char *a, const char *b)
{
    if (!is_positive_int(a) || !is_positive_int(b)) {
        print_error(app, CPLE_IllegalArg,
                    CPLSPrintf("%s takes two positive integers, not '%s %s'", flag, a, b));
        return -1;
    }
    char value[64];
    snprintf(value, sizeof value, "%sx%s", a, b);
    return gg_app_set(app, key, value);
}

static int gg_parse_bool_text(const char *s, int *v)
{
    *v = EQUAL(s, "yes") || EQUAL(s, "true") || EQUAL(s, "on") || EQUAL(s, "1");
    return *v || EQUAL(s, "no") || EQUAL(s, "false") || EQUAL(s, "off") || EQUAL(s, "0");
}

int gg_app_option_values(const gg_option *o, const char **value_for_switch)
{
    if (o->kind == GG_OPTION_BOOL) {
        int def = 0;
        if (value_for_switch)
            *value_for_switch =
                o->default_value && gg_parse_bool_text(o->default_value, &def) && def ? "no"
                                                                                      : "yes";
        return 0;
    }
    return o->kind == GG_OPTION_SIZE ? 2 : 1;
}

static int is_common_option(const gg_option *o)
{
    return !strcmp(o->key, "srcnodata") || !strcmp(o->key, "dstnodata");
}

static int is_integer(const char *s)
{
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    return end != s && !*end && !errno && v >= -2147483647L && v <= 2147483647L;
}

/* An op option given by its flag (the op's table): 1 when consumed, 0 when
 * argv[*pi] is none of them, -1 after reporting an error. */
static int parse_op_flag(gg_app *app, int argc, char **argv, int *pi)
{
    int n = 0;
    const gg_option *o = app->op ? gg_op_options(gg_op_name(app->op), &n) : NULL;
    for (int k = 0; k < n; k++) {
        if (!o[k].flag || is_common_option(&o[k]) || !EQUAL(argv[*pi], o[k].flag))
            continue;
        const char *sw = NULL, *v[2];
        const int nv = gg_app_option_values(&o[k], &sw);
        if (nv == 0)
            return gg_app_set(app, o[k].key, sw);
        if (gg_app_values(app, argc, argv, pi, nv, v) < 0)
            return -1;
        if (nv == 1)
            return gg_app_set(app, o[k].key, v[0]);
        if (o[k].min >= 1)
            return gg_app_set_pair(app, o[k].flag, o[k].key, v[0], v[1]);
        if (!is_integer(v[0]) || !is_integer(v[1])) {
            print_error(app, CPLE_IllegalArg,
                        CPLSPrintf("%s takes two integers, not '%s %s'", o[k].flag, v[0], v[1]));
            return -1;
        }
        return gg_app_set(app, o[k].key, CPLSPrintf("%sx%s", v[0], v[1]));
    }
    return 0;
}

/* "<x> <y>", "<levels>", "nearest|bilinear|...": the values of an option's
 * flag as --help and --describe write them; NULL for a switch.  values(o)
 * (may be NULL) gives them where the kind does not. */
static const char *option_values(const gg_option *o, gg_app_placeholders values)
{
    static char buf[256];
    const char *given = values ? values(o) : NULL;
    if (given)
        return given;
    switch (o->kind) {
    case GG_OPTION_BOOL:
        return NULL;
    case GG_OPTION_SIZE:
        return "<x> <y>";
    case GG_OPTION_CHOICE:
        snprintf(buf, sizeof buf, "%s", o->choices ? o->choices : "");
        for (char *c = buf; *c; c++)
            if (*c == ',')
                *c = '|';
        return buf;
    default:
        snprintf(buf, sizeof buf, "<%s>", o->key);
        return buf;
    }
}

/* "-looks <x> <y>", "-levels <levels>", "-interp nearest|bilinear|..." */
static const char *option_usage(const gg_option *o, gg_app_placeholders values)
{
    static char buf[256];
    const char *given = values ? values(o) : NULL;
    if (given) {
        snprintf(buf, sizeof buf, "%s %s", o->flag, given);
        return buf;
    }
    switch (o->kind) {
    case GG_OPTION_BOOL:
        return o->flag;
    case GG_OPTION_SIZE:
        snprintf(buf, sizeof buf, "%s <x> <y>", o->flag);
        return buf;
    case GG_OPTION_CHOICE: {
        snprintf(buf, sizeof buf, "%s %s", o->flag, o->choices ? o->choices : "");
        for (char *c = buf + strlen(o->flag); *c; c++)
            if (*c == ',')
                *c = '|';
        return buf;
    }
    default:
        snprintf(buf, sizeof buf, "%s <%s>", o->flag, o->key);
        return buf;
    }
}

/* Appends one flag to the synopsis ("[usage]" unless required) and its
 * help line ("  usage   what def"). */
static void add_usage(char **synopsis, char **lines, const char *u, int required,
                      const char *what, const char *def)
{
    char *longer = CPLStrdup(CPLSPrintf("%s%s%s%s%s", *synopsis, **synopsis ? " " : "",
                                        required ? "" : "[", u, required ? "" : "]"));
    CPLFree(*synopsis);
    *synopsis = longer;
    /* "  usage" padded to column 21 (or alone on its line), then the text in
     * lines of at most 88 characters, continued at column 21 */
    const size_t w = strlen(u);
    char *text = CPLStrdup(CPLSPrintf("%s%s", what, def));
    char *out = CPLStrdup(CPLSPrintf("%s  %s%*s", *lines, u, w < 18 ? (int)(19 - w) : 0, ""));
    size_t col = w < 18 ? 21 : 88;
    char **words = CSLTokenizeString2(text, " ", 0);
    for (char **wd = words; wd && *wd; wd++) {
        const size_t len = strlen(*wd);
        const int first = col == 21;
        char *next = col + !first + len > 88 ? CPLStrdup(CPLSPrintf("%s\n%21s%s", out, "", *wd))
                                            : CPLStrdup(CPLSPrintf("%s%s%s", out, first ? "" : " ", *wd));
        col = col + !first + len > 88 ? 21 + len : col + !first + len;
        CPLFree(out);
        out = next;
    }
    CSLDestroy(words);
    CPLFree(text);
    CPLFree(*lines);
    *lines = CPLStrdup(CPLSPrintf("%s\n", out));
    CPLFree(out);
}

/* The synopsis and the help lines of the options of a table that have a flag. */
static void table_usage(const gg_option *o, int n, gg_app_placeholders values, char **synopsis,
                        char **lines)
{
    for (int k = 0; k < n; k++) {
        if (!o[k].flag || is_common_option(&o[k]))
            continue;
        const char *sw = NULL;
        gg_app_option_values(&o[k], &sw);
        const char *what = o[k].help;
        char def[128] = "";
        if (o[k].kind == GG_OPTION_BOOL && sw && !strcmp(sw, "no"))
            what = CPLSPrintf("%s=no (default yes: %s)", o[k].key, o[k].help);
        else if (o[k].default_value && o[k].kind != GG_OPTION_BOOL)
            snprintf(def, sizeof def, " (default %s)", o[k].default_value);
        add_usage(synopsis, lines, option_usage(&o[k], values), o[k].required, what, def);
    }
}

/* The same for the options of op. */
static void op_usage(const char *op, char **synopsis, char **lines)
{
    int n = 0;
    const gg_option *o = op ? gg_op_options(op, &n) : NULL;
    table_usage(o, n, NULL, synopsis, lines);
}

static int is_required(const gg_app_spec *spec, const char *flag)
{
    for (const char *const *r = spec->required; r && *r; r++)
        if (EQUAL(*r, flag))
            return 1;
    return 0;
}

/* The same for the utility's own flags (spec->flags). */
static void flags_usage(const gg_app_spec *spec, char **synopsis, char **lines)
{
    for (const gg_app_flag *f = spec->flags; f && f->flag; f++) {
        const char *u = f->values ? CPLSPrintf("%s %s", f->flag, f->values) : f->flag;
        add_usage(synopsis, lines, u, is_required(spec, f->flag), f->help, "");
    }
}

/* Folds a synopsis into lines of at most 88 characters, "       " indented. */
static char *fold_synopsis(const char *text)
{
    char *out = CPLStrdup("");
    char **words = CSLTokenizeString2(text, " \n", 0);
    size_t col = 7;
    for (char **w = words; w && *w; w++) {
        const size_t len = strlen(*w);
        /* a flag and its values stay together: break only before "[" or "-" */
        const int may_break = (*w)[0] == '[' || (*w)[0] == '-';
        char *next;
        if (w != words && may_break && col + 1 + len > 88) {
            next = CPLStrdup(CPLSPrintf("%s\n       %s", out, *w));
            col = 7 + len;
        } else {
            next = CPLStrdup(CPLSPrintf("%s%s%s", out, w == words ? "" : " ", *w));
            col += len + (w != words);
        }
        CPLFree(out);
        out = next;
    }
    CSLDestroy(words);
    return out;
}

static void print_usage(const gg_app_spec *spec, FILE *out)
{
    char *synopsis = CPLStrdup(""), *lines = CPLStrdup("");
    op_usage(spec->operation, &synopsis, &lines);
    op_usage(spec->also_operation, &synopsis, &lines);
    flags_usage(spec, &synopsis, &lines);
    char *all = CPLStrdup(CPLSPrintf("%s%s%s", synopsis, *synopsis && spec->synopsis ? " " : "",
                                     spec->synopsis ? spec->synopsis : ""));
    char *folded = fold_synopsis(all);
    char *help = CPLStrdup(CPLSPrintf("%s%s", lines, spec->help ? spec->help : ""));
    /* an op's product takes nodata values and has a GGVRT form; a
     * utility's own product (gdal_fmcw's) neither */
    const int op = spec->operation && !spec->open_source;
    fprintf(out,
            "Usage: %s [--help] [--help-general] [--version]\n"
            "       [-of <format>] [-co <NAME>=<VALUE>]... [-ot <type>]\n"
            "       %s[-device <device>] [-q] [-v]\n"
            "       %s\n"
            "       %s\n\n"
            "%s\n\n"
            "%s"
            "  -of <format>       output format (default: from the extension, else GTiff)%s\n"
            "  -co <NAME>=<VALUE> creation option of the output format (repeatable)\n"
            "  -ot <type>         output data type (Byte, Int16, ..., Float32, CFloat32...)\n"
            "%s"
            "  -device <device>   auto, cpu, cuda[:N] or opencl[:P[:D]]\n"
            "                     (default: the GG_DEVICE configuration option, else auto)\n"
            "  -q                 quiet: no progress, no notices\n"
            "  -v                 report the device used and the elapsed time\n",
            spec->name, op ? "[-srcnodata <value>] [-dstnodata <value>] " : "", folded,
            spec->operands ? spec->operands : "<src_dataset> <dst_dataset>", spec->purpose, help,
            op ? ";\n                     GGVRT writes a .ggvrt virtual raster instead of pixels"
               : "",
            op ? "  -srcnodata <value> input nodata value (default: the input band's)\n"
                 "  -dstnodata <value> output nodata value\n"
               : "");
    CPLFree(synopsis);
    CPLFree(lines);
    CPLFree(all);
    CPLFree(folded);
    CPLFree(help);
}

static void json_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void json_number(FILE *out, const gg_option *o, double v)
{
    if (o->kind == GG_OPTION_INT || o->kind == GG_OPTION_FLOAT || o->kind == GG_OPTION_SIZE) {
        if (v > -HUGE_VAL && v < HUGE_VAL) {
            fprintf(out, "%.17g", v);
            return;
        }
    }
    fputs("null", out);
}

static const char *const option_kind_names[] = {"int", "float", "bool", "size", "choice", "string"};

/* The entries of a table's options; op: the name each entry gives. */
static void describe_table(FILE *out, const char *op, const gg_option *o, int n,
                           gg_app_placeholders values, int *first)
{
    for (int k = 0; k < n; k++) {
        fputs(*first ? "\n    {" : ",\n    {", out);
        *first = 0;
        fputs("\"operation\": ", out);
        json_string(out, op);
        fputs(", \"key\": ", out);
        json_string(out, o[k].key);
        fputs(", \"flag\": ", out);
        json_string(out, o[k].flag);
        fputs(", \"values\": ", out);
        json_string(out, o[k].flag ? option_values(&o[k], values) : NULL);
        fprintf(out, ", \"kind\": \"%s\", \"min\": ", option_kind_names[o[k].kind]);
        json_number(out, &o[k], o[k].min);
        fputs(", \"max\": ", out);
        json_number(out, &o[k], o[k].max);
        fputs(", \"default\": ", out);
        json_string(out, o[k].default_value);
        fputs(", \"choices\": ", out);
        json_string(out, o[k].choices);
        const char *sw = NULL;
        gg_app_option_values(&o[k], &sw);
        fputs(", \"switch_value\": ", out);
        json_string(out, o[k].kind == GG_OPTION_BOOL ? sw : NULL);
        fputs(", \"help\": ", out);
        json_string(out, o[k].help);
        fprintf(out, ", \"required\": %s, \"common\": %s}", o[k].required ? "true" : "false",
                is_common_option(&o[k]) ? "true" : "false");
    }
}

static void describe_options(FILE *out, const char *op, int *first)
{
    int n = 0;
    const gg_option *o = op ? gg_op_options(op, &n) : NULL;
    describe_table(out, op, o, n, NULL, first);
}

/* --describe: the utility's parameters as JSON (what QGIS reads): the
 * options of its op(s), or of table (n entries) when it has one. */
static void describe_utility(const gg_app_spec *spec, const gg_option *table, int n,
                             gg_app_placeholders values, FILE *out)
{
    fputs("{\n  \"program\": ", out);
    json_string(out, spec->name);
    fputs(",\n  \"purpose\": ", out);
    json_string(out, spec->purpose);
    fputs(",\n  \"operation\": ", out);
    json_string(out, spec->operation);
    fputs(",\n  \"also_operation\": ", out);
    json_string(out, spec->also_operation);
    fputs(",\n  \"operands\": ", out);
    json_string(out, spec->operands ? spec->operands : "<src_dataset> <dst_dataset>");
    fprintf(out, ",\n  \"inputs\": %d",
            spec->operation && !table ? gg_op_input_count(spec->operation) : 1);
    fputs(",\n  \"options\": [", out);
    int first = 1;
    if (table) {
        describe_table(out, spec->operation, table, n, values, &first);
    } else {
        describe_options(out, spec->operation, &first);
        describe_options(out, spec->also_operation, &first);
    }
    fputs(first ? "]" : "\n  ]", out);
    fputs(",\n  \"flags\": [", out);
    first = 1;
    for (const gg_app_flag *f = spec->flags; f && f->flag; f++) {
        fputs(first ? "\n    {" : ",\n    {", out);
        first = 0;
        fputs("\"flag\": ", out);
        json_string(out, f->flag);
        fputs(", \"values\": ", out);
        json_string(out, f->values);
        fputs(", \"kind\": ", out);
        json_string(out, f->kind);
        fputs(", \"help\": ", out);
        json_string(out, f->help);
        fprintf(out, ", \"required\": %s}", is_required(spec, f->flag) ? "true" : "false");
    }
    fputs(first ? "]\n}\n" : "\n  ]\n}\n", out);
}

static void print_description(const gg_app_spec *spec, FILE *out)
{
    describe_utility(spec, NULL, 0, NULL, out);
}

void gg_app_print_table_description(const gg_app_spec *spec, const gg_option *options, int n,
                                    gg_app_placeholders values, FILE *out)
{
    describe_utility(spec, options, n, values, out);
}

void gg_app_print_table_usage(const gg_app_spec *spec, const gg_option *options, int n,
                              gg_app_placeholders values, const char *general_synopsis,
                              const char *general_lines, FILE *out)
{
    char *synopsis = CPLStrdup(""), *lines = CPLStrdup("");
    table_usage(options, n, values, &synopsis, &lines);
    flags_usage(spec, &synopsis, &lines);
    char *all = CPLStrdup(CPLSPrintf("%s%s%s%s%s", synopsis,
                                     *synopsis && spec->synopsis ? " " : "",
                                     spec->synopsis ? spec->synopsis : "",
                                     general_synopsis ? " " : "",
                                     general_synopsis ? general_synopsis : ""));
    char *folded = fold_synopsis(all);
    fprintf(out,
            "Usage: %s [--help] [--help-general] [--version] [--describe]\n"
            "       %s\n"
            "       %s\n\n"
            "%s\n\n"
            "%s%s%s",
            spec->name, folded,
            spec->operands ? spec->operands : "<src_dataset> <dst_dataset>", spec->purpose,
            lines, general_lines ? general_lines : "", spec->help ? spec->help : "");
    CPLFree(synopsis);
    CPLFree(lines);
    CPLFree(all);
    CPLFree(folded);
}

int gg_app_flag_values(const char *a, const char *const *own1, const char *const *own2)
{
    static const char *const one[] = {"-of", "-ot", "-co", "-srcnodata", "-dstnodata", "-device",
                                      "-oo", "-if", NULL};
    static const char *const two[] = {"--config", NULL};
    const char *const *lists[4] = {two, own2, one, own1};
    for (int l = 0; l < 4; l++)
        for (const char *const *f = lists[l]; f && *f; f++)
            if (EQUAL(a, *f))
                return l < 2 ? 2 : 1;
    return 0;
}

static int is_flag(const char *arg)
{
    /* "-5" is a value, not a flag; a lone "-" is a name */
    return arg[0] == '-' && arg[1] && !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.';
}

/* Returns 0 when the command line is complete, 1 on a reported error. */
static int parse_arguments(gg_app *app, int argc, char **argv)
{
    const gg_app_spec *spec = app->spec;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *v[1] = {NULL};
        int r = 0;
        if (EQUAL(arg, "-of")) {
            r = gg_app_values(app, argc, argv, &i, 1, v);
            app->format = v[0];
        } else if (EQUAL(arg, "-co")) {
            r = gg_app_values(app, argc, argv, &i, 1, v);
            if (r > 0)
                app->creation_options = CSLAddString(app->creation_options, v[0]);
        } else if (EQUAL(arg, "-ot")) {
            r = gg_app_values(app, argc, argv, &i, 1, v);
            app->type = v[0];
        } else if (EQUAL(arg, "-srcnodata") || EQUAL(arg, "-dstnodata")) {
            r = gg_app_values(app, argc, argv, &i, 1, v);
            if (r > 0)
                r = gg_app_set(app, EQUAL(arg, "-srcnodata") ? "srcnodata" : "dstnodata", v[0]);
        } else if (EQUAL(arg, "-device")) {
            r = gg_app_values(app, argc, argv, &i, 1, v);
            app->device = v[0];
        } else if (EQUAL(arg, "-q") || EQUAL(arg, "-quiet")) {
            app->quiet = 1;
            r = 1;
        } else if (EQUAL(arg, "-v")) {
            app->verbose = 1;
            r = 1;
        } else if (is_flag(arg)) {
            r = spec->parse_flag ? spec->parse_flag(app, argc, argv, &i) : 0;
            if (r == 0)
                r = parse_op_flag(app, argc, argv, &i);
            if (r > 0)
                app->flags_given = CSLAddString(app->flags_given, arg);
            else if (r == 0)
                r = gg_app_usage_error(app, "unknown option '%s'", arg);
        } else {
            app->positional = CSLAddString(app->positional, arg);
            r = 1;
        }
        if (r < 0)
            return 1;
    }
    for (const char *const *req = spec->required; req && *req; req++)
        if (CSLFindString(app->flags_given, *req) < 0)
            return gg_app_usage_error(app, "missing %s", *req) < 0;
    int nopt = 0;
    const gg_option *opt = app->op ? gg_op_options(gg_op_name(app->op), &nopt) : NULL;
    for (int k = 0; k < nopt; k++)
        if (opt[k].required && opt[k].flag && CSLFindString(app->flags_given, opt[k].flag) < 0)
            return gg_app_usage_error(app, "missing %s", opt[k].flag) < 0;
    /* sources, then the destination last */
    const int npos = CSLCount(app->positional);
    if (npos < 2)
        return gg_app_usage_error(app, "missing %s dataset name",
                                  npos ? "destination" : "source") < 0;
    app->dst = app->positional[npos - 1];
    for (int k = 0; k < npos - 1; k++)
        app->srcs = CSLAddString(app->srcs, app->positional[k]);
    const int wanted = spec->operation ? gg_op_input_count(spec->operation) : 1, nsrc = npos - 1;
    if (wanted > 0 && nsrc != wanted)
        return gg_app_usage_error(app, "takes %d source dataset%s, got %d", wanted,
                                  wanted == 1 ? "" : "s", nsrc) < 0;
    return 0;
}

/* ----------------------------------------------------------------- output */

/* The driver GDAL's own utilities would pick: the first writable raster
 * driver that lists the extension, GTiff when none does. */
static GDALDriverH guess_driver(const char *dst)
{
    const char *ext = CPLGetExtension(dst);
    GDALDriverH found = NULL, second = NULL;
    for (int i = 0; *ext && i < GDALGetDriverCount(); i++) {
        GDALDriverH drv = GDALGetDriver(i);
        if (!GDALGetMetadataItem(drv, GDAL_DCAP_RASTER, NULL) ||
            (!GDALGetMetadataItem(drv, GDAL_DCAP_CREATE, NULL) &&
             !GDALGetMetadataItem(drv, GDAL_DCAP_CREATECOPY, NULL)))
            continue;
        const char *exts = GDALGetMetadataItem(drv, GDAL_DMD_EXTENSIONS, NULL);
        char **list = CSLTokenizeString(exts ? exts : "");
        const int match = CSLFindString(list, ext) >= 0;
        CSLDestroy(list);
        if (match) {
            if (!found)
                found = drv;
            else if (!second)
                second = drv;
        }
    }
    if (found && second &&
        !(EQUAL(GDALGetDriverShortName(found), "GTiff") &&
          EQUAL(GDALGetDriverShortName(second), "COG")))
        CPLError(CE_Warning, CPLE_AppDefined, "Several drivers matching %s extension. Using %s",
                 ext, GDALGetDriverShortName(found));
    return found ? found : GDALGetDriverByName("GTiff");
}

/* Puts the run's files in place (gg_output_set_commit), reporting a
 * failure as the utility's one error line. */
static int commit_outputs(gg_app *app, gg_output_set *set)
{
    char why[2048];
    app->failures = 0;
    if (gg_output_set_commit(set, why, sizeof why))
        return fail(app, "%s", why);
    return 0;
}

/* The product's side outputs (spec->side_outputs) into set, then the whole
 * set committed.  0, or 1 after the error. */
static int finish_outputs(gg_app *app, gg_output_set *set)
{
    if (app->spec->side_outputs &&
        app->spec->side_outputs(app, gg_output_set_temporary(set, 0), set))
        return 1;
    return commit_outputs(app, set);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The one place a utility tells which device it runs on (-v) and prints
 * the fallback notice under auto ("no GPU device found, using the CPU").
 * A GG dataset (op utilities) was started by GGDatasetStart; a utility's
 * own product dataset (open_source: the FMCW driver) answers through its
 * "GEOGPU" metadata domain, which starts its device.  Returns 1 after
 * reporting a device that cannot start. */
static int report_device(gg_app *app, GDALDatasetH ds)
{
    const char *name, *notice;
    if (app->spec->open_source) {
        notice = GDALGetMetadataItem(ds, "DEVICE_NOTICE", "GEOGPU");
        if (!notice && app->failures > 0)
            return fail(app, "cannot start the device");
        name = GDALGetMetadataItem(ds, "DEVICE", "GEOGPU");
    } else {
        name = GGDatasetDeviceName(ds);
        notice = GGDatasetDeviceNotice(ds);
    }
    if (app->verbose && name)
        fprintf(stderr, "%s: device %s\n", app->spec->name, name);
    gg_app_notice(app->spec->name, app->quiet, notice);
    return 0;
}

void gg_app_notice(const char *utility, int quiet, const char *notice)
{
    if (quiet || !notice || !*notice)
        return;
    if (!strncmp(notice, "geogpu: ", 8))
        notice += 8;
    fprintf(stderr, "%s: %s\n", utility, notice);
    fflush(stderr);
}

static int bands_mix_types(GDALDatasetH ds)
{
    const GDALDataType t0 = GDALGetRasterDataType(GDALGetRasterBand(ds, 1));
    for (int b = 2; b <= GDALGetRasterCount(ds); b++)
        if (GDALGetRasterDataType(GDALGetRasterBand(ds, b)) != t0)
            return 1;
    return 0;
}

/* Progress of the GDALTranslate copy, called as each chunk has been
 * written: GG_FAULT=write:N (tests) fails the N-th as a write error would. */
static int CPL_STDCALL copy_progress(double complete, const char *msg, void *scaled)
{
    if (complete > 0.0 && gg_fault_point("write")) {
        CPLError(CE_Failure, CPLE_FileIO, "writing the output failed: injected fault (GG_FAULT)");
        return FALSE;
    }
    return GDALScaledProgress(complete, msg, scaled);
}

/* -device as a list: "cuda:0,cuda:1", "cuda:all" (every CUDA device),
 * "opencl:all"; one entry otherwise ("" = GG_DEVICE, else auto). */
static char **device_list(gg_app *app)
{
    char **list = NULL;
    char **items = CSLTokenizeString2(app->device ? app->device : "", ",", 0);
    for (char **it = items; it && *it; it++) {
        if (EQUAL(*it, "cuda:all") || EQUAL(*it, "opencl:all")) {
            const char *kind = EQUALN(*it, "cuda", 4) ? "cuda:" : "opencl:";
            const int before = CSLCount(list);
            char buf[8192];
            gg_list_devices(buf, sizeof buf);
            char **lines = CSLTokenizeString2(buf, "\n", 0);
            for (char **l = lines; l && *l; l++)
                if (EQUALN(*l, kind, strlen(kind)))
                    list = CSLAddString(list, CPLSPrintf("%.*s", (int)strcspn(*l, " "), *l));
            CSLDestroy(lines);
            if (CSLCount(list) == before) {
                fail(app, "-device %s: no %.*s device found", *it, (int)strlen(kind) - 1, kind);
                CSLDestroy(items);
                CSLDestroy(list);
                return NULL;
            }
        } else {
            list = CSLAddString(list, *it);
        }
    }
    CSLDestroy(items);
    if (!list)
        list = CSLAddString(list, "");
    return list;
}

/* The product on one device: its own inputs and its own op, so that
 * devices work in parallel.  Takes op, also on failure. */
static GDALDatasetH open_product(gg_app *app, gg_op *op, const char *device)
{
    const int nsrc = CSLCount(app->srcs);
    GDALDatasetH *ins = CPLCalloc((size_t)nsrc, sizeof *ins);
    for (int k = 0; k < nsrc; k++) {
        ins[k] = GDALOpenEx(app->srcs[k], GDAL_OF_RASTER | GDAL_OF_VERBOSE_ERROR, NULL, NULL, NULL);
        if (!ins[k]) {
            for (int j = 0; j < k; j++)
                GDALClose(ins[j]);
            CPLFree(ins);
            gg_op_free(op);
            fail(app, "cannot open '%s'", app->srcs[k]);
            return NULL;
        }
    }
    GDALDatasetH ds = GGCreateProcessedDataset(op, nsrc, ins, TRUE, *device ? device : NULL);
    CPLFree(ins);
    if (!ds)
        fail(app, "cannot process '%s'", app->srcs[0]);
    return ds;
}

/* A fresh op with the same options (one per device). */
static gg_op *copy_op(const gg_op *op)
{
    gg_op *c = NULL;
    if (gg_op_new(gg_op_name(op), &c, NULL, 0) != GG_OK)
        return NULL;
    for (int i = 0; i < gg_op_option_count(op); i++) {
        const char *k, *v;
        if (gg_op_option_at(op, i, &k, &v) != GG_OK || gg_op_set(c, k, v) != GG_OK) {
            gg_op_free(c);
            return NULL;
        }
    }
    return c;
}

/* A second worker on each CUDA device (its own processed dataset and
 * context on the same GPU): strips alternate between the two, so one
 * strip's copies overlap the other's kernels.  Same bits as one worker.
 * Not for ops with a statistics pass (each worker would redo it).
 * Appends to *dss, its device started like theirs (in_background: on a
 * thread of its own); returns 1 after reporting a failure. */
static int add_cuda_workers(gg_app *app, GDALDatasetH **dss, int *ndev, int in_background)
{
    if (gg_op_needs_stats(GGDatasetOperation((*dss)[0])))
        return 0;
    const int nbase = *ndev;
    for (int k = 0; k < nbase; k++) {
        if (strcmp(GGDatasetBackend((*dss)[k]), "cuda"))
            continue;
        /* the device as requested ("cuda:1"), or as auto resolved it
         * ("cuda:0 NVIDIA ...": the dataset was started) */
        const char *requested = GGDatasetRequestedDevice((*dss)[k]);
        const char *name = EQUALN(requested, "cuda", 4) ? requested
                                                        : GGDatasetDeviceName((*dss)[k]);
        char spec[64];
        snprintf(spec, sizeof spec, "%.*s", (int)strcspn(name, " "), name);
        gg_op *op = copy_op(GGDatasetOperation((*dss)[k]));
        if (!op)
            return fail(app, "out of memory");
        GDALDatasetH w = open_product(app, op, spec);
        if (!w)
            return 1;
        if (in_background) {
            GGDatasetStartInBackground(w);
        } else if (GGDatasetStart(w) != CE_None) {
            GDALClose(w);
            return fail(app, "cannot start the device");
        }
        *dss = CPLRealloc(*dss, (size_t)(*ndev + 1) * sizeof **dss);
        (*dss)[(*ndev)++] = w;
    }
    return 0;
}

/* Before anything is written: every file the run would write (dst, and
 * the band files of a product written band by band) is refused when an
 * input reads it -- a source named directly, through a GG: string, a
 * .ggvrt or a VRT (their file lists) -- or when it exists and is not a
 * regular file.  0, or 1 after the error. */
static int check_outputs(gg_app *app, GDALDatasetH ds, GDALDriverH drv, int ggvrt, int mixed)
{
    gg_input_files *inputs = gg_input_files_new();
    if (!inputs)
        return fail(app, "out of memory");
    int rc = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    for (int k = 0; app->srcs && app->srcs[k] && !rc; k++) {
        /* each source apart, so that a clash names the source that reads it */
        GDALDatasetH h = GDALOpenEx(app->srcs[k], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL,
                                    NULL, NULL);
        rc = gg_input_files_add_dataset(inputs, h, app->srcs[k]);
        if (h)
            GDALClose(h);
    }
    /* the product as opened (a utility's own opening of its source too) */
    if (!rc && app->srcs && app->srcs[0])
        rc = gg_input_files_add_dataset(inputs, ds, app->srcs[0]);
    CPLPopErrorHandler();
    if (rc) {
        gg_input_files_free(inputs);
        return fail(app, "out of memory");
    }
    char **names = NULL;
    const int per_band = !ggvrt && drv && (mixed || app->per_band_files) &&
                         !EQUAL(GDALGetDriverShortName(drv), "VRT") &&
                         gg_product_write_supported(drv);
    if (per_band) {
        const gg_product_write_options wo = {.driver = drv, .per_band = 1,
                                             .band_prefix = app->band_prefix,
                                             .band_folder = app->band_folder};
        names = gg_product_write_names(ds, app->dst, &wo);
    }
    char why[2048];
    rc = gg_input_files_check_output(inputs, "the destination", app->dst, why, sizeof why);
    for (int f = 0; !rc && names && names[f]; f++)
        rc = gg_input_files_check_output(inputs, "the band file", names[f], why, sizeof why);
    CSLDestroy(names);
    gg_input_files_free(inputs);
    return rc ? fail(app, "%s", why) : 0;
}

/* The work estimate (gg_work_limit.h), before any device starts or file
 * is created: the bytes the run reads (its sources, twice when a
 * statistics pass reads them first) and writes (the product's bands, as
 * -ot writes them).  0, or 1 after the error. */
static int check_work(gg_app *app, GDALDatasetH ds, GDALDataType out_type)
{
    double read_bytes = 0.0, write_bytes = 0.0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    for (int k = 0; !app->spec->open_source && app->srcs && app->srcs[k]; k++) {
        GDALDatasetH h = GDALOpenEx(app->srcs[k], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL,
                                    NULL);
        for (int b = 1; h && b <= GDALGetRasterCount(h); b++)
            read_bytes += (double)GDALGetRasterXSize(h) * GDALGetRasterYSize(h) *
                          GDALGetDataTypeSizeBytes(GDALGetRasterDataType(GDALGetRasterBand(h, b)));
        if (h)
            GDALClose(h);
    }
    CPLPopErrorHandler();
    if (!app->spec->open_source && gg_op_needs_stats(GGDatasetOperation(ds)))
        read_bytes *= 2;
    const int W = GDALGetRasterXSize(ds), H = GDALGetRasterYSize(ds);
    for (int b = 1; b <= GDALGetRasterCount(ds); b++)
        write_bytes += (double)W * H *
                       GDALGetDataTypeSizeBytes(out_type != GDT_Unknown
                                                    ? out_type
                                                    : GDALGetRasterDataType(GDALGetRasterBand(ds, b)));
    char why[1024];
    if (gg_work_limit_check(CPLSPrintf("the product of %d x %d pixels", W, H), read_bytes,
                            write_bytes, why, sizeof why))
        return fail(app, "%s", why);
    return 0;
}

/* What one run decides and holds, passed from step to step; run_free
 * releases it whichever step stopped the run. */
typedef struct run_state {
    double t0;
    GDALProgressFunc progress;
    int ggvrt;             /* -of GGVRT: the product's description, no pixels */
    int own;               /* a format the utility writes itself (spec->own_format) */
    GDALDriverH drv;       /* otherwise the GDAL driver that writes dst */
    GDALDataType out_type; /* -ot; GDT_Unknown keeps the product's types */
    GDALDatasetH *dss;     /* the product on each device; dss[0] answers for all */
    int ndev;
    gg_output_set *set;    /* every file of the run: one transaction, committed at the end */
    int mixed;             /* the product's bands differ in type */
    int two_passes;        /* a statistics pass reads the sources before writing */
    int in_background;     /* the device starts on a thread of its own */
} run_state;

/* The output format first: a bad -of or -ot must not cost a read.  Then
 * the destination's folder and the destination itself.  0, or 1 after
 * the error. */
static int choose_output(gg_app *app, run_state *r)
{
    const char *ext = CPLGetExtension(app->dst);
    r->ggvrt = app->format ? (EQUAL(app->format, "GGVRT") || EQUAL(app->format, "GG"))
                           : EQUAL(ext, "ggvrt");
    r->own = app->format && app->spec->own_format && app->spec->write_format &&
             EQUAL(app->format, app->spec->own_format);
    if (r->ggvrt && app->spec->open_source)
        return fail(app, "-of GGVRT does not apply to %s", app->spec->name);
    if (r->own) {
        if (app->type || app->creation_options)
            return fail(app, "-ot and -co do not apply to -of %s", app->spec->own_format);
    } else if (r->ggvrt) {
        if (app->type || app->creation_options)
            return fail(app, "-ot and -co do not apply to -of GGVRT");
    } else {
        r->drv = app->format ? GDALGetDriverByName(app->format) : guess_driver(app->dst);
        if (!r->drv)
            return fail(app, "output format '%s' is not known to GDAL", app->format);
        if (!GDALGetMetadataItem(r->drv, GDAL_DCAP_RASTER, NULL) ||
            (!GDALGetMetadataItem(r->drv, GDAL_DCAP_CREATE, NULL) &&
             !GDALGetMetadataItem(r->drv, GDAL_DCAP_CREATECOPY, NULL)))
            return fail(app, "output format '%s' cannot write rasters",
                        GDALGetDriverShortName(r->drv));
    }
    if (app->type) {
        r->out_type = GDALGetDataTypeByName(app->type);
        if (r->out_type == GDT_Unknown)
            return fail(app, "unsupported data type '%s'", app->type);
    }
    const char *folder = CPLGetPath(app->dst);
    VSIStatBufL st;
    if (*folder && (VSIStatL(folder, &st) != 0 || !VSI_ISDIR(st.st_mode)))
        return fail(app, "the destination folder '%s' does not exist", folder);
    char why[2048];
    if (gg_input_files_check_output(NULL, "the destination", app->dst, why, sizeof why))
        return fail(app, "%s", why);
    return 0;
}

/* The product on each device of -device (r->dss, r->ndev).  A failure
 * closes what was opened and leaves r empty: 1 after the error. */
static int open_products(gg_app *app, run_state *r)
{
    char **devices = device_list(app);
    if (!devices)
        return 1;
    /* several devices compute pixels only: a virtual output needs one */
    const int ndev = r->ggvrt || r->own || EQUAL(GDALGetDriverShortName(r->drv), "VRT") ||
                             app->spec->open_source
                         ? 1 : CSLCount(devices);
    GDALDatasetH *dss = CPLCalloc((size_t)ndev, sizeof *dss);
    for (int k = ndev - 1; k >= 0; k--) { /* the copies first: app->op goes to device 0 */
        if (app->spec->open_source) {   /* not an op: the utility opens its product */
            dss[k] = app->spec->open_source(app, app->srcs[0], devices[k]);
            if (!dss[k]) {
                CPLFree(dss);
                CSLDestroy(devices);
                return fail(app, "cannot open '%s'", app->srcs[0]);
            }
            continue;
        }
        gg_op *op = k ? copy_op(app->op) : app->op;
        if (!k)
            app->op = NULL; /* the dataset owns it from here, also on failure */
        dss[k] = op ? open_product(app, op, devices[k]) : NULL;
        if (!dss[k]) {
            for (int j = k + 1; j < ndev; j++)
                GDALClose(dss[j]);
            CPLFree(dss);
            CSLDestroy(devices);
            return op ? 1 : fail(app, "out of memory");
        }
    }
    CSLDestroy(devices);
    r->dss = dss;
    r->ndev = ndev;
    return 0;
}

/* Before anything is written: the run's transaction (r->set), the work
 * estimate, the files the run would write, and -ot against the product.
 * 0, or 1 after the error. */
static int check_before_writing(gg_app *app, run_state *r)
{
    r->set = gg_output_set_new();
    if (!r->set)
        return fail(app, "out of memory");
    GDALDatasetH ds = r->dss[0];
    r->mixed = bands_mix_types(ds);
    if (!r->ggvrt && check_work(app, ds, r->out_type))
        return 1;
    if (check_outputs(app, ds, r->drv, r->ggvrt, r->mixed))
        return 1;
    if (r->out_type != GDT_Unknown && r->mixed)
        return fail(app, "-ot cannot convert the %s products: their bands have different types",
                    app->spec->operation);
    if (r->out_type != GDT_Unknown) {
        const GDALDataType product = GDALGetRasterDataType(GDALGetRasterBand(ds, 1));
        if (GDALDataTypeIsComplex(r->out_type) != GDALDataTypeIsComplex(product))
            return fail(app, "unsupported data type %s for the %s %s product (a %s type is needed)",
                        GDALGetDataTypeName(r->out_type), GDALGetDataTypeName(product),
                        app->spec->operation, GDALDataTypeIsComplex(product) ? "complex" : "real");
    }
    return 0;
}

/* -of GGVRT: no pixels, the description of the product only. */
static int write_ggvrt(gg_app *app, run_state *r)
{
    const char *tmp = gg_output_set_add(r->set, app->dst, NULL);
    if (!tmp)
        return fail(app, "out of memory");
    if (GGWriteGGVRT(tmp, GGDatasetOperation(r->dss[0]), CSLCount(app->srcs),
                     (const char *const *)app->srcs) != CE_None)
        return fail(app, "cannot write '%s'", app->dst);
    if (finish_outputs(app, r->set))
        return 1;
    r->progress(1.0, "", NULL);
    return 0;
}

/* A GPU the request names (cuda, cuda:N, opencl...) starts on a thread of
 * its own, so that its start (driver, context: 0.2 s of CUDA on an H200)
 * overlaps the pipeline's first reads: nothing before the pipeline needs
 * its context, and its first compute waits for it (and reports its
 * failure).  Started here, before anything is read: under -v (the report
 * names the device), auto (the start decides what runs and the fallback
 * notice), a statistics pass (it needs the device before it reads),
 * several devices (a failure is the first one's) and the CPU (no start to
 * hide).  0, or 1 after the error. */
static int start_devices(gg_app *app, run_state *r)
{
    GDALDatasetH ds = r->dss[0];
    r->two_passes = app->spec->open_source ? 0 : gg_op_needs_stats(GGDatasetOperation(ds));
    const char *backend = app->spec->open_source ? "" : GGDatasetBackend(ds);
    r->in_background = !r->own && !app->verbose && !r->two_passes && r->ndev == 1 &&
                       gg_product_write_supported(r->drv) &&
                       (!strcmp(backend, "cuda") || !strcmp(backend, "opencl"));
    for (int k = 0; k < r->ndev; k++) {
        if (r->in_background) {
            GGDatasetStartInBackground(r->dss[k]); /* no notice to report: not auto */
            continue;
        }
        if (!app->spec->open_source && GGDatasetStart(r->dss[k]) != CE_None)
            return fail(app, "cannot start the device");
        if (report_device(app, r->dss[k]))
            return 1;
    }
    return 0;
}

/* The files in place, and under -v the run's time. */
static int finish_run(gg_app *app, run_state *r)
{
    if (finish_outputs(app, r->set))
        return 1;
    if (app->verbose)
        fprintf(stderr, "%s: done in %.3f s\n", app->spec->name, now_seconds() - r->t0);
    return 0;
}

/* The utility's own writer, into the run's transaction like any file. */
static int write_own_format(gg_app *app, run_state *r)
{
    const char *tmp = gg_output_set_add(r->set, app->dst, NULL);
    if (!tmp)
        return fail(app, "out of memory");
    app->failures = 0;
    if (app->spec->write_format(app, r->dss[0], tmp, r->progress, NULL) || app->failures > 0)
        return fail(app, "writing '%s' failed", app->dst);
    return finish_run(app, r);
}

/* Statistics pass (radnorm) and writing share the one progress line; with
 * several devices each computes the statistics itself.  Without a pass
 * this only starts the device: not for one starting in the background.
 * 0, or 1 after the error. */
static int statistics_pass(gg_app *app, run_state *r)
{
    for (int k = 0; k < r->ndev && !app->spec->open_source && !r->in_background; k++) {
        void *stats_progress = GDALCreateScaledProgress(
            0.5 * k / r->ndev, r->two_passes ? 0.5 * (k + 1) / r->ndev : 0.0, r->progress, NULL);
        const CPLErr stats_err = GGDatasetComputeStatistics(
            r->dss[k], r->two_passes ? GDALScaledProgress : NULL, stats_progress);
        GDALDestroyScaledProgress(stats_progress);
        if (stats_err != CE_None)
            return fail(app, "statistics pass failed");
    }
    return 0;
}

/* One file per band where the bands differ in type (no format but VRT
 * keeps mixed band types) or the utility asks for it. */
static int writes_per_band(const gg_app *app, const run_state *r)
{
    return (r->mixed || app->per_band_files) && !EQUAL(GDALGetDriverShortName(r->drv), "VRT");
}

/* The pipeline: strips read, computed and written at once. */
static int write_pipeline(gg_app *app, run_state *r)
{
    void *write_progress = GDALCreateScaledProgress(r->two_passes ? 0.5 : 0.0, 1.0, r->progress,
                                                    NULL);
    const gg_product_write_options wo = {
        .driver = r->drv, .creation_options = app->creation_options, .type = r->out_type,
        .per_band = writes_per_band(app, r), .band_prefix = app->band_prefix,
        .band_folder = app->band_folder, .progress = GDALScaledProgress,
        .progress_arg = write_progress, .set = r->set, .error_handler = collect_errors,
        .error_handler_data = app};
    app->failures = 0;
    const int rc = gg_product_write(r->dss, r->ndev, app->dst, &wo);
    GDALDestroyScaledProgress(write_progress);
    if (rc || app->failures > 0)
        return fail(app, "writing '%s' failed", app->dst);
    return finish_run(app, r);
}

/* A format the pipeline cannot create: GDALTranslate copies the product
 * of one device into one file. */
static int write_translate(gg_app *app, run_state *r)
{
    if (writes_per_band(app, r) || r->ndev > 1)
        return fail(app, "format %s cannot create files %s; use GTiff or -of GGVRT",
                    GDALGetDriverShortName(r->drv),
                    writes_per_band(app, r) ? "band by band (the bands differ in type)"
                                            : "for several devices");
    char **argv = NULL;
    argv = CSLAddString(argv, "-of");
    argv = CSLAddString(argv, GDALGetDriverShortName(r->drv));
    for (char **co = app->creation_options; co && *co; co++) {
        argv = CSLAddString(argv, "-co");
        argv = CSLAddString(argv, *co);
    }
    if (app->type) {
        argv = CSLAddString(argv, "-ot");
        argv = CSLAddString(argv, app->type);
    }
    GDALTranslateOptions *options = GDALTranslateOptionsNew(argv, NULL);
    CSLDestroy(argv);
    if (!options)
        return fail(app, "bad output options");
    void *write_progress = GDALCreateScaledProgress(r->two_passes ? 0.5 : 0.0, 1.0, r->progress,
                                                    NULL);
    GDALTranslateOptionsSetProgress(options, copy_progress, write_progress);
    app->failures = 0;
    int usage_error = FALSE;
    const char *tmp = gg_output_set_add(r->set, app->dst, NULL);
    GDALDatasetH out = tmp ? GDALTranslate(tmp, r->dss[0], options, &usage_error) : NULL;
    GDALTranslateOptionsFree(options);
    GDALDestroyScaledProgress(write_progress);
    if (out)
        GDALClose(out); /* flushes: errors while writing show up here */
    if (!out || app->failures > 0)
        return fail(app, "writing '%s' failed", app->dst);
    return finish_run(app, r);
}

/* The pixels: the devices started, then the utility's own writer, or the
 * statistics pass and the pipeline or the GDALTranslate copy. */
static int write_product(gg_app *app, run_state *r)
{
    if (start_devices(app, r))
        return 1;
    if (r->own)
        return write_own_format(app, r);
    if (!app->spec->open_source && gg_product_write_supported(r->drv) &&
        add_cuda_workers(app, &r->dss, &r->ndev, r->in_background))
        return 1;
    if (statistics_pass(app, r))
        return 1;
    return gg_product_write_supported(r->drv) ? write_pipeline(app, r) : write_translate(app, r);
}

static void run_free(run_state *r)
{
    gg_output_set_free(r->set); /* removes the temporaries of a failed run */
    for (int k = r->ndev - 1; k >= 0; k--)
        GDALClose(r->dss[k]);
    CPLFree(r->dss);
}

/* Computes the product of src into a temporary, then moves it to dst. */
static int run(gg_app *app)
{
    run_state r = {.t0 = now_seconds(),
                   .progress = app->quiet ? GDALDummyProgress : GDALTermProgress,
                   .out_type = GDT_Unknown};
    int status = choose_output(app, &r) || open_products(app, &r) ||
                 check_before_writing(app, &r);
    if (!status)
        status = r.ggvrt ? write_ggvrt(app, &r) : write_product(app, &r);
    run_free(&r);
    return status;
}

/* ------------------------------------------------------------------- main */

void gg_app_print_version(const char *utility)
{
    printf("%s (geogpu %s), built against GDAL %s, running with GDAL %s\n", utility,
           gg_version(), GDAL_RELEASE_NAME, GDALVersionInfo("RELEASE_NAME"));
}

int gg_app_general_options(int argc, char **argv, const char *const *own, char ***args)
{
    int mine = 0;
    for (int i = 1; i < argc && !mine; i++)
        for (int k = 0; own[k] && !mine; k++)
            mine = EQUAL(argv[i], own[k]);
    *args = CSLDuplicate(argv);
    if (mine)
        return argc;
    char **general = *args;
    const int n = GDALGeneralCmdLineProcessor(argc, &general, 0);
    CSLDestroy(*args);
    *args = n < 1 ? NULL : general;
    return n < 1 ? (n == 0 ? 0 : -1) : n;
}

int gg_app_parse_only = 0;

int gg_app_main(const gg_app_spec *spec, int argc, char **argv)
{
    gg_output_catch_signals(); /* a program: an interrupted run leaves no temporary */
    /* ours, before GDALGeneralCmdLineProcessor answers --version with
     * GDAL's version alone; and --config options set before the drivers
     * register (as gdal_translate does): some read options such as
     * GDAL_CACHEMAX once, at registration */
    for (int i = 1; i < argc; i++) {
        if (EQUAL(argv[i], "--config") && i + 2 < argc) {
            CPLSetConfigOption(argv[i + 1], argv[i + 2]);
            i += 2;
            continue;
        }
        if (EQUAL(argv[i], "--config") || EQUAL(argv[i], "--optfile")) {
            i += EQUAL(argv[i], "--config") ? 2 : 1;
            continue;
        }
        if (EQUAL(argv[i], "--version") || EQUAL(argv[i], "--utility_version"))
            return gg_app_print_version(spec->name), 0;
    }
    if (!GDAL_CHECK_VERSION(spec->name))
        return 1;
    GDALAllRegister();
    /* the plugin is optional for the utilities: they carry the drivers
     * (registered before --formats can list them) */
    if (spec->register_drivers)
        spec->register_drivers();
    argc = GDALGeneralCmdLineProcessor(argc, &argv, 0);
    if (argc < 1) {
        GDALDestroyDriverManager();
        return argc == 0 ? 0 : 1; /* handled (--formats...) or failed */
    }
    for (int i = 1; i < argc; i++)
        if (EQUAL(argv[i], "--help") || EQUAL(argv[i], "-h") || EQUAL(argv[i], "-help")) {
            print_usage(spec, stdout);
            CSLDestroy(argv);
            GDALDestroyDriverManager();
            return 0;
        } else if (EQUAL(argv[i], "--describe")) {
            print_description(spec, stdout);
            CSLDestroy(argv);
            GDALDestroyDriverManager();
            return 0;
        }

    gg_app app;
    memset(&app, 0, sizeof app);
    app.spec = spec;
    int status = 1;
    char err[512] = "";
    if (spec->operation && gg_op_new(spec->operation, &app.op, err, sizeof err) != GG_OK) {
        print_error(&app, CPLE_AppDefined, err);
    } else {
        CPLPushErrorHandlerEx(collect_errors, &app);
        if (parse_arguments(&app, argc, argv) == 0)
            status = gg_app_parse_only ? 0 : run(&app);
        CPLPopErrorHandler();
    }
    gg_op_free(app.op);
    CSLDestroy(app.creation_options);
    CSLDestroy(app.flags_given);
    CSLDestroy(app.srcs);
    CSLDestroy(app.positional);
    CSLDestroy(argv);
    GDALDestroyDriverManager();
    return status;
}
