/* Raw recordings that say what they hold: SDRangel's .sdriq (its header's rate, centre and start
 * in seconds or milliseconds; 16-bit samples read in place, 24-bit ones against their definition
 * v / 2^23 in float64; positional reads; a header whose CRC32 does not match, an unknown sample
 * size and a file shorter than its header refused naming the file) and gqrx's file names (rate,
 * centre and UTC start from the name; the name left alone when another format is asked for or
 * when it does not match the pattern exactly). */
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> 8 * i);
}

/* CRC-32 (IEEE) by its definition: the message times x^32 modulo the polynomial, reflected */
static uint32_t crc32_reference(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) {
      uint32_t bit = (p[i] >> k & 1) ^ (c & 1);
      c >>= 1;
      if (bit) c ^= 0xEDB88320u;
    }
  return ~c;
}

/* An .sdriq file: header (rate, centre, stamp, bits; its CRC32 unless bad_crc) then the bytes */
static void write_sdriq(const char *path, uint32_t rate, uint64_t centre, uint64_t stamp,
                        uint32_t bits, int bad_crc, const void *data, size_t n) {
  unsigned char h[32] = {0};
  put_le(h, rate, 4);
  put_le(h + 4, centre, 8);
  put_le(h + 12, stamp, 8);
  put_le(h + 20, bits, 4);
  put_le(h + 28, crc32_reference(h, 28) ^ (bad_crc ? 1u : 0u), 4);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(h, 1, 32, f) != 32 || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static void sdriq(test_rng *rng) {
  const size_t n = 3001;
  /* 16 bits: read in place as ci16, the header's rate, centre and start in seconds */
  int16_t *s16 = malloc(n * 4);
  for (size_t i = 0; i < 2 * n; i++) s16[i] = (int16_t)test_rng_u64(rng);
  const char *p16 = test_path(tmpdir, "rec16.sdriq");
  write_sdriq(p16, 2400000, 145800000, 1796382000, 16, 0, s16, n * 4);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(p16, PRX_CF32, &r));
  if (r) {
    const prx_iq_info *in = prx_iq_reader_info(r);
    const prx_iq_origin *o = prx_iq_reader_origin(r);
    CHECK(in->format == PRX_CI16 && in->sample_rate == 2400000 && in->center_freq == 145800000 &&
              o && o->bits == 16 && !strcmp(o->recorder, "SDRangel .sdriq") && o->start_time &&
              !strcmp(o->start_time, "2026-12-04T11:00:00Z") &&
              prx_iq_reader_start_utc(r) == o->start_time,
          "sdriq 16: format %d rate %g centre %g start %s", (int)in->format, in->sample_rate,
          in->center_freq, o && o->start_time ? o->start_time : "-");
    int16_t *got = malloc(n * 4);
    size_t m = 0;
    CHECK_OK(prx_iq_read(r, got, n, &m));
    CHECK(m == n && !memcmp(got, s16, n * 4), "sdriq 16: %zu samples, or not the stored ones", m);
    CHECK_OK(prx_iq_read_at(r, got, 1000, 10, &m));
    CHECK(m == 10 && !memcmp(got, s16 + 2000, 40), "sdriq 16: positional read");
    free(got);
    prx_iq_close(r);
  }
  /* 24 bits in int32: converted, v / 2^23; the start in milliseconds */
  int32_t *s24 = malloc(n * 8);
  for (size_t i = 0; i < 2 * n; i++) s24[i] = (int32_t)(test_rng_u64(rng) % (1u << 24)) - (1 << 23);
  const char *p24 = test_path(tmpdir, "rec24.sdriq");
  write_sdriq(p24, 768000, 7100000, 1796382000250ull, 24, 0, s24, n * 8);
  CHECK_OK(prx_iq_open(p24, PRX_CF32, &r));
  if (r) {
    const prx_iq_origin *o = prx_iq_reader_origin(r);
    CHECK(prx_iq_reader_info(r)->format == PRX_CF32 && o && o->bits == 24 &&
              !strcmp(o->start_time, "2026-12-04T11:00:00.250Z"),
          "sdriq 24: format %d, start %s", (int)prx_iq_reader_info(r)->format,
          o && o->start_time ? o->start_time : "-");
    float *got = malloc(n * 8);
    size_t m = 0;
    CHECK_OK(prx_iq_read(r, got, n, &m));
    double worst = 0;
    for (size_t i = 0; i < 2 * m; i++) worst = fmax(worst, fabs(got[i] - s24[i] / 8388608.0));
    CHECK(m == n && worst < 6e-8, "sdriq 24: %zu samples, worst error %g", m, worst);
    float at[8];
    CHECK_OK(prx_iq_read_at(r, at, 2999, 4, &m));
    CHECK(m == 2 && at[0] == got[2 * 2999] && at[3] == got[2 * 3000 + 1],
          "sdriq 24: positional read at the end: %zu", m);
    free(got);
    prx_iq_close(r);
  }
  /* refused: a CRC that does not match, 20 bits, a file shorter than its header, -F against it */
  write_sdriq(p24, 768000, 7100000, 0, 24, 1, s24, 64);
  prx_status st = prx_iq_open(p24, PRX_CF32, &r);
  CHECK(st == PRX_ERR_FORMAT && !r && strstr(prx_last_error(), "CRC32") &&
            strstr(prx_last_error(), "rec24.sdriq"),
        "a bad CRC: %s (%s)", prx_strerror(st), prx_last_error());
  write_sdriq(p24, 768000, 7100000, 0, 20, 0, s24, 64);
  st = prx_iq_open(p24, PRX_CF32, &r);
  CHECK(st == PRX_ERR_UNSUPPORTED && !r && strstr(prx_last_error(), "20 bits"),
        "20-bit samples: %s (%s)", prx_strerror(st), prx_last_error());
  FILE *f = fopen(p24, "wb");
  if (f) fwrite("short", 1, 5, f), fclose(f);
  st = prx_iq_open(p24, PRX_CF32, &r);
  CHECK(st == PRX_ERR_FORMAT && !r && strstr(prx_last_error(), "holds 5 bytes"),
        "a short file: %s (%s)", prx_strerror(st), prx_last_error());
  st = prx_iq_open(p16, PRX_CU8, &r);
  CHECK(st == PRX_ERR_INVALID && !r && strstr(prx_last_error(), "16-bit"),
        "-F cu8 for a 16-bit .sdriq: %s (%s)", prx_strerror(st), prx_last_error());
  free(s16);
  free(s24);
}

static void gqrx(test_rng *rng) {
  float x[64];
  for (int i = 0; i < 64; i++) x[i] = (float)test_rng_gauss(rng);
  const char *path = test_path(tmpdir, "gqrx_20261204_093015_145800000_2400000_fc.raw");
  FILE *f = fopen(path, "wb");
  if (f) fwrite(x, 4, 64, f), fclose(f);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  if (r) {
    const prx_iq_info *in = prx_iq_reader_info(r);
    const prx_iq_origin *o = prx_iq_reader_origin(r);
    CHECK(in->format == PRX_CF32 && in->sample_rate == 2400000 && in->center_freq == 145800000 &&
              o && !strcmp(o->recorder, "gqrx file name") && o->bits == 0 &&
              !strcmp(o->start_time, "2026-12-04T09:30:15Z"),
          "gqrx: rate %g centre %g start %s", in->sample_rate, in->center_freq,
          o && o->start_time ? o->start_time : "-");
    float got[64];
    size_t m = 0;
    CHECK_OK(prx_iq_read(r, got, 32, &m));
    CHECK(m == 32 && !memcmp(got, x, sizeof x), "gqrx: the samples from the file's first byte");
    prx_iq_close(r);
  }
  /* another format asked for: the name is not the samples' */
  CHECK_OK(prx_iq_open(path, PRX_CI16, &r));
  CHECK(r && !prx_iq_reader_origin(r) && prx_iq_reader_info(r)->sample_rate == 0,
        "gqrx name taken for ci16 samples");
  prx_iq_close(r);
  /* near misses of the pattern: no rate from the name */
  static const char *const near[] = {"gqrx_20261204_093015_145800000_2400000_fc.raw.bak",
                                     "gqrx_2026120_4093015_145800000_2400000_fc.raw",
                                     "gqrx_20261304_093015_145800000_2400000_fc.raw",
                                     "gqrx_20261204_093015_145800000_0_fc.raw",
                                     "xgqrx_20261204_093015_145800000_2400000_fc.raw"};
  for (size_t i = 0; i < sizeof near / sizeof near[0]; i++) {
    const char *p = test_path(tmpdir, near[i]);
    f = fopen(p, "wb");
    if (f) fwrite(x, 4, 64, f), fclose(f);
    CHECK_OK(prx_iq_open(p, PRX_CF32, &r));
    CHECK(r && !prx_iq_reader_origin(r) && !prx_iq_reader_start_utc(r), "'%s' read as a gqrx name",
          near[i]);
    prx_iq_close(r);
  }
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "recorders")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261204);
  sdriq(&rng);
  gqrx(&rng);
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io_recorders");
}
