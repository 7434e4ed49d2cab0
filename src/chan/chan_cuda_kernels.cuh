/* CUDA channelizer kernels: the parameter block and the per-thread building blocks shared by
 * the fused kernel (chan_cuda_fused.cu) and the general path (chan_cuda_general.cu).
 *
 * Every function here is __host__ __device__ and written per thread (tid of T), so that the
 * exact indexing can be run on the CPU as well (phase by phase, thread by thread) when the
 * kernels are developed without a GPU at hand.
 *
 * Indexing. A launch processes n_in input samples in[0..n_in-1] (raw format) and writes n_out
 * outputs per selected channel. Input times are relative to in[0]: a negative index n refers
 * to the history hist[Hh + n] (the last Hh converted samples before in[0]; zeros before the
 * stream start). Output jj of the launch is the definition's y_k[j] with j = (first output of
 * the launch) + jj, whose newest input sample has relative index base + jj * D.
 *
 * Polyphase form (see polyrx/chan.h for the definition): with h padded with zeros to P*K taps,
 *   v_r(jj) = sum_{p<P} h[r + pK] x(base + jj D - r - pK),      r = 0..K-1
 *   Y_k(jj) = sum_r v_r(jj) exp(+2 pi i k r / K)                 (a backward DFT of size K)
 *   y_k(jj) = exp(-2 pi i k j D / K) Y_k(jj) = (-1)^(k j) Y_k(jj) for D = K/2, Y_k for D = K. */
#ifndef PRX_CHAN_CUDA_KERNELS_CUH
#define PRX_CHAN_CUDA_KERNELS_CUH

#include <cuda.h> /* CUtensorMap (tile_copy_out); the driver library itself is not linked */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* input formats as the kernels see them (PRX_CF32.. PRX_CU8 keep their values; ZERO feeds the
 * flush tail) */
enum { KF_CF32 = 0, KF_CI16 = 1, KF_CI8 = 2, KF_CU8 = 3, KF_ZERO = 9 };

typedef struct {
  const void *in;     /* raw input of this launch (device); NULL for KF_ZERO */
  int n_in;           /* input samples in this launch */
  int fmt;            /* KF_* */
  const float2 *hist; /* the Hh converted samples before in[0] */
  int Hh;
  int base;  /* relative index of the newest input of output 0, in [0, D) */
  int n_out; /* outputs per channel to write */
  int e_par; /* parity of the absolute index j of output 0 */
  void *out; /* out[s * stride + jj], cf32 or cf16 */
  size_t stride;
  int out_f16;
  const float *taps;     /* prototype padded with zeros, h[r + pK] at taps[p * K + r] */
  const float *taps_rot; /* fused, aligned_window: 16 copies of taps (P K each), copy d with
                            each run of T branches rotated by d (prx_fused_rotate_taps) */
  int P;                 /* taps per branch used by the general path */
  const float2 *tw;      /* tw[t] = exp(+2 pi i t / K), t = 0..K-1 (fused path) */
  const int2 *otab;      /* fused: (padded position, selected-channel row) per selected
                            channel, sorted by position */
  const unsigned *sel;   /* general: the selected channel indices */
  int n_sel;
  int K, D;
  int natural;      /* the selection is every channel in order (fused computed_rows: the output
                       phase computes each position's channel instead of reading otab) */
  float2 *new_hist; /* the history update's destination (prx_hist_item), written by the history
                       kernel or, in fused designs with hist_in_kernel, by the fused kernel */
  int tile_blocks;  /* fused persistent designs: blocks that take tiles (each every
                       tile_blocks-th), set by prx_fused_launch */
  int tma;          /* fused tile_copy_out designs: tmap describes out, the tiles leave through
                       the tensor memory accelerator (set by prx_fused_launch) */
  CUtensorMap tmap; /* out as a 2-D tensor: n_out outputs (inner) by n_sel rows of stride */
} prx_kparams;

#if defined(__CUDA_ARCH__)
#define PRX_LDG(p) __ldg(p)
#else
#define PRX_LDG(p) (*(p))
#endif

/* one converted input sample of the raw buffer */
template <int FMT> __host__ __device__ __forceinline__ float2 prx_conv(const void *in, int n) {
  if (FMT == KF_CF32) return PRX_LDG((const float2 *)in + n);
  if (FMT == KF_CI16) {
    short2 s = PRX_LDG((const short2 *)in + n);
    return make_float2(s.x * (1.0f / 32768.0f), s.y * (1.0f / 32768.0f));
  }
  if (FMT == KF_CI8) {
    char2 s = PRX_LDG((const char2 *)in + n);
    return make_float2((signed char)s.x * (1.0f / 128.0f), (signed char)s.y * (1.0f / 128.0f));
  }
  if (FMT == KF_CU8) {
    uchar2 s = PRX_LDG((const uchar2 *)in + n);
    return make_float2((s.x - 127.5f) * (1.0f / 127.5f), (s.y - 127.5f) * (1.0f / 127.5f));
  }
  return make_float2(0.0f, 0.0f);
}

/* the address of sample n of the raw buffer (prx_conv(prx_conv_at(in, n0), k) reads sample n0 +
 * k: with k a compile-time constant, the load takes k as its immediate offset) */
template <int FMT>
__host__ __device__ __forceinline__ const void *prx_conv_at(const void *in, int n) {
  if (FMT == KF_CF32) return (const float2 *)in + n;
  if (FMT == KF_CI16) return (const short2 *)in + n;
  if (FMT == KF_CI8) return (const char2 *)in + n;
  return (const uchar2 *)in + n;
}

/* the same with the format chosen at run time (general path, history update) */
__host__ __device__ __forceinline__ float2 prx_conv_rt(int fmt, const void *in, int n) {
  switch (fmt) {
  case KF_CF32: return prx_conv<KF_CF32>(in, n);
  case KF_CI16: return prx_conv<KF_CI16>(in, n);
  case KF_CI8: return prx_conv<KF_CI8>(in, n);
  case KF_CU8: return prx_conv<KF_CU8>(in, n);
  default: return make_float2(0.0f, 0.0f);
  }
}

/* input sample at relative index n, anywhere: history below 0, zero at or past n_in (only
 * outputs that are not written read there) */
__host__ __device__ __forceinline__ float2 prx_sample_rt(const prx_kparams &p, int n) {
  if (n < 0) return PRX_LDG(p.hist + (p.Hh + n));
  if (n >= p.n_in) return make_float2(0.0f, 0.0f);
  return prx_conv_rt(p.fmt, p.in, n);
}

/* stores one output sample (cf32 or cf16) */
__host__ __device__ __forceinline__ void prx_store(const prx_kparams &p, size_t idx, float2 v) {
  if (p.out_f16)
    ((__half2 *)p.out)[idx] = __floats2half2_rn(v.x, v.y);
  else
    ((float2 *)p.out)[idx] = v;
}

/* new history (Hh samples) = the last Hh samples of (old history ++ this launch's input) */
__host__ __device__ __forceinline__ void prx_hist_item(const prx_kparams &p, float2 *new_hist,
                                                       int i) {
  long long n = (long long)i - p.Hh + p.n_in; /* relative index of new_hist[i] */
  new_hist[i] = n < 0 ? p.hist[p.Hh + n] : prx_conv_rt(p.fmt, p.in, (int)n);
}

/* general path, filter: v[jj * K + r] for item w = jj * K + r */
__host__ __device__ __forceinline__ void prx_filter_item(const prx_kparams &p, float2 *v,
                                                         size_t w) {
  int jj = (int)(w / p.K), r = (int)(w % p.K);
  int n = p.base + jj * p.D - r;
  float re = 0, im = 0;
  for (int q = 0; q < p.P; q++, n -= p.K) {
    float h = PRX_LDG(p.taps + (size_t)q * p.K + r);
    float2 x = prx_sample_rt(p, n);
    re = fmaf(h, x.x, re);
    im = fmaf(h, x.y, im);
  }
  v[w] = make_float2(re, im);
}

/* general path, after the FFT: item w = s * n_out + jj */
__host__ __device__ __forceinline__ void prx_post_item(const prx_kparams &p, const float2 *V,
                                                       size_t w) {
  size_t s = w / p.n_out;
  int jj = (int)(w % p.n_out);
  unsigned k = PRX_LDG(p.sel + s);
  float2 y = V[(size_t)jj * p.K + k];
  if (p.D != p.K && (k & 1) && ((p.e_par + jj) & 1)) y = make_float2(-y.x, -y.y);
  prx_store(p, s * p.stride + jj, y);
}

#endif
