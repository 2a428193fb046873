/* fuzz_gmtsar.cpp -- libFuzzer target for the GMTSAR driver
 * (frmts/gmtsar): arbitrary bytes as a .PRM file next to a small SLC
 * (a.SLC, 4096 bytes) go through GDAL's open (the driver's Identify on the
 * content, then the PRM reader and the raw band) and, when it opens and is
 * small, a read of the whole band, as gdalinfo -checksum does.  The folder
 * holding both files is removed at exit. */
#include "gmtsar_driver.h"

#include "cpl_error.h"
#include "gdal.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

static std::string dir, prm, slc;

static void remove_files()
{
    unlink(prm.c_str());
    unlink(slc.c_str());
    rmdir(dir.c_str());
}

static void make_folder()
{
    char d[] = "/tmp/fuzz_gmtsar.XXXXXX";
    if (!mkdtemp(d))
        abort();
    dir = d;
    prm = dir + "/f.PRM";
    slc = dir + "/a.SLC";
    atexit(remove_files);
    FILE *f = fopen(slc.c_str(), "wb");
    if (!f)
        abort();
    for (int i = 0; i < 4096; i++)
        fputc((i * 131 + 7) & 0xff, f);
    fclose(f);
    GMTSARRegisterDriver();
    CPLSetErrorHandler(CPLQuietErrorHandler);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir.empty())
        make_folder();
    FILE *fp = fopen(prm.c_str(), "wb");
    if (!fp)
        abort();
    const bool ok = fwrite(data, 1, size, fp) == size;
    if (fclose(fp) != 0 || !ok)
        abort();
    const char *const only[] = {"GMTSAR", nullptr};
    GDALDatasetH ds = GDALOpenEx(prm.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, only, nullptr,
                                 nullptr);
    if (!ds)
        return 0;
    const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds);
    if (w > 0 && h > 0 && (size_t)w * h <= ((size_t)1 << 20))
    {
        std::vector<int16_t> buf((size_t)w * h * 2);
        GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Read, 0, 0, w, h, buf.data(), w, h, GDT_CInt16,
                     0, 0);
    }
    GDALClose(ds);
    return 0;
}
