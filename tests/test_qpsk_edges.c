/* The stream's two ends: which symbols come out when a symbol is centred exactly on the first
 * sample (the generator's default timing 0) or exactly at the end of the capture. The rule
 * (qpsk.h): one symbol for every instant in [-1/16, N/sps - 1/16), in symbol periods from the
 * first sample. The expected count is computed here in float64 from the generator's true symbol
 * centres, and the demodulated count must equal it at a low and a high Es/N0, with every bit
 * right at the high one; at the low one the timing estimate's noise must not move a symbol
 * across either end. */
#include "test_qpsk_sig.h"

/* symbols n >= 0 centred at (n + timing) sps_true samples whose nominal time lies in the window */
static size_t expected_symbols(const tcase *c, size_t n_samples) {
  const double lead = 1.0 / 16, st = tcase_sps_true(c), end = (double)n_samples / c->sps - lead;
  size_t k = 0;
  for (size_t n = 0;; n++) {
    double t = ((double)n + c->timing) * st / c->sps;
    if (t >= end) return k;
    if (t >= -lead) k++;
  }
}

static void edge_case(double sps, double timing, double ppm, double esn0_db, size_t nsym,
                      uint64_t seed) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  c.timing = timing;
  c.ppm = ppm;
  c.cfo = 0.03;
  c.phase = 0.7;
  c.differential = 1;
  c.noise = 1;
  c.esn0_db = esn0_db;
  c.seed = seed;
  c.noise_seed = seed + 1;
  /* the capture ends exactly on a nominal symbol boundary */
  size_t n = (size_t)llround((double)nsym * sps);
  size_t want = expected_symbols(&c, n);
  prx_sim *s;
  CHECK_OK(tcase_sim(&c, &s));
  prx_cf32 *x = malloc(n * sizeof *x);
  uint8_t *ref = malloc(2 * want + 1024);
  size_t nref = 0;
  CHECK(x && ref, "out of memory");
  if (!x || !ref) return;
  CHECK_OK(prx_sim_generate(s, x, n));
  CHECK_OK(prx_sim_take_bits(s, 0, ref, 2 * want + 1024, &nref));
  prx_sim_destroy(s);
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  size_t ngot = 0;
  uint8_t *got = tcase_demod(q, x, n, NULL, 0, &ngot, NULL);
  CHECK(got && ngot == 2 * want,
        "sps %g timing %g ppm %g Es/N0 %g dB: %zu symbols out, expected %zu", sps, timing, ppm,
        esn0_db, ngot / 2, want);
  if (got && ngot == 2 * want && esn0_db >= 20) {
    long e = 0;
    for (size_t i = 2; i < ngot; i++) e += got[i] != ref[i];
    CHECK(e == 0, "sps %g timing %g ppm %g Es/N0 %g dB: %ld bit errors", sps, timing, ppm, esn0_db,
          e);
  }
  prx_qpsk_destroy(q);
  free(got);
  free(ref);
  free(x);
}

int main(void) {
  const double timings[] = {0.0, 0.5, 0.9};
  const double ppms[] = {0, 300, -300};
  const double sps_list[] = {4, 16.0 / 3};
  uint64_t seed = 11;
  for (size_t a = 0; a < 2; a++)
    for (size_t t = 0; t < 3; t++)
      for (size_t p = 0; p < 3; p++) {
        edge_case(sps_list[a], timings[t], ppms[p], 30, 12000, seed++);
        edge_case(sps_list[a], timings[t], ppms[p], 6, 12000, seed++);
      }
  return test_finish("test_qpsk_edges");
}
