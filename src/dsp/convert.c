/* Sample formats: names, sizes and conversion to cf32. The scalings are documented in
 * polyrx/core.h and docs/FORMATS.md; prx_convert_block is the one block converter that the
 * channelizer's CPU path, the demodulator and prx_convert_to_cf32 use. */
#include "convert.h"

#include "../core/internal.h"

#include <string.h>
#include <strings.h>

size_t prx_format_size(prx_format f) {
  switch (f) {
  case PRX_CF32: return 8;
  case PRX_CI16: return 4;
  case PRX_CI8: return 2;
  case PRX_CU8: return 2;
  case PRX_CF16: return 4;
  }
  return 0;
}

const char *prx_format_name(prx_format f) {
  switch (f) {
  case PRX_CF32: return "cf32";
  case PRX_CI16: return "ci16";
  case PRX_CI8: return "ci8";
  case PRX_CU8: return "cu8";
  case PRX_CF16: return "cf16";
  }
  return NULL;
}

prx_status prx_format_parse(const char *name, prx_format *out) {
  if (!name || !out) return prx_fail(PRX_ERR_INVALID, "prx_format_parse: NULL argument");
  static const prx_format all[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8, PRX_CF16};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    if (strcasecmp(name, prx_format_name(all[i])) == 0) {
      *out = all[i];
      return PRX_OK;
    }
  }
  return prx_fail(PRX_ERR_INVALID,
                  "unknown sample format '%s' (expected cf32, ci16, ci8, cu8 or cf16)", name);
}

void prx_convert_block(prx_format f, const void *in, size_t n, prx_cf32 *out) {
  switch (f) {
  case PRX_CF32: memcpy(out, in, n * sizeof *out); return;
  case PRX_CI16:
    for (size_t i = 0; i < n; i++) out[i] = prx_sample_ci16(in, i);
    return;
  case PRX_CI8:
    for (size_t i = 0; i < n; i++) out[i] = prx_sample_ci8(in, i);
    return;
  case PRX_CU8:
    for (size_t i = 0; i < n; i++) out[i] = prx_sample_cu8(in, i);
    return;
  case PRX_CF16: break;
  }
  memset(out, 0, n * sizeof *out);
}

prx_status prx_convert_to_cf32(prx_format f, const void *in, size_t n, prx_cf32 *out) {
  if (n == 0) return PRX_OK;
  if (!in || !out) return prx_fail(PRX_ERR_INVALID, "prx_convert_to_cf32: NULL buffer");
  if (f != PRX_CF32 && f != PRX_CI16 && f != PRX_CI8 && f != PRX_CU8)
    return prx_fail(PRX_ERR_INVALID, "cannot convert from format %d to cf32", (int)f);
  prx_convert_block(f, in, n, out);
  return PRX_OK;
}
