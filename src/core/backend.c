/* Backend names, run-time discovery of a CUDA device (through the CUDA module) and of the
 * CPU's instruction sets (for the kernels built per instruction set, internal.h). */
#include "cuda_module.h"
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *prx_backend_name(prx_backend b) {
  switch (b) {
  case PRX_BACKEND_AUTO: return "auto";
  case PRX_BACKEND_CPU: return "cpu";
  case PRX_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

int prx_cuda_available(void) { return prx_cuda_module_get() != NULL; }

/* written once under pthread_once, read-only afterwards */
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static prx_isa isa_found = PRX_ISA_GENERIC;

static void detect_isa(void) {
  const char *force = getenv("POLYRX_CPU");
  if (force && !strcmp(force, "generic")) return;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa_found = PRX_ISA_AVX2_FMA;
#endif
}

prx_isa prx_cpu_isa(void) {
  pthread_once(&isa_once, detect_isa);
  return isa_found;
}

const char *prx_isa_name(prx_isa isa) { return isa == PRX_ISA_AVX2_FMA ? "avx2_fma" : "generic"; }
