/* The CUDA channelizer's post pass (chan_cuda_launch.h): over the cf32 rows one launch of the
 * host pipeline computed, zeroes non-finite outputs, packs the rows into the output format
 * (cf16 or ci16) for the copy back, and forms the power sums of the outputs in the window, so
 * that the caller's threads only copy bytes. One block per row: a thread takes the outputs
 * j = tid, tid + T, ... in order, and the block adds its threads' sums in a fixed tree, so a
 * launch's sum of a row is the same on every run. */
extern "C" {
#include "polyrx/core.h"
}
#include "chan_cuda_launch.h"

#define POST_THREADS 256

/* ci16 of one part: round(x * 32768), ties to even, saturated to [-32768, 32767], NaN to 0, as
 * prx_pack_ci16 (src/dsp/pack.c); *bad counts a saturated (or NaN) part */
__device__ static short post_ci16(float x, unsigned *bad) {
  const float v = x * 32768.0f;
  *bad += !(v >= -32768.0f && v <= 32767.0f);
  if (v != v) return 0;
  return (short)__float2int_rn(fminf(fmaxf(v, -32768.0f), 32767.0f));
}

__global__ static void __launch_bounds__(POST_THREADS) post_kernel(prx_post_params p) {
  __shared__ double part[POST_THREADS];
  const int tid = threadIdx.x;
  const size_t row = blockIdx.x;
  float2 *y = p.y + row * p.n;
  double acc = 0;
  unsigned nonfinite = 0, sat = 0;
  for (size_t j = (size_t)tid; j < p.n; j += POST_THREADS) {
    float2 v = y[j];
    const int in = j >= p.lo && j < p.hi;
    if (!isfinite(v.x) || !isfinite(v.y)) { /* as prx_cf32_zero_nonfinite: the whole output */
      v = make_float2(0.0f, 0.0f);
      nonfinite += in;
      if (p.fmt == PRX_CF32) y[j] = v;
    } else if (in) {
      acc += (double)v.x * v.x + (double)v.y * v.y;
    }
    if (p.fmt == PRX_CF16) {
      ((__half2 *)p.packed)[row * p.n + j] = __floats2half2_rn(v.x, v.y);
    } else if (p.fmt == PRX_CI16) {
      unsigned bad = 0;
      const short re = post_ci16(v.x, &bad), im = post_ci16(v.y, &bad);
      ((short2 *)p.packed)[row * p.n + j] = make_short2(re, im);
      sat += in ? bad : 0;
    }
  }
  if (!p.sums) return;
  part[tid] = acc;
  __syncthreads();
  for (int o = POST_THREADS / 2; o > 0; o >>= 1) {
    if (tid < o) part[tid] += part[tid + o];
    __syncthreads();
  }
  if (tid == 0) p.sums[row] += part[0];
  if (nonfinite) atomicAdd(&p.counts[0], (unsigned long long)nonfinite);
  if (sat) atomicAdd(&p.counts[1], (unsigned long long)sat);
}

cudaError_t prx_post_launch(const prx_post_params *p, int rows, cudaStream_t st) {
  if (rows <= 0 || !p->n) return cudaSuccess;
  post_kernel<<<rows, POST_THREADS, 0, st>>>(*p);
  return cudaGetLastError();
}
