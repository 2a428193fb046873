/*
 * gg_output.c -- the output transaction (gg_output.h): temporary names,
 * one commit step for every file of a run under folder locks, the old
 * files kept aside until the new ones are all in place, and removal of the
 * temporaries on failure and on SIGINT/SIGTERM/SIGHUP.
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_output.h"
#include "gpu/fault.h"

#include "cpl_conv.h"
#include "cpl_error.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------ signals and temporaries */

/* The folders that hold temporaries, for the signal handler.  It may run at
 * any moment on any thread, so it reads fixed buffers and a count per slot
 * and calls only system calls (open, getdents64, unlinkat: all
 * async-signal-safe).  Every temporary of this process is named
 * ".<stem>.tmp<pid>-<n>...", so the handler removes, in these folders, the
 * hidden files that carry ".tmp<pid>-": whatever a driver made beside the
 * temporary is found too, and a committed or discarded one is no longer
 * there. */
enum { FOLDERS = 64 };
static char folder_path[FOLDERS][PATH_MAX];
static volatile sig_atomic_t folder_refs[FOLDERS];
static pthread_mutex_t folders_lock = PTHREAD_MUTEX_INITIALIZER;

/* Commit steps in progress, whether a signal is ending the process, and
 * that signal while a commit step finishes (atomics: read by the handler). */
static int commits, dying, pending;

static int track(const char *dir)
{
    if (strlen(dir) >= PATH_MAX)
        return -1; /* too long to track: removed on failure only */
    int slot = -1;
    pthread_mutex_lock(&folders_lock);
    for (int i = 0; i < FOLDERS && slot < 0; i++)
        if (folder_refs[i] > 0 && !strcmp(folder_path[i], dir))
            slot = i;
    for (int i = 0; i < FOLDERS && slot < 0; i++)
        if (folder_refs[i] == 0) {
            strcpy(folder_path[i], dir);
            slot = i;
        }
    if (slot >= 0)
        folder_refs[slot]++;
    pthread_mutex_unlock(&folders_lock);
    return slot;
}

static void untrack(int slot)
{
    if (slot < 0)
        return;
    pthread_mutex_lock(&folders_lock);
    folder_refs[slot]--;
    pthread_mutex_unlock(&folders_lock);
}

/* The getdents64 record (not in glibc's headers). */
struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int carries_tag(const char *name, const char *tag, size_t taglen)
{
    if (name[0] != '.')
        return 0;
    for (const char *p = name + 1; *p; p++)
        if (*p == tag[0] && !strncmp(p, tag, taglen))
            return 1;
    return 0;
}

/* Async-signal-safe: the tracked folders' temporaries of this process. */
static void remove_temporaries(void)
{
    char tag[32] = ".tmp", digits[24];
    int nd = 0;
    for (long pid = (long)getpid(); pid > 0 && nd < 20; pid /= 10)
        digits[nd++] = (char)('0' + pid % 10);
    size_t taglen = 4;
    while (nd > 0)
        tag[taglen++] = digits[--nd];
    tag[taglen++] = '-';
    for (int i = 0; i < FOLDERS; i++) {
        if (folder_refs[i] <= 0)
            continue;
        const int fd = open(folder_path[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* entries removed while the folder is listed may hide others from
         * that listing: list again until a pass removes nothing */
        for (int pass = 0, removed = 1; removed && pass < 4; pass++) {
            removed = 0;
            lseek(fd, 0, SEEK_SET);
            char buf[4096] __attribute__((aligned(8)));
            long n;
            while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
                for (long off = 0; off < n;) {
                    const struct linux_dirent64 *d = (const void *)(buf + off);
                    if (carries_tag(d->d_name, tag, taglen) && unlinkat(fd, d->d_name, 0) == 0)
                        removed = 1;
                    off += d->d_reclen;
                }
        }
        close(fd);
    }
}

static void end_process(int sig)
{
    remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_signal(int sig)
{
    __atomic_store_n(&dying, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&commits, __ATOMIC_SEQ_CST) > 0) {
        /* a commit step is moving files: it finishes (or rolls back)
         * first, so that the destinations hold one whole set */
        __atomic_store_n(&pending, sig, __ATOMIC_SEQ_CST);
        return;
    }
    end_process(sig);
}

void gg_output_catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        struct sigaction old;
        if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue; /* ignored (nohup) or someone else's handler: keep it */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART; /* a deferred signal must not break the commit's calls */
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[k], &sa, NULL);
    }
}

static void end_commit(void)
{
    if (__atomic_sub_fetch(&commits, 1, __ATOMIC_SEQ_CST) == 0) {
        const int sig = __atomic_load_n(&pending, __ATOMIC_SEQ_CST);
        if (sig)
            end_process(sig);
    }
}

/* Enters a commit step; never returns when a signal is already ending the
 * process (the handler, or the commit step that holds its signal, ends
 * it). */
static void begin_commit(void)
{
    __atomic_add_fetch(&commits, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&dying, __ATOMIC_SEQ_CST))
        return;
    end_commit();
    for (;;)
        pause();
}

/* ------------------------------------------------------------- the set */

typedef struct entry {
    char *dst;  /* as given */
    char *dir;  /* dst's folder; "." when it names none */
    char *tmp;  /* the temporary, in dir */
    char *base; /* the temporary's leaf without its extension: ".<stem>.tmp<pid>-<n>" */
    int slot;   /* tracked folder, -1: none */
    int open;   /* neither committed nor discarded */
} entry;

struct gg_output_set {
    entry *e;
    int n;
};

static int is_vsi(const char *path)
{
    return !strncmp(path, "/vsi", 4);
}

gg_output_set *gg_output_set_new(void)
{
    return VSICalloc(1, sizeof(gg_output_set));
}

const char *gg_output_set_add(gg_output_set *set, const char *dst, const char *ext)
{
    static int counter;
    entry *grown = VSIRealloc(set->e, (size_t)(set->n + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    set->e = grown;
    entry *e = &set->e[set->n];
    memset(e, 0, sizeof *e);
    const int n = __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST);
    const char *path = CPLGetPath(dst);
    e->dst = CPLStrdup(dst);
    e->dir = CPLStrdup(*path ? path : ".");
    e->base = CPLStrdup(CPLSPrintf(".%s.tmp%ld-%d", CPLGetBasename(dst), (long)getpid(), n));
    if (!ext)
        ext = CPLGetExtension(dst);
    const char *leaf = *ext ? CPLSPrintf("%s.%s", e->base, ext) : e->base;
    e->tmp = CPLStrdup(*path ? CPLFormFilename(path, leaf, NULL) : leaf);
    e->slot = is_vsi(dst) ? -1 : track(e->dir);
    e->open = 1;
    set->n++;
    return e->tmp;
}

int gg_output_set_count(const gg_output_set *set)
{
    return set ? set->n : 0;
}

const char *gg_output_set_temporary(const gg_output_set *set, int i)
{
    return set && i >= 0 && i < set->n ? set->e[i].tmp : NULL;
}

static int of_base(const char *name, const char *base)
{
    const size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == 0 || name[n] == '.');
}

/* The leaves in e's folder that belong to its temporary. */
static char **temporary_leaves(const entry *e)
{
    char **leaves = NULL;
    DIR *d = opendir(e->dir);
    for (struct dirent *de; d && (de = readdir(d));)
        if (of_base(de->d_name, e->base))
            leaves = CSLAddString(leaves, de->d_name);
    if (d)
        closedir(d);
    return leaves;
}

static char *in_dir(const entry *e, const char *leaf)
{
    const char *path = CPLGetPath(e->dst);
    return CPLStrdup(*path ? CPLFormFilename(path, leaf, NULL) : leaf);
}

static void discard(entry *e)
{
    if (!e->open)
        return;
    if (is_vsi(e->dst)) {
        VSIUnlink(e->tmp);
        VSIUnlink(CPLSPrintf("%s.aux.xml", e->tmp));
    } else {
        char **leaves = temporary_leaves(e);
        for (char **l = leaves; l && *l; l++) {
            char *p = in_dir(e, *l);
            unlink(p);
            CPLFree(p);
        }
        CSLDestroy(leaves);
    }
    untrack(e->slot);
    e->open = 0;
}

void gg_output_set_free(gg_output_set *set)
{
    if (!set)
        return;
    for (int i = 0; i < set->n; i++) {
        discard(&set->e[i]);
        CPLFree(set->e[i].dst);
        CPLFree(set->e[i].dir);
        CPLFree(set->e[i].tmp);
        CPLFree(set->e[i].base);
    }
    VSIFree(set->e);
    VSIFree(set);
}

static int lexists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int find(char **list, const char *s)
{
    for (int i = 0; list && list[i]; i++)
        if (!strcmp(list[i], s))
            return i;
    return -1;
}

/* Adds to *old the files at e's destination that the commit replaces or
 * must remove: dst, the new files' final names that exist, and the side
 * files of the existing dataset (an old .aux.xml or .tfw would otherwise
 * describe the new raster): those its driver lists in dst's folder named
 * after dst ("o.tif.aux.xml", "o.hdr").  A VRT or GG dataset lists its
 * sources too ("o.vrt" over "o.tif"), so for those only names that
 * extend dst's whole name ("o.vrt.aux.xml") count, and the dataset is not
 * opened (a GG one would set up its product). */
static void old_files(const entry *e, char **finals, char ***old)
{
    if (lexists(e->dst) && find(*old, e->dst) < 0)
        *old = CSLAddString(*old, e->dst);
    for (char **f = finals; f && *f; f++)
        if (lexists(*f) && find(*old, *f) < 0)
            *old = CSLAddString(*old, *f);
    struct stat st;
    if (stat(e->dst, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDriverH drv = GDALIdentifyDriverEx(e->dst, GDAL_OF_RASTER | GDAL_OF_VECTOR, NULL, NULL);
    const char *name = drv ? GDALGetDriverShortName(drv) : "";
    const int refers = EQUAL(name, "VRT") || EQUAL(name, "GG");
    char **list = NULL;
    if (drv && !refers) {
        GDALDatasetH ds = GDALOpenEx(e->dst, GDAL_OF_RASTER | GDAL_OF_VECTOR | GDAL_OF_READONLY,
                                     NULL, NULL, NULL);
        list = ds ? GDALGetFileList(ds) : NULL;
        if (ds)
            GDALClose(ds);
    }
    CPLPopErrorHandler();
    char *path = CPLStrdup(CPLGetPath(e->dst)), *leaf = CPLStrdup(CPLGetFilename(e->dst));
    char *leaf_dot = CPLStrdup(CPLSPrintf("%s.", leaf));
    char *stem_dot = CPLStrdup(CPLSPrintf("%s.", CPLGetBasename(e->dst)));
    if (refers) { /* the folder's "<leaf>.*" */
        DIR *d = opendir(e->dir);
        for (struct dirent *de; d && (de = readdir(d));)
            if (!strncmp(de->d_name, leaf_dot, strlen(leaf_dot)))
                list = CSLAddString(list, *path ? CPLFormFilename(path, de->d_name, NULL)
                                                : de->d_name);
        if (d)
            closedir(d);
    }
    const char *mine = refers ? leaf_dot : stem_dot;
    for (char **f = list; f && *f; f++) {
        const char *l = CPLGetFilename(*f);
        if (strcmp(CPLGetPath(*f), path) || (strcmp(l, leaf) && strncmp(l, mine, strlen(mine))))
            continue;
        char *p = in_dir(e, l);
        if (lexists(p) && find(*old, p) < 0)
            *old = CSLAddString(*old, p);
        CPLFree(p);
    }
    CPLFree(path);
    CPLFree(leaf);
    CPLFree(leaf_dot);
    CPLFree(stem_dot);
    CSLDestroy(list);
}

/* The destination folders locked, each once, in one order (st_dev,
 * st_ino) so that two runs locking two folders cannot wait for each
 * other.  flock is advisory: it orders geogpu's commit steps. */
typedef struct folder_lock {
    dev_t dev;
    ino_t ino;
    int fd;
} folder_lock;

static int by_identity(const void *a, const void *b)
{
    const folder_lock *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int lock_folders(const gg_output_set *set, folder_lock *locks)
{
    int n = 0;
    for (int i = 0; i < set->n; i++) {
        struct stat st;
        if (stat(set->e[i].dir, &st) != 0)
            continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = locks[k].dev == st.st_dev && locks[k].ino == st.st_ino;
        if (!seen)
            locks[n++] = (folder_lock){st.st_dev, st.st_ino, -1};
        if (!seen)
            locks[n - 1].fd = open(set->e[i].dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    qsort(locks, (size_t)n, sizeof *locks, by_identity);
    for (int k = 0; k < n; k++)
        while (locks[k].fd >= 0 && flock(locks[k].fd, LOCK_EX) != 0 && errno == EINTR)
            ; /* a folder that takes no lock (some network file systems): unlocked */
    return n;
}

static void unlock_folders(folder_lock *locks, int n)
{
    for (int k = 0; k < n; k++)
        if (locks[k].fd >= 0)
            close(locks[k].fd); /* releases the lock */
}

/* What the commit step did, to undo it. */
typedef struct journal {
    char **old, **bak; /* existing files and where they were put aside */
    int *linked;       /* bak is a second link (old was still in place) */
    int nold;
    char **placed;     /* new files put at their final names */
    int *over_old;     /* ... over an old file (restored from its bak) */
    int nplaced;
} journal;

/* Undoes j: new files removed (or replaced by the old ones, atomically),
 * old files back at their names.  0, or 1 when one could not be put back
 * (named in err). */
static int roll_back(journal *j, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = j->nplaced - 1; i >= 0; i--)
        if (!j->over_old[i])
            unlink(j->placed[i]);
    for (int i = j->nold - 1; i >= 0; i--) {
        /* a link of a file still in place: rename is a no-op, unlink drops it */
        if (rename(j->bak[i], j->old[i]) != 0 && !rc) {
            snprintf(err + strlen(err), errlen - strlen(err),
                     "; the old '%s' could not be put back (it is '%s')", j->old[i], j->bak[i]);
            rc = 1;
            continue;
        }
        if (j->linked[i])
            unlink(j->bak[i]);
    }
    return rc;
}

static int commit_vsi(gg_output_set *set, char *err, size_t errlen)
{
    /* virtual file systems (/vsis3/...) have no folders to lock or links:
     * each file is renamed as it is */
    for (int i = 0; i < set->n; i++) {
        entry *e = &set->e[i];
        if (VSIRename(e->tmp, e->dst) != 0) {
            snprintf(err, errlen, "cannot rename '%s' to '%s'", e->tmp, e->dst);
            return 1;
        }
        VSIUnlink(CPLSPrintf("%s.aux.xml", e->tmp));
        untrack(e->slot);
        e->open = 0;
    }
    return 0;
}

int gg_output_set_commit(gg_output_set *set, char *err, size_t errlen)
{
    err[0] = 0;
    int vsi = 0;
    for (int i = 0; i < set->n; i++)
        vsi |= is_vsi(set->e[i].dst);
    if (vsi)
        return commit_vsi(set, err, errlen);

    /* the new files and their final names */
    char **tmps = NULL, **finals = NULL;
    int rc = 0;
    for (int i = 0; i < set->n && !rc; i++) {
        entry *e = &set->e[i];
        char **leaves = temporary_leaves(e);
        const char *tmp_leaf = CPLGetFilename(e->tmp);
        if (find(leaves, tmp_leaf) < 0) {
            snprintf(err, errlen, "cannot write '%s': its temporary '%s' is missing", e->dst,
                     e->tmp);
            rc = 1;
        }
        char *stem = CPLStrdup(CPLGetBasename(e->dst));
        for (char **l = leaves; !rc && l && *l; l++) {
            char *from = in_dir(e, *l);
            char *to = !strcmp(*l, tmp_leaf)
                           ? CPLStrdup(e->dst)
                           : in_dir(e, CPLSPrintf("%s%s", stem, *l + strlen(e->base)));
            tmps = CSLAddString(tmps, from);
            finals = CSLAddString(finals, to);
            CPLFree(from);
            CPLFree(to);
        }
        CPLFree(stem);
        CSLDestroy(leaves);
    }
    for (int i = 0; i < CSLCount(finals) && !rc; i++)
        if (find(finals, finals[i]) != i) {
            snprintf(err, errlen, "'%s' would be written twice", finals[i]);
            rc = 1;
        }
    if (rc) {
        CSLDestroy(tmps);
        CSLDestroy(finals);
        for (int i = 0; i < set->n; i++)
            discard(&set->e[i]);
        return 1;
    }

    folder_lock *locks = CPLCalloc((size_t)set->n, sizeof *locks);
    const int nlocks = lock_folders(set, locks);
    char **old = NULL; /* under the lock: another run's commit may have changed them */
    for (int i = 0; i < set->n; i++)
        old_files(&set->e[i], finals, &old);
    const int nold = CSLCount(old), nnew = CSLCount(finals);
    journal j = {.old = old, .bak = CPLCalloc((size_t)nold + 1, sizeof(char *)),
                 .linked = CPLCalloc((size_t)nold + 1, sizeof(int)),
                 .placed = finals, .over_old = CPLCalloc((size_t)nnew + 1, sizeof(int))};

    begin_commit(); /* from here a signal waits for the end of the step */
    for (int i = 0; i < nold && !rc; i++) {
        /* put aside: a second link when a new file will replace it (the
         * name always holds a whole file), else renamed away */
        const char *leaf = CPLGetFilename(old[i]), *path = CPLGetPath(old[i]);
        const char *bleaf = CPLSPrintf(".%s.old%ld-%d", leaf, (long)getpid(), i);
        j.bak[i] = CPLStrdup(*path ? CPLFormFilename(path, bleaf, NULL) : bleaf);
        unlink(j.bak[i]); /* a leftover of a killed run with this pid */
        const int replaced = find(finals, old[i]) >= 0;
        j.linked[i] = replaced && link(old[i], j.bak[i]) == 0;
        if (!j.linked[i] && rename(old[i], j.bak[i]) != 0) {
            snprintf(err, errlen, "cannot replace the existing '%s': %s", old[i], strerror(errno));
            CPLFree(j.bak[i]);
            j.bak[i] = NULL;
            rc = 1;
            break;
        }
        j.nold++;
    }
    for (int i = 0; i < nnew && !rc; i++) {
        const int fault = gg_fault_point("commit"); /* GG_FAULT=commit:N (tests) */
        if (fault || rename(tmps[i], finals[i]) != 0) {
            snprintf(err, errlen, "cannot rename '%s' to '%s': %s", tmps[i], finals[i],
                     fault ? "injected fault (GG_FAULT)" : strerror(errno));
            rc = 1;
            break;
        }
        j.over_old[i] = find(old, finals[i]) >= 0;
        j.nplaced++;
    }
    if (rc) {
        roll_back(&j, err, errlen);
    } else {
        for (int i = 0; i < j.nold; i++)
            unlink(j.bak[i]);
        for (int i = 0; i < set->n; i++) {
            untrack(set->e[i].slot);
            set->e[i].open = 0;
        }
    }
    unlock_folders(locks, nlocks);
    CPLFree(locks);
    for (int i = 0; i < nold; i++)
        CPLFree(j.bak[i]);
    CPLFree(j.bak);
    CPLFree(j.linked);
    CPLFree(j.over_old);
    CSLDestroy(old);
    CSLDestroy(tmps);
    CSLDestroy(finals);
    if (rc) /* the new files still at their temporary names */
        for (int i = 0; i < set->n; i++)
            discard(&set->e[i]);
    end_commit(); /* a signal that came meanwhile ends the process now */
    return rc;
}

/* ------------------------------------------------- single destinations */

/* The sets of gg_output_temporary_name, found again by their temporary. */
static gg_output_set **singles;
static int nsingles;
static pthread_mutex_t singles_lock = PTHREAD_MUTEX_INITIALIZER;

char *gg_output_temporary_name(const char *dst)
{
    gg_output_set *set = gg_output_set_new();
    const char *tmp = set ? gg_output_set_add(set, dst, NULL) : NULL;
    if (!tmp) {
        gg_output_set_free(set);
        return NULL; /* out of memory: the caller's create fails */
    }
    pthread_mutex_lock(&singles_lock);
    singles = CPLRealloc(singles, (size_t)(nsingles + 1) * sizeof *singles);
    singles[nsingles++] = set;
    pthread_mutex_unlock(&singles_lock);
    return CPLStrdup(tmp);
}

static gg_output_set *take_single(const char *tmp)
{
    gg_output_set *set = NULL;
    pthread_mutex_lock(&singles_lock);
    for (int i = 0; i < nsingles && !set; i++)
        if (!strcmp(singles[i]->e[0].tmp, tmp)) {
            set = singles[i];
            singles[i] = singles[--nsingles];
        }
    pthread_mutex_unlock(&singles_lock);
    return set;
}

int gg_output_commit(GDALDriverH drv, const char *tmp, const char *dst, int single_file,
                     char *err, size_t errlen)
{
    (void)drv;
    (void)single_file;
    gg_output_set *set = take_single(tmp);
    if (!set || strcmp(set->e[0].dst, dst)) {
        snprintf(err, errlen, "cannot rename '%s' to '%s': not a temporary of it", tmp, dst);
        gg_output_set_free(set);
        return 1;
    }
    const int rc = gg_output_set_commit(set, err, errlen);
    gg_output_set_free(set);
    return rc;
}

void gg_output_discard(GDALDriverH drv, const char *tmp)
{
    (void)drv;
    gg_output_set *set = take_single(tmp);
    if (set) {
        gg_output_set_free(set);
        return;
    }
    CPLPushErrorHandler(CPLQuietErrorHandler);
    VSIUnlink(tmp);
    VSIUnlink(CPLSPrintf("%s.aux.xml", tmp));
    CPLPopErrorHandler();
}

int gg_output_check_writable(const char *what, const char *path, char *err, size_t errlen)
{
    const char *dir = CPLGetPath(path);
    char *probe = CPLStrdup(CPLFormFilename(*dir ? dir : ".",
                                            CPLSPrintf(".%s.probe%ld", CPLGetFilename(path),
                                                       (long)getpid()),
                                            NULL));
    if (is_vsi(path)) {
        CPLFree(probe);
        return 0; /* found out when written */
    }
    const int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int why = errno;
    if (fd >= 0) {
        close(fd);
        unlink(probe);
    }
    CPLFree(probe);
    if (fd >= 0 || why == EEXIST)
        return 0;
    snprintf(err, errlen, "cannot write %s '%s': %s", what, path, strerror(why));
    return 1;
}
