/*
 * probe_pin.c -- what page-locking host memory costs on this machine, and
 * what it buys: cudaHostAlloc (what gg_host_alloc does on CUDA) against an
 * anonymous mapping advised for transparent huge pages, faulted in, then
 * registered with cudaHostRegister; the upload rate from each, and from the
 * same mapping left pageable.
 *
 * Why: a Dask worker's first page-locked batch pays for pinning its tile
 * buffers (bench/RESULTS.md, sessions 15-19), so page-locked buffers are
 * not the default below 16 tiles per worker.
 *
 *     probe_pin [MiB ...]        (default: 256 1024)
 *
 * The fault-in threads: half the processors, 1 to 8, as the CUDA backend's
 * copy threads (a Dask worker given 16 processors: 8).
 *
 * One line per size and method: seconds to map / fault / pin / free, and
 * GB/s of one cudaMemcpy to the device.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define PROBE_NAME "probe_pin"
#include "probe_cuda.h"

/* An anonymous mapping of n bytes advised for huge pages (NULL on failure). */
static void *map_huge(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

/* One write per base page on `threads` threads (the CUDA backend's
 * fault_in): the kernel zeroes the pages it faults, in parallel. */
static void fault_in(unsigned char *p, size_t n, int threads)
{
    const long pages = (long)(n / 4096);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < pages; i++)
        p[(size_t)i * 4096] = 0;
}

/* GB/s of one host-to-device copy of n bytes from host. */
static double upload(void *dev, const void *host, size_t n)
{
    double t = probe_now();
    if (check(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice), "cudaMemcpy"))
        return 0.0;
    return (double)n / (probe_now() - t) / 1e9;
}

int main(int argc, char **argv)
{
    size_t sizes[16];
    int nsizes = 0;
    for (int i = 1; i < argc && nsizes < 16; i++)
        sizes[nsizes++] = (size_t)strtoull(argv[i], NULL, 10) << 20;
    if (nsizes == 0) {
        sizes[nsizes++] = (size_t)256 << 20;
        sizes[nsizes++] = (size_t)1024 << 20;
    }
#ifdef _OPENMP
    const int half = omp_get_num_procs() / 2, threads = half < 1 ? 1 : half > 8 ? 8 : half;
#else
    const int threads = 1;
#endif
    void *dev = NULL;
    size_t largest = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > largest)
            largest = sizes[i];
    double t = probe_now();
    if (check(cudaFree(0), "cudaFree(0)") || check(cudaMalloc(&dev, largest), "cudaMalloc"))
        return 1;
    printf("# context + cudaMalloc: %.3f s; %d threads fault pages in\n", probe_now() - t, threads);
    printf("%-8s %-34s %8s %8s %8s %8s %8s\n", "MiB", "method", "map_s", "fault_s", "pin_s",
           "free_s", "up_GB/s");
    for (int i = 0; i < nsizes; i++) {
        const size_t n = sizes[i];
        const double mib = (double)(n >> 20);
        /* 1: cudaHostAlloc, portable (gg_host_alloc) */
        void *p = NULL;
        t = probe_now();
        if (check(cudaHostAlloc(&p, n, cudaHostAllocPortable), "cudaHostAlloc"))
            return 1;
        const double pin = probe_now() - t;
        t = probe_now();
        memset(p, 1, n);
        const double touch = probe_now() - t;
        const double up = upload(dev, p, n);
        t = probe_now();
        cudaFreeHost(p);
        printf("%-8.0f %-34s %8s %8.3f %8.3f %8.3f %8.2f\n", mib, "cudaHostAlloc portable", "-",
               touch, pin, probe_now() - t, up);

        /* 2, 3 and 4: huge-page mapping, faulted in first (memset; one write
         * per page on `threads` threads) or not, then registered */
        for (int fault = 2; fault >= 0; fault--) {
            t = probe_now();
            void *m = map_huge(n);
            const double map = probe_now() - t;
            if (!m) {
                fprintf(stderr, "probe_pin: mmap of %.0f MiB failed\n", mib);
                return 1;
            }
            t = probe_now();
            if (fault == 2)
                fault_in(m, n, threads);
            else if (fault == 1)
                memset(m, 1, n);
            const double faulted = probe_now() - t;
            t = probe_now();
            if (check(cudaHostRegister(m, n, cudaHostRegisterPortable), "cudaHostRegister"))
                return 1;
            const double reg = probe_now() - t;
            if (!fault)
                memset(m, 1, n);
            const double upr = upload(dev, m, n);
            t = probe_now();
            cudaHostUnregister(m);
            munmap(m, n);
            char method[64];
            snprintf(method, sizeof method, "%s", fault == 2 ? "huge pages, N threads fault, register"
                                                  : fault == 1 ? "huge pages, memset, register"
                                                               : "huge pages, registered at once");
            printf("%-8.0f %-34s %8.3f %8.3f %8.3f %8.3f %8.2f\n", mib, method, map, faulted, reg,
                   probe_now() - t, upr);
        }

        /* 4: the same mapping left pageable (the driver stages it) */
        t = probe_now();
        void *m = map_huge(n);
        const double map = probe_now() - t;
        if (!m)
            return 1;
        t = probe_now();
        memset(m, 1, n);
        const double faulted = probe_now() - t;
        const double upp = upload(dev, m, n);
        const double upp2 = upload(dev, m, n);
        t = probe_now();
        munmap(m, n);
        printf("%-8.0f %-34s %8.3f %8.3f %8s %8.3f %8.2f (again %.2f)\n", mib,
               "huge pages, pageable", map, faulted, "-", probe_now() - t, upp, upp2);
    }
    cudaFree(dev);
    return 0;
}
