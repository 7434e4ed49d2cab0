/* The phase pass of one channel's span over plain records, written once for the host and the GPU
 * (__host__ __device__): per block the V&V phase unwrapped across blocks, the M2M4 signal and
 * noise over the noise window, the signal test and the block flags; then per block the output
 * offsets and, DIFFERENTIAL, the link of the differential chain (the symbol before the block's
 * first). The CPU's qpsk_serial_phase (qpsk_batch.c) runs these steps on its blocks (PILOTS adds
 * its frame acquisition, DC share and tags there, on the CPU only); the bank's driver runs
 * qpsk_ph_span_ch on the GPU, one thread per channel (qpsk_serial_cuda.cu), and the out stage
 * reads the decisions' records it leaves on the device.
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

/* one block's inputs: its V&V sums (stage mf), input sums (pre), timing residual (the timing
 * pass) and its span's gain and clock flag */
typedef struct {
  qpsk_sums sums;
  double mom[3], mom_n;
  double tres, gain;
  unsigned nonfinite;
  int out_range;
} qpsk_phase_in;

/* one block's results (qpsk_blk's fields of the same names) */
typedef struct qpsk_phase_out {
  double phi, sig, noise, sig_own, noise_own, vv_stat;
  unsigned flags, pad;
} qpsk_phase_out;

/* the block's results into its qpsk_blk (the host's: the CPU's pass, the driver's pending spans) */
static inline void qpsk_ph_to_blk(const qpsk_phase_out *r, qpsk_blk *bk) {
  bk->phi = r->phi;
  bk->sig = r->sig;
  bk->noise = r->noise;
  bk->sig_own = r->sig_own;
  bk->noise_own = r->noise_own;
  bk->vv_stat = r->vv_stat;
  bk->flags = r->flags;
}

/* the block's correction exp(-j phi) / amplitude (the out stage's, qpsk_batch.c block_rot) */
QPSK_HD prx_cf32 qpsk_ph_rot(double phi, double sig) {
  prx_cf32 r = {(float)cos(-phi), (float)sin(-phi)};
  float g = (float)(1.0 / sqrt(sig));
  r.re *= g;
  r.im *= g;
  return r;
}

/* One block of the pass (L: the block's nominal symbols): phase, noise, signal test, flags. */
QPSK_HD void qpsk_ph_block(unsigned L, qpsk_phase_state *q, const qpsk_phase_in *in,
                           qpsk_phase_out *r) {
  qpsk_sums s = in->sums;
  if (s.n < 0.5 * L && q->have) qpsk_sums_add(&s, &q->sums_prev);
  double ph = s.n > 0 ? qpsk_vv_phase(&s) : NAN;
  if (isfinite(ph))
    r->phi = q->have ? q->phi_prev + qpsk_sr_wrap(ph - q->phi_prev, QPSK_SR_PI / 2) : ph;
  else /* no symbols, or non-finite input: keep the last estimate */
    r->phi = q->phi_prev;
  /* noise: M2M4 over this block and up to QPSK_NOISE_BLOCKS - 1 before it (blocks with
   * non-finite sums left out) */
  const qpsk_sums *o = &in->sums;
  if (isfinite(o->m4) && isfinite(o->s4[0]) && isfinite(o->s4[1])) {
    q->noise_ring[q->noise_count % QPSK_NOISE_BLOCKS] = *o;
    q->noise_count++;
  }
  qpsk_sums win = {{0, 0}, 0, 0, 0};
  unsigned nw = q->noise_count < QPSK_NOISE_BLOCKS ? q->noise_count : QPSK_NOISE_BLOCKS;
  for (unsigned i = 0; i < nw; i++) qpsk_sums_add(&win, &q->noise_ring[i]);
  double sig, noise;
  qpsk_m2m4(&win, &sig, &noise);
  if (!(sig > 0 && noise > 0 && isfinite(sig) && isfinite(noise))) {
    /* nothing measured yet (an empty stream start): the last values, or neutral ones */
    sig = q->sig_prev;
    noise = q->noise_prev;
  }
  q->sig_prev = sig;
  q->noise_prev = noise;
  r->sig = sig;
  r->noise = noise;
  qpsk_m2m4(o, &r->sig_own, &r->noise_own);
  /* signal present: the V&V line |sum y^4|^2 of the block against its mean without a signal,
   * which for complex Gaussian noise is n E|y|^8 = 6 (sum |y|^4)^2 / n: z is then an
   * exponential variable of mean 1, above 5 in 0.7 % of the blocks; a QPSK signal gives
   * z = (n / 6) (g^2 / (g^2 + 4 g + 2))^2 at Es/N0 = g (14 at 5 dB, 42 at 10 dB for n = 512).
   * A short block (the stream's last) keeps the previous block's decision. */
  double z = 0;
  if (o->n > 0 && o->m4 > 0)
    z = o->n * (o->s4[0] * o->s4[0] + o->s4[1] * o->s4[1]) / (6 * o->m4 * o->m4);
  if (!isfinite(z)) z = 0;
  r->vv_stat = z;
  /* the block's input varies (not zeros, not a constant: a constant makes constant symbols,
   * a perfect 4th-power line) */
  double var = in->mom_n > 0
                   ? in->mom[2] / in->mom_n - (in->mom[0] * in->mom[0] + in->mom[1] * in->mom[1]) /
                                                  (in->mom_n * in->mom_n)
                   : 0;
  int varies = var * in->gain * in->gain > 1e-2;
  int present = o->n >= 0.5 * L || !q->have ? z > 5 && varies : q->present_prev;
  q->present_prev = present;
  r->flags = 0;
  if (!present) r->flags |= PRX_QPSK_BLOCK_NO_SIGNAL;
  if (in->out_range) r->flags |= PRX_QPSK_BLOCK_CLOCK_RANGE;
  if (present && fabs(in->tres) > 0.25) r->flags |= PRX_QPSK_BLOCK_TIMING_JUMP;
  if (in->nonfinite) r->flags |= PRX_QPSK_BLOCK_NONFINITE;
  q->have = 1;
  q->phi_prev = r->phi;
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

/* One channel's thread of the GPU pass (C channels of nb blocks, channel c's block j at
 * c nb + j): the inputs from the stages' and the passes' records (sums: mf's 5 per block, mom:
 * pre's 4 per block, bad: its non-finite counts, tb and sp: the timing pass's, sym: Lmax symbols
 * per block), the results per block (po) and the out stage's records (ob: the correction, the
 * chain's quadrant, the first output symbol from the channel's count so far, off[c], which
 * starts again at 0 where first is set), the state carried in st[c]. */
QPSK_HD void qpsk_ph_span_ch(unsigned L, size_t Lmax, size_t c, size_t nb, int diff, int first,
                             const double *sums, const double *mom, const unsigned *bad,
                             const qpsk_serial_blk *tb, const qpsk_serial_span *sp,
                             const prx_cf32 *sym, qpsk_phase_state *st, qpsk_phase_out *po,
                             qpsk_out_block *ob, int64_t *off) {
  qpsk_phase_state q = st[c];
  const size_t o = c * nb;
  for (size_t j = 0; j < nb; j++) {
    const double *s = sums + 5 * (o + j), *m = mom + 4 * (o + j);
    qpsk_phase_in in;
    in.sums.s4[0] = s[0];
    in.sums.s4[1] = s[1];
    in.sums.m2 = s[2];
    in.sums.m4 = s[3];
    in.sums.n = s[4];
    in.mom[0] = m[0];
    in.mom[1] = m[1];
    in.mom[2] = m[2];
    in.mom_n = m[3];
    in.tres = tb[o + j].tres;
    in.gain = sp[c].gain;
    in.nonfinite = bad[o + j];
    in.out_range = sp[c].out_range;
    qpsk_ph_block(L, &q, &in, &po[o + j]);
  }
  int64_t out = first ? 0 : off[c];
  for (size_t j = 0; j < nb; j++) {
    const qpsk_phase_out *r = &po[o + j];
    const int64_t n = tb[o + j].k1 - tb[o + j].k0;
    prx_cf32 last = {0, 0};
    if (n > 0) last = sym[(o + j) * Lmax + (size_t)(n - 1)];
    qpsk_diff_prev prev = {0, {0, 0, 0, 0}};
    const unsigned data = qpsk_ph_link(diff, &q, n, last, r, &prev);
    qpsk_out_block *b = &ob[o + j];
    b->rot = qpsk_ph_rot(r->phi, r->sig);
    b->quad0 = prev.quad;
    b->diff = diff;
    b->out0 = out;
    out += data;
  }
  off[c] = out;
  st[c] = q;
}

#ifdef __cplusplus
}
#endif

#endif
