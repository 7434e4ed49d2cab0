/* The CUDA backend's device-resident path of the demodulator bank: the rows come from device
 * memory on the caller's stream and the bits and LLRs go back to device memory on that stream.
 *
 * What runs where: the rows are copied into pinned host memory (one 2-D copy, the caller's row
 * stride to dense rows), the CPU path (qpsk_bank.c: every channel on the worker pool) demodulates
 * them, and the bits and LLRs are copied to the caller's device rows (2-D copies as wide as the
 * longest channel's output, so a row is written at most up to its capacity). The stage kernels
 * (qpsk_stages_cuda.cu) are not called here yet: the CFO stage and a stage-major driver with the
 * serial passes between them are missing (bench/GPU_NOTES.md, "Run 2"); this path gives the
 * receiver the device-resident interface and its exact output now.
 *
 * The copies back are ordered on the caller's stream and the call returns without waiting for
 * them; the next call waits on their event before it reuses the pinned buffers. */
extern "C" {
#include "qpsk_bank_internal.h"

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

extern "C" prx_status prx_qpsk_bank_cuda_create(prx_qpsk_bank *b) {
  bank_cuda *g = (bank_cuda *)calloc(1, sizeof *g);
  if (!g) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CUDA bank state");
  b->cuda = g;
  cudaError_t e = cudaSetDevice(b->cfg.device);
  if (e != cudaSuccess) return cuda_fail(e, "cudaSetDevice");
  e = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_fail(e, "cudaEventCreate");
  return PRX_OK;
}

extern "C" void prx_qpsk_bank_cuda_destroy(prx_qpsk_bank *b) {
  bank_cuda *g = (bank_cuda *)b->cuda;
  if (!g) return;
  if (g->pending) cudaEventSynchronize(g->done);
  if (g->done) cudaEventDestroy(g->done);
  cudaFreeHost(g->h_in);
  cudaFreeHost(g->h_bits);
  cudaFreeHost(g->h_llrs);
  free(g);
  b->cuda = NULL;
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

extern "C" prx_status prx_qpsk_bank_cuda_run(prx_qpsk_bank *b, const void *d_in, size_t in_stride,
                                             size_t n_in, int flush, const prx_qpsk_bank_out *out,
                                             void *stream) {
  bank_cuda *g = (bank_cuda *)b->cuda;
  cudaStream_t s = (cudaStream_t)stream;
  size_t C = b->C, sz = prx_format_size(b->cfg.row_format);
  cudaError_t e;
  if (g->pending) {
    if ((e = cudaEventSynchronize(g->done)) != cudaSuccess) return cuda_fail(e, "previous call");
    g->pending = 0;
  }
  prx_status st;
  if (!flush && n_in) {
    if ((st = grow_pinned(&g->h_in, &g->in_cap, C * n_in * sz))) return st;
    e = cudaMemcpy2DAsync(g->h_in, n_in * sz, d_in, in_stride * sz, n_in * sz, C,
                          cudaMemcpyDeviceToHost, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the rows in");
    if ((e = cudaStreamSynchronize(s)) != cudaSuccess) return cuda_fail(e, "the rows in");
  }
  prx_qpsk_bank_out h = *out;
  if (out->bits) {
    if ((st = grow_pinned((void **)&g->h_bits, &g->bits_cap, C * out->bits_stride))) return st;
    h.bits = g->h_bits;
  }
  if (out->llrs) {
    if ((st = grow_pinned((void **)&g->h_llrs, &g->llr_cap, C * out->llr_stride * sizeof(float))))
      return st;
    h.llrs = g->h_llrs;
  }
  int own_bytes = out->n_bytes == NULL;
  size_t *n_bytes = out->n_bytes;
  if (own_bytes && !(n_bytes = (size_t *)calloc(C, sizeof *n_bytes)))
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the bank's byte counts");
  h.n_bytes = n_bytes;
  st = prx_qpsk_bank_run_host(b, flush ? NULL : g->h_in, n_in, n_in, flush, &h);
  size_t wb = 0, ws = 0;
  for (size_t c = 0; c < C; c++) {
    if (n_bytes[c] > wb) wb = n_bytes[c];
    if (out->n_symbols[c] > ws) ws = out->n_symbols[c];
  }
  if (own_bytes) free(n_bytes);
  if (st) return st;
  if (out->bits && wb) {
    e = cudaMemcpy2DAsync(out->bits, out->bits_stride, g->h_bits, out->bits_stride, wb, C,
                          cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the bits out");
  }
  if (out->llrs && ws) {
    e = cudaMemcpy2DAsync(out->llrs, out->llr_stride * sizeof(float), g->h_llrs,
                          out->llr_stride * sizeof(float), 2 * ws * sizeof(float), C,
                          cudaMemcpyHostToDevice, s);
    if (e != cudaSuccess) return cuda_fail(e, "copying the LLRs out");
  }
  if ((e = cudaEventRecord(g->done, s)) != cudaSuccess) return cuda_fail(e, "cudaEventRecord");
  g->pending = 1;
  return PRX_OK;
}
