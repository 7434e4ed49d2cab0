/* The CFO alias test (qpsk_internal.h): where the input's own spectrum lies, against the
 * 4th-power estimate.
 *
 * The 4th power cannot tell f from f + k Rs/4: a carrier beyond the acquisition range is
 * estimated at its alias inside it, its symbols then turn by k quarter turns a symbol, which is
 * still a QPSK constellation with its 4th-power line, so no block is flagged and the bits are
 * wrong. The input itself tells them apart: the angle of its lag-one autocorrelation is 2 pi f /
 * sps a sample for a carrier at f (cycles a symbol), whatever its data. The samples first pass
 * QPSK_ALIAS_POLES one-pole low-passes at QPSK_ALIAS_CORNER Rs (a neighbour beyond the carrier's
 * band weighs little); the low-pass and the carrier's own band edges pull the angle towards 0 by
 * an amount known from the carrier's spectrum (expected_angle), noise (coloured by the low-pass:
 * a real positive lag-one term) and a DC further towards 0, never away from it. So a carrier
 * within the range is measured between 0 and its estimate's angle, an alias near its own angle
 * unless noise pulls it in (a missed alias at low Es/N0, never a false one). The first
 * qpsk_alias_len(sps) samples since create or reset are measured: ~0.5 ms of work at sps 4. */
#include "qpsk_bank_internal.h"
#include "qpsk_internal.h"

#include "dsp/convert.h"

#include <math.h>
#include <string.h>

void qpsk_alias_start(prx_qpsk *q) {
  q->al_n = 0;
  memset(&q->al, 0, sizeof q->al);
}

void qpsk_alias_off(prx_qpsk *q) { q->al_on = 0; }

void qpsk_alias_add(prx_qpsk *q, const void *in, size_t n) {
  const size_t len = qpsk_alias_len(q->sps);
  if (!q->al_on || q->al_n >= len) return;
  if (n > len - q->al_n) n = len - q->al_n;
  const size_t ss = prx_format_size(q->cfg.in_format);
  const double a = qpsk_alias_gain(q->sps);
  qpsk_alias_sums s = q->al;
  prx_cf32 buf[256];
  for (size_t i = 0; i < n; i += 256) {
    const size_t m = n - i < 256 ? n - i : 256;
    prx_convert_block(q->cfg.in_format, (const uint8_t *)in + i * ss, m, buf);
    for (size_t k = 0; k < m; k++) qpsk_alias_step(&s, a, buf[k].re, buf[k].im);
  }
  q->al = s;
  q->al_n += n;
}

/* The carrier's band as the expected angles sum it: ALIAS_POINTS points x across it (cycles a
 * symbol), each with the RRC's spectrum there (a raised cosine of roll-off beta) and its turn
 * exp(j 2 pi x / sps) a sample. They do not depend on the candidate: a candidate at c turns them
 * all by exp(j 2 pi c / sps). Made once per thread and configuration (alias_band_of): a
 * receiver's 1024 carriers share one configuration, and their verdicts took 5 candidates x 256
 * points of cos and sincos each (13 of the 20 ms of `polyrx rx`'s table phase on the VM). */
#define ALIAS_POINTS 256
typedef struct {
  double beta, sps;
  double s[ALIAS_POINTS], er[ALIAS_POINTS], ei[ALIAS_POINTS];
} alias_band;

static const alias_band *alias_band_of(double beta, double sps) {
  static _Thread_local alias_band b;
  if (b.beta == beta && b.sps == sps) return &b;
  const double half = 0.5 * (1 + beta), flat = 0.5 * (1 - beta);
  for (int i = 0; i < ALIAS_POINTS; i++) {
    const double x = -half + (i + 0.5) * (2 * half / ALIAS_POINTS), ax = fabs(x);
    b.s[i] = ax <= flat ? 1 : 0.5 * (1 + cos(M_PI / beta * (ax - flat)));
    sincos(2 * M_PI * x / sps, &b.ei[i], &b.er[i]);
  }
  b.beta = beta;
  b.sps = sps;
  return &b;
}

/* the lag-one angle a carrier at c (cycles a symbol) would give through the low-pass: the angle
 * of the sum over its band of its spectrum, the low-pass's power response and exp(j 2 pi nu /
 * sps) */
static double expected_angle(const alias_band *b, double c, double a) {
  double sc, cc;
  sincos(2 * M_PI * c / b->sps, &sc, &cc);
  double sr = 0, si = 0;
  for (int i = 0; i < ALIAS_POINTS; i++) {
    const double cw = b->er[i] * cc - b->ei[i] * sc, sw = b->er[i] * sc + b->ei[i] * cc;
    const double h = a * a / (1 - 2 * (1 - a) * cw + (1 - a) * (1 - a));
    double g = b->s[i]; /* s h^QPSK_ALIAS_POLES, by products (pow's cost a term) */
    for (int k = 0; k < QPSK_ALIAS_POLES; k++) g *= h;
    sr += g * cw;
    si += g * sw;
  }
  return atan2(si, sr);
}

int qpsk_alias_suspect(const prx_qpsk *q, double f_est) {
  if (!q->al_on || q->al_n < qpsk_alias_min(q->sps) || !(q->al.p > 0) || !isfinite(f_est)) return 0;
  const double phi = atan2(q->al.r[1], q->al.r[0]);
  const double a = qpsk_alias_gain(q->sps);
  const double beta = q->cfg.rolloff > 0.01 ? q->cfg.rolloff : 0.01;
  /* the candidates f_est + k / 4 whose line is f_est's: the one whose angle through the low-pass
   * lies nearest the measured one, an alias only where the measure lies at least
   * QPSK_ALIAS_WAY of the way from f_est's angle to its own. Noise, a DC and the carrier's own
   * edges pull the measure towards 0, the side of f_est (the candidate nearest 0): a missed
   * alias at low Es/N0, never a false one; a strong neighbour whose band reaches into the
   * carrier's pulls it part of the way (an equal one 1.2 Rs away: a quarter) */
  const alias_band *band = alias_band_of(beta, q->sps);
  const double th0 = expected_angle(band, f_est, a);
  int best = 0;
  double best_d = fabs(remainder(phi - th0, 2 * M_PI)), best_th = th0;
  for (int k = -QPSK_ALIAS_K; k <= QPSK_ALIAS_K; k++) {
    const double c = f_est + 0.25 * k;
    if (k == 0 || fabs(c) > 0.5 * q->sps) continue; /* (outside the input's band) */
    const double th = expected_angle(band, c, a);
    const double d = fabs(remainder(phi - th, 2 * M_PI));
    if (d < best_d) {
      best_d = d;
      best = k;
      best_th = th;
    }
  }
  if (best == 0) return 0;
  const double way = remainder(phi - th0, 2 * M_PI) / remainder(best_th - th0, 2 * M_PI);
  return way >= QPSK_ALIAS_WAY;
}
