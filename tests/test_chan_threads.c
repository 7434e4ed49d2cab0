/* Thread-count invariance of the CPU channelizer: the same input, cut into the same chunks,
 * gives bit-identical output (memcmp) for 1, 2, 3, 4 and 7 worker threads, including the flush
 * tail, for several K (a power of two, a non-power of two, D = K and K/2) and channel subsets;
 * and the output is right (float64 reference on a few channels), so that identical-but-wrong
 * cannot pass. */
#include "chan_ref.h"
#include "chan_run.h"
#include "testutil.h"

#include <string.h>

/* Chunk lengths taken from a list in turn. */
typedef struct {
  const size_t *len;
  size_t n, i;
} cycle;

static size_t next_len(void *ctx, size_t fed, size_t left) {
  (void)fed;
  (void)left;
  cycle *cy = ctx;
  return cy->len[cy->i++ % cy->n];
}

/* Runs the whole input through a fresh object with `threads` workers in fixed chunks. */
static size_t run(unsigned K, unsigned D, int threads, const unsigned *sel, size_t n_sel,
                  const prx_cf32 *x, size_t n, const size_t *chunks, size_t n_chunks, prx_cf32 *y,
                  size_t cap) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = K;
  cfg.decimation = D;
  cfg.taps_per_channel = 12;
  cfg.select = sel;
  cfg.n_select = n_sel;
  cfg.threads = threads;
  cfg.backend = PRX_BACKEND_CPU;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return 0;
  cycle cy = {chunks, n_chunks, 0};
  size_t got = chan_run_stream(c, x, sizeof *x, n, next_len, &cy, y, cap, NULL);
  prx_chan_destroy(c);
  return got;
}

static void check(test_rng *rng, unsigned K, unsigned D, const unsigned *sel, size_t n_sel,
                  size_t n) {
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 1.0);
  size_t ns = sel ? n_sel : K, cap = (n + 12 * (size_t)K) / D + 4;
  prx_cf32 *y1 = calloc(ns * cap, sizeof *y1), *yt = calloc(ns * cap, sizeof *yt);
  /* one big call, then uneven chunks that leave partial batches and single outputs */
  size_t big[1] = {n}, uneven[4] = {7 * (size_t)D + 3, 1, 100 * (size_t)D + 17, 33};
  const size_t *plans[2] = {big, uneven};
  size_t plan_len[2] = {1, 4};
  for (int p = 0; p < 2; p++) {
    size_t n1 = run(K, D, 1, sel, n_sel, x, n, plans[p], plan_len[p], y1, cap);
    const int threads[] = {2, 3, 4, 7};
    for (int t = 0; t < 4; t++) {
      memset(yt, 0, ns * cap * sizeof *yt);
      size_t nt = run(K, D, threads[t], sel, n_sel, x, n, plans[p], plan_len[p], yt, cap);
      CHECK(nt == n1, "K=%u D=%u threads=%d: %zu outputs vs %zu", K, D, threads[t], nt, n1);
      int same = 1;
      for (size_t s = 0; s < ns; s++)
        same &= memcmp(y1 + s * cap, yt + s * cap, n1 * sizeof *y1) == 0;
      CHECK(same, "K=%u D=%u chunking %d: %d threads differ from 1 thread", K, D, p, threads[t]);
    }
    /* and it is the right answer: a few channels against the float64 reference */
    unsigned chk[2] = {sel ? sel[0] : K - 1, sel ? sel[n_sel - 1] : 1};
    size_t idx[2] = {sel ? 0 : K - 1, sel ? n_sel - 1 : 1};
    float *h = malloc((size_t)K * 12 * sizeof *h);
    CHECK_OK(prx_design_kaiser((size_t)K * 12, 80, 0.5 / K, h));
    test_cf64 *ref = malloc(2 * n1 * sizeof *ref);
    chan_ref(x, n, h, (size_t)K * 12, K, D, chk, 2, 0, n1, ref);
    for (int i = 0; i < 2; i++) {
      double e = test_rel_l2_vs_cf64(y1 + idx[i] * cap, ref + i * n1, n1);
      CHECK(e <= 1e-5, "K=%u D=%u channel %u: rel L2 vs reference %.3g", K, D, chk[i], e);
    }
    free(h);
    free(ref);
  }
  printf("K=%-5u D=%-5u n=%zu: 1, 2, 3, 4, 7 threads bit-identical\n", K, D, n);
  free(x);
  free(y1);
  free(yt);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 99);
  check(&rng, 1024, 512, NULL, 0, 400000);
  check(&rng, 1000, 1000, NULL, 0, 300000);
  check(&rng, 64, 32, NULL, 0, 200000);
  unsigned sel[] = {4095, 17, 2048};
  check(&rng, 4096, 2048, sel, 3, 600000);
  return test_finish("test_chan_threads");
}
