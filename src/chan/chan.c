/* Channelizer front end: configuration checks, prototype design, counting of outputs and
 * dispatch to the backend. The arithmetic lives in chan_cpu.c and, in the CUDA module
 * (src/core/cuda_module.h), chan_cuda.cu. */
#include "chan_cuda.h"
#include "chan_internal.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PRX_CHAN_MAX_K (1u << 22)
#define PRX_CHAN_MAX_TAPS ((size_t)1 << 28)
/* the resource caps documented in polyrx/chan.h */
#define PRX_CHAN_MAX_MEMORY ((double)((uint64_t)1 << 32))
#define PRX_CHAN_MAX_WORK 16384.0
#define PRX_CHAN_MAX_FILL_WORK ((double)((uint64_t)1 << 34))

prx_chan_config prx_chan_config_default(void) {
  prx_chan_config c;
  memset(&c, 0, sizeof c);
  c.channels = 1024;
  c.decimation = 0;
  c.taps_per_channel = 16;
  c.atten_db = 80.0;
  c.cutoff = 0.5;
  c.in_format = PRX_CF32;
  c.out_format = PRX_CF32;
  c.sample_rate = 1.0;
  c.center_freq = 0.0;
  c.threads = 0;
  c.backend = PRX_BACKEND_AUTO;
  return c;
}

/* Zeroth-order modified Bessel function of the first kind, by its power series (converges
 * quickly for the beta values of filter design, beta < 40). */
static double bessel_i0(double x) {
  double sum = 1, term = 1, q = x * x / 4;
  for (int k = 1; k < 500; k++) {
    term *= q / ((double)k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/* Kaiser's empirical beta for a stop-band attenuation in dB. */
static double kaiser_beta(double atten_db) {
  if (atten_db > 50) return 0.1102 * (atten_db - 8.7);
  if (atten_db >= 21) return 0.5842 * pow(atten_db - 21, 0.4) + 0.07886 * (atten_db - 21);
  return 0;
}

prx_status prx_design_kaiser(size_t n, double atten_db, double cutoff, float *taps) {
  if (!taps) return prx_fail(PRX_ERR_INVALID, "prx_design_kaiser: NULL taps");
  if (n < 1 || n > PRX_CHAN_MAX_TAPS)
    return prx_fail(PRX_ERR_INVALID, "filter length must be in 1..%zu, got %zu", PRX_CHAN_MAX_TAPS,
                    n);
  if (!(atten_db > 0 && atten_db <= 300))
    return prx_fail(PRX_ERR_INVALID, "stop-band attenuation must be in (0, 300] dB, got %g",
                    atten_db);
  if (!(cutoff > 0 && cutoff < 0.5))
    return prx_fail(PRX_ERR_INVALID, "cut-off must be in (0, 0.5) cycles/sample, got %g", cutoff);
  double beta = kaiser_beta(atten_db), i0b = bessel_i0(beta), mid = (n - 1) / 2.0, sum = 0;
  double *h = malloc(n * sizeof *h);
  if (!h) return prx_fail(PRX_ERR_NOMEM, "cannot allocate %zu filter taps", n);
  /* the first half (and the middle tap) computed, the second half mirrored: tap n - 1 - i has
   * t exactly -t of tap i (both are whole or half numbers), and every step below is odd or even
   * in t to the bit (the products and quotients by t change sign only, sin is odd, r * r is
   * even), so the mirror holds the values the loop would compute; the Bessel series of each tap
   * is the design's cost (16384 taps at K = 1024: ~0.5 ms) */
  for (size_t i = 0; i < n - i; i++) {
    double t = i - mid;
    double sinc = t == 0 ? 2 * cutoff : sin(2 * M_PI * cutoff * t) / (M_PI * t);
    double r = n > 1 ? t / mid : 0; /* -1 .. 1 across the window */
    double w = bessel_i0(beta * sqrt(fmax(0, 1 - r * r))) / i0b;
    h[i] = sinc * w;
    h[n - 1 - i] = h[i];
  }
  for (size_t i = 0; i < n; i++) sum += h[i]; /* in tap order: the sum's rounding depends on it */
  if (!(fabs(sum) > 1e-12)) {
    free(h);
    return prx_fail(PRX_ERR_INVALID, "filter of %zu taps with cut-off %g has no DC gain", n,
                    cutoff);
  }
  for (size_t i = 0; i < n; i++) taps[i] = (float)(h[i] / sum);
  free(h);
  return PRX_OK;
}

static prx_status check_config(const prx_chan_config *cfg, unsigned *K, unsigned *D, size_t *M) {
  *K = cfg->channels;
  if (*K < 1 || *K > PRX_CHAN_MAX_K)
    return prx_fail(PRX_ERR_INVALID, "channels must be in 1..%u, got %u", PRX_CHAN_MAX_K, *K);
  *D = cfg->decimation ? cfg->decimation : *K / 2;
  if (cfg->decimation == 0 && *K % 2)
    return prx_fail(PRX_ERR_INVALID, "channels must be even for 2x oversampling (D = K/2), got %u",
                    *K);
  if (*D == 0 || *K % *D || (*K / *D != 1 && *K / *D != 2))
    return prx_fail(PRX_ERR_INVALID,
                    "decimation must be K/2 or K (K/D = 2 or 1), got D = %u for K = %u", *D, *K);
  if (cfg->taps) {
    if (cfg->n_taps < 1 || cfg->n_taps > PRX_CHAN_MAX_TAPS)
      return prx_fail(PRX_ERR_INVALID, "prototype length must be in 1..%zu, got %zu",
                      PRX_CHAN_MAX_TAPS, cfg->n_taps);
    for (size_t i = 0; i < cfg->n_taps; i++)
      if (!isfinite(cfg->taps[i]))
        return prx_fail(PRX_ERR_INVALID, "prototype tap %zu is not finite", i);
    *M = cfg->n_taps;
  } else {
    if (cfg->taps_per_channel < 1 || cfg->taps_per_channel > 4096)
      return prx_fail(PRX_ERR_INVALID, "taps per channel must be in 1..4096, got %u",
                      cfg->taps_per_channel);
    *M = (size_t)*K * cfg->taps_per_channel;
    if (*M > PRX_CHAN_MAX_TAPS)
      return prx_fail(PRX_ERR_INVALID, "prototype of %u x %u taps is too long (max %zu)", *K,
                      cfg->taps_per_channel, PRX_CHAN_MAX_TAPS);
    if (!(cfg->cutoff > 0 && cfg->cutoff / *K < 0.5))
      return prx_fail(PRX_ERR_INVALID, "cut-off must be in (0, K/2) channel spacings, got %g",
                      cfg->cutoff);
    if (!(cfg->atten_db > 0 && cfg->atten_db <= 300))
      return prx_fail(PRX_ERR_INVALID, "stop-band attenuation must be in (0, 300] dB, got %g",
                      cfg->atten_db);
  }
  if (cfg->select) {
    if (cfg->n_select < 1 || cfg->n_select > (size_t)64 * PRX_CHAN_MAX_K)
      return prx_fail(PRX_ERR_INVALID, "channel selection must name 1 or more channels, got %zu",
                      cfg->n_select);
    for (size_t i = 0; i < cfg->n_select; i++)
      if (cfg->select[i] >= *K)
        return prx_fail(PRX_ERR_INVALID, "selected channel %u does not exist (K = %u)",
                        cfg->select[i], *K);
  }
  if (cfg->in_format != PRX_CF32 && cfg->in_format != PRX_CI16 && cfg->in_format != PRX_CI8 &&
      cfg->in_format != PRX_CU8)
    return prx_fail(PRX_ERR_INVALID, "input format must be cf32, ci16, ci8 or cu8 (got %d)",
                    (int)cfg->in_format);
  if (cfg->out_format != PRX_CF32 && cfg->out_format != PRX_CF16 && cfg->out_format != PRX_CI16)
    return prx_fail(PRX_ERR_INVALID, "output format must be cf32, cf16 or ci16 (got %d)",
                    (int)cfg->out_format);
  if (!(cfg->sample_rate > 0 && isfinite(cfg->sample_rate)))
    return prx_fail(PRX_ERR_INVALID, "sample rate must be positive, got %g", cfg->sample_rate);
  if (!isfinite(cfg->center_freq))
    return prx_fail(PRX_ERR_INVALID, "centre frequency must be finite");
  if (cfg->layout != PRX_CHAN_ROWS && cfg->layout != PRX_CHAN_FRAMES)
    return prx_fail(PRX_ERR_INVALID, "layout must be PRX_CHAN_ROWS or PRX_CHAN_FRAMES, got %d",
                    (int)cfg->layout);
  if (cfg->threads < 0 || cfg->threads > 1024)
    return prx_fail(PRX_ERR_INVALID, "threads must be in 0..1024 (0: all cores), got %d",
                    cfg->threads);
  if (cfg->block_samples > ((size_t)1 << 31))
    return prx_fail(PRX_ERR_INVALID, "block_samples %zu is absurd (max 2^31)", cfg->block_samples);
  return PRX_OK;
}

/* The machine's physical memory in bytes (0 when unknown). */
static double physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (double)pages * (double)size : 0;
}

/* The resource estimate of polyrx/chan.h, checked against its caps before anything is
 * allocated, so that a configuration no machine should run is refused at once. */
static prx_status check_resources(const prx_chan_config *cfg, unsigned K, unsigned D, size_t M) {
  double block = cfg->block_samples ? (double)cfg->block_samples
                                    : fmin(4.0 * (double)M, (double)((size_t)1 << 22));
  double bytes = 28.0 * (double)M + 8.0 * block;
  double phys = physical_memory(), cap = PRX_CHAN_MAX_MEMORY;
  if (phys > 0 && phys / 2 < cap) cap = phys / 2;
  if (bytes > cap)
    return prx_fail(PRX_ERR_INVALID,
                    "a channelizer of K = %u with a prototype of %zu taps needs about %.3g GiB of "
                    "memory, more than the limit of %.3g GiB (4 GiB, or half of this machine's "
                    "memory when less): use fewer channels or fewer taps per channel",
                    K, M, bytes / (1 << 30), cap / (1 << 30));
  double work = (double)M / D + (double)K / D * log2((double)K);
  if (work > PRX_CHAN_MAX_WORK)
    return prx_fail(PRX_ERR_INVALID,
                    "a prototype of %zu taps at decimation %u costs about %.0f multiply-adds per "
                    "input sample, more than the limit of %.0f: use a shorter prototype",
                    M, D, work, PRX_CHAN_MAX_WORK);
  if ((double)M * work > PRX_CHAN_MAX_FILL_WORK)
    return prx_fail(PRX_ERR_INVALID,
                    "filling a prototype of %zu taps (the start and the flush of every stream) "
                    "costs about 2^%.1f multiply-adds, more than the limit of 2^34: use fewer "
                    "channels or fewer taps per channel",
                    M, log2((double)M * work));
  return PRX_OK;
}

static prx_status pick_backend(const prx_chan_config *cfg, prx_chan *c) {
  const prx_cuda_module *m;
  prx_status st = prx_cuda_module_pick(cfg->backend, &m);
  if (st) return st;
  c->backend = m ? PRX_BACKEND_CUDA : PRX_BACKEND_CPU;
  c->ops = m ? m->chan->ops : &prx_chan_cpu_ops;
  if (cfg->out_format != PRX_CF32 && c->backend != PRX_BACKEND_CUDA)
    return prx_fail(PRX_ERR_UNSUPPORTED, "%s output needs the CUDA backend",
                    cfg->out_format == PRX_CF16 ? "cf16" : "ci16");
  if (cfg->power_sums && c->backend != PRX_BACKEND_CUDA)
    return prx_fail(PRX_ERR_UNSUPPORTED, "power sums on the device need the CUDA backend");
  if (cfg->layout == PRX_CHAN_FRAMES && c->backend != PRX_BACKEND_CPU)
    return prx_fail(PRX_ERR_UNSUPPORTED, "the frames layout needs the CPU backend");
  return PRX_OK;
}

prx_status prx_chan_create(const prx_chan_config *cfg, prx_chan **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_chan_create: NULL output pointer");
  *out = NULL;
  if (!cfg) return prx_fail(PRX_ERR_INVALID, "prx_chan_create: NULL configuration");
  unsigned K = 0, D = 0;
  size_t M = 0;
  prx_status st = check_config(cfg, &K, &D, &M);
  if (!st) st = check_resources(cfg, K, D, M);
  if (st) return st;
  prx_chan *c = calloc(1, sizeof *c);
  if (!c) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a channelizer");
  /* the backend choice only reads the config: refuse an impossible one before the design */
  if ((st = pick_backend(cfg, c))) {
    free(c);
    return st;
  }
  c->cfg = *cfg;
  c->K = K;
  c->D = D;
  c->M = M;
  c->cfg.decimation = D;
  c->n_sel = cfg->select ? cfg->n_select : K;
  c->taps = prx_alloc(M, sizeof *c->taps);
  c->select = prx_alloc(c->n_sel, sizeof *c->select);
  c->power_to = UINT64_MAX;
  if (cfg->power_sums) c->power = calloc(c->n_sel, sizeof *c->power);
  if (!c->taps || !c->select || (cfg->power_sums && !c->power)) {
    prx_chan_destroy(c);
    return prx_fail(PRX_ERR_NOMEM,
                    "cannot allocate the prototype (%zu taps), the channel list or the power sums",
                    M);
  }
  for (size_t s = 0; s < c->n_sel; s++) c->select[s] = cfg->select ? cfg->select[s] : (unsigned)s;
  if (cfg->taps)
    memcpy(c->taps, cfg->taps, M * sizeof *c->taps);
  else if ((st = prx_design_kaiser(M, cfg->atten_db, cfg->cutoff / K, c->taps))) {
    prx_chan_destroy(c);
    return st;
  }
  c->cfg.taps = c->taps;
  c->cfg.n_taps = M;
  c->cfg.select = c->select;
  c->cfg.n_select = c->n_sel;
  if ((st = c->ops->create(c))) {
    c->ops = c->impl ? c->ops : NULL; /* create failed: nothing of the backend to destroy */
    prx_chan_destroy(c);
    return st;
  }
  *out = c;
  return PRX_OK;
}

void prx_chan_destroy(prx_chan *c) {
  if (!c) return;
  if (c->ops && c->impl) c->ops->destroy(c);
  prx_free(c->taps);
  prx_free(c->select);
  free(c->power);
  free(c);
}

prx_status prx_chan_power_window(prx_chan *c, uint64_t from, uint64_t to) {
  if (!c) return prx_fail(PRX_ERR_INVALID, "prx_chan_power_window: NULL object");
  if (!c->power) return prx_fail(PRX_ERR_UNSUPPORTED, "the channelizer forms no power sums");
  c->power_from = from;
  c->power_to = to;
  return PRX_OK;
}

prx_status prx_chan_power_take(prx_chan *c, double *sums, uint64_t *nonfinite,
                               uint64_t *saturated) {
  if (!c) return prx_fail(PRX_ERR_INVALID, "prx_chan_power_take: NULL object");
  if (!c->power) return prx_fail(PRX_ERR_UNSUPPORTED, "the channelizer forms no power sums");
  if (sums) memcpy(sums, c->power, c->n_sel * sizeof *sums);
  if (nonfinite) *nonfinite = c->power_nonfinite;
  if (saturated) *saturated = c->power_saturated;
  memset(c->power, 0, c->n_sel * sizeof *c->power);
  c->power_nonfinite = c->power_saturated = 0;
  return PRX_OK;
}

size_t prx_chan_output_count(const prx_chan *c, size_t n_in) {
  if (!c) return 0;
  return (size_t)(prx_ceil_div(c->consumed + n_in, c->D) - c->emitted);
}

size_t prx_chan_flush_count(const prx_chan *c) {
  if (!c || c->consumed == 0) return 0;
  return prx_chan_output_count(c, c->M - 1);
}

static prx_status check_out(const prx_chan *c, const void *out, size_t out_stride, size_t n_out) {
  if (n_out == 0) return PRX_OK;
  if (!out) return prx_fail(PRX_ERR_INVALID, "NULL output buffer for %zu outputs", n_out);
  if (c->cfg.layout == PRX_CHAN_FRAMES) {
    if (out_stride < c->n_sel)
      return prx_fail(PRX_ERR_CAPACITY, "frame pitch %zu is less than the %zu selected channels",
                      out_stride, c->n_sel);
    return PRX_OK;
  }
  if (out_stride < n_out)
    return prx_fail(PRX_ERR_CAPACITY, "output stride %zu is less than the %zu outputs per channel",
                    out_stride, n_out);
  return PRX_OK;
}

static void advance(prx_chan *c, size_t n_in, size_t n_out) {
  c->consumed += n_in;
  c->emitted += n_out;
}

prx_status prx_chan_execute(prx_chan *c, const void *in, size_t n_in, void *out, size_t out_stride,
                            size_t *n_out) {
  if (n_out) *n_out = 0;
  if (!c || !n_out) return prx_fail(PRX_ERR_INVALID, "prx_chan_execute: NULL object or count");
  if (n_in == 0) return PRX_OK;
  if (!in) return prx_fail(PRX_ERR_INVALID, "prx_chan_execute: NULL input for %zu samples", n_in);
  size_t n = prx_chan_output_count(c, n_in);
  prx_status st = check_out(c, out, out_stride, n);
  if (st) return st;
  if ((st = c->ops->execute(c, in, n_in, out, out_stride, n))) return st;
  advance(c, n_in, n);
  *n_out = n;
  return PRX_OK;
}

prx_status prx_chan_execute_device(prx_chan *c, const void *d_in, size_t n_in, void *d_out,
                                   size_t out_stride, size_t *n_out, void *stream) {
  if (n_out) *n_out = 0;
  if (!c || !n_out)
    return prx_fail(PRX_ERR_INVALID, "prx_chan_execute_device: NULL object or count");
  if (!c->ops->execute_device)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "device-resident execution needs the CUDA backend (this "
                    "channelizer runs on the %s)",
                    prx_backend_name(c->backend));
  if (c->cfg.power_sums || c->cfg.out_format == PRX_CI16)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "device-resident execution writes cf32 or cf16 and forms no power sums");
  if (n_in == 0) return PRX_OK;
  if (!d_in) return prx_fail(PRX_ERR_INVALID, "prx_chan_execute_device: NULL input");
  size_t n = prx_chan_output_count(c, n_in);
  prx_status st = check_out(c, d_out, out_stride, n);
  if (st) return st;
  if ((st = c->ops->execute_device(c, d_in, n_in, d_out, out_stride, n, stream))) return st;
  advance(c, n_in, n);
  *n_out = n;
  return PRX_OK;
}

prx_status prx_chan_flush(prx_chan *c, void *out, size_t out_stride, size_t *n_out) {
  if (n_out) *n_out = 0;
  if (!c || !n_out) return prx_fail(PRX_ERR_INVALID, "prx_chan_flush: NULL object or count");
  size_t n = prx_chan_flush_count(c);
  prx_status st = check_out(c, out, out_stride, n);
  if (st) return st;
  if (n && (st = c->ops->execute_zeros(c, c->M - 1, out, out_stride, n))) return st;
  *n_out = n;
  prx_chan_reset(c);
  return PRX_OK;
}

prx_status prx_chan_execute_zeros(prx_chan *c, size_t n_zeros, void *out, size_t out_stride,
                                  size_t *n_out) {
  if (n_out) *n_out = 0;
  if (!c || !n_out)
    return prx_fail(PRX_ERR_INVALID, "prx_chan_execute_zeros: NULL object or count");
  if (n_zeros == 0) return PRX_OK;
  size_t n = prx_chan_output_count(c, n_zeros);
  prx_status st = check_out(c, out, out_stride, n);
  if (st) return st;
  if ((st = c->ops->execute_zeros(c, n_zeros, out, out_stride, n))) return st;
  advance(c, n_zeros, n);
  *n_out = n;
  return PRX_OK;
}

void prx_chan_reset(prx_chan *c) {
  if (!c) return;
  c->consumed = 0;
  c->emitted = 0;
  c->ops->reset(c);
}

unsigned prx_chan_channels(const prx_chan *c) { return c ? c->K : 0; }
unsigned prx_chan_decimation(const prx_chan *c) { return c ? c->D : 0; }
size_t prx_chan_n_outputs(const prx_chan *c) { return c ? c->n_sel : 0; }
double prx_chan_output_rate(const prx_chan *c) { return c ? c->cfg.sample_rate / c->D : 0; }
double prx_chan_group_delay(const prx_chan *c) { return c ? (c->M - 1) / 2.0 : 0; }
prx_backend prx_chan_backend(const prx_chan *c) { return c ? c->backend : PRX_BACKEND_CPU; }

const float *prx_chan_taps(const prx_chan *c, size_t *n_taps) {
  if (n_taps) *n_taps = c ? c->M : 0;
  return c ? c->taps : NULL;
}

prx_status prx_chan_channel_info(const prx_chan *c, size_t s, prx_chan_channel *out) {
  if (!c || !out) return prx_fail(PRX_ERR_INVALID, "prx_chan_channel_info: NULL argument");
  if (s >= c->n_sel)
    return prx_fail(PRX_ERR_INVALID, "output %zu does not exist (%zu selected)", s, c->n_sel);
  unsigned k = c->select[s];
  double off = (double)k / c->K; /* in [0, 1): wrap the upper half to negative frequencies */
  if (off >= 0.5) off -= 1.0;
  out->index = k;
  out->center_freq = c->cfg.center_freq + off * c->cfg.sample_rate;
  return PRX_OK;
}

/* Reads an unsigned decimal number at *p; advances *p. */
static int read_index(const char **p, unsigned long *v) {
  if (!isdigit((unsigned char)**p)) return -1;
  errno = 0;
  char *end;
  *v = strtoul(*p, &end, 10);
  if (errno) return -1;
  *p = end;
  return 0;
}

prx_status prx_chan_parse_list(const char *text, unsigned K, unsigned **out, size_t *n_out) {
  if (!text || !out || !n_out)
    return prx_fail(PRX_ERR_INVALID, "prx_chan_parse_list: NULL argument");
  *out = NULL;
  *n_out = 0;
  if (K == 0) return prx_fail(PRX_ERR_INVALID, "cannot select channels among 0 channels");
  /* first pass: validate and count */
  size_t count = 0;
  for (const char *p = text;;) {
    unsigned long a = 0, b = 0;
    if (read_index(&p, &a))
      return prx_fail(PRX_ERR_FORMAT, "bad channel list '%s': expected a channel number at '%s'",
                      text, p);
    b = a;
    if (*p == '-') {
      p++;
      if (read_index(&p, &b))
        return prx_fail(PRX_ERR_FORMAT, "bad channel list '%s': expected a range end at '%s'", text,
                        p);
    }
    if (b < a) return prx_fail(PRX_ERR_FORMAT, "bad channel range %lu-%lu: end before start", a, b);
    if (b >= K)
      return prx_fail(PRX_ERR_INVALID, "channel %lu does not exist: there are %u channels (0-%u)",
                      b, K, K - 1);
    count += b - a + 1;
    if (count > (size_t)64 * PRX_CHAN_MAX_K)
      return prx_fail(PRX_ERR_INVALID, "channel list '%s' is too long", text);
    if (*p == '\0') break;
    if (*p != ',')
      return prx_fail(PRX_ERR_FORMAT, "bad channel list '%s': unexpected '%c'", text, *p);
    p++;
  }
  unsigned *list = malloc(count * sizeof *list);
  if (!list) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a list of %zu channels", count);
  size_t n = 0;
  for (const char *p = text;;) {
    unsigned long a = 0, b = 0;
    read_index(&p, &a);
    b = a;
    if (*p == '-') {
      p++;
      read_index(&p, &b);
    }
    for (unsigned long k = a; k <= b; k++) list[n++] = (unsigned)k;
    if (*p == '\0') break;
    p++;
  }
  *out = list;
  *n_out = n;
  return PRX_OK;
}

/* ---- the CUDA backend's internal hooks (chan_cuda.h), through the CUDA module ---- */

prx_status prx_chan_cuda_retune(prx_chan *c, prx_cuda_design design) {
  if (!c || c->backend != PRX_BACKEND_CUDA)
    return prx_fail(PRX_ERR_UNSUPPORTED, "prx_chan_cuda_retune needs a CUDA channelizer");
  return prx_cuda_module_get()->chan->retune(c, design);
}

int prx_chan_cuda_fused(const prx_chan *c, prx_fused_policy *pol) {
  if (!c || c->backend != PRX_BACKEND_CUDA) return 0;
  return prx_cuda_module_get()->chan->fused(c, pol);
}
