/* Fuzz target: the generator's configuration check (prx_sim_create) on a configuration of 0..3
 * carriers drawn from the bytes, absurd values included, then a short stream.
 *
 * The documentation (include/polyrx/sim.h) is the oracle, written out here:
 * - a configuration that breaks a documented rule (rate <= 0 or non-finite, no carrier, a
 *   symbol rate <= 0 or non-finite, fewer than 2 samples per symbol, roll-off outside (0, 1],
 *   span outside 2..128, |freq| > fs/2, timing offset outside [0, 1), |ppm| > 10000, a pilot
 *   length outside 1..period-1, a non-finite power or phase, a non-finite Es/N0 with noise,
 *   negative threads) or asks for 10^5 threads must fail, with an error status and a message;
 * - one within the rules and ordinary (|power| <= 100 dB, |phase| <= 1000, |Es/N0| <= 100 dB,
 *   differential and noise 0 or 1, pilot length <= 1000 and none without a period, at most
 *   10^6 samples per symbol, 10^-3 <= fs <= 10^15, threads <= 1024) must succeed;
 * - anything else may do either, but a failure must be a proper error.
 * Valid configurations with more than 4 threads are not created (time, not coverage).
 *
 * After a success: the stream's samples are finite (when the powers and the noise are); the
 * position counts them; each carrier's figures match the configuration; the bits taken are
 * 2 per data symbol started, data symbols being the symbols minus the pilots, and are exactly
 * the documented SplitMix64 bits; and a second generator of the same configuration, run with
 * another thread count and the stream cut in two calls, gives the same samples bit for bit
 * ("output depends only on the configuration"). */
#include "fuzz.h"

#define MAX_CARRIERS 3

/* SplitMix64(seed) output j, as documented in polyrx/sim.h. */
static uint64_t doc_splitmix(uint64_t seed, uint64_t j) {
  uint64_t z = seed + (j + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int carrier_bad(const prx_sim_carrier *c, double fs) {
  int bad = 0;
  bad |= !(c->symbol_rate > 0 && isfinite(c->symbol_rate));
  bad |= !(fs / c->symbol_rate >= 2);
  bad |= !(c->rolloff > 0 && c->rolloff <= 1);
  bad |= c->span < 2 || c->span > 128;
  bad |= !(fabs(c->freq) <= fs / 2);
  bad |= !(c->timing_offset >= 0 && c->timing_offset < 1);
  bad |= !(fabs(c->clock_ppm) <= 10000);
  bad |= c->pilot_period > 0 && (c->pilot_len < 1 || c->pilot_len >= c->pilot_period);
  bad |= !isfinite(c->power_db) || !isfinite(c->phase);
  return bad;
}

static int carrier_ordinary(const prx_sim_carrier *c, double fs) {
  return fabs(c->power_db) <= 100 && fabs(c->phase) <= 1000 &&
         (c->differential == 0 || c->differential == 1) &&
         (c->pilot_period > 0 || c->pilot_len == 0) && c->pilot_len <= 1000 &&
         fs / c->symbol_rate <= 1e6;
}

static void check_stream(prx_sim *s, const prx_sim_config *cfg, const prx_cf32 *y, size_t n) {
  FUZZ_CHECK(prx_sim_position(s) == n, "position %llu after %zu samples",
             (unsigned long long)prx_sim_position(s), n);
  double nv = prx_sim_noise_variance(s);
  int sane = !cfg->noise || (isfinite(nv) && nv < 1e30);
  for (size_t c = 0; c < cfg->n_carriers; c++) sane &= fabs(cfg->carriers[c].power_db) <= 100;
  if (sane)
    for (size_t k = 0; k < n; k++)
      FUZZ_CHECK(isfinite(y[k].re) && isfinite(y[k].im), "sample %zu is %g + %gi", k, y[k].re,
                 y[k].im);
  if (cfg->noise) {
    const prx_sim_carrier *c0 = &cfg->carriers[0];
    double want = pow(10.0, c0->power_db / 10) / c0->symbol_rate / pow(10.0, cfg->esn0_db / 10) *
                  cfg->sample_rate;
    if (isfinite(want) && want > 1e-300 && want < 1e300)
      FUZZ_CHECK(fabs(nv - want) <= 1e-9 * want, "noise variance %g, expected %g", nv, want);
  } else {
    FUZZ_CHECK(nv == 0, "noise variance %g without noise", nv);
  }

  for (size_t c = 0; c < cfg->n_carriers; c++) {
    const prx_sim_carrier *cc = &cfg->carriers[c];
    prx_sim_carrier_info ci;
    FUZZ_CHECK(prx_sim_carrier_state(s, c, &ci) == PRX_OK, "carrier_state(%zu)", c);
    double sps = cfg->sample_rate / (cc->symbol_rate * (1 + cc->clock_ppm * 1e-6));
    if (sps < 1e15) /* beyond, the symbols per sample underflow: garbage in */
      FUZZ_CHECK(fabs(ci.samples_per_symbol - sps) <= 1e-9 * sps,
                 "carrier %zu: %g samples per symbol, expected %g", c, ci.samples_per_symbol, sps);
    double amp = sqrt(pow(10.0, cc->power_db / 10));
    FUZZ_CHECK(fabs(ci.amplitude - amp) <= 1e-9 * amp, "carrier %zu: amplitude %g, expected %g", c,
               ci.amplitude, amp);
    uint64_t pilots = 0;
    if (cc->pilot_period) {
      uint64_t frames = ci.symbols / cc->pilot_period, rest = ci.symbols % cc->pilot_period;
      pilots = frames * cc->pilot_len + (rest < cc->pilot_len ? rest : cc->pilot_len);
    }
    FUZZ_CHECK(ci.data_symbols == ci.symbols - pilots,
               "carrier %zu: %llu data symbols of %llu, expected %llu", c,
               (unsigned long long)ci.data_symbols, (unsigned long long)ci.symbols,
               (unsigned long long)(ci.symbols - pilots));
    size_t max = (size_t)(2 * ci.data_symbols + 7), got = 12345;
    uint8_t *bits = malloc(max);
    FUZZ_CHECK(bits, "out of memory");
    FUZZ_CHECK(prx_sim_take_bits(s, c, bits, max, &got) == PRX_OK, "take_bits");
    FUZZ_CHECK(got == 2 * ci.data_symbols, "carrier %zu: %zu bits for %llu data symbols", c, got,
               (unsigned long long)ci.data_symbols);
    uint64_t seed = cc->seed ? cc->seed : c + 1;
    for (size_t i = 0; i < got; i++)
      FUZZ_CHECK(bits[i] == ((doc_splitmix(seed, i / 64) >> (i % 64)) & 1),
                 "carrier %zu: bit %zu is %u, not the documented one", c, i, bits[i]);
    FUZZ_CHECK(prx_sim_take_bits(s, c, bits, max, &got) == PRX_OK && got == 0, "bits given twice");
    free(bits);
  }
  prx_sim_carrier_info ci;
  fuzz_clear_error();
  prx_status st = prx_sim_carrier_state(s, cfg->n_carriers, &ci);
  FUZZ_CHECK(st != PRX_OK, "carrier_state accepted carrier %zu of %zu", cfg->n_carriers,
             cfg->n_carriers);
  FUZZ_CHECK_ERROR(st, "prx_sim_carrier_state past the end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_bytes b = {data, size};
  prx_sim_carrier car[MAX_CARRIERS];
  prx_sim_config cfg = prx_sim_config_default();
  uint8_t flags = fuzz_u8(&b);
  cfg.sample_rate = fuzz_double(&b, 1e3, 1e7);
  double fs = cfg.sample_rate;
  cfg.n_carriers = flags >= 248 ? 0 : flags % 4 ? (size_t)(flags % 4) : 1; /* 1, 1, 2, 3 */
  cfg.carriers = flags >= 252 ? NULL : car;
  if (flags >= 252) cfg.n_carriers = 1;
  for (size_t i = 0; i < MAX_CARRIERS; i++) {
    prx_sim_carrier *c = &car[i];
    *c = prx_sim_carrier_default();
    c->symbol_rate = fs / fuzz_double(&b, 2, 40);
    c->freq = fuzz_double(&b, -0.5, 0.5) * fs;
    c->rolloff = fuzz_double(&b, 0.05, 1);
    c->span = fuzz_uint(&b, 2, 12);
    c->power_db = fuzz_double(&b, -30, 10);
    c->phase = fuzz_double(&b, -7, 7);
    c->timing_offset = fuzz_double(&b, 0, 0.999);
    c->clock_ppm = fuzz_double(&b, -300, 300);
    c->differential = fuzz_int(&b, 0, 1);
    uint8_t p = fuzz_u8(&b);
    if (p < 128) {
      c->pilot_period = c->pilot_len = 0;
    } else if (p < 240) {
      c->pilot_period = 2 + fuzz_u8(&b) % 63;
      c->pilot_len = 1 + fuzz_u8(&b) % (c->pilot_period - 1);
    } else {
      c->pilot_period = fuzz_uint(&b, 0, 64);
      c->pilot_len = fuzz_uint(&b, 0, 64);
    }
    c->seed = fuzz_u8(&b) < 64 ? 0 : fuzz_u64(&b);
  }
  cfg.noise = fuzz_int(&b, 0, 1);
  cfg.esn0_db = fuzz_double(&b, -10, 40);
  cfg.noise_seed = fuzz_u64(&b);
  cfg.threads = fuzz_int(&b, 1, 2);
  size_t n1 = fuzz_u16(&b) % 3000, n2 = fuzz_u16(&b) % 3000;

  /* ---- the oracle ---- */
  int bad = !(fs > 0 && isfinite(fs)) || cfg.n_carriers < 1 || !cfg.carriers;
  int ordinary = fs >= 1e-3 && fs <= 1e15;
  for (size_t i = 0; cfg.carriers && i < cfg.n_carriers; i++) {
    bad |= carrier_bad(&car[i], fs);
    ordinary &= carrier_ordinary(&car[i], fs);
  }
  bad |= cfg.noise == 1 && !isfinite(cfg.esn0_db);
  bad |= cfg.threads < 0 || cfg.threads >= 100000;
  ordinary &= (cfg.noise == 0 || cfg.noise == 1) && (!cfg.noise || fabs(cfg.esn0_db) <= 100) &&
              cfg.threads <= 1024;
  if (!bad && cfg.threads > 4) return 0; /* valid, but many threads: time, not coverage */

  prx_sim *s = (prx_sim *)&flags; /* must be replaced by the call */
  fuzz_clear_error();
  prx_status st = prx_sim_create(&cfg, &s);
  if (st != PRX_OK) {
    FUZZ_CHECK(bad || !ordinary, "a valid configuration was refused: %s", prx_last_error());
    FUZZ_CHECK_ERROR(st, "prx_sim_create");
    FUZZ_CHECK(s == NULL, "a failed create left an object");
    return 0;
  }
  FUZZ_CHECK(!bad,
             "an invalid configuration was accepted (fs %g, %zu carriers, noise %d, Es/N0 "
             "%g, threads %d)",
             fs, cfg.n_carriers, cfg.noise, cfg.esn0_db, cfg.threads);

  size_t n = n1 + n2;
  prx_cf32 *ya = malloc((n ? n : 1) * sizeof *ya), *yb = malloc((n ? n : 1) * sizeof *yb);
  FUZZ_CHECK(ya && yb, "out of memory");
  st = prx_sim_generate(s, ya, n);
  FUZZ_CHECK(st == PRX_OK, "generate(%zu) failed: %s", n, prx_last_error());
  check_stream(s, &cfg, ya, n);
  prx_sim_destroy(s);

  /* the same configuration, another thread count, the stream in two calls: the same samples */
  prx_sim_config cfg2 = cfg;
  cfg2.threads = cfg.threads == 1 ? 2 : 1;
  st = prx_sim_create(&cfg2, &s);
  FUZZ_CHECK(st == PRX_OK, "the same configuration with %d threads was refused: %s", cfg2.threads,
             prx_last_error());
  FUZZ_CHECK(prx_sim_generate(s, yb, n1) == PRX_OK && prx_sim_generate(s, yb + n1, n2) == PRX_OK,
             "generate failed: %s", prx_last_error());
  for (size_t k = 0; k < n; k++)
    FUZZ_CHECK(!memcmp(&ya[k], &yb[k], sizeof ya[k]),
               "sample %zu differs (%d vs %d threads, cut at %zu): %.9g%+.9gi vs %.9g%+.9gi", k,
               cfg.threads, cfg2.threads, n1, ya[k].re, ya[k].im, yb[k].re, yb[k].im);
  prx_sim_destroy(s);
  free(ya);
  free(yb);
  return 0;
}
