/* RRC pulse: unit energy, Nyquist (the pulse convolved with itself is zero at nonzero symbol
 * instants), and the matched-filter normalisation, all checked by float64 numerical integration. */
#include "testutil.h"

#include "dsp/rrc.h"

#include <math.h>

int main(void) {
  const double betas[] = {0.2, 0.25, 0.35, 0.5, 1.0};
  for (size_t b = 0; b < sizeof betas / sizeof betas[0]; b++) {
    double beta = betas[b], dt = 1.0 / 512, span = 40;
    double energy = 0, isi[4] = {0};
    for (double t = -span; t <= span; t += dt) {
      double p = prx_rrc_pulse(t, beta);
      CHECK(isfinite(p), "pulse not finite at t=%g beta=%g", t, beta);
      energy += p * p * dt;
      for (int k = 1; k <= 3; k++) isi[k] += p * prx_rrc_pulse(t - k, beta) * dt;
    }
    CHECK(fabs(energy - 1) < 2e-3, "beta %g: energy %g, expected 1", beta, energy);
    for (int k = 1; k <= 3; k++)
      CHECK(fabs(isi[k]) < 2e-3, "beta %g: ISI at %d symbols is %g", beta, k, isi[k]);
    /* continuity at the singular point 1/(4 beta) */
    double ts = 1 / (4 * beta);
    CHECK(fabs(prx_rrc_pulse(ts, beta) - prx_rrc_pulse(ts + 1e-6, beta)) < 1e-4,
          "beta %g: discontinuous at 1/(4 beta)", beta);
  }
  /* matched filter: pulse sampled at sps, filtered by the design, peaks at 1 */
  const double spss[] = {2, 4, 5.333};
  for (size_t i = 0; i < 3; i++) {
    float taps[400];
    size_t n;
    CHECK_OK(prx_rrc_design(spss[i], 0.35, 12, taps, &n));
    double peak = 0;
    double half = (n - 1) / 2.0;
    for (size_t k = 0; k < n; k++) peak += taps[k] * prx_rrc_pulse((half - k) / spss[i], 0.35);
    CHECK(fabs(peak - 1) < 0.02, "sps %g: matched-filter peak %g, expected 1", spss[i], peak);
  }
  float t[8];
  size_t n;
  CHECK(prx_rrc_design(4, 0, 12, t, &n) == PRX_ERR_INVALID, "roll-off 0 accepted");
  CHECK(prx_rrc_design(0.5, 0.35, 12, t, &n) == PRX_ERR_INVALID, "sps 0.5 accepted");
  return test_finish("test_rrc");
}
