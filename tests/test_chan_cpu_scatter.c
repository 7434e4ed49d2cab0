/* The CPU channelizer's channel scatter (prx_chan_scatter, src/chan/chan_cpu_kernel.h) with
 * streaming stores gives exactly the plain scatter's values, and writes nothing else: for every
 * alignment of the output (0-7 samples past a 64-byte boundary), strides that are and are not
 * multiples of 4 and 8 samples, row counts around the vector width (1-37), row pitches even and
 * odd, and selections of all channels (runs of 4), scattered channels and runs of 4 broken up.
 * The expected output is the column copy written out here (out[s * stride + i] = row i's
 * sample sel[s]), and a guard value around and between the rows must survive. Run also with
 * POLYRX_CPU=generic (the baseline build's kernel). And the channelizer with stream_out gives
 * bit-identical output to the channelizer without it, in the unaligned rows a caller may give,
 * with 1 and 3 workers. */
#include "chan/chan_cpu_kernel.h"
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 12345.0f

static int same(prx_cf32 a, prx_cf32 b) { return !memcmp(&a, &b, sizeof a); }

/* One case: n rows of `pitch` samples, the selection, the output `off` samples past a 64-byte
 * boundary at `stride`; both forms against the expected copy. */
static void check(test_rng *rng, size_t K, size_t pitch, size_t n, const unsigned *sel,
                  size_t n_sel, size_t off, size_t stride) {
  prx_cf32 *rows = malloc(n * pitch * sizeof *rows);
  test_fill_cf32(rng, rows, n * pitch, 1.0);
  size_t len = off + n_sel * stride + 16;
  prx_cf32 *buf = aligned_alloc(64, (len * sizeof *buf + 63) & ~(size_t)63);
  prx_cf32 *want = malloc(len * sizeof *want);
  for (size_t i = 0; i < len; i++) want[i] = (prx_cf32){GUARD, -GUARD};
  for (size_t s = 0; s < n_sel; s++)
    for (size_t i = 0; i < n; i++) want[off + s * stride + i] = rows[i * pitch + sel[s]];
  for (int stream = 0; stream < 2; stream++) {
    for (size_t i = 0; i < len; i++) buf[i] = (prx_cf32){GUARD, -GUARD};
    prx_chan_scatter(rows, pitch, n, sel, n_sel, buf + off, stride, stream);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < len; i++)
      if (!same(buf[i], want[i]) && !bad++) first = i;
    CHECK(!bad,
          "K %zu pitch %zu n %zu channels %zu offset %zu stride %zu stream %d: %zu samples wrong, "
          "the first at %zu",
          K, pitch, n, n_sel, off, stride, stream, bad, first);
  }
  free(rows);
  free(buf);
  free(want);
}

/* The whole channelizer, K = 64, D = 32, all channels and 0-9, in calls of uneven length,
 * output rows 8 bytes past a 64-byte boundary at an odd stride: stream_out on and off. */
static void check_object(test_rng *rng, int threads, const unsigned *sel, size_t n_sel) {
  const size_t n = 40000, K = 64, D = 32, cap = n / D + 40, ns = sel ? n_sel : K;
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 1.0);
  prx_cf32 *y[2];
  for (int stream = 0; stream < 2; stream++) {
    prx_chan_config cfg = prx_chan_config_default();
    cfg.channels = (unsigned)K;
    cfg.decimation = (unsigned)D;
    cfg.select = sel;
    cfg.n_select = n_sel;
    cfg.threads = threads;
    cfg.backend = PRX_BACKEND_CPU;
    cfg.stream_out = stream;
    prx_chan *c = NULL;
    size_t bytes = ((ns * (cap + 1) + 8) * sizeof(prx_cf32) + 63) & ~(size_t)63;
    y[stream] = aligned_alloc(64, bytes);
    memset(y[stream], 0, bytes);
    CHECK_OK(prx_chan_create(&cfg, &c));
    if (!c) continue;
    size_t off = 0, got = 0, k, chunk[3] = {5000, 7 * D + 3, 2048};
    for (int i = 0; off < n; i++) {
      size_t m = n - off < chunk[i % 3] ? n - off : chunk[i % 3];
      CHECK_OK(prx_chan_execute(c, x + off, m, y[stream] + 1 + got, cap + 1, &k));
      off += m;
      got += k;
    }
    CHECK_OK(prx_chan_flush(c, y[stream] + 1 + got, cap + 1, &k));
    prx_chan_destroy(c);
  }
  CHECK(!memcmp(y[0], y[1], (ns * (cap + 1) + 8) * sizeof(prx_cf32)),
        "stream_out changed the channelizer's output (%d threads, %zu channels)", threads, ns);
  free(y[0]);
  free(y[1]);
  free(x);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 0x5ca77e25u);
  const size_t K = 64;
  unsigned all[64];
  for (unsigned k = 0; k < K; k++) all[k] = k;
  /* no run of 4 consecutive channels, and channels out of order */
  const unsigned scattered[13] = {5, 9, 2, 13, 14, 15, 40, 63, 0, 1, 2, 33, 7};
  /* runs of 4, a run of 3, a run of 4 across a gap, the last channel */
  const unsigned broken[12] = {8, 9, 10, 11, 20, 21, 22, 30, 31, 32, 33, 63};
  const struct {
    const unsigned *sel;
    size_t n;
  } sels[3] = {{all, 64}, {scattered, 13}, {broken, 12}};
  const size_t ns[] = {1, 3, 4, 5, 7, 8, 31, 32, 33, 37};
  const size_t pitches[] = {K + 1, K + 8}; /* odd and a multiple of 8 */
  for (size_t q = 0; q < 3; q++)
    for (size_t p = 0; p < 2; p++)
      for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
        size_t n = ns[a];
        /* strides: the rows' length, and up to 7 more (multiples of 4 and 8 among them) */
        for (size_t extra = 0; extra < 8; extra++)
          for (size_t off = 0; off < 8; off++)
            check(&rng, K, pitches[p], n, sels[q].sel, sels[q].n, off, n + extra);
      }
  unsigned first10[10];
  for (unsigned k = 0; k < 10; k++) first10[k] = k;
  for (int threads = 1; threads <= 3; threads += 2) {
    check_object(&rng, threads, NULL, 0);
    check_object(&rng, threads, first10, 10);
    check_object(&rng, threads, scattered, 13);
  }
  return test_finish("test_chan_cpu_scatter");
}
