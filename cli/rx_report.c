/* polyrx rx --report: the JSON report (the input, the receiver, each carrier's figures, what
 * --detect found, the totals), and the figures per carrier that the table shows too. */

#include "rx_run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Theoretical BER at Es/N0 (dB): coherent Gray QPSK p = Q(sqrt(Es/N0)); differential decoding
 * 2p(1 - p). */
double rx_ber_theory(double esn0_db, prx_qpsk_ambiguity a) {
  double p = 0.5 * erfc(sqrt(pow(10, esn0_db / 10) / 2));
  return a == PRX_QPSK_DIFFERENTIAL ? 2 * p * (1 - p) : p;
}

double rx_carrier_ber(const carrier_out *k, prx_qpsk_ambiguity a) {
  uint64_t counted = k->compared > 2 && a == PRX_QPSK_DIFFERENTIAL ? k->compared - 2 : k->compared;
  return counted ? (double)k->errors / (double)counted : NAN;
}

/* The fraction of a carrier's blocks that are locked: a signal seen (not no_signal) and followed
 * at its symbol rate (not clock_range: a clock beyond the supported offset is a wrong symbol
 * rate, and those bits are noise whatever the signal statistic says); NaN before any block. */
double rx_locked_fraction(const prx_qpsk_stats *s) {
  return s->blocks ? (double)s->blocks_locked / (double)s->blocks : NAN;
}

/* Carrier c's object of the report, printed (cJSON's formatted text, as at depth 0) into
 * r->car_json[c]: made on the openers' threads, from the stats taken before. */
static void carrier_json(run_state *r, size_t c) {
  const prx_rx_stats s = r->stats[c];
  const prx_rx_carrier *k = &r->car[c];
  const carrier_out *w = &r->out[c];
  cJSON *o = cJSON_CreateObject();
  cli_json_num(o, "index", (double)c);
  cJSON_AddStringToObject(o, "spec", r->spec[c]);
  cli_json_num(o, "offset_hz", k->freq);
  cli_json_num(o, "frequency_hz", r->in.center_freq + k->freq);
  cli_json_num(o, "symbol_rate", k->symbol_rate);
  cli_json_num(o, "rolloff", k->rolloff);
  cJSON_AddStringToObject(o, "ambiguity", prx_qpsk_ambiguity_name(k->ambiguity));
  cJSON_AddStringToObject(o, "modulation", prx_qpsk_modulation_name(k->modulation));
  cli_json_num(o, "channel", s.channel);
  cli_json_num(o, "channel_offset_hz", s.channel_freq);
  cli_json_num(o, "mix_hz", s.mix_hz);
  cli_json_num(o, "cfo_hz", s.demod.cfo_hz);
  cli_json_num(o, "cfo_hz_min", s.demod.cfo_min_hz);
  cli_json_num(o, "cfo_hz_max", s.demod.cfo_max_hz);
  cli_json_num(o, "cfo_drift_hz_per_s", s.demod.cfo_drift_hz_per_s);
  cli_json_num(o, "esn0_db", s.demod.esn0_db);
  cli_json_num(o, "clock_offset_ppm", s.demod.clock_ppm);
  cli_json_num(o, "blocks", (double)s.demod.blocks);
  cli_json_num(o, "blocks_no_signal", (double)s.demod.blocks_no_signal);
  cli_json_num(o, "blocks_clock_range", (double)s.demod.blocks_clock_range);
  cli_json_num(o, "blocks_locked", (double)s.demod.blocks_locked);
  cli_json_num(o, "locked_fraction", rx_locked_fraction(&s.demod));
  cli_json_num(o, "symbols", (double)s.demod.symbols);
  cli_json_num(o, "data_symbols", (double)s.demod.data_symbols);
  cli_json_num(o, "bits", (double)w->n_bits);
  cJSON_AddStringToObject(o, "file", w->bits_name);
  /* what the files hold: after a failed write (a full disk) less than the bits above */
  if (w->bits_bytes >= 0) cli_json_num(o, "file_bytes", (double)w->bits_bytes);
  if (w->llr_bytes >= 0) cli_json_num(o, "llr_file_bytes", (double)w->llr_bytes);
  if (w->truth) {
    cli_json_num(o, "bit_errors", (double)w->errors);
    cli_json_num(o, "bits_compared", (double)w->compared);
    cli_json_num(o, "ber", rx_carrier_ber(w, k->ambiguity));
    cli_json_num(o, "ber_theory", rx_ber_theory(s.demod.esn0_db, k->ambiguity));
  }
  cli_json_qpsk_warnings(o, s.demod.warnings);
  if (w->mod_code) cli_json_warning(cJSON_GetObjectItem(o, "warnings"), w->mod_code, w->mod_text);
  r->car_json[c] = cJSON_Print(o);
  cJSON_Delete(o);
}

/* text with "\"carriers\":\t[]" replaced by the carriers' texts, each two levels deeper (two
 * tabs after each of its line breaks: the root object's and the array's), as cJSON prints them
 * inside the array: the report's text (NULL: out of memory or a carrier's text missing). */
static char *splice_carriers(const run_state *r, const char *text) {
  static const char key[] = "\"carriers\":\t[]";
  const char *at = strstr(text, key);
  if (!at) return NULL;
  size_t len = strlen(text) + 2 * r->n_car + 2;
  for (size_t c = 0; c < r->n_car; c++) {
    if (!r->car_json[c]) return NULL;
    len += strlen(r->car_json[c]);
    for (const char *q = r->car_json[c]; (q = strchr(q, '\n')); q++) len += 2;
  }
  char *out = malloc(len + 1), *w = out;
  if (!out) return NULL;
  size_t head = (size_t)(at - text) + sizeof key - 2; /* up to the '[' included */
  memcpy(w, text, head);
  w += head;
  for (size_t c = 0; c < r->n_car; c++) {
    if (c) *w++ = ',', *w++ = ' ';
    for (const char *q = r->car_json[c]; *q; q++) {
      *w++ = *q;
      if (*q == '\n') *w++ = '\t', *w++ = '\t';
    }
  }
  strcpy(w, at + sizeof key - 2); /* from the ']' on */
  return out;
}

int rx_write_report(run_state *r, const char *status, double elapsed) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "polyrx_version", prx_version());
  cJSON_AddStringToObject(root, "command", "rx");
  cJSON *in = cJSON_AddObjectToObject(root, "input");
  cJSON_AddStringToObject(in, "path", r->o.input);
  cJSON_AddStringToObject(in, "format", prx_format_name(r->in.format));
  cli_json_num(in, "sample_rate", r->in.sample_rate);
  cli_json_num(in, "center_frequency", r->in.center_freq);
  cJSON_AddBoolToObject(in, "sigmf", r->in.is_sigmf);
  cJSON_AddBoolToObject(in, "wav", r->in.is_wav);
  cJSON_AddBoolToObject(in, "swap_iq", r->o.swap_iq);
  cJSON_AddBoolToObject(in, "real", prx_iq_reader_is_real(r->reader));
  cli_json_num(in, "samples", (double)r->n_in);
  cli_json_num(in, "start_sample", (double)prx_iq_reader_window_start(r->reader));
  if (r->carry && r->carry->captures[0].datetime)
    cJSON_AddStringToObject(in, "datetime", r->carry->captures[0].datetime);
  cJSON *cfg = cJSON_AddObjectToObject(root, "receiver");
  cli_json_num(cfg, "channels", r->rc.channels);
  cli_json_num(cfg, "decimation", r->rc.channels / 2);
  cli_json_num(cfg, "channel_spacing_hz", r->in.sample_rate / r->rc.channels);
  cli_json_num(cfg, "channel_rate_hz", 2 * r->in.sample_rate / r->rc.channels);
  cli_json_num(cfg, "taps", (double)r->rc.channels * r->rc.taps_per_channel + 1);
  cli_json_num(cfg, "block_symbols",
               r->rc.block_symbols ? r->rc.block_symbols : prx_qpsk_config_default().block_symbols);
  cli_json_num(cfg, "cfo_span_symbols", prx_rx_cfo_span(r->rx));
  cli_json_num(cfg, "demodulator_groups", (double)prx_rx_n_groups(r->rx));
  cJSON_AddStringToObject(cfg, "backend", prx_backend_name(prx_rx_backend(r->rx)));
  cli_json_num(cfg, "threads", r->rc.threads);
  cJSON_AddStringToObject(cfg, "bits", r->o.packed ? "packed" : "unpacked");
  cJSON_AddBoolToObject(cfg, "llr", r->o.llr);
  cJSON_AddArrayToObject(root, "carriers"); /* its items spliced into the text below */
  if (r->o.detect) {
    cJSON *det = cJSON_AddArrayToObject(root, "detected");
    for (size_t i = 0; i < r->n_found; i++) {
      const prx_detect_carrier *d = &r->found[i];
      cJSON *o = cJSON_CreateObject();
      cli_json_num(o, "offset_hz", d->freq);
      cli_json_num(o, "frequency_hz", r->in.center_freq + d->freq);
      cli_json_num(o, "symbol_rate", d->symbol_rate);
      cli_json_num(o, "bandwidth_hz", d->bandwidth);
      cli_json_num(o, "rolloff", d->rolloff);
      cli_json_num(o, "esn0_db", d->esn0_db);
      cJSON_AddStringToObject(o, "modulation", d->pi4 ? "pi4-qpsk" : "qpsk");
      cli_json_num(o, "c42", d->c42); /* one ring or several levels (QAM): power_levels */
      if (r->found_as[i] >= 0)
        cli_json_num(o, "carrier", (double)r->found_as[i]);
      else
        cJSON_AddNullToObject(o, "carrier");
      cJSON_AddStringToObject(o, "note", r->found_why[i]);
      cJSON_AddItemToArray(det, o);
    }
    cli_json_num(root, "detect_samples", (double)r->pre_n);
    cli_json_num(root, "detect_min_esn0_db", rx_detect_min_esn0(&r->o));
  }
  uint64_t samples;
  double t_chan, t_demod;
  prx_rx_get_times(r->rx, &samples, &t_chan, &t_demod);
  cJSON *t = cJSON_AddObjectToObject(root, "totals");
  cli_json_num(t, "samples", (double)r->n_in);
  cli_json_num(t, "duration_s", (double)r->n_in / r->in.sample_rate);
  cli_json_num(t, "elapsed_s", elapsed);
  cli_json_num(t, "input_rate_sps", elapsed > 0 ? (double)r->n_in / elapsed : NAN);
  cli_json_num(t, "realtime_factor",
               elapsed > 0 ? (double)r->n_in / r->in.sample_rate / elapsed : NAN);
  cJSON *split = cJSON_AddObjectToObject(t, "time_s");
  cli_json_num(split, "channelizer", t_chan);
  cli_json_num(split, "demodulators", t_demod);
  cli_json_num(split, "other", elapsed - t_chan - t_demod);
  /* what the input itself warns of (a KiwiSDR file's lost samples): every carrier's bits */
  cli_json_input_warnings(cJSON_AddArrayToObject(root, "input_warnings"), r->reader);
  cJSON_AddStringToObject(root, "status", status);
  if (!strcmp(status, "error") && cli_first_error()[0])
    cJSON_AddStringToObject(root, "error", cli_first_error());
  char *head = cJSON_Print(root);
  cJSON_Delete(root);
  r->car_json = calloc(r->n_car ? r->n_car : 1, sizeof *r->car_json);
  if (head && r->car_json) rx_for_each_carrier(r, carrier_json);
  char *text = head && r->car_json ? splice_carriers(r, head) : NULL;
  for (size_t c = 0; r->car_json && c < r->n_car; c++) free(r->car_json[c]);
  free(r->car_json);
  r->car_json = NULL;
  free(head);
  if (!text) return cli_error(CMD, "out of memory for the report");
  int ok = fputs(text, r->rep_f) >= 0 && fputc('\n', r->rep_f) >= 0;
  free(text);
  return ok ? -1 : cli_error(CMD, "cannot write the report %s: %s", r->o.report, strerror(errno));
}
