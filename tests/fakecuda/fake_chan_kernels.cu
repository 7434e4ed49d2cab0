/* The CUDA channelizer's launchers (chan_cuda_launch.h) and the cuFFT calls of chan_cuda.cu as host
 * code queued on the fake runtime's streams (fake_cudart.c): the general path's filter, post and
 * history items of chan_cuda_kernels.cuh run as loops; the fused kernel is the same filter, a
 * transform and post items (its outputs, and its footprint: n_sel rows of n_out at out, pitch
 * stride); the post pass is chan_cuda_post.cu's loop; cuFFT's backward transforms are FFTW's. */
#include "chan/chan_cuda_fused.cuh"
#include "chan/chan_cuda_launch.h"
#include "chan/chan_cuda_post.cuh"
#include "polyrx/core.h"
#include <cufft.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" void fake_enqueue(cudaStream_t s, void (*fn)(void *), void *arg);

static fftwf_plan plan_for(int K, float2 *buf) {
  static int pk[64];
  static fftwf_plan pl[64];
  static int np;
  for (int i = 0; i < np; i++)
    if (pk[i] == K) return pl[i];
  if (np == 64) abort();
  pk[np] = K;
  pl[np] = fftwf_plan_dft_1d(K, (fftwf_complex *)buf, (fftwf_complex *)buf, FFTW_BACKWARD,
                             FFTW_ESTIMATE | FFTW_UNALIGNED);
  return pl[np++];
}
static void fft_rows(float2 *v, int K, size_t rows) {
  fftwf_plan pl = plan_for(K, v);
  for (size_t b = 0; b < rows; b++)
    fftwf_execute_dft(pl, (fftwf_complex *)(v + b * K), (fftwf_complex *)(v + b * K));
}

enum { K_FILTER, K_POST, K_HIST, K_FUSED };
struct kop { /* one queued launch: its parameters (by value, as a launch takes them) */
  prx_kparams p;
  float2 *v;
  int what;
};
static void run_kop(void *a) {
  kop *o = (kop *)a;
  const prx_kparams &p = o->p;
  if (o->what == K_FILTER) {
    for (size_t w = 0; w < (size_t)p.n_out * p.K; w++) prx_filter_item(p, o->v, w);
  } else if (o->what == K_POST) {
    for (size_t w = 0; w < (size_t)p.n_out * p.n_sel; w++) prx_post_item(p, o->v, w);
  } else if (o->what == K_HIST) {
    for (int i = 0; i < p.Hh; i++) prx_hist_item(p, p.new_hist, i);
  } else {
    float2 *v = (float2 *)malloc((size_t)p.n_out * p.K * sizeof *v);
    for (size_t w = 0; w < (size_t)p.n_out * p.K; w++) prx_filter_item(p, v, w);
    fft_rows(v, p.K, (size_t)p.n_out);
    for (size_t w = 0; w < (size_t)p.n_out * p.n_sel; w++) prx_post_item(p, v, w);
    free(v);
  }
}
static cudaError_t push(const prx_kparams *p, float2 *v, int what, cudaStream_t st) {
  kop *o = (kop *)aligned_alloc(64, (sizeof(kop) + 63) & ~(size_t)63); /* CUtensorMap's 64 */
  memcpy(&o->p, p, sizeof *p);
  o->v = v;
  o->what = what;
  fake_enqueue(st, run_kop, o);
  return cudaSuccess;
}

int prx_fused_supported(int K) { return K >= 64 && K <= 4096 && !(K & (K - 1)); }
size_t prx_fused_smem_bytes(int K) { return (size_t)prx_fused_tile(K) * prx_fused_vs(K) * 8; }
cudaError_t prx_fused_prepare(int K, int D, int in_fmt, int out_fmt, int layouts,
                              prx_fused_needs *needs) {
  const prx_fused_policy pol[2] = {
      prx_fused_select(K, D, in_fmt, out_fmt, layouts),
      prx_fused_select(K, D, in_fmt, out_fmt, layouts & ~PRX_OUT_ROWS_16B)};
  needs->rotated_taps = pol[0].aligned_window | pol[1].aligned_window;
  needs->resident = 132;
  return cudaSuccess;
}
cudaError_t prx_fused_launch(const prx_kparams *p, int layouts, cudaStream_t st, int *hist_done) {
  (void)layouts;
  *hist_done = 0;
  if (p->n_out <= 0) return cudaSuccess;
  return push(p, NULL, K_FUSED, st);
}
cudaError_t prx_general_filter_launch(const prx_kparams *p, float2 *v, cudaStream_t st) {
  if ((size_t)p->n_out * p->K == 0) return cudaSuccess;
  return push(p, v, K_FILTER, st);
}
cudaError_t prx_general_post_launch(const prx_kparams *p, const float2 *v, cudaStream_t st) {
  if ((size_t)p->n_out * p->n_sel == 0) return cudaSuccess;
  return push(p, (float2 *)v, K_POST, st);
}
cudaError_t prx_hist_launch(const prx_kparams *p, cudaStream_t st) {
  if (p->Hh <= 0) return cudaSuccess;
  return push(p, NULL, K_HIST, st);
}

/* the post pass, as chan_cuda_post.cu's kernel */
struct pop {
  prx_post_params p;
  int rows;
};
static void run_pop(void *a) {
  pop *o = (pop *)a;
  const prx_post_params &p = o->p;
  for (int row = 0; row < o->rows; row++) {
    float2 *y = p.y + (size_t)row * p.n;
    double acc = 0;
    unsigned nonfinite = 0, sat = 0;
    for (size_t j = 0; j < p.n; j++) post_output(p, row, y, j, &acc, &nonfinite, &sat);
    if (!p.sums) continue;
    p.sums[row] += acc;
    p.counts[0] += nonfinite;
    p.counts[1] += sat;
  }
}
cudaError_t prx_post_launch(const prx_post_params *p, int rows, cudaStream_t st) {
  if (rows <= 0 || !p->n) return cudaSuccess;
  pop *o = (pop *)malloc(sizeof *o);
  o->p = *p;
  o->rows = rows;
  fake_enqueue(st, run_pop, o);
  return cudaSuccess;
}

/* ---- cuFFT ---- */
struct fplan {
  int n, batch, used;
  cudaStream_t st;
};
static fplan plans[100000];
static int nplans;
cufftResult cufftCreate(cufftHandle *h) {
  *h = nplans;
  plans[nplans++] = fplan{0, 0, 1, NULL};
  return CUFFT_SUCCESS;
}
cufftResult cufftSetAutoAllocation(cufftHandle h, int a) {
  (void)h, (void)a;
  return CUFFT_SUCCESS;
}
cufftResult cufftMakePlanMany(cufftHandle h, int rank, int *n, int *inembed, int istride, int idist,
                              int *onembed, int ostride, int odist, cufftType type, int batch,
                              size_t *ws) {
  (void)rank, (void)inembed, (void)istride, (void)idist, (void)onembed, (void)ostride, (void)odist,
      (void)type;
  if (!plans[h].used) abort();
  plans[h].n = *n;
  plans[h].batch = batch;
  *ws = 0;
  return CUFFT_SUCCESS;
}
cufftResult cufftSetWorkArea(cufftHandle h, void *w) {
  (void)h, (void)w;
  return CUFFT_SUCCESS;
}
cufftResult cufftSetStream(cufftHandle h, cudaStream_t s) {
  if (!plans[h].used) abort();
  plans[h].st = s;
  return CUFFT_SUCCESS;
}
struct fop {
  float2 *v;
  int K, batch;
};
static void run_fop(void *a) {
  fop *o = (fop *)a;
  fft_rows(o->v, o->K, (size_t)o->batch);
}
cufftResult cufftExecC2C(cufftHandle h, cufftComplex *in, cufftComplex *out, int dir) {
  if (!plans[h].used || in != out || dir != CUFFT_INVERSE) abort();
  fop *o = (fop *)malloc(sizeof *o);
  *o = fop{(float2 *)in, plans[h].n, plans[h].batch};
  fake_enqueue(plans[h].st, run_fop, o);
  return CUFFT_SUCCESS;
}
cufftResult cufftDestroy(cufftHandle h) {
  if (!plans[h].used) {
    fprintf(stderr, "FAKECUDA: cufftDestroy of a destroyed plan %d\n", h);
    abort();
  }
  plans[h].used = 0;
  return CUFFT_SUCCESS;
}
