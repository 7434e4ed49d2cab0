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
#include "test_rx_streams.h"

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
  if (!quick) rx_streams(PRX_BACKEND_CUDA);
  return test_finish("test_rx_cuda");
}
