/* polyrx channelize's recordings created: the output directory and the open-file limit checked,
 * then each recording opened with the metadata known at the start, by openers (threads beside
 * the stream, or the main thread before it); the writers wait for them here. */

#include "chan_run.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io_internal.h"

#define EXT_VERSION "0.2.0" /* the polyrx SigMF extension, docs/polyrx.sigmf-ext.md */

/* Makes sure `need` files can be open at once (cli_raise_open_files), else says why not. */
static int ensure_open_files(size_t need, size_t n_channels) {
  unsigned long long cur = 0, max = 0;
  if (!cli_raise_open_files(need, &cur, &max)) return 0;
  return cli_error(CMD,
                   "writing %zu channels needs %zu open files, but the limit is %llu (hard "
                   "limit %llu): select fewer channels with --channels, or raise the hard limit "
                   "(ulimit -Hn)",
                   n_channels, need, cur, max);
}

/* The metadata every channel's recording carries (the polyrx extension, described in
 * docs/polyrx.sigmf-ext.md). */
static prx_status describe(run_state *r, size_t s, prx_sigmf_writer *w) {
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  size_t M;
  prx_chan_taps(r->chan, &M);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  double fs = r->in.sample_rate, gd = prx_chan_group_delay(r->chan);
  prx_status st;
  if ((st = prx_sigmf_writer_add_extension(w, "polyrx", EXT_VERSION, 1))) return st;
  const struct {
    const char *key;
    double v;
  } nums[] = {
      {"polyrx:channel_index", ch.index},
      {"polyrx:channels", K},
      {"polyrx:decimation", D},
      {"polyrx:channel_spacing", fs / K},
      {"polyrx:taps_per_channel", (double)r->o.taps_per_channel},
      {"polyrx:prototype_taps", (double)M},
      {"polyrx:atten_db", r->o.atten},
      {"polyrx:cutoff", r->o.cutoff},
      {"polyrx:group_delay_input_samples", gd},
      {"polyrx:group_delay_seconds", gd / fs},
      {"polyrx:time_offset_input_samples", r->offset},
      {"polyrx:input_sample_rate", fs},
      {"polyrx:input_center_frequency", r->in.center_freq},
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if ((st = prx_sigmf_writer_set_number(w, nums[i].key, nums[i].v))) return st;
  if (r->o.swap_iq && (st = prx_sigmf_writer_set_number(w, "polyrx:input_swap_iq", 1))) return st;
  if ((st = prx_sigmf_writer_set_string(w, "polyrx:input_format", prx_format_name(r->in.format))))
    return st;
  return prx_sigmf_writer_set_string(w, "polyrx:input", r->o.input);
}

/* The data file's buffer of output s where the rows are small (data_buffer set): a whole
 * number of rows, at least 4 KiB, 16 sizes over each writer's channels (s / W: their local
 * index), so that a writer's channels go to the file system in different blocks: with one size
 * all of them fill their buffers in the same block (every 16 blocks of 2^14 samples at K = 1024,
 * D = 512, cf32), and the writer's 128 writes there take about three blocks' compute, which
 * compute waits for unless the ring holds more slots than its cache holds well. */
static size_t data_buffer(const run_state *r, size_t s) {
  size_t row = r->data_buffer, n0 = (4096 + row - 1) / row;
  return row * (n0 + part_index(r, s, (size_t)r->n_writers) % 16);
}

/* Creates output s's recording (a temporary data file) with the metadata known at the start. */
static prx_status open_one(run_state *r, size_t s) {
  const options *o = &r->o;
  unsigned K = prx_chan_channels(r->chan);
  size_t cap = strlen(o->outdir) + 32;
  char *base = malloc(cap), desc[160];
  if (!base) return PRX_ERR_NOMEM;
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  chan_output_base(r, s, base, cap);
  snprintf(desc, sizeof desc, "polyrx channelize: channel %u of %u", ch.index, K);
  prx_sigmf_meta m = prx_sigmf_meta_default();
  m.sample_rate = prx_chan_output_rate(r->chan);
  m.description = desc;
  const prx_sigmf_recording *rec = r->carry;
  cli_alignment al = chan_alignment(r);
  double off = ch.center_freq - r->in.center_freq;
  char datetime[48];
  m.format = o->outf;
  prx_status st = cli_carry_first_capture(rec, &al, r->in.center_freq, off, &m, datetime);
  m.center_freq = ch.center_freq;
  /* in a directory made by this run there is no earlier recording to remove */
  if (!st)
    st = r->pub_tmp       ? prx_sigmf_writer_open_direct(base, &m, &r->w[s])
         : r->outdir_made ? prx_sigmf_writer_open_new(base, &m, &r->w[s])
                          : prx_sigmf_writer_open(base, &m, &r->w[s]);
  if (!st && r->meta_ahead) st = prx_sigmf_writer_prepare_meta(r->w[s]);
  if (!st && r->data_buffer) st = prx_sigmf_writer_set_buffer(r->w[s], data_buffer(r, s));
  if (!st) st = describe(r, s, r->w[s]);
  if (!st) st = cli_carry_captures(r->w[s], rec, &al, off);
  free(base);
  return st;
}

#define OPEN_NOTIFY 32 /* an opener wakes the writers every this many recordings */

/* Creates recordings i, i + n_openers, ..., on threads of their own where there are cores for
 * them (1024 recordings: 15-30 ms of directory operations and metadata on one thread; 3-9 ms of
 * CPU on each of 8 openers on the 16-core GPU host): the pipeline starts and the first blocks
 * are channelized meanwhile; a writer keeps the rows of its channels whose recordings do not
 * exist yet (hold_row) and appends them once they do, so that compute does not wait for the
 * openers through the writers, and waits for a recording only where its room for them is full
 * or at the last slot (chan_wait_opened). */
static void *opener(void *arg) {
  opener_state *op = arg;
  run_state *r = op->r;
  size_t O = (size_t)r->n_openers, k = 0, n = part_count(r, (size_t)op->i, O);
  for (size_t s = part_first(r, (size_t)op->i, O); k < n && !r->open_failed; s += part_step(r, O)) {
    if (r->open_slow) nanosleep(&(struct timespec){0, 2000000}, NULL);
    prx_status st = open_one(r, s);
    if (st) {
      pthread_mutex_lock(&r->open_lock);
      /* the run ends with nothing written: cleanup discards the others */
      if (!r->open_failed) cli_status_error(CMD, "output", st);
      r->open_failed = 1;
      pthread_mutex_unlock(&r->open_lock);
      break;
    }
    atomic_store_explicit(&op->opened, ++k, memory_order_release); /* r->w[s] is set */
    if (k % OPEN_NOTIFY == 0) {
      pthread_mutex_lock(&r->open_lock);
      pthread_cond_broadcast(&r->open_cv);
      pthread_mutex_unlock(&r->open_lock);
    }
  }
  if (r->tm.on && r->open_threaded) chan_take_use(&op->use, RUSAGE_THREAD);
  pthread_mutex_lock(&r->open_lock);
  op->done = 1;
  r->n_open_done++;
  pthread_cond_broadcast(&r->open_cv);
  pthread_mutex_unlock(&r->open_lock);
  return NULL;
}

/* Waits until output s's recording is created; non-zero when it cannot be (reported). */
int chan_wait_opened(run_state *r, size_t s) {
  if (is_opened(r, s)) return 0;
  const opener_state *op = &r->op[part_of(r, s, (size_t)r->n_openers)];
  pthread_mutex_lock(&r->open_lock);
  while (!is_opened(r, s) && !op->done) pthread_cond_wait(&r->open_cv, &r->open_lock);
  pthread_mutex_unlock(&r->open_lock);
  return !is_opened(r, s);
}

/* Waits until every opener has finished; non-zero when a recording could not be created. */
int chan_wait_all_opened(run_state *r) {
  pthread_mutex_lock(&r->open_lock);
  while (r->n_open_done < r->n_openers) pthread_cond_wait(&r->open_cv, &r->open_lock);
  int failed = r->open_failed;
  pthread_mutex_unlock(&r->open_lock);
  return failed;
}

/* Checks the output directory and paths, then starts creating the recordings (openers). */
int chan_open_outputs(run_state *r) {
  const options *o = &r->o;
  int fresh = 1;
  if (chan_make_hidden_dir(r) != 0 && chan_make_dirs(o->outdir, &fresh) != 0)
    return cli_error(CMD, "cannot create output directory '%s': %s", o->outdir, strerror(errno));
  /* those open now, the metadata files written at close (one per writer) and a margin, plus
   * one data file per channel */
  size_t need = cli_open_descriptors() + r->n_sel + r->n_writers + 8;
  if (ensure_open_files(need, r->n_sel)) return 1;
  /* in a directory made just now no output can be the input or another file, unless a path of
   * another kind is given (--report, --occupancy, -o NAME.sigmf): the check (a stat and a link
   * check of each of 2 K paths: 5-11 ms for 1024 channels) is then left out */
  int rc = fresh && !o->report && !o->occupancy && !o->archive ? -1 : chan_check_paths(r);
  if (rc >= 0) return rc;
  r->outdir_made = fresh;
  if (pthread_mutex_init(&r->open_lock, NULL) != 0) return cli_error(CMD, "cannot make a mutex");
  if (pthread_cond_init(&r->open_cv, NULL) != 0) {
    pthread_mutex_destroy(&r->open_lock);
    return cli_error(CMD, "cannot make a condition variable");
  }
  r->open_lock_made = 1;
  /* with fewer than 4 cores (compute, writer, reader and an opener), the openers compete with
   * the stream for them and slow it (2-core VM: +10 % with all 1024 channels): the main thread
   * creates the recordings before the stream. Else one opener per writer, so that each writer
   * follows one opener. POLYRX_OPENER=thread or inline chooses (the tests' way to the openers'
   * threads on a small machine, a measurement); slow: threads that pause 2 ms before each
   * recording (the tests' way to the writers' held rows, hold_row). */
  const char *how = getenv("POLYRX_OPENER");
  r->open_slow = how && !strcmp(how, "slow");
  r->open_threaded = how && (!strcmp(how, "thread") || r->open_slow) ? 1
                     : how && !strcmp(how, "inline")                 ? 0
                                                                     : prx_cpu_count() >= 4;
  r->n_openers = r->open_threaded ? r->n_writers : 1;
  /* the openers' threads make the metadata's unnamed files too, beside the stream, where the
   * limit allows one more descriptor a recording (prx_sigmf_writer_prepare_meta): not at the end,
   * where 1024 recordings finish in series (~8 us each on the 16-core GPU host's tmpfs); an
   * opener on the main thread would make them before the stream instead (2-core VM: +5 ms) */
  r->meta_ahead = r->open_threaded && cli_raise_open_files(need + r->n_sel, NULL, NULL) == 0;
  r->op = calloc((size_t)r->n_openers, sizeof *r->op);
  if (!r->op) return cli_error(CMD, "out of memory");
  for (int i = 0; i < r->n_openers; i++) {
    r->op[i].r = r;
    r->op[i].i = i;
  }
  /* the openers on the pipeline's stage stacks (kept in the C library's cache when joined) */
  pthread_attr_t attr;
  pthread_attr_t *ap = r->open_threaded ? prx_pipe_stage_attr(&attr) : NULL;
  for (int i = 0; i < r->n_openers; i++) {
    opener_state *op = &r->op[i];
    op->started = r->open_threaded && pthread_create(&op->thread, ap, opener, op) == 0;
    if (!op->started) opener(op);
  }
  if (ap) pthread_attr_destroy(ap);
  return r->open_failed && !r->open_threaded ? 1 : -1;
}

/* Waits until every recording is created; non-zero when one could not be. Called on the main
 * thread only (the writers wait with chan_wait_opened). */
int chan_wait_outputs(run_state *r) {
  for (int i = 0; r->op && i < r->n_openers; i++)
    if (r->op[i].started) {
      pthread_join(r->op[i].thread, NULL);
      r->op[i].started = 0;
    }
  return r->open_failed;
}
