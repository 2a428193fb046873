/* fuzz_prm.c -- libFuzzer target for the GMTSAR PRM reader
 * (algorithms/coreg/gmtsar_prm.c, gg_xcorr_prm_read): arbitrary PRM text,
 * whose SLC_file (if any) points at a small file that exists.  The folder
 * holding both files is removed at exit (libFuzzer exits normally at the
 * end of -max_total_time). */
#include "geogpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64], slc[96], prm_path[96];

static void remove_files(void)
{
    unlink(prm_path);
    unlink(slc);
    rmdir(dir);
}

/* The folder, with a 4096-byte a.SLC of arbitrary bytes. */
static void make_folder(void)
{
    snprintf(dir, sizeof dir, "/tmp/fuzz_prm.XXXXXX");
    if (!mkdtemp(dir))
        abort();
    snprintf(slc, sizeof slc, "%s/a.SLC", dir);
    snprintf(prm_path, sizeof prm_path, "%s/f.PRM", dir);
    atexit(remove_files);
    FILE *f = fopen(slc, "wb");
    if (!f)
        abort();
    for (int i = 0; i < 4096; i++)
        fputc((i * 131 + 7) & 0xff, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (!dir[0])
        make_folder();
    FILE *f = fopen(prm_path, "wb");
    if (!f)
        return 0;
    fwrite(d, 1, n, f);
    fclose(f);
    gg_xcorr_prm prm;
    char err[512];
    gg_xcorr_prm_read(prm_path, &prm, err, sizeof err);
    return 0;
}
