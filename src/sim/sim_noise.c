/* Counter-based complex Gaussian noise: sample k is a pure function of (seed, k), so the noise
 * is the same whatever the block sizes and however the samples are split among threads. */
#include "sim_internal.h"

#include <math.h>

void sim_noise(uint64_t seed, float sigma, uint64_t k0, size_t n, prx_cf32 *out) {
  const double two_pi = 6.283185307179586476925;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = sim_splitmix64(seed, k0 + i);
    /* Box-Muller: u1 in (0, 1] from the high half (offset by half a step, so log never sees 0:
     * the radius is at most sqrt(2 ln 2^33) = 6.8 sigma, reached with probability 1e-10),
     * the angle from the low half */
    float u1 = (float)(((double)(x >> 32) + 0.5) * 0x1p-32);
    float ang = (float)((double)(uint32_t)x * (two_pi * 0x1p-32));
    float r = sigma * sqrtf(-2.0f * logf(u1));
    float s, c;
    sincosf(ang, &s, &c);
    out[i].re = r * c;
    out[i].im = r * s;
  }
}
