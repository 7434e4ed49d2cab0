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
static void moments_chunk(const prx_cf32 *x, size_t n, double mom[3], double *n_fin,
                          unsigned *n_bad) {
  /* the largest |component| and whether all are finite, in one pass */
  const float *f = (const float *)x;
  float mx = 0;
  int finite = 1;
  size_t k = 0;
#ifdef QPSK_AVX2
  {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff), big = _mm256_set1_epi32(0x7f7fffff);
    __m256i m8 = _mm256_setzero_si256(), bad8 = m8;
    for (; k + 8 <= 2 * n; k += 8) {
      __m256i v = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(f + k)), absm);
      bad8 = _mm256_or_si256(bad8, _mm256_cmpgt_epi32(v, big));
      m8 = _mm256_max_epi32(m8, v); /* finite non-negative floats order as integers */
    }
    int32_t mv[8];
    _mm256_storeu_si256((__m256i *)mv, m8);
    for (int l = 0; l < 8; l++) {
      float fv;
      memcpy(&fv, &mv[l], sizeof fv);
      mx = fmaxf(mx, fv);
    }
    finite = _mm256_testz_si256(bad8, bad8);
  }
#endif
  for (; k < 2 * n; k++) {
    finite &= isfinite(f[k]);
    mx = fmaxf(mx, fabsf(f[k]));
  }
  if (!finite) {
    for (size_t i = 0; i < n; i++) {
      double re = x[i].re, im = x[i].im;
      if (!isfinite(re) || !isfinite(im)) {
        ++*n_bad;
        continue;
      }
      mom[0] += re;
      mom[1] += im;
      mom[2] += re * re + im * im;
      *n_fin += 1;
    }
    return;
  }
  *n_fin += (double)n;
  if (mx == 0) return;
  int ex;
  frexpf(mx, &ex);
  const float sc = ldexpf(1.0f, 1 - ex); /* mx sc in [1, 2) */
  float ar = 0, ai = 0, pp = 0;
  k = 0;
#ifdef QPSK_AVX2
  if (n == 256) {
    const __m256 s8 = _mm256_set1_ps(sc);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, p0 = a0, p1 = a0;
    for (; k < 512; k += 16) {
      __m256 v0 = _mm256_mul_ps(_mm256_loadu_ps(f + k), s8);
      __m256 v1 = _mm256_mul_ps(_mm256_loadu_ps(f + k + 8), s8);
      a0 = _mm256_add_ps(a0, v0);
      a1 = _mm256_add_ps(a1, v1);
      p0 = _mm256_fmadd_ps(v0, v0, p0);
      p1 = _mm256_fmadd_ps(v1, v1, p1);
    }
    float av[8], pv[8];
    _mm256_storeu_ps(av, _mm256_add_ps(a0, a1));
    _mm256_storeu_ps(pv, _mm256_add_ps(p0, p1));
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
  const double inv = ldexp(1.0, ex - 1);
  mom[0] += ar * inv;
  mom[1] += ai * inv;
  mom[2] += pp * inv * inv;
}

void qpsk_input_moments(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *scratch, double mom[3],
                        double *n_fin, unsigned *n_bad) {
  mom[0] = mom[1] = mom[2] = 0;
  *n_fin = 0;
  *n_bad = 0;
  if (lo < 0) lo = 0;
  if (hi > q->n_total) hi = q->n_total;
  /* chunks at absolute positions (multiples of 256), so that the sums do not depend on how the
   * input was cut into calls */
  while (lo < hi) {
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
