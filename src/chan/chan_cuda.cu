/* CUDA channelizer backend: device state, planning, and the host pipeline.
 *
 * Two compute paths (kernels in chan_cuda_fused.cu and chan_cuda_general.cu):
 *  - fused: power-of-two K in 64..4096 with at most 16 taps per branch: one kernel reads the
 *    raw input, filters, transforms and writes the selected channels (24 bytes of memory
 *    traffic per cf32 input sample at D = K/2);
 *  - general: any K and prototype: filter kernel -> batched cuFFT -> post kernel.
 * Both keep the stream state on the device: the last Hh converted input samples (two
 * buffers, swapped after every launch by the history kernel).
 *
 * Host pipeline (prx_chan_execute): the input is cut into blocks of B samples that go round
 * NSLOT slots, each with its own device buffers, pinned staging buffers and events. Copies in
 * (stream h2d), compute (stream comp, serial because of the history) and copies out (stream
 * d2h) of different blocks overlap; a slot is reused once its previous block is done with it.
 * Caller memory that is already pinned (or device memory) is copied by DMA directly; pageable
 * memory goes through pinned staging buffers, made on the first call that needs them (a caller
 * whose buffers are all pinned, as the commands' pipeline, never pays for them: tens of MB of
 * page-locked memory with 1024 channels).
 *
 * The general path's cuFFT plans are made only where it runs: every launch of a general object,
 * and the flush of a fused object with cu8 input. The fused object's flush (zeros) otherwise
 * runs the fused kernel on a zeroed device block (the zero sample is all zero bytes in cf32,
 * ci16 and ci8), so that such an object never loads cuFFT. */
extern "C" {
#include "chan_internal.h"

#include "../core/internal.h"
}
#include "chan_cuda.h"
#include "chan_cuda_fused.cuh"
#include "chan_cuda_launch.h"

#include <cufft.h>
#include <math.h>
#include <string.h>

#define NSLOT 4
#define MAX_PLANS 40
#define FUSED_SLICE ((size_t)1 << 28) /* input samples per fused launch (int indexing) */

typedef struct {
  void *d_in, *d_out; /* device buffers of one block */
  void *d_pack;       /* the post pass's packed rows (ci16 or cf16 output with post) */
  void *h_in, *h_out; /* pinned staging, used for pageable caller memory */
  cudaEvent_t ev_h2d, ev_comp, ev_d2h;
  char *pend_dst; /* caller's pageable output waiting for h_out (NULL: nothing pending) */
  size_t pend_n, pend_stride;
} slot_t;

typedef struct {
  int device;
  int fused, J;          /* path; fused tile */
  int layouts;           /* fused: the output layouts (PRX_OUT_*) the design selection may use */
  prx_fused_needs needs; /* what the fused kernel's designs need (blocks, rotated taps) */
  int natural;           /* every channel selected, in order */
  int general;           /* the general path runs here (its plans and v buffer are made) */
  int staged;            /* the slots' pinned staging buffers are made (make_staging) */
  int R, Pg, Hh;         /* K/D, taps per branch of the prototype, history length */
  size_t B;              /* input samples per host-path block (DMA-capable caller memory) */
  size_t Bp;             /* the same through the pinned staging buffers (pageable memory) */
  size_t gen_max;        /* input samples per general-path launch */
  size_t gen_nout;       /* rows of the general path's v buffer */
  size_t isz, osz;       /* bytes per input / output sample */
  /* the post pass (chan_cuda_post.cu): with ci16 output or power sums the kernels write cf32
   * (cfmt, cosz bytes a sample) and the post pass packs and sums */
  int post, cfmt;
  size_t cosz;
  double *d_sums, *h_sums;      /* per selected channel, since the last call's end */
  unsigned long long *d_counts; /* non-finite outputs, saturated parts */
  unsigned long long *h_counts;
  int sums_dirty; /* the post pass ran with sums since they were last brought down */
  cudaStream_t s_h2d, s_comp, s_d2h;
  cudaEvent_t ev_user; /* end of the last device-resident call's work */
  int user_pending;
  slot_t slot[NSLOT];
  int next_slot;
  float2 *d_hist[2];
  int hcur;
  float *d_taps;
  float *d_taps_rot; /* fused: the 16 rotated copies for aligned_window designs */
  float2 *d_tw;
  int2 *d_otab;
  unsigned *d_sel;
  float2 *d_v;
  void *d_fftwork;
  cufftHandle plan[MAX_PLANS]; /* plan[b]: batch of 2^b transforms */
  int nplan;
} cuda_impl;

#define CU(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess)                                                                         \
      return prx_fail(PRX_ERR_DEVICE, "CUDA channelizer: %s failed: %s", #call,                    \
                      cudaGetErrorString(e_));                                                     \
  } while (0)

#define CUFFT(call)                                                                                \
  do {                                                                                             \
    cufftResult r_ = (call);                                                                       \
    if (r_ != CUFFT_SUCCESS)                                                                       \
      return prx_fail(PRX_ERR_DEVICE, "CUDA channelizer: %s failed (cuFFT error %d)", #call,       \
                      (int)r_);                                                                    \
  } while (0)

/* ---- creation ---- */

static void release(cuda_impl *im) {
  if (im->device >= 0) cudaSetDevice(im->device);
  if (im->s_comp) cudaStreamSynchronize(im->s_comp);
  if (im->s_h2d) cudaStreamSynchronize(im->s_h2d);
  if (im->s_d2h) cudaStreamSynchronize(im->s_d2h);
  if (im->ev_user) cudaEventSynchronize(im->ev_user);
  for (int i = 0; i < NSLOT; i++) {
    slot_t *s = &im->slot[i];
    cudaFree(s->d_in);
    cudaFree(s->d_out);
    cudaFree(s->d_pack);
    cudaFreeHost(s->h_in);
    cudaFreeHost(s->h_out);
    if (s->ev_h2d) cudaEventDestroy(s->ev_h2d);
    if (s->ev_comp) cudaEventDestroy(s->ev_comp);
    if (s->ev_d2h) cudaEventDestroy(s->ev_d2h);
  }
  for (int b = 0; b < im->nplan; b++) cufftDestroy(im->plan[b]);
  cudaFree(im->d_fftwork);
  cudaFree(im->d_v);
  cudaFree(im->d_hist[0]);
  cudaFree(im->d_hist[1]);
  cudaFree(im->d_taps);
  cudaFree(im->d_taps_rot);
  cudaFree(im->d_tw);
  cudaFree(im->d_otab);
  cudaFree(im->d_sel);
  cudaFree(im->d_sums);
  cudaFree(im->d_counts);
  cudaFreeHost(im->h_sums);
  cudaFreeHost(im->h_counts);
  if (im->ev_user) cudaEventDestroy(im->ev_user);
  if (im->s_h2d) cudaStreamDestroy(im->s_h2d);
  if (im->s_comp) cudaStreamDestroy(im->s_comp);
  if (im->s_d2h) cudaStreamDestroy(im->s_d2h);
  cudaGetLastError();
  free(im);
}

/* position of channel k in the digit-reversed output of the fused FFT (see
 * chan_cuda_fused.cuh): k = m1 + r1 (m2 + r2 (...)), position = sum m_s K / (r1 ... r_s) */
static int fused_position(unsigned K, unsigned k) {
  int log2k;
  int ns = prx_fused_nstages((int)K, &log2k);
  unsigned span = K, pos = 0;
  for (int s = 0; s < ns; s++) {
    unsigned rho = (s == ns - 1 && (log2k & 1)) ? 2 : 4;
    span /= rho;
    pos += (k % rho) * span;
    k /= rho;
  }
  return (int)pos;
}

/* output table order: by FFT position, then by row */
static int cmp_otab(const void *a, const void *b) {
  const int2 *x = (const int2 *)a, *y = (const int2 *)b;
  return x->x != y->x ? (x->x > y->x) - (x->x < y->x) : (x->y > y->y) - (x->y < y->y);
}

static prx_status upload(void **dst, const void *src, size_t bytes) {
  CU(cudaMalloc(dst, bytes));
  CU(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
  return PRX_OK;
}

static prx_status create_plans(cuda_impl *im, int K) {
  size_t need = im->gen_nout, work = 0;
  im->nplan = 0;
  while (((size_t)1 << im->nplan) <= need) im->nplan++;
  for (int b = 0; b < im->nplan; b++) {
    size_t ws = 0;
    int n = K;
    CUFFT(cufftCreate(&im->plan[b]));
    CUFFT(cufftSetAutoAllocation(im->plan[b], 0));
    CUFFT(cufftMakePlanMany(im->plan[b], 1, &n, NULL, 1, K, NULL, 1, K, CUFFT_C2C, 1 << b, &ws));
    if (ws > work) work = ws;
  }
  if (work) CU(cudaMalloc(&im->d_fftwork, work));
  for (int b = 0; b < im->nplan; b++) CUFFT(cufftSetWorkArea(im->plan[b], im->d_fftwork));
  return PRX_OK;
}

static prx_status create_ex(prx_chan *c, prx_cuda_design design) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
    cudaGetLastError();
    return prx_fail(PRX_ERR_NODEVICE, "no CUDA device is usable");
  }
  if (c->cfg.device < 0 || c->cfg.device >= ndev)
    return prx_fail(PRX_ERR_INVALID, "CUDA device %d does not exist (%d present)", c->cfg.device,
                    ndev);
  cuda_impl *im = (cuda_impl *)calloc(1, sizeof *im);
  if (!im) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CUDA channelizer state");
  im->device = c->cfg.device;
  c->impl = im;
  CU(cudaSetDevice(im->device));
  const unsigned K = c->K, D = c->D;
  im->R = (int)(K / D);
  im->Pg = (int)((c->M + K - 1) / K);
  im->isz = prx_format_size(c->cfg.in_format);
  im->osz = prx_format_size(c->cfg.out_format);
  im->post = c->cfg.power_sums || c->cfg.out_format == PRX_CI16;
  im->cfmt = im->post ? PRX_CF32 : (int)c->cfg.out_format;
  im->cosz = prx_format_size((prx_format)im->cfmt);
  const size_t pack_sz = im->post && c->cfg.out_format != PRX_CF32 ? im->osz : 0;

  /* path */
  cudaDeviceProp prop;
  CU(cudaGetDeviceProperties(&prop, im->device));
  im->fused = design != PRX_CUDA_GENERAL && prx_fused_supported((int)K) && im->Pg <= PRX_FUSED_P &&
              prx_fused_smem_bytes((int)K) <= prop.sharedMemPerBlockOptin;
  if (design == PRX_CUDA_THREAD_STORES && !im->fused)
    return prx_fail(PRX_ERR_UNSUPPORTED, "the fused kernel cannot run K = %u", K);
  im->J = im->fused ? prx_fused_tile((int)K) : 0;
  im->natural = c->n_sel == K;
  for (size_t s = 0; s < c->n_sel && im->natural; s++) im->natural = c->select[s] == s;
  im->layouts = (im->natural ? PRX_OUT_ALL_IN_ORDER : 0) |
                (design == PRX_CUDA_THREAD_STORES ? 0 : PRX_OUT_ROWS_16B) |
                (prop.major >= 9 ? PRX_OUT_TMA : 0);
  if (im->fused)
    CU(prx_fused_prepare((int)K, (int)D, (int)c->cfg.in_format, im->cfmt, im->layouts, &im->needs));
  const int P = im->fused ? PRX_FUSED_P : im->Pg;
  im->Hh = P * (int)K;

  /* Blocks. Copies back into the caller's channel rows run at the PCIe rate only when each
   * row is long (64 KB: 8192 outputs), so a block is 8192 D samples, within 2^20 .. 2^23 and
   * at most 256 MB of device buffers per slot. The pinned staging buffers for pageable memory
   * take blocks of at most 2^20 samples (a memcpy bounds that path anyway). */
  size_t B = c->cfg.block_samples;
  if (!B) {
    B = (size_t)8192 * D;
    if (B < ((size_t)1 << 20)) B = (size_t)1 << 20;
    if (B > ((size_t)1 << 23)) B = (size_t)1 << 23;
    while (B > ((size_t)1 << 20) &&
           B * im->isz + c->n_sel * (B / D + 2) * (im->cosz + pack_sz) > ((size_t)256 << 20))
      B /= 2;
  }
  if (B > FUSED_SLICE) B = FUSED_SLICE;
  const size_t gen_cap = ((size_t)1 << 27) / K; /* v rows of at most 1 GiB */
  if (!im->fused && B / D + 2 > gen_cap) B = (gen_cap > 2 ? gen_cap - 2 : 1) * D;
  im->B = B;
  im->Bp = c->cfg.block_samples || B < ((size_t)1 << 20) ? B : (size_t)1 << 20;
  /* the general path runs every launch of a general object, and only the flush tail (M - 1
   * zeros, in one launch) of a fused one with cu8 input (whose zero sample is no byte value) */
  im->general = !im->fused || c->cfg.in_format == PRX_CU8;
  im->gen_max = im->fused ? c->M + D : B;
  im->gen_nout = im->gen_max / D + 2;

  /* streams, events, buffers */
  CU(cudaStreamCreateWithFlags(&im->s_h2d, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&im->s_comp, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&im->s_d2h, cudaStreamNonBlocking));
  CU(cudaEventCreateWithFlags(&im->ev_user, cudaEventDisableTiming));
  const size_t out_rows = B / D + 2;
  for (int i = 0; i < NSLOT; i++) {
    slot_t *s = &im->slot[i];
    CU(cudaMalloc(&s->d_in, B * im->isz));
    CU(cudaMalloc(&s->d_out, c->n_sel * out_rows * im->cosz));
    if (pack_sz) CU(cudaMalloc(&s->d_pack, c->n_sel * out_rows * pack_sz));
    CU(cudaEventCreateWithFlags(&s->ev_h2d, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&s->ev_comp, cudaEventDisableTiming));
    CU(cudaEventCreateWithFlags(&s->ev_d2h, cudaEventDisableTiming));
  }
  if (c->cfg.power_sums) {
    CU(cudaMalloc(&im->d_sums, c->n_sel * sizeof *im->d_sums));
    CU(cudaMemset(im->d_sums, 0, c->n_sel * sizeof *im->d_sums));
    CU(cudaMalloc(&im->d_counts, 2 * sizeof *im->d_counts));
    CU(cudaMemset(im->d_counts, 0, 2 * sizeof *im->d_counts));
    CU(cudaHostAlloc(&im->h_sums, c->n_sel * sizeof *im->h_sums, cudaHostAllocDefault));
    CU(cudaHostAlloc(&im->h_counts, 2 * sizeof *im->h_counts, cudaHostAllocDefault));
  }
  for (int h = 0; h < 2; h++) {
    CU(cudaMalloc(&im->d_hist[h], (size_t)im->Hh * sizeof(float2)));
    CU(cudaMemset(im->d_hist[h], 0, (size_t)im->Hh * sizeof(float2)));
  }

  /* prototype padded with zeros to P * K taps (and at least the general path's Pg * K) */
  size_t ntaps = (size_t)(P > im->Pg ? P : im->Pg) * K;
  float *taps = (float *)calloc(ntaps, sizeof *taps);
  if (!taps) return prx_fail(PRX_ERR_NOMEM, "cannot allocate %zu taps", ntaps);
  memcpy(taps, c->taps, c->M * sizeof *taps);
  prx_status st = upload((void **)&im->d_taps, taps, ntaps * sizeof *taps);
  if (!st && im->fused && im->needs.rotated_taps) { /* P = PRX_FUSED_P: ntaps = P K */
    float *rot = (float *)malloc(16 * ntaps * sizeof *rot);
    if (!rot) {
      st = prx_fail(PRX_ERR_NOMEM, "cannot allocate the rotated taps");
    } else {
      prx_fused_rotate_taps(taps, P, (int)K, prx_fused_threads((int)K, (int)D), rot);
      st = upload((void **)&im->d_taps_rot, rot, 16 * ntaps * sizeof *rot);
      free(rot);
    }
  }
  free(taps);
  if (st) return st;
  if ((st = upload((void **)&im->d_sel, c->select, c->n_sel * sizeof *c->select))) return st;

  if (im->fused) {
    float2 *tw = (float2 *)malloc(K * sizeof *tw);
    int2 *otab = (int2 *)malloc(c->n_sel * sizeof *otab);
    if (!tw || !otab) {
      free(tw);
      free(otab);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate the FFT tables");
    }
    for (unsigned t = 0; t < K; t++)
      tw[t] = make_float2((float)cos(2 * M_PI * t / K), (float)sin(2 * M_PI * t / K));
    for (size_t s = 0; s < c->n_sel; s++)
      otab[s] = make_int2(prx_pad(fused_position(K, c->select[s])), (int)s);
    qsort(otab, c->n_sel, sizeof *otab, cmp_otab);
    st = upload((void **)&im->d_tw, tw, K * sizeof *tw);
    if (!st) st = upload((void **)&im->d_otab, otab, c->n_sel * sizeof *otab);
    free(otab);
    free(tw);
    if (st) return st;
  }
  if (im->general) {
    CU(cudaMalloc(&im->d_v, im->gen_nout * K * sizeof(float2)));
    if ((st = create_plans(im, (int)K))) return st;
  }
  CU(cudaDeviceSynchronize());
  return PRX_OK;
}

static void cuda_destroy(prx_chan *c) {
  if (c->impl) release((cuda_impl *)c->impl);
  c->impl = NULL;
}

static prx_status cuda_create(prx_chan *c) {
  prx_status st = create_ex(c, PRX_CUDA_SELECTED);
  if (st && c->impl) cuda_destroy(c);
  return st;
}

/* ---- one launch: n input samples (device, raw; NULL for zeros) -> nob outputs ---- */

static prx_status run_slice(prx_chan *c, const void *d_in, size_t n, void *d_out, size_t stride,
                            size_t nob, uint64_t consumed, uint64_t emitted, cudaStream_t st) {
  cuda_impl *im = (cuda_impl *)c->impl;
  prx_kparams p;
  memset(&p, 0, sizeof p);
  p.in = d_in;
  p.n_in = (int)n;
  p.fmt = d_in ? (int)c->cfg.in_format : KF_ZERO;
  p.hist = im->d_hist[im->hcur];
  p.Hh = im->Hh;
  p.base = (int)(emitted * c->D - consumed);
  p.n_out = (int)nob;
  p.e_par = (int)(emitted & 1);
  p.out = d_out;
  p.stride = stride;
  p.out_f16 = im->cfmt == PRX_CF16;
  p.taps = im->d_taps;
  p.taps_rot = im->d_taps_rot;
  p.P = im->Pg;
  p.tw = im->d_tw;
  p.otab = im->d_otab;
  p.sel = im->d_sel;
  p.n_sel = (int)c->n_sel;
  p.K = (int)c->K;
  p.D = (int)c->D;
  p.natural = im->natural;
  p.new_hist = im->d_hist[im->hcur ^ 1];
  p.tile_blocks = im->needs.resident;
  int hist_done = 0; /* the fused launch wrote the history update (hist_in_kernel) */
  if (nob) {
    if (im->fused && d_in) {
      CU(prx_fused_launch(&p, im->layouts, st, &hist_done));
    } else {
      CU(prx_general_filter_launch(&p, im->d_v, st));
      size_t off = 0;
      for (int b = im->nplan - 1; b >= 0; b--)
        if (nob & ((size_t)1 << b)) {
          cufftComplex *v = (cufftComplex *)(im->d_v + off * c->K);
          CUFFT(cufftSetStream(im->plan[b], st));
          CUFFT(cufftExecC2C(im->plan[b], v, v, CUFFT_INVERSE));
          off += (size_t)1 << b;
        }
      CU(prx_general_post_launch(&p, im->d_v, st));
    }
  }
  if (!hist_done) CU(prx_hist_launch(&p, st));
  im->hcur ^= 1;
  return PRX_OK;
}

/* ---- device-resident API ---- */

static prx_status cuda_execute_device(prx_chan *c, const void *d_in, size_t n_in, void *d_out,
                                      size_t out_stride, size_t n_out, void *stream) {
  cuda_impl *im = (cuda_impl *)c->impl;
  cudaStream_t st = (cudaStream_t)stream;
  const size_t ia = c->cfg.in_format == PRX_CF32 ? 8 : c->cfg.in_format == PRX_CI16 ? 4 : 2;
  const size_t oa = im->osz;
  if ((uintptr_t)d_in % ia)
    return prx_fail(PRX_ERR_INVALID, "device input pointer %p is not %zu-byte aligned", d_in, ia);
  if (n_out && (uintptr_t)d_out % oa)
    return prx_fail(PRX_ERR_INVALID, "device output pointer %p is not %zu-byte aligned", d_out, oa);
  CU(cudaSetDevice(im->device));
  if (im->user_pending) CU(cudaStreamWaitEvent(st, im->ev_user, 0));
  const size_t slice = im->fused ? FUSED_SLICE : im->gen_max;
  size_t pos = 0, opos = 0;
  while (pos < n_in) {
    size_t nb = n_in - pos < slice ? n_in - pos : slice;
    size_t nob = (size_t)(prx_ceil_div(c->consumed + pos + nb, c->D) - (c->emitted + opos));
    prx_status s =
        run_slice(c, (const char *)d_in + pos * im->isz, nb, (char *)d_out + opos * im->osz,
                  out_stride, nob, c->consumed + pos, c->emitted + opos, st);
    if (s) return s;
    pos += nb;
    opos += nob;
  }
  if (opos != n_out)
    return prx_fail(PRX_ERR_INTERNAL, "CUDA channelizer wrote %zu outputs, expected %zu", opos,
                    n_out);
  CU(cudaEventRecord(im->ev_user, st));
  im->user_pending = 1;
  return PRX_OK;
}

/* ---- host pipeline ---- */

/* whether the GPU can read/write p by DMA (pinned, registered, device or managed memory) */
static int dma_capable(const void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeDevice ||
         a.type == cudaMemoryTypeManaged;
}

static prx_status finish_pending(prx_chan *c, slot_t *s) {
  if (!s->pend_dst) return PRX_OK;
  cuda_impl *im = (cuda_impl *)c->impl;
  CU(cudaEventSynchronize(s->ev_d2h));
  const size_t row = s->pend_n * im->osz;
  for (size_t k = 0; k < c->n_sel; k++)
    memcpy(s->pend_dst + k * s->pend_stride * im->osz, (const char *)s->h_out + k * row, row);
  s->pend_dst = NULL;
  return PRX_OK;
}

/* The pinned staging buffers of every slot, made on the first call with pageable memory. */
static prx_status make_staging(prx_chan *c, cuda_impl *im) {
  if (im->staged) return PRX_OK;
  for (int i = 0; i < NSLOT; i++) {
    slot_t *s = &im->slot[i];
    if (!s->h_in) CU(cudaHostAlloc(&s->h_in, im->Bp * im->isz, cudaHostAllocDefault));
    if (!s->h_out)
      CU(cudaHostAlloc(&s->h_out, c->n_sel * (im->Bp / c->D + 2) * im->osz, cudaHostAllocDefault));
  }
  im->staged = 1; /* every slot has both (a failed attempt is taken up again by the next call) */
  return PRX_OK;
}

/* copies n_sel rows of n outputs from the slot's device buffer to dst (pitch stride) */
static prx_status copy_out(cuda_impl *im, size_t n_sel, char *dst, size_t stride, const void *src,
                           size_t n) {
  const size_t row = n * im->osz, dpitch = stride * im->osz;
  if (n_sel == 1 || dpitch > ((size_t)1 << 30)) {
    for (size_t k = 0; k < n_sel; k++)
      CU(cudaMemcpyAsync(dst + k * dpitch, (const char *)src + k * row, row, cudaMemcpyDefault,
                         im->s_d2h));
    return PRX_OK;
  }
  CU(cudaMemcpy2DAsync(dst, dpitch, src, row, row, n_sel, cudaMemcpyDefault, im->s_d2h));
  return PRX_OK;
}

/* The post pass over a slot's nob outputs per channel, the first of them output e0 of the
 * stream: packing, and the power sums of the outputs in the object's window. */
static prx_status post_pass(prx_chan *c, slot_t *s, size_t nob, uint64_t e0) {
  cuda_impl *im = (cuda_impl *)c->impl;
  prx_post_params p;
  memset(&p, 0, sizeof p);
  p.y = (float2 *)s->d_out;
  p.packed = s->d_pack;
  p.fmt = (int)c->cfg.out_format;
  p.n = nob;
  if (im->d_sums) {
    const uint64_t end = e0 + nob;
    const uint64_t lo = c->power_from > e0 ? c->power_from : e0;
    const uint64_t hi = c->power_to < end ? c->power_to : end;
    p.lo = lo < end ? (size_t)(lo - e0) : nob;
    p.hi = hi > lo ? (size_t)(hi - e0) : p.lo;
    p.sums = im->d_sums;
    p.counts = im->d_counts;
    im->sums_dirty = 1;
  }
  CU(prx_post_launch(&p, (int)c->n_sel, im->s_comp));
  return PRX_OK;
}

/* Brings the sums of the call's post passes down (after its last launch, on the compute
 * stream), adds them to the object's and starts the device's again from 0. */
static prx_status take_sums(prx_chan *c, cuda_impl *im) {
  CU(cudaMemcpyAsync(im->h_sums, im->d_sums, c->n_sel * sizeof *im->h_sums, cudaMemcpyDeviceToHost,
                     im->s_comp));
  CU(cudaMemcpyAsync(im->h_counts, im->d_counts, 2 * sizeof *im->h_counts, cudaMemcpyDeviceToHost,
                     im->s_comp));
  CU(cudaMemsetAsync(im->d_sums, 0, c->n_sel * sizeof *im->d_sums, im->s_comp));
  CU(cudaMemsetAsync(im->d_counts, 0, 2 * sizeof *im->d_counts, im->s_comp));
  CU(cudaStreamSynchronize(im->s_comp));
  for (size_t k = 0; k < c->n_sel; k++) c->power[k] += im->h_sums[k];
  c->power_nonfinite += im->h_counts[0];
  c->power_saturated += im->h_counts[1];
  im->sums_dirty = 0;
  return PRX_OK;
}

/* in: host (or any) memory, NULL for zeros; out: host memory */
static prx_status host_run(prx_chan *c, const void *in, size_t n_in, void *out, size_t stride,
                           size_t n_out) {
  cuda_impl *im = (cuda_impl *)c->impl;
  CU(cudaSetDevice(im->device));
  if (im->user_pending) CU(cudaStreamWaitEvent(im->s_comp, im->ev_user, 0));
  const int in_dma = in && dma_capable(in);
  const int out_dma = n_out && dma_capable(out);
  /* blocks: B when the caller's buffers take DMA, the staging size Bp otherwise; the zeros
   * of the flush tail take the fused kernel on a zeroed block, or the general path, whose v
   * buffer bounds the launch */
  const int zeros_fused = !in && !im->general;
  size_t B = (!in || in_dma) && (!n_out || out_dma) ? im->B : im->Bp;
  if (!in && !zeros_fused && im->gen_max < B) B = im->gen_max;
  if ((in && !in_dma) || (n_out && !out_dma)) {
    prx_status st = make_staging(c, im);
    if (st) return st;
  }
  /* a long call starts with B/8, B/4, B/2 so that the copies back start early */
  int ramp = n_in > 2 * B ? 3 : 0;
  size_t pos = 0, opos = 0;
  prx_status st = PRX_OK;
  while (pos < n_in && !st) {
    size_t nb = n_in - pos < B ? n_in - pos : B;
    if (ramp) {
      nb = B >> ramp--;
      if (!nb) nb = 1;
    }
    const size_t nob = (size_t)(prx_ceil_div(c->consumed + pos + nb, c->D) - (c->emitted + opos));
    slot_t *s = &im->slot[im->next_slot];
    im->next_slot = (im->next_slot + 1) % NSLOT;
    if ((st = finish_pending(c, s))) break;
    if (in) {
      const char *src = (const char *)in + pos * im->isz;
      if (!in_dma) {
        CU(cudaEventSynchronize(s->ev_h2d)); /* the staging buffer's last copy is done */
        memcpy(s->h_in, src, nb * im->isz);
        src = (const char *)s->h_in;
      }
      CU(cudaStreamWaitEvent(im->s_h2d, s->ev_comp, 0)); /* d_in no longer read */
      CU(cudaMemcpyAsync(s->d_in, src, nb * im->isz, cudaMemcpyDefault, im->s_h2d));
      CU(cudaEventRecord(s->ev_h2d, im->s_h2d));
      CU(cudaStreamWaitEvent(im->s_comp, s->ev_h2d, 0));
    }
    CU(cudaStreamWaitEvent(im->s_comp, s->ev_d2h, 0)); /* d_out no longer read */
    /* zeros: after the slot's last launch on this stream, which read its last copy in */
    if (zeros_fused) CU(cudaMemsetAsync(s->d_in, 0, nb * im->isz, im->s_comp));
    st = run_slice(c, in || zeros_fused ? s->d_in : NULL, nb, s->d_out, nob, nob, c->consumed + pos,
                   c->emitted + opos, im->s_comp);
    if (st) break;
    if (im->post && (st = post_pass(c, s, nob, c->emitted + opos))) break;
    CU(cudaEventRecord(s->ev_comp, im->s_comp));
    if (nob) {
      char *dst = (char *)out + opos * im->osz;
      const void *rows = s->d_pack ? s->d_pack : s->d_out;
      CU(cudaStreamWaitEvent(im->s_d2h, s->ev_comp, 0));
      if (out_dma) {
        st = copy_out(im, c->n_sel, dst, stride, rows, nob);
      } else {
        CU(cudaMemcpyAsync(s->h_out, rows, c->n_sel * nob * im->osz, cudaMemcpyDefault, im->s_d2h));
        s->pend_dst = dst;
        s->pend_n = nob;
        s->pend_stride = stride;
      }
      CU(cudaEventRecord(s->ev_d2h, im->s_d2h));
    }
    pos += nb;
    opos += nob;
  }
  for (int i = 0; i < NSLOT; i++) {
    prx_status s2 = finish_pending(c, &im->slot[i]);
    if (!st) st = s2;
  }
  if (!st && im->sums_dirty) st = take_sums(c, im);
  CU(cudaStreamSynchronize(im->s_h2d));
  CU(cudaStreamSynchronize(im->s_comp));
  CU(cudaStreamSynchronize(im->s_d2h));
  im->user_pending = 0;
  if (!st && opos != n_out)
    return prx_fail(PRX_ERR_INTERNAL, "CUDA channelizer wrote %zu outputs, expected %zu", opos,
                    n_out);
  return st;
}

static prx_status cuda_execute(prx_chan *c, const void *in, size_t n_in, void *out, size_t stride,
                               size_t n_out) {
  return host_run(c, in, n_in, out, stride, n_out);
}

static prx_status cuda_execute_zeros(prx_chan *c, size_t n_zeros, void *out, size_t stride,
                                     size_t n_out) {
  return host_run(c, NULL, n_zeros, out, stride, n_out);
}

static void cuda_reset(prx_chan *c) {
  cuda_impl *im = (cuda_impl *)c->impl;
  if (!im) return;
  cudaSetDevice(im->device);
  if (im->user_pending) cudaStreamWaitEvent(im->s_comp, im->ev_user, 0);
  for (int h = 0; h < 2; h++)
    cudaMemsetAsync(im->d_hist[h], 0, (size_t)im->Hh * sizeof(float2), im->s_comp);
  cudaStreamSynchronize(im->s_comp);
  im->user_pending = 0;
  im->hcur = 0;
}

/* ---- internal hooks (chan_cuda.h; the library has checked that c runs on this backend) ---- */

static prx_status cuda_retune(prx_chan *c, prx_cuda_design design) {
  cuda_destroy(c);
  prx_status st = create_ex(c, design);
  if (st) {
    cuda_destroy(c);
    if (create_ex(c, PRX_CUDA_SELECTED)) cuda_destroy(c); /* back to the default */
    return st;
  }
  c->consumed = 0;
  c->emitted = 0;
  return PRX_OK;
}

static int cuda_fused(const prx_chan *c, prx_fused_policy *pol) {
  const cuda_impl *im = (const cuda_impl *)c->impl;
  if (!im || !im->fused) return 0;
  if (pol)
    *pol = prx_fused_select((int)c->K, (int)c->D, (int)c->cfg.in_format, im->cfmt, im->layouts);
  return 1;
}

/* ---- the backend's entry in the CUDA module (cuda_module.cu) ---- */

static const prx_chan_ops cuda_ops = {cuda_create,  cuda_destroy,        cuda_reset,
                                      cuda_execute, cuda_execute_device, cuda_execute_zeros};

extern "C" const prx_chan_cuda prx_chan_cuda_entries = {&cuda_ops, cuda_retune, cuda_fused};
