/*
 * pipeline.c -- the read -> device -> write pipeline (pipeline.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gpu/pipeline.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

enum { NOT_READ, READ, COMPUTED };

typedef struct pipeline {
    const gg_pipeline_job *job;
    pthread_mutex_t mu;
    pthread_cond_t can_read, can_compute, can_write; /* one per role */
    unsigned char *state;                            /* per item */
    int next_read, written, failed;
    unsigned wakes;                                  /* gg_pipeline_wake calls */
    struct pipeline *next_running;
} pipeline;

/* The pipelines running now, for gg_pipeline_wake (which finds its
 * pipeline by job; taken before any pipeline's mu, never after). */
static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static pipeline *running_list;

typedef struct thread_arg {
    pipeline *p;
    int index; /* reader or worker number */
} thread_arg;

/* Stops every stage (mu held). */
static void stop(pipeline *p)
{
    p->failed = 1;
    pthread_cond_broadcast(&p->can_read);
    pthread_cond_broadcast(&p->can_compute);
    pthread_cond_broadcast(&p->can_write);
}

static void *reader(void *arg)
{
    thread_arg *a = arg;
    pipeline *p = a->p;
    const gg_pipeline_job *j = p->job;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        /* item k reuses the slot of item k - slots: it waits for that write */
        while (!p->failed && p->next_read < j->items && p->next_read >= p->written + j->slots)
            pthread_cond_wait(&p->can_read, &p->mu);
        if (p->failed || p->next_read >= j->items)
            break;
        const int k = p->next_read++;
        pthread_mutex_unlock(&p->mu);
        const int rc = j->read(j->user, a->index, k, k % j->slots);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            stop(p);
            break;
        }
        p->state[k] = READ;
        pthread_cond_broadcast(&p->can_compute);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The pipeline whose worker runs on this thread (gg_pipeline_computed). */
static __thread pipeline *current;

/* Can item k go to its worker? (mu held) */
static int ready(const pipeline *p, int k)
{
    return p->job->read ? p->state[k] != NOT_READ : k < p->written + p->job->slots;
}

/* Worker w computes items w, w + workers, ...: the same device for the
 * same item run after run, so that a product computed on devices of
 * different kinds (cpu,opencl) has the same bits every time. */
static void *worker(void *arg)
{
    thread_arg *a = arg;
    pipeline *p = a->p;
    const gg_pipeline_job *j = p->job;
    const int workers = j->workers > 0 ? j->workers : 1;
    pipeline *outer = current; /* a callback of another job's worker may run this one */
    current = p;
    pthread_mutex_lock(&p->mu);
    for (int k = a->index; k < j->items; k += workers) {
        while (!p->failed && !ready(p, k)) {
            if (j->idle) {
                const unsigned seen = p->wakes;
                pthread_mutex_unlock(&p->mu);
                const int did = j->idle(j->user, a->index);
                pthread_mutex_lock(&p->mu);
                if (did < 0)
                    stop(p);
                /* work that came while idle ran finished is not missed */
                if (did || p->failed || ready(p, k) || p->wakes != seen)
                    continue;
            }
            pthread_cond_wait(&p->can_compute, &p->mu);
        }
        if (p->failed)
            break;
        pthread_mutex_unlock(&p->mu);
        const int rc = j->compute ? j->compute(j->user, a->index, k, k % j->slots) : 0;
        pthread_mutex_lock(&p->mu);
        if (rc) {
            stop(p);
            break;
        }
        if (!j->deferred) {
            p->state[k] = COMPUTED;
            pthread_cond_broadcast(&p->can_write);
        }
    }
    /* a deferred job left an item of this worker undeclared: the writer
     * would wait for it for ever */
    for (int k = a->index; j->deferred && !p->failed && k < j->items; k += workers)
        if (p->state[k] != COMPUTED)
            stop(p);
    pthread_mutex_unlock(&p->mu);
    current = outer;
    return NULL;
}

void gg_pipeline_wake(const gg_pipeline_job *job)
{
    pthread_mutex_lock(&running_mu);
    for (pipeline *p = running_list; p; p = p->next_running)
        if (p->job == job) {
            pthread_mutex_lock(&p->mu);
            p->wakes++;
            pthread_cond_broadcast(&p->can_compute);
            pthread_mutex_unlock(&p->mu);
        }
    pthread_mutex_unlock(&running_mu);
}

void gg_pipeline_computed(int item)
{
    pipeline *p = current;
    if (!p || item < 0 || item >= p->job->items)
        return;
    pthread_mutex_lock(&p->mu);
    p->state[item] = COMPUTED;
    pthread_cond_broadcast(&p->can_write);
    pthread_mutex_unlock(&p->mu);
}

static void *writer(void *arg)
{
    thread_arg *a = arg;
    pipeline *p = a->p;
    const gg_pipeline_job *j = p->job;
    for (int k = 0; k < j->items; k++) {
        pthread_mutex_lock(&p->mu);
        while (!p->failed && p->state[k] != COMPUTED)
            pthread_cond_wait(&p->can_write, &p->mu);
        const int failed = p->failed;
        pthread_mutex_unlock(&p->mu);
        if (failed)
            break;
        int rc = j->write ? j->write(j->user, k, k % j->slots) : 0;
        if (!rc && j->progress && !j->progress(j->user, k + 1, j->items))
            rc = 1;
        pthread_mutex_lock(&p->mu);
        if (rc)
            stop(p);
        else
            p->written = k + 1;
        pthread_cond_broadcast(&p->can_read);
        if (!j->read) /* the workers wait for the slots */
            pthread_cond_broadcast(&p->can_compute);
        pthread_mutex_unlock(&p->mu);
        if (rc)
            break;
    }
    return NULL;
}

/* A thread of the pipeline: the caller's per-thread set-up around a role. */
typedef struct started {
    thread_arg arg;
    void *(*role)(void *);
} started;

static void *thread_main(void *arg)
{
    started *s = arg;
    const gg_pipeline_job *j = s->arg.p->job;
    if (j->thread_begin)
        j->thread_begin(j->user);
    s->role(&s->arg);
    if (j->thread_end)
        j->thread_end(j->user);
    return NULL;
}

int gg_pipeline_run(const gg_pipeline_job *job)
{
    if (job->items <= 0)
        return 0;
    pipeline p = {.job = job};
    const int readers = !job->read ? 0 : job->readers > 0 ? job->readers : 1;
    const int workers = job->workers > 0 ? job->workers : 1;
    const int nthreads = readers + (workers - 1) + 1;
    p.state = calloc((size_t)job->items, 1);
    started *threads = calloc((size_t)nthreads, sizeof *threads);
    pthread_t *ids = calloc((size_t)nthreads, sizeof *ids);
    if (!p.state || !threads || !ids || job->slots < 1) {
        free(p.state);
        free(threads);
        free(ids);
        return -1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.can_read, NULL);
    pthread_cond_init(&p.can_compute, NULL);
    pthread_cond_init(&p.can_write, NULL);
    pthread_mutex_lock(&running_mu);
    p.next_running = running_list;
    running_list = &p;
    pthread_mutex_unlock(&running_mu);
    int n = 0;
    for (int r = 0; r < readers; r++)
        threads[n++] = (started){{&p, r}, reader};
    for (int w = 1; w < workers; w++)
        threads[n++] = (started){{&p, w}, worker};
    threads[n++] = (started){{&p, 0}, writer};
    int running = 0;
    for (; running < n; running++)
        if (pthread_create(&ids[running], NULL, thread_main, &threads[running]) != 0)
            break;
    if (running < n) {
        pthread_mutex_lock(&p.mu);
        stop(&p);
        pthread_mutex_unlock(&p.mu);
    }
    thread_arg first = {&p, 0};
    worker(&first); /* worker 0 on the calling thread (the caller's device) */
    for (int i = 0; i < running; i++)
        pthread_join(ids[i], NULL);
    const int failed = running < n ? -1 : p.failed;
    pthread_mutex_lock(&running_mu);
    pipeline **link = &running_list;
    while (*link != &p)
        link = &(*link)->next_running;
    *link = p.next_running;
    pthread_mutex_unlock(&running_mu);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.can_read);
    pthread_cond_destroy(&p.can_compute);
    pthread_cond_destroy(&p.can_write);
    free(p.state);
    free(threads);
    free(ids);
    return failed;
}

int gg_pipeline_readers(void)
{
    cpu_set_t set;
    const int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    return n < 4 ? 1 : n < 8 ? 2 : 3;
}
