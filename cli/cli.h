/* Shared pieces of the polyrx command: subcommand entry points and argument parsing. */
#ifndef PRX_CLI_H
#define PRX_CLI_H

#include "polyrx.h"

#include <stddef.h>

/* Each subcommand: argv[0] is the subcommand's name; returns the process exit code. */
int cmd_channelize(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_demod(int argc, char **argv);
int cmd_ber(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_spectrum(int argc, char **argv);

/* Prints "polyrx CMD: error: ..." to stderr; returns 1 (an exit code) for `return cli_error(...)`.
 */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints the library's last error for a failed status; returns 1. */
int cli_status_error(const char *cmd, const char *what, prx_status st);

/* "polyrx CMD: error: OPT: 'TEXT' is not a valid WHAT"; returns 1. */
int cli_bad_value(const char *cmd, const char *opt, const char *text, const char *what);

/* The input options every streaming subcommand takes (-i, -F, -s, -f); NULL when not given. */
typedef struct {
  const char *input;        /* path, or "-" for standard input */
  const char *format;       /* -F text */
  const char *rate;         /* -s text */
  const char *center;       /* -f text (NULL: the subcommand has no -f) */
  const char *rate_example; /* shown in messages, e.g. "6.5536M" */
  int quiet;                /* no notes on stderr */
} cli_input_opts;
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
/* Seconds since the first stop signal was noticed by cli_interrupted() (0 before). */
double cli_seconds_since_stop(void);
/* The read of a streaming loop: -1 with *n samples read (0 at the end of the stream), 130 after a
 * stop signal (with a note of how far it got: done samples), or the exit code of a read error
 * (printed). A read cut short by the signal is not an error. */
int cli_read_block(const char *cmd, prx_iq_reader *r, void *buf, size_t max, uint64_t done,
                   size_t *n);
/* Monotonic time in seconds, for throughput summaries. */
double cli_seconds(void);

/* Parses a number with an optional engineering suffix: 6.5536M, 12.8k, 2.4e3, 1G, 50u.
 * The whole string must be consumed; rejects empty, NaN, inf. 0 on success, -1 otherwise. */
int cli_parse_eng(const char *text, double *out);
/* Parses a non-negative integer in [min, max] (engineering suffixes k/M/G allowed when exact). */
int cli_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out);

#endif
