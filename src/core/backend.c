/* Backend names and run-time discovery of a CUDA device. */
#include "internal.h"

#ifdef PRX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

const char *prx_backend_name(prx_backend b) {
  switch (b) {
  case PRX_BACKEND_AUTO: return "auto";
  case PRX_BACKEND_CPU: return "cpu";
  case PRX_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

int prx_cuda_available(void) {
#ifdef PRX_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky "no device" error */
    return 0;
  }
  return n > 0;
#else
  return 0;
#endif
}
