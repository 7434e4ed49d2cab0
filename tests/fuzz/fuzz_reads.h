/* What the fuzz targets of the file readers (wav, sdriq, sigmf_archive) check alike: a refused
 * open, and positional reads against the sequential read. */
#ifndef PRX_FUZZ_READS_H
#define PRX_FUZZ_READS_H

#include "fuzz.h"

#include "io/io_internal.h"

#include <unistd.h>

/* The input written to this process's file /tmp/polyrx-fuzz-NAME-PID.EXT (its name into path,
 * once) and opened with prx_iq_open (r set to a non-NULL value first: a failed open must clear
 * it); the open's status. */
static inline prx_status fuzz_open_file(const char *name, const char *ext, const uint8_t *data,
                                        size_t size, char path[64], prx_iq_reader **r) {
  if (!path[0]) snprintf(path, 64, "/tmp/polyrx-fuzz-%s-%ld.%s", name, (long)getpid(), ext);
  FILE *f = fopen(path, "wb");
  FUZZ_CHECK(f != NULL, "cannot create %s", path);
  FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
  *r = (prx_iq_reader *)1;
  fuzz_clear_error();
  return prx_iq_open(path, PRX_CF32, r);
}

/* A failed open: one of the statuses a file can give, with a message, no reader; the file at
 * path removed. */
static inline void fuzz_refused_open(prx_status st, const prx_iq_reader *r, const char *path) {
  FUZZ_CHECK(st == PRX_ERR_FORMAT || st == PRX_ERR_UNSUPPORTED || st == PRX_ERR_INVALID ||
                 st == PRX_ERR_IO || st == PRX_ERR_NOMEM,
             "open status %d: %s", (int)st, prx_last_error());
  FUZZ_CHECK_ERROR(st, "prx_iq_open");
  FUZZ_CHECK(r == NULL, "a failed open returned a reader");
  unlink(path);
}

/* Three positional reads (at places drawn from salt) give the sequential read's samples: all
 * holds the stream's total samples of ss bytes (cf32: compared bit for bit or both NaN). */
static inline void fuzz_positional_reads(prx_iq_reader *r, const unsigned char *all, uint64_t total,
                                         size_t ss, int cf32, size_t salt) {
  unsigned char buf[64 * 16];
  for (int i = 0; i < 3 && total; i++) {
    uint64_t first = (uint64_t)(i * 7919 + salt) % total;
    size_t max = 1 + (size_t)((i * 104729 + salt) % 64), n = 0;
    prx_status pst = prx_iq_read_at(r, buf, first, max, &n);
    size_t expect = total - first < max ? (size_t)(total - first) : max;
    FUZZ_CHECK(n == expect && (!pst || pst == PRX_ERR_TRUNCATED),
               "read_at %llu + %zu: %zu samples (%zu), status %d", (unsigned long long)first, max,
               n, expect, (int)pst);
    int same = cf32 ? fuzz_same_floats((const float *)buf, (const float *)(all + first * ss), 2 * n)
                    : !memcmp(buf, all + first * ss, n * ss);
    FUZZ_CHECK(same, "read_at %llu + %zu: not the sequential read's samples",
               (unsigned long long)first, max);
  }
}

#endif
