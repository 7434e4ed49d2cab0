/* Aligned, zeroed, overflow-checked allocation. */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* n * size bytes rounded up to the alignment (aligned_alloc wants a multiple of it); 0 on
 * overflow or 0 bytes */
static size_t rounded_bytes(size_t n, size_t size) {
  if (n == 0 || size == 0 || n > SIZE_MAX / size) return 0;
  size_t bytes = n * size, rounded = (bytes + 63) & ~(size_t)63;
  return rounded < bytes ? 0 : rounded;
}

void *prx_alloc_uncleared(size_t n, size_t size) {
  size_t rounded = rounded_bytes(n, size);
  return rounded ? aligned_alloc(64, rounded) : NULL;
}

void *prx_alloc(size_t n, size_t size) {
  size_t rounded = rounded_bytes(n, size);
  void *p = rounded ? aligned_alloc(64, rounded) : NULL;
  if (p) memset(p, 0, rounded);
  return p;
}

void prx_free(void *p) { free(p); }
