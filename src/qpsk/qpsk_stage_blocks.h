/* The per-block records the demodulator's CUDA stage kernels read and write (qpsk_stages_cuda.h):
 * what the serial passes hand to a stage and what a stage hands back, as plain C (the CPU tests
 * build and read them without CUDA). */
#ifndef PRX_QPSK_STAGE_BLOCKS_H
#define PRX_QPSK_STAGE_BLOCKS_H

#include "qpsk_internal.h"
#include "qpsk_stage_math.h"

#include <string.h>

/* one block's matched-filter parameters (from the serial timing pass and the NCO) */
typedef struct {
  qpsk_mf_timing t; /* instants and owned symbols (t.b the absolute block index) */
  double theta;     /* NCO phase at the block's window start (qpsk_mf_window_of's lo) */
  double omega;     /* NCO step per input sample, radians */
  float dc[2];      /* the span's DC */
  float gain;       /* and its gain to unit power */
  float pad;
} qpsk_mf_block;

/* one block's decision parameters (from the serial phase pass) */
typedef struct {
  prx_cf32 rot;   /* correction: exp(-j phi) / amplitude */
  unsigned quad0; /* DIFFERENTIAL: quadrant of the symbol before the block's first */
  int diff;       /* 1: differential bits, 0: coherent Gray */
  int64_t out0;   /* the block's first output symbol within its channel's bit row */
} qpsk_out_block;

/* one block's O&M input (from the serial level pass) */
typedef struct {
  prx_cf32 D; /* the span's DC through the pre-filter (dc x its DC gain) */
  float gain; /* the span's gain to unit power */
  float pad;
  int64_t g_hi; /* grid index where the stream ends (INT64_MAX while it goes on) */
} qpsk_om_in;

/* one block's O&M sums, as stage_om leaves them in qpsk_blk */
typedef struct {
  double osub[QPSK_SUB_MAX][2];
  double osub_t[QPSK_SUB_MAX];
  double corr[QPSK_LAGS][2];
  double om_n;
  unsigned nsub;
  unsigned pad;
} qpsk_om_out;

/* Stage om from pre's sums (qpsk_stages_cuda.h, entries pre_om and om_sums): block b's O&M
 * record as stage_om leaves it, from its (nsub + 1) x QPSK_OMS sums over its own grid below
 * in->g_hi (sub-blocks of 4 Ls grid values, the last one the rest of the block), the span's DC
 * and level from in, the drift correlations between complete sub-blocks 2^l apart (nlags) in the
 * CPU's order. */
QPSK_HD void qpsk_om_combine(const double *sums, int64_t b, int64_t L, unsigned nsub, unsigned Ls,
                             unsigned nlags, const qpsk_om_in *in, qpsk_om_out *r) {
  const int64_t m0 = 4 * b * L, Ls4 = 4 * (int64_t)Ls;
  int64_t g_hi = m0 + 4 * L;
  if (g_hi > in->g_hi) g_hi = in->g_hi;
  memset(r, 0, sizeof *r);
  r->om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
  for (unsigned j = 0; j <= nsub; j++) {
    int64_t a, e;
    if (!qpsk_om_sub_span(m0, L, Ls4, nsub, g_hi, j, &a, &e)) break;
    qpsk_oms_value(sums + (size_t)j * QPSK_OMS, a, e, in->D, in->gain, r->osub[j]);
    r->osub_t[j] = (double)(a + e - 1) / 8.0;
    r->nsub = j + 1;
    if (j < nsub && e - a == Ls4) {
      for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
        const double *q = r->osub[j - (1u << l)];
        r->corr[l][0] += r->osub[j][0] * q[0] + r->osub[j][1] * q[1];
        r->corr[l][1] += r->osub[j][1] * q[0] - r->osub[j][0] * q[1];
      }
    }
  }
}

/* one channel's CFO window for one span (the cfo stage's input, from the serial timing pass) */
typedef struct {
  int64_t w0; /* the window's first value, from the channel's w row */
  unsigned n; /* values in the window (<= S; fewer only for the stream's last span) */
  unsigned pad;
  double e; /* the span's clock offset (sp->e): the values are 1 + e / (1 - e) symbols apart */
} qpsk_cfo_in;

/* one channel's CFO estimate for one span (the cfo stage's output) */
typedef struct {
  double f;   /* CFO, cycles per symbol (sp->f) */
  double nu;  /* the refined line of the 4th-power values, cycles per value */
  double nu0; /* the refinement's start: the spectrum's peak on the 1/8-bin grid */
} qpsk_cfo_out;

#endif
