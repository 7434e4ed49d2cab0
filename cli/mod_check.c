/* The modulation carriers show (QPSK or pi/4-QPSK, by the detector's 4th-power lines at their
 * places) against the one a command reads them as (cli.h, cli_mod_check). */
#include "cli.h"

#include "dsp/convert.h"
#include "polyrx/detect.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD_CHECK_MAX ((size_t)1 << 23) /* samples kept at most (64 MiB of cf32) */
/* The samples the verdict takes: 2048 symbols of the slowest carrier (8192 samples at sps 4),
 * with carriers of 7 dB or more. gen signals at 12 kBd, demod, 32 a point: read the wrong way
 * warned in all from 7.5 dB, 23 at 7, none below; read the right way none in 320 at 6 to 8 dB.
 * With 4096 symbols and 6 dB (the first form) the verdict reached 1 dB lower (all from 7 dB, half
 * at 6) at twice the work: the wideband spectrum of rx's check is its larger part (128 carriers
 * at 2400 Bd, 6.5536 Msps, the 2-core VM: 310 -> 210 ms after the stream). */
#define MOD_CHECK_SYMBOLS 2048.0
#define MOD_CHECK_MIN 8192
#define MOD_CHECK_MIN_ESN0 7.0

int cli_mod_check_init(cli_mod_check *c, double fs, size_t n_car, int threads, const char *fix_pi4,
                       const char *fix_plain) {
  memset(c, 0, sizeof *c);
  c->fs = fs;
  c->threads = threads;
  c->fix_pi4 = fix_pi4;
  c->fix_plain = fix_plain;
  c->car = calloc(n_car ? n_car : 1, sizeof *c->car);
  c->n_car = c->car ? n_car : 0;
  return c->car ? 0 : -1;
}

/* the samples kept: MOD_CHECK_SYMBOLS of the slowest carrier, at least MOD_CHECK_MIN, at most
 * MOD_CHECK_MAX (0 where there is no carrier to check) */
static size_t samples_wanted(const cli_mod_check *c) {
  double slowest = INFINITY;
  for (size_t i = 0; i < c->n_car; i++) slowest = fmin(slowest, c->car[i].rs);
  if (!c->n_car || !(slowest > 0)) return 0;
  double want = fmax((double)MOD_CHECK_MIN, MOD_CHECK_SYMBOLS * c->fs / slowest);
  return want > (double)MOD_CHECK_MAX ? MOD_CHECK_MAX : (size_t)want;
}

const char *cli_mod_code(int found_pi4, int read_pi4) {
  if ((found_pi4 != 0) == (read_pi4 != 0)) return NULL;
  return found_pi4 ? "pi4_qpsk" : "plain_qpsk";
}

/* The detector at every carrier's place on the samples kept: each carrier's code and text where
 * it shows its 4th-power line(s) in the other modulation. */
static void verdict(cli_mod_check *c) {
  prx_cf32 *x = c->n >= 4096 ? malloc(c->n * sizeof *x) : NULL;
  prx_detect_carrier *at = calloc(c->n_car, sizeof *at), *out = calloc(c->n_car, sizeof *out);
  int *found = calloc(c->n_car, sizeof *found);
  if (x && at && out && found) {
    prx_convert_block(c->format, c->raw ? c->raw : c->kept, c->n, x);
    for (size_t i = 0; i < c->n_car; i++) {
      at[i].freq = c->car[i].freq;
      at[i].symbol_rate = c->car[i].rs;
      at[i].rolloff = c->car[i].rolloff;
    }
    prx_detect_config d = prx_detect_config_default();
    d.sample_rate = c->fs;
    d.min_esn0_db = MOD_CHECK_MIN_ESN0;
    d.threads = c->threads;
    if (prx_detect_at(&d, x, c->n, at, c->n_car, out, found) == PRX_OK) {
      for (size_t i = 0; i < c->n_car; i++) {
        cli_mod_carrier *k = &c->car[i];
        if (!found[i] || !out[i].line4 || !(k->code = cli_mod_code(out[i].pi4, k->pi4))) continue;
        c->n_warned++;
        if (out[i].pi4)
          snprintf(k->text, sizeof k->text,
                   "the carrier looks like pi/4-QPSK (its 4th-power lines lie Rs/2 either side "
                   "of 4 times its frequency, %.1f Hz): read as QPSK its bits are wrong, even "
                   "where its blocks read locked; %s",
                   out[i].freq, c->fix_pi4);
        else
          snprintf(k->text, sizeof k->text,
                   "the carrier looks like QPSK, not pi/4-QPSK (one 4th-power line at 4 times "
                   "its frequency, %.1f Hz): read as pi/4-QPSK its bits are wrong; %s",
                   out[i].freq, c->fix_plain);
      }
    }
  }
  free(x), free(at), free(out), free(found);
}

/* The verdict beside the stream at the idle priority (Linux's SCHED_IDLE; the detector's pool
 * threads inherit it): it runs on cores the stream leaves idle, and takes none from the
 * command's workers with every core busy (demod -t 0; as a normal thread it cost those runs ~1 %
 * on the H200 host); cli_mod_check_end waits for it. */
static void *verdict_thread(void *arg) {
#ifdef SCHED_IDLE
  struct sched_param sp = {0};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
#endif
  verdict(arg);
  return NULL;
}

void cli_mod_check_add(cli_mod_check *c, prx_format f, const void *in, size_t n) {
  if (!c->sized) {
    c->sized = 1;
    c->cap = samples_wanted(c);
    c->format = f;
  }
  if (c->n >= c->cap || f != c->format) return;
  const size_t size = prx_format_size(f), m = n < c->cap - c->n ? n : c->cap - c->n;
  /* in place where the input stays mapped and this block follows the last */
  if (c->borrow && !c->kept && (!c->raw || (const uint8_t *)c->raw + c->n * size == in)) {
    if (!c->raw) c->raw = in;
    c->n += m;
    return;
  }
  if (c->raw) { /* not in place after all: what was borrowed is copied */
    c->kept = malloc(c->cap * size);
    if (c->kept) memcpy(c->kept, c->raw, c->n * size);
    c->raw = NULL;
  } else if (!c->kept) {
    c->kept = malloc(c->cap * size);
  }
  if (!c->kept) { /* no memory: no verdict */
    c->cap = c->n = 0;
    return;
  }
  memcpy((uint8_t *)c->kept + c->n * size, in, m * size);
  c->n += m;
}

void cli_mod_check_start(cli_mod_check *c) {
  if (!c->started && c->cap && c->n == c->cap)
    c->started = !cli_thread_start(&c->thread, verdict_thread, c);
}

size_t cli_mod_check_end(cli_mod_check *c) {
  if (c->done) return c->n_warned;
  if (c->started)
    pthread_join(c->thread, NULL);
  else
    verdict(c); /* a stream shorter than the verdict asks for */
  c->done = 1;
  return c->n_warned;
}

void cli_mod_check_free(cli_mod_check *c) {
  if (c->started && !c->done) pthread_join(c->thread, NULL);
  c->done = 1;
  free(c->kept);
  free(c->car);
  c->kept = NULL;
  c->raw = NULL;
  c->car = NULL;
  c->n = c->cap = c->n_car = 0;
}
