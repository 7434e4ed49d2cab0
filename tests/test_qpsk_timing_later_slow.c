/* The timing of a stream's later CFO spans at Es/N0 0 dB, for carriers near the pre-filter's band
 * edge (|f| 0.09-0.12 Rs, where the edge costs ~1 dB of the O&M line). There most blocks' own O&M
 * line does not stand out of their noise (the lock ratio), so a span has fewer than 4 locked
 * blocks and is not fitted, though its line adds up over the span.
 *
 * 1. Such a span must still follow a line of its own; following the prediction from the span
 * before lets the timing run free on the clock estimate's error (~13 ppm rms: ~0.1 T a span of
 * 8192 symbols), a random walk that grew to 0.16 T rms by the fifth span, with ~10 % of the
 * blocks more than a quarter symbol off and the 4th-power CFO estimate (taken at those instants)
 * missing its line in 5-7 % of the spans. Each stream's first span, which has no prediction, never
 * showed it (test_qpsk_cfo_slow looks at first spans only). Asserted per full span (the first four
 * of 4.5; clock 0 or +-50 ppm): the blocks' timing error rms below 0.055 T (0.026-0.046
 * measured, the O&M estimate's own noise over a span), at most 0.2 % of the blocks more than
 * 0.25 T off (none measured), and at most one CFO outlier (off by more than half a bin) in all the
 * later spans.
 *
 * 2. Where no span was fitted (no block locked at all: +-300 ppm here), a stream's short last span
 * whose line does not add up must keep the clock of the locked spans before it. Taking 0 there
 * moved its timing by e L a block (0.15 T at 300 ppm): with a last span of 4.5 blocks, 31 % of its
 * blocks were more than 0.25 T off (timing rms 0.23 T) and a third of the streams lost or gained
 * symbols. Asserted: at most 1 % of those blocks off, rms below 0.1 T (0.068 measured).
 *
 * sps 4, differential, random phase and timing. Statistical: ~4 s. */
#include "test_qpsk_sig.h"

#define SPAN 8192 /* symbols */
#define BLOCK 512 /* symbols (the default) */
#define PER_SPAN (SPAN / BLOCK)
#define BLOCK_REPORTS 80 /* a stream's block reports kept (up to 72 blocks here) */

typedef struct {
  prx_qpsk_block b[BLOCK_REPORTS];
  size_t n;
  double rs; /* the symbol rate (Hz) */
} reports;

static void keep(void *user, const prx_qpsk_block *b) {
  reports *k = user;
  if (k->n < BLOCK_REPORTS) k->b[k->n++] = *b;
}

/* One stream of nsym symbols at 0 dB near the band edge (clock +-ppm) demodulated: its block
 * reports in *k and its case in *c; 0 where it ran */
static int edge_stream(test_rng *r, double ppm, double nsym, tcase *c, reports *k) {
  memset(c, 0, sizeof *c);
  c->sps = 4;
  c->differential = 1;
  tcase_random(c, r, 0.12, ppm);
  c->cfo = (0.09 + 0.03 * test_rng_uniform(r)) * (test_rng_uniform(r) < 0.5 ? -1 : 1);
  c->noise = 1;
  c->esn0_db = 0;
  size_t n = tcase_length(c, (size_t)(nsym * 4)), nref, nb;
  uint8_t *ref = NULL;
  prx_cf32 *x = tcase_make(c, n, &ref, &nref);
  k->n = 0;
  prx_qpsk_config qc = tcase_demod_config(c, 1);
  k->rs = qc.symbol_rate;
  qc.cfo_span_symbols = SPAN;
  qc.block_symbols = BLOCK;
  qc.on_block = keep;
  qc.user = k;
  prx_qpsk *q = NULL;
  if (!x || prx_qpsk_create(&qc, &q) != PRX_OK) {
    CHECK(0, "create: %s", prx_last_error());
    free(x);
    free(ref);
    return 1;
  }
  uint8_t *bits = tcase_demod(q, x, n, NULL, 0, &nb, NULL);
  CHECK(bits != NULL, "demodulation failed");
  prx_qpsk_destroy(q);
  free(bits);
  free(ref);
  free(x);
  return bits == NULL;
}

static void later_spans(double ppm, size_t streams, uint64_t seed) {
  enum { SPANS = 4 }; /* the full spans checked (of 4.5 a stream) */
  test_rng r;
  test_rng_seed(&r, seed);
  double t2[SPANS] = {0};
  size_t tn[SPANS] = {0}, off[SPANS] = {0}, cfo_out = 0, cfo_n = 0;
  for (size_t i = 0; i < streams; i++) {
    tcase c;
    reports k;
    if (edge_stream(&r, ppm, 4.5 * SPAN, &c, &k)) return;
    for (size_t j = 0; j < k.n; j++) {
      const prx_qpsk_block *b = &k.b[j];
      const size_t s = (size_t)b->index / PER_SPAN;
      if (s >= SPANS) continue;
      const double te = tcase_timing_error(&c, b, BLOCK);
      t2[s] += te * te;
      tn[s]++;
      off[s] += fabs(te) > 0.25;
      if (s > 0 && b->index % PER_SPAN == 0) {
        cfo_n++;
        cfo_out += fabs(b->cfo / k.rs - c.cfo) > 1.0 / (2.0 * SPAN);
      }
    }
  }
  for (size_t s = 0; s < SPANS; s++) {
    const double rms = sqrt(t2[s] / (double)(tn[s] ? tn[s] : 1));
    printf("clock +-%.0f ppm, span %zu: timing rms %.4f T, %zu of %zu blocks off by > 0.25 T\n",
           ppm, s, rms, off[s], tn[s]);
    CHECK(tn[s] == streams * PER_SPAN, "span %zu: %zu block reports", s, tn[s]);
    CHECK(rms < 0.055, "+-%.0f ppm, span %zu: timing rms %.4f T (the timing runs free)", ppm, s,
          rms);
    CHECK(off[s] * 500 <= tn[s], "+-%.0f ppm, span %zu: %zu of %zu blocks off by > 0.25 T", ppm, s,
          off[s], tn[s]);
  }
  printf("clock +-%.0f ppm: %zu CFO outliers in %zu later spans\n", ppm, cfo_out, cfo_n);
  CHECK(cfo_n == streams * (SPANS - 1), "%zu later spans reported", cfo_n);
  CHECK(cfo_out <= 1, "+-%.0f ppm: %zu CFO outliers in %zu later spans", ppm, cfo_out, cfo_n);
}

static void last_span(double ppm, double tail_blocks, size_t streams, uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  double t2 = 0;
  size_t tn = 0, off = 0;
  for (size_t i = 0; i < streams; i++) {
    tcase c;
    reports k;
    if (edge_stream(&r, ppm, 4 * SPAN + tail_blocks * BLOCK, &c, &k)) return;
    for (size_t j = 0; j < k.n; j++) { /* the last span's blocks of half a block or more */
      if (k.b[j].index < 4 * PER_SPAN || k.b[j].n_symbols < BLOCK / 2) continue;
      const double te = tcase_timing_error(&c, &k.b[j], BLOCK);
      t2 += te * te;
      tn++;
      off += fabs(te) > 0.25;
    }
  }
  const double rms = sqrt(t2 / (double)(tn ? tn : 1));
  printf("clock +-%.0f ppm, a last span of %.1f blocks: timing rms %.4f T, %zu of %zu blocks off "
         "by > 0.25 T\n",
         ppm, tail_blocks, rms, off, tn);
  CHECK(tn >= streams * (size_t)tail_blocks, "%zu block reports in the last spans", tn);
  CHECK(rms < 0.1 && off * 100 <= tn,
        "+-%.0f ppm, the last span: timing rms %.4f T, %zu of %zu blocks off by > 0.25 T", ppm, rms,
        off, tn);
}

int main(void) {
  later_spans(0, 100, 71);
  later_spans(50, 100, 72);
  last_span(300, 4.5, 150, 73);
  return test_finish("test_qpsk_timing_later_slow");
}
