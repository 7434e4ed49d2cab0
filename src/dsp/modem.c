/* QPSK mapping, differential rotation and the pilot word (see polyrx/modem.h). */
#include "polyrx/modem.h"

#include <stdint.h>

#define PRX_SQRT1_2 0.70710678118654752440f

prx_cf32 prx_qpsk_map(unsigned b0, unsigned b1) {
  prx_cf32 s = {(b0 & 1) ? -PRX_SQRT1_2 : PRX_SQRT1_2, (b1 & 1) ? -PRX_SQRT1_2 : PRX_SQRT1_2};
  return s;
}

/* g(00)=0, g(01)=1, g(11)=2, g(10)=3: a Gray code over the quarter turns */
unsigned prx_qpsk_diff_rotation(unsigned b0, unsigned b1) {
  static const unsigned g[4] = {0, 1, 3, 2}; /* indexed by b0*2 + b1 */
  return g[((b0 & 1) << 1) | (b1 & 1)];
}

void prx_qpsk_diff_bits(unsigned g, unsigned *b0, unsigned *b1) {
  static const unsigned char bits[4][2] = {{0, 0}, {0, 1}, {1, 1}, {1, 0}};
  *b0 = bits[g & 3][0];
  *b1 = bits[g & 3][1];
}

/* Bit n of PN15 (x^15 + x^14 + 1, Fibonacci form, all-ones seed); period 32767. */
static unsigned pn15_bit(size_t n) {
  n %= 32767;
  uint32_t r = 0x7fff;
  unsigned out = 0;
  for (size_t k = 0; k <= n; k++) {
    out = r & 1;
    unsigned fb = ((r >> 0) ^ (r >> 1)) & 1;
    r = (r >> 1) | (fb << 14);
  }
  return out;
}

prx_cf32 prx_qpsk_pilot(size_t i) { return prx_qpsk_map(pn15_bit(2 * i), pn15_bit(2 * i + 1)); }
