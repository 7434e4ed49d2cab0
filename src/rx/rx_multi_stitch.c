/* prx_rx_multi's stitcher: one carrier's runs of consecutive workers joined at the seam, each
 * symbol once (rx_multi_internal.h). */
#include "rx_multi_internal.h"

#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

prx_status rxm_run_append(rxm_run *r, const uint8_t *bits, const float *llrs, size_t n_sym) {
  if (r->n_sym + n_sym > r->cap_sym) {
    size_t cap = 2 * (r->n_sym + n_sym) + 4096;
    uint8_t *b = realloc(r->bits, 2 * cap);
    if (!b) return prx_fail(PRX_ERR_NOMEM, "receiver workers: output buffer of %zu symbols", cap);
    r->bits = b;
    if (r->with_llrs) {
      float *l = realloc(r->llrs, 2 * cap * sizeof *l);
      if (!l) return prx_fail(PRX_ERR_NOMEM, "receiver workers: LLR buffer of %zu symbols", cap);
      r->llrs = l;
    }
    r->cap_sym = cap;
  }
  memcpy(r->bits + 2 * r->n_sym, bits, 2 * n_sym);
  if (r->with_llrs && llrs) memcpy(r->llrs + 2 * r->n_sym, llrs, 2 * n_sym * sizeof *llrs);
  r->n_sym += n_sym;
  return PRX_OK;
}

void rxm_run_free(rxm_run *r) {
  free(r->bits);
  free(r->llrs);
  memset(r, 0, sizeof *r);
}

/* The Gray bits of a symbol turned by `turn` quarter-turns, packed b0 << 1 | b1. */
static unsigned turned(unsigned b0, unsigned b1, unsigned turn) {
  for (unsigned t = 0; t < (turn & 3); t++) {
    unsigned n0 = !b1, n1 = b0;
    b0 = n0;
    b1 = n1;
  }
  return b0 << 1 | b1;
}

void rxm_rotate(rxm_run *r, size_t from, unsigned turn) {
  turn &= 3;
  if (!turn) return;
  for (size_t k = from; k < r->n_sym; k++) {
    unsigned v = turned(r->bits[2 * k], r->bits[2 * k + 1], turn);
    r->bits[2 * k] = (uint8_t)(v >> 1);
    r->bits[2 * k + 1] = (uint8_t)(v & 1);
    if (r->with_llrs)
      for (unsigned t = 0; t < turn; t++) {
        float l0 = r->llrs[2 * k], l1 = r->llrs[2 * k + 1];
        r->llrs[2 * k] = -l1;
        r->llrs[2 * k + 1] = l0;
      }
  }
}

/* Bits of next's window [m_cut - w, m_cut), turned, that differ from prev's [j - w, j); the
 * count stops at `stop`. */
static size_t distance(const rxm_run *prev, const rxm_run *next, size_t m_cut, size_t w, size_t j,
                       unsigned turn, size_t stop) {
  size_t d = 0;
  for (size_t i = 0; i < w && d < stop; i++) {
    size_t a = m_cut - w + i, b = j - w + i;
    unsigned v = turned(next->bits[2 * a], next->bits[2 * a + 1], turn);
    d += (unsigned)(v >> 1) != prev->bits[2 * b];
    d += (unsigned)(v & 1) != prev->bits[2 * b + 1];
  }
  return d;
}

int rxm_find_seam(const rxm_run *prev, const rxm_run *next, size_t m_cut, size_t w,
                  size_t j_nominal, size_t range, int quarter_turns, size_t *j, unsigned *turn) {
  if (w == 0 || m_cut < w || m_cut > next->n_sym || prev->n_sym < w) return 0;
  size_t limit = 2 * w / 8, best = limit + 1, best_j = 0;
  unsigned best_t = 0;
  /* outward from the nominal index: among equal matches (repeated data) the nearest wins */
  for (size_t r = 0; r <= range; r++)
    for (int side = 0; side < (r ? 2 : 1); side++) {
      if (side ? j_nominal < r : j_nominal + r < j_nominal) continue;
      size_t cand = side ? j_nominal - r : j_nominal + r;
      if (cand < w || cand > prev->n_sym) continue;
      for (unsigned t = 0; t < (quarter_turns ? 4u : 1u); t++) {
        size_t d = distance(prev, next, m_cut, w, cand, t, best);
        if (d < best) {
          best = d;
          best_j = cand;
          best_t = t;
          if (!d) goto found; /* the nearest exact match */
        }
      }
    }
  if (best > limit) return 0;
found:
  *j = best_j;
  *turn = best_t;
  return 1;
}
