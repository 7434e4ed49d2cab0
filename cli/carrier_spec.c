/* --carrier SPEC, the comma-separated key=value list that `gen` and `rx` share (one parser, so
 * the keys mean the same in both). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const keys[] = {"f",   "rs",   "rolloff", "span", "power", "phase", "timing",
                                   "ppm", "diff", "pilots",  "seed", "freq",  "pi4"};
enum { NKEYS = sizeof keys / sizeof keys[0] };

static int parse_pilots(const char *v, prx_sim_carrier *c) {
  const char *colon = strchr(v, ':');
  if (!colon) return -1;
  char period[64];
  size_t len = (size_t)(colon - v);
  if (len == 0 || len >= sizeof period) return -1;
  memcpy(period, v, len);
  period[len] = 0;
  unsigned long p, l;
  if (cli_parse_uint(period, 2, 1000000, &p) || cli_parse_uint(colon + 1, 1, 1000000, &l))
    return -1;
  c->pilot_period = (unsigned)p;
  c->pilot_len = (unsigned)l;
  return 0;
}

int cli_parse_seed(const char *v, uint64_t *out) {
  if (!*v || *v == '-' || *v == '+') return -1;
  errno = 0;
  char *end;
  unsigned long long s = strtoull(v, &end, 10);
  if (*end || errno) return -1;
  *out = (uint64_t)s;
  return 0;
}

/* A flag key (diff, pi4): given alone it is 1, else its value, 0 or 1. 0, or -1 for another value.
 */
static int parse_flag(const char *v, int *out) {
  double d = 1;
  if (v && (cli_parse_eng(v, &d) || (d != 0 && d != 1))) return -1;
  *out = d == 1;
  return 0;
}

/* "f, rs, ..." for the keys in mask, into buf. */
static const char *key_list(unsigned mask, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = 0;
  for (int k = 0; k < NKEYS; k++)
    if (mask & (1u << k))
      len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", len ? ", " : "",
                              keys[k]);
  return buf;
}

int cli_parse_carrier(const char *cmd, const char *spec, unsigned allowed, prx_sim_carrier *c,
                      unsigned *given) {
  int seen[NKEYS] = {0};
  char list[128];
  *c = prx_sim_carrier_default();
  if (!*spec) return cli_error(cmd, "--carrier: empty specification");
  char *copy = strdup(spec);
  if (!copy) return cli_error(cmd, "out of memory");
  int rc = 0;
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    const char *val = eq ? eq + 1 : NULL;
    if (eq) *eq = 0;
    int k = 0;
    while (k < NKEYS && strcmp(item, keys[k])) k++;
    if (k == NKEYS) {
      rc = cli_error(cmd, "--carrier '%s': unknown key '%s' (expected %s)", spec, item,
                     key_list(allowed, list, sizeof list));
      break;
    }
    if (!(allowed & (1u << k))) {
      rc = cli_error(cmd, "--carrier '%s': key '%s' is not for %s (it takes %s)", spec, item, cmd,
                     key_list(allowed, list, sizeof list));
      break;
    }
    if (seen[k]++) {
      rc = cli_error(cmd, "--carrier '%s': key '%s' given twice", spec, item);
      break;
    }
    if (!val && k != CLI_CARRIER_KEY_DIFF && k != CLI_CARRIER_KEY_PI4) {
      rc = cli_error(cmd, "--carrier '%s': key '%s' needs a value (%s=...)", spec, item, item);
      break;
    }
    unsigned long u = 0;
    int bad = 0;
    switch (k) {
    case 0: bad = cli_parse_eng(val, &c->freq); break;
    case 1: bad = cli_parse_eng(val, &c->symbol_rate); break;
    case 2: bad = cli_parse_eng(val, &c->rolloff); break;
    case 3:
      bad = cli_parse_uint(val, 0, 100000, &u);
      c->span = (unsigned)u;
      break;
    case 4: bad = cli_parse_eng(val, &c->power_db); break;
    case 5: bad = cli_parse_eng(val, &c->phase); break;
    case 6: bad = cli_parse_eng(val, &c->timing_offset); break;
    case 7: bad = cli_parse_eng(val, &c->clock_ppm); break;
    case CLI_CARRIER_KEY_DIFF: bad = parse_flag(val, &c->differential); break;
    case 9: bad = parse_pilots(val, c); break;
    case 10: bad = cli_parse_seed(val, &c->seed); break;
    case CLI_CARRIER_KEY_FREQ: bad = cli_parse_eng(val, &c->freq); break;
    case CLI_CARRIER_KEY_PI4: bad = parse_flag(val, &c->pi4); break;
    }
    if (bad)
      rc = cli_error(cmd, "--carrier '%s': bad value '%s' for %s%s", spec, val ? val : "", item,
                     k == 9 ? " (expected PERIOD:LENGTH, e.g. 64:8)" : "");
  }
  if (given) {
    *given = 0;
    for (int k = 0; k < NKEYS; k++) *given |= seen[k] ? 1u << k : 0;
  }
  if (!rc && !seen[1])
    rc = cli_error(cmd, "--carrier '%s': the symbol rate is missing (rs=RATE)", spec);
  if (!rc && seen[0] && seen[CLI_CARRIER_KEY_FREQ])
    rc = cli_error(cmd, "--carrier '%s': f= (from the centre) or freq= (absolute), not both", spec);
  free(copy);
  return rc;
}
