/* The sliding pre-filter of stage pre (qpsk_stages_cuda.cu's qpsk_pre_kernel, pre and pre_om):
 * each thread a run of consecutive grid outputs from one run of samples, the taps kernel
 * parameters (constant operands of the multiply-adds, no loads), the samples loaded once, two at
 * a time, from a window laid out by qpsk_slide_slot. Two grids: the unit step (sps 4, 8 outputs a
 * thread, 20 taps of which the RRC holds 17) and the step 4/3 (sps 16/3, three periods of three
 * outputs a thread, 24 taps a row of which it holds 22), each output over the taps the RRC holds
 * only; other tap counts take the four- and three-output filters (qpsk_dot4, qpsk_dot3). The
 * outputs leave through shared memory, whole sectors from consecutive lanes (qpsk_pre_kernel's
 * pre_stage_unit, pre_stage_tri). The windows are staged by stage_pre_rows (stage_window's loop
 * with more loads in flight), pre_om's at the unit step wholly in the stream and not mixed by
 * stage_pre_unit (its slots from one base, its batches within the block's own samples without the
 * own test), pre_om's at the step 4/3 on cf32 rows by stage_pre_async (cp.async into the slots).
 *
 * Included after qpsk_stage_math.h (qpsk_pre_slide_taps), which qpsk_stages_cuda.cu's C headers
 * bring in first. */
#ifndef PRX_QPSK_STAGES_PRE_CUH
#define PRX_QPSK_STAGES_PRE_CUH

#include "qpsk_stages_cuda.h"
#include "qpsk_stages_window.cuh"

/* the window's layouts (qpsk_pre_kernel's pre_layout) */
#define PRE_PAD_SLIDE 3 /* qpsk_slide_slot (besides 0 and QPSK_PAD4) */
/* the sliding filter of a launch (pre_args.slide) */
#define PRE_SLIDE_NONE 0
#define PRE_SLIDE_UNIT 1 /* unit-step grid: outputs 8 a thread, window slots 2 per 8 samples */
#define PRE_SLIDE_TRI 2  /* step-4/3 grid: outputs 9 a thread, window slots 2 per 4 samples */
#define PRE_SLIDE_OUT1 8
#define PRE_SLIDE_OUT3 9
/* a thread's run starts 8 samples after its neighbour's: slots 10 apart */
#define PRE_SLIDE_SH1 3
#define PRE_SLIDE_SH3 2 /* 12 samples: slots 18 apart */
/* virtual samples zeroed after the window: the last thread with an output reads its whole run
 * (up to 28 samples at the unit step, 34 at the step 4/3 past its first) */
#define PRE_SLIDE_TAIL 32

/* whether the sliding filter's taps (rows 1 at the unit step, 3 at the step 4/3) are zero outside
 * the ones it takes (QPSK_SLIDE_L0_4 ..: the RRC's own, qpsk_pre_slide_taps); else the launch
 * takes the other filters */
static inline bool pre_slide_taps_fit(const float *taps, int rows) {
  return rows == 1 ? qpsk_pre_slide_zero_outside(taps, 1, QPSK_SLIDE_NT4, QPSK_SLIDE_L0_4,
                                                 QPSK_SLIDE_L1_4)
                   : qpsk_pre_slide_zero_outside(taps, 3, QPSK_SLIDE_NT3, QPSK_SLIDE_L0_3,
                                                 QPSK_SLIDE_L1_3);
}

/* 8 outputs of the unit-step grid from the run at w (taps: the row, re/im lanes) */
__device__ __forceinline__ void pre_slide_unit(const float *taps, const float2 *w, prx_cf32 o[8]) {
  qpsk_pre_slide_taps(taps, QPSK_SLIDE_NT4, QPSK_SLIDE_L0_4, QPSK_SLIDE_L1_4, 1, 1, PRE_SLIDE_OUT1,
                      w, PRE_SLIDE_SH1, o);
}
/* one output of the unit-step grid from virtual sample v of the window win (the few outputs past
 * a block's whole steps, qpsk_slide_tail): qpsk_pre_slide_taps' sum for one output */
__device__ __forceinline__ prx_cf32 pre_slide_one(const float *taps, const float2 *win, int v) {
  float re = 0, im = 0;
#pragma unroll
  for (int l = QPSK_SLIDE_L0_4; l < QPSK_SLIDE_L1_4; l++) {
    const float2 x = win[qpsk_slide_slot(v + l, PRE_SLIDE_SH1)];
    re += taps[2 * l] * x.x;
    im += taps[2 * l + 1] * x.y;
  }
  return prx_cf32{re, im};
}
/* 9 outputs (three periods) of the step-4/3 grid from the run at w (taps: rows 0, 1, 2) */
__device__ __forceinline__ void pre_slide_tri(const float *taps, const float2 *w,
                                              prx_cf32 o[PRE_SLIDE_OUT3]) {
  qpsk_pre_slide_taps(taps, QPSK_SLIDE_NT3, QPSK_SLIDE_L0_3, QPSK_SLIDE_L1_3, 3, 4, PRE_SLIDE_OUT3,
                      w, PRE_SLIDE_SH3, o);
}

/* pre's window staging: stage_window's, with BATCH samples a thread in flight on its fast path (a
 * window wholly in the stream, nothing mixed; the last batch's loads masked), each thread's
 * samples handed to inner in the same order (t ascending: the input sums bit for bit). The
 * step-4/3 and general kernels take PRE_BATCH_TRI (at L 512 a thread's share of a ~2080-sample
 * window but one sample in one batch: the loads' latency waited for twice a block, not three
 * times); the unit step's take STAGE_BATCH (stage_window itself): under pre_om's 48 registers
 * more samples in flight spill and are slower there (H200, bench/GPU_NOTES.md, s12/gpo4). */
#define PRE_BATCH_TRI 8
template <int BATCH, bool HALF, bool MIX, typename Inner, typename Edge>
__device__ __forceinline__ void
stage_pre_rows(const void *rows, size_t stride, unsigned c, int64_t n_total, int64_t lo, int64_t hi,
               const double *mix, prx_cf32 fill, Inner inner, Edge edge) {
  if (BATCH > STAGE_BATCH && !MIX && lo >= 0 && hi <= n_total) {
    const char *src = (const char *)rows + (size_t)c * stride + (size_t)lo * sample_bytes<HALF>();
    const int nw = (int)(hi - lo);
    for (int t = threadIdx.x; t < nw; t += BATCH * STAGE_THREADS) {
      prx_cf32 v[BATCH];
#pragma unroll
      for (int u = 0; u < BATCH; u++)
        if (t + u * STAGE_THREADS < nw) v[u] = load_rel<HALF>(src, t + u * STAGE_THREADS);
#pragma unroll
      for (int u = 0; u < BATCH; u++)
        if (t + u * STAGE_THREADS < nw) inner(v[u], t + u * STAGE_THREADS);
    }
    return;
  }
  stage_window<HALF, MIX>(rows, stride, c, n_total, lo, hi, mix, fill, inner, edge);
}

/* A staged sample's input sums (re, im: its value, 0 where not finite) into m where it is the
 * block's own: sum re, sum im, sum |x|^2, the products exact in double, the sum of the two rounded
 * once as a fused multiply-add, as qpsk_pre_sum_add's expression compiles. */
__device__ __forceinline__ void pre_sample_sums(float re, float im, bool own, double m[3]) {
  const double dr = own ? (double)re : 0.0, di = own ? (double)im : 0.0;
  m[0] = __dadd_rn(m[0], dr);
  m[1] = __dadd_rn(m[1], di);
  m[2] = __dadd_rn(m[2], __fma_rn(dr, dr, __dmul_rn(di, di)));
}

/* One sample v of the unit-step sliding window (wholly in the stream) into its slot w: 0 where
 * not finite; where it is the block's own (OWN), its input sums into m (pre_sample_sums) and a
 * non-finite one into nb. */
__device__ __forceinline__ void pre_unit_sample(prx_cf32 v, bool own, float2 *w, double m[3],
                                                unsigned &nb) {
  const bool fin = isfinite(v.re) && isfinite(v.im);
  const float re = fin ? v.re : 0.f, im = fin ? v.im : 0.f;
  *w = make_float2(re, im);
  pre_sample_sums(re, im, own, m);
  nb += !fin && own;
}

/* The unit-step sliding window's staging where it lies wholly in the stream and nothing is mixed
 * (every block but the stream's first and last): stage_window's order (each thread its samples t
 * = threadIdx.x + k STAGE_THREADS, BATCH loaded before the first is used; the input sums in the
 * order of t, so bit for bit), with each thread's slots PRE_UNIT_SLOT_STEP apart (STAGE_THREADS
 * samples, a multiple of 2^PRE_SLIDE_SH1: qpsk_slide_slot(v + STAGE_THREADS) = qpsk_slide_slot(v)
 * + PRE_UNIT_SLOT_STEP) from one base, and a batch wholly within the block's own samples [o0, o1)
 * summed without the own test. The window's nw samples from src (e: the layout's shift); the
 * finite own samples' sums into m, the non-finite own ones' count into *bad. */
#define PRE_UNIT_SLOT_STEP (STAGE_THREADS + 2 * (STAGE_THREADS >> PRE_SLIDE_SH1))
template <bool HALF, int BATCH>
__device__ __forceinline__ void stage_pre_unit(const char *src, int nw, int o0, int o1, int e,
                                               float2 *win, double m[3], unsigned *bad) {
  const int tid = (int)threadIdx.x;
  float2 *w = win + qpsk_slide_slot(tid + e, PRE_SLIDE_SH1);
  const unsigned nown = (unsigned)(o1 - o0);
  unsigned nb = 0;
  for (int t = tid; t < nw; t += BATCH * STAGE_THREADS, w += BATCH * PRE_UNIT_SLOT_STEP) {
    prx_cf32 v[BATCH];
#pragma unroll
    for (int u = 0; u < BATCH; u++)
      if (t + u * STAGE_THREADS < nw) v[u] = load_rel<HALF>(src, t + u * STAGE_THREADS);
    if (t >= o0 && t + (BATCH - 1) * STAGE_THREADS < o1) {
#pragma unroll
      for (int u = 0; u < BATCH; u++)
        pre_unit_sample(v[u], true, w + u * PRE_UNIT_SLOT_STEP, m, nb);
    } else {
#pragma unroll
      for (int u = 0; u < BATCH; u++)
        if (t + u * STAGE_THREADS < nw)
          pre_unit_sample(v[u], (unsigned)(t + u * STAGE_THREADS - o0) < nown,
                          w + u * PRE_UNIT_SLOT_STEP, m, nb);
    }
  }
  *bad += nb;
}

/* The sliding window of cf32 rows (slots qpsk_slide_slot(v, sh), v = t + e) wholly in the stream
 * and not mixed, for pre_om at the step 4/3: each thread copies its samples t = threadIdx.x + k
 * STAGE_THREADS straight into their slots by cp.async (8 bytes each; no register holds a sample in
 * flight, so all of a thread's ~11 samples at L 512 are in flight at once: one DRAM round trip a
 * block where the register batches took two), waits for its own copies (cp.async.wait_all: a
 * thread reads back only the slots it filled, so no barrier), then reads them back in the order
 * of k: a non-finite sample zeroed in place, the input sums of the block's own samples [o0, o1) as
 * pre_unit_sample forms them (the same values in the same order as stage_window's), the
 * non-finite own ones counted into *bad. H200: pre_om at 16/3 278 us against 293-298 with
 * stage_pre_rows; at the unit step 221 against 214-218 with stage_pre_unit, whose loop it does not
 * replace (bench/GPU_NOTES.md, fifteenth session). */
__device__ __forceinline__ void pre_copy8(float2 *dst, const void *src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void stage_pre_async(const char *src, int nw, int o0, int o1, int e,
                                                int sh, float2 *win, double m[3], unsigned *bad) {
  const int tid = (int)threadIdx.x;
  float2 *const w0 = win + qpsk_slide_slot(tid + e, sh);
  /* STAGE_THREADS samples apart: a multiple of 2^sh (qpsk_slide_slot's period) */
  const int step = STAGE_THREADS + 2 * (STAGE_THREADS >> sh);
  const float2 *s = (const float2 *)src;
  {
    float2 *w = w0;
    for (int t = tid; t < nw; t += STAGE_THREADS, w += step) pre_copy8(w, s + t);
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  const unsigned nown = (unsigned)(o1 - o0);
  unsigned nb = 0;
  float2 *w = w0;
  for (int t = tid; t < nw; t += STAGE_THREADS, w += step) {
    const float2 x = *w;
    const bool fin = isfinite(x.x) && isfinite(x.y), own = (unsigned)(t - o0) < nown;
    if (!fin) *w = make_float2(0.f, 0.f);
    pre_sample_sums(fin ? x.x : 0.f, fin ? x.y : 0.f, own, m);
    nb += !fin && own;
  }
  *bad += nb;
}

#endif
