/* Reading IQ samples: raw interleaved files, standard input (pipes), SigMF recordings and WAV
 * files, block by block with read(2), so any file size streams through the caller's one buffer.
 * Short reads (pipes) are looped over; the bytes of a sample split across reads are carried to the
 * next call; a stream that ends inside a sample is reported, never silently cut. A SigMF archive
 * (.sigmf, a tar file) is read in place: its member list is read, the metadata member parsed,
 * and the data member streamed from its offset with reads bounded by its size. A WAV file's data
 * chunk is streamed the same way (src/io/wav_header.c reads its header). The stored types polyrx
 * has no prx_format for (WAV PCM 24/32 and float 64, SigMF cf64_le and ci32_le) are read through
 * a scratch buffer and handed out as cf32; real samples go on through the half-band converter
 * (src/dsp/halfband.c), statefully for sequential reads, block by block for positional ones. A
 * KiwiSDR file's data chunks are read through their runs (pread_data). A window (a time range)
 * moves a file's reads to its start and drops a pipe's samples before it. */
#include "io_internal.h"

#include "../core/internal.h"
#include "../dsp/halfband.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRX_SIGMF_META_MAX ((size_t)64 << 20) /* a larger .sigmf-meta is not metadata */
#define PRX_CONVERT_SCRATCH ((size_t)1 << 20) /* bytes of stored samples per conversion */

struct prx_iq_reader {
  int fd;
  int own_fd; /* 0 for standard input */
  prx_iq_info info;
  size_t sample_size;      /* bytes of a sample as stored */
  const char *stored_name; /* the stored samples' type, for messages ("ci16", "PCM 24-bit") */
  prx_wav_header *wav;     /* a WAV file's header (NULL for other inputs) */
  prx_recorder_raw *raw;   /* an .sdriq header or a gqrx name (NULL for other inputs) */
  prx_iq_origin origin;    /* its public view */
  /* samples converted as read (scratch set): components of type conv, two a sample (handed out
   * as cf32), or one where hb is set (real samples, through the half-band converter) */
  unsigned char *scratch; /* PRX_CONVERT_SCRATCH bytes of stored samples */
  prx_stored conv;
  prx_halfband *hb;
  float *reals;     /* the real samples of a piece, converted */
  int real_end;     /* the real stream has ended: the converter's tail is being given */
  int swap_iq;      /* hand I and Q out exchanged (prx_iq_reader_swap_iq) */
  int extent_known; /* 1: the data's bytes are known at open (extent_bytes) */
  uint64_t extent_bytes;
  unsigned char carry[16]; /* bytes of a sample begun in the last read */
  size_t n_carry;
  int eof;
  int read_errno;           /* a read error met after some samples: raised on the next call */
  uint64_t samples;         /* complete samples handed out */
  char *name;               /* for messages */
  prx_sigmf_recording *rec; /* SigMF metadata beyond info (NULL for raw input) */
  int bounded;              /* 1: the stream ends after `remaining` more bytes (archive) */
  uint64_t remaining;
  uint64_t pos; /* bytes of the data read so far (the cursor in a KiwiSDR file's chunks) */
  /* a regular file: prx_iq_read_at reads sample i at byte base + i * sample_size, with pread(2),
   * up to `limit` bytes after base (an archive's data member) */
  int positional;
  uint64_t base, limit;
  /* the window (prx_iq_reader_window): the stream's samples win_first .. win_first + win_count
   * - 1, handed out as 0 ..; `samples` above stays the stream's own count. A regular file is
   * read from there with pread (win_pread); a pipe's first samples are read and dropped. */
  int windowed, win_pread;
  uint64_t win_first, win_count;
};

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

static int is_regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* a + b (+ c) in a new malloc'd string, NULL when out of memory */
static char *concat(const char *a, const char *b, const char *c) {
  size_t na = strlen(a), nb = strlen(b), nc = c ? strlen(c) : 0;
  char *s = malloc(na + nb + nc + 1);
  if (!s) return NULL;
  memcpy(s, a, na);
  memcpy(s + na, b, nb);
  if (c) memcpy(s + na + nb, c, nc);
  s[na + nb + nc] = '\0';
  return s;
}

/* Reads a whole (small) file into a malloc'd buffer. */
static prx_status slurp(const char *path, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  prx_status st = PRX_OK;
  for (; buf;) {
    if (n == cap) {
      if (cap >= PRX_SIGMF_META_MAX) {
        st = prx_fail(PRX_ERR_FORMAT, "'%s' is larger than %zu MiB: not SigMF metadata", path,
                      PRX_SIGMF_META_MAX >> 20);
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      st = prx_fail(PRX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
      break;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (!buf) return prx_fail(PRX_ERR_NOMEM, "out of memory reading '%s'", path);
  if (st) {
    free(buf);
    return st;
  }
  *text = buf;
  *len = n;
  return PRX_OK;
}

/* The base name X of the SigMF recording that path names (malloc'd), or NULL if it names none:
 * path is X.sigmf-meta, X.sigmf-data, or X where X.sigmf-meta exists and X is not a file. */
static char *sigmf_base(const char *path) {
  if (ends_with(path, ".sigmf-meta") || ends_with(path, ".sigmf-data"))
    return strndup(path, strlen(path) - strlen(".sigmf-meta"));
  if (is_regular_file(path)) return NULL;
  char *meta = concat(path, ".sigmf-meta", NULL);
  int yes = meta && is_regular_file(meta);
  free(meta);
  return yes ? strdup(path) : NULL;
}

static prx_status sigmf_converted(prx_iq_reader *r, const prx_sigmf_read_meta *m);

static prx_status open_sigmf(prx_iq_reader *r, const char *base, prx_format format) {
  char *meta_path = concat(base, ".sigmf-meta", NULL), *text = NULL;
  if (!meta_path) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  size_t len;
  prx_status st = slurp(meta_path, &text, &len);
  prx_sigmf_read_meta m;
  memset(&m, 0, sizeof m);
  if (!st) st = prx_sigmf_parse_meta_full(text, len, &m);
  free(text);
  if (st) {
    /* name the file in the message: the parser does not know it */
    char detail[512];
    snprintf(detail, sizeof detail, "%s", prx_last_error());
    if (!strstr(detail, meta_path)) prx_fail(st, "%s: %s", meta_path, detail);
    free(meta_path);
    return st;
  }
  if (m.dataset) {
    /* core:dataset is a file name beside the metadata */
    const char *slash = strrchr(base, '/');
    char *dir = strndup(base, slash ? (size_t)(slash - base + 1) : 0);
    r->name = dir ? concat(dir, m.dataset, NULL) : NULL;
    free(dir);
  } else {
    r->name = concat(base, ".sigmf-data", NULL);
  }
  if (!r->name)
    st = prx_fail(PRX_ERR_NOMEM, "out of memory");
  else if (format != PRX_CF32 && format != m.info.format)
    st =
        prx_fail(PRX_ERR_INVALID, "format %s was given but the SigMF recording %s holds %s samples",
                 prx_format_name(format), meta_path,
                 m.conv_channels ? m.conv_name : prx_sigmf_datatype_name(m.info.format));
  free(meta_path);
  free(m.dataset);
  r->rec = m.rec;
  if (st) return st;
  r->fd = open(r->name, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0)
    return prx_fail(PRX_ERR_IO, "cannot open SigMF data file '%s': %s", r->name, strerror(errno));
  r->own_fd = 1;
  r->info = m.info;
  if (m.conv_channels && (st = sigmf_converted(r, &m))) return st;
  struct stat sb;
  if (m.header_bytes && fstat(r->fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
      (uint64_t)sb.st_size < (uint64_t)m.header_bytes)
    return prx_fail(PRX_ERR_FORMAT, "core:header_bytes %llu is past the end of '%s' (%lld bytes)",
                    (unsigned long long)m.header_bytes, r->name, (long long)sb.st_size);
  if (m.header_bytes && lseek(r->fd, (off_t)m.header_bytes, SEEK_SET) < 0)
    return prx_fail(PRX_ERR_IO, "cannot skip %llu header bytes of '%s': %s",
                    (unsigned long long)m.header_bytes, r->name, strerror(errno));
  return PRX_OK;
}

/* 1 if a tar member is a regular file whose name ends with suffix */
static int member_is(const prx_tar_member *m, const char *suffix) {
  return (m->type == '0' || m->type == '7') && ends_with(m->name, suffix);
}

/* A SigMF archive: the one recording it holds, its data member streamed in place. */
static prx_status open_archive(prx_iq_reader *r, const char *path, prx_format format) {
  r->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (r->fd < 0) return prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  r->own_fd = 1;
  if (!(r->name = strdup(path))) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  prx_tar_member *mem = NULL;
  size_t n = 0;
  prx_status st = prx_tar_list(r->fd, path, &mem, &n);
  if (st) return st;
  const prx_tar_member *meta = NULL;
  size_t n_meta = 0;
  for (size_t i = 0; i < n; i++)
    if (member_is(&mem[i], ".sigmf-meta")) {
      if (!meta) meta = &mem[i];
      n_meta++;
    }
  if (n_meta != 1) {
    st = n_meta ? prx_fail(PRX_ERR_UNSUPPORTED,
                           "SigMF archive '%s' holds %zu recordings (first: %s); polyrx reads "
                           "archives of one recording",
                           path, n_meta, meta->name)
                : prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s' holds no .sigmf-meta member", path);
    free(mem);
    return st;
  }
  char *text = NULL;
  prx_sigmf_read_meta m;
  memset(&m, 0, sizeof m);
  if (meta->size > PRX_SIGMF_META_MAX)
    st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': %s is larger than %zu MiB", path, meta->name,
                  PRX_SIGMF_META_MAX >> 20);
  else if (!(text = malloc(meta->size ? meta->size : 1)))
    st = prx_fail(PRX_ERR_NOMEM, "out of memory");
  for (size_t done = 0; !st && done < meta->size;) {
    ssize_t got = pread(r->fd, text + done, meta->size - done, (off_t)(meta->offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      st = prx_fail(PRX_ERR_IO, "cannot read %s in '%s'", meta->name, path);
    else
      done += (size_t)got;
  }
  if (!st) st = prx_sigmf_parse_meta_full(text, meta->size, &m);
  free(text);
  if (st) {
    char detail[512];
    snprintf(detail, sizeof detail, "%s", prx_last_error());
    prx_fail(st, "%s (in %s): %s", path, meta->name, detail);
    free(mem);
    return st;
  }
  r->rec = m.rec;
  r->rec->is_archive = 1;
  r->info = m.info;
  if (m.conv_channels && (st = sigmf_converted(r, &m))) {
    free(m.dataset);
    free(mem);
    return st;
  }
  /* the data member: core:dataset beside the metadata member, else NAME.sigmf-data */
  char want[1024];
  size_t stem = strlen(meta->name) - strlen(".sigmf-meta");
  if (m.dataset) {
    const char *slash = strrchr(meta->name, '/');
    size_t dir = slash ? (size_t)(slash - meta->name) + 1 : 0;
    snprintf(want, sizeof want, "%.*s%s", (int)dir, meta->name, m.dataset);
  } else {
    snprintf(want, sizeof want, "%.*s.sigmf-data", (int)stem, meta->name);
  }
  free(m.dataset);
  const prx_tar_member *data = NULL;
  for (size_t i = 0; i < n && !data; i++)
    if (member_is(&mem[i], "") && !strcmp(mem[i].name, want)) data = &mem[i];
  if (!data)
    st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s' has no data member %s", path, want);
  else if (format != PRX_CF32 && format != m.info.format)
    st =
        prx_fail(PRX_ERR_INVALID, "format %s was given but the SigMF recording %s holds %s samples",
                 prx_format_name(format), path,
                 m.conv_channels ? m.conv_name : prx_sigmf_datatype_name(m.info.format));
  else if (m.header_bytes > data->size)
    st = prx_fail(PRX_ERR_FORMAT, "core:header_bytes %llu is past the end of %s in '%s'",
                  (unsigned long long)m.header_bytes, data->name, path);
  else if (lseek(r->fd, (off_t)(data->offset + m.header_bytes), SEEK_SET) < 0)
    st = prx_fail(PRX_ERR_IO, "cannot seek in '%s': %s", path, strerror(errno));
  if (!st) {
    r->bounded = 1;
    r->remaining = data->size - m.header_bytes;
    r->rec->data_bytes = r->remaining;
  }
  free(mem);
  return st;
}

/* Samples stored as t (channels 2: I and Q; 1: real) converted as read, to cf32. A real
 * stream's rate and centre in r->info (its DC's frequency) become the complex stream's: half the
 * rate, a quarter of it above. */
static prx_status converting(prx_iq_reader *r, prx_stored t, int channels) {
  if (channels == 1) {
    r->info.center_freq += r->info.sample_rate / 4;
    r->info.sample_rate /= 2;
  }
  r->conv = t;
  r->sample_size = (size_t)t.bits / 8 * (size_t)channels;
  if (!(r->scratch = malloc(PRX_CONVERT_SCRATCH))) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  if (channels == 1 && (!(r->hb = prx_halfband_create()) ||
                        !(r->reals = malloc(PRX_CONVERT_SCRATCH / r->sample_size * sizeof(float)))))
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  return PRX_OK;
}

/* A SigMF recording whose datatype is converted as read; a real one's metadata made the complex
 * stream's: rate halved, every capture's frequency moved by a quarter of the real rate, captures'
 * starts and annotations' sample ranges halved (complex sample m is real sample 2m's instant). A
 * real recording whose later capture (a retune) starts at an odd sample is refused: its start
 * would fall between complex samples. */
static prx_status sigmf_converted(prx_iq_reader *r, const prx_sigmf_read_meta *m) {
  r->stored_name = m->conv_name;
  prx_sigmf_recording *rec = r->rec;
  for (size_t i = 1; m->conv_channels == 1 && i < rec->n_captures; i++)
    if (rec->captures[i].sample_start % 2)
      return prx_fail(PRX_ERR_UNSUPPORTED,
                      "%s: a real (%s) recording whose capture %zu starts at real sample %llu: "
                      "polyrx reads the captures of real recordings where they start at an even "
                      "sample (complex sample %llu is real sample 2 x %llu's instant)",
                      r->name, m->conv_name, i, (unsigned long long)rec->captures[i].sample_start,
                      (unsigned long long)rec->captures[i].sample_start / 2,
                      (unsigned long long)rec->captures[i].sample_start / 2);
  prx_status st = converting(r, m->conv, m->conv_channels);
  if (st || m->conv_channels == 2) return st;
  /* each capture's DC frequency moved up a quarter of the real rate (half the complex one), its
   * start to its complex sample */
  prx_sigmf_capture *c = (prx_sigmf_capture *)rec->captures;
  c[0].frequency = r->info.center_freq;
  c[0].has_frequency = 1;
  for (size_t i = 1; i < rec->n_captures; i++) {
    c[i].sample_start /= 2;
    if (c[i].has_frequency) c[i].frequency += r->info.sample_rate / 2;
  }
  prx_sigmf_annotation *a = (prx_sigmf_annotation *)rec->annotations;
  for (size_t i = 0; i < rec->n_annotations; i++) {
    uint64_t end = a[i].sample_start + a[i].sample_count;
    a[i].sample_start /= 2;
    if (a[i].sample_count) a[i].sample_count = (end + 1) / 2 - a[i].sample_start;
  }
  return PRX_OK;
}

/* A WAV file open as r->fd (file_size bytes): its header read, the data chunk streamed. */
static prx_status open_wav(prx_iq_reader *r, const char *path, uint64_t file_size,
                           prx_format format) {
  if (!(r->wav = malloc(sizeof *r->wav))) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  prx_status st = prx_wav_read_header(r->fd, path, file_size, r->wav);
  if (st) return st;
  const prx_wav_header *h = r->wav;
  if (format != PRX_CF32 && format != h->format)
    return prx_fail(PRX_ERR_INVALID, "format %s was given but the WAV file '%s' holds %s samples",
                    prx_format_name(format), path, prx_wav_stored_name(&h->wav));
  r->info.format = h->format;
  r->info.sample_rate = h->sample_rate;
  r->info.center_freq = h->center_freq;
  r->info.is_wav = 1;
  r->stored_name = prx_wav_stored_name(&h->wav);
  r->sample_size = h->file_sample_bytes;
  if (h->convert && (st = converting(r, h->stored, h->wav.channels))) return st;
  /* several data chunks (KiwiSDR) are read where their runs say, the offset staying at 0: the
   * stream's byte b is then read at "base" 0 + b through pread_data */
  if (!h->runs && lseek(r->fd, (off_t)h->wav.data_offset, SEEK_SET) < 0)
    return prx_fail(PRX_ERR_IO, "cannot seek in '%s': %s", path, strerror(errno));
  r->bounded = 1;
  r->remaining = h->wav.data_bytes + h->wav.gps_filled * h->file_sample_bytes;
  r->swap_iq = h->wav.inverted; /* a lower sideband's audio mirrored back */
  return PRX_OK;
}

/* A raw file whose recorder says its rate, centre and start (raw->recorder set): taken, and an
 * .sdriq file's samples from after its header. */
static prx_status open_recorder_raw(prx_iq_reader *r, const char *path, prx_format format,
                                    int sdriq, const prx_recorder_raw *found) {
  if (!(r->raw = malloc(sizeof *r->raw))) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  prx_status st = PRX_OK;
  if (sdriq)
    st = prx_sdriq_read_header(r->fd, path, r->raw);
  else
    *r->raw = *found;
  if (st) return st;
  const prx_recorder_raw *h = r->raw;
  r->info.sample_rate = h->sample_rate;
  r->info.center_freq = h->center_freq;
  r->origin = (prx_iq_origin){h->recorder, h->bits, h->start_utc[0] ? h->start_utc : NULL};
  if (!sdriq) return PRX_OK; /* gqrx: cf32, the file's bytes from the first */
  prx_format held = h->bits == 16 ? PRX_CI16 : PRX_CF32;
  if (format != PRX_CF32 && format != held)
    return prx_fail(PRX_ERR_INVALID,
                    "format %s was given but the SDRangel file '%s' holds %d-bit samples",
                    prx_format_name(format), path, h->bits);
  r->info.format = held;
  if (h->bits == 24) {
    r->stored_name = "SDRangel 24-bit";
    if ((st = converting(r, (prx_stored){32, 0, 0, 0, 24}, 2))) return st;
  }
  if (lseek(r->fd, PRX_SDRIQ_HEADER_BYTES, SEEK_SET) < 0)
    return prx_fail(PRX_ERR_IO, "cannot seek in '%s': %s", path, strerror(errno));
  return PRX_OK;
}

/* 1 when the regular file fd begins as a WAV file does */
static int looks_like_wav(int fd) {
  unsigned char head[12];
  return pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
         prx_wav_sniff(head, sizeof head);
}

prx_status prx_iq_open(const char *path, prx_format format, prx_iq_reader **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_iq_open: NULL output pointer");
  *out = NULL;
  if (!path || !path[0]) return prx_fail(PRX_ERR_INVALID, "prx_iq_open: no input path");
  if (!prx_format_size(format) || format == PRX_CF16)
    return prx_fail(PRX_ERR_INVALID, "input format must be cf32, ci16, ci8 or cu8 (got %d)",
                    (int)format);
  prx_iq_reader *r = calloc(1, sizeof *r);
  if (!r) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a reader");
  r->fd = -1;
  prx_status st = PRX_OK;
  char *base = NULL;
  if (!strcmp(path, "-")) {
    r->fd = STDIN_FILENO;
    r->info.format = format;
    r->name = strdup("standard input");
    if (!r->name) st = prx_fail(PRX_ERR_NOMEM, "out of memory");
  } else if (ends_with(path, ".sigmf")) {
    st = open_archive(r, path, format);
  } else if ((base = sigmf_base(path))) {
    st = open_sigmf(r, base, format);
    free(base);
  } else {
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
      st = prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    } else {
      r->own_fd = 1;
      struct stat sb;
      int got_stat = fstat(r->fd, &sb) == 0, is_file = got_stat && S_ISREG(sb.st_mode);
      if (got_stat && S_ISDIR(sb.st_mode))
        st = prx_fail(PRX_ERR_IO, "'%s' is a directory, not a sample file", path);
      r->info.format = format;
      r->name = strdup(path);
      if (!r->name) st = prx_fail(PRX_ERR_NOMEM, "out of memory");
      prx_recorder_raw named;
      if (!st && is_file && looks_like_wav(r->fd))
        st = open_wav(r, path, (uint64_t)sb.st_size, format);
      else if (!st && is_file && ends_with(path, ".sdriq"))
        st = open_recorder_raw(r, path, format, 1, NULL);
      else if (!st && is_file && format == PRX_CF32 && prx_gqrx_name(path, &named))
        st = open_recorder_raw(r, path, format, 0, &named);
    }
  }
  if (st) {
    prx_iq_close(r);
    return st;
  }
  if (!r->sample_size) r->sample_size = prx_format_size(r->info.format);
  if (!r->stored_name) r->stored_name = prx_format_name(r->info.format);
  struct stat sb;
  off_t here;
  if (r->own_fd && fstat(r->fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
      (here = lseek(r->fd, 0, SEEK_CUR)) >= 0) {
    r->extent_known = 1;
    r->extent_bytes = r->bounded ? r->remaining
                      : (uint64_t)sb.st_size > (uint64_t)here
                          ? (uint64_t)sb.st_size - (uint64_t)here
                          : 0;
    r->positional = 1;
    r->base = (uint64_t)here;
    r->limit = r->bounded ? r->remaining : UINT64_MAX;
  }
  *out = r;
  return PRX_OK;
}

const prx_iq_info *prx_iq_reader_info(const prx_iq_reader *r) { return r ? &r->info : NULL; }

const char *prx_iq_reader_name(const prx_iq_reader *r) { return r ? r->name : NULL; }

const prx_sigmf_recording *prx_iq_reader_sigmf(const prx_iq_reader *r) { return r ? r->rec : NULL; }

uint64_t prx_iq_reader_samples(const prx_iq_reader *r) {
  if (!r) return 0;
  return r->windowed ? (r->samples > r->win_first ? r->samples - r->win_first : 0) : r->samples;
}

void prx_iq_reader_swap_iq(prx_iq_reader *r, int on) {
  /* (a mirrored WAV recording is handed out exchanged already: on exchanges it back) */
  if (r) r->swap_iq = !!on ^ (r->wav && r->wav->wav.inverted);
}

/* Exchanges I and Q of n samples of format f in place: the two halves of each sample, as one
 * rotation of an integer of the sample's width (a loop the compiler vectorises). */
static void swap_components(prx_format f, void *buf, size_t n) {
  unsigned char *p = buf;
  switch (prx_format_size(f)) {
  case 2:
    for (size_t i = 0; i < n; i++, p += 2) {
      uint16_t v;
      memcpy(&v, p, 2);
      v = (uint16_t)(v << 8 | v >> 8);
      memcpy(p, &v, 2);
    }
    break;
  case 4:
    for (size_t i = 0; i < n; i++, p += 4) {
      uint32_t v;
      memcpy(&v, p, 4);
      v = v << 16 | v >> 16;
      memcpy(p, &v, 4);
    }
    break;
  default: /* 8: cf32 */
    for (size_t i = 0; i < n; i++, p += 8) {
      uint64_t v;
      memcpy(&v, p, 8);
      v = v << 32 | v >> 32;
      memcpy(p, &v, 8);
    }
  }
}

int prx_iq_reader_is_real(const prx_iq_reader *r) { return r && r->hb; }

const char *prx_iq_reader_stored(const prx_iq_reader *r, size_t *bytes) {
  if (bytes) *bytes = r ? r->sample_size : 0;
  return r ? r->stored_name : NULL;
}

prx_status prx_real_format_parse(const char *name, prx_real_format *out) {
  static const char *const names[] = {"ri8", "ru8", "ri16", "rf32"};
  for (int i = 0; name && out && i < 4; i++)
    if (!strcasecmp(name, names[i])) {
      *out = (prx_real_format)(i + 1);
      return PRX_OK;
    }
  return prx_fail(PRX_ERR_INVALID,
                  "unknown real sample format '%s' (expected ri8, ru8, ri16 or rf32)",
                  name ? name : "(null)");
}

/* the stored type of a real format */
static prx_stored real_stored(prx_real_format f) {
  switch (f) {
  case PRX_REAL_RI8: return (prx_stored){8, 0, 0, 0, 0};
  case PRX_REAL_RU8: return (prx_stored){8, 0, 1, 0, 0};
  case PRX_REAL_RI16: return (prx_stored){16, 0, 0, 0, 0};
  default: return (prx_stored){32, 1, 0, 0, 0};
  }
}

prx_status prx_iq_open_real(const char *path, prx_real_format f, prx_iq_reader **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_iq_open_real: NULL output pointer");
  *out = NULL;
  if (f < PRX_REAL_RI8 || f > PRX_REAL_RF32)
    return prx_fail(PRX_ERR_INVALID, "prx_iq_open_real: unknown real format %d", (int)f);
  prx_iq_reader *r = NULL;
  /* opened as raw samples, then made real (a file that is SigMF or WAV is refused: their
   * headers say what they hold) */
  prx_status st = prx_iq_open(path, PRX_CF32, &r);
  if (st) return st;
  static const char *const names[] = {"", "ri8", "ru8", "ri16", "rf32"};
  if (r->info.is_sigmf || r->info.is_wav) {
    st = prx_fail(PRX_ERR_INVALID,
                  "%s is a %s recording: its header says what it holds (give no "
                  "real format)",
                  path, r->info.is_wav ? "WAV" : "SigMF");
  } else {
    r->info.format = PRX_CF32;
    r->stored_name = names[f];
    st = converting(r, real_stored(f), 1);
  }
  if (st) {
    prx_iq_close(r);
    return st;
  }
  *out = r;
  return PRX_OK;
}

const prx_wav_info *prx_iq_reader_wav(const prx_iq_reader *r) {
  return r && r->wav ? &r->wav->wav : NULL;
}

const prx_iq_origin *prx_iq_reader_origin(const prx_iq_reader *r) {
  return r && r->raw ? &r->origin : NULL;
}

const char *prx_iq_reader_start_utc(const prx_iq_reader *r) {
  if (!r) return NULL;
  if (r->raw) return r->origin.start_time;
  const char *t = r->wav ? r->wav->wav.start_time : NULL;
  size_t n = t ? strlen(t) : 0;
  return n && t[n - 1] == 'Z' ? t : NULL;
}

/* The whole stream's extent, whatever the window. */
static int stream_extent(const prx_iq_reader *r, uint64_t *samples, uint64_t *extra_bytes) {
  int known = r && r->extent_known;
  uint64_t whole = known ? r->extent_bytes / r->sample_size : 0;
  if (r && r->hb) whole = (whole + 1) / 2; /* real samples: the complex ones they give */
  *samples = whole;
  *extra_bytes = known ? r->extent_bytes % r->sample_size : 0;
  return known;
}

int prx_iq_reader_extent(const prx_iq_reader *r, uint64_t *samples, uint64_t *extra_bytes) {
  uint64_t whole, extra;
  int known = stream_extent(r, &whole, &extra);
  if (known && r->windowed) {
    whole = whole > r->win_first ? whole - r->win_first : 0;
    if (whole >= r->win_count) whole = r->win_count, extra = 0; /* the window ends first */
  }
  if (samples) *samples = whole;
  if (extra_bytes) *extra_bytes = extra;
  return known;
}

prx_status prx_iq_reader_window(prx_iq_reader *r, uint64_t first, uint64_t count) {
  if (!r) return prx_fail(PRX_ERR_INVALID, "prx_iq_reader_window: NULL reader");
  if (r->samples || r->windowed)
    return prx_fail(PRX_ERR_INVALID, "prx_iq_reader_window: %s: set the window before reading",
                    r->name);
  if (!count) return prx_fail(PRX_ERR_INVALID, "%s: a window of no samples", r->name);
  uint64_t whole, extra;
  if (stream_extent(r, &whole, &extra) && first >= whole)
    return prx_fail(PRX_ERR_INVALID,
                    "%s holds %llu samples: the start, sample %llu, is at or past its end", r->name,
                    (unsigned long long)whole, (unsigned long long)first);
  r->windowed = 1;
  r->win_first = first;
  r->win_count = count;
  r->win_pread = first && prx_iq_reader_positional(r);
  if (r->win_pread) r->samples = first;
  return PRX_OK;
}

uint64_t prx_iq_reader_window_start(const prx_iq_reader *r) {
  return r && r->windowed ? r->win_first : 0;
}

uint64_t prx_iq_reader_window_count(const prx_iq_reader *r) {
  return r && r->windowed ? r->win_count : UINT64_MAX;
}

/* The stream ends inside a sample: `rest` bytes after `complete` stored samples. */
static prx_status cut_sample(const prx_iq_reader *r, size_t rest, uint64_t complete) {
  return prx_fail(PRX_ERR_TRUNCATED,
                  "%s ends inside a sample: %zu leftover byte(s) after %llu complete %s samples "
                  "(%zu bytes each); wrong -F format, or a cut file?",
                  r->name, rest, (unsigned long long)complete, r->stored_name, r->sample_size);
}

/* The same after `complete` samples handed out (real ones: those the converter took). */
static prx_status truncated(const prx_iq_reader *r, size_t rest, uint64_t complete) {
  return cut_sample(r, rest, r->hb ? prx_halfband_in(r->hb) : complete);
}

/* A read failed with errno e after `done` samples. */
static prx_status read_failed(const prx_iq_reader *r, uint64_t done, int e) {
  return prx_fail(PRX_ERR_IO, "cannot read %s after %llu samples: %s", r->name,
                  (unsigned long long)done, strerror(e));
}

/* pread(2) of up to n bytes of the data from its byte pos on (at base + pos); in a KiwiSDR
 * file, whose samples lie in many data chunks, up to the end of the chunk that holds pos (or of
 * the zeros that stand for samples lost in a gap). */
static ssize_t pread_data(const prx_iq_reader *r, void *buf, size_t n, uint64_t pos) {
  const prx_wav_header *h = r->wav;
  if (!h || !h->runs) return pread(r->fd, buf, n, (off_t)(r->base + pos));
  if (!h->n_runs) return 0;
  size_t lo = 0, hi = h->n_runs; /* the last run that begins at or before pos */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (h->runs[mid].start <= pos)
      lo = mid;
    else
      hi = mid;
  }
  const prx_wav_run *run = &h->runs[lo];
  uint64_t in = pos - run->start, k = in / run->bytes, at = in % run->bytes;
  if (k >= run->count) return 0; /* past the data's end */
  if (n > run->bytes - at) n = (size_t)(run->bytes - at);
  if (run->offset == UINT64_MAX) { /* samples lost in a gap: zeros */
    memset(buf, 0, n);
    return (ssize_t)n;
  }
  return pread(r->fd, buf, n, (off_t)(run->offset + k * run->period + at));
}

/* Reads up to max samples as stored into buf (prx_iq_read's contract, before any conversion). */
static prx_status read_stored(prx_iq_reader *r, void *buf, size_t max, size_t *n) {
  if (r->read_errno) return read_failed(r, r->samples, r->read_errno);
  if (r->eof) return r->n_carry ? truncated(r, r->n_carry, r->samples) : PRX_OK;
  if (max > SIZE_MAX / r->sample_size) max = SIZE_MAX / r->sample_size;
  size_t want = max * r->sample_size;
  unsigned char *p = buf;
  size_t have = r->n_carry;
  memcpy(p, r->carry, have);
  r->n_carry = 0;
  /* fill the whole buffer unless the stream ends: pipes deliver in pieces */
  while (have < want) {
    size_t ask = want - have;
    if (ask > ((size_t)1 << 30)) ask = (size_t)1 << 30;
    if (r->bounded && ask > r->remaining) ask = (size_t)r->remaining;
    if (r->bounded && ask == 0) { /* the end of the archive's data member */
      r->eof = 1;
      break;
    }
    ssize_t got =
        r->wav && r->wav->runs ? pread_data(r, p + have, ask, r->pos) : read(r->fd, p + have, ask);
    if (got > 0) r->pos += (uint64_t)got;
    /* a signal: hand out the complete samples already there, else say so (like read(2)), so
     * that a caller that stops on Ctrl-C sees it at once even when the producer is quiet. The
     * stream is not harmed: a later call goes on where this one stopped. */
    if (got < 0 && errno == EINTR) {
      if (have >= r->sample_size) break;
      memcpy(r->carry, p, have);
      r->n_carry = have;
      return prx_fail(PRX_ERR_IO, "reading %s was interrupted by a signal (call again to go on)",
                      r->name);
    }
    if (got < 0) {
      int e = errno;
      /* hand out the complete samples already read; the error is raised on the next call */
      r->read_errno = e;
      if (have >= r->sample_size) break;
      return read_failed(r, r->samples, e);
    }
    if (got == 0) {
      r->eof = 1;
      break;
    }
    have += (size_t)got;
    if (r->bounded) r->remaining -= (uint64_t)got;
  }
  size_t count = have / r->sample_size, rest = have % r->sample_size;
  memcpy(r->carry, p + count * r->sample_size, rest);
  r->n_carry = rest;
  if (count == 0 && r->eof && rest) return truncated(r, rest, r->samples);
  /* standard input's first bytes: a WAV header read as samples would be plausible garbage */
  if (r->samples == 0 && !r->own_fd && prx_wav_sniff(buf, have))
    return prx_fail(PRX_ERR_FORMAT,
                    "standard input holds a WAV file: give the file's name (its header is read "
                    "there), or raw samples (sox IN.wav -t raw -)");
  r->samples += count;
  *n = count;
  return PRX_OK;
}

/* I/Q stored as a type with no prx_format: through the scratch buffer, converted to cf32; a
 * piece that comes back short (the end, a signal, an error) ends the call with what was read,
 * and its status where that is nothing */
static prx_status read_converted(prx_iq_reader *r, prx_cf32 *out, size_t max, size_t *n) {
  const size_t piece = PRX_CONVERT_SCRATCH / r->sample_size;
  size_t done = 0;
  while (done < max) {
    size_t want = max - done < piece ? max - done : piece, got = 0;
    prx_status st = read_stored(r, r->scratch, want, &got);
    prx_stored_to_float(&r->conv, r->scratch, 2 * got, (float *)(out + done));
    done += got;
    if (st && !done) return st;
    if (st || got < want) break;
  }
  *n = done;
  return PRX_OK;
}

/* Real samples through the half-band converter: pieces of at most twice the room left (a piece
 * of n real samples completes at most (n + 1) / 2 outputs), then, once the stream has ended, the
 * converter's tail, then the stream's own end (a partial sample: PRX_ERR_TRUNCATED, as read_stored
 * says it every time). Where a signal or an error cuts a read that completed no output yet, its
 * status is returned; the samples already taken stay in the converter. The reader's count is of
 * complex samples handed out. */
static prx_status read_real(prx_iq_reader *r, prx_cf32 *out, size_t max, size_t *n) {
  const size_t piece = PRX_CONVERT_SCRATCH / r->sample_size;
  const uint64_t handed = r->samples;
  size_t done = 0;
  prx_status st = PRX_OK;
  while (done < max) {
    if (r->real_end) {
      size_t k = prx_halfband_flush(r->hb, out + done, max - done);
      done += k;
      if (k) continue;
      size_t none = 0; /* the converter is through: the stream's own end, or its cut sample */
      st = read_stored(r, r->scratch, 1, &none);
      break;
    }
    size_t room = max - done, want = 2 * room < piece ? 2 * room : piece, got = 0;
    st = read_stored(r, r->scratch, want, &got);
    if (got) {
      prx_stored_to_float(&r->conv, r->scratch, got, r->reals);
      done += prx_halfband_push(r->hb, r->reals, got, out + done);
    }
    if (r->eof || st == PRX_ERR_TRUNCATED || (!st && !got)) {
      r->real_end = 1; /* (a cut sample is said after the tail) */
      st = PRX_OK;
      continue;
    }
    if (st || got < want) { /* a signal or an error */
      if (!st && !done)
        st = prx_fail(PRX_ERR_IO, "reading %s was interrupted by a signal (call again to go on)",
                      r->name);
      break;
    }
  }
  r->samples = handed + done;
  *n = done;
  return done ? PRX_OK : st;
}

static prx_status read_at_stream(prx_iq_reader *r, void *buf, uint64_t first, size_t max,
                                 size_t *n);

/* The stream read on from where it is (prx_iq_read's contract, the window aside). */
static prx_status read_stream(prx_iq_reader *r, void *buf, size_t max, size_t *n) {
  if (!r->scratch) {
    prx_status st = read_stored(r, buf, max, n);
    if (!st && PRX_HOST_BIG_ENDIAN) prx_io_swap_samples(r->info.format, buf, *n);
    if (!st && r->swap_iq) swap_components(r->info.format, buf, *n);
    return st;
  }
  prx_status st = r->hb ? read_real(r, buf, max, n) : read_converted(r, buf, max, n);
  if (!st && r->swap_iq) swap_components(PRX_CF32, buf, *n);
  return st;
}

/* A pipe's samples before the window read and dropped. */
static prx_status skip_to_window(prx_iq_reader *r) {
  const size_t ss = prx_format_size(r->info.format), room = ((size_t)1 << 20) / ss;
  void *junk = malloc(room * ss);
  if (!junk) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  prx_status st = PRX_OK;
  while (!st && r->samples < r->win_first) {
    uint64_t left = r->win_first - r->samples;
    size_t got = 0;
    st = read_stream(r, junk, left < room ? (size_t)left : room, &got);
    if (!st && !got)
      st = prx_fail(PRX_ERR_INVALID, "%s ended after %llu samples, before the start (sample %llu)",
                    r->name, (unsigned long long)r->samples, (unsigned long long)r->win_first);
  }
  free(junk);
  return st;
}

prx_status prx_iq_read(prx_iq_reader *r, void *buf, size_t max, size_t *n) {
  if (n) *n = 0;
  if (!r || !n) return prx_fail(PRX_ERR_INVALID, "prx_iq_read: NULL reader or count");
  if (max == 0) return PRX_OK;
  if (!buf) return prx_fail(PRX_ERR_INVALID, "prx_iq_read: NULL buffer for %zu samples", max);
  if (!r->windowed) return read_stream(r, buf, max, n);
  prx_status st = r->win_pread ? PRX_OK : skip_to_window(r);
  if (st) return st;
  uint64_t left = r->win_count - (r->samples - r->win_first);
  if (!left) return PRX_OK; /* the window's end */
  if (max > left) max = (size_t)left;
  if (!r->win_pread) return read_stream(r, buf, max, n);
  /* a file from the window's start on: what the positional read gives, its cut or error said
   * by the next call (which reads there again) where samples came with it */
  st = read_at_stream(r, buf, r->samples, max, n);
  r->samples += *n;
  return *n ? PRX_OK : st;
}

int prx_iq_reader_positional(const prx_iq_reader *r) {
  return r && r->positional && !r->n_carry && !r->eof && !r->read_errno;
}

int prx_iq_reader_file(const prx_iq_reader *r, int *fd, uint64_t *base, uint64_t *limit) {
  /* a mapping hands the file's bytes out as they are */
  if (!prx_iq_reader_positional(r) || r->swap_iq || r->scratch || (r->wav && r->wav->runs))
    return 0;
  *fd = r->fd;
  *base = r->base;
  *limit = r->limit;
  if (r->windowed) { /* the window's bytes (its start is inside the data: prx_iq_reader_window) */
    uint64_t skip = r->win_first * r->sample_size;
    *base += skip;
    if (*limit != UINT64_MAX) *limit -= skip;
    if (r->win_count <= UINT64_MAX / r->sample_size && r->win_count * r->sample_size < *limit)
      *limit = r->win_count * r->sample_size;
  }
  return 1;
}

/* Reads up to max stored samples from stored sample `first` on with pread(2), bounded by the
 * data's limit: *count whole ones at dst, *rest bytes of a partial one after them (the stream's
 * end inside a sample), *err a read's errno (0: none). */
static void pread_stored(const prx_iq_reader *r, void *dst, uint64_t first, size_t max,
                         size_t *count, size_t *rest, int *err) {
  const size_t ss = r->sample_size;
  *count = *rest = 0;
  *err = 0;
  if (first > (UINT64_MAX - r->base) / ss) return; /* past any file's end */
  uint64_t off = first * ss;
  uint64_t avail = r->limit == UINT64_MAX ? UINT64_MAX : off >= r->limit ? 0 : r->limit - off;
  if (max > SIZE_MAX / ss) max = SIZE_MAX / ss;
  size_t want = max * ss;
  if (want > avail) want = (size_t)avail;
  unsigned char *p = dst;
  size_t have = 0;
  while (have < want) {
    size_t ask = want - have;
    if (ask > ((size_t)1 << 30)) ask = (size_t)1 << 30;
    ssize_t got = pread_data(r, p + have, ask, off + have);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) *err = errno;
    if (got <= 0) break;
    have += (size_t)got;
  }
  *count = have / ss;
  *rest = have % ss;
}

#define PIECE ((size_t)1 << 15) /* samples a positional conversion does at a time */

/* Positional reads of converted samples: pieces through buffers of this call's own (several
 * threads read at once). I/Q pieces are converted sample for sample; a real piece of outputs
 * m0 .. m0 + n - 1 reads the real samples its window reaches (2 m0 - 2Q - 1 on, zeros before the
 * start and past the end) and the converter computes them without its state: the outputs are
 * those of the sequential read, whichever thread and piece computes them. */
static prx_status read_at_converted(prx_iq_reader *r, prx_cf32 *out, uint64_t first, size_t max,
                                    size_t *n) {
  const int real = r->hb != NULL;
  const size_t ss = r->sample_size, q = PRX_HALFBAND_Q, win = 2 * PIECE + 4 * q + 2;
  unsigned char *raw = malloc((real ? win : PIECE) * ss);
  float *w = real ? malloc((win + 2 * PIECE + 2 * q + 2) * sizeof *w) : NULL;
  prx_status st = PRX_OK;
  if (!raw || (real && !w)) {
    st = prx_fail(PRX_ERR_NOMEM, "out of memory reading %s", r->name);
    max = 0;
  }
  size_t done = 0, count = 0, rest = 0;
  uint64_t stored_end = first; /* stored samples up to the last piece's end */
  int err = 0;
  while (done < max) {
    const size_t k = max - done < PIECE ? max - done : PIECE;
    const uint64_t m0 = first + done;
    if (!real) {
      pread_stored(r, raw, m0, k, &count, &rest, &err);
      prx_stored_to_float(&r->conv, raw, 2 * count, (float *)(out + done));
      done += count;
      stored_end = m0 + count;
      if (count < k) break;
      continue;
    }
    /* the window: real samples 2 m0 - 2Q - 1 .. 2 (m0 + k) + 2Q */
    const int64_t lo = 2 * (int64_t)m0 - (int64_t)(2 * q + 1);
    const size_t need = 2 * k + 4 * q + 2, skip = lo < 0 ? (size_t)-lo : 0;
    pread_stored(r, raw, (uint64_t)(lo + (int64_t)skip), need - skip, &count, &rest, &err);
    stored_end = (uint64_t)(lo + (int64_t)(skip + count));
    memset(w, 0, need * sizeof *w);
    prx_stored_to_float(&r->conv, raw, count, w + skip);
    /* where the stream ended inside the window: the outputs of its real samples only */
    size_t ready = k;
    if (count < need - skip) {
      const uint64_t stream = (uint64_t)(lo + (int64_t)(skip + count)); /* real samples there */
      const uint64_t outs = (stream + 1) / 2;
      ready = outs > m0 ? (size_t)(outs - m0 < k ? outs - m0 : k) : 0;
      /* a window past the end whose outputs stop short of the stream's last: the stream goes
       * on for the next read, which meets its end (or its cut sample, or its error) itself */
      if (m0 + ready < outs) rest = 0, err = 0;
    }
    prx_halfband_block(r->hb, w, m0, ready, w + need, w + need + ready + 2 * q + 1, out + done);
    done += ready;
    if (ready < k || count < need - skip) break;
  }
  free(raw);
  free(w);
  *n = done;
  if (st) return st;
  if (err) return read_failed(r, first + done, err);
  if (rest) return cut_sample(r, rest, stored_end);
  return PRX_OK;
}

/* Reads with pread(2): a file read at several places at once (several reader threads), and a
 * file cut while it is read ends there as with read(2) (a short read), with no signal. first
 * counts from the window's start. */
prx_status prx_iq_read_at(prx_iq_reader *r, void *buf, uint64_t first, size_t max, size_t *n) {
  if (n) *n = 0;
  if (!r || !n) return prx_fail(PRX_ERR_INVALID, "prx_iq_read_at: NULL reader or count");
  if (!r->positional)
    return prx_fail(PRX_ERR_INVALID, "prx_iq_read_at: %s is not read in place", r->name);
  if (max == 0) return PRX_OK;
  if (!buf) return prx_fail(PRX_ERR_INVALID, "prx_iq_read_at: NULL buffer for %zu samples", max);
  if (r->windowed) {
    if (first >= r->win_count) return PRX_OK; /* past the window's end */
    if (max > r->win_count - first) max = (size_t)(r->win_count - first);
    first += r->win_first;
  }
  return read_at_stream(r, buf, first, max, n);
}

/* prx_iq_read_at from the stream's sample `first` (the window aside). */
static prx_status read_at_stream(prx_iq_reader *r, void *buf, uint64_t first, size_t max,
                                 size_t *n) {
  if (r->scratch) {
    prx_status st = read_at_converted(r, buf, first, max, n);
    if (r->swap_iq) swap_components(PRX_CF32, buf, *n);
    return st;
  }
  size_t count, rest;
  int e;
  pread_stored(r, buf, first, max, &count, &rest, &e);
  if (PRX_HOST_BIG_ENDIAN) prx_io_swap_samples(r->info.format, buf, count);
  if (r->swap_iq) swap_components(r->info.format, buf, count);
  *n = count; /* the complete samples, with any error */
  if (e) return read_failed(r, first + count, e);
  if (rest) /* the stream ends inside a sample (a short read, or the member's end) */
    return truncated(r, rest, first + count);
  return PRX_OK;
}

void prx_iq_close(prx_iq_reader *r) {
  if (!r) return;
  if (r->own_fd && r->fd >= 0) close(r->fd);
  free(r->name);
  prx_wav_header_free(r->wav);
  free(r->raw);
  free(r->scratch);
  free(r->reals);
  prx_halfband_destroy(r->hb);
  prx_sigmf_recording_free(r->rec);
  free(r);
}

void prx_io_swap_samples(prx_format f, void *buf, size_t n) {
  unsigned char *p = buf;
  size_t width = f == PRX_CF32 ? 4 : f == PRX_CI16 || f == PRX_CF16 ? 2 : 1;
  if (width == 1) return;
  for (size_t i = 0; i < 2 * n; i++, p += width)
    for (size_t a = 0, b = width - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}
