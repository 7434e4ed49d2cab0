/* Root-raised-cosine pulse and matched-filter design. */
#include "rrc.h"

#include "../core/internal.h"

#include <math.h>

double prx_rrc_pulse(double t, double beta) {
  if (fabs(t) < 1e-12) return 1.0 - beta + 4.0 * beta / M_PI;
  double q = 4.0 * beta * t;
  if (fabs(fabs(q) - 1.0) < 1e-9) {
    /* the removable singularity at |t| = 1/(4 beta) */
    return beta / sqrt(2.0) *
           ((1 + 2 / M_PI) * sin(M_PI / (4 * beta)) + (1 - 2 / M_PI) * cos(M_PI / (4 * beta)));
  }
  double num = sin(M_PI * t * (1 - beta)) + q * cos(M_PI * t * (1 + beta));
  double den = M_PI * t * (1 - q * q);
  return num / den;
}

prx_status prx_rrc_design(double sps, double beta, unsigned span, float *taps, size_t *n) {
  if (!taps || !n) return prx_fail(PRX_ERR_INVALID, "prx_rrc_design: NULL argument");
  if (!(sps >= 1 && sps < 1e6))
    return prx_fail(PRX_ERR_INVALID, "samples per symbol must be in [1, 1e6), got %g", sps);
  if (!(beta > 0 && beta <= 1))
    return prx_fail(PRX_ERR_INVALID, "RRC roll-off must be in (0, 1], got %g", beta);
  if (span < 1 || span > 1000)
    return prx_fail(PRX_ERR_INVALID, "RRC span must be in 1..1000 symbols, got %u", span);
  size_t half = (size_t)ceil(span * sps / 2.0);
  size_t len = 2 * half + 1;
  double energy = 0;
  for (size_t i = 0; i < len; i++) {
    double p = prx_rrc_pulse(((double)i - (double)half) / sps, beta);
    energy += p * p;
  }
  /* the pulse sampled at sps per symbol has energy ~ sps; normalise so that matched filtering of
   * the same pulse gives 1 at the peak */
  double scale = 1.0 / energy;
  for (size_t i = 0; i < len; i++)
    taps[i] = (float)(scale * prx_rrc_pulse(((double)i - (double)half) / sps, beta));
  *n = len;
  return PRX_OK;
}
