/* The input window of a stage kernel's thread block (qpsk_stages_cuda.cu: qpsk_pre_kernel, which
 * runs pre and pre_om, and qpsk_mf_kernel): one staging loop for both kernels, each thread its
 * samples t = threadIdx.x + k STAGE_THREADS in the order of k, STAGE_BATCH of them loaded before
 * the first is used (latency), each handed to the kernel's own transform into its window in shared
 * memory (pre: the input sums and the non-finite test; mf: the DC, the level and the NCO). Where
 * the whole window lies in the stream and nothing is mixed (every block but the stream's first and
 * last) the loop takes no bounds per sample and 32-bit indices.
 *
 * (A bulk copy of the raw window into shared memory, cp.async.bulk on an mbarrier, is no faster
 * on the H200: bench/GPU_NOTES.md, "Stage kernels, eighth session".)
 *
 * Included after qpsk_stage_math.h (prx_cf32, qpsk_mix_turns, qpsk_mix_sample), which
 * qpsk_stages_cuda.cu's C headers bring in first. */
#ifndef PRX_QPSK_STAGES_WINDOW_CUH
#define PRX_QPSK_STAGES_WINDOW_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#define STAGE_THREADS 256
#define STAGE_BATCH 4 /* input samples per thread in flight while a window is loaded */

/* Sample t of a row whose first sample is at src (cf32 or cf16 elements): the fast staging path
 * takes a 32-bit t from a base computed once per block. */
template <bool HALF, typename I>
__device__ __forceinline__ prx_cf32 load_rel(const char *src, I t) {
  prx_cf32 v;
  if (HALF) {
    float2 f = __half22float2(((const __half2 *)src)[t]);
    v.re = f.x;
    v.im = f.y;
  } else {
    float2 f = ((const float2 *)src)[t];
    v.re = f.x;
    v.im = f.y;
  }
  return v;
}

/* the element size of a row's samples */
template <bool HALF> __device__ __forceinline__ size_t sample_bytes() {
  return HALF ? sizeof(__half2) : sizeof(float2);
}

/* Stages channel c's window [lo, hi) of the rows (n_total samples each; MIX: each sample within
 * the rows mixed by mix[c] from stream sample lo on, qpsk_mix_sample): each thread its samples t
 * = threadIdx.x + k STAGE_THREADS in the order of k. Where the whole window lies in the stream
 * and nothing is mixed, inner(v, t) takes sample t (int t); elsewhere edge(v, t, s, in) takes it
 * (int64_t t, stream index s, in: s within the rows; outside them v is fill). */
template <bool HALF, bool MIX, typename Inner, typename Edge>
__device__ __forceinline__ void
stage_window(const void *rows, size_t stride, unsigned c, int64_t n_total, int64_t lo, int64_t hi,
             const double *mix, prx_cf32 fill, Inner inner, Edge edge) {
  const char *row = (const char *)rows + (size_t)c * stride;
  if (!MIX && lo >= 0 && hi <= n_total) {
    /* no bounds per sample, 32-bit indices */
    const char *src = row + (size_t)lo * sample_bytes<HALF>();
    const int nw = (int)(hi - lo);
    int t = threadIdx.x;
    for (; t + (STAGE_BATCH - 1) * STAGE_THREADS < nw; t += STAGE_BATCH * STAGE_THREADS) {
      prx_cf32 v[STAGE_BATCH];
#pragma unroll
      for (int u = 0; u < STAGE_BATCH; u++) v[u] = load_rel<HALF>(src, t + u * STAGE_THREADS);
#pragma unroll
      for (int u = 0; u < STAGE_BATCH; u++) inner(v[u], t + u * STAGE_THREADS);
    }
    for (; t < nw; t += STAGE_THREADS) inner(load_rel<HALF>(src, t), t);
    return;
  }
  const double fm = MIX ? mix[c] : 0, tz = MIX ? qpsk_mix_turns(fm, lo) : 0;
  /* STAGE_BATCH samples per thread loaded before the first is used (latency) */
  for (int64_t t0 = threadIdx.x; t0 < hi - lo; t0 += STAGE_BATCH * STAGE_THREADS) {
    prx_cf32 v[STAGE_BATCH];
#pragma unroll
    for (int u = 0; u < STAGE_BATCH; u++) {
      const int64_t t = t0 + u * STAGE_THREADS, s = lo + t;
      v[u] = t < hi - lo && s >= 0 && s < n_total ? load_rel<HALF>(row, s) : fill;
    }
#pragma unroll
    for (int u = 0; u < STAGE_BATCH; u++) {
      const int64_t t = t0 + u * STAGE_THREADS, s = lo + t;
      if (t >= hi - lo) break;
      const int in = s >= 0 && s < n_total;
      if (MIX && in) v[u] = qpsk_mix_sample(v[u], tz, fm, t);
      edge(v[u], t, s, in);
    }
  }
}

#endif
