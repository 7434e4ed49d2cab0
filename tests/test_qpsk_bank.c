/* The demodulator bank on the CPU backend: each channel's output (bits, LLRs, per-call block
 * estimates, stats) is identical to an independent prx_qpsk given that channel's row alone; the
 * output does not depend on the chunking, the thread count, the row stride or the bit packing;
 * cf16 rows give what their cf32 values give; the bits are the transmitted ones at high Es/N0;
 * bad configurations and capacities fail with a message and consume nothing. */
#include "qpsk/qpsk_bank_internal.h"
#include "qpsk/qpsk_est.h"
#include "test_qpsk_sig.h"

#include <string.h>

#define C_MAX 6

typedef struct {
  tcase tc[C_MAX];
  unsigned C;
  size_t n;            /* samples per channel */
  prx_cf32 *x[C_MAX];  /* each channel's samples */
  uint8_t *ref[C_MAX]; /* transmitted data bits */
  size_t nref[C_MAX];
} scene;

/* C carriers with random impairments at the given Es/N0 values, one per channel (cfo: their
 * CFOs in symbol rates, else random within the acquisition range) */
static int scene_make(scene *s, unsigned C, double sps, const double *esn0, const double *cfo,
                      size_t n_want, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->C = C;
  test_rng r;
  test_rng_seed(&r, seed);
  size_t n = n_want;
  for (unsigned c = 0; c < C; c++) {
    tcase *t = &s->tc[c];
    t->sps = sps;
    t->differential = 1;
    t->noise = 1;
    t->esn0_db = esn0[c];
    tcase_random(t, &r, 0.05, 200);
    if (cfo) t->cfo = cfo[c];
  }
  /* one capture length whose end is clear of every channel's symbol centres */
  for (;; n++) {
    int ok = 1;
    for (unsigned c = 0; c < C && ok; c++) ok = tcase_length(&s->tc[c], n) == n;
    if (ok) break;
  }
  s->n = n;
  for (unsigned c = 0; c < C; c++) {
    s->x[c] = tcase_make(&s->tc[c], n, &s->ref[c], &s->nref[c]);
    if (!s->x[c]) return -1;
  }
  return 0;
}

static void scene_free(scene *s) {
  for (unsigned c = 0; c < s->C; c++) {
    free(s->x[c]);
    free(s->ref[c]);
  }
}

/* one channel's whole output */
typedef struct {
  uint8_t *bits; /* unpacked, or packed bytes */
  float *llrs;
  size_t n_sym, n_bytes;
  prx_qpsk_stats stats;
} chan_out;

static void outs_free(chan_out *o, unsigned C) {
  for (unsigned c = 0; c < C; c++) {
    free(o[c].bits);
    free(o[c].llrs);
  }
}

static size_t next_chunk(test_rng *r, size_t left) {
  if (!r) return left;
  size_t m = 1 + (size_t)(test_rng_uniform(r) * 30000);
  if (test_rng_uniform(r) < 0.1) m = 0; /* empty calls too */
  return m < left ? m : left;
}

/* The reference: C independent prx_qpsk objects (one thread) fed the same chunks. */
static int run_reference(const scene *s, prx_qpsk_config qc, uint64_t chunk_seed, chan_out *o) {
  qc.threads = 1;
  qc.in_format = PRX_CF32;
  for (unsigned c = 0; c < s->C; c++) {
    prx_qpsk *q;
    if (prx_qpsk_create(&qc, &q)) return -1;
    size_t cap = prx_qpsk_max_symbols(q, s->n) + 8 * 1100;
    o[c].bits = malloc(2 * cap);
    o[c].llrs = malloc(2 * cap * sizeof(float));
    test_rng r;
    test_rng_seed(&r, chunk_seed);
    size_t tot = 0, got = 0;
    for (size_t i = 0; i < s->n;) {
      size_t m = next_chunk(chunk_seed ? &r : NULL, s->n - i);
      CHECK_OK(prx_qpsk_execute(q, s->x[c] + i, m, o[c].bits + 2 * tot, o[c].llrs + 2 * tot,
                                cap - tot, &got));
      tot += got;
      i += m;
    }
    CHECK_OK(prx_qpsk_flush(q, o[c].bits + 2 * tot, o[c].llrs + 2 * tot, cap - tot, &got));
    tot += got;
    o[c].n_sym = tot;
    o[c].n_bytes = 2 * tot;
    prx_qpsk_get_stats(q, &o[c].stats);
    prx_qpsk_destroy(q);
  }
  return 0;
}

static int blocks_equal(const prx_qpsk_block *a, const prx_qpsk_block *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const prx_qpsk_block *p = &a[i], *q = &b[i];
    if (p->index != q->index || p->first_symbol != q->first_symbol ||
        p->n_symbols != q->n_symbols || p->n_data != q->n_data || p->flags != q->flags ||
        p->nonfinite != q->nonfinite)
      return 0;
    /* identical arithmetic: bit-identical doubles (memcmp also equates NaN with NaN) */
    if (memcmp(&p->time, &q->time, sizeof p->time) || memcmp(&p->cfo, &q->cfo, sizeof p->cfo) ||
        memcmp(&p->phase, &q->phase, sizeof p->phase) ||
        memcmp(&p->timing, &q->timing, sizeof p->timing) ||
        memcmp(&p->clock_ppm, &q->clock_ppm, sizeof p->clock_ppm) ||
        memcmp(&p->esn0_db, &q->esn0_db, sizeof p->esn0_db) ||
        memcmp(&p->noise_var, &q->noise_var, sizeof p->noise_var) ||
        memcmp(&p->amplitude, &q->amplitude, sizeof p->amplitude) ||
        memcmp(&p->signal, &q->signal, sizeof p->signal))
      return 0;
  }
  return 1;
}

/* cf32 value of a cf16 row sample: the test's own rounding, through the compiler's _Float16 */
static void to_half(const prx_cf32 *x, size_t n, uint16_t *h, prx_cf32 *back) {
  for (size_t i = 0; i < n; i++) {
    _Float16 re = (_Float16)x[i].re, im = (_Float16)x[i].im;
    memcpy(&h[2 * i], &re, 2);
    memcpy(&h[2 * i + 1], &im, 2);
    back[i].re = (float)re;
    back[i].im = (float)im;
  }
}

typedef struct {
  int threads, packed, cf16, want_llrs;
  size_t pad;          /* row stride = n + pad */
  uint64_t chunk_seed; /* 0: one call */
} bank_run;

/* Runs the scene through a bank; when check_blocks, C lockstep prx_qpsk objects check every
 * call's block estimates. */
static int run_bank(const scene *s, prx_qpsk_config qc, const bank_run *br, chan_out *o,
                    int check_blocks) {
  unsigned C = s->C;
  size_t n = s->n, stride = n + br->pad, sz = br->cf16 ? 4 : 8;
  uint8_t *rows = calloc(C * stride, sz);
  if (!rows) return -1;
  prx_cf32 *tmp = malloc(n * sizeof *tmp);
  for (unsigned c = 0; c < C; c++) {
    if (br->cf16)
      to_half(s->x[c], n, (uint16_t *)rows + 2 * (size_t)c * stride, tmp);
    else
      memcpy(rows + (size_t)c * stride * sz, s->x[c], n * sz);
  }
  free(tmp);
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = qc;
  bc.channels = C;
  bc.row_format = br->cf16 ? PRX_CF16 : PRX_CF32;
  bc.packed = br->packed;
  bc.threads = br->threads;
  bc.backend = PRX_BACKEND_CPU;
  prx_qpsk_bank *b;
  prx_status st = prx_qpsk_bank_create(&bc, &b);
  CHECK(st == PRX_OK, "bank create: %s", prx_last_error());
  if (st) {
    free(rows);
    return -1;
  }
  CHECK(prx_qpsk_bank_backend(b) == PRX_BACKEND_CPU && prx_qpsk_bank_channels(b) == C,
        "backend/channels");
  prx_qpsk *lock[C_MAX] = {0};
  if (check_blocks) {
    prx_qpsk_config lc = qc;
    lc.threads = 1;
    lc.in_format = PRX_CF32;
    for (unsigned c = 0; c < C; c++) CHECK_OK(prx_qpsk_create(&lc, &lock[c]));
  }
  size_t cap = prx_qpsk_bank_max_symbols(b, n, 0) + 8 * 1100; /* symbols over the stream */
  size_t call_cap = prx_qpsk_bank_max_symbols(b, n, 0) + 4 * 1100;
  size_t bstride = 2 * call_cap + 16, lstride = 2 * call_cap;
  uint8_t *cb = malloc(C * bstride), *lb = malloc(2 * call_cap);
  float *cl = br->want_llrs ? malloc(C * lstride * sizeof(float)) : NULL;
  float *ll = malloc(2 * call_cap * sizeof(float));
  size_t ns[C_MAX], nb[C_MAX];
  for (unsigned c = 0; c < C; c++) {
    o[c].bits = malloc(2 * cap);
    o[c].llrs = br->want_llrs ? malloc(2 * cap * sizeof(float)) : NULL;
    o[c].n_sym = o[c].n_bytes = 0;
  }
  prx_qpsk_bank_out out = {cb, bstride, cl, lstride, ns, nb};
  test_rng r;
  test_rng_seed(&r, br->chunk_seed);
  for (size_t i = 0;;) {
    int flush = i >= n;
    size_t m = flush ? 0 : next_chunk(br->chunk_seed ? &r : NULL, n - i);
    st = flush ? prx_qpsk_bank_flush(b, &out)
               : prx_qpsk_bank_execute(b, rows + i * sz, stride, m, &out);
    CHECK(st == PRX_OK, "bank call: %s", prx_last_error());
    if (st) break;
    for (unsigned c = 0; c < C; c++) {
      CHECK(br->packed || nb[c] == 2 * ns[c], "unpacked byte count");
      memcpy(o[c].bits + o[c].n_bytes, cb + c * bstride, nb[c]);
      if (cl) memcpy(o[c].llrs + 2 * o[c].n_sym, cl + c * lstride, 2 * ns[c] * sizeof(float));
      o[c].n_sym += ns[c];
      o[c].n_bytes += nb[c];
      if (check_blocks) {
        size_t got = 0, na, nr;
        if (flush)
          CHECK_OK(prx_qpsk_flush(lock[c], lb, ll, call_cap, &got));
        else
          CHECK_OK(prx_qpsk_execute(lock[c], s->x[c] + i, m, lb, ll, call_cap, &got));
        CHECK(got == ns[c], "channel %u: %zu symbols, lockstep object %zu", c, ns[c], got);
        const prx_qpsk_block *ba = prx_qpsk_bank_block_estimates(b, c, &na);
        const prx_qpsk_block *bb = prx_qpsk_block_estimates(lock[c], &nr);
        CHECK(na == nr && blocks_equal(ba, bb, na),
              "channel %u: block estimates differ from the lockstep object (%zu vs %zu)", c, na,
              nr);
      }
    }
    if (flush) break;
    i += m;
  }
  for (unsigned c = 0; c < C; c++) CHECK_OK(prx_qpsk_bank_get_stats(b, c, &o[c].stats));
  for (unsigned c = 0; c < C; c++) prx_qpsk_destroy(lock[c]);
  prx_qpsk_bank_destroy(b);
  free(rows);
  free(cb);
  free(lb);
  free(cl);
  free(ll);
  return st ? -1 : 0;
}

static int stats_equal(const prx_qpsk_stats *a, const prx_qpsk_stats *b) {
  return a->samples == b->samples && a->symbols == b->symbols &&
         a->data_symbols == b->data_symbols && a->blocks == b->blocks &&
         a->blocks_no_signal == b->blocks_no_signal && a->nonfinite == b->nonfinite &&
         a->warnings == b->warnings && !memcmp(&a->esn0_db, &b->esn0_db, sizeof a->esn0_db) &&
         !memcmp(&a->cfo_hz, &b->cfo_hz, sizeof a->cfo_hz) &&
         !memcmp(&a->clock_ppm, &b->clock_ppm, sizeof a->clock_ppm);
}

/* packs unpacked bits MSB first, the last byte padded with zeros */
static size_t pack_ref(const uint8_t *bits, size_t n, uint8_t *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i += 8) {
    unsigned v = 0;
    for (size_t k = 0; k < 8; k++) v = (v << 1) | (i + k < n ? bits[i + k] : 0u);
    out[m++] = (uint8_t)v;
  }
  return m;
}

static void test_against_independent(void) {
  const double esn0[C_MAX] = {15, 12, 8, 5, 20, 10};
  scene s;
  CHECK(scene_make(&s, C_MAX, 4, esn0, NULL, 48000, 11) == 0, "scene");
  prx_qpsk_config qc = tcase_demod_config(&s.tc[0], 1);
  chan_out ref[C_MAX] = {0}, whole[C_MAX] = {0}, got[C_MAX] = {0}, pk[C_MAX] = {0};
  run_reference(&s, qc, 0, whole);
  run_reference(&s, qc, 7, ref);
  bank_run br = {3, 0, 0, 1, 37, 7};
  run_bank(&s, qc, &br, got, 1);
  bank_run bp = {2, 1, 0, 0, 0, 99};
  run_bank(&s, qc, &bp, pk, 0);
  uint8_t *packed = malloc(s.n);
  for (unsigned c = 0; c < s.C; c++) {
    CHECK(got[c].n_sym == ref[c].n_sym && got[c].n_sym == whole[c].n_sym,
          "channel %u: %zu symbols, independent %zu, one call %zu", c, got[c].n_sym, ref[c].n_sym,
          whole[c].n_sym);
    if (got[c].n_sym != ref[c].n_sym || ref[c].n_sym != whole[c].n_sym) continue;
    CHECK(!memcmp(got[c].bits, ref[c].bits, 2 * ref[c].n_sym), "channel %u: bits differ", c);
    CHECK(!memcmp(got[c].llrs, ref[c].llrs, 2 * ref[c].n_sym * sizeof(float)),
          "channel %u: LLRs differ", c);
    CHECK(!memcmp(whole[c].bits, ref[c].bits, 2 * ref[c].n_sym),
          "channel %u: chunked bits differ from one call", c);
    CHECK(stats_equal(&got[c].stats, &ref[c].stats), "channel %u: stats differ", c);
    size_t np = pack_ref(ref[c].bits, 2 * ref[c].n_sym, packed);
    CHECK(pk[c].n_bytes == np && !memcmp(pk[c].bits, packed, np),
          "channel %u: packed output (%zu bytes) is not the packed bits (%zu)", c, pk[c].n_bytes,
          np);
    /* and it is the signal: every symbol, no error at 15 dB and above, and elsewhere within
     * three times differential QPSK's theoretical BER 2 Q(sqrt(Es/N0)) plus 10 */
    long e = tcase_errors(&s.tc[c], got[c].bits, 2 * got[c].n_sym, s.ref[c], s.nref[c]);
    CHECK(e >= 0, "channel %u: %zu bits, %zu transmitted", c, 2 * got[c].n_sym, s.nref[c]);
    double theory = 2 * tcase_qfunc(sqrt(pow(10, esn0[c] / 10))) * (double)s.nref[c];
    if (esn0[c] >= 15) CHECK(e == 0, "channel %u at %g dB: %ld bit errors", c, esn0[c], e);
    CHECK(e <= 3 * theory + 10, "channel %u at %g dB: %ld bit errors, theory %.1f", c, esn0[c], e,
          theory);
  }
  free(packed);
  outs_free(ref, s.C);
  outs_free(whole, s.C);
  outs_free(got, s.C);
  outs_free(pk, s.C);
  scene_free(&s);
}

/* The CFO alias test (qpsk_alias.c) in a bank's channels as in prx_qpsk: carriers beyond the
 * acquisition range (0.12 Rs), whose 4th-power lines alias into it, raise cfo_alias in their own
 * channels only, the summaries those of independent demodulators (chunked calls, cf16 rows) */
static void test_alias(void) {
  const double esn0[4] = {12, 12, 12, 6}, cfo[4] = {0.05, 0.3, -0.2, -0.45};
  scene s;
  CHECK(scene_make(&s, 4, 4, esn0, cfo, 50000, 41) == 0, "scene");
  prx_qpsk_config qc = tcase_demod_config(&s.tc[0], 1);
  chan_out ref[4] = {0}, got[4] = {0}, half[4] = {0};
  run_reference(&s, qc, 5, ref);
  bank_run br = {2, 0, 0, 0, 3, 17};
  run_bank(&s, qc, &br, got, 0);
  bank_run bh = {2, 0, 1, 0, 0, 29};
  run_bank(&s, qc, &bh, half, 0);
  for (unsigned c = 0; c < s.C; c++) {
    const unsigned want = c ? PRX_QPSK_WARN_CFO_ALIAS : 0;
    /* (an aliased carrier's timing line may be lost too: symbol_rate beside it) */
    CHECK(c ? (ref[c].stats.warnings & want) == want : ref[c].stats.warnings == 0,
          "carrier at %+g Rs: prx_qpsk's warnings %#x", cfo[c], ref[c].stats.warnings);
    CHECK(stats_equal(&got[c].stats, &ref[c].stats),
          "carrier at %+g Rs: the bank's warnings %#x, "
          "prx_qpsk's %#x",
          cfo[c], got[c].stats.warnings, ref[c].stats.warnings);
    CHECK((half[c].stats.warnings & PRX_QPSK_WARN_CFO_ALIAS) == want,
          "carrier at %+g Rs, cf16 rows: warnings %#x", cfo[c], half[c].stats.warnings);
  }
  outs_free(ref, s.C);
  outs_free(got, s.C);
  outs_free(half, s.C);
  scene_free(&s);
}

/* sps 16/3 (2400 Bd in 12.8 kHz), cf16 rows, one thread and all cores */
static void test_cf16_and_threads(void) {
  const double esn0[3] = {15, 9, 18};
  scene s;
  CHECK(scene_make(&s, 3, 16.0 / 3, esn0, NULL, 60000, 23) == 0, "scene");
  /* the reference sees the cf32 values of the cf16 samples */
  uint16_t *h = malloc(s.n * 4);
  for (unsigned c = 0; c < s.C; c++) to_half(s.x[c], s.n, h, s.x[c]);
  free(h);
  prx_qpsk_config qc = tcase_demod_config(&s.tc[0], 1);
  chan_out ref[3] = {0}, a[3] = {0}, b[3] = {0};
  run_reference(&s, qc, 0, ref);
  bank_run r1 = {1, 0, 1, 1, 5, 3};
  bank_run r0 = {0, 0, 1, 1, 0, 5};
  run_bank(&s, qc, &r1, a, 0);
  run_bank(&s, qc, &r0, b, 0);
  for (unsigned c = 0; c < s.C; c++) {
    CHECK(a[c].n_sym == ref[c].n_sym && b[c].n_sym == ref[c].n_sym,
          "cf16 channel %u: %zu / %zu symbols, reference %zu", c, a[c].n_sym, b[c].n_sym,
          ref[c].n_sym);
    if (a[c].n_sym != ref[c].n_sym || b[c].n_sym != ref[c].n_sym) continue;
    CHECK(!memcmp(a[c].bits, ref[c].bits, 2 * ref[c].n_sym) &&
              !memcmp(b[c].bits, ref[c].bits, 2 * ref[c].n_sym),
          "cf16 channel %u: bits differ", c);
    CHECK(!memcmp(a[c].llrs, ref[c].llrs, 2 * ref[c].n_sym * sizeof(float)) &&
              !memcmp(b[c].llrs, ref[c].llrs, 2 * ref[c].n_sym * sizeof(float)),
          "cf16 channel %u: LLRs differ", c);
    long e = tcase_errors(&s.tc[c], a[c].bits, 2 * a[c].n_sym, s.ref[c], s.nref[c]);
    if (esn0[c] >= 15) CHECK(e == 0, "cf16 channel %u at %g dB: %ld bit errors", c, esn0[c], e);
  }
  outs_free(ref, s.C);
  outs_free(a, s.C);
  outs_free(b, s.C);
  scene_free(&s);
}

/* every binary16 value against the compiler's conversion */
static void test_half(void) {
  int bad = 0;
  for (uint32_t v = 0; v < 65536; v++) {
    uint16_t u = (uint16_t)v;
    _Float16 f;
    memcpy(&f, &u, 2);
    float want = (float)f, got = prx_half_to_float(u);
    if (memcmp(&want, &got, 4) && !(want != want && got != got)) bad++;
  }
  CHECK(bad == 0, "%d binary16 values convert wrongly", bad);
}

/* The CFO peak kernel's twiddle argument (qpsk_twiddle_arg_pow2) against qpsk_dft_twiddle's,
 * 2 ((m t) mod nfft) / nfft in int64 and double rounded to float, bit for bit: random m < nfft
 * and t below 2^20 for every power of two nfft up to 2^31, and the largest m and t. */
static void test_twiddle_arg(void) {
  test_rng r;
  test_rng_seed(&r, 2026120111);
  int bad = 0;
  for (int k = 1; k <= 31; k++) {
    const uint32_t nfft = (uint32_t)1 << k;
    for (int i = 0; i < 4000; i++) {
      uint32_t m = (uint32_t)(test_rng_u64(&r) & (nfft - 1)),
               t = (uint32_t)(test_rng_u64(&r) >> 44);
      if (i == 0) m = nfft - 1, t = (1u << 20) - 1;
      const int64_t rr = ((int64_t)m * (int64_t)t) % (int64_t)nfft;
      const float want = (float)(2.0 * (double)rr / (double)nfft);
      const float got = qpsk_twiddle_arg_pow2(m, t, nfft);
      if (memcmp(&want, &got, sizeof got)) bad++;
    }
  }
  CHECK(bad == 0, "%d twiddle arguments differ from qpsk_dft_twiddle's", bad);
}

static void test_bad(void) {
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod.sample_rate = 4000;
  bc.demod.symbol_rate = 1000;
  bc.backend = PRX_BACKEND_CPU;
  bc.threads = 2;
  prx_qpsk_bank *b = NULL;
  prx_qpsk_bank_config t = bc;
  t.channels = 0;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID && !b, "0 channels accepted");
  t.channels = PRX_QPSK_BANK_MAX_CHANNELS + 1;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID && !b, "too many channels accepted");
  t = bc;
  t.row_format = (prx_format)77;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID, "unknown row format accepted");
  t = bc;
  t.packed = 2;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID, "packed = 2 accepted");
  t = bc;
  t.demod.symbol_rate = 0;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID && strstr(prx_last_error(), "symbol rate"),
        "symbol rate 0: '%s'", prx_last_error());
  t = bc;
  t.threads = -1;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID, "threads -1 accepted");
  t = bc;
  t.backend = (prx_backend)9;
  CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_INVALID, "unknown backend accepted");
  CHECK(prx_qpsk_bank_create(NULL, &b) == PRX_ERR_INVALID, "NULL config accepted");
  if (!prx_cuda_available()) {
    t = bc;
    t.backend = PRX_BACKEND_CUDA;
    CHECK(prx_qpsk_bank_create(&t, &b) == PRX_ERR_NODEVICE && !b,
          "CUDA without a device: not PRX_ERR_NODEVICE");
  }

  bc.channels = 3;
  CHECK_OK(prx_qpsk_bank_create(&bc, &b));
  if (!b) return;
  size_t n = 40000, ns[3], nb[3];
  prx_cf32 *x = calloc(3 * n, sizeof *x);
  test_rng r;
  test_rng_seed(&r, 5);
  test_fill_cf32(&r, x, 3 * n, 1);
  size_t need = prx_qpsk_bank_bits_capacity(b, n, 0);
  CHECK(need > 0, "40000 samples at sps 4 complete a span");
  uint8_t *bits = malloc(3 * need);
  prx_qpsk_bank_out o = {bits, need - 1, NULL, 0, ns, nb};
  CHECK(prx_qpsk_bank_execute(b, x, n, n, &o) == PRX_ERR_CAPACITY, "small bits_stride accepted");
  prx_qpsk_stats st;
  CHECK_OK(prx_qpsk_bank_get_stats(b, 1, &st));
  CHECK(st.samples == 0, "a refused call consumed %llu samples", (unsigned long long)st.samples);
  o.bits_stride = need;
  o.n_symbols = NULL;
  CHECK(prx_qpsk_bank_execute(b, x, n, n, &o) == PRX_ERR_INVALID, "NULL n_symbols accepted");
  o.n_symbols = ns;
  CHECK(prx_qpsk_bank_execute(b, x, n - 1, n, &o) == PRX_ERR_INVALID, "stride < n_in accepted");
  CHECK(prx_qpsk_bank_execute(b, NULL, n, n, &o) == PRX_ERR_INVALID, "NULL input accepted");
  o.llrs = (float *)bits;
  o.llr_stride = 1;
  CHECK(prx_qpsk_bank_execute(b, x, n, n, &o) == PRX_ERR_CAPACITY, "small llr_stride accepted");
  o.llrs = NULL;
  CHECK(prx_qpsk_bank_execute_device(b, x, n, n, &o, NULL) == PRX_ERR_UNSUPPORTED,
        "device call on the CPU backend");
  CHECK(prx_qpsk_bank_execute_device_kept(b, x, n, n, 0, 0, &o, NULL) == PRX_ERR_UNSUPPORTED &&
            prx_qpsk_bank_history(b) == 0,
        "device call with the history in the rows on the CPU backend");
  CHECK(prx_qpsk_bank_get_stats(b, 3, &st) == PRX_ERR_INVALID, "stats of channel 3 of 3");
  size_t nbl = 9;
  CHECK(prx_qpsk_bank_block_estimates(b, 3, &nbl) == NULL && nbl == 0, "estimates of channel 3");
  CHECK_OK(prx_qpsk_bank_execute(b, x, n, n, &o));
  CHECK(ns[0] > 0 && nb[0] == 2 * ns[0], "a full call writes symbols");
  prx_qpsk_bank_reset(b);
  CHECK_OK(prx_qpsk_bank_get_stats(b, 0, &st));
  CHECK(st.samples == 0, "reset keeps the stats");
  prx_qpsk_bank_destroy(b);
  prx_qpsk_bank_destroy(NULL);
  free(x);
  free(bits);
}

/* a flush ends each channel's stream on a byte: the same rows streamed twice through one packed
 * bank (flush between, and a flush without bits before) give the same bytes twice */
static void test_streams_in_sequence(void) {
  const double esn0[2] = {20, 20};
  scene s;
  /* a length that leaves a partial byte in some channel */
  for (size_t n_want = 41001;; n_want += 5) {
    CHECK(scene_make(&s, 2, 4, esn0, NULL, n_want, 31) == 0, "scene");
    if (s.nref[0] % 8 || s.nref[1] % 8 || n_want > 42000) break;
    scene_free(&s);
  }
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = tcase_demod_config(&s.tc[0], 1);
  bc.channels = 2;
  bc.packed = 1;
  bc.threads = 2;
  bc.backend = PRX_BACKEND_CPU;
  prx_qpsk_bank *b = NULL;
  CHECK_OK(prx_qpsk_bank_create(&bc, &b));
  if (!b) return;
  prx_cf32 *rows = malloc(2 * s.n * sizeof *rows);
  memcpy(rows, s.x[0], s.n * sizeof *rows);
  memcpy(rows + s.n, s.x[1], s.n * sizeof *rows);
  size_t cap = prx_qpsk_bank_bits_capacity(b, s.n, 0) + 4096, ns[2], nb[2], tot[2][2] = {{0}};
  uint8_t *buf = malloc(2 * cap), *got[2][2];
  for (int k = 0; k < 2; k++)
    for (int c = 0; c < 2; c++) got[k][c] = malloc(cap);
  prx_qpsk_bank_out o = {buf, cap, NULL, 0, ns, nb}, none = {NULL, 0, NULL, 0, ns, nb};
  /* a stream whose bits are not wanted, ended by a flush without bits */
  CHECK_OK(prx_qpsk_bank_execute(b, rows, s.n, 1001, &o));
  CHECK_OK(prx_qpsk_bank_execute(b, rows + 1001, s.n, s.n - 1001, &o));
  CHECK_OK(prx_qpsk_bank_flush(b, &none));
  for (int k = 0; k < 2; k++) {
    CHECK_OK(prx_qpsk_bank_execute(b, rows, s.n, s.n, &o));
    for (int c = 0; c < 2; c++) {
      memcpy(got[k][c] + tot[k][c], buf + c * cap, nb[c]);
      tot[k][c] += nb[c];
    }
    CHECK_OK(prx_qpsk_bank_flush(b, &o));
    for (int c = 0; c < 2; c++) {
      memcpy(got[k][c] + tot[k][c], buf + c * cap, nb[c]);
      tot[k][c] += nb[c];
    }
  }
  for (int c = 0; c < 2; c++) {
    CHECK(tot[0][c] == (s.nref[c] + 7) / 8, "channel %d: %zu bytes for %zu bits", c, tot[0][c],
          s.nref[c]);
    CHECK(tot[0][c] == tot[1][c] && !memcmp(got[0][c], got[1][c], tot[0][c]),
          "channel %d: the second stream differs from the first", c);
  }
  CHECK(s.nref[0] % 8 != 0 || s.nref[1] % 8 != 0, "the case should leave a partial byte");
  for (int k = 0; k < 2; k++)
    for (int c = 0; c < 2; c++) free(got[k][c]);
  free(buf);
  free(rows);
  prx_qpsk_bank_destroy(b);
  scene_free(&s);
}

int main(void) {
  test_half();
  test_twiddle_arg();
  test_bad();
  test_against_independent();
  test_alias();
  test_cf16_and_threads();
  test_streams_in_sequence();
  return test_finish("test_qpsk_bank");
}
