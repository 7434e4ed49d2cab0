/* The CUDA stage kernels (qpsk_stages_cuda.cu) against the CPU demodulator's stage functions
 * (test_qpsk_stages.h) on the same rows: the pre-filter grid, the O&M sums (drift correlations
 * 1e-4), the levelled grid, the 4th-power values and the matched filter's symbols within 2e-5
 * relative (float sums in another order, the NCO evaluated directly instead of the
 * CPU's anchored recurrence), input sums within 1e-9, symbol sums within 1e-5, non-finite counts
 * and decisions identical (decisions within 1e-4 of a boundary excepted), every output written
 * (poisoned before the run) and nothing past each channel's bits. 16 channels of 6 blocks of 512
 * symbols, rows with a pitch, sps 4 and 16/3, cf32 and cf16 rows, coherent and differential, the
 * matched filter's window padded (the default) and not; pre's grid also without its sliding filter
 * (the four- and three-output filters: bit for bit the same); om folded into pre (pre_om, om_sums,
 * x4_level) against om and x4, also with the stream going on (g_hi = INT64_MAX: the records of
 * every block before the stream's end, its first included, equal to those with the end). Then the
 * demodulator itself as the reference (test_qpsk_stages.h, probe_case): a carrier at 6-14 dB, 100
 * to 3000 ppm, demodulated on the CPU with its blocks probed; the kernels on its stream (3
 * channels, each a copy) with its per-block parameters give its input sums, levelled grid, O&M
 * sums, 4th-power values and symbols (2e-5) and its bits (identical but at a decision boundary, at
 * most 1 in 10^4). The CFO stage on random windows and on the demodulator's spans against the
 * CPU's stage_cfo, from half the transform and (random windows) from the whole of it, and from x4's
 * rows (x4_rows, cfo_fed). The CFO alias test's sums against a float64 serial reference.
 *
 * Skips (exit 77) without a usable CUDA device. */
#include "test_qpsk_stages.h"

#include <stdio.h>

#ifdef PRX_HAVE_CUDA
#include "core/cuda_module.h"
#include "qpsk/qpsk_stages_cuda.h"

#include <cuda_runtime_api.h>

static const prx_qpsk_stages_cuda *S; /* the kernels, in the CUDA module */

static int cuda_ok(cudaError_t e, const char *what) {
  CHECK(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

static uint16_t to_half(float f) {
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}

/* The CFO stage's rows written by x4 (x4_rows, then cfo_fed: no copy of the windows into the
 * transform's rows): x4_rows (levelled, on pre_om's bfloat16 grid d_grid_bf, and plain: in NULL,
 * on om's levelled float grid d_grid_lev) into w rows with a gap of history
 * before each channel's values (w0 + gap) and into the stage's rows (cfo_rows; poisoned with other
 * values first) gives w bit for bit as x4_level (x4) does, and the rows each channel's span values
 * from point 0, those below S. Then cfo_fed on windows that take `take` values of the history and
 * the span's values after them (S 2048: windows of S values, the span longer; S 4096: the span
 * shorter, some windows shorter than S): the starts and CFOs against the CPU's stage_cfo on the
 * same windows and against cfo (the windows copied), the refined CFO the same bit for bit where
 * the starts agree (the transform's rows differ by a turn, so the starts may differ at a near-tie
 * of two bins: at most one). */
static void cfo_fed_check(const char *name, qpsk_stages *st, test_rng *r, unsigned C, unsigned NB,
                          const qpsk_mf_block *d_mb, const int64_t *w0, const qpsk_om_in *d_omi,
                          const prx_cf32 *d_grid_bf, const prx_cf32 *d_grid_lev,
                          const qpsk_mf_timing *tm, size_t Lmax) {
  const size_t nb = (size_t)C * NB, gap = 4096, w_stride = gap + (size_t)NB * Lmax;
  int64_t *w0g = malloc(nb * sizeof *w0g), *d_w0g = NULL;
  for (size_t t = 0; t < nb; t++) w0g[t] = w0[t] + (int64_t)gap;
  const size_t wn = C * w_stride;
  prx_cf32 *w = malloc(wn * sizeof *w), *w1 = malloc(wn * sizeof *w1),
           *wx = malloc(wn * sizeof *wx), *d_w = NULL;
  for (size_t i = 0; i < wn; i++) {
    w[i].re = (float)test_rng_gauss(r);
    w[i].im = (float)test_rng_gauss(r);
  }
  qpsk_cfo_in *in = calloc(C, sizeof *in), *d_in = NULL;
  qpsk_cfo_out *o1 = calloc(C, sizeof *o1), *o2 = calloc(C, sizeof *o2), *d_out = NULL;
  const size_t gn = nb * (4 * (size_t)st->L + 2 * QPSK_GM);
  prx_cf32 *d_grid_buf = NULL; /* the grid 8 bytes off a 16-byte boundary at d_grid_buf + 1 */
  int ok = cuda_ok(cudaMalloc((void **)&d_grid_buf, (gn + 1) * sizeof *d_grid_buf), "cudaMalloc");
  const prx_cf32 *d_grid_odd = ok ? d_grid_buf + 1 : NULL;
  ok = ok && cuda_ok(cudaMalloc((void **)&d_w0g, nb * sizeof *d_w0g), "cudaMalloc") &&
       cuda_ok(cudaMalloc((void **)&d_w, wn * sizeof *d_w), "cudaMalloc") &&
       cuda_ok(cudaMalloc((void **)&d_in, C * sizeof *d_in), "cudaMalloc") &&
       cuda_ok(cudaMalloc((void **)&d_out, C * sizeof *d_out), "cudaMalloc") &&
       cuda_ok(cudaMemcpy(d_w0g, w0g, nb * sizeof *w0g, cudaMemcpyHostToDevice), "w0");
  for (unsigned Sw = 2048; ok && Sw <= 4096; Sw *= 2) {
    const size_t nfft = 2 * (size_t)Sw;
    const double max_nu = 0.48;
    CHECK_OK(S->cfo_setup(st, Sw, (unsigned)nfft, max_nu));
    prx_cf32 *d_rows = NULL;
    size_t rs = 0;
    CHECK_OK(S->cfo_rows(st, &d_rows, &rs));
    CHECK(d_rows && rs >= st->cfo_len, "%s: cfo_rows gives rows of %zu points, the transform %u",
          name, rs, st->cfo_len);
    if (!d_rows || rs < st->cfo_len) break;
    prx_cf32 *rows = malloc(C * rs * sizeof *rows);
    size_t w_differ = 0, unstaged_differ = 0, row_differ = 0, starts = 0, nu_differ = 0,
           short_windows = 0, taken = 0;
    double worst = 0;
    for (int lev = 1; ok && lev >= 0; lev--) {
      /* x4_level (x4) alone, then x4_rows on the same w rows and rows of other values */
      const prx_cf32 *d_grid = lev ? d_grid_bf : d_grid_lev;
      ok =
          cuda_ok(cudaMemcpy(d_grid_buf + 1, d_grid, gn * sizeof *d_grid, cudaMemcpyDeviceToDevice),
                  "grid") &&
          cuda_ok(cudaMemcpy(d_w, w, wn * sizeof *w, cudaMemcpyHostToDevice), "w");
      if (lev)
        CHECK_OK(S->x4_level(st, d_mb, d_w0g, d_omi, d_grid, d_w, w_stride, 0));
      else
        CHECK_OK(S->x4(st, d_mb, d_w0g, d_grid, d_w, w_stride, 0));
      ok = ok && cuda_ok(cudaMemcpy(wx, d_w, wn * sizeof *wx, cudaMemcpyDeviceToHost), "w");
      if (ok && d_grid_odd) {
        /* the grid 8 bytes off a 16-byte boundary: x4 reads it in place (not staged), the same
         * values */
        ok = cuda_ok(cudaMemcpy(d_w, w, wn * sizeof *w, cudaMemcpyHostToDevice), "w");
        if (lev)
          CHECK_OK(S->x4_level(st, d_mb, d_w0g, d_omi, d_grid_odd, d_w, w_stride, 0));
        else
          CHECK_OK(S->x4(st, d_mb, d_w0g, d_grid_odd, d_w, w_stride, 0));
        ok = ok && cuda_ok(cudaMemcpy(w1, d_w, wn * sizeof *w1, cudaMemcpyDeviceToHost), "w");
        unstaged_differ += ok && memcmp(w1, wx, wn * sizeof *w1) != 0;
      }
      for (size_t i = 0; i < C * rs; i++) {
        rows[i].re = (float)(1e3 * test_rng_gauss(r));
        rows[i].im = (float)(1e3 * test_rng_gauss(r));
      }
      ok = ok && cuda_ok(cudaMemcpy(d_w, w, wn * sizeof *w, cudaMemcpyHostToDevice), "w") &&
           cuda_ok(cudaMemcpy(d_rows, rows, C * rs * sizeof *rows, cudaMemcpyHostToDevice), "rows");
      if (ok)
        CHECK_OK(
            S->x4_rows(st, d_mb, d_w0g, lev ? d_omi : NULL, d_grid, d_w, w_stride, d_rows, rs, 0));
      ok = ok && cuda_ok(cudaMemcpy(w1, d_w, wn * sizeof *w1, cudaMemcpyDeviceToHost), "w") &&
           cuda_ok(cudaMemcpy(rows, d_rows, C * rs * sizeof *rows, cudaMemcpyDeviceToHost), "rows");
      w_differ += ok ? memcmp(w1, wx, wn * sizeof *w1) != 0 : 0;
      for (unsigned c = 0; ok && c < C; c++) {
        int64_t nw = 0;
        for (unsigned j = 0; j < NB; j++) {
          const int64_t n = tm[c * NB + j].k1 - tm[c * NB + j].k0;
          nw += n > 0 ? n : 0;
        }
        const int64_t nr = nw < (int64_t)Sw ? nw : (int64_t)Sw;
        row_differ += memcmp(rows + c * rs, w1 + c * w_stride + gap, nr * sizeof *rows) != 0;
        if (!lev) continue;
        /* the history taken: none, a little, or all that the window leaves */
        const int64_t room = (int64_t)Sw > nw ? (int64_t)Sw - nw : 0;
        const int64_t take = c % 3 == 0 ? 0 : c % 3 == 1 ? 100 + room / 2 : 100 + room;
        in[c].w0 = (int64_t)gap - take;
        in[c].n = (unsigned)(take + nw < (int64_t)Sw ? take + nw : Sw);
        in[c].e = 1e-3 * (double)c;
        short_windows += in[c].n < Sw;
        taken += take > 0;
      }
    }
    /* the rows as the plain x4_rows left them: cfo_fed, then cfo on the same windows */
    ok = ok && cuda_ok(cudaMemcpy(d_in, in, C * sizeof *in, cudaMemcpyHostToDevice), "in");
    if (ok) CHECK_OK(S->cfo_fed(st, d_w, w_stride, d_w0g, d_in, d_out, 0));
    ok = ok && cuda_ok(cudaMemcpy(o1, d_out, C * sizeof *o1, cudaMemcpyDeviceToHost), "out");
    if (ok) CHECK_OK(S->cfo(st, d_w, w_stride, d_in, d_out, 0));
    ok = ok && cuda_ok(cudaMemcpy(o2, d_out, C * sizeof *o2, cudaMemcpyDeviceToHost), "out");
    prx_cf32 *spec = malloc(nfft * sizeof *spec);
    for (unsigned c = 0; ok && c < C; c++) {
      double a0, a1;
      const double f0 =
          cfo_ref(w1 + c * w_stride + in[c].w0, in[c].n, nfft, max_nu, in[c].e, spec, &a0, &a1);
      starts += (o1[c].nu0 != a0) + (o1[c].nu0 != o2[c].nu0);
      nu_differ += o1[c].nu0 == o2[c].nu0 && o1[c].f != o2[c].f;
      const double d = fabs(o1[c].f - f0);
      if (!(d <= worst)) worst = d;
    }
    free(spec);
    free(rows);
    printf("%s, S %u: x4_rows' w rows differing %zu, x4 on a grid off 16 bytes %zu, CFO rows "
           "differing %zu; CFO from x4's rows within %.2e Rs of the CPU's (%zu windows reaching "
           "back, %zu short), starts differing %zu\n",
           name, Sw, w_differ, unstaged_differ, row_differ, worst, taken, short_windows, starts);
    CHECK(w_differ == 0, "%s, S %u: x4_rows' w rows differ from x4's (x4_level's)", name, Sw);
    CHECK(unstaged_differ == 0, "%s, S %u: x4 (x4_level) on a grid off 16 bytes differs", name, Sw);
    CHECK(row_differ == 0, "%s, S %u: %zu channels' CFO rows differ from the span's values", name,
          Sw, row_differ);
    CHECK(starts <= 1, "%s, S %u: %zu starts differ (a near-tie of two bins: 1)", name, Sw, starts);
    CHECK(nu_differ == 0, "%s, S %u: %zu CFOs differ from the copied windows'", name, Sw,
          nu_differ);
    CHECK(worst < 1e-8, "%s, S %u: CFO off the CPU's by %.2e Rs", name, Sw, worst);
  }
  cudaFree(d_grid_buf);
  cudaFree(d_w0g);
  cudaFree(d_w);
  cudaFree(d_in);
  cudaFree(d_out);
  free(w0g);
  free(w);
  free(w1);
  free(wx);
  free(in);
  free(o1);
  free(o2);
}

/* om_sums' records omo (from d_omsum, d_omi over st's C channels) against qpsk_om_combine on the
 * host from the same sums: the sub-block counts, centres, om_n and every unused slot (sub-blocks
 * past nsub, lags past nlags) bit for bit, the sums within 1e-12 of the record's largest and the
 * correlations within 1e-12 of its square x QPSK_SUB_MAX (the device rounds its products with
 * fused multiply-adds, the host not). Then om_sums over the first C - 1 channels (its last
 * thread block short where the record count is not a multiple of its records a block): the same
 * records, the last channel's left as they were (poisoned). */
static void om_sums_host_check(const qpsk_stages *st, const qpsk_om_in *d_omi,
                               const qpsk_om_in *omi, const double *d_omsum, qpsk_om_out *d_omo,
                               const qpsk_om_out *omo) {
  const size_t nb = (size_t)st->C * st->nblk, oms = (size_t)(st->nsub + 1) * QPSK_OMS;
  double *sums = malloc(nb * oms * sizeof *sums);
  qpsk_om_out *part = malloc(nb * sizeof *part);
  size_t exact_differ = 0, used = 0, part_differ = 0, part_touched = 0;
  double worst_sum = 0, worst_corr = 0;
  if (sums && part &&
      cuda_ok(cudaMemcpy(sums, d_omsum, nb * oms * sizeof *sums, cudaMemcpyDeviceToHost), "sums"))
    for (size_t t = 0; t < nb; t++) {
      qpsk_om_out h;
      qpsk_om_combine(sums + t * oms, (int64_t)(t % st->nblk), st->L, st->nsub, st->Ls, st->nlags,
                      omi + t, &h);
      const qpsk_om_out *d = omo + t;
      exact_differ += d->nsub != h.nsub || d->pad != h.pad || d->om_n != h.om_n ||
                      memcmp(d->osub_t, h.osub_t, sizeof h.osub_t) != 0;
      double scale = 0;
      for (unsigned j = 0; j < h.nsub; j++)
        scale = fmax(scale, fmax(fabs(h.osub[j][0]), fabs(h.osub[j][1])));
      for (unsigned j = 0; j < QPSK_SUB_MAX; j++)
        if (j >= h.nsub)
          exact_differ += memcmp(d->osub[j], h.osub[j], sizeof h.osub[j]) != 0;
        else
          for (int i = 0; i < 2; i++)
            worst_sum = fmax(worst_sum, fabs(d->osub[j][i] - h.osub[j][i]) / scale);
      for (unsigned l = 0; l < QPSK_LAGS; l++)
        if (l >= st->nlags || h.nsub == 0)
          exact_differ += memcmp(d->corr[l], h.corr[l], sizeof h.corr[l]) != 0;
        else
          for (int i = 0; i < 2; i++)
            worst_corr = fmax(worst_corr,
                              fabs(d->corr[l][i] - h.corr[l][i]) / (scale * scale * QPSK_SUB_MAX));
      used += h.nsub > 0;
    }
  CHECK(used > 0 && exact_differ == 0,
        "om_sums: %zu of %zu records' counts, centres or unused slots differ from "
        "qpsk_om_combine's",
        exact_differ, nb);
  CHECK(worst_sum < 1e-12 && worst_corr < 1e-12,
        "om_sums: sums %.2e, correlations %.2e from qpsk_om_combine's on the same sums", worst_sum,
        worst_corr);
  qpsk_stages s1 = *st;
  s1.C = st->C - 1;
  const size_t n1 = (size_t)s1.C * s1.nblk;
  if (part && cuda_ok(cudaMemset(d_omo, 0xff, nb * sizeof *part), "poison")) {
    CHECK_OK(S->om_sums(&s1, 0, d_omi, d_omsum, d_omo, 0));
    if (cuda_ok(cudaMemcpy(part, d_omo, nb * sizeof *part, cudaMemcpyDeviceToHost), "om")) {
      part_differ = 0;
      for (size_t t = 0; t < n1; t++) part_differ += memcmp(part + t, omo + t, sizeof *part) != 0;
      const uint8_t *p = (const uint8_t *)(part + n1);
      for (size_t i = 0; i < (nb - n1) * sizeof *part; i++) part_touched += p[i] != 0xff;
    }
  }
  CHECK(part_differ == 0 && part_touched == 0,
        "om_sums over %zu records: %zu differ, %zu bytes written past them", n1, part_differ,
        part_touched);
  printf("  om_sums against qpsk_om_combine: sums %.2e, correlations %.2e; over %zu records: %zu "
         "differ\n",
         worst_sum, worst_corr, n1, part_differ);
  free(sums);
  free(part);
}

/* NB blocks a channel: more than PRE_TAB_MAX (32) takes pre's launches in parts */
static void run_case_nb(double sps, int cf16, int diff, int pad, int mix, unsigned L, unsigned NB,
                        uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  stage_case k;
  const unsigned C = 16;
  case_make(&k, &r, C, NB, L, sps, cf16, diff);
  if (mix) case_mix(&k, &r);
  const size_t ng = case_ng(&k), nb = (size_t)C * NB;
  qpsk_stages st;
  CHECK_OK(S->create(&st, &k.pre, &k.mf, C, NB, L, k.Lmax, sps, cf16));
  st.mf_pad = pad;
  st.pre_block = st.pre_block && pad; /* unpadded: the one-output-per-thread pre-filter too */
  if (mix) CHECK_OK(S->mix(&st, k.mix));

  /* rows (the raw ones when the kernels mix) */
  const size_t ssz = cf16 ? 4 : 8, stride = k.pitch * ssz;
  const prx_cf32 *src = mix ? k.raw : k.rows;
  void *h_rows = malloc(stride * C), *d_rows = NULL;
  for (size_t i = 0; i < k.pitch * C; i++) {
    if (cf16) {
      uint16_t *h = (uint16_t *)h_rows;
      h[2 * i] = to_half(src[i].re);
      h[2 * i + 1] = to_half(src[i].im);
    } else {
      ((prx_cf32 *)h_rows)[i] = src[i];
    }
  }
  /* block parameters */
  qpsk_mf_block *mb = calloc(nb, sizeof *mb);
  qpsk_out_block *ob = calloc(nb, sizeof *ob);
  size_t *bits_n = calloc(C, sizeof(size_t)), bits_stride = 2 * (size_t)NB * k.Lmax + 64;
  for (size_t t = 0; t < nb; t++) {
    unsigned c = (unsigned)(t / NB);
    mb[t].t = k.tm[t];
    mb[t].theta = k.theta[t];
    mb[t].omega = k.omega[t];
    mb[t].dc[0] = k.dc[2 * t];
    mb[t].dc[1] = k.dc[2 * t + 1];
    mb[t].gain = k.gain[t];
    ob[t].rot = k.rot[t];
    ob[t].quad0 = k.quad0[t];
    ob[t].diff = diff;
    ob[t].out0 = (int64_t)(bits_n[c] / 2);
    bits_n[c] += 2 * (size_t)(k.tm[t].k1 - k.tm[t].k0);
  }
  qpsk_om_in *omi = calloc(nb, sizeof *omi);
  int64_t *w0 = calloc(nb, sizeof *w0);
  for (size_t t = 0; t < nb; t++) {
    omi[t].D = k.D[t];
    omi[t].gain = k.om_gain[t];
    omi[t].g_hi = k.g_hi;
    w0[t] = t % NB ? w0[t - 1] + (k.tm[t - 1].k1 - k.tm[t - 1].k0) : 0;
  }
  prx_cf32 *d_grid = NULL, *d_sym = NULL;
  double *d_mom = NULL, *d_sums = NULL;
  unsigned *d_bad = NULL;
  qpsk_mf_block *d_mb = NULL;
  qpsk_om_in *d_omi = NULL;
  qpsk_om_out *d_omo = NULL;
  int64_t *d_w0 = NULL;
  prx_cf32 *d_w = NULL;
  const size_t w_stride = (size_t)NB * k.Lmax;
  qpsk_out_block *d_ob = NULL;
  uint8_t *d_bits = NULL;
  int ok = cuda_ok(cudaMalloc(&d_rows, stride * C), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_grid, nb * ng * sizeof(prx_cf32)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_sym, nb * k.Lmax * sizeof(prx_cf32)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_mom, nb * 4 * sizeof(double)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_sums, nb * 5 * sizeof(double)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_bad, nb * sizeof(unsigned)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_mb, nb * sizeof *mb), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_ob, nb * sizeof *ob), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_bits, bits_stride * C), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_omi, nb * sizeof(qpsk_om_in)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_omo, nb * sizeof(qpsk_om_out)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_w0, nb * sizeof(int64_t)), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_w, C * w_stride * sizeof(prx_cf32)), "cudaMalloc");
  prx_cf32 *grid = malloc(nb * ng * sizeof *grid), *sym = malloc(nb * k.Lmax * sizeof *sym);
  prx_cf32 *grid_pre = malloc(nb * ng * sizeof *grid_pre), *w = malloc(C * w_stride * sizeof *w);
  qpsk_om_out *omo = malloc(nb * sizeof *omo);
  double *mom = malloc(nb * 4 * sizeof *mom), *sums = malloc(nb * 5 * sizeof *sums);
  unsigned *bad = malloc(nb * sizeof *bad);
  uint8_t *bits = malloc(bits_stride * C);
  if (ok) {
    cuda_ok(cudaMemcpy(d_rows, h_rows, stride * C, cudaMemcpyHostToDevice), "rows");
    cuda_ok(cudaMemcpy(d_mb, mb, nb * sizeof *mb, cudaMemcpyHostToDevice), "blocks");
    cuda_ok(cudaMemcpy(d_ob, ob, nb * sizeof *ob, cudaMemcpyHostToDevice), "blocks");
    cuda_ok(cudaMemcpy(d_omi, omi, nb * sizeof *omi, cudaMemcpyHostToDevice), "blocks");
    cuda_ok(cudaMemcpy(d_w0, w0, nb * sizeof *w0, cudaMemcpyHostToDevice), "blocks");
    cuda_ok(cudaMemset(d_omo, 0xff, nb * sizeof(qpsk_om_out)), "poison");
    cuda_ok(cudaMemset(d_w, 0xff, C * w_stride * sizeof(prx_cf32)), "poison");
    /* poison: NaN floats, 0xff counts, 0xaa bits */
    cuda_ok(cudaMemset(d_grid, 0xff, nb * ng * sizeof(prx_cf32)), "poison");
    cuda_ok(cudaMemset(d_sym, 0xff, nb * k.Lmax * sizeof(prx_cf32)), "poison");
    cuda_ok(cudaMemset(d_mom, 0xff, nb * 4 * sizeof(double)), "poison");
    cuda_ok(cudaMemset(d_sums, 0xff, nb * 5 * sizeof(double)), "poison");
    cuda_ok(cudaMemset(d_bad, 0xff, nb * sizeof(unsigned)), "poison");
    cuda_ok(cudaMemset(d_bits, 0xaa, bits_stride * C), "poison");
    CHECK_OK(S->pre(&st, d_rows, stride, 0, k.n_total, d_grid, d_mom, d_bad, 0));
    /* the grid as pre leaves it, then levelled by om */
    cuda_ok(cudaMemcpy(grid_pre, d_grid, nb * ng * sizeof *grid_pre, cudaMemcpyDeviceToHost),
            "grid");
    CHECK_OK(S->om(&st, 0, d_omi, d_grid, d_omo, 0));
    CHECK_OK(S->x4(&st, d_mb, d_w0, d_grid, d_w, w_stride, 0));
    CHECK_OK(S->mf(&st, d_rows, stride, 0, k.n_total, d_mb, d_sym, d_sums, 0));
    CHECK_OK(S->out(&st, d_mb, d_ob, d_sym, d_bits, bits_stride, 0));
    ok = cuda_ok(cudaDeviceSynchronize(), "kernels");
  }
  /* pre without its sliding filter (pre_slide 0: the four- and three-output filters, whose sums
   * are qpsk_dot1's in its order as the sliding filter's are): the same grid bit for bit */
  size_t slide_differ = 0;
  if (ok) {
    prx_cf32 *d_g3 = NULL, *g3 = malloc(nb * ng * sizeof *g3);
    ok = cuda_ok(cudaMalloc((void **)&d_g3, nb * ng * sizeof(prx_cf32)), "cudaMalloc") &&
         cuda_ok(cudaMemset(d_g3, 0xff, nb * ng * sizeof(prx_cf32)), "poison");
    st.pre_slide = 0;
    if (ok) CHECK_OK(S->pre(&st, d_rows, stride, 0, k.n_total, d_g3, d_mom, d_bad, 0));
    st.pre_slide = 1;
    ok = ok && cuda_ok(cudaMemcpy(g3, d_g3, nb * ng * sizeof *g3, cudaMemcpyDeviceToHost), "grid");
    for (size_t t = 0; ok && t < nb; t++)
      slide_differ += memcmp(g3 + t * ng, grid_pre + t * ng, ng * sizeof *g3) != 0;
    cudaFree(d_g3);
    free(g3);
  }
  /* om folded into pre: pre_om, om_sums, x4_level into their own buffers */
  double *d_omsum = NULL;
  prx_cf32 *d_grid2 = NULL, *d_w2 = NULL;
  qpsk_om_out *d_omo2 = NULL;
  const size_t oms_n = nb * (st.nsub + 1) * QPSK_OMS;
  prx_cf32 *grid2 = malloc(nb * ng * sizeof *grid2), *w2 = malloc(C * w_stride * sizeof *w2);
  qpsk_om_out *omo2 = malloc(nb * sizeof *omo2);
  if (ok) {
    ok = cuda_ok(cudaMalloc((void **)&d_omsum, oms_n * sizeof(double)), "cudaMalloc") &&
         cuda_ok(cudaMalloc((void **)&d_grid2, nb * ng * sizeof(prx_cf32)), "cudaMalloc") &&
         cuda_ok(cudaMalloc((void **)&d_w2, C * w_stride * sizeof(prx_cf32)), "cudaMalloc") &&
         cuda_ok(cudaMalloc((void **)&d_omo2, nb * sizeof(qpsk_om_out)), "cudaMalloc");
    cuda_ok(cudaMemset(d_omsum, 0xff, oms_n * sizeof(double)), "poison");
    cuda_ok(cudaMemset(d_w2, 0xff, C * w_stride * sizeof(prx_cf32)), "poison");
    CHECK_OK(
        S->pre_om(&st, d_rows, stride, 0, k.n_total, k.g_hi, d_grid2, d_mom, d_bad, d_omsum, 0));
    CHECK_OK(S->om_sums(&st, 0, d_omi, d_omsum, d_omo2, 0));
    CHECK_OK(S->x4_level(&st, d_mb, d_w0, d_omi, d_grid2, d_w2, w_stride, 0));
    if (pad)
      cfo_fed_check(mix ? "cfo fed by x4_rows, mixed" : "cfo fed by x4_rows", &st, &r, C, NB, d_mb,
                    w0, d_omi, d_grid2, d_grid, k.tm, k.Lmax);
    ok = cuda_ok(cudaDeviceSynchronize(), "folded kernels") &&
         cuda_ok(cudaMemcpy(grid2, d_grid2, nb * ng * sizeof *grid2, cudaMemcpyDeviceToHost),
                 "grid") &&
         cuda_ok(cudaMemcpy(w2, d_w2, C * w_stride * sizeof *w2, cudaMemcpyDeviceToHost), "x4") &&
         cuda_ok(cudaMemcpy(omo2, d_omo2, nb * sizeof *omo2, cudaMemcpyDeviceToHost), "om");
    if (ok) om_sums_host_check(&st, d_omi, omi, d_omsum, d_omo2, omo2);
    /* the same with the stream going on (g_hi = INT64_MAX, the bank's value until its flush):
     * every block whose own grid ends before the stream's end gives the same record, the
     * stream's first block included */
    qpsk_om_in *omi_on = malloc(nb * sizeof *omi_on);
    qpsk_om_out *omo_on = malloc(nb * sizeof *omo_on);
    for (size_t t = 0; t < nb; t++) {
      omi_on[t] = omi[t];
      omi_on[t].g_hi = INT64_MAX;
    }
    if (ok) {
      cuda_ok(cudaMemcpy(d_omi, omi_on, nb * sizeof *omi_on, cudaMemcpyHostToDevice), "blocks");
      cuda_ok(cudaMemset(d_omo2, 0xff, nb * sizeof(qpsk_om_out)), "poison");
      CHECK_OK(S->pre_om(&st, d_rows, stride, 0, k.n_total, INT64_MAX, d_grid2, d_mom, d_bad,
                         d_omsum, 0));
      CHECK_OK(S->om_sums(&st, 0, d_omi, d_omsum, d_omo2, 0));
      ok = cuda_ok(cudaMemcpy(omo_on, d_omo2, nb * sizeof *omo_on, cudaMemcpyDeviceToHost), "om") &&
           cuda_ok(cudaMemcpy(d_omi, omi, nb * sizeof *omi, cudaMemcpyHostToDevice), "blocks");
      size_t checked = 0, differ = 0;
      for (size_t t = 0; t < nb; t++) {
        if (4 * (k.tm[t].b + 1) * (int64_t)L > k.g_hi) continue;
        checked++;
        differ += memcmp(omo_on + t, omo2 + t, sizeof *omo2) != 0;
      }
      CHECK(checked > 0 && differ == 0,
            "pre_om / om_sums while the stream goes on: %zu of %zu blocks differ from the "
            "records with the stream's end",
            differ, checked);
    }
    free(omi_on);
    free(omo_on);
  }
  cudaFree(d_omsum);
  cudaFree(d_grid2);
  cudaFree(d_w2);
  cudaFree(d_omo2);
  if (ok) {
    cuda_ok(cudaMemcpy(grid, d_grid, nb * ng * sizeof *grid, cudaMemcpyDeviceToHost), "grid");
    cuda_ok(cudaMemcpy(sym, d_sym, nb * k.Lmax * sizeof *sym, cudaMemcpyDeviceToHost), "sym");
    cuda_ok(cudaMemcpy(mom, d_mom, nb * 4 * sizeof *mom, cudaMemcpyDeviceToHost), "mom");
    cuda_ok(cudaMemcpy(sums, d_sums, nb * 5 * sizeof *sums, cudaMemcpyDeviceToHost), "sums");
    cuda_ok(cudaMemcpy(bad, d_bad, nb * sizeof *bad, cudaMemcpyDeviceToHost), "counts");
    cuda_ok(cudaMemcpy(bits, d_bits, bits_stride * C, cudaMemcpyDeviceToHost), "bits");
    cuda_ok(cudaMemcpy(omo, d_omo, nb * sizeof *omo, cudaMemcpyDeviceToHost), "om");
    cuda_ok(cudaMemcpy(w, d_w, C * w_stride * sizeof *w, cudaMemcpyDeviceToHost), "x4");
    prx_cf32 *x0 = malloc(k.Lmax * sizeof *x0);
    double worst_om = 0, worst_corr = 0, worst_gl = 0, worst_w = 0;
    prx_cf32 *g0 = malloc(ng * sizeof *g0), *s0 = malloc(k.Lmax * sizeof *s0);
    uint8_t *b0 = malloc(2 * k.Lmax);
    double worst_g = 0, worst_s = 0, worst_m = 0, worst_sum = 0, worst_fold = 0,
           worst_fold_corr = 0;
    size_t fold_grid_differ = 0;
    /* x4_level against the reference on pre_om's grid levelled, and against x4 on om's float
     * grid (the bfloat16 rounding) */
    double worst_fold_x4 = 0, worst_fold_bf16 = 0;
    prx_cf32 *gl = malloc(ng * sizeof *gl);
    size_t bit_diff = 0, bits_total = 0, untouched_bad = 0;
    for (size_t t = 0; t < nb; t++) {
      unsigned c = (unsigned)(t / NB), j = (unsigned)(t % NB);
      double m0[4], u0[5];
      unsigned bad0;
      ref_pre(&k, c, j, g0, m0, &bad0);
      double e = test_rel_l2_cf32(grid_pre + t * ng, g0, ng);
      if (!(e <= worst_g)) worst_g = e;
      e = rel_l2_f64(mom + 4 * t, m0, 4);
      if (!(e <= worst_m)) worst_m = e;
      CHECK(bad[t] == bad0, "pre: channel %u block %u: %u non-finite samples, reference %u", c, j,
            bad[t], bad0);
      om_ref o0, o1;
      ref_om(&k, t, g0, &o0);
      memcpy(o1.osub, omo[t].osub, sizeof o1.osub);
      memcpy(o1.osub_t, omo[t].osub_t, sizeof o1.osub_t);
      memcpy(o1.corr, omo[t].corr, sizeof o1.corr);
      o1.om_n = omo[t].om_n;
      o1.nsub = omo[t].nsub;
      double es, ec;
      int same;
      om_compare(&o1, &o0, &es, &ec, &same);
      if (!(es <= worst_om)) worst_om = es;
      if (!(ec <= worst_corr)) worst_corr = ec;
      CHECK(same, "om: channel %u block %u: sub-block counts or centres differ", c, j);
      /* the folded path: pre_om's grid is pre's rounded to bfloat16 (qpsk_bf16_bits), om_sums
       * gives om's sums (to the rounding of om's levelled floats), x4_level gives x4's values on
       * that grid levelled */
      const uint16_t *gb = (const uint16_t *)grid2 + 2 * t * ng;
      for (size_t i = 0; i < ng; i++)
        if (gb[2 * i] != qpsk_bf16_bits(grid_pre[t * ng + i].re) ||
            gb[2 * i + 1] != qpsk_bf16_bits(grid_pre[t * ng + i].im)) {
          fold_grid_differ++;
          break;
        }
      memcpy(o1.osub, omo2[t].osub, sizeof o1.osub);
      memcpy(o1.osub_t, omo2[t].osub_t, sizeof o1.osub_t);
      memcpy(o1.corr, omo2[t].corr, sizeof o1.corr);
      o1.om_n = omo2[t].om_n;
      o1.nsub = omo2[t].nsub;
      om_compare(&o1, &o0, &es, &ec, &same);
      if (!(es <= worst_fold)) worst_fold = es;
      if (!(ec <= worst_fold_corr)) worst_fold_corr = ec;
      CHECK(same, "om_sums: channel %u block %u: sub-block counts or centres differ", c, j);
      if (k.tm[t].k1 > k.tm[t].k0) {
        const size_t nn = (size_t)(k.tm[t].k1 - k.tm[t].k0);
        for (size_t i = 0; i < ng; i++) {
          const prx_cf32 v = {qpsk_bf16_float(gb[2 * i]), qpsk_bf16_float(gb[2 * i + 1])};
          gl[i] = qpsk_om_level(v, k.D[t], k.om_gain[t]);
        }
        ref_x4(&k, t, gl, x0);
        e = test_rel_l2_cf32(w2 + c * w_stride + w0[t], x0, nn);
        if (!(e <= worst_fold_x4)) worst_fold_x4 = e;
        e = test_rel_l2_cf32(w2 + c * w_stride + w0[t], w + c * w_stride + w0[t], nn);
        if (!(e <= worst_fold_bf16)) worst_fold_bf16 = e;
      }
      e = test_rel_l2_cf32(grid + t * ng, g0, ng);
      if (!(e <= worst_gl)) worst_gl = e;
      if (k.tm[t].k1 > k.tm[t].k0) {
        ref_x4(&k, t, g0, x0);
        e = test_rel_l2_cf32(w + c * w_stride + w0[t], x0, (size_t)(k.tm[t].k1 - k.tm[t].k0));
        if (!(e <= worst_w)) worst_w = e;
      }
      ref_mf(&k, t, s0, u0);
      e = rel_l2_f64(sums + 5 * t, u0, 5);
      if (!(e <= worst_sum)) worst_sum = e;
      int64_t n = k.tm[t].k1 - k.tm[t].k0;
      if (n <= 0) continue;
      const prx_cf32 *s1 = sym + t * k.Lmax;
      e = test_rel_l2_cf32(s1, s0, (size_t)n);
      if (!(e <= worst_s)) worst_s = e;
      ref_out(&k, t, s0, b0);
      const uint8_t *b1 = bits + c * bits_stride + 2 * ob[t].out0;
      for (int64_t i = 0; i < 2 * n; i++) {
        bits_total++;
        if (b0[i] != b1[i] && !near_boundary(s0[i / 2], k.rot[t], 1e-4) &&
            !(diff && i / 2 > 0 && near_boundary(s0[i / 2 - 1], k.rot[t], 1e-4)))
          bit_diff++;
      }
    }
    for (unsigned c = 0; c < C; c++)
      for (size_t i = bits_n[c]; i < bits_stride; i++)
        untouched_bad += bits[c * bits_stride + i] != 0xaa;
    printf("sps %.3f %s %s%s%s: grid %.2e, symbols %.2e, input sums %.2e, symbol sums %.2e, "
           "bits differing %zu of %zu\n",
           sps, cf16 ? "cf16" : "cf32", diff ? "differential" : "coherent",
           pad ? "" : " (unpadded window, unblocked pre)", mix ? " mixed" : "", worst_g, worst_s,
           worst_m, worst_sum, bit_diff, bits_total);
    printf("  O&M %.2e, drift %.2e, levelled grid %.2e, x4 %.2e\n", worst_om, worst_corr, worst_gl,
           worst_w);
    printf("  om folded into pre: grid differing from pre's in bfloat16 in %zu blocks, O&M %.2e, "
           "drift %.2e, x4 %.2e (%.2e from x4 on om's float grid)\n",
           fold_grid_differ, worst_fold, worst_fold_corr, worst_fold_x4, worst_fold_bf16);
    printf("  pre without its sliding filter: grid differing in %zu blocks\n", slide_differ);
    CHECK(slide_differ == 0, "pre: %zu blocks' grid differ without the sliding filter",
          slide_differ);
    CHECK(fold_grid_differ == 0, "pre_om: %zu blocks' grid differ from pre's in bfloat16",
          fold_grid_differ);
    CHECK(worst_fold < 2e-5, "om_sums: sub-block sums differ by %.2e", worst_fold);
    CHECK(worst_fold_corr < 1e-4, "om_sums: drift correlations differ by %.2e", worst_fold_corr);
    CHECK(worst_fold_x4 < 2e-5, "x4_level: values differ by %.2e", worst_fold_x4);
    CHECK(worst_fold_bf16 < 1e-2, "x4_level: %.2e from x4 on om's float grid (bfloat16: ~2e-3)",
          worst_fold_bf16);
    free(gl);
    CHECK(worst_g < 2e-5, "pre: grid differs by %.2e", worst_g);
    CHECK(worst_om < 2e-5, "om: sub-block sums differ by %.2e", worst_om);
    CHECK(worst_corr < 1e-4, "om: drift correlations differ by %.2e", worst_corr);
    CHECK(worst_gl < 2e-5, "om: levelled grid differs by %.2e", worst_gl);
    CHECK(worst_w < 2e-5, "x4: values differ by %.2e", worst_w);
    free(x0);
    CHECK(worst_s < 2e-5, "mf: symbols differ by %.2e", worst_s);
    /* mixed rows: the kernels mix in float, the CPU in double before rounding */
    CHECK(worst_m < (mix ? 1e-7 : 1e-9), "pre: input sums differ by %.2e", worst_m);
    CHECK(worst_sum < 1e-5, "mf: symbol sums differ by %.2e", worst_sum);
    CHECK(bit_diff == 0, "out: %zu bits differ away from a decision boundary", bit_diff);
    CHECK(untouched_bad == 0, "out: %zu bytes written past the channels' bits", untouched_bad);
    free(g0);
    free(s0);
    free(b0);
  }
  cudaFree(d_rows);
  cudaFree(d_grid);
  cudaFree(d_sym);
  cudaFree(d_mom);
  cudaFree(d_sums);
  cudaFree(d_bad);
  cudaFree(d_mb);
  cudaFree(d_ob);
  cudaFree(d_bits);
  cudaFree(d_omi);
  cudaFree(d_omo);
  cudaFree(d_w0);
  cudaFree(d_w);
  free(omi);
  free(w0);
  free(grid2);
  free(w2);
  free(omo2);
  free(grid_pre);
  free(w);
  free(omo);
  S->destroy(&st);
  free(h_rows);
  free(mb);
  free(ob);
  free(bits_n);
  free(grid);
  free(sym);
  free(mom);
  free(sums);
  free(bad);
  free(bits);
  case_free(&k);
}

static void run_case(double sps, int cf16, int diff, int pad, int mix, unsigned L, uint64_t seed) {
  run_case_nb(sps, cf16, diff, pad, mix, L, 6, seed);
}

/* The CFO stage on the GPU for C windows (channel c's n[c] values at w + c w_stride + w0[c], on
 * the host) against the CPU's stage_cfo on the same values: the starts (differing only at a
 * near-tie of two bins or of the 1/8-bin rounding: counted), the CFO within tol Rs. half: the
 * stage's transform over nfft / 2 points (the default) or over nfft (0). */
static void cfo_check(const char *name, unsigned C, const prx_cf32 *w, size_t w_stride,
                      const int64_t *w0, const size_t *n, const double *e, size_t span, size_t nfft,
                      double max_nu, const double *f_cpu, double tol, int half) {
  qpsk_fir pre, mf;
  CHECK_OK(qpsk_fir_init(&pre, 4, 0.35, QPSK_PRE_SPAN, 1, 1.0));
  CHECK_OK(qpsk_fir_init(&mf, 4, 0.35, 12, 0, 1.0));
  qpsk_stages st;
  CHECK_OK(S->create(&st, &pre, &mf, C, 1, 512, 600, 4, 0));
  st.cfo_half = half;
  CHECK_OK(S->cfo_setup(&st, (unsigned)span, (unsigned)nfft, max_nu));
  qpsk_cfo_in *in = calloc(C, sizeof *in);
  qpsk_cfo_out *out = calloc(C, sizeof *out), *d_out = NULL;
  qpsk_cfo_in *d_in = NULL;
  prx_cf32 *d_w = NULL;
  for (unsigned c = 0; c < C; c++) {
    in[c].w0 = w0[c];
    in[c].n = (unsigned)n[c];
    in[c].e = e[c];
  }
  int ok = cuda_ok(cudaMalloc((void **)&d_w, C * w_stride * sizeof *d_w), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_in, C * sizeof *d_in), "cudaMalloc") &&
           cuda_ok(cudaMalloc((void **)&d_out, C * sizeof *d_out), "cudaMalloc");
  if (ok) {
    cuda_ok(cudaMemcpy(d_w, w, C * w_stride * sizeof *d_w, cudaMemcpyHostToDevice), "w");
    cuda_ok(cudaMemcpy(d_in, in, C * sizeof *d_in, cudaMemcpyHostToDevice), "in");
    cuda_ok(cudaMemset(d_out, 0xff, C * sizeof *d_out), "poison");
    CHECK_OK(S->cfo(&st, d_w, w_stride, d_in, d_out, 0));
    ok = cuda_ok(cudaDeviceSynchronize(), "cfo") &&
         cuda_ok(cudaMemcpy(out, d_out, C * sizeof *out, cudaMemcpyDeviceToHost), "out");
  }
  if (ok) {
    prx_cf32 *spec = malloc(nfft * sizeof *spec);
    double worst = 0, worst_dem = 0, spread = 0;
    unsigned starts = 0;
    for (unsigned c = 0; c < C; c++) {
      double a0, a1,
          f0 = cfo_ref(w + c * w_stride + w0[c], n[c], nfft, max_nu, e[c], spec, &a0, &a1);
      starts += out[c].nu0 != a0;
      double d = fabs(out[c].f - f0);
      if (!(d <= worst)) worst = d;
      if (f_cpu) { /* the demodulator's own estimate (its FFTW plan, not this test's) */
        d = fabs(out[c].f - f_cpu[c]);
        if (!(d <= worst_dem)) worst_dem = d;
        d = fabs(f0 - f_cpu[c]);
        if (!(d <= spread)) spread = d;
      }
    }
    printf(
        "%s (%s transform): %u channels: CFO within %.2e Rs of the CPU's (%.2e of the "
        "demodulator's, whose own estimate is %.2e from the CPU's with this test's FFT plan), %u "
        "starts differing\n",
        name, half ? "half" : "whole", C, worst, worst_dem, spread, starts);
    CHECK(worst < tol && worst_dem < tol, "%s: CFO %.2e / %.2e Rs from the CPU's", name, worst,
          worst_dem);
    CHECK(starts <= C / 64, "%s: %u refinement starts differ", name, starts);
    free(spec);
  }
  cudaFree(d_w);
  cudaFree(d_in);
  cudaFree(d_out);
  free(in);
  free(out);
  S->destroy(&st);
  qpsk_fir_free(&pre);
  qpsk_fir_free(&mf);
}

/* Random windows: 128 channels of 4th-power values of a carrier at 4 to 16 dB, lines over the
 * acquisition range, full spans and short last ones, at offsets in a strided buffer. */
static void cfo_case(uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  const unsigned C = 128;
  const size_t span = 8192, nfft = 16384, w_stride = span + 300;
  const double max_nu = 4 * 0.12;
  prx_cf32 *w = calloc(C * w_stride, sizeof *w);
  int64_t w0[128];
  size_t n[128];
  double e[128];
  for (unsigned c = 0; c < C; c++) {
    w0[c] = (int64_t)(test_rng_uniform(&r) * 300);
    n[c] = c % 5 == 4 ? 500 + (size_t)(test_rng_uniform(&r) * 7000) : span;
    e[c] = 2e-3 * (test_rng_uniform(&r) - 0.5);
    cfo_window(&r, w + c * w_stride + w0[c], n[c], (2 * test_rng_uniform(&r) - 1) * 0.95 * max_nu,
               4 + 12 * test_rng_uniform(&r));
  }
  for (int half = 1; half >= 0; half--)
    cfo_check("cfo, random windows", C, w, w_stride, w0, n, e, span, nfft, max_nu, NULL, 1e-8,
              half);
  free(w);
}

/* The demodulator's own blocks (probed) through the kernels on the GPU: pre, om, x4, mf and out
 * on its stream (C copies of the row, each channel checked) with its per-block parameters give
 * its grid, sums, 4th-power values, symbols and bits. */
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
  snprintf(name, sizeof name, "GPU, demodulator sps %.3f %.0f dB %.0f ppm %s", sps, esn0, ppm,
           diff ? "differential" : "coherent");
  if (!probe_case(&c, n, &k, &pr, &q, &x, &cpu_bits, &cpu_nbits)) {
    CHECK(0, "%s: the demodulator run failed: %s", name, prx_last_error());
  } else {
    const unsigned C = 3;
    const size_t nbk = pr.n, nb = C * nbk, ng = pr.ng, stride = n * sizeof(prx_cf32);
    const size_t w_stride = nbk * k.Lmax, bits_stride = cpu_nbits + 64;
    qpsk_stages st;
    CHECK_OK(S->create(&st, &k.pre, &k.mf, C, (unsigned)nbk, k.L, k.Lmax, k.sps, 0));
    qpsk_mf_block *mb = calloc(nb, sizeof *mb);
    qpsk_out_block *ob = calloc(nb, sizeof *ob);
    qpsk_om_in *oi = calloc(nb, sizeof *oi);
    int64_t *w0 = calloc(nb, sizeof *w0);
    for (size_t t = 0; t < nb; t++) {
      const probe_blk *p = &pr.b[t % nbk];
      mb[t] = p->mb;
      ob[t] = p->ob;
      oi[t] = p->oi;
      w0[t] = (int64_t)((t % nbk) * k.Lmax);
    }
    void *d_rows = NULL;
    prx_cf32 *d_grid = NULL, *d_sym = NULL, *d_w = NULL;
    double *d_mom = NULL, *d_sums = NULL;
    unsigned *d_bad = NULL;
    qpsk_mf_block *d_mb = NULL;
    qpsk_out_block *d_ob = NULL;
    qpsk_om_in *d_oi = NULL;
    qpsk_om_out *d_oo = NULL;
    int64_t *d_w0 = NULL;
    uint8_t *d_bits = NULL;
    int ok = cuda_ok(cudaMalloc(&d_rows, stride * C), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_grid, nb * ng * sizeof(prx_cf32)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_sym, nb * k.Lmax * sizeof(prx_cf32)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_w, C * w_stride * sizeof(prx_cf32)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_mom, nb * 4 * sizeof(double)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_sums, nb * 5 * sizeof(double)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_bad, nb * sizeof(unsigned)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_mb, nb * sizeof *mb), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_ob, nb * sizeof *ob), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_oi, nb * sizeof *oi), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_oo, nb * sizeof(qpsk_om_out)), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_w0, nb * sizeof *w0), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&d_bits, bits_stride * C), "cudaMalloc");
    prx_cf32 *grid = malloc(nb * ng * sizeof *grid), *sym = malloc(nb * k.Lmax * sizeof *sym);
    prx_cf32 *w = malloc(C * w_stride * sizeof *w);
    qpsk_om_out *oo = malloc(nb * sizeof *oo);
    double *mom = malloc(nb * 4 * sizeof *mom);
    unsigned *bad = malloc(nb * sizeof *bad);
    uint8_t *bits = malloc(bits_stride * C);
    if (ok) {
      for (unsigned ch = 0; ch < C; ch++)
        cuda_ok(cudaMemcpy((char *)d_rows + ch * stride, x, stride, cudaMemcpyHostToDevice),
                "rows");
      cuda_ok(cudaMemcpy(d_mb, mb, nb * sizeof *mb, cudaMemcpyHostToDevice), "blocks");
      cuda_ok(cudaMemcpy(d_ob, ob, nb * sizeof *ob, cudaMemcpyHostToDevice), "blocks");
      cuda_ok(cudaMemcpy(d_oi, oi, nb * sizeof *oi, cudaMemcpyHostToDevice), "blocks");
      cuda_ok(cudaMemcpy(d_w0, w0, nb * sizeof *w0, cudaMemcpyHostToDevice), "blocks");
      cuda_ok(cudaMemset(d_grid, 0xff, nb * ng * sizeof(prx_cf32)), "poison");
      cuda_ok(cudaMemset(d_sym, 0xff, nb * k.Lmax * sizeof(prx_cf32)), "poison");
      cuda_ok(cudaMemset(d_w, 0xff, C * w_stride * sizeof(prx_cf32)), "poison");
      cuda_ok(cudaMemset(d_oo, 0xff, nb * sizeof(qpsk_om_out)), "poison");
      cuda_ok(cudaMemset(d_bits, 0xaa, bits_stride * C), "poison");
      CHECK_OK(S->pre(&st, d_rows, stride, 0, (int64_t)n, d_grid, d_mom, d_bad, 0));
      CHECK_OK(S->om(&st, 0, d_oi, d_grid, d_oo, 0));
      CHECK_OK(S->x4(&st, d_mb, d_w0, d_grid, d_w, w_stride, 0));
      CHECK_OK(S->mf(&st, d_rows, stride, 0, (int64_t)n, d_mb, d_sym, d_sums, 0));
      CHECK_OK(S->out(&st, d_mb, d_ob, d_sym, d_bits, bits_stride, 0));
      ok = cuda_ok(cudaDeviceSynchronize(), "kernels");
    }
    if (ok) {
      cuda_ok(cudaMemcpy(grid, d_grid, nb * ng * sizeof *grid, cudaMemcpyDeviceToHost), "grid");
      cuda_ok(cudaMemcpy(sym, d_sym, nb * k.Lmax * sizeof *sym, cudaMemcpyDeviceToHost), "sym");
      cuda_ok(cudaMemcpy(w, d_w, C * w_stride * sizeof *w, cudaMemcpyDeviceToHost), "w");
      cuda_ok(cudaMemcpy(oo, d_oo, nb * sizeof *oo, cudaMemcpyDeviceToHost), "om");
      cuda_ok(cudaMemcpy(mom, d_mom, nb * 4 * sizeof *mom, cudaMemcpyDeviceToHost), "mom");
      cuda_ok(cudaMemcpy(bad, d_bad, nb * sizeof *bad, cudaMemcpyDeviceToHost), "counts");
      cuda_ok(cudaMemcpy(bits, d_bits, bits_stride * C, cudaMemcpyDeviceToHost), "bits");
      for (unsigned ch = 0; ch < C; ch++) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s, channel %u", name, ch);
        const size_t o = (size_t)ch * nbk;
        probe_compare(nm, &k, &pr, grid + o * ng, oo + o, w + ch * w_stride, w0, sym + o * k.Lmax,
                      mom + 4 * o, bad + o, bits + ch * bits_stride, cpu_bits, cpu_nbits);
        size_t past = 0;
        for (size_t i = cpu_nbits; i < bits_stride; i++) past += bits[ch * bits_stride + i] != 0xaa;
        CHECK(past == 0, "%s: %zu bytes written past the bits", nm, past);
      }
    }
    cudaFree(d_rows);
    cudaFree(d_grid);
    cudaFree(d_sym);
    cudaFree(d_w);
    cudaFree(d_mom);
    cudaFree(d_sums);
    cudaFree(d_bad);
    cudaFree(d_mb);
    cudaFree(d_ob);
    cudaFree(d_oi);
    cudaFree(d_oo);
    cudaFree(d_w0);
    cudaFree(d_bits);
    S->destroy(&st);
    free(mb);
    free(ob);
    free(oi);
    free(w0);
    free(grid);
    free(sym);
    free(w);
    free(oo);
    free(mom);
    free(bad);
    free(bits);
  }
  if (pr.ns > 0) { /* its spans' CFO windows, one channel each */
    const size_t ns = pr.ns, w_stride = pr.S;
    prx_cf32 *w = calloc(ns * w_stride, sizeof *w);
    int64_t *w0 = calloc(ns, sizeof *w0);
    size_t *nn = calloc(ns, sizeof *nn);
    double *e = calloc(ns, sizeof *e), *f = calloc(ns, sizeof *f);
    for (size_t i = 0; i < ns; i++) {
      memcpy(w + i * w_stride, pr.sp[i].win, pr.sp[i].nwin * sizeof *w);
      nn[i] = pr.sp[i].nwin;
      e[i] = pr.sp[i].e;
      f[i] = pr.sp[i].f;
    }
    char cname[120];
    snprintf(cname, sizeof cname, "%s, its spans' cfo", name);
    /* at a large clock offset the estimate moves by ~1e-7 Rs with the FFT's rounding (the CPU's
     * plans differ from each other by as much) */
    cfo_check(cname, (unsigned)ns, w, w_stride, w0, nn, e, pr.S, pr.nfft, pr.max_nu, f, 5e-7, 1);
    free(w);
    free(w0);
    free(nn);
    free(e);
    free(f);
  }
  case_free(&k);
  probe_free(&pr);
  prx_qpsk_destroy(q);
  free(x);
  free(cpu_bits);
}

/* The CFO alias test's measure (the stages' alias entry: each channel's samples in segments, the
 * later ones from a warm-up) against qpsk_alias_step one sample after the other in double on the
 * host, over 2^15 samples of 8 channels (a carrier and noise, a NaN and an infinity among them),
 * cf32 and cf16 rows with a pitch, with and without mixing (the reference mixes in double: the
 * kernel's float rotation, ~1e-7 a sample, bounds the tolerance then; 1e-12 without), in one call
 * and in random calls (some shorter than the warm-up) carrying the sums on, at sps 4, 16/3 and 12
 * (a longer warm-up): the lag-one and power sums and the low-pass's last state. */
static void alias_case(double sps, int cf16, int mix, uint64_t seed) {
  enum { AC = 8, AN = 32768, APITCH = AN + 100 };
  test_rng r;
  test_rng_seed(&r, seed);
  const size_t ssz = cf16 ? 4 : 8;
  prx_cf32 *x = malloc(sizeof *x * AC * APITCH);
  void *h_rows = malloc(ssz * AC * APITCH);
  double f[AC];
  for (unsigned c = 0; c < AC; c++) {
    const double nu = test_rng_uniform(&r) - 0.5, ph = 6.283185307179586 * test_rng_uniform(&r);
    f[c] = mix ? 0.4 * (test_rng_uniform(&r) - 0.5) : 0;
    for (size_t t = 0; t < APITCH; t++) {
      const double w = ph + 6.283185307179586 * (nu / sps + f[c]) * (double)t;
      prx_cf32 v = {(float)(cos(w) + 0.3 * test_rng_gauss(&r)),
                    (float)(sin(w) + 0.3 * test_rng_gauss(&r))};
      if (cf16) v = (prx_cf32){half_round(v.re), half_round(v.im)};
      x[c * APITCH + t] = v;
    }
    x[c * APITCH + 1000 + 37 * c].re = NAN;
    x[c * APITCH + 20000 + c].im = INFINITY;
    for (size_t t = 0; t < APITCH; t++) {
      const prx_cf32 v = x[c * APITCH + t];
      if (cf16) {
        ((uint16_t *)h_rows)[2 * (c * APITCH + t)] = to_half(v.re);
        ((uint16_t *)h_rows)[2 * (c * APITCH + t) + 1] = to_half(v.im);
      } else {
        ((prx_cf32 *)h_rows)[c * APITCH + t] = v;
      }
    }
  }
  /* the reference: each channel's samples mixed in double, one step after the other */
  const double a = qpsk_alias_gain(sps);
  qpsk_alias_sums ref[AC];
  memset(ref, 0, sizeof ref);
  for (unsigned c = 0; c < AC; c++)
    for (size_t t = 0; t < AN; t++) {
      const prx_cf32 v = x[c * APITCH + t];
      const double w = -6.283185307179586 * f[c] * (double)t, cs = cos(w), sn = sin(w);
      qpsk_alias_step(&ref[c], a, v.re * cs - v.im * sn, v.re * sn + v.im * cs);
    }
  qpsk_alias_sums got[AC];
  qpsk_stages st;
  memset(&st, 0, sizeof st);
  st.C = AC;
  st.sps = sps;
  st.cf16 = cf16;
  void *d_rows = NULL;
  qpsk_alias_sums *d_sums = NULL;
  int ok =
      (!mix || S->mix(&st, f) == PRX_OK) &&
      cuda_ok(cudaMalloc(&d_rows, ssz * AC * APITCH), "cudaMalloc") &&
      cuda_ok(cudaMalloc((void **)&d_sums, sizeof got), "cudaMalloc") &&
      cuda_ok(cudaMemcpy(d_rows, h_rows, ssz * AC * APITCH, cudaMemcpyHostToDevice), "cudaMemcpy");
  for (int chunked = 0; chunked < 2 && ok; chunked++) {
    cudaMemset(d_sums, 0xff, sizeof got); /* (NaN: a fresh call must not read them) */
    for (size_t s0 = 0, call = 0; s0 < AN && ok; call++) {
      size_t n = AN - s0;
      if (chunked) {
        const double u = test_rng_uniform(&r);
        const size_t m = u < 0.3 ? 1 + (size_t)(60 * test_rng_uniform(&r))
                                 : 1 + (size_t)(9000 * test_rng_uniform(&r));
        if (m < n) n = m;
      }
      ok = S->alias(&st, d_rows, APITCH * ssz, (int64_t)s0, n, call == 0, d_sums, 0) == PRX_OK;
      CHECK(ok, "alias (sps %g, %zu samples from %zu): %s", sps, n, s0, prx_last_error());
      s0 += n;
    }
    ok = ok && cuda_ok(cudaMemcpy(got, d_sums, sizeof got, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const double tol = mix ? 1e-5 : 1e-12;
    for (unsigned c = 0; c < AC && ok; c++) {
      const double p = ref[c].p, amp = sqrt(p / AN);
      double ey = 0;
      for (int j = 0; j < QPSK_ALIAS_POLES; j++)
        ey = fmax(
            ey, fmax(fabs(got[c].y[j][0] - ref[c].y[j][0]), fabs(got[c].y[j][1] - ref[c].y[j][1])));
      const double er = fmax(fabs(got[c].r[0] - ref[c].r[0]), fabs(got[c].r[1] - ref[c].r[1]));
      CHECK(er <= tol * p && fabs(got[c].p - p) <= tol * p && ey <= 10 * tol * amp,
            "alias sums, sps %g, %s, %s, %s, channel %u: lag-one off by %.3g, power by %.3g "
            "(of %.6g), state by %.3g (of %.3g)",
            sps, cf16 ? "cf16" : "cf32", mix ? "mixed" : "unmixed",
            chunked ? "random calls" : "one call", c, er, got[c].p - p, p, ey, amp);
    }
  }
  cudaFree(d_rows);
  cudaFree(d_sums);
  cudaFree(st.d_mix);
  free(x);
  free(h_rows);
}

int main(void) {
  const prx_cuda_module *m = prx_cuda_module_get();
  if (!m) {
    printf("test_qpsk_stages_cuda: skipped (%s)\n", prx_cuda_module_why());
    return 77;
  }
  S = m->qpsk_stages;
  run_case(4.0, 0, 1, 1, 0, 512, 21);
  run_case(16.0 / 3.0, 0, 0, 1, 0, 512, 22);
  run_case(4.0, 1, 0, 1, 0, 512, 23);
  run_case(16.0 / 3.0, 1, 1, 1, 0, 512, 24);
  run_case(4.0, 0, 0, 0, 0, 512, 25); /* the matched filter's window without padding */
  run_case(16.0 / 3.0, 1, 1, 0, 0, 512, 26);
  cfo_case(29);
  run_case(4.0, 0, 1, 1, 1, 512, 27); /* per-channel mixing */
  run_case(16.0 / 3.0, 1, 0, 1, 1, 512, 28);
  /* blocks of ~1024 symbols: sps 4's quads two passes a thread (the loop of qpsk_mf4_kernel) */
  run_case(4.0, 0, 0, 1, 0, 1024, 35);
  /* and differential bits over them: out's second turn takes its first step from the first's */
  run_case(16.0 / 3.0, 0, 1, 1, 0, 1024, 36);
  run_case_nb(4.0, 0, 1, 1, 0, 256, 40, 37); /* a span of 40 blocks: pre in two launches */
  run_case_nb(16.0 / 3.0, 1, 0, 1, 0, 256, 40, 38);
  /* blocks of 330 symbols: sub-blocks of 33 symbols, 132 grid outputs, not whole chunks of 16
   * (pre_om's om_tile finds each chunk's span by qpsk_om_chunk_span, not by its flat index) */
  run_case(4.0, 0, 0, 1, 0, 330, 39);
  run_case(16.0 / 3.0, 1, 1, 1, 0, 330, 40);
  real_case(4.0, 14, 100, 1, 31);
  real_case(16.0 / 3.0, 12, 1000, 1, 32);
  real_case(4.0, 14, 3000, 0, 33);
  real_case(4.0, 6, 100, 1, 34);
  for (int i = 0; i < 4; i++) {
    alias_case(4.0, i & 1, i >> 1, 41 + (uint64_t)i);
    alias_case(16.0 / 3.0, i & 1, i >> 1, 45 + (uint64_t)i);
  }
  alias_case(12.0, 0, 1, 49);
  return test_finish("test_qpsk_stages_cuda");
}
#else
int main(void) {
  printf("test_qpsk_stages_cuda: built without CUDA: skipped\n");
  return 77;
}
#endif
