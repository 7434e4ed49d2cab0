/* The CFO stage of the demodulator bank on the GPU (qpsk_stages_cuda.h, entries cfo_setup, cfo,
 * cfo_rows and cfo_fed): per channel, the estimation window of 4th-power values zero-padded in a
 * row of len points (C rows; len = nfft, or nfft / 2 with cfo_half: the even bins of the
 * nfft-point spectrum), copied there (cfo) or written there by x4 (x4_rows, then cfo_fed: only
 * the reach-back copied), one batched cuFFT over them, then one thread block per channel: the peak
 * over |nu| <= max_nu (a block reduction, the first of equal powers winning; with half the
 * transform, the two odd bins beside it summed directly over the window and the best of the three),
 * the refinement's start on the 1/8-bin grid, the run sums of the refinement (one thread per run of
 * QPSK_REFINE_D values, the window staged through shared memory) and Newton's steps on them (the
 * block: 128 run sums at the usual span, one a thread), the per-output arithmetic being
 * qpsk_stage_math.h's, as the CPU's (Newton's sums in another order, each term's rotation evaluated
 * directly). */
extern "C" {
#include "qpsk_internal.h"
}
#include "qpsk_stages_cfo.cuh"

#include <cuda_runtime.h>
#include <cufft.h>

#define CFO_THREADS 256
/* the peak kernel's threads per channel: 128, so that 1024 channels are one wave (64 registers a
 * thread: 1024 threads a SM); at 256 they were two, each as long (the block's serial steps, the
 * refinement's start and Newton's, take the same time at any width) */
#define PEAK_THREADS 128
/* the peak's 16-byte words (two bins each) a thread loads before it compares the first */
#define PEAK_BATCH 4
/* the odd bins' 16-byte words (two values each) a thread loads before it uses the first */
#define ODD_BATCH 4

static prx_status cfo_fail(const char *what, const char *why) {
  return prx_fail(PRX_ERR_DEVICE, "CUDA demodulator stages (CFO): %s: %s", what, why);
}
#define CK(call, what)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) return cfo_fail(what, cudaGetErrorString(e_));                          \
  } while (0)
#define CKF(call, what)                                                                            \
  do {                                                                                             \
    cufftResult r_ = (call);                                                                       \
    if (r_ != CUFFT_SUCCESS) return cfo_fail(what, "cuFFT error");                                 \
  } while (0)

/* The odd bins' twiddles from a table of a quarter period: sincospif reduces its argument x to
 * r = x - z / 2 (z = rint(2 x), |r| <= 1/4, exact), evaluates an odd polynomial for the sine and an
 * even one for the cosine at r, then swaps and negates them by z mod 4 (libdevice's
 * __nv_sincospif). Every argument here is 2 rho / nfft (qpsk_twiddle_arg_pow2), so r = 2 j / nfft
 * for an integer |j| <= nfft / 8, and tab[|j|] = sincospif(2 |j| / nfft) holds the polynomials'
 * values: twiddle_tab repeats the reduction and the quadrant's swaps and signs on them, so each
 * twiddle is sincospif's value bit for bit (zeros' signs included; checked on the H200 over every
 * argument for nfft up to 2^17) for a shared-memory load instead of the polynomials. */
__host__ __device__ static int twiddle_tab_len(unsigned nfft) { return (int)(nfft / 8 + 1); }
/* the table, made once by cfo_setup after the spectra's rows in the stage's buffer (one thread
 * block: the table's values are the same for every channel); the peak kernel copies it into its
 * shared memory */
__global__ void qpsk_cfo_tab_kernel(float2 *tab, unsigned nfft) {
  for (int j = threadIdx.x; j < twiddle_tab_len(nfft); j += blockDim.x) {
    float s, c;
    sincospif((float)j * (2.0f / (float)nfft), &s, &c);
    tab[j] = make_float2(s, c);
  }
}
__device__ static void twiddle_tab(const float2 *tab, float half_nfft, float x, float *sp,
                                   float *cp) {
  const float z = rintf(x + x);
  const int i = (int)z;
  const float r = fmaf(-z, 0.5f, x);
  const float2 e = tab[(int)(fabsf(r) * half_nfft)];
  float s = r < 0 ? -e.x : e.x, c = e.y;
  if (i & 1) {
    const float u = s;
    s = c;
    c = u;
  }
  if (i & 2) s = -s;
  if ((i + 1) & 2) c = fmaf(c, -1.0f, 0.0f);
  if (x == truncf(x)) s = x * 0.0f;
  *sp = s;
  *cp = c;
}

/* L2 eviction priorities for the window's two reads in the peak kernel (the odd bins', then the
 * runs': the runs need the start that the odd bins decide): the odd bins' loads mark a fraction of
 * the window's lines evict_last (KEEP_FRACTION, by line: ~34 MB of the 67 MB that 1024 channels of
 * 8192 values take, under the H200's 50 MB L2 with the spectra passing through), the runs' loads
 * (the lines' last use) evict_first, so that the runs find the marked lines in L2 and read the rest
 * from DRAM, instead of every line twice. Hints only: the values are the same (H200: the stage
 * 1-3 us faster a span at 1024 channels, less than the bytes promise; bench/GPU_NOTES.md). */
#define KEEP_FRACTION "0.5"
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ static uint64_t l2_keep() {
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, " KEEP_FRACTION ";" : "=l"(p));
  return p;
}
__device__ static uint64_t l2_drop() {
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ static float4 ld_hint(const float4 *a, uint64_t pol) {
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(a), "l"(pol));
  return v;
}
__device__ static float2 ld_hint(const float2 *a, uint64_t pol) {
  float2 v;
  asm("ld.global.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;"
      : "=f"(v.x), "=f"(v.y)
      : "l"(a), "l"(pol));
  return v;
}
#else /* (no cache policies before sm_80: plain loads) */
__device__ static uint64_t l2_keep() { return 0; }
__device__ static uint64_t l2_drop() { return 0; }
__device__ static float4 ld_hint(const float4 *a, uint64_t) { return *a; }
__device__ static float2 ld_hint(const float2 *a, uint64_t) { return *a; }
#endif

/* qpsk_odd_bins_pairs's sums (one thread's share: pairs j = threadIdx.x, + PEAK_THREADS, ...,
 * in batches of ODD_BATCH) for nfft a power of two (cfo_setup checks it): the window read as
 * 16-byte words, each two values (pair j: the values at 2j - h and 2j - h + 1, h = 1 where the
 * window starts in a word's second half; a pair reaching outside the window read value by value);
 * a batch's first twiddles at 2j from the table (twiddle_tab: qpsk_dft_twiddle's values bit for
 * bit, by qpsk_twiddle_arg_pow2's argument), the batch's next pairs' those turned by 2
 * PEAK_THREADS values each, the other value's of a pair turned by one value (qpsk_odd_pair_add):
 * two table twiddles a batch of 2 ODD_BATCH values instead of two a value. */
__device__ static prx_cf32 twiddle_at(const float2 *tab, float half_nfft, unsigned m, unsigned t,
                                      unsigned nfft) {
  float s, c;
  twiddle_tab(tab, half_nfft, qpsk_twiddle_arg_pow2(m, t, nfft), &s, &c);
  const prx_cf32 o = {c, -s};
  return o;
}
__device__ static void odd_bins_pairs_pow2(const prx_cf32 *w, unsigned n, unsigned mm, unsigned mp,
                                           unsigned nfft, const float2 *tab, float acc[4]) {
  const float half_nfft = 0.5f * (float)nfft;
  const unsigned h = (unsigned)(((uintptr_t)w / sizeof(float2)) & 1), np = (n + h + 1) / 2;
  const float4 *w4 = (const float4 *)(w - h);
  const float2 *w2 = (const float2 *)w;
  const uint64_t keep = l2_keep();
  prx_cf32 ra = twiddle_at(tab, half_nfft, mm, 1, nfft),
           rb = twiddle_at(tab, half_nfft, mp, 1, nfft);
  if (h) {
    ra.im = -ra.im;
    rb.im = -rb.im;
  }
  const prx_cf32 sa = twiddle_at(tab, half_nfft, mm, 2 * PEAK_THREADS, nfft),
                 sb = twiddle_at(tab, half_nfft, mp, 2 * PEAK_THREADS, nfft);
  for (unsigned j1 = threadIdx.x; j1 < np; j1 += ODD_BATCH * PEAK_THREADS) {
    /* ODD_BATCH words loaded before the first is used (the loop is bound by the loads' latency
     * otherwise), then added in the same order */
    float4 vb[ODD_BATCH];
#pragma unroll
    for (int u = 0; u < ODD_BATCH; u++) {
      const unsigned j = j1 + u * PEAK_THREADS;
      const int t = 2 * (int)j - (int)h;
      if (j >= np)
        vb[u] = make_float4(0, 0, 0, 0);
      else if (t >= 0 && (unsigned)t + 1 < n)
        vb[u] = ld_hint(w4 + j, keep);
      else {
        const float2 x0 = t >= 0 ? w2[t] : make_float2(0, 0),
                     x1 = (unsigned)(t + 1) < n ? w2[t + 1] : make_float2(0, 0);
        vb[u] = make_float4(x0.x, x0.y, x1.x, x1.y);
      }
    }
    prx_cf32 a = twiddle_at(tab, half_nfft, mm, 2 * j1, nfft),
             b = twiddle_at(tab, half_nfft, mp, 2 * j1, nfft);
#pragma unroll
    for (int u = 0; u < ODD_BATCH; u++) {
      const unsigned j = j1 + u * PEAK_THREADS;
      if (j >= np) break;
      if (u) {
        a = qpsk_cmul(a, sa);
        b = qpsk_cmul(b, sb);
      }
      const prx_cf32 v0 = {vb[u].x, vb[u].y}, v1 = {vb[u].z, vb[u].w};
      qpsk_odd_pair_add(acc, v0, v1, !h, a, b, ra, rb);
    }
  }
}

/* One thread block per channel: row c of buf (len points) made the window (n = min(in[c].n, S)
 * values from w0 = in[c].w0 of w's row c) zero-padded. FED (cfo_fed): the row holds the channel's
 * span values from its first block's w0 on (base = w0s[c nblk], x4_rows), the window being
 * take = base - w0 values before them (the reach-back, 0 <= take <= n) and the span's values
 * after: the take values go to the row's last take points and the points between them are zeroed,
 * so that the row is the padded window turned by take points (its spectrum's powers, all that the
 * peak reads, the same; the values' rounding in the transform aside). Otherwise the whole row is
 * written. */
template <bool FED>
__global__ void __launch_bounds__(CFO_THREADS)
    qpsk_cfo_fill_kernel(const prx_cf32 *w, size_t w_stride, const qpsk_cfo_in *in, unsigned S,
                         unsigned len, float2 *buf, const int64_t *w0s, unsigned nblk) {
  const unsigned c = blockIdx.x;
  const qpsk_cfo_in p = in[c];
  const float2 *src = (const float2 *)(w + (size_t)c * w_stride + p.w0);
  float2 *dst = buf + (size_t)c * len;
  const unsigned n = p.n < S ? p.n : S;
  if (FED) {
    /* (take clamped to [0, n]: a caller's window off its rows reads and writes nothing outside
     * them) */
    const int64_t tk = w0s[(size_t)c * nblk] - p.w0;
    const unsigned t = tk < 0 ? 0 : tk > (int64_t)n ? n : (unsigned)tk;
    for (unsigned i = n - t + threadIdx.x; i < len - t; i += CFO_THREADS)
      dst[i] = make_float2(0, 0);
    for (unsigned i = threadIdx.x; i < t; i += CFO_THREADS) dst[len - t + i] = src[i];
  } else {
    for (unsigned i = threadIdx.x; i < len; i += CFO_THREADS)
      dst[i] = i < n ? src[i] : make_float2(0, 0);
  }
}

/* The refinement's run sums (qpsk_refine_run's, term by term in the same order, then turned to
 * the window's centre by qpsk_refine_turn) with the window staged through shared memory: a thread's
 * run is QPSK_REFINE_D consecutive values, so a warp reading its 32 runs directly touches 32 lines
 * an access; here the block loads RUN_TILE values of each of its PEAK_THREADS runs at a time, each
 * run's tile one 128-byte line (rows padded to RUN_TILE + 1: no bank conflicts as each thread
 * reads its own row; tile: PEAK_THREADS rows). Every thread of the block calls it (it synchronises
 * the block). */
#define RUN_TILE 16
__host__ __device__ static size_t peak_runs_len(unsigned S) {
  return (((size_t)S + QPSK_REFINE_D - 1) / QPSK_REFINE_D + 1) & ~(size_t)1;
}
typedef float2 run_tile[RUN_TILE + 1];
__device__ static void refine_runs_staged(const prx_cf32 *win, size_t n, size_t m, double nu0,
                                          const float *tr, const float *ti, run_tile *tile,
                                          prx_cf32 *runs) {
  const float2 *w2 = (const float2 *)win;
  const float4 *w4 = (const float4 *)win;
  const bool wide = ((uintptr_t)win & 15) == 0;
  const uint64_t drop = l2_drop();
  for (size_t g0 = 0; g0 < m; g0 += PEAK_THREADS) {
    const size_t g = g0 + threadIdx.x, k0 = g * QPSK_REFINE_D;
    const size_t len = g >= m ? 0 : k0 + QPSK_REFINE_D <= n ? QPSK_REFINE_D : n - k0;
    float sumr = 0, sumi = 0;
    for (unsigned l0 = 0; l0 < QPSK_REFINE_D; l0 += RUN_TILE) {
      /* the thread's RUN_TILE values of the tile loaded, then stored (a generic pointer's loads
       * are not moved past shared stores): as RUN_TILE / 2 16-byte words (a word's two values
       * stored to one row's columns 2p, 2p + 1: each half warp's 16 stores in distinct bank
       * pairs) where the window starts on a word, else value by value */
      float2 vb[RUN_TILE];
      if (wide) {
#pragma unroll
        for (unsigned u = 0; u < RUN_TILE / 2; u++) {
          const unsigned i = threadIdx.x + u * PEAK_THREADS;
          const size_t k =
              (g0 + i / (RUN_TILE / 2)) * QPSK_REFINE_D + l0 + 2 * (i % (RUN_TILE / 2));
          const float4 x = k + 1 < n ? ld_hint(w4 + k / 2, drop)
                           : k < n   ? make_float4(w2[k].x, w2[k].y, 0, 0)
                                     : make_float4(0, 0, 0, 0);
          vb[2 * u] = make_float2(x.x, x.y);
          vb[2 * u + 1] = make_float2(x.z, x.w);
        }
#pragma unroll
        for (unsigned u = 0; u < RUN_TILE / 2; u++) {
          const unsigned i = threadIdx.x + u * PEAK_THREADS, p = i % (RUN_TILE / 2);
          tile[i / (RUN_TILE / 2)][2 * p] = vb[2 * u];
          tile[i / (RUN_TILE / 2)][2 * p + 1] = vb[2 * u + 1];
        }
      } else {
#pragma unroll
        for (unsigned u = 0; u < RUN_TILE; u++) {
          const unsigned i = threadIdx.x + u * PEAK_THREADS;
          const size_t k = (g0 + i / RUN_TILE) * QPSK_REFINE_D + l0 + i % RUN_TILE;
          vb[u] = k < n ? ld_hint(w2 + k, drop) : make_float2(0, 0);
        }
#pragma unroll
        for (unsigned u = 0; u < RUN_TILE; u++) {
          const unsigned i = threadIdx.x + u * PEAK_THREADS;
          tile[i / RUN_TILE][i % RUN_TILE] = vb[u];
        }
      }
      __syncthreads();
#pragma unroll
      for (unsigned l = 0; l < RUN_TILE; l++)
        if (l0 + l < len) {
          const float2 v = tile[threadIdx.x][l];
          sumr += v.x * tr[l0 + l] - v.y * ti[l0 + l];
          sumi += v.x * ti[l0 + l] + v.y * tr[l0 + l];
        }
      __syncthreads();
    }
    if (g < m) runs[g] = qpsk_refine_turn(sumr, sumi, nu0, n, k0);
  }
}

/* One thread block per channel (see the file's comment); dynamic shared memory (peak_smem): the
 * run sums (S / QPSK_REFINE_D rounded up, cf32), then the odd bins' twiddle table (with half the
 * transform: copied from tab, qpsk_cfo_tab_kernel's) and, after it, the run sums' tile in the same
 * bytes. spec_all: C rows of len points, the nfft-point spectrum (len == nfft) or its even bins
 * (len == nfft / 2). */
__global__ void __launch_bounds__(PEAK_THREADS, 8)
    qpsk_cfo_peak_kernel(const prx_cf32 *w, size_t w_stride, const qpsk_cfo_in *in,
                         const float2 *spec_all, const float2 *tab, unsigned S, unsigned nfft,
                         unsigned len, double max_nu, qpsk_cfo_out *out) {
  extern __shared__ float2 dyn[];
  prx_cf32 *runs = (prx_cf32 *)dyn;
  float2 *scratch = dyn + peak_runs_len(S);
  __shared__ float tr[QPSK_REFINE_D], ti[QPSK_REFINE_D];
  __shared__ float best_p[PEAK_THREADS / 32];
  __shared__ unsigned best_i[PEAK_THREADS / 32];
  __shared__ double nu0_s, odd_s[PEAK_THREADS / 32][4], newton_s[PEAK_THREADS / 32][6];
  __shared__ unsigned peak_b;
  __shared__ float peak_p;
  const unsigned c = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const qpsk_cfo_in p = in[c];
  const prx_cf32 *spec = (const prx_cf32 *)(spec_all + (size_t)c * len);
  const float2 *spec2 = spec_all + (size_t)c * len;
  const bool half = len < nfft;
  const prx_cf32 *win = w + (size_t)c * w_stride + p.w0;
  const size_t n = p.n < S ? p.n : S;
  if (half) /* the odd bins' twiddle table (read after the peak's barriers) */
    for (int j = threadIdx.x; j < twiddle_tab_len(nfft); j += PEAK_THREADS) scratch[j] = tab[j];
  /* the peak: the candidates' bins read as 16-byte words, two bins each (qpsk_peak_words; len is
   * even; word i is qpsk_peak_word's), each bin taken with its candidate index
   * (qpsk_peak_word_cands: qpsk_peak_cand's, those outside the range left out). Each
   * thread's best of a strided share of the words (PEAK_BATCH words loaded before the first is
   * compared: the scan is bound by the loads' latency otherwise; the order of the comparisons
   * does not matter, "better" being a total order), then the warp's, then the block's. */
  const size_t kmax = qpsk_peak_kmax(max_nu, len);
  size_t nlo_, jh_, nw_;
  qpsk_peak_words(kmax, len, &nlo_, &jh_, &nw_);
  const unsigned nlo = (unsigned)nlo_, jh = (unsigned)jh_, nw = (unsigned)nw_;
  const float4 *spec4 = (const float4 *)spec2;
  float bp = -1;
  unsigned bi = 0xffffffffu;
  for (unsigned i0 = threadIdx.x; i0 < nw; i0 += PEAK_BATCH * PEAK_THREADS) {
    float4 v[PEAK_BATCH];
#pragma unroll
    for (int u = 0; u < PEAK_BATCH; u++) {
      const unsigned i = i0 + u * PEAK_THREADS;
      v[u] = i < nw ? spec4[i < nlo ? i : jh + (i - nlo)] : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < PEAK_BATCH; u++) {
      const unsigned i = i0 + u * PEAK_THREADS;
      if (i >= nw) break;
      uint32_t ci[2];
      int ok[2];
      qpsk_peak_word_cands(i, nlo, jh, (uint32_t)kmax, len, ci, ok);
      const prx_cf32 x0 = {v[u].x, v[u].y}, x1 = {v[u].z, v[u].w};
      const float q0 = qpsk_bin_power(x0), q1 = qpsk_bin_power(x1);
      if (ok[0] && qpsk_peak_better(q0, ci[0], bp, bi)) {
        bp = q0;
        bi = ci[0];
      }
      if (ok[1] && qpsk_peak_better(q1, ci[1], bp, bi)) {
        bp = q1;
        bi = ci[1];
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float op = __shfl_down_sync(0xffffffffu, bp, o);
    const unsigned oi = __shfl_down_sync(0xffffffffu, bi, o);
    if (qpsk_peak_better(op, oi, bp, bi)) {
      bp = op;
      bi = oi;
    }
  }
  if (lane == 0) {
    best_p[warp] = bp;
    best_i[warp] = bi;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned k = 1; k < PEAK_THREADS / 32; k++)
      if (qpsk_peak_better(best_p[k], best_i[k], bp, bi)) {
        bp = best_p[k];
        bi = best_i[k];
      }
    if (half) {
      peak_b = (unsigned)qpsk_peak_bin(bi, kmax, len);
      peak_p = bp;
    } else {
      nu0_s = qpsk_peak_start(spec, nfft, qpsk_peak_bin(bi, kmax, nfft), bp);
    }
  }
  __syncthreads();
  if (half) {
    /* the odd bins 2b - 1 and 2b + 1 of the nfft-point spectrum: each thread's share of the
     * window in float, the warps' in double, then thread 0 */
    const int64_t e = 2 * (int64_t)peak_b, mm = (e + nfft - 1) % nfft, mp = (e + 1) % nfft;
    float acc[4] = {0, 0, 0, 0};
    odd_bins_pairs_pow2(win, (unsigned)n, (unsigned)mm, (unsigned)mp, nfft, scratch, acc);
    for (int q = 0; q < 4; q++) {
      double d = acc[q];
      for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
      if (lane == 0) odd_s[warp][q] = d;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double x[4] = {0, 0, 0, 0};
      for (unsigned k = 0; k < PEAK_THREADS / 32; k++)
        for (int q = 0; q < 4; q++) x[q] += odd_s[k][q];
      const prx_cf32 xm = {(float)x[0], (float)x[1]}, xp = {(float)x[2], (float)x[3]};
      nu0_s =
          qpsk_peak_start_half(spec, nfft, qpsk_peak_kmax(max_nu, nfft), peak_b, peak_p, xm, xp);
    }
    __syncthreads();
  }
  const double nu0 = nu0_s;
  /* the refinement's run sums */
  for (unsigned l = threadIdx.x; l < QPSK_REFINE_D; l += PEAK_THREADS)
    qpsk_refine_tab(nu0, l, &tr[l], &ti[l]);
  __syncthreads();
  const size_t m = (n + QPSK_REFINE_D - 1) / QPSK_REFINE_D;
  if (n >= 2) refine_runs_staged(win, n, m, nu0, tr, ti, (run_tile *)scratch, runs);
  __syncthreads();
  /* Newton's steps over the block: each thread a share of the run sums (qpsk_refine_part, one
   * run a thread at the usual span), the sums over each warp by a butterfly, then the warps'
   * totals added in the warps' order by every thread (every thread the same totals, so the same
   * steps and the same exits from the loop) */
  const double max_step = 1.0 / (double)nfft;
  double off = 0;
  for (int it = 0; it < 4 && n >= 2; it++) {
    double x[6] = {0, 0, 0, 0, 0, 0};
    qpsk_refine_part(runs, m, n, off, threadIdx.x, PEAK_THREADS, x);
    for (int q = 0; q < 6; q++) {
      for (int o = 16; o > 0; o >>= 1) x[q] += __shfl_xor_sync(0xffffffffu, x[q], o);
      if (lane == 0) newton_s[warp][q] = x[q];
    }
    __syncthreads();
    for (int q = 0; q < 6; q++) {
      x[q] = newton_s[0][q];
      for (unsigned k = 1; k < PEAK_THREADS / 32; k++) x[q] += newton_s[k][q];
    }
    __syncthreads(); /* (every thread has read the totals before the next step writes them) */
    double step;
    if (!qpsk_refine_step(x, max_step, &step)) break;
    off += step;
    if (qpsk_refine_converged(step, n)) break;
  }
  if (threadIdx.x == 0) {
    const double nu = n < 2 ? nu0 : qpsk_refine_result(nu0, off, max_step);
    qpsk_cfo_out o;
    o.f = qpsk_cfo_of(nu, p.e);
    o.nu = nu;
    o.nu0 = nu0;
    out[c] = o;
  }
}

void cfo_release(qpsk_stages *s) {
  if (s->d_cfo_buf) {
    cufftDestroy((cufftHandle)s->cfo_plan);
    cudaFree(s->d_cfo_buf);
  }
  s->d_cfo_buf = NULL;
  s->cfo_plan = 0;
}

/* the peak kernel's dynamic shared memory: the run sums (float2 units, rounded up to an even count
 * so that the scratch after them is 16-byte aligned), then the larger of the twiddle table (with
 * half the transform) and the run sums' tile */
static size_t peak_smem(unsigned S, unsigned nfft, int half) {
  const size_t tile = PEAK_THREADS * sizeof(run_tile),
               tab = (size_t)twiddle_tab_len(nfft) * sizeof(float2);
  return peak_runs_len(S) * sizeof(float2) + (half && tab > tile ? tab : tile);
}

prx_status stages_cfo_setup(qpsk_stages *s, unsigned S, unsigned nfft, double max_nu) {
  cfo_release(s);
  if (S < 1 || nfft < 2 * S || (nfft & (nfft - 1)) || !(max_nu > 0 && max_nu < 0.5))
    return prx_fail(PRX_ERR_INVALID,
                    "CUDA demodulator stages: CFO stage for spans of %u symbols, %u-point FFT, "
                    "peak within %g: the FFT must be a power of two >= 2 S, the range in (0, 1/2)",
                    S, nfft, max_nu);
  int dev, smem_max;
  CK(cudaGetDevice(&dev), "cudaGetDevice");
  CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
     "cudaDeviceGetAttribute");
  /* half the transform (cfo_half) where the odd bins' twiddle table fits the peak kernel's shared
   * memory beside the run sums (spans up to 2^16 symbols on the H200), else the whole transform,
   * whose peak needs no table (nfft >= 2 S: len >= S); either way len is even (the peak reads its
   * bins two at a time) */
  const int half = s->cfo_half && nfft >= 4 && peak_smem(S, nfft, 1) + 4096 <= (size_t)smem_max;
  const unsigned len = half ? nfft / 2 : nfft;
  if (peak_smem(S, nfft, half) + 4096 > (size_t)smem_max)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "CUDA demodulator stages: a span of %u symbols is too "
                    "long for the CFO stage's shared memory",
                    S);
  /* the device's limit, not this object's need (stages_open_smem) */
  CK(stages_open_smem((const void *)qpsk_cfo_peak_kernel, smem_max), "cudaFuncSetAttribute");
  /* the C rows, then (with half the transform) the odd bins' twiddle table, made here once */
  const size_t tab_len = half ? (size_t)twiddle_tab_len(nfft) : 0;
  CK(cudaMalloc(&s->d_cfo_buf, sizeof(float2) * ((size_t)len * s->C + tab_len)),
     "cudaMalloc (CFO spectra)");
  if (half) {
    /* on a stream of its own, waited for (the table before any stream's peak kernel; the
     * banks' streams do not wait for the default stream) */
    cudaStream_t ts;
    cudaError_t e = cudaStreamCreateWithFlags(&ts, cudaStreamNonBlocking);
    if (!e) {
      qpsk_cfo_tab_kernel<<<1, CFO_THREADS, 0, ts>>>((float2 *)s->d_cfo_buf + (size_t)len * s->C,
                                                     nfft);
      e = cudaGetLastError();
      if (!e) e = cudaStreamSynchronize(ts);
      cudaStreamDestroy(ts);
    }
    if (e) {
      cudaFree(s->d_cfo_buf);
      s->d_cfo_buf = NULL;
      return cfo_fail("the CFO twiddle table", cudaGetErrorString(e));
    }
  }
  cufftHandle plan;
  int ilen = (int)len;
  if (cufftPlanMany(&plan, 1, &ilen, NULL, 1, ilen, NULL, 1, ilen, CUFFT_C2C, (int)s->C) !=
      CUFFT_SUCCESS) {
    cudaFree(s->d_cfo_buf);
    s->d_cfo_buf = NULL;
    return cfo_fail("cufftPlanMany", "cannot plan the batched FFT");
  }
  s->cfo_plan = (int)plan;
  s->cfo_S = S;
  s->cfo_nfft = nfft;
  s->cfo_len = len;
  s->cfo_max_nu = max_nu;
  return PRX_OK;
}

/* the fill (FED: after x4_rows, w0s its block offsets), the transform in place, the peak */
template <bool FED>
static prx_status cfo_run(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                          const int64_t *w0s, const qpsk_cfo_in *in, qpsk_cfo_out *out,
                          cudaStream_t stream) {
  if (!s->d_cfo_buf)
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: cfo before cfo_setup");
  const unsigned nfft = s->cfo_nfft, len = s->cfo_len;
  float2 *buf = (float2 *)s->d_cfo_buf;
  qpsk_cfo_fill_kernel<FED>
      <<<s->C, CFO_THREADS, 0, stream>>>(w, w_stride, in, s->cfo_S, len, buf, w0s, s->nblk);
  CK(cudaGetLastError(), "qpsk_cfo_fill_kernel launch");
  const cufftHandle plan = (cufftHandle)s->cfo_plan;
  CKF(cufftSetStream(plan, stream), "cufftSetStream");
  CKF(cufftExecC2C(plan, (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_FORWARD), "cufftExecC2C");
  qpsk_cfo_peak_kernel<<<s->C, PEAK_THREADS, peak_smem(s->cfo_S, nfft, len < nfft), stream>>>(
      w, w_stride, in, buf, buf + (size_t)len * s->C, s->cfo_S, nfft, len, s->cfo_max_nu, out);
  CK(cudaGetLastError(), "qpsk_cfo_peak_kernel launch");
  return PRX_OK;
}

prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream) {
  return cfo_run<false>(s, w, w_stride, NULL, in, out, stream);
}

prx_status stages_cfo_fed(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                          const int64_t *w0, const qpsk_cfo_in *in, qpsk_cfo_out *out,
                          cudaStream_t stream) {
  if (!w0) return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: cfo_fed without offsets");
  return cfo_run<true>(s, w, w_stride, w0, in, out, stream);
}

prx_status stages_cfo_rows(const qpsk_stages *s, prx_cf32 **rows, size_t *row_stride) {
  if (!s->d_cfo_buf)
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: cfo_rows before cfo_setup");
  *rows = (prx_cf32 *)s->d_cfo_buf;
  *row_stride = s->cfo_len;
  return PRX_OK;
}
