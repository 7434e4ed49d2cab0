/* A small, independent QPSK signal builder for the demodulator tests: symbols from random bits
 * (Gray map, optional differential encoding or pilot words, polyrx/modem.h), RRC pulses placed at
 * exact instants t_k = tau0 + k / (1 + ppm 1e-6) symbol periods (any sps, clock offset), carrier
 * offset and phase, AWGN at a given Es/N0. The pulse is tabulated at T/4096 and interpolated
 * linearly (error ~1e-6), which keeps millions of symbols cheap. Reference values (symbols,
 * instants, bits) come out beside the samples. */
#ifndef PRX_TEST_QPSK_SIG_H
#define PRX_TEST_QPSK_SIG_H

#include "testutil.h"

#include "dsp/rrc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double sps, beta;
  unsigned span;
  int noise;
  double esn0_db;
  double cfo;   /* cycles per symbol */
  double phase; /* rad at sample 0 */
  double tau0;  /* instant of symbol 0, symbol periods */
  double ppm;   /* symbol clock offset */
  int diff;
  unsigned pilot_period, pilot_len;
  uint64_t seed;
  double amplitude; /* of the symbols (default 1 when 0) */
} tsig_cfg;

typedef struct {
  prx_cf32 *x;
  size_t n;
  uint8_t *bits; /* data bits, b0 b1 per data symbol */
  size_t nbits;
  size_t nsym; /* symbols (pilots included) */
  size_t ndata;
} tsig;

static inline tsig_cfg tsig_default(double sps) {
  tsig_cfg c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  c.beta = 0.35;
  c.span = 12;
  c.seed = 1;
  return c;
}

static inline void tsig_free(tsig *s) {
  free(s->x);
  free(s->bits);
  memset(s, 0, sizeof *s);
}

/* n samples; returns 0 on success */
static inline int tsig_make(const tsig_cfg *c, size_t n, tsig *out) {
  memset(out, 0, sizeof *out);
  const int RES = 4096;
  const double half = c->span / 2.0;
  size_t ntab = (size_t)(2 * half * RES) + 2;
  double *tab = malloc(ntab * sizeof *tab);
  out->x = calloc(n ? n : 1, sizeof *out->x);
  double *acc = calloc(2 * (n ? n : 1), sizeof *acc);
  if (!tab || !out->x || !acc) return -1;
  for (size_t i = 0; i < ntab; i++) tab[i] = prx_rrc_pulse((double)i / RES - half, c->beta);
  double T = 1.0 / (1.0 + c->ppm * 1e-6), end = (double)n / c->sps;
  size_t nsym = c->tau0 < end ? (size_t)ceil((end - c->tau0) / T) : 0;
  while (nsym > 0 && c->tau0 + (nsym - 1) * T >= end) nsym--;
  out->bits = malloc(2 * (nsym + 1));
  test_rng rng;
  test_rng_seed(&rng, c->seed);
  double amp = c->amplitude > 0 ? c->amplitude : 1.0;
  prx_cf32 prev = {0.70710678f, 0.70710678f};
  size_t nb = 0, nd = 0;
  for (size_t k = 0; k < nsym; k++) {
    prx_cf32 s;
    size_t pos = c->pilot_period ? k % c->pilot_period : (size_t)-1;
    if (c->pilot_period && pos < c->pilot_len) {
      s = prx_qpsk_pilot(pos);
    } else {
      unsigned b0 = (unsigned)(test_rng_u64(&rng) >> 63), b1 = (unsigned)(test_rng_u64(&rng) >> 63);
      out->bits[nb++] = (uint8_t)b0;
      out->bits[nb++] = (uint8_t)b1;
      nd++;
      if (c->diff) {
        unsigned g = prx_qpsk_diff_rotation(b0, b1);
        s = prev;
        for (unsigned r = 0; r < g; r++) { /* times j */
          float t = s.re;
          s.re = -s.im;
          s.im = t;
        }
        prev = s;
      } else {
        s = prx_qpsk_map(b0, b1);
      }
    }
    double tk = (c->tau0 + k * T) * c->sps; /* in samples */
    long lo = (long)ceil(tk - half * c->sps), hi = (long)floor(tk + half * c->sps);
    if (lo < 0) lo = 0;
    if (hi > (long)n - 1) hi = (long)n - 1;
    for (long i = lo; i <= hi; i++) {
      double u = ((double)i - tk) / c->sps + half; /* table position, symbols */
      double f = u * RES;
      size_t j = (size_t)f;
      if (j + 1 >= ntab) continue;
      double p = tab[j] + (f - j) * (tab[j + 1] - tab[j]);
      acc[2 * i] += amp * p * s.re;
      acc[2 * i + 1] += amp * p * s.im;
    }
  }
  out->nsym = nsym;
  out->ndata = nd;
  out->nbits = nb;
  /* carrier, then noise of per-sample variance sps / (Es/N0) (Es = amp^2 sps per symbol) */
  double sig2 = c->noise ? amp * amp * c->sps / pow(10, c->esn0_db / 10) : 0;
  test_rng nr;
  test_rng_seed(&nr, c->seed * 7919 + 17);
  double w = 2 * M_PI * c->cfo / c->sps;
  for (size_t i = 0; i < n; i++) {
    double ph = c->phase + w * (double)i, cr = cos(ph), ci = sin(ph);
    double re = acc[2 * i] * cr - acc[2 * i + 1] * ci, im = acc[2 * i] * ci + acc[2 * i + 1] * cr;
    if (sig2 > 0) {
      re += sqrt(sig2 / 2) * test_rng_gauss(&nr);
      im += sqrt(sig2 / 2) * test_rng_gauss(&nr);
    }
    out->x[i].re = (float)re;
    out->x[i].im = (float)im;
  }
  free(tab);
  free(acc);
  return 0;
}

/* Demodulates x in chunks of the given size (0: all at once), then flushes. Returns the bits
 * (malloc'd) and their count, or NULL on error. */
static inline uint8_t *tsig_demod(prx_qpsk *q, const prx_cf32 *x, size_t n, size_t chunk,
                                  size_t *nbits, float **llrs_out) {
  size_t cap = prx_qpsk_max_symbols(q, n) + prx_qpsk_flush_max_symbols(q) + 2 * 1024 + n;
  uint8_t *bits = malloc(2 * cap);
  float *llrs = llrs_out ? malloc(2 * cap * sizeof(float)) : NULL;
  size_t tot = 0, got;
  if (chunk == 0) chunk = n ? n : 1;
  for (size_t i = 0; i < n; i += chunk) {
    size_t m = n - i < chunk ? n - i : chunk;
    if (prx_qpsk_execute(q, x + i, m, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot,
                         &got) != PRX_OK) {
      free(bits);
      free(llrs);
      return NULL;
    }
    tot += got;
  }
  if (prx_qpsk_flush(q, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot, &got) != PRX_OK) {
    free(bits);
    free(llrs);
    return NULL;
  }
  tot += got;
  *nbits = 2 * tot;
  if (llrs_out) *llrs_out = llrs;
  return bits;
}

#endif
