/*
 * bench_xcorr.c -- GMTSAR-mode offsets on the standard job (no GDAL):
 * two synthetic CInt16 SLCs (default 11304 x 9216, ALOS-1 size; the
 * secondary is the primary shifted by (3, -2) px plus noise) written as
 * GMTSAR PRM + raw int16 I/Q files, then gg_xcorr_gmtsar with 20 x 50
 * patches, xsearch = ysearch = 128, range interpolation 2, timed end to
 * end (read from page cache, offsets, result) after one warm-up run, and
 * the quality-mode op on a 4096 x 4096 crop (64x64 windows, search 20,
 * skip 32).  Peak RSS reported.
 *
 * Then the time split of the GMTSAR run (reading, uploads, kernels; once
 * overlapped, once with a device sync after each chunk) and the floors:
 * bytes read over host copy bandwidth, over host-to-device bandwidth, and
 * the estimated device traffic over the device memory bandwidth (-hbm).
 *
 *   bench_xcorr [-device cpu|cuda|opencl] [-size W H] [-dir /tmp] [-runs N]
 *               [-hbm GB/s] [-noquality] [-patches NX NY SEARCH] [-keep] [-genonly]
 *
 * -keep leaves the PRM and SLC files in -dir (gg_bench_{master,aligned}.
 * {PRM,SLC}) for bench_xcorr_process.sh, which times the whole
 * gdal_xcorr -mode gmtsar process on them; -genonly writes them and stops.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu.h"
#include "coreg/gmtsar_xcorr.h" /* internal: gg_xcorr_gmtsar_timed */

#include <math.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* A crash prints its stack (addresses resolve with addr2line on the
 * RelWithDebInfo build): the device machine has no debugger. */
static void on_fatal(int sig)
{
    void *f[64];
    const int n = backtrace(f, 64);
    backtrace_symbols_fd(f, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    const char *dev = "auto", *dir = "/tmp";
    int W = 11304, H = 9216, runs = 3, skip_quality = 0, keep = 0, genonly = 0;
    int pnx = 20, pny = 50, psearch = 128;
    double hbm = 3350, bytes_read = 0; /* device memory GB/s for the floor (H100 SXM; H200 4800) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-device") && i + 1 < argc)
            dev = argv[++i];
        else if (!strcmp(argv[i], "-size") && i + 2 < argc) {
            W = atoi(argv[++i]);
            H = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "-runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-hbm") && i + 1 < argc)
            hbm = atof(argv[++i]);
        else if (!strcmp(argv[i], "-patches") && i + 3 < argc) { /* smoke runs */
            pnx = atoi(argv[++i]);
            pny = atoi(argv[++i]);
            psearch = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-noquality"))
            skip_quality = 1;
        else if (!strcmp(argv[i], "-keep"))
            keep = 1;
        else if (!strcmp(argv[i], "-genonly")) /* write the files, time nothing */
            keep = genonly = 1;
    }
    char p1[512], p2[512], s1[512], s2[512];
    snprintf(s1, sizeof s1, "%s/gg_bench_master.SLC", dir);
    snprintf(s2, sizeof s2, "%s/gg_bench_aligned.SLC", dir);
    snprintf(p1, sizeof p1, "%s/gg_bench_master.PRM", dir);
    snprintf(p2, sizeof p2, "%s/gg_bench_aligned.PRM", dir);
    /* speckle-like amplitude texture, smoothed along range by a 3-tap sum */
    short *a = malloc((size_t)W * H * 4), *b = malloc((size_t)W * H * 4);
    for (size_t i = 0; i < (size_t)W * H * 2; i++)
        a[i] = (short)(2000 * (urand() + urand() + urand() - 1.5));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int sx = (x - 3 + W) % W, sy = (y + 2) % H;
            for (int k = 0; k < 2; k++)
                b[((size_t)y * W + x) * 2 + k] =
                    (short)(0.8 * a[((size_t)sy * W + sx) * 2 + k] + 600 * (urand() - 0.5));
        }
    FILE *f = fopen(s1, "wb");
    fwrite(a, 4, (size_t)W * H, f);
    fclose(f);
    f = fopen(s2, "wb");
    fwrite(b, 4, (size_t)W * H, f);
    fclose(f);
    for (int k = 0; k < 2; k++) {
        f = fopen(k ? p2 : p1, "w");
        fprintf(f, "SLC_file = %s\nnum_rng_bins = %d\nnum_valid_az = %d\nnum_patches = 1\nPRF = 1000\n"
                   "rshift = 0\nashift = 0\n", k ? s2 : s1, W, H);
        fclose(f);
    }
    if (genonly) {
        printf("kept %s %s %s %s\n", p1, p2, s1, s2);
        return 0;
    }
    gg_context *ctx;
    char err[512];
    if (gg_context_create(dev, &ctx, err, sizeof err) != GG_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("device: %s\n", gg_context_device_name(ctx));
    gg_xcorr_prm m, al;
    if (gg_xcorr_prm_read(p1, &m, err, sizeof err) || gg_xcorr_prm_read(p2, &al, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    gg_xcorr_gmtsar_options o = {pnx, pny, psearch, psearch, 2, 16, 0};
    double best = 1e9;
    for (int r = 0; r <= runs; r++) {
        gg_xcorr_gmtsar_row *rows;
        int n;
        const double t0 = now();
        if (gg_xcorr_gmtsar(ctx, &m, &al, &o, &rows, &n, NULL, NULL) != GG_OK) {
            fprintf(stderr, "gmtsar: %s\n", gg_context_last_error(ctx));
            return 1;
        }
        const double t = now() - t0;
        if (r > 0 && t < best)
            best = t;
        double mx = 0, my = 0, mc = 0;
        for (int i = 0; i < n; i++) {
            mx += rows[i].xoff;
            my += rows[i].yoff;
            mc += rows[i].corr;
        }
        printf("gmtsar run %d%s: %.3f s, %d patches, mean xoff %.3f yoff %.3f corr %.1f\n", r,
               r ? "" : " (warm-up)", t, n, mx / n, my / n, mc / n);
        gg_xcorr_free(rows);
    }
    printf("gmtsar job %dx%d, %dx%d patches, search %d, ri 2: best %.3f s\n", W, H, pnx, pny,
           psearch, best);
    /* where the time goes: one overlapped run and one with a device sync
     * after each chunk (kernel time alone), then the floors */
    for (int sync = 0; sync < 2; sync++) {
        gg_xcorr_timing tm = {.sync = sync};
        gg_xcorr_gmtsar_row *rows;
        int n;
        if (gg_xcorr_gmtsar_timed(ctx, &m, &al, &o, &rows, &n, NULL, NULL, &tm) != GG_OK) {
            fprintf(stderr, "gmtsar: %s\n", gg_context_last_error(ctx));
            return 1;
        }
        gg_xcorr_free(rows);
        printf("gmtsar split (%s): total %.3f s = read wait %.3f + upload %.3f + kernels/wait %.3f "
               "(+ host %.3f); reader threads busy %.3f s for %.0f MB; %d chunks x %d patches, "
               "rings of %d lines\n", sync ? "sync after each chunk" : "overlapped", tm.total_s,
               tm.read_wait_s, tm.upload_s, tm.kernel_s,
               tm.total_s - tm.read_wait_s - tm.upload_s - tm.kernel_s, tm.read_busy_s,
               tm.bytes_read / 1e6, tm.chunks, tm.patches_per_chunk, tm.ring_lines);
        if (sync)
            bytes_read = tm.bytes_read;
    }
    {
        /* floors: host copy bandwidth (page cache reads are copies),
         * host-to-device bandwidth through the library, device traffic */
        const size_t nb = (size_t)256 << 20;
        unsigned char *h1 = malloc(nb), *h2 = malloc(nb);
        memset(h1, 1, nb);
        memset(h2, 2, nb);
        double tc = 1e9, tu = 1e9;
        for (int r = 0; r < 3; r++) {
            double t0 = now();
            memcpy(h2, h1, nb);
            tc = fmin(tc, now() - t0);
        }
        gg_buffer *db;
        if (gg_buffer_alloc(ctx, nb, &db) == GG_OK) {
            for (int r = 0; r < 3; r++) {
                double t0 = now();
                gg_buffer_write(ctx, db, 0, h1, nb);
                tu = fmin(tu, now() - t0);
            }
            gg_buffer_free(ctx, db);
        }
        free(h1);
        free(h2);
        const double np = 16.0 * psearch * psearch, patches = (double)pnx * pny; /* npx npy = pw ph */
        const double dev_bytes = patches * np * (56 + 80 + 48 * 2 + 88); /* see RESULTS.md */
        printf("floors: %.0f MB read at one-thread memcpy %.1f GB/s = %.3f s; uploaded at %.1f GB/s "
               "(gg_buffer_write, pageable) = %.3f s; device traffic ~%.0f GB at %.0f GB/s = %.3f s\n",
               bytes_read / 1e6, nb / tc / 1e9, bytes_read / (nb / tc), nb / tu / 1e9,
               bytes_read / (nb / tu), dev_bytes / 1e9, hbm, dev_bytes / (hbm * 1e9));
    }

    /* quality mode on a crop */
    if (skip_quality)
        goto done;
    const int QW = W < 4096 ? W : 4096, QH = H < 4096 ? H : 4096;
    float *q1 = malloc((size_t)QW * QH * 8), *q2 = malloc((size_t)QW * QH * 8);
    for (int y = 0; y < QH; y++)
        for (int x = 0; x < 2 * QW; x++) {
            q1[(size_t)y * 2 * QW + x] = a[(size_t)y * 2 * W + x];
            q2[(size_t)y * 2 * QW + x] = b[(size_t)y * 2 * W + x];
        }
    gg_op *op;
    gg_op_new("xcorr", &op, err, sizeof err);
    gg_op_set(op, "window", "64x64");
    gg_op_set(op, "search", "20x20");
    gg_op_set(op, "skip", "32x32");
    gg_raster_info in = {.width = QW, .height = QH, .bands = 2, .type = GG_CFLOAT32}, out;
    if (gg_op_prepare(op, &in, &out) != GG_OK) {
        fprintf(stderr, "%s\n", gg_op_last_error(op));
        return 1;
    }
    gg_tile src[2] = {{q1, GG_CFLOAT32, QW, QH, (size_t)QW, 0, 0}, {q2, GG_CFLOAT32, QW, QH, (size_t)QW, 0, 0}};
    gg_tile dst[7];
    for (int i = 0; i < 7; i++)
        dst[i] = (gg_tile){malloc((size_t)out.width * out.height * 4), GG_FLOAT32, out.width,
                           out.height, (size_t)out.width, 0, 0};
    best = 1e9;
    for (int r = 0; r <= runs; r++) {
        const double t0 = now();
        if (gg_op_run_stack(ctx, op, src, 2, dst, 7) != GG_OK) {
            fprintf(stderr, "quality: %s\n", gg_op_last_error(op));
            return 1;
        }
        const double t = now() - t0;
        if (r > 0 && t < best)
            best = t;
    }
    double sx = 0, sy = 0;
    for (int i = 0; i < out.width * out.height; i++) {
        sy += ((float *)dst[0].data)[i];
        sx += ((float *)dst[1].data)[i];
    }
    printf("quality %dx%d crop: %d windows (64x64, search 20, zoom 16, ovs 64): best %.3f s "
           "(%.1f us/window), mean offset %.3f %.3f\n", QW, QH, out.width * out.height, best,
           1e6 * best / (out.width * out.height), sy / (out.width * out.height),
           sx / (out.width * out.height));
    gg_op_free(op);
done:;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak RSS %.0f MiB (the two int16 images alone: %.0f MiB)\n", ru.ru_maxrss / 1024.0,
           (double)W * H * 8 / 1048576);
    gg_context_destroy(ctx);
    if (keep) {
        printf("kept %s %s %s %s\n", p1, p2, s1, s2);
        return 0;
    }
    remove(s1);
    remove(s2);
    remove(p1);
    remove(p2);
    return 0;
}
