/* WAV (RIFF and RF64) I/Q recordings: the header's chunks walked with pread(2) to find the
 * sample format, the rate, the centre frequency (an auxi or rcvr chunk, else the file name) and
 * where the samples lie (the reader converts the types it does not hand out as stored, and real
 * one-channel files, as it reads). The data chunk's extent is never guessed silently: sizes a
 * writer did not fill in or that wrapped past 4 GiB are recognised by the chunks around them, and
 * bytes after the data that are no chunk are an error. A KiwiSDR file's many data chunks, each
 * after its time stamp, are walked by src/io/wav_kiwi.c. */
#include "io_internal.h"

#include "../core/internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAV_FORMAT_PCM 1
#define WAV_FORMAT_FLOAT 3
#define WAV_FORMAT_EXTENSIBLE 0xFFFE
#define FOUR_GIB ((uint64_t)1 << 32)

int prx_wav_sniff(const unsigned char *head, size_t n) {
  return n >= 12 && (!memcmp(head, "RIFF", 4) || !memcmp(head, "RF64", 4)) &&
         !memcmp(head + 8, "WAVE", 4);
}

prx_status prx_wav_read_exact(int fd, const char *path, uint64_t off, void *buf, size_t n,
                              const char *what) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return prx_fail(PRX_ERR_IO, "cannot read the WAV header of '%s': %s", path, strerror(errno));
    if (got == 0)
      return prx_fail(PRX_ERR_FORMAT, "WAV file '%s' ends inside its %s (at byte %llu)", path, what,
                      (unsigned long long)(off + done));
    done += (size_t)got;
  }
  return PRX_OK;
}

/* 1 when the 8 bytes at off of a file of file_size bytes are a chunk header: four printable
 * ASCII characters and a size that fits in the file (a pad byte may be missing at its end). */
static int chunk_at(int fd, uint64_t off, uint64_t file_size) {
  unsigned char h[8];
  if (off + 8 > file_size || pread(fd, h, 8, (off_t)off) != 8) return 0;
  for (int i = 0; i < 4; i++)
    if (h[i] < 0x20 || h[i] > 0x7e) return 0;
  return prx_le32(h + 4) <= file_size - off - 8;
}

/* The fmt chunk: two channels of PCM 8/16/24/32 or float 32/64. */
static prx_status parse_fmt(prx_wav_header *h, const char *path, const unsigned char *c,
                            uint32_t size) {
  if (size < 16)
    return prx_fail(PRX_ERR_FORMAT, "WAV file '%s': its fmt chunk has %u bytes (16 at least)", path,
                    size);
  unsigned tag = prx_le16(c), channels = prx_le16(c + 2), align = prx_le16(c + 12),
           bits = prx_le16(c + 14);
  uint32_t rate = prx_le32(c + 4);
  if (tag == WAV_FORMAT_EXTENSIBLE) {
    /* the format's code is the first two bytes of the SubFormat GUID, whose other 14 bytes are
     * the KSDATAFORMAT base */
    static const unsigned char base[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                           0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71};
    if (size < 40 || prx_le16(c + 16) < 22 || memcmp(c + 26, base, 14))
      return prx_fail(PRX_ERR_UNSUPPORTED,
                      "WAV file '%s': WAVE_FORMAT_EXTENSIBLE with a sub-format polyrx does not "
                      "know (PCM and IEEE float are read)",
                      path);
    tag = prx_le16(c + 24);
  }
  if (channels != 1 && channels != 2)
    return prx_fail(PRX_ERR_FORMAT,
                    "WAV file '%s' has %u channels: an I/Q recording has two (I, then Q), a real "
                    "one one",
                    path, channels);
  int known = (tag == WAV_FORMAT_PCM && (bits == 8 || bits == 16 || bits == 24 || bits == 32)) ||
              (tag == WAV_FORMAT_FLOAT && (bits == 32 || bits == 64));
  if (!known)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "WAV file '%s': format code %u with %u bits per sample; polyrx reads PCM of "
                    "8, 16, 24 or 32 bits and IEEE float of 32 or 64",
                    path, tag, bits);
  if (align != channels * bits / 8)
    return prx_fail(PRX_ERR_FORMAT,
                    "WAV file '%s': block align %u does not fit %u channel%s of %u bits (%u bytes)",
                    path, align, channels, channels == 1 ? "" : "s", bits, channels * bits / 8);
  if (rate == 0) return prx_fail(PRX_ERR_FORMAT, "WAV file '%s': sample rate 0", path);
  h->wav.bits = (int)bits;
  h->wav.is_float = tag == WAV_FORMAT_FLOAT;
  h->wav.channels = (int)channels;
  h->stored = (prx_stored){(int)bits, tag == WAV_FORMAT_FLOAT, bits == 8, 0, 0};
  h->file_sample_bytes = align;
  h->sample_rate = h->wav.header_rate = rate;
  h->wav.rate_from = "fmt chunk";
  /* two channels of 8 or 16 bits or float 32 are read as stored; the rest converted to cf32
   * (real samples through the half-band converter) */
  h->convert = channels == 1 || !(bits == 8 || bits == 16 || (bits == 32 && h->wav.is_float));
  h->format = h->convert ? PRX_CF32 : bits == 8 ? PRX_CU8 : bits == 16 ? PRX_CI16 : PRX_CF32;
  return PRX_OK;
}

/* auxi (SpectraVue, HDSDR, SDR#, SDRuno): SYSTEMTIME start, SYSTEMTIME stop, centre (Hz), ... */
static void parse_auxi(prx_wav_header *h, const unsigned char *c, uint32_t size) {
  if (size < 36) return;
  uint32_t hz = prx_le32(c + 32);
  if (hz) {
    h->center_freq = hz;
    h->wav.center_from = "auxi chunk";
  }
  unsigned y = prx_le16(c), mo = prx_le16(c + 2), d = prx_le16(c + 6), hh = prx_le16(c + 8),
           mi = prx_le16(c + 10), s = prx_le16(c + 12), ms = prx_le16(c + 14);
  if (y >= 1601 && y <= 9999 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && hh < 24 && mi < 60 &&
      s < 61 && ms < 1000) {
    snprintf(h->start_time, sizeof h->start_time, "%04u-%02u-%02uT%02u:%02u:%02u.%03u", y, mo, d,
             hh, mi, s, ms);
    h->wav.start_time = h->start_time;
  }
}

/* rcvr (Perseus): centre (Hz, int32), rate index, start (time_t, 32 bits, UTC), ... */
static void parse_rcvr(prx_wav_header *h, const unsigned char *c, uint32_t size) {
  if (size < 12) return;
  int32_t hz = (int32_t)prx_le32(c);
  if (hz > 0 && !h->wav.center_from) {
    h->center_freq = hz;
    h->wav.center_from = "rcvr chunk";
  }
  uint32_t t = prx_le32(c + 8);
  if (t && !h->wav.start_time && !prx_utc_text(t, 0, 0, h->start_time, sizeof h->start_time))
    h->wav.start_time = h->start_time;
}

/* How far the data chunk whose header sits at off reaches: *bytes from off + 8. size32 is its
 * size field, ds64 the RF64 size (UINT64_MAX without one). */
static void data_extent(prx_wav_header *h, int fd, uint64_t off, uint64_t file_size,
                        uint32_t size32, uint64_t ds64, uint64_t *bytes) {
  uint64_t start = off + 8, avail = file_size - start;
  uint64_t size = h->wav.rf64 && size32 == 0xFFFFFFFFu && ds64 != UINT64_MAX ? ds64 : size32;
  h->wav.declared_bytes = size;
  h->wav.extent = PRX_WAV_EXTENT_DECLARED;
  *bytes = size;
  int placeholder = !h->wav.rf64 && (size32 == 0xFFFFFFFFu || size32 == 0);
  if (placeholder && !(size32 == 0 && (avail == 0 || chunk_at(fd, start, file_size)))) {
    h->wav.extent = PRX_WAV_EXTENT_TO_END;
    *bytes = avail;
    return;
  }
  if (size > avail) {
    h->wav.extent = PRX_WAV_EXTENT_CUT;
    *bytes = avail;
    return;
  }
  uint64_t end = start + size + (size & 1);
  if (h->wav.rf64 || avail < FOUR_GIB || end >= file_size || chunk_at(fd, end, file_size)) return;
  /* a RIFF file whose data passed 4 GiB: the 32-bit size wrapped; the true size is the first
   * size + k 4 GiB after which the file ends or a chunk begins */
  for (uint64_t s = size + FOUR_GIB; s <= avail; s += FOUR_GIB) {
    uint64_t e = start + s + (s & 1);
    if (e >= file_size || chunk_at(fd, e, file_size)) {
      h->wav.extent = PRX_WAV_EXTENT_WRAPPED;
      *bytes = s;
      return;
    }
  }
  /* else the bytes after it are reported by the walk */
}

prx_status prx_wav_read_header(int fd, const char *path, uint64_t file_size, prx_wav_header *h) {
  memset(h, 0, sizeof *h);
  unsigned char head[12];
  prx_status st = prx_wav_read_exact(fd, path, 0, head, sizeof head, "RIFF header");
  if (st) return st;
  if (!prx_wav_sniff(head, sizeof head))
    return prx_fail(PRX_ERR_FORMAT, "'%s' is not a WAV file", path);
  h->wav.rf64 = !memcmp(head, "RF64", 4);
  uint64_t ds64 = UINT64_MAX, off = 12, data_at = 0;
  int have_fmt = 0, have_data = 0;
  unsigned char c[64];
  while (off < file_size) {
    if (file_size - off < 8) {
      if (have_data) break; /* a pad byte or a few stray bytes after the last chunk */
      return prx_fail(PRX_ERR_FORMAT, "WAV file '%s' ends inside a chunk header (at byte %llu)",
                      path, (unsigned long long)off);
    }
    unsigned char ch[8];
    if ((st = prx_wav_read_exact(fd, path, off, ch, 8, "chunk header"))) return st;
    uint32_t size32 = prx_le32(ch + 4);
    if (have_data && !chunk_at(fd, off, file_size))
      return prx_fail(PRX_ERR_FORMAT,
                      "WAV file '%s': the %llu bytes after the data chunk (samples at byte %llu, "
                      "%llu bytes) are not WAV chunks; is its data size wrong (a recording the "
                      "writer did not finish)? polyrx does not guess where the samples end",
                      path, (unsigned long long)(file_size - off), (unsigned long long)data_at,
                      (unsigned long long)h->wav.data_bytes);
    uint64_t size = size32, body = off + 8;
    int is_data = !memcmp(ch, "data", 4);
    if (!is_data && h->wav.rf64 && size32 == 0xFFFFFFFFu)
      return prx_fail(PRX_ERR_UNSUPPORTED,
                      "RF64 file '%s': chunk '%.4s' takes its size from the ds64 table, which "
                      "polyrx does not read",
                      path, (const char *)ch);
    if (!is_data && size > file_size - body)
      return prx_fail(PRX_ERR_FORMAT,
                      "WAV file '%s': chunk '%.4s' at byte %llu claims %llu bytes, past the "
                      "file's end",
                      path, (const char *)ch, (unsigned long long)off, (unsigned long long)size);
    if (!memcmp(ch, "ds64", 4)) {
      if (!h->wav.rf64 || off != 12 || size32 < 24)
        return prx_fail(PRX_ERR_FORMAT, "WAV file '%s': a misplaced or short ds64 chunk", path);
      if ((st = prx_wav_read_exact(fd, path, body, c, 24, "ds64 chunk"))) return st;
      ds64 = prx_le64(c + 8);
    } else if (!memcmp(ch, "fmt ", 4)) {
      if (have_fmt) return prx_fail(PRX_ERR_FORMAT, "WAV file '%s' has two fmt chunks", path);
      size_t n = size32 < sizeof c ? size32 : sizeof c;
      if ((st = prx_wav_read_exact(fd, path, body, c, n, "fmt chunk"))) return st;
      if ((st = parse_fmt(h, path, c, size32))) return st;
      have_fmt = 1;
    } else if (!memcmp(ch, "kiwi", 4)) {
      if (!have_fmt || have_data)
        return prx_fail(PRX_ERR_FORMAT,
                        "WAV file '%s': a kiwi chunk (a KiwiSDR time stamp) %s, at byte %llu", path,
                        have_fmt ? "after its data chunk" : "before its fmt chunk",
                        (unsigned long long)off);
      if ((st = prx_wav_walk_kiwi(h, fd, path, off, file_size))) return st;
      have_data = 1;
      break;
    } else if (!memcmp(ch, "auxi", 4) || !memcmp(ch, "rcvr", 4)) {
      size_t n = size32 < sizeof c ? size32 : sizeof c;
      if ((st = prx_wav_read_exact(fd, path, body, c, n, "chunk"))) return st;
      if (ch[0] == 'a')
        parse_auxi(h, c, size32);
      else
        parse_rcvr(h, c, size32);
    } else if (is_data) {
      if (have_data)
        return prx_fail(PRX_ERR_UNSUPPORTED,
                        "WAV file '%s' holds more than one data chunk (the second at byte "
                        "%llu) and no KiwiSDR time stamps between them: polyrx reads files of "
                        "one data chunk, and KiwiSDR's",
                        path, (unsigned long long)off);
      if (!have_fmt)
        return prx_fail(PRX_ERR_FORMAT, "WAV file '%s': its data chunk comes before its fmt chunk",
                        path);
      data_extent(h, fd, off, file_size, size32, ds64, &size);
      h->wav.data_offset = data_at = body;
      h->wav.data_bytes = size;
      h->wav.data_chunks = 1;
      have_data = 1;
    }
    off = body + size + (size & 1);
  }
  if (!have_fmt) return prx_fail(PRX_ERR_FORMAT, "WAV file '%s' has no fmt chunk", path);
  if (!have_data) return prx_fail(PRX_ERR_FORMAT, "WAV file '%s' has no data chunk", path);
  time_t named;
  double hz;
  int kiwi_mode = prx_wav_name_kiwi(path, &named, &hz);
  /* the name's frequency is an I/Q file's centre, a USB audio file's 0 Hz (a real stream's DC);
   * an LSB audio file's 0 Hz too, its spectrum mirrored: read mirrored back (the reader's
   * exchanged I and Q), its DC's frequency half its rate below */
  int kiwi_named = kiwi_mode && (kiwi_mode == 3 ? 1 : kiwi_mode) == h->wav.channels;
  if (!h->wav.center_from && prx_wav_name_frequency(path, &h->center_freq))
    h->wav.center_from = "file name";
  if (!h->wav.center_from && kiwi_named) {
    h->center_freq = hz;
    if (kiwi_mode == 3) {
      h->center_freq = hz - h->sample_rate / 2;
      h->wav.inverted = 1;
    }
    h->wav.center_from = "file name";
  }
  if (!h->wav.start_time && kiwi_named &&
      !prx_utc_text(named, 0, 0, h->start_time, sizeof h->start_time))
    h->wav.start_time = h->start_time;
  return PRX_OK;
}

void prx_wav_header_free(prx_wav_header *h) {
  if (h) free(h->runs);
  free(h);
}

/* A token of the file name (between '_', ' ', '-' or the name's ends, the extension cut off)
 * that is a number with a unit, "7100kHz", "7074000Hz", "7.1MHz": the SDR programs' way of
 * naming recordings (HDSDR_20200105_140622Z_7100kHz_RF.wav). Exactly one such token is taken. */
int prx_wav_name_frequency(const char *path, double *hz) {
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  const char *dot = strrchr(name, '.');
  size_t len = dot ? (size_t)(dot - name) : strlen(name);
  static const struct {
    const char *unit;
    double scale;
  } units[] = {{"ghz", 1e9}, {"mhz", 1e6}, {"khz", 1e3}, {"hz", 1}};
  int found = 0;
  double value = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && name[j] != '_' && name[j] != ' ' && name[j] != '-') j++;
    char tok[48];
    if (j - i < sizeof tok) {
      memcpy(tok, name + i, j - i);
      tok[j - i] = '\0';
      char *end;
      errno = 0;
      double v = strtod(tok, &end);
      if (end != tok && isdigit((unsigned char)tok[0]) && !errno && isfinite(v)) {
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
          if (!strcasecmp(end, units[u].unit)) {
            found++;
            value = v * units[u].scale;
          }
      }
    }
    i = j + 1;
  }
  if (found != 1 || !(value > 0)) return 0;
  *hz = value;
  return 1;
}

const char *prx_wav_stored_name(const prx_wav_info *w) {
  static const char *const names[2][6] = {
      {"PCM 8-bit", "PCM 16-bit", "PCM 24-bit", "PCM 32-bit", "float 32-bit", "float 64-bit"},
      {"real PCM 8-bit", "real PCM 16-bit", "real PCM 24-bit", "real PCM 32-bit",
       "real float 32-bit", "real float 64-bit"}};
  int k = w->is_float ? (w->bits == 32 ? 4 : 5) : w->bits / 8 - 1;
  return names[w->channels == 1][k];
}
