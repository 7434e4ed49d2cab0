/* prx_iq_reader_window: a time range of a recording. For a raw file, a SigMF archive, real
 * samples from a file (the half-band converter, computed positionally) and from a pipe (read
 * through the converter and dropped), and raw samples from a pipe: every window (random starts
 * and lengths, the stream's end included) read in pieces of random size gives exactly the whole
 * stream's samples first .. first + count - 1, read without a window; the extent and the count
 * are the window's; positional reads count from the window's start and stop at its end; a start
 * past a file's end, a window after reads, a window of nothing and a pipe that ends before the
 * start are refused with a message. */
#include "pipe_test.h"
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 50000 /* stored samples of the streams */

typedef enum { RAW_FILE, ARCHIVE, REAL_FILE, REAL_PIPE, RAW_PIPE } input_kind;
static const char *const kind_name[] = {"raw file", "SigMF archive", "real file", "real pipe",
                                        "raw pipe"};

static pipe_files files;
static char real_path[160];
static uint32_t words[N];
static test_stdin_feed feed = {-1, -1};

static void feed_stdin(const void *bytes, size_t n) {
  test_stdin_feed_start(&feed, bytes, n, 77, 5000);
}

static void close_input(prx_iq_reader *r) {
  prx_iq_close(r);
  if (feed.pid > 0) test_stdin_feed_stop(&feed);
}

static prx_iq_reader *open_input(input_kind k) {
  prx_iq_reader *r = NULL;
  switch (k) {
  case RAW_FILE: CHECK_OK(prx_iq_open(files.raw, PRX_CI16, &r)); break;
  case ARCHIVE: CHECK_OK(prx_iq_open(files.archive, PRX_CF32, &r)); break;
  case REAL_FILE: CHECK_OK(prx_iq_open_real(real_path, PRX_REAL_RI16, &r)); break;
  case REAL_PIPE:
    feed_stdin(words, sizeof words / 2 * 2);
    CHECK_OK(prx_iq_open_real("-", PRX_REAL_RI16, &r));
    break;
  case RAW_PIPE:
    feed_stdin(words, sizeof words);
    CHECK_OK(prx_iq_open("-", PRX_CI16, &r));
    break;
  }
  return r;
}

/* The samples of r to its end in reads of random size (at most cap); *end the last status. */
static unsigned char *read_all(prx_iq_reader *r, test_rng *rng, size_t ss, size_t cap, size_t *got,
                               prx_status *end) {
  unsigned char *buf = malloc(cap * ss + ss);
  size_t have = 0, n = 0;
  prx_status st;
  do {
    size_t ask = 1 + (size_t)(test_rng_u64(rng) % 3000);
    if (ask > cap + 1 - have) ask = cap + 1 - have;
    st = prx_iq_read(r, buf + have * ss, ask, &n);
    have += n;
  } while (!st && n && have <= cap);
  *got = have;
  *end = st;
  return buf;
}

static void windows(test_rng *rng, input_kind k) {
  /* the whole stream, read without a window */
  prx_iq_reader *r = open_input(k);
  if (!r) return;
  const size_t ss = prx_format_size(prx_iq_reader_info(r)->format);
  size_t total = 0;
  prx_status end;
  unsigned char *all = read_all(r, rng, ss, 2 * N, &total, &end);
  close_input(r);
  CHECK(end == PRX_OK && total > N / 3, "%s: the whole stream: %zu samples, %s", kind_name[k],
        total, prx_strerror(end));
  const int file = k == RAW_FILE || k == ARCHIVE || k == REAL_FILE;
  for (int i = 0; i < 8; i++) {
    uint64_t first = i == 0 ? 0 : i == 1 ? total - 1 : test_rng_u64(rng) % total;
    uint64_t count = i % 3 == 2 ? UINT64_MAX : 1 + test_rng_u64(rng) % (total + 100);
    size_t want = total - first < count ? (size_t)(total - first) : (size_t)count;
    r = open_input(k);
    if (!r) continue;
    CHECK_OK(prx_iq_reader_window(r, first, count));
    uint64_t extent = 0;
    int known = prx_iq_reader_extent(r, &extent, NULL);
    CHECK(known == file && (!file || extent == want), "%s [%llu, +%llu): extent %d %llu (%zu)",
          kind_name[k], (unsigned long long)first, (unsigned long long)count, known,
          (unsigned long long)extent, want);
    CHECK(prx_iq_reader_window_start(r) == first, "%s: window start %llu", kind_name[k],
          (unsigned long long)prx_iq_reader_window_start(r));
    if (file && i % 2) { /* positional reads from the window's start, before any read */
      unsigned char buf[700 * 8];
      for (int j = 0; j < 20; j++) {
        uint64_t at = test_rng_u64(rng) % (want + 50);
        size_t max = 1 + (size_t)(test_rng_u64(rng) % 700), n = 0;
        CHECK_OK(prx_iq_read_at(r, buf, at, max, &n));
        size_t expect = at >= want ? 0 : want - at < max ? (size_t)(want - at) : max;
        CHECK(n == expect && !memcmp(buf, all + (first + at) * ss, n * ss),
              "%s [%llu, +%zu): read_at %llu + %zu gave %zu samples (%zu) or others", kind_name[k],
              (unsigned long long)first, want, (unsigned long long)at, max, n, expect);
      }
    }
    size_t got = 0;
    unsigned char *win = read_all(r, rng, ss, want, &got, &end);
    CHECK(end == PRX_OK && got == want && !memcmp(win, all + first * ss, want * ss),
          "%s [%llu, +%llu): %zu samples (%zu), %s: %s", kind_name[k], (unsigned long long)first,
          (unsigned long long)count, got, want, prx_strerror(end),
          end ? prx_last_error() : "samples differ");
    CHECK(prx_iq_reader_samples(r) == want, "%s: the reader counts %llu (%zu)", kind_name[k],
          (unsigned long long)prx_iq_reader_samples(r), want);
    free(win);
    close_input(r);
  }
  /* a pipe that ends before the start; a file whose start is past its end */
  r = open_input(k);
  if (r) {
    prx_status st = prx_iq_reader_window(r, total + (file ? 0 : 10), 5);
    if (file) {
      CHECK(st == PRX_ERR_INVALID && strstr(prx_last_error(), "past its end"),
            "%s: a start past the end: %s (%s)", kind_name[k], prx_strerror(st), prx_last_error());
    } else {
      unsigned char buf[64];
      size_t n = 9;
      CHECK_OK(st);
      st = prx_iq_read(r, buf, 4, &n);
      CHECK(st == PRX_ERR_INVALID && n == 0 && strstr(prx_last_error(), "before the start"),
            "%s: ended before the start: %s (%s)", kind_name[k], prx_strerror(st),
            prx_last_error());
    }
    close_input(r);
  }
  free(all);
}

static void refused(void) {
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(files.raw, PRX_CI16, &r));
  prx_status st = prx_iq_reader_window(r, 10, 0);
  CHECK(st == PRX_ERR_INVALID, "a window of no samples: %s", prx_strerror(st));
  unsigned char buf[16];
  size_t n = 0;
  CHECK_OK(prx_iq_read(r, buf, 2, &n));
  st = prx_iq_reader_window(r, 10, 5);
  CHECK(st == PRX_ERR_INVALID && strstr(prx_last_error(), "before reading"),
        "a window after reads: %s (%s)", prx_strerror(st), prx_last_error());
  prx_iq_close(r);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261204);
  for (size_t i = 0; i < N; i++) words[i] = (uint32_t)test_rng_u64(&rng);
  if (!pipe_files_make(&files, "window", words, N)) return 1;
  snprintf(real_path, sizeof real_path, "%s/real.ri16", files.dir);
  pipe_write_file(real_path, words, sizeof words);
  for (input_kind k = RAW_FILE; k <= RAW_PIPE; k++) windows(&rng, k);
  refused();
  remove(real_path);
  pipe_files_remove(&files);
  return test_finish("test_io_window");
}
