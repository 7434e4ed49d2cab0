/* cf32 -> cf16 and cf32 -> ci16 (pack.h). The conversions are exact functions of each value, so
 * the vector paths (on x86-64: F16C for cf16, AVX2 for ci16, where the build targets them or
 * the CPU has them at run time) give the scalar definitions' results bit for bit. */
#include "pack.h"

#include "../core/internal.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PACK_X86 1 /* the vector paths below, chosen where the CPU has them */
#endif

#if defined(PACK_X86)
/* cf16 by F16C, 8 values at a time: always where the build targets it, else where the CPU has it
 * at run time (the portable default build): the scalar conversion is about 15x slower, a large
 * part of a command writing cf16 channels. Returns the values done. */
__attribute__((target("avx,f16c"))) static size_t pack_f16c(const float *f, size_t m,
                                                            uint16_t *out) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)(out + i), h);
  }
  return i;
}
#endif

#if defined(PACK_X86) && !(defined(__F16C__) && defined(__AVX__))
/* Whether the CPU has F16C (and the OS keeps AVX state): asked once per process
 * (prx_cpu_features), not per call. */
static int cpu_has_f16c(void) {
  return (prx_cpu_features() & (PRX_CPU_F16C | PRX_CPU_AVX)) == (PRX_CPU_F16C | PRX_CPU_AVX);
}
#endif

#if defined(PACK_X86)
/* ci16 by AVX2 where the CPU has it (the scalar loop below is not vectorised: 5 ns a value):
 * the same operations (the product, the clamp, NaN to 0, the saturation test, rounding to
 * nearest even as the default rounding mode does) on 16 values at a time. Returns the values
 * done and adds their saturations to *sat. */
__attribute__((target("avx2,popcnt"))) static size_t
pack_ci16_avx2(const float *f, size_t m, float scale, int16_t *out, size_t *sat) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-32768.0f),
               hi = _mm256_set1_ps(32767.0f);
  size_t i = 0, inside = 0;
  for (; i + 16 <= m; i += 16) {
    __m256i q[2];
    for (int h = 0; h < 2; h++) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(f + i + 8 * h), s);
      __m256 in = _mm256_and_ps(_mm256_cmp_ps(v, lo, _CMP_GE_OQ), _mm256_cmp_ps(v, hi, _CMP_LE_OQ));
      inside += (size_t)__builtin_popcount((unsigned)_mm256_movemask_ps(in));
      /* max(v, lo) is lo for a NaN v; the ordered mask then makes it 0 */
      __m256 c = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      c = _mm256_and_ps(c, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
      q[h] = _mm256_cvtps_epi32(c);
    }
    /* packs works per 128-bit lane: the 64-bit quarters put back in order */
    __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xd8);
    _mm256_storeu_si256((__m256i *)(out + i), p);
  }
  *sat += i - inside;
  return i;
}
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
#if defined(PACK_X86) && defined(__F16C__) && defined(__AVX__)
  i = pack_f16c(f, m, out);
#elif defined(PACK_X86)
  if (cpu_has_f16c()) i = pack_f16c(f, m, out);
#endif
  for (; i < m; i++) out[i] = prx_half_from_float(f[i]);
}

size_t prx_pack_ci16(const prx_cf32 *in, size_t n, float scale, int16_t *out) {
  const float *f = (const float *)in;
  size_t m = 2 * n, sat = 0, i = 0;
#if defined(PACK_X86)
  if (prx_cpu_features() & PRX_CPU_AVX2) i = pack_ci16_avx2(f, m, scale, out, &sat);
#endif
  for (; i < m; i++) {
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

size_t prx_pack_bits(prx_bit_packer *p, const uint8_t *bits, size_t n, int last, uint8_t *out) {
  unsigned acc = p->byte, k = p->n;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 1) | (bits[i] & 1u);
    if (++k == 8) {
      out[m++] = (uint8_t)acc;
      acc = k = 0;
    }
  }
  if (last && k) {
    out[m++] = (uint8_t)(acc << (8 - k));
    acc = k = 0;
  }
  p->byte = (uint8_t)acc;
  p->n = (uint8_t)k;
  return m;
}

/* Writes n samples scaled by `scale` in format f; returns the number of samples with a clipped
 * component. cf32: float32(scale x). Integer formats map 1.0 to full scale as polyrx/core.h
 * reads them (ci16 / 32768, ci8 / 128, cu8 (v - 127.5) / 127.5): each component is
 * q = g x + o in float64, with g = scale F (F = 32768, 128, 127.5; o = 0, 0, 127.5), rounded to
 * the nearest integer (ties to even) and clipped to the type's range. The product and the sum
 * are separate statements so that no compiler fuses them: the rule is exact (docs/FORMATS.md)
 * and tests/cli_gen.sh checks it bit for bit. */
size_t prx_encode_scaled(prx_format f, const prx_cf32 *x, size_t n, double scale, void *out) {
  size_t clipped = 0;
  double full = 1, offset = 0, lo = 0, hi = 0;
  switch (f) {
  case PRX_CF32: {
    float *o = out;
    for (size_t i = 0; i < n; i++)
      o[2 * i] = (float)(scale * x[i].re), o[2 * i + 1] = (float)(scale * x[i].im);
    return 0;
  }
  case PRX_CI16: full = 32768, lo = -32768, hi = 32767; break;
  case PRX_CI8: full = 128, lo = -128, hi = 127; break;
  case PRX_CU8: full = 127.5, offset = 127.5, lo = 0, hi = 255; break;
  case PRX_CF16: return 0; /* the caller's: prx_pack_cf16 */
  }
  const double g = scale * full;
  for (size_t i = 0; i < n; i++) {
    double v[2] = {g * x[i].re, g * x[i].im};
    int clip = 0;
    for (int j = 0; j < 2; j++) {
      v[j] += offset;
      v[j] = nearbyint(v[j]);
      if (!(v[j] >= lo)) v[j] = lo, clip = 1; /* (a NaN too: counted as clipped) */
      if (v[j] > hi) v[j] = hi, clip = 1;
    }
    clipped += clip;
    if (f == PRX_CI16) {
      int16_t *o = (int16_t *)out + 2 * i;
      o[0] = (int16_t)v[0], o[1] = (int16_t)v[1];
    } else if (f == PRX_CI8) {
      int8_t *o = (int8_t *)out + 2 * i;
      o[0] = (int8_t)v[0], o[1] = (int8_t)v[1];
    } else {
      uint8_t *o = (uint8_t *)out + 2 * i;
      o[0] = (uint8_t)v[0], o[1] = (uint8_t)v[1];
    }
  }
  return clipped;
}
