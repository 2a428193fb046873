/*
 * test_pipeline.c -- the read -> device -> write pipeline (gdal/gg_pipeline.h)
 * on its own: every item read, computed and written once, in that order,
 * writes in item order, item k on worker k % workers, at most `slots`
 * items in flight, and a failing stage or a stopping progress ending the
 * run with nothing after it.  Stages sleep random short times so that the
 * threads interleave differently from run to run.
 *
 * MIT licence.
 */
#include "gg_pipeline.h"

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

static void nothing_to_do(void)
{
    state s = {.fail_read = -1, .fail_compute = -1, .fail_write = -1, .stop_after = -1};
    pthread_mutex_init(&s.mu, NULL);
    CHECK(run(&s, 0, 3, 1, 1, 1) == 0 && s.nwritten == 0, "no items");
    pthread_mutex_destroy(&s.mu);
}

int main(void)
{
    whole_runs();
    failures_stop();
    nothing_to_do();
    if (failures) {
        fprintf(stderr, "test_pipeline: %d failures\n", failures);
        return 1;
    }
    printf("test_pipeline: ok\n");
    return 0;
}
