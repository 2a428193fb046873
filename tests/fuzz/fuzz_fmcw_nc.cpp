/* fuzz_fmcw_nc.cpp -- libFuzzer target for the FMCW raw-sector NetCDF
 * reader (gdal/fmcw_file.cpp): the bytes of a .nc file go through
 * FMCWFileOpen (layout and parameter checks, through GDAL's netCDF driver)
 * and FMCWFileRead of every sector, then, when the file is small, through
 * the FMCW driver's product dataset (FMCWOpenProducts on the CPU) and a
 * read of its first band, as gdal_fmcw and the GDAL plugin do.
 *
 * libnetcdf reads real files only (no /vsimem/), so the bytes are written
 * to one temporary file per process. */
#include "fmcw_driver.h"
#include "fmcw_file.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "gdal.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

static std::string path;

static void remove_file() { unlink(path.c_str()); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (path.empty())
    {
        GDALAllRegister();
        FMCWRegisterDriver();
        CPLSetErrorHandler(CPLQuietErrorHandler);
        const char *tmp = getenv("TMPDIR");
        path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_fmcw_" + std::to_string(getpid()) + ".nc";
        atexit(remove_file);
    }
    FILE *fp = fopen(path.c_str(), "wb");
    if (!fp)
        abort();
    const bool ok = fwrite(data, 1, size, fp) == size;
    if (fclose(fp) != 0 || !ok)
        abort();
    FMCWFile *f = FMCWFileOpen(path.c_str());
    if (!f)
        return 0;
    const gg_fmcw_params *p = FMCWFileParams(f);
    const int nsec = FMCWFileSectorCount(f);
    const size_t per = (size_t)gg_fmcw_sector_values(p);
    const bool small = per > 0 && per * (size_t)nsec <= ((size_t)1 << 20);
    if (small)
    {
        std::vector<int16_t> buf(per);
        for (int k = 0; k < nsec; k++)
            FMCWFileRead(f, k, 1, buf.data());
    }
    FMCWFileClose(f);
    if (small)
    {
        GDALDatasetH ds = FMCWOpenProducts(path.c_str(), nullptr, "cpu", 0, 0);
        if (ds)
        {
            const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds);
            if (w > 0 && h > 0 && (size_t)w * h <= ((size_t)1 << 20))
            {
                std::vector<float> out((size_t)w * h);
                GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Read, 0, 0, w, h, out.data(), w, h, GDT_Float32,
                             0, 0);
            }
            GDALClose(ds);
        }
    }
    return 0;
}
