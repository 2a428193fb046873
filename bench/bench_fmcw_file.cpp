/*
 * bench_fmcw_file.cpp -- the FMCW NetCDF file path (docs/fmcw_format.md):
 * how fast sectors come off the file, and through the chain.
 *
 *   bench_fmcw_file [-batch B] [-reps R] [-device D] file.nc
 *
 *   - read alone: FMCWFileRead of every sector in batches of B (the
 *     reader of the FMCW driver and gdal_fmcw), R passes: MB/s and
 *     sectors/s (run it twice, or `cat file > /dev/null` first, for the
 *     page-cache figure);
 *   - with -device: read + process as the driver does, into the
 *     processor's page-locked input, over two streams (gg_fmcw_add_stream,
 *     submit/collect: the file read and upload of batch k+1 overlap the
 *     processing of batch k), every product; sectors/s end to end (no
 *     output written) and the time spent reading.
 *
 * MIT licence.
 */
#include "fmcw_file.h"

#include "gdal_priv.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char **argv)
{
    int batch = 16, reps = 3;
    const char *device = nullptr, *file = nullptr;
    for (int i = 1; i < argc; i++)
    {
        if (!strcmp(argv[i], "-batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-device") && i + 1 < argc)
            device = argv[++i];
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else
        {
            fprintf(stderr, "usage: bench_fmcw_file [-batch B] [-reps R] [-device D] file.nc\n");
            return 2;
        }
    }
    if (!file || batch < 1 || reps < 1)
    {
        fprintf(stderr, "usage: bench_fmcw_file [-batch B] [-reps R] [-device D] file.nc\n");
        return 2;
    }
    GDALAllRegister();
    FMCWFile *f = FMCWFileOpen(file);
    if (!f)
    {
        fprintf(stderr, "%s\n", CPLGetLastErrorMsg());
        return 1;
    }
    const gg_fmcw_params *p = FMCWFileParams(f);
    const int S = FMCWFileSectorCount(f);
    const size_t sv = gg_fmcw_sector_values(p);
    const double mb = sv * 2.0 / 1e6;
    batch = std::min(batch, S);
    printf("%s: %d sectors of 3 x %d sweeps x %d samples int16 I/Q (%.2f MB each, %.0f MB), batch %d\n", file, S,
           p->n_sweeps, p->n_samples, mb, S * mb, batch);
    std::vector<int16_t> buf(sv * (size_t)batch);
    for (int r = 0; r < reps; r++)
    {
        const double t0 = now_s();
        for (int k = 0; k < S; k += batch)
            if (FMCWFileRead(f, k, std::min(batch, S - k), buf.data()) != CE_None)
            {
                fprintf(stderr, "%s\n", CPLGetLastErrorMsg());
                return 1;
            }
        const double dt = now_s() - t0;
        printf("read alone, pass %d: %.3f s: %.0f MB/s, %.1f sectors/s\n", r + 1, dt, S * mb / dt, S / dt);
    }
    if (device)
    {
        gg_context *c1 = nullptr, *c2 = nullptr;
        gg_fmcw *proc = nullptr;
        char err[512];
        if (gg_context_create(device, &c1, err, sizeof err) != GG_OK ||
            gg_fmcw_create(c1, p, nullptr, 0, batch, &proc) != GG_OK)
        {
            fprintf(stderr, "%s\n", c1 ? gg_context_last_error(c1) : err);
            return 1;
        }
        if (gg_context_sibling(c1, &c2) != GG_OK || gg_fmcw_add_stream(proc, c2) != GG_OK)
            printf("no second stream: %s\n", c2 ? gg_fmcw_last_error(proc) : gg_context_last_error(c1));
        int16_t *in = gg_fmcw_host_input(proc);
        if (!in)
            in = buf.data();
        std::vector<float> out(sizeof(float) * GG_FMCW_NPRODUCTS * p->n_gates * (size_t)batch);
        const int nb = (S + batch - 1) / batch, streams = gg_fmcw_streams(proc);
        for (int r = 0; r < reps + 1; r++)   // pass 0 warms plans and kernels up
        {
            double tread = 0;
            const double t0 = now_s();
            int submitted = 0, n = 0;
            for (int collected = 0; collected < nb; collected++)
            {
                while (submitted < nb && submitted - collected < streams)
                {
                    const int first = submitted * batch;
                    const double tr = now_s();
                    if (FMCWFileRead(f, first, std::min(batch, S - first), in) != CE_None)
                        return fprintf(stderr, "%s\n", CPLGetLastErrorMsg()), 1;
                    tread += now_s() - tr;
                    if (gg_fmcw_submit(proc, in, std::min(batch, S - first)) != GG_OK)
                        return fprintf(stderr, "%s\n", gg_fmcw_last_error(proc)), 1;
                    submitted++;
                }
                if (gg_fmcw_collect(proc, out.data(), nullptr, &n) != GG_OK)
                    return fprintf(stderr, "%s\n", gg_fmcw_last_error(proc)), 1;
            }
            const double dt = now_s() - t0;
            if (r > 0)
                printf("read + process on %s (%d stream%s), pass %d: %.3f s: %.1f sectors/s, %.0f MB/s; reading %.3f "
                       "s of it\n",
                       gg_context_device_name(c1), streams, streams > 1 ? "s" : "", r, dt, S / dt, S * mb / dt,
                       tread);
        }
        gg_fmcw_destroy(proc);
        gg_context_destroy(c1); /* and its sibling c2 */
    }
    FMCWFileClose(f);
    return 0;
}
