/*
 * gg_app.h -- what the gdal_* utilities of geogpu share: the command line
 * (GDAL's generic options, then -of -co -ot -srcnodata -dstnodata -device
 * -q -v --help --version), GDAL's terminal progress, and the one path that
 * writes a run's outputs safely (one transaction, gg_output.h: temporary
 * names in the destination folders, all put in place on success, removed
 * on failure).  A utility is a gg_app_spec and a
 * main that calls gg_app_main.
 *
 * MIT licence.
 */
#ifndef GG_APP_H
#define GG_APP_H

#include "geogpu.h"
#include "gg_output.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Options of one run (the "options struct" of the utility), opaque. */
typedef struct gg_app gg_app;

/* A flag of a utility that is not an op option (those come from the op's
 * gg_option table): its --help synopsis and line, and --describe. */
typedef struct gg_app_flag {
    const char *flag;   /* "-filter" */
    const char *values; /* "<outdir>", "<x> <y>"; NULL: a switch */
    const char *kind;   /* int, float, bool, string, file, folder, dataset, choice: for --describe */
    const char *help;   /* one line */
} gg_app_flag;

typedef struct gg_app_spec {
    const char *name;       /* "gdal_multilook" */
    const char *operation;  /* geogpu op name: "multilook" */
    const char *purpose;    /* one line for --help */
    /* The op's options with a flag (gg_op_options) are parsed, listed in
     * --help and described by --describe from the op's table; synopsis and
     * help hold only the utility's own flags, e.g. "[-filter <outdir>]". */
    const char *synopsis;   /* synopsis beyond its flags' (NULL: none) */
    const char *operands;   /* positional arguments (NULL: "<src_dataset> <dst_dataset>") */
    const char *help;       /* notes after the flags' lines (NULL: none) */
    const char *const *required; /* own flags that must be given, NULL-terminated (op
                                  * options: the table's required) */
    /* The utility's own flags as data (for --describe), ended by {NULL}. */
    const gg_app_flag *flags;
    /* A second op whose options the utility takes on its command line and
     * hands on itself (gdal_coreg: xcorr's), listed by --help and
     * --describe from its table; NULL: none. */
    const char *also_operation;
    /* Handles argv[*pi] if it is one of the utility's own flags (asked
     * before the op's table): returns 1 when consumed (with *pi moved to
     * its last value), 0 when it is not the utility's flag, -1 after
     * reporting an error. */
    int (*parse_flag)(gg_app *app, int argc, char **argv, int *pi);
    /* Utilities whose product is not an op (operation NULL, e.g.
     * gdal_fmcw): opens the product of the one source on a device as a
     * GDALDatasetH (NULL after a CPLError); gg_app writes it as usual. */
    void *(*open_source)(gg_app *app, const char *src, const char *device);
    /* Writes the utility's side outputs (gdal_xcorr's -table, gdal_coreg's
     * -fit and -prm) once its product is written under the temporary name
     * product: each file under the name gg_output_set_add(set, final, ...)
     * gives, so that it is committed with the product, or removed with it
     * (gg_output.h).  0, or 1 after reporting.  May be NULL. */
    int (*side_outputs)(gg_app *app, const char *product, gg_output_set *set);
    /* A format the utility writes itself rather than through a GDAL
     * driver (gdal_fmcw: "CfRadial"), chosen by -of (case-insensitive):
     * write_format writes the product to the temporary file tmp (0, or 1
     * after a CPLError), which gg_app renames to the destination on success
     * and removes on failure, as for any output.  NULL: none. */
    const char *own_format;
    int (*write_format)(gg_app *app, void *product, const char *tmp,
                        int (*progress)(double, const char *, void *), void *progress_arg);
    /* Registers the drivers the utility carries (GGRegisterDrivers), after
     * GDAL's own and before the command line is processed; may be NULL. */
    void (*register_drivers)(void);
} gg_app_spec;

/* The whole program: returns the exit status (0 success, 1 failure). */
int gg_app_main(const gg_app_spec *spec, int argc, char **argv);

/* Test hook (tests/fuzz/fuzz_app_options): when non-zero, gg_app_main and
 * the utilities' own parsers (gdal_xcorr -mode gmtsar, gdal_coreg,
 * gdal_fmcw -simulate, gdal_ortho) return right after the command line is
 * parsed: 0 when it is complete, 1 after a usage error; no data is opened,
 * no device started, nothing written. */
extern int gg_app_parse_only;

/* Helpers for parse_flag.  All return 1 on success and -1 after reporting
 * the error as one line. */

/* Takes the n values following argv[*pi] into values[], moving *pi. */
int gg_app_values(gg_app *app, int argc, char **argv, int *pi, int n, const char **values);
/* Sets an op option; a bad value is reported with the op's own message. */
int gg_app_set(gg_app *app, const char *key, const char *value);
/* How many values an op option's flag takes: 2 (SIZE), 0 (BOOL) or 1;
 * *value_for_switch: what a BOOL flag sets (the opposite of its default). */
int gg_app_option_values(const gg_option *o, const char **value_for_switch);
/* Sets a WxH-style op option from two positive integers given to flag. */
int gg_app_set_pair(gg_app *app, const char *flag, const char *key, const char *a,
                    const char *b);
/* Per-band outputs whose band name starts with prefix go into folder
 * (which must exist) instead of the destination's folder. */
int gg_app_band_folder(gg_app *app, const char *prefix, const char *folder);
/* Writes each band to its own file, <dst stem>_<band description><ext>. */
void gg_app_per_band_files(gg_app *app);
/* For a utility that scans argv itself before gg_app_main (to find its
 * operands or its own flags): how many values follow flag a.  own1 and
 * own2 list (NULL-terminated, either may be NULL) the utility's flags
 * that take 1 and 2 values; gg_app's own (-of -ot -co -srcnodata
 * -dstnodata -device -oo -if: 1, --config: 2) are always known. */
int gg_app_flag_values(const char *a, const char *const *own1, const char *const *own2);
/* Reports a usage error: "ERROR 1: <utility>: <message> (see --help)". */
int gg_app_usage_error(gg_app *app, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* For a utility that parses its command line itself from a gg_option table
 * of its own (gdal_ortho: ortho is not an op): --help and --describe as
 * every utility prints them.  spec gives the name, purpose, operands,
 * help, own flags (and operation, named in --describe); values(o) (may be
 * NULL) gives the placeholders of a flag whose values its kind does not
 * tell ("<xmin> <ymin> <xmax> <ymax>"), NULL for the kind's ("<key>",
 * "<x> <y>", "a|b|c").  --help's generic options are the caller's:
 * general_synopsis ("[-of <format>] ...") and general_lines. */
typedef const char *(*gg_app_placeholders)(const gg_option *o);
void gg_app_print_table_usage(const gg_app_spec *spec, const gg_option *options, int n,
                              gg_app_placeholders values, const char *general_synopsis,
                              const char *general_lines, FILE *out);
void gg_app_print_table_description(const gg_app_spec *spec, const gg_option *options, int n,
                                    gg_app_placeholders values, FILE *out);

/* "<utility> (geogpu X), built against GDAL Y, running with GDAL Z" on
 * stdout: every utility's --version. */
void gg_app_print_version(const char *utility);

/* GDAL's general options (--config, --debug, --optfile, --formats,
 * --help-general...) taken out of argv for a utility with a parser of its
 * own, unless one of `own` (NULL-terminated: --version, --help...) is
 * given, which the utility answers itself (GDAL would answer --version
 * with its version alone).  Returns the new argument count with *args a
 * list to free with CSLDestroy; or 0 (answered, e.g. --help-general: exit
 * 0) or -1 (refused: exit 1) with *args NULL. */
int gg_app_general_options(int argc, char **argv, const char *const *own, char ***args);

/* The fallback notice under auto (gg_context_notice: "no GPU device found,
 * using the CPU (...)") as every utility prints it: one line
 * "<utility>: <notice>" on stderr, nothing when quiet or when notice is
 * empty.  gg_app_main prints it itself; for utilities that start their
 * own context (gdal_xcorr -mode gmtsar, gdal_ortho). */
void gg_app_notice(const char *utility, int quiet, const char *notice);

#ifdef __cplusplus
}
#endif
#endif /* GG_APP_H */
