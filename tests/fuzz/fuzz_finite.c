/* Fuzz target: the non-finite filter of the cf32 input (src/dsp/finite.c,
 * prx_cf32_zero_nonfinite) on any bit patterns.
 *
 * Input: the bytes as float32 pairs (a trailing partial sample is dropped); byte 0 also picks an
 * offset of 0..3 samples into the array, so that the start is not always aligned.
 *
 * Oracle, from src/dsp/finite.h with isfinite() of the C library as the definition: the count
 * is the number of samples with a component that is not finite; each such sample becomes
 * exactly (+0, +0); every other sample keeps its bits; a second call finds nothing. */
#include "fuzz.h"

#include "dsp/finite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = size ? data[0] % 4 : 0, n = size / sizeof(prx_cf32);
  prx_cf32 *x = malloc((n + off + 1) * sizeof *x), *orig = malloc((n + 1) * sizeof *orig);
  FUZZ_CHECK(x && orig, "out of memory");
  memcpy(orig, data, n * sizeof *orig);
  memcpy(x + off, data, n * sizeof *orig);
  size_t expect = 0;
  for (size_t i = 0; i < n; i++) expect += !isfinite(orig[i].re) || !isfinite(orig[i].im);
  size_t got = prx_cf32_zero_nonfinite(x + off, n);
  FUZZ_CHECK(got == expect, "%zu non-finite samples counted, %zu there", got, expect);
  for (size_t i = 0; i < n; i++) {
    const prx_cf32 *y = &x[off + i];
    if (!isfinite(orig[i].re) || !isfinite(orig[i].im)) {
      static const prx_cf32 zero = {0.0f, 0.0f};
      FUZZ_CHECK(!memcmp(y, &zero, sizeof zero), "sample %zu not replaced by +0", i);
    } else {
      FUZZ_CHECK(!memcmp(y, &orig[i], sizeof *y), "finite sample %zu changed", i);
    }
  }
  FUZZ_CHECK(prx_cf32_zero_nonfinite(x + off, n) == 0, "a second pass found non-finite samples");
  free(x);
  free(orig);
  return 0;
}
