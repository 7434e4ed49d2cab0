/* The demodulator bank shared by its front end and CPU path (qpsk_bank.c) and its CUDA path
 * (qpsk_bank_cuda.cu). Not installed. */
#ifndef PRX_QPSK_BANK_INTERNAL_H
#define PRX_QPSK_BANK_INTERNAL_H

#include "polyrx/qpsk_bank.h"

#include <stdint.h>

/* one worker slot's scratch: converted input (cf16 rows) and unpacked bits (packed output) */
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
  struct prx_pool *pool;
  unsigned n_slots;
  prx_qpsk_bank_slot *slots;
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

#ifdef PRX_HAVE_CUDA
prx_status prx_qpsk_bank_cuda_create(prx_qpsk_bank *b);
void prx_qpsk_bank_cuda_destroy(prx_qpsk_bank *b);
prx_status prx_qpsk_bank_cuda_run(prx_qpsk_bank *b, const void *d_in, size_t in_stride, size_t n_in,
                                  int flush, const prx_qpsk_bank_out *out, void *stream);
#endif

#endif
