/* Non-finite samples replaced by 0. A float is NaN or infinite when its exponent bits are all
 * ones, i.e. when its bits shifted left by one (the sign dropped) are at least 0xff000000. The
 * first pass only takes the maximum of that over the components (a vectorised max reduction, a
 * fraction of a memory pass); the replacing pass runs only where something was found. */
#include "finite.h"

#include <stdint.h>
#include <string.h>

#define NONFINITE_SHIFTED 0xff000000u

/* the bits of a float, shifted left by one */
static inline uint32_t shifted_bits(const float *f) {
  uint32_t u;
  memcpy(&u, f, sizeof u); /* the bits, without breaking aliasing rules */
  return u << 1;
}

size_t prx_cf32_zero_nonfinite(prx_cf32 *x, size_t n) {
  const float *f = (const float *)(const void *)x;
  uint32_t top = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    uint32_t u = shifted_bits(&f[i]);
    top = u > top ? u : top;
  }
  if (top < NONFINITE_SHIFTED) return 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (shifted_bits(&x[i].re) >= NONFINITE_SHIFTED ||
        shifted_bits(&x[i].im) >= NONFINITE_SHIFTED) {
      memset(&x[i], 0, sizeof x[i]);
      bad++;
    }
  return bad;
}
