/* Streaming of the CPU channelizer: any chunking of the input (random sizes, 1-sample chunks,
 * sizes that are not multiples of D, chunks larger than the internal block, a small internal
 * block) gives the one-call output to float rounding; every input sample is accounted for
 * (ceil(N/D) outputs after N samples); the flush tail equals the float64 reference's outputs
 * past the end of the input; after flush (or reset) the object behaves as if just created.
 * Both ways of computing the selected channels are covered: 3 channels (direct DFT for
 * K >= 64) and 6 (FFT and transpose). */
#include "chan_ref.h"
#include "chan_run.h"
#include "testutil.h"

#include <string.h>

static prx_chan *make(unsigned K, unsigned D, unsigned P, size_t block, const unsigned *sel,
                      size_t n_sel) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = P;
  cfg.block_samples = block;
  cfg.select = sel;
  cfg.n_select = n_sel;
  cfg.threads = 2;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  return c;
}

/* Chunk lengths drawn by mode (0: one call, 1: all 1-sample, 2: random sizes in 1..3D,
 * 3: random sizes up to 5 blocks, 4: mixed). */
typedef struct {
  int mode;
  size_t D;
  test_rng *rng;
} chunking;

static size_t next_len(void *ctx, size_t fed, size_t left) {
  (void)fed;
  chunking *ch = ctx;
  size_t D = ch->D, len = left;
  if (ch->mode == 1) len = 1;
  if (ch->mode == 2) len = 1 + test_rng_u64(ch->rng) % (3 * D);
  if (ch->mode == 3) len = 1 + test_rng_u64(ch->rng) % (5 * 8 * D * 16);
  if (ch->mode == 4) {
    uint64_t r = test_rng_u64(ch->rng) % 4;
    len = r == 0 ? 1 : r == 1 ? D : r == 2 ? D + 1 : 1 + test_rng_u64(ch->rng) % (40 * D);
  }
  return len;
}

/* Feeds x in chunks drawn by mode, then flushes; y[s * cap + j] gets every output. */
static size_t run(prx_chan *c, const prx_cf32 *x, size_t n, int mode, test_rng *rng, prx_cf32 *y,
                  size_t cap, size_t *n_before_flush) {
  chunking ch = {mode, prx_chan_decimation(c), rng};
  return chan_run_stream(c, x, sizeof *x, n, next_len, &ch, y, cap, n_before_flush);
}

/* ns = 3 selected channels (for K >= 64 computed by the direct DFT) or 6 (FFT, with a run of
 * 4 consecutive channels for the vector transpose) */
static void check_chunkings(test_rng *rng, unsigned K, unsigned D, unsigned P, size_t block,
                            size_t n, size_t ns) {
  unsigned sel[6] = {K - 1, 0, K / 3, (K / 3 + 1) % K, (K / 3 + 2) % K, (K / 3 + 3) % K};
  if (ns == 3) sel[2] = K / 2;
  prx_chan *c = make(K, D, P, block, sel, ns);
  if (!c) return;
  size_t M = 0;
  const float *h = prx_chan_taps(c, &M);
  size_t cap = (n + M) / D + 4;
  prx_cf32 *x = malloc(n * sizeof *x);
  prx_cf32 *y0 = calloc(ns * cap, sizeof *y0), *y = calloc(ns * cap, sizeof *y);
  test_fill_cf32(rng, x, n, 1.0);
  size_t nb0 = 0, nb = 0;
  size_t n0 = run(c, x, n, 0, rng, y0, cap, &nb0);
  CHECK(n0 == (n + M - 1 + D - 1) / D, "K=%u D=%u: %zu outputs with flush", K, D, n0);
  /* the one-call output against the float64 reference, tail included */
  test_cf64 *ref = malloc(ns * n0 * sizeof *ref);
  chan_ref(x, n, h, M, K, D, sel, ns, 0, n0, ref);
  for (size_t s = 0; s < ns; s++) {
    double e = test_rel_l2_vs_cf64(y0 + s * cap, ref + s * n0, n0);
    CHECK(e <= 1e-5, "K=%u D=%u channel %u: rel L2 vs reference %.3g", K, D, sel[s], e);
    double et = test_rel_l2_vs_cf64(y0 + s * cap + nb0, ref + s * n0 + nb0, n0 - nb0);
    CHECK(et <= 1e-5, "K=%u D=%u channel %u: flush tail rel L2 vs reference %.3g", K, D, sel[s],
          et);
  }
  /* every chunking, on the same object (flush resets it), equals the one-call output */
  for (int mode = 1; mode <= 4; mode++) {
    memset(y, 0, ns * cap * sizeof *y);
    size_t n1 = run(c, x, n, mode, rng, y, cap, &nb);
    CHECK(n1 == n0 && nb == nb0, "mode %d: %zu/%zu outputs vs %zu/%zu", mode, nb, n1, nb0, n0);
    for (size_t s = 0; s < ns; s++) {
      double e = test_rel_l2_cf32(y + s * cap, y0 + s * cap, n0);
      CHECK(e <= 1e-6, "K=%u D=%u block=%zu mode %d channel %u: rel L2 vs one call %.3g", K, D,
            block, mode, sel[s], e);
    }
  }
  /* reset mid-stream forgets the history: the next run equals a fresh one */
  size_t k = 0;
  prx_cf32 *tmp = malloc(ns * cap * sizeof *tmp);
  CHECK_OK(prx_chan_execute(c, x, n / 3 + 1, tmp, cap, &k));
  prx_chan_reset(c);
  CHECK(prx_chan_flush_count(c) == 0, "flush after reset would emit %zu", prx_chan_flush_count(c));
  size_t n2 = run(c, x, n, 0, rng, y, cap, &nb);
  CHECK(n2 == n0, "after reset: %zu outputs vs %zu", n2, n0);
  for (size_t s = 0; s < ns; s++)
    CHECK(test_rel_l2_cf32(y + s * cap, y0 + s * cap, n0) <= 1e-6, "after reset channel %u differs",
          sel[s]);
  /* flush of an empty stream emits nothing */
  CHECK_OK(prx_chan_flush(c, NULL, 0, &k));
  CHECK(k == 0, "flush of an empty stream emitted %zu", k);
  printf("K=%-5u D=%-5u M=%-6zu block=%-6zu n=%-6zu %zu channels: chunkings agree\n", K, D, M,
         block, n, ns);
  free(tmp);
  free(ref);
  free(x);
  free(y0);
  free(y);
  prx_chan_destroy(c);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 7031);
  for (size_t ns = 3; ns <= 6; ns += 3) {
    check_chunkings(&rng, 2, 1, 16, 0, 300, ns);
    check_chunkings(&rng, 6, 3, 8, 0, 1000, ns);
    check_chunkings(&rng, 6, 6, 8, 5, 1000, ns);
    check_chunkings(&rng, 128, 64, 16, 0, 20000, ns);
    check_chunkings(&rng, 128, 128, 16, 777, 20000, ns);
    check_chunkings(&rng, 1000, 500, 8, 0, 30011, ns);
    check_chunkings(&rng, 1024, 512, 16, 1, 20000, ns);
    check_chunkings(&rng, 1024, 1024, 4, 0, 70000, ns);
  }
  return test_finish("test_chan_stream");
}
