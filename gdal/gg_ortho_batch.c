/*
 * gg_ortho_batch.c -- the scenes of a gdal_ortho call (one, or a batch:
 * -outdir) and the device they share.  The device starts on its own thread
 * while the first scene sets up, and the scenes take turns at it.
 *
 * A scene's GDAL set-up (RPCs, gdalwarp's output grid, the DEM window, the
 * output file: 40 ms for an 8192^2 scene, a third of its time on an H200)
 * needs no device, so each scene of a batch runs on a thread of its own and
 * the next one sets up while the previous one's pipeline runs.  The device
 * part (context, session, pipeline) is taken in turn, in the scenes' order,
 * so one scene at a time has the device and the pipeline's buffers, and the
 * outputs are those of scenes run one after the other.  A scene's GDAL and
 * PROJ objects are made, used and closed by its own thread and its
 * pipeline's, as before; each scene keeps its own GDAL error state (an
 * orun of its own) so that one scene's failure is never taken for
 * another's.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_ortho_run_internal.h"
#include "gg_app.h" /* gg_app_notice */
#include "gg_input_files.h"
#include "gg_ortho_buffers.h"

#include "cpl_conv.h"
#include "cpl_string.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scenes setting up ahead of the one on the device.  One set-up (mostly
 * gdalwarp's output grid: 25-30 ms) takes longer than a scene's turn at
 * the device (12-14 ms on an H200 with the queued blocks), so with one
 * ahead the device waits for it: two made a Dask worker 16-20 % faster
 * (session 22), three another 13 % (112 scenes 2.25 -> 1.96 s; 4 GPUs
 * 0.88 / 0.90 s; bench/RESULTS.md, session 24; five were no faster,
 * sessions 25, 29 and 31).  Set-ups
 * run side by side on their own GDAL handles, transformers and PROJ
 * contexts (ThreadSanitizer: no race in five batches at 2 and 3 ahead,
 * session 22; the one report of session 16 was not seen again). */
#define AHEAD 3

/* Scenes of a batch whose device part is over and whose writer still
 * drains their queued blocks, beside the ones setting up and the one on the
 * device (each holds at most its queue; see QUEUE_BYTES).  Four were no
 * faster than two on one, two or four H200s (bench/RESULTS.md, sessions 22,
 * 25 and 29). */
#define DRAINING 2

/* Host buffers (gg_ortho_buffers.h) kept: at most what the scenes in
 * flight hold (their queues and strips). */
#define KEEP_BYTES (QUEUE_BYTES * (1 + DRAINING) + ((size_t)256 << 20))

/* Turns at the device: scenes take them and pass them in order, at most
 * `slots` at once (ggo_device_slots).  A scene's output lines (its "src ->
 * dst", progress, errors) appear while it is the oldest in turn, so that
 * two scenes at the device print one after the other. */
typedef struct turns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;   /* the oldest scene not passed: the turns before it are */
    int taken;  /* the next scene to take a turn */
    int slots;  /* scenes in turn at once; 0 until the first take */
    int stop;   /* the device did not start: the scenes after it stop */
    int notice_done;  /* the device's notice printed (by the first scene in turn) */
} turns;

/* ------------------------------------------------------------ the device */

void ggo_device_begin(device_start *d, const char *device)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    gg_device_start_begin(&d->start, device);
}

/* The context, or NULL when the device could not start (d->start.error
 * says why). */
gg_context *ggo_device_wait(device_start *d) { return gg_device_start_wait(&d->start); }

/* Scenes at the device at once: 2 with a sibling context (a batch, on a
 * GPU backend; opened once, by the first scene to ask; a caller's context
 * keeps its sibling for the next calls), else 1.  With 2 the odd scenes
 * run on the sibling, with queues of their own, so that a scene's session
 * and first uploads go on while the one before downloads its last blocks,
 * and the host steps of one scene's turn overlap the other's copies (two
 * H200s: 5-20 % faster than one scene at a time; bench/RESULTS.md,
 * session 29). */
int ggo_device_slots(device_start *d)
{
    gg_context *ctx = ggo_device_wait(d);
    if (!ctx)
        return 1;
    pthread_mutex_lock(&d->mu);
    if (!d->sibling_tried) {
        d->sibling_tried = 1;
        if (d->batch && strcmp(gg_context_backend(ctx), "cpu") &&
            gg_context_sibling(ctx, &d->ctx2) != GG_OK)
            d->ctx2 = NULL; /* one scene at a time, as before */
    }
    pthread_mutex_unlock(&d->mu);
    return d->ctx2 ? 2 : 1;
}

/* The context of the scene with turn number index. */
gg_context *ggo_device_ctx(device_start *d, int index)
{
    return ggo_device_slots(d) > 1 && index % 2 ? d->ctx2 : ggo_device_wait(d);
}

void ggo_device_none(device_start *d, gg_context *given)
{
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    gg_device_start_given(&d->start, given); /* nothing to start, nothing to destroy */
}

void ggo_device_notice(scene_job *j)
{
    if (!__atomic_exchange_n(&j->t->notice_done, 1, __ATOMIC_ACQ_REL))
        gg_app_notice(PROG, j->o->g.quiet, gg_context_notice(ggo_device_wait(j->dev)));
}

/* ------------------------------------------------------------ the turns */

/* Under t->mu, the scene the oldest in turn: its "src -> dst" line and its
 * progress so far, once. */
static void show_scene(scene_job *j)
{
    if (j->shown || j->t->next != j->index)
        return;
    j->shown = 1;
    if (j->o->g.quiet)
        return;
    if (j->o->outdir)
        fprintf(stderr, "%s -> %s\n", j->src, j->dst);
    if (j->frac >= 0)
        GDALTermProgress(0.0, NULL, NULL);
    if (j->frac > 0)
        GDALTermProgress(j->frac, NULL, NULL);
}

/* A scene's progress (0..1): printed while it is the oldest in turn, else
 * kept for when it is (GDALTermProgress prints the steps it missed). */
void ggo_scene_progress(scene_job *j, double frac)
{
    if (!j || j->o->g.quiet)
        return;
    pthread_mutex_lock(&j->t->mu);
    j->frac = frac;
    if (j->shown)
        GDALTermProgress(frac, NULL, NULL);
    else
        show_scene(j);
    pthread_mutex_unlock(&j->t->mu);
}

/* Waits for the scene's turn at the device (after the scene before it has
 * taken its own, with fewer than slots scenes in turn); 0 when the scenes
 * stop.  oldest: also waits until the turns before it are passed (a scene
 * that only reports a failure, or prints -v lines). */
int ggo_take_turn(scene_job *j, int slots, int oldest)
{
    turns *t = j->t;
    pthread_mutex_lock(&t->mu);
    if (!t->slots)
        t->slots = slots;
    while ((t->taken != j->index || j->index >= t->next + t->slots ||
            (oldest && t->next != j->index)) &&
           !t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    const int go = !t->stop;
    if (t->taken == j->index)
        t->taken = j->index + 1;
    if (go)
        show_scene(j);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return go;
}

/* Gives the device to the next scene (once), after the scenes before it
 * have (turns pass in order: the output lines stay in order, and a scene
 * of the same slot waits for the oldest anyway); stop: the scenes after
 * stop. */
void ggo_pass_turn(scene_job *j, int stop)
{
    if (j->passed)
        return;
    j->passed = 1;
    turns *t = j->t;
    pthread_mutex_lock(&t->mu);
    if (stop)
        t->stop = 1;
    while (t->next != j->index && !t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->next == j->index) {
        if (!t->stop) /* a scene that ran while another was the oldest */
            show_scene(j);
        t->next = j->index + 1;
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* The scene's device part is over (pipe_t.device_done): its session goes,
 * keeping its times, and the next scene takes the device while this one's
 * writer drains its last blocks. */
void ggo_release_device(pipe_t *p)
{
    if (p->sess) {
        gg_ortho_session_destroy(p->sess);
        p->sess = NULL;
    }
    ggo_pass_turn(p->job, 0);
}

static void *scene_main(void *arg)
{
    scene_job *j = arg;
    ggo_name_thread("gg-scene");
    CPLPushErrorHandlerEx(ggo_keep_error, &j->run);
    j->rc = ggo_process_scene(j);
    CPLPopErrorHandler();
    return NULL;
}

/* Waits for a scene's thread and counts its result. */
static void join_scene(scene_job *j, int *failed, int *no_device)
{
    if (j->started)
        pthread_join(j->th, NULL);
    j->started = 0;
    if (j->rc == SCENE_NO_DEVICE)
        *no_device = 1;
    else if (j->rc == 1)
        (*failed)++;
    pthread_mutex_destroy(&j->run.mu);
}

/* Every file any scene or the DEM reads (a VRT's sources, a GG: string's
 * inputs): no scene's output may replace one.  NULL when out of memory. */
static gg_input_files *scene_inputs(char **pos, int nsrc, const char *dem)
{
    gg_input_files *inputs = gg_input_files_new();
    for (int i = 0; inputs && i < nsrc + 1; i++) {
        const char *name = i < nsrc ? pos[i] : dem;
        if (!name)
            continue;
        CPLPushErrorHandler(CPLQuietErrorHandler); /* a bad source is reported by its scene */
        GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER, NULL, NULL, NULL);
        CPLPopErrorHandler();
        CPLErrorReset();
        if (ds ? gg_input_files_add_dataset(inputs, ds, name)
               : gg_input_files_add_path(inputs, name, name)) {
            gg_input_files_free(inputs);
            inputs = NULL;
        }
        if (ds)
            GDALClose(ds);
    }
    return inputs;
}

/* Waits until scene number index may start: at most AHEAD scenes setting
 * up beside the ones that have the device or wait for it (the turns
 * before t->next are passed). */
static void wait_for_room(turns *t, int index)
{
    pthread_mutex_lock(&t->mu);
    while (index - t->next > AHEAD + (t->slots > 1 ? t->slots - 1 : 0) && !t->stop)
        pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

/* Starts scene number index (src) on its own thread, or runs it here when
 * no thread starts (the next one then starts after it). */
static void start_scene(scene_job *j, const orun *run, const options *o, device_start *dev,
                        turns *t, int index, const char *src)
{
    pthread_mutex_init(&j->run.mu, NULL);
    j->run.err = run->err;
    j->run.errlen = run->errlen;
    j->run.prog = run->prog;
    j->o = o;
    j->dev = dev;
    j->t = t;
    j->index = index;
    j->frac = -1;
    j->src = src;
    j->started = pthread_create(&j->th, NULL, scene_main, j) == 0;
    if (!j->started)
        scene_main(j);
}

int ggo_run_scenes(orun *run, const options *o, char **pos, int nsrc, device_start *dev)
{
    int failed = 0, stopped = 0;
    dev->batch = nsrc > 1; /* read by the scenes (ggo_device_slots) */
    ggo_buffers_keep(KEEP_BYTES);
    turns t;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.mu, NULL);
    pthread_cond_init(&t.cv, NULL);
    scene_job *jobs = calloc((size_t)nsrc, sizeof *jobs);
    int started = 0, joined = 0;
    if (!jobs) {
        ggo_run_fail(run, NULL, "out of memory");
        failed = nsrc;
    }
    gg_input_files *inputs = scene_inputs(pos, nsrc, o->g.dem);
    if (!inputs) {
        ggo_run_fail(run, NULL, "out of memory");
        failed = nsrc;
    }
    for (int i = 0; jobs && inputs && i < nsrc && !stopped; i++) {
        scene_job *j = &jobs[started];
        if (o->outdir)
            snprintf(j->dst, sizeof j->dst, "%s",
                     CPLFormFilename(o->outdir, CPLGetBasename(pos[i]), "tif"));
        else
            snprintf(j->dst, sizeof j->dst, "%s", pos[1]);
        char why[2048];
        if (gg_input_files_check_output(inputs, "the destination", j->dst, why, sizeof why)) {
            ggo_run_fail(run, pos[i], "%s", why);
            failed++;
            continue;
        }
        /* at most AHEAD scenes setting up beside those in turn
         * (wait_for_room), and DRAINING more whose writers drain */
        wait_for_room(&t, started);
        while (joined < started - (AHEAD + DRAINING))
            join_scene(&jobs[joined++], &failed, &stopped);
        if (stopped)
            break;
        start_scene(j, run, o, dev, &t, started, pos[i]);
        started++;
    }
    while (joined < started)
        join_scene(&jobs[joined++], &failed, &stopped);
    gg_input_files_free(inputs);
    free(jobs);
    pthread_mutex_destroy(&t.mu);
    pthread_cond_destroy(&t.cv);
    return failed;
}
