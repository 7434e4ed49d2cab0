#include "chan_run.h"

#include <stdlib.h>
#include <string.h>

size_t chan_run_stream(prx_chan *c, const void *in, size_t in_size, size_t n, chan_chunk_fn next,
                       void *ctx, prx_cf32 *y, size_t cap, size_t *n_before_flush) {
  size_t ns = prx_chan_n_outputs(c), D = prx_chan_decimation(c), got = 0, k = 0;
  prx_cf32 *tmp = malloc(ns * cap * sizeof *tmp);
  const unsigned char *p = in;
  for (size_t i = 0; i < n;) {
    size_t len = next ? next(ctx, i, n - i) : n - i;
    if (len == 0) len = 1;
    if (len > n - i) len = n - i;
    size_t want = prx_chan_output_count(c, len);
    CHECK_OK(prx_chan_execute(c, p + i * in_size, len, tmp, cap, &k));
    CHECK(k == want, "chunk of %zu: %zu outputs, predicted %zu", len, k, want);
    for (size_t s = 0; s < ns; s++) memcpy(y + s * cap + got, tmp + s * cap, k * sizeof *y);
    got += k;
    i += len;
    CHECK(got == (i + D - 1) / D, "after %zu samples %zu outputs, expected ceil(N/D) = %zu", i, got,
          (i + D - 1) / D);
  }
  if (n_before_flush) *n_before_flush = got;
  k = 0;
  CHECK_OK(prx_chan_flush(c, tmp, cap, &k));
  for (size_t s = 0; s < ns; s++) memcpy(y + s * cap + got, tmp + s * cap, k * sizeof *y);
  free(tmp);
  return got + k;
}
