/* polyrx rx's summary: the carriers' table on standard output (standard error where the report
 * is written there), the demodulators' warnings on standard error (grouped where many carriers
 * share one). */

#include "rx_run.h"

#include <stdio.h>
#include <string.h>

/* The warnings a carrier can have: the demodulator's bits, and two more for the modulation
 * check's codes (carrier_out.mod_code; beyond every PRX_QPSK_WARN_ bit). */
#define WARN_PI4 (1u << 30)   /* "pi4_qpsk" */
#define WARN_PLAIN (1u << 31) /* "plain_qpsk" */
static const unsigned mod_bits[2] = {WARN_PI4, WARN_PLAIN};

/* whether carrier c has warning bit (one of the demodulator's, or of mod_bits from the check at
 * its place: --detect's findings had their lines as it found them) */
static int carrier_has(const run_state *r, size_t c, unsigned bit) {
  const char *code = c < r->modc.n_car ? r->modc.car[c].code : NULL;
  if (bit & (WARN_PI4 | WARN_PLAIN)) return code && (bit == WARN_PI4) == !strcmp(code, "pi4_qpsk");
  return r->stats && (r->stats[c].demod.warnings & bit) != 0;
}

/* how many carriers have warning bit (their bits may be noise) */
static size_t carriers_with(const run_state *r, unsigned bit) {
  size_t n = 0;
  for (size_t c = 0; c < r->n_car; c++) n += carrier_has(r, c, bit);
  return n;
}
size_t rx_carriers_warned(const run_state *r) {
  size_t n = 0; /* those with a demodulator warning, or seen in another modulation */
  for (size_t c = 0; c < r->n_car; c++)
    n += (r->stats && r->stats[c].demod.warnings) || (r->out && r->out[c].mod_code);
  return n;
}

void rx_table(const run_state *r, double elapsed) {
  int truth = r->o.truth != NULL;
  /* the report on standard output (--report -) keeps it for itself: the table goes beside the
   * warnings */
  FILE *out = r->o.report && !strcmp(r->o.report, "-") ? stderr : stdout;
  fprintf(out, "%3s %14s %9s %5s %7s %9s %8s %7s %10s", "#", "frequency Hz", "offset Hz", "chan",
          "Es/N0", "CFO Hz", "clk ppm", "locked", "bits");
  if (truth) fprintf(out, " %8s %10s %10s", "errors", "BER", "theory");
  fprintf(out, "\n");
  for (size_t c = 0; c < r->n_car; c++) {
    const prx_rx_stats s = r->stats[c];
    const carrier_out *w = &r->out[c];
    double locked = s.demod.blocks ? 100 * rx_locked_fraction(&s.demod) : 0;
    fprintf(out, "%3zu %14.1f %+9.1f %5u %7.2f %+9.2f %+8.1f %6.1f%% %10llu", c,
            r->in.center_freq + s.freq, s.freq, s.channel, s.demod.esn0_db, s.demod.cfo_hz,
            s.demod.clock_ppm, locked, (unsigned long long)w->n_bits);
    if (truth)
      fprintf(out, " %8llu %10.3g %10.3g", (unsigned long long)w->errors,
              rx_carrier_ber(w, r->car[c].ambiguity),
              rx_ber_theory(s.demod.esn0_db, r->car[c].ambiguity));
    /* "locked" counts the blocks with a signal followed at its symbol rate: a warning (timing
     * jumps, non-finite input) says that even those bits may be noise */
    fprintf(out, "%s\n", s.demod.warnings || w->mod_code ? "  !" : "");
  }
  const size_t n_warned = rx_carriers_warned(r);
  if (n_warned)
    fprintf(out,
            "! %zu carrier%s with demodulator warnings (standard error, the report's warnings): "
            "their bits may be noise\n",
            n_warned, n_warned == 1 ? "" : "s");
  uint64_t samples;
  double t_chan, t_demod;
  prx_rx_get_times(r->rx, &samples, &t_chan, &t_demod);
  double dur = (double)r->n_in / r->in.sample_rate;
  fprintf(out,
          "%llu samples (%.6g s at %.9g Hz) in %.3g s: %.4g Msamples/s, %.3g x real time "
          "(channelizer %.3g s, demodulators %.3g s, %s)\n",
          (unsigned long long)r->n_in, dur, r->in.sample_rate, elapsed,
          elapsed > 0 ? (double)r->n_in / elapsed / 1e6 : 0.0, elapsed > 0 ? dur / elapsed : 0.0,
          t_chan, t_demod, prx_backend_name(prx_rx_backend(r->rx)));
}

/* A warning more than WARN_LIST carriers share goes to standard error as one line, with their
 * count and indices: a receiver given every channel of a band has most of them without a signal
 * (1130 lines for 1024 carriers, one a carrier and warning). The report keeps each carrier's. */
#define WARN_LIST 8

/* the carriers c with warning bit set, as "0-4, 6, 9-1023" into buf (cut with ", ..." at cap) */
static void carrier_ranges(const run_state *r, unsigned bit, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t c = 0; c < r->n_car; c++) {
    if (!carrier_has(r, c, bit)) continue;
    size_t e = c;
    while (e + 1 < r->n_car && carrier_has(r, e + 1, bit)) e++;
    char item[48];
    int k = e > c ? snprintf(item, sizeof item, "%s%zu-%zu", len ? ", " : "", c, e)
                  : snprintf(item, sizeof item, "%s%zu", len ? ", " : "", c);
    if (k < 0 || len + (size_t)k + 6 >= cap) {
      snprintf(buf + len, cap - len, ", ...");
      return;
    }
    memcpy(buf + len, item, (size_t)k + 1);
    len += (size_t)k;
    c = e;
  }
}

/* the grouped line's text of a modulation check's code */
static const char *mod_group_text(unsigned bit) {
  return bit == WARN_PI4
             ? "they look like pi/4-QPSK (or C4FM), listed as QPSK: their bits are wrong, even "
               "where their blocks read locked; add pi4 to their --carrier"
             : "they look like QPSK, listed as pi/4-QPSK (pi4): their bits are wrong; "
               "drop pi4 from their --carrier";
}

/* the demodulators' warnings and the modulation check's on standard error: those bits may be
 * noise */
void rx_warnings(const run_state *r) {
  unsigned grouped = 0; /* the warning bits shared by more than WARN_LIST carriers */
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
    if (carriers_with(r, cli_qpsk_warn_bits[i]) > WARN_LIST) grouped |= cli_qpsk_warn_bits[i];
  for (size_t i = 0; i < 2; i++)
    if (carriers_with(r, mod_bits[i]) > WARN_LIST) grouped |= mod_bits[i];
  for (size_t c = 0; c < r->n_car; c++) {
    const prx_rx_stats s = r->stats[c];
    for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
      if (s.demod.warnings & cli_qpsk_warn_bits[i] & ~grouped)
        fprintf(stderr, "polyrx %s: warning: carrier %zu (%s): %s\n", CMD, c, r->spec[c],
                prx_qpsk_warning_text(cli_qpsk_warn_bits[i]));
    for (size_t i = 0; i < 2; i++)
      if (carrier_has(r, c, mod_bits[i] & ~grouped))
        fprintf(stderr, "polyrx %s: warning: carrier %zu (%s): %s\n", CMD, c, r->spec[c],
                r->out[c].mod_text);
    if (r->out[c].truth_short)
      fprintf(stderr, "polyrx %s: warning: carrier %zu: %s ends %llu bits before the output\n", CMD,
              c, r->out[c].truth_name, (unsigned long long)r->out[c].truth_short);
  }
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS + 2; i++) {
    const unsigned bit =
        i < CLI_QPSK_N_WARNINGS ? cli_qpsk_warn_bits[i] : mod_bits[i - CLI_QPSK_N_WARNINGS];
    if (!(grouped & bit)) continue;
    char list[160];
    carrier_ranges(r, bit, list, sizeof list);
    fprintf(stderr, "polyrx %s: warning: %zu carriers (%s): %s\n", CMD, carriers_with(r, bit), list,
            i < CLI_QPSK_N_WARNINGS ? prx_qpsk_warning_text(bit) : mod_group_text(bit));
  }
}
