/* What the demodulator says about its own output: the clock offset within and beyond the
 * supported range (PRX_QPSK_MAX_CLOCK_PPM), blocks without a signal (no carrier, gaps of zeros
 * or of noise), a weak carrier told from none, a carrier beyond the CFO range (aliased), a
 * wrong symbol rate, the Es/N0
 * summary against the generator's truth, scale invariance (cf32 levels, integer inputs at full
 * scale and at a few LSBs), non-finite samples counted, and the memory estimate refusing
 * configurations that cannot fit. Every signal comes from the generator (prx_sim) with fixed seeds;
 * the truth (clock, Es/N0, gap positions, bits) is the generator's. */
#include "test_qpsk_sig.h"

#include <time.h>

typedef struct {
  unsigned *flags; /* per block */
  double *t;       /* block centre times, s */
  double *esn0;    /* the blocks' own Es/N0, dB */
  size_t n, cap;
} block_log;

static void log_block(void *user, const prx_qpsk_block *b) {
  block_log *l = user;
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->flags = realloc(l->flags, l->cap * sizeof *l->flags);
    l->t = realloc(l->t, l->cap * sizeof *l->t);
    l->esn0 = realloc(l->esn0, l->cap * sizeof *l->esn0);
  }
  l->esn0[l->n] = b->esn0_db;
  l->flags[l->n] = b->flags;
  l->t[l->n] = b->time;
  l->n++;
}

typedef struct {
  long errors;  /* over the counted bits; -1: count mismatch */
  size_t nbits; /* bits compared */
  prx_qpsk_stats st;
  block_log log;
  uint8_t *got, *ref; /* the demodulator's and the generator's data bits */
  size_t ngot, nref;
  float *llrs;
} result;

static void result_free(result *r) {
  free(r->log.flags);
  free(r->log.t);
  free(r->log.esn0);
  free(r->got);
  free(r->ref);
  free(r->llrs);
  memset(r, 0, sizeof *r);
}

/* n samples of the case, changed by alter(x, n, arg) where it is given before they are
 * demodulated (NaNs put in, a drift, a neighbour added) */
typedef void (*alter_fn)(prx_cf32 *x, size_t n, const void *arg);
static result run_altered(const tcase *c, size_t n, alter_fn alter, const void *arg) {
  result r;
  memset(&r, 0, sizeof r);
  r.errors = -1;
  prx_cf32 *x = tcase_make(c, n, &r.ref, &r.nref);
  CHECK(x != NULL, "generator failed: %s", prx_last_error());
  if (!x) return r;
  if (alter) alter(x, n, arg);
  size_t fsz = c->format == PRX_CF32 ? 8 : c->format == PRX_CI16 ? 4 : 2;
  void *enc = malloc(n * fsz);
  tcase_encode(c, x, n, enc);
  prx_qpsk_config qc = tcase_demod_config(c, 1);
  qc.on_block = log_block;
  qc.user = &r.log;
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) {
    CHECK(0, "create: %s", prx_last_error());
    free(x);
    free(enc);
    return r;
  }
  size_t cap = (size_t)((double)n / c->sps * 1.02) + 4 * 1100, got = 0, got2 = 0;
  r.got = malloc(2 * cap);
  r.llrs = malloc(2 * cap * sizeof(float));
  CHECK_OK(prx_qpsk_execute(q, enc, n, r.got, r.llrs, cap, &got));
  CHECK_OK(prx_qpsk_flush(q, r.got + 2 * got, r.llrs + 2 * got, cap - got, &got2));
  r.ngot = 2 * (got + got2);
  prx_qpsk_get_stats(q, &r.st);
  /* the locked blocks are those flagged neither no-signal nor clock-range */
  uint64_t locked = 0;
  for (size_t i = 0; i < r.log.n; i++)
    locked += !(r.log.flags[i] & (PRX_QPSK_BLOCK_NO_SIGNAL | PRX_QPSK_BLOCK_CLOCK_RANGE));
  CHECK(r.log.n == r.st.blocks && r.st.blocks_locked == locked,
        "stats: %llu locked blocks of %llu, the blocks' flags say %llu of %zu",
        (unsigned long long)r.st.blocks_locked, (unsigned long long)r.st.blocks,
        (unsigned long long)locked, r.log.n);
  r.errors = tcase_errors(c, r.got, r.ngot, r.ref, r.nref);
  r.nbits = r.nref;
  prx_qpsk_destroy(q);
  free(x);
  free(enc);
  return r;
}

typedef struct {
  const size_t *at;
  size_t n;
} nan_list;
static void put_nans(prx_cf32 *x, size_t n, const void *arg) {
  const nan_list *l = arg;
  (void)n;
  for (size_t i = 0; i < l->n; i++) x[l->at[i]].re = NAN;
}
/* n samples of the case; nan_at: sample indices made NaN (n_nan of them) */
static result run(const tcase *c, size_t n, const size_t *nan_at, size_t n_nan) {
  const nan_list l = {nan_at, n_nan};
  return run_altered(c, n, n_nan ? put_nans : NULL, &l);
}

static tcase base_case(test_rng *rng, double esn0) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, rng, 0.1, 0);
  c.noise = 1;
  c.esn0_db = esn0;
  c.differential = 1;
  return c;
}

static size_t count_flag(const block_log *l, unsigned f) {
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++) k += (l->flags[i] & f) != 0;
  return k;
}

/* inside the supported range: exact symbols, no warning, the offset measured; beyond it: every
 * span flagged and the warning raised (never a silent "ok") */
static void clock_range(void) {
  test_rng rng;
  test_rng_seed(&rng, 71);
  const double inside[] = {3000, -3000, 4900, -4900};
  for (size_t i = 0; i < 4; i++) {
    tcase c = base_case(&rng, 15);
    c.ppm = inside[i];
    result r = run(&c, tcase_length(&c, 60000 * 4), NULL, 0);
    CHECK(r.errors == 0, "%+g ppm at Es/N0 15 dB: %ld errors", c.ppm, r.errors);
    CHECK(r.st.warnings == 0 && r.st.blocks_clock_range == 0, "%+g ppm: warnings %#x", c.ppm,
          r.st.warnings);
    CHECK(fabs(r.st.clock_ppm - c.ppm) < 5, "%+g ppm: measured %+.2f", c.ppm, r.st.clock_ppm);
    result_free(&r);
  }
  /* the range holds at any sps: a fractional 16/3 and the largest ones, 64 and 1024 */
  const double spss[] = {16.0 / 3, 64, 1024};
  for (size_t i = 0; i < 3; i++) {
    for (int sgn = -1; sgn <= 1; sgn += 2) {
      tcase c = base_case(&rng, 15);
      c.sps = spss[i];
      c.ppm = sgn * 1000.0;
      result r = run(&c, tcase_length(&c, (size_t)(10000 * c.sps)), NULL, 0);
      CHECK(r.errors == 0 && r.st.warnings == 0, "sps %g, %+g ppm: %ld errors, warnings %#x", c.sps,
            c.ppm, r.errors, r.st.warnings);
      CHECK(fabs(r.st.clock_ppm - c.ppm) < 5, "sps %g, %+g ppm: measured %+.2f", c.sps, c.ppm,
            r.st.clock_ppm);
      result_free(&r);
    }
  }
  const double beyond[] = {6000, -7000, 10000, -10000};
  for (size_t i = 0; i < 4; i++) {
    tcase c = base_case(&rng, 15);
    c.ppm = beyond[i];
    result r = run(&c, tcase_length(&c, 60000 * 4), NULL, 0);
    CHECK(r.st.warnings & PRX_QPSK_WARN_CLOCK_RANGE, "%+g ppm: no clock-range warning (%#x)", c.ppm,
          r.st.warnings);
    CHECK(r.st.blocks_clock_range == r.st.blocks && r.log.n == r.st.blocks &&
              count_flag(&r.log, PRX_QPSK_BLOCK_CLOCK_RANGE) == r.log.n,
          "%+g ppm: %llu of %llu blocks flagged", c.ppm,
          (unsigned long long)r.st.blocks_clock_range, (unsigned long long)r.st.blocks);
    printf("clock %+6.0f ppm: warnings %#x, measured %+.0f ppm, %ld errors\n", c.ppm, r.st.warnings,
           r.st.clock_ppm, r.errors);
    result_free(&r);
  }
}

/* a timing jump (3 samples of 8 dropped: 3/8 symbol) early in the second CFO span: the blocks on
 * the minority side of it in that span leave the span's clock line and are flagged, no other */
static void timing_jump(void) {
  test_rng rng;
  test_rng_seed(&rng, 76);
  tcase c = base_case(&rng, 25);
  c.sps = 8;
  size_t n = tcase_length(&c, 40000 * 8), cut = (8192 + 1300) * 8, drop = 3;
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  CHECK(x != NULL, "generator failed");
  if (!x) return;
  memmove(x + cut, x + cut + drop, (n - cut - drop) * sizeof *x);
  block_log log = {NULL, NULL, NULL, 0, 0};
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  qc.on_block = log_block;
  qc.user = &log;
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  size_t cap = n / 8 + 8192, got = 0, got2 = 0;
  uint8_t *bits = malloc(2 * cap);
  CHECK_OK(prx_qpsk_execute(q, x, n - drop, bits, NULL, cap, &got));
  CHECK_OK(prx_qpsk_flush(q, bits + 2 * got, NULL, cap - got, &got2));
  prx_qpsk_stats st;
  prx_qpsk_get_stats(q, &st);
  size_t flagged = 0, outside = 0;
  for (size_t i = 0; i < log.n; i++) {
    if (!(log.flags[i] & PRX_QPSK_BLOCK_TIMING_JUMP)) continue;
    flagged++;
    outside += i < 16 || i >= 32; /* span 1 holds blocks 16 .. 31 */
  }
  printf("timing jump of 3/8 symbol: %zu blocks flagged, warnings %#x\n", flagged, st.warnings);
  CHECK(flagged >= 1 && flagged <= 4 && outside == 0,
        "timing jump: %zu blocks flagged, %zu outside the jump's span", flagged, outside);
  CHECK(st.blocks_timing_jump == flagged && (st.warnings & PRX_QPSK_WARN_TIMING),
        "timing jump: summary %llu blocks, warnings %#x", (unsigned long long)st.blocks_timing_jump,
        st.warnings);
  prx_qpsk_destroy(q);
  free(bits);
  free(x);
  free(ref);
  free(log.flags);
  free(log.t);
  free(log.esn0);
}

/* no carrier at all (noise only, or zeros): most blocks without a signal, the warning raised;
 * a gap of noise or of zeros mid-capture: its blocks flagged, the others not, their bits exact */
static void signal_present(void) {
  test_rng rng;
  test_rng_seed(&rng, 72);
  for (int zeros = 0; zeros < 2; zeros++) {
    tcase c = base_case(&rng, 12);
    size_t n = tcase_length(&c, 40000 * 4);
    prx_sim_gap all = {0, n, zeros};
    c.gaps = &all;
    c.n_gaps = 1;
    result r = run(&c, n, NULL, 0);
    CHECK((r.st.warnings & PRX_QPSK_WARN_NO_SIGNAL) &&
              !(r.st.warnings & (PRX_QPSK_WARN_WEAK_SIGNAL | PRX_QPSK_WARN_UNLOCKED)),
          "no carrier (%s): warnings %#x", zeros ? "zeros" : "noise", r.st.warnings);
    CHECK(r.st.blocks_no_signal * 100 >= r.st.blocks * 95, "no carrier (%s): %llu of %llu blocks",
          zeros ? "zeros" : "noise", (unsigned long long)r.st.blocks_no_signal,
          (unsigned long long)r.st.blocks);
    CHECK(r.errors >= 0, "no carrier: the symbol count still follows the input");
    result_free(&r);
  }
  for (int zeros = 0; zeros < 2; zeros++) {
    tcase c = base_case(&rng, 15);
    size_t n = tcase_length(&c, 80000 * 4);
    /* symbols 30000 .. 45000 muted */
    double st = tcase_sps_true(&c), first = c.timing * st;
    prx_sim_gap gap = {(uint64_t)(first + 30000 * st), (uint64_t)(15000 * st), zeros};
    c.gaps = &gap;
    c.n_gaps = 1;
    result r = run(&c, n, NULL, 0);
    CHECK(r.errors >= 0, "gap: symbols lost or inserted");
    /* bits of the symbols more than 20 symbols from the gap are exact */
    long e = 0;
    for (size_t k = 1; 2 * k + 1 < r.nref && r.ngot == r.nref; k++)
      if (k + 20 < 30000 || k > 45000 + 20) {
        long d = (r.got[2 * k] != r.ref[2 * k]) + (r.got[2 * k + 1] != r.ref[2 * k + 1]);
        e += d;
      }
    CHECK(e == 0, "gap of %s: %ld errors outside it", zeros ? "zeros" : "noise", e);
    size_t in_flag = 0, in_n = 0, out_flag = 0, out_n = 0;
    for (size_t i = 0; i < r.log.n; i++) {
      double sym = r.log.t[i] * 1e3; /* Rs = 1 kHz: block centre in symbols */
      int flagged = (r.log.flags[i] & PRX_QPSK_BLOCK_NO_SIGNAL) != 0;
      if (sym > 30000 + 300 && sym < 45000 - 300) {
        in_n++;
        in_flag += flagged;
      } else if (sym < 30000 - 300 || sym > 45000 + 300) {
        out_n++;
        out_flag += flagged;
      }
    }
    CHECK(in_n > 20 && in_flag == in_n, "gap of %s: %zu of %zu blocks inside flagged",
          zeros ? "zeros" : "noise", in_flag, in_n);
    CHECK(out_flag == 0, "gap of %s: %zu of %zu blocks outside flagged", zeros ? "zeros" : "noise",
          out_flag, out_n);
    CHECK(!(r.st.warnings & (PRX_QPSK_WARN_NO_SIGNAL | PRX_QPSK_WARN_UNLOCKED)),
          "a gap of 20%% raised the warnings %#x", r.st.warnings);
    /* the summary's Es/N0 is that of the blocks with a signal */
    CHECK(fabs(r.st.esn0_db - 15) < 0.5, "gap of %s: summary Es/N0 %.2f dB (15)",
          zeros ? "zeros" : "noise", r.st.esn0_db);
    result_free(&r);
  }
}

/* Es/N0 summary: total signal over total noise power, within 0.5 dB of the generator's. The
 * capture spans 10 CFO spans: the DC removal (the mean over up to 4 spans) also removes the mean
 * of the signal's own random data, a floor of 1 / (symbols averaged) (-39 dB after one span,
 * -45 dB after four) that the 30 dB point sees in its first spans. */
/* A weak carrier (Es/N0 0.5 to 2 dB, 6 CFO spans): most blocks flagged without a signal of their
 * own, the warning weak_signal and not no_signal (the CFO spans' blocks together show the line);
 * noise alone over as many spans (three captures), and a carrier far beyond the CFO range (0.4
 * Rs, 20 dB: no coherent line after the CFO search), no_signal and not weak_signal. */
static void weak_signal(void) {
  test_rng rng;
  test_rng_seed(&rng, 74);
  const double esn0s[] = {0.5, 1, 2};
  for (size_t i = 0; i < 3; i++) {
    tcase c = base_case(&rng, esn0s[i]);
    size_t n = tcase_length(&c, 6 * 8192 * 4);
    result r = run(&c, n, NULL, 0);
    printf("Es/N0 %.1f dB: %llu of %llu blocks without signal, warnings %#x\n", esn0s[i],
           (unsigned long long)r.st.blocks_no_signal, (unsigned long long)r.st.blocks,
           r.st.warnings);
    CHECK(r.st.warnings == PRX_QPSK_WARN_WEAK_SIGNAL || (esn0s[i] >= 2 && r.st.warnings == 0),
          "Es/N0 %g dB: warnings %#x, %llu of %llu blocks without signal", esn0s[i], r.st.warnings,
          (unsigned long long)r.st.blocks_no_signal, (unsigned long long)r.st.blocks);
    result_free(&r);
  }
  for (int k = 0; k < 4; k++) {
    tcase c = base_case(&rng, k < 3 ? -80 : 20);
    if (k == 3) c.cfo = 0.4;
    size_t n = tcase_length(&c, 6 * 8192 * 4);
    result r = run(&c, n, NULL, 0);
    /* (the carrier at 0.4 Rs is the 4th power's alias of -0.1 Rs: cfo_alias too) */
    const unsigned want = PRX_QPSK_WARN_NO_SIGNAL | (k == 3 ? PRX_QPSK_WARN_CFO_ALIAS : 0);
    CHECK(r.st.warnings == want, "%s: warnings %#x", k < 3 ? "noise alone" : "a carrier at 0.4 Rs",
          r.st.warnings);
    result_free(&r);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_WEAK_SIGNAL) != NULL, "no text for weak_signal");
}

/* A carrier beyond the CFO acquisition range whose 4th-power line aliases onto one inside it
 * (0.15 to 0.5 Rs off centre, either side, 8 dB, sps 4 and 2): the warning cfo_alias, its bits
 * wrong (BER above 0.2); carriers inside the range (0 to 0.115 Rs, at 8 and 2 dB) and noise
 * alone: no cfo_alias, and at 8 dB the bits right but for the noise's errors (BER < 0.02, theory
 * 0.012). */
/* a second carrier (noiseless) added at amplitude amp */
typedef struct {
  tcase c;
  float amp;
} neighbour;
static void add_neighbour(prx_cf32 *x, size_t n, const void *arg) {
  const neighbour *nb = arg;
  uint8_t *ref = NULL;
  size_t nref = 0;
  prx_cf32 *y = tcase_make(&nb->c, n, &ref, &nref);
  CHECK(y != NULL, "neighbour: %s", prx_last_error());
  for (size_t k = 0; y && k < n; k++) {
    x[k].re += nb->amp * y[k].re;
    x[k].im += nb->amp * y[k].im;
  }
  free(y);
  free(ref);
}

static void cfo_alias(void) {
  test_rng rng;
  test_rng_seed(&rng, 75);
  const double out[] = {0.15, -0.2, 0.3, 0.5}, in[] = {0, 0.06, -0.115};
  for (int i = 0; i < 8; i++) {
    tcase c = base_case(&rng, 8);
    c.cfo = out[i % 4];
    c.sps = i < 4 ? 4 : 2;
    size_t n = tcase_length(&c, 3 * 8192 * 4);
    result r = run(&c, n, NULL, 0);
    const double ber = r.errors >= 0 && r.nbits ? (double)r.errors / (double)r.nbits : 1;
    printf("a carrier at %+.2f Rs, sps %g: warnings %#x, BER %.3f\n", c.cfo, c.sps, r.st.warnings,
           ber);
    CHECK((r.st.warnings & PRX_QPSK_WARN_CFO_ALIAS) && ber > 0.2,
          "a carrier at %+g Rs (sps %g): warnings %#x, BER %.3f", c.cfo, c.sps, r.st.warnings, ber);
    result_free(&r);
  }
  for (int i = 0; i < 7; i++) {
    tcase c = base_case(&rng, i < 3 ? 8 : i < 6 ? 2 : -80);
    c.cfo = in[i % 3];
    size_t n = tcase_length(&c, 3 * 8192 * 4);
    result r = run(&c, n, NULL, 0);
    const double ber = r.errors >= 0 && r.nbits ? (double)r.errors / (double)r.nbits : 1;
    CHECK(!(r.st.warnings & PRX_QPSK_WARN_CFO_ALIAS) && (c.esn0_db < 8 || ber < 0.02),
          "%s at %+g Rs, %g dB: warnings %#x, BER %.3g", i < 6 ? "a carrier" : "noise", c.cfo,
          c.esn0_db, r.st.warnings, ber);
    result_free(&r);
  }
  /* a carrier in the range beside a much stronger neighbour outside its band (1.6 Rs up 20 dB,
   * 1.9 Rs down 30 dB, 2.4 Rs up 30 dB at sps 8): no alias, its bits right (the measure through
   * four sections at 1 Rs called most of these an alias) */
  const double nf[] = {1.6, -1.9, 2.4}, ndb[] = {20, 30, 30}, nsps[] = {4, 4, 8};
  for (int i = 0; i < 3; i++) {
    tcase c = base_case(&rng, 20);
    neighbour nb = {base_case(&rng, 20), (float)pow(10, ndb[i] / 20)};
    c.sps = nb.c.sps = nsps[i];
    c.cfo = 0.05;
    nb.c.cfo = nf[i];
    nb.c.noise = 0;
    nb.c.seed = 99;
    result r = run_altered(&c, tcase_length(&c, 3 * 8192 * (size_t)c.sps), add_neighbour, &nb);
    printf("a neighbour %+g dB at %+g Rs (sps %g): warnings %#x, %ld errors\n", ndb[i], nf[i],
           nsps[i], r.st.warnings, r.errors);
    CHECK(!(r.st.warnings & PRX_QPSK_WARN_CFO_ALIAS) && r.errors >= 0 &&
              r.errors < (long)r.nref / 1000,
          "a neighbour %+g dB at %+g Rs: warnings %#x, %ld errors", ndb[i], nf[i], r.st.warnings,
          r.errors);
    result_free(&r);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_CFO_ALIAS) != NULL, "no text for cfo_alias");
}

/* A signal at half or twice the given symbol rate (sps 8 and 2 demodulated as sps 4): its samples
 * still look like QPSK symbols, so its blocks show a signal, but no CFO span has a symbol-timing
 * line: the warning symbol_rate (at 20 and 5 dB); at the right rate (20 and 1 dB) none. */
static void symbol_rate(void) {
  test_rng rng;
  test_rng_seed(&rng, 76);
  const double sps[] = {8, 2, 8, 2, 4, 4}, esn0[] = {20, 20, 5, 5, 20, 1};
  for (int i = 0; i < 6; i++) {
    tcase c = base_case(&rng, esn0[i]);
    c.sps = sps[i];
    size_t n = tcase_length(&c, 3 * 8192 * 4); /* (3 spans at sps 4) */
    uint8_t *ref = NULL;
    size_t nref = 0;
    prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
    tcase d = c;
    d.sps = 4; /* the rate the demodulator is told */
    prx_qpsk_config qc = tcase_demod_config(&d, 1);
    prx_qpsk *q = NULL;
    CHECK(x && prx_qpsk_create(&qc, &q) == PRX_OK, "create: %s", prx_last_error());
    size_t nb = 0;
    uint8_t *bits = q ? tcase_demod(q, x, n, NULL, 0, &nb, NULL) : NULL;
    prx_qpsk_stats st;
    memset(&st, 0, sizeof st);
    if (q) prx_qpsk_get_stats(q, &st);
    const int want = sps[i] != 4;
    printf("sps %g read as 4, %g dB: warnings %#x\n", sps[i], esn0[i], st.warnings);
    CHECK(!!(st.warnings & PRX_QPSK_WARN_SYMBOL_RATE) == want, "sps %g read as 4, %g dB: %#x",
          sps[i], esn0[i], st.warnings);
    free(bits);
    free(ref);
    free(x);
    prx_qpsk_destroy(q);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_SYMBOL_RATE) != NULL, "no text for symbol_rate");
}

/* A strong carrier whose frequency drifts faster than the CFO spans follow (a linear ramp of
 * 0.0041 Rs a span of 8192 symbols: its blocks away from each span's middle turn within the
 * block and lose the 4th-power line; at 12 kBd, 72 Hz/s): most blocks flagged without a signal,
 * though their moments say 20 dB, so the warning is unlocked, not no_signal (which said the
 * input had no signal) nor nothing (a third of the blocks lost at half that rate used to give
 * "ok"); at half that rate, with fewer blocks lost, unlocked too; the same carrier without the
 * ramp: no warning; the fast drift again with spans of 1024 symbols in blocks of 256 (followed
 * 8 times closer): no block lost, no warning, every bit right. */
/* the samples turned by exp(j pi rate t^2) (arg: rate in Hz/s, the sample rate), the phase in
 * double: a frequency drifting linearly */
static void add_drift(prx_cf32 *x, size_t n, const void *arg) {
  const double *d = arg;
  for (size_t k = 0; k < n; k++) {
    const double t = (double)k / d[1], ph = M_PI * d[0] * t * t;
    const double cr = cos(ph), si = sin(ph), re = x[k].re, im = x[k].im;
    x[k].re = (float)(re * cr - im * si);
    x[k].im = (float)(re * si + im * cr);
  }
}
static void unlocked(void) {
  test_rng rng;
  test_rng_seed(&rng, 78);
  /* Hz/s at Rs = 1 kHz; the blocks and spans (0: the defaults, 512 and 8192); lost: unlocked */
  const struct {
    double rate;
    unsigned block, span;
    int lost;
  } cases[] = {{0.5, 0, 0, 1}, {0.25, 0, 0, 1}, {0, 0, 0, 0}, {0.5, 256, 1024, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tcase c = base_case(&rng, 20);
    c.cfo = 0.02;
    c.block_symbols = cases[i].block;
    c.cfo_span_symbols = cases[i].span;
    const double drift[2] = {cases[i].rate, c.sps * 1e3};
    result r = run_altered(&c, tcase_length(&c, 3 * 8192 * 4), add_drift, drift);
    const prx_qpsk_stats st = r.st;
    printf("drift %g Hz/s at 1 kBd, spans of %u symbols: %llu of %llu blocks without a signal, "
           "warnings %#x, %ld bit errors, drift measured %.4f Hz/s\n",
           cases[i].rate, cases[i].span ? cases[i].span : 8192,
           (unsigned long long)st.blocks_no_signal, (unsigned long long)st.blocks, st.warnings,
           r.errors, st.cfo_drift_hz_per_s);
    /* the drift measured where every block is followed (the blocks' CFO over their time) */
    if (!cases[i].lost)
      CHECK(fabs(st.cfo_drift_hz_per_s - cases[i].rate) <= 0.02 * cases[i].rate + 2e-4,
            "drift %g Hz/s measured %g Hz/s", cases[i].rate, st.cfo_drift_hz_per_s);
    if (cases[i].lost)
      CHECK(st.warnings == PRX_QPSK_WARN_UNLOCKED && st.blocks_no_signal * 5 > st.blocks,
            "drift %g Hz/s: warnings %#x, %llu of %llu blocks without a signal", cases[i].rate,
            st.warnings, (unsigned long long)st.blocks_no_signal, (unsigned long long)st.blocks);
    else
      CHECK(st.warnings == 0 && st.blocks_no_signal == 0 && r.errors == 0,
            "drift %g Hz/s, spans of %u: warnings %#x, %llu blocks without a signal, %ld errors",
            cases[i].rate, cases[i].span, st.warnings, (unsigned long long)st.blocks_no_signal,
            r.errors);
    result_free(&r);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_UNLOCKED) != NULL, "no text for unlocked");
}

/* tcase_line_make as an alter_fn */
static void make_line(prx_cf32 *x, size_t n, const void *arg) { tcase_line_make(x, n, arg); }
/* One case of the signal-kind tests: kind (a tcase_line kind, or -1: QPSK as generated) at
 * Es/N0 esn0 (INFINITY: without noise), from base_case and the next seed of rng. */
static result run_kind(test_rng *rng, int kind, double esn0) {
  tcase c = base_case(rng, isfinite(esn0) ? esn0 : 30);
  if (!isfinite(esn0)) c.noise = 0;
  tcase_line l;
  if (kind >= 0) l = tcase_line_of(&c, kind, test_rng_u64(rng));
  return run_altered(&c, tcase_length(&c, 3 * 8192 * 4), kind >= 0 ? make_line : NULL, &l);
}
/* case i's warnings against the warning `bit` (code name): raised (alone: nothing else) where
 * warned, absent where not */
static void check_kind(unsigned warnings, unsigned bit, int warned, int alone, const char *name,
                       size_t i) {
  if (warned && alone)
    CHECK(warnings == bit, "case %zu: warnings %#x, not %s alone", i, warnings, name);
  else if (warned)
    CHECK(warnings & bit, "case %zu: warnings %#x without %s", i, warnings, name);
  else
    CHECK(!(warnings & bit), "case %zu: warnings %#x with %s", i, warnings, name);
}

/* BPSK at 20 and 4 dB and a carrier without modulation raise not_qpsk (BPSK at 20 dB nothing
 * else: its blocks show QPSK's 4th-power line and symbol timing, and before this warning it was
 * "ok" with every symbol's two bits equal or opposite); QPSK with an I/Q error at 20 dB and QPSK
 * at 2 dB do not (the other cases of this test keep QPSK at every level free of it too: their
 * warnings are compared whole). */
static void not_qpsk(void) {
  test_rng rng;
  test_rng_seed(&rng, 91);
  const struct {
    int kind;
    double esn0;
    int warned;
  } cases[] = {{TCASE_BPSK, 20, 1},
               {TCASE_BPSK, 4, 1},
               {TCASE_CARRIER, 20, 1},
               {TCASE_IQ_ERROR, 20, 0},
               {TCASE_IQ_ERROR, 2, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    result r = run_kind(&rng, cases[i].kind, cases[i].esn0);
    const prx_qpsk_stats st = r.st;
    size_t equal = 0;
    for (size_t k = 0; k + 1 < r.ngot; k += 2) equal += r.got[k] == r.got[k + 1];
    printf("%s at %g dB: warnings %#x, %llu of %llu blocks with a signal, pairs of equal bits "
           "%.3f\n",
           cases[i].kind == TCASE_BPSK      ? "BPSK"
           : cases[i].kind == TCASE_CARRIER ? "carrier"
                                            : "QPSK with I/Q error",
           cases[i].esn0, st.warnings, (unsigned long long)(st.blocks - st.blocks_no_signal),
           (unsigned long long)st.blocks, r.ngot ? 2.0 * (double)equal / (double)r.ngot : 0);
    check_kind(st.warnings, PRX_QPSK_WARN_NOT_QPSK, cases[i].warned, 0, "not_qpsk", i);
    if (i == 0)
      CHECK(st.warnings == PRX_QPSK_WARN_NOT_QPSK, "BPSK at 20 dB: warnings %#x", st.warnings);
    result_free(&r);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_NOT_QPSK) != NULL, "no text for not_qpsk");
}

/* 16QAM at 25 and 18 dB raises power_levels and nothing else but the Es/N0 read at ~6.7 dB (its
 * blocks show QPSK's 4th-power line, timing and phase: before this warning it was "ok"), and
 * QPSK through two paths a symbol apart (the second 0.3 of the first) at 25 dB, whose bits are
 * still right; QPSK does not, at 6 to 40 dB and without noise, nor with an I/Q error at 20 dB,
 * nor BPSK at 20 dB (not_qpsk's) */
static void power_levels(void) {
  test_rng rng;
  test_rng_seed(&rng, 93);
  const struct {
    int kind; /* a tcase_line kind, or -1: QPSK as generated */
    double esn0;
    int warned;
  } cases[] = {
      {TCASE_QAM16, 25, 1}, {TCASE_QAM16, 18, 1}, {TCASE_TWO_PATH, 25, 1}, {-1, 6, 0},
      {-1, 20, 0},          {-1, 40, 0},          {-1, INFINITY, 0},       {TCASE_IQ_ERROR, 20, 0},
      {TCASE_BPSK, 20, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (int rep = 0; rep < (cases[i].kind < 0 ? 3 : 1); rep++) {
      result r = run_kind(&rng, cases[i].kind, cases[i].esn0);
      const prx_qpsk_stats st = r.st;
      printf("power levels, kind %d at %g dB: warnings %#x, Es/N0 read %.1f dB, %ld bit errors\n",
             cases[i].kind, cases[i].esn0, st.warnings, st.esn0_db,
             cases[i].kind < 0 || cases[i].kind == TCASE_TWO_PATH ? r.errors : -1L);
      check_kind(st.warnings, PRX_QPSK_WARN_LEVELS, cases[i].warned, 1, "power_levels", i);
      if (cases[i].kind == TCASE_QAM16)
        CHECK(fabs(st.esn0_db - 6.7) < 0.5, "16QAM at %g dB: Es/N0 read %.2f dB", cases[i].esn0,
              st.esn0_db);
      if (cases[i].kind < 0 || cases[i].kind == TCASE_TWO_PATH)
        CHECK(r.errors == 0 || cases[i].esn0 < 10, "case %zu: %ld bit errors", i, r.errors);
      result_free(&r);
    }
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_LEVELS) != NULL, "no text for power_levels");
}

/* MSK at the symbol rate (one bit a symbol, a quarter turn each) at 25 and 10 dB raises
 * quarter_steps and nothing else (its blocks show QPSK's 4th-power line and timing: before this
 * warning it was "ok", its bits opposite pairs); QPSK at 3 to 30 dB, BPSK and a carrier without
 * modulation do not (their steps: random, or none and half turns) */
static void quarter_steps(void) {
  test_rng rng;
  test_rng_seed(&rng, 97);
  const struct {
    int kind; /* a tcase_line kind, or -1: QPSK as generated */
    double esn0;
    int warned;
  } cases[] = {{TCASE_MSK, 25, 1},  {TCASE_MSK, 10, 1},    {-1, 3, 0}, {-1, 10, 0}, {-1, 30, 0},
               {TCASE_BPSK, 20, 0}, {TCASE_CARRIER, 20, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    result r = run_kind(&rng, cases[i].kind, cases[i].esn0);
    const prx_qpsk_stats st = r.st;
    size_t opposite = 0;
    for (size_t k = 0; k + 1 < r.ngot; k += 2) opposite += r.got[k] != r.got[k + 1];
    printf("quarter steps, kind %d at %g dB: warnings %#x, pairs of opposite bits %.3f\n",
           cases[i].kind, cases[i].esn0, st.warnings,
           r.ngot ? 2.0 * (double)opposite / (double)r.ngot : 0);
    check_kind(st.warnings, PRX_QPSK_WARN_QUARTER_STEPS, cases[i].warned, 1, "quarter_steps", i);
    if (cases[i].kind == TCASE_MSK && cases[i].esn0 >= 20)
      CHECK(2 * opposite > 0.99 * (double)r.ngot, "MSK: opposite pairs %zu of %zu", opposite,
            r.ngot / 2);
    result_free(&r);
  }
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_QUARTER_STEPS) != NULL, "no text for quarter_steps");
}

/* the stats of a demodulator reset after another stream against a fresh one's: every field */
static int same_stats(const prx_qpsk_stats *a, const prx_qpsk_stats *b) {
  return a->samples == b->samples && a->symbols == b->symbols &&
         a->data_symbols == b->data_symbols && a->blocks == b->blocks &&
         a->blocks_no_signal == b->blocks_no_signal &&
         a->blocks_clock_range == b->blocks_clock_range &&
         a->blocks_timing_jump == b->blocks_timing_jump && a->nonfinite == b->nonfinite &&
         a->frame_offset == b->frame_offset && a->blocks_locked == b->blocks_locked &&
         a->warnings == b->warnings && !memcmp(&a->esn0_db, &b->esn0_db, sizeof a->esn0_db) &&
         !memcmp(&a->cfo_hz, &b->cfo_hz, sizeof a->cfo_hz) &&
         !memcmp(&a->cfo_min_hz, &b->cfo_min_hz, sizeof a->cfo_min_hz) &&
         !memcmp(&a->cfo_max_hz, &b->cfo_max_hz, sizeof a->cfo_max_hz) &&
         !memcmp(&a->clock_ppm, &b->clock_ppm, sizeof a->clock_ppm) &&
         !memcmp(&a->cfo_drift_hz_per_s, &b->cfo_drift_hz_per_s, sizeof a->cfo_drift_hz_per_s);
}

/* A reset forgets the stream before: a demodulator that ran one stream, was reset and was given
 * another gives the second the bits and stats (warnings included) a fresh one gives. The pairs:
 * a stream at the demodulator's symbol rate (every CFO span with a symbol-timing line) then a
 * signal at half that rate (warning symbol_rate: before the reset cleared the spans' timing
 * count, the first stream's spans counted in the second's, and no warning came; a receiver kept
 * by `polyrx serve` warned weak_signal where a fresh one warned symbol_rate), the reverse, and a
 * strong stream then a weak one (1 dB). */
static void reset_forgets(void) {
  test_rng rng;
  test_rng_seed(&rng, 77);
  const double sps1[] = {4, 8, 4}, sps2[] = {8, 4, 4}, db1[] = {20, 20, 20}, db2[] = {20, 20, 1};
  const unsigned want[] = {PRX_QPSK_WARN_SYMBOL_RATE, 0, PRX_QPSK_WARN_WEAK_SIGNAL};
  for (int i = 0; i < 3; i++) {
    tcase first = base_case(&rng, db1[i]), second = base_case(&rng, db2[i]);
    first.sps = sps1[i];
    second.sps = sps2[i];
    size_t n1 = tcase_length(&first, 3 * 8192 * 4), n2 = tcase_length(&second, 3 * 8192 * 4);
    uint8_t *r1 = NULL, *r2 = NULL;
    size_t m1 = 0, m2 = 0;
    prx_cf32 *x1 = tcase_make(&first, n1, &r1, &m1), *x2 = tcase_make(&second, n2, &r2, &m2);
    tcase told = first;
    told.sps = 4; /* the rate the demodulators are told */
    prx_qpsk_config qc = tcase_demod_config(&told, 1);
    prx_qpsk *kept = NULL, *fresh = NULL;
    CHECK(x1 && x2 && prx_qpsk_create(&qc, &kept) == PRX_OK &&
              prx_qpsk_create(&qc, &fresh) == PRX_OK,
          "create: %s", prx_last_error());
    prx_qpsk_stats a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    size_t na = 0, nb = 0;
    uint8_t *ba = NULL, *bb = NULL;
    if (kept && fresh) {
      free(tcase_demod(kept, x1, n1, NULL, 0, &na, NULL));
      prx_qpsk_reset(kept);
      ba = tcase_demod(kept, x2, n2, NULL, 0, &na, NULL);
      bb = tcase_demod(fresh, x2, n2, NULL, 0, &nb, NULL);
      prx_qpsk_get_stats(kept, &a);
      prx_qpsk_get_stats(fresh, &b);
    }
    printf("sps %g %g dB, reset, sps %g %g dB: warnings %#x, fresh %#x\n", sps1[i], db1[i], sps2[i],
           db2[i], a.warnings, b.warnings);
    CHECK(same_stats(&a, &b) && b.warnings == want[i],
          "pair %d after a reset: warnings %#x, %llu blocks (%llu no signal), Es/N0 %.3f; a fresh "
          "demodulator's %#x (want %#x), %llu (%llu), %.3f",
          i, a.warnings, (unsigned long long)a.blocks, (unsigned long long)a.blocks_no_signal,
          a.esn0_db, b.warnings, want[i], (unsigned long long)b.blocks,
          (unsigned long long)b.blocks_no_signal, b.esn0_db);
    CHECK(ba && bb && na == nb && memcmp(ba, bb, na) == 0, "pair %d after a reset: other bits", i);
    free(ba);
    free(bb);
    prx_qpsk_destroy(kept);
    prx_qpsk_destroy(fresh);
    free(x1);
    free(x2);
    free(r1);
    free(r2);
  }
}

static void esn0_summary(void) {
  test_rng rng;
  test_rng_seed(&rng, 73);
  const double esn0s[] = {0, 5, 10, 20, 30};
  for (size_t i = 0; i < 5; i++) {
    tcase c = base_case(&rng, esn0s[i]);
    c.ppm = 50;
    /* a capture that ends a few symbols into a block: a short last block must not pull the mean */
    size_t n = tcase_length(&c, (512 * 160 + 6) * 4);
    result r = run(&c, n, NULL, 0);
    printf("Es/N0 %4.1f dB: summary %.2f dB, %llu of %llu blocks without signal\n", esn0s[i],
           r.st.esn0_db, (unsigned long long)r.st.blocks_no_signal,
           (unsigned long long)r.st.blocks);
    CHECK(fabs(r.st.esn0_db - esn0s[i]) < 0.5, "Es/N0 %g dB: summary %.2f dB", esn0s[i],
          r.st.esn0_db);
    /* at 0 dB most 512-symbol blocks show no 4th-power line (the flag's threshold is near 3 dB);
     * the summary still measures the signal */
    if (esn0s[i] >= 5)
      CHECK(r.st.blocks_no_signal == 0 && r.st.warnings == 0,
            "Es/N0 %g dB: %llu blocks without signal", esn0s[i],
            (unsigned long long)r.st.blocks_no_signal);
    else /* the carrier weak, not absent (weak_signal) */
      CHECK(r.st.warnings == PRX_QPSK_WARN_WEAK_SIGNAL, "Es/N0 %g dB: warnings %#x", esn0s[i],
            r.st.warnings);
    CHECK(fabs(r.st.cfo_hz - c.cfo * 1e3) < 0.01, "CFO summary %.4f Hz, truth %.4f Hz", r.st.cfo_hz,
          c.cfo * 1e3);
    result_free(&r);
  }
}

/* Scale invariance: cf32 levels that are powers of 2 give the same bits and LLRs bit for bit;
 * the levels (1e-9 .. 1e10) the same bits at 12 dB; integer formats at full scale and at
 * a few LSBs (quantisation noise well below the channel's) demodulate without errors */
static void levels(void) {
  test_rng rng;
  test_rng_seed(&rng, 74);
  tcase c = base_case(&rng, 15);
  c.dc_re = 0.3; /* a DC offset too, as receivers have */
  c.dc_im = -0.2;
  size_t n = tcase_length(&c, 50000 * 4);
  result ref = run(&c, n, NULL, 0);
  CHECK(ref.errors == 0, "level 1: %ld errors at 15 dB", ref.errors);
  const double pow2[] = {0x1p-60, 0x1p-20, 0x1p40, 0x1p90};
  for (size_t i = 0; i < 4; i++) {
    c.scale = pow2[i];
    result r = run(&c, n, NULL, 0);
    CHECK(r.ngot == ref.ngot && !memcmp(r.got, ref.got, r.ngot) &&
              !memcmp(r.llrs, ref.llrs, r.ngot * sizeof(float)),
          "level 2^%g: bits or LLRs differ from level 1", log2(pow2[i]));
    result_free(&r);
  }
  const double lv[] = {1e-9, 3e8, 1e9, 1e10, 1e-30, 1e30};
  for (size_t i = 0; i < 6; i++) {
    c.scale = lv[i];
    result r = run(&c, n, NULL, 0);
    CHECK(r.errors == 0, "level %g: %ld errors", lv[i], r.errors);
    CHECK(fabs(r.st.esn0_db - ref.st.esn0_db) < 0.01, "level %g: Es/N0 %.3f dB (level 1: %.3f)",
          lv[i], r.st.esn0_db, ref.st.esn0_db);
    result_free(&r);
  }
  result_free(&ref);
  struct {
    prx_format f;
    double fs;
    const char *name;
  } ints[] = {{PRX_CI16, 32767 / 5.0, "ci16 full scale"}, {PRX_CI16, 4, "ci16 4 LSB"},
              {PRX_CI8, 127 / 5.0, "ci8 full scale"},     {PRX_CI8, 3, "ci8 3 LSB"},
              {PRX_CU8, 127.5 / 5.0, "cu8 full scale"},   {PRX_CU8, 3, "cu8 3 LSB"}};
  for (size_t i = 0; i < 6; i++) {
    tcase ci = base_case(&rng, 15);
    ci.format = ints[i].f;
    ci.full_scale = ints[i].fs;
    result r = run(&ci, n, NULL, 0);
    CHECK(r.errors == 0, "%s: %ld errors at Es/N0 15 dB", ints[i].name, r.errors);
    result_free(&r);
  }
}

/* NaN samples: counted exactly, flagged per block, a warning beyond 8 */
static void nonfinite(void) {
  test_rng rng;
  test_rng_seed(&rng, 75);
  tcase c = base_case(&rng, 15);
  size_t n = tcase_length(&c, 30000 * 4);
  size_t at[20];
  for (size_t i = 0; i < 20; i++) at[i] = 1000 + i * 5000;
  result r = run(&c, n, at, 5);
  CHECK(r.st.nonfinite == 5 && !(r.st.warnings & PRX_QPSK_WARN_NONFINITE),
        "5 NaNs: counted %llu, warnings %#x", (unsigned long long)r.st.nonfinite, r.st.warnings);
  CHECK(count_flag(&r.log, PRX_QPSK_BLOCK_NONFINITE) == 5, "5 NaNs: %zu blocks flagged",
        count_flag(&r.log, PRX_QPSK_BLOCK_NONFINITE));
  result_free(&r);
  r = run(&c, n, at, 20);
  CHECK(r.st.nonfinite == 20 && (r.st.warnings & PRX_QPSK_WARN_NONFINITE),
        "20 NaNs: counted %llu, warnings %#x", (unsigned long long)r.st.nonfinite, r.st.warnings);
  CHECK(prx_qpsk_warning_text(PRX_QPSK_WARN_NONFINITE) != NULL &&
            prx_qpsk_warning_text(1u << 20) == NULL,
        "warning texts");
  result_free(&r);
}

/* a CFO span that needs more memory than PRX_QPSK_MAX_BYTES is refused at once, naming it; the
 * longest span at 4 samples/symbol is accepted and made quickly */
static void resources(void) {
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = 64e3;
  c.symbol_rate = 1e3;
  c.cfo_span_symbols = 1u << 22;
  c.threads = 2;
  prx_qpsk *q = NULL;
  clock_t t0 = clock();
  prx_status st = prx_qpsk_create(&c, &q);
  double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
  CHECK(st == PRX_ERR_INVALID && q == NULL && strstr(prx_last_error(), "CFO span"),
        "a 4M-symbol span at 64 sps: status %d, '%s'", (int)st, prx_last_error());
  CHECK(dt < 1, "refusal took %.2f s", dt);
  prx_qpsk_destroy(q);
  c.sample_rate = 4e3;
  t0 = clock();
  st = prx_qpsk_create(&c, &q);
  dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
  CHECK(st == PRX_OK, "a 4M-symbol span at 4 sps refused: %s", prx_last_error());
  CHECK(dt < 5, "creating it took %.2f s", dt);
  prx_qpsk_destroy(q);
  /* Rs/8 is ambiguous and refused; just below it is accepted */
  c.cfo_span_symbols = 8192;
  c.acquisition = 0.125;
  q = NULL;
  CHECK(prx_qpsk_create(&c, &q) == PRX_ERR_INVALID, "acquisition 0.125 accepted");
  prx_qpsk_destroy(q);
  c.acquisition = 0.1249;
  q = NULL;
  CHECK(prx_qpsk_create(&c, &q) == PRX_OK, "acquisition 0.1249 refused: %s", prx_last_error());
  prx_qpsk_destroy(q);
}

int main(void) {
  clock_range();
  timing_jump();
  signal_present();
  weak_signal();
  cfo_alias();
  symbol_rate();
  reset_forgets();
  unlocked();
  not_qpsk();
  power_levels();
  quarter_steps();
  esn0_summary();
  levels();
  nonfinite();
  resources();
  return test_finish("test_qpsk_flags");
}
