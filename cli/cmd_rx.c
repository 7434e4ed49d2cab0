/* polyrx rx: the receiver. A wideband stream (raw IQ file, standard input or SigMF) in, every
 * listed QPSK carrier's bits out (DIR/cN.bits, optionally DIR/cN.llr), a summary table on
 * standard output and an optional JSON report; with --truth the bit error rate of every
 * carrier against the bits `polyrx gen --bits` wrote.
 *
 * Streaming, in bounded memory: the host pipeline reads blocks while the receiver (prx_rx)
 * works on the previous one on this thread; its output callback appends each carrier's new bits
 * to its files (and compares them with the truth) as they come.
 *
 * The run's parts are in cli/rx_*.c (rx_run.h lists them); here: the run's sequence and its
 * end. */

#include "rx_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_rx(int argc, char **argv) {
  run_state *r = calloc(1, sizeof *r);
  if (!r) return cli_error(CMD, "out of memory");
  pthread_mutex_init(&r->batch_lock, NULL);
  cli_timing_start(&r->tm);
  int rc = rx_parse_args(argc, argv, &r->o);
  if (rc > 0) rc = 2; /* every error of the arguments is a usage error */
  if (rc < 0) cli_hold_stop_signals();
  /* while this is the process's only thread (cli_reserve_descriptors): the carriers listed, or
   * with --detect as many as it may find */
  if (rc < 0)
    cli_reserve_descriptors(rx_descriptors_for(&r->o, r->o.detect ? MAX_CARRIERS : r->o.n_car, 64));
  if (rc < 0) rc = rx_setup(r);
  cli_warm_cuda_end(r->warm, r->warming);
  cli_timing_phase(&r->tm, "cuda");
  if (rc < 0) rc = rx_open_outputs(r);
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  cli_timing_phase(&r->tm, "outputs");
  if (rc < 0) {
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    cli_progress_start(&r->progress, CMD, cli_input_samples(r->reader), r->o.quiet);
    if (r->rx)
      rc = rx_stream(r);
    else { /* --detect found nothing the receiver can take */
      fprintf(stderr, "polyrx %s: --detect: no carrier to receive\n", CMD);
      r->n_in = r->pre_n;
    }
    cli_progress_end(&r->progress);
    cli_release_stop_signals();
    if (rc < 0 && cli_interrupted()) rc = 130;
    double elapsed = cli_seconds() - t0;
    cli_timing_phase(&r->tm, "stream");
    rx_mod_check_end(r);
    cli_timing_phase(&r->tm, "modulation");
    /* the carriers' stats, once, for the table, the warnings and the report */
    if (r->rx && !(r->stats = calloc(r->n_car, sizeof *r->stats)) && rc < 0)
      rc = cli_error(CMD, "out of memory");
    for (size_t c = 0; r->stats && c < r->n_car; c++) {
      prx_rx_get_stats(r->rx, c, &r->stats[c]);
      if (r->out[c].levels) r->stats[c].demod.warnings |= PRX_QPSK_WARN_LEVELS;
    }
    if (r->n_in && r->rx && r->stats) {
      rx_table(r, elapsed);
      rx_warnings(r);
    }
    cli_timing_phase(&r->tm, "table");
    /* the files written out before the report: its status and sizes are then final */
    if (r->out && r->rep_f) rc = rx_flush_files(r, rc);
    if (r->rep_f && (r->stats || !r->rx)) {
      /* "warning" where some carrier's bits may be noise, as demod's report */
      const char *status = rc >= 0                 ? (rc == 130 ? "interrupted" : "error")
                           : rx_carriers_warned(r) ? "warning"
                                                   : "ok";
      int rc_rep = rx_write_report(r, status, elapsed);
      if (rc < 0) rc = rc_rep;
    }
    cli_timing_phase(&r->tm, "report");
  }
  if (r->out) rc = rx_close_files(r, rc);
  for (size_t c = 0; r->out && c < r->n_car; c++) {
    carrier_out *k = &r->out[c];
    if (k->iq && (rc < 0 || rc == 130)) { /* (an interrupted run keeps what it read) */
      prx_status st = prx_sigmf_writer_close(k->iq);
      if (st) rc = cli_status_error(CMD, k->iq_base, st);
    } else if (k->iq) {
      prx_sigmf_writer_discard(k->iq);
    }
    free(k->iq_base);
    free(k->bits_name);
    free(k->llr_name);
    free(k->truth_name);
    free(k->tbuf);
  }
  rc = cli_close_output(CMD, r->rep_f, r->o.report ? r->o.report : "report", rc);
  cli_timing_phase(&r->tm, "files");
  prx_rx_get_setup_times(r->rx, &r->setup);
  rx_end_receiver(r, rc);
  cli_timing_phase(&r->tm, "receiver");
  cli_mod_check_free(&r->modc); /* (before the map its samples may lie in) */
  r->ms_map_close = cli_input_map_close(r->map, &r->map_stats);
  prx_iq_close(r->reader);
  cli_carry_own_free(&r->carry_own);
  for (size_t c = 0; r->spec_made && c < r->n_car; c++) free(r->spec_made[c]);
  free(r->spec_made);
  free(r->spec);
  free(r->pre);
  free(r->found);
  free(r->found_as);
  free(r->found_why);
  free(r->out);
  free(r->stats);
  rx_batches_free(r);
  pthread_mutex_destroy(&r->batch_lock);
  cli_timing_phase(&r->tm, "close");
  cli_timing_print(&r->tm, CMD, "%d reader(s); the modulation check %.1f ms on %zu samples",
                   r->n_readers, r->modc.ms, r->modc.n);
  if (r->tm.on && r->reused)
    fprintf(stderr, "polyrx %s: receiver: kept from the previous run, reset in %.1f ms\n", CMD,
            r->ms_keep_take);
  else if (r->tm.on)
    fprintf(stderr,
            "polyrx %s: receiver's set-up (ms): banks (the device's context met) %.1f, "
            "prototype and channelizer %.1f, rows %.1f, streams and events %.1f, device ring "
            "%.1f, flush zeros %.1f, outputs %.1f\n",
            CMD, r->setup.banks * 1e3, r->setup.chan * 1e3, r->setup.rows * 1e3,
            r->setup.gpu_streams * 1e3, r->setup.gpu_ring * 1e3, r->setup.gpu_zero * 1e3,
            r->setup.gpu_outputs * 1e3);
  if (r->tm.on) cli_input_map_timing(CMD, &r->map_stats, r->ms_map_close);
  free(r->car);
  free(r);
  return rc < 0 ? 0 : rc;
}
