/* Conversion of the input formats to cf32: per sample (inline, for loops that convert as they
 * read) and per block (prx_convert_block, the one conversion switch that the channelizer's CPU
 * path, the demodulator and prx_convert_to_cf32 share). */
#ifndef PRX_CONVERT_H
#define PRX_CONVERT_H

#include "polyrx/core.h"

#include <stdint.h>

static inline prx_cf32 prx_sample_cf32(const void *in, size_t i) {
  return ((const prx_cf32 *)in)[i];
}
static inline prx_cf32 prx_sample_ci16(const void *in, size_t i) {
  const int16_t *s = (const int16_t *)in + 2 * i;
  prx_cf32 r = {s[0] * (1.0f / 32768.0f), s[1] * (1.0f / 32768.0f)};
  return r;
}
static inline prx_cf32 prx_sample_ci8(const void *in, size_t i) {
  const int8_t *s = (const int8_t *)in + 2 * i;
  prx_cf32 r = {s[0] * (1.0f / 128.0f), s[1] * (1.0f / 128.0f)};
  return r;
}
static inline prx_cf32 prx_sample_cu8(const void *in, size_t i) {
  const uint8_t *s = (const uint8_t *)in + 2 * i;
  prx_cf32 r = {(s[0] - 127.5f) * (1.0f / 127.5f), (s[1] - 127.5f) * (1.0f / 127.5f)};
  return r;
}

/* Converts n samples of format f (cf32, ci16, ci8 or cu8) to cf32; any other format gives zeros.
 * cf32 is copied as it is (non-finite values included). */
void prx_convert_block(prx_format f, const void *in, size_t n, prx_cf32 *out);

#endif
