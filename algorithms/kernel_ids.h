/* kernel_ids.h -- kernel ids for gg_backend.launch, from kernels.def. */
#ifndef GG_KERNEL_IDS_H
#define GG_KERNEL_IDS_H
enum gg_kernel_id {
#define GG_KERNEL_DEF(id, fn, P, nbuf) id,
#include "kernels.def"
#undef GG_KERNEL_DEF
    GG_K_COUNT
};
#endif
