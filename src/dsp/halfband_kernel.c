/* The half-band converter's multiply-adds (halfband.c): sums of the Hilbert taps over the odd
 * samples, 32 outputs at a time in a local array that compilers keep in vector registers (each
 * sum over the taps in order, so no sum is reordered), one fused multiply-add a step where the
 * build has FMA; built for AVX2 + FMA as well (CMakeLists.txt, POLYRX_ISA_SOURCES), chosen at
 * run time. */
#include "halfband.h"

#include "../core/internal.h"

#include <math.h>
#include <string.h>

#ifdef __FMA__
#define MADD(a, b, acc) fmaf(a, b, acc)
#else
#define MADD(a, b, acc) ((acc) + (a) * (b))
#endif

void prx_halfband_sums(const float *d, size_t taps, const float *od, size_t nj, float *acc) {
  PRX_ISA_DISPATCH(prx_halfband_sums, d, taps, od, nj, acc);
  size_t j = 0;
  for (; j + 32 <= nj; j += 32) {
    float a[32] = {0};
    for (size_t u = 0; u < taps; u++) {
      const float du = d[u], *o = od + j + u;
      for (size_t k = 0; k < 32; k++) a[k] = MADD(du, o[k], a[k]);
    }
    memcpy(acc + j, a, sizeof a);
  }
  for (; j < nj; j++) {
    float a = 0;
    for (size_t u = 0; u < taps; u++) a = MADD(d[u], od[j + u], a);
    acc[j] = a;
  }
}
