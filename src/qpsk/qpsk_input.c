/* Input access for the demodulator's stages: the raw samples kept from earlier calls (the buffer)
 * and the caller's chunk of the current call, read as cf32 through the one block converter
 * (prx_convert_block); level and DC sums over them. No stage reads the input any other way. */
#include "qpsk_internal.h"

#include "../dsp/convert.h"
#include "qpsk_simd.h"

#include <math.h>
#include <string.h>

int64_t qpsk_count_below(double limit, double step) {
  if (limit <= 0) return 0;
  return (int64_t)ceil(limit / step - 1e-9);
}

/* the matched filter reads, for block b, the instants of its symbols: within
 * [(bL - 1) sps, ((b+1)L + 1) sps) (neighbouring blocks' timing models meet within half a
 * symbol) */
void qpsk_mf_window(const prx_qpsk *q, int64_t b, int64_t *lo, int64_t *hi) {
  int64_t L = q->L;
  *lo = (int64_t)floor((double)(b * L - 1) * q->sps) - q->mf.c - 1;
  *hi = (int64_t)floor((double)((b + 1) * L + 1) * q->sps) + 2 - q->mf.c + (int64_t)q->mf.ntaps;
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

/* sums of one finite chunk in double (any finite level) */
static void chunk_double(const prx_cf32 *x, size_t n, double *sr, double *si, double *sp) {
  double a = 0, b = 0, c = 0;
  for (size_t i = 0; i < n; i++) {
    double re = x[i].re, im = x[i].im;
    a += re;
    b += im;
    c += re * re + im * im;
  }
  *sr += a;
  *si += b;
  *sp += c;
}

/* sums over n cf32 samples, the non-finite ones counted and left out. Chunks of 256 finite
 * samples are summed in float lanes (a vector loop), and again in double where the float power
 * overflows or underflows (levels beyond about 1e18 or below 1e-18) */
static void moments(const prx_cf32 *x, size_t n, double mom[3], double *n_fin, unsigned *n_bad) {
  double sr = 0, si = 0, sp = 0;
  size_t bad = 0, i = 0;
  for (; i + 256 <= n; i += 256) {
    if (!all_finite(x + i, 256)) break;
    const float *f = (const float *)(x + i);
    float ar = 0, ai = 0, pp = 0;
#ifdef QPSK_AVX2
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, p0 = a0, p1 = a0;
    for (size_t k = 0; k < 512; k += 16) {
      __m256 v0 = _mm256_loadu_ps(f + k), v1 = _mm256_loadu_ps(f + k + 8);
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
#else
    for (size_t k = 0; k < 512; k += 2) {
      ar += f[k];
      ai += f[k + 1];
      pp += f[k] * f[k] + f[k + 1] * f[k + 1];
    }
#endif
    if (pp < 1e30f && pp > 1e-30f) {
      sr += ar;
      si += ai;
      sp += pp;
    } else {
      chunk_double(x + i, 256, &sr, &si, &sp);
    }
  }
  for (; i < n; i++) {
    if (!isfinite(x[i].re) || !isfinite(x[i].im)) {
      bad++;
      continue;
    }
    chunk_double(x + i, 1, &sr, &si, &sp);
  }
  mom[0] += sr;
  mom[1] += si;
  mom[2] += sp;
  *n_fin += (double)(n - bad);
  *n_bad += (unsigned)bad;
}

void qpsk_input_moments(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *scratch, double mom[3],
                        double *n_fin, unsigned *n_bad) {
  mom[0] = mom[1] = mom[2] = 0;
  *n_fin = 0;
  *n_bad = 0;
  if (lo < 0) lo = 0;
  if (hi > q->n_total) hi = q->n_total;
  while (lo < hi) {
    size_t k;
    const uint8_t *src = piece(q, lo, &k);
    if (k > (size_t)(hi - lo)) k = (size_t)(hi - lo);
    if (q->cfg.in_format == PRX_CF32) {
      moments((const prx_cf32 *)src, k, mom, n_fin, n_bad);
    } else {
      prx_convert_block(q->cfg.in_format, src, k, scratch);
      moments(scratch, k, mom, n_fin, n_bad);
    }
    lo += (int64_t)k;
  }
}
