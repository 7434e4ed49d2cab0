/* The CPU's level, timing and NCO passes (qpsk_internal.h) through qpsk_serial.h's, the code the
 * GPU's kernels run: each span's records gathered from prx_qpsk's blocks and span, the pass, the
 * results put back. And the host's side of the GPU's records: a channel's configuration and
 * carried state, and a span's results back into its blocks and span. */
#include "qpsk_serial.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void qpsk_serial_cfg_of(const prx_qpsk *q, qpsk_serial_cfg *cf) {
  memset(cf, 0, sizeof *cf);
  cf->L = q->L;
  cf->B = q->B;
  cf->S = q->S;
  cf->nsub = q->nsub;
  cf->Ls = q->Ls;
  cf->nlags = q->nlags;
  cf->Lmax = q->Lmax;
  cf->sps = q->sps;
  cf->pre_gain = q->pre_gain;
  cf->mf_c = q->mf.c;
  cf->mf_ntaps = q->mf.ntaps;
  cf->region = (int64_t)q->S + (int64_t)q->B * q->Lmax;
  cf->P = qpsk_phase_period(q->sps);
}

void qpsk_serial_state_of(const prx_qpsk *q, qpsk_serial_state *st) {
  *st = q->sr;
  st->hist_r = -1; /* (the driver's to set: it tracks the CFO history off the device too) */
  st->hist_n = 0;
}

void qpsk_serial_state_to(prx_qpsk *q, const qpsk_serial_state *st) { q->sr = *st; }

/* ---- the records of a span and its blocks, from and into prx_qpsk's ---- */

/* the fields a span's record shares with qpsk_span (and dc_win) */
#define SPAN_FIELDS(X)                                                                             \
  X(dc[0])                                                                                         \
  X(dc[1]) X(dc_nwin) X(dc_syms) X(dc_own) X(gain) X(e) X(out_range) X(line) X(f) X(theta) X(n_ref)
#define FROM_SPAN(f) r->f = sp->f;
#define TO_SPAN(f) sp->f = r->f;

static void span_of(const qpsk_span *sp, qpsk_serial_span *r) {
  memset(r, 0, sizeof *r);
  SPAN_FIELDS(FROM_SPAN)
  memcpy(r->dc_win, sp->dc_win, sizeof r->dc_win);
}

static void span_to(qpsk_span *sp, const qpsk_serial_span *r) {
  SPAN_FIELDS(TO_SPAN)
  memcpy(sp->dc_win, r->dc_win, sizeof sp->dc_win);
}

/* the block's O&M sums as stage_om leaves them */
static void om_of(const qpsk_blk *bk, qpsk_om_out *r) {
  memcpy(r->osub, bk->osub, sizeof r->osub);
  memcpy(r->osub_t, bk->osub_t, sizeof r->osub_t);
  memcpy(r->corr, bk->corr, sizeof r->corr);
  r->om_n = bk->om_n;
  r->nsub = bk->nsub;
  r->pad = 0;
}

/* the block's timing as the timing pass leaves it */
static void blk_to(qpsk_blk *bk, const qpsk_serial_blk *t) {
  bk->om[0] = t->om[0];
  bk->om[1] = t->om[1];
  bk->om_en = t->om_en;
  bk->locked = t->locked;
  bk->tau = t->tau;
  bk->d = t->d;
  bk->tres = t->tres;
  bk->k0 = t->k0;
  bk->k1 = t->k1;
}

void qpsk_serial_to_blocks(prx_qpsk *q, const qpsk_serial_span *r, const qpsk_serial_blk *tb,
                           const double *mom, const unsigned *bad) {
  qpsk_span *sp = &q->spans[0];
  span_to(sp, r);
  sp->nw = 0; /* the 4th-power values stay on the device */
  for (size_t j = 0; j < q->n_blks; j++) {
    qpsk_blk *bk = &q->blks[j];
    bk->mom[0] = mom[4 * j];
    bk->mom[1] = mom[4 * j + 1];
    bk->mom[2] = mom[4 * j + 2];
    bk->mom_n = mom[4 * j + 3];
    bk->nonfinite = bad[j];
    blk_to(bk, &tb[j]);
  }
}

/* ---- the CPU's passes ---- */

/* one span's records (B blocks at most), laid out in q->sr_tmp */
typedef struct {
  qpsk_om_out *om;     /* the blocks' O&M sums */
  qpsk_serial_blk *tb; /* their timing */
  double *mom;         /* their input sums, 4 each */
  double *tom, *ten;   /* the timing pass's team scratch: 2 and 1 per block */
  double *med;         /* the clock line's intercepts */
} scratch;

size_t qpsk_serial_scratch_bytes(size_t B) {
  return B * (sizeof(qpsk_om_out) + sizeof(qpsk_serial_blk) + 8 * sizeof(double));
}

static scratch scratch_of(const prx_qpsk *q) {
  const size_t B = q->B;
  scratch x;
  unsigned char *p = q->sr_tmp;
  x.om = (qpsk_om_out *)p;
  p += B * sizeof *x.om;
  x.tb = (qpsk_serial_blk *)p;
  p += B * sizeof *x.tb;
  x.mom = (double *)p;
  x.tom = x.mom + 4 * B;
  x.ten = x.tom + 2 * B;
  x.med = x.ten + B;
  return x;
}

/* the end of span i's blocks, which start at t0 (the batch lays them out span by span) */
static size_t span_end(const prx_qpsk *q, unsigned i, size_t t0) {
  size_t t1 = t0;
  while (t1 < q->n_blks && q->blks[t1].span == (int)i) t1++;
  return t1;
}

/* per span: the DC and the gain to unit power (the last span's where a span has no samples).
 * The DC is the mean over this span and up to QPSK_DC_SPANS - 1 before it: the mean of the
 * signal itself (its random data) is part of any such estimate and is removed with it, a line of
 * 1 / (symbols averaged) of the signal power (-39 dB for one 8192-symbol span, -45 dB for four). */
void qpsk_serial_level(prx_qpsk *q, unsigned g) {
  qpsk_serial_cfg cf;
  qpsk_serial_cfg_of(q, &cf);
  const scratch x = scratch_of(q);
  size_t t0 = 0;
  for (unsigned i = 0; i < g; i++) {
    qpsk_span *sp = &q->spans[i];
    const size_t t1 = span_end(q, i, t0);
    for (size_t t = t0; t < t1; t++) {
      const qpsk_blk *bk = &q->blks[t];
      double *m = x.mom + 4 * (t - t0);
      m[0] = bk->mom[0];
      m[1] = bk->mom[1];
      m[2] = bk->mom[2];
      m[3] = bk->mom_n;
    }
    qpsk_serial_span r;
    span_of(sp, &r);
    qpsk_sr_level(&cf, &q->sr, sp->s, x.mom, t1 - t0, &r);
    span_to(sp, &r);
    t0 = t1;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* per span: the clock slope, the blocks' timing and the symbols they own (qpsk_sr_timing's
 * steps, the intercepts sorted by qsort: a span can have many blocks) */
void qpsk_serial_timing(prx_qpsk *q, unsigned g) {
  qpsk_serial_cfg cf;
  qpsk_serial_cfg_of(q, &cf);
  const scratch x = scratch_of(q);
  const qpsk_sr_team tm = {0, 1, x.tom, x.ten, NULL};
  size_t t0 = 0;
  for (unsigned i = 0; i < g; i++) {
    qpsk_span *sp = &q->spans[i];
    const size_t t1 = span_end(q, i, t0), nb = t1 - t0;
    const int64_t b0 = nb ? q->blks[t0].b : 0;
    for (size_t t = t0; t < t1; t++) om_of(&q->blks[t], &x.om[t - t0]);
    qpsk_serial_span r;
    span_of(sp, &r);
    qpsk_sr_clock k;
    if (qpsk_sr_clock_of(&cf, &q->sr, x.om, b0, nb, x.tb, &r, &tm, &k)) {
      size_t ni = 0;
      for (size_t j = 0; j < nb; j++)
        ni += qpsk_sr_on_line(&cf, x.om, x.tb, b0, j, k.e, &x.med[ni]);
      qsort(x.med, ni, sizeof *x.med, cmp_double);
      qpsk_sr_own(&cf, &q->sr, b0, nb, q->flushing, q->n_total, &k, qpsk_sr_middle(x.med, ni), x.tb,
                  &tm);
      for (size_t t = t0; t < t1; t++) blk_to(&q->blks[t], &x.tb[t - t0]);
    }
    span_to(sp, &r);
    t0 = t1;
  }
}

/* per span: the phase-continuous NCO, each span's phase continuing the previous span's */
void qpsk_serial_nco(prx_qpsk *q, unsigned g) {
  qpsk_serial_cfg cf;
  qpsk_serial_cfg_of(q, &cf);
  const qpsk_sr_team tm = {0, 1, NULL, NULL, NULL};
  for (unsigned i = 0; i < g; i++) {
    qpsk_span *sp = &q->spans[i];
    qpsk_serial_span r;
    span_of(sp, &r);
    /* (no blocks: the matched filter's records are the GPU's) */
    qpsk_sr_nco(&cf, &q->sr, sp->s, sp->f, 0, 0, &r, NULL, &tm);
    span_to(sp, &r);
  }
}
