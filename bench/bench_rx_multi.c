/* Benchmark of the receiver across several workers (prx_rx_multi): end-to-end input rate from
 * memory (pinned where a CUDA device is usable), ci16, all K channels demodulated (one 2400 Bd
 * carrier listed at every channel centre, fs = K x 6400 Hz), per worker count, against:
 * - the single receiver (prx_rx) on the same input in the same run (the peer: what the split
 *   costs or gains),
 * - with GPUs, the host-to-device PCIe bound of every distinct device listed, measured in the
 *   same run (a 256 MiB cudaMemcpy from the pinned input, best of 5) and summed: the ceiling
 *   of the input rate (ci16: 4 bytes per sample).
 * The input: 64 generated carriers (Es/N0 20 dB, clock offsets +-100 ppm, CFO) in noise (K/2 for
 * K < 128): --base samples (default 15 M) made once and repeated to the length a round of the
 * most workers needs (each repeat is a jump in every carrier's phase and timing; --base 0
 * generates it all, minutes at K = 1024). The demodulator runs with its shortest CFO span
 * (4096 symbols), so the lead-in and run-out stay short, and its default block (512: with
 * shorter blocks its timing never locks and depends on the stream's start, so the workers'
 * bits would not be the single run's); segments are the default (4 (lead-in + run-out)).
 *
 * Usage: bench_rx_multi [-K CHANNELS (1024)] [--cpu 1,2,3] [--devices 0/0,0] [--rounds R (1)]
 *   [--base SAMPLES]
 *   --cpu: CPU worker counts (default 1,2); --devices: device lists separated by '/', e.g.
 *   "0/0,0" runs one worker on GPU 0, then two workers on GPU 0 (default: none).
 * Output: one JSON line per case. */
#include "bench_clock.h"
#include "testutil.h"

#include "dsp/pack.h"
#include "pipeline/pipeline.h"
#include "polyrx/rx_multi.h"

#ifdef PRX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RS 2400.0
#define SPACING 6400.0
#define BASE 15000000 /* generated samples, then repeated (not a divisor of the segments) */
#define BLOCK_SYMS 512
#define SPAN_SYMS 4096

/* per carrier: symbols received */
static void sink_fn(void *u, size_t c, const uint8_t *b, size_t nb, const float *l, size_t ns) {
  (void)b, (void)l, (void)nb;
  ((uint64_t *)u)[c] += ns;
}

static uint64_t g_single[65536], g_multi[65536], g_unmatched[65536];

/* Carriers whose symbol count differs from the single run's: those with a generated carrier
 * in their channel (every (K / nc)-th from 1), and the others (noise only). */
static void count_diffs(unsigned K, size_t *sig, size_t *noise, uint64_t *total) {
  unsigned nc = K < 128 ? K / 2 : 64;
  *sig = *noise = 0;
  *total = 0;
  for (unsigned c = 0; c < K; c++) {
    *total += g_multi[c];
    if (g_multi[c] == g_single[c]) continue;
    if (c % (K / nc) == 1) {
      ++*sig;
      fprintf(stderr, "carrier %u: %llu symbols, single run %llu, %llu seams unmatched\n", c,
              (unsigned long long)g_multi[c], (unsigned long long)g_single[c],
              (unsigned long long)g_unmatched[c]);
    } else
      ++*noise;
  }
}

/* n samples of ci16: base generated samples repeated. */
static int16_t *make_input(unsigned K, size_t n, size_t base) {
  double fs = K * SPACING;
  prx_sim_carrier car[64];
  test_rng r;
  test_rng_seed(&r, 21);
  unsigned nc = K < 128 ? K / 2 : 64;
  for (unsigned i = 0; i < nc; i++) {
    car[i] = prx_sim_carrier_default();
    car[i].freq =
        ((double)(i * (K / nc)) - K / 2.0 + 1) * SPACING + (test_rng_uniform(&r) - 0.5) * 0.2 * RS;
    car[i].symbol_rate = RS;
    car[i].differential = 1;
    car[i].clock_ppm = (test_rng_uniform(&r) - 0.5) * 200;
    car[i].timing_offset = 0.9 * test_rng_uniform(&r);
  }
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = fs;
  sc.carriers = car;
  sc.n_carriers = nc;
  sc.noise = 1;
  sc.esn0_db = 20;
  prx_sim *sim = NULL;
  int16_t *x = prx_pipe_host_alloc(n * 4, 1);
  prx_cf32 *buf = malloc(65536 * sizeof *buf);
  if (!x || !buf || prx_sim_create(&sc, &sim)) {
    fprintf(stderr, "bench_rx_multi: %s\n", prx_last_error());
    return NULL;
  }
  double rms = sqrt(nc + prx_sim_noise_variance(sim)), g = 0.2 / rms * 32768;
  if (!base || base > n) base = n;
  for (size_t i = 0; i < base; i += 65536) {
    size_t m = base - i < 65536 ? base - i : 65536;
    prx_sim_generate(sim, buf, m);
    prx_pack_ci16(buf, m, (float)g, x + 2 * i);
  }
  for (size_t i = base; i < n; i += base) memcpy(x + 2 * i, x, (n - i < base ? n - i : base) * 4);
  prx_sim_destroy(sim);
  free(buf);
  return x;
}

static prx_rx_carrier g_car[65536];

static prx_rx_config rx_config(unsigned K, uint64_t *counts) {
  for (unsigned i = 0; i < K; i++) {
    g_car[i] = prx_rx_carrier_default();
    g_car[i].freq = ((double)i - K / 2.0) * SPACING;
    g_car[i].symbol_rate = RS;
  }
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = K * SPACING;
  rc.channels = K;
  rc.in_format = PRX_CI16;
  rc.carriers = g_car;
  rc.n_carriers = K;
  rc.on_output = sink_fn;
  rc.user = counts;
  rc.block_symbols = BLOCK_SYMS;
  rc.cfo_span_symbols = SPAN_SYMS;
  return rc;
}

/* Host-to-device bytes per second of device dev from the pinned buffer (NaN without CUDA). */
static double h2d_bound(int dev, const void *src, size_t bytes) {
#ifdef PRX_HAVE_CUDA
  void *d = NULL;
  if (cudaSetDevice(dev) || cudaMalloc(&d, bytes)) return NAN;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    cudaDeviceSynchronize();
    double t0 = bench_now();
    cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  cudaFree(d);
  return (double)bytes / best;
#else
  (void)dev, (void)src, (void)bytes;
  return NAN;
#endif
}

/* One run of the multi receiver (devices NULL: CPU workers) over x; the rate in samples/s. */
static double run_multi(unsigned K, const int16_t *x, size_t n, const int *devices, size_t nd,
                        unsigned workers, uint64_t *counts, size_t *seg, size_t *lead,
                        size_t *tail) {
  prx_rx_multi_config mc = prx_rx_multi_config_default();
  mc.rx = rx_config(K, counts);
  mc.rx.backend = devices ? PRX_BACKEND_CUDA : PRX_BACKEND_CPU;
  mc.devices = devices;
  mc.n_devices = nd;
  mc.cpu_workers = workers;
  prx_rx_multi *m = NULL;
  if (prx_rx_multi_create(&mc, &m)) {
    fprintf(stderr, "bench_rx_multi: %s\n", prx_last_error());
    return NAN;
  }
  prx_rx_multi_get_layout(m, seg, lead, tail);
  double t0 = bench_now();
  prx_status st = prx_rx_multi_execute(m, x, n);
  if (!st) st = prx_rx_multi_flush(m);
  double t = bench_now() - t0;
  if (st) fprintf(stderr, "bench_rx_multi: %s\n", prx_last_error());
  for (unsigned c = 0; c < K; c++) prx_rx_multi_seams(m, c, NULL, &g_unmatched[c]);
  prx_rx_multi_destroy(m);
  return st ? NAN : (double)n / t;
}

static double run_single(unsigned K, const int16_t *x, size_t n, prx_backend be, uint64_t *counts) {
  memset(counts, 0, K * sizeof *counts);
  prx_rx_config rc = rx_config(K, counts);
  rc.backend = be;
  prx_rx *rx = NULL;
  if (prx_rx_create(&rc, &rx)) {
    fprintf(stderr, "bench_rx_multi: %s\n", prx_last_error());
    return NAN;
  }
  double t0 = bench_now();
  prx_status st = prx_rx_execute(rx, x, n);
  if (!st) st = prx_rx_flush(rx);
  double t = bench_now() - t0;
  prx_rx_destroy(rx);
  return st ? NAN : (double)n / t;
}

int main(int argc, char **argv) {
  unsigned K = 1024, rounds = 1;
  size_t base = BASE;
  const char *cpu = "1,2", *devs = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-K"))
      K = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cpu"))
      cpu = argv[i + 1];
    else if (!strcmp(argv[i], "--devices"))
      devs = argv[i + 1];
    else if (!strcmp(argv[i], "--rounds"))
      rounds = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--base"))
      base = (size_t)atoll(argv[i + 1]);
    else {
      fprintf(stderr, "usage: bench_rx_multi [-K N] [--cpu 1,2] [--devices 0/0,0] [--rounds R] "
                      "[--base N]\n");
      return 2;
    }
  }
  /* the layout, and the input a round of the most workers needs */
  unsigned max_w = 1;
  for (const char *p = cpu; *p; p++)
    if (atoi(p) > (int)max_w) max_w = (unsigned)atoi(p);
  int lists[8][PRX_RX_MULTI_MAX_WORKERS];
  size_t nlists = 0, lens[8] = {0};
  for (const char *p = devs; p && *p && nlists < 8;) {
    char *end;
    lists[nlists][lens[nlists]++] = (int)strtol(p, &end, 10);
    if (*end == '/' || !*end) {
      if (lens[nlists] > max_w) max_w = (unsigned)lens[nlists];
      nlists++;
    }
    p = *end ? end + 1 : end;
  }
  uint64_t sym = 0;
  size_t seg = 0, lead = 0, tail = 0;
  {
    prx_rx_multi_config mc = prx_rx_multi_config_default();
    mc.rx = rx_config(K, g_multi);
    mc.rx.backend = PRX_BACKEND_CPU;
    mc.cpu_workers = 1;
    prx_rx_multi *m = NULL;
    if (prx_rx_multi_create(&mc, &m)) {
      fprintf(stderr, "bench_rx_multi: %s\n", prx_last_error());
      return 1;
    }
    prx_rx_multi_get_layout(m, &seg, &lead, &tail);
    prx_rx_multi_destroy(m);
  }
  size_t n = rounds * max_w * seg + tail;
  int16_t *x = make_input(K, n, base);
  if (!x) {
    fprintf(stderr, "bench_rx_multi: no input of %zu samples\n", n);
    return 1;
  }
  printf("{\"K\":%u,\"fs\":%.0f,\"samples\":%zu,\"segment\":%zu,\"lead\":%zu,\"tail\":%zu,"
         "\"cores\":%d}\n",
         K, K * SPACING, n, seg, lead, tail, prx_cpu_count());
  sym = 0;
  double single_cpu = run_single(K, x, n, PRX_BACKEND_CPU, g_single);
  for (unsigned c = 0; c < K; c++) sym += g_single[c];
  printf("{\"case\":\"single\",\"backend\":\"cpu\",\"msps\":%.2f,\"symbols\":%llu}\n",
         single_cpu * 1e-6, (unsigned long long)sym);
  for (const char *p = cpu; *p;) {
    char *end;
    unsigned w = (unsigned)strtol(p, &end, 10);
    if (end == p) break;
    memset(g_multi, 0, sizeof g_multi);
    double r = run_multi(K, x, n, NULL, 0, w, g_multi, &seg, &lead, &tail);
    size_t ds, dn;
    uint64_t s;
    count_diffs(K, &ds, &dn, &s);
    printf("{\"case\":\"multi\",\"backend\":\"cpu\",\"workers\":%u,\"msps\":%.2f,"
           "\"vs_single\":%.3f,\"symbols\":%llu,\"count_differs_signal\":%zu,"
           "\"count_differs_noise_only\":%zu}\n",
           w, r * 1e-6, r / single_cpu, (unsigned long long)s, ds, dn);
    p = *end ? end + 1 : end;
  }
  /* the peer again after the multi cases: the shared machine's load moves between them */
  double again = run_single(K, x, n, PRX_BACKEND_CPU, g_single);
  printf("{\"case\":\"single_again\",\"backend\":\"cpu\",\"msps\":%.2f}\n", again * 1e-6);
  if (nlists && prx_cuda_available()) {
    double single_gpu = run_single(K, x, n, PRX_BACKEND_CUDA, g_single);
    printf("{\"case\":\"single\",\"backend\":\"cuda\",\"msps\":%.2f}\n", single_gpu * 1e-6);
    for (size_t l = 0; l < nlists; l++) {
      /* the PCIe bound: each distinct device's, summed */
      double bound = 0;
      size_t bytes = (size_t)1 << 28;
      if (bytes > n * 4) bytes = n * 4;
      for (size_t i = 0; i < lens[l]; i++) {
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= lists[l][j] == lists[l][i];
        if (!seen) bound += h2d_bound(lists[l][i], x, bytes);
      }
      memset(g_multi, 0, sizeof g_multi);
      double r = run_multi(K, x, n, lists[l], lens[l], 0, g_multi, &seg, &lead, &tail);
      size_t ds, dn;
      uint64_t s;
      count_diffs(K, &ds, &dn, &s);
      printf("{\"case\":\"multi\",\"backend\":\"cuda\",\"workers\":%zu,\"devices\":\"", lens[l]);
      for (size_t i = 0; i < lens[l]; i++) printf("%s%d", i ? "," : "", lists[l][i]);
      printf("\",\"msps\":%.2f,\"pcie_bound_msps\":%.2f,\"of_bound\":%.3f,\"vs_single\":%.3f,"
             "\"count_differs_signal\":%zu,\"count_differs_noise_only\":%zu}\n",
             r * 1e-6, bound / 4 * 1e-6, r / (bound / 4), r / single_gpu, ds, dn);
    }
  } else if (nlists) {
    printf("{\"case\":\"cuda\",\"skipped\":\"no usable CUDA device\"}\n");
  }
  prx_pipe_host_free(x);
  return 0;
}
