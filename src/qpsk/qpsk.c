/* prx_qpsk: configuration checks, planning, input buffering and the streaming loop. The work on
 * each batch of CFO spans is in qpsk_batch.c.
 *
 * Streaming: input is appended to a buffer of raw samples; as soon as the buffer holds everything
 * a CFO span needs (its samples plus the filters' reach on both sides) the span is demodulated,
 * up to G spans at a time so that all cores have blocks to work on. Every estimate depends only
 * on absolute positions in the stream, so neither the call boundaries nor G (which follows the
 * thread count) change any output. Input access is in qpsk_input.c. */
#include "qpsk_internal.h"

#include "../dsp/fft_plan.h"
#include "../dsp/rrc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

prx_qpsk_config prx_qpsk_config_default(void) {
  prx_qpsk_config c;
  memset(&c, 0, sizeof c);
  c.sample_rate = 0;
  c.symbol_rate = 0;
  c.rolloff = 0.35;
  c.span = 12;
  c.block_symbols = 512;
  c.cfo_span_symbols = 8192;
  c.acquisition = 0.12;
  c.ambiguity = PRX_QPSK_DIFFERENTIAL;
  c.modulation = PRX_QPSK_PLAIN;
  c.pilot_period = 0;
  c.pilot_len = 0;
  c.in_format = PRX_CF32;
  c.threads = 0;
  return c;
}

const char *prx_qpsk_ambiguity_name(prx_qpsk_ambiguity a) {
  switch (a) {
  case PRX_QPSK_DIFFERENTIAL: return "differential";
  case PRX_QPSK_PILOTS: return "pilots";
  case PRX_QPSK_NONE: return "none";
  }
  return "unknown";
}

const char *prx_qpsk_modulation_name(prx_qpsk_modulation m) {
  switch (m) {
  case PRX_QPSK_PLAIN: return "qpsk";
  case PRX_QPSK_PI4: return "pi4-qpsk";
  }
  return "unknown";
}

static prx_status check_config(const prx_qpsk_config *c) {
  if (!(c->sample_rate > 0 && isfinite(c->sample_rate)))
    return prx_fail(PRX_ERR_INVALID, "sample rate must be positive, got %g", c->sample_rate);
  if (!(c->symbol_rate > 0 && isfinite(c->symbol_rate)))
    return prx_fail(PRX_ERR_INVALID, "symbol rate must be positive, got %g", c->symbol_rate);
  double sps = c->sample_rate / c->symbol_rate;
  if (sps < 2 - 1e-9)
    return prx_fail(PRX_ERR_INVALID,
                    "sample rate %g Hz is below twice the symbol rate %g Hz (%.4g samples/symbol, "
                    "need >= 2)",
                    c->sample_rate, c->symbol_rate, sps);
  if (sps > 1024)
    return prx_fail(PRX_ERR_INVALID,
                    "%.6g samples/symbol is too many (max 1024): channelize or decimate first",
                    sps);
  if (!(c->rolloff > 0 && c->rolloff <= 1))
    return prx_fail(PRX_ERR_INVALID, "roll-off must be in (0, 1], got %g", c->rolloff);
  if (c->span < 2 || c->span > 64)
    return prx_fail(PRX_ERR_INVALID, "matched-filter span must be 2..64 symbols, got %u", c->span);
  if (c->block_symbols < 256 || c->block_symbols > 1024)
    return prx_fail(PRX_ERR_INVALID, "block_symbols must be 256..1024, got %u", c->block_symbols);
  if (c->cfo_span_symbols < QPSK_MIN_CFO_SPAN || c->cfo_span_symbols > (1u << 22))
    return prx_fail(PRX_ERR_INVALID, "cfo_span_symbols must be %u..4194304, got %u",
                    QPSK_MIN_CFO_SPAN, c->cfo_span_symbols);
  /* the clock's line is fitted over a span's blocks, from 4 of them (fewer: the clock offset
   * followed worse, symbols lost at 4000 ppm) */
  if (c->cfo_span_symbols < 4 * c->block_symbols)
    return prx_fail(PRX_ERR_INVALID,
                    "cfo_span_symbols (%u) must hold 4 blocks of block_symbols (%u) at least: "
                    "%u or more, or shorter blocks",
                    c->cfo_span_symbols, c->block_symbols, 4 * c->block_symbols);
  if (!(c->acquisition > 0 && c->acquisition < 0.125))
    return prx_fail(PRX_ERR_INVALID,
                    "acquisition range must be in (0, 0.125) symbol rates (below Rs/8, where the "
                    "4th-power lines of +f and -f meet), got %g",
                    c->acquisition);
  switch (c->ambiguity) {
  case PRX_QPSK_DIFFERENTIAL:
  case PRX_QPSK_NONE: break;
  case PRX_QPSK_PILOTS:
    if (c->pilot_len < 1)
      return prx_fail(PRX_ERR_INVALID, "pilots: pilot_len must be at least 1, got %u",
                      c->pilot_len);
    if (c->pilot_period <= c->pilot_len)
      return prx_fail(PRX_ERR_INVALID,
                      "pilots: pilot_period (%u) must exceed pilot_len (%u) to leave data symbols",
                      c->pilot_period, c->pilot_len);
    if (c->pilot_period > c->cfo_span_symbols)
      return prx_fail(PRX_ERR_INVALID,
                      "pilots: pilot_period %u is longer than the CFO span (%u symbols) over which "
                      "frames are acquired",
                      c->pilot_period, c->cfo_span_symbols);
    break;
  default: return prx_fail(PRX_ERR_INVALID, "unknown ambiguity mode %d", (int)c->ambiguity);
  }
  if (c->modulation != PRX_QPSK_PLAIN && c->modulation != PRX_QPSK_PI4)
    return prx_fail(PRX_ERR_INVALID, "unknown modulation %d", (int)c->modulation);
  /* the pilots' DC share (qpsk_pilot_dc.c) is predicted from unturned pilot words */
  if (c->modulation == PRX_QPSK_PI4 && c->ambiguity == PRX_QPSK_PILOTS)
    return prx_fail(
        PRX_ERR_INVALID,
        "pi/4-QPSK with pilots is not supported: use differential decoding (pi/4-DQPSK) "
        "or coherent decisions");
  if (c->in_format == PRX_CF16 || prx_format_size(c->in_format) == 0)
    return prx_fail(PRX_ERR_INVALID, "input format must be cf32, ci16, ci8 or cu8, got %d",
                    (int)c->in_format);
  if (c->threads < 0 || c->threads > 1024)
    return prx_fail(PRX_ERR_INVALID, "threads must be 0 (all cores) .. 1024, got %d", c->threads);
  return PRX_OK;
}

static void win_mf(const prx_qpsk *q, int64_t b, int64_t *lo, int64_t *hi) {
  qpsk_mf_window(q, b, lo, hi);
}
static void win_pre(const prx_qpsk *q, int64_t b, int64_t *lo, int64_t *hi) {
  int64_t L = q->L;
  qpsk_fir_window(&q->pre, 4 * b * L - QPSK_GM, 4 * (b + 1) * L + QPSK_GM, lo, hi);
}

/* input needed by span s: [need_lo, need_end) */
static int64_t span_need_end(const prx_qpsk *q, int64_t s) {
  int64_t lo, hi1, hi2;
  int64_t b = (s + 1) * q->B - 1;
  win_mf(q, b, &lo, &hi1);
  win_pre(q, b, &lo, &hi2);
  return hi1 > hi2 ? hi1 : hi2;
}
static int64_t span_need_lo(const prx_qpsk *q, int64_t s) {
  int64_t lo1, lo2, hi;
  int64_t b = s * q->B;
  win_mf(q, b, &lo1, &hi);
  win_pre(q, b, &lo2, &hi);
  return lo1 < lo2 ? lo1 : lo2;
}

void prx_qpsk_destroy(prx_qpsk *q) {
  if (!q) return;
  if (q->plan) {
    prx_fftw_lock();
    fftwf_destroy_plan(q->plan);
    prx_fftw_unlock();
  }
  prx_pool_destroy(q->pool);
  qpsk_fir_free(&q->mf);
  qpsk_fir_free(&q->pre);
  prx_free(q->work);
  prx_free(q->spans);
  prx_free(q->blks);
  prx_free(q->acq);
  prx_free(q->pilot);
  prx_free(q->buf);
  prx_free(q->est);
  prx_free(q->sr_tmp);
  free(q);
}

/* forgets the stream (not the totals) */
static void reset_stream(prx_qpsk *q) {
  qpsk_weak_close(q); /* (the ended stream's last span) */
  q->buf_base = 0;
  q->buf_len = 0;
  q->ext = NULL;
  q->ext_n = 0;
  q->n_total = 0;
  q->flushing = 0;
  q->next_span = 0;
  memset(&q->sr, 0, sizeof q->sr);
  q->sr.gain_prev = 1;
  q->sr.hist_r = -1;
  memset(&q->ph, 0, sizeof q->ph);
  q->ph.sig_prev = 1;
  q->ph.noise_prev = 1;
  qpsk_diff_reference(&q->ph.dprev);
  q->w_hist_n = 0;
  q->pil_count = 0;
  q->frame_off = -1;
  q->pcorr[0] = q->pcorr[1] = 0;
  q->quarter = 0;
  q->n_sym = 0;
}

void prx_qpsk_reset(prx_qpsk *q) {
  if (!q) return;
  reset_stream(q);
  memset(&q->stats, 0, sizeof q->stats);
  q->stats.frame_offset = -1;
  q->wk_spans = q->wk_lines = q->wk_timings = 0; /* (reset_stream closed the open span) */
  q->blk_unlocked = q->blk_full_signal = q->blk_line = q->blk_levels = q->blk_steps = 0;
  qpsk_alias_start(q);
  q->acc_sig = q->acc_noise = q->acc_cfo = q->acc_d = q->acc_n = 0;
  q->dr_t0 = q->dr_t = q->dr_tt = q->dr_f = q->dr_tf = q->dr_n = 0;
  q->dr_s0 = q->dr_s1 = 0;
  q->all_sig = q->all_noise = q->all_cfo = q->all_d = q->all_n = 0;
  q->all_cfo_min = q->all_cfo_max = NAN;
  q->stats.cfo_min_hz = q->stats.cfo_max_hz = NAN;
  q->n_est = 0;
}

#define ALLOC_WITH(alloc, ptr, n, type)                                                            \
  do {                                                                                             \
    (ptr) = alloc((n), sizeof(type));                                                              \
    if (!(ptr)) {                                                                                  \
      prx_qpsk_destroy(q);                                                                         \
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate the demodulator's buffers");                 \
    }                                                                                              \
  } while (0)
#define ALLOC(ptr, n, type) ALLOC_WITH(prx_alloc, ptr, n, type)

/* Lays out the batch's work buffers in one region (q->work): the previous span's and the G
 * spans' 4th-power values, the spans' FFT window and spectrum, then the G B blocks' grid, scratch,
 * symbols (and pilot tags), each at a 64-byte boundary. With base NULL it only counts the bytes.
 * Each buffer is written before it is read (the spans' FFT window zeroed at its first use,
 * qpsk_batch.c), so the region is not cleared: a demodulator of many threads (a batch of up to 64
 * spans, ~40 MB) is made without zeroing ~1500 buffers on the caller's thread, and their pages are
 * first touched by the workers that use them (valgrind memcheck of the demodulator's runs and of
 * test_qpsk_bank_driver: no read of an unwritten value; tests/cli_demod.sh under
 * MALLOC_PERTURB_). */
static size_t carve_work(prx_qpsk *q, unsigned char *base, size_t grid_len, int tags) {
  size_t off = 0;
#define CARVE(ptr, n, type)                                                                        \
  do {                                                                                             \
    if (base) (ptr) = (type *)(void *)(base + off);                                                \
    off += ((n) * sizeof(type) + 63) & ~(size_t)63;                                                \
  } while (0)
  /* the previous span's values too: qpsk_batch.c swaps it with a span's at a batch's end, so
   * these G + 1 buffers belong to the region, not to the pointers that hold them (read up to
   * w_hist_n, 0 at reset) */
  CARVE(q->w_hist, (size_t)q->B * q->Lmax, prx_cf32);
  for (unsigned i = 0; i < q->G; i++) {
    CARVE(q->spans[i].w, (size_t)q->B * q->Lmax, prx_cf32);
    CARVE(q->spans[i].win, q->nfft, prx_cf32);
    CARVE(q->spans[i].spec, q->nfft, prx_cf32);
  }
  for (size_t i = 0; i < (size_t)q->G * q->B; i++) {
    CARVE(q->blks[i].grid, grid_len, prx_cf32);
    CARVE(q->blks[i].scratch, q->scratch_len, prx_cf32);
    CARVE(q->blks[i].sym, q->Lmax, prx_cf32);
    if (tags) CARVE(q->blks[i].tag, q->Lmax, uint8_t);
  }
#undef CARVE
  return off;
}

/* The span's FFT length: a power of two of at least twice its symbols (a valid config's). */
static size_t span_nfft(const prx_qpsk_config *cfg) {
  size_t L = cfg->block_symbols, S = (cfg->cfo_span_symbols + L - 1) / L * L, nfft = 1;
  while (nfft < 2 * S) nfft *= 2;
  return nfft;
}

/* The plan's effort: FFTW_MEASURE (from the wisdom file after the first run) up to 2^17 points,
 * ESTIMATE above (see prx_qpsk_create). */
static prx_fft_effort span_fft_effort(size_t nfft) {
  return nfft <= ((size_t)1 << 17) ? PRX_FFT_MEASURE : PRX_FFT_ESTIMATE;
}

void *prx_qpsk_fft_warm(const prx_qpsk_config *cfg) {
  if (!cfg || check_config(cfg) != PRX_OK) return NULL;
  size_t nfft = span_nfft(cfg);
  return prx_fft_warm((int)nfft, span_fft_effort(nfft));
}

/* FFTW_MEASURE: 1.7x faster than the ESTIMATE plan at 16384 points here; from the wisdom file
 * after the first run (fft_plan.h). A timed plan can differ from process to process, and with it
 * the last bits of the spectrum; the estimate does not follow them (the refinement starts from a
 * point on a coarse grid, qpsk_batch.c). Above 2^17 points the measurement itself takes seconds
 * to minutes: ESTIMATE there. Non-zero where FFTW could not plan (out of memory). */
int qpsk_plan_span_fft(prx_qpsk *q) {
  if (q->plan) return 0;
  q->plan = prx_fft_plan_1d((int)q->nfft, q->spans[0].win, q->spans[0].spec, FFTW_FORWARD,
                            span_fft_effort(q->nfft));
  return q->plan == NULL;
}

static prx_status create_demod(const prx_qpsk_config *cfg, prx_qpsk **out, int plan_now) {
  if (!cfg || !out) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_create: NULL argument");
  *out = NULL;
  prx_status st = check_config(cfg);
  if (st != PRX_OK) return st;
  prx_qpsk *q = calloc(1, sizeof *q);
  if (!q) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the demodulator");
  q->cfg = *cfg;
  q->sps = cfg->sample_rate / cfg->symbol_rate;
  q->al_on = 1;
  q->L = cfg->block_symbols;
  q->B = (cfg->cfo_span_symbols + q->L - 1) / q->L;
  q->S = q->B * q->L;
  /* a block owns L / (1 + d) symbols, +-1 at its ends */
  q->Lmax = q->L + (unsigned)ceil(q->L * QPSK_MAX_DRIFT / (1 - QPSK_MAX_DRIFT)) + 3;
  q->nsub = q->L / QPSK_SUB_SYMBOLS;
  q->Ls = q->L / q->nsub;
  q->nlags = 0;
  while (q->nlags < QPSK_LAGS && 2u << q->nlags <= q->nsub) q->nlags++;
  q->in_size = prx_format_size(cfg->in_format);
  size_t nfft = span_nfft(cfg);
  q->nfft = nfft;

  st = prx_pool_create(cfg->threads, &q->pool);
  if (st != PRX_OK) {
    free(q);
    return st;
  }
  int threads = prx_pool_threads(q->pool);
  /* spans per batch: with several threads, two spans per thread, so that the FFT stage (one task
   * per span) keeps every thread busy and each parallel stage has enough work to dwarf the cost
   * of waking the pool. One thread: one span (lowest memory). Fewer where a batch would need
   * more than a quarter of PRX_QPSK_MAX_BYTES (long spans, many samples per symbol). */
  q->G = threads > 1 ? 2u * (unsigned)threads : 1u;
  if (q->G > 64) q->G = 64;

  /* matched filter: unit gain at the symbol instant for a unit-energy pulse, as prx_rrc_design */
  size_t ntap_max = (size_t)(cfg->span * q->sps) + 3;
  float *t = malloc(ntap_max * sizeof *t);
  if (!t) {
    prx_qpsk_destroy(q);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the matched filter");
  }
  size_t nt;
  st = prx_rrc_design(q->sps, cfg->rolloff, cfg->span, t, &nt);
  double scale = t[(nt - 1) / 2] / prx_rrc_pulse(0, cfg->rolloff);
  free(t);
  if (st != PRX_OK) {
    prx_qpsk_destroy(q);
    return st;
  }
  st = qpsk_fir_init(&q->mf, q->sps, cfg->rolloff, cfg->span, 0, scale);
  if (st == PRX_OK) {
    double pspan = cfg->span < QPSK_PRE_SPAN ? cfg->span : QPSK_PRE_SPAN;
    st = qpsk_fir_init(&q->pre, q->sps, cfg->rolloff, pspan, q->sps / 4, scale);
  }
  if (st != PRX_OK) {
    prx_qpsk_destroy(q);
    return st;
  }
  /* the pre-filter's DC gain, the mean over its phases (they differ by < 1e-3: the RRC is band
   * limited well inside the sample rate), to take the DC out of its output */
  double tsum = 0;
  for (size_t i = 0; i < (size_t)q->pre.Q * 2 * q->pre.ntaps; i += 2) tsum += q->pre.bank[i];
  q->pre_gain = tsum / q->pre.Q;

  /* per-block scratch: the longest input window either filter reads for a block */
  size_t sl = 0;
  const int64_t probe[] = {0, 1, 2, 3, 7, 1000, 12345, 99991};
  for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
    int64_t lo, hi;
    win_mf(q, probe[i], &lo, &hi);
    if ((size_t)(hi - lo) > sl) sl = (size_t)(hi - lo);
    win_pre(q, probe[i], &lo, &hi);
    if ((size_t)(hi - lo) > sl) sl = (size_t)(hi - lo);
  }
  q->scratch_len = sl + 16;

  /* memory: per span its 4th-power values and FFT buffers, per block its grid, input window and
   * symbols, and the raw input of one batch */
  size_t grid_len = 4 * (size_t)q->L + 2 * QPSK_GM;
  double per_span = (double)sizeof(prx_cf32) * ((double)q->S + 2.0 * (double)nfft) +
                    (double)q->B * ((double)sizeof(qpsk_blk) +
                                    (double)sizeof(prx_cf32) *
                                        ((double)grid_len + (double)q->scratch_len + q->Lmax) +
                                    q->Lmax);
  double in_span = (double)q->S * q->sps * (double)q->in_size;
  double fixed = 2.0 * sizeof(prx_cf32) * ((double)q->S + 3.0 * q->Lmax) + 64.0 * 1024;
  while (q->G > 1 && (per_span + in_span) * q->G > 0.25 * (double)PRX_QPSK_MAX_BYTES) q->G--;
  double bytes = fixed + (per_span + in_span) * q->G + in_span;
  if (bytes > (double)PRX_QPSK_MAX_BYTES) {
    unsigned S = q->S;
    double sps = q->sps;
    prx_qpsk_destroy(q);
    return prx_fail(PRX_ERR_INVALID,
                    "a CFO span of %u symbols at %.6g samples/symbol needs %.0f MB (the "
                    "demodulator's limit is %.0f MB): choose a shorter CFO span",
                    S, sps, bytes / 1e6, (double)PRX_QPSK_MAX_BYTES / 1e6);
  }

  ALLOC(q->spans, q->G, qpsk_span);
  ALLOC(q->blks, (size_t)q->G * q->B, qpsk_blk);
  const int tags = cfg->ambiguity == PRX_QPSK_PILOTS;
  ALLOC_WITH(prx_alloc_uncleared, q->work, carve_work(q, NULL, grid_len, tags), unsigned char);
  carve_work(q, q->work, grid_len, tags);
  for (unsigned i = 0; i < q->G; i++) q->spans[i].nz = nfft; /* the window not zeroed yet */
  if (cfg->ambiguity == PRX_QPSK_PILOTS) {
    ALLOC(q->acq, q->S + 2 * q->Lmax, prx_cf32);
    ALLOC(q->pilot, cfg->pilot_len, prx_cf32);
    for (unsigned i = 0; i < cfg->pilot_len; i++) q->pilot[i] = prx_qpsk_pilot(i);
  }
  ALLOC(q->est, QPSK_KEEP, prx_qpsk_block);
  ALLOC(q->sr_tmp, qpsk_serial_scratch_bytes(q->B), unsigned char);

  /* input buffer: everything one batch of G spans reads */
  int64_t s0 = 1000;
  int64_t need = span_need_end(q, s0 + q->G - 1) - span_need_lo(q, s0);
  q->buf_cap = (size_t)need + 64;
  q->buf = prx_alloc_uncleared(q->buf_cap, q->in_size); /* read only where filled (buf_len) */
  if (!q->buf) {
    prx_qpsk_destroy(q);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the input buffer (%zu samples)", q->buf_cap);
  }

  if (plan_now && qpsk_plan_span_fft(q)) {
    prx_qpsk_destroy(q);
    return prx_fail(PRX_ERR_NOMEM, "FFTW could not plan a %zu-point FFT", nfft);
  }
  prx_qpsk_reset(q);
  *out = q;
  return PRX_OK;
}

prx_status prx_qpsk_create(const prx_qpsk_config *cfg, prx_qpsk **out) {
  return create_demod(cfg, out, 1);
}

prx_status prx_qpsk_create_plan_later(const prx_qpsk_config *cfg, prx_qpsk **out) {
  return create_demod(cfg, out, 0);
}

/* ---- streaming ---- */

/* spans from next_span whose input is complete, at most max */
static unsigned spans_ready(const prx_qpsk *q, int64_t n_total, unsigned max) {
  unsigned g = 0;
  while (g < max && span_need_end(q, q->next_span + g) <= n_total) g++;
  return g;
}

/* blocks left to demodulate at flush */
static int64_t blocks_at_end(const prx_qpsk *q) {
  double n_sym = (double)q->n_total / q->sps;
  return qpsk_count_below(n_sym, (double)q->L);
}

size_t prx_qpsk_max_symbols(const prx_qpsk *q, size_t n_in) {
  if (!q) return 0;
  int64_t total = q->n_total + (int64_t)n_in;
  size_t g = 0;
  while (span_need_end(q, q->next_span + (int64_t)g) <= total) g++;
  return g * (size_t)q->B * q->Lmax;
}

size_t prx_qpsk_flush_max_symbols(const prx_qpsk *q) {
  if (!q) return 0;
  int64_t left = blocks_at_end(q) - q->next_span * (int64_t)q->B;
  return left > 0 ? (size_t)left * q->Lmax : 0;
}

static void begin_call(prx_qpsk *q, uint8_t *bits, float *llrs, prx_cf32 *syms) {
  q->out_bits = bits;
  q->out_llrs = llrs;
  q->out_syms = syms;
  q->n_est = 0;
}

/* Keeps what the next span reads from the buffer and the caller's chunk: drops what lies before
 * it and copies the chunk's unprocessed tail into the buffer (less than one batch: everything
 * that completed a span was demodulated in place). */
static void keep_tail(prx_qpsk *q) {
  int64_t keep = span_need_lo(q, q->next_span);
  if (keep < q->buf_base) keep = q->buf_base;
  int64_t buf_end = q->buf_base + (int64_t)q->buf_len;
  if (keep > buf_end) keep = buf_end < q->n_total ? keep : buf_end;
  if (keep > q->n_total) keep = q->n_total;
  /* 1. drop the buffer's samples before keep */
  if (keep >= buf_end) {
    q->buf_len = 0;
    q->buf_base = keep;
  } else if (keep > q->buf_base) {
    size_t drop = (size_t)(keep - q->buf_base);
    memmove(q->buf, q->buf + drop * q->in_size, (q->buf_len - drop) * q->in_size);
    q->buf_len -= drop;
    q->buf_base = keep;
  }
  /* 2. append the chunk from max(keep, its start) */
  if (q->ext) {
    int64_t from = keep > q->ext_base ? keep : q->ext_base;
    size_t m = (size_t)(q->ext_base + (int64_t)q->ext_n - from);
    if (q->buf_len == 0) q->buf_base = from;
    memcpy(q->buf + q->buf_len * q->in_size, q->ext + (size_t)(from - q->ext_base) * q->in_size,
           m * q->in_size);
    q->buf_len += m;
    q->ext = NULL;
    q->ext_n = 0;
  }
}

/* A call's status where the span's FFT was planned late (prx_qpsk_create_plan_later): its
 * symbols' CFO is not estimated where FFTW could not plan. */
static prx_status plan_status(const prx_qpsk *q) {
  if (!q->plan_failed) return PRX_OK;
  return prx_fail(PRX_ERR_NOMEM, "FFTW could not plan a %zu-point FFT", q->nfft);
}

prx_status prx_qpsk_execute(prx_qpsk *q, const void *in, size_t n_in, uint8_t *bits, float *llrs,
                            size_t capacity, size_t *n_symbols) {
  return prx_qpsk_execute_symbols(q, in, n_in, bits, llrs, NULL, capacity, n_symbols);
}

prx_status prx_qpsk_execute_symbols(prx_qpsk *q, const void *in, size_t n_in, uint8_t *bits,
                                    float *llrs, prx_cf32 *symbols, size_t capacity,
                                    size_t *n_symbols) {
  if (!q || !n_symbols) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_execute: NULL argument");
  *n_symbols = 0;
  if (n_in > 0 && !in) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_execute: NULL input");
  size_t need = prx_qpsk_max_symbols(q, n_in);
  if (capacity < need)
    return prx_fail(PRX_ERR_CAPACITY,
                    "output capacity %zu symbols is below the %zu this call may produce "
                    "(prx_qpsk_max_symbols)",
                    capacity, need);
  begin_call(q, bits, llrs, symbols);
  /* the chunk is read where it lies: stages fetch from the buffer (what earlier calls left) and
   * from it, so bulk input is never copied; what no complete span needs yet is kept at the end */
  q->ext = in;
  q->ext_base = q->n_total;
  q->ext_n = n_in;
  q->n_total += (int64_t)n_in;
  q->stats.samples += n_in;
  qpsk_alias_add(q, in, n_in);
  size_t total = 0;
  unsigned g;
  while ((g = spans_ready(q, q->n_total, q->G)) > 0) {
    total += qpsk_run_batch(q, q->next_span, g);
    q->next_span += g;
  }
  keep_tail(q);
  *n_symbols = total;
  return plan_status(q);
}

prx_status prx_qpsk_flush(prx_qpsk *q, uint8_t *bits, float *llrs, size_t capacity,
                          size_t *n_symbols) {
  return prx_qpsk_flush_symbols(q, bits, llrs, NULL, capacity, n_symbols);
}

prx_status prx_qpsk_flush_symbols(prx_qpsk *q, uint8_t *bits, float *llrs, prx_cf32 *symbols,
                                  size_t capacity, size_t *n_symbols) {
  if (!q || !n_symbols) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_flush: NULL argument");
  *n_symbols = 0;
  size_t need = prx_qpsk_flush_max_symbols(q);
  if (capacity < need)
    return prx_fail(PRX_ERR_CAPACITY,
                    "output capacity %zu symbols is below the %zu the flush may produce "
                    "(prx_qpsk_flush_max_symbols)",
                    capacity, need);
  begin_call(q, bits, llrs, symbols);
  q->flushing = 1;
  int64_t nb = blocks_at_end(q);
  size_t total = 0;
  while (q->next_span * (int64_t)q->B < nb) {
    int64_t left = (nb - q->next_span * (int64_t)q->B + q->B - 1) / q->B;
    unsigned g = left < (int64_t)q->G ? (unsigned)left : q->G;
    total += qpsk_run_batch(q, q->next_span, g);
    q->next_span += g;
  }
  *n_symbols = total;
  reset_stream(q); /* the stream is over; totals and this call's estimates stay readable */
  return plan_status(q);
}

const prx_qpsk_block *prx_qpsk_block_estimates(const prx_qpsk *q, size_t *n) {
  if (!q) {
    if (n) *n = 0;
    return NULL;
  }
  if (n) *n = q->n_est;
  return q->est;
}

void prx_qpsk_get_stats(const prx_qpsk *q, prx_qpsk_stats *out) {
  if (!q || !out) return;
  *out = q->stats;
  /* the blocks with a signal, or all of them when most had none (a weak signal near 0 dB, whose
   * few blocks above the detection threshold would be a biased choice; or no signal at all) */
  int sig = q->acc_n > 0.5 * q->all_n;
  double n = sig ? q->acc_n : q->all_n, ps = sig ? q->acc_sig : q->all_sig,
         pn = sig ? q->acc_noise : q->all_noise;
  out->esn0_db = n > 0 && pn > 0 ? 10 * log10(ps / pn) : NAN;
  out->cfo_hz = n > 0 ? (sig ? q->acc_cfo : q->all_cfo) / n : NAN;
  double d = n > 0 ? (sig ? q->acc_d : q->all_d) / n : NAN;
  out->clock_ppm = -d * 1e6;
  if (!sig) {
    out->cfo_min_hz = q->all_cfo_min;
    out->cfo_max_hz = q->all_cfo_max;
  }
  /* the drift: the slope of the blocks' CFO over time, from blocks with a signal in two CFO
   * spans at least (each span has one CFO: within one span the slope is not measured) */
  const double dn = q->dr_n, var = dn * q->dr_tt - q->dr_t * q->dr_t;
  out->cfo_drift_hz_per_s =
      q->dr_s1 > q->dr_s0 && var > 0 ? (dn * q->dr_tf - q->dr_t * q->dr_f) / var : NAN;
  unsigned w = 0;
  uint64_t spans, lines, timings;
  qpsk_weak_counts(q, &spans, &lines, &timings);
  /* strong blocks without a signal (PRX_QPSK_WARN_UNLOCKED) from a twentieth of all blocks */
  const uint64_t unl = q->blk_unlocked, none = q->stats.blocks_no_signal;
  if (unl >= 2 && 20 * unl >= q->stats.blocks) w |= PRX_QPSK_WARN_UNLOCKED;
  const int most_none = 2 * none > q->stats.blocks;
  if (most_none && unl >= 2 && 2 * unl > none) {
    /* most of the blocks without a signal are strong ones (a quarter of all blocks: unlocked is
     * raised above): a signal not followed, not "no signal" */
  } else if (most_none) {
    /* most blocks show no line of their own: a weak carrier where most CFO spans (two at least)
     * show it over their blocks together and have a symbol-timing line, a carrier at another
     * symbol rate where they show the 4th-power line but no timing line, else no carrier */
    if (lines >= 2 && 2 * lines > spans)
      w |= 2 * timings > spans ? PRX_QPSK_WARN_WEAK_SIGNAL : PRX_QPSK_WARN_SYMBOL_RATE;
    else
      w |= PRX_QPSK_WARN_NO_SIGNAL;
  } else if (spans >= 2 && 2 * timings < spans) {
    /* most blocks show QPSK symbols, most spans no symbol-timing line: a signal at another
     * symbol rate (twice or half the given one: its samples still look like QPSK symbols) */
    w |= PRX_QPSK_WARN_SYMBOL_RATE;
  }
  /* most full blocks with a signal (two at least) hold symbols on one line */
  if (q->blk_line >= 2 && 2 * q->blk_line > q->blk_full_signal) w |= PRX_QPSK_WARN_NOT_QPSK;
  /* most full blocks with a signal (three at least) hold symbols on several power levels */
  if (q->blk_levels >= 3 && 2 * q->blk_levels > q->blk_full_signal) w |= PRX_QPSK_WARN_LEVELS;
  /* most full blocks with a signal (two at least) turn by a quarter turn each symbol */
  if (q->blk_steps >= 2 && 2 * q->blk_steps > q->blk_full_signal) w |= PRX_QPSK_WARN_QUARTER_STEPS;
  if (qpsk_alias_suspect(q, out->cfo_hz / q->cfg.symbol_rate)) w |= PRX_QPSK_WARN_CFO_ALIAS;
  if (q->stats.blocks_clock_range) w |= PRX_QPSK_WARN_CLOCK_RANGE;
  uint64_t with_sig = q->stats.blocks - q->stats.blocks_no_signal;
  if (q->stats.blocks_timing_jump * 100 > with_sig) w |= PRX_QPSK_WARN_TIMING;
  if (q->stats.nonfinite > 8) w |= PRX_QPSK_WARN_NONFINITE;
  out->warnings = w;
}

const char *prx_qpsk_warning_text(unsigned warning) {
  switch (warning) {
  case PRX_QPSK_WARN_NO_SIGNAL:
    return "most of the input had no QPSK signal at this symbol rate (its bits are noise)";
  case PRX_QPSK_WARN_UNLOCKED:
    return "some blocks hold a strong signal (Es/N0 above 10 dB by its moments) without the "
           "4th-power line of QPSK: its phase moves within a block (a frequency drifting faster "
           "than the CFO spans follow: --block 256 --cfo-span 1024 follows 8 times the default's "
           "drift; phase noise) or it is not QPSK; those blocks' bits are noise";
  case PRX_QPSK_WARN_NOT_QPSK:
    return "the symbols lie on one line through the origin, not on QPSK's four points: BPSK or "
           "another real signal (its bits come out as equal or opposite pairs, not the sent "
           "bits), a carrier without modulation, or QPSK whose data do not vary";
  case PRX_QPSK_WARN_LEVELS:
    return "the symbols' power lies on several levels, not on QPSK's one ring: QAM (16QAM, "
           "64QAM) read as QPSK (its bits are each symbol's quadrant, not the sent bits; its "
           "Es/N0 is read low: 16QAM's as 6.7 dB at any level), or QPSK through strong "
           "inter-symbol interference (multipath, a pulse other than the matched filter's), a "
           "large I/Q imbalance or another signal on top of it (within ~10 dB); the bits may be "
           "wrong";
  case PRX_QPSK_WARN_QUARTER_STEPS:
    return "every symbol turns by a quarter turn from the one before, where QPSK's turn by 0, "
           "1/4, 1/2 or 3/4 at random: MSK, or 2-FSK whose shift is half the symbol rate, read "
           "as QPSK at its bit rate (differentially decoded, each symbol's two bits come out "
           "opposite: one MSK bit a symbol, not QPSK's two)";
  case PRX_QPSK_WARN_SYMBOL_RATE:
    return "the symbols show no symbol-timing line at this symbol rate in most of the input: "
           "check the symbol rate (a signal at twice or half of it looks like QPSK symbols); "
           "the bits are likely wrong";
  case PRX_QPSK_WARN_CFO_ALIAS:
    return "the input's spectrum lies where an alias of the CFO estimate (Rs/4 or Rs/2 away) "
           "would put the carrier: a carrier beyond the acquisition range whose 4th-power line "
           "aliased onto one inside it; the bits are likely wrong (centre the carrier first, or "
           "use polyrx rx --detect)";
  case PRX_QPSK_WARN_WEAK_SIGNAL:
    return "a weak carrier: most blocks show no 4th-power line of their own (Es/N0 below about "
           "4 dB), the CFO spans do: the bits are unreliable (BER ~0.27 at 0 dB differential)";
  case PRX_QPSK_WARN_CLOCK_RANGE:
    return "the symbol clock is beyond the supported +-5000 ppm (check the symbol rate)";
  case PRX_QPSK_WARN_TIMING:
    return "the symbol timing jumped in more than 1% of the blocks (an unstable clock)";
  case PRX_QPSK_WARN_NONFINITE:
    return "NaN or infinite input samples were read as 0 (wrong sample format?)";
  }
  return NULL;
}

double prx_qpsk_sps(const prx_qpsk *q) { return q ? q->sps : 0; }
unsigned prx_qpsk_cfo_span(const prx_qpsk *q) { return q ? q->S : 0; }

void qpsk_span_need(const prx_qpsk *q, int64_t s, int64_t *lo, int64_t *end) {
  *lo = span_need_lo(q, s);
  *end = span_need_end(q, s);
}

void qpsk_stream_reset(prx_qpsk *q) { reset_stream(q); }
