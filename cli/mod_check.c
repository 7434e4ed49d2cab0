/* The modulation carriers show (QPSK or pi/4-QPSK, by the detector's 4th-power lines at their
 * places) against the one a command reads them as (cli.h, cli_mod_check). */
#include "cli.h"

#include "core/internal.h" /* prx_pool */
#include "dsp/convert.h"
#include "polyrx/detect.h"
#include "polyrx/rx.h"

#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD_CHECK_MAX ((size_t)1 << 23) /* samples kept at most (64 MiB of cf32) */
/* ... and in rx's channels, the samples that give each channel its MOD_CHECK_ROW_MIN where K is
 * above 2048, up to this (K = 4096: 2^24 samples, 64 MiB of ci16 kept; K = 8192: 2^25) */
#define MOD_CHECK_MAX_CHANNELS ((size_t)1 << 26)
/* The samples the verdict takes: 2048 symbols of the slowest carrier (8192 samples at sps 4),
 * with carriers of 7 dB or more. gen signals at 12 kBd, demod, 32 a point: read the wrong way
 * warned in 63 of 64 at 7.5 dB, all from 8, 44 at 7, none below; read the right way none in 320
 * at 6 to 8 dB (nor in 128 streams of 1500 symbols at 7 and 8).
 * 4096 symbols at 6 dB reach 1 dB lower for twice the work (bench/RESULTS.md, thirty-first
 * session). */
#define MOD_CHECK_SYMBOLS 2048.0
#define MOD_CHECK_MIN 8192
#define MOD_CHECK_MIN_ESN0 7.0
/* Channel samples the check keeps at least (PRX_DETECT_LEAST_SAMPLES, with room). */
#define MOD_CHECK_ROW_MIN 8192

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

/* c->failure said (once: the first reason), and PRX_ERR_INVALID or the library's status */
static prx_status fail(cli_mod_check *c, prx_status st, const char *fmt, ...) {
  if (!c->failure[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->failure, sizeof c->failure, fmt, ap);
    va_end(ap);
  }
  return st ? st : PRX_ERR_INVALID;
}

void cli_mod_check_channels(cli_mod_check *c, const prx_rx_config *rc) {
  c->rc = *rc;
  c->rc.carriers = NULL; /* (its bank's layout alone is used) */
  c->rc.n_carriers = 0;
}

/* the samples kept: MOD_CHECK_SYMBOLS of the slowest carrier, at least MOD_CHECK_MIN (in
 * channels, MOD_CHECK_ROW_MIN a channel), at most MOD_CHECK_MAX (in channels, their rows' need
 * up to MOD_CHECK_MAX_CHANNELS; 0 where there is no carrier to check) */
static size_t samples_wanted(const cli_mod_check *c) {
  double slowest = INFINITY;
  for (size_t i = 0; i < c->n_car; i++)
    if (!c->car[i].skip) slowest = fmin(slowest, c->car[i].rs);
  if (!(slowest > 0 && slowest < INFINITY)) return 0; /* none to check */
  double want = fmax((double)MOD_CHECK_MIN, MOD_CHECK_SYMBOLS * c->fs / slowest);
  const double K = c->rc.channels;
  double most = (double)MOD_CHECK_MAX;
  if (K) {
    const double rows = MOD_CHECK_ROW_MIN * (K / 2) + K * c->rc.taps_per_channel;
    want = fmax(want, rows);
    most = fmin(fmax(most, rows), (double)MOD_CHECK_MAX_CHANNELS);
  }
  return want > most ? (size_t)most : (size_t)want;
}

/* The carriers in the channels of a polyphase bank (cli_mod_check_channels): the channels they
 * lie in, one pass of the CPU channelizer over the samples kept (a few ms on all cores, where
 * the one transform of the wideband path costs ~150 ms for 5.6M samples on one core), then one
 * prx_detect_at in each channel on its own rows for the carriers there (one spectrum a channel),
 * the channels shared by the threads. */
typedef struct {
  const prx_detect_carrier *at; /* the carriers by channel, at their offsets in it */
  prx_detect_carrier *out;
  int *found;
  const size_t *first; /* selected channel s's carriers: [first[s], first[s + 1]) */
  const prx_cf32 *rows;
  size_t stride, n_rows;
  double rate;
  atomic_int failed;
  char why[512]; /* the first failure's reason (its thread's last error) */
} channel_job;

/* the carriers of selected channel s (a few at most) on its rows, on the pool */
static void channel_task(void *ctx, size_t s) {
  channel_job *j = ctx;
  prx_detect_config d = prx_detect_config_default();
  d.sample_rate = j->rate;
  d.min_esn0_db = MOD_CHECK_MIN_ESN0;
  d.threads = 1;
  d.flat_bandwidth = 0.8 * j->rate; /* the receiver's channels: flat to 0.8 of a spacing */
  const size_t a = j->first[s], n = j->first[s + 1] - a;
  if (prx_detect_at(&d, j->rows + s * j->stride, j->n_rows, j->at + a, n, j->out + a,
                    j->found + a) &&
      !atomic_exchange(&j->failed, 1))
    snprintf(j->why, sizeof j->why, "%s", prx_last_error());
}

/* a carrier (its index) and its channel, to order the carriers by channel */
typedef struct {
  unsigned chan;
  size_t car;
} chan_entry;

static int cmp_chan_entry(const void *a, const void *b) {
  const chan_entry *x = a, *y = b;
  return x->chan != y->chan ? (x->chan > y->chan) - (x->chan < y->chan)
                            : (x->car > y->car) - (x->car < y->car);
}

static prx_status check_in_channels(cli_mod_check *c, const void *x, const prx_detect_carrier *at,
                                    size_t n_car, prx_detect_carrier *out, int *found) {
  const unsigned K = c->rc.channels, D = K / 2;
  const size_t M = (size_t)K * c->rc.taps_per_channel + 1;
  chan_entry *e = malloc(n_car * sizeof *e);
  unsigned *sel = malloc(n_car * sizeof *sel);
  size_t *first = malloc((n_car + 1) * sizeof *first);
  double *centre = malloc(n_car * sizeof *centre);
  prx_detect_carrier *at_ch = malloc(n_car * sizeof *at_ch),
                     *out_ch = malloc(n_car * sizeof *out_ch);
  int *found_ch = calloc(n_car, sizeof *found_ch);
  prx_cf32 *rows = NULL;
  prx_chan *ch = NULL;
  /* the pool made first: its workers start while the channelizer runs (a run takes only those
   * started by then: made just before it, a thousand channels' detection ran on ~one thread) */
  prx_pool *pool = NULL;
  prx_status st = e && sel && first && centre && at_ch && out_ch && found_ch
                      ? prx_pool_create(c->threads, &pool)
                      : fail(c, PRX_ERR_NOMEM, "out of memory");
  for (size_t i = 0; !st && i < n_car; i++) /* the receiver's channel of each */
    e[i] = (chan_entry){prx_rx_channel_of(&c->rc, at[i].freq, &centre[i]), i};
  size_t n_sel = 0;
  if (!st) { /* the carriers by channel; the channels once each, in order */
    qsort(e, n_car, sizeof *e, cmp_chan_entry);
    for (size_t k = 0; k < n_car; k++) {
      if (!n_sel || e[k].chan != sel[n_sel - 1]) first[n_sel] = k, sel[n_sel++] = e[k].chan;
      at_ch[k] = at[e[k].car];
      at_ch[k].freq -= centre[e[k].car]; /* its offset in the channel */
    }
    first[n_sel] = n_car;
    prx_rx_config rc = c->rc; /* the receiver's bank, on the CPU, for the samples kept */
    rc.in_format = c->format;
    rc.backend = PRX_BACKEND_CPU;
    rc.threads = c->threads;
    st = prx_rx_make_channelizer(&rc, sel, n_sel, 0, &ch);
  }
  /* the filter's start (its M taps, M / D outputs) is left out of every row */
  const size_t skip = M / D + 1;
  size_t stride = ch ? prx_chan_output_count(ch, c->n) : 0, got = 0;
  if (!st && stride < PRX_DETECT_LEAST_SAMPLES + skip)
    st = fail(c, PRX_ERR_INVALID,
              "the %zu samples kept give %zu a channel with K = %u, fewer than the %zu it needs",
              c->n, stride, K, PRX_DETECT_LEAST_SAMPLES + skip);
  if (!st && !(rows = malloc(n_sel * stride * sizeof *rows)))
    st = fail(c, PRX_ERR_NOMEM, "out of memory for %zu channels of %zu samples", n_sel, stride);
  if (!st) st = prx_chan_execute(ch, x, c->n, rows, stride, &got);
  if (!st) {
    channel_job job = {.at = at_ch,
                       .out = out_ch,
                       .found = found_ch,
                       .first = first,
                       .rows = rows + skip,
                       .stride = stride,
                       .n_rows = got - skip,
                       .rate = 2 * c->fs / K};
    atomic_init(&job.failed, 0);
    prx_pool_run(pool, channel_task, &job, n_sel);
    if (atomic_load(&job.failed)) st = fail(c, PRX_ERR_INVALID, "in a channel: %s", job.why);
  }
  for (size_t k = 0; !st && k < n_car; k++) { /* back in the carriers' order, in the band */
    const size_t i = e[k].car;
    out[i] = out_ch[k];
    out[i].freq += centre[i];
    found[i] = found_ch[k];
  }
  prx_pool_destroy(pool);
  prx_chan_destroy(ch);
  free(rows), free(centre), free(first), free(sel), free(e);
  free(at_ch), free(out_ch), free(found_ch);
  return st;
}

int cli_mod_levels(const prx_detect_carrier *d) {
  return d->esn0_db >= MOD_CHECK_MIN_ESN0 && d->c42 > PRX_DETECT_RING_C42;
}

const char *cli_mod_code(int found_pi4, int read_pi4) {
  if ((found_pi4 != 0) == (read_pi4 != 0)) return NULL;
  return found_pi4 ? "pi4_qpsk" : "plain_qpsk";
}

/* The carriers on the wideband samples (demod's one carrier, near the centre). */
static prx_status check_wideband(cli_mod_check *c, const void *raw, const prx_detect_carrier *at,
                                 size_t n_at, prx_detect_carrier *out, int *found) {
  prx_cf32 *x = NULL; /* (cf32 samples, as demod's mixer keeps them, read where they are) */
  if (c->format != PRX_CF32 && !(x = malloc(c->n * sizeof *x)))
    return fail(c, PRX_ERR_NOMEM, "out of memory for %zu samples", c->n);
  if (x) prx_convert_block(c->format, raw, c->n, x);
  prx_detect_config d = prx_detect_config_default();
  d.sample_rate = c->fs;
  d.min_esn0_db = MOD_CHECK_MIN_ESN0;
  d.threads = c->threads;
  prx_status st = prx_detect_at(&d, x ? x : raw, c->n, at, n_at, out, found);
  free(x);
  return st;
}

/* The detector at every carrier's place on the samples kept: each carrier's code and text where
 * it shows its 4th-power line(s) in the other modulation, levels where its symbols' power lies
 * on several levels; c->failure where it could not look. */
static void verdict(cli_mod_check *c) {
  const double t0 = cli_seconds();
  /* the carriers to check, side by side (idx: each one's carrier) */
  size_t *idx = calloc(c->n_car, sizeof *idx), n = 0;
  prx_detect_carrier *at = calloc(c->n_car, sizeof *at), *out = calloc(c->n_car, sizeof *out);
  int *found = calloc(c->n_car, sizeof *found);
  prx_status st = idx && at && out && found ? PRX_OK : fail(c, PRX_ERR_NOMEM, "out of memory");
  for (size_t i = 0; !st && i < c->n_car; i++) {
    if (c->car[i].skip) continue;
    idx[n] = i;
    at[n].freq = c->car[i].freq;
    at[n].symbol_rate = c->car[i].rs;
    at[n++].rolloff = c->car[i].rolloff;
  }
  if (!st && n && c->n < PRX_DETECT_LEAST_SAMPLES)
    st = fail(c, PRX_ERR_INVALID, "%zu samples are too few (%d at least)", c->n,
              PRX_DETECT_LEAST_SAMPLES);
  if (!st && n) {
    const void *x = c->raw ? c->raw : c->kept;
    st = c->rc.channels ? check_in_channels(c, x, at, n, out, found)
                        : check_wideband(c, x, at, n, out, found);
  }
  if (st) fail(c, st, "%s", prx_last_error()); /* (the library's reason, where not said) */
  for (size_t j = 0; !st && j < n; j++) {
    cli_mod_carrier *k = &c->car[idx[j]];
    if (!found[j]) continue;
    k->levels = cli_mod_levels(&out[j]);
    k->code = out[j].line4 ? cli_mod_code(out[j].pi4, k->pi4) : NULL;
    c->n_warned += k->levels || k->code;
    if (!k->code) continue;
    if (out[j].pi4)
      snprintf(k->text, sizeof k->text,
               "the carrier looks like pi/4-QPSK or P25's C4FM (its 4th-power lines lie Rs/2 "
               "either side of 4 times its frequency, %.1f Hz): read as QPSK its bits are wrong, "
               "even where its blocks read locked; %s",
               out[j].freq, c->fix_pi4);
    else
      snprintf(k->text, sizeof k->text,
               "the carrier looks like QPSK, not pi/4-QPSK (one 4th-power line at 4 times its "
               "frequency, %.1f Hz): read as pi/4-QPSK its bits are wrong; %s",
               out[j].freq, c->fix_plain);
  }
  free(idx), free(at), free(out), free(found);
  c->ms = (cli_seconds() - t0) * 1e3;
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
  if (!c->kept) { /* copied (with what was borrowed first) */
    c->kept = malloc(c->cap * size);
    if (c->kept && c->raw) memcpy(c->kept, c->raw, c->n * size);
    c->raw = NULL;
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

void cli_mod_check_note(const cli_mod_check *c, const char *cmd) {
  if (c->failure[0])
    fprintf(stderr, "polyrx %s: note: the modulation (QPSK or pi/4) was not checked: %s\n", cmd,
            c->failure);
}

void cli_mod_check_free(cli_mod_check *c) {
  if (c->started && !c->done) pthread_join(c->thread, NULL);
  c->done = 1;
  free(c->kept);
  free(c->car);
  c->kept = NULL;
  c->raw = NULL;
  c->car = NULL;
  c->cap = c->n_car = 0; /* (n and ms kept: the timing line) */
}
