/* The phase pass of one channel's span over plain records, written once for the host and the GPU
 * (__host__ __device__): per block the V&V phase unwrapped across blocks, the M2M4 signal and
 * noise over the noise window, the signal test and the block flags; then per block the output
 * offsets and, DIFFERENTIAL, the link of the differential chain (the symbol before the block's
 * first). The CPU's qpsk_serial_phase (qpsk_batch.c) runs these steps on its blocks (PILOTS adds
 * its frame acquisition, DC share and tags there, on the CPU only); the bank's driver runs the
 * same steps on the GPU, one warp per channel (qpsk_ph_span_step, qpsk_serial_cuda.cu): the
 * blocks' own work shared out over the lanes, the chained steps by one lane; the out stage reads
 * the decisions' records it leaves on the device.
 *
 * On the GPU (compiled without fused multiply-adds) the arithmetic rounds as on the host except
 * atan2, cos and sin (an ulp or two of the host's libm). */
#ifndef PRX_QPSK_SERIAL_PHASE_H
#define PRX_QPSK_SERIAL_PHASE_H

#include "qpsk_serial.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the pass carries from span to span: qpsk_phase_state (qpsk_internal.h: prx_qpsk's ph) */

/* one block's inputs: its V&V sums and shape (stage mf's symbols: qpsk_shape_of), input sums
 * (pre), timing residual (the timing pass) and its span's gain and clock flag */
typedef struct {
  qpsk_sums sums;
  qpsk_shape shape;
  double mom[3], mom_n;
  double tres, gain;
  unsigned nonfinite;
  int out_range;
} qpsk_phase_in;

/* one block's results (qpsk_blk's fields of the same names; line: the input's, carried to the
 * report; in float, where the record had its padding: the record copied back a span stays 56
 * bytes) */
typedef struct qpsk_phase_out {
  double phi, sig, noise, sig_own, noise_own, vv_stat;
  unsigned flags;
  float line;
} qpsk_phase_out;

/* the block's results into its qpsk_blk (the host's: the CPU's pass, the driver's pending spans;
 * of the shape only the line comes back: the levels and steps as their flags) */
static inline void qpsk_ph_to_blk(const qpsk_phase_out *r, qpsk_blk *bk) {
  bk->phi = r->phi;
  bk->sig = r->sig;
  bk->noise = r->noise;
  bk->sig_own = r->sig_own;
  bk->noise_own = r->noise_own;
  bk->vv_stat = r->vv_stat;
  bk->shape.line = r->line;
  bk->flags = r->flags;
}

/* The block's second-order line |sum y^2| / sum |y|^2 over its first QPSK_LINE_SYMBOLS symbols y
 * (n of them; 0 without symbols), summed in double: symbols on one line through the origin (BPSK,
 * a real or unmodulated signal) have y^2 on one ray, Es / (Es + N0) of the power; QPSK's y^2 are
 * +-j times its power, so their sum is a random walk of ~1/sqrt(n) of it (above 0.5 at 64
 * symbols in ~1e-4 of the blocks at high Es/N0, where the walk is one-dimensional, and less at
 * low Es/N0).
 * In the same pass, *steps: the quarter steps -Re(sum z^2) / sum |z|^2 over z = y_i conj(y_(i-1)),
 * the turn from one symbol to the next (a carrier's residual turn a symbol only turns every z^2
 * alike). MSK, and 2-FSK whose shift is half the symbol rate, turn by a quarter turn each symbol:
 * z = +-j |z|, z^2 = -|z|^2, the measure Es / (Es + N0) squared near 1; QPSK's z turn by 0, 1/4,
 * 1/2 or 3/4 at random, z^2 = +-|z|^2 cancel (a random walk of ~1/sqrt(63) of the sum); BPSK's
 * and a constant's z^2 = +|z|^2: -1. 0 without two symbols. */
QPSK_HD void qpsk_ph_line_add(prx_cf32 y, double *re, double *im, double *p) {
  const double a = y.re, b = y.im;
  *re += a * a - b * b;
  *im += 2 * a * b;
  *p += a * a + b * b;
}
QPSK_HD void qpsk_ph_step_add(prx_cf32 y, prx_cf32 prev, double *zr, double *zp) {
  const double a = (double)y.re * prev.re + (double)y.im * prev.im,
               b = (double)y.im * prev.re - (double)y.re * prev.im, aa = a * a, bb = b * b;
  *zr += aa - bb;
  *zp += aa + bb;
}
QPSK_HD float qpsk_ph_line(const prx_cf32 *y, int64_t n, float *steps) {
  /* symbol i into partial sums i mod 4, the four added in a fixed order: four independent chains
   * (the CPU's vector lanes, the GPU's loads issued ahead), the same arithmetic on both */
  double re[4] = {0, 0, 0, 0}, im[4] = {0, 0, 0, 0}, p[4] = {0, 0, 0, 0};
  double zr[4] = {0, 0, 0, 0}, zp[4] = {0, 0, 0, 0};
  if (n >= QPSK_LINE_SYMBOLS) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int i = 0; i < QPSK_LINE_SYMBOLS; i += 4)
      for (int j = 0; j < 4; j++) {
        qpsk_ph_line_add(y[i + j], &re[j], &im[j], &p[j]);
        if (i + j > 0) qpsk_ph_step_add(y[i + j], y[i + j - 1], &zr[j], &zp[j]);
      }
  } else {
    for (int64_t i = 0; i < n; i++) {
      qpsk_ph_line_add(y[i], &re[i & 3], &im[i & 3], &p[i & 3]);
      if (i > 0) qpsk_ph_step_add(y[i], y[i - 1], &zr[i & 3], &zp[i & 3]);
    }
  }
  const double sz = (zr[0] + zr[1]) + (zr[2] + zr[3]), szp = (zp[0] + zp[1]) + (zp[2] + zp[3]);
  const double q = szp > 0 ? -sz / szp : 0;
  *steps = isfinite(q) ? (float)q : 0.0f;
  const double sr = (re[0] + re[1]) + (re[2] + re[3]), si = (im[0] + im[1]) + (im[2] + im[3]);
  const double sp = (p[0] + p[1]) + (p[2] + p[3]);
  const double r = sp > 0 ? sqrt(sr * sr + si * si) / sp : 0;
  return isfinite(r) ? (float)r : 0.0f;
}

/* The block's power levels: the kurtosis E[(p - E p)^4] / E[(p - E p)^2]^2 of its symbols' power
 * p = |y|^2 over its first QPSK_LEVEL_SYMBOLS symbols (n of them), rotation-free. QPSK's symbols
 * lie on one ring: p is the ring plus noise, 3 at high Es/N0 (Gaussian) and more at low (9 for
 * noise alone); 16QAM's on three (p at 0.2, 1 and 1.8 of the mean: 2.0 without noise, 2.1 at 20
 * dB, 2.3 at 16 dB), 64QAM's on nine (2.4 from ~24 dB), and so are the symbols of QPSK through a
 * two-path channel (y_k = s_k + a s_(k-1): 16QAM's points at a = 0.5). 0 where not measured: fewer
 * than 32 symbols, or powers whose variance is below QPSK_LEVELS_SPREAD of their mean's square
 * (levels too close to matter to the decisions: QPSK's ring with its noise from ~16 dB Es/N0 up, a
 * few % of I/Q imbalance, the pulses' residual interference, whose few terms would read as levels
 * above ~35 dB). Over 256 symbols QPSK reads below QPSK_LEVELS_MAX in at most 1.8 % of the
 * blocks (at 14 dB; 0.7 % at 9 dB), 16QAM in 59 % at 14 dB, 88 % at 16 dB and 99 % at 20 dB,
 * 64QAM in 51 % at 20 dB and 78 % at 28 dB (numpy's symbols in complex Gaussian noise).
 * The sums: 32 slots (symbol i into slot i mod 32, in order), each slot's p, p^2, p^3, p^4 in
 * float; the slots added in the tree that a warp's butterfly (__shfl_xor_sync over 16, 8, 4, 2,
 * 1) leaves in lane 0, so that the GPU's warp, its lanes reading the symbols side by side, and
 * the host's loop give the same sums; then in double. */
#define QPSK_LEVEL_SLOTS 32
/* the sums S of p, p^2, p^3 and p^4 over n symbols to the kurtosis (0: not measured) */
QPSK_HD float qpsk_ph_levels_of(const float *S, int64_t n) {
  const double m = S[0] / (double)n, e2 = S[1] / (double)n, e3 = S[2] / (double)n,
               e4 = S[3] / (double)n, mm = m * m;
  const double c2 = e2 - mm, c4 = e4 - 4 * m * e3 + 6 * mm * e2 - 3 * mm * mm;
  if (!(c2 > QPSK_LEVELS_SPREAD * mm)) return 0.0f;
  const double r = c4 / (c2 * c2);
  return isfinite(r) ? (float)r : 0.0f;
}
/* the symbols the measure takes of a block of n (0: too few) */
QPSK_HD int64_t qpsk_ph_levels_n(int64_t n) {
  if (n > QPSK_LEVEL_SYMBOLS) n = QPSK_LEVEL_SYMBOLS;
  return n < 32 ? 0 : n;
}
/* one symbol's powers p, p^2, p^3, p^4 into w, as every path adds them to its slot's sums */
QPSK_HD void qpsk_ph_powers(prx_cf32 y, float *w) {
  const float p = y.re * y.re + y.im * y.im, p2 = p * p;
  w[0] = p;
  w[1] = p2;
  w[2] = p2 * p;
  w[3] = p2 * p2;
}
#ifdef __CUDA_ARCH__
/* A warp's, QPSK_LEVEL_BLOCKS blocks at once (their loads in flight together): lane `lane` the
 * slot of that number in each (y[g]: block g's symbols, n[g] of them); returns block mine's
 * value (0 <= mine < QPSK_LEVEL_BLOCKS; another: 0) */
#define QPSK_LEVEL_BLOCKS 4
__device__ static inline float qpsk_ph_levels_warp(const prx_cf32 *const *y, const int64_t *n,
                                                   unsigned lane, int mine) {
  float s[QPSK_LEVEL_BLOCKS][4];
  int64_t m[QPSK_LEVEL_BLOCKS];
#pragma unroll
  for (int g = 0; g < QPSK_LEVEL_BLOCKS; g++) {
    m[g] = qpsk_ph_levels_n(n[g]);
    s[g][0] = s[g][1] = s[g][2] = s[g][3] = 0;
  }
#pragma unroll
  for (int u = 0; u < QPSK_LEVEL_SYMBOLS / QPSK_LEVEL_SLOTS; u++)
#pragma unroll
    for (int g = 0; g < QPSK_LEVEL_BLOCKS; g++) {
      const int64_t i = lane + (int64_t)u * QPSK_LEVEL_SLOTS;
      if (i < m[g]) {
        float w[4];
        qpsk_ph_powers(y[g][i], w);
        for (int q = 0; q < 4; q++) s[g][q] += w[q];
      }
    }
  /* the slots added (lane 0 holds the tree's sums), then lane 0's sums of block `mine` to each
   * lane, which works out that block's value alone (the owner's: lane mine mod 32) */
  float S[4] = {0, 0, 0, 0};
  int64_t mm = 0;
#pragma unroll
  for (int g = 0; g < QPSK_LEVEL_BLOCKS; g++) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
#pragma unroll
      for (int off = QPSK_LEVEL_SLOTS / 2; off >= 1; off /= 2)
        s[g][q] += __shfl_xor_sync(0xffffffffu, s[g][q], off);
      const float l0 = __shfl_sync(0xffffffffu, s[g][q], 0);
      if (g == mine) S[q] = l0;
    }
    if (g == mine) mm = m[g];
  }
  return mm ? qpsk_ph_levels_of(S, mm) : 0.0f;
}
#endif
/* The host's (and a lone GPU thread's: the bank's block_ends kernel): the slots one after
 * another, then lane 0's tree */
QPSK_HD float qpsk_ph_levels(const prx_cf32 *y, int64_t n) {
  n = qpsk_ph_levels_n(n);
  if (!n) return 0.0f;
  float v[4][QPSK_LEVEL_SLOTS];
  for (int q = 0; q < 4; q++)
    for (int j = 0; j < QPSK_LEVEL_SLOTS; j++) v[q][j] = 0;
  /* rows of 32 symbols, slot j the row's j-th (the compiler's vectors along a row) */
  for (int64_t i0 = 0; i0 < n; i0 += QPSK_LEVEL_SLOTS) {
    const int m = n - i0 < QPSK_LEVEL_SLOTS ? (int)(n - i0) : QPSK_LEVEL_SLOTS;
    for (int j = 0; j < m; j++) {
      float w[4];
      qpsk_ph_powers(y[i0 + j], w);
      for (int q = 0; q < 4; q++) v[q][j] += w[q];
    }
  }
  float S[4];
  for (int q = 0; q < 4; q++) {
    for (int off = QPSK_LEVEL_SLOTS / 2; off >= 1; off /= 2)
      for (int j = 0; j < off; j++) v[q][j] += v[q][j + off];
    S[q] = v[q][0];
  }
  return qpsk_ph_levels_of(S, n);
}

/* What the host's phase pass reads of a block's symbols that stay on the device (the bank's
 * driver where the GPU decides but the host runs the pass): its last symbol (the differential
 * chain's link between blocks) and its shape; zeros for a block without symbols. */
/* The shape of a block's n symbols y (qpsk_internal.h): all three measures, one thread's */
QPSK_HD qpsk_shape qpsk_shape_of(const prx_cf32 *y, int64_t n) {
  qpsk_shape s;
  s.line = qpsk_ph_line(y, n, &s.steps);
  s.levels = qpsk_ph_levels(y, n);
  return s;
}

typedef struct qpsk_block_end {
  prx_cf32 last;
  qpsk_shape shape;
} qpsk_block_end;
QPSK_HD qpsk_block_end qpsk_block_end_of(const prx_cf32 *y, int64_t n) {
  qpsk_block_end e = {{0, 0}, {0.0f, 0.0f, 0.0f}};
  if (n > 0) {
    e.last = y[n - 1];
    e.shape = qpsk_shape_of(y, n);
  }
  return e;
}

/* the block's correction exp(-j phi) / amplitude (the out stage's, qpsk_batch.c block_rot) */
QPSK_HD prx_cf32 qpsk_ph_rot(double phi, double sig) {
  prx_cf32 r = {(float)cos(-phi), (float)sin(-phi)};
  float g = (float)(1.0 / sqrt(sig));
  r.re *= g;
  r.im *= g;
  return r;
}

/* The steps of qpsk_ph_block that depend on the block alone (the GPU's pass runs them one block
 * a lane, qpsk_ph_span_step): */
/* the V&V phase of the block (NaN: none), its sums with the previous block's (prev, where a
 * block has set the phase before: have) for a short block */
QPSK_HD double qpsk_ph_vv(unsigned L, int have, const qpsk_sums *o, const qpsk_sums *prev) {
  qpsk_sums s = *o;
  if (s.n < 0.5 * L && have) qpsk_sums_add(&s, prev);
  return s.n > 0 ? qpsk_vv_phase(&s) : NAN;
}
/* the block's sums enter the noise window (finite) */
QPSK_HD int qpsk_ph_noise_ok(const qpsk_sums *o) {
  return isfinite(o->m4) && isfinite(o->s4[0]) && isfinite(o->s4[1]);
}
/* the block's own powers and signal statistic into r (sig_own, noise_own, vv_stat), its flags
 * that do not depend on the signal test into r->flags; returns the signal test of a full block
 * (the V&V line against the noise's and an input that varies) */
QPSK_HD int qpsk_ph_own(const qpsk_phase_in *in, qpsk_phase_out *r) {
  const qpsk_sums *o = &in->sums;
  qpsk_m2m4(o, &r->sig_own, &r->noise_own);
  /* signal present: the V&V line |sum y^4|^2 of the block against its mean without a signal,
   * which for complex Gaussian noise is n E|y|^8 = 6 (sum |y|^4)^2 / n: z is then an
   * exponential variable of mean 1, above 5 in 0.7 % of the blocks; a QPSK signal gives
   * z = (n / 6) (g^2 / (g^2 + 4 g + 2))^2 at Es/N0 = g (14 at 5 dB, 42 at 10 dB for n = 512).
   * A short block (the stream's last) keeps the previous block's decision (qpsk_ph_chain). */
  double z = 0;
  if (o->n > 0 && o->m4 > 0)
    z = o->n * (o->s4[0] * o->s4[0] + o->s4[1] * o->s4[1]) / (6 * o->m4 * o->m4);
  if (!isfinite(z)) z = 0;
  r->vv_stat = z;
  r->line = in->shape.line;
  /* the block's input varies (not zeros, not a constant: a constant makes constant symbols,
   * a perfect 4th-power line) */
  double var = in->mom_n > 0
                   ? in->mom[2] / in->mom_n - (in->mom[0] * in->mom[0] + in->mom[1] * in->mom[1]) /
                                                  (in->mom_n * in->mom_n)
                   : 0;
  int varies = var * in->gain * in->gain > 1e-2;
  r->flags = 0;
  if (in->shape.levels > 0 && in->shape.levels < QPSK_LEVELS_MAX) r->flags |= QPSK_BLK_LEVELS;
  if (in->shape.steps > QPSK_STEPS_MIN) r->flags |= QPSK_BLK_STEPS;
  if (in->out_range) r->flags |= PRX_QPSK_BLOCK_CLOCK_RANGE;
  if (in->nonfinite) r->flags |= PRX_QPSK_BLOCK_NONFINITE;
  return z > 5 && varies;
}
/* the M2M4 powers of the noise window win (sig, noise); 0 where nothing is measured yet (an
 * empty stream start: the caller keeps the last values) */
QPSK_HD int qpsk_ph_window(const qpsk_sums *win, double *sig, double *noise) {
  qpsk_m2m4(win, sig, noise);
  return *sig > 0 && *noise > 0 && isfinite(*sig) && isfinite(*noise);
}
/* The chained steps, block after block (q: the state so far; ph: qpsk_ph_vv's, cand:
 * qpsk_ph_own's, full: the block has at least L / 2 symbols, tjump: its timing residual beyond a
 * quarter symbol, wok/wsig/wnoise: qpsk_ph_window's): the phase unwrapped, the powers (or the
 * last ones), the signal test, the flags. */
QPSK_HD void qpsk_ph_chain(qpsk_phase_state *q, double ph, int cand, int full, int tjump, int wok,
                           double wsig, double wnoise, qpsk_phase_out *r) {
  if (isfinite(ph))
    r->phi = q->have ? q->phi_prev + qpsk_sr_wrap(ph - q->phi_prev, QPSK_SR_PI / 2) : ph;
  else /* no symbols, or non-finite input: keep the last estimate */
    r->phi = q->phi_prev;
  if (!wok) {
    wsig = q->sig_prev;
    wnoise = q->noise_prev;
  }
  q->sig_prev = wsig;
  q->noise_prev = wnoise;
  r->sig = wsig;
  r->noise = wnoise;
  int present = full || !q->have ? cand : q->present_prev;
  q->present_prev = present;
  if (!present) r->flags |= PRX_QPSK_BLOCK_NO_SIGNAL;
  if (present && tjump) r->flags |= PRX_QPSK_BLOCK_TIMING_JUMP;
  q->have = 1;
  q->phi_prev = r->phi;
}

/* One block of the pass (L: the block's nominal symbols): phase, noise, signal test, flags. */
QPSK_HD void qpsk_ph_block(unsigned L, qpsk_phase_state *q, const qpsk_phase_in *in,
                           qpsk_phase_out *r) {
  const qpsk_sums *o = &in->sums;
  const double ph = qpsk_ph_vv(L, q->have, o, &q->sums_prev);
  /* noise: M2M4 over this block and up to QPSK_NOISE_BLOCKS - 1 before it (blocks with
   * non-finite sums left out), summed in the ring's order */
  if (qpsk_ph_noise_ok(o)) {
    q->noise_ring[q->noise_count % QPSK_NOISE_BLOCKS] = *o;
    q->noise_count++;
  }
  qpsk_sums win = {{0, 0}, 0, 0, 0};
  unsigned nw = q->noise_count < QPSK_NOISE_BLOCKS ? q->noise_count : QPSK_NOISE_BLOCKS;
  for (unsigned i = 0; i < nw; i++) qpsk_sums_add(&win, &q->noise_ring[i]);
  double wsig, wnoise;
  const int wok = qpsk_ph_window(&win, &wsig, &wnoise);
  const int cand = qpsk_ph_own(in, r);
  qpsk_ph_chain(q, ph, cand, o->n >= 0.5 * L, fabs(in->tres) > 0.25, wok, wsig, wnoise, r);
  q->sums_prev = *o;
}

/* The block's link, NONE or DIFFERENTIAL (diff), after every block's qpsk_ph_block: *prev the
 * symbol before its first (DIFFERENTIAL), the chain moved to its last symbol (last, of n > 0);
 * returns its data symbols (all n). */
QPSK_HD unsigned qpsk_ph_link(int diff, qpsk_phase_state *q, int64_t n, prx_cf32 last,
                              const qpsk_phase_out *r, qpsk_diff_prev *prev) {
  if (diff) {
    *prev = q->dprev;
    if (n > 0)
      qpsk_diff_set(&q->dprev, last, qpsk_ph_rot(r->phi, r->sig), (float)(r->noise / r->sig));
  }
  return n > 0 ? (unsigned)n : 0u;
}

/* ---- the GPU's pass: one channel's span by a team of n lanes (a warp on the GPU, any n on the
 * host), in QPSK_PH_STEPS steps with the team synchronised between them; a block's independent
 * work (its V&V phase, powers, noise window, correction and differential link) by the lane that
 * owns it (block t: lane t mod n), the chained steps (the phase's unwrapping, the fallbacks,
 * the signal test, the output offsets) by lane 0, a few operations a block. ---- */

/* one block's scratch (shared memory on the GPU; nb <= QPSK_SR_MAXB blocks a span) */
typedef struct {
  double ph;              /* qpsk_ph_vv */
  double wsig, wnoise;    /* qpsk_ph_window */
  double phi, sig, noise; /* qpsk_ph_chain's */
  prx_cf32 last;          /* the block's last symbol */
  qpsk_diff_prev link;    /* DIFFERENTIAL: the chain after the block (blocks with symbols) */
  int n;                  /* its symbols */
  unsigned k;             /* the noise window's entries of the span up to this block */
  unsigned vblk;          /* the k-th such entry's block (entry k of the span at [k]) */
  unsigned flags;         /* qpsk_ph_own's flags (the chain adds its own to them) */
  float levels;           /* qpsk_ph_levels (the GPU's warp: qpsk_ph_levels_warp) */
  unsigned char ok, cand, full, tjump, wok, pad[3];
} qpsk_ph_scratch;
/* the channel's: the chain's state after the span (lane 0's) */
typedef struct {
  qpsk_phase_state q;
  int64_t out;
} qpsk_ph_tail;

/* the pass's arguments (the records as for the kernel, qpsk_serial.h's phase entry) */
typedef struct {
  unsigned L;
  int diff, first;
  size_t Lmax, nb;
  const double *sums, *mom;
  const unsigned *bad;
  const qpsk_serial_blk *tb;
  const qpsk_serial_span *sp;
  const prx_cf32 *sym;
  qpsk_phase_state *st;
  qpsk_phase_out *po;
  qpsk_out_block *ob;
  int64_t *off;
} qpsk_ph_args;

#define QPSK_PH_STEPS 6

QPSK_HD qpsk_sums qpsk_ph_sums_at(const double *s) {
  qpsk_sums r;
  r.s4[0] = s[0];
  r.s4[1] = s[1];
  r.m2 = s[2];
  r.m4 = s[3];
  r.n = s[4];
  return r;
}

/* the fields of the state that qpsk_ph_chain reads and writes, from s to d */
QPSK_HD void qpsk_ph_chain_fields(qpsk_phase_state *d, const qpsk_phase_state *s) {
  d->have = s->have;
  d->present_prev = s->present_prev;
  d->phi_prev = s->phi_prev;
  d->sig_prev = s->sig_prev;
  d->noise_prev = s->noise_prev;
}

/* Step `step` of channel c's pass by lane `lane` of n (scr: nb blocks, tl: the channel's) */
QPSK_HD void qpsk_ph_span_step(const qpsk_ph_args *a, size_t c, unsigned step, unsigned lane,
                               unsigned n, qpsk_ph_scratch *scr, qpsk_ph_tail *tl) {
  const size_t nb = a->nb, o = c * nb;
  const qpsk_phase_state *st = &a->st[c];
  switch (step) {
  case 0: /* per block: the V&V phase, the own powers and signal test, the last symbol */
#ifdef __CUDA_ARCH__
    /* the blocks' power levels by the whole warp (n = 32), QPSK_LEVEL_BLOCKS blocks at a time,
     * its lanes reading the symbols side by side; each kept by the block's lane */
    for (size_t t0 = 0; t0 < nb; t0 += QPSK_LEVEL_BLOCKS) {
      const prx_cf32 *y[QPSK_LEVEL_BLOCKS];
      int64_t k[QPSK_LEVEL_BLOCKS];
      for (int g = 0; g < QPSK_LEVEL_BLOCKS; g++) {
        const size_t t = t0 + g < nb ? t0 + g : t0;
        y[g] = a->sym + (o + t) * a->Lmax;
        k[g] = t0 + g < nb ? a->tb[o + t].k1 - a->tb[o + t].k0 : 0;
      }
      /* this lane's block among them, if any */
      const int mine = (int)((lane + n - t0 % n) % n);
      const float v = qpsk_ph_levels_warp(y, k, lane, mine);
      if (mine < QPSK_LEVEL_BLOCKS && t0 + mine < nb) scr[t0 + mine].levels = v;
    }
#endif
    for (size_t t = lane; t < nb; t += n) {
      qpsk_ph_scratch *b = &scr[t];
      const double *m = a->mom + 4 * (o + t);
      qpsk_phase_in in;
      in.sums = qpsk_ph_sums_at(a->sums + 5 * (o + t));
      in.mom[0] = m[0];
      in.mom[1] = m[1];
      in.mom[2] = m[2];
      in.mom_n = m[3];
      in.tres = a->tb[o + t].tres;
      in.gain = a->sp[c].gain;
      in.nonfinite = a->bad[o + t];
      in.out_range = a->sp[c].out_range;
      const int64_t k = a->tb[o + t].k1 - a->tb[o + t].k0;
#ifdef __CUDA_ARCH__
      in.shape.line = qpsk_ph_line(a->sym + (o + t) * a->Lmax, k, &in.shape.steps);
      in.shape.levels = b->levels;
#else
      in.shape = qpsk_shape_of(a->sym + (o + t) * a->Lmax, k);
#endif
      const qpsk_sums prev = t > 0 ? qpsk_ph_sums_at(a->sums + 5 * (o + t - 1)) : st->sums_prev;
      b->ph = qpsk_ph_vv(a->L, t > 0 || st->have, &in.sums, &prev);
      b->ok = (unsigned char)qpsk_ph_noise_ok(&in.sums);
      b->cand = (unsigned char)qpsk_ph_own(&in, &a->po[o + t]);
      b->flags = a->po[o + t].flags;
      b->full = in.sums.n >= 0.5 * a->L;
      b->tjump = fabs(in.tres) > 0.25;
      b->n = k > 0 ? (int)k : 0;
      b->last.re = b->last.im = 0;
      if (k > 0) b->last = a->sym[(o + t) * a->Lmax + (size_t)(k - 1)];
    }
    break;
  case 1: /* lane 0: the noise window's entries, counted and listed */
    if (lane == 0) {
      unsigned k = 0;
      for (size_t t = 0; t < nb; t++) {
        if (scr[t].ok) scr[k++].vblk = (unsigned)t;
        scr[t].k = k;
      }
    }
    break;
  case 2: /* per block: the noise window's sums in the ring's order (qpsk_ph_block's) */
    for (size_t t = lane; t < nb; t += n) {
      qpsk_ph_scratch *b = &scr[t];
      const unsigned k = b->k, cnt = st->noise_count + k;
      const unsigned nw = cnt < QPSK_NOISE_BLOCKS ? cnt : QPSK_NOISE_BLOCKS;
      qpsk_sums win = {{0, 0}, 0, 0, 0};
      for (unsigned i = 0; i < nw; i++) {
        /* ring slot i holds the latest entry of the stream's count cnt - 1 - d */
        const unsigned d = (cnt - 1 - i) % QPSK_NOISE_BLOCKS;
        if (d < k) {
          const qpsk_sums e = qpsk_ph_sums_at(a->sums + 5 * (o + scr[k - 1 - d].vblk));
          qpsk_sums_add(&win, &e);
        } else {
          qpsk_sums_add(&win, &st->noise_ring[i]);
        }
      }
      b->wok = (unsigned char)qpsk_ph_window(&win, &b->wsig, &b->wnoise);
    }
    break;
  case 3: /* lane 0: the chain, the output offsets */
    if (lane == 0) {
      /* the chain's fields in the lane's own copy (registers on the GPU), the state after the
       * span built in the channel's tail (shared memory on the GPU), where the noise ring's
       * entries go by a run-time slot */
      qpsk_phase_state q;
      qpsk_ph_chain_fields(&q, st);
      int64_t out = a->first ? 0 : a->off[c];
      for (size_t t = 0; t < nb; t++) {
        qpsk_ph_scratch *b = &scr[t];
        /* the chain's fields of the block's results in the lane's copy (its flags from the
         * scratch, not read back from the results in global memory), then stored */
        qpsk_phase_out r;
        r.flags = b->flags;
        qpsk_ph_chain(&q, b->ph, b->cand, b->full, b->tjump, b->wok, b->wsig, b->wnoise, &r);
        qpsk_phase_out *ro = &a->po[o + t];
        ro->phi = b->phi = r.phi;
        ro->sig = b->sig = r.sig;
        ro->noise = b->noise = r.noise;
        ro->flags = r.flags;
        a->ob[o + t].out0 = out;
        out += b->n;
      }
      qpsk_phase_state *tq = &tl->q;
      *tq = *st;
      qpsk_ph_chain_fields(tq, &q);
      /* the noise ring after the span: its last QPSK_NOISE_BLOCKS entries in their slots */
      const unsigned K = nb > 0 ? scr[nb - 1].k : 0;
      for (unsigned e = K > QPSK_NOISE_BLOCKS ? K - QPSK_NOISE_BLOCKS : 0; e < K; e++)
        tq->noise_ring[(tq->noise_count + e) % QPSK_NOISE_BLOCKS] =
            qpsk_ph_sums_at(a->sums + 5 * (o + scr[e].vblk));
      tq->noise_count += K;
      if (nb > 0) tq->sums_prev = qpsk_ph_sums_at(a->sums + 5 * (o + nb - 1));
      tl->out = out;
    }
    break;
  case 4: /* per block: the correction, the differential chain after the block */
    for (size_t t = lane; t < nb; t += n) {
      qpsk_ph_scratch *b = &scr[t];
      qpsk_out_block *ob = &a->ob[o + t];
      ob->rot = qpsk_ph_rot(b->phi, b->sig);
      ob->diff = a->diff;
      if (a->diff && b->n > 0)
        qpsk_diff_set(&b->link, b->last, ob->rot, (float)(b->noise / b->sig));
    }
    break;
  case 5: /* per block: the chain before the block (qpsk_ph_link's); lane 0: the state */
    for (size_t t = lane; t < nb; t += n) {
      unsigned quad = 0;
      if (a->diff) {
        size_t u = t;
        while (u > 0 && scr[u - 1].n == 0) u--;
        quad = u > 0 ? scr[u - 1].link.quad : st->dprev.quad;
      }
      a->ob[o + t].quad0 = quad;
    }
    if (lane == 0) {
      size_t u = nb;
      while (u > 0 && scr[u - 1].n == 0) u--;
      if (a->diff && u > 0) tl->q.dprev = scr[u - 1].link;
    }
    break;
  }
}
/* after the last step (lane 0): the state and the offset back (every lane has read them) */
QPSK_HD void qpsk_ph_span_end(const qpsk_ph_args *a, size_t c, const qpsk_ph_tail *tl) {
  a->st[c] = tl->q;
  a->off[c] = tl->out;
}

#ifdef __cplusplus
}
#endif

#endif
