/* Coarse CFO acquisition: outlier rate of the 4th-power spectrum estimate over one CFO span, CFO
 * uniform in the acquisition range (|f| <= 0.12 Rs), random phase, timing and a 50 ppm clock
 * offset. An outlier is an estimate off by more than half a 4th-power spectrum bin
 * (1 / (2 S) Rs): the wrong peak. A correct peak is refined far inside a bin (~1e-6 Rs).
 *
 * The limit is the 4th-power line's SNR: about S * 0.006 at Es/N0 = 0 dB (rho^2 weighting, at the
 * symbol instant; 1 dB less at |f| = 0.12 Rs where the matched pre-filter loses the band edge).
 * For S = 4096 at exactly 0 dB that is ~14 dB, where a noise bin among the ~8000 of the search
 * beats the line in about 1% of the spans: the periodogram's threshold (an ideal 4th-power
 * estimator with perfect timing and filtering measures 0.4%; this is no implementation loss). One
 * more dB, or S = 8192 (the default span), and no outlier is seen in thousands of trials. The
 * test asserts < 1e-3 there and reports the threshold case. The good estimates' rms error must
 * lie between the modified Cramer-Rao bound and 5 times it. Statistical: ~30 s. */
#include "test_qpsk_sig.h"

#include <stdio.h>

typedef struct {
  double f;
  int got;
} first_cfo;

static void on_block(void *user, const prx_qpsk_block *b) {
  first_cfo *fc = user;
  if (!fc->got) {
    fc->f = b->cfo;
    fc->got = 1;
  }
}

/* returns the outlier count over trials */
static size_t outliers(double esn0, unsigned span, double sps, size_t trials, uint64_t seed,
                       double *rms) {
  test_rng r;
  test_rng_seed(&r, seed);
  first_cfo fc = {0, 0};
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  c.differential = 1;
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  qc.cfo_span_symbols = span;
  qc.on_block = on_block;
  qc.user = &fc;
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    CHECK(0, "create: %s", prx_last_error());
    return trials;
  }
  size_t n = (size_t)(span * sps), cap = span + 4096, bad = 0;
  prx_cf32 *x = malloc(n * sizeof *x);
  uint8_t *bits = malloc(2 * cap);
  double e2 = 0;
  *rms = 0;
  for (size_t t = 0; t < trials; t++) {
    tcase_random(&c, &r, 0.12, 50);
    c.timing = test_rng_uniform(&r);
    c.noise = 1;
    c.esn0_db = esn0;
    prx_sim *s;
    if (tcase_sim(&c, &s) != PRX_OK || prx_sim_generate(s, x, n) != PRX_OK) {
      CHECK(0, "generator failed");
      break;
    }
    prx_sim_destroy(s);
    size_t g1, g2;
    fc.got = 0;
    prx_qpsk_reset(q);
    if (prx_qpsk_execute(q, x, n, bits, NULL, cap, &g1) != PRX_OK ||
        prx_qpsk_flush(q, bits, NULL, cap, &g2) != PRX_OK || !fc.got) {
      CHECK(0, "demod failed: %s", prx_last_error());
      break;
    }
    double err = fc.f / qc.symbol_rate - c.cfo;
    if (fabs(err) > 1.0 / (2.0 * span))
      bad++;
    else
      e2 += err * err;
  }
  *rms = sqrt(e2 / (double)(trials - bad + (trials == bad)));
  free(x);
  free(bits);
  prx_qpsk_destroy(q);
  return bad;
}

int main(void) {
  struct {
    double esn0;
    unsigned span;
    double sps;
    size_t trials;
    int asserted;
  } cases[] = {
      {1, 4096, 2, 4000, 1},
      {0, 8192, 2, 3000, 1},
      {3, 4096, 16.0 / 3, 1000, 1},
      {0, 4096, 2, 4000, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double rms = 0;
    size_t bad =
        outliers(cases[i].esn0, cases[i].span, cases[i].sps, cases[i].trials, 31 + i, &rms);
    double rate = (double)bad / cases[i].trials;
    printf("CFO span %5u, Es/N0 %.0f dB, sps %.3f: %zu outliers in %zu trials (rate %.1e), rms "
           "error of the others %.2e Rs%s\n",
           cases[i].span, cases[i].esn0, cases[i].sps, bad, cases[i].trials, rate, rms,
           cases[i].asserted ? "" : "  [threshold case, reported]");
    if (cases[i].asserted) {
      /* < 1e-3 with confidence: at most 1 outlier in >= 3000 trials */
      CHECK(bad <= (cases[i].trials >= 3000 ? 1u : 0u), "outlier rate %.1e at Es/N0 %g dB, span %u",
            rate, cases[i].esn0, cases[i].span);
    } else {
      CHECK(rate < 3e-2, "outlier rate %.1e at the threshold (Es/N0 0 dB, span 4096)", rate);
    }
    /* accuracy against the modified Cramer-Rao bound of a frequency over S symbols at Es/N0,
     * var >= 3 / (2 pi^2 S^3 Es/N0) (cycles/symbol)^2 (the data known: no blind estimator beats
     * it; the 4th power's squaring loss costs a factor 2-4 in rms near 0 dB, measured 2.0-3.5).
     * Dropping the clock correction of the line (4 f (1 + d)) or a worse timing moves it out. */
    double mcrb = sqrt(3 / (2 * M_PI * M_PI * pow(cases[i].span, 3) * pow(10, cases[i].esn0 / 10)));
    printf("  rms error / MCRB = %.2f\n", rms / mcrb);
    CHECK(rms > mcrb && rms < 5 * mcrb, "rms error %.2e Rs is %.2f times the MCRB %.2e Rs", rms,
          rms / mcrb, mcrb);
  }
  return test_finish("test_qpsk_cfo_slow");
}
