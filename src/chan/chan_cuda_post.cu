/* The CUDA channelizer's post pass (chan_cuda_launch.h): over the cf32 rows one launch of the
 * host pipeline computed, zeroes non-finite outputs, packs the rows into the output format
 * (cf16 or ci16) for the copy back, and forms the power sums of the outputs in the window, so
 * that the caller's threads only copy bytes. One block per row: a thread takes the outputs
 * j = tid, tid + T, ... in order, and the block adds its threads' sums in a fixed tree, so a
 * launch's sum of a row is the same on every run. */
extern "C" {
#include "polyrx/core.h"
}
#include "chan_cuda_post.cuh"

#define POST_THREADS 256

__global__ static void __launch_bounds__(POST_THREADS) post_kernel(prx_post_params p) {
  __shared__ double part[POST_THREADS];
  const int tid = threadIdx.x;
  const size_t row = blockIdx.x;
  float2 *y = p.y + row * p.n;
  double acc = 0;
  unsigned nonfinite = 0, sat = 0;
  for (size_t j = (size_t)tid; j < p.n; j += POST_THREADS)
    post_output(p, row, y, j, &acc, &nonfinite, &sat);
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
