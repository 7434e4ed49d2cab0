/* The CPU channelizer's polyphase filter kernel (the part of the work that is not the FFT).
 *
 * Layout. The prototype, zero-padded to L = P K taps, is reversed, hr[i] = h[L - 1 - i], so
 * that input and taps are both read forward. The input is stored in segments of D samples (a
 * segment is D samples plus a pad; see chan_cpu.c), and the window of output j (the L samples
 * ending at jD) is exactly S = L / D consecutive segments, output j + 1's starting one segment
 * later. With R = K / D (1 or 2), element r' = h D + u (h < R, u < D) of the polyphase sums of
 * one output is
 *
 *     v'[r'] = sum_{q=0}^{P-1} hr[(R q + h) D + u] * x_seg[R q + h][u],
 *
 * where v'[r'] = v_{K-1-r'} of the commutator sums v_r(j) = sum_p h[pK + r] x[jD - r - pK].
 * The kernel stores row[(r' + 1) mod K] = v'[r'], i.e. row[q] = v_{-q mod K}, so that a
 * FORWARD DFT of the row gives sum_r v_r exp(+i 2 pi k r / K) directly (no reversal pass and
 * no per-channel twiddle). For R = 2 the factor (-1)^(kj) of odd outputs j is a rotation of
 * the row by K/2 = D before the DFT, so odd rows are stored rotated: row[(r' + 1 + D) mod K]. Taps
 * are duplicated into (re, im) lanes, so the inner loop is an elementwise multiply-add over
 * interleaved complex data. */
#ifndef PRX_CHAN_CPU_KERNEL_H
#define PRX_CHAN_CPU_KERNEL_H

#include "polyrx/core.h"

#include <stddef.h>

typedef struct {
  const float *taps; /* S tap segments: segment g holds hr[g D + u] twice (re, im lanes) */
  size_t tap_pitch;  /* floats from one tap segment to the next (>= 2 D) */
  size_t x_pitch;    /* floats from one input segment to the next (>= 2 D) */
  size_t D, R, P;    /* decimation, K / D, phases */
  size_t row_pitch;  /* complex samples from one output row to the next (>= K + 1) */
} prx_chan_kernel;

/* Computes the rows of n consecutive outputs j0 .. j0 + n - 1 (parity = j0 & 1): output i's
 * window starts at input segment x + i * x_pitch (floats), its row is written at
 * rows + i * row_pitch (element K is scratch). */
void prx_chan_filter_rows(const prx_chan_kernel *k, const float *x, size_t n, unsigned parity,
                          prx_cf32 *rows);

/* Channel selection: copies column sel[s] of n rows (pitch samples apart) to
 * out[s * stride + 0 .. n-1] for every s (the transpose into channel-major output). stream
 * non-zero: the output is written with streaming (non-temporal) stores where its alignment
 * allows (x86: 32-byte aligned parts of runs of 4 consecutive channels, every element of other
 * channels; plain stores for the rest), which skip this core's caches and the fetch of each
 * line, then an sfence: the same values, for output that other threads read later. */
void prx_chan_scatter(const prx_cf32 *rows, size_t pitch, size_t n, const unsigned *sel,
                      size_t n_sel, prx_cf32 *out, size_t stride, int stream);

/* The frames layout's channel selection: copies columns sel[0..n_sel) of each of n rows (pitch
 * samples apart) to out[i * stride + 0 .. n_sel-1], runs of consecutive channels as contiguous
 * copies (all K channels in order: each row's first K samples as they are). stream non-zero:
 * streaming stores where the frame's 32-byte aligned parts allow (plain for the rest), then an
 * sfence, as prx_chan_scatter. */
void prx_chan_frames(const prx_cf32 *rows, size_t pitch, size_t n, const unsigned *sel,
                     size_t n_sel, prx_cf32 *out, size_t stride, int stream);

/* Direct DFT instead of FFT + selection, for a few selected channels: out[s * s_step + i *
 * i_step] = sum_r rows_i[r] exp(-i 2 pi k_s r / K) for n rows (pitch samples apart; s_step =
 * stride, i_step = 1 for rows, the transpose for frames), where tables holds for each selected
 * channel s the 2K floats cos(2 pi k_s r / K) then the 2K floats -sin(2 pi k_s r / K), each value
 * twice (re and im lanes). */
void prx_chan_dft(const prx_cf32 *rows, size_t pitch, size_t K, size_t n, const float *tables,
                  size_t n_sel, prx_cf32 *out, size_t s_step, size_t i_step);

#endif
