/* fuzz_op_options.c -- libFuzzer target for every op's option parsing and
 * validation (gg_op_set, gg_op_prepare) and, when the options and a tiny
 * input pass them, for the op itself on the CPU backend: window arithmetic,
 * halos and kernels on odd sizes.
 *
 * Input: byte 0 picks the op, bytes 1-4 the input width, height, bands and
 * type, the rest is "key=value" lines. */
#include "geogpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static gg_context *ctx;

static void run_op(const char *name, gg_op *op, const gg_raster_info *in,
                   const gg_raster_info *out)
{
    /* tiny runs: an xcorr output pixel is a whole window's correlation
     * (the search chip's FFTs and the oversampled peak's), about 0.3 s each
     * under ASan + coverage (32 windows of 4 x 4: 9.7 s), so a count of
     * thousands tripped libFuzzer's 10 s timeout; four windows run the
     * same arithmetic */
    const size_t max_px = strcmp(name, "xcorr") ? 65536 : 4;
    if ((size_t)out->width * out->height > max_px || out->bands > 64)
        return;
    const int stack = gg_op_is_stack(op);
    const int nin = stack ? in->bands : 1, nout = stack ? out->bands : 1;
    const size_t es = gg_type_size(in->type), plane = (size_t)in->width * in->height;
    float *data = malloc(plane * es * (size_t)nin);
    gg_tile *src = calloc((size_t)nin, sizeof *src), *dst = calloc((size_t)nout, sizeof *dst);
    void **bufs = calloc((size_t)nout, sizeof *bufs);
    if (!data || !src || !dst || !bufs)
        goto done;
    for (size_t i = 0; i < plane * es / 4 * (size_t)nin; i++)
        data[i] = (float)((i * 2654435761u) % 1000) / 100.0f - 3.0f;
    for (int b = 0; b < nout; b++) {
        const gg_type t = stack ? gg_op_band_type(op, b) : out->type;
        bufs[b] = calloc((size_t)out->width * out->height + 1, gg_type_size(t));
        dst[b] = (gg_tile){bufs[b], t, out->width, out->height, (size_t)out->width, 0, 0};
    }
    gg_window dw = {0, 0, out->width, out->height}, sw;
    if (gg_op_source_window(op, &dw, &sw) != GG_OK || sw.width <= 0 || sw.height <= 0)
        goto done;
    for (int k = 0; k < nin; k++)
        src[k] = (gg_tile){(char *)data + ((size_t)k * plane + (size_t)sw.y0 * in->width + sw.x0) * es,
                           in->type, sw.width, sw.height, (size_t)in->width, sw.x0, sw.y0};
    if (stack) {
        gg_op_run_stack(ctx, op, src, nin, dst, nout);
    } else {
        if (gg_op_needs_stats(op)) {
            gg_tile whole = {data, in->type, in->width, in->height, (size_t)in->width, 0, 0};
            if (gg_op_accumulate(ctx, op, 0, &whole) != GG_OK || gg_op_finish_stats(ctx, op, 0) != GG_OK)
                goto done;
        }
        gg_op_run(ctx, op, 0, &src[0], &dst[0]);
    }
done:
    for (int b = 0; bufs && b < nout; b++)
        free(bufs[b]);
    free(bufs);
    free(dst);
    free(src);
    free(data);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (!ctx) {
        char err[256];
        if (gg_context_create("cpu", &ctx, err, sizeof err) != GG_OK)
            abort();
    }
    if (n < 5)
        return 0;
    const char *const *names = gg_op_names();
    int nops = 0;
    while (names[nops])
        nops++;
    gg_op *op = NULL;
    char err[256];
    const char *name = names[d[0] % nops];
    if (gg_op_new(name, &op, err, sizeof err) != GG_OK)
        abort(); /* every registered name must open */
    char *text = malloc(n - 4);
    memcpy(text, d + 5, n - 5);
    text[n - 5] = '\0';
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        gg_op_set(op, line, eq + 1);
    }
    free(text);
    static const gg_type types[] = {GG_FLOAT32, GG_CFLOAT32, GG_BYTE};
    gg_raster_info in = {1 + d[1] % 48, 1 + d[2] % 48, 1 + d[3] % 6, types[d[4] % 3],
                         {0, 1, 0, 0, 0, -1}, d[4] & 8, d[4] & 16, -9999.0},
                   out;
    if (gg_op_prepare(op, &in, &out) == GG_OK)
        run_op(name, op, &in, &out);
    char buf[1024];
    gg_op_options_string(op, buf, sizeof buf);
    gg_op_free(op);
    return 0;
}
