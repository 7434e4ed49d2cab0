/* The CFO stage's cuFFT load callback (qpsk_stages_cfo.cu): the FFT reads channel c's window of
 * 4th-power values straight from its w row (n values from w0, then zeros up to the transform's
 * length), so that no kernel copies the windows into the FFT's buffer first. It is compiled
 * apart, as LTO IR (CMakeLists.txt: nvcc -dc -fatbin, code=lto_XX, embedded by bin2c), and
 * linked into the FFT's kernels when the plan is made (cufftXtSetJITCallback). */
#ifndef PRX_QPSK_STAGES_CFO_LOAD_CUH
#define PRX_QPSK_STAGES_CFO_LOAD_CUH

#include <cufft.h>

/* the callback's arguments, in device memory (written before each transform by the stage) */
typedef struct {
  const cufftComplex *w;       /* the rows of 4th-power values */
  unsigned long long w_stride; /* values per row */
  const long long *in;         /* qpsk_cfo_in per channel (w0 at word 0, n in word 1's low
                                  half): qpsk_stage_blocks.h */
  unsigned long long in_words; /* sizeof(qpsk_cfo_in) / 8 */
  unsigned S, log2_len;        /* window's longest; the transform's length, 2^log2_len */
} qpsk_cfo_load_args;

#ifdef PRX_QPSK_CFO_LOAD_DEFINE
extern "C" __device__ cufftComplex qpsk_cfo_load(void *data, unsigned long long offset, void *info,
                                                 void *shared) {
  (void)data;
  (void)shared;
  const qpsk_cfo_load_args *a = (const qpsk_cfo_load_args *)info;
  const unsigned long long c = offset >> a->log2_len, i = offset - (c << a->log2_len);
  const long long *p = a->in + c * a->in_words;
  const unsigned pn = (unsigned)p[1], n = pn < a->S ? pn : a->S;
  if (i >= n) return make_cuComplex(0.0f, 0.0f);
  return a->w[c * a->w_stride + (unsigned long long)p[0] + i];
}
#endif

#endif
