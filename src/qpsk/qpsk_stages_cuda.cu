/* The CUDA stage kernels of the demodulator bank (see qpsk_stages_cuda.h): one thread block per
 * (block, channel), its input window staged once in shared memory, each thread a strided share of
 * the block's outputs through the shared per-output arithmetic (qpsk_stage_math.h). */
extern "C" {
#include "qpsk_internal.h"
#include "qpsk_stages_cuda.h"
}
#include "qpsk_stages_cfo.cuh"
#include "qpsk_stages_mf.cuh"
#include "qpsk_stages_pre.cuh"
#include "qpsk_stages_window.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <limits.h>

/* the pre-filter's thread blocks per multiprocessor that its register budget allows (the
 * compiler's cap: 48 registers; uncapped it takes about 60) */
#define STAGE_PRE_MIN_BLOCKS 5
/* pre with the O&M sums (its shared memory: the window and one slot per chunk of 16 outputs,
 * ~28 kB at sps 4 and ~40 kB at 16/3, L = 512): at a unit-step grid (BLK) six thread blocks a
 * multiprocessor (40 registers, a few spilled: faster than five under 48 without a spill), else
 * four (64 registers: under 48 the step-4/3 kernel spills; H200, bench/GPU_NOTES.md, s10/gpo and
 * s13/gpo5) */
#define STAGE_PRE_OM_MIN_BLOCKS 6
#define STAGE_PRE_OM3_MIN_BLOCKS 4
/* x4 on pre_om's bfloat16 grid (x4_level, x4_rows with in), its block staged as it is (8 kB):
 * six thread blocks a multiprocessor (40 registers). Uncapped it took 66 registers, three blocks,
 * 126 us a span; capped, 98-100 against 104-105 for the grid staged widened to floats (16 kB, 48
 * registers, five blocks). H200, sps 4, 1024 channels: bench/GPU_NOTES.md, twenty-fourth
 * session. */
#define STAGE_X4_LEVEL_MIN_BLOCKS 6
/* the matched filter: five thread blocks per multiprocessor (48 registers; H200,
 * bench/GPU_NOTES.md, s7/gmf: the fastest of four to six for pairs of symbols a thread) */
#define STAGE_MF_MIN_BLOCKS 5

static prx_status cuda_fail(cudaError_t e, const char *what) {
  return prx_fail(PRX_ERR_DEVICE, "CUDA demodulator stages: %s: %s", what, cudaGetErrorString(e));
}
#define CK(call, what)                                                                             \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) return cuda_fail(e_, what);                                             \
  } while (0)

/* pre_om's grid values as two bfloat16 each (qpsk_stage_math.h, qpsk_bf16_bits: the same
 * rounding), and a pair of them as one 8-byte word */
__device__ __forceinline__ __nv_bfloat162 grid_bf(float re, float im) {
  return __floats2bfloat162_rn(re, im);
}
__device__ __forceinline__ uint2 grid_bf_pair(float4 v) {
  const __nv_bfloat162 a = grid_bf(v.x, v.y), b = grid_bf(v.z, v.w);
  uint2 o;
  memcpy(&o.x, &a, 4);
  memcpy(&o.y, &b, 4);
  return o;
}
__device__ __forceinline__ float2 grid_bf_float(__nv_bfloat162 v) { return __bfloat1622float2(v); }
/* value k of a grid: floats (pre), or bfloat16 pairs (pre_om); its place, and it stored */
template <bool OM> __device__ __forceinline__ void *grid_at(void *g, int64_t k) {
  if (OM) return (__nv_bfloat162 *)g + k;
  return (prx_cf32 *)g + k;
}
template <bool OM>
__device__ __forceinline__ void grid_put(void *g, int64_t k, float re, float im) {
  if (OM)
    ((__nv_bfloat162 *)g)[k] = grid_bf(re, im); /* 4-byte stores */
  else
    ((float2 *)g)[k] = make_float2(re, im); /* 8-byte stores */
}

/* the thread block's sum of v (each thread's value) into out[0..N-1] of thread 0 */
template <int N> __device__ __forceinline__ void block_sum(double v[N], double *scratch) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int q = 0; q < N; q++) {
    for (int o = 16; o > 0; o >>= 1) v[q] += __shfl_down_sync(0xffffffffu, v[q], o);
    if (lane == 0) scratch[warp * N + q] = v[q];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 0; q < N; q++) {
      double s = 0;
      for (unsigned w = 0; w < STAGE_THREADS / 32; w++) s += scratch[w * N + q];
      v[q] = s;
    }
  }
}

/* one output: taps t (re/im pairs) against the window x, both as float2 (64-bit loads) */
__device__ __forceinline__ prx_cf32 dot_f2(const float2 *__restrict__ t, const float2 *x,
                                           unsigned ntaps) {
  float re = 0, im = 0;
  for (unsigned l = 0; l < ntaps; l++) {
    float2 h = __ldg(t + l), v = x[l];
    re += h.x * v.x;
    im += h.y * v.y;
  }
  prx_cf32 r = {re, im};
  return r;
}

/* A pre thread block's window [lo, hi) and own samples [own0, own1) (qpsk_pre_ranges), and for
 * the sliding filters the grid's phase ph and the window's shift e (qpsk_pre_kernel's pre_layout),
 * computed by the launcher (pre_blk_of: the same integer positions and double counts as on the
 * device) for each block of a launch, at most PRE_TAB_MAX blocks a channel a launch (a span of
 * more takes several launches: test_qpsk_stages_cuda's spans of 40 blocks): every
 * thread of every warp would otherwise find them (three 64-bit divisions, the double counts:
 * ~10 % of pre_om's instructions at sps 4). */
#define PRE_TAB_MAX 32
typedef struct {
  int64_t lo;
  int nw, o0, o1; /* hi, own0, own1 less lo */
  int ph, e;
} pre_blk;

typedef struct {
  const void *rows;
  size_t stride;
  int64_t b0, n_total;
  unsigned nblk, L;
  double sps;
  const float *bank;
  unsigned Q, ntaps;
  int c;
  int64_t rq;
  double r;
  prx_cf32 *grid;
  double *mom;
  unsigned *nonfinite;
  const double *mix; /* per-channel mixing frequencies (MIX kernels) */
  /* OM kernels: the O&M sums of each block's own grid below g_hi, (nsub + 1) x QPSK_OMS per
   * block into omsum; their partial sums in shared memory after the window's slots (the sliding
   * filters: one slot of QPSK_OMS per chunk of 16 own outputs; the blocked unit-step filter: one
   * per group of four outputs; else per warp and step) */
  int64_t g_hi;
  unsigned nsub, Ls;
  size_t win_slots;
  double *omsum;
  int g_vec; /* the blocked filter's grid stores as float4 (the grid 16-byte aligned) */
  int tri;   /* a step-4/3 grid (not OM kernels): three outputs per thread (qpsk_dot3) */
  int slide; /* the sliding filter (PRE_SLIDE_UNIT, PRE_SLIDE_TRI) or PRE_SLIDE_NONE */
  float taps[QPSK_SLIDE_TAPS]; /* its taps (qpsk_stages.pre_taps): constant operands */
  unsigned om_cj;              /* OM kernels, sliding: the chunks a sub-block (qpsk_om_chunks) */
  int om_flat;                 /* OM kernels, sliding: sub-blocks of whole chunks (om_tile) */
  unsigned kb;                 /* the launch's first block of the span (grid x: kb + blockIdx.x) */
  pre_blk tab[PRE_TAB_MAX];    /* block kb + blockIdx.x's at tab[blockIdx.x] */
} pre_args;

/* block b's pre_blk (slide: the launch's sliding filter), on the host */
static pre_blk pre_blk_of(const pre_args &a, int64_t b, int slide) {
  pre_blk t = {0, 0, 0, 0, 0, 0};
  int64_t hi, own0, own1;
  qpsk_pre_ranges(b, a.L, QPSK_GM, a.sps, a.rq, a.r, a.Q, a.c, a.ntaps, &t.lo, &hi, &own0, &own1);
  t.nw = (int)(hi - t.lo);
  t.o0 = (int)(own0 - t.lo);
  t.o1 = (int)(own1 - t.lo);
  if (slide != PRE_SLIDE_NONE) {
    const int per = slide == PRE_SLIDE_TRI ? 3 : 1;
    const int64_t m0 = 4 * b * (int64_t)a.L - QPSK_GM;
    unsigned row;
    int64_t offp;
    t.ph = (int)(((m0 % per) + per) % per);
    qpsk_pre_tap(m0 - t.ph, a.rq, a.r, a.Q, a.c, t.lo, &row, &offp);
    t.e = (int)-offp;
  }
  return t;
}

/* The layout of pre's window in shared memory: window index t at slot v + k (v >> sh), v = t + e:
 * qpsk_win_slot's pads (0: k 0; QPSK_PAD4: k 1, sh 2; e 0) and, with PRE_PAD_SLIDE,
 * qpsk_slide_slot of the virtual sample t + e (k 2), in one expression without branches. */
typedef struct {
  int pad, e, k, sh;
} pre_layout;
__device__ __forceinline__ int pre_slot32(const pre_layout &y, int t) {
  const int v = t + y.e;
  return v + y.k * (v >> y.sh);
}
__device__ __forceinline__ int64_t pre_slot(const pre_layout &y, int64_t t) {
  const int64_t v = t + y.e;
  return v + y.k * (v >> y.sh);
}

/* Stages pre's input window [lo, hi) of channel c in win (slots as the layout y places them;
 * stage_pre_rows' loop, BATCH loads a thread in flight): each sample mixed where the rows are, read
 * as qpsk_window_sample reads it; the input sums and the non-finite count of the block's own
 * samples [own0, own1) into m and bad (each thread its share). With QPSK_PAD4, 8 zeros follow the
 * window (the blocked outputs past the grid's end read up to 3 samples past it); with
 * PRE_PAD_SLIDE, PRE_SLIDE_TAIL zeros follow it and the e virtual samples before it are zeros (the
 * runs read whole past the grid's ends). A sliding window wholly in the stream and not mixed goes
 * through pre's own staging where the kernel has one, which counts only the non-finite samples:
 * UNIT (pre_om's unit-step kernels) stage_pre_unit, ASYNC (pre_om's cf32 kernels of the other
 * grids: the step 4/3; a sliding window there is never the unit step's, whose grids take the BLK
 * kernels) stage_pre_async; returns whether it did (the block's finite count is then its own
 * samples less the non-finite ones). */
template <bool HALF, bool MIX, int BATCH, bool UNIT, bool ASYNC>
__device__ __forceinline__ bool
stage_pre_window(const pre_args &a, unsigned c, int64_t lo, int64_t hi, int64_t own0, int64_t own1,
                 const pre_layout &y, float2 *win, double m[4], unsigned *bad) {
  const prx_cf32 zero = {0, 0};
  const int o0 = (int)(own0 - lo), o1 = (int)(own1 - lo);
  bool fast = false;
  if ((UNIT || ASYNC) && (a.slide == PRE_SLIDE_UNIT || (ASYNC && a.slide == PRE_SLIDE_TRI)) &&
      !MIX && lo >= 0 && hi <= a.n_total) {
    const char *src =
        (const char *)a.rows + (size_t)c * a.stride + (size_t)lo * sample_bytes<HALF>();
    if (ASYNC)
      stage_pre_async(src, (int)(hi - lo), o0, o1, y.e, y.sh, win, m, bad);
    else
      stage_pre_unit<HALF, BATCH>(src, (int)(hi - lo), o0, o1, y.e, win, m, bad);
    fast = true;
  } else {
    unsigned cnt = 0, nb = 0;
    /* a sample of a window wholly in the stream: its sums without branches (a sample outside the
     * block's own or not finite adds +0, which leaves every partial sum as it is: none is -0; the
     * count in an integer, exact either way): the same values and sums in the same order as edge */
    auto inner = [&](prx_cf32 v, int tu) {
      const bool fin = isfinite(v.re) && isfinite(v.im), own = tu >= o0 && tu < o1;
      const float re = fin && own ? v.re : 0.f, im = fin && own ? v.im : 0.f;
      m[0] += re;
      m[1] += im;
      m[2] += (double)re * re + (double)im * im;
      cnt += fin && own;
      nb += !fin && own;
      win[pre_slot32(y, tu)] = fin ? make_float2(v.re, v.im) : make_float2(0, 0);
    };
    auto edge = [&](prx_cf32 v, int64_t t, int64_t s, int in) {
      if (in && s >= own0 && s < own1) qpsk_pre_sum_add(v, m, bad);
      v = qpsk_window_sample(v, in, zero);
      win[pre_slot(y, t)] = make_float2(v.re, v.im);
    };
    stage_pre_rows<BATCH, HALF, MIX>(a.rows, a.stride, c, a.n_total, lo, hi, a.mix, zero, inner,
                                     edge);
    m[3] += (double)cnt;
    *bad += nb;
  }
  if (y.pad == QPSK_PAD4 && threadIdx.x < 8)
    win[qpsk_win_slot(hi - lo + threadIdx.x, QPSK_PAD4)] = make_float2(0, 0);
  if (y.pad == PRE_PAD_SLIDE) {
    if (threadIdx.x < PRE_SLIDE_TAIL)
      win[qpsk_slide_slot((int)(hi - lo) + y.e + (int)threadIdx.x, y.sh)] = make_float2(0, 0);
    if ((int)threadIdx.x < y.e) win[qpsk_slide_slot((int)threadIdx.x, y.sh)] = make_float2(0, 0);
  }
  return fast;
}

/* One warp's O&M partial sums for one step of its outputs, where pre_om computes one output per
 * lane (the general filter; the sliding filters sum chunks of their staged outputs, om_tile, the
 * blocked unit-step filter groups of four, qpsk_om_group4): each lane's output o at grid index
 * k0 (the sub-blocks start at QPSK_GM + multiples of 4 Ls; the warp's outputs in this step start
 * at seg0 and span 32 indices, so at most two sub-blocks of 4 Ls >= 128): each lane's sums
 * in registers, put in the first or the second sub-block's place, reduced over the warp in a
 * fixed order; lane 0 writes the first sub-block's index and the two sub-blocks' sums to seg
 * (1 + 2 QPSK_OMS doubles). */
#define OM_SEG (1 + 2 * QPSK_OMS)
__device__ __forceinline__ void om_seg(const prx_cf32 *o, int64_t k0, int64_t seg0, int64_t m0,
                                       int64_t own_end, uint32_t Ls4, uint32_t nsub, double *seg) {
  uint32_t jlo;
  double t[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
  const bool up = qpsk_om_lane(o, 1, k0, seg0, m0, QPSK_GM, own_end, Ls4, nsub, t, &jlo);
  double acc[2 * QPSK_OMS];
  for (int q = 0; q < QPSK_OMS; q++) {
    acc[q] = up ? 0 : t[q];
    acc[QPSK_OMS + q] = up ? t[q] : 0;
  }
  for (int q = 0; q < 2 * QPSK_OMS; q++)
    for (int sh = 16; sh > 0; sh >>= 1) acc[q] += __shfl_down_sync(0xffffffffu, acc[q], sh);
  if ((threadIdx.x & 31) == 0) {
    seg[0] = jlo;
    for (int q = 0; q < 2 * QPSK_OMS; q++) seg[1 + q] = acc[q];
  }
}

/* The sliding filters' grid stores through shared memory: after every thread's filter has read
 * the window, the block's outputs of this step go to the window's first slots (which later steps
 * do not read: step it reads from slot it S on), then out in consecutive 16-byte (unit step) or
 * 8-byte (step 4/3; the grid's rows 8-byte aligned) stores, whole lines a warp instead of each
 * lane's run its own lines. Every thread calls it (barriers). At the unit step pair p (outputs 2p,
 * 2p + 1) goes to slot unit_tile_slot: for pre at p ^ ((p >> 3) & 3) (a quarter-warp's eight
 * 16-byte writes on eight bank groups), for pre_om (OM) at p + p / 8, which also puts the lanes'
 * chunks of 16 outputs (om_tile: 9 pairs apart) on distinct bank groups; the grid 8-byte aligned
 * only (!g_vec), the outputs go out one at a time (VEC 0). The step's ext outputs past its 8 a
 * thread (qpsk_slide_tail) come one a lane of the last warp: ox, output xk of the step (xk < 0:
 * none in this thread). */
template <bool OM> __device__ __forceinline__ int unit_tile_slot(int p) {
  return OM ? p + (p >> 3) : p ^ ((p >> 3) & 3);
}
template <bool OM, bool VEC>
__device__ __forceinline__ void pre_stage_unit(const prx_cf32 o[PRE_SLIDE_OUT1], bool have,
                                               prx_cf32 ox, int xk, int ext, int64_t k0, int64_t ng,
                                               float4 *st, void *gk) {
  __syncthreads();
  if (have) {
#pragma unroll
    for (int q = 0; q < PRE_SLIDE_OUT1 / 2; q++) {
      const int p = PRE_SLIDE_OUT1 / 2 * (int)threadIdx.x + q;
      st[unit_tile_slot<OM>(p)] =
          make_float4(o[2 * q].re, o[2 * q].im, o[2 * q + 1].re, o[2 * q + 1].im);
    }
  }
  if (xk >= 0)
    ((float2 *)st)[2 * unit_tile_slot<OM>(xk >> 1) + (xk & 1)] = make_float2(ox.re, ox.im);
  __syncthreads();
  const int64_t left = ng - k0, cap = PRE_SLIDE_OUT1 * STAGE_THREADS + ext;
  if (VEC) {
    const int np = (int)((left < cap ? left : cap) / 2);
    if (OM) {
      /* pair p + STAGE_THREADS lies STAGE_THREADS + STAGE_THREADS / 8 slots after pair p
       * (unit_tile_slot): the thread's pairs from one base, no slot arithmetic a pair; each pair
       * one 8-byte word of bfloat16 */
      const float4 *sp = st + unit_tile_slot<OM>((int)threadIdx.x);
      uint2 *g2 = (uint2 *)gk;
      for (int p = (int)threadIdx.x; p < np; p += STAGE_THREADS, sp += STAGE_THREADS * 9 / 8)
        g2[p] = grid_bf_pair(*sp);
    } else {
      float4 *g4 = (float4 *)gk;
      for (int p = (int)threadIdx.x; p < np; p += STAGE_THREADS) g4[p] = st[unit_tile_slot<OM>(p)];
    }
  } else {
    const int n = (int)(left < cap ? left : cap);
    const float2 *st2 = (const float2 *)st;
    for (int x = (int)threadIdx.x; x < n; x += STAGE_THREADS) {
      const float2 v = st2[2 * unit_tile_slot<OM>(x >> 1) + (x & 1)];
      grid_put<OM>(gk, x, v.x, v.y);
    }
  }
}
/* the step-4/3 tile's slot of output x of the step: for pre_om (OM) one spare slot after every
 * 16, so that the lanes' chunks of 16 (om_tile) lie 17 slots apart, on distinct bank pairs */
template <bool OM> __device__ __forceinline__ int tri_tile_slot(int x) {
  return OM ? x + (x >> 4) : x;
}
template <bool OM>
__device__ __forceinline__ void pre_stage_tri(const prx_cf32 o[PRE_SLIDE_OUT3], bool have,
                                              int64_t k0, int64_t ng, float2 *st, void *g) {
  __syncthreads();
  if (have) {
#pragma unroll
    for (int u = 0; u < PRE_SLIDE_OUT3; u++)
      st[tri_tile_slot<OM>(PRE_SLIDE_OUT3 * threadIdx.x + u)] = make_float2(o[u].re, o[u].im);
  }
  __syncthreads();
  for (int k = (int)threadIdx.x; k < PRE_SLIDE_OUT3 * STAGE_THREADS; k += STAGE_THREADS) {
    const int64_t gk = k0 + k;
    if (gk < 0 || gk >= ng) continue;
    const float2 v = st[tri_tile_slot<OM>(k)];
    grid_put<OM>(g, gk, v.x, v.y);
  }
}

/* pre_om's O&M sums from the step's outputs staged in shared memory for the stores (outputs k0 ..
 * kend - 1, output k at rd(k - k0)): each thread one chunk of QPSK_OM_CHUNK own outputs of one
 * sub-block (qpsk_om_chunk_span; consecutive threads consecutive chunks, from the one that holds
 * the step's first own output), its outputs in this step summed (qpsk_om_group_add,
 * qpsk_om_chunk_end: qpsk_om_chunk's values) into the chunk's slot: written where the chunk starts
 * in this step, added where it began in the one before (a chunk crosses at most one step's end; the
 * steps run in order, barriers between them). Output k's grid index is m0 + k, m0 a multiple of 4,
 * so a chunk's output u has the residue u mod 4. */
template <bool PAIRS, typename Rd>
__device__ __forceinline__ void om_tile(Rd rd, int64_t k0, int64_t kend, int64_t own_end,
                                        uint32_t Ls4, uint32_t nsub, uint32_t cj, int64_t L,
                                        bool flat, double *slots) {
  const uint32_t kf = (uint32_t)((k0 > QPSK_GM ? k0 : QPSK_GM) - QPSK_GM);
  uint32_t i;
  int ks, ke; /* a block's output indices: 32-bit */
  if (flat) {
    /* sub-blocks of whole chunks (Ls4 a multiple of QPSK_OM_CHUNK): chunk i holds own outputs
     * QPSK_OM_CHUNK i on, cut at the block's 4 L (qpsk_om_chunk_span's spans, without its
     * divisions) */
    i = kf / QPSK_OM_CHUNK + threadIdx.x;
    if (i >= (nsub + 1) * cj) return;
    const int end = QPSK_GM + 4 * (int)L, s0 = QPSK_GM + QPSK_OM_CHUNK * (int)i;
    ks = s0 < end ? s0 : end;
    ke = ks + QPSK_OM_CHUNK < end ? ks + QPSK_OM_CHUNK : end;
  } else {
    uint32_t jf = kf / Ls4;
    jf = jf < nsub ? jf : nsub;
    i = jf * cj + (kf - jf * Ls4) / QPSK_OM_CHUNK + threadIdx.x;
    if (i >= (nsub + 1) * cj) return;
    int64_t ks64, ke64;
    qpsk_om_chunk_span(i, cj, nsub, Ls4, QPSK_GM, L, &ks64, &ke64);
    ks = (int)ks64;
    ke = (int)ke64;
  }
  const int k0i = (int)k0, kendi = (int)kend, owni = (int)own_end;
  if (ks >= kendi) return;
  if (ke > kendi) ke = kendi;
  if (ke > owni) ke = owni;
  const int lo = ks < k0i ? k0i - ks : 0, hi = ke > ks ? ke - ks : 0;
  const int x0 = ks - k0i;
  double *sl = slots + (size_t)i * QPSK_OMS;
  if (hi <= lo) {
    /* none of the chunk's outputs in this step (the block's empty last sub-block): its sums +0,
     * which an earlier step's leave as they are */
    if (ks >= k0i)
#pragma unroll
      for (int q = 0; q < QPSK_OMS; q++) sl[q] = 0;
    return;
  }
  /* the chunk's outputs [l, h), a group of four at a time (the rest as 0, which adds +0 to every
   * sum: qpsk_om_chunk's values); a whole chunk (every one but at a step's end or the own
   * outputs' end) without a test per output */
  double e[2][3] = {{0, 0, 0}, {0, 0, 0}};
  auto sum = [&](int l, int h) {
#pragma unroll
    for (int g = 0; g < QPSK_OM_CHUNK; g += 4) {
      prx_cf32 z[4];
      if constexpr (PAIRS) {
        /* x0 even: the pairs as 16-byte loads */
#pragma unroll
        for (int w = 0; w < 4; w += 2) {
          const int u = g + w;
          const bool i0 = u >= l && u < h, i1 = u + 1 >= l && u + 1 < h;
          const float4 v = i0 || i1 ? rd(x0 + u) : make_float4(0, 0, 0, 0);
          z[w] = i0 ? prx_cf32{v.x, v.y} : prx_cf32{0, 0};
          z[w + 1] = i1 ? prx_cf32{v.z, v.w} : prx_cf32{0, 0};
        }
      } else {
#pragma unroll
        for (int w = 0; w < 4; w++) {
          const float2 v = g + w >= l && g + w < h ? rd(x0 + g + w) : make_float2(0, 0);
          z[w] = prx_cf32{v.x, v.y};
        }
      }
      qpsk_om_group_add(z, e);
    }
  };
  if (lo == 0 && hi == QPSK_OM_CHUNK)
    sum(0, QPSK_OM_CHUNK);
  else
    sum(lo, hi);
  double t[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
  qpsk_om_chunk_end(e, t);
#pragma unroll
  for (int q = 0; q < QPSK_OMS; q++) sl[q] = ks >= k0i ? t[q] : sl[q] + t[q];
}

/* qpsk_om_own_end of this thread block, clamped to its ng outputs (for om_tile's chunks, whose
 * outputs lie in them): found where it is used rather than held in a register across the filter */
__device__ __forceinline__ int pre_own_end(const pre_args &a, int64_t ng) {
  const int64_t b = a.b0 + a.kb + blockIdx.x, L = a.L;
  const int64_t e = qpsk_om_own_end(4 * b * L - QPSK_GM, L, QPSK_GM, a.g_hi);
  return (int)(e < 0 ? 0 : e < ng ? e : ng);
}

template <bool HALF, bool MIX, bool BLK, bool OM>
__global__ void __launch_bounds__(STAGE_THREADS,
                                  OM ? (BLK ? STAGE_PRE_OM_MIN_BLOCKS : STAGE_PRE_OM3_MIN_BLOCKS)
                                     : STAGE_PRE_MIN_BLOCKS)
    qpsk_pre_kernel(const __grid_constant__ pre_args a) {
  extern __shared__ __align__(16) float2 win[];
  __shared__ double scratch[(STAGE_THREADS / 32) * 4];
  const unsigned c = blockIdx.y, blk = a.kb + blockIdx.x;
  const int64_t b = a.b0 + blk, L = a.L;
  const int64_t m0 = 4 * b * L - QPSK_GM, ng = 4 * L + 2 * QPSK_GM;
  const pre_blk tb = a.tab[blockIdx.x];
  const int64_t lo = tb.lo, hi = lo + tb.nw, own0 = lo + tb.o0, own1 = lo + tb.o1;
  double m[4] = {0, 0, 0, 0};
  unsigned bad = 0;
  /* the window's slots: padded one per 4 samples for the register-blocked filters; for the
   * sliding ones at virtual samples shifted by e so that the grid's first whole period (output
   * -ph: ph of the step-4/3 grid's 3, 0 at the unit step) reads from virtual sample 0 */
  pre_layout y = {0, 0, 0, 0};
  if (BLK || (!OM && a.tri)) y = {QPSK_PAD4, 0, 1, 2};
  const int ph = tb.ph;
  if (a.slide != PRE_SLIDE_NONE) {
    y.pad = PRE_PAD_SLIDE;
    y.e = tb.e;
    y.k = 2;
    y.sh = a.slide == PRE_SLIDE_TRI ? PRE_SLIDE_SH3 : PRE_SLIDE_SH1;
  }
  /* pre_om at the unit step stages through stage_pre_unit, at the step 4/3 on cf32 rows through
   * stage_pre_async; pre keeps stage_window's loop (stage_pre_unit measured slower for it, and
   * stage_pre_async slower at the unit step: bench/GPU_NOTES.md, fourteenth and fifteenth
   * sessions) */
  constexpr int BATCH = BLK ? STAGE_BATCH : PRE_BATCH_TRI;
  constexpr bool UNIT = BLK && OM, ASYNC = !BLK && OM && !HALF;
  const bool fast =
      stage_pre_window<HALF, MIX, BATCH, UNIT, ASYNC>(a, c, lo, hi, own0, own1, y, win, m, &bad);
  /* the block's input sums as block_sum<4> adds them, the count (m[3]: an exact integer in every
   * partial sum; where the window was staged by stage_pre_unit, the own samples less the
   * non-finite ones, below) and the non-finite count as integers, one barrier, after which the
   * window is complete too */
  unsigned cnt = (unsigned)m[3];
  for (int q = 0; q < 3; q++)
    for (int o = 16; o > 0; o >>= 1) m[q] += __shfl_down_sync(0xffffffffu, m[q], o);
  /* the counts by the warp's integer reduction (one instruction each) */
  cnt = __reduce_add_sync(0xffffffffu, cnt);
  bad = __reduce_add_sync(0xffffffffu, bad);
  __shared__ unsigned cnt_w[STAGE_THREADS / 32], bad_w[STAGE_THREADS / 32];
  if ((threadIdx.x & 31) == 0) {
    for (int q = 0; q < 3; q++) scratch[(threadIdx.x >> 5) * 3 + q] = m[q];
    cnt_w[threadIdx.x >> 5] = cnt;
    bad_w[threadIdx.x >> 5] = bad;
  }
  __syncthreads(); /* the window and the partial sums are complete */
  const size_t out = (size_t)c * a.nblk + blk;
  if (threadIdx.x == 0) {
    unsigned n = 0, nb = 0;
    for (int q = 0; q < 3; q++) {
      double v = 0;
      for (unsigned w = 0; w < STAGE_THREADS / 32; w++) v += scratch[w * 3 + q];
      a.mom[4 * out + q] = v;
    }
    for (unsigned w = 0; w < STAGE_THREADS / 32; w++) {
      n += cnt_w[w];
      nb += bad_w[w];
    }
    if (fast) n = (unsigned)tb.o1 - (unsigned)tb.o0 - nb;
    a.mom[4 * out + 3] = (double)n;
    a.nonfinite[out] = nb;
  }
  /* the block's grid: floats (pre), or bfloat16 pairs (pre_om: qpsk_bf16_bits) */
  void *const g = grid_at<OM>(a.grid, (int64_t)out * ng);
  const float2 *bank = (const float2 *)a.bank;
  /* O&M folding: the block's own grid indices [QPSK_GM, own_end), per-warp sums in seg */
  const int64_t own_end = OM ? qpsk_om_own_end(m0, L, QPSK_GM, a.g_hi) : 0;
  double *seg = (double *)(win + a.win_slots);
  const uint32_t Ls4 = 4 * a.Ls, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nwarps = STAGE_THREADS / 32;
  int nsteps; /* steps of the output loop, the same for every thread (the warp reductions) */
  if (BLK && a.slide == PRE_SLIDE_UNIT) {
    /* a unit-step grid, sliding: eight consecutive outputs per thread (output k reads from
     * virtual sample k); with om the sums of the staged outputs, a chunk a thread (om_tile) */
    const int S = PRE_SLIDE_OUT1 * STAGE_THREADS;
    nsteps = (int)((ng + S - 1) / S);
    /* the few outputs past the last whole step (qpsk_slide_tail: at L 512 8 of 2056) go with the
     * step before it, one a lane of the last warp, rather than in a step of their own (its two
     * barriers, one thread's filter and om's pass for a handful of outputs) */
    const int tail = qpsk_slide_tail(ng, S, nsteps);
    if (tail) nsteps--;
    for (int it = 0; it < nsteps; it++) {
      const int base = it * S + PRE_SLIDE_OUT1 * (int)threadIdx.x;
      prx_cf32 o[PRE_SLIDE_OUT1];
      const bool have = base < ng;
      if (have) pre_slide_unit(a.taps, win + qpsk_slide_slot(base, PRE_SLIDE_SH1), o);
      const int ext = it == nsteps - 1 ? tail : 0, xl = (int)threadIdx.x - (STAGE_THREADS - 32);
      const int xk = xl >= 0 && xl < ext ? S + xl : -1; /* this thread's output past the runs */
      prx_cf32 ox = {0, 0};
      if (xk >= 0) ox = pre_slide_one(a.taps, win, it * S + xk);
      /* the grid 16-byte aligned (ng and the steps multiples of 4): the step's outputs through
       * shared memory, else each thread's own (pre_om: through shared memory either way, its
       * sums from there) */
      void *gs = grid_at<OM>(g, (int64_t)it * S);
      if (a.g_vec)
        pre_stage_unit<OM, true>(o, have, ox, xk, ext, it * S, ng, (float4 *)win, gs);
      else if (OM)
        pre_stage_unit<OM, false>(o, have, ox, xk, ext, it * S, ng, (float4 *)win, gs);
      if (!OM && !a.g_vec) {
        if (have) {
#pragma unroll
          for (int k = 0; k < PRE_SLIDE_OUT1; k++)
            if (base + k < ng) grid_put<OM>(g, base + k, o[k].re, o[k].im);
        }
        if (xk >= 0) grid_put<OM>(g, it * S + xk, ox.re, ox.im);
      }
      if (OM) {
        /* the chunks' sums from the staged outputs, two at a time (a chunk starts at an even
         * output of the step: QPSK_GM, the sub-blocks and the steps multiples of 4) */
        const int64_t k0 = (int64_t)it * S, kend = k0 + S + ext < ng ? k0 + S + ext : ng;
        const float4 *st = (const float4 *)win;
        om_tile<true>([&](int x) { return st[unit_tile_slot<true>(x >> 1)]; }, k0, kend,
                      pre_own_end(a, ng), Ls4, a.nsub, a.om_cj, a.L, a.om_flat, seg);
      }
    }
  } else if (BLK) {
    /* a unit-step grid: four consecutive outputs per thread from one run of samples */
    unsigned row;
    int64_t off0;
    qpsk_pre_tap(m0, a.rq, a.r, a.Q, a.c, lo, &row, &off0);
    nsteps = (int)((ng + 4 * STAGE_THREADS - 1) / (4 * STAGE_THREADS));
    for (int it = 0; it < nsteps; it++) {
      const int64_t base = (int64_t)it * 4 * STAGE_THREADS + 4 * threadIdx.x;
      prx_cf32 o[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
      if (base < ng) {
        qpsk_dot4(a.bank, a.ntaps, win, off0 + base, QPSK_PAD4, o);
        if (OM && a.g_vec) { /* ng and base multiples of 4: one 16-byte store of bfloat16 */
          const uint2 lo = grid_bf_pair(make_float4(o[0].re, o[0].im, o[1].re, o[1].im)),
                      hi = grid_bf_pair(make_float4(o[2].re, o[2].im, o[3].re, o[3].im));
          *(uint4 *)grid_at<OM>(g, base) = make_uint4(lo.x, lo.y, hi.x, hi.y);
        } else if (a.g_vec) { /* ng and base multiples of 4: two 16-byte stores */
          float4 *g4 = (float4 *)grid_at<OM>(g, base);
          g4[0] = make_float4(o[0].re, o[0].im, o[1].re, o[1].im);
          g4[1] = make_float4(o[2].re, o[2].im, o[3].re, o[3].im);
        } else {
          for (int k = 0; k < 4; k++)
            if (base + k < ng) grid_put<OM>(g, base + k, o[k].re, o[k].im);
        }
      }
      if (OM && base < ng) {
        /* the lane's sums of its group of four (one sub-block) into the group's slot */
        double t[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
        qpsk_om_group4(o, base, QPSK_GM, own_end, t); /* m0 and base multiples of 4 */
        double *pg = seg + (size_t)(base / 4) * QPSK_OMS;
#pragma unroll
        for (int q = 0; q < QPSK_OMS; q++) pg[q] = t[q];
      }
    }
  } else {
    /* an exact grid: the first output's position, then steps of STAGE_THREADS outputs in
     * integers (the position qpsk_pre_tap gives, without a 64-bit division per output); an
     * inexact one: each output's position */
    unsigned row = 0;
    int64_t off = 0, di = 0;
    unsigned dj = 0;
    if (a.slide == PRE_SLIDE_TRI) {
      /* a step-4/3 grid, sliding: three whole periods per thread (outputs -ph + 9 i .. + 8 of
       * virtual samples 12 i ..; the period's rows 0, 1, 2), those in [0, ng) stored through
       * shared memory; with om the sums of the staged outputs, a chunk a thread (om_tile) */
      const int S = PRE_SLIDE_OUT3 * STAGE_THREADS;
      nsteps = (int)((ng + ph + S - 1) / S);
      for (int it = 0; it < nsteps; it++) {
        const int i = it * STAGE_THREADS + (int)threadIdx.x, kb = PRE_SLIDE_OUT3 * i - ph;
        prx_cf32 o[PRE_SLIDE_OUT3];
        const bool have = kb < ng;
        if (have)
          pre_slide_tri(a.taps, win + qpsk_slide_slot(PRE_SLIDE_OUT3 / 3 * 4 * i, PRE_SLIDE_SH3),
                        o);
        const int64_t k0 = (int64_t)it * S - ph;
        pre_stage_tri<OM>(o, have, k0, ng, win, g);
        if (OM) {
          const int64_t kend = k0 + S < ng ? k0 + S : ng;
          om_tile<false>([&](int x) { return win[tri_tile_slot<true>(x)]; }, k0, kend,
                         pre_own_end(a, ng), Ls4, a.nsub, a.om_cj, a.L, a.om_flat, seg);
        }
      }
    } else if (!OM && a.tri) {
      /* a step-4/3 grid: three consecutive outputs per thread, the period's three tap rows and
       * input offsets the same for every thread (4 samples per period apart) and step (4
       * STAGE_THREADS samples apart) */
      unsigned r3[3];
      int64_t o3[3];
      for (int u = 0; u < 3; u++)
        qpsk_pre_tap(m0 + 3 * (int64_t)threadIdx.x + u, a.rq, a.r, a.Q, a.c, lo, &r3[u], &o3[u]);
      const int d1 = (int)(o3[1] - o3[0]), d2 = (int)(o3[2] - o3[0]);
      const float *t0 = a.bank + (size_t)r3[0] * 2 * a.ntaps,
                  *t1 = a.bank + (size_t)r3[1] * 2 * a.ntaps,
                  *t2 = a.bank + (size_t)r3[2] * 2 * a.ntaps;
      nsteps = (int)((ng + 3 * STAGE_THREADS - 1) / (3 * STAGE_THREADS));
      for (int it = 0; it < nsteps; it++) {
        const int64_t base = (int64_t)it * 3 * STAGE_THREADS + 3 * threadIdx.x;
        if (base < ng) {
          prx_cf32 o[3];
          qpsk_dot3(t0, t1, t2, d1, d2, a.ntaps, win, o3[0] + (int64_t)it * 4 * STAGE_THREADS,
                    QPSK_PAD4, o);
          for (int u = 0; u < 3; u++)
            if (base + u < ng) grid_put<OM>(g, base + u, o[u].re, o[u].im);
        }
      }
    } else {
      if (a.rq >= 0) {
        qpsk_pre_tap(m0 + threadIdx.x, a.rq, a.r, a.Q, a.c, lo, &row, &off);
        qpsk_pre_walk(a.rq, a.Q, STAGE_THREADS, &di, &dj);
      }
      nsteps = (int)((ng + STAGE_THREADS - 1) / STAGE_THREADS);
      for (int it = 0; it < nsteps; it++) {
        const int64_t k = (int64_t)it * STAGE_THREADS + threadIdx.x;
        prx_cf32 o = {0, 0};
        if (k < ng) {
          if (a.rq < 0) qpsk_pre_tap(m0 + k, a.rq, a.r, a.Q, a.c, lo, &row, &off);
          o = dot_f2(bank + (size_t)row * a.ntaps, win + off, a.ntaps);
          grid_put<OM>(g, k, o.re, o.im);
          if (a.rq >= 0) qpsk_pre_walk_next(di, dj, a.Q, &row, &off);
        }
        if (OM)
          om_seg(&o, k, k - lane, m0, own_end, Ls4, a.nsub,
                 seg + (size_t)(it * nwarps + warp) * OM_SEG);
      }
    }
  }
  if (OM) {
    /* each sub-block's sums, in a fixed order: its chunks' in order (the sliding filters,
     * om_tile), its groups' in the order of G (the blocked unit-step filter), else over the
     * warps' steps */
    double *dst = a.omsum + out * (size_t)(a.nsub + 1) * QPSK_OMS;
    /* the sliding filters in one step whose sub-blocks' chunks lie each in one warp (om_tile's
     * chunk i in thread i; at L 512 eight chunks a sub-block, four sub-blocks a warp): each warp
     * adds up its own sub-blocks' chunks, no barrier for the block */
    if (a.slide != PRE_SLIDE_NONE && nsteps == 1 && a.om_cj <= 32 &&
        (a.om_cj & (a.om_cj - 1)) == 0 && (a.nsub + 1) * a.om_cj <= STAGE_THREADS) {
      __syncwarp();
      /* om_cj a power of two dividing 32: 32 / om_cj by a shift */
      const unsigned per = 32u >> (__ffs((int)a.om_cj) - 1), j0 = warp * per;
      for (unsigned i = lane; i < per * QPSK_OMS; i += 32) {
        const unsigned j = j0 + i / QPSK_OMS, q = i % QPSK_OMS;
        if (j > a.nsub) break;
        double v = 0;
        for (unsigned u = 0; u < a.om_cj; u++) v += seg[((size_t)j * a.om_cj + u) * QPSK_OMS + q];
        dst[(size_t)j * QPSK_OMS + q] = v;
      }
      return;
    }
    __syncthreads();
    for (unsigned i = threadIdx.x; i < (a.nsub + 1) * QPSK_OMS; i += STAGE_THREADS) {
      const unsigned j = i / QPSK_OMS, q = i % QPSK_OMS;
      double v = 0;
      if (a.slide != PRE_SLIDE_NONE) {
        for (unsigned u = 0; u < a.om_cj; u++) v += seg[((size_t)j * a.om_cj + u) * QPSK_OMS + q];
      } else if (BLK) {
        int64_t G0, G1;
        qpsk_om_groups(j, a.nsub, Ls4, QPSK_GM, ng, &G0, &G1);
        for (int64_t G = G0; G < G1; G++) v += seg[G * QPSK_OMS + q];
      } else {
        for (int t = 0; t < nsteps * nwarps; t++) {
          const double *sg = seg + (size_t)t * OM_SEG;
          const unsigned jlo = (unsigned)sg[0];
          if (jlo == j) v += sg[1 + q];
          if (jlo + 1 == j) v += sg[1 + QPSK_OMS + q];
        }
      }
      dst[i] = v;
    }
  }
}

typedef struct {
  const void *rows;
  size_t stride;
  int64_t b0, n_total;
  unsigned nblk, L, Lmax;
  double sps;
  const float *bank;  /* Q rows of 2 ntaps floats (re, im lanes) */
  const float *bank1; /* the same rows, one lane (ntaps floats): the pairs' taps */
  unsigned Q, ntaps;
  int c;
  int pair; /* the pairs' stride in symbols (BLK 2: qpsk_mf_pairing) */
  const qpsk_mf_block *blk;
  prx_cf32 *sym;
  double *sums;
  const double *mix; /* per-channel mixing frequencies (MIX kernels) */
} mf_args;

/* The start of a matched-filter thread block (either kernel): block out's record p and window
 * [lo, hi) (qpsk_mf_window_of); returns the symbols it owns, k1 - k0. */
__device__ __forceinline__ int64_t mf_block_begin(const mf_args &a, size_t out, qpsk_mf_block *p,
                                                  int64_t *lo, int64_t *hi) {
  *p = a.blk[out];
  qpsk_mf_window_of(p->t.b, a.L, a.sps, a.c, a.ntaps, lo, hi);
  return p->t.k1 - p->t.k0;
}

/* A block that owns no symbol: its zero sums, and no loads. */
__device__ __forceinline__ void mf_block_empty(const mf_args &a, size_t out) {
  if (threadIdx.x < 5) a.sums[5 * out + threadIdx.x] = 0;
}

/* Stage mf. Grid (nblk, C), STAGE_THREADS threads; dynamic shared memory: the block's matched
 * filter window (mf_win samples, cf32, in the layout of BLK: qpsk_stages_mf.cuh). The window is
 * loaded once, less the span's DC, at unit level and de-rotated by the NCO (the phase theta +
 * omega t in double, reduced to one turn, then sincosf: the CPU's anchored float recurrence agrees
 * to ~1e-6); samples beyond the stream read as the DC (0 after its removal), non-finite ones as 0
 * before it. Where the whole window lies in the stream (every block but the stream's first and
 * last) it is staged without per-sample bounds, in 32-bit indices (stage_window, the loop pre's
 * staging shares). Each thread then evaluates the matched filter at a share of the block's
 * instants (the taps of the rounded phase, from L1/L2) and the V&V/M2M4 terms of its symbols,
 * summed over the block in double:
 * - BLK 0: one symbol a thread (PAD: the MF_PAD16 window, else MF_FLAT);
 * - BLK 1 (sps 4, quads of consecutive symbols): qpsk_mf4_kernel, below;
 * - BLK 2 (P sps = 16, sps 16/3: P = 3): the block's full units of 32 P symbols as pairs P
 *   apart on one tap row (16 samples: the pair reads ntaps + 16 samples, qpsk_dot2n), item i
 *   (thread i, then i + 256, ...) the unit u = g / P and class r = g mod P of g = i / 16, lane
 *   j = i mod 16 the symbols k = k0 + 32 P u + r + P (2 (j mod 8) + 16 (j / 8)) and k + P (a
 *   half-warp's inputs 32 samples apart, lanes 8-15 256 samples after lanes 0-7: on the MF_PAD32
 *   window 33 slots apart, 16 distinct bank pairs), qpsk_dot2n where both lie on one run
 *   (mf_dot2n, unrolled, at MF3_NT taps; the positions by mf4_tap4's 32-bit offsets); then
 *   the last, partial unit's nt symbols two a thread (k and k + ceil(nt / 2)), so that each
 *   thread has one item at n = 512 (240 pairs and 16 tail items: no thread waits for a second
 *   pass at the block's barrier). A warp that holds a tail item takes qpsk_dot2x32 (any two
 *   symbols) for all its lanes, and so does a full unit's pair whose symbols lie on two runs.
 * Every symbol sums its taps in qpsk_dot1's order: the same value whichever path takes it. BLK 2
 * stages its window with the roundings its SASS had pinned (mf4_sample_rot, mf4_nco_advance) and
 * sums its V&V terms with the lanes sharing block_sum's trees (mf_block_sum4): the same values. */
template <bool HALF, bool PAD, bool MIX, int BLK, bool PI4>
__global__ void __launch_bounds__(STAGE_THREADS, STAGE_MF_MIN_BLOCKS) qpsk_mf_kernel(mf_args a) {
  static_assert(BLK != 1, "sps 4's pairs: qpsk_mf4_kernel");
  constexpr int LAYOUT = BLK == 2 ? MF_PAD32 : PAD ? MF_PAD16 : MF_FLAT;
  extern __shared__ __align__(16) float2 win[];
  __shared__ double scratch[(STAGE_THREADS / 32) * 5];
  const unsigned c = blockIdx.y, blk = blockIdx.x;
  const size_t out = (size_t)c * a.nblk + blk;
  qpsk_mf_block p;
  int64_t lo, hi;
  const int64_t n = mf_block_begin(a, out, &p, &lo, &hi);
  if (n <= 0) return mf_block_empty(a, out);
  const int64_t L = a.L;
  const prx_cf32 dc = {p.dc[0], p.dc[1]};
  /* the NCO: each thread's first rotation exact, then a float recurrence by its stride */
  prx_cf32 rot = qpsk_nco_rot(p.theta, p.omega, threadIdx.x);
  const prx_cf32 step = qpsk_nco_rot(0, p.omega, STAGE_THREADS);
  /* each sample less the DC, at unit level, de-rotated; the same values in the same order
   * either way */
  auto inner = [&rot, step, dc, gain = p.gain](prx_cf32 v, int t) {
    if (BLK == 2) {
      /* the roundings this kernel's SASS has, pinned (mf4_sample_rot, mf4_nco_advance) */
      v = mf4_sample_rot(mf4_in_sample(v), dc, gain, rot);
      rot = mf4_nco_advance(rot, step);
    } else {
      v = qpsk_mf_sample_rot(qpsk_window_sample(v, 1, dc), dc, gain, rot);
      rot = qpsk_nco_advance(rot, step);
    }
    win[mf_slot32<LAYOUT>(t, 0)] = make_float2(v.re, v.im);
  };
  auto edge = [&rot, step, dc, gain = p.gain](prx_cf32 v, int64_t t, int64_t, int in) {
    if (BLK == 2) {
      v = mf4_sample_rot(qpsk_window_sample(v, in, dc), dc, gain, rot);
      rot = mf4_nco_advance(rot, step);
    } else {
      v = qpsk_mf_sample_rot(qpsk_window_sample(v, in, dc), dc, gain, rot);
      rot = qpsk_nco_advance(rot, step);
    }
    win[mf_slot<LAYOUT>(t, 0)] = make_float2(v.re, v.im);
  };
  stage_window<HALF, MIX>(a.rows, a.stride, c, a.n_total, lo, hi, a.mix, dc, inner, edge);
  __syncthreads();
  const float2 *bank = (const float2 *)a.bank;
  prx_cf32 *y = a.sym + out * (size_t)a.Lmax;
  float acc[4] = {0, 0, 0, 0};
  if (BLK == 2) {
    /* items: the full units' pairs (16 P a unit), then the tail's symbols two at a time */
    const int P = a.pair, U = 32 * P;
    const int nf = (int)(n / U) * 16 * P, nt = (int)(n - n / U * U), nt2 = (nt + 1) / 2;
    const float *bank1 = a.bank1;
    const mf4_pos pz = mf4_pos_of(&p.t, L, a.sps, lo);
    for (int i = threadIdx.x; i < nf + nt2; i += STAGE_THREADS) {
      int64_t kk[2];
      if (i < nf) {
        /* sps 16/3's P = 3 divides by a multiply */
        const int g = i >> 4, u = P == 3 ? g / 3 : g / P, j = i & 15;
        kk[0] = p.t.k0 + (int64_t)U * u + (g - u * P) + P * (2 * (j & 7) + 16 * (j >> 3));
        kk[1] = kk[0] + P;
      } else {
        kk[0] = p.t.k1 - nt + (i - nf);
        kk[1] = kk[0] + nt2;
      }
      const int m = kk[1] < p.t.k1 ? 2 : 1;
      unsigned rows[2] = {0, 0};
      int64_t offs[2] = {0, 0};
#pragma unroll
      for (int q = 0; q < 2; q++) {
        /* mf4_tap4's 32-bit offsets from k0 (qpsk_mf_tap's rows and offsets) */
        if (q < m)
          mf4_tap4(&p.t, &pz, L, a.sps, (int)(kk[q] - p.t.k0), (int)n, 1, a.Q, a.c, &rows[q],
                   &offs[q]);
      }
      if (m == 1) rows[1] = rows[0], offs[1] = offs[0];
      const bool pair = m == 2 && rows[1] == rows[0] && offs[1] == offs[0] + 16;
      /* the warp that holds a tail item: every lane the general product (one code) */
      const bool tail = (i | 31) >= nf;
      prx_cf32 v[2];
      if (pair && !tail) {
        if (a.ntaps == MF3_NT)
          mf_dot2n<MF3_NT>(bank1 + (size_t)rows[0] * MF3_NT, win, (int)offs[0], v);
        else
          qpsk_dot2n(bank1 + (size_t)rows[0] * a.ntaps, a.ntaps, win, (int)offs[0], v);
      } else
        qpsk_dot2x32(bank1 + (size_t)rows[0] * a.ntaps, bank1 + (size_t)rows[1] * a.ntaps, a.ntaps,
                     win, (int)offs[0], (int)offs[1], v);
#pragma unroll
      for (int q = 0; q < 2; q++) {
        if (q < m) {
          if (PI4) v[q] = qpsk_cmul(v[q], qpsk_pi4_factor((unsigned)kk[q]));
          y[kk[q] - p.t.k0] = v[q];
          qpsk_sum_terms(v[q], acc);
        }
      }
    }
  } else {
    for (int64_t k = p.t.k0 + threadIdx.x; k < p.t.k1; k += STAGE_THREADS) {
      unsigned row;
      int64_t off;
      qpsk_mf_tap(&p.t, L, a.sps, lo, k, a.Q, a.c, &row, &off);
      prx_cf32 v = mf_dot1<LAYOUT>(bank + (size_t)row * a.ntaps, win, off, 0, a.ntaps);
      if (PI4) v = qpsk_cmul(v, qpsk_pi4_factor((unsigned)k));
      y[k - p.t.k0] = v;
      qpsk_sum_terms(v, acc);
    }
  }
  if (BLK == 2) {
    mf_block_sum4(acc, scratch);
    mf_store_sums(scratch, a.sums, out, n);
    return;
  }
  double s[5] = {acc[0], acc[1], acc[2], acc[3], 0};
  block_sum<5>(s, scratch);
  if (threadIdx.x == 0) {
    s[4] = (double)n;
    for (int q = 0; q < 5; q++) a.sums[5 * out + q] = s[q];
  }
}

/* Stage mf at sps 4: quads of consecutive symbols, grid (nblk, C), MF4_THREADS threads (two
 * chains of a STAGE_THREADS block's window samples a thread: qpsk_stages_mf.cuh), the window, its
 * staging and the V&V sums as qpsk_mf_kernel's. The window is in the MF_PAD16X2 layout, shifted so
 * that symbol k0's first input starts a 16-sample group; thread i takes the quads k0 + 4i ..
 * k0 + 4i + 3 (+ 512 j), the symbols of a STAGE_THREADS block's threads 2i and 2i + 1 where
 * such a block takes a pair a thread. A quad on one run of the timing whose first input starts a
 * group (every quad of the block's first run, and of the others while the run's offsets keep
 * their residue) takes qpsk_dot4c (each chunk of four samples read once for the four symbols,
 * 16-byte loads at fixed offsets; mf4_dot4c, unrolled, at MF4_NT taps), a quad on one run whose
 * residue moved qpsk_dot4g (each slot computed), any other (an edge of a run, the block's last
 * symbols) one product per symbol. A quad of one run takes its positions from its first symbol's
 * (mf4_quad: qpsk_mf_tap4's values where its error bounds hold, about all quads), any other from
 * mf4_tap4 (qpsk_mf_tap4's values by 32-bit offsets); a quad's symbols are stored as two 16-byte
 * words where the block's row of symbols is 16-byte aligned, and the V&V terms of each of the
 * quad's pairs are summed in float (a STAGE_THREADS thread's sums), their warp sums in double by
 * the shuffle tree (its levels shared by the lanes) and in the order of a STAGE_THREADS block's
 * eight warps: every symbol and sum is that pair form's bit for bit
 * (the window's roundings pinned: mf4_nco_advance). Against pairs of symbols a thread: the
 * window's shared-memory loads a symbol 14 -> 8 and the tap loads 6.5 -> 3.25 (bench/GPU_NOTES.md,
 * s12/mfq). */
template <bool HALF, bool MIX, bool PI4>
__global__ void __launch_bounds__(MF4_THREADS, MF4_MIN_BLOCKS) qpsk_mf4_kernel(mf_args a) {
  constexpr int LAYOUT = MF_PAD16X2;
  extern __shared__ __align__(16) float2 win[];
  __shared__ double scratch[(STAGE_THREADS / 32) * 5];
  const unsigned c = blockIdx.y, blk = blockIdx.x;
  const size_t out = (size_t)c * a.nblk + blk;
  qpsk_mf_block p;
  int64_t lo, hi;
  const int64_t n = mf_block_begin(a, out, &p, &lo, &hi);
  if (n <= 0) return mf_block_empty(a, out);
  const int64_t L = a.L;
  const int sh = (int)(-mf_first_off(&p.t, L, a.sps, lo, a.Q, a.c) & 15);
  const prx_cf32 dc = {p.dc[0], p.dc[1]};
  /* the NCO chains of a STAGE_THREADS block's threads i and i + MF4_THREADS (stage_window's) */
  prx_cf32 rot[2] = {qpsk_nco_rot(p.theta, p.omega, threadIdx.x),
                     qpsk_nco_rot(p.theta, p.omega, threadIdx.x + MF4_THREADS)};
  const prx_cf32 step = qpsk_nco_rot(0, p.omega, STAGE_THREADS);
  auto inner = [&rot, step, dc, gain = p.gain](prx_cf32 v, int slot, int q) {
    v = mf4_sample_rot(mf4_in_sample(v), dc, gain, rot[q]);
    rot[q] = mf4_nco_advance(rot[q], step);
    win[slot] = make_float2(v.re, v.im);
  };
  auto edge = [&rot, step, dc, sh, gain = p.gain](prx_cf32 v, int64_t t, int64_t, int in, int q) {
    v = mf4_sample_rot(qpsk_window_sample(v, in, dc), dc, gain, rot[q]);
    rot[q] = mf4_nco_advance(rot[q], step);
    win[mf_slot<LAYOUT>(t, sh)] = make_float2(v.re, v.im);
  };
  mf4_stage_window<HALF, MIX>(a.rows, a.stride, c, a.n_total, lo, hi, sh, a.mix, dc, inner, edge);
  __syncthreads();
  const float2 *bank = (const float2 *)a.bank;
  prx_cf32 *y = a.sym + out * (size_t)a.Lmax;
  const bool y16 = ((uintptr_t)y & 15) == 0; /* quads start at k - k0 a multiple of 4 */
  const int nn = (int)n;
  /* the quad k0 + d .. k0 + d + 3 (fewer at the block's end, m of them returned): its symbols in v
   * and stored. The timing is read from the record where the quad is placed (the symbols'
   * stores in between: a load, not a register held across the product), and a block of at most
   * 4 MF4_THREADS symbols (at most a quad a thread) takes it apart from the loop, its sums from
   * zero: nothing is held across its product but what follows it. */
  const qpsk_mf_timing *tp = &a.blk[out].t;
  auto one_quad = [&](int d, prx_cf32 v[4]) {
    const qpsk_mf_timing t = *tp;
    unsigned rows[4] = {0, 0, 0, 0};
    int64_t offs[4] = {0, 0, 0, 0};
    const int m = nn - d < 4 ? nn - d : 4;
    const mf4_pos pz = mf4_pos_of(&t, L, a.sps, lo);
    bool quad;
    unsigned row0;
    int off0;
    if (mf4_quad(&t, &pz, L, a.sps, d, nn, a.Q, a.c, &row0, &off0)) {
      quad = true;
#pragma unroll
      for (int q = 0; q < 4; q++) rows[q] = row0, offs[q] = off0 + 4 * q;
    } else {
      mf4_tap4(&t, &pz, L, a.sps, d, nn, m, a.Q, a.c, rows, offs);
      quad = m == 4 && rows[1] == rows[0] && rows[2] == rows[0] && rows[3] == rows[0] &&
             offs[1] == offs[0] + 4 && offs[2] == offs[0] + 8 && offs[3] == offs[0] + 12;
    }
    const int u = (int)offs[0] + sh;
    if (quad && (u & 15) == 0) {
      if (a.ntaps == MF4_NT)
        mf4_dot4c<MF4_NT>(a.bank1 + (size_t)rows[0] * MF4_NT, win + qpsk_win_slot16x2(u), v);
      else
        qpsk_dot4c(a.bank1 + (size_t)rows[0] * a.ntaps, a.ntaps, win + qpsk_win_slot16x2(u), v);
    } else if (quad) {
      qpsk_dot4g(a.bank1 + (size_t)rows[0] * a.ntaps, a.ntaps, win, u, v);
    } else {
#pragma unroll
      for (int r = 0; r < 4; r++)
        if (r < m)
          v[r] = mf_dot1<LAYOUT>(bank + (size_t)rows[r] * a.ntaps, win, offs[r], sh, a.ntaps);
    }
    if (PI4)
#pragma unroll
      for (int r = 0; r < 4; r++)
        if (r < m) v[r] = qpsk_cmul(v[r], qpsk_pi4_factor((unsigned)(t.k0 + d + r)));
    /* a quad's four symbols as two 16-byte stores where the block's row of symbols allows */
    float2 *yk = (float2 *)(y + d);
    if (m == 4 && y16) {
      *(float4 *)yk = make_float4(v[0].re, v[0].im, v[1].re, v[1].im);
      *(float4 *)(yk + 2) = make_float4(v[2].re, v[2].im, v[3].re, v[3].im);
    } else {
#pragma unroll
      for (int r = 0; r < 4; r++)
        if (r < m) yk[r] = make_float2(v[r].re, v[r].im);
    }
    return m;
  };
  /* the quad's V&V terms added: its first pair's to acc[0], its second's to acc[1] */
  auto add_terms = [](const prx_cf32 v[4], int m, float acc[2][4]) {
#pragma unroll
    for (int r = 0; r < 4; r++)
      if (r < m) qpsk_sum_terms(v[r], acc[r >> 1]);
  };
  /* block_sum over a STAGE_THREADS block's eight warps: its warp w is this block's half-warp w
   * (threads 16w .. 16w + 15), its lane 2h + e this half-warp's lane h, pair e. The shuffle tree
   * of block_sum (lane l += lane l + o, o = 16 .. 1) is, for o >= 2, lane h += lane h + o / 2 of
   * the same pair within the half-warp, and for o = 1 the two pairs' sums added. */
  auto warp_sums = [&](const float acc[2][4]) {
    const unsigned h = threadIdx.x & 15;
    /* The same trees with the half-warp's lanes sharing them: the eight sums (pair e, term j) are
     * halved at each level, a lane keeping the half its bit selects and sending the other to its
     * partner (xor 8, 4, 2), so that lane h ends with sum (h >> 3, (h >> 1) & 3) over the
     * half-warp less the last level (xor 1); each addition is one of the tree's (a + b = b + a
     * exactly), then pair 0's and pair 1's totals added. The first level exchanges the floats
     * (exact in double). */
    double x[4];
    {
      const bool b = h & 8;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float keep = b ? acc[1][i] : acc[0][i], send = b ? acc[0][i] : acc[1][i];
        x[i] = (double)keep + (double)__shfl_xor_sync(0xffffffffu, send, 8, 16);
      }
    }
    {
      const bool b = h & 4;
#pragma unroll
      for (int i = 0; i < 2; i++) {
        const double keep = b ? x[2 + i] : x[i], send = b ? x[i] : x[2 + i];
        x[i] = keep + __shfl_xor_sync(0xffffffffu, send, 4, 16);
      }
    }
    {
      const bool b = h & 2;
      const double keep = b ? x[1] : x[0], send = b ? x[0] : x[1];
      x[0] = keep + __shfl_xor_sync(0xffffffffu, send, 2, 16);
    }
    x[0] += __shfl_xor_sync(0xffffffffu, x[0], 1, 16);
    x[0] += __shfl_xor_sync(0xffffffffu, x[0], 8, 16);
    if (h < 8 && !(h & 1)) scratch[(threadIdx.x >> 4) * 5 + (h >> 1)] = x[0];
  };
  /* the V&V terms of the quads' first pairs (a STAGE_THREADS thread 2i's) and second (2i + 1's);
   * each branch its own sums, so that the one-quad branch holds none across its product */
  const int d0 = 4 * (int)threadIdx.x;
  prx_cf32 v[4];
  if (nn <= 4 * MF4_THREADS) {
    const int m = d0 < nn ? one_quad(d0, v) : 0;
    float acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    add_terms(v, m, acc);
    warp_sums(acc);
  } else {
    float acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    for (int d = d0; d < nn; d += 4 * MF4_THREADS) add_terms(v, one_quad(d, v), acc);
    warp_sums(acc);
  }
  __syncthreads();
  mf_store_sums(scratch, a.sums, out, n);
}

/* Stage om. Grid (nblk, C), STAGE_THREADS threads, static shared memory for the sub-block sums
 * and the record. Warp w takes sub-blocks w, w + 8, ...: its lanes load a sub-block's grid values
 * (up to OM_BATCH per lane in flight before the first is used: the kernel is bound by the
 * latency of these loads otherwise), bring them to unit level less the DC (written back in
 * place: the x4 stage reads them so), sum |v|^2 in double (each lane one residue mod 4 of the
 * grid index, so its term is +-|v|^2 on one axis), and reduce over the warp (a fixed order: no
 * atomics, the same sums on every run); the margins and the grid past the stream's end are
 * levelled by all threads. The record is then written by many threads at once: the sub-blocks'
 * fields by one thread each, the drift correlations between complete sub-blocks 2^l apart (in
 * the CPU's order) and the counts by thread 0. */
#define OM_BATCH 8
__global__ void __launch_bounds__(STAGE_THREADS)
    qpsk_om_kernel(int64_t b0, unsigned nblk, unsigned L, unsigned nsub, unsigned Ls,
                   unsigned nlags, const qpsk_om_in *in, prx_cf32 *grid, qpsk_om_out *out) {
  __shared__ double xs[QPSK_SUB_MAX][2];
  __shared__ int64_t len[QPSK_SUB_MAX];
  const unsigned c = blockIdx.y, blk = blockIdx.x, lane = threadIdx.x & 31;
  const size_t o = (size_t)c * nblk + blk;
  const qpsk_om_in p = in[o];
  const int64_t b = b0 + blk, m0 = 4 * b * (int64_t)L, ng = 4 * (int64_t)L + 2 * QPSK_GM;
  const int64_t Ls4 = 4 * (int64_t)Ls;
  int64_t g_hi = m0 + 4 * (int64_t)L;
  if (g_hi > p.g_hi) g_hi = p.g_hi;
  float2 *z = (float2 *)(grid + o * (size_t)ng);
  for (unsigned j = threadIdx.x >> 5; j <= nsub; j += STAGE_THREADS / 32) {
    int64_t a, e;
    qpsk_om_sub_span(m0, L, Ls4, nsub, g_hi, j, &a, &e);
    double x0 = 0, x1 = 0;
    for (int64_t mb = a; mb < e; mb += 32 * OM_BATCH) {
      float2 v[OM_BATCH];
#pragma unroll
      for (int i = 0; i < OM_BATCH; i++) {
        const int64_t m = mb + lane + 32 * i;
        v[i] = m < e ? z[QPSK_GM + (m - m0)] : make_float2(0, 0);
      }
#pragma unroll
      for (int i = 0; i < OM_BATCH; i++) {
        const int64_t m = mb + lane + 32 * i;
        if (m < e) {
          const prx_cf32 u = qpsk_om_level(prx_cf32{v[i].x, v[i].y}, p.D, p.gain);
          z[QPSK_GM + (m - m0)] = make_float2(u.re, u.im);
          const double pw = (double)u.re * u.re + (double)u.im * u.im;
          switch ((int)(m & 3)) { /* exp(-j 2 pi m / 4) = 1, -j, -1, j */
          case 0: x0 += pw; break;
          case 1: x1 -= pw; break;
          case 2: x0 -= pw; break;
          default: x1 += pw; break;
          }
        }
      }
    }
    for (int sh = 16; sh > 0; sh >>= 1) {
      x0 += __shfl_down_sync(0xffffffffu, x0, sh);
      x1 += __shfl_down_sync(0xffffffffu, x1, sh);
    }
    if (lane == 0) {
      xs[j][0] = x0;
      xs[j][1] = x1;
      len[j] = e > a ? e - a : 0;
    }
  }
  /* the margins and what lies past the stream's end, levelled the same way: indices 0 .. GM - 1,
   * then GM + done .. ng - 1 */
  const int64_t done = g_hi > m0 ? g_hi - m0 : 0, nrest = ng - done;
  for (int64_t i = threadIdx.x; i < nrest; i += STAGE_THREADS) {
    const int64_t k = i < QPSK_GM ? i : i + done;
    const float2 v = z[k];
    const prx_cf32 u = qpsk_om_level(prx_cf32{v.x, v.y}, p.D, p.gain);
    z[k] = make_float2(u.re, u.im);
  }
  __syncthreads();
  /* the sub-blocks' count: the first empty one ends them (as stage_om's loop) */
  unsigned nj = 0;
  while (nj <= nsub && len[nj] > 0) nj++;
  qpsk_om_out *r = out + o;
  for (unsigned j = threadIdx.x; j < QPSK_SUB_MAX; j += STAGE_THREADS) {
    const bool on = j < nj;
    r->osub[j][0] = on ? xs[j][0] : 0;
    r->osub[j][1] = on ? xs[j][1] : 0;
    r->osub_t[j] = on ? (double)(2 * (m0 + Ls4 * j) + len[j] - 1) / 8.0 : 0;
  }
  if (threadIdx.x == 0) {
    double corr[QPSK_LAGS][2];
    for (unsigned l = 0; l < QPSK_LAGS; l++) corr[l][0] = corr[l][1] = 0;
    for (unsigned j = 0; j < nj; j++) {
      if (j < nsub && len[j] == Ls4) {
        for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
          const double *q = xs[j - (1u << l)];
          corr[l][0] += xs[j][0] * q[0] + xs[j][1] * q[1];
          corr[l][1] += xs[j][1] * q[0] - xs[j][0] * q[1];
        }
      }
    }
    for (unsigned l = 0; l < QPSK_LAGS; l++) {
      r->corr[l][0] = corr[l][0];
      r->corr[l][1] = corr[l][1];
    }
    r->om_n = (double)done;
    r->nsub = nj;
    r->pad = 0;
  }
}

/* four consecutive cf32 values from p, 16-byte aligned, as two 16-byte loads (x4's grid values,
 * out's symbols) */
__device__ __forceinline__ void load4_aligned(const prx_cf32 *p, prx_cf32 v[4]) {
  const float4 *q = (const float4 *)p;
  const float4 a = q[0], b = q[1];
  v[0] = prx_cf32{a.x, a.y};
  v[1] = prx_cf32{a.z, a.w};
  v[2] = prx_cf32{b.x, b.y};
  v[3] = prx_cf32{b.z, b.w};
}

/* Stage x4. Grid (nblk, C), STAGE_THREADS threads: one thread per owned symbol, the Farrow
 * interpolation of 4 levelled grid values at its run's timing and the 4th power with magnitude
 * weighting (qpsk_stage_math.h), written at its place in the span's sequence. Reads the grid once,
 * writes 8 bytes per symbol. LEVEL: the grid as pre_om left it (bfloat16 pairs:
 * qpsk_grid_bf16's values), each value read levelled here (less the DC, at unit level: om's
 * arithmetic). A run's grid index g and coefficients (double
 * arithmetic, qpsk_x4_run_at) serve all its symbols (symbol k of run ka: g + 4 (k - ka)): where the
 * block has at most STAGE_THREADS runs (at 512-symbol blocks: runs of 2 symbols or more, a clock
 * offset within 5000 ppm) one thread per run forms them in shared memory, else each symbol forms
 * its own (qpsk_x4_tap); the same values either way. A symbol's four values are two 16-byte loads
 * (LEVEL: two 8-byte loads of bfloat16 pairs, widened) where they lie aligned (the grid aligned,
 * the symbol's g odd: every symbol of the run alike). STAGE (x4_stage_of: a 16-byte aligned grid
 * whose block fits X4_STAGE_MAX bytes): the block's grid is first copied into shared memory as it
 * is by all its threads, its loads issued before the runs are formed, so that the block's reads are
 * in flight from its start rather than after its table; the values and arithmetic are the same.
 * With rows (x4_rows), each value also goes into the CFO stage's row at the value's place from the
 * channel's first block's w0 (those below rows.S), so that cfo_fed need not copy the windows. */
/* the 16-byte loads a thread issues before it stores the first (STAGE): 5 x STAGE_THREADS cover a
 * 512-symbol block's grid of 1028 in one pass */
#define X4_STAGE_BATCH 5
/* n 16-byte words from src into shared memory at dst by the thread block, X4_STAGE_BATCH loads a
 * thread issued before the first is stored (read after a barrier) */
__device__ __forceinline__ void stage_words(const uint4 *src, uint4 *dst, unsigned n) {
  for (unsigned i0 = threadIdx.x; i0 < n; i0 += X4_STAGE_BATCH * STAGE_THREADS) {
    uint4 b[X4_STAGE_BATCH];
#pragma unroll
    for (int u = 0; u < X4_STAGE_BATCH; u++) {
      const unsigned i = i0 + u * STAGE_THREADS;
      b[u] = i < n ? src[i] : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < X4_STAGE_BATCH; u++) {
      const unsigned i = i0 + u * STAGE_THREADS;
      if (i < n) dst[i] = b[u];
    }
  }
}
template <bool LEVEL, bool STAGE>
__global__ void __launch_bounds__(STAGE_THREADS, LEVEL ? STAGE_X4_LEVEL_MIN_BLOCKS : 1)
    qpsk_x4_kernel(unsigned nblk, unsigned L, const qpsk_mf_block *blk, const int64_t *w0,
                   const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w, size_t w_stride,
                   cfo_rows_out rows, int pi4) {
  __shared__ float4 run_c[STAGE_THREADS];
  __shared__ int run_g[STAGE_THREADS];
  extern __shared__ float4 zs4[]; /* STAGE: the block's grid */
  const unsigned c = blockIdx.y;
  const size_t o = (size_t)c * nblk + blockIdx.x;
  /* (the records' loads issued before the grid's, used after them) */
  const qpsk_mf_timing t = blk[o].t;
  const int64_t ng = 4 * (int64_t)L + 2 * QPSK_GM;
  const prx_cf32 *z = grid + o * (size_t)ng;
  const __nv_bfloat162 *zb = (const __nv_bfloat162 *)grid + o * (size_t)ng; /* LEVEL */
  prx_cf32 *dst = w + (size_t)c * w_stride + w0[o];
  prx_cf32 D = {0, 0};
  float gain = 1;
  if (LEVEL) {
    D = in[o].D;
    gain = in[o].gain;
  }
  if (STAGE) {
    /* the block's grid into shared memory as it is (pre_om's bfloat16 pairs: 4 bytes a value,
     * each symbol widening its four as it reads them; pre's floats: 8) */
    stage_words(LEVEL ? (const uint4 *)zb : (const uint4 *)z, (uint4 *)zs4,
                (unsigned)(ng * (LEVEL ? 4 : 8) / 16));
    if (LEVEL)
      zb = (const __nv_bfloat162 *)zs4;
    else
      z = (const prx_cf32 *)zs4;
  }
  const int64_t n = t.k1 - t.k0, R = qpsk_x4_run_len(&t);
  const bool table = n <= R * STAGE_THREADS; /* (the same for the whole thread block) */
  /* the CFO row's point of this block's first value (i0; written where 0 <= i < S) */
  float2 *row = NULL;
  int64_t i0 = 0;
  if (rows.buf) {
    row = rows.buf + (size_t)c * rows.stride;
    i0 = w0[o] - w0[(size_t)c * nblk];
  }
  if (table) {
    if ((int64_t)threadIdx.x * R < n) {
      float cf[4];
      run_g[threadIdx.x] =
          (int)qpsk_x4_run_at(&t, L, QPSK_GM, t.k0 + (int64_t)threadIdx.x * R, R, cf);
      run_c[threadIdx.x] = make_float4(cf[0], cf[1], cf[2], cf[3]);
    }
  }
  if (table || STAGE) __syncthreads();
  /* (ng is even: every block's z alike; the staged grid is) */
  const bool vec = STAGE || ((uintptr_t)grid & 15) == 0;
  for (int64_t k = t.k0 + threadIdx.x; k < t.k1; k += STAGE_THREADS) {
    int64_t g;
    float cf[4];
    if (table) {
      const uint32_t dk = (uint32_t)(k - t.k0), j = R >= n ? 0 : dk / (uint32_t)R;
      const float4 q = run_c[j];
      cf[0] = q.x;
      cf[1] = q.y;
      cf[2] = q.z;
      cf[3] = q.w;
      g = run_g[j] + 4 * (int64_t)(dk - j * (uint32_t)R);
    } else
      qpsk_x4_tap(&t, L, QPSK_GM, k, &g, cf);
    prx_cf32 v[4];
    if (LEVEL) {
      /* the four bfloat16 values, as two 8-byte loads from the staged block where they lie on 8
       * bytes (g odd: every symbol of the run alike) */
      __nv_bfloat162 h[4];
      const __nv_bfloat162 *p = zb + (g - 1);
      if (STAGE && (g & 1)) {
        const uint2 a = ((const uint2 *)p)[0], b = ((const uint2 *)p)[1];
        memcpy(h, &a, sizeof a);
        memcpy(h + 2, &b, sizeof b);
      } else {
        for (int i = 0; i < 4; i++) h[i] = p[i];
      }
      for (int i = 0; i < 4; i++) {
        const float2 f = grid_bf_float(h[i]);
        v[i] = prx_cf32{f.x, f.y};
      }
    } else if (vec && (g & 1))
      load4_aligned(z + g - 1, v);
    else
      for (int i = 0; i < 4; i++) v[i] = z[g - 1 + i];
    if (LEVEL)
      for (int i = 0; i < 4; i++) v[i] = qpsk_om_level(v[i], D, gain);
    prx_cf32 x = qpsk_x4_one(v, cf);
    if (pi4) x = qpsk_pi4_x4(x, k);
    dst[k - t.k0] = x;
    if (row) {
      const int64_t i = i0 + (k - t.k0);
      if (i >= 0 && i < (int64_t)rows.S) row[i] = make_float2(x.re, x.im);
    }
  }
}

/* Stage om from pre's sums: OM_SUMS_RECS consecutive records a thread block, each built whole in
 * shared memory as qpsk_om_combine builds it and written out as consecutive 8-byte words (a record
 * is 888 bytes: written field by field from a warp's lanes, its stores are partial lines). The
 * work goes to the block's threads in three phases: a record's span (its own grid's start m0 and
 * end below g_hi, the sub-blocks it holds nj and the complete ones nfull, a prefix of them) by one
 * thread a record; sub-block j's value and centre (qpsk_oms_value) by one thread a (record, j),
 * flattened over the records so that every lane has one, the slots past nsub zeroed beside them;
 * lag l's drift correlation by one thread a (record, l), its terms added in the order of j as
 * qpsk_om_combine adds them (the complete sub-blocks j >= 2^l). Bounded to 32 registers (8 thread
 * blocks a multiprocessor): the 1024 thread blocks of 1024 channels x 16 blocks run in one wave. */
#define OM_SUMS_RECS 16
#define OM_SUMS_THREADS 256
#define OM_SUMS_MIN_BLOCKS 8
#define OM_SUMS_WORDS (sizeof(qpsk_om_out) / sizeof(double))
static_assert(sizeof(qpsk_om_out) % sizeof(double) == 0, "om_sums copies records as doubles");
__global__ void __launch_bounds__(OM_SUMS_THREADS, OM_SUMS_MIN_BLOCKS)
    qpsk_om_sums_kernel(int64_t b0, unsigned nblk, size_t nb, unsigned L, unsigned nsub,
                        unsigned Ls, unsigned nlags, const qpsk_om_in *in, const double *omsum,
                        qpsk_om_out *out) {
  __shared__ qpsk_om_out rec[OM_SUMS_RECS];
  __shared__ int64_t r_m0[OM_SUMS_RECS], r_hi[OM_SUMS_RECS];
  __shared__ prx_cf32 r_D[OM_SUMS_RECS];
  __shared__ float r_gain[OM_SUMS_RECS];
  __shared__ unsigned r_full[OM_SUMS_RECS];
  const unsigned t = threadIdx.x;
  const size_t o0 = (size_t)blockIdx.x * OM_SUMS_RECS;
  const unsigned nr = nb - o0 < OM_SUMS_RECS ? (unsigned)(nb - o0) : OM_SUMS_RECS;
  const unsigned nv = nsub + 1 < QPSK_SUB_MAX ? nsub + 1 : QPSK_SUB_MAX; /* slots in use */
  const int64_t Ls4 = 4 * (int64_t)Ls;
  if (t < nr) {
    const size_t o = o0 + t;
    const qpsk_om_in p = in[o];
    const int64_t m0 = 4 * (b0 + (int64_t)(o % nblk)) * (int64_t)L;
    int64_t g_hi = m0 + 4 * (int64_t)L;
    if (g_hi > p.g_hi) g_hi = p.g_hi;
    unsigned nj = 0, nfull = 0;
    int64_t a, e;
    while (qpsk_om_sub_span(m0, L, Ls4, nsub, g_hi, nj, &a, &e)) {
      if (nj < nsub && e - a == Ls4) nfull = nj + 1;
      nj++;
    }
    r_m0[t] = m0;
    r_hi[t] = g_hi;
    r_D[t] = p.D;
    r_gain[t] = p.gain;
    r_full[t] = nfull;
    rec[t].om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
    rec[t].nsub = nj;
    rec[t].pad = 0;
  }
  __syncthreads();
  for (unsigned i = t; i < nr * nv; i += OM_SUMS_THREADS) {
    const unsigned r = i / nv, j = i - r * nv;
    int64_t a, e;
    double x[2] = {0, 0}, tc = 0;
    if (qpsk_om_sub_span(r_m0[r], L, Ls4, nsub, r_hi[r], j, &a, &e)) {
      qpsk_oms_value(omsum + ((o0 + r) * (nsub + 1) + j) * QPSK_OMS, a, e, r_D[r], r_gain[r], x);
      tc = (double)(a + e - 1) / 8.0;
    }
    rec[r].osub[j][0] = x[0];
    rec[r].osub[j][1] = x[1];
    rec[r].osub_t[j] = tc;
  }
  for (unsigned i = t, nz = QPSK_SUB_MAX - nv; i < nr * nz; i += OM_SUMS_THREADS) {
    const unsigned r = i / nz, j = nv + (i - r * nz);
    rec[r].osub[j][0] = rec[r].osub[j][1] = rec[r].osub_t[j] = 0;
  }
  __syncthreads();
  for (unsigned i = t; i < nr * QPSK_LAGS; i += OM_SUMS_THREADS) {
    const unsigned r = i / QPSK_LAGS, l = i - r * QPSK_LAGS;
    double cr = 0, ci = 0;
    if (l < nlags)
      for (unsigned j = 1u << l; j < r_full[r]; j++) {
        const double *x = rec[r].osub[j], *q = rec[r].osub[j - (1u << l)];
        cr += x[0] * q[0] + x[1] * q[1];
        ci += x[1] * q[0] - x[0] * q[1];
      }
    rec[r].corr[l][0] = cr;
    rec[r].corr[l][1] = ci;
  }
  __syncthreads();
  const double *src = (const double *)rec;
  double *dst = (double *)(out + o0);
  for (unsigned w = t; w < nr * OM_SUMS_WORDS; w += OM_SUMS_THREADS) dst[w] = src[w];
}

/* Stage out. Grid (nblk, C), OUT_THREADS threads, no shared memory: each thread OUT_PER
 * consecutive symbols of the block (loaded together, as two 16-byte loads where they lie aligned),
 * coherent Gray bits or the differential step from the previous symbol's quadrant (the thread's
 * first from the symbol before it, recomputed from sym, the block's first from quad0), its
 * 2 OUT_PER bits stored as one 8-byte word where the row allows (else 2-byte or byte stores).
 * Reads 8 bytes, writes 2 per symbol. */
#define OUT_THREADS 128
#define OUT_PER 4
static_assert(OUT_PER == 4, "out loads its symbols four at a time (load4_aligned)");
__global__ void __launch_bounds__(OUT_THREADS)
    qpsk_out_kernel(const qpsk_mf_block *blk, const qpsk_out_block *ob, const prx_cf32 *sym,
                    unsigned nblk, unsigned Lmax, uint8_t *bits, size_t bits_stride) {
  const unsigned c = blockIdx.y;
  const size_t out = (size_t)c * nblk + blockIdx.x;
  const int64_t n = blk[out].t.k1 - blk[out].t.k0;
  const qpsk_out_block o = ob[out];
  const prx_cf32 *y = sym + out * (size_t)Lmax;
  uint8_t *dst = bits + (size_t)c * bits_stride + 2 * o.out0;
  const bool vec = ((uintptr_t)y & 15) == 0;
  const unsigned al = (unsigned)((uintptr_t)dst & 7); /* (each thread's bits start 8 bytes on) */
  for (int64_t i0 = OUT_PER * (int64_t)threadIdx.x; i0 < n; i0 += OUT_PER * OUT_THREADS) {
    prx_cf32 v[OUT_PER];
    if (vec && i0 + OUT_PER <= n)
      load4_aligned(y + i0, v);
    else
#pragma unroll
      for (int u = 0; u < OUT_PER; u++) v[u] = i0 + u < n ? y[i0 + u] : prx_cf32{0, 0};
    unsigned b0, b1, qp = o.quad0;
    if (o.diff && i0 > 0) qp = qpsk_quad_of(y[i0 - 1], o.rot, &b0, &b1);
    uint8_t r[2 * OUT_PER];
#pragma unroll
    for (int u = 0; u < OUT_PER; u++) {
      const unsigned q = qpsk_quad_of(v[u], o.rot, &b0, &b1);
      if (o.diff) {
        qpsk_diff_step_bits((q - qp) & 3u, &r[2 * u], &r[2 * u + 1]);
        qp = q;
      } else {
        r[2 * u] = (uint8_t)b0;
        r[2 * u + 1] = (uint8_t)b1;
      }
    }
    uint8_t *d = dst + 2 * i0;
    if (i0 + OUT_PER <= n && al == 0) {
      uint2 wv;
      wv.x = r[0] | r[1] << 8 | r[2] << 16 | (unsigned)r[3] << 24;
      wv.y = r[4] | r[5] << 8 | r[6] << 16 | (unsigned)r[7] << 24;
      *(uint2 *)d = wv;
    } else if (i0 + OUT_PER <= n && (al & 1) == 0) {
#pragma unroll
      for (int u = 0; u < OUT_PER; u++)
        ((uint16_t *)d)[u] = (uint16_t)(r[2 * u] | r[2 * u + 1] << 8);
    } else
      for (int u = 0; u < 2 * OUT_PER && i0 + u / 2 < n; u++) d[u] = r[u];
  }
}

/* The filter of a pre or pre_om launch: the sliding one (PRE_SLIDE_UNIT at a unit-step grid of
 * QPSK_SLIDE_NT4 taps, PRE_SLIDE_TRI at a step-4/3 grid of QPSK_SLIDE_NT3 taps) where pre_slide
 * allows it and the taps are zero outside the ones it takes (pre_slide_taps_fit: always so for
 * the RRC pre-filter), else PRE_SLIDE_NONE (the register-blocked filters with pre_block, at a
 * step-4/3 grid without om qpsk_dot3 (pre_tri, its window padded), else one output per thread). */
static bool pre_tri(const qpsk_stages *s, bool om) {
  return !s->pre_block && !om && s->pre_rq >= 0 && 3 * s->pre_rq == 4 * (int64_t)s->pre_Q;
}
static int pre_slide_of(const qpsk_stages *s) {
  if (!s->pre_slide) return PRE_SLIDE_NONE;
  if (s->pre_block && s->pre_ntaps == QPSK_SLIDE_NT4 && pre_slide_taps_fit(s->pre_taps, 1))
    return PRE_SLIDE_UNIT;
  if (qpsk_stages_slide3(s) && pre_slide_taps_fit(s->pre_taps, 3)) return PRE_SLIDE_TRI;
  return PRE_SLIDE_NONE;
}
/* the pre stage's shared memory: its window's slots (for the blocked filters the window and 8
 * zeros after it, padded; for the sliding ones up to 3 virtual samples before it and
 * PRE_SLIDE_TAIL after it), then with om the partial sums (sliding: one slot per chunk; blocked:
 * one per group of four outputs; else the warps' of each step) */
static size_t pre_slots(size_t win, bool pad4, int slide) {
  if (slide != PRE_SLIDE_NONE)
    return (size_t)qpsk_slide_slot((int)win + 3 + PRE_SLIDE_TAIL,
                                   slide == PRE_SLIDE_TRI ? PRE_SLIDE_SH3 : PRE_SLIDE_SH1) +
           2;
  return pad4 ? (size_t)qpsk_win_slot((int64_t)win + 8, QPSK_PAD4) + 1 : win;
}
static size_t pre_smem(const qpsk_stages *s, bool blk, bool om, int slide) {
  const size_t ng = 4 * (size_t)s->L + 2 * QPSK_GM,
               steps = (ng + STAGE_THREADS - 1) / STAGE_THREADS;
  /* the sliding filters' chunks (om_tile): one slot each */
  const size_t chunks = (size_t)(s->nsub + 1) * qpsk_om_chunks(4 * s->Ls);
  const size_t part = slide != PRE_SLIDE_NONE ? chunks * QPSK_OMS
                      : blk                   ? (ng + 3) / 4 * QPSK_OMS
                                              : steps * (STAGE_THREADS / 32) * OM_SEG;
  return pre_slots(s->pre_win, blk, slide) * sizeof(float2) + (om ? part * sizeof(double) : 0);
}

typedef void (*pre_kernel_fn)(pre_args);
typedef void (*mf_kernel_fn)(mf_args);

/* the kernel of each variant: cf16 rows, padded window, mixing */
template <bool HALF, bool MIX> static pre_kernel_fn pre_kernel_of2(bool blk, bool om) {
  if (blk)
    return om ? qpsk_pre_kernel<HALF, MIX, true, true> : qpsk_pre_kernel<HALF, MIX, true, false>;
  return om ? qpsk_pre_kernel<HALF, MIX, false, true> : qpsk_pre_kernel<HALF, MIX, false, false>;
}
static pre_kernel_fn pre_kernel_of(bool half, bool mix, bool blk, bool om) {
  if (half) return mix ? pre_kernel_of2<true, true>(blk, om) : pre_kernel_of2<true, false>(blk, om);
  return mix ? pre_kernel_of2<false, true>(blk, om) : pre_kernel_of2<false, false>(blk, om);
}
template <bool HALF, bool MIX, bool PI4> static mf_kernel_fn mf_kernel_of3(bool pad, int blk) {
  if (!pad) return qpsk_mf_kernel<HALF, false, MIX, 0, PI4>;
  return blk == 1   ? qpsk_mf4_kernel<HALF, MIX, PI4>
         : blk == 2 ? qpsk_mf_kernel<HALF, true, MIX, 2, PI4>
                    : qpsk_mf_kernel<HALF, true, MIX, 0, PI4>;
}
template <bool HALF, bool MIX> static mf_kernel_fn mf_kernel_of2(bool pad, int blk, bool pi4) {
  return pi4 ? mf_kernel_of3<HALF, MIX, true>(pad, blk) : mf_kernel_of3<HALF, MIX, false>(pad, blk);
}
/* the kernel of each variant: cf16 rows, padded window, mixing, the pairs (padded window only:
 * 1 consecutive, 2 P apart), pi/4-QPSK's turn (kernels of their own: as a flag, the turn made the
 * pairs' kernel spill 44 bytes at its 48 registers, +3 % of the bank at sps 16/3) */
static mf_kernel_fn mf_kernel_of(bool half, bool pad, bool mix, int blk, bool pi4) {
  if (half)
    return mix ? mf_kernel_of2<true, true>(pad, blk, pi4)
               : mf_kernel_of2<true, false>(pad, blk, pi4);
  return mix ? mf_kernel_of2<false, true>(pad, blk, pi4)
             : mf_kernel_of2<false, false>(pad, blk, pi4);
}
/* the pairs' kernel (mf_kernel_of's blk) of an object: mf_block 1 consecutive, P >= 2 P apart */
static int mf_blk_of(const qpsk_stages *s) {
  if (!s->mf_pad || !s->mf_block) return 0;
  return s->mf_block == 1 ? 1 : 2;
}
/* the matched filter's shared memory (bytes) for its kernel blk */
static size_t mf_smem(const qpsk_stages *s, int blk) {
  const int layout = blk == 1 ? MF_PAD16X2 : blk == 2 ? MF_PAD32 : s->mf_pad ? MF_PAD16 : MF_FLAT;
  return mf_slots(layout, s->mf_win) * sizeof(float2);
}

static prx_status stages_create(qpsk_stages *s, const qpsk_fir *pre, const qpsk_fir *mf, unsigned C,
                                unsigned nblk, unsigned L, unsigned Lmax, double sps, int cf16) {
  if (qpsk_stages_shape(s, C, nblk, L, Lmax, sps, cf16))
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: block too short");
  s->pre_Q = pre->Q;
  s->pre_ntaps = pre->ntaps;
  s->pre_c = pre->c;
  s->pre_rq = pre->rq;
  s->pre_r = pre->r;
  s->mf_Q = mf->Q;
  s->mf_ntaps = mf->ntaps;
  s->mf_c = mf->c;
  /* the longest windows: the grid's (4L + 2 GM) r samples and the matched filter's (L + 2) sps,
   * each plus its taps and the rounding of their ends */
  s->pre_win = (size_t)ceil((4.0 * L + 2 * QPSK_GM) * pre->r) + pre->ntaps + 4;
  s->mf_win = (size_t)ceil((L + 2.0) * sps) + mf->ntaps + 8;
  s->mf_pad = 1;
  s->mf_block = qpsk_mf_pairing(sps, mf->ntaps); /* pairs of symbols on one tap row */
  s->cfo_half = C >= QPSK_CFO_HALF_MIN_CHANNELS; /* the CFO stage from half the transform */
  const size_t pre_b = (size_t)pre->Q * 2 * pre->ntaps * sizeof(float);
  const size_t mf_n = (size_t)mf->Q * mf->ntaps, mf_b = 2 * mf_n * sizeof(float);
  CK(cudaMalloc(&s->d_pre, pre_b), "cudaMalloc (pre-filter taps)");
  /* the matched filter's rows (re, im lanes), then the same rows in one lane for the pairs
   * (qpsk_dot4c, qpsk_dot2n), where the lanes are equal (qpsk_fir_init's; else no pairs) */
  CK(cudaMalloc(&s->d_mf, mf_b + mf_n * sizeof(float)), "cudaMalloc (matched-filter taps)");
  CK(cudaMemcpy(s->d_pre, pre->bank, pre_b, cudaMemcpyHostToDevice), "cudaMemcpy (taps)");
  CK(cudaMemcpy(s->d_mf, mf->bank, mf_b, cudaMemcpyHostToDevice), "cudaMemcpy (taps)");
  float *one = (float *)malloc(mf_n * sizeof(float));
  if (!one) return prx_fail(PRX_ERR_NOMEM, "CUDA demodulator stages: out of memory (taps)");
  for (size_t l = 0; l < mf_n; l++) {
    one[l] = mf->bank[2 * l];
    if (memcmp(&mf->bank[2 * l], &mf->bank[2 * l + 1], sizeof(float))) s->mf_block = 0;
  }
  const cudaError_t e1 =
      cudaMemcpy(s->d_mf + 2 * mf_n, one, mf_n * sizeof(float), cudaMemcpyHostToDevice);
  free(one);
  CK(e1, "cudaMemcpy (taps)");
  /* a unit-step pre-filter grid (sps 4): the register-blocked filter (taps a multiple of 4) */
  s->pre_block = pre->rq >= 0 && pre->rq == (int64_t)pre->Q && pre->ntaps % 4 == 0;
  int dev, smem_max;
  CK(cudaGetDevice(&dev), "cudaGetDevice");
  CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
     "cudaDeviceGetAttribute");
  /* the sliding pre-filter's taps, where its grid and tap count apply (pre_slide_of) */
  s->pre_slide = 1;
  const size_t nslide = pre->Q == 3 && pre->ntaps == QPSK_SLIDE_NT3 ? 3 * 2 * QPSK_SLIDE_NT3
                        : pre->ntaps == QPSK_SLIDE_NT4              ? 2 * QPSK_SLIDE_NT4
                                                                    : 0;
  memcpy(s->pre_taps, pre->bank, nslide * sizeof(float));
  /* the most shared memory of any pre launch: each window layout (plain, QPSK_PAD4, sliding)
   * with and without om's sums (the step-4/3 sliding window's, 1.5 slots a sample, bounds the
   * unit step's, 1.25) */
  size_t need_pre = 0;
  for (int v = 0; v < 8; v++) {
    const size_t n = pre_smem(s, v & 1, v & 2, v & 4 ? PRE_SLIDE_TRI : PRE_SLIDE_NONE);
    need_pre = n > need_pre ? n : need_pre;
  }
  const size_t need_mf = mf_smem(s, 1) > mf_smem(s, 0) ? mf_smem(s, 1) : mf_smem(s, 0);
  if (need_pre + 2048 > (size_t)smem_max || need_mf + 2048 > (size_t)smem_max)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "CUDA demodulator stages: a block's window (%zu / %zu bytes) exceeds the "
                    "shared memory of one thread block (%d bytes): a shorter block",
                    need_pre, need_mf, smem_max);
  /* the caps at the device's limit, not this object's need (stages_open_smem) */
  for (int v = 0; v < 16; v++)
    CK(stages_open_smem((const void *)pre_kernel_of(v & 1, v & 2, v & 4, v & 8), smem_max),
       "cudaFuncSetAttribute (pre)");
  for (int v = 0; v < 48; v++) /* (half, pad, mix, blk 0..2, pi4) */
    CK(stages_open_smem((const void *)mf_kernel_of(v & 1, v & 2, v & 4, (v >> 3) % 3, v >= 24),
                        smem_max),
       "cudaFuncSetAttribute (mf)");
  return PRX_OK;
}

static void stages_destroy(qpsk_stages *s) {
  cudaFree(s->d_pre);
  cudaFree(s->d_mf);
  cudaFree(s->d_mix);
  s->d_pre = s->d_mf = NULL;
  s->d_mix = NULL;
  cfo_release(s);
}

static prx_status stages_mix(qpsk_stages *s, const double *f) {
  if (!f) {
    cudaFree(s->d_mix);
    s->d_mix = NULL;
    return PRX_OK;
  }
  for (unsigned c = 0; c < s->C; c++)
    if (!isfinite(f[c]))
      return prx_fail(PRX_ERR_INVALID,
                      "CUDA demodulator stages: channel %u's mixing frequency "
                      "is not finite",
                      c);
  if (!s->d_mix) CK(cudaMalloc(&s->d_mix, sizeof(double) * s->C), "cudaMalloc (mixing)");
  CK(cudaMemcpy(s->d_mix, f, sizeof(double) * s->C, cudaMemcpyHostToDevice), "cudaMemcpy (mixing)");
  return PRX_OK;
}

/* The arguments every kernel that stages pre's window reads (pre, pre_om): the rows and
 * the pre-filter's bank and positions; the caller sets its own outputs. */
static pre_args pre_args_of(const qpsk_stages *s, const void *rows, size_t row_stride,
                            int64_t n_total) {
  pre_args a = {};
  a.rows = rows;
  a.stride = row_stride;
  a.n_total = n_total;
  a.nblk = s->nblk;
  a.L = s->L;
  a.sps = s->sps;
  a.bank = s->d_pre;
  a.Q = s->pre_Q;
  a.ntaps = s->pre_ntaps;
  a.c = s->pre_c;
  a.rq = s->pre_rq;
  a.r = s->pre_r;
  a.mix = s->d_mix;
  return a;
}

static prx_status pre_launch(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                             int64_t n_total, int64_t g_hi, prx_cf32 *grid, double *mom,
                             unsigned *nonfinite, double *omsum, cudaStream_t stream) {
  const bool blk = s->pre_block, om = omsum != NULL;
  if (!grid) return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: pre without a grid");
  /* a step-4/3 grid (sps 16/3): the three-output filter, its window padded as the blocked one's */
  const bool tri = pre_tri(s, om);
  const int slide = pre_slide_of(s);
  pre_args a = pre_args_of(s, rows, row_stride, n_total);
  a.b0 = b0;
  a.grid = grid;
  a.mom = mom;
  a.nonfinite = nonfinite;
  a.g_hi = g_hi;
  a.nsub = s->nsub;
  a.Ls = s->Ls;
  a.win_slots = pre_slots(s->pre_win, blk || tri, slide);
  a.omsum = omsum;
  a.om_cj = qpsk_om_chunks(4 * s->Ls);
  a.om_flat = (4 * s->Ls) % QPSK_OM_CHUNK == 0;
  a.g_vec = ((uintptr_t)grid & 15) == 0 && (4 * s->L + 2 * QPSK_GM) % 4 == 0;
  a.tri = tri;
  a.slide = slide;
  if (slide != PRE_SLIDE_NONE) memcpy(a.taps, s->pre_taps, sizeof a.taps);
  for (unsigned kb = 0; kb < s->nblk; kb += PRE_TAB_MAX) {
    const unsigned nb = s->nblk - kb < PRE_TAB_MAX ? s->nblk - kb : PRE_TAB_MAX;
    a.kb = kb;
    for (unsigned k = 0; k < nb; k++) a.tab[k] = pre_blk_of(a, b0 + kb + k, slide);
    dim3 g(nb, s->C);
    pre_kernel_of(s->cf16, s->d_mix != NULL, blk,
                  om)<<<g, STAGE_THREADS, pre_smem(s, blk || tri, om, slide), stream>>>(a);
    CK(cudaGetLastError(), "qpsk_pre_kernel launch");
  }
  return PRX_OK;
}

static prx_status stages_pre(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                             int64_t n_total, prx_cf32 *grid, double *mom, unsigned *nonfinite,
                             cudaStream_t stream) {
  return pre_launch(s, rows, row_stride, b0, n_total, INT64_MAX, grid, mom, nonfinite, NULL,
                    stream);
}

static prx_status stages_pre_om(const qpsk_stages *s, const void *rows, size_t row_stride,
                                int64_t b0, int64_t n_total, int64_t g_hi, prx_cf32 *grid,
                                double *mom, unsigned *nonfinite, double *omsum,
                                cudaStream_t stream) {
  if (!omsum) return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: pre_om without sums");
  return pre_launch(s, rows, row_stride, b0, n_total, g_hi, grid, mom, nonfinite, omsum, stream);
}

static prx_status stages_om_sums(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in,
                                 const double *omsum, qpsk_om_out *out, cudaStream_t stream) {
  const size_t nb = (size_t)s->C * s->nblk;
  qpsk_om_sums_kernel<<<(unsigned)((nb + OM_SUMS_RECS - 1) / OM_SUMS_RECS), OM_SUMS_THREADS, 0,
                        stream>>>(b0, s->nblk, nb, s->L, s->nsub, s->Ls, s->nlags, in, omsum, out);
  CK(cudaGetLastError(), "qpsk_om_sums_kernel launch");
  return PRX_OK;
}

/* x4's launch over the blocks of every channel (LEVEL: in given), the grid staged in shared
 * memory where x4_stage_of allows (16 kB a block at 512-symbol blocks) */
#define X4_STAGE_MAX (32 * 1024)
static size_t x4_stage_of(const qpsk_stages *s, const prx_cf32 *grid, bool level) {
  /* pre_om's grid (level) 4 bytes a value, pre's 8 */
  const size_t bytes = (4 * (size_t)s->L + 2 * QPSK_GM) * (level ? 4 : sizeof(prx_cf32));
  return ((uintptr_t)grid & 15) == 0 && bytes <= X4_STAGE_MAX ? bytes : 0;
}
static prx_status x4_launch(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                            const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                            size_t w_stride, cfo_rows_out r, cudaStream_t stream) {
  const dim3 g(s->nblk, s->C);
  const size_t sm = x4_stage_of(s, grid, in != NULL);
  if (in && sm)
    qpsk_x4_kernel<true, true><<<g, STAGE_THREADS, sm, stream>>>(s->nblk, s->L, blk, w0, in, grid,
                                                                 w, w_stride, r, s->pi4);
  else if (in)
    qpsk_x4_kernel<true, false>
        <<<g, STAGE_THREADS, 0, stream>>>(s->nblk, s->L, blk, w0, in, grid, w, w_stride, r, s->pi4);
  else if (sm)
    qpsk_x4_kernel<false, true><<<g, STAGE_THREADS, sm, stream>>>(s->nblk, s->L, blk, w0, NULL,
                                                                  grid, w, w_stride, r, s->pi4);
  else
    qpsk_x4_kernel<false, false><<<g, STAGE_THREADS, 0, stream>>>(s->nblk, s->L, blk, w0, NULL,
                                                                  grid, w, w_stride, r, s->pi4);
  CK(cudaGetLastError(), "qpsk_x4_kernel launch");
  return PRX_OK;
}

static prx_status stages_x4_level(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                                  const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                                  size_t w_stride, cudaStream_t stream) {
  return x4_launch(s, blk, w0, in, grid, w, w_stride, cfo_rows_out{NULL, 0, 0}, stream);
}

static prx_status stages_mf(const qpsk_stages *s, const void *rows, size_t row_stride, int64_t b0,
                            int64_t n_total, const qpsk_mf_block *blk, prx_cf32 *sym, double *sums,
                            cudaStream_t stream) {
  const int kb = mf_blk_of(s);
  mf_args a = {
      rows,    row_stride,  b0,      n_total,     s->nblk,
      s->L,    s->Lmax,     s->sps,  s->d_mf,     s->d_mf + 2 * (size_t)s->mf_Q * s->mf_ntaps,
      s->mf_Q, s->mf_ntaps, s->mf_c, s->mf_block, blk,
      sym,     sums,        s->d_mix};
  dim3 g(s->nblk, s->C);
  const unsigned threads = kb == 1 ? MF4_THREADS : STAGE_THREADS; /* qpsk_mf4_kernel's */
  mf_kernel_of(s->cf16, s->mf_pad, s->d_mix != NULL, kb,
               s->pi4 != 0)<<<g, threads, mf_smem(s, kb), stream>>>(a);
  CK(cudaGetLastError(), "qpsk_mf_kernel launch");
  return PRX_OK;
}

static prx_status stages_out(const qpsk_stages *s, const qpsk_mf_block *blk,
                             const qpsk_out_block *ob, const prx_cf32 *sym, uint8_t *bits,
                             size_t bits_stride, cudaStream_t stream) {
  dim3 g(s->nblk, s->C);
  qpsk_out_kernel<<<g, OUT_THREADS, 0, stream>>>(blk, ob, sym, s->nblk, s->Lmax, bits, bits_stride);
  CK(cudaGetLastError(), "qpsk_out_kernel launch");
  return PRX_OK;
}

static prx_status stages_om(const qpsk_stages *s, int64_t b0, const qpsk_om_in *in, prx_cf32 *grid,
                            qpsk_om_out *out, cudaStream_t stream) {
  dim3 g(s->nblk, s->C);
  qpsk_om_kernel<<<g, STAGE_THREADS, 0, stream>>>(b0, s->nblk, s->L, s->nsub, s->Ls, s->nlags, in,
                                                  grid, out);
  CK(cudaGetLastError(), "qpsk_om_kernel launch");
  return PRX_OK;
}

static prx_status stages_x4(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                            const prx_cf32 *grid, prx_cf32 *w, size_t w_stride,
                            cudaStream_t stream) {
  return x4_launch(s, blk, w0, NULL, grid, w, w_stride, cfo_rows_out{NULL, 0, 0}, stream);
}

static prx_status stages_x4_rows(const qpsk_stages *s, const qpsk_mf_block *blk, const int64_t *w0,
                                 const qpsk_om_in *in, const prx_cf32 *grid, prx_cf32 *w,
                                 size_t w_stride, prx_cf32 *rows, size_t row_stride,
                                 cudaStream_t stream) {
  if (!rows || !s->d_cfo_buf || row_stride > UINT_MAX)
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: x4_rows without the CFO rows");
  const cfo_rows_out r = {(float2 *)rows, (unsigned)row_stride, s->cfo_S};
  return x4_launch(s, blk, w0, in, grid, w, w_stride, r, stream);
}

/* ---- the CFO alias test's measure (qpsk_alias.c): a block a channel, each thread one segment
 * of the call's samples. The low-pass is a recursion, but a short one: its impulse response
 * falls below 1e-20 of its sum within W samples (alias_warmup: 35 at sps 4, 47 at 16/3), so each
 * segment after the first starts from the state that its W samples before give from zero, the same
 * state to below double rounding; the first carries on from the sums' state. The segments' lag-one
 * and power sums are added in a fixed tree (the same sums for the same call), the last one's state
 * kept for the next call. ---- */
#define ALIAS_SEGMENTS 128
#define ALIAS_BATCH 8
template <bool HALF>
__device__ void alias_run(qpsk_alias_sums *st, const char *row, int t0, int t1, double f, double tz,
                          bool mix, double a) {
  for (int t = t0; t < t1; t += ALIAS_BATCH) {
    prx_cf32 v[ALIAS_BATCH];
#pragma unroll
    for (int u = 0; u < ALIAS_BATCH; u++)
      if (t + u < t1) v[u] = load_rel<HALF>(row, t + u);
#pragma unroll
    for (int u = 0; u < ALIAS_BATCH; u++) {
      if (t + u >= t1) break;
      if (mix) v[u] = qpsk_mix_sample(v[u], tz, f, t + u);
      qpsk_alias_step(st, a, v[u].re, v[u].im);
    }
  }
}

template <bool HALF>
__global__ void __launch_bounds__(ALIAS_SEGMENTS)
    qpsk_alias_kernel(const char *rows, size_t stride, unsigned C, int64_t s0, int n, int L, int W,
                      int fresh, const double *mix, double a, qpsk_alias_sums *sums) {
  __shared__ double red[3][ALIAS_SEGMENTS];
  __shared__ double last_y[QPSK_ALIAS_POLES][2];
  const unsigned c = blockIdx.x, k = threadIdx.x;
  const char *row = (const char *)((uintptr_t)rows + (uintptr_t)c * stride +
                                   (uintptr_t)s0 * sample_bytes<HALF>()); /* (stream sample s0) */
  const double f = mix ? mix[c] : 0, tz = mix ? qpsk_mix_turns(f, s0) : 0;
  const int t0 = (int)min((int64_t)k * L, (int64_t)n), t1 = (int)min((int64_t)t0 + L, (int64_t)n);
  qpsk_alias_sums st;
  if (k == 0 && !fresh) {
    st = sums[c];
  } else {
    memset(&st, 0, sizeof st);
    if (k > 0 && t0 < t1) { /* (t0 >= L >= W: the warm-up lies in the call's samples) */
      alias_run<HALF>(&st, row, t0 - W, t0, f, tz, mix != NULL, a);
      st.r[0] = st.r[1] = st.p = 0;
    }
  }
  alias_run<HALF>(&st, row, t0, t1, f, tz, mix != NULL, a);
  red[0][k] = st.r[0];
  red[1][k] = st.r[1];
  red[2][k] = st.p;
  if (t0 < t1 && t1 == n)
    for (int j = 0; j < QPSK_ALIAS_POLES; j++) last_y[j][0] = st.y[j][0], last_y[j][1] = st.y[j][1];
  __syncthreads();
  for (unsigned h = ALIAS_SEGMENTS / 2; h > 0; h /= 2) {
    if (k < h)
      for (int j = 0; j < 3; j++) red[j][k] += red[j][k + h];
    __syncthreads();
  }
  if (k == 0) {
    qpsk_alias_sums out;
    for (int j = 0; j < QPSK_ALIAS_POLES; j++)
      out.y[j][0] = last_y[j][0], out.y[j][1] = last_y[j][1];
    out.r[0] = red[0][0];
    out.r[1] = red[1][0];
    out.p = red[2][0];
    sums[c] = out;
  }
}

/* the samples after which the low-pass's impulse response (QPSK_ALIAS_POLES sections of gain a:
 * a^P C(k + P - 1, P - 1) (1 - a)^k) and all of it after lie below 1e-20 of its sum (1) */
static int alias_warmup(double a) {
  const double p = 1 - a;
  double term = pow(a, QPSK_ALIAS_POLES); /* k = 0 */
  for (int k = 0; k < (1 << 20); k++) {
    const double ratio = p * (k + QPSK_ALIAS_POLES) / (k + 1); /* term(k + 1) / term(k) */
    if (ratio < 1 && term / (1 - ratio) < 1e-20) return k;
    term *= ratio;
  }
  return 1 << 20;
}

static prx_status stages_alias(const qpsk_stages *s, const void *rows, size_t row_stride,
                               int64_t s0, size_t n, int fresh, qpsk_alias_sums *sums,
                               cudaStream_t stream) {
  if (!n) return PRX_OK;
  if (n > INT_MAX / 2 || !rows || !sums)
    return prx_fail(PRX_ERR_INVALID, "CUDA demodulator stages: alias over %zu samples", n);
  const double a = qpsk_alias_gain(s->sps);
  const int W = alias_warmup(a);
  /* segments of L samples, at least the warm-up (fewer segments where the call is short) */
  int L = (int)((n + ALIAS_SEGMENTS - 1) / ALIAS_SEGMENTS);
  if (L < W) L = W;
  if (s->cf16)
    qpsk_alias_kernel<true><<<s->C, ALIAS_SEGMENTS, 0, stream>>>(
        (const char *)rows, row_stride, s->C, s0, (int)n, L, W, fresh, s->d_mix, a, sums);
  else
    qpsk_alias_kernel<false><<<s->C, ALIAS_SEGMENTS, 0, stream>>>(
        (const char *)rows, row_stride, s->C, s0, (int)n, L, W, fresh, s->d_mix, a, sums);
  CK(cudaGetLastError(), "qpsk_alias_kernel launch");
  return PRX_OK;
}

extern "C" const prx_qpsk_stages_cuda prx_qpsk_stages_cuda_entries = {
    stages_create,  stages_destroy, stages_pre,      stages_mf,        stages_om,
    stages_x4,      stages_out,     stages_mix,      stages_cfo_setup, stages_cfo,
    stages_pre_om,  stages_om_sums, stages_x4_level, stages_cfo_rows,  stages_x4_rows,
    stages_cfo_fed, stages_alias};
