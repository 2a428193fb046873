/*
 * gg_rows_dataset.h -- what the GG datasets computed in blocks of whole
 * output rows share (GG:ortho:, GG:warp:): the device started at the first
 * read, the block of rows last computed, bands that ask their dataset for
 * a block of rows, their nodata, and one RasterIO at a time on a shared
 * handle (GDAL 3.6's block cache is not thread-safe for one handle
 * read from several threads; docs/driver_gg.md).
 *
 * MIT licence.
 */
#ifndef GG_ROWS_DATASET_H
#define GG_ROWS_DATASET_H

#include "geogpu.h"
#include "gg_spec.h"

#include "gdal_pam.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include <mutex>
#include <string>
#include <vector>

// GDALDataset::IRasterIO's band map became const in GDAL 3.8.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 8, 0)
#define GG_ROWS_BANDMAP_TYPE const int *
#else
#define GG_ROWS_BANDMAP_TYPE int *
#endif

class GGRowsDataset : public GDALPamDataset
{
    std::recursive_mutex m_oIOMutex{};

  public:
    // Block row nBlockYOff of band iBand (0-based) into pImage.
    virtual CPLErr ReadRows(int iBand, int nBlockYOff, void *pImage) = 0;

    std::recursive_mutex &IOMutex()
    {
        return m_oIOMutex;
    }
    void DisablePamSaving()
    {
        nPamFlags |= GPF_NOSAVE;
    }

  protected:
    OGRSpatialReference m_oSRS{};
    std::string m_osDevice{};       // the device asked for (the device= key)

    // device state, behind m_oMutex (GDAL may read from several threads)
    std::mutex m_oMutex{};
    gg_context *m_psContext = nullptr;  // destroyed after the subclass's sessions
    std::string m_osError{};        // a failed start, reported again
    int m_nCachedBlock = -1;        // the block whose bands are in m_abyBlock
    std::vector<GByte> m_abyBlock{};

    ~GGRowsDataset() override
    {
        if (m_psContext)
            gg_context_destroy(m_psContext);
    }

    // Starts the device once, m_oMutex held; false after reporting
    // "GG: <pszOp>: <why>" (again at every later call).
    bool StartContextLocked(const char *pszOp)
    {
        if (m_osError.empty() && !m_psContext)
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
            else
                CPLDebug("GG", "%s: device %s", GetDescription(),
                         gg_context_device_name(m_psContext));
        }
        if (!m_osError.empty())
        {
            CPLError(CE_Failure, CPLE_AppDefined, "GG: %s: %s", pszOp, m_osError.c_str());
            return false;
        }
        return true;
    }

    CPLErr IRasterIO(GDALRWFlag eRWFlag, int nXOff, int nYOff, int nXSize, int nYSize, void *pData,
                     int nBufXSize, int nBufYSize, GDALDataType eBufType, int nBandCount,
                     GG_ROWS_BANDMAP_TYPE panBandMap, GSpacing nPixelSpace, GSpacing nLineSpace,
                     GSpacing nBandSpace, GDALRasterIOExtraArg *psExtraArg) override
    {
        std::lock_guard<std::recursive_mutex> oLock(m_oIOMutex);
        return GDALPamDataset::IRasterIO(eRWFlag, nXOff, nYOff, nXSize, nYSize, pData, nBufXSize,
                                         nBufYSize, eBufType, nBandCount, panBandMap, nPixelSpace,
                                         nLineSpace, nBandSpace, psExtraArg);
    }
};

class GGRowsBand final : public GDALPamRasterBand
{
    bool m_bHasNodata;
    double m_dfNodata;

  public:
    GGRowsBand(GGRowsDataset *poDSIn, int nBandIn, GDALDataType eType, int nBlockY,
               bool bHasNodata, double dfNodata)
        : m_bHasNodata(bHasNodata), m_dfNodata(dfNodata)
    {
        poDS = poDSIn;
        nBand = nBandIn;
        eDataType = eType;
        nBlockXSize = poDSIn->GetRasterXSize();
        nBlockYSize = nBlockY;
    }
    CPLErr IReadBlock(int, int nBlockYOff, void *pImage) override
    {
        return cpl::down_cast<GGRowsDataset *>(poDS)->ReadRows(nBand - 1, nBlockYOff, pImage);
    }
    CPLErr IRasterIO(GDALRWFlag eRWFlag, int nXOff, int nYOff, int nXSize, int nYSize, void *pData,
                     int nBufXSize, int nBufYSize, GDALDataType eBufType, GSpacing nPixelSpace,
                     GSpacing nLineSpace, GDALRasterIOExtraArg *psExtraArg) override
    {
        std::lock_guard<std::recursive_mutex> oLock(
            cpl::down_cast<GGRowsDataset *>(poDS)->IOMutex());
        return GDALPamRasterBand::IRasterIO(eRWFlag, nXOff, nYOff, nXSize, nYSize, pData,
                                            nBufXSize, nBufYSize, eBufType, nPixelSpace,
                                            nLineSpace, psExtraArg);
    }
    double GetNoDataValue(int *pbSuccess) override
    {
        if (pbSuccess)
            *pbSuccess = m_bHasNodata;
        return m_bHasNodata ? m_dfNodata : 0.0;
    }
};

#endif /* GG_ROWS_DATASET_H */
