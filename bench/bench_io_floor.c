/*
 * bench_io_floor.c -- the I/O a utility cannot avoid, through the same
 * pipeline it runs in (gpu/pipeline.h): every strip's source windows
 * read as the utility reads them (GGStripRead), and an output of the
 * product's size, bands and types written as it writes them (GTiff: one
 * file, or one per band when the bands differ in type; strips in order),
 * with no device work between.  A utility's time
 * over this floor is what its computing adds.
 *
 *   bench_io_floor <op> [key=value ...] <input> [<input> ...] <output.tif>
 *
 * e.g. bench_io_floor multilook looks=4x4 in.tif floor.tif.  Prints the
 * wall seconds of the read + write (bench_pipeline.sh times the whole
 * process, as it times the utilities).  MIT licence.
 */
#include "gpu/pipeline.h"
#include "gg_processed.h"

#include "cpl_conv.h"
#include "cpl_string.h"
#include "gdal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define SLOTS 5

typedef struct floor_job {
    GDALDatasetH product, outs[64];
    int per_band;
    GGStrip *strips[SLOTS];
    void *zeros; /* one output strip of the widest band type */
    int W, H, rows, nb;
} floor_job;

static int read_strip(void *user, int reader, int item, int slot)
{
    floor_job *j = user;
    return GGStripRead(j->product, j->strips[slot], item, reader) != CE_None;
}

static int write_strip(void *user, int item, int slot)
{
    (void)slot;
    floor_job *j = user;
    const int y = item * j->rows, h = y + j->rows > j->H ? j->H - y : j->rows;
    for (int b = 0; b < j->nb; b++) {
        GDALRasterBandH band = j->per_band ? GDALGetRasterBand(j->outs[b], 1)
                                           : GDALGetRasterBand(j->outs[0], b + 1);
        if (GDALRasterIO(band, GF_Write, 0, y, j->W, h, j->zeros, j->W, h,
                         GDALGetRasterDataType(band), 0, 0) != CE_None)
            return 1;
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s <op> [key=value ...] <input> [<input> ...] <output.tif>\n",
                argv[0]);
        return 2;
    }
    GDALAllRegister();
    gg_op *op = NULL;
    char err[512] = "";
    if (gg_op_new(argv[1], &op, err, sizeof err) != GG_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    int i = 2;
    for (; i < argc - 1 && strchr(argv[i], '='); i++) {
        char *key = CPLStrdup(argv[i]);
        char *value = strchr(key, '=');
        *value++ = 0;
        const gg_status st = gg_op_set(op, key, value);
        CPLFree(key);
        if (st != GG_OK) {
            fprintf(stderr, "%s: %s\n", argv[i], gg_op_last_error(op));
            gg_op_free(op);
            return 1;
        }
    }
    const int nin = argc - 1 - i;
    GDALDatasetH ins[64];
    if (nin < 1 || nin > 64) {
        fprintf(stderr, "1 to 64 inputs\n");
        gg_op_free(op);
        return 2;
    }
    for (int k = 0; k < nin; k++)
        if (!(ins[k] = GDALOpen(argv[i + k], GA_ReadOnly))) {
            gg_op_free(op);
            return 1;
        }
    const double t0 = now();
    floor_job j = {.product = GGCreateProcessedDataset(op, nin, ins, TRUE, "cpu")};
    if (!j.product)
        return 1;
    j.W = GDALGetRasterXSize(j.product);
    j.H = GDALGetRasterYSize(j.product);
    j.nb = GDALGetRasterCount(j.product);
    const int items = GGDatasetStripCount(j.product);
    int bx, by;
    GDALGetBlockSize(GDALGetRasterBand(j.product, 1), &bx, &by);
    j.rows = by;
    GDALDataType wide = GDT_Byte;
    const GDALDataType first = GDALGetRasterDataType(GDALGetRasterBand(j.product, 1));
    for (int b = 0; b < j.nb && b < 64; b++) {
        const GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(j.product, b + 1));
        if (GDALGetDataTypeSizeBytes(t) > GDALGetDataTypeSizeBytes(wide))
            wide = t;
        j.per_band |= t != first;
    }
    GDALDriverH gtiff = GDALGetDriverByName("GTiff");
    for (int f = 0; f < (j.per_band ? j.nb : 1); f++) {
        const GDALDataType t =
            GDALGetRasterDataType(GDALGetRasterBand(j.product, j.per_band ? f + 1 : 1));
        const char *name = j.per_band ? CPLSPrintf("%s_%d.tif", CPLGetBasename(argv[argc - 1]), f)
                                      : argv[argc - 1];
        if (j.per_band)
            name = CPLFormFilename(CPLGetPath(argv[argc - 1]), name, NULL);
        if (!(j.outs[f] = GDALCreate(gtiff, name, j.W, j.H, j.per_band ? 1 : j.nb, t, NULL)))
            return 1;
    }
    j.zeros = VSICalloc((size_t)j.W * (size_t)j.rows, (size_t)GDALGetDataTypeSizeBytes(wide));
    for (int s = 0; s < SLOTS; s++)
        j.strips[s] = GGStripCreate();
    if (!j.zeros || j.nb > 64)
        return 1;
    const gg_pipeline_job pj = {.user = &j, .items = items, .slots = SLOTS,
                                .readers = gg_pipeline_readers(),
                                .workers = 1, .read = read_strip, .write = write_strip};
    const int rc = gg_pipeline_run(&pj);
    for (int f = 0; f < (j.per_band ? j.nb : 1); f++)
        GDALClose(j.outs[f]);
    const double t1 = now();
    for (int s = 0; s < SLOTS; s++)
        GGStripFree(j.strips[s]);
    VSIFree(j.zeros);
    GDALClose(j.product);
    if (rc)
        return 1;
    printf("%.3f\n", t1 - t0);
    return 0;
}
