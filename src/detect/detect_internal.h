/* Carrier detection, internal: the capture's spectrum, the candidate bands found in its power
 * spectrum, and the per-candidate estimators (docs/ARCHITECTURE.md, "Carrier detection"). */
#ifndef PRX_DETECT_INTERNAL_H
#define PRX_DETECT_INTERNAL_H

#include "polyrx/detect.h"

#include <stddef.h>

/* The capture's spectrum. Positions in the band are "centred bins": centred bin u is at
 * frequency (u - n / 2) * fs / n, so that u = 0 is -fs/2 and the bins run upwards. */
typedef struct {
  double fs;        /* sample rate, Hz */
  size_t n;         /* transform length (samples used) */
  prx_cf32 *x;      /* X_k of the mean-removed, end-tapered capture, FFT order */
  size_t block;     /* bins per point of the power spectrum */
  size_t n_psd;     /* points of the power spectrum; point j covers centred bins
                       [j block, (j + 1) block) */
  double *psd;      /* mean |X_k|^2 over each point's bins */
  double noise_bin; /* E|X_k|^2 of the noise alone (the floor) */
} detect_spectrum;

/* A candidate band: one carrier's stretch of the power spectrum, in centred bins. */
typedef struct {
  double centre;             /* midpoint of the half-power points */
  double width;              /* distance between the half-power points (about Rs for RRC) */
  double lo, hi;             /* bins taken for the carrier's own analysis (where it fades into the
                                floor, inside the limits) */
  double limit_lo, limit_hi; /* the neighbours' limits: the dip to the next band or the band's
                                edge */
  double floor;              /* E|X_k|^2 of the noise around the band */
} detect_band;

/* The spectrum of the first n samples of x (n a transform-friendly length), its power spectrum
 * at `resolution` Hz and its noise floor (read within flat / 2 Hz of the centre; 0: the whole
 * band). Frees with detect_spectrum_free. */
prx_status detect_spectrum_make(const prx_cf32 *x, size_t n, double fs, double resolution,
                                double flat, detect_spectrum *out);
void detect_spectrum_free(detect_spectrum *s);
/* X at centred bin u (taken modulo n). */
prx_cf32 detect_bin(const detect_spectrum *s, long long u);

/* The candidate bands of the power spectrum whose level reaches `threshold` times the floor
 * (min_width..max_width Hz wide at half power). Writes up to cap, returns how many. */
size_t detect_bands(const detect_spectrum *s, double threshold, double min_width, double max_width,
                    detect_band *out, size_t cap);

/* Estimates one carrier from its band; 1 if it is a carrier (a symbol-rate line in
 * [min_rs, max_rs]) and *out is set, 0 if not, -1 when memory runs out (or FFTW cannot
 * plan). refine 1: the lines
 * refined by DFT evaluations around their peaks (the rate to ppm, the centre to 1e-6 Rs); 0: at
 * their transform's bins (the rate within ~1e-4 of itself, the centre within ~1e-4 Rs over 2048
 * symbols), a third of the work. */
int detect_estimate(const detect_spectrum *s, const detect_band *b, double min_rs, double max_rs,
                    int refine, prx_detect_carrier *out);

/* The smallest length >= n whose prime factors are 2, 3, 5 and 7 (FFTW's fast sizes). */
size_t detect_fft_size_up(size_t n);
/* The largest such length <= n (n >= 1). */
size_t detect_fft_size_down(size_t n);

#endif
