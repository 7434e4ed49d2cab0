/* The modulation a carrier shows (QPSK or pi/4-QPSK, by the detector's 4th-power lines) against
 * the one a command reads it as (cli.h, cli_mod_check). */
#include "cli.h"

#include "dsp/convert.h"
#include "polyrx/detect.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD_CHECK_MAX ((size_t)1 << 22) /* samples kept at most (32 MiB of cf32) */
/* The samples the verdict takes: 4096 symbols (16384 samples at sps 4, the detector's work
 * ~0.5 ms) rather than the detector's minimum for its documented accuracy (65536 at least, ~2
 * ms): the lines need no more (the same verdicts at 8-20 dB with 8192, 16384 and 65536). */
#define MOD_CHECK_SYMBOLS 4096.0
#define MOD_CHECK_MIN 16384

/* the detector's configuration for a carrier at rs in a stream at fs: rates within a factor of
 * 2 of it, carriers of 6 dB or more (gen signals at 12 kBd, 16384 samples, 16 a point: read the
 * wrong way warned in all at 7 to 20 dB, 8 at 6, none at 5; read the right way none of 112 at 5
 * to 20 dB), one thread (beside the demodulator's) */
static prx_detect_config check_config(double fs, double rs) {
  prx_detect_config d = prx_detect_config_default();
  d.sample_rate = fs;
  d.min_symbol_rate = fmax(0.5 * rs, fs / 16384);
  d.max_symbol_rate = fmin(2 * rs, fs / 2);
  d.min_esn0_db = 6;
  d.threads = 1;
  return d;
}

void cli_mod_check_init(cli_mod_check *c, double fs, double rs, double freq, int pi4) {
  memset(c, 0, sizeof *c);
  c->fs = fs;
  c->rs = rs;
  c->freq = freq;
  c->pi4 = pi4 != 0;
  const prx_detect_config d = check_config(fs, rs);
  /* MOD_CHECK_SYMBOLS of the carrier (at least MOD_CHECK_MIN samples), within the detector's
   * own minimum and MOD_CHECK_MAX */
  double want = fmax((double)MOD_CHECK_MIN, MOD_CHECK_SYMBOLS * fs / rs);
  size_t need = prx_detect_min_samples(&d);
  if (want < (double)need) need = (size_t)want;
  c->cap = need > MOD_CHECK_MAX ? MOD_CHECK_MAX : need;
}

const char *cli_mod_code(int found_pi4, int read_pi4) {
  if ((found_pi4 != 0) == (read_pi4 != 0)) return NULL;
  return found_pi4 ? "pi4_qpsk" : "plain_qpsk";
}

/* The detector on the samples kept: c->code and c->text where the carrier found near c->freq
 * shows the other modulation. */
static void verdict(cli_mod_check *c) {
  const prx_detect_config d = check_config(c->fs, c->rs);
  prx_detect_carrier found[16];
  size_t nf = 0;
  if (c->n < 4096 || prx_detect_carriers(&d, c->x, c->n, found, 16, &nf)) return;
  for (size_t i = 0; i < nf && i < 16; i++) {
    const prx_detect_carrier *k = &found[i];
    if (fabs(k->freq - c->freq) > 0.3 * c->rs || fabs(k->symbol_rate / c->rs - 1) > 0.02) continue;
    if (!(c->code = cli_mod_code(k->pi4, c->pi4))) return;
    if (k->pi4)
      snprintf(c->text, sizeof c->text,
               "the carrier looks like pi/4-QPSK (its 4th-power lines lie Rs/2 either side of 4 "
               "times its frequency, %.1f Hz): read as QPSK its bits are wrong with every block "
               "locked; demodulate it with --pi4",
               k->freq);
    else
      snprintf(c->text, sizeof c->text,
               "the carrier looks like QPSK, not pi/4-QPSK (one 4th-power line at 4 times its "
               "frequency, %.1f Hz): read with --pi4 its bits are wrong; demodulate it without",
               k->freq);
    return;
  }
}

/* The verdict beside the stream at the idle priority (Linux's SCHED_IDLE): it runs on cores the
 * stream leaves idle, and takes none from demod's workers with every core busy (-t 0; as a normal
 * thread it cost those runs ~1 % on the H200 host); cli_mod_check_end waits for it. */
static void *verdict_thread(void *arg) {
#ifdef SCHED_IDLE
  struct sched_param sp = {0};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
#endif
  verdict(arg);
  return NULL;
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

void cli_mod_check_start(cli_mod_check *c) {
  if (!c->started && c->cap && c->n == c->cap)
    c->started = !cli_thread_start(&c->thread, verdict_thread, c);
}

const char *cli_mod_check_end(cli_mod_check *c) {
  if (c->done) return c->code;
  if (c->started)
    pthread_join(c->thread, NULL);
  else
    verdict(c); /* a stream shorter than the detector asks for */
  c->done = 1;
  return c->code;
}

void cli_mod_check_free(cli_mod_check *c) {
  if (c->started && !c->done) pthread_join(c->thread, NULL);
  c->done = 1;
  free(c->x);
  c->x = NULL;
  c->n = c->cap = 0;
}
