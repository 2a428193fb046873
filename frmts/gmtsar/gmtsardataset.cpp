/*
 * gmtsardataset.cpp -- the GMTSAR driver: a GMTSAR PRM file opened as its
 * SLC, one CInt16 band read straight from the raw file (int16 I/Q,
 * little-endian, num_rng_bins samples a line), every "name = value" line
 * of the PRM as dataset metadata in the default domain.  Read-only.  The
 * PRM and the SLC are found and checked by the library's one PRM reader
 * (gg_xcorr_prm_read), so a missing or short SLC fails at open with its
 * one-line error.
 *
 * MIT licence.
 */
#include "gmtsar_driver.h"

#include "geogpu.h"

#include "cpl_string.h"
#include "gdal_priv.h"
#include "rawdataset.h"

#include <cctype>
#include <climits>
#include <cstring>
#include <memory>
#include <string>

namespace
{

class GMTSARDataset final : public RawDataset
{
    std::string m_slc;

  public:
    ~GMTSARDataset() override { FlushCache(true); }
    char **GetFileList() override
    {
        char **files = RawDataset::GetFileList();
        if (CSLFindString(files, m_slc.c_str()) < 0)
            files = CSLAddString(files, m_slc.c_str());
        return files;
    }
    static int Identify(GDALOpenInfo *poOpenInfo);
    static GDALDataset *Open(GDALOpenInfo *poOpenInfo);
};

bool IsName(const char *s)
{
    if (!(isalpha(static_cast<unsigned char>(*s)) || *s == '_'))
        return false;
    for (; *s; ++s)
        if (!(isalnum(static_cast<unsigned char>(*s)) || *s == '_'))
            return false;
    return true;
}

// A PRM by its content: text whose complete lines (of the first 16 KB: a
// PRM is a few KB) are blank or "name = value", num_rng_bins among them.
int GMTSARDataset::Identify(GDALOpenInfo *poOpenInfo)
{
    if (poOpenInfo->fpL == nullptr || poOpenInfo->nHeaderBytes < 16)
        return FALSE;
    poOpenInfo->TryToIngest(16384);
    const char *h = reinterpret_cast<const char *>(poOpenInfo->pabyHeader);
    const int n = poOpenInfo->nHeaderBytes;
    for (int i = 0; i < n; ++i)
    {
        const unsigned char c = static_cast<unsigned char>(h[i]);
        if (c == 0 || (c < 32 && c != '\t' && c != '\r' && c != '\n'))
            return FALSE;
    }
    bool bRngBins = false;
    for (int i = 0; i < n;)
    {
        const char *eol = static_cast<const char *>(memchr(h + i, '\n', n - i));
        if (!eol && n >= 16384)
            break;  // a line cut by the ingest limit
        const int len = eol ? static_cast<int>(eol - (h + i)) : n - i;
        std::string line(h + i, len);
        i += len + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        char *key = nullptr, *value = nullptr;
        if (!gg_gmtsar_prm_line(&line[0], &key, &value) || !IsName(key))
            return FALSE;
        bRngBins = bRngBins || strcmp(key, "num_rng_bins") == 0;
    }
    return bRngBins;
}

int AddItem(const char *key, const char *value, void *user)
{
    // GDALDataset's, not PAM's: the PRM is not a change to save in .aux.xml
    static_cast<GDALDataset *>(user)->GDALDataset::SetMetadataItem(key, value);
    return 0;
}

GDALDataset *GMTSARDataset::Open(GDALOpenInfo *poOpenInfo)
{
    if (!Identify(poOpenInfo))
        return nullptr;
    const char *prm_path = poOpenInfo->pszFilename;
    if (poOpenInfo->eAccess == GA_Update)
    {
        CPLError(CE_Failure, CPLE_NotSupported, "GMTSAR: '%s': the driver is read-only", prm_path);
        return nullptr;
    }
    gg_xcorr_prm prm;
    char err[2048];
    if (gg_xcorr_prm_read(prm_path, &prm, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GMTSAR: %s", err);
        return nullptr;
    }
    if (prm.width > INT_MAX / 4)
    {
        CPLError(CE_Failure, CPLE_NotSupported,
                 "GMTSAR: PRM '%s': num_rng_bins %d is too wide for a GDAL raster line", prm_path,
                 prm.width);
        return nullptr;
    }
    VSILFILE *fp = VSIFOpenL(prm.slc_file, "rb");
    if (!fp)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GMTSAR: cannot open SLC '%s' of '%s'",
                 prm.slc_file, prm_path);
        return nullptr;
    }
    auto ds = std::make_unique<GMTSARDataset>();
    ds->m_slc = prm.slc_file;
    ds->nRasterXSize = prm.width;
    ds->nRasterYSize = prm.height;
    ds->eAccess = GA_ReadOnly;
    ds->SetBand(1, new RawRasterBand(ds.get(), 1, fp, 0, 4, 4 * prm.width, GDT_CInt16,
                                     RawRasterBand::ByteOrder::ORDER_LITTLE_ENDIAN,
                                     RawRasterBand::OwnFP::YES));
    if (gg_gmtsar_prm_each(prm_path, AddItem, ds.get(), err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GMTSAR: %s", err);
        return nullptr;
    }
    ds->SetDescription(prm_path);
    ds->TryLoadXML();
    ds->oOvManager.Initialize(ds.get(), prm_path);
    return ds.release();
}

}  // namespace

void GMTSARRegisterDriver(void)
{
    if (GDALGetDriverByName("GMTSAR") != nullptr)
        return;
    GDALDriver *drv = new GDALDriver();
    drv->SetDescription("GMTSAR");
    drv->SetMetadataItem(GDAL_DCAP_RASTER, "YES");
    drv->SetMetadataItem(GDAL_DMD_LONGNAME, "geogpu GMTSAR SLC (PRM + raw int16 I/Q .SLC)");
    drv->SetMetadataItem(GDAL_DMD_HELPTOPIC, "docs/driver_gmtsar.md");
    drv->SetMetadataItem(GDAL_DMD_EXTENSION, "PRM");
    drv->pfnOpen = GMTSARDataset::Open;
    drv->pfnIdentify = GMTSARDataset::Identify;
    GetGDALDriverManager()->RegisterDriver(drv);
}
