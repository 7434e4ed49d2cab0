/* Shared parts of the stage-kernel tests (test_qpsk_stages_emul on the CPU, test_qpsk_stages_cuda
 * on the GPU): a case (C channels of random rows with non-finite samples and a stream that ends
 * inside the last block, random block timing, NCO, DC and level), and the references computed
 * by the CPU demodulator's own functions the way its stages call them (qpsk_batch.c: stage_pre,
 * stage_mf, stage_out): qpsk_fir_run on the window as qpsk_fetch reads it, qpsk_derotate and
 * qpsk_fir_run_at with stage_mf's runs, qpsk_sums_accum, qpsk_decide_coherent / qpsk_decide_diff;
 * the input sums in float64. */
#ifndef PRX_TEST_QPSK_STAGES_H
#define PRX_TEST_QPSK_STAGES_H

#include "test_qpsk_sig.h"

#include "dsp/fft_plan.h"
#include "dsp/mix.h"
#include "qpsk/qpsk_decide.h"
#include "qpsk/qpsk_est.h"
#include "qpsk/qpsk_fir.h"
#include "qpsk/qpsk_internal.h"
#include "qpsk/qpsk_stage_blocks.h"
#include "qpsk/qpsk_stage_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned C, nblk, L, Lmax;
  double sps;
  int cf16;
  size_t pitch;    /* row pitch, samples */
  int64_t n_total; /* stream samples per channel */
  qpsk_fir pre, mf;
  prx_cf32 *rows; /* C x pitch, as the stages read them (cf16 rows: the rounded values) */
  /* per block (C x nblk): the matched filter's parameters */
  qpsk_mf_timing *tm;
  double *theta, *omega;
  float *dc, *gain; /* dc: 2 per block */
  /* O&M: the DC through the pre-filter, gain, the grid index where the stream ends */
  prx_cf32 *D;
  float *om_gain;
  int64_t g_hi;
  /* decisions */
  prx_cf32 *rot;
  unsigned *quad0;
  int diff;
  int borrowed; /* rows and filters belong to someone else (probe_case) */
  /* per-channel mixing (case_mix): the kernels read raw and mix it by mix[c] cycles per sample;
   * rows holds raw mixed by the CPU's prx_mix_down, which the references read */
  double *mix;
  prx_cf32 *raw;
} stage_case;

static inline float half_round(float x) {
  _Float16 h = (_Float16)x;
  return (float)h;
}

/* the run length stage_mf uses (qpsk_batch.c, run_length with the fractional phase's period) */
static inline int64_t case_runs(double sps, double d, int64_t n) {
  const unsigned P = qpsk_phase_period(sps);
  if (!P) return 0;
  int64_t unit = 8 * (int64_t)P;
  double dd = fabs(d);
  if (dd * (double)n <= 0.01) return n;
  return (int64_t)(0.01 / dd) / unit * unit;
}

static inline void case_make(stage_case *k, test_rng *r, unsigned C, unsigned nblk, unsigned L,
                             double sps, int cf16, int diff) {
  memset(k, 0, sizeof *k);
  k->C = C;
  k->nblk = nblk;
  k->L = L;
  k->Lmax = L + (unsigned)ceil(L * QPSK_MAX_DRIFT / (1 - QPSK_MAX_DRIFT)) + 3;
  k->sps = sps;
  k->cf16 = cf16;
  k->diff = diff;
  CHECK_OK(qpsk_fir_init(&k->pre, sps, 0.35, QPSK_PRE_SPAN, sps / 4, 1.0));
  CHECK_OK(qpsk_fir_init(&k->mf, sps, 0.35, 12, 0, 1.0));
  /* the stream ends inside the last block; rows reach a little past it */
  k->n_total = (int64_t)floor(((double)nblk - 0.3) * L * sps);
  k->pitch = ((size_t)k->n_total + 64 + 7) & ~(size_t)7;
  k->rows = malloc(sizeof(prx_cf32) * k->pitch * C);
  test_fill_cf32(r, k->rows, k->pitch * C, 0.7);
  for (size_t i = 0; i < k->pitch * C; i++) {
    k->rows[i].re += 0.05f; /* a DC */
    if (cf16) {
      k->rows[i].re = half_round(k->rows[i].re);
      k->rows[i].im = half_round(k->rows[i].im);
    }
  }
  /* a few non-finite samples in channel 1 */
  if (C > 1)
    for (int j = 0; j < 5; j++) {
      size_t s = (size_t)(test_rng_uniform(r) * (double)k->n_total);
      k->rows[k->pitch + s].re = j % 2 ? NAN : INFINITY;
    }
  size_t nb = (size_t)C * nblk;
  k->tm = calloc(nb, sizeof *k->tm);
  k->theta = calloc(nb, sizeof(double));
  k->omega = calloc(nb, sizeof(double));
  k->dc = calloc(2 * nb, sizeof(float));
  k->gain = calloc(nb, sizeof(float));
  k->rot = calloc(nb, sizeof(prx_cf32));
  k->quad0 = calloc(nb, sizeof(unsigned));
  k->D = calloc(nb, sizeof(prx_cf32));
  k->om_gain = calloc(nb, sizeof(float));
  k->g_hi = qpsk_count_below((double)k->n_total, sps / 4);
  for (unsigned c = 0; c < C; c++) {
    /* channels alternate: no drift (one run), a drift of a few 1e-4 (runs), a fast drift
     * (every instant placed) */
    double d = c % 3 == 0 ? 0 : (c % 3 == 1 ? 3e-4 : 5e-3) * (test_rng_uniform(r) < 0.5 ? -1 : 1);
    double f = 0.2 * (test_rng_uniform(r) - 0.5);
    for (unsigned j = 0; j < nblk; j++) {
      size_t t = (size_t)c * nblk + j;
      qpsk_mf_timing *tm = &k->tm[t];
      tm->b = j;
      tm->d = d;
      tm->tau = test_rng_uniform(r) - 0.5;
      double Cb = ((double)j + 0.5) * L, limit = ((double)j + 1) * L;
      double end = (double)k->n_total / sps;
      if (end < limit) limit = end;
      tm->k0 = (int64_t)ceil(((double)j * L + d * Cb) / (1 + d) - tm->tau);
      tm->k1 = (int64_t)ceil((limit + d * Cb) / (1 + d) - tm->tau);
      if (tm->k1 < tm->k0) tm->k1 = tm->k0;
      if (tm->k1 - tm->k0 > (int64_t)k->Lmax) tm->k1 = tm->k0 + k->Lmax;
      tm->R = case_runs(sps, d, tm->k1 - tm->k0);
      k->omega[t] = 2 * M_PI * f / sps;
      k->theta[t] = 2 * M_PI * test_rng_uniform(r);
      k->dc[2 * t] = 0.05f;
      k->dc[2 * t + 1] = (float)(0.02 * test_rng_gauss(r));
      k->gain[t] = (float)(0.5 + test_rng_uniform(r));
      double ph = 2 * M_PI * test_rng_uniform(r), a = 0.5 + test_rng_uniform(r);
      k->rot[t].re = (float)(a * cos(ph));
      k->rot[t].im = (float)(a * sin(ph));
      k->quad0[t] = (unsigned)(test_rng_uniform(r) * 4) & 3u;
      k->D[t].re = (float)(0.05 * (1 + 0.1 * test_rng_gauss(r)));
      k->D[t].im = (float)(0.02 * test_rng_gauss(r));
      k->om_gain[t] = (float)(0.8 + 0.4 * test_rng_uniform(r));
    }
  }
}

/* relative L2 difference of two float64 vectors */
static inline double rel_l2_f64(const double *a, const double *b, size_t n) {
  double e = 0, r = 0;
  for (size_t i = 0; i < n; i++) {
    e += (a[i] - b[i]) * (a[i] - b[i]);
    r += b[i] * b[i];
  }
  return r > 0 ? sqrt(e / r) : sqrt(e);
}

/* Turns on per-channel mixing: random frequencies over the whole band (channel 0 near +1/2,
 * channel 1 near -1/2), rows mixed by the CPU's definition (src/dsp/mix.c). */
static inline void case_mix(stage_case *k, test_rng *r) {
  k->mix = malloc(k->C * sizeof(double));
  k->raw = malloc(sizeof(prx_cf32) * k->pitch * k->C);
  memcpy(k->raw, k->rows, sizeof(prx_cf32) * k->pitch * k->C);
  for (unsigned c = 0; c < k->C; c++) {
    double u = test_rng_uniform(r);
    k->mix[c] = c == 0 ? 0.5 - 1e-3 * u : c == 1 ? -0.5 + 1e-3 * u : u - 0.5;
    prx_mix_down(k->rows + (size_t)c * k->pitch, k->rows + (size_t)c * k->pitch, k->pitch,
                 k->mix[c], 0);
  }
}

static inline void case_free(stage_case *k) {
  free(k->mix);
  free(k->raw);
  if (!k->borrowed) {
    qpsk_fir_free(&k->pre);
    qpsk_fir_free(&k->mf);
    free(k->rows);
  }
  free(k->tm);
  free(k->theta);
  free(k->omega);
  free(k->dc);
  free(k->gain);
  free(k->rot);
  free(k->quad0);
  free(k->D);
  free(k->om_gain);
}

/* the O&M sums of one block, as stage_om leaves them */
typedef struct {
  double osub[QPSK_SUB_MAX][2], osub_t[QPSK_SUB_MAX], corr[QPSK_LAGS][2], om_n;
  unsigned nsub;
} om_ref;

static inline void case_om_dims(const stage_case *k, unsigned *nsub, unsigned *Ls,
                                unsigned *nlags) {
  *nsub = k->L / QPSK_SUB_SYMBOLS;
  *Ls = k->L / *nsub;
  *nlags = 0;
  while (*nlags < QPSK_LAGS && 2u << *nlags <= *nsub) ++*nlags;
}

/* stage om of block t on its grid z (levelled in place): stage_om's loop over qpsk_om_accum */
static inline void ref_om(const stage_case *k, size_t t, prx_cf32 *z, om_ref *o) {
  unsigned nsub, Ls, nlags;
  case_om_dims(k, &nsub, &Ls, &nlags);
  const int64_t L = k->L, m0 = 4 * k->tm[t].b * L;
  const size_t ng = 4 * (size_t)L + 2 * QPSK_GM;
  int64_t g_hi = m0 + 4 * L;
  if (g_hi > k->g_hi) g_hi = k->g_hi;
  memset(o, 0, sizeof *o);
  o->om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
  const int64_t Ls4 = 4 * (int64_t)Ls;
  for (unsigned j = 0; j <= nsub; j++) {
    int64_t a = m0 + Ls4 * j, e = j < nsub ? a + Ls4 : m0 + 4 * L;
    if (e > g_hi) e = g_hi;
    if (e <= a) break;
    double *x2 = o->osub[j];
    qpsk_om_accum(z + QPSK_GM + (a - m0), (size_t)(e - a), a, k->D[t], k->om_gain[t], x2);
    o->osub_t[j] = (double)(a + e - 1) / 8.0;
    o->nsub = j + 1;
    if (j < nsub && e - a == Ls4)
      for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
        const double *p = o->osub[j - (1u << l)];
        o->corr[l][0] += x2[0] * p[0] + x2[1] * p[1];
        o->corr[l][1] += x2[1] * p[0] - x2[0] * p[1];
      }
  }
  double unused[2] = {0, 0};
  int64_t done = g_hi > m0 ? g_hi - m0 : 0;
  qpsk_om_accum(z, QPSK_GM, m0 - QPSK_GM, k->D[t], k->om_gain[t], unused);
  qpsk_om_accum(z + QPSK_GM + done, ng - QPSK_GM - (size_t)done, m0 + done, k->D[t], k->om_gain[t],
                unused);
}

/* stage x4 of block t on its levelled grid z: stage_x4's runs through qpsk_x4_interp */
static inline void ref_x4(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 *w) {
  const qpsk_mf_timing *tm = &k->tm[t];
  const int64_t L = k->L, n = tm->k1 - tm->k0;
  const double glen = 4.0 * L + 2 * QPSK_GM, Cb = ((double)tm->b + 0.5) * L;
  int64_t R = n;
  if (fabs(tm->d) * (double)n > 0.01) R = (int64_t)(0.01 / fabs(tm->d));
  if (R < 1) R = 1;
  size_t nw = 0;
  for (int64_t ka = tm->k0; ka < tm->k1; ka += R) {
    int64_t m = tm->k1 - ka < R ? tm->k1 - ka : R;
    double mid = (double)ka + 0.5 * (double)(m - 1);
    double inst = (1 + tm->d) * (mid + tm->tau) - tm->d * Cb;
    double g0 = 4.0 * (inst - (double)tm->b * L - 0.5 * (double)(m - 1)) + QPSK_GM;
    if (g0 < 1) g0 = 1;
    if (g0 + 4.0 * (double)(m - 1) > glen - 3) g0 = glen - 3 - 4.0 * (double)(m - 1);
    double fl = floor(g0);
    float c[4];
    qpsk_farrow_coef(g0 - fl, c);
    qpsk_x4_interp(z + (int64_t)fl - 1, c, (size_t)m, w + nw);
    nw += (size_t)m;
  }
}

/* relative L2 difference of two O&M results (sub-block sums, correlations) and whether the
 * counts agree */
static inline void om_compare(const om_ref *a, const om_ref *b, double *e_sub, double *e_corr,
                              int *same) {
  *e_sub = rel_l2_f64(&a->osub[0][0], &b->osub[0][0], 2 * QPSK_SUB_MAX);
  *e_corr = rel_l2_f64(&a->corr[0][0], &b->corr[0][0], 2 * QPSK_LAGS);
  *same =
      a->nsub == b->nsub && a->om_n == b->om_n && !memcmp(a->osub_t, b->osub_t, sizeof a->osub_t);
}

static inline size_t case_ng(const stage_case *k) { return 4 * (size_t)k->L + 2 * QPSK_GM; }

/* stage pre of block j of channel c: grid (ng values), input sums (re, im, |x|^2, n) and the
 * count of non-finite samples */
static inline void ref_pre(const stage_case *k, unsigned c, unsigned j, prx_cf32 *grid,
                           double mom[4], unsigned *bad) {
  const prx_cf32 *row = k->rows + (size_t)c * k->pitch;
  const int64_t L = k->L, m0 = 4 * (int64_t)j * L;
  int64_t lo, hi;
  qpsk_fir_window(&k->pre, m0 - QPSK_GM, m0 + 4 * L + QPSK_GM, &lo, &hi);
  size_t n = (size_t)(hi - lo);
  prx_cf32 *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) {
    int64_t s = lo + (int64_t)i;
    prx_cf32 v = {0, 0};
    if (s >= 0 && s < k->n_total && isfinite(row[s].re) && isfinite(row[s].im)) v = row[s];
    x[i] = v;
  }
  qpsk_fir_run(&k->pre, x, lo, m0 - QPSK_GM, case_ng(k), grid, NULL, 0);
  free(x);
  int64_t a = qpsk_count_below((double)j * (double)L * k->sps, 1.0);
  int64_t e = qpsk_count_below((double)(j + 1) * (double)L * k->sps, 1.0);
  if (e > k->n_total) e = k->n_total;
  mom[0] = mom[1] = mom[2] = mom[3] = 0;
  *bad = 0;
  for (int64_t s = a; s < e; s++) {
    if (!isfinite(row[s].re) || !isfinite(row[s].im)) {
      ++*bad;
      continue;
    }
    mom[0] += row[s].re;
    mom[1] += row[s].im;
    mom[2] += (double)row[s].re * row[s].re + (double)row[s].im * row[s].im;
    mom[3] += 1;
  }
}

/* stage mf of block t (= c nblk + j): the symbols (k1 - k0) and their sums (s4 re, s4 im, m2, m4,
 * n) */
static inline void ref_mf(const stage_case *k, size_t t, prx_cf32 *sym, double sums[5]) {
  const unsigned c = (unsigned)(t / k->nblk);
  const prx_cf32 *row = k->rows + (size_t)c * k->pitch;
  const qpsk_mf_timing *tm = &k->tm[t];
  const int64_t L = k->L, bL = tm->b * L, n = tm->k1 - tm->k0;
  memset(sums, 0, 5 * sizeof(double));
  if (n <= 0) return;
  int64_t lo, hi;
  qpsk_mf_window_of(tm->b, L, k->sps, k->mf.c, k->mf.ntaps, &lo, &hi);
  size_t nw = (size_t)(hi - lo);
  prx_cf32 *x = malloc(nw * sizeof *x);
  const prx_cf32 dc = {k->dc[2 * t], k->dc[2 * t + 1]};
  for (size_t i = 0; i < nw; i++) {
    int64_t s = lo + (int64_t)i;
    prx_cf32 v = dc;
    if (s >= 0 && s < k->n_total) {
      v = row[s];
      if (!isfinite(v.re) || !isfinite(v.im)) v.re = v.im = 0;
    }
    x[i] = v;
  }
  qpsk_derotate(x, x, nw, k->theta[t], k->omega[t], dc, k->gain[t]);
  /* stage_mf's placement of the instants */
  const double base = (double)bL * k->sps - (double)lo;
  const double Cb = ((double)tm->b + 0.5) * L;
#define INSTANT(kk) ((1 + tm->d) * ((kk) + tm->tau) - tm->d * Cb)
  if (tm->R <= 0) {
    double p0 = (INSTANT((double)tm->k0) - (double)bL) * k->sps + base;
    qpsk_fir_run_at(&k->mf, x, p0, k->sps * (1 + tm->d), (size_t)n, sym, NULL, 0);
  } else {
    for (int64_t ka = tm->k0; ka < tm->k1; ka += tm->R) {
      int64_t m = tm->k1 - ka < tm->R ? tm->k1 - ka : tm->R;
      double mid = (double)ka + 0.5 * (double)(m - 1);
      double p0 = (INSTANT(mid) - 0.5 * (double)(m - 1) - (double)bL) * k->sps + base;
      qpsk_fir_run_at(&k->mf, x, p0, k->sps, (size_t)m, sym + (ka - tm->k0), NULL, 0);
    }
  }
#undef INSTANT
  free(x);
  qpsk_sums s;
  memset(&s, 0, sizeof s);
  qpsk_sums_accum(sym, (size_t)n, &s);
  sums[0] = s.s4[0];
  sums[1] = s.s4[1];
  sums[2] = s.m2;
  sums[3] = s.m4;
  sums[4] = s.n;
}

/* stage out of block t on the symbols sym: 2 (k1 - k0) bits */
static inline void ref_out(const stage_case *k, size_t t, const prx_cf32 *sym, uint8_t *bits) {
  const int64_t n = k->tm[t].k1 - k->tm[t].k0;
  if (n <= 0) return;
  if (k->diff) {
    qpsk_diff_prev p;
    qpsk_diff_reference(&p);
    p.quad = k->quad0[t];
    qpsk_decide_diff(sym, (size_t)n, k->rot[t], 1.0f, &p, bits, NULL);
  } else {
    qpsk_decide_coherent(sym, (size_t)n, k->rot[t], 1.0f, bits, NULL);
  }
}

/* symbols whose decision sits within eps of a boundary (either component, relative to |u|):
 * there the two backends' last-bit differences may decide differently */
static inline int near_boundary(prx_cf32 y, prx_cf32 rot, double eps) {
  double ur = (double)y.re * rot.re - (double)y.im * rot.im;
  double ui = (double)y.re * rot.im + (double)y.im * rot.re;
  double m = sqrt(ur * ur + ui * ui);
  return fabs(ur) < eps * m || fabs(ui) < eps * m;
}

/* ---- the CFO stage: windows of 4th-power values and the CPU's estimate from them ---- */

/* n 4th-power values y^4 / |y|^2 of a QPSK carrier y = a + noise at Es/N0 esn0 dB whose line
 * sits at nu cycles per value (the CFO times 4 (1 + d)), with a random phase. */
static inline void cfo_window(test_rng *r, prx_cf32 *w, size_t n, double nu, double esn0) {
  const double sd = sqrt(0.5 * pow(10, -esn0 / 10)), ph = 2 * M_PI * test_rng_uniform(r);
  for (size_t k = 0; k < n; k++) {
    double a = 0.25 * M_PI * (2 * (int)(test_rng_uniform(r) * 4) + 1) + ph / 4 +
               2 * M_PI * nu / 4 * (double)k;
    double yr = cos(a) + sd * test_rng_gauss(r), yi = sin(a) + sd * test_rng_gauss(r);
    double p = yr * yr + yi * yi + 1e-30, s2r = yr * yr - yi * yi, s2i = 2 * yr * yi;
    w[k].re = (float)((s2r * s2r - s2i * s2i) / p);
    w[k].im = (float)(2 * s2r * s2i / p);
  }
}

/* The CPU's stage_cfo on a window of n values: the zero-padded nfft-point spectrum (spec, also
 * returned), the peak over |nu| <= max_nu rounded to 1/8 bin (*nu0), the refinement (*nu), and
 * the CFO for clock slope e. */
static inline double cfo_ref(const prx_cf32 *w, size_t n, size_t nfft, double max_nu, double e,
                             prx_cf32 *spec, double *nu0, double *nu) {
  prx_cf32 *win = fftwf_malloc(nfft * sizeof *win), *out = fftwf_malloc(nfft * sizeof *out);
  fftwf_plan plan = prx_fft_plan_1d((int)nfft, win, out, FFTW_FORWARD, PRX_FFT_ESTIMATE);
  memset(win, 0, nfft * sizeof *win);
  memcpy(win, w, n * sizeof *win);
  fftwf_execute(plan);
  memcpy(spec, out, nfft * sizeof *spec);
  double v = qpsk_spectrum_peak(out, nfft, max_nu);
  v = nearbyint(v * (8.0 * (double)nfft)) / (8.0 * (double)nfft);
  *nu0 = v;
  *nu = qpsk_periodogram_refine(w, n, v, 1.0 / (double)nfft, out);
  prx_fft_destroy(plan);
  fftwf_free(win);
  fftwf_free(out);
  return *nu / (4 * (1 + e / (1 - e)));
}

/* ---- the demodulator itself as the reference: its blocks captured after each batch ---- */

typedef struct {
  qpsk_mf_block mb;
  qpsk_out_block ob;
  qpsk_om_in oi;
  qpsk_om_out oo;
  double mom[4]; /* sum re, sum im, sum |x|^2, finite count */
  unsigned nonfinite;
  prx_cf32 *grid; /* levelled (ng) */
  prx_cf32 *sym;  /* n = k1 - k0 */
  prx_cf32 *w;    /* n 4th-power values */
} probe_blk;

typedef struct {
  probe_blk *b;
  size_t n, cap, ng;
  /* every span's CFO stage: its estimation window (nwin values, reaching back into the previous
   * span's for a short last span, as stage_cfo does), clock slope and estimate */
  struct {
    prx_cf32 *win;
    size_t nwin;
    double e, f;
  } sp[64];
  size_t ns, S, nfft;
  double max_nu;
} probe;

static inline prx_cf32 *probe_copy(const prx_cf32 *x, size_t n) {
  prx_cf32 *o = malloc((n ? n : 1) * sizeof *o);
  if (n) memcpy(o, x, n * sizeof *o);
  return o;
}

/* qpsk's batch probe: every block's stage inputs (as the serial passes set them) and outputs */
static void probe_fn(void *ctx, const prx_qpsk *q) {
  probe *pr = ctx;
  size_t off = 0;
  int span = -1;
  for (size_t t = 0; t < q->n_blks; t++) {
    const qpsk_blk *bk = &q->blks[t];
    const qpsk_span *sp = &q->spans[bk->span];
    if (bk->span != span) {
      span = bk->span;
      off = 0;
    }
    if (pr->n == pr->cap) {
      pr->cap = pr->cap ? 2 * pr->cap : 64;
      pr->b = realloc(pr->b, pr->cap * sizeof *pr->b);
    }
    probe_blk *p = &pr->b[pr->n++];
    memset(p, 0, sizeof *p);
    const int64_t n = bk->k1 - bk->k0;
    const unsigned P = qpsk_phase_period(q->sps);
    p->mb.t.b = bk->b;
    p->mb.t.k0 = bk->k0;
    p->mb.t.k1 = bk->k1;
    p->mb.t.R = qpsk_mf_run_length(bk->d, n, P);
    p->mb.t.tau = bk->tau;
    p->mb.t.d = bk->d;
    int64_t lo, hi;
    qpsk_mf_window(q, bk->b, &lo, &hi);
    p->mb.omega = 2 * M_PI * sp->f / q->sps;
    p->mb.theta = sp->theta + p->mb.omega * (double)(lo - sp->n_ref);
    p->mb.dc[0] = (float)sp->dc[0];
    p->mb.dc[1] = (float)sp->dc[1];
    p->mb.gain = (float)sp->gain;
    float g = (float)(1.0 / sqrt(bk->sig));
    p->ob.rot.re = (float)cos(-bk->phi) * g;
    p->ob.rot.im = (float)sin(-bk->phi) * g;
    p->ob.quad0 = bk->prev.quad;
    p->ob.diff = q->cfg.ambiguity == PRX_QPSK_DIFFERENTIAL;
    p->ob.out0 = (int64_t)bk->j0;
    p->oi.D.re = (float)(sp->dc[0] * q->pre_gain);
    p->oi.D.im = (float)(sp->dc[1] * q->pre_gain);
    p->oi.gain = (float)sp->gain;
    p->oi.g_hi = q->flushing ? qpsk_count_below((double)q->n_total, q->sps / 4) : INT64_MAX;
    memcpy(p->oo.osub, bk->osub, sizeof bk->osub);
    memcpy(p->oo.osub_t, bk->osub_t, sizeof bk->osub_t);
    memcpy(p->oo.corr, bk->corr, sizeof bk->corr);
    p->oo.om_n = bk->om_n;
    p->oo.nsub = bk->nsub;
    for (int j = 0; j < 3; j++) p->mom[j] = bk->mom[j];
    p->mom[3] = bk->mom_n;
    p->nonfinite = bk->nonfinite;
    pr->ng = 4 * (size_t)q->L + 2 * QPSK_GM;
    p->grid = probe_copy(bk->grid, pr->ng);
    p->sym = probe_copy(bk->sym, n > 0 ? (size_t)n : 0);
    p->w = probe_copy(sp->w + off, n > 0 ? (size_t)n : 0);
    off += n > 0 ? (size_t)n : 0;
  }
  for (size_t t = 0; t < q->n_blks; t++) {
    const int i = q->blks[t].span;
    if ((t > 0 && q->blks[t - 1].span == i) || pr->ns == 64) continue;
    const qpsk_span *sp = &q->spans[i];
    size_t nwin = sp->nw;
    if (nwin < (size_t)q->S) {
      size_t prev_n = i > 0 ? q->spans[i - 1].nw : q->w_hist_n;
      nwin += (size_t)q->S - nwin < prev_n ? (size_t)q->S - nwin : prev_n;
    }
    pr->sp[pr->ns].win = probe_copy(sp->win, nwin);
    pr->sp[pr->ns].nwin = nwin;
    pr->sp[pr->ns].e = sp->e;
    pr->sp[pr->ns].f = sp->f;
    pr->ns++;
    pr->S = (size_t)q->S;
    pr->nfft = q->nfft;
    pr->max_nu = QPSK_CFO_SEARCH(q->cfg.acquisition);
  }
}

static inline void probe_free(probe *pr) {
  for (size_t i = 0; i < pr->n; i++) {
    free(pr->b[i].grid);
    free(pr->b[i].sym);
    free(pr->b[i].w);
  }
  free(pr->b);
  for (size_t i = 0; i < pr->ns; i++) free(pr->sp[i].win);
}

/* The carrier both stage tests run the demodulator on: random CFO (up to 0.05 Rs), phase and
 * timing from the seed, the given sps, Es/N0, clock offset and mode; returns its length in
 * samples (2.5 CFO spans, its end away from a symbol centre). */
static inline size_t real_tcase(tcase *c, double sps, double esn0, double ppm, int diff,
                                uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  memset(c, 0, sizeof *c);
  c->sps = sps;
  c->noise = 1;
  c->esn0_db = esn0;
  c->differential = diff;
  tcase_random(c, &r, 0.05, ppm);
  return tcase_length(c, (size_t)(2.5 * 8192 * sps));
}

/* The demodulator run over one carrier of case c (n samples, one thread), its batches probed:
 * *q (alive: its filters serve the kernels), the samples *x and the bits (*bits, *nbits); the
 * stage case k describes the same stream (one channel, blocks 0 .. pr->n - 1, the demodulator's
 * filters and per-block parameters; it borrows q's filters and x). */
static inline int probe_case(const tcase *c, size_t n, stage_case *k, probe *pr, prx_qpsk **q,
                             prx_cf32 **x, uint8_t **bits, size_t *nbits) {
  memset(pr, 0, sizeof *pr);
  memset(k, 0, sizeof *k);
  uint8_t *ref = NULL;
  size_t nref;
  *x = tcase_make(c, n, &ref, &nref);
  free(ref);
  prx_qpsk_config qc = tcase_demod_config(c, 1);
  if (!*x || prx_qpsk_create(&qc, q) != PRX_OK) return 0;
  (*q)->batch_probe = probe_fn;
  (*q)->probe_ctx = pr;
  *bits = tcase_demod(*q, *x, n, NULL, 0, nbits, NULL);
  if (!*bits || pr->n == 0) return 0;
  const prx_qpsk *d = *q;
  k->C = 1;
  k->nblk = (unsigned)pr->n;
  k->L = d->L;
  k->Lmax = d->Lmax;
  k->sps = d->sps;
  k->borrowed = 1;
  k->pitch = n;
  k->n_total = (int64_t)n;
  k->pre = d->pre;
  k->mf = d->mf;
  k->rows = *x;
  k->diff = c->differential;
  k->g_hi = qpsk_count_below((double)n, d->sps / 4);
  size_t nb = pr->n;
  k->tm = calloc(nb, sizeof *k->tm);
  k->theta = calloc(nb, sizeof(double));
  k->omega = calloc(nb, sizeof(double));
  k->dc = calloc(2 * nb, sizeof(float));
  k->gain = calloc(nb, sizeof(float));
  k->rot = calloc(nb, sizeof(prx_cf32));
  k->quad0 = calloc(nb, sizeof(unsigned));
  k->D = calloc(nb, sizeof(prx_cf32));
  k->om_gain = calloc(nb, sizeof(float));
  for (size_t t = 0; t < nb; t++) {
    const probe_blk *p = &pr->b[t];
    CHECK(p->mb.t.b == (int64_t)t, "probe: block %zu is stream block %lld", t,
          (long long)p->mb.t.b);
    k->tm[t] = p->mb.t;
    k->theta[t] = p->mb.theta;
    k->omega[t] = p->mb.omega;
    k->dc[2 * t] = p->mb.dc[0];
    k->dc[2 * t + 1] = p->mb.dc[1];
    k->gain[t] = p->mb.gain;
    k->rot[t] = p->ob.rot;
    k->quad0[t] = p->ob.quad0;
    k->D[t] = p->oi.D;
    k->om_gain[t] = p->oi.gain;
  }
  return 1;
}

/* The stages' outputs for the probed stream (channel 0, laid out as the kernels write them:
 * blocks' grids and symbols at ng and Lmax apart, w at w0 offsets of the span sequence, bits at
 * 2 j0) against the demodulator's: input sums 1e-6, non-finite counts equal, the levelled grid,
 * O&M sums, 4th-power values and symbols within 2e-5 (drift correlations 1e-4), the bits
 * identical but for symbols within 1e-4 of a decision boundary (at most 1 in 10^4). */
static inline void probe_compare(const char *name, const stage_case *k, const probe *pr,
                                 const prx_cf32 *grid, const qpsk_om_out *oo, const prx_cf32 *w,
                                 const int64_t *w0, const prx_cf32 *sym, const double *mom,
                                 const unsigned *bad, const uint8_t *bits, const uint8_t *cpu_bits,
                                 size_t cpu_nbits) {
  double e_mom = 0, e_grid = 0, e_om = 0, e_corr = 0, e_w = 0, e_sym = 0;
  size_t bit_diff = 0, near = 0, total = 0;
  for (size_t t = 0; t < pr->n; t++) {
    const probe_blk *p = &pr->b[t];
    double e = rel_l2_f64(mom + 4 * t, p->mom, 4);
    if (!(e <= e_mom)) e_mom = e;
    CHECK(bad[t] == p->nonfinite, "%s: block %zu: %u non-finite, demodulator %u", name, t, bad[t],
          p->nonfinite);
    e = test_rel_l2_cf32(grid + t * pr->ng, p->grid, pr->ng);
    if (!(e <= e_grid)) e_grid = e;
    /* the sub-blocks present (the demodulator leaves older values past them) */
    const unsigned ns = p->oo.nsub < QPSK_SUB_MAX ? p->oo.nsub : QPSK_SUB_MAX;
    e = rel_l2_f64(&oo[t].osub[0][0], &p->oo.osub[0][0], 2 * (size_t)ns);
    if (!(e <= e_om)) e_om = e;
    e = rel_l2_f64(&oo[t].corr[0][0], &p->oo.corr[0][0], 2 * QPSK_LAGS);
    if (!(e <= e_corr)) e_corr = e;
    CHECK(oo[t].nsub == p->oo.nsub && oo[t].om_n == p->oo.om_n &&
              !memcmp(oo[t].osub_t, p->oo.osub_t, ns * sizeof(double)),
          "%s: block %zu: O&M sub-block counts or centres differ", name, t);
    int64_t n = p->mb.t.k1 - p->mb.t.k0;
    if (n <= 0) continue;
    e = test_rel_l2_cf32(w + w0[t], p->w, (size_t)n);
    if (!(e <= e_w)) e_w = e;
    e = test_rel_l2_cf32(sym + t * k->Lmax, p->sym, (size_t)n);
    if (!(e <= e_sym)) e_sym = e;
    for (int64_t i = 0; i < 2 * n; i++) {
      size_t at = 2 * (size_t)p->ob.out0 + (size_t)i;
      if (at >= cpu_nbits) {
        CHECK(0, "%s: block %zu writes bit %zu past the demodulator's %zu", name, t, at, cpu_nbits);
        break;
      }
      total++;
      if (bits[at] == cpu_bits[at]) continue;
      int nb = near_boundary(p->sym[i / 2], p->ob.rot, 1e-4) ||
               (k->diff && i / 2 > 0 && near_boundary(p->sym[i / 2 - 1], p->ob.rot, 1e-4));
      if (nb)
        near++;
      else
        bit_diff++;
    }
  }
  printf("%s: %zu blocks: input sums %.2e, levelled grid %.2e, O&M %.2e, drift %.2e, x4 %.2e, "
         "symbols %.2e, bits differing %zu (+%zu at a boundary) of %zu\n",
         name, pr->n, e_mom, e_grid, e_om, e_corr, e_w, e_sym, bit_diff, near, total);
  CHECK(total == cpu_nbits, "%s: %zu bits compared, the demodulator gave %zu", name, total,
        cpu_nbits);
  CHECK(e_mom < 1e-6, "%s: input sums differ by %.2e", name, e_mom);
  CHECK(e_grid < 2e-5, "%s: levelled grid differs by %.2e", name, e_grid);
  CHECK(e_om < 2e-5, "%s: O&M sums differ by %.2e", name, e_om);
  CHECK(e_corr < 1e-4, "%s: drift correlations differ by %.2e", name, e_corr);
  CHECK(e_w < 2e-5, "%s: 4th-power values differ by %.2e", name, e_w);
  CHECK(e_sym < 2e-5, "%s: symbols differ by %.2e", name, e_sym);
  CHECK(bit_diff == 0, "%s: %zu bits differ away from a decision boundary", name, bit_diff);
  CHECK(near * 10000 <= total, "%s: %zu bits differ at a boundary", name, near);
}

#endif
