/*
 * compare.c -- compares two rasters sample by sample (GDAL C API).
 *
 *   gg_compare [-rel-tol R] [-abs-tol A] [-mask-tol N] [-q] reference other
 *
 * Same size and band count required.  A sample is masked (nodata) when it
 * is NaN/Inf (either part, for complex) or equals its band's nodata value
 * (the real part, as GDAL applies nodata to complex bands).  Reports, over
 * all bands: pixels whose mask differs, the largest absolute difference and
 * the relative L2 error ||other - ref|| / ||ref|| over pixels valid in both.
 * Passes (exit 0) when mask differences <= N (default 0), relative L2 <= R
 * (default 1e-5) and, if -abs-tol is given, max abs <= A.  Exit 1 on a
 * failed comparison, 2 on an error (unreadable, different sizes).
 *
 * MIT licence.
 */
#include "gdal.h"
#include "cpl_conv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int masked(const double *v, int cplx, int has_nd, double nd)
{
    if (!isfinite(v[0]) || (cplx && !isfinite(v[1])))
        return 1;
    return has_nd && v[0] == nd;
}

int main(int argc, char **argv)
{
    double rel_tol = 1e-5, abs_tol = -1;
    long mask_tol = 0;
    int quiet = 0;
    const char *fa = NULL, *fb = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-rel-tol") && i + 1 < argc)
            rel_tol = atof(argv[++i]);
        else if (!strcmp(argv[i], "-abs-tol") && i + 1 < argc)
            abs_tol = atof(argv[++i]);
        else if (!strcmp(argv[i], "-mask-tol") && i + 1 < argc)
            mask_tol = atol(argv[++i]);
        else if (!strcmp(argv[i], "-q"))
            quiet = 1;
        else if (argv[i][0] != '-' && !fa)
            fa = argv[i];
        else if (argv[i][0] != '-' && !fb)
            fb = argv[i];
        else {
            fprintf(stderr, "usage: gg_compare [-rel-tol R] [-abs-tol A] [-mask-tol N] [-q] reference other\n");
            return 2;
        }
    }
    if (!fa || !fb) {
        fprintf(stderr, "usage: gg_compare [-rel-tol R] [-abs-tol A] [-mask-tol N] [-q] reference other\n");
        return 2;
    }
    GDALAllRegister();
    GDALDatasetH a = GDALOpen(fa, GA_ReadOnly), b = a ? GDALOpen(fb, GA_ReadOnly) : NULL;
    if (!a || !b) {
        if (a)
            GDALClose(a);
        return 2;
    }
    const int W = GDALGetRasterXSize(a), H = GDALGetRasterYSize(a), nb = GDALGetRasterCount(a);
    if (W != GDALGetRasterXSize(b) || H != GDALGetRasterYSize(b) || nb != GDALGetRasterCount(b)) {
        fprintf(stderr, "gg_compare: %s is %dx%dx%d, %s is %dx%dx%d\n", fa, W, H, nb, fb,
                GDALGetRasterXSize(b), GDALGetRasterYSize(b), GDALGetRasterCount(b));
        GDALClose(a);
        GDALClose(b);
        return 2;
    }
    long long mask_diff = 0, valid = 0, masked_both = 0;
    double max_abs = 0, sum_d2 = 0, sum_r2 = 0;
    int err = 0;
    const int chunk = 128;
    for (int k = 1; k <= nb && !err; k++) {
        GDALRasterBandH ba = GDALGetRasterBand(a, k), bb = GDALGetRasterBand(b, k);
        const int cplx = GDALDataTypeIsComplex(GDALGetRasterDataType(ba));
        if (cplx != GDALDataTypeIsComplex(GDALGetRasterDataType(bb))) {
            fprintf(stderr, "gg_compare: band %d: one complex, one real\n", k);
            err = 1;
            break;
        }
        int ha = 0, hb = 0;
        const double nda = GDALGetRasterNoDataValue(ba, &ha), ndb = GDALGetRasterNoDataValue(bb, &hb);
        const int nc = cplx ? 2 : 1;
        const GDALDataType dt = cplx ? GDT_CFloat64 : GDT_Float64;
        double *ra = malloc((size_t)W * chunk * nc * sizeof(double));
        double *rb = malloc((size_t)W * chunk * nc * sizeof(double));
        if (!ra || !rb) {
            fprintf(stderr, "gg_compare: out of memory\n");
            err = 1;
        }
        for (int y0 = 0; y0 < H && !err; y0 += chunk) {
            const int rows = y0 + chunk > H ? H - y0 : chunk;
            if (GDALRasterIO(ba, GF_Read, 0, y0, W, rows, ra, W, rows, dt, 0, 0) != CE_None ||
                GDALRasterIO(bb, GF_Read, 0, y0, W, rows, rb, W, rows, dt, 0, 0) != CE_None) {
                err = 1;
                break;
            }
            const size_t n = (size_t)W * rows;
            for (size_t i = 0; i < n; i++) {
                const double *pa = ra + i * nc, *pb = rb + i * nc;
                const int ma = masked(pa, cplx, ha, nda), mb = masked(pb, cplx, hb, ndb);
                if (ma != mb) {
                    mask_diff++;
                    continue;
                }
                if (ma) {
                    masked_both++;
                    continue;
                }
                valid++;
                double d2 = 0, r2 = 0;
                for (int c = 0; c < nc; c++) {
                    d2 += (pb[c] - pa[c]) * (pb[c] - pa[c]);
                    r2 += pa[c] * pa[c];
                }
                sum_d2 += d2;
                sum_r2 += r2;
                if (sqrt(d2) > max_abs)
                    max_abs = sqrt(d2);
            }
        }
        free(ra);
        free(rb);
    }
    GDALClose(a);
    GDALClose(b);
    if (err) {
        fprintf(stderr, "gg_compare: reading failed\n");
        return 2;
    }
    const double rel = sum_r2 > 0 ? sqrt(sum_d2 / sum_r2) : sqrt(sum_d2);
    const int pass = mask_diff <= mask_tol && rel <= rel_tol && (abs_tol < 0 || max_abs <= abs_tol) &&
                     valid > 0;
    if (!quiet)
        printf("%s valid=%lld nodata=%lld mask_diff=%lld max_abs=%.3g rel_l2=%.3g\n",
               pass ? "PASS" : "FAIL", valid, masked_both, mask_diff, max_abs, rel);
    return pass ? 0 : 1;
}
