/* What polyrx channelize says about a run besides the recordings: a JSON report (--report) of
 * the input, the channelizer, every channel (index, frequency, power, samples, file) and the
 * timing; and a per-channel power bar chart (--occupancy) through src/plot. */
#include "cli.h"

#include "plot/plot.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_chan_write_report(const char *cmd, const char *path, const cli_chan_summary *s) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return cli_error(cmd, "out of memory");
  cJSON_AddStringToObject(o, "polyrx_version", prx_version());
  cJSON *in = cJSON_AddObjectToObject(o, "input");
  cJSON_AddStringToObject(in, "path", s->input);
  cJSON_AddStringToObject(in, "format", prx_format_name(s->in->format));
  cJSON_AddBoolToObject(in, "sigmf", s->in->is_sigmf);
  cJSON_AddBoolToObject(in, "wav", s->in->is_wav);
  cJSON_AddBoolToObject(in, "swap_iq", s->swap_iq);
  cJSON_AddBoolToObject(in, "real", s->real);
  cJSON_AddNumberToObject(in, "sample_rate", s->in->sample_rate);
  cJSON_AddNumberToObject(in, "center_freq", s->in->center_freq);
  cJSON_AddNumberToObject(in, "samples", (double)s->in_samples);
  cJSON_AddNumberToObject(in, "start_sample", (double)s->start_sample);
  cJSON_AddNumberToObject(in, "seconds", (double)s->in_samples / s->in->sample_rate);
  cJSON_AddNumberToObject(in, "nonfinite_samples", (double)s->nonfinite_in);
  if (s->rec) {
    cJSON_AddNumberToObject(in, "captures", (double)s->rec->n_captures);
    cJSON_AddNumberToObject(in, "annotations", (double)s->rec->n_annotations);
    if (s->rec->captures[0].datetime)
      cJSON_AddStringToObject(in, "datetime", s->rec->captures[0].datetime);
  }
  cJSON *ch = cJSON_AddObjectToObject(o, "channelizer");
  cJSON_AddNumberToObject(ch, "channels", s->K);
  cJSON_AddNumberToObject(ch, "decimation", s->D);
  cJSON_AddNumberToObject(ch, "prototype_taps", (double)s->M);
  cJSON_AddNumberToObject(ch, "channel_spacing", s->in->sample_rate / s->K);
  cJSON_AddNumberToObject(ch, "output_rate", s->in->sample_rate / s->D);
  cJSON_AddNumberToObject(ch, "time_offset_input_samples", s->offset);
  cJSON_AddStringToObject(ch, "backend", s->backend);
  if (s->archive) cJSON_AddStringToObject(o, "archive", s->archive);
  cJSON *list = cJSON_AddArrayToObject(o, "channels");
  for (size_t i = 0; i < s->n; i++) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", s->index[i]);
    cJSON_AddNumberToObject(c, "frequency", s->freq[i]);
    cli_json_num(c, "power_dbfs", s->power_db[i]);
    cJSON_AddNumberToObject(c, "samples", (double)s->out_samples);
    if (s->ok[i])
      cJSON_AddStringToObject(c, "recording", s->files[i]);
    else
      cJSON_AddNullToObject(c, "recording");
    cJSON_AddItemToArray(list, c);
  }
  cJSON *t = cJSON_AddObjectToObject(o, "timing");
  cJSON_AddNumberToObject(t, "seconds", s->seconds);
  cJSON_AddNumberToObject(t, "input_samples_per_second",
                          s->seconds > 0 ? (double)s->in_samples / s->seconds : 0);
  cJSON_AddNumberToObject(o, "exit_status", s->exit_status);
  if (s->exit_status && cli_first_error()[0])
    cJSON_AddStringToObject(o, "error", cli_first_error());
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  if (!text) return cli_error(cmd, "out of memory");
  int rc = -1;
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
  if (!f || fputs(text, f) == EOF || fputc('\n', f) == EOF || fflush(f) != 0)
    rc = cli_error(cmd, "--report: cannot write '%s': %s", path, strerror(errno));
  if (f && f != stdout && fclose(f) != 0 && rc < 0)
    rc = cli_error(cmd, "--report: cannot write '%s': %s", path, strerror(errno));
  free(text);
  return rc;
}

int cli_chan_write_occupancy(const char *cmd, const char *path, const cli_chan_summary *s) {
  if (s->n == 0) return cli_error(cmd, "--occupancy: no channel to draw");
  char title[200];
  const char *slash = strrchr(s->input, '/');
  snprintf(title, sizeof title, "%.60s  K %u  spacing %.6g Hz  %llu samples per channel",
           slash ? slash + 1 : s->input, s->K, s->in->sample_rate / s->K,
           (unsigned long long)s->out_samples);
  prx_status st = plot_bars_png(path, s->freq, s->power_db, s->n, s->in->sample_rate / s->K, title);
  return st ? cli_status_error(cmd, "--occupancy", st) : -1;
}
