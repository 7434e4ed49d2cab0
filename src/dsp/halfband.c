/* Real samples to complex ones (halfband.h): the samples split into their even and odd streams,
 * the odd ones through the Hilbert taps, the sign (-1)^m of the fs/4 mix applied last. */
#include "halfband.h"

#include "../core/internal.h"
#include "polyrx/chan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HB_D (2 * PRX_HALFBAND_Q + 2) /* Hilbert taps */
#define HB_CHUNK 1024                 /* outputs summed at once (their sums stay in L1) */

struct prx_halfband {
  float d[HB_D];
  float *ev, *od; /* even samples from output n_out's on; odd ones from n_out - Q - 1 */
  size_t ev_len, od_len, ev_cap, od_cap;
  uint64_t n_in, n_out;
};

prx_halfband *prx_halfband_create(void) {
  prx_halfband *h = calloc(1, sizeof *h);
  float taps[PRX_HALFBAND_TAPS];
  if (!h) {
    prx_fail(PRX_ERR_NOMEM, "cannot allocate the real-to-complex converter");
    return NULL;
  }
  /* the half-band low-pass (cut-off fs/4: its even taps but the centre are zero), its odd taps
   * scaled so that they sum to 1 (the centre is 1/2 of a gain of 1, here 1 of 2: a real tone of
   * amplitude A gives a complex one of amplitude A), each taken with the sign of the mix */
  if (prx_design_kaiser(PRX_HALFBAND_TAPS, PRX_HALFBAND_ATTEN_DB, 0.25, taps)) {
    free(h);
    return NULL;
  }
  const int D = 2 * PRX_HALFBAND_Q + 1; /* the centre */
  double odd = 0;
  for (int e = -D; e <= D; e += 2) odd += taps[D + e];
  for (int t = -PRX_HALFBAND_Q - 1; t <= PRX_HALFBAND_Q; t++) {
    const int e = 2 * t + 1;
    const double c = taps[D + e] / odd;
    h->d[t + PRX_HALFBAND_Q + 1] = (float)(t & 1 ? c : -c); /* -c (-1)^t */
  }
  /* the odd samples before the start, zeros */
  h->od_cap = PRX_HALFBAND_Q + 1 + 4096;
  h->ev_cap = 4096;
  h->od = calloc(h->od_cap, sizeof *h->od);
  h->ev = malloc(h->ev_cap * sizeof *h->ev);
  if (!h->od || !h->ev) {
    prx_halfband_destroy(h);
    prx_fail(PRX_ERR_NOMEM, "cannot allocate the real-to-complex converter");
    return NULL;
  }
  h->od_len = PRX_HALFBAND_Q + 1;
  return h;
}

void prx_halfband_destroy(prx_halfband *h) {
  if (!h) return;
  free(h->ev);
  free(h->od);
  free(h);
}

const float *prx_halfband_taps(const prx_halfband *h) { return h->d; }
uint64_t prx_halfband_in(const prx_halfband *h) { return h->n_in; }
uint64_t prx_halfband_out(const prx_halfband *h) { return h->n_out; }

/* room for `more` samples in a stream buffer; 0 when out of memory */
static int reserve(float **buf, size_t *cap, size_t len, size_t more) {
  if (len + more <= *cap) return 1;
  size_t c = 2 * (len + more);
  float *b = realloc(*buf, c * sizeof *b);
  if (!b) return 0;
  *buf = b;
  *cap = c;
  return 1;
}

/* The next k outputs (their samples are in the buffers), then the buffers moved on by k. */
static void emit(prx_halfband *h, size_t k, prx_cf32 *out) {
  float acc[HB_CHUNK];
  for (size_t j0 = 0; j0 < k; j0 += HB_CHUNK) {
    const size_t nj = k - j0 < HB_CHUNK ? k - j0 : HB_CHUNK;
    prx_halfband_sums(h->d, HB_D, h->od + j0, nj, acc);
    for (size_t j = 0; j < nj; j++) {
      const float s = (h->n_out + j0 + j) & 1 ? -1.0f : 1.0f;
      out[j0 + j].re = s * h->ev[j0 + j];
      out[j0 + j].im = s * acc[j];
    }
  }
  memmove(h->ev, h->ev + k, (h->ev_len - k) * sizeof *h->ev);
  memmove(h->od, h->od + k, (h->od_len - k) * sizeof *h->od);
  h->ev_len -= k;
  h->od_len -= k;
  h->n_out += k;
}

/* outputs whose samples are all in the buffers: output j needs even sample j and odd samples
 * j .. j + 2Q + 1 of the buffers */
static size_t ready(const prx_halfband *h) {
  size_t by_odd = h->od_len > HB_D - 1 ? h->od_len - (HB_D - 1) : 0;
  return h->ev_len < by_odd ? h->ev_len : by_odd;
}

void prx_halfband_block(const prx_halfband *h, const float *w, uint64_t m0, size_t n, float *od,
                        float *acc, prx_cf32 *out) {
  for (size_t k = 0; k < n + HB_D - 1; k++) od[k] = w[2 * k];
  prx_halfband_sums(h->d, HB_D, od, n, acc);
  const float *ev = w + 2 * PRX_HALFBAND_Q + 1;
  for (size_t j = 0; j < n; j++) {
    const float s = (m0 + j) & 1 ? -1.0f : 1.0f;
    out[j].re = s * ev[2 * j];
    out[j].im = s * acc[j];
  }
}

size_t prx_halfband_push(prx_halfband *h, const float *x, size_t n, prx_cf32 *out) {
  if (!reserve(&h->ev, &h->ev_cap, h->ev_len, n / 2 + 1) ||
      !reserve(&h->od, &h->od_cap, h->od_len, n / 2 + 1)) {
    prx_fail(PRX_ERR_NOMEM, "out of memory converting real samples");
    return 0;
  }
  size_t i = 0;
  if (n && (h->n_in & 1)) h->od[h->od_len++] = x[i++]; /* an odd sample first */
  for (; i + 1 < n; i += 2) {
    h->ev[h->ev_len++] = x[i];
    h->od[h->od_len++] = x[i + 1];
  }
  if (i < n) h->ev[h->ev_len++] = x[i];
  h->n_in += n;
  size_t k = ready(h);
  emit(h, k, out);
  return k;
}

size_t prx_halfband_flush(prx_halfband *h, prx_cf32 *out, size_t max) {
  const uint64_t total = (h->n_in + 1) / 2; /* ceil(N / 2) */
  size_t owed = (size_t)(total - h->n_out);
  if (owed > max) owed = max;
  if (!owed) return 0;
  /* zeros past the end: the odd samples the owed outputs reach */
  const size_t need = owed + HB_D - 1;
  if (h->od_len < need) {
    if (!reserve(&h->od, &h->od_cap, h->od_len, need - h->od_len)) {
      prx_fail(PRX_ERR_NOMEM, "out of memory converting real samples");
      return 0;
    }
    memset(h->od + h->od_len, 0, (need - h->od_len) * sizeof *h->od);
    h->od_len = need;
  }
  emit(h, owed, out);
  return owed;
}
