/*
 * probe_map.c -- whether a source file's pages can go to the device without
 * a host copy: the file mapped read-only and registered with
 * cudaHostRegister(cudaHostRegisterReadOnly), against what gdal_ortho's
 * readers do now (pread into page-locked strip buffers, then upload).
 *
 * Why: four ortho workers on one host looked bound by host memory traffic
 * (bench/RESULTS.md, sessions 16-20: about 1 GB moved per 8192^2 scene);
 * the read copy of the source is about a third of it.  Session 21 built
 * gdal_ortho's source on this (commits 83b5161, 28c744b) and took it out
 * again: the batch is bound by each scene's GDAL set-up, not the copy
 * (RESULTS.md, session 21).
 *
 *     probe_map [dir [MiB [threads]]]     (default: /dev/shm 128 8)
 *
 * Writes dir/probe_map.<pid> (removed at the end).  One line per step:
 * seconds, and GB/s of the upload.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PROBE_NAME "probe_map"
#include "probe_cuda.h"

typedef struct {
    int fd;
    char *dst;
    size_t off, n;
} slice;

static void *pread_slice(void *arg)
{
    slice *s = arg;
    size_t done = 0;
    while (done < s->n) {
        const ssize_t r = pread(s->fd, s->dst + done, s->n - done, (off_t)(s->off + done));
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    return NULL;
}

/* pread of n bytes into dst on `threads` threads (the readers). */
static double read_threads(int fd, char *dst, size_t n, int threads)
{
    pthread_t th[64];
    slice sl[64];
    const double t0 = probe_now();
    for (int i = 0; i < threads; i++) {
        sl[i].fd = fd;
        sl[i].dst = dst + n * i / threads;
        sl[i].off = n * i / threads;
        sl[i].n = n * (i + 1) / threads - n * i / threads;
        pthread_create(&th[i], NULL, pread_slice, &sl[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return probe_now() - t0;
}

static double upload(void *dev, const void *src, size_t n, cudaStream_t st)
{
    const double t0 = probe_now();
    /* 4 MiB pieces, as gdal_ortho's strips */
    for (size_t o = 0; o < n; o += (4u << 20)) {
        const size_t k = n - o < (4u << 20) ? n - o : (4u << 20);
        if (check(cudaMemcpyAsync((char *)dev + o, (const char *)src + o, k,
                                  cudaMemcpyHostToDevice, st), "upload"))
            return -1;
    }
    if (check(cudaStreamSynchronize(st), "sync"))
        return -1;
    return probe_now() - t0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/dev/shm";
    const size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 128;
    const int threads = argc > 3 ? atoi(argv[3]) : 8;
    const size_t n = mib << 20;
    char path[4096];
    snprintf(path, sizeof path, "%s/probe_map.%d", dir, (int)getpid());
    int ro = 0, pma = 0, pmahpt = 0;
    cudaDeviceGetAttribute(&ro, cudaDevAttrHostRegisterReadOnlySupported, 0);
    cudaDeviceGetAttribute(&pma, cudaDevAttrPageableMemoryAccess, 0);
    cudaDeviceGetAttribute(&pmahpt, cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0);
    printf("device 0: HostRegisterReadOnlySupported %d, PageableMemoryAccess %d (host page "
           "tables %d)\n", ro, pma, pmahpt);
    /* the file: written once, so its pages are in the page cache */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "probe_map: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *tmp = malloc(n);
    for (size_t i = 0; i < n; i++)
        tmp[i] = (char)(i * 131 + 7);
    if (write(fd, tmp, n) != (ssize_t)n) {
        fprintf(stderr, "probe_map: short write\n");
        return 1;
    }
    close(fd);
    fd = open(path, O_RDONLY);
    void *dev = NULL;
    cudaStream_t st;
    if (check(cudaMalloc(&dev, n), "cudaMalloc") || check(cudaStreamCreate(&st), "stream"))
        return 1;
    void *pinned = NULL;
    if (check(cudaHostAlloc(&pinned, n, cudaHostAllocDefault), "cudaHostAlloc"))
        return 1;
    for (int rep = 0; rep < 3; rep++) {
        /* now: readers copy into page-locked buffers, then upload */
        const double tr1 = read_threads(fd, pinned, n, 1);
        const double trn = read_threads(fd, pinned, n, threads);
        const double tu = upload(dev, pinned, n, st);
        printf("%zu MiB, run %d: pread into page-locked: 1 thread %.4f s (%.1f GB/s), %d threads "
               "%.4f s (%.1f GB/s); upload %.4f s (%.1f GB/s)\n",
               mib, rep + 1, tr1, n / tr1 / 1e9, threads, trn, n / trn / 1e9, tu, n / tu / 1e9);
        /* the file mapped read-only and registered */
        double t0 = probe_now();
        void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
        const double tmap = probe_now() - t0;
        if (m == MAP_FAILED) {
            fprintf(stderr, "probe_map: mmap: %s\n", strerror(errno));
            return 1;
        }
        t0 = probe_now();
        const int bad = check(cudaHostRegister(m, n, cudaHostRegisterReadOnly |
                                                         cudaHostRegisterPortable),
                              "cudaHostRegister(ReadOnly)");
        const double treg = probe_now() - t0;
        double tu2 = -1, tun = -1;
        if (!bad) {
            tu2 = upload(dev, m, n, st);
            t0 = probe_now();
            check(cudaHostUnregister(m), "cudaHostUnregister");
            tun = probe_now() - t0;
        }
        t0 = probe_now();
        void *m2 = mmap(NULL, n, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
        const double tpop = probe_now() - t0;
        t0 = probe_now();
        const int bad2 = check(cudaHostRegister(m2, n, cudaHostRegisterReadOnly |
                                                           cudaHostRegisterPortable),
                               "cudaHostRegister(ReadOnly, populated)");
        const double treg2 = probe_now() - t0;
        double tu3 = -1;
        if (!bad2) {
            tu3 = upload(dev, m2, n, st);
            check(cudaHostUnregister(m2), "cudaHostUnregister");
        }
        /* pageable upload from the mapping, for comparison (staging copies) */
        const double tu4 = upload(dev, m2, n, st);
        munmap(m2, n);
        munmap(m, n);
        printf("%zu MiB, run %d: mapped + registered read-only: map %.4f s, register %.4f s, "
               "upload %.4f s (%.1f GB/s), unregister %.4f s; populated map %.4f s + register "
               "%.4f s, upload %.4f s (%.1f GB/s); pageable upload from the map %.4f s (%.1f "
               "GB/s)\n",
               mib, rep + 1, tmap, treg, tu2, tu2 > 0 ? n / tu2 / 1e9 : 0, tun, tpop, treg2, tu3,
               tu3 > 0 ? n / tu3 / 1e9 : 0, tu4, tu4 > 0 ? n / tu4 / 1e9 : 0);
    }
    close(fd);
    unlink(path);
    free(tmp);
    cudaFreeHost(pinned);
    cudaFree(dev);
    return 0;
}
