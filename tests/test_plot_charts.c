/* The charts of src/plot/charts.c, decoded back with libpng: the per-channel power bar chart
 * (size, layout chunks, the frame on the stated plot area, each bar where its frequency and
 * power put it, nothing above a bar) and the constellation density plot (QPSK symbols in noise:
 * colour at the four points, background at the centre and in the corners of the plot area,
 * the frame, axes that span +-1.6 RMS). */
#include "testutil.h"

#include "plot/plot.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BG 0x101418u
#define FG 0xd8dde3u

typedef struct {
  int w, h;
  unsigned char *rgb;
  char area[64], xr[64], yr[64];
} picture;

static int load(const char *path, picture *p) {
  memset(p, 0, sizeof *p);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return -1;
  }
  png_init_io(png, f);
  png_read_info(png, info);
  p->w = (int)png_get_image_width(png, info);
  p->h = (int)png_get_image_height(png, info);
  CHECK(png_get_color_type(png, info) == PNG_COLOR_TYPE_RGB && png_get_bit_depth(png, info) == 8,
        "%s is not 8-bit RGB", path);
  p->rgb = malloc((size_t)p->w * p->h * 3);
  for (int y = 0; y < p->h; y++) png_read_row(png, p->rgb + (size_t)y * p->w * 3, NULL);
  png_read_end(png, info);
  png_textp text;
  int n = 0;
  png_get_text(png, info, &text, &n);
  for (int i = 0; i < n; i++) {
    char *dst = !strcmp(text[i].key, "polyrx:plot_area") ? p->area
                : !strcmp(text[i].key, "polyrx:x_range") ? p->xr
                : !strcmp(text[i].key, "polyrx:y_range") ? p->yr
                                                         : NULL;
    if (dst) snprintf(dst, 64, "%s", text[i].text);
  }
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
  return 0;
}

static unsigned px(const picture *p, int x, int y) {
  const unsigned char *q = p->rgb + ((size_t)y * p->w + x) * 3;
  return (unsigned)q[0] << 16 | (unsigned)q[1] << 8 | q[2];
}

/* The frame one pixel outside the plot area, on all four sides. */
static void check_frame(const picture *p, int x0, int y0, int w, int h, const char *what) {
  int bad = 0;
  for (int x = x0; x < x0 + w; x++) bad += px(p, x, y0 - 1) != FG || px(p, x, y0 + h) != FG;
  for (int y = y0; y < y0 + h; y++) bad += px(p, x0 - 1, y) != FG || px(p, x0 + w, y) != FG;
  CHECK(bad == 0, "%s: %d frame pixels missing", what, bad);
}

/* Pixels of colour other than the background in a rectangle. */
static int inked(const picture *p, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) n += px(p, x, y) != BG;
  return n;
}

static void test_bars(const char *dir) {
  enum { K = 16 };
  double fs = 1.6e6, fc = 100e6, f[K], pw[K];
  for (int k = 0; k < K; k++) {
    f[k] = fc + (k < K / 2 ? k : k - K) * fs / K; /* FFT order, as channels come */
    pw[k] = -80 + (k == 3 ? 60 : 0) + (k == 12 ? 40 : 0) + k * 0.1;
  }
  pw[5] = -INFINITY; /* a silent channel: no bar */
  char path[512];
  snprintf(path, sizeof path, "%s/bars.png", dir);
  CHECK_OK(plot_bars_png(path, f, pw, K, fs / K, "occupancy test"));
  picture p;
  CHECK(load(path, &p) == 0, "cannot decode %s", path);
  int x0, y0, w, h;
  CHECK(sscanf(p.area, "%d %d %d %d", &x0, &y0, &w, &h) == 4, "plot_area '%s'", p.area);
  double xlo, xhi, ylo, yhi;
  CHECK(sscanf(p.xr, "%lf %lf", &xlo, &xhi) == 2 && sscanf(p.yr, "%lf %lf", &ylo, &yhi) == 2,
        "ranges '%s' '%s'", p.xr, p.yr);
  CHECK(fabs(xlo - (fc - fs / 2 - fs / K / 2)) < 1 && fabs(xhi - (fc + fs / 2 - fs / K / 2)) < 1,
        "x range %.9g..%.9g", xlo, xhi);
  /* strongest -19.7 dB, weakest -80 dB: 10 dB steps around them */
  CHECK(yhi == -10 && ylo == -80, "y range %g..%g", ylo, yhi);
  CHECK(p.w == x0 + w + 24 && p.h == y0 + h + 40, "picture %dx%d", p.w, p.h);
  check_frame(&p, x0, y0, w, h, "bars");
  for (int k = 0; k < K; k++) {
    int xc = x0 + (int)lround((f[k] - xlo) / (xhi - xlo) * w);
    if (!isfinite(pw[k])) {
      CHECK(inked(&p, xc - 1, y0, xc + 2, y0 + h) == 0, "silent channel %d has a bar", k);
      continue;
    }
    int ytop = y0 + h - (int)lround((pw[k] - ylo) / (yhi - ylo) * h);
    CHECK(ytop >= y0 + h || px(&p, xc, ytop + 1) != BG, "channel %d: no bar below y=%d", k, ytop);
    CHECK(inked(&p, xc, y0, xc + 1, ytop - 1) == 0, "channel %d: ink above its bar", k);
  }
  /* labels: ink below the plot area (ticks, numbers) and left of it */
  CHECK(inked(&p, x0, y0 + h + 1, x0 + w, p.h) > 200, "no x-axis labels");
  CHECK(inked(&p, 0, y0, x0 - 1, y0 + h) > 100, "no y-axis labels");
  free(p.rgb);
  CHECK(plot_bars_png(path, f, pw, 0, 1, NULL) == PRX_ERR_INVALID, "no bars is an error");
}

static void test_constellation(const char *dir, test_rng *rng) {
  size_t n = 20000;
  prx_cf32 *s = malloc(n * sizeof *s);
  test_fill_cf32(rng, s, n, 0.05);
  for (size_t i = 0; i < n; i++) {
    uint64_t b = test_rng_u64(rng);
    s[i].re += (float)((b & 1 ? -1 : 1) * 2 / sqrt(2));
    s[i].im += (float)((b & 2 ? -1 : 1) * 2 / sqrt(2));
  }
  char path[512];
  snprintf(path, sizeof path, "%s/const.png", dir);
  CHECK_OK(plot_constellation_png(path, s, n, "constellation test"));
  picture p;
  CHECK(load(path, &p) == 0, "cannot decode %s", path);
  int x0, y0, w, h;
  CHECK(sscanf(p.area, "%d %d %d %d", &x0, &y0, &w, &h) == 4 && w == 400 && h == 400,
        "plot_area '%s'", p.area);
  double xlo, xhi;
  CHECK(sscanf(p.xr, "%lf %lf", &xlo, &xhi) == 2 && fabs(xhi - 1.6 * 2.0) < 0.05 && xlo == -xhi,
        "x range '%s' (RMS 2: +-3.2 expected)", p.xr);
  check_frame(&p, x0, y0, w, h, "constellation");
  for (int q = 0; q < 4; q++) {
    double re = (q & 1 ? -1 : 1) * 2 / sqrt(2), im = (q & 2 ? -1 : 1) * 2 / sqrt(2);
    int x = x0 + (int)lround((re - xlo) / (xhi - xlo) * w);
    int y = y0 + h - (int)lround((im - xlo) / (xhi - xlo) * h);
    CHECK(inked(&p, x - 3, y - 3, x + 4, y + 4) > 40, "no density at point %d (%d, %d)", q, x, y);
  }
  /* between the points (off the zero lines) and in the corners: nothing */
  CHECK(inked(&p, x0 + w / 2 + 10, y0 + h / 2 + 10, x0 + w / 2 + 30, y0 + h / 2 + 30) == 0,
        "ink between the points");
  CHECK(inked(&p, x0, y0, x0 + 30, y0 + 30) == 0, "ink in a corner");
  CHECK(inked(&p, x0, y0 + h + 1, x0 + w, p.h) > 200, "no x-axis labels");
  free(p.rgb);
  free(s);
}

int main(void) {
  char dir[256];
  if (test_tmpdir(dir, sizeof dir, "plot")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261201);
  test_bars(dir);
  test_constellation(dir, &rng);
  test_tmpdir_remove(dir);
  return test_finish("test_plot_charts");
}
