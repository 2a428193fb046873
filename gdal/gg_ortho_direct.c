/*
 * gg_ortho_direct.c -- direct pixel I/O of uncompressed striped GeoTIFFs:
 * the writer of outputs, the reader of sources (see gg_ortho_direct.h).
 *
 * Why: gdal_ortho's pipeline (readers, device, writer) was bound by the
 * one writer thread pushing 1.27 GB through GDAL's block cache and libtiff
 * a strip at a time (~1.5 GB/s).  Here the writer issues a few large
 * pwrite()s per block of output rows at the offsets GDAL allocated, split
 * over several threads (each also converting its rows when the file is
 * pixel-interleaved or of the other byte order).  pwrite reports a full
 * disk or an I/O error as an error return, never as a signal, so failures
 * stay one clean line.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_direct.h"
#include "geogpu_gdal.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ggo_direct {
    int fd;
    int width, height, nbands, ts;
    int pixel;            /* pixel-interleaved: one plane of nbands samples per pixel */
    int nplanes;          /* 1 (pixel) or nbands (band interleaved) */
    int rps, nstrips;     /* rows per strip, strips per plane */
    int swap;             /* file byte order differs from the host's */
    int nthreads;
    uint64_t *off;        /* nplanes x nstrips strip offsets */
    void *scratch;        /* converted rows (pixel interleave, byte swap) */
    size_t scratch_size;
    char desc[160];
};

static int say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return 1;
}

int ggo_direct_eligible(const char *format, char **co, const char *path, int has_nodata,
                        double nodata, char *why, size_t whylen)
{
    if (format && !EQUAL(format, "GTiff"))
        return !say(why, whylen, "format %s", format);
    if (STARTS_WITH_CI(path, "/vsi"))
        return !say(why, whylen, "a GDAL virtual file system path");
    const char *c = CSLFetchNameValue(co, "COMPRESS");
    if (c && !EQUAL(c, "NONE"))
        return !say(why, whylen, "COMPRESS=%s", c);
    if (CPLTestBool(CSLFetchNameValueDef(co, "TILED", "NO")))
        return !say(why, whylen, "tiled output");
    if (CPLTestBool(CSLFetchNameValueDef(co, "SPARSE_OK", "NO")))
        return !say(why, whylen, "SPARSE_OK=TRUE (strips not allocated)");
    if (CSLFetchNameValue(co, "NBITS"))
        return !say(why, whylen, "NBITS");
    if (CPLTestBool(CSLFetchNameValueDef(co, "STREAMABLE_OUTPUT", "NO")))
        return !say(why, whylen, "STREAMABLE_OUTPUT");
    /* GDAL fills unwritten strips with the nodata value when the file is
     * closed: with 0 (or none) it just extends the file, with anything else
     * it would write the whole image once before we do */
    if (has_nodata && nodata != 0.0)
        return !say(why, whylen, "nonzero nodata value %g", nodata);
    return 1;
}

static const char *tiff_item(GDALRasterBandH b, const char *key)
{
    return GDALGetMetadataItem(b, key, "TIFF");
}

/* The layout of the file at path (strip table, interleave, byte order)
 * checked against width x height x nbands of type; the file opened for
 * writing (pwrite) or reading (pread).  0, or 1 with why. */
static int open_layout(const char *path, int width, int height, int nbands, GDALDataType type,
                       int writing, ggo_direct **out, char *why, size_t whylen)
{
    *out = NULL;
    VSIStatBufL st;
    if (VSIStatL(path, &st) != 0)
        return say(why, whylen, "cannot stat %s", path);
    const uint64_t fsize = (uint64_t)st.st_size;
    char *const drivers[] = {"GTiff", NULL};
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY,
                                 (const char *const *)drivers, NULL, NULL);
    if (!ds)
        return say(why, whylen, "GDAL cannot open %s as a GeoTIFF",
                   writing ? "the created file again" : "it");
    ggo_direct *d = calloc(1, sizeof *d);
    int rc = 0;
    if (!d) {
        GDALClose(ds);
        return say(why, whylen, "out of memory");
    }
    d->fd = -1;
    d->width = width;
    d->height = height;
    d->nbands = nbands;
    d->ts = GDALGetDataTypeSizeBytes(type);
    GDALRasterBandH b1 = GDALGetRasterBand(ds, 1);
    const char *comp = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
    const char *il = GDALGetMetadataItem(ds, "INTERLEAVE", "IMAGE_STRUCTURE");
    int bx = 0, by = 0;
    if (b1)
        GDALGetBlockSize(b1, &bx, &by);
    if (GDALGetRasterXSize(ds) != width || GDALGetRasterYSize(ds) != height ||
        GDALGetRasterCount(ds) != nbands || !b1 || GDALGetRasterDataType(b1) != type)
        rc = say(why, whylen, "the file has another size, band count or type");
    else if (comp && !EQUAL(comp, "NONE"))
        rc = say(why, whylen, "compression %s", comp);
    else if (GDALGetMetadataItem(b1, "NBITS", "IMAGE_STRUCTURE"))
        rc = say(why, whylen, "NBITS");
    else if (bx != width || by < 1)
        rc = say(why, whylen, "not a striped layout (blocks %d x %d)", bx, by);
    else if (nbands > 1 && !(il && (EQUAL(il, "PIXEL") || EQUAL(il, "BAND"))))
        rc = say(why, whylen, "interleave %s", il ? il : "unknown");
    if (!rc) {
        d->pixel = nbands == 1 || EQUAL(il, "PIXEL");
        d->nplanes = d->pixel ? 1 : nbands;
        d->rps = by;
        d->nstrips = (height + by - 1) / by;
        d->off = malloc(sizeof(uint64_t) * (size_t)d->nplanes * (size_t)d->nstrips);
        if (!d->off)
            rc = say(why, whylen, "out of memory");
    }
    const uint64_t rowbytes = (uint64_t)width * d->ts * (d->pixel ? nbands : 1);
    /* the strip table in a few reads of the file (GDAL's BLOCK_OFFSET_0_<j>
     * items cost a call a strip: geogpu_gdal.h); planes one after the
     * other, as GDAL numbers a band-interleaved file's strips */
    gg_tiff_strips t = {0};
    if (!rc) {
        char tw[160] = "";
        const int tfd = open(path, O_RDONLY | O_CLOEXEC);
        if (tfd < 0 || gg_tiff_strips_read(tfd, fsize, &t, tw, sizeof tw))
            rc = say(why, whylen, "strip table: %s", tfd < 0 ? strerror(errno) : tw);
        else if (t.n != (uint64_t)d->nplanes * (uint64_t)d->nstrips ||
                 (d->nstrips > 1 ? t.rows_per_strip != (uint32_t)by
                                 : t.rows_per_strip < (uint32_t)height))
            rc = say(why, whylen, "a strip table of %u strips of %u rows", t.n,
                     t.rows_per_strip);
        if (tfd >= 0)
            close(tfd);
    }
    for (int p = 0; !rc && p < d->nplanes; p++) {
        for (int j = 0; !rc && j < d->nstrips; j++) {
            const size_t k = (size_t)p * d->nstrips + j;
            const int rows = j + 1 < d->nstrips ? by : height - j * by;
            const uint64_t o = t.offsets[k], n = t.counts[k];
            /* every strip allocated, of exactly its rows' bytes, inside the
             * file */
            if (o == 0 || n != rowbytes * (uint64_t)rows || o > fsize || n > fsize - o)
                rc = say(why, whylen, "strip %d of band %d not allocated as expected", j, p + 1);
            else
                d->off[k] = o;
        }
        /* the table is the image GDAL sees: its first and last strips agree */
        GDALRasterBandH b = GDALGetRasterBand(ds, p + 1);
        for (int e = 0; !rc && e < 2; e++) {
            const int j = e ? d->nstrips - 1 : 0;
            char key[64];
            snprintf(key, sizeof key, "BLOCK_OFFSET_0_%d", j);
            const char *so = tiff_item(b, key);
            if (!so || strtoull(so, NULL, 10) != d->off[(size_t)p * d->nstrips + j])
                rc = say(why, whylen, "the strip table is not the image GDAL reads");
        }
    }
    gg_tiff_strips_free(&t);
    GDALClose(ds);
    if (!rc) {
        /* byte order of the file: "II" little endian, "MM" big endian */
        unsigned char hdr[2] = {0, 0};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        const ssize_t got = fd >= 0 ? pread(fd, hdr, 2, 0) : -1;
        if (fd >= 0)
            close(fd);
        const uint16_t one = 1;
        const int host_le = *(const unsigned char *)&one == 1;
        if (got != 2 || !((hdr[0] == 'I' && hdr[1] == 'I') || (hdr[0] == 'M' && hdr[1] == 'M')))
            rc = say(why, whylen, "not a TIFF header");
        else
            d->swap = (hdr[0] == 'I') != host_le && d->ts > 1;
    }
    if (!rc) {
        d->fd = open(path, (writing ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        if (d->fd < 0)
            rc = say(why, whylen, "cannot open %s for %s: %s", path,
                     writing ? "writing" : "reading", strerror(errno));
    }
    if (rc) {
        if (d->fd >= 0)
            close(d->fd);
        free(d->off);
        free(d);
        return 1;
    }
    *out = d;
    return 0;
}

int ggo_direct_open(const char *path, int width, int height, int nbands, GDALDataType type,
                    ggo_direct **out, char *why, size_t whylen)
{
    if (open_layout(path, width, height, nbands, type, 1, out, why, whylen))
        return 1;
    ggo_direct *d = *out;
    /* Buffered writes into one file are serialised by the kernel (the
     * inode's lock): threads pay off only when they convert rows
     * (interleave, byte swap) before writing.  Plain planes: one thread
     * (H200 host, 8192^2 UInt16 scene: 0.040-0.043 s against 0.051-0.068 s
     * with four; bench/RESULTS.md, session 15).  The pixels' range is not
     * allocated first (fallocate): no batch was faster with it (sessions
     * 22, 25 and 26). */
    const long procs = sysconf(_SC_NPROCESSORS_ONLN);
    d->nthreads = !(d->swap || (d->pixel && nbands > 1)) ? 1 : procs < 8 ? 2 : 4;
    snprintf(d->desc, sizeof d->desc, "%d strips of %d rows%s%s, %s, %d thread%s", d->nstrips,
             d->rps, nbands > 1 ? (d->pixel ? ", pixel-interleaved" : ", band-interleaved") : "",
             d->nplanes > 1 ? " planes" : "", d->swap ? "byte-swapped" : "native byte order",
             d->nthreads, d->nthreads > 1 ? "s" : "");
    return 0;
}

int ggo_direct_open_source(const char *path, int width, int height, int nbands,
                           GDALDataType type, ggo_direct **out, char *why, size_t whylen)
{
    *out = NULL;
    if (STARTS_WITH_CI(path, "/vsi"))
        return say(why, whylen, "a GDAL virtual file system path");
    if (open_layout(path, width, height, nbands, type, 0, out, why, whylen))
        return 1;
    ggo_direct *d = *out;
    /* rows go into band planes as they lie in the file: no conversion */
    const char *no = d->swap ? "the other byte order"
                     : d->pixel && nbands > 1 ? "pixel-interleaved bands" : NULL;
    if (no) {
        close(d->fd);
        free(d->off);
        free(d);
        *out = NULL;
        return say(why, whylen, "%s", no);
    }
    snprintf(d->desc, sizeof d->desc, "%d strips of %d rows%s, read as they lie", d->nstrips,
             d->rps, nbands > 1 ? ", band-interleaved" : "");
    return 0;
}

const char *ggo_direct_describe(const ggo_direct *d)
{
    return d ? d->desc : "";
}

/* ------------------------------------------------------------- writing */

typedef struct job {
    ggo_direct *d;
    int y0, rows;          /* the block */
    int r0, r1;            /* this thread's rows (absolute) */
    const unsigned char *planes;
    int err;               /* errno of the first failure */
    pthread_t th;
} job;

static void swap_copy(unsigned char *dst, const unsigned char *src, size_t n, int ts, int swap)
{
    if (!swap) {
        memcpy(dst, src, n * (size_t)ts);
        return;
    }
    if (ts == 2) {
        const uint16_t *s = (const uint16_t *)src;
        uint16_t *o = (uint16_t *)dst;
        for (size_t i = 0; i < n; i++)
            o[i] = __builtin_bswap16(s[i]);
    } else if (ts == 4) {
        const uint32_t *s = (const uint32_t *)src;
        uint32_t *o = (uint32_t *)dst;
        for (size_t i = 0; i < n; i++)
            o[i] = __builtin_bswap32(s[i]);
    } else if (ts == 8) {
        const uint64_t *s = (const uint64_t *)src;
        uint64_t *o = (uint64_t *)dst;
        for (size_t i = 0; i < n; i++)
            o[i] = __builtin_bswap64(s[i]);
    } else
        memcpy(dst, src, n * (size_t)ts);
}

/* Sample x of band k goes to o[x * nb + k] (pixel interleave). */
static void interleave(unsigned char *o, const unsigned char *s, size_t w, int nb, int k, int ts,
                       int swap)
{
    if (ts == 2) {
        uint16_t *out = (uint16_t *)o + k;
        const uint16_t *in = (const uint16_t *)s;
        for (size_t x = 0; x < w; x++)
            out[x * (size_t)nb] = swap ? __builtin_bswap16(in[x]) : in[x];
    } else if (ts == 4) {
        uint32_t *out = (uint32_t *)o + k;
        const uint32_t *in = (const uint32_t *)s;
        for (size_t x = 0; x < w; x++)
            out[x * (size_t)nb] = swap ? __builtin_bswap32(in[x]) : in[x];
    } else if (ts == 1) {
        for (size_t x = 0; x < w; x++)
            o[x * (size_t)nb + (size_t)k] = s[x];
    } else
        for (size_t x = 0; x < w; x++)
            swap_copy(o + (x * (size_t)nb + (size_t)k) * (size_t)ts, s + x * (size_t)ts, 1, ts,
                      swap);
}

/* pwrite (writing) or pread of all n bytes, through partial transfers and
 * EINTR; errno on failure; where nothing more moves, EIO for a write and
 * ENODATA for a read (past the file's end, told apart from a real EIO). */
static int io_all(int fd, unsigned char *p, size_t n, uint64_t off, int writing)
{
    while (n > 0) {
        const size_t want = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        const ssize_t k = writing ? pwrite(fd, p, want, (off_t)off) : pread(fd, p, want, (off_t)off);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return writing ? EIO : ENODATA;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* Rows [r0, r1) of plane p, to (writing) or from the memory rows that
 * start at mem (one row = rowbytes), strips that follow each other in the
 * file (and in memory) as one call. */
static int plane_rows(const ggo_direct *d, int p, int r0, int r1, unsigned char *mem,
                      size_t rowbytes, int writing)
{
    const uint64_t *off = d->off + (size_t)p * d->nstrips;
    uint64_t run_off = 0;
    unsigned char *run_mem = NULL;
    size_t run_len = 0;
    for (int j = r0 / d->rps; j <= (r1 - 1) / d->rps; j++) {
        const int s0 = j * d->rps;
        const int a = r0 > s0 ? r0 : s0, b = r1 < s0 + d->rps ? r1 : s0 + d->rps;
        const uint64_t fo = off[j] + (uint64_t)(a - s0) * rowbytes;
        unsigned char *m = mem + (size_t)(a - r0) * rowbytes;
        const size_t n = (size_t)(b - a) * rowbytes;
        if (run_len && run_off + run_len == fo && run_mem + run_len == m) {
            run_len += n;
            continue;
        }
        if (run_len) {
            const int e = io_all(d->fd, run_mem, run_len, run_off, writing);
            if (e)
                return e;
        }
        run_off = fo;
        run_mem = m;
        run_len = n;
    }
    if (!run_len)
        return 0;
    return io_all(d->fd, run_mem, run_len, run_off, writing);
}

/* The writer's rows come from the caller's planes (never written to). */
static int write_plane_rows(const ggo_direct *d, int p, int r0, int r1, const unsigned char *src,
                            size_t rowbytes)
{
    return plane_rows(d, p, r0, r1, (unsigned char *)src, rowbytes, 1);
}

static void *write_job(void *arg)
{
    job *jb = arg;
    ggo_direct *d = jb->d;
    const int n = jb->r1 - jb->r0;
    if (n <= 0)
        return NULL;
    const size_t ts = (size_t)d->ts, w = (size_t)d->width;
    const size_t plane = w * (size_t)jb->rows * ts; /* one band of the block in memory */
    if (d->pixel && d->nbands > 1) {
        /* interleave this thread's rows into its part of the scratch */
        const size_t rowbytes = w * ts * (size_t)d->nbands;
        unsigned char *dst = (unsigned char *)d->scratch + (size_t)(jb->r0 - jb->y0) * rowbytes;
        for (int r = 0; r < n; r++) {
            const size_t ro = (size_t)(jb->r0 - jb->y0 + r) * w * ts;
            unsigned char *o = dst + (size_t)r * rowbytes;
            for (int k = 0; k < d->nbands; k++)
                interleave(o, jb->planes + (size_t)k * plane + ro, w, d->nbands, k, (int)ts,
                           d->swap);
        }
        jb->err = write_plane_rows(d, 0, jb->r0, jb->r1, dst, rowbytes);
        return NULL;
    }
    const size_t rowbytes = w * ts;
    for (int k = 0; k < d->nbands && !jb->err; k++) {
        const unsigned char *src = jb->planes + (size_t)k * plane +
                                   (size_t)(jb->r0 - jb->y0) * rowbytes;
        if (d->swap) {
            unsigned char *s = (unsigned char *)d->scratch + (size_t)k * plane +
                               (size_t)(jb->r0 - jb->y0) * rowbytes;
            swap_copy(s, src, w * (size_t)n, (int)ts, 1);
            src = s;
        }
        /* pixel-interleaved single band and band-interleaved: plane k */
        jb->err = write_plane_rows(d, d->pixel ? 0 : k, jb->r0, jb->r1, src, rowbytes);
    }
    return NULL;
}

int ggo_direct_write(ggo_direct *d, int y0, int rows, const void *planes, char *err,
                     size_t errlen)
{
    if (rows <= 0)
        return 0;
    if (y0 < 0 || y0 + rows > d->height)
        return say(err, errlen, "rows %d..%d outside the output", y0, y0 + rows);
    if (d->swap || (d->pixel && d->nbands > 1)) {
        const size_t need = (size_t)d->width * (size_t)rows * (size_t)d->ts * (size_t)d->nbands;
        if (need > d->scratch_size) {
            free(d->scratch);
            d->scratch = malloc(need);
            d->scratch_size = d->scratch ? need : 0;
            if (!d->scratch)
                return say(err, errlen, "out of memory");
        }
    }
    /* rows split evenly over the threads (each writes whole rows) */
    int nt = d->nthreads < rows ? d->nthreads : rows;
    job jobs[32];
    for (int t = 0; t < nt; t++) {
        jobs[t].d = d;
        jobs[t].y0 = y0;
        jobs[t].rows = rows;
        jobs[t].r0 = y0 + (int)((long)rows * t / nt);
        jobs[t].r1 = y0 + (int)((long)rows * (t + 1) / nt);
        jobs[t].planes = planes;
        jobs[t].err = 0;
    }
    int started = 1;
    for (int t = 1; t < nt; t++, started++)
        if (pthread_create(&jobs[t].th, NULL, write_job, &jobs[t]) != 0)
            break;
    /* threads that could not start: their rows on this thread */
    for (int t = started; t < nt; t++)
        write_job(&jobs[t]);
    write_job(&jobs[0]);
    for (int t = 1; t < started; t++)
        pthread_join(jobs[t].th, NULL);
    for (int t = 0; t < nt; t++)
        if (jobs[t].err)
            return say(err, errlen, "%s", strerror(jobs[t].err));
    return 0;
}

int ggo_direct_read(const ggo_direct *d, int y0, int rows, void *buf, size_t band_space,
                    char *err, size_t errlen)
{
    if (rows <= 0)
        return 0;
    if (y0 < 0 || y0 + rows > d->height)
        return say(err, errlen, "rows %d..%d outside the source", y0, y0 + rows);
    const size_t rowbytes = (size_t)d->width * (size_t)d->ts;
    for (int k = 0; k < d->nplanes; k++) {
        const int e = plane_rows(d, k, y0, y0 + rows, (unsigned char *)buf + (size_t)k * band_space,
                                 rowbytes, 0);
        if (e)
            return say(err, errlen, "%s", e == ENODATA ? "the file ends before its strips do"
                                                   : strerror(e));
    }
    return 0;
}

int ggo_direct_close(ggo_direct *d, char *err, size_t errlen)
{
    if (!d)
        return 0;
    int rc = 0;
    if (d->fd >= 0 && close(d->fd) != 0)
        rc = say(err, errlen, "%s", strerror(errno));
    free(d->off);
    free(d->scratch);
    free(d);
    return rc;
}
