/* CUDA kernels of the demodulator's stages for a bank of C channels, every block of every channel
 * in one launch: the pre-filter on the 4/T grid with the input sums (stage pre, pass A of
 * bench/GPU_NOTES.md), the O&M sums (om), the 4th-power values at the instants (x4), the CFO
 * spectra, peak and refinement per span (cfo: batched cuFFT), the matched filter at the symbol
 * instants after DC removal, level and de-rotation with the V&V / M2M4 sums (mf, pass C) and
 * the hard decisions (out, pass D); per-channel mixing of the rows (mix); om folded into pre
 * (pre_om, om_sums, x4_level: one pass over the grid fewer, faster than om and x4 where pre_om's
 * filter is register-blocked or sliding, sps 4 and 16/3, bench/RESULTS.md). The per-output
 * arithmetic is
 * qpsk_stage_math.h, shared with the CPU stages.
 *
 * The bank's stage-major driver (qpsk_bank_gpu.c) calls them, with the serial passes between
 * them. The kernels live in the CUDA module and are reached through its table
 * (prx_qpsk_stages_cuda below); test_qpsk_stages_cuda holds them to the CPU functions,
 * test_qpsk_stages_emul their per-thread steps (without a GPU), bench_qpsk_stages times them.
 *
 * Rows: channel c's samples are rows + c * row_stride bytes, cf32 or cf16, sample 0 of a row
 * being stream sample 0; the stream has n_total samples per channel (samples beyond it read as 0
 * in stage pre and as the DC in stage mf, as qpsk_fetch reads them). Blocks b0 .. b0 + nblk - 1 of
 * every channel are computed. All pointers are device pointers unless said otherwise; calls are
 * asynchronous on the given stream and synchronise nothing (mix, create and cfo_setup copy
 * synchronously). */
#ifndef PRX_QPSK_STAGES_CUDA_H
#define PRX_QPSK_STAGES_CUDA_H

#include "polyrx/core.h"

#include "qpsk_fir.h"
#include "qpsk_stage_blocks.h"

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  unsigned C, nblk, L, Lmax;
  unsigned nsub, Ls, nlags; /* O&M sub-blocks per block, their length, drift lags */
  double sps;
  int cf16;
  /* the filters on the device: pre on the grid (exact rq or inexact r), mf at positions */
  float *d_pre, *d_mf;
  unsigned pre_Q, pre_ntaps, mf_Q, mf_ntaps;
  int pre_c, mf_c;
  int64_t pre_rq;
  double pre_r;
  size_t pre_win, mf_win; /* the longest input window of one block (samples) */
  int mf_pad;             /* the matched filter's window padded against bank conflicts (default) */
  /* a unit-step pre-filter grid (sps 4): the register-blocked filter, four outputs per thread
   * (default where it applies; 0 selects the one-output-per-thread filter). A step-4/3 grid
   * (sps 16/3) takes its own register-blocked filter, three outputs per thread, in pre (pre_om
   * one output per thread there). Where its tap count allows, the sliding filter (pre_slide)
   * takes the place of either, in pre and pre_om. */
  int pre_block;
  /* the sliding pre-filter's taps (create; qpsk_stages_pre.cuh): at a unit-step grid of
   * QPSK_SLIDE_NT4 taps its row, at a step-4/3 grid (Q 3) of QPSK_SLIDE_NT3 taps its rows 0, 1, 2
   * (re/im lanes); pre_slide 1 (create's default) takes it where it applies, 0 the
   * register-blocked filters of pre_block */
  int pre_slide;
  float pre_taps[QPSK_SLIDE_TAPS];
  /* the matched filter's pairs of symbols on one tap row a thread (qpsk_mf_pairing: 1 at sps 4,
   * consecutive symbols; P where P sps = 16, symbols P apart; default where it applies, with
   * the padded window; 0 selects one symbol per thread) */
  int mf_block;
  double *d_mix; /* per-channel mixing frequencies (C, cycles per sample); NULL: none */
  /* the CFO stage (cfo_setup): span length, FFT length, peak range, the FFT buffer and plan */
  unsigned cfo_S, cfo_nfft;
  double cfo_max_nu;
  void *d_cfo_buf; /* C x cfo_len cf32, then the odd bins' twiddle table (cfo_setup) */
  int cfo_plan;    /* cufftHandle, valid when d_cfo_buf is set */
  /* the CFO stage's transform over nfft / 2 points, the even bins of the zero-padded nfft-point
   * spectrum, the two odd bins beside its peak summed directly (qpsk_peak_start_half): the CPU's
   * start from half the transform (create's default from QPSK_CFO_HALF_MIN_CHANNELS, where it is
   * faster; 0 before cfo_setup: the nfft-point transform) */
  int cfo_half;
  unsigned cfo_len; /* the transform's length in use (cfo_setup) */
  /* PRX_QPSK_PI4 (set by the caller after create; module ABI 19): x4 turns each value back by
   * k pi, mf each symbol by k pi/4 (qpsk_pi4_x4, qpsk_pi4_factor) */
  int pi4;
} qpsk_stages;

/* The shape of a stages object for C channels of nblk blocks of L symbols (Lmax the longest block,
 * sps samples per symbol, cf16 rows): s cleared and its counts set, the O&M sub-blocks as qpsk.c
 * sets them. The module's create and the emulated module of test_qpsk_bank_driver both start
 * here. 0, or -1 where a block is shorter than one sub-block. */
static inline int qpsk_stages_shape(qpsk_stages *s, unsigned C, unsigned nblk, unsigned L,
                                    unsigned Lmax, double sps, int cf16) {
  memset(s, 0, sizeof *s);
  s->C = C;
  s->nblk = nblk;
  s->L = L;
  s->Lmax = Lmax;
  s->sps = sps;
  s->cf16 = cf16;
  s->nsub = L / QPSK_SUB_SYMBOLS;
  if (s->nsub == 0) return -1;
  s->Ls = L / s->nsub;
  while (s->nlags < QPSK_LAGS && 2u << s->nlags <= s->nsub) s->nlags++;
  return 0;
}

/* The sliding pre-filter at a step-4/3 grid (sps 16/3, QPSK_SLIDE_NT3 taps, pre_slide on): pre and
 * pre_om take it, so that folding om into pre pays there as at sps 4 (the bank's driver) */
static inline int qpsk_stages_slide3(const qpsk_stages *s) {
  return s->pre_slide && !s->pre_block && s->pre_Q == 3 && s->pre_rq == 4 &&
         s->pre_ntaps == QPSK_SLIDE_NT3;
}

/* The channels from which create takes the CFO stage from half the transform (cfo_half): it saves
 * ~0.08 us of cuFFT and fill per channel and adds ~13 us of latency (the odd bins' sums) to the
 * one-block-per-channel peak kernel, so it wins above ~170 channels on the H200
 * (bench/GPU_NOTES.md, "Stage kernels, sixth session"). */
#define QPSK_CFO_HALF_MIN_CHANNELS 192

/* The stage kernels' entry points, in the CUDA module (prx_cuda_module_get()->qpsk_stages): the
 * bank's driver (qpsk_bank_gpu.c), the test and the benchmark call them through this table. */
typedef struct prx_qpsk_stages_cuda {
  /* Copies the two filter banks to the device and sizes the kernels' shared memory for C
   * channels of nblk blocks of L symbols (at most Lmax owned symbols a block). */
  prx_status (*create)(qpsk_stages *s, const qpsk_fir *pre, const qpsk_fir *mf, unsigned C,
                       unsigned nblk, unsigned L, unsigned Lmax, double sps, int cf16);
  void (*destroy)(qpsk_stages *s);
  /* Grid samples 4bL - QPSK_GM .. 4(b+1)L + QPSK_GM - 1 of each block into grid
   * (C x nblk x (4L + 2 QPSK_GM)), and the block's input sums over its own samples
   * [ceil(bL sps), ceil((b+1)L sps)) clipped to the stream: mom (C x nblk x 4: sum re, sum im,
   * sum |x|^2 and count of the finite samples) and nonfinite (C x nblk). */
  prx_status (*pre)(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                    int64_t n_total, prx_cf32 *grid, double *mom, unsigned *nonfinite,
                    cudaStream_t stream);
  /* The matched filter at the owned instants of each block (blk: C x nblk) into sym (C x nblk
   * x Lmax, symbol k at k - k0) and the sums over them into sums (C x nblk x 5: s4 re, s4 im,
   * m2, m4, n). */
  prx_status (*mf)(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                   int64_t n_total, const qpsk_mf_block *blk, prx_cf32 *sym, double *sums,
                   cudaStream_t stream);
  /* The O&M sums of each block (C x nblk): the grid less its DC at unit level (written back in
   * place, as the x4 stage reads it) and the sums per sub-block with the drift correlations. */
  prx_status (*om)(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, prx_cf32 *grid,
                   qpsk_om_out *out, cudaStream_t stream);
  /* The 4th-power values of each block's owned symbols (timing from blk) from the normalised
   * grid: channel c's values at w + c * w_stride + w0[c nblk + j] + (k - k0) (w0: the block's
   * offset in its span's sequence). */
  prx_status (*x4)(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                   const prx_cf32 *grid, prx_cf32 *w, size_t w_stride, cudaStream_t stream);
  /* Hard decisions of each block's symbols (counts from blk's k1 - k0) into bits (channel c's
   * row at bits + c * bits_stride, two bits per symbol, at 2 out0). */
  prx_status (*out)(const qpsk_stages *s, const qpsk_mf_block *blk, const qpsk_out_block *ob,
                    const prx_cf32 *sym, uint8_t *bits, size_t bits_stride, cudaStream_t stream);

  /* ---- entries added after the first five (module ABI 4) ---- */

  /* Per-channel mixing of the rows that pre and mf read: channel c's stream sample n is taken as
   * x[n] exp(-2 pi i f[c] n) before anything else (the input sums, the non-finite test, the
   * filters, the DC), with the phase referenced to stream sample 0 and exact to float rounding
   * for n up to 2^40 (qpsk_mix_turns / qpsk_mix_rot in qpsk_stage_math.h; the CPU bank's
   * prx_mix_down, src/dsp/mix.c, gives the same samples to float rounding). f: a host array of C
   * frequencies in cycles per input sample (the bank's mix_hz[c] / sample_rate), copied to the
   * device before the call returns (synchronously: the array may be freed after). f == NULL turns
   * the mixing off (the default; the kernels then take no per-sample cost). Samples beyond the
   * stream keep their values (0 in pre, the DC in mf). */
  prx_status (*mix)(qpsk_stages *s, const double *f);
  /* Prepares the CFO stage for spans of S symbols (the estimation window holds at most S values),
   * zero-padded to nfft points (a power of two >= 2 S, as qpsk.c sets q->nfft), the peak taken
   * over |nu| <= max_nu cycles per value (4 x the acquisition range in Rs): a batched cuFFT plan
   * over the C channels and its buffer (C x cfo_len cf32: nfft / 2 where s->cfo_half and the odd
   * bins' twiddle table fits the peak kernel's shared memory, else nfft).
   * Called again, it replaces them; destroy frees them. */
  prx_status (*cfo_setup)(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu);
  /* The CFO stage (qpsk_batch.c's stage_cfo) for one span of every channel: channel c's
   * estimation window is the in[c].n 4th-power values (more than S are taken as S) at w + c *
   * w_stride + in[c].w0 (the x4 stage's output; for the stream's short last span the caller points
   * w0 back into the previous span's values, as stage_cfo reaches back), zero-padded to nfft,
   * transformed, the peak |X|^2 over |nu| <= max_nu (the first on ties) with its parabolic vertex
   * rounded to 1/8 bin (out[c].nu0), then the Newton refinement of qpsk_periodogram_refine
   * (out[c].nu), and the CFO out[c].f = nu / (4 (1 + in[c].e / (1 - in[c].e))) in cycles per symbol
   * (the span's sp->f). in and out are device arrays of C records. The result matches the CPU's
   * (measured: within 3e-12 Rs on random windows, 8e-8 Rs on the demodulator's own spans at 3000
   * ppm, where the CPU's FFT plans differ from each other by as much; the start nu0 is on the
   * same 1/8-bin grid and equal except at near-ties of the noise). */
  prx_status (*cfo)(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride, const qpsk_cfo_in *in,
                    qpsk_cfo_out *out, cudaStream_t stream);

  /* The O&M stage folded into pre (one pass over the grid fewer): pre_om is pre plus, for each
   * block, the sums over its own grid values below grid index g_hi (INT64_MAX while the stream
   * goes on; qpsk_om_in's g_hi when it ends) from which the O&M sums follow once the span's DC
   * and level are known (qpsk_stage_math.h, qpsk_oms_add): omsum, C x nblk x (nsub + 1) x
   * QPSK_OMS doubles (nsub = L / QPSK_SUB_SYMBOLS as qpsk.c sets it). The grid holds pre's values
   * (not levelled) as two bfloat16 each (qpsk_stage_math.h, qpsk_bf16_bits: 4 bytes a value, the
   * first half of the buffer pre fills): x4_level (x4_rows with in) is its only reader; the sums
   * are taken from the floats. */
  prx_status (*pre_om)(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                       int64_t n_total, int64_t g_hi, prx_cf32 *grid, double *mom,
                       unsigned *nonfinite, double *omsum, cudaStream_t stream);
  /* om's records (C x nblk) from pre_om's sums and the level pass's in (the same g_hi as
   * pre_om's): what om gives, to float rounding of the levelled values (qpsk_om_combine) */
  prx_status (*om_sums)(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, const double *omsum,
                        qpsk_om_out *out, cudaStream_t stream);
  /* x4 on the grid as pre_om leaves it (bfloat16): each value it reads levelled with in's DC and
   * gain, as om levels it in place (x4's values on qpsk_grid_bf16's grid levelled first) */
  prx_status (*x4_level)(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                         const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w, size_t w_stride,
                         cudaStream_t stream);

  /* ---- entries added after x4_level (module ABI 15): the CFO stage's rows written by x4 ---- */

  /* The CFO stage's input rows (after cfo_setup): C rows *row_stride points apart, the transform
   * reading each row's first cfo_len points. cfo_fed reads them as x4_rows leaves them; cfo writes
   * them itself (a copy of the windows). */
  prx_status (*cfo_rows)(const qpsk_stages *s, prx_cf32 **rows, size_t *row_stride);
  /* x4 (in NULL: pre's float grid) or x4_level (in given: pre_om's bfloat16 grid) into w as they
   * write it and, besides, each channel's span
   * values into rows (cfo_rows'): channel c's value of block j's symbol k at rows + c row_stride +
   * w0[c nblk + j] - w0[c nblk] + (k - k0), those below S (cfo_setup's span): the span's values
   * from the row's point 0, as cfo_fed takes them. The values are those x4 (x4_level) writes. */
  prx_status (*x4_rows)(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                        const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w, size_t w_stride,
                        prx_cf32 *rows, size_t row_stride, cudaStream_t stream);
  /* cfo on the rows as x4_rows left them (w0: its offsets, nblk s->nblk): the same windows as cfo
   * reads from w (in[c]), each being take = w0[c nblk] - in[c].w0 values of w before the span's
   * values (the reach-back, 0 <= take <= n: only these are copied into the row, at its end, the
   * row then being the padded window turned by take points, its spectrum's powers the same) and
   * the span's values after them; the same estimates as cfo (the start nu0 equal except at a
   * near-tie of two bins, the transform's rounding differing by the turn). */
  prx_status (*cfo_fed)(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride, const int64_t *w0,
                        const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream);

  /* ---- entries added after cfo_fed (module ABI 17): the CFO alias test's measure ---- */

  /* The CFO alias test's sums (qpsk_alias.c: qpsk_alias_step, in double, each channel's samples
   * in order) over stream samples s0 .. s0 + n - 1 of every channel's row (the rows as pre takes
   * them; mixed as pre mixes them), added to sums[c] (C records on the device;
   * fresh: from zero sums, the stream's first samples). A block a channel, its threads over
   * segments of the call's samples, each after the first from a warm-up of the samples before it
   * (the low-pass's memory, below 1e-20 of its gain): the serial sums to double rounding. */
  prx_status (*alias)(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t s0,
                      size_t n, int fresh, qpsk_alias_sums *sums, cudaStream_t stream);
} prx_qpsk_stages_cuda;
extern const prx_qpsk_stages_cuda prx_qpsk_stages_cuda_entries;

#ifdef __cplusplus
}
#endif

#endif
