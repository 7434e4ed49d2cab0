/* Pictures (internal to polyrx; the commands draw with them): an RGB canvas with lines, filled
 * rectangles and text in a built-in 5x7 font, a perceptual colour map, "nice" axis ticks, PNG
 * output through libpng, and the waterfall accumulator that turns a stream of any length into a
 * bounded number of averaged power-spectrum rows. */
#ifndef PRX_PLOT_H
#define PRX_PLOT_H

#include "polyrx/core.h"

#include <stddef.h>
#include <stdint.h>

/* ---- canvas ---- */
typedef struct {
  int w, h;
  uint8_t *rgb; /* h rows of w pixels, 3 bytes each */
} plot_canvas;

/* Colours are 0xRRGGBB. */
prx_status plot_canvas_init(plot_canvas *c, int w, int h, uint32_t background);
void plot_canvas_free(plot_canvas *c);
/* Pixels outside the canvas are clipped. */
void plot_pixel(plot_canvas *c, int x, int y, uint32_t rgb);
void plot_fill(plot_canvas *c, int x, int y, int w, int h, uint32_t rgb);
/* Every `dash`-th pixel on, dash 1 = solid (vertical and horizontal lines). */
void plot_vline(plot_canvas *c, int x, int y0, int y1, uint32_t rgb, int dash);
void plot_hline(plot_canvas *c, int x0, int x1, int y, uint32_t rgb, int dash);

/* ---- text: 5x7 glyphs (font.c: digits, letters, . - + : / ( ) , = _) in 6x9 cells; other
 * characters draw as a blank cell ---- */
#define PLOT_CHAR_W 6
#define PLOT_CHAR_H 9
/* Width in pixels of s at the given scale (1, 2, ...). */
int plot_text_width(const char *s, int scale);
/* Draws s with its top-left at (x, y); align 0 left (x is the left edge), 1 centred on x, 2 right
 * (x is the right edge). Returns the left edge used. */
int plot_text(plot_canvas *c, int x, int y, const char *s, uint32_t rgb, int scale, int align);

/* ---- colour map: t in [0, 1] (clamped) from dark blue through teal and green to yellow, in
 * steps of increasing lightness (viridis-like) ---- */
uint32_t plot_colormap(double t);

/* ---- ticks: up to cap values k*step in [lo, hi] with step 1, 2 or 5 times a power of 10,
 * chosen for about `target` ticks; *step_out receives the step. Returns the count. ---- */
size_t plot_ticks(double lo, double hi, int target, double *ticks, size_t cap, double *step_out);
/* A tick label: the value v in `div` units with the decimals the tick step needs ("-0" shown as
 * "0"). */
void plot_tick_label(char *out, size_t cap, double v, double step, double div);
/* A value in an engineering unit for axis labels: picks the scale (G, M, k, 1, m, u) from
 * `magnitude` and returns its divisor and prefix ("M"). */
double plot_eng_unit(double magnitude, const char **prefix);

/* ---- PNG ---- */
/* Writes the canvas as an 8-bit RGB PNG with tEXt chunks (keys[i], values[i]). PRX_ERR_IO with
 * the path on failure; a partial file is removed. */
prx_status plot_write_png(const plot_canvas *c, const char *path, const char *const *keys,
                          const char *const *values, size_t n_text);

/* ---- axes and charts (charts.c) ---- */
/* A plot area at (x0, y0), w x h pixels, showing [x_lo, x_hi] across and [y_lo, y_hi] up. */
typedef struct {
  int x0, y0, w, h;
  double x_lo, x_hi, y_lo, y_hi;
} plot_axes;
int plot_axes_x(const plot_axes *a, double v); /* pixel column of value v */
int plot_axes_y(const plot_axes *a, double v); /* pixel row of value v */
/* The frame, ticks and tick labels of a, and the axis labels: x_label is a printf format with
 * one %s that receives the engineering prefix when x_eng (e.g. "frequency (%sHz)"). */
void plot_draw_axes(plot_canvas *c, const plot_axes *a, const char *x_label, int x_eng,
                    const char *y_label, int y_eng);
/* A bar chart of power per channel: bar i centred at freq[i] (Hz), bin_width wide, power_db[i]
 * high (non-finite values draw no bar), over the y range in 10 dB steps around the data (at
 * most 120 dB deep); axes "frequency (Hz)" and "power (dBFS)"; a title line. */
prx_status plot_bars_png(const char *path, const double *freq, const double *power_db, size_t n,
                         double bin_width, const char *title);
/* A constellation density plot of n symbols: 400 x 400 cells over +-1.6 times their RMS
 * amplitude on both axes, each cell coloured by its count on a log scale, zero lines, axes
 * "in-phase" and "quadrature"; a title line. */
prx_status plot_constellation_png(const char *path, const prx_cf32 *s, size_t n, const char *title);

/* ---- waterfall accumulator ---- */
/* Frames of nfft samples (no overlap), Hann-windowed, transformed; each row is the mean power
 * spectrum of frames_per_row consecutive frames, in FFT-shifted order (bin 0 is -fs/2, bin
 * nfft/2 the centre), scaled so that a complex tone of amplitude A at a bin centre reads A^2.
 * With frames_per_row 0 the rows start at one frame each and, when max_rows are full, adjacent
 * rows are merged in pairs and the frames per row doubled: memory stays max_rows x nfft values
 * for a stream of any length. */
typedef struct plot_waterfall plot_waterfall;
prx_status plot_waterfall_create(size_t nfft, size_t max_rows, uint64_t frames_per_row,
                                 plot_waterfall **out);
void plot_waterfall_destroy(plot_waterfall *w);
/* Adds n samples (any n: a partial frame waits for the next call). */
prx_status plot_waterfall_add(plot_waterfall *w, const prx_cf32 *x, size_t n);
/* Rows so far (the last one may hold fewer frames than the others: its mean is over those). */
size_t plot_waterfall_rows(const plot_waterfall *w);
const double *plot_waterfall_row(const plot_waterfall *w, size_t i);
uint64_t plot_waterfall_frames_per_row(const plot_waterfall *w);
/* Samples in complete frames (the samples after the last whole frame are not shown). */
uint64_t plot_waterfall_samples(const plot_waterfall *w);

#endif
