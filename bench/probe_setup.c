/*
 * probe_setup.c -- what gdalwarp's output grid costs an ortho scene's set-up
 * (GDALSuggestedWarpOutput2 through the RPC + DEM transformer), alone and
 * with P processes doing it at once, and with the transformer's large calls
 * (the edge and grid samples) split over T threads, each with its own
 * transformer.
 *
 * Why: the set-up runs on one thread per scene and bounds an ortho batch
 * (bench/RESULTS.md, session 21); with four workers it runs about 20 %
 * slower.  Is that the other processes' set-ups (the CPU) or the batch's
 * reads and writes (the memory)?  And what does splitting the samples give?
 *
 *     probe_setup scene dem t_srs reps procs [threads]
 *
 * Prints per process the median seconds of a set-up (transformer created,
 * grid suggested, transformer destroyed) and checks that the split grid is
 * the one GDAL suggests unsplit, to the bit.  PROBE_DEM_VSIMEM=1 hands GDAL
 * the DEM from memory (the file's bytes in /vsimem): is the set-up file
 * reads or arithmetic?
 *
 * MIT licence.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdal.h>
#include <cpl_minixml.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <gdal_alg.h>
#include <ogr_srs_api.h>

#include "probe_procs.h"


#define MAX_T 32
typedef struct {
    void *tr[MAX_T]; /* one transformer per thread; [0] is the caller's */
    int threads;
    long calls, points;
} split_tr;

typedef struct {
    void *tr;
    int inv, n;
    double *x, *y, *z;
    int *ok, ret;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    j->ret = GDALGenImgProjTransform(j->tr, j->inv, j->n, j->x, j->y, j->z, j->ok);
    return NULL;
}

/* a thread's own transformer, made from the caller's serialized one */
typedef struct {
    CPLXMLNode *xml;
    void *tr;
} clone_job;

static void *clone_one(void *arg)
{
    clone_job *c = arg;
    GDALTransformerFunc fn = NULL;
    c->tr = NULL;
    if (GDALDeserializeTransformer(c->xml, &fn, &c->tr) != CE_None || fn != GDALGenImgProjTransform)
        c->tr = NULL;
    return NULL;
}

static int split_transform(void *arg, int inv, int n, double *x, double *y, double *z, int *ok)
{
    split_tr *s = arg;
    s->calls++;
    s->points += n;
    if (s->threads < 2 || n < 64)
        return GDALGenImgProjTransform(s->tr[0], inv, n, x, y, z, ok);
    pthread_t th[MAX_T];
    job jb[MAX_T];
    for (int i = 0; i < s->threads; i++) {
        const int a = (int)((long)n * i / s->threads), b = (int)((long)n * (i + 1) / s->threads);
        jb[i] = (job){s->tr[i], inv, b - a, x + a, y + a, z + a, ok + a, 0};
        if (i > 0)
            pthread_create(&th[i], NULL, run_job, &jb[i]);
    }
    run_job(&jb[0]);
    int ret = jb[0].ret;
    for (int i = 1; i < s->threads; i++) {
        pthread_join(th[i], NULL);
        ret = ret && jb[i].ret;
    }
    return ret;
}


typedef struct {
    const char *scene, *dem, *t_srs;
    int reps, threads;
} setup;

static int one_process(int rank, void *arg, int go_fd, int out_fd)
{
    const setup *su = arg;
    const char *scene = su->scene, *dem = su->dem, *t_srs = su->t_srs;
    const int reps = su->reps, threads = su->threads;
    GDALAllRegister();
    /* PROBE_DEM_VSIMEM=1: the DEM file's bytes in /vsimem, opened from memory */
    if (getenv("PROBE_DEM_VSIMEM") && atoi(getenv("PROBE_DEM_VSIMEM"))) {
        vsi_l_offset n = 0;
        GByte *bytes = NULL;
        if (!VSIIngestFile(NULL, dem, &bytes, &n, -1))
            return 1;
        VSIFCloseL(VSIFileFromMemBuffer("/vsimem/probe_dem.tif", bytes, n, TRUE));
        dem = "/vsimem/probe_dem.tif";
    }
    GDALDatasetH src = GDALOpen(scene, GA_ReadOnly);
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    char *wkt = NULL;
    if (!src || OSRSetFromUserInput(srs, t_srs) != OGRERR_NONE || OSRExportToWkt(srs, &wkt))
        return 1;
    char **to = NULL;
    to = CSLSetNameValue(to, "METHOD", "RPC");
    to = CSLSetNameValue(to, "RPC_DEM", dem);
    to = CSLSetNameValue(to, "RPC_DEMINTERPOLATION", "bilinear");
    to = CSLSetNameValue(to, "DST_SRS", wkt);
    /* the reference: GDAL's own, unsplit */
    void *tr0 = GDALCreateGenImgProjTransformer2(src, NULL, to);
    double gt0[6], ext0[4];
    int w0 = 0, h0 = 0;
    if (!tr0 || GDALSuggestedWarpOutput2(src, GDALGenImgProjTransform, tr0, gt0, &w0, &h0, ext0,
                                         0) != CE_None)
        return 1;
    GDALDestroyGenImgProjTransformer(tr0);
    char c;
    if (read(go_fd, &c, 1) != 1)
        return 1;
    /* PROBE_SERIAL=1: every transformer made here, one after another */
    const int serial = getenv("PROBE_SERIAL") && atoi(getenv("PROBE_SERIAL"));
    double *t = calloc((size_t)reps, sizeof *t), *tc = calloc((size_t)reps, sizeof *tc);
    int same = 1;
    split_tr s = {0};
    for (int r = 0; r < reps; r++) {
        const double a = probe_now();
        s.threads = threads;
        s.tr[0] = GDALCreateGenImgProjTransformer2(src, NULL, to);
        for (int i = 1; i < threads && serial; i++)
            s.tr[i] = GDALCreateGenImgProjTransformer2(src, NULL, to);
        if (threads > 1 && !serial) { /* the others cloned on their own threads */
            CPLXMLNode *xml = GDALSerializeTransformer(GDALGenImgProjTransform, s.tr[0]);
            pthread_t th[MAX_T];
            clone_job cj[MAX_T];
            for (int i = 1; i < threads; i++) {
                cj[i] = (clone_job){xml, NULL};
                pthread_create(&th[i], NULL, clone_one, &cj[i]);
            }
            for (int i = 1; i < threads; i++) {
                pthread_join(th[i], NULL);
                s.tr[i] = cj[i].tr;
                if (!s.tr[i])
                    return 1;
            }
            CPLDestroyXMLNode(xml);
        }
        tc[r] = probe_now() - a;
        double gt[6], ext[4];
        int w = 0, h = 0;
        s.calls = s.points = 0;
        const CPLErr e = GDALSuggestedWarpOutput2(src, split_transform, &s, gt, &w, &h, ext, 0);
        for (int i = 0; i < threads; i++)
            GDALDestroyGenImgProjTransformer(s.tr[i]);
        t[r] = probe_now() - a;
        same &= e == CE_None && w == w0 && h == h0 && !memcmp(gt, gt0, sizeof gt) &&
                !memcmp(ext, ext0, sizeof ext);
    }
    qsort(t, (size_t)reps, sizeof *t, probe_cmp_double);
    qsort(tc, (size_t)reps, sizeof *tc, probe_cmp_double);
    char line[320];
    const int len = snprintf(line, sizeof line,
                             "  rank %d: median %.4f s a set-up (min %.4f, max %.4f), of which "
                             "transformers %.4f; %ld calls, "
                             "%ld points; grid %dx%d %s\n",
                             rank, t[reps / 2], t[0], t[reps - 1], tc[reps / 2], s.calls, s.points, w0, h0,
                             same ? "the same as GDAL's" : "DIFFERENT FROM GDAL'S");
    if (write(out_fd, line, (size_t)len) != len)
        return 1;
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: probe_setup scene dem t_srs reps procs [threads]\n");
        return 2;
    }
    const int reps = atoi(argv[4]), procs = atoi(argv[5]);
    const int threads = argc > 6 ? atoi(argv[6]) : 1;
    if (reps < 1 || procs < 1 || procs > 64 || threads < 1 || threads > MAX_T) {
        fprintf(stderr, "probe_setup: bad arguments\n");
        return 2;
    }
    setup su = {argv[1], argv[2], argv[3], reps, threads};
    double wall = 0;
    char text[16384];
    const int bad = probe_run_procs(procs, 1, one_process, &su, &wall, text, sizeof text);
    printf("set-up x %d, %d processes, threads %d: %.3f s%s\n%s", reps, procs, threads, wall,
           bad ? " (A PROCESS FAILED)" : "", text);
    return bad;
}
