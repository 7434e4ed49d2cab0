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
 * Usage: bench_qpsk [reps [THREADS,THREADS,...]]: the list adds a polyrx scaling series.
 *        bench_qpsk probe SPS LOG2_SYMBOLS [key=value...]: one configuration (see probe())
 *        bench_qpsk clock [THREADS]: the core clock under load
 *        bench_qpsk hash: hashes of every output over many configurations (bit identity) */
#include "bench_clock.h"
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
  size_t nsym;
} signal_t;

/* A simulator of carrier c alone at sps samples per symbol, in noise at esn0_db. */
static prx_status one_carrier_sim(const prx_sim_carrier *c, double sps, double esn0_db, int threads,
                                  prx_sim **sim) {
  prx_sim_config sc = prx_sim_config_default();
  sc.sample_rate = sps * c->symbol_rate;
  sc.carriers = c;
  sc.n_carriers = 1;
  sc.noise = 1;
  sc.esn0_db = esn0_db;
  sc.threads = threads;
  return prx_sim_create(&sc, sim);
}

static int pi4_mode; /* probe's pi4=1: the signal pi/4-DQPSK and the demodulator in PRX_QPSK_PI4 */

static int make_signal_n(double sps, size_t nsym, signal_t *s) {
  prx_sim_carrier c = prx_sim_carrier_default();
  c.pi4 = pi4_mode;
  c.symbol_rate = 1e6;
  c.freq = 0.002 * c.symbol_rate;
  c.phase = 1.0;
  c.timing_offset = 0.37;
  c.clock_ppm = 20;
  c.differential = 1;
  c.seed = 11;
  prx_sim *sim;
  if (one_carrier_sim(&c, sps, 12, 0, &sim) != PRX_OK) return -1;
  s->sps = sps;
  s->nsym = nsym;
  s->n = (size_t)((double)nsym * sps);
  s->x = malloc(s->n * sizeof *s->x);
  s->bits = malloc(2 * nsym + 4096);
  size_t got = 0;
  int rc = (s->x && s->bits && prx_sim_generate(sim, s->x, s->n) == PRX_OK &&
            prx_sim_take_bits(sim, 0, s->bits, 2 * nsym + 4096, &got) == PRX_OK)
               ? 0
               : -1;
  s->nbits = got;
  prx_sim_destroy(sim);
  return rc;
}

static int make_signal(double sps, signal_t *s) { return make_signal_n(sps, NSYM, s); }

/* ---- hardware counters (probe mode): perf_event_open, user space only, where allowed ---- */

#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#define HAVE_COUNTERS 1
#endif

/* generic events, then raw Intel ones (whichever the core knows): 4K-aliasing load blocks
 * (LD_BLOCKS_PARTIAL.ADDRESS_ALIAS up to Ice Lake, LD_BLOCKS.ADDRESS_ALIAS from Golden Cove) and
 * cycles stalled with an L3 miss outstanding (CYCLE_ACTIVITY.STALLS_L3_MISS) */
enum { NCTR = 7 };
static const char *const ctr_name[NCTR] = {"cycles",     "instructions", "l1d_miss",    "llc_miss",
                                           "alias_0107", "alias_0403",   "stall_l3miss"};
typedef struct {
  int fd[NCTR];
  double v[NCTR]; /* per symbol, summed over the reps then divided */
} counters;

#ifdef HAVE_COUNTERS
static int ctr_open(uint32_t type, uint64_t config) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}
#endif

static void ctr_init(counters *c) {
  for (int i = 0; i < NCTR; i++) c->fd[i] = -1, c->v[i] = -1;
#ifdef HAVE_COUNTERS
  const uint64_t l1d = PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                       ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
  c->fd[0] = ctr_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  c->fd[1] = ctr_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
  c->fd[2] = ctr_open(PERF_TYPE_HW_CACHE, l1d);
  c->fd[3] = ctr_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
  c->fd[4] = ctr_open(PERF_TYPE_RAW, 0x0107);
  c->fd[5] = ctr_open(PERF_TYPE_RAW, 0x0403);
  c->fd[6] = ctr_open(PERF_TYPE_RAW, 0xa3 | 0x06 << 8 | (uint64_t)6 << 24);
  for (int i = 0; i < NCTR; i++)
    if (c->fd[i] >= 0) c->v[i] = 0;
#endif
}

static void ctr_switch(counters *c, int on) {
#ifdef HAVE_COUNTERS
  for (int i = 0; i < NCTR; i++)
    if (c->fd[i] >= 0) ioctl(c->fd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
#else
  (void)c, (void)on;
#endif
}

/* the counts so far, scaled for multiplexing, divided by n */
static void ctr_finish(counters *c, double n) {
  for (int i = 0; i < NCTR; i++) {
#ifdef HAVE_COUNTERS
    uint64_t r[3];
    if (c->fd[i] >= 0 && read(c->fd[i], r, sizeof r) == (ssize_t)sizeof r && r[2] > 0)
      c->v[i] = (double)r[0] * ((double)r[1] / (double)r[2]) / n;
    if (c->fd[i] >= 0) close(c->fd[i]);
#endif
    c->fd[i] = -1;
  }
  (void)n;
}

static long minor_faults(void) {
#ifdef HAVE_COUNTERS
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
#else
  return 0;
#endif
}

/* ---- polyrx ---- */

typedef struct {
  double msym;     /* best Msymbol/s */
  double cpu_msym; /* best Msymbol/s of the calling thread's CPU time (one-thread runs) */
  double ber;      /* against the generator (first symbol left out) */
  size_t symbols;
  double mean_msym; /* Msymbol/s of the mean rep (probe mode) */
  long faults;      /* minor page faults inside the timed reps (probe mode) */
} result;

/* how a probe run feeds the demodulator (defaults: the benchmark's) */
typedef struct {
  const prx_cf32 *x; /* input (NULL: the signal's own buffer) */
  size_t chunk;      /* samples per call */
  size_t evict;      /* bytes of an unrelated buffer swept before each rep (0: none) */
  counters *ctr;     /* counted over the timed reps (NULL: none) */
  void (*between)(void *ctx, int rep); /* run after each rep, untimed (NULL: nothing) */
  void *ctx;
  double *rep_msym; /* each rep's Msymbol/s (NULL: not kept) */
} run_opt;

static unsigned char *evict_buf;
static void evict_caches(size_t bytes) {
  if (!evict_buf) evict_buf = calloc(bytes, 1);
  volatile unsigned char sink = 0;
  for (size_t i = 0; evict_buf && i < bytes; i += 64) evict_buf[i] += 1, sink += evict_buf[i];
  (void)sink;
}

static result run_polyrx_opt(const signal_t *s, int threads, int llr, int reps, const run_opt *o) {
  result res = {0, 0, -1, 0, 0, 0};
  prx_qpsk_config qc = prx_qpsk_config_default();
  qc.sample_rate = s->sps * 1e6;
  qc.symbol_rate = 1e6;
  qc.threads = threads;
  qc.modulation = pi4_mode ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    fprintf(stderr, "bench_qpsk: %s\n", prx_last_error());
    return res;
  }
  const prx_cf32 *x = o && o->x ? o->x : s->x;
  size_t chunk = o && o->chunk ? o->chunk : CHUNK;
  size_t cap = s->nsym + 8192;
  uint8_t *bits = malloc(2 * cap);
  float *llrs = llr ? malloc(2 * cap * sizeof(float)) : NULL;
  double best = 1e30, best_cpu = 1e30, sum = 0;
  size_t tot = 0;
  long faults = 0;
  for (int r = 0; r < reps; r++) {
    prx_qpsk_reset(q);
    tot = 0;
    if (o && o->evict) evict_caches(o->evict);
    long f0 = minor_faults();
    if (o && o->ctr) ctr_switch(o->ctr, 1);
    double t0 = bench_now(), c0 = cpu_now();
    for (size_t i = 0; i < s->n; i += chunk) {
      size_t m = s->n - i < chunk ? s->n - i : chunk, got;
      prx_qpsk_execute(q, x + i, m, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot, &got);
      tot += got;
    }
    size_t got;
    prx_qpsk_flush(q, bits + 2 * tot, llrs ? llrs + 2 * tot : NULL, cap - tot, &got);
    tot += got;
    double dt = bench_now() - t0, dc = cpu_now() - c0;
    if (o && o->ctr) ctr_switch(o->ctr, 0);
    if (r > 0) faults += minor_faults() - f0; /* the first rep touches the buffers */
    sum += dt;
    if (dt < best) best = dt;
    if (dc < best_cpu) best_cpu = dc;
    if (o && o->rep_msym) o->rep_msym[r] = tot / dt / 1e6;
    if (o && o->between) o->between(o->ctx, r);
  }
  if (o && o->ctr) ctr_finish(o->ctr, (double)tot * reps);
  size_t e = 0, n = 2 * tot < s->nbits ? 2 * tot : s->nbits;
  for (size_t i = 2; i < n; i++) e += bits[i] != s->bits[i];
  res.msym = tot / best / 1e6;
  res.cpu_msym = threads == 1 ? tot / best_cpu / 1e6 : 0;
  res.ber = n > 2 ? (double)e / (double)(n - 2) : -1;
  res.symbols = tot;
  res.mean_msym = tot / (sum / reps) / 1e6;
  res.faults = faults;
  free(bits);
  free(llrs);
  prx_qpsk_destroy(q);
  return res;
}

static result run_polyrx(const signal_t *s, int threads, int llr, int reps) {
  return run_polyrx_opt(s, threads, llr, reps, NULL);
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
  const size_t nmax = s->nsym + 8192;
  unsigned char *syms = malloc(nmax);
  double sig = 0, err = 0, num_re = 0;
  size_t nsym = 0;
  double t0 = bench_now(), c0 = cpu_now();
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
      if (nsym < nmax) syms[nsym] = (unsigned char)sym;
      nsym++;
      if (nsym > s->nsym / 2) { /* MER of the second half: is the loop locked? */
        modemcf_get_demodulator_sample(dem, &xhat);
        sig += crealf(xhat * conjf(xhat));
        num_re += crealf(z * conjf(xhat));
        err += crealf((z - xhat) * conjf(z - xhat));
      }
    }
  }
  j->seconds = bench_now() - t0;
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
  result res = {0, 0, -1, 0, 0, 0};
  double best = 1e30, best_cpu = 1e30;
  liquid_job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    for (int t = 0; t < threads; t++) {
      jobs[t].s = s;
      if (threads == 1)
        liquid_chain(&jobs[t]);
      else
        pthread_create(&th[t], NULL, liquid_chain, &jobs[t]);
    }
    if (threads > 1)
      for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    double dt = bench_now() - t0;
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

/* one rep of the one-thread chain between two reps of polyrx (run_opt.between) */
typedef struct {
  const signal_t *s;
  result best;  /* best Msymbol/s and best CPU-time Msymbol/s so far */
  double *msym; /* each rep's */
  double *mer;
} liquid_reps;

static void liquid_rep(void *ctx, int rep) {
  liquid_reps *l = ctx;
  result b = run_liquid(l->s, 1, 1, l->mer);
  if (b.msym > l->best.msym) l->best.msym = b.msym;
  if (b.cpu_msym > l->best.cpu_msym) l->best.cpu_msym = b.cpu_msym;
  l->best.symbols = b.symbols;
  l->msym[rep] = b.msym;
}
#endif

/* ---- probe mode: one configuration at a time, for finding where a machine differs ---- */

/* the core's clock under this load: a chain of dependent integer multiplications, timed by the
 * thread's CPU time, in each of n threads at once */
typedef struct {
  double ghz;
  uint64_t sink;
} clock_job;

static void *clock_thread(void *arg) {
  clock_job *j = arg;
  const uint64_t iters = (uint64_t)1 << 28; /* multiplications */
  uint64_t acc = 0;
  double t0 = cpu_now(); /* the thread's own time: a descheduled thread does not lower it */
#if defined(__x86_64__) && defined(__GNUC__)
  /* imul: 3 cycles of latency on every Intel core since Sandy Bridge and AMD since Zen (adds of
   * an immediate can be folded at rename on recent cores, so they do not measure the clock) */
  uint64_t n = iters / 4, m = 3;
  __asm__ volatile("1:\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                   "dec %1\n\tjnz 1b"
                   : "+r"(acc), "+r"(n)
                   : "r"(m));
#else
  for (uint64_t i = 0; i < iters; i++) acc = acc * 3 + 1;
#endif
  j->ghz = (double)iters * 3 / (cpu_now() - t0) / 1e9;
  j->sink = acc;
  return NULL;
}

static int clock_probe(int threads) {
  if (threads < 1) threads = 1;
  clock_job *jobs = calloc((size_t)threads, sizeof *jobs);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, clock_thread, &jobs[t]);
  double lo = 1e30, hi = 0, sum = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    if (jobs[t].ghz < lo) lo = jobs[t].ghz;
    if (jobs[t].ghz > hi) hi = jobs[t].ghz;
    sum += jobs[t].ghz;
  }
  printf("{\"bench\":\"qpsk_probe_clock\",\"threads\":%d,\"ghz_min\":%.3f,\"ghz_mean\":%.3f,"
         "\"ghz_max\":%.3f}\n",
         threads, lo, sum / threads, hi);
  free(jobs);
  free(th);
  return 0;
}

static double kv(int argc, char **argv, const char *key, double dflt) {
  size_t n = strlen(key);
  for (int i = 0; i < argc; i++)
    if (!strncmp(argv[i], key, n) && argv[i][n] == '=') return atof(argv[i] + n + 1);
  return dflt;
}

/* bench_qpsk probe SPS LOG2_SYMBOLS [reps=5] [rounds=1] [llr=0] [threads=1] [offset=-1]
 *   [chunk=65536] [evict=0 (MiB)] [ftz=0] [liquid=0] [shift=0] [pi4=0]
 * offset >= 0: the input copied to a 2 MiB-aligned buffer at this byte offset (its address's
 * low 12 bits against the demodulator's buffers); evict: a buffer of that many MiB swept before
 * each rep, so that the input comes from memory as in a stream; shift: bytes allocated before the
 * demodulator, moving its buffers against the input; rounds: the same measurement
 * repeated in this process (the first one against the later ones). One JSON line per round. */
static int probe(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_qpsk probe SPS LOG2_SYMBOLS [key=value...]\n");
    return 2;
  }
  double sps = atof(argv[0]);
  int lg = atoi(argv[1]);
  if (!(sps >= 2 && sps <= 64) || lg < 12 || lg > 24) {
    fprintf(stderr, "bench_qpsk probe: SPS 2..64 and LOG2_SYMBOLS 12..24\n");
    return 2;
  }
  int reps = (int)kv(argc, argv, "reps", 5), rounds = (int)kv(argc, argv, "rounds", 1);
  int llr = (int)kv(argc, argv, "llr", 0), threads = (int)kv(argc, argv, "threads", 1);
  long offset = (long)kv(argc, argv, "offset", -1);
  size_t chunk = (size_t)kv(argc, argv, "chunk", (double)CHUNK);
  size_t evict = (size_t)(kv(argc, argv, "evict", 0) * 1048576.0);
  int ftz = (int)kv(argc, argv, "ftz", 0), liquid = (int)kv(argc, argv, "liquid", 0);
  size_t shift = (size_t)kv(argc, argv, "shift", 0);
  pi4_mode = (int)kv(argc, argv, "pi4", 0) != 0;
  if (reps < 1) reps = 1;
  if (rounds < 1) rounds = 1;
#if defined(__x86_64__) && defined(__GNUC__)
  if (ftz) { /* flush-to-zero and denormals-are-zero: does the run meet denormals? */
    unsigned csr = __builtin_ia32_stmxcsr();
    __builtin_ia32_ldmxcsr(csr | 0x8040);
  }
#endif
  signal_t sg;
  if (make_signal_n(sps, (size_t)1 << lg, &sg)) {
    fprintf(stderr, "bench_qpsk: cannot make the signal: %s\n", prx_last_error());
    return 1;
  }
  void *copy = NULL;
  const prx_cf32 *x = sg.x;
  if (offset >= 0) {
    size_t align = (size_t)2 << 20, bytes = sg.n * sizeof *sg.x + (size_t)offset + align;
    copy = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!copy) return 1;
    x = (const prx_cf32 *)((char *)copy + offset);
    memcpy((void *)x, sg.x, sg.n * sizeof *sg.x);
  }
  for (int r = 0; r < rounds; r++) {
    counters c;
    ctr_init(&c);
    run_opt o = {x, chunk, evict, &c, NULL, NULL, NULL};
    void *pad = shift ? malloc(shift) : NULL; /* moves the demodulator's buffers on the heap */
    result p = run_polyrx_opt(&sg, threads, llr, reps, &o);
    free(pad);
    printf("{\"bench\":\"qpsk_probe\",\"sps\":%.4f,\"symbols\":%zu,\"round\":%d,\"llr\":%d,"
           "\"threads\":%d,\"offset\":%ld,\"in_mod4096\":%lu,\"chunk\":%zu,\"evict_mib\":%zu,"
           "\"ftz\":%d,\"shift\":%zu,\"pi4\":%d,\"msym_per_s\":%.3f,\"mean_msym_per_s\":%.3f,\"cpu_"
           "msym_per_"
           "s\":%.3f,"
           "\"ns_per_sym\":%.2f,\"faults_per_rep\":%ld,\"ber\":%.3e",
           sps, p.symbols, r, llr, threads, offset, (unsigned long)((uintptr_t)x % 4096), chunk,
           evict >> 20, ftz, shift, pi4_mode, p.msym, p.mean_msym, p.cpu_msym, 1e3 / p.msym,
           reps > 1 ? p.faults / (reps - 1) : 0, p.ber);
    for (int i = 0; i < NCTR; i++)
      if (c.v[i] >= 0) printf(",\"%s_per_sym\":%.3f", ctr_name[i], c.v[i]);
    if (c.v[0] > 0 && c.v[1] > 0)
      printf(",\"ipc\":%.3f,\"ghz\":%.3f", c.v[1] / c.v[0], c.v[0] * p.mean_msym / 1e3);
    printf("}\n");
    fflush(stdout);
  }
#ifdef PRX_HAVE_LIQUID
  if (liquid && sps == 4) {
    double mer = 0;
    result l = run_liquid(&sg, 1, reps, &mer);
    printf("{\"bench\":\"qpsk_probe\",\"impl\":\"liquid-dsp\",\"sps\":4,\"symbols\":%zu,"
           "\"msym_per_s\":%.3f,\"cpu_msym_per_s\":%.3f,\"mer_db\":%.2f}\n",
           l.symbols, l.msym, l.cpu_msym, mer);
  }
#else
  (void)liquid;
#endif
  free(copy);
  free(sg.x);
  free(sg.bits);
  free(evict_buf);
  return 0;
}

/* ---- hash mode: every output of the demodulator over many configurations, hashed, so that a
 * change meant to keep the arithmetic can be compared bit for bit with the tree before it ---- */

static void hash_block(void *user, const prx_qpsk_block *b) {
  *(uint64_t *)user = test_fnv1a(*(uint64_t *)user, b, sizeof *b);
}

/* one configuration: its hash (bits, LLRs, corrected symbols, block estimates, summary) */
static uint64_t hash_run(double sps, prx_qpsk_ambiguity amb, int threads, int random_chunks,
                         int ci16, double ppm) {
  const size_t nsym = (size_t)1 << 15;
  prx_sim_carrier c = prx_sim_carrier_default();
  c.symbol_rate = 1e6;
  c.freq = 0.01 * c.symbol_rate;
  c.phase = 0.3;
  c.timing_offset = 0.21;
  c.clock_ppm = ppm;
  c.differential = amb == PRX_QPSK_DIFFERENTIAL;
  if (amb == PRX_QPSK_PILOTS) c.pilot_period = 64, c.pilot_len = 8;
  c.seed = 5;
  size_t n = (size_t)((double)nsym * sps);
  prx_cf32 *x = malloc(n * sizeof *x);
  int16_t *xi = ci16 ? malloc(2 * n * sizeof *xi) : NULL;
  prx_sim *sim;
  if (!x || one_carrier_sim(&c, sps, 8, 1, &sim) != PRX_OK) return 0;
  prx_sim_generate(sim, x, n);
  prx_sim_destroy(sim);
  for (size_t i = 0; ci16 && i < n; i++) {
    xi[2 * i] = (int16_t)lrintf(x[i].re * 4000);
    xi[2 * i + 1] = (int16_t)lrintf(x[i].im * 4000);
  }
  uint64_t h = TEST_FNV_BASIS;
  prx_qpsk_config qc = prx_qpsk_config_default();
  qc.sample_rate = sps * c.symbol_rate;
  qc.symbol_rate = c.symbol_rate;
  qc.threads = threads;
  qc.ambiguity = amb;
  if (amb == PRX_QPSK_PILOTS) qc.pilot_period = 64, qc.pilot_len = 8;
  qc.in_format = ci16 ? PRX_CI16 : PRX_CF32;
  qc.on_block = hash_block;
  qc.user = &h;
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    fprintf(stderr, "bench_qpsk hash: %s\n", prx_last_error());
    return 0;
  }
  size_t cap = nsym + 16384, tot = 0, got;
  uint8_t *bits = malloc(2 * cap);
  float *llrs = malloc(2 * cap * sizeof *llrs);
  prx_cf32 *syms = malloc(cap * sizeof *syms);
  uint64_t rng = 12345;
  const size_t in_size = ci16 ? 4 : 8;
  const uint8_t *in = ci16 ? (const uint8_t *)xi : (const uint8_t *)x;
  for (size_t i = 0; i < n;) {
    size_t m = 65536;
    if (random_chunks) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      m = 1 + (size_t)(rng >> 33) % 5000;
    }
    if (m > n - i) m = n - i;
    prx_qpsk_execute_symbols(q, in + i * in_size, m, bits + 2 * tot, llrs + 2 * tot, syms + tot,
                             cap - tot, &got);
    tot += got;
    i += m;
  }
  prx_qpsk_flush_symbols(q, bits + 2 * tot, llrs + 2 * tot, syms + tot, cap - tot, &got);
  tot += got;
  prx_qpsk_stats st;
  memset(&st, 0, sizeof st);
  prx_qpsk_get_stats(q, &st);
  h = test_fnv1a(h, bits, 2 * tot);
  h = test_fnv1a(h, llrs, 2 * tot * sizeof *llrs);
  h = test_fnv1a(h, syms, tot * sizeof *syms);
  h = test_fnv1a(h, &st, sizeof st);
  prx_qpsk_destroy(q);
  free(bits);
  free(llrs);
  free(syms);
  free(x);
  free(xi);
  return h;
}

static int hash_all(void) {
  const double sps[] = {2, 3, 4, 16.0 / 3, 8, 16};
  const prx_qpsk_ambiguity amb[] = {PRX_QPSK_DIFFERENTIAL, PRX_QPSK_NONE, PRX_QPSK_PILOTS};
  uint64_t all = TEST_FNV_BASIS;
  int n = 0;
  for (size_t s = 0; s < sizeof sps / sizeof *sps; s++)
    for (size_t a = 0; a < 3; a++)
      for (int th = 1; th <= 3; th += 2)
        for (int rc = 0; rc < 2; rc++)
          for (int v = 0; v < (sps[s] == 4 ? 3 : 1); v++) { /* at sps 4 also ci16 and 1000 ppm */
            uint64_t h = hash_run(sps[s], amb[a], th, rc, v == 1, v == 2 ? 1000 : 20);
            printf("sps %.4f %s threads %d chunks %s %s %s: %016llx\n", sps[s],
                   prx_qpsk_ambiguity_name(amb[a]), th, rc ? "random" : "65536",
                   v == 1 ? "ci16" : "cf32", v == 2 ? "1000ppm" : "20ppm", (unsigned long long)h);
            all = test_fnv1a(all, &h, sizeof h);
            n++;
          }
  printf("all %d configurations: %016llx\n", n, (unsigned long long)all);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "hash")) return hash_all();
  if (argc > 1 && !strcmp(argv[1], "probe")) return probe(argc - 2, argv + 2);
  if (argc > 1 && !strcmp(argv[1], "clock")) return clock_probe(argc > 2 ? atoi(argv[2]) : 1);
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) reps = 1;
  int cores = prx_cpu_count();
  signal_t s4;
  if (make_signal(4, &s4)) {
    fprintf(stderr, "bench_qpsk: cannot make the signal: %s\n", prx_last_error());
    return 1;
  }
  /* polyrx at 4 sps: 1 thread and all cores, bits and bits + LLRs */
  result p1 = run_polyrx(&s4, 1, 0, reps);
  result pn = run_polyrx(&s4, 0, 0, reps);
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
  /* then the one-thread pair again, repetitions alternating between the two (the median of the
   * pairs' ratios): on the lent GPU host a process's speed was seen to change by 1.5x between
   * its phases (bench/RESULTS.md, QPSK demodulator, 2026-12-01 fifth session), which the
   * separate series above can put on either side of the ratio */
  double pair_med = 0;
  {
    double *pm = calloc((size_t)reps, sizeof *pm), *lm = calloc((size_t)reps, sizeof *lm);
    liquid_reps lr = {&s4, {0, 0, -1, 0, 0, 0}, lm, &mer1};
    run_opt po1 = {NULL, 0, 0, NULL, liquid_rep, &lr, pm};
    if (pm && lm) {
      run_polyrx_opt(&s4, 1, 0, reps, &po1);
      for (int r = 0; r < reps; r++) pm[r] /= lm[r];
      for (int i = 1; i < reps; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && pm[j - 1] > pm[j]; j--) {
          double t = pm[j];
          pm[j] = pm[j - 1];
          pm[j - 1] = t;
        }
      pair_med = reps % 2 ? pm[reps / 2] : 0.5 * (pm[reps / 2 - 1] + pm[reps / 2]);
    }
    free(pm);
    free(lm);
  }
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
         "\"one_thread_pairs_median\":%.2f,\"all_cores\":%.2f,\"one_thread_llr\":%.2f,"
         "\"one_thread_cpu\":%.2f}\n",
         p1.msym / l1.msym, pair_med, pn.msym / ln.msym, p1l.msym / l1.msym,
         p1.cpu_msym / l1.cpu_msym);
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
  printf("  %-34s %10.1fx            (median of %d alternating pairs)\n", "ratio, pair by pair",
         pair_med, reps);
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
