/* The CUDA module's side of cuda_module.h: the exported table, the device count, and the
 * library services the backends call under their usual names (prx_fail, prx_format_size),
 * forwarded to the library that loaded the module. Every other symbol of the module is local
 * (cmake/polyrx_cuda.map). */
extern "C" {
#include "cuda_module.h"

#include "../chan/chan_cuda.h"
#include "../qpsk/qpsk_bank_internal.h"
#include "../qpsk/qpsk_serial.h"
#include "../qpsk/qpsk_stages_cuda.h"
#include "internal.h"
}

#include "cuda_module_services.cuh"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PRX_STR_(x) #x
#define PRX_STR(x) PRX_STR_(x)
#define PRX_VERSION_TEXT                                                                           \
  PRX_STR(PRX_VERSION_MAJOR) "." PRX_STR(PRX_VERSION_MINOR) "." PRX_STR(PRX_VERSION_PATCH)

static int init(const prx_cuda_host *h, char *why, size_t why_size) {
  module_services_take(h);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, why_size, "%s (CUDA runtime %d.%d)", cudaGetErrorString(e), CUDART_VERSION / 1000,
             CUDART_VERSION % 1000 / 10);
    cudaGetLastError(); /* clear the sticky error */
    return 0;
  }
  if (n <= 0) snprintf(why, why_size, "the CUDA runtime found no device");
  return n;
}

/* Page-locked host memory. cudaHostAlloc makes it at ~0.4 ms a MiB on the H200's host (the
 * driver locks and maps 4 KiB pages one by one), the largest part of a command's buffers' making
 * (bench/RESULTS.md, seventeenth session). Memory mapped in 2 MiB huge pages, faulted in by the
 * caller's thread and then registered with cudaHostRegister costs the pages' zeroing and ~0.035
 * ms a MiB (a command's buffers: 37-46 ms -> 15-18 ms): so that is tried first, and
 * cudaHostAlloc where it fails (no huge pages or mapping refused: the registration of 4 KiB
 * pages would then cost what cudaHostAlloc does) or where POLYRX_PINNED=alloc asks for it (the
 * A/B). The registered mappings are listed, so that host_free knows which release a pointer
 * takes. */
#define HUGE_BYTES ((size_t)2 << 20)
typedef struct mapped_block {
  void *p;
  size_t len;
  struct mapped_block *next;
} mapped_block;
static pthread_mutex_t mapped_mu = PTHREAD_MUTEX_INITIALIZER;
static mapped_block *mapped_list;

static int mapped_wanted(void) {
  static int wanted = -1; /* read once; a race only reads the same environment twice */
  if (wanted < 0) {
    const char *e = getenv("POLYRX_PINNED");
    wanted = !(e && !strcmp(e, "alloc"));
  }
  return wanted;
}

static void *host_alloc_mapped(size_t bytes) {
  if (!mapped_wanted() || bytes > SIZE_MAX - HUGE_BYTES) return NULL;
  const size_t len = (bytes + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
  /* one huge page more than asked, so that the block can start on a 2 MiB boundary */
  unsigned char *raw = (unsigned char *)mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  unsigned char *p = (unsigned char *)(((uintptr_t)raw + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
  if (p > raw) munmap(raw, (size_t)(p - raw));
  if (p + len < raw + len + HUGE_BYTES)
    munmap(p + len, (size_t)(raw + len + HUGE_BYTES - (p + len)));
  /* Left out of a forked child: a fork copies every page-locked anonymous page at once (the
   * kernel's copy-on-fork for pinned pages), and the detached end (cli/exit_detach.c) forks after
   * the stream: its end took 30-45 ms more on the H200's host without this, against ~9 ms with
   * cudaHostAlloc's memory or with this (bench/RESULTS.md, eighteenth session). A child therefore
   * cannot read these buffers: polyrx's children do not (serve's forks before CUDA, the detached
   * end's child makes system calls only). MADV_HUGEPAGE refused: no transparent huge pages. */
  mapped_block *b = NULL;
  if (madvise(p, len, MADV_HUGEPAGE) == 0 && madvise(p, len, MADV_DONTFORK) == 0 &&
      (b = (mapped_block *)malloc(sizeof *b)) != NULL) {
    for (size_t i = 0; i < len; i += 4096) p[i] = 0; /* each huge page faulted in, and zeroed */
    if (cudaHostRegister(p, len, cudaHostRegisterPortable) == cudaSuccess) {
      b->p = p;
      b->len = len;
      pthread_mutex_lock(&mapped_mu);
      b->next = mapped_list;
      mapped_list = b;
      pthread_mutex_unlock(&mapped_mu);
      return p;
    }
    cudaGetLastError();
  }
  free(b);
  munmap(p, len);
  return NULL;
}

/* The listed mapping that starts at p, taken off the list; NULL where p is not one. */
static mapped_block *mapped_take(void *p) {
  pthread_mutex_lock(&mapped_mu);
  mapped_block **at = &mapped_list;
  while (*at && (*at)->p != p) at = &(*at)->next;
  mapped_block *b = *at;
  if (b) *at = b->next;
  pthread_mutex_unlock(&mapped_mu);
  return b;
}

static void *host_alloc(size_t bytes) {
  void *p = host_alloc_mapped(bytes);
  if (p) return p;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError(); /* too much locked memory: the caller falls back to pageable */
    return NULL;
  }
  return p;
}

static void host_free(void *p) {
  mapped_block *b = p ? mapped_take(p) : NULL;
  if (!b) {
    cudaFreeHost(p);
    return;
  }
  if (cudaHostUnregister(b->p) != cudaSuccess) cudaGetLastError();
  munmap(b->p, b->len);
  free(b);
}

static prx_status cuda_fail(cudaError_t e, const char *what) {
  cudaGetLastError();
  return prx_fail(PRX_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(e));
}

static prx_status host_register(void *p, size_t bytes) {
  cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
  return e ? cuda_fail(e, "cannot pin host memory in place (cudaHostRegister)") : PRX_OK;
}

/* The devices' compute mode: cudaComputeModeDefault where every device is in it, else the first
 * other mode found; -1 where it cannot be read (cuda_module.h) */
static int compute_mode(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  for (int d = 0; d < n; d++) {
    int mode = -1;
    if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, d) != cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    if (mode != cudaComputeModeDefault) return mode;
  }
  return cudaComputeModeDefault;
}

static void host_unregister(void *p) {
  if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
}

static prx_status event_create(int device, void **event) {
  *event = NULL;
  cudaError_t e = cudaSetDevice(device);
  if (!e) e = cudaEventCreateWithFlags((cudaEvent_t *)event, cudaEventDisableTiming);
  return e ? cuda_fail(e, "cannot create a CUDA event") : PRX_OK;
}

static void event_destroy(void *event) {
  if (event) cudaEventDestroy((cudaEvent_t)event);
}

static prx_status event_record(void *event, void *stream) {
  cudaError_t e = cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream);
  return e ? cuda_fail(e, "cannot record a CUDA event") : PRX_OK;
}

static prx_status stream_wait(void *stream, void *event) {
  cudaError_t e = cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0);
  return e ? cuda_fail(e, "cannot order a CUDA stream after an event") : PRX_OK;
}
extern "C" __attribute__((visibility("default")))
const prx_cuda_module prx_cuda_module_v1 = {PRX_CUDA_MODULE_ABI,
                                            PRX_VERSION_TEXT,
                                            init,
                                            &prx_chan_cuda_entries,
                                            &prx_qpsk_bank_cuda_entries,
                                            &prx_qpsk_stages_cuda_entries,
                                            host_alloc,
                                            host_free,
                                            event_create,
                                            event_destroy,
                                            event_record,
                                            stream_wait,
                                            &prx_qpsk_serial_cuda_entries,
                                            host_register,
                                            host_unregister,
                                            compute_mode};
