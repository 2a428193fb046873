/*
 * gg_stack_rows.cpp -- a stack op's input read as it lies in its file
 * (see gg_stack_rows.h).
 *
 * MIT licence.
 */
#include "gg_stack_rows.h"
#include "geogpu_gdal.h"

#include "cpl_conv.h"
#include "cpl_string.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

static bool HostIsLittleEndian()
{
    const unsigned short n = 1;
    unsigned char c;
    memcpy(&c, &n, 1);
    return c == 1;
}

bool GGStackRowsFind(GDALDataset *poDS, GDALDataType eType, GGStackRows *psRows)
{
    const int nBands = poDS->GetRasterCount();
    GDALDriver *poDriver = poDS->GetDriver();
    const char *pszPath = poDS->GetDescription();
    VSIStatBufL sStat;
    if (nBands < 1 || !poDriver || !EQUAL(poDriver->GetDescription(), "GTiff") ||
        STARTS_WITH(pszPath, "/vsi") || VSIStatL(pszPath, &sStat) != 0 ||
        !VSI_ISREG(sStat.st_mode))
        return false;
    const char *pszInterleave = poDS->GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE");
    if (poDS->GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE") ||
        (nBands > 1 && !(pszInterleave && EQUAL(pszInterleave, "PIXEL"))))
        return false;
    for (int b = 1; b <= nBands; ++b)
    {
        GDALRasterBand *poBand = poDS->GetRasterBand(b);
        if (poBand->GetRasterDataType() != eType ||
            poBand->GetMetadataItem("NBITS", "IMAGE_STRUCTURE"))
            return false;
    }
    const int nWidth = poDS->GetRasterXSize(), nHeight = poDS->GetRasterYSize();
    GDALRasterBand *poBand1 = poDS->GetRasterBand(1);
    int nBlockX = 0, nBlockY = 0;
    poBand1->GetBlockSize(&nBlockX, &nBlockY);
    if (nBlockX != nWidth || nBlockY < 1)
        return false;

    // the strip table of the file's first image (geogpu_gdal.h: a few
    // reads, where GDAL's BLOCK_OFFSET_0_<k> items cost a call a strip),
    // in this machine's byte order
    const int fd = open(pszPath, O_RDONLY | O_CLOEXEC);
    gg_tiff_strips sStrips{};
    char achWhy[160];
    const bool bTable =
        fd >= 0 && gg_tiff_strips_read(fd, static_cast<uint64_t>(sStat.st_size), &sStrips,
                                       achWhy, sizeof achWhy) == 0;
    unsigned char achHead[2] = {0, 0};
    const bool bHead = fd >= 0 && pread(fd, achHead, 2, 0) == 2;
    if (fd >= 0)
        close(fd);
    if (!bTable || !bHead || memcmp(achHead, HostIsLittleEndian() ? "II" : "MM", 2) != 0)
    {
        gg_tiff_strips_free(&sStrips);
        return false;
    }
    // strips that follow each other hold exactly their rows (none sparse);
    // GDAL may show one big strip as blocks of fewer rows, so its first and
    // last blocks must be where these strips put them (the first IFD is the
    // image GDAL reads)
    const size_t nPixelBytes = static_cast<size_t>(nBands) * GDALGetDataTypeSizeBytes(eType);
    const size_t nRowBytes = nPixelBytes * static_cast<size_t>(nWidth);
    const uint64_t nPerStrip = std::min<uint64_t>(sStrips.rows_per_strip, nHeight);
    const uint64_t nStrips = (static_cast<uint64_t>(nHeight) + nPerStrip - 1) / nPerStrip;
    const vsi_l_offset nOffset = sStrips.n ? sStrips.offsets[0] : 0;
    bool bOk = nOffset != 0 && sStrips.n == nStrips;
    for (uint32_t k = 0; bOk && k < sStrips.n; ++k)
    {
        const uint64_t nRows = std::min<uint64_t>(nPerStrip, nHeight - k * nPerStrip);
        bOk = sStrips.offsets[k] == nOffset + k * nPerStrip * nRowBytes &&
              sStrips.counts[k] == nRows * nRowBytes;
    }
    gg_tiff_strips_free(&sStrips);
    const int nBlocks = (nHeight + nBlockY - 1) / nBlockY;
    for (int k : {0, nBlocks - 1})
    {
        const char *pszOffset =
            poBand1->GetMetadataItem(CPLSPrintf("BLOCK_OFFSET_0_%d", k), "TIFF");
        bOk = bOk && pszOffset &&
              CPLScanUIntBig(pszOffset, 32) ==
                  nOffset + static_cast<vsi_l_offset>(k) * nBlockY * nRowBytes;
    }
    if (!bOk || static_cast<vsi_l_offset>(sStat.st_size) <
                    nOffset + static_cast<vsi_l_offset>(nHeight) * nRowBytes)
        return false;
    psRows->osPath = pszPath;
    psRows->nOffset = nOffset;
    psRows->nRowBytes = nRowBytes;
    psRows->nPixelBytes = nPixelBytes;
    return true;
}

/* Rows [r0, r1) of the file from row y0 on, through fd, into pabyDst. */
static bool ReadRowRange(int fd, const GGStackRows &sRows, int y0, GByte *pabyDst, int r0, int r1,
                         std::string &osError)
{
    GByte *pabyAt = pabyDst + static_cast<size_t>(r0) * sRows.nRowBytes;
    const size_t nWant = sRows.nRowBytes * static_cast<size_t>(r1 - r0);
    const vsi_l_offset nFrom =
        sRows.nOffset + static_cast<vsi_l_offset>(y0 + r0) * sRows.nRowBytes;
    for (size_t nDone = 0; nDone < nWant;)
    {
        const ssize_t n =
            pread(fd, pabyAt + nDone, nWant - nDone, static_cast<off_t>(nFrom + nDone));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
        {
            osError = n < 0 ? VSIStrerror(errno)
                            : CPLSPrintf("the file ends at byte " CPL_FRMT_GUIB,
                                         static_cast<GUIntBig>(nFrom + nDone));
            return false;
        }
        nDone += static_cast<size_t>(n);
    }
    return true;
}

CPLErr GGStackRowsRead(const GGStackRows &sRows, const gg_window &sWin, GByte *pabyDst,
                       int nThreads)
{
    if (sWin.width <= 0 || sWin.height <= 0)
        return CE_None;
    if (sWin.x0 != 0 || sRows.nPixelBytes * static_cast<size_t>(sWin.width) != sRows.nRowBytes)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: internal error: a stack window of %d of "
                 "the file's columns read as it lies", sWin.width);
        return CE_Failure;
    }
    const int fd = open(sRows.osPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
    {
        CPLError(CE_Failure, CPLE_FileIO, "GG: cannot open '%s': %s", sRows.osPath.c_str(),
                 VSIStrerror(errno));
        return CE_Failure;
    }
    // pread is safe on one descriptor from several threads
    const int n = std::max(1, std::min(nThreads, sWin.height));
    std::vector<std::string> aosError(n);
    std::vector<std::thread> aoThreads;
    auto slice = [&](int k)
    {
        ReadRowRange(fd, sRows, sWin.y0, pabyDst, sWin.height * k / n,
                     sWin.height * (k + 1) / n, aosError[k]);
    };
    for (int k = 1; k < n; ++k)
        aoThreads.emplace_back(slice, k);
    slice(0);
    for (std::thread &oThread : aoThreads)
        oThread.join();
    close(fd);
    for (const std::string &osError : aosError)
        if (!osError.empty())
        {
            CPLError(CE_Failure, CPLE_FileIO, "GG: cannot read '%s': %s", sRows.osPath.c_str(),
                     osError.c_str());
            return CE_Failure;
        }
    return CE_None;
}

int gg_stack_layout_find(const char *path, gg_type type, gg_stack_layout *out)
{
    if (!path || !out || (type != GG_FLOAT32 && type != GG_CFLOAT32))
        return 0;
    if (GDALGetDriverCount() == 0)
        GDALAllRegister();
    GDALDataset *poDS;
    {
        // not a raster GDAL can open: simply not such a stack
        CPLErrorStateBackuper oState;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        poDS = GDALDataset::Open(path, GDAL_OF_RASTER);
        CPLPopErrorHandler();
    }
    if (!poDS)
        return 0;
    GGStackRows sRows;
    const bool bFound =
        GGStackRowsFind(poDS, type == GG_CFLOAT32 ? GDT_CFloat32 : GDT_Float32, &sRows);
    const int nBands = poDS->GetRasterCount();
    GDALClose(GDALDataset::ToHandle(poDS));
    if (!bFound)
        return 0;
    out->offset = sRows.nOffset;
    out->row_bytes = sRows.nRowBytes;
    out->bands = nBands;
    return 1;
}
