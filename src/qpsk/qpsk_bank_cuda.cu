/* The CUDA backend of the demodulator bank, in the CUDA module. Two parts:
 *
 * The device services of the stage-major driver (qpsk_bank_gpu.c, in the library): device
 * memory, a stream, asynchronous copies in any direction, a stream wait, and one small kernel
 * (the last symbol of each block, the differential chain's link between blocks). The driver
 * runs the stage kernels (qpsk_stages_cuda.cu) through their own table and the serial passes on
 * the CPU; the module never calls the library, so everything it needs from CUDA is here.
 *
 * The staged path (stage_in, stage_out), used where the stage kernels cannot take the
 * configuration (a block's window larger than a thread block's shared memory): stage_in copies
 * the rows into pinned host memory (one 2-D copy, the caller's row stride to dense rows), the
 * library's CPU path demodulates them into pinned outputs, and stage_out copies the bits and LLRs
 * to the caller's device rows (2-D copies as wide as the longest channel's output, so a row is
 * written at most up to its capacity). The copies back are ordered on the caller's stream and
 * stage_out returns without waiting for them; the next stage_in waits on their event before it
 * reuses the pinned buffers. */
extern "C" {
#include "qpsk_bank_internal.h"
#include "qpsk_serial_phase.h"
#include "qpsk_stage_blocks.h"

#include "../core/internal.h"
}

#include <cuda_runtime.h>

typedef struct {
  void *h_in; /* pinned: dense rows */
  size_t in_cap;
  uint8_t *h_bits; /* pinned: bits, the caller's bits_stride */
  size_t bits_cap;
  float *h_llrs; /* pinned: LLRs, the caller's llr_stride */
  size_t llr_cap;
  cudaEvent_t done; /* the last call's copies back */
  int pending;
} bank_cuda;

static prx_status cuda_fail(cudaError_t e, const char *what) {
  return prx_fail(PRX_ERR_DEVICE, "CUDA bank: %s: %s", what, cudaGetErrorString(e));
}

static void bank_destroy(void *state) {
  bank_cuda *g = (bank_cuda *)state;
  if (!g) return;
  if (g->pending) cudaEventSynchronize(g->done);
  if (g->done) cudaEventDestroy(g->done);
  cudaFreeHost(g->h_in);
  cudaFreeHost(g->h_bits);
  cudaFreeHost(g->h_llrs);
  free(g);
}

static prx_status bank_create(int device, void **state) {
  *state = NULL;
  bank_cuda *g = (bank_cuda *)calloc(1, sizeof *g);
  if (!g) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CUDA bank state");
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    bank_destroy(g);
    return cuda_fail(e, "creating the bank's event");
  }
  *state = g;
  return PRX_OK;
}

static prx_status grow_pinned(void **p, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return PRX_OK;
  cudaFreeHost(*p);
  *p = NULL;
  *cap = 0;
  cudaError_t e = cudaMallocHost(p, bytes);
  if (e != cudaSuccess) return cuda_fail(e, "cudaMallocHost");
  *cap = bytes;
  return PRX_OK;
}

static prx_status bank_stage_in(void *state, const void *d_in, size_t in_stride, size_t n_in,
                                size_t C, size_t sample_size, size_t bits_bytes, size_t llr_bytes,
                                void *stream, const void **h_in, uint8_t **h_bits, float **h_llrs) {
  bank_cuda *g = (bank_cuda *)state;
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t e;
  prx_status st;
  *h_in = NULL;
  *h_bits = NULL;
  *h_llrs = NULL;
  if (g->pending) {
    if ((e = cudaEventSynchronize(g->done)) != cudaSuccess) return cuda_fail(e, "previous call");
    g->pending = 0;
  }
  if (n_in) {
    if ((st = grow_pinned(&g->h_in, &g->in_cap, C * n_in * sample_size))) return st;
    e = cudaMemcpy2DAsync(g->h_in, n_in * sample_size, d_in, in_stride * sample_size,
                          n_in * sample_size, C, cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the rows in");
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return cuda_fail(e, "the rows in");
    *h_in = g->h_in;
  }
  if (bits_bytes) {
    if ((st = grow_pinned((void **)&g->h_bits, &g->bits_cap, bits_bytes))) return st;
    *h_bits = g->h_bits;
  }
  if (llr_bytes) {
    if ((st = grow_pinned((void **)&g->h_llrs, &g->llr_cap, llr_bytes))) return st;
    *h_llrs = g->h_llrs;
  }
  return PRX_OK;
}

static prx_status bank_stage_out(void *state, uint8_t *d_bits, size_t bits_stride,
                                 size_t bits_width, float *d_llrs, size_t llr_stride,
                                 size_t llr_width, size_t C, void *stream) {
  bank_cuda *g = (bank_cuda *)state;
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t e;
  if (d_bits && bits_width) {
    e = cudaMemcpy2DAsync(d_bits, bits_stride, g->h_bits, bits_stride, bits_width, C,
                          cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the bits out");
  }
  if (d_llrs && llr_width) {
    e = cudaMemcpy2DAsync(d_llrs, llr_stride * sizeof(float), g->h_llrs, llr_stride * sizeof(float),
                          llr_width * sizeof(float), C, cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the LLRs out");
  }
  if ((e = cudaEventRecord(g->done, s)) != cudaSuccess) return cuda_fail(e, "cudaEventRecord");
  g->pending = 1;
  return PRX_OK;
}

/* ---- the stage-major driver's device services ---- */

static prx_status dev_alloc(int device, size_t bytes, void **p) {
  *p = NULL;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    *p = NULL;
    return prx_fail(PRX_ERR_NOMEM, "CUDA bank: cannot allocate %zu bytes of device memory: %s",
                    bytes, cudaGetErrorString(e));
  }
  return PRX_OK;
}

static void dev_free(void *p) { cudaFree(p); }

static prx_status stream_create(int device, void **stream) {
  *stream = NULL;
  cudaStream_t s;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return cuda_fail(e, "cudaStreamCreate");
  *stream = (void *)s;
  return PRX_OK;
}

static void stream_destroy(void *stream) {
  if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

static prx_status copy(void *dst, const void *src, size_t bytes, void *stream) {
  if (!bytes) return PRX_OK;
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)stream);
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "cudaMemcpyAsync");
}

static prx_status copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, void *stream) {
  if (!width || !height) return PRX_OK;
  cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault,
                                    (cudaStream_t)stream);
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "cudaMemcpy2DAsync");
}

static prx_status sync(void *stream) {
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "the bank's stream");
}

/* one thread per block: its last owned symbol and second-order line */
__global__ void block_ends_kernel(const qpsk_mf_block *blk, const prx_cf32 *sym, size_t n_blk,
                                  unsigned Lmax, qpsk_block_end *ends) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n_blk) return;
  ends[i] = qpsk_block_end_of(sym + i * Lmax, blk[i].t.k1 - blk[i].t.k0);
}

static prx_status block_ends(const void *blk, const prx_cf32 *sym, size_t n_blk, unsigned Lmax,
                             qpsk_block_end *ends, void *stream) {
  if (!n_blk) return PRX_OK;
  const unsigned T = 256;
  block_ends_kernel<<<(unsigned)((n_blk + T - 1) / T), T, 0, (cudaStream_t)stream>>>(
      (const qpsk_mf_block *)blk, sym, n_blk, Lmax, ends);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "block_ends_kernel launch");
}

/* one thread block per row: its copy */
__global__ void row_copy_kernel(prx_cf32 *w, size_t stride, const int64_t *ops) {
  const size_t c = blockIdx.x;
  const int64_t from = ops[3 * c], to = ops[3 * c + 1], n = ops[3 * c + 2];
  prx_cf32 *row = w + c * stride;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[to + i] = row[from + i];
}

static prx_status row_copy(prx_cf32 *w, size_t stride, const int64_t *ops, size_t C, void *stream) {
  if (!C) return PRX_OK;
  row_copy_kernel<<<(unsigned)C, 128, 0, (cudaStream_t)stream>>>(w, stride, ops);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "row_copy_kernel launch");
}

/* Grid (blocks along the row, rows): row y's width bytes from src + y spitch to dst + y dpitch, in
 * units of U bytes (U divides the width, both pitches and both addresses). */
template <typename U>
__global__ void copy2d_kernel(uint8_t *dst, size_t dpitch, const uint8_t *src, size_t spitch,
                              size_t n) {
  const U *s = (const U *)(src + (size_t)blockIdx.y * spitch);
  U *d = (U *)(dst + (size_t)blockIdx.y * dpitch);
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    d[i] = s[i];
}

static prx_status copy2d_dev(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t height, void *stream) {
  if (!width || !height) return PRX_OK;
  if (height > 65535) return copy2d(dst, dpitch, src, spitch, width, height, stream);
  const uintptr_t a = (uintptr_t)dst | (uintptr_t)src | dpitch | spitch | width;
  const unsigned T = 256;
  cudaStream_t st = (cudaStream_t)stream;
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  if (!(a & 15)) {
    const size_t n = width / 16;
    const unsigned gx = (unsigned)((n + T - 1) / T < 64 ? (n + T - 1) / T : 64);
    copy2d_kernel<uint4><<<dim3(gx, (unsigned)height), T, 0, st>>>(d, dpitch, s, spitch, n);
  } else if (!(a & 3)) {
    const size_t n = width / 4;
    const unsigned gx = (unsigned)((n + T - 1) / T < 64 ? (n + T - 1) / T : 64);
    copy2d_kernel<uint32_t><<<dim3(gx, (unsigned)height), T, 0, st>>>(d, dpitch, s, spitch, n);
  } else {
    const unsigned gx = (unsigned)((width + T - 1) / T < 64 ? (width + T - 1) / T : 64);
    copy2d_kernel<uint8_t><<<dim3(gx, (unsigned)height), T, 0, st>>>(d, dpitch, s, spitch, width);
  }
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? PRX_OK : cuda_fail(e, "copy2d_kernel launch");
}

extern "C" const prx_qpsk_bank_cuda prx_qpsk_bank_cuda_entries = {
    bank_create, bank_destroy,  bank_stage_in,  bank_stage_out, dev_alloc,
    dev_free,    stream_create, stream_destroy, copy,           copy2d,
    sync,        block_ends,    row_copy,       copy2d_dev};
