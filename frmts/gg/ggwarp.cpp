/*
 * ggwarp.cpp -- GG:warp:...:src.tif[,src2.tif] and <GGVRTDataset
 * operation="warp">: gdal_warp's output opened lazily.  Opening does the
 * GDAL part of gdal_warp (sources, transformer, gdalwarp's output grid,
 * checks: gg_warp_scene.h) without a device; each block of rows is
 * computed on the device when GDAL first reads it, by the same code and
 * over the same blocks as gdal_warp's, so the pixels are gdal_warp's.
 *
 * MIT licence.
 */
#include "gg_driver.h"
#include "gg_rows_dataset.h"
#include "gg_spec.h"
#include "gg_warp_scene.h"

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
class GGWarpDataset final : public GGRowsDataset
{
    ggw_options m_sOptions{};
    char **m_papszArgv = nullptr;  // the strings m_sOptions points into
    ggw_scene m_sScene{};
    bool m_bSceneOpen = false;
    OGRSpatialReference m_oSRS{};
    std::string m_osDevice{};

    // device state, behind the mutex (GDAL may read from several threads)
    std::mutex m_oMutex{};
    gg_context *m_psContext = nullptr;
    std::string m_osError{};   // a failed device start, reported again
    int m_nCachedBlock = -1;   // the block whose bands are in m_abyBlock
    std::vector<GByte> m_abyBlock{};

    bool StartLocked();
    CPLErr ReadRows(int iBand, int nBlockYOff, void *pImage) override;

  public:
    GGWarpDataset() = default;
    ~GGWarpDataset() override;

    static GDALDataset *Open(const GGSpec &oSpec, const char *pszName, bool bConnection);

    CPLErr GetGeoTransform(double *padfTransform) override
    {
        memcpy(padfTransform, m_sScene.gt, sizeof(m_sScene.gt));
        return CE_None;
    }
    const OGRSpatialReference *GetSpatialRef() const override
    {
        return m_oSRS.IsEmpty() ? nullptr : &m_oSRS;
    }
};


GGWarpDataset::~GGWarpDataset()
{
    GGWarpDataset::FlushCache(true);
    if (m_bSceneOpen)
        ggw_scene_free(&m_sScene);  // sessions before their context
    pthread_mutex_destroy(&m_sScene.mu);
    if (m_psContext)
        gg_context_destroy(m_psContext);
    ggw_options_free(&m_sOptions);
    CSLDestroy(m_papszArgv);
}

bool GGWarpDataset::StartLocked()
{
    if (m_psContext)
        return true;
    if (m_osError.empty())
    {
        const std::string osDevice = GGRequestedDevice(m_osDevice, true);
        char szError[512] = "";
        if (gg_context_create(osDevice.c_str(), &m_psContext, szError, sizeof(szError)) !=
                GG_OK ||
            !m_psContext)
        {
            m_psContext = nullptr;
            m_osError = szError[0] ? szError : "the device could not start";
        }
    }
    if (!m_osError.empty())
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: warp: %s", m_osError.c_str());
        return false;
    }
    m_sScene.ctx = m_psContext;
    CPLDebug("GG", "%s: device %s", GetDescription(), gg_context_device_name(m_psContext));
    return true;
}

// Computes every band of block row nBlockYOff once and keeps them, so that
// reading the other bands of the same block costs nothing.
CPLErr GGWarpDataset::ReadRows(int iBand, int nBlockYOff, void *pImage)
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    ggw_scene &w = m_sScene;
    const int nW = nRasterXSize, nBlockY = w.rows;
    const GDALDataType eType = w.dst_gdt;
    const size_t nTypeSize = GDALGetDataTypeSizeBytes(eType);
    const size_t nPlane = static_cast<size_t>(nW) * nBlockY * nTypeSize;
    if (m_nCachedBlock != nBlockYOff)
    {
        if (!StartLocked())
            return CE_Failure;
        wslot &sl = w.slot[0];
        sl.y0 = nBlockYOff * nBlockY;
        sl.rows = std::min(nBlockY, nRasterYSize - sl.y0);
        try
        {
            m_abyBlock.resize(nPlane * nBands);
        }
        catch (const std::bad_alloc &)
        {
            CPLError(CE_Failure, CPLE_OutOfMemory, "GG: warp: out of memory for a block");
            return CE_Failure;
        }
        m_nCachedBlock = -1;
        w.err[0] = 0;
        // GDAL's own failures (a read) are folded into the one line below
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const int nFailed = (!sl.dst && ggw_slot_alloc(&w, &sl, nBlockY)) ||
                            ggw_read_rows(&w, 0, &sl) || ggw_compute_rows(&w, &sl);
        CPLPopErrorHandler();
        if (nFailed)
        {
            CPLError(CE_Failure, CPLE_AppDefined, "GG: warp: %s", w.err);
            return CE_Failure;
        }
        // the kernel's planes to the bands (a complex band from its two
        // planes), rows below the raster's end filled with the band's fill
        const size_t nRowPix = static_cast<size_t>(nW) * sl.rows;
        const size_t nKS = gg_type_size(w.kt_dst);
        for (int b = 0; b < nBands; ++b)
        {
            GByte *pabyOut = m_abyBlock.data() + nPlane * b;
            if (w.complex)
            {
                const float *pafRe = static_cast<const float *>(sl.dst) + 2 * nRowPix * b;
                const float *pafIm = pafRe + nRowPix;
                std::vector<float> afPair(2 * nRowPix);
                for (size_t i = 0; i < nRowPix; ++i)
                {
                    afPair[2 * i] = pafRe[i];
                    afPair[2 * i + 1] = pafIm[i];
                }
                GDALCopyWords64(afPair.data(), GDT_CFloat32, 8, pabyOut, eType,
                                static_cast<int>(nTypeSize), static_cast<GPtrDiff_t>(nRowPix));
            }
            else
                memcpy(pabyOut, static_cast<const GByte *>(sl.dst) + nRowPix * nKS * b,
                       nRowPix * nKS);
            if (sl.rows < nBlockY)
            {
                // the alpha band (-dstalpha, last) is 0 where nothing is
                const double dfFill = b < w.nbands ? w.dst_nd[b * (w.complex ? 2 : 1)] : 0.0;
                GDALCopyWords64(&dfFill, GDT_Float64, 0, pabyOut + nRowPix * nTypeSize, eType,
                                static_cast<int>(nTypeSize),
                                static_cast<GPtrDiff_t>(nW) * (nBlockY - sl.rows));
            }
        }
        m_nCachedBlock = nBlockYOff;
    }
    memcpy(pImage, m_abyBlock.data() + nPlane * iBand, nPlane);
    return CE_None;
}

GDALDataset *GGWarpDataset::Open(const GGSpec &oSpec, const char *pszName, bool bConnection)
{
    auto poDS = std::make_unique<GGWarpDataset>();
    pthread_mutex_init(&poDS->m_sScene.mu, nullptr);
    std::vector<const char *> apszKeys, apszValues, apszInputs;
    std::vector<std::string> aosInputs;
    for (const auto &oKV : oSpec.aoOptions)
    {
        apszKeys.push_back(oKV.first.c_str());
        apszValues.push_back(oKV.second.c_str());
    }
    // a relative input of a .ggvrt is relative to the .ggvrt's folder
    for (const auto &osInput : oSpec.aosInputs)
    {
        std::string os = osInput;
        VSIStatBufL sStat;
        if (!bConnection && CPLIsFilenameRelative(os.c_str()) && !STARTS_WITH(os.c_str(), "/vsi"))
        {
            const std::string osNear = CPLProjectRelativeFilename(CPLGetPath(pszName), os.c_str());
            if (VSIStatL(osNear.c_str(), &sStat) == 0)
                os = osNear;
        }
        aosInputs.push_back(os);
    }
    for (const auto &os : aosInputs)
        apszInputs.push_back(os.c_str());
    // GG:warp:rsampling=cubic:src.tif reads 'rsampling=cubic:src.tif' as the
    // source: name the likelier mistake
    if (bConnection && aosInputs.size() == 1)
    {
        const std::string &osIn = aosInputs[0];
        const size_t nEq = osIn.find('='), nColon = osIn.find(':');
        VSIStatBufL sStat;
        if (nEq != std::string::npos && nColon != std::string::npos && nEq < nColon &&
            !ggw_is_option(osIn.substr(0, nEq).c_str()) && VSIStatL(osIn.c_str(), &sStat) != 0)
        {
            CPLError(CE_Failure, CPLE_OpenFailed, "GG: warp: '%s' is not an option of warp",
                     osIn.substr(0, nEq).c_str());
            return nullptr;
        }
    }
    char szError[1024] = "";
    const int nParsed = ggw_parse_keys(
        &poDS->m_sOptions, &poDS->m_papszArgv, static_cast<int>(apszKeys.size()),
        apszKeys.data(), apszValues.data(), static_cast<int>(apszInputs.size()),
        apszInputs.data(), szError, sizeof(szError));
    if (nParsed != GGW_CMD_RUN)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: warp: %s", szError);
        return nullptr;
    }
    if (poDS->m_sOptions.rpc)
    {
        // RPC sources: gdal_ortho's path, as gdal_warp -rpc takes it
        char **papszKV = ggw_rpc_options(&poDS->m_sOptions, szError, sizeof(szError));
        if (!papszKV || aosInputs.size() != 1)
        {
            CSLDestroy(papszKV);
            CPLError(CE_Failure, CPLE_OpenFailed, "GG: warp: %s",
                     papszKV ? "rpc takes one source" : szError);
            return nullptr;
        }
        GGSpec oOrtho;
        oOrtho.osOperation = "ortho";
        oOrtho.osDevice = oSpec.osDevice;
        oOrtho.aosInputs = aosInputs;
        for (int i = 0; papszKV[i]; ++i)
        {
            char *pszKey = nullptr;
            const char *pszValue = CPLParseNameValue(papszKV[i], &pszKey);
            oOrtho.aoOptions.emplace_back(pszKey, pszValue);
            CPLFree(pszKey);
        }
        CSLDestroy(papszKV);
        return GGOrthoOpen(oOrtho, pszName, bConnection);
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

    ggw_scene &w = poDS->m_sScene;
    w.o = &poDS->m_sOptions;
    w.dst_name = pszName;
    poDS->m_bSceneOpen = true;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    const int nFailed = ggw_scene_setup(&w) || ggw_scene_readers(&w, 1);
    CPLPopErrorHandler();
    if (nFailed)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: warp: %s", w.err);
        return nullptr;
    }
    ggw_plan_rows(&w);
    poDS->nRasterXSize = w.out_w;
    poDS->nRasterYSize = w.out_h;
    for (int i = 1; i <= w.nbands; ++i)
    {
        const int k = (i - 1) * (w.complex ? 2 : 1);
        auto poBand = new GGRowsBand(poDS.get(), i, w.dst_gdt, w.rows, w.has_dstnd != 0,
                                     w.dst_nd[k]);
        poBand->SetColorInterpretation(
            GDALGetRasterColorInterpretation(GDALGetRasterBand(w.src[0].ds[0], i)));
        poDS->SetBand(i, poBand);
    }
    if (w.alpha)
    {
        auto poBand = new GGRowsBand(poDS.get(), w.out_bands, w.dst_gdt, w.rows,
                                     w.has_dstnd != 0, w.dst_nd[0]);
        poBand->SetColorInterpretation(GCI_AlphaBand);
        poDS->SetBand(w.out_bands, poBand);
    }
    if (w.dst_wkt)
    {
        poDS->m_oSRS.importFromWkt(w.dst_wkt);
        poDS->m_oSRS.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
    }
    poDS->GDALDataset::SetMetadataItem("GG_OPERATION", "warp");
    std::string osOptions;
    for (const auto &oKV : oSpec.aoOptions)
        osOptions += (osOptions.empty() ? "" : ":") + oKV.first + "=" + oKV.second;
    poDS->GDALDataset::SetMetadataItem("GG_OPTIONS", osOptions.c_str());
    poDS->SetDescription(pszName);
    if (bConnection)
        poDS->DisablePamSaving();  // no .aux.xml next to a connection string
    poDS->eAccess = GA_ReadOnly;
    return poDS.release();
}
}  // namespace

GDALDataset *GGWarpOpen(const GGSpec &oSpec, const char *pszName, bool bConnection)
{
    return GGWarpDataset::Open(oSpec, pszName, bConnection);
}
