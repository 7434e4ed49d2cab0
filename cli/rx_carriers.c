/* polyrx rx's carriers: those listed (--carrier) checked against the receiver's limits, then, with
 * --detect, those the detector finds in the first samples that the receiver can take. */

#include "rx_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The listed carriers into r->car (a bad one: one line, exit 2). */
int rx_listed_carriers(run_state *r) {
  const options *o = &r->o;
  for (size_t i = 0; i < o->n_car; i++) {
    const prx_sim_carrier *s = &o->car[i];
    prx_rx_carrier *k = &r->car[i];
    *k = prx_rx_carrier_default();
    k->freq = s->freq; /* freq= is absolute: the input's centre off it */
    if (o->given[i] & (1u << CLI_CARRIER_KEY_FREQ)) k->freq -= r->in.center_freq;
    k->symbol_rate = s->symbol_rate;
    k->rolloff = s->rolloff;
    if (s->pilot_period) {
      k->ambiguity = PRX_QPSK_PILOTS;
      k->pilot_period = s->pilot_period;
      k->pilot_len = s->pilot_len;
    } else {
      /* diff (the default, as for `demod`) unless diff=0 was given */
      int diff_given = o->given[i] & (1u << CLI_CARRIER_KEY_DIFF);
      k->ambiguity = s->differential || !diff_given ? PRX_QPSK_DIFFERENTIAL : PRX_QPSK_NONE;
    }
    k->modulation = s->pi4 ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
    if (s->pilot_period && s->differential)
      return cli_usage_error(CMD, "--carrier '%s': give diff or pilots, not both", o->spec[i]);
    if (prx_rx_check_carrier(&r->rc, k)) {
      cli_error(CMD, "--carrier '%s': %s", o->spec[i], prx_last_error());
      return 2; /* a usage error, in the one line that says why */
    }
    r->spec[i] = o->spec[i];
  }
  r->n_car = o->n_car;
  return -1;
}

/* the weakest Es/N0 (dB) --detect reports: --detect-min-esn0, else the detector's default */
double rx_detect_min_esn0(const options *o) {
  return isnan(o->detect_min_esn0) ? prx_detect_config_default().min_esn0_db : o->detect_min_esn0;
}

/* --detect: reads the samples the detector needs (kept for the receiver), finds the carriers
 * and appends those the receiver can take (differential decoding assumed; a listed carrier
 * within a symbol rate of a found one stands for it). */
int rx_detect_carriers(run_state *r) {
  prx_detect_config dc = prx_detect_config_default();
  dc.sample_rate = r->in.sample_rate;
  dc.threads = (int)r->o.threads;
  dc.min_esn0_db = rx_detect_min_esn0(&r->o);
  /* carriers down to 1/16 of the spacing (32 samples per symbol in a channel), so that the
   * detector's span (800 symbols of the slowest) stays within seconds at any K */
  dc.min_symbol_rate = fmax(r->in.sample_rate / 8192, r->in.sample_rate / r->o.K / 16);
  size_t need = prx_detect_min_samples(&dc), size = prx_format_size(r->in.format);
  prx_cf32 *x = malloc(need * sizeof *x);
  r->pre = malloc(need * size);
  r->found = calloc(256, sizeof *r->found);
  r->found_as = calloc(256, sizeof *r->found_as);
  r->found_why = calloc(256, sizeof *r->found_why);
  if (!x || !r->pre || !r->found || !r->found_as || !r->found_why) {
    free(x);
    return cli_error(CMD, "out of memory for the %zu samples detection needs", need);
  }
  while (r->pre_n < need) {
    size_t got = 0;
    int rc = cli_read_block(CMD, r->reader, (uint8_t *)r->pre + r->pre_n * size, need - r->pre_n,
                            r->pre_n, &got);
    if (rc >= 0) {
      free(x);
      return rc;
    }
    if (!got) break;
    r->pre_n += got;
  }
  if (r->pre_n < need)
    fprintf(stderr,
            "polyrx %s: warning: --detect: the input has %zu samples, fewer than the %zu the "
            "detector needs: what it finds may be wrong\n",
            CMD, r->pre_n, need);
  prx_status st = prx_convert_to_cf32(r->in.format, r->pre, r->pre_n, x);
  if (!st) st = prx_detect_carriers(&dc, x, r->pre_n, r->found, 256, &r->n_found);
  free(x);
  if (st) return cli_status_error(CMD, "--detect", st);
  for (size_t i = 0; i < r->n_found; i++) {
    const prx_detect_carrier *d = &r->found[i];
    r->found_as[i] = -1;
    size_t j = 0;
    while (j < r->o.n_car && fabs(r->car[j].freq - d->freq) > d->symbol_rate) j++;
    if (j < r->o.n_car) {
      r->found_as[i] = (long)j;
      r->out[j].levels = cli_mod_levels(d);
      /* a listed carrier read in the other modulation than the one found, its pattern clear
       * (line4): its bits are wrong even where its blocks read locked (cli_mod_check's rule) */
      const int listed_pi4 = r->car[j].modulation == PRX_QPSK_PI4;
      r->out[j].mod_code = d->line4 ? cli_mod_code(d->pi4, listed_pi4) : NULL;
      if (r->out[j].mod_code) {
        const char *as = listed_pi4 ? "pi/4-QPSK" : "QPSK",
                   *looks = d->pi4 ? "pi/4-QPSK (add pi4)" : "QPSK (drop pi4)";
        snprintf(r->found_why[i], sizeof r->found_why[i],
                 "listed as carrier %zu (%s), but it looks like %s: its bits are likely wrong", j,
                 as, looks);
        fprintf(stderr,
                "polyrx %s: warning: --detect: carrier %zu is listed as %s but looks like %s: its "
                "bits are likely wrong\n",
                CMD, j, as, looks);
        r->out[j].mod_text = r->found_why[i];
      } else {
        snprintf(r->found_why[i], sizeof r->found_why[i], "listed as carrier %zu", j);
      }
      continue;
    }
    prx_rx_carrier k = prx_rx_carrier_default();
    k.freq = d->freq;
    k.symbol_rate = d->symbol_rate;
    k.rolloff = d->rolloff;
    k.modulation = d->pi4 ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
    if (prx_rx_check_carrier(&r->rc, &k)) {
      snprintf(r->found_why[i], sizeof r->found_why[i], "%s", prx_last_error());
      fprintf(stderr, "polyrx %s: warning: --detect: not received: %s\n", CMD, r->found_why[i]);
      continue;
    }
    char text[160];
    snprintf(text, sizeof text, "detected: f=%.1f,rs=%.3f,rolloff=%.2f%s", d->freq, d->symbol_rate,
             d->rolloff, d->pi4 ? ",pi4" : "");
    size_t c = r->n_car++;
    r->car[c] = k;
    r->spec_made[c] = strdup(text);
    if (!r->spec_made[c]) return cli_error(CMD, "out of memory");
    r->spec[c] = r->spec_made[c];
    r->found_as[i] = (long)c;
    r->out[c].levels = cli_mod_levels(d);
    snprintf(r->found_why[i], sizeof r->found_why[i], "received as carrier %zu", c);
  }
  if (!r->o.quiet)
    fprintf(stderr,
            "polyrx %s: --detect: %zu carrier%s at Es/N0 %g dB or more found in %zu samples, %zu "
            "received\n",
            CMD, r->n_found, r->n_found == 1 ? "" : "s", dc.min_esn0_db, r->pre_n,
            r->n_car - r->o.n_car);
  return -1;
}
