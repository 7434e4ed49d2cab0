/* The demodulator bank shared by its front end and CPU path (qpsk_bank.c) and its CUDA path
 * (qpsk_bank_cuda.cu). Not installed. */
#ifndef PRX_QPSK_BANK_INTERNAL_H
#define PRX_QPSK_BANK_INTERNAL_H

#include "polyrx/qpsk_bank.h"

#include <stdint.h>

/* one worker slot's scratch: converted input (cf16 rows, mixed rows) and unpacked bits (packed
 * output) */
typedef struct {
  prx_cf32 *conv;
  size_t conv_cap; /* samples */
  uint8_t *bits;
  size_t bits_cap; /* bytes */
} prx_qpsk_bank_slot;

struct prx_qpsk_bank {
  prx_qpsk_bank_config cfg;
  unsigned C;
  prx_backend backend; /* CPU or CUDA (AUTO resolved) */
  prx_qpsk **ch;       /* C single-channel demodulators (threads = 1, cf32 or the row format) */
  uint8_t *pack_byte;  /* [C]: packed output, the byte being filled */
  uint8_t *pack_n;     /* [C]: its bit count, 0..7 */
  double *mix;         /* [C] or NULL: mix_hz / sample_rate, cycles per sample */
  uint64_t *mix_n;     /* [C]: the channel's stream samples so far (the mixer's index) */
  struct prx_pool *pool;
  unsigned n_slots;
  prx_qpsk_bank_slot *slots;
  const struct prx_qpsk_bank_cuda *gpu; /* the CUDA path (the module's), NULL on the CPU */
  void *cuda; /* the CUDA path's staging state (qpsk_bank_cuda.cu), NULL on the CPU backend */
};

/* The CPU path: demodulates host rows (cf32, cf16 or the integer formats) into host outputs.
 * flush: ignore in and n_in and end every channel's stream. */
prx_status prx_qpsk_bank_run_host(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                  int flush, const prx_qpsk_bank_out *out);

/* IEEE binary16 to float (every value, subnormals, infinities and NaN included) */
static inline float prx_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
  if (e == 31) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    float f = (float)m * (1.0f / 16777216.0f); /* subnormal or zero: m 2^-24, exact */
    return sign ? -f : f;
  } else {
    bits = sign | ((e + 127 - 15) << 23) | (m << 13);
  }
  union {
    uint32_t u;
    float f;
  } v = {bits};
  return v.f;
}

/* The CUDA path's entry points (qpsk_bank_cuda.cu, in the CUDA module:
 * prx_cuda_module_get()->qpsk_bank). The device rows are staged through pinned host memory and
 * the library runs the CPU path between the two copies (qpsk_bank.c), as the module never calls
 * the library. */
typedef struct prx_qpsk_bank_cuda {
  /* the staging state for device `device` into *state (NULL on failure) */
  prx_status (*create)(int device, void **state);
  void (*destroy)(void *state); /* waits for the copies in flight; accepts NULL */
  /* Waits for the previous call's copies back; copies n_in samples of sample_size bytes of C
   * device rows (d_in, in_stride samples apart) into pinned dense rows *h_in and waits for them
   * (*h_in NULL when n_in is 0); gives pinned outputs of bits_bytes and llr_bytes in *h_bits and
   * *h_llrs (NULL for 0 bytes). */
  prx_status (*stage_in)(void *state, const void *d_in, size_t in_stride, size_t n_in, size_t C,
                         size_t sample_size, size_t bits_bytes, size_t llr_bytes, void *stream,
                         const void **h_in, uint8_t **h_bits, float **h_llrs);
  /* Copies the first bits_width bytes of each of the C pinned bit rows (bits_stride bytes apart)
   * to d_bits and the first llr_width floats of each LLR row (llr_stride floats apart) to
   * d_llrs (a NULL destination or a zero width: nothing), on the stream, without waiting. */
  prx_status (*stage_out)(void *state, uint8_t *d_bits, size_t bits_stride, size_t bits_width,
                          float *d_llrs, size_t llr_stride, size_t llr_width, size_t C,
                          void *stream);
} prx_qpsk_bank_cuda;
extern const prx_qpsk_bank_cuda prx_qpsk_bank_cuda_entries;

#endif
