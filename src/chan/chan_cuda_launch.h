/* Launchers of the CUDA channelizer kernels (C++ linkage, used by chan_cuda.cu only). */
#ifndef PRX_CHAN_CUDA_LAUNCH_H
#define PRX_CHAN_CUDA_LAUNCH_H

#include "chan_cuda_kernels.cuh"
#include "chan_cuda_policy.h"

/* Fused path (chan_cuda_fused.cu): power-of-two K in 64..4096, K/D in {1, 2}. Each launch
 * runs the design prx_fused_select gives for its output's layout, within `layouts` (the
 * PRX_OUT_* flags the object allows: PRX_OUT_ROWS_16B left out keeps every launch on thread
 * stores). */
int prx_fused_supported(int K);
size_t prx_fused_smem_bytes(int K); /* dynamic shared memory per block */
/* what the designs an object may run need from it */
typedef struct {
  int resident;     /* blocks of the persistent design the device holds at once (what its
                       launches run, through p->tile_blocks) */
  int rotated_taps; /* 1: p->taps_rot is read (aligned_window) */
} prx_fused_needs;
/* sets the shared-memory limit of the designs an object may run and fills *needs */
cudaError_t prx_fused_prepare(int K, int D, int in_fmt, int out_fmt, int layouts,
                              prx_fused_needs *needs);
/* *hist_done: set when the launch also wrote the history update (hist_in_kernel) */
cudaError_t prx_fused_launch(const prx_kparams *p, int layouts, cudaStream_t st, int *hist_done);

/* general path (chan_cuda_general.cu): filter into v[n_out][K], then (cuFFT) the post pass */
cudaError_t prx_general_filter_launch(const prx_kparams *p, float2 *v, cudaStream_t st);
cudaError_t prx_general_post_launch(const prx_kparams *p, const float2 *v, cudaStream_t st);
/* the post pass (chan_cuda_post.cu), for objects with ci16 output or power sums: over rows
 * of n cf32 outputs (y[s * n + j]) it zeroes non-finite outputs (in y itself with cf32
 * output), packs the rows into `packed` (cf16 or ci16, the same layout) and, where sums is not
 * NULL, adds each row's |y|^2 over outputs lo <= j < hi to sums[s] (counts[0]: non-finite
 * outputs there; counts[1]: ci16 parts saturated there) */
typedef struct {
  float2 *y;
  void *packed;
  int fmt; /* PRX_CF32, PRX_CF16 or PRX_CI16 */
  size_t n, lo, hi;
  double *sums;
  unsigned long long *counts;
} prx_post_params;
cudaError_t prx_post_launch(const prx_post_params *p, int rows, cudaStream_t st);

/* history update: p->new_hist = last Hh samples of (p->hist ++ p->in) */
cudaError_t prx_hist_launch(const prx_kparams *p, cudaStream_t st);

#endif
