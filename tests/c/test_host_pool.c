/* test_host_pool.c -- gpu/host_pool.c: every part of a loop runs exactly
 * once, loops run on several threads, callers racing for the pool all
 * finish (the busy one runs its parts itself).
 *
 *     ctest --test-dir build -R test_host_pool
 */
#include "../../gpu/host_pool.h"
#include "check.h"

#include <pthread.h>
#include <time.h>

#define PARTS_MAX 4096

typedef struct loop {
    int runs[PARTS_MAX];      /* times each part ran */
    long value[PARTS_MAX];    /* what each part computed */
    pthread_t who[PARTS_MAX]; /* which thread ran it */
} loop;

static void square(void *arg, int k)
{
    loop *l = (loop *)arg;
    __atomic_fetch_add(&l->runs[k], 1, __ATOMIC_RELAXED);
    l->value[k] = (long)k * k + 7;
    l->who[k] = pthread_self();
}

static int check_loop(const loop *l, int parts)
{
    int bad = 0;
    for (int k = 0; k < parts; k++)
        bad += l->runs[k] != 1 || l->value[k] != (long)k * k + 7;
    return bad;
}

/* Part 0 waits (2 s at most) until another thread has run some part: the
 * loop is shared only if helpers take parts while the caller is busy. */
typedef struct shared_loop {
    pthread_t caller;
    int others;
} shared_loop;

static void wait_for_helper(void *arg, int k)
{
    shared_loop *s = (shared_loop *)arg;
    if (!pthread_equal(pthread_self(), s->caller))
        __atomic_fetch_add(&s->others, 1, __ATOMIC_RELAXED);
    if (k != 0)
        return;
    for (int i = 0; i < 2000 && !__atomic_load_n(&s->others, __ATOMIC_RELAXED); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void *racer(void *arg)
{
    int *bad = (int *)arg;
    static __thread loop l;
    for (int i = 0; i < 200; i++) {
        const int parts = 1 + (i * 37) % 64;
        memset(&l, 0, sizeof l);
        gg_pool_run(1 + i % 6, parts, square, &l);
        *bad += check_loop(&l, parts);
    }
    return NULL;
}

int main(void)
{
    static loop l;
    /* every part once, whatever the thread count */
    const int sizes[][2] = {{8, 1000}, {2, 3}, {16, 16}, {32, PARTS_MAX}, {1, 50}, {5, 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memset(&l, 0, sizeof l);
        gg_pool_run(sizes[i][0], sizes[i][1], square, &l);
        CHECK(check_loop(&l, sizes[i][1]) == 0, "%d threads, %d parts: a part did not run once",
              sizes[i][0], sizes[i][1]);
    }
    /* no parts: nothing runs, nothing hangs */
    memset(&l, 0, sizeof l);
    gg_pool_run(4, 0, square, &l);
    CHECK(l.runs[0] == 0, "a loop of no parts ran part 0");
    /* one thread: every part on the caller */
    memset(&l, 0, sizeof l);
    gg_pool_run(1, 20, square, &l);
    int mine = 0;
    for (int k = 0; k < 20; k++)
        mine += pthread_equal(l.who[k], pthread_self()) != 0;
    CHECK(mine == 20, "threads 1: %d of 20 parts on the caller", mine);
    /* several threads: helpers take parts while the caller is busy */
    if (gg_pool_processors() >= 2) {
        shared_loop s = {pthread_self(), 0};
        gg_pool_run(4, 8, wait_for_helper, &s);
        CHECK(s.others > 0, "no helper thread ran a part in 2 s");
    }
    /* callers racing: one gets the pool, the others run their own parts */
    pthread_t th[4];
    int bad[4] = {0};
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&th[i], NULL, racer, &bad[i]) == 0, "cannot start racer %d", i);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(bad[i] == 0, "racer %d: %d parts did not run once", i, bad[i]);
    }
    CHECK(gg_pool_processors() >= 1, "processors %d", gg_pool_processors());
    return check_summary("test_host_pool");
}
