/* The CUDA stage kernels of the demodulator bank (see qpsk_stages_cuda.h): one thread block per
 * (block, channel), its input window staged once in shared memory, each thread a strided share of
 * the block's outputs through the shared per-output arithmetic (qpsk_stage_math.h). */
extern "C" {
#include "qpsk_internal.h"
#include "qpsk_stages_cuda.h"
}
#include "qpsk_stages_cfo.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define STAGE_THREADS 256

static prx_status cuda_fail(cudaError_t e, const char *what) {
  return prx_fail(PRX_ERR_DEVICE, "CUDA demodulator stages: %s: %s", what, cudaGetErrorString(e));
}
#define CK(call, what)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) return cuda_fail(e_, what);                                             \
  } while (0)

/* sample s of channel c's row (cf32 or cf16) */
template <bool HALF>
__device__ __forceinline__ prx_cf32 load_sample(const void *rows, size_t stride, unsigned c,
                                                int64_t s) {
  const char *row = (const char *)rows + (size_t)c * stride;
  prx_cf32 v;
  if (HALF) {
    float2 f = __half22float2(((const __half2 *)row)[s]);
    v.re = f.x;
    v.im = f.y;
  } else {
    float2 f = ((const float2 *)row)[s];
    v.re = f.x;
    v.im = f.y;
  }
  return v;
}

/* the thread block's sum of v (each thread's value) into out[0..N-1] of thread 0 */
template <int N> __device__ __forceinline__ void block_sum(double v[N], double *scratch) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int q = 0; q < N; q++) {
    for (int o = 16; o > 0; o >>= 1) v[q] += __shfl_down_sync(0xffffffffu, v[q], o);
    if (lane == 0) scratch[warp * N + q] = v[q];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 0; q < N; q++) {
      double s = 0;
      for (unsigned w = 0; w < STAGE_THREADS / 32; w++) s += scratch[w * N + q];
      v[q] = s;
    }
  }
}

/* one output: taps t (re/im pairs) against the window x, both as float2 (64-bit loads) */
__device__ __forceinline__ prx_cf32 dot_f2(const float2 *__restrict__ t, const float2 *x,
                                           unsigned ntaps) {
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    float2 h = __ldg(t + l), v = x[l];
    re += h.x * v.x;
    im += h.y * v.y;
  }
  prx_cf32 r = {re, im};
  return r;
}

typedef struct {
  const void *rows;
  size_t stride;
  int64_t b0, n_total;
  unsigned nblk, L;
  double sps;
  const float *bank;
  unsigned Q, ntaps;
  int c;
  int64_t rq;
  double r;
  prx_cf32 *grid;
  double *mom;
  unsigned *nonfinite;
  const double *mix;  /* per-channel mixing frequencies (MIX kernels) */
  const float *bank4; /* BLK kernels: tap row 0 zero-padded to ntaps4 taps */
  unsigned ntaps4;
} pre_args;

/* Stage pre. Grid (nblk, C), STAGE_THREADS threads; dynamic shared memory: the block's input
 * window (pre_win samples, cf32). Each thread loads a strided share of the window (samples
 * outside the stream as 0, non-finite ones as 0) and sums the block's own samples (double: the
 * CPU's chunked float sums agree to float rounding), then computes a strided share of the
 * 4L + 2 QPSK_GM grid outputs from shared memory: the window is read from HBM once, and the
 * filter's taps (Q rows) stay in L1. */
template <bool HALF, bool MIX, bool BLK>
__global__ void __launch_bounds__(STAGE_THREADS) qpsk_pre_kernel(pre_args a) {
  extern __shared__ float2 win[];
  __shared__ double scratch[(STAGE_THREADS / 32) * 4];
  const unsigned c = blockIdx.y, blk = blockIdx.x;
  const int64_t b = a.b0 + blk, L = a.L;
  const int64_t m0 = 4 * b * L - QPSK_GM, ng = 4 * L + 2 * QPSK_GM;
  int64_t lo, hi, own0, own1;
  qpsk_pre_ranges(b, L, QPSK_GM, a.sps, a.rq, a.r, a.Q, a.c, a.ntaps, &lo, &hi, &own0, &own1);
  double m[4] = {0, 0, 0, 0};
  unsigned bad = 0;
  const prx_cf32 zero = {0, 0};
  const double fm = MIX ? a.mix[c] : 0, tz = MIX ? qpsk_mix_turns(fm, lo) : 0;
  for (int64_t t = threadIdx.x; t < hi - lo; t += STAGE_THREADS) {
    const int64_t s = lo + t;
    const int in = s >= 0 && s < a.n_total;
    prx_cf32 v = in ? load_sample<HALF>(a.rows, a.stride, c, s) : zero;
    if (MIX && in) v = qpsk_mix_sample(v, tz, fm, t);
    if (in && s >= own0 && s < own1) {
      if (isfinite(v.re) && isfinite(v.im)) {
        m[0] += v.re;
        m[1] += v.im;
        m[2] += (double)v.re * v.re + (double)v.im * v.im;
        m[3] += 1;
      } else {
        bad++;
      }
    }
    v = qpsk_window_sample(v, in, zero);
    win[qpsk_win_slot(t, BLK)] = make_float2(v.re, v.im);
  }
  if (BLK && threadIdx.x < 8) /* the blocked filter's reads run up to 7 samples past the window */
    win[qpsk_win_slot(hi - lo + threadIdx.x, 1)] = make_float2(0, 0);
  block_sum<4>(m, scratch);
  for (int o = 16; o > 0; o >>= 1) bad += __shfl_down_sync(0xffffffffu, bad, o);
  __shared__ unsigned bad_w[STAGE_THREADS / 32];
  if ((threadIdx.x & 31) == 0) bad_w[threadIdx.x >> 5] = bad;
  __syncthreads(); /* the window and the partial sums are complete */
  const size_t out = (size_t)c * a.nblk + blk;
  if (threadIdx.x == 0) {
    unsigned nb = 0;
    for (unsigned w = 0; w < STAGE_THREADS / 32; w++) nb += bad_w[w];
    for (int q = 0; q < 4; q++) a.mom[4 * out + q] = m[q];
    a.nonfinite[out] = nb;
  }
  prx_cf32 *g = a.grid + out * (size_t)ng;
  const float2 *bank = (const float2 *)a.bank;
  if (BLK) {
    /* a unit-step grid: four consecutive outputs per thread from one run of samples */
    unsigned row;
    int64_t off0;
    qpsk_pre_tap(m0, a.rq, a.r, a.Q, a.c, lo, &row, &off0);
    for (int64_t base = 4 * (int64_t)threadIdx.x; base < ng; base += 4 * STAGE_THREADS) {
      prx_cf32 o[4];
      qpsk_dot4(a.bank4, a.ntaps4, win, off0 + base, 1, o);
      for (int k = 0; k < 4; k++)
        if (base + k < ng) g[base + k] = o[k];
    }
  } else if (a.rq >= 0) {
    /* an exact grid: the first output's position, then steps of STAGE_THREADS outputs in
     * integers (the position qpsk_pre_tap gives, without a 64-bit division per output) */
    unsigned row;
    int64_t off;
    qpsk_pre_tap(m0 + threadIdx.x, a.rq, a.r, a.Q, a.c, lo, &row, &off);
    int64_t di;
    unsigned dj;
    qpsk_pre_walk(a.rq, a.Q, STAGE_THREADS, &di, &dj);
    for (int64_t k = threadIdx.x; k < ng; k += STAGE_THREADS) {
      g[k] = dot_f2(bank + (size_t)row * a.ntaps, win + off, a.ntaps);
      qpsk_pre_walk_next(di, dj, a.Q, &row, &off);
    }
  } else {
    for (int64_t k = threadIdx.x; k < ng; k += STAGE_THREADS) {
      unsigned row;
      int64_t off;
      qpsk_pre_tap(m0 + k, a.rq, a.r, a.Q, a.c, lo, &row, &off);
      g[k] = dot_f2(bank + (size_t)row * a.ntaps, win + off, a.ntaps);
    }
  }
}

/* window index t in shared memory: with PAD, one spare slot after every 16 samples, so that the
 * 16 lanes of a half-warp reading samples sps apart (32 bytes at sps 4) fall on distinct banks */
template <bool PAD> __device__ __forceinline__ int64_t win_at(int64_t t) {
  return PAD ? t + (t >> 4) : t;
}

/* the matched filter's dot product on the (possibly padded) window from index off */
template <bool PAD>
__device__ __forceinline__ prx_cf32 dot_win(const float2 *__restrict__ t, const float2 *win,
                                            int64_t off, unsigned ntaps) {
  if (!PAD) return dot_f2(t, win + off, ntaps);
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    float2 h = __ldg(t + l), v = win[win_at<true>(off + l)];
    re += h.x * v.x;
    im += h.y * v.y;
  }
  prx_cf32 r = {re, im};
  return r;
}

typedef struct {
  const void *rows;
  size_t stride;
  int64_t b0, n_total;
  unsigned nblk, L, Lmax;
  double sps;
  const float *bank;
  unsigned Q, ntaps;
  int c;
  const qpsk_mf_block *blk;
  prx_cf32 *sym;
  double *sums;
  const double *mix; /* per-channel mixing frequencies (MIX kernels) */
} mf_args;

/* Stage mf. Grid (nblk, C), STAGE_THREADS threads; dynamic shared memory: the block's matched
 * filter window (mf_win samples, cf32, with mf_pad one spare slot per 16). The window is loaded
 * once, less the span's DC, at unit level and de-rotated by the NCO (the phase theta + omega t in
 * double, reduced to one turn, then sincosf: the CPU's anchored float recurrence agrees to ~1e-6);
 * samples beyond the stream read as the DC (0 after its removal), non-finite ones as 0 before it.
 * Each thread then evaluates the matched filter at a strided share of the block's instants (the
 * taps of the rounded phase, from L1/L2: Q rows of 2 ntaps floats) and the V&V/M2M4 terms of its
 * symbols, summed over the block in double. */
template <bool HALF, bool PAD, bool MIX>
__global__ void __launch_bounds__(STAGE_THREADS) qpsk_mf_kernel(mf_args a) {
  extern __shared__ float2 win[];
  __shared__ double scratch[(STAGE_THREADS / 32) * 5];
  const unsigned c = blockIdx.y, blk = blockIdx.x;
  const size_t out = (size_t)c * a.nblk + blk;
  const qpsk_mf_block p = a.blk[out];
  const int64_t L = a.L;
  int64_t lo, hi;
  qpsk_mf_window_of(p.t.b, L, a.sps, a.c, a.ntaps, &lo, &hi);
  const int64_t n = p.t.k1 - p.t.k0;
  if (n <= 0) { /* nothing owned: no loads, zero sums */
    if (threadIdx.x < 5) a.sums[5 * out + threadIdx.x] = 0;
    return;
  }
  const prx_cf32 dc = {p.dc[0], p.dc[1]};
  const double fm = MIX ? a.mix[c] : 0, tz = MIX ? qpsk_mix_turns(fm, lo) : 0;
  for (int64_t t = threadIdx.x; t < hi - lo; t += STAGE_THREADS) {
    const int64_t s = lo + t;
    const int in = s >= 0 && s < a.n_total;
    prx_cf32 v = in ? load_sample<HALF>(a.rows, a.stride, c, s) : dc;
    if (MIX && in) v = qpsk_mix_sample(v, tz, fm, t);
    v = qpsk_mf_sample(qpsk_window_sample(v, in, dc), dc, p.gain, p.theta, p.omega, t);
    win[win_at<PAD>(t)] = make_float2(v.re, v.im);
  }
  __syncthreads();
  const float2 *bank = (const float2 *)a.bank;
  prx_cf32 *y = a.sym + out * (size_t)a.Lmax;
  float acc[4] = {0, 0, 0, 0};
  for (int64_t k = p.t.k0 + threadIdx.x; k < p.t.k1; k += STAGE_THREADS) {
    unsigned row;
    int64_t off;
    qpsk_mf_tap(&p.t, L, a.sps, lo, k, a.Q, a.c, &row, &off);
    prx_cf32 v = dot_win<PAD>(bank + (size_t)row * a.ntaps, win, off, a.ntaps);
    y[k - p.t.k0] = v;
    qpsk_sum_terms(v, acc);
  }
  double s[5] = {acc[0], acc[1], acc[2], acc[3], 0};
  block_sum<5>(s, scratch);
  if (threadIdx.x == 0) {
    s[4] = (double)n;
    for (int q = 0; q < 5; q++) a.sums[5 * out + q] = s[q];
  }
}

/* Stage om. Grid (nblk, C), STAGE_THREADS threads, static shared memory for the sub-block sums.
 * Warp w takes sub-blocks w, w + 8, ...: its lanes bring their grid values to unit level less the
 * DC (written back in place: the x4 stage reads them so), sum |v|^2 in double (each lane one
 * residue mod 4 of the grid index, so its term is +-|v|^2 on one axis), and reduce over the warp
 * (a fixed order: no atomics, the same sums on every run); the margins and the grid past the
 * stream's end are levelled by all threads. Thread 0 then forms the drift correlations between
 * complete sub-blocks 2^l apart in the CPU's order. */
__global__ void __launch_bounds__(STAGE_THREADS)
    qpsk_om_kernel(int64_t b0, unsigned nblk, unsigned L, unsigned nsub, unsigned Ls,
                   unsigned nlags, const qpsk_om_in *in, prx_cf32 *grid, qpsk_om_out *out) {
  __shared__ double xs[QPSK_SUB_MAX][2];
  __shared__ int64_t len[QPSK_SUB_MAX];
  const unsigned c = blockIdx.y, blk = blockIdx.x, lane = threadIdx.x & 31;
  const size_t o = (size_t)c * nblk + blk;
  const qpsk_om_in p = in[o];
  const int64_t b = b0 + blk, m0 = 4 * b * (int64_t)L, ng = 4 * (int64_t)L + 2 * QPSK_GM;
  const int64_t Ls4 = 4 * (int64_t)Ls;
  int64_t g_hi = m0 + 4 * (int64_t)L;
  if (g_hi > p.g_hi) g_hi = p.g_hi;
  prx_cf32 *z = grid + o * (size_t)ng;
  for (unsigned j = threadIdx.x >> 5; j <= nsub; j += STAGE_THREADS / 32) {
    int64_t a = m0 + Ls4 * j, e = j < nsub ? a + Ls4 : m0 + 4 * (int64_t)L;
    if (e > g_hi) e = g_hi;
    double x0 = 0, x1 = 0;
    for (int64_t m = a + lane; m < e; m += 32) {
      const int64_t k = QPSK_GM + (m - m0);
      prx_cf32 v = qpsk_om_level(z[k], p.D, p.gain);
      z[k] = v;
      double pw = (double)v.re * v.re + (double)v.im * v.im;
      switch ((int)(m & 3)) { /* exp(-j 2 pi m / 4) = 1, -j, -1, j */
      case 0: x0 += pw; break;
      case 1: x1 -= pw; break;
      case 2: x0 -= pw; break;
      default: x1 += pw; break;
      }
    }
    for (int sh = 16; sh > 0; sh >>= 1) {
      x0 += __shfl_down_sync(0xffffffffu, x0, sh);
      x1 += __shfl_down_sync(0xffffffffu, x1, sh);
    }
    if (lane == 0) {
      xs[j][0] = x0;
      xs[j][1] = x1;
      len[j] = e > a ? e - a : 0;
    }
  }
  /* the margins and what lies past the stream's end, levelled the same way */
  const int64_t done = g_hi > m0 ? g_hi - m0 : 0;
  for (int64_t k = threadIdx.x; k < ng; k += STAGE_THREADS)
    if (k < QPSK_GM || k >= QPSK_GM + done) z[k] = qpsk_om_level(z[k], p.D, p.gain);
  __syncthreads();
  if (threadIdx.x == 0) {
    qpsk_om_out r;
    memset(&r, 0, sizeof r);
    r.om_n = (double)done;
    for (unsigned j = 0; j <= nsub && len[j] > 0; j++) {
      r.osub[j][0] = xs[j][0];
      r.osub[j][1] = xs[j][1];
      int64_t a = m0 + Ls4 * j;
      r.osub_t[j] = (double)(a + a + len[j] - 1) / 8.0;
      r.nsub = j + 1;
      if (j < nsub && len[j] == Ls4) {
        for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
          const double *q = r.osub[j - (1u << l)];
          r.corr[l][0] += xs[j][0] * q[0] + xs[j][1] * q[1];
          r.corr[l][1] += xs[j][1] * q[0] - xs[j][0] * q[1];
        }
      }
    }
    out[o] = r;
  }
}

/* Stage x4. Grid (nblk, C), STAGE_THREADS threads, no shared memory: one thread per owned symbol,
 * the Farrow interpolation of 4 levelled grid values at its run's timing and the 4th power with
 * magnitude weighting (qpsk_stage_math.h), written at its place in the span's sequence. Reads the
 * grid once (L2-resident right after the om stage), writes 8 bytes per symbol. */
__global__ void __launch_bounds__(STAGE_THREADS)
    qpsk_x4_kernel(unsigned nblk, unsigned L, const qpsk_mf_block *blk, const int64_t *w0,
                   const prx_cf32 *grid, prx_cf32 *w, size_t w_stride) {
  const unsigned c = blockIdx.y;
  const size_t o = (size_t)c * nblk + blockIdx.x;
  const qpsk_mf_timing t = blk[o].t;
  const int64_t ng = 4 * (int64_t)L + 2 * QPSK_GM;
  const prx_cf32 *z = grid + o * (size_t)ng;
  prx_cf32 *dst = w + (size_t)c * w_stride + w0[o];
  for (int64_t k = t.k0 + threadIdx.x; k < t.k1; k += STAGE_THREADS) {
    int64_t g;
    float cf[4];
    qpsk_x4_tap(&t, L, QPSK_GM, k, &g, cf);
    dst[k - t.k0] = qpsk_x4_one(z + g - 1, cf);
  }
}

/* Stage out. Grid (nblk, C), STAGE_THREADS threads, no shared memory: one thread per symbol of
 * the block, coherent Gray bits or the differential step from the previous symbol's quadrant
 * (recomputed from sym, the block's first from quad0). Reads 8 bytes, writes 2 per symbol. */
__global__ void __launch_bounds__(STAGE_THREADS)
    qpsk_out_kernel(const qpsk_mf_block *blk, const qpsk_out_block *ob, const prx_cf32 *sym,
                    unsigned nblk, unsigned Lmax, uint8_t *bits, size_t bits_stride) {
  const unsigned c = blockIdx.y;
  const size_t out = (size_t)c * nblk + blockIdx.x;
  const int64_t n = blk[out].t.k1 - blk[out].t.k0;
  const qpsk_out_block o = ob[out];
  const prx_cf32 *y = sym + out * (size_t)Lmax;
  uint8_t *dst = bits + (size_t)c * bits_stride + 2 * o.out0;
  for (int64_t i = threadIdx.x; i < n; i += STAGE_THREADS) {
    unsigned b0, b1;
    unsigned q = qpsk_quad_of(y[i], o.rot, &b0, &b1);
    if (o.diff) {
      unsigned qp = i > 0 ? qpsk_quad_of(y[i - 1], o.rot, &b0, &b1) : o.quad0;
      uint8_t d0, d1;
      qpsk_diff_step_bits((q - qp) & 3u, &d0, &d1);
      dst[2 * i] = d0;
      dst[2 * i + 1] = d1;
    } else {
      dst[2 * i] = (uint8_t)b0;
      dst[2 * i + 1] = (uint8_t)b1;
    }
  }
}

/* the pre stage's shared memory: its window, or for the blocked filter the window and the 8
 * samples its reads run past it, in padded slots */
static size_t pre_smem(size_t win, bool blk) {
  return (blk ? (size_t)qpsk_win_slot((int64_t)win + 8, 1) + 1 : win) * sizeof(float2);
}

typedef void (*pre_kernel_fn)(pre_args);
typedef void (*mf_kernel_fn)(mf_args);

/* the kernel of each variant: cf16 rows, padded window, mixing */
static pre_kernel_fn pre_kernel_of(bool half, bool mix, bool blk) {
  if (blk) {
    if (half) return mix ? qpsk_pre_kernel<true, true, true> : qpsk_pre_kernel<true, false, true>;
    return mix ? qpsk_pre_kernel<false, true, true> : qpsk_pre_kernel<false, false, true>;
  }
  if (half) return mix ? qpsk_pre_kernel<true, true, false> : qpsk_pre_kernel<true, false, false>;
  return mix ? qpsk_pre_kernel<false, true, false> : qpsk_pre_kernel<false, false, false>;
}
static mf_kernel_fn mf_kernel_of(bool half, bool pad, bool mix) {
  if (half) {
    if (pad) return mix ? qpsk_mf_kernel<true, true, true> : qpsk_mf_kernel<true, true, false>;
    return mix ? qpsk_mf_kernel<true, false, true> : qpsk_mf_kernel<true, false, false>;
  }
  if (pad) return mix ? qpsk_mf_kernel<false, true, true> : qpsk_mf_kernel<false, true, false>;
  return mix ? qpsk_mf_kernel<false, false, true> : qpsk_mf_kernel<false, false, false>;
}

static prx_status stages_create(qpsk_stages *s, const qpsk_fir *pre, const qpsk_fir *mf, unsigned C,
                                unsigned nblk, unsigned L, unsigned Lmax, double sps, int cf16) {
  memset(s, 0, sizeof *s);
  s->C = C;
  s->nblk = nblk;
  s->L = L;
  s->Lmax = Lmax;
  s->sps = sps;
  s->cf16 = cf16;
  s->nsub = L / QPSK_SUB_SYMBOLS; /* as qpsk.c sets them */
  if (s->nsub == 0) return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: block too short");
  s->Ls = L / s->nsub;
  while (s->nlags < QPSK_LAGS && 2u << s->nlags <= s->nsub) s->nlags++;
  s->pre_Q = pre->Q;
  s->pre_ntaps = pre->ntaps;
  s->pre_c = pre->c;
  s->pre_rq = pre->rq;
  s->pre_r = pre->r;
  s->mf_Q = mf->Q;
  s->mf_ntaps = mf->ntaps;
  s->mf_c = mf->c;
  /* the longest windows: the grid's (4L + 2 GM) r samples and the matched filter's (L + 2) sps,
   * each plus its taps and the rounding of their ends */
  s->pre_win = (size_t)ceil((4.0 * L + 2 * QPSK_GM) * pre->r) + pre->ntaps + 4;
  s->mf_win = (size_t)ceil((L + 2.0) * sps) + mf->ntaps + 8;
  s->mf_pad = 1;
  const size_t pre_b = (size_t)pre->Q * 2 * pre->ntaps * sizeof(float);
  const size_t mf_b = (size_t)mf->Q * 2 * mf->ntaps * sizeof(float);
  CK(cudaMalloc(&s->d_pre, pre_b), "cudaMalloc (pre-filter taps)");
  CK(cudaMalloc(&s->d_mf, mf_b), "cudaMalloc (matched-filter taps)");
  CK(cudaMemcpy(s->d_pre, pre->bank, pre_b, cudaMemcpyHostToDevice), "cudaMemcpy (taps)");
  CK(cudaMemcpy(s->d_mf, mf->bank, mf_b, cudaMemcpyHostToDevice), "cudaMemcpy (taps)");
  /* a unit-step pre-filter grid (sps 4): the register-blocked filter, its tap row padded */
  s->pre_block = pre->rq >= 0 && pre->rq == (int64_t)pre->Q;
  if (s->pre_block) {
    s->pre_ntaps4 = (pre->ntaps + 3) / 4 * 4;
    float *t4 = (float *)calloc(2 * (size_t)s->pre_ntaps4, sizeof(float));
    if (!t4) return prx_fail(PRX_ERR_NOMEM, "CUDA demodulator stages: taps");
    memcpy(t4, pre->bank, 2 * (size_t)pre->ntaps * sizeof(float));
    cudaError_t e = cudaMalloc(&s->d_pre4, 2 * (size_t)s->pre_ntaps4 * sizeof(float));
    if (e == cudaSuccess)
      e = cudaMemcpy(s->d_pre4, t4, 2 * (size_t)s->pre_ntaps4 * sizeof(float),
                     cudaMemcpyHostToDevice);
    free(t4);
    CK(e, "cudaMalloc / cudaMemcpy (blocked taps)");
  }
  int dev, smem_max;
  CK(cudaGetDevice(&dev), "cudaGetDevice");
  CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
     "cudaDeviceGetAttribute");
  const size_t need_pre = pre_smem(s->pre_win, 1);
  const size_t need_mf = (s->mf_win + s->mf_win / 16 + 1) * sizeof(float2);
  if (need_pre + 2048 > (size_t)smem_max || need_mf + 2048 > (size_t)smem_max)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "CUDA demodulator stages: a block's window (%zu / %zu bytes) exceeds the "
                    "shared memory of one thread block (%d bytes): a shorter block",
                    need_pre, need_mf, smem_max);
  for (int v = 0; v < 8; v++)
    CK(cudaFuncSetAttribute((const void *)pre_kernel_of(v & 1, v & 2, v & 4),
                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need_pre),
       "cudaFuncSetAttribute");
  for (int v = 0; v < 8; v++)
    CK(cudaFuncSetAttribute((const void *)mf_kernel_of(v & 1, v & 2, v & 4),
                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)need_mf),
       "cudaFuncSetAttribute");
  return PRX_OK;
}

static void stages_destroy(qpsk_stages *s) {
  cudaFree(s->d_pre);
  cudaFree(s->d_pre4);
  cudaFree(s->d_mf);
  cudaFree(s->d_mix);
  s->d_pre = s->d_pre4 = s->d_mf = NULL;
  s->d_mix = NULL;
  cfo_release(s);
}

static prx_status stages_mix(qpsk_stages *s, const double *f) {
  if (!f) {
    cudaFree(s->d_mix);
    s->d_mix = NULL;
    return PRX_OK;
  }
  for (unsigned c = 0; c < s->C; c++)
    if (!isfinite(f[c]))
      return prx_fail(PRX_ERR_INVALID,
                      "CUDA demodulator stages: channel %u's mixing frequency "
                      "is not finite",
                      c);
  if (!s->d_mix) CK(cudaMalloc(&s->d_mix, sizeof(double) * s->C), "cudaMalloc (mixing)");
  CK(cudaMemcpy(s->d_mix, f, sizeof(double) * s->C, cudaMemcpyHostToDevice), "cudaMemcpy (mixing)");
  return PRX_OK;
}

static prx_status stages_pre(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                             int64_t n_total, prx_cf32 *grid, double *mom, unsigned *nonfinite,
                             cudaStream_t stream) {
  pre_args a = {rows,     row_stride, b0,           n_total,   s->nblk,      s->L,     s->sps,
                s->d_pre, s->pre_Q,   s->pre_ntaps, s->pre_c,  s->pre_rq,    s->pre_r, grid,
                mom,      nonfinite,  s->d_mix,     s->d_pre4, s->pre_ntaps4};
  dim3 g(s->nblk, s->C);
  const bool blk = s->pre_block && s->d_pre4;
  pre_kernel_of(s->cf16, s->d_mix != NULL,
                blk)<<<g, STAGE_THREADS, pre_smem(s->pre_win, blk), stream>>>(a);
  CK(cudaGetLastError(), "qpsk_pre_kernel launch");
  return PRX_OK;
}

static prx_status stages_mf(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                            int64_t n_total, const qpsk_mf_block *blk, prx_cf32 *sym, double *sums,
                            cudaStream_t stream) {
  mf_args a = {rows,    row_stride, b0,          n_total, s->nblk, s->L, s->Lmax, s->sps,
               s->d_mf, s->mf_Q,    s->mf_ntaps, s->mf_c, blk,     sym,  sums,    s->d_mix};
  dim3 g(s->nblk, s->C);
  const size_t smem = (s->mf_win + (s->mf_pad ? s->mf_win / 16 + 1 : 0)) * sizeof(float2);
  mf_kernel_of(s->cf16, s->mf_pad, s->d_mix != NULL)<<<g, STAGE_THREADS, smem, stream>>>(a);
  CK(cudaGetLastError(), "qpsk_mf_kernel launch");
  return PRX_OK;
}

static prx_status stages_out(const qpsk_stages *s, const qpsk_mf_block *blk,
                             const qpsk_out_block *ob, const prx_cf32 *sym, uint8_t *bits,
                             size_t bits_stride, cudaStream_t stream) {
  dim3 g(s->nblk, s->C);
  qpsk_out_kernel<<<g, STAGE_THREADS, 0, stream>>>(blk, ob, sym, s->nblk, s->Lmax, bits,
                                                   bits_stride);
  CK(cudaGetLastError(), "qpsk_out_kernel launch");
  return PRX_OK;
}

static prx_status stages_om(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, prx_cf32 *grid,
                            qpsk_om_out *out, cudaStream_t stream) {
  dim3 g(s->nblk, s->C);
  qpsk_om_kernel<<<g, STAGE_THREADS, 0, stream>>>(b0, s->nblk, s->L, s->nsub, s->Ls, s->nlags, in,
                                                  grid, out);
  CK(cudaGetLastError(), "qpsk_om_kernel launch");
  return PRX_OK;
}

static prx_status stages_x4(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                            const prx_cf32 *grid, prx_cf32 *w, size_t w_stride,
                            cudaStream_t stream) {
  dim3 g(s->nblk, s->C);
  qpsk_x4_kernel<<<g, STAGE_THREADS, 0, stream>>>(s->nblk, s->L, blk, w0, grid, w, w_stride);
  CK(cudaGetLastError(), "qpsk_x4_kernel launch");
  return PRX_OK;
}

extern "C" const prx_qpsk_stages_cuda prx_qpsk_stages_cuda_entries = {
    stages_create, stages_destroy, stages_pre, stages_mf,        stages_om,
    stages_x4,     stages_out,     stages_mix, stages_cfo_setup, stages_cfo};
