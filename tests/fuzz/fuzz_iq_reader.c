/* Fuzz target: the raw IQ reader (prx_iq_open / prx_iq_read) on an arbitrary byte stream, in
 * each readable format, from a regular file or from standard input fed by a pipe in pieces.
 *
 * Input layout: byte 0 picks the format (bits 0-1), the source (bit 2: pipe on standard input)
 * and whether the read size changes from call to call (bit 3); byte 1 is the read size in
 * samples (1..64), byte 2 seeds the pipe writer's chunk sizes; with bit 4 (a regular file), a
 * window (prx_iq_reader_window): byte 3 its first sample, byte 4 its count (0: to the end); the
 * rest is the stream.
 *
 * Invariants (include/polyrx/io.h): each read returns min(max, complete samples left) samples
 * (fewer, but not none, from a pipe when a signal such as libFuzzer's timer cuts the wait; with
 * none complete, PRX_ERR_IO "interrupted" and the stream reads on), byte for byte the stream's; the
 * count is 0 at the end only; after floor(len / size) samples, a stream with a partial sample left
 * gives PRX_ERR_TRUNCATED naming the leftover byte count, every time it is asked again;
 * prx_iq_reader_samples counts what was handed out. A window is refused when it starts at or
 * past the last whole sample, and otherwise reads as the stream cut to it (a partial sample said
 * only where the window goes past the last whole sample). */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

static const prx_format formats[4] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};

/* The regular file: one memfd made once and rewritten for each input, opened by path. */
static int file_fd = -1;
static char file_path[64];

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    FUZZ_CHECK(w > 0, "write to the test file or pipe failed: %s", strerror(errno));
    p += w;
    n -= (size_t)w;
  }
}

static void put_file(const uint8_t *p, size_t n) {
  if (file_fd < 0) {
    file_fd = memfd_create("polyrx-fuzz-iq", MFD_CLOEXEC);
    FUZZ_CHECK(file_fd >= 0, "memfd_create failed: %s", strerror(errno));
    snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
  }
  FUZZ_CHECK(ftruncate(file_fd, 0) == 0 && lseek(file_fd, 0, SEEK_SET) == 0, "cannot reset");
  write_all(file_fd, p, n);
}

/* The pipe's writer: the stream in chunks of 1..256 bytes (sizes from a small LCG), so that the
 * reader sees short reads that split samples. */
typedef struct {
  int fd;
  const uint8_t *p;
  size_t n;
  uint32_t seed;
} writer_arg;

static void *writer(void *v) {
  writer_arg *a = v;
  uint32_t x = a->seed * 2654435761u + 1;
  size_t off = 0;
  while (off < a->n) {
    x = x * 1664525u + 1013904223u;
    size_t k = 1 + (x >> 24);
    if (k > a->n - off) k = a->n - off;
    write_all(a->fd, a->p + off, k);
    off += k;
    if (x & 0x100) sched_yield();
  }
  close(a->fd);
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  uint8_t mode = fuzz_u8(&b), max0 = fuzz_u8(&b), wseed = fuzz_u8(&b);
  prx_format fmt = formats[mode & 3];
  int use_pipe = (mode >> 2) & 1, vary = (mode >> 3) & 1, windowed = !use_pipe && (mode >> 4) & 1;
  uint64_t w_first = 0, w_count = UINT64_MAX;
  if (windowed) {
    w_first = fuzz_u8(&b);
    uint8_t c = fuzz_u8(&b);
    if (c) w_count = c;
  }
  const uint8_t *stream = b.p;
  size_t len = b.n, ss = prx_format_size(fmt);
  size_t expect = len / ss, rem = len % ss;

  int saved_stdin = -1, pfd[2] = {-1, -1};
  pthread_t th;
  writer_arg wa;
  prx_iq_reader *r = NULL;
  prx_status st;
  fuzz_clear_error();
  if (use_pipe) {
    FUZZ_CHECK(pipe(pfd) == 0, "pipe failed: %s", strerror(errno));
    saved_stdin = dup(STDIN_FILENO);
    FUZZ_CHECK(saved_stdin >= 0 && dup2(pfd[0], STDIN_FILENO) == STDIN_FILENO, "dup2 failed");
    close(pfd[0]);
    wa = (writer_arg){pfd[1], stream, len, wseed};
    FUZZ_CHECK(pthread_create(&th, NULL, writer, &wa) == 0, "pthread_create failed");
    st = prx_iq_open("-", fmt, &r);
  } else {
    put_file(stream, len);
    st = prx_iq_open(file_path, fmt, &r);
  }
  FUZZ_CHECK(st == PRX_OK && r, "prx_iq_open failed: %s", prx_last_error());
  FUZZ_CHECK(prx_iq_reader_info(r)->format == fmt, "format %d", (int)prx_iq_reader_info(r)->format);
  if (windowed) {
    st = prx_iq_reader_window(r, w_first, w_count);
    if (w_first >= expect) {
      FUZZ_CHECK(st == PRX_ERR_INVALID, "a window from %llu of %zu samples: %d",
                 (unsigned long long)w_first, expect, (int)st);
      FUZZ_CHECK_ERROR(st, "prx_iq_reader_window");
      prx_iq_close(r);
      return 0;
    }
    FUZZ_CHECK(st == PRX_OK, "window [%llu, +%llu) refused: %s", (unsigned long long)w_first,
               (unsigned long long)w_count, prx_last_error());
    stream += w_first * ss;
    expect -= (size_t)w_first;
    /* a window that ends at or before the last whole sample leaves a partial one out */
    if (w_count <= expect) expect = (size_t)w_count, rem = 0;
  }

  size_t got = 0; /* complete samples read */
  uint32_t x = max0;
  int done = 0;
  for (int calls = 0; !done; calls++) {
    FUZZ_CHECK(calls < 100000, "the reader does not come to an end");
    size_t max = 1 + max0 % 64;
    if (vary) {
      x = x * 1664525u + 1013904223u;
      max = (x >> 16) % 65; /* 0 sometimes: a read of nothing */
    }
    size_t nb = max * ss;
    uint8_t *buf = malloc(nb ? nb : 1); /* exactly sized: ASan sees an overrun */
    FUZZ_CHECK(buf, "out of memory");
    size_t n = 12345;
    fuzz_clear_error();
    st = prx_iq_read(r, buf, max, &n);
    if (max == 0) {
      FUZZ_CHECK(st == PRX_OK && n == 0, "a read of 0 samples gave %d, n = %zu", (int)st, n);
      free(buf);
      continue;
    }
    if (st == PRX_ERR_IO && use_pipe && strstr(prx_last_error(), "interrupted")) {
      free(buf); /* a signal (libFuzzer's timer) cut the wait with no complete sample: go on */
      continue;
    }
    if (st == PRX_OK) {
      size_t want = expect - got < max ? expect - got : max;
      /* a signal may cut a pipe's wait short, handing out what is complete (never nothing) */
      FUZZ_CHECK(n == want || (use_pipe && n > 0 && n < want),
                 "read %zu samples, expected %zu (max %zu, %zu of %zu read)", n, want, max, got,
                 expect);
      FUZZ_CHECK(!memcmp(buf, stream + got * ss, n * ss), "samples %zu.. differ from the stream",
                 got);
      got += n;
      if (n == 0) {
        FUZZ_CHECK(rem == 0, "end of stream reported with %zu leftover bytes unreported", rem);
        done = 1;
      }
    } else {
      FUZZ_CHECK(st == PRX_ERR_TRUNCATED, "read failed: %d (%s) %s", (int)st, prx_strerror(st),
                 prx_last_error());
      FUZZ_CHECK(rem != 0 && got == expect,
                 "truncation reported after %zu of %zu samples with %zu leftover bytes", got,
                 expect, rem);
      char count[32];
      snprintf(count, sizeof count, "%zu leftover", rem);
      FUZZ_CHECK(strstr(prx_last_error(), count),
                 "message does not name the %zu leftover bytes: %s", rem, prx_last_error());
      done = 1;
    }
    free(buf);
  }
  /* the end is stable: asking again gives the same answer */
  uint8_t one[8];
  size_t n = 12345;
  fuzz_clear_error();
  st = prx_iq_read(r, one, 1, &n);
  FUZZ_CHECK(n == 0 && (rem ? st == PRX_ERR_TRUNCATED : st == PRX_OK),
             "a read after the end gave %d, n = %zu", (int)st, n);
  if (st) FUZZ_CHECK_ERROR(st, "prx_iq_read after the end");
  FUZZ_CHECK(prx_iq_reader_samples(r) == expect, "reader counted %llu samples, expected %zu",
             (unsigned long long)prx_iq_reader_samples(r), expect);
  prx_iq_close(r);

  if (use_pipe) {
    pthread_join(th, NULL);
    FUZZ_CHECK(dup2(saved_stdin, STDIN_FILENO) == STDIN_FILENO, "cannot restore stdin");
    close(saved_stdin);
  }
  return 0;
}
