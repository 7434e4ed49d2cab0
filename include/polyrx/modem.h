/* QPSK conventions shared by the generator (prx_sim) and the demodulator (prx_qpsk):
 * Gray map, differential encoding and the pilot word. docs/FORMATS.md restates them. */
#ifndef POLYRX_MODEM_H
#define POLYRX_MODEM_H

#include "polyrx/core.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Gray map: bits (b0, b1) -> ((1 - 2 b0) + j (1 - 2 b1)) / sqrt(2). */
prx_cf32 prx_qpsk_map(unsigned b0, unsigned b1);

/* Differential encoding: s[n] = s[n-1] * j^g(b0, b1) with g(00)=0, g(01)=1, g(11)=2, g(10)=3,
 * starting from the reference symbol s[-1] = (1 + j)/sqrt(2). The receiver recovers (b0, b1)
 * from the quadrant of d[n] * conj(d[n-1]). These return g, and the bits of a rotation g. */
unsigned prx_qpsk_diff_rotation(unsigned b0, unsigned b1);
void prx_qpsk_diff_bits(unsigned g, unsigned *b0, unsigned *b1);

/* Pilot word: symbol i (i >= 0) of the known pilot sequence, a Gray-mapped QPSK symbol whose
 * bits are successive pairs of the PN15 sequence (x^15 + x^14 + 1, all-ones seed): bits
 * p[0..14] = 1, p[n] = p[n-14] XOR p[n-15], and (b0, b1) = (p[2i], p[2i+1]), indices mod 32767
 * (docs/FORMATS.md lists the first bits and symbols). A frame with
 * pilots is pilot_len pilot symbols (i = 0 .. pilot_len-1) followed by data symbols, repeated
 * every pilot_period symbols (pilot_period counts the pilots too). Pilots are never
 * differentially encoded. */
prx_cf32 prx_qpsk_pilot(size_t i);

#ifdef __cplusplus
}
#endif
#endif
