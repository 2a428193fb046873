/* fuzz_mrr2.c -- libFuzzer target for the Metek MRR-2 raw spectra parser
 * (algorithms/radar/fmcw_mrr2.c, gg_mrr2_parse) and, when a file parses,
 * the spectral stage on the CPU. */
#include "geogpu.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static gg_context *ctx;
    if (!ctx) {
        char err[256];
        if (gg_context_create("cpu", &ctx, err, sizeof err) != GG_OK)
            abort();
    }
    gg_mrr2 *m = NULL;
    char err[512];
    if (gg_mrr2_parse((const char *)d, n, &m, err, sizeof err) == GG_OK && m) {
        const gg_mrr2_options o[2] = {{0, 0, 0, 0}, {60, 4, 0, 0}};
        for (int i = 0; i < 2; i++) {
            const size_t cells =
                (size_t)gg_mrr2_rows(m, o[i].average_s, NULL) * (size_t)m->n_gates * GG_MRR2_NPROD;
            if (cells > 0 && cells < (1u << 20)) {
                float *out = malloc(cells * sizeof *out);
                if (out)
                    gg_mrr2_products(ctx, m, &o[i], out);
                free(out);
            }
        }
        gg_mrr2_free(m);
    }
    return 0;
}
