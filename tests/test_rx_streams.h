/* One receiver over several streams (the tests of the receiver's CPU and CUDA backends): the
 * stream's end and start after prx_rx_flush and prx_rx_reset, at the CUDA path's batch
 * boundaries, against the CPU's and a fresh receiver's bits and stats. */
#ifndef TEST_RX_STREAMS_H
#define TEST_RX_STREAMS_H

#include "test_rx_scene.h"

#include "rx/rx_gpu.h"

/* bits of carrier c that differ between a and b (SIZE_MAX when the counts differ) */
static size_t bits_differ(const collect *a, const collect *b, size_t c) {
  if (a->nbits[c] != b->nbits[c]) return SIZE_MAX;
  size_t d = 0;
  for (size_t i = 0; i < a->nbits[c]; i++) d += a->bits[c][i] != b->bits[c][i];
  return d;
}

/* whether carrier c's bits in k agree with the CPU's as issue 11 asks */
static int agrees(const scene *s, const collect *k, const collect *cpu, size_t c, size_t *diff) {
  *diff = bits_differ(k, cpu, c);
  if (*diff == SIZE_MAX) return 0;
  double esn0 = s->esn0_db + s->sim[c].power_db;
  return esn0 >= 12 ? *diff == 0 : *diff * 10000 <= cpu->nbits[c];
}

/* The collector the callback of a receiver kept over several streams writes to now. */
static collect *now;
static void to_now(void *user, size_t c, const uint8_t *bits, size_t n_bytes, const float *llrs,
                   size_t n_symbols) {
  (void)user;
  collect_fn(now, c, bits, n_bytes, llrs, n_symbols);
}

/* Carriers at the long stream's frequencies, their CFO, clock and noise from seed, each
 * carrier's symbol timing set so that its last symbol's centre lies half a symbol from the end of
 * a capture of exactly n samples (scene_count: the symbol counts then exact), generated. */
static int scene_fitted(scene *s, size_t n, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->fs = 409600.0; /* K = 64 channels of 6400 Hz: 2400 Bd at 5.33 sps */
  s->K = 64;
  const double sp = s->fs / s->K;
  test_rng r;
  test_rng_seed(&r, seed);
  const double f[3] = {3 * sp, -11.5 * sp, 17.25 * sp}, esn0[3] = {30, 30, 10};
  for (int c = 0; c < 3; c++) {
    double cfo = (2 * test_rng_uniform(&r) - 1) * 0.1 * 2400;
    double ppm = (2 * test_rng_uniform(&r) - 1) * 300;
    scene_add(s, f[c], cfo, esn0[c], ppm, 0, 0.35, c == 1);
    double sps = s->fs / (2400 * (1 + 1e-6 * ppm));
    double e = ((double)n - s->fs / 2400 / 16) / sps - 0.5;
    s->sim[c].timing_offset = e - floor(e);
  }
  return scene_generate(s, n, seed);
}

/* Carrier c's counters that a stream adds to its stats (the stats run across streams). */
static void stats_of(prx_rx *rx, size_t c, uint64_t v[4]) {
  prx_rx_stats st;
  CHECK(prx_rx_get_stats(rx, c, &st) == 0, "stats: %s", prx_last_error());
  v[0] = st.demod.samples;
  v[1] = st.demod.symbols;
  v[2] = st.demod.data_symbols;
  v[3] = st.demod.blocks;
}

/* The stream's end on one receiver over several streams: after prx_rx_flush and after
 * prx_rx_reset (mid-stream, a batch held back), streams of other lengths and chunkings give the
 * bits of a fresh receiver and of the CPU's (issue 11's agreement: identical at 12 dB and above;
 * the same symbol counts as the CPU's and as sent), and the same stats counters as the CPU's
 * (samples, symbols, data symbols, blocks). The lengths: a call that ends on a batch boundary (A
 * blocks), one sample after it (the last call one sample), calls of a batch each ending on the
 * boundary, a stream shorter than a batch (its held-back batch the whole stream: no bank call
 * before the flush), one of a few hundred symbols, and one that ends anywhere. Between calls the
 * carriers' stats count the held-back samples out (prx_rx_gpu_deferred_samples): the CPU's samples
 * less those. */
static void rx_streams(prx_backend be) {
  const size_t bs = 65536;
  collect seq[8], fresh, cpu;
  memset(seq, 0, sizeof seq);
  scene s;
  CHECK(scene_fitted(&s, 4 * bs, 100) == 0, "scene");
  prx_rx_config rc = scene_rx_config(&s, &cpu);
  rc.backend = be;
  rc.block_samples = bs;
  rc.on_output = to_now;
  prx_rx *rx = NULL;
  CHECK(prx_rx_create(&rc, &rx) == 0, "streams: %s", prx_last_error());
  if (!rx) return;
  /* input samples a batch (the CPU path has none: the GPU's at these settings, 22 blocks) */
  const size_t A = prx_rx_gpu_batch_blocks(rx), Bn = (A ? A : 22) * bs;
  /* first a stream cut short by prx_rx_reset (a batch and a bit, the bit held back) */
  scene_free(&s);
  const size_t part = Bn + bs / 3;
  CHECK(scene_fitted(&s, part, 101) == 0, "scene");
  now = &seq[7];
  seq[7].n_car = s.n_car;
  CHECK(prx_rx_execute(rx, s.x, part) == 0, "streams, before the reset: %s", prx_last_error());
  printf("streams: batches of %zu input samples; %zu samples per row held back before the reset\n",
         Bn, prx_rx_gpu_deferred_samples(rx));
  prx_rx_reset(rx);
  scene_free(&s);
  struct {
    size_t n, chunk;
    const char *what;
  } cases[] = {
      {2 * Bn, 0, "one call ending on a batch boundary"},
      {2 * Bn + 1, Bn, "calls of a batch, the last of one sample"},
      {Bn / 3, 0, "a stream shorter than a batch"},
      {2 * Bn, Bn, "calls of a batch, the last ending on the boundary"},
      {20000, 0, "a stream of ~110 symbols"},
      {Bn + Bn / 2 + 12347, 333333, "calls of 333333"},
  };
  const size_t n_cases = sizeof cases / sizeof cases[0];
  uint64_t before[SC_MAX][4];
  memset(before, 0, sizeof before); /* (the reset cleared the stats) */
  for (size_t k = 0; k < n_cases; k++) {
    const char *what = cases[k].what;
    const size_t n = cases[k].n, step = cases[k].chunk ? cases[k].chunk : n;
    CHECK(scene_fitted(&s, n, 200 + k) == 0, "%s: scene", what);
    /* the CPU in step with the kept receiver: the stats between calls */
    memset(&cpu, 0, sizeof cpu);
    prx_rx_config cc = scene_rx_config(&s, &cpu);
    cc.block_samples = bs;
    prx_rx *rc_cpu = NULL;
    CHECK(prx_rx_create(&cc, &rc_cpu) == 0, "%s, CPU: %s", what, prx_last_error());
    now = &seq[k];
    seq[k].n_car = s.n_car;
    size_t held = 0;
    for (size_t i = 0; i < n && rc_cpu; i += step) {
      size_t m = n - i < step ? n - i : step;
      CHECK(prx_rx_execute(rx, s.x + i, m) == 0 && prx_rx_execute(rc_cpu, s.x + i, m) == 0,
            "%s: %s", what, prx_last_error());
      held = prx_rx_gpu_deferred_samples(rx);
      for (size_t c = 0; c < s.n_car; c++) {
        uint64_t g[4], h[4];
        stats_of(rx, c, g);
        stats_of(rc_cpu, c, h);
        CHECK(g[0] - before[c][0] + held == h[0],
              "%s, carrier %zu, after %zu samples: the stats count %llu samples + %zu held back, "
              "the CPU's %llu",
              what, c, i + m, (unsigned long long)(g[0] - before[c][0]), held,
              (unsigned long long)h[0]);
      }
    }
    CHECK(prx_rx_flush(rx) == 0 && rc_cpu && prx_rx_flush(rc_cpu) == 0, "%s, flush: %s", what,
          prx_last_error());
    CHECK(prx_rx_gpu_deferred_samples(rx) == 0, "%s: samples held after the flush", what);
    if (be == PRX_BACKEND_CUDA && n < Bn)
      CHECK(held > 0, "%s: no batch held back (%zu samples)", what, n);
    memset(&fresh, 0, sizeof fresh);
    prx_rx_config fc = scene_rx_config(&s, &fresh);
    fc.backend = be;
    fc.block_samples = bs;
    CHECK(scene_receive(&s, &fc, cases[k].chunk, NULL) == 0, "%s, fresh receiver", what);
    for (size_t c = 0; c < s.n_car; c++) {
      size_t d_cpu, d_fresh;
      CHECK(seq[k].nbits[c] == cpu.nbits[c] && seq[k].nbits[c] == s.nref[c],
            "%s, carrier %zu: %zu bits, the CPU's %zu, %zu sent", what, c, seq[k].nbits[c],
            cpu.nbits[c], s.nref[c]);
      CHECK(agrees(&s, &seq[k], &cpu, c, &d_cpu), "%s, carrier %zu: %zu bits differ from the CPU's",
            what, c, d_cpu);
      CHECK(agrees(&s, &seq[k], &fresh, c, &d_fresh),
            "%s, carrier %zu: %zu bits differ from a fresh receiver's", what, c, d_fresh);
      uint64_t g[4], h[4];
      stats_of(rx, c, g);
      stats_of(rc_cpu, c, h);
      for (int j = 0; j < 4; j++) {
        CHECK(g[j] - before[c][j] == h[j], "%s, carrier %zu: stats counter %d %llu, the CPU's %llu",
              what, c, j, (unsigned long long)(g[j] - before[c][j]), (unsigned long long)h[j]);
        before[c][j] = g[j];
      }
      printf("streams, %s (%zu samples, %zu held back at the flush), carrier %zu: %zu bits, %zu "
             "differ from the CPU's, %zu from a fresh receiver's; %llu blocks\n",
             what, n, held, c, seq[k].nbits[c], d_cpu, d_fresh, (unsigned long long)h[3]);
    }
    prx_rx_destroy(rc_cpu);
    collect_free(&cpu);
    collect_free(&fresh);
    collect_free(&seq[k]);
    scene_free(&s);
  }
  collect_free(&seq[7]);
  prx_rx_destroy(rx);
}

#endif
