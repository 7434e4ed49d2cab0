/* Carrier detection: the public entry points (polyrx/detect.h), the configuration checks and
 * the order of the stages (docs/ARCHITECTURE.md, "Carrier detection"). */
#include "polyrx/detect.h"

#include "../core/internal.h"

#include <math.h>

/* Symbols of the slowest carrier the detector needs to reach its documented accuracy. */
#define DETECT_MIN_SYMBOLS 1000.0
/* Fewest samples whatever the rates (the power spectrum needs some averaging). */
#define DETECT_MIN_SAMPLES 65536.0

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
  if (c.min_symbol_rate < c.sample_rate / 65536)
    return prx_fail(PRX_ERR_INVALID,
                    "detect: min_symbol_rate %g is below sample_rate / 65536 = %g (decimate "
                    "the capture first)",
                    c.min_symbol_rate, c.sample_rate / 65536);
  if (c.min_symbol_rate > c.max_symbol_rate)
    return prx_fail(PRX_ERR_INVALID, "detect: min_symbol_rate %g exceeds max_symbol_rate %g",
                    c.min_symbol_rate, c.max_symbol_rate);
  if (!isfinite(c.min_esn0_db))
    return prx_fail(PRX_ERR_INVALID, "detect: min_esn0_db must be finite, got %g", c.min_esn0_db);
  if (c.max_carriers == 0) c.max_carriers = 256;
  if (c.threads < 0)
    return prx_fail(PRX_ERR_INVALID, "detect: threads must be >= 0, got %d", c.threads);
  *out = c;
  return PRX_OK;
}

size_t prx_detect_min_samples(const prx_detect_config *cfg) {
  prx_detect_config c;
  if (resolve(cfg, &c) != PRX_OK) return 0;
  double n = ceil(DETECT_MIN_SYMBOLS * c.sample_rate / c.min_symbol_rate);
  return (size_t)(n > DETECT_MIN_SAMPLES ? n : DETECT_MIN_SAMPLES);
}

prx_status prx_detect_carriers(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                               prx_detect_carrier *out, size_t max_out, size_t *n_found) {
  prx_detect_config c;
  prx_status st = resolve(cfg, &c);
  if (st != PRX_OK) return st;
  if (!x || !n_found || (max_out && !out))
    return prx_fail(PRX_ERR_INVALID, "detect: NULL samples, output or count");
  *n_found = 0;
  (void)n;
  return prx_fail(PRX_ERR_UNSUPPORTED, "detect: not implemented yet");
}
