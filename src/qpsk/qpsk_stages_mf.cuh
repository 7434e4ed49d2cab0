/* The matched-filter kernel's window layouts and its one-symbol product (qpsk_stages_cuda.cu:
 * qpsk_mf_kernel). Included after qpsk_stage_math.h (qpsk_win_slot, qpsk_win_slot8,
 * qpsk_win_slot32x1).
 *
 * Layouts of the window in shared memory: MF_FLAT (window index t at slot t), MF_PAD16 (one
 * spare slot per 16 samples, qpsk_win_slot's QPSK_PAD16: one symbol a thread), MF_PAD8X2 (index
 * t shifted by the thread block's sh, two spare slots per 8 samples, qpsk_win_slot8: the
 * consecutive pairs of qpsk_dot2c at sps 4) and MF_PAD32 (one spare slot per 32 samples,
 * qpsk_win_slot32x1: the pairs 16 samples apart of qpsk_dot2n where P sps = 16). */
#ifndef PRX_QPSK_STAGES_MF_CUH
#define PRX_QPSK_STAGES_MF_CUH

#define MF_FLAT 0
#define MF_PAD16 1
#define MF_PAD8X2 2
#define MF_PAD32 3

/* the slot of window index t (sh: MF_PAD8X2's shift) */
template <int LAYOUT> __device__ __forceinline__ int64_t mf_slot(int64_t t, int sh) {
  if (LAYOUT == MF_PAD8X2) return qpsk_win_slot8((int)t + sh);
  if (LAYOUT == MF_PAD32) return qpsk_win_slot32x1((int)t);
  return qpsk_win_slot(t, LAYOUT == MF_PAD16 ? QPSK_PAD16 : 0);
}
template <int LAYOUT> __device__ __forceinline__ int mf_slot32(int t, int sh) {
  if (LAYOUT == MF_PAD8X2) return qpsk_win_slot8(t + sh);
  if (LAYOUT == MF_PAD32) return qpsk_win_slot32x1(t);
  return qpsk_win_slot32(t, LAYOUT == MF_PAD16 ? QPSK_PAD16 : 0);
}

/* the window's slots for nw samples (shared memory, float2) */
__host__ __device__ inline size_t mf_slots(int layout, size_t nw) {
  if (layout == MF_PAD8X2) return (nw + 7) + 2 * ((nw + 7) >> 3) + 2;
  if (layout == MF_PAD32) return nw + nw / 32 + 1;
  return layout == MF_PAD16 ? nw + nw / 16 + 1 : nw;
}

/* the window index of symbol k0's first input: qpsk_mf_tap's offset for k = k0 (the start of the
 * block's first run) without its division; MF_PAD8X2's shift is taken from it */
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

#endif
