/* The parts of polyrx rx (cmd_rx.c runs them in sequence): the run's state shared by them, and
 * what each part offers the others. Private to the command.
 *
 *   rx_args.c      the arguments (options) and the usage text
 *   rx_setup.c     the input opened, the receiver's configuration, its carriers and the receiver
 *   rx_carriers.c  the carriers: those listed (--carrier), then those --detect finds
 *   rx_receiver.c  the receiver made, or the one a resident process kept taken; its end
 *   rx_files.c     the carriers' files (bits, LLRs, truth, --iq) and the report's, on several
 *                  threads
 *   rx_stream.c    the pipeline run: the receiver's callbacks, the batches of bits on their way
 *                  to the writers (the per-block path)
 *   rx_report.c    --report: the JSON report, and the figures per carrier (BER, locked fraction)
 *   rx_table.c     the table on standard output and the demodulators' warnings on standard
 *                  error */
#ifndef CLI_RX_RUN_H
#define CLI_RX_RUN_H

#include "cli.h"
#include "rx/rx_gpu.h" /* prx_rx_setup_times; prx_rx_gpu_batch_blocks */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CMD "rx"
#define MAX_CARRIERS 4096

typedef struct {
  const char *input, *format, *rate, *center, *output, *report, *truth;
  const char *spec[MAX_CARRIERS];
  unsigned given[MAX_CARRIERS]; /* the keys of each --carrier, by bit */
  prx_sim_carrier car[MAX_CARRIERS];
  size_t n_car;
  unsigned long K, taps, threads, read_block, cfo_span, block;
  prx_backend backend;
  int packed, llr, quiet, detect, iq;
  int swap_iq;                           /* --swap-iq */
  const char *start, *duration;          /* --start, --duration: the time range read */
  int read_block_set;                    /* --read-block given */
  double detect_min_esn0;                /* --detect-min-esn0, NAN: the detector's default */
  int devices[PRX_RX_MULTI_MAX_WORKERS]; /* --devices (all: every GPU) */
  size_t n_devices;
  unsigned long workers; /* --workers */
} options;

typedef struct {
  FILE *bits, *llr, *truth;
  char *bits_name, *llr_name, *truth_name;
  prx_sigmf_writer *iq; /* --iq */
  char *iq_base;
  uint64_t n_bits, n_symbols; /* data bits and symbols received */
  uint64_t file_bits;         /* bits written (packed: whole bytes, the last padded) */
  uint64_t errors, compared;  /* --truth: bit errors over the bits compared */
  uint64_t truth_short;       /* bits received beyond the truth file's end */
  uint8_t *tbuf;
  size_t tcap;
  int open_err, close_err;         /* the errno of its files' opening / closing (rx_files.c) */
  int open_which;                  /* which file failed to open: 1 truth, 2 bits, 3 LLRs */
  int bits_bad, llr_bad;           /* their writes failed (rx_flush_files, rx_close_files) */
  long long bits_bytes, llr_bytes; /* the files' sizes once flushed (-1: unknown) */
  /* this listed carrier shows the other modulation (--detect's finding, else the check at its
   * place: rx_mod_check_end): "pi4_qpsk" (listed as QPSK) or "plain_qpsk" (listed pi4), demod's
   * codes; NULL where it agrees or was not seen; mod_text says what was found */
  const char *mod_code, *mod_text;
  int levels; /* its symbols' power lies on several levels (QAM, APSK: cli_mod_levels), by the
                 same findings: PRX_QPSK_WARN_LEVELS added to its demodulator's warnings */
} carrier_out;

typedef struct run_state {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in;
  const prx_sigmf_recording *carry; /* the input's start for --iq (cli_carry_source), or NULL */
  cli_carry_own carry_own;
  prx_rx_config rc;
  prx_rx_carrier *car;
  size_t n_car;      /* listed, then detected */
  const char **spec; /* per carrier: its --carrier text, or what detection made of it */
  char **spec_made;  /* the texts made for detected carriers (owned) */
  /* --detect: what was found, and whether each is received (else why not) */
  prx_detect_carrier *found;
  size_t n_found;
  long *found_as; /* carrier index, or -1 */
  char (*found_why)[512];
  void *pre; /* the samples read for detection, fed to the receiver first */
  size_t pre_n;
  prx_rx *rx;          /* with several workers: the latest segment's, for the report */
  prx_rx_multi *multi; /* --devices, --workers */
  carrier_out *out;
  FILE *rep_f;
  cli_progress progress;
  uint64_t n_in;
  int fatal;      /* an output failed: the run stops */
  cli_timing tm;  /* POLYRX_TIMING: the wall time of each phase, printed at the end */
  int n_readers;  /* the pipeline's reader threads (cli_pipe_readers) */
  pthread_t warm; /* the CUDA runtime's start (cli_warm_cuda_start) */
  int warming;
  /* the input in place (cli_input_map_open) with the device-resident receiver; its figures,
   * taken as it closes, and the close, ms */
  prx_pipe_map *map;
  prx_pipe_map_stats map_stats;
  double ms_map_close;
  prx_rx_setup_times setup; /* the receiver's set-up's parts, taken before it is destroyed */
  /* the receiver's callbacks' user: the slot that names the run they write for (r->self, or the
   * kept receiver's slot: rx_keep, rx_receiver.c) */
  struct run_state *self;
  /* the bits and LLRs go to their files on the pipeline's writer threads (bits_batch, rx_stream.c):
   * writer w writes the carriers c with c % n_writers == w */
  int n_writers;
  struct bits_batch *cur;  /* the batch compute fills, NULL: rx_on_output writes the files */
  struct bits_batch *idle; /* the batches the writers are done with (under batch_lock) */
  struct bits_batch *all;  /* every batch made (freed at the end) */
  pthread_mutex_t batch_lock;
  atomic_int write_failed; /* a writer's error (its line printed once) */
  prx_rx_stats *stats;     /* per carrier, taken once the stream has ended */
  char **car_json;         /* per carrier, its report object's text (rx_write_report) */
  /* without --detect, the listed carriers' modulation checked at their places on the first
   * samples, beside the stream */
  cli_mod_check modc;
  int kept;            /* r->rx is the kept receiver (rx_keep, rx_receiver.c) */
  int reused;          /* ... made by an earlier run */
  double ms_keep_take; /* its reset for this run, ms */
} run_state;

/* ---- what the parts offer each other (each function's comment is at its definition) ---- */

/* rx_args.c: the options from the arguments; -1 to go on, else the exit code (usage printed
 * for -h and for no argument) */
int rx_parse_args(int argc, char **argv, options *o);

/* rx_setup.c: -1 to go on, else an exit code (reported) */
int rx_setup(run_state *r);

/* rx_carriers.c */
int rx_listed_carriers(run_state *r);
double rx_detect_min_esn0(const options *o);
int rx_detect_carriers(run_state *r);

/* rx_receiver.c (and cli_rx_keep_enable, cli_rx_keep_drop: cli.h) */
prx_status rx_make_receiver(run_state *r);
void rx_end_receiver(run_state *r, int rc);

/* rx_files.c */
void rx_for_each_carrier(run_state *r, void (*fn)(run_state *r, size_t c));
size_t rx_descriptors_for(const options *o, size_t n, size_t margin);
int rx_open_outputs(run_state *r);
int rx_close_files(run_state *r, int rc);
/* The carriers' files written out before the report (their sizes taken for it); rc as
 * rx_close_files leaves it, the first failure's line in carrier order. */
int rx_flush_files(run_state *r, int rc);

/* rx_stream.c */
void rx_on_output(void *user, size_t c, const uint8_t *bits, size_t n_bytes, const float *llrs,
                  size_t n_symbols);
void rx_on_channel(void *user, size_t c, const prx_cf32 *y, size_t n);
int rx_stream(run_state *r);
void rx_mod_check_end(run_state *r);
void rx_batches_free(run_state *r);

/* rx_report.c */
double rx_ber_theory(double esn0_db, prx_qpsk_ambiguity a);
double rx_carrier_ber(const carrier_out *k, prx_qpsk_ambiguity a);
double rx_locked_fraction(const prx_qpsk_stats *s);
int rx_write_report(run_state *r, const char *status, double elapsed);

/* rx_table.c */
size_t rx_carriers_warned(const run_state *r);
void rx_table(const run_state *r, double elapsed);
void rx_warnings(const run_state *r);

#endif
