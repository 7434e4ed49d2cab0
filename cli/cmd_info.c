/* polyrx info: describes a recording: format, sample rate, centre frequency, length in samples
 * and seconds, and for SigMF (file pairs and .sigmf archives) every capture (start, frequency,
 * datetime), the recording's start time, every annotation and the descriptive global fields; for
 * a WAV file how it stores its samples, where its centre frequency and start time come from and
 * how its data's extent was found; as the library's reader sees them. Text for people, --json
 * for programs. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *CMD = "info";

static void usage(FILE *f) {
  fprintf(f,
          "usage: polyrx info [-F FORMAT] [-s RATE] [--json] FILE|-\n"
          "\n"
          "Describes a recording: sample format, rate, centre frequency, length in samples\n"
          "and seconds; for SigMF also every capture (start sample, frequency, datetime),\n"
          "every annotation (samples, frequency edges, label, comment, generator) and the\n"
          "description, author, recorder and hardware.\n"
          "\n"
          "  FILE                 a SigMF recording (NAME.sigmf-meta, NAME.sigmf-data or NAME),\n"
          "                       a SigMF archive (NAME.sigmf), a WAV I/Q file (RIFF or RF64),\n"
          "                       or raw interleaved samples; '-' reads standard input (raw)\n"
          "  -F, --format FMT     raw input: cf32 (default), ci16, ci8 or cu8; real samples\n"
          "                       (a direct-sampling receiver): rf32, ri16, ri8 or ru8, read as\n"
          "                       complex at half the rate (-s: the real rate)\n"
          "                       a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
          "  -s, --rate RATE      raw input: sample rate in Hz, for the length in seconds\n"
          "                       (overrides a SigMF core:sample_rate)\n"
          "      --json           one JSON object on standard output instead of text\n"
          "  -h, --help           this text\n"
          "      --version        the polyrx version\n"
          "\n"
          "Exit status: 0 done, 1 error, 2 usage error.\n");
}

/* "6.5536 MHz", "48 kHz", "100 Hz" */
static void print_hz(const char *label, double hz) {
  const char *unit;
  double v = cli_hz_unit(hz, &unit);
  printf("%-12s %.10g %s\n", label, v, unit);
}

int cmd_info(int argc, char **argv) {
  static const struct option longopts[] = {{"format", required_argument, 0, 'F'},
                                           {"rate", required_argument, 0, 's'},
                                           {"json", no_argument, 0, 'j'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  const char *format = NULL, *rate = NULL;
  int json = 0, opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":F:s:h", longopts, NULL)) != -1) {
    switch (opt) {
    case 'F': format = optarg; break;
    case 's': rate = optarg; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    case ':': return cli_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc) return cli_usage_error(CMD, "no recording: give FILE");
  if (optind + 1 < argc)
    return cli_usage_error(CMD, "one recording at a time: unexpected '%s'", argv[optind + 1]);
  const char *path = argv[optind];

  prx_format fmt = PRX_CF32;
  prx_real_format real_fmt = 0;
  prx_status st;
  if (format && prx_real_format_parse(format, &real_fmt) != PRX_OK &&
      ((st = prx_format_parse(format, &fmt)) != PRX_OK || fmt == PRX_CF16))
    return cli_usage_error(CMD,
                           "-F: unknown or unsupported sample format '%s' (cf32, ci16, ci8, "
                           "cu8; real: rf32, ri16, ri8, ru8)",
                           format);
  double fs_opt = 0;
  if (rate && (cli_parse_eng(rate, &fs_opt) || !(fs_opt > 0)))
    return cli_bad_value(CMD, "-s", rate, "sample rate (a positive number of Hz, e.g. 48k)");
  if (!strcmp(path, "-") && isatty(STDIN_FILENO))
    return cli_error(CMD, "standard input is a terminal: pipe samples in or give a file");
  prx_iq_reader *r = NULL;
  if (!format) cli_format_from_name(path, &fmt); /* capture.cu8: cu8 */
  st = real_fmt ? prx_iq_open_real(path, real_fmt, &r) : prx_iq_open(path, fmt, &r);
  if (st != PRX_OK) return cli_status_error(CMD, path, st);
  prx_iq_info info = *prx_iq_reader_info(r);
  /* real samples: -s is theirs; the stream read is complex at half the rate, a quarter above */
  const int real = prx_iq_reader_is_real(r);
  if (real && fs_opt > 0) {
    info.center_freq += (fs_opt - 2 * info.sample_rate) / 4;
    fs_opt /= 2;
  }
  if ((info.is_sigmf || info.is_wav) && format && fmt != info.format) {
    prx_iq_close(r);
    return cli_error(CMD, "-F %s was given but the %s holds %s samples", format,
                     info.is_wav ? "WAV file" : "SigMF recording", prx_format_name(info.format));
  }
  if (fs_opt > 0) info.sample_rate = fs_opt;
  const char *data_name = prx_iq_reader_name(r);

  /* length: known at open for a file, else the stream read through */
  size_t ss = prx_format_size(info.format);
  uint64_t samples = 0, extra = 0; /* extra: bytes after the last whole sample */
  int truncated = 0;
  int rc = 0;
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  const prx_wav_info *wav = prx_iq_reader_wav(r);
  const prx_iq_origin *origin = prx_iq_reader_origin(r);
  size_t stored_bytes = 0;
  const char *stored = prx_iq_reader_stored(r, &stored_bytes);
  if (prx_iq_reader_extent(r, &samples, &extra)) {
    truncated = extra != 0;
  } else {
    static unsigned char buf[1 << 16];
    size_t n;
    do {
      st = prx_iq_read(r, buf, sizeof buf / ss, &n);
      samples += n;
    } while (st == PRX_OK && n > 0);
    if (st == PRX_ERR_TRUNCATED) {
      truncated = 1;
      if (!json) fprintf(stderr, "polyrx info: note: %s\n", prx_last_error());
    } else if (st != PRX_OK) {
      rc = cli_status_error(CMD, "reading", st);
    }
  }
  if (rc) {
    prx_iq_close(r);
    return rc;
  }
  const char *datetime = rec ? rec->captures[0].datetime : NULL;
  size_t n_ann = rec ? rec->n_annotations : 0;
  double seconds = info.sample_rate > 0 ? (double)samples / info.sample_rate : NAN;
  static const char *const described[] = {"description", "author", "recorder", "hw"};
  const char *described_value[4] = {NULL, NULL, NULL, NULL};
  if (rec) {
    described_value[0] = rec->description;
    described_value[1] = rec->author;
    described_value[2] = rec->recorder;
    described_value[3] = rec->hw;
  }

  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", data_name);
    if (rec) cJSON_AddBoolToObject(o, "archive", rec->is_archive);
    cJSON_AddBoolToObject(o, "sigmf", info.is_sigmf);
    cJSON_AddBoolToObject(o, "wav", info.is_wav);
    if (origin) {
      cJSON *g = cJSON_AddObjectToObject(o, "recorder");
      cJSON_AddStringToObject(g, "from", origin->recorder);
      if (origin->bits) cJSON_AddNumberToObject(g, "bits", origin->bits);
      if (origin->start_time)
        cJSON_AddStringToObject(g, "start_time", origin->start_time);
      else
        cJSON_AddNullToObject(g, "start_time");
    }
    cJSON_AddBoolToObject(o, "real", real);
    cJSON_AddStringToObject(o, "format", prx_format_name(info.format));
    cJSON_AddStringToObject(o, "stored", stored);
    cJSON_AddNumberToObject(o, "stored_bytes", (double)stored_bytes);
    if (info.sample_rate > 0)
      cJSON_AddNumberToObject(o, "sample_rate", info.sample_rate);
    else
      cJSON_AddNullToObject(o, "sample_rate");
    cJSON_AddNumberToObject(o, "center_freq", info.center_freq);
    cJSON_AddNumberToObject(o, "samples", (double)samples);
    cli_json_num(o, "seconds", seconds);
    cJSON_AddBoolToObject(o, "truncated", truncated);
    /* sample 0's time in UTC, whatever says it: a SigMF capture 0 at sample 0, a WAV file's rcvr
     * chunk or KiwiSDR stamps, an .sdriq header, a gqrx name (null: unknown) */
    const char *utc = rec && rec->captures[0].sample_start == 0 ? rec->captures[0].datetime
                                                                : prx_iq_reader_start_utc(r);
    char in_utc[48]; /* a SigMF datetime with an offset, in UTC */
    if (utc && rec && !prx_sigmf_datetime_shift(utc, 0, in_utc)) utc = in_utc;
    if (utc)
      cJSON_AddStringToObject(o, "start_utc", utc);
    else
      cJSON_AddNullToObject(o, "start_utc");
    if (wav) {
      static const char *const extents[] = {"declared", "to_end", "wrapped", "cut"};
      cJSON *w = cJSON_AddObjectToObject(o, "wav_header");
      cJSON_AddBoolToObject(w, "rf64", wav->rf64);
      cJSON_AddStringToObject(w, "stored", prx_wav_stored_name(wav));
      cJSON_AddNumberToObject(w, "data_offset", (double)wav->data_offset);
      cJSON_AddNumberToObject(w, "declared_bytes", (double)wav->declared_bytes);
      cJSON_AddNumberToObject(w, "data_bytes", (double)wav->data_bytes);
      cJSON_AddStringToObject(w, "extent", extents[wav->extent]);
      if (wav->center_from)
        cJSON_AddStringToObject(w, "center_from", wav->center_from);
      else
        cJSON_AddNullToObject(w, "center_from");
      if (wav->start_time)
        cJSON_AddStringToObject(w, "start_time", wav->start_time);
      else
        cJSON_AddNullToObject(w, "start_time");
      cJSON_AddNumberToObject(w, "header_rate", wav->header_rate);
      cJSON_AddStringToObject(w, "rate_from", wav->rate_from);
      cJSON_AddNumberToObject(w, "data_chunks", (double)wav->data_chunks);
      cJSON_AddBoolToObject(w, "inverted", wav->inverted);
      if (wav->gps_stamps) {
        cJSON *k = cJSON_AddObjectToObject(w, "kiwisdr");
        cJSON_AddNumberToObject(k, "gps_stamps", (double)wav->gps_stamps);
        cJSON_AddNumberToObject(k, "gps_valid", (double)wav->gps_valid);
        cli_json_num(k, "gps_rate", wav->gps_rate > 0 ? wav->gps_rate : NAN);
        cli_json_num(k, "gps_span_s", wav->gps_rate > 0 ? wav->gps_span : NAN);
        cJSON_AddNumberToObject(k, "gaps", (double)wav->gps_gaps);
        if (wav->gps_gaps) {
          cJSON_AddNumberToObject(k, "first_gap_sample", (double)wav->gps_first_gap);
          cJSON_AddNumberToObject(k, "zero_samples", (double)wav->gps_filled);
        }
      }
    }
    if (info.is_sigmf) {
      cJSON *caps = cJSON_AddArrayToObject(o, "captures");
      for (size_t i = 0; i < rec->n_captures; i++) {
        const prx_sigmf_capture *c = &rec->captures[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "sample_start", (double)c->sample_start);
        if (c->has_frequency) cJSON_AddNumberToObject(j, "frequency", c->frequency);
        if (c->datetime) cJSON_AddStringToObject(j, "datetime", c->datetime);
        cJSON_AddItemToArray(caps, j);
      }
      if (datetime)
        cJSON_AddStringToObject(o, "datetime", datetime);
      else
        cJSON_AddNullToObject(o, "datetime");
      cJSON_AddNumberToObject(o, "annotations", (double)n_ann);
      cJSON *anns = cJSON_AddArrayToObject(o, "annotation_list");
      for (size_t i = 0; i < n_ann; i++) {
        const prx_sigmf_annotation *a = &rec->annotations[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "sample_start", (double)a->sample_start);
        if (a->sample_count) cJSON_AddNumberToObject(j, "sample_count", (double)a->sample_count);
        if (a->has_freq) {
          cJSON_AddNumberToObject(j, "freq_lower_edge", a->freq_lower_edge);
          cJSON_AddNumberToObject(j, "freq_upper_edge", a->freq_upper_edge);
        }
        if (a->label) cJSON_AddStringToObject(j, "label", a->label);
        if (a->comment) cJSON_AddStringToObject(j, "comment", a->comment);
        if (a->generator) cJSON_AddStringToObject(j, "generator", a->generator);
        cJSON_AddItemToArray(anns, j);
      }
      for (size_t i = 0; i < 4; i++)
        if (described_value[i]) cJSON_AddStringToObject(o, described[i], described_value[i]);
    }
    char *text = cJSON_Print(o);
    if (text) puts(text);
    cJSON_free(text);
    cJSON_Delete(o);
  } else {
    printf("%-12s %s%s\n", "file", data_name,
           rec && rec->is_archive   ? " (SigMF archive)"
           : info.is_sigmf          ? " (SigMF)"
           : wav && wav->rf64       ? " (WAV, RF64)"
           : wav                    ? " (WAV)"
           : origin && origin->bits ? " (SDRangel .sdriq)"
                                    : " (raw)");
    if (wav || real || strcmp(stored, prx_format_name(info.format)))
      printf("%-12s %s (stored as %s%s, %zu bytes per sample%s)\n", "format",
             prx_format_name(info.format), wav ? "WAV " : "", stored, stored_bytes,
             real                 ? "; read as complex"
             : stored_bytes != ss ? "; read as cf32"
                                  : "");
    else
      printf("%-12s %s (%zu bytes per sample)\n", "format", prx_format_name(info.format), ss);
    if (info.sample_rate > 0)
      print_hz("rate", info.sample_rate);
    else
      printf("%-12s unknown (give -s RATE)\n", "rate");
    if (real && info.sample_rate > 0) {
      const char *unit;
      double v = cli_hz_unit(2 * info.sample_rate, &unit);
      printf("%-12s real samples at %.10g %s, read as complex at half that rate centred a quarter "
             "of it above their DC (a half-band filter)\n",
             "real", v, unit);
      if (!info.is_sigmf && !wav) print_hz("centre", info.center_freq);
    }
    if (info.is_sigmf) print_hz("centre", info.center_freq);
    if (wav && wav->center_from) {
      const char *unit;
      double v = cli_hz_unit(info.center_freq, &unit);
      printf("%-12s %.10g %s (from the %s)\n", "centre", v, unit, wav->center_from);
    } else if (wav) {
      printf("%-12s unknown (no auxi or rcvr chunk, none in the file's name; give -f)\n", "centre");
    }
    if (wav && wav->inverted)
      printf("%-12s mirrored (a lower sideband's audio: read mirrored back, so that a carrier's "
             "frequency is its own)\n",
             "spectrum");
    if (wav && wav->start_time) printf("%-12s %s\n", "start", wav->start_time);
    if (origin) {
      print_hz("centre", info.center_freq);
      printf("%-12s %s (rate and centre from the %s)\n", "start",
             origin->start_time ? origin->start_time : "unknown", origin->recorder);
    }
    char extent_text[320];
    if (wav && cli_wav_extent_text(wav, extent_text, sizeof extent_text)[0])
      printf("%-12s %s\n", "data", extent_text);
    if (wav && cli_wav_kiwi_text(wav, extent_text, sizeof extent_text)[0])
      printf("%-12s %s\n", "KiwiSDR", extent_text);
    if (wav && strcmp(wav->rate_from, "fmt chunk"))
      printf("%-12s the rate from the %s (the fmt chunk's: %.10g Hz)\n", "", wav->rate_from,
             wav->header_rate);
    if (isfinite(seconds)) {
      /* long recordings also as H:MM:SS.mmm, the form --start and --duration take */
      char hms[48] = "";
      if (seconds >= 60) {
        double ms = floor(seconds * 1000 + 0.5);
        unsigned long long h = (unsigned long long)(ms / 3600000);
        ms -= (double)h * 3600000;
        unsigned m = (unsigned)(ms / 60000);
        ms -= m * 60000.0;
        snprintf(hms, sizeof hms, " (%llu:%02u:%06.3f)", h, m, ms / 1000);
      }
      printf("%-12s %llu samples, %.9g s%s\n", "length", (unsigned long long)samples, seconds, hms);
    } else
      printf("%-12s %llu samples\n", "length", (unsigned long long)samples);
    if (extra)
      printf("%-12s the data ends inside a sample (%llu bytes after the last whole one)\n",
             "truncated", (unsigned long long)extra);
    else if (truncated)
      printf("%-12s the data ends inside a sample\n", "truncated");
    if (rec) {
      printf("%-12s %zu\n", "captures", rec->n_captures);
      for (size_t i = 0; i < rec->n_captures; i++) {
        const prx_sigmf_capture *c = &rec->captures[i];
        printf("%-12s sample %llu", "", (unsigned long long)c->sample_start);
        if (info.sample_rate > 0) printf(" (%.9g s)", (double)c->sample_start / info.sample_rate);
        if (c->has_frequency) printf(", %.10g Hz", c->frequency);
        if (c->datetime) printf(", %s", c->datetime);
        printf("\n");
      }
      printf("%-12s %s\n", "datetime", datetime ? datetime : "none");
      printf("%-12s %zu\n", "annotations", n_ann);
      for (size_t i = 0; i < n_ann; i++) {
        const prx_sigmf_annotation *a = &rec->annotations[i];
        printf("%-12s sample %llu", "", (unsigned long long)a->sample_start);
        if (a->sample_count) printf(" +%llu", (unsigned long long)a->sample_count);
        if (a->has_freq) printf(", %.10g to %.10g Hz", a->freq_lower_edge, a->freq_upper_edge);
        if (a->label) printf(", \"%s\"", a->label);
        if (a->comment) printf(", %s", a->comment);
        if (a->generator) printf(" (%s)", a->generator);
        printf("\n");
      }
      for (size_t i = 0; i < 4; i++)
        if (described_value[i]) printf("%-12s %s\n", described[i], described_value[i]);
    }
  }
  prx_iq_close(r);
  return 0;
}
