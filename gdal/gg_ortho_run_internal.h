/*
 * gg_ortho_run_internal.h -- what the parts of gdal_ortho's run share, and
 * private to them:
 *   gg_ortho_run.c       the command line, one scene's set-up and run;
 *   gg_ortho_batch.c     the device's start, the scenes of a batch on their
 *                        threads and their turns at the device;
 *   gg_ortho_pipe.c      a scene's pipeline: its state, its writer, and the
 *                        windowed pipeline (sources that do not fit);
 *   gg_ortho_resident.c  the resident-source pipeline (sources that fit).
 *
 * MIT licence.
 */
#ifndef GG_ORTHO_RUN_INTERNAL_H
#define GG_ORTHO_RUN_INTERNAL_H

#include "geogpu.h"
#include "gg_device_start.h"
#include "gg_ortho_direct.h"
#include "gg_ortho_scene.h"
#include "gpu/pipeline.h"

#include "cpl_error.h"
#include "gdal.h"

#include <pthread.h>
#include <stddef.h>

#define PROG "gdal_ortho"

/* ------------------------------------------------------------ a call */

typedef struct options {
    ggo_options g;     /* what the scene needs (shared with GG:ortho:) */
    const char *format, *outdir, *device;
    char **co;
} options;

/* One call's state.  GDAL errors reach ggo_keep_error through the error
 * handler every thread of the call pushes with the orun as its user data
 * (CPLPushErrorHandlerEx), so two calls in one process keep their own. */
typedef struct orun {
    pthread_mutex_t mu;     /* last_error: written by any of the call's threads */
    char last_error[2048];  /* the first GDAL failure message since cleared */
    char *err;              /* the caller's buffer for the first error line, or NULL */
    size_t errlen;
    const char *prog;       /* the program its error lines name (gdal_warp -rpc runs here) */
} orun;

/* The GDAL error handler of a call's threads (user data: the orun). */
void CPL_STDCALL ggo_keep_error(CPLErr cls, CPLErrorNum no, const char *msg);

/* A copy of the call's GDAL error, for a pipeline thread. */
const char *ggo_run_last_error(orun *run);

/* Reports the call's one error line (stderr, or the caller's buffer: the
 * first one); returns 1. */
int ggo_run_fail(orun *run, const char *scene, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------ a scene's pipeline */

typedef ggo_scene scene;
typedef ggo_block block;

/* Blocks in flight in the windowed pipeline (ggo_run_windowed); the
 * resident-source pipeline replaces it whenever the image fits. */
#define QDEPTH 3

/* Output bytes a resident-source scene may queue for its writer.  The
 * device is handed to the next scene once the last block has run, so with
 * room for most of a scene's output the writer (one file, one thread: about
 * 2.5 GB/s into the page cache) no longer holds the device: the next scene
 * reads and computes while this one's blocks are written (112 scenes of
 * 8192^2 on 4 H200s: 1.48 s against 2.03 s with a 3-block queue;
 * bench/RESULTS.md, session 16). */
#define QUEUE_BYTES ((size_t)256 << 20)

/* Who waits on the resident source's state (pipe_t.cv): the device
 * thread, the strip readers, the grid thread. */
enum { WAKE_DEV, WAKE_READ, WAKE_GRID, WAKE_ROLES };
#define WAKES(r) (1 << (r))
#define WAKE_ALL (WAKES(WAKE_ROLES) - 1)

typedef struct pipe {
    scene *sc;
    orun *run;
    gg_context *ctx;
    gg_context *pin;         /* host buffers page-locked through it; NULL: pageable */
    gg_ortho_session *sess;
    GDALDatasetH rds, wds;   /* reader's own source handle; the output */
    int nblocks, rows;
    int qdepth;              /* blocks run and not yet written, at most */
    block *blocks;
    int run_done;            /* blocks complete (resident pipeline) */
    int error;
    char msg[1024];
    double lon_ref;
    pthread_mutex_t mu;
    /* one condition per waiter (wake): a state change wakes only the
     * threads it concerns, not the eleven or so of a pipeline */
    pthread_cond_t cv[WAKE_ROLES];
    /* resident source (gg_ortho_resident.c) */
    int resident;
    int nstrips, strip_rows;
    struct strip *strips;
    int *queue, nqueue, qhead;  /* requested strips, in request order */
    int *ready, nready;         /* read, waiting for the upload */
    void **pool;                /* free staging buffers */
    int npool, nbuf;            /* free, and in all */
    /* blocks queued on the device (gg_ortho_session_queue_resident), the
     * device thread's alone: their kernels run while the one before
     * downloads and the next one's strips go up (112 scenes of 8192^2 on
     * one H200: 2.47 s against 2.67 s with each copy and kernel in turn;
     * bench/RESULTS.md, session 24) */
    void **inflight;            /* strips whose queued upload may not have landed */
    int ninflight;
    int queued[GG_ORTHO_QUEUED], nqueued, qfirst; /* block numbers, oldest first */
    /* the source feeder (ggo_resident_start .. ggo_resident_stop) */
    int grid_ahead;             /* blocks the grid thread runs ahead of the device */
    pthread_t tg, tr[64];
    int nr, have_tg, started;
    int grid_done, finished;
    ggo_direct *direct;         /* uncompressed GeoTIFF: pixels by pwrite, else NULL */
    ggo_direct *src_direct;     /* the source's rows by pread (strip readers), else NULL */
    const gg_pipeline_job *job_running; /* the output pipeline's job while it runs */
    size_t dst_bytes;           /* one output block, all bands */
    /* called once the device has run the last block (the writer may still
     * be writing): the next scene of a batch may then take the device */
    void (*device_done)(struct pipe *p);
    struct scene_job *job;
} pipe_t;

/* Wakes the waiters in mask (WAKES(role)...), mu held. */
void ggo_wake(pipe_t *p, int mask);

/* The pipeline's first failure (p->msg); wakes every waiter. */
void ggo_pipe_fail(pipe_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The writer stage (gg_pipeline_job.write) of either pipeline. */
int ggo_pipeline_write(void *user, int item, int slot);

/* Runs every block through the windowed pipeline.  0 on error (p->msg). */
int ggo_run_windowed(pipe_t *p);

/* Whether the whole source goes on the device (the resident pipeline). */
int ggo_resident_source(const scene *sc, gg_context *ctx);

/* Starts the resident source's feeder (strips, grid and reader threads);
 * needs no device.  0 on error (p->msg). */
int ggo_resident_start(pipe_t *p);

/* Stops and joins the feeder and frees what ggo_resident_start made. */
void ggo_resident_stop(pipe_t *p);

/* Runs every block through the resident pipeline (p->sess holds the
 * source, the feeder runs), then stops the feeder.  0 on error (p->msg). */
int ggo_run_resident(pipe_t *p);

/* ------------------------------------------ the device and the batch */

/* The device starts (on a GPU: driver, context, kernel modules, a good
 * part of a second) on its own thread while the first scene's GDAL setup
 * (RPCs, output grid, DEM, checks) runs; the scene waits for it only when
 * it needs it. */
typedef struct device_start {
    gg_device_start start; /* the context (the scenes of a batch wait for it at once) */
    pthread_mutex_t mu;
    /* a batch: the context's sibling, for the odd scenes, opened at the
     * first ggo_device_slots (under mu) */
    gg_context *ctx2;
    int batch, sibling_tried;
} device_start;

/* One scene of a call, on a thread of its own (gg_ortho_batch.c). */
typedef struct scene_job {
    orun run;                /* the scene's GDAL errors; err: the call's buffer */
    const options *o;
    device_start *dev;
    struct turns *t;
    int index;               /* turn number */
    const char *src;
    char dst[4096];
    pthread_t th;
    int started, passed;
    /* its output while in turn (turns): "src -> dst" shown, the progress
     * reached (shown once the scene is the oldest in turn) */
    int shown;
    double frac; /* -1: no progress yet */
    int rc;
} scene_job;

/* Returned by ggo_process_scene when the device cannot start: fatal; and
 * by the scenes after it, which then stop without a word. */
#define SCENE_NO_DEVICE 2
#define SCENE_STOPPED 3

/* A device_start that starts nothing: the caller's context, or none. */
void ggo_device_none(device_start *d, gg_context *given);

/* Starts the device on its own thread. */
void ggo_device_begin(device_start *d, const char *device);

/* The context, or NULL when the device could not start (d->err says why). */
gg_context *ggo_device_wait(device_start *d);

/* Scenes at the device at once: 1, or 2 with a sibling context. */
int ggo_device_slots(device_start *d);

/* The context of the scene with turn number index. */
gg_context *ggo_device_ctx(device_start *d, int index);

/* The device's notice, printed once per call (by the first scene in turn). */
void ggo_device_notice(scene_job *j);

/* Waits for the scene's turn at the device; 0 when the scenes stop. */
int ggo_take_turn(scene_job *j, int slots, int oldest);

/* Gives the device to the next scene (once); stop: the scenes after stop. */
void ggo_pass_turn(scene_job *j, int stop);

/* pipe_t.device_done: the session goes and the next scene takes the device. */
void ggo_release_device(pipe_t *p);

/* A scene's progress (0..1), printed in turn; j NULL: none. */
void ggo_scene_progress(scene_job *j, double frac);

/* Runs the nsrc scenes of pos (one, or a batch: -outdir) on their threads,
 * taking turns at the device; returns how many failed. */
int ggo_run_scenes(orun *run, const options *o, char **pos, int nsrc, device_start *dev);

/* One scene: set-up, its turn at the device, its output committed.  0, 1
 * on failure (reported), or SCENE_NO_DEVICE / SCENE_STOPPED. */
int ggo_process_scene(scene_job *job);

#endif
