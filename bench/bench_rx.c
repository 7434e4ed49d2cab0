/* Benchmark of the receiver (prx_rx): end-to-end input rate from memory, samples in to bits out.
 *
 * The seed's configuration: ci16 input at 6.5536 Msps, K = 1024 channels (D = 512, the
 * receiver's prototype, 14 taps per channel), 2400 Bd QPSK, differential, default demodulator.
 * The input: 2 s with 64 generated carriers (Es/N0 20 dB, on and between channel centres) in
 * noise, made once and kept in memory (pinned where a CUDA device is usable).
 *
 * CPU cases, each the best of REPS whole runs (execute in blocks of 262144 samples, then flush):
 * - "rx64": the 64 carriers' channels only;
 * - "rx1024": all 1024 channels demodulated (one carrier listed at every channel centre);
 * - "chan64" and "chan1024": the channelizer alone with the same prototype and selection, the
 *   peer measured in the same run (what the receiver adds is the demodulators and the glue);
 * - "block": the seed's block (262144 samples) through prx_rx_execute in steady state with 64
 *   carriers: the compute time of one block.
 *
 * GPU cases (where a CUDA device is usable; the receiver device-resident, issue 12's figures):
 * - "pcie": the host-to-device bound, copies of 1 GiB of pinned memory (best of 5), in ci16
 *   samples per second;
 * - "rx_gpu_chan" (with --chan): the channelizer alone, device-resident (input already on the
 *   device, one wait at the end), in the receiver's configuration (64 carriers; all 1024
 *   channels in natural order, the receiver's rows) and with all channels in carrier order
 *   (rows that follow the carriers, a table's layout), calls of 2^22 and 2^24 samples;
 *   with the wall time of its flush through the host call into pageable rows;
 * - "rx_gpu": the end-to-end input rate from pinned memory (execute of the whole input, then
 *   flush; best of REPS) with 64 carriers and with all 1024 channels demodulated, in blocks of
 *   2^22 and of 262144 samples, as a fraction of the pcie bound; the input is the 2 s capture
 *   tiled to 2^28 samples (1 GiB), so the carriers jump at each seam (the rate does not care);
 * - "rx_gpu_split": one run of each in the receiver's serial mode (each stage waited for):
 *   seconds in the input copies, the channelizer and the demodulators (banks + bits back); the
 *   flush's wall time (flush_s, part of those) apart, here and in "rx_gpu", and its parts
 *   (fl_chan_ms: the channelizer's tail queued; fl_banks_ms: the banks' one call for the
 *   stream's end; fl_back_ms: the bits back, the banks' last reports settled beside that copy,
 *   the bits delivered; the banks' waits for the device fl_wait_ms and serial passes
 *   fl_serial_ms in the two); the row window's moves (the banks' history to the
 *   window's start) and, in the split, their time waited for (move_s, part of chan_s);
 * - "rx_gpu_trace": a run in blocks of 2^22 with 64 carriers and one with all 1024 channels, each
 *   the second run of its receiver (the first untraced), with the receiver's per-call trace (host
 *   clock; a bank call takes a batch of blocks): the blocks a batch holds, the input slots, the
 *   blocks queued ahead of the banks, the banks' time in the calls that complete a CFO span and
 *   in the others, the host's time after the banks, the largest gap between two calls' ends, the
 *   output buffers grown, each call's time, the execute's end after its last bank call
 *   (exec_tail_ms), the flush after it and its parts; the first calls' timeline as
 * "rx_gpu_trace_call" lines (with the banks' waits for the device and serial passes in each);
 * - "rx_gpu_latency": the seed's block (262144 samples) from samples in to bits out, 400 blocks
 *   in steady state (after 100): median, p90, p99 and the largest (a block that completes a CFO
 *   span of 8192 symbols runs that span's demodulation, the others only store their samples),
 *   the count of span blocks and the largest other block, the banks' call in the span blocks
 *   and its waits for the device and serial passes (means); with 64 carriers also with the
 *   demodulators' serial passes on 2, 4 and 8 threads (the default: all cores).
 *
 * Output: JSON lines, then a table. Usage:
 *   bench_rx [--gpu] [--chan] [--write FILE] [seconds (default 2)]
 *   --gpu         the GPU cases only
 *   --chan        also the channelizer alone on the GPU (rx_gpu_chan)
 *   --write FILE  also writes the GPU cases' input (tiled ci16) to FILE and the 64 carriers as
 *                 `polyrx rx` arguments to FILE.args, for the command's benchmark
 *                 (scripts/gpu_check.sh) */
#include "bench_clock.h"
#include "testutil.h"

#include "core/cuda_module.h"
#include "dsp/pack.h"
#include "pipeline/pipeline.h"
#include "qpsk/qpsk_bank_internal.h"
#include "rx/rx_gpu.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define FS 6553600.0
#define K 1024
#define RS 2400.0
#define BLOCK 262144
#define REPS 3

static void sink_fn(void *u, size_t c, const uint8_t *b, size_t nb, const float *l, size_t ns) {
  (void)c, (void)b, (void)l, (void)ns;
  *(uint64_t *)u += nb;
}

/* 64 carriers: channel 16 i - 504 + a fraction (0, 1/4, 3/8, 1/2) of a spacing */
static double carrier_freq(int i) {
  static const double frac[4] = {0, 0.25, 0.375, 0.5};
  return (16.0 * i - 504 + frac[i % 4]) * FS / K;
}

static int16_t *make_input(size_t n) {
  prx_sim_carrier car[64];
  test_rng r;
  test_rng_seed(&r, 12);
  for (int i = 0; i < 64; i++) {
    car[i] = prx_sim_carrier_default();
    car[i].freq = carrier_freq(i) + (test_rng_uniform(&r) - 0.5) * 0.2 * RS;
    car[i].symbol_rate = RS;
    car[i].differential = 1;
    car[i].clock_ppm = (test_rng_uniform(&r) - 0.5) * 200;
    car[i].timing_offset = 0.9 * test_rng_uniform(&r);
  }
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = FS;
  sc.carriers = car;
  sc.n_carriers = 64;
  sc.noise = 1;
  sc.esn0_db = 20;
  prx_sim *sim = NULL;
  int16_t *x = prx_pipe_host_alloc(n * 4, 1);
  prx_cf32 *buf = malloc(65536 * sizeof *buf);
  if (!x || !buf || prx_sim_create(&sc, &sim)) return NULL;
  /* RMS of 64 unit carriers plus noise: scale to about -14 dBFS */
  double rms = sqrt(64 + prx_sim_noise_variance(sim)), g = 0.2 / rms * 32768;
  for (size_t i = 0; i < n; i += 65536) {
    size_t m = n - i < 65536 ? n - i : 65536;
    prx_sim_generate(sim, buf, m);
    prx_pack_ci16(buf, m, (float)g, x + 2 * i);
  }
  prx_sim_destroy(sim);
  free(buf);
  return x;
}

typedef struct {
  double rate;            /* input samples per second, best run */
  double chan_s, demod_s; /* the receiver's own time split of that run */
  uint64_t bytes;         /* bits out (bytes, unpacked) */
} result;

/* The 64 carriers, or with all one at every channel centre (K). */
static void fill_carriers(prx_rx_carrier *car, int all) {
  size_t nc = all ? K : 64;
  for (size_t i = 0; i < nc; i++) {
    car[i] = prx_rx_carrier_default();
    car[i].freq = all ? ((double)i - K / 2) * FS / K : carrier_freq((int)i);
    car[i].symbol_rate = RS;
  }
}

/* The receiver in the seed's configuration on carriers car (filled here, K entries with all),
 * its bits counted into *bytes. */
static prx_rx_config seed_config(prx_rx_carrier *car, int all, prx_backend be, size_t block,
                                 uint64_t *bytes) {
  fill_carriers(car, all);
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = FS;
  rc.channels = K;
  rc.in_format = PRX_CI16;
  rc.carriers = car;
  rc.n_carriers = all ? K : 64;
  rc.on_output = sink_fn;
  rc.user = bytes;
  rc.backend = be;
  rc.block_samples = block;
  return rc;
}

static int run_rx(const int16_t *x, size_t n, int all, prx_backend be, result *res) {
  static prx_rx_carrier car[K];
  prx_rx_config rc = seed_config(car, all, be, BLOCK, NULL);
  memset(res, 0, sizeof *res);
  for (int rep = 0; rep < REPS; rep++) {
    uint64_t bytes = 0;
    rc.user = &bytes;
    prx_rx *rx = NULL;
    if (prx_rx_create(&rc, &rx)) {
      fprintf(stderr, "bench_rx: %s\n", prx_last_error());
      return -1;
    }
    double t0 = bench_now();
    prx_status st = prx_rx_execute(rx, x, n);
    if (!st) st = prx_rx_flush(rx);
    double t = bench_now() - t0;
    if (st) {
      fprintf(stderr, "bench_rx: %s\n", prx_last_error());
      prx_rx_destroy(rx);
      return -1;
    }
    if (n / t > res->rate) {
      res->rate = n / t;
      prx_rx_get_times(rx, NULL, &res->chan_s, &res->demod_s);
      res->bytes = bytes;
    }
    prx_rx_destroy(rx);
  }
  return 0;
}

/* The channelizer in the receiver's configuration: ci16, its prototype (K 14 + 1 taps, as prx_rx
 * designs it; *taps for the caller to free) and a selection into sel (K entries): order 0 the 64
 * carriers' channels in carrier order, 1 all K in carrier order, (i - K/2) mod K, 2 all K in
 * natural order (the receiver's rows go in channel order within a group: its selection with all
 * K carriers).
 */
static prx_chan_config rx_chan_config(int order, unsigned *sel, float **taps, prx_backend be,
                                      size_t block) {
  size_t ns = order == 0 ? 64 : K;
  for (size_t i = 0; i < ns; i++) {
    long kk = order == 0   ? lround(carrier_freq((int)i) / (FS / K))
              : order == 1 ? (long)i - K / 2
                           : (long)i;
    sel[i] = (unsigned)((kk % K + K) % K);
  }
  size_t M = (size_t)K * 14 + 1;
  *taps = malloc(M * sizeof **taps);
  prx_design_kaiser(M, 80, 1.0 / K, *taps);
  prx_chan_config cc = prx_chan_config_default();
  cc.channels = K;
  cc.taps = *taps;
  cc.n_taps = M;
  cc.select = sel;
  cc.n_select = ns;
  cc.in_format = PRX_CI16;
  cc.backend = be;
  cc.block_samples = block;
  return cc;
}

/* The channelizer alone: the receiver's prototype and the same selection, the same blocks. */
static double run_chan(const int16_t *x, size_t n, int all, prx_backend be) {
  static unsigned sel[K];
  float *taps;
  prx_chan_config cc = rx_chan_config(all ? 2 : 0, sel, &taps, be, BLOCK);
  size_t ns = cc.n_select;
  size_t stride = BLOCK / (K / 2) + 64;
  prx_cf32 *out = malloc(ns * stride * sizeof *out);
  double best = 0;
  for (int rep = 0; rep < REPS; rep++) {
    prx_chan *c = NULL;
    if (prx_chan_create(&cc, &c)) break;
    double t0 = bench_now();
    size_t got;
    for (size_t i = 0; i < n; i += BLOCK)
      prx_chan_execute(c, x + 2 * i, n - i < BLOCK ? n - i : BLOCK, out, stride, &got);
    prx_chan_flush(c, out, stride, &got);
    double t = bench_now() - t0;
    if (n / t > best) best = n / t;
    prx_chan_destroy(c);
  }
  free(out);
  free(taps);
  return best;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One seed block through a receiver in steady state: the median compute time of 9 blocks
 * after 8 (the demodulators' spans filled). */
static double run_block(const int16_t *x, size_t n, prx_backend be) {
  static prx_rx_carrier car[64];
  uint64_t bytes = 0;
  prx_rx_config rc = seed_config(car, 0, be, BLOCK, &bytes);
  prx_rx *rx = NULL;
  if (prx_rx_create(&rc, &rx)) return NAN;
  double t[9];
  size_t nb = n / BLOCK;
  for (size_t b = 0; b < 17; b++) {
    double t0 = bench_now();
    prx_rx_execute(rx, x + 2 * (b % nb) * BLOCK, BLOCK);
    if (b >= 8) t[b - 8] = bench_now() - t0;
  }
  prx_rx_destroy(rx);
  qsort(t, 9, sizeof t[0], cmp_double);
  return t[4];
}

/* ---- GPU cases ---- */

#define BIG_LOG2 28
#define BIG_BLOCK ((size_t)1 << 22)

/* Host-to-device bytes per second: 1 GiB copies of pinned memory (x, at least 1 GiB), best of 5,
 * each timed by the host from its queueing to the stream's end. */
static double pcie_bound(const void *x) {
  const prx_qpsk_bank_cuda *d = prx_cuda_module_get()->qpsk_bank;
  size_t bytes = (size_t)1 << 30;
  void *dst = NULL, *s = NULL;
  if (d->dev_alloc(0, bytes, &dst) || d->stream_create(0, &s)) return NAN;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = bench_now();
    d->copy(dst, x, bytes, s);
    d->sync(s);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  d->dev_free(dst);
  d->stream_destroy(s);
  return (double)bytes / best;
}

/* The channelizer alone, device-resident, in the receiver's configuration (ci16, the receiver's
 * prototype, 64 selected channels or all 1024 in carrier order, (i - 512) mod K, or in natural
 * order, the receiver's), over the 2^BIG_LOG2 samples of d_in (device memory) in calls of block
 * samples, waited for once at the end: input samples per second. *flush_s: the wall time of its
 * flush (the host call into pageable rows, as the receiver's flush makes it). */
static double chan_device(const void *d_in, size_t big, int order, size_t block, double *flush_s) {
  const prx_qpsk_bank_cuda *d = prx_cuda_module_get()->qpsk_bank;
  static unsigned sel[K];
  float *taps;
  prx_chan_config cc = rx_chan_config(order, sel, &taps, PRX_BACKEND_CUDA, block);
  size_t ns = cc.n_select;
  size_t stride = block / (K / 2) + 64;
  void *d_out = NULL, *s = NULL;
  prx_chan *c = NULL;
  double rate = NAN;
  prx_cf32 *host = malloc(ns * stride * sizeof *host);
  if (host && !d->dev_alloc(0, ns * stride * sizeof(prx_cf32), &d_out) &&
      !d->stream_create(0, &s) && !prx_chan_create(&cc, &c)) {
    size_t got;
    for (int rep = 0; rep < 2; rep++) { /* the first a warm-up */
      prx_chan_reset(c);
      double t0 = bench_now();
      for (size_t i = 0; i < big; i += block)
        prx_chan_execute_device(c, (const char *)d_in + 4 * i, block, d_out, stride, &got, s);
      d->sync(s);
      rate = big / (bench_now() - t0);
    }
    double t0 = bench_now();
    prx_chan_flush(c, host, stride, &got);
    *flush_s = bench_now() - t0;
  }
  prx_chan_destroy(c);
  if (s) d->stream_destroy(s);
  d->dev_free(d_out);
  free(host);
  free(taps);
  return rate;
}

static void chan_device_cases(const void *y, size_t big) {
  const prx_qpsk_bank_cuda *d = prx_cuda_module_get()->qpsk_bank;
  void *d_in = NULL, *s = NULL;
  if (d->dev_alloc(0, big * 4, &d_in) || d->stream_create(0, &s)) return;
  d->copy(d_in, y, big * 4, s);
  d->sync(s);
  static const char *name[3] = {"64 carriers", "1024 carrier order", "1024 natural (rx)"};
  for (int order = 0; order < 3; order++)
    for (int bl = 0; bl < 2; bl++) {
      size_t block = bl ? (size_t)1 << 24 : BIG_BLOCK;
      double fl = NAN, r = chan_device(d_in, big, order, block, &fl);
      printf("{\"bench\":\"rx_gpu_chan\",\"select\":\"%s\",\"block\":%zu,\"gsps\":%.3f,"
             "\"host_flush_s\":%.4f}\n",
             name[order], block, r / 1e9, fl);
    }
  d->stream_destroy(s);
  d->dev_free(d_in);
}

static prx_rx *gpu_rx(int all, size_t block, uint64_t *bytes, int threads) {
  static prx_rx_carrier car[K];
  prx_rx_config rc = seed_config(car, all, PRX_BACKEND_CUDA, block, bytes);
  rc.threads = threads;
  prx_rx *rx = NULL;
  if (prx_rx_create(&rc, &rx)) {
    fprintf(stderr, "bench_rx: %s\n", prx_last_error());
    return NULL;
  }
  return rx;
}

/* The flush's parts (prx_rx_gpu_get_flush_times, seconds) as the last fields of a JSON line. */
static void print_flush_parts(const double *f) {
  printf("\"fl_chan_ms\":%.3f,\"fl_banks_ms\":%.3f,\"fl_back_ms\":%.3f,\"fl_wait_ms\":%.3f,"
         "\"fl_serial_ms\":%.3f}\n",
         f[0] * 1e3, f[1] * 1e3, f[2] * 1e3, f[3] * 1e3, f[4] * 1e3);
}

/* The end-to-end rate (best of REPS) and, with split, one serial run's times; t[4], t[5]: the
 * row window's moves and (serial) their time, part of the channelizer's t[1]; t[6..10]: the
 * flush's parts (prx_rx_gpu_get_flush_times). */
#define RATE_T 11
static int gpu_rate(const int16_t *x, size_t n, int all, size_t block, int serial, double *rate,
                    double t[RATE_T], uint64_t *bytes_out) {
  *rate = 0;
  for (int rep = 0; rep < (serial ? 1 : REPS); rep++) {
    uint64_t bytes = 0;
    prx_rx *rx = gpu_rx(all, block, &bytes, 0);
    if (!rx) return -1;
    prx_rx_gpu_set_serial(rx, serial);
    double t0 = bench_now();
    prx_status st = prx_rx_execute(rx, x, n);
    double t1 = bench_now();
    if (!st) st = prx_rx_flush(rx);
    double dt = bench_now() - t0;
    if (st) {
      fprintf(stderr, "bench_rx: %s\n", prx_last_error());
      prx_rx_destroy(rx);
      return -1;
    }
    if (n / dt > *rate) {
      *rate = n / dt;
      prx_rx_gpu_get_times(rx, &t[0], &t[1], &t[2]);
      t[3] = t0 + dt - t1; /* the flush's wall time */
      t[4] = (double)prx_rx_gpu_window_moves(rx);
      t[5] = prx_rx_gpu_move_seconds(rx);
      prx_rx_gpu_get_flush_times(rx, t + 6);
      *bytes_out = bytes;
    }
    prx_rx_destroy(rx);
  }
  return 0;
}

/* The timeline of one run in blocks of 2^22 (execute only), 64 carriers or all 1024 channels:
 * per bank call (a batch of blocks), from the receiver's trace (host clock), what the banks took
 * in calls that complete a CFO span and in the others, their waits for the device and serial
 * passes, the host's time after the banks (the batch before delivered, the bits' copy queued),
 * and the blocks queued ahead of the banks; the first calls as JSON lines. */
static int gpu_trace(const int16_t *x, size_t n, int all, double pcie_sps) {
  enum { CAP = 4096, SHOW = 12 };
  static prx_rx_gpu_trace tr[CAP];
  uint64_t bytes = 0;
  prx_rx *rx = gpu_rx(all, BIG_BLOCK, &bytes, 0);
  if (!rx) return -1;
  /* a first run untraced (the process's first launches of each kernel), then the traced one on a
   * fresh stream */
  prx_status st = prx_rx_execute(rx, x, n);
  if (!st) st = prx_rx_flush(rx);
  prx_rx_gpu_set_trace(rx, tr, CAP);
  double t0 = bench_now();
  if (!st) st = prx_rx_execute(rx, x, n);
  double wall = bench_now() - t0, fl[5] = {0}, f0[5];
  /* the stream's end after it: the flush's wall time and parts (this stream's) */
  prx_rx_gpu_get_flush_times(rx, f0);
  if (!st) st = prx_rx_flush(rx);
  double flush_s = bench_now() - t0 - wall;
  prx_rx_gpu_get_flush_times(rx, fl);
  for (int k = 0; k < 5; k++) fl[k] -= f0[k];
  size_t nb = prx_rx_gpu_trace_count(rx), slots = prx_rx_gpu_ring_slots(rx);
  size_t batch = prx_rx_gpu_batch_blocks(rx);
  prx_rx_destroy(rx);
  if (st) {
    fprintf(stderr, "bench_rx: %s\n", prx_last_error());
    return -1;
  }
  double span_s = 0, span_max = 0, other_s = 0, span_wait = 0, span_serial = 0, gap_max = 0;
  double ahead = 0, after = 0;
  size_t spans = 0, grows = 0;
  char calls[4096] = "";
  size_t cl = 0;
  for (size_t i = 0; i < nb; i++) {
    double d = tr[i].t_banks - tr[i].t_demod;
    after += tr[i].t_back - tr[i].t_banks;
    if (tr[i].symbols) {
      spans++;
      span_s += d;
      span_wait += tr[i].bank_wait;
      span_serial += tr[i].bank_serial;
      if (d > span_max) span_max = d;
    } else {
      other_s += d;
    }
    ahead += tr[i].ahead;
    grows += tr[i].grows;
    if (cl + 32 < sizeof calls)
      cl += (size_t)snprintf(calls + cl, sizeof calls - cl, "%s%.3f", i ? "," : "",
                             (tr[i].t_back - (i ? tr[i - 1].t_back : t0)) * 1e3);
    if (i && tr[i].t_back - tr[i - 1].t_back > gap_max) gap_max = tr[i].t_back - tr[i - 1].t_back;
    if (i < SHOW)
      printf("{\"bench\":\"rx_gpu_trace_call\",\"carriers\":%d,\"call\":%zu,\"blocks\":%u,"
             "\"queued_ms\":%.3f,\"banks_ms\":%.3f,\"banks_done_ms\":%.3f,\"back_ms\":%.3f,"
             "\"ahead\":%u,\"symbols\":%zu,\"bank_wait_ms\":%.3f,\"bank_serial_ms\":%.3f}\n",
             all ? K : 64, i, tr[i].blocks, (tr[i].t_queue - t0) * 1e3, (tr[i].t_demod - t0) * 1e3,
             (tr[i].t_banks - t0) * 1e3, (tr[i].t_back - t0) * 1e3, tr[i].ahead, tr[i].symbols,
             tr[i].bank_wait * 1e3, tr[i].bank_serial * 1e3);
  }
  printf("{\"bench\":\"rx_gpu_trace\",\"carriers\":%d,\"block\":%zu,\"batch_blocks\":%zu,"
         "\"bank_calls\":%zu,\"input_slots\":%zu,\"wall_s\":%.4f,\"copies_at_pcie_s\":%.4f,"
         "\"span_calls\":%zu,\"span_call_ms\":%.3f,\"span_call_max_ms\":%.3f,"
         "\"span_bank_wait_ms\":%.3f,\"span_bank_serial_ms\":%.3f,\"other_call_ms\":%.4f,"
         "\"after_banks_ms\":%.4f,\"mean_ahead\":%.2f,\"largest_gap_ms\":%.3f,"
         "\"block_copy_ms\":%.3f,\"grows\":%zu,\"call_ms\":[%s],\"exec_tail_ms\":%.3f,"
         "\"flush_ms\":%.3f,",
         all ? K : 64, BIG_BLOCK, batch, nb, slots, wall, n / pcie_sps, spans,
         spans ? span_s / spans * 1e3 : 0, span_max * 1e3, spans ? span_wait / spans * 1e3 : 0,
         spans ? span_serial / spans * 1e3 : 0, nb > spans ? other_s / (nb - spans) * 1e3 : 0,
         nb ? after / nb * 1e3 : 0, nb ? ahead / nb : 0, gap_max * 1e3, BIG_BLOCK / pcie_sps * 1e3,
         grows, calls, nb ? (wall - (tr[nb - 1].t_back - t0)) * 1e3 : 0, flush_s * 1e3);
  print_flush_parts(fl);
  return 0;
}

/* The seed's block from samples in to bits out, 400 blocks in steady state (after 100), the
 * demodulators on `threads` CPU threads (0: all): lat[0..3] = median, p90, p99, largest
 * (seconds); lat[4]: the blocks that complete a CFO span (bits out), lat[5] the largest of
 * the others; lat[6..8]: in the span blocks (mean, from the receiver's trace), the banks' call,
 * their waits for the device and their serial passes. */
static int gpu_latency(const int16_t *x, size_t n, int all, int threads, double lat[9]) {
  enum { WARM = 100, MEAS = 400 };
  static prx_rx_gpu_trace tr[WARM + MEAS];
  uint64_t bytes = 0;
  prx_rx *rx = gpu_rx(all, BLOCK, &bytes, threads);
  if (!rx) return -1;
  prx_rx_gpu_set_trace(rx, tr, WARM + MEAS);
  static double t[MEAS];
  size_t nb = n / BLOCK, spans = 0;
  double other = 0;
  for (size_t b = 0; b < WARM + MEAS; b++) {
    uint64_t before = bytes;
    double t0 = bench_now();
    if (prx_rx_execute(rx, x + 2 * (b % nb) * BLOCK, BLOCK)) {
      fprintf(stderr, "bench_rx: %s\n", prx_last_error());
      prx_rx_destroy(rx);
      return -1;
    }
    if (b < WARM) continue;
    t[b - WARM] = bench_now() - t0;
    if (bytes != before)
      spans++;
    else if (t[b - WARM] > other)
      other = t[b - WARM];
  }
  size_t nt = prx_rx_gpu_trace_count(rx), ns = 0;
  prx_rx_destroy(rx);
  lat[6] = lat[7] = lat[8] = 0;
  for (size_t i = WARM; i < nt; i++)
    if (tr[i].symbols) {
      ns++;
      lat[6] += tr[i].t_banks - tr[i].t_demod;
      lat[7] += tr[i].bank_wait;
      lat[8] += tr[i].bank_serial;
    }
  for (int i = 6; i < 9 && ns; i++) lat[i] /= (double)ns;
  qsort(t, MEAS, sizeof t[0], cmp_double);
  lat[0] = t[MEAS / 2];
  lat[1] = t[(size_t)(0.9 * MEAS)];
  lat[2] = t[(size_t)(0.99 * MEAS)];
  lat[3] = t[MEAS - 1];
  lat[4] = (double)spans;
  lat[5] = other;
  return 0;
}

static void print_latency(int all, int threads, const double lat[9]) {
  printf("{\"bench\":\"rx_gpu_latency\",\"carriers\":%d,\"block\":%d,\"threads\":%d,"
         "\"median_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
         "\"span_blocks\":%.0f,\"max_other_ms\":%.3f,\"span_banks_ms\":%.3f,"
         "\"span_bank_wait_ms\":%.3f,\"span_bank_serial_ms\":%.3f}\n",
         all ? K : 64, BLOCK, threads, lat[0] * 1e3, lat[1] * 1e3, lat[2] * 1e3, lat[3] * 1e3,
         lat[4], lat[5] * 1e3, lat[6] * 1e3, lat[7] * 1e3, lat[8] * 1e3);
}

/* The GPU cases on the 2 s capture x (n samples) tiled to 2^BIG_LOG2 samples. */
static int gpu_cases(const int16_t *x, size_t n, int chan_cases) {
  size_t big = (size_t)1 << BIG_LOG2;
  int16_t *y = prx_pipe_host_alloc(big * 4, 1);
  if (!y) {
    fprintf(stderr, "bench_rx: cannot have %zu bytes of pinned memory\n", big * 4);
    return -1;
  }
  for (size_t i = 0; i < big; i += n) memcpy(y + 2 * i, x, (big - i < n ? big - i : n) * 4);
  double pcie = pcie_bound(y), pcie_sps = pcie / 4;
  printf("{\"bench\":\"pcie\",\"direction\":\"h2d\",\"bytes\":%zu,\"gbps\":%.3f,"
         "\"ci16_gsps\":%.3f}\n",
         (size_t)1 << 30, pcie / 1e9, pcie_sps / 1e9);
  if (chan_cases) chan_device_cases(y, big);
  for (int all = 0; all < 2; all++)
    if (gpu_trace(y, big, all, pcie_sps)) return -1;
  double rate[2][2], split[2][RATE_T], lat[2][9];
  for (int all = 0; all < 2; all++) {
    for (int bl = 0; bl < 2; bl++) {
      size_t block = bl ? BLOCK : BIG_BLOCK;
      double t[RATE_T];
      uint64_t bytes = 0;
      if (gpu_rate(y, big, all, block, 0, &rate[all][bl], t, &bytes)) return -1;
      printf("{\"bench\":\"rx_gpu\",\"format\":\"ci16\",\"K\":%d,\"carriers\":%d,\"block\":%zu,"
             "\"samples\":%zu,\"gsps\":%.3f,\"of_pcie\":%.3f,\"realtime\":%.0f,\"chan_s\":%.4f,"
             "\"demod_s\":%.4f,\"flush_s\":%.4f,\"moves\":%.0f,\"bit_bytes\":%llu,",
             K, all ? K : 64, block, big, rate[all][bl] / 1e9, rate[all][bl] / pcie_sps,
             rate[all][bl] / FS, t[0] + t[1], t[2], t[3], t[4], (unsigned long long)bytes);
      print_flush_parts(t + 6);
    }
    double r;
    uint64_t bytes = 0;
    if (gpu_rate(y, big, all, BIG_BLOCK, 1, &r, split[all], &bytes)) return -1;
    printf("{\"bench\":\"rx_gpu_split\",\"carriers\":%d,\"block\":%zu,\"gsps\":%.3f,"
           "\"copy_s\":%.4f,\"chan_s\":%.4f,\"demod_s\":%.4f,\"flush_s\":%.4f,\"moves\":%.0f,"
           "\"move_s\":%.4f,",
           all ? K : 64, BIG_BLOCK, r / 1e9, split[all][0], split[all][1], split[all][2],
           split[all][3], split[all][4], split[all][5]);
    print_flush_parts(split[all] + 6);
    if (gpu_latency(y, big, all, 0, lat[all])) return -1;
    print_latency(all, 0, lat[all]);
    /* the banks' serial passes on fewer threads (64 carriers: fewer hand-offs per span) */
    for (int th = 2; !all && th <= 8; th *= 2) {
      double l[9];
      if (gpu_latency(y, big, all, th, l)) return -1;
      print_latency(all, th, l);
    }
  }
  printf("\n== GPU receiver, ci16 at 6.5536 Msps, K = %d, 2400 Bd, 2^%d samples from pinned "
         "memory; PCIe h2d bound %.2f GB/s = %.2f Gsps of ci16\n",
         K, BIG_LOG2, pcie / 1e9, pcie_sps / 1e9);
  printf("%-9s %10s %10s %8s %10s %10s %8s %9s %9s %9s %9s\n", "carriers", "Gsps 2^22", "Gsps 2^18",
         "of PCIe", "copy s", "chan s", "demod s", "blk med", "blk p90", "blk p99", "blk max");
  for (int all = 0; all < 2; all++)
    printf("%-9d %10.3f %10.3f %8.3f %10.4f %10.4f %8.4f %7.3fms %7.3fms %7.3fms %7.3fms\n",
           all ? K : 64, rate[all][0] / 1e9, rate[all][1] / 1e9, rate[all][0] / pcie_sps,
           split[all][0], split[all][1], split[all][2], lat[all][0] * 1e3, lat[all][1] * 1e3,
           lat[all][2] * 1e3, lat[all][3] * 1e3);
  prx_pipe_host_free(y);
  return 0;
}

/* Writes the GPU cases' input to path and the 64 carriers as `polyrx rx` arguments to
 * path.args. */
static int write_input(const int16_t *x, size_t n, const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "bench_rx: cannot create %s\n", path);
    return -1;
  }
  size_t big = (size_t)1 << BIG_LOG2;
  for (size_t i = 0; i < big; i += n) {
    size_t m = big - i < n ? big - i : n;
    if (fwrite(x, 4, m, f) != m) {
      fclose(f);
      return -1;
    }
  }
  if (fclose(f)) return -1;
  char args[4096];
  snprintf(args, sizeof args, "%s.args", path);
  if (!(f = fopen(args, "w"))) return -1;
  for (int i = 0; i < 64; i++) fprintf(f, " --carrier f=%.6f,rs=%g", carrier_freq(i), RS);
  fprintf(f, "\n");
  return fclose(f) ? -1 : 0;
}

int main(int argc, char **argv) {
  double seconds = 2;
  int gpu_only = 0, chan_cases = 0;
  const char *write_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu"))
      gpu_only = 1;
    else if (!strcmp(argv[i], "--chan"))
      chan_cases = 1;
    else if (!strcmp(argv[i], "--write") && i + 1 < argc)
      write_path = argv[++i];
    else
      seconds = atof(argv[i]);
  }
  size_t n = (size_t)(seconds * FS) / BLOCK * BLOCK;
  if (n < 4 * BLOCK) n = 4 * BLOCK;
  int16_t *x = make_input(n);
  if (!x) {
    fprintf(stderr, "bench_rx: cannot make the input\n");
    return 1;
  }
  if (write_path && write_input(x, n, write_path)) {
    fprintf(stderr, "bench_rx: cannot write %s\n", write_path);
    prx_pipe_host_free(x);
    return 1;
  }
  int gpu = prx_cuda_available();
  if (gpu_only && !gpu) {
    fprintf(stderr, "bench_rx: --gpu: no usable CUDA device (%s)\n", prx_cuda_module_why());
    return 1;
  }
  if (!gpu_only) {
    result rx[2];
    double chan[2], blk;
    const char *be = prx_backend_name(PRX_BACKEND_CPU);
    for (int all = 0; all < 2; all++) {
      if (run_rx(x, n, all, PRX_BACKEND_CPU, &rx[all])) return 1;
      chan[all] = run_chan(x, n, all, PRX_BACKEND_CPU);
      printf("{\"bench\":\"rx\",\"backend\":\"%s\",\"format\":\"ci16\",\"K\":%d,\"carriers\":%d,"
             "\"samples\":%zu,\"rx_msps\":%.2f,\"chan_msps\":%.2f,\"rx_over_chan\":%.3f,"
             "\"realtime\":%.2f,\"chan_s\":%.4f,\"demod_s\":%.4f,\"bit_bytes\":%llu,"
             "\"cores\":%d}\n",
             be, K, all ? K : 64, n, rx[all].rate / 1e6, chan[all] / 1e6, rx[all].rate / chan[all],
             rx[all].rate / FS, rx[all].chan_s, rx[all].demod_s, (unsigned long long)rx[all].bytes,
             prx_cpu_count());
    }
    blk = run_block(x, n, PRX_BACKEND_CPU);
    printf("{\"bench\":\"rx_block\",\"backend\":\"%s\",\"block\":%d,\"carriers\":64,"
           "\"compute_ms\":%.3f}\n",
           be, BLOCK, blk * 1e3);
    printf("\nreceiver (CPU), ci16 at 6.5536 Msps, K = %d, 2400 Bd, %.3g s of input, %d cores\n", K,
           n / FS, prx_cpu_count());
    printf("%-8s %9s %12s %12s %9s %10s %16s\n", "backend", "carriers", "rx Msps", "chan Msps",
           "rx/chan", "x realtime", "block ms (64 c)");
    for (int all = 0; all < 2; all++)
      printf("%-8s %9d %12.2f %12.2f %9.3f %10.2f %16.3f\n", be, all ? K : 64, rx[all].rate / 1e6,
             chan[all] / 1e6, rx[all].rate / chan[all], rx[all].rate / FS, blk * 1e3);
  }
  int rc = 0;
  if (gpu) rc = gpu_cases(x, n, chan_cases);
  prx_pipe_host_free(x);
  return rc ? 1 : 0;
}
