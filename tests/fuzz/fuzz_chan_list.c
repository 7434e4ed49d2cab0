/* Fuzz target: the channel list parser prx_chan_parse_list ("3,7,100-120") on arbitrary text.
 *
 * Input layout: byte 0 picks how K is drawn (usually 1..256, sometimes 1..65536, sometimes any
 * 32-bit value, 0 included); the rest, NUL-terminated, is the list.
 *
 * A reference parser written here from the documented grammar (items "a" or "a-b" of decimal
 * channel numbers, a <= b < K, separated by commas, nothing else) says whether the text is
 * valid and what it lists. Invariants: the parser succeeds exactly on valid text, and then
 * returns that list (so every index < K and the count is right); otherwise it fails with
 * PRX_ERR_FORMAT or PRX_ERR_INVALID and a message. Lists of more than 2^22 entries are not
 * parsed (a gigabyte each); more than 2^32 must be refused (they cannot fit). */
#include "fuzz.h"

#include <limits.h>

typedef struct {
  unsigned long a, b;
} range;

/* Reads a decimal number of unsigned long at *p; -1 when there is none or it overflows. */
static int ref_number(const char **p, unsigned long *v) {
  if (**p < '0' || **p > '9') return -1;
  unsigned long x = 0;
  int over = 0;
  for (; **p >= '0' && **p <= '9'; (*p)++) {
    unsigned d = (unsigned)(**p - '0');
    if (x > (ULONG_MAX - d) / 10) over = 1;
    x = x * 10 + d;
  }
  *v = x;
  return over ? -1 : 0;
}

/* The ranges of a valid list (and the entry count), or -1 for invalid text. */
static int ref_parse(const char *s, unsigned K, range *rs, size_t max_ranges, size_t *n_ranges,
                     unsigned long long *count) {
  *n_ranges = 0;
  *count = 0;
  for (const char *p = s;;) {
    range r;
    if (ref_number(&p, &r.a)) return -1;
    r.b = r.a;
    if (*p == '-') {
      p++;
      if (ref_number(&p, &r.b)) return -1;
    }
    if (r.b < r.a || r.b >= K) return -1;
    if (*n_ranges == max_ranges) return -1; /* cannot happen: a range takes >= 2 characters */
    rs[(*n_ranges)++] = r;
    unsigned long long c = (unsigned long long)(r.b - r.a) + 1;
    *count = *count > ULLONG_MAX - c ? ULLONG_MAX : *count + c;
    if (*p == '\0') return 0;
    if (*p != ',') return -1;
    p++;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  uint8_t sel = fuzz_u8(&b);
  unsigned K = sel < 192 ? 1u + fuzz_u8(&b) : sel < 224 ? 1u + fuzz_u16(&b) : fuzz_u32(&b);
  char *text = malloc(b.n + 1);
  FUZZ_CHECK(text, "out of memory");
  memcpy(text, b.p, b.n);
  text[b.n] = '\0';

  size_t max_ranges = b.n / 2 + 1, n_ranges;
  range *rs = malloc(max_ranges * sizeof *rs);
  FUZZ_CHECK(rs, "out of memory");
  unsigned long long count;
  int valid = ref_parse(text, K, rs, max_ranges, &n_ranges, &count) == 0;
  if (valid && count > ((unsigned long long)1 << 22) && count <= ((unsigned long long)1 << 32)) {
    free(rs);
    free(text);
    return 0; /* a valid list too long to be worth allocating here */
  }
  int must_fail = !valid || count > ((unsigned long long)1 << 32);

  unsigned *list = (unsigned *)&sel; /* must be replaced by the call */
  size_t n = 12345;
  fuzz_clear_error();
  prx_status st = prx_chan_parse_list(text, K, &list, &n);
  if (must_fail) {
    FUZZ_CHECK(st != PRX_OK, "'%s' (K = %u) was accepted: %zu channels", text, K, n);
    FUZZ_CHECK(st == PRX_ERR_FORMAT || st == PRX_ERR_INVALID, "'%s' (K = %u): status %d", text, K,
               (int)st);
    FUZZ_CHECK_ERROR(st, "prx_chan_parse_list");
    FUZZ_CHECK(list == NULL && n == 0, "a failed parse left a list (%zu entries)", n);
  } else {
    FUZZ_CHECK(st == PRX_OK, "'%s' (K = %u) was refused: %s", text, K, prx_last_error());
    FUZZ_CHECK(n == count, "'%s' (K = %u): %zu channels, expected %llu", text, K, n, count);
    size_t i = 0;
    for (size_t r = 0; r < n_ranges; r++)
      for (unsigned long k = rs[r].a; k <= rs[r].b; k++, i++) {
        FUZZ_CHECK(list[i] < K, "'%s': entry %zu is %u, not below K = %u", text, i, list[i], K);
        FUZZ_CHECK(list[i] == k, "'%s': entry %zu is %u, expected %lu", text, i, list[i], k);
      }
    free(list);
  }
  free(rs);
  free(text);
  return 0;
}
