/* cf32 -> cf16 and cf32 -> ci16 (pack.h). The conversions are exact functions of each value, so
 * the vector paths (F16C where the build targets it; loops the compiler vectorises otherwise)
 * give the scalar definitions' results bit for bit. */
#include "pack.h"

#include <string.h>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

uint16_t prx_half_from_float(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) /* infinity, or NaN kept quiet with its top payload bits */
    return sign | (x > 0x7f800000u ? (uint16_t)(0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u);
  if (x >= 0x477ff000u) return sign | 0x7c00u; /* from 65520 (= 65504 + half an ulp) up */
  if (x < 0x38800000u) {
    /* below 2^-14: a subnormal half, k * 2^-24 with k = the value * 2^24 rounded to even
     * (exact scaling; adding and subtracting 2^23 rounds to an integer, ties to even) */
    float a;
    memcpy(&a, &x, 4);
    float k = (a * 16777216.0f + 8388608.0f) - 8388608.0f;
    return sign | (uint16_t)k; /* k = 1024 is the smallest normal's pattern, as it must be */
  }
  /* normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to even; a carry out
   * of the mantissa steps the exponent, which is the right result */
  x += 0xc8000fffu + ((x >> 13) & 1u);
  return sign | (uint16_t)(x >> 13);
}

void prx_pack_cf16(const prx_cf32 *in, size_t n, uint16_t *out) {
  const float *f = (const float *)in;
  size_t m = 2 * n, i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= m; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)(out + i), h);
  }
#endif
  for (; i < m; i++) out[i] = prx_half_from_float(f[i]);
}

size_t prx_pack_ci16(const prx_cf32 *in, size_t n, float scale, int16_t *out) {
  const float *f = (const float *)in;
  size_t m = 2 * n, sat = 0;
  for (size_t i = 0; i < m; i++) {
    float v = f[i] * scale;
    float c = v < -32768.0f ? -32768.0f : v > 32767.0f ? 32767.0f : v;
    int bad = !(v >= -32768.0f && v <= 32767.0f); /* saturated, or NaN */
    c = v == v ? c : 0.0f;
    /* |c| <= 32768 < 2^22: adding and subtracting 1.5 * 2^23 rounds to an integer, ties to
     * even, in the default rounding mode */
    float r = (c + 12582912.0f) - 12582912.0f;
    out[i] = (int16_t)r;
    sat += (size_t)bad;
  }
  return sat;
}
