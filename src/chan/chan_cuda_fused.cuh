/* The fused channelizer tile (power-of-two K, 64 <= K <= 4096, at most PRX_FUSED_P taps per
 * branch): one thread block computes J consecutive outputs of every channel in one pass over
 * global memory: raw input in, selected channels out.
 *
 *  1. filter: thread tid owns base branch r (r < D, stepping by T) and the R = K/D branches
 *     r + cD. Branch r + cD at output jj reads u[jj - c - pR] with u[q] = x(base + qD - r), so
 *     all R branches and all J outputs share one window of J + (P-1)R + (R-1) samples: each is
 *     loaded once (converted from the raw format on load, coalesced across r) and used in up to
 *     P*R multiply-adds held in registers. Results go to the shared buffer V[jl][r].
 *  2. FFT: an in-place radix-4 (radix-2 last when log2 K is odd) decimation-in-frequency FFT
 *     of the J vectors in shared memory, one barrier per stage. Each thread keeps the
 *     twiddles of its butterfly across the J vectors. Results stay in digit-reversed order;
 *     the host gives each selected channel's position (loc).
 *  3. output: each selected channel's J consecutive outputs are written as one contiguous run
 *     (channel-major), with the (-1)^(kj) sign of D = K/2 and the cf32/cf16 conversion.
 *
 * Shared-memory layout: element e of vector jl is at jl * VS + e + (e >> 4): one pad slot
 * every 16 elements keeps the strided stages free of bank conflicts (see pos_pad), and
 * VS = K + K/16 + 1 makes consecutive vectors start in different banks for the output phase. */
#ifndef PRX_CHAN_CUDA_FUSED_CUH
#define PRX_CHAN_CUDA_FUSED_CUH

#include "chan_cuda_kernels.cuh"

#define PRX_FUSED_P 16 /* taps per branch of the fused kernel (shorter prototypes are padded) */

/* full unrolling in the device pass (the host pass, for emulation, needs none) */
#ifdef __CUDA_ARCH__
#define PRX_UNROLL _Pragma("unroll")
#else
#define PRX_UNROLL
#endif

__host__ __device__ __forceinline__ int prx_pad(int e) { return e + (e >> 4); }
__host__ __device__ __forceinline__ int prx_vstride(int K) { return K + K / 16 + 1; }

__host__ __device__ __forceinline__ float2 cadd(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__host__ __device__ __forceinline__ float2 csub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__host__ __device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x));
}
/* i * a */
__host__ __device__ __forceinline__ float2 cmuli(float2 a) { return make_float2(-a.y, a.x); }

template <int FMT, int R, int J, bool SAFE>
__host__ __device__ __forceinline__ float2 prx_fused_load(const prx_kparams &p, int n) {
  if (SAFE) return prx_conv<FMT>(p.in, n);
  if (n < 0) return PRX_LDG(p.hist + (p.Hh + n));
  if (n >= p.n_in) return make_float2(0.0f, 0.0f);
  return prx_conv<FMT>(p.in, n);
}

/* Phase 1 for thread tid of T: base branches r = tid, tid + T, ... < D. */
template <int FMT, int R, int J, bool SAFE>
__host__ __device__ __forceinline__ void prx_fused_filter(const prx_kparams &p, float2 *V, int jj0,
                                                          int tid, int T) {
  constexpr int P = PRX_FUSED_P;
  constexpr int NW = J + (P - 1) * R + (R - 1); /* window length */
  const int K = p.K, D = p.D, VS = prx_vstride(K);
  const int q0 = jj0 - (P - 1) * R - (R - 1); /* output index of the window's oldest sample */
  for (int r = tid; r < D; r += T) {
    float h[R][P];
    PRX_UNROLL
    for (int c = 0; c < R; c++) {
      PRX_UNROLL
      for (int q = 0; q < P; q++) h[c][q] = PRX_LDG(p.taps + q * K + c * D + r);
    }
    float2 acc[R][J];
    PRX_UNROLL
    for (int c = 0; c < R; c++) {
      PRX_UNROLL
      for (int jl = 0; jl < J; jl++) acc[c][jl] = make_float2(0.0f, 0.0f);
    }
    const int n0 = p.base + q0 * D - r;
    PRX_UNROLL
    for (int t = 0; t < NW; t++) {
      const float2 u = prx_fused_load<FMT, R, J, SAFE>(p, n0 + t * D);
      PRX_UNROLL
      for (int c = 0; c < R; c++) {
        PRX_UNROLL
        for (int jl = 0; jl < J; jl++) {
          /* window slot t holds u[q0 + t] = the sample that tap q of branch r + cD uses for
           * output jl when t = jl - c - qR + (P-1)R + (R-1) */
          const int num = jl - c + (P - 1) * R + (R - 1) - t;
          if (num >= 0 && num % R == 0 && num / R < P) {
            const float hh = h[c][num / R];
            acc[c][jl].x = fmaf(hh, u.x, acc[c][jl].x);
            acc[c][jl].y = fmaf(hh, u.y, acc[c][jl].y);
          }
        }
      }
    }
    PRX_UNROLL
    for (int c = 0; c < R; c++) {
      PRX_UNROLL
      for (int jl = 0; jl < J; jl++) V[jl * VS + prx_pad(r + c * D)] = acc[c][jl];
    }
  }
}

/* Phase 2, one stage: span L (sub-transforms of L points), radix rho (4 or 2). */
template <int J>
__host__ __device__ __forceinline__ void prx_fused_stage(const prx_kparams &p, float2 *V, int L,
                                                         int rho, int tid, int T) {
  const int K = p.K, VS = prx_vstride(K);
  const int NB = K / rho;   /* butterflies per vector */
  const int NBg = L / rho;  /* butterflies per group (sub-transform) */
  const int G = K / L;      /* groups */
  const int twstep = K / L; /* W_L = tw[K / L] */
  /* thread -> butterfly b and the vectors it does; b's twiddles are reused across them */
  int b_first, b_step, jl_first, jl_step;
  if (NB >= T) {
    b_first = tid, b_step = T, jl_first = 0, jl_step = 1;
  } else {
    b_first = tid % NB, b_step = NB, jl_first = tid / NB, jl_step = T / NB;
  }
  for (int b = b_first; b < NB; b += b_step) {
    /* butterfly index -> (group g, index i in the group); consecutive threads take
     * consecutive i while groups are wide, consecutive g once they are narrow, so that 16
     * consecutive threads hit 16 different banks (with the padding) */
    int g, i;
    if (NBg >= 16) {
      i = b % NBg, g = b / NBg;
    } else {
      g = b % G, i = b / G;
    }
    const int e0 = g * L + i;
    if (rho == 4) {
      const int o0 = prx_pad(e0), o1 = prx_pad(e0 + NBg), o2 = prx_pad(e0 + 2 * NBg),
                o3 = prx_pad(e0 + 3 * NBg);
      const bool twid = i != 0;
      float2 w1 = make_float2(1.0f, 0.0f), w2 = w1, w3 = w1;
      if (twid) {
        w1 = PRX_LDG(p.tw + i * twstep);
        w2 = PRX_LDG(p.tw + 2 * i * twstep);
        w3 = PRX_LDG(p.tw + 3 * i * twstep);
      }
      for (int jl = jl_first; jl < J; jl += jl_step) {
        float2 *v = V + jl * VS;
        const float2 a0 = v[o0], a1 = v[o1], a2 = v[o2], a3 = v[o3];
        const float2 t0 = cadd(a0, a2), t1 = csub(a0, a2), t2 = cadd(a1, a3),
                     t3 = cmuli(csub(a1, a3));
        float2 b0 = cadd(t0, t2), b1 = cadd(t1, t3), b2 = csub(t0, t2), b3 = csub(t1, t3);
        if (twid) {
          b1 = cmul(b1, w1);
          b2 = cmul(b2, w2);
          b3 = cmul(b3, w3);
        }
        v[o0] = b0;
        v[o1] = b1;
        v[o2] = b2;
        v[o3] = b3;
      }
    } else {
      const int o0 = prx_pad(e0), o1 = prx_pad(e0 + NBg);
      const bool twid = i != 0;
      float2 w1 = make_float2(1.0f, 0.0f);
      if (twid) w1 = PRX_LDG(p.tw + i * twstep);
      for (int jl = jl_first; jl < J; jl += jl_step) {
        float2 *v = V + jl * VS;
        const float2 a0 = v[o0], a1 = v[o1];
        float2 b1 = csub(a0, a1);
        if (twid) b1 = cmul(b1, w1);
        v[o0] = cadd(a0, a1);
        v[o1] = b1;
      }
    }
  }
}

/* Phase 3 for thread tid of T: item w = s * J + jl. */
template <int J>
__host__ __device__ __forceinline__ void prx_fused_output(const prx_kparams &p, const float2 *V,
                                                          int jj0, int tid, int T) {
  const int VS = prx_vstride(p.K);
  const int nj = p.n_out - jj0 < J ? p.n_out - jj0 : J;
  const int items = p.n_sel * J;
  for (int w = tid; w < items; w += T) {
    const int s = w / J, jl = w % J;
    if (jl >= nj) continue;
    const int lk = PRX_LDG(p.loc + s);
    float2 y = V[jl * VS + (lk & 0x7fffffff)];
    if (p.D != p.K && lk < 0 && ((p.e_par + jj0 + jl) & 1)) y = make_float2(-y.x, -y.y);
    prx_store(p, (size_t)s * p.stride + jj0 + jl, y);
  }
}

/* whether the whole input window of the tile at jj0 is inside [0, n_in) */
template <int R, int J>
__host__ __device__ __forceinline__ bool prx_fused_safe(const prx_kparams &p, int jj0) {
  const int q0 = jj0 - (PRX_FUSED_P - 1) * R - (R - 1);
  const long long lo = (long long)p.base + (long long)q0 * p.D - (p.D - 1);
  const long long hi = (long long)p.base + (long long)(jj0 + J - 1) * p.D;
  return lo >= 0 && hi < p.n_in;
}

/* FFT stage list of size K: radix-4 stages, a radix-2 stage last when log2 K is odd */
__host__ __device__ __forceinline__ int prx_fused_nstages(int K, int *log2k) {
  int l = 0;
  while ((1 << l) < K) l++;
  *log2k = l;
  return l / 2 + (l & 1);
}

#endif
