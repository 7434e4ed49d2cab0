/* Launcher of the fused channelizer kernel (chan_cuda_fused_kernel.cuh; one instance file per
 * K, chan_cuda_fused_k*.cu). */
#include "chan_cuda_fused_kernel.cuh"
#include "chan_cuda_launch.h"

#include <cudaTypedefs.h>

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

/* The default's build for outputs that the tensor memory accelerator cannot write (see
 * prx_fused_launch): runs 25-29's default, without TMA and PERSIST */
#define FALLBACK_VARIANT 16

cudaError_t prx_fused_prepare(int K, int R, int fmt, int variant, prx_fused_needs *needs) {
  prx_fused_info b;
  prx_fused_fn f = pick(K, R, fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  cudaError_t e =
      cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, b.smem);
  needs->rotated_taps = b.align;
  if (!e && variant == 0 && b.tma) { /* the launcher may run the fallback build too */
    prx_fused_needs fb;
    e = prx_fused_prepare(K, R, fmt, FALLBACK_VARIANT, &fb);
    needs->rotated_taps |= fb.rotated_taps;
  }
  int dev, sms, per_sm;
  if (!e) e = cudaGetDevice(&dev);
  if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (!e) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, b.T, (size_t)b.smem);
  if (!e) needs->resident = sms * (per_sm > 0 ? per_sm : 1);
  return e;
}

/* cuTensorMapEncodeTiled, through the runtime (the driver library is not linked); NULL where
 * the driver lacks it */
static PFN_cuTensorMapEncodeTiled_v12000 tma_encoder(void) {
  void *f = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return NULL;
  return (PFN_cuTensorMapEncodeTiled_v12000)f;
}

/* PRX_OPT_TMA (builds of K >= 256 only): describes p->out to the copy engine (p->tmap) and sets
 * p->tma where the output allows it: every channel in order (the staging tile's rows are the
 * channels), cf32, rows that start on 16 bytes (an aligned base and an even stride). Elsewhere
 * the tile's own output phase writes it. */
static void tma_describe(prx_kparams *p, int J) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = tma_encoder();
  /* the calls of a stream mostly write the same buffer: the last description is kept (per
   * thread, so that objects used from several threads need no lock) */
  static thread_local struct {
    void *out;
    int n_out, n_sel, J;
    size_t stride;
    CUtensorMap map;
  } last = {NULL, 0, 0, 0, 0, {}};
  p->tma = 0;
  if (!encode || !p->natural || p->out_f16 || (p->stride & 1) || ((uintptr_t)p->out & 15) ||
      p->stride >= ((size_t)1 << 36))
    return;
  if (last.out == p->out && last.n_out == p->n_out && last.n_sel == p->n_sel && last.J == J &&
      last.stride == p->stride) {
    p->tmap = last.map;
    p->tma = 1;
    return;
  }
  const cuuint64_t dim[2] = {(cuuint64_t)p->n_out, (cuuint64_t)p->n_sel};
  const cuuint64_t pitch[1] = {(cuuint64_t)p->stride * sizeof(float2)};
  const cuuint32_t box[2] = {(cuuint32_t)J, 256}, step[2] = {1, 1};
  p->tma =
      encode(&p->tmap, CU_TENSOR_MAP_DATA_TYPE_INT64, 2, p->out, dim, pitch, box, step,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  if (p->tma) {
    last.out = p->out, last.n_out = p->n_out, last.n_sel = p->n_sel, last.J = J;
    last.stride = p->stride, last.map = p->tmap;
  }
}

cudaError_t prx_fused_launch(const prx_kparams *p, int variant, cudaStream_t st, int *hist_done) {
  *hist_done = 0;
  if (p->n_out <= 0) return cudaSuccess;
  prx_fused_info b;
  prx_fused_fn f = pick(p->K, p->K / p->D, p->fmt, variant, &b);
  if (!f) return cudaErrorInvalidValue;
  const int J = prx_fused_tile(p->K);
  prx_kparams q = *p;
  if (b.tma) tma_describe(&q, J);
  if (!q.tma && variant == 0 && b.tma) { /* the default's build for this output */
    f = pick(p->K, p->K / p->D, p->fmt, FALLBACK_VARIANT, &b);
    if (!f) return cudaErrorInvalidValue;
  }
  unsigned blocks = (unsigned)((p->n_out + J - 1) / J);
  if (b.persist) { /* as many tile blocks as the device holds at once (p->tile_blocks) */
    if (p->tile_blocks > 0 && blocks > (unsigned)p->tile_blocks) blocks = (unsigned)p->tile_blocks;
    q.tile_blocks = (int)blocks;
  }
  if (b.histb && p->new_hist) {
    /* the history update in this launch: by the tile blocks of PERSIST builds, else by blocks
     * past the tiles, which the block scheduler starts last, in the grid's tail */
    const unsigned hb = (unsigned)((p->Hh + b.T - 1) / b.T);
    if (!b.persist) blocks += hb < 64 ? hb : 64;
    *hist_done = 1;
  }
  f<<<blocks, b.T, (size_t)b.smem, st>>>(q);
  return cudaGetLastError();
}
