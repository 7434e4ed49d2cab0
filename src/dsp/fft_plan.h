/* FFTW plans that start fast (internal): plans made under the library's FFTW planner lock, timed
 * plans kept as wisdom in the user's cache directory so that only the first run on a machine
 * pays for measuring (GNU Radio keeps ~/.gr_fftw_wisdom the same way).
 *
 * The wisdom file is $XDG_CACHE_HOME/polyrx/fftw-wisdom (an absolute XDG_CACHE_HOME), else
 * $HOME/.cache/polyrx/fftw-wisdom. It is read once per process, whole, without a lock; it is
 * written to a temporary file in the same directory and renamed into place, so concurrent runs
 * only ever see a complete file (the last writer's). A corrupt, unreadable or foreign file is
 * ignored (FFTW rejects it whole) and replaced at the next save; an unwritable directory only
 * means the next run measures again. Nothing here fails because of the wisdom file.
 * POLYRX_FFTW_WISDOM=off (or 0) in the environment neither reads nor writes it. */
#ifndef PRX_FFT_PLAN_H
#define PRX_FFT_PLAN_H

#include "polyrx/core.h"

#include <fftw3.h>

typedef enum {
  PRX_FFT_ESTIMATE, /* FFTW_ESTIMATE: no timing, microseconds to plan */
  PRX_FFT_MEASURE   /* FFTW_MEASURE from wisdom, else measured once and saved; sizes below
                       PRX_FFT_MEASURE_MIN_POINTS plan with FFTW_ESTIMATE */
} prx_fft_effort;

/* Below this many points measuring does not pay: the measured plan saves at most 0.3 us per
 * transform (1.08-1.24x of transforms under 2 us, 128..2048 points) and costs 30-80 ms to
 * make; from 4096 points it is 1.4-1.7x faster (2026-12-01, bench/RESULTS.md "commands"). */
#define PRX_FFT_MEASURE_MIN_POINTS 4096

/* A 1-D complex transform of n points from in to out (may be equal; the arrays' alignment is the
 * plan's: execute other arrays with fftwf_execute_dft only when aligned alike). sign is
 * FFTW_FORWARD or FFTW_BACKWARD. The arrays may be overwritten while measuring. NULL when FFTW
 * cannot plan. Destroy with prx_fft_destroy. */
fftwf_plan prx_fft_plan_1d(int n, prx_cf32 *in, prx_cf32 *out, int sign, prx_fft_effort effort);
void prx_fft_destroy(fftwf_plan plan); /* accepts NULL */

/* One n-point transform of in into out (in == out: in place; arrays aligned as prx_alloc's, as
 * the shared plans' are: others get a plan of their own) through a plan shared by every thread
 * of the process: FFTW_ESTIMATE, made at the first call for (n, sign, in place) and kept to the
 * process's end, so that many small transforms of one size (the detector's bands: three a
 * carrier, a thousand carriers in rx's check) neither plan each time nor queue on the planner
 * lock (on the H200's 16-core host, 1024 channels' detection from 16 threads: 199 ms planning
 * per call, 25 ms shared). Sizes above PRX_FFT_SHARED_MAX_POINTS, and any beyond
 * PRX_FFT_SHARED_PLANS kept, plan, run and destroy their own. PRX_ERR_INTERNAL where FFTW
 * cannot plan (prx_last_error says so). */
#define PRX_FFT_SHARED_MAX_POINTS (1 << 20)
#define PRX_FFT_SHARED_PLANS 64
prx_status prx_fft_run(int n, prx_cf32 *in, prx_cf32 *out, int sign);

/* FFTW made ready for an object's plan, on another thread while the caller does other work: the
 * wisdom file's import (with PRX_FFT_MEASURE), FFTW's one-time set-up of its planner (~0.5 ms at a
 * process's first plan) and a forward n-point plan as prx_fft_plan_1d makes it with `effort`, on
 * arrays of its own (its twiddles shared with the object's plan of the same problem while both
 * are held). The object's plans are the same with or without it (FFTW_ESTIMATE's choice depends on
 * the problem only; FFTW_MEASURE's comes from the wisdom). NULL where nothing could be made
 * (nothing then changes but the time); prx_fft_warm_end destroys it (accepts NULL). */
void *prx_fft_warm(int n, prx_fft_effort effort);
void prx_fft_warm_end(void *warm);

/* What the process's planning did, for tests and benchmarks. */
typedef struct {
  int wisdom_read;  /* the wisdom file was read and accepted */
  int wisdom_tried; /* the file was looked for (0 when disabled or no cache directory) */
  unsigned from_wisdom, measured, estimated; /* plans by source */
  unsigned saved, save_failed;               /* wisdom file writes */
} prx_fft_stats;
void prx_fft_get_stats(prx_fft_stats *out);

#endif
