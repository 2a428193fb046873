/*
 * gg_tiff_strips.c -- a TIFF's strip table from its first IFD (see
 * geogpu_gdal.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu_gdal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_ROWS_PER_STRIP = 278, TAG_STRIP_OFFSETS = 273, TAG_STRIP_BYTE_COUNTS = 279 };
enum { TYPE_SHORT = 3, TYPE_LONG = 4, TYPE_LONG8 = 16 };

#define MAX_STRIPS (1u << 28) /* far above any image GDAL writes in strips */

static int say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* All n bytes at off, or 0. */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        const ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        done += (size_t)r;
    }
    return 1;
}

typedef struct {
    int big_endian; /* "MM" (else "II"), whatever this machine's order */
} order;

/* An unsigned integer of `bytes` bytes at p, in the file's byte order. */
static uint64_t get(const order *o, const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) /* most significant byte first */
        v = (v << 8) | p[o->big_endian ? i : bytes - 1 - i];
    return v;
}

typedef struct {
    uint16_t type;
    uint64_t count;
    uint64_t value_or_offset; /* the inline bytes' offset in the file when inline */
    int present;
} entry;

/* The array of `e` (SHORT, LONG or LONG8) as uint64 into out (e->count). */
static int read_array(int fd, uint64_t fsize, const order *o, const entry *e, uint64_t *out,
                      char *why, size_t whylen)
{
    const int sz = e->type == TYPE_SHORT ? 2 : e->type == TYPE_LONG ? 4 : 8;
    const uint64_t bytes = e->count * (uint64_t)sz;
    if (bytes > fsize || e->value_or_offset > fsize - bytes)
        return say(why, whylen, "a strip array lies outside the file");
    unsigned char *buf = malloc((size_t)bytes ? (size_t)bytes : 1);
    if (!buf)
        return say(why, whylen, "out of memory");
    if (!read_at(fd, buf, (size_t)bytes, e->value_or_offset)) {
        free(buf);
        return say(why, whylen, "cannot read a strip array");
    }
    for (uint64_t i = 0; i < e->count; i++)
        out[i] = get(o, buf + i * (uint64_t)sz, sz);
    free(buf);
    return 0;
}

static int read_strips(int fd, uint64_t fsize, gg_tiff_strips *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    unsigned char h[16];
    if (fsize < 8 || !read_at(fd, h, fsize < 16 ? 8 : 16, 0))
        return say(why, whylen, "too short for a TIFF");
    order o;
    if (h[0] == 'I' && h[1] == 'I')
        o.big_endian = 0;
    else if (h[0] == 'M' && h[1] == 'M')
        o.big_endian = 1;
    else
        return say(why, whylen, "not a TIFF");
    const uint64_t version = get(&o, h + 2, 2);
    const int big = version == 43;
    if (version != 42 && !(big && fsize >= 16 && get(&o, h + 4, 2) == 8 && get(&o, h + 6, 2) == 0))
        return say(why, whylen, "not a TIFF or BigTIFF header");
    const uint64_t ifd = big ? get(&o, h + 8, 8) : get(&o, h + 4, 4);
    const int nsz = big ? 8 : 2, esz = big ? 20 : 12, vsz = big ? 8 : 4;
    unsigned char nb[8];
    if (ifd < 8 || ifd > fsize - (uint64_t)nsz || !read_at(fd, nb, (size_t)nsz, ifd))
        return say(why, whylen, "the first IFD lies outside the file");
    const uint64_t nent = get(&o, nb, nsz);
    if (nent == 0 || nent > 4096 || nent * (uint64_t)esz > fsize - ifd - (uint64_t)nsz)
        return say(why, whylen, "the first IFD has %llu entries", (unsigned long long)nent);
    unsigned char *ents = malloc((size_t)(nent * (uint64_t)esz));
    if (!ents)
        return say(why, whylen, "out of memory");
    if (!read_at(fd, ents, (size_t)(nent * (uint64_t)esz), ifd + (uint64_t)nsz)) {
        free(ents);
        return say(why, whylen, "cannot read the first IFD");
    }
    entry so = {0}, sc = {0}, rps = {0};
    for (uint64_t i = 0; i < nent; i++) {
        const unsigned char *p = ents + i * (uint64_t)esz;
        const uint16_t tag = (uint16_t)get(&o, p, 2);
        entry *e = tag == TAG_STRIP_OFFSETS       ? &so
                   : tag == TAG_STRIP_BYTE_COUNTS ? &sc
                   : tag == TAG_ROWS_PER_STRIP    ? &rps
                                                  : NULL;
        if (!e)
            continue;
        e->present = 1;
        e->type = (uint16_t)get(&o, p + 2, 2);
        e->count = get(&o, p + 4, big ? 8 : 4);
        const int sz = e->type == TYPE_SHORT ? 2 : e->type == TYPE_LONG ? 4
                       : e->type == TYPE_LONG8 ? 8 : 0;
        if (!sz || e->count == 0 || e->count > MAX_STRIPS) {
            free(ents);
            return say(why, whylen, "tag %u: type %u, count %llu", tag, e->type,
                       (unsigned long long)e->count);
        }
        const unsigned char *v = p + 4 + (big ? 8 : 4);
        /* values that fit in the entry lie in it: their file offset */
        e->value_or_offset = e->count * (uint64_t)sz <= (uint64_t)vsz
                                 ? ifd + (uint64_t)nsz + i * (uint64_t)esz + (uint64_t)(esz - vsz)
                                 : get(&o, v, vsz);
    }
    free(ents);
    if (!so.present || !sc.present)
        return say(why, whylen, "no strips (a tiled TIFF?)");
    if (so.count != sc.count)
        return say(why, whylen, "%llu strip offsets for %llu byte counts",
                   (unsigned long long)so.count, (unsigned long long)sc.count);
    out->n = (uint32_t)so.count;
    out->rows_per_strip = 0xFFFFFFFFu;
    if (rps.present) {
        uint64_t r = 0;
        if (rps.count != 1)
            return say(why, whylen, "RowsPerStrip has %llu values", (unsigned long long)rps.count);
        if (read_array(fd, fsize, &o, &rps, &r, why, whylen))
            return 1;
        if (r == 0)
            return say(why, whylen, "RowsPerStrip is 0");
        out->rows_per_strip = r > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)r;
    }
    out->offsets = malloc(sizeof(uint64_t) * out->n);
    out->counts = malloc(sizeof(uint64_t) * out->n);
    if (!out->offsets || !out->counts) {
        gg_tiff_strips_free(out);
        return say(why, whylen, "out of memory");
    }
    if (read_array(fd, fsize, &o, &so, out->offsets, why, whylen) ||
        read_array(fd, fsize, &o, &sc, out->counts, why, whylen)) {
        gg_tiff_strips_free(out);
        return 1;
    }
    return 0;
}

gg_status gg_tiff_strips_read(int fd, uint64_t fsize, gg_tiff_strips *out, char *why,
                              size_t whylen)
{
    return read_strips(fd, fsize, out, why, whylen) ? GG_ERR_UNSUPPORTED : GG_OK;
}

void gg_tiff_strips_free(gg_tiff_strips *s)
{
    if (!s)
        return;
    free(s->offsets);
    free(s->counts);
    s->offsets = s->counts = NULL;
    s->n = 0;
}
