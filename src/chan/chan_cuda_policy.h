/* The fused CUDA channelizer kernel's design as named choices, and the one function that
 * makes them (prx_fused_select). The kernel template (chan_cuda_fused_kernel.cuh) is built
 * once per design the selector can return; the launcher (chan_cuda_fused.cu) asks it for
 * every launch; the benchmark prints it. Plain C as well as CUDA, so that the benchmark can
 * read it. The figures below are H200 measurements, cf32 in and out, 16 taps, all channels;
 * the measurements behind each choice are in bench/GPU_NOTES.md, "Design choices by topic",
 * and the table in docs/ARCHITECTURE.md ("CUDA backend") sums them up. */
#ifndef PRX_CHAN_CUDA_POLICY_H
#define PRX_CHAN_CUDA_POLICY_H

#include "polyrx/core.h"

#include <stdio.h>

#ifdef __CUDACC__
#define PRX_POLICY_FN __host__ __device__ constexpr
#else
#define PRX_POLICY_FN static inline
#endif

/* taps per branch of the fused kernel (shorter prototypes are padded with zeros) */
#define PRX_FUSED_P 16

/* The fused kernel's shape for K channels (a power of two, 64..4096) and D = K/R:
 *  - tile: J outputs of every channel per block; J x K complex values live in shared memory
 *    (8 up to K = 2048, 4 at 4096: 70 KB at K = 1024, 139 KB at 2048 and 4096);
 *  - threads: one per base branch r < D, at most 256 (512 from K = 2048, where one block
 *    fills a multiprocessor's shared memory);
 *  - vector stride (complex values) of the shared FFT buffer: each vector holds K values plus
 *    one pad slot per 16 (bank conflicts of the strided FFT stages), rounded up to 8, plus
 *    16/J, so that the J/2 output lanes of a channel, reading vectors 2q and 2q+1 at one
 *    position, fall on 16 different 8-byte banks across a half-warp. */
PRX_POLICY_FN int prx_fused_tile(int K) { return K <= 2048 ? 8 : 4; }
PRX_POLICY_FN int prx_fused_threads(int K, int D) {
  return D < (K >= 2048 ? 512 : 256) ? D : (K >= 2048 ? 512 : 256);
}
PRX_POLICY_FN int prx_fused_vs(int K) { return ((K + K / 16 + 7) & ~7) + 16 / prx_fused_tile(K); }
PRX_POLICY_FN int prx_fused_log2(int x) { return x > 1 ? 1 + prx_fused_log2(x >> 1) : 0; }
/* blocks per multiprocessor for 24 resident warps where shared memory allows (227 KB per
 * block at most, 228 KB per multiprocessor, 1 KB of it reserved per block) */
PRX_POLICY_FN int prx_fused_min_blocks(int K, int D) {
  return (228 * 1024 / (prx_fused_tile(K) * prx_fused_vs(K) * 8 + 1024)) <
                 768 / prx_fused_threads(K, D)
             ? (228 * 1024 / (prx_fused_tile(K) * prx_fused_vs(K) * 8 + 1024))
             : 768 / prx_fused_threads(K, D);
}

/* The choices of one design of the fused kernel (each 0 or 1 unless said). */
typedef struct {
  int threads;          /* T, threads per block (prx_fused_threads) */
  int tile;             /* J, outputs per channel and block (prx_fused_tile) */
  int min_blocks;       /* blocks per multiprocessor promised to the compiler, which caps the
                           registers per thread accordingly (1: no cap) */
  int unroll_branches;  /* a thread's loop over its base branches unrolled, so that the next
                           branch's window loads issue while the current one multiplies */
  int fold_first_stage; /* the filter does the FFT's first radix-4 stage in registers (a block
                           of K/4 threads: a thread's branches are one butterfly's inputs) */
  int hist_in_kernel;   /* the launch also writes the stream's history update (no second
                           kernel per launch) */
  int computed_rows;    /* with every channel selected in order, the output phase computes
                           each FFT position's channel (digit reversal) instead of reading a
                           table */
  int window_base_ptr;  /* a branch's input window read through one base pointer, the sample
                           offsets as load immediates (no address arithmetic per load) */
  int aligned_window;   /* base branches rotated per launch so that each warp's window loads
                           start on a 128-byte line (taps in 16 rotated copies) */
  int tile_copy_out;    /* the FFT's last pass writes the tile in channel order and the tensor
                           memory accelerator (TMA) copies it to the output rows */
  int persistent;       /* as many blocks as the device holds, each looping over tiles, so a
                           tile's copies out drain while the next tile's filter runs */
} prx_fused_policy;

/* The output layout a launch writes (the selector's layout argument, bit flags). */
enum {
  PRX_OUT_ALL_IN_ORDER = 1, /* every channel selected, in order: row k is channel k */
  PRX_OUT_ROWS_16B = 2,     /* the output pointer and row pitch are multiples of 16 bytes */
  PRX_OUT_TMA = 4           /* the device has the tensor memory accelerator (compute capability
                               9.0 or later; the TMA kernels exist only in the sm_90 code) */
};

/* The design for K channels, decimation D (K/D = 1 or 2), the input and output formats
 * (prx_format) and the output layout (PRX_OUT_* flags). The output format and layout decide
 * only whether the tiles leave through the TMA (which needs cf32 rows on 16 bytes, one per
 * channel in order), and with it persistence and the register cap that go with it. */
PRX_POLICY_FN prx_fused_policy prx_fused_select(int K, int D, int in_fmt, int out_fmt, int layout) {
  prx_fused_policy p = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const int R = K / D, lgK = prx_fused_log2(K);
  p.threads = prx_fused_threads(K, D);
  p.tile = prx_fused_tile(K);
  /* first FFT stage in the filter: +1.4 % at K = 1024, D = K/2, +5 % at D = K; possible
   * where a block has K/4 threads (K = 1024 and 2048) */
  p.fold_first_stage = p.threads == K / 4;
  /* history update in the kernel: one launch per slice instead of two, neutral in time */
  p.hist_in_kernel = 1;
  /* computed output rows: +2.6 % at K = 1024, +5.5 % at K = 4096, -4.4 % at K = 128 (D =
   * K/2) */
  p.computed_rows = K >= 1024;
  /* window base pointer: at K = 1024 kernel time -3 %, +2-3 % at D = K; -1 % at K = 128 and
   * 4096 */
  p.window_base_ptr = K == 1024;
  /* aligned window: at K = 4096 +1-2 % (D = K/2), +2.4-2.9 % (D = K); -1 % at K = 1024 */
  p.aligned_window = K == 4096;
  /* output through the TMA: +4.5 % at K = 1024, D = K, +7 % at K = 4096, D = K/2. The FFT's
   * last pass must be a radix-16 one (log2 K, less the folded stage, a multiple of 4) and
   * leave every thread at least one butterfly: K = 1024 and 4096. cf32 input only: the ci16
   * design (register-capped) lost 10 % with it. Only where the device has the TMA. */
  const int last_pass_16 = (p.fold_first_stage ? lgK - 2 : lgK) % 4 == 0;
  p.tile_copy_out = in_fmt == PRX_CF32 && out_fmt == PRX_CF32 && (layout & PRX_OUT_ALL_IN_ORDER) &&
                    (layout & PRX_OUT_ROWS_16B) && (layout & PRX_OUT_TMA) && K >= 1024 &&
                    !(lgK & 1) && last_pass_16 && K / 16 * p.tile >= p.threads;
  /* persistent blocks: with the TMA output +1.4 % at K = 1024, +9 % at K = 4096 (D = K/2);
   * without it -5 to -15 % (one barrier more per tile), so only with it */
  p.persistent = p.tile_copy_out && R == 2;
  /* registers and unrolling: a cap for 24 warps per multiprocessor (K = 128: 25 % faster than
   * none), except where the filter needs more loads in flight: K = 1024, D = K/2, cf32 in, no
   * cap (85.3 against 78.7 Gsps; with ci16 in the cap is better), 128 registers when
   * persistent; K = 1024, D = K and K = 4096, D = K/2 the branch loop unrolled under 128
   * registers (+12 %, +5 %; at K = 1024, D = K/2 it costs 3-4 %) */
  if (K == 1024 && R == 2 && in_fmt == PRX_CF32) {
    p.min_blocks = p.persistent ? 2 : 1;
  } else if ((K == 1024 && R == 1) || (K == 4096 && R == 2)) {
    p.min_blocks = p.threads <= 256 ? 2 : 1;
    p.unroll_branches = 1;
  } else {
    p.min_blocks = prx_fused_min_blocks(K, D);
  }
  return p;
}

/* One line naming a policy's choices, for the benchmark's output. */
static inline void prx_fused_policy_text(const prx_fused_policy *p, char *buf, size_t n) {
  snprintf(buf, n, "T=%d J=%d min_blocks=%d%s%s%s%s%s%s%s%s", p->threads, p->tile, p->min_blocks,
           p->unroll_branches ? " unroll_branches" : "",
           p->fold_first_stage ? " fold_first_stage" : "",
           p->hist_in_kernel ? " hist_in_kernel" : "", p->computed_rows ? " computed_rows" : "",
           p->window_base_ptr ? " window_base_ptr" : "", p->aligned_window ? " aligned_window" : "",
           p->tile_copy_out ? " tile_copy_out" : "", p->persistent ? " persistent" : "");
}

#endif
