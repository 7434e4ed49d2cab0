/* The host pipeline (src/pipeline): its output is byte-identical to a serial loop over the whole
 * stream for many block sizes, queue depths and writer counts, with full and short reads; an
 * error injected at the k-th read, compute or write ends the run with the exact counts of what
 * was processed and the error's message; a stop request ends the run within a bounded number of
 * blocks with everything read computed, flushed and written; a prx_iq_reader (raw file, SigMF)
 * feeds it like any source; compute's sleeps for input and for slots are counted and timed; bad
 * configurations are refused.
 *
 * The compute stage under test is the running hash of tests/support/pipe_test.h: a lost, repeated
 * or reordered block, a wrong position or a torn buffer changes every later output. Each output
 * slot starts with its offset in the output stream; writer w of W stores the words j with
 * j % W == w at their place. */
#include "pipe_test.h"
#include "testutil.h"

#include "core/internal.h"
#include "pipeline/pipeline.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_SAMPLES 20000
#define FLUSH_WORDS PIPE_FLUSH_WORDS

typedef struct {
  /* source */
  const uint32_t *x;
  size_t n, fed;
  int short_reads, no_jitter; /* no_jitter: tiny blocks, where sleeping would dominate */
  test_rng rng;
  pthread_mutex_t rng_mu; /* the reader and the writers both draw jitter */
  /* compute */
  uint32_t state;
  uint64_t expect_pos, out_off;
  /* sink */
  uint32_t *y;
  size_t y_cap;
  uint64_t next_block[8];
  int order_errors, overflow, n_writers;
  /* injection: fail the k-th call of a stage (1-based; 0 never); writer fail_writer */
  int fail_read, fail_compute, fail_write, fail_writer, read_fail_keeps;
  atomic_int reads, computes, writes[8];
  int stop_after; /* should_stop turns on after this many reads (0 never) */
} sim;

static void jitter(sim *s) {
  if (s->no_jitter) return;
  pthread_mutex_lock(&s->rng_mu);
  uint64_t r = test_rng_u64(&s->rng) % 16;
  pthread_mutex_unlock(&s->rng_mu);
  if (r == 0) usleep(50);
  if (r < 4) sched_yield();
}

static prx_status sim_read(void *ctx, void *buf, size_t max, size_t *n) {
  sim *s = ctx;
  int k = atomic_fetch_add(&s->reads, 1) + 1;
  jitter(s);
  size_t left = s->n - s->fed, m = left < max ? left : max;
  if (s->short_reads && m > 1) {
    pthread_mutex_lock(&s->rng_mu);
    m = 1 + test_rng_u64(&s->rng) % m;
    pthread_mutex_unlock(&s->rng_mu);
  }
  if (k == s->fail_read) {
    m = s->read_fail_keeps ? (m + 1) / 2 : 0;
    memcpy(buf, s->x + s->fed, m * 4);
    s->fed += m;
    *n = m;
    return prx_fail(PRX_ERR_IO, "injected read error at read %d", k);
  }
  memcpy(buf, s->x + s->fed, m * 4);
  s->fed += m;
  *n = m;
  return PRX_OK;
}

static prx_status sim_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                              size_t *out_n) {
  sim *s = ctx;
  int k = atomic_fetch_add(&s->computes, 1) + 1;
  jitter(s);
  if (k == s->fail_compute) return prx_fail(PRX_ERR_DEVICE, "injected compute error at %d", k);
  if (pos != s->expect_pos)
    return prx_fail(PRX_ERR_INTERNAL, "position %llu, expected %llu", (unsigned long long)pos,
                    (unsigned long long)s->expect_pos);
  uint64_t *hdr = out;
  uint32_t *y = (uint32_t *)(hdr + 1);
  hdr[0] = s->out_off;
  if (in) {
    pipe_hash_block(&s->state, in, n, pos, y);
    *out_n = n;
  } else {
    pipe_hash_flush(&s->state, pos, y);
    *out_n = FLUSH_WORDS;
  }
  s->expect_pos += n;
  s->out_off += *out_n;
  return PRX_OK;
}

static prx_status sim_write(void *ctx, int w, const void *out, size_t out_n, uint64_t block) {
  sim *s = ctx;
  int k = atomic_fetch_add(&s->writes[w], 1) + 1;
  jitter(s);
  if (w == s->fail_writer && k == s->fail_write)
    return prx_fail(PRX_ERR_IO, "injected write error at write %d of writer %d", k, w);
  if (block != s->next_block[w]) s->order_errors++;
  s->next_block[w] = block + 1;
  const uint64_t *hdr = out;
  const uint32_t *y = (const uint32_t *)(hdr + 1);
  for (size_t j = (size_t)w; j < out_n; j += (size_t)s->n_writers) {
    size_t at = (size_t)hdr[0] + j;
    if (at < s->y_cap)
      s->y[at] = y[j];
    else
      s->overflow = 1;
  }
  return PRX_OK;
}

static int sim_stop(void *ctx) {
  sim *s = ctx;
  return s->stop_after && atomic_load(&s->reads) >= s->stop_after;
}

static void sim_init(sim *s, const uint32_t *x, size_t n, uint32_t *y, size_t y_cap,
                     uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->x = x;
  s->n = n;
  s->y = y;
  s->y_cap = y_cap;
  s->state = 1;
  s->n_writers = 1;
  s->fail_writer = -1;
  test_rng_seed(&s->rng, seed);
  pthread_mutex_init(&s->rng_mu, NULL);
  memset(y, 0, y_cap * sizeof *y);
}

/* The pipeline's reader and first writer polling for their buffers (prx_pipe_config.poll_us)
 * where set, and the first writer woken once wake_batch slots wait (prx_pipe_config.wake_batch,
 * capped at out_depth) where set: main runs the stream's tests each way. */
static unsigned poll_us;
static int wake_batch;

static prx_pipe_config sim_config(sim *s, size_t block, int in_depth, int out_depth, int writers) {
  prx_pipe_config c = prx_pipe_config_default();
  c.block_samples = block;
  c.sample_size = 4;
  c.out_bytes = 8 + 4 * (block > FLUSH_WORDS ? block : FLUSH_WORDS);
  c.in_depth = in_depth;
  c.out_depth = out_depth;
  c.n_writers = writers;
  c.read = sim_read;
  c.compute = sim_compute;
  c.write = sim_write;
  c.should_stop = sim_stop;
  c.poll_us = poll_us;
  c.wake_batch = wake_batch;
  c.read_ctx = s;
  c.ctx = s;
  s->n_writers = writers;
  return c;
}

/* ---- byte identity with the serial loop ---- */

static void test_identity(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  static const size_t blocks[] = {1, 3, 64, 1000, 4096, N_SAMPLES - 1, N_SAMPLES, N_SAMPLES + 7};
  static const int depths[][3] = {{3, 2, 1}, {3, 2, 3}, {4, 3, 1},
                                  {8, 5, 2}, {3, 7, 4}, {16, 2, 1}};
  size_t n_ref = N_SAMPLES + FLUSH_WORDS;
  int runs = 0;
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++)
      for (int mode = 0; mode < 3; mode++) { /* 0 full reads, 1 short reads, 2 serial */
        size_t block = blocks[b];
        /* thousands of tiny blocks cost a thread hand-off each (tens of microseconds across the
         * cores of a large machine): a few depths are enough for them */
        if (block == 1 && (d > 0 || mode == 1)) continue;
        if (block == 3 && d > 1) continue;
        sim s;
        sim_init(&s, x, N_SAMPLES, y, cap, 1000 + runs);
        prx_pipe_config c = sim_config(&s, block, depths[d][0], depths[d][1], depths[d][2]);
        s.short_reads = mode == 1;
        s.no_jitter = block < 64;
        c.serial = mode == 2;
        prx_pipe_result r;
        prx_status st = prx_pipe_run(&c, &r);
        runs++;
        CHECK(st == PRX_OK, "block %zu depths %d/%d/%d mode %d: %s", block, depths[d][0],
              depths[d][1], depths[d][2], mode, prx_last_error());
        CHECK(memcmp(y, ref, n_ref * 4) == 0 && !s.overflow,
              "block %zu depths %d/%d/%d mode %d: output differs from the serial loop", block,
              depths[d][0], depths[d][1], depths[d][2], mode);
        CHECK(r.samples_read == N_SAMPLES && r.samples_computed == N_SAMPLES && r.flushed &&
                  r.end_of_stream && !r.stopped && r.failed == PRX_PIPE_NONE,
              "block %zu mode %d: counts read %llu computed %llu flushed %d eos %d", block, mode,
              (unsigned long long)r.samples_read, (unsigned long long)r.samples_computed, r.flushed,
              r.end_of_stream);
        CHECK(r.blocks_computed == r.blocks_read + 1 && r.blocks_written == r.blocks_computed,
              "block %zu mode %d: blocks read %llu computed %llu written %llu", block, mode,
              (unsigned long long)r.blocks_read, (unsigned long long)r.blocks_computed,
              (unsigned long long)r.blocks_written);
        if (mode == 0)
          CHECK(r.blocks_read == (N_SAMPLES + block - 1) / block, "block %zu: %llu blocks", block,
                (unsigned long long)r.blocks_read);
        CHECK(s.order_errors == 0, "writers saw blocks out of order");
        pthread_mutex_destroy(&s.rng_mu);
      }
  printf("identity: %d runs\n", runs);
}

/* ---- errors at every stage ---- */

static void test_read_errors(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 1000;
  for (int keep = 0; keep < 2; keep++)
    for (int k = 1; k <= 22; k += 3) {
      sim s;
      sim_init(&s, x, N_SAMPLES, y, cap, 77 + k);
      prx_pipe_config c = sim_config(&s, block, 3, 2, 2);
      s.fail_read = k;
      s.read_fail_keeps = keep;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      size_t full = (size_t)(k - 1) * block < N_SAMPLES ? (size_t)(k - 1) * block : N_SAMPLES;
      int reached = (size_t)(k - 1) * block < N_SAMPLES; /* the stream had not ended before */
      size_t want = full + (reached && keep ? (block + 1) / 2 : 0);
      if (!reached) {
        CHECK(st == PRX_OK && r.end_of_stream, "read error %d after the end: %s", k,
              prx_last_error());
        continue;
      }
      CHECK(st == PRX_ERR_IO && r.failed == PRX_PIPE_READ, "read error %d: status %d stage %d", k,
            st, r.failed);
      CHECK(strstr(prx_last_error(), "injected read error") != NULL,
            "read error %d: message '%s' lost between threads", k, prx_last_error());
      CHECK(r.samples_read == want && r.samples_computed == want,
            "read error %d keep %d: read %llu computed %llu, want %zu", k, keep,
            (unsigned long long)r.samples_read, (unsigned long long)r.samples_computed, want);
      CHECK(r.flushed && r.blocks_written == r.blocks_computed && !r.end_of_stream,
            "read error %d: the samples read are flushed and written", k);
      CHECK(pipe_hash_prefix_ok(x, y, want, 1), "read error %d: output of the samples read differs",
            k);
      pthread_mutex_destroy(&s.rng_mu);
    }
}

static void test_compute_errors(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 700;
  const size_t n_blocks = (N_SAMPLES + block - 1) / block; /* + 1 flush call */
  for (int serial = 0; serial < 2; serial++)
    for (int k = 1; k <= (int)n_blocks + 1; k += (k < 4 || k >= (int)n_blocks - 1) ? 1 : 5) {
      sim s;
      sim_init(&s, x, N_SAMPLES, y, cap, 300 + k);
      prx_pipe_config c = sim_config(&s, block, 4, 3, 3);
      c.serial = serial;
      s.fail_compute = k;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      size_t done = (size_t)(k - 1) * block < N_SAMPLES ? (size_t)(k - 1) * block : N_SAMPLES;
      CHECK(st == PRX_ERR_DEVICE && r.failed == PRX_PIPE_COMPUTE, "compute error %d: %d", k, st);
      CHECK(strstr(prx_last_error(), "injected compute error") != NULL, "compute error %d: '%s'", k,
            prx_last_error());
      CHECK(r.blocks_computed == (uint64_t)k - 1 && r.blocks_written == (uint64_t)k - 1 &&
                r.samples_computed == done && !r.flushed,
            "compute error %d serial %d: computed %llu written %llu samples %llu", k, serial,
            (unsigned long long)r.blocks_computed, (unsigned long long)r.blocks_written,
            (unsigned long long)r.samples_computed);
      /* the reader stops within the ring's depth */
      CHECK(r.samples_read >= done && r.samples_read <= done + (size_t)(c.in_depth + 1) * block,
            "compute error %d: read %llu for %zu computed", k, (unsigned long long)r.samples_read,
            done);
      CHECK(pipe_hash_prefix_ok(x, y, done, 0), "compute error %d: output before the error differs",
            k);
      pthread_mutex_destroy(&s.rng_mu);
    }
}

static void test_write_errors(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 900;
  const int n_blocks = (N_SAMPLES + block - 1) / block + 1; /* with the flush */
  for (int writers = 1; writers <= 3; writers += 2)
    for (int serial = 0; serial < 2; serial++)
      for (int k = 1; k <= n_blocks; k += (k < 3 || k >= n_blocks - 1) ? 1 : 6) {
        sim s;
        sim_init(&s, x, N_SAMPLES, y, cap, 500 + k);
        prx_pipe_config c = sim_config(&s, block, 3, 2, writers);
        c.serial = serial;
        s.fail_write = k;
        s.fail_writer = writers - 1;
        prx_pipe_result r;
        prx_status st = prx_pipe_run(&c, &r);
        CHECK(st == PRX_ERR_IO && r.failed == PRX_PIPE_WRITE, "write error %d: %d", k, st);
        CHECK(strstr(prx_last_error(), "injected write error") != NULL, "write error %d: '%s'", k,
              prx_last_error());
        /* with one writer exactly the slots before the failed one are written; with several,
         * the others stop at their next slot too, so every writer wrote at most those */
        int exact = writers == 1 || serial;
        CHECK((exact ? r.blocks_written == (uint64_t)k - 1 : r.blocks_written <= (uint64_t)k - 1) &&
                  atomic_load(&s.writes[writers - 1]) == k && !r.flushed,
              "write error %d writers %d serial %d: %llu slots written", k, writers, serial,
              (unsigned long long)r.blocks_written);
        /* compute and the reader stop within the rings' depths */
        CHECK(r.blocks_computed >= (uint64_t)k && r.blocks_computed <= (uint64_t)k + 2,
              "write error %d: %llu blocks computed", k, (unsigned long long)r.blocks_computed);
        CHECK(r.samples_read <= r.samples_computed + (size_t)(3 + 1) * block,
              "write error %d: read %llu for %llu computed", k, (unsigned long long)r.samples_read,
              (unsigned long long)r.samples_computed);
        if (writers == 1)
          CHECK(pipe_hash_prefix_ok(x, y, (size_t)(k - 1) * block, 0),
                "write error %d: output differs", k);
        pthread_mutex_destroy(&s.rng_mu);
      }
}

/* ---- the first block given with the configuration (prx_pipe_config.first_block) ---- */

/* The stream's first first_samples samples read before the run (as a command reads them beside
 * its set-up) and handed over as its first block: the same bytes and counts as the stream read
 * whole, threaded and serial, with full and short reads after it; a first block that does not
 * fit the configuration is refused (and freed: the run takes it over in every case). */
static void test_first_block(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  static const size_t blocks[] = {1, 64, 1000, N_SAMPLES, N_SAMPLES + 7};
  size_t n_ref = N_SAMPLES + FLUSH_WORDS;
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
    for (int mode = 0; mode < 3; mode++) { /* 0 full reads, 1 short reads, 2 serial */
      size_t block = blocks[b];
      size_t first = block > N_SAMPLES ? N_SAMPLES : block == 1 ? 1 : block / 2 + 1;
      sim s;
      sim_init(&s, x, N_SAMPLES, y, cap, 7000 + b * 10 + (uint64_t)mode);
      prx_pipe_config c = sim_config(&s, block, 4, 3, 2);
      s.short_reads = mode == 1;
      s.no_jitter = block < 64;
      c.serial = mode == 2;
      uint32_t *buf = prx_pipe_host_alloc(block * 4, 0);
      CHECK(buf != NULL, "first block: allocation");
      if (!buf) return;
      memcpy(buf, x, first * 4);
      s.fed = first; /* the source's reads go on after it */
      c.first_block = buf;
      c.first_samples = first;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      CHECK(st == PRX_OK && memcmp(y, ref, n_ref * 4) == 0 && !s.overflow,
            "first block of %zu (blocks of %zu) mode %d: output differs (%s)", first, block, mode,
            prx_last_error());
      CHECK(r.samples_read == N_SAMPLES && r.samples_computed == N_SAMPLES && r.flushed &&
                r.end_of_stream && r.blocks_computed == r.blocks_read + 1 &&
                r.blocks_written == r.blocks_computed && s.order_errors == 0,
            "first block of %zu (blocks of %zu) mode %d: counts read %llu computed %llu blocks "
            "%llu/%llu/%llu",
            first, block, mode, (unsigned long long)r.samples_read,
            (unsigned long long)r.samples_computed, (unsigned long long)r.blocks_read,
            (unsigned long long)r.blocks_computed, (unsigned long long)r.blocks_written);
      pthread_mutex_destroy(&s.rng_mu);
    }
  sim s;
  sim_init(&s, x, N_SAMPLES, y, cap, 7999);
  prx_pipe_config c = sim_config(&s, 256, 3, 2, 1);
  size_t firsts[] = {0, 257};
  for (int k = 0; k < 2; k++) {
    c.first_block = prx_pipe_host_alloc(256 * 4, 0);
    c.first_samples = firsts[k];
    prx_pipe_result r;
    CHECK(prx_pipe_run(&c, &r) == PRX_ERR_INVALID && r.failed == PRX_PIPE_SETUP,
          "a first block of %zu samples (blocks of 256) accepted", firsts[k]);
  }
  pthread_mutex_destroy(&s.rng_mu);
}

/* ---- many writers: each slot reaches every writer through the wake tree ---- */

/* The writers wake each other in a tree (writer w the writers 2w + 1 and 2w + 2): with 5 to 8
 * writers at jittered speeds every writer sees every slot in order (byte identity), and a write
 * error at an inner writer (1, whose subtree waits for it) or at a leaf (the last) ends the run
 * with no stage left waiting. */
static void test_writer_tree(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  static const size_t blocks[] = {64, 1000, 4096};
  size_t n_ref = N_SAMPLES + FLUSH_WORDS;
  for (int writers = 5; writers <= 8; writers++)
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
      for (int out_depth = 2; out_depth <= 5; out_depth += 3) {
        sim s;
        sim_init(&s, x, N_SAMPLES, y, cap,
                 9000 + (uint64_t)(writers * 100) + b * 10 + (uint64_t)out_depth);
        prx_pipe_config c = sim_config(&s, blocks[b], 4, out_depth, writers);
        prx_pipe_result r;
        prx_status st = prx_pipe_run(&c, &r);
        CHECK(st == PRX_OK && memcmp(y, ref, n_ref * 4) == 0 && !s.overflow && r.flushed &&
                  s.order_errors == 0 && r.blocks_written == r.blocks_computed,
              "writers %d block %zu out depth %d: output or counts differ", writers, blocks[b],
              out_depth);
        pthread_mutex_destroy(&s.rng_mu);
      }
  const size_t block = 900;
  for (int fw = 0; fw < 2; fw++)
    for (int k = 1; k <= 20; k += 4) {
      int writers = 8, failing = fw ? writers - 1 : 1;
      sim s;
      sim_init(&s, x, N_SAMPLES, y, cap, 9500 + (uint64_t)k);
      prx_pipe_config c = sim_config(&s, block, 3, 2, writers);
      s.fail_write = k;
      s.fail_writer = failing;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      CHECK(st == PRX_ERR_IO && r.failed == PRX_PIPE_WRITE &&
                strstr(prx_last_error(), "injected write error") != NULL,
            "writer %d error at %d: %d '%s'", failing, k, st, prx_last_error());
      CHECK(r.blocks_written <= (uint64_t)k - 1 && atomic_load(&s.writes[failing]) == k &&
                !r.flushed && r.blocks_computed >= (uint64_t)k &&
                r.blocks_computed <= (uint64_t)k + 2,
            "writer %d error at %d: written %llu computed %llu", failing, k,
            (unsigned long long)r.blocks_written, (unsigned long long)r.blocks_computed);
      pthread_mutex_destroy(&s.rng_mu);
    }
}

/* ---- stop requests ---- */

static void test_stop(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 500;
  for (int serial = 0; serial < 2; serial++)
    for (int k = 1; k <= 30; k += 4) {
      sim s;
      sim_init(&s, x, N_SAMPLES, y, cap, 900 + k);
      prx_pipe_config c = sim_config(&s, block, 5, 3, 2);
      c.serial = serial;
      s.stop_after = k;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      CHECK(st == PRX_OK && r.stopped && !r.end_of_stream, "stop %d: %d %s", k, st,
            prx_last_error());
      /* polled before every read: the reading ends after exactly k blocks */
      CHECK(r.blocks_read == (uint64_t)k && r.samples_read == (size_t)k * block,
            "stop %d: %llu blocks read", k, (unsigned long long)r.blocks_read);
      CHECK(r.samples_computed == r.samples_read && r.flushed &&
                r.blocks_written == r.blocks_computed,
            "stop %d: everything read is computed, flushed and written", k);
      CHECK(pipe_hash_prefix_ok(x, y, (size_t)k * block, 1), "stop %d: output differs", k);
      pthread_mutex_destroy(&s.rng_mu);
    }
}

/* ---- a prx_iq_reader as the source: raw file and SigMF ---- */

typedef struct {
  uint32_t state;
  uint64_t pos;
  uint32_t *y;
  size_t n;
} iq_sink;

static prx_status iq_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                             size_t *out_n) {
  iq_sink *s = ctx;
  if (pos != s->pos) return prx_fail(PRX_ERR_INTERNAL, "position");
  pipe_hash_block(&s->state, in, n, pos, out);
  s->pos += n;
  *out_n = n;
  return PRX_OK;
}

static prx_status iq_write(void *ctx, int w, const void *out, size_t out_n, uint64_t block) {
  (void)w;
  (void)block;
  iq_sink *s = ctx;
  memcpy(s->y + s->n, out, out_n * 4);
  s->n += out_n;
  return PRX_OK;
}

static void test_iq_reader(const uint32_t *x, const uint32_t *ref, uint32_t *y) {
  pipe_files files;
  if (!pipe_files_make(&files, "test_pipeline", x, N_SAMPLES)) return;
  const char *raw = files.raw;
  const char *paths[] = {raw, files.meta};
  for (int i = 0; i < 2; i++) {
    prx_iq_reader *rd = NULL;
    CHECK_OK(prx_iq_open(paths[i], PRX_CI16, &rd));
    if (!rd) continue;
    iq_sink s = {1, 0, y, 0};
    prx_pipe_config c = prx_pipe_config_default();
    c.block_samples = 1500;
    c.sample_size = 4;
    c.out_bytes = 4 * 1500;
    c.read = prx_pipe_iq_read;
    c.read_ctx = rd;
    c.compute = iq_compute;
    c.write = iq_write;
    c.ctx = &s;
    prx_pipe_result r;
    CHECK_OK(prx_pipe_run(&c, &r));
    CHECK(s.n == N_SAMPLES && memcmp(y, ref, N_SAMPLES * 4) == 0 && r.end_of_stream,
          "%s through prx_iq_reader: %zu samples, output differs", paths[i], s.n);
    prx_iq_close(rd);
  }
  /* a cut stream: the complete samples are computed, the truncation is the error */
  pipe_write_file(raw, x, 4 * 4321 + 3);
  prx_iq_reader *rd = NULL;
  CHECK_OK(prx_iq_open(raw, PRX_CI16, &rd));
  if (rd) {
    iq_sink s = {1, 0, y, 0};
    prx_pipe_config c = prx_pipe_config_default();
    c.block_samples = 1000;
    c.sample_size = 4;
    c.out_bytes = 4 * 1000;
    c.read = prx_pipe_iq_read;
    c.read_ctx = rd;
    c.compute = iq_compute;
    c.write = iq_write;
    c.ctx = &s;
    prx_pipe_result r;
    prx_status st = prx_pipe_run(&c, &r);
    CHECK(st == PRX_ERR_TRUNCATED && r.failed == PRX_PIPE_READ && r.samples_read == 4321 &&
              s.n == 4321 && memcmp(y, ref, 4321 * 4) == 0,
          "truncated stream: status %d, %llu read, %zu written", st,
          (unsigned long long)r.samples_read, s.n);
    prx_iq_close(rd);
  }
  pipe_files_remove(&files);
}

/* ---- configuration checks and the allocation hook ---- */

static void test_config(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  sim s;
  sim_init(&s, x, N_SAMPLES, y, cap, 5);
  prx_pipe_config c = sim_config(&s, 256, 3, 2, 1);
  prx_pipe_config bad = c;
  bad.in_depth = 2;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "in_depth 2 accepted");
  bad = c;
  bad.out_depth = 1;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "out_depth 1 accepted");
  bad = c;
  bad.wake_batch = -1;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "wake_batch -1 accepted");
  bad = c;
  bad.block_samples = 0;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "block 0 accepted");
  bad = c;
  bad.block_samples = SIZE_MAX / 2;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "overflowing block accepted");
  bad = c;
  bad.write = NULL;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "no write callback accepted");
  bad = c;
  bad.alloc = pipe_count_alloc;
  CHECK(prx_pipe_run(&bad, NULL) == PRX_ERR_INVALID, "alloc without free accepted");
  CHECK(prx_pipe_run(NULL, NULL) == PRX_ERR_INVALID, "NULL config accepted");
  CHECK(atomic_load(&s.reads) == 0, "a refused configuration read the input");
  /* the hook makes every buffer (3 input blocks, 2 output slots) and frees each */
  pipe_alloc_count counts = {0};
  c.alloc = pipe_count_alloc;
  c.free = pipe_count_free;
  c.alloc_ctx = &counts;
  c.pinned = 1; /* no effect without a device; with one, the hook has the say */
  prx_pipe_result r;
  CHECK_OK(prx_pipe_run(&c, &r));
  CHECK(memcmp(y, ref, (N_SAMPLES + FLUSH_WORDS) * 4) == 0, "output with the allocation hook");
  CHECK(atomic_load(&counts.allocs) == 5 && atomic_load(&counts.frees) == 5,
        "allocation hook: %d allocations, %d frees", atomic_load(&counts.allocs),
        atomic_load(&counts.frees));
  /* the default allocator: aligned, and pinned falls back to pageable without a device */
  void *b = prx_pipe_host_alloc(1000, 1);
  CHECK(b && ((uintptr_t)b % 64) == 0, "prx_pipe_host_alloc: %p", b);
  prx_pipe_host_free(b);
  prx_pipe_host_free(NULL);
  /* with a device, page-locked buffers of sizes about the 2 MiB pages the CUDA module maps them
   * in: each one whole writable and its own (a pattern per buffer, read back after all are
   * made), freed out of order */
  const size_t sizes[] = {1000, (size_t)2 << 20, ((size_t)2 << 20) + 1, (size_t)37 << 20};
  enum { NB = sizeof sizes / sizeof sizes[0] };
  unsigned char *pb[NB];
  for (int i = 0; i < NB; i++) {
    pb[i] = prx_pipe_host_alloc(sizes[i], 1);
    CHECK(pb[i] && ((uintptr_t)pb[i] % 64) == 0, "pinned buffer %d: %p", i, (void *)pb[i]);
    if (pb[i]) memset(pb[i], 0x31 + i, sizes[i]);
  }
  for (int i = 0; i < NB; i++) {
    size_t bad = 0;
    for (size_t k = 0; pb[i] && k < sizes[i]; k++) bad += pb[i][k] != (unsigned char)(0x31 + i);
    CHECK(bad == 0, "pinned buffer %d: %zu bytes not its own", i, bad);
  }
  for (int i = 0; i < NB; i += 2) prx_pipe_host_free(pb[i]);
  for (int i = 1; i < NB; i += 2) prx_pipe_host_free(pb[i]);
  CHECK(prx_pipe_host_alloc(0, 0) == NULL, "0 bytes allocated");
  pthread_mutex_destroy(&s.rng_mu);
}

/* ---- a stop signal interrupts a read blocked on a quiet pipe ---- */

static volatile sig_atomic_t sig_flag;
static void on_sig(int sig) {
  (void)sig;
  sig_flag = 1;
}
static prx_status pipe_read(void *ctx, void *buf, size_t max, size_t *n) {
  ssize_t r = read(*(int *)ctx, buf, max * 4);
  *n = r > 0 ? (size_t)r / 4 : 0;
  if (r < 0) return prx_fail(PRX_ERR_IO, "read: %s", strerror(errno));
  return PRX_OK;
}
static int flag_stop(void *ctx) {
  (void)ctx;
  return sig_flag;
}
static prx_status null_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                               size_t *out_n) {
  (void)ctx, (void)in, (void)n, (void)pos, (void)out;
  *out_n = 0;
  return PRX_OK;
}
static prx_status null_write(void *ctx, int w, const void *out, size_t n, uint64_t block) {
  (void)ctx, (void)w, (void)out, (void)n, (void)block;
  return PRX_OK;
}
/* ---- compute's waits ---- */

/* A source of `left` blocks (ctx: the count left), each read after `read_us`; a writer that takes
 * `write_us` a slot. */
typedef struct {
  int left, read_us, write_us;
} slow_io;
static prx_status slow_read(void *ctx, void *buf, size_t max, size_t *n) {
  slow_io *io = ctx;
  if (io->read_us) usleep((useconds_t)io->read_us);
  *n = io->left-- > 0 ? max : 0;
  memset(buf, 0, *n * 4);
  return PRX_OK;
}
static prx_status slow_write(void *ctx, int w, const void *out, size_t n, uint64_t block) {
  (void)w, (void)out, (void)n, (void)block;
  slow_io *io = ctx;
  if (io->write_us) usleep((useconds_t)io->write_us);
  return PRX_OK;
}

/* The result counts compute's sleeps and their time: a slow writer makes compute wait for slots
 * (about one wait per block beyond the slots in flight, each for most of a write), a slow reader
 * for input; the time is within the run's; and the writers' time after compute's end. */
static void test_compute_waits(void) {
  const int blocks = 40, us = 2000;
  for (int slow_writer = 0; slow_writer < 2; slow_writer++) {
    slow_io in = {blocks, slow_writer ? 0 : us, slow_writer ? us : 0};
    slow_io *io = &in;
    prx_pipe_config c = prx_pipe_config_default();
    c.block_samples = 256;
    c.sample_size = 4;
    c.out_bytes = 64;
    c.out_depth = 2;
    c.read = slow_read;
    c.read_ctx = io;
    c.compute = null_compute;
    c.write = slow_write;
    c.ctx = io;
    prx_pipe_result r;
    double t = prx_now();
    prx_status st = prx_pipe_run(&c, &r);
    double ms = (prx_now() - t) * 1e3;
    uint64_t n = slow_writer ? r.compute_waits_out : r.compute_waits_in;
    double waited = slow_writer ? r.ms_compute_wait_out : r.ms_compute_wait_in;
    const char *what = slow_writer ? "slow writer" : "slow reader";
    CHECK(st == PRX_OK && r.blocks_computed == (uint64_t)blocks + 1, "%s: the run", what);
    CHECK(n >= (uint64_t)blocks / 2 && n <= (uint64_t)blocks + 2, "%s: %llu waits for %d blocks",
          what, (unsigned long long)n, blocks);
    CHECK(waited >= 0.5 * (double)(blocks / 2) * us * 1e-3 && waited <= ms,
          "%s: %.1f ms waited in a run of %.1f ms", what, waited, ms);
    /* the other wait: the slow stage is not counted there */
    double other = slow_writer ? r.ms_compute_wait_in : r.ms_compute_wait_out;
    CHECK(other < waited / 2, "%s: %.1f ms of the other wait against %.1f", what, other, waited);
    /* a slow writer still has the last slot (the flush's, at least) to write when compute ends:
     * the writers' time after compute's end holds at least most of one write */
    if (slow_writer)
      CHECK(r.ms_writers_after >= 0.5 * us * 1e-3 && r.ms_writers_after <= ms,
            "slow writer: %.2f ms after compute's end in a run of %.1f ms", r.ms_writers_after, ms);
  }
}
static void *idle_thread(void *arg) { /* a worker pool's thread: made with the caller's mask */
  (void)arg;
  pause();
  return NULL;
}
static void *send_later(void *arg) {
  (void)arg;
  usleep(100000);
  kill(getpid(), SIGINT); /* process-directed, as Ctrl-C */
  return NULL;
}

static void test_stop_signal(void) {
  for (int serial = 0; serial < 2; serial++) {
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig; /* no SA_RESTART: the blocked read returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    sig_flag = 0;
    /* the caller blocks the stop signals before making its other threads */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pthread_t idle, sender;
    pthread_create(&idle, NULL, idle_thread, NULL);
    int fds[2];
    if (pipe(fds) != 0) return;
    prx_pipe_config c = prx_pipe_config_default();
    c.block_samples = 64;
    c.sample_size = 4;
    c.out_bytes = 64;
    c.read = pipe_read;
    c.read_ctx = &fds[0];
    c.compute = null_compute;
    c.write = null_write;
    c.should_stop = flag_stop;
    c.stop_signals = 1;
    c.serial = serial;
    pthread_create(&sender, NULL, send_later, NULL);
    prx_pipe_result r;
    prx_status st = prx_pipe_run(&c, &r); /* the write end stays open: the read blocks */
    CHECK(st == PRX_OK && r.stopped && r.flushed, "stop signal (serial %d): %d stopped %d", serial,
          st, r.stopped);
    pthread_join(sender, NULL);
    pthread_cancel(idle);
    pthread_join(idle, NULL);
    close(fds[0]);
    close(fds[1]);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sigaction(SIGINT, &old_sa, NULL);
  }
}

/* prx_pipe_cache_block against the largest power-of-two fraction of max_block whose slots per
 * worker fit the budget, found by counting up from min_block here (and min_block where none
 * does): K = 1024, D = 512 all channels (16 bytes of output per input sample) and 64 channels. */
static void test_cache_block(void) {
  const double budget = (double)PRX_PIPE_CACHE_BYTES;
  const struct {
    double bytes;
    int depth, workers;
    size_t max, min;
  } cases[] = {{16, 3, 1, 65536, 16384}, {16, 3, 2, 65536, 16384}, {16, 3, 7, 65536, 16384},
               {1, 3, 1, 65536, 16384},  {16, 3, 1, 65536, 32768}, {16, 8, 1, 65536, 4096},
               {64, 3, 1, 65536, 16384}, {16, 2, 1, 65536, 8192},  {0.5, 3, 16, 1 << 20, 1024}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t want = cases[i].min;
    for (size_t b = cases[i].min; b <= cases[i].max; b *= 2)
      if ((double)b * cases[i].bytes * cases[i].depth / cases[i].workers <= budget) want = b;
    size_t got = prx_pipe_cache_block(cases[i].max, cases[i].min, cases[i].bytes, cases[i].depth,
                                      cases[i].workers);
    CHECK(got == want, "cache block case %zu: %zu, expected %zu", i, got, want);
  }
  /* the command's cases: all 1024 channels, one worker 2^14, two 2^15, seven 2^16 */
  CHECK(prx_pipe_cache_block(65536, 16384, 16, 3, 1) == 16384, "one worker");
  CHECK(prx_pipe_cache_block(65536, 16384, 16, 3, 2) == 32768, "two workers");
  CHECK(prx_pipe_cache_block(65536, 16384, 16, 3, 7) == 65536, "seven workers");
}

int main(void) {
  alarm(120); /* a stage that never ends (a stop signal lost) fails the test instead of hanging */
  size_t cap = N_SAMPLES + 64;
  uint32_t *x = malloc(N_SAMPLES * 4), *ref = malloc(cap * 4), *y = malloc(cap * 4);
  pipe_test_input(20261201, x, N_SAMPLES, ref);
  test_cache_block();
  /* woken stages, then the reader and the first writer polling, then the first writer woken
   * for every 3 slots: the same bytes, counts and ends */
  for (int mode = 0; mode < 3; mode++) {
    poll_us = mode == 1 ? 20 : 0;
    wake_batch = mode == 2 ? 3 : 0;
    test_identity(x, ref, y, cap);
    test_read_errors(x, y, cap);
    test_compute_errors(x, y, cap);
    test_write_errors(x, y, cap);
    test_writer_tree(x, ref, y, cap);
    test_stop(x, y, cap);
    test_first_block(x, ref, y, cap);
  }
  poll_us = 0;
  wake_batch = 0;
  test_iq_reader(x, ref, y);
  test_compute_waits();
  /* before anything loads the CUDA module (test_config's pinned allocation): the runtime's own
   * threads keep the signal mask of the thread that started them, and a process-directed SIGINT
   * delivered to one of them would not interrupt the reader's read (the commands block the stop
   * signals before creating any backend for the same reason) */
  test_stop_signal();
  test_config(x, ref, y, cap);
  free(x);
  free(ref);
  free(y);
  return test_finish("test_pipeline");
}
