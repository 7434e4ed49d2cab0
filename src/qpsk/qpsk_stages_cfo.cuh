/* The CFO stage of the demodulator bank's CUDA kernels (qpsk_stages_cfo.cu), entries of the
 * stage table (qpsk_stages_cuda.h: cfo_setup, cfo) and the release that destroy calls. */
#ifndef PRX_QPSK_STAGES_CFO_CUH
#define PRX_QPSK_STAGES_CFO_CUH

extern "C" {
#include "qpsk_stages_cuda.h"
}

prx_status stages_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu);
prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream);
void cfo_release(qpsk_stages *s);

#endif
