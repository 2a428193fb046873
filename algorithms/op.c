/*
 * op.c -- the operation registry and the generic op calls of geogpu.h.
 */
#define _GNU_SOURCE
#include "op.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const gg_op_class *const registry[] = {&gg_op_multilook, &gg_op_rotate, &gg_op_radnorm,
                                               &gg_op_coherence, &gg_op_ptsel, &gg_op_xcorr,
                                               &gg_op_resample};
#define NOPS (sizeof registry / sizeof registry[0])

static const char *const op_names[] = {"multilook", "rotate", "radnorm", "coherence", "ptsel", "xcorr", "resample", NULL};

const char *const *gg_op_names(void) { return op_names; }

static const gg_op_class *find_class(const char *name)
{
    for (size_t i = 0; name && i < NOPS; i++)
        if (!strcasecmp(registry[i]->name, name))
            return registry[i];
    return NULL;
}

int gg_op_input_count(const char *name)
{
    const gg_op_class *c = find_class(name);
    return c ? (c->inputs ? c->inputs : 1) : 0;
}

int gg_op_prefers_tiles(const gg_op *op) { return op ? op->cls->prefers_tiles : 0; }

const char *gg_op_description(const char *name)
{
    const gg_op_class *c = find_class(name);
    return c ? c->description : NULL;
}

/* Options every op takes (gg_op_set handles them itself). */
static const gg_option common_options[] = {
    {"srcnodata", "-srcnodata", GG_OPTION_FLOAT, -GG_UNBOUNDED, GG_UNBOUNDED, NULL, NULL,
     "input nodata value (default: the input band's)", 0},
    {"dstnodata", "-dstnodata", GG_OPTION_FLOAT, -GG_UNBOUNDED, GG_UNBOUNDED, NULL, NULL,
     "output nodata value (default: the input's, else NaN; 255 for Byte)", 0},
};
#define NCOMMON (int)(sizeof common_options / sizeof common_options[0])

const gg_option *gg_op_options(const char *name, int *count)
{
    /* per op: its own options then the common ones, built once */
    static gg_option tables[NOPS][GG_OP_MAX_OPTIONS];
    static int counts[NOPS];
    if (count)
        *count = 0;
    const gg_op_class *c = find_class(name);
    for (size_t i = 0; c && i < NOPS; i++)
        if (registry[i] == c) {
            if (!counts[i]) {
                int n = 0;
                for (const gg_option *o = c->options; o && o->key && n < GG_OP_MAX_OPTIONS - NCOMMON; o++)
                    tables[i][n++] = *o;
                for (int k = 0; k < NCOMMON; k++)
                    tables[i][n++] = common_options[k];
                counts[i] = n;
            }
            if (count)
                *count = counts[i];
            return tables[i];
        }
    return NULL;
}

static const gg_option *find_option(const gg_op *op, const char *key)
{
    int n;
    const gg_option *o = gg_op_options(op->cls->name, &n);
    for (int k = 0; k < n; k++)
        if (!strcasecmp(o[k].key, key))
            return &o[k];
    return NULL;
}

/* The one check of a value against its description: kind and range. */
static int option_value_ok(const gg_option *o, const char *value)
{
    int a, b, v;
    double d;
    switch (o->kind) {
    case GG_OPTION_INT:
        return gg_parse_int(value, &v) && v >= o->min && v <= o->max;
    case GG_OPTION_FLOAT: /* NaN passes: the op decides (nodata may be NaN) */
        return gg_parse_double(value, &d) && !(d < o->min) && !(d > o->max);
    case GG_OPTION_BOOL:
        return gg_parse_bool(value, &v);
    case GG_OPTION_SIZE:
        return gg_parse_pair(value, &a, &b) && a >= o->min && a <= o->max && b >= o->min &&
               b <= o->max;
    case GG_OPTION_CHOICE:
        for (const char *c = o->choices; c && *c;) {
            const size_t len = strcspn(c, ",");
            if (len == strlen(value) && !strncasecmp(c, value, len))
                return 1;
            c += len + (c[len] == ',');
        }
        return 0;
    case GG_OPTION_STRING:
        return 1;
    }
    return 0;
}

/* A value outside its description: the op's own wording when its set
 * hook refuses the value too (the tables are never stricter than the
 * hooks, so a refusing hook has changed nothing), else a generic one. */
static gg_status refuse(gg_op *op, const gg_option *o, const char *value)
{
    if (o->kind != GG_OPTION_FLOAT || (strcasecmp(o->key, "srcnodata") && strcasecmp(o->key, "dstnodata")))
        if (op->cls->set(op, o->key, value) == GG_ERR_ARGUMENT)
            return GG_ERR_ARGUMENT;
    switch (o->kind) {
    case GG_OPTION_INT:
    case GG_OPTION_FLOAT:
    case GG_OPTION_SIZE: {
        char range[96] = "";
        if (o->min > -GG_UNBOUNDED || o->max < GG_UNBOUNDED)
            snprintf(range, sizeof range, " in [%g, %g]", o->min, o->max);
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %s must be %s%s, not '%s'", op->cls->name,
                           o->key,
                           o->kind == GG_OPTION_INT     ? "an integer"
                           : o->kind == GG_OPTION_FLOAT ? "a number"
                                                        : "two integers like 4x4",
                           range, value);
    }
    case GG_OPTION_BOOL:
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %s must be yes or no, not '%s'",
                           op->cls->name, o->key, value);
    default:
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %s must be one of %s, not '%s'",
                           op->cls->name, o->key, o->choices ? o->choices : "", value);
    }
}

gg_status gg_op_error(gg_op *op, gg_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->err, sizeof op->err, fmt, ap);
    va_end(ap);
    return s;
}

const char *gg_op_last_error(const gg_op *op) { return op ? op->err : ""; }
const char *gg_op_name(const gg_op *op) { return op ? op->cls->name : ""; }

gg_status gg_op_new(const char *name, gg_op **out, char *err, size_t errlen)
{
    *out = NULL;
    const gg_op_class *c = find_class(name);
    if (!c) {
        if (err)
            snprintf(err, errlen, "unknown operation '%s' (known: multilook, rotate, radnorm, coherence, ptsel, xcorr, resample)",
                     name ? name : "");
        return GG_ERR_ARGUMENT;
    }
    gg_op *op = calloc(1, sizeof *op);
    if (op)
        op->state = calloc(1, c->state_size ? c->state_size : 1);
    if (!op || !op->state) {
        free(op);
        if (err)
            snprintf(err, errlen, "out of memory");
        return GG_ERR_NOMEM;
    }
    op->cls = c;
    c->init(op);
    *out = op;
    return GG_OK;
}

static void pipeline_drop(gg_op *op);

void gg_op_free(gg_op *op)
{
    if (!op)
        return;
    if (op->npending)
        pipeline_drop(op);
    if (op->cls->cleanup)
        op->cls->cleanup(op);
    for (int i = 0; i < op->nopts; i++) {
        free(op->keys[i]);
        free(op->vals[i]);
    }
    free(op->state);
    free(op);
}

/* ------------------------------------------------------------- parsing */

int gg_parse_double(const char *s, double *v)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (end == s || *end || errno == ERANGE)
        return 0;
    *v = d;
    return 1;
}

int gg_parse_int(const char *s, int *v)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long l = strtol(s, &end, 10);
    while (*end == ' ')
        end++;
    if (end == s || *end || errno || l < -2147483647L || l > 2147483647L)
        return 0;
    *v = (int)l;
    return 1;
}

int gg_parse_bool(const char *s, int *v)
{
    if (!s || !*s || !strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcasecmp(s, "on") ||
        !strcmp(s, "1")) {
        *v = 1;
        return 1;
    }
    if (!strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcasecmp(s, "off") || !strcmp(s, "0")) {
        *v = 0;
        return 1;
    }
    return 0;
}

int gg_parse_pair(const char *s, int *a, int *b)
{
    if (!s)
        return 0;
    const char *sep = strpbrk(s, "xX,");
    if (!sep)
        return gg_parse_int(s, a) && gg_parse_int(s, b);
    char first[64];
    size_t n = (size_t)(sep - s);
    if (n == 0 || n >= sizeof first)
        return 0;
    memcpy(first, s, n);
    first[n] = 0;
    return gg_parse_int(first, a) && gg_parse_int(sep + 1, b);
}

/* ------------------------------------------------------------- options */

static void remember(gg_op *op, const char *key_given, const char *value)
{
    char key[64]; /* canonical: lower case */
    snprintf(key, sizeof key, "%s", key_given);
    for (char *c = key; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    for (int i = 0; i < op->nopts; i++)
        if (!strcasecmp(op->keys[i], key)) {
            char *v = strdup(value);
            if (v) {
                free(op->vals[i]);
                op->vals[i] = v;
            }
            return;
        }
    if (op->nopts < GG_OP_MAX_OPTIONS) {
        op->keys[op->nopts] = strdup(key);
        op->vals[op->nopts] = strdup(value);
        if (op->keys[op->nopts] && op->vals[op->nopts])
            op->nopts++;
    }
}

gg_status gg_op_set(gg_op *op, const char *key, const char *value)
{
    if (!op || !key || !*key)
        return GG_ERR_ARGUMENT;
    if (!value)
        value = "";
    if (op->prepared)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: options cannot change after prepare",
                           op->cls->name);
    const gg_option *o = find_option(op, key);
    if (!o)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: unknown option '%s'", op->cls->name, key);
    if (!option_value_ok(o, value))
        return refuse(op, o, value);
    gg_status s;
    if (!strcasecmp(key, "srcnodata") || !strcasecmp(key, "dstnodata")) {
        double v;
        const int src = !strcasecmp(key, "srcnodata");
        if (!gg_parse_double(value, &v) && strcasecmp(value, "nan"))
            return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %s must be a number, not '%s'",
                               op->cls->name, key, value);
        if (!strcasecmp(value, "nan"))
            v = NAN;
        if (src) {
            op->opt_srcnodata_set = 1;
            op->opt_srcnodata = v;
        } else {
            op->opt_dstnodata_set = 1;
            op->opt_dstnodata = v;
        }
        s = GG_OK;
    } else {
        s = op->cls->set(op, key, value);
        if (s == GG_ERR_UNSUPPORTED)
            return gg_op_error(op, GG_ERR_ARGUMENT, "%s: unknown option '%s'", op->cls->name, key);
    }
    if (s == GG_OK)
        remember(op, key, value);
    return s;
}

int gg_op_option_count(const gg_op *op) { return op ? op->nopts : 0; }

gg_status gg_op_option_at(const gg_op *op, int i, const char **key, const char **value)
{
    if (!op || i < 0 || i >= op->nopts)
        return GG_ERR_ARGUMENT;
    if (key)
        *key = op->keys[i];
    if (value)
        *value = op->vals[i];
    return GG_OK;
}

gg_status gg_op_options_string(const gg_op *op, char *buf, size_t buflen)
{
    if (!op || !buf || !buflen)
        return GG_ERR_ARGUMENT;
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < op->nopts; i++) {
        int n = snprintf(buf + used, buflen - used, "%s%s=%s", i ? ":" : "", op->keys[i], op->vals[i]);
        if (n < 0 || (size_t)n >= buflen - used)
            return GG_ERR_ARGUMENT;
        used += (size_t)n;
    }
    return GG_OK;
}

/* --------------------------------------------------------- generic calls */

gg_status gg_op_prepare(gg_op *op, const gg_raster_info *in, gg_raster_info *out)
{
    if (!op || !in || !out)
        return GG_ERR_ARGUMENT;
    if (op->npending)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: runs in flight: gg_op_collect them first",
                           op->cls->name);
    if (in->width < 1 || in->height < 1 || in->bands < 1)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: input is empty (%dx%d, %d bands)",
                           op->cls->name, in->width, in->height, in->bands);
    if (in->type != GG_FLOAT32 && in->type != GG_CFLOAT32)
        return gg_op_error(op, GG_ERR_UNSUPPORTED, "%s: input must be Float32 or CFloat32",
                           op->cls->name);
    op->in = *in;
    op->src_has_nodata = op->opt_srcnodata_set || in->has_nodata;
    op->src_nodata = op->opt_srcnodata_set ? op->opt_srcnodata : in->nodata;
    if (op->src_has_nodata && isnan(op->src_nodata))
        op->src_has_nodata = 0; /* NaN never compares equal; NaN is invalid anyway */
    memset(out, 0, sizeof *out);
    out->bands = in->bands;
    gg_status s = op->cls->prepare(op, in, out);
    if (s != GG_OK)
        return s;
    /* output nodata: -dstnodata, else the input's, else NaN (255 for Byte) */
    if (op->opt_dstnodata_set)
        op->dst_nodata = op->opt_dstnodata;
    else if (out->type == GG_BYTE)
        op->dst_nodata = 255;
    else if (op->src_has_nodata)
        op->dst_nodata = op->src_nodata;
    else
        op->dst_nodata = NAN;
    if (out->type == GG_BYTE &&
        (!(op->dst_nodata >= 0 && op->dst_nodata <= 255) || op->dst_nodata != floor(op->dst_nodata)))
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: dstnodata %g does not fit a Byte output",
                           op->cls->name, op->dst_nodata);
    out->has_nodata = 1;
    out->nodata = op->dst_nodata;
    op->out = *out;
    op->prepared = 1;
    if (op->cls->band_nodata) /* stack ops: band 0 speaks for the raster */
        out->nodata = op->out.nodata = op->cls->band_nodata(op, 0);
    return GG_OK;
}

static gg_status need_prepared(const gg_op *op)
{
    return op && op->prepared ? GG_OK : GG_ERR_ARGUMENT;
}

gg_status gg_op_source_window(const gg_op *op, const gg_window *dst, gg_window *src)
{
    if (need_prepared(op) != GG_OK || !dst || !src)
        return GG_ERR_ARGUMENT;
    if (dst->width < 0 || dst->height < 0 || dst->x0 < 0 || dst->y0 < 0 ||
        dst->x0 + dst->width > op->out.width || dst->y0 + dst->height > op->out.height)
        return GG_ERR_ARGUMENT;
    op->cls->source_window(op, dst, src);
    /* clip to the input */
    int x1 = src->x0 + src->width, y1 = src->y0 + src->height;
    if (src->x0 < 0)
        src->x0 = 0;
    if (src->y0 < 0)
        src->y0 = 0;
    if (x1 > op->in.width)
        x1 = op->in.width;
    if (y1 > op->in.height)
        y1 = op->in.height;
    src->width = x1 > src->x0 ? x1 - src->x0 : 0;
    src->height = y1 > src->y0 ? y1 - src->y0 : 0;
    if (!src->width || !src->height)
        src->width = src->height = 0;
    return GG_OK;
}

int gg_op_needs_stats(const gg_op *op) { return op && op->cls->accumulate != NULL; }

static gg_status check_band(gg_op *op, int band)
{
    if (!op->prepared)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: gg_op_prepare was not called", op->cls->name);
    if (band < 0 || band >= op->in.bands)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: band %d out of range", op->cls->name, band);
    return GG_OK;
}

/* Calls other than gg_op_submit_stack* and gg_op_collect are refused on a
 * context with asynchronous runs in flight: they would share its buffers. */
static gg_status check_idle(gg_context *ctx, gg_op *op)
{
    const gg_op *owner = gg_rt_pipeline_owner(ctx);
    if (!owner)
        return GG_OK;
    return gg_op_error(op, GG_ERR_ARGUMENT,
                       "%s: the device context has %s runs in flight: gg_op_collect them first",
                       op->cls->name, owner == op ? "this op's" : "another op's");
}

/* Copies a context error into the op, so callers read one place. */
static gg_status relay(gg_op *op, gg_context *ctx, gg_status s)
{
    if (s != GG_OK && !op->err[0])
        snprintf(op->err, sizeof op->err, "%s: %s", op->cls->name, gg_context_last_error(ctx));
    return s;
}

gg_status gg_op_accumulate(gg_context *ctx, gg_op *op, int band, const gg_tile *src)
{
    if (!ctx || !op || !src)
        return GG_ERR_ARGUMENT;
    gg_status s = check_band(op, band);
    if (s != GG_OK || !op->cls->accumulate)
        return s;
    if (src->type != op->in.type || src->x0 < 0 || src->y0 < 0 || src->width < 0 ||
        src->height < 0 || src->x0 + src->width > op->in.width ||
        src->y0 + src->height > op->in.height || src->stride < (size_t)src->width)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: statistics tile does not fit the input",
                           op->cls->name);
    if ((s = check_idle(ctx, op)) != GG_OK)
        return s;
    op->err[0] = 0;
    return relay(op, ctx, op->cls->accumulate(ctx, op, band, src));
}

gg_status gg_op_reset_stats(gg_op *op, int band)
{
    if (!op)
        return GG_ERR_ARGUMENT;
    gg_status s = check_band(op, band);
    if (s == GG_OK && op->cls->reset_stats)
        op->cls->reset_stats(op, band);
    return s;
}

gg_status gg_op_finish_stats(gg_context *ctx, gg_op *op, int band)
{
    if (!ctx || !op)
        return GG_ERR_ARGUMENT;
    gg_status s = check_band(op, band);
    if (s != GG_OK || !op->cls->finish_stats)
        return s;
    if ((s = check_idle(ctx, op)) != GG_OK)
        return s;
    op->err[0] = 0;
    return relay(op, ctx, op->cls->finish_stats(ctx, op, band));
}

gg_status gg_op_check_tiles(gg_op *op, const gg_tile *src, const gg_tile *dst)
{
    if (dst->type != op->out.type || dst->width < 0 || dst->height < 0 || dst->x0 < 0 ||
        dst->y0 < 0 || dst->x0 + dst->width > op->out.width ||
        dst->y0 + dst->height > op->out.height || dst->stride < (size_t)dst->width || !dst->data)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: output tile does not fit the output raster",
                           op->cls->name);
    gg_window dw = {dst->x0, dst->y0, dst->width, dst->height}, need;
    gg_op_source_window(op, &dw, &need);
    return gg_op_check_source(op, src, &need);
}

gg_status gg_op_check_source(gg_op *op, const gg_tile *src, const gg_window *need)
{
    if (need->width == 0)
        return GG_OK; /* no input needed: src may be empty */
    if (!src || src->type != op->in.type || !src->data || src->x0 > need->x0 ||
        src->y0 > need->y0 || src->x0 + src->width < need->x0 + need->width ||
        src->y0 + src->height < need->y0 + need->height || src->stride < (size_t)src->width ||
        src->x0 < 0 || src->y0 < 0 || src->x0 + src->width > op->in.width ||
        src->y0 + src->height > op->in.height)
        return gg_op_error(op, GG_ERR_ARGUMENT,
                           "%s: source tile does not cover the window the output needs",
                           op->cls->name);
    return GG_OK;
}

gg_tile gg_op_source_view(const gg_op *op, const gg_tile *src, const gg_tile *dst)
{
    gg_window dw = {dst->x0, dst->y0, dst->width, dst->height}, need;
    gg_op_source_window(op, &dw, &need);
    gg_tile v = *src;
    const size_t es = gg_type_size(src->type);
    v.data = (unsigned char *)src->data +
             ((size_t)(need.y0 - src->y0) * src->stride + (size_t)(need.x0 - src->x0)) * es;
    v.x0 = need.x0;
    v.y0 = need.y0;
    v.width = need.width;
    v.height = need.height;
    return v;
}

void gg_tile_fill(gg_tile *dst, double value)
{
    for (int y = 0; y < dst->height; y++) {
        if (dst->type == GG_BYTE) {
            memset((unsigned char *)dst->data + (size_t)y * dst->stride, (int)value,
                   (size_t)dst->width);
            continue;
        }
        const size_t nc = dst->type == GG_CFLOAT32 ? 2 : 1;
        float *row = (float *)dst->data + (size_t)y * dst->stride * nc;
        for (size_t i = 0; i < (size_t)dst->width * nc; i++)
            row[i] = (float)value;
    }
}

gg_status gg_op_run_kernel(gg_context *ctx, const gg_tile *view, gg_tile *dst, int kernel,
                           const void *params, size_t params_size)
{
    gg_buffer *bin, *bout;
    gg_status st = gg_rt_upload_tile(ctx, 0, view, &bin);
    if (st == GG_OK)
        st = gg_rt_scratch(ctx, 1, (size_t)dst->width * dst->height * gg_type_size(dst->type), &bout);
    if (st != GG_OK)
        return st;
    gg_buffer *bufs[2] = {bin, bout};
    st = gg_rt_launch(ctx, kernel, dst->width, dst->height, params, params_size, bufs, 2);
    return st == GG_OK ? gg_rt_download_tile(ctx, bout, dst) : st;
}

void gg_op_fill_nodata(const gg_op *op, gg_tile *dst) { gg_tile_fill(dst, op->dst_nodata); }

gg_status gg_op_run(gg_context *ctx, gg_op *op, int band, const gg_tile *src, gg_tile *dst)
{
    if (!ctx || !op || !dst)
        return GG_ERR_ARGUMENT;
    if (op->cls->stack)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s is a stack operation: use gg_op_run_stack",
                           op->cls->name);
    gg_status s = check_band(op, band);
    if (s == GG_OK)
        s = gg_op_check_tiles(op, src, dst);
    if (s == GG_OK)
        s = check_idle(ctx, op);
    if (s != GG_OK)
        return s;
    op->err[0] = 0;
    if (dst->width == 0 || dst->height == 0)
        return GG_OK;
    gg_window dw = {dst->x0, dst->y0, dst->width, dst->height}, need;
    gg_op_source_window(op, &dw, &need);
    if (need.width == 0) {
        gg_op_fill_nodata(op, dst);
        return GG_OK;
    }
    return relay(op, ctx, op->cls->run(ctx, op, band, src, dst));
}

int gg_op_is_stack(const gg_op *op) { return op && op->cls->stack; }

gg_type gg_op_band_type(const gg_op *op, int band)
{
    if (!op || !op->prepared || band < 0 || band >= op->out.bands)
        return (gg_type)0;
    return op->cls->band_type ? op->cls->band_type(op, band) : op->out.type;
}

const char *gg_op_band_name(const gg_op *op, int band)
{
    if (!op || !op->prepared || band < 0 || band >= op->out.bands || !op->cls->band_name)
        return "";
    return op->cls->band_name(op, band);
}

double gg_op_band_nodata(const gg_op *op, int band)
{
    if (op && op->prepared && op->cls->band_nodata && band >= 0 && band < op->out.bands)
        return op->cls->band_nodata(op, band);
    return op ? op->dst_nodata : 0;
}

/* What both stack entry points check of the call and the output tiles.
 * Returns GG_OK with *need the source window, or with *done set when the
 * outputs are complete already (empty, or all nodata). */
static gg_status stack_call_checks(gg_context *ctx, gg_op *op, int nsrc, gg_tile *dst, int ndst,
                                   gg_window *need, int *done)
{
    *done = 0;
    if (!ctx || !op || !dst || ndst < 1)
        return GG_ERR_ARGUMENT;
    if (!op->cls->stack)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s is not a stack operation: use gg_op_run",
                           op->cls->name);
    if (!op->prepared)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: gg_op_prepare was not called", op->cls->name);
    if (nsrc != op->in.bands || ndst != op->out.bands)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %d input and %d output tiles given, the op "
                           "takes %d and %d", op->cls->name, nsrc, ndst, op->in.bands, op->out.bands);
    const gg_tile *d0 = &dst[0];
    for (int b = 0; b < ndst; b++) {
        const gg_tile *d = &dst[b];
        if (d->type != gg_op_band_type(op, b) || d->x0 != d0->x0 || d->y0 != d0->y0 ||
            d->width != d0->width || d->height != d0->height || d->width < 0 || d->height < 0 ||
            d->x0 < 0 || d->y0 < 0 || d->x0 + d->width > op->out.width ||
            d->y0 + d->height > op->out.height || d->stride < (size_t)d->width || !d->data)
            return gg_op_error(op, GG_ERR_ARGUMENT,
                               "%s: output tile %d does not fit the output raster", op->cls->name, b);
    }
    op->err[0] = 0;
    if (d0->width == 0 || d0->height == 0) {
        *done = 1;
        return GG_OK;
    }
    gg_window dw = {d0->x0, d0->y0, d0->width, d0->height};
    gg_op_source_window(op, &dw, need);
    if (need->width == 0) {
        for (int b = 0; b < ndst; b++)
            gg_tile_fill(&dst[b], gg_op_band_nodata(op, b));
        *done = 1;
    }
    return GG_OK;
}

/* The checks of a stack call's sources, after stack_call_checks. */
static gg_status check_stack_sources(gg_op *op, const gg_tile *src, int nsrc, int interleaved,
                                     const gg_window *need)
{
    if (!src)
        return GG_ERR_ARGUMENT;
    gg_status s = GG_OK;
    for (int b = 0; b < (interleaved ? 1 : nsrc) && s == GG_OK; b++)
        s = gg_op_check_source(op, &src[b], need);
    return s;
}

gg_tile gg_op_interleaved_view(const gg_op *op, const gg_tile *src, int n, const gg_tile *dst)
{
    gg_window dw = {dst->x0, dst->y0, dst->width, dst->height}, need;
    gg_op_source_window(op, &dw, &need);
    gg_tile v = *src;
    const size_t es = gg_type_size(src->type);
    v.data = (unsigned char *)src->data +
             ((size_t)(need.y0 - src->y0) * src->stride + (size_t)(need.x0 - src->x0)) * n * es;
    v.x0 = need.x0;
    v.y0 = need.y0;
    v.width = need.width * n;
    v.height = need.height;
    v.stride = src->stride * (size_t)n;
    return v;
}

/* Ops without their own interleaved path: the window's bands sorted into
 * planes on the host, then run_stack. */
static gg_status run_sorted_on_host(gg_context *ctx, gg_op *op, const gg_tile *src, int n,
                                    gg_tile *dst, int ndst)
{
    const gg_tile v = gg_op_interleaved_view(op, src, n, &dst[0]);
    const int w = v.width / n, h = v.height;
    const size_t es = gg_type_size(v.type), plane = (size_t)w * (size_t)h;
    unsigned char *buf = malloc(plane * (size_t)n * es);
    gg_tile *t = malloc((size_t)n * sizeof *t);
    if (!buf || !t) {
        free(buf);
        free(t);
        return gg_op_error(op, GG_ERR_NOMEM, "%s: no host memory to sort %d interleaved bands "
                           "of %d x %d pixels", op->cls->name, n, w, h);
    }
    for (int y = 0; y < h; y++) {
        const unsigned char *row = (const unsigned char *)v.data + (size_t)y * v.stride * es;
        for (int x = 0; x < w; x++)
            for (int b = 0; b < n; b++)
                memcpy(buf + ((size_t)b * plane + (size_t)y * w + x) * es,
                       row + ((size_t)x * n + b) * es, es);
    }
    for (int b = 0; b < n; b++)
        t[b] = (gg_tile){buf + (size_t)b * plane * es, v.type, w, h, (size_t)w, v.x0, v.y0};
    const gg_status s = op->cls->run_stack(ctx, op, t, n, dst, ndst);
    free(t);
    free(buf);
    return s;
}

/* A stack run now, from band tiles or one interleaved tile. */
static gg_status run_stack_now(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                               int interleaved, gg_tile *dst, int ndst)
{
    if (!interleaved)
        return op->cls->run_stack(ctx, op, src, nsrc, dst, ndst);
    if (op->cls->run_stack_interleaved)
        return op->cls->run_stack_interleaved(ctx, op, src, nsrc, dst, ndst);
    return run_sorted_on_host(ctx, op, src, nsrc, dst, ndst);
}

/* Every check of a stack run or submit: the call, the outputs and the
 * sources; *done as stack_call_checks sets it. */
static gg_status stack_run_checks(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                  int interleaved, gg_tile *dst, int ndst, int *done)
{
    gg_window need;
    gg_status s = stack_call_checks(ctx, op, nsrc, dst, ndst, &need, done);
    if (s == GG_OK && !*done)
        s = check_stack_sources(op, src, nsrc, interleaved, &need);
    return s;
}

/* gg_op_run_stack and gg_op_run_stack_interleaved. */
static gg_status run_stack_call(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                int interleaved, gg_tile *dst, int ndst)
{
    int done;
    gg_status s = stack_run_checks(ctx, op, src, nsrc, interleaved, dst, ndst, &done);
    if (s == GG_OK && !done)
        s = check_idle(ctx, op);
    if (s != GG_OK || done)
        return s;
    return relay(op, ctx, run_stack_now(ctx, op, src, nsrc, interleaved, dst, ndst));
}

gg_status gg_op_run_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc, gg_tile *dst,
                          int ndst)
{
    return run_stack_call(ctx, op, src, nsrc, 0, dst, ndst);
}

gg_status gg_op_run_stack_interleaved(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                                      gg_tile *dst, int ndst)
{
    return run_stack_call(ctx, op, src, nsrc, 1, dst, ndst);
}

/* ------------------------------------------------ asynchronous stack runs */

/* After a failure: the device idle, every run in flight forgotten. */
static void pipeline_drop(gg_op *op)
{
    if (op->pipe_ctx) {
        (void)gg_rt_finish(op->pipe_ctx);
        gg_rt_set_pipeline_owner(op->pipe_ctx, NULL);
    }
    for (int i = 0; i < op->npending; i++)
        free(op->pending[i].dst);
    op->npending = 0;
    op->pipe_ctx = NULL;
}

static gg_status submit(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                        int interleaved, gg_tile *dst, int ndst)
{
    int done;
    gg_status s = stack_run_checks(ctx, op, src, nsrc, interleaved, dst, ndst, &done);
    if (s != GG_OK)
        return s;
    const gg_op *owner = gg_rt_pipeline_owner(ctx);
    if (owner && owner != op)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: the device context has another op's runs "
                           "in flight: gg_op_collect them first", op->cls->name);
    if (op->npending && op->pipe_ctx != ctx)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: runs in flight on another device context",
                           op->cls->name);
    if (op->npending == GG_OP_MAX_IN_FLIGHT)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: %d runs in flight already: gg_op_collect "
                           "one first", op->cls->name, GG_OP_MAX_IN_FLIGHT);
    gg_tile *copy = malloc((size_t)ndst * sizeof *copy);
    if (!copy)
        return gg_op_error(op, GG_ERR_NOMEM, "%s: out of memory", op->cls->name);
    memcpy(copy, dst, (size_t)ndst * sizeof *copy);
    int set = -1;
    if (!done && op->cls->enqueue_stack) {
        set = op->next_set;
        s = op->cls->enqueue_stack(ctx, op, src, nsrc, interleaved, dst, ndst, set);
    } else if (!done) { /* no asynchronous path: it runs now */
        s = run_stack_now(ctx, op, src, nsrc, interleaved, dst, ndst);
    }
    if (s != GG_OK) {
        free(copy);
        s = relay(op, ctx, s);
        pipeline_drop(op);
        return s;
    }
    if (set >= 0)
        op->next_set = !set;
    op->pending[op->npending++] = (struct gg_op_pending){set, ndst, copy};
    op->pipe_ctx = ctx;
    gg_rt_set_pipeline_owner(ctx, op);
    return GG_OK;
}

gg_status gg_op_submit_stack(gg_context *ctx, gg_op *op, const gg_tile *src, int nsrc,
                             gg_tile *dst, int ndst)
{
    return submit(ctx, op, src, nsrc, 0, dst, ndst);
}

gg_status gg_op_submit_stack_interleaved(gg_context *ctx, gg_op *op, const gg_tile *src,
                                         int nsrc, gg_tile *dst, int ndst)
{
    return submit(ctx, op, src, nsrc, 1, dst, ndst);
}

gg_status gg_op_collect(gg_context *ctx, gg_op *op)
{
    if (!ctx || !op)
        return GG_ERR_ARGUMENT;
    if (!op->npending)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: no run in flight to collect", op->cls->name);
    if (ctx != op->pipe_ctx)
        return gg_op_error(op, GG_ERR_ARGUMENT, "%s: the runs in flight are on another device "
                           "context", op->cls->name);
    const struct gg_op_pending p = op->pending[0];
    op->err[0] = 0;
    gg_status s = p.set >= 0 ? op->cls->fetch_stack(ctx, op, p.dst, p.ndst, p.set) : GG_OK;
    free(p.dst);
    op->npending--;
    memmove(&op->pending[0], &op->pending[1], (size_t)op->npending * sizeof op->pending[0]);
    if (s != GG_OK) {
        s = relay(op, ctx, s);
        pipeline_drop(op);
        return s;
    }
    if (!op->npending) {
        op->pipe_ctx = NULL;
        gg_rt_set_pipeline_owner(ctx, NULL);
    }
    return GG_OK;
}

int gg_op_in_flight(const gg_op *op) { return op ? op->npending : 0; }

double gg_op_bytes_per_pixel(const gg_op *op)
{
    return op && op->prepared ? op->cls->bytes_per_pixel(op) : 0;
}
