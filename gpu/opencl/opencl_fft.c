/*
 * opencl_fft.c -- batched in-place C2C single-precision FFTs through
 * VkFFT's OpenCL backend (VKFFT_BACKEND=3, header-only, used as a library).
 *
 * Layout (gg_fft in geogpu.h): interleaved complex float;
 *   rank 1: batch transforms of n[0] points, back to back;
 *   rank 2: batch planes of n[0] rows x n[1] columns, row-major.
 * Forward is exp(-2 pi i jk/n); the inverse is not normalised.
 *
 * vkFFT.h is made of static functions, so it is included here only.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

#include <vkFFT.h>

typedef struct gg_cl_fft {
    VkFFTApplication app;
    /* VkFFT keeps the addresses of these, so they live with the plan.
     * data_slot is the one buffer handle VkFFT ever sees: exec stores the
     * current buffer in it, and VkFFT reads it when it sets kernel
     * arguments, which keeps VkFFT's pointer-based buffer cache valid when
     * a buffer is freed and another takes its place. */
    uint64_t buffer_bytes;
    cl_mem data_slot;
    size_t bytes;
} gg_cl_fft;

/* VkFFT changes the process locale while it generates kernel code (so
 * printf writes '.' decimals) and its restore can use a stale name:
 * plan creation is serialised here and the caller's locale put back. */
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *vkfft_error_name(VkFFTResult r)
{
    switch (r) {
    case VKFFT_ERROR_MALLOC_FAILED: return "host allocation failed";
    case VKFFT_ERROR_UNSUPPORTED_RADIX: return "unsupported radix";
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH: return "unsupported FFT length";
    case VKFFT_ERROR_FAILED_TO_ALLOCATE: return "device allocation failed";
    case VKFFT_ERROR_FAILED_TO_COPY: return "copy failed";
    case VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM: return "program creation failed";
    case VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM: return "kernel compilation failed";
    case VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG: return "clSetKernelArg failed";
    case VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL: return "kernel launch failed";
    case VKFFT_ERROR_FAILED_TO_SYNCHRONIZE: return "synchronisation failed";
    case VKFFT_ERROR_FAILED_TO_CREATE_COMMAND_QUEUE: return "command queue creation failed";
    case VKFFT_ERROR_FAILED_TO_GET_ATTRIBUTE: return "device query failed";
    case VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER: return "code buffer too small";
    default: return "see VkFFTResult in vkFFT.h";
    }
}

static int vkfft_status(VkFFTResult r)
{
    switch (r) {
    case VKFFT_ERROR_MALLOC_FAILED:
    case VKFFT_ERROR_FAILED_TO_ALLOCATE:
        return GGB_ERR_NOMEM;
    case VKFFT_ERROR_UNSUPPORTED_RADIX:
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH:
        return GGB_ERR_UNSUPPORTED;
    default:
        return GGB_ERR_DEVICE;
    }
}

int gg_cl_fft_plan(gg_dev *dev, int rank, const int *n, int batch, void **plan)
{
    gg_cl_dev *d = gg_cl(dev);
    *plan = NULL;
    if ((rank != 1 && rank != 2) || !n || batch < 1 || n[0] < 1 || (rank == 2 && n[1] < 1))
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: fft_plan: bad shape (rank %d, batch %d)",
                          rank, batch);
    gg_cl_fft *p = calloc(1, sizeof *p);
    if (!p)
        return gg_cl_fail(d, GGB_ERR_NOMEM, "opencl: out of host memory");

    const uint64_t rows = rank == 2 ? (uint64_t)n[0] : 1;
    const uint64_t cols = rank == 2 ? (uint64_t)n[1] : (uint64_t)n[0];
    p->bytes = (size_t)(rows * cols * (uint64_t)batch * 2 * sizeof(float));
    p->buffer_bytes = p->bytes;

    VkFFTConfiguration cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.FFTdim = (uint64_t)rank;
    cfg.size[0] = cols; /* VkFFT's axis 0 is the contiguous one */
    cfg.size[1] = rows;
    cfg.size[2] = 1;
    cfg.numberBatches = (uint64_t)batch;
    cfg.normalize = 0; /* inverse left unscaled, as FFTW and cuFFT */
    cfg.platform = &d->platform;
    cfg.device = &d->device;
    cfg.context = &d->context;
    cfg.bufferSize = &p->buffer_bytes;

    pthread_mutex_lock(&plan_lock);
    const char *cur = setlocale(LC_ALL, NULL);
    char *saved = cur ? strdup(cur) : NULL;
    VkFFTResult r = initializeVkFFT(&p->app, cfg);
    if (saved) {
        cur = setlocale(LC_ALL, NULL);
        if (!cur || strcmp(cur, saved) != 0)
            setlocale(LC_ALL, saved);
        free(saved);
    }
    pthread_mutex_unlock(&plan_lock);

    if (r != VKFFT_SUCCESS) {
        free(p); /* initializeVkFFT has already released what it made */
        if (rank == 2)
            return gg_cl_fail(d, vkfft_status(r),
                              "opencl: VkFFT plan %dx%d x %d failed: %s (VkFFT error %d)", n[0],
                              n[1], batch, vkfft_error_name(r), (int)r);
        return gg_cl_fail(d, vkfft_status(r),
                          "opencl: VkFFT plan %d x %d failed: %s (VkFFT error %d)", n[0], batch,
                          vkfft_error_name(r), (int)r);
    }
    *plan = p;
    return GGB_OK;
}

int gg_cl_fft_exec(gg_dev *dev, void *plan, gg_mem *data, int inverse)
{
    gg_cl_dev *d = gg_cl(dev);
    gg_cl_fft *p = plan;
    if (!p || !data)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: fft_exec: null plan or buffer");
    if (data->bytes < p->bytes)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT,
                          "opencl: fft_exec: the plan needs %zu bytes, the buffer has %zu",
                          p->bytes, data->bytes);
    VkFFTLaunchParams lp;
    memset(&lp, 0, sizeof lp);
    lp.commandQueue = &d->queue;
    lp.buffer = &p->data_slot;
    /* VkFFT sets arguments on the plan's kernels and enqueues them: one
     * thread at a time per device, like launch */
    pthread_mutex_lock(&d->lock);
    p->data_slot = data->buf;
    VkFFTResult r = VkFFTAppend(&p->app, inverse ? 1 : -1, &lp);
    pthread_mutex_unlock(&d->lock);
    if (r != VKFFT_SUCCESS)
        return gg_cl_fail(d, vkfft_status(r), "opencl: VkFFT %s transform failed: %s (VkFFT error %d)",
                          inverse ? "inverse" : "forward", vkfft_error_name(r), (int)r);
    return GGB_OK;
}

void gg_cl_fft_destroy(gg_dev *dev, void *plan)
{
    gg_cl_fft *p = plan;
    if (!p)
        return;
    /* queued transforms still use the plan's kernels and temp buffers */
    clFinish(gg_cl(dev)->queue);
    deleteVkFFT(&p->app);
    free(p);
}
