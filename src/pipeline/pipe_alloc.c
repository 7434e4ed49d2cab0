/* Host buffers for the pipeline: page-locked where a CUDA device will read them (the copies
 * run by DMA at the PCIe rate instead of through the driver's staging buffers), ordinary aligned
 * memory otherwise. The page-locked memory comes from the CUDA module (src/core/cuda_module.h),
 * which alone links the CUDA runtime: the C library calls no CUDA function and runs where the
 * module is absent. A 64-byte header before each buffer records which allocator made it, so the
 * one free function releases both kinds. */
#include "pipeline.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"

#include <stdint.h>

#define HEADER 64 /* keeps the buffer 64-byte aligned */
enum { KIND_PLAIN = 1, KIND_PINNED = 2 };

void *prx_pipe_host_alloc(size_t bytes, int pinned) {
  if (bytes == 0 || bytes > SIZE_MAX - HEADER) return NULL;
  unsigned char *base = NULL;
  int kind = KIND_PLAIN;
  const prx_cuda_module *m = pinned ? prx_cuda_module_get() : NULL;
  if (m && m->host_alloc && (base = m->host_alloc(bytes + HEADER))) kind = KIND_PINNED;
  if (!base) base = prx_alloc(bytes + HEADER, 1);
  if (!base) return NULL;
  *(int *)base = kind;
  return base + HEADER;
}

void prx_pipe_host_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - HEADER;
  if (*(int *)base == KIND_PINNED) {
    const prx_cuda_module *m = prx_cuda_module_get(); /* loaded: it made the buffer */
    if (m && m->host_free) m->host_free(base);
    return;
  }
  prx_free(base);
}
