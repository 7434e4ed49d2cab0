/* A real-tap FIR on complex input evaluated only on an output grid of step r input samples
 * (r = sps/4 for the matched filter's 4 samples/symbol grid, sps/2 for the CFO pre-filter): a
 * polyphase bank of Q fractional phases, so that any sps >= 2 (integer or not, decimating or
 * interpolating) costs one dot product per output and nothing per unused input sample.
 *
 * Output m is the filter's value at input position p = m r (p = 0 is input sample 0):
 *     z(p) = sum_n x[n] h(p - n),   h(d) = scale * rrc(d / sps), |d| <= span * sps / 2.
 * With i = floor(p) and phase j = round(frac(p) Q) (j = Q carries into i + 1), the taps of
 * phase j are h(j/Q + c - l) applied to x[i - c + l], l = 0 .. ntaps - 1. When r Q is an integer
 * (Q chosen as the smallest divisor of 240 that makes it so) positions are exact integers; else Q
 * is 240 and the fractional position is rounded to 1/240 sample. */
#ifndef PRX_QPSK_FIR_H
#define PRX_QPSK_FIR_H

#include "polyrx/core.h"

#include <math.h>
#include <stdint.h>

typedef struct {
  double r;          /* input samples per output */
  int64_t rq;        /* r * Q when it is an integer (exact positions), else -1 */
  unsigned Q;        /* phases */
  int c;             /* output at i + j/Q reads x[i - c .. i - c + ntaps - 1] */
  unsigned ntaps;    /* taps per phase, a multiple of 4 (zero padded) */
  const float *bank; /* Q rows of 2 * ntaps floats: tap l stored twice (2l, 2l+1) to multiply
                        interleaved re/im directly; shared by every filter of the same design
                        (qpsk_fir_init) */
} qpsk_fir;

/* Designs the bank for an RRC of roll-off beta truncated to span_sym symbols, scaled by scale,
 * for a grid of step r; r = 0 makes a bank for arbitrary positions (qpsk_fir_run_at) of Q phases,
 * Q sps >= 1024 (16 <= Q <= 256), so positions round to at most 1/2048 symbol. A design made
 * before with the same parameters (and not yet freed by all its users) is shared, not made again.
 * Thread-safe. */
prx_status qpsk_fir_init(qpsk_fir *f, double sps, double beta, double span_sym, double r,
                         double scale);
void qpsk_fir_free(qpsk_fir *f);

/* Input sample range [*lo, *hi) read by outputs m in [m0, m1) (padding included). */
void qpsk_fir_window(const qpsk_fir *f, int64_t m0, int64_t m1, int64_t *lo, int64_t *hi);

/* Computes outputs m0 .. m0 + n - 1 into out; x[0] is input sample x_base and x must cover
 * qpsk_fir_window(f, m0, m0 + n). Meanwhile prefetches pf_bytes from pf (NULL, 0: nothing) into
 * the L2 cache, a few cache lines per eight outputs: memory that a later stage reads first
 * arrives while the filter computes (spread out, the prefetches never wait for the memory; at
 * once, they would). */
void qpsk_fir_run(const qpsk_fir *f, const prx_cf32 *x, int64_t x_base, int64_t m0, size_t n,
                  prx_cf32 *out, const void *pf, size_t pf_bytes);

/* Computes outputs at positions p0 + k step (input samples, relative to x[0]) for k < n; x must
 * cover [floor(p0) - c, floor(p0 + (n - 1) step) + 1 - c + ntaps). Outputs whose four phases
 * coincide (an integer step) share their taps' loads. Prefetches pf as qpsk_fir_run does. */
void qpsk_fir_run_at(const qpsk_fir *f, const prx_cf32 *x, double p0, double step, size_t n,
                     prx_cf32 *out, const void *pf, size_t pf_bytes);

/* The period of a fractional phase advancing step samples an output: the smallest P <= 8 with
 * P step an integer (to 1e-9 relative), 0 where there is none. Outputs P apart share their taps,
 * and the matched filter's runs of one timing are multiples of 8 P symbols. */
static inline unsigned qpsk_phase_period(double step) {
  for (unsigned c = 1; c <= 8; c++)
    if (fabs(c * step - nearbyint(c * step)) < 1e-9 * c * step) return c;
  return 0;
}

/* floor(a / b) for b > 0 and any sign of a */
static inline int64_t qpsk_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

#endif
