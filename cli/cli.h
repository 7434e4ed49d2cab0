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

/* Prints "polyrx CMD: error: ..." to stderr; returns 1 (an exit code) for `return cli_error(...)`.
 */
int cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints the library's last error for a failed status; returns 1. */
int cli_status_error(const char *cmd, const char *what, prx_status st);

/* Parses a number with an optional engineering suffix: 6.5536M, 12.8k, 2.4e3, 1G, 50u.
 * The whole string must be consumed; rejects empty, NaN, inf. 0 on success, -1 otherwise. */
int cli_parse_eng(const char *text, double *out);
/* Parses a non-negative integer in [min, max] (engineering suffixes k/M/G allowed when exact). */
int cli_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out);

#endif
