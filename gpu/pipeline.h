/*
 * pipeline.h -- the one read -> device -> write pipeline (pipeline.c):
 * every utility's strips, ortho scenes and batches, the statistics pass,
 * and the GMTSAR mode's SLC lines.  It lives with the runtime, below the
 * GDAL layer, because the compute library's own file reader (the GMTSAR
 * mode reads raw SLC files) uses it too; private (not in
 * include/geogpu.h), exported for the GDAL layer (GG_API).
 *
 * A job is a sequence of items (strips of output rows, blocks of an
 * orthoimage, pieces of SLC lines); each item is read on the host, computed on a device and
 * written, and the three stages of different items overlap: while the
 * device computes item k, reader threads fill item k+1.. and the writer
 * writes item k-1.  Items take turns in a ring of `slots` host buffers
 * (item k uses slot k % slots), which bounds memory: item k is read only
 * once item k - slots is written.
 *
 * The pipeline owns the threads and the ordering, nothing else: the caller
 * owns the buffers (one set per slot) and does the work in its callbacks.
 * Writes happen in item order on one thread (files grow front to back);
 * with several devices (workers), item k is computed by worker
 * k % workers (the same bits run after run on devices of different
 * kinds).
 *
 * A callback returns 0 on success; nonzero stops the pipeline (the
 * callback has reported why).
 *
 * A job that queues work on a device (`deferred`) has compute(k) return
 * once item k is queued, while earlier items still run: the job declares
 * each item complete, in its worker's item order, with
 * gg_pipeline_computed, and the writer writes an item only then; `idle`
 * lets such a worker finish queued items (or feed its device) instead of
 * sleeping while its next item is not ready.  MIT licence.
 */
#ifndef GG_PIPELINE_H
#define GG_PIPELINE_H

#include "geogpu.h" /* GG_API */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gg_pipeline_job {
    void *user;   /* handed to every callback */
    int items;    /* how many items */
    int slots;    /* host buffer sets (>= 1); 2-3 give full overlap */
    int readers;  /* reader threads (>= 1) */
    int workers;  /* devices (>= 1): worker 0 runs on the calling thread */
    /* Fills slot with item's input (reader threads; several items are read
     * at once when readers > 1).  NULL: nothing to read (the job feeds its
     * device itself); item k goes to compute once item k - slots is
     * written, and no reader thread starts. */
    int (*read)(void *user, int reader, int item, int slot);
    /* The device part of item (NULL: none, the read produced the output). */
    int (*compute)(void *user, int worker, int item, int slot);
    /* Writes item's output from slot (one thread, items in order).  NULL:
     * nothing to write (compute used up the slot's contents). */
    int (*write)(void *user, int item, int slot);
    /* After each write: items written so far; 0 stops the job (the
     * callback has reported why).  NULL: none. */
    int (*progress)(void *user, int written, int items);
    /* Called at the start and end of each thread the pipeline starts (to
     * push and pop a thread's error handler); NULL: none. */
    void (*thread_begin)(void *user);
    void (*thread_end)(void *user);
    /* 0: an item is computed when its compute returns.  1: when the job
     * says so (gg_pipeline_computed), which it may do later, from a later
     * compute or idle of the same worker; a worker's last compute must
     * leave none of its items undeclared (the job stops otherwise).  A
     * worker that may leave n items undeclared when its compute returns
     * needs slots >= workers * (n + 1), or an idle that declares them:
     * else every worker may wait for a slot while the writer waits for
     * one of their items. */
    int deferred;
    /* Called by a worker, instead of sleeping, while its next item is not
     * ready (not read, or its slot not yet written): the job's own device
     * work (complete a queued item, upload).  1: it did some, it is called
     * again; 0: none, the worker sleeps until the item is ready; negative:
     * it failed (the job stops).  NULL: none. */
    int (*idle)(void *user, int worker);
} gg_pipeline_job;

/* Runs the job to its end: 0 when every item was written, 1 when a
 * callback failed or progress stopped it (nothing more is read, computed
 * or written after that; the threads are joined before the return), -1
 * when the pipeline could not start (memory, threads: the caller reports
 * it).  Plain C and POSIX threads: no GDAL here. */
GG_API int gg_pipeline_run(const gg_pipeline_job *job);

/* A deferred job's item is complete: the writer may write it.  Called on
 * a worker's thread, from its compute or idle callback. */
GG_API void gg_pipeline_computed(int item);

/* Work for the job's idle has come from a thread of the job's own (a
 * feeder of its device): a worker sleeping while its next item is not
 * ready calls idle again.  Nothing when the job is not running. */
GG_API void gg_pipeline_wake(const gg_pipeline_job *job);

/* Reader threads for a job on this host: 1 with fewer than 4 processors,
 * 2 with fewer than 8, else 3 (each may read with several threads of its
 * own: the stack reads of gg_processed.h). */
GG_API int gg_pipeline_readers(void);

#ifdef __cplusplus
}
#endif
#endif /* GG_PIPELINE_H */
