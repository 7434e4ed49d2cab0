/* SigMF done fully: recordings with several captures (frequency and datetime per segment) and
 * annotations, written and read back through the library, as plain file pairs and as .sigmf
 * archives; the archive checked independently by extracting it with tar(1); archives made by
 * tar(1) in ustar, GNU and pax formats (a member name longer than 100 bytes) read in place;
 * damaged archives refused with a message; SHA-512 against the FIPS 180-4 examples and against
 * sha512sum(1); a .sigmf-collection read back with cJSON, its hashes against sha512sum (and the
 * sigmf package where installed); core:datetime shifts (hand-worked cases, date(1) for the
 * calendar). */
#include "testutil.h"

#include "io/io_internal.h"
#include "polyrx/io.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static char *path_in(const char *name) { return test_path(dir, name); }

static int run(const char *fmt, const char *a, const char *b) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, a, b);
  return system(cmd);
}

/* The captures and annotations every recording of this test carries. */
static const double freqs[3] = {100e6, 101e6, 99.5e6};
static const uint64_t starts[3] = {0, 1000, 2500};
static const char *const times[3] = {"2026-12-01T10:00:00Z", "2026-12-01T10:00:00.001Z", NULL};

static void write_recording(const char *base, const prx_cf32 *x, size_t n) {
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 1e6;
  meta.center_freq = freqs[0];
  meta.datetime = times[0];
  meta.description = "three captures";
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open(base, &meta, &w));
  if (!w) return;
  /* a capture ahead of the samples written so far, one replaced, one past the end */
  CHECK_OK(prx_sigmf_writer_add_capture(w, starts[1], 555, NULL));
  CHECK_OK(prx_sigmf_writer_add_capture(w, starts[1], freqs[1], times[1])); /* replaces */
  CHECK(prx_sigmf_writer_add_capture(w, 999, 1, NULL) == PRX_ERR_INVALID,
        "a capture before the last one's start must be refused");
  CHECK(prx_sigmf_writer_add_capture(w, 3000, NAN, NULL) == PRX_ERR_INVALID, "NaN frequency");
  CHECK_OK(prx_sigmf_writer_add_capture(w, starts[2], freqs[2], times[2]));
  CHECK_OK(prx_sigmf_writer_add_capture(w, n + 5, 1e9, NULL)); /* past the end: left out */
  prx_sigmf_annotation a = {1200, 300, 1, 100.9e6, 101.1e6, "burst", "a carrier", "test"};
  CHECK_OK(prx_sigmf_writer_add_annotation(w, &a));
  prx_sigmf_annotation b = {10, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(prx_sigmf_writer_add_annotation(w, &b));
  for (size_t off = 0; off < n; off += 333)
    CHECK_OK(prx_sigmf_write(w, x + off, n - off < 333 ? n - off : 333));
  CHECK_OK(prx_sigmf_writer_close(w));
}

/* Opens path and checks format, rate, captures, annotations and every sample. */
static void check_recording(const char *path, const prx_cf32 *x, size_t n, int is_archive) {
  prx_iq_reader *r = NULL;
  CHECK_OK(prx_iq_open(path, PRX_CF32, &r));
  if (!r) return;
  const prx_iq_info *info = prx_iq_reader_info(r);
  CHECK(info->is_sigmf && info->sample_rate == 1e6 && info->center_freq == freqs[0],
        "%s: rate %g, centre %g", path, info->sample_rate, info->center_freq);
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  CHECK(rec != NULL, "%s: no SigMF metadata", path);
  if (rec) {
    CHECK(rec->is_archive == is_archive, "%s: is_archive %d", path, rec->is_archive);
    CHECK(rec->n_captures == 3, "%s: %zu captures, expected 3", path, rec->n_captures);
    for (size_t i = 0; i < 3 && i < rec->n_captures; i++) {
      const prx_sigmf_capture *c = &rec->captures[i];
      CHECK(c->sample_start == starts[i] && c->has_frequency && c->frequency == freqs[i],
            "%s: capture %zu at %llu, %g Hz", path, i, (unsigned long long)c->sample_start,
            c->frequency);
      CHECK(times[i] ? c->datetime && !strcmp(c->datetime, times[i]) : !c->datetime,
            "%s: capture %zu datetime %s", path, i, c->datetime ? c->datetime : "(none)");
    }
    CHECK(rec->n_annotations == 2, "%s: %zu annotations", path, rec->n_annotations);
    if (rec->n_annotations == 2) {
      const prx_sigmf_annotation *a = &rec->annotations[0], *b = &rec->annotations[1];
      CHECK(a->sample_start == 10 && a->sample_count == 0 && !a->has_freq && !a->label,
            "%s: first annotation (sorted) wrong", path);
      CHECK(b->sample_start == 1200 && b->sample_count == 300 && b->has_freq &&
                b->freq_lower_edge == 100.9e6 && b->freq_upper_edge == 101.1e6 && b->label &&
                !strcmp(b->label, "burst") && b->comment && !strcmp(b->comment, "a carrier") &&
                b->generator && !strcmp(b->generator, "test"),
            "%s: second annotation wrong", path);
    }
    CHECK(rec->description && !strcmp(rec->description, "three captures") && rec->recorder &&
              !strcmp(rec->recorder, "polyrx"),
          "%s: global text fields", path);
  }
  prx_cf32 *y = malloc((n + 64) * sizeof *y);
  size_t got = 0, k;
  prx_status st;
  while (!(st = prx_iq_read(r, y + got, 97, &k)) && k) got += k;
  CHECK(st == PRX_OK && got == n && !memcmp(x, y, n * sizeof *x),
        "%s: read %zu of %zu samples back (status %d), contents %s", path, got, n, (int)st,
        got == n && !memcmp(x, y, n * sizeof *x) ? "equal" : "differ");
  free(y);
  prx_iq_close(r);
}

static void test_round_trips(test_rng *rng) {
  size_t n = 3001; /* 24008 bytes: the data member ends inside a tar block */
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 0.5);
  write_recording(path_in("pair"), x, n);
  check_recording(path_in("pair.sigmf-meta"), x, n, 0);
  write_recording(path_in("arch.sigmf"), x, n);
  check_recording(path_in("arch.sigmf"), x, n, 1);
  struct stat sb;
  CHECK(stat(path_in("arch.sigmf"), &sb) == 0 && sb.st_size % 512 == 0,
        "archive size %lld is not whole tar blocks", (long long)sb.st_size);

  /* independently: tar(1) lists and extracts it; the extracted pair reads the same */
  CHECK(run("cd '%s' && tar tf arch.sigmf > list.txt%s", dir, "") == 0, "tar cannot list it");
  char *list = test_slurp(path_in("list.txt"), NULL);
  CHECK(list && !strcmp(list, "arch/\narch/arch.sigmf-data\narch/arch.sigmf-meta\n"),
        "tar lists:\n%s", list ? list : "(nothing)");
  free(list);
  CHECK(run("cd '%s' && mkdir -p x && tar -C x -xf arch.sigmf%s", dir, "") == 0,
        "tar cannot extract it");
  check_recording(path_in("x/arch/arch.sigmf-meta"), x, n, 0);
  size_t len;
  char *a = test_slurp(path_in("x/arch/arch.sigmf-data"), &len);
  CHECK(a && len == n * sizeof *x && !memcmp(a, x, len), "extracted data differs");
  free(a);

  /* archives made by tar(1) in each format, one with a member path over 100 bytes */
  const char *long_name =
      "a-recording-name-that-is-long-enough-to-need-the-ustar-prefix-or-a-pax-record-x";
  static const char *const formats[] = {"ustar", "gnu", "pax"};
  for (int f = 0; f < 3; f++) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm -rf t && mkdir -p t/%s && cp pair.sigmf-meta t/%s/%s.sigmf-meta && "
             "cp pair.sigmf-data t/%s/%s.sigmf-data && tar -C t -H %s -cf t%d.sigmf %s",
             dir, long_name, long_name, long_name, long_name, long_name, formats[f], f, long_name);
    CHECK(system(cmd) == 0, "tar -H %s failed", formats[f]);
    char name[32];
    snprintf(name, sizeof name, "t%d.sigmf", f);
    check_recording(path_in(name), x, n, 1);
  }

  /* damage: cut inside the data member, a flipped header byte, two recordings */
  a = test_slurp(path_in("arch.sigmf"), &len);
  FILE *o = fopen(path_in("cut.sigmf"), "wb");
  fwrite(a, 1, 512 * 3 + 100, o);
  fclose(o);
  prx_iq_reader *r = NULL;
  CHECK(prx_iq_open(path_in("cut.sigmf"), PRX_CF32, &r) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "cut short"),
        "a cut archive: '%s'", prx_last_error());
  a[512 + 3] ^= 1;
  o = fopen(path_in("bad.sigmf"), "wb");
  fwrite(a, 1, len, o);
  fclose(o);
  CHECK(prx_iq_open(path_in("bad.sigmf"), PRX_CF32, &r) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "checksum"),
        "a damaged header: '%s'", prx_last_error());
  free(a);
  CHECK(run("cd '%s' && tar -cf two.sigmf pair.sigmf-meta pair.sigmf-data x/arch%s", dir, "") == 0,
        "tar");
  CHECK(prx_iq_open(path_in("two.sigmf"), PRX_CF32, &r) == PRX_ERR_UNSUPPORTED &&
            strstr(prx_last_error(), "2 recordings"),
        "two recordings: '%s'", prx_last_error());
  CHECK(r == NULL, "a failed open returns no reader");

  /* an archive whose data member ends inside a sample */
  CHECK(run("cd '%s' && head -c 1001 pair.sigmf-data > t/odd.sigmf-data && cp pair.sigmf-meta "
            "t/odd.sigmf-meta && tar -C t -cf odd.sigmf odd.sigmf-meta odd.sigmf-data%s",
            dir, "") == 0,
        "tar");
  CHECK_OK(prx_iq_open(path_in("odd.sigmf"), PRX_CF32, &r));
  if (r) {
    prx_cf32 buf[200];
    size_t k, got = 0;
    prx_status st;
    while (!(st = prx_iq_read(r, buf, 200, &k)) && k) got += k;
    CHECK(st == PRX_ERR_TRUNCATED && got == 125, "odd member: status %d after %zu samples", (int)st,
          got);
    prx_iq_close(r);
  }
  free(x);
}

static void hex_of(const void *data, size_t n, char hex[129]) {
  prx_sha512_ctx c;
  prx_sha512_init(&c);
  /* fed in uneven pieces: the block boundary handling is part of what is tested */
  const unsigned char *p = data;
  for (size_t off = 0, k = 1; off < n; off += k, k = k * 3 % 200 + 1)
    prx_sha512_update(&c, p + off, k < n - off ? k : n - off);
  unsigned char d[64];
  prx_sha512_final(&c, d);
  for (int i = 0; i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

static void test_sha512(test_rng *rng) {
  char hex[129];
  hex_of("", 0, hex);
  CHECK(!strcmp(hex, "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f"
                     "2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"),
        "SHA-512 of \"\": %s", hex);
  hex_of("abc", 3, hex);
  CHECK(!strcmp(hex, "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc"
                     "1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
        "SHA-512 of \"abc\": %s", hex);
  const char *two = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmno"
                    "pqklmnopqrlmnopqrsmnopqrstnopqrstu";
  hex_of(two, strlen(two), hex);
  CHECK(!strcmp(hex, "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f"
                     "7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"),
        "SHA-512 of the two-block example: %s", hex);
  /* random files of lengths around the padding boundaries, against sha512sum(1) */
  static const size_t lens[] = {111, 112, 127, 128, 129, 239, 240, 100000};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    unsigned char *b = malloc(lens[i]);
    for (size_t j = 0; j < lens[i]; j++) b[j] = (unsigned char)test_rng_u64(rng);
    FILE *f = fopen(path_in("h.bin"), "wb");
    fwrite(b, 1, lens[i], f);
    fclose(f);
    free(b);
    CHECK_OK(prx_sha512_file(path_in("h.bin"), hex));
    CHECK(run("sha512sum '%s' | cut -c1-128 > '%s.sum'", path_in("h.bin"), path_in("h.bin")) == 0,
          "sha512sum");
    char *want = test_slurp(path_in("h.bin.sum"), NULL);
    CHECK(want && !strncmp(want, hex, 128), "SHA-512 of %zu random bytes: %s, sha512sum %s",
          lens[i], hex, want ? want : "?");
    free(want);
  }
}

static void test_collection(void) {
  const char *names[2] = {"pair", "x/arch/arch"};
  CHECK_OK(prx_sigmf_collection_write(path_in("run.sigmf-collection"), names, 2, "a run"));
  char *text = test_slurp(path_in("run.sigmf-collection"), NULL);
  cJSON *root = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(root != NULL, "collection is not JSON");
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "collection");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "core:version");
  CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "1.0.0"), "collection core:version");
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "core:streams");
  CHECK(cJSON_GetArraySize(s) == 2, "two streams");
  for (int i = 0; i < 2 && i < cJSON_GetArraySize(s); i++) {
    const cJSON *e = cJSON_GetArrayItem(s, i);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name"),
                *h = cJSON_GetObjectItemCaseSensitive(e, "hash");
    CHECK(cJSON_IsString(nm) && !strcmp(nm->valuestring, names[i]), "stream %d name", i);
    char meta[600], cmd[1400];
    snprintf(meta, sizeof meta, "%s/%s.sigmf-meta", dir, names[i]);
    snprintf(cmd, sizeof cmd, "sha512sum '%s' | cut -c1-128 > '%s/want.sum'", meta, dir);
    CHECK(system(cmd) == 0, "sha512sum");
    char *want = test_slurp(path_in("want.sum"), NULL);
    CHECK(cJSON_IsString(h) && want && !strncmp(h->valuestring, want, 128) &&
              strlen(h->valuestring) == 128,
          "stream %d hash %s, sha512sum %s", i, cJSON_IsString(h) ? h->valuestring : "?",
          want ? want : "?");
    free(want);
  }
  cJSON_Delete(root);
  /* the official sigmf package loads it and checks every stream's hash, where installed */
  if (system("python3 -c 'import sigmf' 2>/dev/null") == 0) {
    CHECK(run("cd '%s' && python3 -c \"import sigmf; c = sigmf.fromfile('run.sigmf-collection'); "
              "assert c.get_stream_names() == ['pair', 'x/arch/arch'], c.get_stream_names(); "
              "c.verify_stream_hashes()\"%s",
              dir, "") == 0,
          "the sigmf package rejects the collection");
  } else {
    fprintf(stderr, "note: the sigmf Python package is not installed: its check is skipped\n");
  }
  const char *missing[1] = {"nothere"};
  CHECK(prx_sigmf_collection_write(path_in("bad.sigmf-collection"), missing, 1, NULL) ==
                PRX_ERR_IO &&
            strstr(prx_last_error(), "nothere.sigmf-meta"),
        "a missing recording: '%s'", prx_last_error());
  CHECK(access(path_in("bad.sigmf-collection"), F_OK) != 0, "a failed collection left a file");
  CHECK(prx_sigmf_collection_write(path_in("run.json"), names, 1, NULL) == PRX_ERR_INVALID,
        "the name must end in .sigmf-collection");
}

static void test_datetime(test_rng *rng) {
  static const struct {
    const char *in;
    double shift;
    const char *want;
  } cases[] = {
      {"2026-12-01T10:00:00Z", 0.5, "2026-12-01T10:00:00.5Z"},
      {"2026-12-31T23:59:59.75Z", 0.5, "2027-01-01T00:00:00.25Z"},
      {"2024-02-28T23:59:59Z", 1, "2024-02-29T00:00:00Z"},
      {"2026-12-01T12:00:00+02:00", 0, "2026-12-01T10:00:00Z"},
      {"2026-12-01T00:30:00-01:00", 0, "2026-12-01T01:30:00Z"},
      {"2026-12-01T00:00:00.000001Z", -0.000002, "2026-11-30T23:59:59.999999Z"},
      /* half an input sample at 6.5536 MHz: 76293.9453125 ps, kept to the picosecond */
      {"2026-12-01T10:00:00Z", 0.5 / 6.5536e6, "2026-12-01T10:00:00.000000076294Z"},
      {"1970-01-01T00:00:00Z", -1, "1969-12-31T23:59:59Z"},
  };
  char out[48];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    prx_status st = prx_sigmf_datetime_shift(cases[i].in, cases[i].shift, out);
    CHECK(st == PRX_OK && !strcmp(out, cases[i].want), "%s %+g s: got %s, expected %s", cases[i].in,
          cases[i].shift, st ? prx_last_error() : out, cases[i].want);
  }
  static const char *const bad[] = {
      "2026-13-01T00:00:00Z",    "2026-02-29T00:00:00Z",  "yesterday",
      "2026-12-01T10:00:00",     "2026-12-01T10:00:00.Z", "2026-12-01 10:00:00Z",
      "2026-12-01T10:00:00Zjunk"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK(prx_sigmf_datetime_shift(bad[i], 0, out) == PRX_ERR_FORMAT &&
              strstr(prx_last_error(), bad[i]),
          "'%s' accepted (%s)", bad[i], out);
  /* calendar arithmetic against date(1): random instants 1970..2100 shifted by whole seconds */
  FILE *f = fopen(path_in("dates.txt"), "w");
  long long secs[20];
  for (int i = 0; i < 20; i++) {
    secs[i] = (long long)(test_rng_u64(rng) % 4102444800ULL);
    fprintf(f, "%lld\n", secs[i]);
  }
  fclose(f);
  CHECK(run("while read s; do date -u -d @$s +%%Y-%%m-%%dT%%H:%%M:%%SZ; done < '%s' > '%s'",
            path_in("dates.txt"), path_in("want.txt")) == 0,
        "date(1)");
  f = fopen(path_in("want.txt"), "r");
  for (int i = 0; f && i < 20; i++) {
    char want[64] = "";
    if (!fgets(want, sizeof want, f)) break;
    want[strcspn(want, "\n")] = 0;
    CHECK_OK(prx_sigmf_datetime_shift("1970-01-01T00:00:00Z", (double)secs[i], out));
    CHECK(!strcmp(out, want), "1970 + %lld s: %s, date(1) says %s", secs[i], out, want);
    /* the difference back: date(1)'s time less the epoch, whole seconds exactly */
    double d = 0;
    CHECK_OK(prx_sigmf_datetime_diff(want, "1970-01-01T00:00:00Z", &d));
    CHECK(d == (double)secs[i], "%s - 1970: %.17g s (%lld)", want, d, secs[i]);
  }
  if (f) fclose(f);
  /* differences across zones and fractions, and each shift's difference back */
  double d = 0;
  CHECK_OK(prx_sigmf_datetime_diff("2026-12-01T12:00:00.25+02:00", "2026-12-01T09:59:59Z", &d));
  CHECK(d == 1.25, "a difference across zones: %.17g (1.25)", d);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    CHECK_OK(prx_sigmf_datetime_diff(cases[i].want, cases[i].in, &d));
    CHECK(fabs(d - cases[i].shift) < 1e-12, "%s - %s: %.17g (%.17g)", cases[i].want, cases[i].in, d,
          cases[i].shift);
  }
  CHECK(prx_sigmf_datetime_diff("2026-12-01T10:00:00Z", "yesterday", &d) == PRX_ERR_FORMAT &&
            strstr(prx_last_error(), "yesterday"),
        "a difference with a malformed time: %s", prx_last_error());
}

/* A failed or discarded archive leaves nothing: complete or absent. */
static void test_archive_absent(void) {
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 1;
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open(path_in("gone.sigmf"), &meta, &w));
  prx_cf32 z[4] = {{0, 0}};
  CHECK_OK(prx_sigmf_write(w, z, 4));
  prx_sigmf_writer_discard(w);
  CHECK(run("cd '%s' && test -z \"$(ls | grep gone)\"%s", dir, "") == 0,
        "a discarded archive left files");
  CHECK(prx_sigmf_writer_open(path_in(".sigmf"), &meta, &w) == PRX_ERR_INVALID,
        "an archive without a name is refused");
}

int main(void) {
  if (test_tmpdir(dir, sizeof dir, "archive")) return 1;
  test_rng rng;
  test_rng_seed(&rng, 20261201);
  test_round_trips(&rng);
  test_sha512(&rng);
  test_collection();
  test_datetime(&rng);
  test_archive_absent();
  if (!test_failures) test_tmpdir_remove(dir);
  return test_finish("test_sigmf_archive");
}
