/* Pilots and the DC removal: the pilot word repeats every frame, so near 0 Hz its mean is a true
 * DC component of the signal (-18.5 dB of the carrier for a 64:8 frame of the PN15 word), which
 * the demodulator's DC removal (the input's mean) takes out with the receiver's DC. These cases
 * hold the demodulator to the generator's truth where that matters:
 *   - the Es/N0 summary within 0.5 dB at 10, 20 and 30 dB with pilots at CFO 0 and at 0.05 Hz
 *     (1000 Bd: the pilots' mean turns by a fraction of a cycle over the DC window), and the
 *     stream's first CFO span alone (before the frames are known) at 20 dB;
 *   - a receiver's DC 10 dB above the signal with pilots, at CFO 0 and at 0.03 Rs: the Es/N0
 *     summary within 0.5 dB and no bit errors at 20 dB;
 *   - the output with pilots does not depend on the chunking or the thread count (the pilots'
 *     sums carried from span to span).
 * Every signal comes from the generator (prx_sim) with fixed seeds. */
#include "test_qpsk_sig.h"

typedef struct {
  double noise_var; /* sum over the first span's blocks of their noise variance (unit signal) */
  size_t n;
} first_span;

static void log_block(void *user, const prx_qpsk_block *b) {
  first_span *f = user;
  if (b->index < 16 && b->n_symbols > 0) { /* the default span: 16 blocks of 512 symbols */
    f->noise_var += b->noise_var;
    f->n++;
  }
}

typedef struct {
  long errors;
  prx_qpsk_stats st;
  double esn0_first; /* Es/N0 over the first span's blocks, dB */
  uint8_t *bits;
  float *llrs;
  size_t nbits;
} result;

/* the case's n samples through the demodulator in chunks (NULL: one call) with `threads` */
static result run(const tcase *c, size_t n, const size_t *chunks, size_t n_chunks, int threads) {
  result r;
  memset(&r, 0, sizeof r);
  r.errors = -1;
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(c, n, &ref, &nref);
  CHECK(x != NULL, "generator failed: %s", prx_last_error());
  if (!x) return r;
  first_span f = {0, 0};
  prx_qpsk_config qc = tcase_demod_config(c, threads);
  qc.on_block = log_block;
  qc.user = &f;
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  if (q) {
    r.bits = tcase_demod(q, x, n, chunks, n_chunks, &r.nbits, &r.llrs);
    CHECK(r.bits != NULL, "demodulation failed: %s", prx_last_error());
    if (r.bits) r.errors = tcase_errors(c, r.bits, r.nbits, ref, nref);
    prx_qpsk_get_stats(q, &r.st);
    prx_qpsk_destroy(q);
  }
  r.esn0_first = f.n ? -10 * log10(f.noise_var / (double)f.n) : NAN;
  free(x);
  free(ref);
  return r;
}

static void result_free(result *r) {
  free(r->bits);
  free(r->llrs);
}

static tcase pilot_case(test_rng *rng, double cfo, double esn0) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, rng, 0, 20);
  c.cfo = cfo;
  c.noise = 1;
  c.esn0_db = esn0;
  c.pilot_period = 64;
  c.pilot_len = 8;
  return c;
}

/* 6 CFO spans: the DC window (4 spans) full in the later ones */
static size_t case_length(const tcase *c) { return tcase_length(c, (size_t)(6 * 8192 * c->sps)); }

static void esn0_with_pilots(void) {
  test_rng rng;
  test_rng_seed(&rng, 1601);
  const double cfos[] = {0, 0.05e-3}; /* symbol rates: 0 and 0.05 Hz at 1000 Bd */
  const double esn0s[] = {10, 20, 30};
  for (size_t i = 0; i < 2; i++)
    for (size_t k = 0; k < 3; k++) {
      tcase c = pilot_case(&rng, cfos[i], esn0s[k]);
      result r = run(&c, case_length(&c), NULL, 0, 1);
      printf("pilots 64:8, CFO %.2f Hz, Es/N0 %4.1f dB: summary %.2f dB, first span %.2f dB, "
             "%ld errors\n",
             cfos[i] * 1e3, esn0s[k], r.st.esn0_db, r.esn0_first, r.errors);
      CHECK(fabs(r.st.esn0_db - esn0s[k]) < 0.5, "CFO %g Hz, Es/N0 %g dB: summary %.2f dB",
            cfos[i] * 1e3, esn0s[k], r.st.esn0_db);
      /* the first span (frames acquired on it) on its own: its DC is the mean over 8192 symbols,
       * a floor of -39 dB from the random data that 20 dB does not see */
      if (esn0s[k] == 20)
        CHECK(fabs(r.esn0_first - esn0s[k]) < 0.5, "CFO %g Hz, Es/N0 %g dB: first span %.2f dB",
              cfos[i] * 1e3, esn0s[k], r.esn0_first);
      if (esn0s[k] >= 20)
        CHECK(r.errors == 0, "CFO %g Hz, Es/N0 %g dB: %ld bit errors (-1: count)", cfos[i] * 1e3,
              esn0s[k], r.errors);
      result_free(&r);
    }
}

static void receiver_dc(void) {
  test_rng rng;
  test_rng_seed(&rng, 1602);
  const double cfos[] = {0, 0.03};
  const double esn0s[] = {20, 30};
  for (size_t i = 0; i < 2; i++)
    for (size_t k = 0; k < 2; k++) {
      tcase c = pilot_case(&rng, cfos[i], esn0s[k]);
      double a = sqrt(10.0), ph = 2 * M_PI * test_rng_uniform(&rng);
      c.dc_re = a * cos(ph);
      c.dc_im = a * sin(ph);
      result r = run(&c, case_length(&c), NULL, 0, 1);
      printf("pilots 64:8, DC +10 dB, CFO %.3f Rs, Es/N0 %4.1f dB: summary %.2f dB, %ld errors\n",
             cfos[i], esn0s[k], r.st.esn0_db, r.errors);
      CHECK(fabs(r.st.esn0_db - esn0s[k]) < 0.5,
            "DC +10 dB, CFO %g Rs, Es/N0 %g dB: summary %.2f dB", cfos[i], esn0s[k], r.st.esn0_db);
      CHECK(r.errors == 0, "DC +10 dB, CFO %g Rs, Es/N0 %g dB: %ld bit errors (-1: count)", cfos[i],
            esn0s[k], r.errors);
      result_free(&r);
    }
}

static void streaming(void) {
  test_rng rng;
  test_rng_seed(&rng, 1603);
  tcase c = pilot_case(&rng, 0, 12);
  size_t n = case_length(&c);
  result one = run(&c, n, NULL, 0, 1);
  size_t chunks[7];
  for (size_t i = 0; i < 7; i++) chunks[i] = 1 + (size_t)(test_rng_uniform(&rng) * 70000);
  result cut = run(&c, n, chunks, 7, 3);
  CHECK(one.bits && cut.bits && one.nbits == cut.nbits && one.nbits > 0 &&
            !memcmp(one.bits, cut.bits, one.nbits) &&
            !memcmp(one.llrs, cut.llrs, one.nbits * sizeof(float)),
        "pilots: one call on one thread and random chunks on three differ (%zu, %zu bits)",
        one.nbits, cut.nbits);
  result_free(&one);
  result_free(&cut);
}

int main(void) {
  esn0_with_pilots();
  receiver_dc();
  streaming();
  return test_finish("test_qpsk_pilot_dc");
}
