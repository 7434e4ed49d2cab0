/* The bank's stage-major driver (src/qpsk/qpsk_bank_gpu.c) on the host: its device services and
 * stage kernels replaced by host emulations (memory and copies by malloc and memcpy, each stage
 * kernel by the CPU demodulator's own functions over the same per-block records), so that the
 * driver's bookkeeping runs in CI without a GPU: the device ring (spans reaching back into
 * earlier calls, the chunk read in place, the kept samples left in place as the ring slides), the
 * records between the stages and the serial passes, the blocks' ownership and output offsets
 * across calls, the flush, and both output modes (bits written by the out stage in place; symbols
 * back to the host for LLRs and packed bits). Each run is held to the CPU bank on the same rows:
 * the same symbol counts and block counts, identical bits at Es/N0 >= 12 dB and at least
 * 99.99 % identical at 4-8 dB (the emulated input sums add in another order than the CPU's), the
 * same for random chunkings (calls of 0 to 90000 samples: within a span, several spans; and a
 * stream of 24 spans in calls shorter than a span, the ring moved to its buffer's start at
 * least twice), cf32 and cf16 rows, sps 4 and 16/3, with and without mix_hz, LLRs within 1e-5
 * relative; and pilots at CFO 0, whose Es/N0 holds the pilots' share of the DC restored on the
 * driver's path.
 * Every case runs six times: on one stream (a module without events), and with events on
 * streams that defer their work, the driver's second stream eager (a pre ahead that overwrites
 * a slot still to be read, or reads rows not yet copied, changes the output) or lazy (the host
 * reading a slot before its wait changes it), with the om stage folded into pre at sps 4 (its
 * emulation: qpsk_oms_add, qpsk_om_combine, levelled reads; LLRs within 1e-4) and apart; and
 * twice with the level, timing and NCO passes on the (emulated) GPU (qpsk_serial.h: each
 * kernel's per-channel code on the host, a warp as a team of one lane), held also to the same
 * driver with those passes on the CPU (qpsk_serial.h's passes too, run span by span on records
 * gathered from the channels' blocks, the clock line's median by qsort): identical bits, LLRs
 * and block estimates; one case with
 * the passes' side switched after every call (their state moved between the device and the
 * channels), one with the stream run again after the flush on the same bank; with the history in
 * the rows, the stream's last samples in the flush's call (the receiver's end, held where the GPU
 * decides the bits), after a stream of another length and chunking so ended and again after the
 * flush, and after a stream cut short by a reset with spans pending. With the passes on
 * the GPU and bits only, the phase pass runs there too (qpsk_serial_phase.h's steps on the host,
 * a team of 1, 3 or 32 lanes a channel, checked to be in use) and the reports are written lazily:
 * against the CPU's phase pass, identical bits and block estimates (Es/N0, noise, signal statistic,
 * flags included); estimates read after every third call only (the reports then written in the next
 * call: the same bits and stats, each read call's estimates its own blocks'); LLRs in every other
 * call (the pass and its state moving between the GPU and the CPU).
 *
 * Skips (exit 77) in a build without CUDA (the driver is built with the CUDA backend only). */
#include "test_qpsk_bank_rows.h"

#ifdef PRX_HAVE_CUDA
#include "core/cuda_module.h"
#include "qpsk/qpsk_bank_internal.h"
#include "qpsk/qpsk_est.h"
#include "qpsk/qpsk_internal.h"
#include "qpsk/qpsk_serial.h"
#include "qpsk/qpsk_serial_phase.h"
#include "qpsk/qpsk_stage_blocks.h"
#include "qpsk/qpsk_stages_cuda.h"

#include <stdint.h>

/* ---- the emulated module ---- */

static const qpsk_fir *em_pre, *em_mfir;
static double *em_mix;  /* C frequencies, cycles per sample, or NULL */
static int em_fold;     /* create sets pre_block at sps 4: the driver takes the folded om path */
static int em_created;  /* streams made after create (the driver's second) run eagerly, if asked */
static int em_fold_run; /* the last driver run took the folded path */
static int em_short_tail; /* the case of a stream ending just after two spans */
static int em_ser;        /* the driver runs the serial passes on the (emulated) GPU */
static int em_twice;      /* run's stream twice through one bank, a flush between */
static int em_toggle;     /* the serial passes' side switched after every call */
static int em_lazy;       /* the estimates read after every third call only (and the flush); 2: the
                             flush's only */
static int em_late;       /* a call's symbols not read and a later call (not the flush) */
static int em_mixed;      /* LLRs asked for in every other call only (the phase pass moving) */
static double em_moves;   /* the ring's moves at least (to its buffer's start) the run must make */
static double em_chunk;   /* random chunks of at most this many samples (0: up to 40000 or 90000) */
static int em_kept; /* device calls whose rows hold the bank's history before each chunk (a fresh
                       buffer each call: the kept samples, the chunk, poison after) */
static size_t em_kept_try, em_kept_bad; /* calls without the kept samples; those refused */
static int em_end; /* with em_kept: the stream's last samples in the flush's call, its end held
                      (prx_qpsk_bank_gpu_hold_end: the receiver's end of a stream) */
static size_t em_reset_pending; /* em_before 2's resets with spans pending */
static int em_before;           /* a stream before run's (half its rows and more, in calls of 7777):
                                   1 ended as em_end, 2 cut short by prx_qpsk_bank_reset with spans pending */
static int em_ring_fail;     /* the ring's device memory refused at the first call with samples */
static size_t em_alloc_most; /* device allocations above this many bytes fail (0: none) */

static int gpu_serial_now(const prx_qpsk_bank_gpu *g) {
  prx_qpsk_bank_gpu_timing t;
  prx_qpsk_bank_gpu_get_timing(g, &t);
  return t.gpu_serial;
}

static prx_status em_create(qpsk_stages *s, const qpsk_fir *pre, const qpsk_fir *mf, unsigned C,
                            unsigned nblk, unsigned L, unsigned Lmax, double sps, int cf16) {
  if (qpsk_stages_shape(s, C, nblk, L, Lmax, sps, cf16))
    return prx_fail(PRX_ERR_INVALID, "emulated stages: block too short");
  s->pre_block = em_fold && sps == 4;
  em_created = 1;
  em_pre = pre;
  em_mfir = mf;
  return PRX_OK;
}
static void em_destroy(qpsk_stages *s) {
  free(s->d_cfo_buf); /* (the CFO stage's rows: em_cfo_setup) */
  s->d_cfo_buf = NULL;
  free(em_mix);
  em_mix = NULL;
}
static prx_status em_mixf(qpsk_stages *s, const double *f) {
  free(em_mix);
  em_mix = NULL;
  if (f) {
    em_mix = malloc(s->C * sizeof *em_mix);
    memcpy(em_mix, f, s->C * sizeof *em_mix);
  }
  return PRX_OK;
}

/* the stream's rows as the test made them: every sample a stage reads is checked against them
 * (the ring and the chunk's bookkeeping must hand it stream sample i of row c) */
static const uint8_t *em_src;
static size_t em_src_pitch; /* samples */
static size_t em_bad_reads;

/* sample i of row c (the row pointer may sit before its buffer: address arithmetic) */
static prx_cf32 em_read(const qpsk_stages *s, const void *rows, size_t stride, unsigned c,
                        int64_t i) {
  size_t sz = s->cf16 ? 4 : 8;
  const uint8_t *p = (const uint8_t *)((uintptr_t)rows + c * stride + (uintptr_t)i * sz);
  if (em_src && memcmp(p, em_src + ((size_t)c * em_src_pitch + (size_t)i) * sz, sz)) em_bad_reads++;
  prx_cf32 v;
  if (s->cf16) {
    uint16_t h[2];
    memcpy(h, p, 4);
    v.re = prx_half_to_float(h[0]);
    v.im = prx_half_to_float(h[1]);
  } else {
    memcpy(&v, p, 8);
  }
  return v;
}

/* the window [lo, hi) of row c as a stage reads it: outside the stream `outside`, mixed, the
 * non-finite samples as 0 */
static prx_cf32 *em_window(const qpsk_stages *s, const void *rows, size_t stride, unsigned c,
                           int64_t lo, int64_t hi, int64_t n_total, prx_cf32 outside) {
  prx_cf32 *x = malloc((size_t)(hi - lo) * sizeof *x);
  const double f = em_mix ? em_mix[c] : 0, tz = em_mix ? qpsk_mix_turns(f, lo) : 0;
  for (int64_t t = 0; t < hi - lo; t++) {
    int64_t i = lo + t;
    int in = i >= 0 && i < n_total;
    prx_cf32 v = outside;
    if (in) {
      v = em_read(s, rows, stride, c, i);
      if (em_mix) v = qpsk_mix_sample(v, tz, f, t);
      if (!isfinite(v.re) || !isfinite(v.im)) v.re = v.im = 0;
    }
    x[t] = v;
  }
  return x;
}

static prx_status em_pre_stage(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                               int64_t n_total, prx_cf32 *grid, double *mom, unsigned *bad,
                               cudaStream_t stream) {
  (void)stream;
  const int64_t L = s->L;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM;
  for (unsigned c = 0; c < s->C; c++)
    for (unsigned j = 0; j < s->nblk; j++) {
      const size_t o = (size_t)c * s->nblk + j;
      const int64_t b = b0 + j, m0 = 4 * b * L;
      int64_t lo, hi;
      qpsk_fir_window(em_pre, m0 - QPSK_GM, m0 + 4 * L + QPSK_GM, &lo, &hi);
      const prx_cf32 zero = {0, 0};
      prx_cf32 *x = em_window(s, rows, stride, c, lo, hi, n_total, zero);
      qpsk_fir_run(em_pre, x, lo, m0 - QPSK_GM, ng, grid + o * ng, NULL, 0);
      free(x);
      int64_t a = qpsk_count_below((double)b * (double)L * s->sps, 1.0);
      int64_t e = qpsk_count_below((double)(b + 1) * (double)L * s->sps, 1.0);
      if (e > n_total) e = n_total;
      double *m = mom + 4 * o;
      m[0] = m[1] = m[2] = m[3] = 0;
      bad[o] = 0;
      const double f = em_mix ? em_mix[c] : 0, tz = em_mix ? qpsk_mix_turns(f, a) : 0;
      for (int64_t i = a; i < e; i++) {
        prx_cf32 v = em_read(s, rows, stride, c, i);
        if (em_mix) v = qpsk_mix_sample(v, tz, f, i - a);
        if (!isfinite(v.re) || !isfinite(v.im)) {
          bad[o]++;
          continue;
        }
        m[0] += v.re;
        m[1] += v.im;
        m[2] += (double)v.re * v.re + (double)v.im * v.im;
        m[3] += 1;
      }
    }
  return PRX_OK;
}

static prx_status em_om(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, prx_cf32 *grid,
                        qpsk_om_out *out, cudaStream_t stream) {
  (void)stream;
  const int64_t L = s->L, Ls4 = 4 * (int64_t)s->Ls;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM;
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const qpsk_om_in p = in[o];
    prx_cf32 *z = grid + o * ng;
    qpsk_om_out *r = &out[o];
    memset(r, 0, sizeof *r);
    const int64_t m0 = 4 * (b0 + (int64_t)(o % s->nblk)) * L;
    int64_t g_hi = m0 + 4 * L;
    if (g_hi > p.g_hi) g_hi = p.g_hi;
    r->om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
    for (unsigned j = 0; j <= s->nsub; j++) {
      int64_t a = m0 + Ls4 * j, e = j < s->nsub ? a + Ls4 : m0 + 4 * L;
      if (e > g_hi) e = g_hi;
      if (e <= a) break;
      double *x2 = r->osub[j];
      qpsk_om_accum(z + QPSK_GM + (a - m0), (size_t)(e - a), a, p.D, p.gain, x2);
      r->osub_t[j] = (double)(a + e - 1) / 8.0;
      r->nsub = j + 1;
      if (j < s->nsub && e - a == Ls4)
        for (unsigned l = 0; l < s->nlags && (1u << l) <= j; l++) {
          const double *q = r->osub[j - (1u << l)];
          r->corr[l][0] += x2[0] * q[0] + x2[1] * q[1];
          r->corr[l][1] += x2[1] * q[0] - x2[0] * q[1];
        }
    }
    double unused[2] = {0, 0};
    int64_t done = g_hi > m0 ? g_hi - m0 : 0;
    qpsk_om_accum(z, QPSK_GM, m0 - QPSK_GM, p.D, p.gain, unused);
    qpsk_om_accum(z + QPSK_GM + done, ng - QPSK_GM - (size_t)done, m0 + done, p.D, p.gain, unused);
  }
  return PRX_OK;
}

/* stage x4 over every block's grid: the grid as om leaves it (in NULL), or as pre leaves it with
 * each value read levelled by the block's O&M input (the folded path) */
static void em_x4_blocks(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                         const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w, size_t w_stride) {
  const int64_t L = s->L;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM;
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const qpsk_mf_timing *t = &blk[o].t;
    prx_cf32 *dst = w + (o / s->nblk) * w_stride + w0[o];
    for (int64_t k = t->k0; k < t->k1; k++) {
      int64_t g;
      float cf[4];
      qpsk_x4_tap(t, L, QPSK_GM, k, &g, cf);
      const prx_cf32 *z = grid + o * ng + g - 1;
      if (!in) {
        qpsk_x4_interp(z, cf, 1, dst + (k - t->k0));
        continue;
      }
      prx_cf32 v[4];
      for (int i = 0; i < 4; i++) v[i] = qpsk_om_level(z[i], in[o].D, in[o].gain);
      dst[k - t->k0] = qpsk_x4_one(v, cf);
    }
  }
}
static prx_status em_x4(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                        const prx_cf32 *grid, prx_cf32 *w, size_t w_stride, cudaStream_t stream) {
  (void)stream;
  em_x4_blocks(s, blk, w0, NULL, grid, w, w_stride);
  return PRX_OK;
}

/* om folded into pre: pre, then each block's sums over its own grid below g_hi per sub-block
 * (the last one the rest of the block), as qpsk_oms_add forms them */
static prx_status em_pre_om(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                            int64_t n_total, int64_t g_hi, prx_cf32 *grid, double *mom,
                            unsigned *bad, double *omsum, cudaStream_t stream) {
  const int64_t L = s->L, Ls4 = 4 * (int64_t)s->Ls;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM, per = ((size_t)s->nsub + 1) * QPSK_OMS;
  em_pre_stage(s, rows, stride, b0, n_total, grid, mom, bad, stream);
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const int64_t m0 = 4 * (b0 + (int64_t)(o % s->nblk)) * L;
    double *sums = omsum + o * per;
    memset(sums, 0, per * sizeof *sums);
    for (int64_t q = 0; q < 4 * L && m0 + q < g_hi; q++) {
      int64_t j = q / Ls4;
      if (j > s->nsub) j = s->nsub;
      qpsk_oms_add(grid[o * ng + QPSK_GM + (size_t)q], m0 + q, sums + (size_t)j * QPSK_OMS);
    }
  }
  return PRX_OK;
}
static prx_status em_om_sums(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in,
                             const double *omsum, qpsk_om_out *out, cudaStream_t stream) {
  (void)stream;
  const size_t per = ((size_t)s->nsub + 1) * QPSK_OMS;
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++)
    qpsk_om_combine(omsum + o * per, b0 + (int64_t)(o % s->nblk), s->L, s->nsub, s->Ls, s->nlags,
                    &in[o], &out[o]);
  return PRX_OK;
}
static prx_status em_x4_level(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                              const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                              size_t w_stride, cudaStream_t stream) {
  (void)stream;
  em_x4_blocks(s, blk, w0, in, grid, w, w_stride);
  return PRX_OK;
}

static prx_status em_mf(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                        int64_t n_total, const qpsk_mf_block *blk, prx_cf32 *sym, double *sums,
                        cudaStream_t stream) {
  (void)stream;
  (void)b0;
  const int64_t L = s->L;
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const qpsk_mf_block *p = &blk[o];
    const qpsk_mf_timing *t = &p->t;
    const int64_t n = t->k1 - t->k0;
    double *sm = sums + 5 * o;
    memset(sm, 0, 5 * sizeof *sm);
    if (n <= 0) continue;
    int64_t lo, hi;
    qpsk_mf_window_of(t->b, L, s->sps, em_mfir->c, em_mfir->ntaps, &lo, &hi);
    const prx_cf32 dc = {p->dc[0], p->dc[1]};
    prx_cf32 *x = em_window(s, rows, stride, (unsigned)(o / s->nblk), lo, hi, n_total, dc);
    qpsk_derotate(x, x, (size_t)(hi - lo), p->theta, p->omega, dc, p->gain);
    prx_cf32 *y = sym + o * s->Lmax;
    for (int64_t k = t->k0; k < t->k1; k++)
      qpsk_fir_run_at(em_mfir, x, qpsk_mf_position(t, L, s->sps, lo, k), 1, 1, y + (k - t->k0),
                      NULL, 0);
    free(x);
    qpsk_sums su;
    memset(&su, 0, sizeof su);
    qpsk_sums_accum(y, (size_t)n, &su);
    sm[0] = su.s4[0];
    sm[1] = su.s4[1];
    sm[2] = su.m2;
    sm[3] = su.m4;
    sm[4] = su.n;
  }
  return PRX_OK;
}

static prx_status em_out(const qpsk_stages *s, const qpsk_mf_block *blk, const qpsk_out_block *ob,
                         const prx_cf32 *sym, uint8_t *bits, size_t bits_stride,
                         cudaStream_t stream) {
  (void)stream;
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const int64_t n = blk[o].t.k1 - blk[o].t.k0;
    if (n <= 0) continue;
    uint8_t *dst = bits + (o / s->nblk) * bits_stride + 2 * ob[o].out0;
    const prx_cf32 *y = sym + o * s->Lmax;
    if (ob[o].diff) {
      qpsk_diff_prev p;
      qpsk_diff_reference(&p);
      p.quad = ob[o].quad0;
      qpsk_decide_diff(y, (size_t)n, ob[o].rot, 1.0f, &p, dst, NULL);
    } else {
      qpsk_decide_coherent(y, (size_t)n, ob[o].rot, 1.0f, dst, NULL);
    }
  }
  return PRX_OK;
}

/* the CFO stage (the stage table's cfo): stage_cfo's steps on the window, with the kernels'
 * rule that a window of more than S values is taken as its first S */
static unsigned em_S, em_nfft;
static double em_max_nu;
static prx_status em_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu) {
  em_S = S;
  em_nfft = nfft;
  em_max_nu = max_nu;
  /* the stage's rows (cfo_rows), C of nfft points */
  free(s->d_cfo_buf);
  s->d_cfo_buf = calloc((size_t)s->C * nfft, sizeof(prx_cf32));
  s->cfo_S = S;
  s->cfo_nfft = s->cfo_len = nfft;
  return s->d_cfo_buf ? PRX_OK : prx_fail(PRX_ERR_NOMEM, "emulated: CFO rows");
}
static prx_status em_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                         const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream) {
  (void)stream;
  fftwf_complex *win = fftwf_alloc_complex(em_nfft), *spec = fftwf_alloc_complex(em_nfft);
  fftwf_plan plan = fftwf_plan_dft_1d((int)em_nfft, win, spec, FFTW_FORWARD, FFTW_ESTIMATE);
  for (unsigned c = 0; c < s->C; c++) {
    const unsigned n = in[c].n < em_S ? in[c].n : em_S;
    memset(win, 0, em_nfft * sizeof *win);
    memcpy(win, w + c * w_stride + in[c].w0, n * sizeof(prx_cf32));
    fftwf_execute(plan);
    double nu = qpsk_spectrum_peak((const prx_cf32 *)spec, em_nfft, em_max_nu); /* 1/8 bin */
    out[c].nu0 = nu;
    nu = qpsk_periodogram_refine((const prx_cf32 *)win, n, nu, 1.0 / em_nfft, (prx_cf32 *)spec);
    out[c].nu = nu;
    out[c].f = nu / (4 * (1 + in[c].e / (1 - in[c].e)));
  }
  fftwf_destroy_plan(plan);
  fftwf_free(win);
  fftwf_free(spec);
  return PRX_OK;
}
/* the CFO stage's rows written by x4 (the stage table's cfo_rows, x4_rows, cfo_fed): x4 into w,
 * then each channel's span values from its first block's w0 on into its row (those below S); the
 * window for the transform from the rows (the span's values) after the take values of w before
 * them (the reach-back), so that the driver's rows, offsets and windows are held to what cfo reads
 * from w */
static prx_status em_cfo_rows(const qpsk_stages *s, prx_cf32 **rows, size_t *row_stride) {
  if (!s->d_cfo_buf) return prx_fail(PRX_ERR_INVALID, "emulated: cfo_rows before cfo_setup");
  *rows = s->d_cfo_buf;
  *row_stride = s->cfo_len;
  return PRX_OK;
}
static prx_status em_x4_rows(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                             const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                             size_t w_stride, prx_cf32 *rows, size_t row_stride,
                             cudaStream_t stream) {
  (void)stream;
  em_x4_blocks(s, blk, w0, in, grid, w, w_stride);
  for (size_t o = 0; o < (size_t)s->C * s->nblk; o++) {
    const size_t c = o / s->nblk;
    const int64_t base = w0[c * s->nblk], n = blk[o].t.k1 - blk[o].t.k0;
    for (int64_t i = w0[o] - base; i < w0[o] - base + n && i < (int64_t)s->cfo_S; i++)
      rows[c * row_stride + (size_t)i] = w[c * w_stride + (size_t)(base + i)];
  }
  return PRX_OK;
}
static prx_status em_cfo_fed(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                             const int64_t *w0, const qpsk_cfo_in *in, qpsk_cfo_out *out,
                             cudaStream_t stream) {
  prx_cf32 *win = malloc((size_t)s->C * em_S * sizeof *win);
  qpsk_cfo_in *at = malloc(s->C * sizeof *at);
  if (!win || !at) {
    free(win);
    free(at);
    return prx_fail(PRX_ERR_NOMEM, "emulated: CFO windows");
  }
  const prx_cf32 *rows = s->d_cfo_buf;
  for (unsigned c = 0; c < s->C; c++) {
    const unsigned n = in[c].n < em_S ? in[c].n : em_S;
    const int64_t take = w0[(size_t)c * s->nblk] - in[c].w0;
    CHECK(take >= 0 && take <= n, "cfo_fed: channel %u's window takes %lld values before its span",
          c, (long long)take);
    if (take < 0 || take > n) continue;
    memcpy(win + (size_t)c * em_S, w + c * w_stride + in[c].w0, (size_t)take * sizeof *win);
    memcpy(win + (size_t)c * em_S + take, rows + (size_t)c * s->cfo_len,
           (n - (size_t)take) * sizeof *win);
    at[c] = in[c];
    at[c].w0 = 0;
  }
  /* cfo on the windows built (one w row each) */
  const prx_status st = em_cfo(s, win, em_S, at, out, stream);
  free(win);
  free(at);
  return st;
}
static int em_cfo_off; /* cfo_setup answers PRX_ERR_UNSUPPORTED: the driver's CPU CFO stage */
static prx_status em_cfo_setup_off(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu) {
  (void)s, (void)S, (void)nfft, (void)max_nu;
  return prx_fail(PRX_ERR_UNSUPPORTED, "emulated: no CFO stage");
}
static prx_status em_row_copy(prx_cf32 *w, size_t stride, const int64_t *ops, size_t C,
                              void *stream) {
  (void)stream;
  for (size_t c = 0; c < C; c++) {
    const int64_t *o = ops + 3 * c;
    CHECK(o[2] == 0 || o[0] + o[2] <= o[1] || o[1] + o[2] <= o[0], "row_copy: ranges overlap");
    memmove(w + c * stride + o[1], w + c * stride + o[0], (size_t)o[2] * sizeof *w);
  }
  return PRX_OK;
}

static prx_status em_dev_alloc(int device, size_t bytes, void **p) {
  (void)device;
  *p = NULL;
  if (em_alloc_most && bytes > em_alloc_most)
    return prx_fail(PRX_ERR_NOMEM, "emulated device: %zu bytes refused", bytes);
  *p = calloc(1, bytes ? bytes : 1);
  return *p ? PRX_OK : prx_fail(PRX_ERR_NOMEM, "emulated device: out of memory");
}
static int em_stream_obj;
static prx_status em_stream_create(int device, void **stream) {
  (void)device;
  *stream = &em_stream_obj;
  return PRX_OK;
}
static void em_stream_destroy(void *s) { (void)s; }
static prx_status em_copy(void *dst, const void *src, size_t bytes, void *stream) {
  (void)stream;
  if (bytes) memmove(dst, src, bytes);
  return PRX_OK;
}
static prx_status em_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height, void *stream) {
  (void)stream;
  CHECK(width <= dpitch && width <= spitch, "copy2d: width %zu beyond a pitch (%zu, %zu)", width,
        dpitch, spitch);
  for (size_t r = 0; r < height && width; r++)
    memmove((uint8_t *)dst + r * dpitch, (const uint8_t *)src + r * spitch, width);
  return PRX_OK;
}
static prx_status em_sync(void *stream) {
  (void)stream;
  return PRX_OK;
}
static prx_status em_ends(const void *blk, const prx_cf32 *sym, size_t n_blk, unsigned Lmax,
                          qpsk_block_end *ends, void *stream) {
  (void)stream;
  const qpsk_mf_block *b = blk;
  for (size_t i = 0; i < n_blk; i++)
    ends[i] = qpsk_block_end_of(sym + i * Lmax, b[i].t.k1 - b[i].t.k0);
  return PRX_OK;
}
static void *em_host_alloc(size_t bytes) { return malloc(bytes); }
static void em_host_free(void *p) { free(p); }

/* ---- streams and events: the work on a stream deferred ----
 * With events on, each work item on a stream the driver made is queued and runs only when the
 * host or another stream needs it done: at sync (the stream's), when a stream waits for an event
 * recorded after it, or at once on an eager stream. The driver's main stream is lazy; its second
 * stream (made after the stage kernels' create) is eager or lazy as the run asks: eager, an item
 * runs at its issue, before the main stream's earlier work unless an event orders it after
 * (a missing wait reads a ring or chunk not yet copied, or overwrites what the main stream has
 * still to read); lazy, the host sees nothing of its work before it syncs. Either way the
 * results are the CPU bank's only if the driver orders the streams as the device would need. */
typedef struct em_op em_op;
typedef struct em_stream em_stream;
struct em_op {
  em_op *next;
  void (*run)(const em_op *);
  qpsk_stages s;
  const void *c[6];
  void *p[4];
  size_t z[4];
  int64_t i[3];
  qpsk_serial_cfg cf; /* the serial passes' (their records: c, p and q) */
  void *q[8];
  em_stream *wait_on; /* a stream_wait: the stream and its item count at the event */
  uint64_t wait_n;
};
struct em_stream {
  em_op *head, *tail;
  uint64_t issued, done;
  int eager;
};
typedef struct {
  em_stream *s;
  uint64_t n;
} em_event;
static int em_events;     /* the module has events (and defers the streams' work) */
static int em_eager_next; /* the driver's second stream runs eagerly */

static void em_run_until(em_stream *q, uint64_t n) {
  while (q->done < n && q->head) {
    em_op *o = q->head;
    q->head = o->next;
    if (!q->head) q->tail = NULL;
    if (o->wait_on)
      em_run_until(o->wait_on, o->wait_n);
    else
      o->run(o);
    q->done++;
    free(o);
  }
}
/* a new item for stream (NULL: none, or a stream not the driver's: run it at once) */
static em_op *em_op_new(void) { return calloc(1, sizeof(em_op)); }
static void em_issue(void *stream, em_op *o) {
  em_stream *q = stream;
  if (!em_events || !q || q == (void *)&em_stream_obj) {
    o->run(o);
    free(o);
    return;
  }
  o->next = NULL;
  if (q->tail)
    q->tail->next = o;
  else
    q->head = o;
  q->tail = o;
  q->issued++;
  if (q->eager) em_run_until(q, q->issued);
}
static prx_status em_stream_create_d(int device, void **stream) {
  if (!em_events) return em_stream_create(device, stream);
  em_stream *q = calloc(1, sizeof *q);
  q->eager = em_eager_next && em_created;
  *stream = q;
  return PRX_OK;
}
static void em_stream_destroy_d(void *s) {
  if (!em_events || s == (void *)&em_stream_obj) {
    em_stream_destroy(s);
    return;
  }
  em_stream *q = s;
  em_run_until(q, q->issued);
  free(q);
}
static prx_status em_sync_d(void *stream) {
  em_stream *q = stream;
  if (em_events && q && q != (void *)&em_stream_obj) em_run_until(q, q->issued);
  return em_sync(stream);
}
static prx_status em_event_create(int device, void **ev) {
  (void)device;
  *ev = calloc(1, sizeof(em_event));
  return PRX_OK;
}
static void em_event_destroy(void *ev) { free(ev); }
static prx_status em_event_record(void *ev, void *stream) {
  em_event *e = ev;
  e->s = stream;
  e->n = ((em_stream *)stream)->issued;
  return PRX_OK;
}
static prx_status em_stream_wait(void *stream, void *ev) {
  const em_event *e = ev;
  em_op *o = em_op_new();
  o->wait_on = e->s;
  o->wait_n = e->n;
  em_issue(stream, o);
  return PRX_OK;
}

#define EM_ST (cudaStream_t) NULL
static void r_pre(const em_op *o) {
  em_pre_stage(&o->s, o->c[0], o->z[0], o->i[0], o->i[1], o->p[0], o->p[1], o->p[2], EM_ST);
}
static prx_status d_pre(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                        int64_t n_total, prx_cf32 *grid, double *mom, unsigned *bad,
                        cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){
      .run = r_pre, .s = *s, .c = {rows}, .z = {stride}, .i = {b0, n_total}, .p = {grid, mom, bad}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_pre_om(const em_op *o) {
  em_pre_om(&o->s, o->c[0], o->z[0], o->i[0], o->i[1], o->i[2], o->p[0], o->p[1], o->p[2], o->p[3],
            EM_ST);
}
static prx_status d_pre_om(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                           int64_t n_total, int64_t g_hi, prx_cf32 *grid, double *mom,
                           unsigned *bad, double *omsum, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_pre_om,
               .s = *s,
               .c = {rows},
               .z = {stride},
               .i = {b0, n_total, g_hi},
               .p = {grid, mom, bad, omsum}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_om(const em_op *o) { em_om(&o->s, o->i[0], o->c[0], o->p[0], o->p[1], EM_ST); }
static prx_status d_om(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, prx_cf32 *grid,
                       qpsk_om_out *out, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_om, .s = *s, .i = {b0}, .c = {in}, .p = {grid, out}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_om_sums(const em_op *o) {
  em_om_sums(&o->s, o->i[0], o->c[0], o->c[1], o->p[0], EM_ST);
}
static prx_status d_om_sums(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in,
                            const double *omsum, qpsk_om_out *out, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_om_sums, .s = *s, .i = {b0}, .c = {in, omsum}, .p = {out}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_x4(const em_op *o) {
  em_x4(&o->s, o->c[0], o->c[1], o->c[2], o->p[0], o->z[0], EM_ST);
}
static prx_status d_x4(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                       const prx_cf32 *grid, prx_cf32 *w, size_t w_stride, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_x4, .s = *s, .c = {blk, w0, grid}, .p = {w}, .z = {w_stride}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_x4_level(const em_op *o) {
  em_x4_level(&o->s, o->c[0], o->c[1], o->c[2], o->c[3], o->p[0], o->z[0], EM_ST);
}
static prx_status d_x4_level(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                             const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                             size_t w_stride, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_x4_level, .s = *s, .c = {blk, w0, in, grid}, .p = {w}, .z = {w_stride}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_mf(const em_op *o) {
  em_mf(&o->s, o->c[0], o->z[0], o->i[0], o->i[1], o->c[1], o->p[0], o->p[1], EM_ST);
}
static prx_status d_mf(const qpsk_stages *s, const void *rows, size_t stride, int64_t b0,
                       int64_t n_total, const qpsk_mf_block *blk, prx_cf32 *sym, double *sums,
                       cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){
      .run = r_mf, .s = *s, .c = {rows, blk}, .z = {stride}, .i = {b0, n_total}, .p = {sym, sums}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_out(const em_op *o) {
  em_out(&o->s, o->c[0], o->c[1], o->c[2], o->p[0], o->z[0], EM_ST);
}
static prx_status d_out(const qpsk_stages *s, const qpsk_mf_block *blk, const qpsk_out_block *ob,
                        const prx_cf32 *sym, uint8_t *bits, size_t bits_stride,
                        cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_out, .s = *s, .c = {blk, ob, sym}, .p = {bits}, .z = {bits_stride}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_cfo(const em_op *o) { em_cfo(&o->s, o->c[0], o->z[0], o->c[1], o->p[0], EM_ST); }
static prx_status d_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                        const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_cfo, .s = *s, .c = {w, in}, .z = {w_stride}, .p = {out}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_x4_rows(const em_op *o) {
  em_x4_rows(&o->s, o->c[0], o->c[1], o->c[2], o->c[3], o->p[0], o->z[0], o->p[1], o->z[1], EM_ST);
}
static prx_status d_x4_rows(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                            const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                            size_t w_stride, prx_cf32 *rows, size_t row_stride,
                            cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_x4_rows,
               .s = *s,
               .c = {blk, w0, in, grid},
               .p = {w, rows},
               .z = {w_stride, row_stride}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_cfo_fed(const em_op *o) {
  em_cfo_fed(&o->s, o->c[0], o->z[0], o->c[1], o->c[2], o->p[0], EM_ST);
}
static prx_status d_cfo_fed(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                            const int64_t *w0, const qpsk_cfo_in *in, qpsk_cfo_out *out,
                            cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_cfo_fed, .s = *s, .c = {w, w0, in}, .z = {w_stride}, .p = {out}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_copy(const em_op *o) { em_copy(o->p[0], o->c[0], o->z[0], NULL); }
static prx_status d_copy(void *dst, const void *src, size_t bytes, void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_copy, .p = {dst}, .c = {src}, .z = {bytes}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_copy2d(const em_op *o) {
  em_copy2d(o->p[0], o->z[0], o->c[0], o->z[1], o->z[2], o->z[3], NULL);
}
static prx_status d_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_copy2d, .p = {dst}, .c = {src}, .z = {dpitch, spitch, width, height}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_ends(const em_op *o) {
  em_ends(o->c[0], o->c[1], o->z[0], (unsigned)o->z[1], o->p[0], NULL);
}
static prx_status d_ends(const void *blk, const prx_cf32 *sym, size_t n_blk, unsigned Lmax,
                         qpsk_block_end *ends, void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_ends, .c = {blk, sym}, .z = {n_blk, Lmax}, .p = {ends}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_row_copy(const em_op *o) { em_row_copy(o->p[0], o->z[0], o->c[0], o->z[1], NULL); }
static prx_status d_row_copy(prx_cf32 *w, size_t stride, const int64_t *ops, size_t C_,
                             void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_row_copy, .p = {w}, .z = {stride, C_}, .c = {ops}};
  em_issue(stream, o);
  return PRX_OK;
}

/* the serial passes (qpsk_serial.h): the level kernel's warp per channel as a team of one lane
 * (qpsk_sr_level_ch: the same values), each channel in turn */
static void r_level(const em_op *o) {
  for (size_t c = 0; c < o->z[0]; c++)
    qpsk_sr_level_ch(&o->cf, c, o->z[1], o->i[0], o->i[1], o->c[0], o->q[0], o->q[1], o->q[2]);
}
static prx_status d_level(const qpsk_serial_cfg *cf, size_t C_, size_t nb, int64_t s, int64_t g_hi,
                          const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp,
                          qpsk_om_in *omi, void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){
      .run = r_level, .cf = *cf, .z = {C_, nb}, .i = {s, g_hi}, .c = {mom}, .q = {st, sp, omi}};
  em_issue(stream, o);
  return PRX_OK;
}
/* the timing and NCO kernels' warps as teams of one lane (the lanes' shares of the blocks run
 * by the one lane in turn: the same values) */
static void r_timing(const em_op *o) {
  double om[2 * QPSK_SR_MAXB], en[QPSK_SR_MAXB], med[QPSK_SR_MAXB + 1];
  const qpsk_sr_team tm = {0, 1, om, en, med};
  for (size_t c = 0; c < o->z[0]; c++)
    qpsk_sr_timing_ch(&o->cf, c, o->z[1], o->i[0], (int)o->z[2], o->i[1], o->c[0], o->q[0], o->q[1],
                      o->q[2], o->q[3], o->q[4], o->q[5], o->q[6], &tm);
}
static prx_status d_timing(const qpsk_serial_cfg *cf, size_t C_, size_t nb, int64_t b0,
                           int flushing, int64_t n_total, const qpsk_om_out *om,
                           qpsk_serial_state *st, qpsk_serial_span *sp, qpsk_serial_blk *tb,
                           qpsk_mf_block *mb, int64_t *w0, int64_t *ops, qpsk_cfo_in *cfi,
                           void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_timing,
               .cf = *cf,
               .z = {C_, nb, (size_t)flushing},
               .i = {b0, n_total},
               .c = {om},
               .q = {st, sp, tb, mb, w0, ops, cfi}};
  em_issue(stream, o);
  return PRX_OK;
}
static void r_nco(const em_op *o) {
  const qpsk_sr_team tm = {0, 1, NULL, NULL, NULL};
  for (size_t c = 0; c < o->z[0]; c++)
    qpsk_sr_nco_ch(&o->cf, c, o->z[1], o->i[0], o->i[1], o->c[0], o->q[0], o->q[1], o->q[2], &tm);
}
static prx_status d_nco(const qpsk_serial_cfg *cf, size_t C_, size_t nb, int64_t s, int64_t b0,
                        const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
                        qpsk_mf_block *mb, void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_nco, .cf = *cf, .z = {C_, nb}, .i = {s, b0}, .c = {co}, .q = {st, sp, mb}};
  em_issue(stream, o);
  return PRX_OK;
}
/* the phase pass: each channel's team in turn, its lanes one after the other within each step
 * (the GPU's warp of 32; here 1, 3 or 32 lanes by channel, so that the blocks' sharing out is
 * checked at several team sizes) */
static void r_phase(const em_op *o) {
  const qpsk_ph_args a = {(unsigned)o->z[2], (int)o->i[0], (int)o->i[1], o->z[3], o->z[1],
                          o->c[0],           o->c[1],      o->c[2],      o->c[3], o->c[4],
                          o->c[5],           o->q[0],      o->q[1],      o->q[2], o->q[3]};
  static const unsigned lanes[3] = {32, 1, 3};
  qpsk_ph_scratch scr[QPSK_SR_MAXB];
  qpsk_ph_tail tl;
  CHECK(o->z[1] <= QPSK_SR_MAXB, "the phase pass: %zu blocks a span", o->z[1]);
  for (size_t c = 0; c < o->z[0]; c++) {
    const unsigned n = lanes[c % 3];
    memset(scr, 0xA5, sizeof scr); /* nothing carried over from the channel before */
    memset(&tl, 0xA5, sizeof tl);
    for (unsigned step = 0; step < QPSK_PH_STEPS; step++)
      for (unsigned lane = 0; lane < n; lane++) qpsk_ph_span_step(&a, c, step, lane, n, scr, &tl);
    qpsk_ph_span_end(&a, c, &tl);
  }
}
static prx_status d_phase(unsigned L, size_t Lmax, size_t C_, size_t nb, int diff, int first,
                          const double *sums, const double *mom, const unsigned *bad,
                          const qpsk_serial_blk *tb, const qpsk_serial_span *sp,
                          const prx_cf32 *sym, struct qpsk_phase_state *st,
                          struct qpsk_phase_out *po, qpsk_out_block *ob, int64_t *off,
                          void *stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_phase,
               .z = {C_, nb, L, Lmax},
               .i = {diff, first},
               .c = {sums, mom, bad, tb, sp, sym},
               .q = {st, po, ob, off}};
  em_issue(stream, o);
  return PRX_OK;
}
/* the CFO alias test's measure: each channel's samples in order, as the kernel's thread */
static void r_alias(const em_op *o) {
  const double a = qpsk_alias_gain(o->s.sps);
  for (unsigned c = 0; c < o->s.C; c++) {
    qpsk_alias_sums *st = (qpsk_alias_sums *)o->p[0] + c;
    if (o->i[2]) memset(st, 0, sizeof *st);
    prx_cf32 *x = em_window(&o->s, o->c[0], o->z[0], c, o->i[0], o->i[0] + o->i[1], INT64_MAX,
                            (prx_cf32){0, 0});
    for (int64_t t = 0; t < o->i[1]; t++) qpsk_alias_step(st, a, x[t].re, x[t].im);
    free(x);
  }
}
static prx_status d_alias(const qpsk_stages *s, const void *rows, size_t stride, int64_t s0,
                          size_t n, int fresh, qpsk_alias_sums *sums, cudaStream_t stream) {
  em_op *o = em_op_new();
  *o = (em_op){.run = r_alias,
               .s = *s,
               .c = {rows},
               .z = {stride},
               .i = {s0, (int64_t)n, fresh},
               .p = {sums}};
  em_issue(stream, o);
  return PRX_OK;
}
static const prx_qpsk_serial_cuda em_serial = {d_level, d_timing, d_nco, d_phase};

static const prx_qpsk_bank_cuda em_bank = {NULL,
                                           NULL,
                                           NULL,
                                           NULL,
                                           em_dev_alloc,
                                           free,
                                           em_stream_create_d,
                                           em_stream_destroy_d,
                                           d_copy,
                                           d_copy2d,
                                           em_sync_d,
                                           d_ends,
                                           d_row_copy,
                                           d_copy2d /* copy2d_dev: a copy between device rows */};
static const prx_qpsk_stages_cuda em_stages = {
    em_create,  em_destroy,  d_pre,        d_mf,      d_om,     d_x4,
    d_out,      em_mixf,     em_cfo_setup, d_cfo,     d_pre_om, d_om_sums,
    d_x4_level, em_cfo_rows, d_x4_rows,    d_cfo_fed, d_alias};
static const prx_qpsk_stages_cuda em_stages_cpu_cfo = {
    em_create, em_destroy, d_pre,     d_mf,       d_om, d_x4, d_out, em_mixf, em_cfo_setup_off,
    d_cfo,     d_pre_om,   d_om_sums, d_x4_level, NULL, NULL, NULL,  d_alias};
/* with events (em_events) and without (the driver then runs every stage on one stream); no
 * pinning in place, no compute mode: the entries not named are NULL */
#define EM_MODULE(stages_)                                                                         \
  .abi = PRX_CUDA_MODULE_ABI, .version = "emulated", .qpsk_bank = &em_bank,                        \
  .qpsk_stages = &(stages_), .host_alloc = em_host_alloc, .host_free = em_host_free,               \
  .qpsk_serial = &em_serial
#define EM_EVENTS                                                                                  \
  .event_create = em_event_create, .event_destroy = em_event_destroy,                              \
  .event_record = em_event_record, .stream_wait = em_stream_wait
static const prx_cuda_module em_module = {EM_MODULE(em_stages)};
static const prx_cuda_module em_module_cpu_cfo = {EM_MODULE(em_stages_cpu_cfo)};
static const prx_cuda_module em_module_ev = {EM_MODULE(em_stages), EM_EVENTS};
static const prx_cuda_module em_module_cpu_cfo_ev = {EM_MODULE(em_stages_cpu_cfo), EM_EVENTS};

/* ---- the runs ---- */

#define C 3
static const double esn0[C] = {6, 14, 25};

typedef struct {
  uint8_t *bits;
  float *llrs;
  size_t n_bytes, n_sym, n_blk;
  double cfo[64];         /* the first blocks' CFO estimates, Hz */
  prx_qpsk_block est[64]; /* and the blocks' estimates in full */
  double nv;              /* sum of the blocks' noise variances (unit signal) */
  size_t nv_n;            /* over nv_n blocks */
  prx_qpsk_stats st;      /* the channel's stats after the flush */
  size_t k_call[64];      /* the first calls' estimates, how many (SIZE_MAX: not read) */
} chan_out;

static void outs_free(chan_out *o);

/* A device call (host memory here) on rows as the receiver holds them: the bank's history before
 * sample i of the stream rows (at most what it asks for), then the chunk of m samples (flush:
 * the stream's end with those samples; end: held, prx_qpsk_bank_gpu_hold_end), in a fresh buffer
 * poisoned after them. */
static prx_status kept_call(prx_qpsk_bank *b, const void *rows, size_t pitch, size_t sz, size_t i,
                            size_t m, int flush, int end, const prx_qpsk_bank_out *out) {
  const size_t h = prx_qpsk_bank_gpu_history(b->drv), kept = i < h ? i : h, wp = kept + m + 16;
  uint8_t *w = malloc(C * wp * sz);
  memset(w, 0xff, C * wp * sz); /* (NaN: a sample read outside is not the stream's) */
  for (unsigned c = 0; c < C; c++)
    memcpy(w + c * wp * sz, (const uint8_t *)rows + (c * pitch + i - kept) * sz, (kept + m) * sz);
  if (end) prx_qpsk_bank_gpu_hold_end(b->drv);
  prx_status st = prx_qpsk_bank_gpu_run(b, w + kept * sz, wp, m, kept, 1, flush, out, 0, NULL);
  free(w);
  return st;
}

/* em_before's stream: the first n0 samples of the rows in calls of 7777 with the history in the
 * rows, ended in the flush's call with its last samples, held (1), or cut short by the bank's
 * reset past n0 / 2, after a call whose spans' reports are still pending where the driver defers
 * them (2) */
static void stream_before(prx_qpsk_bank *b, const void *rows, size_t pitch, size_t sz, size_t n0,
                          const prx_qpsk_bank_out *out) {
  for (size_t i = 0; i < n0;) {
    size_t m = n0 - i < 7777 ? n0 - i : 7777;
    int last = i + m == n0;
    if (last && em_before == 2) break; /* (reset after the last call's spans) */
    CHECK(kept_call(b, rows, pitch, sz, i, m, last, last, out) == PRX_OK, "the stream before: %s",
          prx_last_error());
    i += m;
    if (em_before == 2 && i >= n0 / 2 && prx_qpsk_bank_gpu_pending_symbols(b->drv)) break;
  }
  if (em_before == 2) {
    em_reset_pending += prx_qpsk_bank_gpu_pending_symbols(b->drv) > 0;
    prx_qpsk_bank_reset(b);
  }
}

/* the rows through a CPU bank, or through one driven by the emulated module (chunk_seed 0: one
 * call) */
static void run(int driver, prx_qpsk_config qc, prx_format fmt, int packed, int llrs,
                const double *mix, const void *rows, size_t pitch, size_t n, uint64_t chunk_seed,
                chan_out *o) {
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = qc;
  bc.channels = C;
  bc.row_format = fmt;
  bc.packed = packed;
  bc.backend = PRX_BACKEND_CPU;
  bc.threads = 2;
  bc.mix_hz = mix;
  prx_qpsk_bank *b = NULL;
  CHECK_OK(prx_qpsk_bank_create(&bc, &b));
  if (!b) return;
  double mixc[C];
  for (unsigned c = 0; c < C && mix; c++) mixc[c] = mix[c] / qc.sample_rate;
  em_created = 0;
  const prx_cuda_module *mod = em_events ? (em_cfo_off ? &em_module_cpu_cfo_ev : &em_module_ev)
                                         : (em_cfo_off ? &em_module_cpu_cfo : &em_module);
  if (driver) {
    CHECK_OK(prx_qpsk_bank_gpu_create(b, mod, mix ? mixc : NULL));
    prx_qpsk_bank_gpu_set_fold(b->drv, em_fold); /* (possible at sps 4 only) */
    prx_qpsk_bank_gpu_set_serial(b->drv, em_ser);
  }
  em_src = rows;
  em_src_pitch = pitch;
  em_bad_reads = em_kept_try = em_kept_bad = 0;
  size_t sz = prx_format_size(fmt), call = prx_qpsk_bank_max_symbols(b, n, 0) + 4 * 1100;
  if (em_end && driver) call += prx_qpsk_bank_gpu_end_symbols(b, n); /* (its flush's call) */
  size_t bs = 2 * call + 64, ls = 2 * call;
  uint8_t *hb = malloc(C * bs);
  float *hl = malloc(C * ls * sizeof(float));
  size_t ns[C], nb[C];
  /* em_twice: the stream again after the flush, on the same bank: the same outputs (the flush
   * resets every channel's stream, on the device too) */
  chan_out o2[C];
  if (em_before && driver) {
    prx_qpsk_bank_out out = {hb, bs, NULL, ls, ns, nb};
    stream_before(b, rows, pitch, sz, n / 2 + 1234, &out);
  }
  for (int pass = 0; pass < (em_twice ? 2 : 1); pass++) {
    chan_out *d = pass ? o2 : o;
    for (unsigned c = 0; c < C; c++) {
      d[c].bits = malloc(2 * n + 64); /* a stream has fewer symbols than samples */
      d[c].llrs = malloc(2 * n * sizeof(float));
      d[c].n_bytes = d[c].n_sym = d[c].n_blk = d[c].nv_n = 0;
      d[c].nv = 0;
      for (size_t j = 0; j < 64; j++) d[c].k_call[j] = SIZE_MAX;
    }
    test_rng r;
    test_rng_seed(&r, chunk_seed);
    int unread = 0; /* a call with symbols whose estimates were not read */
    em_late = 0;
    for (size_t i = 0, call = 0;; call++) {
      int flush = i >= n;
      em_late |= unread && !flush;
      size_t m = n - i;
      if (chunk_seed && !flush) {
        double u = test_rng_uniform(&r); /* empty calls, calls within a span, several spans */
        m = u < 0.1 ? 0
                    : 1 + (size_t)(test_rng_uniform(&r) * (em_chunk  ? em_chunk
                                                           : u < 0.8 ? 40000
                                                                     : 90000));
        if (m > n - i) m = n - i;
      }
      const int want_llrs = llrs || (em_mixed && call % 2);
      prx_qpsk_bank_out out = {hb, bs, want_llrs ? hl : NULL, ls, ns, nb};
      prx_status st;
      if (em_kept && driver) {
        /* the rows as the receiver holds them: the history the bank asks for, then the chunk */
        const size_t mm = flush ? 0 : m;
        /* em_end: the last chunk's samples in the flush's call (then no call after it) */
        const int end = em_end && !flush && m && i + m == n;
        if (i > 0) { /* first calls without the kept samples, refused (the bank needs the samples
                        from its next span's start), nothing consumed: an empty call that keeps
                        nothing, the plain call (its error naming the kept call) */
          if (!flush) {
            st = prx_qpsk_bank_gpu_run(b, (const uint8_t *)rows + i * sz, pitch, 0, 0, 1, 0, &out,
                                       0, NULL);
            em_kept_try++;
            em_kept_bad += st == PRX_ERR_INVALID;
          }
          st = flush ? prx_qpsk_bank_flush(b, &out)
                     : prx_qpsk_bank_execute(b, (const uint8_t *)rows + i * sz, pitch, m, &out);
          em_kept_try++;
          em_kept_bad += st == PRX_ERR_INVALID && strstr(prx_last_error(), "_kept");
        }
        st = kept_call(b, rows, pitch, sz, i, mm, flush || end, end, &out);
        flush |= end;
      } else {
        if (em_ring_fail && driver && pass == 0 && i == 0 && m && !flush) {
          /* the ring (three times a span's window and more) refused, the chunk's copy not: the
           * call fails before it consumes anything, then the same call goes on */
          em_alloc_most = 3 * C * prx_qpsk_bank_gpu_history(b->drv) * sz - 1;
          st = prx_qpsk_bank_execute(b, rows, pitch, m, &out);
          em_alloc_most = 0;
          prx_qpsk_stats s0;
          prx_qpsk_bank_gpu_timing t0;
          prx_qpsk_bank_gpu_get_timing(b->drv, &t0);
          CHECK(st == PRX_ERR_NOMEM && prx_qpsk_bank_get_stats(b, 0, &s0) == PRX_OK &&
                    s0.samples == 0 && t0.ring_bytes == 0,
                "the ring's memory refused: status %d, %llu samples consumed, %g ring bytes", st,
                (unsigned long long)s0.samples, t0.ring_bytes);
        }
        st = flush ? prx_qpsk_bank_flush(b, &out)
                   : prx_qpsk_bank_execute(b, (const uint8_t *)rows + i * sz, pitch, m, &out);
      }
      CHECK(st == PRX_OK, "bank call: %s", prx_last_error());
      if (st) break;
      /* the receiver's way: the held end at once, before any estimate or stats is read */
      if (driver && em_end && flush) prx_qpsk_bank_gpu_end(b->drv);
      if (driver && em_toggle) { /* the passes' side changed between calls, the state moved */
        int want = !gpu_serial_now(b->drv);
        CHECK(prx_qpsk_bank_gpu_set_serial(b->drv, want) == want, "set_serial(%d)", want);
      }
      const int read = !em_lazy || flush || (em_lazy == 1 && call % 3 == 2);
      for (unsigned c = 0; c < C; c++) {
        memcpy(d[c].bits + d[c].n_bytes, hb + c * bs, nb[c]);
        if (llrs) memcpy(d[c].llrs + 2 * d[c].n_sym, hl + c * ls, 2 * ns[c] * sizeof(float));
        d[c].n_bytes += nb[c];
        d[c].n_sym += ns[c];
        unread |= !read && ns[c] > 0;
        if (call < 64) d[c].k_call[call] = SIZE_MAX;
        if (!read) continue;
        size_t k;
        const prx_qpsk_block *e = prx_qpsk_bank_block_estimates(b, c, &k);
        if (call < 64) d[c].k_call[call] = k;
        for (size_t j = 0; j < k; j++) {
          if (d[c].n_blk + j < 64) d[c].cfo[d[c].n_blk + j] = e[j].cfo;
          if (d[c].n_blk + j < 64) d[c].est[d[c].n_blk + j] = e[j];
          if (e[j].n_symbols > 0) {
            d[c].nv += e[j].noise_var;
            d[c].nv_n++;
          }
        }
        d[c].n_blk += k;
      }
      if (flush) {
        for (unsigned c = 0; c < C; c++) CHECK_OK(prx_qpsk_bank_get_stats(b, c, &d[c].st));
        break;
      }
      i += m;
    }
  }
  if (em_twice) {
    for (unsigned c = 0; c < C; c++) {
      size_t ne = o[c].n_blk < 64 ? o[c].n_blk : 64, bad = 0;
      for (size_t j = 0; j < ne && o2[c].n_blk == o[c].n_blk; j++)
        bad += o2[c].est[j].timing != o[c].est[j].timing || o2[c].est[j].cfo != o[c].est[j].cfo ||
               o2[c].est[j].first_symbol != o[c].est[j].first_symbol;
      CHECK(o2[c].n_sym == o[c].n_sym && o2[c].n_bytes == o[c].n_bytes &&
                o2[c].n_blk == o[c].n_blk && !memcmp(o2[c].bits, o[c].bits, o[c].n_bytes) && !bad,
            "channel %u: the stream after the flush differs from the first (%zu of %zu block "
            "estimates)",
            c, bad, ne);
    }
    outs_free(o2);
  }
  if (driver) {
    prx_qpsk_bank_gpu_timing t;
    prx_qpsk_bank_gpu_get_timing(b->drv, &t);
    CHECK(t.spans >= 2 && t.calls >= 2, "the driver ran %g spans in %g calls", t.spans, t.calls);
    CHECK(em_bad_reads == 0, "%zu samples read by the stages were not the stream's", em_bad_reads);
    if (em_kept)
      CHECK(em_kept_try && em_kept_bad == em_kept_try && t.ring_moves == 0 && t.ring_bytes == 0,
            "rows kept in place: %zu of %zu calls without the kept samples refused, the ring "
            "moved %g times and holds %g bytes (0 expected)",
            em_kept_bad, em_kept_try, t.ring_moves, t.ring_bytes);
    else
      CHECK(t.ring_bytes > 0, "the ring was never made");
    CHECK(t.gpu_cfo == !em_cfo_off, "the CFO stage on the %s", t.gpu_cfo ? "GPU" : "CPU");
    CHECK(t.fold == (qc.sample_rate == 4 * qc.symbol_rate ? em_fold : 0), "the om stage %s",
          t.fold ? "folded" : "apart");
    if (!em_toggle) {
      CHECK(t.gpu_serial == (em_ser && !em_cfo_off), "the serial passes on the %s",
            t.gpu_serial ? "GPU" : "CPU");
      /* the phase pass too where the GPU decides the bits (no LLRs, packed bits or pilots) */
      const int hf = llrs || packed || qc.ambiguity == PRX_QPSK_PILOTS;
      CHECK(em_mixed || t.gpu_phase == (t.gpu_serial && !hf), "the phase pass on the %s",
            t.gpu_phase ? "GPU" : "CPU");
    }
    CHECK(t.ring_moves >= em_moves, "the ring moved %g times in %g calls (at least %g expected)",
          t.ring_moves, t.calls, em_moves);
    if (em_moves) printf("  the ring moved %g times in %g calls\n", t.ring_moves, t.calls);
    em_fold_run = t.fold;
    /* one call holds two complete spans, or the flush two spans: one pre runs ahead */
    if (em_events && !chunk_seed && !t.gpu_serial)
      CHECK(t.ahead >= 1, "no span's pre ran ahead (%g spans in %g calls)", t.spans, t.calls);
    if (!em_events) CHECK(t.ahead == 0, "a pre ran ahead without events");
    /* estimates not read after a call: its spans written into the channels in the next one */
    if (em_lazy == 1 && em_late)
      CHECK(t.late >= 1, "no span written into the channels late (%g spans in %g calls, fold %d)",
            t.spans, t.calls, t.fold);
  }
  free(hb);
  free(hl);
  prx_qpsk_bank_destroy(b);
}

static void outs_free(chan_out *o) {
  for (unsigned c = 0; c < C; c++) {
    free(o[c].bits);
    free(o[c].llrs);
  }
}

static void compare(const char *what, const chan_out *g, const chan_out *ref, int llrs) {
  for (unsigned c = 0; c < C; c++) {
    CHECK(g[c].n_sym == ref[c].n_sym && g[c].n_bytes == ref[c].n_bytes &&
              g[c].n_blk == ref[c].n_blk,
          "%s channel %u: %zu symbols, %zu bytes, %zu blocks; CPU bank %zu, %zu, %zu", what, c,
          g[c].n_sym, g[c].n_bytes, g[c].n_blk, ref[c].n_sym, ref[c].n_bytes, ref[c].n_blk);
    CHECK(g[c].st.warnings == ref[c].st.warnings, "%s channel %u: warnings %#x, CPU bank %#x", what,
          c, g[c].st.warnings, ref[c].st.warnings);
    if (g[c].n_bytes != ref[c].n_bytes) continue;
    double de = 0;
    for (size_t j = 0; j < g[c].n_blk && j < 64; j++)
      if (fabs(g[c].cfo[j] - ref[c].cfo[j]) > de) de = fabs(g[c].cfo[j] - ref[c].cfo[j]);
    /* the CPU CFO stage: the CPU's own arithmetic (both take the window's first S values, a
     * span's own one more with a fast clock: at spans of 1024 the CPU's taking them all put a
     * 5 dB channel 7.6e-4 Hz off the GPU's), 1e-5 Hz = 1e-8 Rs here; a window without its
     * reach-back into the earlier span is 2e-4 Hz off */
    double tol = em_cfo_off ? 1e-8 : 2e-5;
    /* the folded om path: its O&M sums round otherwise (qpsk_om_combine), and the timing and
     * the 4th powers with them; most sensitive, the stream's last span of 25 symbols (its CFO
     * window mostly the span before's values): 1.9e-3 Hz (1.9e-6 Rs) */
    if (em_fold_run) tol = 5e-3;
    /* the stream ending 25 symbols after two spans: the CPU bank flushes the last two spans in
     * one batch, the driver one at a time; that short span's CFO then differs by 1.9e-3 Hz
     * (1.9e-6 Rs) on either path, the bits not */
    if (em_short_tail) tol = 5e-3;
    CHECK(de <= tol, "%s channel %u: CFO estimates %.3g Hz off the CPU's (tolerance %g)", what, c,
          de, tol);
    size_t diff = 0;
    for (size_t i = 0; i < g[c].n_bytes; i++) diff += g[c].bits[i] != ref[c].bits[i];
    if (esn0[c] >= 12)
      CHECK(diff == 0, "%s channel %u (%g dB): %zu bits differ from the CPU bank", what, c, esn0[c],
            diff);
    else
      CHECK(diff <= g[c].n_bytes / 10000, "%s channel %u (%g dB): %zu of %zu differ", what, c,
            esn0[c], diff, g[c].n_bytes);
    if (!llrs) continue;
    double num = 0, den = 0;
    for (size_t i = 0; i < 2 * g[c].n_sym; i++) {
      double d = (double)g[c].llrs[i] - ref[c].llrs[i];
      num += d * d;
      den += (double)ref[c].llrs[i] * ref[c].llrs[i];
    }
    /* 1e-5 relative; the folded path 1e-4, the GPU test's bound (measured 6.5e-5 at 14 dB) */
    const double rel = em_fold_run ? 1e-4 : 1e-5;
    CHECK(num <= rel * rel * den, "%s channel %u: LLRs differ (relative %.3g)", what, c,
          sqrt(num / (den > 0 ? den : 1)));
  }
}

/* the driver with the serial passes on the (emulated) GPU against the driver with them on the
 * CPU: identical bits, LLRs and block estimates */
static void same_outputs(const char *what, const chan_out *g, const chan_out *ref, int llrs) {
  for (unsigned c = 0; c < C; c++) {
    int same = g[c].n_sym == ref[c].n_sym && g[c].n_bytes == ref[c].n_bytes &&
               g[c].n_blk == ref[c].n_blk && !memcmp(g[c].bits, ref[c].bits, g[c].n_bytes) &&
               (!llrs || !memcmp(g[c].llrs, ref[c].llrs, 2 * g[c].n_sym * sizeof(float)));
    size_t ne = g[c].n_blk < 64 ? g[c].n_blk : 64, bad = 0;
    for (size_t j = 0; same && j < ne; j++) {
      const prx_qpsk_block *a = &g[c].est[j], *b = &ref[c].est[j];
      bad += a->first_symbol != b->first_symbol || a->n_symbols != b->n_symbols ||
             a->timing != b->timing || a->clock_ppm != b->clock_ppm || a->cfo != b->cfo ||
             memcmp(&a->phase, &b->phase, sizeof a->phase) || a->amplitude != b->amplitude ||
             a->flags != b->flags || memcmp(&a->esn0_db, &b->esn0_db, sizeof a->esn0_db) ||
             a->noise_var != b->noise_var || a->signal != b->signal || a->n_data != b->n_data ||
             a->time != b->time;
    }
    CHECK(same && !bad,
          "%s channel %u: the serial passes on the GPU differ from the CPU's (%zu of %zu block "
          "estimates; outputs %s)",
          what, c, bad, ne, same ? "same" : "differ");
  }
}

/* C carriers at sps, spans CFO spans long, as cf32 and cf16 rows with a pitch: differential, or
 * with 64:8 pilots at CFO 0 (where the pilot word's mean is a DC component of the signal) */
static size_t make_rows(double sps, double spans, uint64_t seed, int pilots, prx_cf32 **rows,
                        uint16_t **rows16, size_t *pitch, prx_qpsk_config *qc) {
  tcase tc[C];
  bank_cases(tc, C, sps, esn0, seed);
  for (unsigned c = 0; c < C && pilots; c++) {
    tc[c].differential = 0;
    tc[c].pilot_period = 64;
    tc[c].pilot_len = 8;
    tc[c].cfo = 0;
  }
  uint8_t *tx[C] = {NULL};
  size_t ntx[C];
  size_t n = bank_rows_make(tc, C, (size_t)(spans * 8192 * sps), 40, tx, ntx, rows, rows16, pitch);
  for (unsigned c = 0; c < C; c++) free(tx[c]);
  *qc = tcase_demod_config(&tc[0], 1);
  return n;
}

/* the driver run with these settings (run's) against the CPU bank's outputs CPU, the checks
 * labelled "<GPU|CPU> CFO, sps SPS LABEL"; the driver's outputs are freed after */
static void versus_cpu(const char *label, double sps, prx_qpsk_config qc, prx_format fmt,
                       int packed, int llrs, const double *mix, const void *rows, size_t pitch,
                       size_t n, uint64_t chunk_seed, const chan_out *cpu) {
  chan_out drv[C];
  char what[96];
  run(1, qc, fmt, packed, llrs, mix, rows, pitch, n, chunk_seed, drv);
  snprintf(what, sizeof what, "%s CFO, sps %.4g %s", em_cfo_off ? "CPU" : "GPU", sps, label);
  compare(what, drv, cpu, llrs);
  if (em_ser) {
    /* the serial passes' per-thread code (their records, the state on the device) against the
     * CPU passes on the same records: the same outputs and estimates to the last bit */
    chan_out ref[C];
    em_ser = 0;
    run(1, qc, fmt, packed, llrs, mix, rows, pitch, n, chunk_seed, ref);
    em_ser = 1;
    same_outputs(what, drv, ref, llrs);
    outs_free(ref);
  }
  outs_free(drv);
}

/* carriers beyond the acquisition range (their 4th-power lines aliased into it) in channels 1
 * and 2, one within it in channel 0, at sps: the driver measures the CFO alias test on the
 * (emulated) device, in random chunks, and raises cfo_alias where the CPU bank does, in the
 * aliased channels only */
static void alias_case(double sps, uint64_t seed) {
  tcase tc[C];
  bank_cases(tc, C, sps, esn0, seed);
  tc[1].cfo = 0.3;
  tc[2].cfo = -0.2;
  uint8_t *tx[C] = {NULL};
  size_t ntx[C], pitch;
  prx_cf32 *rows;
  uint16_t *rows16;
  const size_t n =
      bank_rows_make(tc, C, (size_t)(2.2 * 8192 * sps), 40, tx, ntx, &rows, &rows16, &pitch);
  for (unsigned c = 0; c < C; c++) free(tx[c]);
  if (!n) return;
  const prx_qpsk_config qc = tcase_demod_config(&tc[0], 1);
  chan_out cpu[C], drv[C], kept[C];
  run(0, qc, PRX_CF16, 0, 0, NULL, rows16, pitch, n, 7, cpu);
  run(1, qc, PRX_CF16, 0, 0, NULL, rows16, pitch, n, 71 + seed, drv);
  /* the receiver's calls: the history in the rows, nothing read before the stream's end, which
   * comes before the stats are read */
  em_kept = em_end = 1;
  em_lazy = 2;
  run(1, qc, PRX_CF16, 0, 0, NULL, rows16, pitch, n, 73 + seed, kept);
  em_kept = em_end = em_lazy = 0;
  for (unsigned c = 0; c < C; c++) {
    const unsigned w = c ? PRX_QPSK_WARN_CFO_ALIAS : 0;
    CHECK((cpu[c].st.warnings & PRX_QPSK_WARN_CFO_ALIAS) == w &&
              drv[c].st.warnings == cpu[c].st.warnings,
          "sps %.4g, a carrier at %+g Rs: warnings %#x, the CPU bank's %#x", sps, tc[c].cfo,
          drv[c].st.warnings, cpu[c].st.warnings);
    CHECK(kept[c].st.warnings == cpu[c].st.warnings,
          "sps %.4g, a carrier at %+g Rs, the receiver's calls (its end before the stats): "
          "warnings %#x, the CPU bank's %#x",
          sps, tc[c].cfo, kept[c].st.warnings, cpu[c].st.warnings);
  }
  outs_free(cpu);
  outs_free(drv);
  outs_free(kept);
  free(rows);
  free(rows16);
}

/* every case, under the module's settings of the moment (em_events, em_eager_next, em_fold) */
static void run_all(void) {
  const double sps_list[2] = {4, 16.0 / 3};
  /* the CFO stage on the (emulated) GPU, then on the CPU where the stage kernels lack it */
  for (int run_i = 0; run_i < 4; run_i++) {
    const int si = run_i % 2;
    em_cfo_off = run_i >= 2;
    prx_cf32 *rows;
    uint16_t *rows16;
    size_t pitch;
    prx_qpsk_config qc;
    size_t n = make_rows(sps_list[si], 2.6, 11 + si, 0, &rows, &rows16, &pitch, &qc);
    if (!n) break;
    const double sps = sps_list[si];
    chan_out cpu[C];
    /* cf32, LLRs: one call, then random chunks (symbols back to the host) */
    run(0, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
    versus_cpu("cf32 LLRs one call", sps, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
    outs_free(cpu);
    /* a stream ending just after two spans: the last call runs one span, the flush two (the
     * second's pre ahead, over the flushed stream's last block) */
    const size_t n2 = (size_t)(2 * 8192 * sps) + 100;
    run(0, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n2, 0, cpu);
    em_short_tail = 1;
    versus_cpu("cf32 LLRs, two spans in the flush", sps, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n2,
               0, cpu);
    em_short_tail = 0;
    outs_free(cpu);
    run(0, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
    em_ring_fail = 1; /* (its first call with samples refused the ring's memory, then again) */
    versus_cpu("cf32 LLRs random chunks", sps, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 17 + si,
               cpu);
    em_ring_fail = 0;
    if (em_ser && !em_cfo_off) { /* the passes moving between the GPU and the CPU mid-stream */
      em_toggle = 1;
      versus_cpu("cf32 LLRs random chunks, the passes' side switched after every call", sps, qc,
                 PRX_CF32, 0, 1, NULL, rows, pitch, n, 17 + si, cpu);
      em_toggle = 0;
    }
    /* bits only: the out stage writes them in place */
    versus_cpu("cf32 bits one call", sps, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 0, cpu);
    if (em_ser && !em_cfo_off) {
      /* estimates and stats read after some calls only: the spans' reports written lazily, in
       * the next call; the same bits and stats as the driver read after every call, and the
       * estimates that were read the same */
      chan_out lz[C], ref[C];
      em_lazy = 1;
      run(1, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 23 + si, lz);
      em_lazy = 0;
      run(1, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 23 + si, ref);
      for (unsigned c = 0; c < C; c++) {
        size_t bad = 0, ne = lz[c].n_blk < 64 ? lz[c].n_blk : 64;
        for (size_t j = 0; j < 64; j++) /* a call's estimates are its own blocks' */
          bad += lz[c].k_call[j] != SIZE_MAX && lz[c].k_call[j] != ref[c].k_call[j];
        for (size_t j = 0; j < ne; j++) {
          const prx_qpsk_block *a = &lz[c].est[j];
          const prx_qpsk_block *e = a->index < 64 ? &ref[c].est[a->index] : NULL;
          bad += e && (a->first_symbol != e->first_symbol || a->timing != e->timing ||
                       memcmp(&a->phase, &e->phase, sizeof a->phase) || a->flags != e->flags ||
                       a->noise_var != e->noise_var);
        }
        CHECK(lz[c].n_sym == ref[c].n_sym && lz[c].n_bytes == ref[c].n_bytes &&
                  !memcmp(lz[c].bits, ref[c].bits, lz[c].n_bytes) &&
                  !memcmp(&lz[c].st, &ref[c].st, sizeof lz[c].st) && lz[c].n_blk < ref[c].n_blk &&
                  !bad,
              "channel %u: estimates read lazily: outputs, stats or estimates differ (%zu of %zu "
              "blocks; %zu of %zu read)",
              c, bad, ne, lz[c].n_blk, ref[c].n_blk);
      }
      outs_free(lz);
      /* LLRs in every other call: the phase pass moves between the GPU (bits only) and the CPU
       * (symbols back), its state with it; the same bits and estimates */
      em_mixed = 1;
      run(1, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 23 + si, lz);
      em_mixed = 0;
      same_outputs("bits, LLRs in every other call", lz, ref, 0);
      for (unsigned c = 0; c < C; c++)
        CHECK(!memcmp(&lz[c].st, &ref[c].st, sizeof lz[c].st), "channel %u: stats differ", c);
      outs_free(lz);
      outs_free(ref);
    }
    em_twice = 1; /* (and the stream again after the flush) */
    versus_cpu("cf32 bits random chunks", sps, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 23 + si,
               cpu);
    em_twice = 0;
    /* the rows hold the bank's history before each chunk (the receiver's rows): every span read
     * in place, the same outputs */
    em_kept = 1;
    versus_cpu("cf32 bits random chunks, history kept in the rows", sps, qc, PRX_CF32, 0, 0, NULL,
               rows, pitch, n, 23 + si, cpu);
    /* the receiver's end of a stream: its last samples in the flush's call, held where the GPU
     * decides the bits; after a stream so ended (another length and chunking) and again after
     * the flush, and after a stream cut short by a reset with spans pending: the same outputs */
    em_end = em_before = em_twice = 1;
    versus_cpu("cf32 bits random chunks, the end in the flush's call, after a stream so ended", sps,
               qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 29 + si, cpu);
    em_twice = 0;
    em_before = 2;
    versus_cpu("cf32 bits random chunks, the end in the flush's call, after a stream cut by a "
               "reset",
               sps, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 31 + si, cpu);
    em_end = em_before = em_kept = 0;
    outs_free(cpu);
    /* packed */
    run(0, qc, PRX_CF32, 1, 0, NULL, rows, pitch, n, 0, cpu);
    versus_cpu("packed random chunks", sps, qc, PRX_CF32, 1, 0, NULL, rows, pitch, n, 31 + si, cpu);
    outs_free(cpu);
    /* cf16 */
    run(0, qc, PRX_CF16, 0, 0, NULL, rows16, pitch, n, 0, cpu);
    versus_cpu("cf16 random chunks", sps, qc, PRX_CF16, 0, 0, NULL, rows16, pitch, n, 37 + si, cpu);
    outs_free(cpu);
    /* mix_hz: each carrier moved off its channel's centre, then mixed back by the bank */
    const double mix[C] = {0.11 * qc.sample_rate, -0.07 * qc.sample_rate, 0.25 * qc.sample_rate};
    bank_rows_shift(rows, C, pitch, n, mix, qc.sample_rate);
    run(0, qc, PRX_CF32, 0, 0, mix, rows, pitch, n, 0, cpu);
    versus_cpu("mix_hz random chunks", sps, qc, PRX_CF32, 0, 0, mix, rows, pitch, n, 43 + si, cpu);
    outs_free(cpu);
    free(rows);
    free(rows16);
    /* a stream of 24 spans in random chunks shorter than a span (the ring always keeps
     * samples): the ring slides over its buffer (three times the longest run it holds) and moves
     * to the buffer's start at least twice, each from another position (the ring's code is the
     * same whichever side runs the CFO stage: once) */
    if (em_cfo_off) continue;
    if (!(n = make_rows(sps, 24, 61 + si, 0, &rows, &rows16, &pitch, &qc))) break;
    em_chunk = 20000;
    run(0, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 67 + si, cpu); /* (a call's estimates: 256
                                                                         blocks at most) */
    em_moves = 2;
    versus_cpu("cf32 bits random chunks, 24 spans", sps, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n,
               67 + si, cpu);
    em_moves = 0;
    em_kept = 1; /* (the history in the rows: the ring never used) */
    versus_cpu("cf32 bits random chunks, 24 spans, history kept in the rows", sps, qc, PRX_CF32, 0,
               0, NULL, rows, pitch, n, 67 + si, cpu);
    em_kept = 0;
    em_chunk = 0;
    outs_free(cpu);
    free(rows);
    free(rows16);
  }
  /* pilots at CFO 0: the pilots' share of the removed DC restored on the driver's path too (the
   * phase pass on the GPU's symbols): the same output as the CPU bank, and the Es/N0 of the
   * 25 dB channel within 0.5 dB (17-18 dB with the pilots' mean left out of the symbols) */
  for (int si = 0; si < 2; si++) {
    em_cfo_off = 0;
    prx_cf32 *rows;
    uint16_t *rows16;
    size_t pitch;
    prx_qpsk_config qc;
    size_t n = make_rows(sps_list[si], 2.6, 51 + si, 1, &rows, &rows16, &pitch, &qc);
    if (!n) break;
    char what[96];
    chan_out cpu[C], drv[C];
    run(0, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
    run(1, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 53 + si, drv);
    snprintf(what, sizeof what, "pilots at CFO 0, sps %.4g cf32 LLRs random chunks", sps_list[si]);
    compare(what, drv, cpu, 1);
    if (em_ser) {
      chan_out ref[C];
      em_ser = 0;
      run(1, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 53 + si, ref);
      em_ser = 1;
      same_outputs(what, drv, ref, 1);
      outs_free(ref);
    }
    for (unsigned c = 0; c < C; c++) {
      double e_drv = drv[c].nv_n ? -10 * log10(drv[c].nv / (double)drv[c].nv_n) : NAN;
      double e_cpu = cpu[c].nv_n ? -10 * log10(cpu[c].nv / (double)cpu[c].nv_n) : NAN;
      printf("%s channel %u (%g dB): Es/N0 %.2f dB (driver), %.2f dB (CPU bank)\n", what, c,
             esn0[c], e_drv, e_cpu);
      if (esn0[c] >= 12)
        CHECK(fabs(e_drv - esn0[c]) < 0.5 && fabs(e_cpu - esn0[c]) < 0.5,
              "%s channel %u: Es/N0 %.2f dB (driver), %.2f dB (CPU bank), truth %g dB", what, c,
              e_drv, e_cpu, esn0[c]);
    }
    outs_free(drv);
    outs_free(cpu);
    free(rows);
    free(rows16);
  }
}

/* CFO spans of 1024 symbols in blocks of 256 (the shortest: prx_qpsk_config.cfo_span_symbols),
 * 2.6 default spans' worth of samples (21 short spans): the driver's bits, LLRs and warnings are
 * the CPU bank's, in one call, in random chunks, and with bits only */
static void short_spans(double sps, uint64_t seed) {
  prx_cf32 *rows;
  uint16_t *rows16;
  size_t pitch;
  prx_qpsk_config qc;
  const size_t n = make_rows(sps, 2.6, seed, 0, &rows, &rows16, &pitch, &qc);
  if (!n) return;
  qc.block_symbols = 256;
  qc.cfo_span_symbols = 1024;
  chan_out cpu[C];
  run(0, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
  versus_cpu("spans of 1024, LLRs one call", sps, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n, 0, cpu);
  versus_cpu("spans of 1024, LLRs random chunks", sps, qc, PRX_CF32, 0, 1, NULL, rows, pitch, n,
             seed + 3, cpu);
  outs_free(cpu);
  run(0, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n, 0, cpu);
  versus_cpu("spans of 1024, bits random chunks", sps, qc, PRX_CF32, 0, 0, NULL, rows, pitch, n,
             seed + 5, cpu);
  outs_free(cpu);
  free(rows);
  free(rows16);
}

int main(void) {
  /* one stream (a module without events); two streams with the second eager (it runs ahead of
   * the main stream as far as its events allow) and lazy (the host sees its work only after a
   * sync), each with the folded om path at sps 4; the second eager without the fold; with the
   * serial passes on the GPU, the records' stream lazy and eager (a record copied down before
   * its last writer ran changes the reports) */
  const int variants[7][4] = {{0, 0, 1, 0}, {1, 1, 1, 0}, {1, 0, 1, 0}, {1, 1, 0, 0},
                              {0, 0, 0, 1}, {1, 0, 1, 1}, {1, 1, 1, 1}};
  for (int v = 0; v < 7; v++) {
    em_events = variants[v][0];
    em_eager_next = variants[v][1];
    em_fold = variants[v][2];
    em_ser = variants[v][3];
    printf("module: %s, second stream %s, om %s, serial passes on the %s\n",
           em_events ? "events" : "no events", em_eager_next ? "eager" : "lazy",
           em_fold ? "folded at sps 4" : "apart", em_ser ? "GPU" : "CPU");
    run_all();
    alias_case(v % 2 ? 16.0 / 3 : 4, 90 + (uint64_t)v);
    short_spans(v % 2 ? 16.0 / 3 : 4, 110 + (uint64_t)v);
  }
  CHECK(em_reset_pending > 0, "no reset came with spans pending");
  return test_finish("test_qpsk_bank_driver");
}
#else
int main(void) {
  printf("test_qpsk_bank_driver: skipped (this build has no CUDA: the driver is not built)\n");
  return TEST_SKIP;
}
#endif
