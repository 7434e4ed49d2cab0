/* The sliding pre-filter of stage pre (qpsk_stages_cuda.cu's qpsk_pre_kernel, pre and pre_om):
 * each thread a run of consecutive grid outputs from one run of samples, the taps kernel
 * parameters (constant operands of the multiply-adds, no loads), the samples loaded once, two at
 * a time, from a window laid out by qpsk_slide_slot. Two grids: the unit step (sps 4, 8 outputs a
 * thread, 20 taps) and the step 4/3 (sps 16/3, three periods of three outputs a thread, 24 taps a
 * row); other tap counts take the four- and three-output filters (qpsk_dot4, qpsk_dot3). The
 * outputs leave through shared memory, whole sectors from consecutive lanes (qpsk_pre_kernel's
 * pre_stage_unit, pre_stage_tri).
 *
 * Included after qpsk_stage_math.h (qpsk_pre_slide), which qpsk_stages_cuda.cu's C headers bring in
 * first. */
#ifndef PRX_QPSK_STAGES_PRE_CUH
#define PRX_QPSK_STAGES_PRE_CUH

#include "qpsk_stages_cuda.h"

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

/* 8 outputs of the unit-step grid from the run at w (taps: the row, re/im lanes) */
__device__ __forceinline__ void pre_slide_unit(const float *taps, const float2 *w, prx_cf32 o[8]) {
  qpsk_pre_slide(taps, QPSK_SLIDE_NT4, 1, 1, PRE_SLIDE_OUT1, w, PRE_SLIDE_SH1, o);
}
/* 9 outputs (three periods) of the step-4/3 grid from the run at w (taps: rows 0, 1, 2) */
__device__ __forceinline__ void pre_slide_tri(const float *taps, const float2 *w,
                                              prx_cf32 o[PRE_SLIDE_OUT3]) {
  qpsk_pre_slide(taps, QPSK_SLIDE_NT3, 3, 4, PRE_SLIDE_OUT3, w, PRE_SLIDE_SH3, o);
}

#endif
