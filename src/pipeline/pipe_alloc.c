/* Host buffers for the pipeline: page-locked where a CUDA device will read them (the copies
 * run by DMA at the PCIe rate instead of through the driver's staging buffers), ordinary aligned
 * memory otherwise. CUDA is called only in builds with the CUDA backend (PRX_HAVE_CUDA); the C
 * library without it takes the prx_alloc path. A 64-byte header before each buffer records which
 * allocator made it, so the one free function releases both kinds. */
#include "pipeline.h"

#include "../core/internal.h"

#include <stdint.h>

#ifdef PRX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define HEADER 64 /* keeps the buffer 64-byte aligned */
enum { KIND_PLAIN = 1, KIND_PINNED = 2 };

void *prx_pipe_host_alloc(size_t bytes, int pinned) {
  if (bytes == 0 || bytes > SIZE_MAX - HEADER) return NULL;
  unsigned char *base = NULL;
  int kind = KIND_PLAIN;
#ifdef PRX_HAVE_CUDA
  if (pinned && prx_cuda_available()) {
    void *b = NULL;
    if (cudaHostAlloc(&b, bytes + HEADER, cudaHostAllocPortable) == cudaSuccess) {
      base = b;
      kind = KIND_PINNED;
    } else {
      cudaGetLastError(); /* too much locked memory: fall back to pageable */
    }
  }
#else
  (void)pinned;
#endif
  if (!base) base = prx_alloc(bytes + HEADER, 1);
  if (!base) return NULL;
  *(int *)base = kind;
  return base + HEADER;
}

void prx_pipe_host_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - HEADER;
#ifdef PRX_HAVE_CUDA
  if (*(int *)base == KIND_PINNED) {
    cudaFreeHost(base);
    return;
  }
#endif
  prx_free(base);
}
