/* The parts of polyrx channelize (cmd_channelize.c runs them in sequence): the run's state
 * shared by them, and what each part offers the others. Private to the command.
 *
 *   chan_args.c      the arguments (options) and the usage text
 *   chan_setup.c     the input opened, the channelizer made, the block and the writers chosen
 *   chan_paths.c     the recordings' names; no output path is the input or another output
 *   chan_open.c      the recordings created (openers), before or beside the stream
 *   chan_outdir.c    the output directory: made, or made hidden to be published; leftovers
 *   chan_publish.c   the hidden directory published as DIR at the end
 *   chan_archive.c   -o NAME.sigmf: the recordings packed into one archive
 *   chan_stream.c    the pipeline run: its buffers, stages and writers
 *   chan_compute.c   the reader's and compute's stages
 *   chan_write.c     the writers' stage: power sums, packing, appends (the per-block path)
 *   chan_finish.c    the recordings finished: the writers' end, the finishers, the rest
 *   chan_results.c   the collection, and what --report and --occupancy are made from
 *   chan_messages.c  the banner, the summary and the warnings on standard error
 *   chan_timing.c    POLYRX_TIMING: the threads' CPU use and the timing lines
 * and beside them chan_power.c (the power sums, chan_power.h), chan_summary.c (--report,
 * --occupancy) and sigmf_carry.c (a SigMF input's captures and annotations carried). */
#ifndef CLI_CHAN_RUN_H
#define CLI_CHAN_RUN_H

#include "cli.h"

#include "chan_power.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h> /* RUSAGE_THREAD, RUSAGE_SELF: chan_take_use's and chan_cpu_ms's who */

#define CMD "channelize"
#define DEFAULT_BLOCK ((size_t)1 << 18) /* CPU under 4 writers, CUDA's least: choose_block */
#define SMALL_BLOCK ((size_t)1 << 16)   /* the CPU's largest with 4 writers or more */
#define GPU_BLOCK ((size_t)1 << 20)     /* the CUDA backend's default block, within GPU_BUDGET */
#define GPU_BUDGET ((size_t)768 << 20)  /* output bytes in flight its default block allows */
#define OUT_DEPTH 3 /* output slots in flight (OUT_DEPTH_SMALL: chan_stream.c) */
#define MAX_BLOCK ((size_t)1 << 26)
#define NO_POWER_DBFS (-999.0) /* polyrx:power_dbfs of a recording without power */
#define NF_RING 32 /* > the pipeline's input blocks in flight (at most 19: cli_pipe_readers) */

typedef struct {
  const char *input, *format, *rate, *center, *channels, *outdir, *out_format;
  const char *report, *occupancy; /* --report FILE.json, --occupancy FILE.png (NULL: none) */
  const char *archive; /* -o NAME.sigmf: the recordings are packed into it; outdir is then a
                          temporary directory beside it */
  char *tmpdir;        /* that directory's name (malloc'd) */
  unsigned long K, oversample, taps_per_channel, threads, block;
  double atten, cutoff;
  prx_backend backend;
  prx_format outf; /* --out-format */
  int quiet, block_given, to_stdout;
  int swap_iq;                  /* --swap-iq */
  const char *start, *duration; /* --start, --duration: the time range read */
} options;

/* POLYRX_TIMING: one thread's (or the process's) CPU time, minor page faults and context
 * switches (voluntary: it waited; involuntary: it was preempted), from getrusage. */
typedef struct {
  double cpu_ms;
  long faults, waits, preempted;
  int taken;
} thread_use;

typedef struct run_state {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in;                   /* format, rate and centre in use */
  const prx_sigmf_recording *carry; /* what the channels carry (cli_carry_source), or NULL */
  cli_carry_own carry_own;
  prx_chan *chan;
  unsigned *select;
  size_t n_sel;
  prx_sigmf_writer **w;
  unsigned char *failed; /* per selected channel: its recording had a write error */
  _Atomic size_t n_failed;
  size_t n_complete;
  double *energy;     /* sum |y|^2 per selected channel (written by the channel's writer) */
  chan_power *power;  /* per selected channel: the sums of the group in progress (its writer's) */
  size_t power_group; /* input samples per power sum group (chan_power.h): main's blocks */
  /* the CUDA backend packs the rows into the output format on the device and forms the power
   * sums there (prx_chan_power_take, each block's after its rows in the slot): the writers
   * only add the sums and copy bytes; row_osz is the rows' bytes per sample */
  int dev_post;
  size_t row_osz;
  /* the CPU channelizer writes the slots' rows with streaming stores (prx_chan_config's
   * stream_out): the writers, not compute, read them next */
  int stream_out;
  /* the pipeline: an output slot is a slot_head, then n_sel rows of `stride` outputs, or with
   * the frames layout (the CPU channelizer's PRX_CHAN_FRAMES) up to `stride` frames of n_sel
   * outputs, which each writer gathers its channels from (gather_frames) */
  int frames;
  int n_writers;
  struct writer_state *ws;
  size_t stride;
  int stop_seen; /* compute saw the stop signal: later blocks are not channelized */
  /* non-finite input samples per block, counted by the reader (chan_read), taken by compute in
   * the same order; NF_RING exceeds the input blocks in flight */
  size_t nf_count[NF_RING];
  uint64_t nf_read, nf_taken;
  size_t chunk;     /* input samples per execute (a stop is noticed between two) */
  uint64_t lead;    /* library outputs dropped at the start (the group delay, in outputs) */
  double offset;    /* output j is the channel at input time jD + offset (input samples) */
  uint64_t n_in;    /* input samples channelized */
  uint64_t fed;     /* samples given to the channelizer: the input, then the tail's zeros */
  uint64_t lib_out; /* library outputs per channel so far (the first `lead` are dropped) */
  uint64_t n_out;   /* outputs written per channel */
  uint64_t target;  /* ceil(n_in / D): the outputs the recordings should hold */
  uint64_t nonfinite_in, nonfinite_out, saturated;
  int tail_cut;   /* a stop signal cut the filter tail short */
  int chan_error; /* the channelizer failed: the recordings would lack their end */
  int fatal;      /* a channelizer error, or every output failed: nothing more is written */
  cli_progress progress;
  /* the recordings are created by n_openers openers (threads while the stream starts, or the
   * main thread before it: chan_open_outputs); opener i creates outputs i, i + n_openers, ... */
  struct opener_state *op;
  int n_openers;
  pthread_mutex_t open_lock;
  pthread_cond_t open_cv; /* the openers' progress, for the writers */
  int open_lock_made, open_threaded;
  int open_slow;   /* POLYRX_OPENER=slow: a pause before each recording (the tests') */
  int outdir_made; /* this run made the output directory: no earlier recordings in it */
  /* the directory published whole (chan_make_hidden_dir): the recordings go to pub_tmp, a hidden
   * directory beside DIR (o.outdir while they are written), renamed to DIR (pub_given, as given;
   * pub_final without its trailing slashes) once they are all finished (chan_publish_outputs) */
  const char *pub_given;
  char *pub_final, *pub_tmp;
  int published;
  int meta_ahead;     /* the openers make each recording's metadata file (prepare_meta) */
  size_t data_buffer; /* a block's row in bytes where the data files' buffers are staggered
                         (data_buffer()), else 0 */
  _Atomic int open_failed;
  int n_open_done;   /* openers finished (under open_lock) */
  char (*hash)[129]; /* per output: the SHA-512 of its metadata once finished ("" before) */
  /* the CUDA runtime's start (module, context) on a thread of its own from the start (warm_cuda) */
  pthread_t warm_thread;
  int warming;
  double ms_cuda_ready; /* POLYRX_TIMING: when the context was made, ms from the command's start */
  /* the FFT planner made ready on a thread of its own while the input is opened and the
   * prototype designed (warm_fft) */
  pthread_t fft_thread;
  int fft_warming;
  void *fft_warm;
  /* the finishers (chan_start_finishers): fin_go once compute has its last block, fin_stop once the
   * pipeline has ended */
  struct finisher_state *fin;
  int n_fin;
  int fin_go, fin_stop; /* under fin_mu */
  pthread_mutex_t fin_mu;
  pthread_cond_t fin_cv;
  int n_fin_made;    /* POLYRX_TIMING: the finishers, */
  size_t n_fin_done; /* the recordings they finished */
  double ms_fin;     /* and their time in close_one */
  double t_flush;    /* POLYRX_TIMING: when compute began its flush (the tail's origin) */
  double t_fin_done; /* and when the last finisher ended */
  /* POLYRX_TIMING: the pipeline's buffers (made, freed) and the first block's compute, ms */
  double ms_alloc, ms_free, ms_first;
  int computed;
  cli_timing tm; /* POLYRX_TIMING: the wall time of each phase, printed at the end */
  thread_use use_reader, use_main; /* and each writer's and opener's in their states */
  double ms_exec;     /* compute: in prx_chan_execute (the rest of the stream it waited or led) */
  double ms_exec_cpu; /* compute: its thread's CPU time in prx_chan_execute */
  /* POLYRX_TIMING: the stream's start, compute's first execute (ms after it) and the end of
   * its last (ms); the stream's time after that last execute */
  double t_stream, ms_first_exec, t_exec_end, ms_after_exec;
  prx_pipe_result pipe_res; /* the pipeline's counts (compute's waits for POLYRX_TIMING) */
  double ms_close_io;       /* the main thread's recordings finished (close_one) */
  int n_readers;            /* the pipeline's reader threads (cli_pipe_readers) */
  /* the input in place (cli_input_map_open), with the CUDA backend; its close, ms */
  prx_pipe_map *map;
  prx_pipe_map_stats map_stats; /* taken as it closes */
  double ms_map_close;
} run_state;

/* What one writer thread keeps: its channels are part w of the W writers (part_first ...) */
typedef struct writer_state {
  void *pack;     /* packed samples of one row (or, to standard output, of all rows interleaved) */
  prx_cf32 *rows; /* the frames layout: its channels' outputs of the slot gathered into rows of
                     `stride` outputs (gather_frames) */
  void *row;      /* to standard output as cf16 or ci16: one row packed before it is interleaved */
  int ready; /* its channels' recordings are created and hold nothing back (chan_wait_opened) */
  /* the rows of channels whose recordings are still being created, packed, kept here instead
   * of waiting for the opener (hold_row): local channel i (part_index) has held[i] bytes at
   * hold + i * region; made on first use */
  unsigned char *hold;
  size_t *held, region;
  size_t rows_held; /* POLYRX_TIMING: rows kept back so */
  uint64_t nonfinite_out, saturated;
  chan_power_group group; /* where its channels' power sums stand */
  /* POLYRX_TIMING: wall ms in the power sums, the appends, the data files' end, waiting for
   * the opener; the thread's use at its last slot */
  double ms_energy, ms_write, ms_end, ms_wait, ms_close;
  /* POLYRX_TIMING: when its last slot began, its data files ended, its part of the finish ended */
  double t_last, t_ended, t_done;
  thread_use use;
  size_t n_complete; /* recordings it finished */
  /* the finish of its recordings, shared with the finishers: 0 not yet, 1 their data ended (the
   * recordings may be finished), -1 not to be finished here; the next of its recordings to
   * claim */
  _Atomic int fin_state;
  _Atomic size_t fin_next;
} writer_state;

/* A finisher: a thread that sleeps through the stream and, once compute has its last block,
 * finishes recordings (close_one) beside their writers. */
typedef struct finisher_state {
  struct run_state *r;
  int i;
  pthread_t thread;
  size_t n_complete;
  double ms_close, t_done; /* t_done: POLYRX_TIMING's clock at its end */
} finisher_state;

/* One opener: creates outputs i, i + n_openers, ...; the first `opened` of them are created. */
typedef struct opener_state {
  struct run_state *r;
  int i, done;
  pthread_t thread;
  int started; /* a thread was made (joined by chan_wait_outputs) */
  _Atomic size_t opened;
  thread_use use;
} opener_state;

/* The head of an output slot: of the library outputs in its rows (out_n of them per channel),
 * the first `skip` are dropped (the alignment) and the next `keep` written; `last` marks the
 * flush's slot, the recordings' end. */
typedef struct {
  uint64_t skip, keep;
  int last, group_end; /* group_end: the power sums' group ends with this block (chan_power.h) */
} slot_head;
#define SLOT_ROWS 64 /* the rows start here, after the head, 64-byte aligned */

/* A clock in ms for POLYRX_TIMING's sums (0 without it: no clock read). */
static inline double tick(const run_state *r) { return r->tm.on ? cli_seconds() * 1e3 : 0; }

/* Part p of P (writer p of the writers, opener p of the openers): with the rows layout every
 * P-th channel from p; with the frames layout one contiguous range of channels, so that a
 * writer reads whole lines of each frame and none of another writer's. Its channels are
 * part_first + i * part_step for i < part_count; output s is in part part_of, at part_index. */
static inline size_t part_first(const run_state *r, size_t p, size_t P) {
  return r->frames ? r->n_sel * p / P : p;
}
static inline size_t part_step(const run_state *r, size_t P) { return r->frames ? 1 : P; }
static inline size_t part_count(const run_state *r, size_t p, size_t P) {
  if (r->frames) return r->n_sel * (p + 1) / P - r->n_sel * p / P;
  return r->n_sel > p ? (r->n_sel - p + P - 1) / P : 0;
}
static inline size_t part_of(const run_state *r, size_t s, size_t P) {
  return r->frames ? ((s + 1) * P - 1) / r->n_sel : s % P;
}
static inline size_t part_index(const run_state *r, size_t s, size_t P) {
  return r->frames ? s - part_first(r, part_of(r, s, P), P) : s / P;
}

/* The bytes of a slot's rows: n_sel rows of `stride` outputs in the rows' format (cf16 and ci16
 * rows packed on the device take half of cf32's: the page-locked slots of all 1024 channels are
 * 3 x 8.4 MB instead of 3 x 16.8, ~0.5 ms per MiB to make on the H200 host), to a whole line. */
static inline size_t slot_rows_bytes(const run_state *r) {
  return (r->n_sel * r->stride * r->row_osz + 63) & ~(size_t)63;
}

/* The device's power sums of the slot's block (dev_post), after its rows. */
static inline double *slot_sums(const run_state *r, const void *slot) {
  return (double *)((unsigned char *)slot + SLOT_ROWS + slot_rows_bytes(r));
}

/* Non-zero when output s's recording is created (its opener's count past it). */
static inline int is_opened(run_state *r, size_t s) {
  size_t O = (size_t)r->n_openers;
  const opener_state *op = &r->op[part_of(r, s, O)];
  return atomic_load_explicit(&op->opened, memory_order_acquire) >= part_index(r, s, O) + 1;
}

/* ---- what the parts offer each other (each function's comment is at its definition) ---- */

/* chan_args.c: the options from the arguments; -1 to go on, else the exit code (usage printed
 * for -h and for no argument) */
int chan_parse_args(int argc, char **argv, options *o);

/* chan_setup.c: -1 to go on, else an exit code (reported) */
int chan_setup_input(run_state *r);
int chan_setup_chan(run_state *r);
cli_alignment chan_alignment(const run_state *r);

/* chan_paths.c */
int chan_name_width(unsigned K);
void chan_output_base(const run_state *r, size_t s, char *buf, size_t cap);
int chan_check_paths(run_state *r);

/* chan_open.c */
int chan_open_outputs(run_state *r);
int chan_wait_opened(run_state *r, size_t s);
int chan_wait_all_opened(run_state *r);
int chan_wait_outputs(run_state *r);

/* chan_outdir.c */
int chan_make_dirs(const char *path, int *created);
int chan_make_hidden_dir(run_state *r);
const char *chan_shown_dir(const run_state *r);
void chan_note_leftovers(const run_state *r);

/* chan_publish.c */
int chan_publish_outputs(run_state *r);

/* chan_archive.c */
int chan_pack_archive(run_state *r);
void chan_remove_tmpdir(run_state *r);

/* chan_stream.c */
int chan_stream(run_state *r);
int chan_cuda_left_to_exit(void);

/* chan_compute.c: the pipeline's read and compute stages (ctx: the run_state) */
prx_status chan_read(void *ctx, void *buf, size_t max, size_t *n);
prx_status chan_read_at(void *ctx, void *buf, size_t max, uint64_t first, size_t *n);
prx_status chan_compute_timed(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                              size_t *out_n);

/* chan_write.c: the pipeline's write stage (ctx: the run_state) */
prx_status chan_write(void *ctx, int w, const void *out, size_t out_n, uint64_t block);

/* chan_finish.c */
void chan_finish_claimed(run_state *r, int w, size_t *n, double *ms);
void chan_start_finishers(run_state *r);
void chan_signal_finishers(run_state *r, int stop);
void chan_end_finishers(run_state *r);
int chan_close_outputs(run_state *r);

/* chan_results.c */
int chan_write_summaries(run_state *r, double elapsed, int exit_status);
int chan_write_collection(run_state *r);

/* chan_messages.c */
void chan_report_nonfinite(const run_state *r, int quiet);
void chan_print_summary(run_state *r, double elapsed);
void chan_print_banner(const run_state *r);

/* chan_timing.c */
double chan_cpu_ms(int who);
void chan_take_use(thread_use *u, int who);
void chan_print_timing(const run_state *r);

#endif
