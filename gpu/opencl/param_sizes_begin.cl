/*
 * param_sizes_begin.cl / param_sizes_end.cl -- embedded around
 * algorithms/kernels.def, they make a kernel that reports the size of each
 * kernel's params struct as the device compiler lays it out (kernels.def
 * order).  clSetKernelArg need not check the size of a struct argument
 * (PoCL does not), so the backend compares these with the sizes the host
 * passes before a launch.
 */
__kernel void gg_param_sizes(__global int *out)
{
    int i = 0;
#define GG_KERNEL_DEF(id, fn, P, nbuf) out[i++] = (int)sizeof(P);
