/*
 * probe_procs.h -- what the host-contention probes (probe_setup.c,
 * probe_write.c) share: P processes forked, started together, each writing
 * its lines to one pipe; the median of a run's timings.
 *
 * MIT licence.
 */
#ifndef GG_PROBE_PROCS_H
#define GG_PROBE_PROCS_H

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double probe_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int probe_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One process's work: waits for a byte on go_fd before timing, writes its
 * report to out_fd; returns the exit status (0: fine). */
typedef int (*probe_proc_fn)(int rank, void *arg, int go_fd, int out_fd);

/* Runs fn in procs processes, lets them prepare for settle_s seconds,
 * starts them at once and waits for all.  *wall: seconds from the start to
 * the last exit; text (NUL-terminated): their reports.  1 if any failed. */
static inline int probe_run_procs(int procs, unsigned settle_s, probe_proc_fn fn, void *arg,
                                  double *wall, char *text, size_t textlen)
{
    int go[2], out[2];
    *wall = 0;
    text[0] = 0;
    if (pipe(go) || pipe(out))
        return 1;
    for (int r = 0; r < procs; r++)
        if (fork() == 0) {
            close(go[1]);
            close(out[0]);
            _exit(fn(r, arg, go[0], out[1]));
        }
    close(go[0]);
    close(out[1]);
    sleep(settle_s);
    const double t0 = probe_now();
    int bad = 0;
    for (int r = 0; r < procs; r++)
        bad |= write(go[1], "g", 1) != 1;
    for (int r = 0; r < procs; r++) {
        int st = 0;
        wait(&st);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    *wall = probe_now() - t0;
    size_t got = 0;
    ssize_t k;
    while (got + 1 < textlen && (k = read(out[0], text + got, textlen - 1 - got)) > 0)
        got += (size_t)k;
    text[got] = 0;
    close(go[1]);
    close(out[0]);
    return bad;
}

#endif
