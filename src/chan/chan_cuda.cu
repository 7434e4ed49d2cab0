/* CUDA channelizer backend (placeholder until the GPU backend lands). */
extern "C" {
#include "chan_internal.h"

#include "../core/internal.h"
}

static prx_status cuda_create(prx_chan *c) {
  (void)c;
  return prx_fail(PRX_ERR_UNSUPPORTED, "the CUDA channelizer is not built yet");
}
static void cuda_destroy(prx_chan *c) { (void)c; }
static void cuda_reset(prx_chan *c) { (void)c; }

extern "C" const prx_chan_ops prx_chan_cuda_ops = {cuda_create, cuda_destroy, cuda_reset,
                                                   NULL,        NULL,         NULL};
