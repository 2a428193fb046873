/* check.h -- a minimal test harness: CHECK records failures and goes on;
 * test_devices() lists the devices to test (GG_TEST_DEVICES, e.g.
 * "cpu,opencl"; unset: cpu plus every other backend that opens). */
#ifndef GG_TEST_CHECK_H
#define GG_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geogpu.h"

static int g_failures, g_checks;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        g_checks++;                                                           \
        if (!(cond)) {                                                        \
            g_failures++;                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
        }                                                                     \
    } while (0)

static int check_summary(const char *name)
{
    printf("%s: %d checks, %d failures\n", name, g_checks, g_failures);
    return g_failures ? 1 : 0;
}

/* Fills names[] with the devices to test; returns the count.  A device
 * named in GG_TEST_DEVICES that cannot start is a failure, not a skip. */
static inline int test_devices(char names[][32], int max)
{
    const char *env = getenv("GG_TEST_DEVICES");
    int n = 0;
    if (env && *env) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", env);
        for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ","))
            snprintf(names[n++], 32, "%s", tok);
        return n;
    }
    const char *all[] = {"cpu", "opencl", "cuda"};
    for (int i = 0; i < 3 && n < max; i++) {
        gg_context *c = NULL;
        char err[512];
        if (gg_context_create(all[i], &c, err, sizeof err) == GG_OK) {
            snprintf(names[n++], 32, "%s", all[i]);
            gg_context_destroy(c);
        } else {
            printf("skipping %s: %s\n", all[i], err);
        }
    }
    return n;
}

/* Deterministic pseudo-random numbers in [lo, hi) (xorshift). */
static unsigned long long g_rng = 0x9E3779B97F4A7C15ULL;
static inline double urand(double lo, double hi)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (double)(g_rng >> 11) / 9007199254740992.0;
}
#endif
