/* The fused channelizer kernel (algorithm in chan_cuda_fused.cuh) as a template on its design
 * key: input format, R = K/D, log2 K, and whether the tiles leave through the tensor memory
 * accelerator. The key's design is prx_fused_select's answer (chan_cuda_policy.h), so the
 * kernel instances are exactly the designs the selector can return. With K, D, the tile J
 * and the block size T known at compile time every FFT stage is unrolled and every
 * shared-memory offset is an immediate. Each K has its own translation unit
 * (chan_cuda_fused_k*.cu) so that they compile in parallel. */
#ifndef PRX_CHAN_CUDA_FUSED_KERNEL_CUH
#define PRX_CHAN_CUDA_FUSED_KERNEL_CUH

#include "chan_cuda_fused.cuh"

typedef void (*prx_fused_fn)(const prx_kparams);

/* The design of the instance (FMT, R, LGK, TILE_OUT): the selector's answer for a cf32 output
 * that the TMA can take (TILE_OUT) or for one it cannot (a channel subset, cf16, rows off 16
 * bytes: the same design with thread stores, which the selector also gives every output of
 * the shapes where the TMA does not apply). */
template <int FMT, int R, int LGK, bool TILE_OUT>
__host__ __device__ constexpr prx_fused_policy prx_fused_design() {
  return prx_fused_select(1 << LGK, (1 << LGK) / R, FMT, PRX_CF32,
                          TILE_OUT ? PRX_OUT_ALL_IN_ORDER | PRX_OUT_ROWS_16B | PRX_OUT_TMA : 0);
}

/* The end of a tile with tile_copy_out: the last FFT pass into the channel-order
 * staging tile over V, then the copies out, one thread per box of 256 rows. sm_90 and later.
 * The threads that issue the copies wait until they have read the shared memory before V is
 * written again (prx_fused_reuse_sync, persistent designs) and before the block exits (its shared
 * memory may then go to the next block). */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define PRX_TMA_ARCH 1
#else
#define PRX_TMA_ARCH 0
#endif
template <int J, int LGK, int T, int VS>
__device__ __forceinline__ void prx_fused_tma_last(const prx_kparams &p, float2 *V, int jj0,
                                                   int tid) {
  float2 a[prx_fused_tma_cnt(J, LGK, T)][4][4];
  prx_fused_tma_load<J, LGK, T, VS>(V, tid, a);
  __syncthreads(); /* the staging tile overlaps the points other threads are still reading */
  prx_fused_tma_store<J, LGK, T>(V, tid, a);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* visible to the copy engine */
  __syncthreads();
  if (tid < (1 << LGK) / 256) {
    const unsigned sa = (unsigned)__cvta_generic_to_shared(V + tid * 256 * J);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :
                 : "l"((unsigned long long)&p.tmap), "r"(jj0), "r"(tid * 256), "r"(sa)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
#endif
}

/* One tile (the J outputs from jj0) of the kernel below: filter, FFT, output. */
template <int FMT, int R, int LGK, bool TILE_OUT>
__device__ __forceinline__ void prx_fused_tile_run(const prx_kparams &p, float2 *V, int jj0,
                                                   int tid, bool sync_first) {
  constexpr prx_fused_policy pol = prx_fused_design<FMT, R, LGK, TILE_OUT>();
  constexpr int K = 1 << LGK, D = K / R, J = pol.tile, T = pol.threads;
  /* FFT (the stages left after the filter, of spans 2^LG0 down): radix-16 passes while two
   * radix-4 stages remain, then the odd radix-4 stage, then the radix-2 stage of odd log2 K */
  constexpr int LG0 = pol.fold_first_stage ? LGK - 2 : LGK;
  constexpr int LGT = prx_fused_log2(T), N16 = LG0 / 4, HAS4 = (LG0 / 2) & 1, HAS2 = LGK & 1;
  constexpr bool TMA = pol.tile_copy_out && PRX_TMA_ARCH;
  constexpr bool FOLD = pol.fold_first_stage != 0, AL = pol.aligned_window != 0;
  constexpr bool BP = pol.window_base_ptr != 0, UNROLL = pol.unroll_branches != 0;
  if (prx_fused_safe<R, J>(p, jj0, D))
    prx_fused_filter<FMT, R, J, true, FOLD, AL, BP, UNROLL>(p, V, jj0, tid, T, K, sync_first);
  else
    prx_fused_filter<FMT, R, J, false, FOLD, AL, BP, UNROLL>(p, V, jj0, tid, T, K, sync_first);
  PRX_UNROLL
  for (int ps = 0; ps < N16; ps++) {
    __syncthreads();
    if constexpr (TMA) {
      if (ps == N16 - 1 && p.tma) { /* the last pass and the output through the TMA */
        prx_fused_tma_last<J, LGK, T, prx_fused_vs(K)>(p, V, jj0, tid);
        return;
      }
    }
    prx_fused_pass16<J>(p, V, LGK, LG0 - 4 * ps, tid, LGT);
  }
  if (HAS4) {
    __syncthreads();
    prx_fused_stage<J>(p, V, LGK, LG0 - 4 * N16, 2, tid, LGT);
  }
  if (HAS2) {
    __syncthreads();
    prx_fused_stage<J>(p, V, LGK, 1, 1, tid, LGT);
  }
  __syncthreads();
  prx_fused_output<J, pol.computed_rows ? LGK : 0>(p, V, jj0, tid, LGT, prx_fused_vs(K));
}

/* The fused channelizer: raw input in, the selected channels out, one pass over memory.
 *  computes: outputs jj0 .. jj0 + J - 1 of every selected channel per tile (J = pol.tile):
 *    polyphase filter of the K branches from one window of input samples per thread, K-point
 *    backward FFT of the J branch vectors in shared memory, channel-major store (or the TMA
 *    copy of a channel-order tile); with hist_in_kernel also the stream's history update.
 *  grid: one block per tile, plus up to 64 blocks for the history update, which the block
 *    scheduler starts last; persistent designs: p.tile_blocks blocks (as many as the device
 *    holds at once), block b taking tiles b, b + tile_blocks, ..., and the history update.
 *  block: T = pol.threads threads (one per base branch r < D, D/T branches each).
 *  shared memory: J vectors of prx_fused_vs(K) complex values (dynamic, 1 KB aligned for the
 *    TMA): the FFT buffer, and with tile_copy_out the channel-order staging tile over it.
 *  why: the filter's window and the FFT stay on chip, so memory traffic is the input once and
 *    the selected outputs once (24 bytes per cf32 sample at D = K/2, all channels), against 88
 *    for filter kernel + cuFFT + transpose; K and D at compile time make every FFT index an
 *    immediate. The design choices and their measurements: chan_cuda_policy.h. */
template <int FMT, int R, int LGK, bool TILE_OUT>
__device__ __forceinline__ void prx_fused_body(const prx_kparams &p) {
  constexpr prx_fused_policy pol = prx_fused_design<FMT, R, LGK, TILE_OUT>();
  constexpr int J = pol.tile, T = pol.threads;
  extern __shared__ __align__(1024) float2 V[]; /* (the TMA copies need 128 bytes) */
  const int tid = threadIdx.x;
  constexpr bool PERSIST = pol.persistent != 0;
  const int n_tiles = (p.n_out + J - 1) / J, n_tb = PERSIST ? p.tile_blocks : n_tiles;
  if constexpr (pol.hist_in_kernel && PERSIST) {
    /* the history update by the tile blocks themselves (blocks past them would start only
     * when one of them ends, in the grid's last moment) */
    if (p.new_hist)
      for (int i = blockIdx.x * T + tid; i < p.Hh; i += n_tb * T) prx_hist_item(p, p.new_hist, i);
  } else if constexpr (pol.hist_in_kernel) {
    if ((int)blockIdx.x >= n_tb) { /* a history block (see prx_fused_launch) */
      const int nb = gridDim.x - n_tb;
      for (int i = (blockIdx.x - n_tb) * T + tid; i < p.Hh; i += nb * T)
        prx_hist_item(p, p.new_hist, i);
      return;
    }
  }
  if constexpr (PERSIST) {
    for (int t = blockIdx.x; t < n_tiles; t += n_tb)
      prx_fused_tile_run<FMT, R, LGK, TILE_OUT>(p, V, t * J, tid, t != (int)blockIdx.x);
  } else {
    prx_fused_tile_run<FMT, R, LGK, TILE_OUT>(p, V, blockIdx.x * J, tid, false);
  }
  if constexpr (pol.tile_copy_out) prx_fused_tma_drain();
}

/* The kernel (see prx_fused_body). The TMA designs (TILE_OUT) are built for sm_90 and later
 * only: the selector chooses them where the device has the TMA (PRX_OUT_TMA), so their
 * instances in the code of older architectures are empty. */
template <int FMT, int R, int LGK, bool TILE_OUT>
__global__ void __launch_bounds__(prx_fused_design<FMT, R, LGK, TILE_OUT>().threads,
                                  prx_fused_design<FMT, R, LGK, TILE_OUT>().min_blocks)
    prx_fused_kernel(const __grid_constant__ prx_kparams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  if constexpr (TILE_OUT)
    __trap();
  else
#endif
    prx_fused_body<FMT, R, LGK, TILE_OUT>(p);
}

/* The instance of the design key (R = K/D, input format, tile_out = the design's
 * tile_copy_out); NULL where the selector has no such design. */
template <int FMT, int R, int LGK> prx_fused_fn prx_fused_pick_r(int tile_out) {
  if constexpr (prx_fused_design<FMT, R, LGK, true>().tile_copy_out) {
    if (tile_out) return prx_fused_kernel<FMT, R, LGK, true>;
  }
  return tile_out ? NULL : prx_fused_kernel<FMT, R, LGK, false>;
}

template <int LGK> prx_fused_fn prx_fused_pick_t(int R, int fmt, int tile_out) {
  if (R != 1 && R != 2) return NULL;
  switch (fmt) {
  case KF_CF32:
    return R == 1 ? prx_fused_pick_r<KF_CF32, 1, LGK>(tile_out)
                  : prx_fused_pick_r<KF_CF32, 2, LGK>(tile_out);
  case KF_CI16:
    return R == 1 ? prx_fused_pick_r<KF_CI16, 1, LGK>(tile_out)
                  : prx_fused_pick_r<KF_CI16, 2, LGK>(tile_out);
  case KF_CI8:
    return R == 1 ? prx_fused_pick_r<KF_CI8, 1, LGK>(tile_out)
                  : prx_fused_pick_r<KF_CI8, 2, LGK>(tile_out);
  case KF_CU8:
    return R == 1 ? prx_fused_pick_r<KF_CU8, 1, LGK>(tile_out)
                  : prx_fused_pick_r<KF_CU8, 2, LGK>(tile_out);
  default: return NULL;
  }
}

/* the instances for one K, reached through prx_fused_pick_<log2 K>(R, fmt, tile_out) */
#define PRX_FUSED_INSTANTIATE(LGK)                                                                 \
  prx_fused_fn prx_fused_pick_##LGK(int R, int fmt, int tile_out) {                                \
    return prx_fused_pick_t<LGK>(R, fmt, tile_out);                                                \
  }

#endif
