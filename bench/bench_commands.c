/* The floors and library rates that bench_commands.sh sets the commands against, measured on
 * the same files in the same run (one JSON line each):
 *
 *   bench_commands read FILE                     read(2) of FILE in 4 MiB blocks, GB/s
 *   bench_commands write DIR FILES MIB [CHUNK]   MIB MiB in total written round robin to FILES
 *                                                files in CHUNK-byte writes (default 1 MiB), as
 *                                                channel recordings are; FILES = 1 is one
 *                                                interleaved file; fsync'd and timed to the end;
 *                                                BENCH_WRITE_RESERVE=1: each file's bytes
 *                                                reserved first (fallocate), timed apart
 *   bench_commands chan FILE FMT K THREADS REPS [N [BLOCK]]  prx_chan on FILE's samples
 *                                                held in memory, fed in blocks of BLOCK samples
 *                                                (default or 0 the command's on the CPU:
 *                                                command_block below),
 *                                                channels 0..N-1 (default or 0: all K), D = K/2,
 *                                                16 taps: input Msample/s, best of REPS;
 *                                                BENCH_CHAN_SLOTS=N: the outputs go to N
 *                                                buffers in turn (the command's slots);
 *                                                BENCH_CHAN_READER=1: a thread reads each
 *                                                block's outputs after it, as the command's
 *                                                writers do (at most N blocks behind;
 *                                                with N > 1 only; 2: then flushes
 *                                                the lines it read (CLFLUSHOPT), 3:
 *                                                demotes them (CLDEMOTE): release_lines);
 *                                                BENCH_CHAN_BUSY=N: N threads spin beside it
 *                                                (the command's other busy threads);
 *                                                BENCH_CHAN_ROWS=mem|DIR: each block's rows go
 *                                                straight into every channel's whole output,
 *                                                one row per channel at a stride of whole
 *                                                pages in one address range, populated before
 *                                                the timing: anonymous memory (mem), or one
 *                                                file per channel in DIR made at its final
 *                                                size and mapped shared (the mapped outputs);
 *                                                with the making and unmapping times;
 *                                                BENCH_CHAN_STREAM=1: the channelizer's
 *                                                streaming stores (stream_out);
 *                                                BENCH_CHAN_LAYOUT=frames: the frames layout
 *                                                (prx_chan_config.layout: output j of every
 *                                                channel together), in the same buffers (a
 *                                                slot holds the block's frames), or with
 *                                                BENCH_CHAN_ROWS=mem the whole output's frames
 *                                                one after another in anonymous memory
 *   bench_commands demod FILE RATE RS THREADS REPS  prx_qpsk on FILE's cf32 samples in memory in
 *                                                the command's blocks (2^18; BENCH_DEMOD_BLOCK=
 *                                                log2 another): Msymbol/s
 *   bench_commands startup                       prx_qpsk_create + destroy at the command's
 *                                                defaults (fs 9600, Rs 2400): ms, wisdom as found
 *   bench_commands cudastart                     the CUDA backend's start-up in the order a
 *                                                command meets it, ms each: the module's load
 *                                                (dlopen, driver init), the context (the first
 *                                                page-locked allocation), a 32 MiB page-locked
 *                                                block made and freed, `channelize`'s object
 *                                                (K = 1024, ci16, 64 channels) made, its first
 *                                                and second 2^20-sample calls, its destroy
 */

#include "bench_clock.h"
#include "pipeline/pipeline.h"
#include "polyrx.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void *slurp(const char *path, size_t *bytes) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return NULL;
  unsigned char *b = malloc((size_t)st.st_size + 1);
  size_t n = 0;
  while (b && n < (size_t)st.st_size) {
    ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  *bytes = n;
  return b;
}

static int bench_read(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return perror(path), 1;
  size_t cap = (size_t)4 << 20, total = 0;
  char *buf = malloc(cap);
  double t0 = bench_now();
  for (;;) {
    ssize_t r = read(fd, buf, cap);
    if (r <= 0) break;
    total += (size_t)r;
  }
  double t = bench_now() - t0;
  close(fd);
  free(buf);
  printf("{\"bench\":\"commands_read\",\"file\":\"%s\",\"bytes\":%zu,\"seconds\":%.4f,"
         "\"gb_per_s\":%.3f}\n",
         path, total, t, total / t / 1e9);
  return 0;
}

static int bench_write(const char *dir, int files, size_t mib, size_t chunk) {
  int *fd = calloc((size_t)files, sizeof *fd);
  char path[4096];
  char *buf = malloc(chunk);
  memset(buf, 0x5a, chunk);
  size_t total = mib << 20, per = total / (size_t)files;
  for (int i = 0; i < files; i++) {
    snprintf(path, sizeof path, "%s/w%04d.bin", dir, i);
    fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd[i] < 0) return perror(path), 1;
  }
  /* BENCH_WRITE_RESERVE=1: each file's bytes reserved first (fallocate, the size kept), timed
   * apart: the writes then fill pages the file already holds (what a command could do while
   * the CUDA context is made) */
  const char *rv = getenv("BENCH_WRITE_RESERVE");
  const int reserve = rv && rv[0] == '1';
  double r0 = bench_now();
  for (int i = 0; reserve && i < files; i++)
    if (fallocate(fd[i], FALLOC_FL_KEEP_SIZE, 0, (off_t)per) != 0) return perror("fallocate"), 1;
  const double reserve_s = bench_now() - r0;
  double t0 = bench_now();
  size_t done = 0;
  int err = 0;
  for (size_t off = 0; off < per && !err; off += chunk) {
    size_t m = per - off < chunk ? per - off : chunk;
    for (int i = 0; i < files; i++) {
      if (write(fd[i], buf, m) != (ssize_t)m) err = errno ? errno : EIO;
      done += m;
    }
  }
  for (int i = 0; i < files; i++) {
    fsync(fd[i]);
    close(fd[i]);
  }
  double t = bench_now() - t0;
  for (int i = 0; i < files; i++) {
    snprintf(path, sizeof path, "%s/w%04d.bin", dir, i);
    unlink(path);
  }
  printf("{\"bench\":\"commands_write\",\"dir\":\"%s\",\"files\":%d,\"bytes\":%zu,\"chunk\":%zu,"
         "\"seconds\":%.4f,\"gb_per_s\":%.3f,\"reserved\":%d,\"reserve_seconds\":%.4f,"
         "\"error\":%d}\n",
         dir, files, done, chunk, t, done / t / 1e9, reserve, reserve_s, err);
  free(fd);
  free(buf);
  return err != 0;
}

/* `polyrx channelize`'s CPU block (cli/chan_setup.c, choose_block): 2^18 under 8 cores
 * (fewer than 4 writers), else the largest of 2^16 down to a whole FFT batch whose 3 output
 * slots fit its compute workers' caches (prx_pipe_chan_cpu_block, the command's rule); with all
 * cores (threads 0) the command's workers are the cores its reader and 4 or 8 writers leave. */
static size_t command_block(unsigned K, unsigned D, unsigned n_sel, int threads) {
  int cores = prx_cpu_count();
  if (cores < 8) return (size_t)1 << 18;
  int writers = cores >= 16 ? 8 : 4;
  if ((unsigned)writers > n_sel) writers = (int)n_sel;
  int workers = threads ? threads : cores - 1 - writers > 1 ? cores - 1 - writers : 1;
  return prx_pipe_chan_cpu_block((size_t)1 << 16, K, D, n_sel, 3, workers);
}

/* BENCH_CHAN_READER and BENCH_CHAN_BUSY: a thread that reads each block's outputs once compute
 * has made them (compute waits while it is n_slots blocks behind, as the pipeline's compute
 * waits for its slowest writer), and threads that spin until the run ends. */
/* What the sidecar reader does with the output lines it has read, so that compute's next write
 * of them need not take them back from its core: how 2 writes them back and drops them from
 * every cache (CLFLUSHOPT, where the processor has it), 3 pushes them to the shared cache
 * (CLDEMOTE: a hint in the reserved-NOP opcode space, a NOP where the processor lacks it); else
 * nothing. x86 only. */
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("cldemote"))) static void demote_lines(const unsigned char *p,
                                                             const unsigned char *end) {
  for (; p < end; p += 64) _cldemote((void *)p);
}

__attribute__((target("clflushopt"))) static void flush_lines(const unsigned char *p,
                                                              const unsigned char *end) {
  for (; p < end; p += 64) _mm_clflushopt((void *)p);
}

static void release_lines(const void *p, size_t bytes, int how) {
  unsigned a, b, c, d;
  const unsigned char *at = (const unsigned char *)((uintptr_t)p & ~(uintptr_t)63);
  const unsigned char *end = (const unsigned char *)p + bytes;
  if (how == 3) demote_lines(at, end);
  if (how == 2 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1)) flush_lines(at, end);
}
#else
static void release_lines(const void *p, size_t bytes, int how) {
  (void)p;
  (void)bytes;
  (void)how;
}
#endif

typedef struct {
  const prx_cf32 *y;
  size_t slot_len; /* outputs per buffer */
  int n_slots;
  int release; /* BENCH_CHAN_READER=2: the lines read flushed, 3: demoted (release_lines) */
  _Atomic size_t made, read; /* blocks made by compute, read by the reader */
  atomic_int done;
  double sink;
} chan_sidecar;

static void *sidecar_reader(void *arg) {
  chan_sidecar *c = arg;
  for (size_t b = 0;; b++) {
    while (atomic_load(&c->made) <= b)
      if (atomic_load(&c->done))
        return NULL;
      else
        sched_yield();
    const float *v = (const float *)(c->y + b % (size_t)c->n_slots * c->slot_len);
    float acc = 0;
    for (size_t i = 0; i < 2 * c->slot_len; i += 16) acc += v[i]; /* one load per line */
    c->sink += acc;
    release_lines(v, c->slot_len * sizeof *c->y, c->release);
    atomic_store(&c->read, b + 1);
  }
}

static void *sidecar_spin(void *arg) {
  chan_sidecar *c = arg;
  volatile unsigned long n = 0;
  while (!atomic_load_explicit(&c->done, memory_order_relaxed)) n++;
  return NULL;
}

/* BENCH_CHAN_ROWS: every channel's whole output in one address range, channel s's row at
 * s * stride samples (stride a whole number of pages): anonymous memory (dir NULL) or a file per
 * channel in dir, made at its final size (fallocate: the pages real, ENOSPC up front) and mapped
 * shared over its part of the range; populated (MAP_POPULATE) before the timing, as the
 * command's openers would. *ms_make gets the making's time. Non-zero on failure. */
typedef struct {
  prx_cf32 *base;
  size_t stride, range_bytes, file_bytes;
  unsigned K;
  int *fd;
  char dir[3072];
} chan_rows;

static int rows_make(chan_rows *r, const char *dir, unsigned K, size_t per_channel,
                     double *ms_make) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  r->K = K;
  r->file_bytes = per_channel * sizeof(prx_cf32);
  size_t sb = (r->file_bytes + page - 1) / page * page;
  r->stride = sb / sizeof(prx_cf32);
  r->range_bytes = sb * K;
  r->fd = NULL;
  double t0 = bench_now();
  const char *pad = getenv("BENCH_CHAN_ROWS_PAD");
  if (!dir && pad && atoi(pad) > 0) { /* a stride of a page and a few samples more */
    r->stride = sb / sizeof(prx_cf32) + (size_t)atoi(pad);
    r->range_bytes = r->stride * sizeof(prx_cf32) * K;
  }
  if (!dir) {
    void *p = mmap(NULL, r->range_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return perror("rows mmap"), 1;
    r->base = p;
    *ms_make = (bench_now() - t0) * 1e3;
    return 0;
  }
  snprintf(r->dir, sizeof r->dir, "%s", dir);
  void *p = mmap(NULL, r->range_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return perror("rows reserve"), 1;
  r->base = p;
  r->fd = malloc(K * sizeof *r->fd);
  for (unsigned s = 0; s < K; s++) {
    char path[3200];
    snprintf(path, sizeof path, "%s/row%04u.cf32", dir, s);
    r->fd[s] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (r->fd[s] < 0) return perror(path), 1;
    int e = posix_fallocate(r->fd[s], 0, (off_t)r->file_bytes);
    if (e) return fprintf(stderr, "%s: fallocate: %s\n", path, strerror(e)), 1;
    void *q = mmap((char *)p + (size_t)s * sb, r->file_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED | MAP_POPULATE, r->fd[s], 0);
    if (q == MAP_FAILED) return perror("rows map"), 1;
  }
  *ms_make = (bench_now() - t0) * 1e3;
  return 0;
}

/* Unmaps, closes and removes the files; *ms gets the time. */
static void rows_free(chan_rows *r, double *ms) {
  double t0 = bench_now();
  munmap(r->base, r->range_bytes);
  if (r->fd) {
    for (unsigned s = 0; s < r->K; s++) close(r->fd[s]);
    *ms = (bench_now() - t0) * 1e3;
    for (unsigned s = 0; s < r->K; s++) {
      char path[3200];
      snprintf(path, sizeof path, "%s/row%04u.cf32", r->dir, s);
      unlink(path);
    }
    free(r->fd);
    return;
  }
  *ms = (bench_now() - t0) * 1e3;
}

static int bench_chan(const char *path, const char *fmt_name, unsigned K, int threads, int reps,
                      unsigned n_sel, size_t block) {
  prx_format fmt;
  if (prx_format_parse(fmt_name, &fmt)) return fprintf(stderr, "%s\n", prx_last_error()), 1;
  if (!block) block = command_block(K, K / 2, n_sel ? n_sel : K, threads);
  size_t bytes = 0;
  unsigned char *x = slurp(path, &bytes);
  size_t ss = prx_format_size(fmt), n = bytes / ss;
  prx_chan_config c = prx_chan_config_default();
  c.channels = K;
  c.decimation = K / 2;
  c.taps_per_channel = 16;
  c.in_format = fmt;
  c.threads = threads;
  c.backend = PRX_BACKEND_CPU;
  /* BENCH_CHAN_STREAM=1: the channelizer writes its outputs with streaming stores */
  const char *est = getenv("BENCH_CHAN_STREAM");
  c.stream_out = est && atoi(est) > 0;
  const char *el = getenv("BENCH_CHAN_LAYOUT");
  c.layout = el && !strcmp(el, "frames") ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
  unsigned *sel = malloc((n_sel ? n_sel : 1) * sizeof *sel);
  for (unsigned i = 0; i < n_sel; i++) sel[i] = i;
  c.select = n_sel ? sel : NULL;
  c.n_select = n_sel;
  prx_chan *ch;
  if (!x || prx_chan_create(&c, &ch)) return fprintf(stderr, "%s\n", prx_last_error()), 1;
  size_t stride = (block > 16 * (size_t)K ? block : 16 * (size_t)K) / (K / 2) + 2;
  /* streaming: rows on whole 64-byte lines (the stride a multiple of 8 outputs, the buffer
   * aligned), as the command lays out its slots when it streams */
  if (c.stream_out) stride = (stride + 7) & ~(size_t)7;
  /* BENCH_CHAN_SLOTS=N: the output goes to N buffers in turn, as the command's pipeline slots
   * (default 1: one buffer, which stays in the core's cache) */
  const char *ev = getenv("BENCH_CHAN_SLOTS");
  int n_slots = ev && atoi(ev) > 1 && atoi(ev) <= 16 ? atoi(ev) : 1;
  prx_cf32 *y = aligned_alloc(64, ((size_t)n_slots * K * stride * sizeof *y + 63) & ~(size_t)63);
  const char *er = getenv("BENCH_CHAN_READER"), *eb = getenv("BENCH_CHAN_BUSY");
  int reader = er && atoi(er) > 0 && n_slots > 1 ? atoi(er) : 0,
      busy = eb && atoi(eb) > 0 ? atoi(eb) : 0;
  if (busy > 64) busy = 64;
  const char *ew = getenv("BENCH_CHAN_ROWS");
  chan_rows rows = {0};
  double ms_make = 0, ms_free = 0;
  unsigned n_rows = n_sel ? n_sel : K;
  int frames = c.layout == PRX_CHAN_FRAMES;
  if (frames && ew && *ew && strcmp(ew, "mem"))
    return fprintf(stderr, "BENCH_CHAN_LAYOUT=frames takes BENCH_CHAN_ROWS=mem only\n"), 1;
  /* frames in memory: the whole output as one row of n_rows times the outputs (rows_make's
   * anonymous memory, one "channel") */
  if (ew && *ew &&
      rows_make(&rows, strcmp(ew, "mem") ? ew : NULL, frames ? 1 : n_rows,
                (n / (K / 2) + 64) * (frames ? n_rows : 1), &ms_make))
    return 1;
  /* where output j goes: rows of `stride` outputs, or frames of n_rows samples */
  size_t out_stride = frames ? n_rows : stride, mem_stride = frames ? n_rows : rows.stride;
  size_t per_out = frames ? n_rows : 1; /* samples of the output buffer per output index */
  double best = 1e30, best_cpu = 0;
  for (int r = 0; r < reps; r++) {
    prx_chan_reset(ch);
    chan_sidecar side = {
        .y = y, .slot_len = (size_t)K * stride, .n_slots = n_slots, .release = reader};
    pthread_t th[65];
    int n_th = 0;
    if (reader && !pthread_create(&th[n_th], NULL, sidecar_reader, &side)) n_th++;
    for (int b = 0; b < busy; b++)
      if (!pthread_create(&th[n_th], NULL, sidecar_spin, &side)) n_th++;
    struct timespec c0, c1; /* the calling thread's CPU time: compute's with one worker */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double t0 = bench_now();
    size_t got, written = 0;
    for (size_t i = 0; i < n; i += block) {
      size_t m = n - i < block ? n - i : block, blk = i / block;
      while (reader && blk - atomic_load(&side.read) >= (size_t)n_slots) sched_yield();
      prx_cf32 *yb = y + (blk % (size_t)n_slots) * K * stride;
      if (rows.base
              ? prx_chan_execute(ch, x + i * ss, m, rows.base + written * per_out, mem_stride, &got)
              : prx_chan_execute(ch, x + i * ss, m, yb, out_stride, &got))
        return fprintf(stderr, "chan: %s\n", prx_last_error()), 1;
      written += got;
      atomic_store(&side.made, blk + 1);
    }
    while (reader && atomic_load(&side.read) < atomic_load(&side.made)) sched_yield();
    if (rows.base)
      prx_chan_flush(ch, rows.base + written * per_out, mem_stride, &got);
    else
      prx_chan_flush(ch, y, out_stride, &got);
    double t = bench_now() - t0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    atomic_store(&side.done, 1);
    for (int k = 0; k < n_th; k++) pthread_join(th[k], NULL);
    if (t < best) {
      best = t;
      best_cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    }
  }
  const char *rows_kind = rows.base ? (rows.fd ? "mapped" : "mem") : "slot";
  if (rows.base) rows_free(&rows, &ms_free);
  printf("{\"bench\":\"commands_lib_chan\",\"K\":%u,\"channels\":%u,\"format\":\"%s\","
         "\"threads\":%d,\"block\":%zu,\"stream\":%d,\"layout\":\"%s\",\"slots\":%d,"
         "\"reader\":%d,\"busy\":%d,"
         "\"samples\":%zu,"
         "\"rows\":\"%s\",\"rows_make_ms\":%.1f,\"rows_free_ms\":%.1f,"
         "\"seconds\":%.4f,\"cpu_seconds\":%.4f,\"msps\":%.2f}\n",
         K, n_sel ? n_sel : K, fmt_name, threads, block, c.stream_out, frames ? "frames" : "rows",
         n_slots, reader, busy, n, rows_kind, ms_make, ms_free, best, best_cpu, n / best / 1e6);
  free(sel);
  prx_chan_destroy(ch);
  free(x);
  free(y);
  return 0;
}

static int bench_demod(const char *path, double fs, double rs, int threads, int reps) {
  size_t bytes = 0;
  prx_cf32 *x = slurp(path, &bytes);
  /* the command's read block (cmd_demod.c's READ_BLOCK, 2^18); BENCH_DEMOD_BLOCK=log2 another */
  const char *lb = getenv("BENCH_DEMOD_BLOCK");
  size_t n = bytes / sizeof *x, block = (size_t)1 << (lb ? atoi(lb) : 18);
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = fs;
  c.symbol_rate = rs;
  c.threads = threads;
  prx_qpsk *q;
  if (!x || prx_qpsk_create(&c, &q)) return fprintf(stderr, "%s\n", prx_last_error()), 1;
  /* room for a whole call's symbols whatever the demodulator holds back (each call overwrites) */
  size_t cap = (size_t)((double)n / (fs / rs) * 1.01) + 4 * 1024 + 16;
  uint8_t *bits = malloc(2 * cap);
  double best = 1e30;
  size_t symbols = 0;
  for (int r = 0; r < reps; r++) {
    prx_qpsk_reset(q);
    size_t tot = 0, got;
    double t0 = bench_now();
    for (size_t i = 0; i < n; i += block) {
      size_t m = n - i < block ? n - i : block;
      if (prx_qpsk_execute(q, x + i, m, bits, NULL, cap, &got))
        return fprintf(stderr, "demod: %s\n", prx_last_error()), 1;
      tot += got;
    }
    prx_qpsk_flush(q, bits, NULL, cap, &got);
    double t = bench_now() - t0;
    symbols = tot + got;
    if (t < best) best = t;
  }
  printf("{\"bench\":\"commands_lib_demod\",\"threads\":%d,\"samples\":%zu,\"symbols\":%zu,"
         "\"seconds\":%.4f,\"msym_per_s\":%.3f}\n",
         threads, n, symbols, best, symbols / best / 1e6);
  prx_qpsk_destroy(q);
  free(x);
  free(bits);
  return 0;
}

static int bench_startup(void) {
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = 9600;
  c.symbol_rate = 2400;
  c.threads = 1;
  prx_qpsk *q;
  double t0 = bench_now();
  if (prx_qpsk_create(&c, &q)) return fprintf(stderr, "%s\n", prx_last_error()), 1;
  double t = bench_now() - t0;
  prx_qpsk_destroy(q);
  printf("{\"bench\":\"commands_lib_startup\",\"qpsk_create_ms\":%.2f}\n", t * 1e3);
  return 0;
}

static int bench_cudastart(void) {
  double t0 = bench_now();
  int gpu = prx_cuda_available();
  double t_module = bench_now() - t0;
  if (!gpu) return fprintf(stderr, "cudastart: no usable CUDA device\n"), 1;
  t0 = bench_now();
  prx_pipe_host_free(prx_pipe_host_alloc(64, 1));
  double t_ctx = bench_now() - t0;
  size_t big = (size_t)32 << 20;
  t0 = bench_now();
  void *b = prx_pipe_host_alloc(big, 1);
  double t_alloc = bench_now() - t0;
  t0 = bench_now();
  prx_pipe_host_free(b);
  double t_free = bench_now() - t0;
  unsigned sel[64];
  for (unsigned i = 0; i < 64; i++) sel[i] = i;
  prx_chan_config c = prx_chan_config_default();
  c.channels = 1024;
  c.decimation = 512;
  c.in_format = PRX_CI16;
  c.select = sel;
  c.n_select = 64;
  c.backend = PRX_BACKEND_CUDA;
  prx_chan *ch;
  t0 = bench_now();
  if (prx_chan_create(&c, &ch)) return fprintf(stderr, "%s\n", prx_last_error()), 1;
  double t_create = bench_now() - t0;
  size_t n = (size_t)1 << 20, stride = n / 512 + 64, got;
  void *x = prx_pipe_host_alloc(4 * n, 1);
  prx_cf32 *y = prx_pipe_host_alloc(64 * stride * sizeof *y, 1);
  memset(x, 0, 4 * n);
  double t_exec[2];
  for (int i = 0; i < 2; i++) {
    t0 = bench_now();
    if (prx_chan_execute(ch, x, n, y, stride, &got))
      return fprintf(stderr, "%s\n", prx_last_error()), 1;
    t_exec[i] = bench_now() - t0;
  }
  t0 = bench_now();
  prx_chan_destroy(ch);
  double t_destroy = bench_now() - t0;
  prx_pipe_host_free(x);
  prx_pipe_host_free(y);
  printf("{\"bench\":\"commands_cudastart\",\"module_ms\":%.1f,\"context_ms\":%.1f,"
         "\"pinned_32mib_alloc_ms\":%.1f,\"pinned_32mib_free_ms\":%.1f,\"chan_create_ms\":%.1f,"
         "\"first_exec_ms\":%.1f,\"second_exec_ms\":%.1f,\"chan_destroy_ms\":%.1f}\n",
         t_module * 1e3, t_ctx * 1e3, t_alloc * 1e3, t_free * 1e3, t_create * 1e3, t_exec[0] * 1e3,
         t_exec[1] * 1e3, t_destroy * 1e3);
  return 0;
}

int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "";
  if (!strcmp(m, "read") && argc == 3) return bench_read(argv[2]);
  if (!strcmp(m, "write") && (argc == 5 || argc == 6))
    return bench_write(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
                       argc == 6 ? strtoull(argv[5], NULL, 0) : (size_t)1 << 20);
  if (!strcmp(m, "chan") && argc >= 7 && argc <= 9)
    return bench_chan(argv[2], argv[3], (unsigned)atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                      argc >= 8 ? (unsigned)atoi(argv[7]) : 0,
                      argc == 9 ? strtoull(argv[8], NULL, 0) : 0);
  if (!strcmp(m, "demod") && argc == 7)
    return bench_demod(argv[2], atof(argv[3]), atof(argv[4]), atoi(argv[5]), atoi(argv[6]));
  if (!strcmp(m, "startup")) return bench_startup();
  if (!strcmp(m, "cudastart")) return bench_cudastart();
  fprintf(stderr, "usage: bench_commands read FILE | write DIR FILES MIB [CHUNK] | chan FILE FMT "
                  "K THREADS REPS [N] | demod FILE RATE RS THREADS REPS | startup | cudastart\n");
  return 2;
}
