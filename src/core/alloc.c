/* Aligned, zeroed, overflow-checked allocation. */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *prx_alloc(size_t n, size_t size) {
  if (n == 0 || size == 0 || n > SIZE_MAX / size) return NULL;
  size_t bytes = n * size;
  size_t rounded = (bytes + 63) & ~(size_t)63; /* aligned_alloc wants a multiple of the alignment */
  if (rounded < bytes) return NULL;
  void *p = aligned_alloc(64, rounded);
  if (p) memset(p, 0, rounded);
  return p;
}

void prx_free(void *p) { free(p); }
