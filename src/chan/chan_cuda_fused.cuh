/* The fused channelizer tile (power-of-two K, 64 <= K <= 4096, at most PRX_FUSED_P taps per
 * branch): one thread block computes J consecutive outputs of every channel in one pass over
 * global memory: raw input in, selected channels out.
 *
 *  1. filter: thread tid owns base branch r (r < D, stepping by T) and the R = K/D branches
 *     r + cD. Branch r + cD at output jj reads u[jj - c - pR] with u[q] = x(base + qD - r), so
 *     all R branches and all J outputs share one window of J + (P-1)R + (R-1) samples: each is
 *     loaded once (converted from the raw format on load, coalesced across r) and used in up to
 *     P*R multiply-adds held in registers. Results go to the shared buffer V[jl][r].
 *     At D = K/2 the (-1)^(kj) sign of the definition is folded into this store.
 *  2. FFT: an in-place decimation-in-frequency FFT of the J vectors in shared memory:
 *     radix-16 passes (two radix-4 stages per round trip through shared memory), then a
 *     radix-4 and a radix-2 stage where log2 K needs them, one barrier per pass. Each thread
 *     keeps the twiddles of its butterfly across the J vectors. Results stay in
 *     digit-reversed order; the host gives each selected channel's position (p.otab).
 *  3. output: each selected channel's J consecutive outputs are written as one contiguous run
 *     (channel-major), cf32 or cf16; or, where the design has tile_copy_out, the last FFT
 *     pass writes the tile in channel order and the tensor memory accelerator copies it out.
 *
 * Shared-memory layout: element e of vector jl is at jl * VS + e + (e >> 4): one pad slot
 * every 16 elements keeps the strided stages free of bank conflicts (prx_pad), and the vector
 * stride VS = prx_fused_vs(K) spreads the output lanes over the banks.
 *
 * The design choices named here (fold_first_stage, aligned_window, ...) are the fields of
 * prx_fused_policy (chan_cuda_policy.h), passed down as template arguments. */
#ifndef PRX_CHAN_CUDA_FUSED_CUH
#define PRX_CHAN_CUDA_FUSED_CUH

#include "chan_cuda_kernels.cuh"
#include "chan_cuda_policy.h"

#include <string.h>

/* full unrolling in the device pass (the host pass, for emulation, needs none) */
#ifdef __CUDA_ARCH__
#define PRX_UNROLL _Pragma("unroll")
#else
#define PRX_UNROLL
#endif

__host__ __device__ __forceinline__ int prx_pad(int e) { return e + (e >> 4); }

__host__ __device__ __forceinline__ float2 cadd(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__host__ __device__ __forceinline__ float2 csub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__host__ __device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x));
}
/* i * a */
__host__ __device__ __forceinline__ float2 cmuli(float2 a) { return make_float2(-a.y, a.x); }

/* the channel at FFT position pos (the inverse of the host's fused_position: radix-4 stages,
 * radix-2 last when log2 K is odd; the position's digits are the channel's, reversed) */
template <int LGK> __host__ __device__ __forceinline__ int prx_fused_chan_of_pos(int pos) {
  constexpr int NS = LGK / 2 + (LGK & 1);
  int k = 0, lg_mul = 0, lg_span = LGK;
  PRX_UNROLL
  for (int s = 0; s < NS; s++) {
    const int lgr = (s == NS - 1 && (LGK & 1)) ? 1 : 2;
    lg_span -= lgr;
    k |= ((pos >> lg_span) & ((1 << lgr) - 1)) << lg_mul;
    lg_mul += lgr;
  }
  return k;
}

/* fold_first_stage (blocks of T = K/4 threads, R = 1 or 2): a thread's branches r + cD (r = b +
 * it T, b = tid or, with aligned_window, its rotation) are then the elements b + m K/4, m =
 * 0..3, of every vector: the inputs of butterfly b of the FFT's first radix-4 stage (span K);
 * the function's tid is that b. The filter does that stage in registers before
 * its store, which saves one pass of loads and stores of the whole tile through shared memory
 * and one barrier. The thread's earlier branches are stored as usual and read back (its own
 * writes: no barrier) by the last one (holding all four in registers was 1.5% slower):
 * prx_fused_r4_store. */

/* aligned_window. A warp's 32 threads take 32 consecutive base branches r, whose window samples
 * n0 + t D - r (t fixed) are 32 consecutive samples ending at n0 + t D - r_first. Where that
 * run starts is set by the input's address and the launch's base: one sample past a 32-byte
 * boundary in the benchmark (ncu: 28.4 of 32 bytes used per sector), so each load touches 9
 * sectors and three 128-byte lines instead of 8 and two. Thread tid therefore takes base
 * branch b = (tid + rot) mod T (and b + it T), with rot chosen so that every warp's run but
 * the one that wraps starts on a 16-sample boundary (128 bytes of cf32, 64 of ci16, 32 of
 * ci8/cu8). D, T and K are multiples of 16, so rot depends only on the input's address and
 * base. The taps follow the branches: copy rot of p.taps_rot has each run of T branches
 * rotated by rot, so that the tap loads stay aligned too. */
template <int FMT> __host__ __device__ __forceinline__ int prx_fused_rot(const prx_kparams &p) {
  const int lg_bytes = FMT == KF_CF32 ? 3 : FMT == KF_CI16 ? 2 : 1; /* log2 bytes per sample */
  return (int)((((uintptr_t)p.in >> lg_bytes) + (uintptr_t)(p.base + 1)) & 15);
}

/* the 16 rotated copies of taps (P * K each) for aligned_window, T threads per block: copy d
 * has rot[d][q K + c D + it T + x] = taps[q K + c D + it T + (x + d) mod T] */
__host__ __forceinline__ void prx_fused_rotate_taps(const float *taps, int P, int K, int T,
                                                    float *rot) {
  for (int d = 0; d < 16; d++)
    for (int i = 0; i < P * K; i++)
      rot[(size_t)d * P * K + i] = taps[(i & ~(T - 1)) + (((i & (T - 1)) + d) & (T - 1))];
}

template <int FMT, int R, int J, bool SAFE>
__host__ __device__ __forceinline__ float2 prx_fused_load(const prx_kparams &p, int n) {
  if (SAFE) return prx_conv<FMT>(p.in, n);
  if (n < 0) return PRX_LDG(p.hist + (p.Hh + n));
  if (n >= p.n_in) return make_float2(0.0f, 0.0f);
  return prx_conv<FMT>(p.in, n);
}

/* radix-4 butterfly in place (backward: b_m = sum_n a_n i^(n m)) */
__host__ __device__ __forceinline__ void prx_bfly4(float2 &a0, float2 &a1, float2 &a2, float2 &a3) {
  const float2 t0 = cadd(a0, a2), t1 = csub(a0, a2), t2 = cadd(a1, a3), t3 = cmuli(csub(a1, a3));
  a0 = cadd(t0, t2);
  a1 = cadd(t1, t3);
  a2 = csub(t0, t2);
  a3 = csub(t1, t3);
}

/* The end of the filter with fold_first_stage, for each output jl of the tile: element m of
 * butterfly tid (slot tid + m K/4) comes from iteration it = m mod (4/R), branch c = m / (4/R)
 * (with D = K/2 and odd j, branch c ^ 1: the sign fold of prx_fused_filter): the earlier
 * iterations' values are read back from their slots, last holds the final iteration's; the
 * radix-4 butterfly and the stage's twiddles W_K^(m tid) follow, and the four results are
 * stored. */
template <int R, int J>
__host__ __device__ __forceinline__ void prx_fused_r4_store(const prx_kparams &p, float2 *V,
                                                            int tid, int K, int VS,
                                                            const float2 (*last)[J]) {
  constexpr int NI = 4 / R; /* the thread's iterations */
  const int Q = K / 4;
  int o[4];
  PRX_UNROLL
  for (int m = 0; m < 4; m++) o[m] = prx_pad(tid + m * Q);
  const float2 w1 = PRX_LDG(p.tw + tid), w2 = PRX_LDG(p.tw + 2 * tid), w3 = PRX_LDG(p.tw + 3 * tid);
  PRX_UNROLL
  for (int jl = 0; jl < J; jl++) {
    float2 *v = V + jl * VS;
    const bool odd = R == 2 && ((jl ^ p.e_par) & 1);
    float2 a[4];
    PRX_UNROLL
    for (int m = 0; m < 4; m++) {
      const int it = m % NI, c = m / NI;
      if (it == NI - 1)
        a[m] = odd ? last[c ^ (R - 1)][jl] : last[c][jl];
      else
        a[m] = v[o[m]];
    }
    prx_bfly4(a[0], a[1], a[2], a[3]);
    v[o[0]] = a[0];
    v[o[1]] = cmul(a[1], w1);
    v[o[2]] = cmul(a[2], w2);
    v[o[3]] = cmul(a[3], w3);
  }
}

/* persistent: a block's next tile may store into V only once the previous tile's output
 * has left it: the TMA copies out (each issuing thread waits until its copy has
 * read the shared memory), and every thread's reads of the output phase (a barrier). The
 * filter does that after its first iteration's loads and products, so that the copies drain
 * while they run. */
__host__ __device__ __forceinline__ void prx_fused_tma_drain() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
#endif
}
__host__ __device__ __forceinline__ void prx_fused_reuse_sync() {
  prx_fused_tma_drain();
#ifdef __CUDA_ARCH__
  __syncthreads();
#endif
}

/* Phase 1 for thread tid of T: base branches r = tid, tid + T, ... < D = K / R. (K, D and T
 * are compile-time constants in the kernel, so every offset below folds into an immediate.)
 * The (-1)^(kj) of D = K/2 is folded into the store: for odd absolute j,
 * (-1)^k Y_k = sum_r v_r W^(k (r + K/2)), so v_r goes to slot r + K/2 (mod K), i.e. the two
 * branches r and r + D of the thread trade places; the output phase then has no sign. */
template <int FMT, int R, int J, bool SAFE, bool FOLD, bool ALIGNED, bool BASE_PTR, bool UNROLL>
__host__ __device__ __forceinline__ void prx_fused_filter(const prx_kparams &p, float2 *V, int jj0,
                                                          int tid, int T, int K,
                                                          bool sync_first = false) {
  constexpr int P = PRX_FUSED_P;
  constexpr int NW = J + (P - 1) * R + (R - 1); /* window length */
  const int D = K / R, VS = prx_fused_vs(K);
  const int q0 = jj0 - (P - 1) * R - (R - 1); /* output index of the window's oldest sample */
  /* the branch loop with its trip count known (T divides D), no bound test */
  const int n_it = D / T;
  constexpr bool R4 = FOLD, AL = ALIGNED;
  constexpr bool BP = SAFE && BASE_PTR; /* (near the stream's start: per-sample bounds) */
  /* the thread's first base branch, and its taps (aligned_window: rotated, see prx_fused_rot) */
  const int rot = AL ? prx_fused_rot<FMT>(p) : 0, b = AL ? (tid + rot) & (T - 1) : tid;
  const float *taps = AL ? p.taps_rot + (size_t)rot * (P * K) + (tid - b) : p.taps;
#ifdef __CUDA_ARCH__
#pragma unroll(UNROLL ? 4 : 1)
#endif
  for (int it = 0; it < n_it; it++) {
    const int r = b + it * T;
    float h[R][P];
    PRX_UNROLL
    for (int c = 0; c < R; c++) {
      PRX_UNROLL
      for (int q = 0; q < P; q++) h[c][q] = PRX_LDG(taps + q * K + c * D + r);
    }
    float2 acc[R][J];
    PRX_UNROLL
    for (int c = 0; c < R; c++) {
      PRX_UNROLL
      for (int jl = 0; jl < J; jl++) acc[c][jl] = make_float2(0.0f, 0.0f);
    }
    const int n0 = p.base + q0 * D - r;
    const void *const src = prx_conv_at<FMT>(p.in, BP ? n0 : 0); /* window_base_ptr */
    PRX_UNROLL
    for (int t = 0; t < NW; t++) {
      const float2 u =
          BP ? prx_conv<FMT>(src, t * D) : prx_fused_load<FMT, R, J, SAFE>(p, n0 + t * D);
      PRX_UNROLL
      for (int c = 0; c < R; c++) {
        PRX_UNROLL
        for (int jl = 0; jl < J; jl++) {
          /* window slot t holds u[q0 + t] = the sample that tap q of branch r + cD uses for
           * output jl when t = jl - c - qR + (P-1)R + (R-1) */
          const int num = jl - c + (P - 1) * R + (R - 1) - t;
          if (num >= 0 && num % R == 0 && num / R < P) {
            const float hh = h[c][num / R];
            acc[c][jl].x = fmaf(hh, u.x, acc[c][jl].x);
            acc[c][jl].y = fmaf(hh, u.y, acc[c][jl].y);
          }
        }
      }
    }
    if (sync_first && it == 0) prx_fused_reuse_sync(); /* persistent: V is free again */
    if (R4 && it == n_it - 1) {
      prx_fused_r4_store<R, J>(p, V, b, K, VS, acc);
    } else if (R == 2) {
      /* slot of branch c for output jl: r + (c ^ odd(j)) D, j = jj0 + jl + e_par, jj0 even */
      const int s0 = prx_pad(r), s1 = prx_pad(r + D);
      const int a = (p.e_par & 1) ? s1 : s0, b = (p.e_par & 1) ? s0 : s1;
      PRX_UNROLL
      for (int jl = 0; jl < J; jl++) {
        V[jl * VS + ((jl & 1) ? b : a)] = acc[0][jl];
        V[jl * VS + ((jl & 1) ? a : b)] = acc[R - 1][jl];
      }
    } else {
      PRX_UNROLL
      for (int c = 0; c < R; c++) {
        PRX_UNROLL
        for (int jl = 0; jl < J; jl++) V[jl * VS + prx_pad(r + c * D)] = acc[c][jl];
      }
    }
  }
}

/* Which butterflies of an FFT pass a thread does, and for which of the J vectors: a thread's
 * butterfly b serves several vectors so that its twiddles are loaded once. NB = 2^lgNB
 * butterflies per vector, 2^lgT threads. With more butterflies than threads each thread takes
 * every 2^lgT-th butterfly of every vector; with fewer, the threads split into 2^lg_jstep teams
 * that share the vectors. */
template <int J> struct prx_bfly_map {
  int b_first, b_step, jl_first, lg_jstep;
  int cnt;   /* vectors this thread does each butterfly for */
  int nb_it; /* butterflies this thread does */
  __host__ __device__ __forceinline__ prx_bfly_map(int NB, int lgNB, int tid, int lgT) {
    if (lgNB >= lgT) {
      b_first = tid, b_step = 1 << lgT, jl_first = 0, lg_jstep = 0;
    } else {
      b_first = tid & (NB - 1), b_step = NB, jl_first = tid >> lgNB, lg_jstep = lgT - lgNB;
    }
    /* known at compile time where every thread has the same count (jl_first < 2^lg_jstep
     * always), and so is the number of butterflies */
    cnt = !(J & ((1 << lg_jstep) - 1))
              ? J >> lg_jstep
              : (jl_first < J ? (J - jl_first + (1 << lg_jstep) - 1) >> lg_jstep : 0);
    nb_it = lgNB >= lgT ? NB >> lgT : 1;
  }
};

/* Phase 2, one stage: sub-transforms of L = 2^lgL points, radix 2^lgR (4 or 2); the block has
 * 2^lgT threads. All sizes are powers of two: the indexing uses shifts and masks only. */
template <int J>
__host__ __device__ __forceinline__ void prx_fused_stage(const prx_kparams &p, float2 *V, int lgK,
                                                         int lgL, int lgR, int tid, int lgT) {
  const int VS = prx_fused_vs(1 << lgK);
  const int lgNB = lgK - lgR;  /* butterflies per vector */
  const int lgNBg = lgL - lgR; /* butterflies per group (sub-transform) */
  const int lgG = lgK - lgL;   /* groups; also the twiddle step: W_L = tw[K / L] */
  const int NB = 1 << lgNB, NBg = 1 << lgNBg;
  /* thread -> butterflies b and the vectors it does them for: b's twiddles are reused across
   * its vectors, and the vectors are done in batches whose loads are all issued first */
  const prx_bfly_map<J> bm(NB, lgNB, tid, lgT);
  const int b_first = bm.b_first, b_step = bm.b_step, jl_first = bm.jl_first;
  const int lg_jstep = bm.lg_jstep, cnt = bm.cnt, nb_it = bm.nb_it;
  for (int bi = 0; bi < nb_it; bi++) {
    const int b = b_first + bi * b_step;
    /* butterfly index -> (group g, index i in the group); consecutive threads take
     * consecutive i while groups are wide, consecutive g once they are narrow, so that 16
     * consecutive threads hit 16 different banks (with the padding) */
    int g, i;
    if (lgNBg >= 4) {
      i = b & (NBg - 1), g = b >> lgNBg;
    } else {
      g = b & ((1 << lgG) - 1), i = b >> lgG;
    }
    const int e0 = (g << lgL) + i;
    /* twiddles W_L^(i m): none in the last stages (one butterfly per group, i = 0); else
     * applied to every butterfly (tw[0] = 1 exactly), which keeps the warp free of branches */
    const bool twid = NBg > 1;
    if (lgR == 2) {
      /* base + immediates, as in prx_fused_pass16 */
      const int o0 = prx_pad(e0), o1 = o0 + NBg + (NBg >> 4), o2 = o0 + 2 * NBg + ((2 * NBg) >> 4),
                o3 = o0 + 3 * NBg + ((3 * NBg) >> 4);
      float2 w1 = make_float2(1.0f, 0.0f), w2 = w1, w3 = w1;
      if (twid) {
        w1 = PRX_LDG(p.tw + (i << lgG));
        w2 = PRX_LDG(p.tw + ((2 * i) << lgG));
        w3 = PRX_LDG(p.tw + ((3 * i) << lgG));
      }
      for (int k0 = 0; k0 < cnt; k0 += 4) {
        float2 a[4][4];
        PRX_UNROLL
        for (int u = 0; u < 4; u++)
          if (k0 + u < cnt) {
            const float2 *v = V + (jl_first + ((k0 + u) << lg_jstep)) * VS;
            a[u][0] = v[o0], a[u][1] = v[o1], a[u][2] = v[o2], a[u][3] = v[o3];
          }
        PRX_UNROLL
        for (int u = 0; u < 4; u++)
          if (k0 + u < cnt) {
            float2 *v = V + (jl_first + ((k0 + u) << lg_jstep)) * VS;
            const float2 t0 = cadd(a[u][0], a[u][2]), t1 = csub(a[u][0], a[u][2]),
                         t2 = cadd(a[u][1], a[u][3]), t3 = cmuli(csub(a[u][1], a[u][3]));
            float2 b1 = cadd(t1, t3), b2 = csub(t0, t2), b3 = csub(t1, t3);
            if (twid) {
              b1 = cmul(b1, w1);
              b2 = cmul(b2, w2);
              b3 = cmul(b3, w3);
            }
            v[o0] = cadd(t0, t2);
            v[o1] = b1;
            v[o2] = b2;
            v[o3] = b3;
          }
      }
    } else {
      const int o0 = prx_pad(e0), o1 = o0 + NBg + (NBg >> 4);
      float2 w1 = make_float2(1.0f, 0.0f);
      if (twid) w1 = PRX_LDG(p.tw + (i << lgG));
      for (int k0 = 0; k0 < cnt; k0 += 8) {
        float2 a[8][2];
        PRX_UNROLL
        for (int u = 0; u < 8; u++)
          if (k0 + u < cnt) {
            const float2 *v = V + (jl_first + ((k0 + u) << lg_jstep)) * VS;
            a[u][0] = v[o0], a[u][1] = v[o1];
          }
        PRX_UNROLL
        for (int u = 0; u < 8; u++)
          if (k0 + u < cnt) {
            float2 *v = V + (jl_first + ((k0 + u) << lg_jstep)) * VS;
            float2 b1 = csub(a[u][0], a[u][1]);
            if (twid) b1 = cmul(b1, w1);
            v[o0] = cadd(a[u][0], a[u][1]);
            v[o1] = b1;
          }
      }
    }
  }
}

/* W_16^n = exp(+2 pi i n / 16), n = 0..9: the fixed twiddles inside a radix-16 pass */
__host__ __device__ __forceinline__ float2 prx_w16(int n) {
  const float c1 = 0.92387953251128674f, s1 = 0.38268343236508977f, h = 0.70710678118654752f;
  switch (n) {
  case 0: return make_float2(1.0f, 0.0f);
  case 1: return make_float2(c1, s1);
  case 2: return make_float2(h, h);
  case 3: return make_float2(s1, c1);
  case 4: return make_float2(0.0f, 1.0f);
  case 5: return make_float2(-s1, c1);
  case 6: return make_float2(-h, h);
  case 7: return make_float2(-c1, s1);
  case 8: return make_float2(-1.0f, 0.0f);
  default: return make_float2(-c1, -s1);
  }
}

/* The arithmetic of a radix-16 pass on the 16 points a[m1][m2] of one butterfly: the first
 * stage's 4 butterflies (over m1) with twiddles ta[m2][m], then the second's (over m2) with
 * tb[m]; twid = 0 where the pass has no twiddles but the fixed W_16 ones in ta (span 16). */
__host__ __device__ __forceinline__ void prx_r16(float2 (&a)[4][4], const float2 (&ta)[4][4],
                                                 const float2 (&tb)[4], bool twid) {
  PRX_UNROLL
  for (int m2 = 0; m2 < 4; m2++) {
    prx_bfly4(a[0][m2], a[1][m2], a[2][m2], a[3][m2]);
    PRX_UNROLL
    for (int m = 1; m < 4; m++)
      if (m2 || twid) a[m][m2] = cmul(a[m][m2], ta[m2][m]);
  }
  PRX_UNROLL
  for (int m1 = 0; m1 < 4; m1++) {
    prx_bfly4(a[m1][0], a[m1][1], a[m1][2], a[m1][3]);
    if (twid) {
      PRX_UNROLL
      for (int m = 1; m < 4; m++) a[m1][m] = cmul(a[m1][m], tb[m]);
    }
  }
}

/* Phase 2, two radix-4 stages at once (spans L and L/4) in registers: a thread loads the 16
 * points g L + i + m1 L/4 + m2 L/16 (i < S = L/16), does the 4 butterflies of the first stage
 * (index i + m2 S, twiddles W_L^((i + m2 S) m1') = W_L^(i m1') W_16^(m2 m1')), then the 4 of
 * the second (index i, twiddles W_(L/4)^(i m2') = W_L^(4 i m2')) and stores the 16 back: half
 * the shared-memory traffic and barriers of two separate stages. Butterfly b -> (i, g) with i
 * fastest puts 16 consecutive threads on 16 different banks for every L (with the padding).
 * The thread's twiddles come from one table load, W_L^i, by products, and serve all its
 * vectors. */
template <int J>
__host__ __device__ __forceinline__ void prx_fused_pass16(const prx_kparams &p, float2 *V, int lgK,
                                                          int lgL, int tid, int lgT) {
  const int VS = prx_fused_vs(1 << lgK);
  const int lgNB = lgK - 4, lgS = lgL - 4, lgG = lgK - lgL;
  const int NB = 1 << lgNB, S = 1 << lgS, L4 = 1 << (lgL - 2);
  const prx_bfly_map<J> bm(NB, lgNB, tid, lgT);
  const int b_first = bm.b_first, b_step = bm.b_step, jl_first = bm.jl_first;
  const int lg_jstep = bm.lg_jstep, cnt = bm.cnt, nb_it = bm.nb_it;
  for (int bi = 0; bi < nb_it; bi++) {
    const int b = b_first + bi * b_step;
    const int i = b & (S - 1), g = b >> lgS;
    const int e0 = (g << lgL) + i;
    /* pad(e0 + off) = pad(e0) + off + off / 16 for every offset off = m1 L/4 + m2 S (a
     * multiple of 16, or of S < 16 with i < S), so the 16 addresses are one base register
     * plus immediates */
    const int e0p = prx_pad(e0);
    int o[4][4];
    PRX_UNROLL
    for (int m1 = 0; m1 < 4; m1++) {
      PRX_UNROLL
      for (int m2 = 0; m2 < 4; m2++) {
        const int off = m1 * L4 + m2 * S;
        o[m1][m2] = e0p + off + (off >> 4);
      }
    }
    /* twiddles (none but the fixed W_16 ones when S = 1, i.e. i = 0) */
    float2 ta[4][4], tb[4];
    const float2 one = make_float2(1.0f, 0.0f);
    if (S > 1) {
      const float2 w1 = PRX_LDG(p.tw + (i << lgG)), w2 = cmul(w1, w1), w3 = cmul(w2, w1);
      const float2 w4 = cmul(w2, w2), w8 = cmul(w4, w4);
      tb[0] = one, tb[1] = w4, tb[2] = w8, tb[3] = cmul(w8, w4);
      const float2 wm[4] = {one, w1, w2, w3};
      PRX_UNROLL
      for (int m2 = 0; m2 < 4; m2++) {
        PRX_UNROLL
        for (int m = 0; m < 4; m++) ta[m2][m] = m2 && m ? cmul(wm[m], prx_w16(m2 * m)) : wm[m];
      }
    } else {
      PRX_UNROLL
      for (int m2 = 0; m2 < 4; m2++) {
        tb[m2] = one;
        PRX_UNROLL
        for (int m = 0; m < 4; m++) ta[m2][m] = prx_w16(m2 * m);
      }
    }
    float2 *const v0 = V + jl_first * VS;
#ifdef __CUDA_ARCH__
#pragma unroll 2
#endif
    for (int k = 0; k < cnt; k++) {
      float2 *v = v0 + ((k << lg_jstep) * VS);
      float2 a[4][4];
      PRX_UNROLL
      for (int m1 = 0; m1 < 4; m1++) {
        PRX_UNROLL
        for (int m2 = 0; m2 < 4; m2++) a[m1][m2] = v[o[m1][m2]];
      }
      prx_r16(a, ta, tb, S > 1);
      PRX_UNROLL
      for (int m1 = 0; m1 < 4; m1++) {
        PRX_UNROLL
        for (int m2 = 0; m2 < 4; m2++) v[o[m1][m2]] = a[m1][m2];
      }
    }
  }
}

/* Phase 3: J/2 lanes per selected channel, lane q writing outputs 2q and 2q+1 of the
 * tile; the channels go in order of their FFT position (p.otab), so the lanes of a warp read
 * 16 different banks, and a warp's store covers 64 / J channel runs of J outputs, whole
 * 32-byte sectors, with one 16-byte store per lane (8 bytes for cf16) where the rows allow
 * it. The sign of D = K/2 is already in the filter's store. */
template <int J, int NATLGK = 0>
__host__ __device__ __forceinline__ void prx_fused_output(const prx_kparams &p, const float2 *V,
                                                          int jj0, int tid, int lgT, int VS) {
  constexpr int L = J / 2; /* lanes per channel */
  const int jl = 2 * (tid & (L - 1));
  if (jj0 + jl >= p.n_out) return;
  const bool two = jj0 + jl + 1 < p.n_out;
  const int i_step = (1 << lgT) / L;
  const float2 *va = V + jl * VS, *vb = va + VS;
  const size_t esz = p.out_f16 ? 4 : 8;
  /* the pair is one aligned 2 * esz store when every row start is (jj0 + jl is even) */
  const bool pair = two && !(p.stride & 1) && !((uintptr_t)p.out & (2 * esz - 1));
  constexpr int LGN = NATLGK ? NATLGK : 1; /* (a valid instance when unused) */
  if (NATLGK && pair && !p.out_f16 && p.natural) {
    /* computed_rows: position i holds channel prx_fused_chan_of_pos(i), whose row it is */
    float2 *out = (float2 *)p.out + jj0 + jl;
    for (int i = tid / L; i < p.n_sel; i += i_step) {
      const float2 *y = va + prx_pad(i);
      const float2 y0 = y[0], y1 = y[VS];
      const size_t row = (unsigned)prx_fused_chan_of_pos<LGN>(i);
      *(float4 *)(out + row * p.stride) = make_float4(y0.x, y0.y, y1.x, y1.y);
    }
  } else if (pair && !p.out_f16) {
    float2 *out = (float2 *)p.out + jj0 + jl;
    const char *vab = (const char *)va;
    for (int i = tid / L; i < p.n_sel; i += i_step) {
      const int2 e = PRX_LDG(p.otab + i);
      const float2 *y = (const float2 *)(vab + e.x * 8);
      const float2 y0 = y[0], y1 = y[VS];
      *(float4 *)(out + (size_t)(unsigned)e.y * p.stride) = make_float4(y0.x, y0.y, y1.x, y1.y);
    }
  } else if (pair) {
    __half2 *out = (__half2 *)p.out + jj0 + jl;
    for (int i = tid / L; i < p.n_sel; i += i_step) {
      const int2 e = PRX_LDG(p.otab + i);
      const float2 y0 = va[e.x], y1 = vb[e.x];
      const __half2 h0 = __floats2half2_rn(y0.x, y0.y), h1 = __floats2half2_rn(y1.x, y1.y);
      uint2 u;
      memcpy(&u.x, &h0, 4);
      memcpy(&u.y, &h1, 4);
      *(uint2 *)(out + (size_t)e.y * p.stride) = u;
    }
  } else {
    for (int i = tid / L; i < p.n_sel; i += i_step) {
      const int2 e = PRX_LDG(p.otab + i);
      const size_t o = (size_t)e.y * p.stride + jj0 + jl;
      prx_store(p, o, va[e.x]);
      if (two) prx_store(p, o + 1, vb[e.x]);
    }
  }
}

/* whether the whole input window of the tile at jj0 is inside [0, n_in) */
template <int R, int J>
__host__ __device__ __forceinline__ bool prx_fused_safe(const prx_kparams &p, int jj0, int D) {
  const int q0 = jj0 - (PRX_FUSED_P - 1) * R - (R - 1);
  const long long lo = (long long)p.base + (long long)q0 * D - (D - 1);
  const long long hi = (long long)p.base + (long long)(jj0 + J - 1) * D;
  return lo >= 0 && hi < p.n_in;
}

/* tile_copy_out. The FFT's last pass (span 16) with the output phase folded in: instead of
 * writing its 16 points back in digit-reversed order for the output phase to pick up (about
 * 400 instructions per thread and tile at K = 1024: index arithmetic, loads and 16-byte
 * stores), it writes them in channel order, the tile as K rows of J outputs (staging[c J + jl],
 * over the FFT buffer: every thread's loads come before a barrier, its stores after it), and
 * the tensor memory accelerator copies that out in boxes of 256 rows, clipped at n_out (the
 * tensor map in p.tmap). Point (m1, m2) of butterfly g (position 16 g + 4 m1 + m2) is channel
 * m2 K/4 + m1 K/16 + chan(g): one base address per butterfly, immediate offsets. Where it
 * applies (prx_fused_select): the last pass a radix-16 one, and at least one butterfly and
 * vector per thread. */

/* units (a butterfly of one vector) per thread */
__host__ __device__ constexpr int prx_fused_tma_cnt(int J, int LGK, int T) {
  return (1 << LGK) / 16 * J / T;
}

/* Unit u = tid + k T: vector jl = u mod J and butterfly g. The lane bits above jl go to g's
 * bit 0 and to its top digit (the channel's lowest), so that a warp's loads (16 banks with
 * VS = 2 mod 16 at J = 8) and its stores (rows c and c + 1 at J = 8, c..c+3 at J = 4: 16
 * banks) take two wavefronts each, the least for 8-byte accesses. */
template <int J, int LGK>
__host__ __device__ __forceinline__ void prx_fused_tma_unit(int u, int &jl, int &g) {
  constexpr int LGJ = prx_fused_log2(J), NL = 5 - LGJ, LGNB = LGK - 4;
  jl = u & (J - 1);
  const int w = u >> LGJ, r = w >> NL;
  g = (w & 1) | (((w >> 1) & ((1 << (NL - 1)) - 1)) << (LGNB - 2)) |
      ((r & ((1 << (LGNB - 3)) - 1)) << 1) | ((r >> (LGNB - 3)) << (LGNB + NL - 3));
}

/* before the barrier: the thread's units loaded and transformed (fixed W_16 twiddles only) */
template <int J, int LGK, int T, int VS>
__host__ __device__ __forceinline__ void
prx_fused_tma_load(const float2 *V, int tid, float2 (&a)[prx_fused_tma_cnt(J, LGK, T)][4][4]) {
  float2 ta[4][4], tb[4];
  PRX_UNROLL
  for (int m2 = 0; m2 < 4; m2++) {
    tb[m2] = make_float2(1.0f, 0.0f);
    PRX_UNROLL
    for (int m = 0; m < 4; m++) ta[m2][m] = prx_w16(m2 * m);
  }
  PRX_UNROLL
  for (int k = 0; k < prx_fused_tma_cnt(J, LGK, T); k++) {
    int jl, g;
    prx_fused_tma_unit<J, LGK>(tid + k * T, jl, g);
    const float2 *v = V + jl * VS + prx_pad(16 * g); /* pad(16 g + x) = pad(16 g) + x, x < 16 */
    PRX_UNROLL
    for (int m1 = 0; m1 < 4; m1++) {
      PRX_UNROLL
      for (int m2 = 0; m2 < 4; m2++) a[k][m1][m2] = v[4 * m1 + m2];
    }
    prx_r16(a[k], ta, tb, false);
  }
}

/* after the barrier: the units' 16 outputs each to their channel rows of the staging tile */
template <int J, int LGK, int T>
__host__ __device__ __forceinline__ void
prx_fused_tma_store(float2 *S, int tid, const float2 (&a)[prx_fused_tma_cnt(J, LGK, T)][4][4]) {
  constexpr int K = 1 << LGK;
  PRX_UNROLL
  for (int k = 0; k < prx_fused_tma_cnt(J, LGK, T); k++) {
    int jl, g;
    prx_fused_tma_unit<J, LGK>(tid + k * T, jl, g);
    float2 *s = S + prx_fused_chan_of_pos<LGK - 4>(g) * J + jl;
    PRX_UNROLL
    for (int m1 = 0; m1 < 4; m1++) {
      PRX_UNROLL
      for (int m2 = 0; m2 < 4; m2++) s[(m2 * (K / 4) + m1 * (K / 16)) * J] = a[k][m1][m2];
    }
  }
}

/* FFT stage list of size K: radix-4 stages, a radix-2 stage last when log2 K is odd */
__host__ __device__ __forceinline__ int prx_fused_nstages(int K, int *log2k) {
  int l = 0;
  while ((1 << l) < K) l++;
  *log2k = l;
  return l / 2 + (l & 1);
}

#endif
