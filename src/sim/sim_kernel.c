/* The generator's sample loops: one carrier's samples added to the output.
 *
 * Every sample is a pure function of its index k, whatever block or task it falls in:
 * - position: w(k) = k r + w0 (symbols, shifted by span/2) is evaluated from the anchor sample
 *   ka = k rounded down to a multiple of SIM_NCO_LEN, where ka r is formed exactly (fma: product
 *   plus its rounding error), then w = w(ka) + j r with j = k - ka < SIM_NCO_LEN. So the position
 *   keeps ~1e-13 symbol accuracy at any k, without a running accumulator that would drift and
 *   depend on where calls start;
 * - carrier: amp exp(i (2 pi nu ka + phase)) from the exact fraction of nu ka, times the table
 *   exp(i 2 pi nu j);
 * - pulse: row q = floor(mu Q) of the table, interpolated linearly at fr = mu Q - q.
 *
 * Two kernels compute sum_t (T[q][t] + fr D[q][t]) a[nw - taps + 1 + t]:
 * - direct (few samples per symbol): per sample, the taps of row q against the window;
 * - symbol-major (many samples per symbol): per window (per symbol), the sums P[q] = sum_t T[q][t]
 *   a[t] and S[q] = sum_t D[q][t] a[t] for every row q at once, then per sample P[q] + fr S[q]
 *   (the same interpolation, regrouped). With sps samples per symbol sharing one window, this
 *   costs Q taps / sps + O(1) per sample instead of O(taps).
 * The kernel of a carrier is fixed by its configuration, so the output is too. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif
#include "sim_internal.h"

#include <math.h>

typedef struct {
  int64_t n; /* floor(ka r) */
  double f;  /* (ka r - floor(ka r)) + w0 */
} anchor_pos;

static inline anchor_pos anchor_position(const sim_carrier *c, uint64_t ka) {
  double kd = (double)ka, p = kd * c->r, e = fma(kd, c->r, -p), ip = floor(p);
  anchor_pos a = {(int64_t)ip, (p - ip) + (e + c->w0)};
  return a;
}

/* w(ka + j) = a.f + j r: split into the symbol nw and the fraction mu in [0, 1). The only
 * definition of a sample's position: the symbol window (sim_symbol_at) and the kernels use it. */
static inline int64_t split_position(anchor_pos a, double r, size_t j, double *mu) {
  double f = a.f + (double)j * r, fi = floor(f);
  *mu = f - fi;
  return a.n + (int64_t)fi;
}

int64_t sim_symbol_at(const sim_carrier *c, uint64_t k) {
  uint64_t ka = k & ~(uint64_t)(SIM_NCO_LEN - 1);
  double mu;
  return split_position(anchor_position(c, ka), c->r, (size_t)(k - ka), &mu);
}

static inline prx_cf32 anchor_phasor(const sim_carrier *c, uint64_t ka) {
  double kd = (double)ka, p = kd * c->nu, e = fma(kd, c->nu, -p);
  double th = 6.283185307179586476925 * ((p - floor(p)) + e) + c->cfg.phase;
  prx_cf32 a = {(float)(c->amp * cos(th)), (float)(c->amp * sin(th))};
  return a;
}

static inline size_t phase_row(double mu, float *fr) {
  double x = mu * SIM_PHASES;
  size_t q = (size_t)x;
  if (q >= SIM_PHASES) q = SIM_PHASES - 1; /* mu just below 1 rounding up */
  *fr = (float)(x - (double)q);
  return q;
}

/* out += (a w) (br + i bi): the carrier (anchor a times table entry w) applied to baseband */
static inline void mix_add(prx_cf32 a, prx_cf32 w, float br, float bi, prx_cf32 *out) {
  float rr = a.re * w.re - a.im * w.im, ri = a.re * w.im + a.im * w.re;
  out->re += rr * br - ri * bi;
  out->im += rr * bi + ri * br;
}

static void add_direct(const sim_carrier *c, anchor_pos ap, prx_cf32 a, size_t j0, size_t m,
                       prx_cf32 *out) {
  const size_t taps = c->taps;
  for (size_t j = 0; j < m; j++) {
    double mu;
    int64_t nw = split_position(ap, c->r, j0 + j, &mu);
    float fr;
    const float *row = c->table + phase_row(mu, &fr) * 2 * taps;
    size_t at = (size_t)(nw - (int64_t)taps + 1 - c->base);
    const float *sr = c->sre + at, *si = c->sim + at;
    /* SIM_LANES partial sums each for re and im, added in a fixed order at the end */
    sim_v8 accr = {0}, acci = {0};
    for (size_t t = 0; t < taps; t += SIM_LANES) {
      sim_v8 h = sim_v8_load(row + t) + fr * sim_v8_load(row + taps + t);
      accr += h * sim_v8_load(sr + t);
      acci += h * sim_v8_load(si + t);
    }
    mix_add(a, c->rot[j0 + j], sim_v8_sum(accr), sim_v8_sum(acci), out + j);
  }
}

/* rows->{pr,pi,sr,si}[q] for the window ending at symbol nw: vectorised over q, accumulated over
 * the taps in order. */
static void window_sums(const sim_carrier *c, sim_rows *rows, int64_t nw) {
  const size_t span = c->cfg.span, pad = c->taps - span;
  size_t at = (size_t)(nw - (int64_t)c->taps + 1 - c->base) + pad;
  const float *ar = c->sre + at, *ai = c->sim + at;
  for (size_t q = 0; q < SIM_PHASES; q += SIM_LANES) {
    sim_v8 pr = {0}, pi = {0}, sr = {0}, si = {0};
    for (size_t t = 0; t < span; t++) {
      const float *col = c->columns + 2 * t * SIM_PHASES + q;
      sim_v8 v = sim_v8_load(col), d = sim_v8_load(col + SIM_PHASES);
      pr += v * ar[t];
      pi += v * ai[t];
      sr += d * ar[t];
      si += d * ai[t];
    }
    memcpy(rows->pr + q, &pr, sizeof pr);
    memcpy(rows->pi + q, &pi, sizeof pi);
    memcpy(rows->sr + q, &sr, sizeof sr);
    memcpy(rows->si + q, &si, sizeof si);
  }
  rows->nw = nw;
}

/* Samples js .. je-1 of the chunk, all in the window whose sums rows holds: per sample, the
 * position's fraction (the same arithmetic as split_position), the row, and P[q] + fr S[q].
 * No branch and no symbol-window access in the loop (GCC 12 leaves it scalar on AVX2: the row
 * look-ups would need gathers). */
static void run_symbol_major(const sim_carrier *c, const sim_rows *rows, anchor_pos ap, prx_cf32 a,
                             double fl, size_t js, size_t je, prx_cf32 *out) {
  const float *pr = rows->pr, *pi = rows->pi, *sr = rows->sr, *si = rows->si;
  /* the complex arrays as plain floats (re, im interleaved) */
  const float *rot = (const float *)c->rot;
  float *o = (float *)out;
  const double r = c->r;
  for (size_t j = js; j < je; j++) {
    /* f - fl is mu of split_position; the clamp only guards against a last-bit difference in
     * how the compiler contracts the two copies of this arithmetic */
    double f = ap.f + (double)j * r, mu = f - fl, x = (mu > 0 ? mu : 0) * SIM_PHASES;
    int q = (int)x;
    q = q < SIM_PHASES - 1 ? q : SIM_PHASES - 1; /* mu just below 1 rounding up */
    float fr = (float)(x - (double)q);
    float br = pr[q] + fr * sr[q], bi = pi[q] + fr * si[q];
    float wr = rot[2 * j], wi = rot[2 * j + 1];
    float rr = a.re * wr - a.im * wi, ri = a.re * wi + a.im * wr;
    o[2 * j] += rr * br - ri * bi;
    o[2 * j + 1] += rr * bi + ri * br;
  }
}

static void add_symbol_major(const sim_carrier *c, sim_rows *rows, anchor_pos ap, prx_cf32 a,
                             size_t j0, size_t m, prx_cf32 *out) {
  size_t j = j0, end = j0 + m;
  out -= j0; /* indexed by the position in the chunk */
  while (j < end) {
    double mu;
    int64_t nw = split_position(ap, c->r, j, &mu);
    if (nw != rows->nw) window_sums(c, rows, nw);
    /* the run ends at the first sample that reaches symbol nw + 1: estimated, then settled with
     * split_position itself so that the run and the window agree exactly */
    double left = (1 - mu) / c->r;
    size_t e = j + 1 + (left < (double)(end - j) ? (size_t)left : end - j);
    if (e > end) e = end;
    while (e > j + 1 && split_position(ap, c->r, e - 1, &mu) != nw) e--;
    while (e < end && split_position(ap, c->r, e, &mu) == nw) e++;
    run_symbol_major(c, rows, ap, a, (double)(nw - ap.n), j, e, out);
    j = e;
  }
}

void sim_carrier_add(const sim_carrier *c, sim_rows *rows, uint64_t k0, size_t n, prx_cf32 *out) {
  rows->nw = INT64_MIN; /* the sums belong to another carrier or block */
  size_t i = 0;
  while (i < n) {
    uint64_t k = k0 + i, ka = k & ~(uint64_t)(SIM_NCO_LEN - 1);
    size_t j0 = (size_t)(k - ka), m = SIM_NCO_LEN - j0;
    if (m > n - i) m = n - i;
    anchor_pos ap = anchor_position(c, ka);
    prx_cf32 a = anchor_phasor(c, ka);
    if (c->symbol_major)
      add_symbol_major(c, rows, ap, a, j0, m, out + i);
    else
      add_direct(c, ap, a, j0, m, out + i);
    i += m;
  }
}

void sim_columns(sim_carrier *c) {
  const size_t taps = c->taps, pad = taps - c->cfg.span;
  for (size_t t = 0; t < c->cfg.span; t++)
    for (size_t q = 0; q < SIM_PHASES; q++) {
      c->columns[2 * t * SIM_PHASES + q] = c->table[q * 2 * taps + pad + t];
      c->columns[(2 * t + 1) * SIM_PHASES + q] = c->table[q * 2 * taps + taps + pad + t];
    }
}
