/*
 * gg_processed.h -- processed datasets: a geogpu operation applied to input
 * rasters, computed lazily block by block on the device.  The gdal_*
 * utilities build them directly; the GG driver (frmts/gg) opens them from
 * GG: connection strings and .ggvrt files.
 *
 * MIT licence.
 */
#ifndef GG_PROCESSED_H
#define GG_PROCESSED_H

#include "gdal.h"
#include "geogpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a processed dataset: the op applied to the inputs.
 *   op          : options already set (gg_op_set), not yet prepared.
 *                 Ownership passes to the dataset, also on failure.
 *   inputs      : nInputs open raster datasets; with bOwnInputs they are
 *                 closed with the processed dataset (also on failure),
 *                 otherwise they must outlive it.
 *   device      : "cpu", "cuda[:N]", "opencl[:P[:D]]", "auto", or NULL
 *                 for the GG_DEVICE configuration option, else auto.
 * Returns NULL after a CPLError naming the problem (bad option for this
 * input, wrong number of inputs, unsupported data type...). */
GDALDatasetH GGCreateProcessedDataset(gg_op *op, int nInputs, GDALDatasetH *pahInputs,
                                      int bOwnInputs, const char *device);

/* Starts the device of a processed dataset now rather than on the first
 * block read, so that a utility fails before it creates any output and can
 * report the device it runs on. */
CPLErr GGDatasetStart(GDALDatasetH hDS);

/* Begins starting the device of a processed dataset on a thread of its own
 * and returns at once, so that reading the inputs (GGStripRead) overlaps
 * it.  The first call that needs the device (GGStripCompute, a block read,
 * GGDatasetStart, the statistics pass, GGDatasetDeviceName/Notice) waits
 * for it and reports a failure as starting the device there would.  A
 * no-op on a started dataset or another dataset. */
void GGDatasetStartInBackground(GDALDatasetH hDS);

/* The backend of a processed dataset, "cpu", "cuda" or "opencl": its
 * context's once started, else the one its device request names; "" when
 * only starting the device tells (auto) and for another dataset.  Never
 * waits for a start. */
const char *GGDatasetBackend(GDALDatasetH hDS);

/* The device a processed dataset was asked for (its device, else the
 * GG_DEVICE configuration option, else "auto"); "" for another dataset. */
const char *GGDatasetRequestedDevice(GDALDatasetH hDS);

/* Runs the whole-input statistics pass of ops that need one (radnorm) now,
 * reporting progress; a no-op for other ops.  Starts the device if needed.
 * Without this call the pass runs on the first block read of each band. */
CPLErr GGDatasetComputeStatistics(GDALDatasetH hDS, GDALProgressFunc pfnProgress,
                                  void *pProgressData);

/* A processed dataset's product strip by strip, for the pipeline
 * (gpu/pipeline.h): a strip is a row of the dataset's blocks, full width.
 * Reading its inputs (host) and computing it (device) are separate calls,
 * so one strip's read overlaps another's device work; the pixels are the
 * ones reading the dataset's blocks gives.  A strip read on one dataset
 * may be computed on another of the same product (the same op and
 * inputs, on another device).  Device work is serialised per dataset;
 * reads by different readers and computations may run at once. */
typedef struct GGStrip GGStrip;

/* Number of strips of a processed dataset (0 for another dataset). */
int GGDatasetStripCount(GDALDatasetH hDS);
/* Buffers of one strip, empty until read (NULL: out of memory). */
GGStrip *GGStripCreate(void);
void GGStripFree(GGStrip *psStrip);
/* Reads the inputs of strip iStrip into psStrip.  Calls with different
 * iReader (0, 1, ...) may run at once: each reader reads through its own
 * handles on the inputs. */
CPLErr GGStripRead(GDALDatasetH hDS, GGStrip *psStrip, int iStrip, int iReader);
/* Computes every output band of a read strip on hDS's device. */
CPLErr GGStripCompute(GDALDatasetH hDS, GGStrip *psStrip);
/* Output band iBand of a computed strip: rows [*pnY0, *pnY0 + *pnRows) of
 * the product, full width, in the band's data type; NULL if not computed. */
const void *GGStripBand(const GGStrip *psStrip, int iBand, int *pnY0, int *pnRows);

/* The op of a processed dataset (owned by it), or NULL for another dataset. */
const gg_op *GGDatasetOperation(GDALDatasetH hDS);

/* Device description ("cpu ... (2 threads)") and fallback notice (empty
 * when none) of a started processed dataset (they wait for a start begun
 * by GGDatasetStartInBackground); "" before GGDatasetStart. */
const char *GGDatasetDeviceName(GDALDatasetH hDS);
const char *GGDatasetDeviceNotice(GDALDatasetH hDS);

/* Writes the .ggvrt XML description of op applied to the inputs.  Relative
 * input names (relative to the current directory) are written relative to
 * the .ggvrt file's folder.  Returns CE_None or CE_Failure after a
 * CPLError. */
CPLErr GGWriteGGVRT(const char *pszFilename, const gg_op *op, int nInputs,
                    const char *const *papszInputs);
/* The same for an operation that is not an op of the registry (ortho,
 * warp): its name and its options as GG: keys and values. */
CPLErr GGWriteGGVRTNamed(const char *pszFilename, const char *pszOperation, int nOptions,
                         const char *const *papszKeys, const char *const *papszValues,
                         int nInputs, const char *const *papszInputs);

#ifdef __cplusplus
}

#include <string>
#include <vector>

class GDALDataset;

/* For the GG driver: a processed dataset opened from a GG: string
 * (bConnection: no .aux.xml beside it) or a .ggvrt file (its PAM loaded
 * from papszSiblings), described as pszName; owns op and the inputs, also
 * on failure (NULL after a CPLError). */
GDALDataset *GGOpenProcessedDataset(gg_op *op, std::vector<GDALDataset *> apoInputs,
                                    const std::string &osDevice, const char *pszName,
                                    bool bConnection, char **papszSiblings);

/* The op's own message for a failed call, else the status's. */
std::string GGOpMessage(const gg_op *op, gg_status eStatus);

/* Whether an operation takes nGiven input rasters (exactly N, or one or
 * more); false after a CPLError naming pszWhere (may be NULL). */
bool GGInputCountOK(const char *pszOperation, int nGiven, const char *pszWhere);
#endif
#endif /* GG_PROCESSED_H */
