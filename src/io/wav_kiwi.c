/* KiwiSDR's WAV files (kiwirecorder --kiwi-wav): after the fmt chunk, a "kiwi" chunk (10 bytes:
 * the age of the receiver's last GPS fix in seconds, 254 or 255 for none; a zero byte; the GPS
 * time of the next data chunk's first sample, seconds of the week and nanoseconds) before every
 * data chunk of 512 samples. The data chunks are read as one stream (the runs of prx_wav_header
 * say where they lie); the stamps measure the true rate (the fmt chunk's is rounded to whole Hz),
 * find the samples lost between two of them (zeros stand for those) and, with the date of the
 * file's name, give the start in UTC. */
#include "io_internal.h"

#include "../core/internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define KIWI_WINDOW ((size_t)1 << 20) /* bytes of the file a walk reads at a time */
#define GPS_WEEK 604800.0
#define GPS_UNIX_EPOCH 315964800 /* 1980-01-06T00:00:00Z, GPS time's start, in Unix time */
#define GPS_LEAP_SECONDS 18      /* GPS - UTC since 2017-01-01 */

/* The file's bytes from `at` on, `len` of them, read KIWI_WINDOW at a time. */
typedef struct {
  int fd;
  const char *path;
  uint64_t file_size, at;
  size_t len;
  unsigned char *buf;
} file_window;

/* Points *p at the n bytes at off (n <= 64, all inside the file), reading the window there when
 * they are not in it. */
static prx_status window_get(file_window *w, uint64_t off, size_t n, const unsigned char **p,
                             const char *what) {
  if (off < w->at || off + n > w->at + w->len) {
    uint64_t left = w->file_size - off;
    size_t want = left < KIWI_WINDOW ? (size_t)left : KIWI_WINDOW;
    prx_status st = prx_wav_read_exact(w->fd, w->path, off, w->buf, want < n ? n : want, what);
    if (st) return st;
    w->at = off;
    w->len = want;
  }
  *p = w->buf + (off - w->at);
  return PRX_OK;
}

/* Samples lost between two stamps: the stamps' time across the gap, the file's samples there. */
typedef struct {
  size_t run;       /* the run of zeros that stands for them in h->runs */
  uint64_t at;      /* the file's sample after the gap */
  double seconds;   /* the time between the stamps across it */
  uint64_t samples; /* the file's samples between them */
} kiwi_gap;

/* The valid stamps so far: the first's sample and time, the last's; the samples and seconds of
 * the intervals between successive stamps without a gap (summed step by step, so that the GPS
 * week may roll over); the gaps. */
typedef struct {
  uint64_t n0, n1;
  uint32_t tow0, ns0, tow1, ns1;
  uint64_t good_n;
  double good_t;
  kiwi_gap *gaps;
  size_t n_gaps, cap_gaps;
} kiwi_stamps;

/* A stamp (GPS seconds of the week, nanoseconds) at the file's sample n: 1 when it ends a gap
 * (its time and the samples since the last stamp disagree by more than a quarter of the time at
 * the fmt chunk's rate), -1 out of memory, else 0. */
static int kiwi_stamp(prx_wav_header *h, kiwi_stamps *k, uint64_t n, uint32_t tow, uint32_t ns) {
  prx_wav_info *w = &h->wav;
  if (w->gps_valid++ == 0) {
    k->n0 = k->n1 = n;
    k->tow0 = k->tow1 = tow;
    k->ns0 = k->ns1 = ns;
    return 0;
  }
  double dt = ((double)tow - k->tow1) + ((double)ns - k->ns1) * 1e-9;
  if (dt < -GPS_WEEK / 2) dt += GPS_WEEK; /* the week rolled over */
  uint64_t dn = n - k->n1;
  double expected = (double)dn / w->header_rate;
  int gap = dn && fabs(dt - expected) > 0.25 * expected;
  if (gap) {
    if (k->n_gaps == k->cap_gaps) {
      size_t c = k->cap_gaps ? 2 * k->cap_gaps : 8;
      kiwi_gap *g = realloc(k->gaps, c * sizeof *g);
      if (!g) return -1;
      k->gaps = g;
      k->cap_gaps = c;
    }
    k->gaps[k->n_gaps++] = (kiwi_gap){0, n, dt, dn};
  } else {
    k->good_n += dn;
    k->good_t += dt;
  }
  k->n1 = n;
  k->tow1 = tow;
  k->ns1 = ns;
  return gap;
}

/* Appends a run of `bytes` bytes at file byte `at` (UINT64_MAX: zeros, their count set later)
 * to the runs, or the chunk to the last run where it continues its spacing. */
static prx_status add_chunk(prx_wav_header *h, size_t *cap, uint64_t at, uint64_t bytes) {
  prx_wav_run *r = h->n_runs ? &h->runs[h->n_runs - 1] : NULL;
  if (r && at != UINT64_MAX && r->offset != UINT64_MAX && bytes == r->bytes && at > r->offset &&
      (r->count == 1 || at == r->offset + r->count * r->period)) {
    if (r->count == 1) r->period = at - r->offset;
    r->count++;
    return PRX_OK;
  }
  if (h->n_runs == *cap) {
    size_t n = *cap ? 2 * *cap : 16;
    prx_wav_run *grown = realloc(h->runs, n * sizeof *grown);
    if (!grown) return prx_fail(PRX_ERR_NOMEM, "out of memory");
    h->runs = grown;
    *cap = n;
  }
  h->runs[h->n_runs++] = (prx_wav_run){at, 0, bytes, 0, 1};
  return PRX_OK;
}

/* The rate, the gaps' zeros and the start, once every stamp is read. */
static void kiwi_timing(prx_wav_header *h, kiwi_stamps *k, const char *path) {
  prx_wav_info *w = &h->wav;
  if (k->good_t > 0) {
    w->gps_rate = (double)k->good_n / k->good_t;
    w->gps_span = k->good_t;
  }
  /* the stamps' rate where their intervals without a gap span a second at least and agree with
   * the fmt chunk's to 0.1 % (its rounding is at most 0.5 Hz) */
  if (w->gps_rate > 0 && w->gps_span >= 1 && fabs(w->gps_rate / w->header_rate - 1) < 1e-3) {
    h->sample_rate = w->gps_rate;
    w->rate_from = "GPS time stamps";
  }
  /* each gap's lost samples as zeros, where the time says a whole number of them is missing
   * (up to a minute of them: a longer jump is the receiver's clock, not lost packets) */
  w->gps_gaps = k->n_gaps;
  for (size_t i = 0; i < k->n_gaps; i++) {
    const kiwi_gap *g = &k->gaps[i];
    double lost = g->seconds * h->sample_rate - (double)g->samples;
    if (i == 0) w->gps_first_gap = g->at;
    if (lost >= 0.5 && g->seconds < 60) {
      h->runs[g->run].bytes = (uint64_t)llround(lost) * h->file_sample_bytes;
      w->gps_filled += (uint64_t)llround(lost);
    }
  }
  /* the runs' places in the stream, the empty ones (unfilled gaps) left out */
  size_t kept = 0;
  uint64_t at = 0;
  for (size_t i = 0; i < h->n_runs; i++) {
    prx_wav_run r = h->runs[i];
    if (!r.bytes) continue;
    r.start = at;
    at += r.bytes * r.count;
    h->runs[kept++] = r;
  }
  h->n_runs = kept;
  if (!w->gps_valid) return;
  /* the first stamp's time moved back to sample 0; the week from the file name's date */
  time_t named;
  double hz;
  if (!prx_wav_name_kiwi(path, &named, &hz)) return;
  /* whole seconds in integers: a double of GPS seconds keeps only ~0.2 us */
  int64_t name_gps = (int64_t)named - GPS_UNIX_EPOCH + GPS_LEAP_SECONDS;
  int64_t week = name_gps / (int64_t)GPS_WEEK * (int64_t)GPS_WEEK;
  double frac = k->ns0 * 1e-9 - (double)k->n0 / h->sample_rate, whole = floor(frac);
  int64_t t0 = week + k->tow0 + (int64_t)whole;
  frac -= whole;
  if (t0 - name_gps > (int64_t)GPS_WEEK / 2) t0 -= (int64_t)GPS_WEEK;
  if (t0 - name_gps < -(int64_t)GPS_WEEK / 2) t0 += (int64_t)GPS_WEEK;
  int nanos = (int)lround(frac * 1e9);
  if (nanos >= 1000000000) t0++, nanos -= 1000000000;
  /* the name is the recording host's clock when the file began: a stamp more than a minute
   * away from it belongs to no week the name tells */
  if (llabs(t0 - name_gps) < 60 && !prx_utc_text(t0 + GPS_UNIX_EPOCH - GPS_LEAP_SECONDS, nanos, 9,
                                                 h->start_time, sizeof h->start_time))
    w->start_time = h->start_time;
}

/* The chunks of a KiwiSDR file from its first "kiwi" chunk at off to the file's end. */
prx_status prx_wav_walk_kiwi(prx_wav_header *h, int fd, const char *path, uint64_t off,
                             uint64_t file_size) {
  prx_wav_info *w = &h->wav;
  file_window win = {fd, path, file_size, 0, 0, malloc(KIWI_WINDOW)};
  if (!win.buf) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  kiwi_stamps k;
  memset(&k, 0, sizeof k);
  prx_status st = PRX_OK;
  size_t cap = 0;
  uint64_t stream = 0; /* bytes of samples before the next data chunk */
  int stamp_waits = 0; /* a stamp read, its data chunk not yet */
  uint32_t tow = 0, ns = 0;
  unsigned age = 255;
  while (!st && off < file_size) {
    if (file_size - off < 8) break; /* a pad byte or a few stray bytes after the last chunk */
    const unsigned char *c;
    if ((st = window_get(&win, off, 8, &c, "chunk header"))) break;
    char id[5] = {0};
    memcpy(id, c, 4);
    uint64_t size = prx_le32(c + 4), body = off + 8, avail = file_size - body;
    int printable = 1;
    for (int i = 0; i < 4; i++) printable &= c[i] >= 0x20 && c[i] <= 0x7e;
    if (!printable) {
      st = prx_fail(PRX_ERR_FORMAT,
                    "KiwiSDR WAV file '%s': the bytes at %llu are not a WAV chunk (a damaged "
                    "file?)",
                    path, (unsigned long long)off);
    } else if (!strcmp(id, "kiwi")) {
      if (size != 10 || avail < 10) {
        st = prx_fail(PRX_ERR_FORMAT,
                      "KiwiSDR WAV file '%s': the kiwi chunk at byte %llu has %llu bytes%s (10 "
                      "expected)",
                      path, (unsigned long long)off, (unsigned long long)size,
                      avail < 10 ? ", cut by the file's end" : "");
        break;
      }
      if ((st = window_get(&win, body, 10, &c, "kiwi chunk"))) break;
      age = c[0];
      tow = prx_le32(c + 2);
      ns = prx_le32(c + 6);
      stamp_waits = 1;
      w->gps_stamps++;
    } else if (!strcmp(id, "data")) {
      w->declared_bytes += size;
      if (size > avail) { /* the recording was cut inside its last chunk */
        w->extent = PRX_WAV_EXTENT_CUT;
        size = avail;
      }
      if (!w->data_chunks++) w->data_offset = body;
      int gap = 0;
      if (stamp_waits && age < 254 && ns < 1000000000u && tow < (uint32_t)GPS_WEEK && (tow || ns))
        gap = kiwi_stamp(h, &k, stream / h->file_sample_bytes, tow, ns);
      stamp_waits = 0;
      if (gap < 0) {
        st = prx_fail(PRX_ERR_NOMEM, "out of memory");
        break;
      }
      if (gap) { /* a run of zeros for the lost samples, sized once the rate is known */
        if ((st = add_chunk(h, &cap, UINT64_MAX, 0))) break;
        k.gaps[k.n_gaps - 1].run = h->n_runs - 1;
      }
      if (size && (st = add_chunk(h, &cap, body, size))) break;
      stream += size;
    } else if (size > avail) {
      st = prx_fail(PRX_ERR_FORMAT,
                    "KiwiSDR WAV file '%s': chunk '%s' at byte %llu claims %llu bytes, past the "
                    "file's end",
                    path, id, (unsigned long long)off, (unsigned long long)size);
    }
    off = body + size + (size & 1);
  }
  free(win.buf);
  if (!st && !w->data_chunks)
    st = prx_fail(PRX_ERR_FORMAT, "KiwiSDR WAV file '%s' has no data chunk", path);
  if (!st) {
    w->data_bytes = stream;
    kiwi_timing(h, &k, path);
  }
  free(k.gaps);
  return st;
}

/* kiwirecorder's names: START_FREQ[_STATION]_MODE.wav, START the UTC time the file began
 * (20261204T112233Z), FREQ the tuned frequency in Hz (whole); MODE iq (I/Q: 2), usb, usn (the
 * upper sideband's audio, its 0 Hz at FREQ: 1) or lsb, lsn (the lower sideband's, its 0 Hz at
 * FREQ and its spectrum mirrored: audio f is FREQ - f: 3); others are not read (0). */
int prx_wav_name_kiwi(const char *path, time_t *start, double *hz) {
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  size_t len = strlen(name);
  if (len < 4 || strcasecmp(name + len - 4, ".wav")) return 0;
  len -= 4;
  int mode = 0;
  if (len >= 20 && !strncasecmp(name + len - 3, "_iq", 3)) mode = 2;
  if (len >= 21 &&
      (!strncasecmp(name + len - 4, "_usb", 4) || !strncasecmp(name + len - 4, "_usn", 4)))
    mode = 1;
  if (len >= 21 &&
      (!strncasecmp(name + len - 4, "_lsb", 4) || !strncasecmp(name + len - 4, "_lsn", 4)))
    mode = 3;
  if (!mode) return 0;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int used = 0;
  if (sscanf(name, "%4d%2d%2dT%2d%2d%2dZ_%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &tm.tm_sec, &used) != 6 ||
      used != 17)
    return 0;
  for (int i = 0; i < 15; i++)
    if (i != 8 && !isdigit((unsigned char)name[i])) return 0;
  const char *f = name + used;
  size_t digits = 0;
  while (isdigit((unsigned char)f[digits])) digits++;
  if (!digits || digits > 12 || (f[digits] != '_')) return 0;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  time_t t = timegm(&tm);
  double v = strtod(f, NULL);
  if (t == (time_t)-1 || !(v > 0)) return 0;
  *start = t;
  *hz = v;
  return mode;
}
