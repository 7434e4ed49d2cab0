/* Input rows for the demodulator bank's driver tests (test_qpsk_bank_driver on the emulated
 * module, test_qpsk_bank_cuda on the GPU): the cases' signals as cf32 and cf16 rows with a
 * pitch, and carriers moved off their channels' centres for mix_hz. */
#ifndef TEST_QPSK_BANK_ROWS_H
#define TEST_QPSK_BANK_ROWS_H

#include "test_qpsk_sig.h"

#include <string.h>

/* nch differential carriers at sps (noise at Es/N0 esn0[c] dB; random CFO to 0.05 Rs, phase,
 * timing, 300 ppm, drawn from seed) into tc */
static inline void bank_cases(tcase *tc, unsigned nch, double sps, const double *esn0,
                              uint64_t seed) {
  test_rng r;
  test_rng_seed(&r, seed);
  memset(tc, 0, nch * sizeof *tc);
  for (unsigned c = 0; c < nch; c++) {
    tc[c].sps = sps;
    tc[c].differential = 1;
    tc[c].noise = 1;
    tc[c].esn0_db = esn0[c];
    tcase_random(&tc[c], &r, 0.05, 300);
  }
}

/* row c of the cf32 rows (n samples, pitch apart) into the cf16 rows (the compiler's _Float16
 * rounding) */
static inline void bank_row16(const prx_cf32 *rows, uint16_t *rows16, unsigned c, size_t pitch,
                              size_t n) {
  for (size_t i = 0; i < n; i++) {
    const prx_cf32 x = rows[c * pitch + i];
    _Float16 re = (_Float16)x.re, im = (_Float16)x.im;
    memcpy(&rows16[2 * (c * pitch + i)], &re, 2);
    memcpy(&rows16[2 * (c * pitch + i) + 1], &im, 2);
  }
}

/* The nch cases tc as rows: the shortest length >= n_want that every case generates exactly, as
 * cf32 rows (*rows) and cf16 rows (*rows16, the compiler's _Float16 rounding) of *pitch =
 * length + pad samples, zero past the length; case c's transmitted bits in tx[c] (ntx[c] of
 * them). Returns the length, or 0 where the generator failed (reported through CHECK). */
static inline size_t bank_rows_make(const tcase *tc, unsigned nch, size_t n_want, size_t pad,
                                    uint8_t **tx, size_t *ntx, prx_cf32 **rows, uint16_t **rows16,
                                    size_t *pitch) {
  size_t n = n_want;
  for (;; n++) {
    int ok = 1;
    for (unsigned c = 0; c < nch && ok; c++) ok = tcase_length(&tc[c], n) == n;
    if (ok) break;
  }
  *pitch = n + pad;
  *rows = calloc(nch * *pitch, sizeof **rows);
  *rows16 = calloc(nch * *pitch, 4);
  for (unsigned c = 0; c < nch; c++) {
    prx_cf32 *x = tcase_make(&tc[c], n, &tx[c], &ntx[c]);
    CHECK(x != NULL, "generator");
    if (!x) return 0;
    memcpy(*rows + c * *pitch, x, n * sizeof *x);
    bank_row16(*rows, *rows16, c, *pitch, n);
    free(x);
  }
  return n;
}

/* Moves the carrier of each of the nch rows (n samples, pitch apart) by mix[c] Hz at sample rate
 * fs, in place (the bank's mix_hz = mix brings them back). */
static inline void bank_rows_shift(prx_cf32 *rows, unsigned nch, size_t pitch, size_t n,
                                   const double *mix, double fs) {
  for (unsigned c = 0; c < nch; c++) {
    prx_cf32 *x = rows + c * pitch;
    for (size_t i = 0; i < n; i++) {
      double a = 2 * M_PI * fmod(mix[c] / fs * (double)i, 1.0);
      float cr = (float)cos(a), ci = (float)sin(a);
      prx_cf32 v = x[i];
      x[i].re = v.re * cr - v.im * ci;
      x[i].im = v.re * ci + v.im * cr;
    }
  }
}

#endif
