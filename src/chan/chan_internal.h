/* The channelizer object shared by its backends (chan.c validates, designs and counts;
 * chan_cpu.c and chan_cuda.cu compute). Not installed. */
#ifndef PRX_CHAN_INTERNAL_H
#define PRX_CHAN_INTERNAL_H

#include "polyrx/chan.h"

#include <stdint.h>

typedef struct prx_chan_ops prx_chan_ops;

struct prx_chan {
  prx_chan_config cfg; /* the caller's config with taps/select pointing at our copies */
  unsigned K, D;       /* channels, decimation */
  size_t M;            /* prototype length */
  float *taps;         /* prototype h[0..M-1], as in the definition in polyrx/chan.h */
  unsigned *select;    /* selected channel indices, in output order */
  size_t n_sel;
  prx_backend backend; /* CPU or CUDA (AUTO resolved) */
  uint64_t consumed;   /* input samples given since the last reset (N) */
  uint64_t emitted;    /* outputs per channel emitted since the last reset (= ceil(N / D)) */
  const prx_chan_ops *ops;
  void *impl; /* the backend's state */
  /* power sums (cfg.power_sums, polyrx/chan.h): the window of output indices, and what the
   * backend formed since the last prx_chan_power_take (it adds each call's to them) */
  uint64_t power_from, power_to;
  double *power; /* per selected channel */
  uint64_t power_nonfinite, power_saturated;
};

/* A backend. chan.c has validated every argument and computed n_out (the number of outputs
 * per channel this call must write: outputs j = c->emitted .. c->emitted + n_out - 1) before
 * calling execute; chan.c updates consumed/emitted afterwards. Flush is an execute of M-1
 * zeros followed by reset, so backends need not implement it. */
struct prx_chan_ops {
  prx_status (*create)(prx_chan *c);
  void (*destroy)(prx_chan *c);
  void (*reset)(prx_chan *c);
  prx_status (*execute)(prx_chan *c, const void *in, size_t n_in, void *out, size_t out_stride,
                        size_t n_out);
  /* NULL where the backend has no device-resident path */
  prx_status (*execute_device)(prx_chan *c, const void *d_in, size_t n_in, void *d_out,
                               size_t out_stride, size_t n_out, void *stream);
  /* feeds n_zeros zero samples (the flush tail) and writes n_out outputs */
  prx_status (*execute_zeros)(prx_chan *c, size_t n_zeros, void *out, size_t out_stride,
                              size_t n_out);
};

extern const prx_chan_ops prx_chan_cpu_ops; /* the CUDA backend's: in the CUDA module */

/* ceil(a / b) for b > 0 */
static inline uint64_t prx_ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* The CPU backend's outputs per FFT batch (a call's remainder is transformed one output at a
 * time): enough rows that the filter kernel's tap tile is reused by several groups of 4 outputs
 * while it is in L1 (32 k samples of rows), at least 16 while that stays within 512 KiB of rows,
 * at most 64 (measured on Zen 3: K = 4096 filters 1.5x faster with 16 rows than with 4). Callers
 * choosing a block size (the channelize command, its benchmark) take whole batches from it. */
static inline size_t prx_chan_cpu_batch_outputs(size_t K) {
  size_t a = 32768 / K, b = 65536 / K;
  size_t nb = a > 64 ? 64 : a;
  if (nb < (b < 16 ? b : 16)) nb = b < 16 ? b : 16;
  return nb < 1 ? 1 : nb;
}

/* prx_fft_warm (dsp/fft_plan.h) for a CPU channelizer of K channels: the K-point transform it
 * plans (plan_transform). NULL for a K it refuses; destroyed by prx_fft_warm_end. */
void *prx_chan_cpu_warm(size_t K);

#endif
