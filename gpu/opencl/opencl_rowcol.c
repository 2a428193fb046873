/*
 * opencl_rowcol.c -- masked row/column sums: launches the kernels of
 * rowcol_sums.cl (column partials per strip of rows, row partials per chunk
 * of columns, then their reduction) and keeps their scratch buffers.
 */
#include <stdio.h>

#include "opencl_internal.h"

/* Rows of a column-partial strip and columns of a row-partial chunk: long
 * enough runs per work item, scratch of about 1/64 and 1/256 of the image. */
#define RC_STRIP_ROWS 64
#define RC_CHUNK_COLS 256

void gg_cl_rowcol_release(gg_cl_dev *d)
{
    if (d->k_rowcol_cols)
        clReleaseKernel(d->k_rowcol_cols);
    if (d->k_rowcol_rows)
        clReleaseKernel(d->k_rowcol_rows);
    if (d->k_rowcol_reduce)
        clReleaseKernel(d->k_rowcol_reduce);
    if (d->rc_row_scratch)
        clReleaseMemObject(d->rc_row_scratch);
    if (d->rc_col_scratch)
        clReleaseMemObject(d->rc_col_scratch);
    d->k_rowcol_cols = d->k_rowcol_rows = d->k_rowcol_reduce = NULL;
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

    /* partial counts: ngr column partials (one per strip), ngc row
     * partials (one per chunk), as gg_rowcol_reduce names them */
    const int ngr = (h + RC_STRIP_ROWS - 1) / RC_STRIP_ROWS;
    const int ngc = (w + RC_CHUNK_COLS - 1) / RC_CHUNK_COLS;

    pthread_mutex_lock(&d->lock);
    cl_int e = CL_SUCCESS;
    const char *what = NULL;
    st = gg_cl_get_kernel(d, "gg_rowcol_cols", &d->k_rowcol_cols);
    if (st == GGB_OK)
        st = gg_cl_get_kernel(d, "gg_rowcol_rows", &d->k_rowcol_rows);
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
    const int strip_rows = RC_STRIP_ROWS, chunk_cols = RC_CHUNK_COLS;
    const size_t sizes[] = {sizeof(cl_mem), sizeof(int), sizeof(int),   sizeof(int),
                            sizeof(int),    sizeof(float), sizeof(int), sizeof(cl_mem)};
    {
        const void *values[] = {&img->buf, &w, &h, &stride, &has_nodata, &nodata,
                                &strip_rows, &d->rc_col_scratch};
        e = set_args(d->k_rowcol_cols, 8, sizes, values);
        what = "clSetKernelArg(gg_rowcol_cols)";
        if (e == CL_SUCCESS) {
            const size_t local[2] = {64, 1};
            const size_t global[2] = {((size_t)w + 63) / 64 * 64, (size_t)ngr};
            e = clEnqueueNDRangeKernel(d->queue, d->k_rowcol_cols, 2, NULL, global, local, 0,
                                       NULL, NULL);
            what = "clEnqueueNDRangeKernel(gg_rowcol_cols)";
        }
    }
    if (e == CL_SUCCESS) {
        const void *values[] = {&img->buf, &w, &h, &stride, &has_nodata, &nodata,
                                &chunk_cols, &d->rc_row_scratch};
        e = set_args(d->k_rowcol_rows, 8, sizes, values);
        what = "clSetKernelArg(gg_rowcol_rows)";
        if (e == CL_SUCCESS) {
            const size_t local[2] = {64, 1};
            const size_t global[2] = {((size_t)h + 63) / 64 * 64, (size_t)ngc};
            e = clEnqueueNDRangeKernel(d->queue, d->k_rowcol_rows, 2, NULL, global, local, 0,
                                       NULL, NULL);
            what = "clEnqueueNDRangeKernel(gg_rowcol_rows)";
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
