/* The fused channelizer kernel (algorithm in chan_cuda_fused.cuh) as a template on the input
 * format, R = K/D and log2 K: with K, D, the tile J and the block size T known at compile time
 * every FFT stage is unrolled and all shared-memory offsets are immediates. Each size has its
 * own translation unit (chan_cuda_fused_k*.cu) so that they compile in parallel. */
#ifndef PRX_CHAN_CUDA_FUSED_KERNEL_CUH
#define PRX_CHAN_CUDA_FUSED_KERNEL_CUH

#include "chan_cuda_fused.cuh"

typedef void (*prx_fused_fn)(const prx_kparams);

/* MINB: blocks per multiprocessor for the register cap (1: no cap, the variant kept to
 * measure what the cap brings). VER: 5 (default) folds the D = K/2 sign into the filter's
 * store, has compile-time loop counts and writes each channel's run with J/2 lanes of 16-byte
 * stores; 4 is the previous design (one lane per output, sign and position table in the
 * output loop), kept to measure the change in the same run. */
template <int FMT, int R, int LGK, int MINB, int VER>
__global__ void __launch_bounds__(prx_fused_threads(1 << LGK, (1 << LGK) / R), MINB)
    prx_fused_kernel(const prx_kparams p) {
  constexpr int K = 1 << LGK, D = K / R, J = prx_fused_tile(K), T = prx_fused_threads(K, D);
  /* FFT: radix-16 passes while two radix-4 stages remain, then the odd radix-4 stage, then the
   * radix-2 stage of odd log2 K */
  constexpr int LGT = prx_log2(T), N16 = LGK / 4, HAS4 = (LGK / 2) & 1, HAS2 = LGK & 1;
  extern __shared__ float2 V[];
  const int tid = threadIdx.x, jj0 = blockIdx.x * J;
  if (prx_fused_safe<R, J>(p, jj0, D))
    prx_fused_filter<FMT, R, J, true, VER>(p, V, jj0, tid, T, K);
  else
    prx_fused_filter<FMT, R, J, false, VER>(p, V, jj0, tid, T, K);
  PRX_UNROLL
  for (int ps = 0; ps < N16; ps++) {
    __syncthreads();
    prx_fused_pass16<J, VER>(p, V, LGK, LGK - 4 * ps, tid, LGT);
  }
  if (HAS4) {
    __syncthreads();
    prx_fused_stage<J, VER>(p, V, LGK, LGK - 4 * N16, 2, tid, LGT);
  }
  if (HAS2) {
    __syncthreads();
    prx_fused_stage<J, VER>(p, V, LGK, 1, 1, tid, LGT);
  }
  __syncthreads();
  if (VER >= 5)
    prx_fused_output5<J>(p, V, jj0, tid, LGT, prx_fused_vs5(K));
  else
    prx_fused_output<R, J>(p, V, jj0, tid, LGT, K);
}

/* variant 0: v5 with the register cap (the default, every format); 1: v5 without the cap;
 * 2: v4 with the cap (the previous default); 1 and 2 for cf32 input only (benchmark) */
template <int FMT, int LGK> prx_fused_fn prx_fused_pick_r(int R, int variant) {
  constexpr int K = 1 << LGK;
  if (variant && FMT != KF_CF32) return NULL;
  if (R == 1) {
    if (variant == 1) return prx_fused_kernel<FMT, 1, LGK, 1, 5>;
    if (variant == 2) return prx_fused_kernel<FMT, 1, LGK, prx_fused_min_blocks(K, K), 4>;
    return prx_fused_kernel<FMT, 1, LGK, prx_fused_min_blocks(K, K), 5>;
  }
  if (variant == 1) return prx_fused_kernel<FMT, 2, LGK, 1, 5>;
  if (variant == 2) return prx_fused_kernel<FMT, 2, LGK, prx_fused_min_blocks(K, K / 2), 4>;
  return prx_fused_kernel<FMT, 2, LGK, prx_fused_min_blocks(K, K / 2), 5>;
}

template <int LGK> prx_fused_fn prx_fused_pick_t(int R, int fmt, int variant) {
  switch (fmt) {
  case KF_CF32: return prx_fused_pick_r<KF_CF32, LGK>(R, variant);
  case KF_CI16: return prx_fused_pick_r<KF_CI16, LGK>(R, variant);
  case KF_CI8: return prx_fused_pick_r<KF_CI8, LGK>(R, variant);
  case KF_CU8: return prx_fused_pick_r<KF_CU8, LGK>(R, variant);
  default: return NULL;
  }
}

/* the instances for one K, reached through prx_fused_pick_<log2 K>(R, fmt, variant) */
#define PRX_FUSED_INSTANTIATE(LGK)                                                                 \
  prx_fused_fn prx_fused_pick_##LGK(int R, int fmt, int variant) {                                 \
    return prx_fused_pick_t<LGK>(R, fmt, variant);                                                 \
  }

#endif
