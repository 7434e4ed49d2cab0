/* The demodulator bank's serial passes on the GPU (qpsk_serial.h): the level, timing and NCO
 * passes of one CFO span, one thread per channel, the arithmetic of qpsk_serial.h (compiled
 * without fused multiply-adds, CMakeLists.txt, so that it rounds as the host does). A channel's
 * pass is a few thousand double operations over its span's 16 or so blocks: the launch is tiny
 * and its point is that the span's stage kernels follow one another on the stream without a
 * host round trip. */
extern "C" {
#include "qpsk_internal.h"
}
#include "../core/cuda_module.h"
#include "qpsk_serial.h"

#include <cuda_runtime.h>

namespace {

const unsigned kThreads = 64;

prx_status launched(const char *what) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return PRX_OK;
  return prx_fail(PRX_ERR_DEVICE, "%s launch: %s", what, cudaGetErrorString(e));
}

unsigned grid_of(size_t C) { return (unsigned)((C + kThreads - 1) / kThreads); }

__global__ void level_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t s, int64_t g_hi,
                             const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp,
                             qpsk_om_in *omi) {
  const size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (c < C) qpsk_sr_level_ch(&cf, c, nb, s, g_hi, mom, st, sp, omi);
}

__global__ void timing_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t b0, int flushing,
                              int64_t n_total, const qpsk_om_out *om, qpsk_serial_state *st,
                              qpsk_serial_span *sp, qpsk_serial_blk *tb, qpsk_mf_block *mb,
                              int64_t *w0, int64_t *ops, qpsk_cfo_in *cfi) {
  const size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (c < C) qpsk_sr_timing_ch(&cf, c, nb, b0, flushing, n_total, om, st, sp, tb, mb, w0, ops, cfi);
}

__global__ void nco_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t s, int64_t b0,
                           const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
                           qpsk_mf_block *mb) {
  const size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (c < C) qpsk_sr_nco_ch(&cf, c, nb, s, b0, co, st, sp, mb);
}

prx_status level(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t g_hi,
                 const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp, qpsk_om_in *omi,
                 void *stream) {
  level_kernel<<<grid_of(C), kThreads, 0, (cudaStream_t)stream>>>(*cf, C, nb, s, g_hi, mom, st, sp,
                                                                  omi);
  return launched("qpsk serial level");
}

prx_status timing(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t b0, int flushing,
                  int64_t n_total, const qpsk_om_out *om, qpsk_serial_state *st,
                  qpsk_serial_span *sp, qpsk_serial_blk *tb, qpsk_mf_block *mb, int64_t *w0,
                  int64_t *ops, qpsk_cfo_in *cfi, void *stream) {
  timing_kernel<<<grid_of(C), kThreads, 0, (cudaStream_t)stream>>>(
      *cf, C, nb, b0, flushing, n_total, om, st, sp, tb, mb, w0, ops, cfi);
  return launched("qpsk serial timing");
}

prx_status nco(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t b0,
               const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
               qpsk_mf_block *mb, void *stream) {
  nco_kernel<<<grid_of(C), kThreads, 0, (cudaStream_t)stream>>>(*cf, C, nb, s, b0, co, st, sp, mb);
  return launched("qpsk serial nco");
}

} // namespace

extern "C" const prx_qpsk_serial_cuda prx_qpsk_serial_cuda_entries = {level, timing, nco};
