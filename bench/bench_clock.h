/* The wall clock every benchmark times with: monotonic seconds (C, and CUDA host code). */
#ifndef PRX_BENCH_CLOCK_H
#define PRX_BENCH_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: differences of two calls are elapsed wall time, immune to clock
 * changes. */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
