/*
 * fault.h -- test-only fault injection (fault.c), private: not installed,
 * not part of include/geogpu.h.  Exported from libgeogpu all the same
 * (GG_API), because the GDAL layer (libgeogpu_gdal) and the utilities call
 * it across the shared-library boundary: the GDAL layer reaches this header
 * through a PRIVATE include directory (the repository root: "gpu/fault.h"),
 * gdal_xcorr by its relative path.
 *
 * MIT licence.
 */
#ifndef GG_FAULT_H
#define GG_FAULT_H

#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test-only fault injection: with GG_FAULT="<kind>:<N>[,...]" in the
 * environment, returns 1 on the N-th call (process-wide) of that kind
 * (alloc, launch, transfer, fft, read, write, commit, hostalloc), 0
 * otherwise.  The
 * library checks alloc/launch/transfer/fft itself; the GDAL layer calls it
 * before reading an input block ("read"), writing an output block
 * ("write"), putting a file of an output transaction in place ("commit",
 * gdal/gg_output.c) and allocating host memory in the ortho scene set-up
 * ("hostalloc", gdal/gg_ortho_scene.c). */
GG_API int gg_fault_point(const char *kind);

#ifdef __cplusplus
}
#endif

#endif
