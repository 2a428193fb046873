/* fuzz_prm.c -- libFuzzer target for the GMTSAR PRM reader
 * (algorithms/coreg/gmtsar_xcorr.c, gg_xcorr_prm_read): arbitrary PRM text,
 * whose SLC_file (if any) points at a small file that exists. */
#include "geogpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_prm.%d", (int)getpid());
        char cmd[128];
        snprintf(cmd, sizeof cmd, "mkdir -p %s && head -c 4096 /dev/urandom > %s/a.SLC", dir, dir);
        if (system(cmd) != 0)
            abort();
    }
    char path[96];
    snprintf(path, sizeof path, "%s/f.PRM", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(d, 1, n, f);
    fclose(f);
    gg_xcorr_prm prm;
    char err[512];
    gg_xcorr_prm_read(path, &prm, err, sizeof err);
    return 0;
}
