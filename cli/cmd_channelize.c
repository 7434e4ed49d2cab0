/* polyrx channelize: splits a wideband IQ stream (raw file, standard input or SigMF) into K
 * channels with the polyphase filter bank and writes one SigMF recording per selected channel.
 *
 * Streaming, in bounded memory: read a block of input samples, channelize it, append each
 * channel's outputs to its recording; at the end of the input feed the part of the filter tail
 * that the alignment needs and finish each recording (data, then metadata). Memory is one input
 * block plus one block of outputs, whatever the input's length. All open files are counted
 * against RLIMIT_NOFILE and every output path checked against the input before anything is
 * written (in a directory the run made none can be the input: only the other paths given are).
 *
 * Alignment: the library's output j belongs to input sample jD and shows the input delayed by
 * the prototype's group delay (M - 1)/2 (polyrx/chan.h). The command drops the first
 * lead = round((M - 1) / (2D)) outputs and keeps ceil(N / D), so that a channel's sample j is
 * the channel at input time jD + offset, offset = lead D - (M - 1)/2 (|offset| <= D/2; +1/2 input
 * sample for the Kaiser prototypes, whose even length puts the centre between two samples),
 * and the recording spans the input's time: no ramp before, no tail after.
 *
 * The run's parts are in cli/chan_*.c (chan_run.h lists them); here: the process made ready
 * for them, the run's sequence and its end. */

#include "chan_run.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan/chan_internal.h"
#include "dsp/fft_plan.h"

/* Grows the process's descriptor table to hold the recordings' data files now, before any
 * thread exists (the input's map, the CUDA runtime's start, the channelizer's workers, the
 * pipeline; cli_reserve_descriptors says why). The outputs are counted from the options (K, or
 * the --channels list), the writers as 64 at most. */
static void reserve_descriptors(const options *o) {
  if (o->to_stdout) return;
  size_t n = o->K, listed = 0;
  unsigned *list = NULL;
  if (o->channels && !prx_chan_parse_list(o->channels, (unsigned)o->K, &list, &listed)) n = listed;
  free(list);
  /* data and metadata (chan_open_outputs) */
  cli_reserve_descriptors(cli_open_descriptors() + 2 * n + 64 + 40);
}

/* The C library's heaps grow and shrink HEAP_PAD at a time instead of a few pages: glibc grows
 * a thread's heap by what each allocation needs, each growth an mprotect that takes the
 * process's mapping lock for writing (every thread's page faults wait for it), and trims a heap
 * whose free top passes 128 KiB, each trim an madvise that flushes the other cores' TLBs. A run
 * of 1024 channels (openers and writers: the recordings' stdio buffers and metadata) made 1567
 * mprotects on the 2-core VM. Memory padded so is reserved, not touched. Set while this is the
 * process's only thread, before its heaps are made. */
#define HEAP_PAD (2 << 20)
static void pad_heaps(void) {
#ifdef M_TOP_PAD
  mallopt(M_TOP_PAD, HEAP_PAD);
  mallopt(M_TRIM_THRESHOLD, 2 * HEAP_PAD);
#endif
}

static void phase_end(run_state *r, const char *name) { cli_timing_phase(&r->tm, name); }

/* The CUDA runtime's start-up on a thread (cli_warm_cuda), begun once the input is open (and
 * mapped): the channelizer's CPU part (the channel list, the prototype) runs beside it. */
static void start_warm_cuda(run_state *r) {
  r->warming = cli_warm_cuda_start(&r->warm_thread, r->o.backend);
}

static void end_warm_cuda(run_state *r) {
  cli_warm_cuda_end(r->warm_thread, r->warming);
  if (r->warming) r->ms_cuda_ready = (cli_warm_cuda_done() - r->tm.t_start) * 1e3;
  r->warming = 0;
}

/* The FFT planner's set-up and the K-point plan (prx_chan_cpu_warm, ~0.5 ms of a first plan on
 * the 2-core VM) on a thread, begun once the heaps are padded (pad_heaps: while this is the
 * only thread) and ended once the channelizer is made, whose own plans then find the planner
 * ready. Not for an explicit CUDA backend. */
static void *warm_fft(void *arg) {
  run_state *r = arg;
  r->fft_warm = prx_chan_cpu_warm(r->o.K);
  return NULL;
}

static void start_warm_fft(run_state *r) {
  if (r->o.backend == PRX_BACKEND_CUDA) return;
  pthread_attr_t attr, *ap = prx_pipe_stage_attr(&attr);
  r->fft_warming = !pthread_create(&r->fft_thread, ap, warm_fft, r);
  if (ap) pthread_attr_destroy(ap);
}

static void end_warm_fft(run_state *r) {
  if (r->fft_warming) pthread_join(r->fft_thread, NULL);
  r->fft_warming = 0;
}

static void cleanup(run_state *r) {
  end_warm_cuda(r);
  end_warm_fft(r);
  prx_fft_warm_end(r->fft_warm);
  chan_wait_outputs(r);
  if (r->open_lock_made) {
    pthread_mutex_destroy(&r->open_lock);
    pthread_cond_destroy(&r->open_cv);
  }
  if (r->o.tmpdir) {
    chan_remove_tmpdir(r);
    free(r->o.tmpdir);
  }
  /* writers still open here belong to a run that failed before streaming began: their empty
   * data files are removed and no metadata is written */
  if (r->w)
    for (size_t s = 0; s < r->n_sel; s++) prx_sigmf_writer_discard(r->w[s]);
  chan_publish_outputs(r); /* a run that failed before its end: the directory as it is (empty) */
  free(r->pub_final);
  free(r->pub_tmp);
  free(r->w);
  free(r->failed);
  free(r->hash);
  free(r->energy);
  free(r->power);
  /* the writers' buffers are left to the process's end where it follows
   * (cli_exit_frees_skipped): each one's hold is 4 MiB, mapped of its own, so its free is an
   * munmap, a TLB shoot-down on every core the process ran on. (The pipeline's blocks and slots
   * come from the arenas' padded tops: their frees are cheap, and the collection's allocations
   * reuse that memory instead of faulting fresh pages.) */
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    if (!cli_exit_frees_skipped()) {
      free(r->ws[w].pack);
      free(r->ws[w].rows);
      free(r->ws[w].row);
      free(r->ws[w].hold);
      free(r->ws[w].held);
    }
    r->ws[w].pack = r->ws[w].row = NULL;
    r->ws[w].rows = NULL;
    r->ws[w].hold = NULL;
    r->ws[w].held = NULL;
  }
  free(r->select);
  /* a CPU channelizer (its worker pool, FFTW plan and buffers: three of them mapped of their
   * own) is left to the process's end where it follows; a CUDA one (its device memory, streams
   * and page-locked sums; its calls are done, each execute ends synchronised) only where that
   * end is behind the command (chan_cuda_left_to_exit) */
  int left = r->chan && (prx_chan_backend(r->chan) == PRX_BACKEND_CUDA ? chan_cuda_left_to_exit()
                                                                       : cli_exit_frees_skipped());
  if (!left) prx_chan_destroy(r->chan);
  r->ms_map_close = cli_input_map_close(r->map, &r->map_stats);
  prx_iq_close(r->reader);
  cli_carry_own_free(&r->carry_own);
}

int cmd_channelize(int argc, char **argv) {
  run_state r;
  memset(&r, 0, sizeof r);
  cli_timing_start(&r.tm);
  int rc = chan_parse_args(argc, argv, &r.o);
  if (rc > 0) rc = 2; /* every error of the arguments is a usage error */
  /* the stop signals are for the pipeline's reader, not the worker pools made below */
  if (rc < 0) cli_hold_stop_signals();
  if (rc < 0) reserve_descriptors(&r.o); /* while this is the process's only thread */
  if (rc < 0) pad_heaps();
  if (rc < 0) start_warm_fft(&r);
  if (rc < 0) rc = chan_setup_input(&r);
  /* after the stop signals are blocked: the CUDA runtime's threads keep this mask; after the
   * input's map is made (its mapping and threads: the driver's start holds the process's mapping
   * lock, which they wait for: 45-60 ms on the H200 host) */
  if (rc < 0) start_warm_cuda(&r);
  phase_end(&r, "input");
  /* the channel list, the prototype's design and the rest of the object's CPU part run while
   * the warm thread makes the device's context; the object's device part waits for it there */
  if (rc < 0) rc = chan_setup_chan(&r);
  end_warm_fft(&r);
  phase_end(&r, "channelizer");
  end_warm_cuda(&r);
  phase_end(&r, "cuda");
  /* a file-size limit (ulimit -f) makes a write fail with EFBIG, reported, instead of killing
   * the process mid-write */
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  if (rc < 0 && !r.o.to_stdout) rc = chan_open_outputs(&r);
  phase_end(&r, "open");
  if (rc < 0) {
    if (!r.o.quiet) chan_print_banner(&r);
    /* Ctrl-C / SIGTERM end the stream cleanly within a second: what was read is channelized,
     * the tail fed for at most STOP_TAIL_SECONDS, the recordings finished; a second signal
     * kills as usual (leaving temporary files, never a .sigmf-meta) */
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    cli_progress_start(&r.progress, CMD, cli_input_samples(r.reader), r.o.quiet);
    /* the tail is fed after an input error too: every complete sample read is written */
    rc = chan_stream(&r);
    if (r.tm.on) chan_take_use(&r.use_main, RUSAGE_THREAD);
    phase_end(&r, "stream");
    cli_progress_end(&r.progress);
    cli_release_stop_signals();
    if (chan_wait_outputs(&r)) goto done;      /* reported; cleanup removes what was created */
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the last read */
    int rc_close = chan_close_outputs(&r);
    phase_end(&r, "close");
    int rc_coll = r.o.to_stdout ? -1 : chan_write_collection(&r);
    if (rc_coll < 0 && r.o.archive) rc_coll = chan_pack_archive(&r);
    int rc_pub = chan_publish_outputs(&r);
    if (rc_coll < 0) rc_coll = rc_pub;
    phase_end(&r, "collection");
    if (r.o.to_stdout && fflush(stdout) != 0 && rc < 0)
      rc = cli_error(CMD, "cannot write standard output: %s", strerror(errno));
    if (rc < 0) rc = rc_close >= 0 ? rc_close : rc_coll;
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the tail */
    double elapsed = cli_seconds() - t0;
    int rc_sum = chan_write_summaries(&r, elapsed, rc < 0 ? 0 : rc);
    if (rc < 0) rc = rc_sum;
    phase_end(&r, "summaries");
    if (r.o.quiet) chan_report_nonfinite(&r, 1);
    if (!r.o.quiet) {
      chan_print_summary(&r, elapsed);
      chan_note_leftovers(&r);
      if (rc > 0 && !r.fatal && !r.n_failed)
        fprintf(stderr,
                "polyrx %s: the outputs of the %llu complete input samples read were written\n",
                CMD, (unsigned long long)r.n_in);
    }
  }
  phase_end(&r, "notes");
done:
  if (r.open_failed) rc = 1;
  cleanup(&r);
  phase_end(&r, "cleanup");
  chan_print_timing(&r);
  free(r.ws); /* after chan_print_timing, which reads the writers' and openers' figures */
  free(r.op);
  return rc < 0 ? 0 : rc;
}
