/* The receiver at the DE-QPSK BER thresholds of Eb/N0 4, 6 and 8 dB (2.90e-2, 6.09e-3,
 * 5.57e-4) with about 100k bits per carrier: each level on a channel centre, a quarter and half
 * way between centres and near a band edge, with CFOs and clock offsets; the errors of the four
 * carriers of a level pooled against its threshold, and every carrier with exactly the symbols
 * sent. */
#include "test_rx_scene.h"

#define FS 409600.0
#define KCH 64
#define SP (FS / KCH)

int main(void) {
  scene s;
  memset(&s, 0, sizeof s);
  s.fs = FS;
  s.K = KCH;
  const double ebn0[3] = {4, 6, 8}, thr[3] = {2.90e-2, 6.09e-3, 5.57e-4};
  const double where[3] = {0, 0.25, 0.5}; /* fraction of a spacing off the centre */
  test_rng r;
  test_rng_seed(&r, 2026);
  /* carrier 0 sets the noise: a strong one, also checked */
  scene_add(&s, -2 * SP, 30, 30, 100, 0.5, 0.35, 0);
  for (int l = 0; l < 3; l++)
    for (int w = 0; w < 4; w++) {
      /* w = 3: near the edges, -31.6 and +31.6 spacings (fs/2 = 32) and +30.5 */
      static const double edge[3] = {-31.6, 31.6, 30.5};
      double f = (w == 3 ? edge[l] : -28 + 8 * (4 * l + w) % 56 + 3 * l + where[w]) * SP;
      double cfo = (test_rng_uniform(&r) - 0.5) * 0.2 * 2400;
      double ppm = (test_rng_uniform(&r) - 0.5) * 1000;
      scene_add(&s, f, cfo, ebn0[l] + 10 * log10(2), ppm, 0.9 * test_rng_uniform(&r), 0.35, 0);
    }
  CHECK(scene_make(&s, (size_t)(21.0 * FS), 77) == 0, "scene");
  collect k;
  memset(&k, 0, sizeof k);
  prx_rx_config rc = scene_rx_config(&s, &k);
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "receive");
  long err[3] = {0};
  size_t bits[3] = {0};
  CHECK(scene_errors(&s, &k, 0) == 0, "strong carrier: %ld errors", scene_errors(&s, &k, 0));
  for (size_t c = 1; c < s.n_car; c++) {
    long e = scene_errors(&s, &k, c);
    int l = (int)(c - 1) / 4;
    CHECK(e >= 0, "carrier %zu: %zu bits out, %zu sent", c, k.nbits[c], s.nref[c]);
    printf("carrier %2zu: f %+9.1f Hz, Eb/N0 %.0f dB, CFO %+6.1f Hz, clock %+5.0f ppm: %ld errors "
           "in %zu bits\n",
           c, s.rx[c].freq, ebn0[l], s.sim[c].freq - s.rx[c].freq, s.sim[c].clock_ppm, e,
           k.nbits[c]);
    if (e < 0) continue;
    err[l] += e;
    bits[l] += k.nbits[c] - 2;
  }
  for (int l = 0; l < 3; l++) {
    double ber = bits[l] ? (double)err[l] / (double)bits[l] : 1;
    printf("Eb/N0 %.0f dB: BER %.3g over %zu bits (threshold %.3g)\n", ebn0[l], ber, bits[l],
           thr[l]);
    CHECK(ber <= thr[l], "Eb/N0 %.0f dB: BER %.3g over the threshold %.3g", ebn0[l], ber, thr[l]);
  }
  collect_free(&k);
  scene_free(&s);
  return test_finish("test_rx_slow");
}
