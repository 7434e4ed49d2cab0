/* Streams a whole input through a channelizer in chunks and collects every output, the flush
 * tail included, channel-major: the loop the channelizer tests share. */
#ifndef PRX_CHAN_RUN_H
#define PRX_CHAN_RUN_H

#include "testutil.h"

/* Length of the next chunk, given the samples fed so far and those left (the result is clamped
 * to left; 0 is taken as 1). */
typedef size_t (*chan_chunk_fn)(void *ctx, size_t fed, size_t left);

/* Feeds in[0..n-1] (samples of in_size bytes, the object's input format) to c in chunks from next
 * (NULL: one call), appending the outputs of selected channel s to y[s * cap + j], then flushes.
 * Checks that each call yields prx_chan_output_count outputs and that ceil(N / D) exist after N
 * samples. Returns the outputs per channel; *n_before_flush (may be NULL) gets those before the
 * flush. */
size_t chan_run_stream(prx_chan *c, const void *in, size_t in_size, size_t n, chan_chunk_fn next,
                       void *ctx, prx_cf32 *y, size_t cap, size_t *n_before_flush);

#endif
