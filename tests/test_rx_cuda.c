/* The receiver with the CUDA backend (channelizer and demodulator banks on the GPU, the bits
 * back): every carrier of a generated capture with exactly the symbols sent, the strong ones
 * without error, and the CPU backend's bits within the GPU demodulator's agreement (issue 11:
 * identical at Es/N0 >= 12 dB, at least 99.99 % identical below), LLRs within 1e-3 relative (L2)
 * of the CPU's; chunked calls (blocks smaller than a call, calls across blocks), the channel
 * samples asked for (on_channel), the serial timing mode, small blocks in one call (many
 * more blocks than the receiver's input slots: each slot reused) and calls of more than one
 * batch of blocks of an odd size (the banks called once per batch: full batches, then a partial
 * one, in each call) give the same bits; so does a stream long enough that the row window moves
 * the banks' history to its start, in batches of many blocks and of one (on_channel); one
 * receiver over several streams, after prx_rx_flush and prx_rx_reset, at the batch boundaries
 * (streams): the same bits and stats counters as the CPU's and a fresh receiver's. --quick: a
 * quarter of the capture, no streams (for compute-sanitizer). Exits 77 where no GPU is usable. */
#include "test_rx_scene.h"

#include "rx/rx_gpu.h"

#define FS 409600.0
#define KCH 64
#define SP (FS / KCH)

/* counts the channel samples each carrier's on_channel sees */
static size_t chan_seen[16];
static void count_channel(void *user, size_t c, const prx_cf32 *x, size_t n) {
  (void)user, (void)x;
  if (c < 16) chan_seen[c] += n;
}

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

/* A stream long enough that the receiver's row window moves the banks' history to its start
 * (every few batches: about 4 M input samples here after the first 6 M), in calls that end
 * anywhere in a batch, and again with one block a batch (on_channel: a move every ~1.5 M
 * samples after the first 3 M): the same bits as the CPU's, every channel sample seen once. */
static void long_stream(int quick) {
  scene s;
  memset(&s, 0, sizeof s);
  s.fs = FS;
  s.K = KCH;
  scene_add(&s, 3 * SP, 0.05 * 2400, 30, 200, 0.3, 0.35, 0);
  scene_add(&s, -11.5 * SP, -0.1 * 2400, 30, -300, 0.6, 0.35, 1);
  scene_add(&s, 17.25 * SP, 0, 10, 0, 0.8, 0.35, 0);
  CHECK(scene_make(&s, (size_t)1 << (quick ? 23 : 24), 5) == 0, "scene");
  collect cpu;
  memset(&cpu, 0, sizeof cpu);
  prx_rx_config rc = scene_rx_config(&s, &cpu);
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "long stream, CPU");
  for (int one = 0; one < 2; one++) {
    const char *what = one ? "long stream, one block a batch" : "long stream";
    collect gpu;
    memset(&gpu, 0, sizeof gpu);
    rc = scene_rx_config(&s, &gpu);
    rc.backend = PRX_BACKEND_CUDA;
    rc.block_samples = 65536;
    if (one) {
      rc.on_channel = count_channel;
      memset(chan_seen, 0, sizeof chan_seen);
    }
    prx_rx *rx = NULL;
    CHECK(scene_receive(&s, &rc, 3000017, &rx) == 0, "%s, CUDA: %s", what, prx_last_error());
    const size_t moves = prx_rx_gpu_window_moves(rx), want = quick ? 1 : 2;
    CHECK(moves >= want, "%s: the row window moved %zu times (at least %zu expected)", what, moves,
          want);
    CHECK(!one || prx_rx_gpu_batch_blocks(rx) == 1, "%s: batches of %zu blocks", what,
          prx_rx_gpu_batch_blocks(rx));
    prx_rx_destroy(rx);
    for (size_t c = 0; c < s.n_car; c++) {
      size_t d;
      long e = scene_errors(&s, &gpu, c);
      CHECK(e >= 0, "%s, carrier %zu: %zu bits out, %zu sent", what, c, gpu.nbits[c], s.nref[c]);
      if (s.sim[c].power_db == 0) CHECK(e == 0, "%s, carrier %zu: %ld errors", what, c, e);
      CHECK(agrees(&s, &gpu, &cpu, c, &d), "%s, carrier %zu: CUDA bits differ (%zu)", what, c, d);
      if (one)
        CHECK(chan_seen[c] == (size_t)ceil((double)s.n / (KCH / 2)),
              "%s, carrier %zu: %zu channel samples, %zu", what, c, chan_seen[c],
              (size_t)ceil((double)s.n / (KCH / 2)));
      printf("%s, carrier %zu: %zu bits, %ld errors, %zu differ from the CPU's; the row window "
             "moved %zu times\n",
             what, c, gpu.nbits[c], e, d, moves);
    }
    collect_free(&gpu);
  }
  collect_free(&cpu);
  scene_free(&s);
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
  s->fs = FS;
  s->K = KCH;
  test_rng r;
  test_rng_seed(&r, seed);
  const double f[3] = {3 * SP, -11.5 * SP, 17.25 * SP}, esn0[3] = {30, 30, 10};
  for (int c = 0; c < 3; c++) {
    double cfo = (2 * test_rng_uniform(&r) - 1) * 0.1 * 2400;
    double ppm = (2 * test_rng_uniform(&r) - 1) * 300;
    scene_add(s, f[c], cfo, esn0[c], ppm, 0, 0.35, c == 1);
    double sps = FS / (2400 * (1 + 1e-6 * ppm));
    double e = ((double)n - FS / 2400 / 16) / sps - 0.5;
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
static void streams(void) {
  const size_t bs = 65536;
  collect seq[8], fresh, cpu;
  memset(seq, 0, sizeof seq);
  scene s;
  CHECK(scene_fitted(&s, 4 * bs, 100) == 0, "scene");
  prx_rx_config rc = scene_rx_config(&s, &cpu);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = bs;
  rc.on_output = to_now;
  prx_rx *rx = NULL;
  CHECK(prx_rx_create(&rc, &rx) == 0, "streams: %s", prx_last_error());
  if (!rx) return;
  const size_t Bn = prx_rx_gpu_batch_blocks(rx) * bs; /* input samples a batch */
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
    if (n < Bn) CHECK(held > 0, "%s: no batch held back (%zu samples)", what, n);
    memset(&fresh, 0, sizeof fresh);
    prx_rx_config fc = scene_rx_config(&s, &fresh);
    fc.backend = PRX_BACKEND_CUDA;
    fc.block_samples = bs;
    CHECK(scene_receive(&s, &fc, cases[k].chunk, NULL) == 0, "%s, fresh CUDA receiver", what);
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

int main(int argc, char **argv) {
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  if (!prx_cuda_available()) {
    printf("test_rx_cuda: no usable CUDA device, skipped\n");
    return TEST_SKIP;
  }
  scene s;
  memset(&s, 0, sizeof s);
  s.fs = FS;
  s.K = KCH;
  scene_add(&s, 5 * SP, 0, 30, 0, 0.3, 0.35, 0);
  scene_add(&s, 10.25 * SP, 0.1 * 2400, 30, 300, 0.6, 0.35, 0);
  scene_add(&s, -7.5 * SP, -0.12 * 2400, 30, -500, 0.1, 0.35, 0);
  scene_add(&s, FS / 2 - 0.3 * SP, 50, 30, 100, 0.9, 0.35, 0);
  scene_add(&s, -FS / 2 + 0.45 * SP, -80, 30, 0, 0.5, 0.35, 1);
  scene_add(&s, 20.3 * SP, 0, 30, 0, 0.2, 0.35, 0);
  scene_add(&s, 19.7 * SP, 0, 30, -200, 0.4, 0.2, 0);
  scene_add(&s, -15.5 * SP, -0.1 * 2400, 9, 200, 0.7, 0.35, 0);
  CHECK(scene_make(&s, (size_t)1 << (quick ? 19 : 21), 3) == 0, "scene");
  collect cpu, gpu, chunked, serial, ring, batched;
  memset(&cpu, 0, sizeof cpu);
  memset(&gpu, 0, sizeof gpu);
  memset(&chunked, 0, sizeof chunked);
  memset(&serial, 0, sizeof serial);
  memset(&ring, 0, sizeof ring);
  memset(&batched, 0, sizeof batched);
  prx_rx_config rc = scene_rx_config(&s, &cpu);
  rc.llrs = 1;
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "CPU");
  rc = scene_rx_config(&s, &gpu);
  rc.llrs = 1;
  rc.backend = PRX_BACKEND_CUDA;
  prx_rx *rx = NULL;
  CHECK(scene_receive(&s, &rc, 0, &rx) == 0, "CUDA");
  CHECK(rx && prx_rx_backend(rx) == PRX_BACKEND_CUDA, "backend %s",
        rx ? prx_backend_name(prx_rx_backend(rx)) : "none");
  prx_rx_destroy(rx);
  /* blocks of 50000 samples in calls of 123457: partial blocks, calls of several blocks */
  rc = scene_rx_config(&s, &chunked);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = 50000;
  rc.on_channel = count_channel;
  CHECK(scene_receive(&s, &rc, 123457, NULL) == 0, "CUDA, chunked");
  /* blocks of 4096 samples in one call: the ring's slots reused many times over */
  rc = scene_rx_config(&s, &ring);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = 4096;
  prx_rx *rr = NULL;
  CHECK(prx_rx_create(&rc, &rr) == 0 && prx_rx_gpu_set_merge(rr, 1) == 1, "CUDA, small blocks");
  if (rr) /* (each block its own copy and channelizer call) */
    CHECK(prx_rx_execute(rr, s.x, s.n) == 0 && prx_rx_flush(rr) == 0, "CUDA, small blocks: %s",
          prx_last_error());
  CHECK(rr && s.n / 4096 >= 2 * prx_rx_gpu_ring_slots(rr), "the ring (%zu slots) is not wrapped",
        rr ? prx_rx_gpu_ring_slots(rr) : 0);
  prx_rx_destroy(rr);
  /* blocks of 8100 samples (not a multiple of D: 253 or 254 outputs a block) in calls of
   * 1500000: a call holds more than a batch, and ends with a partial one */
  rc = scene_rx_config(&s, &batched);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = 8100;
  prx_rx *rb = NULL;
  CHECK(scene_receive(&s, &rc, 1500000, &rb) == 0, "CUDA, batched: %s", prx_last_error());
  size_t A = rb ? prx_rx_gpu_batch_blocks(rb) : 0;
  CHECK(A > 1 && 1500000 / 8100 > A && 1500000 / 8100 % A, "batches of %zu blocks", A);
  prx_rx_destroy(rb);
  /* the serial timing mode (the benchmark's split) on a receiver kept to check its times */
  rc = scene_rx_config(&s, &serial);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = 65536;
  prx_rx *rs = NULL;
  CHECK(prx_rx_create(&rc, &rs) == 0, "CUDA, serial: %s", prx_last_error());
  if (rs) {
    prx_rx_gpu_set_serial(rs, 1);
    CHECK(prx_rx_execute(rs, s.x, s.n) == 0 && prx_rx_flush(rs) == 0, "CUDA, serial: %s",
          prx_last_error());
    double tc, tch, td;
    prx_rx_gpu_get_times(rs, &tc, &tch, &td);
    CHECK(tc > 0 && tch > 0 && td > 0, "serial times: copy %g, channelizer %g, demodulator %g", tc,
          tch, td);
    double fl[5];
    prx_rx_gpu_get_flush_times(rs, fl);
    CHECK(fl[0] > 0 && fl[1] > 0 && fl[2] > 0 && fl[1] + fl[2] <= td,
          "flush times: channelizer %g, banks %g, back %g (demodulators %g)", fl[0], fl[1], fl[2],
          td);
    printf("serial mode: copy %.4f s, channelizer %.4f s, demodulators %.4f s; the flush: "
           "channelizer %.4f s, banks %.4f s, bits back %.4f s\n",
           tc, tch, td, fl[0], fl[1], fl[2]);
    prx_rx_destroy(rs);
  }
  const double D = KCH / 2;
  for (size_t c = 0; c < s.n_car; c++) {
    long e = scene_errors(&s, &gpu, c);
    CHECK(e >= 0, "carrier %zu: %zu bits out, %zu sent", c, gpu.nbits[c], s.nref[c]);
    if (s.sim[c].power_db == 0) CHECK(e == 0, "carrier %zu: %ld errors", c, e);
    size_t d1, d2, d3, d4, d5;
    CHECK(agrees(&s, &gpu, &cpu, c, &d1), "carrier %zu: CUDA bits differ from the CPU's (%zu)", c,
          d1);
    CHECK(agrees(&s, &chunked, &cpu, c, &d2), "carrier %zu: chunked CUDA bits differ (%zu)", c, d2);
    CHECK(agrees(&s, &serial, &cpu, c, &d3), "carrier %zu: serial CUDA bits differ (%zu)", c, d3);
    CHECK(agrees(&s, &ring, &cpu, c, &d4), "carrier %zu: small-block CUDA bits differ (%zu)", c,
          d4);
    CHECK(agrees(&s, &batched, &cpu, c, &d5), "carrier %zu: batched CUDA bits differ (%zu)", c, d5);
    /* the channel samples: ceil(N / D) per carrier */
    CHECK(chan_seen[c] == (size_t)ceil((double)s.n / D), "carrier %zu: %zu channel samples, %zu", c,
          chan_seen[c], (size_t)ceil((double)s.n / D));
    double num = 0, den = 0;
    for (size_t i = 0; gpu.nllr[c] == cpu.nllr[c] && i < cpu.nllr[c]; i++) {
      double d = (double)gpu.llrs[c][i] - cpu.llrs[c][i];
      num += d * d;
      den += (double)cpu.llrs[c][i] * cpu.llrs[c][i];
    }
    double rel = gpu.nllr[c] == cpu.nllr[c] ? sqrt(num / (den > 0 ? den : 1)) : INFINITY;
    CHECK(rel <= 1e-3, "carrier %zu: CUDA LLRs differ from the CPU's by %.3g (L2)", c, rel);
    printf("carrier %zu: %zu bits, %ld errors, %zu / %zu / %zu / %zu / %zu bits differ from the "
           "CPU's (whole, chunked, serial, small blocks, batched), LLRs within %.2g (L2)\n",
           c, gpu.nbits[c], e, d1, d2, d3, d4, d5, rel);
  }
  collect_free(&cpu);
  collect_free(&gpu);
  collect_free(&chunked);
  collect_free(&serial);
  collect_free(&ring);
  collect_free(&batched);
  scene_free(&s);
  long_stream(quick);
  if (!quick) streams();
  return test_finish("test_rx_cuda");
}
