/* Real samples to complex ones: the band 0..fs/2 of a real stream x (a direct-sampling receiver's
 * samples) brought down by fs/4 and decimated by 2 with a half-band filter,
 *
 *   z[m] = (-1)^m (x[2m] + i sum_t d_t x[2(m + t) + 1]),   t = -(Q+1) .. Q,
 *
 * the mix by exp(-i pi n / 2), a symmetric half-band low-pass of 4Q + 3 taps (its even taps but
 * the centre are zero: the real part is the even sample itself) and the decimation written out:
 * a Hilbert transformer d on the odd samples. Output m is the input's instant 2m (the filter is
 * centred: no delay); a real tone of amplitude A at f in (0, fs/2) becomes a complex tone of
 * amplitude A at f - fs/4, its image (at -f - fs/4) attenuated by the stop band. A stream of N
 * real samples gives ceil(N / 2) complex ones: the tail's outputs take zeros past the end. */
#ifndef PRX_HALFBAND_H
#define PRX_HALFBAND_H

#include "polyrx/core.h"

#include <stddef.h>
#include <stdint.h>

#define PRX_HALFBAND_Q 31 /* 4Q + 3 = 127 taps: 64 multiply-adds an output */
#define PRX_HALFBAND_TAPS (4 * PRX_HALFBAND_Q + 3)
#define PRX_HALFBAND_ATTEN_DB 100.0 /* the Kaiser design's stop-band attenuation */

typedef struct prx_halfband prx_halfband;

/* A converter at the stream's start; NULL when out of memory (with prx_fail). */
prx_halfband *prx_halfband_create(void);
void prx_halfband_destroy(prx_halfband *h); /* accepts NULL */
/* Takes n real samples; writes the outputs they complete to out, at most (n + 1) / 2 of them
 * (the caller's room), and returns their count. */
size_t prx_halfband_push(prx_halfband *h, const float *x, size_t n, prx_cf32 *out);
/* After the last push: the outputs still owed (the tail, zeros taken past the end), up to max
 * of them; 0 once every one of the ceil(N / 2) outputs was given. */
size_t prx_halfband_flush(prx_halfband *h, prx_cf32 *out, size_t max);
/* Outputs m0 .. m0 + n - 1 at once, from a window w of the real stream: x[2 m0 - 2Q - 1] on, at
 * least 2n + 4Q + 1 samples (zeros where the stream has none: before its start, past its end).
 * od (n + 2Q + 1 floats) and acc (n) are the caller's room. No state is used or changed: the
 * positional reads of several threads (h is only read). */
void prx_halfband_block(const prx_halfband *h, const float *w, uint64_t m0, size_t n, float *od,
                        float *acc, prx_cf32 *out);
/* The Hilbert taps d_t, t = -(Q+1) .. Q, at index t + Q + 1 (2Q + 2 of them). */
const float *prx_halfband_taps(const prx_halfband *h);
/* acc[j] = sum_u d[u] od[j + u], j < nj (src/dsp/halfband_kernel.c: per instruction set). */
void prx_halfband_sums(const float *d, size_t taps, const float *od, size_t nj, float *acc);
/* Real samples taken, outputs given. */
uint64_t prx_halfband_in(const prx_halfband *h);
uint64_t prx_halfband_out(const prx_halfband *h);

#endif
