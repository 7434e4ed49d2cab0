/* polyrx carrier detection: finds the QPSK (and other linearly modulated, RRC-shaped) carriers in
 * a wideband capture and estimates each one's centre frequency, symbol rate, occupied bandwidth,
 * roll-off and Es/N0, so that a receiver can demodulate carriers it was not told about
 * (`polyrx rx --detect`). One call on a stretch of capture; no object, no state.
 *
 * Method (docs/ARCHITECTURE.md, "Carrier detection", has the details):
 * 1. Power: one FFT of the stretch (mean removed: a DC offset is not a carrier); its power
 *    spectrum at a sixteenth of the slowest symbol rate; the noise floor from the quiet points
 *    (unbiased even when carriers fill most of the band); runs of the spectrum above the floor,
 *    split at the dips between carriers side by side. Each band's half-power width is about Rs.
 * 2. Per band, on its bins mixed down and transformed back (about twice the band's width): the
 *    symbol rate from the cyclostationary line of |y|^2 at Rs (near the half-power width,
 *    refined by float64 DFT evaluations around the peak), the centre from the line of y^4 at
 *    4 f_c (refined the same way; the half-power midpoint without one; pi/4-QPSK, whose two
 *    lines lie at 4 f_c +- Rs/2, from their midpoint, and marked), Es/N0 from the band's
 *    power over the noise floor beside it (a tilted floor is followed), the roll-off from the
 *    share of that power within Rs / 2 of the centre, and the symbols' C42 (one ring or several
 *    levels) from y's moments.
 * 3. A band without a symbol-rate line, narrower than 0.6 min_symbol_rate (tones, spurs) or
 *    below min_esn0_db is no carrier; the rest are reported once each, strongest first.
 *
 * Samples (prx_detect_min_samples): 800 symbols of the slowest carrier, 800 fs / min_symbol_rate
 * (at least 65536): one second at 6.5536 Msps with the defaults. At most the first 2^24 samples
 * are used. Fewer samples (at least 4096) still work, less accurately.
 *
 * Accuracy with the samples asked for, carriers at 10 dB Es/N0 or more, roll-off 0.1 to 1: found,
 * centre within 0.05 Rs, symbol rate within 200 ppm, Es/N0 within 1 dB (measured over 456 random
 * carriers: 2e-5 Rs, 40 ppm, 0.26 dB worst); no carrier in pure noise, with or without a DC
 * offset; carriers at least 1.0 occupied bandwidth apart (centre to centre) reported separately.
 * Not found: a carrier across the band's edge (+-fs/2), one without a dip between it and a much
 * stronger neighbour. */
#ifndef POLYRX_DETECT_H
#define POLYRX_DETECT_H

#include "polyrx/core.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double sample_rate;     /* fs in Hz of the wideband capture (required, > 0) */
  double min_symbol_rate; /* Hz: slowest carrier looked for (0: fs / 8192; at least fs / 16384:
                             decimate the capture to look for slower ones) */
  double max_symbol_rate; /* Hz: fastest (0: fs / 4; at most fs / 2) */
  double min_esn0_db;     /* report carriers at or above this Es/N0 (default 8 dB) */
  unsigned max_carriers;  /* stop after this many, strongest first (0: 256) */
  int threads;            /* 0: all cores */
  double flat_bandwidth;  /* Hz about the centre where the input's noise is flat, its floor read
                             there only: a channelizer's output, whose noise falls beyond its
                             passband (0: the whole band; at most sample_rate) */
} prx_detect_config;
prx_detect_config prx_detect_config_default(void);

typedef struct {
  double freq;        /* Hz from the capture's centre: the carrier's centre frequency */
  double symbol_rate; /* Hz */
  double bandwidth;   /* Hz: occupied bandwidth as measured */
  double rolloff;     /* estimated RRC roll-off, clamped to [0.1, 1] */
  double esn0_db;     /* estimated Es/N0 */
  int pi4;            /* 1: pi/4-QPSK (its 4th-power lines Rs/2 either side of 4 freq, as strong
                         as each other, none at 4 freq: TETRA's pi/4-DQPSK; P25's C4FM too, read
                         the same way), 0: QPSK */
  int line4;          /* 1: the 4th-power line(s) show QPSK's pattern or pi/4-QPSK's (pi4 says
                         which; freq from them); 0: none found (freq the half-power midpoint),
                         or lines of neither pattern (MSK: freq from the strongest):
                         another modulation, and pi4 0 says nothing */
  double c42;         /* the symbols' 4th-order cumulant C42 / C21^2, measured on the band's
                         samples with the RRC pulse at `rolloff` and the noise taken out (so
                         neither Es/N0, timing nor frequency enter): -1 for symbols on one ring
                         (QPSK, pi/4-QPSK, 8PSK; constant-envelope FSK, MSK and C4FM below -1),
                         -0.68 for 16QAM, -0.62 for 64QAM, -0.77 for 16APSK (rings 2.7 apart);
                         a pulse other than the RRC, or multipath, moves it (a second path
                         10 dB down half a symbol late: -1.02). The noise is taken from right
                         beside the band (its higher side) where that is above the floor (a
                         filtered capture); a neighbour touching the band makes it read high
                         and c42 fall below -1 (to NaN where the band's power is not above
                         it), never towards QAM's values */
} prx_detect_carrier;

/* Symbols on one ring have c42 at or below this; above it their power lies on several levels:
 * QAM or APSK, read as QPSK with each symbol's bits its quadrant's. Over 2048 symbols at 7 dB
 * (roll-off 0.2, the widest spread): QPSK -0.99 (sd 0.027), 16QAM -0.67 (sd 0.034): 6 and 4.5
 * standard deviations away; below 7 dB QPSK's spread reaches it (5 dB: sd 0.048). */
#define PRX_DETECT_RING_C42 (-0.82)

/* The fewest samples either call takes (less accurately than prx_detect_min_samples asks for). */
#define PRX_DETECT_LEAST_SAMPLES 4096

/* Samples the detector needs for this configuration to meet its documented accuracy (0 for an
 * invalid configuration). */
size_t prx_detect_min_samples(const prx_detect_config *cfg);
/* Finds the QPSK carriers in n cf32 samples (n >= 4096; non-finite samples count as 0);
 * writes up to max_out, strongest first (by Es/N0), and the number found in *n_found (at most
 * max_carriers; more than max_out when out was too small). PRX_ERR_INVALID for a bad
 * configuration or too few samples, PRX_ERR_NOMEM when memory runs out (about 8 bytes per
 * sample used). */
prx_status prx_detect_carriers(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                               prx_detect_carrier *out, size_t max_out, size_t *n_found);

/* The carriers at known places: for each at[i] (its freq, symbol_rate and rolloff read), the
 * detector's second stage (step 2 above) on its band, without the search for bands, so carriers
 * side by side need no dip between them: out[i] its estimate, and found[i] 1 where the band
 * shows a symbol-rate line within 2 % of at[i].symbol_rate and Es/N0 at or above
 * cfg->min_esn0_db; 0 otherwise (out[i] then undefined). The 4th-power line is looked for within
 * 0.2 Rs of at[i].freq; out[i].line4 says whether the lines show QPSK's or pi/4-QPSK's pattern
 * clearly, out[i].pi4 which. The lines are read at their transforms' bins, not refined (the
 * rate within ~1e-4 of itself, the centre within ~1e-4 Rs over 2048 symbols): a verdict on the
 * modulation of carriers a user lists (`polyrx demod`, `rx`), a third of the work of
 * prx_detect_carriers' estimates. cfg's rate limits and max_carriers are not used; a place at
 * +-fs/2 is a carrier across the band's edge (its bins wrap). PRX_ERR_INVALID for a bad
 * configuration, a place beyond +-fs/2 or fewer than 4096 samples; PRX_ERR_NOMEM. */
prx_status prx_detect_at(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                         const prx_detect_carrier *at, size_t n_at, prx_detect_carrier *out,
                         int *found);

#ifdef __cplusplus
}
#endif
#endif
