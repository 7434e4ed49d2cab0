/* Hard decisions and LLRs for Gray QPSK (coherent) and differentially encoded QPSK. Symbols come
 * in as matched-filter outputs y and are corrected by one complex factor rot (carrier phase,
 * quarter-turn and 1/amplitude), so u = y rot is a unit-energy symbol plus noise of variance
 * sigma2 (complex, N0/Es). */
#ifndef PRX_QPSK_DECIDE_H
#define PRX_QPSK_DECIDE_H

#include "polyrx/core.h"
#include "qpsk_stage_math.h" /* QPSK_HD */

#include <stddef.h>
#include <stdint.h>

/* Coherent Gray: b0 = [Re u < 0], b1 = [Im u < 0];
 * LLR(b0) = log P(b0=0)/P(b0=1) = 2 sqrt(2) Re(u) / sigma2, LLR(b1) likewise with Im(u):
 * with p(u | s) ~ exp(-|u - s|^2 / sigma2) and Re s = +-1/sqrt(2), the log ratio is
 * ((Re u + 1/sqrt2)^2 - (Re u - 1/sqrt2)^2) / sigma2. bits / llrs may be NULL. */
void qpsk_decide_coherent(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, uint8_t *bits,
                          float *llrs);

/* The previous symbol of a differential chain: its quadrant and its four symbol metrics. */
typedef struct {
  unsigned quad; /* quadrant 0..3 of u (s = e^{j pi/4} j^quad) */
  float m[4];    /* log p(u | s = e^{j pi/4} j^q) up to a constant, q = 0..3 */
} qpsk_diff_prev;

QPSK_HD unsigned qpsk_quadrant(float re, float im) {
  /* (+,+) 0, (-,+) 1, (-,-) 2, (+,-) 3 */
  unsigned b0 = re < 0, b1 = im < 0;
  return b0 ? (b1 ? 2u : 1u) : (b1 ? 3u : 0u);
}

/* The stream's reference symbol (1+j)/sqrt(2): quadrant 0, known exactly. */
void qpsk_diff_reference(qpsk_diff_prev *p);
/* Fills p from one corrected symbol u = y rot (host and GPU: the phase pass's link of the chain
 * too, qpsk_serial_phase.h). */
QPSK_HD void qpsk_diff_set(qpsk_diff_prev *p, prx_cf32 y, prx_cf32 rot, float sigma2) {
  const prx_cf32 u = {y.re * rot.re - y.im * rot.im, y.re * rot.im + y.im * rot.re};
  p->quad = qpsk_quadrant(u.re, u.im);
  /* v = u e^{-j pi/4}: m_q = a Re(u conj(e^{j pi/4} j^q)) = a {v.re, v.im, -v.re, -v.im} */
  const float a = 2.0f / sigma2, h = 0.70710678118654752440f;
  const float vr = (u.re + u.im) * h, vi = (u.im - u.re) * h;
  p->m[0] = a * vr;
  p->m[1] = a * vi;
  p->m[2] = -a * vr;
  p->m[3] = -a * vi;
}

/* Differential: g = quadrant(u[n]) - quadrant(u[n-1]) mod 4, bits from g (polyrx/modem.h).
 * LLRs are the exact two-symbol ones: with metrics m_q(u) = (2/sigma2) Re(u conj(s_q)),
 *   P(g | u[n-1], u[n]) ~ T_g = sum_q exp(m_q(u[n-1]) + m_{q+g}(u[n])),
 *   LLR(b0) = log (T0 + T1) / (T2 + T3),  LLR(b1) = log (T0 + T3) / (T1 + T2)
 * (g = 0, 1, 2, 3 carry bits 00, 01, 11, 10), evaluated in a scaled form with a max-log fallback
 * where the sums underflow. prev is updated to the last symbol. */
void qpsk_decide_diff(const prx_cf32 *y, size_t n, prx_cf32 rot, float sigma2, qpsk_diff_prev *prev,
                      uint8_t *bits, float *llrs);

#endif
