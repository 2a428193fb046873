/*
 * gg_spec.cpp -- parsing GG: connection strings and .ggvrt files, writing
 * .ggvrt files.
 *
 * MIT licence.
 */
#include "gg_spec.h"
#include "gg_processed.h"
#include "gg_ortho_scene.h"
#include "gg_warp.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_minixml.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace
{
// A .ggvrt is a few hundred bytes; anything much larger is not one.
constexpr vsi_l_offset GGVRT_MAX_BYTES = 1024 * 1024;

std::string KnownOperations()
{
    std::string os;
    for (const char *const *papszNames = gg_op_names(); *papszNames; ++papszNames)
    {
        if (!os.empty())
            os += ", ";
        os += *papszNames;
    }
    return os + ", ortho, warp";
}

bool CheckOperation(const char *pszOperation, const char *pszWhere)
{
    if (gg_op_options(pszOperation, nullptr) != nullptr || EQUAL(pszOperation, "ortho") ||
        EQUAL(pszOperation, "warp"))
        return true;
    CPLError(CE_Failure, CPLE_OpenFailed, "GG: unknown operation '%s' in %s (known: %s)",
             pszOperation, pszWhere, KnownOperations().c_str());
    return false;
}

bool IsAllDigits(const std::string &os)
{
    if (os.empty())
        return false;
    for (char c : os)
        if (!isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

// Inputs are separated by ','; a name that itself contains ',' and exists
// stays whole, so such files still open.
std::vector<std::string> SplitInputs(const std::string &osInputs)
{
    std::vector<std::string> aos;
    VSIStatBufL sStat;
    if (osInputs.find(',') == std::string::npos ||
        VSIStatExL(osInputs.c_str(), &sStat, VSI_STAT_EXISTS_FLAG) == 0)
    {
        aos.push_back(osInputs);
        return aos;
    }
    size_t nStart = 0;
    while (true)
    {
        const size_t nComma = osInputs.find(',', nStart);
        aos.push_back(osInputs.substr(nStart, nComma == std::string::npos ? std::string::npos
                                                                           : nComma - nStart));
        if (nComma == std::string::npos)
            break;
        nStart = nComma + 1;
    }
    return aos;
}
}  // namespace

bool GGIsConnectionString(const char *pszName)
{
    return pszName && STARTS_WITH_CI(pszName, "GG:");
}

bool GGLooksLikeGGVRT(const char *pszHeader, int nHeaderBytes)
{
    if (!pszHeader || nHeaderBytes < 13)
        return false;
    const char *p = pszHeader;
    const char *pEnd = pszHeader + nHeaderBytes;
    if (nHeaderBytes >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    auto SkipBlanks = [&]()
    {
        while (p < pEnd && isspace(static_cast<unsigned char>(*p)))
            ++p;
    };
    // Skips "<?...?>" or "<!--...-->" at p; false when p holds neither
    // complete in the header.
    auto SkipMarkup = [&](const char *pszOpen, const char *pszClose)
    {
        const size_t nOpen = strlen(pszOpen), nClose = strlen(pszClose);
        if (static_cast<size_t>(pEnd - p) < nOpen || memcmp(p, pszOpen, nOpen) != 0)
            return false;
        for (const char *q = p + nOpen; static_cast<size_t>(pEnd - q) >= nClose; ++q)
            if (memcmp(q, pszClose, nClose) == 0)
            {
                p = q + nClose;
                return true;
            }
        return false;
    };
    SkipBlanks();
    // XML declaration, then comments, as any XML editor may write them.
    while (SkipMarkup("<?xml", "?>") || SkipMarkup("<!--", "-->"))
        SkipBlanks();
    static const char szRoot[] = "<GGVRTDataset";
    const size_t nRoot = sizeof(szRoot) - 1;
    if (static_cast<size_t>(pEnd - p) < nRoot + 1 || memcmp(p, szRoot, nRoot) != 0)
        return false;
    const char chNext = p[nRoot];
    return chNext == '>' || chNext == '/' || isspace(static_cast<unsigned char>(chNext));
}

bool GGIsOperationOption(const char *pszOperation, const char *pszKey)
{
    if (pszOperation && EQUAL(pszOperation, "ortho"))
        return pszKey && ggo_is_option(pszKey);
    if (pszOperation && EQUAL(pszOperation, "warp"))
        return pszKey && ggw_is_option(pszKey);
    int nOptions = 0;
    const gg_option *pasOptions = gg_op_options(pszOperation, &nOptions);
    if (!pasOptions || !pszKey || !*pszKey)
        return false;
    // the op's table (gg_op_options): its keys are the GG: keys and .ggvrt elements
    for (int i = 0; i < nOptions; ++i)
        if (EQUAL(pasOptions[i].key, pszKey))
            return true;
    return false;
}

std::vector<std::pair<std::string, std::string>> GGOperationOptions(const gg_op *op)
{
    std::vector<std::pair<std::string, std::string>> ao;
    for (int i = 0; i < gg_op_option_count(op); ++i)
    {
        const char *pszKey = nullptr, *pszValue = nullptr;
        if (gg_op_option_at(op, i, &pszKey, &pszValue) == GG_OK)
            ao.emplace_back(pszKey, pszValue);
    }
    return ao;
}

std::string GGShortName(const std::string &osName)
{
    constexpr size_t nMax = 200, nKeep = 80;
    if (osName.size() <= nMax)
        return osName;
    return osName.substr(0, nKeep) + "... [" +
           std::to_string(osName.size() - 2 * nKeep) + " characters] ..." +
           osName.substr(osName.size() - nKeep);
}

/* GG:<operation>:<key>=<value>[:<key>=<value>...]:<input>[,<input>...]
 * After the operation, segments are consumed while they are key=value with a
 * key the operation knows (or "device"); the rest, colons included, is the
 * input list, so /vsizip/a.zip/b.tif or NETCDF:"f.nc":v work as inputs.
 * device=opencl:0:1 takes the numeric segments that follow as its indices. */
bool GGParseConnectionString(const char *pszName, GGSpec &oSpec)
{
    oSpec = GGSpec();
    if (pszName == nullptr || !GGIsConnectionString(pszName))
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: '%s' is not a GG: connection string",
                 pszName ? GGShortName(pszName).c_str() : "(null)");
        return false;
    }
    const std::string osName(pszName);
    const std::string osBody = osName.substr(3);
    const size_t nOpEnd = osBody.find(':');
    if (nOpEnd == std::string::npos || nOpEnd == 0)
    {
        CPLError(CE_Failure, CPLE_OpenFailed,
                 "GG: malformed connection string '%s' (expected "
                 "GG:<operation>:[<key>=<value>:...]<input>)",
                 GGShortName(pszName).c_str());
        return false;
    }
    oSpec.osOperation = osBody.substr(0, nOpEnd);
    if (!CheckOperation(oSpec.osOperation.c_str(), pszName))
        return false;

    size_t nPos = nOpEnd + 1;
    while (nPos < osBody.size())
    {
        const size_t nEnd = osBody.find(':', nPos);
        const std::string osSeg =
            osBody.substr(nPos, nEnd == std::string::npos ? std::string::npos : nEnd - nPos);
        const size_t nEq = osSeg.find('=');
        if (nEq == std::string::npos || nEq == 0)
            break;
        const std::string osKey = osSeg.substr(0, nEq);
        std::string osValue = osSeg.substr(nEq + 1);
        const bool bDevice = EQUAL(osKey.c_str(), "device");
        if (!bDevice && !GGIsOperationOption(oSpec.osOperation.c_str(), osKey.c_str()))
            break;
        nPos = nEnd == std::string::npos ? osBody.size() : nEnd + 1;
        if (bDevice)
        {
            const int nMaxIndices = STARTS_WITH_CI(osValue.c_str(), "opencl") ? 2
                                    : STARTS_WITH_CI(osValue.c_str(), "cuda") ? 1
                                                                              : 0;
            int nIndices = static_cast<int>(std::count(osValue.begin(), osValue.end(), ':'));
            while (nIndices < nMaxIndices && nPos < osBody.size())
            {
                const size_t nNext = osBody.find(':', nPos);
                if (nNext == std::string::npos)
                    break;  // the last segment is always the input
                const std::string osIndex = osBody.substr(nPos, nNext - nPos);
                if (!IsAllDigits(osIndex))
                    break;
                osValue += ":" + osIndex;
                nPos = nNext + 1;
                ++nIndices;
            }
            oSpec.osDevice = osValue;
        }
        else
        {
            // ortho, warp: t_srs=EPSG:32632 -- an authority name takes its
            // code segment with it (the last segment is always the input)
            const size_t nNext = nPos < osBody.size() ? osBody.find(':', nPos) : std::string::npos;
            const bool bSrsKey =
                EQUAL(oSpec.osOperation.c_str(), "ortho")
                    ? (EQUAL(osKey.c_str(), "t_srs") || EQUAL(osKey.c_str(), "dem_srs"))
                    : EQUAL(oSpec.osOperation.c_str(), "warp") &&
                          (EQUAL(osKey.c_str(), "t_srs") || EQUAL(osKey.c_str(), "s_srs") ||
                           EQUAL(osKey.c_str(), "te_srs"));
            if (bSrsKey && !osValue.empty() &&
                std::all_of(osValue.begin(), osValue.end(),
                            [](char c) { return isalpha(static_cast<unsigned char>(c)); }) &&
                nNext != std::string::npos)
            {
                osValue += ":" + osBody.substr(nPos, nNext - nPos);
                nPos = nNext + 1;
            }
            oSpec.aoOptions.emplace_back(osKey, osValue);
        }
    }
    const std::string osInputs = nPos < osBody.size() ? osBody.substr(nPos) : std::string();
    if (osInputs.empty())
    {
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: no input raster in connection string '%s'",
                 GGShortName(pszName).c_str());
        return false;
    }
    oSpec.aosInputs = SplitInputs(osInputs);
    for (const auto &osInput : oSpec.aosInputs)
        if (osInput.empty())
        {
            CPLError(CE_Failure, CPLE_OpenFailed, "GG: empty input name in connection string '%s'",
                     GGShortName(pszName).c_str());
            return false;
        }
    return true;
}

namespace
{
std::string NodeText(const CPLXMLNode *psNode)
{
    for (const CPLXMLNode *psChild = psNode->psChild; psChild; psChild = psChild->psNext)
        if (psChild->eType == CXT_Text)
            return psChild->pszValue;
    return std::string();
}

bool MalformedGGVRT(const char *pszFilename, const char *pszWhat)
{
    CPLError(CE_Failure, CPLE_OpenFailed, "GG: malformed .ggvrt '%s': %s", pszFilename, pszWhat);
    return false;
}

// The input path as written, resolved against the .ggvrt's folder when
// relativeToVRT="1".
bool ParseInput(const char *pszFilename, const CPLXMLNode *psInput, std::string &osPath)
{
    osPath = NodeText(psInput);
    if (osPath.empty())
        return MalformedGGVRT(pszFilename, "empty <Input>");
    bool bRelative = false;
    for (const CPLXMLNode *psAttr = psInput->psChild; psAttr; psAttr = psAttr->psNext)
    {
        if (psAttr->eType != CXT_Attribute)
            continue;
        if (!EQUAL(psAttr->pszValue, "relativeToVRT"))
            return MalformedGGVRT(
                pszFilename,
                CPLSPrintf("unknown attribute '%s' of <Input>", psAttr->pszValue));
        const std::string osValue = NodeText(psAttr);
        if (osValue != "0" && osValue != "1")
            return MalformedGGVRT(pszFilename, "relativeToVRT must be 0 or 1");
        bRelative = osValue == "1";
    }
    if (bRelative && CPLIsFilenameRelative(osPath.c_str()))
        osPath = CPLProjectRelativeFilename(CPLGetPath(pszFilename), osPath.c_str());
    return true;
}
}  // namespace

/* <GGVRTDataset operation="multilook">
 *   <Option name="looks">4x4</Option>
 *   <Input relativeToVRT="1">slc.tif</Input>
 * </GGVRTDataset>
 * Unknown elements or attributes are errors, so typos do not pass silently. */
bool GGParseGGVRT(const char *pszFilename, GGSpec &oSpec)
{
    oSpec = GGSpec();
    GByte *pabyText = nullptr;
    vsi_l_offset nSize = 0;
    if (!VSIIngestFile(nullptr, pszFilename, &pabyText, &nSize, GGVRT_MAX_BYTES))
    {
        CPLFree(pabyText);
        CPLError(CE_Failure, CPLE_OpenFailed, "GG: cannot read '%s' (or larger than %d bytes)",
                 pszFilename, static_cast<int>(GGVRT_MAX_BYTES));
        return false;
    }
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();
    CPLXMLNode *psTree = CPLParseXMLString(reinterpret_cast<const char *>(pabyText));
    const std::string osParseError = CPLGetLastErrorMsg();
    CPLPopErrorHandler();
    CPLFree(pabyText);
    if (!psTree)
        return MalformedGGVRT(pszFilename, osParseError.empty() ? "not XML" : osParseError.c_str());
    CPLXMLTreeCloser oTree(psTree);

    const CPLXMLNode *psRoot = CPLGetXMLNode(psTree, "=GGVRTDataset");
    if (!psRoot)
        return MalformedGGVRT(pszFilename, "no <GGVRTDataset> root element");
    for (const CPLXMLNode *psNode = psRoot->psChild; psNode; psNode = psNode->psNext)
    {
        if (psNode->eType == CXT_Attribute)
        {
            if (!EQUAL(psNode->pszValue, "operation"))
                return MalformedGGVRT(
                    pszFilename,
                    CPLSPrintf("unknown attribute '%s' of <GGVRTDataset>", psNode->pszValue));
            oSpec.osOperation = NodeText(psNode);
        }
        else if (psNode->eType == CXT_Element && EQUAL(psNode->pszValue, "Option"))
        {
            const char *pszKey = CPLGetXMLValue(psNode, "name", nullptr);
            if (!pszKey || !*pszKey)
                return MalformedGGVRT(pszFilename, "<Option> without a name attribute");
            if (EQUAL(pszKey, "device"))
                oSpec.osDevice = NodeText(psNode);
            else
                oSpec.aoOptions.emplace_back(pszKey, NodeText(psNode));
        }
        else if (psNode->eType == CXT_Element && EQUAL(psNode->pszValue, "Input"))
        {
            std::string osPath;
            if (!ParseInput(pszFilename, psNode, osPath))
                return false;
            oSpec.aosInputs.push_back(osPath);
        }
        else if (psNode->eType == CXT_Element)
        {
            return MalformedGGVRT(pszFilename,
                                  CPLSPrintf("unknown element <%s>", psNode->pszValue));
        }
        else if (psNode->eType == CXT_Text && !CPLString(psNode->pszValue).Trim().empty())
        {
            return MalformedGGVRT(pszFilename, "stray text in <GGVRTDataset>");
        }
    }
    if (oSpec.osOperation.empty())
        return MalformedGGVRT(pszFilename, "<GGVRTDataset> has no operation attribute");
    if (!CheckOperation(oSpec.osOperation.c_str(), pszFilename))
        return false;
    if (oSpec.aosInputs.empty())
        return MalformedGGVRT(pszFilename, "no <Input> element");
    return true;
}

/* ------------------------------------------------------------------------ */
/*                          C interface helpers                             */
/* ------------------------------------------------------------------------ */

CPLErr GGWriteGGVRT(const char *pszFilename, const gg_op *op, int nInputs,
                    const char *const *papszInputs)
{
    if (!op)
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGWriteGGVRT: bad arguments");
        return CE_Failure;
    }
    std::vector<const char *> apszKeys, apszValues;
    const auto aoOptions = GGOperationOptions(op);
    for (const auto &oKV : aoOptions)
    {
        apszKeys.push_back(oKV.first.c_str());
        apszValues.push_back(oKV.second.c_str());
    }
    return GGWriteGGVRTNamed(pszFilename, gg_op_name(op), static_cast<int>(apszKeys.size()),
                             apszKeys.data(), apszValues.data(), nInputs, papszInputs);
}

CPLErr GGWriteGGVRTNamed(const char *pszFilename, const char *pszOperation, int nOptions,
                         const char *const *papszKeys, const char *const *papszValues,
                         int nInputs, const char *const *papszInputs)
{
    if (!pszFilename || !pszOperation || nInputs < 1 || !papszInputs ||
        (nOptions > 0 && (!papszKeys || !papszValues)))
    {
        CPLError(CE_Failure, CPLE_AppDefined, "GG: GGWriteGGVRT: bad arguments");
        return CE_Failure;
    }
    char *pszCwd = CPLGetCurrentDir();
    const std::string osCwd = pszCwd ? pszCwd : ".";
    CPLFree(pszCwd);
    const std::string osVRTAbs = CPLIsFilenameRelative(pszFilename)
                                     ? CPLFormFilename(osCwd.c_str(), pszFilename, nullptr)
                                     : pszFilename;
    const std::string osVRTDir = CPLGetPath(osVRTAbs.c_str());

    CPLXMLNode *psRoot = CPLCreateXMLNode(nullptr, CXT_Element, "GGVRTDataset");
    CPLXMLTreeCloser oTree(psRoot);
    CPLAddXMLAttributeAndValue(psRoot, "operation", pszOperation);
    for (int i = 0; i < nOptions; ++i)
    {
        CPLXMLNode *psOption = CPLCreateXMLElementAndValue(psRoot, "Option", papszValues[i]);
        CPLAddXMLAttributeAndValue(psOption, "name", papszKeys[i]);
    }
    for (int i = 0; i < nInputs; ++i)
    {
        // A plain file named relative to the current directory is stored
        // relative to the .ggvrt when it lies below its folder, so the pair
        // can be moved together; anything else (/vsi*, connection strings,
        // absolute paths) is stored as given.
        std::string osInput = papszInputs[i];
        bool bRelative = false;
        VSIStatBufL sStat;
        if (!STARTS_WITH(osInput.c_str(), "/vsi") && CPLIsFilenameRelative(osInput.c_str()) &&
            VSIStatL(osInput.c_str(), &sStat) == 0 && VSI_ISREG(sStat.st_mode))
        {
            const std::string osAbs = CPLFormFilename(osCwd.c_str(), osInput.c_str(), nullptr);
            int bIsRelative = FALSE;
            const std::string osRel =
                CPLExtractRelativePath(osVRTDir.c_str(), osAbs.c_str(), &bIsRelative);
            if (bIsRelative)
            {
                osInput = osRel;
                bRelative = true;
            }
            else
            {
                osInput = osAbs;
            }
        }
        CPLXMLNode *psInput = CPLCreateXMLElementAndValue(psRoot, "Input", osInput.c_str());
        CPLAddXMLAttributeAndValue(psInput, "relativeToVRT", bRelative ? "1" : "0");
    }
    if (!CPLSerializeXMLTreeToFile(psRoot, pszFilename))
    {
        CPLError(CE_Failure, CPLE_FileIO, "GG: cannot write '%s'", pszFilename);
        return CE_Failure;
    }
    return CE_None;
}

std::string GGRequestedDevice(const std::string &osNamed, bool bWithAuto)
{
    std::string osDevice = osNamed.empty() ? std::string(CPLGetConfigOption("GG_DEVICE", "")) : osNamed;
    if (osDevice.empty() && bWithAuto)
        osDevice = "auto";
    return osDevice;
}
