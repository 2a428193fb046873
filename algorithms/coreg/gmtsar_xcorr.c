/*
 * gmtsar_xcorr.c -- GMTSAR xcorr's algorithm (the `-mode gmtsar` of
 * gdal_xcorr) on the shared correlation steps of xcorr_engine.c, with the
 * PRM and raw int16 I/Q SLC reader.
 *
 * Per patch (GMTSAR do_freq_xcorr + highres_corr):
 *   1. npx x npy complex patches of master and aligned, the aligned one at
 *      (x + rshift, y + ashift + floor(y astretcha));
 *   2. range (rows) FFT-interpolated x ri, the middle npx samples kept;
 *   3. detection, the whole-patch mean removed from each;
 *   4. the aligned patch masked to its central 2 xsearch x 2 ysearch
 *      (template); un-normalised correlation against the master patch by
 *      FFT; integer peak of |c| over lags [-search, search);
 *   5. quality value: time-domain NCC x 100 at the integer peak;
 *   6. sub-pixel: 8 x 8 block of |c|^(1/4) at peak-4 .. peak+3 upsampled
 *      x interp (band-limited, whole 8 interp grid), argmax.
 * Output per patch: x xoff y yoff corr as GMTSAR writes freq_xcorr.dat.
 *
 * GMTSAR defects fixed here (docs/gdal_xcorr.md, "GMTSAR mode"):
 *   B1 sub-pixel block past the surface: samples outside count as 0 (no
 *      out-of-bounds or stale reads);
 *   B2 rows outside the file are invalid samples (never stale rows);
 *   B3 NaN: invalid samples, the patch reported with corr 0 when fewer
 *      than 90 % are valid (never an abort);
 *   B4 the NCC uses float amplitudes (not int-truncated);
 *   B5 corr 0 patches keep their integer offset (no +4 shift);
 *   B6 the kept interpolated samples are centred for any ri;
 *   B7 nothing is printed.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "xcorr_engine.h"
#include "../kernel_ids.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ PRM reader */

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
}

gg_status gg_xcorr_prm_read(const char *path, gg_xcorr_prm *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open PRM '%s': %s", path, strerror(errno));
        return GG_ERR_IO;
    }
    char line[2048];
    int have_w = 0, have_az = 0, npatch = 1, naz = 0, have_r = 0, have_a = 0;
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *key = line, *val = eq + 1;
        trim(key);
        while (*key == ' ' || *key == '\t')
            key++;
        while (*val == ' ' || *val == '\t')
            val++;
        trim(val);
        if (!strcmp(key, "SLC_file"))
            snprintf(out->slc_file, sizeof out->slc_file, "%s", val);
        else if (!strcmp(key, "num_rng_bins"))
            have_w = sscanf(val, "%d", &out->width) == 1;
        else if (!strcmp(key, "num_valid_az"))
            have_az = sscanf(val, "%d", &naz) == 1;
        else if (!strcmp(key, "num_patches"))
            sscanf(val, "%d", &npatch);
        else if (!strcmp(key, "PRF"))
            sscanf(val, "%lf", &out->prf);
        else if (!strcmp(key, "rshift"))
            have_r = sscanf(val, "%d", &out->rshift) == 1;
        else if (!strcmp(key, "ashift"))
            have_a = sscanf(val, "%d", &out->ashift) == 1;
    }
    fclose(f);
    out->height = naz * npatch;
    out->has_shift = have_r && have_a;
    if (!out->slc_file[0]) {
        snprintf(err, errlen, "PRM '%s' has no SLC_file", path);
        return GG_ERR_ARGUMENT;
    }
    if (!have_w || !have_az || out->width < 1 || out->height < 1) {
        snprintf(err, errlen, "PRM '%s' lacks num_rng_bins or num_valid_az", path);
        return GG_ERR_ARGUMENT;
    }
    /* SLC_file relative to the PRM's folder, as GMTSAR runs from there */
    if (out->slc_file[0] != '/') {
        const char *slash = strrchr(path, '/');
        FILE *t = fopen(out->slc_file, "rb");
        if (t)
            fclose(t);
        else if (slash) {
            char tmp[2 * sizeof out->slc_file];
            const int n = snprintf(tmp, sizeof tmp, "%.*s/%s", (int)(slash - path), path,
                                   out->slc_file);
            if (n > 0 && (size_t)n < sizeof out->slc_file) /* else keep the name: open fails */
                memcpy(out->slc_file, tmp, (size_t)n + 1);
        }
    }
    FILE *s = fopen(out->slc_file, "rb");
    if (!s) {
        snprintf(err, errlen, "cannot open SLC_file '%s' of '%s': %s", out->slc_file, path,
                 strerror(errno));
        return GG_ERR_IO;
    }
    fseeko(s, 0, SEEK_END);
    const long long size = (long long)ftello(s);
    fclose(s);
    const long long need = 4LL * out->width * out->height;
    if (size < need) {
        snprintf(err, errlen, "SLC_file '%s' is truncated: %lld bytes, %d x %d int16 I/Q needs %lld",
                 out->slc_file, size, out->width, out->height, need);
        return GG_ERR_IO;
    }
    return GG_OK;
}

/* Rows [y0, y0 + n) of an int16 I/Q file into CFloat32 (rows outside the
 * file: NaN, GMTSAR's stale rows fixed). */
static int read_rows(FILE *f, const gg_xcorr_prm *p, int y0, int n, float *dst, short *buf)
{
    for (int r = 0; r < n; r++) {
        float *row = dst + (size_t)r * p->width * 2;
        const int y = y0 + r;
        if (y < 0 || y >= p->height) {
            for (int i = 0; i < 2 * p->width; i++)
                row[i] = NAN;
            continue;
        }
        if (fseeko(f, (off_t)4 * p->width * y, SEEK_SET) != 0 ||
            fread(buf, 4, (size_t)p->width, f) != (size_t)p->width)
            return -1;
        for (int i = 0; i < 2 * p->width; i++)
            row[i] = buf[i];
    }
    return 0;
}

/* ------------------------------------------------------------ the run */

typedef struct {
    gg_buffer *pos, *ws, *ref, *sec, *big, *z, *x, *surf, *f, *g, *v, *tw;
} gm_bufs;

static void free_bufs(gg_context *ctx, gm_bufs *b)
{
    gg_buffer **all[] = {&b->pos, &b->ws, &b->ref, &b->sec, &b->big, &b->z, &b->x,
                         &b->surf, &b->f, &b->g, &b->v, &b->tw};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i])
            gg_buffer_free(ctx, *all[i]);
}

/* Range interpolation x ri of a batch of npx x npy patches in place
 * (through big), the middle npx samples kept. */
static gg_status range_interp(gg_context *ctx, gm_bufs *b, gg_buffer *img, int B, int npx,
                              int npy, int ri)
{
    gg_xc_params p = {0};
    p.nwin = B;
    p.bw = npx;
    p.bh = npy;
    p.ow = ri * npx;
    p.oh = npy;
    p.scale = 1.0f / npx;
    int n1 = npx, n2 = ri * npx;
    gg_status s = gg_fft(ctx, img, 1, &n1, B * npy, 0);
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_PAD, p.ow, p.oh * B, &p, img, b->big, NULL, NULL, NULL);
    if (s == GG_OK)
        s = gg_fft(ctx, b->big, 1, &n2, B * npy, 1);
    /* crop: zoom-extract from the start (0, (ri - 1) npx / 2) set in ws */
    p.sw = ri * npx;
    p.sh = npy;
    p.bw = npx;
    p.bh = npy;
    if (s == GG_OK)
        s = gg_xc_launch(ctx, GG_K_XC_ZEXTRACT, npx, npy * B, &p, b->big, b->ws, img, NULL, NULL);
    return s;
}

gg_status gg_xcorr_gmtsar(gg_context *ctx, const gg_xcorr_prm *m, const gg_xcorr_prm *a,
                          const gg_xcorr_gmtsar_options *o, gg_xcorr_gmtsar_row **rows_out,
                          int *nrows_out, gg_progress_fn progress, void *user)
{
    *rows_out = NULL;
    *nrows_out = 0;
    const int xs = o->xsearch, ys = o->ysearch, ri = o->range_interp < 1 ? 1 : o->range_interp;
    const int npx = 4 * xs, npy = 4 * ys, nxc = 2 * xs, nyc = 2 * ys;
    const int interp = o->interp < 1 ? 1 : o->interp;
    if (m->width != a->width || m->height != a->height)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "master %dx%d and aligned %dx%d differ in size",
                          m->width, m->height, a->width, a->height);
    if ((xs & (xs - 1)) || (ys & (ys - 1)) || xs < 4 || ys < 4)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "xsearch %d and ysearch %d must be powers of 2 >= 4",
                          xs, ys);
    const int rshift = o->noshift || !a->has_shift ? 0 : a->rshift;
    const int ashift = o->noshift || !a->has_shift ? 0 : a->ashift;
    const double astretch = m->prf > 0 && a->prf > 0 ? (a->prf - m->prf) / m->prf : 0.0;
    /* GMTSAR's patch grid (get_locations.c) */
    const int x_inc = (m->width - 2 * (xs + nxc)) / (o->nx + 3);
    const int y_inc = (m->height - 2 * (ys + nyc)) / (o->ny + 1);
    if (x_inc < 1 || y_inc < 1 || npx > m->width || npy > m->height)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT,
                          "search %dx%d (patch %dx%d) and %dx%d locations do not fit the %dx%d image",
                          xs, ys, npx, npy, o->nx, o->ny, m->width, m->height);
    FILE *fm = fopen(m->slc_file, "rb"), *fa = fopen(a->slc_file, "rb");
    if (!fm || !fa) {
        if (fm)
            fclose(fm);
        if (fa)
            fclose(fa);
        return gg_rt_fail(ctx, GG_ERR_IO, "cannot open the SLC files");
    }
    const int B = o->nx; /* one row of locations per batch: its rows are read once */
    gg_xcorr_gmtsar_row *rows = calloc((size_t)o->nx * o->ny, sizeof *rows);
    gm_bufs b = {0};
    const int pw = gg_xc_fast_size(npx), ph = gg_xc_fast_size(npy);
    const int lx = npx - nxc + 1, ly = npy - nyc + 1, zw = 8, nreg = zw * interp;
    const size_t F = sizeof(float);
    gg_status s = rows ? GG_OK : GG_ERR_NOMEM;
    struct {
        gg_buffer **p;
        size_t bytes;
    } req[] = {{&b.pos, (size_t)B * 4 * sizeof(int)},
               {&b.ws, (size_t)B * GG_XC_WS * F},
               {&b.ref, (size_t)B * npx * npy * 2 * F},
               {&b.sec, (size_t)B * npx * npy * 2 * F},
               {&b.big, (size_t)B * ri * npx * npy * 2 * F},
               {&b.z, (size_t)B * pw * ph * 2 * F},
               {&b.x, (size_t)B * pw * ph * 2 * F},
               {&b.surf, (size_t)B * lx * ly * F},
               {&b.f, (size_t)B * zw * zw * 2 * F},
               {&b.g, (size_t)B * zw * nreg * 2 * F},
               {&b.v, (size_t)B * nreg * nreg * F}};
    for (size_t i = 0; i < sizeof req / sizeof req[0] && s == GG_OK; i++)
        s = gg_buffer_alloc(ctx, req[i].bytes, req[i].p);
    if (s == GG_OK)
        s = gg_xc_twiddles(ctx, zw, interp, &b.tw);
    /* host: one strip of rows per location row, both files, full width */
    const int W = m->width;
    float *tile = NULL, *ws = calloc((size_t)B * GG_XC_WS, F);
    short *rowbuf = malloc((size_t)W * 4);
    int *pos = malloc(sizeof(int) * 4 * (size_t)B);
    if (!ws || !rowbuf || !pos)
        s = GG_ERR_NOMEM;
    for (int j = 1; s == GG_OK && j <= o->ny; j++) {
        const int y = npy + j * y_inc; /* patch centre line (master) */
        const int ya = y + ashift + (int)floor(y * astretch);
        const int r0m = y - npy / 2, r0a = ya - npy / 2;
        const int y0 = r0m < r0a ? r0m : r0a, y1 = (r0m > r0a ? r0m : r0a) + npy;
        const int th = y1 - y0;
        float *t = realloc(tile, (size_t)W * th * 2 * 2 * F);
        if (!t) {
            s = GG_ERR_NOMEM;
            break;
        }
        tile = t;
        if (read_rows(fm, m, y0, th, tile, rowbuf) || read_rows(fa, a, y0, th, tile + (size_t)W * th * 2, rowbuf)) {
            s = gg_rt_fail(ctx, GG_ERR_IO, "cannot read lines %d..%d of the SLC files", y0, y1 - 1);
            break;
        }
        for (int i = 0; i < B; i++) {
            const int x = npx + (i + 2) * x_inc;
            pos[4 * i] = x + rshift - npx / 2;     /* aligned patch (template source) */
            pos[4 * i + 1] = r0a - y0;
            pos[4 * i + 2] = x - npx / 2;          /* master patch (search) */
            pos[4 * i + 3] = r0m - y0;
        }
        gg_buffer *dtile;
        s = gg_rt_scratch(ctx, 0, (size_t)W * th * 2 * 2 * F, &dtile);
        if (s == GG_OK)
            s = gg_buffer_write(ctx, dtile, 0, tile, (size_t)W * th * 2 * 2 * F);
        if (s == GG_OK)
            s = gg_buffer_write(ctx, b.pos, 0, pos, sizeof(int) * 4 * (size_t)B);
        gg_xc_params p = {0};
        p.nwin = B;
        p.tile_w = W;
        p.tile_h = th;
        p.ref_plane = 1;
        p.rw = p.sw = npx;
        p.rh = p.sh = npy;
        p.has_nodata = 0;
        p.min_valid = 0.9f;
        p.power = 1.0f;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_EXTRACT, npx, npy * B, &p, dtile, b.pos, b.ref, b.sec, NULL);
        /* validity first (invalid samples are NaN until here), then NaN ->
         * 0 (deramp with zero steps) so the range FFTs stay finite */
        memset(ws, 0, sizeof(float) * GG_XC_WS * (size_t)B);
        for (int w = 0; w < B; w++)
            ws[(size_t)w * GG_XC_WS + GG_XC_STX] = (float)((ri - 1) * npx / 2);
        if (s == GG_OK)
            s = gg_buffer_write(ctx, b.ws, 0, ws, sizeof(float) * GG_XC_WS * (size_t)B);
        p.stage = 0;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_STATS, B, 1, &p, b.ref, b.sec, b.ws, NULL, NULL);
        p.bw = npx;
        p.bh = npy;
        p.slot = GG_XC_RAMP;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_DERAMP, npx, npy * B, &p, b.ws, b.ref, NULL, NULL, NULL);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_DERAMP, npx, npy * B, &p, b.ws, b.sec, NULL, NULL, NULL);
        if (s == GG_OK && ri > 1)
            s = range_interp(ctx, &b, b.ref, B, npx, npy, ri);
        if (s == GG_OK && ri > 1)
            s = range_interp(ctx, &b, b.sec, B, npx, npy, ri);
        /* whole-patch means of the interpolated patches; template = the
         * central nxc x nyc of the aligned one */
        p.stage = 1;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_STATS, B, 1, &p, b.ref, b.sec, b.ws, NULL, NULL);
        p.tw = nxc;
        p.th = nyc;
        p.tox = xs;
        p.toy = ys;
        p.pw = pw;
        p.ph = ph;
        p.lx = lx;
        p.ly = ly;
        p.ux = nxc;
        p.uy = nyc;
        p.normalise = 0;
        const int n2[2] = {ph, pw};
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_PACK, pw, ph * B, &p, b.ref, b.sec, b.ws, b.z, NULL);
        if (s == GG_OK)
            s = gg_fft(ctx, b.z, 2, n2, B, 0);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_XSPEC, pw, ph * B, &p, b.z, b.x, NULL, NULL, NULL);
        if (s == GG_OK)
            s = gg_fft(ctx, b.x, 2, n2, B, 1);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_NORM, lx, ly * B, &p, b.x, b.x, b.x, b.ws, b.surf);
        p.stage = 2;
        p.use_abs = 1;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_PEAK, B, 1, &p, b.surf, b.ws, NULL, NULL, NULL);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_TCORR, B, 1, &p, b.ref, b.sec, b.ws, NULL, NULL);
        p.stage = 1;
        p.zw = zw;
        p.ovs = interp;
        p.nreg = nreg;
        p.power = 0.25f;
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_DFT, zw, zw * B, &p, b.surf, b.tw, b.ws, b.f, NULL);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_ZEVAL1, nreg, zw * B, &p, b.f, b.tw, b.ws, b.g, NULL);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_ZEVAL2, nreg, nreg * B, &p, b.g, b.tw, b.ws, b.v, NULL);
        if (s == GG_OK)
            s = gg_xc_launch(ctx, GG_K_XC_FINAL, B, 1, &p, b.v, b.ws, b.f, NULL, NULL);
        if (s == GG_OK)
            s = gg_buffer_read(ctx, b.ws, 0, ws, sizeof(float) * GG_XC_WS * (size_t)B);
        for (int i = 0; s == GG_OK && i < B; i++) {
            const float *q = ws + (size_t)i * GG_XC_WS;
            gg_xcorr_gmtsar_row *r = &rows[(size_t)(j - 1) * B + i];
            const int valid = q[GG_XC_VALID] > 0.5f;
            /* lags: master = aligned + (lag - search): offset = -(lag - search) */
            const double ly_ = valid ? q[GG_XC_OUT_Y] : ys, lx_ = valid ? q[GG_XC_OUT_X] : xs;
            r->x = npx + (i + 2) * x_inc;
            r->y = y;
            r->xoff = -(lx_ - xs) / ri + rshift;
            r->yoff = -(ly_ - ys) + ashift + floor(y * astretch);
            r->corr = valid ? q[GG_XC_NCC] : 0.0;
        }
        if (s == GG_OK && progress && !progress((double)j / o->ny, "", user))
            s = gg_rt_fail(ctx, GG_ERR_CANCELLED, "cancelled");
    }
    fclose(fm);
    fclose(fa);
    free(tile);
    free(ws);
    free(rowbuf);
    free(pos);
    free_bufs(ctx, &b);
    if (s != GG_OK) {
        if (s == GG_ERR_NOMEM)
            gg_rt_fail(ctx, s, "out of memory");
        free(rows);
        return s;
    }
    *rows_out = rows;
    *nrows_out = o->nx * o->ny;
    return GG_OK;
}

void gg_xcorr_free(void *p) { free(p); }
