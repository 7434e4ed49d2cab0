#include "chan_ref.h"

#include <math.h>
#include <stdlib.h>

void chan_ref(const prx_cf32 *x, size_t n, const float *h, size_t M, unsigned K, unsigned D,
              const unsigned *sel, size_t n_sel, size_t j0, size_t n_out, test_cf64 *out) {
  /* exact unit-circle table: the phase k (jD - m) / K is reduced modulo K in integers */
  double *cs = malloc(2 * K * sizeof *cs);
  for (unsigned r = 0; r < K; r++) {
    cs[2 * r] = cos(2 * M_PI * r / K);
    cs[2 * r + 1] = sin(2 * M_PI * r / K);
  }
  for (size_t s = 0; s < n_sel; s++) {
    uint64_t k = sel[s];
    for (size_t jj = 0; jj < n_out; jj++) {
      size_t j = j0 + jj;
      double re = 0, im = 0;
      for (size_t m = 0; m < M; m++) {
        int64_t t = (int64_t)(j * D) - (int64_t)m; /* input time */
        if (t < 0) break;
        if ((size_t)t >= n) continue;
        unsigned r = (unsigned)((k * (uint64_t)t) % K);
        /* x[t] * h[m] * exp(-i 2 pi r / K) */
        double xr = x[t].re * (double)h[m], xi = x[t].im * (double)h[m];
        re += xr * cs[2 * r] + xi * cs[2 * r + 1];
        im += xi * cs[2 * r] - xr * cs[2 * r + 1];
      }
      out[s * n_out + jj].re = re;
      out[s * n_out + jj].im = im;
    }
  }
  free(cs);
}
