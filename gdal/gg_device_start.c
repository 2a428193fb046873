/*
 * gg_device_start.c -- a device started on its own thread (gg_device_start.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_device_start.h"

#include <stdio.h>
#include <string.h>

static void *start_main(void *arg)
{
    gg_device_start *d = arg;
    pthread_setname_np(pthread_self(), "gg-dev-start");
    d->status = gg_context_create(d->device, &d->ctx, d->error, sizeof d->error);
    if (d->status != GG_OK && !d->error[0]) /* always a reason to print */
        snprintf(d->error, sizeof d->error, "%s", gg_status_string(d->status));
    return NULL;
}

void gg_device_start_begin(gg_device_start *d, const char *device)
{
    memset(d, 0, sizeof *d);
    d->device = device;
    pthread_mutex_init(&d->mu, NULL);
    d->joinable = pthread_create(&d->th, NULL, start_main, d) == 0;
    if (!d->joinable)
        start_main(d);
}

void gg_device_start_given(gg_device_start *d, gg_context *ctx)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    d->ctx = ctx;
    d->status = ctx ? GG_OK : GG_ERR_UNAVAILABLE;
}

gg_context *gg_device_start_wait(gg_device_start *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->joinable) {
        pthread_join(d->th, NULL);
        d->joinable = 0;
    }
    pthread_mutex_unlock(&d->mu);
    return d->status == GG_OK ? d->ctx : NULL;
}

void gg_device_start_end(gg_device_start *d, int keep)
{
    gg_context *ctx = gg_device_start_wait(d);
    if (ctx && !keep)
        gg_context_destroy(ctx);
    d->ctx = NULL;
    pthread_mutex_destroy(&d->mu);
}
