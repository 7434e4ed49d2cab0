/* Shared helpers of the demodulator tests: one QPSK carrier from the generator (prx_sim) with
 * the impairments of a case, demodulated in chunks, and the transmitted data bits that the
 * demodulator must give back.
 *
 * Counting (the rule every BER and zero-error test applies): the demodulator outputs one symbol
 * for every symbol centred in [0, N) samples of an N-sample capture (polyrx/qpsk.h), pilots
 * consumed. The reference is the generator's data bits of the same symbols: symbol n is centred
 * at first_symbol + n sps (prx_sim_carrier_state), so n_in = #{n >= 0 : that < N}, and the data
 * symbols among them are n_in minus the pilots. The demodulator's output must have exactly that
 * many bits (a lost or inserted symbol fails the test), compared at offset 0. With differential
 * encoding the first symbol's bits are decoded against a reference the receiver cannot know (the
 * carrier phase is unknown modulo pi/2), so they are left out of the error count. A symbol centred
 * within a few hundredths of a symbol of either end of the capture has half its pulse cut off and
 * is physically ambiguous; the cases keep the ends at least 0.1 symbol from a symbol centre
 * (tcase_length), everything else is random. */
#ifndef PRX_TEST_QPSK_SIG_H
#define PRX_TEST_QPSK_SIG_H

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double sps;    /* fs / Rs (nominal) */
  double cfo;    /* symbol rates */
  double phase;  /* rad */
  double timing; /* [0, 1) */
  double ppm;
  int noise;
  double esn0_db;
  int differential;
  int pi4; /* pi/4-QPSK: the generator's and the demodulator's */
  unsigned pilot_period, pilot_len;
  double rolloff; /* 0: 0.35 */
  unsigned span;  /* 0: 12; the RRC span of the generator and the matched filter, symbols */
  uint64_t seed;  /* data bits */
  uint64_t noise_seed;
  double dc_re, dc_im;     /* DC offset added by the generator (signal power is 1) */
  const prx_sim_gap *gaps; /* the generator's gaps */
  size_t n_gaps;
  double scale;      /* 0: 1; else the samples are multiplied by it (cf32 level) */
  prx_format format; /* demodulator input: cf32 (default), or the samples quantised
                        to ci16 / ci8 / cu8 at full_scale (tcase_ber) */
  double full_scale; /* integer formats: the sample value 1.0 maps to this many LSBs */
  unsigned block_symbols, cfo_span_symbols; /* the demodulator's (0: its defaults) */
} tcase;

/* Random impairments as the issue asks: CFO up to max_cfo symbol rates, any phase, timing in
 * [0.1, 0.9), clock offset +-ppm. */
static inline void tcase_random(tcase *c, test_rng *r, double max_cfo, double ppm) {
  c->cfo = max_cfo * (2 * test_rng_uniform(r) - 1);
  c->phase = 2 * M_PI * test_rng_uniform(r);
  c->timing = 0.1 + 0.8 * test_rng_uniform(r);
  c->ppm = test_rng_uniform(r) < 0.5 ? -ppm : ppm;
  c->seed = test_rng_u64(r) | 1;
  c->noise_seed = test_rng_u64(r) | 1;
}

/* true samples per symbol */
static inline double tcase_sps_true(const tcase *c) { return c->sps / (1 + c->ppm * 1e-6); }

/* Block b's timing against the generator's: the true symbol instant nearest the block's centre
 * (blocks of L symbols), in the demodulator's nominal symbols, from b's reported timing, wrapped
 * into [-0.5, 0.5] symbol. */
static inline double tcase_timing_error(const tcase *c, const prx_qpsk_block *b, double L) {
  const double eps = c->ppm * 1e-6, centre = ((double)b->index + 0.5) * L;
  const double truth = (round(centre * (1 + eps) - c->timing) + c->timing) / (1 + eps);
  const double te = b->timing - truth;
  return te - round(te);
}

/* A capture length near n_want samples whose end is at least 0.1 symbol from a symbol centre. */
static inline size_t tcase_length(const tcase *c, size_t n_want) {
  double st = tcase_sps_true(c), first = c->timing * st;
  for (size_t n = n_want;; n++) {
    double u = ((double)n - first) / st; /* centres below n: ceil(u) */
    double fr = u - floor(u);
    if (fr > 0.1 && fr < 0.9) return n;
  }
}

/* Symbols centred in [0, n) and the data symbols among them. */
static inline size_t tcase_symbols_in(const tcase *c, size_t n) {
  double st = tcase_sps_true(c), first = c->timing * st;
  return (double)n > first ? (size_t)ceil(((double)n - first) / st) : 0;
}
static inline size_t tcase_data_in(const tcase *c, size_t n) {
  size_t s = tcase_symbols_in(c, n);
  if (!c->pilot_period) return s;
  size_t P = c->pilot_period, pl = c->pilot_len;
  size_t pil = s / P * pl + (s % P < pl ? s % P : pl);
  return s - pil;
}

static inline prx_status tcase_sim(const tcase *c, prx_sim **out) {
  prx_sim_carrier car = prx_sim_carrier_default();
  car.symbol_rate = 1e3;
  car.freq = c->cfo * car.symbol_rate;
  car.rolloff = c->rolloff > 0 ? c->rolloff : 0.35;
  if (c->span) car.span = c->span;
  car.phase = c->phase;
  car.timing_offset = c->timing;
  car.clock_ppm = c->ppm;
  car.differential = c->differential;
  car.pi4 = c->pi4;
  car.pilot_period = c->pilot_period;
  car.pilot_len = c->pilot_len;
  car.seed = c->seed;
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = c->sps * car.symbol_rate;
  sc.carriers = &car;
  sc.n_carriers = 1;
  sc.noise = c->noise;
  sc.esn0_db = c->esn0_db;
  sc.noise_seed = c->noise_seed ? c->noise_seed : 1;
  sc.threads = 1;
  sc.dc_re = c->dc_re;
  sc.dc_im = c->dc_im;
  sc.gaps = c->gaps;
  sc.n_gaps = c->n_gaps;
  return prx_sim_create(&sc, out);
}

static inline prx_qpsk_config tcase_demod_config(const tcase *c, int threads) {
  prx_qpsk_config qc = prx_qpsk_config_default();
  qc.sample_rate = c->sps * 1e3;
  qc.symbol_rate = 1e3;
  qc.rolloff = c->rolloff > 0 ? c->rolloff : 0.35;
  if (c->span) qc.span = c->span;
  if (c->block_symbols) qc.block_symbols = c->block_symbols;
  if (c->cfo_span_symbols) qc.cfo_span_symbols = c->cfo_span_symbols;
  qc.threads = threads;
  qc.in_format = c->format;
  qc.modulation = c->pi4 ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
  if (c->pilot_period) {
    qc.ambiguity = PRX_QPSK_PILOTS;
    qc.pilot_period = c->pilot_period;
    qc.pilot_len = c->pilot_len;
  } else {
    qc.ambiguity = c->differential ? PRX_QPSK_DIFFERENTIAL : PRX_QPSK_NONE;
  }
  return qc;
}

/* n samples of the case (malloc'd); bits (malloc'd) are the data bits of the symbols centred in
 * the capture, *nbits their count. */
static inline prx_cf32 *tcase_make(const tcase *c, size_t n, uint8_t **bits, size_t *nbits) {
  prx_sim *s;
  if (tcase_sim(c, &s) != PRX_OK) return NULL;
  prx_cf32 *x = malloc((n ? n : 1) * sizeof *x);
  size_t nb = 2 * tcase_data_in(c, n), cap = nb + 4 * 64 + 16, got = 0;
  uint8_t *b = malloc(cap);
  if (!x || !b || prx_sim_generate(s, x, n) != PRX_OK ||
      prx_sim_take_bits(s, 0, b, cap, &got) != PRX_OK || got < nb) {
    free(x);
    free(b);
    prx_sim_destroy(s);
    return NULL;
  }
  prx_sim_destroy(s);
  *bits = b;
  *nbits = nb;
  return x;
}

/* Signals that are not QPSK, or QPSK with a receiver's I/Q error or through two paths
 * (PRX_QPSK_WARN_NOT_QPSK's and PRX_QPSK_WARN_LEVELS's cases), made in place from the
 * generator's noise-free QPSK at CFO 0 and phase 0 (x = (a + j b) pulses, a and b = +-1/sqrt 2):
 * BPSK (sqrt 2 a), an unmodulated carrier (1), QPSK with 10 % of gain and 5 degrees of
 * quadrature error, 16QAM ((2 x(t) + x(t - 6 T)) / sqrt 5: the pulses of the symbols 2 s_k +
 * s_(k-6), 16QAM's grid; 6 sps must be whole), or QPSK through two paths a symbol apart
 * ((x(t) + 0.3 x(t - T)) / sqrt 1.09; sps whole), or MSK at the symbol rate (its phase moving
 * by +-pi/2 over each symbol, the sign from the QPSK symbol's real part there: one bit a symbol,
 * its pulses x not used otherwise); each turned by the CFO and phase and given
 * complex Gaussian noise at the Es/N0 (unit signal power: E|n|^2 = sps 10^(-Es/N0 / 10)) that
 * tcase_line_of took from the case. */
enum { TCASE_BPSK, TCASE_CARRIER, TCASE_IQ_ERROR, TCASE_QAM16, TCASE_TWO_PATH, TCASE_MSK };
typedef struct {
  int kind;
  double cfo, phase, esn0, sps;
  uint64_t seed; /* the noise's */
} tcase_line;
/* the case's CFO, phase and Es/N0 into the line signal of that kind, the case's own set to 0 and
 * its noise off (the generator then makes x as tcase_line_make needs it) */
static inline tcase_line tcase_line_of(tcase *c, int kind, uint64_t seed) {
  const tcase_line l = {kind, c->cfo, c->phase, c->esn0_db, c->sps, seed};
  c->cfo = c->phase = 0;
  c->noise = 0;
  return l;
}
static inline void tcase_line_make(prx_cf32 *x, size_t n, const tcase_line *l) {
  test_rng rng;
  test_rng_seed(&rng, l->seed);
  const double sd = sqrt(l->sps * pow(10, -l->esn0 / 10) / 2), skew = 5 * M_PI / 180;
  /* the delayed path's samples (16QAM, two paths): a copy of the pulses */
  const int delayed = l->kind == TCASE_QAM16 || l->kind == TCASE_TWO_PATH;
  const double dly = (l->kind == TCASE_QAM16 ? 6 : 1) * l->sps,
               w = l->kind == TCASE_QAM16 ? 0.5 : 0.3;
  const size_t D = (size_t)llround(dly);
  prx_cf32 *x0 =
      delayed || l->kind == TCASE_MSK ? malloc((n ? n : 1) * sizeof *x0) : NULL; /* (the pulses) */
  if ((l->kind == TCASE_MSK && !x0) || (delayed && (!x0 || fabs(dly - (double)D) > 1e-9))) {
    fprintf(stderr, "tcase_line_make: no memory, or a delay of %g samples (not whole)\n", dly);
    free(x0);
    return;
  }
  if (x0) memcpy(x0, x, n * sizeof *x0);
  double msk = 0; /* TCASE_MSK: the phase so far */
  for (size_t k = 0; k < n; k++) {
    const double a = x[k].re, b = x[k].im;
    double re = M_SQRT2 * a, im = 0;
    if (l->kind ==
        TCASE_MSK) { /* the bit of the symbol k lies in: the pulses' sign at its centre */
      const size_t c = (size_t)(floor((double)k / l->sps) * l->sps + l->sps / 2);
      msk += (c < n && x0[c].re < 0 ? -1 : 1) * (M_PI / 2) / l->sps;
      re = cos(msk);
      im = sin(msk);
    }
    if (l->kind == TCASE_CARRIER) re = 1;
    if (l->kind == TCASE_IQ_ERROR) {
      re = a;
      im = 1.1 * (b * cos(skew) + a * sin(skew));
    }
    if (delayed) {
      const double g = 1 / sqrt(1 + w * w);
      re = (a + (k >= D ? w * x0[k - D].re : 0)) * g;
      im = (b + (k >= D ? w * x0[k - D].im : 0)) * g;
    }
    const double ph = 2 * M_PI * l->cfo * (double)k / l->sps + l->phase;
    const double cr = cos(ph), si = sin(ph);
    x[k].re = (float)(re * cr - im * si + sd * test_rng_gauss(&rng));
    x[k].im = (float)(re * si + im * cr + sd * test_rng_gauss(&rng));
  }
  free(x0);
}

/* Demodulates x (cf32) in chunks of the given sizes (cycled; {0} = all at once), then flushes.
 * Returns the bits (malloc'd, *nbits), and the LLRs when llrs is not NULL. */
static inline uint8_t *tcase_demod(prx_qpsk *q, const prx_cf32 *x, size_t n, const size_t *chunks,
                                   size_t n_chunks, size_t *nbits, float **llrs) {
  /* a block gives at most block_symbols / (1 - 0.0062) + 3 symbols (clock offsets to the
   * demodulator's clamp): n / sps (1 + 2%) + 4 blocks bounds what execute and flush together may
   * write */
  size_t cap = (size_t)((double)n / prx_qpsk_sps(q) * 1.02) + 4 * 1100 + 16;
  uint8_t *bits = malloc(2 * cap);
  float *l = llrs ? malloc(2 * cap * sizeof(float)) : NULL;
  size_t tot = 0, got = 0, ci = 0;
  *nbits = 0;
  if (!bits || (llrs && !l)) goto fail;
  for (size_t i = 0; i < n;) {
    size_t m = chunks && chunks[ci % n_chunks] ? chunks[ci % n_chunks] : n;
    ci++;
    if (m > n - i) m = n - i;
    if (prx_qpsk_execute(q, x + i, m, bits + 2 * tot, l ? l + 2 * tot : NULL, cap - tot, &got) !=
        PRX_OK)
      goto fail;
    tot += got;
    i += m;
  }
  if (prx_qpsk_flush(q, bits + 2 * tot, l ? l + 2 * tot : NULL, cap - tot, &got) != PRX_OK)
    goto fail;
  tot += got;
  *nbits = 2 * tot;
  if (llrs) *llrs = l;
  return bits;
fail:
  free(bits);
  free(l);
  return NULL;
}

/* Bit errors of got against ref over the counted bits (see the rule above); -1 when the counts
 * differ (a symbol lost or inserted). */
static inline long tcase_errors(const tcase *c, const uint8_t *got, size_t ngot, const uint8_t *ref,
                                size_t nref) {
  if (ngot != nref) return -1;
  size_t start = c->differential && !c->pilot_period ? 2 : 0;
  long e = 0;
  for (size_t i = start; i < nref; i++) e += got[i] != ref[i];
  return e;
}

/* For PRX_QPSK_NONE: the fewest errors over the four quarter-turns of the Gray map (the phase is
 * known modulo pi/2 only). */
static inline long tcase_errors_any_turn(const uint8_t *got, size_t ngot, const uint8_t *ref,
                                         size_t nref) {
  if (ngot != nref) return -1;
  long best = -1;
  for (int t = 0; t < 4; t++) {
    long e = 0;
    for (size_t i = 0; i + 1 < nref; i += 2) {
      /* rotate the received symbol's bits by t quarter-turns: the quadrant index steps by t */
      unsigned b0 = got[i], b1 = got[i + 1];
      unsigned quad = 2 * b1 + (b0 ^ b1);
      quad = (quad + (unsigned)t) & 3u;
      unsigned r1 = quad >> 1, r0 = (quad & 1u) ^ r1;
      e += (r0 != ref[i]) + (r1 != ref[i + 1]);
    }
    if (best < 0 || e < best) best = e;
  }
  return best;
}

/* x (cf32, n samples) as the case's demodulator input: scaled by c->scale (cf32) or quantised
 * (round half to even, saturating) to ci16 / ci8 / cu8 with 1.0 at c->full_scale LSBs. out holds
 * n samples of the format. */
static inline void tcase_encode(const tcase *c, const prx_cf32 *x, size_t n, void *out) {
  const float *f = (const float *)x;
  switch (c->format) {
  case PRX_CI16:
  case PRX_CI8:
  case PRX_CU8: {
    double lo = c->format == PRX_CI16 ? -32768 : c->format == PRX_CI8 ? -128 : 0;
    double hi = c->format == PRX_CI16 ? 32767 : c->format == PRX_CI8 ? 127 : 255;
    double off = c->format == PRX_CU8 ? 127.5 : 0;
    for (size_t i = 0; i < 2 * n; i++) {
      double v = nearbyint((double)f[i] * c->full_scale + off);
      v = v < lo ? lo : (v > hi ? hi : v);
      if (c->format == PRX_CI16)
        ((int16_t *)out)[i] = (int16_t)v;
      else if (c->format == PRX_CI8)
        ((int8_t *)out)[i] = (int8_t)v;
      else
        ((uint8_t *)out)[i] = (uint8_t)v;
    }
    break;
  }
  default: {
    float g = c->scale != 0 ? (float)c->scale : 1.0f;
    float *o = out;
    for (size_t i = 0; i < 2 * n; i++) o[i] = f[i] * g;
  }
  }
}

/* Runs the case through the generator and the demodulator (one thread) in chunks of 64k samples
 * until nbits_want data bits are counted; *errors and *bits give the result (errors -1: a symbol
 * lost or inserted). The demodulator's summary goes to *stats when not NULL. Returns 0, or -1
 * when something failed (reported through CHECK). */
static inline int tcase_ber(const tcase *c, size_t nbits_want, long *errors, size_t *bits,
                            prx_qpsk_stats *stats) {
  *errors = -1;
  *bits = 0;
  double data_frac = c->pilot_period ? 1 - (double)c->pilot_len / c->pilot_period : 1;
  size_t nsym = (size_t)(nbits_want / 2 / data_frac) + 1000;
  size_t n = tcase_length(c, (size_t)(nsym * c->sps));
  size_t nref = 2 * tcase_data_in(c, n);
  prx_sim *s;
  if (tcase_sim(c, &s) != PRX_OK) {
    CHECK(0, "generator: %s", prx_last_error());
    return -1;
  }
  prx_qpsk_config qc = tcase_demod_config(c, 1);
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    CHECK(0, "demod: %s", prx_last_error());
    prx_sim_destroy(s);
    return -1;
  }
  size_t chunk = 65536, have_ref = 0, have = 0;
  size_t cap = nref / 2 + (size_t)((double)n / c->sps * 0.02) + 8192;
  uint8_t *ref = malloc(nref + 4096), *got = malloc(2 * cap);
  prx_cf32 *x = malloc(chunk * sizeof *x);
  void *enc = malloc(chunk * sizeof *x);
  int ok = ref && got && x && enc;
  for (size_t i = 0; ok && i < n; i += chunk) {
    size_t m = n - i < chunk ? n - i : chunk, k;
    ok = prx_sim_generate(s, x, m) == PRX_OK &&
         prx_sim_take_bits(s, 0, ref + have_ref, nref + 4096 - have_ref, &k) == PRX_OK;
    have_ref += k;
    size_t sym;
    if (ok) {
      tcase_encode(c, x, m, enc);
      ok = prx_qpsk_max_symbols(q, m) <= cap - have / 2 &&
           prx_qpsk_execute(q, enc, m, got + have, NULL, cap - have / 2, &sym) == PRX_OK;
    }
    if (ok) have += 2 * sym;
  }
  size_t sym;
  if (ok)
    ok = prx_qpsk_flush_max_symbols(q) <= cap - have / 2 &&
         prx_qpsk_flush(q, got + have, NULL, cap - have / 2, &sym) == PRX_OK;
  if (ok) have += 2 * sym;
  CHECK(ok && have_ref >= nref, "generation or demodulation failed: %s", prx_last_error());
  if (ok) {
    *errors = tcase_errors(c, got, have, ref, nref);
    *bits = nref - (c->differential && !c->pilot_period ? 2 : 0);
    if (*errors < 0) fprintf(stderr, "  count mismatch: %zu bits out, %zu expected\n", have, nref);
  }
  if (stats) prx_qpsk_get_stats(q, stats);
  free(x);
  free(enc);
  free(ref);
  free(got);
  prx_qpsk_destroy(q);
  prx_sim_destroy(s);
  return ok ? 0 : -1;
}

/* The slow BER tests' points (test_qpsk_ber_slow's): Eb/N0 4, 6 and 8 dB (ei 0..2), the case
 * DE-QPSK or coherent with pilots (16 of every 256 symbols) in noise at that Eb/N0 (Es/N0
 * 3.01 dB more); the BER thresholds there, theory + 0.25 dB. */
static const double tcase_ebn0s[3] = {4, 6, 8};
static inline void tcase_ber_mode(tcase *c, size_t ei, int pilots) {
  c->noise = 1;
  c->esn0_db = tcase_ebn0s[ei] + 10 * log10(2.0);
  c->differential = !pilots;
  if (pilots) {
    c->pilot_period = 256;
    c->pilot_len = 16;
  }
}
static inline double tcase_ber_bound(size_t ei, int pilots) {
  static const double bound_diff[3] = {2.90e-2, 6.09e-3, 5.57e-4};
  static const double bound_coh[3] = {1.47e-2, 3.06e-3, 2.79e-4};
  return pilots ? bound_coh[ei] : bound_diff[ei];
}

static inline double tcase_qfunc(double x) { return 0.5 * erfc(x / sqrt(2)); }

#endif
