/* Carrier detection: the public entry points (polyrx/detect.h), the configuration checks and
 * the order of the stages (docs/ARCHITECTURE.md, "Carrier detection"). */
#include "polyrx/detect.h"

#include "../core/internal.h"
#include "detect_internal.h"

#include <math.h>
#include <stdlib.h>

/* Symbols of the slowest carrier the detector needs to reach its documented accuracy. */
#define DETECT_MIN_SYMBOLS 800.0
/* Fewest samples whatever the rates (the power spectrum needs some averaging). */
#define DETECT_MIN_SAMPLES 65536.0
/* At most this many samples are used (the first ones): 128 MiB of spectrum. */
#define DETECT_MAX_SAMPLES ((size_t)1 << 24)
/* Points of the power spectrum across the slowest carrier's half-power width. */
#define DETECT_POINTS_PER_RS 16.0
/* Most candidate bands examined. */
#define DETECT_MAX_BANDS 4096

prx_detect_config prx_detect_config_default(void) {
  prx_detect_config c = {0};
  c.min_esn0_db = 8.0;
  return c;
}

/* The configuration with its zero fields replaced by their defaults, checked. */
static prx_status resolve(const prx_detect_config *cfg, prx_detect_config *out) {
  if (!cfg) return prx_fail(PRX_ERR_INVALID, "detect: config is NULL");
  prx_detect_config c = *cfg;
  if (!(isfinite(c.sample_rate) && c.sample_rate > 0))
    return prx_fail(PRX_ERR_INVALID, "detect: sample_rate must be > 0, got %g", c.sample_rate);
  if (!(isfinite(c.min_symbol_rate) && c.min_symbol_rate >= 0))
    return prx_fail(PRX_ERR_INVALID, "detect: min_symbol_rate must be >= 0, got %g",
                    c.min_symbol_rate);
  if (!(isfinite(c.max_symbol_rate) && c.max_symbol_rate >= 0))
    return prx_fail(PRX_ERR_INVALID, "detect: max_symbol_rate must be >= 0, got %g",
                    c.max_symbol_rate);
  if (c.min_symbol_rate == 0) c.min_symbol_rate = c.sample_rate / 8192;
  if (c.max_symbol_rate == 0) c.max_symbol_rate = c.sample_rate / 4;
  if (c.max_symbol_rate > c.sample_rate / 2)
    return prx_fail(PRX_ERR_INVALID, "detect: max_symbol_rate %g exceeds sample_rate / 2 = %g",
                    c.max_symbol_rate, c.sample_rate / 2);
  /* 800 symbols of the slowest carrier stay within the samples used */
  if (c.min_symbol_rate < c.sample_rate / 16384)
    return prx_fail(PRX_ERR_INVALID,
                    "detect: min_symbol_rate %g is below sample_rate / 16384 = %g (decimate "
                    "the capture first)",
                    c.min_symbol_rate, c.sample_rate / 16384);
  if (c.min_symbol_rate > c.max_symbol_rate)
    return prx_fail(PRX_ERR_INVALID, "detect: min_symbol_rate %g exceeds max_symbol_rate %g",
                    c.min_symbol_rate, c.max_symbol_rate);
  if (!isfinite(c.min_esn0_db))
    return prx_fail(PRX_ERR_INVALID, "detect: min_esn0_db must be finite, got %g", c.min_esn0_db);
  if (c.max_carriers == 0) c.max_carriers = 256;
  if (c.threads < 0)
    return prx_fail(PRX_ERR_INVALID, "detect: threads must be >= 0, got %d", c.threads);
  if (!(isfinite(c.flat_bandwidth) && c.flat_bandwidth >= 0 && c.flat_bandwidth <= c.sample_rate))
    return prx_fail(PRX_ERR_INVALID, "detect: flat_bandwidth must be in [0, sample_rate], got %g",
                    c.flat_bandwidth);
  *out = c;
  return PRX_OK;
}

size_t prx_detect_min_samples(const prx_detect_config *cfg) {
  prx_detect_config c = {0};
  if (resolve(cfg, &c) != PRX_OK) return 0;
  double n = ceil(DETECT_MIN_SYMBOLS * c.sample_rate / c.min_symbol_rate);
  return (size_t)(n > DETECT_MIN_SAMPLES ? n : DETECT_MIN_SAMPLES);
}

/* The band of a carrier at a known place (prx_detect_at): its half-power width Rs, its bins
 * to the edges of its roll-off and 5 % beyond (its neighbours' edges come in where they overlap;
 * they move neither line; across fs/2 the bins wrap, as the spectrum does), the global floor. */
static detect_band band_at(const detect_spectrum *s, const prx_detect_carrier *a) {
  const double df = s->fs / (double)s->n, half = 0.525 * (1 + a->rolloff) * a->symbol_rate / df;
  detect_band b = {0};
  b.centre = a->freq / df + (double)(s->n / 2);
  b.width = a->symbol_rate / df;
  b.lo = b.limit_lo = b.centre - half; /* (bins wrap: a carrier at the band's edge) */
  b.hi = b.limit_hi = b.centre + half;
  b.floor = s->noise_bin;
  return b;
}

/* The second stage over bands: those the search found (prx_detect_carriers: rates in the
 * configuration's range, the lines refined), or those of the places given (prx_detect_at: each
 * place's own rate, the lines at their bins: a verdict). */
typedef struct {
  const detect_spectrum *spec;
  const detect_band *bands;     /* the bands found, or NULL: */
  const prx_detect_carrier *at; /* ... the places given */
  const prx_detect_config *cfg;
  prx_detect_carrier *found;
  int *verdict; /* detect_estimate's: 1 carrier, 0 none, -1 out of memory */
} estimate_job;

static void estimate_task(void *ctx, size_t i) {
  estimate_job *j = ctx;
  if (j->bands) {
    j->verdict[i] = detect_estimate(j->spec, &j->bands[i], j->cfg->min_symbol_rate,
                                    j->cfg->max_symbol_rate, 1, &j->found[i]);
  } else {
    const detect_band b = band_at(j->spec, &j->at[i]);
    const double rs = j->at[i].symbol_rate;
    j->verdict[i] = detect_estimate(j->spec, &b, rs, rs, 0, &j->found[i]);
  }
}

/* The n estimates of job on a pool of the configuration's threads; job->verdict made here (the
 * caller frees it, also on failure). */
static prx_status estimate_each(estimate_job *job, size_t n) {
  prx_pool *pool = NULL;
  job->verdict = prx_alloc(n, sizeof *job->verdict);
  prx_status st = job->verdict ? prx_pool_create(job->cfg->threads, &pool) : PRX_ERR_NOMEM;
  if (st != PRX_OK) return prx_fail(st, "detect: no memory or threads for the estimators");
  prx_pool_run(pool, estimate_task, job, n);
  prx_pool_destroy(pool);
  for (size_t i = 0; i < n; i++)
    if (job->verdict[i] < 0)
      return prx_fail(PRX_ERR_NOMEM, "detect: out of memory while estimating a carrier");
  return PRX_OK;
}

static int stronger_first(const void *a, const void *b) {
  double x = ((const prx_detect_carrier *)a)->esn0_db, y = ((const prx_detect_carrier *)b)->esn0_db;
  return (x < y) - (x > y);
}

/* Estimates every band on the pool; writes the carriers, strongest first, each once. */
static prx_status estimate_all(const prx_detect_config *c, const detect_spectrum *spec,
                               const detect_band *bands, size_t n_bands, prx_detect_carrier *found,
                               size_t *n_out) {
  estimate_job job = {.spec = spec, .bands = bands, .cfg = c, .found = found};
  prx_status st = estimate_each(&job, n_bands);
  if (st != PRX_OK) {
    prx_free(job.verdict);
    return st;
  }
  size_t k = 0;
  for (size_t i = 0; i < n_bands; i++) {
    if (job.verdict[i] == 1 && found[i].esn0_db >= c->min_esn0_db) found[k++] = found[i];
  }
  prx_free(job.verdict);
  qsort(found, k, sizeof *found, stronger_first);
  /* one carrier once: a weaker one centred within half a symbol rate of a stronger goes */
  size_t kept = 0;
  for (size_t i = 0; i < k; i++) {
    int dup = 0;
    for (size_t j = 0; j < kept && !dup; j++)
      dup = fabs(found[i].freq - found[j].freq) <
            0.5 * fmax(found[i].symbol_rate, found[j].symbol_rate);
    if (!dup) found[kept++] = found[i];
  }
  *n_out = kept < c->max_carriers ? kept : c->max_carriers;
  return PRX_OK;
}

prx_status prx_detect_at(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                         const prx_detect_carrier *at, size_t n_at, prx_detect_carrier *out,
                         int *found) {
  prx_detect_config c = {0};
  prx_status st = resolve(cfg, &c);
  if (st != PRX_OK) return st;
  if (!x || (n_at && (!at || !out || !found)))
    return prx_fail(PRX_ERR_INVALID, "detect: NULL samples, places or outputs");
  if (n < PRX_DETECT_LEAST_SAMPLES)
    return prx_fail(PRX_ERR_INVALID, "detect: %zu samples are too few (at least %d)", n,
                    PRX_DETECT_LEAST_SAMPLES);
  double slowest = INFINITY;
  for (size_t i = 0; i < n_at; i++) {
    const prx_detect_carrier *a = &at[i];
    if (!(isfinite(a->freq) && fabs(a->freq) <= c.sample_rate / 2 && a->symbol_rate > 0 &&
          a->symbol_rate <= c.sample_rate / 2 && a->rolloff >= 0 && a->rolloff <= 1))
      return prx_fail(PRX_ERR_INVALID,
                      "detect: place %zu (%g Hz, %g Bd, roll-off %g) is not a carrier in the "
                      "band at %g Hz",
                      i, a->freq, a->symbol_rate, a->rolloff, c.sample_rate);
    slowest = fmin(slowest, a->symbol_rate);
    found[i] = 0;
  }
  if (!n_at) return PRX_OK;
  size_t used = detect_fft_size_down(n < DETECT_MAX_SAMPLES ? n : DETECT_MAX_SAMPLES);
  detect_spectrum spec;
  st = detect_spectrum_make(x, used, c.sample_rate, slowest / DETECT_POINTS_PER_RS,
                            c.flat_bandwidth, &spec);
  if (st != PRX_OK) return st;
  estimate_job job = {.spec = &spec, .at = at, .cfg = &c, .found = out};
  st = estimate_each(&job, n_at);
  for (size_t i = 0; i < n_at && st == PRX_OK; i++)
    found[i] = job.verdict[i] == 1 && out[i].esn0_db >= c.min_esn0_db;
  prx_free(job.verdict);
  detect_spectrum_free(&spec);
  return st;
}

prx_status prx_detect_carriers(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                               prx_detect_carrier *out, size_t max_out, size_t *n_found) {
  prx_detect_config c = {0};
  prx_status st = resolve(cfg, &c);
  if (st != PRX_OK) return st;
  if (!x || !n_found || (max_out && !out))
    return prx_fail(PRX_ERR_INVALID, "detect: NULL samples, output or count");
  *n_found = 0;
  if (n < PRX_DETECT_LEAST_SAMPLES)
    return prx_fail(PRX_ERR_INVALID,
                    "detect: %zu samples are too few (at least %d, %zu for the "
                    "documented accuracy)",
                    n, PRX_DETECT_LEAST_SAMPLES, prx_detect_min_samples(&c));
  size_t used = detect_fft_size_down(n < DETECT_MAX_SAMPLES ? n : DETECT_MAX_SAMPLES);
  detect_spectrum spec;
  st = detect_spectrum_make(x, used, c.sample_rate, c.min_symbol_rate / DETECT_POINTS_PER_RS,
                            c.flat_bandwidth, &spec);
  if (st != PRX_OK) return st;
  /* a band's level (1 + Es/N0 times the floor) must reach half of the weakest reported, and
   * stand out of the floor's own scatter */
  double threshold = 1 + fmax(0.5 * pow(10, c.min_esn0_db / 10), 6 / sqrt((double)spec.block));
  detect_band *bands = prx_alloc(DETECT_MAX_BANDS, sizeof *bands);
  prx_detect_carrier *found = prx_alloc(DETECT_MAX_BANDS, sizeof *found);
  if (!bands || !found) {
    st = prx_fail(PRX_ERR_NOMEM, "detect: out of memory for the candidates");
  } else {
    size_t n_bands = detect_bands(&spec, threshold, 0.6 * c.min_symbol_rate,
                                  1.3 * c.max_symbol_rate, bands, DETECT_MAX_BANDS);
    size_t k = 0;
    st = n_bands ? estimate_all(&c, &spec, bands, n_bands, found, &k) : PRX_OK;
    if (st == PRX_OK) {
      for (size_t i = 0; i < k && i < max_out; i++) out[i] = found[i];
      *n_found = k;
    }
  }
  prx_free(bands);
  prx_free(found);
  detect_spectrum_free(&spec);
  return st;
}
