/* end of gg_param_sizes (see param_sizes_begin.cl) */
#undef GG_KERNEL_DEF
}
