/* PILOTS: the pilots' share of the DC that the level step removes, added back to the symbols.
 *
 * The level step removes from span s's samples the mean of its DC window (the samples of up to
 * QPSK_DC_SPANS spans: W symbols' worth). Through the NCO and the matched filter, the signal's
 * part of that mean is, in symbol units (an ISI-free pulse pair maps a constant input to the
 * symbol that would make it: a mean of D gives D times the filter's gain on a symbol),
 *     (1 / W) sum over the window's symbols k of c_k exp(j theta_k),
 * c_k the symbol as the matched filter outputs it (after the NCO, before the span's gain) and
 * theta_k the NCO phase at its instant. The data's share is random and small (1 / W of the
 * signal's power); the pilots' share is not: the pilot word repeats every frame, so near 0 Hz it
 * is the word's mean times the carrier, up to -18 dB for a 64:8 frame. Every symbol of span s
 * therefore lacks
 *     gain_s E_s exp(-j theta_k),   E_s = (1 / W) sum_{pilots k in the window} (g_k / gain_k) p_k
 *                                                                           exp(j theta_k),
 * g_k the carrier's complex gain in symbol units over the block of pilot k, gain_k the span's
 * level gain and p_k the pilot symbol. Each block measures its carrier on its own pilots,
 *     g_b = (1 / n_b) sum_{pilots k of b} (y_k + gain E_s exp(-j theta_k)) conj(p_k)
 *         = graw_b + gain E_s conj(U_b) / n_b,   U_b = sum_{pilots k of b} p_k exp(j theta_k),
 * y_k the symbols as the matched filter gives them. The window's earlier spans are final (their
 * sums P_prev kept); the span's own blocks depend on E_s linearly, so it is solved exactly:
 *     E_s = (P_prev + A_s) / (W - C_s),   A_s = sum_b graw_b U_b / gain_s,
 *                                         C_s = sum_b |U_b|^2 / n_b,
 * and the span's own sum for later windows is A_s + E_s C_s. A receiver's DC (any level) does not
 * enter: it is neither in the pilots' correlation nor in U. */
#include "qpsk_internal.h"
#include "qpsk_stage_math.h"

#include <math.h>
#include <string.h>

/* the pilots' sum of absolute span w: one of the batch's spans before index i, or a kept one */
static int pilots_of_span(const prx_qpsk *q, unsigned i, int64_t w, double out[2]) {
  int64_t r = w - q->spans[0].s;
  if (r >= 0 && r < (int64_t)i) {
    out[0] = q->spans[r].pil[0];
    out[1] = q->spans[r].pil[1];
    return 1;
  }
  unsigned n = q->pil_count < QPSK_DC_SPANS ? q->pil_count : QPSK_DC_SPANS;
  for (unsigned j = 0; j < n; j++)
    if (q->pil_span[j] == w) {
      out[0] = q->pil_ring[j][0];
      out[1] = q->pil_ring[j][1];
      return 1;
    }
  return 0;
}

/* the NCO phase at the instant of block bk's first symbol, and its step per symbol */
static void block_phase(const prx_qpsk *q, const qpsk_blk *bk, double *th0, double *dth) {
  const qpsk_span *sp = &q->spans[bk->span];
  const double bL = (double)bk->b * (double)q->L;
  const double omega = 2 * M_PI * sp->f / q->sps;
  const qpsk_mf_timing tm = {bk->b, bk->k0, bk->k1, 0, bk->tau, bk->d};
  double pos =
      (qpsk_instant(&tm, q->L, (double)bk->k0) - bL) * q->sps + (bL * q->sps - (double)sp->n_ref);
  *th0 = sp->theta + omega * pos;
  *dth = omega * q->sps * (1 + bk->d);
}

/* exp(-j theta) at the instant of a block's symbol i is a[i / 64] t[i % 64]: the NCO's rotation
 * over the block as exact double anchors every 64 symbols and one table of the 64 steps within
 * (the correction these rotations carry is small, so float products are ample) */
typedef struct {
  prx_cf32 *t; /* 64 steps */
  prx_cf32 *a; /* (n + 63) / 64 anchors */
} block_rot;

/* the rotations of block bk kept in its scratch (free after the matched filter, longer than
 * 64 + its symbols / 64) between the two passes */
static block_rot rot_of(qpsk_blk *bk) {
  block_rot r = {bk->scratch, bk->scratch + 64};
  return r;
}

static void block_rotation(const prx_qpsk *q, const qpsk_blk *bk, int64_t n, block_rot *r) {
  double th0, dth;
  block_phase(q, bk, &th0, &dth);
  /* the table in 8 interleaved recurrences of step exp(-j 8 dth), each from an exact start */
  const double s8r = cos(8 * dth), s8i = -sin(8 * dth);
  for (int k = 0; k < 8; k++) {
    double tr = cos(k * dth), ti = -sin(k * dth);
    for (int i = k; i < 64; i += 8) {
      r->t[i].re = (float)tr;
      r->t[i].im = (float)ti;
      double u = tr * s8r - ti * s8i;
      ti = tr * s8i + ti * s8r;
      tr = u;
    }
  }
  /* the anchors by a recurrence of step exp(-j 64 dth) (at most 18 steps: L <= 1024) */
  double ar = cos(th0), ai = -sin(th0), s64r = cos(64 * dth), s64i = -sin(64 * dth);
  for (int64_t g = 0; 64 * g < n; g++) {
    r->a[g].re = (float)ar;
    r->a[g].im = (float)ai;
    double u = ar * s64r - ai * s64i;
    ai = ar * s64i + ai * s64r;
    ar = u;
  }
}

static inline prx_cf32 rot_at(const block_rot *r, int64_t i) {
  const prx_cf32 a = r->a[i >> 6], t = r->t[i & 63];
  prx_cf32 v = {a.re * t.re - a.im * t.im, a.re * t.im + a.im * t.re};
  return v;
}

/* per block: sum y conj(p), sum p exp(j theta) and the count over its pilots */
static void block_pilots(const prx_qpsk *q, qpsk_blk *bk, uint64_t j0, const block_rot *rot) {
  const int64_t P = q->cfg.pilot_period, pl = q->cfg.pilot_len, n = bk->k1 - bk->k0;
  double gr = 0, gi = 0, ur = 0, ui = 0, np = 0;
  int64_t pos = ((int64_t)j0 - q->frame_off) % P;
  if (pos < 0) pos += P;
  /* the block's symbols from a frame start: i = f + w, w < pl the pilot's index in the word */
  for (int64_t f = -pos; f < n; f += P)
    for (int64_t w = f < 0 ? -f : 0; w < pl && f + w < n; w++) {
      const prx_cf32 y = bk->sym[f + w], p = q->pilot[w], r = rot_at(rot, f + w);
      gr += (double)y.re * p.re + (double)y.im * p.im;
      gi += (double)y.im * p.re - (double)y.re * p.im;
      /* p exp(j theta) = p conj(rot) */
      ur += (double)p.re * r.re + (double)p.im * r.im;
      ui += (double)p.im * r.re - (double)p.re * r.im;
      np++;
    }
  bk->pil_g[0] = gr;
  bk->pil_g[1] = gi;
  bk->pil_u[0] = ur;
  bk->pil_u[1] = ui;
  bk->pil_n = np;
}

/* adds gain E exp(-j theta_k) to block bk's symbols and sums them again */
static void block_restore(qpsk_blk *bk, const double e[2], const block_rot *rot) {
  const int64_t n = bk->k1 - bk->k0;
  prx_cf32 *y = bk->sym;
  for (int64_t g = 0; g < n; g += 64) {
    const prx_cf32 a = rot->a[g >> 6];
    const float cr = (float)(e[0] * a.re - e[1] * a.im), ci = (float)(e[0] * a.im + e[1] * a.re);
    const int64_t m = n - g < 64 ? n - g : 64;
    prx_cf32 *z = y + g;
    for (int64_t i = 0; i < m; i++) {
      z[i].re += cr * rot->t[i].re - ci * rot->t[i].im;
      z[i].im += cr * rot->t[i].im + ci * rot->t[i].re;
    }
  }
  qpsk_blk_measure(bk, n);
}

void qpsk_pilot_dc(prx_qpsk *q) {
  if (q->n_blks == 0 || q->frame_off < 0) return;
  const unsigned g = (unsigned)q->blks[q->n_blks - 1].span + 1;
  uint64_t j = q->n_sym;
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    const int64_t n = bk->k1 - bk->k0;
    bk->pil_n = 0;
    if (n <= 0) continue;
    block_rot rot = rot_of(bk);
    block_rotation(q, bk, n, &rot);
    block_pilots(q, bk, j, &rot);
    j += (uint64_t)n;
  }
  for (unsigned i = 0; i < g; i++) {
    qpsk_span *sp = &q->spans[i];
    double a[2] = {0, 0}, c = 0;
    for (size_t t = 0; t < q->n_blks; t++) {
      const qpsk_blk *bk = &q->blks[t];
      if (bk->span != (int)i || bk->pil_n <= 0) continue;
      const double gr = bk->pil_g[0] / bk->pil_n, gi = bk->pil_g[1] / bk->pil_n;
      a[0] += gr * bk->pil_u[0] - gi * bk->pil_u[1];
      a[1] += gr * bk->pil_u[1] + gi * bk->pil_u[0];
      c += (bk->pil_u[0] * bk->pil_u[0] + bk->pil_u[1] * bk->pil_u[1]) / bk->pil_n;
    }
    a[0] /= sp->gain;
    a[1] /= sp->gain;
    double num[2] = {0, 0}, den = sp->dc_syms;
    int own = 0;
    for (unsigned w = 0; w < sp->dc_nwin; w++) {
      double v[2];
      if (sp->dc_win[w] == sp->s)
        own = 1;
      else if (pilots_of_span(q, i, sp->dc_win[w], v)) {
        num[0] += v[0];
        num[1] += v[1];
      }
    }
    if (own) {
      num[0] += a[0];
      num[1] += a[1];
      den -= c;
    }
    double e[2] = {0, 0};
    if (den > 0) {
      e[0] = num[0] / den;
      e[1] = num[1] / den;
    }
    if (!isfinite(e[0]) || !isfinite(e[1])) e[0] = e[1] = 0;
    sp->pil[0] = a[0] + e[0] * c;
    sp->pil[1] = a[1] + e[1] * c;
    sp->pil_e[0] = e[0] * sp->gain;
    sp->pil_e[1] = e[1] * sp->gain;
  }
  for (size_t t = 0; t < q->n_blks; t++) {
    qpsk_blk *bk = &q->blks[t];
    const qpsk_span *sp = &q->spans[bk->span];
    if (bk->k1 > bk->k0 && (sp->pil_e[0] != 0 || sp->pil_e[1] != 0)) {
      block_rot rot = rot_of(bk);
      block_restore(bk, sp->pil_e, &rot);
    }
  }
  /* the spans with samples of their own enter later windows */
  for (unsigned i = 0; i < g; i++) {
    const qpsk_span *sp = &q->spans[i];
    if (!sp->dc_own) continue;
    unsigned slot = q->pil_count++ % QPSK_DC_SPANS;
    q->pil_span[slot] = sp->s;
    q->pil_ring[slot][0] = sp->pil[0];
    q->pil_ring[slot][1] = sp->pil[1];
  }
}
