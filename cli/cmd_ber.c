/* polyrx ber: bit error rate between transmitted and received bit files (unpacked, one 0/1
 * byte per bit, as polyrx gen --bits and polyrx demod -o write). The two streams are aligned
 * first (a channelizer and a matched filter delay the received bits by some symbols), by the
 * shift that makes the fewest errors over the first bits; then every overlapping bit counts.
 * Where no shift near 0 fits (the received bits of a range of a recording, --start), every shift
 * at which 64 bits of one stream nearly match the other is tried: O(n), not O(n N). */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BER_MAX_BYTES ((size_t)1 << 31)
#define BER_ALIGN_BITS 8192

static const char *usage_text =
    "usage: polyrx ber REF.bits|- RX.bits|- [--max-shift N] [--max-ber X]\n"
    "\n"
    "Counts bit errors between a reference (e.g. polyrx gen --bits) and received bits (e.g.\n"
    "polyrx demod -o), both unpacked: one byte, 0 or 1, per bit. The received stream is first\n"
    "aligned to the reference by the shift in [-N, N] bits (default 512) that gives the fewest\n"
    "errors over the first 8192 bits; where none gives under 25 %% errors (the bits of a range\n"
    "of a recording, demod --start), any shift where 64 bits of one stream match the other's\n"
    "but for 16 at most; all overlapping bits are then compared. Either file (not both) may be\n"
    "'-', standard input (e.g. polyrx demod ... -o - | polyrx ber sent -).\n"
    "\n"
    "  --max-shift N   largest alignment shift tried, in bits (default 512)\n"
    "  --max-ber X     exit with status 3 when the BER exceeds X (for scripts)\n"
    "  -h, --help      this text\n"
    "      --version   the polyrx version\n"
    "\n"
    "Exit status: 0 done, 1 error, 2 usage error, 3 BER above --max-ber.\n";

/* Reads a whole bit file, checking that every byte is 0 or 1. */
static uint8_t *read_bits(const char *path, size_t *n) {
  int is_stdin = !strcmp(path, "-");
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    cli_error("ber", "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (is_stdin) path = "standard input";
  size_t cap = 1 << 16, len = 0;
  uint8_t *b = malloc(cap);
  for (;;) {
    if (!b) break;
    len += fread(b + len, 1, cap - len, f);
    if (len < cap) break;
    if (cap >= BER_MAX_BYTES) {
      cli_error("ber", "'%s' is larger than %zu bits", path, BER_MAX_BYTES);
      free(b);
      b = NULL;
      break;
    }
    uint8_t *nb = realloc(b, cap * 2);
    if (!nb) free(b);
    b = nb;
    cap *= 2;
  }
  if (b && ferror(f)) {
    cli_error("ber", "read error on '%s'", path);
    free(b);
    b = NULL;
  }
  if (!is_stdin) fclose(f);
  if (!b) return NULL;
  for (size_t i = 0; i < len; i++) {
    if (b[i] > 1) {
      cli_error("ber", "'%s' is not an unpacked bit file: byte %zu is 0x%02x (expected 0 or 1)",
                path, i, b[i]);
      free(b);
      return NULL;
    }
  }
  *n = len;
  return b;
}

/* Errors and compared bits when rx[i + shift] is matched with ref[i], over at most limit bits. */
static void count(const uint8_t *ref, size_t n_ref, const uint8_t *rx, size_t n_rx, long shift,
                  size_t limit, size_t *errors, size_t *compared) {
  size_t i0 = shift < 0 ? (size_t)(-shift) : 0, e = 0, c = 0;
  for (size_t i = i0; i < n_ref && c < limit; i++, c++) {
    size_t j = (size_t)((long)i + shift);
    if (j >= n_rx) break;
    e += ref[i] != rx[j];
  }
  *errors = e;
  *compared = c;
}

/* The two streams and the best alignment found so far. */
typedef struct {
  const uint8_t *ref, *rx;
  size_t n_ref, n_rx;
  long best;        /* rx's index less ref's */
  double best_rate; /* its errors over the first BER_ALIGN_BITS compared (above 1: none yet) */
} alignment;

/* Scores a shift as every search does: the errors over the first bits it matches, 64 at least. */
static void try_shift(alignment *a, long shift) {
  size_t e, c;
  count(a->ref, a->n_ref, a->rx, a->n_rx, shift, BER_ALIGN_BITS, &e, &c);
  if (c >= 64 && (double)e / c < a->best_rate) {
    a->best_rate = (double)e / c;
    a->best = shift;
  }
}

/* The shifts where 64 bits of one stream (from its 9th bit: a differential stream's first two
 * are noise) differ from a run of the other's in 16 bits at most, the other's window rolled one
 * bit at a time: rx inside ref where rx_in_ref, else ref inside rx. */
static void search_runs(alignment *a, int rx_in_ref) {
  const uint8_t *hay = rx_in_ref ? a->ref : a->rx, *needle = rx_in_ref ? a->rx : a->ref;
  size_t n_hay = rx_in_ref ? a->n_ref : a->n_rx, n_needle = rx_in_ref ? a->n_rx : a->n_ref;
  const size_t at = 8;
  if (n_needle < at + 64 || n_hay < 64) return;
  uint64_t sig = 0, w = 0;
  for (size_t t = 0; t < 64; t++) sig = sig << 1 | needle[at + t];
  for (size_t k = 0; k < n_hay; k++) {
    w = w << 1 | hay[k];
    if (k < 63 || __builtin_popcountll(w ^ sig) > 16) continue;
    /* hay[k - 63 + t] ~ needle[at + t] */
    long d = (long)at - (long)(k - 63);
    try_shift(a, rx_in_ref ? d : -d);
  }
}

int cmd_ber(int argc, char **argv) {
  unsigned long max_shift = 512;
  double max_ber = -1;
  static const struct option opts[] = {{"max-shift", required_argument, 0, 'S'},
                                       {"max-ber", required_argument, 0, 'B'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'S':
      if (cli_parse_uint(optarg, 0, 1u << 30, &max_shift))
        return cli_usage_error("ber", "--max-shift must be a whole number of bits, got '%s'",
                               optarg);
      break;
    case 'B':
      if (cli_parse_eng(optarg, &max_ber) || max_ber < 0 || max_ber > 1)
        return cli_usage_error("ber", "--max-ber must be in [0, 1], got '%s'", optarg);
      break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: fputs(usage_text, stderr); return 2;
    }
  }
  if (argc - optind != 2) {
    fputs(usage_text, stderr);
    return cli_usage_error("ber", "expected two bit files, got %d argument(s)", argc - optind);
  }
  if (!strcmp(argv[optind], "-") && !strcmp(argv[optind + 1], "-"))
    return cli_usage_error("ber", "only one of the two bit files can be standard input ('-')");
  size_t n_ref = 0, n_rx = 0;
  uint8_t *ref = read_bits(argv[optind], &n_ref);
  uint8_t *rx = ref ? read_bits(argv[optind + 1], &n_rx) : NULL;
  if (!ref || !rx) {
    free(ref);
    return 1;
  }
  alignment al = {ref, rx, n_ref, n_rx, 0, 2};
  for (long s = -(long)max_shift; s <= (long)max_shift; s++) try_shift(&al, s);
  if (al.best_rate > 0.25) { /* no shift near 0 fits: a part far inside the other stream */
    search_runs(&al, 1);
    search_runs(&al, 0);
  }
  long best = al.best;
  double best_rate = al.best_rate;
  if (best_rate > 1) {
    free(ref);
    free(rx);
    return cli_error("ber", "the streams do not overlap by 64 bits at any shift within +-%lu",
                     max_shift);
  }
  size_t errors, compared;
  count(ref, n_ref, rx, n_rx, best, SIZE_MAX, &errors, &compared);
  double ber = (double)errors / compared;
  printf("reference %zu bits, received %zu bits, aligned at shift %+ld bits\n", n_ref, n_rx, best);
  printf("compared %zu bits: %zu errors, BER %.3e\n", compared, errors, ber);
  if (best_rate > 0.25)
    fprintf(stderr,
            "polyrx ber: warning: best alignment still has a BER of %.2f: the streams may "
            "be unrelated (or the quarter-turn is unresolved)\n",
            best_rate);
  free(ref);
  free(rx);
  return max_ber >= 0 && ber > max_ber ? 3 : 0;
}
