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
  unsigned pilot_period, pilot_len;
  double rolloff; /* 0: 0.35 */
  uint64_t seed;  /* data bits */
  uint64_t noise_seed;
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
  car.phase = c->phase;
  car.timing_offset = c->timing;
  car.clock_ppm = c->ppm;
  car.differential = c->differential;
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
  return prx_sim_create(&sc, out);
}

static inline prx_qpsk_config tcase_demod_config(const tcase *c, int threads) {
  prx_qpsk_config qc = prx_qpsk_config_default();
  qc.sample_rate = c->sps * 1e3;
  qc.symbol_rate = 1e3;
  qc.rolloff = c->rolloff > 0 ? c->rolloff : 0.35;
  qc.threads = threads;
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

/* Demodulates x (cf32) in chunks of the given sizes (cycled; {0} = all at once), then flushes.
 * Returns the bits (malloc'd, *nbits), and the LLRs when llrs is not NULL. */
static inline uint8_t *tcase_demod(prx_qpsk *q, const prx_cf32 *x, size_t n, const size_t *chunks,
                                   size_t n_chunks, size_t *nbits, float **llrs) {
  /* every block gives at most block_symbols + 1 symbols: n / sps (1 + 1/256) + 2 blocks bounds
   * what execute and flush together may write */
  size_t cap = (size_t)((double)n / prx_qpsk_sps(q) * (1 + 1.0 / 256)) + 2 * 1025 + 16;
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

#endif
