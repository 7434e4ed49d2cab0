/* The CPU channelizer's polyphase filter kernel (the part of the work that is not the FFT).
 *
 * With the prototype zero-padded to L = P K taps and reversed, hr[i] = h[L - 1 - i], the
 * polyphase partial sums of one output whose input window (the L samples ending at jD) starts
 * at x are
 *
 *     v'[r'] = sum_{q=0}^{P-1} hr[qK + r'] x[qK + r'],   r' = 0..K-1,
 *
 * where v'[r'] = v_{K-1-r'} of the commutator sum v_r(j) = sum_p h[pK + r] x[jD - r - pK].
 * The kernel stores row[(r' + 1) mod K] = v'[r'], i.e. row[q] = v_{-q mod K}, so that a
 * FORWARD DFT of the row gives sum_r v_r exp(+i 2 pi k r / K) directly (no reversal pass and
 * no per-channel twiddle). Both the taps and x are read forward and contiguously. */
#ifndef PRX_CHAN_CPU_KERNEL_H
#define PRX_CHAN_CPU_KERNEL_H

#include "polyrx/core.h"

#include <stddef.h>

/* hr2: the reversed padded prototype with every tap duplicated (re, im lanes): 2 L floats.
 * x: interleaved cf32 input (as floats), window of output i starts at x + 2 * i * step.
 * Writes n rows of K samples, row i at rows + i * K. */
void prx_chan_filter_rows(const float *hr2, size_t K, size_t P, const float *x, size_t step,
                          size_t n, prx_cf32 *rows);

#endif
