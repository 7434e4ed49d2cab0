/* Inline per-sample conversion to cf32, for use inside hot loops (no extra pass). */
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

#endif
