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

size_t prx_fused_smem_bytes(int K) {
  return (size_t)prx_fused_tile(K) * prx_fused_vsmax(K) * sizeof(float2);
}

/* the FFT buffer, and behind it the filter's ring where the build has one */
static size_t smem_bytes(int K, const prx_fused_info *b) {
  return prx_fused_smem_bytes(K) + (size_t)b->ring * b->T * sizeof(float2) +
         (size_t)b->st * sizeof(float);
}

/* blocks of a persistent build resident at once on the device, kept per build (the answer
 * does not change; a race between threads writes the same value) */
static unsigned persistent_grid(prx_fused_fn f, int T, size_t smem) {
  static struct {
    prx_fused_fn f;
    int dev;
    unsigned grid;
  } cache[16];
  int dev = 0;
  cudaGetDevice(&dev);
  for (int i = 0; i < 16; i++)
    if (cache[i].f == f && cache[i].dev == dev) return cache[i].grid;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, T, smem) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 0;
  const unsigned grid = (unsigned)(per_sm > 0 ? per_sm : 1) * (unsigned)sms;
  for (int i = 0; i < 16; i++)
    if (!cache[i].f) {
      cache[i].f = f, cache[i].dev = dev, cache[i].grid = grid;
      break;
    }
  return grid;
}

cudaError_t prx_fused_prepare(int K, int R, int fmt, int variant) {
  prx_fused_info b;
  prx_fused_fn f = pick(K, R, fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  const size_t smem = smem_bytes(K, &b);
  cudaError_t e =
      cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e == cudaSuccess && b.carve) {
    /* percent of the largest carve-out (228 KB), 1 KB reserved per block */
    const int pct = (int)((100 * b.carve * (smem + 1024) + 228 * 1024 - 1) / (228 * 1024));
    e = cudaFuncSetAttribute((const void *)f, cudaFuncAttributePreferredSharedMemoryCarveout,
                             pct > 100 ? 100 : pct);
  }
  return e;
}

cudaError_t prx_fused_launch(const prx_kparams *p, int variant, cudaStream_t st, int *hist_done) {
  *hist_done = 0;
  if (p->n_out <= 0) return cudaSuccess;
  prx_fused_info b;
  prx_fused_fn f = pick(p->K, p->K / p->D, p->fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  const int J = prx_fused_tile(p->K);
  const size_t smem = smem_bytes(p->K, &b);
  unsigned blocks = (unsigned)((p->n_out + J - 1) / J);
  if (b.persist) {
    const unsigned g = persistent_grid(f, b.T, smem);
    if (!g) return cudaGetLastError() != cudaSuccess ? cudaErrorUnknown : cudaErrorInvalidValue;
    if (blocks > g) blocks = g;
  } else if (b.histb && p->new_hist) {
    /* blocks past the tiles write the history update; the block scheduler starts them last,
     * in the grid's tail */
    const unsigned hb = (unsigned)((p->Hh + b.T - 1) / b.T);
    blocks += hb < 64 ? hb : 64;
    *hist_done = 1;
  }
  f<<<blocks, b.T, smem, st>>>(*p);
  return cudaGetLastError();
}
