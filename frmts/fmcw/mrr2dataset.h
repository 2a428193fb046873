/*
 * mrr2dataset.h -- Metek MRR-2 raw spectra opened by the FMCW driver as
 * time x height products (mrr2dataset.cpp).  Internal to the driver.
 *
 * MIT licence.
 */
#ifndef GG_MRR2DATASET_H
#define GG_MRR2DATASET_H

class GDALDataset;

// products: "ZE,W,..." or NULL/"" for all; device as gg_context_create;
// average: seconds of the clock intervals whose records are averaged (<= 0:
// one row per record).  NULL after a one-line CPLError naming the file.
GDALDataset *MRR2DatasetCreate(const char *file, const char *products, const char *device,
                               double average);

#endif
