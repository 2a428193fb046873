/*
 * gg_ortho_options.h -- the options of orthorectification, described once
 * (a gg_option table, include/geogpu.h), and the one parser of them.
 * Ortho is not an op of the registry, but its options work as the ops':
 * gdal_ortho's flags, its --help lines and --describe JSON, the GG:ortho:
 * keys and .ggvrt elements (frmts/gg/ggortho.cpp), the Python package
 * (geogpu.ortho_options) and the QGIS provider all come from this table,
 * and every value goes through ggo_set_option, whichever front end gave it.
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_OPTIONS_H
#define GG_ORTHO_OPTIONS_H

#include "geogpu.h"
#include "gg_ortho_scene.h"

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The table, *count entries (may be NULL), in the order --help lists them. */
const gg_option *ggo_options_table(int *count);

/* How many values the flag of o takes (0: a switch) and, in *names (may be
 * NULL), their placeholders as --help writes them ("<xres> <yres>").  A
 * flag of several values (-tr, -te, -ts) is joined with ',' into the key's
 * value (tr=xres,yres), which goes through ggo_set_option as a GG: key's. */
int ggo_option_flag_values(const gg_option *o, const char **names);

/* Checks n options given as GG:ortho: keys and values (in order), as
 * ggo_set_option would set them (for front ends that only build strings
 * or command lines: the Python package).  0, or 1 with the message in err. */
int ggo_check_options(int n, const char *const *keys, const char *const *values, char *err,
                      size_t errlen);

/* gdal_ortho's command line, as the parser leaves it. */
typedef struct ggo_command_line {
    ggo_options g;             /* the table's options, -q, -v */
    const char *format;        /* -of */
    const char *outdir;        /* -outdir */
    const char *device;        /* -device */
    char **co;                 /* -co, repeatable (CSLDestroy) */
    char **positional;         /* sources, then the destination (CSLDestroy) */
} ggo_command_line;

/* What ggo_parse_command_line found. */
enum {
    GGO_CMD_RUN = 0,   /* a command line to run */
    GGO_CMD_ERROR = 1, /* a usage error, one line in err */
    GGO_CMD_DONE = 2   /* --help, --describe or --version answered on stdout */
};

/* Parses gdal_ortho's arguments (after GDALGeneralCmdLineProcessor): the
 * table's flags through ggo_set_option, and the generic ones (-of -co
 * -outdir -device -q -v --help --describe --version).  Values are kept
 * by pointer: argv must outlive c.  Does not check the positional
 * arguments.  Free with ggo_command_line_free, whatever it returned. */
int ggo_parse_command_line(ggo_command_line *c, int argc, char **argv, char *err,
                           size_t errlen);
void ggo_command_line_free(ggo_command_line *c);

/* gdal_ortho --help and --describe (the table through gg_app's helpers). */
void ggo_print_usage(FILE *out);
void ggo_print_description(FILE *out);

#ifdef __cplusplus
}
#endif
#endif
