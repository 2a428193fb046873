/*
 * gg_ortho_source_map.c -- a scene's source mapped from the page cache and
 * registered for uploads (see gg_ortho_source_map.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_source_map.h"
#include "gg_raw_rows.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

struct ggo_source_map {
    char *path;
    gg_context *ctx;          /* registered through it (NULL: not yet) */
    pthread_t th;
    int joined;
    /* set by the thread */
    void *base;               /* the mapping, page-aligned */
    size_t len;
    const unsigned char *rows; /* row 0 inside it */
    size_t row_bytes;
    int width, height;        /* of the file's one band, of type `type` */
    GDALDataType type;
    int registered;
    double seconds;
};

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every page of [p, p + n) in memory? */
static int resident(void *p, size_t n, size_t page)
{
    const size_t pages = (n + page - 1) / page;
    unsigned char *vec = malloc(pages ? pages : 1);
    if (!vec || mincore(p, n, vec) != 0) {
        free(vec);
        return 0;
    }
    size_t in = 0;
    for (size_t i = 0; i < pages; i++)
        in += vec[i] & 1;
    free(vec);
    return in == pages;
}

static void unmap(ggo_source_map *m)
{
    if (m->base)
        munmap(m->base, m->len);
    m->base = NULL;
    m->rows = NULL;
}

/* Layout (its own GDAL handle: the scene's is its set-up thread's),
 * mapping, residency, registration. */
static void *map_main(void *arg)
{
    ggo_source_map *m = arg;
    const double t0 = wall();
    unsigned long long offset = 0;
    size_t row_bytes = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH ds = GDALOpenEx(m->path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (ds && GDALGetRasterCount(ds) == 1) {
        m->width = GDALGetRasterXSize(ds);
        m->height = GDALGetRasterYSize(ds);
        m->type = GDALGetRasterDataType(GDALGetRasterBand(ds, 1));
    }
    const int lies = m->width > 0 && gg_raw_rows_find(ds, m->type, &offset, &row_bytes) &&
                     row_bytes == (size_t)m->width * (size_t)GDALGetDataTypeSizeBytes(m->type);
    if (ds)
        GDALClose(ds);
    CPLPopErrorHandler();
    const int fd = lies ? open(m->path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const unsigned long long end = offset + (unsigned long long)m->height * row_bytes;
    if (fd >= 0 && fstat(fd, &st) == 0 && (unsigned long long)st.st_size >= end &&
        end <= (unsigned long long)SIZE_MAX) {
        const unsigned long long start = offset / page * page;
        m->len = (size_t)(end - start);
        m->base = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, (off_t)start);
        if (m->base == MAP_FAILED)
            m->base = NULL;
        if (m->base) {
            m->rows = (const unsigned char *)m->base + (offset - start);
            m->row_bytes = row_bytes;
        }
    }
    if (fd >= 0)
        close(fd); /* the mapping keeps the file */
    /* from the page cache only: a file still on disk is read faster by the
     * readers, which overlap reading with the device */
    if (m->base && !resident(m->base, m->len, page))
        unmap(m);
    if (m->base) {
        (void)madvise(m->base, m->len, MADV_POPULATE_READ); /* page tables, before pinning */
        if (m->ctx) {
            m->registered = gg_host_register(m->ctx, m->base, m->len) == GG_OK;
            if (!m->registered)
                unmap(m);
        }
    }
    m->seconds = wall() - t0;
    return NULL;
}

ggo_source_map *ggo_source_map_begin(const char *path, gg_context *ctx)
{
    if (!path || !CPLTestBool(CPLGetConfigOption("GG_RAW_READS", "YES")))
        return NULL;
    ggo_source_map *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    m->ctx = ctx;
    if (pthread_create(&m->th, NULL, map_main, m) != 0) {
        free(m->path);
        free(m);
        return NULL;
    }
    return m;
}

static void join(ggo_source_map *m)
{
    if (!m->joined) {
        pthread_join(m->th, NULL);
        m->joined = 1;
    }
}

const unsigned char *ggo_source_map_rows(ggo_source_map *m, gg_context *ctx, int width,
                                         int height, GDALDataType type, size_t *row_bytes,
                                         double *seconds)
{
    if (!m)
        return NULL;
    join(m);
    if (m->width != width || m->height != height || m->type != type)
        return NULL; /* not the rows the scene reads (a type it converts) */
    if (m->base && !m->registered && ctx) {
        const double t0 = wall();
        m->registered = gg_host_register(ctx, m->base, m->len) == GG_OK;
        m->ctx = ctx;
        m->seconds += wall() - t0;
        if (!m->registered)
            unmap(m);
    }
    if (!m->registered)
        return NULL;
    *row_bytes = m->row_bytes;
    *seconds = m->seconds;
    return m->rows;
}

void ggo_source_map_end(ggo_source_map *m)
{
    if (!m)
        return;
    join(m);
    if (m->registered)
        gg_host_unregister(m->ctx, m->base);
    unmap(m);
    free(m->path);
    free(m);
}
