/*
 * make_input.c -- writes a random, non-zero test raster (GeoTIFF by
 * default) for the end-to-end checks and benchmarks.
 *
 *   gg_make_input [-size N|WxH] [-type Float32|CFloat32] [-seed S]
 *                 [-nodata V -nodata-frac F] [-of FORMAT] [-co NAME=VALUE]...
 *                 out_file
 *
 * Float32: an intensity image I = g(y) h(x) * Exp(1) speckle (positive,
 * with separable gain profiles, as radnorm expects).  CFloat32: circular
 * Gaussian samples scaled by sqrt(g h) (an SLC).  With -nodata-frac, that
 * fraction of pixels is set to the nodata value (the real part for
 * complex), so nodata masks are exercised.  Georeferenced in UTM 33N
 * (EPSG:32633, 10 m pixels), which needs proj.db: a useful check of the
 * runtime on a machine without GDAL installed.  The data depends only on
 * the seed and the size, not on the thread count.
 *
 * MIT licence.
 */
#include "rng.h"
#include "gdal.h"
#include "cpl_conv.h"
#include "cpl_string.h"
#include "ogr_srs_api.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


static void usage(void)
{
    fprintf(stderr, "usage: gg_make_input [-size N|WxH] [-type Float32|CFloat32] [-bands N] [-seed S]\n"
                    "                     [-nodata V -nodata-frac F] [-of FORMAT] [-co NAME=VALUE]...\n"
                    "                     out_file\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int W = 8192, H = 8192, cplx = 0, has_nodata = 0, nbands = 1;
    double nodata = 0, frac = 0;
    uint64_t seed = 1;
    const char *fmt = "GTiff", *out = NULL;
    char **co = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int more = i + 1 < argc;
        if (!strcmp(a, "-size") && more) {
            if (sscanf(argv[++i], "%dx%d", &W, &H) == 1)
                H = W;
        } else if (!strcmp(a, "-type") && more) {
            const char *t = argv[++i];
            if (!strcasecmp(t, "CFloat32"))
                cplx = 1;
            else if (strcasecmp(t, "Float32"))
                usage();
        } else if (!strcmp(a, "-bands") && more) {
            nbands = atoi(argv[++i]);
        } else if (!strcmp(a, "-seed") && more) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "-nodata") && more) {
            nodata = atof(argv[++i]);
            has_nodata = 1;
        } else if (!strcmp(a, "-nodata-frac") && more) {
            frac = atof(argv[++i]);
        } else if (!strcmp(a, "-of") && more) {
            fmt = argv[++i];
        } else if (!strcmp(a, "-co") && more) {
            co = CSLAddString(co, argv[++i]);
        } else if (a[0] == '-' || out) {
            usage();
        } else {
            out = a;
        }
    }
    if (!out || W < 1 || H < 1 || nbands < 1 || frac < 0 || frac >= 1 || (frac > 0 && !has_nodata))
        usage();

    GDALAllRegister();
    GDALDriverH drv = GDALGetDriverByName(fmt);
    if (!drv) {
        fprintf(stderr, "gg_make_input: no GDAL driver '%s'\n", fmt);
        return 1;
    }
    const GDALDataType dt = cplx ? GDT_CFloat32 : GDT_Float32;
    GDALDatasetH ds = GDALCreate(drv, out, W, H, nbands, dt, co);
    CSLDestroy(co);
    if (!ds)
        return 1; /* GDAL reported why */
    double gt[6] = {500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0};
    GDALSetGeoTransform(ds, gt);
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (OSRImportFromEPSG(srs, 32633) == OGRERR_NONE) {
        char *wkt = NULL;
        OSRExportToWkt(srs, &wkt);
        GDALSetProjection(ds, wkt);
        CPLFree(wkt);
    } else {
        fprintf(stderr, "gg_make_input: EPSG:32633 unknown (proj.db not found? set PROJ_DATA)\n");
        OSRDestroySpatialReference(srs);
        GDALClose(ds);
        return 1;
    }
    OSRDestroySpatialReference(srs);

    const int chunk = 256;
    const int nc = cplx ? 2 : 1;
    float *buf = malloc((size_t)W * chunk * nc * sizeof(float));
    if (!buf) {
        fprintf(stderr, "gg_make_input: out of memory\n");
        GDALClose(ds);
        return 1;
    }
    int rc = 0;
    for (int b = 0; b < nbands && !rc; b++) { /* each band from its own seed */
        GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
        if (has_nodata)
            GDALSetRasterNoDataValue(band, nodata);
        const uint64_t bseed = seed + (uint64_t)b * 7919u;
        for (int y0 = 0; y0 < H && !rc; y0 += chunk) {
            const int rows = y0 + chunk > H ? H - y0 : chunk;
#pragma omp parallel for schedule(static)
            for (int r = 0; r < rows; r++) {
                const int y = y0 + r;
                uint64_t s = mix64(bseed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)y << 24));
                const double gy = 1.0 + 0.5 * sin(6.283185307179586 * y / H);
                float *row = buf + (size_t)r * W * nc;
                for (int x = 0; x < W; x++) {
                    const double g = gy * (0.5 + (double)x / W);
                    if (cplx) {
                        const double rad = sqrt(-2.0 * log(u01(&s))), ph = 6.283185307179586 * u01(&s);
                        row[2 * x] = (float)(sqrt(g) * rad * cos(ph));
                        row[2 * x + 1] = (float)(sqrt(g) * rad * sin(ph));
                    } else {
                        row[x] = (float)(g * -log(u01(&s)));
                    }
                    if (frac > 0 && u01(&s) < frac) {
                        row[x * nc] = (float)nodata;
                        if (cplx)
                            row[2 * x + 1] = 0.0f;
                    }
                }
            }
            if (GDALRasterIO(band, GF_Write, 0, y0, W, rows, buf, W, rows, dt, 0, 0) != CE_None)
                rc = 1;
        }
    }
    free(buf);
    GDALClose(ds);
    if (rc)
        fprintf(stderr, "gg_make_input: writing %s failed\n", out);
    return rc;
}
