/*
 * rng.h -- the random numbers of gg_make_input and bench_kernels: splitmix64, a counter-based
 * generator, so that rows can be filled in parallel and the data does not
 * depend on the thread count.
 *
 * MIT licence.
 */
#ifndef GG_TESTS_RNG_H
#define GG_TESTS_RNG_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in (0, 1) */
static inline double u01(uint64_t *s)
{
    *s += 1;
    return ((double)(mix64(*s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

#endif
