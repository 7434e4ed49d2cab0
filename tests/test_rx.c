/* The receiver on the CPU backend: its prototype's response (flat to 0.8 spacing, 80 dB down
 * from 1.2 spacing, computed in float64); every carrier of a generated capture recovered with
 * exactly the symbols sent (on a centre, a quarter and half way between centres, at both band
 * edges, two in one channel, with CFO and clock offsets; strong ones without error, weak ones
 * at the DE-QPSK thresholds of Eb/N0 4 and 6 dB); each carrier's bits, stats and channel samples
 * its own where the rows go in another order (channel order within a group); the same bits (and
 * LLRs to float rounding) for any chunking, block size and thread count; packed bits the packing of
 * the unpacked ones; a reset receiver's output a fresh one's; bad carriers refused with the limit
 * named; one receiver over several streams after prx_rx_flush and prx_rx_reset, of other lengths
 * and chunkings, the bits and stats counters of a fresh receiver (test_rx_streams.h, which
 * test_rx_cuda runs on the CUDA path). */
#include "test_rx_streams.h"

#include "support/chan_ref.h"

#define FS 409600.0 /* K = 64 channels of 6400 Hz, 12800 Hz per channel: 2400 Bd at 5.33 sps */
#define KCH 64
#define SP (FS / KCH)

/* |H(f)| in dB of the prototype at f channel spacings, in float64. */
static double response_db(const float *h, size_t M, unsigned K, double f_sp) {
  double w = 2 * M_PI * f_sp / K, re = 0, im = 0;
  for (size_t m = 0; m < M; m++) {
    re += h[m] * cos(w * (double)m);
    im -= h[m] * sin(w * (double)m);
  }
  return 10 * log10(re * re + im * im);
}

static void nop_fn(void *u, size_t c, const uint8_t *b, size_t nb, const float *l, size_t ns) {
  (void)u, (void)c, (void)b, (void)nb, (void)l, (void)ns;
}

/* The receiver at FS with K channels for carriers car[0..n-1], its output dropped. */
static prx_rx_config config_of(unsigned K, const prx_rx_carrier *car, size_t n) {
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = FS;
  rc.channels = K;
  rc.carriers = car;
  rc.n_carriers = n;
  rc.on_output = nop_fn;
  return rc;
}

static void test_prototype(unsigned K, double stop_to) {
  prx_rx_carrier car = prx_rx_carrier_default();
  car.symbol_rate = 0.4 * FS / K;
  prx_rx_config rc = config_of(K, &car, 1);
  prx_rx *rx = NULL;
  CHECK_OK(prx_rx_create(&rc, &rx));
  if (!rx) return;
  size_t M = 0;
  const float *h = prx_rx_taps(rx, &M);
  CHECK(M == (size_t)K * rc.taps_per_channel + 1, "K %u: %zu taps", K, M);
  double sum = 0, asym = 0;
  for (size_t m = 0; m < M; m++) {
    sum += h[m];
    asym = fmax(asym, fabs((double)h[m] - h[M - 1 - m]));
  }
  CHECK(fabs(sum - 1) < 1e-5 && asym == 0, "K %u: sum %.9g, asymmetry %g", K, sum, asym);
  double pass = 0, stop = -400;
  for (double f = 0; f <= 0.8; f += 0.002) pass = fmax(pass, fabs(response_db(h, M, K, f)));
  for (double f = 1.2; f <= stop_to; f += 0.004) stop = fmax(stop, response_db(h, M, K, f));
  CHECK(pass < 0.01, "K %u: pass band ripple %.4f dB within 0.8 spacing", K, pass);
  CHECK(stop < -80, "K %u: stop band %.2f dB beyond 1.2 spacing", K, stop);
  printf("prototype K %u: %zu taps, pass band within %.5f dB to 0.8 spacing, stop band %.1f dB "
         "from 1.2 to %.0f spacings\n",
         K, M, pass, stop, stop_to);
  prx_rx_destroy(rx);
}

/* on_channel: each carrier's channel, aligned with the input: sample j is
 * sum_m h[m] x[jD - m + PD] exp(-2 pi i k (jD - m + PD) / K) (the channelizer's definition
 * with the group delay P D removed, x = 0 outside the input), ceil(N / D) of them, checked in
 * float64 on noise, for any chunking. */
typedef struct {
  prx_cf32 *y[SC_MAX];
  size_t n[SC_MAX];
} chan_collect;

static void chan_fn(void *user, size_t c, const prx_cf32 *y, size_t n) {
  chan_collect *k = user;
  if (c >= SC_MAX) return;
  prx_cf32 *p = realloc(k->y[c], (k->n[c] + n) * sizeof *p);
  if (!p) abort();
  memcpy(p + k->n[c], y, n * sizeof *y);
  k->y[c] = p;
  k->n[c] += n;
}

static void test_channel_samples(void) {
  const size_t N = 5003;
  const unsigned D = KCH / 2;
  prx_cf32 *x = malloc(N * sizeof *x);
  test_rng r;
  test_rng_seed(&r, 99);
  test_fill_cf32(&r, x, N, 1);
  prx_rx_carrier car[2] = {prx_rx_carrier_default(), prx_rx_carrier_default()};
  car[0].freq = 5 * SP;
  car[0].symbol_rate = car[1].symbol_rate = 2400;
  car[1].freq = -7.6 * SP; /* nearest: -8, channel 56 */
  const unsigned k_of[2] = {5, 56};
  for (int chunked = 0; chunked < 2; chunked++) {
    chan_collect k;
    memset(&k, 0, sizeof k);
    prx_rx_config rc = config_of(KCH, car, 2);
    rc.on_channel = chan_fn;
    rc.user = &k;
    rc.block_samples = chunked ? 77 : 0;
    prx_rx *rx = NULL;
    CHECK_OK(prx_rx_create(&rc, &rx));
    if (!rx) break;
    size_t M = 0;
    const float *h = prx_rx_taps(rx, &M);
    size_t step = chunked ? 1000 : N;
    for (size_t i = 0; i < N; i += step)
      CHECK_OK(prx_rx_execute(rx, x + i, N - i < step ? N - i : step));
    CHECK_OK(prx_rx_flush(rx));
    size_t want = (N + D - 1) / D, PD = (M - 1) / 2;
    for (int c = 0; c < 2; c++) {
      CHECK(k.n[c] == want, "carrier %d: %zu channel samples, want %zu", c, k.n[c], want);
      /* the float64 channelizer's output j + P is the aligned sample j (the group delay
       * P D = (M - 1) / 2 is a whole number of outputs) */
      test_cf64 *ref = calloc(want, sizeof *ref);
      chan_ref(x, N, h, M, KCH, D, &k_of[c], 1, PD / D, want, ref);
      double e = k.n[c] == want ? test_rel_l2_vs_cf64(k.y[c], ref, want) : INFINITY;
      CHECK(e < 1e-5, "carrier %d (%s): channel samples off the definition by %.3g", c,
            chunked ? "chunked" : "one call", e);
      free(ref);
      free(k.y[c]);
    }
    prx_rx_destroy(rx);
  }
  free(x);
}

/* The rows in channel order within a group, the outputs in carrier order: carriers given out of
 * channel order, two groups interleaved, two carriers in one channel in each group (the group's
 * rows: by channel, then carrier). Every carrier's bits are exactly the ones it sent, its stats
 * name its channel, and its on_channel samples are its channel's (float64 reference): a carrier
 * handed another's row fails all three. */
typedef struct {
  collect k; /* first: on_output's user (collect_fn) */
  chan_collect ch;
} order_collect;

static void order_chan_fn(void *user, size_t c, const prx_cf32 *y, size_t n) {
  chan_fn(&((order_collect *)user)->ch, c, y, n);
}

static void test_row_order(void) {
  scene s;
  memset(&s, 0, sizeof s);
  s.fs = FS;
  s.K = KCH;
  scene_add(&s, 30 * SP, 0, 30, 0, 0.3, 0.35, 0);       /* channel 30 */
  scene_add(&s, 20.3 * SP, 0, 30, 100, 0.6, 0.35, 0);   /* channel 20, the first of two */
  scene_add(&s, -19.7 * SP, 0, 30, 0, 0.2, 0.35, 1);    /* pilots: channel 44, the first */
  scene_add(&s, 5.25 * SP, 40, 30, -200, 0.8, 0.35, 0); /* channel 5 */
  scene_add(&s, 19.7 * SP, 0, 30, 0, 0.1, 0.35, 0);     /* channel 20, the second */
  scene_add(&s, 10 * SP, 0, 30, 300, 0.5, 0.35, 1);     /* pilots: channel 10 */
  scene_add(&s, -8 * SP, -60, 30, 0, 0.4, 0.35, 0);     /* channel 56 */
  scene_add(&s, -20.3 * SP, 0, 30, -100, 0.7, 0.35, 1); /* pilots: channel 44, the second */
  const unsigned k_of[] = {30, 20, 44, 5, 20, 10, 56, 44};
  CHECK(scene_make(&s, 600000, 21) == 0, "scene");
  if (!s.x) return;
  order_collect oc;
  memset(&oc, 0, sizeof oc);
  prx_rx_config rc = scene_rx_config(&s, &oc.k);
  rc.user = &oc;
  rc.on_channel = order_chan_fn;
  prx_rx *rx = NULL;
  CHECK(scene_receive(&s, &rc, 0, &rx) == 0, "receive");
  CHECK(!oc.k.bad, "output for a carrier that does not exist");
  CHECK(rx && prx_rx_n_groups(rx) == 2, "groups: %zu", rx ? prx_rx_n_groups(rx) : 0);
  size_t M = 0;
  const float *h = rx ? prx_rx_taps(rx, &M) : NULL;
  const size_t D = KCH / 2, want = (s.n + D - 1) / D, PD = (M - 1) / 2;
  test_cf64 *ref = calloc(want, sizeof *ref);
  for (size_t c = 0; rx && ref && c < s.n_car; c++) {
    long e = scene_errors(&s, &oc.k, c);
    CHECK(e == 0, "carrier %zu: %ld errors (%zu bits out, %zu sent)", c, e, oc.k.nbits[c],
          s.nref[c]);
    prx_rx_stats st;
    CHECK_OK(prx_rx_get_stats(rx, c, &st));
    CHECK(st.channel == k_of[c], "carrier %zu: channel %u, want %u", c, st.channel, k_of[c]);
    chan_ref(s.x, s.n, h, M, KCH, D, &k_of[c], 1, PD / D, want, ref);
    double err = oc.ch.n[c] == want ? test_rel_l2_vs_cf64(oc.ch.y[c], ref, want) : INFINITY;
    CHECK(err < 1e-5, "carrier %zu: %zu channel samples (want %zu), off channel %u's by %.3g", c,
          oc.ch.n[c], want, k_of[c], err);
    printf("row order, carrier %zu: channel %u, %zu bits, %ld errors, channel samples within "
           "%.2g\n",
           c, st.channel, oc.k.nbits[c], e, err);
  }
  free(ref);
  prx_rx_destroy(rx);
  for (size_t c = 0; c < SC_MAX; c++) free(oc.ch.y[c]);
  collect_free(&oc.k);
  scene_free(&s);
}

static void expect_invalid(prx_rx_carrier car, const char *words, const char *what) {
  prx_rx_config rc = config_of(KCH, &car, 1);
  prx_status st = prx_rx_check_carrier(&rc, &car);
  CHECK(st == PRX_ERR_INVALID && strstr(prx_last_error(), words), "%s: %s, '%s'", what,
        prx_strerror(st), prx_last_error());
  prx_rx *rx = NULL;
  st = prx_rx_create(&rc, &rx);
  CHECK(st == PRX_ERR_INVALID && !rx && strstr(prx_last_error(), words), "%s (create): '%s'", what,
        prx_last_error());
}

static void test_bad_carriers(void) {
  prx_rx_carrier c = prx_rx_carrier_default();
  c.symbol_rate = 2400;
  c.freq = FS / 2 + 1;
  expect_invalid(c, "outside the band", "above the band");
  c.freq = -FS / 2 - 1;
  expect_invalid(c, "outside the band", "below the band");
  c.freq = 0;
  c.symbol_rate = 0.6 * SP / 1.35 * 1.01; /* 1 % over 0.6 spacing */
  expect_invalid(c, "too wide", "too wide");
  c.symbol_rate = 0;
  expect_invalid(c, "symbol rate", "no symbol rate");
  c.symbol_rate = 10;
  expect_invalid(c, "1024 samples per symbol", "too slow");
  c.symbol_rate = 2400;
  c.ambiguity = PRX_QPSK_PILOTS;
  c.pilot_period = 8;
  c.pilot_len = 8;
  expect_invalid(c, "pilots", "pilot word as long as the frame");
  /* the widest carrier allowed is accepted */
  c = prx_rx_carrier_default();
  c.symbol_rate = 0.6 * SP / 1.35;
  c.freq = FS / 2;
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = FS;
  rc.channels = KCH;
  CHECK_OK(prx_rx_check_carrier(&rc, &c));
}

/* The carriers of the main capture: strong ones (30 dB Es/N0) everywhere in the band, weak ones
 * at the BER thresholds. */
static void main_scene(scene *s) {
  memset(s, 0, sizeof *s);
  s->fs = FS;
  s->K = KCH;
  scene_add(s, 5 * SP, 0, 30, 0, 0.3, 0.35, 0);                  /* on a centre */
  scene_add(s, 10.25 * SP, 0.1 * 2400, 30, 300, 0.6, 0.35, 0);   /* a quarter, CFO, clock */
  scene_add(s, -7.5 * SP, -0.12 * 2400, 30, -500, 0.1, 0.35, 0); /* half way, CFO, clock */
  scene_add(s, FS / 2 - 0.3 * SP, 50, 30, 100, 0.9, 0.35, 0);    /* upper edge */
  scene_add(s, -FS / 2 + 0.45 * SP, -80, 30, 0, 0.5, 0.35, 1);   /* lower edge, pilots */
  scene_add(s, 20.3 * SP, 0, 30, 0, 0.2, 0.35, 0);               /* two in channel 20 */
  scene_add(s, 19.7 * SP, 0, 30, -200, 0.4, 0.2, 0);             /* (the second at rolloff 0.2) */
  scene_add(s, -15.5 * SP, -0.1 * 2400, 4 + 10 * log10(2), 200, 0.7, 0.35, 0);  /* Eb/N0 4 dB */
  scene_add(s, 25.25 * SP, 0.08 * 2400, 6 + 10 * log10(2), -300, 0.5, 0.35, 0); /* 6 dB */
  scene_add(s, -25.5 * SP, 0.05 * 2400, 6 + 10 * log10(2), 500, 0.0, 0.35, 0);  /* 6 dB */
}

static void test_capture(void) {
  scene s;
  main_scene(&s);
  CHECK(scene_make(&s, (size_t)1 << 22, 11) == 0, "scene");
  if (!s.x) return;
  collect k;
  memset(&k, 0, sizeof k);
  prx_rx_config rc = scene_rx_config(&s, &k);
  prx_rx *rx = NULL;
  CHECK(scene_receive(&s, &rc, 0, &rx) == 0, "receive");
  CHECK(!k.bad, "output for a carrier that does not exist");
  const double thr[] = {2.90e-2, 6.09e-3}; /* DE-QPSK at Eb/N0 4, 6 dB */
  CHECK(rx && prx_rx_n_groups(rx) == 3, "groups: %zu (rolloff 0.2 and pilots apart)",
        rx ? prx_rx_n_groups(rx) : 0);
  for (size_t c = 0; rx && c < s.n_car; c++) {
    long e = scene_errors(&s, &k, c);
    double esn0 = s.esn0_db + s.sim[c].power_db;
    prx_rx_stats st;
    CHECK_OK(prx_rx_get_stats(rx, c, &st));
    long kk = lround(s.rx[c].freq / SP);
    unsigned want_ch = (unsigned)(((kk % KCH) + KCH) % KCH);
    CHECK(st.channel == want_ch && fabs(st.mix_hz) <= SP / 2 + 1e-9 &&
              fabs(st.freq - st.channel_freq - st.mix_hz) < 1e-6,
          "carrier %zu: channel %u (want %u), mix %.1f Hz", c, st.channel, want_ch, st.mix_hz);
    double cfo = s.sim[c].freq - s.rx[c].freq;
    printf("carrier %zu: f %+9.1f Hz (channel %2u, mix %+7.1f), Es/N0 %5.2f dB (est %5.2f), CFO "
           "%+6.1f (est %+6.1f) Hz, clock %+5.0f (est %+6.1f) ppm, %zu bits, %ld errors\n",
           c, s.rx[c].freq, st.channel, st.mix_hz, esn0, st.demod.esn0_db, cfo, st.demod.cfo_hz,
           s.sim[c].clock_ppm, st.demod.clock_ppm, k.nbits[c], e);
    CHECK(e >= 0, "carrier %zu: %zu bits out, %zu sent", c, k.nbits[c], s.nref[c]);
    CHECK(st.demod.warnings == 0, "carrier %zu: warnings %#x", c, st.demod.warnings);
    CHECK(fabs(st.demod.cfo_hz - cfo) < 5, "carrier %zu: CFO %.2f Hz, sent %.2f", c,
          st.demod.cfo_hz, cfo);
    if (esn0 >= 20) {
      CHECK(e == 0, "carrier %zu at %.1f dB: %ld errors", c, esn0, e);
      CHECK(fabs(st.demod.clock_ppm - s.sim[c].clock_ppm) < 20, "carrier %zu: clock %.1f ppm", c,
            st.demod.clock_ppm);
    } else {
      double ebn0 = esn0 - 10 * log10(2), ber = e < 0 ? 1 : (double)e / (double)(k.nbits[c] - 2);
      double t = ebn0 < 5 ? thr[0] : thr[1];
      CHECK(ber <= t, "carrier %zu at Eb/N0 %.1f dB: BER %.3g over threshold %.3g", c, ebn0, ber,
            t);
      CHECK(fabs(st.demod.esn0_db - esn0) < 0.7, "carrier %zu: Es/N0 %.2f dB, sent %.2f", c,
            st.demod.esn0_db, esn0);
    }
  }
  uint64_t samples = 0;
  prx_rx_get_times(rx, &samples, NULL, NULL);
  CHECK(samples == s.n, "%llu samples counted, %zu given", (unsigned long long)samples, s.n);
  prx_rx_destroy(rx);
  collect_free(&k);
  scene_free(&s);
}

/* Three carriers of the streams' tests: Es/N0 25, 12 (pilots) and 10 dB. */
static void three_scene(scene *s) {
  memset(s, 0, sizeof *s);
  s->fs = FS;
  s->K = KCH;
  scene_add(s, 3.5 * SP, 100, 25, 400, 0.3, 0.35, 0);
  scene_add(s, -12.25 * SP, -50, 12, -300, 0.8, 0.35, 1);
  scene_add(s, 30 * SP, 0, 10, 0, 0.0, 0.35, 0);
}

/* The same capture cut into odd chunks, with an odd block size and another thread count, gives
 * the same bits and LLRs; packed bits are the unpacked ones packed (MSB first). */
static void test_streaming(void) {
  scene s;
  three_scene(&s);
  CHECK(scene_make(&s, 700000, 5) == 0, "scene");
  if (!s.x) return;
  collect a, b, p;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memset(&p, 0, sizeof p);
  prx_rx_config rc = scene_rx_config(&s, &a);
  rc.llrs = 1;
  rc.threads = 1;
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "whole");
  rc = scene_rx_config(&s, &b);
  rc.llrs = 1;
  rc.threads = 3;
  rc.block_samples = 10007;
  CHECK(scene_receive(&s, &rc, 77777, NULL) == 0, "chunked");
  rc = scene_rx_config(&s, &p);
  rc.packed = 1;
  rc.block_samples = 4096;
  CHECK(scene_receive(&s, &rc, 1000, NULL) == 0, "packed");
  for (size_t c = 0; c < s.n_car; c++) {
    CHECK(a.nbits[c] == s.nref[c] && (scene_errors(&s, &a, c) == 0 || c == 2),
          "carrier %zu: %zu bits, %ld errors", c, a.nbits[c], scene_errors(&s, &a, c));
    CHECK(a.nbits[c] == b.nbits[c] && !memcmp(a.bits[c], b.bits[c], a.nbits[c]),
          "carrier %zu: bits differ with chunking and threads", c);
    /* the channelizer's output is the same to float rounding for any chunking (chan.h) */
    double worst = a.nllr[c] == b.nllr[c] && a.nllr[c] == a.nbits[c] ? 0 : INFINITY;
    for (size_t i = 0; worst < INFINITY && i < a.nllr[c]; i++)
      worst = fmax(worst, fabs((double)a.llrs[c][i] - b.llrs[c][i]) / (1 + fabs(a.llrs[c][i])));
    CHECK(worst < 1e-4, "carrier %zu: LLRs differ with chunking and threads by %.3g", c, worst);
    int same = p.nbits[c] == (a.nbits[c] + 7) / 8;
    for (size_t i = 0; same && i < a.nbits[c]; i++)
      same = ((p.bits[c][i / 8] >> (7 - i % 8)) & 1) == a.bits[c][i];
    CHECK(same, "carrier %zu: packed bits (%zu bytes) are not the unpacked ones (%zu)", c,
          p.nbits[c], a.nbits[c]);
  }
  collect_free(&a);
  collect_free(&b);
  collect_free(&p);
  scene_free(&s);
}

/* Stats that a fresh receiver and a reused one must share exactly. */
static int same_stats(const prx_rx *a, const prx_rx *b, size_t c) {
  prx_rx_stats x, y;
  if (prx_rx_get_stats(a, c, &x) || prx_rx_get_stats(b, c, &y)) return 0;
  return x.demod.blocks == y.demod.blocks && x.demod.blocks_locked == y.demod.blocks_locked &&
         x.demod.symbols == y.demod.symbols && x.demod.data_symbols == y.demod.data_symbols &&
         x.demod.esn0_db == y.demod.esn0_db && x.demod.cfo_hz == y.demod.cfo_hz &&
         x.demod.clock_ppm == y.demod.clock_ppm && x.demod.warnings == y.demod.warnings;
}

/* A receiver reset after another stream (ended by a flush, or cut in its middle) gives a fresh
 * receiver's bits, LLRs, stats and sample count on the next one (polyrx serve reuses one). */
static void test_reset(void) {
  scene s1, s2;
  three_scene(&s1);
  s2 = s1;
  CHECK(scene_make(&s1, 500000, 21) == 0 && scene_make(&s2, 600000, 22) == 0, "scenes");
  if (!s1.x || !s2.x) return;
  for (int cut = 0; cut < 2; cut++) {
    collect fresh, used;
    memset(&fresh, 0, sizeof fresh);
    memset(&used, 0, sizeof used);
    prx_rx_config rc = scene_rx_config(&s2, &fresh);
    rc.llrs = 1;
    rc.block_samples = 30000;
    prx_rx *a = NULL, *b = NULL;
    CHECK(scene_receive(&s2, &rc, 0, &a) == 0, "fresh receiver");
    rc.user = &used;
    used.n_car = s2.n_car;
    CHECK_OK(prx_rx_create(&rc, &b));
    if (!a || !b) break;
    /* the first stream: whole and flushed, or cut off after an odd count of samples */
    CHECK_OK(prx_rx_execute(b, s1.x, cut ? 123457 : s1.n));
    if (!cut) CHECK_OK(prx_rx_flush(b));
    prx_rx_reset(b);
    collect_free(&used);
    used.n_car = s2.n_car;
    CHECK_OK(prx_rx_execute(b, s2.x, s2.n));
    CHECK_OK(prx_rx_flush(b));
    uint64_t na = 0, nb = 0;
    prx_rx_get_times(a, &na, NULL, NULL);
    prx_rx_get_times(b, &nb, NULL, NULL);
    CHECK(na == s2.n && nb == na, "samples: fresh %llu, reset %llu, given %zu",
          (unsigned long long)na, (unsigned long long)nb, s2.n);
    for (size_t c = 0; c < s2.n_car; c++) {
      CHECK(fresh.nbits[c] > 0 && fresh.nbits[c] == used.nbits[c] &&
                !memcmp(fresh.bits[c], used.bits[c], fresh.nbits[c]),
            "%s: carrier %zu: bits of a reset receiver (%zu) differ from a fresh one's (%zu)",
            cut ? "cut" : "flushed", c, used.nbits[c], fresh.nbits[c]);
      CHECK(fresh.nllr[c] == used.nllr[c] &&
                !memcmp(fresh.llrs[c], used.llrs[c], fresh.nllr[c] * sizeof(float)),
            "%s: carrier %zu: LLRs of a reset receiver differ", cut ? "cut" : "flushed", c);
      CHECK(same_stats(a, b, c), "%s: carrier %zu: stats of a reset receiver differ",
            cut ? "cut" : "flushed", c);
    }
    prx_rx_destroy(a);
    prx_rx_destroy(b);
    collect_free(&fresh);
    collect_free(&used);
  }
  scene_free(&s1);
  scene_free(&s2);
}

int main(void) {
  test_prototype(KCH, 32);
  test_prototype(1024, 6);
  test_bad_carriers();
  test_channel_samples();
  test_row_order();
  test_streaming();
  test_reset();
  test_capture();
  rx_streams(PRX_BACKEND_CPU);
  return test_finish("test_rx");
}
