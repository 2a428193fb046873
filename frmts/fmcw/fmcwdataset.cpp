/*
 * fmcwdataset.cpp -- the FMCW raster driver: an FMCW raw-sector file
 * (docs/fmcw_format.md) opened as its radar products, computed lazily on
 * the device through libgeogpu's gg_fmcw processor.
 *   - polar (default): rows = sectors, columns = range gates, one Float32
 *     band per product (CfRadial short name as description, units);
 *   - PPI (open option GRID_RES=<m>): a square azimuthal-equidistant grid
 *     centred on the radar, nearest gate under the 4/3-Earth beam model.
 * Connection string "FMCW:<file>"; open options PRODUCTS, DEVICE,
 * GRID_RES, MAX_RANGE (docs/driver_fmcw.md).
 *
 * MIT licence.
 */
#include "fmcw_driver.h"
#include "fmcw_file.h"
#include "mrr2_file.h"
#include "mrr2dataset.h"

#include "cpl_string.h"

#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace
{

class FMCWDataset;

class FMCWBand final : public GDALRasterBand
{
    friend class FMCWDataset;
    int m_iProduct;   // index into the dataset's product list
    std::string m_units;

  public:
    FMCWBand(FMCWDataset *poDS, int nBand, int iProduct);
    CPLErr IReadBlock(int nBlockXOff, int nBlockYOff, void *pData) override;
    const char *GetUnitType() override { return m_units.c_str(); }
    double GetNoDataValue(int *pbSuccess) override
    {
        if (pbSuccess)
            *pbSuccess = TRUE;
        return GG_FMCW_NODATA;
    }
};

class FMCWDataset final : public GDALDataset
{
    friend class FMCWBand;
    FMCWFile *m_file = nullptr;
    gg_fmcw_params m_p{};
    std::vector<int> m_products;
    std::string m_device;
    double m_res = 0, m_maxRange = 0;
    int m_gridSize = 0, m_batch = 8;
    gg_context *m_ctx = nullptr, *m_ctx2 = nullptr;   // m_ctx2: the processor's second stream
    gg_fmcw *m_proc = nullptr;
    int m_streams = 1;
    std::mutex m_lock;
    int m_cacheBlock = -1;            // grid: 0 once computed
    std::vector<float> m_cache;       // grid: [nprod][size][size]
    // Polar: computed blocks ([nprod][batch][G] each), kept until
    // kPolarCacheBytes, then the oldest first: GDALTranslate and others
    // read band after band over the whole raster, which with one cached
    // block recomputed every block once per band.
    std::map<int, std::vector<float>> m_blocks;
    std::deque<int> m_blockOrder;     // insertion order, for eviction
    static constexpr size_t kPolarCacheBytes = (size_t)256 << 20;
    int16_t *m_in = nullptr;          // input of a batch: the processor's page-locked memory
    std::vector<int16_t> m_raw;       // ... or this where none could be had
    std::vector<float> m_out;         // [batch][nprod][G]
    std::vector<int> m_flags;
    std::vector<char> m_warned;
    std::deque<int> m_inflight;       // blocks submitted, oldest first
    int m_lastBlock = -1, m_stride = 1;   // read pattern, for the block read ahead
    int m_errBlock = -1;              // a block read ahead whose reading failed ...
    std::string m_errMsg;             // ... and why (reported when it is asked for)
    OGRSpatialReference m_srs;

    int BlockCount() const { return (nRasterYSizeSectors() + m_batch - 1) / m_batch; }
    int nRasterYSizeSectors() const { return FMCWFileSectorCount(m_file); }
    CPLErr Start();
    bool Submit(int block, bool quiet);
    CPLErr Collect(int block, float *dst, int dstRows);   // dst [nprod][dstRows][G]
    void Drain();
    const float *FillBlock(int block);   // the block's products, NULL after a CPLError
    CPLErr FillGrid();

  public:
    ~FMCWDataset() override;
    static GDALDataset *Open(GDALOpenInfo *poOpenInfo);
    static GDALDataset *Create(const char *file, const char *products, const char *device, double res,
                               double maxRange, double average = 0);
    // "FMCW:<file>", or an MRR-2 raw file by its content: "MRR " at the
    // start, or a gzip stream named .gz that decompresses to it
    static int Identify(GDALOpenInfo *poOpenInfo)
    {
        if (STARTS_WITH_CI(poOpenInfo->pszFilename, "FMCW:"))
            return TRUE;
        if (poOpenInfo->nHeaderBytes < 4)
            return FALSE;
        const GByte *h = poOpenInfo->pabyHeader;
        if (!memcmp(h, "MRR ", 4))
            return TRUE;
        return h[0] == 0x1f && h[1] == 0x8b && EQUAL(CPLGetExtension(poOpenInfo->pszFilename), "gz") &&
               MRR2FileIdentify(poOpenInfo->pszFilename);
    }
    CPLErr GetGeoTransform(double *gt) override;
    const OGRSpatialReference *GetSpatialRef() const override { return m_res > 0 ? &m_srs : nullptr; }
    const char *GetMetadataItem(const char *name, const char *domain = "") override;
};

FMCWBand::FMCWBand(FMCWDataset *ds, int nBandIn, int iProduct) : m_iProduct(iProduct)
{
    poDS = ds;
    nBand = nBandIn;
    eDataType = GDT_Float32;
    nRasterXSize = ds->GetRasterXSize();
    nRasterYSize = ds->GetRasterYSize();
    nBlockXSize = nRasterXSize;
    nBlockYSize = ds->m_res > 0 ? std::min(64, nRasterYSize) : ds->m_batch;
    const int k = ds->m_products[(size_t)iProduct];
    SetDescription(gg_fmcw_product_name(k));
    m_units = gg_fmcw_product_units(k);
    GDALRasterBand::SetMetadataItem("standard_name", gg_fmcw_product_standard_name(k));
}

FMCWDataset::~FMCWDataset()
{
    FlushCache(true);
    gg_fmcw_destroy(m_proc);   // waits for batches in flight
    gg_context_destroy(m_ctx); // and its sibling, m_ctx2
    FMCWFileClose(m_file);
}

CPLErr FMCWDataset::GetGeoTransform(double *gt)
{
    if (m_res <= 0)
        return CE_Failure;   // polar: no affine georeferencing
    gt[0] = -0.5 * m_gridSize * m_res;
    gt[1] = m_res;
    gt[2] = 0;
    gt[3] = 0.5 * m_gridSize * m_res;
    gt[4] = 0;
    gt[5] = -m_res;
    return CE_None;
}

CPLErr FMCWDataset::Start()
{
    if (m_proc)
        return CE_None;
    char err[512];
    if (gg_context_create(m_device.empty() ? nullptr : m_device.c_str(), &m_ctx, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s", err);
        return CE_Failure;
    }
    CPLDebug("FMCW", "device %s", gg_context_device_name(m_ctx));
    if (gg_fmcw_create(m_ctx, &m_p, m_products.data(), (int)m_products.size(), m_batch, &m_proc) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s", gg_context_last_error(m_ctx));
        gg_context_destroy(m_ctx);   // a later Start() creates it again
        m_ctx = nullptr;
        return CE_Failure;
    }
    // A second stream on GPUs, so that reading and uploading the next block
    // overlaps the processing of this one (gg_fmcw_add_stream).  The CPU
    // backend computes inside the submit: nothing to overlap there.  Without
    // it (no memory, say) blocks are processed one at a time.
    if (strcmp(gg_context_backend(m_ctx), "cpu") != 0)
    {
        if (gg_context_sibling(m_ctx, &m_ctx2) != GG_OK || gg_fmcw_add_stream(m_proc, m_ctx2) != GG_OK)
        {
            CPLDebug("FMCW", "no second stream (%s): blocks one at a time",
                     m_ctx2 ? gg_fmcw_last_error(m_proc) : gg_context_last_error(m_ctx));
            m_ctx2 = nullptr;   // kept by m_ctx, destroyed with it
        }
    }
    m_streams = gg_fmcw_streams(m_proc);
    m_in = gg_fmcw_host_input(m_proc);
    if (!m_in)
    {
        CPLDebug("FMCW", "no page-locked input (%s)", gg_fmcw_last_error(m_proc));
        m_raw.resize(gg_fmcw_sector_values(&m_p) * (size_t)m_batch);
        m_in = m_raw.data();
    }
    m_out.resize(m_products.size() * m_p.n_gates * m_batch);
    m_flags.resize((size_t)m_batch);
    return CE_None;
}

// Reads block `block`'s sectors into the input and submits them (the
// upload is done on return, so the input can be refilled at once).  A
// block read ahead (quiet) keeps its reading error for when it is asked for.
bool FMCWDataset::Submit(int block, bool quiet)
{
    const int first = block * m_batch, n = std::min(m_batch, nRasterYSizeSectors() - first);
    if (quiet)
    {
        CPLPushErrorHandler(CPLQuietErrorHandler);
        CPLErrorReset();
    }
    bool ok = FMCWFileRead(m_file, first, n, m_in) == CE_None;
    if (!ok && quiet)
    {
        m_errBlock = block;
        m_errMsg = CPLGetLastErrorMsg();
    }
    if (ok && gg_fmcw_submit(m_proc, m_in, n) != GG_OK)
    {
        ok = false;
        if (!quiet)
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s", gg_fmcw_last_error(m_proc));
    }
    if (quiet)
        CPLPopErrorHandler();
    if (ok)
        m_inflight.push_back(block);
    return ok;
}

// Collects the oldest block in flight (which must be `block`) into dst.
CPLErr FMCWDataset::Collect(int block, float *dst, int dstRows)
{
    const size_t G = (size_t)m_p.n_gates, np = m_products.size();
    const int first = block * m_batch;
    m_inflight.pop_front();
    int n = 0;
    if (gg_fmcw_collect(m_proc, m_out.data(), m_flags.data(), &n) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s", gg_fmcw_last_error(m_proc));
        return CE_Failure;
    }
    for (int k = 0; k < n; k++)
    {
        const int flag = m_flags[(size_t)k];
        if (flag && !m_warned[(size_t)(first + k)])
        {
            m_warned[(size_t)(first + k)] = 1;
            CPLError(CE_Warning, CPLE_AppDefined, "FMCW: sector %d: %s; its products are nodata", first + k,
                     flag == 1 ? "a channel is all zero" : "too many clipped (full-scale) samples");
        }
        // processor output: [sector][product asked][G]
        for (size_t i = 0; i < np; i++)
            memcpy(dst + (i * (size_t)dstRows + (size_t)k) * G, m_out.data() + ((size_t)k * np + i) * G,
                   G * sizeof(float));
    }
    return CE_None;
}

// Collects and drops every block in flight (a read out of the expected order).
void FMCWDataset::Drain()
{
    while (!m_inflight.empty())
    {
        m_inflight.pop_front();
        (void)gg_fmcw_collect(m_proc, nullptr, nullptr, nullptr);
    }
}

const float *FMCWDataset::FillBlock(int block)
{
    auto hit = m_blocks.find(block);
    if (hit != m_blocks.end())
        return hit->second.data();
    if (Start() != CE_None)
        return nullptr;
    m_stride = m_lastBlock >= 0 && block > m_lastBlock ? block - m_lastBlock : 1;
    m_lastBlock = block;
    if (m_inflight.empty() || m_inflight.front() != block)
    {
        Drain();
        if (m_errBlock == block)
        {
            m_errBlock = -1;
            CPLError(CE_Failure, CPLE_FileIO, "%s", m_errMsg.c_str());
            return nullptr;
        }
        if (!Submit(block, false))
            return nullptr;
    }
    // read ahead: the next block of the read pattern is read and uploaded
    // while the device processes this one
    const int next = block + m_stride;
    if (next < BlockCount() && (int)m_inflight.size() < m_streams && m_errBlock != next &&
        !m_blocks.count(next))
        Submit(next, true);
    const size_t bytes = m_products.size() * (size_t)m_batch * m_p.n_gates * sizeof(float);
    while (!m_blockOrder.empty() && (m_blocks.size() + 1) * bytes > kPolarCacheBytes)
    {
        m_blocks.erase(m_blockOrder.front());
        m_blockOrder.pop_front();
    }
    std::vector<float> &dst = m_blocks[block];
    dst.resize(bytes / sizeof(float));
    if (Collect(block, dst.data(), m_batch) != CE_None)
    {
        m_blocks.erase(block);
        return nullptr;
    }
    m_blockOrder.push_back(block);
    return dst.data();
}

CPLErr FMCWDataset::FillGrid()
{
    if (m_cacheBlock == 0)
        return CE_None;
    if (Start() != CE_None)
        return CE_Failure;
    const int S = FMCWFileSectorCount(m_file), G = m_p.n_gates, nb = BlockCount();
    const size_t np = m_products.size();
    std::vector<float> polar(np * (size_t)S * G);
    std::vector<float> part(np * (size_t)m_batch * G);
    Drain();
    // submit(b0); then per block: read and submit the next, collect this one
    for (int submitted = 0, collected = 0; collected < nb; collected++)
    {
        while (submitted < nb && (int)m_inflight.size() < m_streams)
            if (!Submit(submitted++, false))
            {
                Drain();
                return CE_Failure;
            }
        const int first = collected * m_batch, n = std::min(m_batch, S - first);
        if (Collect(collected, part.data(), n) != CE_None)
        {
            Drain();
            return CE_Failure;
        }
        for (size_t i = 0; i < np; i++)
            memcpy(polar.data() + (i * S + first) * (size_t)G, part.data() + i * (size_t)n * G,
                   sizeof(float) * (size_t)n * G);
    }
    const double *elev = FMCWFileElevation(m_file);
    double e = 0;
    for (int s = 0; s < S; s++)
        e += elev[s] / S;
    m_cache.resize(np * (size_t)m_gridSize * m_gridSize);
    for (size_t i = 0; i < np; i++)
        if (gg_fmcw_grid_ppi(&m_p, polar.data() + i * (size_t)S * G, S, FMCWFileAzimuth(m_file),
                             FMCWFileSite(m_file)->beam_width, e, m_res, m_maxRange, m_gridSize,
                             m_cache.data() + i * (size_t)m_gridSize * m_gridSize) != GG_OK)
        {
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: PPI gridding failed (elevation %g, resolution %g m)", e,
                     m_res);
            return CE_Failure;
        }
    m_cacheBlock = 0;
    return CE_None;
}

// The "GEOGPU" metadata domain (fmcw_driver.h): the device the products
// are computed on and the fallback notice under auto, for the utility's
// one notice line (gg_app).  Asking starts the device, as the first block
// read would, so that a device that cannot start fails before an output
// exists.  NULL after a CPLError when it cannot start.
const char *FMCWDataset::GetMetadataItem(const char *name, const char *domain)
{
    if (!domain || !EQUAL(domain, "GEOGPU") || !name)
        return GDALDataset::GetMetadataItem(name, domain);
    if (!EQUAL(name, "DEVICE") && !EQUAL(name, "DEVICE_NOTICE"))
        return nullptr;
    std::lock_guard<std::mutex> guard(m_lock);
    if (Start() != CE_None)
        return nullptr;
    return CPLSPrintf("%s", EQUAL(name, "DEVICE") ? gg_context_device_name(m_ctx) : gg_context_notice(m_ctx));
}

CPLErr FMCWBand::IReadBlock(int, int nBlockYOff, void *pData)
{
    FMCWDataset *ds = static_cast<FMCWDataset *>(poDS);
    std::lock_guard<std::mutex> guard(ds->m_lock);
    const int y0 = nBlockYOff * nBlockYSize, rows = std::min(nBlockYSize, nRasterYSize - y0);
    float *out = static_cast<float *>(pData);
    if (ds->m_res > 0)
    {
        if (ds->FillGrid() != CE_None)
            return CE_Failure;
        const size_t plane = (size_t)nRasterXSize * nRasterYSize;
        memcpy(out, ds->m_cache.data() + m_iProduct * plane + (size_t)y0 * nRasterXSize,
               sizeof(float) * (size_t)rows * nRasterXSize);
    }
    else
    {
        const float *products = ds->FillBlock(nBlockYOff);
        if (!products)
            return CE_Failure;
        memcpy(out, products + (size_t)m_iProduct * ds->m_batch * nRasterXSize,
               sizeof(float) * (size_t)rows * nRasterXSize);
    }
    for (size_t i = (size_t)rows * nRasterXSize; i < (size_t)nBlockYSize * nBlockXSize; i++)
        out[i] = GG_FMCW_NODATA;
    return CE_None;
}

GDALDataset *FMCWDataset::Create(const char *file, const char *products, const char *device, double res,
                                 double maxRange, double average)
{
    char err[512];
    // Metek MRR-2 spectra (text, maybe gzipped): time x height products
    if (MRR2FileIdentify(file))
    {
        if (res != 0 || maxRange != 0)
        {
            CPLError(CE_Failure, CPLE_IllegalArg,
                     "FMCW: %s: MRR-2 spectra look straight up: no PPI grid (GRID_RES, MAX_RANGE)", file);
            return nullptr;
        }
        return MRR2DatasetCreate(file, products, device, average);
    }
    if (average != 0)
    {
        CPLError(CE_Failure, CPLE_IllegalArg,
                 "FMCW: %s: time averaging (AVERAGE) applies to MRR-2 spectra, not to raw sectors", file);
        return nullptr;
    }
    int list[GG_FMCW_NPRODUCTS], n = 0;
    if (gg_fmcw_parse_products(products, list, &n, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: %s", err);
        return nullptr;
    }
    if (device && *device && gg_device_check(device, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: %s", err);
        return nullptr;
    }
    if (res < 0 || !std::isfinite(res) || maxRange < 0 || !std::isfinite(maxRange))
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: the grid resolution and maximum range must be positive");
        return nullptr;
    }
    FMCWFile *f = FMCWFileOpen(file);
    if (!f)
        return nullptr;
    auto ds = new FMCWDataset();
    ds->m_file = f;
    ds->m_p = *FMCWFileParams(f);
    ds->m_products.assign(list, list + n);
    ds->m_device = device ? device : "";
    const int S = FMCWFileSectorCount(f);
    // 16 sectors a batch: past the knee of the device's per-push overhead
    // (bench/RESULTS.md), and the polar block height
    ds->m_batch = std::min(16, S);
    ds->m_warned.assign((size_t)S, 0);
    ds->m_res = res;
    const FMCWSite *site = FMCWFileSite(f);
    if (res > 0)
    {
        double ground = 0;
        gg_fmcw_beam(gg_fmcw_gate_range(&ds->m_p, ds->m_p.n_gates - 1), FMCWFileElevation(f)[0], &ground, nullptr);
        ds->m_maxRange = maxRange > 0 ? maxRange : ground;
        const double cells = 2.0 * std::ceil(ds->m_maxRange / res);
        // NaN (a non-finite elevation in the file) and empty grids fail here, before the cast
        if (!(cells >= 2 && cells <= 40000))
        {
            CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: a %.0f m grid to %.0f m is %.0f cells square; not in 2..40000",
                     res, ds->m_maxRange, cells);
            delete ds;
            return nullptr;
        }
        ds->m_gridSize = (int)cells;
        ds->nRasterXSize = ds->nRasterYSize = ds->m_gridSize;
        ds->m_srs.SetWellKnownGeogCS("WGS84");
        ds->m_srs.SetAE(site->latitude, site->longitude, 0, 0);
        ds->m_srs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
    }
    else
    {
        ds->nRasterXSize = ds->m_p.n_gates;
        ds->nRasterYSize = S;
    }
    const gg_fmcw_params &p = ds->m_p;
    ds->SetMetadataItem("CARRIER_FREQUENCY_HZ", CPLSPrintf("%.17g", p.carrier_hz));
    ds->SetMetadataItem("SWEEP_BANDWIDTH_HZ", CPLSPrintf("%.17g", p.bandwidth_hz));
    ds->SetMetadataItem("SWEEP_TIME_S", CPLSPrintf("%.17g", p.sweep_time_s));
    ds->SetMetadataItem("RANGE_RESOLUTION_M", CPLSPrintf("%.17g", gg_fmcw_range_resolution(&p)));
    ds->SetMetadataItem("RANGE_OFFSET_M", CPLSPrintf("%.17g", p.range_offset_m));
    ds->SetMetadataItem("NYQUIST_VELOCITY_MPS", CPLSPrintf("%.17g", gg_fmcw_nyquist_velocity(&p)));
    ds->SetMetadataItem("WAVELENGTH_M", CPLSPrintf("%.17g", gg_fmcw_wavelength(&p)));
    ds->SetMetadataItem("RADAR_CONSTANT_H_DB", CPLSPrintf("%.17g", p.radar_constant_h_db));
    ds->SetMetadataItem("ZDR_OFFSET_DB", CPLSPrintf("%.17g", p.zdr_offset_db));
    ds->SetMetadataItem("LDR_OFFSET_DB", CPLSPrintf("%.17g", p.ldr_offset_db));
    ds->SetMetadataItem("N_SWEEPS", CPLSPrintf("%d", p.n_sweeps));
    ds->SetMetadataItem("N_SAMPLES", CPLSPrintf("%d", p.n_samples));
    ds->SetMetadataItem("N_GATES", CPLSPrintf("%d", p.n_gates));
    ds->SetMetadataItem("N_SECTORS", CPLSPrintf("%d", S));
    ds->SetMetadataItem("LATITUDE", CPLSPrintf("%.17g", site->latitude));
    ds->SetMetadataItem("LONGITUDE", CPLSPrintf("%.17g", site->longitude));
    ds->SetMetadataItem("ALTITUDE", CPLSPrintf("%.17g", site->altitude));
    ds->SetMetadataItem("BEAM_WIDTH_DEG", CPLSPrintf("%.17g", site->beam_width));
    ds->SetMetadataItem("ELEVATION_DEG", CPLSPrintf("%.17g", FMCWFileElevation(f)[0]));
    if (res > 0)
    {
        ds->SetMetadataItem("GRID_RESOLUTION_M", CPLSPrintf("%.17g", res));
        ds->SetMetadataItem("MAX_RANGE_M", CPLSPrintf("%.17g", ds->m_maxRange));
    }
    else
    {
        std::string az, t, r;
        for (int s = 0; s < S; s++)
        {
            az += CPLSPrintf(s ? ",%.6g" : "%.6g", FMCWFileAzimuth(f)[s]);
            t += CPLSPrintf(s ? ",%.17g" : "%.17g", FMCWFileTime(f)[s]);
        }
        for (int g = 0; g < ds->m_p.n_gates; g++)
            r += CPLSPrintf(g ? ",%.9g" : "%.9g", gg_fmcw_gate_range(&ds->m_p, g));
        ds->SetMetadataItem("AZIMUTH_DEG", az.c_str());
        // per sector (ray) its time, per gate its range: CfRadial's coordinates
        ds->SetMetadataItem("TIME_S", t.c_str());
        ds->SetMetadataItem("RANGE_M", r.c_str());
    }
    for (int i = 0; i < n; i++)
        ds->SetBand(i + 1, new FMCWBand(ds, i + 1, i));
    ds->SetDescription(file);
    return ds;
}

GDALDataset *FMCWDataset::Open(GDALOpenInfo *poOpenInfo)
{
    if (!Identify(poOpenInfo))
        return nullptr;
    if (poOpenInfo->eAccess == GA_Update)
    {
        CPLError(CE_Failure, CPLE_NotSupported, "FMCW: the driver is read-only");
        return nullptr;
    }
    const char *products = CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "PRODUCTS", "");
    const char *device = CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "DEVICE", "");
    const double res = CPLAtof(CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "GRID_RES", "0"));
    const double maxr = CPLAtof(CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "MAX_RANGE", "0"));
    const double average = CPLAtof(CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "AVERAGE", "0"));
    const char *file = poOpenInfo->pszFilename;
    return Create(STARTS_WITH_CI(file, "FMCW:") ? file + 5 : file, products, device, res, maxr, average);
}

}  // namespace

GDALDatasetH FMCWOpenProducts(const char *pszFilename, const char *products, const char *device, double grid_res,
                              double max_range)
{
    return GDALDataset::ToHandle(FMCWDataset::Create(pszFilename, products, device, grid_res, max_range));
}

void FMCWRegisterDriver(void)
{
    if (GDALGetDriverByName("FMCW") != nullptr)
        return;
    GDALDriver *drv = new GDALDriver();
    drv->SetDescription("FMCW");
    drv->SetMetadataItem(GDAL_DCAP_RASTER, "YES");
    drv->SetMetadataItem(GDAL_DMD_LONGNAME,
                         "geogpu FMCW weather radar (products of raw sectors and Metek MRR-2 spectra)");
    drv->SetMetadataItem(GDAL_DMD_HELPTOPIC, "docs/driver_fmcw.md");
    drv->SetMetadataItem(GDAL_DMD_CONNECTION_PREFIX, "FMCW:");
    drv->SetMetadataItem(GDAL_DMD_OPENOPTIONLIST,
                         "<OpenOptionList>"
                         "  <Option name='PRODUCTS' type='string' description='comma-separated products "
                         "(DBZ,ZDR,LDR,VEL,WIDTH,RHOHV,PHIDP,SNR,SNRVC,SNRHX; MRR-2: ZE,W,WIDTH,SNR,NOISE,FLAG,Z,PIA,RR,LWC); "
                         "default all'/>"
                         "  <Option name='DEVICE' type='string' description='auto, cpu, cuda[:N], "
                         "opencl[:P[:D]]'/>"
                         "  <Option name='GRID_RES' type='float' description='PPI cell size in m (0: polar "
                         "raster)' default='0'/>"
                         "  <Option name='MAX_RANGE' type='float' description='PPI extent in m (0: last "
                         "gate)' default='0'/>"
                         "  <Option name='AVERAGE' type='float' description='MRR-2: seconds of the clock "
                         "intervals whose records are averaged (0: every record)' default='0'/>"
                         "</OpenOptionList>");
    drv->pfnOpen = FMCWDataset::Open;
    drv->pfnIdentify = FMCWDataset::Identify;
    GetGDALDriverManager()->RegisterDriver(drv);
}
