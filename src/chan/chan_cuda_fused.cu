/* Launcher of the fused channelizer kernel (chan_cuda_fused_kernel.cuh; one instance file per
 * K, chan_cuda_fused_k*.cu). */
#include "chan_cuda_fused_kernel.cuh"
#include "chan_cuda_launch.h"

prx_fused_fn prx_fused_pick_6(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_7(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_8(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_9(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_10(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_11(int R, int fmt, int variant, prx_fused_info *b);
prx_fused_fn prx_fused_pick_12(int R, int fmt, int variant, prx_fused_info *b);

static prx_fused_fn pick(int K, int R, int fmt, int variant, prx_fused_info *b) {
  if (K < 64 || K > 4096 || (K & (K - 1)) || (R != 1 && R != 2)) return NULL;
  switch (prx_log2((unsigned)K)) {
  case 6: return prx_fused_pick_6(R, fmt, variant, b);
  case 7: return prx_fused_pick_7(R, fmt, variant, b);
  case 8: return prx_fused_pick_8(R, fmt, variant, b);
  case 9: return prx_fused_pick_9(R, fmt, variant, b);
  case 10: return prx_fused_pick_10(R, fmt, variant, b);
  case 11: return prx_fused_pick_11(R, fmt, variant, b);
  case 12: return prx_fused_pick_12(R, fmt, variant, b);
  default: return NULL;
  }
}

int prx_fused_supported(int K) { return K >= 64 && K <= 4096 && !(K & (K - 1)); }

/* the most any build of K takes (v4 or v5 vector stride) */
size_t prx_fused_smem_bytes(int K) {
  return (size_t)prx_fused_tile(K) * prx_fused_vsmax(K) * sizeof(float2);
}

cudaError_t prx_fused_prepare(int K, int R, int fmt, int variant) {
  prx_fused_info b;
  prx_fused_fn f = pick(K, R, fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  return cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, b.smem);
}

cudaError_t prx_fused_launch(const prx_kparams *p, int variant, cudaStream_t st, int *hist_done) {
  *hist_done = 0;
  if (p->n_out <= 0) return cudaSuccess;
  prx_fused_info b;
  prx_fused_fn f = pick(p->K, p->K / p->D, p->fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  const int J = prx_fused_tile(p->K);
  unsigned blocks = (unsigned)((p->n_out + J - 1) / J);
  if (b.histb && p->new_hist) {
    /* blocks past the tiles write the history update; the block scheduler starts them last,
     * in the grid's tail */
    const unsigned hb = (unsigned)((p->Hh + b.T - 1) / b.T);
    blocks += hb < 64 ? hb : 64;
    *hist_done = 1;
  }
  f<<<blocks, b.T, (size_t)b.smem, st>>>(*p);
  return cudaGetLastError();
}
