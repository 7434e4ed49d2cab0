/* Shared pieces of the polyrx command: subcommand entry points and argument parsing. */
#ifndef PRX_CLI_H
#define PRX_CLI_H

#include "polyrx.h"

#include "pipeline/pipeline.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Each subcommand: argv[0] is the subcommand's name; returns the process exit code. */
int cmd_channelize(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_demod(int argc, char **argv);
int cmd_ber(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_spectrum(int argc, char **argv);
int cmd_rx(int argc, char **argv);
int cmd_serve(int argc, char **argv);
/* The receiver kept between `rx` runs of a resident process (rx_receiver.c): cli_rx_keep_enable
 * turns the keeping on; cli_rx_keep_drop frees the kept receiver (before another command, at
 * the end). */
void cli_rx_keep_enable(void);
void cli_rx_keep_drop(void);

/* Runs argv ("polyrx COMMAND ...") as main does once past the client (main.c): the command's
 * exit status. */
int cli_dispatch(int argc, char **argv);
/* Set by main (never by polyrx serve, which runs many commands in one process): the process
 * ends once the command returns, so a command may leave its large buffers to the process's end
 * (cli_exit_frees_skipped) instead of unmapping them page by page on its way out. */
extern int cli_process_ends;
/* Whether the command may skip freeing its large buffers: the process ends after it and the
 * build has no leak checker (AddressSanitizer, LeakSanitizer), whose report stays clean. */
int cli_exit_frees_skipped(void);
/* The client of polyrx serve (serve_client.c): runs the command (argv[0] its name) in the server
 * when one answers on the socket, and returns its exit status; -1 where the command runs in this
 * process (POLYRX_SERVE=off, no socket, no answer). POLYRX_SERVE=require: no answer is an error
 * (1). cli_serve_connect: a connection to the server at path, its socket and the server checked
 * to be this user's (-1 and why where none answers or it is not to be trusted). */
int cli_serve_client(int argc, char **argv);
int cli_serve_connect(const char *path, char *why, size_t cap);

/* A raw sample output: path "-" is standard output (refused where it is a terminal), else a file
 * made afresh. -1 and *out, or the exit code after the error's line. */
int cli_open_raw_output(const char *cmd, const char *path, FILE **out);
/* 1 when s ends with suffix (an output's kind by its name: .wav, .sigmf-data, ...). */
int cli_ends_with(const char *s, const char *suffix);
/* The first line cli_error printed in this process (without "polyrx CMD: error: "), "" when
 * none: the reports' "error". */
const char *cli_first_error(void);
/* Writes out f's buffered bytes: 0, or -1 when a write failed, now or earlier (ferror), with
 * errno. *bytes: the file's size then, where it is a regular file (else -1): what a report says
 * the output holds. f NULL: 0 and -1. */
int cli_flush_output(FILE *f, long long *bytes);
/* Prints "polyrx CMD: error: ..." to stderr; returns 1 (an exit code) for `return cli_error(...)`.
 */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A usage error (an unknown, missing or badly formed option or argument): prints
 * "polyrx CMD: error: ..." and a pointer to --help; returns 2, the exit status getopt tools use
 * for usage errors (runtime errors exit 1). */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* printf into a string of its own (malloc'd; NULL out of memory): file names made of parts. */
char *cli_format(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Prints the library's last error for a failed status; returns 1. */
int cli_status_error(const char *cmd, const char *what, prx_status st);

/* "polyrx CMD: error: OPT: 'TEXT' is not a valid WHAT"; returns 2 (a usage error). */
int cli_bad_value(const char *cmd, const char *opt, const char *text, const char *what);
/* The demodulator's --block (256..1024 symbols) and --cfo-span (1024..2^22 symbols) values, as
 * demod and rx take them: -1 where the value is one, else the usage error's status. */
int cli_parse_block(const char *cmd, const char *text, unsigned long *block);
int cli_parse_cfo_span(const char *cmd, const char *text, unsigned long *cfo_span);
/* --cfo-span against --block (0: the demodulator's defaults): a span holds 4 blocks at least
 * (prx_qpsk_config.cfo_span_symbols); -1 where it does, else the usage error's status. */
int cli_check_cfo_span(const char *cmd, unsigned long cfo_span, unsigned long block);
/* --backend auto|cpu|cuda: -1 on success, else the exit code after the error line. */
int cli_parse_backend(const char *cmd, const char *text, prx_backend *out);

/* The input options every streaming subcommand takes (-i, -F, -s, -f); NULL when not given. */
typedef struct {
  const char *input;        /* path, or "-" for standard input */
  const char *format;       /* -F text */
  const char *rate;         /* -s text */
  const char *center;       /* -f text (NULL: the subcommand has no -f) */
  const char *rate_example; /* shown in messages, e.g. "6.5536M" */
  int quiet;                /* no notes on stderr */
  int swap_iq;              /* --swap-iq: I and Q exchanged as read */
  const char *start;        /* --start TIME: the first sample read (NULL: the input's first) */
  const char *duration;     /* --duration TIME: how much is read (NULL: to the end) */
} cli_input_opts;
/* getopt's values of --swap-iq, --start and --duration, the same in every subcommand that reads
 * samples */
#define CLI_OPT_SWAP_IQ 1000
#define CLI_OPT_START 1001
#define CLI_OPT_DURATION 1002
/* Their rows of a getopt_long table (the commands that read samples include <getopt.h>) */
#define CLI_INPUT_LONGOPTS                                                                         \
  {"swap-iq", no_argument, 0, CLI_OPT_SWAP_IQ}, {"start", required_argument, 0, CLI_OPT_START}, {  \
    "duration", required_argument, 0, CLI_OPT_DURATION                                             \
  }
/* --start and --duration in the help, for option columns 25 (channelize, demod) and 23 wide */
#define CLI_HELP_RANGE_25                                                                          \
  "      --start TIME       read from this time of the input on: seconds (90, 1.5,\n"              \
  "                         250m), [H:]M:S (12:30, 1:02:03.5), samples (48kS)\n"                   \
  "                         or a date and time by its clock (2026-12-04T11:30:00Z)\n"              \
  "      --duration TIME    read this much of it (default: to its end)\n"
#define CLI_HELP_RANGE_23                                                                          \
  "      --start TIME     read from this time of the input on: seconds (90, 1.5, 250m),\n"         \
  "                       [H:]M:S (12:30, 1:02:03.5), samples (48kS)\n"                            \
  "                       or a date and time by its clock (2026-12-04T11:30:00Z)\n"                \
  "      --duration TIME  read this much of it (default: to its end)\n"
/* A time in the input (--start, --duration) as samples at `rate`: seconds ("90", "1.5",
 * "250m"), hours, minutes and seconds ("1:30", "1:02:03.5"), or samples ("48kS", "4096S": a
 * whole number with S). 0 and *samples, else -1 (no time). */
int cli_parse_time(const char *text, double rate, uint64_t *samples);
/* The sample format a raw file's extension names, as the SDR tools write them (inspectrum's):
 * .cu8; .cs8, .ci8; .cs16, .ci16, .sc16; .cf32, .fc32, .cfile. 1 and *fmt, else 0. */
int cli_format_from_name(const char *path, prx_format *fmt);
/* An SDRangel .sdriq file's header before its ci16 samples (gen, convert): the rate and centre
 * in whole Hz (a note where they are not), the start in ms since 1970 where start_utc (ISO,
 * UTC) gives one; -1, or the exit code after the message. */
int cli_write_sdriq_header(const char *cmd, double sample_rate, double center_freq,
                           const char *start_utc, const char *path, FILE *f);

/* Opens the input (raw, stdin or SigMF) and settles its format, rate and centre frequency from
 * the options and the metadata (options override metadata, with a note). Returns -1 on
 * success, else the exit code after printing the error. */
int cli_open_input(const char *cmd, const cli_input_opts *o, prx_iq_reader **reader,
                   prx_iq_info *info);

/* A file a command reads or writes, for cli_outputs_distinct: role names it in messages
 * ("-o", "--llr", "input", "channel 5 data"). */
typedef struct {
  const char *role;
  const char *path; /* "-": standard input (an input) or standard output (an output) */
  int is_input;
} cli_path;
/* Checks that every output is a file of its own: no output is the same file as another
 * output or as an input, by name (the directory resolved, for files that do not exist yet)
 * or by identity (st_dev/st_ino, which catches hard and symbolic links). Devices, pipes and
 * other non-regular files may be shared (two outputs to /dev/null), except standard output
 * named twice. Returns -1 when all are distinct, else 1 after one error line naming both
 * roles. O(n log n): fit for thousands of channel files. */
int cli_outputs_distinct(const char *cmd, const cli_path *paths, size_t n);

/* SIGINT/SIGTERM end a stream cleanly: the handler only sets a flag (cli_interrupted()) and
 * resets itself, so a second signal kills as usual. A signal ignored when the command starts
 * (a background job of a non-interactive shell, nohup) stays ignored. */
void cli_catch_stop_signals(void);
int cli_interrupted(void);
/* For a process that runs many commands (polyrx serve): cli_stop_signals_persistent makes every
 * later cli_catch_stop_signals keep its handler installed (a second signal sets the flag again
 * instead of killing the process) and install it even where the signal was ignored;
 * cli_stop_reset clears the flag before a run; cli_stop_request sets it as a stop signal does
 * (async-signal-safe). */
void cli_stop_signals_persistent(void);
void cli_stop_reset(void);
void cli_stop_request(void);
/* Seconds since the first stop signal was noticed by cli_interrupted() (0 before). */
double cli_seconds_since_stop(void);
/* The read of a streaming loop: -1 with *n samples read (0 at the end of the stream), 130 after a
 * stop signal (with a note of how far it got: done samples), or the exit code of a read error
 * (printed). A read cut short by the signal is not an error. */
int cli_read_block(const char *cmd, prx_iq_reader *r, void *buf, size_t max, uint64_t done,
                   size_t *n);
/* Monotonic time in seconds, for throughput summaries. */
double cli_seconds(void);
/* The calling thread's CPU time in ms, from the scheduler's clock (POLYRX_TIMING's figures:
 * getrusage's lags by up to a tick for a running thread, as wrong as a reading around one
 * execute call). */
double cli_thread_cpu_ms(void);
/* POLYRX_TIMING (set, not "0"): where a command's time goes. cli_timing_start reads the setting
 * and marks the start; cli_timing_phase ends the phase begun at the last mark (a no-op with the
 * setting off); cli_timing_print prints them at the end on one line of standard error:
 * "polyrx CMD: timing (ms): PHASE MS PHASE MS ..., total MS; " and the command's own figures. */
typedef struct {
  int on;
  double t_start, t_mark;
  struct {
    const char *name;
    double ms;
  } phase[16];
  int n;
} cli_timing;
void cli_timing_start(cli_timing *t);
void cli_timing_phase(cli_timing *t, const char *name);
void cli_timing_print(const cli_timing *t, const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* An output's name for messages: "standard output" for "-", else the path (NULL stays NULL). */
const char *cli_output_name(const char *path);
/* Closes an output (flushes standard output instead) and returns rc; a failed write, or one
 * that the close reveals, becomes an error line and exit code where rc is -1 (no error yet).
 * A NULL f returns rc. */
int cli_close_output(const char *cmd, FILE *f, const char *name, int rc);
/* qsort's comparison of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);

/* A progress line on standard error for long runs: "polyrx CMD: 12.6 M of 100 M samples (13%),
 * 45.1 M samples/s, ETA 2 s", redrawn in place at most 4 times a second, first after one second
 * (short runs print nothing), and only when standard error is a terminal and not quiet. end
 * erases the line, so the summary that follows starts on a clean line. */
typedef struct {
  const char *cmd;
  int on;         /* 1: standard error is a terminal and the command is not quiet */
  int shown;      /* 1: a line is on the screen */
  uint64_t total; /* samples expected (0: unknown, no percentage or ETA) */
  double start, last;
} cli_progress;
/* The input's length in samples where it is known before reading (a file, an archive, a WAV
 * file's data), else 0 (a pipe): the progress line's total. */
uint64_t cli_input_samples(const prx_iq_reader *r);
/* What a WAV input's header leaves to be said (cli/common.c): a centre frequency taken from
 * the file's name, a data size not as written (never filled in, wrapped past 4 GiB, more than
 * the file holds), a KiwiSDR file's rate measured by its time stamps (or why not); notes on
 * standard error, "polyrx CMD: note: ...", unless quiet. Samples lost inside a KiwiSDR file
 * (gaps between its time stamps) are a warning, said even when quiet. */
void cli_wav_note(const char *cmd, const char *input, const prx_wav_info *wav, int quiet);
/* The data's extent in one sentence ("" when there is nothing to say), for `polyrx info`. */
const char *cli_wav_extent_text(const prx_wav_info *wav, char *buf, size_t n);
/* A KiwiSDR file's chunks and time stamps in one sentence ("" for other files). */
const char *cli_wav_kiwi_text(const prx_wav_info *wav, char *buf, size_t n);
void cli_progress_start(cli_progress *p, const char *cmd, uint64_t total, int quiet);
void cli_progress_update(cli_progress *p, uint64_t done);
void cli_progress_end(cli_progress *p);

/* ---- SigMF metadata carried into derived recordings (sigmf_carry.c) ---- */
/* Output sample j of a derived recording is the input's instant j * decimation + offset, in
 * input samples at input_rate Hz. */
typedef struct {
  uint64_t decimation;
  double offset;
  double input_rate;
} cli_alignment;
/* What an input has to carry into derived recordings (*out): a SigMF input's recording; for an
 * input whose start is known in UTC otherwise (prx_iq_reader_start_utc: a WAV file's rcvr chunk
 * or KiwiSDR stamps, an .sdriq header, a gqrx name), a recording of one capture at sample 0 with
 * that datetime and `center`; NULL for the rest (raw input, an auxi chunk's time of no zone). With
 * a window (--start), the captures and annotations from its start on, their samples counted from
 * there, the first capture's datetime moved to it (rate: the input's). What is made lives in *own
 * until cli_carry_own_free. Fails only out of memory or on a datetime it cannot move (naming the
 * capture). */
typedef struct {
  prx_sigmf_recording rec;
  prx_sigmf_capture capture;         /* a WAV file's one capture */
  prx_sigmf_capture *captures;       /* a window's (malloc'd) */
  prx_sigmf_annotation *annotations; /* a window's (malloc'd) */
  char datetime[48];                 /* the first capture's, moved to the window's start */
} cli_carry_own;
prx_status cli_carry_source(const prx_iq_reader *r, double center, double rate, cli_carry_own *own,
                            const prx_sigmf_recording **out);
void cli_carry_own_free(cli_carry_own *own);
/* The output sample where input sample s begins to show: the first j with jD + offset >= s. */
uint64_t cli_align_sample(const cli_alignment *a, uint64_t s);
/* Whether the input's captures can be carried (-1) or the exit code after one message: with
 * several captures each needs core:frequency; -f (center_given) cannot override a recording
 * that retunes; every datetime must be one prx_sigmf_datetime_shift reads. NULL rec: -1. */
int cli_carry_check(const char *cmd, const prx_sigmf_recording *rec, int center_given);
/* Capture 0 of a derived recording, before its writer opens: meta->center_freq = center +
 * freq_offset, meta->datetime the input's captures[0] datetime moved to output sample 0's
 * instant (written into datetime[48]; NULL when the input has none). */
prx_status cli_carry_first_capture(const prx_sigmf_recording *rec, const cli_alignment *a,
                                   double center, double freq_offset, prx_sigmf_meta *meta,
                                   char datetime[48]);
/* The input's later captures, each at its output sample (cli_align_sample), frequency +
 * freq_offset, datetime moved to that sample's instant. */
prx_status cli_carry_captures(prx_sigmf_writer *w, const prx_sigmf_recording *rec,
                              const cli_alignment *a, double freq_offset);
/* The input's annotations with their ranges mapped to output samples (clipped to
 * out_samples; one at least), into a recording whose band is the capture's frequency +
 * freq_offset +- out_rate/2: annotations with frequency edges outside it are left out;
 * center is the input's centre frequency for recordings of one capture (after -f). */
prx_status cli_carry_annotations(prx_sigmf_writer *w, const prx_sigmf_recording *rec,
                                 const cli_alignment *a, uint64_t out_samples, double center,
                                 double freq_offset, double out_rate);

/* ---- what channelize says about a run (chan_summary.c) ---- */
typedef struct {
  const char *input;              /* the -i path */
  const prx_iq_info *in;          /* format, rate and centre in use */
  const prx_sigmf_recording *rec; /* the input's SigMF metadata, or NULL */
  uint64_t in_samples, nonfinite_in;
  unsigned K, D;
  size_t M;
  double offset;       /* output j is the input's instant jD + offset */
  const char *backend; /* "cpu", "cuda" */
  size_t n;            /* channels written (or attempted) */
  const unsigned *index;
  const double *freq;     /* centre frequency per channel, Hz */
  const double *power_db; /* mean power, dBFS (non-finite: none) */
  const char *const *files;
  const unsigned char *ok; /* 1: the recording is complete */
  uint64_t out_samples;    /* per channel */
  double seconds;
  int exit_status;
  const char *archive;   /* -o NAME.sigmf: the archive holding the recordings (files are then
                            member base names), else NULL */
  int swap_iq;           /* --swap-iq */
  int real;              /* real samples read as complex */
  uint64_t start_sample; /* --start: the input's first sample read */
} cli_chan_summary;
/* --report FILE.json ("-": standard output): input, channelizer, channels, timing. Returns -1
 * or the exit code after the message. */
int cli_chan_write_report(const char *cmd, const char *path, const cli_chan_summary *s);
/* --occupancy FILE.png: the per-channel power bar chart. -1 or the exit code. */
int cli_chan_write_occupancy(const char *cmd, const char *path, const cli_chan_summary *s);

/* ---- pieces of the JSON reports (report_json.c) ---- */
struct cJSON;
/* A number into a JSON report: v, or null where it is not finite. */
void cli_json_num(struct cJSON *o, const char *k, double v);
/* The demodulator's summary warnings (prx_qpsk_stats.warnings) in the order the commands list
 * them. */
#define CLI_QPSK_N_WARNINGS 11
extern const unsigned cli_qpsk_warn_bits[CLI_QPSK_N_WARNINGS];
/* One {"code", "text"} item appended to a "warnings" array. */
void cli_json_warning(struct cJSON *arr, const char *code, const char *text);
/* o's "warnings": an array of {"code", "text"}, one for each bit set in warnings, in that order. */
void cli_json_qpsk_warnings(struct cJSON *o, unsigned warnings);
/* The input's own warnings appended to the array arr: "input_gaps" where a KiwiSDR file's time
 * stamps show samples lost (zeros stand for them). Returns how many. */
int cli_json_input_warnings(struct cJSON *arr, const prx_iq_reader *r);

/* ---- --carrier SPEC (carrier_spec.c), shared by gen and rx ---- */
/* Keys by bit: f, rs, rolloff, span, power, phase, timing, ppm, diff, pilots, seed, freq (the
 * carrier's absolute frequency, into c->freq: the caller takes the centre off), pi4 (pi/4-QPSK,
 * into c->pi4). */
enum { CLI_CARRIER_KEY_DIFF = 8, CLI_CARRIER_KEY_FREQ = 11, CLI_CARRIER_KEY_PI4 = 12 };
#define CLI_CARRIER_ALL_KEYS 0x17ffu /* gen's: all but freq */
#define CLI_CARRIER_RX_KEYS 0x1b07u  /* f, rs, rolloff, diff, pilots, freq, pi4 */
/* Parses "f=100k,rs=2400,diff,..." (the keys in allowed) into c, from prx_sim_carrier_default();
 * the symbol rate is required; *given (may be NULL) gets the keys present, by bit. 0 on success,
 * else 1 after one error line naming the spec. */
int cli_parse_carrier(const char *cmd, const char *spec, unsigned allowed, prx_sim_carrier *c,
                      unsigned *given);
/* A seed: a decimal unsigned 64-bit integer. 0 on success, -1 otherwise. */
int cli_parse_seed(const char *text, uint64_t *out);

/* Parses a number with an optional engineering suffix: 6.5536M, 12.8k, 2.4e3, 1G, 50u.
 * The whole string must be consumed; rejects empty, NaN, inf. 0 on success, -1 otherwise. */
int cli_parse_eng(const char *text, double *out);
/* The other way: hz in the largest of Hz, kHz, MHz, GHz that its magnitude reaches; *unit names
 * it. */
double cli_hz_unit(double hz, const char **unit);
/* Parses a non-negative integer in [min, max] (engineering suffixes k/M/G allowed when exact). */
int cli_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out);

/* ---- the host pipeline (src/pipeline/pipeline.h) under the streaming commands ---- */
/* Sets a pipeline's input (reader r, blocks of `block` samples of the input's format) and stop
 * request (SIGINT/SIGTERM through cli_catch_stop_signals), and its mode: POLYRX_PIPELINE=serial
 * in the environment runs the same stages in one loop on one thread (the output is the same;
 * for tests and debugging); POLYRX_PIPE_POLL=US sets poll_us (0..1000, default 0: woken). The
 * caller sets compute, write, ctx, out_bytes and n_writers. */
void cli_pipe_setup(prx_pipe_config *c, prx_iq_reader *r, const prx_iq_info *in, size_t block);
/* The stream's first block read beside the command's set-up: cli_first_block_start, once the
 * input is open, starts a thread reading its first block_samples samples into a buffer made as
 * the pipeline's are (a regular file only: its read never blocks; POLYRX_FIRST_BLOCK=0 turns
 * it off) and returns 1 if it did; cli_first_block_use, after cli_pipe_setup with the same
 * block, waits for the read and gives the block to the pipeline as its first
 * (prx_pipe_config.first_block: compute starts on it before the reader has read anything), or
 * where the read failed or found nothing, makes the pipeline's first read return what it met;
 * the reads after it go on from there, with read (not read_at). cli_first_block_end joins the
 * thread and frees what the pipeline did not take; call it in every case once started (after
 * the pipeline, or instead of it). The stream is the same bytes either way. On the development
 * VM the block's read, page faults included, is 1.3-1.6 ms of 2^18 cf32 samples between the
 * pipeline's start and compute's first call. */
typedef struct {
  prx_iq_reader *reader;
  void *buf;
  size_t max, bytes, n;
  prx_status st;
  char msg[512];
  pthread_t thread;
  int started, joined, given, taken;
} cli_first_block;
int cli_first_block_start(cli_first_block *f, prx_iq_reader *r, size_t block_samples);
void cli_first_block_use(prx_pipe_config *c, cli_first_block *f);
void cli_first_block_end(cli_first_block *f);
/* SIGINT and SIGTERM go to the pipeline's reader, interrupting a read blocked on a quiet pipe:
 * a command holds them (blocks them on its thread) before it creates anything that starts
 * threads (the channelizer's or demodulator's worker pool, which inherit the mask), and
 * releases them after the stream; a signal that comes while held waits until the reader runs. */
void cli_hold_stop_signals(void);
void cli_release_stop_signals(void);
/* Runs the pipeline: -1 at the end of the input; 130 after a stop signal (with a note of how far
 * it got); after a read error or a compute error, their exit code (printed as "input: ..." or
 * "WHAT: ...", or by the compute callback itself when WHAT is NULL); 1 after a write error
 * (which the write callback has printed). */
int cli_pipe_run(const char *cmd, const prx_pipe_config *c, const char *compute_what,
                 prx_pipe_result *res);
/* A count from the environment (the tests' and measurements' knobs: POLYRX_READERS, ...):
 * variable name's value as an integer clamped to lo..hi, or dflt where it is unset or empty. */
int cli_env_int(const char *name, int lo, int hi, int dflt);

/* The descriptors of a command's output files (descriptors.c). cli_open_descriptors: those open
 * now (the input, standard streams, a GPU driver's few dozen), counted in /proc/self/fd where
 * there is one, else 16. cli_raise_open_files: raises the soft RLIMIT_NOFILE to `need` where it
 * is lower and the hard limit allows; 0 when `need` files can be open at once (or the limits are
 * unknown), else -1; *cur and *max (each may be NULL) the limits found (max 0: unlimited).
 * cli_reserve_descriptors: raises the limit so and grows the process's descriptor table to hold
 * `need` at once (at most 65536), to be called while the process has one thread: a table that
 * grows as files are opened one after the other grows in steps (256, 512, 1024, ...), and in a
 * process with threads each step waits for an RCU grace period (the kernel's expand_fdtable):
 * 9-16 ms a step on the 2-core VM, 46 ms for 1100 files there and 100 ms and more on the 16-core
 * GPU host, against 0.7 ms without other threads. A failure costs only that time. */
size_t cli_open_descriptors(void);
int cli_raise_open_files(size_t need, unsigned long long *cur, unsigned long long *max);
void cli_reserve_descriptors(size_t need);
/* Several reader threads (src/pipeline's read_at) for a regular-file input where the compute
 * stage leaves the host's cores to the readers (gpu set: the CUDA backends): one thread reads a
 * file in the page cache at 5-7 GB/s, a GPU takes 55. Sets c's read_at (over r, after
 * cli_pipe_setup), n_readers and in_depth (a block per reader and 3 more), and returns the
 * number of readers: 4 with 8 cores or more, 2 with 4, else 1 (POLYRX_READERS=N sets it, 1..16;
 * 1: the one sequential reader). Other inputs (standard input, pipes) keep the one reader. */
int cli_pipe_readers(prx_pipe_config *c, prx_iq_reader *r, int gpu);
/* The input in place for a command that may run on CUDA (src/pipeline/pipeline.h, "the input in
 * place"): a regular file of an integer format (the CPU never reads those samples, the GPU's
 * copies do), opened as the command starts so that its pages are read while the CUDA runtime
 * starts, and pinned once cli_pipe_use_map is called (the command's CUDA objects made: pinning
 * holds the driver); NULL (the readers then read it) unless POLYRX_INPUT_MAP is set and not "0"
 * (off by default: the readers were faster on the H200), and for backend cpu and other inputs.
 * cli_pipe_use_map starts the pinning and points pipeline c (after cli_pipe_readers) at the map:
 * the blocks in place, the others read with c's read_at (or the reader's positional read, with one
 * reader). cli_input_map_close takes the map's figures into s and closes it (accepts NULL: s
 * zeroed); it returns the close's wall time, ms. */
prx_pipe_map *cli_input_map_open(prx_iq_reader *r, prx_backend backend);
void cli_pipe_use_map(prx_pipe_config *c, prx_iq_reader *r, prx_pipe_map *m);
double cli_input_map_close(prx_pipe_map *m, prx_pipe_map_stats *s);
/* POLYRX_TIMING: the map's line (s and ms_close from cli_input_map_close; nothing when s->bytes
 * is 0). */
void cli_input_map_timing(const char *cmd, const prx_pipe_map_stats *s, double ms_close);
/* Starts fn(arg) on a new thread that takes no signal (every signal blocked on it: the stop
 * signals stay with the main thread and the pipeline's reader): 0, else pthread_create's error. */
int cli_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);
/* The CUDA runtime's start (loading the CUDA module, creating the device's context: 0.1-0.3 s
 * of a GPU run) on a thread of its own, begun as a command starts so that it overlaps opening
 * the input and the CPU's part of making the objects; a page-locked allocation does both.
 * Returns 1 if the thread was started (not for backend cpu); cli_warm_cuda_end joins it. Call
 * after cli_hold_stop_signals: the CUDA runtime's threads keep the mask. */
int cli_warm_cuda_start(pthread_t *t, prx_backend backend);
void cli_warm_cuda_end(pthread_t t, int started);
/* POLYRX_TIMING: when the warm thread ended (cli_seconds), once cli_warm_cuda_end has joined
 * it; 0 where none ran. */
double cli_warm_cuda_done(void);
/* Whether that thread made the device's context (the CUDA module loaded with a usable device). */
int cli_warm_cuda_context(void);
/* The devices' compute mode as that thread read it once the context existed (cuda_module.h's
 * compute_mode: 0 default, 3 exclusive-process, ...; -1 unknown or no context). */
int cli_warm_cuda_compute_mode(void);
/* The end of a command's process that made the device's context (cli_warm_cuda_start), detached
 * where cli_exit_detach_wanted: flushes stdio and ends the process with `status` at once, a
 * child left holding the driver's files until then, whose end releases the context
 * (cli/exit_detach.c). Returns where it is not wanted or cannot be done (the usual end follows). */
void cli_exit_detached(int status);
/* Whether the command's process ends detached: it ends with its command (cli_process_ends), made
 * the device's context, and POLYRX_CUDA_EXIT is not "keep"; then with the devices in the default
 * compute mode, or POLYRX_CUDA_EXIT=detach whatever the mode. A command then leaves its CUDA
 * objects and page-locked buffers to that end. */
int cli_exit_detach_wanted(void);
/* The decision itself: env POLYRX_CUDA_EXIT's value (NULL unset), whether the process ends with
 * the command, whether it made a context, and the devices' compute mode (cuda_module.h's
 * compute_mode: 0 default, -1 unknown). */
int cli_exit_detach_decide(const char *env, int process_ends, int context, int compute_mode);
/* The detached end itself: the child keeps the descriptors whose target starts with keep_prefix
 * (the driver's, "/dev/nvidia"), closes every other before the process ends with `status`, and
 * ends linger_ms after the process (0; the tests' stand-in for the driver's release). Returns
 * only where it cannot be done. */
void cli_exit_detach_now(int status, const char *keep_prefix, unsigned linger_ms);
/* Set: the detached end's child is forked (its path under valgrind) instead of sharing the
 * address space; for the tests of both paths. */
extern int cli_exit_detach_by_fork;

/* ---- the modulation carriers show against the one a command was told (mod_check.c) ----
 * demod and rx read a carrier as QPSK or as pi/4-QPSK (--pi4, pi4), and read the wrong way its
 * bits are wrong even where its blocks read locked: the symbols of either, read as the other at
 * a CFO Rs/8 off, land on QPSK's grid. The detector tells them apart by their 4th-power lines
 * (prx_detect_at, polyrx/detect.h): the first samples the command takes are kept
 * (cli_mod_check_add: 2048 symbols of the slowest carrier, at least 8192 samples), and the
 * detector looks at every carrier's place there on a thread of its own (cli_mod_check_start; at
 * cli_mod_check_end where the stream is shorter): a carrier at its rate (+-2 %), 7 dB or more,
 * whose 4th-power lines clearly show the other modulation's pattern gets a warning; one whose
 * symbols' power lies on several levels (prx_detect_carrier.c42 above PRX_DETECT_RING_C42: QAM,
 * APSK, read as QPSK with each symbol's bits its quadrant's) is marked `levels` (the commands add
 * PRX_QPSK_WARN_LEVELS to its demodulator's warnings: the demodulator's own test of the blocks
 * sees 16QAM from ~15 dB only). */
typedef struct {
  double freq, rs, rolloff; /* its place (Hz from the stream's centre), rate and roll-off */
  int pi4;                  /* read as pi/4-QPSK (1) or QPSK (0) */
  int skip;                 /* not to be checked (rx: one --detect found) */
  const char *code;         /* the verdict: NULL, or the warning's code (cli_mod_code) */
  char text[320];           /* ... and its text */
  int levels;               /* its symbols' power lies on several levels (c42, detect.h) */
} cli_mod_carrier;
typedef struct {
  double fs;
  int threads;                     /* the detector's (0: every core, at the idle priority) */
  const char *fix_pi4, *fix_plain; /* the texts' advice: a pi/4 carrier read as QPSK, and back */
  cli_mod_carrier *car;            /* the caller sets each one's place and mode after init */
  size_t n_car;
  prx_rx_config rc; /* cli_mod_check_channels: the receiver whose channels they are looked at in
                       (channels 0: on the wideband samples) */
  int borrow;       /* the samples stay mapped all the run: kept in place where blocks follow on */
  prx_format format;
  const void *raw; /* the samples in place (borrow), else NULL */
  void *kept;      /* ... else copied, in their format */
  size_t n, cap;
  int sized;
  pthread_t thread;
  int started, done;
  size_t n_warned;   /* the verdict: carriers with a code or levels */
  char failure[512]; /* ... or why there is none (empty: it was made) */
  double ms;         /* the verdict's own wall time (POLYRX_TIMING) */
} cli_mod_check;
/* Sets c up for n_car carriers (c->car, zeroed: the caller sets their places and modes) in a
 * stream at fs; fix_pi4 and fix_plain end the warnings' texts (what to do). -1 out of memory. */
int cli_mod_check_init(cli_mod_check *c, double fs, size_t n_car, int threads, const char *fix_pi4,
                       const char *fix_plain);
/* The carriers looked at in the channels of rc's receiver (prx_rx_channel_of,
 * prx_rx_make_channelizer on the CPU), not on the wideband samples: one pass of the channelizer
 * in place of a transform of them all. Before the first add. */
void cli_mod_check_channels(cli_mod_check *c, const prx_rx_config *rc);
/* Keeps the first samples of n in format f until the verdict has enough (the first call's
 * format; converted on the verdict's thread). */
void cli_mod_check_add(cli_mod_check *c, prx_format f, const void *in, size_t n);
/* Starts the detector's thread once they are all in (else nothing). The caller calls it where
 * the thread takes nothing its stream waits for: demod, once its demodulator has made its span
 * FFT's plan (FFTW's planner is one at a time: a detector planning beside the first CFO stage
 * held the stream up, 53.7 -> 56.2 ms a run of 4M symbols with every core, the H200 host). */
void cli_mod_check_start(cli_mod_check *c);
/* The verdict (waiting for the thread, or on the samples kept where it did not start): how
 * many carriers show the other modulation or several power levels (each one's code and text,
 * and levels, in c->car). */
size_t cli_mod_check_end(cli_mod_check *c);
/* Where the check could not run (c->failure), one note on standard error saying why. */
void cli_mod_check_note(const cli_mod_check *c, const char *cmd);
void cli_mod_check_free(cli_mod_check *c); /* (waits for the thread) */
/* The warning's code for a carrier found as pi/4-QPSK (found_pi4 1) or QPSK and read as
 * pi/4-QPSK (read_pi4 1) or QPSK: "pi4_qpsk" (found pi/4, read QPSK), "plain_qpsk" (the
 * converse), NULL where they agree: the verdicts, and rx --detect's findings on listed carriers. */
const char *cli_mod_code(int found_pi4, int read_pi4);
/* Whether a carrier the detector found (7 dB or more) has symbols whose power lies on several
 * levels (its c42 above PRX_DETECT_RING_C42): the check's verdict, and rx --detect's findings. */
int cli_mod_levels(const prx_detect_carrier *d);

#endif
