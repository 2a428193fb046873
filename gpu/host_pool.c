/*
 * host_pool.c -- kept host threads for parallel loops (see host_pool.h).
 *
 * One loop at a time (`busy`); its state sits under `mu`.  A loop hands out
 * parts by index; the caller takes parts too, so a loop ends even where no
 * helper wakes in time (or none exists, e.g. in a forked child).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "host_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#define POOL_MAX 32

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int nhelpers;
static unsigned long loop_no;
static gg_pool_fn job_fn;
static void *job_arg;
static int job_parts, job_next, job_left;

/* Under mu: takes and runs parts of the current loop until none is left. */
static void take_parts(void)
{
    while (job_next < job_parts) {
        const int k = job_next++;
        const gg_pool_fn fn = job_fn;
        void *arg = job_arg;
        pthread_mutex_unlock(&mu);
        fn(arg, k);
        pthread_mutex_lock(&mu);
        if (--job_left == 0)
            pthread_cond_broadcast(&done);
    }
}

/* arg: the loop number before the loop that started it, so that a helper
 * that starts late still joins that loop (and any after it). */
static void *helper(void *arg)
{
#ifdef __linux__
    (void)pthread_setname_np(pthread_self(), "gg-pool");
#endif
    pthread_mutex_lock(&mu);
    unsigned long seen = (unsigned long)(uintptr_t)arg;
    for (;;) {
        while (loop_no == seen)
            pthread_cond_wait(&go, &mu);
        seen = loop_no;
        take_parts();
    }
    return NULL;
}

/* Under mu, before loop_no moves on: at least n helpers started (as many
 * as can be). */
static void grow(int n)
{
    while (nhelpers < n && nhelpers < POOL_MAX) {
        pthread_attr_t at;
        pthread_t th;
        if (pthread_attr_init(&at))
            return;
        (void)pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&th, &at, helper, (void *)(uintptr_t)loop_no);
        pthread_attr_destroy(&at);
        if (rc)
            return;
        nhelpers++;
    }
}

void gg_pool_run(int threads, int parts, gg_pool_fn fn, void *arg)
{
    if (parts <= 0)
        return;
    if (threads > parts)
        threads = parts;
    if (threads < 2 || pthread_mutex_trylock(&busy) != 0) {
        for (int k = 0; k < parts; k++)
            fn(arg, k);
        return;
    }
    pthread_mutex_lock(&mu);
    grow(threads - 1);
    job_fn = fn;
    job_arg = arg;
    job_parts = parts;
    job_next = 0;
    job_left = parts;
    loop_no++;
    for (int i = 1; i < threads; i++)
        pthread_cond_signal(&go);
    take_parts();
    while (job_left > 0)
        pthread_cond_wait(&done, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&busy);
}

int gg_pool_processors(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
