/*
 * gg_processed.cpp -- a processed dataset: a geogpu operation applied to
 * input rasters, computed lazily block by block on the device.  The
 * algorithms live in libgeogpu; this file only maps GDAL's
 * dataset/band/block model onto the op API of geogpu.h.  The GG driver
 * (frmts/gg) opens these from GG: strings and .ggvrt files; the utilities
 * build them directly.
 *
 * MIT licence.
 */
#include "gg_processed.h"
#include "gg_device_start.h"
#include "gpu/pipeline.h"
#include "gpu/fault.h"
#include "gg_spec.h"
#include "gg_stack_rows.h"

#include "cpl_string.h"
#include "gdal_pam.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace
{
constexpr const char *DRIVER_NAME = "GG";

// Strip blocks hold at most this many device bytes (gg_op_bytes_per_pixel
// times pixels): big enough to keep a GPU busy, small enough for GDAL's
// block cache and for the host buffers.  Block sizes must be fixed when the
// dataset opens, before any device is started, so they cannot come from
// gg_plan_rows (which needs a context).
constexpr double STRIP_BYTE_BUDGET = 64.0 * 1024 * 1024;

// Square blocks for ops whose output rows need many input rows: a strip of
// a rotated image would need a source window nearly as large as the image.
constexpr int SQUARE_BLOCK = 512;

// GG_FAULT=read:N (tests, gpu/fault.c): the N-th input read fails the way
// a real read error does.
bool InjectedReadFault()
{
    if (!gg_fault_point("read"))
        return false;
    CPLError(CE_Failure, CPLE_FileIO, "GG: reading the input failed: injected fault (GG_FAULT)");
    return true;
}

// A read of an input, quietly: GDAL's message (libtiff's "Read error at
// scanline ...") goes into *posMessage, without the file's name.
template <class Read> CPLErr QuietRead(Read &&read, std::string *posMessage)
{
    CPLErrorStateBackuper oState;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();
    const CPLErr eErr = read();
    if (eErr != CE_None)
        *posMessage = CPLGetLastErrorMsg();
    CPLPopErrorHandler();
    return eErr;
}

// The one error of a failed input read, naming the file.
CPLErr ReadFailure(const char *pszInput, const std::string &osMessage)
{
    CPLError(CE_Failure, CPLE_FileIO, "GG: reading '%s' failed: %s", pszInput,
             osMessage.empty() ? "read error" : osMessage.c_str());
    return CE_Failure;
}

// Statistics passes read the input in strips of at most this many bytes.
constexpr double STATS_STRIP_BYTES = 64.0 * 1024 * 1024;

GDALDataType GDALTypeOf(gg_type eType)
{
    switch (eType)
    {
        case GG_FLOAT32:
            return GDT_Float32;
        case GG_CFLOAT32:
            return GDT_CFloat32;
        case GG_BYTE:
            return GDT_Byte;
        case GG_UINT16:
            return GDT_UInt16;
        case GG_INT16:
            return GDT_Int16;
    }
    return GDT_Unknown;
}


// Fills pixels of a block with the output nodata value.
void FillNodata(void *pData, GDALDataType eType, size_t nPixels, double dfNodata)
{
    if (eType == GDT_Byte)
    {
        memset(pData, static_cast<int>(dfNodata), nPixels);
        return;
    }
    const size_t nValues = nPixels * (eType == GDT_CFloat32 ? 2 : 1);
    float *pafData = static_cast<float *>(pData);
    std::fill(pafData, pafData + nValues, static_cast<float>(dfNodata));
}

}  // namespace

std::string GGOpMessage(const gg_op *op, gg_status eStatus)
{
    const char *pszMsg = gg_op_last_error(op);
    return pszMsg && *pszMsg ? pszMsg : gg_status_string(eStatus);
}

bool GGInputCountOK(const char *pszOperation, int nGiven, const char *pszWhere)
{
    const int nWanted = gg_op_input_count(pszOperation);
    if (nWanted < 0 ? nGiven >= 1 : nGiven == nWanted)
        return true;
    const std::string osWhere = pszWhere ? CPLSPrintf(" in '%s'", pszWhere) : "";
    if (nWanted < 0)
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: %s takes one or more inputs, got none%s",
                 pszOperation, osWhere.c_str());
    else
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: %s takes exactly %d input%s, got %d%s",
                 pszOperation, nWanted, nWanted == 1 ? "" : "s", nGiven, osWhere.c_str());
    return false;
}

/************************************************************************/
/*                              GGDataset                               */
/************************************************************************/

/* Number of threads reading a stack window of nRows rows: half the
 * processors this process may use, 1 to 8; each thread at least 16 rows
 * (gdal_ptsel, the paper's stack on an H200: 2.8-3.1 s with 8 against 3.8 s
 * with one; bench/RESULTS.md, session 14). */
constexpr int MAX_SLICES = 8;
static int StackReaders(int nRows)
{
    const int nThreads = std::clamp(CPLGetNumCPUs() / 2, 1, MAX_SLICES);
    return std::max(1, std::min(nThreads, nRows / 16));
}

/* A block's output window and source window, and the source read on the
 * host: the bands' planes (nPlane bytes each), or a stack's rows as they
 * lie in the file (bRaw: one pixel-interleaved tile). */
struct GGBlockSource
{
    gg_window sDst{}, sSrc{};
    std::vector<GByte> aby{};
    size_t nPlane = 0;
    bool bRaw = false;
};

/* One strip of a product (geogpu_gdal's pipeline unit): a row of blocks,
 * its blocks' sources, then its output bands (nWidth x nRows each). */
struct GGStrip
{
    int nY0 = 0, nRows = 0, nWidth = 0;
    std::vector<GGBlockSource> aoBlocks{};
    std::vector<std::vector<GByte>> aabyBand{};
};

class GGRasterBand;

// GDALDataset::IRasterIO's band map became const in GDAL 3.8.
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 8, 0)
#define GG_BANDMAP_TYPE const int *
#else
#define GG_BANDMAP_TYPE int *
#endif

struct GGStatsPass;

class GGDataset final : public GDALPamDataset
{
    friend class GGRasterBand;

    gg_op *m_poOp = nullptr;
    std::vector<GDALDataset *> m_apoInputs{};
    // The op's input bands: every band of every input, in order.
    std::vector<GDALRasterBand *> m_apoStack{};
    bool m_bOwnInputs = false;
    gg_raster_info m_sIn{};
    gg_raster_info m_sOut{};
    GDALDataType m_eSourceType = GDT_Unknown;  // what input windows are read as
    OGRSpatialReference m_oSRS{};
    std::string m_osDevice{};  // as requested; "" = GG_DEVICE, else auto

    // Device state, all behind m_oMutex: GDAL may read blocks of one
    // dataset from several threads and a context is not thread-safe.
    std::mutex m_oMutex{};
    gg_context *m_psContext = nullptr;
    std::string m_osContextError{};
    // A start begun by StartInBackground (gg_device_start.h), taken (under
    // m_oMutex) by the first call that needs the device.
    bool m_bStarting = false;
    std::string m_osStarting{};  // the device it starts
    gg_device_start m_sStarting{};
    std::vector<bool> m_abStatsDone{};
    std::vector<std::string> m_aosStatsError{};
    GGBlockSource m_oBlock{};          // the block GDAL asked for
    std::vector<GByte> m_abyOutput{};  // stack ops: the other bands of a block
    // The inputs' handles (and the stack readers') are one thread's at a
    // time: a pipeline reads one strip while the device computes another.
    // Taken before m_oMutex when both are needed.
    std::mutex m_oReadMutex{};
    // m_aapoReaders and the one-time look at how a stack lies in its file
    std::mutex m_oHandleMutex{};
    // Every RasterIO on the dataset or its bands, one at a time: GDAL's
    // block cache (3.6) is not thread-safe for one handle read from
    // several threads (two threads missing one block each adopt their own
    // copy, and reads returned other blocks' pixels).  Blocks are computed
    // one at a time anyway (m_oReadMutex, m_oMutex), so this costs only
    // the copies out of the cache.  Recursive: a dataset read goes through
    // its bands', a block read puts its stack siblings into the cache.
    std::recursive_mutex m_oIOMutex{};
    // input and band (1-based) of each band of m_apoStack
    std::vector<int> m_anStackInput{}, m_anStackBand{};
    int m_nBlockXSize = 0, m_nBlockYSize = 0;
    // Stack reads: handles of each reader thread (slot) on each input,
    // opened on first use; a null entry: the input cannot be reopened.
    std::vector<std::vector<GDALDataset *>> m_aapoReaders{};
    // A one-input stack as it lies in its file (gg_stack_rows.h): 0 not
    // looked at yet, 1 read as it lies (m_sRows), -1 through RasterIO.
    int m_nRawRows = 0;
    GGStackRows m_sRows{};

    void TakeStartedLocked();
    bool StartContextLocked();
    CPLErr ReadStackWindow(const gg_window &sSrc, size_t nPlane, GByte *pabyDst, size_t nBase);
    GDALDataset *ReaderHandle(size_t nSlot, size_t iInput);
    bool RawRows();
    bool SourceWindow(const gg_window &sDst, gg_window &sSrc);
    CPLErr ReadSourceLocked(GGBlockSource &s, int iBand, size_t nBase);
    CPLErr ComputeLocked(const GGBlockSource &s, int iBand, GByte *const *papabyOut,
                         size_t nStride);
    CPLErr RunFailure(gg_status eStatus);
    bool ComputeStatisticsLocked(int iBand, GDALProgressFunc pfnProgress, void *pProgressData);
    CPLErr ReadBlock(int iBand, int nBlockXOff, int nBlockYOff, int nBlockXSize,
                     int nBlockYSize, void *pImage);

  public:
    // one strip of the statistics pass (its pipeline's device stage)
    int AccumulateStrip(GGStatsPass &j, int iItem, int iSlot);
    GGDataset() = default;
    ~GGDataset() override;

    static GGDataset *Create(gg_op *op, std::vector<GDALDataset *> apoInputs, bool bOwnInputs,
                             const std::string &osDevice);

    CPLErr Start();
    void StartInBackground();
    const char *Backend();
    std::string RequestedDevice() const
    {
        return GGRequestedDevice(m_osDevice, true);
    }
    CPLErr ComputeStatistics(GDALProgressFunc pfnProgress, void *pProgressData);
    int StripRows() const
    {
        return m_nBlockYSize;
    }
    CPLErr ReadStrip(GGStrip &s, int iStrip, int iReader);
    CPLErr ComputeStrip(GGStrip &s);
    const gg_op *Operation() const
    {
        return m_poOp;
    }
    void DisablePamSaving()
    {
        nPamFlags |= GPF_NOSAVE;
    }
    void LoadPam(char **papszSiblings)
    {
        TryLoadXML(papszSiblings);
    }
    std::string DeviceName();
    std::string DeviceNotice();

    CPLErr GetGeoTransform(double *padfTransform) override;
    const OGRSpatialReference *GetSpatialRef() const override;
    char **GetFileList() override;

    std::recursive_mutex &IOMutex()
    {
        return m_oIOMutex;
    }

  protected:
    CPLErr IRasterIO(GDALRWFlag eRWFlag, int nXOff, int nYOff, int nXSize, int nYSize, void *pData,
                     int nBufXSize, int nBufYSize, GDALDataType eBufType, int nBandCount,
                     GG_BANDMAP_TYPE panBandMap, GSpacing nPixelSpace, GSpacing nLineSpace,
                     GSpacing nBandSpace, GDALRasterIOExtraArg *psExtraArg) override
    {
        std::lock_guard<std::recursive_mutex> oLock(m_oIOMutex);
        return GDALPamDataset::IRasterIO(eRWFlag, nXOff, nYOff, nXSize, nYSize, pData, nBufXSize,
                                         nBufYSize, eBufType, nBandCount, panBandMap, nPixelSpace,
                                         nLineSpace, nBandSpace, psExtraArg);
    }
};

/************************************************************************/
/*                             GGRasterBand                             */
/************************************************************************/

class GGRasterBand final : public GDALPamRasterBand
{
  public:
    GGRasterBand(GGDataset *poDSIn, int nBandIn, GDALDataType eType, int nBlockX, int nBlockY,
                 double dfNodata)
        : m_dfNodata(dfNodata)
    {
        poDS = poDSIn;
        nBand = nBandIn;
        eDataType = eType;
        nBlockXSize = nBlockX;
        nBlockYSize = nBlockY;
    }

    CPLErr IReadBlock(int nBlockXOff, int nBlockYOff, void *pImage) override
    {
        return cpl::down_cast<GGDataset *>(poDS)->ReadBlock(nBand - 1, nBlockXOff, nBlockYOff,
                                                             nBlockXSize, nBlockYSize, pImage);
    }

    // One RasterIO at a time on the dataset (GGDataset::m_oIOMutex).
    CPLErr IRasterIO(GDALRWFlag eRWFlag, int nXOff, int nYOff, int nXSize, int nYSize, void *pData,
                     int nBufXSize, int nBufYSize, GDALDataType eBufType, GSpacing nPixelSpace,
                     GSpacing nLineSpace, GDALRasterIOExtraArg *psExtraArg) override
    {
        std::lock_guard<std::recursive_mutex> oLock(
            cpl::down_cast<GGDataset *>(poDS)->IOMutex());
        return GDALPamRasterBand::IRasterIO(eRWFlag, nXOff, nYOff, nXSize, nYSize, pData,
                                            nBufXSize, nBufYSize, eBufType, nPixelSpace,
                                            nLineSpace, psExtraArg);
    }

    // The op decides the nodata value; PAM must not override it.
    double GetNoDataValue(int *pbSuccess) override
    {
        if (pbSuccess)
            *pbSuccess = TRUE;
        return m_dfNodata;
    }

  private:
    double m_dfNodata;
};

GGDataset::~GGDataset()
{
    {
        std::lock_guard<std::mutex> oLock(m_oMutex);
        TakeStartedLocked();
    }
    GGDataset::FlushCache(true);
    if (m_psContext)
        gg_context_destroy(m_psContext);
    gg_op_free(m_poOp);
    for (auto &apoSlot : m_aapoReaders)
        for (GDALDataset *poReader : apoSlot)
            if (poReader)
                GDALClose(GDALDataset::ToHandle(poReader));
    if (m_bOwnInputs)
        for (GDALDataset *poInput : m_apoInputs)
            GDALClose(GDALDataset::ToHandle(poInput));
}

CPLErr GGDataset::GetGeoTransform(double *padfTransform)
{
    if (!m_sOut.has_geotransform)
        return GDALPamDataset::GetGeoTransform(padfTransform);
    memcpy(padfTransform, m_sOut.geotransform, sizeof(m_sOut.geotransform));
    return CE_None;
}

const OGRSpatialReference *GGDataset::GetSpatialRef() const
{
    return m_oSRS.IsEmpty() ? GDALPamDataset::GetSpatialRef() : &m_oSRS;
}

/* The dataset's own files (a .ggvrt, its .aux.xml) and every file its
 * inputs read, recursively: a VRT over a GG: string over a file lists the
 * file, so a writer can refuse to replace what it reads. */
char **GGDataset::GetFileList()
{
    CPLStringList aosFiles(GDALPamDataset::GetFileList(), TRUE);
    for (GDALDataset *poInput : m_apoInputs) {
        char **papszInput = poInput ? poInput->GetFileList() : nullptr;
        for (char **ppsz = papszInput; ppsz && *ppsz; ++ppsz)
            if (aosFiles.FindString(*ppsz) < 0)
                aosFiles.AddString(*ppsz);
        CSLDestroy(papszInput);
    }
    return aosFiles.StealList();
}

/* Takes ownership of op (and of the inputs with bOwnInputs) even when it
 * fails, so callers never leak on error paths. */
/* Rows of a stack op's strip.  Each strip reads its source window, halo
 * included, for every band: 64 MiB of device footprint gives a 60-band
 * PtSel with r = 51 strips of 10 rows that each read 60 (six times the
 * input, and 268 strips of fixed costs for a 3260 x 2680 stack: 8.5 s on
 * an H200 where 335-row tiles take 2.1 s).  The device passes inside a
 * strip are planned apart (gg_plan_rows), so a taller strip costs host
 * memory only: at least 8 times the halo rows (at most 1/8 read twice),
 * within STACK_SOURCE_BUDGET of source window, and never fewer rows than
 * the device budget gives.  Rows are counted in source rows and converted
 * to output rows: an op whose output row stands for several source rows
 * (gdal_xcorr: a row of windows, skip rows apart) and whose windows do not
 * overlap has no halo, and its strips stay a few rows of windows instead
 * of the whole image. */
constexpr double STACK_SOURCE_BUDGET = 512.0 * 1024 * 1024;

static int StackStripRows(gg_op *op, const gg_raster_info &sIn, const gg_raster_info &sOut,
                          int nRows)
{
    // source rows per output row (1, or a window op's skip: gdal_xcorr)
    // and the halo: from the source windows of one and of two output rows
    gg_window sRow{0, sOut.height / 2, sOut.width, 1}, sSrc{};
    gg_window sRow2{0, sOut.height / 2, sOut.width, std::min(2, sOut.height - sOut.height / 2)},
        sSrc2{};
    if (gg_op_source_window(op, &sRow, &sSrc) != GG_OK ||
        gg_op_source_window(op, &sRow2, &sSrc2) != GG_OK)
        return nRows;
    const double dfStep =
        sRow2.height == 2 ? std::max(1, sSrc2.height - sSrc.height) : 1.0;
    const double dfHalo = std::max(0.0, sSrc.height - dfStep);
    const double dfRowBytes =
        static_cast<double>(sIn.bands) * gg_type_size(sIn.type) * std::max(1, sIn.width);
    const double dfWant = std::floor(
        std::min(8.0 * dfHalo, std::floor(STACK_SOURCE_BUDGET / dfRowBytes) - dfHalo) / dfStep);
    return static_cast<int>(std::clamp(std::max(dfWant, static_cast<double>(nRows)), 1.0,
                                       static_cast<double>(sOut.height)));
}

GGDataset *GGDataset::Create(gg_op *op, std::vector<GDALDataset *> apoInputs, bool bOwnInputs,
                             const std::string &osDevice)
{
    auto poDS = std::make_unique<GGDataset>();
    poDS->m_poOp = op;
    poDS->m_apoInputs = std::move(apoInputs);
    poDS->m_bOwnInputs = bOwnInputs;
    poDS->m_osDevice = osDevice;
    const char *pszOperation = gg_op_name(op);

    if (!GGInputCountOK(pszOperation, static_cast<int>(poDS->m_apoInputs.size()), nullptr))
        return nullptr;
    // a typo in the device fails at open; starting the device stays lazy
    char szDeviceError[256] = "";
    const std::string osCheckDevice = GGRequestedDevice(osDevice, false);
    if (!osCheckDevice.empty() &&
        gg_device_check(osCheckDevice.c_str(), szDeviceError, sizeof(szDeviceError)) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", szDeviceError);
        return nullptr;
    }
    // Every band of every input, stacked in order: all the same size, all
    // real or all complex (complex is processed as CFloat32, real as
    // Float32).  Single-input ops see their input's bands.
    GDALDataset *poInput = poDS->m_apoInputs[0];
    const GDALDataType eFirstType = poInput->GetRasterCount() > 0
                                        ? poInput->GetRasterBand(1)->GetRasterDataType()
                                        : GDT_Unknown;
    const bool bComplex = CPL_TO_BOOL(GDALDataTypeIsComplex(eFirstType));
    int iMember = -1;
    for (GDALDataset *poMember : poDS->m_apoInputs)
    {
        ++iMember;
        if (poMember->GetRasterCount() < 1)
        {
            CPLError(CE_Failure, CPLE_AppDefined, "GG: input '%s' has no raster bands",
                     poMember->GetDescription());
            return nullptr;
        }
        if (poMember->GetRasterXSize() != poInput->GetRasterXSize() ||
            poMember->GetRasterYSize() != poInput->GetRasterYSize())
        {
            CPLError(CE_Failure, CPLE_AppDefined,
                     "GG: input '%s' is %dx%d but '%s' is %dx%d: inputs must match in size",
                     poMember->GetDescription(), poMember->GetRasterXSize(),
                     poMember->GetRasterYSize(), poInput->GetDescription(),
                     poInput->GetRasterXSize(), poInput->GetRasterYSize());
            return nullptr;
        }
        for (int i = 1; i <= poMember->GetRasterCount(); ++i)
        {
            GDALRasterBand *poBand = poMember->GetRasterBand(i);
            const GDALDataType eType = poBand->GetRasterDataType();
            if (eType == GDT_Unknown || CPL_TO_BOOL(GDALDataTypeIsComplex(eType)) != bComplex)
            {
                CPLError(CE_Failure, CPLE_NotSupported,
                         "GG: unsupported data type %s in band %d of '%s'%s",
                         GDALGetDataTypeName(eType), i, poMember->GetDescription(),
                         eType == GDT_Unknown ? "" : " (inputs mix real and complex types)");
                return nullptr;
            }
            poDS->m_apoStack.push_back(poBand);
            poDS->m_anStackInput.push_back(iMember);
            poDS->m_anStackBand.push_back(i);
        }
    }
    const int nBands = static_cast<int>(poDS->m_apoStack.size());
    poDS->m_eSourceType = bComplex ? GDT_CFloat32 : GDT_Float32;

    gg_raster_info &sIn = poDS->m_sIn;
    sIn.width = poInput->GetRasterXSize();
    sIn.height = poInput->GetRasterYSize();
    sIn.bands = nBands;
    sIn.type = bComplex ? GG_CFLOAT32 : GG_FLOAT32;
    sIn.has_geotransform = poInput->GetGeoTransform(sIn.geotransform) == CE_None;
    if (!sIn.has_geotransform)
    {
        const double adfIdentity[6] = {0, 1, 0, 0, 0, 1};
        memcpy(sIn.geotransform, adfIdentity, sizeof(adfIdentity));
    }
    int bHasNodata = FALSE;
    sIn.nodata = poInput->GetRasterBand(1)->GetNoDataValue(&bHasNodata);
    sIn.has_nodata = bHasNodata;

    const gg_status eStatus = gg_op_prepare(op, &sIn, &poDS->m_sOut);
    if (eStatus != GG_OK)
    {
        CPLError(CE_Failure, eStatus == GG_ERR_UNSUPPORTED ? CPLE_NotSupported : CPLE_AppDefined,
                 "GG: %s", GGOpMessage(op, eStatus).c_str());
        return nullptr;
    }
    const gg_raster_info &sOut = poDS->m_sOut;
    poDS->nRasterXSize = sOut.width;
    poDS->nRasterYSize = sOut.height;

    int nBlockX, nBlockY;
    if (gg_op_prefers_tiles(op))
    {
        nBlockX = std::min(SQUARE_BLOCK, sOut.width);
        nBlockY = std::min(SQUARE_BLOCK, sOut.height);
    }
    else
    {
        const double dfBytesPerRow = std::max(1.0, gg_op_bytes_per_pixel(op)) * sOut.width;
        nBlockX = sOut.width;
        nBlockY = static_cast<int>(
            std::clamp(std::floor(STRIP_BYTE_BUDGET / dfBytesPerRow), 1.0,
                       static_cast<double>(sOut.height)));
        if (gg_op_is_stack(op))
            nBlockY = StackStripRows(op, sIn, sOut, nBlockY);
    }
    poDS->m_nBlockXSize = nBlockX;
    poDS->m_nBlockYSize = nBlockY;
    for (int i = 1; i <= sOut.bands; ++i)
    {
        auto poBand = new GGRasterBand(poDS.get(), i, GDALTypeOf(gg_op_band_type(op, i - 1)),
                                       nBlockX, nBlockY, gg_op_band_nodata(op, i - 1));
        poBand->GDALRasterBand::SetDescription(gg_op_band_name(op, i - 1));
        poDS->SetBand(i, poBand);
    }

    if (const OGRSpatialReference *poSRS = poInput->GetSpatialRef())
        poDS->m_oSRS = *poSRS;
    poDS->m_oSRS.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);

    // Provenance; set through GDALDataset so that PAM does not mark itself
    // dirty and write an .aux.xml for it.
    char szOptions[4096] = "";
    gg_op_options_string(op, szOptions, sizeof(szOptions));
    poDS->GDALDataset::SetMetadataItem("GG_OPERATION", pszOperation);
    poDS->GDALDataset::SetMetadataItem("GG_OPTIONS", szOptions);
    // Whether pixel values are areas or points survives every op.
    if (const char *pszAreaOrPoint = poInput->GetMetadataItem(GDALMD_AREA_OR_POINT))
        poDS->GDALDataset::SetMetadataItem(GDALMD_AREA_OR_POINT, pszAreaOrPoint);

    poDS->m_abStatsDone.assign(nBands, false);
    poDS->m_aosStatsError.assign(nBands, std::string());
    poDS->eAccess = GA_ReadOnly;
    poDS->poDriver = GetGDALDriverManager()->GetDriverByName(DRIVER_NAME);
    return poDS.release();
}

/************************************************************************/
/*                           Device and blocks                          */
/************************************************************************/

namespace
{
// The device's context, or NULL and why not.
gg_context *CreateContext(const std::string &osDevice, std::string &osError)
{
    gg_context *psContext = nullptr;
    char szError[512] = "";
    const gg_status eStatus =
        gg_context_create(osDevice.c_str(), &psContext, szError, sizeof(szError));
    if (eStatus != GG_OK || !psContext)
    {
        osError = szError[0] ? szError : gg_status_string(eStatus);
        return nullptr;
    }
    return psContext;
}
}  // namespace

/* Begins creating the context on a thread of its own: a GPU's start
 * (driver, context, FFT library: 0.2 s of CUDA on an H200) overlaps the
 * first strips' reads. */
void GGDataset::StartInBackground()
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    if (m_psContext || !m_osContextError.empty() || m_bStarting)
        return;
    // the request as this thread sees it (GG_DEVICE may be a thread-local
    // configuration option)
    m_osStarting = GGRequestedDevice(m_osDevice, true);
    gg_device_start_begin(&m_sStarting, m_osStarting.c_str());
    m_bStarting = true;
}

/* Waits for a start begun by StartInBackground and takes its result. */
void GGDataset::TakeStartedLocked()
{
    if (!m_bStarting)
        return;
    m_bStarting = false;
    m_psContext = gg_device_start_wait(&m_sStarting);
    if (!m_psContext)
        m_osContextError = m_sStarting.error;
    gg_device_start_end(&m_sStarting, TRUE);  // the context is the dataset's now
}

bool GGDataset::StartContextLocked()
{
    TakeStartedLocked();
    if (!m_psContext && m_osContextError.empty())
        m_psContext = CreateContext(GGRequestedDevice(m_osDevice, true), m_osContextError);
    if (!m_psContext)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", m_osContextError.c_str());
        return false;
    }
    CPLDebug("GG", "%s: device %s", GetDescription(), gg_context_device_name(m_psContext));
    const char *pszNotice = gg_context_notice(m_psContext);
    if (pszNotice && *pszNotice)
        CPLDebug("GG", "%s", pszNotice);
    return true;
}

/* Passes the whole input band once through gg_op_accumulate, in strips of
 * full rows, in the same order whatever block is asked for first, so the
 * result does not depend on the read pattern. */
/* The statistics pass as a job of the pipeline (gpu/pipeline.h): strips of
 * full rows read by reader threads, each through its own handle on the
 * input, while the calling thread accumulates the strips on the device in
 * row order (the sums come out the same whatever the readers). */
struct GGStatsPass
{
    GGDataset *poDS = nullptr;
    int iBand = 0, nWidth = 0, nHeight = 0, nRows = 0;
    GDALDataType eType = GDT_Unknown;
    size_t nPixelBytes = 0;
    std::vector<GDALRasterBand *> apoBands{};  // per reader
    std::vector<std::vector<GByte>> aabySlots{};
    GDALProgressFunc pfnProgress = nullptr;
    void *pProgressData = nullptr;
    std::mutex oMutex{};  // the first failure
    std::string osReadError{}, osFailure{};
    int nFailure = 0;     // 1 read, 2 device, 3 interrupted
    void Fail(int nWhat, const std::string &osWhat)
    {
        std::lock_guard<std::mutex> oLock(oMutex);
        if (!nFailure)
        {
            nFailure = nWhat;
            osFailure = osWhat;
        }
    }
};

static int StatsRead(void *pUser, int iReader, int iItem, int iSlot)
{
    auto *j = static_cast<GGStatsPass *>(pUser);
    const int nY = iItem * j->nRows, nThisRows = std::min(j->nRows, j->nHeight - nY);
    std::string osMessage;
    if (QuietRead(
            [&]
            {
                return InjectedReadFault() ? CE_Failure
                                           : j->apoBands[iReader]->RasterIO(
                                                 GF_Read, 0, nY, j->nWidth, nThisRows,
                                                 j->aabySlots[iSlot].data(), j->nWidth, nThisRows,
                                                 j->eType, 0, 0, nullptr);
            },
            &osMessage) == CE_None)
        return 0;
    j->Fail(1, osMessage);
    return 1;
}

static int StatsWrite(void *, int, int) { return 0; }

bool GGDataset::ComputeStatisticsLocked(int iBand, GDALProgressFunc pfnProgress,
                                        void *pProgressData)
{
    if (m_abStatsDone[iBand])
        return true;
    if (!m_aosStatsError[iBand].empty())
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", m_aosStatsError[iBand].c_str());
        return false;
    }
    GGStatsPass j;
    j.poDS = this;
    j.iBand = iBand;
    j.nWidth = m_sIn.width;
    j.nHeight = m_sIn.height;
    j.eType = m_eSourceType;
    j.nPixelBytes = GDALGetDataTypeSizeBytes(m_eSourceType);
    j.pfnProgress = pfnProgress;
    j.pProgressData = pProgressData;
    int nRows = static_cast<int>(std::clamp(
        std::floor(STATS_STRIP_BYTES / (static_cast<double>(j.nPixelBytes) * j.nWidth)), 1.0,
        static_cast<double>(j.nHeight)));
    // strips also fit the device (the input is read there once)
    int nDeviceRows = nRows;
    if (gg_plan_rows(m_psContext, j.nWidth, j.nHeight, gg_op_bytes_per_pixel(m_poOp), 0,
                     &nDeviceRows) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", gg_context_last_error(m_psContext));
        return false;
    }
    j.nRows = std::min(nRows, nDeviceRows);
    const int nItems = (j.nHeight + j.nRows - 1) / j.nRows;
    // Reader 0 reads through the input's own handle (the caller holds the
    // read lock); more readers where the input reopens, through handles of
    // their own (past the strip readers' slots), none beside the CPU
    // backend's threads, which take every core.
    const int nWant = EQUAL(gg_context_backend(m_psContext), "cpu")
                          ? 1 : std::min(gg_pipeline_readers(), nItems);
    j.apoBands.push_back(m_apoStack[iBand]);
    for (int r = 1; r < nWant; ++r)
    {
        GDALDataset *poHandle = ReaderHandle(static_cast<size_t>(r + 3) * MAX_SLICES,
                                             m_anStackInput[iBand]);
        GDALRasterBand *poBand = poHandle ? poHandle->GetRasterBand(m_anStackBand[iBand]) : nullptr;
        if (!poBand)
            break;
        j.apoBands.push_back(poBand);
    }
    const int nReaders = static_cast<int>(j.apoBands.size());
    const int nSlots = std::min(nItems, nReaders + 1);
    try
    {
        j.aabySlots.resize(nSlots);
        for (auto &aby : j.aabySlots)
            aby.resize(j.nPixelBytes * j.nWidth * j.nRows);
    }
    catch (const std::bad_alloc &)
    {
        CPLError(CE_Failure, CPLE_OutOfMemory, "GG: out of memory for a statistics strip");
        return false;
    }
    gg_pipeline_job sJob{};
    sJob.user = &j;
    sJob.items = nItems;
    sJob.slots = nSlots;
    sJob.readers = nReaders;
    sJob.workers = 1;
    sJob.read = StatsRead;
    sJob.compute = [](void *pUser, int, int iItem, int iSlot) -> int
    {
        auto *pj = static_cast<GGStatsPass *>(pUser);
        return pj->poDS->AccumulateStrip(*pj, iItem, iSlot);
    };
    sJob.write = StatsWrite;
    const int nRun = gg_pipeline_run(&sJob);
    if (nRun == 0)
    {
        const gg_status eStatus = gg_op_finish_stats(m_psContext, m_poOp, iBand);
        if (eStatus != GG_OK)
        {
            m_aosStatsError[iBand] = GGOpMessage(m_poOp, eStatus);
            CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", m_aosStatsError[iBand].c_str());
            return false;
        }
        m_abStatsDone[iBand] = true;
        return true;
    }
    // A failed read or a cancel forgets the partial sums, so a later read
    // of the band starts the pass again; a device failure stays.
    if (j.nFailure != 2)
        gg_op_reset_stats(m_poOp, iBand);
    if (nRun < 0)
        CPLError(CE_Failure, CPLE_OutOfMemory, "GG: cannot start the statistics pass's threads");
    else if (j.nFailure == 1)
    {
        ReadFailure(m_apoInputs[m_anStackInput[iBand]]->GetDescription(), j.osFailure);
        CPLError(CE_Failure, CPLE_AppDefined,
                 "GG: %s: reading band %d of the input failed during the statistics pass",
                 gg_op_name(m_poOp), iBand + 1);
    }
    else if (j.nFailure == 2)
    {
        m_aosStatsError[iBand] = j.osFailure;
        CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", m_aosStatsError[iBand].c_str());
    }
    else
        CPLError(CE_Failure, CPLE_UserInterrupt, "GG: %s: statistics pass interrupted",
                 gg_op_name(m_poOp));
    return false;
}

/* One strip of the statistics pass on the device (the pipeline's calling
 * thread, strips in row order), then the caller's progress. */
int GGDataset::AccumulateStrip(GGStatsPass &j, int iItem, int iSlot)
{
    const int nY = iItem * j.nRows, nThisRows = std::min(j.nRows, j.nHeight - nY);
    gg_tile sTile{j.aabySlots[iSlot].data(), m_sIn.type, j.nWidth, nThisRows,
                  static_cast<size_t>(j.nWidth), 0, nY};
    const gg_status eStatus = gg_op_accumulate(m_psContext, m_poOp, j.iBand, &sTile);
    if (eStatus != GG_OK)
    {
        j.Fail(2, GGOpMessage(m_poOp, eStatus));
        return 1;
    }
    if (j.pfnProgress &&
        !j.pfnProgress(static_cast<double>(nY + nThisRows) / j.nHeight, "", j.pProgressData))
    {
        j.Fail(3, std::string());
        return 1;
    }
    return 0;
}

/* The source window of output window sDst; false after a CPLError. */
bool GGDataset::SourceWindow(const gg_window &sDst, gg_window &sSrc)
{
    if (gg_op_source_window(m_poOp, &sDst, &sSrc) == GG_OK)
        return true;
    CPLError(CE_Failure, CPLE_AppDefined, "GG: %s: no source window for block %d,%d",
             gg_op_name(m_poOp), sDst.x0 / std::max(1, m_nBlockXSize),
             sDst.y0 / std::max(1, m_nBlockYSize));
    return false;
}

/* Whether a one-input stack lies in its file as rows to read as they are
 * (looked at once). */
bool GGDataset::RawRows()
{
    std::lock_guard<std::mutex> oLock(m_oHandleMutex);
    if (m_nRawRows == 0)
    {
        m_nRawRows = m_apoInputs.size() == 1 &&
                             GGStackRowsFind(m_apoInputs[0], m_eSourceType, &m_sRows)
                         ? 1
                         : -1;
        CPLDebug(DRIVER_NAME, "%s: stack read %s", gg_op_name(m_poOp),
                 m_nRawRows > 0 ? "as it lies in its file" : "through RasterIO");
    }
    return m_nRawRows > 0;
}

/* The host part of a block: reads s.sSrc of input band iBand (single-band
 * ops; -1: every band) or of every band (stack ops) into s.aby, through
 * the handles of reader slots nBase, nBase + 1, ... (slot 0: the inputs
 * themselves, used under m_oReadMutex; a GDAL handle is one thread's at a
 * time). */
CPLErr GGDataset::ReadSourceLocked(GGBlockSource &s, int iBand, size_t nBase)
{
    const gg_window &sSrc = s.sSrc;
    const bool bStack = gg_op_is_stack(m_poOp);
    const int nBands = m_sIn.bands;
    s.nPlane = GDALGetDataTypeSizeBytes(m_eSourceType) * static_cast<size_t>(sSrc.width) *
               std::max(0, sSrc.height);
    // a stack read as it lies: whole rows, as a stack op's strips are
    s.bRaw = bStack && RawRows() && sSrc.x0 == 0 && sSrc.width == m_sIn.width;
    const int nPlanes = bStack || iBand < 0 ? nBands : 1;
    try
    {
        s.aby.resize(s.nPlane * static_cast<size_t>(nPlanes));
    }
    catch (const std::bad_alloc &)
    {
        CPLError(CE_Failure, CPLE_OutOfMemory, "GG: out of memory for a %d-band %dx%d window",
                 nPlanes, sSrc.width, sSrc.height);
        return CE_Failure;
    }
    if (sSrc.width <= 0 || sSrc.height <= 0)
        return CE_None;
    if (InjectedReadFault())
        return CE_Failure;
    if (bStack)
        return s.bRaw ? GGStackRowsRead(m_sRows, sSrc, s.aby.data(), StackReaders(sSrc.height))
                      : ReadStackWindow(sSrc, s.nPlane, s.aby.data(), nBase);
    for (int b = iBand < 0 ? 0 : iBand, k = 0; b < (iBand < 0 ? nBands : iBand + 1); ++b, ++k)
    {
        GDALDataset *poHandle = ReaderHandle(nBase, m_anStackInput[b]);
        GDALRasterBand *poBand = poHandle ? poHandle->GetRasterBand(m_anStackBand[b]) : nullptr;
        if (!poBand)
            return CE_Failure;
        std::string osMessage;
        if (QuietRead([&]
                      { return poBand->RasterIO(GF_Read, sSrc.x0, sSrc.y0, sSrc.width,
                                                sSrc.height, s.aby.data() + s.nPlane * k,
                                                sSrc.width, sSrc.height, m_eSourceType, 0, 0,
                                                nullptr); },
                      &osMessage) != CE_None)
            return ReadFailure(m_apoInputs[m_anStackInput[b]]->GetDescription(), osMessage);
    }
    return CE_None;
}

/* The device part of a block: its output bands from the source s read for
 * band iBand (single-band ops; -1: every band), written to papabyOut[b]
 * (rows of nStride samples) for every output band b computed.  The device
 * works through the block in passes of rows sized by the block planner
 * from free device memory (GG_DEVICE_MEMORY caps it), so a small GPU never
 * runs out.  Holds m_oMutex, the context started. */
CPLErr GGDataset::ComputeLocked(const GGBlockSource &s, int iBand, GByte *const *papabyOut,
                                size_t nStride)
{
    const gg_window &sDst = s.sDst, &sSrc = s.sSrc;
    const bool bStack = gg_op_is_stack(m_poOp);
    int nPassRows = sDst.height;
    gg_status eStatus = gg_plan_rows(m_psContext, sDst.width, sDst.height,
                                     gg_op_bytes_per_pixel(m_poOp), 0, &nPassRows);
    auto srcTile = [&](size_t k)
    {
        return gg_tile{sSrc.width > 0 && sSrc.height > 0
                           ? const_cast<GByte *>(s.aby.data()) + s.nPlane * k
                           : nullptr,
                       m_sIn.type, sSrc.width, sSrc.height, static_cast<size_t>(sSrc.width),
                       sSrc.x0, sSrc.y0};
    };
    auto dstTile = [&](int b, int nRow)
    {
        const gg_type eType = gg_op_band_type(m_poOp, b);
        return gg_tile{papabyOut[b] + static_cast<size_t>(nRow) * nStride * gg_type_size(eType),
                       eType, sDst.width, std::min(nPassRows, sDst.height - nRow), nStride,
                       sDst.x0, sDst.y0 + nRow};
    };
    if (bStack)
    {
        const int nInBands = m_sIn.bands, nOutBands = m_sOut.bands;
        std::vector<gg_tile> asSrc(s.bRaw ? 1 : nInBands), asDst(nOutBands);
        for (size_t k = 0; k < asSrc.size(); ++k)
            asSrc[k] = srcTile(k);
        for (int nRow = 0; eStatus == GG_OK && nRow < sDst.height; nRow += nPassRows)
        {
            for (int b = 0; b < nOutBands; ++b)
                asDst[b] = dstTile(b, nRow);
            eStatus = s.bRaw ? gg_op_run_stack_interleaved(m_psContext, m_poOp, asSrc.data(),
                                                           nInBands, asDst.data(), nOutBands)
                             : gg_op_run_stack(m_psContext, m_poOp, asSrc.data(), nInBands,
                                               asDst.data(), nOutBands);
        }
    }
    else
    {
        const int nFirst = iBand < 0 ? 0 : iBand, nLast = iBand < 0 ? m_sIn.bands : iBand + 1;
        for (int b = nFirst; eStatus == GG_OK && b < nLast; ++b)
        {
            const gg_tile sSrcTile = srcTile(static_cast<size_t>(b - nFirst));
            // the block's source window covers every pass's
            for (int nRow = 0; eStatus == GG_OK && nRow < sDst.height; nRow += nPassRows)
            {
                gg_tile sDstTile = dstTile(b, nRow);
                eStatus = gg_op_run(m_psContext, m_poOp, b, &sSrcTile, &sDstTile);
            }
        }
    }
    return eStatus == GG_OK ? CE_None : RunFailure(eStatus);
}

CPLErr GGDataset::ReadBlock(int iBand, int nBlockXOff, int nBlockYOff, int nBlockXSize,
                            int nBlockYSize, void *pImage)
{
    std::lock_guard<std::mutex> oReadLock(m_oReadMutex);
    std::lock_guard<std::mutex> oLock(m_oMutex);
    if (!StartContextLocked())
        return CE_Failure;
    const bool bStack = gg_op_is_stack(m_poOp);
    if (!bStack && gg_op_needs_stats(m_poOp) && !ComputeStatisticsLocked(iBand, nullptr, nullptr))
        return CE_Failure;

    GGBlockSource &s = m_oBlock;
    s.sDst.x0 = nBlockXOff * nBlockXSize;
    s.sDst.y0 = nBlockYOff * nBlockYSize;
    s.sDst.width = std::min(nBlockXSize, m_sOut.width - s.sDst.x0);
    s.sDst.height = std::min(nBlockYSize, m_sOut.height - s.sDst.y0);
    if (!SourceWindow(s.sDst, s.sSrc))
        return CE_Failure;

    // Output planes: band iBand is pImage; a stack op computes every band
    // of the block at once, the others staged here.
    const int nOutBands = m_sOut.bands;
    const size_t nBlockPixels = static_cast<size_t>(nBlockXSize) * nBlockYSize;
    std::vector<size_t> anOffset(nOutBands, 0);
    size_t nStaged = 0;
    for (int b = 0; bStack && b < nOutBands; ++b)
    {
        if (b == iBand)
            continue;
        anOffset[b] = nStaged;
        nStaged += nBlockPixels * gg_type_size(gg_op_band_type(m_poOp, b));
    }
    try
    {
        m_abyOutput.resize(nStaged);
    }
    catch (const std::bad_alloc &)
    {
        CPLError(CE_Failure, CPLE_OutOfMemory, "GG: out of memory for a %d-band %dx%d block",
                 nOutBands, nBlockXSize, nBlockYSize);
        return CE_Failure;
    }
    std::vector<GByte *> apabyOut(nOutBands, nullptr);
    for (int b = 0; b < nOutBands; ++b)
    {
        if (b != iBand && !bStack)
            continue;
        apabyOut[b] = b == iBand ? static_cast<GByte *>(pImage) : m_abyOutput.data() + anOffset[b];
        // edge blocks: only the part inside the raster is computed, the
        // rest is nodata (GDAL never shows it, but blocks must not hold
        // garbage)
        if (s.sDst.width < nBlockXSize || s.sDst.height < nBlockYSize)
            FillNodata(apabyOut[b], GDALTypeOf(gg_op_band_type(m_poOp, b)), nBlockPixels,
                       gg_op_band_nodata(m_poOp, b));
    }
    if (ReadSourceLocked(s, bStack ? -1 : iBand, 0) != CE_None ||
        ComputeLocked(s, bStack ? -1 : iBand, apabyOut.data(),
                      static_cast<size_t>(nBlockXSize)) != CE_None)
        return CE_Failure;

    // a stack op's other bands' blocks into the cache, unless already there
    for (int b = 0; bStack && b < nOutBands; ++b)
    {
        if (b == iBand)
            continue;
        GDALRasterBand *poBand = GetRasterBand(b + 1);
        GDALRasterBlock *poBlock = poBand->TryGetLockedBlockRef(nBlockXOff, nBlockYOff);
        if (poBlock)
        {
            poBlock->DropLock();
            continue;
        }
        poBlock = poBand->GetLockedBlockRef(nBlockXOff, nBlockYOff, TRUE);
        if (!poBlock)
            continue;  // no cache room: that band will compute it itself
        memcpy(poBlock->GetDataRef(), apabyOut[b],
               nBlockPixels * GDALGetDataTypeSizeBytes(poBand->GetRasterDataType()));
        poBlock->DropLock();
    }
    return CE_None;
}

// Reports a failed device pass: a planner failure is the context's, a run
// failure the op's.
CPLErr GGDataset::RunFailure(gg_status eStatus)
{
    const std::string osMessage = gg_op_last_error(m_poOp)[0]
                                      ? GGOpMessage(m_poOp, eStatus)
                                      : std::string(gg_context_last_error(m_psContext));
    CPLError(CE_Failure, CPLE_AppDefined, "GG: %s", osMessage.c_str());
    return CE_Failure;
}


/* A second handle on input iInput for reader slot nSlot (slot 0 is the
 * input itself), or null when the input is not a plain file that opens
 * again to the same raster (a GG or MEM dataset, a connection string). */
GDALDataset *GGDataset::ReaderHandle(size_t nSlot, size_t iInput)
{
    GDALDataset *poInput = m_apoInputs[iInput];
    if (nSlot == 0)
        return poInput;
    std::lock_guard<std::mutex> oLock(m_oHandleMutex);
    if (m_aapoReaders.size() < nSlot)
        m_aapoReaders.resize(nSlot);
    std::vector<GDALDataset *> &apoSlot = m_aapoReaders[nSlot - 1];
    if (apoSlot.empty())
    {
        // null: not tried; the input itself: cannot be reopened
        apoSlot.assign(m_apoInputs.size(), nullptr);
    }
    GDALDataset *&poReader = apoSlot[iInput];
    if (poReader)
        return poReader == poInput ? nullptr : poReader;
    poReader = poInput;  // until proven reopenable
    GDALDriver *poDriver = poInput->GetDriver();
    const char *pszDriver = poDriver ? poDriver->GetDescription() : "";
    VSIStatBufL sStat;
    if (EQUAL(pszDriver, DRIVER_NAME) || EQUAL(pszDriver, "MEM") ||
        VSIStatL(poInput->GetDescription(), &sStat) != 0)
        return nullptr;
    const char *const apszDrivers[] = {pszDriver, nullptr};
    GDALDataset *poOpened;
    {
        // a failure only means one reader fewer: no message, no error state
        CPLErrorStateBackuper oState;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        poOpened = GDALDataset::FromHandle(GDALOpenEx(poInput->GetDescription(),
                                                      GDAL_OF_RASTER | GDAL_OF_READONLY,
                                                      apszDrivers, nullptr, nullptr));
        CPLPopErrorHandler();
    }
    if (!poOpened)
        return nullptr;
    bool bSame = poOpened->GetRasterXSize() == poInput->GetRasterXSize() &&
                 poOpened->GetRasterYSize() == poInput->GetRasterYSize() &&
                 poOpened->GetRasterCount() == poInput->GetRasterCount();
    for (int i = 1; bSame && i <= poInput->GetRasterCount(); ++i)
        bSame = poOpened->GetRasterBand(i)->GetRasterDataType() ==
                poInput->GetRasterBand(i)->GetRasterDataType();
    if (!bSame)
    {
        GDALClose(GDALDataset::ToHandle(poOpened));
        return nullptr;
    }
    poReader = poOpened;
    return poReader;
}

/* Every band of the source window sSrc into pabyDst (plane k of stack
 * band k, nPlane bytes each).  Each input is read with one dataset-level
 * RasterIO over all its bands: a pixel-interleaved file (GTiff's default
 * for several bands) is then decoded once per block, where a read per band
 * goes through every block once per band.  The rows are cut into slices
 * read at once by threads with handles of their own (GDAL handles are not
 * thread-safe): de-interleaving is CPU work that one thread does at 1-2
 * GB/s, the bound of a PtSel strip (bench/RESULTS.md).  Inputs that cannot
 * be reopened are read by the calling thread alone. */
CPLErr GGDataset::ReadStackWindow(const gg_window &sSrc, size_t nPlane, GByte *pabyDst,
                                  size_t nBase)
{
    const int nType = GDALGetDataTypeSizeBytes(m_eSourceType);
    const int nSlices = StackReaders(sSrc.height);
    size_t nFirstBand = 0;
    for (size_t i = 0; i < m_apoInputs.size(); ++i)
    {
        const int nCount = m_apoInputs[i]->GetRasterCount();
        GByte *pabyFirst = pabyDst + nPlane * nFirstBand;
        nFirstBand += nCount;
        std::vector<int> anBands(nCount);
        for (int b = 0; b < nCount; ++b)
            anBands[b] = b + 1;
        // the slice [y0, y1) of the window's rows through handle poDS
        // the slice [y0, y1) of the window's rows through handle poDS;
        // GDAL's message of a failure (one per slice) into *posMessage
        auto read = [&](GDALDataset *poDS, int y0, int y1, std::string *posMessage)
        {
            return QuietRead(
                [&]
                {
                    return poDS->RasterIO(
                        GF_Read, sSrc.x0, sSrc.y0 + y0, sSrc.width, y1 - y0,
                        pabyFirst + static_cast<size_t>(y0) * sSrc.width * nType, sSrc.width,
                        y1 - y0, m_eSourceType, nCount, anBands.data(), nType,
                        static_cast<GSpacing>(sSrc.width) * nType, static_cast<GSpacing>(nPlane),
                        nullptr);
                },
                posMessage);
        };
        std::vector<GDALDataset *> apoHandles(1, ReaderHandle(nBase, i));
        if (!apoHandles[0])
            return CE_Failure;
        for (int k = 1; k < nSlices; ++k)
        {
            GDALDataset *poReader = ReaderHandle(nBase + k, i);
            if (!poReader)
                break;
            apoHandles.push_back(poReader);
        }
        const int n = static_cast<int>(apoHandles.size());
        std::vector<CPLErr> aeResult(n, CE_None);
        std::vector<std::string> aosMessage(n);
        std::vector<std::thread> aoThreads;
        for (int k = 1; k < n; ++k)
            aoThreads.emplace_back([&, k]
                                   { aeResult[k] = read(apoHandles[k], sSrc.height * k / n,
                                                        sSrc.height * (k + 1) / n,
                                                        &aosMessage[k]); });
        aeResult[0] = read(apoHandles[0], 0, sSrc.height / n, &aosMessage[0]);
        for (std::thread &oThread : aoThreads)
            oThread.join();
        for (int k = 0; k < n; ++k)
            if (aeResult[k] != CE_None)
                return ReadFailure(m_apoInputs[i]->GetDescription(), aosMessage[k]);
    }
    return CE_None;
}

CPLErr GGDataset::Start()
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    return StartContextLocked() ? CE_None : CE_Failure;
}

CPLErr GGDataset::ComputeStatistics(GDALProgressFunc pfnProgress, void *pProgressData)
{
    std::lock_guard<std::mutex> oReadLock(m_oReadMutex);
    std::lock_guard<std::mutex> oLock(m_oMutex);
    if (!StartContextLocked())
        return CE_Failure;
    if (gg_op_needs_stats(m_poOp))
    {
        const int nBands = m_sIn.bands;
        for (int i = 0; i < nBands; ++i)
        {
            void *pScaled = pfnProgress ? GDALCreateScaledProgress(
                                              static_cast<double>(i) / nBands,
                                              static_cast<double>(i + 1) / nBands, pfnProgress,
                                              pProgressData)
                                        : nullptr;
            const bool bOK = ComputeStatisticsLocked(
                i, pScaled ? GDALScaledProgress : nullptr, pScaled);
            GDALDestroyScaledProgress(pScaled);
            if (!bOK)
                return CE_Failure;
        }
    }
    if (pfnProgress && !pfnProgress(1.0, "", pProgressData))
    {
        CPLError(CE_Failure, CPLE_UserInterrupt, "GG: interrupted by the user");
        return CE_Failure;
    }
    return CE_None;
}

/* The host part of strip iStrip: every block's source, every band.
 * Pipeline reader iReader reads through handles of its own (reader slots
 * from iReader * MAX_SLICES), so that several strips are read at once; a
 * reader whose inputs do not reopen (GG or MEM datasets) shares the
 * inputs' own, one reader at a time. */
CPLErr GGDataset::ReadStrip(GGStrip &s, int iStrip, int iReader)
{
    size_t nBase = static_cast<size_t>(iReader) * MAX_SLICES;
    for (size_t i = 0; nBase && i < m_apoInputs.size(); ++i)
        if (!ReaderHandle(nBase, i))
            nBase = 0;
    std::unique_lock<std::mutex> oReadLock(m_oReadMutex, std::defer_lock);
    if (nBase == 0)
        oReadLock.lock();
    const int nBlockX = std::max(1, m_nBlockXSize);
    const int nBlocks = (m_sOut.width + nBlockX - 1) / nBlockX;
    s.nWidth = m_sOut.width;
    s.nY0 = iStrip * m_nBlockYSize;
    s.nRows = std::min(m_nBlockYSize, m_sOut.height - s.nY0);
    s.aoBlocks.resize(nBlocks);
    for (int i = 0; i < nBlocks; ++i)
    {
        GGBlockSource &b = s.aoBlocks[i];
        b.sDst = gg_window{i * nBlockX, s.nY0, std::min(nBlockX, m_sOut.width - i * nBlockX),
                           s.nRows};
        if (!SourceWindow(b.sDst, b.sSrc) || ReadSourceLocked(b, -1, nBase) != CE_None)
            return CE_Failure;
    }
    return CE_None;
}

/* The device part of a strip read by ReadStrip (on this dataset or on
 * another of the same product): every output band. */
CPLErr GGDataset::ComputeStrip(GGStrip &s)
{
    // a statistics pass still to run reads the inputs
    std::unique_lock<std::mutex> oReadLock(m_oReadMutex, std::defer_lock);
    const bool bStats = gg_op_needs_stats(m_poOp) && !gg_op_is_stack(m_poOp);
    if (bStats)
        oReadLock.lock();
    std::lock_guard<std::mutex> oLock(m_oMutex);
    if (!StartContextLocked())
        return CE_Failure;
    for (int b = 0; bStats && b < m_sIn.bands; ++b)
        if (!ComputeStatisticsLocked(b, nullptr, nullptr))
            return CE_Failure;
    const int nOutBands = m_sOut.bands;
    std::vector<GByte *> apabyOut(nOutBands);
    try
    {
        s.aabyBand.resize(nOutBands);
        for (int b = 0; b < nOutBands; ++b)
        {
            s.aabyBand[b].resize(static_cast<size_t>(s.nWidth) * s.nRows *
                                 gg_type_size(gg_op_band_type(m_poOp, b)));
            apabyOut[b] = s.aabyBand[b].data();
        }
    }
    catch (const std::bad_alloc &)
    {
        CPLError(CE_Failure, CPLE_OutOfMemory, "GG: out of memory for a %d-band %dx%d strip",
                 nOutBands, s.nWidth, s.nRows);
        return CE_Failure;
    }
    for (const GGBlockSource &b : s.aoBlocks)
    {
        std::vector<GByte *> apabyBlock(nOutBands);
        for (int k = 0; k < nOutBands; ++k)
            apabyBlock[k] = apabyOut[k] + static_cast<size_t>(b.sDst.x0) *
                                              gg_type_size(gg_op_band_type(m_poOp, k));
        if (ComputeLocked(b, -1, apabyBlock.data(), static_cast<size_t>(s.nWidth)) != CE_None)
            return CE_Failure;
    }
    return CE_None;
}

std::string GGDataset::DeviceName()
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    TakeStartedLocked();
    return m_psContext ? gg_context_device_name(m_psContext) : "";
}

std::string GGDataset::DeviceNotice()
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    TakeStartedLocked();
    return m_psContext ? gg_context_notice(m_psContext) : "";
}

const char *GGDataset::Backend()
{
    std::lock_guard<std::mutex> oLock(m_oMutex);
    if (m_psContext)
        return gg_context_backend(m_psContext);
    const std::string osDevice = GGRequestedDevice(m_osDevice, true);
    const std::string osKind = osDevice.substr(0, osDevice.find(':'));
    for (const char *pszKind : {"cpu", "cuda", "opencl"})
        if (EQUAL(osKind.c_str(), pszKind))
            return pszKind;
    return "";  // auto: only the context tells
}

/************************************************************************/
/*                             C interface                              */
/************************************************************************/

namespace
{
GGDataset *AsGGDataset(GDALDatasetH hDS)
{
    return hDS ? dynamic_cast<GGDataset *>(GDALDataset::FromHandle(hDS)) : nullptr;
}

// GG:<op>:<options>:<input>: reopens the same product, so a VRT written
// from a processed dataset references something GDAL can open.
// The GG: string that reopens this product: its options, then every input
// (absolute where it is a relative file name), comma-separated.
std::string ConnectionStringFor(const gg_op *op, const std::vector<GDALDataset *> &apoInputs)
{
    std::string os = std::string("GG:") + gg_op_name(op) + ":";
    for (const auto &oKV : GGOperationOptions(op))
        os += oKV.first + "=" + oKV.second + ":";
    for (size_t i = 0; i < apoInputs.size(); ++i)
    {
        std::string osInput = apoInputs[i]->GetDescription();
        VSIStatBufL sStat;
        if (CPLIsFilenameRelative(osInput.c_str()) && !STARTS_WITH(osInput.c_str(), "/vsi") &&
            VSIStatL(osInput.c_str(), &sStat) == 0)
        {
            char *pszCwd = CPLGetCurrentDir();
            if (pszCwd)
                osInput = CPLFormFilename(pszCwd, osInput.c_str(), nullptr);
            CPLFree(pszCwd);
        }
        os += (i ? "," : "") + osInput;
    }
    return os;
}
}  // namespace

GDALDataset *GGOpenProcessedDataset(gg_op *op, std::vector<GDALDataset *> apoInputs,
                                    const std::string &osDevice, const char *pszName,
                                    bool bConnection, char **papszSiblings)
{
    GGDataset *poDS = GGDataset::Create(op, std::move(apoInputs), true, osDevice);
    if (!poDS)
        return nullptr;
    poDS->SetDescription(pszName);
    if (bConnection)
    {
        // No .aux.xml next to a connection string.
        poDS->DisablePamSaving();
    }
    else
    {
        poDS->LoadPam(papszSiblings);
    }
    return poDS;
}

GDALDatasetH GGCreateProcessedDataset(gg_op *op, int nInputs, GDALDatasetH *pahInputs,
                                      int bOwnInputs, const char *device)
{
    std::vector<GDALDataset *> apoInputs;
    for (int i = 0; pahInputs && i < nInputs; ++i)
        if (pahInputs[i])
            apoInputs.push_back(GDALDataset::FromHandle(pahInputs[i]));
    if (!op || static_cast<int>(apoInputs.size()) != nInputs || nInputs < 1)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGCreateProcessedDataset: bad arguments");
        gg_op_free(op);
        if (bOwnInputs)
            for (GDALDataset *poInput : apoInputs)
                GDALClose(GDALDataset::ToHandle(poInput));
        return nullptr;
    }
    const std::string osDescription = ConnectionStringFor(op, apoInputs);
    GGDataset *poDS =
        GGDataset::Create(op, std::move(apoInputs), CPL_TO_BOOL(bOwnInputs), device ? device : "");
    if (!poDS)
        return nullptr;
    poDS->SetDescription(osDescription.c_str());
    poDS->DisablePamSaving();
    return GDALDataset::ToHandle(poDS);
}

CPLErr GGDatasetStart(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (!poDS)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGDatasetStart: not a GG dataset");
        return CE_Failure;
    }
    return poDS->Start();
}

void GGDatasetStartInBackground(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (poDS)
        poDS->StartInBackground();
}

const char *GGDatasetBackend(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    return poDS ? poDS->Backend() : "";
}

const char *GGDatasetRequestedDevice(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    return poDS ? CPLSPrintf("%s", poDS->RequestedDevice().c_str()) : "";
}

CPLErr GGDatasetComputeStatistics(GDALDatasetH hDS, GDALProgressFunc pfnProgress,
                                  void *pProgressData)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (!poDS)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGDatasetComputeStatistics: not a GG dataset");
        return CE_Failure;
    }
    return poDS->ComputeStatistics(pfnProgress, pProgressData);
}

const gg_op *GGDatasetOperation(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    return poDS ? poDS->Operation() : nullptr;
}

const char *GGDatasetDeviceName(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    return poDS ? CPLSPrintf("%s", poDS->DeviceName().c_str()) : "";
}

const char *GGDatasetDeviceNotice(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    return poDS ? CPLSPrintf("%s", poDS->DeviceNotice().c_str()) : "";
}

int GGDatasetStripCount(GDALDatasetH hDS)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (!poDS)
        return 0;
    const int nRows = poDS->StripRows();
    return (poDS->GetRasterYSize() + nRows - 1) / nRows;
}

GGStrip *GGStripCreate(void)
{
    return new (std::nothrow) GGStrip();
}

void GGStripFree(GGStrip *psStrip)
{
    delete psStrip;
}

CPLErr GGStripRead(GDALDatasetH hDS, GGStrip *psStrip, int iStrip, int iReader)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (!poDS || !psStrip || iStrip < 0 || iStrip >= GGDatasetStripCount(hDS) || iReader < 0)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGStripRead: bad arguments");
        return CE_Failure;
    }
    return poDS->ReadStrip(*psStrip, iStrip, iReader);
}

CPLErr GGStripCompute(GDALDatasetH hDS, GGStrip *psStrip)
{
    GGDataset *poDS = AsGGDataset(hDS);
    if (!poDS || !psStrip || psStrip->aoBlocks.empty())
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGStripCompute: bad arguments");
        return CE_Failure;
    }
    return poDS->ComputeStrip(*psStrip);
}

const void *GGStripBand(const GGStrip *psStrip, int iBand, int *pnY0, int *pnRows)
{
    if (!psStrip || iBand < 0 || iBand >= static_cast<int>(psStrip->aabyBand.size()))
        return nullptr;
    if (pnY0)
        *pnY0 = psStrip->nY0;
    if (pnRows)
        *pnRows = psStrip->nRows;
    return psStrip->aabyBand[iBand].data();
}
