/* Internal helpers shared by every part of the library (not installed). */
#ifndef PRX_INTERNAL_H
#define PRX_INTERNAL_H

#include "polyrx/core.h"

#include <stddef.h>

#if defined(__GNUC__)
#define PRX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PRX_PRINTF(a, b)
#endif

/* Records a formatted message as this thread's last error and returns status, so that a
 * check reads: if (k % 2) return prx_fail(PRX_ERR_INVALID, "channels must be even, got %u", k); */
prx_status prx_fail(prx_status status, const char *fmt, ...) PRX_PRINTF(2, 3);

/* Seconds on the monotonic clock (for phase timings; differences only). */
double prx_now(void);

/* Greatest common divisor (Euclid); prx_gcd_u64(a, 0) = a. */
static inline unsigned long long prx_gcd_u64(unsigned long long a, unsigned long long b) {
  while (b) {
    unsigned long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* 64-byte aligned allocation (cache line, AVX-512 safe), zero-filled; NULL on failure or 0 bytes.
 * Checks n * size for overflow. */
void *prx_alloc(size_t n, size_t size);
/* The same, not cleared: for buffers whose every byte is written before it is read, so that their
 * pages are first touched by the thread that writes them. */
void *prx_alloc_uncleared(size_t n, size_t size);
void prx_free(void *p); /* accepts NULL, and either allocation */

/* A fixed set of worker threads made once (in an object's _create) and reused by every execute:
 * prx_pool_run calls fn(ctx, i) for i in [0, n_tasks) spread over the threads (the caller's
 * thread works too) and returns when all are done. A pool of 1 thread runs inline. */
typedef struct prx_pool prx_pool;
typedef void (*prx_task_fn)(void *ctx, size_t task);
prx_status prx_pool_create(int threads, prx_pool **out); /* threads <= 0: all cores */
void prx_pool_destroy(prx_pool *p);                      /* accepts NULL */
int prx_pool_threads(const prx_pool *p);
void prx_pool_run(prx_pool *p, prx_task_fn fn, void *ctx, size_t n_tasks);

/* FFTW's planner is not thread-safe: every plan/destroy in the library goes through this lock. */
void prx_fftw_lock(void);
void prx_fftw_unlock(void);

/* ---- CPU kernels built per instruction set, chosen at run time ----
 * A file listed in POLYRX_ISA_SOURCES (CMakeLists.txt) is compiled twice: for baseline x86-64
 * (the "generic" variant, under its own names) and with -mavx2 -mfma (the "avx2_fma" variant,
 * every function the list names renamed NAME_avx2_fma, PRX_ISA_VARIANT defined). A function
 * with an AVX2 path opens with PRX_ISA_DISPATCH(name, args...) (PRX_ISA_DISPATCH_RET where it
 * returns a value): in the generic build that hands the call to name_avx2_fma where the CPU
 * has AVX2 and FMA (prx_cpu_isa), elsewhere it is empty. */
typedef enum { PRX_ISA_GENERIC = 0, PRX_ISA_AVX2_FMA = 1 } prx_isa;
/* The instruction set of the kernels, detected once per process (prx_cpu_features);
 * POLYRX_CPU=generic in the environment forces the baseline (for tests). */
prx_isa prx_cpu_isa(void);
/* The CPU's instruction-set extensions that the kernels use, PRX_CPU_* bits, each only where the
 * OS keeps the AVX state (XCR0): read once per process with three CPUID instructions, not with
 * __builtin_cpu_supports, whose libgcc constructor asks a dozen or more at every start of a
 * program that uses it (CPUID traps to the hypervisor in a VM: 7.7 us each on the development
 * VM, ~0.1-0.16 ms of every polyrx process there). 0 on other architectures. */
enum { PRX_CPU_AVX = 1, PRX_CPU_AVX2 = 2, PRX_CPU_FMA = 4, PRX_CPU_F16C = 8 };
unsigned prx_cpu_features(void);
const char *prx_isa_name(prx_isa isa); /* "generic", "avx2_fma" */
#if defined(PRX_ISA_DISPATCHER)
#define PRX_ISA_DISPATCH(fn, ...)                                                                  \
  do {                                                                                             \
    extern __typeof__(fn) fn##_avx2_fma;                                                           \
    if (prx_cpu_isa() == PRX_ISA_AVX2_FMA) {                                                       \
      fn##_avx2_fma(__VA_ARGS__);                                                                  \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
#define PRX_ISA_DISPATCH_RET(fn, ...)                                                              \
  do {                                                                                             \
    extern __typeof__(fn) fn##_avx2_fma;                                                           \
    if (prx_cpu_isa() == PRX_ISA_AVX2_FMA) return fn##_avx2_fma(__VA_ARGS__);                      \
  } while (0)
#else
#define PRX_ISA_DISPATCH(fn, ...) (void)0
#define PRX_ISA_DISPATCH_RET(fn, ...) (void)0
#endif

#endif
