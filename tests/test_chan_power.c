/* The power sums of polyrx channelize (cli/chan_power.c) over groups split into blocks: for
 * fresh random groups of every small length and random splits into blocks (empty ones too),
 * 1 to 4 channels at once (the vector path and the scalar one), each group's sum must be the
 * bits of the one-block sum the command made before (four chains by position parity, an odd
 * group's last output as re^2 + im^2 into the first chain; written out here without shortcuts)
 * and within 1e-12 of the float64 sum of |y|^2 (long double); non-finite outputs anywhere,
 * the held-back last output of a block included, are zeroed in the block, counted, and left
 * out of the sum. */
#include "testutil.h"

#include "chan_power.h"

#include <math.h>
#include <string.h>

#define MAX_LEN 600
#define MAX_BLOCKS 12

/* The one-block sum: chains e0, e1 (re^2, im^2 at even positions), e2, e3 (odd positions) in
 * order; an odd length's last output added as re^2 + im^2 to e0; (e0 + e2) + (e1 + e3). */
static double one_block_sum(const prx_cf32 *y, size_t k) {
  double e[4] = {0, 0, 0, 0};
  size_t j = 0;
  for (; j + 2 <= k; j += 2) {
    e[0] += (double)y[j].re * y[j].re;
    e[1] += (double)y[j].im * y[j].im;
    e[2] += (double)y[j + 1].re * y[j + 1].re;
    e[3] += (double)y[j + 1].im * y[j + 1].im;
  }
  if (j < k) e[0] += (double)y[j].re * y[j].re + (double)y[j].im * y[j].im;
  return (e[0] + e[2]) + (e[1] + e[3]);
}

static long double plain_sum(const prx_cf32 *y, size_t k) {
  long double s = 0;
  for (size_t j = 0; j < k; j++)
    s += (long double)y[j].re * y[j].re + (long double)y[j].im * y[j].im;
  return s;
}

/* One trial: n channels, a group of len outputs split into blocks at random, non-finite values
 * put in at random when `bad`. */
static void trial(test_rng *rng, size_t n, size_t len, int bad) {
  static prx_cf32 y[CHAN_POWER_ROWS][MAX_LEN], clean[CHAN_POWER_ROWS][MAX_LEN];
  static chan_power p[CHAN_POWER_ROWS];
  size_t cut[MAX_BLOCKS + 1], n_blocks = 1 + (size_t)(test_rng_uniform(rng) * MAX_BLOCKS);
  /* block ends, sorted, empty blocks allowed */
  cut[0] = 0;
  for (size_t b = 1; b < n_blocks; b++) cut[b] = (size_t)(test_rng_uniform(rng) * (len + 1));
  cut[n_blocks] = len;
  for (size_t a = 1; a < n_blocks; a++)
    for (size_t b = a + 1; b < n_blocks; b++)
      if (cut[b] < cut[a]) {
        size_t t = cut[a];
        cut[a] = cut[b];
        cut[b] = t;
      }
  uint64_t want_zeroed = 0;
  for (size_t c = 0; c < n; c++) {
    test_fill_cf32(rng, y[c], len, 0.1 + test_rng_uniform(rng));
    memcpy(clean[c], y[c], len * sizeof y[c][0]);
    for (size_t i = 0; bad && len && i < 3; i++) {
      /* a block's last output (the held one) half of the time, else anywhere */
      size_t b = 1 + (size_t)(test_rng_uniform(rng) * n_blocks);
      size_t j = test_rng_uniform(rng) < 0.5 && cut[b] ? cut[b] - 1
                                                       : (size_t)(test_rng_uniform(rng) * len);
      if (!isfinite(y[c][j].re) || !isfinite(y[c][j].im)) continue;
      y[c][j].re = test_rng_uniform(rng) < 0.5 ? NAN : INFINITY;
      clean[c][j].re = clean[c][j].im = 0;
      want_zeroed++;
    }
  }
  /* the chains start from an earlier group's leftovers: chan_power_end must have reset them */
  chan_power_group g = {0, 0};
  for (size_t c = 0; c < n; c++) {
    prx_cf32 one = {0.5f, -0.25f};
    chan_power *pc = &p[c];
    chan_power_add(&pc, (prx_cf32 *[]){&one}, 1, 1, &g, &(uint64_t){0});
  }
  chan_power_next(&g, 1);
  for (size_t c = 0; c < n; c++) chan_power_end(&p[c], &g);
  chan_power_restart(&g);
  uint64_t zeroed = 0;
  for (size_t b = 0; b < n_blocks; b++) {
    chan_power *ps[CHAN_POWER_ROWS];
    prx_cf32 *ys[CHAN_POWER_ROWS];
    for (size_t c = 0; c < n; c++) {
      ps[c] = &p[c];
      ys[c] = y[c] + cut[b];
    }
    chan_power_add(ps, ys, n, cut[b + 1] - cut[b], &g, &zeroed);
    chan_power_next(&g, cut[b + 1] - cut[b]);
  }
  for (size_t c = 0; c < n; c++) {
    double got = chan_power_end(&p[c], &g), want = one_block_sum(clean[c], len);
    CHECK(memcmp(&got, &want, sizeof got) == 0,
          "%zu channels, length %zu, %zu blocks, channel %zu: %.17g, the one-block sum %.17g", n,
          len, n_blocks, c, got, want);
    long double ref = plain_sum(clean[c], len);
    CHECK(fabsl(got - ref) <= 1e-12L * ref, "channel %zu: %.17g against %.17Lg", c, got, ref);
    CHECK(memcmp(y[c], clean[c], len * sizeof y[c][0]) == 0, "channel %zu: outputs not zeroed", c);
  }
  CHECK(zeroed == want_zeroed, "%llu outputs zeroed, %llu were not finite",
        (unsigned long long)zeroed, (unsigned long long)want_zeroed);
  chan_power_restart(&g);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261201);
  for (size_t len = 0; len <= 40; len++)
    for (size_t n = 1; n <= CHAN_POWER_ROWS; n++)
      for (int rep = 0; rep < 4; rep++) trial(&rng, n, len, rep & 1);
  for (int rep = 0; rep < 400; rep++) {
    size_t len = 1 + (size_t)(test_rng_uniform(&rng) * (MAX_LEN - 1));
    trial(&rng, 1 + (size_t)(test_rng_uniform(&rng) * CHAN_POWER_ROWS), len, rep % 3 == 0);
  }
  return test_finish("test_chan_power");
}
