/*
 * kernels.h -- all kernel bodies, for the backends that compile them from
 * source (CUDA: gpu/cuda/kernels.cu; CPU: gpu/cpu/cpu_kernels.c).  OpenCL
 * gets the same files concatenated at build time (CMakeLists.txt,
 * GG_KERNEL_SOURCES), in this order.
 */
#ifndef GG_KERNELS_H
#define GG_KERNELS_H
#include "../gpu/kernel_dialect.h"
#include "sar/sar_params.h"
#include "sar/sar_kernels.h"
#include "insar/ptsel_params.h"
#include "insar/ptsel_kernels.h"
#include "insar/coherence_params.h"
#include "insar/coherence_kernels.h"
#include "radar/fmcw_params.h"
#include "radar/fmcw_kernels.h"
#include "radar/mrr2_params.h"
#include "radar/mrr2_kernels.h"
#include "ortho/ortho_params.h"
#include "ortho/ortho_kernels.h"
#include "coreg/coreg_params.h"
#include "coreg/coreg_device.h"
#include "coreg/coreg_kernels.h"
#endif
