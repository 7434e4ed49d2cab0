/* Decisions and LLRs (see qpsk_decide.h). */
#include "qpsk_decide.h"

#include "../core/internal.h"

#include <math.h>
#include <string.h>

#define SQRT1_2F 0.70710678118654752440f

void qpsk_decide_coherent(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, uint8_t *bits,
                          float *llrs) {
  PRX_ISA_DISPATCH(qpsk_decide_coherent, y, n, rot, sigma2, bits, llrs);
  const float rr = rot.re, ri = rot.im;
  if (bits) {
    for (size_t i = 0; i < n; i++) {
      float ur = y[i].re * rr - y[i].im * ri, ui = y[i].re * ri + y[i].im * rr;
      bits[2 * i] = ur < 0;
      bits[2 * i + 1] = ui < 0;
    }
  }
  if (llrs) {
    const float k = 2.0f * 1.41421356237309504880f / sigma2;
    for (size_t i = 0; i < n; i++) {
      llrs[2 * i] = k * (y[i].re * rr - y[i].im * ri);
      llrs[2 * i + 1] = k * (y[i].re * ri + y[i].im * rr);
    }
  }
}

void qpsk_diff_reference(qpsk_diff_prev *p) {
  p->quad = 0;
  p->m[0] = 0;
  p->m[1] = p->m[2] = p->m[3] = -1e30f;
}

/* c ? a : b for c in {0, 1}, as a bit mask: GCC keeps float selects as branches under the
 * default -ftrapping-math, which stops the loops below from vectorising; this stays exact */
static inline float fsel(int c, float a, float b) {
  int32_t ia, ib, m = -c;
  memcpy(&ia, &a, sizeof ia);
  memcpy(&ib, &b, sizeof ib);
  ia = (ia & m) | (ib & ~m);
  float r;
  memcpy(&r, &ia, sizeof r);
  return r;
}
/* max without fmaxf (a libm call, for its NaN rules) */
static inline float maxf(float a, float b) { return fsel(a > b, a, b); }

static inline float max4(const float m[4]) {
  float a = m[0] > m[1] ? m[0] : m[1], b = m[2] > m[3] ? m[2] : m[3];
  return a > b ? a : b;
}

/* exp(x) for x <= 0 (clamped at -87, where it reaches the smallest normal floats), and log(x) for
 * normal x > 0: polynomials written as straight-line float code, so that the loops using them
 * vectorise (libm's expf/logf keep them scalar). Relative error below 3e-7. */
static inline float fast_exp_neg(float x) {
  x = maxf(x, -87.0f);
  /* 2^t = 2^n 2^f with n = round(t), |f| <= 1/2; rounding by the 1.5 * 2^23 trick (floorf would
   * not vectorise) */
  float t = x * 1.44269504089f, n = (t + 12582912.0f) - 12582912.0f, f = t - n;
  float p = 1.540353039e-4f; /* e^(f ln2), Taylor to f^6 */
  p = p * f + 1.333355815e-3f;
  p = p * f + 9.618129108e-3f;
  p = p * f + 5.550410866e-2f;
  p = p * f + 2.402265070e-1f;
  p = p * f + 6.931471806e-1f;
  p = p * f + 1.0f;
  int32_t e = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &e, sizeof scale);
  return p * scale;
}

static inline float fast_log(float x) {
  int32_t b;
  memcpy(&b, &x, sizeof b);
  int32_t e = ((b >> 23) & 0xff) - 127;
  int32_t mb = (b & 0x007fffff) | 0x3f800000;
  float m;
  memcpy(&m, &mb, sizeof m); /* [1, 2) */
  int big = m > 1.41421356f; /* keep m in [1/sqrt2, sqrt2): the series converges fast there */
  m = fsel(big, 0.5f * m, m);
  float fe = (float)(e + big);
  float s = (m - 1) / (m + 1), s2 = s * s; /* log m = 2 atanh s, |s| < 0.172 */
  float p = s2 * (1.0f / 7) + 1.0f / 5;
  p = p * s2 + 1.0f / 3;
  p = p * s2 + 1.0f;
  return fe * 0.693147181f + 2 * s * p;
}

void qpsk_decide_diff(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, qpsk_diff_prev *prev,
                      uint8_t *bits, float *llrs) {
  PRX_ISA_DISPATCH(qpsk_decide_diff, y, n, rot, sigma2, prev, bits, llrs);
  const float a = 2.0f / sigma2;
  qpsk_diff_prev p = *prev;
  if (!llrs) { /* hard decisions only: quadrant steps, branch-free so that it vectorises */
    if (bits && n > 0) {
      const float rr = rot.re, ri = rot.im;
      /* quadrant of u as 2 b1 + (b0 xor b1) with b0 = [Re u < 0], b1 = [Im u < 0] */
      for (size_t i = 0; i < n; i++) {
        float ur = y[i].re * rr - y[i].im * ri, ui = y[i].re * ri + y[i].im * rr;
        unsigned b0 = ur < 0, b1 = ui < 0;
        bits[2 * i] = (uint8_t)(2 * b1 + (b0 ^ b1)); /* the quadrant, for now */
      }
      unsigned qprev = p.quad;
      for (size_t i = 0; i < n; i++) {
        unsigned quad = bits[2 * i], g = (quad - qprev) & 3u;
        qprev = quad;
        /* g = 0, 1, 2, 3 carry bits 00, 01, 11, 10 */
        bits[2 * i] = (uint8_t)(g >> 1);
        bits[2 * i + 1] = (uint8_t)((g ^ (g >> 1)) & 1u);
      }
    }
    if (n > 0) qpsk_diff_set(prev, y[n - 1], rot, sigma2);
    return;
  }
  /* With LLRs: in runs of up to 256 symbols, first each symbol's metrics m_q = {R, I, -R, -I}
   * and their scaled exponentials e_q = exp(m_q - max m) (a vector loop over separate arrays),
   * then each pair's T_g = sum_q e_q(prev) e_{q+g}(this) and the two log ratios (another); where
   * a ratio's terms underflow (very high SNR) the max-log value, its exact limit, is used.
   * Index 0 of each array holds the symbol before the run. */
  enum { RUN = 256 };
  float R[RUN + 1], I[RUN + 1], e0[RUN + 1], e1[RUN + 1], e2[RUN + 1], e3[RUN + 1];
  unsigned quad[RUN + 1];
  for (size_t base = 0; base < n; base += RUN) {
    size_t len = n - base < RUN ? n - base : RUN;
    quad[0] = p.quad;
    /* the previous symbol's metrics are {R, I, -R, -I} too, except the stream's reference,
     * which is known exactly: R = 0 with e = {1, 0, 0, 0} */
    R[0] = p.m[0];
    I[0] = p.m[1];
    float M0 = max4(p.m);
    e0[0] = fast_exp_neg(p.m[0] - M0);
    e1[0] = fast_exp_neg(p.m[1] - M0);
    e2[0] = fast_exp_neg(p.m[2] - M0);
    e3[0] = fast_exp_neg(p.m[3] - M0);
    const float rr = rot.re, ri = rot.im;
    for (size_t i = 1; i <= len; i++) {
      float yr = y[base + i - 1].re, yi = y[base + i - 1].im;
      float ur = yr * rr - yi * ri, ui = yr * ri + yi * rr;
      float r = a * (ur + ui) * SQRT1_2F, im = a * (ui - ur) * SQRT1_2F;
      float M = maxf(fabsf(r), fabsf(im));
      R[i] = r;
      I[i] = im;
      e0[i] = fast_exp_neg(r - M);
      e1[i] = fast_exp_neg(im - M);
      e2[i] = fast_exp_neg(-r - M);
      e3[i] = fast_exp_neg(-im - M);
      unsigned b0 = ur < 0, b1 = ui < 0;
      quad[i] = 2 * b1 + (b0 ^ b1);
    }
    float *l = llrs + 2 * base;
    const int ref0 = p.m[2] < -1e29f; /* the reference symbol: its metrics are not {R, I, -R, -I} */
    for (size_t i = 1; i <= len; i++) {
      float t0 = e0[i - 1] * e0[i] + e1[i - 1] * e1[i] + e2[i - 1] * e2[i] + e3[i - 1] * e3[i];
      float t1 = e0[i - 1] * e1[i] + e1[i - 1] * e2[i] + e2[i - 1] * e3[i] + e3[i - 1] * e0[i];
      float t2 = e0[i - 1] * e2[i] + e1[i - 1] * e3[i] + e2[i - 1] * e0[i] + e3[i - 1] * e1[i];
      float t3 = e0[i - 1] * e3[i] + e1[i - 1] * e0[i] + e2[i - 1] * e1[i] + e3[i - 1] * e2[i];
      float n0 = t0 + t1, d0 = t2 + t3, n1 = t0 + t3, d1 = t1 + t2;
      /* max-log: L_g = max_q m1_q + m2_{q+g} with m = {R, I, -R, -I} */
      float r1 = R[i - 1], i1 = I[i - 1], r2 = R[i], i2 = I[i];
      float L0 = maxf(maxf(r1 + r2, i1 + i2), maxf(-r1 - r2, -i1 - i2));
      float L1 = maxf(maxf(r1 + i2, i1 - r2), maxf(-r1 - i2, -i1 + r2));
      float L2 = maxf(maxf(r1 - r2, i1 - i2), maxf(-r1 + r2, -i1 + i2));
      float L3 = maxf(maxf(r1 - i2, i1 + r2), maxf(-r1 + i2, -i1 - r2));
      int ok0 = (n0 > 1e-30f) & (d0 > 1e-30f), ok1 = (n1 > 1e-30f) & (d1 > 1e-30f);
      float x0 = fast_log(fsel(ok0, n0, 1.0f)) - fast_log(fsel(ok0, d0, 1.0f));
      float x1 = fast_log(fsel(ok1, n1, 1.0f)) - fast_log(fsel(ok1, d1, 1.0f));
      l[2 * (i - 1)] = fsel(ok0, x0, maxf(L0, L1) - maxf(L2, L3));
      l[2 * (i - 1) + 1] = fsel(ok1, x1, maxf(L0, L3) - maxf(L1, L2));
    }
    if (ref0 && len > 0) { /* the stream's first symbol against the known reference: T_g = e_g */
      float n0 = e0[1] + e1[1], d0 = e2[1] + e3[1], n1 = e0[1] + e3[1], d1 = e1[1] + e2[1];
      float r2 = R[1], i2 = I[1];
      l[0] =
          n0 > 1e-30f && d0 > 1e-30f ? fast_log(n0) - fast_log(d0) : maxf(r2, i2) - maxf(-r2, -i2);
      l[1] =
          n1 > 1e-30f && d1 > 1e-30f ? fast_log(n1) - fast_log(d1) : maxf(r2, -i2) - maxf(i2, -r2);
    }
    if (bits) {
      uint8_t *bb = bits + 2 * base;
      for (size_t i = 1; i <= len; i++) {
        unsigned g = (quad[i] - quad[i - 1]) & 3u; /* bits 00, 01, 11, 10 for g = 0..3 */
        bb[2 * (i - 1)] = (uint8_t)(g >> 1);
        bb[2 * (i - 1) + 1] = (uint8_t)((g ^ (g >> 1)) & 1u);
      }
    }
    p.quad = quad[len];
    p.m[0] = R[len];
    p.m[1] = I[len];
    p.m[2] = -R[len];
    p.m[3] = -I[len];
  }
  *prev = p;
}
