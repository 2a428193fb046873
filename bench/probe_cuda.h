/*
 * probe_cuda.h -- what the CUDA probes (probe_pin.c, probe_map.c,
 * probe_write.c) share: a check that names the failed call, and
 * probe_procs.h's clock.  Each probe
 * defines PROBE_NAME before including it.
 *
 * MIT licence.
 */
#ifndef GG_PROBE_CUDA_H
#define GG_PROBE_CUDA_H

#include <stdio.h>

#include <cuda_runtime.h>

#include "probe_procs.h" /* the clock: probe_now() */

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
