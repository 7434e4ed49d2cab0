/* The matched-filter kernel's window layouts and its one-symbol product (qpsk_stages_cuda.cu:
 * qpsk_mf_kernel, qpsk_mf4_kernel). Included after qpsk_stage_math.h (qpsk_win_slot,
 * qpsk_win_slot16x2, qpsk_win_slot32x1).
 *
 * Layouts of the window in shared memory: MF_FLAT (window index t at slot t), MF_PAD16 (one
 * spare slot per 16 samples, qpsk_win_slot's QPSK_PAD16: one symbol a thread), MF_PAD16X2 (index
 * t shifted by the thread block's sh, two spare slots per 16 samples, qpsk_win_slot16x2: the
 * consecutive quads of qpsk_dot4c at sps 4) and MF_PAD32 (one spare slot per 32 samples,
 * qpsk_win_slot32x1: the pairs 16 samples apart of qpsk_dot2n where P sps = 16). */
#ifndef PRX_QPSK_STAGES_MF_CUH
#define PRX_QPSK_STAGES_MF_CUH

#include "qpsk_stages_window.cuh"

#define MF_FLAT 0
#define MF_PAD16 1
#define MF_PAD16X2 2
#define MF_PAD32 3

/* the slot of window index t (sh: MF_PAD16X2's shift) */
template <int LAYOUT> __device__ __forceinline__ int64_t mf_slot(int64_t t, int sh) {
  if (LAYOUT == MF_PAD16X2) return qpsk_win_slot16x2((int)t + sh);
  if (LAYOUT == MF_PAD32) return qpsk_win_slot32x1((int)t);
  return qpsk_win_slot(t, LAYOUT == MF_PAD16 ? QPSK_PAD16 : 0);
}
template <int LAYOUT> __device__ __forceinline__ int mf_slot32(int t, int sh) {
  if (LAYOUT == MF_PAD16X2) return qpsk_win_slot16x2(t + sh);
  if (LAYOUT == MF_PAD32) return qpsk_win_slot32x1(t);
  return qpsk_win_slot32(t, LAYOUT == MF_PAD16 ? QPSK_PAD16 : 0);
}

/* the window's slots for nw samples (shared memory, float2) */
__host__ __device__ inline size_t mf_slots(int layout, size_t nw) {
  if (layout == MF_PAD16X2) return (nw + 15) + 2 * ((nw + 15) >> 4) + 2;
  if (layout == MF_PAD32) return nw + nw / 32 + 1;
  return layout == MF_PAD16 ? nw + nw / 16 + 1 : nw;
}

/* the window index of symbol k0's first input: qpsk_mf_tap's offset for k = k0 (the start of the
 * block's first run) without its division; MF_PAD16X2's shift is taken from it */
__device__ __forceinline__ int64_t mf_first_off(const qpsk_mf_timing *t, int64_t L, double sps,
                                                int64_t lo, unsigned Q, int c) {
  const double bL = (double)(t->b * L), base = bL * sps - (double)lo;
  double p0;
  if (t->R <= 0) {
    p0 = (qpsk_instant(t, L, (double)t->k0) - bL) * sps + base;
  } else {
    const int64_t m = t->k1 - t->k0 < t->R ? t->k1 - t->k0 : t->R;
    const double mid = (double)t->k0 + 0.5 * (double)(m - 1);
    p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(m - 1) - bL) * sps + base;
  }
  long i, j;
  qpsk_pos_at(p0, Q, &i, &j);
  return (int64_t)i - c;
}

/* one symbol: taps t (the bank's interleaved row) against the window from index off, in
 * qpsk_dot1's order */
template <int LAYOUT>
__device__ __forceinline__ prx_cf32 mf_dot1(const float2 *__restrict__ t, const float2 *win,
                                            int64_t off, int sh, unsigned ntaps) {
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    float2 h = __ldg(t + l), v = win[mf_slot<LAYOUT>(off + l, sh)];
    re += h.x * v.x;
    im += h.y * v.y;
  }
  prx_cf32 r = {re, im};
  return r;
}

/* The sps 4 kernel's thread blocks (qpsk_mf4_kernel): MF4_THREADS threads, each the window
 * samples of two of a STAGE_THREADS block's threads i and i + MF4_THREADS, and the symbols of its
 * threads 2i and 2i + 1 (a quad: at L = 512 one a thread), so that a thread block's fixed work
 * (its record, the positions' origin, the NCO's start, the block sum) is shared by twice the
 * symbols; MF4_MIN_BLOCKS of them a
 * multiprocessor hold the warps of five 256-thread blocks (48 registers; H200, bench/GPU_NOTES.md,
 * s12/gmf4: faster than eight, 64 registers). */
#define MF4_THREADS 128
#define MF4_MIN_BLOCKS 10

/* qpsk_nco_advance and qpsk_mf_sample_rot with their roundings pinned: in each part of a complex
 * product one product fused into the multiply-add and the other rounded, as the compiler chose in
 * qpsk_mf_kernel's 256-thread sps 4 form (its SASS), so that the window's samples are that form's
 * bit for bit whatever the compiler would fuse here (__fmul_rn and __fmaf_rn are never
 * contracted). */
__device__ __forceinline__ prx_cf32 mf4_nco_advance(prx_cf32 rot, prx_cf32 step) {
  prx_cf32 o = {__fmaf_rn(rot.re, step.re, -__fmul_rn(rot.im, step.im)),
                __fmaf_rn(rot.im, step.re, __fmul_rn(rot.re, step.im))};
  return o;
}
__device__ __forceinline__ prx_cf32 mf4_sample_rot(prx_cf32 v, prx_cf32 dc, float gain,
                                                   prx_cf32 rot) {
  const float pr = __fmul_rn(gain, rot.re), pi = __fmul_rn(gain, rot.im);
  const float xr = __fadd_rn(v.re, -dc.re), xi = __fadd_rn(v.im, -dc.im);
  prx_cf32 o = {__fmaf_rn(xr, pr, -__fmul_rn(xi, pi)), __fmaf_rn(xr, pi, __fmul_rn(xi, pr))};
  return o;
}

/* qpsk_window_sample for a sample within the stream: v, or 0 where either part is not finite
 * (the same values), as one combined test and two selects (the short-circuit test of
 * qpsk_window_sample compiles to predicated selects whose targets are zeroed first: two more
 * instructions a sample) */
__device__ __forceinline__ prx_cf32 mf4_in_sample(prx_cf32 v) {
  const bool ok = (fabsf(v.re) < INFINITY) & (fabsf(v.im) < INFINITY);
  prx_cf32 o = {ok ? v.re : 0.0f, ok ? v.im : 0.0f};
  return o;
}

/* Stages channel c's window [lo, hi) as stage_window does (qpsk_stages_window.cuh) with
 * MF4_THREADS threads, into the MF_PAD16X2 layout of shift sh: thread i takes samples t = i +
 * k MF4_THREADS in the order of k, handing sample t to inner(v, slot, q) or edge(v, t, s, in, q)
 * with q = k mod 2, the NCO chain that is STAGE_THREADS thread (t mod STAGE_THREADS)'s in
 * stage_window: each chain sees the same samples in the same order as that thread does (the same
 * operations, rounded as there: mf4_nco_advance). Where inner takes them, a thread's slots are
 * one slot plus multiples of MF4_SLOTS (MF4_THREADS samples are whole 16-sample groups). */
#define MF4_SLOTS (MF4_THREADS + MF4_THREADS / 8)
template <bool HALF, bool MIX, typename Inner, typename Edge>
__device__ __forceinline__ void
mf4_stage_window(const void *rows, size_t stride, unsigned c, int64_t n_total, int64_t lo,
                 int64_t hi, int sh, const double *mix, prx_cf32 fill, Inner inner, Edge edge) {
  static_assert(2 * MF4_THREADS == STAGE_THREADS && MF4_THREADS % 16 == 0, "two chains a thread");
  const char *row = (const char *)rows + (size_t)c * stride;
  if (!MIX && lo >= 0 && hi <= n_total) {
    /* no bounds per sample, 32-bit indices */
    const char *src = row + (size_t)lo * sample_bytes<HALF>();
    const int nw = (int)(hi - lo);
    int t = threadIdx.x, sl = qpsk_win_slot16x2(t + sh);
    for (; t + 3 * MF4_THREADS < nw; t += 4 * MF4_THREADS, sl += 4 * MF4_SLOTS) {
      prx_cf32 v[4];
#pragma unroll
      for (int u = 0; u < 4; u++) v[u] = load_rel<HALF>(src, t + u * MF4_THREADS);
#pragma unroll
      for (int u = 0; u < 4; u++) inner(v[u], sl + u * MF4_SLOTS, u & 1);
    }
#pragma unroll
    for (int u = 0; u < 3; u++)
      if (t + u * MF4_THREADS < nw)
        inner(load_rel<HALF>(src, t + u * MF4_THREADS), sl + u * MF4_SLOTS, u & 1);
    return;
  }
  const double fm = MIX ? mix[c] : 0, tz = MIX ? qpsk_mix_turns(fm, lo) : 0;
  for (int64_t t0 = threadIdx.x; t0 < hi - lo; t0 += 4 * MF4_THREADS) {
    prx_cf32 v[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int64_t t = t0 + u * MF4_THREADS, s = lo + t;
      v[u] = t < hi - lo && s >= 0 && s < n_total ? load_rel<HALF>(row, s) : fill;
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const int64_t t = t0 + u * MF4_THREADS, s = lo + t;
      if (t >= hi - lo) break;
      const int in = s >= 0 && s < n_total;
      if (MIX && in) v[u] = qpsk_mix_sample(v[u], tz, fm, t);
      edge(v[u], t, s, in, u & 1);
    }
  }
}

/* The matched filter's tap count at sps 4 for which qpsk_mf4_kernel has its quads' product
 * unrolled (mf4_dot4c; qpsk_fir_init's rows at the bank's span of 12 symbols); any other count
 * takes qpsk_dot4c's loop. */
#define MF4_NT 52

/* qpsk_dot4c (qpsk_stage_math.h) for NT taps known at compile time: the same chunks, taps and
 * sums in the same order (the same values), the loop unrolled so that no loop control is left,
 * the tap and window loads can be issued ahead of their use, and each tap block is loaded once
 * for the quad and held for the four symbols that use it (four blocks live). */
template <int NT>
__device__ __forceinline__ void mf4_dot4c(const float *__restrict__ t1, const float2 *w,
                                          prx_cf32 out[4]) {
  static_assert(NT % 4 == 0, "whole chunks");
  constexpr int NJ = NT / 4, NC = NJ + 3;
  float re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0};
  float h[NJ > 0 ? NJ : 1][4];
#pragma unroll
  for (int c = 0; c < NC; c++) {
    float2 x[4];
    QPSK_LD2X(w + 18 * (c >> 2) + 4 * (c & 3), x[0], x[1]);
    QPSK_LD2X(w + 18 * (c >> 2) + 4 * (c & 3) + 2, x[2], x[3]);
    if (c < NJ) QPSK_TAPS4_1(t1 + 4 * c, h[c]);
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int j = c - q;
      if (j < 0 || j >= NJ) continue;
#pragma unroll
      for (int a = 0; a < 4; a++) {
        re[q] += h[j][a] * x[a].x;
        im[q] += h[j][a] * x[a].y;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < 4; q++) out[q].re = re[q], out[q].im = im[q];
}

/* qpsk_mf4_kernel's positions: a block's terms of qpsk_mf_tap4 taken once (mf4_pos_of), then
 * symbols k0 + d .. k0 + d + 3 of a run by 32-bit offsets from k0 (mf4_tap4). The same
 * expressions in the same order as qpsk_mf_tap4 (the run's first symbol as a double is k0's plus
 * its offset, both integers below 2^53: exact), so the same rows and offsets. */
typedef struct {
  double bL, base, p0, stepd, dk0;
} mf4_pos;
__device__ __forceinline__ mf4_pos mf4_pos_of(const qpsk_mf_timing *t, int64_t L, double sps,
                                              int64_t lo) {
  mf4_pos z;
  z.bL = (double)(t->b * L);
  z.base = z.bL * sps - (double)lo;
  z.p0 = t->R <= 0 ? (qpsk_instant(t, L, (double)t->k0) - z.bL) * sps + z.base : 0;
  z.stepd = sps * (1 + t->d);
  z.dk0 = (double)t->k0;
  return z;
}
/* symbols k0 + d .. k0 + d + m - 1 (m <= 4; n = k1 - k0): their rows and window offsets */
__device__ __forceinline__ void mf4_tap4(const qpsk_mf_timing *t, const mf4_pos *z, int64_t L,
                                         double sps, int d, int n, int m, unsigned Q, int c,
                                         unsigned row[4], int64_t off[4]) {
  double p0 = z->p0;
  int ka = 0, have = 0;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    if (q >= m) break;
    const int dq = d + q;
    double p;
    if (t->R <= 0) {
      p = z->p0 + (double)dq * z->stepd;
    } else {
      const int R = (int)t->R;
      if (!have || dq - ka >= R) {
        ka = (int)((unsigned)dq / (unsigned)R) * R;
        const int mm = n - ka < R ? n - ka : R;
        const double mid = (z->dk0 + (double)ka) + 0.5 * (double)(mm - 1);
        p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(mm - 1) - z->bL) * sps + z->base;
        have = 1;
      }
      p = p0 + (double)(dq - ka) * sps;
    }
    long i, j;
    qpsk_pos_at(p, Q, &i, &j);
    row[q] = (unsigned)j;
    off[q] = (int64_t)i - c;
  }
}

/* qpsk_mf_quad4 (qpsk_stage_math.h) on mf4_pos_of's terms: symbols k0 + d .. k0 + d + 3 (n =
 * k1 - k0) of one run from one position, the run's start, centre and symbol d's position by
 * mf4_tap4's expressions (so its rows and offsets where this returns 1: one row, offsets off0 +
 * 4 q); a block that is one run (R >= n) takes its start without the division. */
__device__ __forceinline__ bool mf4_quad(const qpsk_mf_timing *t, const mf4_pos *z, int64_t L,
                                         double sps, int d, int n, unsigned Q, int c, unsigned *row,
                                         int *off0) {
  if (t->R <= 0 || d + 3 >= n) return false;
  const int R = (int)t->R;
  const int ka = t->R >= n ? 0 : (int)((unsigned)d / (unsigned)R) * R;
  if (d + 3 - ka >= R) return false;
  const int mm = n - ka < R ? n - ka : R;
  const double mid = (z->dk0 + (double)ka) + 0.5 * (double)(mm - 1);
  const double p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(mm - 1) - z->bL) * sps + z->base;
  long i, j;
  if (!qpsk_pos_at4(p0 + (double)(d - ka) * sps, Q, &i, &j)) return false;
  *row = (unsigned)j;
  *off0 = (int)(i - c);
  return true;
}

/* The matched filter's tap count at sps 16/3 for which the pairs' product is unrolled (mf_dot2n;
 * qpsk_fir_init's rows at the bank's span of 12 symbols); any other count takes qpsk_dot2n's loop.
 */
#define MF3_NT 68

/* qpsk_dot2n (qpsk_stage_math.h) for NT taps known at compile time: the same chunks, taps and
 * sums in the same order (the same values), unrolled (no loop control; the tap blocks at fixed
 * offsets from the row), each tap block loaded once and held from its use by symbol 0 (chunk c)
 * to its use by symbol 1 (chunk c + 4). */
template <int NT>
__device__ __forceinline__ void mf_dot2n(const float *__restrict__ t1, const float2 *w, int off,
                                         prx_cf32 out[2]) {
  static_assert(NT % 4 == 0 && NT >= 16, "whole chunks, symbol 0 alone in the first four");
  constexpr int NJ = NT / 4, NC = NJ + 4;
  float re0 = 0, im0 = 0, re1 = 0, im1 = 0;
  float h[NJ][4];
#pragma unroll
  for (int c = 0; c < NC; c++) {
    float2 x[4];
#pragma unroll
    for (int a = 0; a < 4; a++) x[a] = w[qpsk_win_slot32x1(off + 4 * c + a)];
    if (c < NJ) {
      QPSK_TAPS4_1(t1 + 4 * c, h[c]);
#pragma unroll
      for (int a = 0; a < 4; a++) {
        re0 += h[c][a] * x[a].x;
        im0 += h[c][a] * x[a].y;
      }
    }
    if (c >= 4) {
#pragma unroll
      for (int a = 0; a < 4; a++) {
        re1 += h[c - 4][a] * x[a].x;
        im1 += h[c - 4][a] * x[a].y;
      }
    }
  }
  QPSK_OUT2(out, re0, im0, re1, im1);
}

/* block_sum<5> (qpsk_stages_cuda.cu) of four float terms and a zero, as the warps' partial sums
 * in scratch (w * 5 + j, j < 4; the zero term's sum is zero and not kept): the same trees with
 * the warp's lanes sharing them, a lane keeping the half of its sums that its bit selects and
 * sending the other half to its partner (xor 16, then 8), then the tree's last three levels on
 * one sum a lane; each addition is one of the tree's (a + b = b + a exactly), the first level
 * exchanging the floats (exact in double). Lane 8 j ends with term j's sum. Then one barrier. */
__device__ __forceinline__ void mf_block_sum4(const float acc[4], double *scratch) {
  const unsigned lane = threadIdx.x & 31;
  double x[2];
  {
    const bool b = lane & 16;
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const float keep = b ? acc[2 + i] : acc[i], send = b ? acc[i] : acc[2 + i];
      x[i] = (double)keep + (double)__shfl_xor_sync(0xffffffffu, send, 16);
    }
  }
  {
    const bool b = lane & 8;
    const double keep = b ? x[1] : x[0], send = b ? x[0] : x[1];
    x[0] = keep + __shfl_xor_sync(0xffffffffu, send, 8);
  }
#pragma unroll
  for (int o = 4; o > 0; o >>= 1) x[0] += __shfl_xor_sync(0xffffffffu, x[0], o);
  if ((lane & 7) == 0) scratch[(threadIdx.x >> 5) * 5 + (lane >> 3)] = x[0];
  __syncthreads();
}

/* A block's record of mf's sums: the warps' partial sums of the four V&V terms (scratch, w * 5 +
 * j, after the barrier that ends them) added in warp order by lane j of the first warp, and the
 * block's symbol count n, into block out's record sums[5 out .. 5 out + 4]. */
__device__ __forceinline__ void mf_store_sums(const double *scratch, double *sums, size_t out,
                                              int64_t n) {
  if (threadIdx.x < 4) {
    const int j = threadIdx.x;
    double s = 0;
    for (unsigned w = 0; w < STAGE_THREADS / 32; w++) s += scratch[w * 5 + j];
    sums[5 * out + j] = s;
    if (j == 0) sums[5 * out + 4] = (double)n;
  }
}

#endif
