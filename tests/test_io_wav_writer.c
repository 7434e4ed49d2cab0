/* The WAV writer (prx_wav_writer_*): each format written in chunks of random size reads back
 * through prx_iq_open byte for byte, with the rate and the auxi chunk's centre; the header of a
 * file past 4 GiB is RF64, which the reader takes (a sparse file: nothing is written); formats,
 * rates and centres a WAV file cannot hold are refused or left out; a write that fails (a
 * file-size limit) and a discard leave no file, neither the name nor a temporary one. */
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static void round_trip(test_rng *rng) {
  static const prx_format fmts[] = {PRX_CF32, PRX_CI16, PRX_CU8};
  for (size_t f = 0; f < 3; f++) {
    const size_t n = 70001, ss = prx_format_size(fmts[f]);
    unsigned char *s = malloc(n * ss), *back = malloc((n + 8) * ss);
    for (size_t i = 0; i < n * ss; i++) s[i] = (unsigned char)test_rng_u64(rng);
    const char *path = test_path(tmpdir, "w.wav");
    prx_wav_writer *w = NULL;
    CHECK_OK(prx_wav_writer_open(path, fmts[f], 2400000, 7100000, &w));
    for (size_t i = 0; w && i < n;) {
      size_t k = 1 + test_rng_u64(rng) % 9000;
      if (k > n - i) k = n - i;
      CHECK_OK(prx_wav_write(w, s + i * ss, k));
      i += k;
    }
    CHECK(access(path, F_OK) != 0, "%s: the file is there before close", prx_format_name(fmts[f]));
    CHECK(prx_wav_writer_samples(w) == n, "samples counted");
    CHECK_OK(prx_wav_writer_close(w));
    CHECK(test_files_named(tmpdir, "w.wav.tmp") == 0, "a temporary file left");
    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
    if (r) {
      const prx_iq_info *in = prx_iq_reader_info(r);
      const prx_wav_info *wi = prx_iq_reader_wav(r);
      size_t got = 0;
      CHECK_OK(prx_iq_read(r, back, n + 8, &got));
      CHECK(in->format == fmts[f] && in->sample_rate == 2400000 && in->center_freq == 7100000 &&
                wi && wi->center_from && !strcmp(wi->center_from, "auxi chunk") && !wi->rf64 &&
                wi->extent == PRX_WAV_EXTENT_DECLARED && got == n && !memcmp(back, s, n * ss),
            "%s: format %d rate %g centre %g, %zu samples read back", prx_format_name(fmts[f]),
            (int)in->format, in->sample_rate, in->center_freq, got);
      prx_iq_close(r);
    }
    unlink(path);
    free(s);
    free(back);
  }
}

/* the header for 4 GiB + 4000 bytes of samples, on a sparse file of that size */
static void rf64(void) {
  const uint64_t data = ((uint64_t)1 << 32) + 4000;
  unsigned char h[PRX_WAV_HEADER_BYTES];
  prx_wav_header_make(h, PRX_CI16, 1000000, 0, data);
  const char *path = test_path(tmpdir, "big.wav");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  int ok = fd >= 0 && write(fd, h, sizeof h) == (ssize_t)sizeof h &&
           ftruncate(fd, (off_t)(sizeof h + data)) == 0;
  if (fd >= 0) close(fd);
  if (!ok) {
    printf("rf64: cannot make a sparse file here: not checked\n");
    unlink(path);
    return;
  }
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  const prx_wav_info *wi = prx_iq_reader_wav(r);
  uint64_t samples = 0;
  CHECK(wi && wi->rf64 && wi->data_bytes == data && wi->extent == PRX_WAV_EXTENT_DECLARED &&
            prx_iq_reader_extent(r, &samples, NULL) && samples == data / 4 && !memcmp(h, "RF64", 4),
        "RF64: rf64 %d, %llu bytes", wi ? wi->rf64 : -1,
        wi ? (unsigned long long)wi->data_bytes : 0ull);
  prx_iq_close(r);
  unlink(path);
}

static void refused(void) {
  prx_wav_writer *w = NULL;
  const char *path = test_path(tmpdir, "x.wav");
  CHECK(prx_wav_writer_open(path, PRX_CI8, 48000, 0, &w) == PRX_ERR_INVALID && !w &&
            strstr(prx_last_error(), "unsigned"),
        "ci8: %s", prx_last_error());
  CHECK(prx_wav_writer_open(path, PRX_CF32, 48000.5, 0, &w) == PRX_ERR_INVALID && !w,
        "a rate of 48000.5 Hz taken");
  CHECK(prx_wav_writer_open(path, PRX_CF32, 5e9, 0, &w) == PRX_ERR_INVALID && !w,
        "a rate of 5 GHz taken");
  /* a centre a DWORD cannot hold is left out (the reader then has none) */
  CHECK_OK(prx_wav_writer_open(path, PRX_CF32, 48000, -2500, &w));
  float z[4] = {0};
  CHECK_OK(prx_wav_write(w, z, 2));
  CHECK_OK(prx_wav_writer_close(w));
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  CHECK(r && prx_iq_reader_info(r)->center_freq == 0 && !prx_iq_reader_wav(r)->center_from,
        "a negative centre written");
  prx_iq_close(r);
  unlink(path);
  /* discard: nothing left */
  CHECK_OK(prx_wav_writer_open(path, PRX_CF32, 48000, 0, &w));
  CHECK_OK(prx_wav_write(w, z, 2));
  prx_wav_writer_discard(w);
  CHECK(access(path, F_OK) != 0 && test_files_named(tmpdir, "x.wav") == 0, "discard left a file");
  CHECK(prx_wav_writer_open(test_path(tmpdir, "no/such/dir.wav"), PRX_CF32, 48000, 0, &w) ==
                PRX_ERR_IO &&
            !w,
        "a file in a missing directory");
}

/* a file-size limit of 64 KiB under a writer of 1 MiB (a child process): the write or the close
 * fails, and neither the file nor a temporary one is left */
static void full(void) {
  const char *path = test_path(tmpdir, "full.wav");
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {65536, 65536};
    setrlimit(RLIMIT_FSIZE, &rl);
    prx_wav_writer *w = NULL;
    if (prx_wav_writer_open(path, PRX_CI16, 48000, 0, &w)) _exit(2);
    static int16_t s[2 * 262144];
    prx_status st = prx_wav_write(w, s, 262144);
    prx_status st2 = prx_wav_writer_close(w);
    _exit(st == PRX_ERR_IO && st2 == PRX_ERR_IO ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a full file's write and close: status %d",
        status);
  CHECK(access(path, F_OK) != 0 && test_files_named(tmpdir, "full.wav") == 0,
        "a failed writer left a file");
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "wavw")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 6122026);
  round_trip(&rng);
  rf64();
  refused();
  full();
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io_wav_writer");
}
