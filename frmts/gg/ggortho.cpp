/*
 * ggortho.cpp -- GG:ortho:...:scene.tif and <GGVRTDataset operation="ortho">:
 * an orthoimage opened lazily.  Opening does the GDAL part of gdal_ortho
 * (RPCs, the output grid gdalwarp would choose, DEM window, checks: see
 * gg_ortho_scene.h) without a device; each block of rows is computed on the
 * device when GDAL first reads it, by the same code as gdal_ortho's, on the
 * same whole grid steps, so the pixels are gdal_ortho's.
 *
 * Orthorectification is not a tile op (its source window is anywhere in the
 * scene and it needs GDAL/PROJ for its coordinates), so it has its own
 * dataset class here rather than an entry in the op registry.
 *
 * MIT licence.
 */
#include "gg_driver.h"
#include "gg_rows_dataset.h"
#include "gg_ortho_scene.h"
#include "gg_spec.h"

#include "cpl_string.h"
#include "gdal_pam.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace
{
// Bytes of one block of output rows, all bands (GDAL's cache holds a few).
constexpr double BLOCK_BYTES = 16.0 * 1024 * 1024;

class GGOrthoDataset final : public GGRowsDataset
{
    ggo_options m_sOptions{};
    std::vector<std::string> m_aosValues{};  // storage of m_sOptions' strings
    std::string m_osScene{};
    ggo_scene m_sScene{};
    bool m_bSceneOpen = false;
    gg_ortho_session *m_psSession = nullptr;  // behind m_oMutex

    bool StartLocked();
    CPLErr ReadRows(int iBand, int nBlockYOff, void *pImage) override;

  public:
    GGOrthoDataset() = default;
    ~GGOrthoDataset() override;

    static GDALDataset *Open(const GGSpec &oSpec, const char *pszName, bool bConnection);

    CPLErr GetGeoTransform(double *padfTransform) override
    {
        memcpy(padfTransform, m_sScene.gt, sizeof(m_sScene.gt));
        return CE_None;
    }
    const OGRSpatialReference *GetSpatialRef() const override
    {
        return &m_oSRS;
    }
};


GGOrthoDataset::~GGOrthoDataset()
{
    GGOrthoDataset::FlushCache(true);
    gg_ortho_session_destroy(m_psSession);
    if (m_bSceneOpen)
        ggo_scene_close(&m_sScene);
}

bool GGOrthoDataset::StartLocked()
{
    if (m_psSession)
        return true;
    if (!StartContextLocked("ortho"))
        return false;
    if (ggo_session_create(&m_sScene, m_psContext, &m_psSession))
    {
        m_osError = m_sScene.err;
        CPLError(CE_Failure, CPLE_AppDefined, "GG: ortho: %s", m_osError.c_str());
        return false;
    }
    return true;
}

// Computes every band of block row nBlockYOff once and keeps them, so that
// reading the other bands of the same block costs nothing.
CPLErr GGOrthoDataset::ReadRows(int iBand, int nBlockYOff, void *pImage)
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    int nBlockY = 0, nDummy = 0;
    GetRasterBand(1)->GetBlockSize(&nDummy, &nBlockY);
    const int nW = nRasterXSize;
    const size_t nTypeSize = gg_type_size(m_sScene.dst_t);
    const size_t nPlane = static_cast<size_t>(nW) * nBlockY * nTypeSize;
    if (m_nCachedBlock != nBlockYOff)
    {
        if (!StartLocked())
            return CE_Failure;
        const int nY0 = nBlockYOff * nBlockY;
        const int nRows = std::min(nBlockY, nRasterYSize - nY0);
        std::vector<GByte> abyRows;
        try
        {
            m_abyBlock.resize(nPlane * nBands);
            abyRows.resize(static_cast<size_t>(nW) * nRows * nTypeSize * nBands);
        }
        catch (const std::bad_alloc &)
        {
            CPLError(CE_Failure, CPLE_OutOfMemory, "GG: ortho: out of memory for a block");
            return CE_Failure;
        }
        m_nCachedBlock = -1;
        m_sScene.err[0] = 0;
        // GDAL's own failures (a read) are folded into the one line below
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const int nFailed =
            ggo_compute_block(&m_sScene, m_psSession, m_psContext, nY0, nRows, abyRows.data());
        CPLPopErrorHandler();
        if (nFailed)
        {
            CPLError(CE_Failure, CPLE_AppDefined, "GG: ortho: %s", m_sScene.err);
            return CE_Failure;
        }
        // rows of the last block below the raster: nodata, never garbage
        for (int b = 0; b < nBands; ++b)
        {
            const double dfFill = m_sScene.dst_nd ? m_sScene.dst_nd[b] : m_sScene.oo.dst_init;
            GByte *pabyPlane = m_abyBlock.data() + nPlane * b;
            memcpy(pabyPlane, abyRows.data() + static_cast<size_t>(nW) * nRows * nTypeSize * b,
                   static_cast<size_t>(nW) * nRows * nTypeSize);
            if (nRows < nBlockY)
                GDALCopyWords64(&dfFill, GDT_Float64, 0,
                                pabyPlane + static_cast<size_t>(nW) * nRows * nTypeSize,
                                m_sScene.dst_gdt, static_cast<int>(nTypeSize),
                                static_cast<GPtrDiff_t>(nW) * (nBlockY - nRows));
        }
        m_nCachedBlock = nBlockYOff;
    }
    memcpy(pImage, m_abyBlock.data() + nPlane * iBand, nPlane);
    return CE_None;
}

GDALDataset *GGOrthoDataset::Open(const GGSpec &oSpec, const char *pszName, bool bConnection)
{
    if (oSpec.aosInputs.size() != 1)
    {
        CPLError(CE_Failure, CPLE_OpenFailed,
                 "GG: ortho takes exactly 1 input (the scene), got %d in '%s'",
                 static_cast<int>(oSpec.aosInputs.size()), pszName);
        return nullptr;
    }
    auto poDS = std::make_unique<GGOrthoDataset>();
    ggo_options_default(&poDS->m_sOptions);
    // the option strings live as long as the dataset
    poDS->m_aosValues.reserve(oSpec.aoOptions.size());
    for (const auto &oKV : oSpec.aoOptions)
    {
        std::string osValue = oKV.second;
        // a relative DEM in a .ggvrt is relative to the .ggvrt's folder
        VSIStatBufL sStat;
        if (!bConnection && EQUAL(oKV.first.c_str(), "dem") &&
            CPLIsFilenameRelative(osValue.c_str()) && !STARTS_WITH(osValue.c_str(), "/vsi"))
        {
            const std::string osNear =
                CPLProjectRelativeFilename(CPLGetPath(pszName), osValue.c_str());
            if (VSIStatL(osNear.c_str(), &sStat) == 0)
                osValue = osNear;
        }
        poDS->m_aosValues.push_back(osValue);
        char szError[512] = "";
        if (ggo_set_option(&poDS->m_sOptions, oKV.first.c_str(),
                           poDS->m_aosValues.back().c_str(), szError, sizeof(szError)))
        {
            CPLError(CE_Failure, CPLE_OpenFailed, "GG: ortho: %s", szError);
            return nullptr;
        }
    }
    char szDeviceError[256] = "";
    const std::string osCheckDevice = GGRequestedDevice(oSpec.osDevice, false);
    if (!osCheckDevice.empty() &&
        gg_device_check(osCheckDevice.c_str(), szDeviceError, sizeof(szDeviceError)) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", szDeviceError);
        return nullptr;
    }
    poDS->m_osDevice = oSpec.osDevice;
    poDS->m_osScene = oSpec.aosInputs[0];

    // The scene's own warnings (geoid) go through GDAL as usual; its
    // failure is one line.
    ggo_scene &sc = poDS->m_sScene;
    poDS->m_bSceneOpen = true;
    const std::string &osInput = poDS->m_osScene;
    const size_t nEq = osInput.find('='), nColon = osInput.find(':');
    if (bConnection && nEq != std::string::npos && nColon != std::string::npos && nEq < nColon &&
        !ggo_is_option(osInput.substr(0, nEq).c_str()))
    {
        VSIStatBufL sStat;
        if (VSIStatL(osInput.c_str(), &sStat) != 0)
        {
            // GG:ortho:dme=dem.tif:scene.tif reads 'dme=dem.tif:scene.tif' as
            // the scene: name the likelier mistake
            CPLError(CE_Failure, CPLE_OpenFailed,
                     "GG: ortho: '%s' is not an option of ortho (options: %s)",
                     osInput.substr(0, nEq).c_str(), ggo_option_names());
            return nullptr;
        }
    }
    // GDAL's own failures while the scene opens (a missing file...) are
    // folded into the one error line below; its warnings (the geoid policy)
    // are passed on.
    std::vector<std::string> aosWarnings;
    CPLPushErrorHandlerEx(
        [](CPLErr eClass, CPLErrorNum, const char *pszMsg)
        {
            if (eClass == CE_Warning)
                static_cast<std::vector<std::string> *>(CPLGetErrorHandlerUserData())
                    ->push_back(pszMsg ? pszMsg : "");
        },
        &aosWarnings);
    const int nFailed = ggo_scene_open(&sc, &poDS->m_sOptions, poDS->m_osScene.c_str());
    CPLPopErrorHandler();
    for (const auto &osWarning : aosWarnings)
        CPLError(CE_Warning, CPLE_AppDefined, "GG: ortho: %s", osWarning.c_str());
    if (nFailed)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: ortho: %s: %s", poDS->m_osScene.c_str(),
                 sc.err);
        return nullptr;
    }
    poDS->nRasterXSize = sc.out_w;
    poDS->nRasterYSize = sc.out_h;
    // Blocks of whole grid steps, as gdal_ortho's: the grid nodes are then
    // the same output pixels, and so are the results.
    const double dfRowBytes = static_cast<double>(sc.out_w) * gg_type_size(sc.dst_t) * sc.nbands;
    int nRows = static_cast<int>(BLOCK_BYTES / std::max(1.0, dfRowBytes));
    nRows = std::max(sc.step, nRows / sc.step * sc.step);
    nRows = std::min(nRows, sc.out_h);
    for (int i = 1; i <= sc.nbands; ++i)
    {
        auto poBand = new GGRowsBand(poDS.get(), i, sc.dst_gdt, nRows, sc.has_dstnodata != 0,
                                      sc.dst_nd ? sc.dst_nd[i - 1] : sc.dstnodata);
        poBand->SetColorInterpretation(
            GDALGetRasterColorInterpretation(GDALGetRasterBand(sc.src, i)));
        poDS->SetBand(i, poBand);
    }
    char *pszWkt = nullptr;
    OSRExportToWkt(sc.dst_srs, &pszWkt);
    poDS->m_oSRS.importFromWkt(pszWkt);
    CPLFree(pszWkt);
    poDS->m_oSRS.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
    poDS->GDALDataset::SetMetadataItem("GG_OPERATION", "ortho");
    std::string osOptions;
    for (const auto &oKV : oSpec.aoOptions)
        osOptions += (osOptions.empty() ? "" : ":") + oKV.first + "=" + oKV.second;
    poDS->GDALDataset::SetMetadataItem("GG_OPTIONS", osOptions.c_str());
    poDS->GDALDataset::SetMetadataItem(
        "GG_ORTHO_GRID_STEP", CPLSPrintf("%d", sc.step));
    poDS->SetDescription(pszName);
    if (bConnection)
        poDS->DisablePamSaving();  // no .aux.xml next to a connection string
    poDS->eAccess = GA_ReadOnly;
    return poDS.release();
}
}  // namespace

GDALDataset *GGOrthoOpen(const GGSpec &oSpec, const char *pszName, bool bConnection)
{
    GDALDataset *poDS = GGOrthoDataset::Open(oSpec, pszName, bConnection);
    if (poDS)
        poDS->SetDescription(pszName);
    return poDS;
}
