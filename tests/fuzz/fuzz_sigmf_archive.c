/* Fuzz target: the SigMF archive reader (prx_iq_open on a .sigmf tar file, then prx_iq_read to
 * the end) on arbitrary bytes written to a temporary file named *.sigmf.
 *
 * Invariants (include/polyrx/io.h): an open either fails with FORMAT, UNSUPPORTED, INVALID or IO
 * and a message, returning no reader, or gives a SigMF reader (is_sigmf, metadata with
 * is_archive = 1 and at least one capture); reads then hand out complete samples, never more
 * bytes than the archive holds, and end with a count of 0 or PRX_ERR_TRUNCATED (a data member
 * that ends inside a sample); prx_iq_reader_samples counts what was handed out. */
#include "fuzz_reads.h"

#include <sys/stat.h>
#include <unistd.h>

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  prx_iq_reader *r = NULL;
  prx_status st = fuzz_open_file("archive", "sigmf", data, size, path, &r);
  if (st) {
    fuzz_refused_open(st, r, path);
    return 0;
  }
  const prx_iq_info *info = prx_iq_reader_info(r);
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  FUZZ_CHECK(info->is_sigmf && rec && rec->is_archive && rec->n_captures >= 1,
             "an archive read without its metadata");
  size_t ss = prx_format_size(info->format);
  unsigned char buf[64 * 16];
  uint64_t total = 0;
  for (int calls = 0;; calls++) {
    size_t n = 0, max = 1 + (size_t)calls % 64;
    st = prx_iq_read(r, buf, max, &n);
    if (st) {
      FUZZ_CHECK(st == PRX_ERR_TRUNCATED, "read status %d: %s", (int)st, prx_last_error());
      FUZZ_CHECK_ERROR(st, "prx_iq_read");
      break;
    }
    FUZZ_CHECK(n <= max, "read %zu > %zu samples", n, max);
    if (n == 0) break;
    total += n;
    FUZZ_CHECK(total * ss <= size, "read %llu samples (%zu bytes each) from %zu bytes",
               (unsigned long long)total, ss, size);
  }
  FUZZ_CHECK(prx_iq_reader_samples(r) == total, "sample counter %llu, handed out %llu",
             (unsigned long long)prx_iq_reader_samples(r), (unsigned long long)total);
  prx_iq_close(r);
  unlink(path);
  return 0;
}
