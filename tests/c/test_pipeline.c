/*
 * test_pipeline.c -- the read -> device -> write pipeline (gpu/pipeline.h)
 * on its own: every item read, computed and written once, in that order,
 * writes in item order, item k on worker k % workers, at most `slots`
 * items in flight, and a failing stage or a stopping progress ending the
 * run with nothing after it; deferred jobs (compute returns with items in
 * flight on a device queue) writing only complete items; work handed to
 * a job's idle from outside the pipeline (gg_pipeline_wake) taken while its
 * worker waits for room.  Stages sleep random short times so that the
 * threads interleave differently from run to run.
 *
 * MIT licence.
 */
#include "gpu/pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

#define MAX_ITEMS 200

typedef struct state {
    pthread_mutex_t mu;
    int items, slots, workers, with_compute;
    int fail_read, fail_compute, fail_write, stop_after; /* item, or -1 */
    int reads[MAX_ITEMS], computes[MAX_ITEMS], writes[MAX_ITEMS];
    int worker_of[MAX_ITEMS];
    int slot_item[16];         /* which item holds each slot now (-1: free) */
    int order[MAX_ITEMS], nwritten;
    int in_flight, max_in_flight;
    int errors;                /* ordering violations seen inside callbacks */
    unsigned seed;
} state;

static void nap(state *s)
{
    pthread_mutex_lock(&s->mu);
    const int us = (int)(rand_r(&s->seed) % 300);
    pthread_mutex_unlock(&s->mu);
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static int on_read(void *user, int reader, int item, int slot)
{
    (void)reader;
    state *s = user;
    pthread_mutex_lock(&s->mu);
    if (s->slot_item[slot] != -1 || slot != item % s->slots)
        s->errors++; /* the slot is still another item's */
    s->slot_item[slot] = item;
    s->reads[item]++;
    if (++s->in_flight > s->max_in_flight)
        s->max_in_flight = s->in_flight;
    pthread_mutex_unlock(&s->mu);
    nap(s);
    return item == s->fail_read;
}

static int on_compute(void *user, int worker, int item, int slot)
{
    state *s = user;
    pthread_mutex_lock(&s->mu);
    if (s->reads[item] != 1 || s->slot_item[slot] != item)
        s->errors++;
    s->computes[item]++;
    s->worker_of[item] = worker;
    pthread_mutex_unlock(&s->mu);
    nap(s);
    return item == s->fail_compute;
}

static int on_write(void *user, int item, int slot)
{
    state *s = user;
    nap(s);
    pthread_mutex_lock(&s->mu);
    if (s->computes[item] != s->with_compute || s->slot_item[slot] != item)
        s->errors++;
    s->writes[item]++;
    s->order[s->nwritten++] = item;
    s->slot_item[slot] = -1;
    s->in_flight--;
    pthread_mutex_unlock(&s->mu);
    return item == s->fail_write;
}

static int on_progress(void *user, int written, int items)
{
    state *s = user;
    (void)items;
    return s->stop_after < 0 || written <= s->stop_after;
}

static int run(state *s, int items, int slots, int readers, int workers, int with_compute)
{
    s->items = items;
    s->slots = slots;
    s->workers = workers;
    s->with_compute = with_compute;
    memset(s->reads, 0, sizeof s->reads);
    memset(s->computes, 0, sizeof s->computes);
    memset(s->writes, 0, sizeof s->writes);
    memset(s->worker_of, -1, sizeof s->worker_of);
    memset(s->slot_item, -1, sizeof s->slot_item);
    s->nwritten = s->in_flight = s->max_in_flight = s->errors = 0;
    const gg_pipeline_job job = {.user = s, .items = items, .slots = slots, .readers = readers,
                                 .workers = workers, .read = on_read,
                                 .compute = with_compute ? on_compute : NULL, .write = on_write,
                                 .progress = on_progress};
    return gg_pipeline_run(&job);
}

static void whole_runs(void)
{
    const int shapes[][4] = {/* items, slots, readers, workers */
                             {1, 3, 1, 1}, {57, 3, 1, 1}, {57, 1, 1, 1}, {100, 4, 3, 1},
                             {100, 5, 2, 3}, {7, 2, 4, 4}, {150, 8, 2, 6}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const int items = shapes[c][0], slots = shapes[c][1], readers = shapes[c][2],
                  workers = shapes[c][3];
        for (int with_compute = 0; with_compute < 2; with_compute++) {
            state s = {.fail_read = -1, .fail_compute = -1, .fail_write = -1, .stop_after = -1,
                       .seed = (unsigned)(c * 7 + (size_t)with_compute + 1)};
            pthread_mutex_init(&s.mu, NULL);
            const int rc = run(&s, items, slots, readers, workers, with_compute);
            CHECK(rc == 0, "shape %zu: rc %d", c, rc);
            CHECK(s.errors == 0, "shape %zu: %d ordering violations", c, s.errors);
            CHECK(s.nwritten == items, "shape %zu: %d of %d written", c, s.nwritten, items);
            CHECK(s.max_in_flight <= slots, "shape %zu: %d items in flight with %d slots", c,
                  s.max_in_flight, slots);
            for (int k = 0; k < items; k++) {
                CHECK(s.reads[k] == 1 && s.writes[k] == 1, "shape %zu item %d: %d reads %d writes",
                      c, k, s.reads[k], s.writes[k]);
                CHECK(s.order[k] == k, "shape %zu: write %d was item %d", c, k, s.order[k]);
                if (with_compute)
                    CHECK(s.computes[k] == 1 && s.worker_of[k] == k % workers,
                          "shape %zu item %d: %d computes, worker %d", c, k, s.computes[k],
                          s.worker_of[k]);
            }
            pthread_mutex_destroy(&s.mu);
        }
    }
}

/* A failing stage at item 20 (or progress stopping after 20 writes): rc 1,
 * nothing at or after the failure written, nothing twice. */
static void failures_stop(void)
{
    for (int which = 0; which < 4; which++) {
        for (int workers = 1; workers <= 3; workers += 2) {
            state s = {.fail_read = -1, .fail_compute = -1, .fail_write = -1, .stop_after = -1,
                       .seed = (unsigned)(which * 11 + workers)};
            pthread_mutex_init(&s.mu, NULL);
            const char *what[] = {"read", "compute", "write", "progress"};
            if (which == 0)
                s.fail_read = 20;
            else if (which == 1)
                s.fail_compute = 20;
            else if (which == 2)
                s.fail_write = 20;
            else
                s.stop_after = 20;
            const int rc = run(&s, 80, 3, 2, workers, 1);
            CHECK(rc == 1, "%s failing, %d workers: rc %d", what[which], workers, rc);
            /* a failed write is still counted as written by the test's
             * callback; a stopping progress comes after the 21st write */
            const int limit = which >= 2 ? 21 : 20;
            CHECK(s.nwritten <= limit, "%s failing: %d written", what[which], s.nwritten);
            for (int k = 0; k < s.nwritten; k++)
                CHECK(s.order[k] == k, "%s failing: write %d was item %d", what[which], k,
                      s.order[k]);
            for (int k = 0; k < 80; k++)
                CHECK(s.reads[k] <= 1 && s.computes[k] <= 1 && s.writes[k] <= 1,
                      "%s failing: item %d done twice", what[which], k);
            CHECK(s.reads[79] == 0 || s.nwritten >= 77, "%s failing: reading went on to the end",
                  what[which]);
            pthread_mutex_destroy(&s.mu);
        }
    }
}

/* A job with nothing to write (the GMTSAR mode's line pieces): compute
 * uses up its slot, which a later read may then take. */
static int consume(void *user, int worker, int item, int slot)
{
    state *s = user;
    const int rc = on_compute(user, worker, item, slot);
    pthread_mutex_lock(&s->mu);
    s->order[s->nwritten++] = item;
    s->slot_item[slot] = -1;
    s->in_flight--;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static void nothing_to_write(void)
{
    for (int readers = 1; readers <= 4; readers += 3) {
        state s = {.mu = PTHREAD_MUTEX_INITIALIZER, .fail_read = -1, .fail_compute = -1,
                   .fail_write = -1, .stop_after = -1, .seed = 11};
        s.items = 90;
        s.slots = 3;
        s.workers = 1;
        s.with_compute = 1;
        memset(s.slot_item, -1, sizeof s.slot_item);
        const gg_pipeline_job job = {.user = &s, .items = 90, .slots = 3, .readers = readers,
                                     .workers = 1, .read = on_read, .compute = consume,
                                     .progress = on_progress};
        const int rc = gg_pipeline_run(&job);
        CHECK(rc == 0, "no write, %d readers: rc %d", readers, rc);
        CHECK(s.errors == 0, "no write, %d readers: %d ordering violations", readers, s.errors);
        CHECK(s.nwritten == 90 && s.max_in_flight <= 3, "no write, %d readers: %d computed, %d "
              "in flight", readers, s.nwritten, s.max_in_flight);
        for (int k = 0; k < 90; k++)
            CHECK(s.reads[k] == 1 && s.computes[k] == 1 && s.order[k] == k,
                  "no write, %d readers, item %d: %d reads, %d computes, computed %d-th", readers,
                  k, s.reads[k], s.computes[k], s.order[k]);
    }
}

static void nothing_to_do(void)
{
    state s = {.fail_read = -1, .fail_compute = -1, .fail_write = -1, .stop_after = -1};
    pthread_mutex_init(&s.mu, NULL);
    CHECK(run(&s, 0, 3, 1, 1, 1) == 0 && s.nwritten == 0, "no items");
    pthread_mutex_destroy(&s.mu);
}

/* ------------------------------------------- deferred jobs (a device queue)
 *
 * No read stage; each worker queues its items in a queue of QUEUED (compute
 * returns with them in flight), completes the oldest when the queue is full
 * or when idle, and its last item drains the queue.  An item is written
 * only once complete, in order, and is computed only once the item `slots`
 * before it is written. */

#define QUEUED 2
#define MAX_WORKERS 4

typedef struct dstate {
    pthread_mutex_t mu;
    int items, slots, workers, fail_compute, fail_write, never_declare;
    int queue[MAX_WORKERS][QUEUED], nq[MAX_WORKERS];
    int computes[MAX_ITEMS], complete[MAX_ITEMS], writes[MAX_ITEMS];
    int order[MAX_ITEMS], nwritten, idles_working;
    int errors;
    unsigned seed;
} dstate;

static void dnap(dstate *s)
{
    pthread_mutex_lock(&s->mu);
    const int us = (int)(rand_r(&s->seed) % 300);
    pthread_mutex_unlock(&s->mu);
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

/* Worker w's oldest queued item complete (0 when none was queued). */
static int complete_oldest(dstate *s, int w)
{
    pthread_mutex_lock(&s->mu);
    if (s->nq[w] == 0) {
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    const int k = s->queue[w][0];
    for (int i = 1; i < s->nq[w]; i++)
        s->queue[w][i - 1] = s->queue[w][i];
    s->nq[w]--;
    s->complete[k]++;
    pthread_mutex_unlock(&s->mu);
    if (k != s->never_declare)
        gg_pipeline_computed(k);
    return 1;
}

static int d_compute(void *user, int worker, int item, int slot)
{
    (void)slot;
    dstate *s = user;
    pthread_mutex_lock(&s->mu);
    /* the slot is free: the item `slots` before is written */
    if (item >= s->slots && s->writes[item - s->slots] != 1)
        s->errors++;
    if (worker != item % s->workers)
        s->errors++;
    s->computes[item]++;
    const int full = s->nq[worker] == QUEUED;
    pthread_mutex_unlock(&s->mu);
    if (full)
        complete_oldest(s, worker);
    dnap(s);
    if (item == s->fail_compute)
        return 1;
    pthread_mutex_lock(&s->mu);
    s->queue[worker][s->nq[worker]++] = item;
    pthread_mutex_unlock(&s->mu);
    if (item + s->workers >= s->items) /* this worker's last: drain */
        while (complete_oldest(s, worker))
            ;
    return 0;
}

static int d_idle(void *user, int worker)
{
    dstate *s = user;
    const int did = complete_oldest(s, worker);
    if (did) {
        pthread_mutex_lock(&s->mu);
        s->idles_working++;
        pthread_mutex_unlock(&s->mu);
    }
    return did;
}

static int d_write(void *user, int item, int slot)
{
    (void)slot;
    dstate *s = user;
    dnap(s);
    pthread_mutex_lock(&s->mu);
    if (s->complete[item] != 1)
        s->errors++; /* written before its completion */
    s->writes[item]++;
    s->order[s->nwritten++] = item;
    pthread_mutex_unlock(&s->mu);
    return item == s->fail_write;
}

static int d_run(dstate *s, int items, int slots, int workers, int with_idle)
{
    s->items = items;
    s->slots = slots;
    s->workers = workers;
    const gg_pipeline_job job = {.user = s, .items = items, .slots = slots, .workers = workers,
                                 .compute = d_compute, .write = d_write, .deferred = 1,
                                 .idle = with_idle ? d_idle : NULL};
    return gg_pipeline_run(&job);
}

static void deferred_runs(void)
{
    const int shapes[][3] = {/* items, slots, workers */
                             {1, 3, 1}, {2, 3, 1}, {57, 3, 1}, {100, 6, 1},
                             {100, 6, 2}, {100, 5, 2}, {7, 3, 4}, {150, 9, 3}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
        for (int with_idle = 0; with_idle < 2; with_idle++) {
            /* without idle, the items left in flight need slots to spare
             * (gpu/pipeline.h) */
            if (!with_idle && shapes[c][1] < shapes[c][2] * (QUEUED + 1))
                continue;
            dstate s = {.fail_compute = -1, .fail_write = -1, .never_declare = -1,
                        .seed = (unsigned)(c * 5 + (size_t)with_idle + 3)};
            pthread_mutex_init(&s.mu, NULL);
            const int items = shapes[c][0];
            const int rc = d_run(&s, items, shapes[c][1], shapes[c][2], with_idle);
            CHECK(rc == 0, "deferred shape %zu: rc %d", c, rc);
            CHECK(s.errors == 0, "deferred shape %zu: %d ordering violations", c, s.errors);
            CHECK(s.nwritten == items, "deferred shape %zu: %d of %d written", c, s.nwritten,
                  items);
            for (int k = 0; k < items; k++)
                CHECK(s.computes[k] == 1 && s.complete[k] == 1 && s.writes[k] == 1 &&
                          s.order[k] == k,
                      "deferred shape %zu item %d: %d computes %d completions %d writes, "
                      "write %d was item %d",
                      c, k, s.computes[k], s.complete[k], s.writes[k], k, s.order[k]);
            if (!with_idle)
                CHECK(s.idles_working == 0, "deferred shape %zu: idle without idle", c);
            pthread_mutex_destroy(&s.mu);
        }
}

/* A failing compute or write, or a worker ending with an item never
 * declared complete: rc 1, nothing written at or after it, and no hang. */
static void deferred_failures(void)
{
    for (int which = 0; which < 3; which++) {
        dstate s = {.fail_compute = -1, .fail_write = -1, .never_declare = -1,
                    .seed = (unsigned)(which + 17)};
        pthread_mutex_init(&s.mu, NULL);
        const char *what[] = {"compute", "write", "undeclared item"};
        if (which == 0)
            s.fail_compute = 20;
        else if (which == 1)
            s.fail_write = 20;
        else
            s.never_declare = 79; /* the last: the worker ends with it in flight */
        const int rc = d_run(&s, 80, 4, 1, 1);
        CHECK(rc == 1, "deferred, %s: rc %d", what[which], rc);
        CHECK(s.nwritten <= (which == 0 ? 20 : which == 1 ? 21 : 79), "deferred, %s: %d written",
              what[which], s.nwritten);
        for (int k = 0; k < s.nwritten; k++)
            CHECK(s.order[k] == k && s.complete[k] == 1, "deferred, %s: write %d was item %d",
                  what[which], k, s.order[k]);
        pthread_mutex_destroy(&s.mu);
    }
}

/* ------------------------------------------------ work woken from outside
 *
 * A feeder thread outside the pipeline hands work to the job's idle
 * (gg_pipeline_wake) while the worker waits for room: item 0's write
 * waits until the feeder's every token was taken by idle, so without the
 * wake the worker would sleep while the writer waits (the write gives up
 * after 5 s and the test fails). */

#define TOKENS 50

typedef struct wstate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int produced, consumed, timed_out;
    const gg_pipeline_job *job;
} wstate;

static int w_compute(void *user, int worker, int item, int slot)
{
    (void)user, (void)worker, (void)item, (void)slot;
    return 0;
}

static int w_idle(void *user, int worker)
{
    (void)worker;
    wstate *s = user;
    pthread_mutex_lock(&s->mu);
    const int did = s->consumed < s->produced;
    s->consumed = s->produced;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return did;
}

static int w_write(void *user, int item, int slot)
{
    (void)slot;
    wstate *s = user;
    if (item != 0)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&s->mu);
    while (s->consumed < TOKENS && !s->timed_out)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) != 0)
            s->timed_out = 1;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void *w_feeder(void *arg)
{
    wstate *s = arg;
    for (int i = 0; i < TOKENS; i++) {
        pthread_mutex_lock(&s->mu);
        while (s->consumed < s->produced && !s->timed_out) /* one at a time */
            pthread_cond_wait(&s->cv, &s->mu);
        const int stop = s->timed_out;
        s->produced++;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        struct timespec ts = {0, 100 * 1000L}; /* the worker is asleep by now, mostly */
        nanosleep(&ts, NULL);
        gg_pipeline_wake(s->job);
    }
    return NULL;
}

static void woken_runs(void)
{
    for (int run = 0; run < 5; run++) {
        wstate s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
        /* one slot: item 1 waits for item 0's write, which waits for the feeder */
        const gg_pipeline_job job = {.user = &s, .items = 3, .slots = 1, .workers = 1,
                                     .compute = w_compute, .write = w_write, .idle = w_idle};
        s.job = &job;
        pthread_t feeder;
        pthread_create(&feeder, NULL, w_feeder, &s);
        const int rc = gg_pipeline_run(&job);
        pthread_mutex_lock(&s.mu);
        if (s.timed_out) /* let a feeder stuck on a token go */
            pthread_cond_broadcast(&s.cv);
        pthread_mutex_unlock(&s.mu);
        pthread_join(feeder, NULL);
        CHECK(rc == 0, "woken run %d: rc %d", run, rc);
        CHECK(!s.timed_out && s.consumed == TOKENS,
              "woken run %d: idle took %d of %d tokens (%s)", run, s.consumed, TOKENS,
              s.timed_out ? "the worker slept through the wakes" : "run ended early");
    }
}

int main(void)
{
    whole_runs();
    failures_stop();
    nothing_to_do();
    nothing_to_write();
    deferred_runs();
    deferred_failures();
    woken_runs();
    if (failures) {
        fprintf(stderr, "test_pipeline: %d failures\n", failures);
        return 1;
    }
    printf("test_pipeline: ok\n");
    return 0;
}
