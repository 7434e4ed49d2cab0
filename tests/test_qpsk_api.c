/* The demodulator's API contract: every impossible configuration is refused with a message naming
 * the parameter; capacity is checked before anything is consumed; empty and tiny streams; reset;
 * the per-block estimates and the callback account for every symbol, in order. */
#include "test_qpsk_sig.h"

#include <string.h>

static prx_qpsk_config base(void) {
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = 48e3;
  c.symbol_rate = 12e3;
  c.threads = 1;
  return c;
}

static void expect_invalid(prx_qpsk_config c, const char *word, const char *what) {
  prx_qpsk *q = (prx_qpsk *)&q; /* must be set to NULL on failure */
  prx_status st = prx_qpsk_create(&c, &q);
  CHECK(st == PRX_ERR_INVALID, "%s: accepted (status %d)", what, (int)st);
  CHECK(q == NULL, "%s: output pointer not cleared", what);
  CHECK(strstr(prx_last_error(), word) != NULL, "%s: message '%s' does not mention '%s'", what,
        prx_last_error(), word);
  if (st == PRX_OK) prx_qpsk_destroy(q);
}

static void config_checks(void) {
  prx_qpsk_config c = base();
  c.sample_rate = 20e3; /* 1.67 samples/symbol */
  expect_invalid(c, "below twice the symbol rate", "sample rate < 2 Rs");
  c = base();
  c.sample_rate = 0;
  expect_invalid(c, "sample rate", "zero sample rate");
  c = base();
  c.symbol_rate = -1;
  expect_invalid(c, "symbol rate", "negative symbol rate");
  c = base();
  c.symbol_rate = NAN;
  expect_invalid(c, "symbol rate", "NaN symbol rate");
  c = base();
  c.sample_rate = 2e9;
  c.symbol_rate = 1e3;
  expect_invalid(c, "samples/symbol", "2e6 samples/symbol");
  c = base();
  c.rolloff = 0;
  expect_invalid(c, "roll-off", "roll-off 0");
  c.rolloff = 1.5;
  expect_invalid(c, "roll-off", "roll-off 1.5");
  c = base();
  c.span = 1;
  expect_invalid(c, "span", "span 1");
  c = base();
  c.block_symbols = 100;
  expect_invalid(c, "block_symbols", "block of 100");
  c.block_symbols = 2048;
  expect_invalid(c, "block_symbols", "block of 2048");
  c = base();
  c.cfo_span_symbols = 1000;
  expect_invalid(c, "cfo_span_symbols", "CFO span 1000");
  /* a span holds 4 blocks at least (the clock's line is fitted over them) */
  c.cfo_span_symbols = 1024;
  expect_invalid(c, "4 blocks", "CFO span 1024 of blocks of 512");
  c.block_symbols = 256;
  {
    prx_qpsk *q = NULL;
    CHECK(prx_qpsk_create(&c, &q) == PRX_OK && prx_qpsk_cfo_span(q) == 1024,
          "CFO span 1024 of blocks of 256 refused: %s", prx_last_error());
    prx_qpsk_destroy(q);
  }
  c = base();
  c.acquisition = 0.2;
  expect_invalid(c, "acquisition", "acquisition 0.2 Rs");
  c = base();
  c.ambiguity = PRX_QPSK_PILOTS;
  c.pilot_period = 100;
  c.pilot_len = 0;
  expect_invalid(c, "pilot_len", "pilot_len 0");
  c.pilot_len = 100;
  expect_invalid(c, "pilot_period", "pilot_len = period");
  c.pilot_period = 100000;
  c.pilot_len = 10;
  expect_invalid(c, "pilot_period", "pilot period > CFO span");
  c = base();
  c.ambiguity = (prx_qpsk_ambiguity)7;
  expect_invalid(c, "ambiguity", "unknown ambiguity mode");
  c = base();
  c.in_format = PRX_CF16;
  expect_invalid(c, "format", "cf16 input");
  c.in_format = (prx_format)42;
  expect_invalid(c, "format", "unknown format");
  c = base();
  c.threads = -3;
  expect_invalid(c, "threads", "negative threads");
  prx_qpsk *q;
  CHECK(prx_qpsk_create(NULL, &q) == PRX_ERR_INVALID, "NULL config accepted");
  c = base();
  CHECK(prx_qpsk_create(&c, NULL) == PRX_ERR_INVALID, "NULL output accepted");
  prx_qpsk_destroy(NULL);
  prx_qpsk_reset(NULL);
  /* the boundary itself is fine: exactly 2 samples per symbol */
  c = base();
  c.sample_rate = 24e3;
  CHECK_OK(prx_qpsk_create(&c, &q));
  prx_qpsk_destroy(q);
}

typedef struct {
  uint64_t next_index, next_symbol, symbols;
  int out_of_order;
} cb_state;

static void on_block(void *user, const prx_qpsk_block *b) {
  cb_state *s = user;
  if (b->index != s->next_index || b->first_symbol != s->next_symbol) s->out_of_order++;
  s->next_index = b->index + 1;
  s->next_symbol = b->first_symbol + b->n_symbols;
  s->symbols += b->n_symbols;
}

static void streams(void) {
  test_rng r;
  test_rng_seed(&r, 4242);
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, &r, 0.05, 50);
  c.differential = 1;
  size_t n = tcase_length(&c, 4 * 20000);
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  CHECK(x != NULL, "generator failed");
  if (!x) return;

  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  cb_state cs = {0, 0, 0, 0};
  qc.on_block = on_block;
  qc.user = &cs;
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));

  /* an empty stream: nothing out, no error */
  size_t got = 99;
  CHECK_OK(prx_qpsk_execute(q, NULL, 0, NULL, NULL, 0, &got));
  CHECK(got == 0, "empty execute gave %zu symbols", got);
  CHECK_OK(prx_qpsk_flush(q, NULL, NULL, 0, &got));
  CHECK(got == 0, "empty flush gave %zu symbols", got);

  /* capacity is checked before consuming anything */
  size_t need = prx_qpsk_max_symbols(q, n);
  CHECK(need > 0, "max_symbols is 0 for %zu samples", n);
  uint8_t *bits = malloc(2 * (n / 4 + 4096));
  prx_status st = prx_qpsk_execute(q, x, n, bits, NULL, need - 1, &got);
  CHECK(st == PRX_ERR_CAPACITY, "capacity %zu < %zu accepted (%d)", need - 1, need, (int)st);
  CHECK(strstr(prx_last_error(), "capacity") != NULL, "capacity message: %s", prx_last_error());
  prx_qpsk_stats stats;
  prx_qpsk_get_stats(q, &stats);
  CHECK(stats.samples == 0, "a refused call consumed %llu samples",
        (unsigned long long)stats.samples);
  CHECK(prx_qpsk_execute(q, NULL, 10, bits, NULL, 100, &got) == PRX_ERR_INVALID,
        "NULL input with n > 0 accepted");

  /* the whole stream, then reset and again: the same bits */
  size_t got1, got2;
  CHECK_OK(prx_qpsk_execute(q, x, n, bits, NULL, need, &got1));
  size_t fneed = prx_qpsk_flush_max_symbols(q);
  CHECK(prx_qpsk_flush(q, bits + 2 * got1, NULL, fneed ? fneed - 1 : 0, &got2) ==
            (fneed ? PRX_ERR_CAPACITY : PRX_OK),
        "flush capacity not checked");
  CHECK_OK(prx_qpsk_flush(q, bits + 2 * got1, NULL, fneed, &got2));
  size_t nb = 2 * (got1 + got2);
  CHECK(tcase_errors(&c, bits, nb, ref, nref) == 0, "first pass: %zu bits for %zu", nb, nref);
  CHECK(cs.out_of_order == 0, "callback saw blocks out of order");
  CHECK(cs.symbols == nb / 2, "callback counted %llu symbols, output %zu",
        (unsigned long long)cs.symbols, nb / 2);
  size_t ne;
  const prx_qpsk_block *est = prx_qpsk_block_estimates(q, &ne);
  CHECK(ne >= 1 && est[ne - 1].first_symbol + est[ne - 1].n_symbols == nb / 2,
        "the flush's last block does not end at the last symbol");
  prx_qpsk_get_stats(q, &stats);
  CHECK(stats.samples == n && stats.symbols == nb / 2 && stats.data_symbols == nb / 2,
        "stats after flush: %llu samples, %llu symbols", (unsigned long long)stats.samples,
        (unsigned long long)stats.symbols);
  for (size_t i = 0; i < ne; i++)
    CHECK(est[i].n_symbols <= qc.block_symbols + 1 && est[i].noise_var > 0 &&
              isfinite(est[i].phase) && isfinite(est[i].timing),
          "block %zu estimates out of range", i);

  /* after flush the object starts a new stream: the same input gives the same bits */
  uint8_t *bits2 = malloc(2 * (n / 4 + 4096));
  cs.next_index = cs.next_symbol = 0;
  CHECK_OK(prx_qpsk_execute(q, x, n / 3, bits2, NULL, prx_qpsk_max_symbols(q, n / 3), &got1));
  /* reset mid-stream, then the whole stream */
  prx_qpsk_reset(q);
  cs.next_index = cs.next_symbol = 0;
  CHECK_OK(prx_qpsk_execute(q, x, n, bits2, NULL, prx_qpsk_max_symbols(q, n), &got1));
  CHECK_OK(prx_qpsk_flush(q, bits2 + 2 * got1, NULL, prx_qpsk_flush_max_symbols(q), &got2));
  CHECK(2 * (got1 + got2) == nb && memcmp(bits, bits2, nb) == 0, "after reset: different bits");
  prx_qpsk_get_stats(q, &stats);
  CHECK(stats.samples == n, "reset did not clear the totals (%llu samples)",
        (unsigned long long)stats.samples);
  free(bits2);

  /* a stream shorter than the filter: no crash, at most a few symbols */
  prx_qpsk_reset(q);
  CHECK_OK(prx_qpsk_execute(q, x, 7, bits, NULL, prx_qpsk_max_symbols(q, 7), &got1));
  CHECK_OK(prx_qpsk_flush(q, bits, NULL, prx_qpsk_flush_max_symbols(q), &got2));
  CHECK(got1 + got2 <= 2, "7 samples gave %zu symbols", got1 + got2);

  /* non-finite samples spoil the blocks they fall in (their estimates fall back to the last
   * ones), never the stream: every symbol still comes out, and the other blocks are right */
  prx_cf32 *bad = malloc(n * sizeof *bad);
  memcpy(bad, x, n * sizeof *bad);
  bad[1234].re = NAN;
  bad[41000].im = INFINITY;
  prx_qpsk_reset(q);
  CHECK_OK(prx_qpsk_execute(q, bad, n, bits, NULL, prx_qpsk_max_symbols(q, n), &got1));
  CHECK_OK(prx_qpsk_flush(q, bits + 2 * got1, NULL, prx_qpsk_flush_max_symbols(q), &got2));
  nb = 2 * (got1 + got2);
  long e = tcase_errors(&c, bits, nb, ref, nref);
  CHECK(e >= 0 && e < (long)nref / 20, "NaN/Inf input: %ld errors in %zu bits (-1: count %zu)", e,
        nref, nb);
  free(bad);

  CHECK(prx_qpsk_sps(q) == 4, "sps %g", prx_qpsk_sps(q));
  CHECK(prx_qpsk_cfo_span(q) % qc.block_symbols == 0 && prx_qpsk_cfo_span(q) >= 4096, "cfo span %u",
        prx_qpsk_cfo_span(q));
  prx_qpsk_destroy(q);
  free(bits);
  free(ref);
  free(x);
}

int main(void) {
  config_checks();
  streams();
  CHECK(!strcmp(prx_qpsk_ambiguity_name(PRX_QPSK_PILOTS), "pilots"), "ambiguity name");
  return test_finish("test_qpsk_api");
}
