/* The library's services inside a CUDA module (core/cuda_module.h): prx_fail and prx_format_size
 * for the module's .cu files, answered by the library's table that the module's init receives
 * (module_services_take). Included once per module: by cuda_module.cu, and by the fake module of
 * tests/fakecuda. */
#ifndef PRX_CUDA_MODULE_SERVICES_CUH
#define PRX_CUDA_MODULE_SERVICES_CUH

extern "C" {
#include "core/cuda_module.h"
}
#include <stdarg.h>
#include <stdio.h>

static const prx_cuda_host *host;

/* the library's table, from the module's init */
static void module_services_take(const prx_cuda_host *h) { host = h; }

extern "C" prx_status prx_fail(prx_status status, const char *fmt, ...) {
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  return host ? host->fail(status, message) : status;
}

extern "C" size_t prx_format_size(prx_format f) { return host ? host->format_size(f) : 0; }

#endif
