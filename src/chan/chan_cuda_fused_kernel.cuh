/* The fused channelizer kernel (algorithm in chan_cuda_fused.cuh) as a template on the input
 * format, R = K/D and log2 K: with K, D, the tile J and the block size T known at compile time
 * every FFT stage is unrolled and all shared-memory offsets are immediates. Each size has its
 * own translation unit (chan_cuda_fused_k*.cu) so that they compile in parallel. */
#ifndef PRX_CHAN_CUDA_FUSED_KERNEL_CUH
#define PRX_CHAN_CUDA_FUSED_KERNEL_CUH

#include "chan_cuda_fused.cuh"

typedef void (*prx_fused_fn)(const prx_kparams);

/* what the launcher needs to know of a build besides its function */
typedef struct {
  int T;       /* threads per block */
  int histb;   /* 1: blocks past the tiles write the history update (PRX_OPT_HISTB) */
  int smem;    /* bytes of dynamic shared memory per block (the FFT buffer in its layout) */
  int tma;     /* 1: the tiles leave through the tensor memory accelerator where p.tma is set */
  int persist; /* 1: p.tile_blocks blocks loop over the tiles (PRX_OPT_PERSIST) */
  int align;   /* 1: reads the rotated taps p.taps_rot (PRX_OPT_ALIGN) */
} prx_fused_info;

/* PRX_OPT_TMA's end of a tile (see prx_fused_tma_ok): the last FFT pass into the channel-order
 * staging tile over V, then the copies out, one thread per box of 256 rows. sm_90 and later.
 * The threads that issue the copies wait until they have read the shared memory before V is
 * written again (prx_fused_reuse_sync) and before the block exits (its shared memory may then
 * go to the next block). */
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
template <int FMT, int R, int LGK, int VER, int OPT, int T>
__device__ __forceinline__ void prx_fused_tile_run(const prx_kparams &p, float2 *V, int jj0,
                                                   int tid, bool sync_first) {
  constexpr int K = 1 << LGK, D = K / R, J = prx_fused_tile(K);
  /* PRX_OPT_R4F where the block's shape allows it: the filter does the first radix-4 stage */
  constexpr int R4 = prx_fused_r4_ok<T, K>(R) ? OPT & PRX_OPT_R4F : 0;
  constexpr int OPTF = (OPT & ~PRX_OPT_R4F) | R4;
  /* FFT (the stages left after the filter, of spans 2^LG0 down): radix-16 passes while two
   * radix-4 stages remain, then the odd radix-4 stage, then the radix-2 stage of odd log2 K */
  constexpr int LG0 = R4 ? LGK - 2 : LGK;
  constexpr int LGT = prx_log2(T), N16 = LG0 / 4, HAS4 = (LG0 / 2) & 1, HAS2 = LGK & 1;
  constexpr bool TMA = VER >= 5 && PRX_TMA_ARCH && prx_fused_tma_ok<OPT, LGK, R, T>();
  if (prx_fused_safe<R, J>(p, jj0, D))
    prx_fused_filter<FMT, R, J, true, VER, OPTF>(p, V, jj0, tid, T, K, sync_first);
  else
    prx_fused_filter<FMT, R, J, false, VER, OPTF>(p, V, jj0, tid, T, K, sync_first);
  PRX_UNROLL
  for (int ps = 0; ps < N16; ps++) {
    __syncthreads();
    if constexpr (TMA) {
      if (ps == N16 - 1 && p.tma) { /* the last pass and the output: PRX_OPT_TMA */
        prx_fused_tma_last<J, LGK, T, prx_fused_vs5(K)>(p, V, jj0, tid);
        return;
      }
    }
    prx_fused_pass16<J, VER>(p, V, LGK, LG0 - 4 * ps, tid, LGT);
  }
  if (HAS4) {
    __syncthreads();
    prx_fused_stage<J, VER>(p, V, LGK, LG0 - 4 * N16, 2, tid, LGT);
  }
  if (HAS2) {
    __syncthreads();
    prx_fused_stage<J, VER>(p, V, LGK, 1, 1, tid, LGT);
  }
  __syncthreads();
  if (VER >= 5)
    prx_fused_output5<J, (OPT & PRX_OPT_NATOUT) ? LGK : 0>(p, V, jj0, tid, LGT, prx_fused_vs5(K));
  else
    prx_fused_output<R, J>(p, V, jj0, tid, LGT, K);
}

/* TT: threads per block (prx_fused_threads, or fewer). MINB: blocks per multiprocessor for
 * the register cap (1: no cap). VER: 5 (default) folds the D = K/2 sign into the filter's
 * store, has compile-time loop counts and writes each channel's run with J/2 lanes of 16-byte
 * stores; 4 is the previous design (one lane per output, sign and position table in the output
 * loop), kept to measure the change in the same run. */
template <int FMT, int R, int LGK, int MINB, int VER, int OPT, int TT>
__global__ void __launch_bounds__(TT, MINB)
    prx_fused_kernel(const __grid_constant__ prx_kparams p) {
  constexpr int K = 1 << LGK, J = prx_fused_tile(K), T = TT;
  extern __shared__ __align__(1024) float2 V[]; /* (PRX_OPT_TMA: the copies need 128 bytes) */
  const int tid = threadIdx.x;
  constexpr bool PERSIST = (OPT & PRX_OPT_PERSIST) != 0;
  const int n_tiles = (p.n_out + J - 1) / J, n_tb = PERSIST ? p.tile_blocks : n_tiles;
  if constexpr ((OPT & PRX_OPT_HISTB) != 0 && PERSIST) {
    /* the history update by the tile blocks themselves (blocks past them would start only
     * when one of them ends, in the grid's last moment) */
    if (p.new_hist)
      for (int i = blockIdx.x * T + tid; i < p.Hh; i += n_tb * T) prx_hist_item(p, p.new_hist, i);
  } else if constexpr ((OPT & PRX_OPT_HISTB) != 0) {
    if ((int)blockIdx.x >= n_tb) { /* a history block (see prx_fused_launch) */
      const int nb = gridDim.x - n_tb;
      for (int i = (blockIdx.x - n_tb) * T + tid; i < p.Hh; i += nb * T)
        prx_hist_item(p, p.new_hist, i);
      return;
    }
  }
  if constexpr (PERSIST) {
    for (int t = blockIdx.x; t < n_tiles; t += n_tb)
      prx_fused_tile_run<FMT, R, LGK, VER, OPT, T>(p, V, t * J, tid, t != (int)blockIdx.x);
  } else {
    prx_fused_tile_run<FMT, R, LGK, VER, OPT, T>(p, V, blockIdx.x * J, tid, false);
  }
  if constexpr ((OPT & PRX_OPT_TMA) != 0) prx_fused_tma_drain();
}

/* One build: its kernel, and what the launcher must know of it (from its template arguments). */
template <int FMT, int R, int LGK, int MINB, int VER, int OPT, int TT>
prx_fused_fn prx_fused_build(prx_fused_info *b) {
  static_assert(VER >= 5 || !(OPT & (PRX_OPT_ALIGN | PRX_OPT_BPTR)), "v5 options");
  constexpr int K = 1 << LGK;
  b->T = TT;
  b->histb = (OPT & PRX_OPT_HISTB) != 0;
  b->tma = VER >= 5 && prx_fused_tma_ok<OPT, LGK, R, TT>();
  b->persist = (OPT & PRX_OPT_PERSIST) != 0;
  b->align = VER >= 5 && (OPT & PRX_OPT_ALIGN) != 0;
  b->smem = (int)(prx_fused_tile(K) * prx_fused_vsv<VER>(K) * sizeof(float2));
  return prx_fused_kernel<FMT, R, LGK, MINB, VER, OPT, TT>;
}

/* The builds (measured in bench/GPU_NOTES.md, runs 6-18). The shape of run 10's default
 * (every input format): v5 with the register cap (24 warps per multiprocessor where shared
 * memory allows: 80 registers at K <= 1024), except
 *  - K = 1024, D = K/2, cf32 input: no cap (128 registers, 2 blocks): under 80 registers the
 *    filter's two base branches, 32 taps and 32 accumulators each, leave room for few 8-byte
 *    loads in flight (85.3 against 78.7 Gsps, cf32 -> cf16 94.2 against 91-92; with ci16
 *    input the cap is better, 86-87 against 83, ci16 -> cf16 103-105 against 95; at K = 128
 *    the cap is 25% faster);
 *  - K = 1024, D = K and K = 4096, D = K/2: the branch loop unrolled under a 128-register
 *    bound, the next branch's loads issued while the current one's products run (+12%, +5%;
 *    at K = 1024, D = K/2 the same costs 3-4%).
 * X: options added to every build of that shape. */
template <int FMT, int R, int LGK, int X> prx_fused_fn prx_fused_shape(prx_fused_info *b) {
  constexpr int K = 1 << LGK, T0 = prx_fused_threads(K, K / R), MB = prx_fused_min_blocks(K, K / R);
  constexpr int MB2 = T0 <= 256 ? 2 : 1;             /* 128 registers */
  constexpr int MBP = (X & PRX_OPT_PERSIST) ? 2 : 1; /* (PERSIST: 130 registers unbounded) */
  if constexpr (K == 1024 && R == 2 && FMT == KF_CF32)
    return prx_fused_build<FMT, R, LGK, MBP, 5, X, T0>(b);
  else if constexpr ((K == 1024 && R == 1) || (K == 4096 && R == 2))
    return prx_fused_build<FMT, R, LGK, MB2, 5, PRX_OPT_UNROLL | X, T0>(b);
  else
    return prx_fused_build<FMT, R, LGK, MB, 5, X, T0>(b);
}

/* Default (variant 0): that shape with the FFT's first radix-4 stage in the filter where the
 * block's shape allows it (PRX_OPT_R4F: K = 1024 and 2048; run 11: +1.4% at K = 1024, D = K/2,
 * +5% at D = K), the history update by extra blocks of the launch (PRX_OPT_HISTB: one launch
 * per slice instead of two; neutral in run 16), from K = 1024 computed output rows for
 * all-channel selections (PRX_OPT_NATOUT; run 16: +2.6% at K = 1024, D = K/2, +5.5% at K =
 * 4096, D = K/2, but -4.4% at K = 128, D = K/2), at K = 1024 base-pointer window loads
 * (PRX_OPT_BPTR; runs 23-24: +1.2% and -0.5% at D = K/2 in the calls, -3.3% kernel time in ncu,
 * +2.3-3.0% at D = K; at K = 128 and 4096, D = K/2, -1%) and at K = 4096 aligned window loads
 * (PRX_OPT_ALIGN; runs 21-24: +1-2% at D = K/2, +2.4-2.9% at D = K; -1% at K = 1024), from K
 * = 1024 the output through the tensor memory accelerator (PRX_OPT_TMA: where it applies, K =
 * 1024 and 4096; runs 28-29: +4.6% and +4.5% at K = 1024, D = K, +6.5% and +7.3% at K = 4096,
 * D = K/2) and at D = K/2 with blocks that loop over the tiles (PRX_OPT_PERSIST; run 29 with
 * TMA: K = 1024 +1.4%, kernel time -3%, K = 4096 +9%; alone -5% to -15%), both for cf32 input
 * only; where the output does not allow TMA (prx_fused_launch), variant 16 runs. Variants
 * for the benchmark and tests (cf32 input only; the before/after of each change in one run): 1
 * v5 with the cap everywhere (run 6's default), 2 v4 with the cap (the design before v5), 3 v5
 * without the cap, 4 v5 unrolled under 128 registers, 5 run 10's default (the shape alone), 6
 * runs 11-15's default (R4F), 7 R4F + HISTB, 8 R4F + NATOUT at every size, 9 R4F with the cap
 * everywhere, 10 runs 16-24's default (R4F + HISTB + NATOUT from K = 1024), 11 that with ALIGN
 * at every size, 12 that with BPTR at every size, 13 runs 25-29's default with PRX_OPT_TMA, 14
 * with TMA and PRX_OPT_PERSIST, 15 with PERSIST alone, 16 runs 25-29's default (BPTR at K =
 * 1024, ALIGN at 4096). The options measured and not adopted were
 * removed (runs 10-15 after run 18, runs 20-26 after runs 24 and 26): bench/GPU_NOTES.md. Fills *b
 * from the chosen build (T: prx_fused_threads; the TT parameter allows fewer: 128-thread blocks at
 * K = 1024, D = K/2 were 7% slower). */
template <int FMT, int R, int LGK> prx_fused_fn prx_fused_pick_v(int variant, prx_fused_info *b) {
  constexpr int K = 1 << LGK, T0 = prx_fused_threads(K, K / R), MB = prx_fused_min_blocks(K, K / R);
  constexpr int MB2 = T0 <= 256 ? 2 : 1; /* 128 registers */
  constexpr int U = PRX_OPT_UNROLL, F = PRX_OPT_R4F, HB = PRX_OPT_HISTB, NO = PRX_OPT_NATOUT;
  constexpr int AL = PRX_OPT_ALIGN, BP = PRX_OPT_BPTR;
  constexpr int TM = PRX_OPT_TMA, PE = PRX_OPT_PERSIST;
  constexpr int PREV = F | HB | (K >= 1024 ? NO : 0);                     /* runs 16-24's default */
  constexpr int D25 = PREV | (K == 1024 ? BP : 0) | (K == 4096 ? AL : 0); /* runs 25-29's */
  constexpr int DEF = D25 | (K >= 1024 ? TM : 0) | (K >= 1024 && R == 2 ? PE : 0); /* run 30 */
  /* the variants are built for cf32 input only (if constexpr: no instances for the others) */
  if constexpr (FMT != KF_CF32) { /* (TMA and PERSIST: cf32 only; ci16 -10% in run 30) */
    return variant ? NULL : prx_fused_shape<FMT, R, LGK, D25>(b);
  } else {
    switch (variant) {
    case 0: return prx_fused_shape<FMT, R, LGK, DEF>(b);
    case 1: return prx_fused_build<FMT, R, LGK, MB, 5, 0, T0>(b);
    case 2: return prx_fused_build<FMT, R, LGK, MB, 4, 0, T0>(b);
    case 3: return prx_fused_build<FMT, R, LGK, 1, 5, 0, T0>(b);
    case 4: return prx_fused_build<FMT, R, LGK, MB2, 5, U, T0>(b);
    case 5: return prx_fused_shape<FMT, R, LGK, 0>(b);
    case 6: return prx_fused_shape<FMT, R, LGK, F>(b);
    case 7: return prx_fused_shape<FMT, R, LGK, F | HB>(b);
    case 8: return prx_fused_shape<FMT, R, LGK, F | NO>(b);
    case 9: return prx_fused_build<FMT, R, LGK, MB, 5, F, T0>(b);
    case 10: return prx_fused_shape<FMT, R, LGK, PREV>(b);
    case 11: return prx_fused_shape<FMT, R, LGK, PREV | AL>(b);
    case 12: return prx_fused_shape<FMT, R, LGK, PREV | BP>(b);
    case 13: return prx_fused_shape<FMT, R, LGK, D25 | TM>(b);
    case 14: return prx_fused_shape<FMT, R, LGK, D25 | TM | PE>(b);
    case 15: return prx_fused_shape<FMT, R, LGK, D25 | PE>(b);
    case 16: return prx_fused_shape<FMT, R, LGK, D25>(b);
    default: return NULL;
    }
  }
}
template <int FMT, int LGK> prx_fused_fn prx_fused_pick_r(int R, int variant, prx_fused_info *b) {
  return R == 1 ? prx_fused_pick_v<FMT, 1, LGK>(variant, b)
                : prx_fused_pick_v<FMT, 2, LGK>(variant, b);
}

template <int LGK> prx_fused_fn prx_fused_pick_t(int R, int fmt, int variant, prx_fused_info *b) {
  switch (fmt) {
  case KF_CF32: return prx_fused_pick_r<KF_CF32, LGK>(R, variant, b);
  case KF_CI16: return prx_fused_pick_r<KF_CI16, LGK>(R, variant, b);
  case KF_CI8: return prx_fused_pick_r<KF_CI8, LGK>(R, variant, b);
  case KF_CU8: return prx_fused_pick_r<KF_CU8, LGK>(R, variant, b);
  default: return NULL;
  }
}

/* the instances for one K, reached through prx_fused_pick_<log2 K>(R, fmt, variant) */
#define PRX_FUSED_INSTANTIATE(LGK)                                                                 \
  prx_fused_fn prx_fused_pick_##LGK(int R, int fmt, int variant, prx_fused_info *b) {              \
    return prx_fused_pick_t<LGK>(R, fmt, variant, b);                                              \
  }

#endif
