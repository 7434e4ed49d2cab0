/* Benchmark: polyrx's CPU channelizer against liquid-dsp's firpfbch2_crcf on the same input.
 *
 * K in {128, 1024, 4096} channels, 16 taps per channel (liquid: m = 8, prototype 2 K m taps,
 * the same prototype given to both), D = K/2, all K channels out, cf32 in. polyrx is fed in
 * chunks of `chunk` samples as a streaming application would (default 2^16); liquid block by
 * block (K/2 samples per execute, its API). Single thread, then all cores: polyrx with its
 * thread pool on one object; liquid, which is single-threaded, as one object per thread on
 * separate equal slices of the input (the best a user can do with it; the slices' edges are
 * not stitched, which only flatters liquid).
 *
 * Each measurement is the best of `reps` runs (the machine is shared). Also measured: the
 * core's peak FMA rate (independent AVX2/FMA chains), so that the flop floor of the work,
 * 8 P + 10 log2 K flops per input sample (filter: 2 P complex x real multiply-adds per sample
 * for D = K/2; FFT: 5 K log2 K flops per transform, 2 transforms per K samples), can be stated.
 *
 * Output: one JSON line per measurement, then a table.
 * Usage: bench_chan_cpu [samples_per_run (default 2^21)] [reps (default 20)] [chunk] */
#include "bench_clock.h"
#include "polyrx.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PRX_HAVE_LIQUID
#include <complex.h>
#include <liquid/liquid.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

/* Peak single-core float flops/s with 256-bit FMAs (10 independent chains hide the latency). */
static double peak_flops(void) {
#if defined(__AVX2__) && defined(__FMA__)
  __m256 a[10], m = _mm256_set1_ps(0.999999f), d = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 10; i++) a[i] = _mm256_set1_ps((float)i);
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    long iters = 20000000;
    double t0 = bench_now();
    for (long it = 0; it < iters; it++)
      for (int i = 0; i < 10; i++) a[i] = _mm256_fmadd_ps(a[i], m, d);
    double t = bench_now() - t0, f = iters * 10.0 * 16 / t;
    if (f > best) best = f;
  }
  float sink[8];
  __m256 s = a[0];
  for (int i = 1; i < 10; i++) s = _mm256_add_ps(s, a[i]);
  _mm256_storeu_ps(sink, s);
  if (sink[0] == 12345.f) printf("#\n");
  return best;
#else
  return 0;
#endif
}

typedef struct {
  double polyrx_1, polyrx_all, liquid_1, liquid_all;
  double sel1, sel4; /* 1 thread, 1 and 4 selected channels (direct DFT) */
} result;

/* n_sel = 0: all K channels; else channels 1, 1 + K/n_sel, ... */
static double run_polyrx(unsigned K, const float *h, size_t M, int threads, size_t n_sel,
                         const prx_cf32 *x, size_t n, size_t chunk, prx_cf32 *y, int reps) {
  prx_chan_config cfg = prx_chan_config_default();
  unsigned sel[8];
  for (size_t s = 0; s < n_sel && s < 8; s++) sel[s] = (unsigned)(1 + s * (K / n_sel));
  cfg.select = n_sel ? sel : NULL;
  cfg.n_select = n_sel;
  cfg.channels = K;
  cfg.taps = h;
  cfg.n_taps = M;
  cfg.threads = threads;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  if (prx_chan_create(&cfg, &c)) {
    fprintf(stderr, "bench_chan_cpu: %s\n", prx_last_error());
    exit(1);
  }
  size_t cap = chunk / (K / 2) + 2;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    prx_chan_reset(c);
    double t0 = bench_now();
    for (size_t i = 0; i < n; i += chunk) {
      size_t len = n - i < chunk ? n - i : chunk, got;
      if (prx_chan_execute(c, x + i, len, y, cap, &got)) {
        fprintf(stderr, "bench_chan_cpu: %s\n", prx_last_error());
        exit(1);
      }
    }
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  prx_chan_destroy(c);
  return n / best;
}

#ifdef PRX_HAVE_LIQUID
typedef struct {
  firpfbch2_crcf q;
  unsigned K;
  const prx_cf32 *x;
  size_t n; /* a multiple of K/2 */
  float complex *y;
} liquid_job;

static void *liquid_slice(void *arg) {
  liquid_job *j = arg;
  unsigned D = j->K / 2;
  firpfbch2_crcf_reset(j->q);
  for (size_t i = 0; i + D <= j->n; i += D)
    firpfbch2_crcf_execute(j->q, (float complex *)(j->x + i), j->y);
  return NULL;
}

/* liquid's objects are made and destroyed on this thread only: liquid plans its FFTs with
 * FFTW, whose planner is not thread-safe; the worker threads only execute. */
static double run_liquid(unsigned K, const float *h, int threads, const prx_cf32 *x, size_t n,
                         int reps) {
  size_t D = K / 2, per = n / threads / D * D;
  liquid_job jobs[64];
  pthread_t tid[64];
  for (int t = 0; t < threads; t++)
    jobs[t] = (liquid_job){firpfbch2_crcf_create(LIQUID_ANALYZER, K, 8, (float *)h), K, x + t * per,
                           per, malloc(K * sizeof(float complex))};
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    for (int t = 1; t < threads; t++) pthread_create(&tid[t], NULL, liquid_slice, &jobs[t]);
    liquid_slice(&jobs[0]);
    for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    double tt = bench_now() - t0;
    if (tt < best) best = tt;
  }
  for (int t = 0; t < threads; t++) {
    firpfbch2_crcf_destroy(jobs[t].q);
    free(jobs[t].y);
  }
  return per * threads / best;
}
#endif

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << 21;
  int reps = argc > 2 ? atoi(argv[2]) : 20;
  size_t chunk = argc > 3 ? strtoull(argv[3], NULL, 0) : (size_t)1 << 16;
  int cores = prx_cpu_count();
  if (cores > 64) cores = 64;
  double peak = peak_flops();
  prx_cf32 *x = malloc(n * sizeof *x);
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < n; i++) { /* xorshift noise, uniform in [-1, 1) */
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i].re = (float)((s >> 40) * 0x1p-23 - 1);
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i].im = (float)((s >> 40) * 0x1p-23 - 1);
  }
  const unsigned Ks[] = {128, 1024, 4096};
  result res[3];
  printf("{\"bench\":\"chan_cpu_peak\",\"peak_gflops_1core\":%.2f,\"cores\":%d}\n", peak / 1e9,
         cores);
  for (int ki = 0; ki < 3; ki++) {
    unsigned K = Ks[ki];
    size_t M = 16 * (size_t)K;
    float *h = malloc(M * sizeof *h);
    prx_design_kaiser(M, 80, 0.5 / K, h);
    prx_cf32 *y = malloc((size_t)K * (chunk / (K / 2) + 2) * sizeof *y);
    result *r = &res[ki];
    r->polyrx_1 = run_polyrx(K, h, M, 1, 0, x, n, chunk, y, reps);
    r->polyrx_all = run_polyrx(K, h, M, 0, 0, x, n, chunk, y, reps);
    r->sel1 = run_polyrx(K, h, M, 1, 1, x, n, chunk, y, reps);
    r->sel4 = run_polyrx(K, h, M, 1, 4, x, n, chunk, y, reps);
#ifdef PRX_HAVE_LIQUID
    r->liquid_1 = run_liquid(K, h, 1, x, n, reps);
    r->liquid_all = run_liquid(K, h, cores, x, n, reps);
#else
    r->liquid_1 = r->liquid_all = NAN;
#endif
    double flops = 8.0 * 16 + 10.0 * log2(K);
    printf(
        "{\"bench\":\"chan_cpu\",\"K\":%u,\"D\":%u,\"taps_per_channel\":16,\"samples\":%zu,"
        "\"chunk\":%zu,\"reps\":%d,\"flops_per_sample\":%.1f,"
        "\"polyrx_msps_1\":%.2f,\"liquid_msps_1\":%.2f,\"ratio_1\":%.2f,"
        "\"polyrx_msps_all\":%.2f,\"liquid_msps_all\":%.2f,\"ratio_all\":%.2f,\"threads_all\":%d,"
        "\"polyrx_gflops_1\":%.2f,\"fraction_of_peak_1\":%.3f,"
        "\"polyrx_msps_1_select1\":%.2f,\"polyrx_msps_1_select4\":%.2f}\n",
        K, K / 2, n, chunk, reps, flops, r->polyrx_1 / 1e6, r->liquid_1 / 1e6,
        r->polyrx_1 / r->liquid_1, r->polyrx_all / 1e6, r->liquid_all / 1e6,
        r->polyrx_all / r->liquid_all, cores, r->polyrx_1 * flops / 1e9,
        peak > 0 ? r->polyrx_1 * flops / peak : NAN, r->sel1 / 1e6, r->sel4 / 1e6);
    fflush(stdout);
    free(h);
    free(y);
  }
  printf("\n  K     | 1 thread: polyrx  liquid   ratio | %d threads: polyrx  liquid   ratio | "
         "flop floor 1 thread\n",
         cores);
  for (int ki = 0; ki < 3; ki++) {
    result *r = &res[ki];
    double flops = 8.0 * 16 + 10.0 * log2(Ks[ki]);
    printf("  %-5u | %15.1f %7.1f %6.2fx | %16.1f %7.1f %6.2fx | ", Ks[ki], r->polyrx_1 / 1e6,
           r->liquid_1 / 1e6, r->polyrx_1 / r->liquid_1, r->polyrx_all / 1e6, r->liquid_all / 1e6,
           r->polyrx_all / r->liquid_all);
    if (peak > 0)
      printf("%6.0f Msps (%.0f%% reached)\n", peak / flops / 1e6, 100 * r->polyrx_1 * flops / peak);
    else
      printf("n/a (no AVX2/FMA peak probe in this build)\n");
  }
  printf("  (Msamples/s of input; D = K/2, 16 taps per channel; best of %d; peak %.1f GFLOP/s per "
         "core)\n",
         reps, peak / 1e9);
  printf("  polyrx, 1 thread, a few channels selected (direct DFT, no FFT):");
  for (int ki = 0; ki < 3; ki++)
    printf(" K=%u: %.1f (1 ch) %.1f (4 ch);", Ks[ki], res[ki].sel1 / 1e6, res[ki].sel4 / 1e6);
  printf("\n");
  free(x);
  return 0;
}
