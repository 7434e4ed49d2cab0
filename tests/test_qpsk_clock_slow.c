/* Bit error rate against theory + 0.25 dB under symbol-clock offsets of -1000, -500, +500 and
 * +1000 ppm (the cases) and -4000 / +4000 ppm (near the edge of the supported +-5000 ppm),
 * at Eb/N0 4, 6 and 8 dB, sps 2, 4 and 16/3, differential and pilots, with a random CFO up to
 * 0.1 Rs, random phase and timing (fixed seeds). Thresholds as test_qpsk_ber_slow:
 *   DE-QPSK (differential)  2.90e-2, 6.09e-3, 5.57e-4;   pilots (coherent)  1.47e-2, 3.06e-3,
 *   2.79e-4.
 * Each point counts bits until 2500 errors are expected at the threshold (about 1800 at theory,
 * 15 sigma of the binomial count below the threshold's 2500: a demodulator at theory passes
 * every time, one 0.25 dB worse fails half the time, 0.5 dB worse always). Symbols lost or
 * inserted (a timing slip) fail the point outright. Statistical: ~10 s on one core. */
#include "test_qpsk_sig.h"

int main(void) {
  const double ppms[] = {-1000, -500, 500, 1000, -4000, 4000};
  const double spss[] = {2, 4, 16.0 / 3};
  test_rng r;
  test_rng_seed(&r, 1000);
  printf("%-6s %-5s %-12s %5s %9s %7s %10s %9s\n", "ppm", "sps", "mode", "Eb/N0", "bits", "errors",
         "BER", "bound");
  for (size_t pi = 0; pi < sizeof ppms / sizeof ppms[0]; pi++) {
    for (size_t ei = 0; ei < 3; ei++) {
      for (int pilots = 0; pilots < 2; pilots++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.sps = spss[(pi + ei) % 3]; /* every sps meets every offset sign and Eb/N0 */
        tcase_random(&c, &r, 0.1, 0);
        c.ppm = ppms[pi];
        tcase_ber_mode(&c, ei, pilots);
        double bound = tcase_ber_bound(ei, pilots);
        long e;
        size_t bits;
        prx_qpsk_stats st;
        if (tcase_ber(&c, (size_t)(2500 / bound), &e, &bits, &st)) continue;
        double ber = e >= 0 && bits ? (double)e / (double)bits : 1;
        printf("%+6.0f %-5.3f %-12s %5.1f %9zu %7ld %10.3e %9.3e  (clock %+.1f ppm)%s\n", c.ppm,
               c.sps, pilots ? "pilots" : "differential", tcase_ebn0s[ei], bits, e, ber, bound,
               st.clock_ppm, e < 0 ? "  COUNT" : (ber > bound ? "  FAIL" : ""));
        CHECK(e >= 0, "%+g ppm sps %g Eb/N0 %g dB: symbols lost or inserted", c.ppm, c.sps,
              tcase_ebn0s[ei]);
        CHECK(e >= 0 && ber <= bound, "%+g ppm sps %g %s Eb/N0 %g dB: BER %.3e > %.3e", c.ppm,
              c.sps, pilots ? "pilots" : "differential", tcase_ebn0s[ei], ber, bound);
        /* the summary's clock offset: the O&M slope over ~1e5 symbols is good to a few ppm */
        CHECK(fabs(st.clock_ppm - c.ppm) < 5, "%+g ppm: summary says %+.2f ppm", c.ppm,
              st.clock_ppm);
        CHECK(st.warnings == 0, "%+g ppm: warnings %#x in range", c.ppm, st.warnings);
      }
    }
  }
  return test_finish("test_qpsk_clock_slow");
}
