/* One output of the CUDA channelizer's post pass (chan_cuda_post.cu), on the device and on the
 * host (tests/fakecuda runs the pass as a host loop over it): the output zeroed where not finite
 * (as prx_cf32_zero_nonfinite: the whole output), packed into the output format, and counted into
 * the thread's sums where it lies in the power window [lo, hi). */
#ifndef PRX_CHAN_CUDA_POST_CUH
#define PRX_CHAN_CUDA_POST_CUH

#include "chan_cuda_launch.h"

#include <cuda_fp16.h>
#include <math.h>

/* ci16 of one part: round(x * 32768), ties to even, saturated to [-32768, 32767], NaN to 0, as
 * prx_pack_ci16 (src/dsp/pack.c); *bad counts a saturated (or NaN) part */
__host__ __device__ static inline short post_ci16(float x, unsigned *bad) {
  const float v = x * 32768.0f;
  *bad += !(v >= -32768.0f && v <= 32767.0f);
  if (v != v) return 0;
#ifdef __CUDA_ARCH__
  return (short)__float2int_rn(fminf(fmaxf(v, -32768.0f), 32767.0f));
#else
  return (short)lrintf(fminf(fmaxf(v, -32768.0f), 32767.0f)); /* (the default rounding: even) */
#endif
}

/* output j of row `row` (y: the row's outputs), its power into *acc and its non-finite and
 * saturated counts into *nonfinite and *sat where j is in the window */
__host__ __device__ static inline void post_output(const prx_post_params &p, size_t row, float2 *y,
                                                   size_t j, double *acc, unsigned *nonfinite,
                                                   unsigned *sat) {
  float2 v = y[j];
  const int in = j >= p.lo && j < p.hi;
  if (!isfinite(v.x) || !isfinite(v.y)) {
    v = make_float2(0.0f, 0.0f);
    *nonfinite += in;
    if (p.fmt == PRX_CF32) y[j] = v;
  } else if (in) {
    *acc += (double)v.x * v.x + (double)v.y * v.y;
  }
  if (p.fmt == PRX_CF16) {
    ((__half2 *)p.packed)[row * p.n + j] = __floats2half2_rn(v.x, v.y);
  } else if (p.fmt == PRX_CI16) {
    unsigned bad = 0;
    const short re = post_ci16(v.x, &bad), im = post_ci16(v.y, &bad);
    ((short2 *)p.packed)[row * p.n + j] = make_short2(re, im);
    *sat += in ? bad : 0;
  }
}

#endif
