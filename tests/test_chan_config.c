/* Channelizer configuration: invalid configurations and calls return the right status with a
 * message naming the problem (never a crash), and the reports (channel centres wrapped into
 * [fc - fs/2, fc + fs/2), output rate, group delay, the prototype in use) match hand formulas. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Checks that `got` is `want` and that the last error names `word`. */
#define EXPECT(call, want, word)                                                                   \
  do {                                                                                             \
    prx_status st_ = (call);                                                                       \
    const char *msg_ = prx_last_error();                                                           \
    CHECK(st_ == (want), "%s -> %s, expected %s", #call, prx_strerror(st_), prx_strerror(want));   \
    CHECK(msg_ &&strstr(msg_, word), "%s: message '%s' does not mention '%s'", #call,              \
          msg_ ? msg_ : "(null)", word);                                                           \
  } while (0)

static double test_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static prx_chan_config base(void) {
  prx_chan_config c = prx_chan_config_default();
  c.channels = 16;
  c.taps_per_channel = 4;
  c.backend = PRX_BACKEND_CPU;
  c.threads = 1;
  return c;
}

static void invalid_configs(void) {
  prx_chan *c = (prx_chan *)&c; /* create must set it to NULL on failure */
  prx_chan_config k;
  k = base(), k.channels = 7; /* odd K with D = K/2 */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "even");
  CHECK(c == NULL, "failed create left a non-NULL object");
  k = base(), k.channels = 12, k.decimation = 4; /* K/D = 3 */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "decimation");
  k = base(), k.channels = 12, k.decimation = 5; /* K/D not an integer */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "decimation");
  k = base(), k.channels = 12, k.decimation = 24; /* D > K */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "decimation");
  k = base(), k.channels = 0;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "channels");
  k = base(), k.channels = 1u << 30; /* absurd K */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "channels");
  k = base(), k.taps_per_channel = 0;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "taps per channel");
  k = base(), k.taps_per_channel = 100000;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "taps per channel");
  k = base(), k.channels = 1u << 20, k.taps_per_channel = 4096; /* 2^32 taps */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "too long");
  float taps[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  k = base(), k.taps = taps, k.n_taps = 0; /* zero caller taps */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "prototype length");
  taps[3] = NAN;
  k = base(), k.taps = taps, k.n_taps = 8;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "tap 3");
  taps[3] = 4;
  unsigned sel[3] = {0, 16, 3};
  k = base(), k.select = sel, k.n_select = 3; /* bad select index */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "16");
  k = base(), k.select = sel, k.n_select = 0;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "selection");
  k = base(), k.atten_db = -3;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "attenuation");
  k = base(), k.cutoff = 0;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "cut-off");
  k = base(), k.in_format = PRX_CF16;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "input format");
  k = base(), k.in_format = (prx_format)42;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "input format");
  k = base(), k.out_format = PRX_CF16; /* cf16 output needs the CUDA backend */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_UNSUPPORTED, "cf16");
  k = base(), k.out_format = PRX_CI16; /* so does ci16 output */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_UNSUPPORTED, "ci16");
  k = base(), k.out_format = PRX_CI8;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "output format");
  k = base(), k.power_sums = 1; /* so do the power sums on the device */
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_UNSUPPORTED, "power sums");
  k = base(), k.sample_rate = 0;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "sample rate");
  k = base(), k.center_freq = INFINITY;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "centre frequency");
  k = base(), k.threads = -1;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "threads");
  k = base(), k.block_samples = (size_t)1 << 40;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "block_samples");
  k = base(), k.backend = (prx_backend)9;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "backend");
  EXPECT(prx_chan_create(NULL, &c), PRX_ERR_INVALID, "NULL");
  k = base();
  EXPECT(prx_chan_create(&k, NULL), PRX_ERR_INVALID, "NULL");
  prx_chan_destroy(NULL); /* accepted */
}

/* The resource caps of polyrx/chan.h: refused at once (before the prototype is designed), with
 * the figures in the message; a configuration just inside a cap is accepted. */
static void resource_caps(void) {
  prx_chan *c = NULL;
  prx_chan_config k;
  /* 2^28 taps: about 7 GiB and 2^41 multiply-adds to fill */
  k = base(), k.channels = 65536, k.taps_per_channel = 4096;
  double t0 = test_seconds();
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "GiB");
  CHECK(test_seconds() - t0 < 0.5, "the refusal took %.2f s", test_seconds() - t0);
  /* memory through the block: 8 x 2^31 bytes */
  k = base(), k.block_samples = (size_t)1 << 31;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "memory");
  /* work per input sample: K = D = 1, a caller prototype of M taps costs M per sample */
  float *taps = calloc(16385, sizeof *taps);
  taps[0] = 1;
  k = base(), k.channels = 1, k.decimation = 1, k.taps = taps, k.n_taps = 16384;
  CHECK_OK(prx_chan_create(&k, &c));
  prx_chan_destroy(c);
  c = NULL;
  k.n_taps = 16385;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "per input sample");
  free(taps);
  /* the fill: K = 2048, P = 2048, D = 1024: 2^22 taps at 4118 per sample, just over 2^34 */
  k = base(), k.channels = 2048, k.taps_per_channel = 2048;
  EXPECT(prx_chan_create(&k, &c), PRX_ERR_INVALID, "2^34");
  CHECK(c == NULL, "a refused create left an object");
}

static void invalid_calls(void) {
  prx_chan_config k = base();
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&k, &c));
  if (!c) return;
  prx_cf32 x[40] = {{0, 0}}, y[16 * 8];
  size_t n = 99;
  EXPECT(prx_chan_execute(NULL, x, 40, y, 8, &n), PRX_ERR_INVALID, "NULL");
  CHECK(n == 0, "failed execute left n_out = %zu", n);
  EXPECT(prx_chan_execute(c, x, 40, y, 8, NULL), PRX_ERR_INVALID, "NULL");
  EXPECT(prx_chan_execute(c, NULL, 40, y, 8, &n), PRX_ERR_INVALID, "NULL input");
  EXPECT(prx_chan_execute(c, x, 40, NULL, 8, &n), PRX_ERR_INVALID, "NULL output");
  /* 40 samples, D = 8: 5 outputs per channel; a stride of 4 is too small */
  EXPECT(prx_chan_execute(c, x, 40, y, 4, &n), PRX_ERR_CAPACITY, "stride");
  CHECK(prx_chan_output_count(c, 40) == 5, "a failed call consumed input");
  CHECK_OK(prx_chan_execute(c, x, 40, y, 8, &n));
  CHECK(n == 5, "%zu outputs for 40 samples at D = 8", n);
  CHECK_OK(prx_chan_execute(c, x, 0, NULL, 0, &n)); /* nothing in, nothing out */
  CHECK(n == 0, "%zu outputs for no input", n);
  /* flush: 63 zeros after 40 samples, outputs j = 5 .. ceil(103 / 8) - 1 = 12 */
  CHECK(prx_chan_flush_count(c) == 8, "flush count %zu, expected 8", prx_chan_flush_count(c));
  EXPECT(prx_chan_flush(c, y, 7, &n), PRX_ERR_CAPACITY, "stride");
  EXPECT(prx_chan_flush(c, NULL, 8, &n), PRX_ERR_INVALID, "NULL output");
  EXPECT(prx_chan_flush(NULL, y, 8, &n), PRX_ERR_INVALID, "NULL");
  CHECK_OK(prx_chan_flush(c, y, 8, &n));
  CHECK(n == 8, "flush gave %zu outputs, expected 8", n);
  prx_chan_channel ch;
  EXPECT(prx_chan_channel_info(c, 16, &ch), PRX_ERR_INVALID, "16");
  EXPECT(prx_chan_channel_info(c, 0, NULL), PRX_ERR_INVALID, "NULL");
  EXPECT(prx_chan_execute_device(c, x, 40, y, 8, &n, NULL), PRX_ERR_UNSUPPORTED, "CUDA");
  /* the power sums: an object without them refuses their calls */
  double sums[16];
  uint64_t nf = 0;
  EXPECT(prx_chan_power_window(c, 0, 10), PRX_ERR_UNSUPPORTED, "power sums");
  EXPECT(prx_chan_power_take(c, sums, &nf, NULL), PRX_ERR_UNSUPPORTED, "power sums");
  EXPECT(prx_chan_power_window(NULL, 0, 10), PRX_ERR_INVALID, "NULL");
  EXPECT(prx_chan_power_take(NULL, sums, &nf, NULL), PRX_ERR_INVALID, "NULL");
  prx_chan_destroy(c);
}

static void reports(void) {
  const unsigned Ks[] = {6, 1000, 1024, 2};
  for (int i = 0; i < 4; i++) {
    unsigned K = Ks[i];
    for (unsigned ratio = 1; ratio <= 2; ratio++) {
      prx_chan_config k = base();
      k.channels = K;
      k.decimation = K / ratio;
      k.taps_per_channel = 5;
      k.sample_rate = 6.5536e6;
      k.center_freq = 433.92e6;
      unsigned sel[4] = {K - 1, 0, K / 2, (K / 2 + 1) % K};
      k.select = sel;
      k.n_select = 4;
      prx_chan *c = NULL;
      CHECK_OK(prx_chan_create(&k, &c));
      if (!c) continue;
      CHECK(prx_chan_channels(c) == K && prx_chan_decimation(c) == K / ratio, "K/D reported");
      CHECK(prx_chan_n_outputs(c) == 4, "n_outputs %zu", prx_chan_n_outputs(c));
      CHECK(fabs(prx_chan_output_rate(c) - 6.5536e6 / (K / ratio)) < 1e-9, "K=%u: output rate %.9g",
            K, prx_chan_output_rate(c));
      /* group delay of a symmetric M-tap prototype: (M - 1) / 2 input samples */
      CHECK(prx_chan_group_delay(c) == (5.0 * K - 1) / 2, "K=%u: group delay %g", K,
            prx_chan_group_delay(c));
      size_t M = 0;
      const float *h = prx_chan_taps(c, &M);
      double sum = 0, asym = 0;
      for (size_t m = 0; m < M; m++) sum += h[m], asym += fabs(h[m] - h[M - 1 - m]);
      CHECK(M == 5u * K && fabs(sum - 1) < 1e-5 && asym < 1e-6,
            "K=%u: prototype of %zu taps, sum %g, asymmetry %g", K, M, sum, asym);
      for (size_t s = 0; s < 4; s++) {
        prx_chan_channel ch;
        CHECK_OK(prx_chan_channel_info(c, s, &ch));
        /* k < K/2: fc + k fs/K; k >= K/2: fc + (k - K) fs/K */
        double kk = sel[s] < (K + 1) / 2 ? (double)sel[s] : (double)sel[s] - K;
        if (K % 2 == 0 && sel[s] == K / 2) kk = -(double)K / 2; /* the Nyquist channel: -fs/2 */
        double want = 433.92e6 + kk * 6.5536e6 / K;
        CHECK(ch.index == sel[s] && fabs(ch.center_freq - want) < 1e-3,
              "K=%u channel %u: centre %.6f Hz, expected %.6f", K, sel[s], ch.center_freq, want);
        CHECK(ch.center_freq >= 433.92e6 - 6.5536e6 / 2 && ch.center_freq < 433.92e6 + 6.5536e6 / 2,
              "K=%u channel %u: centre %.3f outside [fc - fs/2, fc + fs/2)", K, sel[s],
              ch.center_freq);
      }
      prx_chan_destroy(c);
    }
  }
  /* caller taps are used as given (not rescaled), and the group delay follows their length */
  float taps[7] = {0.5f, 1, 2, 3, 2, 1, 0.5f};
  prx_chan_config k = base();
  k.taps = taps;
  k.n_taps = 7;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&k, &c));
  size_t M = 0;
  const float *h = c ? prx_chan_taps(c, &M) : NULL;
  CHECK(c && M == 7 && h && memcmp(h, taps, sizeof taps) == 0, "caller taps not kept as given");
  CHECK(c && prx_chan_group_delay(c) == 3, "group delay of 7 taps");
  prx_chan_destroy(c);
}

int main(void) {
  invalid_configs();
  invalid_calls();
  resource_caps();
  reports();
  return test_finish("test_chan_config");
}
