/* polyrx info: describes a recording: format, sample rate, centre frequency, length in samples
 * and seconds, and for SigMF the captures (start, frequency, datetime), the datetime, the number
 * of annotations and the descriptive global fields. Text for people, --json for programs. */
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
  fprintf(f, "usage: polyrx info [-F FORMAT] [-s RATE] [--json] FILE|-\n"
             "\n"
             "Describes a recording: sample format, rate, centre frequency, length in samples\n"
             "and seconds; for SigMF also its captures (start sample, frequency, datetime), the\n"
             "number of annotations and the description, author, recorder and hardware.\n"
             "\n"
             "  FILE                 a SigMF recording (NAME.sigmf-meta, NAME.sigmf-data or NAME)\n"
             "                       or raw interleaved samples; '-' reads standard input\n"
             "  -F, --format FMT     raw input: cf32 (default), ci16, ci8 or cu8\n"
             "  -s, --rate RATE      raw input: sample rate in Hz, for the length in seconds\n"
             "                       (overrides a SigMF core:sample_rate)\n"
             "      --json           one JSON object on standard output instead of text\n"
             "  -h, --help           this text\n");
}

/* The whole text of a small file (the metadata), NUL-terminated; NULL with errno set. */
static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *s = malloc(cap);
  while (s) {
    n += fread(s + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *t = realloc(s, cap *= 2);
    if (!t) free(s);
    s = t;
  }
  int bad = s && ferror(f);
  fclose(f);
  if (bad) {
    free(s);
    errno = EIO;
    return NULL;
  }
  if (s) s[n] = 0;
  return s;
}

/* The metadata file of a SigMF input path (NAME.sigmf-meta, NAME.sigmf-data or NAME). */
static char *meta_path_of(const char *path) {
  size_t n = strlen(path), ext = strlen(".sigmf-data");
  char *p = malloc(n + ext + 1);
  if (!p) return NULL;
  strcpy(p, path);
  if (n >= ext &&
      (!strcmp(path + n - ext, ".sigmf-data") || !strcmp(path + n - ext, ".sigmf-meta")))
    p[n - ext] = 0;
  strcat(p, ".sigmf-meta");
  return p;
}

static const char *json_string(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "6.5536 MHz", "48 kHz", "100 Hz" */
static void print_hz(const char *label, double hz) {
  const char *unit = "Hz";
  double v = hz, a = fabs(hz);
  if (a >= 1e9)
    v = hz / 1e9, unit = "GHz";
  else if (a >= 1e6)
    v = hz / 1e6, unit = "MHz";
  else if (a >= 1e3)
    v = hz / 1e3, unit = "kHz";
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
    case ':': return cli_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_error(CMD, "unknown option '%s' (polyrx info --help)", argv[optind - 1]);
    }
  }
  if (optind >= argc) return cli_error(CMD, "no recording: give FILE (polyrx info --help)");
  if (optind + 1 < argc)
    return cli_error(CMD, "one recording at a time: unexpected '%s'", argv[optind + 1]);
  const char *path = argv[optind];

  prx_format fmt = PRX_CF32;
  prx_status st;
  if (format && ((st = prx_format_parse(format, &fmt)) != PRX_OK || fmt == PRX_CF16))
    return cli_error(CMD, "-F: unknown or unsupported sample format '%s' (cf32, ci16, ci8, cu8)",
                     format);
  double fs_opt = 0;
  if (rate && (cli_parse_eng(rate, &fs_opt) || !(fs_opt > 0)))
    return cli_bad_value(CMD, "-s", rate, "sample rate (a positive number of Hz, e.g. 48k)");
  if (!strcmp(path, "-") && isatty(STDIN_FILENO))
    return cli_error(CMD, "standard input is a terminal: pipe samples in or give a file");
  prx_iq_reader *r = NULL;
  if ((st = prx_iq_open(path, fmt, &r)) != PRX_OK) return cli_status_error(CMD, path, st);
  prx_iq_info info = *prx_iq_reader_info(r);
  if (info.is_sigmf && format && fmt != info.format) {
    prx_iq_close(r);
    return cli_error(CMD, "-F %s was given but the SigMF recording holds %s samples", format,
                     prx_format_name(info.format));
  }
  if (fs_opt > 0) info.sample_rate = fs_opt;
  const char *data_name = prx_iq_reader_name(r);

  /* length: the data file's size where it is a regular file, else the stream read through */
  size_t ss = prx_format_size(info.format);
  uint64_t samples = 0, extra = 0; /* extra: bytes after the last whole sample */
  int truncated = 0;
  struct stat sb;
  int rc = 0;
  if (strcmp(path, "-") && stat(data_name, &sb) == 0 && S_ISREG(sb.st_mode)) {
    samples = (uint64_t)sb.st_size / ss;
    extra = (uint64_t)sb.st_size % ss;
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
  cJSON *meta = NULL;
  char *meta_path = NULL;
  if (!rc && info.is_sigmf) {
    meta_path = meta_path_of(path);
    char *text = meta_path ? read_text(meta_path) : NULL;
    meta = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!meta) rc = cli_error(CMD, "cannot read the metadata %s", meta_path ? meta_path : path);
  }
  if (rc) {
    prx_iq_close(r);
    free(meta_path);
    return rc;
  }
  const cJSON *global = cJSON_GetObjectItemCaseSensitive(meta, "global"),
              *captures = cJSON_GetObjectItemCaseSensitive(meta, "captures"),
              *annotations = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
  const char *datetime = NULL;
  const cJSON *cap;
  cJSON_ArrayForEach(cap, captures) if (!datetime) datetime = json_string(cap, "core:datetime");
  int n_ann = cJSON_IsArray(annotations) ? cJSON_GetArraySize(annotations) : 0;
  double seconds = info.sample_rate > 0 ? (double)samples / info.sample_rate : NAN;
  static const char *const described[] = {"core:description", "core:author", "core:recorder",
                                          "core:hw"};

  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", data_name);
    if (meta_path) cJSON_AddStringToObject(o, "metadata", meta_path);
    cJSON_AddBoolToObject(o, "sigmf", info.is_sigmf);
    cJSON_AddStringToObject(o, "format", prx_format_name(info.format));
    if (info.sample_rate > 0)
      cJSON_AddNumberToObject(o, "sample_rate", info.sample_rate);
    else
      cJSON_AddNullToObject(o, "sample_rate");
    cJSON_AddNumberToObject(o, "center_freq", info.center_freq);
    cJSON_AddNumberToObject(o, "samples", (double)samples);
    if (isfinite(seconds))
      cJSON_AddNumberToObject(o, "seconds", seconds);
    else
      cJSON_AddNullToObject(o, "seconds");
    cJSON_AddBoolToObject(o, "truncated", truncated);
    if (info.is_sigmf) {
      cJSON *caps = cJSON_AddArrayToObject(o, "captures");
      cJSON_ArrayForEach(cap, captures) {
        cJSON *c = cJSON_CreateObject();
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cap, "core:sample_start");
        cJSON_AddNumberToObject(c, "sample_start", cJSON_IsNumber(v) ? v->valuedouble : 0);
        v = cJSON_GetObjectItemCaseSensitive(cap, "core:frequency");
        if (cJSON_IsNumber(v)) cJSON_AddNumberToObject(c, "frequency", v->valuedouble);
        const char *dt = json_string(cap, "core:datetime");
        if (dt) cJSON_AddStringToObject(c, "datetime", dt);
        cJSON_AddItemToArray(caps, c);
      }
      if (datetime)
        cJSON_AddStringToObject(o, "datetime", datetime);
      else
        cJSON_AddNullToObject(o, "datetime");
      cJSON_AddNumberToObject(o, "annotations", n_ann);
      for (size_t i = 0; i < 4; i++) {
        const char *v = json_string(global, described[i]);
        if (v) cJSON_AddStringToObject(o, described[i] + 5, v);
      }
    }
    char *text = cJSON_Print(o);
    if (text) puts(text);
    cJSON_free(text);
    cJSON_Delete(o);
  } else {
    printf("%-12s %s%s\n", "file", data_name, info.is_sigmf ? " (SigMF)" : " (raw)");
    if (meta_path) printf("%-12s %s\n", "metadata", meta_path);
    printf("%-12s %s (%zu bytes per sample)\n", "format", prx_format_name(info.format), ss);
    if (info.sample_rate > 0)
      print_hz("rate", info.sample_rate);
    else
      printf("%-12s unknown (give -s RATE)\n", "rate");
    if (info.is_sigmf) print_hz("centre", info.center_freq);
    if (isfinite(seconds))
      printf("%-12s %llu samples, %.9g s\n", "length", (unsigned long long)samples, seconds);
    else
      printf("%-12s %llu samples\n", "length", (unsigned long long)samples);
    if (extra)
      printf("%-12s the data ends inside a sample (%llu bytes after the last whole one)\n",
             "truncated", (unsigned long long)extra);
    else if (truncated)
      printf("%-12s the data ends inside a sample\n", "truncated");
    if (info.is_sigmf) {
      printf("%-12s %d\n", "captures", cJSON_GetArraySize(captures));
      cJSON_ArrayForEach(cap, captures) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cap, "core:sample_start"),
                    *f = cJSON_GetObjectItemCaseSensitive(cap, "core:frequency");
        const char *dt = json_string(cap, "core:datetime");
        printf("%-12s sample %.0f", "", cJSON_IsNumber(s) ? s->valuedouble : 0);
        if (cJSON_IsNumber(s) && info.sample_rate > 0)
          printf(" (%.9g s)", s->valuedouble / info.sample_rate);
        if (cJSON_IsNumber(f)) printf(", %.10g Hz", f->valuedouble);
        if (dt) printf(", %s", dt);
        printf("\n");
      }
      printf("%-12s %s\n", "datetime", datetime ? datetime : "none");
      printf("%-12s %d\n", "annotations", n_ann);
      for (size_t i = 0; i < 4; i++) {
        const char *v = json_string(global, described[i]);
        if (v) printf("%-12s %s\n", described[i] + 5, v);
      }
    }
  }
  cJSON_Delete(meta);
  free(meta_path);
  prx_iq_close(r);
  return 0;
}
