/* The modulation a carrier shows (QPSK or pi/4-QPSK, by the detector's 4th-power lines) against
 * the one a command reads it as (cli.h, cli_mod_check). */
#include "cli.h"

#include "dsp/convert.h"
#include "polyrx/detect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MOD_CHECK_MAX ((size_t)1 << 22) /* samples kept at most (32 MiB of cf32) */

/* the detector's configuration for a carrier at rs in a stream at fs: rates within a factor of
 * 2 of it, carriers of 10 dB or more (below, the detector's verdict is less sure) */
static prx_detect_config check_config(double fs, double rs) {
  prx_detect_config d = prx_detect_config_default();
  d.sample_rate = fs;
  d.min_symbol_rate = fmax(0.5 * rs, fs / 16384);
  d.max_symbol_rate = fmin(2 * rs, fs / 2);
  d.min_esn0_db = 10;
  d.threads = 1;
  return d;
}

void cli_mod_check_init(cli_mod_check *c, double fs, double rs) {
  c->fs = fs;
  c->rs = rs;
  c->x = NULL;
  c->n = 0;
  const prx_detect_config d = check_config(fs, rs);
  size_t need = prx_detect_min_samples(&d);
  c->cap = need > MOD_CHECK_MAX ? MOD_CHECK_MAX : need;
}

void cli_mod_check_add(cli_mod_check *c, prx_format f, const void *in, size_t n) {
  if (c->n >= c->cap || !c->cap) return;
  if (!c->x && !(c->x = malloc(c->cap * sizeof *c->x))) {
    c->cap = 0; /* no memory: no verdict */
    return;
  }
  size_t m = n < c->cap - c->n ? n : c->cap - c->n;
  prx_convert_block(f, in, m, c->x + c->n);
  c->n += m;
}

int cli_mod_check_verdict(const cli_mod_check *c, double freq, int pi4, const char **code,
                          char *text, size_t size) {
  const prx_detect_config d = check_config(c->fs, c->rs);
  prx_detect_carrier found[16];
  size_t nf = 0;
  if (c->n < 4096 || prx_detect_carriers(&d, c->x, c->n, found, 16, &nf)) return 0;
  for (size_t i = 0; i < nf && i < 16; i++) {
    const prx_detect_carrier *k = &found[i];
    if (fabs(k->freq - freq) > 0.3 * c->rs || fabs(k->symbol_rate / c->rs - 1) > 0.02) continue;
    if ((k->pi4 != 0) == (pi4 != 0)) return 0;
    if (k->pi4) {
      *code = "pi4_qpsk";
      snprintf(text, size,
               "the carrier looks like pi/4-QPSK (its 4th-power lines lie Rs/2 either side of 4 "
               "times its frequency, %.1f Hz): read as QPSK its bits are wrong with every block "
               "locked; demodulate it with --pi4",
               k->freq);
    } else {
      *code = "plain_qpsk";
      snprintf(text, size,
               "the carrier looks like QPSK, not pi/4-QPSK (one 4th-power line at 4 times its "
               "frequency, %.1f Hz): read with --pi4 its bits are wrong; demodulate it without",
               k->freq);
    }
    return 1;
  }
  return 0;
}

void cli_mod_check_free(cli_mod_check *c) {
  free(c->x);
  c->x = NULL;
  c->n = c->cap = 0;
}
