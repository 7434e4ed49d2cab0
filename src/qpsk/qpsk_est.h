/* The demodulator's feed-forward estimators, each a pure function of its block of samples (so
 * they can be tested alone, and blocks can run in any order on any thread). */
#ifndef PRX_QPSK_EST_H
#define PRX_QPSK_EST_H

#include "polyrx/core.h"
#include "qpsk_stage_math.h" /* QPSK_HD */

#include <stddef.h>
#include <stdint.h>

/* ---- coarse CFO: the spectrum of the 4th power ---- */

/* w[j] = y^4 / |y|^2 for y = sum_i c[i] z[i + 4j] (a cubic interpolation of a 4/T grid at the
 * same fraction for every j): the 4th power (its line sits at 4 f) with rho^2 magnitude
 * weighting, which gives about 1.3 dB more line SNR than the plain y^4 at Es/N0 = 0 dB where
 * outliers begin. */
void qpsk_x4_interp(const prx_cf32 *z, const float c[4], size_t n, prx_cf32 *w);

/* Cubic Lagrange (Farrow) coefficients for points at offsets -1, 0, 1, 2 and mu in [0, 1). */
void qpsk_farrow_coef(double mu, float c[4]);

/* Peak of |spec|^2 over the bins of an nfft-point spectrum whose frequency (cycles per sample,
 * bin k <-> k/nfft wrapped to [-1/2, 1/2)) satisfies |nu| <= max_nu, refined by a parabola
 * through the magnitudes of the three bins around it and rounded to 1/8 bin (qpsk_peak_start:
 * the last-bit rounding of an FFT, which differs between FFTW plans, processes and machines,
 * moves the vertex by ~1e-7 bin, so it almost never changes the start of the refinement, and
 * Newton's steps from one start end at one value). Returns nu. */
double qpsk_spectrum_peak(const prx_cf32 *spec, size_t nfft, double max_nu);

/* Newton iterations on the periodogram P(nu) = |sum_k w_k exp(-j 2 pi nu k)|^2 from nu0 (within a
 * bin of the peak): the ML frequency of a tone in white noise. Steps are limited to max_step; an
 * iteration that finds no maximum stops. scratch holds (n + 63) / 64 values. Returns nu. */
double qpsk_periodogram_refine(const prx_cf32 *w, size_t n, double nu0, double max_step,
                               prx_cf32 *scratch);

/* ---- symbol timing: Oerder & Meyr ---- */

/* Replaces z by (z - dc) gain (DC out, unit level: the grid as the estimators read it) and
 * accumulates X += sum |z_m|^2 exp(-j 2 pi m / 4) over z = samples m0 .. m0+n-1 of a grid with
 * 4 samples per symbol (m0 is the absolute grid index, so blocks add up consistently). */
void qpsk_om_accum(prx_cf32 *z, size_t n, int64_t m0, prx_cf32 dc, float gain, double x[2]);
/* qpsk_om_accum of four consecutive runs of n samples each (z, z + n, z + 2n, z + 3n; m0 and n
 * multiples of 4, n <= 1024) into x[0..3] (each set to its own sum): the same result, four
 * independent chains at once. */
void qpsk_om_accum4(prx_cf32 *z, size_t n, prx_cf32 dc, float gain, double x[4][2]);
/* The timing estimate -arg(X) / (2 pi) in (-1/2, 1/2] symbol periods: symbol instants are at
 * grid positions 4 (k + tau). */
double qpsk_om_tau(const double x[2]);

/* ---- phase and SNR: Viterbi & Viterbi, M2M4 ---- */

typedef struct {
  double s4[2]; /* sum y^4 */
  double m2;    /* sum |y|^2 */
  double m4;    /* sum |y|^4 */
  double n;     /* count */
} qpsk_sums;

void qpsk_sums_accum(const prx_cf32 *y, size_t n, qpsk_sums *s);
/* their sum, the V&V phase and the M2M4 powers from them (host and GPU: the phase pass,
 * qpsk_serial_phase.h) */
QPSK_HD void qpsk_sums_add(qpsk_sums *a, const qpsk_sums *b) {
  a->s4[0] += b->s4[0];
  a->s4[1] += b->s4[1];
  a->m2 += b->m2;
  a->m4 += b->m4;
  a->n += b->n;
}
/* V&V: QPSK symbols have s^4 = -1, so the carrier phase is arg(-sum y^4) / 4, in (-pi/4, pi/4] */
QPSK_HD double qpsk_vv_phase(const qpsk_sums *s) {
  const double pi_ = 3.14159265358979323846;
  double p = atan2(-s->s4[1], -s->s4[0]) / 4; /* in [-pi/4, pi/4] */
  if (p <= -pi_ / 4) p += pi_ / 2;
  return p;
}
/* M2M4 (Pauluzzi & Beaulieu 2000) for a constant-modulus signal in complex Gaussian noise:
 * S^2 = 2 M2^2 - M4, N = M2 - S (per-symbol signal power S and noise variance N) */
QPSK_HD void qpsk_m2m4(const qpsk_sums *s, double *sig, double *noise) {
  if (s->n <= 0) {
    *sig = 0;
    *noise = 0;
    return;
  }
  double m2 = s->m2 / s->n, m4 = s->m4 / s->n;
  double s2 = 2 * m2 * m2 - m4;
  double S = s2 > 0 ? sqrt(s2) : 0;
  if (S > m2) S = m2;
  double N = m2 - S;
  /* the moments of a finite block can make N slightly negative at high SNR (or S at low):
   * keep both in a sane range, Es/N0 within [-30, 60] dB */
  if (N < 1e-6 * m2) N = 1e-6 * m2;
  if (S < 1e-3 * m2) S = 1e-3 * m2;
  *sig = S;
  *noise = N;
}

/* out[i] = (in[i] - dc) gain exp(-j (theta + omega i)), i < n (in may equal out): DC removal,
 * level and a phase-continuous NCO in one pass, with exact double anchors every 256 samples and a
 * float recurrence in between. */
void qpsk_derotate(const prx_cf32 *in, prx_cf32 *out, size_t n, double theta, double omega,
                   prx_cf32 dc, double gain);

/* Wraps x into (-period/2, period/2]. */
double qpsk_wrap(double x, double period);

/* qpsk_dft_twiddle's sincospif argument on the GPU, 2 ((m t) mod nfft) / nfft rounded to float,
 * for nfft a power of two up to 2^31 (the CFO peak kernel's odd bins): the remainder as the low
 * bits of the 32-bit product (the same integer: nfft divides 2^32), then a float product by the
 * power of two 2 / nfft, which rounds as (float)(2.0 r / nfft) does: no 64-bit remainder, no
 * double division. */
QPSK_HD float qpsk_twiddle_arg_pow2(uint32_t m, uint32_t t, uint32_t nfft) {
  return (float)((m * t) & (nfft - 1)) * (2.0f / (float)nfft);
}

#endif
