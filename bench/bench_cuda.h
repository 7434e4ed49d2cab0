/* What the GPU benchmarks share (C, CUDA runtime API): the device-to-device copy bandwidth that
 * every byte floor is measured against, in the same run, and the --case filter. */
#ifndef PRX_BENCH_CUDA_H
#define PRX_BENCH_CUDA_H

#include <cuda_runtime_api.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Bytes read + written per second by a 1 GiB cudaMemcpy device to device, the best of 5 (NaN
 * where the buffers cannot be had). */
static inline double bench_d2d_bandwidth(void) {
  size_t bytes = (size_t)1 << 30;
  void *a = NULL, *b = NULL;
  if (cudaMalloc(&a, bytes) || cudaMalloc(&b, bytes)) {
    cudaFree(a);
    return NAN;
  }
  cudaMemset(a, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(e0, 0);
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  cudaFree(a);
  cudaFree(b);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 2.0 * (double)bytes / (best * 1e-3);
}

/* --case SPS:C:FORMAT (repeatable) in argv: whether the case (SPS, C, fmt "cf32" or "cf16") is one
 * of those given; with no --case, every case is. */
static inline int bench_case_wanted(int argc, char **argv, double sps, unsigned C,
                                    const char *fmt) {
  int any = 0;
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--case")) continue;
    any = 1;
    double s;
    unsigned c;
    char f[8];
    if (sscanf(argv[i + 1], "%lf:%u:%7s", &s, &c, f) == 3 && fabs(s - sps) < 0.01 && c == C &&
        !strcmp(f, fmt))
      return 1;
  }
  return !any;
}

#endif
