/*
 * bench_ortho_make.c -- inputs of bench_ortho.sh without GDAL: a UInt16
 * scene (raw + VRT carrying an RPC00B model) and a rough DEM (raw Float32 +
 * VRT, EPSG:4326, 1 arc-second), so the benchmark runs on a machine that has
 * only GDAL's command-line tools.
 *
 *   bench_ortho_make <dir> <width> <height> [<seed>]
 *
 * The RPC is the synthetic model of tests/python/test_ortho.py (height
 * parallax, rotation, non-linear terms) scaled to the scene size at about
 * 2.1 m GSD (a ZY-3 nadir scene is 24516 x 24576 at 2.1 m).  The texture is
 * a sum of sines plus hashed noise (values 200..3800), the DEM 1500 m +/-
 * ~900 m of ridges with 30-100 m bumps.
 *
 * MIT licence.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash(uint32_t x, uint32_t y, uint32_t s)
{
    uint32_t h = x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u ^ s * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    return h ^ (h >> 15);
}

static void coeffs(FILE *f, const char *key, const int *idx, const double *val, int n)
{
    double c[20] = {0};
    for (int i = 0; i < n; i++)
        c[idx[i]] = val[i];
    fprintf(f, "    <MDI key=\"%s\">", key);
    for (int i = 0; i < 20; i++)
        fprintf(f, "%s%.17g", i ? " " : "", c[i]);
    fprintf(f, "</MDI>\n");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_ortho_make <dir> <width> <height> [<seed>]\n");
        return 2;
    }
    const char *dir = argv[1];
    const int w = atoi(argv[2]), h = atoi(argv[3]);
    const uint32_t seed = argc > 4 ? (uint32_t)atoi(argv[4]) : 1;
    char path[4096];
    /* ~2.1 m: half extents in degrees at 45 N */
    const double gsd = 2.1, lat_scale = h / 2.0 * gsd / 111195.0,
                 lon_scale = w / 2.0 * gsd / (111195.0 * cos(45.2 * M_PI / 180));

    snprintf(path, sizeof path, "%s/scene.raw", dir);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint16_t *row = malloc(sizeof(uint16_t) * (size_t)w);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            const double v = 2000 + 700 * sin(x * 0.013 + seed) * cos(y * 0.011) +
                             500 * sin(x * 0.21 + y * 0.17) +
                             300 * ((hash((uint32_t)x, (uint32_t)y, seed) & 0xffff) / 65535.0 - 0.5);
            row[x] = (uint16_t)v;
        }
        if (fwrite(row, sizeof(uint16_t), (size_t)w, f) != (size_t)w) {
            perror(path);
            return 1;
        }
    }
    fclose(f);
    free(row);

    snprintf(path, sizeof path, "%s/scene.vrt", dir);
    f = fopen(path, "w");
    fprintf(f, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n", w, h);
    fprintf(f, "  <Metadata domain=\"RPC\">\n");
    fprintf(f,
            "    <MDI key=\"LINE_OFF\">%.17g</MDI>\n    <MDI key=\"SAMP_OFF\">%.17g</MDI>\n"
            "    <MDI key=\"LAT_OFF\">45.2</MDI>\n    <MDI key=\"LONG_OFF\">6.1</MDI>\n"
            "    <MDI key=\"HEIGHT_OFF\">1500</MDI>\n    <MDI key=\"LINE_SCALE\">%.17g</MDI>\n"
            "    <MDI key=\"SAMP_SCALE\">%.17g</MDI>\n    <MDI key=\"LAT_SCALE\">%.17g</MDI>\n"
            "    <MDI key=\"LONG_SCALE\">%.17g</MDI>\n    <MDI key=\"HEIGHT_SCALE\">1200</MDI>\n",
            h / 2.0, w / 2.0, h / 2.0, w / 2.0, lat_scale, lon_scale);
    {
        const int li[] = {0, 1, 2, 3, 4, 7, 8, 9, 11, 15, 17};
        const double lv[] = {0.002, -0.035, -1.02, 0.07, 0.004, 0.003, -0.005, 0.001, 0.0006, 0.0004, 0.0002};
        const int di[] = {0, 1, 2, 3, 6};
        const double dv[] = {1.0, 0.0009, -0.0007, 0.0004, 0.0001};
        const int si[] = {0, 1, 2, 3, 4, 5, 7, 10, 12, 19};
        const double sv[] = {-0.001, 1.01, 0.045, -0.11, 0.002, 0.003, -0.004, 0.0005, 0.0003, 0.0001};
        const int ei[] = {0, 1, 2, 3, 8};
        const double ev[] = {1.0, -0.0006, 0.0008, 0.0002, 0.00015};
        coeffs(f, "LINE_NUM_COEFF", li, lv, 11);
        coeffs(f, "LINE_DEN_COEFF", di, dv, 5);
        coeffs(f, "SAMP_NUM_COEFF", si, sv, 10);
        coeffs(f, "SAMP_DEN_COEFF", ei, ev, 5);
    }
    fprintf(f, "  </Metadata>\n");
    fprintf(f,
            "  <VRTRasterBand dataType=\"UInt16\" band=\"1\" subClass=\"VRTRawRasterBand\">\n"
            "    <SourceFilename relativeToVRT=\"1\">scene.raw</SourceFilename>\n"
            "    <ImageOffset>0</ImageOffset><PixelOffset>2</PixelOffset>"
            "<LineOffset>%d</LineOffset><ByteOrder>LSB</ByteOrder>\n"
            "  </VRTRasterBand>\n</VRTDataset>\n",
            2 * w);
    fclose(f);

    /* DEM: 1 arc-second, covering the scene with 10 % margin */
    const double res = 1.0 / 3600;
    const double lon0 = 6.1 - 1.1 * lon_scale * 1.15, lat0 = 45.2 + 1.1 * lat_scale * 1.15;
    const int dw = (int)(2 * 1.1 * lon_scale * 1.15 / res) + 1,
              dh = (int)(2 * 1.1 * lat_scale * 1.15 / res) + 1;
    snprintf(path, sizeof path, "%s/dem.raw", dir);
    f = fopen(path, "wb");
    float *drow = malloc(sizeof(float) * (size_t)dw);
    for (int y = 0; y < dh; y++) {
        for (int x = 0; x < dw; x++)
            drow[x] = (float)(1500 + 600 * sin(x * 0.031) * cos(y * 0.027) +
                              250 * sin(x * 0.13 + y * 0.11) +
                              60 * ((hash((uint32_t)x, (uint32_t)y, 99) & 0xffff) / 65535.0 - 0.5));
        fwrite(drow, sizeof(float), (size_t)dw, f);
    }
    fclose(f);
    free(drow);
    snprintf(path, sizeof path, "%s/dem.vrt", dir);
    f = fopen(path, "w");
    fprintf(f,
            "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n"
            "  <SRS>EPSG:4326</SRS>\n"
            "  <GeoTransform>%.17g, %.17g, 0, %.17g, 0, %.17g</GeoTransform>\n"
            "  <VRTRasterBand dataType=\"Float32\" band=\"1\" subClass=\"VRTRawRasterBand\">\n"
            "    <SourceFilename relativeToVRT=\"1\">dem.raw</SourceFilename>\n"
            "    <ImageOffset>0</ImageOffset><PixelOffset>4</PixelOffset>"
            "<LineOffset>%d</LineOffset><ByteOrder>LSB</ByteOrder>\n"
            "  </VRTRasterBand>\n</VRTDataset>\n",
            dw, dh, lon0, res, lat0, -res, 4 * dw);
    fclose(f);
    printf("scene %d x %d (%.4f x %.4f deg), DEM %d x %d\n", w, h, 2 * lon_scale, 2 * lat_scale,
           dw, dh);
    return 0;
}
