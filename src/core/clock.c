/* The library's one monotonic clock (the phase timings of the receiver and the bank's driver). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <time.h>

double prx_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
