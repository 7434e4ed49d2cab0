/* Host buffers for the pipeline: page-locked where a CUDA device will read them (the copies
 * run by DMA at the PCIe rate instead of through the driver's staging buffers), ordinary aligned
 * memory otherwise. The page-locked memory comes from the CUDA module (src/core/cuda_module.h),
 * which alone links the CUDA runtime: the C library calls no CUDA function and runs where the
 * module is absent. A 64-byte header before each buffer records which allocator made it and its
 * size, so the one free function releases both kinds, and a process that runs many commands
 * (prx_pipe_host_cache) keeps freed page-locked buffers for the next run of the same sizes. */
#include "pipeline.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"

#include <pthread.h>
#include <stdint.h>

#define HEADER 64 /* keeps the buffer 64-byte aligned */
enum { KIND_PLAIN = 1, KIND_PINNED = 2 };
typedef struct {
  int kind;
  size_t bytes; /* as asked */
} header;

/* the cache: freed page-locked buffers (their bases), oldest first */
#define CACHE_SLOTS 64
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *cache_base[CACHE_SLOTS];
static size_t cache_n, cache_bytes, cache_max;
static unsigned long long cache_hits;

static void pinned_free(unsigned char *base) {
  const prx_cuda_module *m = prx_cuda_module_get(); /* loaded: it made the buffer */
  if (m && m->host_free) m->host_free(base);
}

static size_t size_of(const unsigned char *base) { return ((const header *)base)->bytes; }

/* Takes the cached buffer of that size, NULL where none. */
static unsigned char *cache_take(size_t bytes) {
  unsigned char *base = NULL;
  pthread_mutex_lock(&cache_mu);
  for (size_t i = 0; i < cache_n; i++) {
    if (size_of(cache_base[i]) != bytes) continue;
    base = cache_base[i];
    for (size_t j = i + 1; j < cache_n; j++) cache_base[j - 1] = cache_base[j];
    cache_n--;
    cache_bytes -= bytes;
    cache_hits++;
    break;
  }
  pthread_mutex_unlock(&cache_mu);
  return base;
}

/* Keeps a freed page-locked buffer: 1 if kept, 0 if the caller frees it. The oldest buffers
 * make room for it (freed outside the lock). */
static int cache_keep(unsigned char *base) {
  size_t bytes = size_of(base);
  unsigned char *evict[CACHE_SLOTS];
  size_t n_evict = 0;
  int kept = 0;
  pthread_mutex_lock(&cache_mu);
  if (bytes <= cache_max) {
    while (cache_n > 0 && (cache_n == CACHE_SLOTS || cache_bytes + bytes > cache_max)) {
      evict[n_evict++] = cache_base[0];
      cache_bytes -= size_of(cache_base[0]);
      for (size_t j = 1; j < cache_n; j++) cache_base[j - 1] = cache_base[j];
      cache_n--;
    }
    cache_base[cache_n++] = base;
    cache_bytes += bytes;
    kept = 1;
  }
  pthread_mutex_unlock(&cache_mu);
  for (size_t i = 0; i < n_evict; i++) pinned_free(evict[i]);
  return kept;
}

void prx_pipe_host_cache(size_t max_bytes) {
  pthread_mutex_lock(&cache_mu);
  cache_max = max_bytes;
  pthread_mutex_unlock(&cache_mu);
  if (max_bytes > 0) return;
  unsigned char *base;
  for (;;) { /* off: everything held is freed */
    pthread_mutex_lock(&cache_mu);
    base = cache_n ? cache_base[--cache_n] : NULL;
    if (base) cache_bytes -= size_of(base);
    pthread_mutex_unlock(&cache_mu);
    if (!base) break;
    pinned_free(base);
  }
}

void prx_pipe_host_cache_stats(size_t *buffers, size_t *bytes, unsigned long long *hits) {
  pthread_mutex_lock(&cache_mu);
  *buffers = cache_n;
  *bytes = cache_bytes;
  *hits = cache_hits;
  pthread_mutex_unlock(&cache_mu);
}

void *prx_pipe_host_alloc(size_t bytes, int pinned) {
  if (bytes == 0 || bytes > SIZE_MAX - HEADER) return NULL;
  unsigned char *base = NULL;
  int kind = KIND_PLAIN;
  const prx_cuda_module *m = pinned ? prx_cuda_module_get() : NULL;
  if (m && m->host_alloc && ((base = cache_take(bytes)) || (base = m->host_alloc(bytes + HEADER))))
    kind = KIND_PINNED;
  /* plain memory is not cleared (neither is page-locked memory): its pages are first touched
   * by the stage that writes them, on its own thread, instead of all at once on the caller's */
  if (!base) base = prx_alloc_uncleared(bytes + HEADER, 1);
  if (!base) return NULL;
  ((header *)base)->kind = kind;
  ((header *)base)->bytes = bytes;
  return base + HEADER;
}

void prx_pipe_host_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - HEADER;
  if (((header *)base)->kind == KIND_PINNED) {
    if (!cache_keep(base)) pinned_free(base);
    return;
  }
  prx_free(base);
}
