/*
 * opencl_backend.c -- the OpenCL backend: device discovery, buffers,
 * kernel launches.  Row/column sums are in opencl_rowcol.c, FFTs (VkFFT)
 * in opencl_fft.c.  Built as libgeogpu_opencl.so and dlopened by the
 * runtime; gg_backend_opencl_entry is the only exported symbol.
 *
 * The kernels are compiled at open from one embedded source text: the
 * shared kernel headers (GG_KERNEL_SOURCES) plus rowcol_sums.cl,
 * concatenated at build time by cmake/embed_opencl.cmake.
 *
 * Two in-order queues: the main one (kernels, blocking copies) and a copy
 * queue (write2d_async, read2d_after) ordered against it by events, the
 * marks of backend.h, so that copies overlap kernels where the driver
 * runs queues at once (NVIDIA's; PoCL's pthread device too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

extern const char gg_opencl_program_source[];
extern const size_t gg_opencl_program_source_len;

/* Kernel function names and buffer counts, indexed by gg_kernel_id. */
static const struct {
    const char *name;
    int nbufs;
} kernel_defs[GG_K_COUNT] = {
#define GG_KERNEL_DEF(id, fn, P, nbuf) [id] = {#fn, nbuf},
#include "kernels.def"
#undef GG_KERNEL_DEF
};

static const gg_backend gg_opencl_backend_table; /* defined at the end */

/* Free-memory query of cl_amd_device_attribute_query (not in the Khronos
 * headers): size_t[2] in KiB, total free and largest free block. */
#define GG_CL_DEVICE_GLOBAL_FREE_MEMORY_AMD 0x4039

/* --------------------------------------------------------------- errors */

const char *gg_cl_error_name(cl_int code)
{
    switch (code) {
#define E(c) case c: return #c;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM)
    E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT) E(CL_INVALID_QUEUE_PROPERTIES)
    E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR) E(CL_INVALID_MEM_OBJECT)
    E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER)
    E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
    E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS)
    E(CL_INVALID_LINKER_OPTIONS) E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    case -9999: return "NVIDIA illegal memory access (-9999)";
    default: return "unknown OpenCL error";
    }
}

int gg_cl_fail(gg_cl_dev *d, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->base.err, sizeof d->base.err, fmt, ap);
    va_end(ap);
    return code;
}

static int status_of(cl_int code)
{
    switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE:
        return GGB_ERR_NOMEM;
    default:
        return GGB_ERR_DEVICE;
    }
}

int gg_cl_fail_call(gg_cl_dev *d, const char *what, cl_int code)
{
    return gg_cl_fail(d, status_of(code), "opencl: %s failed: %s (%d)", what,
                      gg_cl_error_name(code), (int)code);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ discovery */

static cl_uint get_platforms(cl_platform_id **out)
{
    cl_uint n = 0;
    *out = NULL;
    /* no ICD installed -> CL_PLATFORM_NOT_FOUND_KHR: simply no platform */
    if (clGetPlatformIDs(0, NULL, &n) != CL_SUCCESS || n == 0)
        return 0;
    cl_platform_id *p = malloc(n * sizeof *p);
    if (!p || clGetPlatformIDs(n, p, NULL) != CL_SUCCESS) {
        free(p);
        return 0;
    }
    *out = p;
    return n;
}

/* All devices of a platform: device indices are positions in this list,
 * whatever their type, so "opencl:P:D" means the same in list and open. */
static cl_uint get_devices(cl_platform_id platform, cl_device_id **out)
{
    cl_uint n = 0;
    *out = NULL;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return 0;
    cl_device_id *d = malloc(n * sizeof *d);
    if (!d || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, d, NULL) != CL_SUCCESS) {
        free(d);
        return 0;
    }
    *out = d;
    return n;
}

/* Copies an info string, trimmed (vendors pad names with spaces). */
static void trim_copy(char *dst, size_t len, const char *src)
{
    while (*src == ' ')
        src++;
    snprintf(dst, len, "%s", src);
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\n'))
        dst[--n] = '\0';
}

static void platform_name(cl_platform_id p, char *buf, size_t len)
{
    char tmp[256] = "";
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof tmp - 1, tmp, NULL);
    trim_copy(buf, len, tmp[0] ? tmp : "unknown platform");
}

static void device_name(cl_device_id d, char *buf, size_t len)
{
    char tmp[256] = "";
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof tmp - 1, tmp, NULL);
    trim_copy(buf, len, tmp[0] ? tmp : "unknown device");
}

static cl_device_type device_type(cl_device_id d)
{
    cl_device_type t = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    return t;
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (t & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

/* Whole-word search in the space-separated extension list. */
static int has_extension(cl_device_id d, const char *ext)
{
    size_t len = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || len == 0)
        return 0;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, len, s, NULL) == CL_SUCCESS) {
        s[len] = '\0';
        const size_t n = strlen(ext);
        for (const char *p = s; (p = strstr(p, ext)) != NULL; p += n) {
            if ((p == s || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
                found = 1;
                break;
            }
        }
    }
    free(s);
    return found;
}

static void appendf(char *buf, size_t buflen, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t buflen, size_t *used, const char *fmt, ...)
{
    if (!buf || *used + 1 >= buflen)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, buflen - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < buflen ? *used + (size_t)n : buflen - 1;
}

static int ocl_list(char *buf, size_t buflen)
{
    size_t used = 0;
    if (buf && buflen)
        buf[0] = '\0';
    cl_platform_id *plats;
    const cl_uint np = get_platforms(&plats);
    int count = 0;
    for (cl_uint p = 0; p < np; p++) {
        char pname[128];
        platform_name(plats[p], pname, sizeof pname);
        cl_device_id *devs;
        const cl_uint nd = get_devices(plats[p], &devs);
        for (cl_uint i = 0; i < nd; i++) {
            char dname[128];
            cl_ulong mem = 0;
            device_name(devs[i], dname, sizeof dname);
            clGetDeviceInfo(devs[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
            appendf(buf, buflen, &used, "opencl:%u:%u %s (%s, %s, %llu MiB)\n", p, i, dname,
                    pname, type_name(device_type(devs[i])), (unsigned long long)(mem >> 20));
            count++;
        }
        free(devs);
    }
    free(plats);
    return count;
}

/* ----------------------------------------------------------------- open */

/* Builds the embedded program; on failure the first lines of the build
 * log go into err. */
static int build_program(gg_cl_dev *d, char *err, size_t errlen)
{
    const char *src = gg_opencl_program_source;
    const size_t len = gg_opencl_program_source_len;
    cl_int e;
    d->program = clCreateProgramWithSource(d->context, 1, &src, &len, &e);
    if (e != CL_SUCCESS) {
        set_err(err, errlen, "opencl: clCreateProgramWithSource failed: %s (%d)",
                gg_cl_error_name(e), (int)e);
        return status_of(e);
    }
    /* Correctly rounded float division/sqrt where the device offers it, as
     * CUDA (prec-div) and the CPU backend do, so results agree; no fast
     * math: the kernels rely on isfinite and NaN. */
    char options[128] = "-cl-std=CL1.2";
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(d->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
        strcat(options, " -cl-fp32-correctly-rounded-divide-sqrt");
    e = clBuildProgram(d->program, 1, &d->device, options, NULL, NULL);
    if (e == CL_SUCCESS)
        return GGB_OK;

    size_t log_len = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(d->program, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len) ==
            CL_SUCCESS &&
        log_len > 0 && (log = malloc(log_len + 1)) != NULL) {
        if (clGetProgramBuildInfo(d->program, d->device, CL_PROGRAM_BUILD_LOG, log_len, log,
                                  NULL) != CL_SUCCESS)
            log[0] = '\0';
        log[log_len] = '\0';
    }
    /* keep the first few lines: enough for the first error */
    if (log) {
        int lines = 0;
        for (char *p = log; *p; p++)
            if (*p == '\n' && ++lines == 6) {
                *p = '\0';
                break;
            }
    }
    set_err(err, errlen, "opencl: building the kernels for %s failed: %s (%d)%s%s",
            d->base.name, gg_cl_error_name(e), (int)e, log && log[0] ? "\n" : "",
            log ? log : "");
    free(log);
    return GGB_ERR_DEVICE;
}

static void release_device(gg_cl_dev *d)
{
    if (d->queue)
        clFinish(d->queue);
    if (d->upload) {
        clFinish(d->upload);
        clReleaseCommandQueue(d->upload);
    }
    for (int m = 0; m < GGB_MARKS; m++)
        if (d->marks[m])
            clReleaseEvent(d->marks[m]);
    for (int i = 0; i < GG_K_COUNT; i++)
        if (d->kernels[i])
            clReleaseKernel(d->kernels[i]);
    gg_cl_rowcol_release(d);
    if (d->program)
        clReleaseProgram(d->program);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->context)
        clReleaseContext(d->context);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static int init_device(gg_cl_dev *d, char *err, size_t errlen)
{
    cl_int e;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                           (cl_context_properties)d->platform, 0};
    d->context = clCreateContext(props, 1, &d->device, NULL, NULL, &e);
    if (e != CL_SUCCESS) {
        set_err(err, errlen, "opencl: clCreateContext(%s) failed: %s (%d)", d->base.name,
                gg_cl_error_name(e), (int)e);
        return e == CL_DEVICE_NOT_AVAILABLE ? GGB_ERR_UNAVAILABLE : status_of(e);
    }
    for (int q = 0; q < 2; q++) {
        cl_command_queue *queue = q == 0 ? &d->queue : &d->upload;
        *queue = clCreateCommandQueue(d->context, d->device, 0, &e); /* in order */
        if (e != CL_SUCCESS) {
            set_err(err, errlen, "opencl: clCreateCommandQueue(%s) failed: %s (%d)",
                    d->base.name, gg_cl_error_name(e), (int)e);
            return status_of(e);
        }
    }
    cl_ulong mem = 0, max_alloc = 0;
    clGetDeviceInfo(d->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    d->total_mem = (size_t)mem;
    d->max_alloc = (size_t)max_alloc;
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof d->max_wg_size,
                    &d->max_wg_size, NULL);
    clGetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof d->max_item_size,
                    d->max_item_size, NULL);
    d->has_amd_free_mem = has_extension(d->device, "cl_amd_device_attribute_query");
    return build_program(d, err, errlen);
}

/* Resolves (index0, index1, gpu_only) to one device; see backend.h. */
static int select_device(int index0, int index1, int gpu_only, cl_platform_id *plat_out,
                         cl_device_id *dev_out, int *p_out, int *d_out, char *err,
                         size_t errlen)
{
    /* "opencl" with no index: a GPU when the machine has one (PoCL often
     * registers a CPU platform first), else any device */
    if (index0 < 0 && !gpu_only &&
        select_device(-1, index1, 1, plat_out, dev_out, p_out, d_out, err, errlen) == GGB_OK)
        return GGB_OK;
    cl_platform_id *plats;
    const cl_uint np = get_platforms(&plats);
    int status = GGB_ERR_UNAVAILABLE;
    if (np == 0) {
        set_err(err, errlen, "no OpenCL platform found (no ICD registered in /etc/OpenCL/vendors?)");
        return status;
    }
    if (index0 >= 0) {
        /* explicit platform (and device): any device type */
        const int di = index1 < 0 ? 0 : index1;
        cl_device_id *devs = NULL;
        cl_uint nd = 0;
        char pname[128] = "", dname[128] = "";
        if ((cl_uint)index0 >= np) {
            set_err(err, errlen, "opencl:%d requested but only %u OpenCL platform%s", index0, np,
                    np == 1 ? "" : "s");
            goto done;
        }
        platform_name(plats[index0], pname, sizeof pname);
        nd = get_devices(plats[index0], &devs);
        if ((cl_uint)di >= nd) {
            set_err(err, errlen, "opencl:%d:%d requested but platform %d (%s) has %u device%s",
                    index0, di, index0, pname, nd, nd == 1 ? "" : "s");
        } else if (!has_extension(devs[di], "cl_khr_fp64")) {
            device_name(devs[di], dname, sizeof dname);
            set_err(err, errlen,
                    "opencl:%d:%d %s has no double precision (cl_khr_fp64), which the kernels need",
                    index0, di, dname);
        } else {
            *plat_out = plats[index0];
            *dev_out = devs[di];
            *p_out = index0;
            *d_out = di;
            status = GGB_OK;
        }
        free(devs);
        goto done;
    }

    /* auto: the first suitable device (index1 >= 0: the index1-th one) */
    int wanted = index1 < 0 ? 0 : index1, suitable = 0, others = 0;
    char no_fp64[128] = "";
    for (cl_uint p = 0; p < np && status != GGB_OK; p++) {
        cl_device_id *devs;
        const cl_uint nd = get_devices(plats[p], &devs);
        for (cl_uint i = 0; i < nd; i++) {
            if (gpu_only && !(device_type(devs[i]) & CL_DEVICE_TYPE_GPU)) {
                others++;
                continue;
            }
            if (!has_extension(devs[i], "cl_khr_fp64")) {
                if (!no_fp64[0])
                    device_name(devs[i], no_fp64, sizeof no_fp64);
                continue;
            }
            if (suitable++ == wanted) {
                *plat_out = plats[p];
                *dev_out = devs[i];
                *p_out = (int)p;
                *d_out = (int)i;
                status = GGB_OK;
                break;
            }
        }
        free(devs);
    }
    if (status != GGB_OK) {
        const char *what = gpu_only ? "GPU device" : "device";
        if (suitable > 0)
            set_err(err, errlen, "opencl: device %d of the suitable ones requested but only %d found",
                    wanted, suitable);
        else if (no_fp64[0])
            set_err(err, errlen, "no OpenCL %s with double precision found (%s lacks cl_khr_fp64)",
                    what, no_fp64);
        else if (gpu_only && others > 0)
            set_err(err, errlen,
                    "no OpenCL GPU device found (%d other device%s: name one as opencl:P:D)",
                    others, others == 1 ? "" : "s");
        else
            set_err(err, errlen, "no OpenCL %s found", what);
    }
done:
    free(plats);
    return status;
}

static int ocl_open(int index0, int index1, int gpu_only, gg_dev **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    cl_platform_id plat;
    cl_device_id dev;
    int pi, di;
    int status = select_device(index0, index1, gpu_only, &plat, &dev, &pi, &di, err, errlen);
    if (status != GGB_OK)
        return status;

    gg_cl_dev *d = calloc(1, sizeof *d);
    if (!d) {
        set_err(err, errlen, "opencl: out of host memory");
        return GGB_ERR_NOMEM;
    }
    pthread_mutex_init(&d->lock, NULL);
    d->platform = plat;
    d->device = dev;
    char dname[112], pname[96]; /* together they fit in base.name */
    device_name(dev, dname, sizeof dname);
    platform_name(plat, pname, sizeof pname);
    snprintf(d->base.name, sizeof d->base.name, "opencl:%d:%d %s (%s)", pi, di, dname, pname);

    status = init_device(d, err, errlen);
    if (status != GGB_OK) {
        release_device(d);
        return status;
    }
    d->base.vt = &gg_opencl_backend_table;
    *out = &d->base;
    return GGB_OK;
}

static void ocl_close(gg_dev *dev)
{
    if (dev)
        release_device(gg_cl(dev));
}

/* --------------------------------------------------------------- memory */

static int ocl_mem_info(gg_dev *dev, size_t *free_bytes, size_t *total_bytes)
{
    gg_cl_dev *d = gg_cl(dev);
    size_t total = d->total_mem, free_est;
    pthread_mutex_lock(&d->lock);
    free_est = total > d->allocated ? total - d->allocated : 0;
    pthread_mutex_unlock(&d->lock);
    if (d->has_amd_free_mem) {
        size_t kib[2] = {0, 0}, got = 0;
        if (clGetDeviceInfo(d->device, GG_CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kib, kib,
                            &got) == CL_SUCCESS &&
            got >= sizeof kib[0] && kib[0] > 0)
            free_est = kib[0] * (size_t)1024 < total ? kib[0] * (size_t)1024 : total;
    }
    /* Otherwise OpenCL cannot tell what other processes use: total minus
     * this handle's allocations is an upper bound. */
    if (free_bytes)
        *free_bytes = free_est;
    if (total_bytes)
        *total_bytes = total;
    return GGB_OK;
}

static int ocl_alloc(gg_dev *dev, size_t bytes, gg_mem **out)
{
    gg_cl_dev *d = gg_cl(dev);
    *out = NULL;
    if (d->max_alloc && bytes > d->max_alloc)
        return gg_cl_fail(d, GGB_ERR_NOMEM,
                          "opencl: allocation of %zu MiB exceeds the device's largest "
                          "buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE = %zu MiB)",
                          bytes >> 20, d->max_alloc >> 20);
    gg_mem *m = malloc(sizeof *m);
    if (!m)
        return gg_cl_fail(d, GGB_ERR_NOMEM, "opencl: out of host memory");
    cl_int e;
    /* OpenCL rejects empty buffers; a zero-byte request gets a token one */
    m->buf = clCreateBuffer(d->context, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &e);
    if (e != CL_SUCCESS) {
        free(m);
        char what[96];
        snprintf(what, sizeof what, "clCreateBuffer(%zu bytes)", bytes);
        return gg_cl_fail_call(d, what, e);
    }
    m->bytes = bytes;
    pthread_mutex_lock(&d->lock);
    d->allocated += bytes;
    pthread_mutex_unlock(&d->lock);
    *out = m;
    return GGB_OK;
}

static void ocl_free(gg_dev *dev, gg_mem *mem)
{
    if (!mem)
        return;
    gg_cl_dev *d = gg_cl(dev);
    clReleaseMemObject(mem->buf); /* deferred by OpenCL until queued uses finish */
    pthread_mutex_lock(&d->lock);
    d->allocated -= mem->bytes < d->allocated ? mem->bytes : d->allocated;
    pthread_mutex_unlock(&d->lock);
    free(mem);
}

/* Checks that rows x row_bytes at offset with pitch fit in the buffer. */
static int check_region(gg_cl_dev *d, const char *what, const gg_mem *m, size_t offset,
                        size_t pitch, size_t row_bytes, size_t rows)
{
    if (!m)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: null buffer", what);
    if (rows > 1 && pitch < row_bytes)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: pitch %zu < row bytes %zu", what,
                          pitch, row_bytes);
    const size_t span = rows > 1 ? (rows - 1) * pitch + row_bytes : row_bytes;
    if (rows > 1 && (span - row_bytes) / (rows - 1) != pitch) /* overflow */
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: region too large", what);
    if (offset > m->bytes || span > m->bytes - offset)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT,
                          "opencl: %s: %zu rows of %zu bytes (pitch %zu) at offset %zu "
                          "overrun a %zu-byte buffer",
                          what, rows, row_bytes, pitch, offset, m->bytes);
    return GGB_OK;
}

/* A 2-D copy between host and device on queue q, after the events of the
 * wait list, with its own event in *ev (NULL: none).  The plain call for
 * contiguous rows: the fast path on every driver. */
static int enqueue_copy2d(gg_cl_dev *d, cl_command_queue q, int write, cl_bool blocking,
                          const gg_mem *m, size_t dev_offset, size_t dev_pitch, void *host,
                          size_t host_pitch, size_t row_bytes, size_t rows, cl_uint nwait,
                          const cl_event *wait, cl_event *ev)
{
    const char *what = write ? "write2d" : "read2d";
    int st = check_region(d, what, m, dev_offset, dev_pitch, row_bytes, rows);
    if (st != GGB_OK)
        return st;
    if (!host || (rows > 1 && host_pitch < row_bytes))
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: bad host pointer or pitch", what);
    cl_int e;
    if (rows == 1 || (dev_pitch == row_bytes && host_pitch == row_bytes)) {
        e = write ? clEnqueueWriteBuffer(q, m->buf, blocking, dev_offset, row_bytes * rows, host,
                                         nwait, wait, ev)
                  : clEnqueueReadBuffer(q, m->buf, blocking, dev_offset, row_bytes * rows, host,
                                        nwait, wait, ev);
        return e == CL_SUCCESS ? GGB_OK
                               : gg_cl_fail_call(d, write ? "clEnqueueWriteBuffer"
                                                          : "clEnqueueReadBuffer", e);
    }
    const size_t buf_origin[3] = {dev_offset, 0, 0}, host_origin[3] = {0, 0, 0};
    const size_t region[3] = {row_bytes, rows, 1};
    e = write ? clEnqueueWriteBufferRect(q, m->buf, blocking, buf_origin, host_origin, region,
                                         dev_pitch, 0, host_pitch, 0, host, nwait, wait, ev)
              : clEnqueueReadBufferRect(q, m->buf, blocking, buf_origin, host_origin, region,
                                        dev_pitch, 0, host_pitch, 0, host, nwait, wait, ev);
    return e == CL_SUCCESS ? GGB_OK
                           : gg_cl_fail_call(d, write ? "clEnqueueWriteBufferRect"
                                                      : "clEnqueueReadBufferRect", e);
}

static int ocl_write2d(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                      const void *src, size_t host_pitch, size_t row_bytes, size_t rows)
{
    gg_cl_dev *d = gg_cl(dev);
    if (rows == 0 || row_bytes == 0)
        return GGB_OK;
    return enqueue_copy2d(d, d->queue, 1, CL_TRUE, dst, dev_offset, dev_pitch, (void *)src,
                          host_pitch, row_bytes, rows, 0, NULL, NULL);
}

static int ocl_read2d(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                     void *dst, size_t host_pitch, size_t row_bytes, size_t rows)
{
    gg_cl_dev *d = gg_cl(dev);
    if (rows == 0 || row_bytes == 0)
        return GGB_OK;
    return enqueue_copy2d(d, d->queue, 0, CL_TRUE, src, dev_offset, dev_pitch, dst, host_pitch,
                          row_bytes, rows, 0, NULL, NULL);
}

/* ----------------------------------------------------------- copy queue */

static int mark_index_ok(gg_cl_dev *d, const char *what, int m, int optional)
{
    if ((optional && m == -1) || (m >= 0 && m < GGB_MARKS))
        return GGB_OK;
    return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: mark %d out of range", what, m);
}

/* The wait list "after mark m": empty when m is -1 or was never recorded. */
static cl_uint wait_on(const gg_cl_dev *d, int m, const cl_event **list)
{
    *list = m >= 0 && d->marks[m] ? &d->marks[m] : NULL;
    return *list ? 1 : 0;
}

/* Makes ev mark m (replacing the event it held), or drops ev (m = -1). */
static void set_mark(gg_cl_dev *d, int m, cl_event ev)
{
    if (m < 0) {
        clReleaseEvent(ev);
        return;
    }
    if (d->marks[m])
        clReleaseEvent(d->marks[m]);
    d->marks[m] = ev;
}

/* Commands of one queue that another waits on must be flushed first
 * (OpenCL 1.2, 5.13): else the waiting queue may wait forever. */
static int flush(gg_cl_dev *d, cl_command_queue q)
{
    const cl_int e = clFlush(q);
    return e == CL_SUCCESS ? GGB_OK : gg_cl_fail_call(d, "clFlush", e);
}

static int ocl_write2d_async(gg_dev *dev, gg_mem *dst, size_t dev_offset, size_t dev_pitch,
                             const void *src, size_t host_pitch, size_t row_bytes, size_t rows,
                             int after, int done)
{
    gg_cl_dev *d = gg_cl(dev);
    int st = mark_index_ok(d, "write2d_async", after, 1);
    if (st == GGB_OK)
        st = mark_index_ok(d, "write2d_async", done, 1);
    if (st != GGB_OK)
        return st;
    const cl_event *wait;
    const cl_uint nwait = wait_on(d, after, &wait);
    cl_event ev = NULL;
    if (rows == 0 || row_bytes == 0) { /* queued all the same: `done` must be reached */
        const cl_int e = clEnqueueMarkerWithWaitList(d->upload, nwait, wait, &ev);
        if (e != CL_SUCCESS)
            return gg_cl_fail_call(d, "clEnqueueMarkerWithWaitList (copy queue)", e);
    } else {
        /* not blocking: the source stays unchanged until `done` (backend.h) */
        st = enqueue_copy2d(d, d->upload, 1, CL_FALSE, dst, dev_offset, dev_pitch, (void *)src,
                            host_pitch, row_bytes, rows, nwait, wait, &ev);
        if (st != GGB_OK)
            return st;
    }
    set_mark(d, done, ev);
    return flush(d, d->upload);
}

static int ocl_read2d_after(gg_dev *dev, const gg_mem *src, size_t dev_offset, size_t dev_pitch,
                            void *dst, size_t host_pitch, size_t row_bytes, size_t rows,
                            int after)
{
    gg_cl_dev *d = gg_cl(dev);
    const int st = mark_index_ok(d, "read2d_after", after, 1);
    if (st != GGB_OK || rows == 0 || row_bytes == 0)
        return st;
    const cl_event *wait;
    const cl_uint nwait = wait_on(d, after, &wait);
    return enqueue_copy2d(d, d->upload, 0, CL_TRUE, src, dev_offset, dev_pitch, dst, host_pitch,
                          row_bytes, rows, nwait, wait, NULL);
}

/* Records mark m at the end of the main queue, or (wait) makes the main
 * queue wait for it: the host waits for the mark's event before anything
 * more is queued.  A barrier on the main queue with the event in its wait
 * list did not hold back the kernels queued after it on PoCL 3.1: PtSel's
 * queued tiles and ortho's queued blocks then read uploads that had not
 * landed (tests/python/test_python_package.py, submit then collect at
 * once).  Waiting on the host keeps the overlap that matters: the kernels
 * queued before still run while the upload goes on. */
static int mark_on_main(gg_dev *dev, int m, int wait)
{
    gg_cl_dev *d = gg_cl(dev);
    const int st = mark_index_ok(d, wait ? "wait_mark" : "mark", m, 0);
    if (st != GGB_OK)
        return st;
    cl_int e;
    if (wait) {
        if (!d->marks[m])
            return GGB_OK;
        e = clWaitForEvents(1, &d->marks[m]);
        return e == CL_SUCCESS ? GGB_OK : gg_cl_fail_call(d, "clWaitForEvents (mark)", e);
    }
    cl_event ev = NULL;
    e = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, &ev);
    if (e != CL_SUCCESS)
        return gg_cl_fail_call(d, "clEnqueueMarkerWithWaitList", e);
    set_mark(d, m, ev);
    return flush(d, d->queue);
}

static int ocl_mark(gg_dev *dev, int m) { return mark_on_main(dev, m, 0); }

static int ocl_wait_mark(gg_dev *dev, int m) { return mark_on_main(dev, m, 1); }

static int ocl_copy(gg_dev *dev, gg_mem *dst, size_t dst_offset, const gg_mem *src,
                   size_t src_offset, size_t bytes)
{
    gg_cl_dev *d = gg_cl(dev);
    if (bytes == 0)
        return GGB_OK;
    int st = check_region(d, "copy (source)", src, src_offset, bytes, bytes, 1);
    if (st == GGB_OK)
        st = check_region(d, "copy (destination)", dst, dst_offset, bytes, bytes, 1);
    if (st != GGB_OK)
        return st;
    cl_int e = clEnqueueCopyBuffer(d->queue, src->buf, dst->buf, src_offset, dst_offset, bytes, 0,
                                   NULL, NULL);
    return e == CL_SUCCESS ? GGB_OK : gg_cl_fail_call(d, "clEnqueueCopyBuffer", e);
}

static int ocl_fill32(gg_dev *dev, gg_mem *dst, size_t offset, uint32_t pattern, size_t bytes)
{
    gg_cl_dev *d = gg_cl(dev);
    if (bytes % 4 != 0 || offset % 4 != 0) /* OpenCL wants both pattern-aligned */
        return gg_cl_fail(d, GGB_ERR_ARGUMENT,
                          "opencl: fill32: offset %zu and size %zu must be multiples of 4",
                          offset, bytes);
    if (bytes == 0)
        return GGB_OK;
    int st = check_region(d, "fill32", dst, offset, bytes, bytes, 1);
    if (st != GGB_OK)
        return st;
    cl_int e = clEnqueueFillBuffer(d->queue, dst->buf, &pattern, sizeof pattern, offset, bytes, 0,
                                   NULL, NULL);
    return e == CL_SUCCESS ? GGB_OK : gg_cl_fail_call(d, "clEnqueueFillBuffer", e);
}

static int ocl_finish(gg_dev *dev)
{
    gg_cl_dev *d = gg_cl(dev);
    cl_int e = clFinish(d->queue);
    const cl_int e2 = clFinish(d->upload);
    if (e == CL_SUCCESS)
        e = e2;
    return e == CL_SUCCESS ? GGB_OK : gg_cl_fail_call(d, "clFinish (queued work)", e);
}

/* -------------------------------------------------------------- kernels */

int gg_cl_get_kernel(gg_cl_dev *d, const char *name, cl_kernel *out)
{
    if (*out)
        return GGB_OK;
    cl_int e;
    cl_kernel k = clCreateKernel(d->program, name, &e);
    if (e != CL_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "clCreateKernel(%s)", name);
        return gg_cl_fail_call(d, what, e);
    }
    *out = k;
    return GGB_OK;
}

/* Work-group shape: x spans one SIMD width (warp / wavefront / vector)
 * along rows, capped at 64 for coalescing without waste on narrow tiles;
 * y fills the group up to 256 items: larger groups only add tail waste on
 * small grids and pressure on registers. */
static void choose_local_size(gg_cl_dev *d, cl_kernel k, size_t ls[2])
{
    size_t wg = 0, multiple = 0;
    clGetKernelWorkGroupInfo(k, d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetKernelWorkGroupInfo(k, d->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                             sizeof multiple, &multiple, NULL);
    if (wg == 0)
        wg = d->max_wg_size ? d->max_wg_size : 1;
    size_t x = multiple ? multiple : 1;
    if (x > 64)
        x = 64;
    if (x > wg)
        x = wg;
    if (d->max_item_size[0] && x > d->max_item_size[0])
        x = d->max_item_size[0];
    size_t y = (wg < 256 ? wg : 256) / x;
    if (y < 1)
        y = 1;
    if (d->max_item_size[1] && y > d->max_item_size[1])
        y = d->max_item_size[1];
    ls[0] = x;
    ls[1] = y;
}

/* The kernel for id with its local size; call with the lock held. */
static int kernel_for(gg_cl_dev *d, int id, cl_kernel *k)
{
    int st = gg_cl_get_kernel(d, kernel_defs[id].name, &d->kernels[id]);
    if (st != GGB_OK)
        return st;
    if (d->local_size[id][0] == 0)
        choose_local_size(d, d->kernels[id], d->local_size[id]);
    *k = d->kernels[id];
    return GGB_OK;
}

/* Reads the device-side params sizes (param_sizes_begin.cl) once; call
 * with the lock held. */
static int query_param_sizes(gg_cl_dev *d)
{
    if (d->param_sizes_known)
        return GGB_OK;
    cl_kernel k = NULL;
    int st = gg_cl_get_kernel(d, "gg_param_sizes", &k);
    if (st != GGB_OK)
        return st;
    cl_int e;
    const char *what = "clCreateBuffer(param sizes)";
    cl_mem out = clCreateBuffer(d->context, CL_MEM_READ_WRITE, sizeof d->param_size, NULL, &e);
    if (e == CL_SUCCESS) {
        what = "clSetKernelArg(gg_param_sizes)";
        e = clSetKernelArg(k, 0, sizeof out, &out);
    }
    if (e == CL_SUCCESS) {
        const size_t one = 1;
        what = "clEnqueueNDRangeKernel(gg_param_sizes)";
        e = clEnqueueNDRangeKernel(d->queue, k, 1, NULL, &one, &one, 0, NULL, NULL);
    }
    if (e == CL_SUCCESS) {
        what = "clEnqueueReadBuffer(param sizes)";
        e = clEnqueueReadBuffer(d->queue, out, CL_TRUE, 0, sizeof d->param_size, d->param_size, 0,
                                NULL, NULL);
    }
    if (out)
        clReleaseMemObject(out);
    clReleaseKernel(k);
    if (e != CL_SUCCESS)
        return gg_cl_fail_call(d, what, e);
    d->param_sizes_known = 1;
    return GGB_OK;
}

static int ocl_launch(gg_dev *dev, int id, int nx, int ny, const void *params,
                     size_t params_size, gg_mem *const *bufs, int nbufs)
{
    gg_cl_dev *d = gg_cl(dev);
    if (id < 0 || id >= GG_K_COUNT)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: unknown kernel id %d", id);
    const char *name = kernel_defs[id].name;
    if (nbufs != kernel_defs[id].nbufs)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s takes %d buffers, got %d", name,
                          kernel_defs[id].nbufs, nbufs);
    if (nx < 0 || ny < 0 || !params || params_size == 0 || (nbufs > 0 && !bufs))
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: bad grid %dx%d or arguments", name,
                          nx, ny);
    for (int i = 0; i < nbufs; i++)
        if (!bufs[i])
            return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: %s: buffer %d is null", name, i);
    if (nx == 0 || ny == 0)
        return GGB_OK;

    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    int st = kernel_for(d, id, &k);
    if (st == GGB_OK)
        st = query_param_sizes(d);
    if (st != GGB_OK)
        goto out;
    if (params_size != (size_t)d->param_size[id]) {
        st = gg_cl_fail(d, GGB_ERR_ARGUMENT,
                        "opencl: %s: params are %zu bytes on the host but %d in the OpenCL "
                        "program (struct layouts differ)",
                        name, params_size, d->param_size[id]);
        goto out;
    }
    char what[160];
    cl_int e = clSetKernelArg(k, 0, sizeof(cl_int), &nx);
    if (e == CL_SUCCESS)
        e = clSetKernelArg(k, 1, sizeof(cl_int), &ny);
    if (e != CL_SUCCESS) {
        snprintf(what, sizeof what, "clSetKernelArg(%s, grid size)", name);
        st = gg_cl_fail_call(d, what, e);
        goto out;
    }
    e = clSetKernelArg(k, 2, params_size, params);
    if (e != CL_SUCCESS) { /* CL_INVALID_ARG_SIZE: host and device structs differ */
        snprintf(what, sizeof what, "clSetKernelArg(%s, params of %zu bytes)", name, params_size);
        st = gg_cl_fail_call(d, what, e);
        goto out;
    }
    for (int i = 0; i < nbufs; i++) {
        e = clSetKernelArg(k, (cl_uint)(3 + i), sizeof(cl_mem), &bufs[i]->buf);
        if (e != CL_SUCCESS) {
            snprintf(what, sizeof what, "clSetKernelArg(%s, buffer %d)", name, i);
            st = gg_cl_fail_call(d, what, e);
            goto out;
        }
    }
    /* the kernels bounds-check, so the grid is rounded up to whole groups */
    const size_t *ls = d->local_size[id];
    const size_t global[2] = {((size_t)nx + ls[0] - 1) / ls[0] * ls[0],
                              ((size_t)ny + ls[1] - 1) / ls[1] * ls[1]};
    e = clEnqueueNDRangeKernel(d->queue, k, 2, NULL, global, ls, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s, %dx%d, local %zux%zu)", name, nx,
                 ny, ls[0], ls[1]);
        st = gg_cl_fail_call(d, what, e);
    }
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

static int ocl_launch_info(gg_dev *dev, int id, int *block_x, int *block_y, double *occupancy)
{
    gg_cl_dev *d = gg_cl(dev);
    if (id < 0 || id >= GG_K_COUNT)
        return gg_cl_fail(d, GGB_ERR_ARGUMENT, "opencl: unknown kernel id %d", id);
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    int st = kernel_for(d, id, &k);
    if (st == GGB_OK) {
        if (block_x)
            *block_x = (int)d->local_size[id][0];
        if (block_y)
            *block_y = (int)d->local_size[id][1];
    }
    pthread_mutex_unlock(&d->lock);
    if (occupancy)
        *occupancy = 0.0; /* OpenCL exposes no residency figures */
    return st;
}

/* Host memory: ordinary (OpenCL pins only through mapped buffers, which
 * write2d/read2d do not take), 64-byte aligned. */
static int ocl_host_alloc(gg_dev *dev, size_t bytes, void **out)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1))
        return gg_cl_fail(gg_cl(dev), GGB_ERR_NOMEM,
                          "opencl: cannot allocate %zu bytes of host memory", bytes);
    *out = p;
    return GGB_OK;
}

static void ocl_host_free(gg_dev *dev, void *p)
{
    (void)dev;
    free(p);
}

/* ---------------------------------------------------------------- table */

static const gg_backend gg_opencl_backend_table = {
    .abi = GG_BACKEND_ABI,
    .name = "opencl",
    .list = ocl_list,
    .open = ocl_open,
    .close = ocl_close,
    .mem_info = ocl_mem_info,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .write2d = ocl_write2d,
    .read2d = ocl_read2d,
    .copy = ocl_copy,
    .fill32 = ocl_fill32,
    .launch = ocl_launch,
    .rowcol_sums = gg_cl_rowcol_sums,
    .fft_plan = gg_cl_fft_plan,
    .fft_exec = gg_cl_fft_exec,
    .fft_destroy = gg_cl_fft_destroy,
    .finish = ocl_finish,
    .launch_info = ocl_launch_info,
    .host_alloc = ocl_host_alloc,
    .host_free = ocl_host_free,
    .write2d_async = ocl_write2d_async,
    .read2d_after = ocl_read2d_after,
    .mark = ocl_mark,
    .wait_mark = ocl_wait_mark,
};

__attribute__((visibility("default"))) const gg_backend *gg_backend_opencl_entry(void)
{
    return &gg_opencl_backend_table;
}
