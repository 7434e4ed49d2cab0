/* Two charts the commands draw besides the waterfall: a per-channel power bar chart (channelize
 * --occupancy) and a constellation density plot (demod --constellation). Both share the axes
 * drawn here (frame, ticks, labels in engineering units) and state their layout in PNG tEXt
 * chunks (polyrx:plot_area, polyrx:x_range, polyrx:y_range), so that tests and programs can find
 * the axes in the picture. */
#include "plot.h"

#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BG 0x101418u
#define FG 0xd8dde3u
#define BAR 0x3fa7d6u
#define M_LEFT 72
#define M_TOP 30
#define M_BOTTOM 40
#define M_RIGHT 24

int plot_axes_x(const plot_axes *a, double v) {
  return a->x0 + (int)lround((v - a->x_lo) / (a->x_hi - a->x_lo) * a->w);
}

int plot_axes_y(const plot_axes *a, double v) {
  return a->y0 + a->h - (int)lround((v - a->y_lo) / (a->y_hi - a->y_lo) * a->h);
}

void plot_tick_label(char *out, size_t cap, double v, double step, double div) {
  int dec = (int)ceil(-log10(step / div) - 1e-9);
  if (dec < 0) dec = 0;
  if (dec > 9) dec = 9;
  snprintf(out, cap, "%.*f", dec, v / div);
  if (!strcmp(out, "-0")) snprintf(out, cap, "0");
}

void plot_draw_axes(plot_canvas *c, const plot_axes *a, const char *x_label, int x_eng,
                    const char *y_label, int y_eng) {
  plot_hline(c, a->x0 - 1, a->x0 + a->w, a->y0 - 1, FG, 1);
  plot_hline(c, a->x0 - 1, a->x0 + a->w, a->y0 + a->h, FG, 1);
  plot_vline(c, a->x0 - 1, a->y0 - 1, a->y0 + a->h, FG, 1);
  plot_vline(c, a->x0 + a->w, a->y0 - 1, a->y0 + a->h, FG, 1);
  double ticks[64], step;
  char text[128];
  const char *prefix = "";
  double div = x_eng ? plot_eng_unit(fmax(fabs(a->x_lo), fabs(a->x_hi)), &prefix) : 1;
  size_t n = plot_ticks(a->x_lo, a->x_hi, 7, ticks, 64, &step);
  for (size_t i = 0; i < n; i++) {
    int x = plot_axes_x(a, ticks[i]);
    plot_vline(c, x, a->y0 + a->h + 1, a->y0 + a->h + 4, FG, 1);
    plot_tick_label(text, sizeof text, ticks[i], step, div);
    plot_text(c, x, a->y0 + a->h + 7, text, FG, 1, 1);
  }
  snprintf(text, sizeof text, x_label, prefix);
  plot_text(c, a->x0 + a->w / 2, a->y0 + a->h + 22, text, FG, 1, 1);
  prefix = "";
  div = y_eng ? plot_eng_unit(fmax(fabs(a->y_lo), fabs(a->y_hi)), &prefix) : 1;
  n = plot_ticks(a->y_lo, a->y_hi, 7, ticks, 64, &step);
  for (size_t i = 0; i < n; i++) {
    int y = plot_axes_y(a, ticks[i]);
    plot_hline(c, a->x0 - 5, a->x0 - 2, y, FG, 1);
    plot_tick_label(text, sizeof text, ticks[i], step, div);
    plot_text(c, a->x0 - 8, y - 3, text, FG, 1, 2);
  }
  snprintf(text, sizeof text, y_label, prefix);
  plot_text(c, a->x0 - 8, a->y0 - 14, text, FG, 1, 0 /* left of the frame, above it */);
}

/* Writes c with the layout chunks of a. */
static prx_status write_with_layout(const plot_canvas *c, const plot_axes *a, const char *path) {
  char area[64], xr[64], yr[64];
  snprintf(area, sizeof area, "%d %d %d %d", a->x0, a->y0, a->w, a->h);
  snprintf(xr, sizeof xr, "%.17g %.17g", a->x_lo, a->x_hi);
  snprintf(yr, sizeof yr, "%.17g %.17g", a->y_lo, a->y_hi);
  const char *keys[3] = {"polyrx:plot_area", "polyrx:x_range", "polyrx:y_range"};
  const char *values[3] = {area, xr, yr};
  return plot_write_png(c, path, keys, values, 3);
}

prx_status plot_bars_png(const char *path, const double *freq, const double *power_db, size_t n,
                         double bin_width, const char *title) {
  if (!path || (n && (!freq || !power_db)) || n == 0 || !(bin_width > 0))
    return prx_fail(PRX_ERR_INVALID, "plot_bars_png: no bars to draw");
  double f_lo = INFINITY, f_hi = -INFINITY, p_hi = -INFINITY, p_lo = INFINITY;
  for (size_t i = 0; i < n; i++) {
    f_lo = fmin(f_lo, freq[i] - bin_width / 2);
    f_hi = fmax(f_hi, freq[i] + bin_width / 2);
    if (isfinite(power_db[i])) {
      p_hi = fmax(p_hi, power_db[i]);
      p_lo = fmin(p_lo, power_db[i]);
    }
  }
  if (!isfinite(p_hi)) p_hi = p_lo = 0;
  /* the y range: 10 dB steps around the data, at most 120 dB deep */
  double top = 10 * ceil((p_hi + 1e-9) / 10), bottom = 10 * floor(p_lo / 10);
  if (bottom < top - 120) bottom = top - 120;
  if (bottom >= top) bottom = top - 10;
  plot_axes a = {M_LEFT, M_TOP, 800, 360, f_lo, f_hi, bottom, top};
  plot_canvas c;
  prx_status st = plot_canvas_init(&c, a.x0 + a.w + M_RIGHT, a.y0 + a.h + M_BOTTOM, BG);
  if (st) return st;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(power_db[i]) || power_db[i] <= bottom) continue;
    int xa = plot_axes_x(&a, freq[i] - bin_width / 2),
        xb = plot_axes_x(&a, freq[i] + bin_width / 2);
    if (xb - xa > 2) xb--; /* a gap between wide bars */
    if (xb <= xa) xb = xa + 1;
    int y = plot_axes_y(&a, fmin(power_db[i], top));
    plot_fill(&c, xa, y, xb - xa, a.y0 + a.h - y, BAR);
  }
  plot_draw_axes(&c, &a, "frequency (%sHz)", 1, "power (dBFS)", 0);
  if (title) plot_text(&c, a.x0 + 80, 6, title, FG, 1, 0);
  st = write_with_layout(&c, &a, path);
  plot_canvas_free(&c);
  return st;
}

prx_status plot_constellation_png(const char *path, const prx_cf32 *s, size_t n,
                                  const char *title) {
  if (!path || !s || n == 0) return prx_fail(PRX_ERR_INVALID, "plot_constellation_png: no symbols");
  double p = 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    double e = (double)s[i].re * s[i].re + (double)s[i].im * s[i].im;
    if (isfinite(e)) p += e, m++;
  }
  double rms = m && p > 0 ? sqrt(p / (double)m) : 1;
  double r = 1.6 * rms; /* QPSK points at +-rms/sqrt(2): well inside */
  enum { G = 400 };
  plot_axes a = {M_LEFT, M_TOP, G, G, -r, r, -r, r};
  unsigned *count = calloc((size_t)G * G, sizeof *count);
  if (!count) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  unsigned peak = 0;
  for (size_t i = 0; i < n; i++) {
    double x = (s[i].re + r) / (2 * r) * G, y = (r - s[i].im) / (2 * r) * G;
    if (!(x >= 0 && x < G && y >= 0 && y < G)) continue;
    unsigned *cell = &count[(size_t)y * G + (size_t)x];
    if (++*cell > peak) peak = *cell;
  }
  plot_canvas c;
  prx_status st = plot_canvas_init(&c, a.x0 + a.w + M_RIGHT, a.y0 + a.h + M_BOTTOM, BG);
  if (st) {
    free(count);
    return st;
  }
  /* the zero lines, then the density on a log scale (one symbol is already visible) */
  plot_hline(&c, a.x0, a.x0 + a.w - 1, plot_axes_y(&a, 0), 0x3a4048u, 2);
  plot_vline(&c, plot_axes_x(&a, 0), a.y0, a.y0 + a.h - 1, 0x3a4048u, 2);
  for (int y = 0; y < G; y++)
    for (int x = 0; x < G; x++) {
      unsigned k = count[(size_t)y * G + x];
      if (k)
        plot_pixel(&c, a.x0 + x, a.y0 + y, plot_colormap(0.25 + 0.75 * log1p(k) / log1p(peak)));
    }
  free(count);
  plot_draw_axes(&c, &a, "in-phase%s", 0, "quadrature", 0);
  if (title) plot_text(&c, a.x0, 6, title, FG, 1, 0);
  st = write_with_layout(&c, &a, path);
  plot_canvas_free(&c);
  return st;
}
