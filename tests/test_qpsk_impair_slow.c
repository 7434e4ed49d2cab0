/* Bit error rate against theory + 0.25 dB (thresholds of test_qpsk_ber_slow: DE-QPSK 2.90e-2,
 * 6.09e-3, 5.57e-4; pilots 1.47e-2, 3.06e-3, 2.79e-4 at Eb/N0 4, 6, 8 dB) under the impairments
 * of a real capture, each at the three Eb/N0, both ambiguity modes and one of sps 2, 4, 16/3:
 *   - a DC offset 10 dB above the signal power, at a random CFO and at CFO 0 (the carrier sits on
 *     the DC: the DC removal must leave it intact);
 *   - cf32 levels 1e-9 and 1e9 (and 1e10 at 8 dB), where 4th powers of raw samples underflow or
 *     overflow float;
 *   - roll-off 0.2 and 0.5 (the demodulator's matched filter must follow --rolloff);
 *   - integer input (ci16 and cu8) at full scale.
 * Random CFO (up to 0.1 Rs), phase, timing and a +-50 ppm clock (fixed seeds). Each point counts
 * bits until 2500 errors are expected at the threshold (see test_qpsk_clock_slow); symbols lost
 * or inserted fail the point. Statistical: ~15 s on one core. */
#include "test_qpsk_sig.h"

typedef struct {
  const char *name;
  double dc_db; /* DC power over signal power, dB (no DC: -inf) */
  int cfo_zero;
  double scale;
  double rolloff;
  prx_format format;
  double full_scale;
} impairment;

int main(void) {
  const impairment imps[] = {
      {"DC +10 dB", 10, 0, 0, 0, PRX_CF32, 0},
      {"DC +10 dB, CFO 0", 10, 1, 0, 0, PRX_CF32, 0},
      {"level 1e-9", -INFINITY, 0, 1e-9, 0, PRX_CF32, 0},
      {"level 1e9", -INFINITY, 0, 1e9, 0, PRX_CF32, 0},
      {"level 1e10", -INFINITY, 0, 1e10, 0, PRX_CF32, 0},
      {"roll-off 0.2", -INFINITY, 0, 0, 0.2, PRX_CF32, 0},
      {"roll-off 0.5", -INFINITY, 0, 0, 0.5, PRX_CF32, 0},
      /* full scale: the peaks of signal + noise (a few times the RMS) stay inside the range */
      {"ci16 full scale", -INFINITY, 0, 0, 0, PRX_CI16, 32767 / 5.0},
      {"cu8 full scale", -INFINITY, 0, 0, 0, PRX_CU8, 127.5 / 5.0},
  };
  const double spss[] = {2, 4, 16.0 / 3};
  test_rng r;
  test_rng_seed(&r, 1010);
  printf("%-18s %-5s %-12s %5s %9s %7s %10s %9s\n", "case", "sps", "mode", "Eb/N0", "bits",
         "errors", "BER", "bound");
  for (size_t ii = 0; ii < sizeof imps / sizeof imps[0]; ii++) {
    const impairment *im = &imps[ii];
    for (size_t ei = 0; ei < 3; ei++) {
      for (int pilots = 0; pilots < 2; pilots++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.sps = spss[(ii + ei) % 3];
        tcase_random(&c, &r, 0.1, 50);
        if (im->cfo_zero) c.cfo = 0;
        if (isfinite(im->dc_db)) {
          double a = sqrt(pow(10, im->dc_db / 10)), ph = 2 * M_PI * test_rng_uniform(&r);
          c.dc_re = a * cos(ph);
          c.dc_im = a * sin(ph);
        }
        c.scale = im->scale;
        c.rolloff = im->rolloff;
        c.format = im->format;
        c.full_scale = im->full_scale;
        tcase_ber_mode(&c, ei, pilots);
        double bound = tcase_ber_bound(ei, pilots);
        long e;
        size_t bits;
        if (tcase_ber(&c, (size_t)(2500 / bound), &e, &bits, NULL)) continue;
        double ber = e >= 0 && bits ? (double)e / (double)bits : 1;
        printf("%-18s %-5.3f %-12s %5.1f %9zu %7ld %10.3e %9.3e%s\n", im->name, c.sps,
               pilots ? "pilots" : "differential", tcase_ebn0s[ei], bits, e, ber, bound,
               e < 0 ? "  COUNT" : (ber > bound ? "  FAIL" : ""));
        CHECK(e >= 0, "%s sps %g Eb/N0 %g dB: symbols lost or inserted", im->name, c.sps,
              tcase_ebn0s[ei]);
        CHECK(e >= 0 && ber <= bound, "%s sps %g %s Eb/N0 %g dB: BER %.3e > %.3e", im->name, c.sps,
              pilots ? "pilots" : "differential", tcase_ebn0s[ei], ber, bound);
      }
    }
  }
  return test_finish("test_qpsk_impair_slow");
}
