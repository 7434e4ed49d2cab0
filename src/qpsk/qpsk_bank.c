/* prx_qpsk_bank: configuration checks, backend choice, capacity checks and the CPU path.
 *
 * The CPU path keeps one single-channel demodulator (prx_qpsk, one thread each) per channel and
 * spreads the channels over the bank's worker pool: each worker slot takes the next channel from
 * an atomic counter and demodulates its whole row in one prx_qpsk_execute, so a channel's output
 * is by construction that of an independent prx_qpsk given the same row, and the thread count
 * changes nothing. cf16 rows are converted to cf32 in the slot's scratch first; packed output is
 * demodulated unpacked into the slot's scratch and packed with the channel's leftover bits.
 * With mix_hz, every row is mixed into the slot's cf32 scratch (converted first unless cf32)
 * (src/dsp/mix.c) by the index of each sample in the channel's stream. */
#include "qpsk_bank_internal.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"
#include "../dsp/convert.h"
#include "../dsp/mix.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

prx_qpsk_bank_config prx_qpsk_bank_config_default(void) {
  prx_qpsk_bank_config c;
  memset(&c, 0, sizeof c);
  c.demod = prx_qpsk_config_default();
  c.channels = 1;
  c.row_format = PRX_CF32;
  c.packed = 0;
  c.threads = 0;
  c.backend = PRX_BACKEND_AUTO;
  c.device = 0;
  return c;
}

/* The backend (AUTO resolved) and, for CUDA, the module's bank entries. */
static prx_status pick_backend(const prx_qpsk_bank_config *cfg, prx_backend *backend,
                               const prx_cuda_module **module) {
  prx_status st = prx_cuda_module_pick(cfg->backend, module);
  if (st) return st;
  *backend = *module ? PRX_BACKEND_CUDA : PRX_BACKEND_CPU;
  return PRX_OK;
}

static prx_status check_config(const prx_qpsk_bank_config *cfg) {
  if (cfg->channels < 1 || cfg->channels > PRX_QPSK_BANK_MAX_CHANNELS)
    return prx_fail(PRX_ERR_INVALID, "bank channels must be 1..%u, got %u",
                    PRX_QPSK_BANK_MAX_CHANNELS, cfg->channels);
  if (prx_format_size(cfg->row_format) == 0)
    return prx_fail(PRX_ERR_INVALID, "bank row format %d is unknown", (int)cfg->row_format);
  if (cfg->packed != 0 && cfg->packed != 1)
    return prx_fail(PRX_ERR_INVALID, "bank packed must be 0 or 1, got %d", cfg->packed);
  if (cfg->threads < 0 || cfg->threads > 1024)
    return prx_fail(PRX_ERR_INVALID, "threads must be 0 (all cores) .. 1024, got %d", cfg->threads);
  if (cfg->mix_hz)
    for (unsigned c = 0; c < cfg->channels; c++)
      if (!isfinite(cfg->mix_hz[c]) || fabs(cfg->mix_hz[c]) > cfg->demod.sample_rate / 2)
        return prx_fail(PRX_ERR_INVALID,
                        "bank mix_hz[%u] = %g Hz is outside +-sample_rate/2 (+-%g Hz)", c,
                        cfg->mix_hz[c], cfg->demod.sample_rate / 2);
  return PRX_OK;
}

void prx_qpsk_bank_destroy(prx_qpsk_bank *b) {
  if (!b) return;
  prx_qpsk_bank_gpu_destroy(b->drv);
  if (b->gpu) b->gpu->destroy(b->cuda);
  if (b->ch)
    for (unsigned c = 0; c < b->C; c++) prx_qpsk_destroy(b->ch[c]);
  if (b->slots)
    for (unsigned s = 0; s < b->n_slots; s++) {
      prx_free(b->slots[s].conv);
      prx_free(b->slots[s].bits);
    }
  prx_pool_destroy(b->pool);
  free(b->ch);
  free(b->slots);
  free(b->packer);
  free(b->n_bytes);
  free(b->mix);
  free(b->mix_n);
  free(b);
}

typedef struct {
  const prx_qpsk_config *cfg;
  prx_qpsk **ch;
  _Atomic prx_status status;
} create_ctx;

static void create_channel(void *ctx, size_t i) {
  create_ctx *x = ctx;
  prx_status st = prx_qpsk_create(x->cfg, &x->ch[i + 1]);
  if (st) atomic_store(&x->status, st);
}

prx_status prx_qpsk_bank_create(const prx_qpsk_bank_config *cfg, prx_qpsk_bank **out) {
  if (!cfg || !out) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_create: NULL argument");
  *out = NULL;
  prx_status st = check_config(cfg);
  if (st) return st;
  prx_backend backend = PRX_BACKEND_CPU;
  const prx_cuda_module *module = NULL;
  if ((st = pick_backend(cfg, &backend, &module))) return st;
  if (backend == PRX_BACKEND_CUDA && cfg->row_format != PRX_CF32 && cfg->row_format != PRX_CF16)
    return prx_fail(PRX_ERR_UNSUPPORTED, "the CUDA bank takes cf32 or cf16 rows, not %s",
                    prx_format_name(cfg->row_format));
  /* the demodulator's own checks, once, before C copies are made */
  prx_qpsk_config dc = cfg->demod;
  dc.in_format = cfg->row_format == PRX_CF16 || cfg->mix_hz ? PRX_CF32 : cfg->row_format;
  dc.threads = 1;
  dc.on_block = NULL;
  dc.user = NULL;
  prx_qpsk *probe = NULL;
  if ((st = prx_qpsk_create(&dc, &probe))) return st;

  prx_qpsk_bank *b = calloc(1, sizeof *b);
  if (!b) {
    prx_qpsk_destroy(probe);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the demodulator bank");
  }
  b->cfg = *cfg;
  b->cfg.mix_hz = NULL; /* the caller's array is not kept: b->mix holds the copy */
  b->C = cfg->channels;
  b->backend = backend;
  b->ch = calloc(b->C, sizeof *b->ch);
  b->packer = calloc(b->C, sizeof *b->packer);
  b->n_bytes = calloc(b->C, sizeof *b->n_bytes);
  if (!b->ch || !b->packer || !b->n_bytes) {
    prx_qpsk_destroy(probe);
    prx_qpsk_bank_destroy(b);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the bank's %u channels", b->C);
  }
  b->ch[0] = probe;
  if (cfg->mix_hz) {
    b->mix = malloc(b->C * sizeof *b->mix);
    b->mix_n = calloc(b->C, sizeof *b->mix_n);
    if (!b->mix || !b->mix_n) {
      prx_qpsk_bank_destroy(b);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate the bank's %u mixers", b->C);
    }
    for (unsigned c = 0; c < b->C; c++) b->mix[c] = cfg->mix_hz[c] / cfg->demod.sample_rate;
  }
  if ((st = prx_pool_create(cfg->threads, &b->pool))) {
    prx_qpsk_bank_destroy(b);
    return st;
  }
  /* the other channels in parallel (the probe has planned the FFT: the rest reuse its wisdom) */
  create_ctx cx = {&dc, b->ch, PRX_OK};
  prx_pool_run(b->pool, create_channel, &cx, b->C - 1);
  if (cx.status) {
    prx_qpsk_bank_destroy(b);
    return prx_fail(cx.status, "cannot create the bank's %u channel demodulators", b->C);
  }
  b->n_slots = (unsigned)prx_pool_threads(b->pool);
  if (b->n_slots > b->C) b->n_slots = b->C;
  b->slots = calloc(b->n_slots, sizeof *b->slots);
  if (!b->slots) {
    prx_qpsk_bank_destroy(b);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the bank's worker slots");
  }
  if (module) {
    /* the stage kernels where they take the configuration, else the staged path */
    b->gpu = module->qpsk_bank;
    st = prx_qpsk_bank_gpu_create(b, module, b->mix);
    if (st == PRX_ERR_UNSUPPORTED) st = b->gpu->create(cfg->device, &b->cuda);
    if (st) {
      prx_qpsk_bank_destroy(b);
      return st;
    }
  }
  *out = b;
  return PRX_OK;
}

void prx_qpsk_bank_reset(prx_qpsk_bank *b) {
  if (!b) return;
  for (unsigned c = 0; c < b->C; c++) prx_qpsk_reset(b->ch[c]);
  memset(b->packer, 0, b->C * sizeof *b->packer);
  if (b->mix_n) memset(b->mix_n, 0, b->C * sizeof *b->mix_n);
  prx_qpsk_bank_gpu_reset(b->drv);
}

unsigned prx_qpsk_bank_channels(const prx_qpsk_bank *b) { return b ? b->C : 0; }
unsigned prx_qpsk_bank_cfo_span(const prx_qpsk_bank *b) {
  return b ? prx_qpsk_cfo_span(b->ch[0]) : 0;
}
prx_backend prx_qpsk_bank_backend(const prx_qpsk_bank *b) {
  return b ? b->backend : PRX_BACKEND_CPU;
}

size_t prx_qpsk_bank_max_symbols(const prx_qpsk_bank *b, size_t n_in, int flush) {
  if (!b) return 0;
  /* every channel has seen the same number of samples, but the bound is taken over all of them
   * so that it never depends on that; under the CUDA driver, which advances every channel with
   * one stream position, channel 0's (reading C channels' state on one thread costs ~0.2 ms at
   * 1024 channels, in front of the device) */
  const unsigned nc = b->drv ? 1 : b->C;
  size_t m = 0;
  for (unsigned c = 0; c < nc; c++) {
    size_t v = flush ? prx_qpsk_flush_max_symbols(b->ch[c]) : prx_qpsk_max_symbols(b->ch[c], n_in);
    if (v > m) m = v;
  }
  /* the CUDA driver's spans run but not yet written into the channels (full spans) */
  const size_t p = prx_qpsk_bank_gpu_pending_symbols(b->drv);
  return m > p ? m - p : 0;
}

size_t prx_qpsk_bank_bits_capacity(const prx_qpsk_bank *b, size_t n_in, int flush) {
  size_t s = prx_qpsk_bank_max_symbols(b, n_in, flush);
  if (!b) return 0;
  return b->cfg.packed ? (2 * s + 7) / 8 + 1 : 2 * s;
}

const prx_qpsk_block *prx_qpsk_bank_block_estimates(const prx_qpsk_bank *b, unsigned c, size_t *n) {
  if (n) *n = 0;
  if (!b || c >= b->C) return NULL;
  prx_qpsk_bank_gpu_settle(b->drv);
  return prx_qpsk_block_estimates(b->ch[c], n);
}

prx_status prx_qpsk_bank_get_stats(const prx_qpsk_bank *b, unsigned c, prx_qpsk_stats *out) {
  if (!b || !out) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_get_stats: NULL argument");
  if (c >= b->C)
    return prx_fail(PRX_ERR_INVALID, "channel %u is out of range (the bank has %u)", c, b->C);
  prx_qpsk_bank_gpu_settle(b->drv);
  prx_qpsk_get_stats(b->ch[c], out);
  return PRX_OK;
}

/* ---- the CPU path ---- */

typedef struct {
  prx_qpsk_bank *b;
  const void *in;
  size_t in_stride, n_in, capacity;
  int flush;
  const prx_qpsk_bank_out *out;
  atomic_uint next;      /* next channel to take */
  atomic_int status;     /* first failure, PRX_OK if none */
  atomic_uint failed_ch; /* its channel */
  char message[256];     /* its message (written by the one worker that set status) */
} run_ctx;

size_t prx_qpsk_bank_pack(prx_qpsk_bank *b, unsigned c, const uint8_t *bits, size_t n_bits,
                          uint8_t *dst, int flush) {
  return prx_pack_bits(&b->packer[c], bits, n_bits, flush, dst);
}

static void run_channel(run_ctx *x, prx_qpsk_bank_slot *slot, unsigned c) {
  prx_qpsk_bank *b = x->b;
  const prx_qpsk_bank_out *o = x->out;
  size_t sz = prx_format_size(b->cfg.row_format);
  const void *row = x->in ? (const uint8_t *)x->in + (size_t)c * x->in_stride * sz : NULL;
  if (!x->flush && (b->cfg.row_format == PRX_CF16 || b->mix)) {
    /* into the slot's cf32 scratch: cf16 and the integer formats converted, then mixed; a cf32
     * row is mixed straight from the caller's memory (one pass) */
    const prx_cf32 *src = row;
    if (b->cfg.row_format == PRX_CF16) {
      const uint16_t *h = row;
      for (size_t i = 0; i < x->n_in; i++) {
        slot->conv[i].re = prx_half_to_float(h[2 * i]);
        slot->conv[i].im = prx_half_to_float(h[2 * i + 1]);
      }
      src = slot->conv;
    } else if (b->cfg.row_format != PRX_CF32) {
      prx_convert_block(b->cfg.row_format, row, x->n_in, slot->conv);
      src = slot->conv;
    }
    if (b->mix) {
      prx_mix_down(src, slot->conv, x->n_in, b->mix[c], b->mix_n[c]);
      b->mix_n[c] += x->n_in;
    }
    row = slot->conv;
  }
  uint8_t *dst = o->bits ? o->bits + (size_t)c * o->bits_stride : NULL;
  uint8_t *ubits = b->cfg.packed && dst ? slot->bits : dst;
  float *llr = o->llrs ? o->llrs + (size_t)c * o->llr_stride : NULL;
  size_t n = 0;
  prx_status st = x->flush ? prx_qpsk_flush(b->ch[c], ubits, llr, x->capacity, &n)
                           : prx_qpsk_execute(b->ch[c], row, x->n_in, ubits, llr, x->capacity, &n);
  if (st) {
    int expected = PRX_OK;
    if (atomic_compare_exchange_strong(&x->status, &expected, (int)st)) {
      atomic_store(&x->failed_ch, c);
      strncpy(x->message, prx_last_error(), sizeof x->message - 1);
    }
    o->n_symbols[c] = 0;
    if (o->n_bytes) o->n_bytes[c] = 0;
    return;
  }
  size_t bytes = 2 * n;
  if (b->cfg.packed && dst) {
    bytes = prx_qpsk_bank_pack(b, c, ubits, 2 * n, dst, x->flush);
  } else if (b->cfg.packed) {
    bytes = 0;
  }
  if (x->flush) { /* the next stream starts on a byte, its mixer at phase 0 */
    b->packer[c].byte = b->packer[c].n = 0;
    if (b->mix_n) b->mix_n[c] = 0;
  }
  o->n_symbols[c] = n;
  if (o->n_bytes) o->n_bytes[c] = dst ? bytes : 0;
}

static void run_slot(void *ctx, size_t s) {
  run_ctx *x = ctx;
  prx_qpsk_bank_slot *slot = &x->b->slots[s];
  for (;;) {
    unsigned c = atomic_fetch_add(&x->next, 1);
    if (c >= x->b->C) break;
    run_channel(x, slot, c);
  }
}

static prx_status grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return PRX_OK;
  void *q = prx_alloc(need, size);
  if (!q) return prx_fail(PRX_ERR_NOMEM, "cannot allocate %zu bytes of bank scratch", need * size);
  prx_free(*p);
  *p = q;
  *cap = need;
  return PRX_OK;
}

static prx_status check_out(const prx_qpsk_bank *b, const prx_qpsk_bank_out *out, size_t syms,
                            const char *fn) {
  if (!out || !out->n_symbols)
    return prx_fail(PRX_ERR_INVALID, "%s: NULL output description or n_symbols", fn);
  size_t need_bits = b->cfg.packed ? (2 * syms + 7) / 8 + 1 : 2 * syms;
  if (out->bits && out->bits_stride < need_bits)
    return prx_fail(PRX_ERR_CAPACITY,
                    "%s: bits_stride %zu bytes is below the %zu this call may write "
                    "(prx_qpsk_bank_bits_capacity)",
                    fn, out->bits_stride, need_bits);
  if (out->llrs && out->llr_stride < 2 * syms)
    return prx_fail(PRX_ERR_CAPACITY,
                    "%s: llr_stride %zu floats is below the %zu this call may write", fn,
                    out->llr_stride, 2 * syms);
  return PRX_OK;
}

prx_status prx_qpsk_bank_run_host(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                  int flush, const prx_qpsk_bank_out *out) {
  size_t syms = prx_qpsk_bank_max_symbols(b, n_in, flush);
  prx_status st;
  for (unsigned s = 0; s < b->n_slots; s++) {
    prx_qpsk_bank_slot *sl = &b->slots[s];
    if (!flush && (b->cfg.row_format == PRX_CF16 || b->mix) &&
        (st = grow((void **)&sl->conv, &sl->conv_cap, n_in, sizeof(prx_cf32))))
      return st;
    if (b->cfg.packed && out->bits && (st = grow((void **)&sl->bits, &sl->bits_cap, 2 * syms, 1)))
      return st;
  }
  run_ctx x;
  memset(&x, 0, sizeof x);
  x.b = b;
  x.in = in;
  x.in_stride = in_stride;
  x.n_in = n_in;
  x.capacity = syms;
  x.flush = flush;
  x.out = out;
  atomic_init(&x.next, 0);
  atomic_init(&x.status, PRX_OK);
  atomic_init(&x.failed_ch, 0);
  prx_pool_run(b->pool, run_slot, &x, b->n_slots);
  st = (prx_status)atomic_load(&x.status);
  if (st) return prx_fail(st, "channel %u: %s", atomic_load(&x.failed_ch), x.message);
  return PRX_OK;
}

prx_status prx_qpsk_bank_execute(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                 const prx_qpsk_bank_out *out) {
  if (!b) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_execute: NULL bank");
  if (!in && n_in) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_execute: NULL input");
  if (b->C > 1 && in_stride < n_in)
    return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_execute: row stride %zu is below n_in %zu",
                    in_stride, n_in);
  prx_status st = check_out(b, out, prx_qpsk_bank_max_symbols(b, n_in, 0), "prx_qpsk_bank_execute");
  if (st) return st;
  if (b->drv)
    return prx_qpsk_bank_gpu_run(b, in, in_stride, n_in, QPSK_BANK_RING, 0, 0, out, 0, NULL);
  return prx_qpsk_bank_run_host(b, in, in_stride, n_in, 0, out);
}

prx_status prx_qpsk_bank_flush(prx_qpsk_bank *b, const prx_qpsk_bank_out *out) {
  if (!b) return prx_fail(PRX_ERR_INVALID, "prx_qpsk_bank_flush: NULL bank");
  prx_status st = check_out(b, out, prx_qpsk_bank_max_symbols(b, 0, 1), "prx_qpsk_bank_flush");
  if (st) return st;
  if (b->drv) return prx_qpsk_bank_gpu_run(b, NULL, 0, 0, QPSK_BANK_RING, 0, 1, out, 0, NULL);
  return prx_qpsk_bank_run_host(b, NULL, 0, 0, 1, out);
}

/* The CUDA backend's staged path: the module copies the device rows into pinned host rows, the
 * CPU path demodulates them into pinned outputs, the module copies those to the device rows
 * (as wide as the longest channel's output) on the stream without waiting. */
static prx_status run_device(prx_qpsk_bank *b, const void *d_in, size_t in_stride, size_t n_in,
                             int flush, const prx_qpsk_bank_out *out, void *stream) {
  size_t C = b->C, sz = prx_format_size(b->cfg.row_format);
  const void *h_in = NULL;
  prx_qpsk_bank_out h = *out;
  if (C == 1) in_stride = n_in; /* one row: any stride is accepted, the copy's pitch is its width */
  prx_status st = b->gpu->stage_in(
      b->cuda, d_in, in_stride, flush ? 0 : n_in, C, sz, out->bits ? C * out->bits_stride : 0,
      out->llrs ? C * out->llr_stride * sizeof(float) : 0, stream, &h_in, &h.bits, &h.llrs);
  if (st) return st;
  size_t *n_bytes = out->n_bytes ? out->n_bytes : b->n_bytes; /* (the widest row is needed) */
  h.n_bytes = n_bytes;
  st = prx_qpsk_bank_run_host(b, h_in, n_in, flush ? 0 : n_in, flush, &h);
  size_t wb = 0, ws = 0;
  for (size_t c = 0; c < C; c++) {
    if (n_bytes[c] > wb) wb = n_bytes[c];
    if (out->n_symbols[c] > ws) ws = out->n_symbols[c];
  }
  if (st) return st;
  return b->gpu->stage_out(b->cuda, out->bits, out->bits_stride, wb, out->llrs, out->llr_stride,
                           2 * ws, C, stream);
}

/* The device calls: the argument checks, then the driver (kept: QPSK_BANK_RING or the samples
 * the rows hold before the chunk) or the staged path (which keeps its history on the host). */
static prx_status device_call(prx_qpsk_bank *b, const void *d_in, size_t in_stride, size_t n_in,
                              size_t kept, int flush, const prx_qpsk_bank_out *out, void *stream,
                              const char *fn) {
  if (!b) return prx_fail(PRX_ERR_INVALID, "%s: NULL bank", fn);
  if (b->backend != PRX_BACKEND_CUDA)
    return prx_fail(PRX_ERR_UNSUPPORTED, "%s needs the CUDA backend", fn);
  if (flush) n_in = 0;
  if (!d_in && n_in) return prx_fail(PRX_ERR_INVALID, "%s: NULL input", fn);
  if (!flush && b->C > 1 && in_stride < n_in)
    return prx_fail(PRX_ERR_INVALID, "%s: row stride %zu is below n_in %zu", fn, in_stride, n_in);
  if (kept != QPSK_BANK_RING && d_in && b->C > 1 && in_stride - n_in < kept)
    return prx_fail(PRX_ERR_INVALID,
                    "%s: row stride %zu is below kept + n_in (%zu + %zu): the rows would overlap",
                    fn, in_stride, kept, n_in);
  prx_status st = check_out(b, out, prx_qpsk_bank_max_symbols(b, n_in, flush), fn);
  if (st) return st;
  if (b->drv)
    return prx_qpsk_bank_gpu_run(b, d_in, in_stride, n_in, kept, 1, flush, out, 1, stream);
  return run_device(b, flush ? NULL : d_in, in_stride, n_in, flush, out, stream);
}

prx_status prx_qpsk_bank_execute_device(prx_qpsk_bank *b, const void *d_in, size_t in_stride,
                                        size_t n_in, const prx_qpsk_bank_out *out, void *stream) {
  return device_call(b, d_in, in_stride, n_in, QPSK_BANK_RING, 0, out, stream,
                     "prx_qpsk_bank_execute_device");
}

prx_status prx_qpsk_bank_flush_device(prx_qpsk_bank *b, const prx_qpsk_bank_out *out,
                                      void *stream) {
  return device_call(b, NULL, 0, 0, QPSK_BANK_RING, 1, out, stream, "prx_qpsk_bank_flush_device");
}

prx_status prx_qpsk_bank_execute_device_kept(prx_qpsk_bank *b, const void *d_in, size_t in_stride,
                                             size_t n_in, size_t kept, int flush,
                                             const prx_qpsk_bank_out *out, void *stream) {
  if (kept == QPSK_BANK_RING) kept--; /* (no stream holds 2^64 - 1 samples) */
  return device_call(b, d_in, in_stride, n_in, kept, flush, out, stream,
                     "prx_qpsk_bank_execute_device_kept");
}

size_t prx_qpsk_bank_history(const prx_qpsk_bank *b) {
  return b ? prx_qpsk_bank_gpu_history(b->drv) : 0;
}
