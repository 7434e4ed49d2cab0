/* Non-finite samples (NaN, +-inf) in a cf32 stream: counted and replaced by 0, so that one bad
 * sample cannot spread through a filter into every later output (not installed). */
#ifndef PRX_FINITE_H
#define PRX_FINITE_H

#include "polyrx/core.h"

#include <stddef.h>

/* Replaces every sample of x[0..n-1] with a non-finite component by 0 (both components) and
 * returns how many there were. */
size_t prx_cf32_zero_nonfinite(prx_cf32 *x, size_t n);

#endif
