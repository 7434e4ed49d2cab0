/* polyrx channelize's recordings finished (the rest of the metadata, then its hash): by their
 * writers after their last slot, by finisher threads beside them, and by the main thread for what
 * a run that ended early left. */

#include "chan_run.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "io/io_internal.h"

/* Finishes output s's recording (data, then metadata, its hash kept for the collection); a
 * failed one leaves no files. The first failure of the run (a write error counts) prints its
 * error line. On the main thread after the stream, or on the channel's writer after its last
 * slot; *ms gathers the time (POLYRX_TIMING). */
static prx_status close_one(run_state *r, size_t s, double *ms) {
  if (!r->w[s]) return PRX_ERR_IO; /* failed before */
  double t = tick(r);
  if (r->chan_error) { /* recordings without their end are none: complete or absent */
    prx_sigmf_writer_discard(r->w[s]);
    r->w[s] = NULL;
    return PRX_ERR_IO;
  }
  double p = r->n_out ? r->energy[s] / (double)r->n_out : 0;
  /* never absent and never NaN: a recording without power gets NO_POWER_DBFS */
  double db = p > 0 ? 10 * log10(p) : NO_POWER_DBFS;
  if (!(db > NO_POWER_DBFS)) db = NO_POWER_DBFS;
  if (!(db < 1000)) db = 1000;
  prx_sigmf_writer_set_number(r->w[s], "polyrx:input_samples", (double)r->n_in);
  prx_sigmf_writer_set_number(r->w[s], "polyrx:power_dbfs", db);
  prx_sigmf_writer_set_number(r->w[s], "polyrx:nonfinite_input_samples", (double)r->nonfinite_in);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  cli_alignment al = chan_alignment(r);
  prx_status st =
      cli_carry_annotations(r->w[s], r->carry, &al, r->n_out, r->in.center_freq,
                            ch.center_freq - r->in.center_freq, prx_chan_output_rate(r->chan));
  if (st) {
    prx_sigmf_writer_discard(r->w[s]);
  } else {
    st = prx_sigmf_writer_close_hash(r->w[s], r->hash[s]);
  }
  r->w[s] = NULL;
  if (st && !r->failed[s]) {
    r->failed[s] = 1;
    if (atomic_fetch_add(&r->n_failed, 1) == 0) cli_status_error(CMD, "output", st);
  }
  *ms += tick(r) - t;
  return st;
}

/* Finishes writer w's recordings not yet claimed (by it or a finisher), in channel order; *n
 * counts those complete, *ms gathers the time. */
void chan_finish_claimed(run_state *r, int w, size_t *n, double *ms) {
  size_t W = (size_t)r->n_writers, n_local = part_count(r, (size_t)w, W), i;
  while ((i = atomic_fetch_add(&r->ws[w].fin_next, 1)) < n_local)
    if (!close_one(r, part_first(r, (size_t)w, W) + i * part_step(r, W), ms)) (*n)++;
}

/* A finisher: waits for compute's last block, then takes recordings of every writer whose data
 * files have ended (looking every 20 us for those that have not) until none is left. */
static void *finisher(void *arg) {
  finisher_state *f = arg;
  run_state *r = f->r;
  pthread_mutex_lock(&r->fin_mu);
  while (!r->fin_go && !r->fin_stop) pthread_cond_wait(&r->fin_cv, &r->fin_mu);
  pthread_mutex_unlock(&r->fin_mu);
  const struct timespec look = {0, 20000};
  for (;;) {
    int pending = 0;
    for (int k = 0; k < r->n_writers; k++) {
      int w = (f->i + k) % r->n_writers; /* the finishers start at different writers */
      int state = atomic_load(&r->ws[w].fin_state);
      if (state > 0) chan_finish_claimed(r, w, &f->n_complete, &f->ms_close);
      pending |= state == 0;
    }
    pthread_mutex_lock(&r->fin_mu);
    int stop = r->fin_stop;
    pthread_mutex_unlock(&r->fin_mu);
    if (!pending || stop) break;
    nanosleep(&look, NULL);
  }
  f->t_done = tick(r);
  return NULL;
}

/* The finishers: where the cores outnumber the writers, the cores the writers leave (compute and
 * the readers are done by then) finish recordings beside them, so that the metadata and hashes
 * of 1024 recordings are spread over up to twice the threads. POLYRX_FINISHERS=N (0..64) sets
 * their number, for measurements. Made before the stream, asleep until compute's last block. */
void chan_start_finishers(run_state *r) {
  if (r->o.to_stdout) return;
  int cores = prx_cpu_count(), n = cores > r->n_writers ? cores - r->n_writers : 0;
  if (n > r->n_writers) n = r->n_writers;
  n = cli_env_int("POLYRX_FINISHERS", 0, 64, n);
  if (n <= 0 || !(r->fin = calloc((size_t)n, sizeof *r->fin))) return;
  pthread_mutex_init(&r->fin_mu, NULL);
  pthread_cond_init(&r->fin_cv, NULL);
  pthread_attr_t attr, *ap = prx_pipe_stage_attr(&attr);
  for (int i = 0; i < n; i++) {
    r->fin[r->n_fin].r = r;
    r->fin[r->n_fin].i = i;
    if (!pthread_create(&r->fin[r->n_fin].thread, ap, finisher, &r->fin[r->n_fin])) r->n_fin++;
  }
  if (ap) pthread_attr_destroy(ap);
}

/* Lets the finishers go (compute has its last block) or, with stop, end. */
void chan_signal_finishers(run_state *r, int stop) {
  if (!r->fin) return;
  pthread_mutex_lock(&r->fin_mu);
  r->fin_go = 1;
  r->fin_stop |= stop;
  pthread_cond_broadcast(&r->fin_cv);
  pthread_mutex_unlock(&r->fin_mu);
}

/* After the pipeline: the finishers ended and joined, their counts added to the writers'. */
void chan_end_finishers(run_state *r) {
  if (!r->fin) return;
  chan_signal_finishers(r, 1);
  for (int i = 0; i < r->n_fin; i++) {
    pthread_join(r->fin[i].thread, NULL);
    r->n_complete += r->fin[i].n_complete;
    r->n_fin_done += r->fin[i].n_complete;
    r->ms_fin += r->fin[i].ms_close;
    if (r->fin[i].t_done > r->t_fin_done) r->t_fin_done = r->fin[i].t_done;
  }
  r->n_fin_made = r->n_fin;
  pthread_mutex_destroy(&r->fin_mu);
  pthread_cond_destroy(&r->fin_cv);
  free(r->fin);
  r->fin = NULL;
  r->n_fin = 0;
}

/* Finishes the recordings the writers have not (a run that ended without its last slot).
 * Returns the first error's exit code. */
int chan_close_outputs(run_state *r) {
  if (!r->w) return -1;
  /* a writer without its last slot holds no row of a recording kept: the pipeline writes the
   * flush's slot after a read error or a stop, and ends without it only after a compute error
   * (every recording discarded) or a writer's (every output failed, or an opener) */
  for (int w = 0; w < r->n_writers; w++) r->n_complete += r->ws[w].n_complete;
  for (size_t s = 0; s < r->n_sel; s++)
    if (r->w[s] && !close_one(r, s, &r->ms_close_io)) r->n_complete++;
  return r->n_failed ? 1 : -1;
}
