/* The feed-forward estimators against theory and against the generator's truth:
 *  - V&V phase variance within 1 dB of its closed form at Es/N0 >= 3 dB;
 *  - timing (Oerder & Meyr per block) rms <= 0.035 T at Es/N0 3 dB, at sps 2, 4 and 16/3 with a
 *    50 ppm clock offset; CFO, carrier phase and Es/N0 per block close to the truth;
 *  - LLRs consistent: coherent ones Gaussian with variance = 2 |mean| within 10%, differential
 *    ones calibrated (the error rate of bits with |LLR| near l is 1 / (1 + e^l)). */
#include "test_qpsk_sig.h"

#include "qpsk/qpsk_est.h"

/* ---- V&V phase variance ----
 * Closed form (large L, linearised): the block holds y_k = e^{j phi} s_k (1 + v_k) with QPSK
 * s_k^4 = -1 and v_k complex Gaussian, E|v|^2 = 1/g (g = Es/N0). Then sum y^4 = -e^{j 4 phi}
 * sum (1 + v)^4 = -e^{j 4 phi} L (1 + u), u = (1/L) sum (4v + 6v^2 + 4v^3 + v^4), and the phase
 * error is Im(u)/4. The powers of a circular v are uncorrelated and circular, E|v|^{2k} = k!/g^k,
 * so E Im(u)^2 = (16/g + 72/g^2 + 96/g^3 + 24/g^4) / (2L) and
 *     var(phi) = (1 + 9/(2g) + 6/g^2 + 3/(2g^3)) / (2 L g)
 * (Viterbi & Viterbi 1983; Mengali & D'Andrea, Synchronization Techniques for Digital Receivers,
 * 1997, ch. 5: the 4th-power estimator's variance above its threshold). */
static double vv_closed_form(double g, double L) {
  return (1 + 4.5 / g + 6 / (g * g) + 1.5 / (g * g * g)) / (2 * L * g);
}

static void vv_variance(void) {
  test_rng r;
  test_rng_seed(&r, 77);
  const size_t L = 512, trials = 3000;
  const double esn0s[] = {3, 6, 10};
  prx_cf32 *y = malloc(L * sizeof *y);
  for (size_t e = 0; e < 3; e++) {
    double g = pow(10, esn0s[e] / 10), sd = sqrt(0.5 / g), var = 0;
    for (size_t t = 0; t < trials; t++) {
      double phi = (test_rng_uniform(&r) - 0.5) * M_PI / 2 * 0.9; /* away from the +-pi/4 wrap */
      double cr = cos(phi), ci = sin(phi);
      for (size_t k = 0; k < L; k++) {
        double sr = test_rng_u64(&r) >> 63 ? -M_SQRT1_2 : M_SQRT1_2;
        double si = test_rng_u64(&r) >> 63 ? -M_SQRT1_2 : M_SQRT1_2;
        y[k].re = (float)(sr * cr - si * ci + sd * test_rng_gauss(&r));
        y[k].im = (float)(sr * ci + si * cr + sd * test_rng_gauss(&r));
      }
      qpsk_sums s;
      memset(&s, 0, sizeof s);
      qpsk_sums_accum(y, L, &s);
      double err = qpsk_wrap(qpsk_vv_phase(&s) - phi, M_PI / 2);
      var += err * err;
    }
    var /= trials;
    double ref = vv_closed_form(g, (double)L), db = 10 * log10(var / ref);
    printf("V&V Es/N0 %4.1f dB, L %zu: variance %.3e, closed form %.3e (%+.2f dB)\n", esn0s[e], L,
           var, ref, db);
    CHECK(fabs(db) <= 1, "V&V variance at Es/N0 %g dB is %.2f dB from its closed form", esn0s[e],
          db);
  }
  free(y);
}

/* ---- end to end: per-block estimates against the generator's truth ---- */

typedef struct {
  prx_qpsk_block *b;
  size_t n, cap;
} blocks;

static void keep_block(void *user, const prx_qpsk_block *b) {
  blocks *k = user;
  if (k->n < k->cap) k->b[k->n++] = *b;
}

/* One demodulation of a case with its block reports: the samples, the reference bits, the
 * demodulator (CFO span of `span` symbols; 0: the default) and its bits */
typedef struct {
  prx_cf32 *x;
  uint8_t *ref, *bits;
  size_t n, nref, nb;
  blocks k;
  prx_qpsk_config qc;
  prx_qpsk *q;
} demod_run;

/* Makes about nsym symbols of c and demodulates them, keeping up to max_blocks reports; 0 after a
 * failed check (nothing then to free). */
static int run_case(const tcase *c, size_t nsym, int threads, unsigned span, size_t max_blocks,
                    demod_run *u) {
  memset(u, 0, sizeof *u);
  u->n = tcase_length(c, (size_t)((double)nsym * c->sps));
  u->x = tcase_make(c, u->n, &u->ref, &u->nref);
  CHECK(u->x, "generator failed");
  if (!u->x) return 0;
  u->k = (blocks){calloc(max_blocks, sizeof(prx_qpsk_block)), 0, max_blocks};
  u->qc = tcase_demod_config(c, threads);
  if (span) u->qc.cfo_span_symbols = span;
  u->qc.on_block = keep_block;
  u->qc.user = &u->k;
  CHECK_OK(prx_qpsk_create(&u->qc, &u->q));
  u->bits = u->q ? tcase_demod(u->q, u->x, u->n, NULL, 0, &u->nb, NULL) : NULL;
  return 1;
}

static void run_free(demod_run *u) {
  free(u->k.b);
  free(u->bits);
  prx_qpsk_destroy(u->q);
  free(u->ref);
  free(u->x);
}

static void block_estimates(double sps, int pilots) {
  test_rng r;
  test_rng_seed(&r, 1000 + (uint64_t)(sps * 100) + (uint64_t)pilots);
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = sps;
  tcase_random(&c, &r, 0.1, 50);
  c.noise = 1;
  c.esn0_db = 3;
  c.differential = !pilots;
  if (pilots) {
    c.pilot_period = 256;
    c.pilot_len = 32;
  }
  demod_run u;
  if (!run_case(&c, 512 * 160, 1, 0, 400, &u)) return;
  const blocks k = u.k;
  CHECK(u.bits && u.nb == u.nref, "sps %g: %zu bits for %zu", sps, u.nb, u.nref);
  const double eps = c.ppm * 1e-6, L = u.qc.block_symbols, Rs = u.qc.symbol_rate;
  double t2 = 0, f2 = 0, p2 = 0, snr = 0;
  size_t cnt = 0;
  for (size_t i = 1; i + 1 < k.n; i++) { /* whole blocks */
    const prx_qpsk_block *b = &k.b[i];
    double centre = ((double)b->index + 0.5) * L; /* nominal symbols */
    /* the transmitted symbol nearest the centre: instant (n + tau0) / (1 + eps) */
    double nn = round(centre * (1 + eps) - c.timing), tt = (nn + c.timing) / (1 + eps);
    double te = qpsk_wrap(b->timing - tt, 1.0);
    double fe = b->cfo / Rs - c.cfo;
    double ptrue = c.phase + 2 * M_PI * c.cfo * centre; /* carrier phase at the centre */
    double pe = qpsk_wrap(b->phase - ptrue, pilots ? 2 * M_PI : M_PI / 2);
    t2 += te * te;
    f2 += fe * fe;
    p2 += pe * pe;
    snr += b->esn0_db;
    cnt++;
  }
  double trms = sqrt(t2 / cnt), frms = sqrt(f2 / cnt), prms = sqrt(p2 / cnt);
  snr /= cnt;
  /* the modified Cramer-Rao bound of a CFO estimate over one span of S = cfo_span_symbols:
   * var = 3 / (2 pi^2 S^3 Es/N0) (Rs = 1) */
  const double S = prx_qpsk_cfo_span(u.q);
  const double mcrb = sqrt(3 / (2 * M_PI * M_PI * S * S * S * pow(10, c.esn0_db / 10)));
  printf("sps %5.3f %-12s Es/N0 3 dB, CFO %+.4f Rs, clock %+.0f ppm, %zu blocks: timing rms "
         "%.4f T, CFO rms %.2e Rs (%.2f MCRB), phase rms %.3f rad, Es/N0 estimate %.2f dB\n",
         sps, pilots ? "pilots" : "differential", c.cfo, c.ppm, cnt, trms, frms, frms / mcrb, prms,
         snr);
  CHECK(cnt >= 100, "only %zu blocks", cnt);
  CHECK(trms <= 0.035, "sps %g: timing rms %.4f T > 0.035 T at Es/N0 3 dB", sps, trms);
  /* CFO: the span's ML estimate, within a small factor of the MCRB (1.8 to 2.6 times it here,
   * over the ~10 spans of each case): the clock offset's scaling of the 4th-power line left out
   * (|f| ppm 1e-6, up to 5e-6 Rs) or a coarser refinement shows */
  CHECK(frms < 4 * mcrb, "sps %g: CFO rms error %.2e Rs is %.1f times the MCRB %.2e Rs (limit 4)",
        sps, frms, frms / mcrb, mcrb);
  /* phase: V&V on 512 symbols at 3 dB has std ~0.06 rad (closed form above) */
  CHECK(prms < 0.12, "sps %g: phase rms error %.3f rad", sps, prms);
  CHECK(fabs(snr - 3) < 0.5, "sps %g: Es/N0 estimated %.2f dB, true 3 dB", sps, snr);
  run_free(&u);
}

/* ---- the CFO range's edge ----
 * A carrier inside the acquisition range but near its edge, with a clock offset: the 4th-power
 * values are one per transmitted symbol, so their line sits at 4 f (1 + d), beyond 4 x the
 * range for a slow clock (d > 0: negative ppm); the peak search must reach it (nineteenth
 * session: at 0.12 Rs and 200-6000 ppm the estimate was 3e-5 to 8e-4 Rs off). Every whole block's
 * CFO within 1e-6 Rs and every bit right at Es/N0 16 dB (differential: BER ~1e-10). */
static void cfo_range_edge(double cfo, double ppm) {
  test_rng r;
  test_rng_seed(&r, 77 + (uint64_t)(cfo > 0) + 2 * (uint64_t)(ppm > 0));
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, &r, 0.1, 0);
  c.cfo = cfo;
  c.ppm = ppm;
  c.noise = 1;
  c.esn0_db = 16;
  c.differential = 1;
  demod_run u;
  if (!run_case(&c, 4096 * 7, 2, 4096, 100, &u)) return;
  /* test_qpsk_sig.h's rule */
  long errors = u.bits ? tcase_errors(&c, u.bits, u.nb, u.ref, u.nref) : -1;
  double worst = 0;
  for (size_t i = 1; i + 1 < u.k.n; i++) {
    double fe = fabs(u.k.b[i].cfo / u.qc.symbol_rate - c.cfo);
    if (fe > worst) worst = fe;
  }
  printf("CFO %+.4f Rs, clock %+.0f ppm, Es/N0 16 dB: worst block CFO error %.2e Rs, %ld bit "
         "errors of %zu\n",
         cfo, ppm, worst, errors, u.nb);
  CHECK(u.k.n > 8 && worst < 1e-6,
        "CFO %+.4f Rs at %+.0f ppm (inside the acquisition range): CFO off by %.2e Rs", cfo, ppm,
        worst);
  CHECK(errors == 0, "CFO %+.4f Rs at %+.0f ppm: %ld bit errors at 16 dB", cfo, ppm, errors);
  run_free(&u);
}

/* ---- the short last span after spans of S - 1 values ----
 * A clock a few ppm slow gives spans of S - 1 4th-power values (one per transmitted symbol); the
 * stream's short last span reaches back into the span right before it for a window of S values.
 * It took the last span of S values or more instead, a span further back: a window with a gap,
 * its CFO up to 2e-5 Rs off in about one stream in six at -20 ppm (found by the nineteenth
 * session's s19/cfo-tf helper). Every stream's last block within 2e-6 Rs at 12 dB. */
static void short_last_span(void) {
  test_rng r;
  test_rng_seed(&r, 19);
  double worst = 0;
  for (int t = 0; t < 12; t++) {
    tcase c;
    memset(&c, 0, sizeof c);
    c.sps = 4;
    c.differential = 1;
    tcase_random(&c, &r, 0.1, 20);
    c.ppm = -20 - 20 * (t % 2);
    c.noise = 1;
    c.esn0_db = 12;
    demod_run u;
    if (!run_case(&c, (size_t)(3.5 * 8192), 1, 0, 100, &u)) return;
    double e = u.k.n ? fabs(u.k.b[u.k.n - 1].cfo / u.qc.symbol_rate - c.cfo) : 1;
    CHECK(u.bits && u.k.n >= 49 && e < 2e-6,
          "the short last span after spans of S - 1 values (%+.0f ppm): CFO %.1e Rs off", c.ppm, e);
    if (e > worst) worst = e;
    run_free(&u);
  }
  printf("the short last span after spans of S - 1 values, 12 streams at -20 and -40 ppm, 12 dB: "
         "worst CFO error %.1e Rs\n",
         worst);
}

/* ---- LLRs ---- */

static void llr_consistency(int mode, double esn0) {
  test_rng r;
  test_rng_seed(&r, 555 + (uint64_t)mode);
  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  tcase_random(&c, &r, 0.05, 50);
  c.noise = 1;
  c.esn0_db = esn0;
  c.differential = mode == 0;
  if (mode == 1) {
    c.pilot_period = 512;
    c.pilot_len = 32;
  }
  size_t n = tcase_length(&c, 4 * 200000);
  uint8_t *ref;
  size_t nref;
  prx_cf32 *x = tcase_make(&c, n, &ref, &nref);
  if (!x) {
    CHECK(0, "generator failed");
    return;
  }
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  prx_qpsk *q;
  CHECK_OK(prx_qpsk_create(&qc, &q));
  size_t nb;
  float *llr = NULL;
  uint8_t *bits = tcase_demod(q, x, n, NULL, 0, &nb, &llr);
  CHECK(bits && nb == nref, "LLR run: %zu bits for %zu", nb, nref);
  if (bits && nb == nref) {
    if (mode == 1) {
      /* coherent: l (1 - 2b) is Gaussian with variance 2 * mean when the scale is right */
      double m = 0, v = 0;
      for (size_t i = 0; i < nb; i++) m += llr[i] * (1 - 2.0 * ref[i]);
      m /= nb;
      for (size_t i = 0; i < nb; i++) {
        double d = llr[i] * (1 - 2.0 * ref[i]) - m;
        v += d * d;
      }
      v /= nb - 1;
      double ratio = v / (2 * m);
      /* the mean itself: 2 sqrt2 E Re(u) / sigma^2 = 2 / sigma^2 = 2 Es/N0 (Re s = 1/sqrt2) */
      double m_th = 2 * pow(10, esn0 / 10);
      printf("coherent LLR at Es/N0 %.1f dB: mean %.3f (theory %.3f), variance %.3f, "
             "var/(2 mean) = %.3f\n",
             esn0, m, m_th, v, ratio);
      CHECK(fabs(ratio - 1) < 0.1, "coherent LLR variance / (2 mean) = %.3f", ratio);
      CHECK(fabs(m / m_th - 1) < 0.1, "coherent LLR mean %.3f, theory %.3f", m, m_th);
    } else {
      /* differential: exact two-symbol LLRs are not Gaussian; check calibration instead */
      const double edges[] = {0, 0.5, 1, 2, 3, 4.5};
      for (int bn = 0; bn < 5; bn++) {
        double pred = 0;
        size_t cntb = 0, errs = 0;
        for (size_t i = 2; i < nb; i++) {
          double a = fabs(llr[i]);
          if (a < edges[bn] || a >= edges[bn + 1]) continue;
          cntb++;
          pred += 1 / (1 + exp(a));
          errs += (llr[i] < 0) != (ref[i] != 0);
        }
        pred /= cntb;
        double meas = (double)errs / cntb;
        printf("differential LLR |l| in [%.1f, %.1f): %7zu bits, error rate %.4f, predicted %.4f\n",
               edges[bn], edges[bn + 1], cntb, meas, pred);
        CHECK(errs >= 100 && fabs(meas / pred - 1) < 0.15,
              "differential LLRs in [%g, %g): error rate %.4f vs predicted %.4f (%zu errors)",
              edges[bn], edges[bn + 1], meas, pred, errs);
      }
    }
  }
  free(llr);
  free(bits);
  prx_qpsk_destroy(q);
  free(ref);
  free(x);
}

int main(void) {
  vv_variance();
  block_estimates(4, 0);
  block_estimates(2, 1);
  block_estimates(16.0 / 3, 0);
  cfo_range_edge(0.1199, 2000);
  cfo_range_edge(-0.1199, -2000);
  cfo_range_edge(0.1199, -2000);
  short_last_span();
  llr_consistency(1, 4);
  llr_consistency(0, 4);
  return test_finish("test_qpsk_estimators");
}
