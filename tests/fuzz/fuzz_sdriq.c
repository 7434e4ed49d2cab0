/* Fuzz target: SDRangel's .sdriq reader (prx_iq_open on a file named *.sdriq: its 32-byte header
 * and the samples after it), read to the end sequentially and at three places positionally.
 *
 * Invariants (include/polyrx/io.h): an open either fails with FORMAT, UNSUPPORTED, INVALID, IO or
 * NOMEM and a message, returning no reader, or gives a reader whose origin is the .sdriq header
 * (16 or 24 bits, a rate above 0, ci16 for 16 bits and cf32 for 24), whose extent is the bytes
 * after the header in whole samples (4 or 8 bytes); reads hand out exactly the extent's samples
 * and end with 0 or PRX_ERR_TRUNCATED (only where bytes of a partial sample are left); positional
 * reads give the sequential read's samples (cf32: bit for bit or both NaN). */
#include "fuzz_reads.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  prx_iq_reader *r = NULL;
  prx_status st = fuzz_open_file("sdriq", "sdriq", data, size, path, &r);
  if (st) {
    fuzz_refused_open(st, r, path);
    return 0;
  }
  const prx_iq_info *info = prx_iq_reader_info(r);
  const prx_iq_origin *o = prx_iq_reader_origin(r);
  FUZZ_CHECK(size >= PRX_SDRIQ_HEADER_BYTES && o && (o->bits == 16 || o->bits == 24),
             "an .sdriq reader of %zu bytes without its header's origin", size);
  FUZZ_CHECK(info->sample_rate > 0 && info->format == (o->bits == 16 ? PRX_CI16 : PRX_CF32),
             "rate %g, format %d for %d bits", info->sample_rate, (int)info->format, o->bits);
  const size_t stored = o->bits == 16 ? 4 : 8, body = size - PRX_SDRIQ_HEADER_BYTES;
  uint64_t whole = 0, extra = 0;
  FUZZ_CHECK(prx_iq_reader_extent(r, &whole, &extra) && whole == body / stored &&
                 extra == body % stored,
             "extent %llu + %llu for %zu bytes of %zu-byte samples", (unsigned long long)whole,
             (unsigned long long)extra, body, stored);
  const size_t ss = prx_format_size(info->format);
  unsigned char *all = malloc((whole + 1) * ss); /* a read asks for one more at the end */
  FUZZ_CHECK(all != NULL, "out of memory");
  uint64_t total = 0;
  for (int calls = 0;; calls++) {
    size_t n = 0, max = 1 + (size_t)calls % 37;
    if (max > whole - total + 1) max = (size_t)(whole - total + 1);
    st = prx_iq_read(r, all + total * ss, max, &n);
    if (st) {
      FUZZ_CHECK(st == PRX_ERR_TRUNCATED && extra, "read status %d: %s", (int)st, prx_last_error());
      break;
    }
    if (n == 0) break;
    total += n;
    FUZZ_CHECK(total <= whole, "read %llu samples, the extent holds %llu",
               (unsigned long long)total, (unsigned long long)whole);
  }
  FUZZ_CHECK(total == whole, "read %llu samples, the extent holds %llu", (unsigned long long)total,
             (unsigned long long)whole);
  fuzz_positional_reads(r, all, total, ss, info->format == PRX_CF32, size);
  free(all);
  prx_iq_close(r);
  unlink(path);
  return 0;
}
