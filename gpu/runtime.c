/*
 * runtime.c -- contexts, device selection, backend loading, device memory,
 * the FFT plan cache and the error model.
 */
#define _GNU_SOURCE
#include "runtime.h"
#include "fault.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GG_FFT_CACHE 16

typedef struct fft_entry {
    int rank, n0, n1, batch;
    void *plan;
} fft_entry;

struct gg_buffer {
    gg_mem *mem;
    size_t bytes;
};

struct gg_context {
    const gg_backend *vt;
    gg_dev *dev;
    char notice[GG_ERRLEN * 2];
    char err[GG_ERRLEN * 2];
    size_t mem_cap; /* GG_DEVICE_MEMORY, 0 = none */
    fft_entry fft[GG_FFT_CACHE];
    int fft_next;
    gg_buffer *scratch[GG_SCRATCH_SLOTS];
    const void *pipeline_owner; /* the op with asynchronous runs in flight */
    /* how the device was opened, so that gg_context_sibling opens it again */
    int open_i0, open_i1, open_gpu_only;
    gg_context *sibling; /* gg_context_sibling's, destroyed with this one */
};

/* ------------------------------------------------------------- messages */

const char *gg_version(void) { return GG_VERSION_STRING; }

const char *gg_status_string(gg_status s)
{
    switch (s) {
    case GG_OK: return "success";
    case GG_ERR_ARGUMENT: return "invalid argument";
    case GG_ERR_NOMEM: return "out of memory";
    case GG_ERR_DEVICE: return "device error";
    case GG_ERR_UNAVAILABLE: return "device unavailable";
    case GG_ERR_UNSUPPORTED: return "unsupported";
    case GG_ERR_IO: return "I/O error";
    case GG_ERR_CANCELLED: return "cancelled";
    case GG_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

size_t gg_type_size(gg_type t)
{
    switch (t) {
    case GG_FLOAT32: return 4;
    case GG_CFLOAT32: return 8;
    case GG_BYTE: return 1;
    case GG_UINT16: return 2;
    case GG_INT16: return 2;
    }
    return 0;
}

gg_status gg_rt_fail(gg_context *ctx, gg_status s, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
    }
    return s;
}

gg_status gg_rt_check(gg_context *ctx, int rc, const char *what)
{
    if (rc == GGB_OK)
        return GG_OK;
    gg_status s = (gg_status)rc;
    if (rc < 0 || rc > GG_ERR_INTERNAL)
        s = GG_ERR_DEVICE;
    return gg_rt_fail(ctx, s, "%s: %s", what, ctx->dev->err[0] ? ctx->dev->err : gg_status_string(s));
}

const gg_backend *gg_rt_vt(const gg_context *ctx) { return ctx->vt; }
gg_dev *gg_rt_dev(const gg_context *ctx) { return ctx->dev; }
gg_mem *gg_rt_mem(const gg_buffer *b) { return b->mem; }

const char *gg_context_backend(const gg_context *ctx) { return ctx ? ctx->vt->name : ""; }
const char *gg_context_device_name(const gg_context *ctx) { return ctx ? ctx->dev->name : ""; }
const char *gg_context_notice(const gg_context *ctx) { return ctx ? ctx->notice : ""; }
const char *gg_context_last_error(const gg_context *ctx) { return ctx ? ctx->err : ""; }

/* ------------------------------------------------------- backend loading */

/* The GPU backends are separate shared objects so that a machine without
 * CUDA or OpenCL still loads libgeogpu (and GDAL its plugin).  They are
 * looked for next to libgeogpu first, then on the loader's path. */
static const gg_backend *load_backend(const char *name, char *why, size_t whylen)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static const gg_backend *cache[2];
    static char cache_why[2][GG_ERRLEN];
    static int tried[2];
    const int k = strcmp(name, "cuda") == 0 ? 0 : 1;
    pthread_mutex_lock(&lock);
    if (!tried[k]) {
        tried[k] = 1;
        char file[64], path[PATH_MAX], sym[64];
        snprintf(file, sizeof file, "libgeogpu_%s.so", name);
        snprintf(sym, sizeof sym, "gg_backend_%s_entry", name);
        void *h = NULL;
        /* GG_BACKEND_DIR, then libgeogpu's own folder (and ../lib from a
         * bin/ folder, for programs linking the internal static library) */
        const char *envdir = getenv("GG_BACKEND_DIR");
        if (envdir && *envdir) {
            snprintf(path, sizeof path, "%s/%s", envdir, file);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
        Dl_info info;
        if (!h && dladdr((void *)&load_backend, &info) && info.dli_fname) {
            const char *slash = strrchr(info.dli_fname, '/');
            if (slash) {
                const int dlen = (int)(slash - info.dli_fname);
                snprintf(path, sizeof path, "%.*s/%s", dlen, info.dli_fname, file);
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                    snprintf(path, sizeof path, "%.*s/../lib/%s", dlen, info.dli_fname, file);
                    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                }
            }
        }
        if (!h)
            h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *e = dlerror();
            snprintf(cache_why[k], GG_ERRLEN, "%s backend not available (%s)", name,
                     e ? e : "not found");
        } else {
            gg_backend_entry_fn fn = (gg_backend_entry_fn)dlsym(h, sym);
            const gg_backend *vt = fn ? fn() : NULL;
            if (!vt || vt->abi != GG_BACKEND_ABI) {
                snprintf(cache_why[k], GG_ERRLEN, "%s backend in %s is incompatible", name, file);
                dlclose(h);
            } else {
                cache[k] = vt;
            }
        }
    }
    const gg_backend *vt = cache[k];
    if (!vt && why)
        snprintf(why, whylen, "%s", cache_why[k]);
    pthread_mutex_unlock(&lock);
    return vt;
}

/* ------------------------------------------------------ device selection */

/* Parses "cpu", "cuda[:N]", "opencl[:P[:D]]", "auto" into a kind and
 * indices; returns 0 on a malformed spec. */
static int parse_device(const char *spec, char kind[16], int *i0, int *i1)
{
    *i0 = -1;
    *i1 = -1;
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (klen == 0 || klen >= 16)
        return 0;
    memcpy(kind, spec, klen);
    kind[klen] = 0;
    for (char *c = kind; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    int maxidx = !strcmp(kind, "cuda") ? 1 : !strcmp(kind, "opencl") ? 2 : 0;
    if (strcmp(kind, "cpu") && strcmp(kind, "auto") && !maxidx)
        return 0;
    int *dst[2] = {i0, i1};
    int n = 0;
    while (colon) {
        if (n >= maxidx)
            return 0;
        char *end;
        errno = 0;
        long v = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || errno || v < 0 || v > 4096 || (*end && *end != ':'))
            return 0;
        *dst[n++] = (int)v;
        colon = *end == ':' ? end : NULL;
    }
    return 1;
}

gg_status gg_device_check(const char *device, char *err, size_t errlen)
{
    char kind[16];
    int i0, i1;
    if (device && parse_device(device, kind, &i0, &i1))
        return GG_OK;
    if (err)
        snprintf(err, errlen, "unknown device '%s' (expected auto, cpu, cuda[:N] or opencl[:P[:D]])",
                 device ? device : "");
    return GG_ERR_ARGUMENT;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0)) /* also NaN */
        return 0;
    while (*end == ' ')
        end++;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; break;
    case 'm': case 'M': mul = 1024.0 * 1024; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
    default: break;
    }
    const double b = v * mul; /* "1e30", "inf": the cast needs a size_t's range */
    return b < 18446744073709551616.0 ? (size_t)b : (size_t)-1;
}

static gg_status open_on(gg_context *ctx, const gg_backend *vt, int i0, int i1, int gpu_only,
                         char *why, size_t whylen)
{
    gg_dev *dev = NULL;
    int rc = vt->open(i0, i1, gpu_only, &dev, why, whylen);
    if (rc != GGB_OK || !dev)
        return rc == GGB_OK ? GG_ERR_UNAVAILABLE : (gg_status)rc;
    ctx->vt = vt;
    ctx->dev = dev;
    ctx->open_i0 = i0;
    ctx->open_i1 = i1;
    ctx->open_gpu_only = gpu_only;
    return GG_OK;
}

gg_status gg_context_create(const char *device, gg_context **out, char *err, size_t errlen)
{
    if (!out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    if (!device || !*device)
        device = getenv("GG_DEVICE");
    if (!device || !*device)
        device = "auto";
    char kind[16];
    int i0, i1;
    if (gg_device_check(device, err, errlen) != GG_OK)
        return GG_ERR_ARGUMENT;
    parse_device(device, kind, &i0, &i1);
    gg_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        if (err)
            snprintf(err, errlen, "out of memory");
        return GG_ERR_NOMEM;
    }
    const char *cap = getenv("GG_DEVICE_MEMORY");
    if (cap && *cap)
        ctx->mem_cap = parse_size(cap);

    char why[GG_ERRLEN] = "";
    gg_status s = GG_ERR_UNAVAILABLE;
    if (!strcmp(kind, "cpu")) {
        s = open_on(ctx, gg_backend_cpu_entry(), -1, -1, 0, why, sizeof why);
    } else if (!strcmp(kind, "cuda") || !strcmp(kind, "opencl")) {
        const gg_backend *vt = load_backend(kind, why, sizeof why);
        if (vt)
            s = open_on(ctx, vt, i0, i1, 0, why, sizeof why);
    } else { /* auto: first CUDA device, else first OpenCL GPU, else CPU */
        char why_cuda[GG_ERRLEN] = "", why_ocl[GG_ERRLEN] = "";
        const gg_backend *vt = load_backend("cuda", why_cuda, sizeof why_cuda);
        if (vt)
            s = open_on(ctx, vt, -1, -1, 1, why_cuda, sizeof why_cuda);
        if (s != GG_OK) {
            vt = load_backend("opencl", why_ocl, sizeof why_ocl);
            if (vt)
                s = open_on(ctx, vt, -1, -1, 1, why_ocl, sizeof why_ocl);
        }
        if (s != GG_OK) {
            s = open_on(ctx, gg_backend_cpu_entry(), -1, -1, 0, why, sizeof why);
            if (s == GG_OK)
                snprintf(ctx->notice, sizeof ctx->notice,
                         "geogpu: no GPU device found, using the CPU (%.400s; %.400s)", why_cuda,
                         why_ocl);
        }
    }
    if (s != GG_OK) {
        if (err)
            snprintf(err, errlen, "cannot start device '%.64s': %s", device,
                     why[0] ? why : gg_status_string(s));
        free(ctx);
        return s == GG_ERR_ARGUMENT ? GG_ERR_ARGUMENT : GG_ERR_UNAVAILABLE;
    }
    *out = ctx;
    return GG_OK;
}

/* One lock for every context's first gg_context_sibling call: rare, and
 * it keeps two threads from opening two siblings for one context. */
static pthread_mutex_t sibling_mu = PTHREAD_MUTEX_INITIALIZER;

gg_status gg_context_sibling(gg_context *ctx, gg_context **out)
{
    if (!ctx || !out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    pthread_mutex_lock(&sibling_mu);
    gg_status s = GG_OK;
    if (!ctx->sibling) {
        gg_context *sib = calloc(1, sizeof *sib);
        char why[GG_ERRLEN] = "";
        s = sib ? open_on(sib, ctx->vt, ctx->open_i0, ctx->open_i1, ctx->open_gpu_only, why,
                          sizeof why)
                : GG_ERR_NOMEM;
        if (s == GG_OK) {
            sib->mem_cap = ctx->mem_cap;
            ctx->sibling = sib;
        } else {
            free(sib);
            gg_rt_fail(ctx, s, "cannot open a second context on the device: %s",
                       why[0] ? why : gg_status_string(s));
        }
    }
    *out = ctx->sibling;
    pthread_mutex_unlock(&sibling_mu);
    return s;
}

void gg_context_destroy(gg_context *ctx)
{
    if (!ctx)
        return;
    gg_context_destroy(ctx->sibling);
    for (int i = 0; i < GG_FFT_CACHE; i++)
        if (ctx->fft[i].plan)
            ctx->vt->fft_destroy(ctx->dev, ctx->fft[i].plan);
    for (int i = 0; i < GG_SCRATCH_SLOTS; i++)
        gg_buffer_free(ctx, ctx->scratch[i]);
    ctx->vt->close(ctx->dev);
    free(ctx);
}

gg_status gg_context_memory(gg_context *ctx, size_t *free_bytes, size_t *total_bytes)
{
    size_t f = 0, t = 0;
    gg_status s = gg_rt_check(ctx, ctx->vt->mem_info(ctx->dev, &f, &t), "memory query");
    if (s != GG_OK)
        return s;
    if (ctx->mem_cap) {
        if (t > ctx->mem_cap)
            t = ctx->mem_cap;
        if (f > ctx->mem_cap)
            f = ctx->mem_cap;
    }
    if (free_bytes)
        *free_bytes = f;
    if (total_bytes)
        *total_bytes = t;
    return GG_OK;
}

gg_status gg_host_alloc(gg_context *ctx, size_t bytes, void **out)
{
    if (!ctx || !out)
        return GG_ERR_ARGUMENT;
    *out = NULL;
    return gg_rt_check(ctx, ctx->vt->host_alloc(ctx->dev, bytes, out), "host memory");
}

void gg_host_free(gg_context *ctx, void *p)
{
    if (ctx && p)
        ctx->vt->host_free(ctx->dev, p);
}

gg_status gg_host_register(gg_context *ctx, void *p, size_t bytes, int flags)
{
    if (!ctx || !p || !bytes || (flags & ~GG_HOST_READ_ONLY))
        return GG_ERR_ARGUMENT;
    if (!ctx->vt->host_register)
        return gg_rt_fail(ctx, GG_ERR_UNSUPPORTED,
                          "registering host memory: not supported by the %s backend",
                          ctx->vt->name);
    return gg_rt_check(ctx,
                       ctx->vt->host_register(ctx->dev, p, bytes, (flags & GG_HOST_READ_ONLY) != 0),
                       "registering host memory");
}

void gg_host_unregister(gg_context *ctx, void *p)
{
    if (ctx && p && ctx->vt->host_unregister)
        ctx->vt->host_unregister(ctx->dev, p);
}

gg_status gg_list_devices(char *buf, size_t buflen)
{
    if (!buf || !buflen)
        return GG_ERR_ARGUMENT;
    buf[0] = 0;
    size_t used = 0;
    const gg_backend *vts[3] = {gg_backend_cpu_entry(), load_backend("cuda", NULL, 0),
                                load_backend("opencl", NULL, 0)};
    for (int i = 0; i < 3; i++) {
        if (!vts[i] || used + 1 >= buflen)
            continue;
        vts[i]->list(buf + used, buflen - used);
        used = strlen(buf);
    }
    return GG_OK;
}

/* ------------------------------------------------------------ memory */

gg_status gg_buffer_alloc(gg_context *ctx, size_t bytes, gg_buffer **out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 4;
    if (gg_fault_point("alloc"))
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "device allocation: injected fault (GG_FAULT)");
    gg_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return gg_rt_fail(ctx, GG_ERR_NOMEM, "out of host memory");
    gg_status s = gg_rt_check(ctx, ctx->vt->alloc(ctx->dev, bytes, &b->mem), "device allocation");
    if (s != GG_OK) {
        free(b);
        return s;
    }
    b->bytes = bytes;
    *out = b;
    return GG_OK;
}

void gg_buffer_free(gg_context *ctx, gg_buffer *b)
{
    if (!b)
        return;
    ctx->vt->free(ctx->dev, b->mem);
    free(b);
}

gg_status gg_buffer_write(gg_context *ctx, gg_buffer *dst, size_t off, const void *src, size_t n)
{
    if (off > dst->bytes || n > dst->bytes - off)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "write of %zu bytes at %zu past a %zu-byte buffer",
                          n, off, dst->bytes);
    if (gg_fault_point("transfer"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "host to device copy: injected fault (GG_FAULT)");
    return gg_rt_check(ctx, ctx->vt->write2d(ctx->dev, dst->mem, off, n, src, n, n, 1),
                       "host to device copy");
}

gg_status gg_buffer_read(gg_context *ctx, const gg_buffer *src, size_t off, void *dst, size_t n)
{
    if (off > src->bytes || n > src->bytes - off)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "read of %zu bytes at %zu past a %zu-byte buffer",
                          n, off, src->bytes);
    if (gg_fault_point("transfer"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "device to host copy: injected fault (GG_FAULT)");
    return gg_rt_check(ctx, ctx->vt->read2d(ctx->dev, src->mem, off, n, dst, n, n, 1),
                       "device to host copy");
}

gg_status gg_rt_scratch(gg_context *ctx, int slot, size_t bytes, gg_buffer **out)
{
    if (slot < 0 || slot >= GG_SCRATCH_SLOTS)
        return gg_rt_fail(ctx, GG_ERR_INTERNAL, "scratch slot %d out of range", slot);
    gg_buffer *b = ctx->scratch[slot];
    if (!b || b->bytes < bytes) {
        gg_buffer_free(ctx, b);
        ctx->scratch[slot] = NULL;
        gg_status s = gg_buffer_alloc(ctx, bytes, &ctx->scratch[slot]);
        if (s != GG_OK)
            return s;
    }
    *out = ctx->scratch[slot];
    return GG_OK;
}

/* An upload on the main queue (blocking), or (async) queued on the copy
 * queue after mark `after`, reaching mark `done`: that one is queued even
 * when empty, so that the mark is reached. */
static gg_status write_tile(gg_context *ctx, gg_buffer *b, size_t offset, size_t dev_pitch,
                            const gg_tile *t, int async, int after, int done)
{
    const size_t es = gg_type_size(t->type), row = (size_t)t->width * es;
    if (!async && (row == 0 || t->height == 0))
        return GG_OK;
    if (gg_fault_point("transfer"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "host to device copy: injected fault (GG_FAULT)");
    const size_t pitch = dev_pitch ? dev_pitch : row, hpitch = t->stride * es;
    const int rc = async ? ctx->vt->write2d_async(ctx->dev, b->mem, offset, pitch, t->data,
                                                  hpitch, row, (size_t)t->height, after, done)
                         : ctx->vt->write2d(ctx->dev, b->mem, offset, pitch, t->data, hpitch,
                                            row, (size_t)t->height);
    return gg_rt_check(ctx, rc, "host to device copy");
}

gg_status gg_rt_write_tile(gg_context *ctx, gg_buffer *b, size_t offset, size_t dev_pitch,
                           const gg_tile *t)
{
    return write_tile(ctx, b, offset, dev_pitch, t, 0, -1, -1);
}

/* A download on the main queue (after < 0), or on the copy queue once the
 * main queue has reached mark `after`. */
static gg_status read_tile(gg_context *ctx, const gg_buffer *b, size_t offset, size_t dev_pitch,
                           gg_tile *t, int after)
{
    const size_t es = gg_type_size(t->type), row = (size_t)t->width * es;
    if (row == 0 || t->height == 0)
        return GG_OK;
    if (gg_fault_point("transfer"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "device to host copy: injected fault (GG_FAULT)");
    const size_t pitch = dev_pitch ? dev_pitch : row, hpitch = t->stride * es;
    const int rc = after < 0 ? ctx->vt->read2d(ctx->dev, b->mem, offset, pitch, t->data, hpitch,
                                               row, (size_t)t->height)
                             : ctx->vt->read2d_after(ctx->dev, b->mem, offset, pitch, t->data,
                                                     hpitch, row, (size_t)t->height, after);
    return gg_rt_check(ctx, rc, "device to host copy");
}

gg_status gg_rt_read_tile(gg_context *ctx, const gg_buffer *b, size_t offset, size_t dev_pitch,
                          gg_tile *t)
{
    return read_tile(ctx, b, offset, dev_pitch, t, -1);
}

gg_status gg_rt_upload_tile(gg_context *ctx, int slot, const gg_tile *t, gg_buffer **out)
{
    const size_t row = (size_t)t->width * gg_type_size(t->type);
    gg_status s = gg_rt_scratch(ctx, slot, row * (size_t)t->height, out);
    return s != GG_OK ? s : gg_rt_write_tile(ctx, *out, 0, 0, t);
}

gg_status gg_rt_download_tile(gg_context *ctx, const gg_buffer *b, gg_tile *t)
{
    const size_t row = (size_t)t->width * gg_type_size(t->type);
    if (row * (size_t)t->height > b->bytes)
        return gg_rt_fail(ctx, GG_ERR_INTERNAL, "tile larger than its device buffer");
    return gg_rt_read_tile(ctx, b, 0, 0, t);
}

gg_status gg_rt_fill_float(gg_context *ctx, gg_buffer *b, size_t offset, float v, size_t count)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return gg_rt_check(ctx, ctx->vt->fill32(ctx->dev, b->mem, offset, bits, count * 4),
                       "fill");
}

gg_status gg_rt_launch(gg_context *ctx, int kernel, int nx, int ny, const void *params,
                       size_t params_size, gg_buffer *const *bufs, int nbufs)
{
    gg_mem *mems[8];
    if (nbufs > 8)
        return gg_rt_fail(ctx, GG_ERR_INTERNAL, "too many kernel buffers");
    for (int i = 0; i < nbufs; i++)
        mems[i] = bufs[i]->mem;
    if (gg_fault_point("launch"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "kernel launch: injected fault (GG_FAULT)");
    return gg_rt_check(ctx, ctx->vt->launch(ctx->dev, kernel, nx, ny, params, params_size, mems, nbufs),
                       "kernel launch");
}

int gg_rt_can_overlap(const gg_context *ctx)
{
    return ctx->vt->write2d_async && ctx->vt->read2d_after && ctx->vt->mark &&
           ctx->vt->wait_mark;
}

gg_status gg_rt_write_tile_async(gg_context *ctx, gg_buffer *b, size_t offset, size_t dev_pitch,
                                 const gg_tile *t, int after, int done)
{
    return write_tile(ctx, b, offset, dev_pitch, t, gg_rt_can_overlap(ctx), after, done);
}

gg_status gg_rt_read_tile_after(gg_context *ctx, const gg_buffer *b, size_t offset,
                                size_t dev_pitch, gg_tile *t, int after)
{
    return read_tile(ctx, b, offset, dev_pitch, t, gg_rt_can_overlap(ctx) ? after : -1);
}

gg_status gg_rt_mark(gg_context *ctx, int m)
{
    return gg_rt_can_overlap(ctx) ? gg_rt_check(ctx, ctx->vt->mark(ctx->dev, m), "device mark")
                                  : GG_OK;
}

gg_status gg_rt_wait_mark(gg_context *ctx, int m)
{
    return gg_rt_can_overlap(ctx)
               ? gg_rt_check(ctx, ctx->vt->wait_mark(ctx->dev, m), "device mark wait")
               : GG_OK;
}

gg_status gg_rt_copy(gg_context *ctx, gg_buffer *dst, size_t dst_offset, const gg_buffer *src,
                     size_t src_offset, size_t bytes)
{
    return gg_rt_check(ctx,
                       ctx->vt->copy(ctx->dev, dst->mem, dst_offset, src->mem, src_offset, bytes),
                       "device copy");
}

const void *gg_rt_pipeline_owner(const gg_context *ctx) { return ctx->pipeline_owner; }

void gg_rt_set_pipeline_owner(gg_context *ctx, const void *owner) { ctx->pipeline_owner = owner; }

gg_status gg_rt_finish(gg_context *ctx)
{
    return gg_rt_check(ctx, ctx->vt->finish(ctx->dev), "device");
}

/* ---------------------------------------------------------------- FFT */

gg_status gg_fft(gg_context *ctx, gg_buffer *data, int rank, const int *n, int batch, int inverse)
{
    if ((rank != 1 && rank != 2) || !n || batch < 1 || n[0] < 1 || (rank == 2 && n[1] < 1))
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "FFT shape must be rank 1 or 2 with positive sizes");
    const int n1 = rank == 2 ? n[1] : 1;
    const double need = 8.0 * n[0] * (double)n1 * batch;
    if (need > (double)data->bytes)
        return gg_rt_fail(ctx, GG_ERR_ARGUMENT, "FFT of %.0f bytes on a %zu-byte buffer", need,
                          data->bytes);
    fft_entry *e = NULL;
    for (int i = 0; i < GG_FFT_CACHE; i++) {
        fft_entry *c = &ctx->fft[i];
        if (c->plan && c->rank == rank && c->n0 == n[0] && c->n1 == n1 && c->batch == batch) {
            e = c;
            break;
        }
    }
    if (!e) { /* evict round-robin */
        e = &ctx->fft[ctx->fft_next];
        ctx->fft_next = (ctx->fft_next + 1) % GG_FFT_CACHE;
        if (e->plan)
            ctx->vt->fft_destroy(ctx->dev, e->plan);
        e->plan = NULL;
        gg_status s = gg_rt_check(ctx, ctx->vt->fft_plan(ctx->dev, rank, n, batch, &e->plan),
                                  "FFT plan");
        if (s != GG_OK)
            return s;
        e->rank = rank;
        e->n0 = n[0];
        e->n1 = n1;
        e->batch = batch;
    }
    if (gg_fault_point("fft"))
        return gg_rt_fail(ctx, GG_ERR_DEVICE, "FFT: injected fault (GG_FAULT)");
    return gg_rt_check(ctx, ctx->vt->fft_exec(ctx->dev, e->plan, data->mem, inverse), "FFT");
}
