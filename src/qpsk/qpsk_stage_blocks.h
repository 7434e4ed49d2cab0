/* The per-block records the demodulator's CUDA stage kernels read and write (qpsk_stages_cuda.h):
 * what the serial passes hand to a stage and what a stage hands back, as plain C (the CPU tests
 * build and read them without CUDA). */
#ifndef PRX_QPSK_STAGE_BLOCKS_H
#define PRX_QPSK_STAGE_BLOCKS_H

#include "qpsk_internal.h"
#include "qpsk_stage_math.h"

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
