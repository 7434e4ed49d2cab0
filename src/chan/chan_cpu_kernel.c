/* Polyphase filter kernel of the CPU channelizer (see chan_cpu_kernel.h for the arithmetic).
 * Built for baseline x86-64 and for AVX2 + FMA, the variant chosen at run time
 * (PRX_ISA_DISPATCH, ../core/internal.h).
 *
 * Every output element is the same sequence of operations whichever path computes it: a sum
 * over q = 0..P-1 in order, each step one fused multiply-add (fmaf in the portable code, FMA
 * lanes in the AVX2 code). So the AVX2 groups of 4 outputs, the single-output path and the
 * scalar tail give bit-identical values, and how outputs are grouped (which depends on the
 * chunking of the input, never on the thread count) does not change the result.
 *
 * Speed (AVX2): 4 complex per 256-bit vector; four outputs are computed together, so that each
 * tap vector is loaded once for 4 FMAs and the input segments they share are loaded once: with
 * R = 2, output i + 2 at phase q reads the segment that output i reads at phase q + 1; with
 * R = 1, output i + 1 at phase q that of output i at q + 1. Per phase that is 3 loads for 4 FMAs
 * (R = 2) or 2 (R = 1), within the 2 loads + 2 FMAs per cycle of current cores, with the sums
 * kept in registers. The segment pads keep the ~3P segments touched at once in different L1
 * sets (without them, rows 4 KiB apart all fall in one set and thrash), and a segment is cut
 * into tiles so that the tap tile stays in L1 while all outputs of a batch pass over it. */
#include "chan_cpu_kernel.h"

#include "../core/internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define PRX_KERNEL_AVX2 1
/* Pins a loaded vector in a register: without it GCC folds the tap load into every FMA as a
 * memory operand, which doubles the loads per FMA and makes the loop load-bound. */
#if defined(__GNUC__)
#define IN_REG(v) __asm__("" : "+x"(v))
#else
#define IN_REG(v) (void)0
#endif
#endif

/* floats of a segment handled per tile (a multiple of 8) */
#define TILE 64

/* One output, portable C, floats [c0, c1) of segment phase h: taps th (stride tq per phase),
 * input xh (stride xq per phase), stored at dst[c + 2] (the (r' + 1) mod K shift; the row's
 * last complex lands in its pad element K and is wrapped to 0 afterwards). Eight elements at a
 * time with the sums in a local array, which compilers keep in registers (and vectorise in
 * builds without AVX2); each element sums over q in order. With hardware FMA (the AVX2 build,
 * where this only does the floats past the last full vector, or all of a tiny K) the steps are
 * fused like the vector code's, so both give the same bits. */
#ifdef __FMA__
#define MADD(a, b, acc) fmaf(a, b, acc)
#else
#define MADD(a, b, acc) ((acc) + (a) * (b))
#endif
static void row_scalar(const float *th, size_t tq, const float *xh, size_t xq, size_t P, size_t c0,
                       size_t c1, float *dst) {
  size_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    float acc[8] = {0};
    for (size_t q = 0; q < P; q++) {
      const float *t = th + q * tq + c, *x = xh + q * xq + c;
      for (int l = 0; l < 8; l++) acc[l] = MADD(t[l], x[l], acc[l]);
    }
    for (int l = 0; l < 8; l++) dst[c + 2 + l] = acc[l];
  }
  for (; c < c1; c++) { /* the last < 8: one register sum each (a variable-length local
                           array would live in memory and chain through store forwarding) */
    float acc = 0;
    for (size_t q = 0; q < P; q++) acc = MADD(th[q * tq + c], xh[q * xq + c], acc);
    dst[c + 2] = acc;
  }
}

#ifdef PRX_KERNEL_AVX2
static void row_avx2(const float *th, size_t tq, const float *xh, size_t xq, size_t P, size_t c0,
                     size_t c1, float *dst) {
  for (size_t c = c0; c < c1; c += 8) {
    __m256 a = _mm256_setzero_ps();
    for (size_t q = 0; q < P; q++)
      a = _mm256_fmadd_ps(_mm256_loadu_ps(th + q * tq + c), _mm256_loadu_ps(xh + q * xq + c), a);
    _mm256_storeu_ps(dst + c + 2, a);
  }
}

/* Four outputs, R = 2: outputs 0, 2 read E[q], E[q + 1]; outputs 1, 3 read O[q], O[q + 1],
 * where O is one segment (xo floats) after E and a phase step is two segments (xq floats). */
static void rows4_r2(const float *th, size_t tq, const float *E, size_t xq, size_t xo, size_t P,
                     size_t c0, size_t c1, float *const d[4]) {
  const float *O = E + xo;
  for (size_t c = c0; c < c1; c += 8) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 e0 = _mm256_loadu_ps(E + c), o0 = _mm256_loadu_ps(O + c);
    for (size_t q = 0; q < P; q++) {
      __m256 h = _mm256_loadu_ps(th + q * tq + c);
      IN_REG(h);
      __m256 e1 = _mm256_loadu_ps(E + (q + 1) * xq + c), o1 = _mm256_loadu_ps(O + (q + 1) * xq + c);
      a0 = _mm256_fmadd_ps(h, e0, a0);
      a1 = _mm256_fmadd_ps(h, o0, a1);
      a2 = _mm256_fmadd_ps(h, e1, a2);
      a3 = _mm256_fmadd_ps(h, o1, a3);
      e0 = e1;
      o0 = o1;
    }
    _mm256_storeu_ps(d[0] + c + 2, a0);
    _mm256_storeu_ps(d[1] + c + 2, a1);
    _mm256_storeu_ps(d[2] + c + 2, a2);
    _mm256_storeu_ps(d[3] + c + 2, a3);
  }
}

/* As rows4_r2 for 16 floats (two vectors) per step: 8 independent FMA chains, enough to hide
 * the FMA latency (4 cycles x 2 per cycle). */
static void rows4_r2x2(const float *th, size_t tq, const float *E, size_t xq, size_t xo, size_t P,
                       size_t c0, size_t c1, float *const d[4]) {
  const float *O = E + xo;
  size_t c = c0;
  for (; c + 16 <= c1; c += 16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    __m256 e0 = _mm256_loadu_ps(E + c), o0 = _mm256_loadu_ps(O + c);
    __m256 f0 = _mm256_loadu_ps(E + c + 8), p0 = _mm256_loadu_ps(O + c + 8);
    for (size_t q = 0; q < P; q++) {
      const float *hq = th + q * tq + c, *eq = E + (q + 1) * xq + c, *oq = O + (q + 1) * xq + c;
      __m256 h = _mm256_loadu_ps(hq);
      IN_REG(h);
      __m256 e1 = _mm256_loadu_ps(eq), o1 = _mm256_loadu_ps(oq);
      a0 = _mm256_fmadd_ps(h, e0, a0);
      a1 = _mm256_fmadd_ps(h, o0, a1);
      a2 = _mm256_fmadd_ps(h, e1, a2);
      a3 = _mm256_fmadd_ps(h, o1, a3);
      e0 = e1;
      o0 = o1;
      __m256 g = _mm256_loadu_ps(hq + 8);
      IN_REG(g);
      __m256 f1 = _mm256_loadu_ps(eq + 8), p1 = _mm256_loadu_ps(oq + 8);
      b0 = _mm256_fmadd_ps(g, f0, b0);
      b1 = _mm256_fmadd_ps(g, p0, b1);
      b2 = _mm256_fmadd_ps(g, f1, b2);
      b3 = _mm256_fmadd_ps(g, p1, b3);
      f0 = f1;
      p0 = p1;
    }
    _mm256_storeu_ps(d[0] + c + 2, a0);
    _mm256_storeu_ps(d[1] + c + 2, a1);
    _mm256_storeu_ps(d[2] + c + 2, a2);
    _mm256_storeu_ps(d[3] + c + 2, a3);
    _mm256_storeu_ps(d[0] + c + 10, b0);
    _mm256_storeu_ps(d[1] + c + 10, b1);
    _mm256_storeu_ps(d[2] + c + 10, b2);
    _mm256_storeu_ps(d[3] + c + 10, b3);
  }
  if (c < c1) rows4_r2(th, tq, E, xq, xo, P, c, c1, d);
}

/* Four outputs, R = 1: output i at phase q reads segment X[q + i]. */
static void rows4_r1(const float *th, size_t tq, const float *X, size_t xq, size_t P, size_t c0,
                     size_t c1, float *const d[4]) {
  for (size_t c = c0; c < c1; c += 8) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 x0 = _mm256_loadu_ps(X + c), x1 = _mm256_loadu_ps(X + xq + c),
           x2 = _mm256_loadu_ps(X + 2 * xq + c);
    for (size_t q = 0; q < P; q++) {
      __m256 h = _mm256_loadu_ps(th + q * tq + c);
      IN_REG(h);
      __m256 x3 = _mm256_loadu_ps(X + (q + 3) * xq + c);
      a0 = _mm256_fmadd_ps(h, x0, a0);
      a1 = _mm256_fmadd_ps(h, x1, a1);
      a2 = _mm256_fmadd_ps(h, x2, a2);
      a3 = _mm256_fmadd_ps(h, x3, a3);
      x0 = x1;
      x1 = x2;
      x2 = x3;
    }
    _mm256_storeu_ps(d[0] + c + 2, a0);
    _mm256_storeu_ps(d[1] + c + 2, a1);
    _mm256_storeu_ps(d[2] + c + 2, a2);
    _mm256_storeu_ps(d[3] + c + 2, a3);
  }
}

/* As rows4_r1 for 16 floats per step (8 independent FMA chains). */
static void rows4_r1x2(const float *th, size_t tq, const float *X, size_t xq, size_t P, size_t c0,
                       size_t c1, float *const d[4]) {
  size_t c = c0;
  for (; c + 16 <= c1; c += 16) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    __m256 x0 = _mm256_loadu_ps(X + c), x1 = _mm256_loadu_ps(X + xq + c),
           x2 = _mm256_loadu_ps(X + 2 * xq + c);
    __m256 y0 = _mm256_loadu_ps(X + c + 8), y1 = _mm256_loadu_ps(X + xq + c + 8),
           y2 = _mm256_loadu_ps(X + 2 * xq + c + 8);
    for (size_t q = 0; q < P; q++) {
      const float *hq = th + q * tq + c, *xq3 = X + (q + 3) * xq + c;
      __m256 h = _mm256_loadu_ps(hq), x3 = _mm256_loadu_ps(xq3);
      IN_REG(h);
      a0 = _mm256_fmadd_ps(h, x0, a0);
      a1 = _mm256_fmadd_ps(h, x1, a1);
      a2 = _mm256_fmadd_ps(h, x2, a2);
      a3 = _mm256_fmadd_ps(h, x3, a3);
      x0 = x1;
      x1 = x2;
      x2 = x3;
      __m256 g = _mm256_loadu_ps(hq + 8), y3 = _mm256_loadu_ps(xq3 + 8);
      IN_REG(g);
      b0 = _mm256_fmadd_ps(g, y0, b0);
      b1 = _mm256_fmadd_ps(g, y1, b1);
      b2 = _mm256_fmadd_ps(g, y2, b2);
      b3 = _mm256_fmadd_ps(g, y3, b3);
      y0 = y1;
      y1 = y2;
      y2 = y3;
    }
    _mm256_storeu_ps(d[0] + c + 2, a0);
    _mm256_storeu_ps(d[1] + c + 2, a1);
    _mm256_storeu_ps(d[2] + c + 2, a2);
    _mm256_storeu_ps(d[3] + c + 2, a3);
    _mm256_storeu_ps(d[0] + c + 10, b0);
    _mm256_storeu_ps(d[1] + c + 10, b1);
    _mm256_storeu_ps(d[2] + c + 10, b2);
    _mm256_storeu_ps(d[3] + c + 10, b3);
  }
  if (c < c1) rows4_r1(th, tq, X, xq, P, c, c1, d);
}
#endif

void prx_chan_filter_rows(const prx_chan_kernel *k, const float *x, size_t n, unsigned parity,
                          prx_cf32 *rows) {
  PRX_ISA_DISPATCH(prx_chan_filter_rows, k, x, n, parity, rows);
  const size_t D2 = 2 * k->D, R = k->R, P = k->P, xp = k->x_pitch, dp = 2 * k->row_pitch;
  const size_t tq = R * k->tap_pitch, xq = R * xp; /* one phase step */
  float *out = (float *)rows;
  for (size_t h = 0; h < R; h++) {
    const float *th = k->taps + h * k->tap_pitch, *xh = x + h * xp;
    /* where part h of row i goes: h D for R = 1 and for even outputs; (h + 1) mod 2 D for odd
     * outputs with R = 2 (the rotation by K/2 that makes (-1)^k) */
#define DST(i) (out + (i)*dp + (R == 2 && ((parity + (i)) & 1) ? (1 - h) : h) * D2)
    size_t nv = 0; /* floats done by the vector code */
#ifdef PRX_KERNEL_AVX2
    nv = D2 & ~(size_t)7;
    for (size_t c0 = 0; c0 < nv; c0 += TILE) {
      size_t c1 = c0 + TILE < nv ? c0 + TILE : nv, i = 0;
      for (; i + 4 <= n; i += 4) {
        float *const d[4] = {DST(i), DST(i + 1), DST(i + 2), DST(i + 3)};
        if (R == 2)
          rows4_r2x2(th, tq, xh + i * xp, xq, xp, P, c0, c1, d);
        else
          rows4_r1x2(th, tq, xh + i * xp, xq, P, c0, c1, d);
      }
      for (; i < n; i++) row_avx2(th, tq, xh + i * xp, xq, P, c0, c1, DST(i));
    }
#endif
    for (size_t i = 0; i < n; i++) row_scalar(th, tq, xh + i * xp, xq, P, nv, D2, DST(i));
#undef DST
  }
  const size_t K2 = R * D2;
  for (size_t i = 0; i < n; i++) { /* the element that landed on index K belongs at 0 */
    out[i * dp] = out[i * dp + K2];
    out[i * dp + 1] = out[i * dp + K2 + 1];
  }
}

/* Streaming (non-temporal) stores: written through write-combining buffers straight to memory,
 * without fetching the line first nor keeping it in this core's caches. An sfence ends a
 * streaming scatter, so the rows are in memory's order before the caller hands them on. */
#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#define PRX_STREAM 1
#endif

static void copy_column(const prx_cf32 *rows, size_t pitch, size_t n, unsigned k, prx_cf32 *dst,
                        int stream) {
#ifdef PRX_STREAM
  if (stream && !((uintptr_t)dst & 7)) { /* 8-byte non-temporal stores, any 8-byte alignment */
    const long long *r = (const long long *)rows;
    long long *d = (long long *)dst;
    for (size_t i = 0; i < n; i++) _mm_stream_si64(d + i, r[i * pitch + k]);
    return;
  }
#endif
  (void)stream;
  for (size_t i = 0; i < n; i++) dst[i] = rows[i * pitch + k];
}

#ifdef PRX_KERNEL_AVX2
/* elements i0 .. i1-1 of columns k .. k+3 (complex values as doubles) to d0 .. d3, plain stores:
 * a run's head before its aligned part and its tail */
static inline void copy4_plain(const double *r, size_t pitch, unsigned k, double *d0, double *d1,
                               double *d2, double *d3, size_t i0, size_t i1) {
  for (size_t i = i0; i < i1; i++) {
    d0[i] = r[i * pitch + k];
    d1[i] = r[i * pitch + k + 1];
    d2[i] = r[i * pitch + k + 2];
    d3[i] = r[i * pitch + k + 3];
  }
}

/* 32 bytes to d: streamed where the caller found d 32-byte aligned, else a plain store */
static inline void put4(double *d, __m256d v, int stream) {
  if (stream)
    _mm256_stream_pd(d, v);
  else
    _mm256_storeu_pd(d, v);
}
#endif

void prx_chan_scatter(const prx_cf32 *rows, size_t pitch, size_t n, const unsigned *sel,
                      size_t n_sel, prx_cf32 *out, size_t stride, int stream) {
  PRX_ISA_DISPATCH(prx_chan_scatter, rows, pitch, n, sel, n_sel, out, stride, stream);
  size_t s = 0;
#ifdef PRX_KERNEL_AVX2
  /* runs of 4 consecutive channels: 4 x 4 transposes of complex (64-bit) elements */
  const double *r = (const double *)rows;
  while (s + 4 <= n_sel) {
    unsigned k = sel[s];
    if (sel[s + 1] != k + 1 || sel[s + 2] != k + 2 || sel[s + 3] != k + 3) {
      copy_column(rows, pitch, n, k, out + s * stride, stream);
      s++;
      continue;
    }
    double *d0 = (double *)(out + s * stride), *d1 = d0 + stride, *d2 = d1 + stride,
           *d3 = d2 + stride;
    size_t i = 0;
    /* streaming: plain stores up to the element where row 0 is 32-byte aligned, then each row
     * streamed where it is aligned there too (all four when the stride is a multiple of 4) */
    int a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    if (stream) {
      size_t h = (4 - ((uintptr_t)d0 >> 3 & 3)) & 3;
      if ((uintptr_t)d0 & 7) h = n; /* not even 8-byte aligned: all plain */
      i = h < n ? h : n;
      copy4_plain(r, pitch, k, d0, d1, d2, d3, 0, i);
      a0 = i < n;
      a1 = a0 && !((uintptr_t)(d1 + i) & 31);
      a2 = a0 && !((uintptr_t)(d2 + i) & 31);
      a3 = a0 && !((uintptr_t)(d3 + i) & 31);
    }
    for (; i + 4 <= n; i += 4) {
      __m256d r0 = _mm256_loadu_pd(r + i * pitch + k),
              r1 = _mm256_loadu_pd(r + (i + 1) * pitch + k),
              r2 = _mm256_loadu_pd(r + (i + 2) * pitch + k),
              r3 = _mm256_loadu_pd(r + (i + 3) * pitch + k);
      __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1),
              t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      put4(d0 + i, _mm256_permute2f128_pd(t0, t2, 0x20), a0);
      put4(d1 + i, _mm256_permute2f128_pd(t1, t3, 0x20), a1);
      put4(d2 + i, _mm256_permute2f128_pd(t0, t2, 0x31), a2);
      put4(d3 + i, _mm256_permute2f128_pd(t1, t3, 0x31), a3);
    }
    copy4_plain(r, pitch, k, d0, d1, d2, d3, i, n);
    s += 4;
  }
#endif
  for (; s < n_sel; s++) copy_column(rows, pitch, n, sel[s], out + s * stride, stream);
#ifdef PRX_STREAM
  if (stream) _mm_sfence();
#endif
}

/* A run of consecutive samples to dst: with streaming stores on its 32-byte aligned part (whole
 * lines of the frame, which the caller reads later from another core), else memcpy. */
static void copy_run(const prx_cf32 *src, size_t n, prx_cf32 *dst, int stream) {
#ifdef PRX_KERNEL_AVX2
  if (stream && !((uintptr_t)dst & 7)) {
    size_t i = 0, h = (4 - ((uintptr_t)dst >> 3 & 3)) & 3;
    for (; i < h && i < n; i++) dst[i] = src[i];
    for (; i + 4 <= n; i += 4)
      _mm256_stream_pd((double *)(dst + i), _mm256_loadu_pd((const double *)(src + i)));
    for (; i < n; i++) dst[i] = src[i];
    return;
  }
#endif
  (void)stream;
  memcpy(dst, src, n * sizeof *dst);
}

void prx_chan_frames(const prx_cf32 *rows, size_t pitch, size_t n, const unsigned *sel,
                     size_t n_sel, prx_cf32 *out, size_t stride, int stream) {
  PRX_ISA_DISPATCH(prx_chan_frames, rows, pitch, n, sel, n_sel, out, stride, stream);
  for (size_t i = 0; i < n; i++) {
    const prx_cf32 *r = rows + i * pitch;
    prx_cf32 *f = out + i * stride;
    for (size_t s = 0; s < n_sel;) {
      size_t e = s + 1; /* the run of consecutive channels sel[s] .. sel[e - 1] */
      while (e < n_sel && sel[e] == sel[e - 1] + 1) e++;
      if (e - s == 1)
        f[s] = r[sel[s]];
      else
        copy_run(r + sel[s], e - s, f + s, stream);
      s = e;
    }
  }
#ifdef PRX_STREAM
  if (stream) _mm_sfence();
#endif
}

/* Direct DFT of the selected channels, for few channels (cheaper than the full FFT then):
 * y_s[i] = sum_r row_i[r] (c_s[r] + i d_s[r]). With row = a + ib, the lane sums
 * A = sum [a c, b c] and B = sum [a d, b d] give y = (A.re - B.im) + i (A.im + B.re); the
 * tables hold c and d duplicated into both lanes. Four rows share each table load. Float
 * partial sums run over blocks of DFT_BLOCK floats and are then added in double, so the
 * rounding error stays near the FFT's even for long rows. */
#define DFT_BLOCK 512

static void dft_finish(const double *A, const double *B, size_t nl, prx_cf32 *y) {
  double ar = 0, ai = 0, br = 0, bi = 0;
  for (size_t l = 0; l < nl; l += 2) ar += A[l], ai += A[l + 1], br += B[l], bi += B[l + 1];
  y->re = (float)(ar - bi);
  y->im = (float)(ai + br);
}

/* Scalar lane sums of floats [c0, c1) of one row, added into A[0..1], B[0..1]. */
static void dft_tail(const float *r, const float *cd, const float *dd, size_t c0, size_t c1,
                     double *A, double *B) {
  for (size_t c = c0; c < c1; c += 2) {
    A[0] += (double)r[c] * cd[c], A[1] += (double)r[c + 1] * cd[c];
    B[0] += (double)r[c] * dd[c], B[1] += (double)r[c + 1] * dd[c];
  }
}

#ifdef PRX_KERNEL_AVX2
static void add_lanes(__m256 v, double *acc) {
  __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)),
          hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  _mm256_storeu_pd(acc, _mm256_add_pd(_mm256_loadu_pd(acc), lo));
  _mm256_storeu_pd(acc + 4, _mm256_add_pd(_mm256_loadu_pd(acc + 4), hi));
}
#endif

void prx_chan_dft(const prx_cf32 *rows, size_t pitch, size_t K, size_t n, const float *tables,
                  size_t n_sel, prx_cf32 *out, size_t s_step, size_t i_step) {
  PRX_ISA_DISPATCH(prx_chan_dft, rows, pitch, K, n, tables, n_sel, out, s_step, i_step);
  const float *rf = (const float *)rows;
  const size_t K2 = 2 * K, p2 = 2 * pitch;
  for (size_t s = 0; s < n_sel; s++) {
    const float *cd = tables + s * 2 * K2, *dd = cd + K2;
    prx_cf32 *y = out + s * s_step;
    size_t i = 0;
#ifdef PRX_KERNEL_AVX2
    const size_t nv = K2 & ~(size_t)7;
    for (; i + 4 <= n; i += 4) {
      const float *r0 = rf + i * p2, *r1 = r0 + p2, *r2 = r1 + p2, *r3 = r2 + p2;
      double A[4][8] = {{0}}, B[4][8] = {{0}};
      for (size_t c0 = 0; c0 < nv; c0 += DFT_BLOCK) {
        size_t c1 = c0 + DFT_BLOCK < nv ? c0 + DFT_BLOCK : nv;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0,
               b3 = a0;
        for (size_t c = c0; c < c1; c += 8) {
          __m256 tc = _mm256_loadu_ps(cd + c), td = _mm256_loadu_ps(dd + c);
          __m256 x0 = _mm256_loadu_ps(r0 + c), x1 = _mm256_loadu_ps(r1 + c),
                 x2 = _mm256_loadu_ps(r2 + c), x3 = _mm256_loadu_ps(r3 + c);
          a0 = _mm256_fmadd_ps(x0, tc, a0);
          b0 = _mm256_fmadd_ps(x0, td, b0);
          a1 = _mm256_fmadd_ps(x1, tc, a1);
          b1 = _mm256_fmadd_ps(x1, td, b1);
          a2 = _mm256_fmadd_ps(x2, tc, a2);
          b2 = _mm256_fmadd_ps(x2, td, b2);
          a3 = _mm256_fmadd_ps(x3, tc, a3);
          b3 = _mm256_fmadd_ps(x3, td, b3);
        }
        add_lanes(a0, A[0]), add_lanes(b0, B[0]), add_lanes(a1, A[1]), add_lanes(b1, B[1]);
        add_lanes(a2, A[2]), add_lanes(b2, B[2]), add_lanes(a3, A[3]), add_lanes(b3, B[3]);
      }
      for (int k = 0; k < 4; k++) {
        dft_tail(rf + (i + k) * p2, cd, dd, nv, K2, A[k], B[k]);
        dft_finish(A[k], B[k], 8, &y[(i + k) * i_step]);
      }
    }
#endif
    for (; i < n; i++) { /* rows left over (and every row in a build without AVX2) */
      const float *r = rf + i * p2;
      double A[16] = {0}, B[16] = {0};
      size_t c = 0;
      while (c + 16 <= K2) {
        size_t c1 = c + DFT_BLOCK;
        if (c1 > (K2 & ~(size_t)15)) c1 = K2 & ~(size_t)15;
        float a[16] = {0}, b[16] = {0}; /* 8 complex partial sums, vectorisable */
        for (; c < c1; c += 16)
          for (int l = 0; l < 16; l++) a[l] += r[c + l] * cd[c + l], b[l] += r[c + l] * dd[c + l];
        for (int l = 0; l < 16; l++) A[l] += a[l], B[l] += b[l];
      }
      dft_tail(r, cd, dd, c, K2, A, B);
      dft_finish(A, B, 16, &y[i * i_step]);
    }
  }
}
