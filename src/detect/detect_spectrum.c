/* Carrier detection, first stage: the capture's spectrum, its power spectrum and noise floor,
 * and the candidate bands (one per carrier) found in it. */
#include "detect_internal.h"

#include "../core/internal.h"
#include "../dsp/fft_plan.h"
#include "../dsp/finite.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int smooth_7(size_t n) {
  static const size_t primes[] = {2, 3, 5, 7};
  for (size_t i = 0; i < 4; i++)
    while (n % primes[i] == 0) n /= primes[i];
  return n == 1;
}

size_t detect_fft_size_up(size_t n) {
  if (n < 1) n = 1;
  while (!smooth_7(n)) n++;
  return n;
}

size_t detect_fft_size_down(size_t n) {
  while (n > 1 && !smooth_7(n)) n--;
  return n ? n : 1;
}

prx_cf32 detect_bin(const detect_spectrum *s, long long u) {
  long long n = (long long)s->n, k = (u - n / 2) % n;
  return s->x[k < 0 ? k + n : k];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Quantile z (in standard deviations) of a mean of k exponential variables of mean 1
 * (Gamma(k, 1/k)), by Wilson and Hilferty's cube-root normal approximation. */
static double gamma_quantile(double k, double z) {
  double a = 1.0 - 1.0 / (9.0 * k) + z * sqrt(1.0 / (9.0 * k));
  return a > 0 ? a * a * a : 0;
}

/* The noise floor of m points of the power spectrum, each a mean of k bins (E|X_k|^2 of the
 * noise; sorts v). Carriers may fill most of the points, so neither their median nor their mean
 * will do: the floor starts from the 2nd percentile of the points read as the noise's 2nd
 * percentile (within a few standard deviations of the floor as long as a fifth of the points are
 * noise: it is then at most the noise's 10th percentile), and then is the median of the points
 * below 1 + 3.5 standard deviations of the noise above the floor (noise and the carriers' faint
 * edges only), read as the noise's median, until it settles. */
static double robust_floor(double *v, size_t m, double k) {
  qsort(v, m, sizeof *v, cmp_double);
  double f = v[m / 50] / gamma_quantile(k, -2.054);
  double median_ratio = gamma_quantile(k, 0), top = 1 + 3.5 / sqrt(k);
  for (int it = 0; it < 20 && f > 0; it++) {
    size_t lo = 0, hi = m; /* points below f top: v[0 .. lo) */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (v[mid] < f * top)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo < 2) break;
    double next = v[lo / 2] / median_ratio;
    int settled = fabs(next - f) <= 1e-4 * f;
    f = next;
    if (settled) break;
  }
  return f;
}

/* The floor from the points within flat / 2 Hz of the centre (0: all): a channel's edges, where
 * its filter takes the noise down, would pull it low (a quarter of the points of rx's channels,
 * whose noise falls from 0.8 of a spacing out: a 7 dB carrier read at 10.4 dB). */
static prx_status noise_floor(detect_spectrum *s, double flat) {
  size_t j0 = 0, j1 = s->n_psd;
  if (flat > 0) { /* point j covers centred bins [j block, (j + 1) block), bin n / 2 the centre */
    const double half = 0.5 * flat * (double)s->n / s->fs / (double)s->block,
                 mid = 0.5 * (double)s->n / (double)s->block;
    j0 = (size_t)fmax(0.0, ceil(mid - half));
    j1 = (size_t)fmin((double)s->n_psd, floor(mid + half));
    if (j1 < j0 + 8) j0 = 0, j1 = s->n_psd; /* too few to read a floor from */
  }
  double *v = prx_alloc(j1 - j0, sizeof *v);
  if (!v) return prx_fail(PRX_ERR_NOMEM, "detect: out of memory for the noise floor");
  memcpy(v, s->psd + j0, (j1 - j0) * sizeof *v);
  s->noise_bin = robust_floor(v, j1 - j0, (double)s->block);
  prx_free(v);
  return PRX_OK;
}

prx_status detect_spectrum_make(const prx_cf32 *x, size_t n, double fs, double resolution,
                                double flat, detect_spectrum *out) {
  memset(out, 0, sizeof *out);
  out->fs = fs;
  out->n = n;
  out->x = prx_alloc(n, sizeof *out->x);
  if (!out->x) return prx_fail(PRX_ERR_NOMEM, "detect: out of memory for %zu samples", n);
  /* non-finite samples zeroed, the mean (a receiver's DC offset) removed */
  memcpy(out->x, x, n * sizeof *x);
  prx_cf32_zero_nonfinite(out->x, n);
  double mre = 0, mim = 0;
  for (size_t i = 0; i < n; i++) mre += out->x[i].re, mim += out->x[i].im;
  mre /= (double)n, mim /= (double)n;
  /* raised-cosine tapers over the first and last n / 256 samples: the record's ends do not
   * join, and the jump would spread every strong carrier over the band */
  size_t taper = n / 256;
  for (size_t i = 0; i < n; i++) {
    size_t edge = i < n - 1 - i ? i : n - 1 - i;
    double w = edge < taper ? 0.5 - 0.5 * cos(M_PI * ((double)edge + 0.5) / (double)taper) : 1.0;
    out->x[i].re = (float)((out->x[i].re - mre) * w);
    out->x[i].im = (float)((out->x[i].im - mim) * w);
  }
  prx_status st = prx_fft_run((int)n, out->x, out->x, FFTW_FORWARD);
  if (st) {
    detect_spectrum_free(out);
    return st;
  }

  size_t block = (size_t)floor(resolution * (double)n / fs);
  out->block = block < 1 ? 1 : block;
  out->n_psd = n / out->block;
  out->psd = prx_alloc(out->n_psd, sizeof *out->psd);
  if (!out->psd) {
    detect_spectrum_free(out);
    return prx_fail(PRX_ERR_NOMEM, "detect: out of memory for the power spectrum");
  }
  size_t k = n - n / 2; /* FFT index of centred bin 0 */
  for (size_t j = 0; j < out->n_psd; j++) {
    double acc = 0;
    for (size_t b = 0; b < out->block; b++, k = k + 1 < n ? k + 1 : 0) {
      prx_cf32 v = out->x[k];
      acc += (double)v.re * v.re + (double)v.im * v.im;
    }
    out->psd[j] = acc / (double)out->block;
  }
  st = noise_floor(out, flat);
  if (st != PRX_OK) detect_spectrum_free(out);
  return st;
}

void detect_spectrum_free(detect_spectrum *s) {
  prx_free(s->x);
  prx_free(s->psd);
  s->x = NULL;
  s->psd = NULL;
}

/* ---- candidate bands ---- */

typedef struct {
  const detect_spectrum *s;
  const double *sm; /* the power spectrum smoothed by (1, 2, 1) / 4 */
  double floor;
  double min_width, max_width; /* centred bins */
  detect_band *out;
  size_t cap, count;
} band_search;

/* Centred bin of (fractional) power-spectrum point t. */
static double point_bin(const detect_spectrum *s, double t) {
  return (t + 0.5) * (double)s->block - 0.5;
}

/* Where the spectrum crosses `level` between points j and j + 1 (fractional point). */
static double crossing(const double *v, size_t j, double level) {
  double d = v[j + 1] - v[j];
  double t = d != 0 ? (level - v[j]) / d : 0.5;
  return (double)j + (t < 0 ? 0 : t > 1 ? 1 : t);
}

/* One carrier's segment [a, b] of points, with its neighbours' limits [la, lb]. */
static void add_band(band_search *q, size_t a, size_t b, size_t la, size_t lb) {
  const double *v = q->sm, f = q->floor;
  double top = 0, sum = 0;
  size_t cnt = 0;
  for (size_t j = a; j <= b; j++)
    if (v[j] > top) top = v[j];
  for (size_t j = a; j <= b; j++)
    if (v[j] - f > 0.5 * (top - f)) sum += v[j], cnt++;
  double level = sum / (double)cnt, half = f + 0.5 * (level - f), fade = f + 0.1 * (level - f);
  /* the outermost half-power crossings, walking in from the limits */
  size_t l = la, r = lb;
  while (l < b && v[l] < half) l++;
  while (r > a && v[r] < half) r--;
  if (l >= r) return;
  double tl = l > la ? crossing(v, l - 1, half) : (double)l;
  double tr = r < lb ? crossing(v, r, half) : (double)r;
  /* where the carrier fades into the floor */
  size_t fl = l, fr = r;
  while (fl > la && v[fl - 1] >= fade) fl--;
  while (fr < lb && v[fr + 1] >= fade) fr++;
  detect_band bd;
  double bl = point_bin(q->s, tl), br = point_bin(q->s, tr);
  bd.centre = 0.5 * (bl + br);
  bd.width = br - bl;
  if (bd.width < q->min_width || bd.width > q->max_width) return;
  bd.limit_lo = point_bin(q->s, (double)la - 0.5);
  bd.limit_hi = point_bin(q->s, (double)lb + 0.5);
  double margin = 0.05 * bd.width + (double)q->s->block;
  bd.lo = point_bin(q->s, (double)fl - 0.5) - margin;
  bd.hi = point_bin(q->s, (double)fr + 0.5) + margin;
  /* at least the band to 0.55 Rs from the centre, at most to the edge of roll-off 1 */
  if (bd.lo > bd.centre - 0.55 * bd.width) bd.lo = bd.centre - 0.55 * bd.width;
  if (bd.hi < bd.centre + 0.55 * bd.width) bd.hi = bd.centre + 0.55 * bd.width;
  if (bd.lo < bd.centre - bd.width) bd.lo = bd.centre - bd.width;
  if (bd.hi > bd.centre + bd.width) bd.hi = bd.centre + bd.width;
  if (bd.lo < bd.limit_lo) bd.lo = bd.limit_lo;
  if (bd.hi > bd.limit_hi) bd.hi = bd.limit_hi;
  if (q->count < q->cap) q->out[q->count++] = bd;
}

/* Splits the run [a, b] at its deepest dip (a point well below the peaks on both sides: two
 * carriers side by side), recursively; la, lb are the run's limits. */
static void split_run(band_search *q, size_t a, size_t b, size_t la, size_t lb, int depth) {
  const double *v = q->sm, f = q->floor;
  size_t best = 0;
  double best_ratio = 0.35; /* a dip to 35 % of the lower peak above the floor, or deeper */
  if (b > a + 4 && depth < 64) {
    size_t len = b - a + 1;
    double *left = prx_alloc(len, sizeof *left), *right = prx_alloc(len, sizeof *right);
    if (left && right) {
      for (size_t i = 0; i < len; i++) left[i] = fmax(i ? left[i - 1] : 0, v[a + i]);
      for (size_t i = len; i-- > 0;) right[i] = fmax(i + 1 < len ? right[i + 1] : 0, v[a + i]);
      for (size_t i = 2; i + 2 < len; i++) {
        double peak = fmin(left[i], right[i]) - f;
        double ratio = peak > 0 ? (v[a + i] - f) / peak : 1;
        if (ratio < best_ratio) best_ratio = ratio, best = a + i;
      }
    }
    prx_free(left), prx_free(right);
  }
  if (!best) {
    add_band(q, a, b, la, lb);
    return;
  }
  split_run(q, a, best - 1, la, best, depth + 1);
  split_run(q, best + 1, b, best, lb, depth + 1);
}

/* Point of the power spectrum that holds centred bin u, clamped to the spectrum. */
static size_t bin_point(const detect_spectrum *s, double u) {
  double j = floor(u / (double)s->block);
  return j < 0 ? 0 : j >= (double)s->n_psd ? s->n_psd - 1 : (size_t)j;
}

/* Each band's own floor: a front end's filter tilts the noise floor across the band, and a
 * carrier's Es/N0 is against the noise beside it. It is the floor (robust_floor) of the points
 * around the band that no band takes, nor the half-widths beside each band (where a strong
 * carrier's faint edges still stand over the noise): as far again as the band is wide on either
 * side and at least 128 points, widened up to 8 times until 256 points are free (the floor of
 * 256 points is good to about 1 %); the whole spectrum's floor where fewer are. */
static void local_floors(const detect_spectrum *s, detect_band *bands, size_t n_bands) {
  for (size_t i = 0; i < n_bands; i++) bands[i].floor = s->noise_bin;
  size_t m = s->n_psd;
  unsigned char *taken = prx_alloc(m, 1);
  double *pts = prx_alloc(m, sizeof *pts);
  if (taken && pts) {
    for (size_t i = 0; i < n_bands; i++) {
      size_t a = bin_point(s, bands[i].lo - 0.5 * bands[i].width);
      size_t b = bin_point(s, bands[i].hi + 0.5 * bands[i].width);
      memset(taken + a, 1, b - a + 1);
    }
    for (size_t i = 0; i < n_bands; i++) {
      size_t a = bin_point(s, bands[i].lo), b = bin_point(s, bands[i].hi), cnt = 0;
      size_t span = b - a + 1 > 128 ? b - a + 1 : 128;
      for (int grow = 0; grow < 4 && cnt < 256; grow++, span *= 2) {
        size_t lo = a > span ? a - span : 0, hi = b + span < m ? b + span : m - 1;
        cnt = 0;
        for (size_t j = lo; j <= hi; j++)
          if (!taken[j]) pts[cnt++] = s->psd[j];
      }
      if (cnt >= 256) bands[i].floor = robust_floor(pts, cnt, (double)s->block);
    }
  }
  prx_free(taken);
  prx_free(pts);
}

size_t detect_bands(const detect_spectrum *s, double threshold, double min_width, double max_width,
                    detect_band *out, size_t cap) {
  size_t m = s->n_psd;
  double *sm = prx_alloc(m, sizeof *sm);
  if (!sm || m < 3) {
    prx_free(sm);
    return 0;
  }
  for (size_t j = 0; j < m; j++) {
    double l = s->psd[j ? j - 1 : j], r = s->psd[j + 1 < m ? j + 1 : j];
    sm[j] = 0.25 * (l + 2 * s->psd[j] + r);
  }
  double df = s->fs / (double)s->n;
  band_search q = {s, sm, s->noise_bin, min_width / df, max_width / df, out, cap, 0};
  double level = threshold * s->noise_bin;
  /* runs above the threshold, joined across gaps of up to 3 points (noise on a weak carrier) */
  size_t runs_a[4096], runs_b[4096], n_runs = 0;
  for (size_t j = 0; j < m && n_runs < 4096;) {
    /* (a NaN point, where the input's finite samples overflow the power sums, is below: as
     * "above" the run's scan below would not move past it, and the loop would never end) */
    if (!(sm[j] > level)) {
      j++;
      continue;
    }
    size_t a = j;
    while (j < m && sm[j] > level) j++;
    if (n_runs && a - runs_b[n_runs - 1] <= 4) {
      runs_b[n_runs - 1] = j - 1;
    } else {
      runs_a[n_runs] = a;
      runs_b[n_runs++] = j - 1;
    }
  }
  for (size_t i = 0; i < n_runs; i++) {
    size_t la = i ? (runs_b[i - 1] + runs_a[i]) / 2 + 1 : 0;
    size_t lb = i + 1 < n_runs ? (runs_b[i] + runs_a[i + 1]) / 2 : m - 1;
    split_run(&q, runs_a[i], runs_b[i], la, lb, 0);
  }
  prx_free(sm);
  local_floors(s, out, q.count);
  return q.count;
}
