/* The receiver at the DE-QPSK BER thresholds of Eb/N0 4, 6 and 8 dB (2.90e-2, 6.09e-3,
 * 5.57e-4) with about 100k bits per carrier: each level on a channel centre, a quarter and half
 * way between centres and near a band edge, with CFOs and clock offsets; the errors of the four
 * carriers of a level pooled against its threshold, and every carrier with exactly the symbols
 * sent; the widest carriers allowed (0.6 spacing) half way between centres with a CFO of 0.12 rs
 * at Eb/N0 6 dB too. */
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
  /* the widest carrier allowed (rs (1 + 0.35) = 0.6 spacing), half way between centres with a
   * CFO of 0.12 rs outwards: its band reaches 0.85 spacing from its channel's centre */
  const double rs_wide = 0.6 * SP / 1.35;
  for (int side = -1; side <= 1; side += 2) {
    scene_add(&s, side * 9.5 * SP, side * 0.12 * rs_wide, 6 + 10 * log10(2), 0, 0.3, 0.35, 0);
    s.sim[s.n_car - 1].symbol_rate = s.rx[s.n_car - 1].symbol_rate = rs_wide;
    s.sim[s.n_car - 1].power_db += 10 * log10(rs_wide / 2400); /* the same Es/N0 at its rate */
  }
  CHECK(scene_make(&s, (size_t)(21.0 * FS), 77) == 0, "scene");
  collect k;
  memset(&k, 0, sizeof k);
  prx_rx_config rc = scene_rx_config(&s, &k);
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "receive");
  long err[4] = {0}; /* Eb/N0 4, 6, 8 dB, and the widest carriers at 6 dB */
  size_t bits[4] = {0};
  CHECK(scene_errors(&s, &k, 0) == 0, "strong carrier: %ld errors", scene_errors(&s, &k, 0));
  for (size_t c = 1; c < s.n_car; c++) {
    long e = scene_errors(&s, &k, c);
    int l = c <= 12 ? (int)(c - 1) / 4 : 3;
    CHECK(e >= 0, "carrier %zu: %zu bits out, %zu sent", c, k.nbits[c], s.nref[c]);
    printf("carrier %2zu: f %+9.1f Hz, Eb/N0 %.0f dB, CFO %+6.1f Hz, clock %+5.0f ppm: %ld errors "
           "in %zu bits\n",
           c, s.rx[c].freq, ebn0[l < 3 ? l : 1], s.sim[c].freq - s.rx[c].freq, s.sim[c].clock_ppm,
           e, k.nbits[c]);
    if (e < 0) continue;
    err[l] += e;
    bits[l] += k.nbits[c] - 2;
  }
  for (int l = 0; l < 4; l++) {
    int t = l < 3 ? l : 1;
    double ber = bits[l] ? (double)err[l] / (double)bits[l] : 1;
    printf("Eb/N0 %.0f dB%s: BER %.3g over %zu bits (threshold %.3g)\n", ebn0[t],
           l == 3 ? " (widest carriers)" : "", ber, bits[l], thr[t]);
    CHECK(ber <= thr[t], "Eb/N0 %.0f dB%s: BER %.3g over the threshold %.3g", ebn0[t],
          l == 3 ? " (widest carriers)" : "", ber, thr[t]);
  }
  collect_free(&k);
  scene_free(&s);
  return test_finish("test_rx_slow");
}
