/* The stream's last CFO span when it is short (a fraction of a block to a few blocks) and the
 * carrier's clock is off by +-1000 or +-5000 ppm: every symbol sent comes out exactly once, with
 * no bit error at 20 dB Es/N0, and the tail's BER at Eb/N0 8 dB stays below the DE-QPSK threshold
 * of the demodulator issue (5.57e-4); and the end of a long stream at 256-symbol blocks. The stream
 * is one or two complete spans and then the short one; the cases cover sps 2, 4 and 5.333, blocks
 * of 256 and 512 symbols, spans of 4096 and 8192 symbols. The expected symbols and bits come from
 * the generator (test_qpsk_sig.h). */
#include "test_qpsk_sig.h"

/* symbols counted from the end of the stream that make up the "tail region" of the BER check */
#define TAIL_SYMBOLS 1024

/* Runs one case; returns the bit errors in the tail region (or -1 when the counts differ) and
 * the tail's bit count in *tail_bits. */
static long tail_case(tcase *c, unsigned block, unsigned span, unsigned nspans, double tail_blocks,
                      size_t *tail_bits) {
  size_t nsym = (size_t)((double)nspans * span + tail_blocks * block);
  size_t n = tcase_length(c, (size_t)((double)nsym * c->sps));
  uint8_t *ref = NULL;
  size_t nref = 0;
  prx_cf32 *x = tcase_make(c, n, &ref, &nref);
  CHECK(x != NULL, "generator failed");
  if (!x) return -2;
  prx_qpsk_config qc = tcase_demod_config(c, 1);
  qc.block_symbols = block;
  qc.cfo_span_symbols = span;
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  size_t ngot = 0;
  const size_t chunks[] = {40000, 7777};
  uint8_t *got = tcase_demod(q, x, n, chunks, 2, &ngot, NULL);
  CHECK(got != NULL, "demodulation failed: %s", prx_last_error());
  long e = -1;
  *tail_bits = 0;
  if (got && ngot == nref) {
    size_t tb = 2 * TAIL_SYMBOLS < nref ? 2 * TAIL_SYMBOLS : nref;
    e = 0;
    for (size_t i = nref - tb; i < nref; i++) e += got[i] != ref[i];
    *tail_bits = tb;
  } else if (got) {
    fprintf(stderr, "  %zu symbols out, %zu sent\n", ngot / 2, nref / 2);
  }
  prx_qpsk_destroy(q);
  free(got);
  free(ref);
  free(x);
  return e;
}

/* a random differential carrier at SPS in noise at ESN0_DB Es/N0, its clock offset PPM or -PPM
   (tcase_random) */
static tcase tail_tcase(test_rng *r, double sps, double ppm, double esn0_db) {
  tcase c;
  memset(&c, 0, sizeof c);
  tcase_random(&c, r, 0.05, ppm);
  c.sps = sps;
  c.differential = 1;
  c.noise = 1;
  c.esn0_db = esn0_db;
  return c;
}

/* A long stream at 256-symbol blocks (8 O&M sub-blocks each) and +-1000 ppm, Eb/N0 8 dB: the
 * BER of its last 8192 symbols (16 spans after its start) below the threshold. The blocks'
 * timing must keep being measured: instants extrapolated from the stream's start by the spans'
 * slopes drift away from the symbols' centres. */
static void long_stream_check(test_rng *r) {
  long errs = 0;
  size_t bits = 0;
  for (int rep = 0; rep < 12; rep++) {
    double sps = rep % 3 == 0 ? 4 : rep % 3 == 1 ? 2 : 16.0 / 3;
    tcase c = tail_tcase(r, sps, 1000, 8 + 10 * log10(2.0));
    size_t n = tcase_length(&c, (size_t)(16 * 4096 * c.sps)), nref = 0, ngot = 0;
    uint8_t *ref = NULL;
    prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
    CHECK(x != NULL, "generator failed");
    if (!x) return;
    prx_qpsk_config qc = tcase_demod_config(&c, 1);
    qc.block_symbols = 256;
    qc.cfo_span_symbols = 4096;
    prx_qpsk *q;
    CHECK_OK(prx_qpsk_create(&qc, &q));
    uint8_t *got = tcase_demod(q, x, n, NULL, 0, &ngot, NULL);
    CHECK(got && ngot == nref, "long stream, sps %.3f ppm %+g: %zu symbols out, %zu sent", c.sps,
          c.ppm, ngot / 2, nref / 2);
    if (got && ngot == nref && nref > 2 * 8192) {
      for (size_t i = nref - 2 * 8192; i < nref; i++) errs += got[i] != ref[i];
      bits += 2 * 8192;
    }
    prx_qpsk_destroy(q);
    free(got);
    free(ref);
    free(x);
  }
  double ber = bits ? (double)errs / (double)bits : 1;
  printf("long stream at 256-symbol blocks, last 8192 symbols: BER %ld / %zu = %.3g\n", errs, bits,
         ber);
  CHECK(ber < 5.57e-4, "long stream at 256-symbol blocks: BER %.3g at Eb/N0 8 dB above 5.57e-4",
        ber);
}

int main(void) {
  const double ppms[] = {1000, -1000, 5000, -5000};
  const double sps_list[] = {2, 4, 16.0 / 3};
  const unsigned blocks[] = {256, 512};
  const unsigned spans[] = {4096, 8192};
  const double tails[] = {1, 2, 3, 0.4};
  test_rng r;
  test_rng_seed(&r, 20261201);
  /* zero errors at 20 dB Es/N0 for every case */
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 2; b++)
      for (size_t s = 0; s < 2; s++)
        for (size_t p = 0; p < 4; p++)
          for (size_t t = 0; t < 4; t++) {
            tcase c = tail_tcase(&r, sps_list[a], 0, 20);
            c.ppm = ppms[p];
            size_t tb;
            long e = tail_case(&c, blocks[b], spans[s], 1, tails[t], &tb);
            CHECK(e == 0,
                  "sps %.3f block %u span %u ppm %+g tail %g blocks, 20 dB: %ld tail bit errors "
                  "(-1: symbol count)",
                  c.sps, blocks[b], spans[s], c.ppm, tails[t], e);
          }
  /* the tail's BER at Eb/N0 8 dB (Es/N0 11.01 dB), pooled over the cases */
  long errs = 0;
  size_t bits = 0;
  int counts_ok = 1;
  for (size_t a = 0; a < 3; a++)
    for (size_t p = 0; p < 4; p++)
      for (size_t t = 0; t < 4; t++)
        for (int rep = 0; rep < 4; rep++) {
          tcase c = tail_tcase(&r, sps_list[a], 0, 8 + 10 * log10(2.0));
          c.ppm = ppms[p];
          size_t tb;
          long e = tail_case(&c, rep & 1 ? 512 : 256, 4096, 2, tails[t], &tb);
          if (e < 0) {
            counts_ok = 0;
            fprintf(stderr, "  8 dB: sps %.3f ppm %+g tail %g: symbol count differs\n", c.sps,
                    c.ppm, tails[t]);
            continue;
          }
          errs += e;
          bits += tb;
        }
  double ber = bits ? (double)errs / (double)bits : 1;
  long_stream_check(&r);
  printf("tail BER at Eb/N0 8 dB: %ld / %zu = %.3g (threshold 5.57e-4)\n", errs, bits, ber);
  CHECK(counts_ok, "8 dB: a symbol lost or inserted");
  CHECK(ber < 5.57e-4, "tail BER %.3g at Eb/N0 8 dB above 5.57e-4", ber);
  return test_finish("test_qpsk_clock_tail");
}
