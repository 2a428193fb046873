/*
 * gg_product_write.h -- writes a product to its file(s) through the
 * pipeline (gpu/pipeline.h): strips of rows are read on the host, computed
 * on the device(s) and written while the next ones are read and computed.
 * A processed dataset (gg_processed.h) is read and computed apart (its
 * GGStrip calls); any other dataset (the FMCW driver's products) computes
 * inside its reads.  Every file goes to a temporary name first and
 * all are put in place together, or none (gg_output.h).
 *
 * MIT licence.
 */
#ifndef GG_PRODUCT_WRITE_H
#define GG_PRODUCT_WRITE_H

#include "gdal.h"
#include "gg_output.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gg_product_write_options {
    GDALDriverH driver;       /* creates the output (GDAL_DCAP_CREATE) */
    char **creation_options;  /* -co */
    GDALDataType type;        /* GDT_Unknown: each band's own */
    /* One file per band, <dst stem>_<band description><ext> (products
     * whose bands differ in type); bands whose description starts with
     * band_prefix go into band_folder instead of dst's folder. */
    int per_band;
    const char *band_prefix, *band_folder;
    GDALProgressFunc progress; /* NULL: none */
    void *progress_arg;
    /* The output transaction the files join (gg_output.h): the caller
     * adds its other files and commits them all.  NULL: the call commits
     * its files itself. */
    gg_output_set *set;
    /* Pushed on each pipeline thread (CPLPushErrorHandlerEx), so that its
     * errors reach the caller's handler; NULL: GDAL's default. */
    CPLErrorHandler error_handler;
    void *error_handler_data;
} gg_product_write_options;

/* Whether gg_product_write can write with this driver (it creates files
 * and is not VRT); formats that only copy go through GDALTranslate. */
int gg_product_write_supported(GDALDriverH driver);

/* The final names of the files gg_product_write(..., dst, o) writes for the
 * product ds (dst alone unless o->per_band), so that a caller can check
 * them before anything is created.  CSLDestroy() them. */
char **gg_product_write_names(GDALDatasetH ds, const char *dst,
                              const gg_product_write_options *o);

/* Writes the product dss[0] (the same product on ndev devices: each strip
 * is computed on whichever device is free; other datasets than processed
 * ones take ndev 1) to dst.  0 on success (with o->set: the files written
 * under their temporary names, the first file the set's entry it had
 * when called); 1 after a CPLError, nothing written. */
int gg_product_write(GDALDatasetH *dss, int ndev, const char *dst,
                     const gg_product_write_options *o);

#ifdef __cplusplus
}
#endif
#endif /* GG_PRODUCT_WRITE_H */
