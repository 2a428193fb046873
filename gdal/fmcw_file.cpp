/*
 * fmcw_file.cpp -- the FMCW raw-sector NetCDF layout through GDAL's
 * multidimensional API (see fmcw_file.h, docs/fmcw_format.md).
 *
 * MIT licence.
 */
#include "fmcw_file.h"
#include "gpu/fault.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "gdal_priv.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

static const char *const kChannels[6] = {"I_HH", "Q_HH", "I_VV", "Q_VV", "I_HV", "Q_HV"};

struct FMCWFile
{
    GDALDataset *poDS = nullptr;
    std::shared_ptr<GDALMDArray> arrays[6];
    gg_fmcw_params params{};
    FMCWSite site{};
    int nSectors = 0;
    std::vector<double> azimuth, elevation, time;
    std::string name;
};

static bool ReadAttr(const std::shared_ptr<GDALGroup> &root, const char *key, double *v, bool required,
                     const std::string &name)
{
    auto attr = root->GetAttribute(key);
    if (!attr)
    {
        if (required)
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: missing radar parameter '%s'", name.c_str(), key);
        return false;
    }
    *v = attr->ReadAsDouble();
    if (!std::isfinite(*v))
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: radar parameter '%s' is not a number", name.c_str(), key);
        return false;
    }
    return true;
}

static bool ReadVector(const std::shared_ptr<GDALGroup> &root, const char *key, int n, std::vector<double> &out,
                       const std::string &name, bool required, double dflt)
{
    out.assign((size_t)n, dflt);
    auto arr = root->OpenMDArray(key);
    if (!arr)
    {
        if (required)
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: missing variable '%s'", name.c_str(), key);
        return !required;
    }
    const auto dims = arr->GetDimensions();
    if (dims.size() != 1 || dims[0]->GetSize() != (GUInt64)n)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: variable '%s' must have dimension (sector) of size %d",
                 name.c_str(), key, n);
        return false;
    }
    const GUInt64 start = 0;
    const size_t count = (size_t)n;
    return arr->Read(&start, &count, nullptr, nullptr, GDALExtendedDataType::Create(GDT_Float64), out.data());
}

// libnetcdf (4.9.0 in Debian bookworm) trusts the counts in a classic
// (CDF-1/2/5) header: a corrupt count of 50 million dimensions crashes it
// (found by tests/fuzz/fuzz_fmcw_nc).  So a classic header is walked here
// first, every count and length checked against the bytes that remain, and
// a malformed one is refused with one error before libnetcdf sees it.
// netCDF-4 (HDF5) files are left to the library.
namespace
{
struct CDFReader
{
    const unsigned char *p, *end;
    int version;  // 1, 2 or 5
    bool ok = true;
    uint64_t U32()
    {
        if (end - p < 4) { ok = false; return 0; }
        const uint64_t v = ((uint64_t)p[0] << 24) | ((uint64_t)p[1] << 16) | ((uint64_t)p[2] << 8) | p[3];
        p += 4;
        return v;
    }
    uint64_t U64()
    {
        const uint64_t hi = U32(), lo = U32();
        return (hi << 32) | lo;
    }
    uint64_t Count() { return version == 5 ? U64() : U32(); }
    // n elements of at least `each` bytes must fit in what remains
    bool Fits(uint64_t n, uint64_t each)
    {
        if (!ok || (each && n > (uint64_t)(end - p) / each)) ok = false;
        return ok;
    }
    void Skip(uint64_t bytes)
    {
        const uint64_t padded = (bytes + 3) & ~(uint64_t)3;
        if (!ok || padded < bytes || padded > (uint64_t)(end - p)) { ok = false; return; }
        p += padded;
    }
    void Name()
    {
        const uint64_t n = Count();
        if (n == 0 || n > 256) ok = false;
        Skip(n);
    }
    static int TypeSize(uint64_t t)
    {
        static const int sizes[12] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
        return t >= 1 && t <= 11 ? sizes[t] : 0;
    }
    void Attributes()
    {
        const uint64_t tag = U32(), n = Count();
        if (tag == 0 && n == 0) return;
        if (tag != 0x0C || !Fits(n, 12)) { ok = false; return; }
        for (uint64_t i = 0; i < n && ok; i++)
        {
            Name();
            const uint64_t type = U32();
            const int size = TypeSize(type);
            const uint64_t count = Count();
            if (!size || (version != 5 && type > 6) || !Fits(count, size)) { ok = false; return; }
            Skip(count * (uint64_t)size);
        }
    }
};
}  // namespace

static bool ClassicHeaderOK(const char *pszFilename)
{
    VSILFILE *fp = VSIFOpenL(pszFilename, "rb");
    if (!fp)
        return true;  // the open below reports it
    std::vector<unsigned char> buf(16 << 20);  // no sane FMCW header is larger
    buf.resize(VSIFReadL(buf.data(), 1, buf.size(), fp));
    VSIFCloseL(fp);
    if (buf.size() < 4 || memcmp(buf.data(), "CDF", 3) != 0)
        return true;  // not classic netCDF
    CDFReader r{buf.data() + 4, buf.data() + buf.size(), buf[3]};
    if (r.version != 1 && r.version != 2 && r.version != 5)
        r.ok = false;
    r.Count();  // numrecs
    uint64_t ndims = 0;
    {
        const uint64_t tag = r.U32(), n = r.Count();
        if (!(tag == 0 && n == 0))
        {
            if (tag != 0x0A || !r.Fits(n, 8))
                r.ok = false;
            for (uint64_t i = 0; i < n && r.ok; i++)
            {
                r.Name();
                r.Count();
            }
            ndims = n;
        }
    }
    if (r.ok)
        r.Attributes();
    if (r.ok)
    {
        const uint64_t tag = r.U32(), n = r.Count();
        if (!(tag == 0 && n == 0))
        {
            if (tag != 0x0B || !r.Fits(n, 24))
                r.ok = false;
            for (uint64_t i = 0; i < n && r.ok; i++)
            {
                r.Name();
                const uint64_t rank = r.Count();
                if (!r.Fits(rank, 4))
                    break;
                for (uint64_t d = 0; d < rank && r.ok; d++)
                    if (r.Count() >= ndims)
                        r.ok = false;
                if (!r.ok)
                    break;
                r.Attributes();
                const uint64_t type = r.U32();
                if (!CDFReader::TypeSize(type) || (r.version != 5 && type > 6))
                    r.ok = false;
                r.Count();                                   // vsize
                r.version == 1 ? r.U32() : r.U64();          // begin
            }
        }
    }
    if (!r.ok)
        CPLError(CE_Failure, CPLE_OpenFailed,
                 "FMCW: %s: malformed netCDF classic header (a count or length runs past the header)",
                 pszFilename);
    return r.ok;
}

FMCWFile *FMCWFileOpen(const char *pszFilename)
{
    if (STARTS_WITH_CI(pszFilename, "FMCW:"))
        pszFilename += 5;
    auto f = std::make_unique<FMCWFile>();
    f->name = pszFilename;
    if (!ClassicHeaderOK(pszFilename))
        return nullptr;
    const char *const drivers[] = {"netCDF", nullptr};
    f->poDS = GDALDataset::Open(pszFilename, GDAL_OF_MULTIDIM_RASTER | GDAL_OF_VERBOSE_ERROR, drivers);
    if (!f->poDS)
        return nullptr;   // GDAL said why
    auto root = f->poDS->GetRootGroup();
    if (!root)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: no root group", pszFilename);
        FMCWFileClose(f.release());
        return nullptr;
    }
    GUInt64 dimsize[3] = {0, 0, 0};
    for (int c = 0; c < 6; c++)
    {
        f->arrays[c] = root->OpenMDArray(kChannels[c]);
        if (!f->arrays[c])
        {
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: missing channel variable '%s'", pszFilename,
                     kChannels[c]);
            FMCWFileClose(f.release());
            return nullptr;
        }
        const auto dims = f->arrays[c]->GetDimensions();
        bool ok = dims.size() == 3;
        for (int d = 0; ok && d < 3; d++)
        {
            if (c == 0)
                dimsize[d] = dims[d]->GetSize();
            ok = dims[d]->GetSize() == dimsize[d];
        }
        if (!ok)
        {
            CPLError(CE_Failure, CPLE_AppDefined,
                     "FMCW: %s: variable '%s' must have dimensions (sector, sweep, sample) like I_HH", pszFilename,
                     kChannels[c]);
            FMCWFileClose(f.release());
            return nullptr;
        }
        const GDALDataType t = f->arrays[c]->GetDataType().GetNumericDataType();
        if (t != GDT_Int16)
        {
            CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: variable '%s' must be int16 (short), not %s",
                     pszFilename, kChannels[c], GDALGetDataTypeName(t));
            FMCWFileClose(f.release());
            return nullptr;
        }
    }
    if (dimsize[0] < 1 || dimsize[0] > 1000000 || dimsize[1] > 100000 || dimsize[2] > 100000000)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: implausible dimensions", pszFilename);
        FMCWFileClose(f.release());
        return nullptr;
    }
    f->nSectors = (int)dimsize[0];
    if (dimsize[1] > INT_MAX || dimsize[2] > INT_MAX)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: %llu sweeps x %llu samples per sector is too large",
                 pszFilename, (unsigned long long)dimsize[1], (unsigned long long)dimsize[2]);
        FMCWFileClose(f.release());
        return nullptr;
    }
    gg_fmcw_params &p = f->params;
    gg_fmcw_params_default(&p);
    p.n_sweeps = (int)dimsize[1];
    p.n_samples = (int)dimsize[2];
    p.n_gates = p.n_samples / 2;
    double v = 0;
    bool ok = ReadAttr(root, "carrier_frequency", &p.carrier_hz, true, f->name) &&
              ReadAttr(root, "sweep_bandwidth", &p.bandwidth_hz, true, f->name) &&
              ReadAttr(root, "sweep_time", &p.sweep_time_s, true, f->name) &&
              ReadAttr(root, "radar_constant_h", &p.radar_constant_h_db, true, f->name) &&
              ReadAttr(root, "latitude", &f->site.latitude, true, f->name) &&
              ReadAttr(root, "longitude", &f->site.longitude, true, f->name);
    if (ok)
    {
        CPLErrorReset();
        ReadAttr(root, "sample_rate", &p.sample_rate_hz, false, f->name);
        ReadAttr(root, "zdr_offset", &p.zdr_offset_db, false, f->name);
        ReadAttr(root, "ldr_offset", &p.ldr_offset_db, false, f->name);
        ReadAttr(root, "range_offset", &p.range_offset_m, false, f->name);
        ReadAttr(root, "altitude", &f->site.altitude, false, f->name);
        f->site.beam_width = 360.0 / f->nSectors;
        ReadAttr(root, "beam_width", &f->site.beam_width, false, f->name);
        if (ReadAttr(root, "n_gates", &v, false, f->name))
        {
            // range-check before the cast: a double outside int's range is UB
            if (!(v >= 1 && v <= INT_MAX && v == floor(v)))
                CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: attribute 'n_gates' (%g) is not a positive integer",
                         pszFilename, v);
            else
                p.n_gates = (int)v;
        }
        ok = CPLGetLastErrorType() != CE_Failure;
    }
    char err[256];
    if (ok && gg_fmcw_params_check(&p, err, sizeof err) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: %s: %s", pszFilename, err);
        ok = false;
    }
    ok = ok && ReadVector(root, "azimuth", f->nSectors, f->azimuth, f->name, true, 0) &&
         ReadVector(root, "elevation", f->nSectors, f->elevation, f->name, false, 0) &&
         ReadVector(root, "time", f->nSectors, f->time, f->name, false, 0);
    if (!ok)
    {
        FMCWFileClose(f.release());
        return nullptr;
    }
    return f.release();
}

void FMCWFileClose(FMCWFile *f)
{
    if (!f)
        return;
    for (auto &a : f->arrays)
        a.reset();
    if (f->poDS)
        GDALClose(f->poDS);
    delete f;
}

int FMCWFileSectorCount(const FMCWFile *f) { return f->nSectors; }
const gg_fmcw_params *FMCWFileParams(const FMCWFile *f) { return &f->params; }
const FMCWSite *FMCWFileSite(const FMCWFile *f) { return &f->site; }
const double *FMCWFileAzimuth(const FMCWFile *f) { return f->azimuth.data(); }
const double *FMCWFileElevation(const FMCWFile *f) { return f->elevation.data(); }
const double *FMCWFileTime(const FMCWFile *f) { return f->time.data(); }

CPLErr FMCWFileRead(FMCWFile *f, int first, int n, int16_t *out)
{
    if (first < 0 || n < 1 || first + n > f->nSectors)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: sectors %d..%d outside 0..%d", first, first + n - 1,
                 f->nSectors - 1);
        return CE_Failure;
    }
    if (gg_fault_point("read"))   // GG_FAULT=read:N (tests)
    {
        CPLError(CE_Failure, CPLE_FileIO, "FMCW: %s: reading the input failed: injected fault (GG_FAULT)",
                 f->name.c_str());
        return CE_Failure;
    }
    const size_t M = (size_t)f->params.n_sweeps, N = (size_t)f->params.n_samples;
    const size_t plane = M * N;
    const auto dt = GDALExtendedDataType::Create(GDT_Int16);
    // One read per (sector, channel) plane, straight into its place in
    // [sector][channel][I,Q][sweep][sample]: the destination of a plane is
    // contiguous, so GDAL's netCDF driver hands it to nc_get_vara in one
    // call.  (One read per channel of n sectors needs a destination stride
    // of 6 planes, which GDAL 3.6 serves element by element: ten times
    // slower than the page cache.)  Sector-major order reads each
    // variable's planes in file order.
    for (int k = 0; k < n; k++)
        for (int c = 0; c < 6; c++)
        {
            const GUInt64 start[3] = {(GUInt64)(first + k), 0, 0};
            const size_t count[3] = {1, M, N};
            if (!f->arrays[c]->Read(start, count, nullptr, nullptr, dt, out + ((size_t)k * 6 + c) * plane))
            {
                CPLError(CE_Failure, CPLE_FileIO, "FMCW: %s: cannot read %s of sector %d", f->name.c_str(),
                         kChannels[c], first + k);
                return CE_Failure;
            }
        }
    return CE_None;
}

static bool WriteDouble(const std::shared_ptr<GDALGroup> &g, const char *key, double v)
{
    auto a = g->CreateAttribute(key, {}, GDALExtendedDataType::Create(GDT_Float64));
    return a && a->Write(v);
}

static bool WriteString(GDALIHasAttribute *g, const char *key, const char *v)
{
    auto a = g->CreateAttribute(key, {}, GDALExtendedDataType::CreateString());
    return a && a->Write(v);
}

CPLErr FMCWFileWrite(const char *pszFilename, const gg_fmcw_params *p, const FMCWSite *site, int nsectors,
                     const double *azimuth, const double *elevation, const double *time,
                     int (*get_sector)(int, int16_t *, void *), void *user, GDALProgressFunc progress,
                     void *progress_arg)
{
    GDALDriver *drv = GetGDALDriverManager()->GetDriverByName("netCDF");
    if (!drv)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "FMCW: GDAL has no netCDF driver");
        return CE_Failure;
    }
    std::unique_ptr<GDALDataset> ds(drv->CreateMultiDimensional(pszFilename, nullptr, nullptr));
    if (!ds)
        return CE_Failure;
    auto root = ds->GetRootGroup();
    const size_t M = (size_t)p->n_sweeps, N = (size_t)p->n_samples, plane = M * N;
    auto dSec = root->CreateDimension("sector", "", "", (GUInt64)nsectors);
    auto dSw = root->CreateDimension("sweep", "", "", M);
    auto dSa = root->CreateDimension("sample", "", "", N);
    if (!dSec || !dSw || !dSa)
        return CE_Failure;
    bool ok = WriteString(root.get(), "Conventions", "CF-1.8") &&
              WriteString(root.get(), "geogpu_fmcw_format", "1.0") &&
              WriteString(root.get(), "title", "FMCW dual-polarisation weather radar raw sectors") &&
              WriteDouble(root, "carrier_frequency", p->carrier_hz) &&
              WriteDouble(root, "sweep_bandwidth", p->bandwidth_hz) &&
              WriteDouble(root, "sweep_time", p->sweep_time_s) &&
              WriteDouble(root, "sample_rate", p->sample_rate_hz) &&
              WriteDouble(root, "n_gates", p->n_gates) &&
              WriteDouble(root, "radar_constant_h", p->radar_constant_h_db) &&
              WriteDouble(root, "zdr_offset", p->zdr_offset_db) &&
              WriteDouble(root, "ldr_offset", p->ldr_offset_db) &&
              WriteDouble(root, "range_offset", p->range_offset_m) &&
              WriteDouble(root, "beam_width", site->beam_width) &&
              WriteDouble(root, "latitude", site->latitude) && WriteDouble(root, "longitude", site->longitude) &&
              WriteDouble(root, "altitude", site->altitude);
    std::shared_ptr<GDALMDArray> arrays[6];
    for (int c = 0; ok && c < 6; c++)
    {
        arrays[c] = root->CreateMDArray(kChannels[c], {dSec, dSw, dSa}, GDALExtendedDataType::Create(GDT_Int16));
        ok = arrays[c] && WriteString(arrays[c].get(), "units", "counts") &&
             WriteString(arrays[c].get(), "long_name",
                         CPLSPrintf("%s component of the %s beat signal", c % 2 ? "quadrature" : "in-phase",
                                    kChannels[c] + 2));
    }
    const char *vec[3] = {"azimuth", "elevation", "time"};
    const char *vunits[3] = {"degrees", "degrees", "seconds since 1970-01-01T00:00:00Z"};
    const double *vdata[3] = {azimuth, elevation, time};
    for (int i = 0; ok && i < 3; i++)
    {
        auto a = root->CreateMDArray(vec[i], {dSec}, GDALExtendedDataType::Create(GDT_Float64));
        const GUInt64 start = 0;
        const size_t count = (size_t)nsectors;
        ok = a && WriteString(a.get(), "units", vunits[i]) &&
             a->Write(&start, &count, nullptr, nullptr, GDALExtendedDataType::Create(GDT_Float64), vdata[i]);
    }
    std::vector<int16_t> buf(6 * plane);
    const auto dt = GDALExtendedDataType::Create(GDT_Int16);
    for (int k = 0; ok && k < nsectors; k++)
    {
        if (get_sector(k, buf.data(), user) != 0)
        {
            ok = false;
            break;
        }
        for (int c = 0; ok && c < 6; c++)
        {
            const GUInt64 start[3] = {(GUInt64)k, 0, 0};
            const size_t count[3] = {1, M, N};
            ok = arrays[c]->Write(start, count, nullptr, nullptr, dt, buf.data() + (size_t)c * plane);
        }
        if (ok && progress && !progress((k + 1.0) / nsectors, "", progress_arg))
        {
            CPLError(CE_Failure, CPLE_UserInterrupt, "interrupted");
            ok = false;
        }
    }
    for (auto &a : arrays)
        a.reset();
    root.reset();
    const GUInt32 nErrors = CPLGetErrorCounter();
    ds.reset();   // flushes; a failure shows as a new error
    if (CPLGetErrorCounter() != nErrors && CPLGetLastErrorType() == CE_Failure)
        ok = false;
    if (!ok && CPLGetLastErrorType() != CE_Failure)
        CPLError(CE_Failure, CPLE_FileIO, "FMCW: cannot write %s", pszFilename);
    return ok ? CE_None : CE_Failure;
}
