/* The demodulator end to end without noise: every symbol back, no bit wrong, at sps 2, 4, 16/3,
 * 5.333, 3.2 and 8 with random CFO up to 0.1 Rs, phase, timing and a +-50 ppm clock offset, in
 * the three ambiguity modes; the same bits and LLRs whatever the chunking of the input and the
 * thread count; the four input formats give the same bits. The counting rule is in
 * test_qpsk_sig.h. */
#include "test_qpsk_sig.h"

#include "qpsk/qpsk_internal.h" /* prx_qpsk_create_plan_later */

static int same_bytes(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

static void zero_noise_case(test_rng *r, double sps, int mode, size_t nsym) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  tcase_random(&c, r, 0.1, 50);
  if (mode == 0) c.differential = 1;
  if (mode == 1) {
    c.pilot_period = 128 + (unsigned)(test_rng_u64(r) % 400);
    c.pilot_len = 8 + (unsigned)(test_rng_u64(r) % 32);
  }
  size_t n = tcase_length(&c, (size_t)(nsym * sps));
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  CHECK(x != NULL, "generator failed: %s", prx_last_error());
  if (!x) return;
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  size_t ngot;
  float *llr = NULL;
  uint8_t *got = tcase_demod(q, x, n, NULL, 0, &ngot, &llr);
  CHECK(got != NULL, "demod failed: %s", prx_last_error());
  /* without noise the LLRs are huge (the noise estimate is the residual distortion), yet finite
   * and of the sign of the decision (the max-log limit of the exact expression) */
  size_t badl = 0;
  for (size_t i = mode == 0 ? 2 : 0; got && i < ngot; i++)
    badl += !isfinite(llr[i]) || (llr[i] < 0) != (got[i] != 0);
  CHECK(badl == 0, "sps %g mode %d: %zu LLRs not finite or against the decision", sps, mode, badl);
  free(llr);
  long e = -2;
  if (got)
    e = mode == 2 ? tcase_errors_any_turn(got, ngot, ref, nref)
                  : tcase_errors(&c, got, ngot, ref, nref);
  CHECK(e == 0,
        "sps %g mode %s cfo %.4f Rs phase %.3f timing %.3f ppm %g: %zu bits for %zu sent, "
        "%ld errors (-1: count differs)",
        sps, prx_qpsk_ambiguity_name(qc.ambiguity), c.cfo, c.phase, c.timing, c.ppm, ngot, nref, e);
  prx_qpsk_stats st;
  prx_qpsk_get_stats(q, &st);
  CHECK(st.symbols == tcase_symbols_in(&c, n), "stats: %llu symbols, expected %zu",
        (unsigned long long)st.symbols, tcase_symbols_in(&c, n));
  if (mode == 1)
    CHECK(st.frame_offset == 0, "pilots: frame offset %lld, expected 0",
          (long long)st.frame_offset);
  prx_qpsk_destroy(q);
  free(got);
  free(ref);
  free(x);
}

/* bits and LLRs of one demodulation */
typedef struct {
  uint8_t *bits;
  float *llrs;
  size_t n;
} run_out;

/* late: the FFT planned at the first CFO stage (prx_qpsk_create_plan_later), as `demod` does */
static run_out run(const tcase *c, const prx_cf32 *x, size_t n, int threads, const size_t *chunks,
                   size_t n_chunks, int late) {
  run_out o = {NULL, NULL, 0};
  prx_qpsk_config qc = tcase_demod_config(c, threads);
  qc.cfo_span_symbols = 4096;
  qc.block_symbols = 256;
  prx_qpsk *q;
  if ((late ? prx_qpsk_create_plan_later(&qc, &q) : prx_qpsk_create(&qc, &q)) != PRX_OK) return o;
  o.bits = tcase_demod(q, x, n, chunks, n_chunks, &o.n, &o.llrs);
  prx_qpsk_destroy(q);
  return o;
}

static void invariance(test_rng *r, double sps, int mode) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  tcase_random(&c, r, 0.1, 50);
  c.noise = 1;
  c.esn0_db = 6;
  c.differential = mode == 0;
  if (mode == 1) {
    c.pilot_period = 200;
    c.pilot_len = 16;
  }
  /* several CFO spans and a ragged end */
  size_t n = tcase_length(&c, (size_t)(3.3 * 4096 * sps));
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  if (!x) {
    CHECK(0, "generator failed");
    return;
  }
  run_out a = run(&c, x, n, 1, NULL, 0, 0);
  CHECK(a.bits && a.n == nref, "reference run: %zu bits, expected %zu", a.n, nref);
  const size_t ch1[] = {1, 7, 1000, 3, 65536, 4095, 17};
  const size_t ch2[] = {4096 * 4 + 1};
  const size_t ch3[] = {333};
  struct {
    int threads;
    const size_t *chunks;
    size_t n;
    int late;
  } v[] = {{2, NULL, 0, 0}, {3, ch1, 7, 0},  {1, ch2, 1, 0}, {5, ch3, 1, 0},
           {2, ch1, 7, 0},  {1, NULL, 0, 1}, {3, ch1, 7, 1}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    run_out b = run(&c, x, n, v[i].threads, v[i].chunks, v[i].n, v[i].late);
    CHECK(b.bits && b.n == a.n && same_bytes(a.bits, b.bits, a.n) &&
              same_bytes(a.llrs, b.llrs, a.n * sizeof(float)),
          "sps %g mode %d: %d threads, chunking %zu%s: output differs from the single-call, "
          "single-thread run (%zu vs %zu bits)",
          sps, mode, v[i].threads, i, v[i].late ? ", planned late" : "", b.n, a.n);
    if (b.bits && b.n == a.n) /* where a difference starts */
      for (size_t k = 0; k < a.n; k++)
        if (a.bits[k] != b.bits[k] || a.llrs[k] != b.llrs[k]) {
          fprintf(stderr, "first difference at bit %zu: %d %g vs %d %g\n", k, a.bits[k], a.llrs[k],
                  b.bits[k], b.llrs[k]);
          break;
        }
    free(b.bits);
    free(b.llrs);
  }
  free(a.bits);
  free(a.llrs);
  free(ref);
  free(x);
}

/* the integer formats carry the same signal: same bits as cf32 (no noise, well inside range) */
static void formats(test_rng *r) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, r, 0.1, 50);
  c.differential = 1;
  size_t n = tcase_length(&c, 30000 * 4);
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  if (!x) {
    CHECK(0, "generator failed");
    return;
  }
  int16_t *x16 = malloc(n * 4);
  int8_t *x8 = malloc(n * 2);
  uint8_t *xu = malloc(n * 2);
  for (size_t i = 0; i < n; i++) { /* the carrier has unit power: peaks stay below 2.5 */
    float re = x[i].re * 0.3f, im = x[i].im * 0.3f;
    x16[2 * i] = (int16_t)lrintf(re * 32768);
    x16[2 * i + 1] = (int16_t)lrintf(im * 32768);
    x8[2 * i] = (int8_t)lrintf(re * 128);
    x8[2 * i + 1] = (int8_t)lrintf(im * 128);
    xu[2 * i] = (uint8_t)lrintf(re * 127.5f + 127.5f);
    xu[2 * i + 1] = (uint8_t)lrintf(im * 127.5f + 127.5f);
  }
  const struct {
    prx_format f;
    const void *p;
  } in[] = {{PRX_CI16, x16}, {PRX_CI8, x8}, {PRX_CU8, xu}};
  for (size_t k = 0; k < 3; k++) {
    prx_qpsk_config qc = tcase_demod_config(&c, 1);
    qc.in_format = in[k].f;
    prx_qpsk *q;
    CHECK_OK(prx_qpsk_create(&qc, &q));
    size_t cap = prx_qpsk_max_symbols(q, n), got1 = 0, got2 = 0;
    uint8_t *bits = malloc(2 * (cap + prx_qpsk_max_symbols(q, 0) + 40000));
    CHECK_OK(prx_qpsk_execute(q, in[k].p, n, bits, NULL, cap, &got1));
    CHECK_OK(prx_qpsk_flush(q, bits + 2 * got1, NULL, prx_qpsk_flush_max_symbols(q), &got2));
    long e = tcase_errors(&c, bits, 2 * (got1 + got2), ref, nref);
    /* ci8 / cu8 quantise to 8 bits (about -40 dB): still no error at this SNR */
    CHECK(e == 0, "format %s: %ld errors (-1: count %zu vs %zu)", prx_format_name(in[k].f), e,
          2 * (got1 + got2), nref);
    free(bits);
    prx_qpsk_destroy(q);
  }
  free(x16);
  free(x8);
  free(xu);
  free(ref);
  free(x);
}

int main(void) {
  test_rng r;
  test_rng_seed(&r, 20261129);
  const double spss[] = {2, 4, 16.0 / 3, 5.333, 3.2, 8};
  for (size_t i = 0; i < sizeof spss / sizeof spss[0]; i++)
    for (int mode = 0; mode < 3; mode++) zero_noise_case(&r, spss[i], mode, 20000);
  /* short streams: one partial block, one block and a bit, under one CFO span */
  const size_t shorts[] = {40, 300, 700, 5000};
  for (size_t i = 0; i < 4; i++) zero_noise_case(&r, 4, 0, shorts[i]);
  for (size_t i = 0; i < 4; i++) zero_noise_case(&r, 16.0 / 3, 1, shorts[i] + 300);
  invariance(&r, 4, 0);
  invariance(&r, 16.0 / 3, 1);
  invariance(&r, 2, 2);
  formats(&r);
  return test_finish("test_qpsk_stream");
}
