/*
 * gg_spec.h -- what a GG dataset is made of (operation, options, inputs,
 * device) and the two ways to write it down: the GG: connection string and
 * the .ggvrt XML file.
 *
 * MIT licence.
 */
#ifndef GG_SPEC_H
#define GG_SPEC_H

#include "geogpu.h"

#include <string>
#include <utility>
#include <vector>

struct GGSpec
{
    std::string osOperation;
    std::vector<std::pair<std::string, std::string>> aoOptions;  // op keys only
    std::vector<std::string> aosInputs;
    std::string osDevice;  // "" = not given
};

// "GG:" prefix, case-insensitive.
bool GGIsConnectionString(const char *pszName);

// Starts (after a BOM, blanks and an optional XML declaration) with
// <GGVRTDataset.  Needs only the first bytes of the file.
bool GGLooksLikeGGVRT(const char *pszHeader, int nHeaderBytes);

// Both parsers emit one CPLError naming the problem and return false on
// malformed input.
bool GGParseConnectionString(const char *pszName, GGSpec &oSpec);
bool GGParseGGVRT(const char *pszFilename, GGSpec &oSpec);

// Whether key is an option of the operation (per gg_op_options).
bool GGIsOperationOption(const char *pszOperation, const char *pszKey);

// The op's options as (key, value) pairs, from gg_op_options_string.
std::vector<std::pair<std::string, std::string>> GGOperationOptions(const gg_op *op);

// A name as messages show it: whole up to 200 characters, else its first
// and last 80 with the number left out between them ("GG:rotate:...
// [119964 characters] ...:slc.tif"), so that a deeply nested GG: string
// gives a one-line message, not a megabyte.
std::string GGShortName(const std::string &osName);

// The device a dataset asks for: the one it names, else the GG_DEVICE
// configuration option, else "" (bWithAuto: "auto").
std::string GGRequestedDevice(const std::string &osNamed, bool bWithAuto);

#endif /* GG_SPEC_H */
