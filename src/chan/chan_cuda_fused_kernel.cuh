/* The fused channelizer kernel (algorithm in chan_cuda_fused.cuh) as a template on the input
 * format, R = K/D and log2 K: with K, D, the tile J and the block size T known at compile time
 * every FFT stage is unrolled and all shared-memory offsets are immediates. Each size has its
 * own translation unit (chan_cuda_fused_k*.cu) so that they compile in parallel. */
#ifndef PRX_CHAN_CUDA_FUSED_KERNEL_CUH
#define PRX_CHAN_CUDA_FUSED_KERNEL_CUH

#include "chan_cuda_fused.cuh"

typedef void (*prx_fused_fn)(const prx_kparams);

/* MINB: blocks per multiprocessor for the register cap (1: no cap). VER: 5 (default) folds the D =
 * K/2 sign into the filter's store, has compile-time loop counts and writes each channel's run with
 * J/2 lanes of 16-byte stores; 4 is the previous design (one lane per output, sign and position
 * table in the output loop), kept to measure the change in the same run. */
template <int FMT, int R, int LGK, int MINB, int VER, int OPT>
__global__ void __launch_bounds__(prx_fused_threads(1 << LGK, (1 << LGK) / R), MINB)
    prx_fused_kernel(const prx_kparams p) {
  constexpr int K = 1 << LGK, D = K / R, J = prx_fused_tile(K), T = prx_fused_threads(K, D);
  /* FFT: radix-16 passes while two radix-4 stages remain, then the odd radix-4 stage, then the
   * radix-2 stage of odd log2 K */
  constexpr int LGT = prx_log2(T), N16 = LGK / 4, HAS4 = (LGK / 2) & 1, HAS2 = LGK & 1;
  extern __shared__ float2 V[];
  const int tid = threadIdx.x, jj0 = blockIdx.x * J;
  if (prx_fused_safe<R, J>(p, jj0, D))
    prx_fused_filter<FMT, R, J, true, VER, OPT>(p, V, jj0, tid, T, K);
  else
    prx_fused_filter<FMT, R, J, false, VER, OPT>(p, V, jj0, tid, T, K);
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

/* Blocks per multiprocessor asked of the compiler by the default build. The cap (24 warps
 * where shared memory allows, 80 registers at K <= 1024) is best except at K = 1024,
 * D = K/2, where the filter's two base branches of 32 taps and 32 accumulators each leave too
 * few of the 80 registers for loads in flight: there 2 blocks of 128 registers run 6-10%
 * faster (bench/GPU_NOTES.md, runs 6-7; at K = 128 the cap is 30% faster). */
__host__ __device__ constexpr int prx_fused_default_minb(int K, int R) {
  return K == 1024 && R == 2 ? 1 : prx_fused_min_blocks(K, K / R);
}

/* Variants: 0 the default (every input format): v5, prx_fused_default_minb;
 *   1 v5 with the cap everywhere (the first v5 default), 2 v4 with the cap (the previous
 *   design), 3 v5 without the cap, 4 v5 with PRX_OPT_UNROLL, at most 128 registers.
 * 1..4 are built for cf32 input only (benchmark, tests). */
template <int FMT, int R, int LGK> prx_fused_fn prx_fused_pick_v(int variant) {
  constexpr int K = 1 << LGK, MB = prx_fused_min_blocks(K, K / R);
  constexpr int MB2 = prx_fused_threads(K, K / R) <= 256 ? 2 : 1; /* 128 registers */
  if (variant && FMT != KF_CF32) return NULL;
  switch (variant) {
  case 0: return prx_fused_kernel<FMT, R, LGK, prx_fused_default_minb(K, R), 5, 0>;
  case 1: return prx_fused_kernel<FMT, R, LGK, MB, 5, 0>;
  case 2: return prx_fused_kernel<FMT, R, LGK, MB, 4, 0>;
  case 3: return prx_fused_kernel<FMT, R, LGK, 1, 5, 0>;
  case 4: return prx_fused_kernel<FMT, R, LGK, MB2, 5, PRX_OPT_UNROLL>;
  default: return NULL;
  }
}
template <int FMT, int LGK> prx_fused_fn prx_fused_pick_r(int R, int variant) {
  return R == 1 ? prx_fused_pick_v<FMT, 1, LGK>(variant) : prx_fused_pick_v<FMT, 2, LGK>(variant);
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
