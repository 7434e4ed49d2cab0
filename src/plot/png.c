/* PNG output of a canvas through libpng: 8-bit RGB, with tEXt chunks that describe the picture
 * for programs (the tests read the plot area and its scales from them). */
#include "plot.h"

#include "core/internal.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* libpng reports errors through longjmp; the message is kept for prx_fail */
static void on_png_error(png_structp png, png_const_charp msg) {
  char *keep = png_get_error_ptr(png);
  snprintf(keep, 200, "%s", msg);
  png_longjmp(png, 1);
}
static void on_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

prx_status plot_write_png(const plot_canvas *c, const char *path, const char *const *keys,
                          const char *const *values, size_t n_text) {
  if (!c || !c->rgb || !path) return prx_fail(PRX_ERR_INVALID, "plot_write_png: NULL argument");
  FILE *f = fopen(path, "wbe");
  if (!f) return prx_fail(PRX_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
  char msg[200] = "";
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  png_textp volatile text = NULL; /* volatile: read after a longjmp */
  if (!png || !info) {
    png_destroy_write_struct(&png, NULL);
    fclose(f);
    remove(path);
    return prx_fail(PRX_ERR_NOMEM, "cannot start a PNG");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    prx_free(text);
    fclose(f);
    remove(path);
    return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", path, msg[0] ? msg : "libpng error");
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (n_text) {
    text = prx_alloc(n_text, sizeof *text);
    if (!text) png_error(png, "out of memory");
    for (size_t i = 0; i < n_text; i++) {
      text[i].compression = PNG_TEXT_COMPRESSION_NONE;
      text[i].key = (png_charp)keys[i];
      text[i].text = (png_charp)values[i];
    }
    png_set_text(png, info, text, (int)n_text);
  }
  png_write_info(png, info);
  for (int y = 0; y < c->h; y++) png_write_row(png, c->rgb + 3 * (size_t)y * (size_t)c->w);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  prx_free(text);
  if (fclose(f) != 0) {
    int e = errno;
    remove(path);
    return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", path, strerror(e));
  }
  return PRX_OK;
}
