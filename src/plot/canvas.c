/* The pictures' canvas: RGB pixels, clipped drawing, the colour map and axis ticks. */
#include "plot.h"

#include "core/internal.h"

#include <math.h>
#include <string.h>

prx_status plot_canvas_init(plot_canvas *c, int w, int h, uint32_t background) {
  c->w = c->h = 0;
  c->rgb = NULL;
  if (w < 1 || h < 1 || w > 16384 || h > 16384)
    return prx_fail(PRX_ERR_INVALID, "picture size %dx%d is outside 1..16384", w, h);
  c->rgb = prx_alloc((size_t)w * (size_t)h, 3);
  if (!c->rgb) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a %dx%d picture", w, h);
  c->w = w;
  c->h = h;
  plot_fill(c, 0, 0, w, h, background);
  return PRX_OK;
}

void plot_canvas_free(plot_canvas *c) {
  prx_free(c->rgb);
  c->rgb = NULL;
}

void plot_pixel(plot_canvas *c, int x, int y, uint32_t rgb) {
  if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
  uint8_t *p = c->rgb + 3 * ((size_t)y * (size_t)c->w + (size_t)x);
  p[0] = (uint8_t)(rgb >> 16);
  p[1] = (uint8_t)(rgb >> 8);
  p[2] = (uint8_t)rgb;
}

void plot_fill(plot_canvas *c, int x, int y, int w, int h, uint32_t rgb) {
  int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
  int x1 = x + w > c->w ? c->w : x + w, y1 = y + h > c->h ? c->h : y + h;
  for (int j = y0; j < y1; j++)
    for (int i = x0; i < x1; i++) plot_pixel(c, i, j, rgb);
}

void plot_vline(plot_canvas *c, int x, int y0, int y1, uint32_t rgb, int dash) {
  for (int y = y0; y <= y1; y++)
    if (dash <= 1 || (y - y0) % dash == 0) plot_pixel(c, x, y, rgb);
}

void plot_hline(plot_canvas *c, int x0, int x1, int y, uint32_t rgb, int dash) {
  for (int x = x0; x <= x1; x++)
    if (dash <= 1 || (x - x0) % dash == 0) plot_pixel(c, x, y, rgb);
}

uint32_t plot_colormap(double t) {
  /* anchors sampled from matplotlib's viridis (CC0), interpolated linearly in RGB */
  static const uint8_t anchors[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                        {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                        {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  if (!(t > 0)) t = 0; /* NaN too */
  if (t > 1) t = 1;
  double x = t * 8;
  int i = (int)x;
  if (i > 7) i = 7;
  double f = x - i;
  uint32_t out = 0;
  for (int k = 0; k < 3; k++) {
    double v = anchors[i][k] + f * (anchors[i + 1][k] - anchors[i][k]);
    out = (out << 8) | (uint32_t)lround(v);
  }
  return out;
}

size_t plot_ticks(double lo, double hi, int target, double *ticks, size_t cap, double *step_out) {
  if (!(hi > lo) || target < 1 || !isfinite(lo) || !isfinite(hi)) return 0;
  double raw = (hi - lo) / target, p = pow(10, floor(log10(raw))), step = 10 * p;
  static const double mult[3] = {1, 2, 5};
  for (int i = 0; i < 3; i++)
    if (mult[i] * p >= raw) {
      step = mult[i] * p;
      break;
    }
  if (step_out) *step_out = step;
  size_t n = 0;
  for (double k = ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step && n < cap; k++)
    ticks[n++] = k * step == 0 ? 0 : k * step; /* no -0 */
  return n;
}

double plot_eng_unit(double magnitude, const char **prefix) {
  static const struct {
    double div;
    const char *prefix;
  } units[] = {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "u"}};
  magnitude = fabs(magnitude);
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (magnitude >= units[i].div) {
      *prefix = units[i].prefix;
      return units[i].div;
    }
  *prefix = "n";
  return 1e-9;
}
