/* The receiver's device-resident path on the CUDA backend (rx_gpu.h): the input block copied to
 * the device once, the channelizer into device rows, the demodulator banks on those rows, the
 * bits (and LLRs) back. Device memory, streams and copies come from the CUDA module's services
 * (the demodulator bank's table, src/qpsk/qpsk_bank_internal.h, and the module's events), so
 * this file is plain C and links nothing of CUDA.
 *
 * A ring of R slots, each a device input buffer and a device row buffer, and three streams
 * ordered by events only: block j's input copy (copy stream) goes into slot j mod R after the
 * channelizer of block j - R has read that slot's input; its channelizer (channel stream) after
 * the copy and after block j - R's banks have read the slot's rows; its banks (demodulator
 * stream) after its channelizer. The host never waits for a copy or the channelizer: it queues
 * the copies and channelizers of up to R - 1 blocks ahead of the block whose banks it calls, and
 * waits only inside the banks (their host passes of a CFO span) and for the bits of a block that
 * completed symbols (most blocks complete none: a span is 8192 symbols). So the copy engine runs
 * ahead through a span's demodulation (~1 ms with 64 carriers) as long as R - 1 blocks of copies
 * outlast it: R holds RX_GPU_AHEAD input samples (2.4 ms of copies at the PCIe bound of ci16)
 * within RX_GPU_RING_BYTES of device memory, RX_GPU_MIN_SLOTS to RX_GPU_MAX_SLOTS slots.
 * On the H200 (bench/GPU_NOTES.md) a span then holds the host ~2.3 ms against ~0.84 ms alone:
 * its waits for the device grow, presumably its small copies queued behind the input on the
 * copy engine; so with 64 carriers in blocks of 2^22 the ring gains nothing, with small blocks
 * and with all 1024 channels it does.
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

#define RX_GPU_AHEAD ((size_t)1 << 25)        /* input samples queued ahead of the banks */
#define RX_GPU_RING_BYTES ((size_t)512 << 20) /* device memory the ring may take */
#define RX_GPU_MIN_SLOTS 3
#define RX_GPU_MAX_SLOTS 64

typedef struct {
  void *d_in;       /* the block's input, in_format */
  prx_cf32 *d_rows; /* n_car rows of rx->stride samples */
  void *ev_in;      /* the copy into d_in done */
  void *ev_read;    /* the channelizer done with d_in */
  void *ev_rows;    /* the channelizer done writing d_rows */
  void *ev_free;    /* the banks done reading d_rows */
  size_t n_out;     /* the block's outputs per row */
} rx_slot;

struct rx_gpu {
  const prx_qpsk_bank_cuda *dev;
  const prx_cuda_module *m; /* its events */
  int device;
  void *s_copy, *s_chan, *s_demod; /* streams: input copies; channelizer; banks + bits back */
  rx_slot *slot;
  size_t R;     /* slots */
  void *d_zero; /* the flush's zeros, K P input samples (NULL for cu8) */
  size_t n_groups;
  uint8_t **d_bits;               /* [groups] device bits, the group's host stride */
  float **d_llrs;                 /* [groups] device LLRs (when asked for) */
  size_t *d_bits_cap, *d_llr_cap; /* [groups] bytes */
  int serial;
  double t_copy;                      /* the input copies (counted in rx->t_chan too) */
  prx_rx_gpu_trace *trace;            /* per-block records (the benchmark's timeline), NULL: none */
  size_t trace_cap, trace_q, trace_d; /* records; blocks queued, demodulated since set */
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
  for (size_t i = 0; G->slot && i < G->R; i++) {
    rx_slot *s = &G->slot[i];
    G->dev->dev_free(s->d_in);
    G->dev->dev_free(s->d_rows);
    G->m->event_destroy(s->ev_in);
    G->m->event_destroy(s->ev_read);
    G->m->event_destroy(s->ev_rows);
    G->m->event_destroy(s->ev_free);
  }
  free(G->slot);
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

/* The ring's slots for blocks of rx->block samples: RX_GPU_AHEAD samples, within
 * RX_GPU_RING_BYTES, RX_GPU_MIN_SLOTS .. RX_GPU_MAX_SLOTS. */
static size_t ring_slots(const prx_rx *rx) {
  size_t in_b = rx->block * prx_format_size(rx->cfg.in_format);
  size_t slot_b = in_b + rx->n_car * rx->stride * sizeof(prx_cf32);
  size_t r = (RX_GPU_AHEAD + rx->block - 1) / rx->block;
  if (r > RX_GPU_RING_BYTES / slot_b) r = RX_GPU_RING_BYTES / slot_b;
  if (r > RX_GPU_MAX_SLOTS) r = RX_GPU_MAX_SLOTS;
  if (r < RX_GPU_MIN_SLOTS) r = RX_GPU_MIN_SLOTS;
  return r;
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
  G->R = ring_slots(rx);
  G->slot = calloc(G->R, sizeof *G->slot);
  G->d_bits = calloc(rx->n_groups, sizeof *G->d_bits);
  G->d_llrs = calloc(rx->n_groups, sizeof *G->d_llrs);
  G->d_bits_cap = calloc(rx->n_groups, sizeof *G->d_bits_cap);
  G->d_llr_cap = calloc(rx->n_groups, sizeof *G->d_llr_cap);
  if (!G->slot || !G->d_bits || !G->d_llrs || !G->d_bits_cap || !G->d_llr_cap)
    return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's CUDA path");
  double t0 = prx_now();
  TRY(G->dev->stream_create(G->device, &G->s_copy));
  TRY(G->dev->stream_create(G->device, &G->s_chan));
  TRY(G->dev->stream_create(G->device, &G->s_demod));
  const size_t size = prx_format_size(rx->cfg.in_format);
  for (size_t i = 0; i < G->R; i++) {
    rx_slot *s = &G->slot[i];
    TRY(G->m->event_create(G->device, &s->ev_in));
    TRY(G->m->event_create(G->device, &s->ev_read));
    TRY(G->m->event_create(G->device, &s->ev_rows));
    TRY(G->m->event_create(G->device, &s->ev_free));
  }
  double t1 = prx_now();
  rx->setup.gpu_streams = t1 - t0;
  for (size_t i = 0; i < G->R; i++) {
    rx_slot *s = &G->slot[i];
    TRY(G->dev->dev_alloc(G->device, rx->block * size, &s->d_in));
    TRY(G->dev->dev_alloc(G->device, rx->n_car * rx->stride * sizeof(prx_cf32),
                          (void **)&s->d_rows));
  }
  double t2 = prx_now();
  rx->setup.gpu_ring = t2 - t1;
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
  double t3 = prx_now();
  rx->setup.gpu_zero = t3 - t2;
  /* the outputs of a whole block and of the flush, so that execute allocates nothing */
  for (size_t i = 0; i < rx->n_groups; i++) {
    TRY(outputs(rx, i, rx->stride, 0));
    TRY(outputs(rx, i, 0, 1));
  }
  rx->setup.gpu_outputs = prx_now() - t3;
  return PRX_OK;
}

void rx_gpu_reset(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  if (!G) return;
  sync_all(G);
  G->t_copy = 0;
  G->trace_q = G->trace_d = 0;
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
  return rx_bank_out(&rx->g[i], rx->gpu->d_bits[i], rx->cfg.llrs ? rx->gpu->d_llrs[i] : NULL);
}

/* The banks' driver times summed over the groups (wait for the device, serial passes). */
static void bank_times(const prx_rx *rx, double *wait_s, double *serial_s) {
  *wait_s = *serial_s = 0;
  for (size_t i = 0; i < rx->n_groups; i++) {
    prx_qpsk_bank_gpu_timing t;
    prx_qpsk_bank_gpu_get_timing(rx->g[i].bank->drv, &t);
    *wait_s += t.wait_s;
    *serial_s += t.serial_s;
  }
}

/* Demodulates n_out new channel outputs per row in the device rows (written on the channel
 * stream before ev_rows, NULL: complete), records ev_free (NULL: none) after the banks' reads of
 * them, and delivers the bits: where a carrier completed symbols they come back (the host waits
 * for the demodulator stream), else the host goes on without waiting (the banks' work stays
 * queued). limit as rx_take; tr: the block's trace record or NULL. */
static prx_status demodulate(prx_rx *rx, const prx_cf32 *rows, void *ev_rows, void *ev_free,
                             size_t n_out, uint64_t limit, prx_rx_gpu_trace *tr) {
  struct rx_gpu *G = rx->gpu;
  size_t skip, m;
  rx_take(rx, n_out, limit, &skip, &m);
  if (m == 0) return PRX_OK;
  double t0 = prx_now(), w0 = 0, s0 = 0;
  if (tr) bank_times(rx, &w0, &s0);
  if (ev_rows) TRY(G->m->stream_wait(G->s_demod, ev_rows));
  rows += skip; /* the group delay: the row pointers move, nothing is copied */
  if (rx->cfg.on_channel) {
    TRY(G->dev->copy2d(rx->rows, rx->stride * sizeof(prx_cf32), rows, rx->stride * sizeof(prx_cf32),
                       m * sizeof(prx_cf32), rx->n_car, G->s_demod));
    TRY(G->dev->sync(G->s_demod));
    rx_deliver_channels(rx, rx->rows, m);
  }
  size_t symbols = 0;
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    TRY(outputs(rx, i, m, 0));
    prx_qpsk_bank_out o = device_out(rx, i);
    TRY(prx_qpsk_bank_execute_device(g->bank, rows + g->first_row * rx->stride, rx->stride, m, &o,
                                     G->s_demod));
    for (size_t r = 0; r < g->n; r++) symbols += g->n_symbols[r] + g->n_bytes[r];
  }
  if (ev_free) TRY(G->m->event_record(ev_free, G->s_demod));
  double t1 = prx_now();
  if (symbols || G->serial) TRY(bring_back(rx));
  double t2 = prx_now();
  rx->emitted += m;
  rx->t_demod += t2 - t0;
  if (tr) {
    double w1, s1;
    bank_times(rx, &w1, &s1);
    tr->t_demod = t0;
    tr->t_banks = t1;
    tr->t_back = t2;
    tr->bank_wait = w1 - w0;
    tr->bank_serial = s1 - s0;
    tr->symbols = 0;
    for (size_t i = 0; i < rx->n_groups; i++)
      for (size_t r = 0; r < rx->g[i].n; r++) tr->symbols += rx->g[i].n_symbols[r];
  }
  if (symbols) rx_deliver(rx);
  return PRX_OK;
}

/* Queues block j's copy (n input samples at in) into slot s, after the channelizer's last read
 * of that slot's input (block j - R), and its channelizer into the slot's rows after the copy
 * and after block j - R's banks; the serial mode waits for each. */
static prx_status queue_block(prx_rx *rx, rx_slot *s, const void *in, size_t n) {
  struct rx_gpu *G = rx->gpu;
  double t0 = prx_now();
  TRY(G->m->stream_wait(G->s_copy, s->ev_read));
  TRY(G->dev->copy(s->d_in, in, n * prx_format_size(rx->cfg.in_format), G->s_copy));
  TRY(G->m->event_record(s->ev_in, G->s_copy));
  if (G->serial) {
    TRY(G->dev->sync(G->s_copy));
    double t = prx_now() - t0;
    G->t_copy += t;
    rx->t_chan += t;
    t0 = prx_now();
  }
  TRY(G->m->stream_wait(G->s_chan, s->ev_in));
  TRY(G->m->stream_wait(G->s_chan, s->ev_free)); /* block j - R's banks done with the rows */
  TRY(prx_chan_execute_device(rx->chan, s->d_in, n, s->d_rows, rx->stride, &s->n_out, G->s_chan));
  TRY(G->m->event_record(s->ev_read, G->s_chan));
  TRY(G->m->event_record(s->ev_rows, G->s_chan));
  if (G->serial) TRY(G->dev->sync(G->s_chan));
  rx->t_chan += prx_now() - t0;
  rx->in_stream += n;
  rx->samples += n;
  return PRX_OK;
}

prx_status rx_gpu_execute(prx_rx *rx, const void *in, size_t n) {
  struct rx_gpu *G = rx->gpu;
  const size_t size = prx_format_size(rx->cfg.in_format);
  const size_t nb = (n + rx->block - 1) / rx->block;
  const size_t ahead = G->serial ? 1 : G->R; /* blocks queued beyond the one demodulated, + 1 */
  const uint8_t *p = in;
  prx_status st = PRX_OK;
  size_t issued = 0; /* blocks whose copy and channelizer are queued */
  for (size_t j = 0; j < nb && !st; j++) {
    while (!st && issued < nb && issued < j + ahead) {
      size_t b = issued + 1 < nb ? rx->block : n - issued * rx->block;
      rx_slot *s = &G->slot[issued % G->R];
      if (G->trace && G->trace_q < G->trace_cap) {
        memset(&G->trace[G->trace_q], 0, sizeof *G->trace);
        G->trace[G->trace_q].t_queue = prx_now();
      }
      G->trace_q++;
      st = queue_block(rx, s, p + issued * rx->block * size, b);
      issued++;
    }
    if (st) break;
    rx_slot *s = &G->slot[j % G->R];
    prx_rx_gpu_trace *tr = G->trace && G->trace_d < G->trace_cap ? &G->trace[G->trace_d] : NULL;
    if (tr) tr->ahead = (unsigned)(issued - j - 1);
    G->trace_d++;
    st = demodulate(rx, s->d_rows, s->ev_rows, s->ev_free, s->n_out, UINT64_MAX, tr);
  }
  /* the caller's input is consumed whatever happened */
  double t0 = prx_now();
  prx_status s2 = sync_all(G);
  rx->t_chan += prx_now() - t0;
  return st ? st : s2;
}

/* The channelizer's flush into slot 0's rows on the device (zeros from d_zero), or through its
 * host call (cu8); *n_out the outputs per row. The streams are idle (execute waited). */
static prx_status flush_chan(prx_rx *rx, size_t *n_out) {
  struct rx_gpu *G = rx->gpu;
  prx_cf32 *rows = G->slot[0].d_rows;
  *n_out = 0;
  size_t n = prx_chan_flush_count(rx->chan);
  if (n > rx->stride)
    return prx_fail(PRX_ERR_INTERNAL, "receiver rows too short for the channelizer's tail");
  if (n && G->d_zero) {
    TRY(prx_chan_execute_device(rx->chan, G->d_zero, (size_t)rx->K * rx->P, rows, rx->stride, n_out,
                                G->s_chan));
    TRY(G->dev->sync(G->s_chan));
    if (*n_out != n)
      return prx_fail(PRX_ERR_INTERNAL, "channelizer flush wrote %zu outputs, expected %zu", *n_out,
                      n);
    prx_chan_reset(rx->chan);
    return PRX_OK;
  }
  TRY(prx_chan_flush(rx->chan, rx->rows, rx->stride, n_out));
  if (*n_out) {
    TRY(G->dev->copy2d(rows, rx->stride * sizeof(prx_cf32), rx->rows, rx->stride * sizeof(prx_cf32),
                       *n_out * sizeof(prx_cf32), rx->n_car, G->s_chan));
    TRY(G->dev->sync(G->s_chan));
  }
  return PRX_OK;
}

prx_status rx_gpu_flush(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  /* channel samples of this stream: ceil(N / D) */
  uint64_t target = (rx->in_stream + rx->D - 1) / rx->D;
  size_t n_out = 0;
  double t0 = prx_now();
  TRY(flush_chan(rx, &n_out));
  rx->t_chan += prx_now() - t0;
  TRY(demodulate(rx, G->slot[0].d_rows, NULL, NULL, n_out, target, NULL));
  t0 = prx_now();
  for (size_t i = 0; i < rx->n_groups; i++) {
    TRY(outputs(rx, i, 0, 1));
    prx_qpsk_bank_out o = device_out(rx, i);
    TRY(prx_qpsk_bank_flush_device(rx->g[i].bank, &o, G->s_demod));
  }
  TRY(bring_back(rx));
  rx->t_demod += prx_now() - t0;
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

void prx_rx_get_setup_times(const prx_rx *rx, prx_rx_setup_times *t) {
  if (rx)
    *t = rx->setup;
  else
    memset(t, 0, sizeof *t);
}

size_t prx_rx_gpu_ring_slots(const prx_rx *rx) { return rx && rx->gpu ? rx->gpu->R : 0; }

void prx_rx_gpu_set_trace(prx_rx *rx, prx_rx_gpu_trace *rec, size_t cap) {
  if (!rx || !rx->gpu) return;
  rx->gpu->trace = cap ? rec : NULL;
  rx->gpu->trace_cap = rec ? cap : 0;
  rx->gpu->trace_q = rx->gpu->trace_d = 0;
}

size_t prx_rx_gpu_trace_count(const prx_rx *rx) {
  if (!rx || !rx->gpu) return 0;
  return rx->gpu->trace_d < rx->gpu->trace_cap ? rx->gpu->trace_d : rx->gpu->trace_cap;
}
