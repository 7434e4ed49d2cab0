/* polyrx test-signal generator: configuration checks, the symbol source of each carrier, and the
 * block loop that hands samples to the kernels (sim_kernel.c) and the noise (sim_noise.c). The
 * model and its conventions are written at the top of include/polyrx/sim.h.
 *
 * Every output sample is a pure function of its index k (sim_kernel.c: position, rotator and
 * pulse; sim_noise.c: counter-based noise), so the output cannot depend on how the caller cuts
 * the stream, nor on how the samples are shared among threads. This file keeps the symbol
 * window of each carrier and hands the samples of each block to the tasks. */
#include "polyrx/sim.h"

#include "core/internal.h"
#include "sim_internal.h"

#include <math.h>
#include <string.h>

struct prx_sim {
  double fs;
  size_t n_car;
  sim_carrier *car;
  int noise;
  double noise_var;
  float sigma; /* per-component standard deviation */
  uint64_t noise_seed;
  float dc_re, dc_im;
  int has_dc;
  prx_sim_gap *gaps; /* sorted, not overlapping */
  size_t n_gaps;
  uint64_t pos; /* samples generated */
  prx_pool *pool;
  sim_rows rows[SIM_BLOCK / SIM_TASK]; /* one per task of a block */
  float *row_mem;
  /* the block in progress, read by the tasks */
  prx_cf32 *out;
  uint64_t k0;
  size_t n;
};

prx_sim_carrier prx_sim_carrier_default(void) {
  prx_sim_carrier c;
  memset(&c, 0, sizeof c);
  c.rolloff = 0.35;
  c.span = 12;
  return c;
}

prx_sim_config prx_sim_config_default(void) {
  prx_sim_config c;
  memset(&c, 0, sizeof c);
  c.noise_seed = 1;
  return c;
}

double prx_sim_ebn0_to_esn0(double ebn0_db) { return ebn0_db + 10.0 * log10(2.0); }

static prx_status check_carrier(const prx_sim_carrier *c, size_t i, double fs) {
  if (!(c->symbol_rate > 0) || !isfinite(c->symbol_rate))
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: symbol rate must be > 0, got %g", i,
                    c->symbol_rate);
  double sps = fs / c->symbol_rate;
  if (!(sps >= 2))
    return prx_fail(PRX_ERR_INVALID,
                    "carrier %zu: samples per symbol must be >= 2, got %g (sample rate %g, "
                    "symbol rate %g)",
                    i, sps, fs, c->symbol_rate);
  if (!(c->rolloff > 0 && c->rolloff <= 1))
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: roll-off must be in (0, 1], got %g", i,
                    c->rolloff);
  if (c->span < 2 || c->span > 128)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: RRC span must be 2..128 symbols, got %u", i,
                    c->span);
  if (!(fabs(c->freq) <= fs / 2))
    return prx_fail(PRX_ERR_INVALID,
                    "carrier %zu: frequency %g Hz is outside [-fs/2, fs/2] = [%g, %g]", i, c->freq,
                    -fs / 2, fs / 2);
  if (!(fabs(c->power_db) <= 200))
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: power must be within +-200 dB, got %g", i,
                    c->power_db);
  if (!isfinite(c->phase) || fabs(c->phase) > 1e6)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: phase must be finite, got %g", i, c->phase);
  if (!(c->timing_offset >= 0 && c->timing_offset < 1))
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: timing offset must be in [0, 1), got %g", i,
                    c->timing_offset);
  if (!(fabs(c->clock_ppm) <= 10000))
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: clock offset must be within +-10000 ppm, got %g",
                    i, c->clock_ppm);
  if (c->differential != 0 && c->differential != 1)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: differential must be 0 or 1, got %d", i,
                    c->differential);
  if (c->pi4 != 0 && c->pi4 != 1)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: pi4 must be 0 or 1, got %d", i, c->pi4);
  if (c->pilot_period == 0 && c->pilot_len != 0)
    return prx_fail(PRX_ERR_INVALID, "carrier %zu: pilot length %u given without a pilot period", i,
                    c->pilot_len);
  if (c->pilot_period > 0 && (c->pilot_len < 1 || c->pilot_len >= c->pilot_period))
    return prx_fail(PRX_ERR_INVALID,
                    "carrier %zu: pilot length must be in 1..period-1 (period %u), got %u", i,
                    c->pilot_period, c->pilot_len);
  if (c->pilot_len > 16383)
    return prx_fail(PRX_ERR_INVALID,
                    "carrier %zu: pilot length %u exceeds the PN15 word (16383 symbols)", i,
                    c->pilot_len);
  return PRX_OK;
}

static prx_status check_gaps(const prx_sim_gap *gaps, size_t n) {
  if (n && !gaps) return prx_fail(PRX_ERR_INVALID, "%zu gaps given without a gap array", n);
  const uint64_t limit = (uint64_t)1 << 52; /* the stream's length limit */
  for (size_t i = 0; i < n; i++) {
    const prx_sim_gap *g = &gaps[i];
    if (g->zeros != 0 && g->zeros != 1)
      return prx_fail(PRX_ERR_INVALID, "gap %zu: zeros must be 0 (noise kept) or 1, got %d", i,
                      g->zeros);
    if (g->length < 1)
      return prx_fail(PRX_ERR_INVALID, "gap %zu (start %llu): length must be at least 1 sample", i,
                      (unsigned long long)g->start);
    if (g->start > limit || g->length > limit - g->start)
      return prx_fail(PRX_ERR_INVALID, "gap %zu: start %llu + length %llu exceeds 2^52 samples", i,
                      (unsigned long long)g->start, (unsigned long long)g->length);
    if (i > 0 && g->start < gaps[i - 1].start + gaps[i - 1].length)
      return prx_fail(PRX_ERR_INVALID,
                      "gap %zu (start %llu) %s gap %zu (samples %llu to %llu): gaps must be sorted "
                      "by start and must not overlap",
                      i, (unsigned long long)g->start,
                      g->start < gaps[i - 1].start ? "comes before" : "overlaps", i - 1,
                      (unsigned long long)gaps[i - 1].start,
                      (unsigned long long)(gaps[i - 1].start + gaps[i - 1].length - 1));
  }
  return PRX_OK;
}

static prx_status check_config(const prx_sim_config *cfg) {
  if (!(cfg->sample_rate > 0) || !isfinite(cfg->sample_rate))
    return prx_fail(PRX_ERR_INVALID, "sample rate must be > 0, got %g", cfg->sample_rate);
  if (cfg->n_carriers < 1 || !cfg->carriers)
    return prx_fail(PRX_ERR_INVALID, "at least one carrier is needed, got %zu", cfg->n_carriers);
  if (cfg->n_carriers > 65536)
    return prx_fail(PRX_ERR_INVALID, "too many carriers: %zu (max 65536)", cfg->n_carriers);
  for (size_t i = 0; i < cfg->n_carriers; i++) {
    prx_status st = check_carrier(&cfg->carriers[i], i, cfg->sample_rate);
    if (st != PRX_OK) return st;
  }
  if (cfg->noise != 0 && cfg->noise != 1)
    return prx_fail(PRX_ERR_INVALID, "noise must be 0 or 1, got %d", cfg->noise);
  if (cfg->noise && !(fabs(cfg->esn0_db) <= 300))
    return prx_fail(PRX_ERR_INVALID, "Es/N0 must be within +-300 dB, got %g", cfg->esn0_db);
  if (cfg->threads < 0 || cfg->threads > 1024)
    return prx_fail(PRX_ERR_INVALID, "threads must be 0 (all cores) to 1024, got %d", cfg->threads);
  if (!(fabs(cfg->dc_re) <= 1e30 && fabs(cfg->dc_im) <= 1e30))
    return prx_fail(PRX_ERR_INVALID,
                    "DC offset must be finite (each part within +-1e30), got %g%+gi", cfg->dc_re,
                    cfg->dc_im);
  return check_gaps(cfg->gaps, cfg->n_gaps);
}

/* Symbol n of carrier c before pi4's turn (polyrx/sim.h: pilots, then data symbols, differential
 * or not). */
static prx_cf32 next_point(sim_carrier *c, uint64_t n) {
  unsigned period = c->cfg.pilot_period;
  if (period) {
    uint64_t ph = n % period;
    if (ph < c->cfg.pilot_len) return c->pilots[ph];
  }
  /* data symbol m: bits 2m and 2m+1, both in output m / 32 of the seed's stream */
  uint64_t m = c->data++;
  if (m % 32 == 0) c->word = sim_splitmix64(c->seed, m / 32);
  unsigned b0 = (unsigned)(c->word >> (2 * (m % 32))) & 1,
           b1 = (unsigned)(c->word >> (2 * (m % 32) + 1)) & 1;
  if (!c->cfg.differential) return prx_qpsk_map(b0, b1);
  c->g = (c->g + prx_qpsk_diff_rotation(b0, b1)) & 3;
  return c->diff_symbols[c->g];
}

/* The next symbol of carrier c: with pi4, symbol n turned by n pi/4. */
static prx_cf32 make_symbol(sim_carrier *c) {
  uint64_t n = c->next++;
  prx_cf32 a = next_point(c, n);
  if (!c->cfg.pi4) return a;
  const double t = M_PI / 4 * (double)(n & 7), cr = cos(t), ci = sin(t);
  prx_cf32 r = {(float)(a.re * cr - a.im * ci), (float)(a.re * ci + a.im * cr)};
  return r;
}

/* Makes the symbol window of carrier c cover samples k0 .. k0+n-1: drops symbols no sample of
 * the block reaches, then makes symbols up to the last one the block's last sample reaches. */
static void prepare_window(sim_carrier *c, uint64_t k0, size_t n) {
  int64_t first = sim_symbol_at(c, k0), last = sim_symbol_at(c, k0 + n - 1);
  int64_t keep = first - (int64_t)c->taps + 1;
  if (keep > c->base) {
    size_t drop = (size_t)(keep - c->base);
    if (drop > c->count) drop = c->count; /* cannot happen: symbols are made up to the last */
    memmove(c->sre, c->sre + drop, (c->count - drop) * sizeof *c->sre);
    memmove(c->sim, c->sim + drop, (c->count - drop) * sizeof *c->sim);
    c->base += (int64_t)drop;
    c->count -= drop;
  }
  while (c->base + (int64_t)c->count <= last) {
    prx_cf32 s = make_symbol(c);
    c->sre[c->count] = s.re;
    c->sim[c->count] = s.im;
    c->count++;
  }
}

static void window_task(void *ctx, size_t c) {
  prx_sim *s = ctx;
  prepare_window(&s->car[c], s->k0, s->n);
}

/* The first gap that ends after sample k (n_gaps when none). */
static size_t gap_after(const prx_sim *s, uint64_t k) {
  size_t lo = 0, hi = s->n_gaps;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->gaps[mid].start + s->gaps[mid].length <= k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void add_dc(const prx_sim *s, prx_cf32 *out, size_t n) {
  if (!s->has_dc) return; /* no DC: the samples stay bit-identical to a model without it */
  for (size_t i = 0; i < n; i++) {
    out[i].re += s->dc_re;
    out[i].im += s->dc_im;
  }
}

/* Samples k0 .. k0+n-1: noise everywhere, then the carriers and the DC outside the gaps, the DC
 * in the noise gaps, zeros in the zero gaps. Each sample gets the same operations in the same
 * order wherever the task and gap boundaries fall, so the output stays a function of k alone. */
static void block_task(void *ctx, size_t task) {
  prx_sim *s = ctx;
  size_t from = task * SIM_TASK, n = s->n - from < SIM_TASK ? s->n - from : SIM_TASK;
  prx_cf32 *out = s->out + from;
  uint64_t k0 = s->k0 + from, end = k0 + n, k = k0;
  if (s->noise)
    sim_noise(s->noise_seed, s->sigma, k0, n, out);
  else
    memset(out, 0, n * sizeof *out);
  size_t g = gap_after(s, k0);
  while (k < end) {
    uint64_t gs = g < s->n_gaps ? s->gaps[g].start : UINT64_MAX;
    if (k < gs) { /* outside the gaps up to the next one */
      uint64_t e = gs < end ? gs : end;
      for (size_t c = 0; c < s->n_car; c++)
        sim_carrier_add(&s->car[c], &s->rows[task], k, (size_t)(e - k), out + (k - k0));
      add_dc(s, out + (k - k0), (size_t)(e - k));
      k = e;
    } else { /* inside gap g */
      uint64_t ge = gs + s->gaps[g].length, e = ge < end ? ge : end;
      if (s->gaps[g].zeros)
        memset(out + (k - k0), 0, (size_t)(e - k) * sizeof *out);
      else
        add_dc(s, out + (k - k0), (size_t)(e - k));
      k = e;
      if (e == ge) g++;
    }
  }
}

static prx_status carrier_init(sim_carrier *c, const prx_sim_carrier *cfg, size_t index,
                               double fs) {
  c->cfg = *cfg;
  c->seed = cfg->seed ? cfg->seed : (uint64_t)index + 1;
  c->r = cfg->symbol_rate * (1 + cfg->clock_ppm * 1e-6) / fs;
  c->w0 = 0.5 * cfg->span - cfg->timing_offset;
  c->nu = cfg->freq / fs;
  c->amp = sqrt(pow(10.0, cfg->power_db / 10));
  c->taps = sim_pulse_taps(cfg->span);
  c->symbol_major = 1 / c->r >= SIM_MAJOR_SPS;
  c->cap = (size_t)ceil(SIM_BLOCK * c->r) + c->taps + 2;
  c->table = prx_alloc(SIM_PHASES * 2 * c->taps, sizeof *c->table);
  if (c->symbol_major) c->columns = prx_alloc(SIM_PHASES * 2 * cfg->span, sizeof *c->columns);
  c->rot = prx_alloc(SIM_NCO_LEN, sizeof *c->rot);
  c->pilots = prx_alloc(cfg->pilot_len ? cfg->pilot_len : 1, sizeof *c->pilots);
  c->sre = prx_alloc(c->cap, sizeof *c->sre);
  c->sim = prx_alloc(c->cap, sizeof *c->sim);
  if (!c->table || (c->symbol_major && !c->columns) || !c->rot || !c->pilots || !c->sre || !c->sim)
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the generator's tables for carrier %zu", index);
  sim_pulse_table(cfg->rolloff, cfg->span, c->table);
  if (c->symbol_major) sim_columns(c);
  for (size_t j = 0; j < SIM_NCO_LEN; j++) {
    double p = (double)j * c->nu, th = 6.283185307179586476925 * (p - floor(p));
    c->rot[j].re = (float)cos(th);
    c->rot[j].im = (float)sin(th);
  }
  /* prx_qpsk_pilot(i) regenerates PN15 from its start: tabulate the word once */
  for (size_t i = 0; i < cfg->pilot_len; i++) c->pilots[i] = prx_qpsk_pilot(i);
  /* the reference (1 + j)/sqrt(2) turned g quarter turns, exactly (coordinates swap and negate) */
  c->diff_symbols[0] = prx_qpsk_map(0, 0);
  for (int g = 1; g < 4; g++) {
    prx_cf32 p = c->diff_symbols[g - 1];
    c->diff_symbols[g] = (prx_cf32){-p.im, p.re};
  }
  /* the symbols before symbol 0 are silent: they fill the window's first taps - 1 entries */
  c->base = -(int64_t)(c->taps - 1);
  c->count = c->taps - 1;
  return PRX_OK;
}

static void carrier_free(sim_carrier *c) {
  prx_free(c->table);
  prx_free(c->columns);
  prx_free(c->rot);
  prx_free(c->pilots);
  prx_free(c->sre);
  prx_free(c->sim);
}

prx_status prx_sim_create(const prx_sim_config *cfg, prx_sim **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_sim_create: NULL output pointer");
  *out = NULL;
  if (!cfg) return prx_fail(PRX_ERR_INVALID, "prx_sim_create: NULL configuration");
  prx_status st = check_config(cfg);
  if (st != PRX_OK) return st;
  prx_sim *s = prx_alloc(1, sizeof *s);
  if (!s) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the generator");
  s->fs = cfg->sample_rate;
  s->n_car = cfg->n_carriers;
  s->car = prx_alloc(s->n_car, sizeof *s->car);
  if (!s->car) {
    prx_free(s);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate %zu carriers", cfg->n_carriers);
  }
  for (size_t c = 0; c < s->n_car && st == PRX_OK; c++)
    st = carrier_init(&s->car[c], &cfg->carriers[c], c, s->fs);
  s->noise = cfg->noise;
  s->noise_seed = cfg->noise_seed;
  s->dc_re = (float)cfg->dc_re;
  s->dc_im = (float)cfg->dc_im;
  s->has_dc = cfg->dc_re != 0 || cfg->dc_im != 0;
  s->n_gaps = cfg->n_gaps;
  if (s->n_gaps && st == PRX_OK) {
    s->gaps = prx_alloc(s->n_gaps, sizeof *s->gaps);
    if (s->gaps)
      memcpy(s->gaps, cfg->gaps, s->n_gaps * sizeof *s->gaps);
    else
      st = prx_fail(PRX_ERR_NOMEM, "cannot allocate %zu gaps", s->n_gaps);
  }
  if (s->noise) {
    const prx_sim_carrier *c0 = &cfg->carriers[0];
    /* Es = P0 / Rs0, N0 = Es / 10^(esn0/10), E|n|^2 = N0 fs */
    double es = pow(10.0, c0->power_db / 10) / c0->symbol_rate;
    s->noise_var = es / pow(10.0, cfg->esn0_db / 10) * s->fs;
    s->sigma = (float)sqrt(s->noise_var / 2);
  }
  const size_t n_rows = SIM_BLOCK / SIM_TASK;
  s->row_mem = prx_alloc(n_rows * 4 * SIM_PHASES, sizeof *s->row_mem);
  if (!s->row_mem && st == PRX_OK)
    st = prx_fail(PRX_ERR_NOMEM, "cannot allocate the generator's scratch");
  for (size_t i = 0; i < n_rows && s->row_mem; i++) {
    float *m = s->row_mem + i * 4 * SIM_PHASES;
    s->rows[i] = (sim_rows){m, m + SIM_PHASES, m + 2 * SIM_PHASES, m + 3 * SIM_PHASES, 0};
  }
  if (st == PRX_OK) st = prx_pool_create(cfg->threads, &s->pool);
  if (st != PRX_OK) {
    prx_sim_destroy(s);
    return st;
  }
  *out = s;
  return PRX_OK;
}

void prx_sim_destroy(prx_sim *s) {
  if (!s) return;
  if (s->car)
    for (size_t c = 0; c < s->n_car; c++) carrier_free(&s->car[c]);
  prx_free(s->car);
  prx_free(s->row_mem);
  prx_free(s->gaps);
  prx_pool_destroy(s->pool);
  prx_free(s);
}

prx_status prx_sim_generate(prx_sim *s, prx_cf32 *out, size_t n) {
  if (!s) return prx_fail(PRX_ERR_INVALID, "prx_sim_generate: NULL generator");
  if (n && !out) return prx_fail(PRX_ERR_INVALID, "prx_sim_generate: NULL output buffer");
  if (n > ((uint64_t)1 << 52) - s->pos)
    return prx_fail(PRX_ERR_INVALID, "prx_sim_generate: the stream would exceed 2^52 samples");
  while (n) {
    size_t m = n < SIM_BLOCK ? n : SIM_BLOCK;
    s->out = out;
    s->k0 = s->pos;
    s->n = m;
    prx_pool_run(s->pool, window_task, s, s->n_car); /* carriers' symbols are independent */
    prx_pool_run(s->pool, block_task, s, (m + SIM_TASK - 1) / SIM_TASK);
    s->pos += m;
    out += m;
    n -= m;
  }
  return PRX_OK;
}

prx_status prx_sim_take_bits(prx_sim *s, size_t c, uint8_t *bits, size_t max, size_t *n) {
  if (!s || !n) return prx_fail(PRX_ERR_INVALID, "prx_sim_take_bits: NULL argument");
  *n = 0;
  if (c >= s->n_car)
    return prx_fail(PRX_ERR_INVALID, "prx_sim_take_bits: carrier %zu of %zu does not exist", c,
                    s->n_car);
  if (max && !bits) return prx_fail(PRX_ERR_INVALID, "prx_sim_take_bits: NULL bit buffer");
  sim_carrier *car = &s->car[c];
  uint64_t avail = 2 * car->data - car->bits_taken;
  size_t cnt = avail < max ? (size_t)avail : max;
  for (size_t i = 0; i < cnt; i++) bits[i] = (uint8_t)sim_data_bit(car->seed, car->bits_taken + i);
  car->bits_taken += cnt;
  *n = cnt;
  return PRX_OK;
}

prx_status prx_sim_carrier_state(const prx_sim *s, size_t c, prx_sim_carrier_info *out) {
  if (!s || !out) return prx_fail(PRX_ERR_INVALID, "prx_sim_carrier_state: NULL argument");
  if (c >= s->n_car)
    return prx_fail(PRX_ERR_INVALID, "prx_sim_carrier_state: carrier %zu of %zu does not exist", c,
                    s->n_car);
  const sim_carrier *car = &s->car[c];
  out->samples_per_symbol = 1.0 / car->r;
  out->first_symbol = car->cfg.timing_offset / car->r;
  out->amplitude = car->amp;
  if (s->noise) {
    /* Es_c / N0 with Es_c = P_c / Rs_c and N0 = noise_var / fs */
    double es = car->amp * car->amp / car->cfg.symbol_rate;
    out->esn0_db = 10 * log10(es / (s->noise_var / s->fs));
  } else {
    out->esn0_db = INFINITY;
  }
  out->symbols = car->next;
  out->data_symbols = car->data;
  return PRX_OK;
}

double prx_sim_noise_variance(const prx_sim *s) { return s && s->noise ? s->noise_var : 0; }

uint64_t prx_sim_position(const prx_sim *s) { return s ? s->pos : 0; }
