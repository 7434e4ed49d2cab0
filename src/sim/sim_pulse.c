/* The generator's pulse: the RRC truncated to [-span/2, span/2), rescaled to unit energy,
 * tabulated at SIM_PHASES fractional symbol phases for linear interpolation. Evaluating the
 * pulse (sin, cos, a division) for every tap of every sample would cost ~30x more. */
#include "sim_internal.h"

#include "dsp/rrc.h"

#include <math.h>

size_t sim_pulse_taps(unsigned span) {
  return ((size_t)span + SIM_LANES - 1) / SIM_LANES * SIM_LANES;
}

/* Energy of the RRC pulse truncated to [-span/2, span/2] (Simpson, float64). */
static double pulse_energy(double beta, unsigned span) {
  /* Simpson's rule with 2048 intervals per symbol: the integrand is smooth (the removable
   * singularities are handled by prx_rrc_pulse) so the error is far below float precision */
  const size_t per = 2048;
  size_t m = (size_t)span * per;
  double h = 1.0 / per, a = -0.5 * span, sum = 0;
  for (size_t i = 0; i <= m; i++) {
    double p = prx_rrc_pulse(a + (double)i * h, beta);
    double wgt = (i == 0 || i == m) ? 1 : (i & 1) ? 4 : 2;
    sum += wgt * p * p;
  }
  return sum * h / 3;
}

void sim_pulse_table(double beta, unsigned span, float *table) {
  size_t taps = sim_pulse_taps(span), stride = 2 * taps, pad = taps - span;
  double scale = 1.0 / sqrt(pulse_energy(beta, span)), half = 0.5 * span;
  double row[2][256];
  /* entry i (after the zero padding) multiplies symbol nw - span + 1 + i: its pulse argument is
   * mu + span - 1 - i - span/2, in [-span/2, span/2) for mu in [0, 1). Row SIM_PHASES (mu = 1) is
   * the limit from the left, used only as the upper end of the last interval's slope. */
  for (size_t r = 0; r <= SIM_PHASES; r++) {
    double mu = (double)r / SIM_PHASES;
    double *cur = row[r & 1], *prev = row[(r & 1) ^ 1];
    for (size_t i = 0; i < span; i++)
      cur[i] = scale * prx_rrc_pulse(mu + half - 1 - (double)i, beta);
    if (r > 0) {
      float *dst = table + (r - 1) * stride;
      for (size_t i = 0; i < pad; i++) dst[i] = dst[taps + i] = 0;
      for (size_t i = 0; i < span; i++) {
        dst[pad + i] = (float)prev[i];
        dst[taps + pad + i] = (float)(cur[i] - prev[i]);
      }
    }
  }
}
