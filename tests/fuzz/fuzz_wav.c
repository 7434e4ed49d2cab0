/* Fuzz target: the WAV reader (prx_iq_open on a file that begins "RIFF"/"RF64" ... "WAVE", then
 * prx_iq_read to the end) on arbitrary bytes written to a temporary file named *.wav.
 *
 * Invariants (include/polyrx/io.h): an open either fails with FORMAT, UNSUPPORTED, INVALID, IO
 * or NOMEM and a message, returning no reader, or gives a WAV reader (is_wav, a known stored type,
 * the data inside the file); reads then hand out complete samples, never more than the data
 * chunk's extent holds, and end with a count of 0 or PRX_ERR_TRUNCATED (a data chunk that ends
 * inside a sample), having handed out exactly the extent's whole samples (a KiwiSDR file's data
 * chunks as one stream, with zeros for the samples its time stamps say were lost); positional
 * reads give the same samples. */
#include "fuzz_reads.h"

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  prx_iq_reader *r = NULL;
  prx_status st = fuzz_open_file("wav", "wav", data, size, path, &r);
  int wav_magic = prx_wav_sniff(data, size);
  if (st) {
    FUZZ_CHECK(wav_magic, "a raw file refused: %s", prx_last_error());
    fuzz_refused_open(st, r, path);
    return 0;
  }
  const prx_iq_info *info = prx_iq_reader_info(r);
  const prx_wav_info *w = prx_iq_reader_wav(r);
  FUZZ_CHECK(!!w == wav_magic && info->is_wav == wav_magic, "WAV magic %d, reader's WAV %d",
             wav_magic, info->is_wav);
  uint64_t whole = 0, extra = 0;
  FUZZ_CHECK(prx_iq_reader_extent(r, &whole, &extra), "a file of unknown extent");
  uint64_t stored = 0;
  if (w) {
    FUZZ_CHECK(w->bits == 8 || w->bits == 16 || w->bits == 24 || w->bits == 32 || w->bits == 64,
               "%d bits", w->bits);
    FUZZ_CHECK(w->data_offset <= size && w->data_bytes <= size - w->data_offset,
               "data %llu bytes at %llu in a file of %zu", (unsigned long long)w->data_bytes,
               (unsigned long long)w->data_offset, size);
    stored = (uint64_t)w->bits / 4;
    const uint64_t bytes = w->data_bytes + w->gps_filled * stored; /* the gaps' zeros too */
    FUZZ_CHECK(w->gps_filled == 0 || w->gps_gaps, "%llu zeros without a gap",
               (unsigned long long)w->gps_filled);
    FUZZ_CHECK(whole == bytes / stored && extra == bytes % stored,
               "extent %llu + %llu for %llu bytes", (unsigned long long)whole,
               (unsigned long long)extra, (unsigned long long)w->data_bytes);
    FUZZ_CHECK(info->sample_rate > 0, "rate %g", info->sample_rate);
  }
  /* the sequential read kept (up to a bound) for the positional reads below */
  const size_t ss = prx_format_size(info->format), keep = 1 << 16;
  const int positional = prx_iq_reader_positional(r);
  unsigned char *all = malloc(keep * ss);
  FUZZ_CHECK(all != NULL, "out of memory");
  unsigned char buf[64 * 16];
  uint64_t total = 0;
  for (int calls = 0;; calls++) {
    size_t n = 0, max = 1 + (size_t)calls % 64;
    st = prx_iq_read(r, buf, max, &n);
    if (n && total + n <= keep) memcpy(all + total * ss, buf, n * ss);
    if (st) {
      FUZZ_CHECK(st == PRX_ERR_TRUNCATED && extra, "read status %d: %s", (int)st, prx_last_error());
      FUZZ_CHECK_ERROR(st, "prx_iq_read");
      break;
    }
    FUZZ_CHECK(n <= max, "read %zu > %zu samples", n, max);
    if (n == 0) break;
    total += n;
  }
  FUZZ_CHECK(total == whole, "read %llu samples, the extent holds %llu", (unsigned long long)total,
             (unsigned long long)whole);
  /* positional reads (several threads' way: KiwiSDR files through their chunk runs) give the
   * sequential read's samples */
  if (positional && total <= keep)
    fuzz_positional_reads(r, all, total, ss, info->format == PRX_CF32, size);
  free(all);
  prx_iq_close(r);
  unlink(path);
  return 0;
}
