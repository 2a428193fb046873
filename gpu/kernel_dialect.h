/*
 * kernel_dialect.h -- lets one kernel body compile as CUDA C, as OpenCL C
 * and as a plain C loop (the Blender Cycles approach).
 *
 * A kernel is written as
 *
 *     GG_KERNEL2(gg_k_name, params_type, p, const float, in, float, out)
 *     {
 *         const int x = GG_X, y = GG_Y;
 *         if (x >= gg_nx || y >= gg_ny) return;
 *         ...
 *     }
 *
 * GG_STREAM_KERNELn declares a kernel that streams each pixel once with
 * little arithmetic (CUDA then gives each thread several pixels).
 * GG_KERNELn_CPU_OWN declares one whose CPU loop is written by hand next
 * to it (under #ifdef GG_KERNEL_CPU), computing the same values.
 *
 * Every kernel gets the grid size (gg_nx, gg_ny), one params struct by value
 * (plain int/float/double members only, so host and device layouts agree)
 * and 2..6 device buffers.  Per-element logic only: reductions and FFTs go
 * through the backend table (gpu/backend.h).
 *
 * Device functions that take device pointers qualify them GG_GLOBAL
 * (OpenCL's __global; nothing elsewhere).
 *
 * Math: use the type-generic names (floor, sqrt, fabs, fmin, fmax, hypot,
 * isfinite); they resolve to float or double overloads on every target.
 */
#ifndef GG_KERNEL_DIALECT_H
#define GG_KERNEL_DIALECT_H

#if defined(__CUDACC__)
/* ---------------------------------------------------------------- CUDA */
/* A CUDA thread runs the body for ITEMS pixels of a row, blockDim.x apart
 * (a warp's accesses stay coalesced), unrolled.  GG_KERNELn uses 1;
 * GG_STREAM_KERNELn (kernels that stream each pixel once with little
 * arithmetic) uses GG_CUDA_STREAM_ITEMS, which keeps more loads in flight:
 * on an H200 radnorm went from 55 % to 64 % of copy bandwidth, while
 * multilook (already 16 loads a thread) lost occupancy and fell from 91 %
 * to 78 % (bench/RESULTS.md).  Each kernel records its factor in
 * <name>_cuda_items for the launch (gpu/cuda) to size grid.x. */
#ifndef GG_CUDA_STREAM_ITEMS
#define GG_CUDA_STREAM_ITEMS 4
#endif
#define GG_DEVICE_FN static __device__ __forceinline__
#define GG_GLOBAL
#define GG_X gg_x
#define GG_Y gg_y
typedef unsigned char gg_u8;
#define GG_CUDA_ENTRY_(items, call) \
    { \
        const int gg_y = (int)(blockIdx.y * blockDim.y + threadIdx.y); \
        const int gg_x0 = (int)(blockIdx.x * blockDim.x * (items) + threadIdx.x); \
        _Pragma("unroll") for (int gg_k = 0; gg_k < (items); gg_k++) \
        { \
            const int gg_x = gg_x0 + gg_k * (int)blockDim.x; \
            call; \
        } \
    }
#define GG_CUDA_KERNEL2_(items, name, P, p, T0, b0, T1, b1) \
    static const int name##_cuda_items = (items); \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1); \
    extern "C" __global__ void name(int gg_nx, int gg_ny, P p, T0 *__restrict__ b0, \
                                    T1 *__restrict__ b1) \
    GG_CUDA_ENTRY_(items, name##_item(gg_x, gg_y, gg_nx, gg_ny, p, b0, b1)) \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1)
#define GG_CUDA_KERNEL3_(items, name, P, p, T0, b0, T1, b1, T2, b2) \
    static const int name##_cuda_items = (items); \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2); \
    extern "C" __global__ void name(int gg_nx, int gg_ny, P p, T0 *__restrict__ b0, \
                                    T1 *__restrict__ b1, T2 *__restrict__ b2) \
    GG_CUDA_ENTRY_(items, name##_item(gg_x, gg_y, gg_nx, gg_ny, p, b0, b1, b2)) \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2)
#define GG_CUDA_KERNEL4_(items, name, P, p, T0, b0, T1, b1, T2, b2, T3, b3) \
    static const int name##_cuda_items = (items); \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3); \
    extern "C" __global__ void name(int gg_nx, int gg_ny, P p, T0 *__restrict__ b0, \
                                    T1 *__restrict__ b1, T2 *__restrict__ b2, \
                                    T3 *__restrict__ b3) \
    GG_CUDA_ENTRY_(items, name##_item(gg_x, gg_y, gg_nx, gg_ny, p, b0, b1, b2, b3)) \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3)
#define GG_CUDA_KERNEL5_(items, name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4) \
    static const int name##_cuda_items = (items); \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3, \
        T4 *__restrict__ b4); \
    extern "C" __global__ void name(int gg_nx, int gg_ny, P p, T0 *__restrict__ b0, \
                                    T1 *__restrict__ b1, T2 *__restrict__ b2, \
                                    T3 *__restrict__ b3, T4 *__restrict__ b4) \
    GG_CUDA_ENTRY_(items, name##_item(gg_x, gg_y, gg_nx, gg_ny, p, b0, b1, b2, b3, b4)) \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3, \
        T4 *__restrict__ b4)
#define GG_CUDA_KERNEL6_(items, name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5) \
    static const int name##_cuda_items = (items); \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3, \
        T4 *__restrict__ b4, T5 *__restrict__ b5); \
    extern "C" __global__ void name(int gg_nx, int gg_ny, P p, T0 *__restrict__ b0, \
                                    T1 *__restrict__ b1, T2 *__restrict__ b2, \
                                    T3 *__restrict__ b3, T4 *__restrict__ b4, \
                                    T5 *__restrict__ b5) \
    GG_CUDA_ENTRY_(items, name##_item(gg_x, gg_y, gg_nx, gg_ny, p, b0, b1, b2, b3, b4, b5)) \
    static __device__ __forceinline__ void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, \
        P p, T0 *__restrict__ b0, T1 *__restrict__ b1, T2 *__restrict__ b2, T3 *__restrict__ b3, \
        T4 *__restrict__ b4, T5 *__restrict__ b5)
#define GG_KERNEL2(...) GG_CUDA_KERNEL2_(1, __VA_ARGS__)
#define GG_KERNEL3(...) GG_CUDA_KERNEL3_(1, __VA_ARGS__)
#define GG_KERNEL4(...) GG_CUDA_KERNEL4_(1, __VA_ARGS__)
#define GG_KERNEL5(...) GG_CUDA_KERNEL5_(1, __VA_ARGS__)
#define GG_KERNEL6(...) GG_CUDA_KERNEL6_(1, __VA_ARGS__)
#define GG_KERNEL2_CPU_OWN(...) GG_CUDA_KERNEL2_(1, __VA_ARGS__)
#define GG_KERNEL3_CPU_OWN(...) GG_CUDA_KERNEL3_(1, __VA_ARGS__)
#define GG_STREAM_KERNEL2(...) GG_CUDA_KERNEL2_(GG_CUDA_STREAM_ITEMS, __VA_ARGS__)
#define GG_STREAM_KERNEL3(...) GG_CUDA_KERNEL3_(GG_CUDA_STREAM_ITEMS, __VA_ARGS__)
#define GG_STREAM_KERNEL4(...) GG_CUDA_KERNEL4_(GG_CUDA_STREAM_ITEMS, __VA_ARGS__)

#elif defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)
/* -------------------------------------------------------------- OpenCL */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GG_DEVICE_FN static inline
#define GG_GLOBAL __global
#define GG_X ((int)get_global_id(0))
#define GG_Y ((int)get_global_id(1))
typedef uchar gg_u8;
#define GG_KERNEL2(name, P, p, T0, b0, T1, b1) \
    __kernel void name(int gg_nx, int gg_ny, P p, __global T0 *restrict b0, \
                       __global T1 *restrict b1)
#define GG_KERNEL3(name, P, p, T0, b0, T1, b1, T2, b2) \
    __kernel void name(int gg_nx, int gg_ny, P p, __global T0 *restrict b0, \
                       __global T1 *restrict b1, __global T2 *restrict b2)
#define GG_KERNEL2_CPU_OWN GG_KERNEL2
#define GG_KERNEL3_CPU_OWN GG_KERNEL3
#define GG_KERNEL4(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3) \
    __kernel void name(int gg_nx, int gg_ny, P p, __global T0 *restrict b0, \
                       __global T1 *restrict b1, __global T2 *restrict b2, \
                       __global T3 *restrict b3)
#define GG_KERNEL5(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4) \
    __kernel void name(int gg_nx, int gg_ny, P p, __global T0 *restrict b0, \
                       __global T1 *restrict b1, __global T2 *restrict b2, \
                       __global T3 *restrict b3, __global T4 *restrict b4)
#define GG_KERNEL6(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5) \
    __kernel void name(int gg_nx, int gg_ny, P p, __global T0 *restrict b0, \
                       __global T1 *restrict b1, __global T2 *restrict b2, \
                       __global T3 *restrict b3, __global T4 *restrict b4, \
                       __global T5 *restrict b5)

#else
/* ------------------------------------------------- CPU (C + OpenMP loop) */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#define GG_DEVICE_FN static inline
#define GG_GLOBAL
#define GG_X gg_x
#define GG_Y gg_y
typedef unsigned char gg_u8;
/* The body becomes name##_item(x, y, ...); name##_cpu runs it over the
 * grid, rows spread over OpenMP threads.  Where the loop keeps the params
 * and buffer pointers is a kernel file's choice, GG_CPU_PARAMS before its
 * kernels: SHARED (default), one copy the threads read through the
 * parallel region's pointer; LOCAL, each thread its own copy, whose
 * fields stay in registers, so the compiler hoists what depends on the
 * row only (integer divisions of the row index, a window's ring row) out
 * of the loop over x.  Measured per file (bench/RESULTS.md, 2026-11-28):
 * LOCAL takes a fifth less CPU for the cross-correlation kernels and a
 * third more for PtSel's. */
#ifndef GG_CPU_PARAMS
#define GG_CPU_PARAMS SHARED
#endif
#define GG_CPU_ROWS_(call) \
    for (int gg_y = 0; gg_y < ny; gg_y++) \
        for (int gg_x = 0; gg_x < nx; gg_x++) call;
#define GG_CPU_LOOP_SHARED_(P, decl, call) \
    { \
        const P p_ = *(const P *)pp; \
        decl \
        _Pragma("omp parallel for schedule(static)") GG_CPU_ROWS_(call) \
    }
#define GG_CPU_LOOP_LOCAL_(P, decl, call) \
    _Pragma("omp parallel") \
    { \
        const P p_ = *(const P *)pp; \
        decl \
        _Pragma("omp for schedule(static)") GG_CPU_ROWS_(call) \
    }
#define GG_CPU_LOOP_CAT_(mode) GG_CPU_LOOP_##mode##_
#define GG_CPU_LOOP_SEL_(mode) GG_CPU_LOOP_CAT_(mode)
#define GG_CPU_LOOP_ GG_CPU_LOOP_SEL_(GG_CPU_PARAMS)
#define GG_CPU_ITEM2_(name, P, p, T0, b0, T1, b1) \
    static void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, P p, T0 *b0, T1 *b1)
#define GG_KERNEL2(name, P, p, T0, b0, T1, b1) \
    GG_CPU_ITEM2_(name, P, p, T0, b0, T1, b1); \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs) \
    { \
        GG_CPU_LOOP_(P, T0 *const b0_ = (T0 *)bufs[0]; T1 *const b1_ = (T1 *)bufs[1];, \
                     name##_item(gg_x, gg_y, nx, ny, p_, b0_, b1_)) \
    } \
    GG_CPU_ITEM2_(name, P, p, T0, b0, T1, b1)
#define GG_CPU_ITEM3_(name, P, p, T0, b0, T1, b1, T2, b2) \
    static void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, P p, T0 *b0, T1 *b1, T2 *b2)
#define GG_KERNEL3(name, P, p, T0, b0, T1, b1, T2, b2) \
    GG_CPU_ITEM3_(name, P, p, T0, b0, T1, b1, T2, b2); \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs) \
    { \
        GG_CPU_LOOP_(P, T0 *const b0_ = (T0 *)bufs[0]; T1 *const b1_ = (T1 *)bufs[1]; T2 *const b2_ = (T2 *)bufs[2];, \
                     name##_item(gg_x, gg_y, nx, ny, p_, b0_, b1_, b2_)) \
    } \
    GG_CPU_ITEM3_(name, P, p, T0, b0, T1, b1, T2, b2)
/* A kernel whose CPU loop is written by hand next to it (the body stays
 * the GPUs' work item; the CPU form must compute the same values in the
 * same order: a column walk turned into a row walk over many columns at
 * once, for instance).  GG_KERNEL_CPU marks the code only the CPU builds. */
#define GG_KERNEL_CPU 1
#define GG_KERNEL2_CPU_OWN(name, P, p, T0, b0, T1, b1) \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs); \
    __attribute__((unused)) GG_CPU_ITEM2_(name, P, p, T0, b0, T1, b1)
#define GG_KERNEL3_CPU_OWN(name, P, p, T0, b0, T1, b1, T2, b2) \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs); \
    __attribute__((unused)) GG_CPU_ITEM3_(name, P, p, T0, b0, T1, b1, T2, b2)
#define GG_CPU_ITEM4_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3) \
    static void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, P p, T0 *b0, T1 *b1, T2 *b2, T3 *b3)
#define GG_KERNEL4(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3) \
    GG_CPU_ITEM4_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3); \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs) \
    { \
        GG_CPU_LOOP_(P, T0 *const b0_ = (T0 *)bufs[0]; T1 *const b1_ = (T1 *)bufs[1]; T2 *const b2_ = (T2 *)bufs[2]; T3 *const b3_ = (T3 *)bufs[3];, \
                     name##_item(gg_x, gg_y, nx, ny, p_, b0_, b1_, b2_, b3_)) \
    } \
    GG_CPU_ITEM4_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3)
#define GG_CPU_ITEM5_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4) \
    static void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, P p, T0 *b0, T1 *b1, T2 *b2, T3 *b3, T4 *b4)
#define GG_KERNEL5(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4) \
    GG_CPU_ITEM5_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4); \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs) \
    { \
        GG_CPU_LOOP_(P, T0 *const b0_ = (T0 *)bufs[0]; T1 *const b1_ = (T1 *)bufs[1]; T2 *const b2_ = (T2 *)bufs[2]; T3 *const b3_ = (T3 *)bufs[3]; T4 *const b4_ = (T4 *)bufs[4];, \
                     name##_item(gg_x, gg_y, nx, ny, p_, b0_, b1_, b2_, b3_, b4_)) \
    } \
    GG_CPU_ITEM5_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4)
#define GG_CPU_ITEM6_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5) \
    static void name##_item(int gg_x, int gg_y, int gg_nx, int gg_ny, P p, T0 *b0, T1 *b1, T2 *b2, T3 *b3, T4 *b4, T5 *b5)
#define GG_KERNEL6(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5) \
    GG_CPU_ITEM6_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5); \
    static void name##_cpu(int nx, int ny, const void *pp, void *const *bufs) \
    { \
        GG_CPU_LOOP_(P, T0 *const b0_ = (T0 *)bufs[0]; T1 *const b1_ = (T1 *)bufs[1]; T2 *const b2_ = (T2 *)bufs[2]; T3 *const b3_ = (T3 *)bufs[3]; T4 *const b4_ = (T4 *)bufs[4]; T5 *const b5_ = (T5 *)bufs[5];, \
                     name##_item(gg_x, gg_y, nx, ny, p_, b0_, b1_, b2_, b3_, b4_, b5_)) \
    } \
    GG_CPU_ITEM6_(name, P, p, T0, b0, T1, b1, T2, b2, T3, b3, T4, b4, T5, b5)
#endif

#if !defined(__CUDACC__)
/* Only CUDA coarsens streaming kernels; elsewhere they are plain kernels. */
#define GG_STREAM_KERNEL2 GG_KERNEL2
#define GG_STREAM_KERNEL3 GG_KERNEL3
#define GG_STREAM_KERNEL4 GG_KERNEL4
#endif

/* A float sample counts when finite and not the nodata value. */
GG_DEVICE_FN int gg_valid(float v, int has_nodata, float nodata)
{
    return isfinite(v) && !(has_nodata && v == nodata);
}

/* A complex sample counts when both parts are finite and the real part is
 * not the nodata value (GDAL applies a complex band's nodata to the real
 * part). */
GG_DEVICE_FN int gg_cvalid(float re, float im, int has_nodata, float nodata)
{
    return isfinite(re) && isfinite(im) && !(has_nodata && re == nodata);
}

#endif /* GG_KERNEL_DIALECT_H */
