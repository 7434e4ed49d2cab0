/* The waterfall accumulator (plot.h): Hann-windowed FFT frames averaged into a bounded number of
 * rows. Memory: max_rows x nfft doubles, whatever the stream's length; a stream longer than
 * max_rows frames per row merges adjacent rows in pairs (the frames per row double), so rows
 * always cover equal stretches of the stream, the last one possibly incomplete. */
#include "plot.h"

#include "core/internal.h"

#include <fftw3.h>
#include <math.h>
#include <string.h>

struct plot_waterfall {
  size_t nfft, max_rows, rows, fill; /* fill: samples of the frame in progress */
  uint64_t per_row, in_last;         /* frames per row; frames in the last row */
  uint64_t frames;                   /* complete frames */
  int grow;                          /* 1: rows merge in pairs when full */
  float *window;
  double scale; /* 1 / (sum of the window)^2: a tone of amplitude A at a bin centre reads A^2 */
  fftwf_complex *buf;
  fftwf_plan plan;
  double *power; /* max_rows x nfft sums of power, FFT-shifted */
  double *mean;  /* one row's mean, returned by plot_waterfall_row */
};

prx_status plot_waterfall_create(size_t nfft, size_t max_rows, uint64_t frames_per_row,
                                 plot_waterfall **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "plot_waterfall_create: NULL output");
  *out = NULL;
  if (nfft < 8 || nfft > (1u << 20))
    return prx_fail(PRX_ERR_INVALID, "FFT length must be 8 to 1048576, got %zu", nfft);
  if (max_rows < 2 || max_rows > 65536)
    return prx_fail(PRX_ERR_INVALID, "waterfall rows must be 2 to 65536, got %zu", max_rows);
  plot_waterfall *w = prx_alloc(1, sizeof *w);
  if (!w) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a waterfall");
  w->nfft = nfft;
  w->max_rows = max_rows;
  w->grow = frames_per_row == 0;
  w->per_row = frames_per_row ? frames_per_row : 1;
  w->window = prx_alloc(nfft, sizeof *w->window);
  w->buf = fftwf_malloc(nfft * sizeof *w->buf);
  w->power = prx_alloc(max_rows * nfft, sizeof *w->power);
  w->mean = prx_alloc(nfft, sizeof *w->mean);
  if (!w->window || !w->buf || !w->power || !w->mean) {
    plot_waterfall_destroy(w);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate a waterfall of %zu x %zu", max_rows, nfft);
  }
  double sum = 0;
  for (size_t i = 0; i < nfft; i++) {
    double v = 0.5 - 0.5 * cos(2 * M_PI * (double)i / (double)nfft); /* periodic Hann */
    w->window[i] = (float)v;
    sum += (float)v;
  }
  w->scale = 1 / (sum * sum);
  prx_fftw_lock();
  w->plan = fftwf_plan_dft_1d((int)nfft, w->buf, w->buf, FFTW_FORWARD, FFTW_ESTIMATE);
  prx_fftw_unlock();
  if (!w->plan) {
    plot_waterfall_destroy(w);
    return prx_fail(PRX_ERR_NOMEM, "cannot plan an FFT of %zu points", nfft);
  }
  *out = w;
  return PRX_OK;
}

void plot_waterfall_destroy(plot_waterfall *w) {
  if (!w) return;
  if (w->plan) {
    prx_fftw_lock();
    fftwf_destroy_plan(w->plan);
    prx_fftw_unlock();
  }
  fftwf_free(w->buf);
  prx_free(w->window);
  prx_free(w->power);
  prx_free(w->mean);
  prx_free(w);
}

/* Rows 2i and 2i+1 become row i; the frames per row double. */
static void merge_pairs(plot_waterfall *w) {
  size_t n = w->nfft, half = w->rows / 2;
  for (size_t i = 0; i < half; i++) {
    double *dst = w->power + i * n;
    const double *a = w->power + 2 * i * n, *b = a + n;
    for (size_t k = 0; k < n; k++) dst[k] = a[k] + b[k];
  }
  /* an odd last row (complete: merging happens only when all rows are) stays as a half row */
  if (w->rows % 2) {
    memmove(w->power + half * n, w->power + (w->rows - 1) * n, n * sizeof *w->power);
    w->in_last = w->per_row;
    w->rows = half + 1;
  } else {
    w->in_last = 2 * w->per_row;
    w->rows = half;
  }
  w->per_row *= 2;
}

/* The frame in buf (windowed and transformed) added to the current row. */
static void add_frame(plot_waterfall *w) {
  size_t n = w->nfft;
  if (w->rows == 0 || w->in_last == w->per_row) {
    if (w->rows == w->max_rows) {
      if (!w->grow) return; /* a fixed layout that is full: later frames are not shown */
      merge_pairs(w);
    }
    if (w->in_last == w->per_row || w->rows == 0) {
      memset(w->power + w->rows * n, 0, n * sizeof *w->power);
      w->rows++;
      w->in_last = 0;
    }
  }
  fftwf_execute(w->plan);
  double *row = w->power + (w->rows - 1) * n;
  for (size_t k = 0; k < n; k++) {
    size_t s = (k + n / 2) % n; /* FFT order to shifted order: bin n/2 (-fs/2) first */
    double re = w->buf[s][0], im = w->buf[s][1];
    row[k] += re * re + im * im;
  }
  w->in_last++;
  w->frames++;
}

prx_status plot_waterfall_add(plot_waterfall *w, const prx_cf32 *x, size_t n) {
  if (!w || (n && !x)) return prx_fail(PRX_ERR_INVALID, "plot_waterfall_add: NULL argument");
  for (size_t i = 0; i < n; i++) {
    w->buf[w->fill][0] = x[i].re * w->window[w->fill];
    w->buf[w->fill][1] = x[i].im * w->window[w->fill];
    if (++w->fill == w->nfft) {
      add_frame(w);
      w->fill = 0;
    }
  }
  return PRX_OK;
}

size_t plot_waterfall_rows(const plot_waterfall *w) { return w ? w->rows : 0; }

const double *plot_waterfall_row(const plot_waterfall *w, size_t i) {
  if (!w || i >= w->rows) return NULL;
  uint64_t frames = i + 1 == w->rows ? w->in_last : w->per_row;
  double s = w->scale / (double)(frames ? frames : 1);
  const double *row = w->power + i * w->nfft;
  for (size_t k = 0; k < w->nfft; k++) w->mean[k] = row[k] * s;
  return w->mean;
}

uint64_t plot_waterfall_frames_per_row(const plot_waterfall *w) { return w ? w->per_row : 0; }

uint64_t plot_waterfall_samples(const plot_waterfall *w) { return w ? w->frames * w->nfft : 0; }
