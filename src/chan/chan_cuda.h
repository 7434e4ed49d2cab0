/* Internal hooks of the CUDA channelizer backend (not installed), for the benchmark and the
 * tests, which compare its designs on one configuration. Only with PRX_HAVE_CUDA. */
#ifndef PRX_CHAN_CUDA_H
#define PRX_CHAN_CUDA_H

#include "polyrx/chan.h"

#include "chan_cuda_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  PRX_CUDA_SELECTED = 0,  /* the fused kernel in the design prx_fused_select gives each
                             launch, else the general path (what prx_chan_create makes) */
  PRX_CUDA_THREAD_STORES, /* the fused kernel, never with the output through the TMA: the
                             design for outputs the TMA cannot take, on every output */
  PRX_CUDA_GENERAL        /* filter kernel, cuFFT, post kernel */
} prx_cuda_design;

/* Re-plans a CUDA channelizer (c must use the CUDA backend) with the given design and resets
 * the stream. PRX_ERR_UNSUPPORTED when the fused kernel cannot take this configuration (the
 * object then keeps the default). */
prx_status prx_chan_cuda_retune(prx_chan *c, prx_cuda_design design);
/* 1 when c runs the fused kernel, then *pol (if not NULL) is the design of its launches into
 * rows that start on 16 bytes; 0 for the general path. */
int prx_chan_cuda_fused(const prx_chan *c, prx_fused_policy *pol);

#ifdef __cplusplus
}
#endif
#endif
