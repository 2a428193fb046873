/* fuzz_gg_spec.cpp -- libFuzzer target for the GG driver's parsers
 * (gdal/gg_spec.cpp): the GG: connection string and the .ggvrt XML.
 * First byte even: the rest is a connection string; odd: a .ggvrt file
 * (through /vsimem/, the way GDAL hands files to drivers). */
#include "gg_spec.h"

#include "cpl_error.h"
#include "cpl_vsi.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const bool quiet = (CPLSetErrorHandler(CPLQuietErrorHandler), true);
    (void)quiet;
    if (size < 1)
        return 0;
    GGSpec oSpec;
    if ((data[0] & 1) == 0)
    {
        const std::string os(reinterpret_cast<const char *>(data + 1), size - 1);
        GGParseConnectionString(os.c_str(), oSpec);
    }
    else
    {
        const char *pszName = "/vsimem/fuzz.ggvrt";
        VSILFILE *fp = VSIFileFromMemBuffer(pszName, const_cast<GByte *>(data + 1), size - 1, FALSE);
        if (fp)
        {
            VSIFCloseL(fp);
            GGParseGGVRT(pszName, oSpec);
            VSIUnlink(pszName);
        }
    }
    return 0;
}
