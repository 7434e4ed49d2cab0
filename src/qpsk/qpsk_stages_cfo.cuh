/* The CFO stage of the demodulator bank's CUDA kernels (qpsk_stages_cfo.cu), entries of the
 * stage table (qpsk_stages_cuda.h: cfo_setup, cfo, cfo_rows, cfo_fed) and the release that destroy
 * calls. */
#ifndef PRX_QPSK_STAGES_CFO_CUH
#define PRX_QPSK_STAGES_CFO_CUH

extern "C" {
#include "qpsk_stages_cuda.h"
}

/* The CFO stage's input rows as x4 (x4_rows) writes them: C rows stride points apart, channel c's
 * span values from its first block's w0 on, value i at row point i for i < S (buf NULL: none). */
typedef struct {
  float2 *buf;
  unsigned stride, S;
} cfo_rows_out;

prx_status stages_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu);
prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream);
prx_status stages_cfo_rows(const qpsk_stages *s, prx_cf32 **rows, size_t *row_stride);
prx_status stages_cfo_fed(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                          const int64_t *w0, const qpsk_cfo_in *in, qpsk_cfo_out *out,
                          cudaStream_t stream);
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
