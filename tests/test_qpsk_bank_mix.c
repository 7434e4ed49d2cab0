/* The bank's per-channel mixer (prx_qpsk_bank_config.mix_hz, src/dsp/mix.c): the mixer against
 * exp(-2 pi i f n) computed in long double at stream indices up to 2^40, its output independent
 * of how the stream is cut; a bank given carriers moved off 0 Hz and the matching mix_hz gives
 * the bits that independent demodulators give for the carriers at 0 Hz (and the transmitted
 * bits), in any chunking; frequencies beyond +-fs/2 are refused. */
#include "dsp/mix.h"
#include "qpsk/qpsk_bank_internal.h"
#include "test_qpsk_sig.h"

#include <string.h>

/* x[k] exp(sign 2 pi i f (n0 + k)) in long double: an independent reference */
static void shift_ref(const prx_cf32 *x, size_t n, double f, uint64_t n0, int sign, prx_cf32 *y) {
  for (size_t k = 0; k < n; k++) {
    long double ph = (long double)f * (long double)(n0 + k);
    ph -= floorl(ph);
    long double a = sign * 2.0L * 3.14159265358979323846264338327950288L * ph;
    long double c = cosl(a), s = sinl(a);
    y[k].re = (float)(x[k].re * c - x[k].im * s);
    y[k].im = (float)(x[k].re * s + x[k].im * c);
  }
}

static void test_mixer(void) {
  test_rng r;
  test_rng_seed(&r, 404);
  const size_t n = 5000;
  prx_cf32 *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref), *a = malloc(n * sizeof *a),
           *b = malloc(n * sizeof *b);
  for (int trial = 0; trial < 8; trial++) {
    double f = test_rng_uniform(&r) - 0.5;
    uint64_t n0 = trial < 4 ? (uint64_t)(test_rng_uniform(&r) * 1000)
                            : ((uint64_t)1 << 40) - (uint64_t)(test_rng_uniform(&r) * 1e6);
    for (size_t k = 0; k < n; k++) {
      x[k].re = (float)(2 * test_rng_uniform(&r) - 1);
      x[k].im = (float)(2 * test_rng_uniform(&r) - 1);
    }
    shift_ref(x, n, f, n0, -1, ref);
    memcpy(a, x, n * sizeof *x);
    prx_mix_down(a, a, n, f, n0);
    double err = 0;
    for (size_t k = 0; k < n; k++) {
      double dr = a[k].re - ref[k].re, di = a[k].im - ref[k].im;
      if (sqrt(dr * dr + di * di) > err) err = sqrt(dr * dr + di * di);
    }
    /* float rounding of a product of magnitude <= sqrt(2): a few 1e-7 */
    CHECK(err < 1e-6, "f %.6f n0 %llu: error %.3g against the long double reference", f,
          (unsigned long long)n0, err);
    /* the same stream cut into random pieces gives the same floats, bit for bit */
    memcpy(b, x, n * sizeof *x);
    for (size_t i = 0; i < n;) {
      size_t m = 1 + (size_t)(test_rng_uniform(&r) * 700);
      if (m > n - i) m = n - i;
      prx_mix_down(b + i, b + i, m, f, n0 + i);
      i += m;
    }
    CHECK(!memcmp(a, b, n * sizeof *a), "f %.6f: chunked mixing differs from one call", f);
  }
  free(x);
  free(ref);
  free(a);
  free(b);
}

#define C 4

static void test_bank_mix(void) {
  const double esn0[C] = {16, 20, 18, 25};
  const double shift[C] = {0.2, -0.25, 0.125, -0.1}; /* cycles per sample: carriers at +-Rs */
  test_rng r;
  test_rng_seed(&r, 77);
  tcase tc[C];
  size_t n = 40000;
  for (unsigned c = 0; c < C; c++) {
    memset(&tc[c], 0, sizeof tc[c]);
    tc[c].sps = 4;
    tc[c].differential = 1;
    tc[c].noise = 1;
    tc[c].esn0_db = esn0[c];
    tcase_random(&tc[c], &r, 0.05, 100);
  }
  for (;; n++) {
    int ok = 1;
    for (unsigned c = 0; c < C && ok; c++) ok = tcase_length(&tc[c], n) == n;
    if (ok) break;
  }
  prx_cf32 *rows = malloc(C * n * sizeof *rows), *x[C];
  uint8_t *sent[C];
  size_t nsent[C];
  for (unsigned c = 0; c < C; c++) {
    x[c] = tcase_make(&tc[c], n, &sent[c], &nsent[c]);
    shift_ref(x[c], n, shift[c], 0, +1, rows + (size_t)c * n); /* the carrier moved up */
  }
  prx_qpsk_config qc = tcase_demod_config(&tc[0], 1);
  double mix_hz[C];
  for (unsigned c = 0; c < C; c++) mix_hz[c] = shift[c] * qc.sample_rate;
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = qc;
  bc.channels = C;
  bc.backend = PRX_BACKEND_CPU;
  bc.threads = 2;
  bc.mix_hz = mix_hz;
  uint8_t *bits[2];
  size_t nsym[2][C];
  for (int run = 0; run < 2; run++) { /* run 0: one call; run 1: random chunks */
    prx_qpsk_bank *b;
    CHECK_OK(prx_qpsk_bank_create(&bc, &b));
    /* every symbol of the stream (n / sps, one more at most) and a call's bound */
    size_t cap = 2 * (n / 4 + 1) + prx_qpsk_bank_bits_capacity(b, n, 1);
    bits[run] = calloc(C, cap);
    size_t got[C], tot[C] = {0};
    uint8_t *tmp = malloc(C * cap);
    for (size_t i = 0; i <= n;) {
      size_t m = run ? 1 + (size_t)(test_rng_uniform(&r) * 9000) : n;
      if (m > n - i) m = n - i;
      int flush = i == n;
      prx_qpsk_bank_out o = {tmp, cap, NULL, 0, got, NULL};
      CHECK_OK(flush ? prx_qpsk_bank_flush(b, &o) : prx_qpsk_bank_execute(b, rows + i, n, m, &o));
      for (unsigned c = 0; c < C; c++) {
        memcpy(bits[run] + c * cap + 2 * tot[c], tmp + c * cap, 2 * got[c]);
        tot[c] += got[c];
      }
      if (flush) break;
      i += m;
    }
    memcpy(nsym[run], tot, sizeof tot);
    free(tmp);
    for (unsigned c = 0; c < C; c++) {
      /* independent demodulators on the carriers at 0 Hz */
      prx_qpsk *q;
      CHECK_OK(prx_qpsk_create(&qc, &q));
      size_t qcap = prx_qpsk_max_symbols(q, n) + n / 4 + 1, a = 0, k = 0;
      uint8_t *qb = malloc(2 * qcap);
      CHECK_OK(prx_qpsk_execute(q, x[c], n, qb, NULL, qcap, &a));
      CHECK_OK(prx_qpsk_flush(q, qb + 2 * a, NULL, qcap - a, &k));
      a += k;
      CHECK(a == tot[c], "run %d channel %u: %zu symbols, the unshifted carrier gives %zu", run, c,
            tot[c], a);
      if (a == tot[c])
        CHECK(!memcmp(qb, bits[run] + c * cap, 2 * a),
              "run %d channel %u: bits differ from the unshifted carrier's", run, c);
      long e = tcase_errors(&tc[c], bits[run] + c * cap, 2 * tot[c], sent[c], nsent[c]);
      CHECK(e == 0, "run %d channel %u at %g dB: %ld bit errors", run, c, esn0[c], e);
      free(qb);
      prx_qpsk_destroy(q);
    }
    if (run) {
      for (unsigned c = 0; c < C; c++)
        CHECK(nsym[0][c] == nsym[1][c] &&
                  !memcmp(bits[0] + c * cap, bits[1] + c * cap, 2 * nsym[0][c]),
              "channel %u: chunked bank output differs from one call", c);
    }
    prx_qpsk_bank_destroy(b);
  }
  free(bits[0]);
  free(bits[1]);
  for (unsigned c = 0; c < C; c++) {
    free(x[c]);
    free(sent[c]);
  }
  free(rows);
}

static void test_bad_mix(void) {
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod.sample_rate = 4000;
  bc.demod.symbol_rate = 1000;
  bc.channels = 2;
  bc.backend = PRX_BACKEND_CPU;
  double bad[2][2] = {{0, 2001}, {NAN, 0}};
  for (int i = 0; i < 2; i++) {
    bc.mix_hz = bad[i];
    prx_qpsk_bank *b = NULL;
    prx_status st = prx_qpsk_bank_create(&bc, &b);
    CHECK(st == PRX_ERR_INVALID && !b && strstr(prx_last_error(), "mix_hz"),
          "mix_hz {%g, %g}: status %d, message '%s'", bad[i][0], bad[i][1], st, prx_last_error());
    prx_qpsk_bank_destroy(b);
  }
}

int main(void) {
  test_mixer();
  test_bank_mix();
  test_bad_mix();
  return test_finish("test_qpsk_bank_mix");
}
