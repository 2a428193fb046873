/*
 * gmtsar_xcorr.h -- internal entry of the GMTSAR-mode offsets
 * (gmtsar_xcorr.c), not part of the public API.
 *
 * MIT licence.
 */
#ifndef GG_GMTSAR_XCORR_H
#define GG_GMTSAR_XCORR_H

#include "geogpu.h"

/* gg_xcorr_gmtsar_prefetched with the location rows per chunk given:
 * chunk_rows > 0 takes that many (at most the rows there are), 0 lets the
 * planner choose from free memory as the public calls do.  For the tests
 * of the multi-chunk path (line rings that wrap). */
gg_status gg_xcorr_gmtsar_chunked(gg_context *ctx, const gg_xcorr_prm *master,
                                  const gg_xcorr_prm *aligned,
                                  const gg_xcorr_gmtsar_options *options,
                                  gg_xcorr_prefetch *prefetch, int chunk_rows,
                                  gg_xcorr_gmtsar_row **rows_out, int *nrows_out,
                                  gg_progress_fn progress, void *user, gg_xcorr_timing *timing);

#endif
