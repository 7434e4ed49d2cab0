/* The demodulator bank's CUDA backend (the stage kernels under the stage-major driver) against
 * the CPU bank on the same rows: identical bits at Es/N0 >= 12 dB and at least 99.99 % identical
 * bits at 4..11 dB, LLRs within 1e-4 relative (L2), block estimates within their tolerances
 * (documented: docs/ARCHITECTURE.md, "Demodulator bank"; the measured differences printed),
 * differential QPSK's BER bounds (issue 10's at Eb/N0 4, 6 and 8 dB, and 3x theory + 10 errors
 * elsewhere), the same output for random chunkings of the calls; device calls with bits only (the
 * out kernel writes them in place) and with LLRs (symbols back to the host), host calls on the CUDA
 * backend, cf32 and cf16 rows with a pitch, packed bits, sps 4 and 16/3, mix_hz; and the rows past
 * each channel's output left untouched (poisoned before the run). The driver runs the level,
 * timing and NCO passes on the GPU (the default; one run with them on the CPU between the
 * kernels, where calls of several spans run the next span's pre ahead on the driver's second
 * stream); one run with the om stage apart from pre. The receiver's calls (device rows holding
 * the bank's history, the stream's last samples in the flush's call, its end held and made
 * beside the bits' copy) after a stream of another length so ended and after a stream cut short
 * by a reset: the same outputs as the CPU bank's on the stream alone. Pilots (64:8) with issue 10's
 * flags: a channel at 7000 ppm (beyond the supported clock range) and one without a carrier, every
 * block's flags equal to the CPU bank's, the flags present; the same channels differential with
 * bits only, the flags then from the phase pass on the GPU. The phase pass runs on the GPU wherever
 * the GPU decides the bits (bits only, serial passes on the GPU: checked), on the CPU where the
 * symbols go back (LLRs, packed bits, pilots).
 *
 * Es/N0 0 dB near the band edge: the spans' coherent timing line on the GPU (compare_low).
 *
 * --quick: the reduced set the sanitizers run (one chunked device run with bits, one with LLRs);
 * --low: the 0 dB case alone.
 * Skips (exit 77) without a usable CUDA device. */
#include "test_qpsk_bank_rows.h"

#include <string.h>

#ifdef PRX_HAVE_CUDA
#include "qpsk/qpsk_bank_internal.h"

#include <cuda_runtime_api.h>

#define C 8

/* channels 1-3 at Eb/N0 4, 6 and 8 dB (issue 10's DE-QPSK thresholds below) */
static const double esn0[C] = {5, 7.0103, 9.0103, 11.0103, 12, 14, 18, 25};
static const double ber_max[C] = {0, 2.90e-2, 6.09e-3, 5.57e-4, 0, 0, 0, 0};
static int check_ber_max = 1; /* off for --quick: its 25000 bits per channel are too few */

typedef struct {
  uint8_t *bits;
  float *llrs;
  size_t n_bytes, n_sym;
  prx_qpsk_block blk[64];
  size_t n_blk;
  unsigned warnings; /* the channel's stream's, at the end (prx_qpsk_bank_get_stats) */
} chan_out;

static size_t next_chunk(test_rng *r, size_t left) {
  if (!r) return left;
  size_t m = test_rng_uniform(r) < 0.1 ? 0 : 1 + (size_t)(test_rng_uniform(r) * 40000);
  return m < left ? m : left;
}

static void cuda_ok(cudaError_t e, const char *what) {
  CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
}

/* Runs the rows (host copy h_rows, device copy d_rows, row pitch in samples) through a bank of
 * the given backend; device banks read d_rows and write device outputs. */
typedef struct {
  int packed, llrs, host; /* host: host calls on the CUDA backend */
  const double *mix;
  int apart;      /* the om stage apart from pre where the driver would fold it (sps 4) */
  int cpu_serial; /* the driver's level, timing and NCO passes on the CPU (not the GPU) */
  /* the receiver's calls (device rows holding the history before each chunk, the stream's last
   * samples in the flush's call, its end held: prx_qpsk_bank_gpu_hold_end, then
   * prx_qpsk_bank_gpu_end) */
  int end;
  /* a stream before the one compared (the first n / 2 + 1234 samples in calls of 7777, the
   * receiver's calls): 1 ended as end does, its end left to the next call; 2 cut short by
   * prx_qpsk_bank_reset after a call past its half that left spans pending */
  int before;
} run_opts;

/* One of the receiver's calls on device rows (pitch in samples) that hold the stream from sample
 * 0: the chunk of m samples at i after the bank's history (at most i samples); flush: the
 * stream's end with those samples, held. */
static prx_status kept_call(prx_qpsk_bank *b, const void *d_rows, size_t pitch, size_t sz, size_t i,
                            size_t m, int flush, const prx_qpsk_bank_out *out, cudaStream_t s) {
  const size_t h = prx_qpsk_bank_history(b), kept = i < h ? i : h;
  const uint8_t *in = (const uint8_t *)d_rows + i * sz;
  if (!flush) return prx_qpsk_bank_execute_device_kept(b, in, pitch, m, kept, 0, out, s);
  prx_qpsk_bank_gpu_hold_end(b->drv);
  return prx_qpsk_bank_gpu_run(b, in, pitch, m, kept, 1, 1, out, 1, s);
}

/* run_opts.before's stream into a device output out (its outputs dropped) */
static void stream_before(prx_qpsk_bank *b, int how, const void *d_rows, size_t pitch, size_t sz,
                          size_t n0, const prx_qpsk_bank_out *out, cudaStream_t s) {
  int pending = 0;
  for (size_t i = 0; i < n0;) {
    size_t m = n0 - i < 7777 ? n0 - i : 7777;
    int last = i + m == n0;
    CHECK(kept_call(b, d_rows, pitch, sz, i, m, last && how == 1, out, s) == PRX_OK,
          "the stream before: %s", prx_last_error());
    i += m;
    pending = prx_qpsk_bank_gpu_pending_symbols(b->drv) > 0;
    if (how == 2 && i >= n0 / 2 && pending) break;
  }
  cuda_ok(cudaStreamSynchronize(s), "the stream before");
  if (how == 2) {
    printf("  (the reset after %s)\n", pending ? "a call that left spans pending" : "no span");
    prx_qpsk_bank_reset(b);
  }
}

static void run(prx_backend be, prx_qpsk_config qc, prx_format fmt, run_opts ro, const void *h_rows,
                const void *d_rows, size_t pitch, size_t n, uint64_t chunk_seed, chan_out *o) {
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = qc;
  bc.channels = C;
  bc.row_format = fmt;
  bc.packed = ro.packed;
  bc.backend = be;
  bc.mix_hz = ro.mix;
  prx_qpsk_bank *b = NULL;
  CHECK_OK(prx_qpsk_bank_create(&bc, &b));
  if (!b) return;
  if (ro.apart) prx_qpsk_bank_gpu_set_fold(b->drv, 0);
  if (b->drv) {
    int on = prx_qpsk_bank_gpu_set_serial(b->drv, !ro.cpu_serial);
    CHECK(on == !ro.cpu_serial, "the serial passes on the %s, asked the %s", on ? "GPU" : "CPU",
          ro.cpu_serial ? "CPU" : "GPU");
  }
  size_t sz = prx_format_size(fmt), call = prx_qpsk_bank_max_symbols(b, n, 0) + 4 * 1100;
  if (ro.end) call += prx_qpsk_bank_gpu_end_symbols(b, n); /* (its flush's call) */
  size_t bs = 2 * call + 64, ls = 2 * call;
  uint8_t *hb = malloc(C * bs), *db = NULL;
  float *hl = malloc(C * ls * sizeof(float)), *dl = NULL;
  int dev = be == PRX_BACKEND_CUDA && !ro.host;
  CHECK(be != PRX_BACKEND_CUDA || prx_qpsk_bank_backend(b) == PRX_BACKEND_CUDA, "not on CUDA");
  if (dev) {
    cuda_ok(cudaMalloc((void **)&db, C * bs), "cudaMalloc bits");
    cuda_ok(cudaMalloc((void **)&dl, C * ls * sizeof(float)), "cudaMalloc llrs");
  }
  cudaStream_t s;
  cuda_ok(cudaStreamCreate(&s), "stream");
  size_t ns[C], nb[C];
  for (unsigned c = 0; c < C; c++) {
    o[c].bits = malloc(2 * n + 64); /* a stream has fewer symbols than samples */
    o[c].llrs = malloc(2 * n * sizeof(float));
    o[c].n_bytes = o[c].n_sym = o[c].n_blk = 0;
  }
  if (ro.before) {
    CHECK(dev && b->drv, "a stream before: device calls on the driver only");
    prx_qpsk_bank_out out = {db, bs, NULL, ls, ns, nb};
    stream_before(b, ro.before, d_rows, pitch, sz, n / 2 + 1234, &out, s);
  }
  test_rng r;
  test_rng_seed(&r, chunk_seed);
  for (size_t i = 0;;) {
    int flush = i >= n;
    size_t m = flush ? 0 : next_chunk(chunk_seed ? &r : NULL, n - i);
    const int end = ro.end && !flush && m && i + m == n; /* (then no flush after it) */
    if (dev) {
      cuda_ok(cudaMemset(db, 0xff, C * bs), "poison bits");
      cuda_ok(cudaMemset(dl, 0xff, C * ls * sizeof(float)), "poison llrs");
    }
    prx_qpsk_bank_out out = {dev ? db : hb, bs, ro.llrs ? (dev ? dl : hl) : NULL, ls, ns, nb};
    prx_status st;
    if (ro.end && !flush) {
      st = kept_call(b, d_rows, pitch, sz, i, m, end, &out, s);
      flush = end;
    } else if (dev)
      st = flush ? prx_qpsk_bank_flush_device(b, &out, s)
                 : prx_qpsk_bank_execute_device(b, (const uint8_t *)d_rows + i * sz, pitch, m, &out,
                                                s);
    else
      st = flush ? prx_qpsk_bank_flush(b, &out)
                 : prx_qpsk_bank_execute(b, (const uint8_t *)(ro.host ? d_rows : h_rows) + i * sz,
                                         pitch, m, &out);
    CHECK(st == PRX_OK, "%s bank call: %s", prx_backend_name(be), prx_last_error());
    if (st) break;
    if (dev) {
      cuda_ok(cudaMemcpyAsync(hb, db, C * bs, cudaMemcpyDeviceToHost, s), "bits back");
      cuda_ok(cudaMemcpyAsync(hl, dl, C * ls * sizeof(float), cudaMemcpyDeviceToHost, s),
              "llrs back");
      if (end) prx_qpsk_bank_gpu_end(b->drv); /* (beside the copies, as the receiver does) */
      cuda_ok(cudaStreamSynchronize(s), "sync");
    }
    for (unsigned c = 0; c < C; c++) {
      memcpy(o[c].bits + o[c].n_bytes, hb + c * bs, nb[c]);
      if (ro.llrs) memcpy(o[c].llrs + 2 * o[c].n_sym, hl + c * ls, 2 * ns[c] * sizeof(float));
      if (dev) { /* past the longest channel's output the row is untouched */
        size_t w = 0, wl = 0;
        for (unsigned k = 0; k < C; k++) {
          if (nb[k] > w) w = nb[k];
          if (2 * ns[k] > wl) wl = 2 * ns[k];
        }
        int clean = 1;
        for (size_t j = w; j < bs; j++) clean &= hb[c * bs + j] == 0xff;
        for (size_t j = wl; j < ls && ro.llrs; j++) clean &= isnan(hl[c * ls + j]);
        CHECK(clean, "channel %u: the row is written past the call's output", c);
      }
      o[c].n_bytes += nb[c];
      o[c].n_sym += ns[c];
      size_t k;
      const prx_qpsk_block *e = prx_qpsk_bank_block_estimates(b, c, &k);
      for (size_t j = 0; j < k && o[c].n_blk < 64; j++) o[c].blk[o[c].n_blk++] = e[j];
    }
    if (flush) break;
    i += m;
  }
  if (b->drv) { /* the phase pass on the GPU where the GPU decides the bits */
    prx_qpsk_bank_gpu_timing t;
    prx_qpsk_bank_gpu_get_timing(b->drv, &t);
    const int hf = ro.llrs || ro.packed || qc.ambiguity == PRX_QPSK_PILOTS;
    CHECK(t.gpu_phase == (!ro.cpu_serial && !hf), "the phase pass on the %s",
          t.gpu_phase ? "GPU" : "CPU");
    if (chunk_seed) printf("  (the ring moved %g times in %g calls)\n", t.ring_moves, t.calls);
  }
  for (unsigned c = 0; c < C; c++) {
    prx_qpsk_stats st;
    CHECK_OK(prx_qpsk_bank_get_stats(b, c, &st));
    o[c].warnings = st.warnings;
  }
  cudaStreamDestroy(s);
  cudaFree(db);
  cudaFree(dl);
  free(hb);
  free(hl);
  prx_qpsk_bank_destroy(b);
}

static void outs_free(chan_out *o) {
  for (unsigned c = 0; c < C; c++) {
    free(o[c].bits);
    free(o[c].llrs);
  }
}

static void compare(const char *what, const chan_out *g, const chan_out *ref, const tcase *tc,
                    uint8_t *const *tx, const size_t *ntx, int packed, int llrs) {
  for (unsigned c = 0; c < C; c++) {
    CHECK(g[c].n_sym == ref[c].n_sym && g[c].n_bytes == ref[c].n_bytes,
          "%s channel %u: %zu symbols, CPU bank %zu", what, c, g[c].n_sym, ref[c].n_sym);
    if (g[c].n_bytes != ref[c].n_bytes) continue;
    size_t diff = 0;
    for (size_t i = 0; i < g[c].n_bytes; i++) diff += g[c].bits[i] != ref[c].bits[i];
    if (esn0[c] >= 12)
      CHECK(diff == 0, "%s channel %u (%g dB): %zu bits differ from the CPU bank", what, c, esn0[c],
            diff);
    else
      CHECK(diff <= g[c].n_bytes / 10000, "%s channel %u (%g dB): %zu of %zu differ", what, c,
            esn0[c], diff, g[c].n_bytes);
    double num = 0, den = 0;
    for (size_t i = 0; i < 2 * g[c].n_sym && llrs; i++) {
      double d = (double)g[c].llrs[i] - ref[c].llrs[i];
      num += d * d;
      den += (double)ref[c].llrs[i] * ref[c].llrs[i];
    }
    const double rel = sqrt(num / (den > 0 ? den : 1));
    CHECK(rel <= 1e-4, "%s channel %u: LLRs differ (relative %.3g)", what, c, rel);
    CHECK(g[c].n_blk == ref[c].n_blk, "%s channel %u: %zu blocks, CPU %zu", what, c, g[c].n_blk,
          ref[c].n_blk);
    double dcfo = 0, dtim = 0, dph = 0, dsnr = 0; /* the largest differences, printed */
    for (size_t j = 0; j < g[c].n_blk && j < ref[c].n_blk; j++) {
      const prx_qpsk_block *p = &g[c].blk[j], *q = &ref[c].blk[j];
      dcfo = fmax(dcfo, fabs(p->cfo - q->cfo));
      dtim = fmax(dtim, fabs(p->timing - q->timing));
      dph = fmax(dph, fabs(remainder(p->phase - q->phase, M_PI / 2)));
      if (isfinite(p->esn0_db) && isfinite(q->esn0_db))
        dsnr = fmax(dsnr, fabs(p->esn0_db - q->esn0_db));
      CHECK(p->first_symbol == q->first_symbol && p->n_symbols == q->n_symbols &&
                fabs(p->cfo - q->cfo) <= 2e-4 && fabs(p->timing - q->timing) <= 1e-3 &&
                fabs(remainder(p->phase - q->phase, M_PI / 2)) <= 1e-3 &&
                fabs(p->esn0_db - q->esn0_db) <= 0.01,
            "%s channel %u block %zu: estimates off the CPU's", what, c, j);
    }
    printf("%s channel %u: %zu bits differ; largest differences: LLRs %.2g relative, CFO %.2g Hz "
           "(Rs 1000), timing %.2g, phase %.2g rad, Es/N0 %.2g dB\n",
           what, c, diff, rel, dcfo, dtim, dph, dsnr);
    if (!packed) {
      long e = tcase_errors(&tc[c], g[c].bits, g[c].n_bytes, tx[c], ntx[c]);
      double theory = 2 * tcase_qfunc(sqrt(pow(10, esn0[c] / 10))) * (double)ntx[c];
      CHECK(e >= 0 && e <= 3 * theory + 10, "%s channel %u (%g dB): %ld bit errors, theory %.1f",
            what, c, esn0[c], e, theory);
      if (ber_max[c] > 0 && check_ber_max)
        CHECK((double)e <= ber_max[c] * (double)ntx[c],
              "%s channel %u (Eb/N0 %.0f dB): BER %.3g above issue 10's %.3g", what, c,
              esn0[c] - 3.0103, (double)e / (double)ntx[c], ber_max[c]);
    }
  }
}

/* C cases and their rows: cf32 and cf16 with a pitch (in samples), on the host and the device;
 * each case's transmitted bits (tx, ntx) */
typedef struct {
  tcase tc[C];
  uint8_t *tx[C];
  size_t ntx[C], pitch;
  prx_cf32 *rows;
  uint16_t *rows16;
  void *d_rows, *d_rows16;
} bank_set;

/* the rows of the cases in r->tc, on the host and the device, where line[c] (not NULL, kind >= 0)
 * makes row c a signal of tcase_line_make's; returns the length (0 where the generator failed) */
static size_t rows_of_lines(bank_set *r, size_t n_want, const tcase_line *line) {
  size_t n = bank_rows_make(r->tc, C, n_want, 64, r->tx, r->ntx, &r->rows, &r->rows16, &r->pitch);
  if (!n) return 0;
  for (unsigned c = 0; c < C && line; c++) {
    if (line[c].kind < 0) continue;
    tcase_line_make(r->rows + c * r->pitch, n, &line[c]);
    bank_row16(r->rows, r->rows16, c, r->pitch, n);
  }
  cuda_ok(cudaMalloc(&r->d_rows, C * r->pitch * sizeof(prx_cf32)), "cudaMalloc rows");
  cuda_ok(cudaMalloc(&r->d_rows16, C * r->pitch * 4), "cudaMalloc rows16");
  cuda_ok(cudaMemcpy(r->d_rows, r->rows, C * r->pitch * sizeof(prx_cf32), cudaMemcpyHostToDevice),
          "up");
  cuda_ok(cudaMemcpy(r->d_rows16, r->rows16, C * r->pitch * 4, cudaMemcpyHostToDevice), "up16");
  return n;
}
/* the rows of the cases in r->tc (rows_of_lines without lines) */
static size_t rows_of(bank_set *r, size_t n_want) { return rows_of_lines(r, n_want, NULL); }

/* C carriers at sps (random CFO to 0.05 Rs, 300 ppm, the esn0 list) as rows_of makes them */
static size_t make_rows(double sps, uint64_t seed, size_t n_want, bank_set *r) {
  bank_cases(r->tc, C, sps, esn0, seed);
  return rows_of(r, n_want);
}

/* Pilots (64:8) and issue 10's flags: channel 0 at a clock offset beyond the supported range,
 * channel 1 without a carrier (noise alone), the others at the esn0 list within range. The GPU
 * bank's block flags equal the CPU bank's in every block, the flags are there (the case is not
 * vacuous), and the in-range channels at >= 12 dB give the same bits. */
static void compare_flags(const char *what, const chan_out *g, const chan_out *ref) {
  size_t range = 0, none = 0;
  for (unsigned c = 0; c < C; c++) {
    CHECK(g[c].n_sym == ref[c].n_sym && g[c].n_blk == ref[c].n_blk,
          "%s channel %u: %zu symbols, %zu blocks; CPU bank %zu, %zu", what, c, g[c].n_sym,
          g[c].n_blk, ref[c].n_sym, ref[c].n_blk);
    if (g[c].n_blk != ref[c].n_blk || g[c].n_sym != ref[c].n_sym) continue;
    size_t nf = 0, nb = g[c].n_blk < 64 ? g[c].n_blk : 64;
    for (size_t j = 0; j < nb; j++) {
      nf += g[c].blk[j].flags != ref[c].blk[j].flags;
      range += c == 0 && (ref[c].blk[j].flags & PRX_QPSK_BLOCK_CLOCK_RANGE);
      none += c == 1 && (ref[c].blk[j].flags & PRX_QPSK_BLOCK_NO_SIGNAL);
    }
    CHECK(nf == 0, "%s channel %u: %zu of %zu blocks flagged otherwise than on the CPU", what, c,
          nf, nb);
    CHECK(g[c].warnings == ref[c].warnings, "%s channel %u: warnings %#x, CPU bank %#x", what, c,
          g[c].warnings, ref[c].warnings);
    if (c >= 2 && esn0[c] >= 12)
      CHECK(!memcmp(g[c].bits, ref[c].bits, g[c].n_bytes), "%s channel %u: bits differ", what, c);
    printf("%s channel %u: %zu blocks, %zu flagged otherwise than on the CPU\n", what, c, nb, nf);
  }
  CHECK(range > 0 && none > 0, "%s: %zu blocks flagged out of clock range, %zu without a signal",
        what, range, none);
}

/* Es/N0 0 dB near the pre-filter's band edge, where most blocks fail the O&M lock ratio and a
 * span follows the line through its coherent O&M sum (qpsk_serial.h): the GPU's blocks and
 * symbols as the CPU bank's, every block's timing within 1e-3 of the CPU's, and the GPU's timing
 * near the truth in every full span (test_qpsk_timing_later_slow's limits; without the coherent
 * line the later spans' timing runs free: 0.10-0.14 T rms by the second and third). At 0 dB a
 * few bits may differ (decisions at the boundary): at most 0.1 %. */
static void compare_low(const char *what, const chan_out *g, const chan_out *ref, const tcase *tc,
                        unsigned L, unsigned per_span, unsigned spans) {
  double t2[8] = {0};
  size_t tn[8] = {0}, off[8] = {0};
  for (unsigned c = 0; c < C; c++) {
    CHECK(g[c].n_sym == ref[c].n_sym && g[c].n_blk == ref[c].n_blk,
          "%s channel %u: %zu symbols, %zu blocks; CPU bank %zu, %zu", what, c, g[c].n_sym,
          g[c].n_blk, ref[c].n_sym, ref[c].n_blk);
    if (g[c].n_sym != ref[c].n_sym || g[c].n_blk != ref[c].n_blk) continue;
    size_t diff = 0, dt = 0;
    for (size_t i = 0; i < g[c].n_bytes; i++) diff += g[c].bits[i] != ref[c].bits[i];
    for (size_t j = 0; j < g[c].n_blk; j++) {
      const prx_qpsk_block *b = &g[c].blk[j];
      dt += fabs(b->timing - ref[c].blk[j].timing) > 1e-3;
      const size_t s = b->index / per_span;
      if (s >= spans || s >= 8) continue;
      const double te = tcase_timing_error(&tc[c], b, L);
      t2[s] += te * te;
      tn[s]++;
      off[s] += fabs(te) > 0.25;
    }
    printf("%s channel %u: %zu of %zu bits differ, %zu blocks' timing off the CPU's\n", what, c,
           diff, g[c].n_bytes, dt);
    CHECK(diff * 1000 <= g[c].n_bytes, "%s channel %u: %zu of %zu bits differ", what, c, diff,
          g[c].n_bytes);
    CHECK(dt == 0, "%s channel %u: %zu blocks' timing off the CPU's by > 1e-3", what, c, dt);
    /* (the spans' symbol-timing lines come back in the GPU's span records: the same summary) */
    CHECK(g[c].warnings == ref[c].warnings, "%s channel %u: warnings %#x, CPU bank %#x", what, c,
          g[c].warnings, ref[c].warnings);
  }
  for (unsigned s = 0; s < spans && s < 8; s++) {
    const double rms = sqrt(t2[s] / (double)(tn[s] ? tn[s] : 1));
    printf("%s span %u: timing rms %.4f T, %zu of %zu blocks off by > 0.25 T\n", what, s, rms,
           off[s], tn[s]);
    CHECK(tn[s] == (size_t)C * per_span && rms < 0.055 && off[s] * 500 <= tn[s],
          "%s span %u: timing rms %.4f T, %zu of %zu blocks off by > 0.25 T", what, s, rms, off[s],
          tn[s]);
  }
}

static void free_rows(bank_set *r) {
  for (unsigned c = 0; c < C; c++) free(r->tx[c]);
  cudaFree(r->d_rows);
  cudaFree(r->d_rows16);
  free(r->rows);
  free(r->rows16);
}

/* compare_low's case: C carriers at 0 dB near the band edge (+-300 ppm), 3.5 spans, random
 * chunks */
static void low_snr(void) {
  bank_set S;
  chan_out cpu[C], gpu[C];
  const run_opts bits = {0, 0, 0, NULL, 0, 0, 0, 0};
  const double at_0db[C] = {0};
  bank_cases(S.tc, C, 4, at_0db, 2029);
  test_rng r;
  test_rng_seed(&r, 2030);
  for (unsigned c = 0; c < C; c++)
    S.tc[c].cfo = (0.09 + 0.03 * test_rng_uniform(&r)) * (test_rng_uniform(&r) < 0.5 ? -1 : 1);
  prx_qpsk_config qc = tcase_demod_config(&S.tc[0], 1);
  const unsigned per_span = qc.cfo_span_symbols / qc.block_symbols;
  size_t n = rows_of(&S, (size_t)(3.5 * qc.cfo_span_symbols * 4));
  if (!n) return;
  run(PRX_BACKEND_CPU, qc, PRX_CF32, bits, S.rows, NULL, S.pitch, n, 0, cpu);
  run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 79, gpu);
  compare_low("0 dB near the band edge, random chunks", gpu, cpu, S.tc, qc.block_symbols, per_span,
              3);
  outs_free(gpu);
  outs_free(cpu);
  free_rows(&S);
}

/* carriers beyond the acquisition range (their 4th-power lines aliased into it) in channels 1 and
 * 2, at +0.3 and -0.2 Rs, the others within it: the GPU measures the CFO alias test on the device
 * rows (cf16 and cf32, random chunks) and raises cfo_alias where the CPU bank does, in the aliased
 * channels only; every channel's warnings equal the CPU bank's */
static void aliased(void) {
  bank_set S;
  chan_out cpu[C], gpu[C];
  const run_opts bits = {0, 0, 0, NULL, 0, 0, 0, 0};
  bank_cases(S.tc, C, 4, esn0, 2031);
  S.tc[1].cfo = 0.3;
  S.tc[2].cfo = -0.2;
  const size_t n = rows_of(&S, (size_t)(2.2 * 8192 * 4));
  if (!n) return;
  const prx_qpsk_config qc = tcase_demod_config(&S.tc[0], 1);
  for (int f = 0; f < 2; f++) {
    const prx_format fmt = f ? PRX_CF16 : PRX_CF32;
    run(PRX_BACKEND_CPU, qc, fmt, bits, f ? (const void *)S.rows16 : S.rows, NULL, S.pitch, n, 0,
        cpu);
    run(PRX_BACKEND_CUDA, qc, fmt, bits, NULL, f ? (const void *)S.d_rows16 : S.d_rows, S.pitch, n,
        83 + f, gpu);
    for (unsigned c = 0; c < C; c++) {
      const unsigned w = c == 1 || c == 2 ? PRX_QPSK_WARN_CFO_ALIAS : 0;
      CHECK((cpu[c].warnings & PRX_QPSK_WARN_CFO_ALIAS) == w && gpu[c].warnings == cpu[c].warnings,
            "%s, a carrier at %+g Rs in channel %u: warnings %#x, the CPU bank's %#x",
            f ? "cf16" : "cf32", S.tc[c].cfo, c, gpu[c].warnings, cpu[c].warnings);
    }
    printf("aliased carriers (%s): warnings", f ? "cf16" : "cf32");
    for (unsigned c = 0; c < C; c++) printf(" %#x", gpu[c].warnings);
    printf("\n");
    outs_free(gpu);
    outs_free(cpu);
  }
  free_rows(&S);
}

/* BPSK in channels 2 (9 dB) and 6 (18 dB), a carrier without modulation in channel 4, MSK in
 * channel 5 (14 dB), 16QAM in channel 7 (25 dB), QPSK in the others: the GPU raises not_qpsk
 * (quarter_steps, power_levels) where the CPU bank does, in those channels only, with its phase
 * pass on the GPU (the line, steps and levels measured in its step 0), with the serial passes
 * on the CPU (from the block_ends kernel) and with LLRs (the host's decisions: from the symbols
 * copied back); every channel's warnings equal the CPU bank's */
static void one_line(void) {
  bank_set S;
  chan_out cpu[C], gpu[C];
  const run_opts mode[3] = {
      {0, 0, 0, NULL, 0, 0, 0, 0}, {0, 0, 0, NULL, 0, 1, 0, 0}, {0, 1, 0, NULL, 0, 0, 0, 0}};
  const char *name[3] = {"the GPU's passes", "serial passes on the CPU", "LLRs"};
  bank_cases(S.tc, C, 4, esn0, 2047);
  tcase_line line[C];
  for (unsigned c = 0; c < C; c++) line[c].kind = -1;
  line[2] = tcase_line_of(&S.tc[2], TCASE_BPSK, 11);
  line[4] = tcase_line_of(&S.tc[4], TCASE_CARRIER, 13);
  line[6] = tcase_line_of(&S.tc[6], TCASE_BPSK, 17);
  line[5] = tcase_line_of(&S.tc[5], TCASE_MSK, 23);
  line[7] = tcase_line_of(&S.tc[7], TCASE_QAM16, 19);
  const size_t n = rows_of_lines(&S, (size_t)(2.2 * 8192 * 4), line);
  if (!n) return;
  const prx_qpsk_config qc = tcase_demod_config(&S.tc[0], 1);
  run(PRX_BACKEND_CPU, qc, PRX_CF32, mode[0], S.rows, NULL, S.pitch, n, 0, cpu);
  for (int m = 0; m < 3; m++) {
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, mode[m], NULL, S.d_rows, S.pitch, n, 89 + m, gpu);
    for (unsigned c = 0; c < C; c++) {
      const unsigned w = line[c].kind == TCASE_QAM16 ? PRX_QPSK_WARN_LEVELS
                         : line[c].kind == TCASE_MSK ? PRX_QPSK_WARN_QUARTER_STEPS
                         : line[c].kind >= 0         ? PRX_QPSK_WARN_NOT_QPSK
                                                     : 0,
                     both = PRX_QPSK_WARN_NOT_QPSK | PRX_QPSK_WARN_LEVELS |
                            PRX_QPSK_WARN_QUARTER_STEPS;
      CHECK((cpu[c].warnings & both) == w && gpu[c].warnings == cpu[c].warnings,
            "%s, channel %u: warnings %#x, the CPU bank's %#x", name[m], c, gpu[c].warnings,
            cpu[c].warnings);
    }
    printf("symbols on one line (%s): warnings", name[m]);
    for (unsigned c = 0; c < C; c++) printf(" %#x", gpu[c].warnings);
    printf("\n");
    outs_free(gpu);
  }
  outs_free(cpu);
  free_rows(&S);
}

/* pi/4-DQPSK in every channel (PRX_QPSK_PI4: x4 turns its values back by k pi, mf its symbols by
 * k pi/4) at sps 4 (the quads' kernel), 16/3 (the pairs') and 5 (a symbol a thread): the GPU bank
 * against the CPU bank, bits with the GPU's passes and LLRs (the host's decisions), random chunks;
 * every channel's bits against the sent ones at theory (compare) */
static void pi4(void) {
  const double sps_list[3] = {4, 16.0 / 3, 5};
  const run_opts bits = {0, 0, 0, NULL, 0, 0, 0, 0}, llrs = {0, 1, 0, NULL, 0, 0, 0, 0};
  for (int s = 0; s < 3; s++) {
    bank_set S;
    chan_out cpu[C], gpu[C];
    bank_cases(S.tc, C, sps_list[s], esn0, 2053 + (uint64_t)s);
    for (unsigned c = 0; c < C; c++) S.tc[c].pi4 = 1;
    const size_t n = rows_of(&S, (size_t)(2.2 * 8192 * sps_list[s]));
    if (!n) continue;
    const prx_qpsk_config qc = tcase_demod_config(&S.tc[0], 1);
    CHECK(qc.modulation == PRX_QPSK_PI4, "the cases' demodulator is not pi/4");
    run(PRX_BACKEND_CPU, qc, PRX_CF32, llrs, S.rows, NULL, S.pitch, n, 0, cpu);
    for (int m = 0; m < 2; m++) {
      run(PRX_BACKEND_CUDA, qc, PRX_CF32, m ? llrs : bits, NULL, S.d_rows, S.pitch, n,
          97 + 2 * (uint64_t)s + (uint64_t)m, gpu);
      char what[96];
      snprintf(what, sizeof what, "pi/4-DQPSK sps %.3f cf32 %s, random chunks", sps_list[s],
               m ? "LLRs" : "bits");
      compare(what, gpu, cpu, S.tc, S.tx, S.ntx, 0, m);
      outs_free(gpu);
    }
    outs_free(cpu);
    free_rows(&S);
  }
}

/* the shortest CFO spans, 1024 symbols in blocks of 256 (a drifting carrier followed 8 times
 * closer than by the default's): the CFO stage's FFT of 2048 points, spans of 4 blocks; the GPU
 * bank against the CPU bank, LLRs and bits in random chunks (bits only with quick) */
static void short_spans_case(const bank_set *S, size_t n, prx_qpsk_config qc, int quick) {
  const run_opts bits = {0, 0, 0, NULL, 0, 0, 0, 0}, llrs = {0, 1, 0, NULL, 0, 0, 0, 0};
  chan_out cpu[C], gpu[C];
  qc.block_symbols = 256;
  qc.cfo_span_symbols = 1024;
  run(PRX_BACKEND_CPU, qc, PRX_CF32, llrs, S->rows, NULL, S->pitch, n, 0, cpu);
  if (!quick) {
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs, NULL, S->d_rows, S->pitch, n, 41, gpu);
    compare("sps 4 cf32 LLRs, spans of 1024 in blocks of 256, random chunks", gpu, cpu, S->tc,
            S->tx, S->ntx, 0, 1);
    outs_free(gpu);
  }
  run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S->d_rows, S->pitch, n, 43, gpu);
  compare("sps 4 cf32 bits, spans of 1024 in blocks of 256, random chunks", gpu, cpu, S->tc, S->tx,
          S->ntx, 0, 0);
  outs_free(gpu);
  outs_free(cpu);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  check_ber_max = !quick;
  if (!prx_cuda_available()) {
    printf("test_qpsk_bank_cuda: skipped (no usable CUDA device)\n");
    return TEST_SKIP;
  }
  if (argc > 1 && !strcmp(argv[1], "--low")) { /* that case alone (for the sanitizers) */
    low_snr();
    return test_finish("test_qpsk_bank_cuda");
  }
  bank_set S;
  size_t n = make_rows(4, 2026, quick ? 50000 : 90000, &S);
  if (!n) return test_finish("test_qpsk_bank_cuda");
  prx_qpsk_config qc = tcase_demod_config(&S.tc[0], 1);
  const run_opts bits = {0, 0, 0, NULL, 0, 0, 0, 0}, llrs = {0, 1, 0, NULL, 0, 0, 0, 0},
                 packed = {1, 0, 0, NULL, 0, 0, 0, 0}, host = {0, 0, 1, NULL, 0, 0, 0, 0};
  chan_out cpu[C], gpu[C], cpu2[C];
  run(PRX_BACKEND_CPU, qc, PRX_CF32, llrs, S.rows, NULL, S.pitch, n, 0, cpu);
  run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 17, gpu);
  compare("sps 4 cf32 bits, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
  outs_free(gpu);
  run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs, NULL, S.d_rows, S.pitch, n, quick ? 19 : 0, gpu);
  compare("sps 4 cf32 LLRs", gpu, cpu, S.tc, S.tx, S.ntx, 0, 1);
  outs_free(gpu);
  short_spans_case(&S, n, qc, quick);
  if (!quick) {
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 0, gpu);
    compare("sps 4 cf32 bits, one call", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    /* the receiver's calls (the stream's last samples in the held flush), after a stream of
     * another length and chunking so ended, and after a stream cut short by a reset */
    const run_opts after_end = {0, 0, 0, NULL, 0, 0, 1, 1},
                   after_reset = {0, 0, 0, NULL, 0, 0, 1, 2};
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, after_end, NULL, S.d_rows, S.pitch, n, 71, gpu);
    compare("sps 4 cf32 bits, the end in the flush's call, after a stream so ended", gpu, cpu, S.tc,
            S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, after_reset, NULL, S.d_rows, S.pitch, n, 73, gpu);
    compare("sps 4 cf32 bits, the end in the flush's call, after a stream cut by a reset", gpu, cpu,
            S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    /* the om stage apart from pre (the folded path is the default wherever it applies) */
    const run_opts llrs_apart = {0, 1, 0, NULL, 1, 0, 0, 0};
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs_apart, NULL, S.d_rows, S.pitch, n, 0, gpu);
    compare("sps 4 cf32 LLRs, one call, om apart", gpu, cpu, S.tc, S.tx, S.ntx, 0, 1);
    outs_free(gpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs, NULL, S.d_rows, S.pitch, n, 23, gpu);
    compare("sps 4 cf32 LLRs, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 1);
    outs_free(gpu);
    /* the level, timing and NCO passes on the CPU between the stage kernels (the driver's other
     * path) */
    const run_opts llrs_cpu_serial = {0, 1, 0, NULL, 0, 1, 0, 0};
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs_cpu_serial, NULL, S.d_rows, S.pitch, n, 23, gpu);
    compare("sps 4 cf32 LLRs, random chunks, serial passes on the CPU", gpu, cpu, S.tc, S.tx, S.ntx,
            0, 1);
    outs_free(gpu);
    /* a CFO span of 24 blocks of 512: the timing pass's records too long for its shared-memory
     * staging (spans of up to 23 blocks), so the first span reads them from global memory and
     * the flush's shorter span is staged */
    prx_qpsk_config qc_long = qc;
    qc_long.cfo_span_symbols = 24 * 512;
    run(PRX_BACKEND_CPU, qc_long, PRX_CF32, bits, S.rows, NULL, S.pitch, n, 0, cpu2);
    run(PRX_BACKEND_CUDA, qc_long, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 37, gpu);
    compare("sps 4 cf32 bits, spans of 24 blocks, random chunks", gpu, cpu2, S.tc, S.tx, S.ntx, 0,
            0);
    outs_free(gpu);
    outs_free(cpu2);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, host, S.rows, S.rows, S.pitch, n, 29, gpu);
    compare("sps 4 cf32 host calls, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    run(PRX_BACKEND_CPU, qc, PRX_CF16, bits, S.rows16, NULL, S.pitch, n, 0, cpu2);
    run(PRX_BACKEND_CUDA, qc, PRX_CF16, bits, NULL, S.d_rows16, S.pitch, n, 31, gpu);
    compare("sps 4 cf16 bits, random chunks", gpu, cpu2, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    outs_free(cpu2);
    run(PRX_BACKEND_CPU, qc, PRX_CF32, packed, S.rows, NULL, S.pitch, n, 0, cpu2);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, packed, NULL, S.d_rows, S.pitch, n, 41, gpu);
    compare("sps 4 packed, random chunks", gpu, cpu2, S.tc, S.tx, S.ntx, 1, 0);
    outs_free(gpu);
    outs_free(cpu2);
  }
  outs_free(cpu);
  free_rows(&S);
  if (!quick) {
    /* sps 16/3, and the carriers moved off their channels' centres with mix_hz bringing them
     * back */
    n = make_rows(16.0 / 3, 2027, 120000, &S);
    if (!n) return test_finish("test_qpsk_bank_cuda");
    qc = tcase_demod_config(&S.tc[0], 1);
    run(PRX_BACKEND_CPU, qc, PRX_CF32, bits, S.rows, NULL, S.pitch, n, 0, cpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 47, gpu);
    compare("sps 16/3 cf32 bits, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    outs_free(cpu);
    run(PRX_BACKEND_CPU, qc, PRX_CF16, bits, S.rows16, NULL, S.pitch, n, 0, cpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF16, bits, NULL, S.d_rows16, S.pitch, n, 53, gpu);
    compare("sps 16/3 cf16 bits, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    outs_free(cpu);
    double mix[C];
    for (unsigned c = 0; c < C; c++) mix[c] = (0.2 * c / (C - 1) - 0.1) * qc.sample_rate;
    bank_rows_shift(S.rows, C, S.pitch, n, mix, qc.sample_rate);
    cuda_ok(cudaMemcpy(S.d_rows, S.rows, C * S.pitch * sizeof(prx_cf32), cudaMemcpyHostToDevice),
            "up");
    const run_opts mixed = {0, 0, 0, mix, 0, 0, 0, 0};
    run(PRX_BACKEND_CPU, qc, PRX_CF32, mixed, S.rows, NULL, S.pitch, n, 0, cpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, mixed, NULL, S.d_rows, S.pitch, n, 59, gpu);
    compare("sps 16/3 mix_hz, random chunks", gpu, cpu, S.tc, S.tx, S.ntx, 0, 0);
    outs_free(gpu);
    outs_free(cpu);
    free_rows(&S);
  }

  if (!quick) {
    test_rng r;
    test_rng_seed(&r, 2028);
    memset(S.tc, 0, sizeof S.tc);
    for (unsigned c = 0; c < C; c++) {
      S.tc[c].sps = 4;
      S.tc[c].noise = 1;
      S.tc[c].esn0_db = c == 1 ? -60 : esn0[c];
      S.tc[c].pilot_period = 64;
      S.tc[c].pilot_len = 8;
      tcase_random(&S.tc[c], &r, 0.05, 300);
    }
    S.tc[0].ppm = 7000;
    S.tc[0].esn0_db = 14;
    n = rows_of(&S, 90000);
    if (!n) return test_finish("test_qpsk_bank_cuda");
    qc = tcase_demod_config(&S.tc[0], 1);
    const run_opts llrs = {0, 1, 0, NULL, 0, 0, 0, 0};
    run(PRX_BACKEND_CPU, qc, PRX_CF32, llrs, S.rows, NULL, S.pitch, n, 0, cpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, llrs, NULL, S.d_rows, S.pitch, n, 61, gpu);
    compare_flags("pilots, 7000 ppm and no carrier, random chunks", gpu, cpu);
    outs_free(gpu);
    outs_free(cpu);
    free_rows(&S);
    /* the same channels differential, bits only: the flags from the phase pass on the GPU */
    for (unsigned c = 0; c < C; c++) {
      S.tc[c].pilot_period = S.tc[c].pilot_len = 0;
      S.tc[c].differential = 1;
    }
    n = rows_of(&S, 90000);
    if (!n) return test_finish("test_qpsk_bank_cuda");
    qc = tcase_demod_config(&S.tc[0], 1);
    run(PRX_BACKEND_CPU, qc, PRX_CF32, bits, S.rows, NULL, S.pitch, n, 0, cpu);
    run(PRX_BACKEND_CUDA, qc, PRX_CF32, bits, NULL, S.d_rows, S.pitch, n, 67, gpu);
    compare_flags("differential, 7000 ppm and no carrier, random chunks", gpu, cpu);
    outs_free(gpu);
    outs_free(cpu);
    free_rows(&S);
  }

  if (!quick) low_snr();
  aliased();
  one_line();
  pi4();

  /* invalid use of the device call */
  prx_qpsk_bank_config bc = prx_qpsk_bank_config_default();
  bc.demod = qc;
  bc.channels = C;
  bc.backend = PRX_BACKEND_CUDA;
  bc.row_format = PRX_CI16;
  prx_qpsk_bank *b = NULL;
  CHECK(prx_qpsk_bank_create(&bc, &b) == PRX_ERR_UNSUPPORTED && !b, "ci16 rows on CUDA accepted");
  return test_finish("test_qpsk_bank_cuda");
}
#else
int main(void) {
  printf("test_qpsk_bank_cuda: skipped (this build has no CUDA)\n");
  return TEST_SKIP;
}
#endif
