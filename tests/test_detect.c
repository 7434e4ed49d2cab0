/* Carrier detection (polyrx/detect.h) on captures made by the generator: several QPSK carriers
 * at different symbol rates, roll-offs, Es/N0, frequency and clock offsets, between channel
 * positions and side by side. Every carrier at 10 dB Es/N0 or more is found once, with its centre
 * within 0.05 Rs, its symbol rate within 200 ppm (the header's bound; the receiver needs 1000)
 * and its Es/N0 within 1 dB, also beside a DC offset, at the band's edges and at the fastest
 * rate, and under a tilted noise floor; nothing is found where no carrier is (pure noise, noise
 * with a DC offset, no phantom beside real carriers); the findings do not depend on the thread
 * count; bad configurations are refused; pi/4-QPSK carriers are told from QPSK ones and centred;
 * carriers at places given (prx_detect_at) are found and told, nothing where none is; symbols on
 * one ring (QPSK, pi/4) are told from those on several power levels (16QAM, 64QAM: c42). */
#include "test_detect_scene.h"

#include <fftw3.h>
#include <math.h>
#include <string.h>

/* Shortwave-like: 6.5536 Msps, 1200 Bd to 100 kBd, some between the centres of a 1024-channel
 * bank (6.4 kHz apart), with CFOs and clock offsets. */
static const truth wide_carriers[] = {
    {-2000000.0 + 3200.0, 2400, 0.35, 20, 40, 0},   /* half-way between two channel centres */
    {-1500000.0 + 1600.0, 1200, 0.25, 12, -120, 0}, /* a quarter of the way */
    {-1000000.0 + 130.0, 9600, 0.5, 15, 300, 0},    /* a CFO on a centre */
    {-400000.0, 100000, 0.25, 25, -200, 0},
    {+300000.0 + 777.0, 50000, 0.3, 10, 500, 0},
    {+900000.0 - 3200.0, 4800, 0.2, 30, -50, 0},
    {+1400000.0 + 250.0, 2400, 0.4, 11, 1000, 0},
    {+2200000.0, 2400, 0.35, 6, 0, 0}, /* below 10 dB: found or not */
};

/* A narrow capture with carriers side by side at 1.0, 1.15 and 1.3 times their occupied
 * bandwidth, and a weaker neighbour. */
static const truth close_carriers[] = {
    {-60000.0, 4800, 0.35, 20, 100, 0},
    {-60000.0 + 1.0 * 4800 * 1.35, 4800, 0.35, 18, -100, 0},
    {-60000.0 + 2.15 * 4800 * 1.35, 4800, 0.35, 22, 200, 0},
    {-60000.0 + 3.45 * 4800 * 1.35, 4800, 0.35, 15, 0, 0},
    {+40000.0, 2400, 0.2, 16, 0, 0},
    {+40000.0 + 1.2 * 2400 * 1.2, 2400, 0.2, 12, 0, 0},
    {+90000.0, 9600, 0.5, 10, -300, 0},
};

/* pi/4-QPSK (TETRA's 18 kBd in 25 kHz channels, and slower ones) beside QPSK at roll-offs 0.2 to
 * 1 and 10 to 25 dB: each told for what it is, its centre between its two 4th-power lines */
static const truth pi4_carriers[] = {
    {-150000.0, 18000, 0.35, 20, 30, 1}, {-125000.0 + 40, 18000, 0.35, 14, -60, 1},
    {-90000.0, 9600, 0.2, 25, 0, 0},     {-60000.0 + 700, 4800, 1.0, 12, 100, 1},
    {-30000.0, 4800, 1.0, 20, 0, 0},     {5000.0, 2400, 0.5, 10, -200, 1},
    {40000.0, 2400, 0.5, 11, 0, 0},      {80000.0 - 300, 9600, 0.2, 16, 50, 1},
    {130000.0, 18000, 0.35, 22, 0, 0},
};

/* Pure complex white noise (with a DC offset when dc != 0): no carrier at all. */
static void check_noise(double fs, size_t n, double dc, uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  prx_cf32 *x = malloc(n * sizeof *x);
  if (!x) return;
  test_fill_cf32(&r, x, n, 0.01);
  for (size_t i = 0; i < n; i++) x[i].re += (float)dc, x[i].im -= (float)(0.7 * dc);
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = fs;
  prx_detect_carrier found[8];
  size_t nf = 99;
  CHECK_OK(prx_detect_carriers(&cfg, x, n, found, 8, &nf));
  CHECK(nf == 0, "noise (fs %g, dc %g): %zu phantom carriers, the first at %.1f Hz, Rs %.1f", fs,
        dc, nf, nf ? found[0].freq : 0.0, nf ? found[0].symbol_rate : 0.0);
  free(x);
}

static void check_bad_configs(void) {
  prx_cf32 x[8192] = {{0}};
  prx_detect_carrier out[4];
  size_t nf;
  prx_detect_config ok = prx_detect_config_default();
  ok.sample_rate = 48000;
  struct {
    const char *what;
    prx_detect_config c;
  } bad[11];
  for (int i = 0; i < 11; i++) bad[i].c = ok;
  bad[0].what = "no sample rate", bad[0].c.sample_rate = 0;
  bad[1].what = "negative sample rate", bad[1].c.sample_rate = -1;
  bad[2].what = "NaN min rate", bad[2].c.min_symbol_rate = NAN;
  bad[3].what = "min rate above max", bad[3].c.min_symbol_rate = 9000,
  bad[3].c.max_symbol_rate = 8000;
  bad[4].what = "max rate above fs / 2", bad[4].c.max_symbol_rate = 30000;
  bad[5].what = "negative threads", bad[5].c.threads = -2;
  bad[6].what = "infinite Es/N0", bad[6].c.min_esn0_db = INFINITY;
  bad[7].what = "negative max rate", bad[7].c.max_symbol_rate = -5;
  bad[8].what = "min rate below fs / 16384", bad[8].c.min_symbol_rate = 48000.0 / 20000;
  bad[9].what = "negative flat band", bad[9].c.flat_bandwidth = -1;
  bad[10].what = "flat band above fs", bad[10].c.flat_bandwidth = 48001;
  for (int i = 0; i < 11; i++) {
    prx_status st = prx_detect_carriers(&bad[i].c, x, 8192, out, 4, &nf);
    CHECK(st == PRX_ERR_INVALID, "%s: %s", bad[i].what, prx_strerror(st));
    CHECK(strlen(prx_last_error()) > 0, "%s: no message", bad[i].what);
    CHECK(prx_detect_min_samples(&bad[i].c) == 0, "%s: min_samples not 0", bad[i].what);
  }
  CHECK(prx_detect_carriers(NULL, x, 8192, out, 4, &nf) == PRX_ERR_INVALID, "NULL config");
  CHECK(prx_detect_carriers(&ok, NULL, 8192, out, 4, &nf) == PRX_ERR_INVALID, "NULL samples");
  CHECK(prx_detect_carriers(&ok, x, 8192, NULL, 4, &nf) == PRX_ERR_INVALID, "NULL output");
  CHECK(prx_detect_carriers(&ok, x, 8192, out, 4, NULL) == PRX_ERR_INVALID, "NULL count");
  CHECK(prx_detect_carriers(&ok, x, 100, out, 4, &nf) == PRX_ERR_INVALID, "100 samples");
  CHECK(prx_detect_min_samples(NULL) == 0, "min_samples(NULL)");
  /* all zeros is valid input: no carrier */
  CHECK_OK(prx_detect_carriers(&ok, x, 8192, out, 4, &nf));
  CHECK(nf == 0, "zeros: %zu carriers", nf);
  /* prx_detect_at: its places checked (a rate, a roll-off within 0..1, a finite centre), its
   * pointers; none at zeros */
  const prx_detect_carrier place = {.freq = 1000, .symbol_rate = 2400, .rolloff = 0.35};
  prx_detect_carrier bad_at[5] = {place, place, place, place, place};
  bad_at[0].symbol_rate = 0, bad_at[1].rolloff = 1.5, bad_at[2].freq = NAN;
  bad_at[3].symbol_rate = 30000, bad_at[4].freq = -24001;
  int found[2] = {1, 1};
  for (int i = 0; i < 5; i++)
    CHECK(prx_detect_at(&ok, x, 8192, &bad_at[i], 1, out, found) == PRX_ERR_INVALID,
          "prx_detect_at: bad place %d accepted", i);
  CHECK(prx_detect_at(&ok, x, 8192, NULL, 1, out, found) == PRX_ERR_INVALID, "at: NULL places");
  CHECK(prx_detect_at(&ok, x, 8192, &place, 1, out, NULL) == PRX_ERR_INVALID, "at: NULL found");
  CHECK(prx_detect_at(&ok, NULL, 8192, &place, 1, out, found) == PRX_ERR_INVALID, "at: NULL x");
  CHECK(prx_detect_at(NULL, x, 8192, &place, 1, out, found) == PRX_ERR_INVALID, "at: NULL cfg");
  CHECK_OK(prx_detect_at(&ok, x, 8192, &place, 1, out, found));
  CHECK(found[0] == 0, "at: zeros found a carrier");
  CHECK_OK(prx_detect_at(&ok, x, 8192, NULL, 0, NULL, NULL)); /* no place: nothing to do */
  /* the defaults: fs / 8192 .. fs / 4, 800 symbols of the slowest (1 s at 6.5536 Msps) */
  CHECK(prx_detect_min_samples(&ok) >= 800 * 8192, "min_samples %zu", prx_detect_min_samples(&ok));
  /* the slowest rate allowed asks for no more than the 2^24 samples used */
  ok.min_symbol_rate = 48000.0 / 16384;
  CHECK(prx_detect_min_samples(&ok) >= 800 * 16384 && prx_detect_min_samples(&ok) <= 1 << 24,
        "min_samples at fs / 16384: %zu", prx_detect_min_samples(&ok));
  /* finite samples whose powers overflow (another format's bytes read as cf32): an answer, not
   * a loop without end (before: the spectrum's NaN points held the band search forever) */
  ok.min_symbol_rate = 0;
  for (size_t i = 0; i < 8192; i++) x[i].re = x[i].im = (i % 3 ? 3e38f : -2e38f) * (float)(i % 7);
  CHECK_OK(prx_detect_carriers(&ok, x, 8192, out, 4, &nf));
}

/* The same findings whatever the thread count, a short output array gets the strongest carriers
 * with the full count, and a few non-finite samples do not matter. */
static void check_threads_and_capacity(const scene *sc, uint64_t seed) {
  prx_cf32 *x = make_capture(sc, seed);
  if (!x) return;
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = sc->fs;
  cfg.min_symbol_rate = sc->min_rs;
  prx_detect_carrier one[32], three[32], two[2];
  size_t n1 = 0, n3 = 0, n2 = 0;
  cfg.threads = 1;
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, one, 32, &n1));
  cfg.threads = 3;
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, three, 32, &n3));
  CHECK(n1 == n3 && n1 > 2 && !memcmp(one, three, n1 * sizeof *one),
        "1 and 3 threads differ (%zu and %zu carriers)", n1, n3);
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, two, 2, &n2));
  CHECK(n2 == n1 && !memcmp(two, one, sizeof two), "2 slots: count %zu (of %zu) or contents differ",
        n2, n1);
  for (size_t i = 1; i < n1; i++)
    CHECK(one[i].esn0_db <= one[i - 1].esn0_db, "not strongest first at %zu", i);
  cfg.max_carriers = 3;
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, three, 32, &n3));
  CHECK(n3 == 3 && !memcmp(three, one, 3 * sizeof *one), "max_carriers 3: %zu found", n3);
  /* a few non-finite samples change nothing found */
  x[100].re = NAN, x[5000].im = INFINITY, x[sc->n - 1].re = -INFINITY;
  cfg.max_carriers = 0;
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, three, 32, &n3));
  CHECK(n3 == n1, "with non-finite samples: %zu carriers, %zu without", n3, n1);
  for (size_t i = 0; i < n3 && i < n1; i++)
    CHECK(fabs(three[i].freq - one[i].freq) < 0.001 * one[i].symbol_rate &&
              fabs(three[i].symbol_rate / one[i].symbol_rate - 1) < 1e-4,
          "with non-finite samples: carrier %zu moved", i);
  free(x);
}

/* prx_detect_at: each carrier at its place as a user would give it (its centre up to 0.1 Rs
 * off, its nominal rate, its roll-off) is found (10 dB or more), its 4th-power line(s) seen, told
 * QPSK or pi/4-QPSK rightly and centred within 0.05 Rs, side by side without a dip between
 * them too; a place without a carrier (half-way between two, where the spectrum is noise) finds
 * nothing; one or three threads give the same; places outside the band, too few samples are
 * refused. */
static void check_at(const scene *sc, uint64_t seed) {
  prx_cf32 *x = make_capture(sc, seed);
  if (!x) return;
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = sc->fs;
  enum { MAX = 32 };
  prx_detect_carrier at[MAX + 1], out[MAX + 1], out3[MAX + 1];
  int found[MAX + 1], found3[MAX + 1];
  size_t n = sc->n_carriers;
  for (size_t i = 0; i < n && i < MAX; i++) {
    const truth *t = &sc->carriers[i];
    at[i] = (prx_detect_carrier){.freq = t->freq + (i % 2 ? 0.1 : -0.07) * t->rs,
                                 .symbol_rate = t->rs,
                                 .rolloff = t->rolloff};
  }
  /* no carrier: far from every one (sc->empty, its rate the first carrier's) */
  at[n] =
      (prx_detect_carrier){.freq = sc->empty, .symbol_rate = sc->carriers[0].rs, .rolloff = 0.35};
  cfg.threads = 1;
  CHECK_OK(prx_detect_at(&cfg, x, sc->n, at, n + 1, out, found));
  cfg.threads = 3;
  CHECK_OK(prx_detect_at(&cfg, x, sc->n, at, n + 1, out3, found3));
  for (size_t i = 0; i < n; i++) {
    const truth *t = &sc->carriers[i];
    CHECK(found[i] == found3[i] && (!found[i] || !memcmp(&out[i], &out3[i], sizeof *out)),
          "%s at %zu: 1 and 3 threads differ", sc->name, i);
    if (t->esn0_db < 10) continue;
    CHECK(found[i] && out[i].line4, "%s at %zu (%.0f Hz, %.0f Bd, %.0f dB): found %d, line %d",
          sc->name, i, t->freq, t->rs, t->esn0_db, found[i], out[i].line4);
    if (!found[i]) continue;
    CHECK(out[i].pi4 == t->pi4, "%s at %zu: pi4 %d, truth %d", sc->name, i, out[i].pi4, t->pi4);
    CHECK(!(out[i].c42 > PRX_DETECT_RING_C42), "%s at %zu: c42 %.3f", sc->name, i, out[i].c42);
    CHECK(fabs(out[i].freq - t->freq) < 0.05 * t->rs, "%s at %zu: centre %.1f Hz, truth %.1f",
          sc->name, i, out[i].freq, t->freq);
  }
  CHECK(!found[n], "%s at %.0f Hz (no carrier): found %.1f Hz, %.1f dB", sc->name, sc->empty,
        out[n].freq, out[n].esn0_db);
  at[0].freq = 0.51 * sc->fs;
  CHECK(prx_detect_at(&cfg, x, sc->n, at, 1, out, found) == PRX_ERR_INVALID,
        "%s: a place beyond fs/2 accepted", sc->name);
  CHECK(prx_detect_at(&cfg, x, 4095, at + 1, 1, out, found) == PRX_ERR_INVALID,
        "%s: 4095 samples accepted", sc->name);
  free(x);
}

/* A tilted noise floor (a front end's filter): the capture through y[k] = x[k] + a x[k-1], whose
 * gain 1 + |a|^2 + 2 |a| cos(w - arg a) spans 5.3 dB across the band. The filter is nearly flat
 * across each narrow carrier, so it scales the carrier and the noise beside it alike: every
 * carrier keeps its Es/N0, where a floor taken as one number for the band is off by several dB
 * at one carrier or another. */
static const truth tilt_carriers[] = {
    {-150000.0, 2400, 0.35, 12, 0, 0}, {-100000.0, 4800, 0.3, 15, 300, 0},
    {-30000.0, 1200, 0.35, 11, 0, 0},  {20000.0, 2400, 0.25, 20, -300, 0},
    {80000.0, 4800, 0.35, 10, 0, 0},   {160000.0, 2400, 0.35, 14, 0, 0},
};

static void check_tilted_floor(uint64_t seed) {
  size_t nc = sizeof tilt_carriers / sizeof *tilt_carriers;
  scene sc = {.name = "tilted floor",
              .fs = 409600.0,
              .n = 300000,
              .carriers = tilt_carriers,
              .n_carriers = nc,
              .min_rs = 1200};
  prx_cf32 *x = make_capture(&sc, seed);
  if (!x) return;
  const double ar = 0.3 * cos(1.0), ai = 0.3 * sin(1.0);
  for (size_t i = sc.n - 1; i > 0; i--) {
    prx_cf32 p = x[i - 1];
    x[i].re += (float)(ar * p.re - ai * p.im);
    x[i].im += (float)(ar * p.im + ai * p.re);
  }
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = sc.fs;
  cfg.min_symbol_rate = sc.min_rs;
  prx_detect_carrier f[16];
  size_t nf = 0;
  CHECK_OK(prx_detect_carriers(&cfg, x, sc.n, f, 16, &nf));
  CHECK(nf == nc, "tilted floor: %zu carriers found of %zu", nf, nc);
  for (size_t c = 0; c < nc; c++) {
    const truth *t = &tilt_carriers[c];
    size_t hit = nf;
    for (size_t i = 0; i < nf && i < 16; i++)
      if (fabs(f[i].freq - t->freq) < 0.5 * t->rs) hit = i;
    CHECK(hit < nf, "tilted floor: carrier %zu not found", c);
    if (hit == nf) continue;
    double de = f[hit].esn0_db - t->esn0_db, ppm = 1e6 * (f[hit].symbol_rate / t->rs - 1) - t->ppm;
    printf("tilted floor: carrier %zu at %+.0f Hz: Es/N0 %+.2f dB, rate %+.1f ppm\n", c, t->freq,
           de, ppm);
    CHECK(fabs(de) <= 1.0, "tilted floor: carrier %zu Es/N0 off by %.2f dB", c, de);
    CHECK(fabs(ppm) <= 200, "tilted floor: carrier %zu rate off by %.1f ppm", c, ppm);
  }
  free(x);
}

/* A DC offset with a carrier centred on 0 Hz, carriers near both edges of the band, one at the
 * fastest default rate (fs / 4) and a roll-off of 1. */
static const truth edge_carriers[] = {
    {0.0, 4800, 0.35, 12, 0, 0},
    {-409600.0 / 2 + 2000, 2400, 0.35, 15, 200, 0},
    {409600.0 / 2 - 3000, 2400, 0.35, 15, -200, 0},
    {-120000.0, 409600.0 / 4, 0.35, 15, 0, 0},
    {90000.0, 9600, 1.0, 11, 700, 0},
};

/* Carriers whose symbols lie on one ring (QPSK, pi/4-QPSK) beside QAM ones, at 8 to 20 dB and
 * roll-offs 0.2 to 0.8: 16QAM's symbols are 2 s + s' (s, s' QPSK of one timing, power 4 : 1),
 * 64QAM's 4 s + 2 s' + s''. Each one's c42 (found and at its place) within 0.1 of its
 * constellation's
 * (-1, -0.68, -0.62) and on its side of PRX_DETECT_RING_C42. */
typedef struct {
  double freq, rs, rolloff, esn0_db;
  int kind; /* 0 QPSK, 1 pi/4-QPSK, 2 16QAM, 3 64QAM */
} levels_truth;

static void check_levels(uint64_t seed) {
  static const levels_truth lt[] = {
      {-90000, 4800, 0.35, 8, 0}, {-60000, 4800, 0.35, 8, 2}, {-30000, 2400, 0.2, 10, 3},
      {0, 9600, 0.25, 20, 2},     {40000, 4800, 0.8, 9, 1},   {70000, 2400, 0.5, 12, 2},
      {100000, 9600, 0.5, 15, 0},
  };
  const double theory[4] = {-1, -1, -0.68, -0.619}, weights[4][3] = {{1}, {1}, {4, 1}, {16, 4, 1}};
  enum { N_LT = sizeof lt / sizeof *lt };
  const double fs = 256000;
  const size_t n = 256000;
  prx_sim_carrier cs[3 * N_LT];
  size_t nc = 0;
  for (size_t i = 0; i < N_LT; i++) {
    const levels_truth *t = &lt[i];
    double sum = 0;
    for (int j = 0; j < 3; j++) sum += weights[t->kind][j];
    for (int j = 0; j < 3 && weights[t->kind][j] > 0; j++) { /* one timing and phase */
      prx_sim_carrier c = prx_sim_carrier_default();
      c.freq = t->freq, c.symbol_rate = t->rs, c.rolloff = t->rolloff, c.span = 16;
      c.pi4 = t->kind == 1;
      c.phase = 0.7 * (double)i, c.timing_offset = fmod(0.37 * (double)i, 1.0);
      c.clock_ppm = 20.0 * (double)i;
      c.seed = seed * 100 + 3 * i + (uint64_t)j + 1;
      c.power_db = t->esn0_db - lt[0].esn0_db + 10 * log10(t->rs / lt[0].rs) +
                   10 * log10(weights[t->kind][j] / sum);
      cs[nc++] = c;
    }
  }
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = fs, sc.carriers = cs, sc.n_carriers = nc, sc.noise = 1;
  sc.esn0_db = lt[0].esn0_db, sc.noise_seed = seed;
  prx_sim *sim = NULL;
  prx_cf32 *x = malloc(n * sizeof *x);
  CHECK_OK(prx_sim_create(&sc, &sim));
  if (sim && x) CHECK_OK(prx_sim_generate(sim, x, n));
  prx_sim_destroy(sim);
  if (!sim || !x) {
    free(x);
    return;
  }
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = fs;
  cfg.min_symbol_rate = 1200;
  cfg.min_esn0_db = 7;
  prx_detect_carrier at[N_LT], out[N_LT], all[16];
  int found[N_LT];
  for (size_t i = 0; i < N_LT; i++)
    at[i] = (prx_detect_carrier){.freq = lt[i].freq, .symbol_rate = lt[i].rs, .rolloff = 0.35};
  size_t nf = 0;
  CHECK_OK(prx_detect_at(&cfg, x, n, at, N_LT, out, found));
  CHECK_OK(prx_detect_carriers(&cfg, x, n, all, 16, &nf));
  free(x);
  for (size_t i = 0; i < N_LT; i++) {
    const levels_truth *t = &lt[i];
    const prx_detect_carrier *f = NULL;
    for (size_t k = 0; k < nf && k < 16; k++)
      if (fabs(all[k].freq - t->freq) < 0.5 * t->rs) f = &all[k];
    const int ring = t->kind < 2;
    for (int way = 0; way < 2; way++) {
      const prx_detect_carrier *d = way ? f : found[i] ? &out[i] : NULL;
      const char *how = way ? "found" : "at its place";
      CHECK(d != NULL, "levels: carrier %zu (kind %d, %.0f dB) not found %s", i, t->kind,
            t->esn0_db, how);
      if (!d) continue;
      printf("levels: carrier %zu kind %d %4.1f dB roll-off %.2f %s: c42 %.3f (theory %.3f)\n", i,
             t->kind, t->esn0_db, t->rolloff, how, d->c42, theory[t->kind]);
      CHECK(fabs(d->c42 - theory[t->kind]) < 0.1 && (d->c42 <= PRX_DETECT_RING_C42) == ring,
            "levels: carrier %zu (kind %d, %.0f dB, roll-off %.2f) %s: c42 %.3f, theory %.3f", i,
            t->kind, t->esn0_db, t->rolloff, how, d->c42, theory[t->kind]);
    }
  }
}

/* A channelizer's output (rx's check): one carrier at 7 dB in noise whose level falls over the
 * outer fifth of the band (to -6 dB at the edges, as the receiver's channels). With the flat
 * part given (flat_bandwidth), its Es/N0 within 1 dB and its c42 one ring's, over 8 seeds
 * (without it the floor, read over the whole band, put every one 4.5-5.5 dB high and its c42 at
 * -0.69 to -0.75: QAM's side). */
static void check_flat_band(uint64_t seed) {
  const double fs = 12800, rs = 2400;
  const size_t n = 10923;
  prx_cf32 *x = malloc(n * sizeof *x);
  fftwf_complex *X = fftwf_malloc(n * sizeof *X);
  fftwf_plan fwd = X ? fftwf_plan_dft_1d((int)n, X, X, FFTW_FORWARD, FFTW_ESTIMATE) : NULL,
             inv = X ? fftwf_plan_dft_1d((int)n, X, X, FFTW_BACKWARD, FFTW_ESTIMATE) : NULL;
  CHECK(x && X && fwd && inv, "flat band: set-up");
  for (uint64_t k = 0; x && fwd && inv && k < 8; k++) {
    prx_sim_carrier c = prx_sim_carrier_default();
    c.freq = (double)(k % 3) * 0.25 * fs / 8, c.symbol_rate = rs, c.seed = seed + k;
    c.clock_ppm = 40, c.timing_offset = 0.3;
    prx_sim_config sc = prx_sim_config_default();
    sc.sample_rate = fs, sc.carriers = &c, sc.n_carriers = 1, sc.noise = 1, sc.esn0_db = 7;
    sc.noise_seed = seed * 10 + k;
    prx_sim *sim = NULL;
    CHECK_OK(prx_sim_create(&sc, &sim));
    if (!sim) break;
    CHECK_OK(prx_sim_generate(sim, x, n));
    prx_sim_destroy(sim);
    memcpy(X, x, n * sizeof *x);
    fftwf_execute(fwd);
    for (size_t b = 0; b < n; b++) { /* |f| from 0.4 fs to fs / 2: the gain from 1 to 0.5 */
      double f = (double)(b <= n / 2 ? b : n - b) / (double)n, g = 1;
      if (f > 0.4) g = 1 - 5 * (f - 0.4);
      X[b][0] *= (float)(g / (double)n), X[b][1] *= (float)(g / (double)n);
    }
    fftwf_execute(inv);
    memcpy(x, X, n * sizeof *x);
    prx_detect_config cfg = prx_detect_config_default();
    cfg.sample_rate = fs, cfg.min_esn0_db = 5, cfg.flat_bandwidth = 0.8 * fs;
    prx_detect_carrier at = {.freq = c.freq, .symbol_rate = rs, .rolloff = 0.35}, out;
    int found = 0;
    CHECK_OK(prx_detect_at(&cfg, x, n, &at, 1, &out, &found));
    CHECK(found && fabs(out.esn0_db - 7) <= 1 && out.c42 <= PRX_DETECT_RING_C42,
          "flat band, seed %llu: found %d, Es/N0 %.2f dB (7), c42 %.3f", (unsigned long long)k,
          found, out.esn0_db, out.c42);
  }
  if (fwd) fftwf_destroy_plan(fwd);
  if (inv) fftwf_destroy_plan(inv);
  fftwf_free(X);
  free(x);
}

int main(void) {
  scene wide = {.name = "wideband",
                .fs = 6553600.0,
                .n = 4400000,
                .carriers = wide_carriers,
                .n_carriers = sizeof wide_carriers / sizeof *wide_carriers,
                .min_rs = 1200,
                .empty = 2500000.0};
  check_scene(&wide, 11, NULL);
  scene close = {.name = "adjacent",
                 .fs = 256000.0,
                 .n = 512000,
                 .carriers = close_carriers,
                 .n_carriers = sizeof close_carriers / sizeof *close_carriers,
                 .min_rs = 1000,
                 .empty = 65000.0};
  check_scene(&close, 12, NULL);
  check_threads_and_capacity(&close, 13);
  scene edges = {.name = "dc-edges",
                 .fs = 409600.0,
                 .n = 400000,
                 .carriers = edge_carriers,
                 .n_carriers = sizeof edge_carriers / sizeof *edge_carriers,
                 .min_rs = 1200,
                 .dc = 0.3};
  check_scene(&edges, 14, NULL);
  check_tilted_floor(15);
  scene pi4 = {.name = "pi4",
               .fs = 409600.0,
               .n = 400000,
               .carriers = pi4_carriers,
               .n_carriers = sizeof pi4_carriers / sizeof *pi4_carriers,
               .min_rs = 1200,
               .empty = 105000.0};
  check_scene(&pi4, 16, NULL);
  check_at(&pi4, 17);
  check_at(&close, 18);
  check_at(&wide, 19);
  check_noise(6553600.0, 1 << 22, 0, 21);
  check_noise(6553600.0, 1 << 22, 0.05, 22);
  check_noise(48000.0, 1 << 18, 0.2, 23);
  check_bad_configs();
  check_levels(24);
  check_levels(25);
  check_flat_band(26);
  return test_finish("test_detect");
}
