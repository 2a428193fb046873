/* fftw_nthreads_shim.c -- an LD_PRELOAD library that fixes the number of
 * threads FFTW (single precision) plans with, for running GMTSAR's xcorr
 * beside geogpu on the same cores.
 *
 * GMT's FFT layer (gmt_fft_initialization) calls
 * fftwf_plan_with_nthreads(n) with n = the number of processors of the
 * machine, whatever the process's CPU affinity, and offers no setting or
 * environment variable for it; GMTSAR's xcorr plans its small 2-D FFTs
 * through it, which with two or more threads is slower than with one.
 * This library replaces that call: the real FFTW gets $FFTW_SHIM_NTHREADS
 * (default 1).  FFTW_SHIM_VERBOSE=1 prints what was asked and what was
 * used to stderr.
 *
 *   cc -O2 -shared -fPIC -o libfftw_nthreads_shim.so fftw_nthreads_shim.c -ldl
 *   LD_PRELOAD=$PWD/libfftw_nthreads_shim.so FFTW_SHIM_NTHREADS=1 xcorr ...
 *
 * Used by bench_xcorr_vs_gmtsar.sh and pack_gmtsar_peer.sh.  MIT licence.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void fftwf_plan_with_nthreads(int nthreads)
{
    static void (*real_fn)(int);
    const char *env = getenv("FFTW_SHIM_NTHREADS");
    int use = env && atoi(env) > 0 ? atoi(env) : 1;
    if (!real_fn)
        real_fn = (void (*)(int))dlsym(RTLD_NEXT, "fftwf_plan_with_nthreads");
    if (getenv("FFTW_SHIM_VERBOSE"))
        fprintf(stderr, "fftw shim: fftwf_plan_with_nthreads(%d) -> %d\n", nthreads, use);
    if (real_fn)
        real_fn(use);
}
