/*
 * probe_write.c -- what writing an ortho output costs when several GPU
 * workers share one host: P processes (one per GPU) each write F new files
 * of S MiB at once, the way gdal_ortho's writer could.
 *
 * Why: on 4 GPUs the ortho batch's writers run 60-80 % slower than on one
 * (bench/RESULTS.md, session 21), and a buffered write of a new file moves
 * each byte three times (the page zeroed, read from the buffer, written).
 *
 *     probe_write dir MiB files procs mode [threads]
 *
 * modes:
 *   pwrite     new file, pwrite 8 MiB pieces from a page-locked buffer (now)
 *   falloc     fallocate the file first, then pwrite (the zeroing moves)
 *   mmap       ftruncate + mmap, memcpy from the buffer on `threads` threads
 *   dma        ftruncate + mmap + cudaHostRegister, then one cudaMemcpy from
 *              the device straight into the file's pages (no host copy)
 *   copy       no file: memcpy between two buffers on `threads` threads, what
 *              the host's memory gives all the processes at once
 * Each process takes device rank % count.  Prints per process the median
 * seconds per file, and for all the aggregate GB/s; one file is read back
 * to check its bytes.  The files are removed at the end.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PROBE_NAME "probe_write"
#include "probe_cuda.h"

typedef struct {
    char *dst;
    const char *src;
    size_t n;
} piece;

static void *copy_piece(void *arg)
{
    piece *p = arg;
    memcpy(p->dst, p->src, p->n);
    return NULL;
}

/* memcpy of n bytes split over `threads` threads */
static void copy_threads(char *dst, const char *src, size_t n, int threads)
{
    pthread_t th[64];
    piece pc[64];
    for (int i = 0; i < threads; i++) {
        const size_t a = n * i / threads, b = n * (i + 1) / threads;
        pc[i] = (piece){dst + a, src + a, b - a};
        pthread_create(&th[i], NULL, copy_piece, &pc[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
}

/* one file: 0 on success */
static int write_one(const char *path, const char *mode, const char *buf, void *dev, size_t n,
                     int threads)
{
    if (!strcmp(mode, "copy")) {
        static char *dst; /* one per process, kept: no page faults in the timing */
        if (!dst) {
            if (!(dst = malloc(n)))
                return 1;
            memset(dst, 0, n);
        }
        copy_threads(dst, buf, n, threads);
        const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600); /* the byte check below */
        const int bad = fd < 0 || pwrite(fd, dst, 1, 0) != 1 || pwrite(fd, dst + n - 1, 1, (off_t)n - 1) != 1;
        if (fd >= 0)
            close(fd);
        return bad;
    }
    const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "probe_write: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int bad = 0;
    if (!strcmp(mode, "pwrite") || !strcmp(mode, "falloc")) {
        if (!strcmp(mode, "falloc") && fallocate(fd, 0, 0, (off_t)n) != 0) {
            fprintf(stderr, "probe_write: fallocate: %s\n", strerror(errno));
            bad = 1;
        }
        for (size_t o = 0; !bad && o < n; o += (8u << 20)) {
            const size_t k = n - o < (8u << 20) ? n - o : (8u << 20);
            bad = pwrite(fd, buf + o, k, (off_t)o) != (ssize_t)k;
        }
    } else {
        bad = ftruncate(fd, (off_t)n) != 0;
        char *m = bad ? MAP_FAILED : mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "probe_write: mmap: %s\n", strerror(errno));
            bad = 1;
        } else if (!strcmp(mode, "mmap")) {
            copy_threads(m, buf, n, threads);
            munmap(m, n);
        } else {
            bad = check(cudaHostRegister(m, n, cudaHostRegisterPortable), "cudaHostRegister") ||
                  check(cudaMemcpy(m, dev, n, cudaMemcpyDeviceToHost), "download") ||
                  check(cudaHostUnregister(m), "cudaHostUnregister");
            munmap(m, n);
        }
    }
    if (close(fd) != 0)
        bad = 1;
    return bad;
}

typedef struct {
    const char *dir, *mode;
    size_t n;
    int files, threads;
} setup;

static int one_process(int rank, void *arg, int go_fd, int out_fd)
{
    const setup *su = arg;
    const char *dir = su->dir, *mode = su->mode;
    const size_t n = su->n;
    const int files = su->files, threads = su->threads;
    /* page-locked buffers where there is a device (as in the workers);
     * the host modes still run without one */
    int count = 0;
    const int cuda = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    (void)cudaGetLastError();
    if (!cuda && !strcmp(mode, "dma")) {
        fprintf(stderr, "probe_write: dma needs a CUDA device\n");
        return 1;
    }
    void *dev = NULL;
    char *buf = NULL;
    if (cuda && (check(cudaSetDevice(rank % count), "cudaSetDevice") ||
                 check(cudaMalloc(&dev, n), "cudaMalloc") ||
                 check(cudaMemset(dev, 0x5a, n), "cudaMemset") ||
                 check(cudaHostAlloc((void **)&buf, n, cudaHostAllocDefault), "cudaHostAlloc")))
        return 1;
    if (!cuda && !(buf = malloc(n)))
        return 1;
    memset(buf, 0x5a, n);
    char c;
    if (read(go_fd, &c, 1) != 1) /* all processes start together */
        return 1;
    double *t = calloc((size_t)files, sizeof *t);
    const double t0 = probe_now();
    for (int f = 0; f < files; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/probe_write.%d.%d", dir, rank, f);
        const double a = probe_now();
        if (write_one(path, mode, buf, dev, n, threads))
            return 1;
        t[f] = probe_now() - a;
    }
    const double wall = probe_now() - t0;
    /* the bytes landed: first and last of the last file */
    char path[4096];
    snprintf(path, sizeof path, "%s/probe_write.%d.%d", dir, rank, files - 1);
    const int fd = open(path, O_RDONLY);
    unsigned char ends[2] = {0, 0};
    const int ok = fd >= 0 && pread(fd, &ends[0], 1, 0) == 1 &&
                   pread(fd, &ends[1], 1, (off_t)n - 1) == 1 && ends[0] == 0x5a && ends[1] == 0x5a;
    if (fd >= 0)
        close(fd);
    qsort(t, (size_t)files, sizeof *t, probe_cmp_double);
    char line[256];
    const int len = snprintf(line, sizeof line, "  rank %d: median %.4f s a file (min %.4f, max %.4f), wall "
                             "%.3f s, bytes %s\n",
                             rank, t[files / 2], t[0], t[files - 1], wall, ok ? "ok" : "WRONG");
    if (write(out_fd, line, (size_t)len) != len)
        return 1;
    for (int f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/probe_write.%d.%d", dir, rank, f);
        unlink(path);
    }
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: probe_write dir MiB files procs pwrite|falloc|mmap|dma|copy [threads]\n");
        return 2;
    }
    const char *dir = argv[1], *mode = argv[5];
    const size_t n = (size_t)atol(argv[2]) << 20;
    const int files = atoi(argv[3]), procs = atoi(argv[4]);
    const int threads = argc > 6 ? atoi(argv[6]) : 1;
    if (n == 0 || files < 1 || procs < 1 || procs > 64 || threads < 1 || threads > 64 ||
        (strcmp(mode, "pwrite") && strcmp(mode, "falloc") && strcmp(mode, "mmap") &&
         strcmp(mode, "dma") && strcmp(mode, "copy"))) {
        fprintf(stderr, "probe_write: bad arguments\n");
        return 2;
    }
    setup su = {dir, mode, n, files, threads};
    double wall = 0;
    char text[16384];
    /* 2 s: the processes' CUDA contexts and buffers */
    const int bad = probe_run_procs(procs, 2, one_process, &su, &wall, text, sizeof text);
    printf("%s %zu MiB x %d files x %d processes (threads %d): %.3f s, %.1f GB/s in all%s\n%s",
           mode, n >> 20, files, procs, threads, wall, (double)n * files * procs / wall / 1e9,
           bad ? " (A PROCESS FAILED)" : "", text);
    return bad;
}
