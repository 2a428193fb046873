/*
 * probe_dma.c -- does a GPU's share of an ortho scene (its strips up, its
 * blocks down) take longer when every GPU of the host does the same at
 * once?  And what does waiting for each block cost the host's processors?
 *
 * Why: with four ortho workers on one x4 host a scene's turn at the device
 * is twice as long as with one (bench/RESULTS.md, sessions 23-25), even
 * with the whole source read before the turn.  The copies of a turn alone,
 * with no reads, writes or kernels, tell whether the copy engines' path to
 * host memory is shared (PCIe switches, the memory controllers).
 *
 *     probe_dma [procs,... [reps [up_MiB [down_MiB [chunk_MiB [spin|block]]]]]]
 *               (default: 1,2,4 20 128 143 4 spin)
 *
 * P processes at once, process r on GPU r mod (GPUs); each does `reps`
 * scenes: up_MiB in chunk_MiB uploads, then down_MiB in chunk_MiB
 * downloads, waiting for each download (gdal_ortho waits for each block)
 * on one stream, from and to page-locked memory.  spin / block: the wait
 * spins (CUDA's default with fewer contexts than processors) or sleeps
 * (cudaDeviceScheduleBlockingSync).  One line per process: the median
 * scene's seconds, its GB/s, and the processor seconds it used a scene.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define PROBE_NAME "probe_dma"
#include "probe_cuda.h"

typedef struct {
    int reps;
    size_t up, down, chunk;
    int block;
} dma_args;

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + 1e-6 * u.ru_utime.tv_usec + u.ru_stime.tv_sec +
           1e-6 * u.ru_stime.tv_usec;
}

/* One scene's copies; 0 on success. */
static int scene(const dma_args *a, cudaStream_t s, unsigned char *hu, unsigned char *hd,
                 unsigned char *d)
{
    for (size_t off = 0; off < a->up; off += a->chunk) {
        const size_t n = a->up - off < a->chunk ? a->up - off : a->chunk;
        if (check(cudaMemcpyAsync(d + off, hu + off, n, cudaMemcpyHostToDevice, s), "upload"))
            return 1;
    }
    for (size_t off = 0; off < a->down; off += a->chunk) {
        const size_t n = a->down - off < a->chunk ? a->down - off : a->chunk;
        if (check(cudaMemcpyAsync(hd + off, d + off, n, cudaMemcpyDeviceToHost, s),
                  "download") ||
            check(cudaStreamSynchronize(s), "wait"))
            return 1;
    }
    return 0;
}

static int one_process(int rank, void *arg, int go_fd, int out_fd)
{
    const dma_args *a = arg;
    int ngpu = 0;
    if (check(cudaGetDeviceCount(&ngpu), "cudaGetDeviceCount") || ngpu < 1)
        return 1;
    const int dev = rank % ngpu;
    if (check(cudaSetDevice(dev), "cudaSetDevice") ||
        check(cudaSetDeviceFlags(a->block ? cudaDeviceScheduleBlockingSync
                                          : cudaDeviceScheduleSpin), "cudaSetDeviceFlags"))
        return 1;
    unsigned char *hu = NULL, *hd = NULL, *d = NULL;
    cudaStream_t s;
    if (check(cudaHostAlloc((void **)&hu, a->up, cudaHostAllocDefault), "cudaHostAlloc") ||
        check(cudaHostAlloc((void **)&hd, a->down, cudaHostAllocDefault), "cudaHostAlloc") ||
        check(cudaMalloc((void **)&d, a->up > a->down ? a->up : a->down), "cudaMalloc") ||
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"))
        return 1;
    memset(hu, 1, a->up);
    memset(hd, 2, a->down);
    if (scene(a, s, hu, hd, d)) /* warm: the first copies map the memory */
        return 1;
    char g;
    if (read(go_fd, &g, 1) != 1)
        return 1;
    double *t = calloc((size_t)a->reps, sizeof *t);
    if (!t)
        return 1;
    const double c0 = cpu_seconds();
    for (int i = 0; i < a->reps; i++) {
        const double t0 = probe_now();
        if (scene(a, s, hu, hd, d))
            return 1;
        t[i] = probe_now() - t0;
    }
    const double cpu = (cpu_seconds() - c0) / a->reps;
    qsort(t, (size_t)a->reps, sizeof *t, probe_cmp_double);
    const double med = t[a->reps / 2];
    char line[256];
    const int n = snprintf(line, sizeof line,
                           "  rank %d gpu %d: scene %.2f ms median (%.2f-%.2f), %.1f GB/s, "
                           "processor %.2f ms a scene\n",
                           rank, dev, 1e3 * med, 1e3 * t[0], 1e3 * t[a->reps - 1],
                           (double)(a->up + a->down) / med / 1e9, 1e3 * cpu);
    const int bad = write(out_fd, line, (size_t)n) != n;
    free(t);
    cudaFree(d);
    cudaFreeHost(hu);
    cudaFreeHost(hd);
    cudaStreamDestroy(s);
    return bad;
}

int main(int argc, char **argv)
{
    const char *procs = argc > 1 ? argv[1] : "1,2,4";
    dma_args a = {argc > 2 ? atoi(argv[2]) : 20,
                  (size_t)(argc > 3 ? atof(argv[3]) : 128) << 20,
                  (size_t)(argc > 4 ? atof(argv[4]) : 143) << 20,
                  (size_t)((argc > 5 ? atof(argv[5]) : 4) * 1048576.0),
                  argc > 6 && !strcmp(argv[6], "block")};
    if (a.reps < 1 || a.up < 1 || a.down < 1 || a.chunk < 4096 ||
        (argc > 6 && strcmp(argv[6], "block") && strcmp(argv[6], "spin"))) {
        fprintf(stderr, "usage: probe_dma [procs,... [reps [up_MiB [down_MiB [chunk_MiB "
                        "[spin|block]]]]]]\n");
        return 2;
    }
    char *list = strdup(procs);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        const int p = atoi(tok);
        if (p < 1)
            continue;
        double wall = 0;
        char text[8192];
        const int bad = probe_run_procs(p, 2, one_process, &a, &wall, text, sizeof text);
        printf("P=%d (%s wait), %zu MiB up + %zu MiB down in %zu KiB copies: %.3f s in all%s\n%s",
               p, a.block ? "sleeping" : "spinning", a.up >> 20, a.down >> 20, a.chunk >> 10,
               wall, bad ? " (a process failed)" : "", text);
        fflush(stdout);
    }
    free(list);
    return 0;
}
