/* SigMF core:datetime (ISO-8601, UTC) shifted by a time offset, for recordings derived from
 * another whose samples sit at a different instant (a channelizer's output sample j is the
 * input's time jD + e). Times are held as whole seconds since 1970 plus picoseconds, so that a
 * shift of a fraction of a sample period at tens of MHz is kept exactly to the picosecond. */
#include "io_internal.h"

#include "../core/internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define PS_PER_S 1000000000000LL

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

/* n decimal digits at p into *v; -1 when they are not all digits */
static int digits(const char *p, int n, int *v) {
  *v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)p[i])) return -1;
    *v = *v * 10 + (p[i] - '0');
  }
  return 0;
}

static int days_in_month(int64_t y, int m) {
  static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return dm[m - 1] + (m == 2 && leap);
}

/* "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" into seconds since 1970 (UTC) + picoseconds */
static int parse(const char *s, int64_t *sec, int64_t *ps) {
  int y, mo, d, h, mi, se;
  if (strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
      digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
      s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &se))
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
    return -1;
  const char *p = s + 19;
  int64_t frac = 0, scale = PS_PER_S;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p)) return -1;
    for (; isdigit((unsigned char)*p); p++) {
      if (scale > 1) { /* digits past the picosecond are dropped */
        scale /= 10;
        frac += (*p - '0') * scale;
      }
    }
  }
  int64_t offset = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
      return -1;
    offset = (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    p += 6;
  } else {
    return -1;
  }
  if (*p) return -1;
  *sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
  *ps = frac;
  return 0;
}

int prx_utc_text(int64_t sec, int64_t frac, int digits, char *out, size_t n) {
  int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400), rem = sec - days * 86400;
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  if (y < 0 || y > 9999 || digits < 0 || digits > 12) return -1;
  int k = snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d", (int)y, m, d, (int)(rem / 3600),
                   (int)(rem / 60 % 60), (int)(rem % 60));
  if (digits && k > 0 && (size_t)k < n)
    k += snprintf(out + k, n - (size_t)k, ".%0*lld", digits, (long long)frac);
  if (k > 0 && (size_t)k < n) snprintf(out + k, n - (size_t)k, "Z");
  return 0;
}

prx_status prx_sigmf_datetime_diff(const char *a, const char *b, double *seconds) {
  if (!a || !b || !seconds) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_datetime_diff: NULL");
  int64_t sa, pa, sb, pb;
  const char *bad = parse(a, &sa, &pa) ? a : parse(b, &sb, &pb) ? b : NULL;
  if (bad)
    return prx_fail(PRX_ERR_FORMAT,
                    "'%s' is not an ISO-8601 time (expected e.g. 2026-12-01T10:00:00.5Z or "
                    "2026-12-01T12:00:00+02:00)",
                    bad);
  *seconds = (double)(sa - sb) + (double)(pa - pb) / (double)PS_PER_S;
  return PRX_OK;
}

prx_status prx_sigmf_datetime_shift(const char *datetime, double seconds, char out[48]) {
  if (!datetime || !out) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_datetime_shift: NULL");
  int64_t sec, ps;
  if (parse(datetime, &sec, &ps))
    return prx_fail(PRX_ERR_FORMAT,
                    "core:datetime '%s' is not an ISO-8601 time polyrx can shift (expected e.g. "
                    "2026-12-01T10:00:00.5Z or 2026-12-01T12:00:00+02:00)",
                    datetime);
  if (!isfinite(seconds) || fabs(seconds) > 1e11)
    return prx_fail(PRX_ERR_INVALID, "datetime shift of %g s is out of range", seconds);
  double whole = trunc(seconds);
  sec += (int64_t)whole;
  ps += (int64_t)llround((seconds - whole) * (double)PS_PER_S);
  while (ps < 0) ps += PS_PER_S, sec--;
  while (ps >= PS_PER_S) ps -= PS_PER_S, sec++;
  if (prx_utc_text(sec, ps, ps ? 12 : 0, out, 48))
    return prx_fail(PRX_ERR_INVALID, "shifted datetime is out of range");
  /* the fraction's trailing zeros dropped (the picoseconds of an exact shift) */
  char *z = strchr(out, 'Z'), *e = z;
  while (ps && e[-1] == '0') e--;
  memmove(e, z, 2);
  return PRX_OK;
}
