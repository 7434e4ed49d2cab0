/* GPU channelizer benchmark: prints JSON lines, then a short table.
 *
 * Measured in one run on the same device:
 *  - ceilings: device-to-device copy bandwidth (bytes read + written), pinned host-to-device
 *    and device-to-host copy bandwidth;
 *  - device-resident throughput (input already on the device, output left there) for K in
 *    {128, 1024, 2048, 4096}, 16 taps per channel, D = K/2 and D = K, cf32 in and out, as
 *    input Gsamples/s and as a fraction of the byte floor (input bytes + output bytes at the
 *    copy bandwidth), each one call timed alone on an idle stream (median of the calls: the
 *    host's work for the call and the launch latency included) and a stream of 8 calls back
 *    to back (per call: what a caller streaming device buffers gets), with the fused kernel's
 *    design (prx_fused_select) printed beside each; the other shipped designs on the same
 *    configurations (the fused kernel with thread stores where the default copies tiles out
 *    through the TMA; the general path = filter kernel + cuFFT + post kernel); ci16 input
 *    and cf16 output;
 *  - end-to-end streaming from pinned host memory back to pinned host memory, ci16 and cf32
 *    input, all channels and a 64-channel subset, against the PCIe bound
 *    min(H2D / input bytes, D2H / output bytes) per sample;
 *  - the seed paper's case: 262144 samples, K = 128 and 1024, D = K/2, one block end to end.
 * The CuPy peer runs in bench/cupy_channelize.py on the same sizes (scripts/gpu_check.sh).
 *
 * Usage: bench_chan_cuda [--quick]   (--quick: smaller inputs, fewer repetitions) */
#include "bench_clock.h"
#include "polyrx.h"

#include "chan/chan_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef PRX_HAVE_CUDA
int main(void) {
  printf("bench_chan_cuda: this build has no CUDA backend\n");
  return 0;
}
#else
#include <cuda_runtime_api.h>

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define PK(call)                                                                                   \
  do {                                                                                             \
    prx_status s_ = (call);                                                                        \
    if (s_ != PRX_OK) {                                                                            \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, prx_last_error());             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int reps = 15;
static double bw_d2d, bw_h2d, bw_d2h; /* bytes/s */

/* table rows, printed at the end */
static char table[128][200];
static int n_table;
#define ROW(...) snprintf(table[n_table < 127 ? n_table++ : 127], 200, __VA_ARGS__)

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* cheap deterministic noise for inputs (never time on zeros) */
static void fill_bytes(void *p, size_t n, uint32_t seed) {
  uint32_t *w = p, x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n / 4; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    w[i] = x;
  }
}
static void fill_cf32(prx_cf32 *p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i].re = (float)(x & 0xffff) / 32768.0f - 1.0f;
    p[i].im = (float)(x >> 16) / 32768.0f - 1.0f;
  }
}

static void measure_ceilings(size_t bytes) {
  void *a, *b, *h;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaHostAlloc(&h, bytes, 0));
  fill_bytes(h, bytes, 1);
  CK(cudaMemcpy(a, h, bytes, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double best[3] = {0, 0, 0};
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 3; k++) {
      CK(cudaEventRecord(e0, 0));
      if (k == 0) CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
      if (k == 1) CK(cudaMemcpyAsync(a, h, bytes, cudaMemcpyHostToDevice, 0));
      if (k == 2) CK(cudaMemcpyAsync(h, b, bytes, cudaMemcpyDeviceToHost, 0));
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      double bw = (k == 0 ? 2.0 : 1.0) * bytes / (ms * 1e-3);
      if (bw > best[k]) best[k] = bw;
    }
  bw_d2d = best[0], bw_h2d = best[1], bw_d2h = best[2];
  printf("{\"bench\":\"chan_cuda\",\"kind\":\"ceiling\",\"bytes\":%zu,\"d2d_GBps\":%.1f,"
         "\"h2d_GBps\":%.2f,\"d2h_GBps\":%.2f}\n",
         bytes, bw_d2d / 1e9, bw_h2d / 1e9, bw_d2h / 1e9);
  ROW("ceilings: D2D copy %.0f GB/s (read+write), H2D %.1f GB/s, D2H %.1f GB/s", bw_d2d / 1e9,
      bw_h2d / 1e9, bw_d2h / 1e9);
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(h);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

/* D2H bandwidth of 2D copies (rows of `row` bytes into a pitched pinned buffer), the copy the
 * host pipeline makes for every block when all channels come back */
static void measure_d2h_2d(size_t total) {
  void *d, *h;
  CK(cudaMalloc(&d, total));
  CK(cudaHostAlloc(&h, 2 * total, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  static const size_t rows[] = {4096, 16384, 65536, 262144};
  for (int i = 0; i < 4; i++) {
    size_t row = rows[i], n = total / row;
    double best = 0;
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(e0, 0));
      CK(cudaMemcpy2DAsync(h, 2 * row, d, row, row, n, cudaMemcpyDeviceToHost, 0));
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (total / (ms * 1e-3) > best) best = total / (ms * 1e-3);
    }
    printf("{\"bench\":\"chan_cuda\",\"kind\":\"d2h_2d\",\"row_bytes\":%zu,\"GBps\":%.2f,"
           "\"frac_d2h\":%.3f}\n",
           row, best / 1e9, best / bw_d2h);
    ROW("D2H 2D copy, rows of %6zu B: %5.1f GB/s (%4.1f%% of contiguous)", row, best / 1e9,
        100 * best / bw_d2h);
  }
  cudaFree(d);
  cudaFreeHost(h);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

/* the same into rows 1 MB apart (the pitch of the end-to-end runs' output), h: hbytes pinned
 * (1024 rows, fewer where h is smaller: --quick) */
static void measure_d2h_pitched(void *h, size_t hbytes) {
  const size_t pitch = (size_t)1 << 20, nrows = hbytes / pitch < 1024 ? hbytes / pitch : 1024;
  void *d;
  CK(cudaMalloc(&d, nrows * 262144));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  static const size_t rows[] = {16384, 65536, 262144};
  for (int i = 0; i < 3; i++) {
    size_t row = rows[i];
    double best = 0;
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(e0, 0));
      CK(cudaMemcpy2DAsync(h, pitch, d, row, row, nrows, cudaMemcpyDeviceToHost, 0));
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      double bw = (double)row * nrows / (ms * 1e-3);
      if (bw > best) best = bw;
    }
    printf("{\"bench\":\"chan_cuda\",\"kind\":\"d2h_2d\",\"row_bytes\":%zu,\"pitch\":%zu,"
           "\"GBps\":%.2f,\"frac_d2h\":%.3f}\n",
           row, pitch, best / 1e9, best / bw_d2h);
    ROW("D2H 2D copy, rows of %6zu B, pitch 1 MB: %5.1f GB/s (%4.1f%%)", row, best / 1e9,
        100 * best / bw_d2h);
  }
  cudaFree(d);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

static prx_chan *make(unsigned K, unsigned D, prx_format in, prx_format out, const unsigned *sel,
                      size_t nsel, size_t block) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = 16;
  cfg.in_format = in;
  cfg.out_format = out;
  cfg.select = sel;
  cfg.n_select = nsel;
  cfg.backend = PRX_BACKEND_CUDA;
  cfg.block_samples = block;
  prx_chan *c = NULL;
  PK(prx_chan_create(&cfg, &c));
  return c;
}

static int profiling; /* --profile: the single calls only */

/* device-resident: N samples on the device, one execute_device per run */
static double device_run(unsigned K, unsigned D, prx_format fin, prx_format fout,
                         prx_cuda_design design, void *d_in, size_t N, void *d_out,
                         const char *label) {
  prx_chan *c = make(K, D, fin, fout, NULL, 0, 0);
  if (design != PRX_CUDA_SELECTED) PK(prx_chan_cuda_retune(c, design));
  prx_fused_policy pol;
  char ptext[160] = "general path";
  const int fused = prx_chan_cuda_fused(c, &pol);
  if (fused) prx_fused_policy_text(&pol, ptext, sizeof ptext);
  size_t n_out = prx_chan_output_count(c, N), no = 0;
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CK(cudaStreamCreate(&s));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double t[32];
  for (int r = -1; r < reps; r++) {
    prx_chan_reset(c);
    CK(cudaEventRecord(e0, s));
    PK(prx_chan_execute_device(c, d_in, N, d_out, n_out, &no, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 0) t[r] = ms * 1e-3;
  }
  double tm = median(t, reps), best = t[0]; /* t sorted by median() */
  /* a stream of calls: STREAM_CALLS of N samples each, back to back on the stream (the
   * host's work for a call overlaps the device's for the one before) */
  enum { STREAM_CALLS = 8 };
  /* rows of n_out as in the single calls (N is a multiple of D, so every call has n_out
   * outputs; n_out is a multiple of 16): rows 16 bytes off the 32-byte sectors lose 20 %
   * (partial-sector writes; bench/GPU_NOTES.md, "Output rows and sectors") */
  float sms = 0;
  if (!profiling) { /* (ncu profiles the single calls only) */
    prx_chan_reset(c);
    CK(cudaEventRecord(e0, s));
    for (int i = 0; i < STREAM_CALLS; i++)
      PK(prx_chan_execute_device(c, d_in, N, d_out, n_out, &no, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&sms, e0, e1));
  }
  const double ts = sms * 1e-3 / STREAM_CALLS;
  double bytes = (double)N * prx_format_size(fin) + (double)n_out * K * prx_format_size(fout);
  double gsps = N / tm / 1e9, floor_gsps = N / (bytes / bw_d2d) / 1e9,
         sgsps = ts > 0 ? N / ts / 1e9 : 0; /* (0: not measured, --profile) */
  printf("{\"bench\":\"chan_cuda\",\"kind\":\"device\",\"K\":%u,\"D\":%u,\"taps\":16,\"in\":\"%s\","
         "\"out\":\"%s\",\"design\":\"%s\",\"policy\":\"%s\",\"label\":\"%s\","
         "\"samples\":%zu,"
         "\"median_ms\":%.4f,"
         "\"best_ms\":%.4f,\"gsps\":%.2f,\"floor_gsps\":%.1f,\"frac_floor\":%.3f,"
         "\"stream_ms\":%.4f,\"stream_gsps\":%.2f,\"stream_frac_floor\":%.3f}\n",
         K, D, prx_format_name(fin), prx_format_name(fout), fused ? "fused" : "general", ptext,
         label, N, tm * 1e3, best * 1e3, gsps, floor_gsps, gsps / floor_gsps, ts * 1e3, sgsps,
         sgsps / floor_gsps);
  ROW("device %-14s K=%-5u D=%-5u %s->%s %7.1f Gsps  floor %6.1f  %5.1f%%  stream %6.1f  %5.1f%%",
      label, K, D, prx_format_name(fin), prx_format_name(fout), gsps, floor_gsps,
      100 * gsps / floor_gsps, sgsps, 100 * sgsps / floor_gsps);
  if (fused) ROW("       design: %s", ptext);
  cudaStreamDestroy(s);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  prx_chan_destroy(c);
  return gsps;
}

/* end to end: pinned host in -> prx_chan_execute -> pinned host out */
static void e2e_run(unsigned K, unsigned D, prx_format fin, size_t nsel, size_t block, void *h_in,
                    size_t N, void *h_out) {
  unsigned *sel = NULL;
  if (nsel < K) {
    sel = malloc(nsel * sizeof *sel);
    for (size_t i = 0; i < nsel; i++) sel[i] = (unsigned)(i * (K / nsel));
  }
  prx_chan *c = make(K, D, fin, PRX_CF32, sel, sel ? nsel : 0, block);
  size_t n_out = prx_chan_output_count(c, N), no = 0;
  double t[32];
  for (int r = -1; r < reps; r++) {
    prx_chan_reset(c);
    double t0 = bench_now();
    PK(prx_chan_execute(c, h_in, N, h_out, n_out, &no));
    if (r >= 0) t[r] = bench_now() - t0;
  }
  double tm = median(t, reps), best = t[0];
  double in_b = (double)prx_format_size(fin), out_b = (double)nsel * 8 / D; /* per input sample */
  double bound = fmin(bw_h2d / in_b, bw_d2h / out_b) / 1e9;
  double gsps = N / best / 1e9;
  printf(
      "{\"bench\":\"chan_cuda\",\"kind\":\"e2e\",\"K\":%u,\"D\":%u,\"in\":\"%s\",\"channels\":%zu,"
      "\"block\":%zu,\"samples\":%zu,\"median_ms\":%.3f,\"best_ms\":%.3f,\"gsps\":%.3f,"
      "\"median_gsps\":%.3f,\"pcie_bound_gsps\":%.3f,\"frac_bound\":%.3f}\n",
      K, D, prx_format_name(fin), nsel, block, N, tm * 1e3, best * 1e3, gsps, N / tm / 1e9, bound,
      gsps / bound);
  ROW("e2e    K=%-5u D=%-4u %s %4zu ch block %-8zu %6.2f Gsps  bound %6.2f  %5.1f%%", K, D,
      prx_format_name(fin), nsel, block ? block : (size_t)0, gsps, bound, 100 * gsps / bound);
  prx_chan_destroy(c);
  free(sel);
}

/* the seed paper's case: one block of 262144 samples end to end */
static void seed_run(unsigned K, double paper_ms, void *h_in, void *h_out) {
  const size_t N = 262144;
  prx_chan *c = make(K, K / 2, PRX_CF32, PRX_CF32, NULL, 0, 0);
  size_t n_out = prx_chan_output_count(c, N), no = 0;
  double t[64];
  int n = 3 * reps;
  for (int r = -2; r < n; r++) {
    prx_chan_reset(c);
    double t0 = bench_now();
    PK(prx_chan_execute(c, h_in, N, h_out, n_out, &no));
    if (r >= 0) t[r] = bench_now() - t0;
  }
  double tm = median(t, n), best = t[0];
  printf("{\"bench\":\"chan_cuda\",\"kind\":\"seed\",\"K\":%u,\"D\":%u,\"samples\":%zu,"
         "\"outputs_per_channel\":%zu,\"median_ms\":%.3f,\"best_ms\":%.3f,\"paper_k20_ms\":%.2f}\n",
         K, K / 2, N, n_out, tm * 1e3, best * 1e3, paper_ms);
  ROW("seed   K=%-5u D=%-4u 262144 samples, one block end to end: %.3f ms (best %.3f), paper "
      "%.2f ms",
      K, K / 2, tm * 1e3, best * 1e3, paper_ms);
  prx_chan_destroy(c);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  int profile = argc > 1 && !strcmp(argv[1], "--profile"); /* one run of the main cases, for ncu */
  profiling = profile;
  if (!prx_cuda_available()) {
    printf("bench_chan_cuda: no usable CUDA device\n");
    return 0;
  }
  if (quick) reps = 3;
  if (profile) {
    reps = 1;
    bw_d2d = 4.25e12;
    const size_t N = (size_t)1 << 26;
    void *d_in, *d_out;
    CK(cudaMalloc(&d_in, N * 8));
    CK(cudaMalloc(&d_out, N * 2 * 8 + (1 << 20)));
    CK(cudaMemset(d_in, 0x3c, N * 8));
    /* K = 1024, D = K/2: the default and the thread-store design (two launches each), then
     * D = K */
    device_run(1024, 512, PRX_CF32, PRX_CF32, PRX_CUDA_SELECTED, d_in, N, d_out, "default");
    device_run(1024, 512, PRX_CF32, PRX_CF32, PRX_CUDA_THREAD_STORES, d_in, N, d_out,
               "thread stores");
    device_run(1024, 1024, PRX_CF32, PRX_CF32, PRX_CUDA_SELECTED, d_in, N, d_out, "default");
    return 0;
  }
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("{\"bench\":\"chan_cuda\",\"kind\":\"device_info\",\"name\":\"%s\",\"sms\":%d,"
         "\"l2_MB\":%.0f}\n",
         prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0);
  measure_ceilings(quick ? (size_t)1 << 28 : (size_t)1 << 30);

  /* device-resident */
  const size_t N = quick ? (size_t)1 << 24 : (size_t)1 << 26;
  void *d_in, *d_out, *h_tmp;
  CK(cudaMalloc(&d_in, N * 8));
  CK(cudaMalloc(&d_out, N * 2 * 8 + (1 << 20)));
  CK(cudaHostAlloc(&h_tmp, N * 8, 0));
  fill_cf32(h_tmp, N, 7);
  CK(cudaMemcpy(d_in, h_tmp, N * 8, cudaMemcpyHostToDevice));
  static const unsigned Ks[] = {128, 1024, 2048, 4096};
  for (int i = 0; i < 4; i++)
    for (int half = 1; half >= 0; half--)
      device_run(Ks[i], half ? Ks[i] / 2 : Ks[i], PRX_CF32, PRX_CF32, PRX_CUDA_SELECTED, d_in, N,
                 d_out, "default");
  /* the other shipped designs where they differ from the default: thread stores where the
   * default copies tiles out (K = 1024, 4096), the general path */
  for (int i = 1; i < 4; i += 2)
    for (int half = 1; half >= 0; half--)
      device_run(Ks[i], half ? Ks[i] / 2 : Ks[i], PRX_CF32, PRX_CF32, PRX_CUDA_THREAD_STORES, d_in,
                 N, d_out, "thread stores");
  device_run(1024, 512, PRX_CF32, PRX_CF32, PRX_CUDA_GENERAL, d_in, N, d_out, "general");
  device_run(1024, 1024, PRX_CF32, PRX_CF32, PRX_CUDA_GENERAL, d_in, N, d_out, "general");
  device_run(1024, 512, PRX_CI16, PRX_CF32, PRX_CUDA_SELECTED, d_in, N, d_out, "default");
  device_run(1024, 512, PRX_CF32, PRX_CF16, PRX_CUDA_SELECTED, d_in, N, d_out, "default");
  device_run(1024, 512, PRX_CI16, PRX_CF16, PRX_CUDA_SELECTED, d_in, N, d_out, "default");
  cudaFree(d_in);
  cudaFree(d_out);

  /* end to end, pinned host memory */
  measure_d2h_2d(quick ? (size_t)1 << 26 : (size_t)1 << 28);
  const size_t Ne = quick ? (size_t)1 << 23 : (size_t)1 << 26;
  void *h_out;
  CK(cudaHostAlloc(&h_out, Ne * 2 * 8 + (1 << 20), 0));
  measure_d2h_pitched(h_out, Ne * 2 * 8 + (1 << 20));
  static const prx_format fins[] = {PRX_CI16, PRX_CF32};
  for (int f = 0; f < 2; f++) {
    if (fins[f] == PRX_CI16)
      fill_bytes(h_tmp, Ne * 4, 3);
    else
      fill_cf32(h_tmp, Ne, 3);
    e2e_run(1024, 512, fins[f], 1024, 0, h_tmp, Ne, h_out);
    e2e_run(1024, 512, fins[f], 64, 0, h_tmp, Ne, h_out);
    e2e_run(1024, 512, fins[f], 1024, (size_t)1 << 21, h_tmp, Ne, h_out);
    e2e_run(1024, 512, fins[f], 1024, (size_t)1 << 23, h_tmp, Ne, h_out);
  }

  /* the seed's case */
  fill_cf32(h_tmp, 262144, 5);
  seed_run(128, 0.99, h_tmp, h_out);
  seed_run(1024, 1.47, h_tmp, h_out);
  cudaFreeHost(h_out);
  cudaFreeHost(h_tmp);

  printf("\n== GPU channelizer (%s), 16 taps per channel ==\n", prop.name);
  for (int i = 0; i < n_table; i++) printf("%s\n", table[i]);
  return 0;
}
#endif
