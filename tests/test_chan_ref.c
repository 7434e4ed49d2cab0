/* CPU channelizer against the float64 direct-formula reference (tests/support/chan_ref.c) on
 * fresh random input: K in {2, 6, 128, 1000, 1024} (not only powers of two), D in {K/2, K},
 * plus a large K (16384, 65536),
 * several taps per channel, Kaiser prototypes and caller prototypes of lengths that are not a
 * multiple of K (one of odd length), all channels and channel subsets in a caller's order
 * (1-4 channels take the direct-DFT path instead of the FFT: both are checked).
 * Relative L2 error <= 1e-5. The input is longer than the filter so that outputs with a full
 * window are compared, not only the start-up; the flush tail is compared too. */
#include "chan_ref.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

/* Runs the channelizer on x (one call, then flush) and compares every output of the selected
 * channels (all K when sel is NULL; then a subset is checked against the slow reference). */
static void check_case(test_rng *rng, unsigned K, unsigned D, unsigned P, const float *taps,
                       size_t n_taps, const unsigned *sel, size_t n_sel, size_t n_in) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = P;
  cfg.taps = taps;
  cfg.n_taps = n_taps;
  cfg.select = sel;
  cfg.n_select = n_sel;
  cfg.threads = 1;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return;
  size_t M = 0;
  const float *h = prx_chan_taps(c, &M);
  size_t n_out_ch = prx_chan_n_outputs(c);
  size_t total = prx_chan_output_count(c, n_in);
  size_t cap = total + (M - 1) / D + 2;
  prx_cf32 *x = malloc(n_in * sizeof *x);
  prx_cf32 *y = calloc(n_out_ch * cap, sizeof *y);
  test_fill_cf32(rng, x, n_in, 1.0);
  size_t n1 = 0, n2 = 0;
  CHECK_OK(prx_chan_execute(c, x, n_in, y, cap, &n1));
  CHECK(n1 == (n_in + D - 1) / D, "K=%u D=%u: %zu outputs for %zu samples", K, D, n1, n_in);
  size_t fc = prx_chan_flush_count(c);
  /* flush writes its outputs after the first n1 of each channel: use a second buffer */
  prx_cf32 *yt = calloc(n_out_ch * (fc + 1), sizeof *yt);
  CHECK_OK(prx_chan_flush(c, yt, fc + 1, &n2));
  CHECK(n2 == fc && n1 + n2 == (n_in + M - 1 + D - 1) / D, "K=%u D=%u M=%zu: flush gave %zu", K, D,
        M, n2);
  /* which outputs to compare: all selected, or up to 24 channels of the full set */
  unsigned check_ch[24];
  size_t n_check = 0, idx[24];
  if (sel) {
    for (size_t s = 0; s < n_sel && n_check < 24; s++) {
      check_ch[n_check] = sel[s];
      idx[n_check++] = s;
    }
  } else {
    unsigned fixed[4] = {0, K / 2, K - 1, 1 % K};
    for (int i = 0; i < 4; i++) {
      check_ch[n_check] = fixed[i];
      idx[n_check++] = fixed[i];
    }
    while (n_check < 24 && n_check < K) {
      unsigned k = (unsigned)(test_rng_u64(rng) % K);
      check_ch[n_check] = k;
      idx[n_check++] = k;
    }
  }
  size_t n_all = n1 + n2;
  test_cf64 *ref = malloc(n_check * n_all * sizeof *ref);
  chan_ref(x, n_in, h, M, K, D, check_ch, n_check, 0, n_all, ref);
  prx_cf32 *got = malloc(n_all * sizeof *got);
  double worst = 0;
  for (size_t i = 0; i < n_check; i++) {
    memcpy(got, y + idx[i] * cap, n1 * sizeof *got);
    memcpy(got + n1, yt + idx[i] * (fc + 1), n2 * sizeof *got);
    double e = test_rel_l2_vs_cf64(got, ref + i * n_all, n_all);
    if (e > worst) worst = e;
    CHECK(e <= 1e-5, "K=%u D=%u M=%zu channel %u: rel L2 %.3g", K, D, M, check_ch[i], e);
    /* the flush tail alone, where it has energy */
    if (n2 > 0) {
      double et = test_rel_l2_vs_cf64(got + n1, ref + i * n_all + n1, n2);
      CHECK(et <= 1e-5, "K=%u D=%u M=%zu channel %u: tail rel L2 %.3g", K, D, M, check_ch[i], et);
    }
  }
  printf("K=%-5u D=%-5u M=%-6zu sel=%-5zu n_in=%-6zu outputs=%zu+%zu worst rel L2 %.2e\n", K, D, M,
         n_out_ch, n_in, n1, n2, worst);
  free(x);
  free(y);
  free(yt);
  free(ref);
  free(got);
  prx_chan_destroy(c);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261129);
  const unsigned Ks[] = {2, 6, 128, 1000, 1024};
  const unsigned Ps[] = {16, 8, 4};
  for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
    unsigned K = Ks[ki];
    for (unsigned ratio = 1; ratio <= 2; ratio++) {
      unsigned D = K / ratio;
      for (size_t pi = 0; pi < sizeof Ps / sizeof Ps[0]; pi++) {
        unsigned P = Ps[pi];
        /* input: the filter length plus a few dozen outputs, not a multiple of D */
        size_t n_in = (size_t)K * P + 37 * (size_t)D + (K > 2 ? 3 : 1);
        check_case(&rng, K, D, P, NULL, 0, NULL, 0, n_in);
      }
    }
  }
  /* caller prototypes: odd length, not a multiple of K, and shorter than K */
  const size_t lens[] = {1001, 77, 5};
  const unsigned Kc[] = {128, 6, 1024};
  for (int i = 0; i < 3; i++) {
    size_t Mt = lens[i];
    float *h = malloc(Mt * sizeof *h);
    for (size_t m = 0; m < Mt; m++) h[m] = (float)(test_rng_gauss(&rng) / Mt);
    for (unsigned ratio = 1; ratio <= 2; ratio++)
      check_case(&rng, Kc[i], Kc[i] / ratio, 0, h, Mt, NULL, 0, Mt + 29 * Kc[i] / ratio + 1);
    free(h);
  }
  /* a large K (batches of fewer than 16 outputs, long segments) */
  check_case(&rng, 65536, 32768, 4, NULL, 0, NULL, 0, 65536 * 4 + 5 * 32768 + 9);
  check_case(&rng, 16384, 16384, 3, NULL, 0, NULL, 0, 16384 * 3 + 6 * 16384 - 5);
  /* a channel subset in the caller's order, with a repeat */
  unsigned sel[] = {1023, 5, 512, 0, 5, 700};
  check_case(&rng, 1024, 512, 8, NULL, 0, sel, 6, 1024 * 8 + 20 * 512 + 11);
  /* few channels: computed by a direct DFT instead of the FFT */
  unsigned few[] = {4095, 0, 1234, 2048};
  for (size_t n = 1; n <= 4; n++) {
    check_case(&rng, 4096, 2048, 8, NULL, 0, few, n, 4096 * 8 + 21 * 2048 + 3);
    check_case(&rng, 4096, 4096, 8, NULL, 0, few + 4 - n, n, 4096 * 8 + 21 * 4096 + 3);
  }
  unsigned few2[] = {1, 65535};
  check_case(&rng, 65536, 32768, 4, NULL, 0, few2, 2, 65536 * 4 + 5 * 32768 + 9);
  check_case(&rng, 64, 32, 16, NULL, 0, few2, 1, 64 * 16 + 300 * 32 + 9);
  unsigned sel6[] = {3, 0};
  check_case(&rng, 6, 6, 16, NULL, 0, sel6, 2, 6 * 16 + 50);
  return test_finish("test_chan_ref");
}
