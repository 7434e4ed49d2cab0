/* Feed-forward estimators (see qpsk_est.h). Sums are accumulated in double: blocks hold up to a
 * few thousand terms and the estimates are differences of large sums (M2M4). */
#include "qpsk_est.h"

#include <math.h>

double qpsk_spectrum_peak(const prx_cf32 *spec, size_t nfft, double max_nu) {
  size_t best = 0;
  double bm = -1;
  for (size_t k = 0; k < nfft; k++) {
    double nu = (k < nfft / 2 ? (double)k : (double)k - (double)nfft) / (double)nfft;
    if (fabs(nu) > max_nu) continue;
    double m = (double)spec[k].re * spec[k].re + (double)spec[k].im * spec[k].im;
    if (m > bm) {
      bm = m;
      best = k;
    }
  }
  size_t km = (best + nfft - 1) % nfft, kp = (best + 1) % nfft;
  double a = sqrt((double)spec[km].re * spec[km].re + (double)spec[km].im * spec[km].im);
  double b = sqrt(bm);
  double c = sqrt((double)spec[kp].re * spec[kp].re + (double)spec[kp].im * spec[kp].im);
  double den = a - 2 * b + c, delta = 0;
  if (den < 0) delta = 0.5 * (a - c) / den;
  if (delta > 0.5) delta = 0.5;
  if (delta < -0.5) delta = -0.5;
  double k = (best < nfft / 2 ? (double)best : (double)best - (double)nfft) + delta;
  return k / (double)nfft;
}

double qpsk_periodogram_refine(const prx_cf32 *w, size_t n, double nu0, double max_step) {
  if (n < 2) return nu0;
  double nu = nu0, kc = 0.5 * (double)(n - 1);
  for (int it = 0; it < 4; it++) {
    /* X, X1 = sum (k - kc) w e, X2 = sum (k - kc)^2 w e with e = exp(-j 2 pi nu (k - kc)) */
    double xr = 0, xi = 0, x1r = 0, x1i = 0, x2r = 0, x2i = 0;
    double er = cos(2 * M_PI * nu * kc), ei = sin(2 * M_PI * nu * kc);
    double sr = cos(2 * M_PI * nu), si = -sin(2 * M_PI * nu);
    for (size_t k = 0; k < n; k++) {
      double d = (double)k - kc;
      double pr = w[k].re * er - w[k].im * ei, pi = w[k].re * ei + w[k].im * er;
      xr += pr;
      xi += pi;
      x1r += d * pr;
      x1i += d * pi;
      x2r += d * d * pr;
      x2i += d * d * pi;
      double t = er * sr - ei * si;
      ei = er * si + ei * sr;
      er = t;
      if ((k & 1023) == 1023) { /* keep |e| = 1 */
        double g = 1.0 / sqrt(er * er + ei * ei);
        er *= g;
        ei *= g;
      }
    }
    /* P' = 4 pi Im(conj(X) X1), P'' = 8 pi^2 (|X1|^2 - Re(conj(X) X2)) */
    double d1 = 4 * M_PI * (xr * x1i - xi * x1r);
    double d2 = 8 * M_PI * M_PI * (x1r * x1r + x1i * x1i - (xr * x2r + xi * x2i));
    if (!(d2 < 0)) break;
    double step = -d1 / d2;
    if (step > max_step) step = max_step;
    if (step < -max_step) step = -max_step;
    nu += step;
    if (fabs(step) < 1e-9 / (double)n) break;
  }
  if (fabs(nu - nu0) > 2 * max_step) return nu0;
  return nu;
}

void qpsk_om_accum(const prx_cf32 *z, size_t n, int64_t m0, double x[2]) {
  /* exp(-j 2 pi m / 4) = 1, -j, -1, j for m = 0, 1, 2, 3 (mod 4) */
  double p[4] = {0, 0, 0, 0};
  int r = (int)(((m0 % 4) + 4) % 4);
  size_t i = 0;
  /* align to a multiple of 4 in m, then sum powers per residue */
  for (; i < n && r != 0; i++, r = (r + 1) & 3)
    p[r] += (double)z[i].re * z[i].re + (double)z[i].im * z[i].im;
  float q0 = 0, q1 = 0, q2 = 0, q3 = 0;
  size_t run = 0;
  for (; i + 4 <= n; i += 4) {
    q0 += z[i].re * z[i].re + z[i].im * z[i].im;
    q1 += z[i + 1].re * z[i + 1].re + z[i + 1].im * z[i + 1].im;
    q2 += z[i + 2].re * z[i + 2].re + z[i + 2].im * z[i + 2].im;
    q3 += z[i + 3].re * z[i + 3].re + z[i + 3].im * z[i + 3].im;
    if (++run == 256) { /* flush float partials into double now and then */
      p[0] += q0, p[1] += q1, p[2] += q2, p[3] += q3;
      q0 = q1 = q2 = q3 = 0;
      run = 0;
    }
  }
  p[0] += q0, p[1] += q1, p[2] += q2, p[3] += q3;
  for (r = 0; i < n; i++, r++) p[r] += (double)z[i].re * z[i].re + (double)z[i].im * z[i].im;
  x[0] += p[0] - p[2];
  x[1] += p[3] - p[1];
}

double qpsk_om_tau(const double x[2]) {
  double t = -atan2(x[1], x[0]) / (2 * M_PI);
  if (t <= -0.5) t += 1;
  return t;
}

void qpsk_sums_accum(const prx_cf32 *y, size_t n, qpsk_sums *s) {
  double sr = 0, si = 0, m2 = 0, m4 = 0;
  for (size_t i = 0; i < n; i++) {
    double a = y[i].re, b = y[i].im;
    double p = a * a + b * b;
    double s2r = a * a - b * b, s2i = 2 * a * b;
    sr += s2r * s2r - s2i * s2i;
    si += 2 * s2r * s2i;
    m2 += p;
    m4 += p * p;
  }
  s->s4[0] += sr;
  s->s4[1] += si;
  s->m2 += m2;
  s->m4 += m4;
  s->n += (double)n;
}

void qpsk_sums_add(qpsk_sums *a, const qpsk_sums *b) {
  a->s4[0] += b->s4[0];
  a->s4[1] += b->s4[1];
  a->m2 += b->m2;
  a->m4 += b->m4;
  a->n += b->n;
}

double qpsk_vv_phase(const qpsk_sums *s) {
  double p = atan2(-s->s4[1], -s->s4[0]) / 4; /* in [-pi/4, pi/4] */
  if (p <= -M_PI / 4) p += M_PI / 2;
  return p;
}

void qpsk_m2m4(const qpsk_sums *s, double *sig, double *noise) {
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

void qpsk_farrow_coef(double mu, float c[4]) {
  c[0] = (float)(-mu * (mu - 1) * (mu - 2) / 6);
  c[1] = (float)((mu + 1) * (mu - 1) * (mu - 2) / 2);
  c[2] = (float)(-(mu + 1) * mu * (mu - 2) / 2);
  c[3] = (float)((mu + 1) * mu * (mu - 1) / 6);
}

double qpsk_wrap(double x, double period) {
  double y = x - period * floor(x / period + 0.5);
  if (y <= -period / 2) y += period;
  if (y > period / 2) y -= period;
  return y;
}
