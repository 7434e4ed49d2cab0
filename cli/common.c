/* Argument parsing and error reporting shared by the subcommands. */
#include "cli.h"

#include "core/cuda_module.h"
#include "io/io_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the run's first error line, for the reports (writers' threads may raise one too) */
static pthread_mutex_t first_error_lock = PTHREAD_MUTEX_INITIALIZER;
static char first_error[512];

int cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "polyrx %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  pthread_mutex_lock(&first_error_lock);
  if (!first_error[0]) {
    va_start(ap, fmt);
    vsnprintf(first_error, sizeof first_error, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&first_error_lock);
  return 1;
}

int cli_open_raw_output(const char *cmd, const char *path, FILE **out) {
  *out = NULL;
  if (!strcmp(path, "-")) {
    if (isatty(STDOUT_FILENO))
      return cli_error(cmd, "refusing to write binary samples to a terminal (redirect or pipe "
                            "standard output, or give -o FILE)");
    *out = stdout;
  } else if (!(*out = fopen(path, "wb"))) {
    return cli_error(cmd, "cannot create %s: %s", path, strerror(errno));
  }
  return -1;
}

int cli_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

const char *cli_first_error(void) {
  pthread_mutex_lock(&first_error_lock);
  const char *e = first_error;
  pthread_mutex_unlock(&first_error_lock);
  return e;
}

int cli_flush_output(FILE *f, long long *bytes) {
  *bytes = -1;
  if (!f) return 0;
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  struct stat sb;
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode)) *bytes = (long long)sb.st_size;
  errno = e;
  return bad ? -1 : 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "polyrx %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (polyrx %s --help)\n", cmd);
  va_end(ap);
  return 2;
}

char *cli_format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = n < 0 ? NULL : malloc((size_t)n + 1);
  if (s) {
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return s;
}

int cli_status_error(const char *cmd, const char *what, prx_status st) {
  const char *detail = prx_last_error();
  return cli_error(cmd, "%s: %s%s%s", what, prx_strerror(st), detail[0] ? ": " : "", detail);
}

double cli_hz_unit(double hz, const char **unit) {
  static const struct {
    double scale;
    const char *name;
  } units[] = {{1e9, "GHz"}, {1e6, "MHz"}, {1e3, "kHz"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (fabs(hz) >= units[i].scale) {
      *unit = units[i].name;
      return hz / units[i].scale;
    }
  *unit = "Hz";
  return hz;
}

int cli_parse_eng(const char *text, double *out) {
  if (!text || !*text) return -1;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || errno == ERANGE || !isfinite(v)) return -1;
  double scale = 1;
  if (*end) {
    switch (*end) {
    case 'p': scale = 1e-12; break;
    case 'n': scale = 1e-9; break;
    case 'u': scale = 1e-6; break;
    case 'm': scale = 1e-3; break;
    case 'k':
    case 'K': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'G': scale = 1e9; break;
    case 'T': scale = 1e12; break;
    default: return -1;
    }
    end++;
    if (*end) return -1;
  }
  v *= scale;
  if (!isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out) {
  if (!text || !*text || strchr(text, '-') || strchr(text, '+')) return -1;
  unsigned long long v;
  if (strspn(text, "0123456789") == strlen(text)) {
    /* plain decimal: exact, whatever its size */
    errno = 0;
    v = strtoull(text, NULL, 10);
    if (errno == ERANGE) return -1;
  } else {
    /* with an engineering suffix or exponent (1M, 2e3): exact only below 2^53 */
    double d;
    if (cli_parse_eng(text, &d) != 0 || d != floor(d) || d < 0 || d >= 9007199254740992.0)
      return -1;
    v = (unsigned long long)d;
  }
  if (v < min || v > max) return -1;
  *out = (unsigned long)v;
  return 0;
}

int cli_bad_value(const char *cmd, const char *opt, const char *text, const char *what) {
  cli_error(cmd, "%s: '%s' is not a valid %s", opt, text, what);
  return 2;
}

int cli_parse_block(const char *cmd, const char *text, unsigned long *block) {
  if (cli_parse_uint(text, 256, 1024, block))
    return cli_bad_value(cmd, "--block", text, "block size (256..1024 symbols)");
  return -1;
}

int cli_parse_cfo_span(const char *cmd, const char *text, unsigned long *cfo_span) {
  if (cli_parse_uint(text, 1024, 1ul << 22, cfo_span))
    return cli_bad_value(cmd, "--cfo-span", text, "CFO span (1024..4194304 symbols)");
  return -1;
}

int cli_check_cfo_span(const char *cmd, unsigned long cfo_span, unsigned long block) {
  const prx_qpsk_config d = prx_qpsk_config_default();
  if (!block) block = d.block_symbols;
  if (!cfo_span) cfo_span = d.cfo_span_symbols;
  if (cfo_span >= 4 * block) return -1;
  return cli_usage_error(cmd,
                         "--cfo-span %lu holds fewer than 4 blocks of %lu symbols (the clock is "
                         "fitted over a span's blocks): give --cfo-span %lu or more, or a shorter "
                         "--block (256 for spans of 1024)",
                         cfo_span, block, 4 * block);
}

/* ---- a WAV input's header: what it leaves to be said (a data size not as written, a centre
 * frequency from the file's name), so that a user knows which samples were read and where the
 * frequencies come from ---- */

const char *cli_wav_extent_text(const prx_wav_info *wav, char *buf, size_t n) {
  unsigned long long declared = wav->declared_bytes, read = wav->data_bytes;
  switch (wav->extent) {
  case PRX_WAV_EXTENT_TO_END:
    snprintf(buf, n,
             "its data size was never filled in (%llu): the %llu bytes to the file's end are "
             "read as samples",
             declared, read);
    break;
  case PRX_WAV_EXTENT_WRAPPED:
    snprintf(buf, n,
             "its data size %llu wrapped past 4 GiB (a RIFF file cannot say more): %llu bytes "
             "are read, up to the file's end or the next chunk",
             declared, read);
    break;
  case PRX_WAV_EXTENT_CUT:
    snprintf(buf, n,
             "its header claims %llu bytes of samples but the file holds %llu (a cut "
             "recording): read to its end",
             declared, read);
    break;
  default: buf[0] = '\0';
  }
  return buf;
}

const char *cli_wav_kiwi_text(const prx_wav_info *wav, char *buf, size_t n) {
  buf[0] = '\0';
  if (!wav->gps_stamps) return buf;
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "%llu data chunks, %llu GPS time stamps (%llu with a fix)",
                        (unsigned long long)wav->data_chunks, (unsigned long long)wav->gps_stamps,
                        (unsigned long long)wav->gps_valid);
  if (k < n && wav->gps_rate > 0)
    k += (size_t)snprintf(buf + k, n - k, "; %.10g samples/s over %.3f s", wav->gps_rate,
                          wav->gps_span);
  if (k < n && wav->gps_gaps)
    snprintf(buf + k, n - k,
             "; %llu gap%s where samples were lost, the first before sample %llu; %llu zero "
             "samples stand for them",
             (unsigned long long)wav->gps_gaps, wav->gps_gaps == 1 ? "" : "s",
             (unsigned long long)wav->gps_first_gap, (unsigned long long)wav->gps_filled);
  else if (k < n && wav->gps_valid >= 2)
    snprintf(buf + k, n - k, "; no gaps");
  return buf;
}

/* Where a raw file's rate, centre and start came from (an .sdriq header, a gqrx name): a note
 * unless quiet. */
static void origin_note(const char *cmd, const char *input, const prx_iq_origin *o,
                        const prx_iq_info *info, int quiet) {
  if (quiet) return;
  fprintf(stderr,
          "polyrx %s: note: %s: rate %.10g Hz and centre %.10g Hz from its %s%s%s (-s, -f "
          "override)\n",
          cmd, input, info->sample_rate, info->center_freq, o->recorder,
          o->start_time ? ", start " : "", o->start_time ? o->start_time : "");
}

void cli_wav_note(const char *cmd, const char *input, const prx_wav_info *wav, int quiet) {
  char text[320];
  /* samples lost inside the file are said even with -q: the bits there are noise */
  if (wav->gps_gaps)
    fprintf(stderr,
            "polyrx %s: warning: WAV file %s: its KiwiSDR time stamps show %llu gap%s where "
            "samples were lost (dropped packets; the first before sample %llu): %llu zero samples "
            "stand for them, so that what follows keeps its time%s\n",
            cmd, input, (unsigned long long)wav->gps_gaps, wav->gps_gaps == 1 ? "" : "s",
            (unsigned long long)wav->gps_first_gap, (unsigned long long)wav->gps_filled,
            wav->gps_filled ? "" : " (none: the stamps jump by a minute or more, or backwards)");
  if (quiet) return;
  if (cli_wav_extent_text(wav, text, sizeof text)[0])
    fprintf(stderr, "polyrx %s: note: WAV file %s: %s\n", cmd, input, text);
  if (wav->center_from && !strcmp(wav->center_from, "file name"))
    fprintf(stderr,
            "polyrx %s: note: WAV file %s has no centre frequency in its header: taken from its "
            "name (-f overrides)\n",
            cmd, input);
  if (wav->rate_from && strcmp(wav->rate_from, "fmt chunk"))
    fprintf(stderr,
            "polyrx %s: note: WAV file %s: rate %.10g Hz, measured by its KiwiSDR GPS time stamps "
            "over %.3f s (its fmt chunk: %.10g, rounded; -s overrides)\n",
            cmd, input, wav->gps_rate, wav->gps_span, wav->header_rate);
  else if (wav->gps_stamps)
    fprintf(stderr,
            "polyrx %s: note: WAV file %s: its KiwiSDR time stamps %s: the rate is its fmt "
            "chunk's, %.10g Hz, rounded to whole Hz (-s sets the true one)\n",
            cmd, input,
            wav->gps_valid < 2  ? "have no GPS fix"
            : wav->gps_span < 1 ? "span less than a second"
                                : "disagree with its fmt chunk's rate by more than 0.1 %",
            wav->header_rate);
}

static int input_rate_centre(const char *cmd, const cli_input_opts *o, const prx_wav_info *wav,
                             prx_iq_info *info);
static int input_window(const char *cmd, const cli_input_opts *o, prx_iq_reader *r,
                        prx_iq_info *info);

int cli_write_sdriq_header(const char *cmd, double sample_rate, double center_freq,
                           const char *start_utc, const char *path, FILE *f) {
  double rate = floor(sample_rate + 0.5), centre = floor(center_freq + 0.5);
  if (!(rate >= 1 && rate <= 4294967295.0))
    return cli_error(cmd, "%s: an .sdriq file's rate is a whole number of Hz below 2^32 (%.10g)",
                     path, sample_rate);
  if (!(centre >= 0 && centre < 1.8e19))
    return cli_error(cmd, "%s: an .sdriq file's centre is a frequency of 0 Hz or more (%.10g)",
                     path, center_freq);
  if (rate != sample_rate || centre != center_freq)
    fprintf(stderr,
            "polyrx %s: note: %s: an .sdriq header holds whole Hz: rate %.0f (%.10g), centre "
            "%.0f (%.10g)\n",
            cmd, path, rate, sample_rate, centre, center_freq);
  double sec = 0;
  uint64_t ms = 0;
  if (start_utc && !prx_sigmf_datetime_diff(start_utc, "1970-01-01T00:00:00Z", &sec) && sec > 0)
    ms = (uint64_t)llround(sec * 1000);
  unsigned char h[PRX_SDRIQ_HEADER_BYTES];
  prx_sdriq_header_make(h, (uint32_t)rate, (uint64_t)centre, ms, 16);
  if (fwrite(h, 1, sizeof h, f) != sizeof h)
    return cli_error(cmd, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
  return -1;
}

int cli_format_from_name(const char *path, prx_format *fmt) {
  static const struct {
    const char *ext;
    prx_format f;
  } known[] = {{".cu8", PRX_CU8},   {".cs8", PRX_CI8},   {".ci8", PRX_CI8},
               {".cs16", PRX_CI16}, {".ci16", PRX_CI16}, {".sc16", PRX_CI16},
               {".cf32", PRX_CF32}, {".fc32", PRX_CF32}, {".cfile", PRX_CF32}};
  size_t n = strlen(path);
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    size_t m = strlen(known[i].ext);
    if (n > m && !strcasecmp(path + n - m, known[i].ext)) {
      *fmt = known[i].f;
      return 1;
    }
  }
  return 0;
}

int cli_open_input(const char *cmd, const cli_input_opts *o, prx_iq_reader **reader,
                   prx_iq_info *info) {
  prx_format fmt = PRX_CF32;
  prx_real_format real_fmt = 0;
  prx_status st;
  if (o->format && prx_real_format_parse(o->format, &real_fmt) != PRX_OK &&
      (st = prx_format_parse(o->format, &fmt)))
    return cli_error(cmd,
                     "-F: unknown sample format '%s' (cf32, ci16, ci8, cu8; real samples: rf32, "
                     "ri16, ri8, ru8)",
                     o->format);
  if (o->format && !real_fmt && fmt == PRX_CF16)
    return cli_error(cmd, "-F: cf16 is an output format; input must be cf32, ci16, ci8 or cu8");
  if (!strcmp(o->input, "-") && isatty(STDIN_FILENO))
    return cli_error(cmd,
                     "standard input is a terminal: pipe samples in (... | polyrx %s -i - "
                     "...) or give a file",
                     cmd);
  /* a raw file named as the SDR tools name their formats (capture.cu8, hackrf.cs8) */
  const int named = !o->format && cli_format_from_name(o->input, &fmt) && fmt != PRX_CF32;
  st = real_fmt ? prx_iq_open_real(o->input, real_fmt, reader) : prx_iq_open(o->input, fmt, reader);
  if (st) return cli_status_error(cmd, "input", st);
  prx_iq_reader_swap_iq(*reader, o->swap_iq);
  *info = *prx_iq_reader_info(*reader);
  /* real samples: -s and -f are the real stream's (its rate, the frequency of its DC); the
   * complex stream read is at half the rate, a quarter of it above */
  const int real = prx_iq_reader_is_real(*reader);
  double real_rate = 2 * info->sample_rate, real_dc = info->center_freq - real_rate / 4;
  if (real) info->sample_rate = real_rate, info->center_freq = real_dc;
  if (info->is_sigmf && o->format && fmt != info->format)
    return cli_error(cmd, "-F %s was given but the SigMF recording holds %s samples", o->format,
                     prx_iq_reader_stored(*reader, NULL));
  const prx_wav_info *wav = prx_iq_reader_wav(*reader);
  if (wav && o->format && fmt != info->format)
    return cli_error(cmd, "-F %s was given but the WAV file holds %s samples (read as %s)",
                     o->format, prx_wav_stored_name(wav), prx_format_name(info->format));
  if (wav) cli_wav_note(cmd, o->input, wav, o->quiet);
  if (named && !info->is_sigmf && !wav && !o->quiet)
    fprintf(stderr, "polyrx %s: note: %s read as %s samples, by its name (-F overrides)\n", cmd,
            o->input, prx_format_name(fmt));
  const prx_iq_origin *origin = prx_iq_reader_origin(*reader);
  if (origin) origin_note(cmd, o->input, origin, info, o->quiet);
  int rc = input_rate_centre(cmd, o, wav, info);
  if (rc >= 0) return rc;
  if (real) {
    real_rate = info->sample_rate;
    real_dc = info->center_freq;
    info->sample_rate = real_rate / 2;
    info->center_freq = real_dc + real_rate / 4;
    if (!o->quiet)
      fprintf(stderr,
              "polyrx %s: note: real samples at %.9g Hz read as complex ones at %.9g Hz centred on "
              "%.9g Hz (a half-band filter: the central 80 %% of that band clean)\n",
              cmd, real_rate, info->sample_rate, info->center_freq);
  }
  return input_window(cmd, o, *reader, info);
}

int cli_parse_time(const char *text, double rate, uint64_t *samples) {
  if (!text || !*text || !(rate > 0)) return -1;
  size_t n = strlen(text);
  char buf[64];
  if (n >= sizeof buf) return -1;
  double v;
  if (text[n - 1] == 'S') { /* samples: a whole number */
    memcpy(buf, text, n - 1);
    buf[n - 1] = '\0';
    if (cli_parse_eng(buf, &v) || !(v >= 0) || v != floor(v) || v >= 9007199254740992.0) return -1;
    *samples = (uint64_t)v;
    return 0;
  }
  if (strchr(text, ':')) { /* [H:]M:S[.s]: decimal digits, a fraction on the seconds only */
    double part[3];
    int k = 0;
    for (const char *p = text;; p++) {
      const char *q = p;
      while (isdigit((unsigned char)*q)) q++;
      if (q == p || k == 3) return -1;
      if (*q == '.') {
        const char *f = ++q;
        while (isdigit((unsigned char)*q)) q++;
        if (q == f || *q) return -1;
      }
      part[k++] = strtod(p, NULL);
      if (!*q) break;
      if (*q != ':') return -1;
      p = q;
    }
    v = 0;
    for (int i = 0; i < k; i++) {
      if (i > 0 && !(part[i] < 60)) return -1;
      v = 60 * v + part[i];
    }
  } else if (cli_parse_eng(text, &v) || !(v >= 0)) {
    return -1;
  }
  double s = floor(v * rate + 0.5);
  if (!(s < 9007199254740992.0)) return -1;
  *samples = (uint64_t)s;
  return 0;
}

/* --start as a date and time (2026-12-04T11:30:00Z): the sample of that instant by the input's
 * own clock, the last SigMF capture whose datetime is not after it, or the start in UTC of a WAV
 * file (KiwiSDR, Perseus), an .sdriq file or a gqrx recording. -1, or the exit code after the
 * message. */
static int start_at_time(const char *cmd, const char *text, prx_iq_reader *r, double rate,
                         uint64_t *first) {
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  prx_sigmf_capture start = {0, 0, 0, prx_iq_reader_start_utc(r)};
  const prx_sigmf_capture *caps = rec ? rec->captures : &start;
  size_t n_caps = rec ? rec->n_captures : 1;
  const char *earliest = NULL;
  int found = 0;
  for (size_t i = 0; i < n_caps; i++) {
    double d;
    if (!caps[i].datetime) continue;
    prx_status st = prx_sigmf_datetime_diff(text, caps[i].datetime, &d);
    if (st) return cli_status_error(cmd, "--start", st);
    if (!earliest) earliest = caps[i].datetime;
    if (d >= 0) {
      found = 1;
      *first = caps[i].sample_start + (uint64_t)llround(d * rate);
    }
  }
  if (!earliest)
    return cli_usage_error(cmd,
                           "--start %s: a date and time needs a recording that says when it "
                           "began (a SigMF core:datetime; a KiwiSDR, Perseus, SDRangel or gqrx "
                           "recording); give the time from its start instead (e.g. --start "
                           "12:30)",
                           text);
  if (!found)
    return cli_error(cmd, "--start %s is before the recording began (%s)", text, earliest);
  return -1;
}

/* --start and --duration: the reader's window, with a note saying which samples are read; a
 * SigMF recording's range that starts after a retune is centred where the recording then was
 * (unless -f says otherwise). */
static int input_window(const char *cmd, const cli_input_opts *o, prx_iq_reader *r,
                        prx_iq_info *info) {
  if (!o->start && !o->duration) return -1;
  const double rate = info->sample_rate;
  uint64_t first = 0, count = UINT64_MAX;
  static const char *const forms =
      "a time: seconds (90, 1.5, 250m), [H:]M:S (1:30, 1:02:03.5), samples (48kS) or, for "
      "--start, a date and time (2026-12-04T11:30:00Z)";
  const int dated = o->start && strlen(o->start) >= 19 && o->start[4] == '-' &&
                    (o->start[10] == 'T' || o->start[10] == 't');
  int rc;
  if (dated && (rc = start_at_time(cmd, o->start, r, rate, &first)) >= 0) return rc;
  if (o->start && !dated && cli_parse_time(o->start, rate, &first))
    return cli_bad_value(cmd, "--start", o->start, forms);
  if (o->duration && (cli_parse_time(o->duration, rate, &count) || !count))
    return cli_bad_value(cmd, "--duration", o->duration, forms);
  uint64_t whole = 0;
  if (prx_iq_reader_extent(r, &whole, NULL) && first >= whole)
    return cli_error(cmd,
                     "--start %s (sample %llu) is at or past the input's end: it holds %llu "
                     "samples (%.9g s)",
                     o->start ? o->start : "0", (unsigned long long)first,
                     (unsigned long long)whole, (double)whole / rate);
  prx_status st = prx_iq_reader_window(r, first, count);
  if (st) return cli_status_error(cmd, "--start", st);
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  size_t c0 = 0;
  while (rec && c0 + 1 < rec->n_captures && rec->captures[c0 + 1].sample_start <= first) c0++;
  if (c0 && !o->center && rec->captures[c0].has_frequency)
    info->center_freq = rec->captures[c0].frequency;
  uint64_t n = 0;
  int known = prx_iq_reader_extent(r, &n, NULL);
  if (!o->quiet) {
    char last[64] = "its end";
    if (known || count != UINT64_MAX)
      snprintf(last, sizeof last, "%llu (%.9g s)",
               (unsigned long long)(first + (known ? n : count) - 1),
               (double)(first + (known ? n : count)) / rate);
    fprintf(stderr, "polyrx %s: note: the input's samples %llu (%.9g s) to %s are read%s\n", cmd,
            (unsigned long long)first, (double)first / rate, last,
            known && count != UINT64_MAX && n < count ? " (the input ends before --duration)" : "");
  }
  return -1;
}

/* -s and -f over what the input's header says (info: the header's values, the real stream's
 * for real samples): -1, or the exit code after the line that says why not. */
static int input_rate_centre(const char *cmd, const cli_input_opts *o, const prx_wav_info *wav,
                             prx_iq_info *info) {
  double v;
  if (o->rate) {
    char what[96];
    snprintf(what, sizeof what, "sample rate (a positive number of Hz, e.g. %s)", o->rate_example);
    if (cli_parse_eng(o->rate, &v) || !(v > 0)) return cli_bad_value(cmd, "-s", o->rate, what);
    if (info->is_sigmf && info->sample_rate > 0 && v != info->sample_rate && !o->quiet)
      fprintf(stderr, "polyrx %s: note: -s %.9g overrides the recording's core:sample_rate %.9g\n",
              cmd, v, info->sample_rate);
    if (wav && v != info->sample_rate && !o->quiet)
      fprintf(stderr, "polyrx %s: note: -s %.9g overrides the WAV file's rate %.9g\n", cmd, v,
              info->sample_rate);
    info->sample_rate = v;
  } else if (!(info->sample_rate > 0)) {
    /* a missing option: a usage error (exit 2), in the one line that says which */
    if (info->is_sigmf)
      cli_error(cmd,
                "no sample rate: the SigMF metadata has no core:sample_rate; give -s RATE (e.g. "
                "-s %s)",
                o->rate_example);
    else
      cli_error(cmd, "no sample rate: give -s RATE for raw input (e.g. -s %s)", o->rate_example);
    return 2;
  }
  if (o->center) {
    if (cli_parse_eng(o->center, &v))
      return cli_bad_value(cmd, "-f", o->center, "centre frequency (Hz, e.g. 100M or -2.5k)");
    if (info->is_sigmf && v != info->center_freq && !o->quiet)
      fprintf(stderr, "polyrx %s: note: -f %.9g overrides the recording's core:frequency %.9g\n",
              cmd, v, info->center_freq);
    if (wav && wav->center_from && v != info->center_freq && !o->quiet)
      fprintf(stderr, "polyrx %s: note: -f %.9g overrides the WAV file's centre %.9g (%s)\n", cmd,
              v, info->center_freq, wav->center_from);
    info->center_freq = v;
  }
  return -1;
}

/* ---- output paths ---- */

/* What identifies a file: a regular file that exists by (dev, ino); one that does not exist
 * yet by its name with the directory resolved; standard output by itself. */
typedef struct {
  int kind; /* 0: (dev, ino); 1: name; 2: standard output */
  dev_t dev;
  ino_t ino;
  char *name;
  size_t index; /* in the caller's list */
} path_key;

static int cmp_key(const void *a, const void *b) {
  const path_key *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == 0) {
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  } else if (x->kind == 1) {
    int c = strcmp(x->name, y->name);
    if (c) return c;
  }
  return x->index < y->index ? -1 : x->index > y->index;
}

static int same_file(const path_key *x, const path_key *y) {
  if (x->kind != y->kind) return 0;
  if (x->kind == 0) return x->dev == y->dev && x->ino == y->ino;
  if (x->kind == 1) return !strcmp(x->name, y->name);
  return 1;
}

/* A path that does not exist yet may be a symbolic link to where the file will be created:
 * follows such links (up to 8) and returns the path the file will have (malloc'd). */
static char *follow_dangling_links(const char *path) {
  char *cur = strdup(path);
  struct stat st;
  for (int hop = 0; cur && hop < 8 && lstat(cur, &st) == 0 && S_ISLNK(st.st_mode); hop++) {
    char target[4096];
    ssize_t len = readlink(cur, target, sizeof target - 1);
    if (len <= 0) break;
    target[len] = 0;
    const char *slash = strrchr(cur, '/');
    char *next;
    if (target[0] == '/' || !slash) {
      next = strdup(target);
    } else { /* relative to the link's directory */
      size_t dl = (size_t)(slash - cur) + 1;
      next = malloc(dl + (size_t)len + 1);
      if (next) {
        memcpy(next, cur, dl);
        memcpy(next + dl, target, (size_t)len + 1);
      }
    }
    free(cur);
    cur = next;
  }
  return cur;
}

/* The last directory resolved by make_key and its real path: a command's outputs share one
 * directory (1024 channel recordings: 2048 realpath calls of a few system calls each). */
typedef struct {
  char *dir, *real;
} dir_cache;

/* realpath(dir), from the cache when dir is the one resolved before; NULL if it cannot be
 * resolved. The result is malloc'd. */
static char *real_dir(dir_cache *c, const char *dir) {
  if (!c->dir || strcmp(c->dir, dir)) {
    free(c->dir);
    free(c->real);
    c->dir = strdup(dir);
    c->real = c->dir ? realpath(dir, NULL) : NULL;
  }
  return c->real ? strdup(c->real) : NULL;
}

/* The key of one path; 0 when the file may be shared (a device, a pipe, standard input that is
 * not a regular file), -1 out of memory. */
static int make_key(const cli_path *p, size_t i, path_key *k, dir_cache *cache) {
  memset(k, 0, sizeof *k);
  k->index = i;
  struct stat st;
  int is_std = !strcmp(p->path, "-");
  int exists = is_std ? fstat(p->is_input ? STDIN_FILENO : STDOUT_FILENO, &st) == 0
                      : stat(p->path, &st) == 0;
  if (exists && S_ISREG(st.st_mode)) {
    k->dev = st.st_dev;
    k->ino = st.st_ino;
    return 1;
  }
  if (is_std) {
    if (p->is_input) return 0;
    k->kind = 2;
    return 1;
  }
  if (exists) return 0;
  /* not there yet: the name (through a dangling link to it), with its directory resolved when
   * that exists */
  k->kind = 1;
  char *path = follow_dangling_links(p->path);
  if (!path) return -1;
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : NULL;
  char *real = real_dir(cache, slash ? dir : ".");
  free(dir);
  if (real) {
    const char *leaf = slash ? slash + 1 : path;
    size_t n = strlen(real) + strlen(leaf) + 2;
    k->name = malloc(n);
    if (k->name) snprintf(k->name, n, "%s/%s", real, leaf);
    free(real);
    free(path);
  } else {
    k->name = path;
  }
  return k->name ? 1 : -1;
}

int cli_outputs_distinct(const char *cmd, const cli_path *paths, size_t n) {
  path_key *keys = calloc(n ? n : 1, sizeof *keys);
  if (!keys) return cli_error(cmd, "out of memory checking %zu paths", n);
  size_t m = 0;
  int rc = -1;
  dir_cache cache = {NULL, NULL};
  for (size_t i = 0; i < n && rc < 0; i++) {
    int r = make_key(&paths[i], i, &keys[m], &cache);
    if (r < 0) rc = cli_error(cmd, "out of memory checking %zu paths", n);
    if (r > 0) m++;
  }
  free(cache.dir);
  free(cache.real);
  if (rc < 0) qsort(keys, m, sizeof *keys, cmp_key);
  /* in each run of equal keys (sorted by index within it), an output beside anything else */
  for (size_t a = 0; a < m && rc < 0;) {
    size_t b = a + 1;
    while (b < m && same_file(&keys[a], &keys[b])) b++;
    for (size_t j = a; j < b && b - a > 1 && rc < 0; j++) {
      const cli_path *o = &paths[keys[j].index];
      if (o->is_input) continue;
      const cli_path *other = &paths[keys[j == a ? a + 1 : a].index];
      if (other->is_input)
        rc = cli_error(cmd, "%s '%s' is the input (%s '%s'): it would be overwritten", o->role,
                       o->path, other->role, other->path);
      else
        rc = cli_error(cmd, "%s '%s' and %s '%s' are the same file: give each output its own",
                       other->role, other->path, o->role, o->path);
    }
    a = b;
  }
  for (size_t i = 0; i < m; i++) free(keys[i].name);
  free(keys);
  return rc;
}

/* ---- stop signals ---- */

/* Set by the stop signals' handler on whichever thread takes the signal, and by polyrx serve's
 * watcher thread (cli_stop_request); read by every stage: an atomic, lock-free so that the
 * handler may store it. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag is stored by a signal handler");
static atomic_int stop_requested;
static double stop_noticed; /* cli_seconds() when cli_interrupted() first saw the flag */
static void on_stop_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static int stop_persistent; /* cli_stop_signals_persistent */

void cli_catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  /* no SA_RESTART: a blocked read returns, so the stop is prompt */
  sa.sa_flags = stop_persistent ? 0 : SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  const int sigs[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++) {
    struct sigaction old;
    /* ignored on entry (a background job, nohup): the caller asked for it to stay so */
    if (!stop_persistent && sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
      continue;
    sigaction(sigs[i], &sa, NULL);
  }
}

void cli_stop_signals_persistent(void) { stop_persistent = 1; }

void cli_stop_reset(void) {
  stop_requested = 0;
  stop_noticed = 0;
}

void cli_stop_request(void) { stop_requested = 1; }

int cli_interrupted(void) {
  if (stop_requested && stop_noticed == 0) stop_noticed = cli_seconds();
  return stop_requested;
}

double cli_seconds_since_stop(void) { return cli_interrupted() ? cli_seconds() - stop_noticed : 0; }

int cli_read_block(const char *cmd, prx_iq_reader *r, void *buf, size_t max, uint64_t done,
                   size_t *n) {
  for (;;) {
    if (cli_interrupted()) {
      fprintf(stderr, "polyrx %s: interrupted: stopping after %llu input samples\n", cmd,
              (unsigned long long)done);
      return 130;
    }
    *n = 0;
    prx_status st = prx_iq_read(r, buf, max, n);
    if (st && cli_interrupted()) continue; /* cut short by the signal: stop above */
    if (st) return cli_status_error(cmd, "input", st);
    return -1;
  }
}

int cli_process_ends;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_LEAK__)
#define CLI_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define CLI_LEAK_CHECKED 1
#endif
#endif
#ifndef CLI_LEAK_CHECKED
#define CLI_LEAK_CHECKED 0
#endif

int cli_exit_frees_skipped(void) { return cli_process_ends && !CLI_LEAK_CHECKED; }

double cli_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double cli_thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void cli_timing_start(cli_timing *t) {
  const char *env = getenv("POLYRX_TIMING");
  memset(t, 0, sizeof *t);
  t->on = env && env[0] && strcmp(env, "0");
  t->t_start = t->t_mark = cli_seconds();
}

void cli_timing_phase(cli_timing *t, const char *name) {
  if (!t->on) return;
  double now = cli_seconds();
  if (t->n < (int)(sizeof t->phase / sizeof t->phase[0])) {
    t->phase[t->n].name = name;
    t->phase[t->n++].ms = (now - t->t_mark) * 1e3;
  }
  t->t_mark = now;
}

void cli_timing_print(const cli_timing *t, const char *cmd, const char *fmt, ...) {
  if (!t->on) return;
  fprintf(stderr, "polyrx %s: timing (ms):", cmd);
  for (int i = 0; i < t->n; i++) fprintf(stderr, " %s %.1f", t->phase[i].name, t->phase[i].ms);
  fprintf(stderr, ", total %.1f; ", (cli_seconds() - t->t_start) * 1e3);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

const char *cli_output_name(const char *path) {
  return path && !strcmp(path, "-") ? "standard output" : path;
}

int cli_close_output(const char *cmd, FILE *f, const char *name, int rc) {
  if (!f) return rc;
  /* errno is only the close's own where the close fails: a write that failed earlier (the
   * stream's error flag) left its errno long ago, and later calls may have changed it. */
  int write_failed = ferror(f);
  errno = 0;
  int close_failed = (f == stdout ? fflush(f) : fclose(f)) != 0;
  int close_errno = errno;
  if (rc >= 0 || !(write_failed || close_failed)) return rc;
  if (close_failed && close_errno)
    return cli_error(cmd, "cannot write %s: %s", name, strerror(close_errno));
  return cli_error(cmd, "cannot write %s: a write failed before the close", name);
}

int cli_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ---- progress ---- */

uint64_t cli_input_samples(const prx_iq_reader *r) {
  uint64_t samples;
  return prx_iq_reader_extent(r, &samples, NULL) ? samples : 0;
}

/* 12345678 -> "12.3 M" */
static void si(char *buf, size_t n, double v) {
  static const char *const unit[] = {"", " k", " M", " G", " T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, u++;
  snprintf(buf, n, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

void cli_progress_start(cli_progress *p, const char *cmd, uint64_t total, int quiet) {
  memset(p, 0, sizeof *p);
  p->cmd = cmd;
  p->total = total;
  p->on = !quiet && isatty(STDERR_FILENO);
  p->start = p->last = cli_seconds();
}

void cli_progress_update(cli_progress *p, uint64_t done) {
  if (!p->on) return;
  double now = cli_seconds();
  if (now - p->start < 1.0 || (p->shown && now - p->last < 0.25)) return;
  p->last = now;
  double rate = done / (now - p->start);
  char d[32], t[32], r[32];
  si(d, sizeof d, (double)done);
  si(r, sizeof r, rate);
  if (p->total > 0) {
    si(t, sizeof t, (double)p->total);
    double left = rate > 0 && p->total > done ? (double)(p->total - done) / rate : 0;
    fprintf(stderr, "\rpolyrx %s: %s of %s samples (%.0f%%), %s samples/s, ETA %.0f s\033[K",
            p->cmd, d, t, 100.0 * (double)done / (double)p->total, r, left);
  } else {
    fprintf(stderr, "\rpolyrx %s: %s samples, %s samples/s\033[K", p->cmd, d, r);
  }
  fflush(stderr);
  p->shown = 1;
}

void cli_progress_end(cli_progress *p) {
  if (p->shown) fputs("\r\033[K", stderr);
  p->shown = 0;
}

/* ---- the host pipeline ---- */

/* on the reader thread: reads the flag only (cli_interrupted's clock is the compute thread's) */
static int pipe_should_stop(void *ctx) {
  (void)ctx;
  return stop_requested;
}

static void stop_signal_mask(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(how, &set, NULL);
}

void cli_hold_stop_signals(void) { stop_signal_mask(SIG_BLOCK); }
void cli_release_stop_signals(void) { stop_signal_mask(SIG_UNBLOCK); }

void cli_pipe_setup(prx_pipe_config *c, prx_iq_reader *r, const prx_iq_info *in, size_t block) {
  *c = prx_pipe_config_default();
  c->block_samples = block;
  c->sample_size = prx_format_size(in->format);
  c->read = prx_pipe_iq_read;
  c->read_ctx = r;
  c->should_stop = pipe_should_stop;
  c->stop_signals = 1;
  const char *mode = getenv("POLYRX_PIPELINE");
  c->serial = mode && !strcmp(mode, "serial");
  /* POLYRX_PIPE_POLL=US: the reader and the first writer poll every US microseconds for their
   * next buffer instead of being woken by compute (prx_pipe_config.poll_us), for measurements */
  c->poll_us = (unsigned)cli_env_int("POLYRX_PIPE_POLL", 0, 1000, 0);
}

int cli_pipe_run(const char *cmd, const prx_pipe_config *c, const char *compute_what,
                 prx_pipe_result *res) {
  /* should_stop reads the flag, the compute and write stages get the callbacks' context */
  prx_status st = prx_pipe_run(c, res);
  if (res->stopped || (res->failed == PRX_PIPE_READ && cli_interrupted())) {
    fprintf(stderr, "polyrx %s: interrupted: stopping after %llu input samples\n", cmd,
            (unsigned long long)res->samples_computed);
    return 130;
  }
  switch (res->failed) {
  case PRX_PIPE_NONE: return -1;
  case PRX_PIPE_READ: return cli_status_error(cmd, "input", st);
  case PRX_PIPE_COMPUTE: return compute_what ? cli_status_error(cmd, compute_what, st) : 1;
  case PRX_PIPE_WRITE: return 1;
  case PRX_PIPE_SETUP: return cli_status_error(cmd, "pipeline", st);
  }
  return 1;
}

int cli_env_int(const char *name, int lo, int hi, int dflt) {
  const char *env = getenv(name);
  if (!env || !env[0]) return dflt;
  int v = atoi(env);
  return v < lo ? lo : v > hi ? hi : v;
}

int cli_pipe_readers(prx_pipe_config *c, prx_iq_reader *r, int gpu) {
  int n = 1;
  if (gpu) {
    int cores = prx_cpu_count();
    n = cores >= 8 ? 4 : cores >= 4 ? 2 : 1;
  }
  n = cli_env_int("POLYRX_READERS", 1, 16, n);
  if (n < 2 || c->serial || !prx_iq_reader_positional(r)) return 1;
  c->read_at = prx_pipe_iq_read_at;
  c->n_readers = n;
  if (c->in_depth < n + 3) c->in_depth = n + 3;
  return n;
}

prx_pipe_map *cli_input_map_open(prx_iq_reader *r, prx_backend backend) {
  const char *env = getenv("POLYRX_INPUT_MAP");
  prx_format f = prx_iq_reader_info(r)->format;
  /* off unless asked for: on the lent H200 the readers are faster (channelize 64 channels 456
   * against 487 ms, rx 503 against 584 ms; bench/GPU_NOTES.md, "The input in place") */
  if (backend == PRX_BACKEND_CPU || !env || !env[0] || !strcmp(env, "0") ||
      (f != PRX_CI16 && f != PRX_CI8 && f != PRX_CU8))
    return NULL;
  prx_pipe_map *m = NULL;
  prx_pipe_map_config mc = prx_pipe_map_config_default();
  mc.threads = prx_cpu_count() >= 8 ? 4 : 2;
  /* pinned once the command's objects are made (cli_pipe_use_map) */
  mc.gated = 1;
  prx_pipe_map_open(r, &mc, &m); /* an input it cannot map is read as before */
  return m;
}

void cli_pipe_use_map(prx_pipe_config *c, prx_iq_reader *r, prx_pipe_map *m) {
  if (!m || c->serial) return;
  c->view_at = prx_pipe_map_view_at;
  c->view_done = prx_pipe_map_view_done;
  c->view_start = prx_pipe_map_start; /* pinned once the pipeline's buffers are made */
  c->view_ctx = m;
  if (!c->read_at) {
    c->read_at = prx_pipe_iq_read_at;
    c->read_ctx = r;
    c->n_readers = 1;
  }
}

double cli_input_map_close(prx_pipe_map *m, prx_pipe_map_stats *s) {
  prx_pipe_map_get_stats(m, s);
  double t = cli_seconds();
  prx_pipe_map_close(m);
  return (cli_seconds() - t) * 1e3;
}

void cli_input_map_timing(const char *cmd, const prx_pipe_map_stats *s, double ms_close) {
  if (!s->bytes) return;
  fprintf(stderr,
          "polyrx %s: input in place (ms): %.0f MiB, first pin at %.1f, pinning %.1f and "
          "populating %.1f (threads' sum), readers' waits %.1f, close %.1f; %llu blocks in "
          "place, %llu read; %u of %u chunks not pinned%s%s\n",
          cmd, (double)s->bytes / 1048576.0, s->ms_first_pin, s->ms_pin, s->ms_populate,
          s->ms_view_wait, ms_close, (unsigned long long)s->views, (unsigned long long)s->reads,
          s->chunks_failed, s->chunks, s->why[0] ? ": " : "", s->why);
}

int cli_thread_start(pthread_t *t, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return e;
}

/* when the warm thread ended (cli_seconds), and whether it made a context (a usable device):
 * read after its join */
static double warm_done;
static int warm_context, warm_mode = -1;

static void *warm_cuda(void *arg) {
  (void)arg;
  prx_pipe_host_free(prx_pipe_host_alloc(64, 1));
  warm_context = prx_cuda_available();
  /* for the detached end (cli/exit_detach.c): read here, beside the command's set-up */
  const prx_cuda_module *m = warm_context ? prx_cuda_module_get() : NULL;
  warm_mode = m && m->compute_mode ? m->compute_mode() : -1;
  warm_done = cli_seconds();
  return NULL;
}

double cli_warm_cuda_done(void) { return warm_done; }

int cli_warm_cuda_context(void) { return warm_context; }

int cli_warm_cuda_compute_mode(void) { return warm_mode; }

int cli_warm_cuda_start(pthread_t *t, prx_backend backend) {
  return backend != PRX_BACKEND_CPU && pthread_create(t, NULL, warm_cuda, NULL) == 0;
}

void cli_warm_cuda_end(pthread_t t, int started) {
  if (started) pthread_join(t, NULL);
}

int cli_parse_backend(const char *cmd, const char *text, prx_backend *out) {
  static const prx_backend all[] = {PRX_BACKEND_AUTO, PRX_BACKEND_CPU, PRX_BACKEND_CUDA};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(text, prx_backend_name(all[i]))) {
      *out = all[i];
      return -1;
    }
  return cli_error(cmd, "--backend: unknown backend '%s' (auto, cpu or cuda)", text);
}
