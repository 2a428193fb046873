/*
 * gg_output.c -- temporary names, commit by rename, removal on failure and
 * on SIGINT/SIGTERM/SIGHUP (gg_output.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_output.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Temporaries a signal must remove.  The handler may run at any moment on
 * any thread, so it reads fixed buffers and a flag per slot, and calls
 * unlink() alone (async-signal-safe). */
enum { TRACKED = 64 };
static char tracked_path[TRACKED][PATH_MAX];
static char tracked_aux[TRACKED][PATH_MAX + 8];
static volatile sig_atomic_t tracked_used[TRACKED];
static pthread_mutex_t tracked_lock = PTHREAD_MUTEX_INITIALIZER;

static void track(const char *path)
{
    const size_t n = strlen(path);
    if (n + 9 > PATH_MAX)
        return; /* too long to track: removed on failure only */
    pthread_mutex_lock(&tracked_lock);
    for (int i = 0; i < TRACKED; i++)
        if (!tracked_used[i]) {
            memcpy(tracked_path[i], path, n + 1);
            memcpy(tracked_aux[i], path, n);
            memcpy(tracked_aux[i] + n, ".aux.xml", 9);
            tracked_used[i] = 1;
            break;
        }
    pthread_mutex_unlock(&tracked_lock);
}

static void untrack(const char *path)
{
    pthread_mutex_lock(&tracked_lock);
    for (int i = 0; i < TRACKED; i++)
        if (tracked_used[i] && !strcmp(tracked_path[i], path)) {
            tracked_used[i] = 0;
            break;
        }
    pthread_mutex_unlock(&tracked_lock);
}

static void on_signal(int sig)
{
    for (int i = 0; i < TRACKED; i++)
        if (tracked_used[i]) {
            unlink(tracked_path[i]);
            unlink(tracked_aux[i]);
        }
    signal(sig, SIG_DFL);
    raise(sig);
}

void gg_output_catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        struct sigaction old;
        if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue; /* ignored (nohup) or someone else's handler: keep it */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[k], &sa, NULL);
    }
}

char *gg_output_temporary_name(const char *dst)
{
    const char *ext = CPLGetExtension(dst);
    char *name = CPLStrdup(CPLSPrintf(".%s.tmp%ld%s%s", CPLGetBasename(dst), (long)getpid(),
                                      *ext ? "." : "", ext));
    char *path = CPLStrdup(CPLFormFilename(CPLGetPath(dst), name, NULL));
    CPLFree(name);
    track(path);
    return path;
}

static int exists(const char *path)
{
    VSIStatBufL st;
    return VSIStatL(path, &st) == 0;
}

void gg_output_discard(GDALDriverH drv, const char *tmp)
{
    CPLPushErrorHandler(CPLQuietErrorHandler);
    if (drv && exists(tmp))
        GDALDeleteDataset(drv, tmp);
    if (exists(tmp))
        VSIUnlink(tmp);
    const char *aux = CPLSPrintf("%s.aux.xml", tmp);
    if (exists(aux))
        VSIUnlink(aux);
    CPLPopErrorHandler();
    untrack(tmp);
}

int gg_output_commit(GDALDriverH drv, const char *tmp, const char *dst, int single_file,
                     char *err, size_t errlen)
{
    if (exists(dst) && !single_file) {
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALDriverH old = GDALIdentifyDriver(dst, NULL);
        if (old)
            GDALDeleteDataset(old, dst);
        CPLPopErrorHandler();
        if (exists(dst) && VSIUnlink(dst) != 0) {
            snprintf(err, errlen, "cannot replace the existing '%s'", dst);
            return 1;
        }
    }
    const int ok = single_file ? VSIRename(tmp, dst) == 0
                               : GDALRenameDataset(drv, dst, tmp) == CE_None;
    if (!ok) {
        snprintf(err, errlen, "cannot rename '%s' to '%s'", tmp, dst);
        return 1;
    }
    untrack(tmp);
    return 0;
}
