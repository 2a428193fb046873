/* fuzz_rpc.c -- libFuzzer target for RPC metadata as gdal_ortho and the GG
 * driver's GG:ortho: read it (gdal/gg_ortho_scene.c): the RPC metadata
 * domain of a source (the key=value list GDAL builds from TIFF tags,
 * _RPC.TXT, .RPB, DIMAP or NITF) goes through ggo_scene_open (key and
 * coefficient checks, GDALExtractRPCInfoV2, the gg_ortho_rpc model, the
 * RPC transformer and gdalwarp's suggested output grid, the footprint
 * checks), then the library's forward model (gg_ortho_rpc_forward) over the
 * model's validity box.  Lines starting with '@' are GG:ortho: options
 * (ggo_set_option: "@tr=5,5", "@t_srs=EPSG:32631", ...), fuzzed alike.
 *
 * Input: bytes 0-1 the source raster's width and height (1-256), the rest
 * lines "KEY=VALUE" (RPC) or "@key=value" (option).  The source is a VRT
 * in /vsimem/ whose RPC domain holds the KEY=VALUE lines. */
#include "gg_ortho_scene.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_minixml.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
    static int init;
    if (!init) {
        GDALAllRegister();
        CPLSetErrorHandler(CPLQuietErrorHandler);
        init = 1;
    }
    if (size < 2)
        return 0;
    char *text = malloc(size - 1);
    memcpy(text, d + 2, size - 2);
    text[size - 2] = '\0';
    ggo_options o;
    ggo_options_default(&o);
    char err[512];
    /* the VRT: one Byte band without sources (reads as zeros) */
    char *vrt = CPLStrdup(CPLSPrintf("<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">"
                                     "<Metadata domain=\"RPC\">", 1 + d[0], 1 + d[1]));
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        if (line[0] == '@') {
            /* an option string is kept by pointer: text outlives o; no
             * CRS from a file or a URL (OSRSetFromUserInput reads both) */
            if (!strchr(eq + 1, '/'))
                ggo_set_option(&o, line + 1, eq + 1, err, sizeof err);
            continue;
        }
        char *k = CPLEscapeString(line, -1, CPLES_XML), *v = CPLEscapeString(eq + 1, -1, CPLES_XML);
        char *more = CPLStrdup(CPLSPrintf("%s<MDI key=\"%s\">%s</MDI>", vrt, k, v));
        CPLFree(vrt);
        vrt = more;
        CPLFree(k);
        CPLFree(v);
    }
    char *full = CPLStrdup(CPLSPrintf("%s</Metadata><VRTRasterBand dataType=\"Byte\" band=\"1\"/>"
                                      "</VRTDataset>", vrt));
    CPLFree(vrt);
    const char *name = "/vsimem/fuzz_rpc.vrt";
    VSILFILE *fp = VSIFileFromMemBuffer(name, (GByte *)full, strlen(full), FALSE);
    if (fp)
        VSIFCloseL(fp);
    /* no DEM: the fuzz must not open files named by the input */
    o.dem = NULL;
    o.dem_srs = NULL;
    ggo_scene sc;
    if (ggo_scene_open(&sc, &o, name) == 0) {
        const gg_ortho_rpc *r = &sc.rpc;
        for (int j = -2; j <= 2; j++)
            for (int i = -2; i <= 2; i++) {
                double px, py;
                gg_ortho_rpc_forward(r, r->long_off + i * r->long_scale / 2,
                                     r->lat_off + j * r->lat_scale / 2,
                                     r->height_off + (i - j) * r->height_scale / 4, &px, &py);
            }
    }
    ggo_scene_close(&sc);
    VSIUnlink(name);
    CPLFree(full);
    free(text);
    return 0;
}
