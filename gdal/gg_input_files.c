/*
 * gg_input_files.c -- the files a run reads and the output check
 * (gg_input_files.h).
 *
 * MIT licence.
 */
#define _GNU_SOURCE
#include "gg_input_files.h"

#include "cpl_conv.h"
#include "cpl_minixml.h"
#include "cpl_string.h"
#include "cpl_vsi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *path;   /* as the dataset reported it, canonical() */
    char *source; /* the source it is read for, as the user named it */
    int exists;   /* then dev/ino identify it */
    GUIntBig dev, ino;
} input_file;

struct gg_input_files {
    input_file *files;
    size_t n, cap;
};

gg_input_files *gg_input_files_new(void)
{
    return calloc(1, sizeof(gg_input_files));
}

void gg_input_files_free(gg_input_files *list)
{
    if (!list)
        return;
    for (size_t k = 0; k < list->n; k++) {
        free(list->files[k].path);
        free(list->files[k].source);
    }
    free(list->files);
    free(list);
}

static char *copy_string(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* For a file that does not exist: its folder's real path and its name, so
 * that "./o.tif" and "o.tif" are one name.  malloc'ed; NULL when out of
 * memory. */
static char *canonical(const char *path)
{
    char *folder = copy_string(CPLGetPath(path));
    const char *leaf = CPLGetFilename(path);
    char real[PATH_MAX];
    char *out = NULL;
    if (folder && realpath(*folder ? folder : ".", real)) {
        const size_t n = strlen(real) + strlen(leaf) + 2;
        out = malloc(n);
        if (out)
            snprintf(out, n, "%s/%s", real, leaf);
    } else {
        out = copy_string(path);
    }
    free(folder);
    return out;
}

/* stat() follows links: a link to an input is the input. */
static int identify(const char *path, GUIntBig *dev, GUIntBig *ino)
{
    VSIStatBufL st;
    if (VSIStatL(path, &st) != 0)
        return 0;
    *dev = (GUIntBig)st.st_dev;
    *ino = (GUIntBig)st.st_ino;
    return 1;
}

int gg_input_files_add_path(gg_input_files *list, const char *path, const char *source)
{
    if (!path || !*path)
        return 0;
    if (gg_input_files_reader(list, path))
        return 0; /* already listed */
    GUIntBig dev = 0, ino = 0;
    const int exists = identify(path, &dev, &ino);
    if (list->n == list->cap) {
        const size_t cap = list->cap ? 2 * list->cap : 8;
        input_file *grown = realloc(list->files, cap * sizeof *grown);
        if (!grown)
            return 1;
        list->files = grown;
        list->cap = cap;
    }
    input_file *f = &list->files[list->n];
    f->path = exists ? copy_string(path) : canonical(path);
    f->source = copy_string(source ? source : path);
    if (!f->path || !f->source) {
        free(f->path);
        free(f->source);
        return 1;
    }
    f->exists = exists;
    f->dev = dev;
    f->ino = ino;
    list->n++;
    return 0;
}

static int add_dataset(gg_input_files *list, GDALDatasetH ds, const char *source, int depth);

/* A GDAL VRT lists only the sources that are plain files: its other
 * sources (GG: strings, nested VRTs) are opened and listed in turn. */
static int add_vrt_sources(gg_input_files *list, const CPLXMLNode *node, const char *folder,
                           const char *source, int depth)
{
    int rc = 0;
    for (; node && !rc; node = node->psNext) {
        if (node->eType != CXT_Element)
            continue;
        if (EQUAL(node->pszValue, "SourceFilename")) {
            const char *name = CPLGetXMLValue(node, NULL, "");
            const int relative = atoi(CPLGetXMLValue(node, "relativeToVRT", "0"));
            const char *path = relative ? CPLProjectRelativeFilename(folder, name) : name;
            if (!*name)
                continue;
            char *held = CPLStrdup(path);
            GDALDatasetH h = GDALOpenEx(held, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
            rc = gg_input_files_add_path(list, held, source) ||
                 (h && add_dataset(list, h, source, depth + 1));
            if (h)
                GDALClose(h);
            CPLFree(held);
            continue;
        }
        rc = add_vrt_sources(list, node->psChild, folder, source, depth);
    }
    return rc;
}

static int add_dataset(gg_input_files *list, GDALDatasetH ds, const char *source, int depth)
{
    if (!ds || depth > 16)
        return 0;
    char **files = GDALGetFileList(ds);
    int rc = 0;
    for (char **f = files; f && *f && !rc; f++)
        rc = gg_input_files_add_path(list, *f, source);
    CSLDestroy(files);
    GDALDriverH drv = GDALGetDatasetDriver(ds);
    if (!rc && drv && EQUAL(GDALGetDriverShortName(drv), "VRT")) {
        char **xml = GDALGetMetadata(ds, "xml:VRT");
        CPLXMLNode *root = xml && xml[0] ? CPLParseXMLString(xml[0]) : NULL;
        if (root) {
            const char *desc = GDALGetDescription(ds);
            /* an in-memory VRT (its XML as the name) has no folder */
            char *folder = CPLStrdup(strchr(desc, '<') ? "" : CPLGetPath(desc));
            rc = add_vrt_sources(list, root, folder, source, depth);
            CPLFree(folder);
            CPLDestroyXMLNode(root);
        }
    }
    return rc;
}

int gg_input_files_add_dataset(gg_input_files *list, GDALDatasetH ds, const char *source)
{
    if (source && gg_input_files_add_path(list, source, source))
        return 1;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    const int rc = add_dataset(list, ds, source, 0);
    CPLPopErrorHandler();
    return rc;
}

const char *gg_input_files_reader(const gg_input_files *list, const char *path)
{
    if (!list || !path)
        return NULL;
    GUIntBig dev = 0, ino = 0;
    const int exists = identify(path, &dev, &ino);
    char *name = exists ? NULL : canonical(path);
    const char *found = NULL;
    for (size_t k = 0; k < list->n && !found; k++) {
        const input_file *f = &list->files[k];
        if (exists ? f->exists && f->dev == dev && f->ino == ino
                   : !f->exists && !strcmp(f->path, name ? name : path))
            found = f->source;
    }
    free(name);
    return found;
}

int gg_input_files_same(const char *a, const char *b)
{
    gg_input_files *one = gg_input_files_new();
    if (!one)
        return !strcmp(a, b);
    const int same = gg_input_files_add_path(one, a, a) ? !strcmp(a, b)
                                                        : gg_input_files_reader(one, b) != NULL;
    gg_input_files_free(one);
    return same;
}

int gg_input_files_check_output(const gg_input_files *list, const char *what, const char *path,
                                char *err, size_t errlen)
{
    VSIStatBufL st;
    if (VSIStatL(path, &st) == 0 && !VSI_ISREG(st.st_mode)) {
        snprintf(err, errlen, "'%s' is not a regular file", path);
        return 1;
    }
    const char *src = gg_input_files_reader(list, path);
    if (src) {
        snprintf(err, errlen, "%s '%s' is read by the source '%s'; inputs are never overwritten",
                 what, path, src);
        return 1;
    }
    return 0;
}
