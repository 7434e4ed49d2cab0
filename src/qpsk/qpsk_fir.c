/* Polyphase FIR on an output grid (see qpsk_fir.h). The matched filter is the demodulator's
 * biggest cost, so the dot products are vectorised (AVX2 + FMA when built for it): four outputs at
 * a time, each a dot product of interleaved re/im input with duplicated taps, reduced together. */
#include "qpsk_fir.h"

#include "../core/internal.h"
#include "../dsp/rrc.h"

#include <math.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define QPSK_AVX2 1
#endif

/* Smallest Q dividing 240 such that r Q is an integer (exact positions), 0 if none. */
static unsigned exact_phases(double r) {
  static const unsigned cand[] = {1,  2,  3,  4,  5,  6,  8,  10, 12,  15,
                                  16, 20, 24, 30, 40, 48, 60, 80, 120, 240};
  for (size_t k = 0; k < sizeof cand / sizeof cand[0]; k++) {
    double rq = r * cand[k];
    if (fabs(rq - nearbyint(rq)) < 1e-9 * (1 + rq)) return cand[k];
  }
  return 0;
}

prx_status qpsk_fir_init(qpsk_fir *f, double sps, double beta, double span_sym, double r,
                         double scale) {
  memset(f, 0, sizeof *f);
  f->r = r;
  unsigned q = exact_phases(r);
  f->Q = q ? q : 240;
  f->rq = q ? (int64_t)llround(r * q) : -1;
  double H = span_sym * sps / 2; /* half-length in input samples */
  f->c = (int)ceil(H);
  unsigned nt = 2u * (unsigned)f->c + 2u;
  f->ntaps = (nt + 3u) & ~3u;
  f->bank = prx_alloc((size_t)f->Q * 2 * f->ntaps, sizeof(float));
  if (!f->bank)
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the matched-filter bank (%u x %u)", f->Q,
                    f->ntaps);
  for (unsigned j = 0; j < f->Q; j++) {
    float *row = f->bank + (size_t)j * 2 * f->ntaps;
    for (unsigned l = 0; l < f->ntaps; l++) {
      double d = (double)j / f->Q + f->c - (double)l;
      float v = fabs(d) <= H + 1e-9 ? (float)(scale * prx_rrc_pulse(d / sps, beta)) : 0.0f;
      row[2 * l] = v;
      row[2 * l + 1] = v;
    }
  }
  return PRX_OK;
}

void qpsk_fir_free(qpsk_fir *f) {
  prx_free(f->bank);
  f->bank = NULL;
}

static inline void fir_pos(const qpsk_fir *f, int64_t m, int64_t *i, unsigned *j) {
  if (f->rq >= 0) {
    int64_t p = m * f->rq;
    int64_t ii = qpsk_floordiv(p, f->Q);
    *i = ii;
    *j = (unsigned)(p - ii * (int64_t)f->Q);
  } else {
    double p = (double)m * f->r;
    double fl = floor(p);
    long jj = lround((p - fl) * f->Q);
    int64_t ii = (int64_t)fl;
    if (jj >= (long)f->Q) {
      jj -= f->Q;
      ii++;
    }
    *i = ii;
    *j = (unsigned)jj;
  }
}

void qpsk_fir_window(const qpsk_fir *f, int64_t m0, int64_t m1, int64_t *lo, int64_t *hi) {
  int64_t i0, i1;
  unsigned j;
  fir_pos(f, m0, &i0, &j);
  fir_pos(f, m1 > m0 ? m1 - 1 : m0, &i1, &j);
  *lo = i0 - f->c;
  *hi = i1 - f->c + f->ntaps;
}

static inline void dot1(const float *t, const float *x, unsigned ntaps, prx_cf32 *out) {
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    re += t[2 * l] * x[2 * l];
    im += t[2 * l + 1] * x[2 * l + 1];
  }
  out->re = re;
  out->im = im;
}

#ifdef QPSK_AVX2
/* [a0 a1 a2 a3], each 8 lanes of (re, im) partial products, to [re0 im0 re1 im1 re2 im2 re3 im3] */
static inline __m256 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 s01 =
      _mm256_add_ps(_mm256_permute2f128_ps(a0, a1, 0x20), _mm256_permute2f128_ps(a0, a1, 0x31));
  __m256 s23 =
      _mm256_add_ps(_mm256_permute2f128_ps(a2, a3, 0x20), _mm256_permute2f128_ps(a2, a3, 0x31));
  __m256 t = _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u = _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 v = _mm256_add_ps(t, u); /* [out0 out2 | out1 out3] */
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

static inline void dot4_shared(const float *t, const float *const x[4], unsigned nv, float *out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (unsigned v = 0; v < nv; v++) {
    __m256 h = _mm256_load_ps(t + 8 * v);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v), h, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v), h, a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v), h, a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v), h, a3);
  }
  _mm256_storeu_ps(out, reduce4(a0, a1, a2, a3));
}

static inline void dot4(const float *const t[4], const float *const x[4], unsigned nv, float *out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (unsigned v = 0; v < nv; v++) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v), _mm256_load_ps(t[0] + 8 * v), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v), _mm256_load_ps(t[1] + 8 * v), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v), _mm256_load_ps(t[2] + 8 * v), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v), _mm256_load_ps(t[3] + 8 * v), a3);
  }
  _mm256_storeu_ps(out, reduce4(a0, a1, a2, a3));
}
#endif

void qpsk_fir_run(const qpsk_fir *f, const prx_cf32 *x, int64_t x_base, int64_t m0, size_t n,
                  prx_cf32 *out) {
  const float *xf = (const float *)x;
  const size_t row = 2 * (size_t)f->ntaps;
  size_t k = 0;
#ifdef QPSK_AVX2
  const unsigned nv = f->ntaps / 4;
  for (; k + 4 <= n; k += 4) {
    const float *t[4], *xp[4];
    for (int o = 0; o < 4; o++) {
      int64_t i;
      unsigned j;
      fir_pos(f, m0 + (int64_t)k + o, &i, &j);
      t[o] = f->bank + j * row;
      xp[o] = xf + 2 * (i - f->c - x_base);
    }
    if (f->Q == 1)
      dot4_shared(t[0], xp, nv, (float *)(out + k));
    else
      dot4(t, xp, nv, (float *)(out + k));
  }
#endif
  for (; k < n; k++) {
    int64_t i;
    unsigned j;
    fir_pos(f, m0 + (int64_t)k, &i, &j);
    dot1(f->bank + j * row, xf + 2 * (i - f->c - x_base), f->ntaps, out + k);
  }
}
