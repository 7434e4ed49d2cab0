/* I and Q exchanged as read (prx_iq_reader_swap_iq): every format, read in chunks of random size
 * through prx_iq_read and at random places through prx_iq_read_at, gives each stored sample with
 * its two components exchanged and nothing else changed; a swapping reader is never handed to a
 * mapping of its file (which would give the bytes as stored). */
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

/* sample i of stored, its components exchanged, equals sample i of got (w: bytes a component) */
static size_t mismatches(const unsigned char *stored, const unsigned char *got, size_t n,
                         size_t w) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *s = stored + 2 * w * i, *g = got + 2 * w * i;
    bad += memcmp(g, s + w, w) != 0 || memcmp(g + w, s, w) != 0;
  }
  return bad;
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "swap")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 4122026);
  static const prx_format fmts[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};
  const size_t n = 100003;
  for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
    size_t ss = prx_format_size(fmts[f]);
    unsigned char *stored = malloc(n * ss), *got = malloc((n + 64) * ss);
    for (size_t i = 0; i < n * ss; i++) stored[i] = (unsigned char)test_rng_u64(&rng);
    const char *path = test_path(tmpdir, "x.raw");
    FILE *fp = fopen(path, "wb");
    CHECK(fp && fwrite(stored, 1, n * ss, fp) == n * ss && !fclose(fp), "cannot write %s", path);
    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(path, fmts[f], &r));
    if (!r) continue;
    prx_iq_reader_swap_iq(r, 1);
    int fd;
    uint64_t base, limit;
    CHECK(prx_iq_reader_positional(r) && !prx_iq_reader_file(r, &fd, &base, &limit),
          "%s: a swapping reader offered for a mapping", prx_format_name(fmts[f]));
    /* positional reads at random places */
    for (int k = 0; k < 20; k++) {
      uint64_t first = test_rng_u64(&rng) % n;
      size_t want = 1 + test_rng_u64(&rng) % 5000, m = 0;
      CHECK_OK(prx_iq_read_at(r, got, first, want, &m));
      size_t expect = first + want <= n ? want : n - first;
      CHECK(m == expect && !mismatches(stored + first * ss, got, m, ss / 2),
            "%s: read_at %llu +%zu gave %zu samples, or not exchanged", prx_format_name(fmts[f]),
            (unsigned long long)first, want, m);
    }
    /* the stream in chunks of random size */
    size_t total = 0, m = 0;
    do {
      size_t want = 1 + test_rng_u64(&rng) % 7000;
      if (want > n + 64 - total) want = n + 64 - total;
      CHECK_OK(prx_iq_read(r, got + total * ss, want, &m));
      total += m;
    } while (m && total < n + 64);
    CHECK(total == n && !mismatches(stored, got, n, ss / 2),
          "%s: read %zu of %zu, %zu exchanged wrong", prx_format_name(fmts[f]), total, n,
          mismatches(stored, got, total < n ? total : n, ss / 2));
    prx_iq_close(r);
    free(stored);
    free(got);
  }
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io_swap");
}
