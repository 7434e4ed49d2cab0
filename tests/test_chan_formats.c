/* Input formats of the CPU channelizer: ci16, ci8 and cu8 (rtl-sdr offset binary) input gives
 * the channels of its cf32 conversion (to float rounding: the cu8 scaling 1/127.5 is not a
 * power of two, so the library's multiply by the reciprocal may differ by an ulp from the
 * division here), computed here from the scalings documented in
 * polyrx/core.h (ci16 / 32768, ci8 / 128, (cu8 - 127.5) / 127.5), with uneven chunks and the
 * flush tail (the flush feeds zeros after conversion, also for cu8, whose raw bytes cannot
 * express 0). Also checks the cf32 run against the float64 reference, so that a wrong but
 * consistent conversion of both cannot pass. */
#include "chan_ref.h"
#include "chan_run.h"
#include "testutil.h"

#include <string.h>

/* chunk lengths 1, 8, 57, ... (step = step * 7 % 1009 + 1): uneven, up to 1009 */
static size_t next_len(void *ctx, size_t fed, size_t left) {
  (void)fed;
  (void)left;
  size_t *step = ctx, len = *step;
  *step = *step * 7 % 1009 + 1;
  return len;
}

static size_t run(prx_format f, const void *in, size_t n, prx_cf32 *y, size_t cap) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = 96;
  cfg.taps_per_channel = 10;
  cfg.in_format = f;
  cfg.threads = 2;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return 0;
  size_t step = 1;
  size_t got = chan_run_stream(c, in, prx_format_size(f), n, next_len, &step, y, cap, NULL);
  prx_chan_destroy(c);
  return got;
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 4242);
  const size_t n = 30001, K = 96, cap = (n + 960) / 48 + 4;
  prx_cf32 *x = malloc(n * sizeof *x);
  prx_cf32 *y0 = calloc(K * cap, sizeof *y0), *y1 = calloc(K * cap, sizeof *y1);
  int16_t *s16 = malloc(2 * n * sizeof *s16);
  int8_t *s8 = malloc(2 * n);
  uint8_t *u8 = malloc(2 * n);
  for (size_t i = 0; i < 2 * n; i++) {
    s16[i] = (int16_t)(test_rng_u64(&rng) & 0xffff);
    s8[i] = (int8_t)(test_rng_u64(&rng) & 0xff);
    u8[i] = (uint8_t)(test_rng_u64(&rng) & 0xff);
  }
  s16[0] = -32768, s16[1] = 32767, s8[0] = -128, s8[1] = 127, u8[0] = 0, u8[1] = 255;
  const prx_format fmts[] = {PRX_CI16, PRX_CI8, PRX_CU8};
  const void *raw[] = {s16, s8, u8};
  for (int f = 0; f < 3; f++) {
    for (size_t i = 0; i < n; i++) {
      float re, im;
      if (f == 0)
        re = s16[2 * i] / 32768.0f, im = s16[2 * i + 1] / 32768.0f;
      else if (f == 1)
        re = s8[2 * i] / 128.0f, im = s8[2 * i + 1] / 128.0f;
      else
        re = (u8[2 * i] - 127.5f) / 127.5f, im = (u8[2 * i + 1] - 127.5f) / 127.5f;
      x[i].re = re, x[i].im = im;
    }
    size_t n0 = run(PRX_CF32, x, n, y0, cap), n1 = run(fmts[f], raw[f], n, y1, cap);
    CHECK(n0 == n1 && n0 == (n + 96 * 10 - 1 + 47) / 48, "%s: %zu outputs, cf32 %zu",
          prx_format_name(fmts[f]), n1, n0);
    double worst = 0;
    for (size_t s = 0; s < K; s++) {
      double e = test_rel_l2_cf32(y1 + s * cap, y0 + s * cap, n0);
      if (e > worst) worst = e;
    }
    CHECK(worst <= 1e-6, "%s: channels differ from its cf32 conversion's (rel L2 %.3g)",
          prx_format_name(fmts[f]), worst);
    /* the cf32 run itself against the reference, on three channels */
    float h[960];
    CHECK_OK(prx_design_kaiser(960, 80, 0.5 / 96, h));
    unsigned chk[3] = {0, 47, 95};
    test_cf64 *ref = malloc(3 * n0 * sizeof *ref);
    chan_ref(x, n, h, 960, 96, 48, chk, 3, 0, n0, ref);
    for (int i = 0; i < 3; i++) {
      double e = test_rel_l2_vs_cf64(y0 + chk[i] * cap, ref + i * n0, n0);
      CHECK(e <= 1e-5, "%s: channel %u rel L2 vs reference %.3g", prx_format_name(fmts[f]), chk[i],
            e);
    }
    free(ref);
    printf("%s: equals its cf32 conversion (worst rel L2 %.2g)\n", prx_format_name(fmts[f]), worst);
  }
  free(x);
  free(y0);
  free(y1);
  free(s16);
  free(s8);
  free(u8);
  return test_finish("test_chan_formats");
}
