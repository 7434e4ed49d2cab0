/* Carrier-detection tests: scenes of generated carriers (the truth), their captures, and the
 * check of the detector's findings against the truth (shared by test_detect and
 * test_detect_slow). */
#ifndef TEST_DETECT_SCENE_H
#define TEST_DETECT_SCENE_H

#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double freq, rs, rolloff, esn0_db, ppm;
  int pi4; /* pi/4-QPSK (the detector is to say so), else QPSK */
} truth;

typedef struct {
  const char *name;
  double fs;
  size_t n;
  const truth *carriers;
  size_t n_carriers;
  double min_rs, max_rs; /* detector's range (0: its defaults) */
  double dc;             /* DC offset (amplitude) */
  double empty;          /* a place without a carrier (Hz; check_at) */
} scene;

/* The worst errors over the carriers at 10 dB or more, and the counts of what went wrong. */
typedef struct {
  double centre, ppm, esn0_db; /* largest |error|: Rs, ppm, dB */
  size_t carriers, missed, duplicates, phantoms;
  size_t pi4, pi4_wrong;   /* pi/4-QPSK carriers at 10 dB or more; carriers told wrongly */
  size_t weak, weak_wrong; /* carriers found below 10 dB; of them told wrongly (not asserted) */
  size_t levels_wrong;     /* carriers at 10 dB or more whose c42 says several power levels */
} detect_stats;

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
    cs[i].pi4 = t->pi4;
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

/* Checks the detections of a scene against its truth; returns the number of detections. With
 * stats, adds to them and prints only the failures. */
static size_t check_scene(const scene *sc, uint64_t seed, detect_stats *stats) {
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
  for (size_t i = 0; i < nf && i < 64 && !stats; i++)
    printf("%s: found f %+11.1f Hz  Rs %9.2f  beta %.2f  bw %9.1f  Es/N0 %5.1f dB%s\n", sc->name,
           found[i].freq, found[i].symbol_rate, found[i].rolloff, found[i].bandwidth,
           found[i].esn0_db, found[i].pi4 ? "  pi/4" : "");
  for (size_t c = 0; c < sc->n_carriers; c++) {
    const truth *t = &sc->carriers[c];
    double rs = t->rs * (1 + 1e-6 * t->ppm);
    size_t hits = 0, hit = 0;
    for (size_t i = 0; i < nf && i < 64; i++)
      if (fabs(found[i].freq - t->freq) < 0.5 * t->rs) hits++, hit = i, matched[i]++;
    if (hits == 0) {
      if (stats && t->esn0_db >= 10) stats->carriers++, stats->missed++;
      CHECK(t->esn0_db < 10, "%s: carrier %zu (f %.1f, Rs %.1f, %.1f dB) not found", sc->name, c,
            t->freq, t->rs, t->esn0_db);
      continue;
    }
    CHECK(hits == 1, "%s: carrier %zu found %zu times", sc->name, c, hits);
    if (stats && hits > 1) stats->duplicates++;
    const prx_detect_carrier *d = &found[hit];
    double df = (d->freq - t->freq) / t->rs, ppm = 1e6 * (d->symbol_rate / rs - 1);
    double de = d->esn0_db - t->esn0_db;
    if (!stats)
      printf("%s: carrier %zu  Rs %7.0f beta %.2f %4.1f dB: centre %+.5f Rs, rate %+7.1f ppm, "
             "Es/N0 %+.2f dB, beta %.2f\n",
             sc->name, c, t->rs, t->rolloff, t->esn0_db, df, ppm, de, d->rolloff);
    if (t->esn0_db < 10) {
      if (stats) stats->weak++, stats->weak_wrong += (d->pi4 != 0) != (t->pi4 != 0);
      continue;
    }
    if (stats) {
      stats->carriers++;
      stats->centre = fmax(stats->centre, fabs(df));
      stats->ppm = fmax(stats->ppm, fabs(ppm));
      stats->esn0_db = fmax(stats->esn0_db, fabs(de));
      stats->pi4 += t->pi4 != 0;
      stats->pi4_wrong += (d->pi4 != 0) != (t->pi4 != 0);
    }
    const int ring = !(d->c42 > PRX_DETECT_RING_C42); /* QPSK's, pi/4's (or none: NaN) */
    if (stats) stats->levels_wrong += !ring;
    CHECK(ring, "%s: carrier %zu (%.1f dB, roll-off %.2f): c42 %.3f, not one ring's", sc->name, c,
          t->esn0_db, t->rolloff, d->c42);
    CHECK((d->pi4 != 0) == (t->pi4 != 0), "%s: carrier %zu (%.1f dB, roll-off %.2f) read as %s",
          sc->name, c, t->esn0_db, t->rolloff, d->pi4 ? "pi/4-QPSK" : "QPSK");
    CHECK(fabs(df) <= 0.05, "%s: carrier %zu centre off by %.4f Rs", sc->name, c, df);
    CHECK(fabs(ppm) <= 200, "%s: carrier %zu symbol rate off by %.1f ppm", sc->name, c, ppm);
    CHECK(fabs(de) <= 1.0, "%s: carrier %zu Es/N0 off by %.2f dB", sc->name, c, de);
  }
  for (size_t i = 0; i < nf && i < 64; i++) {
    if (stats && !matched[i]) stats->phantoms++;
    CHECK(matched[i] == 1, "%s: detection %zu (f %.1f, Rs %.1f) is %s", sc->name, i, found[i].freq,
          found[i].symbol_rate, matched[i] ? "two carriers" : "a phantom");
  }
  return nf;
}

#endif
