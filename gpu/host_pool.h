/*
 * host_pool.h -- a few kept host threads that run one parallel loop at a
 * time and sleep between loops: the CUDA backend's staging copies and
 * page faulting.
 *
 * Why not OpenMP: libgomp gives every new calling thread a team of threads
 * of its own, and its threads spin for a while after each loop.  gdal_ortho
 * calls from a new thread per scene (its DEM window is a staged upload), so
 * each scene started a team that then spun: 53 ms of processor a scene
 * with one Dask worker, 85-94 ms with four on one host, against 6-13 ms
 * with OMP_WAIT_POLICY=PASSIVE (bench/RESULTS.md, session 26).  These
 * threads are started once per process and wait on a condition variable.
 *
 * Plain C, self-contained (backends must not call into libgeogpu).
 *
 * MIT licence.
 */
#ifndef GG_HOST_POOL_H
#define GG_HOST_POOL_H

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*gg_pool_fn)(void *arg, int part);

/* Runs fn(arg, part) for part 0 .. parts-1 on up to `threads` threads, the
 * caller's among them, and returns when every part is done.  One loop runs
 * at a time: a caller that finds the pool busy (or threads < 2, or no
 * thread can be started) runs its parts itself, one after the other. */
void gg_pool_run(int threads, int parts, gg_pool_fn fn, void *arg);

/* Processors this process may run on (its affinity), at least 1. */
int gg_pool_processors(void);

#ifdef __cplusplus
}
#endif
#endif
