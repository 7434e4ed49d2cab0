/* Launchers of the CUDA channelizer kernels (C++ linkage, used by chan_cuda.cu only). */
#ifndef PRX_CHAN_CUDA_LAUNCH_H
#define PRX_CHAN_CUDA_LAUNCH_H

#include "chan_cuda_kernels.cuh"

/* fused path (chan_cuda_fused.cu): power-of-two K in 64..4096, R = K/D in {1, 2}; variant 0
 * is the default kernel, 1..16 other builds for the benchmark (cf32 input only; see
 * chan_cuda_fused_kernel.cuh) */
int prx_fused_supported(int K);
size_t prx_fused_smem_bytes(int K); /* the most shared memory any build of K takes */
/* what the builds of a variant need from the object */
typedef struct {
  int resident;     /* blocks of the build the device holds at once (what PRX_OPT_PERSIST builds
                       launch, through p->tile_blocks) */
  int rotated_taps; /* 1: p->taps_rot is read (PRX_OPT_ALIGN) */
} prx_fused_needs;
/* sets the shared-memory limit of the variant's builds and fills *needs */
cudaError_t prx_fused_prepare(int K, int R, int fmt, int variant, prx_fused_needs *needs);
/* *hist_done: set when the launch also wrote the history update (PRX_OPT_HISTB builds) */
cudaError_t prx_fused_launch(const prx_kparams *p, int variant, cudaStream_t st, int *hist_done);

/* general path (chan_cuda_general.cu): filter into v[n_out][K], then (cuFFT) the post pass */
cudaError_t prx_general_filter_launch(const prx_kparams *p, float2 *v, cudaStream_t st);
cudaError_t prx_general_post_launch(const prx_kparams *p, const float2 *v, cudaStream_t st);
/* history update: p->new_hist = last Hh samples of (p->hist ++ p->in) */
cudaError_t prx_hist_launch(const prx_kparams *p, cudaStream_t st);

#endif
