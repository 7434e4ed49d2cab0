/* The CFO stage of the demodulator bank's CUDA kernels (qpsk_stages_cfo.cu), entries of the
 * stage table (qpsk_stages_cuda.h: cfo_setup, cfo) and the release that destroy calls. */
#ifndef PRX_QPSK_STAGES_CFO_CUH
#define PRX_QPSK_STAGES_CFO_CUH

extern "C" {
#include "qpsk_stages_cuda.h"
}

/* The CFO stage's input written by x4 (x4_level) as it writes the w rows, so that the stage need
 * not copy the windows into its transform's rows (cfo_feed_of; buf NULL where there is no CFO
 * stage). x4 writes each channel's span values from its first block's w0 (base) on, value i at
 * row point i for i < S, and counts in rec[c] what the stage checks before it takes them: the w
 * rows written, the calls since the stage last ran, the blocks that lie right after the block
 * before in the row, the values written. */
typedef struct {
  unsigned long long w, stride; /* the w rows x4 wrote */
  long long base;               /* the channel's first block's w0 */
  unsigned long long total;     /* values written (all blocks) */
  unsigned calls, good, nblk, pad;
} cfo_x4_rec;
typedef struct {
  float2 *buf; /* C rows of len points */
  cfo_x4_rec *rec;
  unsigned len, S;
} cfo_feed;
cfo_feed cfo_feed_of(const qpsk_stages *s);

/* x4's share of the feed, by every thread of its thread block for block j of channel c (n
 * values at w0[o], o = c nblk + j; w0_prev, n_prev: the block before's, j > 0): the counts */
__device__ __forceinline__ void cfo_feed_count(const cfo_feed &f, unsigned c, unsigned j,
                                               unsigned nblk, const void *w, size_t w_stride,
                                               int64_t base, int64_t w0, int64_t n, int64_t w0_prev,
                                               int64_t n_prev) {
  if (!f.buf || threadIdx.x != 0) return;
  cfo_x4_rec *r = f.rec + c;
  if (j == 0) {
    r->w = (unsigned long long)(uintptr_t)w;
    r->stride = w_stride;
    r->base = base;
    r->nblk = nblk;
    atomicAdd(&r->calls, 1u);
  }
  if (j == 0 || w0 == w0_prev + (n_prev > 0 ? n_prev : 0)) atomicAdd(&r->good, 1u);
  if (n > 0) atomicAdd(&r->total, (unsigned long long)n);
}

prx_status stages_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu);
prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream);
void cfo_release(qpsk_stages *s);

/* Raises kernel fn's cap on a launch's dynamic shared memory to all the device allows it (the
 * per-block opt-in limit less the kernel's static shared memory). The cap belongs to the kernel
 * function and is shared by every stages object of the process (a receiver has one bank per
 * group of carriers, each with its own windows), so it is never set to one object's need: a later
 * object with smaller windows would lower it under an earlier one's launches. The launch's own
 * size decides the occupancy. */
static inline cudaError_t stages_open_smem(const void *fn, int smem_max) {
  cudaFuncAttributes fa;
  cudaError_t e = cudaFuncGetAttributes(&fa, fn);
  if (e) return e;
  return cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              smem_max - (int)fa.sharedSizeBytes);
}

#endif
