/* polyrx test-signal generator: QPSK carriers with RRC shaping and impairments, summed into
 * one complex baseband stream with AWGN. Streaming: prx_sim_generate() continues where the
 * last call stopped, so seconds of a wideband signal are made block by block.
 *
 * The model (docs/FORMATS.md restates it). Sample k is at time t = k / fs. Carrier c is
 *
 *   s_c(t) = A_c exp(i (2 pi f_c t + phase_c)) sum_{n >= 0} a_n p(t / T' - n - timing_offset)
 *
 * with T' = 1 / (Rs (1 + clock_ppm 1e-6)) the true symbol period, a_n the QPSK symbols (data,
 * differentially encoded or not, and pilots; polyrx/modem.h) and p the unit-energy RRC pulse of
 * the carrier's roll-off (time in symbols), truncated to [-span/2, span/2) and rescaled so that
 * the truncated pulse has unit energy again. A_c = sqrt(10^(power_db/10)), so the carrier's
 * mean power per sample, E|s_c|^2, is 10^(power_db/10) (carrier 0 at its default 0 dB has
 * power 1). The transmitter starts at symbol 0: there are no symbols before it, so the first
 * span/2 symbols ramp up.
 *
 * Noise (cfg.noise = 1): complex white Gaussian noise n_k with E|n_k|^2 = N0 fs, where
 * Es = P0 / Rs0 (P0 = 10^(power_db/10) and Rs0 = symbol_rate of carrier 0, nominal, without
 * ppm) and N0 = Es / 10^(esn0_db / 10). So E|n|^2 = P0 (fs / Rs0) 10^(-esn0_db / 10).
 * The output is x_k = sum_c s_c(k / fs) + n_k + dc, where dc = dc_re + i dc_im is a constant
 * (a receiver's DC offset; default 0).
 *
 * Gaps (cfg.gaps, sorted by start, not overlapping): within [start, start + length) samples,
 * - zeros = 1 (a dropout: the receiver delivers nothing): x_k = 0 exactly, no signal, noise
 *   or DC;
 * - zeros = 0 (the transmitters are off): x_k = n_k + dc, the carriers are muted.
 * The symbol clocks and the bits keep running through a gap (the symbols of a gap are made and
 * counted by prx_sim_take_bits, only not heard), so after the gap the carriers resume mid-stream
 * at the symbol the clock has reached, without a new ramp-up.
 *
 * Randomness (reproducible, documented so other tools can regenerate the bits):
 * SplitMix64(seed) denotes the generator state += 0x9e3779b97f4a7c15, output
 * z = mix(state) (Steele, Lea & Flood 2014, the seeding generator of xoshiro). Output j of
 * SplitMix64(seed) (j = 0, 1, ...) is mix(seed + (j + 1) 0x9e3779b97f4a7c15).
 * - Data bit i of a carrier (i = 0, 1, ...) is bit (i mod 64) (LSB first) of output i / 64 of
 *   SplitMix64(seed), with seed = the carrier's seed, or c + 1 for carrier c when it is 0.
 *   Data symbol m carries b0 = bit 2m and b1 = bit 2m + 1.
 * - Noise of sample k comes from output k of SplitMix64(noise_seed) (Box-Muller on its two
 *   32-bit halves), so it does not depend on how the stream is cut into calls.
 *
 * Symbols: with pilot_period P > 0, symbol n is pilot prx_qpsk_pilot(n mod P) when
 * n mod P < pilot_len, else the next data symbol; the data symbols (and their differential
 * chain) are the same as without pilots: the chain runs over data symbols only, starting from
 * the reference (1 + j)/sqrt(2), skipping the pilots. With pi4, a_n is that symbol times
 * exp(j n pi/4) (pi/4-QPSK).
 *
 * The computed signal matches the formula to better than -95 dB (relative L2, -99.5 dB worst
 * measured; the pulse is a table of 256 fractional phases interpolated linearly and the carrier a
 * table-driven rotator re-anchored every 1024 samples from an exact phase); tests/test_sim.c
 * measures it. Output depends only on the configuration, never on the block sizes of the calls or
 * the thread count. */
#ifndef POLYRX_SIM_H
#define POLYRX_SIM_H

#include "polyrx/core.h"
#include "polyrx/modem.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double freq;           /* carrier frequency offset from the stream's centre, Hz (the CFO),
                            in [-fs/2, fs/2] */
  double symbol_rate;    /* Rs in Hz; sample_rate / Rs >= 2, need not be an integer */
  double rolloff;        /* RRC roll-off in (0, 1] (default 0.35) */
  unsigned span;         /* RRC span in symbols, 2..128 (default 12) */
  double power_db;       /* carrier power in dB relative to carrier 0 (carrier 0: 0 dB = power 1) */
  double phase;          /* carrier phase at sample 0, radians */
  double timing_offset;  /* symbol 0 is centred at this fraction of a symbol, in [0, 1) */
  double clock_ppm;      /* symbol-clock offset: the true symbol rate is Rs (1 + ppm 1e-6);
                            |ppm| <= 10000 */
  int differential;      /* 1: differential encoding of the data symbols (polyrx/modem.h) */
  int pi4;               /* 1: pi/4-QPSK: symbol n (pilots counted) turned by n pi/4 (with
                            differential: pi/4-DQPSK, TETRA's phase steps) */
  unsigned pilot_period; /* 0: no pilots; else a frame of pilot_period symbols starts with */
  unsigned pilot_len;    /*   pilot_len pilot symbols (prx_qpsk_pilot), 1 <= len < period */
  uint64_t seed;         /* seed of the data bits (0: derived from the carrier's index, c + 1) */
} prx_sim_carrier;

prx_sim_carrier prx_sim_carrier_default(void);

/* Samples [start, start + length) of the stream: zeros = 1 -> output exactly 0; zeros = 0 ->
 * carriers muted, noise and DC kept (the model above). */
typedef struct {
  uint64_t start, length; /* length >= 1 */
  int zeros;              /* 0 or 1 */
} prx_sim_gap;

typedef struct {
  double sample_rate;              /* Hz */
  const prx_sim_carrier *carriers; /* copied by create */
  size_t n_carriers;               /* 1 or more */
  int noise;                       /* 0: no noise; 1: AWGN set by esn0_db */
  double esn0_db;                  /* Es/N0 of carrier 0 (noise density N0 follows from it;
                                      other carriers have Es/N0 shifted by their power_db and
                                      10 log10(Rs0 / Rs)) */
  uint64_t noise_seed;             /* seed of the noise (default 1) */
  int threads;                     /* worker threads, 0: all cores */
  double dc_re, dc_im;             /* DC offset added to every sample outside zero gaps
                                      (default 0; finite) */
  const prx_sim_gap *gaps;         /* gaps sorted by start, not overlapping (copied by create) */
  size_t n_gaps;                   /* 0 (default) or more */
} prx_sim_config;

prx_sim_config prx_sim_config_default(void);
/* Eb/N0 to Es/N0 for QPSK (2 bits per symbol): + 10 log10(2) dB. Pilot overhead is not
 * counted (Eb is the energy of a channel bit, pilots included). */
double prx_sim_ebn0_to_esn0(double ebn0_db);

typedef struct prx_sim prx_sim;
prx_status prx_sim_create(const prx_sim_config *cfg, prx_sim **out);
void prx_sim_destroy(prx_sim *s);
/* Writes the next n samples of the stream. */
prx_status prx_sim_generate(prx_sim *s, prx_cf32 *out, size_t n);
/* Data bits (unpacked, one 0/1 byte per bit, b0 then b1 of each data symbol) of carrier c
 * whose symbols have been started so far and not yet taken: copies up to max, returns count in
 * *n. Pilot symbols carry no data and give no bits. Symbol n is started once a sample at or after
 * its pulse's start, (n + timing_offset - span/2) T', has been generated: after a stream of
 * N samples the bits run span/2 symbols beyond the last symbol centre inside the stream. The
 * generator keeps no bit buffer (bits are recomputed from the seed), so bits never taken are
 * never lost and cost nothing. */
prx_status prx_sim_take_bits(prx_sim *s, size_t c, uint8_t *bits, size_t max, size_t *n);

/* Derived figures of carrier c, for tests and tools that align with the transmitted symbols. */
typedef struct {
  double samples_per_symbol; /* true value fs / (Rs (1 + ppm 1e-6)) */
  double first_symbol;       /* sample index (fractional) of symbol 0's centre: symbol n is
                                centred at (n + timing_offset) samples_per_symbol */
  double amplitude;          /* A_c = sqrt(10^(power_db / 10)) */
  double esn0_db;            /* this carrier's Es/N0 (+inf without noise) */
  uint64_t symbols;          /* symbols started so far, pilots included */
  uint64_t data_symbols;     /* data symbols started so far (2 bits each) */
} prx_sim_carrier_info;
prx_status prx_sim_carrier_state(const prx_sim *s, size_t c, prx_sim_carrier_info *out);
/* Per-sample complex noise variance E|n|^2 = N0 fs (0 without noise). */
double prx_sim_noise_variance(const prx_sim *s);
/* Samples generated so far. */
uint64_t prx_sim_position(const prx_sim *s);

#ifdef __cplusplus
}
#endif
#endif
