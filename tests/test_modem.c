/* The QPSK conventions of polyrx/modem.h against their definitions written out here, not taken
 * from the library: the Gray map, the differential rotation and its inverse, and the pilot word,
 * from the PN15 recurrence p[n] = p[n-14] XOR p[n-15] with p[0..14] = 1 (docs/FORMATS.md) and
 * from the first bits and symbols as the documentation lists them. A wrong feedback tap, seed,
 * bit order or bit-to-symbol pairing changes the word and fails here, even though the generator
 * and the demodulator (which share prx_qpsk_pilot) would still agree with each other. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#define PN15_PERIOD 32767
#define PILOT_WORD 16383 /* the longest pilot word: 2 bits a symbol within one period */

static void test_gray_map(void) {
  const float h = (float)(1 / sqrt(2.0));
  for (unsigned b0 = 0; b0 < 2; b0++)
    for (unsigned b1 = 0; b1 < 2; b1++) {
      prx_cf32 s = prx_qpsk_map(b0, b1);
      float want_re = b0 ? -h : h, want_im = b1 ? -h : h; /* ((1 - 2 b0) + j (1 - 2 b1)) / sqrt 2 */
      CHECK(s.re == want_re && s.im == want_im, "map(%u, %u) = %g%+gj", b0, b1, s.re, s.im);
    }
}

/* g(00)=0, g(01)=1, g(11)=2, g(10)=3, and s[n] = s[n-1] j^g: the rotation by g quarter turns of
 * the reference (1 + j)/sqrt(2), decoded back from d[n] conj(d[n-1]). */
static void test_differential(void) {
  static const unsigned want[2][2] = {{0, 1}, {3, 2}}; /* [b0][b1] */
  for (unsigned b0 = 0; b0 < 2; b0++)
    for (unsigned b1 = 0; b1 < 2; b1++) {
      unsigned g = prx_qpsk_diff_rotation(b0, b1), c0 = 9, c1 = 9;
      CHECK(g == want[b0][b1], "g(%u%u) = %u, expected %u", b0, b1, g, want[b0][b1]);
      prx_qpsk_diff_bits(want[b0][b1], &c0, &c1);
      CHECK(c0 == b0 && c1 == b1, "bits of rotation %u: %u%u, expected %u%u", want[b0][b1], c0, c1,
            b0, b1);
      /* prev = (1 + j)/sqrt 2, cur = prev j^g: cur conj(prev) = j^g */
      double a = want[b0][b1] * M_PI / 2, pr = 1 / sqrt(2.0), pi = pr;
      double cr = pr * cos(a) - pi * sin(a), ci = pr * sin(a) + pi * cos(a);
      double dr = cr * pr + ci * pi, di = ci * pr - cr * pi;
      unsigned q = fabs(dr) > fabs(di) ? (dr > 0 ? 0 : 2) : (di > 0 ? 1 : 3);
      CHECK(q == want[b0][b1], "rotation %u: d conj(d-1) in quadrant %u", want[b0][b1], q);
    }
}

static void test_pilot_word(void) {
  /* the recurrence, as an array (no shift register: another construction than the library's) */
  static unsigned char p[PN15_PERIOD + 1];
  for (size_t n = 0; n < 15; n++) p[n] = 1;
  for (size_t n = 15; n <= PN15_PERIOD; n++) p[n] = p[n - 14] ^ p[n - 15];
  /* a maximal-length sequence: period 32767, 16384 ones in a period */
  size_t ones = 0;
  for (size_t n = 0; n < PN15_PERIOD; n++) ones += p[n];
  CHECK(ones == 16384 && p[PN15_PERIOD] == p[0], "PN15: %zu ones in a period", ones);
  /* the first 64 bits and 24 symbols as docs/FORMATS.md lists them */
  const char *bits64 = "1111111111111110000000000000010000000000000110000000000001010000";
  for (size_t n = 0; n < 64; n++)
    CHECK(p[n] == (unsigned char)(bits64[n] - '0'), "PN15 bit %zu: recurrence %u, documented %c", n,
          p[n], bits64[n]);
  const char *signs = "-- -- -- -- -- -- -- -+ ++ ++ ++ ++ ++ ++ +- ++ ++ ++ ++ ++ ++ +- -+ ++";
  for (size_t i = 0; i < 24; i++) {
    prx_cf32 s = prx_qpsk_pilot(i);
    char re = s.re < 0 ? '-' : '+', im = s.im < 0 ? '-' : '+';
    CHECK(re == signs[3 * i] && im == signs[3 * i + 1] &&
              fabsf(fabsf(s.re) - 0.70710678f) < 1e-7f && fabsf(fabsf(s.im) - 0.70710678f) < 1e-7f,
          "pilot %zu: %g%+gj, documented %c%c", i, s.re, s.im, signs[3 * i], signs[3 * i + 1]);
  }
  /* every symbol of the longest word: symbol i carries bits 2i and 2i + 1 */
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < PILOT_WORD; i++) {
    prx_cf32 s = prx_qpsk_pilot(i);
    unsigned b0 = s.re < 0, b1 = s.im < 0;
    if (b0 != p[2 * i] || b1 != p[2 * i + 1]) {
      if (!wrong) first = i;
      wrong++;
    }
  }
  CHECK(wrong == 0, "%zu of %d pilot symbols differ from the PN15 definition (first: %zu)", wrong,
        PILOT_WORD, first);
}

int main(void) {
  test_gray_map();
  test_differential();
  test_pilot_word();
  return test_finish("test_modem");
}
