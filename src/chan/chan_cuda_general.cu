/* The general CUDA channelizer path (any K, any prototype length): a polyphase filter kernel
 * writes the K-branch vectors v[jj][r], cuFFT transforms them (batched backward C2C, in place,
 * driven from chan_cuda.cu), and a post kernel applies the (-1)^(kj) sign of D = K/2, keeps the
 * selected channels and writes them channel-major. Also the history update of every path. */
#include "chan_cuda_launch.h"

/* The general path's polyphase filter.
 *  computes: v[jj K + r] = sum_q h[r + qK] x(base + jj D - r - qK) for every output jj of the
 *    launch and every branch r (prx_filter_item), converting the raw input on load.
 *  grid: grid_for(n_out K) blocks, grid-stride over the items; block: 256 threads, one item
 *    each; shared memory: none.
 *  why: any K and prototype length, with cuFFT doing the transform; one thread per item keeps
 *    the loads coalesced across r. */
static __global__ void __launch_bounds__(256)
    filter_kernel(const prx_kparams p, float2 *v, size_t n) {
  for (size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x; w < n;
       w += (size_t)gridDim.x * blockDim.x)
    prx_filter_item(p, v, w);
}

/* The general path after cuFFT.
 *  computes: out[s stride + jj] = the FFT's bin k = sel[s] of output jj, with the (-1)^(kj)
 *    sign of D = K/2, as cf32 or cf16 (prx_post_item).
 *  grid: grid_for(n_sel n_out) blocks, grid-stride; block: 256 threads, one output each;
 *    shared memory: none.
 *  why: the selection, the sign and the transpose to channel-major rows in one pass. */
static __global__ void __launch_bounds__(256)
    post_kernel(const prx_kparams p, const float2 *v, size_t n) {
  for (size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x; w < n;
       w += (size_t)gridDim.x * blockDim.x)
    prx_post_item(p, v, w);
}

/* The history update of every launch that does not do it itself.
 *  computes: new_hist[i] = sample i of the last Hh of (old history ++ this launch's input),
 *    converted (prx_hist_item).
 *  grid: grid_for(Hh) blocks, grid-stride; block: 256 threads; shared memory: none.
 *  why: the next launch reads its samples before in[0] from there, whatever the caller did
 *    with its input buffer. */
static __global__ void __launch_bounds__(256) hist_kernel(const prx_kparams p) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.Hh; i += gridDim.x * blockDim.x)
    prx_hist_item(p, p.new_hist, i);
}

/* one block per 256 items, at most 8192 (62 per multiprocessor of an H200), grid-stride beyond */
static unsigned grid_for(size_t n) {
  size_t b = (n + 255) / 256;
  return (unsigned)(b < 8192 ? (b ? b : 1) : 8192);
}

cudaError_t prx_general_filter_launch(const prx_kparams *p, float2 *v, cudaStream_t st) {
  size_t n = (size_t)p->n_out * p->K;
  if (!n) return cudaSuccess;
  filter_kernel<<<grid_for(n), 256, 0, st>>>(*p, v, n);
  return cudaGetLastError();
}

cudaError_t prx_general_post_launch(const prx_kparams *p, const float2 *v, cudaStream_t st) {
  size_t n = (size_t)p->n_out * p->n_sel;
  if (!n) return cudaSuccess;
  post_kernel<<<grid_for(n), 256, 0, st>>>(*p, v, n);
  return cudaGetLastError();
}

cudaError_t prx_hist_launch(const prx_kparams *p, cudaStream_t st) {
  if (p->Hh <= 0) return cudaSuccess;
  hist_kernel<<<grid_for((size_t)p->Hh), 256, 0, st>>>(*p);
  return cudaGetLastError();
}
