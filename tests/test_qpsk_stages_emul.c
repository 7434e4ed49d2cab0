/* The stage kernels' per-thread steps (qpsk_stage_math.h, as qpsk_stages_cuda.cu runs them: one
 * thread block per (block, channel), the window staged first, then each output from it) emulated
 * on the CPU against the CPU demodulator's stage functions (test_qpsk_stages.h): the grid and the
 * matched filter's symbols within 1e-5 relative (float rounding of sums in another order), the
 * input and symbol sums within 1e-9 / 1e-5, the non-finite counts and the decisions identical
 * (decisions within 1e-5 of a boundary excepted). sps 4 and 16/3, cf32 and cf16 values, coherent
 * and differential decisions, a stream ending inside the last block. Runs without a GPU. */
#include "test_qpsk_stages.h"

#include <stdio.h>

/* stage pre, emulated: window then outputs */
static void emul_pre(const stage_case *k, unsigned c, unsigned j, prx_cf32 *grid, double mom[4],
                     unsigned *bad) {
  const prx_cf32 *row = k->rows + (size_t)c * k->pitch;
  const int64_t L = k->L, m0 = 4 * (int64_t)j * L - QPSK_GM;
  int64_t lo, hi, own0, own1;
  qpsk_pre_ranges(j, L, QPSK_GM, k->sps, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, k->pre.ntaps, &lo,
                  &hi, &own0, &own1);
  prx_cf32 *win = malloc((size_t)(hi - lo) * sizeof *win);
  const prx_cf32 zero = {0, 0};
  mom[0] = mom[1] = mom[2] = mom[3] = 0;
  *bad = 0;
  for (int64_t t = 0; t < hi - lo; t++) {
    int64_t s = lo + t;
    int in = s >= 0 && s < k->n_total;
    prx_cf32 v = in ? row[s] : zero;
    if (in && s >= own0 && s < own1) {
      if (isfinite(v.re) && isfinite(v.im)) {
        mom[0] += v.re;
        mom[1] += v.im;
        mom[2] += (double)v.re * v.re + (double)v.im * v.im;
        mom[3] += 1;
      } else {
        ++*bad;
      }
    }
    win[t] = qpsk_window_sample(v, in, zero);
  }
  for (size_t q = 0; q < case_ng(k); q++) {
    unsigned r;
    int64_t off;
    qpsk_pre_tap(m0 + (int64_t)q, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r, &off);
    CHECK(off >= 0 && off + k->pre.ntaps <= hi - lo, "pre: output %zu reads outside its window", q);
    grid[q] = qpsk_dot1(k->pre.bank + (size_t)r * 2 * k->pre.ntaps, (const float *)(win + off),
                        k->pre.ntaps);
  }
  free(win);
}

/* stage mf, emulated */
static void emul_mf(const stage_case *k, size_t t, prx_cf32 *sym, double sums[5]) {
  const unsigned c = (unsigned)(t / k->nblk);
  const prx_cf32 *row = k->rows + (size_t)c * k->pitch;
  const qpsk_mf_timing *tm = &k->tm[t];
  memset(sums, 0, 5 * sizeof(double));
  if (tm->k1 <= tm->k0) return;
  int64_t lo, hi;
  qpsk_mf_window_of(tm->b, k->L, k->sps, k->mf.c, k->mf.ntaps, &lo, &hi);
  prx_cf32 *win = malloc((size_t)(hi - lo) * sizeof *win);
  const prx_cf32 dc = {k->dc[2 * t], k->dc[2 * t + 1]};
  for (int64_t i = 0; i < hi - lo; i++) {
    int64_t s = lo + i;
    int in = s >= 0 && s < k->n_total;
    win[i] = qpsk_mf_sample(qpsk_window_sample(in ? row[s] : dc, in, dc), dc, k->gain[t],
                            k->theta[t], k->omega[t], i);
  }
  float acc[4] = {0, 0, 0, 0};
  for (int64_t kk = tm->k0; kk < tm->k1; kk++) {
    unsigned r;
    int64_t off;
    qpsk_mf_tap(tm, k->L, k->sps, lo, kk, k->mf.Q, k->mf.c, &r, &off);
    CHECK(off >= 0 && off + k->mf.ntaps <= hi - lo, "mf: symbol %lld reads outside its window",
          (long long)kk);
    prx_cf32 y = qpsk_dot1(k->mf.bank + (size_t)r * 2 * k->mf.ntaps, (const float *)(win + off),
                           k->mf.ntaps);
    sym[kk - tm->k0] = y;
    qpsk_sum_terms(y, acc);
  }
  for (int q = 0; q < 4; q++) sums[q] = acc[q];
  sums[4] = (double)(tm->k1 - tm->k0);
  free(win);
}

/* stage out, emulated */
static void emul_out(const stage_case *k, size_t t, const prx_cf32 *y, uint8_t *bits) {
  const int64_t n = k->tm[t].k1 - k->tm[t].k0;
  for (int64_t i = 0; i < n; i++) {
    unsigned b0, b1, q = qpsk_quad_of(y[i], k->rot[t], &b0, &b1);
    if (k->diff) {
      unsigned qp = i > 0 ? qpsk_quad_of(y[i - 1], k->rot[t], &b0, &b1) : k->quad0[t];
      qpsk_diff_step_bits((q - qp) & 3u, &bits[2 * i], &bits[2 * i + 1]);
    } else {
      bits[2 * i] = (uint8_t)b0;
      bits[2 * i + 1] = (uint8_t)b1;
    }
  }
}

static void run_case(double sps, int cf16, int diff, uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  stage_case k;
  case_make(&k, &r, 6, 4, 256, sps, cf16, diff);
  const size_t ng = case_ng(&k);
  prx_cf32 *g0 = malloc(ng * sizeof *g0), *g1 = malloc(ng * sizeof *g1);
  prx_cf32 *s0 = malloc(k.Lmax * sizeof *s0), *s1 = malloc(k.Lmax * sizeof *s1);
  uint8_t *b0 = malloc(2 * k.Lmax), *b1 = malloc(2 * k.Lmax);
  double worst_g = 0, worst_s = 0, worst_m = 0, worst_sum = 0;
  size_t bit_diff = 0, bits_total = 0;
  for (unsigned c = 0; c < k.C; c++) {
    for (unsigned j = 0; j < k.nblk; j++) {
      size_t t = (size_t)c * k.nblk + j;
      double m0[4], m1[4];
      unsigned bad0, bad1;
      ref_pre(&k, c, j, g0, m0, &bad0);
      emul_pre(&k, c, j, g1, m1, &bad1);
      double e = test_rel_l2_cf32(g1, g0, ng);
      if (e > worst_g) worst_g = e;
      e = rel_l2_f64(m1, m0, 4);
      if (e > worst_m) worst_m = e;
      CHECK(bad0 == bad1, "pre: channel %u block %u: %u non-finite samples, reference %u", c, j,
            bad1, bad0);
      double u0[5], u1[5];
      int64_t n = k.tm[t].k1 - k.tm[t].k0;
      ref_mf(&k, t, s0, u0);
      emul_mf(&k, t, s1, u1);
      if (n <= 0) continue;
      e = test_rel_l2_cf32(s1, s0, (size_t)n);
      if (e > worst_s) worst_s = e;
      e = rel_l2_f64(u1, u0, 5);
      if (e > worst_sum) worst_sum = e;
      /* decisions: the same symbols through both decision paths, then the emulated symbols */
      ref_out(&k, t, s0, b0);
      emul_out(&k, t, s0, b1);
      CHECK(memcmp(b0, b1, 2 * (size_t)n) == 0, "out: channel %u block %u: bits differ", c, j);
      emul_out(&k, t, s1, b1);
      for (int64_t i = 0; i < 2 * n; i++) {
        bits_total++;
        if (b0[i] != b1[i] && !near_boundary(s0[i / 2], k.rot[t], 1e-4) &&
            !(diff && i / 2 > 0 && near_boundary(s0[i / 2 - 1], k.rot[t], 1e-4)))
          bit_diff++;
      }
    }
  }
  printf("sps %.3f %s %s: grid %.2e, symbols %.2e, input sums %.2e, symbol sums %.2e, bits "
         "differing %zu of %zu\n",
         sps, cf16 ? "cf16" : "cf32", diff ? "differential" : "coherent", worst_g, worst_s, worst_m,
         worst_sum, bit_diff, bits_total);
  CHECK(worst_g < 1e-5, "pre: grid differs by %.2e", worst_g);
  CHECK(worst_s < 1e-5, "mf: symbols differ by %.2e", worst_s);
  CHECK(worst_m < 1e-9, "pre: input sums differ by %.2e", worst_m);
  CHECK(worst_sum < 1e-5, "mf: symbol sums differ by %.2e", worst_sum);
  CHECK(bit_diff == 0, "out: %zu bits differ away from a decision boundary", bit_diff);
  free(g0);
  free(g1);
  free(s0);
  free(s1);
  free(b0);
  free(b1);
  case_free(&k);
}

int main(void) {
  run_case(4.0, 0, 1, 11);
  run_case(16.0 / 3.0, 0, 0, 12);
  run_case(4.0, 1, 0, 13);
  run_case(16.0 / 3.0, 1, 1, 14);
  run_case(2.5, 0, 1, 15); /* an inexact pre-filter grid (Q = 240 rounding) */
  return test_finish("test_qpsk_stages_emul");
}
