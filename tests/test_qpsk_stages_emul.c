/* The stage kernels' per-thread steps (qpsk_stage_math.h, as qpsk_stages_cuda.cu runs them: one
 * thread block per (block, channel), the window staged first, then each output from it) emulated
 * on the CPU against the CPU demodulator's stage functions (test_qpsk_stages.h): the grid, the
 * O&M sums (drift correlations 1e-4), the levelled grid, the 4th-power values and the matched
 * filter's symbols within 1e-5 relative (float rounding of sums in another order), the
 * input and symbol sums within 1e-9 / 1e-5, the non-finite counts and the decisions identical
 * (decisions within 1e-5 of a boundary excepted). sps 4, 16/3, 8 and 2.5, cf32 and cf16 values,
 * coherent and differential decisions, a stream ending inside the last block. Then the demodulator
 * itself as the reference: its blocks probed after each batch (a carrier at 4-14 dB, 100 to 3000
 * ppm), the emulated kernels on its stream with its per-block parameters give its grid, O&M sums,
 * 4th-power values, symbols and bits. Runs without a GPU. */
#include "test_qpsk_stages.h"

#include <stdio.h>

/* pre's window [lo, hi) of channel c staged as the kernel stages it (mixed, read as
 * qpsk_window_sample reads it) into win, and the input sums and non-finite count of the block's
 * own samples [own0, own1) into mom and bad */
static void emul_pre_window(const stage_case *k, unsigned c, int64_t lo, int64_t hi, int64_t own0,
                            int64_t own1, prx_cf32 *win, double mom[4], unsigned *bad) {
  const prx_cf32 *row = (k->mix ? k->raw : k->rows) + (size_t)c * k->pitch;
  const prx_cf32 zero = {0, 0};
  mom[0] = mom[1] = mom[2] = mom[3] = 0;
  *bad = 0;
  const double fm = k->mix ? k->mix[c] : 0, tz = qpsk_mix_turns(fm, lo);
  for (int64_t t = 0; t < hi - lo; t++) {
    int64_t s = lo + t;
    int in = s >= 0 && s < k->n_total;
    prx_cf32 v = in ? row[s] : zero;
    if (k->mix && in) v = qpsk_mix_sample(v, tz, fm, t);
    if (in && s >= own0 && s < own1) qpsk_pre_sum_add(v, mom, bad);
    win[t] = qpsk_window_sample(v, in, zero);
  }
}

/* The kernel's sliding pre-filter (qpsk_stages_pre.cuh: per 1, 8 outputs a thread, slots 2 per
 * 8 samples at the unit step; per 3, 9 outputs, slots 2 per 4 samples at the step 4/3) on the
 * window win (nw samples from lo) of the block whose grid starts at m0: the window at virtual
 * samples shifted by e (the first whole period's first input at 0), zeros before and 32 after it,
 * each thread's run of outputs from its run of samples; every output stored (those in [0, ng))
 * the same value as grid's (qpsk_dot1's), every read within the zeroed slots and 16-byte pairs
 * aligned. */
static void emul_pre_slide(const stage_case *k, const prx_cf32 *win, int64_t nw, int64_t m0,
                           int64_t lo, const prx_cf32 *grid, int per) {
  const int adv = per == 1 ? 1 : 4, no = per == 1 ? 8 : 9, sh = per == 1 ? 3 : 2;
  const int nt = (int)k->pre.ntaps, ns = adv * (no / per - 1) + per - 1 + nt;
  const int64_t ng = (int64_t)case_ng(k);
  const int ph = (int)(((m0 % per) + per) % per);
  unsigned row;
  int64_t offp;
  qpsk_pre_tap(m0 - ph, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &row, &offp);
  const int e = (int)-offp;
  CHECK(e >= 0 && e <= 3, "pre: the sliding window's shift %d", e);
  for (int u = 0; u < per; u++) {
    unsigned ru;
    int64_t ou;
    qpsk_pre_tap(m0 - ph + u, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &ru, &ou);
    CHECK(ru == (unsigned)u && ou == offp + u, "pre: the period's output %d on row %u at %lld", u,
          ru, (long long)(ou - offp));
  }
  const int nslots = qpsk_slide_slot((int)nw + 3 + 32, sh) + 2;
  prx_cf32 *wp = calloc((size_t)nslots, sizeof *wp);
  for (int64_t t = 0; t < nw; t++) wp[qpsk_slide_slot((int)t + e, sh)] = win[t];
  size_t differ = 0, differ_taps = 0;
  /* the taps the RRC holds at the GPU's sliding filters' tap counts: every other one zero (so
   * the GPU takes its sliding filter); at other counts all of them */
  const int s4 = per == 1 && nt == QPSK_SLIDE_NT4, s3 = per == 3 && nt == QPSK_SLIDE_NT3;
  const int l0 = s4   ? QPSK_SLIDE_L0_4
                 : s3 ? QPSK_SLIDE_L0_3
                      : 0,
            l1 = s4   ? QPSK_SLIDE_L1_4
                 : s3 ? QPSK_SLIDE_L1_3
                      : nt;
  CHECK(qpsk_pre_slide_zero_outside(k->pre.bank, per, nt, l0, l1),
        "pre: the RRC's taps not zero outside %d .. %d", l0, l1 - 1);
  for (int i = 0; no * (int64_t)i - ph < ng; i++) {
    const int v = adv * (no / per) * i, sl = qpsk_slide_slot(v, sh);
    const int nse = (ns + 1) & ~1;
    CHECK(sl % 2 == 0 && v + nse <= nw + e + 32 && qpsk_slide_slot(v + nse - 1, sh) < nslots,
          "pre: the sliding run %d reads outside its zeros or unaligned", i);
    prx_cf32 o[QPSK_SLIDE_MAX];
    qpsk_pre_slide(k->pre.bank, nt, per, adv, no, wp + sl, sh, o);
    /* the same run over the RRC's own taps only (the GPU's sliding filters) */
    prx_cf32 ot[QPSK_SLIDE_MAX];
    qpsk_pre_slide_taps(k->pre.bank, nt, l0, l1, per, adv, no, wp + sl, sh, ot);
    for (int u = 0; u < no; u++) {
      const int64_t q = no * (int64_t)i - ph + u;
      if (q >= 0 && q < ng) differ += memcmp(&o[u], &grid[q], sizeof o[0]) != 0;
      if (q >= 0 && q < ng) differ_taps += memcmp(&ot[u], &grid[q], sizeof o[0]) != 0;
    }
  }
  CHECK(differ == 0, "pre: %zu sliding filter's outputs differ from qpsk_dot1's", differ);
  CHECK(differ_taps == 0, "pre: %zu sliding filter's outputs over the RRC's taps differ",
        differ_taps);
  free(wp);
}

/* stage pre, emulated: window then outputs */
static void emul_pre(const stage_case *k, unsigned c, unsigned j, prx_cf32 *grid, double mom[4],
                     unsigned *bad) {
  const int64_t L = k->L, m0 = 4 * (int64_t)j * L - QPSK_GM;
  int64_t lo, hi, own0, own1;
  qpsk_pre_ranges(j, L, QPSK_GM, k->sps, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, k->pre.ntaps, &lo,
                  &hi, &own0, &own1);
  prx_cf32 *win = malloc((size_t)(hi - lo) * sizeof *win);
  emul_pre_window(k, c, lo, hi, own0, own1, win, mom, bad);
  /* the kernel's threads: thread th walks outputs th, th + 256, ... on an exact grid */
  for (unsigned th = 0; th < 256 && k->pre.rq >= 0; th++) {
    unsigned r;
    int64_t off, di;
    unsigned dj;
    qpsk_pre_tap(m0 + th, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r, &off);
    qpsk_pre_walk(k->pre.rq, k->pre.Q, 256, &di, &dj);
    for (size_t q = th; q < case_ng(k); q += 256) {
      unsigned r1;
      int64_t off1;
      qpsk_pre_tap(m0 + (int64_t)q, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r1, &off1);
      CHECK(r == r1 && off == off1, "pre: the walk leaves the position at output %zu", q);
      qpsk_pre_walk_next(di, dj, k->pre.Q, &r, &off);
    }
  }
  for (size_t q = 0; q < case_ng(k); q++) {
    unsigned r;
    int64_t off;
    qpsk_pre_tap(m0 + (int64_t)q, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r, &off);
    CHECK(off >= 0 && off + k->pre.ntaps <= hi - lo, "pre: output %zu reads outside its window", q);
    grid[q] = qpsk_dot1(k->pre.bank + (size_t)r * 2 * k->pre.ntaps, (const float *)(win + off),
                        k->pre.ntaps);
  }
  if (k->pre.rq == (int64_t)k->pre.Q) {
    /* the kernel's register-blocked filter on a unit-step grid: the window in slots padded one per
     * 4 samples (QPSK_PAD4) with 8 zeros after it, four outputs per thread step; the same sums as
     * qpsk_dot1 in the same order, so the same values */
    const int64_t nw = hi - lo;
    const unsigned nt4 = k->pre.ntaps;
    CHECK(nt4 % 4 == 0, "pre: %u taps, not a multiple of 4", nt4);
    prx_cf32 *wp = calloc((size_t)qpsk_win_slot(nw + 8, QPSK_PAD4) + 1, sizeof *wp);
    const float *t4 = k->pre.bank;
    for (int64_t t = 0; t < nw; t++) wp[qpsk_win_slot(t, QPSK_PAD4)] = win[t];
    unsigned r0;
    int64_t off0;
    qpsk_pre_tap(m0, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r0, &off0);
    size_t differ = 0;
    for (size_t base = 0; base < case_ng(k); base += 4) {
      prx_cf32 o[4];
      qpsk_dot4(t4, nt4, wp, off0 + (int64_t)base, QPSK_PAD4, o);
      CHECK(off0 + (int64_t)base + nt4 + 3 <= nw + 8,
            "pre: the blocked filter reads past its zeros");
      for (size_t q = base; q < base + 4 && q < case_ng(k); q++) {
        differ += memcmp(&o[q - base], &grid[q], sizeof o[0]) != 0;
        grid[q] = o[q - base];
      }
    }
    CHECK(r0 == 0 && differ == 0, "pre: %zu blocked outputs differ from qpsk_dot1's", differ);
    free(wp);
    emul_pre_slide(k, win, nw, m0, lo, grid, 1);
  }
  if (k->pre.rq >= 0 && 3 * k->pre.rq == 4 * (int64_t)k->pre.Q) {
    /* the kernel's three-output filter on a step-4/3 grid: the window padded as above, three
     * consecutive outputs per thread step, the period's rows and offsets from its first three
     * outputs; the same sums as qpsk_dot1 in the same order, so the same values */
    const int64_t nw = hi - lo;
    prx_cf32 *wp = calloc((size_t)qpsk_win_slot(nw + 8, QPSK_PAD4) + 1, sizeof *wp);
    for (int64_t t = 0; t < nw; t++) wp[qpsk_win_slot(t, QPSK_PAD4)] = win[t];
    unsigned r3[3];
    int64_t o3[3];
    for (int u = 0; u < 3; u++)
      qpsk_pre_tap(m0 + u, k->pre.rq, k->pre.r, k->pre.Q, k->pre.c, lo, &r3[u], &o3[u]);
    const int d1 = (int)(o3[1] - o3[0]), d2 = (int)(o3[2] - o3[0]);
    CHECK(d1 >= 0 && d1 <= d2 && d2 <= 3, "pre: the step-4/3 period's offsets %d, %d", d1, d2);
    const unsigned nt = k->pre.ntaps;
    const float *bk = k->pre.bank;
    size_t differ = 0;
    for (size_t base = 0; base < case_ng(k); base += 3) {
      prx_cf32 o[3];
      const int64_t off = o3[0] + 4 * (int64_t)(base / 3);
      qpsk_dot3(bk + (size_t)r3[0] * 2 * nt, bk + (size_t)r3[1] * 2 * nt,
                bk + (size_t)r3[2] * 2 * nt, d1, d2, nt, wp, off, QPSK_PAD4, o);
      CHECK(off + (int64_t)nt + d2 <= nw + 8, "pre: the three-output filter reads past its zeros");
      for (size_t q = base; q < base + 3 && q < case_ng(k); q++)
        differ += memcmp(&o[q - base], &grid[q], sizeof o[0]) != 0;
    }
    CHECK(differ == 0, "pre: %zu three-output filter's outputs differ from qpsk_dot1's", differ);
    free(wp);
    if (k->pre.Q == 3) emul_pre_slide(k, win, nw, m0, lo, grid, 3);
  }
  free(win);
}

/* stage om, emulated: warp w's sub-blocks w, w + 8, ..., each lane's residue sums in double,
 * the warp's tree reduction, then the margins, then the correlations */
static void emul_om(const stage_case *k, size_t t, prx_cf32 *z, om_ref *o) {
  unsigned nsub, Ls, nlags;
  case_om_dims(k, &nsub, &Ls, &nlags);
  const int64_t L = k->L, m0 = 4 * k->tm[t].b * L, ng = 4 * L + 2 * QPSK_GM, Ls4 = 4 * (int64_t)Ls;
  int64_t g_hi = m0 + 4 * L;
  if (g_hi > k->g_hi) g_hi = k->g_hi;
  double xs[QPSK_SUB_MAX][2];
  int64_t len[QPSK_SUB_MAX];
  for (unsigned j = 0; j <= nsub; j++) {
    int64_t a = m0 + Ls4 * j, e = j < nsub ? a + Ls4 : m0 + 4 * L;
    if (e > g_hi) e = g_hi;
    double x[32][2];
    for (int lane = 0; lane < 32; lane++) {
      x[lane][0] = x[lane][1] = 0;
      for (int64_t m = a + lane; m < e; m += 32) {
        const int64_t q = QPSK_GM + (m - m0);
        prx_cf32 v = qpsk_om_level(z[q], k->D[t], k->om_gain[t]);
        z[q] = v;
        double pw = (double)v.re * v.re + (double)v.im * v.im;
        switch ((int)(m & 3)) {
        case 0: x[lane][0] += pw; break;
        case 1: x[lane][1] -= pw; break;
        case 2: x[lane][0] -= pw; break;
        default: x[lane][1] += pw; break;
        }
      }
    }
    for (int sh = 16; sh > 0; sh >>= 1) /* __shfl_down_sync: lane i adds lane i + sh */
      for (int lane = 0; lane < sh; lane++) {
        x[lane][0] += x[lane + sh][0];
        x[lane][1] += x[lane + sh][1];
      }
    xs[j][0] = x[0][0];
    xs[j][1] = x[0][1];
    len[j] = e > a ? e - a : 0;
  }
  const int64_t done = g_hi > m0 ? g_hi - m0 : 0;
  for (int64_t q = 0; q < ng; q++)
    if (q < QPSK_GM || q >= QPSK_GM + done) z[q] = qpsk_om_level(z[q], k->D[t], k->om_gain[t]);
  memset(o, 0, sizeof *o);
  o->om_n = (double)done;
  for (unsigned j = 0; j <= nsub && len[j] > 0; j++) {
    o->osub[j][0] = xs[j][0];
    o->osub[j][1] = xs[j][1];
    int64_t a = m0 + Ls4 * j;
    o->osub_t[j] = (double)(a + a + len[j] - 1) / 8.0;
    o->nsub = j + 1;
    if (j < nsub && len[j] == Ls4)
      for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
        const double *p = o->osub[j - (1u << l)];
        o->corr[l][0] += xs[j][0] * p[0] + xs[j][1] * p[1];
        o->corr[l][1] += xs[j][1] * p[0] - xs[j][0] * p[1];
      }
  }
}

/* stage x4, emulated: one thread per symbol */
static void emul_x4(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 *w) {
  const qpsk_mf_timing *tm = &k->tm[t];
  for (int64_t kk = tm->k0; kk < tm->k1; kk++) {
    int64_t g;
    float c[4];
    qpsk_x4_tap(tm, k->L, QPSK_GM, kk, &g, c);
    CHECK(g >= 1 && g + 2 < (int64_t)case_ng(k), "x4: symbol %lld reads outside the grid",
          (long long)kk);
    w[kk - tm->k0] = qpsk_x4_one(z + g - 1, c);
  }
}

/* stage om folded into pre, emulated: the sums of the block's own grid below g_hi per sub-block
 * (qpsk_oms_add, in double: the kernel's warps sum the same terms in another order), then
 * qpsk_om_combine with the DC D and gain */
static void emul_om_folded(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 D, float gain,
                           om_ref *o) {
  unsigned nsub, Ls, nlags;
  case_om_dims(k, &nsub, &Ls, &nlags);
  const int64_t L = k->L, m0 = 4 * k->tm[t].b * L;
  double *sums = calloc((size_t)(nsub + 1) * QPSK_OMS, sizeof *sums);
  for (int64_t q = QPSK_GM; q < QPSK_GM + 4 * L && m0 + q - QPSK_GM < k->g_hi; q++) {
    int64_t j = (q - QPSK_GM) / (4 * (int64_t)Ls);
    if (j > nsub) j = nsub;
    qpsk_oms_add(z[q], m0 + q - QPSK_GM, sums + j * QPSK_OMS);
  }
  qpsk_om_in in = {D, gain, 0, k->g_hi};
  qpsk_om_out r;
  qpsk_om_combine(sums, k->tm[t].b, L, nsub, Ls, nlags, &in, &r);
  memcpy(o->osub, r.osub, sizeof o->osub);
  memcpy(o->osub_t, r.osub_t, sizeof o->osub_t);
  memcpy(o->corr, r.corr, sizeof o->corr);
  o->om_n = r.om_n;
  o->nsub = r.nsub;
  free(sums);
}

/* the chunks of emul_om_chunks that a step's end splits and that the stream's end (own_end) cuts,
 * at the unit step ([0]) and the step 4/3 ([1]): main checks that each ran */
static size_t om_chunks_split[2], om_chunks_cut[2], om_steps_folded[2];

/* the end of the kernel's step from k0 (steps of S outputs from -ph, the unit step's last few
 * outputs with the step before it: qpsk_slide_tail) */
static int64_t om_step_end(int64_t k0, int64_t ng, int64_t S, int64_t ph) {
  const int nsteps = (int)((ng + ph + S - 1) / S);
  const int tail = S == 8 * 256 ? qpsk_slide_tail(ng, (int)S, nsteps) : 0;
  if (tail && k0 == -ph + (int64_t)(nsteps - 2) * S) return ng;
  return k0 + S < ng ? k0 + S : ng;
}

/* pre_om's sums where the sliding filter stages a step's outputs in shared memory (steps of S
 * outputs from -ph, om_step_end): each chunk of 16 own outputs of a sub-block (qpsk_om_chunk_span)
 * summed over its part in each step (qpsk_om_chunk: qpsk_oms_add's sums to rounding), the parts
 * added in step order, each sub-block's sums (into sums) the sum of its chunks in order; every own
 * output in exactly one chunk. The steps' threads as om_tile assigns them (thread x the chunk i0 +
 * x, i0 the one that holds the step's first own output): every part of a chunk in a step has its
 * thread, and every chunk's slot is written in the step where it starts before a later step adds to
 * it. */
static void emul_om_chunks(const prx_cf32 *z, int64_t ng, int64_t m0, int64_t own_end, int64_t L,
                           unsigned nsub, unsigned Ls, int64_t S, int64_t ph, double *sums) {
  const uint32_t Ls4 = 4 * Ls, cj = qpsk_om_chunks(Ls4), nch = (nsub + 1) * cj;
  const int tri = S != 8 * 256;
  unsigned *owner = calloc((size_t)ng, sizeof *owner);
  unsigned char *written = calloc(nch, 1);
  size_t differ = 0, unassigned = 0, added_unwritten = 0, folded = 0;
  CHECK(m0 % 4 == 0, "pre_om: the grid's first index %lld not a multiple of 4", (long long)m0);
  for (int64_t k0 = -ph; k0 < ng; k0 = om_step_end(k0, ng, S, ph)) {
    const int64_t kend = om_step_end(k0, ng, S, ph);
    folded += kend - k0 > S;
    const uint32_t kf = (uint32_t)((k0 > QPSK_GM ? k0 : QPSK_GM) - QPSK_GM);
    const uint32_t jf = kf / Ls4 < nsub ? kf / Ls4 : nsub, i0 = jf * cj + (kf - jf * Ls4) / 16;
    for (uint32_t i = 0; i < nch; i++) {
      int64_t ks, ke;
      qpsk_om_chunk_span(i, cj, nsub, Ls4, QPSK_GM, L, &ks, &ke);
      const int mine = i >= i0 && i < i0 + 256 && ks < kend;
      const int64_t kc = ke < own_end ? ke : own_end;
      if (!mine) {
        unassigned += (ks > k0 ? ks : k0) < (kc < kend ? kc : kend);
        continue;
      }
      if (ks >= k0)
        written[i] = 1;
      else
        added_unwritten += !written[i];
    }
  }
  om_steps_folded[tri] += folded;
  CHECK(unassigned == 0, "pre_om: %zu chunks' parts in a step without a thread", unassigned);
  CHECK(added_unwritten == 0, "pre_om: %zu chunks added to before their slot is written",
        added_unwritten);
  for (uint32_t i = 0; i < nch; i++) CHECK(written[i], "pre_om: chunk %u's slot never written", i);
  free(written);
  for (uint32_t i = 0; i < nch; i++) {
    int64_t ks, ke;
    qpsk_om_chunk_span(i, cj, nsub, Ls4, QPSK_GM, L, &ks, &ke);
    CHECK(ke - ks <= QPSK_OM_CHUNK && ks % 4 == 0 && ks >= QPSK_GM && ke <= QPSK_GM + 4 * L,
          "pre_om: chunk %u at %lld .. %lld", i, (long long)ks, (long long)ke);
    const int64_t kc = ke < own_end ? ke : own_end;
    om_chunks_cut[tri] += kc > ks && kc < ke;
    double ch[QPSK_OMS] = {0, 0, 0, 0, 0, 0}, rf[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
    int parts = 0;
    for (int64_t k0 = -ph; k0 < ng; k0 = om_step_end(k0, ng, S, ph)) {
      const int64_t kend = om_step_end(k0, ng, S, ph);
      const int64_t a = ks > k0 ? ks : k0, e = kc < kend ? kc : kend;
      if (a >= e) continue;
      double t[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
      qpsk_om_chunk(z + ks, (int)(a - ks), (int)(e - ks), t);
      for (int q = 0; q < QPSK_OMS; q++) ch[q] += t[q];
      parts++;
    }
    om_chunks_split[tri] += parts > 1;
    for (int64_t kk = ks; kk < kc; kk++) {
      qpsk_oms_add(z[kk], m0 + kk, rf);
      owner[kk]++;
    }
    for (int q = 0; q < QPSK_OMS; q++) /* the sums in another order: to rounding */
      differ += fabs(rf[q] - ch[q]) > 1e-12 * (1 + fabs(rf[q]));
    for (int q = 0; q < QPSK_OMS; q++) sums[(i / cj) * QPSK_OMS + q] += ch[q];
  }
  CHECK(differ == 0, "pre_om: %zu chunks' qpsk_om_chunk sums differ from qpsk_oms_add's", differ);
  for (int64_t kk = 0; kk < ng; kk++)
    CHECK(owner[kk] == (kk >= QPSK_GM && kk < own_end), "pre_om: output %lld in %u chunks",
          (long long)kk, owner[kk]);
  free(owner);
}

/* stage pre_om's O&M sums as the kernel partitions them (qpsk_stages_cuda.cu: steps of 256
 * threads, 8 warps of 32 lanes; the sliding filters (a unit-step grid of 20 taps, a step-4/3 grid
 * of 24) sum the outputs they stage a step at a time by chunks (emul_om_chunks); the blocked
 * unit-step filter each group of four consecutive outputs' sums in its own slot (a lane's four),
 * each sub-block's the sum of its groups' in order (qpsk_om_groups); else one output per lane,
 * the warp's two sub-block slots per step, the block's fixed-order combination) from the grid z
 * as pre leaves it, then qpsk_om_combine */
static void emul_om_kernel(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 D, float gain,
                           om_ref *o) {
  unsigned nsub, Ls, nlags;
  case_om_dims(k, &nsub, &Ls, &nlags);
  const int64_t L = k->L, ng = (int64_t)case_ng(k), m0 = 4 * k->tm[t].b * L - QPSK_GM;
  const int64_t own_end = qpsk_om_own_end(m0, L, QPSK_GM, k->g_hi);
  const int per = k->pre.rq == (int64_t)k->pre.Q ? 4 : 1; /* outputs per lane and step */
  const int64_t nsteps = (ng + 256 * per - 1) / (256 * per);
  double *seg = calloc((size_t)nsteps * 8 * (1 + 2 * QPSK_OMS), sizeof *seg);
  for (int64_t it = 0; it < nsteps; it++)
    for (int w = 0; w < 8; w++) {
      double *sg = seg + (size_t)(it * 8 + w) * (1 + 2 * QPSK_OMS);
      for (int l = 0; l < 32; l++) {
        const int64_t k0 = it * 256 * per + (int64_t)(32 * w + l) * per;
        const int64_t seg0 = k0 - (int64_t)l * per;
        prx_cf32 oo[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
        for (int q = 0; q < per; q++)
          if (k0 + q < ng) oo[q] = z[k0 + q];
        double tt[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
        uint32_t jlo;
        int up = qpsk_om_lane(oo, per, k0, seg0, m0, QPSK_GM, own_end, 4 * Ls, nsub, tt, &jlo);
        if (!(seg0 < QPSK_GM) && (k0 - QPSK_GM) / (4 * (int64_t)Ls) > (int64_t)jlo + 1 &&
            k0 < own_end)
          CHECK(0, "pre_om: a warp's step spans more than two sub-blocks");
        sg[0] = jlo;
        for (int q = 0; q < QPSK_OMS; q++) sg[1 + (up ? QPSK_OMS : 0) + q] += tt[q];
      }
    }
  double *sums = calloc((size_t)(nsub + 1) * QPSK_OMS, sizeof *sums);
  if (per == 4 && k->pre.ntaps == QPSK_SLIDE_NT4) /* the sliding filter: steps of 8 x 256 */
    emul_om_chunks(z, ng, m0, own_end, L, nsub, Ls, 8 * 256, 0, sums);
  else if (per == 4) {
    /* each group of four's sums (its lane's), then each sub-block's groups in order; every
     * group whose outputs count lies in exactly one sub-block's range */
    const int64_t ngr = ng / 4;
    double *part = calloc((size_t)ngr * QPSK_OMS, sizeof *part);
    unsigned *owner = calloc((size_t)ngr, sizeof *owner);
    for (int64_t G = 0; G < ngr; G++) {
      double tt[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
      uint32_t jlo;
      qpsk_om_lane(z + 4 * G, 4, 4 * G, 4 * G, m0, QPSK_GM, own_end, 4 * Ls, nsub, tt, &jlo);
      /* the kernel's branch-free form of a group: the same sums */
      double t4[QPSK_OMS] = {0, 0, 0, 0, 0, 0};
      CHECK(m0 % 4 == 0, "pre_om: the grid's first index %lld not a multiple of 4", (long long)m0);
      qpsk_om_group4(z + 4 * G, 4 * G, QPSK_GM, own_end, t4);
      CHECK(memcmp(t4, tt, sizeof tt) == 0, "pre_om: qpsk_om_group4 differs from qpsk_om_lane");
      memcpy(part + G * QPSK_OMS, tt, sizeof tt);
    }
    for (unsigned j = 0; j <= nsub; j++) {
      int64_t G0, G1;
      qpsk_om_groups(j, nsub, 4 * Ls, QPSK_GM, ng, &G0, &G1);
      for (int64_t G = G0; G < G1; G++) {
        owner[G]++;
        for (int q = 0; q < QPSK_OMS; q++) sums[j * QPSK_OMS + q] += part[G * QPSK_OMS + q];
      }
    }
    for (int64_t G = 0; G < ngr; G++) {
      const int64_t k0 = 4 * G;
      const int own = k0 + 3 >= QPSK_GM && k0 < own_end;
      CHECK(owner[G] == 1 || (!own && owner[G] == 0),
            "pre_om: group %lld of own outputs in %u sub-blocks' ranges", (long long)G, owner[G]);
      if (own) {
        const uint32_t jg = (uint32_t)((k0 - QPSK_GM) / (4 * (int64_t)Ls));
        int64_t G0, G1;
        qpsk_om_groups(jg < nsub ? jg : nsub, nsub, 4 * Ls, QPSK_GM, ng, &G0, &G1);
        CHECK(G >= G0 && G < G1, "pre_om: group %lld summed into the wrong sub-block",
              (long long)G);
      }
    }
    free(part);
    free(owner);
  }
  /* at a step-4/3 grid of 24 taps the sliding filter's outputs staged a step at a time, 9 x 256
   * outputs from -ph (ph = m0 mod 3) */
  const int slide3 = per == 1 && k->pre.Q == 3 && k->pre.rq == 4 && k->pre.ntaps == 24;
  if (slide3) emul_om_chunks(z, ng, m0, own_end, L, nsub, Ls, 9 * 256, ((m0 % 3) + 3) % 3, sums);
  for (unsigned i = 0; i < (nsub + 1) * QPSK_OMS && per == 1 && !slide3; i++) {
    const unsigned j = i / QPSK_OMS, q = i % QPSK_OMS;
    for (int64_t sgi = 0; sgi < nsteps * 8; sgi++) {
      const double *sg = seg + (size_t)sgi * (1 + 2 * QPSK_OMS);
      if ((unsigned)sg[0] == j) sums[i] += sg[1 + q];
      if ((unsigned)sg[0] + 1 == j) sums[i] += sg[1 + QPSK_OMS + q];
    }
  }
  qpsk_om_in in = {D, gain, 0, k->g_hi};
  qpsk_om_out r;
  qpsk_om_combine(sums, k->tm[t].b, L, nsub, Ls, nlags, &in, &r);
  memcpy(o->osub, r.osub, sizeof o->osub);
  memcpy(o->osub_t, r.osub_t, sizeof o->osub_t);
  memcpy(o->corr, r.corr, sizeof o->corr);
  o->om_n = r.om_n;
  o->nsub = r.nsub;
  free(seg);
  free(sums);
}

/* The O&M record in float64 from the float grid (no rounding of the levelled values): the truth
 * both the CPU's levelled-float sums and the folded expansion approximate */
static void om_truth(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 D, float gain,
                     om_ref *o) {
  unsigned nsub, Ls, nlags;
  case_om_dims(k, &nsub, &Ls, &nlags);
  const int64_t L = k->L, m0 = 4 * k->tm[t].b * L, Ls4 = 4 * (int64_t)Ls;
  int64_t g_hi = m0 + 4 * L;
  if (g_hi > k->g_hi) g_hi = k->g_hi;
  memset(o, 0, sizeof *o);
  o->om_n = g_hi > m0 ? (double)(g_hi - m0) : 0;
  const double g2 = (double)gain * gain;
  for (unsigned j = 0; j <= nsub; j++) {
    int64_t a = m0 + Ls4 * j, e = j < nsub ? a + Ls4 : m0 + 4 * L;
    if (e > g_hi) e = g_hi;
    if (e <= a) break;
    for (int64_t m = a; m < e; m++) {
      const prx_cf32 v = z[QPSK_GM + (m - m0)];
      const double dr = (double)v.re - D.re, di = (double)v.im - D.im, p = g2 * (dr * dr + di * di);
      const int r = (int)(m & 3);
      o->osub[j][r == 0 ? 0 : r == 2 ? 0 : 1] += r == 0 || r == 3 ? p : -p;
    }
    o->osub_t[j] = (double)(a + e - 1) / 8.0;
    o->nsub = j + 1;
    if (j < nsub && e - a == Ls4)
      for (unsigned l = 0; l < nlags && (1u << l) <= j; l++) {
        const double *q = o->osub[j - (1u << l)];
        o->corr[l][0] += o->osub[j][0] * q[0] + o->osub[j][1] * q[1];
        o->corr[l][1] += o->osub[j][1] * q[0] - o->osub[j][0] * q[1];
      }
  }
}

/* x4 on the grid as pre_om leaves it (each value rounded to bfloat16: qpsk_grid_bf16), each
 * value levelled where it is read (the x4_level kernel) */
static void emul_x4_level(const stage_case *k, size_t t, const prx_cf32 *z, prx_cf32 D, float gain,
                          prx_cf32 *w) {
  const qpsk_mf_timing *tm = &k->tm[t];
  for (int64_t kk = tm->k0; kk < tm->k1; kk++) {
    int64_t g;
    float c[4];
    prx_cf32 v[4];
    qpsk_x4_tap(tm, k->L, QPSK_GM, kk, &g, c);
    for (int i = 0; i < 4; i++) v[i] = qpsk_om_level(qpsk_grid_bf16(z[g - 1 + i]), D, gain);
    w[kk - tm->k0] = qpsk_x4_one(v, c);
  }
}

/* the matched filter's blocked products in emul_mf: pairs P apart (P sps = 16) on one run and
 * general; quads at sps 4 on one run (of them on a run whose offsets moved: qpsk_dot4g) and those
 * that were not (a run's edge, the placement of every instant apart at 1000 ppm and more, the
 * block's last symbols) */
static size_t mf_pairs_blocked, mf_pairs_general;
static size_t mf_quads_blocked, mf_quads_moved, mf_quads_apart, mf_quads_one_pos;

/* a symbol's product on tap row r from window index off of the unpadded window, in qpsk_dot1's
 * order (every path's value) */
static prx_cf32 mf_one(const stage_case *k, const prx_cf32 *win, unsigned r, int64_t off) {
  return qpsk_dot1(k->mf.bank + (size_t)r * 2 * k->mf.ntaps, (const float *)(win + off),
                   k->mf.ntaps);
}

/* stage mf, emulated: the window staged by 256 threads (each its first NCO rotation exact, then
 * the float recurrence by 256 samples) into the kernel's layout, then per thread the kernel's
 * pairs (qpsk_mf_pairing): at sps 4 thread i the consecutive symbols k0 + 2i, k0 + 2i + 1, taken
 * from the quad of qpsk_mf4_kernel that holds them (thread 2j's and 2j + 1's pairs, the symbols
 * k0 + 4j .. k0 + 4j + 3) on the window shifted by sh (qpsk_win_slot16x2; on one run qpsk_dot4c
 * where the first's input starts a 16-sample group, else qpsk_dot4g); with P sps = 16 thread i's
 * items i + 256 j: the full units' pairs k, k + P (lane j of a half-warp the class's symbols 2 (j
 * mod 8) + 16 (j / 8) and the next, in a unit of 32 P) on the window with one spare slot per 32
 * samples (qpsk_dot2n on one run), then the last unit's symbols two an item, a warp that holds one
 * of those (and a pair on two runs) qpsk_dot2x32; elsewhere one symbol per thread. The blocked
 * products are checked bit for bit against qpsk_dot1; each thread's V&V terms are summed in float
 * in its order, then over the threads in double (the kernel sums its warps' partial sums in another
 * order: a few ulps). */
static void emul_mf(const stage_case *k, size_t t, prx_cf32 *sym, double sums[5]) {
  const unsigned c = (unsigned)(t / k->nblk);
  const prx_cf32 *row = (k->mix ? k->raw : k->rows) + (size_t)c * k->pitch;
  const qpsk_mf_timing *tm = &k->tm[t];
  memset(sums, 0, 5 * sizeof(double));
  if (tm->k1 <= tm->k0) return;
  int64_t lo, hi;
  qpsk_mf_window_of(tm->b, k->L, k->sps, k->mf.c, k->mf.ntaps, &lo, &hi);
  const int64_t nw = hi - lo;
  const int pairing = qpsk_mf_pairing(k->sps, k->mf.ntaps);
  int sh = 0;
  if (pairing == 1) {
    unsigned r0;
    int64_t o0;
    qpsk_mf_tap(tm, k->L, k->sps, lo, tm->k0, k->mf.Q, k->mf.c, &r0, &o0);
    sh = (int)(-o0 & 15);
  }
  prx_cf32 *win = malloc((size_t)nw * sizeof *win);
  prx_cf32 *wp = calloc((size_t)qpsk_win_slot32x1((int)nw) + 1, sizeof *wp); /* one pad per 32 */
  prx_cf32 *w16 = calloc((size_t)qpsk_win_slot16x2((int)nw + 16) + 2, sizeof *w16); /* shifted */
  float *t1 = malloc(k->mf.ntaps * sizeof *t1), *t2 = malloc(k->mf.ntaps * sizeof *t2);
  const prx_cf32 dc = {k->dc[2 * t], k->dc[2 * t + 1]};
  const double fm = k->mix ? k->mix[c] : 0, tz = qpsk_mix_turns(fm, lo);
  const prx_cf32 step = qpsk_nco_rot(0, k->omega[t], 256);
  for (int64_t th = 0; th < 256; th++) {
    prx_cf32 rot = qpsk_nco_rot(k->theta[t], k->omega[t], th);
    for (int64_t i = th; i < nw; i += 256) {
      int64_t s = lo + i;
      int in = s >= 0 && s < k->n_total;
      prx_cf32 v = in ? row[s] : dc;
      if (k->mix && in) v = qpsk_mix_sample(v, tz, fm, i);
      win[i] = qpsk_mf_sample_rot(qpsk_window_sample(v, in, dc), dc, k->gain[t], rot);
      wp[qpsk_win_slot32x1((int)i)] = win[i];
      w16[qpsk_win_slot16x2((int)i + sh)] = win[i];
      rot = qpsk_nco_advance(rot, step);
    }
  }
  double tot[4] = {0, 0, 0, 0};
  const int64_t n = tm->k1 - tm->k0, U = 32 * (int64_t)pairing;
  /* P sps = 16: the full units' pair items, then the last unit's nt symbols two an item */
  const int64_t nf = U ? n / U * 16 * pairing : 0, nt = U ? n - n / U * U : 0, nt2 = (nt + 1) / 2;
  for (int th = 0; th < 256; th++) {
    float acc[4] = {0, 0, 0, 0};
    prx_cf32 y4[4]; /* sps 4: the quad of the thread's pair */
    /* the thread's symbols, one pair (or one symbol) at a time: g counts its pairs (sps 4), its
     * items (P sps = 16: half-warp th / 16's items g = th / 16 + 16 i, unit g / P, class g mod P,
     * lane th mod 16), its symbols (else) */
    for (int64_t g = th;; g += 256) {
      int64_t kk[2];
      int m;
      if (pairing == 1) {
        kk[0] = tm->k0 + 2 * g;
        kk[1] = kk[0] + 1;
      } else if (pairing > 1) {
        if (g >= nf + nt2) break;
        if (g < nf) {
          const int64_t j = g % 16;
          kk[0] = tm->k0 + U * (g / 16 / pairing) + g / 16 % pairing +
                  pairing * (2 * (j % 8) + 16 * (j / 8));
          kk[1] = kk[0] + pairing;
        } else {
          kk[0] = tm->k1 - nt + (g - nf);
          kk[1] = kk[0] + nt2;
        }
      } else {
        kk[0] = tm->k0 + g;
        kk[1] = INT64_MAX;
      }
      if (kk[0] >= tm->k1) break;
      m = kk[1] < tm->k1 ? 2 : 1;
      unsigned r[2];
      int64_t off[2];
      for (int q = 0; q < m; q++) {
        qpsk_mf_tap(tm, k->L, k->sps, lo, kk[q], k->mf.Q, k->mf.c, &r[q], &off[q]);
        CHECK(off[q] >= 0 && off[q] + k->mf.ntaps <= nw, "mf: symbol %lld reads outside its window",
              (long long)kk[q]);
      }
      prx_cf32 y[2];
      if (pairing == 1) {
        /* the quad k0 + 4j .. k0 + 4j + 3 (fewer at the block's end) of thread th = 2j + e holds
         * the pair as its symbols 2e, 2e + 1 */
        const int e = th & 1;
        const int64_t kq = kk[0] - 2 * e;
        const int mq = tm->k1 - kq < 4 ? (int)(tm->k1 - kq) : 4;
        unsigned r4[4];
        int64_t off4[4];
        qpsk_mf_tap4(tm, k->L, k->sps, lo, kq, mq, k->mf.Q, k->mf.c, r4, off4);
        for (int q = 0; q < mq; q++) {
          unsigned rq;
          int64_t oq;
          qpsk_mf_tap(tm, k->L, k->sps, lo, kq + q, k->mf.Q, k->mf.c, &rq, &oq);
          CHECK(r4[q] == rq && off4[q] == oq,
                "mf: qpsk_mf_tap4 places symbol %lld elsewhere than qpsk_mf_tap",
                (long long)(kq + q));
        }
        unsigned rq4;
        int64_t oq4;
        if (qpsk_mf_quad4(tm, k->L, k->sps, lo, kq, k->mf.Q, k->mf.c, &rq4, &oq4)) {
          for (int q = 0; q < 4; q++)
            CHECK(r4[q] == rq4 && off4[q] == oq4 + 4 * q,
                  "mf: qpsk_mf_quad4 places symbol %lld elsewhere than qpsk_mf_tap4",
                  (long long)(kq + q));
          if (!e) mf_quads_one_pos++;
        }
        const int quad = mq == 4 && r4[1] == r4[0] && r4[2] == r4[0] && r4[3] == r4[0] &&
                         off4[1] == off4[0] + 4 && off4[2] == off4[0] + 8 &&
                         off4[3] == off4[0] + 12;
        const int u = (int)off4[0] + sh;
        if (quad) {
          for (unsigned l = 0; l < k->mf.ntaps; l++)
            t1[l] = k->mf.bank[(size_t)r4[0] * 2 * k->mf.ntaps + 2 * l];
          if ((u & 15) == 0)
            qpsk_dot4c(t1, k->mf.ntaps, w16 + qpsk_win_slot16x2(u), y4);
          else
            qpsk_dot4g(t1, k->mf.ntaps, w16, u, y4);
          for (int q = 0; q < 4; q++) {
            const prx_cf32 y1 = mf_one(k, win, r4[0], off4[q]);
            CHECK(memcmp(&y1, &y4[q], sizeof y1) == 0,
                  "mf: the quad's product differs from qpsk_dot1's (symbol %lld)",
                  (long long)(kq + q));
          }
          if (!e) mf_quads_blocked++;
          if (!e && (u & 15)) mf_quads_moved++;
        } else {
          for (int q = 0; q < mq; q++) y4[q] = mf_one(k, win, r4[q], off4[q]);
          if (!e) mf_quads_apart++;
        }
        for (int q = 0; q < m; q++) y[q] = y4[2 * e + q];
      } else if (pairing > 1) {
        const int blocked = m == 2 && r[1] == r[0] && off[1] == off[0] + 16;
        if (!blocked || (g | 31) >= nf) {
          /* the general pair: the tail's warp, or a pair on two runs */
          const unsigned r1 = m == 2 ? r[1] : r[0];
          const int64_t o1 = m == 2 ? off[1] : off[0];
          for (unsigned l = 0; l < k->mf.ntaps; l++) {
            t1[l] = k->mf.bank[(size_t)r[0] * 2 * k->mf.ntaps + 2 * l];
            t2[l] = k->mf.bank[(size_t)r1 * 2 * k->mf.ntaps + 2 * l];
          }
          qpsk_dot2x32(t1, t2, k->mf.ntaps, wp, (int)off[0], (int)o1, y);
          for (int q = 0; q < m; q++) {
            const prx_cf32 y1 = mf_one(k, win, r[q], off[q]);
            CHECK(memcmp(&y1, &y[q], sizeof y1) == 0,
                  "mf: the general pair's product differs from qpsk_dot1's (symbol %lld)",
                  (long long)kk[q]);
          }
          mf_pairs_general++;
        } else {
          for (unsigned l = 0; l < k->mf.ntaps; l++)
            t1[l] = k->mf.bank[(size_t)r[0] * 2 * k->mf.ntaps + 2 * l];
          qpsk_dot2n(t1, k->mf.ntaps, wp, (int)off[0], y);
          for (int q = 0; q < 2; q++) {
            const prx_cf32 y1 = mf_one(k, win, r[0], off[q]);
            CHECK(memcmp(&y1, &y[q], sizeof y1) == 0,
                  "mf: the blocked product differs from qpsk_dot1's (symbol %lld)",
                  (long long)kk[q]);
          }
          mf_pairs_blocked++;
        }
      } else {
        for (int q = 0; q < m; q++) y[q] = mf_one(k, win, r[q], off[q]);
      }
      for (int q = 0; q < m; q++) {
        sym[kk[q] - tm->k0] = y[q];
        qpsk_sum_terms(y[q], acc);
      }
    }
    for (int q = 0; q < 4; q++) tot[q] += acc[q];
  }
  for (int q = 0; q < 4; q++) sums[q] = tot[q];
  sums[4] = (double)(tm->k1 - tm->k0);
  free(win);
  free(wp);
  free(w16);
  free(t1);
  free(t2);
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

/* the stages on case_make's blocks at sps (cf16 rows, differential decisions, mixing, L symbols a
 * block) with a matched filter of mf_span symbols */
static void run_case_span(double sps, int cf16, int diff, int mix, unsigned L, double mf_span,
                          uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  stage_case k;
  case_make(&k, &r, 6, 4, L, sps, cf16, diff);
  if (mf_span != 12) { /* case_make's span */
    qpsk_fir_free(&k.mf);
    CHECK_OK(qpsk_fir_init(&k.mf, sps, 0.35, mf_span, 0, 1.0));
  }
  if (mix) case_mix(&k, &r);
  const size_t ng = case_ng(&k);
  prx_cf32 *g0 = malloc(ng * sizeof *g0), *g1 = malloc(ng * sizeof *g1);
  prx_cf32 *s0 = malloc(k.Lmax * sizeof *s0), *s1 = malloc(k.Lmax * sizeof *s1);
  uint8_t *b0 = malloc(2 * k.Lmax), *b1 = malloc(2 * k.Lmax);
  double worst_g = 0, worst_s = 0, worst_m = 0, worst_sum = 0, worst_om = 0, worst_corr = 0;
  double worst_gl = 0, worst_w = 0;
  prx_cf32 *w0 = malloc(k.Lmax * sizeof *w0), *w1 = malloc(k.Lmax * sizeof *w1);
  size_t bit_diff = 0, bits_total = 0, x4_level_differ = 0;
  double worst_x4_bf16 = 0; /* x4_level on the bfloat16 grid against x4 on om's float grid */
  double worst_fold[3] = {0, 0, 0}, worst_fold_corr = 0, worst_fold_truth = 0;
  double worst_cpu_truth[3] = {0, 0, 0};
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
      /* om folded into pre, on the grid before levelling, against the CPU's om and both against
       * the float64 truth: with the case's DC, and with DCs 10 and 20 dB above the grid's power
       * (where the CPU's levelled floats lose digits and the expansion cancels) */
      double pw = 0;
      for (size_t q = 0; q < ng; q++)
        pw += (double)g1[q].re * g1[q].re + (double)g1[q].im * g1[q].im;
      pw /= (double)ng;
      for (int dc = 0; dc < 3; dc++) {
        const prx_cf32 D0 = k.D[t];
        if (dc) {
          const double a = sqrt(pw * pow(10, dc)), ph = 2 * M_PI * test_rng_uniform(&r);
          k.D[t].re = (float)(a * cos(ph));
          k.D[t].im = (float)(a * sin(ph));
        }
        prx_cf32 *gz = malloc(ng * sizeof *gz);
        memcpy(gz, g1, ng * sizeof *gz);
        om_ref of, oc, ot, okn;
        double ts_k, tc_k;
        int same_k;
        emul_om_folded(&k, t, g1, k.D[t], k.om_gain[t], &of);
        emul_om_kernel(&k, t, g1, k.D[t], k.om_gain[t], &okn);
        om_compare(&okn, &of, &ts_k, &tc_k, &same_k);
        CHECK(same_k && ts_k < 1e-12 && tc_k < 1e-12,
              "pre_om: the kernel's partition of the sums differs (%.2e / %.2e)", ts_k, tc_k);
        om_truth(&k, t, g1, k.D[t], k.om_gain[t], &ot);
        ref_om(&k, t, gz, &oc);
        double es, ec, ts, tc;
        int same;
        om_compare(&of, &oc, &es, &ec, &same);
        CHECK(same, "om folded: channel %u block %u: sub-block counts or centres differ", c, j);
        if (es > worst_fold[dc]) worst_fold[dc] = es;
        if (dc == 0 && ec > worst_fold_corr) worst_fold_corr = ec;
        om_compare(&of, &ot, &ts, &tc, &same);
        if (ts > worst_fold_truth) worst_fold_truth = ts;
        if (tc > worst_fold_truth) worst_fold_truth = tc;
        om_compare(&oc, &ot, &ts, &tc, &same);
        if (ts > worst_cpu_truth[dc]) worst_cpu_truth[dc] = ts;
        if (dc == 0 && k.tm[t].k1 > k.tm[t].k0) {
          /* x4 levelling as it reads pre_om's bfloat16 grid against x4 on that grid levelled
           * first: the same values; and against x4 on the float grid levelled by om (the
           * unfolded path): within the bfloat16 rounding */
          size_t nn = (size_t)(k.tm[t].k1 - k.tm[t].k0);
          prx_cf32 *gb = malloc(ng * sizeof *gb);
          for (size_t q = 0; q < ng; q++)
            gb[q] = qpsk_om_level(qpsk_grid_bf16(g1[q]), k.D[t], k.om_gain[t]);
          emul_x4_level(&k, t, g1, k.D[t], k.om_gain[t], w0);
          emul_x4(&k, t, gb, w1);
          x4_level_differ += memcmp(w0, w1, nn * sizeof *w0) != 0;
          emul_x4(&k, t, gz, w1);
          e = test_rel_l2_cf32(w0, w1, nn);
          if (e > worst_x4_bf16) worst_x4_bf16 = e;
          free(gb);
        }
        k.D[t] = D0;
        free(gz);
      }
      om_ref o0, o1;
      ref_om(&k, t, g0, &o0);
      emul_om(&k, t, g1, &o1);
      double es, ec;
      int same;
      om_compare(&o1, &o0, &es, &ec, &same);
      if (es > worst_om) worst_om = es;
      if (ec > worst_corr) worst_corr = ec;
      CHECK(same, "om: channel %u block %u: sub-block counts or centres differ", c, j);
      e = test_rel_l2_cf32(g1, g0, ng);
      if (e > worst_gl) worst_gl = e;
      if (k.tm[t].k1 > k.tm[t].k0) {
        size_t nn = (size_t)(k.tm[t].k1 - k.tm[t].k0);
        ref_x4(&k, t, g0, w0);
        emul_x4(&k, t, g1, w1);
        e = test_rel_l2_cf32(w1, w0, nn);
        if (e > worst_w) worst_w = e;
      }

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
  printf("sps %.3f %s %s%s: grid %.2e, O&M %.2e, drift %.2e, levelled grid %.2e, x4 %.2e, "
         "symbols %.2e, input sums %.2e, symbol sums %.2e, bits differing %zu of %zu\n",
         sps, cf16 ? "cf16" : "cf32", diff ? "differential" : "coherent", mix ? " mixed" : "",
         worst_g, worst_om, worst_corr, worst_gl, worst_w, worst_s, worst_m, worst_sum, bit_diff,
         bits_total);
  printf("  om folded into pre: sub-block sums %.2e from the CPU's, drift %.2e; DC +10 dB / +20 "
         "dB: %.2e / %.2e from the CPU's, whose own sums are %.2e / %.2e from the float64 truth "
         "(the folded ones %.2e); x4 levelling as it reads: %zu blocks differing, %.2e from x4 "
         "on om's float grid\n",
         worst_fold[0], worst_fold_corr, worst_fold[1], worst_fold[2], worst_cpu_truth[1],
         worst_cpu_truth[2], worst_fold_truth, x4_level_differ, worst_x4_bf16);
  CHECK(worst_fold[0] < 1e-5, "om folded: sub-block sums differ by %.2e", worst_fold[0]);
  CHECK(worst_fold_corr < 1e-4, "om folded: drift correlations differ by %.2e", worst_fold_corr);
  CHECK(worst_fold_truth < 1e-9, "om folded: %.2e from the float64 truth", worst_fold_truth);
  CHECK(x4_level_differ == 0, "x4_level: %zu blocks differ from x4 on the levelled bfloat16 grid",
        x4_level_differ);
  /* bfloat16 keeps 8 bits of each component: 2^-9 relative at most, ~2^-10.5 rms, which the
   * interpolation and the 4th power (y^4 / |y|^2) carry to the values about threefold */
  CHECK(worst_x4_bf16 < 1e-2, "x4_level: %.2e from x4 on om's float grid (bfloat16: ~2e-3)",
        worst_x4_bf16);
  CHECK(worst_om < 1e-5, "om: sub-block sums differ by %.2e", worst_om);
  CHECK(worst_corr < 1e-4, "om: drift correlations differ by %.2e", worst_corr);
  CHECK(worst_gl < 1e-5, "om: levelled grid differs by %.2e", worst_gl);
  CHECK(worst_w < 1e-5, "x4: values differ by %.2e", worst_w);
  free(w0);
  free(w1);
  CHECK(worst_g < 1e-5, "pre: grid differs by %.2e", worst_g);
  CHECK(worst_s < 1e-5, "mf: symbols differ by %.2e", worst_s);
  /* mixed rows: the kernels' samples are mixed in float (the CPU's in double, then rounded) */
  CHECK(worst_m < (mix ? 1e-7 : 1e-9), "pre: input sums differ by %.2e", worst_m);
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

static void run_case(double sps, int cf16, int diff, int mix, unsigned L, uint64_t seed) {
  run_case_span(sps, cf16, diff, mix, L, 12, seed);
}

/* the CFO peak kernel's threads (qpsk_stages_cfo.cu's PEAK_THREADS) and its odd bins' batch of
 * pairs (ODD_BATCH) */
#define EMUL_PEAK_THREADS 128
#define EMUL_ODD_BATCH 4

/* the refinement from the start nu0 (run sums, then Newton's steps as the peak kernel's block
 * takes them: each of its threads a share of the run sums, each warp's added by the butterfly of
 * __shfl_xor_sync, the warps' totals added in the warps' order) and the CFO */
static void emul_refine(const prx_cf32 *w, size_t n, size_t nfft, double e, double nu0, double *nu,
                        double *f) {
  enum { T = EMUL_PEAK_THREADS };
  float tr[QPSK_REFINE_D], ti[QPSK_REFINE_D];
  for (unsigned l = 0; l < QPSK_REFINE_D; l++) qpsk_refine_tab(nu0, l, &tr[l], &ti[l]);
  const size_t m = (n + QPSK_REFINE_D - 1) / QPSK_REFINE_D;
  prx_cf32 *runs = malloc((m ? m : 1) * sizeof *runs);
  for (size_t g = 0; g < m && n >= 2; g++) runs[g] = qpsk_refine_run(w, n, nu0, g, tr, ti);
  const double max_step = 1.0 / (double)nfft;
  double off = 0;
  for (int it = 0; it < 4 && n >= 2; it++) {
    double x[T][6];
    memset(x, 0, sizeof x);
    for (unsigned l = 0; l < T; l++) qpsk_refine_part(runs, m, n, off, l, T, x[l]);
    for (unsigned o = 16; o > 0; o >>= 1) { /* l ^ o: a lane of l's warp */
      double y[T][6];
      for (unsigned l = 0; l < T; l++)
        for (int q = 0; q < 6; q++) y[l][q] = x[l][q] + x[l ^ o][q];
      memcpy(x, y, sizeof x);
    }
    for (unsigned l = 0; l < T; l++)
      CHECK(memcmp(x[l], x[l & ~31u], sizeof x[0]) == 0,
            "cfo: the warp's lanes hold different sums");
    double tot[6];
    for (int q = 0; q < 6; q++) {
      tot[q] = x[0][q];
      for (unsigned k = 1; k < T / 32; k++) tot[q] += x[32 * k][q];
    }
    double step;
    if (!qpsk_refine_step(tot, max_step, &step)) break;
    off += step;
    if (qpsk_refine_converged(step, n)) break;
  }
  *nu = n < 2 ? nu0 : qpsk_refine_result(nu0, off, max_step);
  *f = qpsk_cfo_of(*nu, e);
  free(runs);
}

/* stage cfo, emulated from the spectrum on: the peak kernel's threads' strided shares of the
 * peak's candidates, the warps' shuffle trees and the block's combination, the start, the run
 * sums, Newton */
static void emul_cfo(const prx_cf32 *w, size_t n, const prx_cf32 *spec, size_t nfft, double max_nu,
                     double e, double *nu0, double *nu, double *f) {
  const size_t kmax = qpsk_peak_kmax(max_nu, nfft), ncand = 2 * kmax + 1;
  enum { T = EMUL_PEAK_THREADS };
  float bp[T];
  size_t bi[T];
  for (unsigned th = 0; th < T; th++) {
    bp[th] = -1;
    bi[th] = (size_t)0xffffffffu;
    for (size_t i = th; i < ncand; i += T) {
      float q = qpsk_bin_power(spec[qpsk_peak_bin(i, kmax, nfft)]);
      if (qpsk_peak_better(q, i, bp[th], bi[th])) {
        bp[th] = q;
        bi[th] = i;
      }
    }
  }
  for (unsigned wp = 0; wp < T / 32; wp++)
    for (unsigned o = 16; o > 0; o >>= 1)
      for (unsigned l = 0; l + o < 32; l++) { /* lane l takes lane l + o's (read before write) */
        unsigned a = 32 * wp + l, b = a + o;
        if (qpsk_peak_better(bp[b], bi[b], bp[a], bi[a])) {
          bp[a] = bp[b];
          bi[a] = bi[b];
        }
      }
  float p = bp[0];
  size_t best = bi[0];
  for (unsigned wp = 1; wp < T / 32; wp++)
    if (qpsk_peak_better(bp[32 * wp], bi[32 * wp], p, best)) {
      p = bp[32 * wp];
      best = bi[32 * wp];
    }
  *nu0 = qpsk_peak_start(spec, nfft, qpsk_peak_bin(best, kmax, nfft), p);
  emul_refine(w, n, nfft, e, *nu0, nu, f);
}

/* the CFO stage from half the transform (cfo_half): the peak of the nfft / 2 point spectrum
 * (half: the even bins), the odd bins beside it summed over the window as the peak kernel's
 * threads sum them (each a strided share of the window's pairs of values, paired from h on as the
 * window's address pairs them, in float; then in double each warp's by the tree of
 * __shfl_down_sync and the warps' in order), the start, the refinement */
static void emul_cfo_half(const prx_cf32 *w, size_t n, unsigned h, const prx_cf32 *half,
                          size_t nfft, double max_nu, double e, double *nu0, double *nu, double *f,
                          double *odd_err) {
  const size_t len = nfft / 2, kmax = qpsk_peak_kmax(max_nu, len), ncand = 2 * kmax + 1;
  float bp = -1;
  size_t bi = (size_t)0xffffffffu;
  for (size_t i = 0; i < ncand; i++) { /* "better" is a total order: any order of the scan */
    const float q = qpsk_bin_power(half[qpsk_peak_bin(i, kmax, len)]);
    if (qpsk_peak_better(q, i, bp, bi)) {
      bp = q;
      bi = i;
    }
  }
  const size_t b = qpsk_peak_bin(bi, kmax, len);
  const int64_t mm = (int64_t)((2 * b + nfft - 1) % nfft), mp = (int64_t)((2 * b + 1) % nfft);
  double x[4] = {0, 0, 0, 0};
  for (unsigned wp = 0; wp < EMUL_PEAK_THREADS / 32; wp++) {
    double d[32][4];
    for (unsigned l = 0; l < 32; l++) {
      float acc[4] = {0, 0, 0, 0};
      qpsk_odd_bins_pairs(w, n, h, mm, mp, (int64_t)nfft, 32 * wp + l, EMUL_PEAK_THREADS,
                          EMUL_ODD_BATCH, acc);
      for (int q = 0; q < 4; q++) d[l][q] = acc[q];
    }
    for (unsigned o = 16; o > 0; o >>= 1) /* lane l adds lane l + o's (read before write) */
      for (unsigned l = 0; l + o < 32; l++)
        for (int q = 0; q < 4; q++) d[l][q] += d[l + o][q];
    for (int q = 0; q < 4; q++) x[q] += d[0][q];
  }
  /* the odd bins against their sums in double (exp(-j 2 pi m t / nfft) from the integer phase),
   * the error in units of the window's sum of magnitudes (float sums of ~64 terms a thread:
   * ~4e-6 at most) */
  double ref[4] = {0, 0, 0, 0}, l1 = 0;
  for (size_t t = 0; t < n; t++) {
    const double am = -6.283185307179586 * (double)(((uint64_t)mm * t) % nfft) / (double)nfft,
                 ap = -6.283185307179586 * (double)(((uint64_t)mp * t) % nfft) / (double)nfft;
    ref[0] += w[t].re * cos(am) - w[t].im * sin(am);
    ref[1] += w[t].re * sin(am) + w[t].im * cos(am);
    ref[2] += w[t].re * cos(ap) - w[t].im * sin(ap);
    ref[3] += w[t].re * sin(ap) + w[t].im * cos(ap);
    l1 += hypot(w[t].re, w[t].im);
  }
  for (int q = 0; q < 4; q++)
    if (!(fabs(x[q] - ref[q]) <= *odd_err * l1)) *odd_err = fabs(x[q] - ref[q]) / l1;
  const prx_cf32 xm = {(float)x[0], (float)x[1]}, xp = {(float)x[2], (float)x[3]};
  *nu0 = qpsk_peak_start_half(half, nfft, qpsk_peak_kmax(max_nu, nfft), b, bp, xm, xp);
  emul_refine(w, n, nfft, e, *nu0, nu, f);
}

/* The CFO stage's steps against the CPU's stage_cfo on the same spectrum: windows of 8192 and
 * of fewer values (a stream's last span), Es/N0 2 to 14 dB, lines over the whole acquisition
 * range and a clock slope: the start identical (the same peak, the same parabola), the refined
 * line within 1e-9 cycle per value (the run sums' and Newton's rotations evaluated directly
 * instead of by the CPU's recurrences, Newton's sums over the peak kernel's block), the CFO so. */
static void cfo_case(uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  const size_t S = 8192, nfft = 16384;
  const double max_nu = 4 * 0.12;
  prx_cf32 *w = malloc(S * sizeof *w), *spec = malloc(nfft * sizeof *spec);
  double worst_nu = 0, worst_f = 0, worst_truth = 0, worst_half = 0, odd_err = 0;
  int starts_differ = 0, half_differ = 0;
  prx_cf32 *half = malloc(nfft / 2 * sizeof *half);
  for (int i = 0; i < 24; i++) {
    size_t n = i % 4 == 3 ? 1000 + (size_t)(test_rng_uniform(&r) * 5000) : S;
    double nu_line = (2 * test_rng_uniform(&r) - 1) * 0.95 * max_nu;
    double esn0 = 2 + 12 * test_rng_uniform(&r), e = 2e-3 * (test_rng_uniform(&r) - 0.5);
    cfo_window(&r, w, n, nu_line, esn0);
    double a0, a1, f0 = cfo_ref(w, n, nfft, max_nu, e, spec, &a0, &a1), b0, b1, f1;
    emul_cfo(w, n, spec, nfft, max_nu, e, &b0, &b1, &f1);
    starts_differ += a0 != b0;
    /* half the transform: its bins are the even ones */
    for (size_t k = 0; k < nfft / 2; k++) half[k] = spec[2 * k];
    double h0, h1, fh;
    emul_cfo_half(w, n, (unsigned)(i / 4) & 1, half, nfft, max_nu, e, &h0, &h1, &fh, &odd_err);
    half_differ += a0 != h0;
    if (fabs(h1 - a1) > worst_half) worst_half = fabs(h1 - a1);
    if (fabs(a1 - nu_line) > worst_truth) worst_truth = fabs(a1 - nu_line);
    if (fabs(b1 - a1) > worst_nu) worst_nu = fabs(b1 - a1);
    if (fabs(f1 - f0) > worst_f) worst_f = fabs(f1 - f0);
  }
  printf("cfo: starts differing %d of 24, refined line within %.2e cycle/value, CFO within %.2e "
         "Rs (the CPU's line within %.2e of the truth); from half the transform: starts differing "
         "%d, refined line within %.2e, odd bins within %.2e of the window's sum of magnitudes\n",
         starts_differ, worst_nu, worst_f, worst_truth, half_differ, worst_half, odd_err);
  CHECK(odd_err < 1e-5, "cfo from half the transform: odd bins %.2e from their double sums",
        odd_err);
  CHECK(half_differ == 0, "cfo from half the transform: %d starts differ from the CPU's",
        half_differ);
  CHECK(worst_half < 1e-9, "cfo from half the transform: refined line %.2e from the CPU's",
        worst_half);
  free(half);
  CHECK(worst_truth < 1e-4, "cfo: the windows' lines are not where they were put (%.2e)",
        worst_truth);
  CHECK(starts_differ == 0, "cfo: %d refinement starts differ from the CPU's", starts_differ);
  CHECK(worst_nu < 1e-9, "cfo: refined line %.2e from the CPU's", worst_nu);
  free(w);
  free(spec);
}

/* The CFO peak kernel's candidates read two bins at a time (qpsk_peak_words, qpsk_peak_word):
 * every candidate bin of the search (qpsk_peak_cand >= 0) in exactly one word, no word outside the
 * row, each word's candidate indices as the kernel forms them (qpsk_peak_word_cands) those of
 * qpsk_peak_cand, for rows of 2 to 2^16 points and ranges from none to the widest (kmax = len / 2
 * - 1) */
static void peak_words_case(void) {
  size_t bad = 0, rows = 0;
  for (size_t len = 2; len <= ((size_t)1 << 16); len *= 2) {
    const double nus[] = {0.0, 0.01, 0.12, 0.25, 0.48, 0.4999, 0.5};
    for (size_t q = 0; q < sizeof nus / sizeof nus[0]; q++) {
      const size_t kmax = qpsk_peak_kmax(nus[q], len);
      size_t nlo, jh, nw;
      qpsk_peak_words(kmax, len, &nlo, &jh, &nw);
      unsigned char *seen = calloc(len, 1);
      for (size_t i = 0; i < nw; i++) {
        const size_t j = qpsk_peak_word(i, nlo, jh);
        if (j >= len / 2) {
          bad++;
          continue;
        }
        for (size_t k = 2 * j; k < 2 * j + 2; k++)
          if (qpsk_peak_cand(k, kmax, len) >= 0) seen[k]++;
        /* the kernel's 32-bit indices */
        uint32_t c[2];
        int ok[2];
        bad += qpsk_peak_word_cands((uint32_t)i, (uint32_t)nlo, (uint32_t)jh, (uint32_t)kmax,
                                    (uint32_t)len, c, ok) != 2 * j;
        for (int q = 0; q < 2; q++) {
          const int64_t want = qpsk_peak_cand(2 * j + q, kmax, len);
          bad += ok[q] != (want >= 0) || (ok[q] && (int64_t)c[q] != want);
        }
      }
      for (size_t k = 0; k < len; k++) bad += seen[k] != (qpsk_peak_cand(k, kmax, len) >= 0);
      free(seen);
      rows++;
    }
  }
  printf("cfo peak words: %zu rows, %zu candidates missed, repeated or words off the row\n", rows,
         bad);
  CHECK(bad == 0, "cfo: %zu peak candidates missed, repeated or read off the row", bad);
}

/* The CFO peak kernel's odd-bin twiddles from its table (qpsk_stages_cfo.cu's twiddle_tab:
 * nfft / 8 + 1 values sincospif(2 j / nfft)): every argument x = qpsk_twiddle_arg_pow2(m, t, nfft)
 * reduces as sincospif reduces it (z = rint(2 x), r = x - z / 2 by one fma) exactly to r = 2 j /
 * nfft, j = rho - z nfft / 4 an integer (rho = m t mod nfft) with |j| <= nfft / 8, and the
 * kernel's index |r| nfft / 2 is |j|: random m, t < nfft, the extremes and both ends of the table,
 * for every power of two nfft from 2^3 to 2^24 */
static void twiddle_tab_case(uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  size_t bad = 0, ends = 0;
  for (int k = 3; k <= 24; k++) {
    const uint32_t nfft = (uint32_t)1 << k;
    const int64_t j_max = nfft / 8;
    const float half_nfft = 0.5f * (float)nfft;
    for (int i = 0; i < 4000; i++) {
      uint32_t m = (uint32_t)(test_rng_u64(&r) & (nfft - 1)),
               t = (uint32_t)(test_rng_u64(&r) & (nfft - 1));
      if (i == 0) m = nfft - 1, t = nfft - 1;
      if (i == 1) m = 1, t = nfft / 8;     /* r = 1/4: the table's last value */
      if (i == 2) m = 1, t = 3 * nfft / 8; /* r = -1/4 */
      const uint32_t rho = (m * t) & (nfft - 1);
      const float x = qpsk_twiddle_arg_pow2(m, t, nfft), z = rintf(x + x), rr = fmaf(-z, 0.5f, x);
      const int64_t j = (int64_t)rho - (int64_t)z * (nfft / 4);
      const float idx = fabsf(rr) * half_nfft;
      bad += (double)rr != 2.0 * (double)j / (double)nfft || j > j_max || j < -j_max ||
             idx != (float)(j < 0 ? -j : j);
      ends += j == j_max || j == -j_max;
    }
  }
  printf("cfo twiddle table: %zu arguments off the table or reduced inexactly (%zu at its end)\n",
         bad, ends);
  CHECK(bad == 0, "cfo: %zu twiddle arguments off the table or reduced inexactly", bad);
  CHECK(ends >= 2 * 22, "cfo: the table's last value reached %zu times", ends);
}

/* The mixer's phase frac(f n) (qpsk_mix_turns) against exact integer arithmetic: f = M 2^E with
 * M a 53-bit integer, so f n = M n 2^E and its fraction is (M n mod 2^-E) 2^E, exact in 128
 * bits for |n| < 2^41; within 4e-15 turn for n up to 2^40 (the bank's streams) and negative n
 * (a window reaching before the stream). Then the rotation of a sample within a block against
 * exp(-2 pi i f (n0 + t)) from the same exact phase, in double: within 3e-7. */
static double exact_turns(double f, int64_t n) {
  int e;
  double m = frexp(f, &e); /* f = m 2^e, 1/2 <= |m| < 1 */
  int64_t M = (int64_t)ldexp(m, 53);
  int E = e - 53; /* f = M 2^E, -E <= 93 for |f| >= 1e-12 */
  __int128 p = (__int128)M * n;
  unsigned __int128 mod = (unsigned __int128)1 << (-E);
  __int128 rm = p % (__int128)mod;
  if (rm < 0) rm += (__int128)mod;
  double t = ldexp((double)rm, E);
  return t >= 0.5 ? t - 1 : t;
}

static void mix_turns_case(uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  double worst = 0, worst_rot = 0;
  for (int i = 0; i < 20000; i++) {
    double f = test_rng_uniform(&r) - 0.5;
    if (i % 4 == 1) f *= 1e-6; /* small offsets too */
    if (fabs(f) < 1e-12) continue;
    int64_t n = (int64_t)(test_rng_uniform(&r) * 1099511627776.0); /* up to 2^40 */
    if (i % 8 == 3) n = -(int64_t)(test_rng_uniform(&r) * 5000);   /* before the stream */
    if (i % 8 == 5) n = ((int64_t)1 << 40) - (int64_t)(test_rng_uniform(&r) * 1000);
    double d = qpsk_mix_turns(f, n) - exact_turns(f, n);
    d -= nearbyint(d);
    if (fabs(d) > worst) worst = fabs(d);
    int64_t t = (int64_t)(test_rng_uniform(&r) * 4000);
    prx_cf32 one = {1, 0}, z = qpsk_mix_sample(one, qpsk_mix_turns(f, n), f, t);
    double a = -2 * M_PI * exact_turns(f, n + t);
    double e = hypot(z.re - cos(a), z.im - sin(a));
    if (e > worst_rot) worst_rot = e;
  }
  printf("mixer phase: frac(f n) within %.2e turn of exact, rotation within %.2e\n", worst,
         worst_rot);
  CHECK(worst < 4e-15, "qpsk_mix_turns: %.2e turn from the exact phase", worst);
  CHECK(worst_rot < 3e-7, "qpsk_mix_sample: rotation %.2e from the exact one", worst_rot);
}

/* The demodulator's own blocks (probed) through the emulated kernels: pre, om, x4, mf and out on
 * its stream with its per-block parameters give its grid, sums, 4th-power values, symbols and
 * bits. */
static void real_case(double sps, double esn0, double ppm, int diff, uint64_t seed) {
  tcase c;
  size_t n = real_tcase(&c, sps, esn0, ppm, diff, seed);
  stage_case k;
  probe pr;
  prx_qpsk *q = NULL;
  prx_cf32 *x = NULL;
  uint8_t *cpu_bits = NULL;
  size_t cpu_nbits = 0;
  char name[96];
  snprintf(name, sizeof name, "demodulator sps %.3f %.0f dB %.0f ppm %s", sps, esn0, ppm,
           diff ? "differential" : "coherent");
  if (probe_case(&c, n, &k, &pr, &q, &x, &cpu_bits, &cpu_nbits)) {
    const size_t nb = pr.n, ng = pr.ng;
    prx_cf32 *grid = malloc(nb * ng * sizeof *grid), *sym = malloc(nb * k.Lmax * sizeof *sym);
    prx_cf32 *w = malloc(nb * k.Lmax * sizeof *w);
    qpsk_om_out *oo = calloc(nb, sizeof *oo);
    int64_t *w0 = calloc(nb, sizeof *w0);
    double *mom = malloc(nb * 4 * sizeof *mom), sums[5];
    unsigned *bad = calloc(nb, sizeof *bad);
    uint8_t *bits = calloc(cpu_nbits + 16, 1);
    double fold_s = 0, fold_c = 0;
    int fold_same = 1;
    for (size_t t = 0; t < nb; t++) {
      w0[t] = (int64_t)(t * k.Lmax);
      emul_pre(&k, 0, (unsigned)t, grid + t * ng, mom + 4 * t, &bad[t]);
      { /* om folded into pre against the demodulator's own O&M record */
        om_ref of, od;
        emul_om_folded(&k, t, grid + t * ng, k.D[t], k.om_gain[t], &of);
        memcpy(od.osub, pr.b[t].oo.osub, sizeof od.osub);
        memcpy(od.osub_t, pr.b[t].oo.osub_t, sizeof od.osub_t);
        memcpy(od.corr, pr.b[t].oo.corr, sizeof od.corr);
        od.om_n = pr.b[t].oo.om_n;
        od.nsub = pr.b[t].oo.nsub;
        /* the demodulator leaves the sub-blocks past nsub as an earlier block had them */
        for (unsigned j = od.nsub; j < QPSK_SUB_MAX; j++)
          od.osub[j][0] = od.osub[j][1] = od.osub_t[j] = 0;
        double es, ec;
        int same;
        om_compare(&of, &od, &es, &ec, &same);
        if (!(es <= fold_s)) fold_s = es;
        if (!(ec <= fold_c)) fold_c = ec;
        fold_same &= same;
      }
      om_ref o;
      emul_om(&k, t, grid + t * ng, &o);
      memcpy(oo[t].osub, o.osub, sizeof o.osub);
      memcpy(oo[t].osub_t, o.osub_t, sizeof o.osub_t);
      memcpy(oo[t].corr, o.corr, sizeof o.corr);
      oo[t].om_n = o.om_n;
      oo[t].nsub = o.nsub;
      emul_x4(&k, t, grid + t * ng, w + w0[t]);
      emul_mf(&k, t, sym + t * k.Lmax, sums);
      if (2 * (size_t)pr.b[t].ob.out0 + 2 * (size_t)(k.tm[t].k1 - k.tm[t].k0) <= cpu_nbits + 16)
        emul_out(&k, t, sym + t * k.Lmax, bits + 2 * pr.b[t].ob.out0);
    }
    probe_compare(name, &k, &pr, grid, oo, w, w0, sym, mom, bad, bits, cpu_bits, cpu_nbits);
    printf("  om folded into pre: O&M %.2e, drift %.2e of the demodulator's\n", fold_s, fold_c);
    CHECK(fold_same && fold_s < 1e-5 && fold_c < 1e-4, "%s: folded O&M %.2e / %.2e", name, fold_s,
          fold_c);
    /* the CFO stage's steps on each span's window give the demodulator's estimate */
    prx_cf32 *spec = malloc(pr.nfft * sizeof *spec);
    double worst_f = 0;
    for (size_t i = 0; i < pr.ns; i++) {
      double a0, a1, b0, b1, f1;
      cfo_ref(pr.sp[i].win, pr.sp[i].nwin, pr.nfft, pr.max_nu, pr.sp[i].e, spec, &a0, &a1);
      emul_cfo(pr.sp[i].win, pr.sp[i].nwin, spec, pr.nfft, pr.max_nu, pr.sp[i].e, &b0, &b1, &f1);
      if (!(fabs(f1 - pr.sp[i].f) <= worst_f)) worst_f = fabs(f1 - pr.sp[i].f);
    }
    printf("  %zu spans: CFO within %.2e Rs of the demodulator's\n", pr.ns, worst_f);
    CHECK(pr.ns > 0 && worst_f < 1e-9, "%s: CFO %.2e Rs from the demodulator's", name, worst_f);
    free(spec);
    free(grid);
    free(sym);
    free(w);
    free(oo);
    free(w0);
    free(mom);
    free(bad);
    free(bits);
  } else {
    CHECK(0, "%s: the demodulator run failed: %s", name, prx_last_error());
  }
  case_free(&k);
  probe_free(&pr);
  prx_qpsk_destroy(q);
  free(x);
  free(cpu_bits);
}

/* pre_om's end of the own outputs: while the stream goes on (g_hi = INT64_MAX) every own output
 * counts, the stream's first block included (m0 < 0: g_hi - m0 would overflow); at the stream's
 * end those below it */
static void om_own_end_case(void) {
  const int64_t L = 512, m0 = -QPSK_GM;
  CHECK(qpsk_om_own_end(m0, L, QPSK_GM, INT64_MAX) == QPSK_GM + 4 * L,
        "pre_om: the first block's own outputs cut while the stream goes on");
  CHECK(qpsk_om_own_end(4 * 3 * L - QPSK_GM, L, QPSK_GM, INT64_MAX) == QPSK_GM + 4 * L,
        "pre_om: a later block's own outputs cut while the stream goes on");
  CHECK(qpsk_om_own_end(m0, L, QPSK_GM, 100) == 100 - m0, "pre_om: the stream's end missed");
  CHECK(qpsk_om_own_end(m0, L, QPSK_GM, 0) == QPSK_GM, "pre_om: an empty block has own outputs");
}

int main(void) {
  om_own_end_case();
  mix_turns_case(41);
  cfo_case(42);
  twiddle_tab_case(43);
  peak_words_case();
  run_case(4.0, 0, 1, 0, 256, 11);
  run_case(16.0 / 3.0, 0, 0, 0, 256, 12);
  run_case(4.0, 1, 0, 0, 256, 13);
  run_case(16.0 / 3.0, 1, 1, 0, 256, 14);
  run_case(2.5, 0, 1, 0, 256, 15); /* an inexact pre-filter grid (Q = 240 rounding) */
  run_case(4.0, 0, 1, 1, 256, 16);
  run_case(16.0 / 3.0, 1, 0, 1, 256, 17);
  /* blocks whose last O&M sub-block is shorter (1000 = 31 x 32 + 8) */
  run_case(4.0, 0, 0, 0, 1000, 18);
  run_case(16.0 / 3.0, 0, 1, 0, 1000, 19);
  /* the bank's block length at the unit step: 2056 outputs, the last 8 with the step before
   * (qpsk_slide_tail) */
  run_case(4.0, 0, 1, 0, 512, 37);
  /* the matched filter's pairs P symbols (16 samples) apart at P = 2 (qpsk_mf_pairing: sps 8) */
  run_case(8.0, 0, 0, 0, 256, 20);
  /* matched filters shorter than 16 taps at P sps = 16 (sps 2, P = 8: span 3, 8 taps; sps 3.2,
   * P = 5: span 2, 12 taps) */
  run_case_span(2.0, 0, 0, 0, 512, 3, 21);
  run_case_span(3.2, 0, 1, 0, 512, 2, 22);
  real_case(4.0, 14, 100, 1, 31);
  real_case(16.0 / 3.0, 12, 1000, 1, 32);
  real_case(4.0, 14, 3000, 0, 33);
  real_case(4.0, 6, 100, 1, 34);
  real_case(4.0, 4, 300, 1, 35);
  real_case(16.0 / 3.0, 8, 100, 0, 36);
  /* pre_om's chunks split by a step's end and cut by the stream's end, at both sliding grids */
  printf("pre_om chunks: split by a step's end %zu (unit step) / %zu (step 4/3), cut by the "
         "stream's end %zu / %zu; unit-step blocks whose last few outputs go with the step before "
         "%zu\n",
         om_chunks_split[0], om_chunks_split[1], om_chunks_cut[0], om_chunks_cut[1],
         om_steps_folded[0]);
  CHECK(om_steps_folded[0] > 0, "pre_om: no unit-step block with its last outputs folded");
  CHECK(om_chunks_split[0] > 0 && om_chunks_split[1] > 0 && om_chunks_cut[0] > 0 &&
            om_chunks_cut[1] > 0,
        "pre_om: no chunk split by a step's end or cut by the stream's end at one of the grids");
  /* the matched filter's blocked products and their fallbacks all ran (runs of one timing and
   * exact placement at 1000 ppm and more, residues changing between runs) */
  printf("mf quads (sps 4): %zu blocked (%zu of them moved, %zu from one position), %zu one "
         "symbol at a time; pairs (P sps = 16): %zu blocked, %zu general (a tail's warp, two "
         "runs)\n",
         mf_quads_blocked, mf_quads_moved, mf_quads_one_pos, mf_quads_apart, mf_pairs_blocked,
         mf_pairs_general);
  CHECK(mf_quads_one_pos > mf_quads_blocked / 2,
        "mf: %zu of %zu blocked quads placed from one position (qpsk_mf_quad4)", mf_quads_one_pos,
        mf_quads_blocked);
  CHECK(mf_quads_blocked > mf_quads_moved && mf_quads_moved > 0 && mf_quads_apart > 0 &&
            mf_pairs_blocked > 0 && mf_pairs_general > 0,
        "mf: %zu quads blocked (%zu moved), %zu not; %zu pairs blocked, %zu general",
        mf_quads_blocked, mf_quads_moved, mf_quads_apart, mf_pairs_blocked, mf_pairs_general);
  return test_finish("test_qpsk_stages_emul");
}
