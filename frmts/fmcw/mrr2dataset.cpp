/*
 * mrr2dataset.cpp -- Metek MRR-2 raw spectra (docs/mrr2.md) as a raster of
 * its products: rows = output times (records, or averaging intervals),
 * columns = range gates (heights), one Float32 band per product named by
 * it (ZE, W, WIDTH, SNR, NOISE, FLAG, Z, PIA, RR, LWC).  The file is parsed when opened (a
 * bad file fails there, before any output exists); the products are
 * computed on the device by gg_mrr2_products on the first block read, all
 * rows at once (an hour of 10-s records is 362 x 32 gates).
 *
 * MIT licence.
 */
#include "mrr2dataset.h"
#include "mrr2_file.h"

#include "cpl_string.h"
#include "gdal_priv.h"

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

namespace
{

class MRR2Dataset;

class MRR2Band final : public GDALRasterBand
{
    int m_product;   // gg_mrr2_products plane
    std::string m_units;

  public:
    MRR2Band(MRR2Dataset *ds, int nBandIn, int product);
    CPLErr IReadBlock(int, int, void *pData) override;
    const char *GetUnitType() override { return m_units.c_str(); }
    double GetNoDataValue(int *pbSuccess) override
    {
        if (pbSuccess)
            *pbSuccess = TRUE;
        return GG_MRR2_NODATA;
    }
};

class MRR2Dataset final : public GDALDataset
{
    friend class MRR2Band;
    gg_mrr2 *m_mrr2 = nullptr;
    gg_mrr2_options m_opt{};
    std::string m_device;
    gg_context *m_ctx = nullptr;
    std::vector<float> m_products;   // [row][GG_MRR2_NPROD][gate], once computed
    std::mutex m_lock;

    CPLErr Start();
    CPLErr Compute();

  public:
    ~MRR2Dataset() override
    {
        gg_context_destroy(m_ctx);
        gg_mrr2_free(m_mrr2);
    }
    static GDALDataset *Create(const char *file, const char *products, const char *device,
                               double average);
    const char *GetMetadataItem(const char *name, const char *domain = "") override;
};

MRR2Band::MRR2Band(MRR2Dataset *ds, int nBandIn, int product) : m_product(product)
{
    poDS = ds;
    nBand = nBandIn;
    eDataType = GDT_Float32;
    nRasterXSize = nBlockXSize = ds->GetRasterXSize();
    nRasterYSize = nBlockYSize = ds->GetRasterYSize();
    SetDescription(gg_mrr2_product_name(product));
    m_units = gg_mrr2_product_units(product);
    GDALRasterBand::SetMetadataItem("standard_name", gg_mrr2_product_standard_name(product));
}

CPLErr MRR2Dataset::Start()
{
    if (m_ctx)
        return CE_None;
    char err[512];
    if (gg_context_create(m_device.empty() ? nullptr : m_device.c_str(), &m_ctx, err, sizeof err) != GG_OK)
    {
        m_ctx = nullptr;
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s", err);
        return CE_Failure;
    }
    CPLDebug("FMCW", "MRR-2 on device %s", gg_context_device_name(m_ctx));
    return CE_None;
}

CPLErr MRR2Dataset::Compute()
{
    if (!m_products.empty())
        return CE_None;
    if (Start() != CE_None)
        return CE_Failure;
    std::vector<float> out((size_t)nRasterYSize * GG_MRR2_NPROD * nRasterXSize);
    if (gg_mrr2_products(m_ctx, m_mrr2, &m_opt, out.data()) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "MRR-2: %s: %s", GetDescription(), gg_context_last_error(m_ctx));
        return CE_Failure;
    }
    m_products.swap(out);
    return CE_None;
}

CPLErr MRR2Band::IReadBlock(int, int, void *pData)
{
    MRR2Dataset *ds = static_cast<MRR2Dataset *>(poDS);
    std::lock_guard<std::mutex> guard(ds->m_lock);
    if (ds->Compute() != CE_None)
        return CE_Failure;
    float *out = static_cast<float *>(pData);
    const size_t G = (size_t)nRasterXSize;
    for (int r = 0; r < nRasterYSize; r++)
        memcpy(out + r * G, ds->m_products.data() + ((size_t)r * GG_MRR2_NPROD + m_product) * G,
               G * sizeof(float));
    return CE_None;
}

// The "GEOGPU" domain, as the sector files' dataset answers it
// (fmcw_driver.h): asking starts the device.
const char *MRR2Dataset::GetMetadataItem(const char *name, const char *domain)
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

GDALDataset *MRR2Dataset::Create(const char *file, const char *products, const char *device, double average)
{
    char err[512];
    int list[GG_MRR2_NPROD], n = 0;
    if (gg_mrr2_parse_products(products, list, &n, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: %s", err);
        return nullptr;
    }
    if (device && *device && gg_device_check(device, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: %s", err);
        return nullptr;
    }
    if (!std::isfinite(average) || average < 0 || average > 86400)
    {
        CPLError(CE_Failure, CPLE_IllegalArg, "FMCW: the averaging interval must be 0..86400 s, not %g",
                 average);
        return nullptr;
    }
    gg_mrr2 *m = MRR2FileRead(file);
    if (!m)
        return nullptr;
    auto ds = new MRR2Dataset();
    ds->m_mrr2 = m;
    ds->m_opt.average_s = average;
    ds->m_device = device ? device : "";
    const int rows = gg_mrr2_rows(m, average, nullptr);
    std::vector<int> first((size_t)rows + 1);
    gg_mrr2_rows(m, average, first.data());
    ds->nRasterXSize = m->n_gates;
    ds->nRasterYSize = rows;
    const double lambda = 299792458.0 / GG_MRR2_FREQUENCY;
    ds->SetMetadataItem("INSTRUMENT", "Metek MRR-2");
    ds->SetMetadataItem("SCAN", "vertically pointing");
    ds->SetMetadataItem("FREQUENCY_HZ", CPLSPrintf("%.17g", GG_MRR2_FREQUENCY));
    ds->SetMetadataItem("WAVELENGTH_M", CPLSPrintf("%.17g", lambda));
    ds->SetMetadataItem("K2", CPLSPrintf("%.17g", GG_MRR2_K2));
    ds->SetMetadataItem("CALIBRATION_CONSTANT", CPLSPrintf("%.17g", m->cc));
    ds->SetMetadataItem("VELOCITY_RESOLUTION_MPS", CPLSPrintf("%.17g", GG_MRR2_DV));
    ds->SetMetadataItem("NYQUIST_VELOCITY_MPS", CPLSPrintf("%.17g", GG_MRR2_DV * m->n_bins));
    ds->SetMetadataItem("N_RECORDS", CPLSPrintf("%d", m->n_records));
    ds->SetMetadataItem("N_GATES", CPLSPrintf("%d", m->n_gates));
    ds->SetMetadataItem("N_BINS", CPLSPrintf("%d", m->n_bins));
    ds->SetMetadataItem("AVERAGE_S", CPLSPrintf("%.17g", average));
    ds->SetMetadataItem("ELEVATION_DEG", "90");
    // per row: the time of its first record (s since 1970 UTC), and how many
    // records it averages; per column: the gate's height (m above the radar)
    std::string t, nrec, h;
    for (int r = 0; r < rows; r++)
    {
        t += CPLSPrintf(r ? ",%lld" : "%lld", m->seconds[first[(size_t)r]]);
        nrec += CPLSPrintf(r ? ",%d" : "%d", first[(size_t)r + 1] - first[(size_t)r]);
    }
    for (int g = 0; g < m->n_gates; g++)
        h += CPLSPrintf(g ? ",%.9g" : "%.9g", m->height[g]);
    ds->SetMetadataItem("TIME_S", t.c_str());
    ds->SetMetadataItem("ROW_RECORDS", nrec.c_str());
    ds->SetMetadataItem("HEIGHT_M", h.c_str());
    ds->SetMetadataItem("RANGE_M", h.c_str());
    for (int i = 0; i < n; i++)
        ds->SetBand(i + 1, new MRR2Band(ds, i + 1, list[i]));
    ds->SetDescription(file);
    return ds;
}

}  // namespace

GDALDataset *MRR2DatasetCreate(const char *file, const char *products, const char *device, double average)
{
    return MRR2Dataset::Create(file, products, device, average);
}
