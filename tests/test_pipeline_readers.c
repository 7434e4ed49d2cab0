/* The host pipeline with several reader threads (positional reads, src/pipeline's read_at): its
 * output is byte-identical to a serial loop over the whole stream for many block sizes, reader
 * counts and depths, with readers that finish out of order; an error injected at block k ends
 * the run with exactly the blocks before it (and the samples it kept) computed, flushed and
 * written, and its message from the thread that met it; a stop request ends the reading at a
 * block boundary with everything handed over computed; prx_iq_read_at over a raw file, a SigMF
 * recording and a SigMF archive gives the file's samples; a trailing partial sample is the
 * truncation error after the complete samples; a file cut (truncate) while several readers read
 * it ends the stream cleanly with no signal (pread, never a mapping); an input block that cannot
 * be made (they are made on first use) ends the stream as a set-up error after the blocks before.
 *
 * The compute stage is the running hash of tests/support/pipe_test.h: a lost, repeated or
 * reordered block, a wrong position or a torn buffer changes every later output. */
#include "pipe_test.h"
#include "testutil.h"

#include "core/internal.h"
#include "io/io_internal.h"
#include "pipeline/pipeline.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_SAMPLES 30000
#define FLUSH_WORDS PIPE_FLUSH_WORDS

typedef struct {
  const uint32_t *x;
  size_t n;
  atomic_uint_fast64_t seed;
  uint64_t fail_block; /* read_at of the block starting at this sample fails (UINT64_MAX never) */
  int fail_keeps;      /* the failing read keeps half its samples */
  atomic_int reads;
  int stop_after; /* should_stop from this many reads on (0 never) */
  /* compute and sink */
  uint32_t state;
  uint64_t expect_pos;
  uint32_t *y;
  size_t y_n, y_cap;
  int bad_pos;
} sim;

/* A pseudo-random pause of 0-3 yields (or a short sleep): the readers finish out of order. */
static void jitter(sim *s) {
  uint64_t r = atomic_fetch_add(&s->seed, 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  r >>= 59;
  if (r == 0) usleep(100);
  for (uint64_t i = 0; i < (r & 3); i++) sched_yield();
}

static prx_status sim_read_at(void *ctx, void *buf, size_t max, uint64_t first, size_t *n) {
  sim *s = ctx;
  atomic_fetch_add(&s->reads, 1);
  jitter(s);
  size_t m = first >= s->n ? 0 : s->n - first < max ? s->n - (size_t)first : max;
  if (first == s->fail_block) {
    m = s->fail_keeps ? (m + 1) / 2 : 0;
    memcpy(buf, s->x + first, m * 4);
    *n = m;
    return prx_fail(PRX_ERR_IO, "injected read error at sample %llu", (unsigned long long)first);
  }
  memcpy(buf, s->x + first, m * 4);
  *n = m;
  return PRX_OK;
}

/* The sequential read, for the configuration's fallback (serial mode): never used otherwise. */
static prx_status sim_read(void *ctx, void *buf, size_t max, size_t *n) {
  (void)ctx, (void)buf, (void)max, (void)n;
  return prx_fail(PRX_ERR_INTERNAL, "the sequential read was used beside read_at");
}

static prx_status sim_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                              size_t *out_n) {
  sim *s = ctx;
  (void)out;
  if (pos != s->expect_pos) s->bad_pos = 1;
  size_t m = in ? n : FLUSH_WORDS;
  if (m > s->y_cap - s->y_n) { /* more than the stream holds: blocks computed twice */
    s->bad_pos = 1;
  } else if (in) {
    pipe_hash_block(&s->state, in, n, pos, s->y + s->y_n);
    s->y_n += n;
  } else {
    pipe_hash_flush(&s->state, pos, s->y + s->y_n);
    s->y_n += FLUSH_WORDS;
  }
  s->expect_pos += n;
  *out_n = 0;
  return PRX_OK;
}

static int sim_stop(void *ctx) {
  sim *s = ctx;
  return s->stop_after && atomic_load(&s->reads) >= s->stop_after;
}

static prx_pipe_config sim_config(sim *s, const uint32_t *x, uint32_t *y, size_t cap, size_t block,
                                  int readers, int in_depth, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->x = x;
  s->n = N_SAMPLES;
  s->y = y;
  s->y_cap = cap;
  s->state = 1;
  s->fail_block = UINT64_MAX;
  atomic_store(&s->seed, seed);
  prx_pipe_config c = prx_pipe_config_default();
  c.block_samples = block;
  c.sample_size = 4;
  c.out_bytes = 8;
  c.in_depth = in_depth;
  c.read = sim_read;
  c.read_at = sim_read_at;
  c.n_readers = readers;
  c.compute = sim_compute;
  c.write = pipe_no_write;
  c.should_stop = sim_stop;
  c.read_ctx = s;
  c.ctx = s;
  return c;
}

static void test_identity(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  static const size_t blocks[] = {1, 7, 1000, 4096, N_SAMPLES - 1, N_SAMPLES, N_SAMPLES + 3};
  static const int readers[][2] = {{2, 3}, {2, 5}, {4, 7}, {4, 4}, {8, 11}, {3, 16}};
  int runs = 0;
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
    for (size_t d = 0; d < sizeof readers / sizeof readers[0]; d++) {
      size_t block = blocks[b];
      if (block == 1 && d > 1) continue; /* 30000 hand-offs: two configurations are enough */
      sim s;
      prx_pipe_config c = sim_config(&s, x, y, cap, block, readers[d][0], readers[d][1], 7 + runs);
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      runs++;
      CHECK(st == PRX_OK, "block %zu readers %d depth %d: %s", block, readers[d][0], readers[d][1],
            prx_last_error());
      CHECK(s.y_n == N_SAMPLES + FLUSH_WORDS && !memcmp(y, ref, s.y_n * 4) && !s.bad_pos,
            "block %zu readers %d depth %d: the output differs from the serial loop", block,
            readers[d][0], readers[d][1]);
      CHECK(r.samples_read == N_SAMPLES && r.samples_computed == N_SAMPLES && r.flushed &&
                r.end_of_stream && !r.stopped && r.failed == PRX_PIPE_NONE &&
                r.blocks_read == (N_SAMPLES + block - 1) / block &&
                r.blocks_computed == r.blocks_read + 1 && r.blocks_written == r.blocks_computed,
            "block %zu readers %d: counts read %llu (%llu blocks) computed %llu flushed %d", block,
            readers[d][0], (unsigned long long)r.samples_read, (unsigned long long)r.blocks_read,
            (unsigned long long)r.samples_computed, r.flushed);
    }
  printf("identity: %d runs\n", runs);
}

/* The output is exactly that of the first m samples, flushed. */
static int prefix_ok(const uint32_t *x, const uint32_t *y, size_t y_n, size_t m) {
  return y_n == m + FLUSH_WORDS && pipe_hash_prefix_ok(x, y, m, 1);
}

static void test_read_errors(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 1000;
  for (int keep = 0; keep < 2; keep++)
    for (uint64_t k = 0; k < N_SAMPLES / block; k += 4) {
      sim s;
      prx_pipe_config c = sim_config(&s, x, y, cap, block, 4, 7, 100 + k);
      s.fail_block = k * block;
      s.fail_keeps = keep;
      prx_pipe_result r;
      prx_status st = prx_pipe_run(&c, &r);
      size_t want = (size_t)k * block + (keep ? (block + 1) / 2 : 0);
      CHECK(st == PRX_ERR_IO && r.failed == PRX_PIPE_READ && !r.end_of_stream,
            "read error at block %llu: status %d stage %d", (unsigned long long)k, st, r.failed);
      CHECK(strstr(prx_last_error(), "injected read error") != NULL,
            "read error at block %llu: message '%s'", (unsigned long long)k, prx_last_error());
      CHECK(r.samples_read == want && r.samples_computed == want && r.flushed &&
                r.blocks_written == r.blocks_computed,
            "read error at block %llu keep %d: read %llu computed %llu, want %zu",
            (unsigned long long)k, keep, (unsigned long long)r.samples_read,
            (unsigned long long)r.samples_computed, want);
      CHECK(prefix_ok(x, y, s.y_n, want), "read error at block %llu: the output differs",
            (unsigned long long)k);
    }
}

static void test_stop(const uint32_t *x, uint32_t *y, size_t cap) {
  const size_t block = 500;
  for (int k = 1; k <= 40; k += 6) {
    sim s;
    prx_pipe_config c = sim_config(&s, x, y, cap, block, 3, 6, 300 + k);
    s.stop_after = k;
    prx_pipe_result r;
    prx_status st = prx_pipe_run(&c, &r);
    CHECK(st == PRX_OK && r.stopped && !r.end_of_stream, "stop %d: %d %s", k, st, prx_last_error());
    /* reads already begun when the stop came are handed over first: the stream ends at a block
     * boundary, within the readers' reach. The stop is polled after a block is claimed, so a
     * reader slow to poll block b lets the others begin up to in_depth - 1 later reads (counted
     * towards k) before b ends the stream. */
    CHECK(r.samples_read % block == 0 && r.blocks_read + (uint64_t)c.in_depth - 1 >= (uint64_t)k &&
              r.blocks_read <= (uint64_t)k + 6,
          "stop %d: %llu blocks read", k, (unsigned long long)r.blocks_read);
    CHECK(r.samples_computed == r.samples_read && r.flushed &&
              prefix_ok(x, y, s.y_n, (size_t)r.samples_read),
          "stop %d: everything read is computed, flushed and written", k);
  }
}

/* ---- prx_iq_read_at over files ---- */

static int slow_compute; /* a pause per block: a file cut lands in the middle of the stream */

static prx_status iq_run(prx_iq_reader *rd, size_t block, int readers, uint32_t *y, size_t *n,
                         prx_pipe_result *r) {
  pipe_iq_sink s;
  prx_pipe_config c = pipe_iq_config(rd, block, readers, &s, y);
  s.pause_us = slow_compute ? 200 : 0;
  return pipe_iq_run(&c, r, n);
}

typedef struct {
  const char *path;
  off_t at;
  int done;
} cutter;

static void *cut_later(void *arg) {
  cutter *c = arg;
  usleep(2000);
  c->done = truncate(c->path, c->at) == 0;
  return NULL;
}

static void test_files(const uint32_t *x, const uint32_t *ref, uint32_t *y) {
  pipe_files files;
  if (!pipe_files_make(&files, "test_pipe_readers", x, N_SAMPLES)) return;
  const char *raw = files.raw;
  const char *paths[] = {raw, files.meta, files.archive};
  for (int i = 0; i < 3; i++)
    for (int readers = 2; readers <= 5; readers += 3) {
      prx_iq_reader *rd = NULL;
      CHECK_OK(prx_iq_open(paths[i], PRX_CI16, &rd));
      if (!rd) continue;
      CHECK(prx_iq_reader_positional(rd), "%s: not positional", paths[i]);
      size_t n = 0;
      prx_pipe_result r;
      CHECK_OK(iq_run(rd, 1700, readers, y, &n, &r));
      CHECK(n == N_SAMPLES && !memcmp(y, ref, 4 * N_SAMPLES) && r.end_of_stream,
            "%s, %d readers: %zu samples, the output differs", paths[i], readers, n);
      prx_iq_close(rd);
    }
  /* after sequential reads (a detection's look-ahead) the positional stream goes on from there */
  prx_iq_reader *rd = NULL;
  CHECK_OK(prx_iq_open(raw, PRX_CI16, &rd));
  if (rd) {
    size_t got = 0;
    CHECK_OK(prx_iq_read(rd, y, 1234, &got));
    CHECK(got == 1234 && prx_iq_reader_positional(rd), "look-ahead of %zu samples", got);
    uint32_t *z = malloc(4 * N_SAMPLES);
    size_t n = 0;
    prx_pipe_result r;
    CHECK_OK(iq_run(rd, 1000, 3, z, &n, &r));
    CHECK(n == N_SAMPLES - 1234 && pipe_hash_prefix_ok(x + 1234, z, n, 0),
          "after a look-ahead: %zu samples, the output differs", n);
    free(z);
    prx_iq_close(rd);
  }
  /* standard input is no regular file: one sequential reader */
  rd = NULL;
  CHECK_OK(prx_iq_open("-", PRX_CI16, &rd));
  CHECK(rd && !prx_iq_reader_positional(rd), "standard input taken as positional");
  prx_iq_close(rd);
  /* a trailing partial sample: the complete samples, then the truncation */
  pipe_write_file(raw, x, 4 * 4321 + 3);
  rd = NULL;
  CHECK_OK(prx_iq_open(raw, PRX_CI16, &rd));
  if (rd) {
    size_t n = 0;
    prx_pipe_result r;
    prx_status st = iq_run(rd, 1000, 4, y, &n, &r);
    CHECK(st == PRX_ERR_TRUNCATED && r.failed == PRX_PIPE_READ && r.samples_read == 4321 &&
              n == 4321 && !memcmp(y, ref, 4321 * 4) &&
              strstr(prx_last_error(), "ends inside a sample"),
          "partial sample: status %d, %llu read, %zu computed: %s", st,
          (unsigned long long)r.samples_read, n, prx_last_error());
    prx_iq_close(rd);
  }
  /* a file cut while several readers read it (slow compute: the cut lands mid-stream): the
   * stream ends at the first short block, no signal, every sample handed over is the file's */
  size_t big = (size_t)N_SAMPLES * 40;
  uint32_t *xx = malloc(4 * big), *yy = malloc(4 * big);
  for (size_t i = 0; i < big; i++) xx[i] = x[i % N_SAMPLES] ^ (uint32_t)(i / N_SAMPLES);
  pipe_write_file(raw, xx, 4 * big);
  rd = NULL;
  CHECK_OK(prx_iq_open(raw, PRX_CI16, &rd));
  if (rd && xx && yy) {
    cutter cut = {raw, (off_t)4 * (big / 3) + 2, 0};
    pthread_t t;
    pthread_create(&t, NULL, cut_later, &cut);
    size_t n = 0;
    prx_pipe_result r;
    slow_compute = 1;
    prx_status st = iq_run(rd, 4096, 4, yy, &n, &r);
    slow_compute = 0;
    pthread_join(t, NULL);
    CHECK(cut.done && pipe_hash_prefix_ok(xx, yy, n, 0) && n == r.samples_read && n < big &&
              (st == PRX_OK || st == PRX_ERR_TRUNCATED),
          "file cut while read: status %d, %zu samples (%s)", st, n, st ? prx_last_error() : "ok");
    printf("file cut at sample %zu while read: %zu samples handed over, status %d\n", big / 3, n,
           (int)st);
    prx_iq_close(rd);
  }
  free(xx);
  free(yy);
  pipe_files_remove(&files);
}

static void test_lazy_buffers(const uint32_t *x, const uint32_t *ref, uint32_t *y, size_t cap) {
  /* 3 readers, 6 input blocks, 3 output slots made up front: the readers make their blocks on
   * first use, and a block that cannot be made (the hook fails its k-th allocation) ends the
   * stream there as a set-up error, every block handed over before it computed */
  for (int k = 0; k <= 8; k++) {
    sim s;
    prx_pipe_config c = sim_config(&s, x, y, cap, 1000, 3, 6, 50 + k);
    pipe_alloc_count counts = {0};
    atomic_store(&counts.fail_at, k);
    c.alloc = pipe_count_alloc;
    c.free = pipe_count_free;
    c.alloc_ctx = &counts;
    prx_pipe_result r;
    prx_status st = prx_pipe_run(&c, &r);
    if (k == 0) {
      CHECK(st == PRX_OK && s.y_n == N_SAMPLES + FLUSH_WORDS && !memcmp(y, ref, 4 * s.y_n),
            "lazy buffers: %s", prx_last_error());
    } else if (k <= 3) { /* the output slots (3), made up front */
      CHECK(st == PRX_ERR_NOMEM && r.failed == PRX_PIPE_SETUP && r.samples_computed == 0,
            "allocation %d failing: status %d stage %d", k, st, r.failed);
    } else {
      CHECK(st == PRX_ERR_NOMEM && r.failed == PRX_PIPE_SETUP && r.flushed &&
                r.samples_computed == r.samples_read && r.samples_read % 1000 == 0 &&
                prefix_ok(x, y, s.y_n, (size_t)r.samples_read) &&
                strstr(prx_last_error(), "cannot allocate an input block"),
            "allocation %d failing: status %d stage %d, %llu read: %s", k, st, r.failed,
            (unsigned long long)r.samples_read, prx_last_error());
    }
    int allocs = atomic_load(&counts.allocs), frees = atomic_load(&counts.frees);
    CHECK(frees == allocs - (k > 0 && k <= allocs), "allocation %d failing: %d made, %d freed", k,
          allocs, frees);
  }
}

static void test_config(const uint32_t *x, uint32_t *y, size_t cap) {
  sim s;
  prx_pipe_config c = sim_config(&s, x, y, cap, 100, 65, 70, 1);
  CHECK(prx_pipe_run(&c, NULL) == PRX_ERR_INVALID, "65 readers accepted");
  c = sim_config(&s, x, y, cap, 100, -1, 4, 1);
  CHECK(prx_pipe_run(&c, NULL) == PRX_ERR_INVALID, "-1 readers accepted");
  CHECK(atomic_load(&s.reads) == 0, "a refused configuration read the input");
}

int main(void) {
  uint32_t *x = malloc(4 * N_SAMPLES), *ref = malloc(4 * (N_SAMPLES + FLUSH_WORDS));
  size_t cap = 2 * N_SAMPLES;
  uint32_t *y = malloc(4 * cap);
  pipe_test_input(20261201, x, N_SAMPLES, ref);
  test_identity(x, ref, y, cap);
  test_read_errors(x, y, cap);
  test_stop(x, y, cap);
  test_files(x, ref, y);
  test_lazy_buffers(x, ref, y, cap);
  test_config(x, y, cap);
  free(x);
  free(ref);
  free(y);
  return test_finish("test_pipeline_readers");
}
