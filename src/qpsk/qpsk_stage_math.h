/* The per-output arithmetic of the demodulator's parallel stages, written once for the CPU stages
 * and the CUDA stage kernels (qpsk_stages_cuda.cu): output positions of the polyphase filters and
 * the scalar dot product (qpsk_fir.c), the matched filter's read window and the sample counts
 * (qpsk_input.c), the runs of one timing value (qpsk_batch.c), the Farrow coefficients and the
 * 4th power (qpsk_est.c), the symbol instants, the value an input sample takes in a stage's
 * window, the levelled grid, the sum terms and the hard decisions, and the kernels' per-thread
 * steps built from them. Plain C11 and CUDA (__host__ __device__), no state, no allocation.
 *
 * The CPU's vector paths (AVX2) sum the same products in another order: the two backends agree to
 * float rounding (a few 1e-7 relative), not bit for bit; the positions (which tap row, which input
 * sample) are computed by the same double expressions and agree exactly where the compilers
 * evaluate them alike (nvcc may contract a double multiply-add into one rounding: a position on
 * the edge of a 1/Q phase can then pick the neighbouring phase, a 1/Q sample shift). */
#ifndef PRX_QPSK_STAGE_MATH_H
#define PRX_QPSK_STAGE_MATH_H

#include "polyrx/core.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define QPSK_HD __host__ __device__ static inline
#else
#define QPSK_HD static inline
#endif

/* Output m of a filter on an exact grid (r Q = rq an integer): input sample i = floor(m rq / Q)
 * and phase j = m rq mod Q. */
QPSK_HD void qpsk_pos_exact(int64_t m, int64_t rq, unsigned Q, int64_t *i, unsigned *j) {
  int64_t p = m * rq, q = p / (int64_t)Q;
  if (p % (int64_t)Q != 0 && p < 0) q--;
  *i = q;
  *j = (unsigned)(p - q * (int64_t)Q);
}

/* Output m of a filter on an inexact grid of step r: the position rounded to 1/Q sample. */
QPSK_HD void qpsk_pos_grid(int64_t m, double r, unsigned Q, int64_t *i, unsigned *j) {
  double p = (double)m * r;
  double fl = floor(p);
  long jj = lround((p - fl) * Q);
  int64_t ii = (int64_t)fl;
  if (jj >= (long)Q) {
    jj -= Q;
    ii++;
  }
  *i = ii;
  *j = (unsigned)jj;
}

/* Output at an arbitrary position p (input samples): sample i and phase j, p rounded to 1/Q. */
QPSK_HD void qpsk_pos_at(double p, unsigned Q, long *i, long *j) {
  double fl = floor(p);
  long jj = (long)((p - fl) * Q + 0.5), ii = (long)fl;
  if (jj >= (long)Q) {
    jj -= Q;
    ii++;
  }
  *i = ii;
  *j = jj;
}

/* One output: taps t (each stored twice, re and im lanes) against interleaved x. */
QPSK_HD prx_cf32 qpsk_dot1(const float *t, const float *x, unsigned ntaps) {
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    re += t[2 * l] * x[2 * l];
    im += t[2 * l + 1] * x[2 * l + 1];
  }
  prx_cf32 r = {re, im};
  return r;
}

/* Input range [*lo, *hi) the matched filter (c, ntaps) reads for the symbols of block b of L
 * symbols: their instants lie within [(bL - 1) sps, ((b+1)L + 1) sps). */
QPSK_HD void qpsk_mf_window_of(int64_t b, int64_t L, double sps, int c, unsigned ntaps, int64_t *lo,
                               int64_t *hi) {
  *lo = (int64_t)floor((double)(b * L - 1) * sps) - c - 1;
  *hi = (int64_t)floor((double)((b + 1) * L + 1) * sps) + 2 - c + (int64_t)ntaps;
}

/* The timing of one block as the matched filter uses it: symbol k's instant is
 * (1 + d)(k + tau) - d (b + 1/2) L nominal symbols; the block owns k in [k0, k1); runs of R
 * symbols (R > 0) take the timing of their centre with the nominal step, R <= 0 places every
 * instant exactly. */
typedef struct {
  int64_t b, k0, k1, R;
  double tau, d;
} qpsk_mf_timing;

QPSK_HD double qpsk_instant(const qpsk_mf_timing *t, int64_t L, double k) {
  const double Cb = ((double)t->b + 0.5) * (double)L;
  return (1 + t->d) * (k + t->tau) - t->d * Cb;
}

/* Position (input samples from sample lo) of the matched filter's output for symbol k: the
 * expression qpsk_fir_run_at evaluates for stage_mf's start p0 and step. */
QPSK_HD double qpsk_mf_position(const qpsk_mf_timing *t, int64_t L, double sps, int64_t lo,
                                int64_t k) {
  const double bL = (double)(t->b * L);
  const double base = bL * sps - (double)lo;
  if (t->R <= 0) {
    double p0 = (qpsk_instant(t, L, (double)t->k0) - bL) * sps + base;
    return p0 + (double)(k - t->k0) * (sps * (1 + t->d));
  }
  /* k - k0 and R are below 2^32 (one block): a 32-bit division (a 64-bit one is a long
   * instruction sequence on a GPU) */
  int64_t ka = t->k0 + (int64_t)((uint32_t)(k - t->k0) / (uint32_t)t->R) * t->R;
  int64_t m = t->k1 - ka < t->R ? t->k1 - ka : t->R;
  double mid = (double)ka + 0.5 * (double)(m - 1);
  double p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(m - 1) - bL) * sps + base;
  return p0 + (double)(k - ka) * sps;
}

/* A raw input sample as a stage reads it: v when it lies in the stream (0 <= n < n_total) and is
 * finite, 0 when it is not finite, `outside` beyond the stream. */
QPSK_HD prx_cf32 qpsk_window_sample(prx_cf32 v, int in_stream, prx_cf32 outside) {
  if (!in_stream) return outside;
  if (!isfinite(v.re) || !isfinite(v.im)) {
    prx_cf32 z = {0, 0};
    return z;
  }
  return v;
}

/* Stage pre's input sums of one of a block's own samples v (in the stream, raw): a finite one
 * adds to m = (sum re, sum im, sum |x|^2, count), a non-finite one to the count bad. */
QPSK_HD void qpsk_pre_sum_add(prx_cf32 v, double m[4], unsigned *bad) {
  if (isfinite(v.re) && isfinite(v.im)) {
    m[0] += v.re;
    m[1] += v.im;
    m[2] += (double)v.re * v.re + (double)v.im * v.im;
    m[3] += 1;
  } else {
    ++*bad;
  }
}

/* V&V and M2M4 terms of one symbol y: y^4 and |y|^2, |y|^4 (added to s4, m2, m4 as in
 * qpsk_sums_accum). */
QPSK_HD void qpsk_sum_terms(prx_cf32 y, float acc[4]) {
  float a = y.re, b = y.im, p = a * a + b * b;
  float s2r = a * a - b * b, s2i = 2 * a * b;
  acc[0] += s2r * s2r - s2i * s2i;
  acc[1] += 2 * s2r * s2i;
  acc[2] += p;
  acc[3] += p * p;
}

/* PRX_QPSK_PI4: exp(-j k pi/4), the turn back of symbol k onto QPSK's grid (the matched filter's
 * output times it, qpsk_cmul; the backends agree to rounding: a compiler may fuse the odd k's
 * products into a multiply-add); k8 is the symbol's stream index modulo 8 (its low bits:
 * (unsigned)k). (1, 0) or (h, -h) for the odd k, then a
 * quarter turn back, (-j)^q, for each pair of symbols: exchanges and signs. */
QPSK_HD prx_cf32 qpsk_pi4_factor(unsigned k8) {
  const float h = 0.70710678118654752f;
  const int odd = k8 & 1;
  const float re = odd ? h : 1.0f, im = odd ? -h : 0.0f;
  const unsigned q = (k8 >> 1) & 3; /* q = 1: (im, -re), 2: (-re, -im), 3: (-im, re) */
  const float a = q & 1 ? im : re, b = q & 1 ? re : im;
  prx_cf32 f = {q & 2 ? -a : a, (q ^ (q >> 1)) & 1 ? -b : b};
  return f;
}
/* PRX_QPSK_PI4: the 4th power of symbol k's value turned back by k pi (k pi/4 four times): the line
 * of pi/4-QPSK, Rs/2 from 4 f, brought to 4 f. */
QPSK_HD prx_cf32 qpsk_pi4_x4(prx_cf32 w, int64_t k) {
  if (k & 1) w.re = -w.re, w.im = -w.im;
  return w;
}

/* Number of integers k >= 0 with k * step < limit (qpsk_count_below). */
QPSK_HD int64_t qpsk_count_below_of(double limit, double step) {
  if (limit <= 0) return 0;
  return (int64_t)ceil(limit / step - 1e-9);
}

/* Hard decision of a corrected symbol u = y rot: coherent Gray bits b0 = [Re u < 0],
 * b1 = [Im u < 0]; the quadrant 2 b1 + (b0 xor b1) ((+,+) 0, (-,+) 1, (-,-) 2, (+,-) 3); the
 * differential bits of the quadrant step g = 0, 1, 2, 3: 00, 01, 11, 10. */
QPSK_HD unsigned qpsk_quad_of(prx_cf32 y, prx_cf32 rot, unsigned *b0, unsigned *b1) {
  float ur = y.re * rot.re - y.im * rot.im, ui = y.re * rot.im + y.im * rot.re;
  *b0 = ur < 0;
  *b1 = ui < 0;
  return 2 * *b1 + (*b0 ^ *b1);
}
QPSK_HD void qpsk_diff_step_bits(unsigned g, uint8_t *b0, uint8_t *b1) {
  *b0 = (uint8_t)(g >> 1);
  *b1 = (uint8_t)((g ^ (g >> 1)) & 1u);
}

/* Per-channel mixing (the bank's mix_hz): stream sample n is multiplied by exp(-2 pi i f n), f in
 * cycles per sample. qpsk_mix_turns gives frac(f n) in [-1/2, 1/2] to ~1e-15 turn for |n| up to
 * 2^40 and beyond: f is split into a 24-bit head and its tail, n into 2^20 n_h + n_l, so that
 * each of the four partial products is exact in double (whatever a compiler contracts into a
 * fused multiply-add) and its fraction is taken exactly; only the sum of the four fractions
 * rounds. */
QPSK_HD double qpsk_frac(double x) { return x - floor(x); }
QPSK_HD double qpsk_mix_turns(double f, int64_t n) {
  const double fh = (double)(float)f, fl = f - fh;
  const int64_t nh = n >> 20, nl = n - nh * ((int64_t)1 << 20);
  const double sc = 1048576.0, dh = (double)nh, dl = (double)nl;
  double t = qpsk_frac(fh * dh * sc) + qpsk_frac(fl * dh * sc);
  t += qpsk_frac(fh * dl) + qpsk_frac(fl * dl);
  return t - rint(t);
}
/* exp(-2 pi i (turns0 + f t)): the rotation of sample n0 + t of a block whose first sample has
 * turns0 = qpsk_mix_turns(f, n0). For |t| < 2^20 and |f| <= 1/2, f t rounds by at most 2^-34
 * turn, far below the float rounding of the result; the phase is reduced to one turn in double,
 * then evaluated in float. */
QPSK_HD prx_cf32 qpsk_mix_rot(double turns0, double f, int64_t t) {
  double u = turns0 + f * (double)t;
  u -= rint(u);
  float sn, cs;
#ifdef __CUDA_ARCH__
  sincospif((float)(-2 * u), &sn, &cs); /* sin, cos of pi x: no large-argument path */
#else
  const float a = (float)(-6.283185307179586476925286766559 * u);
  sn = sinf(a);
  cs = cosf(a);
#endif
  prx_cf32 r = {cs, sn};
  return r;
}
/* v exp(-2 pi i (turns0 + f t)) */
QPSK_HD prx_cf32 qpsk_mix_sample(prx_cf32 v, double turns0, double f, int64_t t) {
  const prx_cf32 r = qpsk_mix_rot(turns0, f, t);
  prx_cf32 o = {v.re * r.re - v.im * r.im, v.re * r.im + v.im * r.re};
  return o;
}

/* ---- the stage kernels' per-thread steps (qpsk_stages_cuda.cu; emulated on the CPU by
 * test_qpsk_stages_emul) ---- */

/* Stage pre of block b (L symbols, grid margin gm): the input window [*lo, *hi) its grid samples
 * 4bL - gm .. 4(b+1)L + gm - 1 read through the pre-filter (exact grid rq >= 0, else step r),
 * and the block's own samples [*own0, *own1). */
QPSK_HD void qpsk_pre_ranges(int64_t b, int64_t L, int gm, double sps, int64_t rq, double r,
                             unsigned Q, int c, unsigned ntaps, int64_t *lo, int64_t *hi,
                             int64_t *own0, int64_t *own1) {
  const int64_t m0 = 4 * b * L - gm, m1 = 4 * (b + 1) * L + gm - 1;
  int64_t i0, i1;
  unsigned j;
  if (rq >= 0) {
    qpsk_pos_exact(m0, rq, Q, &i0, &j);
    qpsk_pos_exact(m1, rq, Q, &i1, &j);
  } else {
    qpsk_pos_grid(m0, r, Q, &i0, &j);
    qpsk_pos_grid(m1, r, Q, &i1, &j);
  }
  *lo = i0 - c;
  *hi = i1 - c + (int64_t)ntaps;
  *own0 = qpsk_count_below_of((double)b * (double)L * sps, 1.0);
  *own1 = qpsk_count_below_of((double)(b + 1) * (double)L * sps, 1.0);
}

/* Grid output m of the pre-filter: its tap row and the window index of its first input. */
QPSK_HD void qpsk_pre_tap(int64_t m, int64_t rq, double r, unsigned Q, int c, int64_t lo,
                          unsigned *row, int64_t *off) {
  int64_t i;
  if (rq >= 0)
    qpsk_pos_exact(m, rq, Q, &i, row);
  else
    qpsk_pos_grid(m, r, Q, &i, row);
  *off = i - c - lo;
}

/* On an exact grid, the step of qpsk_pre_tap's (row, off) between outputs n apart (integers: the
 * same positions without a 64-bit division per output), and one step. */
QPSK_HD void qpsk_pre_walk(int64_t rq, unsigned Q, int64_t n, int64_t *di, unsigned *dj) {
  const int64_t step = n * rq;
  *di = step / (int64_t)Q;
  *dj = (unsigned)(step - *di * (int64_t)Q);
}
QPSK_HD void qpsk_pre_walk_next(int64_t di, unsigned dj, unsigned Q, unsigned *row, int64_t *off) {
  *off += di;
  *row += dj;
  if (*row >= Q) {
    *row -= Q;
    ++*off;
  }
}

/* Slot of window sample t in a kernel's shared memory. pad 1 (QPSK_PAD16): one spare slot after
 * every 16 samples, so that the 16 lanes of a half-warp reading samples 16 apart (the blocked
 * matched filter: lane i at T + 16 i, slot T + (T >> 4) + 17 i) fall on distinct banks, and
 * samples 4 apart do for most T. pad 2 (QPSK_PAD4): one spare slot after every 4 samples: lanes
 * reading samples 4 apart from any T (the blocked pre-filter: slot T + (T >> 2) + 5 i, 5 coprime
 * to the 16 bank pairs) never conflict. pad 0: none. */
#define QPSK_PAD16 1
#define QPSK_PAD4 2
QPSK_HD int64_t qpsk_win_slot(int64_t t, int pad) {
  return pad == QPSK_PAD4 ? t + (t >> 2) : pad ? t + (t >> 4) : t;
}

#ifdef __CUDACC__
#define QPSK_LD2(p, i) (((const float2 *)(p))[i])
#define QPSK_F2 float2
#else
#define QPSK_LD2(p, i) (((const prx_cf32 *)(p))[i])
#define QPSK_F2 prx_cf32
#endif
/* Four consecutive complex taps from p (a tap row's re, im interleaved) into the float arrays hr,
 * hi: on the device two 16-byte read-only loads (p 16-byte aligned: the banks' rows are). A macro,
 * so that each caller's address arithmetic compiles as written there. */
#if defined(__CUDA_ARCH__)
#define QPSK_TAPS4(p, hr, hi)                                                                      \
  do {                                                                                             \
    const float4 h01_ = __ldg((const float4 *)(p)), h23_ = __ldg((const float4 *)(p) + 1);         \
    hr[0] = h01_.x, hi[0] = h01_.y, hr[1] = h01_.z, hi[1] = h01_.w;                                \
    hr[2] = h23_.x, hi[2] = h23_.y, hr[3] = h23_.z, hi[3] = h23_.w;                                \
  } while (0)
#else
#define QPSK_TAPS4(p, hr, hi)                                                                      \
  do {                                                                                             \
    for (int a_ = 0; a_ < 4; a_++) hr[a_] = (p)[2 * a_], hi[a_] = (p)[2 * a_ + 1];                 \
  } while (0)
#endif

/* qpsk_dot4 on a QPSK_PAD4 window from window index off = 4 A + r: sample off + i sits at slot
 * 5 A + r + i + ((r + i) >> 2), and 4 samples further on 5 slots further on, so with r a constant
 * (qpsk_dot4 calls it once per r) every load is a fixed offset from one pointer that advances 5
 * slots per 4 taps. The taps' two lanes are loaded 16 bytes at a time on the GPU (the row 32-byte
 * aligned: ntaps4 a multiple of 4 on a 16-byte aligned bank). */
QPSK_HD void qpsk_dot4_pad4(const float *t, unsigned ntaps4, const QPSK_F2 *w, const int r,
                            prx_cf32 out[4]) {
  float re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0};
  for (unsigned lb = 0; lb < ntaps4; lb += 4, w += 5) {
    QPSK_F2 x[7];
    for (int q = 0; q < 7; q++) x[q] = w[r + q + ((r + q) >> 2)];
    float hr[4], hi[4];
    QPSK_TAPS4(t + 2 * lb, hr, hi);
    for (int a = 0; a < 4; a++) {
      for (int k = 0; k < 4; k++) {
#ifdef __CUDACC__
        re[k] += hr[a] * x[a + k].x;
        im[k] += hi[a] * x[a + k].y;
#else
        re[k] += hr[a] * x[a + k].re;
        im[k] += hi[a] * x[a + k].im;
#endif
      }
    }
  }
  for (int k = 0; k < 4; k++) {
    out[k].re = re[k];
    out[k].im = im[k];
  }
}

/* The pre-filter on a unit-step grid (r = 1: rq == Q, every output on tap row 0, output k reading
 * samples off + k .. off + k + ntaps - 1), register-blocked: four consecutive outputs from one
 * run of loaded samples, taps in blocks of 4 (t: the row's taps, re/im lanes, ntaps4 of them, a
 * multiple of 4 as qpsk_fir_init makes them), each sample loaded once per block and used by the
 * four outputs. The sums run over the taps in the order of qpsk_dot1, so the outputs equal four
 * qpsk_dot1 calls. The window (slots as qpsk_win_slot places them) holds ntaps4 + 3 samples from
 * off. */
QPSK_HD void qpsk_dot4(const float *t, unsigned ntaps4, const void *win, int64_t off, int pad,
                       prx_cf32 out[4]) {
  if (pad == QPSK_PAD4 && off >= 0) {
    const QPSK_F2 *w = (const QPSK_F2 *)win + 5 * (off >> 2);
    switch ((int)(off & 3)) {
    case 0: qpsk_dot4_pad4(t, ntaps4, w, 0, out); return;
    case 1: qpsk_dot4_pad4(t, ntaps4, w, 1, out); return;
    case 2: qpsk_dot4_pad4(t, ntaps4, w, 2, out); return;
    default: qpsk_dot4_pad4(t, ntaps4, w, 3, out); return;
    }
  }
  float re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0};
  for (unsigned lb = 0; lb < ntaps4; lb += 4) {
    QPSK_F2 x[7];
    for (int q = 0; q < 7; q++) x[q] = QPSK_LD2(win, qpsk_win_slot(off + lb + q, pad));
    for (int a = 0; a < 4; a++) {
#if defined(__CUDA_ARCH__)
      const float2 h = __ldg((const float2 *)t + lb + a);
      const float hr = h.x, hi = h.y;
#else
      const float hr = t[2 * (lb + a)], hi = t[2 * (lb + a) + 1];
#endif
      for (int k = 0; k < 4; k++) {
#ifdef __CUDACC__
        re[k] += hr * x[a + k].x;
        im[k] += hi * x[a + k].y;
#else
        re[k] += hr * x[a + k].re;
        im[k] += hi * x[a + k].im;
#endif
      }
    }
  }
  for (int k = 0; k < 4; k++) {
    out[k].re = re[k];
    out[k].im = im[k];
  }
}

/* The pre-filter on a grid of step 4/3 (rq 3 == 4 Q, sps 16/3: three outputs every 4 input
 * samples, the period's three tap rows t0, t1, t2 (re/im lanes) the same in every period, their
 * first inputs at off, off + d1, off + d2 with 0 <= d1 <= d2 <= 3), register-blocked: three
 * consecutive outputs from one run of loaded samples, each sample loaded once and used by every
 * output whose taps reach it. Each output sums over its taps in the order of qpsk_dot1, so the
 * outputs equal three qpsk_dot1 calls. The window (slots as qpsk_win_slot places them) holds
 * ntaps + d2 samples from off. */
QPSK_HD void qpsk_dot3(const float *t0, const float *t1, const float *t2, int d1, int d2,
                       unsigned ntaps, const void *win, int64_t off, int pad, prx_cf32 out[3]) {
  float re[3] = {0, 0, 0}, im[3] = {0, 0, 0};
  const int nt = (int)ntaps, n = nt + d2;
  for (int i = 0; i < n; i++) {
    const QPSK_F2 x = QPSK_LD2(win, qpsk_win_slot(off + i, pad));
#ifdef __CUDACC__
    const float xr = x.x, xi = x.y;
#else
    const float xr = x.re, xi = x.im;
#endif
    const int l[3] = {i, i - d1, i - d2};
    const float *t[3] = {t0, t1, t2};
    for (int u = 0; u < 3; u++) {
      if (l[u] < 0 || l[u] >= nt) continue;
#if defined(__CUDA_ARCH__)
      const float2 h = __ldg((const float2 *)t[u] + l[u]);
      const float hr = h.x, hi = h.y;
#else
      const float hr = t[u][2 * l[u]], hi = t[u][2 * l[u] + 1];
#endif
      re[u] += hr * xr;
      im[u] += hi * xi;
    }
  }
  for (int u = 0; u < 3; u++) {
    out[u].re = re[u];
    out[u].im = im[u];
  }
}

/* The sliding pre-filter's window (stage pre at sps 4 and 16/3, qpsk_stages_pre.cuh): virtual
 * sample v (the window index plus the block's shift, so that every thread's run of samples starts
 * on a multiple of 2^sh) sits at slot v + 2 (v >> sh), two spare slots after every 2^sh samples:
 * sample pairs stay 16-byte aligned, and the lanes' runs (8 samples apart at sh 3: 10 slots; 12
 * apart at sh 2: 18 slots) fall on distinct banks for 16-byte loads of eight lanes. */
QPSK_HD int qpsk_slide_slot(int v, int sh) { return v + 2 * (v >> sh); }

/* Four taps of a one-lane tap row (the bank's re lane: both lanes of a matched-filter row are
 * equal, qpsk_fir_init) from p into h: on the device one 16-byte read-only load (p 16-byte
 * aligned). Two consecutive window slots from p into x0, x1 (the sliding pre-filter's and the
 * matched filter's pairs' loads): on the device one 16-byte shared load (p 16-byte aligned). */
#if defined(__CUDA_ARCH__)
#define QPSK_TAPS4_1(p, h)                                                                         \
  do {                                                                                             \
    const float4 h_ = __ldg((const float4 *)(p));                                                  \
    h[0] = h_.x, h[1] = h_.y, h[2] = h_.z, h[3] = h_.w;                                            \
  } while (0)
#define QPSK_LD2X(p, x0, x1)                                                                       \
  do {                                                                                             \
    const float4 v_ = *(const float4 *)(p);                                                        \
    x0 = make_float2(v_.x, v_.y), x1 = make_float2(v_.z, v_.w);                                    \
  } while (0)
#else
#define QPSK_TAPS4_1(p, h)                                                                         \
  do {                                                                                             \
    for (int a_ = 0; a_ < 4; a_++) h[a_] = (p)[a_];                                                \
  } while (0)
#define QPSK_LD2X(p, x0, x1)                                                                       \
  do {                                                                                             \
    x0 = (p)[0], x1 = (p)[1];                                                                      \
  } while (0)
#endif
#ifdef __CUDACC__
#define QPSK_RE(v) ((v).x)
#define QPSK_IM(v) ((v).y)
#else
#define QPSK_RE(v) ((v).re)
#define QPSK_IM(v) ((v).im)
#endif

/* the next loop unrolled on the device */
#ifdef __CUDA_ARCH__
#define QPSK_UNROLL _Pragma("unroll")
#else
#define QPSK_UNROLL
#endif
#define QPSK_SLIDE_MAX 9 /* outputs per call of qpsk_pre_slide */

/* The pre-filter's outputs of one thread, sliding, over the taps l0 <= l < l1 of each row (the
 * others zero, or the whole row: qpsk_pre_slide): no consecutive outputs (no <= QPSK_SLIDE_MAX, a
 * multiple of per) in periods of per outputs adv samples apart; output o on tap row o % per (rows
 * of nt taps, re/im lanes, one after the other in taps) reading nt samples from sample
 * adv (o / per) + o % per of the run that starts at slot w (a virtual sample that is a multiple of
 * 2^sh: qpsk_slide_slot). Each sample is loaded once (two a load) and used by every output whose
 * taps reach it; each output sums over its taps in the order of qpsk_dot1, so the outputs equal
 * no qpsk_dot1 calls: a zero tap's product is +-0 (the window's samples are finite), and adding
 * +-0 leaves a sum that starts at +0 as it is (such a sum is never -0), so skipping the taps
 * outside [l0, l1) where they are zero (qpsk_pre_slide_zero_outside) gives the same outputs with
 * fewer multiply-adds and loads (sps 4: the RRC's 17 taps of 20, 12 pair loads of 14). The
 * unit-step grid (sps 4) is per 1, adv 1; the step-4/3 grid (sps 16/3) per 3, adv 4 (its period's
 * rows 0, 1, 2 at samples 0, 1, 2). On the GPU nt, per, adv and no are constants at the call
 * (qpsk_stages_pre.cuh), so every loop unrolls and the taps are constant operands. Reads the run's
 * samples from the pair that holds sample l0, up to an even count (one past the last where it is
 * odd). */
QPSK_HD void qpsk_pre_slide_taps(const float *taps, int nt, int l0, int l1, int per, int adv,
                                 int no, const QPSK_F2 *w, int sh, prx_cf32 *out) {
  float re[QPSK_SLIDE_MAX], im[QPSK_SLIDE_MAX];
  QPSK_UNROLL
  for (int o = 0; o < QPSK_SLIDE_MAX; o++) re[o] = im[o] = 0;
  const int ns = adv * (no / per - 1) + per - 1 + l1;
  QPSK_UNROLL
  for (int s = l0 & ~1; s < ns; s += 2) {
    QPSK_F2 x[2];
    QPSK_LD2X(w + s + 2 * (s >> sh), x[0], x[1]);
    QPSK_UNROLL
    for (int h = 0; h < 2; h++) {
      QPSK_UNROLL
      for (int o = 0; o < QPSK_SLIDE_MAX; o++) {
        const int l = s + h - (adv * (o / per) + o % per);
        if (o >= no || l < l0 || l >= l1) continue;
        const float *t = taps + 2 * ((o % per) * nt + l);
        re[o] += t[0] * QPSK_RE(x[h]);
        im[o] += t[1] * QPSK_IM(x[h]);
      }
    }
  }
  QPSK_UNROLL
  for (int o = 0; o < QPSK_SLIDE_MAX; o++) {
    if (o >= no) break;
    out[o].re = re[o];
    out[o].im = im[o];
  }
}

/* qpsk_pre_slide_taps over every tap of each row (the CPU's pre-filter and the GPU's general
 * rates). */
QPSK_HD void qpsk_pre_slide(const float *taps, int nt, int per, int adv, int no, const QPSK_F2 *w,
                            int sh, prx_cf32 *out) {
  qpsk_pre_slide_taps(taps, nt, 0, nt, per, adv, no, w, sh, out);
}

/* The outputs of a unit-step block's last step (ng outputs in nsteps steps of S, the sliding
 * filter's 8 a thread) where they are few enough for one a lane of a warp (<= 32): the kernel
 * then computes them with the step before (one step a block at L 512, 2048 + 8 outputs) rather
 * than in a step of their own; else 0. That step's tile holds S + 32 outputs at most: within the
 * window's slots, which hold more than the ng + 20 samples of a block with nsteps > 1 (1.25 slots
 * a sample). */
QPSK_HD int qpsk_slide_tail(int64_t ng, int S, int nsteps) {
  const int64_t r = ng - (int64_t)(nsteps - 1) * S;
  return nsteps > 1 && r <= 32 ? (int)r : 0;
}

/* whether every tap of the rows (nt taps each, re/im lanes) outside l0 <= l < l1 is zero */
QPSK_HD int qpsk_pre_slide_zero_outside(const float *taps, int rows, int nt, int l0, int l1) {
  for (int j = 0; j < rows; j++)
    for (int l = 0; l < nt; l++)
      if ((l < l0 || l >= l1) && (taps[2 * (j * nt + l)] != 0 || taps[2 * (j * nt + l) + 1] != 0))
        return 0;
  return 1;
}

/* Symbol k's matched-filter output: its tap row and the window index of its first input. */
QPSK_HD void qpsk_mf_tap(const qpsk_mf_timing *t, int64_t L, double sps, int64_t lo, int64_t k,
                         unsigned Q, int c, unsigned *row, int64_t *off) {
  long i, j;
  qpsk_pos_at(qpsk_mf_position(t, L, sps, lo, k), Q, &i, &j);
  *row = (unsigned)j;
  *off = (int64_t)i - c;
}

/* Symbols k .. k + m - 1 (m <= 4) of qpsk_mf_tap at once: a run's start (a 32-bit division) and
 * centre found once for the symbols that lie in it, each position by qpsk_mf_position's own
 * expressions, so the same rows and offsets as m qpsk_mf_tap calls. */
QPSK_HD void qpsk_mf_tap4(const qpsk_mf_timing *t, int64_t L, double sps, int64_t lo, int64_t k,
                          int m, unsigned Q, int c, unsigned row[4], int64_t off[4]) {
  const double bL = (double)(t->b * L);
  const double base = bL * sps - (double)lo;
  double p0 = 0;
  int64_t ka = 0;
  int have = 0;
  if (t->R <= 0) p0 = (qpsk_instant(t, L, (double)t->k0) - bL) * sps + base;
  for (int q = 0; q < 4; q++) {
    if (q >= m) break;
    const int64_t kq = k + q;
    double p;
    if (t->R <= 0) {
      p = p0 + (double)(kq - t->k0) * (sps * (1 + t->d));
    } else {
      if (!have || kq - ka >= t->R) {
        ka = t->k0 + (int64_t)((uint32_t)(kq - t->k0) / (uint32_t)t->R) * t->R;
        const int64_t mm = t->k1 - ka < t->R ? t->k1 - ka : t->R;
        const double mid = (double)ka + 0.5 * (double)(mm - 1);
        p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(mm - 1) - bL) * sps + base;
        have = 1;
      }
      p = p0 + (double)(kq - ka) * sps;
    }
    long i, j;
    qpsk_pos_at(p, Q, &i, &j);
    row[q] = (unsigned)j;
    off[q] = (int64_t)i - c;
  }
}

/* qpsk_pos_at for the first of four positions p_q = fl(x + 4 q) (x real, each rounded once, q =
 * 0 .. 3) given p_0 alone: its sample *i and phase *j, and whether the other three are
 * p_0's (same phase, samples i + 4 q). Each p_q is within (|p_0| + 7) 2^-52 of p_0 + 4 q (two
 * half-ulps), and so is its fraction of p_0's while p_0's fraction f is that far from 0 and 1;
 * the phase's argument f Q + 1/2 (rounded once or twice) then moves by less than (|p_0| + 16)
 * (Q + 1) 2^-50, so where f and f Q + 1/2 lie farther than 4x those bounds from an integer every
 * p_q has p_0's phase and floor + 4 q (returns 1). Else (about 1e-8 of quads) returns 0: the
 * caller places the four one by one. */
QPSK_HD int qpsk_pos_at4(double p0, unsigned Q, long *i, long *j) {
  const double fl = floor(p0), f = p0 - fl, y = f * Q + 0.5;
  const double m = (fabs(p0) + 16) * 0x1p-50, my = m * ((double)Q + 1), g = y - floor(y);
  long jj = (long)y, ii = (long)fl;
  if (jj >= (long)Q) {
    jj -= Q;
    ii++;
  }
  *i = ii;
  *j = jj;
  return f > m && f < 1 - m && g > my && g < 1 - my;
}

/* Symbols k .. k + 3 at sps 4 from one position, where that gives qpsk_mf_tap4's rows and
 * offsets: the four lie in one run (R > 0, k + 3 < k1), so their positions are p_q = fl(p0 +
 * 4 (k + q - ka)) by qpsk_mf_position's expressions (the product exact), and qpsk_pos_at4 finds
 * them all from p_0: returns 1 with *row and *off0 (symbol k's; symbol k + q's offset off0 +
 * 4 q); else 0 (the caller takes qpsk_mf_tap4). */
QPSK_HD int qpsk_mf_quad4(const qpsk_mf_timing *t, int64_t L, double sps, int64_t lo, int64_t k,
                          unsigned Q, int c, unsigned *row, int64_t *off0) {
  if (t->R <= 0 || k + 3 >= t->k1) return 0;
  const int64_t ka = t->k0 + (int64_t)((uint32_t)(k - t->k0) / (uint32_t)t->R) * t->R;
  if (k + 3 - ka >= t->R) return 0;
  const double bL = (double)(t->b * L);
  const double base = bL * sps - (double)lo;
  const int64_t mm = t->k1 - ka < t->R ? t->k1 - ka : t->R;
  const double mid = (double)ka + 0.5 * (double)(mm - 1);
  const double p0 = (qpsk_instant(t, L, mid) - 0.5 * (double)(mm - 1) - bL) * sps + base;
  long i, j;
  if (!qpsk_pos_at4(p0 + (double)(k - ka) * sps, Q, &i, &j)) return 0;
  *row = (unsigned)j;
  *off0 = (int64_t)i - c;
  return 1;
}

/* The NCO's rotation exp(-j (theta + omega t)): the phase reduced to one turn in double, then
 * evaluated in float. */
QPSK_HD prx_cf32 qpsk_nco_rot(double theta, double omega, int64_t t) {
  const double two_pi = 6.283185307179586476925286766559, inv = 0.15915494309189533576888376337251;
  double ph = theta + omega * (double)t;
  ph -= two_pi * rint(ph * inv);
  float sn, cs;
#ifdef __CUDA_ARCH__
  sincosf((float)ph, &sn, &cs);
#else
  sn = sinf((float)ph);
  cs = cosf((float)ph);
#endif
  prx_cf32 r = {cs, -sn};
  return r;
}

/* The NCO's rotation advanced by a step (rot step, in float: the recurrence within a block) */
QPSK_HD prx_cf32 qpsk_nco_advance(prx_cf32 rot, prx_cf32 step) {
  prx_cf32 o = {rot.re * step.re - rot.im * step.im, rot.re * step.im + rot.im * step.re};
  return o;
}

/* A matched-filter window sample: (v - dc) gain rot, v already read by qpsk_window_sample (the DC
 * beyond the stream), rot the NCO's rotation at its index. */
QPSK_HD prx_cf32 qpsk_mf_sample_rot(prx_cf32 v, prx_cf32 dc, float gain, prx_cf32 rot) {
  const float pr = gain * rot.re, pi = gain * rot.im;
  const float xr = v.re - dc.re, xi = v.im - dc.im;
  prx_cf32 o = {xr * pr - xi * pi, xr * pi + xi * pr};
  return o;
}

/* The sliding pre-filter's tap counts (sps 4 and 16/3 at the pre-filter's span of 4 symbols) and
 * the room for its taps */
#define QPSK_SLIDE_NT4 20
#define QPSK_SLIDE_NT3 24
#define QPSK_SLIDE_TAPS (3 * 2 * QPSK_SLIDE_NT3)
/* the taps of those rows that the RRC holds (qpsk_fir_init: |d| <= span / 2, the others zero),
 * l0 <= l < l1: at sps 4 0 .. 16 of 20, at 16/3 1 .. 22 of 24 on each of the three rows (the
 * sliding filters take only those, qpsk_pre_slide_taps) */
#define QPSK_SLIDE_L0_4 0
#define QPSK_SLIDE_L1_4 17
#define QPSK_SLIDE_L0_3 1
#define QPSK_SLIDE_L1_3 23

/* A window slot (qpsk_win_slot) in 32-bit integers, for windows far below 2^31 samples. */
QPSK_HD int qpsk_win_slot32(int t, int pad) {
  return pad == QPSK_PAD4 ? t + (t >> 2) : pad ? t + (t >> 4) : t;
}

/* The matched filter's register-blocked pairs of symbols on one tap row at sps with rows of
 * ntaps taps (the CUDA mf kernel's mf_block): 1 at sps 4 (consecutive symbols: quads, qpsk_dot4c),
 * P >= 2 where P sps = 16 for an integer P and ntaps >= 16 (symbols P apart, 16 samples,
 * qpsk_dot2n: sps 16/3, 8), else 0 (one symbol at a time). */
QPSK_HD int qpsk_mf_pairing(double sps, unsigned ntaps) {
  if (sps == 4.0) return 1;
  const double P = rint(16.0 / sps);
  return P >= 2 && P <= 16 && fabs(P * sps - 16.0) < 1e-9 && ntaps >= 16 ? (int)P : 0;
}

/* The matched filter's pairs: one tap of each symbol's row (h0, h1) into its two sums from its
 * sample (x0, x1), and the two sums out. Macros, so that each caller's code compiles as written
 * there. */
#define QPSK_MAC2(re0, im0, re1, im1, h0, x0, h1, x1)                                              \
  do {                                                                                             \
    re0 += (h0)*QPSK_RE(x0);                                                                       \
    im0 += (h0)*QPSK_IM(x0);                                                                       \
    re1 += (h1)*QPSK_RE(x1);                                                                       \
    im1 += (h1)*QPSK_IM(x1);                                                                       \
  } while (0)
#define QPSK_OUT2(out, re0, im0, re1, im1)                                                         \
  do {                                                                                             \
    (out)[0].re = re0, (out)[0].im = im0;                                                          \
    (out)[1].re = re1, (out)[1].im = im1;                                                          \
  } while (0)

/* The matched filter's window for quads of consecutive symbols at sps 4 (qpsk_dot4c): window
 * index t, shifted by the thread block's sh, at slot u + 2 (u >> 4), u = t + sh: two spare slots
 * after every 16 samples. A quad whose first input has u a multiple of 16 reads its chunks of four
 * samples at fixed offsets from one slot (18 slots per 16 samples), two samples per 16-byte load;
 * the lanes of a warp, whose quads lie 16 samples apart, read 18 slots apart: 9 (odd) 16-byte bank
 * groups, so the eight lanes of each 16-byte load phase never conflict. */
QPSK_HD int qpsk_win_slot16x2(int u) { return u + 2 * (u >> 4); }

/* Four consecutive symbols sps = 4 samples apart on one tap row (a run of a block's timing):
 * out[q] = sum_l t1[l] x[off + 4q + l], each sum over l in the order of qpsk_dot1 (so the outputs
 * equal four qpsk_dot1 calls on the row whose lanes both equal t1). Chunk c (samples off + 4c ..
 * off + 4c + 3, c < ntaps / 4 + 3) is read once and feeds symbol q with tap block c - q, in
 * increasing c: each symbol's taps in increasing order. ALIGNED: w is the slot of window index off
 * in the qpsk_win_slot16x2 layout with off + sh a multiple of 16 (chunk c at w + 18 (c >> 2) +
 * 4 (c & 3), two 16-byte loads); else w is the window's first slot and u = off + sh (any residue:
 * each slot computed, one sample a load). ntaps a multiple of 4. */
QPSK_HD void qpsk_dot4_any(int aligned, const float *t1, unsigned ntaps, const QPSK_F2 *w, int u,
                           prx_cf32 out[4]) {
  float re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0};
  const int nj = (int)(ntaps / 4), nc = nj + 3;
  for (int c = 0; c < nc; c++) {
    QPSK_F2 x[4];
    if (aligned) {
      QPSK_LD2X(w + 18 * (c >> 2) + 4 * (c & 3), x[0], x[1]);
      QPSK_LD2X(w + 18 * (c >> 2) + 4 * (c & 3) + 2, x[2], x[3]);
    } else {
      for (int a = 0; a < 4; a++) x[a] = w[qpsk_win_slot16x2(u + 4 * c + a)];
    }
    QPSK_UNROLL
    for (int q = 0; q < 4; q++) {
      if (c - q < 0 || c - q >= nj) continue;
      float h[4];
      QPSK_TAPS4_1(t1 + 4 * (c - q), h);
      for (int a = 0; a < 4; a++) {
        re[q] += h[a] * QPSK_RE(x[a]);
        im[q] += h[a] * QPSK_IM(x[a]);
      }
    }
  }
  for (int q = 0; q < 4; q++) out[q].re = re[q], out[q].im = im[q];
}
QPSK_HD void qpsk_dot4c(const float *t1, unsigned ntaps, const QPSK_F2 *w, prx_cf32 out[4]) {
  qpsk_dot4_any(1, t1, ntaps, w, 0, out);
}
/* qpsk_dot4c's quad whose first input u (window index plus shift) does not start a 16-sample
 * group (a later run of the block whose offsets moved): the same sums in the same order. w is the
 * window's first slot. */
QPSK_HD void qpsk_dot4g(const float *t1, unsigned ntaps, const QPSK_F2 *w, int u, prx_cf32 out[4]) {
  qpsk_dot4_any(0, t1, ntaps, w, u, out);
}

/* The matched filter's window for pairs of symbols 16 samples apart (P sps = 16: symbols k and
 * k + P, qpsk_dot2n): window index t at slot t + (t >> 5), one spare slot after every 32 samples.
 * The lanes of a half-warp, whose pairs start 32 samples apart (lanes 8-15 256 samples after lanes
 * 0-7), read 33 slots apart (264 between the halves): 16 distinct bank pairs for any start. */
QPSK_HD int qpsk_win_slot32x1(int t) { return t + (t >> 5); }

/* Two symbols 16 input samples apart on one tap row (P sps = 16: symbols k and k + P of a run):
 * out[q] = sum_l t1[l] x[off + 16 q + l] in qpsk_dot1's order, on a qpsk_win_slot32x1 window (w its
 * slots). Chunk c (samples off + 4c .. off + 4c + 3) is read once and feeds symbol 0 with tap
 * block c and symbol 1 with tap block c - 4 (each loaded where it is used), in increasing c: each
 * symbol's taps in increasing order; the pair reads ntaps + 16 samples (against 2 ntaps one symbol
 * at a time). ntaps a multiple of 4 and at least 16: symbol 0 takes tap blocks 0 .. 3 alone
 * (qpsk_mf_pairing pairs no shorter rows). */
QPSK_HD void qpsk_dot2n(const float *t1, unsigned ntaps, const QPSK_F2 *w, int off,
                        prx_cf32 out[2]) {
  float re0 = 0, im0 = 0, re1 = 0, im1 = 0;
  const int nj = (int)(ntaps / 4), nc = nj + 4;
  QPSK_UNROLL
  for (int c = 0; c < 4; c++) { /* symbol 0 alone */
    float h[4];
    QPSK_TAPS4_1(t1 + 4 * c, h);
    for (int a = 0; a < 4; a++) {
      const int t = off + 4 * c + a;
      const QPSK_F2 x = w[qpsk_win_slot32x1(t)];
      re0 += h[a] * QPSK_RE(x);
      im0 += h[a] * QPSK_IM(x);
    }
  }
  for (int c = 4; c < nc; c++) {
    QPSK_F2 x[4];
    for (int a = 0; a < 4; a++) {
      const int t = off + 4 * c + a;
      x[a] = w[qpsk_win_slot32x1(t)];
    }
    if (c < nj) {
      float h[4];
      QPSK_TAPS4_1(t1 + 4 * c, h);
      for (int a = 0; a < 4; a++) {
        re0 += h[a] * QPSK_RE(x[a]);
        im0 += h[a] * QPSK_IM(x[a]);
      }
    }
    float h1[4];
    QPSK_TAPS4_1(t1 + 4 * (c - 4), h1);
    for (int a = 0; a < 4; a++) {
      re1 += h1[a] * QPSK_RE(x[a]);
      im1 += h1[a] * QPSK_IM(x[a]);
    }
  }
  QPSK_OUT2(out, re0, im0, re1, im1);
}

/* Any two symbols on a qpsk_win_slot32x1 window (w its slots): out[q] = sum_l tq[l] x[offq + l]
 * in qpsk_dot1's order, each symbol its own one-lane tap row and its own window index (each slot
 * computed). The matched filter's warp that holds a block's last, partial unit takes it for all
 * its lanes (the unit's pairs, the tail's symbols two at a time, one code for the warp); a thread
 * with one symbol passes it twice. ntaps a multiple of 4. */
QPSK_HD void qpsk_dot2x32(const float *t0, const float *t1, unsigned ntaps, const QPSK_F2 *w,
                          int off0, int off1, prx_cf32 out[2]) {
  float re0 = 0, im0 = 0, re1 = 0, im1 = 0;
  for (unsigned lb = 0; lb < ntaps; lb += 4) {
    float h0[4], h1[4];
    QPSK_TAPS4_1(t0 + lb, h0);
    QPSK_TAPS4_1(t1 + lb, h1);
    QPSK_UNROLL
    for (int a = 0; a < 4; a++) {
      const int s0 = off0 + (int)lb + a, s1 = off1 + (int)lb + a;
      const QPSK_F2 x0 = w[qpsk_win_slot32x1(s0)], x1 = w[qpsk_win_slot32x1(s1)];
      QPSK_MAC2(re0, im0, re1, im1, h0[a], x0, h1[a], x1);
    }
  }
  QPSK_OUT2(out, re0, im0, re1, im1);
}

/* Runs of one timing value: the largest length (a multiple of unit) whose instants stay within
 * 0.005 symbol of the run's centre timing for a clock slope d; n (the whole block) when the
 * drift is that small over it, 0 when even unit symbols drift more. */
QPSK_HD int64_t qpsk_run_length(double d, int64_t n, int64_t unit) {
  double dd = fabs(d);
  if (dd * (double)n <= 0.01) return n;
  return (int64_t)(0.01 / dd) / unit * unit;
}

/* The matched filter's runs of one timing for a block of n symbols at clock slope d: multiples of
 * 8 P symbols (P the fractional phase's period, qpsk_phase_period: outputs P apart share their
 * taps), 0 where there is no period (every instant placed exactly). */
QPSK_HD int64_t qpsk_mf_run_length(double d, int64_t n, unsigned P) {
  return P ? qpsk_run_length(d, n, 8 * (int64_t)P) : 0;
}

/* Cubic Lagrange (Farrow) coefficients for points at offsets -1, 0, 1, 2 and mu in [0, 1). */
QPSK_HD void qpsk_farrow_of(double mu, float c[4]) {
  c[0] = (float)(-mu * (mu - 1) * (mu - 2) / 6);
  c[1] = (float)((mu + 1) * (mu - 1) * (mu - 2) / 2);
  c[2] = (float)(-(mu + 1) * mu * (mu - 2) / 2);
  c[3] = (float)((mu + 1) * mu * (mu - 1) / 6);
}

/* y^4 / |y|^2 of y = sum_i c[i] z[i] (one value of qpsk_x4_interp). */
QPSK_HD prx_cf32 qpsk_x4_one(const prx_cf32 *z, const float c[4]) {
  float a = c[0] * z[0].re + c[1] * z[1].re + c[2] * z[2].re + c[3] * z[3].re;
  float b = c[0] * z[0].im + c[1] * z[1].im + c[2] * z[2].im + c[3] * z[3].im;
  float p = a * a + b * b + 1e-30f;
  float s2r = a * a - b * b, s2i = 2 * a * b;
  prx_cf32 w = {(s2r * s2r - s2i * s2i) / p, 2 * s2r * s2i / p};
  return w;
}

/* Stage x4: symbol k of a block (L symbols, grid of glen = 4L + 2 gm values from 4bL - gm) reads
 * grid values g - 1 .. g + 2 with Farrow coefficients c: runs of qpsk_run_length(d, n, 1)
 * symbols take their centre's timing, clamped so that the interpolator stays in the grid.
 * qpsk_x4_tap gives one symbol's g and c from two parts, which a kernel can evaluate once per run
 * rather than once per symbol: qpsk_x4_run_len and qpsk_x4_run_at. */

/* the block's run length R (at least 1) */
QPSK_HD int64_t qpsk_x4_run_len(const qpsk_mf_timing *t) {
  const int64_t R = qpsk_run_length(t->d, t->k1 - t->k0, 1);
  return R < 1 ? 1 : R;
}
/* run ka's (a symbol k0 + a multiple of R) g, returned, and coefficients c: symbol k of the run
 * has g + 4 (k - ka) */
QPSK_HD int64_t qpsk_x4_run_at(const qpsk_mf_timing *t, int64_t L, int gm, int64_t ka, int64_t R,
                               float c[4]) {
  const int64_t m = t->k1 - ka < R ? t->k1 - ka : R;
  const double glen = 4.0 * (double)L + 2 * gm, mid = (double)ka + 0.5 * (double)(m - 1);
  double g0 =
      4.0 * (qpsk_instant(t, L, mid) - (double)t->b * (double)L - 0.5 * (double)(m - 1)) + gm;
  if (g0 < 1) g0 = 1;
  if (g0 + 4.0 * (double)(m - 1) > glen - 3) g0 = glen - 3 - 4.0 * (double)(m - 1);
  const double fl = floor(g0);
  qpsk_farrow_of(g0 - fl, c);
  return (int64_t)fl;
}
/* symbol k's g (*g) and coefficients c */
QPSK_HD void qpsk_x4_tap(const qpsk_mf_timing *t, int64_t L, int gm, int64_t k, int64_t *g,
                         float c[4]) {
  const int64_t R = qpsk_x4_run_len(t);
  const int64_t ka = t->k0 + (int64_t)((uint32_t)(k - t->k0) / (uint32_t)R) * R;
  *g = qpsk_x4_run_at(t, L, gm, ka, R, c) + 4 * (k - ka);
}

/* ---- stage cfo (qpsk_batch.c's stage_cfo, qpsk_est.c's qpsk_spectrum_peak and
 * qpsk_periodogram_refine): the peak of the zero-padded spectrum, its vertex, the refinement ----
 */

/* |X|^2 of a bin in float, a product of each part then their sum (no fused multiply-add: the
 * CPU's vector and scalar loops round it so) */
QPSK_HD float qpsk_bin_power(prx_cf32 v) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(v.re, v.re), __fmul_rn(v.im, v.im));
#else
  return v.re * v.re + v.im * v.im;
#endif
}

/* The peak's search range: bins 0 .. kmax and nfft - kmax .. nfft - 1 (|nu| <= max_nu), as
 * candidates i = 0 .. 2 kmax in that order (the first of equal powers wins, as the CPU's two
 * scans do). */
QPSK_HD size_t qpsk_peak_kmax(double max_nu, size_t nfft) {
  size_t kmax = (size_t)floor(max_nu * (double)nfft);
  return kmax > nfft / 2 - 1 ? nfft / 2 - 1 : kmax;
}
QPSK_HD size_t qpsk_peak_bin(size_t i, size_t kmax, size_t nfft) {
  return i <= kmax ? i : nfft - kmax + (i - kmax - 1);
}
/* candidate (p, i) better than (bp, bi): more power, or as much and earlier */
QPSK_HD int qpsk_peak_better(float p, size_t i, float bp, size_t bi) {
  return p > bp || (p == bp && i < bi);
}

/* The refinement's start from the peak bin best (power bm): the parabola through the magnitudes
 * of the bins around it, its vertex in cycles per value, rounded to 1/8 bin (stage_cfo: the
 * FFT's last-bit rounding then almost never moves the start). */
QPSK_HD double qpsk_bin_mag(prx_cf32 v) { return sqrt((double)v.re * v.re + (double)v.im * v.im); }
/* the vertex from the magnitudes a, b, c of bins best - 1, best, best + 1 */
QPSK_HD double qpsk_peak_vertex(double a, double b, double c, size_t best, size_t nfft) {
  double den = a - 2 * b + c, delta = 0;
  if (den < 0) delta = 0.5 * (a - c) / den;
  if (delta > 0.5) delta = 0.5;
  if (delta < -0.5) delta = -0.5;
  double k = (best < nfft / 2 ? (double)best : (double)best - (double)nfft) + delta;
  double nu = k / (double)nfft;
  return nearbyint(nu * (8.0 * (double)nfft)) / (8.0 * (double)nfft);
}
QPSK_HD double qpsk_peak_start(const prx_cf32 *spec, size_t nfft, size_t best, float bm) {
  size_t km = (best + nfft - 1) % nfft, kp = (best + 1) % nfft;
  return qpsk_peak_vertex(qpsk_bin_mag(spec[km]), sqrt((double)bm), qpsk_bin_mag(spec[kp]), best,
                          nfft);
}

/* The peak from half the zero-padded spectrum (the CFO stage's half-length FFT: the window's
 * nfft / 2 point transform, whose bins are the even bins 2k of the nfft-point one): the peak's
 * candidates in the nfft-point spectrum are its even bin 2b (b the half spectrum's peak) and the
 * odd bins 2b - 1, 2b + 1 beside it, each one exp(-j 2 pi m t / nfft) summed over the window
 * (qpsk_dft_twiddle), where a line's main lobe puts the full spectrum's peak. A candidate's index
 * in the full search (qpsk_peak_bin's order, for the first-on-ties rule), or -1 outside it: */
QPSK_HD int64_t qpsk_peak_cand(size_t bin, size_t kmax, size_t nfft) {
  if (bin <= kmax) return (int64_t)bin;
  if (bin >= nfft - kmax) return (int64_t)(kmax + 1 + (bin - (nfft - kmax)));
  return -1;
}
/* exp(-j 2 pi m t / nfft), the phase exact in integers (m, t >= 0), then evaluated in float */
QPSK_HD prx_cf32 qpsk_dft_twiddle(int64_t m, int64_t t, int64_t nfft) {
  const int64_t r = (m * t) % nfft;
  float sn, cs;
#ifdef __CUDA_ARCH__
  sincospif((float)(2.0 * (double)r / (double)nfft), &sn, &cs);
#else
  const double a = 6.283185307179586476925286766559 * (double)r / (double)nfft;
  sn = (float)sin(a);
  cs = (float)cos(a);
#endif
  prx_cf32 o = {cs, -sn};
  return o;
}
/* The peak's candidates read two bins at a time (the peak kernel's 16-byte words: word j holds
 * bins 2j and 2j + 1 of a row of len points, len even): words 0 .. nlo - 1 cover bins 0 .. kmax,
 * words jh .. len / 2 - 1 bins len - kmax .. len - 1, the nw words taken as i = 0 .. nw - 1
 * (qpsk_peak_word: word i's j), each bin once; a word's bins outside the range have
 * qpsk_peak_cand -1. */
QPSK_HD void qpsk_peak_words(size_t kmax, size_t len, size_t *nlo, size_t *jh, size_t *nw) {
  *nlo = (kmax + 2) / 2;
  *jh = (len - kmax) / 2 > *nlo ? (len - kmax) / 2 : *nlo;
  *nw = *nlo + len / 2 - *jh;
}
QPSK_HD size_t qpsk_peak_word(size_t i, size_t nlo, size_t jh) {
  return i < nlo ? i : jh + (i - nlo);
}
/* Word i's first bin k = 2 qpsk_peak_word(i) and its two bins' candidate indices c[0], c[1]
 * (qpsk_peak_cand's), ok[q] 0 for a bin outside the range: in 32 bits (rows up to 2^31 points),
 * the low words' bins their own indices, the high words' their bins less len - 2 kmax - 1. */
QPSK_HD uint32_t qpsk_peak_word_cands(uint32_t i, uint32_t nlo, uint32_t jh, uint32_t kmax,
                                      uint32_t len, uint32_t c[2], int ok[2]) {
  const int lo = i < nlo;
  const uint32_t k = 2 * (lo ? i : jh + (i - nlo)), off = lo ? 0 : len - 2 * kmax - 1;
  c[0] = k - off;
  c[1] = k + 1 - off;
  ok[0] = (c[0] <= kmax) == lo;
  ok[1] = (c[1] <= kmax) == lo;
  return k;
}
/* x y in float (the one complex product of the demodulator's files, host and kernels) */
QPSK_HD prx_cf32 qpsk_cmul(prx_cf32 x, prx_cf32 y) {
  prx_cf32 o = {x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
  return o;
}
/* The odd bins' terms of a pair of window values as the peak kernel reads them (one 16-byte word,
 * qpsk_stages_cfo.cu): v0 at time t, v1 at t + 1, one of them at the even time 2j whose twiddles
 * a (bin mm) and b (bin mp) are exact (v0 there where at0, else v1), the other's those turned by
 * one value (ra = exp(-j 2 pi mm s / nfft), rb likewise, s = +1 where v0 is at 2j, -1 where v1
 * is), each term added into acc (re, im of X[mm], then of X[mp]) in time order. */
QPSK_HD void qpsk_odd_term_add(float acc[4], prx_cf32 v, prx_cf32 a, prx_cf32 b) {
  acc[0] += v.re * a.re - v.im * a.im;
  acc[1] += v.re * a.im + v.im * a.re;
  acc[2] += v.re * b.re - v.im * b.im;
  acc[3] += v.re * b.im + v.im * b.re;
}
QPSK_HD void qpsk_odd_pair_add(float acc[4], prx_cf32 v0, prx_cf32 v1, int at0, prx_cf32 a,
                               prx_cf32 b, prx_cf32 ra, prx_cf32 rb) {
  const prx_cf32 a1 = qpsk_cmul(a, ra), b1 = qpsk_cmul(b, rb);
  qpsk_odd_term_add(acc, v0, at0 ? a : a1, at0 ? b : b1);
  qpsk_odd_term_add(acc, v1, at0 ? a1 : a, at0 ? b1 : b);
}
/* One thread's share of the odd bins as the peak kernel takes them (the CPU's emulation of its
 * arithmetic, qpsk_dft_twiddle's twiddles for its table's): the window's values paired from h on
 * (h = 1 where the window starts on the second value of a 16-byte word: pair j holds the values
 * at 2j - h and 2j - h + 1, those outside 0 .. n - 1 zero), pairs j = j0, j0 + nj, ... in batches
 * of `batch`: a batch's first pair's twiddles at 2j exact, each next pair's the previous's turned
 * by 2 nj values. */
QPSK_HD void qpsk_odd_bins_pairs(const prx_cf32 *w, size_t n, unsigned h, int64_t mm, int64_t mp,
                                 int64_t nfft, size_t j0, size_t nj, unsigned batch, float acc[4]) {
  const prx_cf32 zero = {0, 0};
  prx_cf32 ra = qpsk_dft_twiddle(mm, 1, nfft), rb = qpsk_dft_twiddle(mp, 1, nfft);
  if (h) ra.im = -ra.im, rb.im = -rb.im;
  const prx_cf32 sa = qpsk_dft_twiddle(mm, 2 * (int64_t)nj, nfft),
                 sb = qpsk_dft_twiddle(mp, 2 * (int64_t)nj, nfft);
  prx_cf32 a = zero, b = zero;
  for (size_t j = j0, k = 0; j < (n + h + 1) / 2; j += nj, k++) {
    const int64_t t = 2 * (int64_t)j - (int64_t)h;
    const prx_cf32 v0 = t >= 0 ? w[t] : zero, v1 = t + 1 < (int64_t)n ? w[t + 1] : zero;
    if (k % batch == 0) {
      a = qpsk_dft_twiddle(mm, 2 * (int64_t)j, nfft);
      b = qpsk_dft_twiddle(mp, 2 * (int64_t)j, nfft);
    } else {
      a = qpsk_cmul(a, sa);
      b = qpsk_cmul(b, sb);
    }
    qpsk_odd_pair_add(acc, v0, v1, !h, a, b, ra, rb);
  }
}
/* The refinement's start from the half spectrum's peak bin b (candidate power bp) and the full
 * spectrum's odd bins xm = X[2b - 1], xp = X[2b + 1]: the best of the three candidates in the
 * full search (kmax of the nfft-point spectrum; the first on ties), then qpsk_peak_start's vertex
 * through its neighbours (for an odd peak: the even bins 2b and 2b +- 2, half[b], half[b +- 1]).
 * The CPU's start wherever its peak is one of the three. */
QPSK_HD double qpsk_peak_start_half(const prx_cf32 *half, size_t nfft, size_t kmax, size_t b,
                                    float bp, prx_cf32 xm, prx_cf32 xp) {
  const size_t nh = nfft / 2, e = 2 * b, om = (e + nfft - 1) % nfft, op = (e + 1) % nfft;
  size_t best = e;
  float p = bp;
  int64_t bi = qpsk_peak_cand(e, kmax, nfft);
  const float pm = qpsk_bin_power(xm), pp = qpsk_bin_power(xp);
  const int64_t im = qpsk_peak_cand(om, kmax, nfft), ip = qpsk_peak_cand(op, kmax, nfft);
  if (im >= 0 && qpsk_peak_better(pm, (size_t)im, p, (size_t)bi)) {
    best = om;
    p = pm;
    bi = im;
  }
  if (ip >= 0 && qpsk_peak_better(pp, (size_t)ip, p, (size_t)bi)) {
    best = op;
    p = pp;
    bi = ip;
  }
  if (best == e)
    return qpsk_peak_vertex(qpsk_bin_mag(xm), sqrt((double)p), qpsk_bin_mag(xp), best, nfft);
  /* an odd peak: its neighbours are the even bins either side */
  const size_t lo = best == op ? b : (b + nh - 1) % nh, hi = best == op ? (b + 1) % nh : b;
  return qpsk_peak_vertex(qpsk_bin_mag(half[lo]), sqrt((double)p), qpsk_bin_mag(half[hi]), best,
                          nfft);
}

/* The refinement mixes the values near nu0 down and sums runs of QPSK_REFINE_D of them:
 * exp(-j 2 pi nu0 l) for l < D (the same in every run), run g's sum turned to the window's
 * centre kc = (n - 1) / 2 by exp(j 2 pi nu0 (kc - g D)) (in double, evaluated directly). */
#define QPSK_REFINE_D 64
QPSK_HD void qpsk_refine_tab(double nu0, unsigned l, float *tr, float *ti) {
  const double a = 6.283185307179586476925286766559 * nu0 * (double)l;
  *tr = (float)cos(a);
  *ti = (float)-sin(a);
}
/* A run's sum (sumr, sumi) from window index k0 on, turned to the centre of a window of n values */
QPSK_HD prx_cf32 qpsk_refine_turn(float sumr, float sumi, double nu0, size_t n, size_t k0) {
  const double kc = 0.5 * (double)(n - 1);
  const double a = 6.283185307179586476925286766559 * nu0 * (kc - (double)k0);
  const double ar = cos(a), ai = sin(a);
  prx_cf32 o = {(float)(sumr * ar - sumi * ai), (float)(sumr * ai + sumi * ar)};
  return o;
}
/* Run g's sum read directly from the window w of n values (the kernel stages the window through
 * shared memory, qpsk_stages_cfo.cu, and sums each run in this order) */
QPSK_HD prx_cf32 qpsk_refine_run(const prx_cf32 *w, size_t n, double nu0, size_t g, const float *tr,
                                 const float *ti) {
  const size_t k0 = g * QPSK_REFINE_D, len = k0 + QPSK_REFINE_D <= n ? QPSK_REFINE_D : n - k0;
  float sumr = 0, sumi = 0;
  for (size_t l = 0; l < len; l++) {
    sumr += w[k0 + l].re * tr[l] - w[k0 + l].im * ti[l];
    sumi += w[k0 + l].re * ti[l] + w[k0 + l].im * tr[l];
  }
  return qpsk_refine_turn(sumr, sumi, nu0, n, k0);
}

/* Newton's step on the periodogram P = |X|^2 from the sums x = (X, X1, X2) (re, im each) at the
 * current offset: -P' / P'' clamped to max_step into *step; 0 where P'' >= 0 (no step). */
QPSK_HD int qpsk_refine_step(const double x[6], double max_step, double *step) {
  /* P = |X|^2: P' = 4 pi Im(conj(X) X1), P'' = 8 pi^2 (|X1|^2 - Re(conj(X) X2)) */
  const double pi_ = 3.14159265358979323846264338327950288;
  double d1 = 4 * pi_ * (x[0] * x[3] - x[1] * x[2]);
  double d2 = 8 * pi_ * pi_ * (x[2] * x[2] + x[3] * x[3] - (x[0] * x[4] + x[1] * x[5]));
  if (!(d2 < 0)) return 0;
  double st = -d1 / d2;
  if (st > max_step) st = max_step;
  if (st < -max_step) st = -max_step;
  *step = st;
  return 1;
}

/* Newton's steps stop at a step below 1e-4 of a bin (far below the noise); an offset past
 * 2 max_step is not taken (the start nu0 stays) */
QPSK_HD int qpsk_refine_converged(double step, size_t n) { return fabs(step) < 1e-4 / (double)n; }
QPSK_HD double qpsk_refine_result(double nu0, double off, double max_step) {
  return fabs(off) > 2 * max_step ? nu0 : nu0 + off;
}

/* Adds run sum v turned by e = er + j ei at time d (from the window's centre) to the sums
 * x = (X, X1, X2) (re, im each): X += v e, X1 += d v e, X2 += d^2 v e. */
QPSK_HD void qpsk_refine_add(double x[6], prx_cf32 v, double er, double ei, double d) {
  const double pr = v.re * er - v.im * ei, pi = v.re * ei + v.im * er;
  x[0] += pr;
  x[1] += pi;
  x[2] += d * pr;
  x[3] += d * pi;
  x[4] += d * d * pr;
  x[5] += d * d * pi;
}

/* One lane's share of the sums X, X1 = sum d v e, X2 = sum d^2 v e at offset nu (e = exp(-j 2 pi
 * nu d), d = g D + t0) over run sums g = lane, lane + nl, ... of the m: each e evaluated directly
 * (qpsk_refine_newton's recurrence is serial), added into x. */
QPSK_HD void qpsk_refine_part(const prx_cf32 *v, size_t m, size_t n, double nu, unsigned lane,
                              unsigned nl, double x[6]) {
  const double two_pi = 6.283185307179586476925286766559, D = QPSK_REFINE_D;
  const double t0 = 0.5 * (D - 1) - 0.5 * (double)(n - 1);
  for (size_t g = lane; g < m; g += nl) {
    const double d = (double)g * D + t0, a = two_pi * nu * d;
    qpsk_refine_add(x, v[g], cos(a), -sin(a), d);
  }
}

/* Newton's steps on the periodogram of the m run sums v (times g D + t0 from the centre) from 0,
 * each step at most max_step, at most 4: nu0 + the offset found, or nu0 when it ran past
 * 2 max_step (qpsk_periodogram_refine's rule). n: the window's values. */
QPSK_HD double qpsk_refine_newton(const prx_cf32 *v, size_t m, size_t n, double nu0,
                                  double max_step) {
  const double two_pi = 6.283185307179586476925286766559, D = QPSK_REFINE_D;
  const double t0 = 0.5 * (D - 1) - 0.5 * (double)(n - 1);
  double nu = 0;
  for (int it = 0; it < 4; it++) {
    /* X, X1 = sum d v e, X2 = sum d^2 v e at nu, e = exp(-j 2 pi nu d), d = g D + t0 */
    double x[6] = {0, 0, 0, 0, 0, 0};
    double er = cos(two_pi * nu * t0), ei = -sin(two_pi * nu * t0);
    const double sr = cos(two_pi * nu * D), si = -sin(two_pi * nu * D);
    for (size_t g = 0; g < m; g++) {
      qpsk_refine_add(x, v[g], er, ei, (double)g * D + t0);
      double t = er * sr - ei * si;
      ei = er * si + ei * sr;
      er = t;
    }
    double step;
    if (!qpsk_refine_step(x, max_step, &step)) break;
    nu += step;
    if (qpsk_refine_converged(step, n)) break;
  }
  return qpsk_refine_result(nu0, nu, max_step);
}

/* The CFO in cycles per symbol from the refined line nu of values spaced 1 + e / (1 - e) symbols
 * (stage_cfo). */
QPSK_HD double qpsk_cfo_of(double nu, double e) { return nu / (4 * (1 + e / (1 - e))); }

/* ---- stage om folded into pre: |z - D|^2 g^2 w_m (w_m = exp(-j 2 pi m / 4)) summed over a
 * sub-block is g^2 (A - conj(D) B - D B' + |D|^2 W) with A = sum |z|^2 w_m, B = sum z w_m,
 * B' = sum conj(z) w_m, W = sum w_m: sums that pre forms before the span's DC and level are
 * known ---- */
#define QPSK_OMS 6 /* a sub-block's sums: A, B, B' (re, im each) */
/* grid value z at grid index m into a sub-block's sums s */
QPSK_HD void qpsk_oms_add(prx_cf32 z, int64_t m, double s[QPSK_OMS]) {
  const double a = z.re, b = z.im, p = a * a + b * b;
  switch ((int)(m & 3)) {
  case 0: /* w = 1 */ s[0] += p, s[2] += a, s[3] += b, s[4] += a, s[5] -= b; break;
  case 1: /* w = -j */ s[1] -= p, s[2] += b, s[3] -= a, s[4] -= b, s[5] -= a; break;
  case 2: /* w = -1 */ s[0] -= p, s[2] -= a, s[3] -= b, s[4] -= a, s[5] += b; break;
  default: /* w = j */ s[1] += p, s[2] -= b, s[3] += a, s[4] += b, s[5] += a; break;
  }
}
/* Stage pre_om, one lane's part of one step of its outputs (qpsk_stages_cuda.cu): the n outputs
 * o at grid indices k0 .. k0 + n - 1 (m0 + k the grid index m of output k), all in one
 * sub-block (n = 1, or 4 from a multiple of 4: sub-block j holds k in gm + [j Ls4, (j + 1) Ls4),
 * the last, nsub, the rest of the block; gm the grid's margin), summed into t where they are the
 * block's own (gm <= k < own_end). The warp's step starts at seg0 and spans at most 128 <= Ls4
 * indices, so at most two sub-blocks: *jlo is the first; returns 1 when this lane's outputs lie
 * in the second. */
QPSK_HD int qpsk_om_lane(const prx_cf32 *o, int n, int64_t k0, int64_t seg0, int64_t m0, int gm,
                         int64_t own_end, uint32_t Ls4, uint32_t nsub, double t[QPSK_OMS],
                         uint32_t *jlo) {
  uint32_t j0 = seg0 < gm ? 0 : (uint32_t)(seg0 - gm) / Ls4;
  *jlo = j0 < nsub ? j0 : nsub;
  for (int q = 0; q < n; q++) {
    const int64_t k = k0 + q;
    if (k >= gm && k < own_end) qpsk_oms_add(o[q], m0 + k, t);
  }
  if (k0 < gm) return 0;
  uint32_t j = (uint32_t)(k0 - gm) / Ls4;
  return (j < nsub ? j : nsub) > *jlo;
}

/* qpsk_om_lane's sums of one group of four outputs o at k0 .. k0 + 3 whose grid indices m0 + k0
 * + q have the residues q mod 4 (the unit-step grid's groups: m0 and k0 multiples of 4): each
 * output's terms of qpsk_oms_add with its weight known, an output that does not count (outside
 * gm .. own_end - 1) taken as 0, whose terms (+0) leave every sum as it is (a sum that starts at
 * +0 and adds or subtracts is never -0): the same sums as qpsk_om_lane's, without branches. */
QPSK_HD void qpsk_om_group4(const prx_cf32 o[4], int64_t k0, int gm, int64_t own_end,
                            double s[QPSK_OMS]) {
  double a[4], b[4], p[4];
  for (int q = 0; q < 4; q++) {
    const int in = k0 + q >= gm && k0 + q < own_end;
    a[q] = in ? o[q].re : 0.f;
    b[q] = in ? o[q].im : 0.f;
    p[q] = a[q] * a[q] + b[q] * b[q];
  }
  s[0] += p[0], s[2] += a[0], s[3] += b[0], s[4] += a[0], s[5] -= b[0]; /* w = 1 */
  s[1] -= p[1], s[2] += b[1], s[3] -= a[1], s[4] -= b[1], s[5] -= a[1]; /* w = -j */
  s[0] -= p[2], s[2] -= a[2], s[3] -= b[2], s[4] -= a[2], s[5] += b[2]; /* w = -1 */
  s[1] += p[3], s[2] -= b[3], s[3] += a[3], s[4] += b[3], s[5] += a[3]; /* w = j */
}

/* Stage om: sub-block j of the O&M record of the block whose own grid starts at m0 = 4 b L (nsub
 * sub-blocks of Ls4 grid values, then the rest of its 4 L, all cut at g_hi) is grid indices
 * [*a, *e); it is in the record while it is not empty (the first empty one ends them: a sub-block
 * is empty exactly when every later one is; none past nsub is). */
QPSK_HD int qpsk_om_sub_span(int64_t m0, int64_t L, int64_t Ls4, unsigned nsub, int64_t g_hi,
                             unsigned j, int64_t *a, int64_t *e) {
  *a = m0 + Ls4 * j;
  *e = j < nsub ? *a + Ls4 : m0 + 4 * L;
  if (*e > g_hi) *e = g_hi;
  return j <= nsub && *e > *a;
}

/* Stage pre_om from the outputs its sliding filters stage (qpsk_stages_cuda.cu's om_tile): the
 * sums of a chunk of QPSK_OM_CHUNK consecutive outputs of one sub-block whose first grid index is
 * a multiple of 4, a group of four at a time. qpsk_om_group_add adds a group's outputs o (output
 * u at the residue u) to e: each output's a, b, p to the accumulator of its parity u mod 2 with
 * the sign (-1)^(u / 2), both known where the loop unrolls (no weight per output);
 * qpsk_om_chunk_end applies the parities' weights (1 and -j) once and adds the chunk's sums to s:
 * qpsk_oms_add's terms in another order (rounding of a few 1e-16 relative). qpsk_om_chunk: the
 * chunk o with the outputs lo <= u < hi counting (the others taken as 0, which adds +0 to every
 * sum: the kernel's zeros give the same values). */
#define QPSK_OM_CHUNK 16
QPSK_HD void qpsk_om_group_add(const prx_cf32 o[4], double e[2][3]) {
  QPSK_UNROLL
  for (int u = 0; u < 4; u++) {
    const double a = o[u].re, b = o[u].im, p = a * a + b * b;
    if (u >> 1) {
      e[u & 1][0] -= a, e[u & 1][1] -= b, e[u & 1][2] -= p;
    } else {
      e[u & 1][0] += a, e[u & 1][1] += b, e[u & 1][2] += p;
    }
  }
}
QPSK_HD void qpsk_om_chunk_end(const double e[2][3], double s[QPSK_OMS]) {
  /* even outputs (residues 0, 2) weigh 1, odd ones (1, 3) -j */
  s[0] += e[0][2];
  s[1] -= e[1][2];
  s[2] += e[0][0] + e[1][1];
  s[3] += e[0][1] - e[1][0];
  s[4] += e[0][0] - e[1][1];
  s[5] -= e[0][1] + e[1][0];
}
QPSK_HD void qpsk_om_chunk(const prx_cf32 *o, int lo, int hi, double s[QPSK_OMS]) {
  double e[2][3] = {{0, 0, 0}, {0, 0, 0}}; /* parity: a, b, p */
  for (int g = 0; g < QPSK_OM_CHUNK; g += 4) {
    prx_cf32 z[4];
    for (int u = 0; u < 4; u++) {
      const prx_cf32 zero = {0, 0};
      z[u] = g + u >= lo && g + u < hi ? o[g + u] : zero;
    }
    qpsk_om_group_add(z, e);
  }
  qpsk_om_chunk_end(e, s);
}

/* The chunks of qpsk_om_chunk in a block (sub-blocks 0 .. nsub of Ls4 own outputs, the last the
 * rest of the block's 4 L, gm the grid's margin): each sub-block in *cj chunks of QPSK_OM_CHUNK
 * outputs (its last one shorter where Ls4 is not a multiple), chunk i = j cj + c at own outputs
 * [*ks, *ke) (empty past the block's end); *cj from qpsk_om_chunks. */
QPSK_HD uint32_t qpsk_om_chunks(uint32_t Ls4) { return (Ls4 + QPSK_OM_CHUNK - 1) / QPSK_OM_CHUNK; }
QPSK_HD void qpsk_om_chunk_span(uint32_t i, uint32_t cj, uint32_t nsub, uint32_t Ls4, int gm,
                                int64_t L, int64_t *ks, int64_t *ke) {
  const uint32_t j = i / cj, c = i - j * cj;
  int64_t a, e; /* the sub-block's own outputs (qpsk_om_sub_span from gm, not cut) */
  qpsk_om_sub_span(gm, L, Ls4, nsub, INT64_MAX, j, &a, &e);
  *ks = a + (int64_t)c * QPSK_OM_CHUNK;
  *ke = *ks + QPSK_OM_CHUNK < e ? *ks + QPSK_OM_CHUNK : e;
  if (*ks > e) *ks = e;
}

/* Stage pre_om at a unit-step grid, the blocked filter (four outputs a lane; the sliding one sums
 * by chunks, qpsk_om_chunk): the groups of four grid outputs (group G holds outputs 4G .. 4G + 3
 * of the block's ng = 4 L + 2 gm, gm and Ls4 multiples of 4, so no group straddles a sub-block)
 * whose sums make sub-block j (0 .. nsub; the last, nsub, the rest of the block): groups
 * [*G0, *G1) of the ng / 4. Each group's own outputs are summed by its lane
 * (qpsk_om_group4), the sub-block's sums are its groups' in the order of G. */
QPSK_HD void qpsk_om_groups(uint32_t j, uint32_t nsub, uint32_t Ls4, int gm, int64_t ng,
                            int64_t *G0, int64_t *G1) {
  const int64_t ngr = ng / 4;
  *G0 = ((int64_t)gm + (int64_t)Ls4 * j) / 4;
  *G1 = j < nsub ? *G0 + Ls4 / 4 : ngr;
  if (*G0 > ngr) *G0 = ngr;
  if (*G1 > ngr) *G1 = ngr;
  if (j == 0) *G0 = 0; /* the left margin's groups (no own outputs: zero sums) */
}

/* Stage pre_om: the end of a block's own outputs whose O&M sums count (outputs k = 0 .. ng - 1 at
 * grid indices m0 + k, m0 = 4 b L - gm; the own ones gm .. gm + 4 L - 1), those below grid index
 * g_hi. Compared as g_hi < m0 + end: g_hi - m0 overflows for g_hi = INT64_MAX (the value while
 * the stream goes on) in the stream's first block, where m0 < 0. */
QPSK_HD int64_t qpsk_om_own_end(int64_t m0, int64_t L, int gm, int64_t g_hi) {
  const int64_t end = gm + 4 * L;
  return g_hi < m0 + end ? g_hi - m0 : end;
}

/* The O&M sum of a sub-block [a, e) of grid indices (a a multiple of 4) from its sums, for the
 * DC D and gain g: x = g^2 (A - conj(D) B - D B' + |D|^2 W). */
QPSK_HD void qpsk_oms_value(const double s[QPSK_OMS], int64_t a, int64_t e, prx_cf32 D, float g,
                            double x[2]) {
  const int64_t n = e - a, full = n / 4, rest = n % 4; /* residues 0 .. rest - 1 once more */
  const double n0 = (double)(full + (rest > 0)), n1 = (double)(full + (rest > 1));
  const double n2 = (double)(full + (rest > 2)), n3 = (double)full;
  const double wr = n0 - n2, wi = n3 - n1, dr = D.re, di = D.im, d2 = dr * dr + di * di;
  const double cbr = dr * s[2] + di * s[3], cbi = dr * s[3] - di * s[2]; /* conj(D) B */
  const double dbr = dr * s[4] - di * s[5], dbi = dr * s[5] + di * s[4]; /* D B' */
  const double g2 = (double)g * g;
  x[0] = g2 * (s[0] - cbr - dbr + d2 * wr);
  x[1] = g2 * (s[1] - cbi - dbi + d2 * wi);
}

/* The grid that pre_om leaves (sps 4 and 16/3, the default path; x4_level its only reader) holds
 * each value as two bfloat16: the high 16 bits of each float, rounded to nearest, ties to even
 * (the GPU's cvt.rn.bf16x2.f32). Half the bytes pre writes and x4 reads; each component within
 * 2^-9 of itself (~-54 dB), below the noise of any signal the 4th-power line is measured on. The
 * O&M sums are taken from the floats before the store. These two give the host's emulations and
 * tests the kernels' values: the rounding of a float and the float of a bfloat16. */
QPSK_HD uint16_t qpsk_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN stays NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
QPSK_HD float qpsk_bf16_float(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* a grid value as pre_om stores and x4_level reads it */
QPSK_HD prx_cf32 qpsk_grid_bf16(prx_cf32 v) {
  prx_cf32 o = {qpsk_bf16_float(qpsk_bf16_bits(v.re)), qpsk_bf16_float(qpsk_bf16_bits(v.im))};
  return o;
}

/* Stage om: grid value v less the DC D, at unit level (as qpsk_om_accum leaves it). */
QPSK_HD prx_cf32 qpsk_om_level(prx_cf32 v, prx_cf32 D, float gain) {
  prx_cf32 o = {(v.re - D.re) * gain, (v.im - D.im) * gain};
  return o;
}

/* ---- the CFO alias test's measure (qpsk_alias.c on the CPU, the stage kernels' alias entry on
 * the GPU): the input through QPSK_ALIAS_POLES one-pole low-passes in cascade, each with its corner
 * at QPSK_ALIAS_CORNER symbol rates, the lag-one sum y[n] conj(y[n - 1]) of the last one's output
 * and its power, in double, one sample after the other. Twelve sections at 0.7 Rs: a neighbour
 * 1.4-2 Rs away and 10-30 dB stronger pulled the measure of four sections at 1 Rs to an alias's
 * angle in 42 of 45 trials (a false cfo_alias on a carrier whose bits were right; in `polyrx rx`,
 * a neighbour 20 dB up in the next channel), these in none, and they miss fewer aliases at
 * 3-5 dB (2 of 72 trials against 8); the narrower band needs more symbols against the data's own
 * spectral noise (qpsk_alias_len: 8192) and costs three times the four sections' work
 * (bench/RESULTS.md, twenty-fifth session) ---- */
#define QPSK_ALIAS_POLES 12
#define QPSK_ALIAS_CORNER 0.7
typedef struct {
  double y[QPSK_ALIAS_POLES][2]; /* each section's last output */
  double r[2];                   /* the lag-one sum (re, im) */
  double p;                      /* the power sum */
} qpsk_alias_sums;

/* each section's gain at sps samples per symbol: y += a (x - y) */
QPSK_HD double qpsk_alias_gain(double sps) {
  return 1 - exp(-6.283185307179586476925286766559 * QPSK_ALIAS_CORNER / sps);
}

/* sample (xr, xi) into the sums (a non-finite sample read as 0, as the demodulator reads it) */
QPSK_HD void qpsk_alias_step(qpsk_alias_sums *s, double a, double xr, double xi) {
  if (!(isfinite(xr) && isfinite(xi))) xr = xi = 0;
  const double pr = s->y[QPSK_ALIAS_POLES - 1][0], pi = s->y[QPSK_ALIAS_POLES - 1][1];
  for (int j = 0; j < QPSK_ALIAS_POLES; j++) {
    s->y[j][0] += a * (xr - s->y[j][0]);
    s->y[j][1] += a * (xi - s->y[j][1]);
    xr = s->y[j][0];
    xi = s->y[j][1];
  }
  s->r[0] += xr * pr + xi * pi;
  s->r[1] += xi * pr - xr * pi;
  s->p += xr * xr + xi * xi;
}

#endif
