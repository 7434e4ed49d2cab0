/* Benchmark of the demodulator bank's CUDA stage kernels (src/qpsk/qpsk_stages_cuda.cu): the
 * pre-filter grid with the input sums (pre), the O&M sums with the grid levelled (om), the
 * 4th-power values at the instants (x4), the CFO spectra, peak and refinement (cfo), the matched
 * filter at the instants with DC, level, de-rotation and the V&V/M2M4 sums (mf), the decisions
 * (out), each alone, the six in sequence (all: x4 writing the CFO stage's rows too, x4_rows, and
 * cfo on them, cfo_fed, as the bank's driver runs them) and the five without cfo (all5, the set
 * measured before the CFO stage existed); om folded into pre (pre_om: pre with the O&M sums,
 * om_sums: the records from them, x4_level: x4 levelling what it reads; all_folded: those with
 * cfo, mf, out; x4_level_cfo: x4_level then cfo, whose rows x4_level wrote, where cfo alone copies
 * the windows);
 * the CFO stage over the whole zero-padded transform (cfo_whole, and all_folded_whole: the folded
 * sequence with it) where the default takes half of it (from 192 channels);
 * pre and pre_om without their sliding filter (pre_unslid, pre_om_unslid: the four- and
 * three-output register-blocked filters instead);
 * pre and mf also with per-channel mixing (pre_mix, mf_mix), pre without its four-output register
 * blocking (pre_unblocked: at sps 16/3 the same kernel as pre, whose three-output filter has no
 * switch) and mf without its padded window (mf_unpadded) or its pairs of symbols (mf_unblocked),
 * and mf with the bank's runs of one timing at this clock (mf_runs: qpsk_run_length, 96 symbols
 * at 100 ppm, where the other rows take each block as one run);
 * device-resident, for all channels at once.
 *
 * Configurations: 4 and 16/3 samples/symbol, C = 64, 1024 and 4096 channels, cf32 and cf16 rows
 * (row pitch a multiple of 64 bytes), one CFO span per call: 16 blocks of 512 symbols per channel;
 * RRC 0.35, matched filter span 12, pre-filter span 4; a clock offset of 100 ppm (each block one
 * run of instants), random timing, CFO and phase per block; random Gaussian rows (16 distinct rows
 * repeated over the channels: every channel still reads its own memory).
 *
 * Throughput: symbols (C x 16 x 512) per second, median of REPS timed launches (device events)
 * after WARM untimed ones. Floor: the D2D copy bandwidth measured here (bytes read + written per
 * second) over the one-pass bytes per symbol (sps x sample bytes read + 2 bytes of bits); each
 * kernel's achieved bandwidth is over the bytes it moves (its input window, grid or symbols
 * written / read, bits written).
 *
 * Not the whole demodulator: the serial passes between the kernels are not included
 * (bench/GPU_NOTES.md). Options: --case SPS:C:FORMAT (repeatable, e.g. 4:1024:cf32) runs only
 * those configurations; --profile launches each sequence (all, all_folded) and pre without its
 * sliding filter once, untimed, for a profiler (ncu -k regex:qpsk). Output: JSON lines, then a
 * table. */
#include "testutil.h"

#include "qpsk/qpsk_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRX_HAVE_CUDA
#include "core/cuda_module.h"
#include "qpsk/qpsk_stages_cuda.h"

#include "bench_cuda.h"
#include "dsp/pack.h"

static const prx_qpsk_stages_cuda *S; /* the kernels, in the CUDA module */

#define WARM 2
#define REPS 15
#define NB 16
#define L 512
#define DISTINCT 16

static int cmp_f(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  const qpsk_stages *st;
  const void *rows;
  size_t stride;
  int64_t n_total;
  prx_cf32 *grid, *sym;
  double *mom, *sums;
  unsigned *bad;
  const qpsk_mf_block *mb;
  const qpsk_out_block *ob;
  uint8_t *bits;
  size_t bits_stride;
  const qpsk_om_in *omi;
  qpsk_om_out *omo;
  const int64_t *w0;
  prx_cf32 *w;
  size_t w_stride;
  const qpsk_cfo_in *cfi;
  qpsk_cfo_out *cfo;
  double *omsum;
  int64_t g_hi;
} bench_bufs;

enum {
  K_PRE,
  K_OM,
  K_X4,
  K_CFO,
  K_MF,
  K_OUT,
  K_ALL,
  K_ALL5,
  K_PREOM,
  K_OMSUMS,
  K_X4L,
  K_FOLD,
  K_MF0,
  K_MF1,
  K_PRE0,
  K_PREMIX,
  K_MFMIX,
  K_CFOW,
  K_FOLDW,
  K_MFRUNS,
  K_PRE1,
  K_PREOM1,
  K_X4CFO,
  K_N
};
static const char *const kname[K_N] = {"pre",
                                       "om",
                                       "x4",
                                       "cfo",
                                       "mf",
                                       "out",
                                       "all",
                                       "all5",
                                       "pre_om",
                                       "om_sums",
                                       "x4_level",
                                       "all_folded",
                                       "mf_unpadded",
                                       "mf_unblocked",
                                       "pre_unblocked",
                                       "pre_mix",
                                       "mf_mix",
                                       "cfo_whole",
                                       "all_folded_whole",
                                       "mf_runs",
                                       "pre_unslid",
                                       "pre_om_unslid",
                                       "x4_level_cfo"};

/* x4 (in NULL) or x4_level also into the CFO stage's rows, then cfo on them (x4_rows, cfo_fed: the
 * bank's driver) */
static prx_status x4_cfo(const bench_bufs *b, const qpsk_om_in *in) {
  prx_cf32 *rows;
  size_t rs;
  prx_status s = S->cfo_rows(b->st, &rows, &rs);
  if (!s) s = S->x4_rows(b->st, b->mb, b->w0, in, b->grid, b->w, b->w_stride, rows, rs, 0);
  if (!s) s = S->cfo_fed(b->st, b->w, b->w_stride, b->w0, b->cfi, b->cfo, 0);
  return s;
}

static int launch(const bench_bufs *b, int which) {
  prx_status s = PRX_OK;
  if (which == K_FOLD || which == K_PREOM || which == K_OMSUMS || which == K_X4L ||
      which == K_X4CFO) {
    /* om folded into pre: pre_om, om_sums, x4_level, then cfo, mf and out (x4_level_cfo: the
     * two, the CFO stage's rows written by x4_level: x4_rows and cfo_fed) */
    const int all = which == K_FOLD, pair = which == K_X4CFO;
    if (all || which == K_PREOM)
      s = S->pre_om(b->st, b->rows, b->stride, 0, b->n_total, b->g_hi, b->grid, b->mom, b->bad,
                    b->omsum, 0);
    if (!s && (all || which == K_OMSUMS)) s = S->om_sums(b->st, 0, b->omi, b->omsum, b->omo, 0);
    if (!s && which == K_X4L)
      s = S->x4_level(b->st, b->mb, b->w0, b->omi, b->grid, b->w, b->w_stride, 0);
    if (!s && (all || pair)) s = x4_cfo(b, b->omi);
    if (!s && all) s = S->mf(b->st, b->rows, b->stride, 0, b->n_total, b->mb, b->sym, b->sums, 0);
    if (!s && all) s = S->out(b->st, b->mb, b->ob, b->sym, b->bits, b->bits_stride, 0);
    if (s) fprintf(stderr, "launch: %s\n", prx_last_error());
    return s != PRX_OK;
  }
  const int all = which == K_ALL || which == K_ALL5;
  if (all || which == K_PRE)
    s = S->pre(b->st, b->rows, b->stride, 0, b->n_total, b->grid, b->mom, b->bad, 0);
  if (!s && (all || which == K_OM)) s = S->om(b->st, 0, b->omi, b->grid, b->omo, 0);
  if (!s && (which == K_ALL5 || which == K_X4))
    s = S->x4(b->st, b->mb, b->w0, b->grid, b->w, b->w_stride, 0);
  if (!s && which == K_ALL) s = x4_cfo(b, NULL);
  if (!s && which == K_CFO) s = S->cfo(b->st, b->w, b->w_stride, b->cfi, b->cfo, 0);
  if (!s && (all || which == K_MF))
    s = S->mf(b->st, b->rows, b->stride, 0, b->n_total, b->mb, b->sym, b->sums, 0);
  if (!s && (all || which == K_OUT))
    s = S->out(b->st, b->mb, b->ob, b->sym, b->bits, b->bits_stride, 0);
  if (s) fprintf(stderr, "launch: %s\n", prx_last_error());
  return s != PRX_OK;
}

/* median seconds of one launch of `which` (a K_ kernel, or K_ALL: the five in sequence) */
static double time_it(const bench_bufs *b, int which) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float ms[REPS];
  for (int r = 0; r < WARM; r++)
    if (launch(b, which)) return NAN;
  for (int r = 0; r < REPS; r++) {
    cudaEventRecord(e0, 0);
    if (launch(b, which)) return NAN;
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms[r], e0, e1);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  if (cudaDeviceSynchronize() != cudaSuccess) return NAN;
  qsort(ms, REPS, sizeof ms[0], cmp_f);
  return ms[REPS / 2] * 1e-3;
}

/* FNV-1a of the matched filter's symbols (each block's owned ones, as bytes) after one launch of
 * mf on the blocks mb, and in *sh of its V&V sums (5 doubles a block): equal under two modules
 * whose products and sums keep every value */
static uint64_t mf_hash(const bench_bufs *b, const qpsk_mf_block *mb, size_t nb, unsigned Lmax,
                        uint64_t *sh) {
  prx_cf32 *y = malloc(nb * Lmax * sizeof *y);
  double *sums = malloc(nb * 5 * sizeof *sums);
  uint64_t h = TEST_FNV_BASIS;
  *sh = 0;
  if (!y || !sums || launch(b, K_MF) ||
      cudaMemcpy(y, b->sym, nb * Lmax * sizeof *y, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(sums, b->sums, nb * 5 * sizeof *sums, cudaMemcpyDeviceToHost) != cudaSuccess) {
    free(y);
    free(sums);
    return 0;
  }
  for (size_t i = 0; i < nb; i++) {
    h = test_fnv1a(h, y + i * Lmax, (size_t)(mb[i].t.k1 - mb[i].t.k0) * sizeof *y);
  }
  *sh = test_fnv1a(TEST_FNV_BASIS, sums, nb * 5 * sizeof *sums);
  free(y);
  free(sums);
  return h;
}

/* FNV-1a of out's bits (each block's 2 n bytes in its channel's row) after one launch of mf and
 * one of out on the blocks mb, ob: equal under two modules whose decisions keep every bit */
static uint64_t out_hash(const bench_bufs *b, const qpsk_mf_block *mb, const qpsk_out_block *ob,
                         size_t nb, unsigned C) {
  uint8_t *bits = malloc(b->bits_stride * C);
  uint64_t h = TEST_FNV_BASIS;
  if (!bits || launch(b, K_MF) || launch(b, K_OUT) ||
      cudaMemcpy(bits, b->bits, b->bits_stride * C, cudaMemcpyDeviceToHost) != cudaSuccess) {
    free(bits);
    return 0;
  }
  for (size_t i = 0; i < nb; i++)
    h = test_fnv1a(h, bits + (i / NB) * b->bits_stride + 2 * ob[i].out0,
                   2 * (size_t)(mb[i].t.k1 - mb[i].t.k0));
  free(bits);
  return h;
}

/* FNV-1a of pre_om's outputs (the grid: ng bfloat16 pairs a block, 4 bytes each; the input sums
 * and the non-finite counts, every byte) after one launch of pre_om: equal under two modules
 * whose pre_om keeps every value */
static uint64_t pre_hash(const bench_bufs *b, size_t nb, size_t ng) {
  const size_t grid_bytes = nb * ng * 4; /* (the first half of the float grid's buffer) */
  void *g = malloc(grid_bytes);
  double *m = malloc(nb * 4 * sizeof *m);
  unsigned *bad = malloc(nb * sizeof *bad);
  uint64_t h = TEST_FNV_BASIS;
  if (g && m && bad && !launch(b, K_PREOM) &&
      cudaMemcpy(g, b->grid, grid_bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
      cudaMemcpy(m, b->mom, nb * 4 * sizeof *m, cudaMemcpyDeviceToHost) == cudaSuccess &&
      cudaMemcpy(bad, b->bad, nb * sizeof *bad, cudaMemcpyDeviceToHost) == cudaSuccess) {
    h = test_fnv1a(h, g, grid_bytes);
    h = test_fnv1a(h, m, nb * 4 * sizeof *m);
    h = test_fnv1a(h, bad, nb * sizeof *bad);
  } else {
    h = 0;
  }
  free(g);
  free(m);
  free(bad);
  return h;
}

/* FNV-1a of om_sums' records (every byte of each) after one launch of pre_om and one of om_sums:
 * equal under two modules whose records keep every field's value */
static uint64_t om_hash(const bench_bufs *b, size_t nb) {
  qpsk_om_out *r = malloc(nb * sizeof *r);
  uint64_t h = TEST_FNV_BASIS;
  if (!r || launch(b, K_PREOM) || launch(b, K_OMSUMS) ||
      cudaMemcpy(r, b->omo, nb * sizeof *r, cudaMemcpyDeviceToHost) != cudaSuccess) {
    free(r);
    return 0;
  }
  h = test_fnv1a(h, r, nb * sizeof *r);
  free(r);
  return h;
}

int main(int argc, char **argv) {
  int profile = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--profile")) {
      profile = 1;
    } else if (strcmp(argv[i], "--case") || i + 1 == argc) {
      fprintf(stderr, "usage: bench_qpsk_stages [--profile] [--case SPS:C:cf32|cf16]...\n");
      return 2;
    } else {
      i++;
    }
  const double spss[2] = {4, 16.0 / 3};
  const unsigned Cs[3] = {64, 1024, 4096};
  if (!bench_cases_valid(argc, argv, spss, 2, Cs, 3)) return 2;
  const prx_cuda_module *m = prx_cuda_module_get();
  if (!m) {
    printf("bench_qpsk_stages: skipped (%s)\n", prx_cuda_module_why());
    return 77;
  }
  S = m->qpsk_stages;
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  const double bw = bench_d2d_bandwidth();
  printf("{\"bench\":\"qpsk_stages\",\"gpu\":\"%s\",\"d2d_bytes_per_s\":%.4g}\n", prop.name, bw);
  char table[16][800];
  int nt = 0, fail = 0;
  test_rng r;
  test_rng_seed(&r, 5);
  for (int si = 0; si < 2; si++) {
    const double sps = spss[si];
    qpsk_fir pre, mf;
    if (qpsk_fir_init(&pre, sps, 0.35, QPSK_PRE_SPAN, sps / 4, 1.0) ||
        qpsk_fir_init(&mf, sps, 0.35, 12, 0, 1.0))
      return 1;
    const unsigned Lmax = L + (unsigned)ceil(L * QPSK_MAX_DRIFT / (1 - QPSK_MAX_DRIFT)) + 3;
    const int64_t n_total = (int64_t)ceil(NB * L * sps) + 64;
    const size_t pitch = ((size_t)n_total + 15) / 16 * 16;
    prx_cf32 *h32 = malloc(DISTINCT * pitch * sizeof *h32);
    uint16_t *h16 = malloc(DISTINCT * pitch * 4);
    test_fill_cf32(&r, h32, DISTINCT * pitch, 0.7);
    prx_pack_cf16(h32, DISTINCT * pitch, h16);
    for (int ci = 0; ci < 3; ci++) {
      const unsigned C = Cs[ci];
      const size_t nb = (size_t)C * NB, ng = 4 * (size_t)L + 2 * QPSK_GM;
      /* block parameters: 100 ppm, random timing, CFO and phase */
      qpsk_mf_block *mb = calloc(nb, sizeof *mb);
      qpsk_out_block *ob = calloc(nb, sizeof *ob);
      qpsk_om_in *omi = calloc(nb, sizeof *omi); /* DC 0, gain 1: repeated launches keep the grid */
      int64_t *w0 = calloc(nb, sizeof *w0);
      const double d = -1e-4 / (1 + 1e-4);
      for (unsigned c = 0; c < C; c++) {
        int64_t out = 0;
        double f = 0.2 * (test_rng_uniform(&r) - 0.5);
        for (unsigned j = 0; j < NB; j++) {
          qpsk_mf_block *p = &mb[(size_t)c * NB + j];
          p->t.b = j;
          p->t.d = d;
          p->t.tau = test_rng_uniform(&r) - 0.5;
          double Cb = (j + 0.5) * L;
          p->t.k0 = (int64_t)ceil(((double)j * L + d * Cb) / (1 + d) - p->t.tau);
          p->t.k1 = (int64_t)ceil(((double)(j + 1) * L + d * Cb) / (1 + d) - p->t.tau);
          p->t.R = p->t.k1 - p->t.k0;
          p->theta = 6.28 * test_rng_uniform(&r);
          p->omega = 2 * M_PI * f / sps;
          p->gain = 1.4f;
          qpsk_out_block *o = &ob[(size_t)c * NB + j];
          o->rot.re = 0.7f;
          o->rot.im = 0.7f;
          o->diff = 1;
          o->out0 = out;
          w0[(size_t)c * NB + j] = out;
          out += p->t.k1 - p->t.k0;
          omi[(size_t)c * NB + j].gain = 1;
          omi[(size_t)c * NB + j].g_hi = INT64_MAX;
        }
      }
      /* the CFO windows: each channel's span of 4th-power values from x4; mixing frequencies */
      qpsk_cfo_in *cfi = calloc(C, sizeof *cfi);
      double *fmix = calloc(C, sizeof *fmix);
      for (unsigned c = 0; c < C; c++) {
        const qpsk_mf_block *last = &mb[(size_t)c * NB + NB - 1];
        cfi[c].n = (unsigned)(w0[(size_t)c * NB + NB - 1] + last->t.k1 - last->t.k0);
        cfi[c].e = 1e-4;
        fmix[c] = test_rng_uniform(&r) - 0.5;
      }
      for (int f = 0; f < 2; f++) {
        if (!bench_case_wanted(argc, argv, sps, C, f ? "cf16" : "cf32")) continue;
        const size_t ssz = f ? 4 : 8, stride = pitch * ssz;
        qpsk_stages st;
        if (S->create(&st, &pre, &mf, C, NB, L, Lmax, sps, f) ||
            S->cfo_setup(&st, NB * L, 2 * NB * L, 4 * 0.12)) {
          fprintf(stderr, "create: %s\n", prx_last_error());
          return 1;
        }
        bench_bufs b;
        memset(&b, 0, sizeof b);
        b.st = &st;
        b.stride = stride;
        b.n_total = n_total;
        b.bits_stride = 2 * (size_t)NB * Lmax;
        b.w_stride = (size_t)NB * Lmax;
        b.g_hi = INT64_MAX;
        void *rows = NULL;
        int ok = !cudaMalloc(&rows, stride * C) &&
                 !cudaMalloc((void **)&b.grid, nb * ng * sizeof(prx_cf32)) &&
                 !cudaMalloc((void **)&b.sym, nb * Lmax * sizeof(prx_cf32)) &&
                 !cudaMalloc((void **)&b.mom, nb * 4 * sizeof(double)) &&
                 !cudaMalloc((void **)&b.sums, nb * 5 * sizeof(double)) &&
                 !cudaMalloc((void **)&b.bad, nb * sizeof(unsigned)) &&
                 !cudaMalloc((void **)&b.mb, nb * sizeof *mb) &&
                 !cudaMalloc((void **)&b.ob, nb * sizeof *ob) &&
                 !cudaMalloc((void **)&b.bits, b.bits_stride * C) &&
                 !cudaMalloc((void **)&b.omi, nb * sizeof *omi) &&
                 !cudaMalloc((void **)&b.omo, nb * sizeof(qpsk_om_out)) &&
                 !cudaMalloc((void **)&b.w0, nb * sizeof *w0) &&
                 !cudaMalloc((void **)&b.w, b.w_stride * C * sizeof(prx_cf32)) &&
                 !cudaMalloc((void **)&b.cfi, C * sizeof *cfi) &&
                 !cudaMalloc((void **)&b.omsum, nb * (st.nsub + 1) * QPSK_OMS * sizeof(double)) &&
                 !cudaMalloc((void **)&b.cfo, C * sizeof(qpsk_cfo_out));
        if (!ok) {
          fprintf(stderr, "cudaMalloc failed at C = %u\n", C);
          return 1;
        }
        b.rows = rows;
        for (unsigned c = 0; c < C; c++)
          cudaMemcpy((char *)rows + c * stride,
                     f ? (const void *)(h16 + 2 * (c % DISTINCT) * pitch)
                       : (const void *)(h32 + (c % DISTINCT) * pitch),
                     stride, cudaMemcpyHostToDevice);
        cudaMemcpy((void *)b.mb, mb, nb * sizeof *mb, cudaMemcpyHostToDevice);
        cudaMemcpy((void *)b.ob, ob, nb * sizeof *ob, cudaMemcpyHostToDevice);
        cudaMemcpy((void *)b.omi, omi, nb * sizeof *omi, cudaMemcpyHostToDevice);
        cudaMemcpy((void *)b.w0, w0, nb * sizeof *w0, cudaMemcpyHostToDevice);
        cudaMemcpy((void *)b.cfi, cfi, C * sizeof *cfi, cudaMemcpyHostToDevice);
        if (profile) { /* each sequence once, untimed (for a profiler) */
          if (launch(&b, K_ALL) || launch(&b, K_FOLD) || cudaDeviceSynchronize() != cudaSuccess)
            fail = 1;
          /* and pre without its sliding filter, for the comparison */
          st.pre_slide = 0;
          if (launch(&b, K_PRE) || cudaDeviceSynchronize() != cudaSuccess) fail = 1;
          st.pre_slide = 1;
          printf("profiled sps %.3f C %u %s\n", sps, C, f ? "cf16" : "cf32");
          goto release;
        }
        double t[K_N];
        for (int w = 0; w <= K_FOLD; w++) t[w] = time_it(&b, w);
        t[K_X4CFO] = time_it(&b, K_X4CFO);
        uint64_t hash[3], shash[3]; /* mf's symbols and sums: one run a block, the bank's runs,
                                       mixed */
        hash[0] = mf_hash(&b, mb, nb, Lmax, &shash[0]);
        const uint64_t ohash = out_hash(&b, mb, ob, nb, C), omhash = om_hash(&b, nb),
                       phash = pre_hash(&b, nb, ng);
        /* the matched filter without the padded window and the pre-filter without the
         * register blocking, for the comparison */
        st.mf_pad = 0;
        t[K_MF0] = time_it(&b, K_MF);
        st.mf_pad = 1;
        const int mblk = st.mf_block;
        st.mf_block = 0;
        t[K_MF1] = time_it(&b, K_MF);
        st.mf_block = mblk;
        const int blk = st.pre_block;
        st.pre_block = 0;
        t[K_PRE0] = time_it(&b, K_PRE);
        st.pre_block = blk;
        /* pre and pre_om without the sliding filter (the four- and three-output ones) */
        st.pre_slide = 0;
        t[K_PRE1] = time_it(&b, K_PRE);
        t[K_PREOM1] = time_it(&b, K_PREOM);
        st.pre_slide = 1;
        if (S->mix(&st, fmix)) {
          fprintf(stderr, "mix: %s\n", prx_last_error());
          return 1;
        }
        t[K_PREMIX] = time_it(&b, K_PRE);
        t[K_MFMIX] = time_it(&b, K_MF);
        hash[2] = mf_hash(&b, mb, nb, Lmax, &shash[2]);
        S->mix(&st, NULL);
        /* the bank's runs of one timing (qpsk_serial_span's R: a multiple of 8 P symbols, P sps
         * an integer) in place of one run a block */
        {
          const unsigned P = qpsk_phase_period(sps);
          qpsk_mf_block *mr = malloc(nb * sizeof *mr);
          memcpy(mr, mb, nb * sizeof *mr);
          for (size_t i = 0; i < nb; i++)
            mr[i].t.R = qpsk_mf_run_length(mr[i].t.d, mr[i].t.k1 - mr[i].t.k0, P);
          cudaMemcpy((void *)b.mb, mr, nb * sizeof *mr, cudaMemcpyHostToDevice);
          t[K_MFRUNS] = time_it(&b, K_MF);
          hash[1] = mf_hash(&b, mr, nb, Lmax, &shash[1]);
          cudaMemcpy((void *)b.mb, mb, nb * sizeof *mb, cudaMemcpyHostToDevice);
          free(mr);
        }
        /* the CFO stage's transform over the whole zero-padded nfft (before cfo_half) */
        const unsigned half_len = st.cfo_len; /* the default's (QPSK_CFO_HALF_MIN_CHANNELS) */
        const int half0 = st.cfo_half;
        st.cfo_half = 0;
        if (S->cfo_setup(&st, NB * L, 2 * NB * L, 4 * 0.12)) {
          fprintf(stderr, "cfo_setup: %s\n", prx_last_error());
          return 1;
        }
        t[K_CFOW] = time_it(&b, K_CFO);
        t[K_FOLDW] = time_it(&b, K_FOLD);
        st.cfo_half = half0;
        if (S->cfo_setup(&st, NB * L, 2 * NB * L, 4 * 0.12)) {
          fprintf(stderr, "cfo_setup: %s\n", prx_last_error());
          return 1;
        }
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
          fprintf(stderr, "C = %u: %s\n", C, cudaGetErrorString(e));
          fail = 1;
        }
        const double syms = (double)C * NB * L;
        const double in_b = sps * ssz; /* input bytes per symbol */
        const double floor_gsym = bw / (in_b + 2) * 1e-9;
        /* bytes each kernel moves per symbol: pre reads its window (about the block's samples)
         * and writes the grid (4 + 8 / L values); om reads and writes the grid; x4 reads 4 grid
         * values and writes one; mf reads its window and writes the symbol; out reads the symbol
         * and writes 2 bits */
        const double gb = 8.0 * (double)ng / L;
        /* cfo: the window read twice (fill, refinement; three times with half the transform: the
         * odd bins) and the transform's rows written, read and written by the FFT, read by the
         * peak: 8 (2 + 4 len / S) bytes per symbol (len = nfft, or nfft / 2 with half of it).
         * After x4 (the sequences, x4_level_cfo) the rows are x4's (x4_rows, cfo_fed): the
         * fill's read and write gone, x4 writing each value twice (x4 and x4_level alone once) */
        const double cb = 8.0 * ((half0 ? 3 : 2) + 4.0 * half_len / (NB * L)),
                     cbw = 8.0 * (2 + 4.0 * 2 * NB * L / (NB * L)),
                     cbf = 8.0 * ((half0 ? 2 : 1) + 3.0 * half_len / (NB * L)),
                     cbwf = 8.0 * (1 + 3.0 * 2 * NB * L / (NB * L));
        double bytes[K_N] = {0};
        bytes[K_PRE] = bytes[K_PRE0] = bytes[K_PREMIX] = bytes[K_PREOM] = in_b + gb;
        bytes[K_PRE1] = bytes[K_PREOM1] = in_b + gb;
        bytes[K_OM] = 2 * gb;
        bytes[K_X4] = bytes[K_X4L] = 32 + 8;
        bytes[K_X4CFO] = bytes[K_X4L] + 8 + cbf;
        bytes[K_CFO] = cb;
        bytes[K_CFOW] = cbw;
        bytes[K_MF] = bytes[K_MF0] = bytes[K_MF1] = bytes[K_MFMIX] = bytes[K_MFRUNS] = in_b + 8;
        bytes[K_OUT] = 8 + 2;
        /* om_sums reads (nsub + 1) x 6 doubles and writes an 888-byte record a block */
        bytes[K_OMSUMS] = ((st.nsub + 1) * QPSK_OMS * 8.0 + sizeof(qpsk_om_out)) / L;
        /* each sequence's bytes per symbol */
        bytes[K_ALL] =
            bytes[K_PRE] + bytes[K_OM] + bytes[K_X4] + 8 + cbf + bytes[K_MF] + bytes[K_OUT];
        bytes[K_FOLD] =
            bytes[K_PREOM] + bytes[K_OMSUMS] + bytes[K_X4CFO] + bytes[K_MF] + bytes[K_OUT];
        bytes[K_FOLDW] = bytes[K_FOLD] - cbf + cbwf;
        printf("{\"bench\":\"qpsk_stages\",\"sps\":%.4f,\"channels\":%u,\"format\":\"%s\","
               "\"floor_gsym_s\":%.4g",
               sps, C, f ? "cf16" : "cf32", floor_gsym);
        for (int w = 0; w < K_N; w++) {
          printf(",\"%s_s\":%.4g,\"%s_gsym_s\":%.4g", kname[w], t[w], kname[w], syms / t[w] * 1e-9);
          if (bytes[w] > 0) printf(",\"%s_bytes_per_s\":%.4g", kname[w], syms * bytes[w] / t[w]);
        }
        printf(",\"mf_hash\":\"%016llx\",\"mf_runs_hash\":\"%016llx\",\"mf_mix_hash\":\"%016llx\","
               "\"mf_sums_hash\":\"%016llx\",\"mf_runs_sums_hash\":\"%016llx\","
               "\"mf_mix_sums_hash\":\"%016llx\",\"out_hash\":\"%016llx\",\"om_hash\":\"%016llx\","
               "\"pre_hash\":\"%016llx\"}\n",
               (unsigned long long)hash[0], (unsigned long long)hash[1],
               (unsigned long long)hash[2], (unsigned long long)shash[0],
               (unsigned long long)shash[1], (unsigned long long)shash[2],
               (unsigned long long)ohash, (unsigned long long)omhash, (unsigned long long)phash);
        fflush(stdout);
#define G(k) (syms / t[k] * 1e-9)
        if (nt < 16)
          snprintf(table[nt++], sizeof table[0],
                   "sps %5.3f C %4u %s  pre %5.1f (unslid %5.1f, unblocked %5.1f, mix %5.1f, with "
                   "om %5.1f, unslid %5.1f) om "
                   "%5.1f (from sums %6.1f) x4 %6.1f (levelling %6.1f, with cfo %6.1f) cfo %6.1f "
                   "mf %5.1f (runs "
                   "%5.1f, mix %5.1f, unpadded %5.1f, unblocked %5.1f) out %6.1f  all %5.2f folded "
                   "%5.2f all5 "
                   "%5.2f Gsym/s "
                   "(folded %4.1f%% of floor %5.1f)  GB/s: pre %4.0f om %4.0f cfo %4.0f mf %4.0f  "
                   "cfo, whole transform: %5.1f, folded %5.2f (%3.0f B/symbol against %3.0f)",
                   sps, C, f ? "cf16" : "cf32", G(K_PRE), G(K_PRE1), G(K_PRE0), G(K_PREMIX),
                   G(K_PREOM), G(K_PREOM1), G(K_OM), G(K_OMSUMS), G(K_X4), G(K_X4L), G(K_X4CFO),
                   G(K_CFO), G(K_MF), G(K_MFRUNS), G(K_MFMIX), G(K_MF0), G(K_MF1), G(K_OUT),
                   G(K_ALL), G(K_FOLD), G(K_ALL5), 100 * G(K_FOLD) / floor_gsym, floor_gsym,
                   G(K_PRE) * bytes[K_PRE], G(K_OM) * bytes[K_OM], G(K_CFO) * bytes[K_CFO],
                   G(K_MF) * bytes[K_MF], G(K_CFOW), G(K_FOLDW), bytes[K_FOLD], bytes[K_FOLDW]);
#undef G
      release:
        cudaFree(rows);
        cudaFree(b.grid);
        cudaFree(b.sym);
        cudaFree(b.mom);
        cudaFree(b.sums);
        cudaFree(b.bad);
        cudaFree((void *)b.mb);
        cudaFree((void *)b.ob);
        cudaFree(b.bits);
        cudaFree((void *)b.omi);
        cudaFree(b.omo);
        cudaFree((void *)b.w0);
        cudaFree(b.w);
        cudaFree((void *)b.cfi);
        cudaFree(b.omsum);
        cudaFree(b.cfo);
        S->destroy(&st);
      }
      free(cfi);
      free(fmix);
      free(mb);
      free(ob);
      free(omi);
      free(w0);
    }
    free(h32);
    free(h16);
    qpsk_fir_free(&pre);
    qpsk_fir_free(&mf);
  }
  printf("== GPU demodulator stages (%s, D2D copy %.0f GB/s)\n", prop.name, bw * 1e-9);
  for (int i = 0; i < nt; i++) printf("%s\n", table[i]);
  return fail;
}
#else
int main(void) {
  printf("bench_qpsk_stages: skipped (this build has no CUDA)\n");
  return 77;
}
#endif
