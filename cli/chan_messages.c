/* What polyrx channelize says on standard error: the banner, the summary (input read, channels
 * written, the strongest channels) and the non-finite samples' notes and warnings. */

#include "chan_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TOP_CHANNELS 8
#define NONFINITE_WARN 16 /* more non-finite samples than this: a warning (a wrong -F?) */

/* Hz as "100.1088 MHz" (9 significant digits, engineering prefix). */
static const char *fmt_hz(double hz, char *buf, size_t cap) {
  const char *unit;
  double v = cli_hz_unit(hz, &unit);
  snprintf(buf, cap, "%.9g %s", v, unit);
  return buf;
}

/* Non-finite samples: a note when a few, a warning when more than NONFINITE_WARN (shown even
 * with -q: quiet, the summary's note lines are left out). */
void chan_report_nonfinite(const run_state *r, int quiet) {
  int warn = r->nonfinite_in > NONFINITE_WARN;
  if (r->nonfinite_in && (warn || !quiet))
    fprintf(stderr,
            "%s%s: %llu of %llu input samples were not finite (NaN or inf) and were replaced by "
            "0%s\n",
            quiet ? "polyrx " CMD ": " : "  ", warn ? "warning" : "note",
            (unsigned long long)r->nonfinite_in, (unsigned long long)r->n_in,
            warn ? ": is the input really cf32 (-F)?" : "");
  if (r->nonfinite_out)
    fprintf(stderr, "%swarning: %llu channel samples overflowed float32 and were replaced by 0\n",
            quiet ? "polyrx " CMD ": " : "  ", (unsigned long long)r->nonfinite_out);
  if (r->saturated)
    fprintf(stderr,
            "%swarning: %llu ci16 output values were beyond full scale (|x| >= 1) and were "
            "saturated\n",
            quiet ? "polyrx " CMD ": " : "  ", (unsigned long long)r->saturated);
}

void chan_print_summary(run_state *r, double elapsed) {
  char b1[48], b2[48], b3[48];
  double fs = r->in.sample_rate;
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  fprintf(stderr, "polyrx %s: read %llu samples (%.6g s at %s) in %.3g s (%.3g Msample/s)\n", CMD,
          (unsigned long long)r->n_in, r->n_in / fs, fmt_hz(fs, b1, sizeof b1), elapsed,
          elapsed > 0 ? r->n_in / elapsed / 1e6 : 0.0);
  if (r->o.to_stdout)
    fprintf(stderr, "  wrote %zu of %u channels (%s, interleaved)", r->n_sel, K,
            prx_format_name(r->o.outf));
  else if (!r->n_failed)
    fprintf(stderr, "  wrote %zu of %u channels", r->n_complete, K);
  else
    fprintf(stderr,
            "  wrote %zu of %zu channels (%zu failed to write and have no recording; K = %u)",
            r->n_complete, r->n_sel, r->n_failed, K);
  fprintf(stderr, " to %s%s: %llu samples each at %s (D = %u), channel spacing %s\n",
          r->o.to_stdout ? "standard output"
          : r->o.archive ? r->o.archive
                         : chan_shown_dir(r),
          r->o.to_stdout || r->o.archive ? "" : "/", (unsigned long long)r->n_out,
          fmt_hz(fs / D, b2, sizeof b2), D, fmt_hz(fs / K, b3, sizeof b3));
  if (r->tail_cut)
    fprintf(stderr,
            "  note: the stop signal cut the filter tail short: the recordings end %llu samples "
            "before the input's end\n",
            (unsigned long long)(r->target - r->n_out));
  chan_report_nonfinite(r, 0);
  if (!r->n_out || !r->n_sel) return;
  double *db = malloc(r->n_sel * sizeof *db), *sorted = malloc(r->n_sel * sizeof *sorted);
  size_t *order = malloc(r->n_sel * sizeof *order);
  if (!db || !sorted || !order) goto out;
  for (size_t s = 0; s < r->n_sel; s++) {
    double p = r->energy[s] / (double)r->n_out;
    db[s] = sorted[s] = p > 0 ? 10 * log10(p) : NO_POWER_DBFS;
    order[s] = s;
  }
  qsort(sorted, r->n_sel, sizeof *sorted, cli_cmp_double);
  double median =
      r->n_sel % 2 ? sorted[r->n_sel / 2] : 0.5 * (sorted[r->n_sel / 2 - 1] + sorted[r->n_sel / 2]);
  size_t top = r->n_sel < TOP_CHANNELS ? r->n_sel : TOP_CHANNELS;
  /* partial selection sort: the `top` strongest, strongest first */
  for (size_t i = 0; i < top; i++)
    for (size_t j = i + 1; j < r->n_sel; j++)
      if (db[order[j]] > db[order[i]]) {
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  fprintf(stderr, "  strongest channels (median channel power %.1f dBFS):\n", median);
  fprintf(stderr, "    %8s  %18s  %12s  %12s\n", "channel", "centre", "power dBFS", "above median");
  for (size_t i = 0; i < top; i++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, order[i], &ch);
    fprintf(stderr, "    %8u  %18s  %12.1f  %9.1f dB\n", ch.index,
            fmt_hz(ch.center_freq, b1, sizeof b1), db[order[i]], db[order[i]] - median);
  }
out:
  free(db);
  free(sorted);
  free(order);
}

void chan_print_banner(const run_state *r) {
  char b1[48], b2[48];
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  size_t M;
  prx_chan_taps(r->chan, &M);
  fprintf(stderr,
          "polyrx %s: %s (%s%s) at %s, centre %s -> %u channels, D = %u, %lu taps/channel "
          "(%zu), %.4g dB, %s backend -> %zu %s %s%s\n",
          CMD, r->o.input, prx_format_name(r->in.format), r->in.is_sigmf ? ", SigMF" : "",
          fmt_hz(r->in.sample_rate, b1, sizeof b1), fmt_hz(r->in.center_freq, b2, sizeof b2), K, D,
          r->o.taps_per_channel, M, r->o.atten, prx_backend_name(prx_chan_backend(r->chan)),
          r->n_sel, r->o.to_stdout ? "channels interleaved to" : "SigMF recordings in",
          r->o.to_stdout ? "standard output"
          : r->o.archive ? r->o.archive
                         : chan_shown_dir(r),
          r->o.to_stdout ? ""
          : r->o.archive ? " (archive)"
                         : "/");
}
