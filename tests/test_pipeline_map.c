/* The input in place (src/pipeline/pipe_map.c) under the host pipeline, with a pinning hook that
 * records the ranges instead of the CUDA module's (no GPU needed): the stream handed to compute is
 * the file's, byte for byte, for raw files and SigMF data files, with blocks inside one chunk
 * handed over in place and the others (across two chunks, a chunk that could not be pinned) read;
 * at most window bytes are pinned at a time and every pinned range is unpinned; a trailing
 * partial sample is the readers' truncation error; a file cut after the map was opened ends the
 * stream as the readers do, with no signal (the CPU never touches the mapping), and a file grown
 * after it is read to its new end (no view); a stop request (Ctrl-C) ends the reading at a block
 * boundary with every block handed over computed and every pin undone; a look-ahead read
 * after the open (rx --detect) starts the views after it; a gated map pins nothing before its
 * start (its blocks are read meanwhile); an archive member (not on a page) and
 * standard input are refused as unsupported.
 *
 * The compute stage is the running hash of tests/support/pipe_test.h. */
#include "pipe_test.h"
#include "testutil.h"

#include "core/internal.h"
#include "io/io_internal.h"
#include "pipeline/pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_SAMPLES 30000
#define CHUNK ((size_t)16384) /* 4 pages: 4096 samples of ci16 */
#define WINDOW (4 * CHUNK)
#define GROWN 1000 /* samples appended to a file after its map is made */

typedef struct {
  pthread_mutex_t mu;
  long pins, unpins, failed;
  size_t pinned, max_pinned;
  int fail_chunk; /* the pin of this chunk fails (-1 never) */
  const unsigned char *base;
  size_t lens[64];
} pin_log;

/* the map's pin hook: records the range (chunk i at base + i * CHUNK), never reads it */
static prx_status log_pin(void *ctx, void *p, size_t bytes) {
  pin_log *l = ctx;
  pthread_mutex_lock(&l->mu);
  size_t c = l->base ? (size_t)((const unsigned char *)p - l->base) / CHUNK : 0;
  if (!l->base && ((uintptr_t)p % 4096 == 0)) l->base = p; /* chunk 0 is pinned first */
  prx_status st = PRX_OK;
  if ((int)c == l->fail_chunk) {
    l->failed++;
    st = prx_fail(PRX_ERR_DEVICE, "injected pin failure");
  } else {
    l->pins++;
    l->pinned += bytes;
    if (l->pinned > l->max_pinned) l->max_pinned = l->pinned;
    if (c < 64) l->lens[c] = bytes;
  }
  pthread_mutex_unlock(&l->mu);
  return st;
}

static void log_unpin(void *ctx, void *p) {
  pin_log *l = ctx;
  pthread_mutex_lock(&l->mu);
  size_t c = (size_t)((const unsigned char *)p - l->base) / CHUNK;
  l->unpins++;
  l->pinned -= c < 64 ? l->lens[c] : 0;
  pthread_mutex_unlock(&l->mu);
}

static int no_view_start; /* the runs leave the map's start out (a gated map stays shut) */

/* An input file mapped with the logging pins: its reader, the pins' log, the map and, once
 * closed, the map's figures. */
typedef struct {
  prx_iq_reader *rd;
  pin_log log;
  prx_pipe_map *m;
  prx_pipe_map_stats st;
} mapped;

/* Opens path as ci16 and maps it (chunks of CHUNK, a window of WINDOW, 3 threads; the pin of
 * chunk fail_chunk fails; gated: no pins before the start); 0 where the file did not open. */
static int map_file(mapped *t, const char *path, int fail_chunk, int gated) {
  memset(t, 0, sizeof *t);
  CHECK_OK(prx_iq_open(path, PRX_CI16, &t->rd));
  if (!t->rd) return 0;
  pin_log *l = &t->log;
  pthread_mutex_init(&l->mu, NULL);
  l->fail_chunk = fail_chunk;
  prx_pipe_map_config c = prx_pipe_map_config_default();
  c.threads = 3;
  c.chunk_bytes = CHUNK;
  c.window_bytes = WINDOW;
  c.gated = gated;
  c.pin = log_pin;
  c.unpin = log_unpin;
  c.pin_ctx = l;
  CHECK_OK(prx_pipe_map_open(t->rd, &c, &t->m));
  return 1;
}

/* The pipeline over t's reader with its map (readers threads, block samples) into sink s. */
static prx_pipe_config map_config(mapped *t, size_t block, int readers, pipe_iq_sink *s,
                                  uint32_t *y) {
  prx_pipe_config c = pipe_iq_config(t->rd, block, readers, s, y);
  c.view_at = prx_pipe_map_view_at;
  c.view_done = prx_pipe_map_view_done;
  c.view_start = no_view_start ? NULL : prx_pipe_map_start;
  c.view_ctx = t->m;
  return c;
}

/* Runs it; *n the samples computed (0 after a position error). */
static prx_status map_run(mapped *t, size_t block, int readers, uint32_t *y, size_t *n,
                          prx_pipe_result *r) {
  if (!t->m) return PRX_ERR_INTERNAL;
  pipe_iq_sink s;
  prx_pipe_config c = map_config(t, block, readers, &s, y);
  return pipe_iq_run(&c, r, n);
}

/* Takes the map's figures into t->st, closes the map and the reader. */
static void map_close(mapped *t) {
  prx_pipe_map_get_stats(t->m, &t->st);
  prx_pipe_map_close(t->m);
  pthread_mutex_destroy(&t->log.mu);
  prx_iq_close(t->rd);
}

static void test_identity(const pipe_files *f, const uint32_t *ref, uint32_t *y) {
  const char *paths[] = {f->raw, f->meta};
  static const size_t blocks[] = {1024, 1000, 4096, 7, N_SAMPLES};
  for (int i = 0; i < 2; i++)
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
      for (int readers = 1; readers <= 4; readers += 3) {
        for (int fail = -1; fail <= 2; fail += 3) {
          mapped t;
          if (!map_file(&t, paths[i], fail, 0)) continue;
          size_t n = 0;
          prx_pipe_result r;
          prx_status st = map_run(&t, blocks[b], readers, y, &n, &r);
          map_close(&t);
          const prx_pipe_map_stats *ms = &t.st;
          CHECK(st == PRX_OK && n == N_SAMPLES && !memcmp(y, ref, 4 * N_SAMPLES) &&
                    r.end_of_stream && r.samples_read == N_SAMPLES,
                "%s, block %zu, %d readers, pin %d failing: status %d, %zu samples, the output "
                "differs (%s)",
                paths[i], blocks[b], readers, fail, st, n, st ? prx_last_error() : "");
          /* blocks inside a pinned chunk come in place, the others are read (1000 samples:
           * every fourth or so straddles two chunks; the whole stream in one block, all) */
          int whole = blocks[b] == N_SAMPLES;
          CHECK((ms->views > 0) == !whole && (blocks[b] != 1000 || ms->reads > 0) &&
                    (!whole || ms->reads > 0) &&
                    (fail < 0 ? ms->chunks_failed == 0
                     : whole  ? ms->chunks_failed <= 1 /* the run may end before the pin */
                              : ms->chunks_failed == 1),
                "%s, block %zu, pin %d failing: %llu in place, %llu read, %u failed", paths[i],
                blocks[b], fail, (unsigned long long)ms->views, (unsigned long long)ms->reads,
                ms->chunks_failed);
          CHECK(t.log.pins == t.log.unpins && t.log.pinned == 0 &&
                    t.log.max_pinned <= WINDOW + CHUNK,
                "%s, block %zu: %ld pins, %ld unpins, %zu bytes pinned at most", paths[i],
                blocks[b], t.log.pins, t.log.unpins, t.log.max_pinned);
        }
      }
}

/* A gated map pins nothing before prx_pipe_map_start (the pipeline's view_start, called once its
 * buffers are made): its blocks are read meanwhile. */
static void test_gated(const pipe_files *f, const uint32_t *ref, uint32_t *y) {
  for (int start = 0; start < 2; start++) {
    mapped t;
    if (!map_file(&t, f->raw, -1, 1)) continue;
    usleep(2000);
    long early = t.log.pins;
    size_t n = 0;
    prx_pipe_result r;
    no_view_start = !start; /* else the pipeline starts it once its buffers are made */
    prx_status st = map_run(&t, 4096, 2, y, &n, &r);
    no_view_start = 0;
    map_close(&t);
    CHECK(st == PRX_OK && n == N_SAMPLES && !memcmp(y, ref, 4 * N_SAMPLES) && early == 0 &&
              (start ? t.st.views > 0 : t.st.views == 0 && t.log.pins == 0) &&
              t.log.pins == t.log.unpins,
          "gated map, %s: status %d, %zu samples, %ld pins before, %llu in place",
          start ? "started" : "never started", st, n, early, (unsigned long long)t.st.views);
  }
}

static void test_refused(const pipe_files *f) {
  prx_iq_reader *rd = NULL;
  prx_pipe_map *m = NULL;
  CHECK_OK(prx_iq_open(f->archive, PRX_CI16, &rd));
  if (rd) CHECK(prx_pipe_map_open(rd, NULL, &m) == PRX_ERR_UNSUPPORTED && !m, "archive mapped");
  prx_iq_close(rd);
  rd = NULL;
  CHECK_OK(prx_iq_open("-", PRX_CI16, &rd));
  if (rd) CHECK(prx_pipe_map_open(rd, NULL, &m) == PRX_ERR_UNSUPPORTED && !m, "stdin mapped");
  prx_iq_close(rd);
  /* a look-ahead before the open that leaves the next sample off a page */
  rd = NULL;
  CHECK_OK(prx_iq_open(f->raw, PRX_CI16, &rd));
  size_t got = 0;
  uint32_t tmp[8];
  if (rd) CHECK_OK(prx_iq_read(rd, tmp, 3, &got));
  if (rd) CHECK(prx_pipe_map_open(rd, NULL, &m) == PRX_ERR_UNSUPPORTED && !m, "off a page");
  prx_iq_close(rd);
}

static void test_ends(const pipe_files *f, const uint32_t *x, const uint32_t *ref, uint32_t *y) {
  /* a look-ahead after the open (rx --detect): the views start after it */
  mapped t;
  if (map_file(&t, f->raw, -1, 0)) {
    size_t got = 0, n = 0;
    CHECK_OK(prx_iq_read(t.rd, y, 1234, &got));
    prx_pipe_result r;
    prx_status st = map_run(&t, 2048, 2, y, &n, &r);
    map_close(&t);
    CHECK(st == PRX_OK && got == 1234 && n == N_SAMPLES - 1234 &&
              pipe_hash_prefix_ok(x + 1234, y, n, 0),
          "look-ahead after the open: status %d, %zu samples", st, n);
  }
  /* a trailing partial sample: the complete samples, then the readers' truncation error */
  char part[200];
  snprintf(part, sizeof part, "%s.part", f->raw);
  pipe_write_file(part, x, 4 * 20000 + 3);
  if (map_file(&t, part, -1, 0)) {
    size_t n = 0;
    prx_pipe_result r;
    prx_status st = map_run(&t, 4096, 2, y, &n, &r);
    map_close(&t);
    CHECK(st == PRX_ERR_TRUNCATED && r.failed == PRX_PIPE_READ && n == 20000 &&
              !memcmp(y, ref, 4 * 20000) && strstr(prx_last_error(), "ends inside a sample"),
          "partial sample: status %d, %zu samples: %s", st, n, prx_last_error());
  }
  /* the file cut after the open (and after some chunks were pinned): no view of the cut file,
   * the reads end the stream at the cut, no signal */
  pipe_write_file(part, x, 4 * N_SAMPLES);
  if (map_file(&t, part, -1, 0)) {
    usleep(2000);
    CHECK(truncate(part, 4 * 10000 + 2) == 0, "truncate");
    size_t n = 0;
    prx_pipe_result r;
    prx_status st = map_run(&t, 1024, 3, y, &n, &r);
    map_close(&t);
    CHECK(st == PRX_ERR_TRUNCATED && n == 10000 && !memcmp(y, ref, 4 * 10000) && t.st.views == 0 &&
              t.log.pins == t.log.unpins,
          "file cut after the open: status %d, %zu samples, %llu in place", st, n,
          (unsigned long long)t.st.views);
  }
  /* the file grown after the open: no view (the file is not the one mapped), the reads take
   * the stream to the file's new end */
  pipe_write_file(part, x, 4 * N_SAMPLES);
  if (map_file(&t, part, -1, 0)) {
    FILE *fa = fopen(part, "ab");
    CHECK(fa && fwrite(x, 4, GROWN, fa) == GROWN && fclose(fa) == 0, "append to %s", part);
    size_t n = 0;
    prx_pipe_result r;
    prx_status st = map_run(&t, 1024, 3, y, &n, &r);
    map_close(&t);
    uint32_t *xg = malloc(4 * (N_SAMPLES + GROWN)); /* the file now: x, then its first GROWN */
    if (xg) {
      memcpy(xg, x, 4 * N_SAMPLES);
      memcpy(xg + N_SAMPLES, x, 4 * GROWN);
    }
    CHECK(xg && st == PRX_OK && r.end_of_stream && n == N_SAMPLES + GROWN &&
              pipe_hash_prefix_ok(xg, y, n, 0) && t.st.views == 0 && t.st.reads > 0 &&
              t.log.pins == t.log.unpins,
          "file grown after the open: status %d, %zu samples, %llu in place", st, n,
          (unsigned long long)t.st.views);
    free(xg);
  }
  unlink(part);
}

/* should_stop (ctx is the sink): true from the stop_polls-th poll on (the readers poll before
 * each block) */
static atomic_int polls;
static int stop_polls;

static int stop_after(void *ctx) {
  (void)ctx;
  return atomic_fetch_add(&polls, 1) >= stop_polls;
}

/* A stop request (Ctrl-C) under the map: the reading ends at a block boundary, every block handed
 * over (in place or read) is computed, and the close unpins every pinned chunk. */
static void test_stop(const pipe_files *f, const uint32_t *x, uint32_t *y) {
  for (int k = 3; k <= 19; k += 8) {
    mapped t;
    if (!map_file(&t, f->raw, 2, 0)) continue;
    atomic_store(&polls, 0);
    stop_polls = k;
    pipe_iq_sink s;
    prx_pipe_config c = map_config(&t, 1024, 3, &s, y);
    c.should_stop = stop_after;
    size_t n = 0;
    prx_pipe_result r;
    prx_status st = t.m ? pipe_iq_run(&c, &r, &n) : PRX_ERR_INTERNAL;
    map_close(&t);
    CHECK(st == PRX_OK && r.stopped && !r.end_of_stream && r.samples_read % 1024 == 0 &&
              r.samples_read < N_SAMPLES && n == r.samples_read && r.flushed &&
              pipe_hash_prefix_ok(x, y, n, 0),
          "stop after %d polls: status %d, %zu samples computed of %llu read", k, st, n,
          (unsigned long long)r.samples_read);
    CHECK(t.st.views > 0 && t.log.pins == t.log.unpins && t.log.pinned == 0,
          "stop after %d polls: %llu in place, %ld pins, %ld unpins", k,
          (unsigned long long)t.st.views, t.log.pins, t.log.unpins);
  }
}

int main(void) {
  uint32_t *x = malloc(4 * N_SAMPLES), *ref = malloc(4 * (N_SAMPLES + PIPE_FLUSH_WORDS));
  uint32_t *y = malloc(4 * 2 * N_SAMPLES);
  pipe_test_input(20261202, x, N_SAMPLES, ref);
  pipe_files files;
  if (pipe_files_make(&files, "test_pipe_map", x, N_SAMPLES)) {
    test_identity(&files, ref, y);
    test_gated(&files, ref, y);
    test_refused(&files);
    test_ends(&files, x, ref, y);
    test_stop(&files, x, y);
    pipe_files_remove(&files);
  }
  free(x);
  free(ref);
  free(y);
  return test_finish("test_pipeline_map");
}
