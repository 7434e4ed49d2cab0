/* Fuzz target: the command's number parsers (cli/common.c, linked in): cli_parse_eng
 * (engineering notation: 6.5536M, 12.8k, 2.4e3, 50u), cli_parse_uint (an integer in [min, max])
 * and cli_parse_time (90, 1:02:03.5, 48kS).
 *
 * Input layout: byte 0 picks [min, max] for cli_parse_uint (the ranges the subcommands use, the
 * full unsigned long range, or min and max from the next 16 bytes); the rest, NUL-terminated,
 * is the text.
 *
 * Invariants (cli/cli.h): cli_parse_time (--start, --duration) accepts exactly seconds, [H:]M:S
 * with a fraction on the seconds only, or a whole number of samples with S, and gives the samples
 * its documentation says at one of four rates; cli_parse_eng accepts exactly a number strtod
 * reads whole, or one
 * followed by one suffix of p n u m k K M G T, giving that number times the suffix's scale,
 * and never a non-finite value; cli_parse_uint accepts only text without '-' that
 * cli_parse_eng reads as an integer in [min, max], returns exactly that integer, and for a plain
 * decimal string exactly its decimal value. */
#include "fuzz.h"

#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>

/* The scale of an engineering suffix, 0 if c is none. */
static double suffix_scale(char c) {
  switch (c) {
  case 'p': return 1e-12;
  case 'n': return 1e-9;
  case 'u': return 1e-6;
  case 'm': return 1e-3;
  case 'k':
  case 'K': return 1e3;
  case 'M': return 1e6;
  case 'G': return 1e9;
  case 'T': return 1e12;
  }
  return 0;
}

/* What cli_parse_eng should do with s, from its documentation: 1 and *v if it is a number. */
static int ref_eng(const char *s, double *v) {
  if (!*s) return 0;
  errno = 0;
  char *end;
  double x = strtod(s, &end);
  if (end == s || errno == ERANGE || !isfinite(x)) return 0;
  if (*end) {
    double scale = suffix_scale(*end);
    if (scale == 0 || end[1]) return 0;
    x *= scale;
  }
  if (!isfinite(x)) return 0;
  *v = x;
  return 1;
}

static void check_eng(const char *s) {
  double v = 12345.678, r = 0;
  int ok = cli_parse_eng(s, &v) == 0;
  int ref = ref_eng(s, &r);
  FUZZ_CHECK(ok == ref, "cli_parse_eng(\"%s\") %s, expected %s", s, ok ? "accepted" : "refused",
             ref ? "a number" : "a refusal");
  if (ok) {
    FUZZ_CHECK(isfinite(v), "cli_parse_eng(\"%s\") = %g", s, v);
    FUZZ_CHECK(v == r, "cli_parse_eng(\"%s\") = %.17g, expected %.17g", s, v, r);
  }
}

static void check_uint(const char *s, unsigned long min, unsigned long max) {
  unsigned long u = 12345;
  if (cli_parse_uint(s, min, max, &u) != 0) return;
  FUZZ_CHECK(!strchr(s, '-'), "cli_parse_uint(\"%s\") accepted a minus sign: %lu", s, u);
  FUZZ_CHECK(u >= min && u <= max, "cli_parse_uint(\"%s\", %lu, %lu) = %lu, out of range", s, min,
             max, u);
  double v;
  FUZZ_CHECK(cli_parse_eng(s, &v) == 0, "cli_parse_uint accepted \"%s\" that is no number", s);
  FUZZ_CHECK((double)u == v && v == floor(v), "cli_parse_uint(\"%s\") = %lu but the text is %.17g",
             s, u, v);
  /* plain decimal: the exact value, not a rounded one */
  size_t digits = strspn(s, "0123456789");
  if (digits && !s[digits]) {
    errno = 0;
    unsigned long long exact = strtoull(s, NULL, 10);
    FUZZ_CHECK(errno == 0 && exact == u, "cli_parse_uint(\"%s\") = %lu, not the decimal value", s,
               u);
  }
}

/* Known issue, reported (fuzz branch report): cli_parse_uint converts through a double, so with
 * max >= 2^53 it rounds integers above 2^53 ("9007199254740993" gives ...992) and, for max =
 * ULONG_MAX, converts 2^64 to unsigned long (undefined behaviour). No subcommand passes such a
 * max today. Until it is fixed, max is clamped below 2^53 here so that the fuzzer looks further;
 * set this to 0 to fuzz the full range again. */
#ifndef FUZZ_KNOWN_UINT_ROUNDING
#define FUZZ_KNOWN_UINT_ROUNDING 0
#endif

/* What cli_parse_time should give for s at rate, from its documentation: 1 and *samples if it is
 * a time (seconds, [H:]M:S with the fraction on the seconds only, or N samples with "S"). */
static int ref_time(const char *s, double rate, uint64_t *samples) {
  size_t n = strlen(s);
  double v;
  if (n && n < 64 && s[n - 1] == 'S') {
    char buf[64];
    memcpy(buf, s, n - 1);
    buf[n - 1] = '\0';
    if (!ref_eng(buf, &v) || !(v >= 0) || v != floor(v) || v >= 9007199254740992.0) return 0;
    *samples = (uint64_t)v;
    return 1;
  }
  if (n >= 64) return 0;
  if (strchr(s, ':')) {
    double part[3];
    int k = 0;
    /* fields of decimal digits split by ':', the last with an optional .digits */
    const char *field = s;
    for (const char *p = s;; p++) {
      if (*p == ':' || *p == '\0') {
        size_t len = (size_t)(p - field), dot = strcspn(field, ".:");
        if (!len || k == 3) return 0;
        for (size_t i = 0; i < len; i++)
          if (!isdigit((unsigned char)field[i]) &&
              !(i == dot && *p == '\0' && i > 0 && i + 1 < len))
            return 0;
        part[k++] = strtod(field, NULL);
        if (!*p) break;
        field = p + 1;
      }
    }
    v = 0;
    for (int i = 0; i < k; i++) {
      if (i > 0 && !(part[i] < 60)) return 0;
      v = 60 * v + part[i];
    }
  } else if (!ref_eng(s, &v) || !(v >= 0)) {
    return 0;
  }
  double x = floor(v * rate + 0.5);
  if (!(x < 9007199254740992.0)) return 0;
  *samples = (uint64_t)x;
  return 1;
}

static void check_time(const char *s, double rate) {
  uint64_t got = 777, want = 0;
  int ok = cli_parse_time(s, rate, &got) == 0, ref = ref_time(s, rate, &want);
  FUZZ_CHECK(ok == ref, "cli_parse_time(\"%s\", %g) %s, expected %s", s, rate,
             ok ? "accepted" : "refused", ref ? "a time" : "a refusal");
  FUZZ_CHECK(!ok || got == want, "cli_parse_time(\"%s\", %g) = %llu, expected %llu", s, rate,
             (unsigned long long)got, (unsigned long long)want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  static const unsigned long ranges[][2] = {
      {1, 1ul << 22}, {1, 2}, {1, 4096}, {0, 1024}, {2, 1000000}, {1, 1ul << 52}, {0, ULONG_MAX}};
  const size_t n_ranges = sizeof ranges / sizeof ranges[0];
  uint8_t sel = fuzz_u8(&b);
  unsigned long min, max;
  if (sel % 8 < n_ranges) {
    min = ranges[sel % 8][0];
    max = ranges[sel % 8][1];
  } else {
    min = fuzz_u64(&b);
    max = fuzz_u64(&b);
  }
  if (FUZZ_KNOWN_UINT_ROUNDING && max >= (1ul << 53)) max = (1ul << 53) - 1;
  char *s = malloc(b.n + 1);
  FUZZ_CHECK(s, "out of memory");
  memcpy(s, b.p, b.n);
  s[b.n] = '\0';
  check_eng(s);
  check_uint(s, min, max);
  static const double rates[4] = {48000, 6.5536e6, 12001.135, 1};
  check_time(s, rates[sel / 8 % 4]);
  free(s);
  return 0;
}
