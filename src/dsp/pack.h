/* Output packing (internal): cf32 to the compact formats a recording can hold, cf16 (IEEE
 * binary16) and ci16 (scaled, saturating 16-bit integers; docs/FORMATS.md states the scales), and
 * hard bits packed eight to a byte. */
#ifndef PRX_PACK_H
#define PRX_PACK_H

#include "polyrx/core.h"

#include <stddef.h>
#include <stdint.h>

/* The ci16 scale matching the reader's (ci16 / 32768): a stored value v means v / 32768, so a
 * channel written as ci16 reads back as cf32 within 2^-16 of what was computed. */
#define PRX_CI16_SCALE 32768.0f

/* The IEEE binary16 nearest to f, ties to even (as F16C's vcvtps2ph and CUDA's __float2half_rn):
 * magnitudes from 65520 become infinity, below 2^-25 zero (subnormals kept between), NaN stays
 * a quiet NaN with its sign. */
uint16_t prx_half_from_float(float f);

/* n complex samples to 2n binary16 values (re, im interleaved, little-endian in memory on the
 * machines polyrx runs on: SigMF cf16_le). */
void prx_pack_cf16(const prx_cf32 *in, size_t n, uint16_t *out);

/* n complex samples to 2n int16 values round(x * scale), ties to even, saturated to
 * [-32768, 32767]; NaN becomes 0. Returns how many of the 2n values were saturated or NaN. */
size_t prx_pack_ci16(const prx_cf32 *in, size_t n, float scale, int16_t *out);

/* n complex samples times `scale` in format f (cf32, ci16, ci8, cu8; cf16 is prx_pack_cf16's),
 * integers as polyrx/core.h reads them (full scale F = 32768, 128, 127.5 and offset 0, 0,
 * 127.5): q = g x + o in float64 with g = scale F, rounded to the nearest integer, ties to even,
 * clipped to the type's range (a NaN to its lowest). Returns the samples with a component
 * clipped (or NaN). The rule is exact (docs/FORMATS.md, "polyrx gen files"; tests/cli_gen.sh). */
size_t prx_encode_scaled(prx_format f, const prx_cf32 *x, size_t n, double scale, void *out);

/* Hard bits (one 0/1 byte each) packed eight to a byte, the first bit in the MSB, for a stream
 * cut anywhere: the bits that do not fill a byte wait in the packer for the next call. */
typedef struct {
  uint8_t byte; /* the byte being filled */
  uint8_t n;    /* its bit count, 0..7 */
} prx_bit_packer;

/* Packs n bits into out and returns the whole bytes written; with last, the bits left go out as
 * one more byte padded with zeros and the packer starts afresh. out holds (n + 7) / 8 + 1. */
size_t prx_pack_bits(prx_bit_packer *p, const uint8_t *bits, size_t n, int last, uint8_t *out);

#endif
