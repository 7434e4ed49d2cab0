/* The demodulator's feed-forward estimators, each a pure function of its block of samples (so
 * they can be tested alone, and blocks can run in any order on any thread). */
#ifndef PRX_QPSK_EST_H
#define PRX_QPSK_EST_H

#include "polyrx/core.h"

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
/* their sum, the V&V phase and the M2M4 powers from them: qpsk_serial_phase.h (qpsk_ph_sums_add,
 * qpsk_ph_vv, qpsk_ph_m2m4, written once for the host and the GPU) */

/* out[i] = (in[i] - dc) gain exp(-j (theta + omega i)), i < n (in may equal out): DC removal,
 * level and a phase-continuous NCO in one pass, with exact double anchors every 256 samples and a
 * float recurrence in between. */
void qpsk_derotate(const prx_cf32 *in, prx_cf32 *out, size_t n, double theta, double omega,
                   prx_cf32 dc, double gain);

/* Wraps x into (-period/2, period/2]. */
double qpsk_wrap(double x, double period);

#endif
