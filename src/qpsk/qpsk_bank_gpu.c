/* The demodulator bank's stage-major driver on the CUDA backend: every call advances all C
 * channels together, one CFO span at a time, stage by stage. By default (run_span_gpu) the
 * level, timing, NCO and phase passes run on the GPU too (qpsk_serial.h, qpsk_serial_phase.h,
 * one thread or warp per channel, their state on the device), so a call is one stream-ordered
 * sequence with one host wait, for its output counts:
 *
 *   per span: GPU pre, level, om, timing, x4, cfo, nco, mf, phase, out -> the reports' records
 *   into a pending slot (those final after the NCO pass copied beside mf); at the call's end the
 *   host waits for its last span's records and sums the channels' output counts from the blocks'
 *   timing records, and returns while mf, phase and out still run on the caller's stream (the
 *   next call's launches queue behind them: no gap between calls); the reports, stats and stream
 *   counts written into each channel's prx_qpsk lazily (when the caller reads them, or in the
 *   next call beside its device work)
 *
 * Where the symbols go back (LLRs, packed bits, PILOTS: "host finish") the phase pass and the
 * report run on the CPU after mf, per span (the passes' results and the symbols back, one wait
 * per span):
 *
 *   GPU pre, level, om, timing, x4, cfo, nco, mf -> sums, the passes' results back
 *   -> CPU serial_phase, stage_out and the report per channel
 *
 * Where the module lacks those kernels (or the CFO stage runs on the CPU, or a span holds more
 * than QPSK_SR_MAXB blocks), and when prx_qpsk_bank_gpu_set_serial turns them off, the serial
 * passes run on the CPU between the kernels (run_span):
 *
 *   GPU pre (every block of every channel)   -> input sums back   -> CPU serial_level per channel
 *   GPU om                                   -> O&M sums back     -> CPU serial_timing
 *   GPU x4, GPU cfo                          -> CFO estimates back -> CPU serial_nco
 *   GPU mf                                   -> V&V sums back     -> CPU serial_phase, report
 *   GPU out (bits into the caller's rows)
 *
 * The serial passes are the single demodulator's own functions (qpsk_serial.c, qpsk_batch.c) run on
 * each channel's prx_qpsk (b->ch[c]) over the per-block records the kernels leave (a few hundred
 * bytes per block, through pinned host memory), spread over the bank's worker pool, or their
 * steps written once for both (qpsk_serial.h, qpsk_serial_phase.h) run as kernels; so the
 * block-level decisions are taken by the CPU's code and the kernels round only the per-sample
 * arithmetic differently (qpsk_stage_math.h). Where the stage kernels have no CFO stage (cfo_setup
 * answers PRX_ERR_UNSUPPORTED) it runs on the CPU: the x4 values copied back (8 bytes per symbol),
 * the CPU's stage_cfo on the pool.
 *
 * Streaming: each channel's prx_qpsk keeps its stream position (n_total, next_span) as in a host
 * call; its samples stay on the device. A device ring holds per channel the samples [ring_base,
 * ring_base + ring_len) that the next span reads from earlier calls, at slot ring_off of a buffer
 * three times the longest such run (ring_need): the kept samples stay where they are and the ring
 * slides forward over its buffer, the chunk's samples appended at its end; only when an append
 * would pass the buffer's end are the ring's samples moved to its start (once every few calls,
 * the move's source and destination apart: ring_off > 2 ring_need there). A span whose input lies
 * entirely in the caller's chunk reads the chunk in place; a span reaching back into earlier calls
 * reads the ring, to which the chunk's head is appended first. All channels share one stream
 * position, so one ring index serves them all and every copy is one 2-D copy over the channels.
 * A caller whose rows hold the stream's kept samples before its chunk (kept calls,
 * prx_qpsk_bank_execute_device_kept) has every span read in place: the ring stays empty (its
 * start moved to the next span's first sample), its memory made only by a plain call, and a
 * plain call after a kept one is refused (the samples it would need are in the caller's rows).
 *
 * Symbols back to the host ("host finish"): with LLRs, packed bits or pilots, each span's
 * symbols are copied back and the CPU's stage_out writes the bits and LLRs (the exact CPU
 * decisions on the GPU's symbols), which then go to the caller's rows; otherwise the GPU's out
 * kernel writes the bits in place and only each block's last symbol comes back (the differential
 * chain's link). */
#include "qpsk_bank_internal.h"

#include "../core/internal.h"

#include <string.h>

#ifdef PRX_HAVE_CUDA

#include "../core/cuda_module.h"
#include "qpsk_internal.h"
#include "qpsk_serial.h"
#include "qpsk_serial_phase.h"
#include "qpsk_stage_blocks.h"
#include "qpsk_stages_cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct prx_qpsk_bank_gpu {
  const prx_cuda_module *m;
  const prx_qpsk_bank_cuda *dev;
  const prx_qpsk_stages_cuda *k;
  qpsk_stages stg;
  int stg_made;
  int device;
  void *stream; /* the driver's own, for host calls */
  unsigned C, B, Lmax;
  size_t sz, ng, nbt; /* bytes per sample, grid values per block, blocks per span (C B) */
  size_t w_stride;    /* 4th-power values per channel: B Lmax, or two regions (GPU CFO) */
  /* the CFO stage on the GPU (the stage table's cfo, where cfo_setup takes it): each w row holds
   * two regions of B Lmax values, each after a gap of S; a span's values go into the region that
   * does not hold the last span with values (the history its window may reach back into, as
   * stage_cfo does with w_hist), and the reach-back is copied into the gap before it */
  int gpu_cfo;
  unsigned S;
  size_t region; /* S + B Lmax: the second region's offset from the first */
  qpsk_cfo_in *d_cfi, *h_cfi;
  qpsk_cfo_out *d_cfo, *h_cfo;
  int64_t *d_ops, *h_ops;       /* the reach-back copies, 3 per channel */
  int *hist_r;                  /* [C] the history's region, -1 none */
  size_t *hist_n, *nw_c, *wr_c; /* [C] its values; this span's values and region */
  /* two spans in flight: span s + 1's pre (pre_om) runs on pstream into the other slot while the
   * pool runs span s's serial passes (the module's events order pstream after the main stream) */
  void *pstream, *ev; /* NULL: the module has no events, every pre runs on the main stream */
  /* with the phase pass on the GPU, the reports' records are copied on pstream, beside out and
   * the ring's move (kernels), after an event on the main stream; the next span's kernels (which
   * overwrite what they copy) wait for them, and so does the call's end (the same event, recorded
   * again on pstream after the copies; each wait takes its latest record) */
  int cp_pending; /* copies on pstream not yet waited for */
  /* a device call returns once its output counts are known: the host sums each span's symbol
   * counts from the blocks' timing records (final after the timing pass, copied with the records
   * after the NCO pass: ev_rec, the last span's, waited for through wstream), while mf, phase and
   * out still run on the caller's stream. In flight after such a call: the stream's work up to
   * ev_done (recorded at the call's end) and the phase results' copies on pstream (ev_ph[php]
   * after the latest); a call on another stream waits on the device for ev_done, the host for
   * both (quiesce) before it reads or writes what they touch */
  void *wstream;      /* the host's waits for one event (a stream holding only that wait) */
  void *ev_rec;       /* after the last span's records copies on pstream */
  void *ev_done;      /* after the last call's work on its stream */
  void *ev_ph[2];     /* after a span's phase results' copies on pstream, alternately */
  int php, ph_prev;   /* the latest of ev_ph; at the call's start, the earlier calls' latest */
  int inflight;       /* the last call's work may still run (ev_done, pstream) */
  int old_wait;       /* the earlier calls' pending spans' copies may still run (ev_ph[ph_prev]) */
  unsigned nc;        /* pending spans (the newest) whose symbols the call has not counted yet */
  int slot;           /* the slot of the span being run */
  int64_t ahead_span; /* the span whose pre was issued ahead into slot ^ 1, -1 none */
  size_t ahead_nb;    /* its blocks */
  /* the O&M stage's path (qpsk_om_path: apart, or folded into pre) */
  int fold, fold_ok; /* in use; folding possible (the kernels have it, the pre-filter is blocked) */
  size_t oms;        /* pre_om's sums per block (doubles) */
  int64_t g_hi;      /* the grid's end for the O&M sums: INT64_MAX, or the flushed stream's */
  /* device; per slot: pre's outputs */
  prx_cf32 *d_grid[2], *d_sym, *d_w;
  qpsk_block_end *d_ends;
  double *d_mom[2], *d_omsum[2], *d_sums;
  unsigned *d_bad[2];
  qpsk_om_in *d_omi;
  qpsk_om_out *d_omo;
  qpsk_mf_block *d_mb;
  int64_t *d_w0;
  qpsk_out_block *d_ob;
  void *d_in; /* host calls: the rows, dense */
  size_t d_in_cap;
  uint8_t *d_bits; /* host calls: the bits before they go back */
  size_t d_bits_cap;
  uint8_t *ring;
  size_t ring_need; /* the longest run of samples the ring holds */
  size_t ring_cap;  /* samples per channel: 3 ring_need, rounded up to 64 */
  int64_t ring_base;
  size_t ring_len, ring_off; /* the ring's samples, and the slot of ring_base */
  size_t hist_need; /* the most samples before a chunk that the next call reads (a span's) */
  /* pinned host; per slot: pre's input sums */
  double *h_mom[2], *h_sums;
  unsigned *h_bad[2];
  qpsk_om_in *h_omi;
  qpsk_om_out *h_omo;
  qpsk_mf_block *h_mb;
  int64_t *h_w0;
  qpsk_out_block *h_ob;
  prx_cf32 *h_w, *h_sym;
  qpsk_block_end *h_ends;
  size_t h_sym_cap;
  uint8_t *h_bits; /* host finish: unpacked bits, C rows of h_bits_row */
  size_t h_bits_cap, h_bits_row;
  float *h_llrs; /* host finish: LLRs, C rows of h_llr_row */
  size_t h_llr_cap, h_llr_row;
  uint8_t *h_pack; /* packed bits, C rows of the caller's stride (host finish, device call) */
  size_t h_pack_cap;
  /* per call */
  size_t *off; /* [C] data symbols written */
  size_t nb;   /* blocks of the span being run */
  int hf;      /* host finish */
  /* the serial passes on the GPU (qpsk_serial.h): level, timing and NCO as kernels between the
   * stages, their per-channel state on the device; the host runs only the phase pass */
  prx_qpsk_bank *bank;
  const prx_qpsk_serial_cuda *ser;
  int gser, gser_ok; /* in use; possible (the module has them, the CFO stage on the GPU) */
  qpsk_serial_cfg scf;
  qpsk_serial_state *d_st, *h_st;
  qpsk_serial_span *d_sp, *h_sp;
  qpsk_serial_blk *d_tb, *h_tb;
  int64_t n_total;
  /* the phase pass on the GPU too (qpsk_serial_phase.h): its kernel writes the out stage's
   * records on the device and each block's output offset (d_off: the channel's symbols so far
   * in the call; the host sums the same counts from the timing records, count_new); the blocks'
   * results with what the reports read of the other passes come back into pending slots (a ring,
   * one slot per span), which the host writes into the channels' prx_qpsk (reports, stats, stream
   * counts) later: when the caller reads estimates or stats (prx_qpsk_bank_gpu_settle), when the
   * slots are full, in the next call once its first span is issued (beside the device's work), or
   * before a call that needs them (a flush, a call with the phase pass on the CPU). Meanwhile the
   * channels' next_span lags the driver's next by the pending spans (always full spans: a flush
   * leaves none) */
  int gph_ok;   /* the module has the kernel (and the serial passes run on the GPU) */
  int gph_on;   /* allowed (prx_qpsk_bank_gpu_set_phase; the default) */
  int gph;      /* this call runs it (not where the symbols go back: LLRs, packed bits, PILOTS) */
  int ph_dev;   /* the pass's carried state is the device's (d_pst), not the channels' */
  int first;    /* the call's first span still to run (the device's output counts restart) */
  int64_t next; /* the next span to run */
  qpsk_phase_state *d_pst, *h_pst;
  qpsk_phase_out *d_po;
  int64_t *d_off;
  unsigned np, np_cap; /* pending spans, slots */
  unsigned ph;         /* the oldest pending span's slot */
  unsigned np_old;     /* pending spans from earlier calls, not yet written */
  int synced; /* the pending spans' copies: 1 complete, 2 once the last call's work is (quiesce) */
  size_t p_nb[4];         /* per slot: its span's blocks per channel */
  qpsk_serial_span *p_sp; /* per slot: C span records, then nbt of each block record */
  qpsk_serial_blk *p_tb;
  double *p_mom;
  unsigned *p_bad;
  qpsk_phase_out *p_po;
  prx_qpsk_bank_gpu_timing tm;
  /* the call's start for channels 1 .. C - 1 (their outputs, estimates cleared, stream counts),
   * which the phase pass's calls leave to the pool's first pass over the channels, after the
   * first span is issued (channel 0's, which that span reads, is done first): touching C
   * channels' state on one thread costs ~0.1-0.25 ms at 1024 channels, in front of the device */
  int begun; /* done for this call (always outside a call) */
  /* a flush whose end the caller makes (prx_qpsk_bank_gpu_hold_end): its spans' reports and the
   * channels' stream reset wait for prx_qpsk_bank_gpu_end, so that the caller's copy of the bits
   * runs beside them */
  int hold, end_due;
  size_t c_n_in; /* the call's samples, flush, outputs */
  int c_flush;
  const prx_qpsk_bank_out *c_out;
  /* the CFO alias test (qpsk_alias.c) on the device: each channel's sums over its first
   * qpsk_alias_len(sps) samples since create or reset (the stage kernels' alias entry, in the calls
   * that bring them), copied back after each such call (ev_al after the copy) and written into
   * the channels' prx_qpsk when the caller reads their stats (alias_collect) */
  int al_ok;   /* the module has the entry; else the channels skip the test */
  size_t al_n; /* samples measured */
  int al_due;  /* sums copied back since the channels last took them */
  qpsk_alias_sums *d_al, *h_al;
  void *ev_al;
  prx_qpsk_bank_gpu_mark_fn mark; /* benchmarks' marks (prx_qpsk_bank_gpu_set_mark), or NULL */
  void *mark_ctx;
};

#define TRY(call)                                                                                  \
  do {                                                                                             \
    prx_status st_ = (call);                                                                       \
    if (st_) return st_;                                                                           \
  } while (0)

/* The host waits until the device reaches ev (recorded on any stream of the device): a stream
 * holding only a wait for it, synchronised. */
static prx_status host_wait(prx_qpsk_bank_gpu *g, void *ev) {
  double t0 = prx_now();
  prx_status st = g->m->stream_wait(g->wstream, ev);
  if (!st) st = g->dev->sync(g->wstream);
  g->tm.wait_s += prx_now() - t0;
  return st;
}

/* The last call's work done on the device (its stream up to ev_done, the copies on pstream),
 * before the host reads what it writes or a stream not ordered after it touches its buffers; the
 * pending spans' copies then complete (synced 2 -> 1). */
static prx_status quiesce(prx_qpsk_bank_gpu *g) {
  if (!g->inflight) return PRX_OK;
  TRY(host_wait(g, g->ev_done));
  TRY(g->dev->sync(g->pstream));
  g->inflight = 0;
  if (g->synced == 2) g->synced = 1;
  return PRX_OK;
}

void prx_qpsk_bank_gpu_destroy(prx_qpsk_bank_gpu *g) {
  if (!g) return;
  quiesce(g);
  if (g->stream) g->dev->sync(g->stream);
  if (g->pstream) g->dev->sync(g->pstream);
  void *d[] = {g->d_grid[0], g->d_grid[1], g->d_sym,    g->d_w,      g->d_ends,     g->d_mom[0],
               g->d_mom[1],  g->d_sums,    g->d_bad[0], g->d_bad[1], g->d_omsum[0], g->d_omsum[1],
               g->d_omi,     g->d_omo,     g->d_mb,     g->d_w0,     g->d_ob,       g->d_in,
               g->d_bits,    g->ring,      g->d_cfi,    g->d_cfo,    g->d_ops,      g->d_st,
               g->d_sp,      g->d_tb,      g->d_pst,    g->d_po,     g->d_off,      g->d_al};
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) g->dev->dev_free(d[i]);
  void *h[] = {g->h_mom[0], g->h_mom[1], g->h_sums, g->h_bad[0], g->h_bad[1], g->h_omi,
               g->h_omo,    g->h_mb,     g->h_w0,   g->h_ob,     g->h_w,      g->h_ends,
               g->h_sym,    g->h_bits,   g->h_llrs, g->h_pack,   g->h_cfi,    g->h_cfo,
               g->h_ops,    g->h_st,     g->h_sp,   g->h_tb,     g->h_pst,    g->p_sp,
               g->p_tb,     g->p_mom,    g->p_bad,  g->p_po,     g->h_al};
  for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
    if (h[i]) g->m->host_free(h[i]);
  if (g->stg_made) g->k->destroy(&g->stg);
  g->dev->stream_destroy(g->stream);
  if (g->pstream) g->dev->stream_destroy(g->pstream);
  if (g->wstream) g->dev->stream_destroy(g->wstream);
  void *ev[] = {g->ev, g->ev_rec, g->ev_done, g->ev_ph[0], g->ev_ph[1], g->ev_al};
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
    if (ev[i]) g->m->event_destroy(ev[i]);
  free(g->hist_r);
  free(g->hist_n);
  free(g->nw_c);
  free(g->wr_c);
  free(g->off);
  free(g);
}

static prx_status dalloc(prx_qpsk_bank_gpu *g, void **p, size_t bytes) {
  return g->dev->dev_alloc(g->device, bytes, p);
}

static prx_status halloc(prx_qpsk_bank_gpu *g, void **p, size_t bytes) {
  *p = g->m->host_alloc(bytes ? bytes : 1);
  if (!*p)
    return prx_fail(PRX_ERR_NOMEM, "CUDA bank: cannot allocate %zu bytes of pinned memory", bytes);
  return PRX_OK;
}

/* grows a pinned buffer (contents not kept) */
static prx_status hgrow(prx_qpsk_bank_gpu *g, void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  if (*p) g->m->host_free(*p);
  *cap = 0;
  prx_status st = halloc(g, p, bytes);
  if (!st) *cap = bytes;
  return st;
}

/* grows a device buffer (contents not kept) */
static prx_status dgrow(prx_qpsk_bank_gpu *g, void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  g->dev->dev_free(*p);
  *p = NULL;
  *cap = 0;
  prx_status st = dalloc(g, p, bytes);
  if (!st) *cap = bytes;
  return st;
}

prx_status prx_qpsk_bank_gpu_create(prx_qpsk_bank *b, const prx_cuda_module *m, const double *mix) {
  const prx_qpsk *q = b->ch[0];
  prx_qpsk_bank_gpu *g = calloc(1, sizeof *g);
  if (!g) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CUDA bank's driver");
  g->begun = 1;
  g->m = m;
  g->dev = m->qpsk_bank;
  g->k = m->qpsk_stages;
  g->device = b->cfg.device;
  g->C = b->C;
  g->B = q->B;
  g->Lmax = q->Lmax;
  g->sz = prx_format_size(b->cfg.row_format);
  g->ng = 4 * (size_t)q->L + 2 * QPSK_GM;
  g->nbt = (size_t)g->C * g->B;
  g->w_stride = (size_t)g->B * g->Lmax;
  qpsk_serial_cfg_of(q, &g->scf); /* the serial passes' settings, and the mf runs' unit (P) */
  prx_status st = g->dev->stream_create(g->device, &g->stream);
  if (st) {
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  st = g->k->create(&g->stg, &q->pre, &q->mf, g->C, g->B, q->L, q->Lmax, q->sps,
                    b->cfg.row_format == PRX_CF16);
  if (st) { /* (a window beyond a thread block's shared memory: PRX_ERR_UNSUPPORTED) */
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  g->stg_made = 1;
  g->stg.pi4 = q->cfg.modulation == PRX_QPSK_PI4;
  g->ahead_span = -1;
  /* the second stream and its event where the module has events */
  if (m->event_create && m->event_destroy && m->event_record && m->stream_wait) {
    st = g->dev->stream_create(g->device, &g->pstream);
    if (!st) st = g->dev->stream_create(g->device, &g->wstream);
    void **ev[] = {&g->ev, &g->ev_rec, &g->ev_done, &g->ev_ph[0], &g->ev_ph[1], &g->ev_al};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0] && !st; i++)
      st = m->event_create(g->device, ev[i]);
    if (st) {
      prx_qpsk_bank_gpu_destroy(g);
      return st;
    }
  }
  g->fold_ok = (g->stg.pre_block || qpsk_stages_slide3(&g->stg)) && g->k->pre_om && g->k->om_sums &&
               g->k->x4_level;
  /* at sps 4 and 16/3 om is folded into pre (one pass over the grid fewer: bench/GPU_NOTES.md,
   * sixth and ninth sessions); prx_qpsk_bank_gpu_set_fold selects the other path */
  prx_qpsk_bank_gpu_set_fold(g, QPSK_OM_FOLDED);
  g->oms = ((size_t)g->stg.nsub + 1) * QPSK_OMS;
  if (mix && (st = g->k->mix(&g->stg, mix))) {
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  /* the CFO stage on the GPU where the stage kernels have it, else on the CPU */
  g->S = q->S;
  st = g->k->cfo_setup(&g->stg, q->S, (unsigned)q->nfft, QPSK_CFO_SEARCH(q->cfg.acquisition));
  if (st && st != PRX_ERR_UNSUPPORTED) {
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  g->gpu_cfo = st == PRX_OK;
  st = PRX_OK;
  g->region = (size_t)g->S + g->w_stride;
  if (g->gpu_cfo) g->w_stride = 2 * g->region;
  g->hist_r = malloc(g->C * sizeof *g->hist_r);
  g->hist_n = calloc(g->C, sizeof *g->hist_n);
  g->nw_c = calloc(g->C, sizeof *g->nw_c);
  g->wr_c = calloc(g->C, sizeof *g->wr_c);
  g->off = calloc(g->C, sizeof *g->off);
  if (!g->hist_r || !g->hist_n || !g->nw_c || !g->wr_c || !g->off) {
    prx_qpsk_bank_gpu_destroy(g);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CUDA bank's driver");
  }
  for (unsigned c = 0; c < g->C; c++) g->hist_r[c] = -1;
  /* the ring: what the next span reads from earlier calls plus the chunk's head appended for
   * the (at most two) spans that reach back into them */
  int64_t lo, e1, lo2, e3;
  qpsk_span_need(q, 1000, &lo, &e1);
  qpsk_span_need(q, 1002, &lo2, &e3);
  g->ring_need = (size_t)(e3 - lo) + 64;
  /* the next call reads from the next span's first sample: less than a span's window before the
   * stream's end (the spans' geometry is fixed by the block index) */
  g->hist_need = (size_t)(e1 - lo) + 64;
  g->ring_cap = (3 * g->ring_need + 63) / 64 * 64;
  const size_t nbt = g->nbt;
#define DA(p, n) (st = st ? st : dalloc(g, (void **)&(p), (n) * sizeof *(p)))
#define HA(p, n) (st = st ? st : halloc(g, (void **)&(p), (n) * sizeof *(p)))
  for (int k = 0; k < 2; k++) {
    DA(g->d_grid[k], nbt * g->ng);
    DA(g->d_mom[k], 4 * nbt);
    DA(g->d_bad[k], nbt);
    if (g->fold_ok) DA(g->d_omsum[k], nbt * g->oms);
    HA(g->h_mom[k], 4 * nbt);
    HA(g->h_bad[k], nbt);
  }
  DA(g->d_sym, nbt * g->Lmax);
  DA(g->d_w, (size_t)g->C * g->w_stride);
  DA(g->d_ends, nbt);
  DA(g->d_sums, 5 * nbt);
  DA(g->d_omi, nbt);
  DA(g->d_omo, nbt);
  DA(g->d_mb, nbt);
  DA(g->d_w0, nbt);
  DA(g->d_ob, nbt);
  HA(g->h_sums, 5 * nbt);
  HA(g->h_omi, nbt);
  HA(g->h_omo, nbt);
  HA(g->h_mb, nbt);
  HA(g->h_w0, nbt);
  HA(g->h_ob, nbt);
  if (g->gpu_cfo) {
    DA(g->d_cfi, g->C);
    DA(g->d_cfo, g->C);
    DA(g->d_ops, 3 * (size_t)g->C);
    HA(g->h_cfi, g->C);
    HA(g->h_cfo, g->C);
    HA(g->h_ops, 3 * (size_t)g->C);
  } else {
    HA(g->h_w, (size_t)g->C * g->w_stride);
  }
  HA(g->h_ends, nbt);
  g->al_ok = g->k->alias != NULL;
  if (g->al_ok) {
    DA(g->d_al, g->C);
    HA(g->h_al, g->C);
  } else {
    for (unsigned c = 0; c < g->C; c++) qpsk_alias_off(b->ch[c]);
  }
  g->ser = m->qpsk_serial;
  g->bank = b;
  g->gser_ok = g->ser && g->gpu_cfo && g->B <= QPSK_SR_MAXB;
  if (g->gser_ok) {
    DA(g->d_st, g->C);
    DA(g->d_sp, g->C);
    DA(g->d_tb, nbt);
    HA(g->h_st, g->C);
    HA(g->h_sp, g->C);
    HA(g->h_tb, nbt);
  }
  g->gph_ok = g->gser_ok && g->ser->phase;
  g->gph_on = 1;
  if (g->gph_ok) {
    /* pending slots: up to 4, within 64 MiB of pinned memory */
    const size_t per = g->C * sizeof *g->p_sp + nbt * (sizeof *g->p_tb + 4 * sizeof *g->p_mom +
                                                       sizeof *g->p_bad + sizeof *g->p_po);
    size_t ns = ((size_t)64 << 20) / per;
    g->np_cap = ns < 1 ? 1 : ns > 4 ? 4 : (unsigned)ns;
    DA(g->d_pst, g->C);
    DA(g->d_po, nbt);
    DA(g->d_off, g->C);
    HA(g->h_pst, g->C);
    HA(g->p_sp, g->np_cap * (size_t)g->C);
    HA(g->p_tb, g->np_cap * nbt);
    HA(g->p_mom, 4 * g->np_cap * nbt);
    HA(g->p_bad, g->np_cap * nbt);
    HA(g->p_po, g->np_cap * nbt);
  }
#undef DA
#undef HA
  if (st) {
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  b->drv = g;
  if (g->gser_ok && (st = prx_qpsk_bank_gpu_set_serial(g, 1)) < 0) {
    b->drv = NULL;
    prx_qpsk_bank_gpu_destroy(g);
    return st;
  }
  return PRX_OK;
}

/* the channels' carried state (their prx_qpsk's, as a reset or the CPU passes left it, and the
 * CFO history the CPU path tracks) onto the device, for the serial passes there */
static prx_status serial_upload(prx_qpsk_bank_gpu *g) {
  TRY(quiesce(g));
  for (unsigned c = 0; c < g->C; c++) {
    qpsk_serial_state_of(g->bank->ch[c], &g->h_st[c]);
    g->h_st[c].hist_r = g->hist_r[c];
    g->h_st[c].hist_n = (int64_t)g->hist_n[c];
  }
  prx_status st = g->dev->copy(g->d_st, g->h_st, g->C * sizeof *g->h_st, g->stream);
  if (!st) st = g->dev->sync(g->stream);
  return st;
}

/* the reverse: the device's state back into the channels and the CPU path's CFO history */
static prx_status serial_download(prx_qpsk_bank_gpu *g) {
  TRY(quiesce(g));
  prx_status st = g->dev->copy(g->h_st, g->d_st, g->C * sizeof *g->h_st, g->stream);
  if (!st) st = g->dev->sync(g->stream);
  for (unsigned c = 0; c < g->C && !st; c++) {
    qpsk_serial_state_to(g->bank->ch[c], &g->h_st[c]);
    g->hist_r[c] = g->h_st[c].hist_r;
    g->hist_n[c] = (size_t)g->h_st[c].hist_n;
  }
  return st;
}

/* the phase pass's carried state to the side that runs it (the device where on) */
static prx_status phase_side(prx_qpsk_bank_gpu *g, int on) {
  if (on == g->ph_dev) return PRX_OK;
  TRY(quiesce(g));
  const size_t bytes = g->C * sizeof *g->h_pst;
  prx_status st = PRX_OK;
  if (on) {
    for (unsigned c = 0; c < g->C; c++) g->h_pst[c] = g->bank->ch[c]->ph;
    st = g->dev->copy(g->d_pst, g->h_pst, bytes, g->stream);
    if (!st) st = g->dev->sync(g->stream);
  } else {
    st = g->dev->copy(g->h_pst, g->d_pst, bytes, g->stream);
    if (!st) st = g->dev->sync(g->stream);
    for (unsigned c = 0; c < g->C && !st; c++) g->bank->ch[c]->ph = g->h_pst[c];
  }
  if (!st) g->ph_dev = on;
  return st;
}

int prx_qpsk_bank_gpu_set_serial(prx_qpsk_bank_gpu *g, int on) {
  if (!g) return 0;
  on = on && g->gser_ok;
  prx_qpsk_bank_gpu_settle(g);
  if (!on) {
    prx_status st = phase_side(g, 0);
    if (st) return st;
  }
  if (on != g->gser) {
    prx_status st = on ? serial_upload(g) : serial_download(g);
    if (st) return st;
  }
  g->gser = on;
  return on;
}

/* The driver's stream state back to a stream's start (the bank's reset and the end of a
 * stream); the CFO alias test's sums are not stream state: they go only with the bank's reset. */
static void stream_state_reset(prx_qpsk_bank_gpu *g) {
  quiesce(g);               /* (a failure shows at the next call's first wait) */
  g->hold = g->end_due = 0; /* (the channels' reset forgets a held flush's reports too) */
  g->ring_base = 0;
  g->ring_len = g->ring_off = 0;
  for (unsigned c = 0; c < g->C; c++) g->hist_r[c] = -1;
  if (g->ahead_span >= 0) g->dev->sync(g->pstream); /* (only after an error mid-call) */
  g->ahead_span = -1;
  g->np = g->np_old = g->nc = 0; /* (the reset forgets them, as the channels' stats) */
  g->ph_dev = 0; /* the channels' phase state, as their reset left it, goes up at the next call */
  if (g->gser) serial_upload(g); /* (a copy's failure shows at the next call's first wait) */
}

void prx_qpsk_bank_gpu_reset(prx_qpsk_bank_gpu *g) {
  if (!g) return;
  stream_state_reset(g);
  g->al_n = 0; /* (the channels' reset cleared their sums; the next call measures afresh) */
  g->al_due = 0;
}

int prx_qpsk_bank_gpu_set_phase(prx_qpsk_bank_gpu *g, int on) {
  if (!g) return 0;
  g->gph_on = on;
  return on && g->gph_ok;
}

int prx_qpsk_bank_gpu_set_fold(prx_qpsk_bank_gpu *g, int path) {
  if (g) g->fold = path == QPSK_OM_APART || !g->fold_ok ? QPSK_OM_APART : QPSK_OM_FOLDED;
  return g ? g->fold : 0;
}

void prx_qpsk_bank_gpu_get_timing(const prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_timing *t) {
  if (g) {
    *t = g->tm;
    t->gpu_cfo = g->gpu_cfo;
    t->fold = g->fold;
    t->gpu_serial = g->gser;
    t->gpu_phase = g->gph;
    t->ring_bytes = g->ring ? (double)g->C * g->ring_cap * g->sz : 0;
  } else {
    memset(t, 0, sizeof *t);
  }
}

void prx_qpsk_bank_gpu_set_mark(prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_mark_fn fn, void *ctx) {
  if (!g) return;
  g->mark = fn;
  g->mark_ctx = ctx;
}

static void mark(prx_qpsk_bank_gpu *g, void *stream, qpsk_bank_mark m) {
  if (g->mark) g->mark(g->mark_ctx, stream, (int)m);
}

/* ---- one span of every channel ---- */

typedef struct {
  prx_qpsk_bank *b;
  prx_qpsk_bank_gpu *g;
} span_ctx;

/* after pre: the input sums into the blocks, the level pass, the O&M inputs */
static void task_level(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = x->b->ch[c];
  const size_t nb = g->nb, o = c * nb;
  for (size_t j = 0; j < nb; j++) {
    qpsk_blk *bk = &q->blks[j];
    const double *mo = g->h_mom[g->slot] + 4 * (o + j);
    bk->mom[0] = mo[0];
    bk->mom[1] = mo[1];
    bk->mom[2] = mo[2];
    bk->mom_n = mo[3];
    bk->nonfinite = g->h_bad[g->slot][o + j];
  }
  qpsk_serial_level(q, 1);
  const qpsk_span *sp = &q->spans[0];
  qpsk_om_in in;
  memset(&in, 0, sizeof in);
  in.D.re = (float)(sp->dc[0] * q->pre_gain);
  in.D.im = (float)(sp->dc[1] * q->pre_gain);
  in.gain = (float)sp->gain;
  in.g_hi = g->g_hi;
  for (size_t j = 0; j < nb; j++) g->h_omi[o + j] = in;
}

/* after om: the O&M sums into the blocks, the timing pass, the blocks' timing records */
static void task_timing(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = x->b->ch[c];
  const size_t nb = g->nb, o = c * nb;
  for (size_t j = 0; j < nb; j++) {
    qpsk_blk *bk = &q->blks[j];
    const qpsk_om_out *r = &g->h_omo[o + j];
    memcpy(bk->osub, r->osub, sizeof bk->osub);
    memcpy(bk->osub_t, r->osub_t, sizeof bk->osub_t);
    memcpy(bk->corr, r->corr, sizeof bk->corr);
    bk->om_n = r->om_n;
    bk->nsub = r->nsub;
  }
  qpsk_serial_timing(q, 1);
  /* the span's values in the w row: from 0, or (GPU CFO) in the region without the history */
  const int hr = g->hist_r[c];
  const size_t wr = hr == 0 ? 1 : 0;
  const int64_t base = g->gpu_cfo ? (int64_t)(wr * g->region + g->S) : 0;
  int64_t w0 = base;
  for (size_t j = 0; j < nb; j++) {
    const qpsk_blk *bk = &q->blks[j];
    qpsk_mf_block *mb = &g->h_mb[o + j];
    memset(mb, 0, sizeof *mb);
    const int64_t n = bk->k1 - bk->k0;
    mb->t.b = bk->b;
    mb->t.k0 = bk->k0;
    mb->t.k1 = bk->k1;
    mb->t.R = qpsk_mf_run_length(bk->d, n, g->scf.P);
    mb->t.tau = bk->tau;
    mb->t.d = bk->d;
    g->h_w0[o + j] = w0;
    w0 += n > 0 ? n : 0;
  }
  const size_t nw = (size_t)(w0 - base);
  g->nw_c[c] = nw;
  g->wr_c[c] = wr;
  if (!g->gpu_cfo) return;
  /* the CFO window (stage_cfo's): a span of fewer than S values reaches back into the history */
  size_t take = 0;
  if (nw < g->S && hr >= 0) {
    take = g->S - nw;
    if (take > g->hist_n[c]) take = g->hist_n[c];
  }
  int64_t *op = g->h_ops + 3 * c;
  op[0] = take ? (int64_t)((size_t)hr * g->region + g->S + g->hist_n[c] - take) : 0;
  op[1] = take ? base - (int64_t)take : 0;
  op[2] = (int64_t)take;
  qpsk_cfo_in *ci = &g->h_cfi[c];
  memset(ci, 0, sizeof *ci);
  ci->w0 = base - (int64_t)take;
  ci->n = (unsigned)(take + nw);
  ci->e = q->spans[0].e;
}

/* after x4: the span's 4th powers, the CFO stage and the NCO on the CPU, the matched filter's
 * records */
static void task_cfo(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = x->b->ch[c];
  const size_t nb = g->nb, o = c * nb;
  qpsk_span *sp = &q->spans[0];
  const size_t nw = g->nw_c[c];
  if (g->gpu_cfo) {
    sp->f = g->h_cfo[c].f;
    sp->nw = 0;   /* the values stay on the device: nothing for batch_end to keep in w_hist */
    if (nw > 0) { /* (the span right before the next one's: batch_end's rule) */
      g->hist_r[c] = (int)g->wr_c[c];
      g->hist_n[c] = nw;
    }
  } else {
    memcpy(sp->w, g->h_w + c * g->w_stride, nw * sizeof(prx_cf32));
    sp->nw = nw;
    qpsk_stage_cfo(q, 0);
  }
  qpsk_serial_nco(q, 1);
  const double omega = 2 * M_PI * sp->f / q->sps;
  for (size_t j = 0; j < nb; j++) {
    qpsk_mf_block *mb = &g->h_mb[o + j];
    int64_t lo, hi;
    qpsk_mf_window(q, q->blks[j].b, &lo, &hi);
    mb->omega = omega;
    mb->theta = sp->theta + omega * (double)(lo - sp->n_ref);
    mb->dc[0] = (float)sp->dc[0];
    mb->dc[1] = (float)sp->dc[1];
    mb->gain = (float)sp->gain;
  }
}

/* after mf: the V&V sums (and symbols) into the blocks, the phase pass, the decisions' records
 * (or the CPU's decisions), the report and the state carried to the next span */
static void task_phase(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = x->b->ch[c];
  const size_t nb = g->nb, o = c * nb;
  for (size_t j = 0; j < nb; j++) {
    qpsk_blk *bk = &q->blks[j];
    const double *s = g->h_sums + 5 * (o + j);
    bk->sums.s4[0] = s[0];
    bk->sums.s4[1] = s[1];
    bk->sums.m2 = s[2];
    bk->sums.m4 = s[3];
    bk->sums.n = s[4];
    memset(&bk->shape, 0, sizeof bk->shape);
    const int64_t n = bk->k1 - bk->k0;
    if (n <= 0) continue;
    if (g->hf) {
      memcpy(bk->sym, g->h_sym + (o + j) * g->Lmax, (size_t)n * sizeof(prx_cf32));
      bk->shape = qpsk_shape_of(bk->sym, n);
    } else {
      bk->sym[n - 1] = g->h_ends[o + j].last;
      bk->shape = g->h_ends[o + j].shape;
    }
  }
  qpsk_serial_phase(q);
  const int diff = q->cfg.ambiguity == PRX_QPSK_DIFFERENTIAL;
  for (size_t j = 0; j < nb; j++) {
    const qpsk_blk *bk = &q->blks[j];
    if (g->hf) { /* the CPU's decisions and LLRs into the pinned rows (q->out_bits, out_llrs) */
      qpsk_stage_out(q, j);
      continue;
    }
    qpsk_out_block *ob = &g->h_ob[o + j];
    memset(ob, 0, sizeof *ob);
    /* the CPU stage's correction (qpsk_batch.c, block_rot) */
    const float gn = (float)(1.0 / sqrt(bk->sig));
    ob->rot.re = (float)cos(-bk->phi) * gn;
    ob->rot.im = (float)sin(-bk->phi) * gn;
    ob->quad0 = bk->prev.quad;
    ob->diff = diff;
    ob->out0 = (int64_t)(g->off[c] + bk->out0);
  }
  g->off[c] += qpsk_batch_end(q, 1);
  q->next_span++;
}

/* after mf, the serial passes on the GPU: the channel's blocks laid out, the passes' results
 * (span, blocks' timing) and pre's input sums into them, then the phase pass as above */
static void task_phase_gpu(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = x->b->ch[c];
  const size_t o = c * g->nb;
  qpsk_batch_begin(q, q->next_span, 1);
  qpsk_serial_to_blocks(q, &g->h_sp[c], g->h_tb + o, g->h_mom[g->slot] + 4 * o,
                        g->h_bad[g->slot] + o);
  task_phase(ctx, c);
}

/* the n oldest pending spans' results into the channel's prx_qpsk, span by span as the phase
 * pass and the batch's end leave them (NONE and DIFFERENTIAL: every symbol a data symbol),
 * reported; where they are an earlier call's (fresh), its block estimates are dropped after (the
 * channel's estimates are the current call's) */
typedef struct {
  prx_qpsk_bank_gpu *g;
  unsigned n;
  int fresh;
  int begin; /* the call's start of channels 1 .. C - 1 first (call_begin) */
} drain_ctx;

/* The call's start for channel c (as prx_qpsk_execute / flush set a channel's stream): its
 * outputs (host finish: the pinned rows), estimates cleared, the chunk's samples counted. */
static void call_begin(prx_qpsk_bank_gpu *g, size_t c) {
  prx_qpsk *q = g->bank->ch[c];
  const prx_qpsk_bank_out *out = g->c_out;
  q->out_bits = g->hf && out->bits ? g->h_bits + c * g->h_bits_row : NULL;
  q->out_llrs = g->hf && out->llrs ? g->h_llrs + c * g->h_llr_row : NULL;
  q->out_syms = NULL;
  q->n_est = 0;
  q->n_total += (int64_t)g->c_n_in;
  q->stats.samples += g->c_n_in;
  if (g->c_flush) q->flushing = 1;
  g->off[c] = 0;
}

/* The call's start of channels 1 .. C - 1 on this thread, where it is still to do. */
static void call_begin_rest(prx_qpsk_bank_gpu *g) {
  if (g->begun) return;
  for (size_t c = 1; c < g->C; c++) call_begin(g, c);
  g->begun = 1;
}

static void task_drain(void *ctx, size_t c) {
  const drain_ctx *x = ctx;
  prx_qpsk_bank_gpu *g = x->g;
  prx_qpsk *q = g->bank->ch[c];
  if (x->begin && c) call_begin(g, c);
  for (unsigned i = 0; i < x->n; i++) {
    const unsigned p = (g->ph + i) % g->np_cap;
    const size_t o = p * g->nbt + c * g->p_nb[p];
    qpsk_batch_begin(q, q->next_span, 1);
    qpsk_serial_to_blocks(q, &g->p_sp[p * (size_t)g->C + c], g->p_tb + o, g->p_mom + 4 * o,
                          g->p_bad + o);
    uint64_t j = q->n_sym;
    size_t out = 0;
    for (size_t t = 0; t < q->n_blks; t++) {
      qpsk_blk *bk = &q->blks[t];
      qpsk_ph_to_blk(&g->p_po[o + t], bk);
      const int64_t n = bk->k1 - bk->k0;
      bk->j0 = j;
      bk->out0 = out;
      bk->quarter = 0;
      bk->n_data = n > 0 ? (unsigned)n : 0;
      out += bk->n_data;
      j += (uint64_t)n;
    }
    qpsk_batch_end(q, 1);
    q->next_span++;
  }
  if (x->fresh) q->n_est = 0;
}

static void task_begin(void *ctx, size_t c) {
  span_ctx *x = ctx;
  prx_qpsk *q = x->b->ch[c];
  qpsk_batch_begin(q, q->next_span, 1);
}

static void pool_run(prx_qpsk_bank *b, prx_task_fn fn, span_ctx *x) {
  double t0 = prx_now();
  prx_pool_run(b->pool, fn, x, b->C);
  b->drv->tm.serial_s += prx_now() - t0;
}

static prx_status drv_wait(prx_qpsk_bank_gpu *g, void *stream) {
  double t0 = prx_now();
  prx_status st = g->dev->sync(stream);
  g->tm.wait_s += prx_now() - t0;
  return st;
}

/* Waits for stream and for the reports' copies on pstream. */
static prx_status wait_all(prx_qpsk_bank_gpu *g, void *stream) {
  TRY(drv_wait(g, stream));
  if (g->cp_pending) TRY(drv_wait(g, g->pstream));
  g->cp_pending = 0;
  return PRX_OK;
}

/* The symbols of the nc newest pending spans (their records copied) added to the call's output
 * counts: each block's k1 - k0 where positive, as the phase pass counts them
 * (qpsk_serial_phase.h). */
static void count_new(prx_qpsk_bank_gpu *g) {
  for (unsigned i = g->np - g->nc; i < g->np; i++) {
    const unsigned p = (g->ph + i) % g->np_cap;
    const size_t nb = g->p_nb[p];
    const qpsk_serial_blk *tb = g->p_tb + p * g->nbt;
    for (size_t c = 0; c < g->C; c++) {
      int64_t n = 0;
      for (size_t t = 0; t < nb; t++) {
        const int64_t k = tb[c * nb + t].k1 - tb[c * nb + t].k0;
        n += k > 0 ? k : 0;
      }
      g->off[c] += (size_t)n;
    }
  }
  g->nc = 0;
}

/* The earlier calls' pending spans' copies complete (the phase results of the last of them,
 * ev_ph[ph_prev]) where that call returned with them in flight, before the host reads them. */
static prx_status old_copies(prx_qpsk_bank_gpu *g) {
  if (!g->np_old || !g->old_wait) return PRX_OK;
  g->old_wait = 0;
  return host_wait(g, g->ev_ph[g->ph_prev]);
}

/* The n oldest pending spans into the channels (their copies complete), on the pool, after the
 * call's start of channels 1 .. C - 1 where it is still to do. */
static void drain_n(prx_qpsk_bank_gpu *g, unsigned n, int fresh) {
  if (!n && g->begun) return;
  drain_ctx x = {g, n, fresh, !g->begun};
  double t0 = prx_now();
  prx_pool_run(g->bank->pool, task_drain, &x, g->C);
  g->begun = 1;
  g->tm.serial_s += prx_now() - t0;
  g->ph = (g->ph + n) % g->np_cap;
  g->np -= n;
  g->np_old = g->np_old > n ? g->np_old - n : 0;
}

/* Every pending span into the channels, after a wait for their copies where the call's end has
 * not waited (stream: the one they were issued on). */
static prx_status drain(prx_qpsk_bank_gpu *g, void *stream) {
  if (!g->np) return PRX_OK;
  if (g->synced != 1) {
    TRY(quiesce(g));
    TRY(wait_all(g, stream));
  }
  g->synced = 1;
  count_new(g);
  drain_n(g, g->np, g->np_old > 0);
  return PRX_OK;
}

/* The end of a call's spans with the phase pass on the GPU: the channels' output counts from the
 * call's spans' records (one wait, for the last span's); a flush's spans into the channels. */
static prx_status call_end(prx_qpsk_bank_gpu *g, int flush, void *stream) {
  if (!g->gph) return PRX_OK;
  if (g->first) { /* no span ran: the earlier calls' spans now, their estimates dropped */
    TRY(old_copies(g));
    g->tm.late += g->np_old;
    drain_n(g, g->np_old, 1);
    return PRX_OK;
  }
  /* the last span's records (the earlier spans' copied before them): the counts, while mf, phase
   * and out may still run; without events the stream done */
  if (g->pstream) {
    TRY(host_wait(g, g->ev_rec));
  } else {
    TRY(wait_all(g, stream));
    g->synced = 1;
  }
  count_new(g);
  return flush ? drain(g, stream) : PRX_OK;
}

/* the CFO alias test's sums, as the last call that added to them left them, into the channels */
static void alias_collect(prx_qpsk_bank_gpu *g) {
  if (!g->al_due) return;
  g->al_due = 0;
  if (g->ev_al && host_wait(g, g->ev_al)) return; /* (a failure shows at the next call's wait) */
  for (unsigned c = 0; c < g->C; c++) {
    prx_qpsk *q = g->bank->ch[c];
    q->al = g->h_al[c];
    q->al_n = g->al_n;
  }
}

/* The stream's end after a flush: every channel's stream reset, then the driver's. The CFO alias
 * test's sums outlive the stream, as a channel's stats and sums do: into the channels first (the
 * receiver ends its banks' streams before it reads their stats), and no new measure after it. */
static void end_stream(prx_qpsk_bank_gpu *g) {
  alias_collect(g);
  for (size_t c = 0; c < g->C; c++) qpsk_stream_reset(g->bank->ch[c]);
  stream_state_reset(g);
}

void prx_qpsk_bank_gpu_hold_end(prx_qpsk_bank_gpu *g) {
  if (g) g->hold = 1;
}

void prx_qpsk_bank_gpu_end(prx_qpsk_bank_gpu *g) {
  if (!g || !g->end_due) return;
  quiesce(g); /* (the flush's spans' copies then complete: synced) */
  if (g->np && g->synced == 1) drain_n(g, g->np, g->np_old > 0);
  end_stream(g);
}

static const void *at_sample(const void *base, int64_t s0, size_t sz) {
  /* the row pointer that puts stream sample s0 at base (address arithmetic, modulo 2^64) */
  return (const void *)((uintptr_t)base - (uintptr_t)s0 * (uintptr_t)sz);
}

/* the CFO alias test over the call's chunk, stream samples s0 .. s0 + n - 1 of the rows (as the
 * stage kernels take them), where fewer than qpsk_alias_len(sps) are measured: on the call's
 * stream, the sums then back to the host */
static prx_status alias_measure(prx_qpsk_bank_gpu *g, const void *rows, size_t pitch, int64_t s0,
                                size_t n, void *stream) {
  const size_t len = qpsk_alias_len(g->stg.sps);
  if (!g->al_ok || !n || g->al_n >= len) return PRX_OK;
  if (n > len - g->al_n) n = len - g->al_n;
  TRY(g->k->alias(&g->stg, rows, pitch, s0, n, g->al_n == 0, g->d_al, stream));
  TRY(g->dev->copy(g->h_al, g->d_al, g->C * sizeof *g->h_al, stream));
  /* (a module without events: the host waits here, once or twice a stream) */
  TRY(g->ev_al ? g->m->event_record(g->ev_al, stream) : g->dev->sync(stream));
  g->al_n += n;
  g->al_due = 1;
  return PRX_OK;
}

void prx_qpsk_bank_gpu_settle(prx_qpsk_bank_gpu *g) {
  if (g) alias_collect(g);
  /* (the last call waited at its end: nothing in flight; a failed call's spans are dropped) */
  if (g && g->end_due) {
    prx_qpsk_bank_gpu_end(g);
    return;
  }
  if (!g || !g->np) return;
  quiesce(g);
  if (g->synced == 1)
    drain_n(g, g->np, 0);
  else
    g->np = g->np_old = g->nc = 0;
}

size_t prx_qpsk_bank_gpu_pending_symbols(const prx_qpsk_bank_gpu *g) {
  return g ? (size_t)g->np * g->B * g->Lmax : 0;
}

/* Stage pre (pre_om where om is folded) of blocks b0 .. b0 + nb - 1 of every channel into slot
 * k, and its input sums back to the slot's pinned records, on stream. */
static prx_status issue_pre(prx_qpsk_bank_gpu *g, int k, const void *rows, size_t stride,
                            int64_t b0, size_t nb, void *stream) {
  qpsk_stages st = g->stg;
  st.nblk = (unsigned)nb;
  const size_t n = (size_t)g->C * nb;
  if (g->fold)
    TRY(g->k->pre_om(&st, rows, stride, b0, g->n_total, g->g_hi, g->d_grid[k], g->d_mom[k],
                     g->d_bad[k], g->d_omsum[k], stream));
  else
    TRY(g->k->pre(&st, rows, stride, b0, g->n_total, g->d_grid[k], g->d_mom[k], g->d_bad[k],
                  stream));
  if (g->gph) return PRX_OK; /* (the pending slot takes them after the phase pass) */
  TRY(g->dev->copy(g->h_mom[k], g->d_mom[k], 4 * n * sizeof(double), stream));
  TRY(g->dev->copy(g->h_bad[k], g->d_bad[k], n * sizeof(unsigned), stream));
  return PRX_OK;
}

/* Stage om of the span from slot k's grid (om_sums from pre_om's sums where om is folded), its
 * O&M inputs at d_omi, on stream. */
static prx_status issue_om(prx_qpsk_bank_gpu *g, const qpsk_stages *st, int k, int64_t b0,
                           void *stream) {
  if (g->fold) return g->k->om_sums(st, b0, g->d_omi, g->d_omsum[k], g->d_omo, stream);
  return g->k->om(st, b0, g->d_omi, g->d_grid[k], g->d_omo, stream);
}

/* The CFO stage on the GPU taking its rows from x4 (x4_rows, cfo_fed: no copy of the windows),
 * where the module has those entries */
static int cfo_fed(const prx_qpsk_bank_gpu *g) {
  return g->gpu_cfo && g->k->cfo_rows && g->k->x4_rows && g->k->cfo_fed;
}

/* Stage x4 of the span from slot k's grid (levelled as it reads where om is folded) into the w
 * rows, and the CFO stage's rows where it takes them from x4 (cfo_fed), on stream. */
static prx_status issue_x4(prx_qpsk_bank_gpu *g, const qpsk_stages *st, int k, void *stream) {
  if (cfo_fed(g)) {
    prx_cf32 *rows;
    size_t rs;
    TRY(g->k->cfo_rows(st, &rows, &rs));
    return g->k->x4_rows(st, g->d_mb, g->d_w0, g->fold ? g->d_omi : NULL, g->d_grid[k], g->d_w,
                         g->w_stride, rows, rs, stream);
  }
  if (g->fold)
    return g->k->x4_level(st, g->d_mb, g->d_w0, g->d_omi, g->d_grid[k], g->d_w, g->w_stride,
                          stream);
  return g->k->x4(st, g->d_mb, g->d_w0, g->d_grid[k], g->d_w, g->w_stride, stream);
}

/* The CFO stage of the span on the windows in the w rows (the reach-back copied before them), on
 * stream: from the rows issue_x4 wrote where it wrote them */
static prx_status issue_cfo(prx_qpsk_bank_gpu *g, const qpsk_stages *st, void *stream) {
  if (cfo_fed(g))
    return g->k->cfo_fed(st, g->d_w, g->w_stride, g->d_w0, g->d_cfi, g->d_cfo, stream);
  return g->k->cfo(st, g->d_w, g->w_stride, g->d_cfi, g->d_cfo, stream);
}

/* Stage mf of the span's n blocks (all channels) and what the phase pass reads of it back: the
 * symbols' sums, and the symbols (host finish) or each block's end (qpsk_block_end: the
 * differential chain's link, the second-order line), on stream. */
static prx_status issue_mf(prx_qpsk_bank_gpu *g, const qpsk_stages *st, const void *rows,
                           size_t stride, int64_t b0, size_t n, void *stream) {
  const prx_qpsk_bank_cuda *d = g->dev;
  TRY(g->k->mf(st, rows, stride, b0, g->n_total, g->d_mb, g->d_sym, g->d_sums, stream));
  if (g->gph) return PRX_OK; /* (the phase pass reads them on the device) */
  TRY(d->copy(g->h_sums, g->d_sums, 5 * n * sizeof(double), stream));
  if (g->hf) return d->copy(g->h_sym, g->d_sym, n * g->Lmax * sizeof(prx_cf32), stream);
  TRY(d->block_ends(g->d_mb, g->d_sym, n, g->Lmax, g->d_ends, stream));
  return d->copy(g->h_ends, g->d_ends, n * sizeof *g->h_ends, stream);
}

/* After the phase pass: where the GPU decides (not host finish), the blocks' decision records
 * and stage out into the caller's rows (bits, or none where NULL); the span counted. */
static prx_status issue_out(prx_qpsk_bank_gpu *g, const qpsk_stages *st, size_t n, uint8_t *bits,
                            size_t bits_stride, void *stream) {
  if (!g->hf && bits) {
    if (!g->gph) TRY(g->dev->copy(g->d_ob, g->h_ob, n * sizeof(qpsk_out_block), stream));
    TRY(g->k->out(st, g->d_mb, g->d_ob, g->d_sym, bits, bits_stride, stream));
  }
  g->tm.spans++;
  return PRX_OK;
}

/* The span's records that the reports read into the next pending slot (on stream; slot k's input
 * sums), in two parts: those final after the NCO pass (the span records, the blocks' timing, input
 * sums and non-finite counts: ~1.9 MB at 1024 channels of 16 blocks, which the phase pass and out
 * only read), then the phase pass's results, which slot the span fills. */
static prx_status pend_records(prx_qpsk_bank_gpu *g, int k, size_t nb, void *stream) {
  const prx_qpsk_bank_cuda *d = g->dev;
  const size_t p = (g->ph + g->np) % g->np_cap, n = (size_t)g->C * nb, o = p * g->nbt;
  g->p_nb[p] = nb;
  TRY(d->copy(g->p_sp + p * g->C, g->d_sp, g->C * sizeof *g->p_sp, stream));
  TRY(d->copy(g->p_tb + o, g->d_tb, n * sizeof *g->p_tb, stream));
  TRY(d->copy(g->p_mom + 4 * o, g->d_mom[k], 4 * n * sizeof *g->p_mom, stream));
  return d->copy(g->p_bad + o, g->d_bad[k], n * sizeof *g->p_bad, stream);
}
static prx_status pend_phase(prx_qpsk_bank_gpu *g, size_t nb, void *stream) {
  const size_t p = (g->ph + g->np) % g->np_cap, n = (size_t)g->C * nb, o = p * g->nbt;
  TRY(g->dev->copy(g->p_po + o, g->d_po, n * sizeof *g->p_po, stream));
  g->p_nb[p] = nb;
  g->np++;
  g->nc++;
  return PRX_OK;
}
static prx_status pend(prx_qpsk_bank_gpu *g, int k, size_t nb, void *stream) {
  TRY(pend_records(g, k, nb, stream));
  return pend_phase(g, nb, stream);
}

/* The next span of every channel with the serial passes on the GPU: pre, level, om, timing, x4,
 * the CFO window's reach-back, cfo, NCO and mf follow one another on the stream; the host waits
 * once, for the symbols' sums (and the passes' results, the input sums, the symbols where they
 * go back), runs the phase pass and the report per channel, then out. */
static prx_status run_span_gpu(prx_qpsk_bank *b, const void *rows, size_t stride, uint8_t *bits,
                               size_t bits_stride, void *stream) {
  prx_qpsk_bank_gpu *g = b->drv;
  const prx_qpsk_bank_cuda *d = g->dev;
  const prx_qpsk_serial_cuda *r = g->ser;
  span_ctx x = {b, g};
  prx_qpsk *q0 = b->ch[0];
  const int64_t span = g->next, b0 = span * (int64_t)g->B;
  /* the span's blocks (the same for every channel: they share the stream position); the other
   * channels' are laid out with their phase pass */
  const double t0 = prx_now();
  g->nb = qpsk_batch_begin(q0, span, 1);
  const size_t nb = g->nb, n = (size_t)g->C * nb, C = g->C;
  qpsk_stages st = g->stg;
  st.nblk = (unsigned)nb;
  const int k = g->slot;
  if (g->cp_pending) TRY(g->m->stream_wait(stream, g->ev)); /* (the span before's records) */
  g->cp_pending = 0;
  TRY(issue_pre(g, k, rows, stride, b0, nb, stream));
  mark(g, stream, QPSK_MARK_PRE);
  TRY(r->level(&g->scf, C, nb, span, g->g_hi, g->d_mom[k], g->d_st, g->d_sp, g->d_omi, stream));
  mark(g, stream, QPSK_MARK_LEVEL);
  TRY(issue_om(g, &st, k, b0, stream));
  mark(g, stream, QPSK_MARK_OM);
  TRY(r->timing(&g->scf, C, nb, b0, q0->flushing, g->n_total, g->d_omo, g->d_st, g->d_sp, g->d_tb,
                g->d_mb, g->d_w0, g->d_ops, g->d_cfi, stream));
  mark(g, stream, QPSK_MARK_TIMING);
  TRY(issue_x4(g, &st, k, stream));
  mark(g, stream, QPSK_MARK_X4);
  TRY(d->row_copy(g->d_w, g->w_stride, g->d_ops, C, stream));
  TRY(issue_cfo(g, &st, stream));
  mark(g, stream, QPSK_MARK_CFO);
  TRY(r->nco(&g->scf, C, nb, span, b0, g->d_cfo, g->d_st, g->d_sp, g->d_mb, stream));
  mark(g, stream, QPSK_MARK_NCO);
  /* the records final by now go down beside mf, so that after the phase pass only its results
   * remain, shorter than out: the call's counts then do not queue behind them on the copy
   * engine (bench/GPU_NOTES.md, "eleventh session": ~35 us of the kept call) */
  const int early = g->gph && g->pstream;
  if (early) {
    TRY(g->m->event_record(g->ev, stream));
    TRY(g->m->stream_wait(g->pstream, g->ev));
    TRY(pend_records(g, k, nb, g->pstream));
    TRY(g->m->event_record(g->ev_rec, g->pstream)); /* (the counts' wait) */
    mark(g, g->pstream, QPSK_MARK_COUNTS);
  }
  TRY(issue_mf(g, &st, rows, stride, b0, n, stream));
  mark(g, stream, QPSK_MARK_MF);
  if (g->gph) { /* the phase pass and out on the device, the reports' records into a slot */
    TRY(r->phase(q0->L, g->Lmax, C, nb, q0->cfg.ambiguity == PRX_QPSK_DIFFERENTIAL, g->first,
                 g->d_sums, g->d_mom[k], g->d_bad[k], g->d_tb, g->d_sp, g->d_sym, g->d_pst, g->d_po,
                 g->d_ob, g->d_off, stream));
    mark(g, stream, QPSK_MARK_PHASE);
    g->first = 0;
    g->synced = 0;
    if (early) { /* the phase pass's results beside out and the ring's move */
      TRY(g->m->event_record(g->ev, stream));
      TRY(g->m->stream_wait(g->pstream, g->ev));
      TRY(pend_phase(g, nb, g->pstream));
      TRY(g->m->event_record(g->ev, g->pstream));
      g->php ^= 1;
      TRY(g->m->event_record(g->ev_ph[g->php], g->pstream));
      g->cp_pending = 1;
    }
    TRY(issue_out(g, &st, n, bits, bits_stride, stream));
    mark(g, stream, QPSK_MARK_OUT);
    if (!g->pstream) TRY(pend(g, k, nb, stream));
    mark(g, stream, QPSK_MARK_PEND);
    g->tm.issue_s += prx_now() - t0;
    /* the earlier calls' spans while the device runs this one; all of them where the slots are
     * full (after a wait) */
    TRY(old_copies(g));
    g->tm.late += g->np_old;
    drain_n(g, g->np_old, 1);
    mark(g, stream, QPSK_MARK_DRAIN);
    return g->np == g->np_cap ? drain(g, stream) : PRX_OK;
  }
  TRY(d->copy(g->h_sp, g->d_sp, C * sizeof *g->h_sp, stream));
  TRY(d->copy(g->h_tb, g->d_tb, n * sizeof *g->h_tb, stream));
  g->tm.issue_s += prx_now() - t0;
  TRY(drv_wait(g, stream));
  pool_run(b, task_phase_gpu, &x);
  return issue_out(g, &st, n, bits, bits_stride, stream);
}

/* The next span of every channel, its rows at rows (bytes per row: stride, sample s of a row at
 * s sz bytes from the row's start, s the stream index); bits (device, unpacked, bits_stride
 * bytes per row) or NULL. next_rows (next_stride): the rows of the span after it where that
 * span runs in this call too (its nb_next blocks' pre then runs ahead, on the second stream,
 * while the pool runs this span's serial passes), else NULL.
 *
 * Ordering of the two streams. Ahead, pre writes the other slot's grid, sums and pinned input
 * sums. Before it the second stream waits for an event recorded on the main stream, so it
 * follows everything issued there: the ring's appends and the chunk's copy (its rows), and the
 * om and x4 stages of the span before this one (the last readers of that slot's grid and sums;
 * the host read its pinned sums before). The host waits for the second stream before it reads
 * the sums and issues the span's om, so the span's later kernels follow its pre. The second
 * stream is idle whenever no pre is ahead, in particular at the end of every call. */
static prx_status run_span(prx_qpsk_bank *b, const void *rows, size_t stride, const void *next_rows,
                           size_t next_stride, size_t nb_next, uint8_t *bits, size_t bits_stride,
                           void *stream) {
  prx_qpsk_bank_gpu *g = b->drv;
  if (g->gser) return run_span_gpu(b, rows, stride, bits, bits_stride, stream);
  const prx_qpsk_bank_cuda *d = g->dev;
  span_ctx x = {b, g};
  const prx_qpsk *q0 = b->ch[0];
  const int64_t span = g->next, b0 = span * (int64_t)g->B;
  pool_run(b, task_begin, &x);
  g->nb = q0->n_blks; /* the same for every channel: they share the stream position */
  const size_t nb = g->nb, n = (size_t)g->C * nb;
  qpsk_stages st = g->stg;
  st.nblk = (unsigned)nb;

  if (g->ahead_span >= 0) TRY(drv_wait(g, g->pstream));
  if (g->ahead_span == span && g->ahead_nb == nb) {
    g->slot ^= 1; /* this span's pre ran ahead, into the other slot */
    g->tm.ahead++;
  } else {
    TRY(issue_pre(g, g->slot, rows, stride, b0, nb, stream));
    TRY(drv_wait(g, stream));
  }
  g->ahead_span = -1;
  if (next_rows && g->pstream) {
    TRY(g->m->event_record(g->ev, stream));
    TRY(g->m->stream_wait(g->pstream, g->ev));
    TRY(issue_pre(g, g->slot ^ 1, next_rows, next_stride, b0 + (int64_t)g->B, nb_next, g->pstream));
    g->ahead_span = span + 1;
    g->ahead_nb = nb_next;
  }
  const int k = g->slot;
  pool_run(b, task_level, &x);

  TRY(d->copy(g->d_omi, g->h_omi, n * sizeof(qpsk_om_in), stream));
  TRY(issue_om(g, &st, k, b0, stream));
  TRY(d->copy(g->h_omo, g->d_omo, n * sizeof(qpsk_om_out), stream));
  TRY(drv_wait(g, stream));
  pool_run(b, task_timing, &x);

  TRY(d->copy(g->d_mb, g->h_mb, n * sizeof(qpsk_mf_block), stream));
  TRY(d->copy(g->d_w0, g->h_w0, n * sizeof(int64_t), stream));
  TRY(issue_x4(g, &st, k, stream));
  if (g->gpu_cfo) {
    TRY(d->copy(g->d_ops, g->h_ops, 3 * (size_t)g->C * sizeof(int64_t), stream));
    TRY(d->row_copy(g->d_w, g->w_stride, g->d_ops, g->C, stream));
    TRY(d->copy(g->d_cfi, g->h_cfi, g->C * sizeof(qpsk_cfo_in), stream));
    TRY(issue_cfo(g, &st, stream));
    TRY(d->copy(g->h_cfo, g->d_cfo, g->C * sizeof(qpsk_cfo_out), stream));
  } else {
    TRY(d->copy(g->h_w, g->d_w, (size_t)g->C * g->w_stride * sizeof(prx_cf32), stream));
  }
  TRY(drv_wait(g, stream));
  pool_run(b, task_cfo, &x);

  TRY(d->copy(g->d_mb, g->h_mb, n * sizeof(qpsk_mf_block), stream));
  TRY(issue_mf(g, &st, rows, stride, b0, n, stream));
  TRY(drv_wait(g, stream));
  pool_run(b, task_phase, &x);
  return issue_out(g, &st, n, bits, bits_stride, stream);
}

/* A 2-D copy between device rows (the ring's and the chunk's): by a kernel where the module has
 * it (the copy engine's 2-D copy pays per row), else copy2d. */
static prx_status ring_copy(prx_qpsk_bank_gpu *g, void *dst, size_t dpitch, const void *src,
                            size_t spitch, size_t width, void *stream) {
  const prx_qpsk_bank_cuda *d = g->dev;
  return (d->copy2d_dev ? d->copy2d_dev : d->copy2d)(dst, dpitch, src, spitch, width, g->C, stream);
}

/* The ring's device memory, made at the first call that may append to it (a caller whose rows
 * keep the history never makes it: 3.2 GB at 1024 channels, sps 16/3). */
static prx_status ring_make(prx_qpsk_bank_gpu *g) {
  return g->ring ? PRX_OK : dalloc(g, (void **)&g->ring, (size_t)g->C * g->ring_cap * g->sz);
}

/* Appends the chunk's samples [ring_end, upto) to the ring (ext: its sample ext_base at ext,
 * ext_pitch bytes per row), first moving the ring's samples to the buffer's start where the
 * append would pass its end. */
static prx_status ring_put(prx_qpsk_bank_gpu *g, int64_t upto, const void *ext, int64_t ext_base,
                           size_t ext_pitch, void *stream) {
  const int64_t ring_end = g->ring_base + (int64_t)g->ring_len;
  if (upto <= ring_end) return PRX_OK;
  if ((size_t)(upto - g->ring_base) > g->ring_need)
    return prx_fail(PRX_ERR_INTERNAL, "CUDA bank: the ring (%zu samples) cannot take %lld",
                    g->ring_need, (long long)(upto - g->ring_base));
  const size_t pitch = g->ring_cap * g->sz;
  TRY(ring_make(g));
  if (g->ring_off + (size_t)(upto - g->ring_base) > g->ring_cap) {
    /* ring_off > ring_cap - ring_need >= 2 ring_need: source and destination apart */
    if (g->ring_len > g->ring_off)
      return prx_fail(PRX_ERR_INTERNAL, "CUDA bank: the ring's move overlaps itself");
    if (g->ring_len)
      TRY(ring_copy(g, g->ring, pitch, g->ring + g->ring_off * g->sz, pitch, g->ring_len * g->sz,
                    stream));
    g->ring_off = 0;
    g->tm.ring_moves++;
  }
  TRY(ring_copy(g, g->ring + (g->ring_off + g->ring_len) * g->sz, pitch,
                (const uint8_t *)ext + (size_t)(ring_end - ext_base) * g->sz, ext_pitch,
                (size_t)(upto - ring_end) * g->sz, stream));
  g->ring_len = (size_t)(upto - g->ring_base);
  return PRX_OK;
}

/* Keeps the samples [keep, n_total): those before ring_end stay in place (the ring's start
 * slides to keep), the rest are appended from the chunk; where the caller keeps the stream's
 * samples in its rows (kept: its next call's rows hold them before its chunk) and ext holds
 * [keep, n_total), none: the ring starts again, empty, at keep. */
static prx_status ring_keep(prx_qpsk_bank_gpu *g, int64_t keep, const void *ext, int64_t ext_base,
                            size_t ext_pitch, int kept, void *stream) {
  const int64_t ring_end = g->ring_base + (int64_t)g->ring_len;
  if (keep < g->ring_base) keep = g->ring_base;
  if (keep > g->n_total) keep = g->n_total;
  if (kept && ext && keep >= ext_base) { /* the caller's rows hold them: nothing to keep here */
    g->ring_base = keep;
    g->ring_off = g->ring_len = 0;
    return PRX_OK;
  }
  if (keep < ring_end) {
    g->ring_off += (size_t)(keep - g->ring_base);
    g->ring_len = (size_t)(ring_end - keep);
  } else { /* nothing of the ring kept: it starts again at the buffer's start */
    g->ring_off = 0;
    g->ring_len = 0;
  }
  g->ring_base = keep;
  return ring_put(g, g->n_total, ext, ext_base, ext_pitch, stream);
}

/* Whether span s reads nothing before the stream's sample ext_base (no stage reads before the
 * stream's start, where its window's start is negative). */
static int span_from(const prx_qpsk *q, int64_t s, int64_t ext_base) {
  int64_t lo, end;
  qpsk_span_need(q, s, &lo, &end);
  return (lo < 0 ? 0 : lo) >= ext_base;
}

/* span s's rows: the chunk in place where the span's input lies in it (ext: the stream's sample
 * ext_base at ext), else the ring */
static void span_rows(prx_qpsk_bank_gpu *g, const prx_qpsk *q, int64_t s, const void *ext,
                      int64_t ext_base, size_t ext_pitch, const void **rows, size_t *stride) {
  if (ext && span_from(q, s, ext_base)) {
    *rows = at_sample(ext, ext_base, g->sz);
    *stride = ext_pitch;
  } else {
    *rows = at_sample(g->ring + g->ring_off * g->sz, g->ring_base, g->sz);
    *stride = g->ring_cap * g->sz;
  }
}

/* The outputs' last step: counts, then the bits and LLRs into the caller's rows (host or device:
 * copy2d either way): in host-finish mode from the pinned rows (packed when asked), else, for a
 * host call, the bits from d_bits (a device call's are in place). */
static prx_status finish(prx_qpsk_bank *b, int flush, const prx_qpsk_bank_out *out, int out_dev,
                         void *stream) {
  prx_qpsk_bank_gpu *g = b->drv;
  const size_t C = g->C;
  size_t wb = 0, ws = 0;
  for (size_t c = 0; c < C; c++) {
    size_t nsym = g->off[c], bytes = 2 * nsym;
    if (g->hf && b->cfg.packed && out->bits) {
      uint8_t *dst = (out_dev ? g->h_pack : out->bits) + c * out->bits_stride;
      bytes =
          prx_qpsk_bank_pack(b, (unsigned)c, g->h_bits + c * g->h_bits_row, 2 * nsym, dst, flush);
    }
    out->n_symbols[c] = nsym;
    if (out->n_bytes) out->n_bytes[c] = out->bits ? bytes : 0;
    if (bytes > wb) wb = bytes;
    if (2 * nsym > ws) ws = 2 * nsym;
  }
  if (!g->hf) {
    if (out->bits && !out_dev)
      TRY(g->dev->copy2d(out->bits, out->bits_stride, g->d_bits, out->bits_stride, wb, C, stream));
    return PRX_OK;
  }
  if (out->bits) {
    const uint8_t *src = b->cfg.packed ? g->h_pack : g->h_bits;
    size_t sp = b->cfg.packed ? out->bits_stride : g->h_bits_row;
    if (b->cfg.packed && !out_dev) src = NULL; /* packed straight into the caller's rows */
    if (src) TRY(g->dev->copy2d(out->bits, out->bits_stride, src, sp, wb, C, stream));
  }
  if (out->llrs)
    TRY(g->dev->copy2d(out->llrs, out->llr_stride * sizeof(float), g->h_llrs,
                       g->h_llr_row * sizeof(float), ws * sizeof(float), C, stream));
  /* the pinned rows are reused by the next call: the copies must be done */
  return drv_wait(g, stream);
}

/* Whether a call with outputs out finishes on the host (the symbols come back; the phase pass
 * then runs on the CPU): pilots, LLRs or packed bits. */
static int host_finish(const prx_qpsk_bank *b, const prx_qpsk_bank_out *out) {
  return b->cfg.demod.ambiguity == PRX_QPSK_PILOTS || out->llrs || (b->cfg.packed && out->bits);
}

static prx_status run_call(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                           size_t kept, int in_dev, int flush, const prx_qpsk_bank_out *out,
                           int out_dev, void *stream) {
  prx_qpsk_bank_gpu *g = b->drv;
  const size_t C = g->C;
  double t0 = prx_now();
  prx_qpsk_bank_gpu_end(g); /* (a held flush's end, where its caller left it) */
  if (!out_dev || !in_dev) stream = g->stream;
  const int keeps = kept != QPSK_BANK_RING && in_dev; /* the caller's rows keep the history */
  if (flush && n_in && !keeps)
    return prx_fail(PRX_ERR_INTERNAL,
                    "CUDA bank: a flush brings samples only in rows that keep the history");
  if (!keeps || !in) kept = 0;
  /* the stream's samples this call's spans may read from before the chunk, [ring_base,
   * n_total): the ring holds [ring_base, ring_end), the caller's rows the kept ones before the
   * chunk (after a call whose rows kept them, the ring holds none) */
  const int64_t n_prev = b->ch[0]->n_total;
  if (kept > (size_t)n_prev) kept = (size_t)n_prev;
  const int64_t ring_end = g->ring_base + (int64_t)g->ring_len;
  if (n_prev - (int64_t)kept > ring_end) {
    if (!keeps)
      return prx_fail(PRX_ERR_INVALID,
                      "CUDA bank: the stream's samples from %lld are in the caller's rows "
                      "(prx_qpsk_bank_execute_device_kept): only that call, with them before its "
                      "chunk, goes on (its flush, or a reset, ends the stream)",
                      (long long)ring_end);
    return prx_fail(PRX_ERR_INVALID,
                    "CUDA bank: the rows hold %zu samples before the chunk; the bank needs %lld "
                    "(the stream's samples from %lld, which the caller's rows kept)",
                    kept, (long long)(n_prev - ring_end), (long long)ring_end);
  }
  /* the ring where this call appends to it, before anything is consumed */
  if (!keeps && n_in) TRY(ring_make(g));
  /* the last call's work that may still run: before this call's on the device (its stream may be
   * another), the earlier spans' copies before the host drains them (old_copies) */
  if (g->inflight) TRY(g->m->stream_wait(stream, g->ev_done));
  g->old_wait = g->inflight;
  g->ph_prev = g->php;
  mark(g, stream, QPSK_MARK_START);
  /* the rows on the device, from the first kept sample */
  const void *ext = NULL;
  size_t ext_pitch = 0;
  if (n_in || kept) {
    if (in_dev) {
      ext = (const uint8_t *)in - kept * g->sz;
      ext_pitch = (C == 1 ? kept + n_in : in_stride) * g->sz;
    } else {
      TRY(dgrow(g, &g->d_in, &g->d_in_cap, C * n_in * g->sz));
      TRY(g->dev->copy2d(g->d_in, n_in * g->sz, in, (C == 1 ? n_in : in_stride) * g->sz,
                         n_in * g->sz, C, stream));
      ext = g->d_in;
      ext_pitch = n_in * g->sz;
    }
  }
  if (n_in)
    TRY(alias_measure(g, at_sample(ext, n_prev - (int64_t)kept, g->sz), ext_pitch, n_prev, n_in,
                      stream));
  /* where the outputs go */
  g->hf = host_finish(b, out);
  const size_t cap = !g->hf  ? 0 /* (host rows' room) */
                     : flush ? prx_qpsk_bank_gpu_end_symbols(b, n_in)
                             : prx_qpsk_bank_max_symbols(b, n_in, 0);
  uint8_t *bits = NULL;
  size_t bits_stride = 0;
  if (g->hf) {
    g->h_bits_row = g->h_llr_row = 2 * cap + 16;
    TRY(hgrow(g, (void **)&g->h_sym, &g->h_sym_cap, g->nbt * g->Lmax * sizeof(prx_cf32)));
    if (out->bits) TRY(hgrow(g, (void **)&g->h_bits, &g->h_bits_cap, C * g->h_bits_row));
    if (out->llrs)
      TRY(hgrow(g, (void **)&g->h_llrs, &g->h_llr_cap, C * g->h_llr_row * sizeof(float)));
    if (out->bits && b->cfg.packed && out_dev)
      TRY(hgrow(g, (void **)&g->h_pack, &g->h_pack_cap, C * out->bits_stride));
  } else if (out->bits) {
    bits = out->bits;
    bits_stride = out->bits_stride;
    if (!out_dev) {
      TRY(dgrow(g, (void **)&g->d_bits, &g->d_bits_cap, C * out->bits_stride));
      bits = g->d_bits;
    }
  }
  /* the phase pass on the GPU where the GPU decides the bits (its state moved there) */
  g->gph = g->gser && g->gph_ok && g->gph_on && !g->hf;
  /* a flush the caller ends (its reports and the streams' reset after the call) */
  const int hold = flush && g->gph && g->hold;
  g->hold = 0;
  /* earlier calls' pending spans: now where this call needs the channels' stream counts (before
   * their estimates are cleared below), else once this call's first span is issued (a flush's
   * too: those spans lie before the stream's end, where flushing changes nothing) */
  if (!g->gph) prx_qpsk_bank_gpu_settle(g);
  g->np_old = g->np;
  TRY(phase_side(g, g->gph));
  g->first = 1;
  g->next = b->ch[0]->next_span + (int64_t)g->np; /* (the pending spans ran) */
  /* every channel's stream position (as prx_qpsk_execute / flush set them): channel 0's now, the
   * others' here too, or with the phase pass on the GPU in the pool's first pass over the channels
   * (drain_n, after the first span is issued; the run's end where none ran) */
  const int64_t ext_base = n_prev - (int64_t)kept; /* ext's first sample */
  g->c_n_in = n_in;
  g->c_flush = flush;
  g->c_out = out;
  call_begin(g, 0);
  g->begun = 0;
  if (!g->gph) call_begin_rest(g);
  const prx_qpsk *q0 = b->ch[0];
  g->n_total = q0->n_total;
  g->g_hi = flush ? qpsk_count_below((double)g->n_total, q0->sps / 4) : INT64_MAX;
  if (!flush) {
    /* the spans whose input is complete; those reaching back before the chunk read the ring,
     * with the chunk's head appended */
    int64_t upto = g->ring_base + (int64_t)g->ring_len;
    for (int64_t s = g->next;; s++) {
      int64_t lo, end;
      qpsk_span_need(q0, s, &lo, &end);
      if (end > g->n_total || span_from(q0, s, ext_base)) break;
      if (end > upto) upto = end;
    }
    if (ext) TRY(ring_put(g, upto, ext, ext_base, ext_pitch, stream));
    for (;;) {
      const int64_t s = g->next;
      int64_t lo, end;
      qpsk_span_need(q0, s, &lo, &end);
      if (end > g->n_total) break;
      const void *rows, *next = NULL;
      size_t stride, next_stride = 0;
      span_rows(g, q0, s, ext, ext_base, ext_pitch, &rows, &stride);
      qpsk_span_need(q0, s + 1, &lo, &end);
      if (end <= g->n_total) span_rows(g, q0, s + 1, ext, ext_base, ext_pitch, &next, &next_stride);
      TRY(run_span(b, rows, stride, next, next_stride, g->B, bits, bits_stride, stream));
      g->next++;
    }
    int64_t keep, end;
    qpsk_span_need(q0, g->next, &keep, &end);
    TRY(ring_keep(g, keep, ext, ext_base, ext_pitch, keeps, stream));
    mark(g, stream, QPSK_MARK_RING);
    TRY(call_end(g, flush, stream)); /* (after the ring's copies: one wait for both) */
  } else {
    const int64_t nb_end = qpsk_count_below((double)g->n_total / q0->sps, (double)q0->L);
    while (g->next * (int64_t)g->B < nb_end) {
      const int64_t s = g->next, b1 = (s + 1) * (int64_t)g->B;
      const void *rows, *next = NULL;
      size_t stride, next_stride = 0, nb_next = 0;
      span_rows(g, q0, s, ext, ext_base, ext_pitch, &rows, &stride);
      if (b1 < nb_end) {
        span_rows(g, q0, s + 1, ext, ext_base, ext_pitch, &next, &next_stride);
        nb_next = (size_t)(nb_end - b1 < (int64_t)g->B ? nb_end - b1 : (int64_t)g->B);
      }
      TRY(run_span(b, rows, stride, next, next_stride, nb_next, bits, bits_stride, stream));
      g->next++;
    }
    TRY(call_end(g, flush && !hold, stream));
  }
  TRY(finish(b, flush, out, out_dev, stream));
  if (!out_dev) TRY(drv_wait(g, stream)); /* host outputs: complete on return */
  if (g->gph && g->pstream) { /* (the call returned at its counts: its work may still run) */
    TRY(g->m->event_record(g->ev_done, stream));
    g->inflight = 1;
    if (!g->synced) g->synced = 2;
  }
  if (hold) {
    call_begin_rest(g); /* (where no span ran to begin them) */
    g->end_due = 1;
  } else if (flush) {
    end_stream(g);
  }
  g->tm.calls++;
  g->tm.total_s += prx_now() - t0;
  mark(g, stream, QPSK_MARK_END);
  return PRX_OK;
}

size_t prx_qpsk_bank_gpu_history(const prx_qpsk_bank_gpu *g) { return g ? g->hist_need : 0; }

size_t prx_qpsk_bank_gpu_end_symbols(const prx_qpsk_bank *b, size_t n_in) {
  if (!b || !b->drv) return 0;
  /* prx_qpsk_flush_max_symbols at n_total + n_in, less the pending spans' (they ran) */
  const prx_qpsk *q = b->ch[0];
  const double n_sym = (double)(q->n_total + (int64_t)n_in) / q->sps;
  const int64_t left = qpsk_count_below(n_sym, (double)q->L) - q->next_span * (int64_t)q->B;
  const size_t m = left > 0 ? (size_t)left * q->Lmax : 0;
  const size_t p = prx_qpsk_bank_gpu_pending_symbols(b->drv);
  return m > p ? m - p : 0;
}

int prx_qpsk_bank_gpu_runs_span(const prx_qpsk_bank *b, size_t n_in) {
  if (!b || !b->drv) return 1;
  /* run_call's first span: the channels' next, after the pending spans */
  const prx_qpsk *q = b->ch[0];
  int64_t lo, end;
  qpsk_span_need(q, q->next_span + (int64_t)b->drv->np, &lo, &end);
  return end <= q->n_total + (int64_t)n_in;
}

prx_status prx_qpsk_bank_gpu_prepare(prx_qpsk_bank_gpu *g, const prx_qpsk_bank_out *out) {
  if (!g || !out || g->np) return PRX_OK; /* (pending spans: the call settles them first) */
  return phase_side(g, g->gser && g->gph_ok && g->gph_on && !host_finish(g->bank, out));
}

prx_status prx_qpsk_bank_gpu_run(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                 size_t kept, int in_dev, int flush, const prx_qpsk_bank_out *out,
                                 int out_dev, void *stream) {
  prx_qpsk_bank_gpu *g = b->drv;
  g->begun = 1;
  prx_status st = run_call(b, in, in_stride, n_in, kept, in_dev, flush, out, out_dev, stream);
  call_begin_rest(g); /* a failed call's channels still get the call's start */
  return st;
}

#else /* no CUDA in this build: the bank never creates the driver */

prx_status prx_qpsk_bank_gpu_create(prx_qpsk_bank *b, const struct prx_cuda_module *m,
                                    const double *mix) {
  (void)b;
  (void)m;
  (void)mix;
  return prx_fail(PRX_ERR_UNSUPPORTED, "this build has no CUDA");
}
void prx_qpsk_bank_gpu_destroy(prx_qpsk_bank_gpu *g) { (void)g; }
void prx_qpsk_bank_gpu_reset(prx_qpsk_bank_gpu *g) { (void)g; }
int prx_qpsk_bank_gpu_set_fold(prx_qpsk_bank_gpu *g, int path) {
  (void)g, (void)path;
  return 0;
}
int prx_qpsk_bank_gpu_set_serial(prx_qpsk_bank_gpu *g, int on) {
  (void)g, (void)on;
  return 0;
}
int prx_qpsk_bank_gpu_set_phase(prx_qpsk_bank_gpu *g, int on) {
  (void)g, (void)on;
  return 0;
}
void prx_qpsk_bank_gpu_settle(prx_qpsk_bank_gpu *g) { (void)g; }
void prx_qpsk_bank_gpu_hold_end(prx_qpsk_bank_gpu *g) { (void)g; }
void prx_qpsk_bank_gpu_end(prx_qpsk_bank_gpu *g) { (void)g; }
size_t prx_qpsk_bank_gpu_end_symbols(const prx_qpsk_bank *b, size_t n_in) {
  (void)b, (void)n_in;
  return 0;
}
int prx_qpsk_bank_gpu_runs_span(const prx_qpsk_bank *b, size_t n_in) {
  (void)b, (void)n_in;
  return 1;
}
size_t prx_qpsk_bank_gpu_history(const prx_qpsk_bank_gpu *g) {
  (void)g;
  return 0;
}
prx_status prx_qpsk_bank_gpu_prepare(prx_qpsk_bank_gpu *g, const prx_qpsk_bank_out *out) {
  (void)g, (void)out;
  return PRX_OK;
}
size_t prx_qpsk_bank_gpu_pending_symbols(const prx_qpsk_bank_gpu *g) {
  (void)g;
  return 0;
}
void prx_qpsk_bank_gpu_get_timing(const prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_timing *t) {
  (void)g;
  memset(t, 0, sizeof *t);
}
void prx_qpsk_bank_gpu_set_mark(prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_mark_fn fn, void *ctx) {
  (void)g, (void)fn, (void)ctx;
}
prx_status prx_qpsk_bank_gpu_run(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                 size_t kept, int in_dev, int flush, const prx_qpsk_bank_out *out,
                                 int out_dev, void *stream) {
  (void)b, (void)in, (void)in_stride, (void)n_in, (void)kept, (void)in_dev, (void)flush, (void)out;
  (void)out_dev, (void)stream;
  return prx_fail(PRX_ERR_UNSUPPORTED, "this build has no CUDA");
}

#endif
