/* The receiver's device-resident path on the CUDA backend (rx_gpu.h): the input block copied to
 * the device once, the channelizer into device rows, the demodulator banks on those rows, the
 * bits (and LLRs) back. Device memory, streams and copies come from the CUDA module's services
 * (the demodulator bank's table, src/qpsk/qpsk_bank_internal.h, and the module's events), so
 * this file is plain C and links nothing of CUDA.
 *
 * Input slots, row batches and the row window. The consecutive blocks of a batch go up in
 * groups (up to RX_GPU_MERGE samples, one copy and one channelizer call each: small blocks cost
 * the host one launch per group, not per block), each group's input into one of R input slots
 * (a device buffer each); its channelizer writes the group's outputs after the rows written
 * before, in one device row window whose rows the banks read in place; the banks are called
 * once per batch (A blocks, or the call's last blocks), so that a bank call carries about one
 * CFO span of samples per row whatever the block: the bank's cost per call (its host
 * bookkeeping over every channel, launches, one wait for the output counts where a span ends)
 * is paid once a span, not once a block (at 1024 channels in blocks of 2^22 a span ends about
 * one block in five: a call per block pays it five times). The banks read the samples they keep
 * from earlier batches (their history: up to a CFO span's window) where the channelizer wrote
 * them, before the batch's rows (prx_qpsk_bank_execute_device_kept): no sample is copied for
 * them, except where a batch would pass the window's end: then the history moves to the
 * window's start and the batch follows it (every few batches; window_stride keeps the move
 * clear of the rows the banks of the batches before still read).
 * Four streams ordered by events only: a group's input copy (copy stream) after the channelizer
 * of the group R before has read its slot; its channelizer (channel stream) after the copy and,
 * for a batch's first group, after the banks of the batch RX_GPU_BATCHES before have read the
 * window; the banks (demodulator stream) after the batch's last channelizer; the bits' copy
 * back (back stream) after the banks. The host never waits for a copy or the channelizer: it
 * queues the blocks of the batch whose banks it calls and of the RX_GPU_BATCHES - 1 after it
 * before the call, and waits only inside the banks (one wait per call that ends a span) and,
 * where a batch completed symbols, for the bits of the batch before (their copy long done): a
 * batch's bits come back into pinned host rows on the back stream, beside the next batch's
 * banks, and are delivered after the next bank call that completes symbols or at the end of the
 * call (every bit completed from a call's blocks is delivered before it returns). A call's last
 * batch whose bank call would complete no symbols is deferred: its rows stay in the window and
 * join the next bank call (the next call's first, where its rows follow, or the flush's).
 * The bank outputs alternate between two device sets, so that the banks never wait for the copy
 * of the set before.
 * The flush's filter tail (at most 2 P + 1 outputs per row) runs on the device on a zeroed
 * block, as the channelizer's own flush does, except for cu8 input (no byte value is the zero
 * sample): that goes through the channelizer's host call and is copied up. The stream's end is
 * then one bank call per group (the deferred batch, the tail and the flush), held so that its
 * last reports are settled while its bits come back. */
#include "rx_gpu.h"

#include "rx_internal.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"
#include "../qpsk/qpsk_bank_internal.h"
#include "../qpsk/qpsk_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RX_GPU_AHEAD ((size_t)1 << 25)      /* input samples in the input slots */
#define RX_GPU_IN_BYTES ((size_t)512 << 20) /* device memory the input slots may take */
#define RX_GPU_MIN_SLOTS 3
#define RX_GPU_MAX_SLOTS 64
/* batches in flight: one channelized while the banks read one (a third, the copies and the
 * channelizer two batches ahead, the window 2 hist + 4 bstride, measured slower at 1024 channels:
 * bench/GPU_NOTES.md, "Receiver, tenth session") */
#define RX_GPU_BATCHES 2
/* input samples one copy and channelizer call may take: the fused channelizer at K = 1024 runs
 * 2^24-sample calls at 92 Gsps, 2^22-sample calls at 82 (its last wave of blocks) */
#define RX_GPU_MERGE ((size_t)1 << 24)
#define RX_GPU_ROWS_BYTES ((size_t)4 << 30) /* device memory the row window may take */

typedef struct {
  void *d_in;    /* a group's input (merge_max blocks at most), in_format */
  void *ev_in;   /* the copy into d_in done */
  void *ev_read; /* the channelizer done with d_in */
} rx_slot;

typedef struct {
  size_t start;  /* its first output's position in the row window */
  size_t n_out;  /* outputs per row written by the blocks queued into it */
  void *ev_rows; /* the channelizer done writing its rows (its latest block) */
  void *ev_free; /* the banks done reading its rows and the history before them */
} rx_batch;

/* a group's outputs: two device sets the banks write in turn, the pinned host rows a set comes
 * back to, and the counts and strides of the set being brought back */
typedef struct {
  uint8_t *d_bits[2];
  float *d_llrs[2];
  size_t d_bits_cap[2], d_llr_cap[2]; /* bytes */
  uint8_t *h_bits;
  float *h_llrs;
  size_t h_bits_cap, h_llr_cap; /* bytes */
  size_t bits_stride, llr_stride;
  size_t *n_symbols, *n_bytes;
} rx_gout;

struct rx_gpu {
  const prx_qpsk_bank_cuda *dev;
  const prx_cuda_module *m; /* its events, pinned memory */
  int device;
  void *s_copy, *s_chan, *s_demod, *s_back; /* input copies; channelizer; banks; bits back */
  rx_slot *slot;
  size_t R; /* input slots */
  rx_batch bat[RX_GPU_BATCHES];
  size_t A;                /* blocks per batch (per bank call) */
  size_t merge, merge_max; /* blocks per copy and channelizer call at most; the slots' room */
  size_t bstride;          /* the most outputs per row a batch (or the flush) writes */
  /* the row window: n_car rows of wstride samples; the batches are channelized one after the
   * other (at pos), so that the samples the banks keep from earlier batches stay before a batch's
   * rows; [0, pos) is this stream's (from pos 0 at its start); the last hist of them move to the
   * window's start where a batch would pass its end */
  prx_cf32 *d_win;
  size_t wstride, hist, pos;
  size_t bank_end; /* the position after the banks' last sample (their stream's end) */
  size_t moves;    /* the window's moves since create */
  double t_move;   /* the serial mode's wait for the moves (counted in rx->t_chan too) */
  void *d_zero;    /* the flush's zeros, K P input samples (NULL for cu8) */
  size_t n_groups;
  rx_gout *go;      /* [groups] */
  int h_pinned;     /* the groups' h_bits and h_llrs from host_alloc (else malloc) */
  rx_group *dlv;    /* [groups] the groups with the pending outputs' fields, for delivery */
  void *ev_banks;   /* the banks' outputs written (demodulator stream) */
  void *ev_back[2]; /* the copy back of output set k done (back stream) */
  int back_used[2]; /* ev_back[k] recorded */
  int set;          /* the output set the next bank call writes */
  int pending;      /* a batch's bits on their way back (set set ^ 1), not yet delivered */
  int serial;
  /* the last batch of an execute whose banks would complete no symbols: their call waits,
   * merged into the next execute's first bank call or the flush's (one bank call for the
   * stream's end) where its rows follow, else made at the next call's start */
  int deferred;
  size_t def_p, def_m, def_kept; /* its window position, new samples, history */
  unsigned def_mask;             /* the batches whose ev_free follows its reads (bit k: bat[k]) */
  double t_fl[3];                /* the flushes' channelizer tail, banks, bits back (seconds) */
  double t_fl_wait, t_fl_serial; /* the flushes' banks: their waits and serial passes */
  unsigned grows;                /* output buffers grown since create (execute should grow none) */
  double t_copy;                 /* the input copies (counted in rx->t_chan too) */
  prx_rx_gpu_trace *trace;       /* per-call records (the benchmark's timeline), NULL: none */
  size_t trace_cap, trace_q, trace_d; /* records; batches begun, demodulated since set */
};

#define TRY(x)                                                                                     \
  do {                                                                                             \
    prx_status st_ = (x);                                                                          \
    if (st_) return st_;                                                                           \
  } while (0)

/* Waits for all four streams; the first failure. */
static prx_status sync_all(struct rx_gpu *G) {
  prx_status st = PRX_OK, s2;
  void *s[4] = {G->s_copy, G->s_chan, G->s_demod, G->s_back};
  for (int i = 0; i < 4; i++)
    if (s[i] && (s2 = G->dev->sync(s[i])) && !st) st = s2;
  return st;
}

static void hfree(const struct rx_gpu *G, void *p) {
  if (G->h_pinned)
    G->m->host_free(p);
  else
    free(p);
}

void rx_gpu_destroy(struct rx_gpu *G) {
  if (!G) return;
  sync_all(G);
  for (size_t i = 0; G->slot && i < G->R; i++) {
    rx_slot *s = &G->slot[i];
    G->dev->dev_free(s->d_in);
    G->m->event_destroy(s->ev_in);
    G->m->event_destroy(s->ev_read);
  }
  free(G->slot);
  G->dev->dev_free(G->d_win);
  for (int k = 0; k < RX_GPU_BATCHES; k++) {
    G->m->event_destroy(G->bat[k].ev_rows);
    G->m->event_destroy(G->bat[k].ev_free);
  }
  G->dev->dev_free(G->d_zero);
  for (size_t i = 0; G->go && i < G->n_groups; i++) {
    rx_gout *o = &G->go[i];
    for (int k = 0; k < 2; k++) {
      G->dev->dev_free(o->d_bits[k]);
      G->dev->dev_free(o->d_llrs[k]);
    }
    hfree(G, o->h_bits);
    hfree(G, o->h_llrs);
    free(o->n_symbols);
    free(o->n_bytes);
  }
  free(G->go);
  free(G->dlv);
  G->m->event_destroy(G->ev_banks);
  G->m->event_destroy(G->ev_back[0]);
  G->m->event_destroy(G->ev_back[1]);
  if (G->s_copy) G->dev->stream_destroy(G->s_copy);
  if (G->s_chan) G->dev->stream_destroy(G->s_chan);
  if (G->s_demod) G->dev->stream_destroy(G->s_demod);
  if (G->s_back) G->dev->stream_destroy(G->s_back);
  free(G);
}

/* Grows a device buffer to bytes (its content is not kept). */
static prx_status dgrow(struct rx_gpu *G, void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  G->grows++;
  G->dev->dev_free(*p);
  *p = NULL;
  *cap = 0;
  TRY(G->dev->dev_alloc(G->device, bytes, p));
  *cap = bytes;
  return PRX_OK;
}

/* Grows a host buffer of a group's bits or LLRs to bytes (its content is not kept): pinned
 * memory, or malloc where the module cannot have it (the copies back are then slower). */
static prx_status hgrow(struct rx_gpu *G, void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  G->grows++;
  hfree(G, *p);
  *cap = 0;
  *p = G->h_pinned ? G->m->host_alloc(bytes) : malloc(bytes);
  if (!*p) return prx_fail(PRX_ERR_NOMEM, "out of host memory for the receiver's bits");
  *cap = bytes;
  return PRX_OK;
}

/* The bytes of group g's bits and of its LLRs at its strides: a device output set, the host
 * rows. */
static size_t bits_bytes(const rx_group *g) { return g->n * g->bits_stride; }
static size_t llr_bytes(const rx_group *g) { return g->n * g->llr_stride * sizeof(float); }

/* Group i's strides and its device output set k for a call with n_in samples per row (or the
 * flush). */
static prx_status outputs(prx_rx *rx, size_t i, int k, size_t n_in, int flush) {
  struct rx_gpu *G = rx->gpu;
  rx_group *g = &rx->g[i];
  rx_gout *o = &G->go[i];
  TRY(rx_ensure_capacity(rx, g, n_in, flush, 0));
  TRY(dgrow(G, (void **)&o->d_bits[k], &o->d_bits_cap[k], bits_bytes(g)));
  if (rx->cfg.llrs) TRY(dgrow(G, (void **)&o->d_llrs[k], &o->d_llr_cap[k], llr_bytes(g)));
  return PRX_OK;
}

/* Group i's host rows for its bits (and LLRs) at its strides. */
static prx_status host_rows(prx_rx *rx, size_t i) {
  struct rx_gpu *G = rx->gpu;
  const rx_group *g = &rx->g[i];
  rx_gout *o = &G->go[i];
  TRY(hgrow(G, (void **)&o->h_bits, &o->h_bits_cap, bits_bytes(g)));
  if (rx->cfg.llrs) TRY(hgrow(G, (void **)&o->h_llrs, &o->h_llr_cap, llr_bytes(g)));
  return PRX_OK;
}

/* The input slots for groups of merge blocks of rx->block samples: RX_GPU_AHEAD samples,
 * within RX_GPU_IN_BYTES, RX_GPU_MIN_SLOTS .. RX_GPU_MAX_SLOTS. */
static size_t ring_slots(const prx_rx *rx, size_t merge) {
  size_t in_b = merge * rx->block * prx_format_size(rx->cfg.in_format);
  size_t r = (RX_GPU_AHEAD + merge * rx->block - 1) / (merge * rx->block);
  if (r > RX_GPU_IN_BYTES / in_b) r = RX_GPU_IN_BYTES / in_b;
  if (r > RX_GPU_MAX_SLOTS) r = RX_GPU_MAX_SLOTS;
  if (r < RX_GPU_MIN_SLOTS) r = RX_GPU_MIN_SLOTS;
  return r;
}

/* The batches' row pitch for A blocks: their outputs (rx_most_outputs a block, as the host rows
 * hold) and at least the flush's (rx->stride holds it). */
static size_t batch_stride(const prx_rx *rx, size_t A) {
  size_t need = A * rx_most_outputs(rx, rx->block);
  if (need < rx->stride) need = rx->stride;
  return rx_row_pitch(need);
}

/* The samples before a batch's rows that the banks read (prx_qpsk_bank_history: a CFO span's
 * window), rounded up to 64-byte rows. */
static size_t bank_history(const prx_rx *rx) {
  size_t h = 0;
  for (size_t i = 0; i < rx->n_groups; i++) {
    size_t v = prx_qpsk_bank_history(rx->g[i].bank);
    if (v > h) h = v;
  }
  return rx_row_pitch(h);
}

/* The row window's pitch for batches of bstride outputs at most: the history twice and
 * RX_GPU_BATCHES + 1 batches. A move (before batch j, to the window's start: the history, then
 * batch j written after it) must not touch what the banks of batches j - 1 .. j - RX_GPU_BATCHES
 * + 1 read, which the host may queue after it (it queues RX_GPU_BATCHES - 1 batches ahead of the
 * banks; batch j - RX_GPU_BATCHES's banks are waited for by an event): the move comes where pos
 * + bstride > wstride, so batch j - RX_GPU_BATCHES + 1 starts past wstride - RX_GPU_BATCHES
 * bstride and its history past wstride - RX_GPU_BATCHES bstride - hist, while the move and batch
 * j write below hist + bstride. A move of hist samples comes every (wstride - hist) / bstride
 * batches at most. */
static size_t window_stride(size_t hist, size_t bstride) {
  return rx_row_pitch(2 * hist + (RX_GPU_BATCHES + 1) * bstride);
}

/* Blocks per batch: enough for the longest CFO span of the groups' demodulators (in channel
 * samples), within RX_GPU_ROWS_BYTES for the row window; 1 where on_channel takes the rows
 * (they come back to the host rows, a block's outputs wide). */
static size_t batch_blocks(const prx_rx *rx) {
  if (rx->cfg.on_channel) return 1;
  double span = 0;
  for (size_t i = 0; i < rx->n_groups; i++) {
    const prx_qpsk *q = rx->g[i].bank->ch[0];
    if ((double)q->S * q->sps > span) span = (double)q->S * q->sps;
  }
  size_t per = (rx->block + rx->D - 1) / rx->D; /* a block's outputs per row */
  size_t A = (size_t)ceil(span / (double)per);
  if (A < 1) A = 1;
  const size_t h = bank_history(rx);
  while (A > 1 && (double)rx->n_car * window_stride(h, batch_stride(rx, A)) * sizeof(prx_cf32) >
                      (double)RX_GPU_ROWS_BYTES)
    A--;
  return A;
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
  G->h_pinned = m->host_alloc && m->host_free;
  G->merge_max = rx->cfg.on_channel || rx->block >= RX_GPU_MERGE ? 1 : RX_GPU_MERGE / rx->block;
  G->merge = G->merge_max;
  G->R = ring_slots(rx, G->merge_max);
  G->A = batch_blocks(rx);
  G->bstride = batch_stride(rx, G->A);
  G->hist = bank_history(rx);
  G->wstride = window_stride(G->hist, G->bstride);
  G->slot = calloc(G->R, sizeof *G->slot);
  G->go = calloc(rx->n_groups, sizeof *G->go);
  G->dlv = calloc(rx->n_groups, sizeof *G->dlv);
  if (!G->slot || !G->go || !G->dlv)
    return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's CUDA path");
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_gout *o = &G->go[i];
    o->n_symbols = calloc(rx->g[i].n, sizeof *o->n_symbols);
    o->n_bytes = calloc(rx->g[i].n, sizeof *o->n_bytes);
    if (!o->n_symbols || !o->n_bytes)
      return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver's CUDA path");
  }
  double t0 = prx_now();
  TRY(G->dev->stream_create(G->device, &G->s_copy));
  TRY(G->dev->stream_create(G->device, &G->s_chan));
  TRY(G->dev->stream_create(G->device, &G->s_demod));
  TRY(G->dev->stream_create(G->device, &G->s_back));
  const size_t size = prx_format_size(rx->cfg.in_format);
  for (size_t i = 0; i < G->R; i++) {
    TRY(G->m->event_create(G->device, &G->slot[i].ev_in));
    TRY(G->m->event_create(G->device, &G->slot[i].ev_read));
  }
  for (int k = 0; k < RX_GPU_BATCHES; k++) {
    TRY(G->m->event_create(G->device, &G->bat[k].ev_rows));
    TRY(G->m->event_create(G->device, &G->bat[k].ev_free));
  }
  TRY(G->m->event_create(G->device, &G->ev_banks));
  TRY(G->m->event_create(G->device, &G->ev_back[0]));
  TRY(G->m->event_create(G->device, &G->ev_back[1]));
  double t1 = prx_now();
  rx->setup.gpu_streams = t1 - t0;
  for (size_t i = 0; i < G->R; i++)
    TRY(G->dev->dev_alloc(G->device, G->merge_max * rx->block * size, &G->slot[i].d_in));
  TRY(G->dev->dev_alloc(G->device, rx->n_car * G->wstride * sizeof(prx_cf32), (void **)&G->d_win));
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
  /* the outputs of a batch with the samples the banks hold from the batch before (less than a
   * batch: a batch holds a CFO span's samples) and of the flush, so that execute allocates
   * nothing (a buffer grown there would wait for the device: cudaFree, cudaFreeHost) */
  for (size_t i = 0; i < rx->n_groups; i++) {
    /* the stream's end in one call (end_banks): a batch and the tail after the samples not yet
     * in a span (fewer than the history) */
    rx_group *g = &rx->g[i];
    TRY(rx_ensure_symbols(
        rx, g, prx_qpsk_bank_gpu_end_symbols(g->bank, 2 * G->hist + G->bstride + rx->stride), 0));
    for (int k = 0; k < 2; k++) {
      TRY(outputs(rx, i, k, 2 * G->bstride, 0));
      TRY(outputs(rx, i, k, 0, 1));
    }
  }
  for (size_t i = 0; i < rx->n_groups; i++) TRY(host_rows(rx, i));
  rx->setup.gpu_outputs = prx_now() - t3;
  return PRX_OK;
}

void rx_gpu_reset(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  if (!G) return;
  sync_all(G);
  for (int k = 0; k < RX_GPU_BATCHES; k++) G->bat[k].n_out = 0;
  G->pos = G->bank_end = 0;
  G->pending = 0;
  G->deferred = 0;
  G->t_copy = G->t_move = 0;
  memset(G->t_fl, 0, sizeof G->t_fl);
  G->t_fl_wait = G->t_fl_serial = 0;
  G->trace_q = G->trace_d = 0;
}

/* The pending batch's bits (and LLRs) to on_output, after a wait for their copy back (long done
 * where a later bank call ran in between). */
static prx_status deliver_pending(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  if (!G->pending) return PRX_OK;
  G->pending = 0;
  TRY(G->dev->sync(G->s_back));
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *d = &G->dlv[i];
    const rx_gout *o = &G->go[i];
    *d = rx->g[i];
    d->bits = o->h_bits;
    d->llrs = o->h_llrs;
    d->bits_stride = o->bits_stride;
    d->llr_stride = o->llr_stride;
    d->n_symbols = o->n_symbols;
    d->n_bytes = o->n_bytes;
  }
  rx_deliver_from(rx, G->dlv);
  return PRX_OK;
}

/* After a bank call that completed symbols (its counts in the groups): delivers the batch before
 * (pending), then queues the copy of output set G->set to the pinned rows on the back stream,
 * after the banks, keeps the counts and strides, and turns to the other set. */
static prx_status queue_back(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  TRY(deliver_pending(rx));
  const int k = G->set;
  TRY(G->m->event_record(G->ev_banks, G->s_demod));
  TRY(G->m->stream_wait(G->s_back, G->ev_banks));
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    rx_gout *o = &G->go[i];
    size_t wb = 0, ws = 0;
    for (size_t r = 0; r < g->n; r++) {
      if (g->n_bytes[r] > wb) wb = g->n_bytes[r];
      if (2 * g->n_symbols[r] > ws) ws = 2 * g->n_symbols[r];
    }
    TRY(host_rows(rx, i));
    if (wb)
      TRY(G->dev->copy2d(o->h_bits, g->bits_stride, o->d_bits[k], g->bits_stride, wb, g->n,
                         G->s_back));
    if (rx->cfg.llrs) {
      size_t lb = g->llr_stride * sizeof(float);
      if (ws)
        TRY(G->dev->copy2d(o->h_llrs, lb, o->d_llrs[k], lb, ws * sizeof(float), g->n, G->s_back));
    }
    o->bits_stride = g->bits_stride;
    o->llr_stride = g->llr_stride;
    memcpy(o->n_symbols, g->n_symbols, g->n * sizeof *o->n_symbols);
    memcpy(o->n_bytes, g->n_bytes, g->n * sizeof *o->n_bytes);
  }
  TRY(G->m->event_record(G->ev_back[k], G->s_back));
  G->back_used[k] = 1;
  G->pending = 1;
  G->set = k ^ 1;
  return PRX_OK;
}

/* Before the banks write output set G->set: the demodulator stream waits for its last copy back
 * (two bank calls ago; an event, no host wait). */
static prx_status set_free(struct rx_gpu *G) {
  if (!G->back_used[G->set]) return PRX_OK;
  return G->m->stream_wait(G->s_demod, G->ev_back[G->set]);
}

static prx_qpsk_bank_out device_out(const prx_rx *rx, size_t i) {
  const rx_gout *o = &rx->gpu->go[i];
  const int k = rx->gpu->set;
  return rx_bank_out(&rx->g[i], o->d_bits[k], rx->cfg.llrs ? o->d_llrs[k] : NULL);
}

/* The symbols the groups' last bank calls completed, over every row; *any: whether they put out
 * anything (symbols or bytes of bits), i.e. whether there are bits to bring back. */
static size_t completed(const prx_rx *rx, int *any) {
  size_t symbols = 0, out = 0;
  for (size_t i = 0; i < rx->n_groups; i++)
    for (size_t r = 0; r < rx->g[i].n; r++) {
      symbols += rx->g[i].n_symbols[r];
      out += rx->g[i].n_symbols[r] + rx->g[i].n_bytes[r];
    }
  *any = out != 0;
  return symbols;
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

/* The samples before window position p that the banks are given as their history: the stream's
 * given to them (emitted), at most G->hist. */
static size_t kept_before(const prx_rx *rx, size_t p) {
  const struct rx_gpu *G = rx->gpu;
  uint64_t k = p;
  if (k > rx->emitted) k = rx->emitted;
  if (k > G->hist) k = G->hist;
  return (size_t)k;
}

/* Each group's bank on its rows of the window at position p (n_in new samples after the kept
 * samples of history before p, or the flush), on the demodulator stream. */
static prx_status banks(prx_rx *rx, size_t p, size_t n_in, size_t kept, int flush) {
  struct rx_gpu *G = rx->gpu;
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    TRY(outputs(rx, i, G->set, n_in, flush));
    prx_qpsk_bank_out o = device_out(rx, i);
    TRY(prx_qpsk_bank_execute_device_kept(g->bank, G->d_win + g->first_row * G->wstride + p,
                                          G->wstride, n_in, kept, flush, &o, G->s_demod));
  }
  return PRX_OK;
}

/* Whether the banks' call for m more samples would complete no symbols in any group (a call
 * that may wait: the driver's banks only, not the serial mode, not where the channel samples
 * go to the host). */
static int may_defer(const prx_rx *rx, size_t m) {
  if (rx->gpu->serial || rx->cfg.on_channel) return 0;
  for (size_t i = 0; i < rx->n_groups; i++)
    if (!rx->g[i].bank->drv || prx_qpsk_bank_gpu_runs_span(rx->g[i].bank, m)) return 0;
  return 1;
}

/* After a bank call (its counts in the groups): where a carrier put out anything, delivers the
 * batch before and queues these bits' copy back. */
static prx_status after_banks(prx_rx *rx, size_t *symbols) {
  int any;
  size_t s = completed(rx, &any);
  if (symbols) *symbols = s;
  return any ? queue_back(rx) : PRX_OK;
}

/* ev_free of the batches in mask, after the banks' reads queued so far (demodulator stream). */
static prx_status record_free(struct rx_gpu *G, unsigned mask) {
  for (int k = 0; k < RX_GPU_BATCHES; k++)
    if (mask >> k & 1) TRY(G->m->event_record(G->bat[k].ev_free, G->s_demod));
  return PRX_OK;
}

/* The deferred batch's bank call, as demodulate would have made it, and the channel stream after
 * it (the window's next move, whichever batch it starts, after its reads). */
static prx_status issue_deferred(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  if (!G->deferred) return PRX_OK;
  G->deferred = 0;
  TRY(set_free(G));
  TRY(banks(rx, G->def_p, G->def_m, G->def_kept, 0));
  G->bank_end = G->def_p + G->def_m;
  TRY(record_free(G, G->def_mask));
  for (int k = 0; k < RX_GPU_BATCHES; k++)
    if (G->def_mask >> k & 1) TRY(G->m->stream_wait(G->s_chan, G->bat[k].ev_free));
  return after_banks(rx, NULL);
}

/* Where the deferred batch's rows end at window position p: joins them to the bank call at p
 * (*p its start, *n and *mask widened, *kept its history) and returns 1; else 0. */
static int join_deferred(struct rx_gpu *G, size_t *p, size_t *n, size_t *kept, unsigned *mask) {
  if (!G->deferred || G->def_p + G->def_m != *p) return 0;
  G->deferred = 0;
  *p = G->def_p;
  *n += G->def_m;
  *kept = G->def_kept;
  *mask |= G->def_mask;
  return 1;
}

/* Demodulates batch b's n_out new channel outputs per row (written on the channel stream
 * before its ev_rows), after the deferred batch where its rows come just before (one bank call),
 * and records b's ev_free after the banks' reads of them; where a carrier completed symbols,
 * delivers the batch before and queues these bits' copy back (the serial mode waits for it and
 * delivers at once). last: an execute's last batch, whose bank call waits (deferred) where it
 * would complete no symbols. limit as rx_take; tr: the batch's trace record or NULL. */
static prx_status demodulate(prx_rx *rx, rx_batch *b, size_t n_out, uint64_t limit, int last,
                             prx_rx_gpu_trace *tr) {
  struct rx_gpu *G = rx->gpu;
  size_t skip, m;
  rx_take(rx, n_out, limit, &skip, &m);
  if (m == 0) return PRX_OK;
  double t0 = prx_now(), w0 = 0, s0 = 0;
  const unsigned grows0 = G->grows;
  if (tr) bank_times(rx, &w0, &s0);
  TRY(G->m->stream_wait(G->s_demod, b->ev_rows));
  /* the group delay: the banks' rows start later, nothing moves */
  size_t p = b->start + skip, n = m, kept;
  unsigned mask = 1u << (b - G->bat);
  if (!join_deferred(G, &p, &n, &kept, &mask)) { /* (else the deferred rows, then these) */
    TRY(issue_deferred(rx));
    kept = kept_before(rx, p);
  }
  rx->emitted += m;
  if (last && may_defer(rx, n)) {
    G->deferred = 1;
    G->def_p = p;
    G->def_m = n;
    G->def_kept = kept;
    G->def_mask = mask;
    if (tr) tr->t_demod = tr->t_banks = tr->t_back = t0;
    return PRX_OK;
  }
  if (rx->cfg.on_channel) { /* (one block a batch: m fits the host rows; none deferred) */
    TRY(G->dev->copy2d(rx->rows, rx->stride * sizeof(prx_cf32), G->d_win + p,
                       G->wstride * sizeof(prx_cf32), m * sizeof(prx_cf32), rx->n_car, G->s_demod));
    TRY(G->dev->sync(G->s_demod));
    rx_deliver_channels(rx, rx->rows, m);
  }
  TRY(set_free(G));
  TRY(banks(rx, p, n, kept, 0));
  G->bank_end = p + n;
  TRY(record_free(G, mask));
  double t1 = prx_now();
  size_t symbols;
  TRY(after_banks(rx, &symbols));
  if (tr) tr->symbols = symbols;
  if (G->serial) {
    TRY(G->dev->sync(G->s_demod));
    TRY(deliver_pending(rx));
  }
  double t2 = prx_now();
  rx->t_demod += t2 - t0;
  if (tr) {
    double w1, s1;
    bank_times(rx, &w1, &s1);
    tr->t_demod = t0;
    tr->t_banks = t1;
    tr->t_back = t2;
    tr->bank_wait = w1 - w0;
    tr->bank_serial = s1 - s0;
    tr->grows = G->grows - grows0;
  }
  return PRX_OK;
}

/* Where a batch of need outputs at most starts (the channel stream, its first group's turn): at
 * the window's position pos, or, where it would pass the window's end, at its start after the
 * samples the banks keep (the last hist of the stream's, moved there; the banks of the batch
 * before read theirs where they were: window_stride keeps the two apart). */
static prx_status batch_start(prx_rx *rx, rx_batch *b, size_t need) {
  struct rx_gpu *G = rx->gpu;
  if (G->pos + need > G->wstride) {
    size_t mv = G->pos < G->hist ? G->pos : G->hist;
    /* window_stride's bound, checked where it matters (a narrower window fails here, not as a
     * race on the device): the move and this batch write below mv + bstride; the banks of the
     * batches before, where still to be called, read from their start less hist */
    for (const rx_batch *before = G->bat; before < G->bat + RX_GPU_BATCHES; before++)
      if (before != b && before->n_out && mv + G->bstride + G->hist > before->start)
        return prx_fail(PRX_ERR_INTERNAL,
                        "receiver row window: the move to its start would overwrite rows the "
                        "banks of a batch before read (window %zu, history %zu, batch %zu samples)",
                        G->wstride, G->hist, G->bstride);
    if (mv) {
      const size_t pitch = G->wstride * sizeof(prx_cf32);
      double t0 = prx_now();
      TRY((G->dev->copy2d_dev ? G->dev->copy2d_dev
                              : G->dev->copy2d)(G->d_win, pitch, G->d_win + G->pos - mv, pitch,
                                                mv * sizeof(prx_cf32), rx->n_car, G->s_chan));
      if (G->serial) {
        TRY(G->dev->sync(G->s_chan));
        G->t_move += prx_now() - t0;
      }
      G->moves++;
    }
    G->pos = mv;
  }
  b->start = G->pos;
  return PRX_OK;
}

/* Queues a group's copy (n input samples at in: consecutive blocks of batch b) into slot s,
 * after the channelizer's last read of that slot's input (R groups before), and its channelizer
 * writing after batch b's rows so far, after the copy and, for the batch's first group, after the
 * banks' last read of the rows of the batch RX_GPU_BATCHES before, the batch placed in the
 * window (batch_start); the serial mode waits for each. */
static prx_status queue_group(prx_rx *rx, rx_slot *s, rx_batch *b, const void *in, size_t n) {
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
  if (b->n_out == 0) {
    TRY(G->m->stream_wait(G->s_chan, b->ev_free));
    TRY(batch_start(rx, b, G->bstride));
  }
  if (b->n_out + rx_most_outputs(rx, n) > G->bstride)
    return prx_fail(PRX_ERR_INTERNAL, "receiver batch rows too short (%zu + %zu samples)", b->n_out,
                    n);
  size_t got = 0;
  TRY(prx_chan_execute_device(rx->chan, s->d_in, n, G->d_win + G->pos, G->wstride, &got,
                              G->s_chan));
  b->n_out += got;
  G->pos += got;
  TRY(G->m->event_record(s->ev_read, G->s_chan));
  TRY(G->m->event_record(b->ev_rows, G->s_chan));
  if (G->serial) TRY(G->dev->sync(G->s_chan));
  rx->t_chan += prx_now() - t0;
  rx->in_stream += n;
  rx->samples += n;
  return PRX_OK;
}

prx_status rx_gpu_execute(prx_rx *rx, const void *in, size_t n) {
  struct rx_gpu *G = rx->gpu;
  const size_t size = prx_format_size(rx->cfg.in_format);
  const size_t nb = (n + rx->block - 1) / rx->block, A = G->A;
  const size_t nbat = (nb + A - 1) / A;
  /* blocks queued beyond the batch demodulated: those of the batches after it, RX_GPU_BATCHES
   * in flight (the serial mode: none) */
  const size_t ahead = G->serial ? 1 : RX_GPU_BATCHES;
  const uint8_t *p = in;
  prx_status st = PRX_OK;
  size_t issued = 0; /* blocks whose copy and channelizer are queued */
  size_t groups = 0; /* their copies and channelizer calls (merge blocks each at most) */
  /* a stream's start: the banks' phase state goes to the device (a small copy and a wait, which
   * their first call would make) before the input's copies, so that it does not queue behind
   * them on the copy engine (bench/GPU_NOTES.md, "Receiver, tenth session") */
  for (size_t i = 0; rx->in_stream == 0 && i < rx->n_groups && !st; i++) {
    prx_qpsk_bank_out o = device_out(rx, i);
    st = prx_qpsk_bank_gpu_prepare(rx->g[i].bank->drv, &o);
  }
  /* the last execute's last batch: merged into this one's first bank call (demodulate) where no
   * move of the window comes before it (the batches queued ahead of that call start without
   * one), else now */
  if (!st && G->deferred && (nbat == 0 || G->pos + RX_GPU_BATCHES * G->bstride > G->wstride))
    st = issue_deferred(rx);
  for (size_t bt = 0; bt < nbat && !st; bt++) {
    size_t lim = (bt + ahead) * A;
    if (lim > nb) lim = nb;
    while (!st && issued < lim) {
      /* consecutive blocks of one batch in one copy and one channelizer call */
      size_t k = G->merge, left = A - issued % A;
      if (k > left) k = left;
      if (k > lim - issued) k = lim - issued;
      size_t b = issued + k < nb ? k * rx->block : n - issued * rx->block;
      rx_batch *bat = &G->bat[(issued / A) % RX_GPU_BATCHES];
      if (issued % A == 0) {
        if (G->trace && G->trace_q < G->trace_cap) {
          memset(&G->trace[G->trace_q], 0, sizeof *G->trace);
          G->trace[G->trace_q].t_queue = prx_now();
        }
        G->trace_q++;
      }
      st = queue_group(rx, &G->slot[groups++ % G->R], bat, p + issued * rx->block * size, b);
      issued += k;
    }
    if (st) break;
    rx_batch *bat = &G->bat[bt % RX_GPU_BATCHES];
    prx_rx_gpu_trace *tr = G->trace && G->trace_d < G->trace_cap ? &G->trace[G->trace_d] : NULL;
    size_t last = (bt + 1) * A < nb ? (bt + 1) * A : nb;
    if (tr) {
      tr->ahead = (unsigned)(issued - last);
      tr->blocks = (unsigned)(last - bt * A);
    }
    G->trace_d++;
    st = demodulate(rx, bat, bat->n_out, UINT64_MAX, bt + 1 == nbat, tr);
    bat->n_out = 0;
  }
  if (st) G->deferred = 0;
  /* the caller's input is consumed whatever happened; its bits delivered */
  double t0 = prx_now();
  prx_status s2 = sync_all(G);
  if (!st && !s2) s2 = deliver_pending(rx);
  G->pending = 0;
  for (int k = 0; k < RX_GPU_BATCHES; k++) G->bat[k].n_out = 0;
  rx->t_chan += prx_now() - t0;
  return st ? st : s2;
}

/* The channelizer's flush into the window as a batch (b: its start; the window moved only where
 * its n outputs would pass the end) on the device from d_zero, its rows written before
 * b->ev_rows (the host does not wait), or through its host call (cu8, copied up and waited for);
 * *n_out the outputs per row. The streams are idle (execute waited). */
static prx_status flush_chan(prx_rx *rx, rx_batch *b, size_t *n_out) {
  struct rx_gpu *G = rx->gpu;
  size_t n = prx_chan_flush_count(rx->chan);
  if (n > rx->stride)
    return prx_fail(PRX_ERR_INTERNAL, "receiver rows too short for the channelizer's tail");
  TRY(batch_start(rx, b, n));
  prx_cf32 *rows = G->d_win + b->start;
  *n_out = 0;
  if (n && G->d_zero) {
    TRY(prx_chan_execute_device(rx->chan, G->d_zero, (size_t)rx->K * rx->P, rows, G->wstride, n_out,
                                G->s_chan));
    if (*n_out != n)
      return prx_fail(PRX_ERR_INTERNAL, "channelizer flush wrote %zu outputs, expected %zu", *n_out,
                      n);
  } else {
    TRY(prx_chan_flush(rx->chan, rx->rows, rx->stride, n_out));
    if (*n_out) {
      TRY(G->dev->copy2d(rows, G->wstride * sizeof(prx_cf32), rx->rows,
                         rx->stride * sizeof(prx_cf32), *n_out * sizeof(prx_cf32), rx->n_car,
                         G->s_chan));
      TRY(G->dev->sync(G->s_chan)); /* (from the host rows, which the next stream reuses) */
    }
  }
  TRY(G->m->event_record(b->ev_rows, G->s_chan));
  G->pos += *n_out;
  return PRX_OK;
}

/* Whether every group's bank has the driver, which takes a flush with samples. */
static int banks_take_end(const prx_rx *rx) {
  for (size_t i = 0; i < rx->n_groups; i++)
    if (!rx->g[i].bank->drv) return 0;
  return 1;
}

/* The stream's end in one bank call per group: its last n_in samples at window position p (kept
 * samples of history before them) and the flush, on the demodulator stream. */
static prx_status end_banks(prx_rx *rx, size_t p, size_t n_in, size_t kept) {
  struct rx_gpu *G = rx->gpu;
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    rx_gout *o = &G->go[i];
    TRY(rx_ensure_symbols(rx, g, prx_qpsk_bank_gpu_end_symbols(g->bank, n_in), 0));
    TRY(dgrow(G, (void **)&o->d_bits[G->set], &o->d_bits_cap[G->set], bits_bytes(g)));
    if (rx->cfg.llrs)
      TRY(dgrow(G, (void **)&o->d_llrs[G->set], &o->d_llr_cap[G->set], llr_bytes(g)));
    prx_qpsk_bank_out out = device_out(rx, i);
    prx_qpsk_bank_gpu_hold_end(g->bank->drv); /* (its reports beside the bits' copy) */
    TRY(prx_qpsk_bank_gpu_run(g->bank, G->d_win + g->first_row * G->wstride + p, G->wstride, n_in,
                              kept, 1, 1, &out, 1, G->s_demod));
  }
  return PRX_OK;
}

prx_status rx_gpu_flush(prx_rx *rx) {
  struct rx_gpu *G = rx->gpu;
  /* channel samples of this stream: ceil(N / D) */
  uint64_t target = (rx->in_stream + rx->D - 1) / rx->D;
  size_t n_out = 0;
  double t0 = prx_now(), w0, s0;
  bank_times(rx, &w0, &s0);
  rx_batch *b = &G->bat[0];
  /* the deferred batch at once where the tail may not follow it in the window (a move) or the
   * banks take no samples with their flush */
  const size_t n_tail = prx_chan_flush_count(rx->chan);
  const int one = !rx->cfg.on_channel && banks_take_end(rx);
  if (G->deferred && (!one || G->pos + n_tail > G->wstride)) TRY(issue_deferred(rx));
  TRY(flush_chan(rx, b, &n_out));
  double t1 = prx_now();
  rx->t_chan += t1 - t0;
  G->t_fl[0] += t1 - t0;
  if (one) {
    size_t skip, m;
    rx_take(rx, n_out, target, &skip, &m);
    size_t p = b->start + skip, n_in = m, kept = kept_before(rx, p);
    unsigned mask = 0; /* (the batches' ev_free: none before the next stream, which the flush's
                          wait for the banks precedes) */
    if (!join_deferred(G, &p, &n_in, &kept, &mask)) /* (else the last batch and the tail) */
      TRY(issue_deferred(rx));
    TRY(G->m->stream_wait(G->s_demod, b->ev_rows));
    TRY(set_free(G));
    TRY(end_banks(rx, p, n_in, kept));
    rx->emitted += m;
  } else {
    TRY(demodulate(rx, b, n_out, target, 0, NULL));
    TRY(set_free(G));
    /* the stream's end, its kept samples before it (where the flush's batch took none after a
     * move, bank_end is still before the move: those samples lie above the flush's rows, intact) */
    TRY(banks(rx, G->bank_end, 0, kept_before(rx, G->bank_end), 1));
  }
  if (G->d_zero) prx_chan_reset(rx->chan); /* (its tail, which it waits for, long done) */
  G->pos = G->bank_end = 0;                /* the next stream starts at the window's start */
  double t2 = prx_now();
  TRY(after_banks(rx, NULL));
  /* the banks' reports and their streams' end while the bits come back */
  for (size_t i = 0; i < rx->n_groups; i++) prx_qpsk_bank_gpu_end(rx->g[i].bank->drv);
  TRY(deliver_pending(rx));
  TRY(G->dev->sync(G->s_demod));
  double t3 = prx_now(), w1, s1;
  bank_times(rx, &w1, &s1);
  rx->t_demod += t3 - t1;
  G->t_fl[1] += t2 - t1;
  G->t_fl[2] += t3 - t2;
  G->t_fl_wait += w1 - w0;
  G->t_fl_serial += s1 - s0;
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

size_t prx_rx_gpu_batch_blocks(const prx_rx *rx) { return rx && rx->gpu ? rx->gpu->A : 0; }

size_t prx_rx_gpu_set_merge(prx_rx *rx, size_t blocks) {
  if (!rx || !rx->gpu) return 0;
  struct rx_gpu *G = rx->gpu;
  G->merge = blocks < 1 ? 1 : blocks > G->merge_max ? G->merge_max : blocks;
  return G->merge;
}

void prx_rx_gpu_get_flush_times(const prx_rx *rx, double t[5]) {
  const struct rx_gpu *G = rx ? rx->gpu : NULL;
  for (int k = 0; k < 3; k++) t[k] = G ? G->t_fl[k] : 0;
  t[3] = G ? G->t_fl_wait : 0;
  t[4] = G ? G->t_fl_serial : 0;
}

size_t prx_rx_gpu_deferred_samples(const prx_rx *rx) {
  return rx && rx->gpu && rx->gpu->deferred ? rx->gpu->def_m : 0;
}

size_t prx_rx_gpu_window_moves(const prx_rx *rx) { return rx && rx->gpu ? rx->gpu->moves : 0; }

double prx_rx_gpu_move_seconds(const prx_rx *rx) { return rx && rx->gpu ? rx->gpu->t_move : 0; }

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
