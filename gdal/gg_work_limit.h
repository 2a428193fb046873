/*
 * gg_work_limit.h -- a run's work estimated before any heavy set-up: the
 * bytes it would read and write, against a stated limit, so that a grid
 * or product far larger than meant (a 10^6 x 10^6 VRT through
 * gdal_radnorm, an orthorectified grid at 5 m over a polar RPC scene)
 * stops with one line at once instead of starting hours of work.
 *
 * The limit: the GG_WORK_LIMIT configuration option or environment
 * variable (a size such as "512G", "2T"; "none" for no limit), else 256
 * GiB, which is minutes of I/O on a fast disk.
 *
 * MIT licence.
 */
#ifndef GG_WORK_LIMIT_H
#define GG_WORK_LIMIT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The default limit, in bytes: 256 GiB. */
#define GG_WORK_LIMIT_DEFAULT (256.0 * 1024 * 1024 * 1024)

/* 0 when the work fits the limit (or there is none); 1 with
 * "<what> would read <r> and write <w>, past the work limit of <l>
 * (GG_WORK_LIMIT); --config GG_WORK_LIMIT none (or a larger size) runs
 * it" in err -- also when GG_WORK_LIMIT is not a size. */
int gg_work_limit_check(const char *what, double read_bytes, double write_bytes, char *err,
                        size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* GG_WORK_LIMIT_H */
