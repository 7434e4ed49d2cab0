/* The channels' power sums of polyrx channelize in groups spanning several blocks (chan_power.h).
 */
#include "chan_power.h"

#include "dsp/finite.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* One output at an even (odd = 0) or odd position of its group. */
static void add_one(double c[4], prx_cf32 v, int odd) {
  c[2 * odd] += (double)v.re * v.re;
  c[2 * odd + 1] += (double)v.im * v.im;
}

/* The held output, then y[0..m) (m = k - 1), of one channel; y[m] becomes the held one. */
static void add_row(chan_power *p, const prx_cf32 *y, size_t k, const chan_power_group *g) {
  uint64_t q = g->count;
  if (g->holding) add_one(p->c, p->held, (int)(q++ & 1));
  for (size_t j = 0; j + 1 < k; j++, q++) add_one(p->c, y[j], (int)(q & 1));
  p->held = y[k - 1];
}

/* add_row of CHAN_POWER_ROWS channels side by side: 16 independent chains of additions in 8
 * two-lane vectors (one channel's chains alone are bound by the addition's latency), each
 * chain's additions in add_row's order, so the same bits. */
static void add_rows(chan_power *const *p, prx_cf32 *const *y, size_t k,
                     const chan_power_group *g) {
#ifdef __SSE2__
  uint64_t q = g->count;
  size_t m = k - 1, j = 0;
  if (g->holding) {
    for (size_t c = 0; c < CHAN_POWER_ROWS; c++) add_one(p[c]->c, p[c]->held, (int)(q & 1));
    q++;
  }
  if (m && (q & 1)) { /* the first output at an odd position: the pairs start after it */
    for (size_t c = 0; c < CHAN_POWER_ROWS; c++) add_one(p[c]->c, y[c][0], 1);
    j = 1;
  }
  __m128d a[CHAN_POWER_ROWS], b[CHAN_POWER_ROWS]; /* lanes (re, im) of even and of odd outputs */
  for (size_t c = 0; c < CHAN_POWER_ROWS; c++) {
    a[c] = _mm_loadu_pd(p[c]->c);
    b[c] = _mm_loadu_pd(p[c]->c + 2);
  }
  for (; j + 2 <= m; j += 2)
    for (size_t c = 0; c < CHAN_POWER_ROWS; c++) {
      __m128 v = _mm_loadu_ps(&y[c][j].re);
      __m128d even = _mm_cvtps_pd(v), odd = _mm_cvtps_pd(_mm_movehl_ps(v, v));
      a[c] = _mm_add_pd(a[c], _mm_mul_pd(even, even));
      b[c] = _mm_add_pd(b[c], _mm_mul_pd(odd, odd));
    }
  for (size_t c = 0; c < CHAN_POWER_ROWS; c++) {
    _mm_storeu_pd(p[c]->c, a[c]);
    _mm_storeu_pd(p[c]->c + 2, b[c]);
    if (j < m) add_one(p[c]->c, y[c][j], 0); /* the last of the pairs' positions: even */
    p[c]->held = y[c][m];
  }
#else
  for (size_t c = 0; c < CHAN_POWER_ROWS; c++) add_row(p[c], y[c], k, g);
#endif
}

void chan_power_add(chan_power *const *p, prx_cf32 *const *y, size_t n, size_t k,
                    const chan_power_group *g, uint64_t *zeroed) {
  if (!k) return;
  double before[CHAN_POWER_ROWS][4];
  prx_cf32 held[CHAN_POWER_ROWS];
  for (size_t c = 0; c < n; c++) {
    memcpy(before[c], p[c]->c, sizeof before[c]);
    held[c] = p[c]->held;
  }
  if (n == CHAN_POWER_ROWS)
    add_rows(p, y, k, g);
  else
    for (size_t c = 0; c < n; c++) add_row(p[c], y[c], k, g);
  for (size_t c = 0; c < n; c++) {
    const double *s = p[c]->c;
    if (isfinite(s[0] + s[1] + s[2] + s[3]) && isfinite(p[c]->held.re) && isfinite(p[c]->held.im))
      continue;
    /* a finite input can still overflow float32 in the filter (values near 3.4e38): such
     * outputs are zeroed like non-finite input (the sum of squares in double overflows only
     * through them) */
    memcpy(p[c]->c, before[c], sizeof before[c]);
    p[c]->held = held[c];
    *zeroed += prx_cf32_zero_nonfinite(y[c], k);
    add_row(p[c], y[c], k, g);
  }
}

void chan_power_next(chan_power_group *g, size_t k) {
  if (!k) return;
  g->count += (uint64_t)g->holding + k - 1;
  g->holding = 1;
}

double chan_power_end(chan_power *p, const chan_power_group *g) {
  double *c = p->c;
  if (g->holding) {
    prx_cf32 h = p->held;
    if (g->count & 1) /* at an odd position: the group's length is even */
      add_one(c, h, 1);
    else /* the odd last output of the group */
      c[0] += (double)h.re * h.re + (double)h.im * h.im;
  }
  double e = (c[0] + c[2]) + (c[1] + c[3]);
  c[0] = c[1] = c[2] = c[3] = 0;
  return e;
}

void chan_power_restart(chan_power_group *g) {
  g->count = 0;
  g->holding = 0;
}
