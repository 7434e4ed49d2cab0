/* Counter-based complex Gaussian noise: sample k is a pure function of (seed, k), so the noise
 * is the same whatever the block sizes and however the samples are split among threads.
 *
 * Box-Muller with float polynomial log and sin/cos (relative error ~1e-7, far below any
 * statistical effect) instead of libm calls, so that the loop vectorises (libm's sqrtf, logf and
 * sincosf keep it scalar: errno and calls): the noise then costs less than one carrier. */
#include "sim_internal.h"

#include <math.h>

/* ln(u) for u in (0, 1]: u = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with
 * s = (m - 1)/(m + 1), |s| <= 0.172, by its series to s^9 (truncation < 1e-9). */
static inline float log_unit(float u) {
  uint32_t b;
  memcpy(&b, &u, sizeof b);
  int32_t e = (int32_t)(b >> 23) - 127;
  uint32_t mb = (b & 0x7fffffu) | 0x3f800000u;
  float m;
  memcpy(&m, &mb, sizeof m);
  int big = m > 1.41421356f;
  m *= 1.0f - 0.5f * (float)big; /* arithmetic, not a branch: keeps the loop vectorisable */
  e += big;
  float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  float series =
      2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9)))));
  return (float)e * 0.693147180559945f + series;
}

/* sqrt(y) for y >= 0: reciprocal square root from the exponent trick and two Newton steps
 * (relative error < 1e-9 before float rounding); the bias keeps y = 0 finite. */
static inline float sqrt_pos(float y) {
  y += 1e-30f;
  uint32_t b;
  memcpy(&b, &y, sizeof b);
  b = 0x5f375a86u - (b >> 1);
  float g;
  memcpy(&g, &b, sizeof g);
  g *= 1.5f - 0.5f * y * g * g;
  g *= 1.5f - 0.5f * y * g * g;
  return y * g;
}

void sim_noise(uint64_t seed, float sigma, uint64_t k0, size_t n, prx_cf32 *out) {
  for (size_t i = 0; i < n; i++) {
    uint64_t x = sim_splitmix64(seed, k0 + i);
    /* radius from the high 31 bits: u1 = (v + 0.5) / 2^31 in (0, 1], so log never sees 0; the
     * radius is at most sqrt(2 ln 2^32) = 6.7 sigma, reached with probability 2e-10 */
    int32_t hi = (int32_t)(x >> 33);
    float u1 = ((float)hi + 0.5f) * 0x1p-31f;
    float r = sigma * sqrt_pos(-2.0f * log_unit(u1));
    /* angle from the low 32 bits: quadrant from the top 2, the rest uniform in [-pi/4, pi/4) */
    uint32_t lo = (uint32_t)x;
    uint32_t quad = lo >> 30;
    float th = ((float)(int32_t)(lo & 0x3fffffffu) * 0x1p-30f - 0.5f) * 1.57079632679f;
    float t2 = th * th;
    float sn =
        th *
        (1.0f - t2 * (1.0f / 6 - t2 * (1.0f / 120 - t2 * (1.0f / 5040 - t2 * (1.0f / 362880)))));
    float cs =
        1.0f - t2 * (0.5f - t2 * (1.0f / 24 -
                                  t2 * (1.0f / 720 - t2 * (1.0f / 40320 - t2 * (1.0f / 3628800)))));
    /* rotate by quad quarter turns: (c, s), (-s, c), (-c, -s), (s, -c) */
    float swap = (float)(quad & 1);
    float a = cs + swap * (sn - cs), b = sn + swap * (cs - sn);
    float re = a * (1.0f - 2.0f * (float)((quad ^ (quad >> 1)) & 1));
    float im = b * (1.0f - 2.0f * (float)(quad >> 1));
    out[i].re = r * re;
    out[i].im = r * im;
  }
}
