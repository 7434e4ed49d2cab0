/* I/O: the raw/stdin/SigMF reader (every format, any chunking, pipes with short reads, a
 * truncated stream), SigMF metadata parsing (good and malformed), and the SigMF writer (round
 * trip through cJSON, write errors, an earlier run's files, a new file written whole, fault
 * injection at every write). */
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static int count_temp_files(const char *prefix);

static char *tmp_path(const char *name) { return test_path(tmpdir, name); }

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static unsigned char *random_bytes(test_rng *rng, size_t n) {
  unsigned char *b = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)test_rng_u64(rng);
  return b;
}

/* Reads all of r in chunks of random size 1..max_chunk; returns the bytes and the status that
 * ended the stream (PRX_OK at a clean end). */
static unsigned char *read_all(prx_iq_reader *r, test_rng *rng, size_t max_chunk, size_t *n_samples,
                               prx_status *end) {
  size_t ss = prx_format_size(prx_iq_reader_info(r)->format), cap = 1 << 16, n = 0;
  unsigned char *all = malloc(cap * ss);
  unsigned char *chunk = malloc(max_chunk * ss);
  *end = PRX_OK;
  for (;;) {
    size_t want = 1 + test_rng_u64(rng) % max_chunk, got = 0;
    prx_status st = prx_iq_read(r, chunk, want, &got);
    if (st) {
      *end = st;
      break;
    }
    CHECK(got <= want, "read returned %zu > %zu samples", got, want);
    if (got == 0) break;
    while (n + got > cap) all = realloc(all, (cap *= 2) * ss);
    memcpy(all + n * ss, chunk, got * ss);
    n += got;
  }
  free(chunk);
  *n_samples = n;
  return all;
}

static void test_raw_formats(test_rng *rng) {
  const prx_format fmts[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};
  for (size_t f = 0; f < 4; f++) {
    size_t ss = prx_format_size(fmts[f]), n = 5000 + test_rng_u64(rng) % 3000;
    unsigned char *data = random_bytes(rng, n * ss);
    write_file(tmp_path("raw.bin"), data, n * ss);
    const size_t chunks[] = {1, 7, 1000, 100000};
    for (size_t c = 0; c < 4; c++) {
      prx_iq_reader *r = NULL;
      CHECK_OK(prx_iq_open(tmp_path("raw.bin"), fmts[f], &r));
      if (!r) continue;
      const prx_iq_info *info = prx_iq_reader_info(r);
      CHECK(info->format == fmts[f] && !info->is_sigmf && info->sample_rate == 0,
            "raw info: format %d sigmf %d rate %g", (int)info->format, info->is_sigmf,
            info->sample_rate);
      size_t got;
      prx_status end;
      unsigned char *back = read_all(r, rng, chunks[c], &got, &end);
      CHECK(end == PRX_OK, "%s chunk %zu: stream ended with %s: %s", prx_format_name(fmts[f]),
            chunks[c], prx_strerror(end), prx_last_error());
      CHECK(got == n && !memcmp(back, data, n * ss), "%s chunk %zu: read %zu of %zu samples",
            prx_format_name(fmts[f]), chunks[c], got, n);
      CHECK(prx_iq_reader_samples(r) == n, "sample counter %llu, expected %zu",
            (unsigned long long)prx_iq_reader_samples(r), n);
      /* the end is sticky */
      size_t again = 1;
      CHECK(prx_iq_read(r, back, 4, &again) == PRX_OK && again == 0, "read after the end");
      free(back);
      prx_iq_close(r);
    }
    free(data);
  }
}

/* A stream fed through a pipe by a child in pieces of random sizes (short reads, samples split
 * across reads), ending cleanly or inside a sample. */
static void test_pipe(test_rng *rng, size_t extra_bytes) {
  size_t ss = 4, n = 20000, total = n * ss + extra_bytes;
  unsigned char *data = random_bytes(rng, total);
  test_stdin_feed feed;
  test_stdin_feed_start(&feed, data, total, 99, 777);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open("-", PRX_CI16, &r));
  size_t got = 0;
  prx_status end = PRX_OK;
  unsigned char *back = r ? read_all(r, rng, 3000, &got, &end) : NULL;
  if (extra_bytes == 0) {
    CHECK(end == PRX_OK, "pipe: ended with %s: %s", prx_strerror(end), prx_last_error());
  } else {
    CHECK(end == PRX_ERR_TRUNCATED, "pipe with %zu stray bytes: ended with %s", extra_bytes,
          prx_strerror(end));
    char want[64];
    snprintf(want, sizeof want, "%zu leftover byte", extra_bytes);
    CHECK(strstr(prx_last_error(), want) && strstr(prx_last_error(), "standard input"),
          "truncation message '%s' should say '%s' and name the input", prx_last_error(), want);
  }
  CHECK(got == n && back && !memcmp(back, data, n * ss), "pipe: read %zu of %zu samples", got, n);
  free(back);
  prx_iq_close(r);
  test_stdin_feed_stop(&feed);
  free(data);
}

static void on_alarm(int sig) { (void)sig; }

/* A signal during a wait with no complete sample: PRX_ERR_IO "interrupted", and the stream goes
 * on intact afterwards (the 3 bytes of a sample begun before the signal are kept). */
static void test_interrupted(void) {
  int fds[2];
  if (pipe(fds)) return;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm; /* no SA_RESTART: read(2) returns EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, &old);
  int saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open("-", PRX_CI16, &r));
  const unsigned char bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  if (write(fds[1], bytes, 3) != 3) perror("write");
  struct itimerval it = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &it, NULL);
  unsigned char buf[64];
  size_t n = 99;
  prx_status st = prx_iq_read(r, buf, 4, &n);
  CHECK(st == PRX_ERR_IO && n == 0 && strstr(prx_last_error(), "interrupted"),
        "interrupted wait: %s n=%zu '%s'", prx_strerror(st), n, prx_last_error());
  if (write(fds[1], bytes + 3, 5) != 5) perror("write");
  close(fds[1]);
  CHECK_OK(prx_iq_read(r, buf, 4, &n));
  CHECK(n == 2 && !memcmp(buf, bytes, 8), "after the interruption: %zu samples", n);
  CHECK_OK(prx_iq_read(r, buf, 4, &n));
  CHECK(n == 0, "end after the interruption");
  prx_iq_close(r);
  dup2(saved, 0);
  close(saved);
  sigaction(SIGALRM, &old, NULL);
}

static void test_truncated_file(test_rng *rng) {
  /* cf32: 8 bytes a sample; a file of 1001 samples and 5 bytes */
  size_t n = 1001;
  unsigned char *data = random_bytes(rng, n * 8 + 5);
  write_file(tmp_path("cut.cf32"), data, n * 8 + 5);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(tmp_path("cut.cf32"), PRX_CF32, &r));
  size_t got = 0;
  prx_status end;
  unsigned char *back = read_all(r, rng, 64, &got, &end);
  CHECK(end == PRX_ERR_TRUNCATED, "truncated cf32: ended with %s", prx_strerror(end));
  CHECK(strstr(prx_last_error(), "5 leftover byte") && strstr(prx_last_error(), "1001"),
        "message '%s' should give the 5 leftover bytes after 1001 samples", prx_last_error());
  CHECK(got == n && !memcmp(back, data, n * 8), "truncated: %zu of %zu whole samples read", got, n);
  /* it stays an error; it never turns into a clean end */
  size_t again;
  CHECK(prx_iq_read(r, back, 4, &again) == PRX_ERR_TRUNCATED && again == 0,
        "truncation not sticky");
  prx_iq_close(r);
  /* fewer bytes than one sample */
  write_file(tmp_path("tiny.ci16"), data, 3);
  CHECK_OK(prx_iq_open(tmp_path("tiny.ci16"), PRX_CI16, &r));
  CHECK(prx_iq_read(r, back, 10, &again) == PRX_ERR_TRUNCATED && again == 0,
        "3-byte ci16 file must be truncated");
  prx_iq_close(r);
  /* empty file: a clean, empty stream */
  write_file(tmp_path("empty.cu8"), data, 0);
  CHECK_OK(prx_iq_open(tmp_path("empty.cu8"), PRX_CU8, &r));
  CHECK(prx_iq_read(r, back, 10, &again) == PRX_OK && again == 0, "empty file");
  prx_iq_close(r);
  free(back);
  free(data);
}

static void test_open_errors(void) {
  prx_iq_reader *r = (prx_iq_reader *)1;
  CHECK(prx_iq_open(tmp_path("does-not-exist"), PRX_CF32, &r) == PRX_ERR_IO && r == NULL,
        "missing file must fail with PRX_ERR_IO");
  CHECK(strstr(prx_last_error(), "does-not-exist") && strstr(prx_last_error(), "No such file"),
        "message '%s' should name the file and the reason", prx_last_error());
  CHECK(prx_iq_open(tmpdir, PRX_CF32, &r) != PRX_OK, "a directory is not a sample file");
  CHECK(prx_iq_open(tmp_path("x"), PRX_CF16, &r) == PRX_ERR_INVALID, "cf16 input is refused");
  CHECK(prx_iq_open(tmp_path("x"), (prx_format)42, &r) == PRX_ERR_INVALID, "bad format refused");
  CHECK(prx_iq_open(NULL, PRX_CF32, &r) == PRX_ERR_INVALID, "NULL path refused");
  CHECK(prx_iq_open(tmp_path("x"), PRX_CF32, NULL) == PRX_ERR_INVALID, "NULL out refused");
  write_file(tmp_path("rec.sigmf"), "x", 1);
  CHECK(prx_iq_open(tmp_path("rec.sigmf"), PRX_CF32, &r) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "rec.sigmf") && strstr(prx_last_error(), "tar"),
        "a .sigmf that is no tar file is refused clearly: '%s'", prx_last_error());
  size_t n;
  char buf[8];
  CHECK(prx_iq_read(NULL, buf, 1, &n) == PRX_ERR_INVALID, "read on NULL reader");
  prx_iq_close(NULL);
}

static void test_datatypes(void) {
  static const struct {
    const char *name;
    prx_status st;
    prx_format f;
    const char *word;
  } cases[] = {
      {"cf32_le", PRX_OK, PRX_CF32, NULL},
      {"ci16_le", PRX_OK, PRX_CI16, NULL},
      {"ci8", PRX_OK, PRX_CI8, NULL},
      {"cu8", PRX_OK, PRX_CU8, NULL},
      /* (no prx_format: the reader converts these as it reads, test_io_real.c) */
      {"cf32_be", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"ci16_be", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"rf32_le", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"ru8", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"cf64_le", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"ci32_le", PRX_ERR_UNSUPPORTED, 0, "converted as it reads"},
      {"cu16_le", PRX_ERR_UNSUPPORTED, 0, "not read by polyrx"},
      {"cf32", PRX_ERR_FORMAT, 0, "not a SigMF"},
      {"ci8_le", PRX_ERR_FORMAT, 0, "not a SigMF"},
      {"CF32_LE", PRX_ERR_FORMAT, 0, "not a SigMF"},
      {"", PRX_ERR_FORMAT, 0, "not a SigMF"},
      {"xf32_le", PRX_ERR_FORMAT, 0, "not a SigMF"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    prx_format f = PRX_CF16;
    prx_status st = prx_sigmf_parse_datatype(cases[i].name, &f);
    CHECK(st == cases[i].st, "datatype '%s': %s, expected %s", cases[i].name, prx_strerror(st),
          prx_strerror(cases[i].st));
    if (st == PRX_OK && cases[i].st == PRX_OK)
      CHECK(f == cases[i].f, "datatype '%s' parsed as %d", cases[i].name, (int)f);
    if (cases[i].word)
      CHECK(strstr(prx_last_error(), cases[i].word) && strstr(prx_last_error(), cases[i].name),
            "datatype '%s': message '%s' should contain '%s'", cases[i].name, prx_last_error(),
            cases[i].word);
  }
  CHECK(!strcmp(prx_sigmf_datatype_name(PRX_CI16), "ci16_le") &&
            !strcmp(prx_sigmf_datatype_name(PRX_CF16), "cf16_le"),
        "datatype names");
}

static void test_meta_parse(void) {
  const char *good = "{\"global\": {\"core:datatype\": \"ci16_le\", \"core:sample_rate\": 6553600,"
                     " \"core:version\": \"1.0.0\", \"other:thing\": [1,2,{}]},"
                     " \"captures\": [{\"core:sample_start\": 0, \"core:frequency\": 1.4204e9}],"
                     " \"annotations\": []}\n";
  prx_iq_info info;
  memset(&info, 0, sizeof info);
  CHECK_OK(prx_sigmf_parse_meta(good, strlen(good), &info));
  CHECK(info.format == PRX_CI16 && info.sample_rate == 6553600 && info.center_freq == 1.4204e9 &&
            info.is_sigmf == 1,
        "good meta parsed as format %d rate %g freq %g", (int)info.format, info.sample_rate,
        info.center_freq);
  /* length-bounded: the text need not be NUL-terminated, and what follows len is not read */
  char *copy = malloc(strlen(good) + 10);
  memcpy(copy, good, strlen(good));
  memcpy(copy + strlen(good), "garbage!!", 9);
  CHECK_OK(prx_sigmf_parse_meta(copy, strlen(good), &info));
  free(copy);
  /* optional fields absent: rate and frequency 0 (unknown) */
  const char *minimal = "{\"global\":{\"core:datatype\":\"cu8\"},\"captures\":[]}";
  CHECK_OK(prx_sigmf_parse_meta(minimal, strlen(minimal), &info));
  CHECK(info.format == PRX_CU8 && info.sample_rate == 0 && info.center_freq == 0,
        "minimal meta: rate %g freq %g", info.sample_rate, info.center_freq);

  static const struct {
    const char *text;
    prx_status st;
    const char *word;
  } bad[] = {
      {"", PRX_ERR_FORMAT, "not valid JSON"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": [", PRX_ERR_FORMAT,
       "not valid JSON"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\",}, \"captures\": []}", PRX_ERR_FORMAT,
       "not valid JSON"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": []} {}", PRX_ERR_FORMAT,
       "trailing"},
      {"[1, 2]", PRX_ERR_FORMAT, "JSON object"},
      {"{\"captures\": []}", PRX_ERR_FORMAT, "global"},
      {"{\"global\": 3, \"captures\": []}", PRX_ERR_FORMAT, "global"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}}", PRX_ERR_FORMAT, "captures"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": {}}", PRX_ERR_FORMAT,
       "captures"},
      {"{\"global\": {\"core:sample_rate\": 1e6}, \"captures\": []}", PRX_ERR_FORMAT,
       "core:datatype"},
      {"{\"global\": {\"core:datatype\": 5}, \"captures\": []}", PRX_ERR_FORMAT, "core:datatype"},
      {"{\"global\": {\"core:datatype\": \"ci16_be\"}, \"captures\": []}", PRX_ERR_UNSUPPORTED,
       "prx_iq_open reads it"},
      {"{\"global\": {\"core:datatype\": \"cu16_be\"}, \"captures\": []}", PRX_ERR_UNSUPPORTED,
       "not read by polyrx"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": \"1M\"}, "
       "\"captures\": []}",
       PRX_ERR_FORMAT, "core:sample_rate"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": -5}, \"captures\": []}",
       PRX_ERR_FORMAT, "core:sample_rate"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:sample_rate\": 0}, \"captures\": []}",
       PRX_ERR_FORMAT, "core:sample_rate"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:num_channels\": 2}, \"captures\": []}",
       PRX_ERR_UNSUPPORTED, "num_channels"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\", \"core:metadata_only\": true}, "
       "\"captures\": []}",
       PRX_ERR_UNSUPPORTED, "metadata_only"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": [{\"core:frequency\": "
       "\"fast\"}]}",
       PRX_ERR_FORMAT, "core:frequency"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": [7]}", PRX_ERR_FORMAT,
       "captures[0]"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": [{\"core:sample_start\": "
       "-1}]}",
       PRX_ERR_FORMAT, "sample_start"},
      {"{\"global\": {\"core:datatype\": \"cf32_le\"}, \"captures\": [{}, {\"core:header_bytes\": "
       "16}]}",
       PRX_ERR_UNSUPPORTED, "header_bytes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    prx_status st = prx_sigmf_parse_meta(bad[i].text, strlen(bad[i].text), &info);
    CHECK(st == bad[i].st, "bad meta %zu (%s): %s, expected %s", i, bad[i].text, prx_strerror(st),
          prx_strerror(bad[i].st));
    CHECK(strstr(prx_last_error(), bad[i].word), "bad meta %zu: message '%s' lacks '%s'", i,
          prx_last_error(), bad[i].word);
  }
  /* every prefix of a good file is malformed, never a crash */
  for (size_t n = 0; n + 1 < strlen(good); n++)
    CHECK(prx_sigmf_parse_meta(good, n, &info) != PRX_OK, "prefix of %zu bytes accepted", n);
  CHECK(prx_sigmf_parse_meta(NULL, 0, &info) == PRX_ERR_INVALID, "NULL text");
}

static void test_sigmf_read(test_rng *rng) {
  size_t n = 3000;
  unsigned char *data = random_bytes(rng, n * 2 + 16);
  const char *meta = "{\"global\": {\"core:datatype\": \"cu8\", \"core:sample_rate\": 2.4e6, "
                     "\"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0, "
                     "\"core:frequency\": 100e6}], \"annotations\": []}";
  write_file(tmp_path("rec.sigmf-meta"), meta, strlen(meta));
  write_file(tmp_path("rec.sigmf-data"), data, n * 2);
  const char *names[] = {"rec.sigmf-meta", "rec.sigmf-data", "rec"};
  for (size_t i = 0; i < 3; i++) {
    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(tmp_path(names[i]), PRX_CF32, &r));
    if (!r) continue;
    const prx_iq_info *info = prx_iq_reader_info(r);
    CHECK(info->is_sigmf && info->format == PRX_CU8 && info->sample_rate == 2.4e6 &&
              info->center_freq == 100e6,
          "%s: sigmf %d format %d rate %g freq %g", names[i], info->is_sigmf, (int)info->format,
          info->sample_rate, info->center_freq);
    size_t got;
    prx_status end;
    unsigned char *back = read_all(r, rng, 500, &got, &end);
    CHECK(end == PRX_OK && got == n && !memcmp(back, data, n * 2), "%s: read %zu of %zu samples",
          names[i], got, n);
    free(back);
    prx_iq_close(r);
  }
  /* the recording's format must agree with one given explicitly */
  prx_iq_reader *r = NULL;
  CHECK(prx_iq_open(tmp_path("rec"), PRX_CI16, &r) == PRX_ERR_INVALID &&
            strstr(prx_last_error(), "cu8"),
        "format mismatch with the recording: '%s'", prx_last_error());
  CHECK_OK(prx_iq_open(tmp_path("rec"), PRX_CU8, &r));
  prx_iq_close(r);
  /* a data file with a stray byte is truncated */
  write_file(tmp_path("rec.sigmf-data"), data, n * 2 + 1);
  CHECK_OK(prx_iq_open(tmp_path("rec.sigmf-meta"), PRX_CF32, &r));
  size_t got;
  prx_status end;
  unsigned char *back = read_all(r, rng, 4096, &got, &end);
  CHECK(end == PRX_ERR_TRUNCATED && got == n, "sigmf with a stray byte: %s after %zu samples",
        prx_strerror(end), got);
  free(back);
  prx_iq_close(r);
  /* header bytes and a non-conforming dataset name */
  const char *meta2 =
      "{\"global\": {\"core:datatype\": \"ci8\", \"core:dataset\": \"capture.raw\"},"
      " \"captures\": [{\"core:sample_start\": 0, \"core:header_bytes\": 16}]}";
  write_file(tmp_path("hdr.sigmf-meta"), meta2, strlen(meta2));
  write_file(tmp_path("capture.raw"), data, n * 2 + 16);
  CHECK_OK(prx_iq_open(tmp_path("hdr"), PRX_CF32, &r));
  if (r) {
    back = read_all(r, rng, 4096, &got, &end);
    CHECK(end == PRX_OK && got == n && !memcmp(back, data + 16, n * 2),
          "header_bytes/dataset: read %zu of %zu samples", got, n);
    free(back);
    prx_iq_close(r);
  }
  /* header bytes past the end of the data file: an error, not an empty stream */
  write_file(tmp_path("capture.raw"), data, 10);
  r = NULL;
  CHECK(prx_iq_open(tmp_path("hdr"), PRX_CF32, &r) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "header_bytes"),
        "header_bytes past the end accepted: '%s'", prx_last_error());
  prx_iq_close(r);
  /* errors name the file */
  write_file(tmp_path("broken.sigmf-meta"), "{\"global\": ", 11);
  CHECK(prx_iq_open(tmp_path("broken.sigmf-meta"), PRX_CF32, &r) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "broken.sigmf-meta") && strstr(prx_last_error(), "JSON"),
        "malformed meta on disk: '%s'", prx_last_error());
  write_file(tmp_path("nodata.sigmf-meta"), meta, strlen(meta));
  CHECK(prx_iq_open(tmp_path("nodata.sigmf-meta"), PRX_CF32, &r) == PRX_ERR_IO &&
            strstr(prx_last_error(), "nodata.sigmf-data"),
        "missing data file: '%s'", prx_last_error());
  free(data);
}

static const cJSON *field(const cJSON *obj, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static cJSON *parse_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return cJSON_Parse(text);
}

static void test_writer_round_trip(test_rng *rng) {
  size_t n = 7777;
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 0.3);
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 12800.5;
  meta.center_freq = -1.5e6 + 0.25;
  meta.description = "channel 7 of 1024";
  meta.datetime = "2026-11-29T12:00:00Z";
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open(tmp_path("out"), &meta, &w));
  if (!w) return;
  CHECK(prx_sigmf_writer_set_number(w, "polyrx:channel_index", 7) == PRX_ERR_INVALID &&
            strstr(prx_last_error(), "not declared"),
        "a field of an undeclared namespace must be refused: '%s'", prx_last_error());
  CHECK_OK(prx_sigmf_writer_add_extension(w, "polyrx", "0.1.0", 1));
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:channel_index", 6));
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:channel_index", 7)); /* replaces */
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:group_delay_seconds", 1.25e-3));
  CHECK_OK(prx_sigmf_writer_set_string(w, "polyrx:input_format", "ci16"));
  CHECK_OK(prx_sigmf_writer_set_string(w, "core:author", "test"));
  CHECK(prx_sigmf_writer_set_number(w, "core:sample_rate", 5) == PRX_ERR_INVALID,
        "core:sample_rate belongs to the writer");
  CHECK(prx_sigmf_writer_set_string(w, "nonamespace", "x") == PRX_ERR_INVALID, "key without ':'");
  CHECK(prx_sigmf_writer_set_string(w, "polyrx:", "x") == PRX_ERR_INVALID, "key without name");
  CHECK(prx_sigmf_writer_set_number(w, "polyrx:bad", NAN) == PRX_ERR_INVALID, "NaN is not JSON");
  CHECK(prx_sigmf_writer_add_extension(w, "a:b", "1", 1) == PRX_ERR_INVALID, "bad extension name");
  for (size_t off = 0; off < n;) {
    size_t k = 1 + test_rng_u64(rng) % 1000;
    if (k > n - off) k = n - off;
    CHECK_OK(prx_sigmf_write(w, x + off, k));
    off += k;
  }
  CHECK(prx_sigmf_writer_samples(w) == n, "writer counted %llu samples",
        (unsigned long long)prx_sigmf_writer_samples(w));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(count_temp_files("out.") == 0, "temporary files left behind");

  /* the metadata, through cJSON */
  cJSON *root = parse_file(tmp_path("out.sigmf-meta"));
  CHECK(root != NULL, "written metadata is not JSON");
  if (root) {
    const cJSON *g = field(root, "global"), *caps = field(root, "captures");
    CHECK(cJSON_IsObject(g) && cJSON_IsArray(caps) && cJSON_IsArray(field(root, "annotations")),
          "top-level global/captures/annotations");
    const cJSON *v;
    v = field(g, "core:datatype");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "cf32_le"), "core:datatype");
    v = field(g, "core:sample_rate");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 12800.5, "core:sample_rate");
    v = field(g, "core:version");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "1.0.0"), "core:version");
    v = field(g, "core:recorder");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "polyrx"), "core:recorder");
    v = field(g, "core:description");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "channel 7 of 1024"), "core:description");
    v = field(g, "core:author");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "test"), "core:author");
    v = field(g, "polyrx:channel_index");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 7, "polyrx:channel_index");
    v = field(g, "polyrx:group_delay_seconds");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 1.25e-3, "polyrx:group_delay_seconds");
    v = field(g, "polyrx:input_format");
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "ci16"), "polyrx:input_format");
    const cJSON *ext = field(g, "core:extensions");
    CHECK(cJSON_IsArray(ext) && cJSON_GetArraySize(ext) == 1, "core:extensions array");
    const cJSON *e0 = cJSON_GetArrayItem(ext, 0);
    CHECK(e0 && cJSON_IsString(field(e0, "name")) &&
              !strcmp(field(e0, "name")->valuestring, "polyrx") &&
              cJSON_IsString(field(e0, "version")) && cJSON_IsTrue(field(e0, "optional")),
          "extension object {name, version, optional}");
    const cJSON *c0 = cJSON_GetArrayItem(caps, 0);
    CHECK(cJSON_GetArraySize(caps) == 1 && c0, "one capture");
    v = c0 ? field(c0, "core:sample_start") : NULL;
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 0, "captures[0].core:sample_start");
    v = c0 ? field(c0, "core:frequency") : NULL;
    CHECK(cJSON_IsNumber(v) && v->valuedouble == -1.5e6 + 0.25, "captures[0].core:frequency");
    v = c0 ? field(c0, "core:datetime") : NULL;
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "2026-11-29T12:00:00Z"), "core:datetime");
    cJSON_Delete(root);
  }
  /* and the recording read back by the reader */
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(tmp_path("out"), PRX_CF32, &r));
  if (r) {
    const prx_iq_info *info = prx_iq_reader_info(r);
    CHECK(info->is_sigmf && info->format == PRX_CF32 && info->sample_rate == 12800.5 &&
              info->center_freq == -1.5e6 + 0.25,
          "read back info");
    size_t got;
    prx_status end;
    unsigned char *back = read_all(r, rng, 999, &got, &end);
    CHECK(end == PRX_OK && got == n && !memcmp(back, x, n * sizeof *x),
          "round trip: %zu of %zu samples equal", got, n);
    free(back);
    prx_iq_close(r);
  }
  /* an integer format */
  meta = prx_sigmf_meta_default();
  meta.format = PRX_CI16;
  meta.sample_rate = 1e6;
  int16_t iq[6] = {1, -2, 32767, -32768, 0, 5};
  CHECK_OK(prx_sigmf_writer_open(tmp_path("int"), &meta, &w));
  CHECK_OK(prx_sigmf_write(w, iq, 3));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK_OK(prx_iq_open(tmp_path("int.sigmf-meta"), PRX_CF32, &r));
  if (r) {
    int16_t back[8];
    size_t got = 0;
    CHECK_OK(prx_iq_read(r, back, 4, &got));
    CHECK(prx_iq_reader_info(r)->format == PRX_CI16 && got == 3 && !memcmp(back, iq, sizeof iq),
          "ci16 round trip");
    prx_iq_close(r);
  }
  free(x);
}

static void test_writer_errors(void) {
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  prx_sigmf_writer *w = NULL;
  CHECK(prx_sigmf_writer_open(tmp_path("x"), &meta, &w) == PRX_ERR_INVALID && !w,
        "sample rate 0 must be refused");
  meta.sample_rate = 1e6;
  meta.format = (prx_format)99;
  CHECK(prx_sigmf_writer_open(tmp_path("x"), &meta, &w) == PRX_ERR_INVALID, "format 99 refused");
  meta.format = PRX_CF32;
  CHECK(prx_sigmf_writer_open(tmp_path("no/such/dir/x"), &meta, &w) == PRX_ERR_IO &&
            strstr(prx_last_error(), "no/such/dir/x.sigmf-data"),
        "unwritable place: '%s'", prx_last_error());
  CHECK(prx_sigmf_writer_close(NULL) == PRX_OK, "close(NULL)");
  prx_sigmf_writer_discard(NULL);
  /* a discarded recording leaves nothing behind */
  CHECK_OK(prx_sigmf_writer_open(tmp_path("gone"), &meta, &w));
  prx_cf32 z[4] = {{0, 0}};
  CHECK_OK(prx_sigmf_write(w, z, 4));
  prx_sigmf_writer_discard(w);
  struct stat sb;
  CHECK(stat(tmp_path("gone.sigmf-data"), &sb) != 0 && stat(tmp_path("gone.sigmf-meta"), &sb) != 0,
        "discard left files");
}

/* Names in tmpdir that start with prefix and hold ".tmp-" (a writer's temporary files). */
static int count_temp_files(const char *prefix) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix)) && strstr(e->d_name, ".tmp-")) n++;
  if (d) closedir(d);
  return n;
}

static long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* A recording of an earlier run is removed when a writer opens the same base, before any
 * sample is written; the new recording appears only at close; a base that cannot be cleared
 * is refused with nothing created. */
static void test_writer_stale(test_rng *rng) {
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 1e6;
  prx_cf32 x[100];
  test_fill_cf32(rng, x, 100, 0.5);
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open(tmp_path("stale"), &meta, &w));
  CHECK_OK(prx_sigmf_write(w, x, 100));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(file_size(tmp_path("stale.sigmf-data")) == 800, "first recording");
  CHECK_OK(prx_sigmf_writer_open(tmp_path("stale"), &meta, &w));
  CHECK(file_size(tmp_path("stale.sigmf-meta")) < 0 && file_size(tmp_path("stale.sigmf-data")) < 0,
        "the earlier recording must be gone once a writer opens its base");
  CHECK_OK(prx_sigmf_write(w, x, 10));
  CHECK(file_size(tmp_path("stale.sigmf-data")) < 0, "data must appear only at close");
  CHECK(count_temp_files("stale.sigmf-data.tmp-") == 1, "one temporary data file while writing");
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(file_size(tmp_path("stale.sigmf-data")) == 80 &&
            file_size(tmp_path("stale.sigmf-meta")) > 0,
        "second recording");
  CHECK(count_temp_files("stale") == 0, "temporary files left after close");
  /* discarding removes the new data; the old recording was removed at open */
  CHECK_OK(prx_sigmf_writer_open(tmp_path("stale"), &meta, &w));
  CHECK_OK(prx_sigmf_write(w, x, 10));
  prx_sigmf_writer_discard(w);
  CHECK(file_size(tmp_path("stale.sigmf-data")) < 0 &&
            file_size(tmp_path("stale.sigmf-meta")) < 0 && count_temp_files("stale") == 0,
        "discard left files");
  /* a temporary name already taken (a killed process of the same pid): the writer takes another
   * and leaves that file alone */
  char taken[600];
  snprintf(taken, sizeof taken, "%s.sigmf-data.tmp-%ld-0", tmp_path("stale"), (long)getpid());
  write_file(taken, "old", 3);
  CHECK_OK(prx_sigmf_writer_open(tmp_path("stale"), &meta, &w));
  CHECK_OK(prx_sigmf_write(w, x, 5));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(file_size(tmp_path("stale.sigmf-data")) == 40 && file_size(taken) == 3,
        "a taken temporary name: data %ld bytes, the other file %ld",
        file_size(tmp_path("stale.sigmf-data")), file_size(taken));
  unlink(taken);
  /* a directory in the way: refused, nothing created */
  CHECK(mkdir(tmp_path("blocked.sigmf-data"), 0777) == 0, "mkdir");
  CHECK(prx_sigmf_writer_open(tmp_path("blocked"), &meta, &w) == PRX_ERR_IO && !w &&
            strstr(prx_last_error(), "blocked.sigmf-data") &&
            strstr(prx_last_error(), "earlier run"),
        "a directory named like the data file: '%s'", prx_last_error());
  CHECK(count_temp_files("blocked") == 0, "a refused open left files");
}

/* The whole of a small file, malloc'd with a final NUL (*n its bytes); NULL if unreadable. */
static char *file_text(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *b = f ? malloc(1 << 16) : NULL;
  *n = b ? fread(b, 1, (1 << 16) - 1, f) : 0;
  if (b) b[*n] = '\0';
  if (f) fclose(f);
  return b;
}

/* A new file written whole in one step (prx_io_write_file_new): the text, nothing else beside
 * it; a file already there is replaced as prx_io_write_file_atomic replaces it. A writer opened
 * with prx_sigmf_writer_open_new (a directory the caller made) writes the same bytes as one
 * opened with prx_sigmf_writer_open, leaves no temporary file, and replaces at close a recording
 * that is there after all. */
static void test_writer_new(test_rng *rng) {
  CHECK(mkdir(tmp_path("new"), 0777) == 0, "mkdir");
  size_t n;
  const char *a = "{\"first\": 1}\n", *b = "{\"second\": [1, 2, 3]}\n";
  CHECK_OK(prx_io_write_file_new(tmp_path("new/one.txt"), a, strlen(a)));
  char *t = file_text(tmp_path("new/one.txt"), &n);
  CHECK(t && n == strlen(a) && !memcmp(t, a, n), "a new file holds its text");
  free(t);
  CHECK_OK(prx_io_write_file_new(tmp_path("new/one.txt"), b, strlen(b)));
  t = file_text(tmp_path("new/one.txt"), &n);
  CHECK(t && n == strlen(b) && !memcmp(t, b, n), "a file there is replaced");
  free(t);
  CHECK(prx_io_write_file_new(tmp_path("new/no/such/dir.txt"), a, strlen(a)) == PRX_ERR_IO,
        "a missing directory is an error");

  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 2e6;
  meta.center_freq = 915e6;
  meta.description = "new";
  prx_cf32 x[300];
  test_fill_cf32(rng, x, 300, 0.5);
  prx_sigmf_writer *w = NULL;
  const char *bases[2] = {"new/plain", "new/fresh"};
  for (int k = 0; k < 2; k++) {
    CHECK_OK(k ? prx_sigmf_writer_open_new(tmp_path(bases[k]), &meta, &w)
               : prx_sigmf_writer_open(tmp_path(bases[k]), &meta, &w));
    CHECK_OK(prx_sigmf_writer_add_extension(w, "polyrx", "0.1.0", 1));
    CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:input_samples", 1234.5));
    CHECK_OK(prx_sigmf_write(w, x, 300));
    char hex[129];
    CHECK_OK(prx_sigmf_writer_close_hash(w, hex));
    char path[600];
    snprintf(path, sizeof path, "%s.sigmf-meta", tmp_path(bases[k]));
    char *text = file_text(path, &n), want[129];
    prx_sha512_hex(text ? text : "", n, want);
    CHECK(text && !strcmp(hex, want), "the metadata's hash is the file's");
    free(text);
  }
  char *m0 = file_text(tmp_path("new/plain.sigmf-meta"), &n), *m1;
  size_t n1;
  m1 = file_text(tmp_path("new/fresh.sigmf-meta"), &n1);
  CHECK(m0 && m1 && n == n1 && !memcmp(m0, m1, n), "the same metadata either way");
  free(m0);
  free(m1);
  CHECK(file_size(tmp_path("new/fresh.sigmf-data")) == 2400, "the data");
  /* a recording there after all (another process): replaced at close, no temporary file left */
  CHECK_OK(prx_sigmf_writer_open_new(tmp_path("new/fresh"), &meta, &w));
  CHECK_OK(prx_sigmf_write(w, x, 7));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(file_size(tmp_path("new/fresh.sigmf-data")) == 56 &&
            file_size(tmp_path("new/fresh.sigmf-meta")) > 0,
        "an existing recording replaced");
  DIR *d = opendir(tmp_path("new"));
  int others = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.' && strcmp(e->d_name, "one.txt") && strncmp(e->d_name, "plain.", 6) &&
        strcmp(e->d_name, "fresh.sigmf-data") && strcmp(e->d_name, "fresh.sigmf-meta"))
      others++;
  if (d) closedir(d);
  CHECK(others == 0, "%d file(s) beside the recordings", others);
}

/* One recording of n samples under a file-size limit of `limit` bytes (SIGXFSZ ignored, so a
 * write past the limit fails with EFBIG). Returns the status of close (or of the first failed
 * call). With end_first the data is ended (prx_sigmf_writer_end_data) before close, as a writer
 * thread does after its last samples: every error it gives is close's too, and a later write
 * fails. */
static prx_status limited_recording(const char *base, const prx_cf32 *x, size_t n, long limit,
                                    const size_t *chunks, int end_first) {
  struct rlimit old, rl;
  getrlimit(RLIMIT_FSIZE, &old);
  rl = old;
  rl.rlim_cur = (rlim_t)limit;
  setrlimit(RLIMIT_FSIZE, &rl);
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 48000;
  meta.description = "fault injection";
  prx_sigmf_writer *w = NULL;
  prx_status st = prx_sigmf_writer_open(base, &meta, &w);
  if (!st) st = prx_sigmf_writer_add_extension(w, "polyrx", "0.1.0", 1);
  if (!st) st = prx_sigmf_writer_set_number(w, "polyrx:input_samples", (double)n);
  prx_status wst = PRX_OK;
  for (size_t off = 0, i = 0; !st && off < n; i++) {
    size_t k = chunks[i] < n - off ? chunks[i] : n - off;
    prx_status s2 = prx_sigmf_write(w, x + off, k);
    if (s2 && !wst) wst = s2;
    off += k;
  }
  prx_status est = PRX_OK;
  if (w && end_first) {
    est = prx_sigmf_writer_end_data(w);
    CHECK(!wst || est == wst, "end_data must return the first write error");
    CHECK(prx_sigmf_write(w, x, 1) != PRX_OK, "a write after end_data must fail");
  }
  if (w) {
    prx_status cst = prx_sigmf_writer_close(w);
    CHECK(!est || cst == est, "close must return end_data's error");
    if (!st) st = cst;
    CHECK(!wst || cst == wst, "close must return the first write error");
  }
  setrlimit(RLIMIT_FSIZE, &old);
  return st;
}

/* Fault injection: the writer under every file-size limit from 0 to past the whole recording,
 * so that each write call (data buffer flushes, the close, the metadata) fails in some run.
 * After every run: either close succeeded and the recording is whole (data equal to what was
 * written, metadata parsing), or close failed and neither file exists; no temporary file is
 * left. Success exactly when the limit holds both files. */
static void test_writer_faults(test_rng *rng) {
  signal(SIGXFSZ, SIG_IGN);
  const size_t sizes[2] = {3000, 10}; /* data larger than the metadata, then smaller */
  for (int c = 0; c < 4; c++) {       /* each size with close alone, then with end_data first */
    size_t n = sizes[c % 2];
    int end_first = c >= 2;
    prx_cf32 *x = malloc(n * sizeof *x);
    test_fill_cf32(rng, x, n, 0.5);
    size_t chunks[64];
    for (size_t i = 0; i < 64; i++) chunks[i] = 1 + test_rng_u64(rng) % 700;
    /* the sizes of a recording made without a limit */
    char base[512];
    snprintf(base, sizeof base, "%s", tmp_path("fault"));
    CHECK_OK(limited_recording(base, x, n, (long)RLIM_INFINITY, chunks, end_first));
    long data_bytes = file_size(tmp_path("fault.sigmf-data"));
    long meta_bytes = file_size(tmp_path("fault.sigmf-meta"));
    CHECK(data_bytes == (long)(n * 8) && meta_bytes > 100, "unlimited recording: %ld + %ld bytes",
          data_bytes, meta_bytes);
    long need = data_bytes > meta_bytes ? data_bytes : meta_bytes;
    int bad = 0, runs = 0;
    for (long limit = 0; limit <= need + 8 && bad < 5;
         limit += (limit < 4200 || limit > need - 600) ? 1 : 7) {
      prx_status st = limited_recording(base, x, n, limit, chunks, end_first);
      runs++;
      long d = file_size(tmp_path("fault.sigmf-data")), m = file_size(tmp_path("fault.sigmf-meta"));
      int temps = count_temp_files("fault");
      if ((st == PRX_OK) != (limit >= need)) {
        CHECK(0, "limit %ld (recording needs %ld): close gave %s", limit, need, prx_strerror(st));
        bad++;
      }
      if (st == PRX_OK) {
        cJSON *root = parse_file(tmp_path("fault.sigmf-meta"));
        FILE *f = fopen(tmp_path("fault.sigmf-data"), "rb");
        prx_cf32 *back = malloc(n * sizeof *back);
        size_t got = f ? fread(back, sizeof *back, n, f) : 0;
        if (f) fclose(f);
        if (!root || d != data_bytes || got != n || memcmp(back, x, n * sizeof *x)) {
          CHECK(0, "limit %ld: a successful close left an incomplete recording", limit);
          bad++;
        }
        cJSON_Delete(root);
        free(back);
      } else if (d >= 0 || m >= 0) {
        CHECK(0, "limit %ld: failed recording left data %ld / metadata %ld bytes", limit, d, m);
        bad++;
      }
      if (temps) {
        CHECK(0, "limit %ld: %d temporary file(s) left", limit, temps);
        bad++;
      }
    }
    CHECK(runs > need / 8, "only %d fault runs", runs);
    free(x);
  }
  signal(SIGXFSZ, SIG_DFL);
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "io")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261129);
  test_raw_formats(&rng);
  test_pipe(&rng, 0);
  test_pipe(&rng, 3);
  test_truncated_file(&rng);
  test_interrupted();
  test_open_errors();
  test_datatypes();
  test_meta_parse();
  test_sigmf_read(&rng);
  test_writer_round_trip(&rng);
  test_writer_errors();
  test_writer_stale(&rng);
  test_writer_new(&rng);
  test_writer_faults(&rng);
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io");
}
