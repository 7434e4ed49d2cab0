/* Feed-forward estimators (see qpsk_est.h). Sums are accumulated in double: blocks hold up to a
 * few thousand terms and the estimates are differences of large sums (M2M4). */
#include "qpsk_est.h"

#include <string.h>

#include <math.h>

#include "qpsk_simd.h"
#include "qpsk_stage_math.h"

void qpsk_x4_interp(const prx_cf32 *z, const float c[4], size_t n, prx_cf32 *w) {
  PRX_ISA_DISPATCH(qpsk_x4_interp, z, c, n, w);
  size_t j = 0;
#ifdef QPSK_AVX2
  /* four symbols per step: each one's four grid samples are one vector; multiply by the
   * coefficients, sum the four complex products of each (a transpose-add), then the 4th power
   * of the four results at once */
  const __m256 cv = _mm256_setr_ps(c[0], c[0], c[1], c[1], c[2], c[2], c[3], c[3]);
  const __m256 tiny = _mm256_set1_ps(1e-30f);
  for (; j + 4 <= n; j += 4, z += 16) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps((const float *)(z + 0)), cv);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps((const float *)(z + 4)), cv);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps((const float *)(z + 8)), cv);
    __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps((const float *)(z + 12)), cv);
    __m256 y = reduce4(a0, a1, a2, a3); /* [y0 y1 | y2 y3] */
    __m256 sq = _mm256_mul_ps(y, y);
    __m256 p = _mm256_add_ps(_mm256_add_ps(sq, _mm256_permute_ps(sq, 0xB1)), tiny);
    __m256 y2 = cmul8(y, y);
    _mm256_storeu_ps((float *)(w + j), _mm256_div_ps(cmul8(y2, y2), p));
  }
#endif
  for (; j < n; j++, z += 4) w[j] = qpsk_x4_one(z, c);
}

void qpsk_farrow_coef(double mu, float c[4]) { qpsk_farrow_of(mu, c); }

/* index of the largest |spec[k]|^2 for k in [k0, k1) (the first one on ties), and its value */
static size_t argmax_power(const prx_cf32 *spec, size_t k0, size_t k1, float *best) {
  float bm = -1;
  size_t bi = k0, k = k0;
#ifdef QPSK_AVX2
  /* the maximum first (a vector max over 4 bins at a time, four chains: the maximum of finite
   * values does not depend on the order), then the first bin that has it */
  __m256 mx = _mm256_set1_ps(-1.0f), mx1 = mx, mx2 = mx, mx3 = mx;
  for (; k + 16 <= k1; k += 16) {
    __m256 v0 = _mm256_loadu_ps((const float *)(spec + k));
    __m256 v1 = _mm256_loadu_ps((const float *)(spec + k + 4));
    __m256 v2 = _mm256_loadu_ps((const float *)(spec + k + 8));
    __m256 v3 = _mm256_loadu_ps((const float *)(spec + k + 12));
    __m256 s0 = _mm256_mul_ps(v0, v0), s1 = _mm256_mul_ps(v1, v1);
    __m256 s2 = _mm256_mul_ps(v2, v2), s3 = _mm256_mul_ps(v3, v3);
    mx = _mm256_max_ps(mx, _mm256_add_ps(s0, _mm256_permute_ps(s0, 0xB1)));
    mx1 = _mm256_max_ps(mx1, _mm256_add_ps(s1, _mm256_permute_ps(s1, 0xB1)));
    mx2 = _mm256_max_ps(mx2, _mm256_add_ps(s2, _mm256_permute_ps(s2, 0xB1)));
    mx3 = _mm256_max_ps(mx3, _mm256_add_ps(s3, _mm256_permute_ps(s3, 0xB1)));
  }
  mx = _mm256_max_ps(_mm256_max_ps(mx, mx1), _mm256_max_ps(mx2, mx3));
  for (; k + 4 <= k1; k += 4) {
    __m256 v = _mm256_loadu_ps((const float *)(spec + k));
    __m256 sq = _mm256_mul_ps(v, v);
    mx = _mm256_max_ps(mx, _mm256_add_ps(sq, _mm256_permute_ps(sq, 0xB1)));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, mx);
  for (int l = 0; l < 8; l++)
    if (lanes[l] > bm) bm = lanes[l];
  const __m256 target = _mm256_set1_ps(bm); /* found again with the same arithmetic */
  for (size_t i = k0; i < k; i += 4) {
    __m256 v = _mm256_loadu_ps((const float *)(spec + i));
    __m256 sq = _mm256_mul_ps(v, v);
    __m256 p = _mm256_add_ps(sq, _mm256_permute_ps(sq, 0xB1));
    int mask = _mm256_movemask_ps(_mm256_cmp_ps(p, target, _CMP_EQ_OQ));
    if (mask) {
      bi = i + (size_t)(__builtin_ctz((unsigned)mask) / 2);
      break;
    }
  }
#endif
  for (; k < k1; k++) {
    float m = spec[k].re * spec[k].re + spec[k].im * spec[k].im;
    if (m > bm) {
      bm = m;
      bi = k;
    }
  }
  *best = bm;
  return bi;
}

double qpsk_spectrum_peak(const prx_cf32 *spec, size_t nfft, double max_nu) {
  PRX_ISA_DISPATCH_RET(qpsk_spectrum_peak, spec, nfft, max_nu);
  /* bins 0 .. kmax and nfft - kmax .. nfft - 1 have |nu| <= max_nu */
  size_t kmax = (size_t)floor(max_nu * (double)nfft);
  if (kmax > nfft / 2 - 1) kmax = nfft / 2 - 1;
  float m1, m2;
  size_t b1 = argmax_power(spec, 0, kmax + 1, &m1);
  size_t b2 = argmax_power(spec, nfft - kmax, nfft, &m2);
  size_t best = m2 > m1 ? b2 : b1;
  float bm = m2 > m1 ? m2 : m1;
  /* the vertex on the grid of 1/8 bin: the GPU's CFO stage's step, one copy */
  return qpsk_peak_start(spec, nfft, best, bm);
}

double qpsk_periodogram_refine(const prx_cf32 *w, size_t n, double nu0, double max_step,
                               prx_cf32 *scratch) {
  PRX_ISA_DISPATCH_RET(qpsk_periodogram_refine, w, n, nu0, max_step, scratch);
  if (n < 2) return nu0;
  /* Mix the tone near nu0 down to near 0 and sum runs of D = 64 terms: the remaining offset is
   * under a bin of the zero-padded spectrum, so a run turns it by less than 2 pi 64 / (2 n) (for
   * n = 8192: 0.025 rad, a 1e-4 loss), and the short sequence has the same periodogram peak as
   * the long one near nu0, for 1/64 of the work per Newton step. */
  const size_t D = QPSK_REFINE_D, m = (n + D - 1) / D;
  const double kc = 0.5 * (double)(n - 1);
  float tr[64], ti[64]; /* exp(-j 2 pi nu0 l), l < D: the same within every run */
  for (size_t l = 0; l < D; l++) {
    tr[l] = (float)cos(2 * M_PI * nu0 * (double)l);
    ti[l] = (float)-sin(2 * M_PI * nu0 * (double)l);
  }
  const double sr = cos(2 * M_PI * nu0 * D), si = -sin(2 * M_PI * nu0 * D);
#ifdef QPSK_AVX2
  float run_r[8], run_i[8]; /* the float sums of eight runs */
  int whole8 = 0;           /* the current eight runs are whole: their sums are there */
#endif
  double ar = cos(2 * M_PI * nu0 * kc),
         ai = sin(2 * M_PI * nu0 * kc); /* exp(-j 2 pi nu0 (0 - kc)) */
  for (size_t g = 0; g < m; g++) {
    size_t k0 = g * D, len = k0 + D <= n ? D : n - k0;
    float sumr = 0, sumi = 0;
#ifdef QPSK_AVX2
    /* every eighth run: the sums of it and the seven after it (whole runs), one per lane, with
     * the operations of the loop below in the same order */
    if (g % 8 == 0) whole8 = (g + 8) * D <= n;
    if (g % 8 == 0 && whole8) {
      __m256 ar8 = _mm256_setzero_ps(), ai8 = ar8;
      for (size_t l = 0; l < D; l += 4) {
        __m256 v[8];
        for (int j = 0; j < 8; j++) v[j] = _mm256_loadu_ps((const float *)(w + k0 + j * D + l));
        transpose8(v);
        for (int h = 0; h < 4; h++) {
          const __m256 cr = _mm256_set1_ps(tr[l + h]), ci = _mm256_set1_ps(ti[l + h]);
          const __m256 re = v[2 * h], im = v[2 * h + 1];
          ar8 = _mm256_add_ps(ar8, _mm256_sub_ps(_mm256_mul_ps(re, cr), _mm256_mul_ps(im, ci)));
          ai8 = _mm256_add_ps(ai8, _mm256_add_ps(_mm256_mul_ps(re, ci), _mm256_mul_ps(im, cr)));
        }
      }
      _mm256_storeu_ps(run_r, ar8);
      _mm256_storeu_ps(run_i, ai8);
    }
    if (whole8) {
      sumr = run_r[g % 8];
      sumi = run_i[g % 8];
      len = 0;
    }
#endif
    for (size_t l = 0; l < len; l++) {
      sumr += w[k0 + l].re * tr[l] - w[k0 + l].im * ti[l];
      sumi += w[k0 + l].re * ti[l] + w[k0 + l].im * tr[l];
    }
    scratch[g].re = (float)(sumr * ar - sumi * ai);
    scratch[g].im = (float)(sumr * ai + sumi * ar);
    double t = ar * sr - ai * si;
    ai = ar * si + ai * sr;
    ar = t;
  }
  /* Newton's steps on the run sums' periodogram: the same steps as the GPU's CFO stage */
  return qpsk_refine_newton(scratch, m, n, nu0, max_step);
}

void qpsk_om_accum(prx_cf32 *z, size_t n, int64_t m0, prx_cf32 dc, float gain, double x[2]) {
  /* exp(-j 2 pi m / 4) = 1, -j, -1, j for m = 0, 1, 2, 3 (mod 4): sum |z|^2 per residue */
  double p[4] = {0, 0, 0, 0};
  int r = (int)(((m0 % 4) + 4) % 4);
  size_t i = 0;
  for (; i < n && r != 0; i++, r = (r + 1) & 3) {
    z[i].re = (z[i].re - dc.re) * gain;
    z[i].im = (z[i].im - dc.im) * gain;
    p[r] += (double)z[i].re * z[i].re + (double)z[i].im * z[i].im;
  }
  /* whole groups of 4 samples: 8 float lanes (re^2, im^2 of each residue), a vector loop;
   * partial sums go to double every 256 groups */
  float *f = (float *)(z + i);
  const float d[8] = {dc.re, dc.im, dc.re, dc.im, dc.re, dc.im, dc.re, dc.im};
  size_t groups = (n - i) / 4;
  for (size_t g0 = 0; g0 < groups; g0 += 256) {
    size_t g1 = g0 + 256 < groups ? g0 + 256 : groups;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t g = g0; g < g1; g++)
      for (int l = 0; l < 8; l++) {
        float v = (f[8 * g + l] - d[l]) * gain;
        f[8 * g + l] = v;
        acc[l] += v * v;
      }
    for (int l = 0; l < 4; l++) p[l] += (double)acc[2 * l] + acc[2 * l + 1];
  }
  i += 4 * groups;
  for (r = 0; i < n; i++, r++) {
    z[i].re = (z[i].re - dc.re) * gain;
    z[i].im = (z[i].im - dc.im) * gain;
    p[r] += (double)z[i].re * z[i].re + (double)z[i].im * z[i].im;
  }
  x[0] += p[0] - p[2];
  x[1] += p[3] - p[1];
}

void qpsk_om_accum4(prx_cf32 *z, size_t n, prx_cf32 dc, float gain, double x[4][2]) {
  PRX_ISA_DISPATCH(qpsk_om_accum4, z, n, dc, gain, x);
  /* qpsk_om_accum's vector loop (its runs of 256 groups: one here), run by run interleaved */
  float *f[4];
  float acc[4][8];
  for (int k = 0; k < 4; k++) f[k] = (float *)(z + (size_t)k * n);
  const size_t groups = n / 4;
#ifdef QPSK_AVX2
  const __m256 d8 = _mm256_setr_ps(dc.re, dc.im, dc.re, dc.im, dc.re, dc.im, dc.re, dc.im);
  const __m256 g8 = _mm256_set1_ps(gain);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t g = 0; g < groups; g++) {
    __m256 v0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(f[0] + 8 * g), d8), g8);
    __m256 v1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(f[1] + 8 * g), d8), g8);
    __m256 v2 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(f[2] + 8 * g), d8), g8);
    __m256 v3 = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(f[3] + 8 * g), d8), g8);
    _mm256_storeu_ps(f[0] + 8 * g, v0);
    _mm256_storeu_ps(f[1] + 8 * g, v1);
    _mm256_storeu_ps(f[2] + 8 * g, v2);
    _mm256_storeu_ps(f[3] + 8 * g, v3);
    a0 = _mm256_add_ps(a0, _mm256_mul_ps(v0, v0));
    a1 = _mm256_add_ps(a1, _mm256_mul_ps(v1, v1));
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(v2, v2));
    a3 = _mm256_add_ps(a3, _mm256_mul_ps(v3, v3));
  }
  _mm256_storeu_ps(acc[0], a0);
  _mm256_storeu_ps(acc[1], a1);
  _mm256_storeu_ps(acc[2], a2);
  _mm256_storeu_ps(acc[3], a3);
#else
  const float d[8] = {dc.re, dc.im, dc.re, dc.im, dc.re, dc.im, dc.re, dc.im};
  memset(acc, 0, sizeof acc);
  for (size_t g = 0; g < groups; g++)
    for (int k = 0; k < 4; k++)
      for (int l = 0; l < 8; l++) {
        float v = (f[k][8 * g + l] - d[l]) * gain;
        f[k][8 * g + l] = v;
        acc[k][l] += v * v;
      }
#endif
  for (int k = 0; k < 4; k++) {
    double p[4] = {0, 0, 0, 0};
    for (int l = 0; l < 4; l++) p[l] += (double)acc[k][2 * l] + acc[k][2 * l + 1];
    x[k][0] = 0;
    x[k][1] = 0;
    x[k][0] += p[0] - p[2];
    x[k][1] += p[3] - p[1];
  }
}

double qpsk_om_tau(const double x[2]) {
  double t = -atan2(x[1], x[0]) / (2 * M_PI);
  if (t <= -0.5) t += 1;
  return t;
}

void qpsk_sums_accum(const prx_cf32 *y, size_t n, qpsk_sums *s) {
  PRX_ISA_DISPATCH(qpsk_sums_accum, y, n, s);
  size_t c = 0;
#ifdef QPSK_AVX2
  /* eight whole runs at once, one per lane (their symbols transposed four at a time): each run
   * takes the operations of the loop below in the same order, so the same sums to the last bit,
   * folded into double in the same run order */
  const __m256 two = _mm256_set1_ps(2.0f);
  for (; c + 8 * 64 <= n; c += 8 * 64) {
    __m256 sr = _mm256_setzero_ps(), si = sr, m2 = sr, m4 = sr;
    for (size_t i = 0; i < 64; i += 4) {
      __m256 v[8];
      for (int j = 0; j < 8; j++) v[j] = _mm256_loadu_ps((const float *)(y + c + 64 * j + i));
      transpose8(v);
      for (int k = 0; k < 8; k += 2) {
        __m256 a = v[k], b = v[k + 1], aa = _mm256_mul_ps(a, a), bb = _mm256_mul_ps(b, b);
        __m256 p = _mm256_add_ps(aa, bb), s2r = _mm256_sub_ps(aa, bb);
        __m256 s2i = _mm256_mul_ps(_mm256_mul_ps(two, a), b);
        sr = _mm256_add_ps(sr, _mm256_sub_ps(_mm256_mul_ps(s2r, s2r), _mm256_mul_ps(s2i, s2i)));
        si = _mm256_add_ps(si, _mm256_mul_ps(_mm256_mul_ps(two, s2r), s2i));
        m2 = _mm256_add_ps(m2, p);
        m4 = _mm256_add_ps(m4, _mm256_mul_ps(p, p));
      }
    }
    float r[4][8];
    _mm256_storeu_ps(r[0], sr);
    _mm256_storeu_ps(r[1], si);
    _mm256_storeu_ps(r[2], m2);
    _mm256_storeu_ps(r[3], m4);
    for (int j = 0; j < 8; j++) {
      s->s4[0] += r[0][j];
      s->s4[1] += r[1][j];
      s->m2 += r[2][j];
      s->m4 += r[3][j];
    }
  }
#endif
  /* float lanes over runs of 64 symbols, folded into double */
  for (; c < n; c += 64) {
    size_t e = c + 64 < n ? c + 64 : n;
    float sr = 0, si = 0, m2 = 0, m4 = 0;
    for (size_t i = c; i < e; i++) {
      float a = y[i].re, b = y[i].im, p = a * a + b * b;
      float s2r = a * a - b * b, s2i = 2 * a * b;
      sr += s2r * s2r - s2i * s2i;
      si += 2 * s2r * s2i;
      m2 += p;
      m4 += p * p;
    }
    s->s4[0] += sr;
    s->s4[1] += si;
    s->m2 += m2;
    s->m4 += m4;
  }
  s->n += (double)n;
}

double qpsk_wrap(double x, double period) {
  double y = x - period * floor(x / period + 0.5);
  if (y <= -period / 2) y += period;
  if (y > period / 2) y -= period;
  return y;
}

void qpsk_derotate(const prx_cf32 *in, prx_cf32 *out, size_t n, double theta, double omega,
                   prx_cf32 dc, double gain) {
  PRX_ISA_DISPATCH(qpsk_derotate, in, out, n, theta, omega, dc, gain);
  double ar = gain * cos(theta), ai = -gain * sin(theta); /* anchor gain exp(-j theta) */
  const float dr = dc.re, di = dc.im;
  const size_t CH = 256; /* anchor spacing: 16 float steps of 16 omega in between */
  const double sr = cos((double)CH * omega), si = -sin((double)CH * omega);
  double lr[4], li[4]; /* exp(-j omega l) */
  for (int l = 0; l < 4; l++) {
    lr[l] = cos(l * omega);
    li[l] = -sin(l * omega);
  }
  const float s4r = (float)cos(4 * omega), s4i = (float)-sin(4 * omega);
  for (size_t c = 0; c < n; c += CH) {
    float pr[4], pi[4];
    for (int l = 0; l < 4; l++) {
      pr[l] = (float)(ar * lr[l] - ai * li[l]);
      pi[l] = (float)(ar * li[l] + ai * lr[l]);
    }
    size_t e = c + CH < n ? c + CH : n, i = c;
#ifdef QPSK_AVX2
    /* four independent phasor chains (samples i..i+3, +4, +8, +12), each stepped by
     * exp(-j 16 omega): the complex product's latency no longer limits the loop. The products
     * are cmul8's, arranged to need few shuffles (the loop's limit): the input's real and
     * imaginary parts come duplicated from the loads (less the DC, duplicated), and each step
     * reuses the phasor's swapped halves; the step's products are cmul8(step, p), whose terms
     * are those of cmul8(p, step) in another order of the same commutative operations. */
    const float s16r = (float)cos(16 * omega), s16i = (float)-sin(16 * omega);
    __m256 p0 = _mm256_setr_ps(pr[0], pi[0], pr[1], pi[1], pr[2], pi[2], pr[3], pi[3]);
    const __m256 st4 = _mm256_setr_ps(s4r, s4i, s4r, s4i, s4r, s4i, s4r, s4i);
    const __m256 dcv = _mm256_setr_ps(dr, di, dr, di, dr, di, dr, di);
    const __m256 dre = _mm256_set1_ps(dr), dim = _mm256_set1_ps(di);
    const __m256 s16re = _mm256_set1_ps(s16r), s16im = _mm256_set1_ps(s16i);
    __m256 p1 = cmul8(p0, st4), p2 = cmul8(p1, st4), p3 = cmul8(p2, st4);
    for (; i + 16 <= e; i += 16) {
      const float *x = (const float *)(in + i);
      __m256 w0 = _mm256_permute_ps(p0, 0xB1), w1 = _mm256_permute_ps(p1, 0xB1);
      __m256 w2 = _mm256_permute_ps(p2, 0xB1), w3 = _mm256_permute_ps(p3, 0xB1);
      _mm256_storeu_ps((float *)(out + i), cmul8_dc(x, dre, dim, p0, w0));
      _mm256_storeu_ps((float *)(out + i + 4), cmul8_dc(x + 8, dre, dim, p1, w1));
      _mm256_storeu_ps((float *)(out + i + 8), cmul8_dc(x + 16, dre, dim, p2, w2));
      _mm256_storeu_ps((float *)(out + i + 12), cmul8_dc(x + 24, dre, dim, p3, w3));
      p0 = _mm256_addsub_ps(_mm256_mul_ps(s16re, p0), _mm256_mul_ps(s16im, w0));
      p1 = _mm256_addsub_ps(_mm256_mul_ps(s16re, p1), _mm256_mul_ps(s16im, w1));
      p2 = _mm256_addsub_ps(_mm256_mul_ps(s16re, p2), _mm256_mul_ps(s16im, w2));
      p3 = _mm256_addsub_ps(_mm256_mul_ps(s16re, p3), _mm256_mul_ps(s16im, w3));
    }
    for (; i + 4 <= e; i += 4) {
      _mm256_storeu_ps((float *)(out + i),
                       cmul8(_mm256_sub_ps(_mm256_loadu_ps((const float *)(in + i)), dcv), p0));
      p0 = cmul8(p0, st4);
    }
    float tmp[8];
    _mm256_storeu_ps(tmp, p0);
    for (int l = 0; l < 4; l++) {
      pr[l] = tmp[2 * l];
      pi[l] = tmp[2 * l + 1];
    }
#else
    for (; i + 4 <= e; i += 4) {
      for (int l = 0; l < 4; l++) {
        float xr = in[i + l].re - dr, xi = in[i + l].im - di;
        out[i + l].re = xr * pr[l] - xi * pi[l];
        out[i + l].im = xr * pi[l] + xi * pr[l];
        float tr = pr[l] * s4r - pi[l] * s4i;
        pi[l] = pr[l] * s4i + pi[l] * s4r;
        pr[l] = tr;
      }
    }
#endif
    for (int l = 0; i < e; i++, l++) {
      float xr = in[i].re - dr, xi = in[i].im - di;
      out[i].re = xr * pr[l] - xi * pi[l];
      out[i].im = xr * pi[l] + xi * pr[l];
    }
    double tr = ar * sr - ai * si;
    ai = ar * si + ai * sr;
    ar = tr;
    double g = gain / sqrt(ar * ar + ai * ai);
    ar *= g;
    ai *= g;
  }
}
