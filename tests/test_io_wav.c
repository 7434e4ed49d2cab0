/* WAV I/Q files through prx_iq_open / prx_iq_read: every stored type (PCM 8/16/24/32, float
 * 32/64, WAVE_FORMAT_EXTENSIBLE) against its definition in float64, read in chunks of random
 * size; RF64; the centre frequency from auxi and rcvr chunks and from the file's name; the data's
 * extent where the size was never filled in, wrapped past 4 GiB (a sparse file) or is more than
 * the file holds; positional reads; and malformed or unsupported files refused with a message
 * naming the file, never read as samples. */
#include "testutil.h"

#include "polyrx/io.h"

#include "io/io_internal.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

/* ---- a WAV file built byte by byte ---- */
typedef struct {
  unsigned char *b;
  size_t n, cap;
} bytes;

static void put(bytes *w, const void *p, size_t n) {
  if (w->n + n > w->cap) {
    w->cap = (w->n + n) * 2 + 64;
    w->b = realloc(w->b, w->cap);
  }
  memcpy(w->b + w->n, p, n);
  w->n += n;
}
static void put_u16(bytes *w, unsigned v) {
  unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  put(w, b, 2);
}
static void put_u32(bytes *w, uint32_t v) {
  put_u16(w, v & 0xffff);
  put_u16(w, v >> 16);
}
static void put_u64(bytes *w, uint64_t v) {
  put_u32(w, (uint32_t)v);
  put_u32(w, (uint32_t)(v >> 32));
}
static void put_chunk(bytes *w, const char *id, const void *body, uint32_t n) {
  put(w, id, 4);
  put_u32(w, n);
  put(w, body, n);
  if (n & 1) put(w, "", 1);
}

/* The fmt chunk: tag 1 (PCM) or 3 (float), as WAVE_FORMAT_EXTENSIBLE when ext. */
static void put_fmt(bytes *w, unsigned tag, unsigned channels, uint32_t rate, unsigned bits,
                    int ext) {
  bytes f = {0};
  put_u16(&f, ext ? 0xFFFE : tag);
  put_u16(&f, channels);
  put_u32(&f, rate);
  put_u32(&f, rate * channels * bits / 8);
  put_u16(&f, channels * bits / 8);
  put_u16(&f, bits);
  if (ext) {
    static const unsigned char base[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                           0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71};
    put_u16(&f, 22);
    put_u16(&f, bits);
    put_u32(&f, 3); /* front left, front right */
    put_u16(&f, tag);
    put(&f, base, sizeof base);
  }
  put_chunk(w, "fmt ", f.b, (uint32_t)f.n);
  free(f.b);
}

/* "RIFF" <size> "WAVE" before the chunks in body */
static void write_riff(const char *path, const bytes *body) {
  bytes w = {0};
  put(&w, "RIFF", 4);
  put_u32(&w, (uint32_t)(body->n + 4));
  put(&w, "WAVE", 4);
  put(&w, body->b, body->n);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(w.b, 1, w.n, f) != w.n || fclose(f)) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  free(w.b);
}

static char *tmp(const char *name) { return test_path(tmpdir, name); }

/* ---- the stored types against their definitions ---- */
typedef struct {
  unsigned tag, bits;
  int ext;
  prx_format handed; /* the format the reader hands out */
} stored_type;

/* The float64 value of component k of the stored samples, by the WAV format's definition. */
static double component(const stored_type *t, const unsigned char *s, size_t k) {
  const unsigned char *p = s + k * (t->bits / 8);
  if (t->tag == 3 && t->bits == 64) {
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | p[i];
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  if (t->tag == 3) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  if (t->bits == 8) return (p[0] - 127.5) / 127.5; /* polyrx's cu8 */
  int64_t v = 0;
  for (int i = (int)t->bits / 8 - 1; i >= 0; i--) v = v * 256 + p[i];
  if (v >= (int64_t)1 << (t->bits - 1)) v -= (int64_t)1 << t->bits;
  return (double)v / (double)((int64_t)1 << (t->bits - 1));
}

/* Random stored samples: floats finite (gaussian), integers any bit pattern. */
static void fill_stored(const stored_type *t, test_rng *rng, unsigned char *s, size_t n) {
  size_t comps = 2 * n, w = t->bits / 8;
  for (size_t k = 0; k < comps; k++) {
    unsigned char *p = s + k * w;
    if (t->tag == 3 && t->bits == 64) {
      double d = test_rng_gauss(rng);
      uint64_t u;
      memcpy(&u, &d, 8);
      for (int i = 0; i < 8; i++) p[i] = (unsigned char)(u >> (8 * i));
    } else if (t->tag == 3) {
      float f = (float)test_rng_gauss(rng);
      uint32_t u;
      memcpy(&u, &f, 4);
      for (int i = 0; i < 4; i++) p[i] = (unsigned char)(u >> (8 * i));
    } else {
      for (size_t i = 0; i < w; i++) p[i] = (unsigned char)test_rng_u64(rng);
    }
  }
}

/* A sample handed out, as float64 components, from the reader's format. */
static void handed_value(prx_format f, const unsigned char *p, double *re, double *im) {
  prx_cf32 c;
  prx_convert_to_cf32(f, p, 1, &c);
  *re = c.re;
  *im = c.im;
}

static void stored_types(test_rng *rng) {
  static const stored_type types[] = {
      {1, 8, 0, PRX_CU8},   {1, 16, 0, PRX_CI16}, {1, 24, 0, PRX_CF32}, {1, 32, 0, PRX_CF32},
      {3, 32, 0, PRX_CF32}, {3, 64, 0, PRX_CF32}, {1, 16, 1, PRX_CI16}, {1, 24, 1, PRX_CF32},
      {3, 32, 1, PRX_CF32}, {3, 64, 1, PRX_CF32}};
  /* more samples than the reader's scratch holds (1 MiB: 174763 PCM 24 samples), odd counts */
  const size_t n = 200003;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    const stored_type *t = &types[ti];
    size_t ss = 2 * t->bits / 8;
    unsigned char *s = malloc(n * ss);
    fill_stored(t, rng, s, n);
    bytes body = {0};
    put_chunk(&body, "LIST", "INFOISFT\x05\0\0\0test\0", 17);
    put_fmt(&body, t->tag, 2, 48000 + (uint32_t)ti, t->bits, t->ext);
    put_chunk(&body, "data", s, (uint32_t)(n * ss));
    put_chunk(&body, "LIST", "INFOICMT\x04\0\0\0end\0", 16);
    const char *path = tmp("t.wav");
    write_riff(path, &body);
    free(body.b);

    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
    if (!r) continue;
    const prx_iq_info *info = prx_iq_reader_info(r);
    const prx_wav_info *wav = prx_iq_reader_wav(r);
    CHECK(info->is_wav && !info->is_sigmf && info->format == t->handed &&
              info->sample_rate == 48000 + ti && wav && wav->bits == (int)t->bits &&
              wav->is_float == (t->tag == 3) && !wav->rf64 &&
              wav->extent == PRX_WAV_EXTENT_DECLARED && wav->data_bytes == n * ss,
          "type %zu: wav %d format %d rate %g bits %d", ti, info->is_wav, (int)info->format,
          info->sample_rate, wav ? wav->bits : -1);
    uint64_t known = 0, extra = 1;
    CHECK(prx_iq_reader_extent(r, &known, &extra) && known == n && extra == 0,
          "type %zu: extent %llu + %llu bytes", ti, (unsigned long long)known,
          (unsigned long long)extra);
    CHECK(prx_iq_reader_positional(r), "type %zu: positional %d", ti, prx_iq_reader_positional(r));
    size_t hs = prx_format_size(t->handed), got_total = 0;
    unsigned char *out = malloc(n * hs);
    prx_status st = PRX_OK;
    for (;;) {
      size_t want = 1 + test_rng_u64(rng) % 70000, got = 0;
      if (want > n + 7 - got_total) want = n + 7 - got_total;
      st = prx_iq_read(r, out + got_total * hs, want, &got);
      if (st || !got) break;
      CHECK(got == want || got_total + got == n, "type %zu: %zu of %zu samples mid-stream", ti, got,
            want);
      got_total += got;
    }
    CHECK(st == PRX_OK && got_total == n, "type %zu: read %zu of %zu samples (%s)", ti, got_total,
          n, prx_last_error());
    size_t bad = 0;
    for (size_t i = 0; i < got_total; i++) {
      double re, im;
      handed_value(t->handed, out + i * hs, &re, &im);
      double wr = component(t, s + i * ss, 0), wi = component(t, s + i * ss, 1);
      /* within a float's rounding of the definition */
      if (fabs(wr - re) > 0x1p-23 * fmax(1, fabs(wr)) ||
          fabs(wi - im) > 0x1p-23 * fmax(1, fabs(wi)))
        bad++;
    }
    CHECK(bad == 0, "type %zu: %zu of %zu samples differ from their definition", ti, bad, n);
    /* positional reads (converted types too) give the sequential read's samples */
    unsigned char *at = malloc(5000 * hs);
    for (int k = 0; k < 8; k++) {
      uint64_t first = test_rng_u64(rng) % n;
      size_t want = 1 + test_rng_u64(rng) % 5000, m = 0;
      CHECK_OK(prx_iq_read_at(r, at, first, want, &m));
      size_t expect = first + want <= n ? want : (size_t)(n - first);
      CHECK(m == expect && !memcmp(at, out + first * hs, m * hs),
            "type %zu: read_at %llu +%zu: %zu samples, or not the sequential read's", ti,
            (unsigned long long)first, want, m);
    }
    free(at);
    prx_iq_close(r);
    /* the same file with I and Q exchanged: each sample's components the other way round (the
     * converted types through the conversion's buffer) */
    CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
    prx_iq_reader_swap_iq(r, 1);
    unsigned char *swapped = malloc(n * hs);
    size_t got_swapped = 0;
    CHECK_OK(prx_iq_read(r, swapped, n, &got_swapped));
    size_t w = hs / 2, wrong = 0;
    for (size_t i = 0; i < got_swapped; i++)
      wrong += memcmp(swapped + i * hs, out + i * hs + w, w) ||
               memcmp(swapped + i * hs + w, out + i * hs, w);
    CHECK(got_swapped == n && wrong == 0, "type %zu: swapped %zu samples, %zu wrong", ti,
          got_swapped, wrong);
    free(swapped);
    free(out);
    prx_iq_close(r);
    free(s);
  }
}

/* ---- positional reads of a 16-bit file, and a file cut inside a sample ---- */
static void positional_and_cut(test_rng *rng) {
  const size_t n = 5000;
  const stored_type t = {1, 16, 0, PRX_CI16};
  unsigned char *s = malloc(n * 4);
  fill_stored(&t, rng, s, n);
  bytes body = {0};
  put_fmt(&body, 1, 2, 96000, 16, 0);
  put_chunk(&body, "data", s, (uint32_t)(n * 4));
  const char *path = tmp("p.wav");
  write_riff(path, &body);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CI16, &r));
  unsigned char got[64 * 4];
  size_t m = 0;
  CHECK_OK(prx_iq_read_at(r, got, n - 40, 64, &m));
  CHECK(m == 40 && !memcmp(got, s + (n - 40) * 4, 40 * 4),
        "read_at near the end: %zu samples (40), or not the data's", m);
  prx_iq_close(r);

  /* the header claims the samples, the file stops 3 bytes into the last: cut */
  FILE *f = fopen(path, "r+b");
  CHECK(f && !ftruncate(fileno(f), (off_t)(12 + body.n - 1)), "cannot cut %s", path);
  if (f) fclose(f);
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  const prx_wav_info *wav = prx_iq_reader_wav(r);
  uint64_t known = 0, extra = 0;
  prx_iq_reader_extent(r, &known, &extra);
  CHECK(wav && wav->extent == PRX_WAV_EXTENT_CUT && wav->declared_bytes == n * 4 &&
            wav->data_bytes == n * 4 - 1 && known == n - 1 && extra == 3,
        "cut file: extent %d, %llu of %llu bytes, %llu samples + %llu", wav ? (int)wav->extent : -1,
        wav ? (unsigned long long)wav->data_bytes : 0ull,
        wav ? (unsigned long long)wav->declared_bytes : 0ull, (unsigned long long)known,
        (unsigned long long)extra);
  unsigned char *all = malloc(n * 4);
  size_t got_n = 0;
  CHECK_OK(prx_iq_read(r, all, n, &got_n));
  CHECK(got_n == n - 1 && !memcmp(all, s, (n - 1) * 4), "cut file: %zu samples", got_n);
  prx_status st = prx_iq_read(r, all, n, &got_n);
  CHECK(st == PRX_ERR_TRUNCATED && strstr(prx_last_error(), "PCM 16-bit"),
        "cut file's end: %s (%s)", prx_strerror(st), prx_last_error());
  prx_iq_close(r);
  free(all);
  free(body.b);
  free(s);
}

/* ---- KiwiSDR files: a time stamp before every data chunk ----
 * n samples of ci16 in data chunks of 512 (the last shorter), each after a kiwi chunk whose GPS
 * time is sample k's true instant at `rate` from t0 (seconds of the GPS week, start_ns
 * nanoseconds); `drop` > 0 leaves the samples of that chunk out (a lost packet: the stamps go on
 * at their true times); age 255: no GPS. */
typedef struct {
  double rate;
  uint32_t tow;
  uint32_t start_ns;
  size_t drop;
  unsigned age;
} kiwi_layout;

static size_t write_kiwi(const char *path, const unsigned char *s, size_t n, kiwi_layout k) {
  bytes body = {0};
  put_fmt(&body, 1, 2, (uint32_t)lround(k.rate), 16, 0);
  size_t kept = 0;
  for (size_t c = 0, first = 0; first < n; c++, first += 512) {
    size_t len = n - first < 512 ? n - first : 512;
    if (k.drop && c == k.drop) continue;
    /* the instant of sample `first`, in float64 from the whole nanoseconds */
    double t = k.start_ns * 1e-9 + (double)first / k.rate;
    double whole = floor(t);
    unsigned char stamp[10] = {(unsigned char)k.age, 0};
    uint32_t tow = (uint32_t)((k.tow + (uint64_t)whole) % 604800),
             ns = (uint32_t)llround((t - whole) * 1e9);
    if (ns >= 1000000000u) ns -= 1000000000u, tow = (tow + 1) % 604800;
    for (int b = 0; b < 4; b++) {
      stamp[2 + b] = (unsigned char)(tow >> 8 * b);
      stamp[6 + b] = (unsigned char)(ns >> 8 * b);
    }
    put_chunk(&body, "kiwi", stamp, 10);
    put_chunk(&body, "data", s + first * 4, (uint32_t)(len * 4));
    kept += len;
  }
  write_riff(path, &body);
  free(body.b);
  return kept;
}

/* Reads the whole stream in pieces of random size; 1 when it is want (m samples of ci16). */
static int reads_as(prx_iq_reader *r, test_rng *rng, const unsigned char *want, size_t m) {
  unsigned char *got = malloc(m * 4 + 4096);
  size_t have = 0, k = 0;
  prx_status st;
  do {
    size_t ask = 1 + (size_t)(test_rng_u64(rng) % 1500);
    st = prx_iq_read(r, got + have * 4, ask, &k);
    have += k;
  } while (!st && k && have <= m);
  int ok = !st && have == m && !memcmp(got, want, m * 4);
  free(got);
  return ok;
}

static void kiwi(test_rng *rng) {
  const size_t n = 40 * 512 + 123; /* 80 chunks and a short one */
  const stored_type t = {1, 16, 0, PRX_CI16};
  unsigned char *s = malloc(n * 4);
  fill_stored(&t, rng, s, n);
  /* 2026-12-04T11:22:33Z is GPS week 2395, second 429771 (+18 leap seconds: 429771 = Friday
   * 11:22:51 GPS), the samples starting 0.25 s later than the name's second */
  const char *path = tmp("20261204T112233Z_7100000_iq.wav");
  const kiwi_layout good = {12001.135, 5 * 86400 + 11 * 3600 + 22 * 60 + 51, 250000000, 0, 0};
  write_kiwi(path, s, n, good);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  const prx_wav_info *w = prx_iq_reader_wav(r);
  const prx_iq_info *info = prx_iq_reader_info(r);
  CHECK(w && w->data_chunks == 41 && w->gps_stamps == 41 && w->gps_valid == 41 &&
            w->gps_gaps == 0 && w->data_bytes == n * 4 && w->header_rate == 12001,
        "KiwiSDR file: %llu data chunks, %llu stamps (%llu valid), %llu gaps, %llu bytes",
        w ? (unsigned long long)w->data_chunks : 0ull, w ? (unsigned long long)w->gps_stamps : 0ull,
        w ? (unsigned long long)w->gps_valid : 0ull, w ? (unsigned long long)w->gps_gaps : 0ull,
        w ? (unsigned long long)w->data_bytes : 0ull);
  /* the stamps are rounded to the nanosecond: over 1.7 s that is ~1e-9 of the rate */
  CHECK(w && fabs(w->gps_rate / 12001.135 - 1) < 1e-8 && !strcmp(w->rate_from, "GPS time stamps") &&
            info->sample_rate == w->gps_rate && fabs(w->gps_span - 40 * 512 / 12001.135) < 1e-8,
        "KiwiSDR rate %.6f over %.9f s from the %s (12001.135)", w ? w->gps_rate : 0,
        w ? w->gps_span : 0, w ? w->rate_from : "");
  CHECK(info->center_freq == 7100000 && w && w->center_from && !strcmp(w->center_from, "file name"),
        "KiwiSDR centre %.1f from %s", info->center_freq,
        w && w->center_from ? w->center_from : "-");
  CHECK(w && w->start_time && !strcmp(w->start_time, "2026-12-04T11:22:33.250000000Z"),
        "KiwiSDR start %s", w && w->start_time ? w->start_time : "(none)");
  CHECK(reads_as(r, rng, s, n), "KiwiSDR file read in pieces is not its samples");
  /* positional reads across chunk boundaries, from every kind of start */
  unsigned char got[2000 * 4];
  for (int i = 0; i < 200; i++) {
    uint64_t first = test_rng_u64(rng) % (n + 10);
    size_t max = 1 + (size_t)(test_rng_u64(rng) % 2000), m = 0;
    CHECK_OK(prx_iq_read_at(r, got, first, max, &m));
    size_t want = first >= n ? 0 : n - first < max ? n - first : max;
    CHECK(m == want && !memcmp(got, s + first * 4, m * 4), "read_at %llu + %zu: %zu samples (%zu)",
          (unsigned long long)first, max, m, want);
  }
  int fd;
  uint64_t base, limit;
  CHECK(!prx_iq_reader_file(r, &fd, &base, &limit), "a KiwiSDR file offered for a mapping");
  prx_iq_close(r);

  /* a lost packet: the stamps say where and how many; zeros stand for them, the rate is still
   * the stamps' (from the intervals without the gap) */
  const char *lost = tmp("20261204T112233Z_7100000_lost_iq.wav");
  kiwi_layout gap = good;
  gap.drop = 7;
  size_t kept = write_kiwi(lost, s, n, gap);
  CHECK_OK(prx_iq_open(lost, PRX_CF32, &r));
  w = prx_iq_reader_wav(r);
  uint64_t known = 0;
  prx_iq_reader_extent(r, &known, NULL);
  CHECK(w && w->gps_gaps == 1 && w->gps_first_gap == 7 * 512 && w->gps_filled == 512 &&
            !strcmp(w->rate_from, "GPS time stamps") && fabs(w->gps_rate / 12001.135 - 1) < 1e-8 &&
            w->data_bytes == kept * 4 && known == n,
        "lost packet: %llu gaps, first at %llu (3584), %llu zeros (512), rate %.6f from %s, %llu "
        "samples (%zu)",
        w ? (unsigned long long)w->gps_gaps : 0ull, w ? (unsigned long long)w->gps_first_gap : 0ull,
        w ? (unsigned long long)w->gps_filled : 0ull, w ? w->gps_rate : 0, w ? w->rate_from : "",
        (unsigned long long)known, n);
  unsigned char *holed = malloc(n * 4);
  memcpy(holed, s, n * 4);
  memset(holed + 7 * 512 * 4, 0, 512 * 4);
  CHECK(reads_as(r, rng, holed, n), "the file with a lost packet does not read as its samples "
                                    "with zeros in the gap");
  for (int i = 0; i < 100; i++) {
    uint64_t first = test_rng_u64(rng) % n;
    size_t max = 1 + (size_t)(test_rng_u64(rng) % 2000), m = 0;
    CHECK_OK(prx_iq_read_at(r, got, first, max, &m));
    size_t want = n - first < max ? n - first : max;
    CHECK(m == want && !memcmp(got, holed + first * 4, m * 4),
          "read_at %llu + %zu across a gap: %zu samples (%zu)", (unsigned long long)first, max, m,
          want);
  }
  free(holed);
  prx_iq_close(r);

  /* no GPS: the name's second is the start, the fmt chunk the rate */
  kiwi_layout nofix = good;
  nofix.age = 255;
  write_kiwi(path, s, n, nofix);
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  w = prx_iq_reader_wav(r);
  CHECK(w && w->gps_stamps == 41 && w->gps_valid == 0 && w->gps_rate == 0 &&
            !strcmp(w->rate_from, "fmt chunk") && w->start_time &&
            !strcmp(w->start_time, "2026-12-04T11:22:33Z"),
        "no GPS fix: %llu valid stamps, rate from %s, start %s",
        w ? (unsigned long long)w->gps_valid : 0ull, w ? w->rate_from : "",
        w && w->start_time ? w->start_time : "(none)");
  CHECK(reads_as(r, rng, s, n), "KiwiSDR file without GPS read in pieces is not its samples");
  prx_iq_close(r);

  /* cut 2 bytes into the last chunk's samples: its whole samples, then the cut one said */
  write_kiwi(path, s, n, good);
  FILE *f = fopen(path, "r+b");
  CHECK(f && !fseek(f, 0, SEEK_END), "cannot open %s", path);
  long size = f ? ftell(f) : 0;
  CHECK(f && !ftruncate(fileno(f), size - 6), "cannot cut %s", path);
  if (f) fclose(f);
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  w = prx_iq_reader_wav(r);
  CHECK(w && w->extent == PRX_WAV_EXTENT_CUT && w->data_bytes == n * 4 - 6 &&
            w->declared_bytes == n * 4,
        "cut KiwiSDR file: extent %d, %llu bytes", w ? (int)w->extent : -1,
        w ? (unsigned long long)w->data_bytes : 0ull);
  CHECK(!reads_as(r, rng, s, n), "the cut file read as whole");
  prx_iq_close(r);
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  unsigned char *all = malloc(n * 4);
  size_t m = 0;
  CHECK_OK(prx_iq_read(r, all, n, &m));
  CHECK(m == n - 2 && !memcmp(all, s, m * 4), "cut KiwiSDR file: %zu samples (%zu)", m, n - 2);
  prx_status st = prx_iq_read(r, all, n, &m);
  CHECK(st == PRX_ERR_TRUNCATED, "cut KiwiSDR file's end: %s", prx_strerror(st));
  prx_iq_close(r);
  free(all);

  /* the upper sideband's audio (one channel, ..._usb.wav): the name's frequency is its 0 Hz, so
   * the complex stream's centre is a quarter of the real rate above it; the lower sideband's
   * (..._lsb.wav): its 0 Hz too, its spectrum mirrored: read mirrored back (I and Q of the same
   * samples read as USB exchanged, exchanged again with swap_iq on), its centre a quarter of the
   * real rate below the name's; an I/Q name on audio gives none */
  prx_cf32 usb_samples[256];
  for (int mode = 1; mode >= -1; mode--) { /* 1: usb, -1: lsb, 0: iq */
    bytes a = {0};
    put_fmt(&a, 1, 1, 12000, 16, 0);
    put_chunk(&a, "kiwi", "\0\0\x10\0\0\0\0\0\0\0", 10);
    put_chunk(&a, "data", s, 1024);
    const char *mono = tmp(mode > 0   ? "20261204T112233Z_7100000_usb.wav"
                           : mode < 0 ? "20261204T112233Z_7100000_lsb.wav"
                                      : "20261204T112233Z_7100000_iq.wav");
    write_riff(mono, &a);
    free(a.b);
    for (int swap = 0; swap <= (mode < 0); swap++) {
      CHECK_OK(prx_iq_open(mono, PRX_CF32, &r));
      if (!r) continue;
      prx_iq_reader_swap_iq(r, swap);
      const double want = mode > 0 ? 7103000 : mode < 0 ? 7097000 : 3000;
      const prx_wav_info *wi = prx_iq_reader_wav(r);
      CHECK(prx_iq_reader_is_real(r) && prx_iq_reader_info(r)->center_freq == want && wi &&
                wi->inverted == (mode < 0),
            "KiwiSDR audio named %d: centre %.1f (%.1f), inverted %d", mode,
            prx_iq_reader_info(r)->center_freq, want, wi ? wi->inverted : -1);
      prx_cf32 got[256];
      size_t m = 0;
      CHECK_OK(prx_iq_read(r, got, 256, &m));
      if (mode > 0) memcpy(usb_samples, got, sizeof got);
      int same = m == 256;
      for (size_t i = 0; mode < 0 && i < m; i++)
        same &= swap ? got[i].re == usb_samples[i].re && got[i].im == usb_samples[i].im
                     : got[i].re == usb_samples[i].im && got[i].im == usb_samples[i].re;
      CHECK(same, "KiwiSDR LSB audio, swap_iq %d: %zu samples, not the USB reading's %s", swap, m,
            swap ? "samples" : "mirrored");
      prx_iq_close(r);
    }
  }

  /* damaged: a kiwi chunk of another size, bytes that are no chunk between two */
  bytes b = {0};
  put_fmt(&b, 1, 2, 12001, 16, 0);
  put_chunk(&b, "kiwi", "0123456789ab", 12);
  put_chunk(&b, "data", s, 2048);
  write_riff(path, &b);
  st = prx_iq_open(path, PRX_CF32, &r);
  CHECK(st == PRX_ERR_FORMAT && !r && strstr(prx_last_error(), "10 expected"),
        "a kiwi chunk of 12 bytes: %s (%s)", prx_strerror(st), prx_last_error());
  b.n = 0;
  put_fmt(&b, 1, 2, 12001, 16, 0);
  put_chunk(&b, "kiwi", "0123456789", 10);
  put_chunk(&b, "data", s, 2048);
  put(&b, "\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9);
  put_chunk(&b, "kiwi", "0123456789", 10);
  put_chunk(&b, "data", s, 2048);
  write_riff(path, &b);
  st = prx_iq_open(path, PRX_CF32, &r);
  CHECK(st == PRX_ERR_FORMAT && !r && strstr(prx_last_error(), "not a WAV chunk"),
        "bytes between KiwiSDR chunks: %s (%s)", prx_strerror(st), prx_last_error());
  free(b.b);
  free(s);
}

/* ---- RF64, placeholder sizes ---- */
static void rf64_and_placeholders(test_rng *rng) {
  const size_t n = 3001;
  const stored_type t = {3, 32, 0, PRX_CF32};
  unsigned char *s = malloc(n * 8);
  fill_stored(&t, rng, s, n);
  /* RF64: sizes in ds64, a chunk after the data */
  bytes w = {0};
  put(&w, "RF64", 4);
  put_u32(&w, 0xFFFFFFFFu);
  put(&w, "WAVE", 4);
  bytes ds = {0};
  put_u64(&ds, 0); /* RIFF size: not read */
  put_u64(&ds, n * 8);
  put_u64(&ds, n);
  put_u32(&ds, 0);
  put_chunk(&w, "ds64", ds.b, (uint32_t)ds.n);
  put_fmt(&w, 3, 2, 2000000, 32, 0);
  put(&w, "data", 4);
  put_u32(&w, 0xFFFFFFFFu);
  put(&w, s, n * 8);
  put_chunk(&w, "LIST", "INFOICMT\x04\0\0\0end\0", 16);
  const char *path = tmp("r.wav");
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(w.b, 1, w.n, f) == w.n && !fclose(f), "cannot write %s", path);
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  const prx_wav_info *wav = prx_iq_reader_wav(r);
  CHECK(wav && wav->rf64 && wav->extent == PRX_WAV_EXTENT_DECLARED && wav->data_bytes == n * 8,
        "RF64: rf64 %d, %llu bytes", wav ? wav->rf64 : -1,
        wav ? (unsigned long long)wav->data_bytes : 0ull);
  unsigned char *all = malloc((n + 10) * 8);
  size_t got = 0;
  CHECK_OK(prx_iq_read(r, all, n + 10, &got));
  CHECK(got == n && !memcmp(all, s, n * 8), "RF64: %zu samples", got);
  prx_iq_close(r);
  free(w.b);
  free(ds.b);

  /* RIFF with the size never filled in: 0xFFFFFFFF, and 0 with nothing after: to the end */
  static const uint32_t placeholders[] = {0xFFFFFFFFu, 0};
  for (int i = 0; i < 2; i++) {
    bytes b = {0};
    put_fmt(&b, 3, 2, 1000, 32, 0);
    put(&b, "data", 4);
    put_u32(&b, placeholders[i]);
    put(&b, s, n * 8);
    write_riff(path, &b);
    CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
    wav = prx_iq_reader_wav(r);
    got = 0;
    CHECK_OK(prx_iq_read(r, all, n + 10, &got));
    CHECK(wav && wav->extent == PRX_WAV_EXTENT_TO_END && wav->declared_bytes == placeholders[i] &&
              got == n && !memcmp(all, s, n * 8),
          "size %#x: extent %d, %zu samples", placeholders[i], wav ? (int)wav->extent : -1, got);
    prx_iq_close(r);
    free(b.b);
  }
  /* a data chunk of size 0 followed by another chunk is empty, not a placeholder */
  bytes b = {0};
  put_fmt(&b, 3, 2, 1000, 32, 0);
  put_chunk(&b, "data", "", 0);
  put_chunk(&b, "LIST", "INFOICMT\x04\0\0\0end\0", 16);
  write_riff(path, &b);
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  got = 1;
  CHECK_OK(prx_iq_read(r, all, 10, &got));
  wav = prx_iq_reader_wav(r);
  CHECK(got == 0 && wav && wav->extent == PRX_WAV_EXTENT_DECLARED,
        "an empty data chunk gave %zu samples", got);
  prx_iq_close(r);
  free(b.b);
  free(all);
  free(s);
}

/* ---- a RIFF file past 4 GiB whose 32-bit data size wrapped (sparse: nothing is read) ---- */
static void wrapped(void) {
  const uint64_t data = ((uint64_t)1 << 32) + 4000; /* the true size; the header says 4000 */
  bytes b = {0};
  put_fmt(&b, 1, 2, 1000000, 16, 0);
  put(&b, "data", 4);
  put_u32(&b, (uint32_t)data);
  const char *path = tmp("big.wav");
  write_riff(path, &b);
  uint64_t start = 12 + b.n;
  int fd = open(path, O_WRONLY);
  unsigned char tail[4] = {1, 2, 3, 4};
  /* the last sample, then a LIST chunk after the data */
  bytes list = {0};
  put_chunk(&list, "LIST", "INFOICMT\x04\0\0\0end\0", 16);
  int ok = fd >= 0 && pwrite(fd, tail, 4, (off_t)(start + data - 4)) == 4 &&
           pwrite(fd, list.b, list.n, (off_t)(start + data)) == (ssize_t)list.n;
  if (fd >= 0) close(fd);
  if (!ok) {
    printf("wrapped: cannot make a sparse 4 GiB file here: not checked\n");
  } else {
    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(path, PRX_CI16, &r));
    const prx_wav_info *wav = prx_iq_reader_wav(r);
    CHECK(wav && wav->extent == PRX_WAV_EXTENT_WRAPPED && wav->declared_bytes == 4000 &&
              wav->data_bytes == data,
          "wrapped: extent %d, %llu bytes", wav ? (int)wav->extent : -1,
          wav ? (unsigned long long)wav->data_bytes : 0ull);
    unsigned char got[8];
    size_t m = 0;
    CHECK_OK(prx_iq_read_at(r, got, data / 4 - 1, 2, &m));
    CHECK(m == 1 && !memcmp(got, tail, 4), "wrapped: the last sample (%zu read)", m);
    prx_iq_close(r);
    /* without the chunk after it, bytes after the declared data that are no chunk: the file's
     * end decides */
    fd = open(path, O_WRONLY);
    ok = fd >= 0 && !ftruncate(fd, (off_t)(start + data));
    if (fd >= 0) close(fd);
    CHECK(ok, "cannot cut %s", path);
    CHECK_OK(prx_iq_open(path, PRX_CI16, &r));
    wav = prx_iq_reader_wav(r);
    CHECK(wav && wav->extent == PRX_WAV_EXTENT_WRAPPED && wav->data_bytes == data,
          "wrapped to the end: extent %d", wav ? (int)wav->extent : -1);
    prx_iq_close(r);
  }
  unlink(path);
  free(list.b);
  free(b.b);
}

/* ---- where the centre frequency comes from ---- */
static void centre(void) {
  unsigned char sample[4] = {0};
  /* auxi: SYSTEMTIME start 2026-12-04 09:30:15.250, stop, then the centre in Hz */
  bytes aux = {0};
  const unsigned st[8] = {2026, 12, 5, 4, 9, 30, 15, 250};
  for (int i = 0; i < 8; i++) put_u16(&aux, st[i]);
  for (int i = 0; i < 8; i++) put_u16(&aux, st[i]);
  put_u32(&aux, 7100000);
  for (int i = 0; i < 7; i++) put_u32(&aux, 0);
  bytes rc = {0};
  put_u32(&rc, 10000000);
  put_u32(&rc, 1);
  put_u32(&rc, 1733304615u); /* 2024-12-04T09:30:15Z */
  for (int i = 0; i < 6; i++) put_u32(&rc, 0);
  struct {
    const char *name;
    const bytes *chunk;
    const char *id;
    double hz;
    const char *from, *start;
  } cases[] = {
      {"plain.wav", &aux, "auxi", 7100000, "auxi chunk", "2026-12-04T09:30:15.250"},
      {"perseus.wav", &rc, "rcvr", 10000000, "rcvr chunk", "2024-12-04T09:30:15Z"},
      {"HDSDR_20261204_093015Z_7074kHz_RF.wav", NULL, NULL, 7074000, "file name", NULL},
      {"SDRSharp_20261204_093015Z_14070000Hz_IQ.wav", NULL, NULL, 14070000, "file name", NULL},
      {"pass 2026-12-04 137.1MHz.wav", NULL, NULL, 137100000, "file name", NULL},
      {"HDSDR_7074kHz_7100kHz.wav", NULL, NULL, 0, NULL, NULL},   /* two: none taken */
      {"rec_20261204_1440000_iq.wav", NULL, NULL, 0, NULL, NULL}, /* no unit: none */
      {"SDRuno_7.2MHz.wav", &aux, "auxi", 7100000, "auxi chunk", "2026-12-04T09:30:15.250"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bytes b = {0};
    put_fmt(&b, 1, 2, 192000, 16, 0);
    if (cases[i].chunk) put_chunk(&b, cases[i].id, cases[i].chunk->b, (uint32_t)cases[i].chunk->n);
    put_chunk(&b, "data", sample, 4);
    const char *path = tmp(cases[i].name);
    write_riff(path, &b);
    prx_iq_reader *r = NULL;
    CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
    const prx_wav_info *wav = prx_iq_reader_wav(r);
    const prx_iq_info *info = prx_iq_reader_info(r);
    CHECK(wav && info->center_freq == cases[i].hz &&
              (cases[i].from ? wav->center_from && !strcmp(wav->center_from, cases[i].from)
                             : !wav->center_from) &&
              (cases[i].start ? wav->start_time && !strcmp(wav->start_time, cases[i].start)
                              : !wav->start_time),
          "%s: centre %.10g from %s, start %s", cases[i].name, info ? info->center_freq : -1,
          wav && wav->center_from ? wav->center_from : "(none)",
          wav && wav->start_time ? wav->start_time : "(none)");
    prx_iq_close(r);
    unlink(path);
    free(b.b);
  }
  free(aux.b);
  free(rc.b);
}

/* ---- files refused: the status and a message naming the file ---- */
static void refused(void) {
  unsigned char four[8] = {0};
  struct {
    const char *what;
    prx_status want;
    const char *words; /* in the message */
  } cases[] = {
      {"four channels", PRX_ERR_FORMAT, "4 channels"},
      {"three channels", PRX_ERR_FORMAT, "3 channels"},
      {"ADPCM", PRX_ERR_UNSUPPORTED, "format code 2"},
      {"PCM 12", PRX_ERR_UNSUPPORTED, "12 bits"},
      {"block align", PRX_ERR_FORMAT, "block align"},
      {"no fmt", PRX_ERR_FORMAT, "before its fmt"},
      {"no data", PRX_ERR_FORMAT, "no data chunk"},
      {"two data", PRX_ERR_UNSUPPORTED, "no KiwiSDR time stamps"},
      {"junk after data", PRX_ERR_FORMAT, "are not WAV chunks"},
      {"extensible GUID", PRX_ERR_UNSUPPORTED, "sub-format"},
      {"cut header", PRX_ERR_FORMAT, "ends inside"},
      {"rate 0", PRX_ERR_FORMAT, "sample rate 0"},
      {"fmt past the end", PRX_ERR_FORMAT, "past the file's end"},
      {"-F ci16 for float", PRX_ERR_INVALID, "float 32-bit"},
      {"kiwi after data", PRX_ERR_FORMAT, "after its data chunk"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bytes b = {0};
    prx_format given = PRX_CF32;
    switch (i) {
    case 0: put_fmt(&b, 1, 4, 8000, 16, 0); break;
    case 1: put_fmt(&b, 1, 3, 8000, 16, 0); break;
    case 2: put_fmt(&b, 2, 2, 8000, 16, 0); break;
    case 3: put_fmt(&b, 1, 2, 8000, 12, 0); break;
    case 4: {
      put_fmt(&b, 1, 2, 8000, 16, 0);
      b.b[8 + 12] = 6; /* block align 6 for 2 x 16 bits */
      break;
    }
    case 5: break;
    case 6: put_fmt(&b, 1, 2, 8000, 16, 0); break;
    case 7:
      put_fmt(&b, 1, 2, 8000, 16, 0);
      put_chunk(&b, "data", four, 4);
      put_chunk(&b, "LIST", four, 8);
      put_chunk(&b, "data", four, 4);
      break;
    case 8:
      put_fmt(&b, 1, 2, 8000, 16, 0);
      put_chunk(&b, "data", four, 4);
      put(&b, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 12);
      break;
    case 9:
      put_fmt(&b, 1, 2, 8000, 16, 1);
      b.b[8 + 30] ^= 0xff; /* a byte of the GUID's base */
      break;
    case 10: put(&b, "fm", 2); break;
    case 11: put_fmt(&b, 1, 2, 0, 16, 0); break;
    case 12: put(&b, "fmt \x40\0\0\0\x01\0\x02\0\x40\x1f\0\0\0\x7d\0\0\x04\0\x10\0", 24); break;
    case 13: put_fmt(&b, 3, 2, 8000, 32, 0), given = PRX_CI16; break;
    case 14:
      put_fmt(&b, 1, 2, 8000, 16, 0);
      put_chunk(&b, "data", four, 4);
      put_chunk(&b, "kiwi", "0123456789", 10);
      put_chunk(&b, "data", four, 4);
      break;
    }
    if (i != 6 && i != 7 && i != 8 && i != 10 && i != 12 && i != 14) put_chunk(&b, "data", four, 4);
    const char *path = tmp("bad.wav");
    write_riff(path, &b);
    prx_iq_reader *r = NULL;
    prx_status st = prx_iq_open(path, given, &r);
    CHECK(st == cases[i].want && !r && strstr(prx_last_error(), cases[i].words) &&
              strstr(prx_last_error(), "bad.wav"),
          "%s: %s (%s), wanted %s with '%s'", cases[i].what, prx_strerror(st), prx_last_error(),
          prx_strerror(cases[i].want), cases[i].words);
    prx_iq_close(r);
    free(b.b);
  }
}

int main(void) {
  if (test_tmpdir(tmpdir, sizeof tmpdir, "wav")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261204);
  stored_types(&rng);
  positional_and_cut(&rng);
  kiwi(&rng);
  rf64_and_placeholders(&rng);
  wrapped();
  centre();
  refused();
  test_tmpdir_remove(tmpdir);
  return test_finish("test_io_wav");
}
