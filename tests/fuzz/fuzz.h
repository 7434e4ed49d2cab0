/* Shared by the fuzz targets (tests/fuzz/fuzz_*.c): the libFuzzer entry point, invariant checks
 * that abort (libFuzzer and the regression driver both report an abort as a failure, with the
 * input), and a reader that turns the fuzzer's bytes into field values: mostly values in a sane
 * range (so that deep code is reached), sometimes special or raw ones (0, -0, NaN, inf, DBL_MAX,
 * denormals, UINT_MAX, any bit pattern), so that the checks see absurd values too. Past the end
 * of the input every read gives 0, so any input decodes to something. */
#ifndef PRX_FUZZ_H
#define PRX_FUZZ_H

#include "polyrx.h"

#include "core/internal.h" /* prx_fail, to clear the last error */

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant: prints what failed and aborts (the driver then saves the input). */
#define FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond);        \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

/* A failed call must say so properly: an error status of the enum and a message. */
#define FUZZ_CHECK_ERROR(st, what)                                                                 \
  FUZZ_CHECK((st) < 0 && (st) > PRX_ERR_INTERNAL && prx_last_error()[0] != '\0',                   \
             "%s failed without a proper error: status %d (%s), message \"%s\"", what, (int)(st),  \
             prx_strerror(st), prx_last_error())

/* Clears this thread's last error, so that a failure must write a fresh message. */
static inline void fuzz_clear_error(void) { (void)prx_fail(PRX_OK, "%s", ""); }

typedef struct {
  const uint8_t *p;
  size_t n;
} fuzz_bytes;

static inline uint8_t fuzz_u8(fuzz_bytes *b) {
  if (!b->n) return 0;
  b->n--;
  return *b->p++;
}
static inline uint16_t fuzz_u16(fuzz_bytes *b) {
  uint16_t lo = fuzz_u8(b);
  return (uint16_t)(lo | (uint16_t)fuzz_u8(b) << 8);
}
static inline uint32_t fuzz_u32(fuzz_bytes *b) {
  uint32_t lo = fuzz_u16(b);
  return lo | (uint32_t)fuzz_u16(b) << 16;
}
static inline uint64_t fuzz_u64(fuzz_bytes *b) {
  uint64_t lo = fuzz_u32(b);
  return lo | (uint64_t)fuzz_u32(b) << 32;
}
/* n floats equal bit for bit, or both NaN (which NaN a conversion gives is the code path's:
 * vector and scalar loops may differ in the payload) */
static inline int fuzz_same_floats(const float *x, const float *y, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&x[i], &y[i], sizeof *x) && !(isnan(x[i]) && isnan(y[i]))) return 0;
  return 1;
}

/* A double from 8 raw bytes: any bit pattern, NaNs and infinities included. */
static inline double fuzz_raw_double(fuzz_bytes *b) {
  uint64_t u = fuzz_u64(b);
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* A double: usually in [lo, hi]; 1 time in 16 a special value, 1 in 16 any bit pattern. */
static inline double fuzz_double(fuzz_bytes *b, double lo, double hi) {
  static const double special[16] = {0.0,      -0.0,       NAN,      INFINITY, -INFINITY, DBL_MAX,
                                     -DBL_MAX, DBL_MIN,    4.9e-324, 1e300,    -1e300,    -1.0,
                                     1e-300,   0.49999999, 0.5,      2.0};
  uint8_t sel = fuzz_u8(b);
  if (sel < 16) return special[fuzz_u8(b) % 16];
  if (sel < 32) return fuzz_raw_double(b);
  return lo + (hi - lo) * (fuzz_u16(b) / 65535.0);
}

/* An unsigned: usually in [lo, hi]; 1 time in 16 a special value, 1 in 16 any 32-bit value. */
static inline unsigned fuzz_uint(fuzz_bytes *b, unsigned lo, unsigned hi) {
  static const unsigned special[8] = {0, 1, 2, 3, 0x7fffffffu, 0x80000000u, 0xffffffffu, 1u << 22};
  uint8_t sel = fuzz_u8(b);
  if (sel < 16) return special[fuzz_u8(b) % 8];
  if (sel < 32) return fuzz_u32(b);
  return lo + (unsigned)(fuzz_u32(b) % ((uint64_t)hi - lo + 1));
}

/* An int: usually in [lo, hi]; 1 time in 16 a special value, 1 in 16 any 32-bit value. */
static inline int fuzz_int(fuzz_bytes *b, int lo, int hi) {
  static const int special[8] = {0, 1, -1, 2, 1024, 1025, INT32_MIN, INT32_MAX};
  uint8_t sel = fuzz_u8(b);
  if (sel < 16) return special[fuzz_u8(b) % 8];
  if (sel < 32) return (int)fuzz_u32(b);
  return lo + (int)(fuzz_u32(b) % ((uint64_t)((int64_t)hi - lo + 1)));
}

#endif
