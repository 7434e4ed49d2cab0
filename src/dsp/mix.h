/* Mixing a stream down by a fixed frequency: sample n of the stream (n = 0 at its start) is
 * multiplied by exp(-2 pi i f n), f in cycles per sample. The demodulator bank uses it to bring a
 * carrier that is off its channel's centre to 0 Hz (the receiver's carriers anywhere in the
 * band). */
#ifndef PRX_MIX_H
#define PRX_MIX_H

#include "polyrx/core.h"

#include <stddef.h>
#include <stdint.h>

/* Mixes in[0..n-1] into out (in == out allowed), those being the stream's samples n0 .. n0 + n
 * - 1. The result depends only on each sample's index, never on how the stream is cut into calls:
 * the phasor is exact (double, frac(f m) with the product's rounding error recovered by fma) at
 * every index m that is a multiple of PRX_MIX_ANCHOR and rotated in double from there, so its
 * error is float rounding of the product for any stream length (n0 + n < 2^53). */
#define PRX_MIX_ANCHOR 256
void prx_mix_down(const prx_cf32 *in, prx_cf32 *out, size_t n, double f, uint64_t n0);

#endif
