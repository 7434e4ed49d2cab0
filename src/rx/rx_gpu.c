/* The receiver's device-resident path on the CUDA backend (rx_gpu.h): the input block copied to
 * the device once, the channelizer into device rows, the demodulator banks on those rows, the
 * bits (and LLRs) back. Device memory, streams and copies come from the CUDA module's services
 * (the demodulator bank's table, src/qpsk/qpsk_bank_internal.h, and the module's events), so
 * this file is plain C and links nothing of CUDA.
 *
 * Overlap within one call, three streams: block j + 1's input copy (copy stream) runs while the
 * channelizer computes block j (channel stream, ordered after its copy by an event) and the
 * banks demodulate block j - 1 (demodulator stream: the banks' device calls wait on their own
 * stream several times per CFO span, so one stream would serialise everything). Two input and
 * two row buffers alternate; the host waits for the channel stream only when block j is next.
 * The flush's filter tail (at most 2 P + 1 outputs per row) runs on the device on a zeroed
 * block, as the channelizer's own flush does, except for cu8 input (no byte value is the zero
 * sample): that goes through the channelizer's host call and is copied up. */
#include "rx_gpu.h"

#include "rx_internal.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"
#include "../qpsk/qpsk_bank_internal.h"

#include <stdlib.h>
#include <string.h>

struct rx_gpu {
  const prx_qpsk_bank_cuda *dev;
  const prx_cuda_module *m; /* its events */
  int device;
  void *s_copy, *s_chan, *s_demod; /* streams: input copies; channelizer; banks + bits back */
  void *ev_in[2];                  /* d_in[k]'s copy done */
  void *ev_read[2];                /* the channelizer done with d_in[k] */
  void *d_in[2];                   /* block inputs, in_format */
  void *d_zero;                    /* the flush's zeros, K P input samples (NULL for cu8) */
  prx_cf32 *d_rows[2];             /* n_car rows of rx->stride samples */
  size_t n_groups;
  uint8_t **d_bits;               /* [groups] device bits, the group's host stride */
  float **d_llrs;                 /* [groups] device LLRs (when asked for) */
  size_t *d_bits_cap, *d_llr_cap; /* [groups] bytes */
  int serial;
  double t_copy; /* the input copies (counted in rx->t_chan too) */
};

#define TRY(x)                                                                                     \
  do {                                                                                             \
    prx_status st_ = (x);                                                                          \
    if (st_) return st_;                                                                           \
  } while (0)

/* Waits for all three streams; the first failure. */
static prx_status sync_all(struct rx_gpu *G) {
  prx_status st = PRX_OK, s2;
  void *s[3] = {G->s_copy, G->s_chan, G->s_demod};
  for (int i = 0; i < 3; i++)
    if (s[i] && (s2 = G->dev->sync(s[i])) && !st) st = s2;
  return st;
}

void rx_gpu_destroy(struct rx_gpu *G) {
  if (!G) return;
  sync_all(G);
  for (int i = 0; i < 2; i++) {
    G->dev->dev_free(G->d_in[i]);
    G->dev->dev_free(G->d_rows[i]);
    G->m->event_destroy(G->ev_in[i]);
    G->m->event_destroy(G->ev_read[i]);
  }
  G->dev->dev_free(G->d_zero);
  for (size_t i = 0; i < G->n_groups; i++) {
    if (G->d_bits) G->dev->dev_free(G->d_bits[i]);
    if (G->d_llrs) G->dev->dev_free(G->d_llrs[i]);
  }
  free(G->d_bits);
  free(G->d_llrs);
  free(G->d_bits_cap);
  free(G->d_llr_cap);
  if (G->s_copy) G->dev->stream_destroy(G->s_copy);
  if (G->s_chan) G->dev->stream_destroy(G->s_chan);
  if (G->s_demod) G->dev->stream_destroy(G->s_demod);
  free(G);
}

/* Grows a device buffer to bytes (its content is not kept). */
static prx_status dgrow(const struct rx_gpu *G, void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  G->dev->dev_free(*p);
  *p = NULL;
  *cap = 0;
  TRY(G->dev->dev_alloc(G->device, bytes, p));
  *cap = bytes;
  return PRX_OK;
}

/* The host and device output buffers of group i for a call with n_in samples per row (or the
 * flush). */
static prx_status outputs(prx_rx *rx, size_t i, size_t n_in, int flush) {
  struct rx_gpu *G = rx->gpu;
  rx_group *g = &rx->g[i];
  TRY(rx_ensure_capacity(rx, g, n_in, flush));
  TRY(dgrow(G, (void **)&G->d_bits[i], &G->d_bits_cap[i], g->n * g->bits_stride));
  if (rx->cfg.llrs)
    TRY(dgrow(G, (void **)&G->d_llrs[i], &G->d_llr_cap[i], g->n * g->llr_stride * sizeof(float)));
  return PRX_OK;
}

prx_status rx_gpu_create(prx_rx *rx) {
  const prx_cuda_module *m = prx_cuda_module_get();
  if (!m || !m->qpsk_bank)
    return prx_fail(PRX_ERR_NODEVICE, "the receiver's CUDA path needs the CUDA module: %s",
                    prx_cuda_module_why());
  struct rx_gpu *G = calloc(1, sizeof *G);
  if (!G) return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's CUDA path");
  rx->gpu = G;
  G->m = m;
  G->dev = m->qpsk_bank;
  G->device = rx->cfg.device;
  G->n_groups = rx->n_groups;
  G->d_bits = calloc(rx->n_groups, sizeof *G->d_bits);
  G->d_llrs = calloc(rx->n_groups, sizeof *G->d_llrs);
  G->d_bits_cap = calloc(rx->n_groups, sizeof *G->d_bits_cap);
  G->d_llr_cap = calloc(rx->n_groups, sizeof *G->d_llr_cap);
  if (!G->d_bits || !G->d_llrs || !G->d_bits_cap || !G->d_llr_cap)
    return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's CUDA path");
  TRY(G->dev->stream_create(G->device, &G->s_copy));
  TRY(G->dev->stream_create(G->device, &G->s_chan));
  TRY(G->dev->stream_create(G->device, &G->s_demod));
  const size_t size = prx_format_size(rx->cfg.in_format);
  for (int i = 0; i < 2; i++) {
    TRY(G->m->event_create(G->device, &G->ev_in[i]));
    TRY(G->m->event_create(G->device, &G->ev_read[i]));
    TRY(G->dev->dev_alloc(G->device, rx->block * size, &G->d_in[i]));
    TRY(G->dev->dev_alloc(G->device, rx->n_car * rx->stride * sizeof(prx_cf32),
                          (void **)&G->d_rows[i]));
  }
  if (rx->cfg.in_format != PRX_CU8) { /* the zero sample is all zero bytes */
    size_t bytes = (size_t)rx->K * rx->P * size;
    void *zeros = calloc(1, bytes);
    if (!zeros) return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's flush");
    prx_status st = G->dev->dev_alloc(G->device, bytes, &G->d_zero);
    if (!st) st = G->dev->copy(G->d_zero, zeros, bytes, G->s_chan);
    if (!st) st = G->dev->sync(G->s_chan);
    free(zeros);
    TRY(st);
  }
  /* the outputs of a whole block and of the flush, so that execute allocates nothing */
  for (size_t i = 0; i < rx->n_groups; i++) {
    TRY(outputs(rx, i, rx->stride, 0));
    TRY(outputs(rx, i, 0, 1));
  }
  return PRX_OK;
}

void rx_gpu_reset(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  if (!G) return;
  sync_all(G);
  G->t_copy = 0;
}

/* Each group's bits (and LLRs) of the banks' last call back to the host buffers, then waits for
 * the demodulator stream. */
static prx_status bring_back(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    size_t wb = 0, ws = 0;
    for (size_t r = 0; r < g->n; r++) {
      if (g->n_bytes[r] > wb) wb = g->n_bytes[r];
      if (2 * g->n_symbols[r] > ws) ws = 2 * g->n_symbols[r];
    }
    if (wb)
      TRY(G->dev->copy2d(g->bits, g->bits_stride, G->d_bits[i], g->bits_stride, wb, g->n,
                         G->s_demod));
    if (rx->cfg.llrs && ws)
      TRY(G->dev->copy2d(g->llrs, g->llr_stride * sizeof(float), G->d_llrs[i],
                         g->llr_stride * sizeof(float), ws * sizeof(float), g->n, G->s_demod));
  }
  return G->dev->sync(G->s_demod);
}

static prx_qpsk_bank_out device_out(const prx_rx *rx, size_t i) {
  const rx_group *g = &rx->g[i];
  prx_qpsk_bank_out o;
  o.bits = rx->gpu->d_bits[i];
  o.bits_stride = g->bits_stride;
  o.llrs = rx->cfg.llrs ? rx->gpu->d_llrs[i] : NULL;
  o.llr_stride = g->llr_stride;
  o.n_symbols = g->n_symbols;
  o.n_bytes = g->n_bytes;
  return o;
}

/* Demodulates n_out new channel outputs per row in the device rows (complete: the channel
 * stream waited for) and delivers them; limit as rx_take. */
static prx_status demodulate(prx_rx *rx, const prx_cf32 *rows, size_t n_out, uint64_t limit) {
  struct rx_gpu *G = rx->gpu;
  size_t skip, m;
  rx_take(rx, n_out, limit, &skip, &m);
  if (m == 0) return PRX_OK;
  double t0 = rx_now();
  rows += skip; /* the group delay: the row pointers move, nothing is copied */
  if (rx->cfg.on_channel) {
    TRY(G->dev->copy2d(rx->rows, rx->stride * sizeof(prx_cf32), rows, rx->stride * sizeof(prx_cf32),
                       m * sizeof(prx_cf32), rx->n_car, G->s_demod));
    TRY(G->dev->sync(G->s_demod));
    for (size_t c = 0; c < rx->n_car; c++) {
      const rx_group *g = &rx->g[rx->group_of[c]];
      rx->cfg.on_channel(rx->cfg.user, c, rx->rows + (g->first_row + rx->row_of[c]) * rx->stride,
                         m);
    }
  }
  for (size_t i = 0; i < rx->n_groups; i++) {
    TRY(outputs(rx, i, m, 0));
    prx_qpsk_bank_out o = device_out(rx, i);
    TRY(prx_qpsk_bank_execute_device(rx->g[i].bank, rows + rx->g[i].first_row * rx->stride,
                                     rx->stride, m, &o, G->s_demod));
  }
  TRY(bring_back(rx));
  rx->emitted += m;
  rx->t_demod += rx_now() - t0;
  rx_deliver(rx);
  return PRX_OK;
}

/* Queues the copy of n input samples at in into d_in[k] on the copy stream, after the
 * channelizer's last read of that buffer. */
static prx_status queue_copy(prx_rx *rx, int k, const void *in, size_t n) {
  struct rx_gpu *G = rx->gpu;
  double t0 = rx_now();
  TRY(G->m->stream_wait(G->s_copy, G->ev_read[k]));
  TRY(G->dev->copy(G->d_in[k], in, n * prx_format_size(rx->cfg.in_format), G->s_copy));
  TRY(G->m->event_record(G->ev_in[k], G->s_copy));
  if (G->serial) {
    TRY(G->dev->sync(G->s_copy));
    double t = rx_now() - t0;
    G->t_copy += t;
    rx->t_chan += t;
  }
  return PRX_OK;
}

/* Queues the channelizer on the n input samples in d_in[k] (after their copy) into d_rows[k] on
 * the channel stream; *n_out its outputs per row. */
static prx_status queue_chan(prx_rx *rx, int k, size_t n, size_t *n_out) {
  struct rx_gpu *G = rx->gpu;
  double t0 = rx_now();
  TRY(G->m->stream_wait(G->s_chan, G->ev_in[k]));
  TRY(prx_chan_execute_device(rx->chan, G->d_in[k], n, G->d_rows[k], rx->stride, n_out, G->s_chan));
  TRY(G->m->event_record(G->ev_read[k], G->s_chan));
  if (G->serial) TRY(G->dev->sync(G->s_chan));
  rx->t_chan += rx_now() - t0;
  rx->in_stream += n;
  rx->samples += n;
  return PRX_OK;
}

prx_status rx_gpu_execute(prx_rx *rx, const void *in, size_t n) {
  struct rx_gpu *G = rx->gpu;
  const size_t size = prx_format_size(rx->cfg.in_format);
  const uint8_t *p = in;
  prx_status st = PRX_OK;
  /* block j: its input copied (queued) into d_in[k] (b_in samples, 0: none); block j - 1: its
   * rows channelized into d_rows[k ^ 1] (have_out outputs per row), not yet demodulated */
  int k = 0, have = 0;
  size_t b_in = 0, have_out = 0;
  if (n) {
    b_in = n < rx->block ? n : rx->block;
    st = queue_copy(rx, k, p, b_in);
    p += b_in * size;
    n -= b_in;
  }
  while (!st && (b_in || have)) {
    size_t b_next = 0, n_out = 0;
    if (b_in) {
      if (n) { /* block j + 1's copy overlaps block j's channelizer and block j - 1's banks */
        b_next = n < rx->block ? n : rx->block;
        if ((st = queue_copy(rx, k ^ 1, p, b_next))) break;
        p += b_next * size;
        n -= b_next;
      }
      if ((st = queue_chan(rx, k, b_in, &n_out))) break;
    }
    if (have) {
      st = demodulate(rx, G->d_rows[k ^ 1], have_out, UINT64_MAX);
      have = 0;
    }
    if (b_in) {
      double t0 = rx_now();
      prx_status s2 = G->dev->sync(G->s_chan); /* block j's rows are done */
      rx->t_chan += rx_now() - t0;
      if (!st) st = s2;
      have = 1;
      have_out = n_out;
      k ^= 1;
      b_in = b_next;
    }
  }
  /* the caller's input is consumed whatever happened */
  prx_status s2 = sync_all(G);
  return st ? st : s2;
}

/* The channelizer's flush into d_rows[0] on the device (zeros from d_zero), or through its host
 * call (cu8); *n_out the outputs per row. */
static prx_status flush_chan(prx_rx *rx, size_t *n_out) {
  struct rx_gpu *G = rx->gpu;
  *n_out = 0;
  size_t n = prx_chan_flush_count(rx->chan);
  if (n > rx->stride)
    return prx_fail(PRX_ERR_INTERNAL, "receiver rows too short for the channelizer's tail");
  if (n && G->d_zero) {
    TRY(prx_chan_execute_device(rx->chan, G->d_zero, (size_t)rx->K * rx->P, G->d_rows[0],
                                rx->stride, n_out, G->s_chan));
    TRY(G->dev->sync(G->s_chan));
    if (*n_out != n)
      return prx_fail(PRX_ERR_INTERNAL, "channelizer flush wrote %zu outputs, expected %zu", *n_out,
                      n);
    prx_chan_reset(rx->chan);
    return PRX_OK;
  }
  TRY(prx_chan_flush(rx->chan, rx->rows, rx->stride, n_out));
  if (*n_out) {
    TRY(G->dev->copy2d(G->d_rows[0], rx->stride * sizeof(prx_cf32), rx->rows,
                       rx->stride * sizeof(prx_cf32), *n_out * sizeof(prx_cf32), rx->n_car,
                       G->s_chan));
    TRY(G->dev->sync(G->s_chan));
  }
  return PRX_OK;
}

prx_status rx_gpu_flush(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  /* channel samples of this stream: ceil(N / D) */
  uint64_t target = (rx->in_stream + rx->D - 1) / rx->D;
  size_t n_out = 0;
  double t0 = rx_now();
  TRY(flush_chan(rx, &n_out));
  rx->t_chan += rx_now() - t0;
  TRY(demodulate(rx, G->d_rows[0], n_out, target));
  t0 = rx_now();
  for (size_t i = 0; i < rx->n_groups; i++) {
    TRY(outputs(rx, i, 0, 1));
    prx_qpsk_bank_out o = device_out(rx, i);
    TRY(prx_qpsk_bank_flush_device(rx->g[i].bank, &o, G->s_demod));
  }
  TRY(bring_back(rx));
  rx->t_demod += rx_now() - t0;
  rx_deliver(rx);
  return PRX_OK;
}

void prx_rx_gpu_set_serial(prx_rx *rx, int serial) {
  if (rx && rx->gpu) rx->gpu->serial = serial != 0;
}

void prx_rx_gpu_get_times(const prx_rx *rx, double *copy_s, double *chan_s, double *demod_s) {
  double c = rx && rx->gpu ? rx->gpu->t_copy : 0;
  if (copy_s) *copy_s = c;
  if (chan_s) *chan_s = rx ? rx->t_chan - c : 0;
  if (demod_s) *demod_s = rx ? rx->t_demod : 0;
}
