/* Polyphase FIR on an output grid (see qpsk_fir.h). The matched filter is the demodulator's
 * biggest cost, so the dot products are vectorised (AVX2 + FMA when built for it): four outputs at
 * a time, each a dot product of interleaved re/im input with duplicated taps, reduced together. */
#include "qpsk_fir.h"

#include "../core/internal.h"

#include <math.h>
#include <string.h>

#include "qpsk_simd.h"
#include "qpsk_stage_math.h"

static inline void fir_pos(const qpsk_fir *f, int64_t m, int64_t *i, unsigned *j) {
  if (f->rq >= 0)
    qpsk_pos_exact(m, f->rq, f->Q, i, j);
  else
    qpsk_pos_grid(m, f->r, f->Q, i, j);
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
  *out = qpsk_dot1(t, x, ntaps);
}

#ifdef QPSK_AVX2

/* Eight outputs sharing one set of taps: eight independent FMA chains, enough to hide the FMA
 * latency (four chains leave the units idle half the time). */
static inline void dot8_shared(const float *t, const float *const x[8], unsigned nv, float *out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (unsigned v = 0; v < nv; v++) {
    __m256 h = _mm256_load_ps(t + 8 * v);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v), h, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v), h, a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v), h, a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v), h, a3);
    a4 = _mm256_fmadd_ps(_mm256_loadu_ps(x[4] + 8 * v), h, a4);
    a5 = _mm256_fmadd_ps(_mm256_loadu_ps(x[5] + 8 * v), h, a5);
    a6 = _mm256_fmadd_ps(_mm256_loadu_ps(x[6] + 8 * v), h, a6);
    a7 = _mm256_fmadd_ps(_mm256_loadu_ps(x[7] + 8 * v), h, a7);
  }
  _mm256_storeu_ps(out, reduce4(a0, a1, a2, a3));
  _mm256_storeu_ps(out + 8, reduce4(a4, a5, a6, a7));
}

/* The same for outputs a constant DI input samples apart (inlined with a literal DI): their
 * inputs are one pointer at constant offsets, so the calling loop needs no array of eight
 * pointers (which it keeps on the stack, stored and reloaded every eight outputs) */
static inline void dot8_step(const float *t, const float *x, const int DI, unsigned nv,
                             float *out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (unsigned v = 0; v < nv; v++) {
    __m256 h = _mm256_load_ps(t + 8 * v);
    const float *p = x + 8 * v;
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), h, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * DI), h, a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 4 * DI), h, a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 6 * DI), h, a3);
    a4 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8 * DI), h, a4);
    a5 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 10 * DI), h, a5);
    a6 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 12 * DI), h, a6);
    a7 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 14 * DI), h, a7);
  }
  _mm256_storeu_ps(out, reduce4(a0, a1, a2, a3));
  _mm256_storeu_ps(out + 8, reduce4(a4, a5, a6, a7));
}

/* Four outputs with their own taps: two chains each (even and odd tap vectors). */
static inline void dot4(const float *const t[4], const float *const x[4], unsigned nv, float *out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  unsigned v = 0;
  for (; v + 2 <= nv; v += 2) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v), _mm256_load_ps(t[0] + 8 * v), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v), _mm256_load_ps(t[1] + 8 * v), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v), _mm256_load_ps(t[2] + 8 * v), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v), _mm256_load_ps(t[3] + 8 * v), a3);
    b0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v + 8), _mm256_load_ps(t[0] + 8 * v + 8), b0);
    b1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v + 8), _mm256_load_ps(t[1] + 8 * v + 8), b1);
    b2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v + 8), _mm256_load_ps(t[2] + 8 * v + 8), b2);
    b3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v + 8), _mm256_load_ps(t[3] + 8 * v + 8), b3);
  }
  if (v < nv) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x[0] + 8 * v), _mm256_load_ps(t[0] + 8 * v), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x[1] + 8 * v), _mm256_load_ps(t[1] + 8 * v), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x[2] + 8 * v), _mm256_load_ps(t[2] + 8 * v), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x[3] + 8 * v), _mm256_load_ps(t[3] + 8 * v), a3);
  }
  _mm256_storeu_ps(out, reduce4(_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1), _mm256_add_ps(a2, b2),
                                _mm256_add_ps(a3, b3)));
}
#endif

/* Positions of consecutive outputs, stepped without divisions when they are exact */
typedef struct {
  int64_t i;
  unsigned j;
  int64_t di;
  unsigned dj;
} fir_walk;

static inline void walk_init(const qpsk_fir *f, int64_t m, fir_walk *w) {
  fir_pos(f, m, &w->i, &w->j);
  w->di = 0;
  w->dj = 0;
  if (f->rq >= 0) {
    w->di = f->rq / f->Q;
    w->dj = (unsigned)(f->rq % f->Q);
  }
}

static inline void walk_next(const qpsk_fir *f, int64_t m_next, fir_walk *w) {
  if (f->rq >= 0) {
    w->i += w->di;
    w->j += w->dj;
    if (w->j >= f->Q) {
      w->j -= f->Q;
      w->i++;
    }
  } else {
    fir_pos(f, m_next, &w->i, &w->j);
  }
}

/* Cache lines to prefetch from inside a kernel, a few per step: `per` lines each time */
typedef struct {
  const uint8_t *p, *end;
  size_t per;
} fir_prefetch;

static fir_prefetch prefetch_of(const void *p, size_t bytes, size_t steps) {
  if (!p) { /* nothing to prefetch (no pointer arithmetic on NULL) */
    fir_prefetch none = {NULL, NULL, 0};
    return none;
  }
  size_t lines = (bytes + 63) / 64;
  fir_prefetch c = {p, (const uint8_t *)p + bytes, steps ? (lines + steps - 1) / steps : lines};
  return c;
}

static inline void prefetch_step(fir_prefetch *c) {
  for (size_t l = 0; l < c->per && c->p < c->end; l++, c->p += 64) __builtin_prefetch(c->p, 0, 2);
}

/* Outputs that share a phase share their taps: with a period of P outputs (P = 3 for a grid
 * step of 4/3 samples, i.e. 16/3 samples per symbol), the outputs k = rho, rho + P, rho + 2P ...
 * all use one row of the bank, so they are computed eight at a time with the shared-tap kernel
 * and written back to their places. */
static inline void fir_run(const qpsk_fir *f, const prx_cf32 *x, int64_t x_base, int64_t m0,
                           size_t n, prx_cf32 *out, fir_prefetch *pf) {
  const float *xf = (const float *)x - 2 * (f->c + x_base);
  const size_t row = 2 * (size_t)f->ntaps;
#ifdef QPSK_AVX2
  const unsigned nv = f->ntaps / 4;
  if (f->rq >= 0) {
    unsigned d = (unsigned)(f->rq % f->Q), P = d ? f->Q / (unsigned)prx_gcd_u64(d, f->Q) : 1;
    int64_t di = (int64_t)P * f->rq / f->Q; /* input step between outputs P apart (exact) */
    for (unsigned rho = 0; rho < P && rho < n; rho++) {
      int64_t i;
      unsigned j;
      fir_pos(f, m0 + rho, &i, &j);
      const float *t = f->bank + j * row;
      size_t k = rho;
      if (P == 1 && di == 1) /* the pre-filter at 4 samples per symbol */
        for (; k + 7 < n; k += 8, i += 8) {
          prefetch_step(pf);
          dot8_step(t, xf + 2 * i, 1, nv, (float *)(out + k));
        }
      if (P == 1 && di == 2) /* at 8 */
        for (; k + 7 < n; k += 8, i += 16) {
          prefetch_step(pf);
          dot8_step(t, xf + 2 * i, 2, nv, (float *)(out + k));
        }
      for (; k + 7 * (size_t)P < n; k += 8 * (size_t)P) {
        const float *xp[8];
        for (int o = 0; o < 8; o++) xp[o] = xf + 2 * (i + o * di);
        prefetch_step(pf);
        if (P == 1) {
          dot8_shared(t, xp, nv, (float *)(out + k));
        } else {
          prx_cf32 tmp[8];
          dot8_shared(t, xp, nv, (float *)tmp);
          for (int o = 0; o < 8; o++) out[k + (size_t)o * P] = tmp[o];
        }
        i += 8 * di;
      }
      for (; k < n; k += P, i += di) dot1(t, xf + 2 * i, f->ntaps, out + k);
    }
    return;
  }
  size_t k = 0;
  fir_walk w;
  walk_init(f, m0, &w);
  for (; k + 4 <= n; k += 4) {
    const float *t[4], *xp[4];
    for (int o = 0; o < 4; o++) {
      t[o] = f->bank + w.j * row;
      xp[o] = xf + 2 * w.i;
      walk_next(f, m0 + (int64_t)k + o + 1, &w);
    }
    prefetch_step(pf);
    dot4(t, xp, nv, (float *)(out + k));
  }
#else
  (void)pf;
  size_t k = 0;
  fir_walk w;
  walk_init(f, m0, &w);
#endif
  for (; k < n; k++) {
    dot1(f->bank + w.j * row, xf + 2 * w.i, f->ntaps, out + k);
    walk_next(f, m0 + (int64_t)k + 1, &w);
  }
}

void qpsk_fir_run(const qpsk_fir *f, const prx_cf32 *x, int64_t x_base, int64_t m0, size_t n,
                  prx_cf32 *out, const void *pf, size_t pf_bytes) {
  PRX_ISA_DISPATCH(qpsk_fir_run, f, x, x_base, m0, n, out, pf, pf_bytes);
  fir_prefetch c = prefetch_of(pf, pf_bytes, n / 8);
  fir_run(f, x, x_base, m0, n, out, &c);
}

static inline void pos_at(const qpsk_fir *f, double p, long *i, long *j) {
  qpsk_pos_at(p, f->Q, i, j);
}

static inline void fir_run_at(const qpsk_fir *f, const prx_cf32 *x, double p0, double step,
                              size_t n, prx_cf32 *out, fir_prefetch *pf) {
  const float *xf = (const float *)x - 2 * f->c;
  const size_t row = 2 * (size_t)f->ntaps;
  size_t k = 0;
#ifdef QPSK_AVX2
  const unsigned nv = f->ntaps / 4;
  /* the period of the fractional phase: the smallest P <= 8 with P step an integer */
  const unsigned P = qpsk_phase_period(step);
  if (P) {
    const long di = lround(P * step); /* input step between outputs P apart (exact) */
    for (unsigned rho = 0; rho < P && rho < n; rho++) {
      size_t kk = rho;
      for (; kk + 7 * (size_t)P < n; kk += 8 * (size_t)P) {
        const float *t[8], *xp[8];
        long i0, j0, i7, j7;
        pos_at(f, p0 + (double)kk * step, &i0, &j0);
        pos_at(f, p0 + (double)(kk + 7 * (size_t)P) * step, &i7, &j7);
        prx_cf32 tmp[8], *dst = P == 1 ? out + kk : tmp;
        prefetch_step(pf);
        if (j0 == j7 && i7 == i0 + 7 * di) { /* one phase for the eight */
          const float *t0 = f->bank + (size_t)j0 * row, *x0 = xf + 2 * i0;
          switch (di) { /* the usual integer rates: constant offsets (dot8_step) */
          case 2: dot8_step(t0, x0, 2, nv, (float *)dst); break;
          case 3: dot8_step(t0, x0, 3, nv, (float *)dst); break;
          case 4: dot8_step(t0, x0, 4, nv, (float *)dst); break;
          case 8: dot8_step(t0, x0, 8, nv, (float *)dst); break;
          default:
            for (int o = 0; o < 8; o++) xp[o] = x0 + 2 * o * di;
            dot8_shared(t0, xp, nv, (float *)dst);
          }
        } else { /* a position rounded across a phase boundary: each its own taps */
          for (int o = 0; o < 8; o++) {
            long i, j;
            pos_at(f, p0 + (double)(kk + (size_t)o * P) * step, &i, &j);
            t[o] = f->bank + (size_t)j * row;
            xp[o] = xf + 2 * i;
          }
          dot4(t, xp, nv, (float *)dst);
          dot4(t + 4, xp + 4, nv, (float *)(dst + 4));
        }
        if (P > 1)
          for (int o = 0; o < 8; o++) out[kk + (size_t)o * P] = tmp[o];
      }
      for (; kk < n; kk += P) {
        long i, j;
        pos_at(f, p0 + (double)kk * step, &i, &j);
        dot1(f->bank + (size_t)j * row, xf + 2 * i, f->ntaps, out + kk);
      }
    }
    return;
  }
  for (; k + 8 <= n; k += 8) {
    const float *t[8], *xp[8];
    for (int o = 0; o < 8; o++) {
      long i, j;
      pos_at(f, p0 + (double)(k + o) * step, &i, &j);
      t[o] = f->bank + (size_t)j * row;
      xp[o] = xf + 2 * i;
    }
    prefetch_step(pf);
    dot4(t, xp, nv, (float *)(out + k));
    dot4(t + 4, xp + 4, nv, (float *)(out + k + 4));
  }
#else
  (void)pf;
#endif
  for (; k < n; k++) {
    long i, j;
    pos_at(f, p0 + (double)k * step, &i, &j);
    dot1(f->bank + (size_t)j * row, xf + 2 * i, f->ntaps, out + k);
  }
}

void qpsk_fir_run_at(const qpsk_fir *f, const prx_cf32 *x, double p0, double step, size_t n,
                     prx_cf32 *out, const void *pf, size_t pf_bytes) {
  PRX_ISA_DISPATCH(qpsk_fir_run_at, f, x, p0, step, n, out, pf, pf_bytes);
  fir_prefetch c = prefetch_of(pf, pf_bytes, n / 8);
  fir_run_at(f, x, p0, step, n, out, &c);
}
