/* Real samples to complex ones (src/dsp/halfband.h): the converter's outputs against the
 * definition in float64 (the fs/4 mix, its taps, the decimation), whatever the chunks pushed and
 * the room given to the tail; ceil(N / 2) outputs for N real samples; and the taps against the
 * specification in float64: over the central 80 % of the complex band a real tone comes out at
 * amplitude 1 within 0.001 dB and its mirror image at least 100 dB down. */
#include "testutil.h"

#include "dsp/halfband.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HB_D (2 * PRX_HALFBAND_Q + 2)

/* z[m] = (-1)^m (x[2m] + i sum_t d_t x[2(m + t) + 1]), zeros outside the stream */
static void reference(const float *d, const float *x, size_t n, double *re, double *im) {
  for (size_t m = 0; m < (n + 1) / 2; m++) {
    double acc = 0;
    for (int t = -PRX_HALFBAND_Q - 1; t <= PRX_HALFBAND_Q; t++) {
      long long k = 2 * ((long long)m + t) + 1;
      if (k >= 0 && (size_t)k < n) acc += (double)d[t + PRX_HALFBAND_Q + 1] * x[k];
    }
    double s = m & 1 ? -1 : 1;
    re[m] = s * x[2 * m];
    im[m] = s * acc;
  }
}

static void streams(test_rng *rng) {
  static const size_t lengths[] = {0, 1, 2, 3, 64, 127, 128, 129, 1000, 100001};
  for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
    const size_t n = lengths[li], m = (n + 1) / 2;
    float *x = malloc((n + 1) * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)test_rng_gauss(rng);
    prx_halfband *h = prx_halfband_create();
    CHECK(h != NULL, "create");
    if (!h) return;
    double *re = malloc((m + 1) * sizeof *re), *im = malloc((m + 1) * sizeof *im);
    reference(prx_halfband_taps(h), x, n, re, im);
    prx_cf32 *out = malloc((m + 1) * sizeof *out);
    size_t got = 0;
    for (size_t i = 0; i < n;) {
      size_t k = 1 + test_rng_u64(rng) % 3000;
      if (k > n - i) k = n - i;
      size_t e = prx_halfband_push(h, x + i, k, out + got);
      CHECK(e <= (k + 1) / 2, "n %zu: a push of %zu gave %zu outputs", n, k, e);
      got += e;
      i += k;
    }
    for (size_t e; (e = prx_halfband_flush(h, out + got, 1 + test_rng_u64(rng) % 7)) > 0;) got += e;
    CHECK(got == m && prx_halfband_out(h) == m && prx_halfband_in(h) == n,
          "n %zu: %zu outputs (%zu expected)", n, got, m);
    double err = 0, norm = 0;
    for (size_t j = 0; j < got && j < m; j++) {
      err += pow(out[j].re - re[j], 2) + pow(out[j].im - im[j], 2);
      norm += re[j] * re[j] + im[j] * im[j];
    }
    CHECK(norm == 0 || sqrt(err / norm) < 1e-6, "n %zu: relative error %.3g against float64", n,
          norm ? sqrt(err / norm) : 0);
    prx_halfband_destroy(h);
    free(x);
    free(re);
    free(im);
    free(out);
  }
}

/* For x[n] = exp(2 pi i f n) the outputs are exp(2 pi i (2f + 1/2) m) G(f), G(f) = 1 + i sum_t
 * d_t exp(2 pi i f (2t + 1)): a real tone cos(2 pi f n) gives G(f) / 2 at f - fs/4 and G(-f) / 2
 * at its mirror. */
static void response(void) {
  prx_halfband *h = prx_halfband_create();
  if (!h) return;
  const float *d = prx_halfband_taps(h);
  double worst_pass = 0, worst_image = 0;
  for (int k = 0; k <= 4000; k++) {
    double f = 0.05 + 0.4 * k / 4000; /* input frequency (cycles a real sample): 80 % of the band */
    double complex gp = 1, gm = 1;
    for (int t = -PRX_HALFBAND_Q - 1; t <= PRX_HALFBAND_Q; t++) {
      gp += I * d[t + PRX_HALFBAND_Q + 1] * cexp(2 * M_PI * I * f * (2 * t + 1));
      gm += I * d[t + PRX_HALFBAND_Q + 1] * cexp(-2 * M_PI * I * f * (2 * t + 1));
    }
    double pass_db = fabs(20 * log10(cabs(gp) / 2)), image_db = 20 * log10(cabs(gm) / 2 + 1e-300);
    if (pass_db > worst_pass) worst_pass = pass_db;
    if (k == 0 || image_db > worst_image) worst_image = image_db;
  }
  printf("central 80 %%: pass within %.2e dB, image at most %.1f dB\n", worst_pass, worst_image);
  CHECK(worst_pass < 0.001, "passband off by %.3g dB", worst_pass);
  CHECK(worst_image < -100, "image only %.1f dB down", worst_image);
  prx_halfband_destroy(h);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261205);
  streams(&rng);
  response();
  return test_finish("test_halfband");
}
