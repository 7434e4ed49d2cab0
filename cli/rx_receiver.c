/* polyrx rx's receiver: made for the run or, in a resident process (polyrx serve), the one an
 * earlier run of the same configuration kept, taken again; at the run's end kept, dropped or
 * destroyed. */

#include "rx_run.h"

#include <stdlib.h>
#include <string.h>

/* ---- the receiver kept between served runs ----
 *
 * A resident process (polyrx serve, cli_rx_keep_enable) keeps the receiver of its last run that
 * ended well: a run whose receiver configuration (input rate, centre and format, K, taps, the
 * carriers in order with their settings, the backend, block, bit and LLR options) is the same
 * takes it after prx_rx_reset, which makes it as if just created (the same bits, stats and
 * report as a fresh one), instead of making 1024 carriers' banks and demodulators again. One at
 * most: dropped before a receiver of another configuration is made, after a run that failed,
 * before any other command of the server (which may need its memory: cli_rx_keep_drop) and at
 * the server's end. Its callbacks' user is the slot `run`, which names the run it serves. */
static struct {
  int enabled;
  prx_rx *rx;
  prx_rx_config cfg; /* as made; carriers: car */
  prx_rx_carrier *car;
  struct run_state *run;
} rx_keep;

void cli_rx_keep_enable(void) { rx_keep.enabled = 1; }

void cli_rx_keep_drop(void) {
  prx_rx_destroy(rx_keep.rx);
  free(rx_keep.car);
  rx_keep.rx = NULL;
  rx_keep.car = NULL;
  rx_keep.run = NULL;
}

static int same_carrier(const prx_rx_carrier *a, const prx_rx_carrier *b) {
  return a->freq == b->freq && a->symbol_rate == b->symbol_rate && a->rolloff == b->rolloff &&
         a->ambiguity == b->ambiguity && a->pilot_period == b->pilot_period &&
         a->pilot_len == b->pilot_len;
}

/* Whether a receiver made with a would be the one made with b (the callbacks are rx_stream.c's,
 * their user the run's slot). */
static int same_receiver(const prx_rx_config *a, const prx_rx_config *b) {
  if (a->sample_rate != b->sample_rate || a->center_freq != b->center_freq ||
      a->channels != b->channels || a->taps_per_channel != b->taps_per_channel ||
      a->atten_db != b->atten_db || a->in_format != b->in_format ||
      a->n_carriers != b->n_carriers || a->block_symbols != b->block_symbols ||
      a->cfo_span_symbols != b->cfo_span_symbols || a->packed != b->packed || a->llrs != b->llrs ||
      a->on_output != b->on_output || a->on_channel != b->on_channel || a->threads != b->threads ||
      a->backend != b->backend || a->device != b->device || a->block_samples != b->block_samples)
    return 0;
  for (size_t i = 0; i < a->n_carriers; i++)
    if (!same_carrier(&a->carriers[i], &b->carriers[i])) return 0;
  return 1;
}

/* The run's receiver: the kept one where it was made with the same configuration (reset: as if
 * just created), else a new one (kept at the run's end where the process keeps receivers). */
prx_status rx_make_receiver(run_state *r) {
  prx_rx_config c = r->rc;
  if (!rx_keep.enabled) return prx_rx_create(&c, &r->rx);
  if (rx_keep.rx && same_receiver(&rx_keep.cfg, &c)) {
    double t0 = cli_seconds();
    prx_rx_reset(rx_keep.rx);
    r->ms_keep_take = (cli_seconds() - t0) * 1e3;
    r->rx = rx_keep.rx;
    rx_keep.run = r;
    r->kept = r->reused = 1;
    return PRX_OK;
  }
  cli_rx_keep_drop(); /* its memory freed before the new one is made */
  rx_keep.car = malloc(c.n_carriers * sizeof *rx_keep.car);
  if (!rx_keep.car) return prx_rx_create(&c, &r->rx); /* not kept */
  memcpy(rx_keep.car, c.carriers, c.n_carriers * sizeof *rx_keep.car);
  c.user = &rx_keep.run;
  prx_status st = prx_rx_create(&c, &r->rx);
  if (st) {
    cli_rx_keep_drop();
    return st;
  }
  rx_keep.rx = r->rx;
  rx_keep.cfg = c;
  rx_keep.cfg.carriers = rx_keep.car;
  rx_keep.run = r;
  r->kept = 1;
  return PRX_OK;
}

/* The run's receiver at its end: the workers (--devices, --workers) destroyed, the kept one left
 * for the next run where this one ended well (else dropped), any other destroyed or left to the
 * process's end. */
void rx_end_receiver(run_state *r, int rc) {
  if (r->multi)
    prx_rx_multi_destroy(r->multi); /* r->rx is one of its workers' */
  else if (r->kept && rc < 0)
    rx_keep.run = NULL; /* kept for the next run */
  else if (r->kept)
    cli_rx_keep_drop(); /* a failed or stopped run's receiver is not reused */
  else if (!(cli_exit_frees_skipped() && r->rx && prx_rx_backend(r->rx) == PRX_BACKEND_CPU))
    prx_rx_destroy(r->rx);
  /* (a CPU receiver is left to the process's end where it follows: the kernel takes its pages
   * back at once, where a destroy frees each channel's buffers on its own, ~45 ms for 1024
   * carriers on the development VM) */
}
