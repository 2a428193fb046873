/* fuzz_tiff_strips.c -- libFuzzer target for the strip-table reader of
 * gdal_ortho's direct writer (gdal/gg_tiff_strips.c): any bytes as a
 * file, through a memfd (the reader takes a descriptor, as it does the
 * file GDAL has just created). */
#define _GNU_SOURCE
#include "geogpu_gdal.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0)
        fd = memfd_create("fuzz_tiff_strips", 0);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    gg_tiff_strips t;
    char why[160];
    if (gg_tiff_strips_read(fd, (uint64_t)size, &t, why, sizeof why) == 0)
        gg_tiff_strips_free(&t);
    return 0;
}
