/* The CFO stage of the demodulator bank on the GPU (qpsk_stages_cuda.h, entries cfo_setup and
 * cfo): per channel, the estimation window of 4th-power values copied zero-padded into an
 * nfft-point row (C rows), one batched cuFFT over them, then one thread block per channel: the
 * peak over |nu| <= max_nu (a block reduction, the first of equal powers winning), the
 * refinement's start on the 1/8-bin grid, the run sums of the refinement (one thread per run
 * of QPSK_REFINE_D values) and Newton's steps on them (one thread: 128 run sums at the usual
 * span), the per-output arithmetic being qpsk_stage_math.h's, as the CPU's. */
extern "C" {
#include "qpsk_internal.h"
}
#include "qpsk_stages_cfo.cuh"

#include <cuda_runtime.h>
#include <cufft.h>

#define CFO_THREADS 256
#define PEAK_BATCH 8

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

/* Grid (nfft / (4 CFO_THREADS) rounded up, C): row c of buf is the window, then zeros. */
__global__ void __launch_bounds__(CFO_THREADS)
    qpsk_cfo_fill_kernel(const prx_cf32 *w, size_t w_stride, const qpsk_cfo_in *in, unsigned S,
                         unsigned nfft, float2 *buf) {
  const unsigned c = blockIdx.y;
  const qpsk_cfo_in p = in[c];
  const float2 *src = (const float2 *)(w + (size_t)c * w_stride + p.w0);
  float2 *dst = buf + (size_t)c * nfft;
  const unsigned n = p.n < S ? p.n : S;
  for (unsigned i = blockIdx.x * 4 * CFO_THREADS + threadIdx.x;
       i < nfft && i < (blockIdx.x + 1) * 4 * CFO_THREADS; i += CFO_THREADS)
    dst[i] = i < n ? src[i] : make_float2(0, 0);
}

/* One thread block per channel (see the file's comment); dynamic shared memory: the run sums
 * (S / QPSK_REFINE_D rounded up, cf32). */
__global__ void __launch_bounds__(CFO_THREADS)
    qpsk_cfo_peak_kernel(const prx_cf32 *w, size_t w_stride, const qpsk_cfo_in *in,
                         const float2 *spec_all, unsigned S, unsigned nfft, double max_nu,
                         qpsk_cfo_out *out) {
  extern __shared__ prx_cf32 runs[];
  __shared__ float tr[QPSK_REFINE_D], ti[QPSK_REFINE_D];
  __shared__ float best_p[CFO_THREADS / 32];
  __shared__ unsigned best_i[CFO_THREADS / 32];
  __shared__ double nu0_s;
  const unsigned c = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const qpsk_cfo_in p = in[c];
  const prx_cf32 *spec = (const prx_cf32 *)(spec_all + (size_t)c * nfft);
  const float2 *spec2 = spec_all + (size_t)c * nfft;
  const prx_cf32 *win = w + (size_t)c * w_stride + p.w0;
  const size_t n = p.n < S ? p.n : S;
  /* the peak: each thread's best of a strided share (PEAK_BATCH bins loaded before the first is
   * compared: the scan is bound by the loads' latency otherwise; the order of the comparisons
   * does not matter, "better" being a total order), then the warp's, then the block's */
  const size_t kmax = qpsk_peak_kmax(max_nu, nfft), ncand = 2 * kmax + 1;
  float bp = -1;
  unsigned bi = 0xffffffffu;
  for (size_t i0 = threadIdx.x; i0 < ncand; i0 += PEAK_BATCH * CFO_THREADS) {
    float2 v[PEAK_BATCH];
#pragma unroll
    for (int u = 0; u < PEAK_BATCH; u++) {
      const size_t i = i0 + (size_t)u * CFO_THREADS;
      v[u] = i < ncand ? spec2[qpsk_peak_bin(i, kmax, nfft)] : make_float2(0, 0);
    }
#pragma unroll
    for (int u = 0; u < PEAK_BATCH; u++) {
      const size_t i = i0 + (size_t)u * CFO_THREADS;
      const prx_cf32 x = {v[u].x, v[u].y};
      const float q = qpsk_bin_power(x);
      if (i < ncand && qpsk_peak_better(q, i, bp, bi)) {
        bp = q;
        bi = (unsigned)i;
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
    for (unsigned k = 1; k < CFO_THREADS / 32; k++)
      if (qpsk_peak_better(best_p[k], best_i[k], bp, bi)) {
        bp = best_p[k];
        bi = best_i[k];
      }
    nu0_s = qpsk_peak_start(spec, nfft, qpsk_peak_bin(bi, kmax, nfft), bp);
  }
  __syncthreads();
  const double nu0 = nu0_s;
  /* the refinement's run sums */
  for (unsigned l = threadIdx.x; l < QPSK_REFINE_D; l += CFO_THREADS)
    qpsk_refine_tab(nu0, l, &tr[l], &ti[l]);
  __syncthreads();
  const size_t m = (n + QPSK_REFINE_D - 1) / QPSK_REFINE_D;
  for (size_t g = threadIdx.x; g < m && n >= 2; g += CFO_THREADS)
    runs[g] = qpsk_refine_run(win, n, nu0, g, tr, ti);
  __syncthreads();
  if (threadIdx.x == 0) {
    const double nu = n < 2 ? nu0 : qpsk_refine_newton(runs, m, n, nu0, 1.0 / (double)nfft);
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

static size_t cfo_runs_bytes(unsigned S) {
  return ((size_t)S + QPSK_REFINE_D - 1) / QPSK_REFINE_D * sizeof(prx_cf32);
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
  const size_t runs_b = cfo_runs_bytes(S);
  if (runs_b + 4096 > (size_t)smem_max)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "CUDA demodulator stages: a span of %u symbols is too "
                    "long for the CFO stage's shared memory",
                    S);
  /* the device's limit, not this object's need (stages_open_smem) */
  CK(stages_open_smem((const void *)qpsk_cfo_peak_kernel, smem_max), "cudaFuncSetAttribute");
  CK(cudaMalloc(&s->d_cfo_buf, sizeof(float2) * (size_t)nfft * s->C), "cudaMalloc (CFO spectra)");
  cufftHandle plan;
  int len = (int)nfft;
  if (cufftPlanMany(&plan, 1, &len, NULL, 1, len, NULL, 1, len, CUFFT_C2C, (int)s->C) !=
      CUFFT_SUCCESS) {
    cudaFree(s->d_cfo_buf);
    s->d_cfo_buf = NULL;
    return cfo_fail("cufftPlanMany", "cannot plan the batched FFT");
  }
  s->cfo_plan = (int)plan;
  s->cfo_S = S;
  s->cfo_nfft = nfft;
  s->cfo_max_nu = max_nu;
  return PRX_OK;
}

prx_status stages_cfo(const qpsk_stages *s, const prx_cf32 *w, size_t w_stride,
                      const qpsk_cfo_in *in, qpsk_cfo_out *out, cudaStream_t stream) {
  if (!s->d_cfo_buf)
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: cfo before cfo_setup");
  const unsigned nfft = s->cfo_nfft;
  float2 *buf = (float2 *)s->d_cfo_buf;
  dim3 gf((nfft + 4 * CFO_THREADS - 1) / (4 * CFO_THREADS), s->C);
  qpsk_cfo_fill_kernel<<<gf, CFO_THREADS, 0, stream>>>(w, w_stride, in, s->cfo_S, nfft, buf);
  CK(cudaGetLastError(), "qpsk_cfo_fill_kernel launch");
  const cufftHandle plan = (cufftHandle)s->cfo_plan;
  CKF(cufftSetStream(plan, stream), "cufftSetStream");
  CKF(cufftExecC2C(plan, (cufftComplex *)buf, (cufftComplex *)buf, CUFFT_FORWARD), "cufftExecC2C");
  qpsk_cfo_peak_kernel<<<s->C, CFO_THREADS, cfo_runs_bytes(s->cfo_S), stream>>>(
      w, w_stride, in, buf, s->cfo_S, nfft, s->cfo_max_nu, out);
  CK(cudaGetLastError(), "qpsk_cfo_peak_kernel launch");
  return PRX_OK;
}
