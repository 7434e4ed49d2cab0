/* The metadata's unnamed file made at the start (prx_sigmf_writer_prepare_meta): a recording
 * written so is byte for byte the one written without it (data and metadata, the hash close
 * gives is the file's); the descriptor it holds is given back by close and by discard; a
 * discarded recording leaves no file; a .sigmf-meta that appears before close (another process)
 * is replaced as without; an archive writer makes nothing; a NULL writer is refused. */
#include "testutil.h"

#include "io/io_internal.h"
#include "polyrx/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static char *path_in(const char *name) { return test_path(dir, name); }

static prx_sigmf_meta test_meta(void) {
  prx_sigmf_meta m = prx_sigmf_meta_default();
  m.sample_rate = 48e3;
  m.center_freq = 433.92e6;
  m.description = "meta ahead";
  m.datetime = "2026-12-02T04:00:00Z";
  return m;
}

/* Writes base with (ahead) or without the metadata made ahead; the hash close gives into hex. */
static void write_one(const char *base, int ahead, const prx_cf32 *x, size_t n, char hex[129]) {
  prx_sigmf_meta m = test_meta();
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open_new(path_in(base), &m, &w));
  if (ahead) CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  CHECK_OK(prx_sigmf_writer_add_extension(w, "polyrx", "0.1.0", 1));
  CHECK_OK(prx_sigmf_write(w, x, n / 2));
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:power_dbfs", -12.25));
  CHECK_OK(prx_sigmf_write(w, x + n / 2, n - n / 2));
  CHECK_OK(prx_sigmf_writer_end_data(w));
  CHECK_OK(prx_sigmf_writer_close_hash(w, hex));
}

static void test_same_bytes(test_rng *rng) {
  size_t n = 1000 + (size_t)(test_rng_u64(rng) % 500);
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 0.7);
  char h0[129], h1[129];
  int fds = test_open_fds();
  write_one("late", 0, x, n, h0);
  write_one("ahead", 1, x, n, h1);
  CHECK(test_open_fds() == fds, "descriptors open after close: %d, before %d", test_open_fds(),
        fds);
  const char *ext[2] = {".sigmf-data", ".sigmf-meta"};
  for (int k = 0; k < 2; k++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "late%s", ext[k]);
    snprintf(b, sizeof b, "ahead%s", ext[k]);
    size_t na = 0, nb = 0;
    char *ta = test_slurp(path_in(a), &na), *tb = test_slurp(path_in(b), &nb);
    CHECK(ta && tb && na == nb && na > 0 && !memcmp(ta, tb, na), "%s: the same bytes either way",
          ext[k]);
    if (k == 0) CHECK(na == n * sizeof *x && !memcmp(ta, x, na), "the data is the samples");
    if (k == 1) {
      char want[129];
      prx_sha512_hex(tb ? tb : "", nb, want);
      CHECK(!strcmp(h1, want) && !strcmp(h0, h1), "the hash close gives is the file's");
    }
    free(ta);
    free(tb);
  }
  CHECK(test_files_named(dir, "ahead") == 2 && test_files_named(dir, "late") == 2,
        "no temporary file left");
  free(x);
}

static void test_discard_and_replace(test_rng *rng) {
  prx_cf32 x[64];
  test_fill_cf32(rng, x, 64, 0.5);
  prx_sigmf_meta m = test_meta();
  prx_sigmf_writer *w = NULL;
  int fds = test_open_fds();
  /* discarded: no file, no descriptor */
  CHECK_OK(prx_sigmf_writer_open_new(path_in("gone"), &m, &w));
  CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  CHECK_OK(prx_sigmf_writer_prepare_meta(w)); /* a second call makes nothing more */
  CHECK(test_open_fds() == fds + 2, "data file and unnamed file open: %d, before %d",
        test_open_fds(), fds);
  CHECK_OK(prx_sigmf_write(w, x, 64));
  prx_sigmf_writer_discard(w);
  CHECK(test_files_named(dir, "gone") == 0, "a discarded recording left %d file(s)",
        test_files_named(dir, "gone"));
  CHECK(test_open_fds() == fds, "descriptors after discard: %d, before %d", test_open_fds(), fds);

  /* a .sigmf-meta made by someone else before close: replaced, as without the early file */
  char h[129];
  write_one("ref", 0, x, 64, h);
  CHECK_OK(prx_sigmf_writer_open_new(path_in("taken"), &m, &w));
  CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  CHECK_OK(prx_sigmf_writer_add_extension(w, "polyrx", "0.1.0", 1));
  CHECK_OK(prx_sigmf_write(w, x, 32));
  CHECK_OK(prx_sigmf_writer_set_number(w, "polyrx:power_dbfs", -12.25));
  CHECK_OK(prx_sigmf_write(w, x + 32, 32));
  FILE *f = fopen(path_in("taken.sigmf-meta"), "wb");
  CHECK(f && fputs("not this\n", f) >= 0 && fclose(f) == 0, "the other file");
  CHECK_OK(prx_sigmf_writer_close_hash(w, h));
  size_t na = 0, nb = 0;
  char *ta = test_slurp(path_in("ref.sigmf-meta"), &na),
       *tb = test_slurp(path_in("taken.sigmf-meta"), &nb);
  CHECK(ta && tb && na == nb && !memcmp(ta, tb, na), "the metadata there replaced");
  free(ta);
  free(tb);
  CHECK(test_files_named(dir, "taken") == 2, "no temporary file beside it: %d",
        test_files_named(dir, "taken"));
  CHECK(test_open_fds() == fds, "descriptors after close: %d, before %d", test_open_fds(), fds);

  /* an archive: nothing made */
  CHECK_OK(prx_sigmf_writer_open(path_in("arch.sigmf"), &m, &w));
  CHECK_OK(prx_sigmf_writer_prepare_meta(w));
  CHECK(test_open_fds() == fds + 1, "an archive holds only its file: %d, before %d",
        test_open_fds(), fds);
  CHECK_OK(prx_sigmf_write(w, x, 64));
  CHECK_OK(prx_sigmf_writer_close(w));
  CHECK(test_files_named(dir, "arch") == 1 && test_open_fds() == fds, "the archive alone");
  CHECK(prx_sigmf_writer_prepare_meta(NULL) == PRX_ERR_INVALID, "a NULL writer is refused");
}

int main(void) {
  if (test_tmpdir(dir, sizeof dir, "meta-ahead")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261202);
  test_same_bytes(&rng);
  test_discard_and_replace(&rng);
  if (!test_failures) test_tmpdir_remove(dir);
  return test_finish("test_sigmf_meta_ahead");
}
