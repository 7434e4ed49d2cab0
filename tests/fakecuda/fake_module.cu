/* The CUDA module's table (cuda_module.h) with the channelizer alone, built with chan_cuda.cu
 * against the fake runtime (run_chan_cuda.sh); the library's services as in cuda_module.cu. */
extern "C" {
#include "chan/chan_cuda.h"
#include "core/cuda_module.h"
}
#include <stdarg.h>
#include <stdio.h>
static const prx_cuda_host *host;
extern "C" prx_status prx_fail(prx_status status, const char *fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  return host ? host->fail(status, message) : status;
}
extern "C" size_t prx_format_size(prx_format f) { return host ? host->format_size(f) : 0; }
static int init(const prx_cuda_host *h, char *why, size_t n) {
  (void)why, (void)n;
  host = h;
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
                                            NULL};
