/* Polyphase filter kernel of the CPU channelizer (see chan_cpu_kernel.h for the arithmetic). */
#include "chan_cpu_kernel.h"

/* One row, portable C: the loop over the 2K interleaved floats is innermost-contiguous, which
 * compilers vectorise; the sum over the P phases stays in registers per element. */
static void filter_row_c(const float *hr2, size_t K, size_t P, const float *x, prx_cf32 *row) {
  float *dst = (float *)row;
  const size_t n2 = 2 * K;
  for (size_t i = 0; i < n2; i++) {
    float s = 0;
    for (size_t q = 0; q < P; q++) s += hr2[q * n2 + i] * x[q * n2 + i];
    /* element r' = i/2 goes to (r' + 1) mod K */
    size_t o = i + 2 < n2 ? i + 2 : i + 2 - n2;
    dst[o] = s;
  }
}

void prx_chan_filter_rows(const float *hr2, size_t K, size_t P, const float *x, size_t step,
                          size_t n, prx_cf32 *rows) {
  for (size_t i = 0; i < n; i++) filter_row_c(hr2, K, P, x + 2 * i * step, rows + i * K);
}
