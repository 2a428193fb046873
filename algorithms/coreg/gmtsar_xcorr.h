/*
 * gmtsar_xcorr.h -- internal entries of the GMTSAR-mode offsets
 * (gmtsar_xcorr.c), not part of the public API: the timed run of
 * bench_xcorr and the forced chunking of the tests (both reached through
 * the internal static library geogpu_internal), and the run with the
 * switches of gdal_xcorr -mode gmtsar (exported for the GDAL layer).
 *
 * MIT licence.
 */
#ifndef GG_GMTSAR_XCORR_H
#define GG_GMTSAR_XCORR_H

#include "geogpu.h"

/* Where the time of a gg_xcorr_gmtsar_timed run went (bench_xcorr). */
typedef struct gg_xcorr_timing {
    int sync;              /* in: 1 waits for the device after each chunk (exact kernel
                            * time, no overlap of reading/uploading with the kernels) */
    int chunks, patches_per_chunk, ring_lines;  /* out: the plan */
    double read_busy_s;    /* out: seconds the reader threads spent reading (summed) */
    double read_wait_s;    /* out: seconds the device thread waited for read lines (its time
                            * outside uploads and launches while the pieces were read) */
    double upload_s;       /* out: host-to-device copies (lines, positions, state) */
    double kernel_s;       /* out: launches + waiting for results (all kernel time when sync) */
    double total_s;        /* out: the whole call */
    double bytes_read;     /* out: bytes read from the SLC files (each line once) */
} gg_xcorr_timing;

/* gg_xcorr_gmtsar with its time measured (timing NULL: gg_xcorr_gmtsar). */
gg_status gg_xcorr_gmtsar_timed(gg_context *ctx, const gg_xcorr_prm *master,
                                const gg_xcorr_prm *aligned, const gg_xcorr_gmtsar_options *opt,
                                gg_xcorr_gmtsar_row **rows, int *nrows, gg_progress_fn progress,
                                void *user, gg_xcorr_timing *timing);

/* gg_xcorr_gmtsar_timed with the chunk size given: chunk_rows > 0 takes
 * that many location rows per chunk (at most the rows there are),
 * chunk_rows < 0 takes -chunk_rows patches per chunk (parts of a location
 * row, as the CPU backend's planner may choose), 0 lets the planner choose
 * from free memory as the public call does.  For the tests of the
 * multi-chunk path (line rings that wrap). */
gg_status gg_xcorr_gmtsar_chunked(gg_context *ctx, const gg_xcorr_prm *master,
                                  const gg_xcorr_prm *aligned,
                                  const gg_xcorr_gmtsar_options *options, int chunk_rows,
                                  gg_xcorr_gmtsar_row **rows_out, int *nrows_out,
                                  gg_progress_fn progress, void *user, gg_xcorr_timing *timing);

/* Switches of the GMTSAR mode beyond the public gg_xcorr_gmtsar_options
 * (gdal_xcorr -mode gmtsar's flags); all 0: the defaults. */
typedef struct gg_xcorr_gmtsar_switches {
    int zero_is_data;      /* -zero_is_data: 0+0i samples are data, as in GMTSAR; 0 (default):
                            * they are invalid samples (zero fill) in the valid-fraction rule */
} gg_xcorr_gmtsar_switches;

/* gg_xcorr_gmtsar_chunked with switches (NULL: all 0).  Exported (the GDAL
 * layer's gdal_xcorr -mode gmtsar calls it), but not public API. */
GG_API gg_status gg_xcorr_gmtsar_run(gg_context *ctx, const gg_xcorr_prm *master,
                                     const gg_xcorr_prm *aligned,
                                     const gg_xcorr_gmtsar_options *options,
                                     const gg_xcorr_gmtsar_switches *switches, int chunk_rows,
                                     gg_xcorr_gmtsar_row **rows_out, int *nrows_out,
                                     gg_progress_fn progress, void *user,
                                     gg_xcorr_timing *timing);

#endif
