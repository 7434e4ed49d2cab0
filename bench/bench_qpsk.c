/* Benchmark of the open-loop QPSK demodulator against liquid-dsp's closed-loop chain, on the
 * same signal in the same run.
 *
 * Signal (polyrx's generator): QPSK, RRC roll-off 0.35 span 12, differential encoding,
 * Es/N0 12 dB, CFO 0.002 Rs (small enough for liquid's PLL to pull in quickly), phase 1 rad,
 * timing 0.37 T, clock offset +20 ppm, 2^20 symbols, cf32 in memory (no file I/O).
 *
 * polyrx: prx_qpsk_execute over 64k-sample chunks + flush, bits only and bits + LLRs, one thread
 *   and all cores (best of several repetitions, wall time; one-thread runs also by the thread's
 *   CPU time, steadier on a shared machine). Its BER is checked on the way.
 * liquid-dsp 1.5 closed-loop chain: symsync_crcf (polyphase RRC matched filter + timing loop,
 *   k = 4, m = 6, beta 0.35, 32 filters, loop bandwidth 0.02) -> nco_crcf carrier PLL (bandwidth
 *   0.02, mix_down / pll_step driven by the demodulator's phase error) -> modem QPSK demodulate.
 *   That chain is serial, so "all cores" runs one independent chain per core on the same signal
 *   (aggregate symbols per second). Its lock is checked by the MER of its last half.
 *
 * Output: JSON lines (one per measurement), then a short table.
 * Usage: bench_qpsk [reps [THREADS,THREADS,...]]: the list adds a polyrx scaling series. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#ifdef PRX_HAVE_LIQUID
#include <complex.h>
#include <liquid/liquid.h>
#endif

#define NSYM (1u << 20)
#define CHUNK ((size_t)1 << 16)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: for one-thread runs, a figure that the other jobs of a shared
 * machine move much less than the wall time (they still share its caches and memory) */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
  prx_cf32 *x;
  size_t n;
  uint8_t *bits;
  size_t nbits;
  double sps;
} signal_t;

static int make_signal(double sps, signal_t *s) {
  prx_sim_carrier c = prx_sim_carrier_default();
  c.symbol_rate = 1e6;
  c.freq = 0.002 * c.symbol_rate;
  c.phase = 1.0;
  c.timing_offset = 0.37;
  c.clock_ppm = 20;
  c.differential = 1;
  c.seed = 11;
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = sps * c.symbol_rate;
  sc.carriers = &c;
  sc.n_carriers = 1;
  sc.noise = 1;
  sc.esn0_db = 12;
  sc.threads = 0;
  prx_sim *sim;
  if (prx_sim_create(&sc, &sim) != PRX_OK) return -1;
  s->sps = sps;
  s->n = (size_t)(NSYM * sps);
  s->x = malloc(s->n * sizeof *s->x);
  s->bits = malloc(2 * NSYM + 4096);
  size_t got = 0;
  int rc = (s->x && s->bits && prx_sim_generate(sim, s->x, s->n) == PRX_OK &&
            prx_sim_take_bits(sim, 0, s->bits, 2 * NSYM + 4096, &got) == PRX_OK)
               ? 0
               : -1;
  s->nbits = got;
  prx_sim_destroy(sim);
  return rc;
}

/* ---- polyrx ---- */

typedef struct {
  double msym;     /* best Msymbol/s */
  double cpu_msym; /* best Msymbol/s of the calling thread's CPU time (one-thread runs) */
  double ber;      /* against the generator (first symbol left out) */
  size_t symbols;
} result;

static result run_polyrx(const signal_t *s, int threads, int llr, int reps) {
  result res = {0, 0, -1, 0};
  prx_qpsk_config qc = prx_qpsk_config_default();
  qc.sample_rate = s->sps * 1e6;
  qc.symbol_rate = 1e6;
  qc.threads = threads;
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    fprintf(stderr, "bench_qpsk: %s\n", prx_last_error());
    return res;
  }
  size_t cap = NSYM + 8192;
  uint8_t *bits = malloc(2 * cap);
  float *llrs = llr ? malloc(2 * cap * sizeof(float)) : NULL;
  double best = 1e30, best_cpu = 1e30;
  size_t tot = 0;
  for (int r = 0; r < reps; r++) {
    prx_qpsk_reset(q);
    tot = 0;
    double t0 = now(), c0 = cpu_now();
    for (size_t i = 0; i < s->n; i += CHUNK) {
      size_t m = s->n - i < CHUNK ? s->n - i : CHUNK, got;
      prx_qpsk_execute(q, s->x + i, m, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot,
                       &got);
      tot += got;
    }
    size_t got;
    prx_qpsk_flush(q, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot, &got);
    tot += got;
    double dt = now() - t0, dc = cpu_now() - c0;
    if (dt < best) best = dt;
    if (dc < best_cpu) best_cpu = dc;
  }
  size_t e = 0, n = 2 * tot < s->nbits ? 2 * tot : s->nbits;
  for (size_t i = 2; i < n; i++) e += bits[i] != s->bits[i];
  res.msym = tot / best / 1e6;
  res.cpu_msym = threads == 1 ? tot / best_cpu / 1e6 : 0;
  res.ber = n > 2 ? (double)e / (double)(n - 2) : -1;
  res.symbols = tot;
  free(bits);
  free(llrs);
  prx_qpsk_destroy(q);
  return res;
}

/* ---- liquid-dsp ---- */

#ifdef PRX_HAVE_LIQUID
typedef struct {
  const signal_t *s;
  double seconds, cpu_seconds, mer_db;
  size_t symbols;
} liquid_job;

static void *liquid_chain(void *arg) {
  liquid_job *j = arg;
  const signal_t *s = j->s;
  symsync_crcf ss = symsync_crcf_create_rnyquist(LIQUID_FIRFILT_RRC, 4, 6, 0.35f, 32);
  symsync_crcf_set_lf_bw(ss, 0.02f);
  symsync_crcf_set_output_rate(ss, 1);
  nco_crcf nco = nco_crcf_create(LIQUID_VCO);
  nco_crcf_pll_set_bandwidth(nco, 0.02f);
  modemcf dem = modemcf_create(LIQUID_MODEM_QPSK);
  float complex *y = malloc((CHUNK / 4 + 64) * sizeof *y);
  unsigned char *syms = malloc(NSYM + 8192);
  double sig = 0, err = 0, num_re = 0;
  size_t nsym = 0;
  double t0 = now(), c0 = cpu_now();
  for (size_t i = 0; i < s->n; i += CHUNK) {
    unsigned m = (unsigned)(s->n - i < CHUNK ? s->n - i : CHUNK), ny = 0;
    symsync_crcf_execute(ss, (float complex *)(s->x + i), m, y, &ny);
    for (unsigned k = 0; k < ny; k++) {
      float complex z, xhat;
      unsigned int sym;
      nco_crcf_mix_down(nco, y[k], &z);
      modemcf_demodulate(dem, z, &sym);
      nco_crcf_pll_step(nco, modemcf_get_demodulator_phase_error(dem));
      nco_crcf_step(nco);
      if (nsym < NSYM + 8192) syms[nsym] = (unsigned char)sym;
      nsym++;
      if (nsym > NSYM / 2) { /* MER of the second half: is the loop locked? */
        modemcf_get_demodulator_sample(dem, &xhat);
        sig += crealf(xhat * conjf(xhat));
        num_re += crealf(z * conjf(xhat));
        err += crealf((z - xhat) * conjf(z - xhat));
      }
    }
  }
  j->seconds = now() - t0;
  j->cpu_seconds = cpu_now() - c0;
  j->symbols = nsym;
  (void)num_re;
  /* scale-free MER: the chain has no AGC, so fit the amplitude a = <z, xhat> / <xhat, xhat> */
  j->mer_db = err > 0 ? 10 * log10(sig / err) : 0;
  free(y);
  free(syms);
  modemcf_destroy(dem);
  nco_crcf_destroy(nco);
  symsync_crcf_destroy(ss);
  return NULL;
}

static result run_liquid(const signal_t *s, int threads, int reps, double *mer) {
  result res = {0, 0, -1, 0};
  double best = 1e30, best_cpu = 1e30;
  liquid_job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    for (int t = 0; t < threads; t++) {
      jobs[t].s = s;
      if (threads == 1)
        liquid_chain(&jobs[t]);
      else
        pthread_create(&th[t], NULL, liquid_chain, &jobs[t]);
    }
    if (threads > 1)
      for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    double dt = now() - t0;
    if (dt < best) best = dt;
    if (jobs[0].cpu_seconds < best_cpu) best_cpu = jobs[0].cpu_seconds;
  }
  res.symbols = jobs[0].symbols;
  res.msym = (double)threads * jobs[0].symbols / best / 1e6;
  res.cpu_msym = threads == 1 ? jobs[0].symbols / best_cpu / 1e6 : 0;
  *mer = jobs[0].mer_db;
  free(jobs);
  free(th);
  return res;
}
#endif

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) reps = 1;
  int cores = prx_cpu_count();
  signal_t s4;
  if (make_signal(4, &s4)) {
    fprintf(stderr, "bench_qpsk: cannot make the signal: %s\n", prx_last_error());
    return 1;
  }
  /* polyrx at 4 sps: 1 thread and all cores, bits and bits + LLRs */
  result p1 = run_polyrx(&s4, 1, 0, reps), pn = run_polyrx(&s4, 0, 0, reps);
  result p1l = run_polyrx(&s4, 1, 1, reps), pnl = run_polyrx(&s4, 0, 1, reps);
  const struct {
    const char *what;
    int threads, llr;
    const result *r;
  } pr[] = {{"bits", 1, 0, &p1},
            {"bits", cores, 0, &pn},
            {"bits+llr", 1, 1, &p1l},
            {"bits+llr", cores, 1, &pnl}};
  for (size_t i = 0; i < 4; i++)
    printf("{\"bench\":\"qpsk\",\"impl\":\"polyrx\",\"sps\":4,\"threads\":%d,\"output\":\"%s\","
           "\"symbols\":%zu,\"msym_per_s\":%.3f,\"cpu_msym_per_s\":%.3f,\"ber\":%.3e}\n",
           pr[i].threads, pr[i].what, pr[i].r->symbols, pr[i].r->msym, pr[i].r->cpu_msym,
           pr[i].r->ber);
  /* other sample rates, one thread, for the record */
  const double others[] = {2, 16.0 / 3, 8};
  result po[3];
  for (size_t i = 0; i < 3; i++) {
    signal_t so;
    if (make_signal(others[i], &so)) return 1;
    po[i] = run_polyrx(&so, 1, 0, reps);
    printf("{\"bench\":\"qpsk\",\"impl\":\"polyrx\",\"sps\":%.4f,\"threads\":1,\"output\":\"bits\","
           "\"symbols\":%zu,\"msym_per_s\":%.3f,\"ber\":%.3e}\n",
           others[i], po[i].symbols, po[i].msym, po[i].ber);
    free(so.x);
    free(so.bits);
  }
#ifdef PRX_HAVE_LIQUID
  double mer1 = 0, mern = 0;
  result l1 = run_liquid(&s4, 1, reps, &mer1), ln = run_liquid(&s4, cores, reps, &mern);
  printf(
      "{\"bench\":\"qpsk\",\"impl\":\"liquid-dsp\",\"chain\":\"symsync_crcf+nco_crcf_pll+modem\","
      "\"sps\":4,\"threads\":1,\"symbols\":%zu,\"msym_per_s\":%.3f,\"cpu_msym_per_s\":%.3f,"
      "\"mer_db\":%.2f}\n",
      l1.symbols, l1.msym, l1.cpu_msym, mer1);
  printf(
      "{\"bench\":\"qpsk\",\"impl\":\"liquid-dsp\",\"chain\":\"symsync_crcf+nco_crcf_pll+modem\","
      "\"sps\":4,\"threads\":%d,\"chains\":%d,\"symbols\":%zu,\"msym_per_s\":%.3f,"
      "\"mer_db\":%.2f}\n",
      cores, cores, ln.symbols, ln.msym, mern);
  printf("{\"bench\":\"qpsk\",\"ratio\":\"polyrx/liquid\",\"sps\":4,\"one_thread\":%.2f,"
         "\"all_cores\":%.2f,\"one_thread_llr\":%.2f,\"one_thread_cpu\":%.2f}\n",
         p1.msym / l1.msym, pn.msym / ln.msym, p1l.msym / l1.msym, p1.cpu_msym / l1.cpu_msym);
#endif
  printf("\nQPSK demodulation, 4 samples/symbol, %u symbols, Es/N0 12 dB, best of %d (Msymbol/s)\n",
         NSYM, reps);
  printf("  %-34s %10s %10s\n", "", "1 thread", "all cores");
  printf("  %-34s %10.2f %10.2f   (BER %.1e)\n", "polyrx open-loop, bits", p1.msym, pn.msym,
         p1.ber);
  printf("  %-34s %10.2f %10.2f\n", "polyrx open-loop, bits + LLRs", p1l.msym, pnl.msym);
#ifdef PRX_HAVE_LIQUID
  printf("  %-34s %10.2f %10.2f   (MER %.1f dB: locked)\n", "liquid symsync+PLL+modem", l1.msym,
         ln.msym, mer1);
  printf("  %-34s %10.1fx %9.1fx\n", "ratio polyrx / liquid", p1.msym / l1.msym, pn.msym / ln.msym);
  printf("  %-34s %10.1fx            (%.2f / %.2f Msymbol/s of thread CPU time)\n",
         "ratio, one thread's CPU time", p1.cpu_msym / l1.cpu_msym, p1.cpu_msym, l1.cpu_msym);
#else
  printf("  (liquid-dsp not found at build time: no peer figures)\n");
#endif
  printf("  polyrx 1 thread at sps 2 / 5.333 / 8: %.2f / %.2f / %.2f Msymbol/s\n", po[0].msym,
         po[1].msym, po[2].msym);
  if (argc > 2) { /* scaling series */
    printf("  polyrx scaling (4 sps, bits):");
    for (const char *t = argv[2]; *t;) {
      int th = atoi(t);
      if (th > 0) {
        result r = run_polyrx(&s4, th, 0, reps);
        printf(" %d: %.1f", th, r.msym);
        fprintf(stderr,
                "{\"bench\":\"qpsk\",\"impl\":\"polyrx\",\"sps\":4,\"threads\":%d,"
                "\"output\":\"bits\",\"msym_per_s\":%.3f}\n",
                th, r.msym);
      }
      while (*t && *t != ',') t++;
      if (*t == ',') t++;
    }
    printf(" Msymbol/s\n");
  }
  free(s4.x);
  free(s4.bits);
  return 0;
}
