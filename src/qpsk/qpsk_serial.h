/* The level, timing and NCO passes of one CFO span of one channel over plain records, written
 * once for the host and the GPU (__host__ __device__). The CPU demodulator runs them span by span
 * (qpsk_serial.c: qpsk_serial_level, _timing and _nco gather a span's records from prx_qpsk's
 * blocks and put the results back); the bank's driver (qpsk_bank_gpu.c) runs them on the GPU,
 * one thread or warp per channel (qpsk_serial_cuda.cu), between the stage kernels, so that a span
 * is one stream-ordered sequence of launches without a host wait until its symbols' sums, and
 * copies the results back into each channel's prx_qpsk, where the phase pass, the reports and the
 * summary read them as on the CPU.
 *
 * On the GPU (compiled without fused multiply-adds) additions, products, divisions and square
 * roots round as on the host, atan2, cos and sin to within an ulp or two of the host's libm. */
#ifndef PRX_QPSK_SERIAL_H
#define PRX_QPSK_SERIAL_H

#include "qpsk_stage_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QPSK_SR_MAXB 64 /* blocks per span the passes take (the timing pass's median scratch) */
#define QPSK_SR_PI 3.14159265358979323846

/* the configuration they share (from the channels' prx_qpsk, all alike in a bank) */
typedef struct {
  unsigned L, B, S, nsub, Ls, nlags, Lmax;
  unsigned P; /* the smallest c <= 8 with c sps an integer (0: none): the mf runs' unit is 8 P */
  double sps, pre_gain;
  int mf_c;
  unsigned mf_ntaps;
  int64_t region; /* the w row's second CFO region from its first (S + B Lmax) */
} qpsk_serial_cfg;

/* what one channel carries from span to span: qpsk_serial_state (qpsk_internal.h: prx_qpsk's sr) */

/* one channel's span, as the passes leave qpsk_span */
typedef struct {
  double dc[2], dc_syms, gain;
  int64_t dc_win[QPSK_DC_SPANS];
  unsigned dc_nwin;
  int dc_own;
  double e; /* timing */
  int out_range;
  int line; /* the span's O&M (symbol-timing) line adds up over it (qpsk_sr_clock.span_locked) */
  double f, theta; /* NCO */
  int64_t n_ref;
} qpsk_serial_span;

/* one block, as the timing pass leaves qpsk_blk */
typedef struct {
  double om[2], om_en, tau, d, tres;
  int64_t k0, k1;
  int locked;
  int pad;
} qpsk_serial_blk;

/* wraps x into (-period/2, period/2] (qpsk_wrap's expression) */
QPSK_HD double qpsk_sr_wrap(double x, double period) {
  double y = x - period * floor(x / period + 0.5);
  if (y <= -period / 2) y += period;
  if (y > period / 2) y -= period;
  return y;
}

/* qpsk_om_tau */
QPSK_HD double qpsk_sr_om_tau(const double x[2]) {
  double t = -atan2(x[1], x[0]) / (2 * QPSK_SR_PI);
  if (t <= -0.5) t += 1;
  return t;
}

/* ---- level of span s (nb blocks, input sums mom: nb x (re, im, |x|^2, count)): the DC and the
 * gain to unit power (the last span's where a span has no samples). The DC is the mean over this
 * span and up to QPSK_DC_SPANS - 1 before it ---- */
QPSK_HD void qpsk_sr_level(const qpsk_serial_cfg *cf, qpsk_serial_state *q, int64_t s,
                           const double *mom, size_t nb, qpsk_serial_span *sp) {
  double m[3] = {0, 0, 0}, n = 0;
  for (size_t t = 0; t < nb; t++) {
    for (int j = 0; j < 3; j++) m[j] += mom[4 * t + j];
    n += mom[4 * t + 3];
  }
  double p = 0, gain = q->gain_prev;
  if (n > 0) {
    double mr = m[0] / n, mi = m[1] / n;
    p = m[2] / n - (mr * mr + mi * mi);
    if (p > 0 && isfinite(p)) gain = 1 / sqrt(p);
  }
  /* the DC window: this span and the ring of earlier ones */
  double *slot = q->dc_ring[q->dc_count % QPSK_DC_SPANS];
  slot[0] = m[0];
  slot[1] = m[1];
  slot[2] = n;
  q->dc_span[q->dc_count % QPSK_DC_SPANS] = s;
  if (n > 0) q->dc_count++;
  double sr = 0, si = 0, sn = 0;
  unsigned nr = q->dc_count < QPSK_DC_SPANS ? q->dc_count : QPSK_DC_SPANS, nw = 0;
  for (unsigned j = 0; j < nr; j++) {
    sr += q->dc_ring[j][0];
    si += q->dc_ring[j][1];
    sn += q->dc_ring[j][2];
    if (q->dc_ring[j][2] > 0) sp->dc_win[nw++] = q->dc_span[j];
  }
  sp->dc_nwin = nw;
  sp->dc_syms = sn / cf->sps;
  sp->dc_own = n > 0;
  double dr = sn > 0 ? sr / sn : q->dc_prev[0], di = sn > 0 ? si / sn : q->dc_prev[1];
  int kept = !(sn > 0);
  if (!isfinite(dr) || !isfinite(di) || !isfinite(gain)) {
    dr = q->dc_prev[0];
    di = q->dc_prev[1];
    gain = q->gain_prev;
    kept = 1;
  }
  if (kept) { /* the last span's DC, so its window */
    for (int j = 0; j < QPSK_DC_SPANS; j++) sp->dc_win[j] = q->dcw_prev[j];
    sp->dc_nwin = q->dcw_prev_n;
    sp->dc_syms = q->dcw_prev_syms;
  }
  for (int j = 0; j < QPSK_DC_SPANS; j++) q->dcw_prev[j] = sp->dc_win[j];
  q->dcw_prev_n = sp->dc_nwin;
  q->dcw_prev_syms = sp->dc_syms;
  sp->dc[0] = q->dc_prev[0] = dr;
  sp->dc[1] = q->dc_prev[1] = di;
  sp->gain = q->gain_prev = gain;
}

/* ---- timing of one span (blocks b0 .. b0 + nb - 1, O&M records om) ---- */

/* sum_j X_j exp(j 2 pi e (t_j - t_ref)) over the block's sub-blocks, added to acc: the phases
 * step by a rotation where the sub-blocks are evenly spaced (all but a short tail) */
QPSK_HD void qpsk_sr_om_turn_add(const qpsk_serial_cfg *cf, const qpsk_om_out *bk, double e,
                                 double t_ref, double acc[2]) {
  if (bk->nsub == 0) return;
  const double w = 2 * QPSK_SR_PI * e, sr = cos(w * cf->Ls), si = sin(w * cf->Ls);
  double cr = cos(w * (bk->osub_t[0] - t_ref)), ci = sin(w * (bk->osub_t[0] - t_ref));
  for (unsigned j = 0; j < bk->nsub; j++) {
    if (j > 0) {
      if (bk->osub_t[j] - bk->osub_t[j - 1] == (double)cf->Ls) {
        double t = cr * sr - ci * si;
        ci = cr * si + ci * sr;
        cr = t;
      } else {
        cr = cos(w * (bk->osub_t[j] - t_ref));
        ci = sin(w * (bk->osub_t[j] - t_ref));
      }
    }
    acc[0] += bk->osub[j][0] * cr - bk->osub[j][1] * ci;
    acc[1] += bk->osub[j][0] * ci + bk->osub[j][1] * cr;
  }
}

/* the block's sub-block O&M sums referred to its centre with the slope e */
QPSK_HD void qpsk_sr_om_refer(const qpsk_serial_cfg *cf, const qpsk_om_out *bk, int64_t b, double e,
                              double out[2]) {
  out[0] = out[1] = 0;
  qpsk_sr_om_turn_add(cf, bk, e, ((double)b + 0.5) * cf->L, out);
}

/* sum of |X_j|^2 over the block's sub-blocks: what |sum X_j|^2 is on average for noise alone */
QPSK_HD double qpsk_sr_om_energy(const qpsk_om_out *bk) {
  double e = 0;
  for (unsigned j = 0; j < bk->nsub; j++)
    e += bk->osub[j][0] * bk->osub[j][0] + bk->osub[j][1] * bk->osub[j][1];
  return e;
}

/* The lock threshold on |sum X|^2 / sum |X|^2 for blocks of n sub-blocks: 8 from 16 on; below,
 * where 8 comes near or past the n that a noiseless line reaches (|sum X|^2 <= n sum |X|^2), the
 * ratio with the same false-alarm probability for noise alone, (1 - r / n)^(n - 1) = 2^-15
 * (6.19 at 8 sub-blocks, a 256-symbol block's; blocks of 257-511 symbols lie between) */
QPSK_HD double qpsk_sr_lock_ratio(unsigned n) {
  if (n >= 16) return 8;
  if (n < 2) return INFINITY;
  return n * (1 - pow(0.5, 15.0 / (n - 1)));
}

/* A team of n lanes working on one channel's span (a warp on the GPU, one lane on the host):
 * every lane runs the pass's serial steps alike (the same values in each), the blocks' O&M sums
 * referred to their centres (the costly part: sines, cosines and a sub-block recurrence per
 * block) are shared out, block t to lane t mod n, through the team's scratch (om: 2 per block,
 * en: 1 per block; shared memory on the GPU), and a record is written by its block's lane. */
typedef struct {
  unsigned lane, n;
  double *om, *en;
  double *med; /* QPSK_SR_MAXB + 1 values: the clock line's intercepts sorted by lane 0, and
                * their median, which every lane reads (qpsk_sr_timing; shared memory on the GPU);
                * NULL where the team runs no qpsk_sr_timing (the NCO pass; qpsk_serial.c's
                * timing pass, which sorts its spans' intercepts with qsort) */
} qpsk_sr_team;
#ifdef __CUDA_ARCH__
#define QPSK_SR_SYNC() __syncwarp()
#else
#define QPSK_SR_SYNC() ((void)0)
#endif
/* a loop of constant trip count unrolled on the GPU (its arrays indexed by constants) */
#ifdef __CUDA_ARCH__
#define QPSK_SR_UNROLL _Pragma("unroll")
#else
#define QPSK_SR_UNROLL
#endif
#define QPSK_SR_OWN(tm, t) ((unsigned)((t) % (tm)->n) == (tm)->lane)

/* every block's O&M sum referred to its centre with the slope e, into the team's om */
QPSK_HD void qpsk_sr_refer_all(const qpsk_serial_cfg *cf, const qpsk_om_out *om, int64_t b0,
                               size_t nb, double e, const qpsk_sr_team *tm) {
  QPSK_SR_SYNC(); /* (every lane has read the values before) */
  for (size_t t = tm->lane; t < nb; t += tm->n)
    qpsk_sr_om_refer(cf, &om[t], b0 + (int64_t)t, e, tm->om + 2 * t);
  QPSK_SR_SYNC();
}

/* Unwraps the timing of the nb blocks around the slope e (the previous block's prediction
 * continuing with e_before up to its edge). A block whose O&M line does not stand out of its
 * noise (|sum X|^2 <= lock_ratio sum |X|^2: a gap, no carrier; noise alone passes in 3e-5 of
 * the blocks) takes the prediction: a measurement there would be noise, and its error would move
 * the symbol count. */
QPSK_HD void qpsk_sr_unwrap(const qpsk_serial_cfg *cf, const qpsk_om_out *om, int64_t b0, size_t nb,
                            qpsk_serial_blk *tb, double e, int have, double tau_prev,
                            double e_before, const double om_prev[2], double en_prev,
                            const qpsk_sr_team *tm) {
  const double L = cf->L;
  const double lock = qpsk_sr_lock_ratio(cf->nsub);
  qpsk_sr_refer_all(cf, om, b0, nb, e, tm);
  /* each block's own part by its lane: its statistics (a short last block's with the block
   * before's, which are that block's own: tm->om, tm->en, or the carried ones for the first), the
   * line's timing th and the lock; th kept in tb[t].tau until the chain below */
  for (size_t t = tm->lane; t < nb; t += tm->n) {
    double o[2] = {tm->om[2 * t], tm->om[2 * t + 1]}, en = tm->en[t];
    tb[t].om[0] = o[0];
    tb[t].om[1] = o[1];
    tb[t].om_en = en;
    if (om[t].om_n < 2.0 * L && (have || t > 0)) {
      /* (the values chosen, not a pointer to either: on the GPU a pointer that may point into
       * the lane's state would keep that state in local memory) */
      const double p0 = t > 0 ? tm->om[2 * (t - 1)] : om_prev[0];
      const double p1 = t > 0 ? tm->om[2 * (t - 1) + 1] : om_prev[1];
      const double en_p = t > 0 ? tm->en[t - 1] : en_prev;
      double a = -2 * QPSK_SR_PI * e * L, c = cos(a), s = sin(a);
      o[0] += p0 * c - p1 * s;
      o[1] += p0 * s + p1 * c;
      en += en_p;
    }
    const double th = qpsk_sr_om_tau(o);
    tb[t].locked = isfinite(th) && o[0] * o[0] + o[1] * o[1] > lock * en;
    tb[t].tau = th;
  }
  QPSK_SR_SYNC(); /* (every lane has read the team's om and en) */
  /* each block's th and lock into the team's scratch, in om's pair (shared memory on the GPU),
   * where every lane's chain reads them */
  for (size_t t = tm->lane; t < nb; t += tm->n) {
    tm->om[2 * t] = tb[t].tau;
    tm->om[2 * t + 1] = tb[t].locked;
  }
  QPSK_SR_SYNC();
  /* the chain: each block's timing from the block before's (every lane alike) */
  for (size_t t = 0; t < nb; t++) {
    const double th = tm->om[2 * t];
    const int locked = tm->om[2 * t + 1] != 0;
    double tau;
    if (!have) {
      tau = isfinite(th) ? th : 0;
    } else {
      double pred = tau_prev + 0.5 * (e_before + e) * L;
      tau = locked ? pred + qpsk_sr_wrap(th - pred, 1.0) : pred;
    }
    have = 1;
    tau_prev = tau;
    e_before = e;
    if (QPSK_SR_OWN(tm, t)) tb[t].tau = tau;
  }
  QPSK_SR_SYNC();
}

/* the blocks' referred sums x (2 per block) turned back by e L (the slope times the block length)
 * per block to the first block's centre (a rotation by recurrence) and added: on a clock line
 * each block's sum turns by -2 pi e L from the block before, so they add up coherently */
QPSK_HD void qpsk_sr_turn_sum(const double *x, size_t nb, double e, double L, double s[2]) {
  const double w = 2 * QPSK_SR_PI * e * L, sr = cos(w), si = sin(w);
  double cr = 1, ci = 0;
  s[0] = s[1] = 0;
  for (size_t t = 0; t < nb; t++) {
    const double *xt = x + 2 * t;
    s[0] += xt[0] * cr - xt[1] * ci;
    s[1] += xt[0] * ci + xt[1] * cr;
    double tr = cr * sr - ci * si;
    ci = cr * si + ci * sr;
    cr = tr;
  }
}

/* The slope e0 refined by the O&M line's phase step between neighbouring blocks (unambiguous
 * while e0 is within 1 / (2 L) of the truth); *coh receives the span's coherence at the refined
 * slope: |sum of the blocks' O&M sums, each turned back to the span start|^2 over sum |X_j|^2
 * (about 1 for noise alone, the number of sub-blocks for a strong signal). */
QPSK_HD double qpsk_sr_refine(const qpsk_serial_cfg *cf, const qpsk_om_out *om, int64_t b0,
                              size_t nb, double e0, double *coh, const qpsk_sr_team *tm) {
  const double L = cf->L;
  double Cb[2] = {0, 0}, en = 0;
  qpsk_sr_refer_all(cf, om, b0, nb, e0, tm);
  const double *x = tm->om;
  for (size_t t = 0; t < nb; t++) {
    en += tm->en[t];
    if (t > 0 && om[t].om_n >= 4.0 * L) {
      const double *x0 = x + 2 * (t - 1), *x1 = x + 2 * t;
      Cb[0] += x1[0] * x0[0] + x1[1] * x0[1];
      Cb[1] += x1[1] * x0[0] - x1[0] * x0[1];
    }
  }
  double e = e0;
  if (Cb[0] != 0 || Cb[1] != 0) {
    double ph = atan2(Cb[1], Cb[0]), pred = -2 * QPSK_SR_PI * e0 * L;
    e = -(pred + qpsk_sr_wrap(ph - pred, 2 * QPSK_SR_PI)) / (2 * QPSK_SR_PI * L);
    if (!(isfinite(e) && fabs(e) <= 0.5 / cf->Ls)) e = e0;
  }
  double s[2];
  qpsk_sr_turn_sum(x, nb, e, L, s);
  double r = (s[0] * s[0] + s[1] * s[1]) / en;
  *coh = isfinite(r) ? r : 0;
  return e;
}

/* The timing pass of one span (blocks b0 .. b0 + nb - 1, O&M records om) in three steps:
 * qpsk_sr_clock_of (the span's clock slope and the blocks' timing unwrapped around it), the clock
 * line's intercept (the median of the locked blocks' on it: qpsk_sr_on_line, qpsk_sr_middle),
 * qpsk_sr_own (the blocks on the line, their symbols, the state for the next span). qpsk_sr_timing
 * runs the three (the GPU's kernel); the CPU (qpsk_serial.c) sorts the intercepts of its spans of
 * any length with qsort, the same order statistic. */

/* the span's clock, from qpsk_sr_clock_of to qpsk_sr_own */
typedef struct {
  double C[QPSK_LAGS][2]; /* the sub-block correlations (the last span's added for a short one) */
  double e;               /* the clock slope */
  unsigned full;          /* complete blocks */
  int span_locked;        /* the O&M line adds up over the span */
  int fitted;             /* and 4 blocks or more are locked: the blocks follow the clock line */
  int coherent;           /* locked, not fitted, 4 complete blocks or more: the blocks follow
                           * the line through the span's coherent O&M sum, icpt_coh */
  double icpt_coh;
} qpsk_sr_clock;

/* The span's clock slope (k, sp->e, out_range) and the blocks' timing unwrapped around it (tb:
 * om, om_en, locked, tau). Returns 0 for a span without blocks (sp->e: the last span's). */
QPSK_HD int qpsk_sr_clock_of(const qpsk_serial_cfg *cf, qpsk_serial_state *q, const qpsk_om_out *om,
                             int64_t b0, size_t nb, qpsk_serial_blk *tb, qpsk_serial_span *sp,
                             const qpsk_sr_team *tm, qpsk_sr_clock *k) {
  const double L = cf->L;
  const double e_max = PRX_QPSK_MAX_CLOCK_PPM * 1e-6;
  if (nb == 0) {
    sp->e = q->e_prev;
    sp->out_range = 0;
    sp->line = 0;
    return 0;
  }
  /* the blocks' sub-block energies (the same for every slope) */
  for (size_t t = tm->lane; t < nb; t += tm->n) tm->en[t] = qpsk_sr_om_energy(&om[t]);
  /* 1. coarse slope: the drift of the O&M line's phase between sub-blocks 1, 2, 4 ... apart,
   * each lag's phase unwrapped around the previous lag's estimate (every doubling of the lag
   * doubles the precision; the first sets the range, 1 / (2 Ls)), then between blocks */
  double(*C)[2] = k->C;
  for (int l = 0; l < QPSK_LAGS; l++) C[l][0] = C[l][1] = 0;
  unsigned full = 0;
  for (size_t t = 0; t < nb; t++) full += om[t].om_n >= 4.0 * L;
  /* each lag's sums over the blocks in their order. The lag loops run to the constant QPSK_LAGS
   * and stop at nlags, unrolled on the GPU, so that C and corr_prev are indexed by constants there
   * and stay in registers (a run-time index puts the clock and the state in local memory) */
  QPSK_SR_UNROLL
  for (unsigned l = 0; l < QPSK_LAGS; l++) {
    if (l >= cf->nlags) break;
    double c0 = 0, c1 = 0;
    for (size_t t = 0; t < nb; t++) {
      c0 += om[t].corr[l][0];
      c1 += om[t].corr[l][1];
    }
    C[l][0] = c0;
    C[l][1] = c1;
  }
  if (2 * full < cf->B && q->have_e) {
    QPSK_SR_UNROLL
    for (unsigned l = 0; l < QPSK_LAGS; l++) {
      if (l >= cf->nlags) break;
      C[l][0] += q->corr_prev[l][0];
      C[l][1] += q->corr_prev[l][1];
    }
  }
  double ec = q->e_prev;
  QPSK_SR_UNROLL
  for (unsigned l = 0; l < QPSK_LAGS; l++) {
    if (l >= cf->nlags || (C[l][0] == 0 && C[l][1] == 0)) break;
    double lag = (double)(1u << l) * cf->Ls, ph = atan2(C[l][1], C[l][0]);
    double pred = -2 * QPSK_SR_PI * ec * lag;
    double e = l == 0 ? -ph / (2 * QPSK_SR_PI * lag)
                      : -(pred + qpsk_sr_wrap(ph - pred, 2 * QPSK_SR_PI)) / (2 * QPSK_SR_PI * lag);
    if (isfinite(e)) ec = e;
  }
  /* the chain's result, no drift and the previous span's drift, each refined between blocks:
   * the one whose O&M line adds up most coherently over the span (the periodogram's maximum)
   * wins; at Es/N0 near 0 dB the chain's first lag can be wrong where a small offset is not */
  const double cand0 = ec;
  double best = -1;
  unsigned nc = q->have_e ? 3 : 2;
  for (unsigned c = 0; c < nc; c++) {
    /* (the candidates ec, 0, e_prev chosen by value: no array, none in local memory) */
    const double cc = c == 0 ? cand0 : c == 1 ? 0 : q->e_prev;
    /* a candidate within a quarter of the refinement's range of the first ends where it does */
    if (c > 0 && fabs(cc - cand0) < 0.25 / L) continue;
    double m, e = qpsk_sr_refine(cf, om, b0, nb, cc, &m, tm);
    if (m > best) {
      best = m;
      ec = e;
    }
  }
  /* a span without a timing line (no signal, a gap: noise alone gives about 1, the maximum
   * over the candidates rarely 10) keeps the clock of the spans before: a fitted span's, or a
   * locked one's where none was fitted (near 0 dB the spans' lines add up while no block's
   * stands out; taking 0 there moved the timing by e L a block: 0.15 T at 300 ppm) */
  int span_locked = best > 16;
  if (!span_locked) ec = q->have_e || q->have_clock ? q->e_prev : 0;
  /* 2. timing per block unwrapped around it. A span of fewer than 4 complete blocks (the
   * stream's last) keeps the clock of the span before, extrapolated: its own slope comes from
   * too few sub-blocks and its line from too few blocks (at 256-symbol blocks and 1-2 blocks the
   * timing line does not even stand out), and any error in it moves the last instants by
   * e L per block */
  const int short_span = full < 4 && q->have_clock;
  if (short_span) ec = q->e_prev;
  double e = ec;
  /* the model the instants follow keeps |e| <= QPSK_MAX_DRIFT (its buffers are sized for it);
   * the unwrapping predicts with the same e, so that neighbouring blocks' models meet */
  sp->out_range = short_span ? q->range_prev : fabs(e) > e_max;
  if (e > QPSK_MAX_DRIFT) e = QPSK_MAX_DRIFT;
  if (e < -QPSK_MAX_DRIFT) e = -QPSK_MAX_DRIFT;
  qpsk_sr_unwrap(cf, om, b0, nb, tb, e, q->have_prev, q->tau_prev, q->have_e ? q->e_prev : e,
                 q->om_prev, q->en_prev, tm);
  unsigned nl = 0;
  for (size_t t = 0; t < nb; t++) nl += om[t].om_n >= 2.0 * L && tb[t].locked;
  int fitted = span_locked && nl >= 4;
  if (!fitted && q->have_e && e != q->e_prev) {
    e = q->e_prev;
    sp->out_range = q->range_prev;
    qpsk_sr_unwrap(cf, om, b0, nb, tb, e, q->have_prev, q->tau_prev, e, q->om_prev, q->en_prev, tm);
  }
  /* A span whose O&M line adds up over it but stands out of the noise in fewer than 4 of its
   * blocks (Es/N0 near 0 dB, a carrier near the pre-filter's band edge) is not fitted, yet its
   * line is there: its blocks follow the line of slope e through the span's coherent sum (every
   * block's sum turned back to the first block), its whole cycles from the chain's first block.
   * Following the prediction from the span before instead lets the timing run free on the clock
   * estimate's error (13 ppm: ~0.1 T a span of 8192 symbols, a random walk over the spans). A
   * span of fewer than 4 complete blocks (the stream's last) keeps the prediction and its blocks'
   * own values */
  k->coherent = span_locked && !fitted && full >= 4;
  k->icpt_coh = 0;
  if (k->coherent) {
    qpsk_sr_refer_all(cf, om, b0, nb, e, tm);
    double s[2];
    qpsk_sr_turn_sum(tm->om, nb, e, L, s);
    const double th = qpsk_sr_om_tau(s), t0 = tb[0].tau;
    k->icpt_coh = t0 + qpsk_sr_wrap(th - t0, 1.0) - e * ((double)b0 + 0.5) * L;
    k->coherent = isfinite(k->icpt_coh);
  }
  q->range_prev = sp->out_range;
  sp->e = e;
  sp->line = span_locked;
  k->e = e;
  k->full = full;
  k->span_locked = span_locked;
  k->fitted = fitted;
  return 1;
}

/* 3. the span's clock line: slope e through the locked blocks' timing, at their median (a jump
 * in the timing leaves the blocks on its minority side off the line, flagged). Whether block t
 * is on it (locked, half a block's samples or more), and its intercept there (*v) */
QPSK_HD int qpsk_sr_on_line(const qpsk_serial_cfg *cf, const qpsk_om_out *om,
                            const qpsk_serial_blk *tb, int64_t b0, size_t t, double e, double *v) {
  const double L = cf->L;
  if (om[t].om_n < 2.0 * L || !tb[t].locked) return 0;
  *v = tb[t].tau - e * ((double)(b0 + (int64_t)t) + 0.5) * L;
  return 1;
}

/* the median of ni sorted values (0 for none) */
QPSK_HD double qpsk_sr_middle(const double *med, size_t ni) {
  double icpt = 0;
  if (ni > 0) icpt = ni % 2 ? med[ni / 2] : 0.5 * (med[ni / 2 - 1] + med[ni / 2]);
  return icpt;
}

/* the clock line's intercept for spans of up to QPSK_SR_MAXB blocks (sorted by insertion into
 * med) */
QPSK_HD double qpsk_sr_intercept_in(const qpsk_serial_cfg *cf, const qpsk_om_out *om,
                                    const qpsk_serial_blk *tb, int64_t b0, size_t nb, double e,
                                    double *med) {
  size_t ni = 0;
  for (size_t t = 0; t < nb; t++) {
    double v;
    if (!qpsk_sr_on_line(cf, om, tb, b0, t, e, &v)) continue;
    size_t i = ni++;
    while (i > 0 && med[i - 1] > v) {
      med[i] = med[i - 1];
      i--;
    }
    med[i] = v;
  }
  return qpsk_sr_middle(med, ni);
}

/* the intercept for the team: sorted in the team's med by lane 0, the value then read by every
 * lane */
QPSK_HD double qpsk_sr_intercept(const qpsk_serial_cfg *cf, const qpsk_om_out *om,
                                 const qpsk_serial_blk *tb, int64_t b0, size_t nb, double e,
                                 const qpsk_sr_team *tm) {
  QPSK_SR_SYNC(); /* (every lane's records written) */
  if (tm->lane == 0) tm->med[QPSK_SR_MAXB] = qpsk_sr_intercept_in(cf, om, tb, b0, nb, e, tm->med);
  QPSK_SR_SYNC();
  const double icpt = tm->med[QPSK_SR_MAXB];
  QPSK_SR_SYNC(); /* (every lane has read it) */
  return icpt;
}

/* qpsk_sr_own's limit of block b's instants, in symbols: the block's end (b + 1) L or, flushing,
 * the stream's end n_total / sps where that is earlier, less QPSK_LEAD */
QPSK_HD double qpsk_sr_own_limit(const qpsk_serial_cfg *cf, int64_t b, int flushing,
                                 int64_t n_total) {
  double limit = ((double)b + 1) * cf->L - QPSK_LEAD;
  if (flushing) {
    double end = (double)n_total / cf->sps - QPSK_LEAD;
    if (end < limit) limit = end;
  }
  return limit;
}
/* 4. ownership: the blocks on the span's clock line (a fitted span's through icpt, a coherent one's
 * through icpt_coh; the others keep their own timing), their symbols [k0, k1) (tb: d, tres, tau,
 * k0, k1), and the state for the next span. flushing / n_total: the stream ends at n_total samples.
 * Each block's own part (its place on the line, its symbols' end from its timing: a division and a
 * ceiling) runs on its lane first; the chain then takes each block's first symbol from the block
 * before's end and only compares, forming the end again where the safety net below moves a block's
 * timing (rare). */
QPSK_HD void qpsk_sr_own(const qpsk_serial_cfg *cf, qpsk_serial_state *q, int64_t b0, size_t nb,
                         int flushing, int64_t n_total, const qpsk_sr_clock *k, double icpt,
                         qpsk_serial_blk *tb, const qpsk_sr_team *tm) {
  const double L = cf->L;
  const double e = k->e;
  const int fitted = k->fitted, on_line = fitted || k->coherent;
  const double line = fitted ? icpt : k->icpt_coh; /* the line's intercept */
  const double d = e / (1 - e);
  /* the chain's carried values in registers (the GPU's q is local memory), back into q after */
  int have_prev = q->have_prev;
  int64_t k_end_prev = q->k_end_prev;
  /* each block's own part on its lane: d, tres, the timing on the line, the end k1 from that
   * timing, and (the stream's first block) the first symbol k0 */
  for (size_t t = tm->lane; t < nb; t += tm->n) {
    qpsk_serial_blk *bk = &tb[t];
    const int64_t b = b0 + (int64_t)t;
    const double Cb = ((double)b + 0.5) * L;
    bk->d = d;
    bk->tres = on_line && bk->locked ? bk->tau - (line + e * Cb) : 0;
    /* on a span with a line the instants follow it: a block's own O&M value carries the
     * estimator's noise, the line averages it over the span's blocks; a block that left the
     * line (a jump) keeps its own value */
    if (on_line && fabs(bk->tres) <= 0.25) bk->tau = line + e * Cb;
    if (t == 0 && !have_prev) bk->k0 = (int64_t)ceil((d * Cb - QPSK_LEAD) / (1 + d) - bk->tau);
    const double limit = qpsk_sr_own_limit(cf, b, flushing, n_total);
    bk->k1 = (int64_t)ceil((limit + d * Cb) / (1 + d) - bk->tau);
  }
  QPSK_SR_SYNC();
  /* the chain (every lane alike) */
  double tau = 0;
  for (size_t t = 0; t < nb; t++) {
    const int64_t b = b0 + (int64_t)t;
    tau = tb[t].tau;
    int64_t k1 = tb[t].k1;
    const int64_t k0 = have_prev ? k_end_prev : tb[t].k0;
    QPSK_SR_SYNC(); /* (every lane has read the block before its lane rewrites it) */
    const double Cb = ((double)b + 0.5) * L;
    /* the filters' windows reach 1 symbol before the block: neighbouring models meet within
     * half a symbol by construction; should they not, the block's timing moves to keep its
     * first instant inside (a safety net: never a read outside the windows) */
    double t_first = (1 + d) * ((double)k0 + tau) - d * Cb;
    if (t_first < (double)b * L - 0.7) {
      tau += ((double)b * L - 0.7 - t_first) / (1 + d);
      const double limit = qpsk_sr_own_limit(cf, b, flushing, n_total);
      k1 = (int64_t)ceil((limit + d * Cb) / (1 + d) - tau);
    }
    if (k1 < k0) k1 = k0;
    if (k1 - k0 > (int64_t)cf->Lmax) k1 = k0 + cf->Lmax;
    have_prev = 1;
    k_end_prev = k1;
    if (QPSK_SR_OWN(tm, t)) {
      tb[t].tau = tau;
      tb[t].k0 = k0;
      tb[t].k1 = k1;
    }
  }
  if (nb > 0) {
    q->tau_prev = tau;
    q->om_prev[0] = tb[nb - 1].om[0];
    q->om_prev[1] = tb[nb - 1].om[1];
    q->en_prev = tb[nb - 1].om_en;
  }
  q->have_prev = have_prev;
  q->k_end_prev = k_end_prev;
  QPSK_SR_SYNC();
  if (fitted)
    for (int l = 0; l < QPSK_LAGS; l++)
      q->corr_prev[l][0] = k->C[l][0], q->corr_prev[l][1] = k->C[l][1];
  q->have_e = q->have_e || fitted;
  q->have_clock = q->have_clock || (k->span_locked && k->full >= 4);
  q->e_prev = e;
}

/* the timing pass of one span: the blocks' timing (tb) and the span's clock (sp->e, out_range).
 * nb <= QPSK_SR_MAXB. */
QPSK_HD void qpsk_sr_timing(const qpsk_serial_cfg *cf, qpsk_serial_state *q, const qpsk_om_out *om,
                            int64_t b0, size_t nb, int flushing, int64_t n_total,
                            qpsk_serial_blk *tb, qpsk_serial_span *sp, const qpsk_sr_team *tm) {
  qpsk_sr_clock k;
  if (!qpsk_sr_clock_of(cf, q, om, b0, nb, tb, sp, tm, &k)) return;
  const double icpt = qpsk_sr_intercept(cf, om, tb, b0, nb, k.e, tm);
  qpsk_sr_own(cf, q, b0, nb, flushing, n_total, &k, icpt, tb, tm);
}

/* After the timing pass: the blocks' matched-filter timing records (mb; the NCO fields follow in
 * qpsk_sr_nco), their 4th-power values' offsets in the channel's w row (w0: in the region
 * without the CFO history), the CFO window (*ci; a span of fewer than S values reaches back into
 * the history: ops, the copy row_copy makes), and the history for the next span. */
QPSK_HD void qpsk_sr_records(const qpsk_serial_cfg *cf, qpsk_serial_state *q,
                             const qpsk_serial_blk *tb, int64_t b0, size_t nb,
                             const qpsk_serial_span *sp, qpsk_mf_block *mb, int64_t *w0,
                             int64_t ops[3], qpsk_cfo_in *ci, const qpsk_sr_team *tm) {
  const int hr = q->hist_r;
  const int64_t wr = hr == 0 ? 1 : 0;
  const int64_t base = wr * cf->region + (int64_t)cf->S;
  int64_t w = base;
  for (size_t j = 0; j < nb; j++) {
    const qpsk_serial_blk *bk = &tb[j];
    const int64_t n = bk->k1 - bk->k0;
    if (QPSK_SR_OWN(tm, j)) {
      qpsk_mf_block *m = &mb[j];
      memset(m, 0, sizeof *m);
      m->t.b = b0 + (int64_t)j;
      m->t.k0 = bk->k0;
      m->t.k1 = bk->k1;
      m->t.R = qpsk_mf_run_length(bk->d, n, cf->P);
      m->t.tau = bk->tau;
      m->t.d = bk->d;
      w0[j] = w;
    }
    w += n > 0 ? n : 0;
  }
  const int64_t nw = w - base;
  int64_t take = 0;
  if (nw < (int64_t)cf->S && hr >= 0) {
    take = (int64_t)cf->S - nw;
    if (take > q->hist_n) take = q->hist_n;
  }
  if (tm->lane == 0) {
    ops[0] = take ? (int64_t)hr * cf->region + cf->S + q->hist_n - take : 0;
    ops[1] = take ? base - take : 0;
    ops[2] = take;
    memset(ci, 0, sizeof *ci);
    ci->w0 = base - take;
    ci->n = (unsigned)(take + nw);
    ci->e = sp->e;
  }
  if (nw > 0) { /* (every span with values: the next one's window continues them) */
    q->hist_r = (int)wr;
    q->hist_n = nw;
  }
}

/* ---- NCO of span s with its CFO f (phase-continuous, each span's phase continuing the previous
 * span's), and the matched filter's NCO and level fields of its nb blocks ---- */
QPSK_HD void qpsk_sr_nco(const qpsk_serial_cfg *cf, qpsk_serial_state *q, int64_t s, double f,
                         int64_t b0, size_t nb, qpsk_serial_span *sp, qpsk_mf_block *mb,
                         const qpsk_sr_team *tm) {
  const int64_t S = cf->S;
  if (!isfinite(f)) f = q->f_prev; /* non-finite input: keep the last estimate */
  sp->f = f;
  q->f_prev = f;
  sp->n_ref = (int64_t)floor((double)s * S * cf->sps);
  sp->theta = q->theta_next;
  int64_t n_next = (int64_t)floor((double)(s + 1) * S * cf->sps);
  q->theta_next = qpsk_sr_wrap(
      sp->theta + 2 * QPSK_SR_PI * sp->f / cf->sps * (double)(n_next - sp->n_ref), 2 * QPSK_SR_PI);
  const double omega = 2 * QPSK_SR_PI * sp->f / cf->sps;
  for (size_t j = tm->lane; j < nb; j += tm->n) {
    int64_t lo, hi;
    qpsk_mf_window_of(b0 + (int64_t)j, cf->L, cf->sps, cf->mf_c, cf->mf_ntaps, &lo, &hi);
    mb[j].omega = omega;
    mb[j].theta = sp->theta + omega * (double)(lo - sp->n_ref);
    mb[j].dc[0] = (float)sp->dc[0];
    mb[j].dc[1] = (float)sp->dc[1];
    mb[j].gain = (float)sp->gain;
  }
}

/* ---- one lane's work in the passes' kernels (channel c, its team tm; records as below): in the
 * timing and NCO passes the carried state and the span record are each lane's own copies, written
 * back by lane 0 ---- */
/* The level pass (channel c's input sums mom_c given apart, 4 per block: the GPU's kernel passes
 * its copy in shared memory): lane 0 runs the pass on the channel's state and span record in place
 * (only the fields it touches are read and written), then the team writes the O&M stage's inputs;
 * qpsk_sr_level_ch: a team of one lane on the channels' sums mom */
QPSK_HD void qpsk_sr_level_in(const qpsk_serial_cfg *cf, size_t c, size_t nb, int64_t s,
                              int64_t g_hi, const double *mom_c, qpsk_serial_state *st,
                              qpsk_serial_span *sp, qpsk_om_in *omi, const qpsk_sr_team *tm) {
  if (tm->lane == 0) qpsk_sr_level(cf, &st[c], s, mom_c, nb, &sp[c]);
  QPSK_SR_SYNC(); /* (lane 0's span record read by every lane) */
  qpsk_om_in in;
  memset(&in, 0, sizeof in);
  in.D.re = (float)(sp[c].dc[0] * cf->pre_gain);
  in.D.im = (float)(sp[c].dc[1] * cf->pre_gain);
  in.gain = (float)sp[c].gain;
  in.g_hi = g_hi;
  for (size_t j = tm->lane; j < nb; j += tm->n) omi[c * nb + j] = in;
}
QPSK_HD void qpsk_sr_level_ch(const qpsk_serial_cfg *cf, size_t c, size_t nb, int64_t s,
                              int64_t g_hi, const double *mom, qpsk_serial_state *st,
                              qpsk_serial_span *sp, qpsk_om_in *omi) {
  const qpsk_sr_team tm = {0, 1, NULL, NULL, NULL};
  qpsk_sr_level_in(cf, c, nb, s, g_hi, mom + 4 * c * nb, st, sp, omi, &tm);
}
/* The fields of the carried state that the timing pass and qpsk_sr_records read and write, copied
 * one by one from s to d: the GPU's lanes then hold their copies in registers (a whole record's
 * copy is a loop of words there, which keeps every lane's copy in local memory) */
QPSK_HD void qpsk_sr_timing_fields(qpsk_serial_state *d, const qpsk_serial_state *s) {
  d->have_prev = s->have_prev;
  d->have_e = s->have_e;
  d->have_clock = s->have_clock;
  d->range_prev = s->range_prev;
  d->tau_prev = s->tau_prev;
  d->e_prev = s->e_prev;
  d->om_prev[0] = s->om_prev[0];
  d->om_prev[1] = s->om_prev[1];
  d->en_prev = s->en_prev;
  QPSK_SR_UNROLL
  for (int l = 0; l < QPSK_LAGS; l++) {
    d->corr_prev[l][0] = s->corr_prev[l][0];
    d->corr_prev[l][1] = s->corr_prev[l][1];
  }
  d->k_end_prev = s->k_end_prev;
  d->hist_r = s->hist_r;
  d->hist_n = s->hist_n;
}
/* (channel c's O&M records omc and timing records tbc given apart: the GPU's kernel passes its
 * copies in shared memory). The state and the span record are each lane's own copies of the fields
 * the pass uses (qpsk_sr_timing_fields; the span's e, out_range and line), written back by lane 0
 */
QPSK_HD void qpsk_sr_timing_in(const qpsk_serial_cfg *cf, size_t c, size_t nb, int64_t b0,
                               int flushing, int64_t n_total, const qpsk_om_out *omc,
                               qpsk_serial_state *st, qpsk_serial_span *sp, qpsk_serial_blk *tbc,
                               qpsk_mf_block *mb, int64_t *w0, int64_t *ops, qpsk_cfo_in *cfi,
                               const qpsk_sr_team *tm) {
  qpsk_serial_state q;
  qpsk_sr_timing_fields(&q, &st[c]);
  qpsk_serial_span r;
  r.e = sp[c].e;
  r.out_range = sp[c].out_range;
  const size_t o = c * nb;
  qpsk_sr_timing(cf, &q, omc, b0, nb, flushing, n_total, tbc, &r, tm);
  qpsk_sr_records(cf, &q, tbc, b0, nb, &r, mb + o, w0 + o, ops + 3 * c, cfi + c, tm);
  QPSK_SR_SYNC(); /* (every lane has read the state before lane 0 rewrites it) */
  if (tm->lane == 0) {
    qpsk_sr_timing_fields(&st[c], &q);
    sp[c].e = r.e;
    sp[c].out_range = r.out_range;
    sp[c].line = r.line;
  }
}
QPSK_HD void qpsk_sr_timing_ch(const qpsk_serial_cfg *cf, size_t c, size_t nb, int64_t b0,
                               int flushing, int64_t n_total, const qpsk_om_out *om,
                               qpsk_serial_state *st, qpsk_serial_span *sp, qpsk_serial_blk *tb,
                               qpsk_mf_block *mb, int64_t *w0, int64_t *ops, qpsk_cfo_in *cfi,
                               const qpsk_sr_team *tm) {
  qpsk_sr_timing_in(cf, c, nb, b0, flushing, n_total, om + c * nb, st, sp, tb + c * nb, mb, w0, ops,
                    cfi, tm);
}
QPSK_HD void qpsk_sr_nco_ch(const qpsk_serial_cfg *cf, size_t c, size_t nb, int64_t s, int64_t b0,
                            const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
                            qpsk_mf_block *mb, const qpsk_sr_team *tm) {
  qpsk_serial_state q = st[c];
  qpsk_serial_span r = sp[c];
  qpsk_sr_nco(cf, &q, s, co[c].f, b0, nb, &r, mb + c * nb, tm);
  QPSK_SR_SYNC();
  if (tm->lane == 0) {
    st[c] = q;
    sp[c] = r;
  }
}

/* ---- the passes' kernels (qpsk_serial_cuda.cu, in the CUDA module:
 * prx_cuda_module_get()->qpsk_serial), one warp per channel over C channels of
 * nb blocks (the records of channel c's block j at c nb + j; one span record and one state per
 * channel), all pointers device memory, asynchronous on stream ---- */
struct qpsk_phase_out; /* qpsk_serial_phase.h */
typedef struct prx_qpsk_serial_cuda {
  /* the level pass of span s from pre's input sums (mom: 4 per block), and the O&M stage's
   * input of every block (its g_hi: the grid's end) */
  prx_status (*level)(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t g_hi,
                      const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp,
                      qpsk_om_in *omi, void *stream);
  /* the timing pass from the O&M records, then qpsk_sr_records (ops: 3 per channel) */
  prx_status (*timing)(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t b0, int flushing,
                       int64_t n_total, const qpsk_om_out *om, qpsk_serial_state *st,
                       qpsk_serial_span *sp, qpsk_serial_blk *tb, qpsk_mf_block *mb, int64_t *w0,
                       int64_t *ops, qpsk_cfo_in *cfi, void *stream);
  /* the NCO from the CFO stage's estimates (co: one per channel) */
  prx_status (*nco)(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t b0,
                    const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
                    qpsk_mf_block *mb, void *stream);
  /* the phase pass (qpsk_serial_phase.h, one warp per channel; ABI 9) after stage mf: from its
   * sums (5 per block) and symbols (Lmax per block), pre's input sums and non-finite counts, the
   * timing pass's records; the blocks' results (po), the out stage's records (ob), the
   * channels' output counts within the call (off, from 0 where first is set) and the carried
   * state (st); diff: DIFFERENTIAL (else NONE; PILOTS runs on the CPU) */
  prx_status (*phase)(unsigned L, size_t Lmax, size_t C, size_t nb, int diff, int first,
                      const double *sums, const double *mom, const unsigned *bad,
                      const qpsk_serial_blk *tb, const qpsk_serial_span *sp, const prx_cf32 *sym,
                      qpsk_phase_state *st, struct qpsk_phase_out *po, qpsk_out_block *ob,
                      int64_t *off, void *stream);
} prx_qpsk_serial_cuda;
extern const prx_qpsk_serial_cuda prx_qpsk_serial_cuda_entries;

/* The host's side of the records (qpsk_bank_gpu.c): the configuration and the carried state of
 * a channel from its prx_qpsk (the CFO history left to the caller: none) and the state back into
 * it, and a span's results into it (its blocks and span 0, as the CPU passes leave them; mom: the
 * blocks' input sums, 4 each, bad: their non-finite counts). */
void qpsk_serial_cfg_of(const prx_qpsk *q, qpsk_serial_cfg *cf);
void qpsk_serial_state_of(const prx_qpsk *q, qpsk_serial_state *st);
void qpsk_serial_state_to(prx_qpsk *q, const qpsk_serial_state *st);
void qpsk_serial_to_blocks(prx_qpsk *q, const qpsk_serial_span *sp, const qpsk_serial_blk *tb,
                           const double *mom, const unsigned *bad);

#ifdef __cplusplus
}
#endif

#endif
