/* Argument parsing and error reporting shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "polyrx %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

int cli_status_error(const char *cmd, const char *what, prx_status st) {
  const char *detail = prx_last_error();
  return cli_error(cmd, "%s: %s%s%s", what, prx_strerror(st), detail[0] ? ": " : "", detail);
}

int cli_parse_eng(const char *text, double *out) {
  if (!text || !*text) return -1;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || errno == ERANGE || !isfinite(v)) return -1;
  double scale = 1;
  if (*end) {
    switch (*end) {
    case 'p': scale = 1e-12; break;
    case 'n': scale = 1e-9; break;
    case 'u': scale = 1e-6; break;
    case 'm': scale = 1e-3; break;
    case 'k':
    case 'K': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'G': scale = 1e9; break;
    case 'T': scale = 1e12; break;
    default: return -1;
    }
    end++;
    if (*end) return -1;
  }
  v *= scale;
  if (!isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_uint(const char *text, unsigned long min, unsigned long max, unsigned long *out) {
  if (!text || !*text || strchr(text, '-') || strchr(text, '+')) return -1;
  unsigned long long v;
  if (strspn(text, "0123456789") == strlen(text)) {
    /* plain decimal: exact, whatever its size */
    errno = 0;
    v = strtoull(text, NULL, 10);
    if (errno == ERANGE) return -1;
  } else {
    /* with an engineering suffix or exponent (1M, 2e3): exact only below 2^53 */
    double d;
    if (cli_parse_eng(text, &d) != 0 || d != floor(d) || d < 0 || d >= 9007199254740992.0)
      return -1;
    v = (unsigned long long)d;
  }
  if (v < min || v > max) return -1;
  *out = (unsigned long)v;
  return 0;
}
