/* A SigMF writer whose files go under their own names at once (prx_sigmf_writer_open_direct: a
 * directory published whole by its caller) and a data file's buffer sized by the caller
 * (prx_sigmf_writer_set_buffer): the recording is byte for byte the one prx_sigmf_writer_open_new
 * writes (data, metadata, the hash close gives), with its metadata made ahead or not, with any
 * buffer size, and leaves exactly its two files; a discarded recording, one whose write fails (a
 * file-size limit) and one whose metadata made ahead is never completed leave none and give back
 * their descriptors; a data file already there is refused and kept; archives are refused. */
#include "testutil.h"

#include "io/io_internal.h"
#include "polyrx/io.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char dir[256];

static char *path_in(const char *name) { return test_path(dir, name); }

static prx_sigmf_meta test_meta(void) {
  prx_sigmf_meta m = prx_sigmf_meta_default();
  m.sample_rate = 2.5e6;
  m.center_freq = 1.42e9;
  m.description = "direct";
  m.datetime = "2026-12-02T11:00:00Z";
  return m;
}

/* How write_one makes its writer: the reference (open_new), or direct with the metadata made
 * ahead or not, and a buffer of `buffer` bytes (0: the C library's). */
typedef struct {
  int direct, ahead;
  size_t buffer;
} how;

/* Writes base from x (n samples, in pieces of `piece`); the hash close gives into hex. */
static void write_one(const char *base, how h, const prx_cf32 *x, size_t n, size_t piece,
                      char hex[129]) {
  prx_sigmf_meta m = test_meta();
  prx_sigmf_writer *w = NULL;
  CHECK_OK(h.direct ? prx_sigmf_writer_open_direct(path_in(base), &m, &w)
                    : prx_sigmf_writer_open_new(path_in(base), &m, &w));
  if (!w) return;
  if (h.ahead) CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  if (h.buffer) CHECK_OK(prx_sigmf_writer_set_buffer(w, h.buffer));
  CHECK_OK(prx_sigmf_writer_add_extension(w, "polyrx", "0.2.0", 1));
  for (size_t i = 0; i < n; i += piece) {
    CHECK_OK(prx_sigmf_write(w, x + i, n - i < piece ? n - i : piece));
    /* after a sample the buffer stays as it is (nothing done, no error) */
    if (i == 0) CHECK_OK(prx_sigmf_writer_set_buffer(w, 777));
  }
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:power_dbfs", -31.5));
  CHECK_OK(prx_sigmf_writer_end_data(w));
  CHECK_OK(prx_sigmf_writer_close_hash(w, hex));
}

/* base's two files hold what ref's hold */
static void same_files(const char *ref, const char *base) {
  const char *ext[2] = {".sigmf-data", ".sigmf-meta"};
  for (int k = 0; k < 2; k++) {
    char a[96], b[96];
    snprintf(a, sizeof a, "%s%s", ref, ext[k]);
    snprintf(b, sizeof b, "%s%s", base, ext[k]);
    size_t na = 0, nb = 0;
    char *ta = test_slurp(path_in(a), &na), *tb = test_slurp(path_in(b), &nb);
    CHECK(ta && tb && na == nb && na > 0 && !memcmp(ta, tb, na), "%s: the bytes of %s", b, a);
    free(ta);
    free(tb);
  }
}

static void test_same_bytes(test_rng *rng) {
  size_t n = 3000 + (size_t)(test_rng_u64(rng) % 2000);
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 0.8);
  char h_ref[129], h[129];
  int fds = test_open_fds();
  write_one("ref", (how){0, 0, 0}, x, n, 32, h_ref);
  size_t data_bytes = 0;
  char *data = test_slurp(path_in("ref.sigmf-data"), &data_bytes);
  CHECK(data && data_bytes == n * sizeof *x && !memcmp(data, x, data_bytes),
        "the reference's data is the samples");
  free(data);
  /* buffers of whole rows (4352, 4096 + 256: a staggered size), odd (1000) and tiny (8) */
  const how hows[] = {{1, 0, 0}, {1, 1, 0}, {1, 1, 4352}, {1, 0, 1000}, {1, 1, 8}, {0, 1, 4352}};
  for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
    char base[32];
    snprintf(base, sizeof base, "w%zu", i);
    size_t piece = 1 + (size_t)(test_rng_u64(rng) % 97);
    write_one(base, hows[i], x, n, piece, h);
    same_files("ref", base);
    CHECK(!strcmp(h, h_ref), "%s: the hash close gives is the reference's", base);
    CHECK(test_files_named(dir, base) == 2, "%s: %d files, expected its two", base,
          test_files_named(dir, base));
  }
  CHECK(test_open_fds() == fds, "descriptors open after close: %d, before %d", test_open_fds(),
        fds);
  free(x);
}

static void test_failures_leave_nothing(test_rng *rng) {
  prx_cf32 x[256];
  test_fill_cf32(rng, x, 256, 0.5);
  prx_sigmf_meta m = test_meta();
  prx_sigmf_writer *w = NULL;
  int fds = test_open_fds();
  /* discarded, with and without the metadata made ahead */
  for (int ahead = 0; ahead < 2; ahead++) {
    CHECK_OK(prx_sigmf_writer_open_direct(path_in("gone"), &m, &w));
    if (ahead) CHECK_OK(prx_sigmf_writer_prepare_meta(w));
    CHECK(test_files_named(dir, "gone") == 1 + ahead, "the files under their own names at once: %d",
          test_files_named(dir, "gone"));
    CHECK_OK(prx_sigmf_write(w, x, 256));
    prx_sigmf_writer_discard(w);
    CHECK(test_files_named(dir, "gone") == 0, "a discarded recording left %d file(s)",
          test_files_named(dir, "gone"));
    CHECK(test_open_fds() == fds, "descriptors after discard: %d, before %d", test_open_fds(), fds);
  }
  /* a write error (a file-size limit below the data's size): close fails, nothing is left */
  struct rlimit old;
  CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit");
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  CHECK_OK(prx_sigmf_writer_open_direct(path_in("full"), &m, &w));
  CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  struct rlimit lim = {1000, old.rlim_max};
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
  prx_status st = PRX_OK;
  for (int i = 0; i < 8 && !st; i++) st = prx_sigmf_write(w, x, 256);
  prx_status st_end = prx_sigmf_writer_end_data(w);
  prx_status st_close = prx_sigmf_writer_close(w);
  CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0, "setrlimit back");
  signal(SIGXFSZ, prev);
  CHECK(st_close == PRX_ERR_IO && (st || st_end), "a write error is kept: %d %d %d", st, st_end,
        st_close);
  CHECK(test_files_named(dir, "full") == 0, "a failed recording left %d file(s)",
        test_files_named(dir, "full"));
  CHECK(test_open_fds() == fds, "descriptors after a failed close: %d, before %d", test_open_fds(),
        fds);
  /* a data file already there: refused, the file kept as it was */
  FILE *f = fopen(path_in("taken.sigmf-data"), "wb");
  CHECK(f && fputs("someone's\n", f) >= 0 && fclose(f) == 0, "the other file");
  w = NULL;
  CHECK(prx_sigmf_writer_open_direct(path_in("taken"), &m, &w) == PRX_ERR_IO && !w,
        "a data file there is refused");
  size_t nt = 0;
  char *t = test_slurp(path_in("taken.sigmf-data"), &nt);
  CHECK(t && nt == 10 && !memcmp(t, "someone's\n", 10), "the file there kept");
  free(t);
  CHECK(test_files_named(dir, "taken") == 1, "nothing beside it: %d",
        test_files_named(dir, "taken"));
  /* archives are written through a temporary archive, never directly */
  CHECK(prx_sigmf_writer_open_direct(path_in("a.sigmf"), &m, &w) == PRX_ERR_INVALID && !w,
        "an archive is refused");
  CHECK(prx_sigmf_writer_set_buffer(NULL, 4096) == PRX_ERR_INVALID, "a NULL writer is refused");
  CHECK(test_open_fds() == fds, "descriptors at the end: %d, before %d", test_open_fds(), fds);
}

int main(void) {
  if (test_tmpdir(dir, sizeof dir, "sigmf-direct")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261202);
  test_same_bytes(&rng);
  test_failures_leave_nothing(&rng);
  if (!test_failures) test_tmpdir_remove(dir);
  return test_finish("test_sigmf_direct");
}
