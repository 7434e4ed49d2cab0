/* Stored sample values to float: the integer and float types of WAV files and SigMF datatypes
 * polyrx has no prx_format for (PCM 24 and 32, float 64, real streams' 8 and 16 bits), each in
 * one plain loop the compiler vectorises. Integers scale to [-1, 1) (v / 2^(bits - 1)); 8-bit
 * unsigned values are rtl-sdr's offset binary, (v - 127.5) / 127.5. */
#include "io_internal.h"

#include <string.h>

/* n big-endian values of t: each one's bytes reversed into a little-endian copy, in chunks */
static void big_endian_to_float(const prx_stored *t, const unsigned char *s, size_t n, float *out) {
  enum { CHUNK = 256 };
  unsigned char le[CHUNK * 8];
  const size_t w = (size_t)t->bits / 8;
  prx_stored lt = *t;
  lt.big_endian = 0;
  for (size_t k0 = 0; k0 < n; k0 += CHUNK) {
    const size_t m = n - k0 < CHUNK ? n - k0 : CHUNK;
    for (size_t k = 0; k < m; k++)
      for (size_t b = 0; b < w; b++) le[k * w + b] = s[(k0 + k) * w + w - 1 - b];
    prx_stored_to_float(&lt, le, m, out + k0);
  }
}

void prx_stored_to_float(const prx_stored *t, const void *in, size_t n, float *out) {
  const unsigned char *s = in;
  if (t->big_endian && t->bits > 8) {
    big_endian_to_float(t, s, n, out);
    return;
  }
  if (t->is_float && t->bits == 64) {
    for (size_t k = 0; k < n; k++) {
      uint64_t u = prx_le64(s + 8 * k);
      double d;
      memcpy(&d, &u, 8);
      out[k] = (float)d;
    }
  } else if (t->is_float) { /* 32 */
    for (size_t k = 0; k < n; k++) {
      uint32_t u = prx_le32(s + 4 * k);
      memcpy(&out[k], &u, 4);
    }
  } else if (t->bits == 8 && t->is_unsigned) {
    for (size_t k = 0; k < n; k++) out[k] = ((float)s[k] - 127.5f) * (1.0f / 127.5f);
  } else if (t->bits == 8) {
    for (size_t k = 0; k < n; k++) out[k] = (float)(int8_t)s[k] * (1.0f / 128);
  } else if (t->bits == 16) {
    for (size_t k = 0; k < n; k++)
      out[k] = (float)(int16_t)(uint16_t)(s[2 * k] | s[2 * k + 1] << 8) * (1.0f / 32768);
  } else if (t->bits == 24) {
    /* the three bytes in the top of an int32, times 2^-31 (a power of two: the one rounding
     * is int32 to float, exact for 24 bits) */
    for (size_t k = 0; k < n; k++) {
      const unsigned char *p = s + 3 * k;
      uint32_t u = (uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24;
      out[k] = (float)(int32_t)u * 0x1p-31f;
    }
  } else if (t->value_bits) { /* fewer value bits in 32 (SDRangel's 24): 2^-(bits - 1) */
    const float scale = 1.0f / (float)(1u << (t->value_bits - 1));
    for (size_t k = 0; k < n; k++) out[k] = (float)(int32_t)prx_le32(s + 4 * k) * scale;
  } else { /* 32 */
    for (size_t k = 0; k < n; k++) out[k] = (float)(int32_t)prx_le32(s + 4 * k) * 0x1p-31f;
  }
}
