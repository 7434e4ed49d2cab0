/* Bit error rate with pilots at CFO 0, against the pilot thresholds of test_qpsk_ber_slow
 * (theory + 0.25 dB: 1.47e-2, 3.06e-3, 2.79e-4 at Eb/N0 4, 6, 8 dB). At 0 Hz the pilot word's
 * mean is a DC component of the signal that the demodulator's DC removal must not take out of
 * the symbols (test_qpsk_pilot_dc). A 64:8 frame (the word's mean -18.5 dB of the carrier) and a
 * 32:8 frame (-12.6 dB), alone and under a receiver's DC 10 dB above the signal, each at the
 * three Eb/N0 and one of sps 2, 4, 16/3; random phase and timing, a +-50 ppm clock (fixed
 * seeds). Each point counts bits until 2500 errors are expected at the threshold (see
 * test_qpsk_clock_slow); symbols lost or inserted fail the point. Statistical: ~3 s on one
 * core. */
#include "test_qpsk_sig.h"

int main(void) {
  const unsigned frames[2][2] = {{64, 8}, {32, 8}};
  const double spss[] = {2, 4, 16.0 / 3};
  const double ebn0s[] = {4, 6, 8};
  const double bound[] = {1.47e-2, 3.06e-3, 2.79e-4};
  test_rng r;
  test_rng_seed(&r, 1604);
  printf("%-6s %-8s %-5s %5s %9s %7s %10s %9s\n", "frame", "DC", "sps", "Eb/N0", "bits", "errors",
         "BER", "bound");
  for (int fi = 0; fi < 2; fi++)
    for (int dc = 0; dc < 2; dc++)
      for (size_t ei = 0; ei < 3; ei++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.sps = spss[(ei + (size_t)fi + (size_t)dc) % 3];
        tcase_random(&c, &r, 0, 50);
        c.cfo = 0;
        if (dc) {
          double a = sqrt(10.0), ph = 2 * M_PI * test_rng_uniform(&r);
          c.dc_re = a * cos(ph);
          c.dc_im = a * sin(ph);
        }
        c.noise = 1;
        c.esn0_db = ebn0s[ei] + 10 * log10(2.0);
        c.pilot_period = frames[fi][0];
        c.pilot_len = frames[fi][1];
        long e;
        size_t bits;
        if (tcase_ber(&c, (size_t)(2500 / bound[ei]), &e, &bits, NULL)) continue;
        double ber = e >= 0 && bits ? (double)e / (double)bits : 1;
        printf("%2u:%-3u %-8s %-5.3f %5.1f %9zu %7ld %10.3e %9.3e%s\n", frames[fi][0],
               frames[fi][1], dc ? "+10 dB" : "none", c.sps, ebn0s[ei], bits, e, ber, bound[ei],
               e < 0 ? "  COUNT" : (ber > bound[ei] ? "  FAIL" : ""));
        CHECK(e >= 0, "%u:%u DC %d sps %g Eb/N0 %g dB: symbols lost or inserted", frames[fi][0],
              frames[fi][1], dc, c.sps, ebn0s[ei]);
        CHECK(e >= 0 && ber <= bound[ei], "%u:%u DC %d sps %g Eb/N0 %g dB: BER %.3e > %.3e",
              frames[fi][0], frames[fi][1], dc, c.sps, ebn0s[ei], ber, bound[ei]);
      }
  return test_finish("test_qpsk_pilot_dc_slow");
}
