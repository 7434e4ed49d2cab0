/* The demodulator bank's serial passes on the GPU (qpsk_serial.h, qpsk_serial_phase.h): the
 * level, timing, NCO and phase passes of one CFO span, one warp per channel (its lanes share out
 * the blocks' own work: the level pass's input sums and outputs, the O&M sums, the V&V phases, the
 * powers, the corrections; the timing and NCO chains run alike on every lane, the level and phase
 * passes' on lane 0), with the arithmetic of qpsk_serial.h (compiled
 * without fused multiply-adds, CMakeLists.txt, so that it rounds as the host does).
 * The launches are small: their point is that the span's stage kernels follow one another on the
 * stream without a host round trip. */
extern "C" {
#include "qpsk_internal.h"
}
#include "../core/cuda_launch.cuh"
#include "../core/cuda_module.h"
#include "qpsk_serial.h"
#include "qpsk_serial_phase.h"

#include <cuda_runtime.h>

namespace {

/* a launch's result (prx_launch's) */
prx_status launched(const char *what, cudaError_t e) {
  if (e == cudaSuccess) return PRX_OK;
  return prx_fail(PRX_ERR_DEVICE, "%s launch: %s", what, cudaGetErrorString(e));
}

/* one warp per channel: the kernels' thread blocks hold kWarps channels, each warp its team's
 * scratch in shared memory */
const unsigned kWarps = 2;

/* the timing kernel's team scratch, its static shared memory (sh_om, sh_en, sh_med) */
const size_t kTeamShared = kWarps * (4 * QPSK_SR_MAXB + 1) * sizeof(double);
/* its staged records' dynamic shared memory at most: a thread block's 48 KB without an opt-in,
 * less the team scratch (kWarps x (888 + 72) B a block: spans of up to 23 blocks) */
const size_t kStageMax = 48 * 1024 - kTeamShared;

/* a warp's copy of n bytes (a multiple of 8) in consecutive 8-byte words */
__device__ void warp_copy(void *dst, const void *src, size_t n, unsigned lane) {
  double *d = (double *)dst;
  const double *s = (const double *)src;
  for (size_t i = lane; i < n / 8; i += 32) d[i] = s[i];
}

/* The level pass, one warp per channel: the warp copies the channel's input sums (4 per block)
 * into shared memory in consecutive words, lane 0 runs the pass on them and on the channel's state
 * in place, every lane writes its blocks' O&M inputs (qpsk_sr_level_in). */
__global__ void level_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t s, int64_t g_hi,
                             const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp,
                             qpsk_om_in *omi) {
  __shared__ double sh_mom[kWarps][4 * QPSK_SR_MAXB];
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t c = blockIdx.x * (size_t)kWarps + w;
  prx_pdl_enter();    /* pre's input sums, the state */
  if (c >= C) return; /* (a whole warp) */
  const qpsk_sr_team tm = {lane, 32, NULL, NULL, NULL};
  const double *mc = mom + 4 * c * nb;
  if (nb <= QPSK_SR_MAXB) {
    warp_copy(sh_mom[w], mc, 4 * nb * sizeof(double), lane);
    __syncwarp();
    mc = sh_mom[w];
  }
  qpsk_sr_level_in(&cf, c, nb, s, g_hi, mc, st, sp, omi, &tm);
}

/* The timing pass, one warp per channel. Staged (kStaged): the channel's O&M records and timing
 * records are copied into shared memory by the warp in whole lines (dynamic shared memory: each
 * warp nb of each), so that the pass's steps (which read a block's sub-block sums up to five
 * times, one lane a block, and the records again in every serial chain) read them there rather
 * than with a record's stride from global memory; the timing records go back the same way. The
 * median's scratch is shared memory too (no local array). Unstaged: for spans too long for it. */
template <bool kStaged>
__global__ void timing_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t b0, int flushing,
                              int64_t n_total, const qpsk_om_out *om, qpsk_serial_state *st,
                              qpsk_serial_span *sp, qpsk_serial_blk *tb, qpsk_mf_block *mb,
                              int64_t *w0, int64_t *ops, qpsk_cfo_in *cfi) {
  __shared__ double sh_om[kWarps][2 * QPSK_SR_MAXB], sh_en[kWarps][QPSK_SR_MAXB],
      sh_med[kWarps][QPSK_SR_MAXB + 1];
  static_assert(sizeof sh_om + sizeof sh_en + sizeof sh_med == kTeamShared, "team scratch");
  extern __shared__ double sh_rec[];
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t c = blockIdx.x * (size_t)kWarps + w;
  prx_pdl_enter();    /* the O&M records, the state */
  if (c >= C) return; /* (a whole warp) */
  const qpsk_sr_team tm = {lane, 32, sh_om[w], sh_en[w], sh_med[w]};
  const qpsk_om_out *omc = om + c * nb;
  qpsk_serial_blk *tbc = tb + c * nb;
  if (kStaged) {
    char *base = (char *)sh_rec + w * nb * (sizeof(qpsk_om_out) + sizeof(qpsk_serial_blk));
    qpsk_om_out *oms = (qpsk_om_out *)base;
    qpsk_serial_blk *tbs = (qpsk_serial_blk *)(base + nb * sizeof(qpsk_om_out));
    warp_copy(oms, omc, nb * sizeof(qpsk_om_out), lane);
    warp_copy(tbs, tbc, nb * sizeof(qpsk_serial_blk), lane);
    __syncwarp();
    qpsk_sr_timing_in(&cf, c, nb, b0, flushing, n_total, oms, st, sp, tbs, mb, w0, ops, cfi, &tm);
    __syncwarp();
    warp_copy(tbc, tbs, nb * sizeof(qpsk_serial_blk), lane);
  } else {
    qpsk_sr_timing_in(&cf, c, nb, b0, flushing, n_total, omc, st, sp, tbc, mb, w0, ops, cfi, &tm);
  }
}

__global__ void nco_kernel(qpsk_serial_cfg cf, size_t C, size_t nb, int64_t s, int64_t b0,
                           const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
                           qpsk_mf_block *mb) {
  const unsigned w = threadIdx.x / 32;
  const size_t c = blockIdx.x * (size_t)kWarps + w;
  prx_pdl_enter(); /* the CFO estimates, the state */
  if (c >= C) return;
  const qpsk_sr_team tm = {threadIdx.x % 32, 32, NULL, NULL, NULL};
  qpsk_sr_nco_ch(&cf, c, nb, s, b0, co, st, sp, mb, &tm);
}

/* one warp per channel, each warp its blocks' scratch in shared memory (qpsk_serial_phase.h) */
__global__ void phase_kernel(qpsk_ph_args a, size_t C) {
  __shared__ qpsk_ph_scratch scr[kWarps][QPSK_SR_MAXB];
  __shared__ qpsk_ph_tail tl[kWarps];
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t c = blockIdx.x * (size_t)kWarps + w;
  prx_pdl_enter();    /* the symbols and their sums, the passes' records */
  if (c >= C) return; /* (a whole warp) */
  for (unsigned step = 0; step < QPSK_PH_STEPS; step++) {
    qpsk_ph_span_step(&a, c, step, lane, 32, scr[w], &tl[w]);
    __syncwarp();
  }
  if (lane == 0) qpsk_ph_span_end(&a, c, &tl[w]);
}

/* the thread blocks of a launch over C channels, kWarps a block */
unsigned grid_of(size_t C) { return (unsigned)((C + kWarps - 1) / kWarps); }

prx_status level(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t g_hi,
                 const double *mom, qpsk_serial_state *st, qpsk_serial_span *sp, qpsk_om_in *omi,
                 void *stream) {
  return launched("qpsk serial level",
                  prx_launch(level_kernel, grid_of(C), 32 * kWarps, 0, (cudaStream_t)stream,
                             prx_pdl_on(), *cf, C, nb, s, g_hi, mom, st, sp, omi));
}

prx_status timing(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t b0, int flushing,
                  int64_t n_total, const qpsk_om_out *om, qpsk_serial_state *st,
                  qpsk_serial_span *sp, qpsk_serial_blk *tb, qpsk_mf_block *mb, int64_t *w0,
                  int64_t *ops, qpsk_cfo_in *cfi, void *stream) {
  const size_t shm = kWarps * nb * (sizeof(qpsk_om_out) + sizeof(qpsk_serial_blk));
  const bool staged = shm <= kStageMax;
  return launched("qpsk serial timing",
                  prx_launch(staged ? timing_kernel<true> : timing_kernel<false>, grid_of(C),
                             32 * kWarps, staged ? shm : 0, (cudaStream_t)stream, prx_pdl_on(), *cf,
                             C, nb, b0, flushing, n_total, om, st, sp, tb, mb, w0, ops, cfi));
}

prx_status nco(const qpsk_serial_cfg *cf, size_t C, size_t nb, int64_t s, int64_t b0,
               const qpsk_cfo_out *co, qpsk_serial_state *st, qpsk_serial_span *sp,
               qpsk_mf_block *mb, void *stream) {
  return launched("qpsk serial nco",
                  prx_launch(nco_kernel, grid_of(C), 32 * kWarps, 0, (cudaStream_t)stream,
                             prx_pdl_on(), *cf, C, nb, s, b0, co, st, sp, mb));
}

prx_status phase(unsigned L, size_t Lmax, size_t C, size_t nb, int diff, int first,
                 const double *sums, const double *mom, const unsigned *bad,
                 const qpsk_serial_blk *tb, const qpsk_serial_span *sp, const prx_cf32 *sym,
                 qpsk_phase_state *st, qpsk_phase_out *po, qpsk_out_block *ob, int64_t *off,
                 void *stream) {
  if (nb > QPSK_SR_MAXB)
    return prx_fail(PRX_ERR_INVALID, "qpsk serial phase: %zu blocks a span (at most %d)", nb,
                    QPSK_SR_MAXB);
  qpsk_ph_args a = {L, diff, first, Lmax, nb, sums, mom, bad, tb, sp, sym, st, po, ob, off};
  return launched("qpsk serial phase", prx_launch(phase_kernel, grid_of(C), 32 * kWarps, 0,
                                                  (cudaStream_t)stream, prx_pdl_on(), a, C));
}

} // namespace

extern "C" const prx_qpsk_serial_cuda prx_qpsk_serial_cuda_entries = {level, timing, nco, phase};
