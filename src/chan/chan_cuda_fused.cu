/* Launcher of the fused channelizer kernel (chan_cuda_fused_kernel.cuh; one instance file per
 * K, chan_cuda_fused_k*.cu): asks prx_fused_select for each launch's design and runs the
 * kernel instance built for it. */
#include "chan_cuda_fused_kernel.cuh"
#include "chan_cuda_launch.h"

#include <cudaTypedefs.h>

prx_fused_fn prx_fused_pick_6(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_7(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_8(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_9(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_10(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_11(int R, int fmt, int tile_out);
prx_fused_fn prx_fused_pick_12(int R, int fmt, int tile_out);

/* the kernel instance of design pol for K channels, K/D = R, input format fmt */
static prx_fused_fn pick(int K, int R, int fmt, const prx_fused_policy &pol) {
  if (!prx_fused_supported(K)) return NULL;
  switch (prx_fused_log2(K)) {
  case 6: return prx_fused_pick_6(R, fmt, pol.tile_copy_out);
  case 7: return prx_fused_pick_7(R, fmt, pol.tile_copy_out);
  case 8: return prx_fused_pick_8(R, fmt, pol.tile_copy_out);
  case 9: return prx_fused_pick_9(R, fmt, pol.tile_copy_out);
  case 10: return prx_fused_pick_10(R, fmt, pol.tile_copy_out);
  case 11: return prx_fused_pick_11(R, fmt, pol.tile_copy_out);
  case 12: return prx_fused_pick_12(R, fmt, pol.tile_copy_out);
  default: return NULL;
  }
}

int prx_fused_supported(int K) { return K >= 64 && K <= 4096 && !(K & (K - 1)); }

size_t prx_fused_smem_bytes(int K) {
  return (size_t)prx_fused_tile(K) * prx_fused_vs(K) * sizeof(float2);
}

cudaError_t prx_fused_prepare(int K, int D, int in_fmt, int out_fmt, int layouts,
                              prx_fused_needs *needs) {
  /* the designs this object's launches may select: with the rows on 16 bytes, and without */
  const prx_fused_policy pol[2] = {
      prx_fused_select(K, D, in_fmt, out_fmt, layouts),
      prx_fused_select(K, D, in_fmt, out_fmt, layouts & ~PRX_OUT_ROWS_16B)};
  prx_fused_fn f[2];
  needs->rotated_taps = 0;
  for (int i = 0; i < 2; i++) {
    if (!(f[i] = pick(K, K / D, in_fmt, pol[i]))) return cudaErrorInvalidValue;
    cudaError_t e =
        cudaFuncSetAttribute((const void *)f[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)prx_fused_smem_bytes(K));
    if (e) return e;
    needs->rotated_taps |= pol[i].aligned_window;
  }
  /* blocks resident at once, for the persistent design (the first, if any is) */
  int dev, sms, per_sm;
  cudaError_t e = cudaGetDevice(&dev);
  if (!e) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (!e)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f[0], pol[0].threads,
                                                      prx_fused_smem_bytes(K));
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

/* tile_copy_out: describes p->out to the copy engine (p->tmap) and sets p->tma, where the
 * driver has the encoder and takes the output (the selector has checked the layout: every
 * channel in order, cf32, rows on 16 bytes); 0 where not (the caller then selects again,
 * without the TMA). */
static int tma_describe(prx_kparams *p, int J) {
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
  if (!encode || p->stride >= ((size_t)1 << 36)) return 0;
  if (last.out == p->out && last.n_out == p->n_out && last.n_sel == p->n_sel && last.J == J &&
      last.stride == p->stride) {
    p->tmap = last.map;
    p->tma = 1;
    return 1;
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
  return p->tma;
}

cudaError_t prx_fused_launch(const prx_kparams *p, int layouts, cudaStream_t st, int *hist_done) {
  *hist_done = 0;
  if (p->n_out <= 0) return cudaSuccess;
  const size_t esz = p->out_f16 ? 4 : 8;
  int layout = layouts & (p->natural ? PRX_OUT_ALL_IN_ORDER : 0);
  if (!((uintptr_t)p->out & 15) && !(p->stride * esz & 15)) layout |= layouts & PRX_OUT_ROWS_16B;
  layout |= layouts & PRX_OUT_TMA;
  const int out_fmt = p->out_f16 ? PRX_CF16 : PRX_CF32;
  prx_fused_policy pol = prx_fused_select(p->K, p->D, p->fmt, out_fmt, layout);
  prx_kparams q = *p;
  if (pol.tile_copy_out && !tma_describe(&q, pol.tile))
    pol = prx_fused_select(p->K, p->D, p->fmt, out_fmt, layout & ~PRX_OUT_ROWS_16B);
  prx_fused_fn f = pick(p->K, p->K / p->D, p->fmt, pol);
  if (!f) return cudaErrorInvalidValue;
  const int J = pol.tile;
  unsigned blocks = (unsigned)((p->n_out + J - 1) / J);
  if (pol.persistent) { /* as many tile blocks as the device holds at once (p->tile_blocks) */
    if (p->tile_blocks > 0 && blocks > (unsigned)p->tile_blocks) blocks = (unsigned)p->tile_blocks;
    q.tile_blocks = (int)blocks;
  }
  if (pol.hist_in_kernel && p->new_hist) {
    /* the history update in this launch: by the tile blocks of persistent designs, else by
     * blocks past the tiles, which the block scheduler starts last, in the grid's tail */
    const unsigned hb = (unsigned)((p->Hh + pol.threads - 1) / pol.threads);
    if (!pol.persistent) blocks += hb < 64 ? hb : 64;
    *hist_done = 1;
  }
  f<<<blocks, pol.threads, prx_fused_smem_bytes(p->K), st>>>(q);
  return cudaGetLastError();
}
