/*
 * gg_ortho_buffers.c -- kept host buffers of gdal_ortho's pipelines, some
 * page-locked (see gg_ortho_buffers.h).
 *
 * Two small tables under one mutex: the kept buffers, and the buffers
 * handed out (so that a buffer given back is known by its address alone:
 * its size, and the context it was page-locked through, if any).  A batch
 * holds a few hundred at most, so linear searches are fine.
 *
 * MIT licence.
 */
#include "gg_ortho_buffers.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct hbuf {
    void *p;
    size_t size;
    gg_context *pin; /* page-locked through this context; NULL: malloc */
} hbuf;

typedef struct table {
    hbuf *v;
    int n, cap;
} table;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static table kept, out;
static size_t kept_bytes, out_bytes, keep_limit = (size_t)1 << 30;

static int push(table *t, hbuf b)
{
    if (t->n == t->cap) {
        const int cap = t->cap ? 2 * t->cap : 64;
        hbuf *v = realloc(t->v, sizeof(hbuf) * (size_t)cap);
        if (!v)
            return 0;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = b;
    return 1;
}

static hbuf take(table *t, int i)
{
    const hbuf b = t->v[i];
    t->v[i] = t->v[--t->n];
    return b;
}

static void release_one(hbuf b)
{
    if (b.pin)
        gg_host_free(b.pin, b.p);
    else
        free(b.p);
}

void *ggo_buffer_get(gg_context *pin, size_t bytes)
{
    if (!bytes)
        bytes = 1;
    pthread_mutex_lock(&mu);
    for (int i = kept.n - 1; i >= 0; i--) {
        const hbuf k = kept.v[i];
        if (k.pin == pin && k.size >= bytes && k.size - bytes <= bytes / 4 && push(&out, k)) {
            take(&kept, i);
            kept_bytes -= k.size;
            out_bytes += k.size;
            pthread_mutex_unlock(&mu);
            return k.p;
        }
    }
    pthread_mutex_unlock(&mu);
    hbuf b = {NULL, bytes, NULL};
    if (pin && gg_host_alloc(pin, bytes, &b.p) == GG_OK && b.p)
        b.pin = pin;
    else
        b.p = malloc(bytes);
    if (!b.p)
        return NULL;
    pthread_mutex_lock(&mu);
    const int ok = push(&out, b);
    if (ok)
        out_bytes += b.size;
    pthread_mutex_unlock(&mu);
    if (!ok) { /* cannot track it: not handed out */
        release_one(b);
        return NULL;
    }
    return b.p;
}

void ggo_buffer_put(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&mu);
    int i = out.n - 1;
    while (i >= 0 && out.v[i].p != p)
        i--;
    if (i < 0) { /* not ours: a caller's bug, but never a free of a foreign pointer */
        pthread_mutex_unlock(&mu);
        return;
    }
    hbuf b = take(&out, i);
    out_bytes -= b.size;
    int keep = kept_bytes + b.size <= keep_limit && push(&kept, b);
    if (keep)
        kept_bytes += b.size;
    pthread_mutex_unlock(&mu);
    if (!keep)
        release_one(b);
}

void ggo_buffers_keep(size_t bytes)
{
    pthread_mutex_lock(&mu);
    keep_limit = bytes;
    pthread_mutex_unlock(&mu);
}

static void release_kept(gg_context *ctx, int all)
{
    pthread_mutex_lock(&mu);
    for (int i = kept.n - 1; i >= 0; i--)
        if (all || !kept.v[i].pin || kept.v[i].pin == ctx) {
            const hbuf b = take(&kept, i);
            kept_bytes -= b.size;
            release_one(b); /* under the lock: cudaFreeHost does not call back */
        }
    pthread_mutex_unlock(&mu);
}

void ggo_buffers_release(gg_context *ctx)
{
    release_kept(ctx, 0);
}

void ggo_buffers_release_all(void)
{
    release_kept(NULL, 1);
}
