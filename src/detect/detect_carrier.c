/* Carrier detection, second stage: one candidate band, mixed down and decimated, gives the
 * carrier's symbol rate (the line of |y|^2 at Rs), its centre (the line of y^4 at 4 f), its
 * roll-off and Es/N0 (from the power in and around the band). */
#include "detect_internal.h"

#include "../core/internal.h"
#include "../dsp/fft_plan.h"
#include "../dsp/rrc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* False-alarm margin of a spectral line: a line must exceed the mean of its neighbouring bins
 * ln W + LINE_MARGIN times, W the bins searched (the largest of W noise bins is about ln W times
 * their mean; e^-9.2 = 1e-4 per search). */
#define LINE_MARGIN 9.2
/* pi/4-QPSK's y^4 lines lie at 4 f_c +- Rs/2, two of the same strength and none at 4 f_c; QPSK's
 * at 4 f_c, with weaker ones Rs either side (0.24-0.59 of its amplitude at roll-off 0.2 to 1, 8
 * to 25 dB; pi/4-QPSK's partner 0.90-1.06 of the line found): a line Rs from the one found and at
 * least this fraction of its amplitude marks pi/4-QPSK. */
#define PI4_PAIR 0.75
/* ... and at most this fraction: the lines of MSK and 2-FSK at index 1/2 read at their bit rate
 * (y^4 is 1 at every symbol's end: lines at 4 f and Rs either side, 2.7-3.4 times the one at 4 f
 * found in the search's reach, 12 and 20 dB; tests/cli_demod.sh's MSK) are neither modulation's
 * (line4 0). pi/4-QPSK's partner is 0.90-1.06, and the line Rs the other way 0.06-0.32 (roll-off
 * 0.2 to 1, 8 to 25 dB); P25's C4FM (4-FSK at +-Rs/8 and +-3Rs/8, whose phase moves as pi/4-DQPSK's
 * does and which is read as it: FORMATS.md) has lines Rs/2 and 3 Rs/2 either side of 4 f, its
 * partner 0.75-1.07 and the other side 0.45-0.87 (8 to 25 dB, rectangular and raised-cosine
 * frequency pulses): both are pi/4 (pi4 1). */
#define PI4_MAX 1.5
/* The pattern is clear (line4) where the partner lies away from PI4_PAIR by a margin: below
 * QPSK_CLEAR for QPSK (its 0.24-0.59), at PI4_CLEAR or more for pi/4-QPSK (its 0.90-1.06). Over
 * 1500 symbols at 7-8 dB, without the margin, 2 of 128 carriers read rightly drew a verdict of
 * the other modulation (their partner line pushed across PI4_PAIR by the noise), with it none;
 * over 2048 symbols the verdicts lost: 1 of 32 at 7.5 dB (0.85 for PI4_CLEAR: 3 of 32 at 8). */
#define QPSK_CLEAR 0.65
#define PI4_CLEAR 0.8
/* The lines are looked for on at most this many samples of a band's signal (from the middle of
 * the stretch): over 10^5 symbols, more than the accuracy needs, and a wide carrier's transforms
 * stay small. */
#define LINE_SAMPLES ((size_t)1 << 18)

/* |sum_t v[t] exp(-2 pi i f t)| for f in cycles per sample (float64 rotator, re-anchored every
 * 1024 samples). */
static double dft_mag(const prx_cf32 *v, size_t n, double f) {
  double sre = 0, sim = 0;
  double stc = cos(-2 * M_PI * f), sts = sin(-2 * M_PI * f);
  for (size_t t0 = 0; t0 < n; t0 += 1024) {
    double ph = -2 * M_PI * f * (double)t0;
    double wr = cos(ph), wi = sin(ph);
    size_t t1 = t0 + 1024 < n ? t0 + 1024 : n;
    for (size_t t = t0; t < t1; t++) {
      sre += v[t].re * wr - v[t].im * wi;
      sim += v[t].re * wi + v[t].im * wr;
      double nr = wr * stc - wi * sts;
      wi = wr * sts + wi * stc;
      wr = nr;
    }
  }
  return hypot(sre, sim);
}

/* The frequency in [lo, hi] (cycles per sample) that maximises dft_mag, by golden section. */
static double refine_peak(const prx_cf32 *v, size_t n, double lo, double hi) {
  const double g = 0.5 * (sqrt(5.0) - 1);
  double a = lo, b = hi, c = b - g * (b - a), d = a + g * (b - a);
  double fc = dft_mag(v, n, c), fd = dft_mag(v, n, d);
  for (int it = 0; it < 18; it++) { /* the interval shrinks to 1e-4 of its width */
    if (fc > fd) {
      b = d, d = c, fd = fc;
      c = b - g * (b - a);
      fc = dft_mag(v, n, c);
    } else {
      a = c, c = d, fc = fd;
      d = a + g * (b - a);
      fd = dft_mag(v, n, d);
    }
  }
  return 0.5 * (a + b);
}

/* The strongest line of the spectrum z (q bins, FFT order) between lo and hi (cycles per
 * sample, -0.5 < lo < hi < 0.5), refined on the q0-sample signal v (v NULL: its bin's frequency,
 * within half a bin); NAN when none stands out.
 * The continuum under the lines is not flat (|y|^2's falls towards the band's width), so each
 * bin is read against the mean of its neighbours (W / 8 bins either side, less the 2 next to it):
 * a line must exceed it ln W + LINE_MARGIN times, W the bins searched. */
static double find_line(const prx_cf32 *z, size_t q, const prx_cf32 *v, size_t q0, double lo,
                        double hi, double *strength) {
  long long blo = (long long)ceil(lo * (double)q), bhi = (long long)floor(hi * (double)q);
  *strength = 0;
  if (bhi - blo < 4) return NAN;
  long long w = bhi - blo + 1, half = w / 8 > 8 ? w / 8 : 8, n = w + 2 * half;
  double *cum = malloc((size_t)(n + 1) * sizeof *cum); /* cum[i]: power of bins blo-half .. +i-1 */
  if (!cum) return NAN;
  cum[0] = 0;
  for (long long i = 0; i < n; i++) {
    long long k = (blo - half + i) % (long long)q;
    if (k < 0) k += (long long)q;
    cum[i + 1] = cum[i] + (double)z[k].re * z[k].re + (double)z[k].im * z[k].im;
  }
  long long best = blo;
  double top = 0;
  for (long long b = blo; b <= bhi; b++) {
    long long i = b - blo + half; /* index of bin b in cum */
    double p = cum[i + 1] - cum[i];
    double around = (cum[i + half + 1] - cum[i - half]) - (cum[i + 3] - cum[i - 2]);
    double ratio = around > 0 ? p / (around / (double)(2 * half - 4)) : 0;
    if (ratio > top) top = ratio, best = b;
  }
  free(cum);
  *strength = top;
  if (!(top > log((double)w) + LINE_MARGIN)) return NAN;
  double step = 1.0 / (double)q;
  if (!v) return (double)best * step;
  return refine_peak(v, q0, (double)best * step - step, (double)best * step + step);
}

/* The strongest bin power of the spectrum z (q bins, FFT order) within r bins of frequency f
 * (cycles per sample; wrapped). */
static double peak_near(const prx_cf32 *z, size_t q, double f, long long r) {
  long long c = llround(f * (double)q);
  double top = 0;
  for (long long b = c - r; b <= c + r; b++) {
    long long k = b % (long long)q;
    if (k < 0) k += (long long)q;
    top = fmax(top, (double)z[k].re * z[k].re + (double)z[k].im * z[k].im);
  }
  return top;
}

/* The symbols' normalised 4th-order cumulant (prx_detect_carrier.c42) from the band's samples w
 * (len of them, noise_y of their power the noise's). Time-averaged over the symbol instants, y's
 * C42 = M4 - 2 M2^2 - |M20|^2 is the symbols' C42 times the pulse's mean |p|^4, plus twice the
 * variance of the pulse train's power over a period (its |y|^2 line at Rs); Gaussian noise adds
 * nothing to it, so neither its level nor the timing, frequency or phase enter. For the RRC pulse
 * at roll-off a (T = 1, unit energy) that variance is 2 (a / pi)^2 (the power's only Fourier
 * terms, at +-1 / T, are a / pi) and mean |p|^4 is summed at 8 points a symbol over +-12 symbols
 * (exact: p^4's band is 2 (1 + a) < 8). */
static double symbol_c42(const prx_cf32 *w, size_t len, double noise_y, double rolloff) {
  double m2 = 0, m4 = 0, r20 = 0, i20 = 0;
  for (size_t t = 0; t < len; t++) {
    double re = w[t].re, im = w[t].im, p = re * re + im * im;
    m2 += p, m4 += p * p, r20 += re * re - im * im, i20 += 2 * re * im;
  }
  const double n = (double)len;
  m2 /= n, m4 /= n, r20 /= n, i20 /= n;
  const double sig = m2 - noise_y; /* the carrier's power */
  if (!(sig > 0)) return NAN;
  enum { PTS = 8, SPAN = 12 };
  double p4 = 0;
  for (int i = -SPAN * PTS; i <= SPAN * PTS; i++) {
    double v = prx_rrc_pulse((double)i / PTS, rolloff);
    p4 += v * v * v * v;
  }
  p4 /= PTS;
  const double spread = 4 * (rolloff / M_PI) * (rolloff / M_PI);
  return ((m4 - 2 * m2 * m2 - (r20 * r20 + i20 * i20)) / (sig * sig) - spread) / p4;
}

/* The noise beside a band centred at centred bin fc, `half` bins wide each side: the median of
 * BESIDE_POINTS points of the power spectrum's resolution from 5 % of a half-width past its
 * edge, on the side where it is higher. The floor the band is read against comes from the whole
 * spectrum, and where the capture was filtered (a channelizer's output: the noise falls beyond
 * its passband to its stop band) it can lie far below the noise under the carrier, which passed
 * the filter: its c42 then reads towards 0, QAM's side (every QPSK carrier demodulated from a
 * `channelize` recording at 9 dB drew power_levels). Right beside the carrier the noise is the
 * passband's, on one side at least (a carrier near the passband's edge has the falling edge on
 * the other); a neighbour there raises it, which moves c42 below -1, never towards QAM. */
#define BESIDE_POINTS 4
static double noise_beside(const detect_spectrum *s, double fc, double half) {
  double side[2], pts[BESIDE_POINTS];
  const double k = (double)s->block;
  for (int dir = 0; dir < 2; dir++) {
    for (int j = 0; j < BESIDE_POINTS; j++) {
      const double from = 1.05 * half + (double)j * k;
      const long long u0 = llround(dir ? fc + from : fc - from - k);
      double acc = 0;
      for (long long u = u0; u < u0 + (long long)s->block; u++) {
        prx_cf32 x = detect_bin(s, u);
        acc += (double)x.re * x.re + (double)x.im * x.im;
      }
      pts[j] = acc / k;
    }
    for (int a = 1; a < BESIDE_POINTS; a++) /* (insertion sort) */
      for (int b = a; b > 0 && pts[b] < pts[b - 1]; b--) {
        double t = pts[b];
        pts[b] = pts[b - 1], pts[b - 1] = t;
      }
    side[dir] = 0.5 * (pts[BESIDE_POINTS / 2 - 1] + pts[BESIDE_POINTS / 2]);
  }
  return fmax(side[0], side[1]);
}

int detect_estimate(const detect_spectrum *s, const detect_band *b, double min_rs, double max_rs,
                    int refine, prx_detect_carrier *out) {
  double df = s->fs / (double)s->n;
  long long c0 = llround(b->centre), klo = (long long)floor(b->lo), khi = (long long)ceil(b->hi);
  size_t m = (size_t)(khi - klo + 1);
  size_t mm = detect_fft_size_up(2 * m < 64 ? 64 : 2 * m);
  size_t len = mm < LINE_SAMPLES ? mm : LINE_SAMPLES, q = 2 * len; /* samples used, transform */
  double fsd = (double)mm * df;                                    /* the decimated rate */
  prx_cf32 *y = prx_alloc(mm, sizeof *y), *v = prx_alloc(q, sizeof *v),
           *z = prx_alloc(q, sizeof *z);
  int result = -1;
  if (!y || !v || !z) goto done;
  result = 0;
  /* the band's bins, mixed down by c0 bins, to mm samples at fsd */
  memset(y, 0, mm * sizeof *y);
  for (long long k = klo; k <= khi; k++) {
    long long j = (k - c0) % (long long)mm;
    y[j < 0 ? j + (long long)mm : j] = detect_bin(s, k);
  }
  if (prx_fft_run((int)mm, y, y, FFTW_BACKWARD)) goto fft_failed;
  double mean = 0;
  for (size_t t = 0; t < mm; t++) mean += (double)y[t].re * y[t].re + (double)y[t].im * y[t].im;
  mean /= (double)mm;
  if (!(mean > 0)) goto done;
  const double y_bins = (double)m / mean; /* y's power per unit of E|X_k|^2 */
  float scale = (float)(1.0 / sqrt(mean));
  for (size_t t = 0; t < mm; t++) y[t].re *= scale, y[t].im *= scale;
  const prx_cf32 *w = y + (mm - len) / 2;

  /* the symbol rate: the line of |y|^2 near the half-power width. For a raised-cosine spectrum
   * that width is Rs to 1.12 Rs (roll-off 0 to 1: the band's level is the mean of its upper half,
   * below the peak of a spectrum without a flat top); the line is looked for from width / 1.12 to
   * the width, widened by 10 % and three points of the power spectrum (each half-power point is
   * within one). */
  double width = b->width * df, strength;
  double slack = fmin(0.3, 0.1 + 3.0 * (double)s->block / b->width);
  double alo = fmax((1 - slack) * width / 1.12, 0.95 * min_rs);
  double ahi = fmin((1 + slack) * width, 1.05 * max_rs);
  if (!(alo < ahi)) goto done;
  memset(v, 0, q * sizeof *v);
  for (size_t t = 0; t < len; t++) v[t].re = w[t].re * w[t].re + w[t].im * w[t].im - 1.0f;
  if (prx_fft_run((int)q, v, z, FFTW_FORWARD)) goto fft_failed;
  const prx_cf32 *fine = refine ? v : NULL; /* (the lines refined on v) */
  double rs = find_line(z, q, fine, len, alo / fsd, ahi / fsd, &strength) * fsd;
  if (!(rs >= 0.98 * min_rs && rs <= 1.02 * max_rs)) goto done;

  /* the centre: the line of y^4 at 4 times the offset, near the half-power midpoint */
  double d0 = (b->centre - (double)c0) * df, delta = d0;
  for (size_t t = 0; t < len; t++) {
    double re = w[t].re, im = w[t].im, r2 = re * re - im * im, i2 = 2 * re * im;
    v[t].re = (float)(r2 * r2 - i2 * i2);
    v[t].im = (float)(2 * r2 * i2);
  }
  memset(v + len, 0, (q - len) * sizeof *v);
  if (prx_fft_run((int)q, v, z, FFTW_FORWARD)) goto fft_failed;
  double span = 4 * (d0 + 0.2 * rs) < 0.45 * fsd ? 0.2 * rs : 0;
  out->pi4 = out->line4 = 0;
  if (span > 0) {
    double l4 = find_line(z, q, fine, len, 4 * (d0 - span) / fsd, 4 * (d0 + span) / fsd, &strength);
    if (isfinite(l4)) {
      delta = 0.25 * l4 * fsd;
      /* the lines Rs either side, looked for in the bins the rate's error (200 ppm) reaches:
       * QPSK's both weak, pi/4-QPSK's partner as strong as the line (the centre between the two),
       * or far stronger (PI4_MAX: no QPSK of either kind) */
      const double u = rs / fsd;
      const long long r = 2 + (long long)ceil(2e-4 * u * (double)q);
      const double p0 = peak_near(z, q, l4, r), pp = peak_near(z, q, l4 + u, r),
                   pm = peak_near(z, q, l4 - u, r);
      const double hi = p0 > 0 ? sqrt(fmax(pp, pm) / p0) : INFINITY;
      if (hi < PI4_PAIR) {
        out->line4 = hi < QPSK_CLEAR;
      } else if (hi <= PI4_MAX) {
        out->pi4 = 1;
        out->line4 = hi >= PI4_CLEAR;
        delta = 0.25 * (l4 + (pp > pm ? 0.5 : -0.5) * u) * fsd;
      }
    }
  }
  double fc = (double)c0 + delta / df; /* centred bins */

  /* power within Rs / 2 of the centre and within Rs (the widest roll-off), less the noise */
  double inner = 0, total = 0, nb = b->floor, half = 0.5 * rs / df;
  long long ulo = (long long)ceil(fmax(fc - 2 * half, b->limit_lo));
  long long uhi = (long long)floor(fmin(fc + 2 * half, b->limit_hi));
  for (long long u = ulo; u <= uhi; u++) {
    prx_cf32 x = detect_bin(s, u);
    double p = (double)x.re * x.re + (double)x.im * x.im - nb;
    total += p;
    if (fabs((double)u - fc) <= half) inner += p;
  }
  if (!(total > 0)) goto done;
  double rolloff = (1.0 - inner / total) / (0.5 - 1.0 / M_PI);
  out->freq = (fc - (double)(s->n / 2)) * df;
  out->symbol_rate = rs;
  out->rolloff = rolloff < 0.1 ? 0.1 : rolloff > 1 ? 1 : rolloff;
  out->bandwidth = rs * (1 + out->rolloff);
  out->esn0_db = 10 * log10(total * s->fs / ((double)s->n * nb * rs));
  /* c42 against the noise right beside the band, where above the floor (the safe side: more
   * noise taken out moves the measure below -1, away from QAM) */
  const double beside = noise_beside(s, fc, 0.5 * (1 + out->rolloff) * rs / df);
  out->c42 = symbol_c42(w, len, y_bins * fmax(nb, beside), out->rolloff);
  result = 1;
  goto done;
fft_failed: /* FFTW could not plan: told as out of memory */
  result = -1;
done:
  prx_free(y), prx_free(v), prx_free(z);
  return result;
}
