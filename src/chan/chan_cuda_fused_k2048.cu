/* Fused kernel instances for K = 2048 (see chan_cuda_fused_kernel.cuh). */
#include "chan_cuda_fused_kernel.cuh"

PRX_FUSED_INSTANTIATE(11)
