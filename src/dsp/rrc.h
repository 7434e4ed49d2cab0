/* Root-raised-cosine pulse, shared by the generator (evaluated at arbitrary times, for
 * non-integer samples per symbol) and the demodulator's matched filter. */
#ifndef PRX_RRC_H
#define PRX_RRC_H

#include "polyrx/core.h"

#include <stddef.h>

/* The unit-energy RRC pulse p(t) for roll-off beta in (0, 1], t in symbol periods (T = 1):
 * integral p(t)^2 dt = 1, so p(0) = 1 - beta + 4 beta / pi. Exact at t = 0 and |t| = 1/(4 beta). */
double prx_rrc_pulse(double t, double beta);

/* A matched-filter FIR: n = 2 * ceil(span * sps / 2) + 1 taps of p((i - (n-1)/2) / sps), scaled so
 * that a unit-energy pulse filtered by it peaks at 1 at the symbol instant (sum p^2 / sps = 1).
 * Returns the tap count in *n (taps must hold span * sps + 2 values). */
prx_status prx_rrc_design(double sps, double beta, unsigned span, float *taps, size_t *n);

#endif
