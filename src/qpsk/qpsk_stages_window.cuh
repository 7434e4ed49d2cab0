/* The input window of a stage kernel's thread block (pre, pre_om, mf in qpsk_stages_cuda.cu):
 * staged once, then transformed sample by sample into the kernel's own window in shared memory.
 *
 * Where the whole window lies in the stream, one thread issues one bulk copy of the raw window's
 * 16-byte chunks (cp.async.bulk, completing on an mbarrier) into a raw buffer in shared memory,
 * the few bytes before and after them loaded by single threads: the window
 * arrives in one DRAM round trip instead of one per STAGE_BATCH loads of each thread, and the
 * loads take no issue slots. Each thread then takes its samples from the raw buffer in the same
 * order as from the rows, so every staged value and every sum is the same as with the loads.
 * Elsewhere (the stream's first and last blocks, mixing, no raw buffer) the samples are loaded
 * from the rows, STAGE_BATCH a thread in flight. */
#ifndef PRX_QPSK_STAGES_WINDOW_CUH
#define PRX_QPSK_STAGES_WINDOW_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#define STAGE_THREADS 256
#define STAGE_BATCH 4 /* input samples per thread in flight while a window is loaded */

/* Sample t of a row or window whose first sample is at src (cf32 or cf16 elements; global or
 * shared memory): the fast staging paths take a 32-bit t from a base computed once per block. */
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

/* The bytes of raw buffer a window of n samples needs: the window at the 16-byte phase it has in
 * the rows, plus 16 for the buffer's own alignment. */
static inline size_t stage_raw_bytes(size_t n, int half) { return n * (half ? 4 : 8) + 32; }

/* Channel c's raw window [lo, hi) of its row (the whole window within the stream) into raw
 * (16-byte aligned, raw_cap bytes) at the 16-byte phase it has in the row: its 16-byte chunks in
 * one bulk copy by thread 0, the samples before the first chunk and after the last one (a few
 * bytes) by single threads, nothing outside the window read. The window's first sample in shared
 * memory once everything has landed, or NULL where it is not copied so (a window of less than one
 * chunk, the buffer too small or absent: raw_cap 0; a device before sm_90). Every thread of the
 * block calls it with the same arguments (a barrier inside). */
template <bool HALF>
__device__ __forceinline__ const char *window_bulk(const char *row, int64_t lo, int64_t hi,
                                                   char *raw, uint32_t raw_cap) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ uint64_t bar; /* the copy's completion */
  const uint32_t es = (uint32_t)sample_bytes<HALF>();
  const uintptr_t a = (uintptr_t)(row + lo * es), e = (uintptr_t)(row + hi * es);
  const uintptr_t ai = (a + 15) & ~(uintptr_t)15, ei = e & ~(uintptr_t)15;
  if (raw_cap == 0 || ei <= ai || (e - a) + 16 > raw_cap || (a & (es - 1))) return NULL;
  char *dst = raw + (a & 15);
  const uint32_t bytes = (uint32_t)(ei - ai);
  const uint32_t sb = (uint32_t)__cvta_generic_to_shared(&bar),
                 sd = (uint32_t)__cvta_generic_to_shared(dst + (ai - a));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sb) : "memory");
    /* the initialised barrier visible to the copy engine (the async proxy) */
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sb), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];" ::"r"(sd),
                 "l"(ai), "r"(bytes), "r"(sb)
                 : "memory");
  }
  /* the head [a, ai) and the tail [ei, e): at most 15 bytes each, a sample a thread */
  const uint32_t nh = (uint32_t)(ai - a) / es, t0 = (uint32_t)(ei - a) / es,
                 nw = (uint32_t)(e - a) / es;
  const uint32_t t = threadIdx.x < nh ? threadIdx.x : t0 + threadIdx.x - 32;
  if (threadIdx.x < nh || (threadIdx.x >= 32 && t < nw)) {
    if (HALF)
      ((uint32_t *)dst)[t] = ((const uint32_t *)a)[t];
    else
      ((uint2 *)dst)[t] = ((const uint2 *)a)[t];
  }
  /* thread 0 waits for the copy (the other warps wait at the barrier, issuing nothing); the
   * barrier then publishes the copy it has seen land, and the head and the tail */
  if (threadIdx.x == 0) {
    uint32_t done = 0;
    do {
      asm volatile("{\n\t.reg .pred p;\n\t"
                   "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                   "selp.b32 %0, 1, 0, p;\n\t}"
                   : "=r"(done)
                   : "r"(sb)
                   : "memory");
    } while (!done);
  }
  __syncthreads();
  return dst;
#else /* no bulk copy before sm_90: the loads */
  (void)row, (void)lo, (void)hi, (void)raw, (void)raw_cap;
  return NULL;
#endif
}

/* Stages channel c's window [lo, hi) of the rows (n_total samples each; MIX: each sample within
 * the rows mixed by mix[c] from stream sample lo on, qpsk_mix_sample): each thread its samples t
 * = threadIdx.x + k STAGE_THREADS in the order of k. Where the whole window lies in the stream
 * and nothing is mixed, inner(v, t) takes sample t (int t; the raw window in one bulk copy where
 * it can be, window_bulk); elsewhere edge(v, t, s, in) takes it (int64_t t, stream index s, in: s
 * within the rows; outside them v is fill). */
template <bool HALF, bool MIX, typename Inner, typename Edge>
__device__ __forceinline__ void stage_window(const void *rows, size_t stride, unsigned c,
                                             int64_t n_total, int64_t lo, int64_t hi,
                                             const double *mix, prx_cf32 fill, char *raw,
                                             uint32_t raw_cap, Inner inner, Edge edge) {
  const char *row = (const char *)rows + (size_t)c * stride;
  if (!MIX && lo >= 0 && hi <= n_total) {
    /* no bounds per sample, 32-bit indices */
    const char *src = window_bulk<HALF>(row, lo, hi, raw, raw_cap);
    if (!src) src = row + (size_t)lo * sample_bytes<HALF>();
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

/* The raw buffer after a kernel's window of `slots` slots: its first 16-byte boundary. */
__device__ __forceinline__ char *stage_raw_after(float2 *win, size_t slots) {
  return (char *)(((uintptr_t)(win + slots) + 15) & ~(uintptr_t)15);
}

#endif
