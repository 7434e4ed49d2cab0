/* prx_mix_down: see mix.h. */
#include "mix.h"

#include <math.h>

/* frac(f m) in cycles, m < 2^53: f m = p + e exactly (p = fl(f m), e by fma), frac(p) exact */
static double phase_at(double f, uint64_t m) {
  double dm = (double)m, p = f * dm, e = fma(f, dm, -p);
  double v = (p - floor(p)) + e;
  return v - floor(v);
}

void prx_mix_down(const prx_cf32 *in, prx_cf32 *out, size_t n, double f, uint64_t n0) {
  const double two_pi = 6.283185307179586476925286766559;
  double wr = cos(two_pi * f), wi = -sin(two_pi * f); /* one sample's rotation */
  uint64_t m = n0 - n0 % PRX_MIX_ANCHOR;              /* the anchor at or before n0 */
  double pr = 0, pi = 0;
  for (uint64_t k = m; k < n0 + n; k++) {
    if (k % PRX_MIX_ANCHOR == 0) {
      double a = two_pi * phase_at(f, k);
      pr = cos(a);
      pi = -sin(a);
    }
    if (k >= n0) {
      double re = in[k - n0].re, im = in[k - n0].im;
      out[k - n0].re = (float)(re * pr - im * pi);
      out[k - n0].im = (float)(re * pi + im * pr);
    }
    double t = pr * wr - pi * wi;
    pi = pr * wi + pi * wr;
    pr = t;
  }
}
