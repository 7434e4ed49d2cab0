/* Input access for the demodulator's stages: the raw samples kept from earlier calls (the buffer)
 * and the caller's chunk of the current call, read as cf32 through the one block converter
 * (prx_convert_block); level and DC sums over them. No stage reads the input any other way. */
#include "qpsk_internal.h"

#include "../dsp/convert.h"
#include "qpsk_simd.h"
#include "qpsk_stage_math.h"

#include <math.h>
#include <string.h>

int64_t qpsk_count_below(double limit, double step) { return qpsk_count_below_of(limit, step); }

/* the matched filter reads, for block b, the instants of its symbols: within
 * [(bL - 1) sps, ((b+1)L + 1) sps) (neighbouring blocks' timing models meet within half a
 * symbol) */
void qpsk_mf_window(const prx_qpsk *q, int64_t b, int64_t *lo, int64_t *hi) {
  qpsk_mf_window_of(b, q->L, q->sps, q->mf.c, q->mf.ntaps, lo, hi);
}

/* the samples [lo, hi) when they lie in one piece of memory (the buffer, or the caller's chunk
 * of the current call), else NULL */
static const uint8_t *contiguous(const prx_qpsk *q, int64_t lo, int64_t hi) {
  const int64_t buf_end = q->buf_base + (int64_t)q->buf_len;
  if (lo >= q->buf_base && hi <= buf_end) return q->buf + (size_t)(lo - q->buf_base) * q->in_size;
  if (q->ext && lo >= q->ext_base && hi <= q->ext_base + (int64_t)q->ext_n)
    return q->ext + (size_t)(lo - q->ext_base) * q->in_size;
  return NULL;
}

/* NaN and infinite samples (a faulty source, or a wrong format) read as 0, an erasure: one of
 * them would otherwise spoil the spectrum of a whole CFO span. A test on the exponent bits (a
 * vector loop). */
static int all_finite(const prx_cf32 *x, size_t n) {
  const uint32_t *u = (const uint32_t *)x;
  uint32_t bad = 0;
  for (size_t i = 0; i < 2 * n; i++) bad |= (u[i] & 0x7f800000u) == 0x7f800000u;
  return !bad;
}
static void scrub(prx_cf32 *x, size_t n) {
  uint32_t *u = (uint32_t *)x;
  for (size_t i = 0; i < 2 * n; i++) u[i] = (u[i] & 0x7f800000u) == 0x7f800000u ? 0 : u[i];
}

/* the piece of stream samples from a (inside the buffer or the chunk): its start and length */
static const uint8_t *piece(const prx_qpsk *q, int64_t a, size_t *k) {
  const int64_t buf_end = q->buf_base + (int64_t)q->buf_len;
  if (a < buf_end) {
    *k = (size_t)(buf_end - a);
    return q->buf + (size_t)(a - q->buf_base) * q->in_size;
  }
  *k = q->ext_n - (size_t)(a - q->ext_base);
  return q->ext + (size_t)(a - q->ext_base) * q->in_size;
}

const void *qpsk_input_in_chunk(const prx_qpsk *q, int64_t lo, int64_t hi, size_t *bytes) {
  const int64_t ext_end = q->ext_base + (int64_t)q->ext_n;
  if (lo < q->ext_base) lo = q->ext_base;
  if (hi > ext_end) hi = ext_end;
  *bytes = q->ext && hi > lo ? (size_t)(hi - lo) * q->in_size : 0;
  return *bytes ? q->ext + (size_t)(lo - q->ext_base) * q->in_size : NULL;
}

/* converts m samples starting at stream index a (inside the buffer or the chunk) to cf32 */
static void convert_span(const prx_qpsk *q, int64_t a, size_t m, prx_cf32 *out) {
  while (m > 0) {
    size_t k;
    const uint8_t *src = piece(q, a, &k);
    if (k > m) k = m;
    prx_convert_block(q->cfg.in_format, src, k, out);
    if (q->cfg.in_format == PRX_CF32) scrub(out, k);
    out += k;
    a += (int64_t)k;
    m -= k;
  }
}

const prx_cf32 *qpsk_fetch(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *out, int rotate,
                           double theta, double omega, const double dc[2], double gain,
                           int64_t fin_lo, int64_t fin_hi) {
  const int64_t end = q->n_total;
  size_t n = (size_t)(hi - lo);
  const prx_cf32 dcf = {(float)dc[0], (float)dc[1]};
  if (q->cfg.in_format == PRX_CF32 && lo >= 0 && hi <= end) {
    const prx_cf32 *src = (const prx_cf32 *)contiguous(q, lo, hi);
    /* the part known to be finite is not tested again */
    if (fin_lo < lo) fin_lo = lo;
    if (fin_hi > hi) fin_hi = hi;
    if (fin_hi <= fin_lo) fin_lo = fin_hi = hi;
    if (src && all_finite(src, (size_t)(fin_lo - lo)) &&
        all_finite(src + (fin_hi - lo), (size_t)(hi - fin_hi))) {
      if (!rotate) return src;                             /* read in place: no copy */
      qpsk_derotate(src, out, n, theta, omega, dcf, gain); /* one pass: read, rotate, write */
      return out;
    }
  }
  /* outside the stream: the DC, so that the signal less its DC is 0 there */
  int64_t a = lo < 0 ? 0 : lo, z = hi < end ? hi : end;
  size_t i = 0;
  for (; (int64_t)i < a - lo && i < n; i++) out[i] = dcf;
  if (z > a) {
    convert_span(q, a, (size_t)(z - a), out + i);
    i += (size_t)(z - a);
  }
  for (; i < n; i++) out[i] = dcf;
  if (rotate) qpsk_derotate(out, out, n, theta, omega, dcf, gain);
  return out;
}

/* Sums of one chunk of at most 256 samples, added to mom: finite samples in float lanes (a
 * vector loop) after scaling by the power of 2 that brings the chunk's largest component into
 * [1, 2) (so that any level sums alike, and a power-of-2 level gives results scaled exactly);
 * a chunk with non-finite samples in double, those counted and left out. */
/* The float sums of re, im and |x|^2 of n samples scaled by sc (a power of 2), in vector lanes.
 * The summation order depends on n only, so two scalings give sums that are exact scalings of
 * each other while no square overflows or underflows. */
static void chunk_sums(const float *f, size_t n, float sc, float out[3]) {
  float ar = 0, ai = 0, pp = 0;
  size_t k = 0;
#ifdef QPSK_AVX2
  {
    const __m256 s8 = _mm256_set1_ps(sc);
    __m256 a0 = _mm256_setzero_ps(), p0 = a0;
    for (; k + 8 <= 2 * n; k += 8) {
      __m256 v = _mm256_mul_ps(_mm256_loadu_ps(f + k), s8);
      a0 = _mm256_add_ps(a0, v);
      p0 = _mm256_fmadd_ps(v, v, p0);
    }
    float av[8], pv[8];
    _mm256_storeu_ps(av, a0);
    _mm256_storeu_ps(pv, p0);
    for (int l = 0; l < 8; l += 2) {
      ar += av[l];
      ai += av[l + 1];
      pp += pv[l] + pv[l + 1];
    }
  }
#endif
  for (; k < 2 * n; k += 2) {
    float re = f[k] * sc, im = f[k + 1] * sc;
    ar += re;
    ai += im;
    pp += re * re + im * im;
  }
  out[0] = ar;
  out[1] = ai;
  out[2] = pp;
}

#ifdef QPSK_AVX2
/* chunk_sums(f[c], 256, 1, out[c]) of four chunks at once: the same operations in the same order
 * for each chunk (so the same sums to the last bit), in four independent chains that keep the
 * adder busy where one chunk alone waits on its latency. A scale of 1 leaves every value as it
 * is, so there is no multiplication. */
static void chunk_sums4(const float *const f[4], float out[4][3]) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, p0 = a0, p1 = a0, p2 = a0, p3 = a0;
  for (size_t k = 0; k < 2 * 256; k += 8) {
    __m256 v0 = _mm256_loadu_ps(f[0] + k), v1 = _mm256_loadu_ps(f[1] + k);
    __m256 v2 = _mm256_loadu_ps(f[2] + k), v3 = _mm256_loadu_ps(f[3] + k);
    a0 = _mm256_add_ps(a0, v0);
    p0 = _mm256_fmadd_ps(v0, v0, p0);
    a1 = _mm256_add_ps(a1, v1);
    p1 = _mm256_fmadd_ps(v1, v1, p1);
    a2 = _mm256_add_ps(a2, v2);
    p2 = _mm256_fmadd_ps(v2, v2, p2);
    a3 = _mm256_add_ps(a3, v3);
    p3 = _mm256_fmadd_ps(v3, v3, p3);
  }
  const __m256 a[4] = {a0, a1, a2, a3}, p[4] = {p0, p1, p2, p3};
  for (int c = 0; c < 4; c++) {
    float av[8], pv[8], ar = 0, ai = 0, pp = 0;
    _mm256_storeu_ps(av, a[c]);
    _mm256_storeu_ps(pv, p[c]);
    for (int l = 0; l < 8; l += 2) {
      ar += av[l];
      ai += av[l + 1];
      pp += pv[l] + pv[l + 1];
    }
    out[c][0] = ar;
    out[c][1] = ai;
    out[c][2] = pp;
  }
}
#endif

/* Sums of one chunk of at most 256 samples, added to mom. Usually one vector pass: the float
 * sums, accepted when the sum of squares lies in [2^-80, 2^80] (nothing overflowed, no term that
 * matters underflowed, no sample was NaN or infinite). Otherwise: a chunk with non-finite samples
 * is summed in double, those counted and left out; a finite chunk beyond that range (levels
 * beyond about 2^+-40) is summed again scaled by the power of 2 that brings its largest
 * component into [1, 2). So any finite level gives the same sums up to its scale, and a
 * power-of-2 level exactly scaled sums. */
static void moments_chunk_of(const prx_cf32 *x, size_t n, const float r0[3], double mom[3],
                             double *n_fin, unsigned *n_bad) {
  const float *f = (const float *)x;
  float r[3] = {r0[0], r0[1], r0[2]};
  if (r[2] >= 0x1p-80f && r[2] <= 0x1p80f && isfinite(r[0]) && isfinite(r[1])) {
    mom[0] += r[0];
    mom[1] += r[1];
    mom[2] += r[2];
    *n_fin += (double)n;
    return;
  }
  float mx = 0;
  unsigned bad = 0;
  for (size_t k = 0; k < 2 * n; k += 2) {
    if (!isfinite(f[k]) || !isfinite(f[k + 1])) {
      bad++;
      continue;
    }
    mx = fmaxf(mx, fmaxf(fabsf(f[k]), fabsf(f[k + 1])));
  }
  if (bad) {
    for (size_t i = 0; i < n; i++) {
      double re = x[i].re, im = x[i].im;
      if (!isfinite(re) || !isfinite(im)) continue;
      mom[0] += re;
      mom[1] += im;
      mom[2] += re * re + im * im;
    }
    *n_bad += bad;
    *n_fin += (double)(n - bad);
    return;
  }
  *n_fin += (double)n;
  if (mx == 0) return;
  int ex;
  frexpf(mx, &ex);
  chunk_sums(f, n, ldexpf(1.0f, 1 - ex), r);
  const double inv = ldexp(1.0, ex - 1);
  mom[0] += r[0] * inv;
  mom[1] += r[1] * inv;
  mom[2] += r[2] * inv * inv;
}
static void moments_chunk(const prx_cf32 *x, size_t n, double mom[3], double *n_fin,
                          unsigned *n_bad) {
  float r[3];
  chunk_sums((const float *)x, n, 1.0f, r);
  moments_chunk_of(x, n, r, mom, n_fin, n_bad);
}

void qpsk_input_moments(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *scratch, double mom[3],
                        double *n_fin, unsigned *n_bad) {
  PRX_ISA_DISPATCH(qpsk_input_moments, q, lo, hi, scratch, mom, n_fin, n_bad);
  mom[0] = mom[1] = mom[2] = 0;
  *n_fin = 0;
  *n_bad = 0;
  if (lo < 0) lo = 0;
  if (hi > q->n_total) hi = q->n_total;
  /* chunks at absolute positions (multiples of 256), so that the sums do not depend on how the
   * input was cut into calls */
  while (lo < hi) {
#ifdef QPSK_AVX2
    /* four whole chunks read in place: their float sums together */
    if (q->cfg.in_format == PRX_CF32 && lo % 256 == 0 && hi - lo >= 4 * 256) {
      const prx_cf32 *x4 = (const prx_cf32 *)contiguous(q, lo, lo + 4 * 256);
      if (x4) {
        const float *f4[4];
        float r4[4][3];
        for (int c = 0; c < 4; c++) f4[c] = (const float *)(x4 + 256 * c);
        chunk_sums4(f4, r4);
        for (int c = 0; c < 4; c++) moments_chunk_of(x4 + 256 * c, 256, r4[c], mom, n_fin, n_bad);
        lo += 4 * 256;
        continue;
      }
    }
#endif
    int64_t c_end = (lo / 256 + 1) * 256;
    if (c_end > hi) c_end = hi;
    size_t m = (size_t)(c_end - lo);
    const prx_cf32 *x;
    if (q->cfg.in_format == PRX_CF32 && (x = (const prx_cf32 *)contiguous(q, lo, c_end)) != NULL) {
      /* in place */
    } else {
      size_t done = 0;
      while (done < m) { /* raw: the chunk may straddle the buffer and the caller's chunk */
        size_t k;
        const uint8_t *src = piece(q, lo + (int64_t)done, &k);
        if (k > m - done) k = m - done;
        prx_convert_block(q->cfg.in_format, src, k, scratch + done);
        done += k;
      }
      x = scratch;
    }
    moments_chunk(x, m, mom, n_fin, n_bad);
    lo = c_end;
  }
}
