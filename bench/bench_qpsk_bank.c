/* Benchmark of the QPSK demodulator bank: device-resident aggregate throughput (rows in device
 * memory, prx_qpsk_bank_execute_device: the stage kernels under the stage-major driver) and the
 * CPU bank on all cores beside it, in the same run.
 *
 * Configurations: 4 and 16/3 samples/symbol (the latter the seed's 2400 Bd in 12.8 kHz
 * channels), C = 64, 1024 and 4096 channels, cf32 and cf16 rows (row pitch a multiple of 64
 * bytes, as the channelizer writes them). Each channel carries its own QPSK carrier (Es/N0
 * 12 dB, random CFO, phase, timing and +-100 ppm clock), differential, RRC 0.35 span 12, block
 * 512, CFO span 8192 symbols; bits unpacked, no LLRs.
 *
 * Throughput: input symbols (C n / sps) per second of steady-state calls of n = 8192 sps
 * samples per row (one CFO span), after two warm-up calls, best of REPS calls, each waited for
 * on the device before the next; the default device calls also as a stream (the receiver's
 * use): SCALLS calls issued back to back, one wait after the last, a call's share of the best of
 * SREPS rounds ("call_stream_s", "call_kept_stream_s"). The device bank as
 * the library sets it up (the level, timing, NCO and phase passes on the GPU, om apart from
 * pre), and beside it in the same run: the phase pass on the CPU (the driver before it moved),
 * the serial passes on the CPU between the stage kernels (the driver before they moved), calls of
 * two spans (n = 2 x 8192 sps), and where the om stage can be folded into pre (sps 4), folded.
 * Two device calls, both kept in the results: the plain call (prx_qpsk_bank_execute_device, the
 * "device" figures), whose chunk holds no history, so that the bank copies each chunk's head into
 * its ring and keeps the tail there; and the receiver's call ("kept":
 * prx_qpsk_bank_execute_device_kept), the same chunks in rows that hold the stream's history
 * before each chunk (a pad before the first), read in place with no copy. The bits of every call
 * of the two are hashed and compared ("kept_same_bits").
 * Floor: one pass at the D2D copy bandwidth measured here (cudaMemcpy device to device, events;
 * bytes read + bytes written per second): sps * sample bytes read + 2 bytes of bits written per
 * symbol.
 * Split of the best call (the driver's own clock, prx_qpsk_bank_gpu_timing): waiting for the
 * device (the kernels and the record copies, not overlapped), the serial passes and the CFO stage
 * on the CPU pool, and the rest (the driver: records, launches, ring copies queued).
 *
 * The CPU bank also runs on one thread at C = 64 (the per-core rate of the same code).
 *
 * Where a call's time goes (--marks): the default bank again, with the driver's marks
 * (prx_qpsk_bank_gpu_set_mark): a timed event recorded on the call's stream after each launch
 * group, and the host's clock there; per group, the device time since the mark before (its
 * kernels, copies and the gaps between them) and when the host reached it, means over MREPS
 * calls.
 *
 * Output: JSON lines, then a short table. Usage: bench_qpsk_bank [--quick] (64 and 1024 only)
 * [--case SPS:C:FORMAT ...] (only those cases, e.g. --case 4:1024:cf32) [--default-only] (the
 * library's default device bank alone, plain and kept: no CPU bank, no variants; for a
 * profiler's window)
 * [--marks] (with --default-only: the default bank's plain and kept calls, then the marks of
 * each) [--pi4] (every carrier pi/4-DQPSK and the banks in PRX_QPSK_PI4: the mode's cost). */
#include "bench_clock.h"
#include "testutil.h"

#include <math.h>
#include <string.h>
#include <time.h>

#ifdef PRX_HAVE_CUDA
#include "bench_cuda.h"
#include "dsp/pack.h"
#include "qpsk/qpsk_bank_internal.h"

#define REPS 3
#define MREPS 8
/* the stream of calls: SREPS rounds of SCALLS calls issued back to back, one wait at the end */
#define SREPS 3
#define SCALLS 8

/* the driver's marks of one call: a timed event and the host's clock at each */
static const char *const mark_names[QPSK_MARK_N] = {
    "start", "pre",   "level", "om",   "timing", "x4",   "cfo",    "nco",
    "mf",    "phase", "out",   "pend", "drain",  "ring", "counts", "end"};
typedef struct {
  cudaEvent_t ev[QPSK_MARK_N];
  double host[QPSK_MARK_N];
  int seen[QPSK_MARK_N];
} mark_rec;

static void on_mark(void *ctx, void *stream, int m) {
  mark_rec *r = ctx;
  if (m < 0 || m >= QPSK_MARK_N) return;
  r->host[m] = bench_now();
  r->seen[m] = 1;
  cudaEventRecord(r->ev[m], (cudaStream_t)stream);
}

static int pi4_mode; /* --pi4 */

/* rows[c] = carrier c; n samples each, pitch in samples */
static void make_rows(unsigned C, double sps, size_t n, size_t pitch, prx_cf32 *rows) {
  test_rng r;
  test_rng_seed(&r, 77);
  prx_sim_carrier car = prx_sim_carrier_default();
  car.symbol_rate = 1e3;
  car.differential = 1;
  car.pi4 = pi4_mode;
  /* a few distinct carriers, repeated over the channels (generation would dominate the run) */
  unsigned distinct = C < 16 ? C : 16;
  for (unsigned c = 0; c < distinct; c++) {
    car.freq = 0.05 * (2 * test_rng_uniform(&r) - 1) * car.symbol_rate;
    car.phase = 6.28 * test_rng_uniform(&r);
    car.timing_offset = test_rng_uniform(&r);
    car.clock_ppm = 100 * (2 * test_rng_uniform(&r) - 1);
    car.seed = test_rng_u64(&r) | 1;
    prx_sim_config sc = prx_sim_config_default();
    sc.sample_rate = sps * car.symbol_rate;
    sc.carriers = &car;
    sc.n_carriers = 1;
    sc.noise = 1;
    sc.esn0_db = 12;
    sc.noise_seed = test_rng_u64(&r) | 1;
    sc.threads = 0;
    prx_sim *s;
    if (prx_sim_create(&sc, &s) == PRX_OK) {
      prx_sim_generate(s, rows + c * pitch, n);
      prx_sim_destroy(s);
    }
  }
  for (unsigned c = distinct; c < C; c++)
    memcpy(rows + c * pitch, rows + (c % distinct) * pitch, n * sizeof *rows);
}

typedef struct {
  double gsym, best_s, wait_s, serial_s, issue_s;
  double stream_s; /* device calls: a call's share of SCALLS back to back (best round), else 0 */
  double ahead;    /* spans whose pre ran ahead, per call */
  int fold;        /* the om stage folded into pre */
  int serial;      /* the level, timing and NCO passes on the GPU */
  int phase;       /* and the phase pass */
  int staged;      /* the CUDA bank stages through the host (no driver) */
  uint64_t hash;   /* hashed runs: FNV-1a of every call's bits, channel by channel */
  int ok_hash;     /* hash taken (the bits came back after each call) */
} result;

/* A bank of C channels at sps samples a symbol (threads 0: the default), and in *bs the bytes of
 * a channel's bit output, enough for a call of 4 n samples (the calls here take at most 2 n);
 * NULL (with the error printed) where it cannot be made. */
static prx_qpsk_bank *bank_open(prx_backend be, int threads, unsigned C, double sps, prx_format fmt,
                                size_t n, size_t *bs) {
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod.sample_rate = sps * 1e3;
  bc.demod.symbol_rate = 1e3;
  bc.demod.modulation = pi4_mode ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
  bc.channels = C;
  bc.row_format = fmt;
  bc.backend = be;
  bc.threads = threads;
  prx_qpsk_bank *b;
  if (prx_qpsk_bank_create(&bc, &b)) {
    fprintf(stderr, "bank: %s\n", prx_last_error());
    return NULL;
  }
  const size_t cap = prx_qpsk_bank_max_symbols(b, 4 * n, 0) + 4096;
  *bs = (2 * cap + 63) / 64 * 64;
  return b;
}

/* The receiver's rows for the kept calls (prx_qpsk_bank_execute_device_kept): on the device, row
 * c = the history pad (the last *pad samples of rows' 4 n, hist rounded up to a multiple of 16)
 * then rows' 4 n samples, so that before each of the four segments lie the stream's samples before
 * it as the calls cycle 0, 1, 2, 3, 0, ...; *kpitch: the new pitch in samples. NULL where it cannot
 * be had.
 */
static void *kept_rows(unsigned C, prx_format fmt, const void *rows, size_t pitch, size_t n,
                       size_t hist, size_t *pad, size_t *kpitch) {
  const size_t sz = prx_format_size(fmt);
  *pad = (hist + 15) / 16 * 16;
  if (*pad > 3 * n) return NULL; /* segment 3 holds the history before segment 0 */
  *kpitch = *pad + pitch;
  void *d = NULL;
  if (cudaMalloc(&d, (size_t)C * *kpitch * sz)) return NULL;
  cudaMemcpy2D(d, *kpitch * sz, (const uint8_t *)rows + (4 * n - *pad) * sz, pitch * sz, *pad * sz,
               C, cudaMemcpyDeviceToDevice);
  cudaMemcpy2D((uint8_t *)d + *pad * sz, *kpitch * sz, rows, pitch * sz, 4 * n * sz, C,
               cudaMemcpyDeviceToDevice);
  if (cudaDeviceSynchronize()) {
    cudaFree(d);
    return NULL;
  }
  return d;
}

/* The calls run_bank makes: the plain call (prx_qpsk_bank_execute_device on device rows,
 * prx_qpsk_bank_execute on host rows), the plain device call with its bits hashed (the kept
 * call's peer), and the receiver's kept call, hashed (device rows, spans 1):
 * prx_qpsk_bank_execute_device_kept on rows that hold the history before each chunk (kept_rows),
 * where the plain device call's chunks hold none (the bank copies each chunk's head into its ring
 * and keeps its tail there). Only the two compared runs take the bits back after each call. */
enum { CALL_PLAIN, CALL_PLAIN_HASHED, CALL_KEPT };

/* calls of spans x n samples (spans 1 or 2; the rows hold 4 n); fold: the device bank's om
 * folded into pre where it can be (1) or apart (0); serial: its serial passes on the GPU with the
 * phase pass (1), without it (2), or all on the CPU (0); call: CALL_* */
static int run_bank(prx_backend be, int threads, unsigned C, double sps, prx_format fmt,
                    const void *rows, size_t pitch, size_t n, int spans, int fold, int serial,
                    int call, result *res) {
  size_t bs;
  prx_qpsk_bank *b = bank_open(be, threads, C, sps, fmt, n, &bs);
  if (!b) return -1;
  const int dev = be == PRX_BACKEND_CUDA, kept = call == CALL_KEPT;
  const int hashed = dev && call != CALL_PLAIN;
  size_t hist = 0, pad = 0;
  void *krows = NULL;
  if (kept) {
    hist = prx_qpsk_bank_history(b);
    krows = dev && spans == 1 ? kept_rows(C, fmt, rows, pitch, n, hist, &pad, &pitch) : NULL;
    if (!krows) {
      fprintf(stderr, "bank: no rows for the kept calls (history %zu samples)\n", hist);
      prx_qpsk_bank_destroy(b);
      return -1;
    }
    rows = (const uint8_t *)krows + pad * prx_format_size(fmt);
  }
  uint8_t *bits = NULL, *hbits = hashed ? malloc(C * bs) : NULL;
  if (dev ? cudaMalloc((void **)&bits, C * bs) != cudaSuccess : !(bits = malloc(C * bs))) {
    prx_qpsk_bank_destroy(b);
    cudaFree(krows);
    free(hbits);
    return -1;
  }
  size_t *ns = calloc(C, sizeof *ns);
  prx_qpsk_bank_out out = {bits, bs, NULL, 0, ns, NULL};
  size_t sz = prx_format_size(fmt);
  res->best_s = 1e30;
  res->hash = 0xcbf29ce484222325ull; /* the FNV-1a basis */
  res->ok_hash = 0;
  int rc = 0;
  /* calls cycle over the 4 n samples of each row: two warm-up calls (the first fills the span
   * buffers; the second runs the first span, with no earlier call's reports still to write as
   * every later call has with the phase pass on the GPU), REPS timed */
  res->staged = dev && !b->drv;
  res->fold = prx_qpsk_bank_gpu_set_fold(b->drv, fold);
  res->serial = prx_qpsk_bank_gpu_set_serial(b->drv, serial != 0);
  prx_qpsk_bank_gpu_set_phase(b->drv, serial == 1);
  const size_t m = (size_t)spans * n;
  for (int r = 0; r <= REPS + 1 && !rc; r++) {
    const uint8_t *in = (const uint8_t *)rows + (size_t)(r % (4 / spans)) * m * sz;
    prx_qpsk_bank_gpu_timing t0t, t1t;
    prx_qpsk_bank_gpu_get_timing(b->drv, &t0t);
    double t0 = bench_now();
    prx_status st = kept  ? prx_qpsk_bank_execute_device_kept(b, in, pitch, m, hist, 0, &out, NULL)
                    : dev ? prx_qpsk_bank_execute_device(b, in, pitch, m, &out, NULL)
                          : prx_qpsk_bank_execute(b, in, pitch, m, &out);
    if (dev) cudaDeviceSynchronize();
    double t = bench_now() - t0;
    /* the bits of every call, after its timing: unpacked, two bytes a symbol */
    if (hashed) {
      if (hbits && !st && !cudaMemcpy(hbits, bits, C * bs, cudaMemcpyDeviceToHost))
        for (unsigned c = 0; c < C; c++)
          res->hash = test_fnv1a(res->hash, hbits + c * bs, 2 * ns[c]);
      else
        res->ok_hash = -1;
    }
    prx_qpsk_bank_gpu_get_timing(b->drv, &t1t);
    if (st) {
      fprintf(stderr, "bank call: %s\n", prx_last_error());
      rc = -1;
    }
    if (r > 1 && t < res->best_s) {
      res->best_s = t;
      res->wait_s = t1t.wait_s - t0t.wait_s;
      res->serial_s = t1t.serial_s - t0t.serial_s;
      res->issue_s = t1t.issue_s - t0t.issue_s;
      res->ahead = t1t.ahead - t0t.ahead;
      res->phase = t1t.gpu_phase;
    }
  }
  /* the stream: the same calls back to back, as a receiver makes them (the next call issued
   * while the device still runs the one before: each call's host wait is for its counts only) */
  res->stream_s = 0;
  for (int k = 0, r = REPS + 2; dev && k < SREPS && !rc; k++) {
    double t0 = bench_now();
    for (int i = 0; i < SCALLS && !rc; i++, r++) {
      const uint8_t *in = (const uint8_t *)rows + (size_t)(r % (4 / spans)) * m * sz;
      prx_status st = kept ? prx_qpsk_bank_execute_device_kept(b, in, pitch, m, hist, 0, &out, NULL)
                           : prx_qpsk_bank_execute_device(b, in, pitch, m, &out, NULL);
      if (st) {
        fprintf(stderr, "bank call: %s\n", prx_last_error());
        rc = -1;
      }
    }
    cudaDeviceSynchronize();
    const double t = (bench_now() - t0) / SCALLS;
    if (!rc && (res->stream_s == 0 || t < res->stream_s)) res->stream_s = t;
  }
  res->gsym = (double)C * ((double)m / sps) / res->best_s * 1e-9;
  res->ok_hash = hashed && res->ok_hash == 0;
  free(ns);
  free(hbits);
  cudaFree(krows);
  if (dev)
    cudaFree(bits);
  else
    free(bits);
  prx_qpsk_bank_destroy(b);
  return rc;
}

/* The default device bank's calls (plain, or kept: the receiver's) with the driver's marks: per
 * mark, the device time from the mark before (ms, mean of MREPS calls after two warm-up calls) and
 * the host's time at it from the call's start; printed as one JSON line and a table. */
static int run_marks(unsigned C, double sps, prx_format fmt, const void *rows, size_t pitch,
                     size_t n, int kept) {
  size_t bs;
  prx_qpsk_bank *b = bank_open(PRX_BACKEND_CUDA, 0, C, sps, fmt, n, &bs);
  if (!b) return -1;
  /* kept: the receiver's call on rows holding the history (kept_rows), as run_bank's CALL_KEPT */
  size_t hist = 0, pad = 0;
  void *krows = NULL;
  if (kept) {
    hist = prx_qpsk_bank_history(b);
    if (!(krows = kept_rows(C, fmt, rows, pitch, n, hist, &pad, &pitch))) {
      fprintf(stderr, "bank: no rows for the kept calls (history %zu samples)\n", hist);
      prx_qpsk_bank_destroy(b);
      return -1;
    }
    rows = (const uint8_t *)krows + pad * prx_format_size(fmt);
  }
  uint8_t *bits = NULL;
  size_t *ns = calloc(C, sizeof *ns);
  mark_rec mr;
  memset(&mr, 0, sizeof mr);
  for (int i = 0; i < QPSK_MARK_N; i++) cudaEventCreate(&mr.ev[i]);
  if (!ns || cudaMalloc((void **)&bits, C * bs) != cudaSuccess || !b->drv) {
    free(ns);
    cudaFree(krows);
    prx_qpsk_bank_destroy(b);
    return -1;
  }
  prx_qpsk_bank_out out = {bits, bs, NULL, 0, ns, NULL};
  prx_qpsk_bank_gpu_set_mark(b->drv, on_mark, &mr);
  const size_t sz = prx_format_size(fmt);
  double dev_ms[QPSK_MARK_N] = {0}, host_ms[QPSK_MARK_N] = {0}, wall = 0;
  int cnt[QPSK_MARK_N] = {0}, rc = 0;
  for (int r = 0; r < MREPS + 2 && !rc; r++) {
    memset(mr.seen, 0, sizeof mr.seen);
    const uint8_t *in = (const uint8_t *)rows + (size_t)(r % 4) * n * sz;
    double t0 = bench_now();
    if (kept ? prx_qpsk_bank_execute_device_kept(b, in, pitch, n, hist, 0, &out, NULL)
             : prx_qpsk_bank_execute_device(b, in, pitch, n, &out, NULL)) {
      fprintf(stderr, "bank call: %s\n", prx_last_error());
      rc = -1;
    }
    cudaDeviceSynchronize();
    double t = bench_now() - t0;
    if (r < 2 || !mr.seen[QPSK_MARK_START]) continue;
    wall += t;
    int prev = QPSK_MARK_START;
    for (int m = QPSK_MARK_START + 1; m < QPSK_MARK_N; m++) {
      if (!mr.seen[m]) continue;
      float ms = 0;
      cudaEventElapsedTime(&ms, mr.ev[prev], mr.ev[m]);
      dev_ms[m] += ms;
      host_ms[m] += (mr.host[m] - t0) * 1e3;
      cnt[m]++;
      prev = m;
    }
  }
  printf("{\"bench\":\"qpsk_bank_marks\",\"sps\":%.4f,\"channels\":%u,\"format\":\"%s\","
         "\"call\":\"%s\",\"call_ms\":%.4f",
         sps, C, fmt == PRX_CF16 ? "cf16" : "cf32", kept ? "kept" : "plain", wall / MREPS * 1e3);
  for (int m = 1; m < QPSK_MARK_N; m++)
    if (cnt[m])
      printf(",\"%s_dev_ms\":%.4f,\"%s_host_ms\":%.4f", mark_names[m], dev_ms[m] / cnt[m],
             mark_names[m], host_ms[m] / cnt[m]);
  printf("}\n== marks, sps %.3f C %u %s, %s call: %.3f ms (wall, mean of %d)\n", sps, C,
         fmt == PRX_CF16 ? "cf16" : "cf32", kept ? "kept" : "plain", wall / MREPS * 1e3, MREPS);
  double cum = 0;
  for (int m = 1; m < QPSK_MARK_N; m++)
    if (cnt[m]) {
      cum += dev_ms[m] / cnt[m];
      printf("mark %-7s device +%7.1f us (from the start %7.1f us)  host at %7.1f us\n",
             mark_names[m], 1e3 * dev_ms[m] / cnt[m], 1e3 * cum, 1e3 * host_ms[m] / cnt[m]);
    }
  fflush(stdout);
  for (int i = 0; i < QPSK_MARK_N; i++) cudaEventDestroy(mr.ev[i]);
  free(ns);
  cudaFree(bits);
  cudaFree(krows);
  prx_qpsk_bank_destroy(b);
  return rc;
}

int main(int argc, char **argv) {
  int quick = 0, cases = 0; /* --quick: 64 and 1024 channels, unless --case names others */
  int only = 0, marks = 0;
  for (int i = 1; i < argc; i++) {
    quick |= !strcmp(argv[i], "--quick");
    cases |= !strcmp(argv[i], "--case");
    only |= !strcmp(argv[i], "--default-only");
    marks |= !strcmp(argv[i], "--marks");
    pi4_mode |= !strcmp(argv[i], "--pi4");
  }
  const double spss[2] = {4, 16.0 / 3};
  const unsigned Cs[3] = {64, 1024, 4096};
  if (!bench_cases_valid(argc, argv, spss, 2, Cs, 3)) return 2;
  if (!prx_cuda_available()) {
    printf("bench_qpsk_bank: skipped (no usable CUDA device)\n");
    return TEST_SKIP;
  }
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  double bw = bench_d2d_bandwidth();
  printf("{\"bench\":\"qpsk_bank\",\"gpu\":\"%s\",\"d2d_bytes_per_s\":%.4g,\"cpu_threads\":%d}\n",
         prop.name, bw, prx_cpu_count());
  char table[64][200];
  int nt = 0;
  for (int si = 0; si < 2; si++)
    for (int ci = 0; ci < (quick && !cases ? 2 : 3); ci++) {
      double sps = spss[si];
      unsigned C = Cs[ci];
      if (!bench_case_wanted(argc, argv, sps, C, "cf32") &&
          !bench_case_wanted(argc, argv, sps, C, "cf16"))
        continue;
      size_t n = (size_t)(8192 * sps), n4 = 4 * n;
      size_t pitch = (n4 + 15) / 16 * 16; /* 64-byte rows in cf16 and cf32 */
      prx_cf32 *h32 = malloc((size_t)C * pitch * sizeof *h32);
      uint16_t *h16 = malloc((size_t)C * pitch * 4);
      if (!h32 || !h16) return 1;
      make_rows(C, sps, n4, pitch, h32);
      prx_pack_cf16(h32, (size_t)C * pitch, h16);
      for (int f = 0; f < 2; f++) {
        if (!bench_case_wanted(argc, argv, sps, C, f ? "cf16" : "cf32")) continue;
        prx_format fmt = f ? PRX_CF16 : PRX_CF32;
        size_t sz = prx_format_size(fmt);
        const void *h = f ? (const void *)h16 : (const void *)h32;
        void *d = NULL;
        if (cudaMalloc(&d, (size_t)C * pitch * sz)) return 1;
        cudaMemcpy(d, h, (size_t)C * pitch * sz, cudaMemcpyHostToDevice);
        result g = {0}, gk = {0}, gc = {0}, g2 = {0}, gf = {0}, c = {0}, c1 = {0}, gp = {0};
        /* the library's default path, the plain device call (om folded into pre where the
         * kernels allow it: sps 4), the receiver's call (rows holding the history: kept) on the
         * same stream of chunks, and beside them the same bank with om apart (gf) */
        int okg =
            run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 1, 1, 1, CALL_PLAIN_HASHED, &g);
        int okk = run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 1, 1, 1, CALL_KEPT, &gk);
        /* kept_same_bits: 1 the same, 0 different, -1 not compared (a hash not taken) */
        const int same = !(g.ok_hash && gk.ok_hash) ? -1 : g.hash == gk.hash;
        const char *bits_word = same < 0 ? "not compared (no hash)" : same ? "identical" : "DIFFER";
        if (only) {
          printf("{\"bench\":\"qpsk_bank\",\"sps\":%.4f,\"channels\":%u,\"format\":\"%s\","
                 "\"pi4\":%d,\"device_gsym_s\":%.4g,\"call_s\":%.4g,\"device_kept_gsym_s\":%.4g,"
                 "\"call_kept_s\":%.4g,\"wait_kept_s\":%.4g,\"call_stream_s\":%.4g,"
                 "\"call_kept_stream_s\":%.4g,\"kept_same_bits\":%d,"
                 "\"bits_hash\":\"%016llx\",\"ok\":%d}\n",
                 sps, C, f ? "cf16" : "cf32", pi4_mode, g.gsym, g.best_s, gk.gsym, gk.best_s,
                 gk.wait_s, g.stream_s, gk.stream_s, same, (unsigned long long)g.hash,
                 okg == 0 && okk == 0);
          if (nt < 64)
            snprintf(table[nt++], sizeof table[0],
                     "sps %6.3f C %5u %s  plain call %.3f ms, kept (the receiver's) %.3f ms "
                     "(%.3f Gsym/s); back to back %.3f / %.3f ms  bits %s",
                     sps, C, f ? "cf16" : "cf32", g.best_s * 1e3, gk.best_s * 1e3, gk.gsym,
                     g.stream_s * 1e3, gk.stream_s * 1e3, bits_word);
          for (int k = 0; k < 2 && marks; k++)
            run_marks(C, sps, fmt, d, pitch, n, k); /* (errors printed) */
          cudaFree(d);
          continue;
        }
        if (marks) okg |= run_marks(C, sps, fmt, d, pitch, n, 0);
        okg |= run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 1, 1, 2, CALL_PLAIN, &gp);
        okg |= run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 1, 1, 0, CALL_PLAIN, &gc);
        okg |= run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 2, 1, 1, CALL_PLAIN, &g2);
        okg |= run_bank(PRX_BACKEND_CUDA, 0, C, sps, fmt, d, pitch, n, 1, 0, 1, CALL_PLAIN, &gf);
        int okc = run_bank(PRX_BACKEND_CPU, 0, C, sps, fmt, h, pitch, n, 1, 1, 1, CALL_PLAIN, &c);
        if (C == 64)
          okc |= run_bank(PRX_BACKEND_CPU, 1, C, sps, fmt, h, pitch, n, 1, 1, 1, CALL_PLAIN, &c1);
        double floor_gsym = bw / (sps * sz + 2) * 1e-9; /* bytes moved per symbol */
        printf("{\"bench\":\"qpsk_bank\",\"sps\":%.4f,\"channels\":%u,\"format\":\"%s\","
               "\"device_gsym_s\":%.4g,\"cpu_bank_gsym_s\":%.4g,\"floor_gsym_s\":%.4g,"
               "\"fraction_of_floor\":%.4g,\"call_s\":%.4g,\"wait_s\":%.4g,\"serial_s\":%.4g,"
               "\"driver_s\":%.4g,\"staged\":%d,\"gpu_serial\":%d,\"cpu_call_s\":%.4g,"
               "\"cpu_bank_1thread_gsym_s\":%.4g,\"device_cpu_serial_gsym_s\":%.4g,"
               "\"call_cpu_serial_s\":%.4g,\"wait_cpu_serial_s\":%.4g,\"serial_cpu_serial_s\":%.4g,"
               "\"device_apart_gsym_s\":%.4g,\"fold\":%d,"
               "\"device_2span_gsym_s\":%.4g,\"call_2span_s\":%.4g,\"wait_2span_s\":%.4g,"
               "\"serial_2span_s\":%.4g,\"issue_s\":%.4g,\"gpu_phase\":%d,"
               "\"device_cpu_phase_gsym_s\":%.4g,\"call_cpu_phase_s\":%.4g,"
               "\"wait_cpu_phase_s\":%.4g,\"serial_cpu_phase_s\":%.4g,"
               "\"device_kept_gsym_s\":%.4g,\"call_kept_s\":%.4g,\"wait_kept_s\":%.4g,"
               "\"serial_kept_s\":%.4g,\"kept_same_bits\":%d,\"ok\":%d}\n",
               sps, C, f ? "cf16" : "cf32", g.gsym, c.gsym, floor_gsym, g.gsym / floor_gsym,
               g.best_s, g.wait_s, g.serial_s, g.best_s - g.wait_s - g.serial_s, g.staged, g.serial,
               c.best_s, c1.gsym, gc.gsym, gc.best_s, gc.wait_s, gc.serial_s, gf.gsym, g.fold,
               g2.gsym, g2.best_s, g2.wait_s, g2.serial_s, g.issue_s, g.phase, gp.gsym, gp.best_s,
               gp.wait_s, gp.serial_s, gk.gsym, gk.best_s, gk.wait_s, gk.serial_s, same,
               okg == 0 && okk == 0 && okc == 0);
        fflush(stdout);
        if (nt < 64)
          snprintf(table[nt++], sizeof table[0],
                   "sps %6.3f C %5u %s  device %7.3f Gsym/s (%.2f%% of floor %.1f)  cpu bank "
                   "%7.3f  call %.2f ms: gpu wait %.2f, serial %.2f, driver %.2f (issue %.2f)",
                   sps, C, f ? "cf16" : "cf32", g.gsym, 100 * g.gsym / floor_gsym, floor_gsym,
                   c.gsym, g.best_s * 1e3, g.wait_s * 1e3, g.serial_s * 1e3,
                   (g.best_s - g.wait_s - g.serial_s) * 1e3, g.issue_s * 1e3);
        if (nt < 64)
          snprintf(table[nt++], sizeof table[0],
                   "                        kept (the receiver's call, history in the rows) "
                   "%7.3f Gsym/s (call %.2f ms: wait %.2f)  bits %s",
                   gk.gsym, gk.best_s * 1e3, gk.wait_s * 1e3, bits_word);
        if (nt < 64)
          snprintf(table[nt++], sizeof table[0],
                   "                        serial passes on the CPU %7.3f Gsym/s (call %.2f ms: "
                   "wait %.2f, serial %.2f)  -> %.2fx",
                   gc.gsym, gc.best_s * 1e3, gc.wait_s * 1e3, gc.serial_s * 1e3,
                   gc.gsym > 0 ? g.gsym / gc.gsym : 0);
        if (nt < 64)
          snprintf(table[nt++], sizeof table[0],
                   "                        phase pass on the CPU %7.3f Gsym/s (call %.2f ms: "
                   "wait %.2f, serial %.2f)  -> %.2fx (phase on the GPU: %s)",
                   gp.gsym, gp.best_s * 1e3, gp.wait_s * 1e3, gp.serial_s * 1e3,
                   gp.gsym > 0 ? g.gsym / gp.gsym : 0, g.phase ? "yes" : "no");
        if (nt < 64)
          snprintf(table[nt++], sizeof table[0],
                   "                        two-span calls %7.3f Gsym/s (wait %.2f, serial %.2f of "
                   "%.2f ms)  om folded: %s; apart %.3f",
                   g2.gsym, g2.wait_s * 1e3, g2.serial_s * 1e3, g2.best_s * 1e3,
                   g.fold ? "yes" : "no", gf.gsym);
        cudaFree(d);
      }
      free(h32);
      free(h16);
    }
  printf("== GPU demodulator bank (%s, D2D copy %.0f GB/s, %d CPU threads)\n", prop.name, bw * 1e-9,
         prx_cpu_count());
  for (int i = 0; i < nt; i++) printf("%s\n", table[i]);
  return 0;
}
#else
int main(void) {
  printf("bench_qpsk_bank: skipped (this build has no CUDA)\n");
  return TEST_SKIP;
}
#endif
