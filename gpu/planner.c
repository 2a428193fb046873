/*
 * planner.c -- block planning from free device memory (the
 * orthorectification paper's automatic blocking, for any algorithm): each
 * algorithm states its device bytes per output pixel and its halo; the
 * planner picks the largest block of full-width rows that fits a safety
 * fraction of free memory.  Nobody hand-tunes block sizes.
 */
#include "runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Share of free memory a block may use: leaves room for FFT workspaces,
 * other processes and fragmentation. */
#define GG_PLAN_FRACTION 0.5

/* On the CPU backend the "device" buffers are host memory, and a larger
 * pass buys nothing (no transfers to amortise; OpenMP splits any size):
 * passes stay within this, or within 64 rows plus the halos when a row is
 * larger.  Without it a 60-band PtSel strip planned against half the free
 * RAM took 4.3 GB of RSS for the speed of 1 GB. */
#define GG_PLAN_HOST_CAP (256.0 * 1024 * 1024)

gg_status gg_plan_rows(gg_context *ctx, int width, int height, double bytes_per_px,
                       int halo_rows, int *rows_out)
{
    if (!ctx || !rows_out || width < 1 || height < 1 || !(bytes_per_px > 0) || halo_rows < 0)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "block planner: bad arguments");
    size_t free_b = 0;
    gg_status s = gg_context_memory(ctx, &free_b, NULL);
    if (s != GG_OK)
        return s;
    double budget = GG_PLAN_FRACTION * (double)free_b;
    const double per_row = bytes_per_px * (double)width;
    if (!strcmp(gg_context_backend(ctx), "cpu")) {
        const double cap = per_row * (64.0 + 2.0 * halo_rows);
        budget = fmin(budget, cap > GG_PLAN_HOST_CAP ? cap : GG_PLAN_HOST_CAP);
    }
    double rows = budget / per_row - 2.0 * halo_rows;
    if (rows < 1.0)
        return gg_rt_fail(ctx, GG_ERR_NOMEM,
                          "not even one row of %d pixels fits in %.1f MiB of device memory "
                          "(%.0f bytes per pixel, halo %d rows)",
                          width, budget / 1048576.0, bytes_per_px, halo_rows);
    *rows_out = rows >= (double)height ? height : (int)rows;
    return GG_OK;
}
