/* Test-signal generator against a float64 direct evaluation of the model written here from the
 * documentation in polyrx/sim.h (sequential SplitMix64 bits, Gray map, differential chain, pilot
 * word, truncated unit-energy RRC, carrier rotation): accuracy at sps 2, 4 and 5.333 with every
 * impairment, DC offset and gaps (dropouts and transmitter off), chunk and thread invariance,
 * carrier power, noise variance and shape, bits against an ideal matched-filter demodulation of
 * the noiseless signal, and rejected configurations. */
#include "testutil.h"

#include "dsp/rrc.h"

#include <math.h>
#include <string.h>

/* ---- the reference model (float64, no tables, no shortcuts) ---- */

typedef struct {
  uint64_t state;
} ref_splitmix;
static uint64_t ref_splitmix_next(ref_splitmix *g) {
  uint64_t z = (g->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The first n_bits data bits of a carrier, as documented: LSB first from successive outputs. */
static void ref_bits(uint64_t seed, uint8_t *bits, size_t n_bits) {
  ref_splitmix g = {seed};
  uint64_t w = 0;
  for (size_t i = 0; i < n_bits; i++) {
    if (i % 64 == 0) w = ref_splitmix_next(&g);
    bits[i] = (uint8_t)((w >> (i % 64)) & 1);
  }
}

static test_cf64 ref_map(unsigned b0, unsigned b1) {
  test_cf64 s = {(1.0 - 2.0 * b0) / sqrt(2.0), (1.0 - 2.0 * b1) / sqrt(2.0)};
  return s;
}

/* Symbol n turned by n pi/4 where the carrier is pi/4-QPSK (polyrx/sim.h), in float64. */
static void ref_pi4(const prx_sim_carrier *c, test_cf64 *sym, size_t n_sym) {
  for (size_t n = 0; c->pi4 && n < n_sym; n++) {
    double a = M_PI / 4 * (double)n, cr = cos(a), ci = sin(a);
    test_cf64 s = {sym[n].re * cr - sym[n].im * ci, sym[n].re * ci + sym[n].im * cr};
    sym[n] = s;
  }
}

/* Symbols 0..n_sym-1 of a carrier; returns the number of data symbols among them. */
static size_t ref_symbols(const prx_sim_carrier *c, size_t index, test_cf64 *sym, size_t n_sym,
                          uint8_t *bits) {
  ref_bits(c->seed ? c->seed : index + 1, bits, 2 * n_sym);
  static const unsigned g_of[2][2] = {{0, 1}, {3, 2}}; /* g(00)=0 g(01)=1 g(11)=2 g(10)=3 */
  test_cf64 prev = {1 / sqrt(2.0), 1 / sqrt(2.0)};
  size_t m = 0;
  for (size_t n = 0; n < n_sym; n++) {
    if (c->pilot_period && n % c->pilot_period < c->pilot_len) {
      prx_cf32 p = prx_qpsk_pilot(n % c->pilot_period);
      sym[n].re = p.re;
      sym[n].im = p.im;
      continue;
    }
    unsigned b0 = bits[2 * m], b1 = bits[2 * m + 1];
    m++;
    if (c->differential) {
      unsigned g = g_of[b0][b1];
      double ang = g * M_PI / 2, cr = cos(ang), ci = sin(ang);
      test_cf64 s = {prev.re * cr - prev.im * ci, prev.re * ci + prev.im * cr};
      prev = sym[n] = s;
    } else {
      sym[n] = ref_map(b0, b1);
    }
  }
  ref_pi4(c, sym, n_sym);
  return m;
}

static double ref_energy(double beta, unsigned span) {
  /* midpoint rule, 20000 points per symbol (the code under test uses Simpson) */
  double h = 1.0 / 20000, e = 0;
  for (double t = -0.5 * span + h / 2; t < 0.5 * span; t += h) {
    double p = prx_rrc_pulse(t, beta);
    e += p * p * h;
  }
  return e;
}

/* Adds carrier c (index idx) to ref[0..n-1]. */
static void ref_carrier(double fs, const prx_sim_carrier *c, size_t idx, size_t n, test_cf64 *ref) {
  double rs = c->symbol_rate * (1 + c->clock_ppm * 1e-6), half = 0.5 * c->span;
  size_t n_sym = (size_t)(n * rs / fs + half + 2);
  test_cf64 *sym = malloc(n_sym * sizeof *sym);
  uint8_t *bits = malloc(2 * n_sym);
  ref_symbols(c, idx, sym, n_sym, bits);
  double a = sqrt(pow(10, c->power_db / 10) / ref_energy(c->rolloff, c->span));
  for (size_t k = 0; k < n; k++) {
    double t = k / fs, u = t * rs - c->timing_offset, sr = 0, si = 0;
    for (long m = (long)floor(u - half) + 1; m <= (long)floor(u + half); m++) {
      if (m < 0 || u - m < -half || u - m >= half) continue;
      double p = prx_rrc_pulse(u - m, c->rolloff);
      sr += sym[m].re * p;
      si += sym[m].im * p;
    }
    double th = 2 * M_PI * c->freq * t + c->phase, cr = a * cos(th), ci = a * sin(th);
    ref[k].re += cr * sr - ci * si;
    ref[k].im += cr * si + ci * sr;
  }
  free(sym);
  free(bits);
}

/* The DC offset and the gaps of the model, applied to the carriers' sum ref[0..n-1] (no noise):
 * outside the gaps carriers + dc, in a noise gap dc alone, in a zero gap 0. */
static void ref_dc_gaps(double dc_re, double dc_im, const prx_sim_gap *gaps, size_t n_gaps,
                        size_t n, test_cf64 *ref) {
  for (size_t k = 0; k < n; k++) {
    int in = -1;
    for (size_t g = 0; g < n_gaps; g++)
      if (k >= gaps[g].start && k - gaps[g].start < gaps[g].length) in = gaps[g].zeros;
    if (in == 1) {
      ref[k].re = ref[k].im = 0;
    } else {
      if (in == 0) ref[k].re = ref[k].im = 0;
      ref[k].re += dc_re;
      ref[k].im += dc_im;
    }
  }
}

/* ---- helpers ---- */

static prx_sim_config config(double fs, const prx_sim_carrier *c, size_t nc, int noise, double esn0,
                             int threads) {
  prx_sim_config cfg = prx_sim_config_default();
  cfg.sample_rate = fs;
  cfg.carriers = c;
  cfg.n_carriers = nc;
  cfg.noise = noise;
  cfg.esn0_db = esn0;
  cfg.threads = threads;
  return cfg;
}

static prx_sim *make_cfg(const prx_sim_config *cfg) {
  prx_sim *s = NULL;
  CHECK_OK(prx_sim_create(cfg, &s));
  return s;
}

static prx_sim *make(double fs, const prx_sim_carrier *c, size_t nc, int noise, double esn0,
                     int threads) {
  prx_sim_config cfg = config(fs, c, nc, noise, esn0, threads);
  return make_cfg(&cfg);
}

static prx_cf32 *gen_cfg(const prx_sim_config *cfg, size_t n) {
  prx_sim *s = make_cfg(cfg);
  prx_cf32 *x = malloc(n * sizeof *x);
  if (s) CHECK_OK(prx_sim_generate(s, x, n));
  prx_sim_destroy(s);
  return x;
}

static prx_cf32 *gen(double fs, const prx_sim_carrier *c, size_t nc, int noise, double esn0,
                     int threads, size_t n) {
  prx_sim_config cfg = config(fs, c, nc, noise, esn0, threads);
  return gen_cfg(&cfg, n);
}

static prx_sim_carrier carrier(double rs, double f, double phase, double tau, double ppm) {
  prx_sim_carrier c = prx_sim_carrier_default();
  c.symbol_rate = rs;
  c.freq = f;
  c.phase = phase;
  c.timing_offset = tau;
  c.clock_ppm = ppm;
  return c;
}

/* ---- tests ---- */

static double worst_db = -400;

static void check_vs_reference(const char *what, double fs, const prx_sim_carrier *c, size_t nc,
                               size_t n) {
  test_cf64 *ref = calloc(n, sizeof *ref);
  for (size_t i = 0; i < nc; i++) ref_carrier(fs, &c[i], i, n, ref);
  prx_cf32 *x = gen(fs, c, nc, 0, 0, 1, n);
  double e = test_rel_l2_vs_cf64(x, ref, n), db = 20 * log10(e);
  printf("  %-44s rel L2 %.2e (%.1f dB)\n", what, e, db);
  if (db > worst_db) worst_db = db;
  CHECK(e < 3e-5, "%s: rel L2 %g vs the float64 model (bound 3e-5, -90 dB)", what, e);
  free(ref);
  free(x);
}

static void test_accuracy(test_rng *rng) {
  printf("accuracy against the float64 model:\n");
  const double fss[] = {4800, 9600, 12800}; /* 2400 baud: sps 2, 4, 5.333 */
  const double betas[] = {0.35, 0.2, 1.0};
  for (int i = 0; i < 3; i++) {
    for (int b = 0; b < 3; b++) {
      prx_sim_carrier c =
          carrier(2400, (test_rng_uniform(rng) - 0.5) * 0.2 * 2400, test_rng_uniform(rng) * 6.28,
                  test_rng_uniform(rng), (test_rng_uniform(rng) - 0.5) * 100);
      c.rolloff = betas[b];
      c.span = b == 2 ? 7 : 12; /* an odd span too */
      c.differential = b == 1;
      if (b == 2) {
        c.pilot_period = 32;
        c.pilot_len = 6;
      }
      c.pi4 = i == b; /* pi/4-QPSK: plain, differential and with pilots once each */
      char what[96];
      snprintf(what, sizeof what, "sps %.3f beta %.2f span %u ppm %+.1f%s", fss[i] / 2400,
               c.rolloff, c.span, c.clock_ppm, c.pi4 ? " pi/4" : "");
      check_vs_reference(what, fss[i], &c, 1, 6000);
    }
  }
  /* several carriers with different rates, powers and seeds, one of them at the band edge */
  prx_sim_carrier cs[4] = {carrier(2400, 1000, 0.3, 0.25, 50), carrier(4800, -9000, 2.0, 0.9, -20),
                           carrier(1200, 13000, -1.0, 0.5, 0), carrier(3000, -16384, 0, 0, 0)};
  cs[1].power_db = -6;
  cs[2].power_db = 10;
  cs[2].seed = 99;
  cs[3].power_db = -3;
  cs[3].span = 20;
  check_vs_reference("4 carriers, fs 32768, powers 0/-6/10/-3 dB", 32768, cs, 4, 8000);
  /* many samples per symbol (the symbol-major kernel from 48 on), on both sides of the switch,
   * with an odd span and pilots */
  const double many[] = {47.9, 48, 100.3, 6.5536e6 / 2400};
  for (int i = 0; i < 4; i++) {
    prx_sim_carrier c = carrier(6.5536e6 / many[i], (test_rng_uniform(rng) - 0.5) * 1e6,
                                test_rng_uniform(rng) * 6.28, test_rng_uniform(rng), 37);
    c.span = i == 2 ? 9 : 12;
    c.differential = i == 1;
    c.pilot_period = i == 3 ? 10 : 0;
    c.pilot_len = i == 3 ? 2 : 0;
    char what[96];
    snprintf(what, sizeof what, "sps %.1f span %u at fs 6.5536M", many[i], c.span);
    check_vs_reference(what, 6.5536e6, &c, 1, i == 3 ? 70000 : 12000);
  }
  /* a high carrier frequency over many rotator anchors: a long stream's phase accuracy */
  prx_sim_carrier hi = carrier(100e3, 2.9e6, 1.0, 0.6, 30);
  check_vs_reference("fs 6.5536M, f 2.9 MHz, Rs 100k, 40000 samples", 6.5536e6, &hi, 1, 40000);
  printf("  worst: %.1f dB\n", worst_db);
}

/* DC offset and gaps against the float64 model, on the direct and the symbol-major kernels: zero
 * gaps exactly 0, the carriers muted in noise gaps and resuming after them at the symbol the
 * clock has reached (the reference's symbols run on), the DC everywhere but in zero gaps. */
static void test_dc_gaps_accuracy(test_rng *rng) {
  printf("DC offset and gaps against the float64 model:\n");
  /* gap edges inside tasks (SIM_TASK 4096) and across a rotator anchor (1024) */
  const prx_sim_gap gaps[] = {{0, 37, 1},      {1000, 333, 0}, {4000, 200, 1}, {4200, 1, 0},
                              {5555, 2500, 0}, {9000, 1, 1},   {11999, 1, 1}};
  const size_t n = 12000, ng = sizeof gaps / sizeof gaps[0];
  /* (random timings and a clock offset that is not a round number: a sample exactly on the
   * truncated pulse's edge, +-span/2, is ambiguous by one rounding in the model and the code) */
  const double spss[] = {2, 5.333, 96}; /* 96: the symbol-major kernel */
  for (int i = 0; i < 3; i++) {
    double fs = 2400 * spss[i];
    prx_sim_carrier cs[2] = {carrier(2400, (test_rng_uniform(rng) - 0.5) * 0.2 * 2400,
                                     test_rng_uniform(rng) * 6.28, test_rng_uniform(rng), 300),
                             carrier(2400, 0.3 * fs, 1.0, test_rng_uniform(rng),
                                     i == 1 ? 1999.3 : -1999.3)}; /* +-2000 ppm */
    cs[1].power_db = -4;
    cs[1].differential = 1;
    double dcr = (test_rng_uniform(rng) - 0.5) * 6, dci = (test_rng_uniform(rng) - 0.5) * 6;
    test_cf64 *ref = calloc(n, sizeof *ref);
    for (size_t c = 0; c < 2; c++) ref_carrier(fs, &cs[c], c, n, ref);
    ref_dc_gaps(dcr, dci, gaps, ng, n, ref);
    prx_sim_config cfg = config(fs, cs, 2, 0, 0, 2);
    cfg.dc_re = dcr;
    cfg.dc_im = dci;
    cfg.gaps = gaps;
    cfg.n_gaps = ng;
    prx_cf32 *x = gen_cfg(&cfg, n);
    double e = test_rel_l2_vs_cf64(x, ref, n);
    size_t nonzero = 0, zeros = 0;
    for (size_t g = 0; g < ng; g++)
      for (uint64_t k = gaps[g].start; gaps[g].zeros && k < gaps[g].start + gaps[g].length; k++) {
        nonzero += x[k].re != 0 || x[k].im != 0;
        zeros++;
      }
    /* the carriers' part alone (DC removed) against the reference's, outside the zero gaps */
    double num = 0, den = 0;
    for (size_t k = 0; k < n; k++) {
      if (ref[k].re == 0 && ref[k].im == 0) continue;
      double ar = x[k].re - dcr - (ref[k].re - dcr), ai = x[k].im - dci - (ref[k].im - dci);
      num += ar * ar + ai * ai;
      den += (ref[k].re - dcr) * (ref[k].re - dcr) + (ref[k].im - dci) * (ref[k].im - dci);
    }
    printf("  sps %-6.3f DC %+.2f%+.2fi: rel L2 %.2e, carriers alone %.2e, %zu/%zu zero-gap "
           "samples not 0\n",
           spss[i], dcr, dci, e, sqrt(num / den), nonzero, zeros);
    CHECK(e < 3e-5, "sps %g with DC and gaps: rel L2 %g vs the float64 model", spss[i], e);
    CHECK(sqrt(num / den) < 3e-5, "sps %g: carriers with DC removed: rel L2 %g", spss[i],
          sqrt(num / den));
    CHECK(nonzero == 0, "sps %g: %zu samples of zero gaps are not exactly 0", spss[i], nonzero);
    free(ref);
    free(x);
  }
}

/* With noise: a zero gap is exactly 0; a noise gap holds the same noise as the stream without
 * gaps (noise = noisy - clean, to float rounding) plus the DC; outside the gaps the samples are
 * those of the stream without gaps plus the DC; the bits are the same with and without gaps. */
static void test_noise_gaps(void) {
  prx_sim_carrier c = carrier(2400, 300, 0.2, 0.4, -700);
  const prx_sim_gap gaps[] = {{5000, 3000, 0}, {20000, 4097, 1}, {30000, 10000, 0}};
  const size_t n = 50000;
  const double fs = 9600, dcr = 0.7, dci = -1.3;
  prx_sim_config cfg = config(fs, &c, 1, 1, 8, 2);
  prx_cf32 *noisy = gen_cfg(&cfg, n), *clean = gen(fs, &c, 1, 0, 0, 1, n);
  cfg.dc_re = dcr;
  cfg.dc_im = dci;
  cfg.gaps = gaps;
  cfg.n_gaps = 3;
  prx_sim *s = make_cfg(&cfg);
  prx_cf32 *x = malloc(n * sizeof *x);
  CHECK_OK(prx_sim_generate(s, x, n));
  double worst[3] = {0, 0, 0}; /* outside, noise gaps, zero gaps */
  for (size_t k = 0; k < n; k++) {
    int where = 0;
    for (int g = 0; g < 3; g++)
      if (k >= gaps[g].start && k - gaps[g].start < gaps[g].length) where = gaps[g].zeros ? 2 : 1;
    double wr, wi;
    if (where == 0)
      wr = (double)noisy[k].re + dcr, wi = (double)noisy[k].im + dci;
    else if (where == 1)
      wr = (double)noisy[k].re - clean[k].re + dcr, wi = (double)noisy[k].im - clean[k].im + dci;
    else
      wr = wi = 0;
    double d = hypot(x[k].re - wr, x[k].im - wi);
    if (d > worst[where]) worst[where] = d;
  }
  printf("noise with gaps: largest difference from the model outside %.2e, in noise gaps %.2e, "
         "in zero gaps %.2e (noise RMS %.3f)\n",
         worst[0], worst[1], worst[2], sqrt(prx_sim_noise_variance(s)));
  CHECK(worst[0] < 1e-5 && worst[1] < 1e-5, "noise and DC around gaps: differences %g, %g",
        worst[0], worst[1]);
  CHECK(worst[2] == 0, "zero gaps with noise: a sample of magnitude %g", worst[2]);
  /* the symbol clock and the bits run through the gaps */
  prx_sim *plain = make(fs, &c, 1, 1, 8, 1);
  CHECK_OK(prx_sim_generate(plain, noisy, n));
  prx_sim_carrier_info a, b;
  CHECK_OK(prx_sim_carrier_state(s, 0, &a));
  CHECK_OK(prx_sim_carrier_state(plain, 0, &b));
  CHECK(a.symbols == b.symbols && a.data_symbols == b.data_symbols,
        "gaps changed the symbol count: %llu vs %llu", (unsigned long long)a.symbols,
        (unsigned long long)b.symbols);
  prx_sim_destroy(plain);
  prx_sim_destroy(s);
  free(x);
  free(noisy);
  free(clean);
}

/* Output must not depend on call sizes nor thread count (bit-exact). */
static void test_invariance(test_rng *rng) {
  /* sps 40, 10, 28.8 (direct kernel) and 96 (symbol-major kernel) */
  prx_sim_carrier cs[4] = {carrier(2400, 700, 0.1, 0.3, 40), carrier(9600, -20000, 1, 0.7, -10),
                           carrier(1e4 / 3, 30000, 2, 0.1, 5), carrier(1000, -41000, 3, 0.9, 70)};
  cs[1].differential = 1;
  cs[2].pilot_period = 100;
  cs[2].pilot_len = 10;
  const size_t n = 200000; /* spans several internal blocks */
  /* gaps across task (4096) and block (65536) boundaries, and DC */
  const prx_sim_gap gaps[] = {
      {4000, 100, 0}, {60000, 10000, 1}, {131000, 1, 0}, {131072, 5000, 1}, {199999, 100, 0}};
  prx_sim_config cfg = config(96000, cs, 4, 1, 12, 1);
  cfg.dc_re = 0.25;
  cfg.dc_im = -3;
  cfg.gaps = gaps;
  cfg.n_gaps = 5;
  prx_cf32 *ref = gen_cfg(&cfg, n);
  for (int threads = 1; threads <= 3; threads += 2) {
    cfg.threads = threads;
    prx_sim *s = make_cfg(&cfg);
    prx_cf32 *x = malloc(n * sizeof *x);
    size_t done = 0, calls = 0;
    while (done < n) {
      size_t sizes[] = {1, 2, 7, 1023, 4097, 65535, 70001};
      size_t m = sizes[test_rng_u64(rng) % 7];
      if (m > n - done) m = n - done;
      CHECK_OK(prx_sim_generate(s, x + done, m));
      done += m;
      calls++;
    }
    CHECK(memcmp(x, ref, n * sizeof *x) == 0,
          "threads %d, %zu calls of random sizes: output differs from one call", threads, calls);
    /* bits taken in pieces match the documented stream */
    for (size_t c = 0; c < 4; c++) {
      prx_sim_carrier_info info;
      CHECK_OK(prx_sim_carrier_state(s, c, &info));
      size_t total = (size_t)(2 * info.data_symbols), got = 0, k;
      uint8_t *b = malloc(total + 10), *rb = malloc(total + 10);
      do {
        CHECK_OK(prx_sim_take_bits(s, c, b + got, 1 + got % 1000, &k));
        got += k;
      } while (k > 0 && got <= total);
      CHECK(got == total, "carrier %zu: took %zu bits, expected %zu", c, got, total);
      ref_bits(cs[c].seed ? cs[c].seed : c + 1, rb, total);
      CHECK(memcmp(b, rb, total) == 0, "carrier %zu: bits differ from the documented stream", c);
      free(b);
      free(rb);
    }
    prx_sim_destroy(s);
    free(x);
  }
  free(ref);
}

/* Symbols started after N samples: n <= (N-1) r + span/2 - timing_offset. */
static void test_started_count(void) {
  prx_sim_carrier c = carrier(2400, 0, 0, 0.4, 100);
  c.pilot_period = 10;
  c.pilot_len = 3;
  prx_sim *s = make(12800, &c, 1, 0, 0, 1);
  prx_cf32 x[777];
  size_t total = 0;
  for (int i = 0; i < 20; i++) {
    CHECK_OK(prx_sim_generate(s, x, 777));
    total += 777;
    double r = 2400 * (1 + 100e-6) / 12800;
    uint64_t expect = (uint64_t)floor((total - 1) * r + 6 - 0.4) + 1, data = 0;
    for (uint64_t n = 0; n < expect; n++) data += n % 10 >= 3;
    prx_sim_carrier_info info;
    CHECK_OK(prx_sim_carrier_state(s, 0, &info));
    CHECK(info.symbols == expect && info.data_symbols == data,
          "after %zu samples: %llu symbols (%llu data), expected %llu (%llu)", total,
          (unsigned long long)info.symbols, (unsigned long long)info.data_symbols,
          (unsigned long long)expect, (unsigned long long)data);
    CHECK(fabs(info.samples_per_symbol - 1 / r) < 1e-12 &&
              fabs(info.first_symbol - 0.4 / r) < 1e-12,
          "carrier info: sps %g first %g", info.samples_per_symbol, info.first_symbol);
  }
  prx_sim_destroy(s);
}

static double mean_power(const prx_cf32 *x, size_t n) {
  double p = 0;
  for (size_t i = 0; i < n; i++) p += (double)x[i].re * x[i].re + (double)x[i].im * x[i].im;
  return p / n;
}

static void test_power(void) {
  const size_t n = 400000, skip = 2000; /* skip the ramp-up of the first span/2 symbols */
  const double fss[] = {4800, 9600, 12800}, pdb[] = {0, -6, 7.5};
  for (int i = 0; i < 3; i++) {
    prx_sim_carrier c = carrier(2400, 300, 0.4, 0.3, 20);
    c.power_db = pdb[i];
    c.differential = i == 1;
    prx_cf32 *x = gen(fss[i], &c, 1, 0, 0, 1, n);
    double p = mean_power(x + skip, n - skip), want = pow(10, pdb[i] / 10);
    printf("power: sps %.3f, %+.1f dB: measured %.5f, expected %.5f (%+.2f%%)\n", fss[i] / 2400,
           pdb[i], p, want, 100 * (p / want - 1));
    CHECK(fabs(p / want - 1) < 0.02, "sps %g: carrier power %g, expected %g", fss[i] / 2400, p,
          want);
    free(x);
  }
}

static void test_noise(void) {
  /* carrier 0 at -3 dB, Rs 2400, fs 12800, Es/N0 4 dB: E|n|^2 = P0 fs/Rs0 10^(-0.4) */
  prx_sim_carrier c = carrier(2400, 500, 0, 0.2, 0);
  c.power_db = -3;
  const size_t n = 500000;
  const double esn0 = 4, fs = 12800;
  prx_cf32 *noisy = gen(fs, &c, 1, 1, esn0, 2, n), *clean = gen(fs, &c, 1, 0, 0, 1, n);
  double want = pow(10, -0.3) * (fs / 2400) * pow(10, -esn0 / 10);
  prx_sim *s = make(fs, &c, 1, 1, esn0, 1);
  CHECK(fabs(prx_sim_noise_variance(s) / want - 1) < 1e-12, "reported noise variance %g, want %g",
        prx_sim_noise_variance(s), want);
  prx_sim_carrier_info info;
  CHECK_OK(prx_sim_carrier_state(s, 0, &info));
  CHECK(fabs(info.esn0_db - esn0) < 1e-9, "reported Es/N0 %g, expected %g", info.esn0_db, esn0);
  prx_sim_destroy(s);
  double sr = 0, si = 0, srr = 0, sii = 0, sri = 0, r4 = 0, lag = 0, tail = 0;
  for (size_t i = 0; i < n; i++) {
    double a = (double)noisy[i].re - clean[i].re, b = (double)noisy[i].im - clean[i].im;
    sr += a;
    si += b;
    srr += a * a;
    sii += b * b;
    sri += a * b;
    r4 += a * a * a * a;
    if (i) lag += a * ((double)noisy[i - 1].re - clean[i - 1].re);
    tail += fabs(a) > 3 * sqrt(want / 2);
  }
  double var = (srr + sii) / n, vr = srr / n, vi = sii / n;
  printf("noise: E|n|^2 %.5f expected %.5f (%+.2f%%); re/im %.4f/%.4f; kurtosis %.3f; "
         "P(|re|>3 sigma) %.5f (Gaussian 0.00270)\n",
         var, want, 100 * (var / want - 1), vr, vi, r4 / n / (vr * vr), tail / n);
  CHECK(fabs(var / want - 1) < 0.01, "noise variance %g, expected %g", var, want);
  CHECK(fabs(vr / vi - 1) < 0.02, "re/im variances %g, %g differ", vr, vi);
  CHECK(fabs(sr / n) < 0.01 * sqrt(want) && fabs(si / n) < 0.01 * sqrt(want), "noise mean %g %g",
        sr / n, si / n);
  CHECK(fabs(sri / n) < 0.01 * want, "re/im correlation %g", sri / n / want);
  CHECK(fabs(lag / n) < 0.01 * want, "lag-1 correlation %g", lag / n / vr);
  CHECK(fabs(r4 / n / (vr * vr) - 3) < 0.05, "kurtosis %g, Gaussian 3", r4 / n / (vr * vr));
  CHECK(fabs(tail / n / 0.0026998 - 1) < 0.06, "P(|re| > 3 sigma) = %g, Gaussian 0.0027", tail / n);
  free(noisy);
  free(clean);
  CHECK(fabs(prx_sim_ebn0_to_esn0(4) - 7.0103) < 1e-4, "Eb/N0 4 dB -> Es/N0 %g",
        prx_sim_ebn0_to_esn0(4));
}

/* Ideal demodulation of a noiseless carrier: derotate with the known carrier, matched-filter at
 * the known symbol instants (t_n = (n + timing_offset) T'), decide, and compare the bits with
 * prx_sim_take_bits. Differential symbols are decoded from d[m] conj(d[m-1]) over data symbols;
 * pilot symbols must be the pilot word. */
static void test_bits_by_demod(const char *what, double fs, prx_sim_carrier c) {
  const size_t n = 60000;
  prx_sim *s = make(fs, &c, 1, 0, 0, 1);
  prx_cf32 *x = malloc(n * sizeof *x);
  CHECK_OK(prx_sim_generate(s, x, n));
  prx_sim_carrier_info info;
  CHECK_OK(prx_sim_carrier_state(s, 0, &info));
  size_t nb = (size_t)(2 * info.data_symbols), got;
  uint8_t *bits = malloc(nb + 1);
  CHECK_OK(prx_sim_take_bits(s, 0, bits, nb + 1, &got));
  CHECK(got == nb, "%s: %zu bits, expected %zu", what, got, nb);
  double sps = fs / (c.symbol_rate * (1 + c.clock_ppm * 1e-6)), half = 0.5 * c.span;
  size_t errors = 0, checked = 0, pilot_bad = 0, m = 0;
  double evm = 0, prev_re = 1 / sqrt(2.0), prev_im = 1 / sqrt(2.0);
  for (size_t sym = 0;; sym++) {
    double centre = (sym + c.timing_offset) * sps;
    if (centre + half * sps + 1 >= n) break;
    double yr = 0, yi = 0, e = 0;
    for (long k = (long)ceil(centre - half * sps); k <= (long)floor(centre + half * sps); k++) {
      if (k < 0) continue;
      double p = prx_rrc_pulse(k / sps - sym - c.timing_offset, c.rolloff);
      double th = -(2 * M_PI * c.freq * k / fs + c.phase), cr = cos(th), ci = sin(th);
      yr += p * (x[k].re * cr - x[k].im * ci);
      yi += p * (x[k].re * ci + x[k].im * cr);
      e += p * p;
    }
    yr /= e;
    yi /= e;
    int pilot = c.pilot_period && sym % c.pilot_period < c.pilot_len;
    if (pilot) {
      prx_cf32 p = prx_qpsk_pilot(sym % c.pilot_period);
      pilot_bad += (yr < 0) != (p.re < 0) || (yi < 0) != (p.im < 0);
      continue;
    }
    unsigned b0, b1;
    if (c.differential) {
      /* d[m] conj(d[m-1]) = j^g: its quadrant gives g */
      double dr = yr * prev_re + yi * prev_im, di = yi * prev_re - yr * prev_im;
      unsigned g = fabs(dr) > fabs(di) ? (dr > 0 ? 0 : 2) : (di > 0 ? 1 : 3);
      prx_qpsk_diff_bits(g, &b0, &b1);
      prev_re = yr;
      prev_im = yi;
    } else {
      b0 = yr < 0;
      b1 = yi < 0;
    }
    double er = fabs(yr) - 1 / sqrt(2.0), ei = fabs(yi) - 1 / sqrt(2.0);
    if (sym >= (size_t)half) evm += er * er + ei * ei, checked++; /* past the ramp-up */
    if (2 * m + 1 < nb) errors += (bits[2 * m] != b0) + (bits[2 * m + 1] != b1);
    m++;
  }
  evm = sqrt(evm / checked);
  printf("demod %-34s %zu data symbols, %zu bit errors, %zu pilot errors, EVM %.1f dB\n", what, m,
         errors, pilot_bad, 20 * log10(evm));
  CHECK(errors == 0 && pilot_bad == 0, "%s: %zu bit errors, %zu pilot errors", what, errors,
        pilot_bad);
  CHECK(evm < 0.03, "%s: EVM %g after the ideal matched filter", what, evm);
  free(bits);
  free(x);
  prx_sim_destroy(s);
}

static void expect_invalid(const char *what, prx_sim_config cfg, const char *needle) {
  prx_sim *s = (prx_sim *)&cfg; /* a non-NULL value that create must clear */
  prx_status st = prx_sim_create(&cfg, &s);
  CHECK(st == PRX_ERR_INVALID && s == NULL, "%s: accepted (status %d)", what, st);
  CHECK(strstr(prx_last_error(), needle) != NULL, "%s: message '%s' does not name '%s'", what,
        prx_last_error(), needle);
}

static void test_invalid(void) {
  prx_sim_carrier good = carrier(2400, 0, 0, 0, 0), c;
  prx_sim_config cfg = prx_sim_config_default(), bad;
  cfg.sample_rate = 9600;
  cfg.carriers = &good;
  cfg.n_carriers = 1;
  prx_sim *s = NULL;
  CHECK_OK(prx_sim_create(&cfg, &s));
  prx_sim_destroy(s);
#define BADCAR(field, value, needle)                                                               \
  do {                                                                                             \
    c = good;                                                                                      \
    c.field = value;                                                                               \
    bad = cfg;                                                                                     \
    bad.carriers = &c;                                                                             \
    expect_invalid(#field " = " #value, bad, needle);                                              \
  } while (0)
  BADCAR(symbol_rate, 5000, "samples per symbol");
  BADCAR(symbol_rate, 0, "symbol rate");
  BADCAR(symbol_rate, NAN, "symbol rate");
  BADCAR(rolloff, 0, "roll-off");
  BADCAR(rolloff, 1.5, "roll-off");
  BADCAR(span, 1, "span");
  BADCAR(span, 1000, "span");
  BADCAR(freq, 5000, "frequency");
  BADCAR(timing_offset, 1.0, "timing offset");
  BADCAR(timing_offset, -0.1, "timing offset");
  BADCAR(clock_ppm, 2e4, "clock offset");
  BADCAR(power_db, INFINITY, "power");
  BADCAR(phase, NAN, "phase");
  BADCAR(differential, 2, "differential");
  BADCAR(pilot_len, 4, "pilot");
  c = good;
  c.pilot_period = 8;
  c.pilot_len = 8;
  bad = cfg;
  bad.carriers = &c;
  expect_invalid("pilots 8:8", bad, "pilot length");
  bad = cfg;
  bad.sample_rate = 0;
  expect_invalid("sample rate 0", bad, "sample rate");
  bad = cfg;
  bad.n_carriers = 0;
  expect_invalid("no carriers", bad, "carrier");
  bad = cfg;
  bad.noise = 1;
  bad.esn0_db = NAN;
  expect_invalid("Es/N0 NaN", bad, "Es/N0");
  bad = cfg;
  bad.threads = -2;
  expect_invalid("threads -2", bad, "threads");
  bad = cfg;
  bad.dc_re = NAN;
  expect_invalid("DC NaN", bad, "DC offset must be finite");
  bad.dc_re = 0;
  bad.dc_im = -INFINITY;
  expect_invalid("DC -inf", bad, "DC offset must be finite");
  prx_sim_gap gaps[3] = {{100, 50, 0}, {150, 10, 1}, {300, 1, 0}};
  bad = cfg;
  bad.gaps = gaps;
  bad.n_gaps = 3;
  CHECK_OK(prx_sim_create(&bad, &s)); /* touching gaps are fine */
  prx_sim_destroy(s);
  gaps[1].start = 149;
  expect_invalid("overlapping gaps", bad, "gap 1 (start 149) overlaps gap 0 (samples 100 to 149)");
  gaps[1].start = 90;
  expect_invalid("unsorted gaps", bad, "comes before gap 0");
  gaps[1].start = 150;
  gaps[2].length = 0;
  expect_invalid("empty gap", bad, "gap 2 (start 300): length must be at least 1");
  gaps[2].length = 1;
  gaps[2].zeros = 2;
  expect_invalid("gap zeros 2", bad, "gap 2: zeros must be 0");
  gaps[2].zeros = 0;
  gaps[2].length = UINT64_MAX - 100;
  expect_invalid("gap past 2^52", bad, "exceeds 2^52");
  bad.gaps = NULL;
  expect_invalid("gaps NULL", bad, "without a gap array");
  CHECK(prx_sim_create(NULL, &s) == PRX_ERR_INVALID, "NULL config accepted");
  /* calls on a valid generator with bad arguments */
  CHECK_OK(prx_sim_create(&cfg, &s));
  size_t n;
  uint8_t b[4];
  CHECK(prx_sim_generate(s, NULL, 10) == PRX_ERR_INVALID, "NULL output accepted");
  CHECK_OK(prx_sim_generate(s, NULL, 0));
  CHECK(prx_sim_take_bits(s, 1, b, 4, &n) == PRX_ERR_INVALID, "carrier 1 of 1 accepted");
  CHECK(strstr(prx_last_error(), "carrier 1") != NULL, "message: %s", prx_last_error());
  prx_sim_destroy(s);
  prx_sim_destroy(NULL);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261129);
  test_accuracy(&rng);
  test_dc_gaps_accuracy(&rng);
  test_noise_gaps();
  test_invariance(&rng);
  test_started_count();
  test_power();
  test_noise();
  prx_sim_carrier c = carrier(2400, 0.08 * 2400, 2.1, 0.37, 50);
  test_bits_by_demod("sps 2, CFO, phase, timing, 50 ppm", 4800, c);
  c.differential = 1;
  c.clock_ppm = -50;
  test_bits_by_demod("sps 4, differential", 9600, c);
  c.differential = 0;
  c.pilot_period = 64;
  c.pilot_len = 8;
  test_bits_by_demod("sps 5.333, pilots 64:8", 12800, c);
  c.differential = 1;
  c.rolloff = 0.2;
  c.span = 16;
  test_bits_by_demod("sps 5.333, differential + pilots", 12800, c);
  test_invalid();
  return test_finish("test_sim");
}
