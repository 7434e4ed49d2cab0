/* The CUDA channelizer backend's entry in the CUDA module (cuda_module.h), and its internal
 * hooks for the benchmark and the tests, which compare its designs on one configuration (not
 * installed). */
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

/* What the CUDA module holds of the channelizer (chan_cuda.cu): the backend's operations and
 * the two hooks below. */
struct prx_chan_ops;
typedef struct prx_chan_cuda {
  const struct prx_chan_ops *ops;
  prx_status (*retune)(prx_chan *c, prx_cuda_design design);
  int (*fused)(const prx_chan *c, prx_fused_policy *pol);
} prx_chan_cuda;
extern const prx_chan_cuda prx_chan_cuda_entries;

/* The hooks, in the library (chan.c, through the module; they fail or return 0 for a
 * channelizer that does not run on the CUDA backend). Re-plans a CUDA channelizer (c must use the
 * CUDA backend) with the given design and resets the stream. PRX_ERR_UNSUPPORTED when the fused
 * kernel cannot take this configuration (the object then keeps the default). */
prx_status prx_chan_cuda_retune(prx_chan *c, prx_cuda_design design);
/* 1 when c runs the fused kernel, then *pol (if not NULL) is the design of its launches into
 * rows that start on 16 bytes; 0 for the general path. */
int prx_chan_cuda_fused(const prx_chan *c, prx_fused_policy *pol);

#ifdef __cplusplus
}
#endif
#endif
