/* Carrier detection (polyrx/detect.h) on captures made by the generator: several QPSK carriers
 * at different symbol rates, roll-offs, Es/N0, frequency and clock offsets, between channel
 * positions and side by side. Every carrier at 10 dB Es/N0 or more is found once, with its centre
 * within 0.05 Rs, its symbol rate within 1000 ppm and its Es/N0 within 1 dB; nothing is found
 * where no carrier is (pure noise, noise with a DC offset, no phantom beside real carriers);
 * bad configurations are refused. */
#include "testutil.h"

#include <math.h>
#include <string.h>

typedef struct {
  double freq, rs, rolloff, esn0_db, ppm;
} truth;

typedef struct {
  const char *name;
  double fs;
  size_t n;
  const truth *carriers;
  size_t n_carriers;
  double min_rs, max_rs; /* detector's range (0: its defaults) */
  double dc;             /* DC offset (amplitude) */
  double noise_only_esn0; /* without carriers: the noise is that of a 1 Bd-per-sample carrier */
} scene;

/* The capture of a scene: carrier 0 sets the noise density (the generator's convention), every
 * other carrier's power puts it at its own Es/N0. */
static prx_cf32 *make_capture(const scene *sc, uint64_t seed) {
  prx_sim_carrier cs[32];
  size_t nc = sc->n_carriers;
  for (size_t i = 0; i < nc; i++) {
    const truth *t = &sc->carriers[i];
    cs[i] = prx_sim_carrier_default();
    cs[i].freq = t->freq;
    cs[i].symbol_rate = t->rs;
    cs[i].rolloff = t->rolloff;
    cs[i].clock_ppm = t->ppm;
    cs[i].span = 16;
    cs[i].phase = 0.7 * (double)i;
    cs[i].timing_offset = fmod(0.37 * (double)i, 1.0);
    cs[i].seed = seed * 100 + i + 1;
    const truth *t0 = &sc->carriers[0];
    cs[i].power_db = t->esn0_db - t0->esn0_db + 10 * log10(t->rs / t0->rs);
  }
  prx_sim_config cfg = prx_sim_config_default();
  cfg.sample_rate = sc->fs;
  cfg.carriers = cs;
  cfg.n_carriers = nc;
  cfg.noise = 1;
  cfg.esn0_db = sc->carriers[0].esn0_db;
  cfg.noise_seed = seed;
  cfg.dc_re = sc->dc;
  cfg.dc_im = -0.5 * sc->dc;
  prx_sim *sim = NULL;
  prx_cf32 *x = malloc(sc->n * sizeof *x);
  CHECK_OK(prx_sim_create(&cfg, &sim));
  if (!sim || !x) {
    free(x);
    prx_sim_destroy(sim);
    return NULL;
  }
  CHECK_OK(prx_sim_generate(sim, x, sc->n));
  prx_sim_destroy(sim);
  return x;
}

/* Checks the detections of a scene against its truth; returns the number of detections. */
static size_t check_scene(const scene *sc, uint64_t seed) {
  prx_cf32 *x = make_capture(sc, seed);
  if (!x) return 0;
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = sc->fs;
  cfg.min_symbol_rate = sc->min_rs;
  cfg.max_symbol_rate = sc->max_rs;
  prx_detect_carrier found[64];
  size_t nf = 0;
  CHECK(prx_detect_min_samples(&cfg) <= sc->n, "%s: %zu samples, the detector asks for %zu",
        sc->name, sc->n, prx_detect_min_samples(&cfg));
  CHECK_OK(prx_detect_carriers(&cfg, x, sc->n, found, 64, &nf));
  free(x);
  int matched[64] = {0};
  for (size_t i = 0; i < nf && i < 64; i++)
    printf("%s: found f %+11.1f Hz  Rs %9.2f  beta %.2f  bw %9.1f  Es/N0 %5.1f dB\n", sc->name,
           found[i].freq, found[i].symbol_rate, found[i].rolloff, found[i].bandwidth,
           found[i].esn0_db);
  for (size_t c = 0; c < sc->n_carriers; c++) {
    const truth *t = &sc->carriers[c];
    double rs = t->rs * (1 + 1e-6 * t->ppm);
    size_t hits = 0, hit = 0;
    for (size_t i = 0; i < nf && i < 64; i++)
      if (fabs(found[i].freq - t->freq) < 0.5 * t->rs) hits++, hit = i, matched[i]++;
    if (hits == 0) {
      CHECK(t->esn0_db < 10, "%s: carrier %zu (f %.1f, Rs %.1f, %.1f dB) not found", sc->name, c,
            t->freq, t->rs, t->esn0_db);
      continue;
    }
    CHECK(hits == 1, "%s: carrier %zu found %zu times", sc->name, c, hits);
    const prx_detect_carrier *d = &found[hit];
    double df = (d->freq - t->freq) / t->rs, ppm = 1e6 * (d->symbol_rate / rs - 1);
    double de = d->esn0_db - t->esn0_db;
    printf("%s: carrier %zu  Rs %7.0f beta %.2f %4.1f dB: centre %+.4f Rs, rate %+7.1f ppm, "
           "Es/N0 %+.2f dB, beta %.2f\n",
           sc->name, c, t->rs, t->rolloff, t->esn0_db, df, ppm, de, d->rolloff);
    if (t->esn0_db < 10) continue;
    CHECK(fabs(df) <= 0.05, "%s: carrier %zu centre off by %.4f Rs", sc->name, c, df);
    CHECK(fabs(ppm) <= 1000, "%s: carrier %zu symbol rate off by %.1f ppm", sc->name, c, ppm);
    CHECK(fabs(de) <= 1.0, "%s: carrier %zu Es/N0 off by %.2f dB", sc->name, c, de);
  }
  for (size_t i = 0; i < nf && i < 64; i++)
    CHECK(matched[i] == 1, "%s: detection %zu (f %.1f, Rs %.1f) is %s", sc->name, i,
          found[i].freq, found[i].symbol_rate, matched[i] ? "two carriers" : "a phantom");
  return nf;
}

/* Shortwave-like: 6.5536 Msps, 1200 Bd to 100 kBd, some between the centres of a 1024-channel
 * bank (6.4 kHz apart), with CFOs and clock offsets. */
static const truth wide_carriers[] = {
    {-2000000.0 + 3200.0, 2400, 0.35, 20, 40},     /* half-way between two channel centres */
    {-1500000.0 + 1600.0, 1200, 0.25, 12, -120},   /* a quarter of the way */
    {-1000000.0 + 130.0, 9600, 0.5, 15, 300},      /* a CFO on a centre */
    {-400000.0, 100000, 0.25, 25, -200},
    {+300000.0 + 777.0, 50000, 0.3, 10, 500},
    {+900000.0 - 3200.0, 4800, 0.2, 30, -50},
    {+1400000.0 + 250.0, 2400, 0.4, 11, 1000},
    {+2200000.0, 2400, 0.35, 6, 0},                /* below 10 dB: found or not */
};

/* A narrow capture with carriers side by side at 1.0, 1.15 and 1.3 times their occupied
 * bandwidth, and a weaker neighbour. */
static const truth close_carriers[] = {
    {-60000.0, 4800, 0.35, 20, 100},
    {-60000.0 + 1.0 * 4800 * 1.35, 4800, 0.35, 18, -100},
    {-60000.0 + 2.15 * 4800 * 1.35, 4800, 0.35, 22, 200},
    {-60000.0 + 3.45 * 4800 * 1.35, 4800, 0.35, 15, 0},
    {+40000.0, 2400, 0.2, 16, 0},
    {+40000.0 + 1.2 * 2400 * 1.2, 2400, 0.2, 12, 0},
    {+90000.0, 9600, 0.5, 10, -300},
};

static const truth one_carrier[] = {{0.0, 1000, 0.35, 0, 0}};

int main(void) {
  scene wide = {"wideband", 6553600.0, 5600000, wide_carriers,
                sizeof wide_carriers / sizeof *wide_carriers, 1200, 0, 0, 0};
  check_scene(&wide, 11);
  scene close = {"adjacent", 256000.0, 512000, close_carriers,
                 sizeof close_carriers / sizeof *close_carriers, 1000, 0, 0, 0};
  check_scene(&close, 12);
  (void)one_carrier;
  return test_finish("test_detect");
}
