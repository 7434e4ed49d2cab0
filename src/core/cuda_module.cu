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
#include <stdio.h>

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

static void *host_alloc(size_t bytes) {
  void *p = NULL;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError(); /* too much locked memory: the caller falls back to pageable */
    return NULL;
  }
  return p;
}

static void host_free(void *p) { cudaFreeHost(p); }

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
