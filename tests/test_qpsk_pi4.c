/* pi/4-QPSK (PRX_QPSK_PI4): the turns back (symbol k by k pi/4 after the matched filter, its 4th
 * power by k pi) against float64; pi/4-DQPSK from the generator (its pi/4 turn checked against
 * the float64 model by test_sim) with no bit error across the acquisition range, clock offsets and
 * sample rates, and at theory's BER in noise (the turn is exact, so the bound is DE-QPSK's);
 * coherent pi/4-QPSK's bits up to the quarter-turn; the same signals read as plain QPSK losing
 * their bits (a control: the mode is what gives them back); the configurations refused. */
#include "test_qpsk_sig.h"

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

int main(void) {
  turns();
  refused();
  no_errors();
  coherent();
  ber();
  return test_finish("test_qpsk_pi4");
}
