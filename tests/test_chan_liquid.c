/* Peer test: polyrx's CPU channelizer against liquid-dsp's firpfbch2_crcf analyser (Debian
 * libliquid-dev, 1.5), given the same prototype filter, on random input.
 *
 * liquid: firpfbch2_crcf_create(LIQUID_ANALYZER, K, m, h) with h of 2 K m taps; each execute
 * takes D = K/2 input samples and writes K outputs, one per channel. Output block b therefore
 * exists once input samples 0 .. (b+1)D - 1 have been given, one sample *before* polyrx's
 * output j = b+1 (which waits for sample jD = (b+1)D): the two grids are one input sample
 * apart, so no whole-output delay maps them. Feeding polyrx one leading zero sample (x' = [0, x],
 * equivalently prototype [0, h]) puts its output j on liquid's grid, and then
 *
 *     liquid_k[b] = ((-1)^k / K) * polyrx'_k[b + 1]      for every channel k and block b >= 0
 *
 * index:  liquid channel k is polyrx channel k (same FFT order, centre k fs/K);
 * delay:  liquid block b is polyrx output b + 1 of the one-sample-delayed input; polyrx output
 *         0 (the window that holds only the leading zero) has no liquid counterpart;
 * phase:  (-1)^k, constant in time: polyrx references the mixer phase exp(-i 2 pi k t / K) to
 *         input sample 0, liquid effectively to sample -(1 + K/2) (the +1 is the leading zero);
 * scale:  1/K: liquid's inverse FFT is not normalised, polyrx has unit gain (sum h = 1).
 *
 * This mapping was derived from the two definitions, then confirmed numerically by searching,
 * for each liquid channel, the polyrx channel, output delay and complex factor that best fit
 * (correlation 1.000000 with the one-sample shift, about 0.98 without it). Here it is asserted
 * for every channel and every output, start-up included, within 1e-4 relative L2, for K a
 * power of two and not, and several filter lengths. */
#include "testutil.h"

#ifndef PRX_HAVE_LIQUID
int main(void) {
  printf("test_chan_liquid: skipped, liquid-dsp was not found at build time\n");
  return TEST_SKIP;
}
#else

#include <complex.h>
#include <liquid/liquid.h>
#include <math.h>
#include <string.h>

static void check(test_rng *rng, unsigned K, unsigned m, size_t n_blocks) {
  size_t D = K / 2, M = 2 * (size_t)K * m, n = n_blocks * D;
  float *h = malloc(M * sizeof *h);
  /* a Kaiser prototype made slightly asymmetric, so that a time reversal would show */
  CHECK_OK(prx_design_kaiser(M, 80, 0.5 / K, h));
  for (size_t i = 0; i < M; i++) h[i] *= (float)(1 + 0.05 * test_rng_gauss(rng));
  prx_cf32 *x = calloc(n + 1, sizeof *x); /* x[0] is polyrx's leading zero */
  test_fill_cf32(rng, x + 1, n, 1.0);
  /* liquid */
  float complex *yl = malloc(n_blocks * K * sizeof *yl);
  firpfbch2_crcf q = firpfbch2_crcf_create(LIQUID_ANALYZER, K, m, h);
  for (size_t b = 0; b < n_blocks; b++)
    firpfbch2_crcf_execute(q, (float complex *)(x + 1 + b * D), yl + b * K);
  firpfbch2_crcf_destroy(q);
  /* polyrx, same prototype through cfg.taps */
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.taps = h;
  cfg.n_taps = M;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return;
  size_t cap = n_blocks + 1, got = 0;
  prx_cf32 *yp = malloc(K * cap * sizeof *yp);
  CHECK_OK(prx_chan_execute(c, x, n + 1, yp, cap, &got));
  CHECK(got == n_blocks + 1, "polyrx gave %zu outputs for %zu + 1 samples", got, n);
  /* map and compare, channel by channel */
  prx_cf32 *a = malloc(n_blocks * sizeof *a), *b = malloc(n_blocks * sizeof *b);
  double worst = 0, num = 0, den = 0;
  for (unsigned k = 0; k < K; k++) {
    float g = (k & 1 ? -1.0f : 1.0f) / (float)K;
    for (size_t j = 0; j < n_blocks; j++) {
      a[j].re = g * yp[(size_t)k * cap + j + 1].re;
      a[j].im = g * yp[(size_t)k * cap + j + 1].im;
      b[j].re = crealf(yl[j * K + k]);
      b[j].im = cimagf(yl[j * K + k]);
    }
    double e = test_rel_l2_cf32(a, b, n_blocks);
    if (e > worst) worst = e;
    CHECK(e <= 1e-4, "K=%u m=%u channel %u: rel L2 to liquid %.3g", K, m, k, e);
    for (size_t j = 0; j < n_blocks; j++) {
      double dr = (double)a[j].re - b[j].re, di = (double)a[j].im - b[j].im;
      num += dr * dr + di * di;
      den += (double)b[j].re * b[j].re + (double)b[j].im * b[j].im;
    }
  }
  printf("K=%-5u m=%-2u (M=%-6zu) %zu blocks: worst channel rel L2 to liquid %.2e, all %.2e\n", K,
         m, M, n_blocks, worst, sqrt(num / den));
  free(a);
  free(b);
  free(h);
  free(x);
  free(yl);
  free(yp);
  prx_chan_destroy(c);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 1500);
  check(&rng, 2, 4, 200);
  check(&rng, 6, 2, 200);
  check(&rng, 64, 8, 100);
  check(&rng, 1000, 3, 40);
  check(&rng, 1024, 8, 60);
  return test_finish("test_chan_liquid");
}
#endif
