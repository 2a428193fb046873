/*
 * gg_device_start.h -- a device started on a thread of its own while the
 * caller reads options and inputs: a GPU's start (driver, context, FFT
 * modules: about 0.2 s on an H200) is most of the fixed cost of a short
 * run, and nothing before the first computation needs the device itself.
 * Used by gdal_ortho, gdal_warp, gdal_xcorr -mode gmtsar and the processed
 * datasets of the image utilities (gg_processed.h).
 *
 * MIT licence.
 */
#ifndef GG_DEVICE_START_H
#define GG_DEVICE_START_H

#include "geogpu.h"

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gg_device_start {
    pthread_t th;
    pthread_mutex_t mu;
    int joinable;        /* the starting thread is still to be joined */
    const char *device;  /* as gg_context_create takes it */
    gg_status status;
    gg_context *ctx;
    char error[1024];    /* why the device could not start (never empty then) */
} gg_device_start;

/* Starts creating the context of device (gg_context_create's names;
 * the string must outlive the start) on a new thread; where no thread can
 * be started, creates it here. */
void gg_device_start_begin(gg_device_start *d, const char *device);

/* A start that starts nothing: the caller's context (NULL: none, and
 * gg_device_start_wait answers NULL). */
void gg_device_start_given(gg_device_start *d, gg_context *ctx);

/* The context once started (from any thread; the first call waits), or
 * NULL when the device could not start: d->error says why. */
gg_context *gg_device_start_wait(gg_device_start *d);

/* Waits for the start and frees what the starter holds; the context too
 * unless keep (the caller then owns it). */
void gg_device_start_end(gg_device_start *d, int keep);

#ifdef __cplusplus
}
#endif
#endif
