/* One batch of CFO spans: parallel stages over blocks (or spans), joined by cheap serial passes
 * that take the cross-block decisions, as in the seed paper:
 *
 *   pre   (blocks) short RRC pre-filter on the 4/T grid, Oerder & Meyr sum (|z|^2 is blind to
 *                  the carrier, so timing comes before the CFO)             -> blk.grid, blk.om
 *   serial         timing unwrapped across blocks, symbol ownership         -> blk.tau, k0, k1
 *   cfo   (spans)  4th power of the pre-filter at each symbol instant (cubic Farrow on the
 *                  grid), zero-padded FFT, peak, Newton refinement          -> span.f
 *   serial         phase-continuous NCO across spans                       -> span.theta
 *   mf    (blocks) de-rotation, matched filter evaluated at each symbol
 *                  instant (polyphase interpolation), V&V/M2M4 sums         -> blk.sym, blk.sums
 *   serial         phase unwrapped (mod pi/2), noise window, pilots        -> blk.phi, noise, tags
 *   out   (blocks) decisions, LLRs                                          -> caller's buffers
 *
 * Each stage reads only absolute positions of the stream and the state carried from earlier
 * blocks, so the result does not depend on how blocks are spread over threads or batches. */
#include "qpsk_internal.h"

#include <math.h>
#include <string.h>

static inline prx_cf32 cexpj(double a) {
  prx_cf32 r = {(float)cos(a), (float)sin(a)};
  return r;
}
static inline prx_cf32 cmulf(prx_cf32 a, prx_cf32 b) {
  prx_cf32 r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return r;
}

static int64_t stream_blocks(const prx_qpsk *q) {
  return qpsk_count_below((double)q->n_total / q->sps, (double)q->L);
}

/* ---- stage pre: the pre-filter on the 4/T grid, Oerder & Meyr ---- */

static void stage_pre(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  const int64_t L = q->L;
  int64_t m0 = 4 * bk->b * L, lo, hi;
  qpsk_fir_window(&q->pre, m0 - QPSK_GM, m0 + 4 * L + QPSK_GM, &lo, &hi);
  const prx_cf32 *x = qpsk_fetch(q, lo, hi, bk->scratch, 0, 0, 0);
  qpsk_fir_run(&q->pre, x, lo, m0 - QPSK_GM, 4 * (size_t)L + 2 * QPSK_GM, bk->grid);
  /* O&M over the block's own grid samples inside the stream */
  int64_t g_hi = m0 + 4 * L;
  if (q->flushing) {
    int64_t m_end = qpsk_count_below((double)q->n_total, q->sps / 4);
    if (g_hi > m_end) g_hi = m_end;
  }
  bk->om[0] = bk->om[1] = 0;
  bk->om_n = 0;
  if (g_hi > m0) {
    qpsk_om_accum(bk->grid + QPSK_GM, (size_t)(g_hi - m0), m0, bk->om);
    bk->om_n = (double)(g_hi - m0);
  }
}

/* ---- stage cfo: 4th power at the symbol instants, its spectrum, peak, refinement ---- */

static void stage_cfo(void *ctx, size_t i) {
  prx_qpsk *q = ctx;
  qpsk_span *sp = &q->spans[i];
  const size_t S = q->S, nfft = q->nfft;
  /* one value per transmitted symbol: the pre-filter interpolated at the instant the timing
   * found (the 4th power's line is strongest there, and there is no intra-symbol rotation to
   * average away at large offsets); the blocks' ownership makes the sequence gap-free across
   * timing wraps, so the line stays coherent over the span */
  size_t nw = 0, t_first = SIZE_MAX, t_last = 0;
  for (size_t t = 0; t < q->n_blks; t++) {
    const qpsk_blk *bk = &q->blks[t];
    if (bk->span != (int)i) continue;
    if (t_first == SIZE_MAX) t_first = t;
    t_last = t;
    int64_t n = bk->k1 - bk->k0;
    if (n <= 0) continue;
    double g0 = 4.0 * ((double)(bk->k0 - bk->b * (int64_t)q->L) + bk->tau) + QPSK_GM;
    double fl = floor(g0);
    float c[4];
    qpsk_farrow_coef(g0 - fl, c);
    qpsk_x4_interp(bk->grid + (int64_t)fl - 1, c, (size_t)n, sp->w + nw);
    nw += (size_t)n;
  }
  sp->nw = nw;
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
  memcpy(sp->win + nwin, sp->w, nw * sizeof(prx_cf32));
  nwin += nw;
  memset(sp->win + nwin, 0, (nfft - nwin) * sizeof(prx_cf32));
  fftwf_execute_dft(q->plan, (fftwf_complex *)sp->win, (fftwf_complex *)sp->spec);
  double nu = qpsk_spectrum_peak(sp->spec, nfft, 4 * q->cfg.acquisition);
  /* the refinement starts from a point on a grid of 1/8 bin: the last-bit rounding of an FFT
   * (which differs between FFTW plans, processes and machines) moves the parabola's vertex by
   * ~1e-7 bin, so it almost never (~1e-6 of the spans) changes the start, and Newton's steps
   * from one start end at one value */
  nu = nearbyint(nu * (8.0 * (double)nfft)) / (8.0 * (double)nfft);
  nu = qpsk_periodogram_refine(sp->win, nwin, nu, 1.0 / (double)nfft, sp->spec);
  /* the values are one per true symbol, (1 + d) nominal symbols apart (d: the clock offset, the
   * timing's drift over the span), so the line sits at 4 f (1 + d) */
  double d = 0;
  if (t_first != SIZE_MAX && t_last > t_first) {
    const qpsk_blk *a = &q->blks[t_first], *z = &q->blks[t_last];
    d = (z->tau - a->tau) / ((double)(z->b - a->b) * q->L);
  }
  sp->f = nu / (4 * (1 + d));
}

/* ---- serial: timing ---- */

static void serial_timing(prx_qpsk *q) {
  const int64_t L = q->L;
  int have = q->have_prev;
  double tau_prev = q->tau_prev;
  int64_t k_prev = q->k_end_prev;
  const double *om_prev = q->om_prev;
  double om_prev_n = q->om_prev_n;
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    double om[2] = {bk->om[0], bk->om[1]};
    /* a short last block borrows the previous block's statistics */
    if (bk->om_n < 2.0 * L && have) {
      om[0] += om_prev[0];
      om[1] += om_prev[1];
    }
    double th = qpsk_om_tau(om);
    if (!isfinite(th)) th = have ? tau_prev : 0; /* non-finite input: keep the last estimate */
    double limit = (double)((bk->b + 1) * L);
    if (q->flushing) {
      double end = (double)q->n_total / q->sps;
      if (end < limit) limit = end;
    }
    if (!have) {
      bk->tau = th;
      bk->k0 = (int64_t)ceil(-th); /* the first instant at or after input sample 0 */
    } else {
      bk->tau = tau_prev + qpsk_wrap(th - tau_prev, 1.0);
      bk->k0 = k_prev;
    }
    bk->k1 = (int64_t)ceil(limit - bk->tau);
    if (bk->k1 < bk->k0) bk->k1 = bk->k0;
    if (bk->k1 - bk->k0 > L + 1) bk->k1 = bk->k0 + L + 1; /* cannot happen with |dtau| < 1/2 */
    have = 1;
    tau_prev = bk->tau;
    k_prev = bk->k1;
    om_prev = bk->om;
    om_prev_n = bk->om_n;
  }
  (void)om_prev_n;
}

/* ---- stage mf: de-rotation, matched filter at the symbol instants, estimator sums ---- */

static void stage_mf(void *ctx, size_t t) {
  prx_qpsk *q = ctx;
  qpsk_blk *bk = &q->blks[t];
  memset(&bk->sums, 0, sizeof bk->sums);
  int64_t n = bk->k1 - bk->k0;
  if (n <= 0) return;
  const qpsk_span *sp = &q->spans[bk->span];
  const int64_t bL = bk->b * (int64_t)q->L;
  int64_t lo, hi;
  qpsk_mf_window(q, bk->b, &lo, &hi);
  double omega = 2 * M_PI * sp->f / q->sps;
  double theta = sp->theta + omega * (double)(lo - sp->n_ref);
  const prx_cf32 *x = qpsk_fetch(q, lo, hi, bk->scratch, 1, theta, omega);
  /* instant of symbol k0, in input samples from x[0]: (k0 + tau) sps - lo, summed from small
   * terms so that it stays exact far into a stream */
  double p0 = ((double)(bk->k0 - bL) + bk->tau) * q->sps + ((double)bL * q->sps - (double)lo);
  qpsk_fir_run_at(&q->mf, x, p0, q->sps, (size_t)n, bk->sym);
  qpsk_sums_accum(bk->sym, (size_t)n, &bk->sums);
}

/* ---- serial: phase, noise, ambiguity, output offsets ---- */

static prx_cf32 block_rot(const qpsk_blk *bk) {
  prx_cf32 r = cexpj(-bk->phi);
  float g = (float)(1.0 / sqrt(bk->sig));
  r.re *= g;
  r.im *= g;
  return r;
}

static int quarter_of(double re, double im) { return (int)lround(atan2(im, re) / (M_PI / 2)) & 3; }

/* PILOTS: finds the frame alignment over the stream's first span of symbols */
static void acquire_frames(prx_qpsk *q) {
  const size_t S = q->S, P = q->cfg.pilot_period, pl = q->cfg.pilot_len;
  size_t n = 0;
  for (size_t t = 0; t < q->n_blks && n < S; t++) {
    const qpsk_blk *bk = &q->blks[t];
    prx_cf32 r = cexpj(-bk->phi);
    for (int64_t i = 0; i < bk->k1 - bk->k0 && n < S; i++) q->acq[n++] = cmulf(bk->sym[i], r);
  }
  int64_t best = 0;
  double best_m = -1;
  for (size_t o = 0; o < P; o++) {
    double m = 0;
    for (size_t f = o; f + pl <= n; f += P) {
      double cr = 0, ci = 0;
      for (size_t i = 0; i < pl; i++) {
        prx_cf32 a = q->acq[f + i], p = q->pilot[i];
        cr += (double)a.re * p.re + (double)a.im * p.im;
        ci += (double)a.im * p.re - (double)a.re * p.im;
      }
      m += cr * cr + ci * ci;
    }
    if (m > best_m) {
      best_m = m;
      best = (int64_t)o;
    }
  }
  q->frame_off = best;
  q->stats.frame_offset = best;
  /* the quarter-turn of the first complete pilot word also serves the data before it */
  q->quarter = 0;
  if ((size_t)best + pl <= n) {
    double cr = 0, ci = 0;
    for (size_t i = 0; i < pl; i++) {
      prx_cf32 a = q->acq[best + i], p = q->pilot[i];
      cr += (double)a.re * p.re + (double)a.im * p.im;
      ci += (double)a.im * p.re - (double)a.re * p.im;
    }
    q->quarter = quarter_of(cr, ci);
  }
  q->pcorr[0] = q->pcorr[1] = 0;
}

static void serial_phase(prx_qpsk *q) {
  const unsigned L = q->L;
  int have = q->have_prev;
  double phi_prev = q->phi_prev;
  const qpsk_sums *sums_prev = &q->sums_prev;
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    qpsk_sums s = bk->sums;
    if (s.n < 0.5 * L && have) qpsk_sums_add(&s, sums_prev);
    double ph = s.n > 0 ? qpsk_vv_phase(&s) : NAN;
    if (isfinite(ph))
      bk->phi = have ? phi_prev + qpsk_wrap(ph - phi_prev, M_PI / 2) : ph;
    else /* no symbols, or non-finite input: keep the last estimate */
      bk->phi = phi_prev;
    /* noise: M2M4 over this block and up to QPSK_NOISE_BLOCKS - 1 before it (blocks with
     * non-finite sums left out) */
    if (isfinite(bk->sums.m4) && isfinite(bk->sums.s4[0]) && isfinite(bk->sums.s4[1])) {
      q->noise_ring[q->noise_count % QPSK_NOISE_BLOCKS] = bk->sums;
      q->noise_count++;
    }
    qpsk_sums win;
    memset(&win, 0, sizeof win);
    unsigned nw = q->noise_count < QPSK_NOISE_BLOCKS ? q->noise_count : QPSK_NOISE_BLOCKS;
    for (unsigned i = 0; i < nw; i++) qpsk_sums_add(&win, &q->noise_ring[i]);
    double sig, noise;
    qpsk_m2m4(&win, &sig, &noise);
    if (!(sig > 0 && noise > 0 && isfinite(sig) && isfinite(noise))) {
      /* nothing measured yet (an empty stream start): the last values, or neutral ones */
      sig = q->sig_prev;
      noise = q->noise_prev;
    }
    q->sig_prev = sig;
    q->noise_prev = noise;
    bk->sig = sig;
    bk->noise = noise;
    double so, no;
    qpsk_m2m4(&bk->sums, &so, &no);
    bk->esn0_own = no > 0 ? so / no : 0;
    have = 1;
    phi_prev = bk->phi;
    sums_prev = &bk->sums;
  }

  if (q->cfg.ambiguity == PRX_QPSK_PILOTS && q->frame_off < 0) acquire_frames(q);

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
      bk->prev = q->dprev;
      data = (unsigned)n;
      if (n > 0) {
        prx_cf32 rot = block_rot(bk);
        qpsk_diff_set(&q->dprev, bk->sym[n - 1], rot, (float)(bk->noise / bk->sig));
      }
      break;
    case PRX_QPSK_NONE: data = (unsigned)n; break;
    case PRX_QPSK_PILOTS: {
      prx_cf32 r = cexpj(-bk->phi);
      int64_t pos = ((int64_t)j - q->frame_off) % P;
      if (pos < 0) pos += P;
      for (int64_t i = 0; i < n; i++) {
        if (pos < pl) {
          prx_cf32 a = cmulf(bk->sym[i], r), p = q->pilot[pos];
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
      syms[d++] = cmulf(bk->sym[i], pilots ? cmulf(rot, turn4[bk->tag[i]]) : rot);
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
        qpsk_decide_coherent(bk->sym + i, (size_t)(e - i), cmulf(rot, turn[bk->tag[i]]), sigma2,
                             bits ? bits + 2 * d : NULL, llrs ? llrs + 2 * d : NULL);
        d += (size_t)(e - i);
      }
      i = e;
    }
    break;
  }
  }
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
  e.esn0_db = bk->esn0_own > 0 ? 10 * log10(bk->esn0_own) : -INFINITY;
  e.noise_var = bk->noise / bk->sig;
  e.amplitude = sqrt(bk->sig);
  if (q->n_est == QPSK_KEEP) { /* keep the newest: drop the older half */
    memmove(q->est, q->est + QPSK_KEEP / 2, (QPSK_KEEP / 2) * sizeof *q->est);
    q->n_est = QPSK_KEEP / 2;
  }
  q->est[q->n_est++] = e;
  if (q->cfg.on_block) q->cfg.on_block(q->cfg.user, &e);
}

size_t qpsk_run_batch(prx_qpsk *q, int64_t s0, unsigned g) {
  const int64_t B = q->B, S = q->S;
  int64_t nb_end = q->flushing ? stream_blocks(q) : INT64_MAX;
  for (unsigned i = 0; i < g; i++) q->spans[i].s = s0 + i;
  q->n_blks = 0;
  for (int64_t b = s0 * B; b < (s0 + g) * B && b < nb_end; b++) {
    qpsk_blk *bk = &q->blks[q->n_blks++];
    bk->b = b;
    bk->span = (int)(b / B - s0);
  }
  if (q->n_blks == 0) return 0;

  prx_pool_run(q->pool, stage_pre, q, q->n_blks);
  serial_timing(q);
  prx_pool_run(q->pool, stage_cfo, q, g);
  /* phase-continuous NCO: each span's phase continues the previous span's */
  double theta = q->theta_next;
  for (unsigned i = 0; i < g; i++) {
    qpsk_span *sp = &q->spans[i];
    if (!isfinite(sp->f)) sp->f = q->f_prev; /* non-finite input: keep the last estimate */
    q->f_prev = sp->f;
    sp->n_ref = (int64_t)floor((double)sp->s * S * q->sps);
    sp->theta = theta;
    int64_t n_next = (int64_t)floor((double)(sp->s + 1) * S * q->sps);
    theta = qpsk_wrap(theta + 2 * M_PI * sp->f / q->sps * (double)(n_next - sp->n_ref), 2 * M_PI);
  }
  q->theta_next = theta;
  prx_pool_run(q->pool, stage_mf, q, q->n_blks);
  serial_phase(q);
  prx_pool_run(q->pool, stage_out, q, q->n_blks);

  /* carry the state to the next batch and report */
  size_t data = 0, syms = 0;
  for (size_t t = 0; t < q->n_blks; t++) {
    const qpsk_blk *bk = &q->blks[t];
    data += bk->n_data;
    syms += (size_t)(bk->k1 - bk->k0);
    report(q, bk);
  }
  const qpsk_blk *last = &q->blks[q->n_blks - 1];
  q->have_prev = 1;
  q->tau_prev = last->tau;
  q->k_end_prev = last->k1;
  q->om_prev[0] = last->om[0];
  q->om_prev[1] = last->om[1];
  q->om_prev_n = last->om_n;
  q->sums_prev = last->sums;
  q->phi_prev = last->phi;
  for (unsigned i = g; i-- > 0;) {
    if (q->spans[i].nw >= (size_t)S) {
      memcpy(q->w_hist, q->spans[i].w, q->spans[i].nw * sizeof(prx_cf32));
      q->w_hist_n = q->spans[i].nw;
      break;
    }
  }
  q->n_sym += syms;
  q->stats.symbols += syms;
  q->stats.data_symbols += data;
  q->stats.blocks += q->n_blks;
  if (q->out_bits) q->out_bits += 2 * data;
  if (q->out_llrs) q->out_llrs += 2 * data;
  if (q->out_syms) q->out_syms += data;
  return data;
}
