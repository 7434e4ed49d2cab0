/* The CUDA module's table (cuda_module.h) with the channelizer alone, built with chan_cuda.cu
 * against the fake runtime (run_chan_cuda.sh), with the library's services of every module
 * (core/cuda_module_services.cuh). */
extern "C" {
#include "chan/chan_cuda.h"
}
#include "core/cuda_module_services.cuh"
static int init(const prx_cuda_host *h, char *why, size_t n) {
  (void)why, (void)n;
  module_services_take(h);
  return 1;
}
extern "C" __attribute__((visibility("default")))
const prx_cuda_module prx_cuda_module_v1 = {PRX_CUDA_MODULE_ABI,
                                            "0.1.0",
                                            init,
                                            &prx_chan_cuda_entries,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL,
                                            NULL};
