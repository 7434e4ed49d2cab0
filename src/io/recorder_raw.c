/* Raw recordings whose recorder says their rate and centre outside the samples: SDRangel's
 * .sdriq files (a 32-byte header, checked by its CRC32) and gqrx's file names
 * (gqrx_YYYYMMDD_HHMMSS_FREQ_RATE_fc.raw, the time in UTC). */
#include "io_internal.h"

#include "../core/internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of n bytes, bit by bit: 28 bytes a file. */
static uint32_t crc32_ieee(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c >> 1 ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

void prx_sdriq_header_make(unsigned char h[PRX_SDRIQ_HEADER_BYTES], uint32_t rate, uint64_t centre,
                           uint64_t start_ms, uint32_t bits) {
  memset(h, 0, PRX_SDRIQ_HEADER_BYTES);
  for (int i = 0; i < 4; i++) h[i] = (unsigned char)(rate >> 8 * i);
  for (int i = 0; i < 8; i++) h[4 + i] = (unsigned char)(centre >> 8 * i);
  for (int i = 0; i < 8; i++) h[12 + i] = (unsigned char)(start_ms >> 8 * i);
  for (int i = 0; i < 4; i++) h[20 + i] = (unsigned char)(bits >> 8 * i);
  uint32_t crc = crc32_ieee(h, 28);
  for (int i = 0; i < 4; i++) h[28 + i] = (unsigned char)(crc >> 8 * i);
}

prx_status prx_sdriq_read_header(int fd, const char *path, prx_recorder_raw *h) {
  memset(h, 0, sizeof *h);
  unsigned char b[PRX_SDRIQ_HEADER_BYTES];
  size_t done = 0;
  while (done < sizeof b) {
    ssize_t got = pread(fd, b + done, sizeof b - done, (off_t)done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return prx_fail(PRX_ERR_IO, "cannot read the header of '%s': %s", path, strerror(errno));
    if (got == 0)
      return prx_fail(PRX_ERR_FORMAT, "SDRangel file '%s' holds %zu bytes: its header alone has %d",
                      path, done, PRX_SDRIQ_HEADER_BYTES);
    done += (size_t)got;
  }
  uint32_t rate = prx_le32(b), bits = prx_le32(b + 20), crc = prx_le32(b + 28);
  uint64_t centre = prx_le64(b + 4), stamp = prx_le64(b + 12);
  if (crc32_ieee(b, 28) != crc)
    return prx_fail(PRX_ERR_FORMAT,
                    "SDRangel file '%s': its header's CRC32 does not match (a damaged header, or "
                    "one older than SDRangel 4.2.1: its rescuesdriq tool rewrites it)",
                    path);
  if (bits != 16 && bits != 24)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "SDRangel file '%s': sample size %u bits (16 or 24 are written)", path, bits);
  if (rate == 0) return prx_fail(PRX_ERR_FORMAT, "SDRangel file '%s': sample rate 0", path);
  h->recorder = "SDRangel .sdriq";
  h->bits = (int)bits;
  h->sample_rate = rate;
  h->center_freq = (double)centre;
  /* the start: seconds since 1970 before SDRangel 6.16.2, milliseconds since (above 1e11
   * seconds is past the year 5000) */
  if (stamp) {
    int64_t sec = stamp > 100000000000ull ? (int64_t)(stamp / 1000) : (int64_t)stamp;
    int ms = stamp > 100000000000ull ? (int)(stamp % 1000) : 0;
    prx_utc_text(sec, ms, ms ? 3 : 0, h->start_utc, sizeof h->start_utc);
  }
  return PRX_OK;
}

int prx_gqrx_name(const char *path, prx_recorder_raw *h) {
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  /* gqrx_ 8 digits _ 6 digits _ digits _ digits _fc.raw */
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  unsigned long long hz = 0, rate = 0;
  int used = 0;
  if (strncmp(name, "gqrx_", 5) ||
      sscanf(name + 5, "%4d%2d%2d_%2d%2d%2d_%llu_%llu_fc.raw%n", &tm.tm_year, &tm.tm_mon,
             &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &hz, &rate, &used) != 8 ||
      name[5 + used] != '\0')
    return 0;
  for (int i = 5; i < 20; i++)
    if (i != 13 && !isdigit((unsigned char)name[i])) return 0;
  if (!rate || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t t = timegm(&tm);
  memset(h, 0, sizeof *h);
  h->recorder = "gqrx file name";
  h->sample_rate = (double)rate;
  h->center_freq = (double)hz;
  if (t != (time_t)-1) prx_utc_text((int64_t)t, 0, 0, h->start_utc, sizeof h->start_utc);
  return 1;
}
