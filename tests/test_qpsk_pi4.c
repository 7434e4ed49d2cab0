/* pi/4-QPSK (PRX_QPSK_PI4): the turns back (symbol k by k pi/4 after the matched filter, its 4th
 * power by k pi) against float64; pi/4-DQPSK from the generator (its pi/4 turn checked against
 * the float64 model by test_sim) with no bit error across the acquisition range, clock offsets and
 * sample rates, and at theory's BER in noise (the turn is exact, so the bound is DE-QPSK's);
 * coherent pi/4-QPSK's bits up to the quarter-turn; the same signals read as plain QPSK losing
 * their bits (a control: the mode is what gives them back); the configurations refused; P25's
 * C4FM (4-FSK) read as pi/4-DQPSK in P25's dibit mapping. */
#include "test_qpsk_sig.h"

#include "polyrx/detect.h"
#include "qpsk/qpsk_stage_math.h"

/* qpsk_pi4_factor's turn and qpsk_pi4_x4 against exp(-j k pi/4) and exp(-j k pi) in float64, for
 * stream indices on both sides of 0 and far into a stream */
static void turns(void) {
  test_rng rng;
  test_rng_seed(&rng, 401);
  double worst = 0;
  int x4_bad = 0;
  for (int64_t i = -40; i < 40 + 16; i++) {
    const int64_t k = i < 40 ? i : ((int64_t)1 << 40) + i; /* a stream 2^40 symbols long */
    prx_cf32 y = {(float)test_rng_gauss(&rng), (float)test_rng_gauss(&rng)};
    const double a = -M_PI / 4 * (double)(k % 8), cr = cos(a), ci = sin(a);
    const double er = y.re * cr - y.im * ci, ei = y.re * ci + y.im * cr;
    const prx_cf32 g = qpsk_cmul(y, qpsk_pi4_factor((unsigned)k));
    const double e = hypot(g.re - er, g.im - ei) / hypot(y.re, y.im);
    if (e > worst) worst = e;
    const prx_cf32 w = qpsk_pi4_x4(y, k);
    const double s = (k % 2) ? -1 : 1; /* exp(-j k pi) */
    x4_bad += w.re != (float)(s * y.re) || w.im != (float)(s * y.im);
  }
  printf("turns: worst relative error %.2e, x4 mismatches %d\n", worst, x4_bad);
  CHECK(worst < 3e-7, "qpsk_pi4_factor's turn: relative error %.2e", worst);
  CHECK(x4_bad == 0, "qpsk_pi4_x4: %d values not exactly turned by k pi", x4_bad);
}

static tcase pi4_case(test_rng *rng, double sps, double cfo, double ppm, double esn0) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  tcase_random(&c, rng, 0, ppm);
  c.cfo = cfo;
  c.noise = 1;
  c.esn0_db = esn0;
  c.differential = 1;
  c.pi4 = 1;
  return c;
}

/* n_want samples of case c demodulated in the mode of case mode (its modulation and decisions)
 * in the given chunks; the bit errors against the sent bits (any_turn: at the best quarter turn),
 * -1 where the counts differ; -2 where the run failed (reported) */
static long run_as(const tcase *c, const tcase *mode, size_t n_want, const size_t *chunks,
                   size_t n_chunks, int any_turn, size_t *nbits) {
  size_t n = tcase_length(c, n_want), nref = 0, ngot = 0;
  uint8_t *ref = NULL, *got = NULL;
  prx_cf32 *x = tcase_make(c, n, &ref, &nref);
  CHECK(x != NULL, "generator: %s", prx_last_error());
  prx_qpsk_config qc = tcase_demod_config(mode, 1);
  prx_qpsk *q = NULL;
  if (x) CHECK_OK(prx_qpsk_create(&qc, &q));
  if (q) got = tcase_demod(q, x, n, chunks, n_chunks, &ngot, NULL);
  long e = !got       ? -2
           : any_turn ? tcase_errors_any_turn(got, ngot, ref, nref)
                      : tcase_errors(c, got, ngot, ref, nref);
  *nbits = nref;
  prx_qpsk_destroy(q);
  free(got);
  free(ref);
  free(x);
  return e;
}

/* pi/4-DQPSK at 30 dB across the acquisition range (0.12 Rs), each clock sign, three sample rates:
 * every bit right and no warning; the same signal with the demodulator in plain QPSK mode (a
 * control, at CFOs where its 4th-power line leaves the search range's middle) loses them */
static void no_errors(void) {
  test_rng rng;
  test_rng_seed(&rng, 402);
  const double cfos[] = {-0.115, -0.06, 0, 0.03, 0.0625, 0.115};
  const double sps_list[] = {4, 16.0 / 3, 2.5};
  for (size_t s = 0; s < 3; s++)
    for (size_t i = 0; i < sizeof cfos / sizeof cfos[0]; i++) {
      tcase c = pi4_case(&rng, sps_list[s], cfos[i], i % 2 ? 300 : -300, 30);
      long errors;
      size_t bits;
      prx_qpsk_stats st;
      if (tcase_ber(&c, 40000, &errors, &bits, &st)) continue;
      printf("pi/4-DQPSK sps %.3f CFO %+.4f Rs ppm %+.0f: %ld errors in %zu bits, warnings 0x%x\n",
             c.sps, c.cfo, c.ppm, errors, bits, st.warnings);
      CHECK(errors == 0 && st.warnings == 0,
            "pi/4-DQPSK sps %.3f CFO %+.4f Rs: %ld errors, warnings 0x%x", c.sps, c.cfo, errors,
            st.warnings);
    }
  /* the control: plain QPSK's demodulator on pi/4-DQPSK */
  const double ctl[] = {0.03, 0.1};
  for (size_t i = 0; i < 2; i++) {
    tcase c = pi4_case(&rng, 4, ctl[i], 0, 30);
    tcase plain = c;
    plain.pi4 = 0; /* the demodulator's mode only: the signal is made from c */
    size_t nref;
    long e = run_as(&c, &plain, 48000, NULL, 0, 0, &nref);
    printf("control: pi/4-DQPSK at CFO %+.3f Rs read as QPSK: %ld errors in %zu bits\n", c.cfo, e,
           nref);
    CHECK(e != -2 && (e == -1 || e > (long)nref / 10),
          "pi/4-DQPSK read as plain QPSK gave its bits (%ld errors): the signal is not pi/4", e);
  }
}

/* in noise: pi/4-DQPSK at Eb/N0 6 dB within DE-QPSK's bound (theory + 0.25 dB), over CFOs and a
 * clock offset */
static void ber(void) {
  test_rng rng;
  test_rng_seed(&rng, 403);
  for (int i = 0; i < 3; i++) {
    tcase c = pi4_case(&rng, i == 1 ? 16.0 / 3 : 4, 0, 100, 0);
    tcase_random(&c, &rng, 0.11, 100);
    tcase_ber_mode(&c, 1, 0);
    long errors;
    size_t bits;
    if (tcase_ber(&c, 400000, &errors, &bits, NULL)) continue;
    const double b = (double)errors / (double)bits, bound = tcase_ber_bound(1, 0);
    printf("pi/4-DQPSK Eb/N0 %.0f dB sps %.3f CFO %+.4f Rs: BER %.3e (bound %.3e)\n",
           tcase_ebn0s[1], c.sps, c.cfo, b, bound);
    CHECK(errors >= 0 && b < bound, "pi/4-DQPSK BER %.3e above %.3e", b, bound);
  }
}

/* coherent pi/4-QPSK: the decisions are QPSK's in the demodulator's quarter-turn, so the bits
 * come back whole up to one fixed turn */
static void coherent(void) {
  test_rng rng;
  test_rng_seed(&rng, 404);
  tcase c = pi4_case(&rng, 4, 0.05, -200, 25);
  c.differential = 0;
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  CHECK(qc.ambiguity == PRX_QPSK_NONE && qc.modulation == PRX_QPSK_PI4, "coherent pi/4 config");
  const size_t chunks[] = {7777, 50000};
  size_t nref;
  long e = run_as(&c, &c, 200000, chunks, 2, 1, &nref);
  printf("coherent pi/4-QPSK: %ld errors in %zu bits (best quarter-turn)\n", e, nref);
  CHECK(e == 0, "coherent pi/4-QPSK: %ld errors", e);
}

static void refused(void) {
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = 48000;
  c.symbol_rate = 12000;
  c.modulation = PRX_QPSK_PI4;
  c.ambiguity = PRX_QPSK_PILOTS;
  c.pilot_period = 64;
  c.pilot_len = 8;
  prx_qpsk *q = NULL;
  CHECK(prx_qpsk_create(&c, &q) == PRX_ERR_INVALID && !q, "pi/4 with pilots accepted");
  CHECK(strstr(prx_last_error(), "pilots") != NULL, "message: %s", prx_last_error());
  c.ambiguity = PRX_QPSK_DIFFERENTIAL;
  c.modulation = (prx_qpsk_modulation)7;
  CHECK(prx_qpsk_create(&c, &q) == PRX_ERR_INVALID && !q, "modulation 7 accepted");
  CHECK(!strcmp(prx_qpsk_modulation_name(PRX_QPSK_PI4), "pi4-qpsk") &&
            !strcmp(prx_qpsk_modulation_name(PRX_QPSK_PLAIN), "qpsk"),
        "modulation names");
  prx_rx_config rc = prx_rx_config_default();
  rc.sample_rate = 1e6;
  rc.channels = 64;
  prx_rx_carrier k = prx_rx_carrier_default();
  k.symbol_rate = 5000;
  k.modulation = PRX_QPSK_PI4;
  k.ambiguity = PRX_QPSK_PILOTS;
  k.pilot_period = 64;
  k.pilot_len = 8;
  CHECK(prx_rx_check_carrier(&rc, &k) == PRX_ERR_INVALID, "rx: pi/4 with pilots accepted");
  k.ambiguity = PRX_QPSK_DIFFERENTIAL;
  CHECK_OK(prx_rx_check_carrier(&rc, &k));
}

/* P25 Phase 1's C4FM: 4-FSK at 4800 Bd, its symbols +3, +1, -1, -3 at +1800, +600, -600, -1800
 * Hz (+-3 Rs/8, +-Rs/8) through a raised-cosine filter (roll-off 0.2, the symbols' frequency at
 * their instants), then FM; here at 48 kHz, 20 dB. Its phase moves by +-3 pi/4 or +-pi/4 from one
 * instant to the next, as CQPSK's pi/4-DQPSK does (the two are made to be received alike), so
 * read with PRX_QPSK_PI4 and differential decisions its dibits come out in P25's mapping (+3: 01,
 * +1: 00, -1: 10, -3: 11) with no warning; read as plain QPSK it is warned (its blocks unlocked:
 * not silent); prx_detect_at, at its place, takes it for pi/4-QPSK (its y^4 has pi/4's pair of
 * lines Rs/2 either side of 4 f, and another 3 Rs/2 out), so demod reading it as QPSK says to
 * read it with --pi4. */
static void c4fm(void) {
  enum { SPS = 10, NSYM = 20000, N = SPS * NSYM, HALF = 8 };
  const double fs = 48000, rs = 4800, dev = rs / 8, sd = sqrt(SPS * pow(10, -2.0) / 2);
  const double level[4] = {3, 1, -1, -3}; /* the dibits 01, 00, 10, 11 */
  const int dibit[4] = {1, 0, 2, 3};
  test_rng rng;
  test_rng_seed(&rng, 405);
  int *sym = malloc(NSYM * sizeof *sym);
  prx_cf32 *x = malloc(N * sizeof *x);
  if (!sym || !x) {
    CHECK(0, "c4fm: out of memory");
    free(sym), free(x);
    return;
  }
  for (int k = 0; k < NSYM; k++) sym[k] = (int)(4 * test_rng_uniform(&rng)) & 3;
  double ph = 0;
  for (int i = 0; i < N; i++) { /* symbol k's frequency peaks at t = k + 1/2 (in symbols) */
    const double t = (double)i / SPS;
    double f = 0;
    for (int k = (int)t - HALF; k <= (int)t + HALF; k++) {
      if (k < 0 || k >= NSYM) continue;
      const double u = t - k - 0.5, a = 0.2;
      double p = 1;
      if (fabs(fabs(2 * a * u) - 1) < 1e-9)
        p = M_PI / 4 * sin(M_PI * u) / (M_PI * u);
      else if (fabs(u) > 1e-12)
        p = sin(M_PI * u) / (M_PI * u) * cos(M_PI * a * u) / (1 - 4 * a * a * u * u);
      f += level[sym[k]] * p;
    }
    ph += 2 * M_PI * dev * f / fs;
    x[i].re = (float)(cos(ph) + sd * test_rng_gauss(&rng));
    x[i].im = (float)(sin(ph) + sd * test_rng_gauss(&rng));
  }
  for (int pi4 = 1; pi4 >= 0; pi4--) {
    prx_qpsk_config qc = prx_qpsk_config_default();
    qc.sample_rate = fs;
    qc.symbol_rate = rs;
    qc.modulation = pi4 ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
    prx_qpsk *q = NULL;
    CHECK_OK(prx_qpsk_create(&qc, &q));
    size_t nb = 0;
    uint8_t *b = q ? tcase_demod(q, x, N, NULL, 0, &nb, NULL) : NULL;
    prx_qpsk_stats st = {0};
    if (q) prx_qpsk_get_stats(q, &st);
    /* received symbol j against sent symbol j + lag - 1: the best of a few alignments */
    size_t best = 0, best_lag = 0, compared = 1;
    for (size_t lag = 0; b && lag < 4; lag++) {
      size_t right = 0, n = 0;
      for (size_t j = 16; j + lag - 1 < NSYM && 2 * j + 1 < nb; j++, n++)
        right += 2 * b[2 * j] + b[2 * j + 1] == dibit[sym[j + lag - 1]];
      if (right > best) best = right, best_lag = lag, compared = n;
    }
    const double ser = 1 - (double)best / (double)compared;
    printf("c4fm read as %s: %zu symbols, symbol errors %.2e (lag %zu), warnings 0x%x\n",
           pi4 ? "pi/4-DQPSK" : "QPSK", nb / 2, ser, best_lag, st.warnings);
    if (pi4)
      CHECK(b && nb / 2 > NSYM - 200 && ser < 2e-3 && st.warnings == 0,
            "c4fm as pi/4-DQPSK: %zu symbols, symbol errors %.2e, warnings 0x%x", nb / 2, ser,
            st.warnings);
    else
      CHECK(st.warnings & PRX_QPSK_WARN_UNLOCKED, "c4fm as QPSK: warnings 0x%x", st.warnings);
    free(b);
    prx_qpsk_destroy(q);
  }
  prx_detect_config d = prx_detect_config_default();
  d.sample_rate = fs;
  const prx_detect_carrier at = {.symbol_rate = rs, .rolloff = 0.35};
  prx_detect_carrier out;
  int found = 0;
  CHECK_OK(prx_detect_at(&d, x, N, &at, 1, &out, &found));
  CHECK(found && out.line4 && out.pi4, "c4fm at its place: found %d, line4 %d, pi4 %d", found,
        out.line4, out.pi4);
  free(sym), free(x);
}

int main(void) {
  turns();
  refused();
  no_errors();
  coherent();
  ber();
  c4fm();
  return test_finish("test_qpsk_pi4");
}
