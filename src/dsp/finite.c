/* Non-finite samples replaced by 0. The test is on the bits (exponent all ones), so that the
 * counting pass vectorises and costs a fraction of a memory pass; the replacing pass runs only
 * where something was found. */
#include "finite.h"

#include <stdint.h>
#include <string.h>

/* 1 when either component of the sample is NaN or +-inf (exponent bits all ones) */
static inline size_t nonfinite(const prx_cf32 *s) {
  uint32_t u[2];
  memcpy(u, s, sizeof u); /* the bits, without breaking aliasing rules */
  return ((u[0] & 0x7f800000u) == 0x7f800000u) | ((u[1] & 0x7f800000u) == 0x7f800000u);
}

size_t prx_cf32_zero_nonfinite(prx_cf32 *x, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += nonfinite(&x[i]);
  if (!bad) return 0;
  for (size_t i = 0; i < n; i++)
    if (nonfinite(&x[i])) memset(&x[i], 0, sizeof x[i]);
  return bad;
}
