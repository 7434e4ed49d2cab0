/* Real samples read as complex (prx_iq_open_real, one-channel WAV files, SigMF real datatypes)
 * and the SigMF datatypes converted as read (cf64_le, ci32_le): each read in chunks of random
 * size equals the float64 definition (the stored value's scale, the half-band converter's
 * formula with its taps), ceil(N / 2) complex samples for N real ones, the extent and the counts
 * in complex samples, a cut file's samples all given before PRX_ERR_TRUNCATED, the headers'
 * rate and centre (and a SigMF recording's annotations) made the complex stream's, and what is
 * not readable refused. */
#include "testutil.h"

#include "polyrx/io.h"

#include "dsp/halfband.h"
#include "io/io_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[256];
static float taps[2 * PRX_HALFBAND_Q + 2];

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(p, 1, n, f) == n && !fclose(f), "cannot write %s", path);
}

/* The complex stream of n real values, by the converter's definition, in float64. */
static double *reference(const double *x, size_t n) {
  size_t m = (n + 1) / 2;
  double *z = malloc(2 * (m + 1) * sizeof *z);
  for (size_t j = 0; j < m; j++) {
    double acc = 0;
    for (int t = -PRX_HALFBAND_Q - 1; t <= PRX_HALFBAND_Q; t++) {
      long long k = 2 * ((long long)j + t) + 1;
      if (k >= 0 && (size_t)k < n) acc += taps[t + PRX_HALFBAND_Q + 1] * x[k];
    }
    z[2 * j] = (j & 1 ? -1 : 1) * x[2 * j];
    z[2 * j + 1] = (j & 1 ? -1 : 1) * acc;
  }
  return z;
}

/* Reads r to its end in random chunks; *end: the status that ended it. */
static prx_cf32 *read_all(prx_iq_reader *r, test_rng *rng, size_t cap, size_t *got,
                          prx_status *end) {
  prx_cf32 *out = malloc((cap + 64) * sizeof *out);
  *got = 0;
  *end = PRX_OK;
  for (;;) {
    size_t want = 1 + test_rng_u64(rng) % 5000, n = 0;
    if (want > cap + 64 - *got) want = cap + 64 - *got;
    prx_status st = prx_iq_read(r, out + *got, want, &n);
    if (st) {
      *end = st;
      break;
    }
    if (!n) break;
    *got += n;
  }
  return out;
}

static double rel_err(const prx_cf32 *a, const double *z, size_t n) {
  double e = 0, s = 0;
  for (size_t j = 0; j < n; j++) {
    e += pow(a[j].re - z[2 * j], 2) + pow(a[j].im - z[2 * j + 1], 2);
    s += z[2 * j] * z[2 * j] + z[2 * j + 1] * z[2 * j + 1];
  }
  return s > 0 ? sqrt(e / s) : sqrt(e);
}

/* raw real files of every real format, one cut inside a sample */
static void raw(test_rng *rng) {
  static const char *const names[] = {"ri8", "ru8", "ri16", "rf32"};
  static const size_t width[] = {1, 1, 2, 4};
  for (int f = 0; f < 4; f++) {
    for (int cut = 0; cut < (width[f] > 1 ? 2 : 1); cut++) { /* (a byte cannot be cut) */
      const size_t n = 30001 + (size_t)f, bytes = n * width[f] + (cut ? width[f] - 1 : 0);
      unsigned char *b = malloc(bytes + 1);
      double *x = malloc(n * sizeof *x);
      for (size_t i = 0; i < n; i++) {
        if (f == 3) {
          float v = (float)test_rng_gauss(rng);
          memcpy(b + 4 * i, &v, 4);
          x[i] = v;
        } else if (f == 2) {
          int16_t v = (int16_t)test_rng_u64(rng);
          memcpy(b + 2 * i, &v, 2);
          x[i] = v / 32768.0;
        } else {
          b[i] = (unsigned char)test_rng_u64(rng);
          x[i] = f == 0 ? (int8_t)b[i] / 128.0 : (b[i] - 127.5) / 127.5;
        }
      }
      for (size_t i = n * width[f]; i < bytes; i++) b[i] = 7;
      const char *path = test_path(tmpdir, "r.raw");
      write_bytes(path, b, bytes);
      prx_real_format rf;
      CHECK_OK(prx_real_format_parse(names[f], &rf));
      prx_iq_reader *r = NULL;
      CHECK_OK(prx_iq_open_real(path, rf, &r));
      if (!r) continue;
      uint64_t known = 0, extra = 0;
      const size_t m = (n + 1) / 2;
      int fd;
      uint64_t base, limit;
      CHECK(prx_iq_reader_is_real(r) && prx_iq_reader_info(r)->format == PRX_CF32 &&
                prx_iq_reader_positional(r) && !prx_iq_reader_file(r, &fd, &base, &limit) &&
                prx_iq_reader_extent(r, &known, &extra) && known == m &&
                extra == (cut ? width[f] - 1 : 0),
            "%s: real %d, extent %llu + %llu", names[f], prx_iq_reader_is_real(r),
            (unsigned long long)known, (unsigned long long)extra);
      double *z = reference(x, n);
      /* positional reads at random places, the stream's start and end among them, against the
       * same definition (the converter's state not used) */
      prx_cf32 *at = malloc(40000 * sizeof *at);
      for (int k = 0; k < 12; k++) {
        uint64_t first = k == 0 ? 0 : k == 1 ? m - 3 : test_rng_u64(rng) % m;
        size_t want = 1 + test_rng_u64(rng) % (k == 2 ? 40000 : 3000), got_at = 0;
        prx_status sa = prx_iq_read_at(r, at, first, want, &got_at);
        size_t expect = first + want <= m ? want : (size_t)(m - first);
        CHECK(got_at == expect && rel_err(at, z + 2 * first, got_at) < 1e-6 &&
                  (sa == PRX_OK || (cut && first + want >= m && sa == PRX_ERR_TRUNCATED)),
              "%s%s: read_at %llu +%zu gave %zu (%zu), error %.3g, %s", names[f],
              cut ? " (cut)" : "", (unsigned long long)first, want, got_at, expect,
              rel_err(at, z + 2 * first, got_at < expect ? got_at : expect), prx_strerror(sa));
      }
      free(at);
      size_t got;
      prx_status end;
      prx_cf32 *out = read_all(r, rng, m, &got, &end);
      double err = rel_err(out, z, got < m ? got : m);
      CHECK(got == m && err < 1e-6 && prx_iq_reader_samples(r) == m &&
                end == (cut ? PRX_ERR_TRUNCATED : PRX_OK),
            "%s%s: %zu of %zu samples, error %.3g, end %s (%s)", names[f], cut ? " (cut)" : "", got,
            m, err, prx_strerror(end), prx_last_error());
      if (cut) {
        size_t again = 0;
        CHECK(prx_iq_read(r, out, 10, &again) == PRX_ERR_TRUNCATED && again == 0 &&
                  strstr(prx_last_error(), names[f]),
              "%s: the cut not said again: %s", names[f], prx_last_error());
      }
      prx_iq_close(r);
      free(out);
      free(z);
      free(b);
      free(x);
    }
  }
  prx_real_format rf;
  CHECK(prx_real_format_parse("ci16", &rf) == PRX_ERR_INVALID, "ci16 taken as a real format");
}

/* a one-channel 16-bit WAV file with an auxi chunk: rate and centre the complex stream's */
static void wav(test_rng *rng) {
  const size_t n = 5001;
  int16_t *s = malloc(n * sizeof *s);
  double *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (s[i] = (int16_t)test_rng_u64(rng)) / 32768.0;
  unsigned char h[44 + 72];
  size_t k = 0;
#define PUT(p, len) (memcpy(h + k, p, len), k += len)
#define U32(v)                                                                                     \
  (h[k] = (v)&255, h[k + 1] = ((v) >> 8) & 255, h[k + 2] = ((v) >> 16) & 255,                      \
   h[k + 3] = ((v) >> 24) & 255, k += 4)
#define U16(v) (h[k] = (v)&255, h[k + 1] = ((v) >> 8) & 255, k += 2)
  PUT("RIFF", 4);
  U32((uint32_t)(4 + 24 + 72 + 8 + 2 * n));
  PUT("WAVEfmt ", 8);
  U32(16);
  U16(1);
  U16(1);
  U32(192000);
  U32(384000);
  U16(2);
  U16(16);
  PUT("auxi", 4);
  U32(64);
  for (int i = 0; i < 16; i++) U16(0);
  U32(7000000);
  for (int i = 0; i < 7; i++) U32(0);
  PUT("data", 4);
  U32((uint32_t)(2 * n));
  const char *path = test_path(tmpdir, "real.wav");
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(h, 1, k, f) == k && fwrite(s, 2, n, f) == n && !fclose(f), "write %s", path);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  if (!r) return;
  const prx_iq_info *in = prx_iq_reader_info(r);
  const prx_wav_info *w = prx_iq_reader_wav(r);
  CHECK(prx_iq_reader_is_real(r) && in->sample_rate == 96000 && in->center_freq == 7048000 && w &&
            w->channels == 1 && !strcmp(prx_wav_stored_name(w), "real PCM 16-bit"),
        "real WAV: rate %g centre %g channels %d, %s", in->sample_rate, in->center_freq,
        w ? w->channels : -1, w ? prx_wav_stored_name(w) : "");
  size_t got;
  prx_status end;
  prx_cf32 *out = read_all(r, rng, (n + 1) / 2, &got, &end);
  double *z = reference(x, n);
  CHECK(end == PRX_OK && got == (n + 1) / 2 && rel_err(out, z, got) < 1e-6,
        "real WAV: %zu samples, error %.3g", got, rel_err(out, z, got < (n + 1) / 2 ? got : 0));
  prx_iq_close(r);
  prx_real_format rf;
  prx_real_format_parse("ri16", &rf);
  CHECK(prx_iq_open_real(path, rf, &r) == PRX_ERR_INVALID && !r, "a WAV file opened as raw real");
  free(out);
  free(z);
  free(s);
  free(x);
}

/* SigMF: ri16_le (rate, centre, annotation, later captures made the complex stream's; a retune
 * at an odd real sample refused),
 * cf64_le and ci32_le converted, the public parser refusing them */
static void sigmf(test_rng *rng) {
  const size_t n = 4001;
  int16_t *s = malloc(n * sizeof *s);
  double *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = (s[i] = (int16_t)test_rng_u64(rng)) / 32768.0;
  write_bytes(test_path(tmpdir, "s.sigmf-data"), s, 2 * n);
  const char *meta =
      "{\"global\": {\"core:datatype\": \"ri16_le\", \"core:sample_rate\": 64800000, "
      "\"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0, \"core:frequency\": "
      "0}], \"annotations\": [{\"core:sample_start\": 11, \"core:sample_count\": 100}]}";
  write_bytes(test_path(tmpdir, "s.sigmf-meta"), meta, strlen(meta));
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(test_path(tmpdir, "s.sigmf-meta"), PRX_CF32, &r));
  if (r) {
    const prx_iq_info *in = prx_iq_reader_info(r);
    const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
    CHECK(prx_iq_reader_is_real(r) && in->sample_rate == 32400000 && in->center_freq == 16200000 &&
              rec->captures[0].frequency == 16200000 && rec->annotations[0].sample_start == 5 &&
              rec->annotations[0].sample_count == 51,
          "ri16_le: rate %g centre %g annotation %llu +%llu", in->sample_rate, in->center_freq,
          (unsigned long long)rec->annotations[0].sample_start,
          (unsigned long long)rec->annotations[0].sample_count);
    size_t got;
    prx_status end;
    prx_cf32 *out = read_all(r, rng, (n + 1) / 2, &got, &end);
    double *z = reference(x, n);
    CHECK(end == PRX_OK && got == (n + 1) / 2 && rel_err(out, z, got) < 1e-6,
          "ri16_le: %zu samples", got);
    free(out);
    free(z);
    prx_iq_close(r);
  }
  prx_iq_info info;
  CHECK(prx_sigmf_parse_meta(meta, strlen(meta), &info) == PRX_ERR_UNSUPPORTED,
        "the public parser gave a format for ri16_le");
  /* a retune at an even real sample: its complex sample, its DC frequency + a quarter of the
   * real rate (a capture without a frequency keeps none); at an odd one: refused */
  const char *two = "{\"global\": {\"core:datatype\": \"ri16_le\", \"core:sample_rate\": 1000, "
                    "\"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0}, "
                    "{\"core:sample_start\": 100, \"core:frequency\": 7000}, "
                    "{\"core:sample_start\": 300}]}";
  write_bytes(test_path(tmpdir, "s.sigmf-meta"), two, strlen(two));
  CHECK_OK(prx_iq_open(test_path(tmpdir, "s.sigmf-meta"), PRX_CF32, &r));
  if (r) {
    const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
    const prx_sigmf_capture *c = rec->captures;
    CHECK(rec->n_captures == 3 && c[0].frequency == 250 && c[1].sample_start == 50 &&
              c[1].frequency == 7250 && c[2].sample_start == 150 && !c[2].has_frequency,
          "real captures: %g; %llu %g; %llu %d", c[0].frequency,
          (unsigned long long)c[1].sample_start, c[1].frequency,
          (unsigned long long)c[2].sample_start, c[2].has_frequency);
    prx_iq_close(r);
  }
  const char *odd = "{\"global\": {\"core:datatype\": \"ri16_le\", \"core:sample_rate\": 1000, "
                    "\"core:version\": \"1.0.0\"}, \"captures\": [{\"core:sample_start\": 0}, "
                    "{\"core:sample_start\": 101}]}";
  write_bytes(test_path(tmpdir, "s.sigmf-meta"), odd, strlen(odd));
  CHECK(prx_iq_open(test_path(tmpdir, "s.sigmf-meta"), PRX_CF32, &r) == PRX_ERR_UNSUPPORTED && !r &&
            strstr(prx_last_error(), "capture 1 starts at real sample 101"),
        "a real recording retuned at an odd sample: %s", prx_last_error());
  /* complex datatypes converted: cf64_le, ci32_le, ci16_be */
  for (int c = 0; c < 3; c++) {
    const size_t m = 3000;
    unsigned char *b = malloc(16 * m);
    double *want = malloc(2 * m * sizeof *want);
    for (size_t i = 0; i < 2 * m; i++) {
      if (c == 0) {
        double v = test_rng_gauss(rng);
        memcpy(b + 8 * i, &v, 8);
        want[i] = (float)v;
      } else if (c == 2) { /* big-endian int16 */
        int16_t v = (int16_t)test_rng_u64(rng);
        b[2 * i] = (unsigned char)((uint16_t)v >> 8);
        b[2 * i + 1] = (unsigned char)((uint16_t)v & 255);
        want[i] = v / 32768.0;
      } else {
        int32_t v = (int32_t)test_rng_u64(rng);
        memcpy(b + 4 * i, &v, 4);
        want[i] = (float)(v / 2147483648.0);
      }
    }
    static const char *const types[3] = {"cf64_le", "ci32_le", "ci16_be"};
    write_bytes(test_path(tmpdir, "s.sigmf-data"), b, (size_t)(c == 0 ? 16 : c == 1 ? 8 : 4) * m);
    char text[256];
    snprintf(text, sizeof text,
             "{\"global\": {\"core:datatype\": \"%s\", \"core:sample_rate\": 1000, "
             "\"core:version\": \"1.0.0\"}, \"captures\": []}",
             types[c]);
    write_bytes(test_path(tmpdir, "s.sigmf-meta"), text, strlen(text));
    CHECK_OK(prx_iq_open(test_path(tmpdir, "s.sigmf-meta"), PRX_CF32, &r));
    if (r) {
      size_t got;
      prx_status end;
      prx_cf32 *out = read_all(r, rng, m, &got, &end);
      size_t bad = 0;
      for (size_t i = 0; i < got; i++)
        bad += out[i].re != (float)want[2 * i] || out[i].im != (float)want[2 * i + 1];
      CHECK(end == PRX_OK && got == m && bad == 0 && !prx_iq_reader_is_real(r) &&
                prx_iq_reader_info(r)->sample_rate == 1000,
            "%s: %zu of %zu samples, %zu wrong", types[c], got, m, bad);
      free(out);
      prx_iq_close(r);
    }
    free(b);
    free(want);
  }
  free(s);
  free(x);
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "real")) return 1;
  prx_halfband *h = prx_halfband_create();
  if (!h) return 1;
  memcpy(taps, prx_halfband_taps(h), sizeof taps);
  prx_halfband_destroy(h);
  test_rng rng;
  test_rng_seed(&rng, 5122026);
  raw(&rng);
  wav(&rng);
  sigmf(&rng);
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io_real");
}
