/* The host's side of the serial passes' records (qpsk_serial.h): a channel's configuration and
 * carried state from its prx_qpsk, and a span's results back into its blocks and span. */
#include "qpsk_serial.h"

#include <math.h>
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
  for (unsigned c = 1; c <= 8 && !cf->P; c++)
    if (fabs(c * q->sps - nearbyint(c * q->sps)) < 1e-9 * c * q->sps) cf->P = c;
}

void qpsk_serial_state_of(const prx_qpsk *q, qpsk_serial_state *st) {
  memset(st, 0, sizeof *st);
  memcpy(st->dc_ring, q->dc_ring, sizeof st->dc_ring);
  memcpy(st->dc_span, q->dc_span, sizeof st->dc_span);
  memcpy(st->dcw_prev, q->dcw_prev, sizeof st->dcw_prev);
  st->dc_prev[0] = q->dc_prev[0];
  st->dc_prev[1] = q->dc_prev[1];
  st->gain_prev = q->gain_prev;
  st->dcw_prev_syms = q->dcw_prev_syms;
  st->dc_count = q->dc_count;
  st->dcw_prev_n = q->dcw_prev_n;
  st->have_prev = q->have_prev;
  st->have_e = q->have_e;
  st->have_clock = q->have_clock;
  st->range_prev = q->range_prev;
  st->tau_prev = q->tau_prev;
  st->e_prev = q->e_prev;
  st->om_prev[0] = q->om_prev[0];
  st->om_prev[1] = q->om_prev[1];
  st->en_prev = q->en_prev;
  memcpy(st->corr_prev, q->corr_prev, sizeof st->corr_prev);
  st->k_end_prev = q->k_end_prev;
  st->theta_next = q->theta_next;
  st->f_prev = q->f_prev;
  st->hist_r = -1; /* (the driver's to set: it tracks the CFO history off the device too) */
  st->hist_n = 0;
}

void qpsk_serial_state_to(prx_qpsk *q, const qpsk_serial_state *st) {
  memcpy(q->dc_ring, st->dc_ring, sizeof q->dc_ring);
  memcpy(q->dc_span, st->dc_span, sizeof q->dc_span);
  memcpy(q->dcw_prev, st->dcw_prev, sizeof q->dcw_prev);
  q->dc_prev[0] = st->dc_prev[0];
  q->dc_prev[1] = st->dc_prev[1];
  q->gain_prev = st->gain_prev;
  q->dcw_prev_syms = st->dcw_prev_syms;
  q->dc_count = st->dc_count;
  q->dcw_prev_n = st->dcw_prev_n;
  q->have_prev = st->have_prev;
  q->have_e = st->have_e;
  q->have_clock = st->have_clock;
  q->range_prev = st->range_prev;
  q->tau_prev = st->tau_prev;
  q->e_prev = st->e_prev;
  q->om_prev[0] = st->om_prev[0];
  q->om_prev[1] = st->om_prev[1];
  q->en_prev = st->en_prev;
  memcpy(q->corr_prev, st->corr_prev, sizeof q->corr_prev);
  q->k_end_prev = st->k_end_prev;
  q->theta_next = st->theta_next;
  q->f_prev = st->f_prev;
}

void qpsk_serial_to_blocks(prx_qpsk *q, const qpsk_serial_span *r, const qpsk_serial_blk *tb,
                           const double *mom, const unsigned *bad) {
  qpsk_span *sp = &q->spans[0];
  sp->dc[0] = r->dc[0];
  sp->dc[1] = r->dc[1];
  memcpy(sp->dc_win, r->dc_win, sizeof sp->dc_win);
  sp->dc_nwin = r->dc_nwin;
  sp->dc_syms = r->dc_syms;
  sp->dc_own = r->dc_own;
  sp->gain = r->gain;
  sp->e = r->e;
  sp->out_range = r->out_range;
  sp->f = r->f;
  sp->theta = r->theta;
  sp->n_ref = r->n_ref;
  sp->nw = 0; /* the 4th-power values stay on the device */
  for (size_t j = 0; j < q->n_blks; j++) {
    qpsk_blk *bk = &q->blks[j];
    const qpsk_serial_blk *t = &tb[j];
    bk->mom[0] = mom[4 * j];
    bk->mom[1] = mom[4 * j + 1];
    bk->mom[2] = mom[4 * j + 2];
    bk->mom_n = mom[4 * j + 3];
    bk->nonfinite = bad[j];
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
}
