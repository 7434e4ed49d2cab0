/* CUDA channelizer, in each of its designs (the fused kernel as prx_fused_select chooses it,
 * the fused kernel with thread stores forced, the general path at the K the fused kernel does
 * not take): equals the float64 reference and the CPU backend (relative L2 <= 1e-5) for every
 * configuration the CPU tests cover (K in {2, 6, 128, 1000, 1024} and the fused kernel's
 * sizes, D in {K/2, K}, several taps, a caller prototype), every input format,
 * channel subsets, random chunkings down to 1-sample calls with flush, small blocks through
 * the host pipeline with pageable and pinned memory, cf16 output, the device-resident API,
 * and invalid use; the post pass (ci16 output, power sums): its bytes equal the CPU's packing
 * of the plain object's cf32 rows bit for bit (every binary16 and ci16 rounding case through a
 * channelizer that passes its input through), its sums and counts the float64 ones. Output buffers
 * are poisoned (NaN) before every run, and the part of each channel's row past the outputs must
 * stay poisoned.
 *
 * Skips (exit 77) without a CUDA device. PRX_TEST_SMALL=1 runs a reduced set (for
 * compute-sanitizer, which slows kernels down a hundredfold). */
#include "chan_ref.h"
#include "testutil.h"

#include "chan/chan_cuda.h"
#include "dsp/finite.h"
#include "dsp/pack.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef PRX_HAVE_CUDA
#include <cuda_runtime_api.h>

static int small_mode;
static prx_cuda_design design; /* the design run_case re-plans its objects with */
static int have_cpu = -1;      /* whether the CPU backend can be created (probed once) */

/* IEEE half bits -> float (cf16 output check) */
static float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), e - 25);
  return h & 0x8000 ? -v : v;
}

static void poison(void *p, size_t bytes) { memset(p, 0xff, bytes); } /* NaN in cf32 and cf16 */

static int still_poisoned(const unsigned char *p, size_t bytes) {
  for (size_t i = 0; i < bytes; i++)
    if (p[i] != 0xff) return 0;
  return 1;
}

static prx_chan *make(const prx_chan_config *cfg) {
  prx_chan *c = NULL;
  prx_status st = prx_chan_create(cfg, &c);
  CHECK(st == PRX_OK, "create K=%u D=%u backend %s: %s: %s", cfg->channels, cfg->decimation,
        prx_backend_name(cfg->backend), prx_strerror(st), prx_last_error());
  return c;
}

/* Random raw input of n samples in format f, and its cf32 conversion. */
static void *random_input(test_rng *r, prx_format f, size_t n, prx_cf32 *x) {
  size_t sz = prx_format_size(f);
  unsigned char *raw = malloc(n * sz);
  if (f == PRX_CF32) {
    test_fill_cf32(r, (prx_cf32 *)raw, n, 0.5);
  } else {
    for (size_t i = 0; i < n * sz; i++) raw[i] = (unsigned char)test_rng_u64(r);
  }
  CHECK_OK(prx_convert_to_cf32(f, raw, n, x));
  return raw;
}

/* Runs n samples through c in calls whose sizes follow mode (0: one call; 1: random sizes up
 * to 3D; 2: mostly 1..4 samples with a few large calls), then flushes. Outputs of channel s go
 * to out + s * stride * osz. Returns the outputs per channel. */
static size_t stream(prx_chan *c, const void *in, size_t isz, size_t n, int mode, test_rng *r,
                     void *out, size_t osz, size_t stride) {
  size_t D = prx_chan_decimation(c);
  size_t pos = 0, opos = 0;
  while (pos < n) {
    size_t nb = n - pos;
    if (mode == 1) nb = 1 + test_rng_u64(r) % (3 * D);
    if (mode == 2)
      nb = test_rng_u64(r) % 8 ? 1 + test_rng_u64(r) % 4 : 1 + test_rng_u64(r) % (5 * D);
    if (nb > n - pos) nb = n - pos;
    size_t expect = prx_chan_output_count(c, nb), no = 0;
    prx_status st = prx_chan_execute(c, (const char *)in + pos * isz, nb, (char *)out + opos * osz,
                                     stride, &no);
    CHECK(st == PRX_OK, "execute %zu samples at %zu: %s", nb, pos, prx_last_error());
    CHECK(no == expect, "execute gave %zu outputs, output_count said %zu", no, expect);
    if (st) return opos;
    pos += nb;
    opos += no;
  }
  size_t expect = prx_chan_flush_count(c), no = 0;
  CHECK_OK(prx_chan_flush(c, (char *)out + opos * osz, stride, &no));
  CHECK(no == expect, "flush gave %zu outputs, flush_count said %zu", no, expect);
  return opos + no;
}

/* outputs (n_sel rows of stride, n used) -> compact cf32 */
static prx_cf32 *compact(const void *out, size_t n_sel, size_t stride, size_t n, int f16) {
  prx_cf32 *y = malloc((n_sel * n + 1) * sizeof *y);
  for (size_t s = 0; s < n_sel; s++)
    for (size_t i = 0; i < n; i++) {
      if (f16) {
        const uint16_t *h = (const uint16_t *)out + 2 * (s * stride + i);
        y[s * n + i].re = half_to_float(h[0]);
        y[s * n + i].im = half_to_float(h[1]);
      } else {
        y[s * n + i] = ((const prx_cf32 *)out)[s * stride + i];
      }
    }
  return y;
}

/* Compares the CUDA output y (n_sel x n compact) for input x (cf32 view) with the float64
 * reference on up to 24 of the selected channels, and with the CPU backend (same config) on
 * all of them when the CPU backend exists. */
static void compare(const prx_chan_config *cfg, prx_chan *g, const prx_cf32 *x, const void *raw,
                    size_t N, const prx_cf32 *y, size_t n, double tol, const char *what) {
  size_t M = 0;
  const float *h = prx_chan_taps(g, &M);
  unsigned K = prx_chan_channels(g), D = prx_chan_decimation(g);
  size_t n_sel = prx_chan_n_outputs(g);
  /* reference on a spread of the selected outputs */
  size_t nr = n_sel < 24 ? n_sel : 24;
  unsigned *sel = malloc(nr * sizeof *sel);
  prx_cf32 *yr = malloc((nr * n + 1) * sizeof *yr);
  for (size_t i = 0; i < nr; i++) {
    size_t s = i * n_sel / nr;
    prx_chan_channel info;
    CHECK_OK(prx_chan_channel_info(g, s, &info));
    sel[i] = info.index;
    memcpy(yr + i * n, y + s * n, n * sizeof *yr);
  }
  test_cf64 *ref = malloc((nr * n + 1) * sizeof *ref);
  chan_ref(x, N, h, M, K, D, sel, nr, 0, n, ref);
  double e = test_rel_l2_vs_cf64(yr, ref, nr * n);
  CHECK(e <= tol, "%s K=%u D=%u M=%zu: rel L2 vs float64 reference %.3g > %.3g", what, K, D, M, e,
        tol);
  free(sel);
  free(yr);
  free(ref);
  /* CPU backend, all selected channels */
  if (have_cpu) {
    prx_chan_config cc = *cfg;
    cc.backend = PRX_BACKEND_CPU;
    cc.out_format = PRX_CF32;
    prx_chan *cpu = NULL;
    prx_status st = prx_chan_create(&cc, &cpu);
    if (have_cpu < 0) {
      have_cpu = st == PRX_OK;
      if (!have_cpu)
        printf("note: CPU backend unavailable (%s); comparing with the reference only\n",
               prx_last_error());
    }
    if (cpu) {
      size_t stride = prx_chan_output_count(cpu, N) + prx_chan_decimation(cpu) + M;
      prx_cf32 *oc = malloc(n_sel * stride * sizeof *oc);
      size_t no = 0, nf = 0;
      CHECK_OK(prx_chan_execute(cpu, raw, N, oc, stride, &no));
      CHECK_OK(prx_chan_flush(cpu, oc + no, stride, &nf));
      CHECK(no + nf == n, "CPU gave %zu outputs, CUDA %zu", no + nf, n);
      if (no + nf == n) {
        prx_cf32 *yc = compact(oc, n_sel, stride, n, 0);
        double ec = test_rel_l2_cf32(y, yc, n_sel * n);
        CHECK(ec <= tol, "%s K=%u D=%u M=%zu: rel L2 vs CPU backend %.3g > %.3g", what, K, D, M, ec,
              tol);
        free(yc);
      }
      free(oc);
      prx_chan_destroy(cpu);
    }
  }
}

/* One configuration end to end: random input, stream in chunks (mode), flush, poison checks,
 * comparison. Returns the compact output (caller frees) and its count. */
static prx_cf32 *run_case(prx_chan_config cfg, size_t N, int mode, uint64_t seed, double tol,
                          const char *what, size_t *n_out) {
  test_rng r;
  test_rng_seed(&r, seed);
  prx_chan *g = make(&cfg);
  if (!g) return NULL;
  if (design != PRX_CUDA_SELECTED) {
    prx_status st = prx_chan_cuda_retune(g, design);
    CHECK(st == PRX_OK, "retune to design %d: %s", (int)design, prx_last_error());
    if (st) {
      prx_chan_destroy(g);
      return NULL;
    }
  }
  CHECK(prx_chan_backend(g) == PRX_BACKEND_CUDA, "backend is %s",
        prx_backend_name(prx_chan_backend(g)));
  prx_cf32 *x = malloc(N * sizeof *x);
  void *raw = random_input(&r, cfg.in_format, N, x);
  size_t M = 0;
  prx_chan_taps(g, &M);
  size_t n_sel = prx_chan_n_outputs(g), D = prx_chan_decimation(g);
  size_t total = (N + M - 1) / D + 2, stride = total + 3;
  const size_t isz = prx_format_size(cfg.in_format), osz = prx_format_size(cfg.out_format);
  unsigned char *out = malloc(n_sel * stride * osz);
  poison(out, n_sel * stride * osz);
  size_t n = stream(g, raw, isz, N, mode, &r, out, osz, stride);
  CHECK(n == (N + M - 1 + D - 1) / D, "%s: %zu outputs per channel, expected ceil((N+M-1)/D) = %zu",
        what, n, (N + M - 1 + D - 1) / D);
  for (size_t s = 0; s < n_sel; s++)
    CHECK(still_poisoned(out + (s * stride + n) * osz, (stride - n) * osz),
          "%s: channel row %zu written past its %zu outputs", what, s, n);
  prx_cf32 *y = compact(out, n_sel, stride, n, cfg.out_format == PRX_CF16);
  compare(&cfg, g, x, raw, N, y, n, tol, what);
  prx_chan_destroy(g);
  free(out);
  free(raw);
  free(x);
  *n_out = n;
  return y;
}

static prx_chan_config base_cfg(unsigned K, unsigned D, unsigned P) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = P;
  cfg.backend = PRX_BACKEND_CUDA;
  return cfg;
}

/* the configurations of the CPU tests, and the fused kernel's sizes and tiles */
static void test_configs(void) {
  static const unsigned Ks[] = {2, 6, 128, 1000, 1024, 64, 256, 512, 2048, 4096};
  static const unsigned Ps[] = {4, 16, 24};
  size_t nk = small_mode ? 5 : sizeof Ks / sizeof Ks[0];
  for (size_t i = 0; i < nk; i++)
    for (int half = 1; half >= 0; half--)
      for (size_t pi = 0; pi < 3; pi++) {
        unsigned K = Ks[i], D = half ? K / 2 : K, P = Ps[pi];
        if (small_mode && pi != 1) continue;
        if (K >= 2048 && P != 16) continue;
        prx_chan_config cfg = base_cfg(K, D, P);
        /* an odd or even number of outputs in the call: the fused kernel stores output pairs
         * as one 16-byte store (8 for cf16) when the device rows are even, element by
         * element otherwise; both at every K and D */
        size_t N = (size_t)D * ((small_mode ? 24 : 40) + (half ^ (pi == 2))) + 13, n;
        prx_cf32 *y = run_case(cfg, N, 0, 100 + K + P + D, 1e-5, "config", &n);
        free(y);
      }
  /* a caller's prototype of odd length (not a multiple of K), not normalised */
  static const unsigned Kc[] = {6, 128, 1024, 1000};
  for (size_t i = 0; i < 4; i++)
    for (int half = 1; half >= 0; half--) {
      unsigned K = Kc[i], D = half ? K / 2 : K;
      test_rng r;
      test_rng_seed(&r, 7 + K);
      size_t M = (size_t)K * 7 + 3;
      float *h = malloc(M * sizeof *h);
      for (size_t m = 0; m < M; m++) h[m] = (float)(test_rng_gauss(&r) * 0.05);
      prx_chan_config cfg = base_cfg(K, D, 16);
      cfg.taps = h;
      cfg.n_taps = M;
      size_t n;
      free(run_case(cfg, (size_t)D * 20 + 5, 1, 300 + K, 1e-5, "caller taps", &n));
      free(h);
    }
}

static void test_formats(void) {
  static const prx_format fs[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};
  /* 1024: window_base_ptr, 4096: aligned_window in every input format's design */
  static const unsigned Ks[] = {1024, 6, 128, 4096};
  for (size_t k = 0; k < 4; k++)
    for (size_t i = 0; i < 4; i++) {
      prx_chan_config cfg = base_cfg(Ks[k], 0, 16);
      cfg.in_format = fs[i];
      cfg.block_samples = (size_t)Ks[k] * 4; /* several blocks of even output rows */
      char what[64];
      snprintf(what, sizeof what, "format %s", prx_format_name(fs[i]));
      size_t n;
      free(run_case(cfg, (size_t)Ks[k] * 12 + 7, 1, 500 + i + k, 1e-5, what, &n));
    }
}

static void test_subsets(void) {
  static const unsigned sel1[] = {5, 1023, 0, 5, 512, 7, 1, 1022};
  prx_chan_config cfg = base_cfg(1024, 0, 16);
  cfg.select = sel1;
  cfg.n_select = 8;
  size_t n;
  free(run_case(cfg, 1024 * 20 + 3, 1, 600, 1e-5, "subset fused", &n));
  unsigned sel64[64];
  for (unsigned i = 0; i < 64; i++) sel64[i] = 300 + i;
  cfg.select = sel64;
  cfg.n_select = 64;
  cfg.decimation = 1024;
  free(run_case(cfg, 1024 * 20 + 3, 0, 601, 1e-5, "subset 64", &n));
  static const unsigned sel6[] = {5, 0, 3, 3};
  prx_chan_config c6 = base_cfg(6, 0, 8);
  c6.select = sel6;
  c6.n_select = 4;
  free(run_case(c6, 200, 2, 602, 1e-5, "subset general", &n));
}

/* chunked streams equal the one-shot stream of the same object design */
static void test_chunking(void) {
  struct {
    unsigned K, D, P;
    size_t block;
  } cs[] = {{1024, 512, 16, 0},           {128, 128, 16, 0}, {1000, 500, 4, 0},   {6, 3, 16, 0},
            {1024, 512, 16, 3 * 512 + 5}, {6, 6, 8, 17},     {256, 128, 16, 1000}};
  size_t ncs = small_mode ? 4 : sizeof cs / sizeof cs[0];
  for (size_t i = 0; i < ncs; i++) {
    for (int mode = 1; mode <= 2; mode++) {
      if (mode == 2 && cs[i].K >= 1000 && small_mode) continue;
      prx_chan_config cfg = base_cfg(cs[i].K, cs[i].D, cs[i].P);
      cfg.block_samples = cs[i].block;
      size_t N = (size_t)cs[i].D * (mode == 2 ? 6 : 24) + 11, n1, n2;
      prx_cf32 *a = run_case(cfg, N, 0, 700 + i, 1e-5, "one call", &n1);
      prx_cf32 *b =
          run_case(cfg, N, mode, 700 + i, 1e-5, mode == 1 ? "chunks" : "tiny chunks", &n2);
      size_t nsel = cs[i].K;
      if (a && b && n1 == n2) {
        double e = test_rel_l2_cf32(b, a, nsel * n1);
        CHECK(e <= 1e-6, "K=%u D=%u block %zu mode %d: chunked differs from one call by %.3g",
              cs[i].K, cs[i].D, cs[i].block, mode, e);
      }
      free(a);
      free(b);
    }
  }
}

/* the fused kernel's design for outputs the TMA cannot take, run on outputs it could take too
 * (every channel in order, cf32, even rows), where the default design copies tiles out */
static void test_thread_stores(void) {
  static const unsigned Ks[] = {1024, 128, 4096};
  size_t nk = small_mode ? 1 : 3;
  design = PRX_CUDA_THREAD_STORES;
  for (size_t i = 0; i < nk; i++)
    for (int half = 1; half >= 0; half--) {
      if (small_mode && !half) continue;
      unsigned K = Ks[i], D = half ? K / 2 : K;
      prx_chan_config cfg = base_cfg(K, D, 16);
      size_t n;
      free(run_case(cfg, (size_t)D * 20 + 7, 1, 1116 + K + D, 1e-5, "thread stores", &n));
    }
  design = PRX_CUDA_SELECTED;
}

static const char *label(char *buf, size_t n, prx_cuda_design d, const char *what) {
  snprintf(buf, n, "%s: %s", d == PRX_CUDA_THREAD_STORES ? "thread stores" : "selected", what);
  return buf;
}

/* a design at K = 1024, D = K/2, cf32 in, through the cases the default passes there: a
 * channel subset, random and tiny chunkings with small blocks, a caller's prototype of odd
 * length, cf16 output, and D = K */
static void test_design(prx_cuda_design v) {
  design = v;
  char what[64];
  size_t n;
  static const unsigned sel1[] = {5, 1023, 0, 5, 512, 7, 1, 1022};
  prx_chan_config cfg = base_cfg(1024, 512, 16);
  cfg.select = sel1;
  cfg.n_select = 8;
  free(run_case(cfg, 1024 * 20 + 3, 1, 900, 1e-5, label(what, sizeof what, v, "subset"), &n));
  for (int mode = 0; mode <= 2; mode++) {
    if (mode == 2 && small_mode) continue;
    cfg = base_cfg(1024, 512, 16);
    cfg.block_samples = mode ? 3 * 512 + 5 : 0;
    free(run_case(cfg, (size_t)512 * (mode == 2 ? 6 : 24) + 11, mode, 910 + mode, 1e-5,
                  label(what, sizeof what, v, "chunks"), &n));
  }
  test_rng r;
  test_rng_seed(&r, 920);
  const size_t M = (size_t)1024 * 7 + 3;
  float *h = malloc(M * sizeof *h);
  for (size_t m = 0; m < M; m++) h[m] = (float)(test_rng_gauss(&r) * 0.05);
  cfg = base_cfg(1024, 512, 16);
  cfg.taps = h;
  cfg.n_taps = M;
  free(run_case(cfg, (size_t)512 * 20 + 5, 1, 921, 1e-5, label(what, sizeof what, v, "caller taps"),
                &n));
  free(h);
  cfg = base_cfg(1024, 512, 16);
  cfg.out_format = PRX_CF16;
  free(run_case(cfg, (size_t)1024 * 10 + 1, 1, 922, 1e-3, label(what, sizeof what, v, "cf16"), &n));
  cfg = base_cfg(1024, 1024, 16);
  free(run_case(cfg, (size_t)1024 * 20 + 9, 1, 923, 1e-5, label(what, sizeof what, v, "D=K"), &n));
  design = PRX_CUDA_SELECTED;
}

static void test_cf16(void) {
  static const unsigned Ks[] = {1024, 6};
  for (int i = 0; i < 2; i++) {
    prx_chan_config cfg = base_cfg(Ks[i], 0, 16);
    cfg.out_format = PRX_CF16;
    size_t n;
    /* half precision: 11-bit significand, about 3e-4 relative rms */
    free(run_case(cfg, (size_t)Ks[i] * 10 + 1, 1, 800 + i, 1e-3, "cf16", &n));
  }
}

/* pinned caller buffers (direct DMA) give the same output as pageable ones */
static void test_pinned(void) {
  prx_chan_config cfg = base_cfg(1024, 0, 16);
  cfg.block_samples = 4096 + 100; /* several blocks in flight */
  cfg.in_format = PRX_CI16;
  size_t N = 1024 * 40 + 9;
  test_rng r;
  test_rng_seed(&r, 900);
  prx_cf32 *x = malloc(N * sizeof *x);
  void *raw = random_input(&r, PRX_CI16, N, x);
  void *pin_in = NULL, *pin_out = NULL;
  prx_chan *a = make(&cfg), *b = make(&cfg);
  size_t stride = N / 512 + 40, n_sel = 1024;
  prx_cf32 *out_a = malloc(n_sel * stride * sizeof *out_a);
  if (!a || !b || cudaHostAlloc(&pin_in, N * 4, 0) != cudaSuccess ||
      cudaHostAlloc(&pin_out, n_sel * stride * 8, 0) != cudaSuccess) {
    CHECK(0, "pinned test setup failed");
  } else {
    memcpy(pin_in, raw, N * 4);
    poison(out_a, n_sel * stride * 8);
    poison(pin_out, n_sel * stride * 8);
    size_t na = stream(a, raw, 4, N, 1, &r, out_a, 8, stride);
    size_t nb = stream(b, pin_in, 4, N, 0, &r, pin_out, 8, stride);
    CHECK(na == nb, "pinned %zu outputs, pageable %zu", nb, na);
    prx_cf32 *ya = compact(out_a, n_sel, stride, na, 0),
             *yb = compact(pin_out, n_sel, stride, nb, 0);
    CHECK(test_rel_l2_cf32(yb, ya, n_sel * na) <= 1e-6, "pinned and pageable outputs differ");
    compare(&cfg, b, x, raw, N, yb, nb, 1e-5, "pinned");
    free(ya);
    free(yb);
  }
  cudaFreeHost(pin_in);
  cudaFreeHost(pin_out);
  prx_chan_destroy(a);
  prx_chan_destroy(b);
  free(out_a);
  free(raw);
  free(x);
}

/* execute_device on device buffers (in pieces, on a caller stream) equals execute */
static void test_device_api(void) {
  static const unsigned Ks[] = {1024, 1000};
  for (int t = 0; t < 2; t++) {
    prx_chan_config cfg = base_cfg(Ks[t], 0, 16);
    cfg.in_format = PRX_CU8;
    size_t N = (size_t)Ks[t] * 30 + 21, D = Ks[t] / 2;
    test_rng r;
    test_rng_seed(&r, 1000 + t);
    prx_cf32 *x = malloc(N * sizeof *x);
    void *raw = random_input(&r, PRX_CU8, N, x);
    prx_chan *h = make(&cfg), *d = make(&cfg);
    if (!h || !d) return;
    size_t n_sel = Ks[t], stride = N / D + 40;
    prx_cf32 *oh = malloc(n_sel * stride * 8), *od = malloc(n_sel * stride * 8);
    poison(oh, n_sel * stride * 8);
    poison(od, n_sel * stride * 8);
    size_t nh = stream(h, raw, 2, N, 0, &r, oh, 8, stride);
    void *d_in = NULL, *d_out = NULL;
    cudaStream_t s = NULL;
    CHECK(cudaMalloc(&d_in, N * 2) == cudaSuccess &&
              cudaMalloc(&d_out, n_sel * stride * 8) == cudaSuccess &&
              cudaStreamCreate(&s) == cudaSuccess,
          "device buffers");
    cudaMemcpy(d_in, raw, N * 2, cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0xff, n_sel * stride * 8);
    size_t pos = 0, opos = 0;
    while (pos < N) {
      size_t nb = 1 + test_rng_u64(&r) % (4 * D), no = 0;
      if (nb > N - pos) nb = N - pos;
      CHECK_OK(prx_chan_execute_device(d, (const char *)d_in + pos * 2, nb,
                                       (prx_cf32 *)d_out + opos, stride, &no, s));
      pos += nb;
      opos += no;
    }
    /* the tail through the host API on the same object: orders after the device work */
    size_t nf = 0;
    prx_cf32 *tail = malloc(n_sel * stride * 8);
    poison(tail, n_sel * stride * 8);
    CHECK_OK(prx_chan_flush(d, tail, stride, &nf));
    CHECK(cudaStreamSynchronize(s) == cudaSuccess, "stream");
    CHECK(cudaMemcpy(od, d_out, n_sel * stride * 8, cudaMemcpyDeviceToHost) == cudaSuccess,
          "copy back");
    for (size_t k = 0; k < n_sel; k++) memcpy(od + k * stride + opos, tail + k * stride, nf * 8);
    CHECK(opos + nf == nh, "device API gave %zu + %zu outputs, host API %zu", opos, nf, nh);
    prx_cf32 *yh = compact(oh, n_sel, stride, nh, 0), *yd = compact(od, n_sel, stride, nh, 0);
    double e = test_rel_l2_cf32(yd, yh, n_sel * nh);
    CHECK(e <= 1e-6, "K=%u: device-resident output differs from host API by %.3g", Ks[t], e);
    /* misaligned device pointers are refused */
    size_t no = 0;
    CHECK(prx_chan_execute_device(d, (const char *)d_in + 1, 4, d_out, stride, &no, s) ==
              PRX_ERR_INVALID,
          "misaligned cu8 input accepted");
    prx_chan_reset(d);
    CHECK(prx_chan_execute_device(d, d_in, D, (char *)d_out + 4, stride, &no, s) == PRX_ERR_INVALID,
          "misaligned cf32 output accepted");
    free(yh);
    free(yd);
    free(tail);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaStreamDestroy(s);
    prx_chan_destroy(h);
    prx_chan_destroy(d);
    free(oh);
    free(od);
    free(raw);
    free(x);
  }
}

/* One post-pass case: cfg's object made plain (cf32, no sums) and with out_format f and power
 * sums over the window [from, to); both run on the same input in the same calls (mode, seed),
 * their outputs pageable or pinned. The post object's rows must equal the CPU's packing
 * (src/dsp/pack.c) of the plain rows with non-finite outputs zeroed, byte for byte; its sums
 * the float64 sums of the zeroed plain rows over the window (relative 1e-12: the order of the
 * additions differs); its counts the non-finite outputs and saturated ci16 parts there. A
 * second run of the post object gives the same sums bit for bit. */
static void post_case(prx_chan_config cfg, prx_format f, const void *raw, size_t N, int mode,
                      uint64_t seed, uint64_t from, uint64_t to, int pinned, const char *what) {
  size_t isz = prx_format_size(cfg.in_format), osz = prx_format_size(f);
  prx_chan *a = make(&cfg);
  cfg.out_format = f;
  cfg.power_sums = 1;
  prx_chan *b = make(&cfg), *b2 = make(&cfg);
  if (!a || !b || !b2) goto done;
  size_t n_sel = prx_chan_n_outputs(a), D = prx_chan_decimation(a), M = 0;
  prx_chan_taps(a, &M);
  size_t stride = (N + M) / D + 8;
  unsigned char *oa = NULL, *ob = NULL;
  if (pinned) {
    CHECK(cudaHostAlloc((void **)&oa, n_sel * stride * 8, 0) == cudaSuccess &&
              cudaHostAlloc((void **)&ob, n_sel * stride * osz, 0) == cudaSuccess,
          "%s: pinned buffers", what);
  } else {
    oa = malloc(n_sel * stride * 8);
    ob = malloc(n_sel * stride * osz);
  }
  double *sums = calloc(n_sel, sizeof *sums), *sums2 = calloc(n_sel, sizeof *sums2);
  if (!oa || !ob || !sums || !sums2) goto out;
  CHECK_OK(prx_chan_power_window(b, from, to));
  CHECK_OK(prx_chan_power_window(b2, from, to));
  test_rng r;
  test_rng_seed(&r, seed);
  size_t na = stream(a, raw, isz, N, mode, &r, oa, 8, stride);
  test_rng_seed(&r, seed);
  poison(ob, n_sel * stride * osz);
  size_t nb = stream(b, raw, isz, N, mode, &r, ob, osz, stride);
  uint64_t nf = 0, sat = 0, nf2 = 0, sat2 = 0;
  CHECK_OK(prx_chan_power_take(b, sums, &nf, &sat));
  test_rng_seed(&r, seed);
  stream(b2, raw, isz, N, mode, &r, ob, osz, stride);
  CHECK_OK(prx_chan_power_take(b2, sums2, &nf2, &sat2));
  CHECK(na == nb, "%s: %zu outputs, the plain object %zu", what, nb, na);
  uint64_t want_nf = 0, want_sat = 0;
  size_t bad_rows = 0, bad_sums = 0;
  unsigned char *pack = malloc(stride * osz + 8);
  for (size_t s = 0; s < n_sel && pack; s++) {
    prx_cf32 *y = (prx_cf32 *)(oa + s * stride * 8);
    size_t lo = from < na ? (size_t)from : na, hi = to < na ? (size_t)to : na;
    if (hi < lo) hi = lo;
    for (size_t j = lo; j < hi; j++) want_nf += !isfinite(y[j].re) || !isfinite(y[j].im);
    prx_cf32_zero_nonfinite(y, na);
    if (f == PRX_CF16) prx_pack_cf16(y, na, (uint16_t *)pack);
    if (f == PRX_CI16) {
      prx_pack_ci16(y, na, PRX_CI16_SCALE, (int16_t *)pack);
      want_sat += prx_pack_ci16(y + lo, hi - lo, PRX_CI16_SCALE, (int16_t *)pack + 2 * lo);
    }
    const void *want = f == PRX_CF32 ? (const void *)y : pack;
    bad_rows += memcmp(ob + s * stride * osz, want, na * osz) != 0;
    double e = 0;
    for (size_t j = lo; j < hi; j++) e += (double)y[j].re * y[j].re + (double)y[j].im * y[j].im;
    bad_sums += !(fabs(sums[s] - e) <= 1e-12 * e) || memcmp(&sums[s], &sums2[s], sizeof e) != 0;
  }
  CHECK(bad_rows == 0, "%s: %zu of %zu rows differ from the CPU's packing", what, bad_rows, n_sel);
  CHECK(bad_sums == 0, "%s: %zu of %zu power sums off or not repeated", what, bad_sums, n_sel);
  CHECK(nf == want_nf && nf2 == nf, "%s: %llu non-finite outputs counted, %llu present", what,
        (unsigned long long)nf, (unsigned long long)want_nf);
  CHECK(sat == want_sat && sat2 == sat, "%s: %llu saturated parts counted, %llu present", what,
        (unsigned long long)sat, (unsigned long long)want_sat);
  free(pack);
out:
  if (pinned) {
    cudaFreeHost(oa);
    cudaFreeHost(ob);
  } else {
    free(oa);
    free(ob);
  }
  free(sums);
  free(sums2);
done:
  prx_chan_destroy(a);
  prx_chan_destroy(b);
  prx_chan_destroy(b2);
}

/* Floats for the rounding cases, at even positions of a cf32 input (the pass-through
 * channelizer below keeps x[2j]): around every binary16 value (itself, its neighbours in float,
 * the midpoints to the next binary16 and one float ulp either side), the overflow threshold,
 * the subnormals; the ci16 ties k / 65536 and the saturation bounds; a few non-finite. */
static size_t rounding_values(float *v, size_t cap) {
  size_t n = 0;
#define PUT(x)                                                                                     \
  do {                                                                                             \
    if (n < cap) v[n++] = (x);                                                                     \
  } while (0)
  for (uint32_t h = 0; h < 0x7c00u; h += small_mode ? 61 : 1) {
    float a = half_to_float((uint16_t)h), b = half_to_float((uint16_t)(h + 1));
    float mid = h + 1 < 0x7c00u ? (float)(((double)a + b) / 2) : 65520.0f;
    PUT(a);
    PUT(-nextafterf(a, INFINITY));
    PUT(mid);
    PUT(-mid);
    PUT(nextafterf(mid, 0));
    PUT(-nextafterf(mid, INFINITY));
  }
  for (int k = -(1 << 17) - 40; k <= (1 << 17) + 40; k += small_mode ? 37 : 1)
    PUT((float)k / 65536.0f);
  PUT(32767.5f / 32768);
  PUT(nextafterf(32767.5f / 32768, 0));
  PUT(-1.0f);
  PUT(nextafterf(-1.0f, -2.0f));
  PUT(INFINITY);
  PUT(NAN);
  PUT(-INFINITY);
  PUT(3e38f);
#undef PUT
  return n;
}

static void test_post(void) {
  /* a channelizer that passes its input through: K = D = 2, prototype {1, 0}, so that both
   * channels are x[2j] exactly (the general path; a non-finite input makes a non-finite output),
   * in one call (calls of a few samples would take minutes here) */
  static const float pass[2] = {1.0f, 0.0f};
  size_t cap = (size_t)0x7c00 * 6 + (1 << 18) + 200;
  float *vals = malloc(cap * sizeof *vals);
  size_t nv = rounding_values(vals, cap);
  size_t N = 2 * ((nv + 1) / 2) * 2;
  prx_cf32 *x = calloc(N, sizeof *x);
  for (size_t i = 0; i < nv; i++) { /* vals[2t], vals[2t + 1]: re and im of sample 2t */
    float *f = (float *)&x[2 * (i / 2)];
    f[i % 2] = vals[i];
  }
  prx_chan_config cfg = base_cfg(2, 2, 1);
  cfg.taps = pass;
  cfg.n_taps = 2;
  for (int f = 0; f < 3; f++) {
    prx_format fmt = f == 0 ? PRX_CF16 : f == 1 ? PRX_CI16 : PRX_CF32;
    char what[64];
    snprintf(what, sizeof what, "post pass-through %s", prx_format_name(fmt));
    post_case(cfg, fmt, x, N, 0, 1000 + f, 3, N / 2 - 5, 0, what);
  }
  free(x);
  free(vals);
  /* the fused kernel (K = 1024 and 64, ci16 and cf32 input), a subset, and the general path (K =
   * 1000), in random calls and in one, pageable and pinned; cf32 input with a few infinite samples,
   * whose outputs are non-finite */
  test_rng r;
  test_rng_seed(&r, 1100);
  static const struct {
    unsigned K, P;
    prx_format in;
    int subset, mode, pinned;
  } cases[] = {
      {1024, 16, PRX_CI16, 0, 0, 1}, {1024, 16, PRX_CI16, 0, 1, 0}, {64, 4, PRX_CF32, 0, 1, 0},
      {64, 4, PRX_CF32, 1, 0, 1},    {1000, 8, PRX_CF32, 0, 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (small_mode && i > 1) break;
    prx_chan_config c = base_cfg(cases[i].K, 0, cases[i].P);
    c.in_format = cases[i].in;
    unsigned sel[3] = {5, 63, 0};
    if (cases[i].subset) {
      c.select = sel;
      c.n_select = 3;
    }
    size_t n = (size_t)cases[i].K * 24 + 7;
    prx_cf32 *xc = malloc(n * sizeof *xc);
    void *raw = random_input(&r, c.in_format, n, xc);
    if (c.in_format == PRX_CF32) { /* outputs about 1 (ci16 saturates some), a few infinite */
      prx_cf32 *y = raw;
      for (size_t j = 0; j < n; j++) {
        y[j].re *= 24.0f;
        y[j].im *= 24.0f;
      }
      /* at a quarter, a half and three quarters of the input: inside it at every K (n is
       * 24 K + 7 samples, 1543 at K = 64) */
      for (size_t j = 1; j <= 3; j++) y[j * (n / 4)].re = INFINITY;
    }
    for (int f = 0; f < 3; f++) {
      prx_format fmt = f == 0 ? PRX_CI16 : f == 1 ? PRX_CF16 : PRX_CF32;
      char what[96];
      snprintf(what, sizeof what, "post K=%u %s in, %s out%s%s", cases[i].K,
               prx_format_name(c.in_format), prx_format_name(fmt),
               cases[i].subset ? ", subset" : "", cases[i].pinned ? ", pinned" : "");
      post_case(c, fmt, raw, n, cases[i].mode, 1200 + i, 16, n / (c.channels / 2) - 3,
                cases[i].pinned, what);
    }
    free(raw);
    free(xc);
  }
}

static void test_invalid(void) {
  prx_chan_config cfg = base_cfg(64, 0, 4);
  prx_chan *c = NULL;
  /* AUTO picks the GPU when there is one */
  cfg.backend = PRX_BACKEND_AUTO;
  CHECK_OK(prx_chan_create(&cfg, &c));
  CHECK(c && prx_chan_backend(c) == PRX_BACKEND_CUDA, "AUTO did not pick CUDA");
  prx_cf32 in[64] = {{0, 0}}, out[64 * 2];
  size_t no = 0;
  if (c) {
    CHECK(prx_chan_execute(c, in, 64, out, 1, &no) == PRX_ERR_CAPACITY, "small stride accepted");
    CHECK(prx_chan_execute(c, NULL, 64, out, 2, &no) == PRX_ERR_INVALID, "NULL input accepted");
    CHECK(prx_chan_execute_device(c, NULL, 64, out, 2, &no, NULL) == PRX_ERR_INVALID,
          "NULL device input accepted");
  }
  prx_chan_destroy(c);
  c = NULL;
  cfg.device = 9999;
  cfg.backend = PRX_BACKEND_CUDA;
  CHECK(prx_chan_create(&cfg, &c) != PRX_OK && !c, "device 9999 accepted");
  cfg.device = 0;
  /* the CPU backend has no device-resident path, and no cf16 */
  cfg.backend = PRX_BACKEND_CPU;
  if (prx_chan_create(&cfg, &c) == PRX_OK) {
    CHECK(prx_chan_execute_device(c, in, 64, out, 2, &no, NULL) == PRX_ERR_UNSUPPORTED,
          "execute_device on the CPU backend did not answer UNSUPPORTED");
    prx_chan_destroy(c);
    c = NULL;
  } else {
    printf("note: CPU backend unavailable: %s\n", prx_last_error());
  }
  cfg.out_format = PRX_CF16;
  CHECK(prx_chan_create(&cfg, &c) == PRX_ERR_UNSUPPORTED && !c, "cf16 on the CPU accepted");
  cfg.out_format = PRX_CI16;
  CHECK(prx_chan_create(&cfg, &c) == PRX_ERR_UNSUPPORTED && !c, "ci16 on the CPU accepted");
  cfg.out_format = PRX_CF32;
  cfg.power_sums = 1;
  CHECK(prx_chan_create(&cfg, &c) == PRX_ERR_UNSUPPORTED && !c, "power sums on the CPU accepted");
  /* a CUDA object with the post pass has no device-resident path */
  cfg.backend = PRX_BACKEND_CUDA;
  if (prx_chan_create(&cfg, &c) == PRX_OK) {
    CHECK(prx_chan_execute_device(c, in, 64, out, 2, &no, NULL) == PRX_ERR_UNSUPPORTED,
          "execute_device with power sums accepted");
    prx_chan_destroy(c);
  } else {
    CHECK(0, "CUDA object with power sums: %s", prx_last_error());
  }
}

int main(void) {
  if (!prx_cuda_available()) {
    printf("test_chan_cuda: skipped: no usable CUDA device\n");
    return TEST_SKIP;
  }
  const char *sm = getenv("PRX_TEST_SMALL");
  small_mode = sm && *sm && *sm != '0';
  test_invalid();
  test_configs();
  test_formats();
  test_subsets();
  test_chunking();
  test_thread_stores();
  test_design(PRX_CUDA_THREAD_STORES);
  test_cf16();
  test_pinned();
  test_device_api();
  test_post();
  return test_finish("test_chan_cuda");
}

#else
int main(void) {
  printf("test_chan_cuda: skipped: this build has no CUDA backend\n");
  return TEST_SKIP;
}
#endif
