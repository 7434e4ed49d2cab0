/* prx_rx: the receiver (polyrx/rx.h): carrier checks, the prototype, the channel selection
 * grouped by demodulator settings, and the streaming glue that aligns the channelizer's rows
 * with the input before the demodulator banks see them.
 *
 * Row layout: the channelizer's select list holds one entry per carrier (a channel that holds
 * two carriers appears twice), ordered by group, so group g's carriers are the contiguous rows
 * first_row .. first_row + n - 1 that its bank reads in one call; within a group the rows go in
 * channel order (row_of maps a carrier to its row), so that where every channel is demodulated
 * once with one setting the select list is every channel in order, the channelizer's natural
 * layout (on CUDA its fused kernel computes each output's row instead of reading a table).
 *
 * Backends: on the CPU the channelizer's host call writes the rows and the banks read them on
 * the worker threads; on CUDA the whole chain is device-resident (rx_gpu.c): the banks run on
 * the GPU and read the channelizer's device rows, and only the bits come back. */
#define _POSIX_C_SOURCE 200809L
#include "polyrx/rx.h"

#include "polyrx/chan.h"
#include "polyrx/qpsk_bank.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"
#include "rx_gpu.h"
#include "rx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

prx_rx_carrier prx_rx_carrier_default(void) {
  prx_rx_carrier c;
  memset(&c, 0, sizeof c);
  c.rolloff = 0.35;
  c.ambiguity = PRX_QPSK_DIFFERENTIAL;
  return c;
}

prx_rx_config prx_rx_config_default(void) {
  prx_rx_config c;
  memset(&c, 0, sizeof c);
  c.sample_rate = 1;
  c.channels = 1024;
  c.taps_per_channel = 14;
  c.atten_db = 80;
  c.in_format = PRX_CF32;
  c.backend = PRX_BACKEND_AUTO;
  return c;
}

static prx_status check_top(const prx_rx_config *cfg) {
  if (!(cfg->sample_rate > 0) || !isfinite(cfg->sample_rate))
    return prx_fail(PRX_ERR_INVALID, "receiver sample rate must be > 0, got %g", cfg->sample_rate);
  if (cfg->channels < 4 || cfg->channels > 65536 || cfg->channels % 2)
    return prx_fail(PRX_ERR_INVALID, "receiver channels K must be even, 4..65536, got %u",
                    cfg->channels);
  return PRX_OK;
}

prx_status prx_rx_check_carrier(const prx_rx_config *cfg, const prx_rx_carrier *c) {
  if (!cfg || !c) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  prx_status st = check_top(cfg);
  if (st) return st;
  double fs = cfg->sample_rate, spacing = fs / cfg->channels, chan_rate = 2 * spacing;
  if (!isfinite(c->freq) || fabs(c->freq) > fs / 2)
    return prx_fail(PRX_ERR_INVALID,
                    "carrier at %.10g Hz is outside the band: offsets from the centre must lie "
                    "within +-%.10g Hz (half the sample rate)",
                    c->freq, fs / 2);
  if (!(c->symbol_rate > 0) || !isfinite(c->symbol_rate))
    return prx_fail(PRX_ERR_INVALID, "carrier symbol rate must be > 0, got %g", c->symbol_rate);
  if (!(c->rolloff > 0 && c->rolloff <= 1))
    return prx_fail(PRX_ERR_INVALID, "carrier roll-off must be in (0, 1], got %g", c->rolloff);
  double occupied = c->symbol_rate * (1 + c->rolloff);
  double limit = PRX_RX_MAX_OCCUPIED * spacing;
  if (occupied > limit * (1 + 1e-12))
    return prx_fail(PRX_ERR_INVALID,
                    "carrier at %.10g Hz is too wide: it occupies rs (1 + rolloff) = %.10g Hz, "
                    "the limit is 0.6 of the channel spacing, %.10g Hz with K = %u (rs <= %.10g "
                    "at rolloff %g; fewer channels allow wider carriers)",
                    c->freq, occupied, limit, cfg->channels, limit / (1 + c->rolloff), c->rolloff);
  if (chan_rate / c->symbol_rate > 1024)
    return prx_fail(PRX_ERR_INVALID,
                    "carrier at %.10g Hz: symbol rate %.10g Hz is below the demodulator's limit "
                    "of 1024 samples per symbol at the channel rate %.10g Hz (rs >= %.10g; more "
                    "channels allow slower carriers)",
                    c->freq, c->symbol_rate, chan_rate, chan_rate / 1024);
  if (c->ambiguity != PRX_QPSK_DIFFERENTIAL && c->ambiguity != PRX_QPSK_PILOTS &&
      c->ambiguity != PRX_QPSK_NONE)
    return prx_fail(PRX_ERR_INVALID, "carrier ambiguity mode %d is unknown", (int)c->ambiguity);
  if (c->ambiguity == PRX_QPSK_PILOTS &&
      (c->pilot_len < 1 || c->pilot_period < 2 || c->pilot_len >= c->pilot_period))
    return prx_fail(PRX_ERR_INVALID,
                    "carrier at %.10g Hz: pilots need 1 <= length < period, got %u:%u", c->freq,
                    c->pilot_period, c->pilot_len);
  if (c->modulation != PRX_QPSK_PLAIN && c->modulation != PRX_QPSK_PI4)
    return prx_fail(PRX_ERR_INVALID, "carrier modulation %d is unknown", (int)c->modulation);
  if (c->modulation == PRX_QPSK_PI4 && c->ambiguity == PRX_QPSK_PILOTS)
    return prx_fail(PRX_ERR_INVALID,
                    "carrier at %.10g Hz: pi/4-QPSK with pilots is not supported (differential "
                    "or coherent decisions)",
                    c->freq);
  return PRX_OK;
}

static int same_settings(const prx_rx_carrier *a, const prx_rx_carrier *b) {
  return a->symbol_rate == b->symbol_rate && a->rolloff == b->rolloff &&
         a->ambiguity == b->ambiguity && a->modulation == b->modulation &&
         (a->ambiguity != PRX_QPSK_PILOTS ||
          (a->pilot_period == b->pilot_period && a->pilot_len == b->pilot_len));
}

unsigned prx_rx_channel_of(const prx_rx_config *cfg, double freq, double *centre) {
  const unsigned K = cfg->channels;
  const double spacing = cfg->sample_rate / K;
  const long kk = lround(freq / spacing); /* unwrapped: kk spacing within half a spacing */
  const long m = kk % (long)K;
  if (centre) *centre = (double)kk * spacing;
  return (unsigned)(m < 0 ? m + (long)K : m);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* order_rows' key: the group from bit 46, the channel from bit 17, the carrier below it (carrier
 * and group indices below RX_MAX_CARRIERS, 17 bits; channels below K <= 65536, check_top) */
_Static_assert(RX_MAX_CARRIERS <= 1 << 17, "a carrier's index must fit order_rows' 17 bits");

/* Each carrier's row within its group (row_of) and the groups' sizes: rows by channel, carriers
 * of one channel in their order (group_of and channel set; n_car <= RX_MAX_CARRIERS). */
static prx_status order_rows(prx_rx *rx) {
  uint64_t *key = malloc(rx->n_car * sizeof *key);
  if (!key) return prx_fail(PRX_ERR_NOMEM, "out of memory for %zu carriers", rx->n_car);
  for (size_t c = 0; c < rx->n_car; c++)
    key[c] = (uint64_t)rx->group_of[c] << 46 | (uint64_t)rx->channel[c] << 17 | c;
  qsort(key, rx->n_car, sizeof *key, cmp_u64);
  for (size_t i = 0; i < rx->n_car; i++) {
    size_t c = (size_t)(key[i] & ((1u << 17) - 1));
    rx->row_of[c] = rx->g[rx->group_of[c]].n++;
  }
  free(key);
  return PRX_OK;
}

void prx_rx_destroy(prx_rx *rx) {
  if (!rx) return;
  rx_gpu_destroy(rx->gpu); /* first: it waits for the device work on the rows */
  prx_chan_destroy(rx->chan);
  for (size_t i = 0; rx->g && i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    prx_qpsk_bank_destroy(g->bank);
    free(g->bits);
    free(g->llrs);
    free(g->n_symbols);
    free(g->n_bytes);
    free(g->mix_hz);
  }
  free(rx->g);
  free(rx->car);
  free(rx->group_of);
  free(rx->row_of);
  free(rx->channel);
  free(rx->channel_freq);
  prx_free(rx->rows);
  free(rx);
}

prx_status prx_rx_make_channelizer(const prx_rx_config *cfg, const unsigned *select,
                                   size_t n_select, size_t block_samples, prx_chan **out) {
  if (!cfg || !out) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  size_t M = (size_t)cfg->channels * cfg->taps_per_channel + 1;
  float *taps = malloc(M * sizeof *taps);
  if (!taps) return prx_fail(PRX_ERR_NOMEM, "out of memory for %zu prototype taps", M);
  /* -6 dB at one spacing: flat to 0.8 spacing, stop band from 1.2 (the transition's centre) */
  prx_status st = prx_design_kaiser(M, cfg->atten_db, 1.0 / cfg->channels, taps);
  if (!st) {
    prx_chan_config cc = prx_chan_config_default();
    cc.channels = cfg->channels;
    cc.decimation = cfg->channels / 2;
    cc.taps = taps;
    cc.n_taps = M;
    cc.select = select;
    cc.n_select = n_select;
    cc.in_format = cfg->in_format;
    cc.sample_rate = cfg->sample_rate;
    cc.center_freq = cfg->center_freq;
    cc.threads = cfg->threads;
    cc.backend = cfg->backend; /* CUDA: the GPU channelizes, the selected rows come back */
    cc.device = cfg->device;
    cc.block_samples = block_samples;
    st = prx_chan_create(&cc, out);
  }
  free(taps);
  return st;
}

static prx_status make_bank(prx_rx *rx, rx_group *g, const prx_rx_carrier *c, prx_backend backend) {
  const prx_rx_config *cfg = &rx->cfg;
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod.sample_rate = rx->chan_rate;
  bc.demod.symbol_rate = c->symbol_rate;
  bc.demod.rolloff = c->rolloff;
  bc.demod.ambiguity = c->ambiguity;
  bc.demod.modulation = c->modulation;
  bc.demod.pilot_period = c->ambiguity == PRX_QPSK_PILOTS ? c->pilot_period : 0;
  bc.demod.pilot_len = c->ambiguity == PRX_QPSK_PILOTS ? c->pilot_len : 0;
  if (cfg->block_symbols) bc.demod.block_symbols = cfg->block_symbols;
  if (cfg->cfo_span_symbols) bc.demod.cfo_span_symbols = cfg->cfo_span_symbols;
  bc.channels = (unsigned)g->n;
  bc.row_format = PRX_CF32;
  bc.packed = cfg->packed;
  bc.threads = cfg->threads;
  bc.backend = backend;
  bc.device = cfg->device;
  bc.mix_hz = g->mix_hz;
  return prx_qpsk_bank_create(&bc, &g->bank);
}

/* A new stream: its counts back to the start (the group delay to drop again) and, with parts,
 * the channelizer's and the banks' state cleared (after a flush they are clear already). */
static void new_stream(prx_rx *rx, int parts) {
  if (parts) {
    rx_gpu_reset(rx);
    prx_chan_reset(rx->chan);
    for (size_t g = 0; g < rx->n_groups; g++) prx_qpsk_bank_reset(rx->g[g].bank);
  }
  rx->in_stream = 0;
  rx->drop_left = rx->P;
  rx->emitted = 0;
}

prx_status prx_rx_create(const prx_rx_config *cfg, prx_rx **out) {
  if (!cfg || !out) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  *out = NULL;
  prx_status st = check_top(cfg);
  if (st) return st;
  if (!cfg->carriers || cfg->n_carriers < 1 || cfg->n_carriers > RX_MAX_CARRIERS)
    return prx_fail(PRX_ERR_INVALID, "the receiver needs 1..%d carriers, got %zu", RX_MAX_CARRIERS,
                    cfg->carriers ? cfg->n_carriers : 0);
  for (size_t i = 0; i < cfg->n_carriers; i++) {
    st = prx_rx_check_carrier(cfg, &cfg->carriers[i]);
    if (st) {
      char why[512];
      snprintf(why, sizeof why, "%s", prx_last_error());
      return prx_fail(st, "carrier %zu: %s", i, why);
    }
  }
  if (cfg->taps_per_channel < 1 || cfg->taps_per_channel > 4096)
    return prx_fail(PRX_ERR_INVALID, "taps per channel must be 1..4096, got %u",
                    cfg->taps_per_channel);
  if (!(cfg->atten_db >= 20 && cfg->atten_db <= 200))
    return prx_fail(PRX_ERR_INVALID, "prototype attenuation must be 20..200 dB, got %g",
                    cfg->atten_db);
  if (!cfg->on_output) return prx_fail(PRX_ERR_INVALID, "the receiver needs an on_output callback");
  if (cfg->packed != 0 && cfg->packed != 1)
    return prx_fail(PRX_ERR_INVALID, "packed must be 0 or 1, got %d", cfg->packed);
  if (prx_format_size(cfg->in_format) == 0 || cfg->in_format == PRX_CF16)
    return prx_fail(PRX_ERR_INVALID, "receiver input format must be cf32, ci16, ci8 or cu8");
  if (cfg->backend != PRX_BACKEND_AUTO && cfg->backend != PRX_BACKEND_CPU &&
      cfg->backend != PRX_BACKEND_CUDA)
    return prx_fail(PRX_ERR_INVALID, "backend %d is unknown", (int)cfg->backend);

  prx_rx *rx = calloc(1, sizeof *rx);
  if (!rx) return prx_fail(PRX_ERR_NOMEM, "out of memory for the receiver");
  rx->cfg = *cfg;
  rx->n_car = cfg->n_carriers;
  rx->K = cfg->channels;
  rx->D = cfg->channels / 2;
  rx->P = cfg->taps_per_channel;
  rx->spacing = cfg->sample_rate / rx->K;
  rx->chan_rate = 2 * rx->spacing;
  rx->block = cfg->block_samples ? cfg->block_samples : RX_DEFAULT_BLOCK;
  size_t n = rx->n_car;
  rx->car = malloc(n * sizeof *rx->car);
  rx->group_of = calloc(n, sizeof *rx->group_of);
  rx->row_of = calloc(n, sizeof *rx->row_of);
  rx->channel = calloc(n, sizeof *rx->channel);
  rx->channel_freq = calloc(n, sizeof *rx->channel_freq);
  rx->g = calloc(n, sizeof *rx->g);
  unsigned *select = calloc(n, sizeof *select);
  size_t *leader = calloc(n, sizeof *leader); /* group -> its first carrier */
  rx->cfg.carriers = rx->car;
  if (!rx->car || !rx->group_of || !rx->row_of || !rx->channel || !rx->channel_freq || !rx->g ||
      !select || !leader) {
    st = prx_fail(PRX_ERR_NOMEM, "out of memory for %zu carriers", n);
    goto fail;
  }
  memcpy(rx->car, cfg->carriers, n * sizeof *rx->car);

  /* groups in order of first appearance; each carrier's channel */
  for (size_t c = 0; c < n; c++) {
    size_t g = 0;
    while (g < rx->n_groups && !same_settings(&rx->car[leader[g]], &rx->car[c])) g++;
    if (g == rx->n_groups) leader[rx->n_groups++] = c;
    rx->group_of[c] = g;
    rx->channel[c] = prx_rx_channel_of(&rx->cfg, rx->car[c].freq, &rx->channel_freq[c]);
  }
  /* rows: by group, then channel, then carrier */
  if ((st = order_rows(rx))) goto fail;
  size_t row = 0;
  for (size_t g = 0; g < rx->n_groups; g++) {
    rx->g[g].first_row = row;
    row += rx->g[g].n;
    rx->g[g].mix_hz = calloc(rx->g[g].n, sizeof *rx->g[g].mix_hz);
    rx->g[g].n_symbols = calloc(rx->g[g].n, sizeof *rx->g[g].n_symbols);
    rx->g[g].n_bytes = calloc(rx->g[g].n, sizeof *rx->g[g].n_bytes);
    if (!rx->g[g].mix_hz || !rx->g[g].n_symbols || !rx->g[g].n_bytes) {
      st = prx_fail(PRX_ERR_NOMEM, "out of memory for the demodulator groups");
      goto fail;
    }
  }
  for (size_t c = 0; c < n; c++) {
    rx_group *g = &rx->g[rx->group_of[c]];
    select[g->first_row + rx->row_of[c]] = rx->channel[c];
    g->mix_hz[rx->row_of[c]] = rx->car[c].freq - rx->channel_freq[c];
  }

  /* the banks run where the channelizer runs (on CUDA they read its device rows), which is where
   * the module's pick says (prx_chan_create's own choice); they are made first: their CPU part
   * (a demodulator per carrier, its plans) needs no device, so it runs while the device's context
   * is still being made (a command starts it on a thread of its own: cli_warm_cuda_start) */
  const prx_cuda_module *module = NULL;
  st = prx_cuda_module_pick(cfg->backend, &module);
  double t0 = prx_now();
  for (size_t g = 0; !st && g < rx->n_groups; g++)
    st = make_bank(rx, &rx->g[g], &rx->car[leader[g]], module ? PRX_BACKEND_CUDA : PRX_BACKEND_CPU);
  double t1 = prx_now();
  if (!st) st = prx_rx_make_channelizer(&rx->cfg, select, rx->n_car, rx->block, &rx->chan);
  rx->setup.banks = t1 - t0;
  rx->setup.chan = prx_now() - t1;
  if (!st && (prx_chan_backend(rx->chan) == PRX_BACKEND_CUDA) != (module != NULL))
    st = prx_fail(PRX_ERR_INTERNAL, "the receiver's channelizer and banks on different backends");
  if (st) goto fail;

  /* rows: a block's outputs or the flush's, whichever is more (2 P + 1 at most) */
  size_t need = rx_most_outputs(rx, rx->block);
  if (need < 2 * (size_t)rx->P + 2) need = 2 * (size_t)rx->P + 2;
  rx->stride = rx_row_pitch(need);
  t0 = prx_now();
  rx->rows = prx_alloc(n * rx->stride, sizeof *rx->rows);
  rx->setup.rows = prx_now() - t0;
  if (!rx->rows) {
    st = prx_fail(PRX_ERR_NOMEM, "out of memory for %zu channel rows", n);
    goto fail;
  }
  if (prx_chan_backend(rx->chan) == PRX_BACKEND_CUDA) {
    st = rx_gpu_create(rx);
    if (st) goto fail;
  }
  new_stream(rx, 0);
  free(select);
  free(leader);
  *out = rx;
  return PRX_OK;
fail:
  free(select);
  free(leader);
  prx_rx_destroy(rx);
  return st;
}

void prx_rx_reset(prx_rx *rx) {
  if (!rx) return;
  new_stream(rx, 1);
  rx->samples = 0;
  rx->t_chan = rx->t_demod = 0;
}

size_t rx_most_outputs(const prx_rx *rx, size_t n) { return (n + rx->D - 1) / rx->D + 1; }

size_t rx_row_pitch(size_t need) { return (need + 7) & ~(size_t)7; }

prx_status rx_ensure_capacity(const prx_rx *rx, rx_group *g, size_t n_in, int flush, int host) {
  return rx_ensure_symbols(rx, g, prx_qpsk_bank_max_symbols(g->bank, n_in, flush), host);
}

prx_status rx_ensure_symbols(const prx_rx *rx, rx_group *g, size_t syms, int host) {
  /* prx_qpsk_bank_bits_capacity's bytes for syms symbols */
  size_t bytes = rx->cfg.packed ? (2 * syms + 7) / 8 + 1 : 2 * syms;
  if (bytes > g->bits_stride) {
    size_t s = bytes + bytes / 2 + 64;
    if (host) {
      uint8_t *p = realloc(g->bits, g->n * s);
      if (!p) return prx_fail(PRX_ERR_NOMEM, "out of memory for %zu carriers' bits", g->n);
      g->bits = p;
    }
    g->bits_stride = s;
  }
  if (rx->cfg.llrs && 2 * syms > g->llr_stride) {
    size_t s = 3 * syms + 64;
    if (host) {
      float *p = realloc(g->llrs, g->n * s * sizeof *p);
      if (!p) return prx_fail(PRX_ERR_NOMEM, "out of memory for %zu carriers' LLRs", g->n);
      g->llrs = p;
    }
    g->llr_stride = s;
  }
  return PRX_OK;
}

prx_qpsk_bank_out rx_bank_out(const rx_group *g, uint8_t *bits, float *llrs) {
  prx_qpsk_bank_out o;
  o.bits = bits;
  o.bits_stride = g->bits_stride;
  o.llrs = llrs;
  o.llr_stride = g->llr_stride;
  o.n_symbols = g->n_symbols;
  o.n_bytes = g->n_bytes;
  return o;
}

static prx_qpsk_bank_out host_out(const prx_rx *rx, rx_group *g) {
  return rx_bank_out(g, g->bits, rx->cfg.llrs ? g->llrs : NULL);
}

void rx_deliver_channels(prx_rx *rx, const prx_cf32 *rows, size_t m) {
  for (size_t c = 0; rx->cfg.on_channel && c < rx->n_car; c++) {
    const rx_group *g = &rx->g[rx->group_of[c]];
    rx->cfg.on_channel(rx->cfg.user, c, rows + (g->first_row + rx->row_of[c]) * rx->stride, m);
  }
}

void rx_deliver(prx_rx *rx) { rx_deliver_from(rx, rx->g); }

void rx_deliver_from(prx_rx *rx, const rx_group *groups) {
  for (size_t c = 0; c < rx->n_car; c++) {
    const rx_group *g = &groups[rx->group_of[c]];
    size_t r = rx->row_of[c];
    if (!g->n_symbols[r] && !g->n_bytes[r]) continue;
    rx->cfg.on_output(rx->cfg.user, c, g->bits + r * g->bits_stride, g->n_bytes[r],
                      rx->cfg.llrs ? g->llrs + r * g->llr_stride : NULL, g->n_symbols[r]);
  }
}

/* Hands n_out channel outputs per row (just written to rx->rows) to the banks, after dropping
 * what remains of the group delay; limit caps the outputs passed (the stream's end). */
void rx_take(prx_rx *rx, size_t n_out, uint64_t limit, size_t *skip, size_t *m) {
  *skip = n_out < rx->drop_left ? n_out : (size_t)rx->drop_left;
  rx->drop_left -= *skip;
  *m = n_out - *skip;
  if (rx->emitted + *m > limit) *m = limit > rx->emitted ? (size_t)(limit - rx->emitted) : 0;
}

static prx_status demodulate(prx_rx *rx, size_t n_out, uint64_t limit) {
  size_t skip, m;
  rx_take(rx, n_out, limit, &skip, &m);
  if (m == 0) return PRX_OK;
  rx_deliver_channels(rx, rx->rows + skip, m);
  double t0 = prx_now();
  for (size_t i = 0; i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    prx_status st = rx_ensure_capacity(rx, g, m, 0, 1);
    if (st) return st;
    prx_qpsk_bank_out o = host_out(rx, g);
    st = prx_qpsk_bank_execute(g->bank, rx->rows + g->first_row * rx->stride + skip, rx->stride, m,
                               &o);
    if (st) return st;
  }
  rx->emitted += m;
  rx->t_demod += prx_now() - t0;
  rx_deliver(rx);
  return PRX_OK;
}

prx_status prx_rx_execute(prx_rx *rx, const void *in, size_t n) {
  if (!rx || (!in && n)) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  if (rx->gpu) return rx_gpu_execute(rx, in, n);
  size_t size = prx_format_size(rx->cfg.in_format);
  const uint8_t *p = in;
  while (n) {
    size_t b = n < rx->block ? n : rx->block;
    size_t n_out = 0;
    double t0 = prx_now();
    prx_status st = prx_chan_execute(rx->chan, p, b, rx->rows, rx->stride, &n_out);
    rx->t_chan += prx_now() - t0;
    if (st) return st;
    rx->in_stream += b;
    rx->samples += b;
    st = demodulate(rx, n_out, UINT64_MAX);
    if (st) return st;
    p += b * size;
    n -= b;
  }
  return PRX_OK;
}

/* The CPU path's end of stream: the filter tail, then the banks' tails. */
static prx_status flush_cpu(prx_rx *rx) {
  /* channel samples of this stream: ceil(N / D), the last at input instant (ceil(N/D) - 1) D */
  uint64_t target = (rx->in_stream + rx->D - 1) / rx->D;
  size_t n_out = 0;
  prx_status st = PRX_OK;
  if (prx_chan_flush_count(rx->chan) > rx->stride)
    return prx_fail(PRX_ERR_INTERNAL, "receiver rows too short for the channelizer's tail");
  double t0 = prx_now();
  st = prx_chan_flush(rx->chan, rx->rows, rx->stride, &n_out);
  rx->t_chan += prx_now() - t0;
  if (!st) st = demodulate(rx, n_out, target);
  t0 = prx_now();
  for (size_t i = 0; !st && i < rx->n_groups; i++) {
    rx_group *g = &rx->g[i];
    st = rx_ensure_capacity(rx, g, 0, 1, 1);
    if (st) break;
    prx_qpsk_bank_out o = host_out(rx, g);
    st = prx_qpsk_bank_flush(g->bank, &o);
  }
  rx->t_demod += prx_now() - t0;
  if (!st) rx_deliver(rx);
  return st;
}

prx_status prx_rx_flush(prx_rx *rx) {
  if (!rx) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  prx_status st = rx->gpu ? rx_gpu_flush(rx) : flush_cpu(rx);
  new_stream(rx, st != PRX_OK);
  return st;
}

prx_status prx_rx_get_stats(const prx_rx *rx, size_t c, prx_rx_stats *out) {
  if (!rx || !out) return prx_fail(PRX_ERR_INVALID, "NULL argument");
  if (c >= rx->n_car)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu does not exist (%zu carriers)", c, rx->n_car);
  const rx_group *g = &rx->g[rx->group_of[c]];
  prx_status st = prx_qpsk_bank_get_stats(g->bank, (unsigned)rx->row_of[c], &out->demod);
  if (st) return st;
  out->freq = rx->car[c].freq;
  out->channel = rx->channel[c];
  out->channel_freq = rx->channel_freq[c];
  out->mix_hz = g->mix_hz[rx->row_of[c]];
  out->group = (unsigned)rx->group_of[c];
  return PRX_OK;
}

size_t prx_rx_n_carriers(const prx_rx *rx) { return rx ? rx->n_car : 0; }
size_t prx_rx_n_groups(const prx_rx *rx) { return rx ? rx->n_groups : 0; }
unsigned prx_rx_cfo_span(const prx_rx *rx) {
  return rx && rx->n_groups ? prx_qpsk_bank_cfo_span(rx->g[0].bank) : 0;
}
prx_backend prx_rx_backend(const prx_rx *rx) {
  return rx ? prx_chan_backend(rx->chan) : PRX_BACKEND_CPU;
}
double prx_rx_channel_rate(const prx_rx *rx) { return rx ? rx->chan_rate : 0; }
const float *prx_rx_taps(const prx_rx *rx, size_t *n) {
  if (!rx) {
    if (n) *n = 0;
    return NULL;
  }
  return prx_chan_taps(rx->chan, n);
}
void prx_rx_get_times(const prx_rx *rx, uint64_t *samples, double *chan_seconds,
                      double *demod_seconds) {
  if (samples) *samples = rx ? rx->samples : 0;
  if (chan_seconds) *chan_seconds = rx ? rx->t_chan : 0;
  if (demod_seconds) *demod_seconds = rx ? rx->t_demod : 0;
}
