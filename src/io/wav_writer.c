/* Writing WAV I/Q files the SDR programs open (SDR#, HDSDR, SDRuno, SDR Console): two channels,
 * I then Q, PCM 8 (unsigned: cu8's bytes), PCM 16 (ci16) or IEEE float 32 (cf32), an auxi chunk
 * with the centre frequency and the A/D rate, then the data. The samples stream into a temporary
 * file beside the name; close fills the sizes in and renames it into place, so the file is
 * complete or absent. A JUNK chunk after "WAVE" keeps the room of a ds64 chunk (EBU Tech 3306):
 * a file past 4 GiB becomes RF64 at close, its sizes there. */
#include "io_internal.h"

#include "../core/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FOUR_GIB ((uint64_t)1 << 32)
/* header: RIFF (12), JUNK/ds64 (8 + 28), fmt (8 + 16), auxi (8 + 64), data (8) */
#define JUNK_AT 12
#define AUXI_BYTES 64
#define DATA_SIZE_AT (12 + 36 + 24 + 8 + AUXI_BYTES + 4)
#define HEADER_BYTES (DATA_SIZE_AT + 4)
_Static_assert(HEADER_BYTES == PRX_WAV_HEADER_BYTES, "the header's size");

struct prx_wav_writer {
  FILE *f;
  char *path, *tmp;
  size_t sample_size;
  prx_format format;
  uint64_t samples;
  double rate, centre; /* for the header */
  prx_status err;      /* the first failure, raised by every later call */
};

static void put16(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v) {
  put16(p, v & 0xffff);
  put16(p + 2, v >> 16);
}
static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}

void prx_wav_header_make(unsigned char *h, prx_format format, double rate, double centre,
                         uint64_t data) {
  const size_t sample_size = prx_format_size(format);
  memset(h, 0, HEADER_BYTES);
  const uint64_t riff = HEADER_BYTES - 8 + data + (data & 1);
  const int rf64 = riff > 0xFFFFFFFFu;
  memcpy(h, rf64 ? "RF64" : "RIFF", 4);
  put32(h + 4, rf64 ? 0xFFFFFFFFu : (uint32_t)riff);
  memcpy(h + 8, "WAVE", 4);
  unsigned char *p = h + JUNK_AT;
  memcpy(p, rf64 ? "ds64" : "JUNK", 4);
  put32(p + 4, 28);
  if (rf64) {
    put64(p + 8, riff);
    put64(p + 16, data);
    put64(p + 24, data / sample_size);
  }
  p += 36;
  const unsigned bits = format == PRX_CF32 ? 32 : format == PRX_CI16 ? 16 : 8;
  const uint32_t fs = rate >= 1 && rate < 4294967296.0 ? (uint32_t)llround(rate) : 0;
  memcpy(p, "fmt ", 4);
  put32(p + 4, 16);
  put16(p + 8, format == PRX_CF32 ? 3 : 1);
  put16(p + 10, 2);
  put32(p + 12, fs);
  put32(p + 16, fs * (uint32_t)sample_size);
  put16(p + 20, (unsigned)sample_size);
  put16(p + 22, bits);
  p += 24;
  /* auxi (SpectraVue's layout): start and stop times (not known: zeros), the centre, the A/D
   * rate; the centre only where it is a whole number of Hz a DWORD holds */
  memcpy(p, "auxi", 4);
  put32(p + 4, AUXI_BYTES);
  if (centre >= 0 && centre < 4294967296.0 && centre == floor(centre))
    put32(p + 8 + 32, (uint32_t)centre);
  put32(p + 8 + 36, fs);
  p += 8 + AUXI_BYTES;
  memcpy(p, "data", 4);
  put32(p + 4, rf64 ? 0xFFFFFFFFu : (uint32_t)data);
}

prx_status prx_wav_writer_open(const char *path, prx_format format, double sample_rate,
                               double center_freq, prx_wav_writer **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_wav_writer_open: NULL output pointer");
  *out = NULL;
  if (!path || !path[0]) return prx_fail(PRX_ERR_INVALID, "prx_wav_writer_open: no path");
  if (format != PRX_CF32 && format != PRX_CI16 && format != PRX_CU8)
    return prx_fail(PRX_ERR_INVALID,
                    "a WAV file holds cf32 (float), ci16 or cu8 (its 8 bits are unsigned) samples, "
                    "not %s",
                    prx_format_name(format) ? prx_format_name(format) : "that format");
  if (!(sample_rate >= 1 && sample_rate < 4294967296.0) || sample_rate != floor(sample_rate))
    return prx_fail(PRX_ERR_INVALID,
                    "a WAV file's sample rate is a whole number of Hz below 2^32, not %.9g",
                    sample_rate);
  prx_wav_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->path = strdup(path))) {
    free(w);
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  w->rate = sample_rate;
  w->centre = center_freq;
  w->format = format;
  w->sample_size = prx_format_size(format);
  prx_status st = prx_io_create_temp(path, "wb", &w->f, &w->tmp);
  unsigned char h[HEADER_BYTES];
  prx_wav_header_make(h, format, sample_rate, center_freq, 0);
  if (!st && fwrite(h, 1, sizeof h, w->f) != sizeof h)
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->tmp, strerror(errno ? errno : EIO));
  if (st) {
    prx_wav_writer_discard(w);
    return st;
  }
  *out = w;
  return PRX_OK;
}

prx_status prx_wav_write(prx_wav_writer *w, const void *samples, size_t n) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_wav_write: NULL writer");
  if (w->err) return prx_fail(w->err, "'%s': an earlier write failed", w->path);
  if (!n) return PRX_OK;
  if (!samples) return prx_fail(PRX_ERR_INVALID, "prx_wav_write: NULL samples");
  size_t done;
  if (PRX_HOST_BIG_ENDIAN && w->sample_size > 2) { /* stored little-endian */
    unsigned char tmp[4096];
    const size_t per = sizeof tmp / w->sample_size;
    for (done = 0; done < n;) {
      size_t k = n - done < per ? n - done : per;
      memcpy(tmp, (const unsigned char *)samples + done * w->sample_size, k * w->sample_size);
      prx_io_swap_samples(w->format, tmp, k);
      if (fwrite(tmp, w->sample_size, k, w->f) != k) break;
      done += k;
    }
  } else {
    done = fwrite(samples, w->sample_size, n, w->f);
  }
  if (done != n) {
    w->err = PRX_ERR_IO;
    return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno ? errno : EIO));
  }
  w->samples += n;
  return PRX_OK;
}

uint64_t prx_wav_writer_samples(const prx_wav_writer *w) { return w ? w->samples : 0; }

prx_status prx_wav_writer_close(prx_wav_writer *w) {
  if (!w) return PRX_OK;
  prx_status st = w->err ? prx_fail(w->err, "'%s': a write failed", w->path) : PRX_OK;
  const uint64_t data = w->samples * w->sample_size;
  unsigned char h[HEADER_BYTES];
  prx_wav_header_make(h, w->format, w->rate, w->centre, data);
  if (!st && (fflush(w->f) != 0 || fseek(w->f, 0, SEEK_SET) != 0 ||
              fwrite(h, 1, sizeof h, w->f) != sizeof h || fflush(w->f) != 0))
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno ? errno : EIO));
  if (fclose(w->f) != 0 && !st)
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno ? errno : EIO));
  w->f = NULL;
  if (!st && rename(w->tmp, w->path) != 0)
    st = prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp, w->path, strerror(errno));
  if (st) unlink(w->tmp);
  free(w->tmp);
  free(w->path);
  free(w);
  return st;
}

void prx_wav_writer_discard(prx_wav_writer *w) {
  if (!w) return;
  if (w->f) fclose(w->f);
  if (w->tmp) unlink(w->tmp);
  free(w->tmp);
  free(w->path);
  free(w);
}
