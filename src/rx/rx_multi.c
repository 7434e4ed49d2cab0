/* prx_rx_multi: the receiver across several workers (polyrx/rx_multi.h). The caller's samples
 * gather in one host buffer; when W segments (each with its run-out) are in it, the workers
 * receive them at once, each on its own thread with its own prx_rx, and the calling thread
 * stitches their outputs in stream order (rx_multi_stitch.c) and hands them to on_output.
 *
 * Buffer: absolute input samples [buf_start, buf_start + have), one for all the workers,
 * page-locked when they are GPU workers (not one per NUMA node: a worker reads its segments
 * from wherever the caller's thread first touched it). A round runs segments
 * g0 .. g0 + count - 1; afterwards everything before the next segment's lead-in is dropped.
 * Every length is a multiple of D = K/2, so each worker's channel samples lie on the single
 * run's grid (channel sample j at input instant j D). */
#define _POSIX_C_SOURCE 200809L
#include "polyrx/rx_multi.h"

#include "rx_multi_internal.h"

#include "../core/internal.h"
#include "../dsp/pack.h"
#include "../pipeline/pipeline.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RXM_DEFAULT_SEGMENT ((size_t)1 << 24)
#define RXM_SEAM_SYMBOLS 64   /* the window matched at a seam */
#define RXM_MAX_CLOCK 0.0055  /* the clock offsets searched at a seam (qpsk: +-5000 ppm) */
#define RXM_MIN_SEAM_RANGE 16 /* symbols searched either side at least */
#define RXM_RETRIES 2         /* grid steps a worker's start moves back for an unmatched seam */

typedef struct prx_rx_multi prx_rx_multi;

typedef struct {
  prx_rx_multi *m;
  size_t index;
  int device; /* -1: CPU */
  pthread_t thread;
  prx_rx *rx;
  rxm_run *runs; /* per carrier: this job's output */
  /* the job (under m->lock) */
  const uint8_t *in;
  size_t n;
  int has_job, quit;
  prx_status st;
  char err[256];
} rxm_worker;

typedef struct {
  rxm_run pending; /* the latest stitched run, not yet emitted from keep_from on */
  size_t keep_from;
  uint64_t seg_start, seg_end; /* input span of the pending run's worker stream */
  unsigned turn;               /* quarter-turns applied to the pending run */
  uint64_t emitted;
  uint64_t seams, unmatched;
  prx_bit_packer packer; /* packed output: bits waiting for their byte */
} rxm_carrier;

struct prx_rx_multi {
  prx_rx_multi_config cfg;
  prx_rx_carrier *car;
  size_t n_car, W;
  size_t bps, D, seg, lead, tail;
  size_t lead_min, grid;  /* worker streams start on multiples of grid, lead_min before */
  int aligned;            /* grid is the single run's CFO-span grid (else a multiple of K only) */
  unsigned retries;       /* grid steps a worker's start may move back for a seam without match */
  uint64_t retried;       /* segments received again since create */
  double *sym_per_sample; /* per carrier: output symbols per input sample (nominal) */
  rxm_worker *w;
  rxm_carrier *c;
  uint8_t *buf;
  size_t cap, have;
  uint64_t buf_start, next_seg, total;
  int have_pending;
  size_t last_worker;
  int any_stats;
  uint8_t *out_bytes; /* packed output's scratch */
  size_t out_cap;
  pthread_mutex_t lock;
  pthread_cond_t go, done;
  size_t busy;
};

prx_rx_multi_config prx_rx_multi_config_default(void) {
  prx_rx_multi_config c;
  memset(&c, 0, sizeof c);
  c.rx = prx_rx_config_default();
  c.cpu_workers = 2;
  return c;
}

/* ---- workers ---- */

/* Keeps the worker's first error and its text, for worker_error on the calling thread. */
static void worker_fail(rxm_worker *w, prx_status st) {
  if (w->st) return;
  w->st = st;
  snprintf(w->err, sizeof w->err, "%s", prx_last_error());
}

static void collect(void *user, size_t c, const uint8_t *bits, size_t n_bytes, const float *llrs,
                    size_t n_symbols) {
  rxm_worker *w = user;
  (void)n_bytes;
  if (w->st) return;
  prx_status st = rxm_run_append(&w->runs[c], bits, llrs, n_symbols);
  if (st) worker_fail(w, st);
}

static void run_job(rxm_worker *w) {
  for (size_t c = 0; c < w->m->n_car; c++) w->runs[c].n_sym = 0;
  prx_rx_reset(w->rx);
  prx_status st = prx_rx_execute(w->rx, w->in, w->n);
  if (!st) st = prx_rx_flush(w->rx);
  if (st) worker_fail(w, st);
}

static void *worker_main(void *arg) {
  rxm_worker *w = arg;
  prx_rx_multi *m = w->m;
  rxm_pin_to_node(rxm_gpu_numa_node(w->device)); /* best effort: no node, no pinning */
  prx_rx_config rc = m->cfg.rx;
  rc.on_output = collect;
  rc.user = w;
  rc.packed = 0;
  rc.on_channel = NULL;
  rc.carriers = m->car;
  int cores = m->cfg.rx.threads > 0 ? m->cfg.rx.threads : prx_cpu_count();
  rc.threads = cores / (int)m->W > 1 ? cores / (int)m->W : 1;
  if (w->device >= 0) {
    rc.device = w->device;
    rc.backend = PRX_BACKEND_CUDA;
  } else {
    rc.backend = PRX_BACKEND_CPU;
  }
  prx_status st = prx_rx_create(&rc, &w->rx);
  pthread_mutex_lock(&m->lock);
  if (st) worker_fail(w, st);
  m->busy--;
  pthread_cond_broadcast(&m->done);
  for (;;) {
    while (!w->has_job && !w->quit) pthread_cond_wait(&m->go, &m->lock);
    if (w->quit) break;
    pthread_mutex_unlock(&m->lock);
    run_job(w);
    pthread_mutex_lock(&m->lock);
    w->has_job = 0;
    m->busy--;
    pthread_cond_broadcast(&m->done);
  }
  pthread_mutex_unlock(&m->lock);
  return NULL;
}

static void wait_idle(prx_rx_multi *m) {
  pthread_mutex_lock(&m->lock);
  while (m->busy) pthread_cond_wait(&m->done, &m->lock);
  pthread_mutex_unlock(&m->lock);
}

/* The first worker error, raised on the calling thread. */
static prx_status worker_error(prx_rx_multi *m) {
  for (size_t i = 0; i < m->W; i++)
    if (m->w[i].st) {
      prx_status st = m->w[i].st;
      m->w[i].st = PRX_OK;
      return prx_fail(st, "receiver worker %zu: %s", i, m->w[i].err);
    }
  return PRX_OK;
}

/* ---- layout ---- */

static size_t round_up(size_t x, size_t d) { return (x + d - 1) / d * d; }

/* The single run's grid for a worker's stream start (input samples), 0 where there is none: a
 * multiple of K, so that the worker's channel samples are the single run's (sample j at input
 * instant j D, the channels' phase referenced to input sample 0 as in the single run), and of
 * every carrier's CFO span in input samples, S sps D with sps = (2 fs / K) / Rs, so that the
 * worker's CFO spans, blocks and symbol numbering are the single run's shifted by whole spans.
 * A carrier whose span is no integer number of channel samples in up to RXM_GRID_SPANS spans
 * (within 1e-9: the symbol rate an irrational fraction of the channel rate) has no such grid. */
#define RXM_GRID_SPANS 64
#define RXM_GRID_MAX ((uint64_t)1 << 40)

static uint64_t span_grid(const prx_rx_multi *m, double S) {
  const prx_rx_config *rc = &m->cfg.rx;
  double chan_rate = 2 * (rc->sample_rate / rc->channels); /* the banks' sample rate */
  uint64_t g = 2;                                          /* channel samples: K | g D */
  for (size_t c = 0; c < m->n_car; c++) {
    double span = S * (chan_rate / m->car[c].symbol_rate), n = 0;
    unsigned q = 1;
    for (; q <= RXM_GRID_SPANS; q++) {
      n = nearbyint(q * span);
      if (fabs(q * span - n) <= 1e-9 * q * span) break;
    }
    if (q > RXM_GRID_SPANS || n < 1 || n > (double)RXM_GRID_MAX) return 0;
    uint64_t v = (uint64_t)n;
    g = g / prx_gcd_u64(g, v) * v;
    if (g > RXM_GRID_MAX) return 0;
  }
  return g * m->D;
}

/* Lead-in: the prototype's span plus, for the slowest carrier, five CFO spans and the seam's
 * window: the worker's first span holds the channelizer's start (zeros before the stream) and
 * enters the DC window of the next three (QPSK_DC_SPANS), so the spans from its fifth on
 * (which hold the matched window and the seam) see exactly the single run's samples and level;
 * the timing, phase, noise window (8 blocks) and differential chain settle within them. With a
 * grid the worker's stream starts at the grid point at or before a - lead, so the lead-in in
 * use is up to one grid step longer. Run-out: the prototype and a CFO span and two blocks, so
 * the span that holds the seam is whole. */
static void derive_layout(prx_rx_multi *m) {
  const prx_rx_config *rc = &m->cfg.rx;
  prx_qpsk_config qd = prx_qpsk_config_default(); /* the banks' block and span where rc has 0 */
  double L = rc->block_symbols ? rc->block_symbols : qd.block_symbols;
  double S = rc->cfo_span_symbols ? rc->cfo_span_symbols : qd.cfo_span_symbols;
  S = ceil(S / L) * L;
  double filt = (double)rc->channels * rc->taps_per_channel, lead = 0, tail = 0;
  for (size_t c = 0; c < m->n_car; c++) {
    double sps = rc->sample_rate / m->car[c].symbol_rate;
    if (sps * (5 * S + 2 * L + RXM_SEAM_SYMBOLS) > lead)
      lead = sps * (5 * S + 2 * L + RXM_SEAM_SYMBOLS);
    if (sps * (S + 2 * L) > tail) tail = sps * (S + 2 * L);
  }
  uint64_t grid = span_grid(m, S);
  m->aligned = grid != 0;
  m->grid = grid ? (size_t)grid : 2 * m->D;
  m->lead_min = m->cfg.lead_samples ? m->cfg.lead_samples : (size_t)ceil(filt + lead);
  m->lead_min = round_up(m->lead_min, m->D);
  m->lead = m->lead_min + m->grid - m->D;
  m->tail = m->cfg.tail_samples ? m->cfg.tail_samples : (size_t)ceil(filt + tail);
  m->tail = round_up(m->tail, m->D);
  size_t seg = m->cfg.segment_samples;
  if (!seg) {
    seg = RXM_DEFAULT_SEGMENT;
    if (seg < 4 * (m->lead + m->tail)) seg = 4 * (m->lead + m->tail);
  }
  m->seg = round_up(seg, m->D);
  /* the buffer keeps RXM_RETRIES grid steps more where that at most doubles it */
  m->retries = m->aligned && RXM_RETRIES * m->grid <= m->lead + m->W * m->seg ? RXM_RETRIES : 0;
}

/* The start of the worker's stream for the segment that starts at a: on the grid, at least
 * lead_min before a (0 for the first segments). */
static uint64_t stream_start(const prx_rx_multi *m, uint64_t a) {
  return a > m->lead_min ? (a - m->lead_min) / m->grid * m->grid : 0;
}

/* ---- create / destroy ---- */

static void stop_workers(prx_rx_multi *m, size_t started) {
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < started; i++) m->w[i].quit = 1;
  pthread_cond_broadcast(&m->go);
  pthread_mutex_unlock(&m->lock);
  for (size_t i = 0; i < started; i++) pthread_join(m->w[i].thread, NULL);
}

void prx_rx_multi_destroy(prx_rx_multi *m) {
  if (!m) return;
  if (m->w) {
    stop_workers(m, m->W);
    for (size_t i = 0; i < m->W; i++) {
      prx_rx_destroy(m->w[i].rx);
      if (m->w[i].runs)
        for (size_t c = 0; c < m->n_car; c++) rxm_run_free(&m->w[i].runs[c]);
      free(m->w[i].runs);
    }
  }
  if (m->c)
    for (size_t c = 0; c < m->n_car; c++) rxm_run_free(&m->c[c].pending);
  pthread_mutex_destroy(&m->lock);
  pthread_cond_destroy(&m->go);
  pthread_cond_destroy(&m->done);
  free(m->w);
  free(m->c);
  free(m->car);
  free(m->sym_per_sample);
  prx_pipe_host_free(m->buf);
  free(m->out_bytes);
  free(m);
}

static prx_status check_config(const prx_rx_multi_config *cfg) {
  if (!cfg->rx.on_output) return prx_fail(PRX_ERR_INVALID, "receiver: on_output is required");
  if (cfg->rx.on_channel)
    return prx_fail(PRX_ERR_UNSUPPORTED, "receiver across workers: on_channel is not supported");
  if (cfg->devices) {
    if (cfg->n_devices < 1 || cfg->n_devices > PRX_RX_MULTI_MAX_WORKERS)
      return prx_fail(PRX_ERR_INVALID, "receiver: 1..%d devices, got %zu", PRX_RX_MULTI_MAX_WORKERS,
                      cfg->n_devices);
    if (cfg->rx.backend == PRX_BACKEND_CPU)
      return prx_fail(PRX_ERR_INVALID, "receiver: devices listed with the CPU backend");
    for (size_t i = 0; i < cfg->n_devices; i++)
      if (cfg->devices[i] < 0)
        return prx_fail(PRX_ERR_INVALID, "receiver: device ordinal %d", cfg->devices[i]);
    if (!prx_cuda_available())
      return prx_fail(PRX_ERR_NODEVICE, "CUDA devices listed, none usable");
  } else if (cfg->cpu_workers < 1 || cfg->cpu_workers > PRX_RX_MULTI_MAX_WORKERS) {
    return prx_fail(PRX_ERR_INVALID, "receiver: 1..%d CPU workers, got %u",
                    PRX_RX_MULTI_MAX_WORKERS, cfg->cpu_workers);
  } else if (cfg->rx.backend == PRX_BACKEND_CUDA) {
    return prx_fail(PRX_ERR_INVALID, "receiver: CPU workers with the CUDA backend (list devices)");
  }
  return PRX_OK;
}

prx_status prx_rx_multi_create(const prx_rx_multi_config *cfg, prx_rx_multi **out) {
  if (!cfg || !out) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  *out = NULL;
  prx_status st = check_config(cfg);
  if (st) return st;
  if (!cfg->rx.carriers || cfg->rx.n_carriers < 1)
    return prx_fail(PRX_ERR_INVALID, "receiver: at least one carrier is required");
  /* the single receiver's own checks (carriers, K, format) before any thread starts */
  for (size_t c = 0; c < cfg->rx.n_carriers; c++)
    if ((st = prx_rx_check_carrier(&cfg->rx, &cfg->rx.carriers[c]))) return st;
  size_t bps = prx_format_size(cfg->rx.in_format);
  if (!bps || cfg->rx.in_format == PRX_CF16)
    return prx_fail(PRX_ERR_INVALID, "receiver: input format %d not supported", cfg->rx.in_format);
  prx_rx_multi *m = calloc(1, sizeof *m);
  if (!m) return prx_fail(PRX_ERR_NOMEM, "receiver workers");
  pthread_mutex_init(&m->lock, NULL);
  pthread_cond_init(&m->go, NULL);
  pthread_cond_init(&m->done, NULL);
  m->cfg = *cfg;
  m->n_car = cfg->rx.n_carriers;
  m->W = cfg->devices ? cfg->n_devices : cfg->cpu_workers;
  m->bps = bps;
  m->D = cfg->rx.channels / 2;
  m->car = malloc(m->n_car * sizeof *m->car);
  m->sym_per_sample = malloc(m->n_car * sizeof *m->sym_per_sample);
  m->c = calloc(m->n_car, sizeof *m->c);
  m->w = calloc(m->W, sizeof *m->w);
  if (!m->car || !m->sym_per_sample || !m->c || !m->w) {
    prx_rx_multi_destroy(m);
    return prx_fail(PRX_ERR_NOMEM, "receiver workers");
  }
  memcpy(m->car, cfg->rx.carriers, m->n_car * sizeof *m->car);
  m->cfg.rx.carriers = m->car;
  m->cfg.devices = NULL; /* the caller's list is read here only */
  for (size_t c = 0; c < m->n_car; c++) {
    const prx_rx_carrier *k = &m->car[c];
    double data = 1;
    if (k->ambiguity == PRX_QPSK_PILOTS && k->pilot_period)
      data = 1 - (double)k->pilot_len / k->pilot_period;
    m->sym_per_sample[c] = k->symbol_rate / cfg->rx.sample_rate * data;
    m->c[c].pending.with_llrs = cfg->rx.llrs;
  }
  derive_layout(m);
  m->cap = m->lead + m->retries * m->grid + m->W * m->seg + m->tail;
  /* page-locked with GPU workers: their receivers copy from it to the devices by DMA */
  m->buf = prx_pipe_host_alloc(m->cap * bps, cfg->devices != NULL);
  if (!m->buf) {
    prx_rx_multi_destroy(m);
    return prx_fail(PRX_ERR_NOMEM, "receiver workers: input buffer of %zu samples", m->cap);
  }
  size_t started = 0;
  m->busy = m->W;
  for (size_t i = 0; i < m->W; i++) {
    rxm_worker *w = &m->w[i];
    w->m = m;
    w->index = i;
    w->device = cfg->devices ? cfg->devices[i] : -1;
    w->runs = calloc(m->n_car, sizeof *w->runs);
    if (!w->runs) break;
    for (size_t c = 0; c < m->n_car; c++) w->runs[c].with_llrs = cfg->rx.llrs;
    if (pthread_create(&w->thread, NULL, worker_main, w)) break;
    started++;
  }
  if (started < m->W) {
    pthread_mutex_lock(&m->lock);
    m->busy -= m->W - started;
    pthread_mutex_unlock(&m->lock);
    wait_idle(m);
    m->W = started; /* destroy joins the threads that run */
    prx_rx_multi_destroy(m);
    return prx_fail(PRX_ERR_NOMEM, "receiver workers: thread %zu", started);
  }
  wait_idle(m); /* every worker has created its receiver (or failed) */
  st = worker_error(m);
  if (st) {
    prx_rx_multi_destroy(m);
    return st;
  }
  *out = m;
  return PRX_OK;
}

/* ---- stitching and output ---- */

static prx_status emit(prx_rx_multi *m, size_t c, const rxm_run *r, size_t from, size_t to,
                       int final) {
  rxm_carrier *k = &m->c[c];
  if (to <= from && !(final && m->cfg.rx.packed && k->packer.n)) return PRX_OK;
  size_t n = to > from ? to - from : 0;
  const float *llrs = m->cfg.rx.llrs && n ? r->llrs + 2 * from : NULL;
  k->emitted += n;
  if (!m->cfg.rx.packed) {
    m->cfg.rx.on_output(m->cfg.rx.user, c, r->bits + 2 * from, 2 * n, llrs, n);
    return PRX_OK;
  }
  size_t need = (2 * n + 8) / 8 + 1;
  if (need > m->out_cap) {
    uint8_t *p = realloc(m->out_bytes, need);
    if (!p) return prx_fail(PRX_ERR_NOMEM, "receiver workers: packed output");
    m->out_bytes = p;
    m->out_cap = need;
  }
  size_t nb = prx_pack_bits(&k->packer, r->bits + 2 * from, 2 * n, final, m->out_bytes);
  if (nb || n) m->cfg.rx.on_output(m->cfg.rx.user, c, m->out_bytes, nb, llrs, n);
  return PRX_OK;
}

/* The seam of carrier c between the pending run and the run of the worker whose stream is
 * [s, e) (its segment starts at a): *m_cut, the new run's first symbol kept, and *j and *turn
 * (rxm_find_seam); returns whether the windows matched. */
static int find_cut(const prx_rx_multi *m, size_t c, const rxm_run *run, uint64_t s, uint64_t a,
                    uint64_t e, size_t *m_cut, size_t *j, unsigned *turn) {
  const rxm_carrier *k = &m->c[c];
  const rxm_run *p = &k->pending;
  /* the seam in each run by its own symbol rate over its stream (the clock included) */
  double rate_new = e > s && run->n_sym ? (double)run->n_sym / (double)(e - s) : 0;
  double rate_old = k->seg_end > k->seg_start && p->n_sym
                        ? (double)p->n_sym / (double)(k->seg_end - k->seg_start)
                        : 0;
  size_t mc = (size_t)llround((double)(a - s) * rate_new);
  size_t j_nom = (size_t)llround((double)(a - k->seg_start) * rate_old);
  size_t w = RXM_SEAM_SYMBOLS < mc ? RXM_SEAM_SYMBOLS : mc;
  double span = (double)(a - k->seg_start + (a - s)) * m->sym_per_sample[c];
  size_t range = (size_t)ceil(RXM_MAX_CLOCK * span) + RXM_MIN_SEAM_RANGE;
  int turns = m->car[c].ambiguity == PRX_QPSK_NONE;
  if (mc > run->n_sym) mc = run->n_sym;
  *m_cut = mc;
  if (rxm_find_seam(p, run, mc, w, j_nom, range, turns, j, turn)) return 1;
  /* no match (no signal, or too few symbols): the nominal seam */
  *j = j_nom < p->n_sym ? j_nom : p->n_sym;
  *turn = 0;
  return 0;
}

/* Joins carrier c's run of the worker whose stream is [s, e) (its segment starts at a) to the
 * pending run: the pending symbols up to the seam go out, the new run becomes pending. */
static prx_status stitch(prx_rx_multi *m, size_t c, rxm_run *run, uint64_t s, uint64_t a,
                         uint64_t e) {
  rxm_carrier *k = &m->c[c];
  prx_status st = PRX_OK;
  size_t keep = 0;
  if (m->have_pending) {
    size_t m_cut = 0, j = 0;
    unsigned turn = 0;
    k->seams++;
    if (!find_cut(m, c, run, s, a, e, &m_cut, &j, &turn)) k->unmatched++;
    if (j < k->keep_from) j = k->keep_from;
    if ((st = emit(m, c, &k->pending, k->keep_from, j, 0))) return st;
    keep = m_cut;
    k->turn = turn; /* next's bits turned by it are the pending ones, which are the first run's */
  }
  /* the new run becomes pending: swap buffers with the worker's */
  rxm_run t = k->pending;
  k->pending = *run;
  *run = t;
  if (k->turn) rxm_rotate(&k->pending, 0, k->turn);
  k->keep_from = keep;
  k->seg_start = s;
  k->seg_end = e;
  return st;
}

/* Workers 0 .. count - 1 receive input samples [s[i], e[i]); returns when all are done. */
static prx_status run_jobs(prx_rx_multi *m, size_t first, size_t count, const uint64_t *s,
                           const uint64_t *e) {
  pthread_mutex_lock(&m->lock);
  for (size_t i = first; i < first + count; i++) {
    rxm_worker *w = &m->w[i];
    w->in = m->buf + (size_t)(s[i] - m->buf_start) * m->bps;
    w->n = (size_t)(e[i] - s[i]);
    w->has_job = 1;
  }
  m->busy = count;
  pthread_cond_broadcast(&m->go);
  while (m->busy) pthread_cond_wait(&m->done, &m->lock);
  pthread_mutex_unlock(&m->lock);
  return worker_error(m);
}

/* Whether worker i's run should be received again from earlier: a carrier with a signal in
 * it (its demodulator's stream flagged neither PRX_QPSK_WARN_NO_SIGNAL nor, its bits unreliable,
 * PRX_QPSK_WARN_WEAK_SIGNAL) does not match the pending run at the seam. A carrier without a
 * signal never matches, and an earlier start cannot help it. */
static int retry_helps(const prx_rx_multi *m, size_t i, uint64_t s, uint64_t a, uint64_t e) {
  for (size_t c = 0; c < m->n_car && m->have_pending; c++) {
    size_t m_cut, j;
    unsigned turn;
    if (find_cut(m, c, &m->w[i].runs[c], s, a, e, &m_cut, &j, &turn)) continue;
    prx_rx_stats rs;
    if (prx_rx_get_stats(m->w[i].rx, c, &rs) == PRX_OK &&
        !(rs.demod.warnings & (PRX_QPSK_WARN_NO_SIGNAL | PRX_QPSK_WARN_WEAK_SIGNAL)))
      return 1;
  }
  return 0;
}

/* Runs segments next_seg .. next_seg + count - 1 (the stream ends at `end`), one per worker,
 * and stitches them in order. A segment whose worker does not match at its seam (its stream
 * started where a carrier had no signal: a gap, whose first span set a wrong pilot frame or
 * none) is received again from up to RXM_RETRIES grid steps earlier, then stitched as it is. */
static prx_status run_round(prx_rx_multi *m, size_t count, uint64_t end) {
  uint64_t s[PRX_RX_MULTI_MAX_WORKERS] = {0}, a[PRX_RX_MULTI_MAX_WORKERS] = {0},
           e[PRX_RX_MULTI_MAX_WORKERS] = {0};
  for (size_t i = 0; i < count; i++) {
    uint64_t g = m->next_seg + i;
    a[i] = g * m->seg;
    s[i] = stream_start(m, a[i]);
    e[i] = a[i] + m->seg + m->tail < end ? a[i] + m->seg + m->tail : end;
  }
  prx_status st = run_jobs(m, 0, count, s, e);
  for (size_t i = 0; i < count && !st; i++) {
    for (unsigned r = 0; r < m->retries && retry_helps(m, i, s[i], a[i], e[i]); r++) {
      if (s[i] < m->buf_start + m->grid) break; /* the stream's start, or not kept */
      s[i] -= m->grid;
      m->retried++;
      if ((st = run_jobs(m, i, 1, s, e))) return st;
    }
    for (size_t c = 0; c < m->n_car && !st; c++)
      st = stitch(m, c, &m->w[i].runs[c], s[i], a[i], e[i]);
    m->have_pending = 1;
    m->last_worker = i;
    m->any_stats = 1;
  }
  m->next_seg += count;
  return st;
}

/* Drops the samples before the next segment's lead-in. */
static void compact(prx_rx_multi *m) {
  uint64_t keep = stream_start(m, m->next_seg * m->seg);
  keep = keep > m->retries * m->grid ? keep - m->retries * m->grid : 0;
  if (keep <= m->buf_start) return;
  size_t drop = (size_t)(keep - m->buf_start);
  if (drop > m->have) drop = m->have;
  memmove(m->buf, m->buf + drop * m->bps, (m->have - drop) * m->bps);
  m->have -= drop;
  m->buf_start += drop;
}

prx_status prx_rx_multi_execute(prx_rx_multi *m, const void *in, size_t n) {
  if (!m || (!in && n)) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  const uint8_t *p = in;
  while (n) {
    size_t take = m->cap - m->have < n ? m->cap - m->have : n;
    memcpy(m->buf + m->have * m->bps, p, take * m->bps);
    m->have += take;
    m->total += take;
    p += take * m->bps;
    n -= take;
    /* W segments with their run-out: a round */
    uint64_t need = (m->next_seg + m->W) * m->seg + m->tail;
    if (m->buf_start + m->have >= need) {
      prx_status st = run_round(m, m->W, need);
      if (st) return st;
      compact(m);
    }
  }
  return PRX_OK;
}

static void restart(prx_rx_multi *m) {
  m->have = 0;
  m->buf_start = m->next_seg = m->total = 0;
  m->have_pending = 0;
  for (size_t c = 0; c < m->n_car; c++) { /* the counts stay: they are since create */
    rxm_carrier *k = &m->c[c];
    k->pending.n_sym = 0;
    k->keep_from = 0;
    k->seg_start = k->seg_end = 0;
    k->turn = 0;
    k->packer.byte = k->packer.n = 0;
  }
}

prx_status prx_rx_multi_flush(prx_rx_multi *m) {
  if (!m) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  prx_status st = PRX_OK;
  uint64_t end = m->total;
  while (!st && m->next_seg * m->seg < end) {
    uint64_t left = (end - m->next_seg * m->seg + m->seg - 1) / m->seg;
    size_t count = left < m->W ? (size_t)left : m->W;
    st = run_round(m, count, end);
    if (!st) compact(m);
  }
  for (size_t c = 0; c < m->n_car && !st; c++) {
    rxm_carrier *k = &m->c[c];
    st = emit(m, c, &k->pending, k->keep_from, m->have_pending ? k->pending.n_sym : 0, 1);
  }
  if (!st) restart(m);
  return st;
}

size_t prx_rx_multi_n_workers(const prx_rx_multi *m) { return m ? m->W : 0; }

void prx_rx_multi_get_layout(const prx_rx_multi *m, size_t *segment, size_t *lead, size_t *tail) {
  if (segment) *segment = m ? m->seg : 0;
  if (lead) *lead = m ? m->lead : 0;
  if (tail) *tail = m ? m->tail : 0;
}

prx_status prx_rx_multi_get_stats(const prx_rx_multi *m, size_t c, prx_rx_stats *out) {
  if (!m || !out) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  return prx_rx_get_stats(m->w[m->last_worker].rx, c, out);
}

const prx_rx *prx_rx_multi_worker(const prx_rx_multi *m, size_t w) {
  return m && w < m->W ? m->w[w].rx : NULL;
}

const prx_rx *prx_rx_multi_latest(const prx_rx_multi *m) {
  return m ? m->w[m->last_worker].rx : NULL;
}

void prx_rx_multi_seams(const prx_rx_multi *m, size_t c, uint64_t *seams, uint64_t *unmatched) {
  int ok = m && c < m->n_car;
  if (seams) *seams = ok ? m->c[c].seams : 0;
  if (unmatched) *unmatched = ok ? m->c[c].unmatched : 0;
}

uint64_t prx_rx_multi_symbols(const prx_rx_multi *m, size_t c) {
  return m && c < m->n_car ? m->c[c].emitted : 0;
}

uint64_t prx_rx_multi_retries(const prx_rx_multi *m) { return m ? m->retried : 0; }
