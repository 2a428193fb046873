/*
 * opencl_rowcol.c -- masked row/column sums: launches the two kernels of
 * rowcol_sums.cl (per-work-group partials, then their reduction) and
 * keeps their scratch buffers.
 */
#include <stdio.h>

#include "opencl_internal.h"

/* Tile and work-group shape of gg_rowcol_partial (rowcol_sums.cl). */
#define RC_LX 32
#define RC_LY 8
#define RC_TILE_W 128
#define RC_TILE_H 32
/* At most this many work-groups across: it bounds the row scratch to
 * RC_MAX_GROUPS_X * height pairs of doubles. */
#define RC_MAX_GROUPS_X 32

void gg_cl_rowcol_release(gg_cl_dev *d)
{
    if (d->k_rowcol_partial)
        clReleaseKernel(d->k_rowcol_partial);
    if (d->k_rowcol_reduce)
        clReleaseKernel(d->k_rowcol_reduce);
    if (d->rc_row_scratch)
        clReleaseMemObject(d->rc_row_scratch);
    if (d->rc_col_scratch)
        clReleaseMemObject(d->rc_col_scratch);
    d->k_rowcol_partial = d->k_rowcol_reduce = NULL;
    d->rc_row_scratch = d->rc_col_scratch = NULL;
    d->rc_row_bytes = d->rc_col_bytes = 0;
}

/* Grows a scratch buffer to at least bytes (old contents not kept); call
 * with the lock held.  Scratch counts as allocated for mem_info. */
static int ensure_scratch(gg_cl_dev *d, cl_mem *buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes)
        return GGB_OK;
    if (*buf)
        clReleaseMemObject(*buf);
    d->allocated -= *have < d->allocated ? *have : d->allocated;
    *buf = NULL;
    *have = 0;
    cl_int e;
    cl_mem m = clCreateBuffer(d->context, CL_MEM_READ_WRITE, bytes, NULL, &e);
    if (e != CL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "clCreateBuffer(rowcol scratch, %zu bytes)", bytes);
        return gg_cl_fail_call(d, what, e);
    }
    *buf = m;
    *have = bytes;
    d->allocated += bytes;
    return GGB_OK;
}

static int check_out(gg_cl_dev *d, const gg_mem *m, const char *what, int n)
{
    if (!m || m->bytes < (size_t)n * sizeof(double))
        return gg_cl_fail(d, GGB_ERR_ARGUMENT,
                          "opencl: rowcol_sums: %s must hold %d doubles (%zu bytes given)", what,
                          n, m ? m->bytes : 0);
    return GGB_OK;
}

static int set_args(cl_kernel k, int n, const size_t *sizes, const void *const *values)
{
    for (int i = 0; i < n; i++) {
        cl_int e = clSetKernelArg(k, (cl_uint)i, sizes[i], values[i]);
        if (e != CL_SUCCESS)
            return e;
    }
    return CL_SUCCESS;
}

int gg_cl_rowcol_sums(gg_dev *dev, const gg_mem *img, const gg_rowcol_args *a,
                      gg_mem *row_sum, gg_mem *row_cnt, gg_mem *col_sum, gg_mem *col_cnt)
{
    gg_cl_dev *d = gg_cl(dev);
    if (!a || !img || a->width < 0 || a->height < 0 || a->stride < a->width)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: rowcol_sums: bad image arguments");
    const int w = a->width, h = a->height;
    int st;
    if ((st = check_out(d, row_sum, "row_sum", h)) != GGB_OK ||
        (st = check_out(d, row_cnt, "row_cnt", h)) != GGB_OK ||
        (st = check_out(d, col_sum, "col_sum", w)) != GGB_OK ||
        (st = check_out(d, col_cnt, "col_cnt", w)) != GGB_OK)
        return st;
    if (w == 0 || h == 0) { /* no pixels: all sums and counts are zero */
        gg_mem *outs[4] = {row_sum, row_cnt, col_sum, col_cnt};
        const int lens[4] = {h, h, w, w};
        for (int i = 0; i < 4; i++) {
            if (lens[i] == 0)
                continue;
            const cl_uint zero = 0;
            cl_int e = clEnqueueFillBuffer(d->queue, outs[i]->buf, &zero, sizeof zero, 0,
                                           (size_t)lens[i] * sizeof(double), 0, NULL, NULL);
            if (e != CL_SUCCESS)
                return gg_cl_fail_call(d, "clEnqueueFillBuffer(rowcol_sums)", e);
        }
        return GGB_OK;
    }
    const size_t need = ((size_t)(h - 1) * (size_t)a->stride + (size_t)w) * sizeof(float);
    if (img->bytes < need)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT,
                          "opencl: rowcol_sums: a %dx%d image with stride %d needs %zu bytes, "
                          "the buffer has %zu",
                          w, h, a->stride, need, img->bytes);

    /* Work-groups: enough to fill the device (about 8 per compute unit)
     * without more scratch than needed. */
    cl_uint units = 0;
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    const int target = units ? (int)units * 8 : 64;
    const int ncb = (w + RC_TILE_W - 1) / RC_TILE_W, nrb = (h + RC_TILE_H - 1) / RC_TILE_H;
    const int ngc = ncb < RC_MAX_GROUPS_X ? ncb : RC_MAX_GROUPS_X;
    int ngr = (target + ngc - 1) / ngc;
    if (ngr > nrb)
        ngr = nrb;

    pthread_mutex_lock(&d->lock);
    cl_int e = CL_SUCCESS;
    const char *what = NULL;
    st = gg_cl_get_kernel(d, "gg_rowcol_partial", &d->k_rowcol_partial);
    if (st == GGB_OK)
        st = gg_cl_get_kernel(d, "gg_rowcol_reduce", &d->k_rowcol_reduce);
    if (st == GGB_OK)
        st = ensure_scratch(d, &d->rc_row_scratch, &d->rc_row_bytes,
                            (size_t)ngc * (size_t)h * 2 * sizeof(double));
    if (st == GGB_OK)
        st = ensure_scratch(d, &d->rc_col_scratch, &d->rc_col_bytes,
                            (size_t)ngr * (size_t)w * 2 * sizeof(double));
    if (st != GGB_OK)
        goto out;

    const int has_nodata = a->has_nodata != 0, stride = a->stride;
    const float nodata = a->nodata;
    {
        const size_t sizes[] = {sizeof(cl_mem), sizeof(int), sizeof(int), sizeof(int),
                                sizeof(int),    sizeof(float), sizeof(cl_mem), sizeof(cl_mem)};
        const void *values[] = {&img->buf,    &w, &h, &stride, &has_nodata,
                                &nodata, &d->rc_row_scratch, &d->rc_col_scratch};
        e = set_args(d->k_rowcol_partial, 8, sizes, values);
        what = "clSetKernelArg(gg_rowcol_partial)";
        if (e == CL_SUCCESS) {
            const size_t global[2] = {(size_t)ngc * RC_LX, (size_t)ngr * RC_LY};
            const size_t local[2] = {RC_LX, RC_LY};
            e = clEnqueueNDRangeKernel(d->queue, d->k_rowcol_partial, 2, NULL, global, local, 0,
                                       NULL, NULL);
            what = "clEnqueueNDRangeKernel(gg_rowcol_partial)";
        }
    }
    if (e == CL_SUCCESS) {
        const size_t sizes[] = {sizeof(cl_mem), sizeof(cl_mem), sizeof(int),    sizeof(int),
                                sizeof(int),    sizeof(int),    sizeof(cl_mem), sizeof(cl_mem),
                                sizeof(cl_mem), sizeof(cl_mem)};
        const void *values[] = {&d->rc_row_scratch, &d->rc_col_scratch, &w, &h, &ngc, &ngr,
                                &row_sum->buf, &row_cnt->buf, &col_sum->buf, &col_cnt->buf};
        e = set_args(d->k_rowcol_reduce, 10, sizes, values);
        what = "clSetKernelArg(gg_rowcol_reduce)";
        if (e == CL_SUCCESS) {
            /* an explicit group size: left to the driver, a prime h + w
             * could get groups of one; the kernel bounds-checks */
            size_t local = 0;
            clGetKernelWorkGroupInfo(d->k_rowcol_reduce, d->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof local, &local, NULL);
            if (local == 0 || local > 64)
                local = 64;
            const size_t global = ((size_t)h + (size_t)w + local - 1) / local * local;
            e = clEnqueueNDRangeKernel(d->queue, d->k_rowcol_reduce, 1, NULL, &global, &local,
                                       0, NULL, NULL);
            what = "clEnqueueNDRangeKernel(gg_rowcol_reduce)";
        }
    }
    if (e != CL_SUCCESS)
        st = gg_cl_fail_call(d, what, e);
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}
