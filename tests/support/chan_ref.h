/* Float64 reference of the channelizer, straight from the definition in polyrx/chan.h
 * (no FFT, no polyphase shortcut): slow, for tests only. */
#ifndef PRX_CHAN_REF_H
#define PRX_CHAN_REF_H

#include "testutil.h"

/* Outputs j = j0 .. j0+n_out-1 of channels sel[0..n_sel-1] for input x[0..n-1] (x is 0 outside
 * that range, so outputs past the input are the flush tail), prototype h[0..M-1], K channels,
 * decimation D. out[s * n_out + (j - j0)]. */
void chan_ref(const prx_cf32 *x, size_t n, const float *h, size_t M, unsigned K, unsigned D,
              const unsigned *sel, size_t n_sel, size_t j0, size_t n_out, test_cf64 *out);

#endif
