/* AVX2 helpers shared by the demodulator's kernels (QPSK_AVX2 is defined where they exist; the
 * kernels keep a portable scalar path for other builds). The files that include it are built
 * per instruction set (PRX_ISA_DISPATCH, ../core/internal.h). */
#ifndef PRX_QPSK_SIMD_H
#define PRX_QPSK_SIMD_H

#include "../core/internal.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define QPSK_AVX2 1

/* complex products of 4 complex pairs held interleaved (re, im) */
static inline __m256 cmul8(__m256 a, __m256 b) {
  __m256 re = _mm256_moveldup_ps(a), im = _mm256_movehdup_ps(a);
  return _mm256_addsub_ps(_mm256_mul_ps(re, b), _mm256_mul_ps(im, _mm256_permute_ps(b, 0xB1)));
}

/* cmul8(x - dc, p) for 4 complex values at x, bit for bit, with the shuffles moved out of the
 * way: x's real and imaginary parts duplicated as they load (less dre / dim, the DC's parts
 * broadcast), p_swapped = p with re and im exchanged (_mm256_permute_ps(p, 0xB1)), which a
 * caller can share with other products of p */
static inline __m256 cmul8_dc(const float *x, __m256 dre, __m256 dim, __m256 p, __m256 p_swapped) {
  __m256 v = _mm256_loadu_ps(x);
  return _mm256_addsub_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_moveldup_ps(v), dre), p),
                          _mm256_mul_ps(_mm256_sub_ps(_mm256_movehdup_ps(v), dim), p_swapped));
}

/* [a0 a1 a2 a3], each 8 lanes of (re, im) partial products, to [re0 im0 re1 im1 re2 im2 re3 im3]:
 * the sum of the four complex values of each input vector */
static inline __m256 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 s01 =
      _mm256_add_ps(_mm256_permute2f128_ps(a0, a1, 0x20), _mm256_permute2f128_ps(a0, a1, 0x31));
  __m256 s23 =
      _mm256_add_ps(_mm256_permute2f128_ps(a2, a3, 0x20), _mm256_permute2f128_ps(a2, a3, 0x31));
  __m256 t = _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u = _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 v = _mm256_add_ps(t, u); /* [out0 out2 | out1 out3] */
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* v[0..7] (vector j: 8 floats of row j) to columns: v[k] lane j = row j's float k. Kernels that
 * run eight independent sums, one per lane, read eight rows this way. */
static inline void transpose8(__m256 v[8]) {
  __m256 t[8], u[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(v[j], v[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(v[j], v[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
    u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  for (int k = 0; k < 4; k++) {
    v[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    v[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}
#endif

#endif
