/*
 * fault.c -- test-only fault injection.
 *
 * GG_FAULT="<kind>:<N>[,<kind>:<N>...]" makes the N-th call (1-based,
 * counted over the whole process) of each named kind fail, so that tests
 * can check every error path: a clean message, no partial output, no leak.
 * Kinds: alloc (device allocation), launch (kernel launch), transfer
 * (host<->device copy), fft (FFT execution), read (a GDAL read of an input
 * block), write (a GDAL write of an output block), commit (putting one
 * file of an output transaction in place), hostalloc (a host allocation
 * of the ortho scene set-up).  The library checks the first four; the
 * GDAL layer the last four.  Without GG_FAULT this is one
 * load of a flag per call.
 *
 * MIT licence.
 */
#include "fault.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {"alloc", "launch", "transfer", "fft", "read", "write",
                                     "commit", "hostalloc"};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int armed;
static long target[NKINDS];            /* N of each kind, 0 = never */
static long counter[NKINDS];           /* calls so far (atomic) */

static void parse(void)
{
    const char *spec = getenv("GG_FAULT");
    if (!spec || !*spec)
        return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon)
            continue;
        *colon = '\0';
        const long n = strtol(colon + 1, NULL, 10);
        for (size_t k = 0; k < NKINDS; k++)
            if (!strcmp(tok, kinds[k]) && n > 0) {
                target[k] = n;
                armed = 1;
            }
    }
}

int gg_fault_point(const char *kind)
{
    pthread_once(&once, parse);
    if (!armed || !kind)
        return 0;
    for (size_t k = 0; k < NKINDS; k++)
        if (!strcmp(kind, kinds[k]))
            return target[k] && __atomic_add_fetch(&counter[k], 1, __ATOMIC_SEQ_CST) == target[k];
    return 0;
}
