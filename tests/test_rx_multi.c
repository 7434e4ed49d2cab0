/* The receiver across several CPU workers (polyrx/rx_multi.h) against the single receiver on
 * the same capture: every carrier's bits identical to the single run's and its LLRs equal to
 * float rounding (relative L2 below 1e-4, about 1e-5 measured: the workers' NCO and mixer phases
 * start at their own streams' starts), every seam matched, for segment lengths and worker counts 2,
 * 3 and 5, with carriers at 6 to 30 dB Es/N0 that cross the seams with clock offsets of +-1000 ppm
 * and CFO, in differential, pilot and plain coherent modes (a worker's quarter-turn differs from
 * the single run's: the stitcher turns it); the same across seams inside gaps (transmitters off,
 * and a dropout of exact zeros) shorter than the lead-in, with workers whose streams start
 * inside a gap (received again from earlier: a start in a gap sets a wrong pilot frame); packed
 * bits the packing of the unpacked
 * ones; the strong carriers with exactly the symbols sent; bad configurations refused. The
 * capture is long enough that most workers' streams start well inside it, on the single run's
 * CFO-span grid (3 spans of 4096 symbols at 16/3 channel samples per symbol). */
#include "test_rx_scene.h"

#include "polyrx/rx_multi.h"

#define FS 102400.0 /* K = 16 channels of 6400 Hz: 2400 Bd at 42.67 input samples per symbol */
#define KCH 16
#define SP (FS / KCH)
#define BLOCK                                                                                      \
  512 /* demodulator block (the default) and CFO span (the shortest: short segments)               \
       */
#define SPAN 4096

static scene g_scene;

static void make_scene(void) {
  scene *s = &g_scene;
  s->fs = FS;
  s->K = KCH;
  scene_add(s, 1 * SP, 0.1 * 2400, 30, 1000, 0.3, 0.35, 0);       /* CFO, +1000 ppm */
  scene_add(s, -2.5 * SP, -0.12 * 2400, 25, -1000, 0.1, 0.35, 0); /* half way, -1000 ppm */
  scene_add(s, 3.25 * SP, 0.05 * 2400, 25, 700, 0.6, 0.35, 1);    /* pilots, +700 ppm */
  scene_add(s, -5.3 * SP, -0.08 * 2400, 20, -400, 0.8, 0.35, 0);  /* coherent, below */
  scene_add(s, 6 * SP, 0.02 * 2400, 12, 300, 0.5, 0.35, 0);       /* 12 dB */
  scene_add(s, -7 * SP, 0.04 * 2400, 6, -1000, 0.2, 0.35, 0);     /* 6 dB, -1000 ppm */
  /* carrier 3 in coherent mode: sent and received without differential coding */
  s->sim[3].differential = 0;
  s->rx[3].ambiguity = PRX_QPSK_NONE;
}

static prx_rx_config base_config(collect *k) {
  prx_rx_config rc = scene_rx_config(&g_scene, k);
  rc.block_symbols = BLOCK;
  rc.cfo_span_symbols = SPAN;
  rc.threads = 1;
  return rc;
}

static uint64_t g_retries;           /* the last multi run's segments received again */
static size_t g_silent = (size_t)-1; /* a listed carrier without a signal (not compared) */

/* The multi receiver over the capture in chunks of `chunk` samples (0: one call). */
static int receive_multi(const scene *s, const prx_rx_multi_config *mc, size_t chunk) {
  prx_rx_multi *m = NULL;
  prx_status st = prx_rx_multi_create(mc, &m);
  if (st) {
    fprintf(stderr, "prx_rx_multi_create: %s\n", prx_last_error());
    return -1;
  }
  size_t step = chunk ? chunk : s->n;
  for (size_t i = 0; i < s->n && !st; i += step)
    st = prx_rx_multi_execute(m, s->x + i, s->n - i < step ? s->n - i : step);
  if (!st) st = prx_rx_multi_flush(m);
  if (st) fprintf(stderr, "prx_rx_multi: %s\n", prx_last_error());
  g_retries = prx_rx_multi_retries(m);
  size_t want = (s->n + mc->segment_samples - 1) / mc->segment_samples - 1;
  for (size_t c = 0; c < s->n_car && !st; c++) {
    uint64_t seams = 0, unmatched = 0;
    prx_rx_multi_seams(m, c, &seams, &unmatched);
    CHECK(seams == want && (unmatched == 0 || c == g_silent),
          "carrier %zu: %llu seams (want %zu), %llu unmatched", c, (unsigned long long)seams, want,
          (unsigned long long)unmatched);
  }
  prx_rx_multi_destroy(m);
  return st ? -1 : 0;
}

/* Symbols where a and b differ (bits), and the first index; the counts must be equal. */
static size_t bit_diffs(const uint8_t *a, const uint8_t *b, size_t n, size_t *first) {
  size_t d = 0;
  *first = (size_t)-1;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      if (!d) *first = i;
      d++;
    }
  return d;
}

static double llr_rel_l2(const float *a, const float *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : 0;
}

/* The multi receiver (W CPU workers, segments of seg samples, the capture in chunks) against
 * the single run `one` of the same capture: bits identical, LLRs to float rounding. */
static void compare_multi(const scene *s, const collect *one, unsigned W, size_t seg, size_t chunk,
                          const char *what) {
  collect k = {0};
  prx_rx_multi_config mc = prx_rx_multi_config_default();
  mc.rx = base_config(&k);
  mc.rx.carriers = s->rx;
  mc.rx.n_carriers = s->n_car;
  k.n_car = s->n_car;
  mc.rx.llrs = 1;
  mc.cpu_workers = W;
  mc.segment_samples = seg;
  CHECK(receive_multi(s, &mc, chunk) == 0, "%s: multi receiver", what);
  size_t bad = 0;
  double worst = 0;
  for (size_t c = 0; c < s->n_car; c++) {
    size_t first = 0;
    if (c == g_silent) { /* noise: cut where the symbol rates predict, a symbol per seam at most */
      size_t seams = (s->n + seg - 1) / seg - 1, n = k.nbits[c] / 2, n1 = one->nbits[c] / 2;
      CHECK(n + seams >= n1 && n <= n1 + seams, "%s, silent carrier %zu: %zu symbols, single %zu",
            what, c, n, n1);
      continue;
    }
    CHECK(k.nbits[c] == one->nbits[c], "%s, W %u seg %zu carrier %zu: %zu bits, single run %zu",
          what, W, seg, c, k.nbits[c], one->nbits[c]);
    if (k.nbits[c] != one->nbits[c]) continue;
    size_t d = bit_diffs(k.bits[c], one->bits[c], k.nbits[c], &first);
    bad += d;
    CHECK(d == 0, "%s, W %u seg %zu carrier %zu: %zu bits differ from the single run (first %zu)",
          what, W, seg, c, d, first);
    CHECK(k.nllr[c] == one->nllr[c], "%s, carrier %zu: %zu LLRs, single run %zu", what, c,
          k.nllr[c], one->nllr[c]);
    if (k.nllr[c] != one->nllr[c]) continue;
    double e = llr_rel_l2(k.llrs[c], one->llrs[c], k.nllr[c]);
    if (e > worst) worst = e;
    CHECK(e < 1e-4, "%s, W %u seg %zu carrier %zu: LLRs %.2e from the single run", what, W, seg, c,
          e);
  }
  printf("%s: workers %u, segment %zu (%zu seams), chunk %zu: %zu bits differ, LLRs %.1e\n", what,
         W, seg, (s->n + seg - 1) / seg - 1, chunk, bad, worst);
  collect_free(&k);
}

static void test_against_single(void) {
  const scene *s = &g_scene;
  collect one = {0};
  prx_rx_config rc = base_config(&one);
  rc.llrs = 1;
  CHECK(scene_receive(s, &rc, 0, NULL) == 0, "single receiver");
  /* the single run itself: the strong carriers with exactly the symbols sent */
  for (size_t c = 0; c < s->n_car; c++) {
    if (s->rx[c].ambiguity == PRX_QPSK_NONE) {
      CHECK(one.nbits[c] == s->nref[c], "carrier %zu: %zu bits, sent %zu", c, one.nbits[c],
            s->nref[c]);
      continue;
    }
    long e = scene_errors(s, &one, c);
    CHECK(e == 0 || (e > 0 && s->esn0_db + s->sim[c].power_db < 20),
          "single run, carrier %zu: %ld errors (-1: count)", c, e);
  }
  /* the derived lead-in and run-out, reported */
  collect k = {0};
  prx_rx_multi_config mc = prx_rx_multi_config_default();
  mc.rx = base_config(&k);
  mc.segment_samples = 1000000;
  prx_rx_multi *m = NULL;
  CHECK_OK(prx_rx_multi_create(&mc, &m));
  size_t seg = 0, lead = 0, tail = 0;
  prx_rx_multi_get_layout(m, &seg, &lead, &tail);
  CHECK(seg == 1000000 && lead > 5 * SPAN * FS / 2400 && tail > SPAN * FS / 2400,
        "layout %zu %zu %zu", seg, lead, tail);
  CHECK(prx_rx_multi_n_workers(m) == 2, "workers");
  prx_rx_multi_destroy(m);
  printf("lead-in up to %zu, run-out %zu samples\n", lead, tail);

  struct {
    unsigned workers;
    size_t segment, chunk;
  } runs[] = {{2, 1000000, 0}, {3, 700000, 0},     {5, 400000, 0},
              {5, 150000, 0},  {2, 900000, 12347}, {3, 1600000, 65536}};
  for (size_t r = 0; r < sizeof runs / sizeof *runs; r++)
    compare_multi(s, &one, runs[r].workers, runs[r].segment, runs[r].chunk, "carriers");

  /* packed: the packing of the single run's unpacked bits */
  mc.rx.packed = 1;
  mc.cpu_workers = 3;
  mc.segment_samples = 1100000;
  CHECK(receive_multi(s, &mc, 0) == 0, "multi receiver, packed");
  for (size_t c = 0; c < s->n_car; c++) {
    size_t nb = (one.nbits[c] + 7) / 8, bad = 0;
    CHECK(k.nbits[c] == nb, "carrier %zu: %zu packed bytes, want %zu", c, k.nbits[c], nb);
    for (size_t i = 0; i < nb && k.nbits[c] == nb; i++) {
      uint8_t v = 0;
      for (size_t b = 0; b < 8; b++) {
        size_t j = 8 * i + b;
        v = (uint8_t)(v << 1 | (j < one.nbits[c] ? one.bits[c][j] : 0));
      }
      bad += k.bits[c][i] != v;
    }
    CHECK(bad == 0, "carrier %zu: %zu packed bytes differ", c, bad);
  }
  collect_free(&k);
  collect_free(&one);
}

/* A listed carrier without a signal: its seams do not match (its timing runs from its worker's
 * start), the others' are identical still, and no segment is received again for it. */
static void test_silent(void) {
  scene gs = g_scene;
  prx_rx_carrier *r = &gs.rx[gs.n_car++];
  *r = prx_rx_carrier_default();
  r->freq = -4 * SP; /* a channel between carriers 1 and 3 */
  r->symbol_rate = 2400;
  collect one = {0};
  prx_rx_config rc = base_config(&one);
  rc.carriers = gs.rx;
  rc.n_carriers = gs.n_car;
  one.n_car = gs.n_car;
  rc.llrs = 1;
  CHECK(scene_receive(&gs, &rc, 0, NULL) == 0, "single receiver, silent carrier");
  g_silent = gs.n_car - 1;
  compare_multi(&gs, &one, 3, 700000, 0, "silent");
  CHECK(g_retries == 0, "silent: %llu segments received again", (unsigned long long)g_retries);
  g_silent = (size_t)-1;
  collect_free(&one);
}

/* Seams inside gaps shorter than the lead-in: the transmitters off over [1.3M, 1.6M) (the seam
 * at 1.4M) and [2.0M, 2.3M) (2.1M), a dropout of exact zeros over [2.75M, 2.85M) (2.8M): the
 * worker of the seam's segment starts before the gap, so its estimates through the gap (the
 * clock kept, the noise's bits) are the single run's and the seam matches there too. */
static void test_gaps(void) {
  scene gs = g_scene;
  const prx_sim_gap gaps[] = {{1300000, 300000, 0}, {2000000, 300000, 0}, {2750000, 100000, 1}};
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = gs.fs;
  sc.carriers = gs.sim;
  sc.n_carriers = gs.n_car;
  sc.noise = 1;
  sc.esn0_db = gs.esn0_db;
  sc.noise_seed = 23;
  sc.gaps = gaps;
  sc.n_gaps = sizeof gaps / sizeof *gaps;
  prx_sim *sim = NULL;
  gs.x = malloc(gs.n * sizeof *gs.x);
  CHECK(gs.x && prx_sim_create(&sc, &sim) == PRX_OK && prx_sim_generate(sim, gs.x, gs.n) == PRX_OK,
        "gap capture");
  prx_sim_destroy(sim);
  collect one = {0};
  prx_rx_config rc = base_config(&one);
  rc.llrs = 1;
  CHECK(scene_receive(&gs, &rc, 0, NULL) == 0, "single receiver, gaps");
  /* the workers that start inside the second gap (pilots: a wrong frame) start again earlier */
  compare_multi(&gs, &one, 3, 700000, 0, "gaps");
  CHECK(g_retries > 0, "gaps: no segment received again");
  compare_multi(&gs, &one, 5, 350000, 0, "gaps");
  CHECK(g_retries > 0, "gaps: no segment received again");
  collect_free(&one);
  free(gs.x);
}

static void nop_fn(void *u, size_t c, const uint8_t *b, size_t nb, const float *l, size_t ns) {
  (void)u, (void)c, (void)b, (void)nb, (void)l, (void)ns;
}
static void chan_fn(void *u, size_t c, const prx_cf32 *x, size_t n) {
  (void)u, (void)c, (void)x, (void)n;
}

static void test_bad_config(void) {
  collect k = {0};
  prx_rx_multi_config mc = prx_rx_multi_config_default();
  mc.rx = base_config(&k);
  prx_rx_multi *m = NULL;
  mc.cpu_workers = 0;
  CHECK(prx_rx_multi_create(&mc, &m) == PRX_ERR_INVALID && !m, "0 workers");
  mc.cpu_workers = PRX_RX_MULTI_MAX_WORKERS + 1;
  CHECK(prx_rx_multi_create(&mc, &m) == PRX_ERR_INVALID && !m, "too many workers");
  mc.cpu_workers = 2;
  mc.rx.on_channel = chan_fn;
  CHECK(prx_rx_multi_create(&mc, &m) == PRX_ERR_UNSUPPORTED && !m, "on_channel");
  mc.rx.on_channel = NULL;
  mc.rx.on_output = NULL;
  CHECK(prx_rx_multi_create(&mc, &m) == PRX_ERR_INVALID && !m, "no on_output");
  mc.rx.on_output = nop_fn;
  prx_rx_carrier wide = g_scene.rx[0];
  wide.symbol_rate = SP; /* occupies 1.35 spacings */
  mc.rx.carriers = &wide;
  mc.rx.n_carriers = 1;
  CHECK(prx_rx_multi_create(&mc, &m) == PRX_ERR_INVALID && !m, "too wide a carrier");
  int dev = -1;
  mc.rx.carriers = g_scene.rx;
  mc.rx.n_carriers = g_scene.n_car;
  mc.devices = &dev;
  mc.n_devices = 1;
  prx_status st = prx_rx_multi_create(&mc, &m);
  CHECK((st == PRX_ERR_INVALID || st == PRX_ERR_NODEVICE) && !m, "device -1: %d", st);
  /* a stream shorter than a segment, and an empty one: the single receiver's output */
  mc.devices = NULL;
  CHECK_OK(prx_rx_multi_create(&mc, &m));
  CHECK_OK(prx_rx_multi_flush(m));
  CHECK_OK(prx_rx_multi_execute(m, g_scene.x, 0));
  CHECK_OK(prx_rx_multi_flush(m));
  CHECK(prx_rx_multi_symbols(m, 0) == 0, "an empty stream has no symbols");
  CHECK(prx_rx_multi_execute(m, NULL, 5) == PRX_ERR_INVALID, "NULL input");
  prx_rx_multi_destroy(m);
  prx_rx_multi_destroy(NULL);
}

int main(void) {
  make_scene();
  CHECK(scene_make(&g_scene, 4500000, 17) == 0, "scene");
  test_bad_config();
  test_against_single();
  test_gaps();
  test_silent();
  scene_free(&g_scene);
  return test_finish("test_rx_multi");
}
