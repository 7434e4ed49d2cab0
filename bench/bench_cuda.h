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

/* one --case spec, SPS:C:FORMAT, SPS a decimal or a fraction ("16/3"); 1 where it parses */
static inline int bench_case_parse(const char *spec, double *sps, unsigned *C, char fmt[8]) {
  double a, b;
  int at = 0;
  if (sscanf(spec, "%lf/%lf:%n", &a, &b, &at) == 2 && at > 0 && b > 0)
    *sps = a / b;
  else if (sscanf(spec, "%lf:%n", &a, &at) == 1 && at > 0)
    *sps = a;
  else
    return 0;
  return sscanf(spec + at, "%u:%7s", C, fmt) == 2;
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
    if (bench_case_parse(argv[i + 1], &s, &c, f) && fabs(s - sps) < 0.01 && c == C &&
        !strcmp(f, fmt))
      return 1;
  }
  return !any;
}

/* Every --case in argv names one of the program's cases (nsps x nC x cf32/cf16); else a message
 * on stderr and 0, so that a mistyped case is not silently measured as none. */
static inline int bench_cases_valid(int argc, char **argv, const double *spss, int nsps,
                                    const unsigned *Cs, int nC) {
  int ok = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--case")) continue;
    double s;
    unsigned c;
    char f[8];
    int found = 0;
    if (i + 1 < argc && bench_case_parse(argv[i + 1], &s, &c, f))
      for (int a = 0; a < nsps; a++)
        for (int b = 0; b < nC; b++)
          found |=
              fabs(s - spss[a]) < 0.01 && c == Cs[b] && (!strcmp(f, "cf32") || !strcmp(f, "cf16"));
    if (!found) {
      fprintf(stderr,
              "--case %s: not one of the cases (SPS:C:FORMAT, e.g. 4:1024:cf32 or "
              "16/3:64:cf16)\n",
              i + 1 < argc ? argv[i + 1] : "(missing)");
      ok = 0;
    }
  }
  return ok;
}

#endif
