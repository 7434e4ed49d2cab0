/* Generator speed: 4 QPSK carriers (RRC span 12) summed at 6.5536 Msps, with and without noise,
 * on one thread and on all cores; beside it, in the same run, liquid-dsp's multi-signal source
 * (msourcecf: 4 QPSK modems + noise) and a per-carrier liquid chain (symstreamrcf arbitrary-rate
 * RRC stream + nco_crcf mix-up + sum). JSON lines, then a table. Best of 3 runs of each. */
#include "bench_clock.h"
#include "testutil.h"

#include <math.h>
#include <string.h>
#include <time.h>

#ifdef PRX_HAVE_LIQUID
#include <complex.h>
#include <liquid/liquid.h>
#endif

#define FS 6.5536e6
#define NC 4
#define BLOCK 65536

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static const double freqs[NC] = {-1.5e6, -0.4e6, 0.7e6, 2.1e6};

static double run_polyrx(double rs, int noise, int threads, size_t n, prx_cf32 *buf) {
  prx_sim_carrier c[NC];
  for (int i = 0; i < NC; i++) {
    c[i] = prx_sim_carrier_default();
    c[i].symbol_rate = rs * (1 + 0.1 * i);
    c[i].freq = freqs[i];
    c[i].timing_offset = 0.25 * i;
    c[i].clock_ppm = 20;
  }
  prx_sim_config cfg = prx_sim_config_default();
  cfg.sample_rate = FS;
  cfg.carriers = c;
  cfg.n_carriers = NC;
  cfg.noise = noise;
  cfg.esn0_db = 10;
  cfg.threads = threads;
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    prx_sim *s;
    if (prx_sim_create(&cfg, &s) != PRX_OK) {
      fprintf(stderr, "bench_sim: %s\n", prx_last_error());
      exit(1);
    }
    double t0 = bench_now();
    for (size_t done = 0; done < n; done += BLOCK) prx_sim_generate(s, buf, BLOCK);
    double t = bench_now() - t0;
    if (t < best) best = t;
    prx_sim_destroy(s);
  }
  return n / best / 1e6;
}

#ifdef PRX_HAVE_LIQUID
static double run_msource(double rs, int noise, size_t n, prx_cf32 *buf) {
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    msourcecf q = msourcecf_create_default();
    for (int i = 0; i < NC; i++)
      msourcecf_add_modem(q, (float)(freqs[i] / FS), (float)(rs * (1 + 0.1 * i) / FS), 0.0f,
                          LIQUID_MODEM_QPSK, 6, 0.35f);
    if (noise) msourcecf_add_noise(q, 0.0f, 1.0f, -30.0f);
    double t0 = bench_now();
    for (size_t done = 0; done < n; done += BLOCK)
      msourcecf_write_samples(q, (liquid_float_complex *)buf, BLOCK);
    double t = bench_now() - t0;
    if (t < best) best = t;
    msourcecf_destroy(q);
  }
  return n / best / 1e6;
}

static double run_symstream(double rs, int noise, size_t n, prx_cf32 *buf) {
  liquid_float_complex *tmp = malloc(BLOCK * sizeof *tmp);
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    symstreamrcf ss[NC];
    nco_crcf nco[NC];
    for (int i = 0; i < NC; i++) {
      ss[i] = symstreamrcf_create_linear(LIQUID_FIRFILT_RRC, (float)(rs * (1 + 0.1 * i) / FS), 6,
                                         0.35f, LIQUID_MODEM_QPSK);
      nco[i] = nco_crcf_create(LIQUID_NCO);
      nco_crcf_set_frequency(nco[i], (float)(2 * M_PI * freqs[i] / FS));
    }
    liquid_float_complex *out = (liquid_float_complex *)buf;
    double t0 = bench_now();
    for (size_t done = 0; done < n; done += BLOCK) {
      memset(out, 0, BLOCK * sizeof *out);
      for (int i = 0; i < NC; i++) {
        symstreamrcf_write_samples(ss[i], tmp, BLOCK);
        nco_crcf_mix_block_up(nco[i], tmp, tmp, BLOCK);
        for (size_t k = 0; k < BLOCK; k++) out[k] += tmp[k];
      }
      if (noise)
        for (size_t k = 0; k < BLOCK; k++) cawgn(&out[k], 0.3f);
    }
    double t = bench_now() - t0;
    if (t < best) best = t;
    for (int i = 0; i < NC; i++) {
      symstreamrcf_destroy(ss[i]);
      nco_crcf_destroy(nco[i]);
    }
  }
  free(tmp);
  return n / best / 1e6;
}
#endif

/* One carrier, one thread, no noise: nanoseconds of CPU per sample against samples per symbol
 * (the direct kernel below SIM_MAJOR_SPS = 48, the symbol-major kernel from there on). */
static void sweep(void) {
  const double spss[] = {2, 4, 5.333, 8, 16, 32, 47.9, 48, 64, 128, 683, 2731};
  prx_cf32 *buf = malloc(BLOCK * sizeof *buf);
  printf("\none carrier (RRC 0.35, span 12), one thread, CPU time per sample, best of 3:\n");
  for (size_t i = 0; i < sizeof spss / sizeof spss[0]; i++) {
    prx_sim_carrier c = prx_sim_carrier_default();
    c.symbol_rate = FS / spss[i];
    c.freq = 1e5;
    prx_sim_config cfg = prx_sim_config_default();
    cfg.sample_rate = FS;
    cfg.carriers = &c;
    cfg.n_carriers = 1;
    cfg.threads = 1;
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      prx_sim *s;
      prx_sim_create(&cfg, &s);
      double t0 = cpu_now();
      for (int k = 0; k < 32; k++) prx_sim_generate(s, buf, BLOCK);
      double t = cpu_now() - t0;
      if (t < best) best = t;
      prx_sim_destroy(s);
    }
    double ns = best / (32.0 * BLOCK) * 1e9;
    printf("{\"bench\":\"sim_sweep\",\"sps\":%.3f,\"ns_per_sample\":%.2f}\n", spss[i], ns);
  }
  free(buf);
}

/* The floor: writing the output once (memset of the same blocks). */
static double write_floor(size_t n, prx_cf32 *buf) {
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = bench_now();
    for (size_t done = 0; done < n; done += BLOCK) {
      memset(buf, rep + 1, BLOCK * sizeof *buf);
      __asm__ volatile("" : : "r"(buf) : "memory");
    }
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  return n / best / 1e6;
}

static void report(const char *impl, double rs, int noise, int threads, double msps) {
  printf("{\"bench\":\"sim\",\"impl\":\"%s\",\"fs\":%.0f,\"carriers\":%d,\"symbol_rate\":%.0f,"
         "\"noise\":%d,\"threads\":%d,\"msps\":%.2f,\"realtime\":%.2f}\n",
         impl, FS, NC, rs, noise, threads, msps, msps * 1e6 / FS);
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  size_t n = (size_t)(seconds * FS) / BLOCK * BLOCK;
  if (n < BLOCK) n = BLOCK;
  prx_cf32 *buf = malloc(BLOCK * sizeof *buf);
  int cores = prx_cpu_count();
  const double rates[2] = {
      9600, 500e3}; /* narrow (sps 683; liquid symstreamr needs sps <= 1000) and wide (sps 13) */
  struct {
    char impl[40];
    double rs;
    int noise, threads;
    double msps;
  } rows[32];
  int nr = 0;
  for (int r = 0; r < 2; r++) {
    for (int noise = 0; noise <= 1; noise++) {
      int th[2] = {1, cores};
      for (int t = 0; t < (cores > 1 ? 2 : 1); t++) {
        double m = run_polyrx(rates[r], noise, th[t], n, buf);
        report("polyrx", rates[r], noise, th[t], m);
        snprintf(rows[nr].impl, sizeof rows[nr].impl, "polyrx");
        rows[nr].rs = rates[r], rows[nr].noise = noise, rows[nr].threads = th[t];
        rows[nr++].msps = m;
      }
#ifdef PRX_HAVE_LIQUID
      double m = run_msource(rates[r], noise, n, buf);
      report("liquid msourcecf", rates[r], noise, 1, m);
      snprintf(rows[nr].impl, sizeof rows[nr].impl, "liquid msourcecf");
      rows[nr].rs = rates[r], rows[nr].noise = noise, rows[nr].threads = 1;
      rows[nr++].msps = m;
      m = run_symstream(rates[r], noise, n, buf);
      report("liquid symstreamrcf+nco", rates[r], noise, 1, m);
      snprintf(rows[nr].impl, sizeof rows[nr].impl, "liquid symstreamrcf+nco");
      rows[nr].rs = rates[r], rows[nr].noise = noise, rows[nr].threads = 1;
      rows[nr++].msps = m;
#endif
    }
  }
  double floor_msps = write_floor(n, buf);
  printf("{\"bench\":\"sim_floor\",\"what\":\"memset of the output\",\"msps\":%.1f}\n", floor_msps);
  sweep();
  printf("\n%d QPSK carriers (RRC 0.35, span 12) at %.4f Msps, %.1f s of signal, best of 3; "
         "floor (writing the output) %.0f Msps; %d cores\n",
         NC, FS / 1e6, n / FS, floor_msps, cores);
  printf("%-26s %10s %6s %8s %10s %10s\n", "implementation", "Rs", "noise", "threads", "Msps",
         "x realtime");
  for (int i = 0; i < nr; i++)
    printf("%-26s %10.0f %6s %8d %10.2f %10.2f\n", rows[i].impl, rows[i].rs,
           rows[i].noise ? "yes" : "no", rows[i].threads, rows[i].msps, rows[i].msps * 1e6 / FS);
  free(buf);
  return 0;
}
