/* The CFO stage of the demodulator bank on the GPU (see qpsk_stages_cuda.h, entry cfo). */
extern "C" {
#include "qpsk_internal.h"
}
#include "qpsk_stages_cfo.cuh"

#include <cuda_runtime.h>
#include <cufft.h>

prx_status stages_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu) {
  (void)s;
  (void)S;
  (void)nfft;
  (void)max_nu;
  return prx_fail(PRX_ERR_UNSUPPORTED, "CUDA demodulator stages: the CFO stage is not built yet");
}

prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream) {
  (void)s;
  (void)w;
  (void)w_stride;
  (void)in;
  (void)out;
  (void)stream;
  return prx_fail(PRX_ERR_UNSUPPORTED, "CUDA demodulator stages: the CFO stage is not built yet");
}

void cfo_release(qpsk_stages *s) { (void)s; }
