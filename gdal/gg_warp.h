/*
 * gg_warp.h -- gdal_warp: gdalwarp's command line on the device (the GDAL
 * layer's internal header; the public call is gg_warp_run in
 * include/geogpu_gdal.h).
 *
 * The engine is the orthorectification engine's (libgeogpu's gg_ortho_*
 * sessions) with a source-coordinate grid: for every block of output
 * rows, the host runs GDAL's own transformer (GDALCreateGenImgProjTransformer2
 * with gdalwarp's options: PROJ reprojection, GCP polynomials, thin-plate
 * splines, geolocation arrays) at a grid of output pixel centres, chooses
 * the grid step so that the device's cubic interpolation of the nodes
 * stays within a tolerance of the exact transform (every pixel exact
 * where it cannot), and the device interpolates and resamples with GDAL's
 * warp-kernel conventions.  RPC sources (-rpc) go to gdal_ortho's
 * pipeline, which evaluates the RPC model and the DEM on the device.
 *
 * MIT licence.
 */
#ifndef GG_WARP_H
#define GG_WARP_H

#include "geogpu.h"

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gdalwarp's options, as the parser leaves them (values kept by pointer
 * into argv). */
typedef struct ggw_options {
    const char *s_srs, *t_srs, *te_srs, *ot, *of, *device;
    const char *srcnodata, *dstnodata; /* gdalwarp's lists: "v1 v2 ...", or "None" */
    char **co, **to, **wo;             /* repeatable (CSLDestroy) */
    char **positional;                 /* sources, then the destination (CSLDestroy) */
    char **keyvals;                    /* the table's options given, "key=value" (GG:warp:'s
                                        * form, several values joined by ','), in order */
    int has_te, has_tr, has_ts, tap, overwrite, quiet, verbose;
    double te[4], tr[2];
    int ts[2];
    int resampling;                    /* gg_ortho_method */
    int has_et;
    double et;                         /* -et: gdalwarp's error threshold, source pixels */
    int order, tps, rpc, geoloc;       /* transformer choices */
    int dstalpha;                      /* -dstalpha: an alpha band after the bands */
} ggw_options;

/* What ggw_parse_command_line found. */
enum {
    GGW_CMD_RUN = 0,   /* a command line to run */
    GGW_CMD_ERROR = 1, /* a usage error, one line in err */
    GGW_CMD_DONE = 2   /* --help, --describe or --version answered on stdout */
};

/* The option table (--help, --describe; the GG:warp: keys and the
 * Python keywords come from it too), *count entries. */
const gg_option *ggw_options_table(int *count);

/* Parses gdal_warp's arguments (after GDALGeneralCmdLineProcessor).  Free
 * with ggw_options_free whatever it returned. */
int ggw_parse_command_line(ggw_options *o, int argc, char **argv, char *err, size_t errlen);
void ggw_options_free(ggw_options *o);

/* Whether key is an option of the table (a GG:warp: key). */
int ggw_is_option(const char *key);
/* The options given as GG:warp: keys and values (n of them) with the
 * inputs, through the same parser: argv is made here and kept by the
 * caller (CSLDestroy after ggw_options_free). */
int ggw_parse_keys(ggw_options *o, char ***argv, int n, const char *const *keys,
                   const char *const *values, int ninputs, const char *const *inputs, char *err,
                   size_t errlen);

/* -rpc: gdal_warp's options as gdal_ortho's keys ("dem=...", "t_srs=...",
 * "tr=x,y", "r=cubic", ...: GG:ortho:'s form, gdal_ortho's flags), the
 * RPC transformer options (-to RPC_DEM=...) among them.  NULL with one
 * line in err for an option the RPC path does not take (-te_srs, -tap,
 * other kernels, other -to keys). */
char **ggw_rpc_options(const ggw_options *o, char *err, size_t errlen);

void ggw_print_usage(FILE *out);
void ggw_print_description(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* GG_WARP_H */
