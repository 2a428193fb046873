/*
 * probe_cuda.h -- what the CUDA probes (probe_pin.c, probe_map.c) share:
 * a monotonic clock and a check that names the failed call.  Each probe
 * defines PROBE_NAME before including it.
 *
 * MIT licence.
 */
#ifndef GG_PROBE_CUDA_H
#define GG_PROBE_CUDA_H

#include <stdio.h>
#include <time.h>

#include <cuda_runtime.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 0 on success; else one line on stderr and 1 (the error is cleared). */
static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 1;
}

#endif
