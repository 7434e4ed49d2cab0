/* The fused channelizer kernel (see chan_cuda_fused.cuh for the algorithm) and its launcher. */
#include "chan_cuda_fused.cuh"
#include "chan_cuda_launch.h"

template <int FMT, int R, int J>
__global__ void __launch_bounds__(256) prx_fused_kernel(const prx_kparams p) {
  extern __shared__ float2 V[];
  const int tid = threadIdx.x, T = blockDim.x;
  const int jj0 = blockIdx.x * J;
  if (prx_fused_safe<R, J>(p, jj0))
    prx_fused_filter<FMT, R, J, true>(p, V, jj0, tid, T);
  else
    prx_fused_filter<FMT, R, J, false>(p, V, jj0, tid, T);
  int log2k;
  const int ns = prx_fused_nstages(p.K, &log2k);
  for (int st = 0; st < ns; st++) {
    const int rho = (st == ns - 1 && (log2k & 1)) ? 2 : 4;
    const int L = p.K >> (2 * st);
    __syncthreads();
    prx_fused_stage<J>(p, V, L, rho, tid, T);
  }
  __syncthreads();
  prx_fused_output<J>(p, V, jj0, tid, T);
}

typedef void (*fused_fn)(const prx_kparams);

template <int R, int J> static fused_fn pick_fmt(int fmt) {
  switch (fmt) {
  case KF_CF32: return prx_fused_kernel<KF_CF32, R, J>;
  case KF_CI16: return prx_fused_kernel<KF_CI16, R, J>;
  case KF_CI8: return prx_fused_kernel<KF_CI8, R, J>;
  case KF_CU8: return prx_fused_kernel<KF_CU8, R, J>;
  default: return NULL;
  }
}

template <int R> static fused_fn pick_j(int J, int fmt) {
  switch (J) {
  case 4: return pick_fmt<R, 4>(fmt);
  case 8: return pick_fmt<R, 8>(fmt);
  case 16: return pick_fmt<R, 16>(fmt);
  default: return NULL;
  }
}

static fused_fn pick(int R, int J, int fmt) {
  return R == 1 ? pick_j<1>(J, fmt) : R == 2 ? pick_j<2>(J, fmt) : NULL;
}

size_t prx_fused_smem_bytes(int K, int J) { return (size_t)J * prx_vstride(K) * sizeof(float2); }

int prx_fused_block_threads(int D) { return D < 256 ? D : 256; }

cudaError_t prx_fused_prepare(int R, int J, int fmt, int K) {
  fused_fn f = pick(R, J, fmt);
  if (!f) return cudaErrorInvalidValue;
  return cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              (int)prx_fused_smem_bytes(K, J));
}

cudaError_t prx_fused_launch(const prx_kparams *p, int J, cudaStream_t st) {
  if (p->n_out <= 0) return cudaSuccess;
  fused_fn f = pick(p->K / p->D, J, p->fmt);
  if (!f) return cudaErrorInvalidValue;
  const unsigned blocks = (unsigned)((p->n_out + J - 1) / J);
  f<<<blocks, prx_fused_block_threads(p->D), prx_fused_smem_bytes(p->K, J), st>>>(*p);
  return cudaGetLastError();
}
