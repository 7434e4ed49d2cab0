/* Real samples to complex ones (halfband.h): a block of outputs computed from the window of real
 * samples it reaches (the odd samples through the Hilbert taps, the even ones as they are, the
 * sign (-1)^m of the fs/4 mix last); the stream keeps the window of the outputs still owed and
 * computes its blocks the same way, so a sequential read and a positional one give the same
 * bits. */
#include "halfband.h"

#include "../core/internal.h"
#include "polyrx/chan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HB_D (2 * PRX_HALFBAND_Q + 2)     /* Hilbert taps */
#define HB_LEAD (2 * PRX_HALFBAND_Q + 1)  /* real samples a window holds before output 0's */
#define HB_REACH (4 * PRX_HALFBAND_Q + 1) /* window samples beyond 2n that n outputs need */

struct prx_halfband {
  float d[HB_D];
  float *x; /* the window: real samples from 2 n_out - 2Q - 1 on (zeros before the stream) */
  size_t x_len, x_cap;
  float *work; /* a block's odd samples and sums */
  size_t work_cap;
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
  /* the window before the stream: zeros */
  h->x_cap = HB_LEAD + 8192;
  h->x = calloc(h->x_cap, sizeof *h->x);
  if (!h->x) {
    prx_halfband_destroy(h);
    prx_fail(PRX_ERR_NOMEM, "cannot allocate the real-to-complex converter");
    return NULL;
  }
  h->x_len = HB_LEAD;
  return h;
}

void prx_halfband_destroy(prx_halfband *h) {
  if (!h) return;
  free(h->x);
  free(h->work);
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

/* The window's next k outputs, then the window moved on by their 2k samples. */
static size_t give(prx_halfband *h, size_t k, prx_cf32 *out) {
  if (!k) return 0;
  const size_t need = 2 * k + HB_D; /* the odd samples and the sums */
  if (need > h->work_cap) {
    float *w = realloc(h->work, need * sizeof *w);
    if (!w) {
      prx_fail(PRX_ERR_NOMEM, "out of memory converting real samples");
      return 0;
    }
    h->work = w;
    h->work_cap = need;
  }
  prx_halfband_block(h, h->x, h->n_out, k, h->work, h->work + k + HB_D, out);
  memmove(h->x, h->x + 2 * k, (h->x_len - 2 * k) * sizeof *h->x);
  h->x_len -= 2 * k;
  h->n_out += k;
  return k;
}

size_t prx_halfband_push(prx_halfband *h, const float *x, size_t n, prx_cf32 *out) {
  if (!reserve(&h->x, &h->x_cap, h->x_len, n)) {
    prx_fail(PRX_ERR_NOMEM, "out of memory converting real samples");
    return 0;
  }
  memcpy(h->x + h->x_len, x, n * sizeof *x);
  h->x_len += n;
  h->n_in += n;
  /* n outputs need 2n + 4Q + 1 window samples */
  return give(h, h->x_len > HB_REACH ? (h->x_len - HB_REACH) / 2 : 0, out);
}

size_t prx_halfband_flush(prx_halfband *h, prx_cf32 *out, size_t max) {
  const uint64_t total = (h->n_in + 1) / 2; /* ceil(N / 2) */
  size_t owed = (size_t)(total - h->n_out);
  if (owed > max) owed = max;
  if (!owed) return 0;
  /* zeros past the end: the window the owed outputs reach */
  const size_t need = 2 * owed + HB_REACH;
  if (h->x_len < need) {
    if (!reserve(&h->x, &h->x_cap, h->x_len, need - h->x_len)) {
      prx_fail(PRX_ERR_NOMEM, "out of memory converting real samples");
      return 0;
    }
    memset(h->x + h->x_len, 0, (need - h->x_len) * sizeof *h->x);
    h->x_len = need;
  }
  return give(h, owed, out);
}
