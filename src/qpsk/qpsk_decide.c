/* Decisions and LLRs (see qpsk_decide.h). */
#include "qpsk_decide.h"

#include <math.h>

#define SQRT1_2F 0.70710678118654752440f

static inline prx_cf32 cmul(prx_cf32 a, prx_cf32 b) {
  prx_cf32 r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return r;
}

void qpsk_decide_coherent(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, uint8_t *bits,
                          float *llrs) {
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

static inline void metrics(prx_cf32 u, float a, float m[4]) {
  /* v = u e^{-j pi/4}: m_q = a Re(u conj(e^{j pi/4} j^q)) = a {v.re, v.im, -v.re, -v.im} */
  float vr = (u.re + u.im) * SQRT1_2F, vi = (u.im - u.re) * SQRT1_2F;
  m[0] = a * vr;
  m[1] = a * vi;
  m[2] = -a * vr;
  m[3] = -a * vi;
}

void qpsk_diff_set(qpsk_diff_prev *p, prx_cf32 y, prx_cf32 rot, float sigma2) {
  prx_cf32 u = cmul(y, rot);
  p->quad = qpsk_quadrant(u.re, u.im);
  metrics(u, 2.0f / sigma2, p->m);
}

static inline float max4(const float m[4]) {
  float a = m[0] > m[1] ? m[0] : m[1], b = m[2] > m[3] ? m[2] : m[3];
  return a > b ? a : b;
}

void qpsk_decide_diff(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, qpsk_diff_prev *prev,
                      uint8_t *bits, float *llrs) {
  static const uint8_t gb[4][2] = {{0, 0}, {0, 1}, {1, 1}, {1, 0}}; /* bits of rotation g */
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
  for (size_t i = 0; i < n; i++) {
    prx_cf32 u = cmul(y[i], rot);
    unsigned quad = qpsk_quadrant(u.re, u.im);
    unsigned g = (quad - p.quad) & 3u;
    if (bits) {
      bits[2 * i] = gb[g][0];
      bits[2 * i + 1] = gb[g][1];
    }
    float m[4];
    metrics(u, a, m);
    if (llrs) {
      float M1 = max4(p.m), M2 = max4(m), e1[4], e2[4];
      for (int q = 0; q < 4; q++) {
        e1[q] = expf(p.m[q] - M1);
        e2[q] = expf(m[q] - M2);
      }
      float t[4];
      for (int gg = 0; gg < 4; gg++)
        t[gg] = e1[0] * e2[gg] + e1[1] * e2[(1 + gg) & 3] + e1[2] * e2[(2 + gg) & 3] +
                e1[3] * e2[(3 + gg) & 3];
      float n0 = t[0] + t[1], d0 = t[2] + t[3], n1 = t[0] + t[3], d1 = t[1] + t[2];
      if (n0 > 1e-30f && d0 > 1e-30f && n1 > 1e-30f && d1 > 1e-30f) {
        llrs[2 * i] = logf(n0 / d0);
        llrs[2 * i + 1] = logf(n1 / d1);
      } else { /* max-log: the exact value's limit where the losing terms underflow */
        float l[4];
        for (int gg = 0; gg < 4; gg++) {
          float best = -INFINITY;
          for (int q = 0; q < 4; q++) {
            float v = p.m[q] + m[(q + gg) & 3];
            if (v > best) best = v;
          }
          l[gg] = best;
        }
        llrs[2 * i] = fmaxf(l[0], l[1]) - fmaxf(l[2], l[3]);
        llrs[2 * i + 1] = fmaxf(l[0], l[3]) - fmaxf(l[1], l[2]);
      }
    }
    p.quad = quad;
    for (int q = 0; q < 4; q++) p.m[q] = m[q];
  }
  *prev = p;
}
