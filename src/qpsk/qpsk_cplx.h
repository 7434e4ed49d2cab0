/* Scalar complex helpers shared by the demodulator's files (the one definition of each). */
#ifndef PRX_QPSK_CPLX_H
#define PRX_QPSK_CPLX_H

#include "polyrx/core.h"

/* a b */
static inline prx_cf32 qpsk_cmul(prx_cf32 a, prx_cf32 b) {
  prx_cf32 r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return r;
}

#endif
