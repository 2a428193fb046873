/*
 * planner.c -- block planning from free device memory (the
 * orthorectification paper's automatic blocking, for any algorithm): each
 * algorithm states its device bytes per output pixel and its halo; the
 * planner picks the largest block of full-width rows that fits a safety
 * fraction of free memory.  Nobody hand-tunes block sizes.
 */
#include "runtime.h"

#include <stdlib.h>

/* Share of free memory a block may use: leaves room for FFT workspaces,
 * other processes and fragmentation. */
#define GG_PLAN_FRACTION 0.5

gg_status gg_plan_rows(gg_context *ctx, int width, int height, double bytes_per_px,
                       int halo_rows, int *rows_out)
{
    if (!ctx || !rows_out || width < 1 || height < 1 || bytes_per_px <= 0 || halo_rows < 0)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "block planner: bad arguments");
    size_t free_b = 0;
    gg_status s = gg_context_memory(ctx, &free_b, NULL);
    if (s != GG_OK)
        return s;
    const double budget = GG_PLAN_FRACTION * (double)free_b;
    const double per_row = bytes_per_px * (double)width;
    double rows = budget / per_row - 2.0 * halo_rows;
    if (rows < 1.0)
        return gg_rt_fail(ctx, GG_ERR_NOMEM,
                          "not even one row of %d pixels fits in %.1f MiB of device memory "
                          "(%.0f bytes per pixel, halo %d rows)",
                          width, budget / 1048576.0, bytes_per_px, halo_rows);
    *rows_out = rows >= (double)height ? height : (int)rows;
    return GG_OK;
}
