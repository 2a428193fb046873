/*
 * gg_driver.cpp -- the GG virtual processing driver: opens GG: connection
 * strings and .ggvrt files as processed datasets (gdal/gg_processed.h),
 * computed lazily block by block on the device, GG:ortho: as an
 * orthorectified scene (ggortho.cpp) and GG:warp: as gdal_warp's output
 * (ggwarp.cpp).
 *
 * MIT licence.
 */
#include "gg_driver.h"
#include "gg_processed.h"
#include "gg_spec.h"

#include "cpl_string.h"
#include "gdal_priv.h"

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

namespace
{
constexpr const char *DRIVER_NAME = "GG";

// .ggvrt files may reference GG datasets; bounds self-references.
constexpr int MAX_NESTING = 16;
thread_local int tlsNesting = 0;

struct NestingGuard
{
    NestingGuard()
    {
        ++tlsNesting;
    }
    ~NestingGuard()
    {
        --tlsNesting;
    }
    NestingGuard(const NestingGuard &) = delete;
    NestingGuard &operator=(const NestingGuard &) = delete;
};


// "key=value:..." where key is a plain identifier: a mistyped option rather
// than a file name.
bool LooksLikeUnknownOption(const std::string &osOperation, const std::string &osInput)
{
    const size_t nEq = osInput.find('=');
    const size_t nColon = osInput.find(':');
    if (nEq == std::string::npos || nEq == 0 || nColon == std::string::npos || nColon < nEq)
        return false;
    for (size_t i = 0; i < nEq; ++i)
    {
        const unsigned char c = static_cast<unsigned char>(osInput[i]);
        if (!isalnum(c) && c != '_')
            return false;
    }
    return !GGIsOperationOption(osOperation.c_str(), osInput.substr(0, nEq).c_str());
}

// "angle, scale, outsize, srcnodata, dstnodata, device"
std::string OptionNames(const std::string &osOperation)
{
    std::string os;
    int nOptions = 0;
    const gg_option *pasOptions = gg_op_options(osOperation.c_str(), &nOptions);
    for (int i = 0; i < nOptions; ++i)
    {
        os += pasOptions[i].key;
        os += ", ";
    }
    return os + "device";
}

/************************************************************************/
/*                            Identify / Open                           */
/************************************************************************/

int GGIdentify(GDALOpenInfo *poOpenInfo)
{
    if (GGIsConnectionString(poOpenInfo->pszFilename))
        return TRUE;
    return GGLooksLikeGGVRT(reinterpret_cast<const char *>(poOpenInfo->pabyHeader),
                            poOpenInfo->nHeaderBytes);
}

GDALDataset *GGOpen(GDALOpenInfo *poOpenInfo)
{
    if (!GGIdentify(poOpenInfo) || !(poOpenInfo->nOpenFlags & GDAL_OF_RASTER))
        return nullptr;
    if (poOpenInfo->eAccess == GA_Update)
    {
        CPLError(CE_Failure, CPLE_NotSupported, "GG: the GG driver is read-only");
        return nullptr;
    }
    NestingGuard oGuard;
    if (tlsNesting > MAX_NESTING)
    {
        CPLError(CE_Failure, CPLE_AppDefined,
                 "GG: inputs nested more than %d deep (does a .ggvrt reference itself?)",
                 MAX_NESTING);
        return nullptr;
    }

    const bool bConnection = GGIsConnectionString(poOpenInfo->pszFilename);
    GGSpec oSpec;
    if (bConnection ? !GGParseConnectionString(poOpenInfo->pszFilename, oSpec)
                    : !GGParseGGVRT(poOpenInfo->pszFilename, oSpec))
        return nullptr;
    // device= in the string or file, else the DEVICE open option, else
    // (when the device starts) GG_DEVICE, else auto.
    if (oSpec.osDevice.empty())
        oSpec.osDevice = CSLFetchNameValueDef(poOpenInfo->papszOpenOptions, "DEVICE", "");

    if (EQUAL(oSpec.osOperation.c_str(), "ortho"))
        return GGOrthoOpen(oSpec, poOpenInfo->pszFilename, bConnection);
    if (EQUAL(oSpec.osOperation.c_str(), "warp"))
        return GGWarpOpen(oSpec, poOpenInfo->pszFilename, bConnection);

    char szError[512] = "";
    gg_op *op = nullptr;
    if (gg_op_new(oSpec.osOperation.c_str(), &op, szError, sizeof(szError)) != GG_OK)
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: %s", szError);
        return nullptr;
    }
    for (const auto &oKV : oSpec.aoOptions)
    {
        const gg_status eStatus = gg_op_set(op, oKV.first.c_str(), oKV.second.c_str());
        if (eStatus != GG_OK)
        {
            CPLError(CE_Failure, CPLE_OpenFailed, "GG: %s", GGOpMessage(op, eStatus).c_str());
            gg_op_free(op);
            return nullptr;
        }
    }
    if (!GGInputCountOK(oSpec.osOperation.c_str(), static_cast<int>(oSpec.aosInputs.size()),
                      poOpenInfo->pszFilename))
    {
        gg_op_free(op);
        return nullptr;
    }

    std::vector<GDALDataset *> apoInputs;
    for (const auto &osInput : oSpec.aosInputs)
    {
        // One line per failure: GDAL's own message, wrapped with the input.
        CPLPushErrorHandler(CPLQuietErrorHandler);
        CPLErrorReset();
        GDALDataset *poInput = GDALDataset::Open(osInput.c_str(), GDAL_OF_RASTER | GDAL_OF_VERBOSE_ERROR);
        const CPLErrorNum nErrorNo = CPLGetLastErrorNo();
        const std::string osError = CPLGetLastErrorMsg();
        CPLPopErrorHandler();
        if (!poInput && bConnection && LooksLikeUnknownOption(oSpec.osOperation, osInput))
        {
            // GG:rotate:angel=30:x.tif reads 'angel=30:x.tif' as the input;
            // name the likelier mistake.
            CPLError(CE_Failure, CPLE_OpenFailed,
                     "GG: '%s' is not an option of %s (options: %s) nor an openable input",
                     GGShortName(osInput.substr(0, osInput.find('='))).c_str(),
                     oSpec.osOperation.c_str(),
                     OptionNames(oSpec.osOperation).c_str());
        }
        else if (!poInput && osError.rfind("GG: cannot open input '", 0) == 0)
        {
            // a nested GG: input that failed to open its own input: its
            // message names the innermost input and the cause; wrapping it
            // at every level made a 3000-deep string's message 1.1 MB
            CPLError(CE_Failure, nErrorNo ? nErrorNo : CPLE_OpenFailed, "%s", osError.c_str());
        }
        else if (!poInput)
        {
            CPLError(CE_Failure, nErrorNo ? nErrorNo : CPLE_OpenFailed,
                     "GG: cannot open input '%s'%s%s", GGShortName(osInput).c_str(),
                     osError.empty() ? "" : ": ", osError.c_str());
        }
        if (!poInput)
        {
            for (GDALDataset *poOpened : apoInputs)
                GDALClose(GDALDataset::ToHandle(poOpened));
            gg_op_free(op);
            return nullptr;
        }
        apoInputs.push_back(poInput);
    }

    return GGOpenProcessedDataset(op, std::move(apoInputs), oSpec.osDevice,
                                  poOpenInfo->pszFilename, bConnection,
                                  bConnection ? nullptr : poOpenInfo->GetSiblingFiles());
}
}  // namespace

void GGRegisterDriver(void)
{
    if (GDALGetDriverByName(DRIVER_NAME) != nullptr)
        return;
    auto poDriver = new GDALDriver();
    poDriver->SetDescription(DRIVER_NAME);
    poDriver->SetMetadataItem(GDAL_DCAP_RASTER, "YES");
    poDriver->SetMetadataItem(GDAL_DCAP_OPEN, "YES");
    poDriver->SetMetadataItem(GDAL_DCAP_VIRTUALIO, "YES");
    poDriver->SetMetadataItem(GDAL_DMD_LONGNAME, "GeoGPU virtual processing");
    poDriver->SetMetadataItem(GDAL_DMD_HELPTOPIC, "docs/driver_gg.md");
    poDriver->SetMetadataItem(GDAL_DMD_CONNECTION_PREFIX, "GG:");
    poDriver->SetMetadataItem(GDAL_DMD_EXTENSION, "ggvrt");
    poDriver->SetMetadataItem(
        GDAL_DMD_OPENOPTIONLIST,
        "<OpenOptionList>"
        "  <Option name='DEVICE' type='string' description='Compute device: auto, cpu, "
        "cuda[:N] or opencl[:P[:D]] (default: the GG_DEVICE configuration option, else auto)'/>"
        "</OpenOptionList>");
    poDriver->pfnIdentify = GGIdentify;
    poDriver->pfnOpen = GGOpen;
    GetGDALDriverManager()->RegisterDriver(poDriver);
}
