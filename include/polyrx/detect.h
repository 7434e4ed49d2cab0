/* polyrx carrier detection: finds the QPSK (and other linearly modulated, RRC-shaped) carriers in
 * a wideband capture and estimates each one's centre frequency, symbol rate, occupied bandwidth,
 * roll-off and Es/N0, so that a receiver can demodulate carriers it was not told about
 * (`polyrx rx --detect`).
 *
 * Method (docs/ARCHITECTURE.md, "Carrier detection", has the details):
 * 1. Power: a Welch power spectral density of the capture; the noise floor is the median of the
 *    bins (carriers occupy a minority of the band); runs of bins above the floor form candidate
 *    bands. A DC offset is a single-bin line and is not a carrier.
 * 2. Per candidate, on a copy mixed down to the band's centre and decimated to a few times its
 *    width: the symbol rate from the cyclostationary line of |x|^2 at Rs (refined by DFT
 *    evaluations around the peak), the centre from the line of x^4 at 4 f_c (refined the same
 *    way), Es/N0 from the in-band power against the floor, the roll-off from the measured
 *    bandwidth against Rs.
 * 3. Candidates that are not QPSK-like (no symbol-rate line) or below min_esn0_db are dropped;
 *    the rest are reported once each, strongest first.
 *
 * Accuracy, with at least prx_detect_min_samples() samples and Es/N0 >= 10 dB: centre within
 * 0.05 Rs, symbol rate within 200 ppm, Es/N0 within 1 dB (see docs/ARCHITECTURE.md for the
 * measured figures). Carriers whose bands are at least 1.0 x their occupied bandwidth apart
 * (centre to centre) are reported separately. */
#ifndef POLYRX_DETECT_H
#define POLYRX_DETECT_H

#include "polyrx/core.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double sample_rate;     /* fs in Hz of the wideband capture (required, > 0) */
  double min_symbol_rate; /* Hz: slowest carrier looked for (0: fs / 8192) */
  double max_symbol_rate; /* Hz: fastest (0: fs / 4) */
  double min_esn0_db;     /* report carriers at or above this Es/N0 (default 8 dB) */
  unsigned max_carriers;  /* stop after this many, strongest first (0: 256) */
  int threads;            /* 0: all cores */
} prx_detect_config;
prx_detect_config prx_detect_config_default(void);

typedef struct {
  double freq;        /* Hz from the capture's centre: the carrier's centre frequency */
  double symbol_rate; /* Hz */
  double bandwidth;   /* Hz: occupied bandwidth as measured */
  double rolloff;     /* estimated RRC roll-off, clamped to [0.1, 1] */
  double esn0_db;     /* estimated Es/N0 */
} prx_detect_carrier;

/* Samples the detector needs for this configuration to meet its documented accuracy. */
size_t prx_detect_min_samples(const prx_detect_config *cfg);
/* Finds the QPSK carriers in n cf32 samples; writes up to max_out, strongest first, and
 * the number found in *n_found. */
prx_status prx_detect_carriers(const prx_detect_config *cfg, const prx_cf32 *x, size_t n,
                               prx_detect_carrier *out, size_t max_out, size_t *n_found);

#ifdef __cplusplus
}
#endif
#endif
