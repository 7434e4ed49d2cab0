/* CPU channelizer backend (placeholder until the CPU backend lands). */
#include "chan_internal.h"

#include "../core/internal.h"

static prx_status cpu_create(prx_chan *c) {
  (void)c;
  return prx_fail(PRX_ERR_UNSUPPORTED, "the CPU channelizer is not built yet");
}
static void cpu_destroy(prx_chan *c) { (void)c; }
static void cpu_reset(prx_chan *c) { (void)c; }

const prx_chan_ops prx_chan_cpu_ops = {cpu_create, cpu_destroy, cpu_reset, NULL, NULL, NULL};
