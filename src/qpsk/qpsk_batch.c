/* One batch of CFO spans: parallel stages over blocks (or spans), joined by cheap serial passes
 * that take the cross-block decisions, as in the seed paper:
 *
 *   pre   (blocks) short RRC pre-filter on the 4/T grid; input sums over the block's own
 *                  samples (non-finite ones counted)                          -> blk.grid, mom
 *   serial         per span: DC (the mean) and gain (1 / RMS)                -> span.dc, gain
 *   om    (blocks) the grid less its DC, at unit level; Oerder & Meyr sums per sub-block (|z|^2
 *                  is blind to the carrier, so timing comes before the CFO)  -> blk.osub
 *   serial         per span: clock slope from the sub-blocks' drift, timing per block unwrapped
 *                  around it, the slope refined by a line through the blocks; symbol ownership
 *                                                                             -> tau, e, k0, k1
 *   x4    (spans)  4th power of the pre-filter at each symbol instant (cubic Farrow on the
 *                  grid)                                                    -> span.w
 *   cfo   (spans)  zero-padded FFT (a short last span reaches back into the previous span's
 *                  values), peak, Newton refinement                         -> span.f
 *   serial         phase-continuous NCO across spans                       -> span.theta
 *   mf    (blocks) DC out, level, de-rotation, matched filter evaluated at each symbol
 *                  instant (polyphase interpolation), V&V/M2M4 sums         -> blk.sym, blk.sums
 *   serial         phase unwrapped (mod pi/2), noise window, signal test,
 *                  pilots                                                   -> phi, noise, flags
 *   out   (blocks) decisions, LLRs                                          -> caller's buffers
 *
 * The level, timing and NCO passes are qpsk_serial.c's (the code of qpsk_serial.h, which the GPU
 * runs too); the phase pass is here. Each stage reads only absolute positions of the stream and
 * the state carried from earlier blocks, so the result does not depend on how blocks are spread
 * over threads or batches. */
#include "qpsk_internal.h"
#include "qpsk_stage_math.h"

#include "qpsk_serial_phase.h"

#include <math.h>
#include <string.h>

static inline prx_cf32 cexpj(double a) {
  prx_cf32 r = {(float)cos(a), (float)sin(a)};
  return r;
}

static int64_t stream_blocks(const prx_qpsk *q) {
  return qpsk_count_below((double)q->n_total / q->sps, (double)q->L);
}

/* ---- stage pre: the pre-filter on the 4/T grid, Oerder & Meyr per sub-block ---- */

static void stage_pre(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  const int64_t L = q->L;
  int64_t m0 = 4 * bk->b * L, lo, hi;
  qpsk_fir_window(&q->pre, m0 - QPSK_GM, m0 + 4 * L + QPSK_GM, &lo, &hi);
  /* input sums over the block's own samples first (the first pass over them: non-finite ones
   * counted), so that the filter's input check covers only the margins */
  int64_t a = qpsk_count_below((double)bk->b * (double)L * q->sps, 1.0);
  int64_t e = qpsk_count_below((double)(bk->b + 1) * (double)L * q->sps, 1.0);
  qpsk_input_moments(q, a, e, bk->scratch, bk->mom, &bk->mom_n, &bk->nonfinite);
  const double zero[2] = {0, 0};
  const prx_cf32 *x = qpsk_fetch(q, lo, hi, bk->scratch, 0, 0, 0, zero, 1, bk->nonfinite ? 0 : a,
                                 bk->nonfinite ? 0 : e);
  /* meanwhile the next block's samples where they lie in the caller's chunk (not read yet): the
   * filter's arithmetic hides their first read from memory, which would stall its input sums */
  const double nb = (double)(bk->b + 1) * (double)L;
  size_t pf_bytes;
  const void *pf = qpsk_input_in_chunk(q, qpsk_count_below(nb * q->sps, 1.0),
                                       qpsk_count_below((nb + L) * q->sps, 1.0), &pf_bytes);
  qpsk_fir_run(&q->pre, x, lo, m0 - QPSK_GM, 4 * (size_t)L + 2 * QPSK_GM, bk->grid, pf, pf_bytes);
}

/* ---- stage om: the grid without its DC, at unit power; Oerder & Meyr per sub-block ---- */

static void stage_om(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  const qpsk_span *sp = &q->spans[bk->span];
  const int64_t L = q->L;
  const int64_t m0 = 4 * bk->b * L;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM;
  /* the filter is linear: its output less the DC's (outside the stream, where the input reads
   * as 0, this leaves -DC: the few symbols there are not counted by any estimator's edge), scaled
   * to unit power */
  const prx_cf32 D = {(float)(sp->dc[0] * q->pre_gain), (float)(sp->dc[1] * q->pre_gain)};
  const float gain = (float)sp->gain;
  /* O&M over the block's own grid samples inside the stream, per sub-block */
  int64_t g_hi = m0 + 4 * L;
  if (q->flushing) {
    int64_t m_end = qpsk_count_below((double)q->n_total, q->sps / 4);
    if (g_hi > m_end) g_hi = m_end;
  }
  bk->om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
  double corr[QPSK_LAGS][2]; /* in registers, not through the block's memory */
  memset(corr, 0, sizeof corr);
  bk->nsub = 0;
  const int64_t Ls4 = 4 * (int64_t)q->Ls;
  for (unsigned j = 0; j <= q->nsub; j++) {
    int64_t a = m0 + Ls4 * j, e = j < q->nsub ? a + Ls4 : m0 + 4 * L;
    if (e > g_hi) e = g_hi;
    if (e <= a) break;
    /* four complete sub-blocks: their sums at once (the same values), then one by one */
    unsigned nj = 1;
    if (j + 4 <= q->nsub && a + 4 * Ls4 <= g_hi && Ls4 <= 1024) {
      qpsk_om_accum4(bk->grid + QPSK_GM + (a - m0), (size_t)Ls4, D, gain, bk->osub + j);
      nj = 4;
      e = a + Ls4;
    } else {
      bk->osub[j][0] = bk->osub[j][1] = 0;
      qpsk_om_accum(bk->grid + QPSK_GM + (a - m0), (size_t)(e - a), a, D, gain, bk->osub[j]);
    }
    for (unsigned jj = j; jj < j + nj; jj++, a += Ls4, e += Ls4) {
      const double *x2 = bk->osub[jj];
      bk->osub_t[jj] = (double)(a + e - 1) / 8.0;
      bk->nsub = jj + 1;
      /* drift between complete sub-blocks 2^i apart: X_j conj(X_{j - 2^i}) turns by
       * -2 pi e 2^i Ls */
      if (jj < q->nsub && e - a == Ls4) {
        for (unsigned l = 0; l < q->nlags && (1u << l) <= jj; l++) {
          const double *p = bk->osub[jj - (1u << l)];
          corr[l][0] += x2[0] * p[0] + x2[1] * p[1];
          corr[l][1] += x2[1] * p[0] - x2[0] * p[1];
        }
      }
    }
    j += nj - 1;
  }
  memcpy(bk->corr, corr, sizeof corr);
  /* the rest of the grid (margins, and what lies past the stream's end) the same way */
  double unused[2] = {0, 0};
  int64_t done = g_hi > m0 ? g_hi - m0 : 0;
  qpsk_om_accum(bk->grid, QPSK_GM, m0 - QPSK_GM, D, gain, unused);
  qpsk_om_accum(bk->grid + QPSK_GM + done, ng - QPSK_GM - (size_t)done, m0 + done, D, gain, unused);
}

/* instant of symbol k of block bk, nominal symbols from input sample 0 */
static inline double instant(const prx_qpsk *q, const qpsk_blk *bk, double k) {
  const double Cb = ((double)bk->b + 0.5) * q->L;
  return (1 + bk->d) * (k + bk->tau) - bk->d * Cb;
}

/* ---- stages x4 and cfo: 4th power at the symbol instants, its spectrum, peak, refinement ---- */

static void stage_x4(void *ctx, size_t i) {
  prx_qpsk *q = ctx;
  qpsk_span *sp = &q->spans[i];
  const double glen = 4.0 * q->L + 2 * QPSK_GM;
  /* one value per transmitted symbol: the pre-filter interpolated at the instant the timing
   * found (the 4th power's line is strongest there, and there is no intra-symbol rotation to
   * average away at large offsets); the blocks' ownership makes the sequence gap-free across
   * timing wraps, so the line stays coherent over the span. Runs of up to 16 symbols take the
   * timing of their centre (at most 0.04 symbol off at the largest clock offset). */
  size_t nw = 0;
  for (size_t t = 0; t < q->n_blks; t++) {
    const qpsk_blk *bk = &q->blks[t];
    if (bk->span != (int)i) continue;
    int64_t n = bk->k1 - bk->k0;
    int64_t R = qpsk_run_length(bk->d, n, 1);
    if (R < 1) R = 1;
    for (int64_t ka = bk->k0; ka < bk->k1; ka += R) {
      int64_t m = bk->k1 - ka < R ? bk->k1 - ka : R;
      double mid = (double)ka + 0.5 * (double)(m - 1);
      double g0 =
          4.0 * (instant(q, bk, mid) - (double)bk->b * q->L - 0.5 * (double)(m - 1)) + QPSK_GM;
      /* the interpolator reads grid samples floor(g0) - 1 .. floor(g0 + 4 (m - 1)) + 2 */
      if (g0 < 1) g0 = 1;
      if (g0 + 4.0 * (double)(m - 1) > glen - 3) g0 = glen - 3 - 4.0 * (double)(m - 1);
      double fl = floor(g0);
      float c[4];
      qpsk_farrow_coef(g0 - fl, c);
      qpsk_x4_interp(bk->grid + (int64_t)fl - 1, c, (size_t)m, sp->w + nw);
      if (q->cfg.modulation == PRX_QPSK_PI4)
        for (int64_t j = 0; j < m; j++) sp->w[nw + j] = qpsk_pi4_x4(sp->w[nw + j], ka + j);
      nw += (size_t)m;
    }
  }
  sp->nw = nw;
}

/* the span's estimation window (a short last span reaches back into the previous span's values,
 * complete since stage_x4 ended), its spectrum, peak and refinement */
static void stage_cfo(void *ctx, size_t i) {
  prx_qpsk *q = ctx;
  qpsk_span *sp = &q->spans[i];
  const size_t S = q->S, nfft = q->nfft, nw = sp->nw;
  if (!q->plan) { /* no plan could be made: the call reports it (plan_failed) */
    sp->f = 0;
    return;
  }
  size_t nwin = 0;
  if (nw < S) {
    /* the stream's last, short span: estimate over the last S symbols, reaching back into the
     * previous span when there is one */
    const prx_cf32 *prev = i > 0 ? q->spans[i - 1].w : q->w_hist;
    size_t prev_n = i > 0 ? q->spans[i - 1].nw : q->w_hist_n;
    size_t take = S - nw < prev_n ? S - nw : prev_n;
    if (take) memcpy(sp->win, prev + (prev_n - take), take * sizeof(prx_cf32));
    nwin = take;
  }
  /* at most S values, the first (the GPU's window too): a fast clock gives a span one more */
  const size_t own = nw < S - nwin ? nw : S - nwin;
  memcpy(sp->win + nwin, sp->w, own * sizeof(prx_cf32));
  nwin += own;
  /* the padding: zero from where the values end up to where earlier values reached (the FFT
   * leaves its input as it was) */
  if (sp->nz > nwin) memset(sp->win + nwin, 0, (sp->nz - nwin) * sizeof(prx_cf32));
  sp->nz = nwin;
  fftwf_execute_dft(q->plan, (fftwf_complex *)sp->win, (fftwf_complex *)sp->spec);
  /* the refinement starts from the peak's vertex on a grid of 1/8 bin (qpsk_spectrum_peak) */
  double nu = qpsk_spectrum_peak(sp->spec, nfft, QPSK_CFO_SEARCH(q->cfg.acquisition));
  nu = qpsk_periodogram_refine(sp->win, nwin, nu, 1.0 / (double)nfft, sp->spec);
  /* the values are one per true symbol, 1 + d nominal symbols apart (d = e / (1 - e): the
   * clock slope), so the line sits at 4 f (1 + d) */
  sp->f = nu / (4 * (1 + sp->e / (1 - sp->e)));
}

/* ---- stage mf: DC, level, de-rotation, matched filter at the symbol instants, sums ---- */

/* PRX_QPSK_PI4: a block's n symbols, the first symbol k0 of the stream, turned back by k pi/4
 * (qpsk_pi4_factor), the eight factors made once, so that the loop has no branch a symbol (a
 * select a symbol cost ~3 ns, 15 % of the demodulator, at sps 4) */
static void pi4_back_block(prx_cf32 *y, int64_t n, unsigned k0) {
  prx_cf32 f[8];
  for (unsigned j = 0; j < 8; j++) f[j] = qpsk_pi4_factor(k0 + j);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) y[i + j] = qpsk_cmul(y[i + j], f[j]);
  for (; i < n; i++) y[i] = qpsk_cmul(y[i], f[i & 7]);
}

static void stage_mf(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  int64_t n = bk->k1 - bk->k0;
  if (n <= 0) {
    qpsk_blk_measure(bk, 0);
    return;
  }
  const qpsk_span *sp = &q->spans[bk->span];
  const int64_t bL = bk->b * (int64_t)q->L;
  int64_t lo, hi;
  qpsk_mf_window(q, bk->b, &lo, &hi);
  double omega = 2 * M_PI * sp->f / q->sps;
  double theta = sp->theta + omega * (double)(lo - sp->n_ref);
  /* the block's own samples were tested by its pre stage */
  int64_t a = 0, e = 0;
  if (!bk->nonfinite) {
    a = qpsk_count_below((double)bk->b * (double)q->L * q->sps, 1.0);
    e = qpsk_count_below((double)(bk->b + 1) * (double)q->L * q->sps, 1.0);
  }
  /* positions in input samples from x[0]: (t - bL) sps + (bL sps - lo), summed from small terms
   * so that they stay exact far into a stream */
  const double base = (double)bL * q->sps - (double)lo;
  /* runs of one timing value let the filter share its taps between outputs (the period P of
   * the fractional phase, 8 outputs per period); where the clock drifts too fast for runs of
   * 8 P, every instant is placed exactly */
  const unsigned P = qpsk_phase_period(q->sps);
  int64_t R = qpsk_mf_run_length(bk->d, n, P);
  /* the window goes 0..3 samples into the (64-byte aligned) scratch so that the first output's
   * taps read from a 32-byte boundary: where the outputs are a multiple of 4 samples apart
   * (sps 4, 8, 12, ...), no load of the filter's shared-tap kernel then straddles two cache
   * lines (the same values from another address: the same results) */
  int64_t m1 = R <= 0 || R > n ? n : R;
  double p1 = (instant(q, bk, (double)bk->k0 + 0.5 * (double)(m1 - 1)) - 0.5 * (double)(m1 - 1) -
               (double)bL) *
                  q->sps +
              base;
  long i1, j1;
  qpsk_pos_at(p1, q->mf.Q, &i1, &j1);
  size_t off = (size_t)((4 - (i1 - q->mf.c) % 4) % 4);
  const prx_cf32 *x =
      qpsk_fetch(q, lo, hi, bk->scratch + off, 1, theta, omega, sp->dc, sp->gain, a, e);
  /* meanwhile the samples of the same block one span later where they lie in the caller's chunk:
   * read first by the next batch or by the copy of the chunk's tail, they arrive while the
   * filter computes */
  const double nb = (double)(bk->b + q->B) * (double)q->L;
  size_t pf_bytes;
  const uint8_t *pf = qpsk_input_in_chunk(q, qpsk_count_below(nb * q->sps, 1.0),
                                          qpsk_count_below((nb + q->L) * q->sps, 1.0), &pf_bytes);
  if (R <= 0) {
    double p0 = (instant(q, bk, (double)bk->k0) - (double)bL) * q->sps + base;
    qpsk_fir_run_at(&q->mf, x, p0, q->sps * (1 + bk->d), (size_t)n, bk->sym, pf, pf_bytes);
  } else {
    for (int64_t ka = bk->k0; ka < bk->k1; ka += R) {
      int64_t m = bk->k1 - ka < R ? bk->k1 - ka : R;
      double mid = (double)ka + 0.5 * (double)(m - 1);
      double p0 = (instant(q, bk, mid) - 0.5 * (double)(m - 1) - (double)bL) * q->sps + base;
      /* the prefetch shared out over the runs in proportion to their symbols */
      size_t part = pf_bytes * (size_t)(ka + m - bk->k0) / (size_t)n -
                    pf_bytes * (size_t)(ka - bk->k0) / (size_t)n;
      qpsk_fir_run_at(&q->mf, x, p0, q->sps, (size_t)m, bk->sym + (ka - bk->k0), pf, part);
      if (pf) pf += part;
    }
  }
  if (q->cfg.modulation == PRX_QPSK_PI4) pi4_back_block(bk->sym, n, (unsigned)bk->k0);
  qpsk_blk_measure(bk, n);
}

void qpsk_blk_measure(qpsk_blk *bk, int64_t n) {
  memset(&bk->sums, 0, sizeof bk->sums);
  if (n > 0) qpsk_sums_accum(bk->sym, (size_t)n, &bk->sums);
  bk->shape = qpsk_shape_of(bk->sym, n);
}

/* ---- serial: phase, noise, ambiguity, output offsets ---- */

static prx_cf32 block_rot(const qpsk_blk *bk) { return qpsk_ph_rot(bk->phi, bk->sig); }

static int quarter_of(double re, double im) { return (int)lround(atan2(im, re) / (M_PI / 2)) & 3; }

/* PILOTS: the batch's first span of symbols into q->acq (de-rotated by their blocks' carrier
 * phase when rotate is set); returns the count */
static size_t first_symbols(prx_qpsk *q, int rotate) {
  const size_t S = q->S;
  size_t n = 0;
  for (size_t t = 0; t < q->n_blks && n < S; t++) {
    const qpsk_blk *bk = &q->blks[t];
    prx_cf32 r = rotate ? cexpj(-bk->phi) : (prx_cf32){1, 0};
    for (int64_t i = 0; i < bk->k1 - bk->k0 && n < S; i++) q->acq[n++] = qpsk_cmul(bk->sym[i], r);
  }
  return n;
}

/* PILOTS: the correlation of the pilot word with q->acq[f, f + pl) */
static void word_corr(const prx_qpsk *q, size_t f, double *cr, double *ci) {
  *cr = *ci = 0;
  for (size_t i = 0; i < q->cfg.pilot_len; i++) {
    prx_cf32 a = q->acq[f + i], p = q->pilot[i];
    *cr += (double)a.re * p.re + (double)a.im * p.im;
    *ci += (double)a.im * p.re - (double)a.re * p.im;
  }
}

/* PILOTS: finds the frame alignment over the stream's first span of symbols (the word's
 * correlation magnitudes: the carrier phase is not needed) */
static void acquire_frames(prx_qpsk *q) {
  const size_t P = q->cfg.pilot_period, pl = q->cfg.pilot_len;
  size_t n = first_symbols(q, 0);
  int64_t best = 0;
  double best_m = -1;
  for (size_t o = 0; o < P; o++) {
    double m = 0;
    for (size_t f = o; f + pl <= n; f += P) {
      double cr, ci;
      word_corr(q, f, &cr, &ci);
      m += cr * cr + ci * ci;
    }
    if (m > best_m) {
      best_m = m;
      best = (int64_t)o;
    }
  }
  q->frame_off = best;
  q->stats.frame_offset = best;
  q->pcorr[0] = q->pcorr[1] = 0;
}

/* PILOTS: the quarter-turn of the first complete pilot word (after the phase pass), which also
 * serves the data before it */
static void first_quarter(prx_qpsk *q) {
  size_t n = first_symbols(q, 1);
  q->quarter = 0;
  if ((size_t)q->frame_off + q->cfg.pilot_len <= n) {
    double cr, ci;
    word_corr(q, (size_t)q->frame_off, &cr, &ci);
    q->quarter = quarter_of(cr, ci);
  }
}

void qpsk_serial_phase(prx_qpsk *q) {
  const unsigned L = q->L;
  int acquired = 0;
  if (q->cfg.ambiguity == PRX_QPSK_PILOTS) {
    /* the frames first (on the symbols as they are), then the pilots' share of the DC back into
     * the symbols before any estimate reads them */
    if (q->frame_off < 0) {
      acquire_frames(q);
      acquired = 1;
    }
    qpsk_pilot_dc(q);
  }
  /* per block: phase, noise, signal test, flags (qpsk_serial_phase.h, the GPU's pass too) */
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    const qpsk_span *sp = &q->spans[bk->span];
    qpsk_phase_in in;
    in.sums = bk->sums;
    memcpy(in.mom, bk->mom, sizeof in.mom);
    in.mom_n = bk->mom_n;
    in.tres = bk->tres;
    in.gain = sp->gain;
    in.nonfinite = bk->nonfinite;
    in.out_range = sp->out_range;
    in.shape = bk->shape;
    qpsk_phase_out r;
    qpsk_ph_block(L, &q->ph, &in, &r);
    qpsk_ph_to_blk(&r, bk);
  }

  if (acquired) first_quarter(q);

  uint64_t j = q->n_sym;
  size_t out = 0;
  const int64_t P = q->cfg.pilot_period, pl = q->cfg.pilot_len;
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    int64_t n = bk->k1 - bk->k0;
    bk->j0 = j;
    bk->out0 = out;
    bk->quarter = 0;
    unsigned data = 0;
    switch (q->cfg.ambiguity) {
    case PRX_QPSK_DIFFERENTIAL:
    case PRX_QPSK_NONE: {
      const qpsk_phase_out r = {bk->phi, bk->sig, bk->noise, 0, 0, 0, 0, 0};
      const prx_cf32 last = n > 0 ? bk->sym[n - 1] : (prx_cf32){0, 0};
      data =
          qpsk_ph_link(q->cfg.ambiguity == PRX_QPSK_DIFFERENTIAL, &q->ph, n, last, &r, &bk->prev);
      break;
    }
    case PRX_QPSK_PILOTS: {
      prx_cf32 r = cexpj(-bk->phi);
      int64_t pos = ((int64_t)j - q->frame_off) % P;
      if (pos < 0) pos += P;
      for (int64_t i = 0; i < n; i++) {
        if (pos < pl) {
          prx_cf32 a = qpsk_cmul(bk->sym[i], r), p = q->pilot[pos];
          if (pos == 0) q->pcorr[0] = q->pcorr[1] = 0;
          q->pcorr[0] += (double)a.re * p.re + (double)a.im * p.im;
          q->pcorr[1] += (double)a.im * p.re - (double)a.re * p.im;
          if (pos == pl - 1) q->quarter = quarter_of(q->pcorr[0], q->pcorr[1]);
          bk->tag[i] = 4;
        } else {
          bk->tag[i] = (uint8_t)q->quarter;
          data++;
        }
        if (i == n / 2) bk->quarter = q->quarter;
        if (++pos == P) pos = 0;
      }
      break;
    }
    }
    bk->n_data = data;
    out += data;
    j += (uint64_t)n;
  }
}

/* ---- stage out: decisions and LLRs ---- */

static void stage_out(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  int64_t n = bk->k1 - bk->k0;
  if (n <= 0) return;
  uint8_t *bits = q->out_bits ? q->out_bits + 2 * bk->out0 : NULL;
  float *llrs = q->out_llrs ? q->out_llrs + 2 * bk->out0 : NULL;
  prx_cf32 *syms = q->out_syms ? q->out_syms + bk->out0 : NULL;
  if (!bits && !llrs && !syms) return;
  prx_cf32 rot = block_rot(bk);
  if (syms) { /* the corrected symbols: de-rotated, unit energy, pilots' quarter turn applied */
    static const prx_cf32 turn4[4] = {{1, 0}, {0, -1}, {-1, 0}, {0, 1}};
    size_t d = 0;
    for (int64_t i = 0; i < n; i++) {
      int pilots = q->cfg.ambiguity == PRX_QPSK_PILOTS;
      if (pilots && bk->tag[i] >= 4) continue; /* a pilot: no data symbol */
      syms[d++] = qpsk_cmul(bk->sym[i], pilots ? qpsk_cmul(rot, turn4[bk->tag[i]]) : rot);
    }
  }
  float sigma2 = (float)(bk->noise / bk->sig);
  switch (q->cfg.ambiguity) {
  case PRX_QPSK_DIFFERENTIAL: {
    qpsk_diff_prev prev = bk->prev;
    qpsk_decide_diff(bk->sym, (size_t)n, rot, sigma2, &prev, bits, llrs);
    break;
  }
  case PRX_QPSK_NONE: qpsk_decide_coherent(bk->sym, (size_t)n, rot, sigma2, bits, llrs); break;
  case PRX_QPSK_PILOTS: {
    static const prx_cf32 turn[4] = {{1, 0}, {0, -1}, {-1, 0}, {0, 1}}; /* j^-q */
    size_t d = 0;
    for (int64_t i = 0; i < n;) {
      int64_t e = i + 1;
      while (e < n && bk->tag[e] == bk->tag[i]) e++;
      if (bk->tag[i] < 4) {
        qpsk_decide_coherent(bk->sym + i, (size_t)(e - i), qpsk_cmul(rot, turn[bk->tag[i]]), sigma2,
                             bits ? bits + 2 * d : NULL, llrs ? llrs + 2 * d : NULL);
        d += (size_t)(e - i);
      }
      i = e;
    }
    break;
  }
  }
}

/* ---- the weak-carrier test (qpsk_internal.h) ---- */

/* whether a span of n full blocks whose statistics add up to sum counts, and shows the line */
static int weak_span(double sum, unsigned n, int *line) {
  *line = sum > QPSK_WEAK_LINE * n;
  return n >= 4; /* (fewer: the stream's short last span, too few to tell) */
}

void qpsk_weak_close(prx_qpsk *q) {
  int line;
  if (weak_span(q->wk_sum, q->wk_n, &line)) {
    q->wk_spans++;
    q->wk_lines += line;
    q->wk_timings += q->wk_timing != 0;
  }
  q->wk_sum = 0;
  q->wk_n = 0;
  q->wk_span = -1;
}

void qpsk_weak_add(prx_qpsk *q, int64_t span, int timing, double vv_stat, int full) {
  if (span != q->wk_span) {
    qpsk_weak_close(q);
    q->wk_span = span;
    q->wk_timing = timing;
  }
  if (full && isfinite(vv_stat)) {
    q->wk_sum += vv_stat;
    q->wk_n++;
  }
}

void qpsk_weak_counts(const prx_qpsk *q, uint64_t *spans, uint64_t *lines, uint64_t *timings) {
  int line;
  const int open = weak_span(q->wk_sum, q->wk_n, &line);
  *spans = q->wk_spans + (uint64_t)open;
  *lines = q->wk_lines + (uint64_t)(open && line);
  *timings = q->wk_timings + (uint64_t)(open && q->wk_timing);
}

/* ---- the batch ---- */

static void report(prx_qpsk *q, const qpsk_blk *bk) {
  const qpsk_span *sp = &q->spans[bk->span];
  prx_qpsk_block e;
  memset(&e, 0, sizeof e);
  e.index = (uint64_t)bk->b;
  e.first_symbol = bk->j0;
  e.n_symbols = (unsigned)(bk->k1 - bk->k0);
  e.n_data = bk->n_data;
  double centre = ((double)bk->b + 0.5) * q->L; /* symbols */
  e.time = centre / q->cfg.symbol_rate;
  e.cfo = sp->f * q->cfg.symbol_rate;
  double omega = 2 * M_PI * sp->f / q->sps;
  double theta = sp->theta + omega * (centre * q->sps - (double)sp->n_ref);
  e.phase = qpsk_wrap(theta + bk->phi + bk->quarter * (M_PI / 2), 2 * M_PI);
  e.timing = bk->tau;
  e.clock_ppm = -sp->e * 1e6;
  e.esn0_db = bk->noise_own > 0 ? 10 * log10(bk->sig_own / bk->noise_own) : -INFINITY;
  if (!(bk->k1 > bk->k0)) e.esn0_db = NAN;
  e.noise_var = bk->noise / bk->sig;
  e.amplitude = sqrt(bk->sig) / sp->gain;
  e.signal = bk->vv_stat;
  e.flags = bk->flags & ~(QPSK_BLK_LEVELS | QPSK_BLK_STEPS);
  e.nonfinite = bk->nonfinite;
  if (q->n_est == QPSK_KEEP) { /* keep the newest: drop the older half */
    memmove(q->est, q->est + QPSK_KEEP / 2, (QPSK_KEEP / 2) * sizeof *q->est);
    q->n_est = QPSK_KEEP / 2;
  }
  q->est[q->n_est++] = e;

  /* the running summary: powers in input units, weighted by the block's symbols */
  prx_qpsk_stats *st = &q->stats;
  qpsk_weak_add(q, sp->s, sp->line, bk->vv_stat, e.n_symbols >= 0.5 * q->L);
  st->blocks++;
  st->nonfinite += bk->nonfinite;
  st->blocks_no_signal += (bk->flags & PRX_QPSK_BLOCK_NO_SIGNAL) != 0;
  /* a full block without a signal whose symbols carry the span's power (not a gap: a gap's
   * near-constant remainder has M2M4's 60 dB at 1e-4 of it) at a strong Es/N0 by their moments */
  q->blk_unlocked += (bk->flags & PRX_QPSK_BLOCK_NO_SIGNAL) && e.n_symbols >= 0.5 * q->L &&
                     e.esn0_db > QPSK_UNLOCKED_ESN0_DB &&
                     bk->sig_own + bk->noise_own > QPSK_UNLOCKED_POWER;
  /* a full block with a signal whose symbols lie on one line (PRX_QPSK_WARN_NOT_QPSK), whose
   * power lies on several levels (PRX_QPSK_WARN_LEVELS), whose symbols turn by quarter turns
   * (PRX_QPSK_WARN_QUARTER_STEPS) */
  if (!(bk->flags & PRX_QPSK_BLOCK_NO_SIGNAL) && e.n_symbols >= 0.5 * q->L) {
    q->blk_full_signal++;
    q->blk_line += bk->shape.line > QPSK_LINE_MIN;
    q->blk_levels += (bk->flags & QPSK_BLK_LEVELS) != 0;
    q->blk_steps += (bk->flags & QPSK_BLK_STEPS) != 0;
  }
  st->blocks_clock_range += (bk->flags & PRX_QPSK_BLOCK_CLOCK_RANGE) != 0;
  st->blocks_timing_jump += (bk->flags & PRX_QPSK_BLOCK_TIMING_JUMP) != 0;
  st->blocks_locked += !(bk->flags & (PRX_QPSK_BLOCK_NO_SIGNAL | PRX_QPSK_BLOCK_CLOCK_RANGE));
  double n = (double)e.n_symbols, g2 = sp->gain * sp->gain;
  /* a short block (the stream's last) is too short for its own M2M4: the window's estimate */
  int own = n >= 0.5 * q->L;
  double ps = own ? bk->sig_own : bk->sig, pn = own ? bk->noise_own : bk->noise;
  if (n > 0 && isfinite(ps) && isfinite(pn)) {
    q->all_sig += n * ps / g2;
    q->all_noise += n * pn / g2;
    q->all_cfo += n * e.cfo;
    q->all_d += n * sp->e;
    q->all_n += n;
    if (!(e.cfo >= q->all_cfo_min)) q->all_cfo_min = e.cfo;
    if (!(e.cfo <= q->all_cfo_max)) q->all_cfo_max = e.cfo;
    if (!(bk->flags & PRX_QPSK_BLOCK_NO_SIGNAL)) {
      if (q->dr_n == 0) {
        q->dr_t0 = e.time;
        q->dr_s0 = sp->s;
      }
      const double t = e.time - q->dr_t0;
      q->dr_t += t;
      q->dr_tt += t * t;
      q->dr_f += e.cfo;
      q->dr_tf += t * e.cfo;
      q->dr_n += 1;
      q->dr_s1 = sp->s;
      q->acc_sig += n * ps / g2;
      q->acc_noise += n * pn / g2;
      q->acc_cfo += n * e.cfo;
      q->acc_d += n * sp->e;
      q->acc_n += n;
      if (!(e.cfo >= st->cfo_min_hz)) st->cfo_min_hz = e.cfo;
      if (!(e.cfo <= st->cfo_max_hz)) st->cfo_max_hz = e.cfo;
    }
  }
  if (q->cfg.on_block) q->cfg.on_block(q->cfg.user, &e);
}

size_t qpsk_batch_begin(prx_qpsk *q, int64_t s0, unsigned g) {
  const int64_t B = q->B;
  int64_t nb_end = q->flushing ? stream_blocks(q) : INT64_MAX;
  for (unsigned i = 0; i < g; i++) q->spans[i].s = s0 + i;
  q->n_blks = 0;
  for (int64_t b = s0 * B; b < (s0 + g) * B && b < nb_end; b++) {
    qpsk_blk *bk = &q->blks[q->n_blks++];
    bk->b = b;
    bk->span = (int)(b / B - s0);
  }
  return q->n_blks;
}

void qpsk_stage_cfo(prx_qpsk *q, unsigned i) { stage_cfo(q, i); }
void qpsk_stage_out(prx_qpsk *q, size_t t) { stage_out(q, t); }

size_t qpsk_run_batch(prx_qpsk *q, int64_t s0, unsigned g) {
  if (qpsk_batch_begin(q, s0, g) == 0) return 0;

  prx_pool_run(q->pool, stage_pre, q, q->n_blks);
  qpsk_serial_level(q, g);
  prx_pool_run(q->pool, stage_om, q, q->n_blks);
  qpsk_serial_timing(q, g);
  prx_pool_run(q->pool, stage_x4, q, g);
  /* a demodulator made with prx_qpsk_create_plan_later plans here, at its first CFO stage */
  if (!q->plan && qpsk_plan_span_fft(q)) q->plan_failed = 1;
  prx_pool_run(q->pool, stage_cfo, q, g);
  qpsk_serial_nco(q, g);
  prx_pool_run(q->pool, stage_mf, q, q->n_blks);
  qpsk_serial_phase(q);
  prx_pool_run(q->pool, stage_out, q, q->n_blks);
  if (q->batch_probe) q->batch_probe(q->probe_ctx, q);
  return qpsk_batch_end(q, g);
}

size_t qpsk_batch_end(prx_qpsk *q, unsigned g) {
  /* carry the state to the next batch and report */
  size_t data = 0, syms = 0;
  for (size_t t = 0; t < q->n_blks; t++) {
    const qpsk_blk *bk = &q->blks[t];
    data += bk->n_data;
    syms += (size_t)(bk->k1 - bk->k0);
    report(q, bk);
  }
  const qpsk_blk *last = &q->blks[q->n_blks - 1];
  q->ph.sums_prev = last->sums;
  q->ph.have = 1;
  q->ph.phi_prev = last->phi;
  /* the history: the batch's last span with values, the one right before the next batch's first
   * (a span of fewer than S values, as a slow clock gives, too: a short last span's window must
   * continue its own values, not those of a span further back) */
  for (unsigned i = g; i-- > 0;) {
    if (q->spans[i].nw > 0) {
      /* the two buffers change places (no copy): the span's is filled again by the next batch */
      prx_cf32 *t = q->w_hist;
      q->w_hist = q->spans[i].w;
      q->spans[i].w = t;
      q->w_hist_n = q->spans[i].nw;
      break;
    }
  }
  q->n_sym += syms;
  q->stats.symbols += syms;
  q->stats.data_symbols += data;
  if (q->out_bits) q->out_bits += 2 * data;
  if (q->out_llrs) q->out_llrs += 2 * data;
  if (q->out_syms) q->out_syms += data;
  return data;
}
