/* Internal hooks of the CUDA channelizer backend (not installed), for benchmarks and tests
 * that compare its two designs on one configuration. Only with PRX_HAVE_CUDA. */
#ifndef PRX_CHAN_CUDA_H
#define PRX_CHAN_CUDA_H

#include "polyrx/chan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Re-plans a CUDA channelizer (c must use the CUDA backend) with the general path
 * (general = 1: filter kernel, cuFFT, post kernel) or the fused kernel (general = 0) in one of
 * its builds: variant 0 the default, 1 v5 with the register cap at every size, 2 the design
 * before v5 (v4: sign and channel table in a one-lane-per-output store phase), 3 v5 without
 * the cap, 4 v5 with the filter's branch loop unrolled under 128 registers, 5-9 the default's
 * earlier forms and parts, 10 runs 16-24's default, 11 and 12 that with aligned or
 * base-pointer window loads at every size (see chan_cuda_fused_kernel.cuh); 1..12 take cf32
 * input only. Resets the stream.
 * PRX_ERR_UNSUPPORTED when the fused kernel cannot take this configuration. */
prx_status prx_chan_cuda_retune(prx_chan *c, int variant, int general);
/* 1 when c runs the fused kernel (then *J is its tile), 0 for the general path. */
int prx_chan_cuda_fused(const prx_chan *c, int *J);

#ifdef __cplusplus
}
#endif
#endif
