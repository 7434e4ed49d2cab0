/* Benchmark of the receiver (prx_rx): end-to-end input rate from memory, samples in to bits out.
 *
 * The seed's configuration: ci16 input at 6.5536 Msps, K = 1024 channels (D = 512, the
 * receiver's prototype, 14 taps per channel), 2400 Bd QPSK, differential, default demodulator.
 * The input: 2 s with 64 generated carriers (Es/N0 20 dB, on and between channel centres) in
 * noise, made once and kept in memory (pinned where a CUDA device is usable).
 *
 * Cases, each the best of REPS whole runs (execute in blocks of 262144 samples, then flush):
 * - "rx64": the 64 carriers' channels only;
 * - "rx1024": all 1024 channels demodulated (one carrier listed at every channel centre);
 * - "chan64" and "chan1024": the channelizer alone with the same prototype and selection, the
 *   peer measured in the same run (what the receiver adds is the demodulators and the glue);
 * - "block": the seed's block (262144 samples) through prx_rx_execute in steady state with 64
 *   carriers: the compute time of one block (the demodulator's own lag, up to a CFO span of
 *   8192 symbols, comes on top for the bits of a given sample);
 * each on the CPU and, where a CUDA device is usable, with the CUDA backend (the channelizer on
 * the GPU, the demodulators on the CPU).
 *
 * Output: JSON lines, then a table. Usage: bench_rx [seconds of input (default 2)] */
#include "testutil.h"

#include "pipeline/pipeline.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define FS 6553600.0
#define K 1024
#define RS 2400.0
#define BLOCK 262144
#define REPS 3

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

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
    for (size_t j = 0; j < m; j++) {
      double re = buf[j].re * g, im = buf[j].im * g;
      x[2 * (i + j)] = (int16_t)fmax(-32768, fmin(32767, lrint(re)));
      x[2 * (i + j) + 1] = (int16_t)fmax(-32768, fmin(32767, lrint(im)));
    }
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

static int run_rx(const int16_t *x, size_t n, int all, prx_backend be, result *res) {
  static prx_rx_carrier car[K];
  size_t nc = all ? K : 64;
  for (size_t i = 0; i < nc; i++) {
    car[i] = prx_rx_carrier_default();
    car[i].freq = all ? ((double)i - K / 2) * FS / K : carrier_freq((int)i);
    car[i].symbol_rate = RS;
  }
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = FS;
  rc.channels = K;
  rc.in_format = PRX_CI16;
  rc.carriers = car;
  rc.n_carriers = nc;
  rc.on_output = sink_fn;
  rc.backend = be;
  rc.block_samples = BLOCK;
  memset(res, 0, sizeof *res);
  for (int rep = 0; rep < REPS; rep++) {
    uint64_t bytes = 0;
    rc.user = &bytes;
    prx_rx *rx = NULL;
    if (prx_rx_create(&rc, &rx)) {
      fprintf(stderr, "bench_rx: %s\n", prx_last_error());
      return -1;
    }
    double t0 = now();
    prx_status st = prx_rx_execute(rx, x, n);
    if (!st) st = prx_rx_flush(rx);
    double t = now() - t0;
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

/* The channelizer alone: the receiver's prototype (K 14 + 1 taps, as prx_rx designs it) and the
 * same selection, the same blocks. */
static double run_chan(const int16_t *x, size_t n, int all, prx_backend be) {
  static unsigned sel[K];
  size_t ns = all ? K : 64;
  for (size_t i = 0; i < ns; i++) {
    long kk = all ? (long)i - K / 2 : lround(carrier_freq((int)i) / (FS / K));
    sel[i] = (unsigned)((kk % K + K) % K);
  }
  size_t M = (size_t)K * 14 + 1;
  float *taps = malloc(M * sizeof *taps);
  prx_design_kaiser(M, 80, 1.0 / K, taps);
  prx_chan_config cc = prx_chan_config_default();
  cc.channels = K;
  cc.taps = taps;
  cc.n_taps = M;
  cc.select = sel;
  cc.n_select = ns;
  cc.in_format = PRX_CI16;
  cc.backend = be;
  cc.block_samples = BLOCK;
  size_t stride = BLOCK / (K / 2) + 64;
  prx_cf32 *out = malloc(ns * stride * sizeof *out);
  double best = 0;
  for (int rep = 0; rep < REPS; rep++) {
    prx_chan *c = NULL;
    if (prx_chan_create(&cc, &c)) break;
    double t0 = now();
    size_t got;
    for (size_t i = 0; i < n; i += BLOCK)
      prx_chan_execute(c, x + 2 * i, n - i < BLOCK ? n - i : BLOCK, out, stride, &got);
    prx_chan_flush(c, out, stride, &got);
    double t = now() - t0;
    if (n / t > best) best = n / t;
    prx_chan_destroy(c);
  }
  free(out);
  free(taps);
  return best;
}

/* One seed block through a receiver in steady state: the median compute time of 9 blocks
 * after 8 (the demodulators' spans filled). */
static double run_block(const int16_t *x, size_t n, prx_backend be) {
  static prx_rx_carrier car[64];
  for (int i = 0; i < 64; i++) {
    car[i] = prx_rx_carrier_default();
    car[i].freq = carrier_freq(i);
    car[i].symbol_rate = RS;
  }
  uint64_t bytes = 0;
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = FS;
  rc.channels = K;
  rc.in_format = PRX_CI16;
  rc.carriers = car;
  rc.n_carriers = 64;
  rc.on_output = sink_fn;
  rc.user = &bytes;
  rc.backend = be;
  rc.block_samples = BLOCK;
  prx_rx *rx = NULL;
  if (prx_rx_create(&rc, &rx)) return NAN;
  double t[9];
  size_t nb = n / BLOCK;
  for (size_t b = 0; b < 17; b++) {
    double t0 = now();
    prx_rx_execute(rx, x + 2 * (b % nb) * BLOCK, BLOCK);
    if (b >= 8) t[b - 8] = now() - t0;
  }
  prx_rx_destroy(rx);
  for (int i = 0; i < 9; i++) /* sort: the median */
    for (int j = i + 1; j < 9; j++)
      if (t[j] < t[i]) {
        double s = t[i];
        t[i] = t[j];
        t[j] = s;
      }
  return t[4];
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2;
  size_t n = (size_t)(seconds * FS) / BLOCK * BLOCK;
  if (n < 4 * BLOCK) n = 4 * BLOCK;
  int16_t *x = make_input(n);
  if (!x) {
    fprintf(stderr, "bench_rx: cannot make the input\n");
    return 1;
  }
  prx_backend backends[2] = {PRX_BACKEND_CPU, PRX_BACKEND_CUDA};
  int nbe = prx_cuda_available() ? 2 : 1;
  result rx[2][2];
  double chan[2][2], blk[2];
  for (int b = 0; b < nbe; b++) {
    const char *be = prx_backend_name(backends[b]);
    for (int all = 0; all < 2; all++) {
      if (run_rx(x, n, all, backends[b], &rx[b][all])) return 1;
      chan[b][all] = run_chan(x, n, all, backends[b]);
      printf("{\"bench\":\"rx\",\"backend\":\"%s\",\"format\":\"ci16\",\"K\":%d,\"carriers\":%d,"
             "\"samples\":%zu,\"rx_msps\":%.2f,\"chan_msps\":%.2f,\"rx_over_chan\":%.3f,"
             "\"realtime\":%.2f,\"chan_s\":%.4f,\"demod_s\":%.4f,\"bit_bytes\":%llu,"
             "\"cores\":%d}\n",
             be, K, all ? K : 64, n, rx[b][all].rate / 1e6, chan[b][all] / 1e6,
             rx[b][all].rate / chan[b][all], rx[b][all].rate / FS, rx[b][all].chan_s,
             rx[b][all].demod_s, (unsigned long long)rx[b][all].bytes, prx_cpu_count());
    }
    blk[b] = run_block(x, n, backends[b]);
    printf("{\"bench\":\"rx_block\",\"backend\":\"%s\",\"block\":%d,\"carriers\":64,"
           "\"compute_ms\":%.3f}\n",
           be, BLOCK, blk[b] * 1e3);
  }
  printf("\nreceiver, ci16 at 6.5536 Msps, K = %d, 2400 Bd, %.3g s of input, %d cores%s\n", K,
         n / FS, prx_cpu_count(), nbe == 1 ? " (no CUDA device: CPU only)" : "");
  printf("%-8s %9s %12s %12s %9s %10s %16s\n", "backend", "carriers", "rx Msps", "chan Msps",
         "rx/chan", "x realtime", "block ms (64 c)");
  for (int b = 0; b < nbe; b++)
    for (int all = 0; all < 2; all++)
      printf("%-8s %9d %12.2f %12.2f %9.3f %10.2f %16.3f\n", prx_backend_name(backends[b]),
             all ? K : 64, rx[b][all].rate / 1e6, chan[b][all] / 1e6,
             rx[b][all].rate / chan[b][all], rx[b][all].rate / FS, blk[b] * 1e3);
  prx_pipe_host_free(x);
  return 0;
}
