/* Fuzz target: the channelizer's configuration check (prx_chan_create, CPU backend) on a
 * configuration drawn from the bytes, absurd values included, then one small execute, a flush
 * and a second execute after the reset.
 *
 * The documentation (include/polyrx/chan.h) is the oracle, written out here:
 * - a configuration that breaks a documented rule (K = 0, a decimation other than K/2 or K, odd
 *   K with D = K/2, no taps, non-finite taps, attenuation <= 0, a cut-off outside (0, K/2)
 *   channel spacings, an empty selection or a selected channel >= K, an input format other than
 *   cf32/ci16/ci8/cu8, an output other than cf32/cf16, cf16 on the CPU, a non-positive or
 *   non-finite rate, a non-finite centre, negative threads, an unknown backend) or asks for
 *   something no machine can do (K > 2^30, K x P > 2^32 taps, 10^5 threads, 2^40-sample
 *   blocks) must fail, with an error status and a message;
 * - a configuration within every documented rule and within the code's stated limits (P <= 4096,
 *   attenuation <= 300 dB, threads <= 1024, block <= 2^31, the resource caps: M/D + (K/D) log2 K
 *   <= 16384 multiply-adds per input sample, M times that <= 2^34) must succeed, unless its cut-off
 * is below 10^-3 channel spacings (a prototype with no DC gain may then be refused);
 * - anything else may do either, but a failure must still be a proper error.
 * Configurations that are valid but large (K > 4096, M > 65536 taps, threads > 4, blocks >
 * 65536) are not created: each would take the fuzzer's time without testing more.
 *
 * After a success: the getters agree with the configuration; an execute into a stride one short
 * is refused with PRX_ERR_CAPACITY and consumes nothing; an execute of n_in samples writes
 * ceil(n_in / D) outputs per selected channel, each bounded by sum|h| max|x| (the definition's
 * triangle inequality); the flush writes ceil((n_in + M - 1) / D) - ceil(n_in / D) more; two
 * outputs (an end of either call, and one anywhere) match the float64 reference of the definition
 * (tests/support/chan_ref.c); after the flush's reset the same input gives bit-identical
 * outputs. */
#include "fuzz.h"

#include "chan_ref.h"

#include <limits.h>

static const prx_format in_formats[4] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};

static int input_format_ok(prx_format f) {
  return f == PRX_CF32 || f == PRX_CI16 || f == PRX_CI8 || f == PRX_CU8;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* The largest |y| the definition allows for the input x, or -1 when it is not worth checking
 * (non-finite or huge inputs or taps). */
static double output_bound(const float *h, size_t M, const prx_cf32 *x, size_t n_in) {
  double sum = 0;
  for (size_t i = 0; i < M; i++) sum += fabs(h[i]);
  double mx = 0;
  for (size_t i = 0; i < n_in; i++) {
    double a = hypot(x[i].re, x[i].im);
    if (!(a <= 1e15)) mx = INFINITY;
    if (a > mx) mx = a;
  }
  double b = sum * mx;
  return isfinite(b) && b < 1e30 ? b : -1;
}

/* Output j of every selected channel (y: execute's outputs then the flush's) against the float64
 * reference of the definition (tests/support/chan_ref.c), within 1e-4 of sum_m |h[m] x[jD-m]|. */
static void check_reference(const prx_chan *c, const prx_cf32 *x, size_t n_in, size_t j,
                            const prx_cf32 *y, size_t stride) {
  size_t K = prx_chan_channels(c), D = prx_chan_decimation(c), n_sel = prx_chan_n_outputs(c), M;
  const float *h = prx_chan_taps(c, &M);
  unsigned *sel = malloc(n_sel * sizeof *sel);
  test_cf64 *ref = malloc(n_sel * sizeof *ref);
  FUZZ_CHECK(sel && ref, "out of memory");
  for (size_t s = 0; s < n_sel; s++) {
    prx_chan_channel ch;
    FUZZ_CHECK(prx_chan_channel_info(c, s, &ch) == PRX_OK, "channel_info(%zu)", s);
    sel[s] = ch.index;
  }
  chan_ref(x, n_in, h, M, (unsigned)K, (unsigned)D, sel, n_sel, j, 1, ref);
  double scale = 0; /* the sum of the magnitudes of the terms */
  for (size_t m = 0; m < M && m <= j * D; m++)
    if (j * D - m < n_in) scale += fabs(h[m]) * hypot(x[j * D - m].re, x[j * D - m].im);
  double tol = 1e-4 * scale + (double)M * 1e-44;
  for (size_t s = 0; s < n_sel; s++) {
    prx_cf32 v = y[s * stride];
    double err = hypot(v.re - ref[s].re, v.im - ref[s].im);
    FUZZ_CHECK(err <= tol,
               "output %zu of channel %u (K %zu, D %zu, M %zu, %zu inputs) is %.9g%+.9gi, the "
               "definition gives %.9g%+.9gi (error %g, allowed %g)",
               j, sel[s], K, D, M, n_in, v.re, v.im, ref[s].re, ref[s].im, err, tol);
  }
  free(sel);
  free(ref);
}

static void check_bounded(const prx_cf32 *y, size_t n_sel, size_t stride, size_t n, double bound,
                          const char *what) {
  if (bound < 0) return;
  double lim = bound * (1 + 1e-2) + 1e-30;
  for (size_t s = 0; s < n_sel; s++)
    for (size_t j = 0; j < n; j++) {
      prx_cf32 v = y[s * stride + j];
      double a = hypot(v.re, v.im);
      FUZZ_CHECK(a <= lim, "%s: output %zu of channel %zu is %g + %gi, beyond the bound %g", what,
                 j, s, v.re, v.im, bound);
    }
}

static void run(prx_chan *c, const prx_chan_config *cfg, unsigned D, fuzz_bytes *b) {
  size_t K = prx_chan_channels(c), n_sel = prx_chan_n_outputs(c), M;
  const float *h = prx_chan_taps(c, &M);
  FUZZ_CHECK(h && M >= 1, "no prototype");

  /* the input: n_in samples made of the remaining bytes, repeated */
  size_t n_in = 1 + fuzz_u16(b) % (4 * K + 64), extra = fuzz_u8(b) % 3, pick = fuzz_u16(b);
  if (n_in > 8192) n_in = 8192;
  size_t isz = prx_format_size(cfg->in_format), n_bytes = n_in * isz;
  uint8_t *in = malloc(n_bytes);
  prx_cf32 *x = malloc(n_in * sizeof *x);
  FUZZ_CHECK(in && x, "out of memory");
  for (size_t i = 0; i < n_bytes; i++) in[i] = b->n ? b->p[i % b->n] : (uint8_t)(i * 37);
  FUZZ_CHECK(prx_convert_to_cf32(cfg->in_format, in, n_in, x) == PRX_OK, "convert");

  size_t n_exp = ceil_div(n_in, D);
  FUZZ_CHECK(prx_chan_output_count(c, n_in) == n_exp, "output_count(%zu) = %zu, expected %zu", n_in,
             prx_chan_output_count(c, n_in), n_exp);
  size_t stride = n_exp + extra;
  prx_cf32 *out1 = malloc(n_sel * stride * sizeof *out1),
           *out2 = malloc(n_sel * stride * sizeof *out2);
  FUZZ_CHECK(out1 && out2, "out of memory");
  size_t n_out = 12345;

  /* one short of the outputs: refused, nothing consumed */
  fuzz_clear_error();
  prx_status st = prx_chan_execute(c, in, n_in, out1, n_exp - 1, &n_out);
  FUZZ_CHECK(st == PRX_ERR_CAPACITY && n_out == 0, "stride %zu < %zu: status %d, n_out %zu",
             n_exp - 1, n_exp, (int)st, n_out);
  FUZZ_CHECK_ERROR(st, "prx_chan_execute with a short stride");
  FUZZ_CHECK(prx_chan_output_count(c, n_in) == n_exp, "a refused execute consumed input");

  double bound = output_bound(h, M, x, n_in);
  fuzz_clear_error();
  st = prx_chan_execute(c, in, n_in, out1, stride, &n_out);
  FUZZ_CHECK(st == PRX_OK, "execute of %zu samples failed: %s", n_in, prx_last_error());
  FUZZ_CHECK(n_out == n_exp, "execute wrote %zu outputs, expected %zu", n_out, n_exp);
  check_bounded(out1, n_sel, stride, n_out, bound, "execute");

  size_t n_flush = prx_chan_flush_count(c);
  size_t f_exp = ceil_div(n_in + M - 1, D) - n_exp;
  FUZZ_CHECK(n_flush == f_exp, "flush_count %zu, expected %zu", n_flush, f_exp);
  size_t fstride = n_flush ? n_flush : 1;
  prx_cf32 *fout = malloc(n_sel * fstride * sizeof *fout);
  FUZZ_CHECK(fout, "out of memory");
  st = prx_chan_flush(c, fout, fstride, &n_out);
  FUZZ_CHECK(st == PRX_OK && n_out == n_flush, "flush: status %d, %zu outputs of %zu: %s", (int)st,
             n_out, n_flush, prx_last_error());
  check_bounded(fout, n_sel, fstride, n_out, bound, "flush");
  if (bound >= 0) { /* the definition at two outputs: an end of either call, and any one */
    size_t total = n_exp + n_flush, ends[4] = {0, n_exp - 1, n_exp, total - 1};
    size_t js[2] = {ends[pick % 4], (pick >> 2) % total};
    for (int i = 0; i < 2; i++) {
      size_t j = js[i];
      if (j >= total) continue;
      if (j < n_exp)
        check_reference(c, x, n_in, j, out1 + j, stride);
      else
        check_reference(c, x, n_in, j, fout + (j - n_exp), fstride);
    }
  }
  free(fout);

  /* after the reset, the same input gives the same outputs, bit for bit */
  FUZZ_CHECK(prx_chan_output_count(c, n_in) == n_exp && prx_chan_flush_count(c) == 0,
             "the flush did not reset the stream");
  st = prx_chan_execute(c, in, n_in, out2, stride, &n_out);
  FUZZ_CHECK(st == PRX_OK && n_out == n_exp, "second execute: status %d, %zu outputs: %s", (int)st,
             n_out, prx_last_error());
  for (size_t s = 0; s < n_sel; s++)
    FUZZ_CHECK(!memcmp(out1 + s * stride, out2 + s * stride, n_exp * sizeof *out1),
               "channel %zu differs after a reset", s);
  free(out1);
  free(out2);
  free(in);
  free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  prx_chan_config cfg = prx_chan_config_default();
  cfg.backend = PRX_BACKEND_CPU;
  uint8_t flags = fuzz_u8(&b);
  unsigned K = fuzz_uint(&b, 1, 64);
  cfg.channels = K;
  switch (fuzz_u8(&b) % 8) {
  case 0:
  case 1:
  case 2:
  case 3: cfg.decimation = 0; break;
  case 4:
  case 5: cfg.decimation = K; break;
  case 6: cfg.decimation = K / 2; break;
  default: cfg.decimation = fuzz_uint(&b, 0, K < UINT_MAX / 2 ? 2 * K : UINT_MAX); break;
  }
  cfg.taps_per_channel = fuzz_uint(&b, 1, 24);
  cfg.atten_db = fuzz_double(&b, 10, 150);
  cfg.cutoff = fuzz_double(&b, 0.05, 1.5);

  float *taps = NULL;
  if (flags & 1) { /* the caller's prototype, of at most 512 taps */
    size_t n = fuzz_u8(&b) < 16 ? 0 : 1 + fuzz_u16(&b) % 512;
    taps = malloc((n ? n : 1) * sizeof *taps);
    FUZZ_CHECK(taps, "out of memory");
    int raw = fuzz_u8(&b) < 32;
    for (size_t i = 0; i < n; i++) {
      if (raw) {
        uint32_t u = fuzz_u32(&b);
        memcpy(&taps[i], &u, sizeof u);
      } else {
        taps[i] = (int16_t)fuzz_u16(&b) / 32768.0f;
      }
    }
    cfg.taps = taps;
    cfg.n_taps = n;
  }
  unsigned *sel = NULL;
  if (flags & 2) { /* a selection of 0..16 channels */
    size_t n = fuzz_u8(&b) % 17;
    sel = malloc((n ? n : 1) * sizeof *sel);
    FUZZ_CHECK(sel, "out of memory");
    for (size_t i = 0; i < n; i++) sel[i] = fuzz_uint(&b, 0, K ? K - 1 : 0);
    cfg.select = sel;
    cfg.n_select = n;
  }
  uint8_t f = fuzz_u8(&b);
  cfg.in_format = f < 200 ? in_formats[f % 4] : f < 230 ? PRX_CF16 : (prx_format)fuzz_u32(&b);
  f = fuzz_u8(&b);
  cfg.out_format = f < 224 ? PRX_CF32 : f < 240 ? PRX_CF16 : (prx_format)fuzz_u32(&b);
  cfg.sample_rate = fuzz_double(&b, 1, 1e9);
  cfg.center_freq = fuzz_double(&b, -1e9, 1e9);
  cfg.threads = fuzz_int(&b, 1, 2);
  if (fuzz_u8(&b) >= 240) { /* an unknown backend (never AUTO or CUDA: this is the CPU's test) */
    int v = (int)fuzz_u32(&b);
    cfg.backend = (prx_backend)(v >= 0 && v <= 2 ? v + 3 : v);
  }
  cfg.device = (int)fuzz_u32(&b);
  f = fuzz_u8(&b);
  cfg.block_samples = f < 192 ? 0 : f < 240 ? 1 + (size_t)fuzz_u16(&b) : (size_t)fuzz_u64(&b);

  /* ---- the oracle ---- */
  unsigned D = cfg.decimation ? cfg.decimation : K / 2;
  uint64_t M = cfg.taps ? cfg.n_taps : (uint64_t)K * cfg.taps_per_channel;
  int bad = 0; /* breaks a documented rule checked on the parameters */
  bad |= K == 0;
  bad |= cfg.decimation == 0 && K % 2;
  bad |= D == 0 || (D && (K % D || (K / D != 1 && K / D != 2)));
  if (cfg.taps) {
    bad |= cfg.n_taps == 0;
    for (size_t i = 0; i < cfg.n_taps; i++) bad |= !isfinite(cfg.taps[i]);
  } else {
    bad |= cfg.taps_per_channel == 0;
    bad |= !(cfg.atten_db > 0);
    bad |= !(cfg.cutoff > 0 && K && cfg.cutoff < K / 2.0);
  }
  if (cfg.select) {
    bad |= cfg.n_select == 0;
    for (size_t i = 0; i < cfg.n_select; i++) bad |= cfg.select[i] >= K;
  }
  bad |= !input_format_ok(cfg.in_format);
  bad |= cfg.out_format != PRX_CF32 && cfg.out_format != PRX_CF16;
  bad |= !(cfg.sample_rate > 0 && isfinite(cfg.sample_rate));
  bad |= !isfinite(cfg.center_freq);
  bad |= cfg.threads < 0;
  int backend_bad = cfg.backend != PRX_BACKEND_CPU || cfg.out_format == PRX_CF16;
  int absurd = K > (1u << 30) || M > ((uint64_t)1 << 32) || cfg.threads >= 100000 ||
               (uint64_t)cfg.block_samples >= ((uint64_t)1 << 40);
  int large = K > 4096 || M > 65536 || cfg.threads > 4 || cfg.block_samples > 65536;
  /* the resource caps of polyrx/chan.h (memory cannot bind below the "large" sizes) */
  double work = D ? (double)M / D + (double)K / D * log2((double)K) : 0;
  int within_limits = work <= 16384 && (double)M * work <= 17179869184.0 &&
                      (cfg.taps || cfg.taps_per_channel <= 4096) &&
                      (cfg.taps || (cfg.atten_db <= 300 && cfg.cutoff >= 1e-3)) &&
                      cfg.threads <= 1024 && cfg.block_samples <= ((size_t)1 << 31);
  int must_fail = bad || backend_bad || absurd;
  int must_succeed = !must_fail && within_limits;

  if (!large || bad || absurd) {
    prx_chan *c = (prx_chan *)&flags; /* must be replaced by the call */
    fuzz_clear_error();
    prx_status st = prx_chan_create(&cfg, &c);
    if (st != PRX_OK) {
      FUZZ_CHECK(!must_succeed, "a valid configuration was refused (K %u, D %u, M %llu): %s", K,
                 cfg.decimation, (unsigned long long)M, prx_last_error());
      FUZZ_CHECK_ERROR(st, "prx_chan_create");
      FUZZ_CHECK(c == NULL, "a failed create left an object");
    } else {
      FUZZ_CHECK(!must_fail,
                 "an invalid configuration was accepted: K %u, decimation %u, P %u, n_taps %zu, "
                 "atten %g, cutoff %g, n_select %zu, formats %d/%d, rate %g, centre %g, threads "
                 "%d, backend %d, block %zu",
                 K, cfg.decimation, cfg.taps_per_channel, cfg.n_taps, cfg.atten_db, cfg.cutoff,
                 cfg.n_select, (int)cfg.in_format, (int)cfg.out_format, cfg.sample_rate,
                 cfg.center_freq, cfg.threads, (int)cfg.backend, cfg.block_samples);
      /* the getters describe the configuration */
      FUZZ_CHECK(prx_chan_channels(c) == K && prx_chan_decimation(c) == D, "K %u D %u",
                 prx_chan_channels(c), prx_chan_decimation(c));
      size_t n_sel = cfg.select ? cfg.n_select : K, m;
      FUZZ_CHECK(prx_chan_n_outputs(c) == n_sel, "%zu outputs, expected %zu", prx_chan_n_outputs(c),
                 n_sel);
      prx_chan_taps(c, &m);
      FUZZ_CHECK(m == M, "prototype of %zu taps, expected %llu", m, (unsigned long long)M);
      if (cfg.taps)
        FUZZ_CHECK(!memcmp(prx_chan_taps(c, &m), cfg.taps, M * sizeof(float)),
                   "the caller's prototype was changed");
      FUZZ_CHECK(prx_chan_output_rate(c) == cfg.sample_rate / D, "output rate %g",
                 prx_chan_output_rate(c));
      FUZZ_CHECK(prx_chan_backend(c) == PRX_BACKEND_CPU, "backend %d", (int)prx_chan_backend(c));
      for (size_t s = 0; s < n_sel; s++) {
        prx_chan_channel ch;
        FUZZ_CHECK(prx_chan_channel_info(c, s, &ch) == PRX_OK, "channel_info(%zu)", s);
        FUZZ_CHECK(ch.index == (cfg.select ? cfg.select[s] : s), "output %zu is channel %u", s,
                   ch.index);
        if (fabs(cfg.center_freq) + cfg.sample_rate < 1e300)
          FUZZ_CHECK(fabs(ch.center_freq - cfg.center_freq) <=
                         cfg.sample_rate / 2 +
                             4 * DBL_EPSILON * (fabs(cfg.center_freq) + cfg.sample_rate) + 1e-300,
                     "channel %u of %u centred at %.17g, outside fc %.17g +- fs/2 = %.17g / 2",
                     ch.index, K, ch.center_freq, cfg.center_freq, cfg.sample_rate);
      }
      fuzz_clear_error();
      prx_chan_channel ch;
      st = prx_chan_channel_info(c, n_sel, &ch);
      FUZZ_CHECK(st != PRX_OK, "channel_info accepted output %zu of %zu", n_sel, n_sel);
      FUZZ_CHECK_ERROR(st, "prx_chan_channel_info past the end");
      run(c, &cfg, D, &b);
      prx_chan_destroy(c);
    }
  }
  free(taps);
  free(sel);
  return 0;
}
