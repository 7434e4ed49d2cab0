/* Carrier detection speed and accuracy: 1 s of a 6.5536 Msps shortwave-like capture (the demo's
 * 2400 Bd carriers, 40 of them, some between the centres of a 1024-channel bank, plus 8 carriers
 * of 1200 Bd to 100 kBd; Es/N0 6 to 30 dB, CFOs, clock offsets up to 1000 ppm), the detector's
 * defaults (800 Bd to 1.6384 MBd, 8 dB). Beside it, in the same run, its floor: one FFTW
 * transform of the whole second (the detector's one pass over the capture). Time on one thread
 * and on all cores, best of 3; the accuracy over the carriers at 10 dB or more. JSON lines, then
 * a table. */
#include "bench_clock.h"
#include "testutil.h"

#include "dsp/fft_plan.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define FS 6.5536e6
#define N 6553600
#define NC 48

typedef struct {
  double freq, rs, rolloff, esn0_db, ppm;
} truth;

/* 40 demo carriers every 25.6 kHz (a channel centre, a quarter or half of 6.4 kHz off it), then
 * 8 of other rates in the upper part of the band. */
static size_t make_truth(truth *t) {
  test_rng r;
  test_rng_seed(&r, 7);
  size_t k = 0;
  for (int i = 0; i < 40; i++, k++) {
    t[k].freq = -3.0e6 + 25600.0 * i + 1600.0 * (i % 3) + 300 * (test_rng_uniform(&r) - 0.5);
    t[k].rs = 2400;
    t[k].rolloff = 0.2 + 0.3 * test_rng_uniform(&r);
    t[k].esn0_db = 6 + 24 * test_rng_uniform(&r);
    t[k].ppm = 2000 * test_rng_uniform(&r) - 1000;
  }
  static const double rates[8] = {1200, 4800, 9600, 19200, 38400, 64000, 100000, 3600};
  for (int i = 0; i < 8; i++, k++) {
    t[k].freq = 0.5e6 + 300000.0 * i;
    t[k].rs = rates[i];
    t[k].rolloff = 0.2 + 0.3 * test_rng_uniform(&r);
    t[k].esn0_db = 10 + 20 * test_rng_uniform(&r);
    t[k].ppm = 2000 * test_rng_uniform(&r) - 1000;
  }
  return k;
}

static prx_cf32 *make_capture(const truth *t, size_t nc) {
  prx_sim_carrier c[NC];
  for (size_t i = 0; i < nc; i++) {
    c[i] = prx_sim_carrier_default();
    c[i].freq = t[i].freq;
    c[i].symbol_rate = t[i].rs;
    c[i].rolloff = t[i].rolloff;
    c[i].clock_ppm = t[i].ppm;
    c[i].phase = 0.3 * (double)i;
    c[i].power_db = t[i].esn0_db - t[0].esn0_db + 10 * log10(t[i].rs / t[0].rs);
  }
  prx_sim_config cfg = prx_sim_config_default();
  cfg.sample_rate = FS;
  cfg.carriers = c;
  cfg.n_carriers = nc;
  cfg.noise = 1;
  cfg.esn0_db = t[0].esn0_db;
  prx_sim *s;
  prx_cf32 *x = malloc((size_t)N * sizeof *x);
  if (!x || prx_sim_create(&cfg, &s) != PRX_OK) {
    fprintf(stderr, "bench_detect: %s\n", prx_last_error());
    exit(1);
  }
  prx_sim_generate(s, x, N);
  prx_sim_destroy(s);
  return x;
}

static double time_detect(const prx_cf32 *x, int threads, prx_detect_carrier *out, size_t *nf) {
  prx_detect_config cfg = prx_detect_config_default();
  cfg.sample_rate = FS;
  cfg.threads = threads;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = bench_now();
    if (prx_detect_carriers(&cfg, x, N, out, 256, nf) != PRX_OK) {
      fprintf(stderr, "bench_detect: %s\n", prx_last_error());
      exit(1);
    }
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static double time_fft(const prx_cf32 *x) {
  prx_cf32 *buf = malloc((size_t)N * sizeof *buf);
  fftwf_plan p = prx_fft_plan_1d(N, buf, buf, FFTW_FORWARD, PRX_FFT_ESTIMATE);
  double best = 1e30;
  for (int rep = 0; rep < 3 && p; rep++) {
    memcpy(buf, x, (size_t)N * sizeof *buf);
    double t0 = bench_now();
    fftwf_execute(p);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  prx_fft_destroy(p);
  free(buf);
  return best;
}

int main(void) {
  truth t[NC];
  size_t nc = make_truth(t);
  prx_cf32 *x = make_capture(t, nc);
  prx_detect_carrier found[256];
  size_t nf1 = 0, nf = 0;
  double t_fft = time_fft(x);
  double t1 = time_detect(x, 1, found, &nf1);
  double tall = time_detect(x, 0, found, &nf);
  /* accuracy over the carriers at 10 dB or more */
  size_t strong = 0, hit = 0, weak_found = 0, matched = 0;
  double worst_f = 0, worst_ppm = 0, worst_db = 0, worst_beta = 0;
  for (size_t c = 0; c < nc; c++) {
    size_t hits = 0, h = 0;
    for (size_t i = 0; i < nf; i++)
      if (fabs(found[i].freq - t[c].freq) < 0.5 * t[c].rs) hits++, h = i;
    matched += hits;
    if (t[c].esn0_db < 10) {
      weak_found += hits;
      continue;
    }
    strong++;
    if (hits != 1) continue;
    hit++;
    double rs = t[c].rs * (1 + 1e-6 * t[c].ppm);
    worst_f = fmax(worst_f, fabs(found[h].freq - t[c].freq) / t[c].rs);
    worst_ppm = fmax(worst_ppm, fabs(1e6 * (found[h].symbol_rate / rs - 1)));
    worst_db = fmax(worst_db, fabs(found[h].esn0_db - t[c].esn0_db));
    worst_beta = fmax(worst_beta, fabs(found[h].rolloff - t[c].rolloff));
  }
  int cores = prx_cpu_count();
  printf("{\"bench\":\"detect\",\"fs\":%.0f,\"samples\":%d,\"carriers\":%zu,\"threads\":1,"
         "\"seconds\":%.4f,\"fft_floor_seconds\":%.4f}\n",
         FS, N, nc, t1, t_fft);
  printf("{\"bench\":\"detect\",\"fs\":%.0f,\"samples\":%d,\"carriers\":%zu,\"threads\":%d,"
         "\"seconds\":%.4f,\"found\":%zu,\"found_at_10dB\":%zu,\"of_at_10dB\":%zu,"
         "\"found_below_10dB\":%zu,\"phantoms\":%zu,\"worst_centre_rs\":%.6f,\"worst_ppm\":%.1f,"
         "\"worst_esn0_db\":%.3f,\"worst_rolloff\":%.3f}\n",
         FS, N, nc, cores, tall, nf, hit, strong, weak_found, nf - matched, worst_f, worst_ppm,
         worst_db, worst_beta);
  printf("\n1 s at 6.5536 Msps, %zu carriers: detect %.3f s on 1 thread (%.1fx the one-FFT floor "
         "%.3f s), %.3f s on %d threads\n",
         nc, t1, t1 / t_fft, t_fft, tall, cores);
  printf("found %zu: %zu of %zu at >= 10 dB, %zu below, %zu phantoms; worst centre %.5f Rs, rate "
         "%.1f ppm, Es/N0 %.2f dB, roll-off %.2f\n",
         nf, hit, strong, weak_found, nf - matched, worst_f, worst_ppm, worst_db, worst_beta);
  free(x);
  return 0;
}
