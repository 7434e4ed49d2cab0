/* Backend names, run-time discovery of a CUDA device (through the CUDA module) and of the
 * CPU's instruction sets (for the kernels built per instruction set, internal.h). */
#include "cuda_module.h"
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#define PRX_X86_CPUID 1
#endif

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
static pthread_once_t features_once = PTHREAD_ONCE_INIT, isa_once = PTHREAD_ONCE_INIT;
static unsigned features_found;
static prx_isa isa_found = PRX_ISA_GENERIC;

/* CPUID leaf 1 (AVX, FMA, F16C, OSXSAVE) and leaf 7 (AVX2), XGETBV for the OS's YMM state: what
 * __builtin_cpu_supports checks for these, without its constructor's other leaves */
static void detect_features(void) {
#ifdef PRX_X86_CPUID
  unsigned a, b, c, d, f = 0, max = __get_cpuid_max(0, NULL);
  if (max < 1) return;
  __cpuid(1, a, b, c, d);
  if (!(c & bit_OSXSAVE) || !(c & bit_AVX)) return;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return; /* the OS does not keep the XMM and YMM state */
  f |= PRX_CPU_AVX;
  if (c & bit_FMA) f |= PRX_CPU_FMA;
  if (c & bit_F16C) f |= PRX_CPU_F16C;
  if (max >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    if (b & bit_AVX2) f |= PRX_CPU_AVX2;
  }
  features_found = f;
#endif
}

unsigned prx_cpu_features(void) {
  pthread_once(&features_once, detect_features);
  return features_found;
}

static void detect_isa(void) {
  const char *force = getenv("POLYRX_CPU");
  if (force && !strcmp(force, "generic")) return;
  unsigned need = PRX_CPU_AVX2 | PRX_CPU_FMA;
  if ((prx_cpu_features() & need) == need) isa_found = PRX_ISA_AVX2_FMA;
}

prx_isa prx_cpu_isa(void) {
  pthread_once(&isa_once, detect_isa);
  return isa_found;
}

const char *prx_isa_name(prx_isa isa) { return isa == PRX_ISA_AVX2_FMA ? "avx2_fma" : "generic"; }
