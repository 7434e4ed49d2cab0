/* Output packing (src/dsp/pack.c) against float64 references: cf16 is the binary16 value
 * nearest to each float (ties to the even pattern, infinity from 65520, subnormals, signed
 * zeros, NaN kept NaN) for random floats of every exponent, exact ties and their neighbours,
 * through the scalar function and the packing loop (F16C where built); ci16 is round(x * scale)
 * ties to even, saturated, NaN as 0, with the saturations counted exactly. */
#include "testutil.h"

#include "dsp/pack.h"

#include <math.h>
#include <string.h>

static double half_value[0x7c01]; /* positive finite halves by pattern; [0x7c00] = 65536 */

static void make_table(void) {
  for (unsigned h = 0; h <= 0x7c00; h++) {
    unsigned e = h >> 10, m = h & 0x3ff;
    half_value[h] = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, (int)e - 25);
  }
  /* 0x7c00 stands for the next value past the largest finite half: 2^16. Rounding to it is
   * overflow (infinity), and its pattern is even, as IEEE's rule needs at 65520. */
}

/* The float64 reference: the nearest half pattern, ties to even. */
static uint16_t ref_half(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  if (isnan(f)) return 0xffff; /* any NaN: checked apart */
  double a = fabs((double)f);
  if (a >= 65536.0) return sign | 0x7c00;
  unsigned lo = 0, hi = 0x7c00; /* half_value[lo] <= a < half_value[hi] after the search */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (half_value[mid] <= a)
      lo = mid;
    else
      hi = mid;
  }
  double dl = a - half_value[lo], dh = half_value[hi] - a;
  unsigned pick = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | (uint16_t)pick;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static void check_halves(const float *x, size_t n, const char *what) {
  uint16_t *packed = malloc(n * sizeof *packed);
  prx_pack_cf16((const prx_cf32 *)x, n / 2, packed);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint16_t s = prx_half_from_float(x[i]);
    if (isnan(x[i])) {
      int ok = (s & 0x7c00) == 0x7c00 && (s & 0x3ff) &&
               (s & 0x8000) == (signbit(x[i]) ? 0x8000 : 0) && (packed[i] & 0x7c00) == 0x7c00 &&
               (packed[i] & 0x3ff);
      if (!ok && bad++ < 5) CHECK(0, "%s: NaN %08x gave %04x / %04x", what, 0, s, packed[i]);
      continue;
    }
    uint16_t want = ref_half(x[i]);
    if ((s != want || packed[i] != want) && bad++ < 5) {
      uint32_t u;
      memcpy(&u, &x[i], 4);
      CHECK(0, "%s: %.9g (%08x): scalar %04x, packed %04x, reference %04x", what, x[i], u, s,
            packed[i], want);
    }
  }
  CHECK(bad == 0, "%s: %zu of %zu values differ from the reference", what, bad, n);
  free(packed);
}

static void test_cf16(test_rng *r) {
  /* random bit patterns: every exponent, both signs, NaNs and infinities among them */
  size_t n = 1 << 21;
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = from_bits((uint32_t)test_rng_u64(r));
  check_halves(x, n, "random bits");
  /* the range that matters: exponents near the half's, uniformly */
  for (size_t i = 0; i < n; i++) {
    uint32_t e = 127 - 27 + (uint32_t)(test_rng_u64(r) % 45); /* 2^-27 .. 2^17 */
    uint32_t u = (uint32_t)(test_rng_u64(r) & 0x807fffffu) | (e << 23);
    x[i] = from_bits(u);
  }
  check_halves(x, n, "half range");
  /* exact ties between consecutive halves, and the floats just beside them */
  for (size_t i = 0; i + 3 <= n; i += 3) {
    unsigned h = (unsigned)(test_rng_u64(r) % 0x7c00);
    double mid = 0.5 * (half_value[h] + half_value[h + 1]);
    float t = (float)mid; /* exact: a tie needs 12 significant bits */
    float s = test_rng_u64(r) & 1 ? -1.0f : 1.0f;
    x[i] = s * t;
    x[i + 1] = s * nextafterf(t, 0);
    x[i + 2] = s * nextafterf(t, INFINITY);
  }
  check_halves(x, n - n % 3, "ties");
  const float special[] = {
      0.0f,       -0.0f,        1.0f,      -1.0f,    65504.0f,    65519.0f,
      65519.996f, 65520.0f,     -65520.0f, 1e10f,    INFINITY,    -INFINITY,
      NAN,        -NAN,         0x1p-24f,  0x1p-25f, 0x1.8p-25f,  0x1.000002p-25f,
      0x1p-14f,   0x1.ff8p-15f, 0x1p-149f, 6.1e-5f,  3.14159265f, -2.71828f,
      0.1f,       1e-8f,        0.999999f, 2048.5f,  2049.0f,     4095.5f};
  check_halves(special, sizeof special / sizeof special[0], "special values");
  /* spot values from the standard: 1/3 -> 0x3555, 65504 -> 0x7bff, 2^-24 -> 0x0001 */
  CHECK(prx_half_from_float(1.0f / 3) == 0x3555, "1/3 -> %04x", prx_half_from_float(1.0f / 3));
  CHECK(prx_half_from_float(65504.0f) == 0x7bff, "65504");
  CHECK(prx_half_from_float(0x1p-24f) == 0x0001, "2^-24");
  CHECK(prx_half_from_float(-2.0f) == 0xc000, "-2");
  free(x);
}

static int16_t ref_ci16(float x, double scale, int *sat) {
  if (isnan(x)) {
    *sat = 1;
    return 0;
  }
  double v = (double)x * scale;
  *sat = v < -32768.0 || v > 32767.0;
  if (v < -32768.0) v = -32768.0;
  if (v > 32767.0) v = 32767.0;
  double f = floor(v), d = v - f;
  double rr = d > 0.5 ? f + 1 : d < 0.5 ? f : (fmod(f, 2.0) == 0 ? f : f + 1);
  return (int16_t)rr;
}

static void test_ci16(test_rng *r) {
  size_t n = 1 << 20;
  float *x = malloc(n * sizeof *x);
  int16_t *y = malloc(n * sizeof *y);
  const float scales[] = {PRX_CI16_SCALE, 1024.0f, 0.5f};
  for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
    double sc = scales[k];
    for (size_t i = 0; i < n; i++) {
      uint64_t kind = test_rng_u64(r) % 8;
      double v = (2 * test_rng_uniform(r) - 1) * 1.3 * 32768.0 / sc; /* some beyond full scale */
      if (kind == 0) v = (double)(int)((2 * test_rng_uniform(r) - 1) * 40000) / sc + 0.5 / sc;
      if (kind == 1) v = (double)(int)((2 * test_rng_uniform(r) - 1) * 40000) / sc;
      x[i] = (float)v;
    }
    x[0] = NAN;
    x[1] = INFINITY;
    x[2] = -INFINITY;
    x[3] = 32767.5f / (float)sc;
    x[4] = -32768.5f / (float)sc;
    x[5] = -0.5f / (float)sc;
    x[6] = 1.5f / (float)sc;
    x[7] = 2.5f / (float)sc;
    size_t sat = prx_pack_ci16((const prx_cf32 *)x, n / 2, scales[k], y), want_sat = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
      int s;
      int16_t want = ref_ci16(x[i], sc, &s);
      want_sat += (size_t)s;
      if (y[i] != want && bad++ < 5)
        CHECK(0, "ci16 scale %g: %.9g -> %d, reference %d", sc, x[i], y[i], want);
    }
    CHECK(bad == 0, "ci16 scale %g: %zu values differ", sc, bad);
    CHECK(sat == want_sat && sat > 3, "ci16 scale %g: %zu saturated, reference %zu", sc, sat,
          want_sat);
  }
  /* full scale at the default: 1.0 saturates to 32767, -1.0 is -32768 exactly */
  prx_cf32 one = {1.0f, -1.0f};
  int16_t o[2];
  CHECK(prx_pack_ci16(&one, 1, PRX_CI16_SCALE, o) == 1 && o[0] == 32767 && o[1] == -32768,
        "full scale: %d %d", o[0], o[1]);
  free(x);
  free(y);
}

int main(void) {
  test_rng r;
  test_rng_seed(&r, 16160);
  make_table();
  test_cf16(&r);
  test_ci16(&r);
  return test_finish("test_pack");
}
