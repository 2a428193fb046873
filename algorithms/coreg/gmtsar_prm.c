/*
 * gmtsar_prm.c -- GMTSAR PRM files: "name = value" lines, and the raw SLC
 * they describe (int16 I/Q pairs, num_rng_bins samples a line, num_valid_az
 * x num_patches lines, no header).  The one reader of PRM files: gdal_xcorr
 * -mode gmtsar and the GMTSAR GDAL driver both go through it.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "geogpu.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
}

int gg_gmtsar_prm_line(char *line, char **key, char **value)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return 0;
    *eq = 0;
    char *k = line, *v = eq + 1;
    while (*k == ' ' || *k == '\t')
        k++;
    trim_end(k);
    while (*v == ' ' || *v == '\t')
        v++;
    trim_end(v);
    if (!*k)
        return 0;
    *key = k;
    *value = v;
    return 1;
}

gg_status gg_gmtsar_prm_each(const char *path, gg_prm_entry_fn fn, void *user, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open PRM '%s': %s", path, strerror(errno));
        return GG_ERR_IO;
    }
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        char *key, *val;
        if (gg_gmtsar_prm_line(line, &key, &val) && fn(key, val, user))
            break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "cannot read PRM '%s'", path);
        return GG_ERR_IO;
    }
    return GG_OK;
}

/* ------------------------------------------------ the SLC's geometry */

typedef struct {
    gg_xcorr_prm *out;
    char bad[64];     /* a key whose integer is out of int's range */
    char input_file[1024];
    char dtype[16];
    int have_slc, have_w, have_az, have_lines, have_r, have_a;
    int npatch, naz, nlines, slc_format;
} prm_fields;

/* An int field as sscanf "%d" reads it (leading digits, the rest ignored),
 * but out of int's range is an error (the key), not sscanf's undefined
 * overflow. */
static int prm_int(prm_fields *p, const char *key, const char *s, int *v)
{
    char *end;
    errno = 0;
    const long l = strtol(s, &end, 10);
    if (end == s)
        return 0;
    if (errno == ERANGE || l < INT_MIN || l > INT_MAX) {
        snprintf(p->bad, sizeof p->bad, "%s", key);
        return 0;
    }
    *v = (int)l;
    return 1;
}

/* Later lines override earlier ones, as in GMTSAR's reader. */
static int take_field(const char *key, const char *val, void *user)
{
    prm_fields *p = user;
    gg_xcorr_prm *o = p->out;
    if (!strcmp(key, "SLC_file")) {
        snprintf(o->slc_file, sizeof o->slc_file, "%s", val);
        p->have_slc = val[0] != 0;
    } else if (!strcmp(key, "input_file"))
        snprintf(p->input_file, sizeof p->input_file, "%s", val);
    else if (!strcmp(key, "num_rng_bins"))
        p->have_w = prm_int(p, key, val, &o->width);
    else if (!strcmp(key, "num_valid_az"))
        p->have_az = prm_int(p, key, val, &p->naz);
    else if (!strcmp(key, "num_lines"))
        p->have_lines = prm_int(p, key, val, &p->nlines);
    else if (!strcmp(key, "num_patches"))
        prm_int(p, key, val, &p->npatch);
    else if (!strcmp(key, "PRF"))
        sscanf(val, "%lf", &o->prf);
    else if (!strcmp(key, "rshift") || !strcmp(key, "xshift")) /* xshift: GMTSAR's old name */
        p->have_r = prm_int(p, key, val, &o->rshift);
    else if (!strcmp(key, "ashift") || !strcmp(key, "yshift"))
        p->have_a = prm_int(p, key, val, &o->ashift);
    else if (!strcmp(key, "dtype"))
        snprintf(p->dtype, sizeof p->dtype, "%s", val);
    else if (!strcmp(key, "SLC_format"))
        prm_int(p, key, val, &p->slc_format);
    return 0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* name relative to the PRM's folder (absolute names as they are) into
 * buf; 0 when it does not fit. */
static int beside(const char *prm, const char *name, char *buf, size_t len)
{
    const char *slash = strrchr(prm, '/');
    const int n = name[0] == '/' || !slash
                      ? snprintf(buf, len, "%s", name)
                      : snprintf(buf, len, "%.*s/%s", (int)(slash - prm), prm, name);
    return n > 0 && (size_t)n < len;
}

static int ends_with_slc(const char *s)
{
    const size_t n = strlen(s);
    return n > 4 && !strcasecmp(s + n - 4, ".SLC");
}

/* The SLC of a PRM: SLC_file (beside the PRM, else as given: GMTSAR opens
 * it from the folder it runs in), else the PRM's name with .SLC (or .slc),
 * else an input_file naming a .SLC.  0 after the error. */
static int find_slc(const char *path, prm_fields *p, char *err, size_t errlen)
{
    gg_xcorr_prm *o = p->out;
    char cand[sizeof o->slc_file];
    if (p->have_slc) {
        if (beside(path, o->slc_file, cand, sizeof cand) && is_file(cand)) {
            memcpy(o->slc_file, cand, sizeof cand);
            return 1;
        }
        if (is_file(o->slc_file))
            return 1;
    }
    /* the PRM's own name with .SLC, as GMTSAR names the pair */
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    const int stem = dot && (!slash || dot > slash) ? (int)(dot - path) : (int)strlen(path);
    static const char *const ext[2] = {".SLC", ".slc"};
    for (int k = 0; k < 2; k++) {
        const int n = snprintf(cand, sizeof cand, "%.*s%s", stem, path, ext[k]);
        if (n > 0 && (size_t)n < sizeof cand && is_file(cand)) {
            memcpy(o->slc_file, cand, sizeof cand);
            return 1;
        }
    }
    if (!p->have_slc && p->input_file[0] && ends_with_slc(p->input_file) &&
        beside(path, p->input_file, cand, sizeof cand) && is_file(cand)) {
        memcpy(o->slc_file, cand, sizeof cand);
        return 1;
    }
    if (p->have_slc)
        snprintf(err, errlen, "SLC_file '%s' of PRM '%s' not found (looked beside the PRM, in "
                 "the current folder and for '%.*s.SLC')", o->slc_file, path, stem, path);
    else
        snprintf(err, errlen, "PRM '%s' has no SLC_file and there is no '%.*s.SLC' beside it",
                 path, stem, path);
    return 0;
}

gg_status gg_xcorr_prm_read(const char *path, gg_xcorr_prm *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    prm_fields p;
    memset(&p, 0, sizeof p);
    p.out = out;
    p.npatch = 1;
    gg_status st = gg_gmtsar_prm_each(path, take_field, &p, err, errlen);
    if (st != GG_OK)
        return st;
    if (p.bad[0]) {
        snprintf(err, errlen, "PRM '%s': %s is not an integer in int's range", path, p.bad);
        return GG_ERR_ARGUMENT;
    }
    out->has_shift = p.have_r && p.have_a;
    /* dtype a (SCOMPLEX) / SLC_format 1: int16 I/Q, what GMTSAR's
     * preprocessors write; float I/Q (dtype c, SLC_format 2) is not read */
    if (p.dtype[0] && strcmp(p.dtype, "a")) {
        snprintf(err, errlen, "PRM '%s': dtype %s is not supported, only int16 I/Q SLCs (dtype a)",
                 path, p.dtype);
        return GG_ERR_UNSUPPORTED;
    }
    if (p.slc_format && p.slc_format != 1) {
        snprintf(err, errlen, "PRM '%s': SLC_format %d is not supported, only int16 I/Q SLCs "
                 "(SLC_format 1)", path, p.slc_format);
        return GG_ERR_UNSUPPORTED;
    }
    /* lines: num_valid_az x num_patches (GMTSAR's SLC), num_lines when
     * there is no num_valid_az */
    if (!p.have_az && p.have_lines) {
        p.naz = p.nlines;
        p.npatch = 1;
        p.have_az = 1;
    }
    if (!p.have_w || !p.have_az || out->width < 1 || p.naz < 1) {
        snprintf(err, errlen, "PRM '%s' lacks num_rng_bins or num_valid_az (a positive count "
                 "of samples per line and of lines)", path);
        return GG_ERR_ARGUMENT;
    }
    /* in int: checked before the product */
    if (p.npatch < 1 || (long long)p.naz * p.npatch > 2147483647LL) {
        snprintf(err, errlen, "PRM '%s': num_patches %d x num_valid_az %d is not a line count "
                 "(1..2147483647)", path, p.npatch, p.naz);
        return GG_ERR_ARGUMENT;
    }
    out->height = p.naz * p.npatch;
    /* PRF enters the azimuth stretch (aligned - master) / master: finite */
    if (!(out->prf >= 0 && out->prf <= 1e12)) {
        snprintf(err, errlen, "PRM '%s': PRF %g is not a rate in Hz", path, out->prf);
        return GG_ERR_ARGUMENT;
    }
    /* a shift past the image leaves no overlap (and would overflow the
     * patch positions) */
    if (out->has_shift && (out->rshift < -out->width || out->rshift > out->width ||
                           out->ashift < -out->height || out->ashift > out->height)) {
        snprintf(err, errlen, "PRM '%s': rshift %d / ashift %d exceed the %d x %d image", path,
                 out->rshift, out->ashift, out->width, out->height);
        return GG_ERR_ARGUMENT;
    }
    if (!find_slc(path, &p, err, errlen))
        return GG_ERR_IO;
    FILE *s = fopen(out->slc_file, "rb");
    if (!s) {
        snprintf(err, errlen, "cannot open SLC_file '%s' of '%s': %s", out->slc_file, path,
                 strerror(errno));
        return GG_ERR_IO;
    }
    fseeko(s, 0, SEEK_END);
    const long long size = (long long)ftello(s);
    fclose(s);
    /* in double first: 4 x width x height may pass long long's range */
    const double needf = 4.0 * out->width * out->height;
    const long long need = needf < 9e18 ? 4LL * out->width * out->height : LLONG_MAX;
    if (size < need) {
        snprintf(err, errlen, "SLC_file '%s' of '%s' is truncated: %lld bytes, %d x %d int16 I/Q "
                 "needs %lld", out->slc_file, path, size, out->width, out->height, need);
        return GG_ERR_IO;
    }
    return GG_OK;
}
