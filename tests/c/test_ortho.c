/* test_ortho.c -- the RPC + DEM orthorectification kernel (gg_ortho_*) on
 * every test device, against a float64 reference written here from the
 * conventions in docs/gdal_ortho.md (GDAL's RPC transformer and warp
 * kernel), independently of algorithms/ortho/:
 *
 *   - forward RFM (RPC00B term order, +0.5 pixel convention) at random
 *     ground points: <= 1e-9 px;
 *   - whole output blocks (lon/lat output grid over a DEM in lon/lat, so the
 *     exact coordinates are affine in the pixel position and the reference
 *     needs no PROJ): near, bilinear, cubic; Float32 output within 1e-3 of
 *     the reference, UInt16 within 1 DN (rounding of a value that sits on a
 *     half), identical footprints; a DEM nodata hole with and without
 *     -dem_missing;
 *   - devices agreeing with the first one (cpu);
 *   - several bands with their own nodata values (gdalwarp's unified
 *     source mask, UNIFIED_SRC_NODATA YES and its default PARTIAL), near /
 *     bilinear / cubic, Float32 / UInt16, against the float64 reference band
 *     by band; windowed (all bands at once) = resident; devices agree;
 *   - the resident source (rows put in strips, in shuffled order) giving the
 *     same bytes as the windowed source, and reporting a miss when it is
 *     given too few rows;
 *   - the launch configuration of the kernel: on CUDA it must reach the
 *     kernel's maximum theoretical occupancy, computed here with the CUDA
 *     occupancy rules from the kernel's register count and the device's
 *     compute capability (GG_OCC_REGS and GG_OCC_CC, which
 *     tests/device/run_gpu_checks.sh takes from cuobjdump and nvidia-smi);
 *     OpenCL and the CPU expose no residency figures: the test says so and
 *     checks the work-group shape only.
 *
 * MIT licence. */
#include "check.h"

#include <math.h>

#define MAXDEV 4

/* ------------------------------------------------------------ the model */

/* A synthetic RPC00B: parallax (height terms), rotation, non-linear terms;
 * source W x H over lon 6.1 +- 0.017, lat 45.2 +- 0.012. */
static void make_rpc(gg_ortho_rpc *r, int W, int H)
{
    memset(r, 0, sizeof *r);
    r->line_off = H / 2.0;
    r->samp_off = W / 2.0;
    r->lat_off = 45.2;
    r->long_off = 6.1;
    r->height_off = 1500;
    r->line_scale = H / 2.0;
    r->samp_scale = W / 2.0;
    r->lat_scale = 0.012;
    r->long_scale = 0.017;
    r->height_scale = 1200;
    const double ln[20] = {0.002, -0.035, -1.02, 0.07, 0.004, 0, 0, 0.003, -0.005, 0.001,
                           0,     0.0006, 0,     0,    0,     0.0004, 0, 0.0002, 0, 0};
    const double ld[20] = {1.0, 0.0009, -0.0007, 0.0004, 0, 0, 0.0001};
    const double sn[20] = {-0.001, 1.01, 0.045, -0.11, 0.002, 0.003, 0, -0.004, 0, 0,
                           0.0005, 0,    0.0003, 0,     0,     0,     0, 0,      0, 0.0001};
    const double sd[20] = {1.0, -0.0006, 0.0008, 0.0002, 0, 0, 0, 0, 0.00015};
    memcpy(r->line_num, ln, sizeof ln);
    memcpy(r->line_den, ld, sizeof ld);
    memcpy(r->samp_num, sn, sizeof sn);
    memcpy(r->samp_den, sd, sizeof sd);
}

/* RPC00B polynomial, term by term as the specification lists them. */
static double ref_poly(const double *c, double L, double P, double H)
{
    const double t[20] = {1,         L,         P,         H,         L * P,
                          L * H,     P * H,     L * L,     P * P,     H * H,
                          P * L * H, L * L * L, L * P * P, L * H * H, L * L * P,
                          P * P * P, P * H * H, L * L * H, P * P * H, H * H * H};
    double s = 0;
    for (int i = 0; i < 20; i++)
        s += c[i] * t[i];
    return s;
}

/* Ground -> GDAL pixel/line (corner convention: RPC + 0.5). */
static void ref_rfm(const gg_ortho_rpc *r, double lon, double lat, double h, double *x, double *y)
{
    const double L = (lon - r->long_off) / r->long_scale;
    const double P = (lat - r->lat_off) / r->lat_scale;
    const double Hn = (h - r->height_off) / r->height_scale;
    *y = ref_poly(r->line_num, L, P, Hn) / ref_poly(r->line_den, L, P, Hn) * r->line_scale +
         r->line_off + 0.5;
    *x = ref_poly(r->samp_num, L, P, Hn) / ref_poly(r->samp_den, L, P, Hn) * r->samp_scale +
         r->samp_off + 0.5;
}

/* ------------------------------------------------------------ the scene */

enum { SW = 120, SH = 100 };          /* source */
enum { OW = 110, OH = 90 };           /* output */
enum { DW = 50, DH = 50 };            /* DEM (lon/lat raster) */
static const double O_LON0 = 6.08, O_LAT0 = 45.215, O_DLON = 0.04 / OW, O_DLAT = 0.03 / OH;
static const double D_LON0 = 6.05, D_LAT0 = 45.25, D_RES = 0.002;

static float g_src[SW * SH];
static double g_dem[DW * DH];
#define DEM_NODATA (-32768.0)

static void make_inputs(void)
{
    for (int y = 0; y < SH; y++)
        for (int x = 0; x < SW; x++)
            g_src[y * SW + x] = (float)(2000 + 500 * sin(x * 0.37) * cos(y * 0.23) +
                                        120 * sin((x + 2 * y) * 1.7) + urand(-30, 30));
    for (int y = 0; y < DH; y++)
        for (int x = 0; x < DW; x++)
            g_dem[y * DW + x] = 1500 + 600 * sin(x * 0.21) * cos(y * 0.17) + urand(-40, 40);
}

static void out_lonlat(int x, int y, double *lon, double *lat)
{
    *lon = O_LON0 + (x + 0.5) * O_DLON;
    *lat = O_LAT0 - (y + 0.5) * O_DLAT;
}

/* DEM raster position (corner convention) of a ground point. */
static void dem_pos(double lon, double lat, double *dx, double *dy)
{
    *dx = (lon - D_LON0) / D_RES;
    *dy = (D_LAT0 - lat) / D_RES;
}

/* GDAL's bilinear DEM sample: pixel centres, truncation towards zero, any
 * nodata tap fails, nearest within 1 px of the edge.  0 on failure. */
static int ref_dem(const double *dem, int has_nodata, double x, double y, double *z)
{
    const double fx = x - 0.5, fy = y - 0.5;
    const int ix = (int)fx, iy = (int)fy;
    if (ix >= 0 && iy >= 0 && ix + 2 <= DW && iy + 2 <= DH) {
        const double v[4] = {dem[iy * DW + ix], dem[iy * DW + ix + 1], dem[(iy + 1) * DW + ix],
                             dem[(iy + 1) * DW + ix + 1]};
        for (int k = 0; k < 4; k++)
            if (has_nodata && v[k] == DEM_NODATA)
                return 0;
        const double a = fx - ix, b = fy - iy;
        *z = (1 - b) * ((1 - a) * v[0] + a * v[1]) + b * ((1 - a) * v[2] + a * v[3]);
        return 1;
    }
    const int nx = (int)x, ny = (int)y;
    if (nx < 0 || ny < 0 || nx >= DW || ny >= DH)
        return 0;
    if (has_nodata && dem[ny * DW + nx] == DEM_NODATA)
        return 0;
    *z = dem[ny * DW + nx];
    return 1;
}

static int in_img(int x, int y)
{
    return x >= 0 && y >= 0 && x < SW && y < SH;
}

/* Source nodata (jobs with src_nd): pixels equal to SRC_NODATA are invalid
 * when g_nd is set. */
#define SRC_NODATA 1999.0f
static int g_nd;

/* Several bands (test_multiband): whether a tap of the band in g_src is
 * valid, and the containing-pixel rule of bilinear / cubic. */
static int (*g_valid_hook)(int x, int y);
static int (*g_gate_hook)(int x, int y);

static int valid(int x, int y)
{
    if (g_valid_hook)
        return in_img(x, y) && g_valid_hook(x, y);
    return in_img(x, y) && !(g_nd && g_src[y * SW + x] == SRC_NODATA);
}

/* GDAL's bilinear on pixel centres; taps outside the image are left out and
 * the weights renormalised. */
static int ref_bilinear(double sx, double sy, double *v)
{
    const double fx = sx - 0.5, fy = sy - 0.5;
    const int ix = (int)floor(fx), iy = (int)floor(fy);
    const double ax = fx - ix, ay = fy - iy;
    double acc = 0, wsum = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            if (!valid(ix + i, iy + j))
                continue;
            const double w = (i ? ax : 1 - ax) * (j ? ay : 1 - ay);
            acc += w * g_src[(iy + j) * SW + ix + i];
            wsum += w;
        }
    if (wsum < 1e-5)
        return 0;
    *v = acc / wsum;
    return 1;
}

/* Catmull-Rom (a = -0.5) kernel. */
static double catmull_rom(double t)
{
    t = fabs(t);
    if (t < 1)
        return 1.5 * t * t * t - 2.5 * t * t + 1;
    if (t < 2)
        return -0.5 * t * t * t + 2.5 * t * t - 4 * t + 2;
    return 0;
}

static int ref_cubic(double sx, double sy, double *v)
{
    const double fx = sx - 0.5, fy = sy - 0.5;
    const int ix = (int)floor(fx), iy = (int)floor(fy);
    if (ix - 1 < 0 || iy - 1 < 0 || ix + 2 >= SW || iy + 2 >= SH)
        return ref_bilinear(sx, sy, v);
    /* with a nodata tap among the 16: bilinear over the valid ones */
    for (int j = -1; j <= 2; j++)
        for (int i = -1; i <= 2; i++)
            if (!valid(ix + i, iy + j))
                return ref_bilinear(sx, sy, v);
    double acc = 0;
    for (int j = -1; j <= 2; j++)
        for (int i = -1; i <= 2; i++)
            acc += catmull_rom(fx - (ix + i)) * catmull_rom(fy - (iy + j)) *
                   g_src[(iy + j) * SW + ix + i];
    *v = acc;
    return 1;
}

/* Downsampling (gdalwarp's stretched kernels): kernel k of support
 * `support` (2 cubic, 1 bilinear) stretched by 1 / scale along each axis,
 * summed over every image pixel inside the stretched support, normalised by
 * the product of the row and column weight sums.  Written over absolute
 * pixel indices, independently of the kernel's tap loops. */
static double g_xscale = 1.0, g_yscale = 1.0; /* < 0.95: stretched */

static double triangle(double t)
{
    t = fabs(t);
    return t < 1 ? 1 - t : 0;
}

static int ref_stretched(int cubic, double sx, double sy, double *v)
{
    const double support = cubic ? 2.0 : 1.0;
    const double fx = sx - 0.5, fy = sy - 0.5;
    const double xs = fmin(g_xscale, 1.0), ys = fmin(g_yscale, 1.0);
    const int x0 = (int)floor(fx - support / xs), x1 = (int)ceil(fx + support / xs);
    const int y0 = (int)floor(fy - support / ys), y1 = (int)ceil(fy + support / ys);
    double acc = 0, wxs = 0, wys = 0, wvalid = 0;
    for (int x = x0; x <= x1; x++)
        if (x >= 0 && x < SW)
            wxs += cubic ? catmull_rom((x - fx) * xs) : triangle((x - fx) * xs);
    for (int y = y0; y <= y1; y++) {
        if (y < 0 || y >= SH)
            continue;
        const double wy = cubic ? catmull_rom((y - fy) * ys) : triangle((y - fy) * ys);
        wys += wy;
        for (int x = x0; x <= x1; x++)
            if (valid(x, y)) {
                const double w =
                    wy * (cubic ? catmull_rom((x - fx) * xs) : triangle((x - fx) * xs));
                acc += w * g_src[y * SW + x];
                wvalid += w;
            }
    }
    if (!g_nd) {
        *v = acc / (wxs * wys);
        return 1;
    }
    /* with nodata: normalised by the weight of the valid taps */
    if (wvalid < 1e-6)
        return 0;
    *v = acc / wvalid;
    return 1;
}

/* Reference orthoimage (float64): NAN where no value.  dem_missing < -1e30:
 * none given. */
static void ref_ortho(const gg_ortho_rpc *r, const double *dem, int has_nodata,
                      double dem_missing, int method, double *out)
{
    for (int y = 0; y < OH; y++)
        for (int x = 0; x < OW; x++) {
            double lon, lat, dx, dy, z, sx, sy, v = NAN;
            out_lonlat(x, y, &lon, &lat);
            dem_pos(lon, lat, &dx, &dy);
            out[y * OW + x] = NAN;
            if (!ref_dem(dem, has_nodata, dx, dy, &z)) {
                if (dem_missing < -1e30)
                    continue;
                z = dem_missing;
            }
            ref_rfm(r, lon, lat, z, &sx, &sy);
            if (!(sx >= 0 && sy >= 0))
                continue;
            const int ix = (int)(sx + 1e-10), iy = (int)(sy + 1e-10);
            if (ix >= SW || iy >= SH)
                continue;
            /* gdalwarp's masked kernels: no value where the source pixel
             * containing the position is nodata, whatever the method */
            if (!(g_gate_hook && method != GG_ORTHO_METHOD_NEAR ? g_gate_hook(ix, iy)
                                                                : valid(ix, iy)))
                continue;
            if (method == GG_ORTHO_METHOD_NEAR)
                v = g_src[iy * SW + ix];
            else if (g_xscale < 0.95 || g_yscale < 0.95)
                ref_stretched(method == GG_ORTHO_METHOD_CUBIC, sx, sy, &v);
            else if (method == GG_ORTHO_METHOD_BILINEAR)
                ref_bilinear(sx, sy, &v);
            else
                ref_cubic(sx, sy, &v);
            out[y * OW + x] = v;
        }
}

/* Exact nodes of a block of output rows [y0, y0 + rows): node (i, j) at
 * block pixel ((i - 1) * step, (j - 1) * step). */
static double *make_grid(int y0, int rows, int step, int *nx, int *ny)
{
    *nx = (OW - 1) / step + 4;
    *ny = (rows - 1) / step + 4;
    const size_t n = (size_t)*nx * *ny;
    double *g = malloc(n * GG_ORTHO_PLANES * sizeof(double));
    for (int j = 0; j < *ny; j++)
        for (int i = 0; i < *nx; i++) {
            const size_t k = (size_t)j * *nx + i;
            double lon, lat, dx, dy;
            out_lonlat((i - 1) * step, y0 + (j - 1) * step, &lon, &lat);
            dem_pos(lon, lat, &dx, &dy);
            g[k] = lon;
            g[n + k] = lat;
            g[2 * n + k] = dx;
            g[3 * n + k] = dy;
            g[4 * n + k] = 0.0;
        }
    return g;
}

typedef struct job {
    int method, dst_type, dem_nodata, has_missing;
    double missing;
    double xscale, yscale; /* 0: no stretch */
    int src_nd;            /* source nodata SRC_NODATA (holes), also the output's */
} job;

static gg_ortho_session *open_session(gg_context *ctx, const gg_ortho_rpc *r, const double *dem,
                                      const job *j)
{
    gg_ortho_dem d = {dem, DW, DH, 0, 0, DW, DH, j->dem_nodata, DEM_NODATA};
    gg_ortho_options o;
    memset(&o, 0, sizeof o);
    o.resampling = (gg_ortho_method)j->method;
    o.dem_interp = GG_ORTHO_METHOD_BILINEAR;
    o.height_scale = 1.0;
    o.has_dem_missing = j->has_missing;
    o.dem_missing = j->missing;
    o.dst_init = j->src_nd ? SRC_NODATA : 0.0;
    o.has_src_nodata = o.has_dst_nodata = j->src_nd;
    o.src_nodata = SRC_NODATA;
    gg_ortho_session *s = NULL;
    if (gg_ortho_session_create(ctx, r, &d, &o, &s) != GG_OK)
        return NULL;
    if (j->xscale > 0 && gg_ortho_session_set_scale(s, j->xscale, j->yscale) != GG_OK) {
        gg_ortho_session_destroy(s);
        return NULL;
    }
    return s;
}

/* The whole output in blocks of `rows` rows with the windowed source (the
 * whole image as window).  out: OW x OH of dst_type.  0 on failure. */
static int run_windowed(gg_context *ctx, gg_ortho_session *s, int dst_type, int rows, int step,
                        void *out)
{
    const size_t ds = dst_type == GG_FLOAT32 ? 4 : 2;
    for (int y0 = 0; y0 < OH; y0 += rows) {
        const int h = y0 + rows <= OH ? rows : OH - y0;
        int nx, ny, missed = 1;
        double *g = make_grid(y0, h, step, &nx, &ny);
        gg_ortho_grid grid = {g, nx, ny, step};
        gg_ortho_image im = {g_src, GG_FLOAT32, 0, 0, SW, SH, SW, SW, SH};
        const gg_status st =
            gg_ortho_session_run(s, &grid, &im, (char *)out + (size_t)y0 * OW * ds,
                                 (gg_type)dst_type, OW, h, OW, &missed);
        free(g);
        if (st != GG_OK) {
            fprintf(stderr, "run: %s\n", gg_context_last_error(ctx));
            return 0;
        }
        if (missed)
            return 0; /* the whole image was there: nothing can miss */
    }
    return 1;
}

/* ------------------------------------------------------------ the tests */

static void test_rfm(void)
{
    gg_ortho_rpc r;
    make_rpc(&r, SW, SH);
    double worst = 0;
    for (int i = 0; i < 2000; i++) {
        const double lon = 6.1 + urand(-0.02, 0.02), lat = 45.2 + urand(-0.015, 0.015);
        const double h = urand(200, 2800);
        double x, y, rx, ry;
        gg_ortho_rpc_forward(&r, lon, lat, h, &x, &y);
        ref_rfm(&r, lon, lat, h, &rx, &ry);
        worst = fmax(worst, fmax(fabs(x - rx), fabs(y - ry)));
    }
    CHECK(worst <= 1e-9, "forward RFM %.3g px from the float64 reference", worst);
    printf("  RFM: max %.2g px from the reference over 2000 points\n", worst);
}

/* out (OW x OH, dst_type) against the reference: returns the pixels with a
 * value, checks the footprint and the values.  nodata: the output's value
 * of "no value" (0 without one: the texture never comes near 0); avoid: a
 * resampled UInt16 value rounding onto it must have been moved to
 * nodata - 1 (gdalwarp 3.6). */
static int check_against_ref(const char *what, const void *out, int dst_type, const double *ref,
                             double nodata, int avoid)
{
    int valid = 0, mask = 0, bad = 0, moved = 0, bad_moved = 0;
    double worst = 0;
    for (int i = 0; i < OW * OH; i++) {
        const double v = dst_type == GG_FLOAT32 ? ((const float *)out)[i]
                                                      : ((const unsigned short *)out)[i];
        int has = isfinite(ref[i]);
        /* a value stored onto the nodata value and not moved off it (near,
         * or a band's own nodata value taken as data under the unified
         * mask) reads as "no value" */
        if (has && !(avoid && dst_type == GG_UINT16)) {
            const double st = dst_type == GG_FLOAT32
                                  ? (double)(float)ref[i]
                                  : floor(fmin(fmax(ref[i], 0), 65535) + 0.5);
            if (st == nodata)
                has = 0;
        }
        if (has != (v != nodata)) {
            mask++;
            continue;
        }
        if (!has)
            continue;
        valid++;
        double want = ref[i];
        if (dst_type == GG_UINT16) {
            want = floor(fmin(fmax(want, 0), 65535) + 0.5);
            if (avoid && want == nodata) { /* exactly moved, not within 1 DN */
                want = nodata - 1;
                moved++;
                bad_moved += v != want;
            }
        }
        const double d = fabs(v - want);
        worst = fmax(worst, d);
        if (d > (dst_type == GG_FLOAT32 ? 1e-3 : 1.0))
            bad++;
    }
    CHECK(mask == 0, "%s: footprint differs from the reference at %d pixels", what, mask);
    CHECK(bad == 0, "%s: %d pixels off the reference (max %.3g)", what, bad, worst);
    CHECK(valid > OW * OH / 3, "%s: only %d pixels with a value", what, valid);
    CHECK(bad_moved == 0, "%s: %d of %d values on nodata not moved to nodata - 1", what,
          bad_moved, moved);
    CHECK(!avoid || dst_type != GG_UINT16 || moved > 0,
          "%s: no value rounds onto nodata: the rule is not exercised", what);
    printf("  %s: %d pixels, max |diff| %.3g%s", what, valid, worst, moved ? "" : "\n");
    if (moved)
        printf(", %d moved off nodata\n", moved);
    return valid;
}

static void test_against_reference(gg_context *ctx, const char *dev, void *keep[], int nkeep)
{
    gg_ortho_rpc r;
    make_rpc(&r, SW, SH);
    static double dem_hole[DW * DH];
    memcpy(dem_hole, g_dem, sizeof g_dem);
    for (int y = 20; y < 26; y++)
        for (int x = 18; x < 27; x++)
            dem_hole[y * DW + x] = DEM_NODATA;
    const job jobs[] = {
        {GG_ORTHO_METHOD_NEAR, GG_FLOAT32, 0, 0, 0, 0, 0, 0},
        {GG_ORTHO_METHOD_BILINEAR, GG_FLOAT32, 0, 0, 0, 0, 0, 0},
        {GG_ORTHO_METHOD_CUBIC, GG_FLOAT32, 0, 0, 0, 0, 0, 0},
        {GG_ORTHO_METHOD_CUBIC, GG_UINT16, 0, 0, 0, 0, 0, 0},
        {GG_ORTHO_METHOD_BILINEAR, GG_FLOAT32, 1, 0, 0, 0, 0, 0}, /* hole: no value */
        {GG_ORTHO_METHOD_BILINEAR, GG_FLOAT32, 1, 1, 1234.5, 0, 0, 0}, /* hole: -dem_missing */
        /* downsampling: gdalwarp's stretched kernels (3x and 2.2x, 2.4x
         * and 1.0x: one axis stretched) */
        {GG_ORTHO_METHOD_BILINEAR, GG_FLOAT32, 0, 0, 0, 1.0 / 3, 1.0 / 2.2, 0},
        {GG_ORTHO_METHOD_CUBIC, GG_FLOAT32, 0, 0, 0, 1.0 / 3, 1.0 / 2.2, 0},
        {GG_ORTHO_METHOD_CUBIC, GG_UINT16, 0, 0, 0, 1.0 / 2.4, 1.0, 0},
        /* source nodata holes (gdalwarp's masked kernels) */
        {GG_ORTHO_METHOD_NEAR, GG_FLOAT32, 0, 0, 0, 0, 0, 1},
        {GG_ORTHO_METHOD_BILINEAR, GG_FLOAT32, 0, 0, 0, 0, 0, 1},
        {GG_ORTHO_METHOD_CUBIC, GG_FLOAT32, 0, 0, 0, 0, 0, 1},
        {GG_ORTHO_METHOD_CUBIC, GG_UINT16, 0, 0, 0, 0, 0, 1},
        {GG_ORTHO_METHOD_BILINEAR, GG_UINT16, 0, 0, 0, 0, 0, 1},
        {GG_ORTHO_METHOD_CUBIC, GG_FLOAT32, 0, 0, 0, 1.0 / 2.5, 1.0 / 2.1, 1},
    };
    const char *names[] = {"near",           "bilinear",     "cubic",
                           "cubic UInt16",   "DEM nodata",   "DEM nodata + dem_missing",
                           "bilinear stretched 3x2.2", "cubic stretched 3x2.2",
                           "cubic UInt16 stretched 2.4x1", "srcnodata near",
                           "srcnodata bilinear", "srcnodata cubic", "srcnodata cubic UInt16",
                           "srcnodata bilinear UInt16", "srcnodata cubic stretched 2.5x2.1"};
    double *ref = malloc(sizeof(double) * OW * OH);
    static float src_keep[SW * SH];
    for (int t = 0; t < (int)(sizeof jobs / sizeof jobs[0]) && t < nkeep; t++) {
        const job *j = &jobs[t];
        const double *dem = j->dem_nodata ? dem_hole : g_dem;
        if (j->src_nd) { /* nodata holes: blobs, and single pixels every 23 */
            memcpy(src_keep, g_src, sizeof g_src);
            for (int y = 0; y < SH; y++)
                for (int x = 0; x < SW; x++)
                    if ((x - 40) * (x - 40) + (y - 30) * (y - 30) < 64 ||
                        (x - 80) * (x - 80) + (y - 65) * (y - 65) < 30 || (x * 7 + y * 3) % 23 == 0)
                        g_src[y * SW + x] = SRC_NODATA;
            /* and values next to it that round onto it (UInt16) */
            for (int x = 0; x < SW; x += 5)
                g_src[50 * SW + x] = SRC_NODATA + 0.3f;
            g_nd = 1;
        }
        g_xscale = j->xscale > 0 ? j->xscale : 1.0;
        g_yscale = j->xscale > 0 ? j->yscale : 1.0;
        ref_ortho(&r, dem, j->dem_nodata, j->has_missing ? j->missing : -1e300, j->method, ref);
        gg_ortho_session *s = open_session(ctx, &r, dem, j);
        CHECK(s != NULL, "%s: session: %s", dev, gg_context_last_error(ctx));
        if (!s)
            continue;
        void *out = calloc(OW * OH, 4);
        CHECK(run_windowed(ctx, s, j->dst_type, 32, 8, out), "%s %s: run failed", dev,
              names[t]);
        char what[96];
        snprintf(what, sizeof what, "%s %s", dev, names[t]);
        check_against_ref(what, out, j->dst_type, ref, j->src_nd ? SRC_NODATA : 0.0,
                          j->src_nd && j->method != GG_ORTHO_METHOD_NEAR);
        if (j->src_nd) { /* the holes go again */
            memcpy(g_src, src_keep, sizeof g_src);
            g_nd = 0;
        }
        gg_ortho_session_destroy(s);
        keep[t] = out;
    }
    free(ref);
}

/* ------------------------------------------------ several bands' nodata */

/* gdalwarp 3.6's multi-band source nodata, written from its documented
 * rule (GDALWarpOptions UNIFIED_SRC_NODATA): NB bands, each with its own
 * nodata value MB_ND[b]; a source pixel is "unified valid" where any band
 * is not at its nodata value.  unified 1 (YES, gdalwarp -srcnodata over
 * several bands): a tap of any band is valid where the pixel is unified
 * valid (its value used even when it equals the band's nodata); 0 (the
 * default, PARTIAL): a tap is valid where its own band is, and bilinear /
 * cubic give no value where the containing pixel is not unified valid;
 * nearest neighbour takes the band's own validity (PARTIAL) or the unified
 * one (YES). */
enum { NB = 3 };
static const double MB_ND[NB] = {1999.0, 2101.0, 1888.0};
static float g_bands[NB][SW * SH];
static int g_band, g_unified;

static int mb_any(int x, int y)
{
    for (int b = 0; b < NB; b++)
        if (g_bands[b][y * SW + x] != (float)MB_ND[b])
            return 1;
    return 0;
}

static int mb_valid(int x, int y)
{
    return g_unified ? mb_any(x, y) : g_bands[g_band][y * SW + x] != (float)MB_ND[g_band];
}

static void make_bands(void)
{
    for (int b = 0; b < NB; b++)
        for (int y = 0; y < SH; y++)
            for (int x = 0; x < SW; x++) {
                float v = (float)(g_src[y * SW + x] * (1.0 + 0.07 * b) - 150.0 * b +
                                  40.0 * sin((x - 3 * y + 11 * b) * 0.9));
                /* shared blob: every band nodata; one blob per band; band 0
                 * and 1 share another; scattered single pixels per band */
                const int shared = (x - 40) * (x - 40) + (y - 30) * (y - 30) < 64;
                const int own = (x - 20 - 30 * b) * (x - 20 - 30 * b) + (y - 70) * (y - 70) < 50;
                const int pair = b < 2 && (x - 90) * (x - 90) + (y - 40) * (y - 40) < 40;
                const int dot = (x * (7 + b) + y * 3 + b) % 19 == 0;
                if (shared || own || pair || dot)
                    v = (float)MB_ND[b];
                g_bands[b][y * SW + x] = v;
            }
    /* values rounding onto the nodata next to valid pixels (UInt16) */
    for (int x = 0; x < SW; x += 5)
        g_bands[1][50 * SW + x] = (float)MB_ND[1] + 0.3f;
}

static void test_multiband(gg_context *ctx, const char *dev, int first_dev)
{
    gg_ortho_rpc r;
    make_rpc(&r, SW, SH);
    static float keep_src[SW * SH];
    static void *first[2][3][2]; /* unified x method x dst type: the first device's */
    memcpy(keep_src, g_src, sizeof g_src);
    make_bands();
    g_xscale = g_yscale = 1.0;
    const int methods[3] = {GG_ORTHO_METHOD_NEAR, GG_ORTHO_METHOD_BILINEAR,
                            GG_ORTHO_METHOD_CUBIC};
    double *ref = malloc(sizeof(double) * OW * OH);
    const size_t plane = (size_t)OW * OH;
    for (int u = 0; u < 2; u++)
        for (int m = 0; m < 3; m++)
            for (int t = 0; t < 2; t++) {
                const int dst_type = t ? GG_UINT16 : GG_FLOAT32;
                const size_t ds = t ? 2 : 4;
                job j = {methods[m], dst_type, 0, 0, 0, 0, 0, 1};
                gg_ortho_session *s = open_session(ctx, &r, g_dem, &j);
                CHECK(s != NULL, "%s: session", dev);
                if (!s)
                    continue;
                CHECK(gg_ortho_session_set_bands(s, NB, MB_ND, MB_ND, u) == GG_OK,
                      "%s: set_bands: %s", dev, gg_context_last_error(ctx));
                /* windowed: all bands at once, in blocks of 32 rows */
                char *out = calloc(plane * NB, ds);
                int ok = 1;
                for (int y0 = 0; y0 < OH && ok; y0 += 32) {
                    const int h = y0 + 32 <= OH ? 32 : OH - y0;
                    int nx, ny, missed = 1;
                    double *g = make_grid(y0, h, 8, &nx, &ny);
                    gg_ortho_grid grid = {g, nx, ny, 8};
                    gg_ortho_image im = {g_bands, GG_FLOAT32, 0, 0, SW, SH, SW, SW, SH};
                    char *blk = malloc((size_t)OW * h * NB * ds);
                    ok = gg_ortho_session_run_bands(s, &grid, &im, NB, blk,
                                                    (gg_type)dst_type, OW, h, OW,
                                                    (size_t)OW * h, &missed) == GG_OK &&
                         !missed;
                    for (int b = 0; ok && b < NB; b++)
                        memcpy(out + (b * plane + (size_t)y0 * OW) * ds,
                               blk + (size_t)b * OW * h * ds, (size_t)OW * h * ds);
                    free(blk);
                    free(g);
                }
                CHECK(ok, "%s: multi-band run: %s", dev, gg_context_last_error(ctx));
                /* the single-band entry point must refuse: it cannot see
                 * the other bands */
                {
                    int nx, ny, missed = 0;
                    double *g = make_grid(0, 8, 8, &nx, &ny);
                    gg_ortho_grid grid = {g, nx, ny, 8};
                    gg_ortho_image im = {g_bands, GG_FLOAT32, 0, 0, SW, SH, SW, SW, SH};
                    CHECK(gg_ortho_session_run(s, &grid, &im, out, (gg_type)dst_type, OW,
                                               8, OW, &missed) == GG_ERR_ARGUMENT,
                          "%s: one band of a multi-band nodata session accepted", dev);
                    free(g);
                }
                /* resident: the same bytes */
                char *res = calloc(plane * NB, ds);
                ok = gg_ortho_session_set_source(s, GG_FLOAT32, SW, SH, NB) == GG_OK;
                for (int b = 0; ok && b < NB; b++)
                    ok = gg_ortho_session_put_rows(s, b, 0, SH, g_bands[b], SW) == GG_OK;
                for (int y0 = 0; y0 < OH && ok; y0 += 32) {
                    const int h = y0 + 32 <= OH ? 32 : OH - y0;
                    int nx, ny, missed = 1;
                    double *g = make_grid(y0, h, 8, &nx, &ny);
                    gg_ortho_grid grid = {g, nx, ny, 8};
                    for (int b = 0; ok && b < NB; b++)
                        ok = gg_ortho_session_run_resident(
                                 s, &grid, b, 0, SH, res + (b * plane + (size_t)y0 * OW) * ds,
                                 (gg_type)dst_type, OW, h, OW, &missed) == GG_OK &&
                             !missed;
                    free(g);
                }
                CHECK(ok, "%s: multi-band resident run: %s", dev, gg_context_last_error(ctx));
                CHECK(memcmp(out, res, plane * NB * ds) == 0,
                      "%s: multi-band resident and windowed outputs differ", dev);
                free(res);
                gg_ortho_session_destroy(s);
                /* each band against the reference */
                g_unified = u;
                g_nd = 1;
                g_valid_hook = mb_valid;
                g_gate_hook = mb_any;
                for (int b = 0; b < NB; b++) {
                    g_band = b;
                    memcpy(g_src, g_bands[b], sizeof g_src);
                    ref_ortho(&r, g_dem, 0, -1e300, methods[m], ref);
                    char what[96];
                    static const char *const mn[3] = {"near", "bilinear", "cubic"};
                    snprintf(what, sizeof what, "%s %s %s %s band %d", dev,
                             u ? "unified" : "partial", mn[m], t ? "UInt16" : "Float32", b + 1);
                    check_against_ref(what, out + b * plane * ds, dst_type, ref, MB_ND[b],
                                      t && m != 0);
                }
                g_valid_hook = g_gate_hook = NULL;
                g_nd = 0;
                memcpy(g_src, keep_src, sizeof g_src);
                /* devices agree with the first */
                if (first_dev) {
                    first[u][m][t] = out;
                    continue;
                }
                if (first[u][m][t]) {
                    double worst = 0;
                    int mask = 0;
                    for (size_t i = 0; i < plane * NB; i++) {
                        const double a = t ? ((unsigned short *)first[u][m][t])[i]
                                           : ((float *)first[u][m][t])[i];
                        const double c = t ? ((unsigned short *)out)[i] : ((float *)out)[i];
                        const double nd = MB_ND[i / plane];
                        mask += (a == nd) != (c == nd);
                        worst = fmax(worst, fabs(a - c));
                    }
                    CHECK(mask == 0 && worst <= (t ? 1.0 : 1e-3),
                          "%s: multi-band case %d/%d/%d vs the first device: %d mask, max %.3g",
                          dev, u, m, t, mask, worst);
                }
                free(out);
            }
    free(ref);
}

/* Resident source, rows put in shuffled strips of 7: the same bytes as the
 * windowed source; too few rows: a miss. */
static void test_resident(gg_context *ctx, const char *dev)
{
    gg_ortho_rpc r;
    make_rpc(&r, SW, SH);
    const job j = {GG_ORTHO_METHOD_CUBIC, GG_FLOAT32, 0, 0, 0, 0, 0, 0};
    gg_ortho_session *s = open_session(ctx, &r, g_dem, &j);
    CHECK(s != NULL, "%s: session", dev);
    if (!s)
        return;
    float *a = calloc(OW * OH, 4), *b = calloc(OW * OH, 4);
    CHECK(run_windowed(ctx, s, GG_FLOAT32, 24, 8, a), "%s: windowed run", dev);
    CHECK(gg_ortho_session_set_source(s, GG_FLOAT32, SW, SH, 1) == GG_OK,
          "%s: set_source: %s", dev, gg_context_last_error(ctx));
    int order[(SH + 6) / 7];
    const int nstrips = (SH + 6) / 7;
    for (int i = 0; i < nstrips; i++)
        order[i] = i;
    for (int i = nstrips - 1; i > 0; i--) {
        const int k = (int)urand(0, i + 1), t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    for (int i = 0; i < nstrips; i++) {
        const int y0 = order[i] * 7, n = y0 + 7 <= SH ? 7 : SH - y0;
        CHECK(gg_ortho_session_put_rows(s, 0, y0, n, g_src + (size_t)y0 * SW, SW) == GG_OK,
              "%s: put_rows %d", dev, y0);
    }
    int missed_any = 0, missed_few = 0;
    for (int y0 = 0; y0 < OH; y0 += 24) {
        const int h = y0 + 24 <= OH ? 24 : OH - y0;
        int nx, ny, missed = 0;
        double *g = make_grid(y0, h, 8, &nx, &ny);
        gg_ortho_grid grid = {g, nx, ny, 8};
        CHECK(gg_ortho_session_run_resident(s, &grid, 0, 0, SH, b + (size_t)y0 * OW,
                                            GG_FLOAT32, OW, h, OW, &missed) == GG_OK,
              "%s: run_resident: %s", dev, gg_context_last_error(ctx));
        missed_any |= missed;
        /* rows 40..49 only: every block needs rows outside them */
        float *tmp = calloc((size_t)OW * h, 4);
        int m2 = 0;
        CHECK(gg_ortho_session_run_resident(s, &grid, 0, 40, 10, tmp, GG_FLOAT32, OW, h,
                                            OW, &m2) == GG_OK,
              "%s: run_resident (10 rows)", dev);
        missed_few += m2;
        free(tmp);
        free(g);
    }
    CHECK(!missed_any, "%s: resident source with every row reported a miss", dev);
    CHECK(missed_few == (OH + 23) / 24, "%s: %d of %d blocks with 10 rows reported a miss", dev,
          missed_few, (OH + 23) / 24);
    CHECK(memcmp(a, b, sizeof(float) * OW * OH) == 0,
          "%s: resident and windowed sources give different bytes", dev);
    int nonzero = 0;
    for (int i = 0; i < OW * OH; i++)
        nonzero += a[i] != 0;
    CHECK(nonzero > OW * OH / 3, "%s: resident comparison on an almost empty image", dev);
    /* queued: strips queued up the copy queue in shuffled order, blocks
     * queued two at a time (the second's kernel beside the first's
     * download): the same bytes; every fourth block given rows 40..49
     * only reports its miss at its wait */
    memset(b, 0, sizeof(float) * OW * OH);
    CHECK(gg_ortho_session_set_source(s, GG_FLOAT32, SW, SH, 1) == GG_OK,
          "%s: set_source again: %s", dev, gg_context_last_error(ctx));
    for (int i = 0; i < nstrips; i++) {
        const int y0 = order[nstrips - 1 - i] * 7, n = y0 + 7 <= SH ? 7 : SH - y0;
        CHECK(gg_ortho_session_put_rows_async(s, 0, y0, n, g_src + (size_t)y0 * SW, SW) == GG_OK,
              "%s: put_rows_async %d: %s", dev, y0, gg_context_last_error(ctx));
    }
    {
        /* jobs: every block with all rows; before every fourth, the same
         * block with rows 40..49 only (into a scratch block) */
        enum { BH = 16, NBLK = (OH + BH - 1) / BH };
        int job_k[2 * NBLK], job_few[2 * NBLK], njobs = 0;
        for (int k = 0; k < NBLK; k++) {
            if (k % 4 == 3) {
                job_k[njobs] = k;
                job_few[njobs++] = 1;
            }
            job_k[njobs] = k;
            job_few[njobs++] = 0;
        }
        double *grids[GG_ORTHO_QUEUED] = {0};
        float *few = calloc((size_t)OW * BH, 4);
        int queued[GG_ORTHO_QUEUED], nq = 0, head = 0, misses = 0, wrong = 0, ok = 1;
        for (int j = 0; j <= njobs && ok; j++) {
            /* the oldest completes when the queue is full, and all at the end */
            while (ok && nq > 0 && (nq == GG_ORTHO_QUEUED || j == njobs)) {
                int missed = -1;
                ok = gg_ortho_session_wait(s, &missed) == GG_OK;
                misses += missed == 1;
                wrong += missed != job_few[queued[head]];
                head = (head + 1) % GG_ORTHO_QUEUED;
                nq--;
            }
            if (j == njobs || !ok)
                break;
            const int y0 = job_k[j] * BH, h = y0 + BH <= OH ? BH : OH - y0;
            const int slot = (head + nq) % GG_ORTHO_QUEUED;
            int nx, ny;
            free(grids[slot]); /* its block has completed */
            grids[slot] = make_grid(y0, h, 8, &nx, &ny);
            gg_ortho_grid grid = {grids[slot], nx, ny, 8};
            ok = gg_ortho_session_queue_resident(
                     s, &grid, job_few[j] ? 40 : 0, job_few[j] ? 10 : SH,
                     job_few[j] ? few : b + (size_t)y0 * OW, GG_FLOAT32, OW, h, OW,
                     (size_t)OW * h) == GG_OK;
            queued[slot] = j;
            nq++;
        }
        CHECK(ok, "%s: queued blocks: %s", dev, gg_context_last_error(ctx));
        CHECK(wrong == 0 && misses == NBLK / 4, "%s: queued blocks: %d misses, %d wrong", dev,
              misses, wrong);
        for (int i = 0; i < GG_ORTHO_QUEUED; i++)
            free(grids[i]);
        free(few);
    }
    CHECK(memcmp(a, b, sizeof(float) * OW * OH) == 0,
          "%s: queued and windowed blocks give different bytes", dev);
    /* bad calls */
    {
        int nx, ny, missed = 0;
        double *g = make_grid(0, 8, 8, &nx, &ny);
        gg_ortho_grid grid = {g, nx, ny, 8};
        CHECK(gg_ortho_session_wait(s, &missed) == GG_ERR_ARGUMENT,
              "%s: wait with no block queued", dev);
        for (int i = 0; i < GG_ORTHO_QUEUED; i++)
            CHECK(gg_ortho_session_queue_resident(s, &grid, 0, SH, b, GG_FLOAT32, OW, 8, OW,
                                                  (size_t)OW * 8) == GG_OK,
                  "%s: queue %d", dev, i);
        CHECK(gg_ortho_session_queue_resident(s, &grid, 0, SH, b, GG_FLOAT32, OW, 8, OW,
                                              (size_t)OW * 8) == GG_ERR_ARGUMENT,
              "%s: more blocks queued than GG_ORTHO_QUEUED", dev);
        CHECK(gg_ortho_session_queue_resident(s, &grid, 0, SH + 1, b, GG_FLOAT32, OW, 8,
                                              OW, (size_t)OW * 8) == GG_ERR_ARGUMENT,
              "%s: queued rows past the source", dev);
        for (int i = 0; i < GG_ORTHO_QUEUED; i++)
            CHECK(gg_ortho_session_wait(s, &missed) == GG_OK && !missed, "%s: wait %d", dev, i);
        CHECK(gg_ortho_session_flush(s) == GG_OK, "%s: flush", dev);
        free(g);
    }
    CHECK(gg_ortho_session_put_rows(s, 1, 0, 1, g_src, SW) == GG_ERR_ARGUMENT,
          "%s: put_rows into a band that does not exist", dev);
    CHECK(gg_ortho_session_put_rows(s, 0, SH - 1, 2, g_src, SW) == GG_ERR_ARGUMENT,
          "%s: put_rows past the last row", dev);
    free(a);
    free(b);
    gg_ortho_session_destroy(s);
}

/* ---------------------------------------------------- launch occupancy */

/* Per compute capability: max threads, max blocks per SM, registers per SM
 * (CUDA C Programming Guide, "Technical Specifications per Compute
 * Capability"). */
static int sm_limits(int cc, int *threads, int *blocks, int *regs)
{
    *regs = 65536;
    switch (cc) {
    case 70: case 72: case 80: case 90: case 100: case 103: case 110:
        *threads = 2048;
        *blocks = 32;
        return 1;
    case 75:
        *threads = 1024;
        *blocks = 16;
        return 1;
    case 86: case 87: case 120: case 121:
        *threads = 1536;
        *blocks = 16;
        return 1;
    case 89:
        *threads = 1536;
        *blocks = 24;
        return 1;
    default:
        return 0;
    }
}

/* Theoretical occupancy of a block of bs threads for a kernel of `regs`
 * registers per thread and no shared memory: registers are allocated per
 * warp in units of 256, in 4 sub-partitions of the register file. */
static double theoretical_occupancy(int bs, int regs, int cc)
{
    int max_threads, max_blocks, regs_sm;
    if (!sm_limits(cc, &max_threads, &max_blocks, &regs_sm))
        return -1;
    const int warps = (bs + 31) / 32;
    const int regs_warp = (regs * 32 + 255) / 256 * 256;
    if (regs_warp * warps > regs_sm)
        return 0; /* the block cannot launch */
    const int warps_by_regs = regs_warp ? (regs_sm / 4 / regs_warp) * 4 : max_threads / 32;
    int blocks = max_blocks;
    blocks = blocks < max_threads / 32 / warps ? blocks : max_threads / 32 / warps;
    blocks = blocks < warps_by_regs / warps ? blocks : warps_by_regs / warps;
    return (double)blocks * warps * 32 / max_threads;
}

static void test_occupancy(gg_context *ctx, const char *dev)
{
    int bx = 0, by = 0;
    double occ = -1;
    const gg_status st = gg_ortho_launch_info(ctx, &bx, &by, &occ);
    CHECK(st == GG_OK, "%s: launch_info: %s", dev, gg_context_last_error(ctx));
    CHECK(bx >= 1 && by >= 1 && bx * by <= 1024, "%s: work group %d x %d", dev, bx, by);
    const char *backend = gg_context_backend(ctx);
    if (strcmp(backend, "cuda") != 0) {
        printf("  %s: work group %d x %d; the %s backend reports no occupancy (%.2f): "
               "maximum theoretical occupancy cannot be checked here\n",
               dev, bx, by, backend, occ);
        CHECK(occ == 0.0, "%s: %s backend reports an occupancy %.3f it cannot know", dev,
              backend, occ);
        return;
    }
    CHECK(occ > 0 && occ <= 1, "%s: occupancy %.3f", dev, occ);
    const char *re = getenv("GG_OCC_REGS"), *ce = getenv("GG_OCC_CC");
    if (!re || !ce || atoi(re) < 1) {
        printf("  %s: block %d x %d, occupancy %.3f; GG_OCC_REGS / GG_OCC_CC not set "
               "(tests/device/run_gpu_checks.sh sets them): maximum not verified\n",
               dev, bx, by, occ);
        return;
    }
    const int regs = atoi(re);
    /* "9.0" or "90" */
    const int cc = strchr(ce, '.') ? (int)lround(atof(ce) * 10) : atoi(ce);
    double best = 0;
    int best_bs = 0;
    for (int bs = 32; bs <= 1024; bs += 32) {
        const double o = theoretical_occupancy(bs, regs, cc);
        if (o > best + 1e-12) {
            best = o;
            best_bs = bs;
        }
    }
    const double mine = theoretical_occupancy(bx * by, regs, cc);
    CHECK(best > 0, "%s: compute capability %d not in the table", dev, cc);
    CHECK(fabs(mine - best) < 1e-9,
          "%s: block %d x %d reaches occupancy %.4f, the kernel's maximum is %.4f (block %d)",
          dev, bx, by, mine, best, best_bs);
    CHECK(fabs(occ - best) < 1e-9, "%s: the backend reports occupancy %.4f, the maximum is %.4f",
          dev, occ, best);
    printf("  %s: block %d x %d, %d registers, cc %d: occupancy %.4f = the maximum %.4f "
           "(first reached at %d threads)\n",
           dev, bx, by, regs, cc, mine, best, best_bs);
}

static void test_occupancy_formula(void)
{
    /* known cases of the CUDA occupancy calculator (sm_90, no shared
     * memory): 32 registers, 256 threads -> 100 %; 96 registers, 160
     * threads -> 4 blocks = 20 warps = 31.25 %; 64 registers, 1024 threads
     * -> 1 block = 50 %; 255 registers, 32 threads -> 8 warps = 12.5 % */
    CHECK(fabs(theoretical_occupancy(256, 32, 90) - 1.0) < 1e-12, "formula 32 regs");
    CHECK(fabs(theoretical_occupancy(160, 96, 90) - 0.3125) < 1e-12, "formula 96 regs");
    CHECK(fabs(theoretical_occupancy(1024, 64, 90) - 0.5) < 1e-12, "formula 64 regs");
    CHECK(fabs(theoretical_occupancy(32, 255, 90) - 0.125) < 1e-12, "formula 255 regs");
}

int main(void)
{
    make_inputs();
    test_rfm();
    test_occupancy_formula();
    char devs[MAXDEV][32];
    const int nd = test_devices(devs, MAXDEV);
    enum { NJOB = 15 };
    void *first[NJOB] = {0};
    for (int d = 0; d < nd; d++) {
        gg_context *ctx = NULL;
        char err[512];
        CHECK(gg_context_create(devs[d], &ctx, err, sizeof err) == GG_OK, "%s: %s", devs[d],
              err);
        if (!ctx)
            continue;
        printf("device %s: %s\n", devs[d], gg_context_device_name(ctx));
        void *mine[NJOB] = {0};
        test_against_reference(ctx, devs[d], mine, NJOB);
        /* devices agree with the first one */
        for (int t = 0; t < NJOB; t++) {
            if (d == 0) {
                first[t] = mine[t];
                continue;
            }
            if (!first[t] || !mine[t])
                continue;
            const int u16 = t == 3 || t == 8 || t == 12 || t == 13;
            double worst = 0;
            for (int i = 0; i < OW * OH; i++) {
                const double a = u16 ? ((unsigned short *)first[t])[i] : ((float *)first[t])[i];
                const double b = u16 ? ((unsigned short *)mine[t])[i] : ((float *)mine[t])[i];
                worst = fmax(worst, fabs(a - b));
            }
            CHECK(worst <= (u16 ? 1.0 : 1e-3), "%s vs %s, case %d: max |diff| %.3g", devs[0],
                  devs[d], t, worst);
            free(mine[t]);
        }
        test_resident(ctx, devs[d]);
        test_multiband(ctx, devs[d], d == 0);
        test_occupancy(ctx, devs[d]);
        gg_context_destroy(ctx);
    }
    for (int t = 0; t < NJOB; t++)
        free(first[t]);
    return check_summary("test_ortho");
}
