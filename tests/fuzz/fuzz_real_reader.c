/* Fuzz target: real samples read as complex (prx_iq_open_real, the half-band converter) on an
 * arbitrary byte stream in each real format, from a regular file.
 *
 * Input layout: byte 0 picks the format (bits 0-1), byte 1 the read size in complex samples
 * (1..64), byte 2 where the positional reads start; the rest is the stream.
 *
 * Invariants (include/polyrx/io.h, "real samples"): a stream of N whole real samples reads as
 * ceil(N / 2) complex samples, each read at most its max and 0 only at the end; a partial real
 * sample after them gives PRX_ERR_TRUNCATED, every time it is asked again; prx_iq_reader_samples
 * counts the complex samples handed out; positional reads of any range give the sequential
 * read's samples bit for bit (the converter computes a block alone as it does in the stream),
 * but for which NaN a NaN is: where the stream holds NaNs, the payload an output takes from them
 * depends on the operands' order the compiler chose in each loop (gcc 13 on the GPU host: the
 * vector and the scalar loop differ), and the pipeline zeroes non-finite samples anyway. */
#include "fuzz.h"

#include "io/io_internal.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

static int file_fd = -1;
static char file_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  static const char *const names[4] = {"ri8", "ru8", "ri16", "rf32"};
  static const size_t width[4] = {1, 1, 2, 4};
  const int f = data[0] & 3;
  const size_t step = 1 + data[1] % 64, ss = width[f];
  const uint8_t *s = data + 3;
  const size_t len = size - 3, n_real = len / ss, n_out = (n_real + 1) / 2;
  if (file_fd < 0) {
    file_fd = memfd_create("polyrx-fuzz-real", MFD_CLOEXEC);
    FUZZ_CHECK(file_fd >= 0, "memfd_create failed: %s", strerror(errno));
    snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
  }
  FUZZ_CHECK(ftruncate(file_fd, 0) == 0 && pwrite(file_fd, s, len, 0) == (ssize_t)len,
             "cannot write the test file");
  prx_real_format rf;
  FUZZ_CHECK(prx_real_format_parse(names[f], &rf) == PRX_OK, "%s not parsed", names[f]);
  prx_iq_reader *r = NULL;
  prx_status st = prx_iq_open_real(file_path, rf, &r);
  FUZZ_CHECK(st == PRX_OK && r, "open: %s", prx_last_error());
  prx_cf32 *all = malloc((n_out + 64) * sizeof *all);
  FUZZ_CHECK(all != NULL, "out of memory");
  size_t total = 0;
  for (;;) {
    size_t got = 0;
    st = prx_iq_read(r, all + total, step, &got);
    if (st) {
      FUZZ_CHECK(st == PRX_ERR_TRUNCATED && len % ss && total == n_out,
                 "read status %d after %zu of %zu samples: %s", (int)st, total, n_out,
                 prx_last_error());
      FUZZ_CHECK_ERROR(st, "prx_iq_read");
      size_t again = 1;
      FUZZ_CHECK(prx_iq_read(r, all + total, step, &again) == PRX_ERR_TRUNCATED && again == 0,
                 "the cut sample not said again");
      break;
    }
    FUZZ_CHECK(got <= step, "read %zu > %zu samples", got, step);
    if (got == 0) {
      FUZZ_CHECK(len % ss == 0, "a clean end with %zu leftover bytes", len % ss);
      break;
    }
    total += got;
    FUZZ_CHECK(total <= n_out, "%zu samples from %zu real ones", total, n_real);
  }
  FUZZ_CHECK(total == n_out && prx_iq_reader_samples(r) == n_out,
             "%zu samples (counted %llu) from %zu real ones", total,
             (unsigned long long)prx_iq_reader_samples(r), n_real);
  /* positional reads against the sequential read, bit for bit */
  prx_cf32 *at = malloc((n_out + 64) * sizeof *at);
  FUZZ_CHECK(at != NULL, "out of memory");
  for (int k = 0; k < 3 && n_out; k++) {
    uint64_t first = ((uint64_t)data[2] * 131 + (uint64_t)k * 977) % n_out;
    size_t want = 1 + (size_t)(data[2] + 37 * k) % (n_out + 3), got = 0;
    st = prx_iq_read_at(r, at, first, want, &got);
    size_t expect = first + want <= n_out ? want : (size_t)(n_out - first);
    FUZZ_CHECK(got == expect &&
                   fuzz_same_floats((const float *)at, (const float *)(all + first), 2 * got),
               "read_at %llu +%zu: %zu samples (%zu), or not the sequential read's",
               (unsigned long long)first, want, got, expect);
    FUZZ_CHECK(st == PRX_OK || (st == PRX_ERR_TRUNCATED && len % ss && first + want >= n_out),
               "read_at status %d: %s", (int)st, prx_last_error());
  }
  free(at);
  free(all);
  prx_iq_close(r);
  return 0;
}
