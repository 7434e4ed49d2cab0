/* Tones through the CPU channelizer: a complex tone of amplitude A at the centre of channel k0
 * comes out of channel k0 at unit gain (+-0.1 dB) with zero phase (the mixer's phase is
 * referenced to input sample 0, so y = A once the filter window is full), and at least
 * (atten - 3) dB down in every channel that does not overlap it.
 *
 * "Overlap": channel k overlaps the tone when the tone's distance from k's centre,
 * d = min(|k - k0|, K - |k - k0|) channel spacings, is inside k's pass or transition band,
 * d < cutoff + tw / 2, where cutoff is the -6 dB cut-off (0.5 spacings by default) and tw the
 * transition width that Kaiser's length formula gives for M taps and the attenuation A_s:
 * M - 1 = (A_s - 7.95) / (14.36 tw_cycles)  =>  tw = (A_s - 7.95) K / (14.36 (M - 1)) spacings.
 * Levels are measured on the outputs whose window lies wholly inside the input (after the
 * start-up transient, before the flush tail). */
#include "testutil.h"

#include <math.h>
#include <string.h>

static void check(test_rng *rng, unsigned K, unsigned D, unsigned P, double atten) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = P;
  cfg.atten_db = atten;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return;
  size_t M = (size_t)K * P, n = M + 40 * (size_t)D, cap = n / D + 1;
  double tw = (atten - 7.95) * K / (14.36 * (M - 1)), f_stop = cfg.cutoff + tw / 2;
  prx_cf32 *x = malloc(n * sizeof *x), *y = malloc((size_t)K * cap * sizeof *y);
  unsigned tones[6] = {0, 1, K / 2, K - 1, 0, 0};
  tones[4] = (unsigned)(test_rng_u64(rng) % K);
  tones[5] = (unsigned)(test_rng_u64(rng) % K);
  size_t j0 = (M - 1 + D - 1) / D, j1 = (n - 1) / D + 1; /* full windows: jD >= M-1, jD < n */
  double worst_pass = 0, worst_stop = -INFINITY;
  for (int t = 0; t < 6; t++) {
    unsigned k0 = tones[t];
    double A = 0.3 + test_rng_uniform(rng);
    for (size_t i = 0; i < n; i++) {
      double ph = 2 * M_PI * (double)(((uint64_t)k0 * i) % K) / K;
      x[i].re = (float)(A * cos(ph));
      x[i].im = (float)(A * sin(ph));
    }
    size_t got = 0;
    CHECK_OK(prx_chan_execute(c, x, n, y, cap, &got));
    prx_chan_reset(c);
    for (unsigned k = 0; k < K; k++) {
      double p = 0, err = 0;
      for (size_t j = j0; j < j1 && j < got; j++) {
        prx_cf32 v = y[(size_t)k * cap + j];
        p += (double)v.re * v.re + (double)v.im * v.im;
        err += ((double)v.re - A) * ((double)v.re - A) + (double)v.im * v.im;
      }
      double db = 10 * log10(p / (j1 - j0) / (A * A) + 1e-300);
      unsigned dk = k > k0 ? k - k0 : k0 - k;
      double d = dk < K - dk ? dk : K - dk;
      if (k == k0) {
        CHECK(fabs(db) <= 0.1, "K=%u D=%u P=%u: tone in channel %u at %.3f dB, expected 0", K, D, P,
              k0, db);
        double e = sqrt(err / (j1 - j0)) / A; /* y = A: zero phase as well as unit gain */
        CHECK(e < 1e-3, "K=%u D=%u: channel %u output is not A (rel error %.3g)", K, D, k0, e);
        if (fabs(db) > worst_pass) worst_pass = fabs(db);
      } else if (d >= f_stop) {
        CHECK(db <= -(atten - 3), "K=%u D=%u P=%u: tone at channel %u is %.1f dB in channel %u", K,
              D, P, k0, db, k);
        if (db > worst_stop) worst_stop = db;
      }
    }
  }
  printf("K=%-5u D=%-5u P=%-3u atten %g dB: stop band from %.3f spacings, |pass| <= %.2g dB, "
         "worst non-overlapping %.1f dB\n",
         K, D, P, atten, f_stop, worst_pass, worst_stop);
  free(x);
  free(y);
  prx_chan_destroy(c);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 31337);
  check(&rng, 6, 3, 16, 80);
  check(&rng, 128, 64, 16, 80);
  check(&rng, 128, 128, 8, 60);
  check(&rng, 1000, 500, 12, 80);
  check(&rng, 1024, 512, 16, 80);
  check(&rng, 1024, 1024, 16, 100);
  check(&rng, 64, 32, 4, 60); /* short filter: the neighbours overlap and are not checked */
  return test_finish("test_chan_tones");
}
