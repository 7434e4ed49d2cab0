/* Fuzz target: the SigMF metadata parser (prx_sigmf_parse_meta and the reader's fuller
 * prx_sigmf_parse_meta_full) on arbitrary bytes, not NUL-terminated, and the core:datatype
 * parser on the same bytes as a C string.
 *
 * Invariants: a success gives a readable format, a positive finite rate (or 0 when absent), a
 * finite frequency, is_sigmf = 1, and a dataset name that is a plain file name; a failure gives
 * PRX_ERR_FORMAT or PRX_ERR_UNSUPPORTED (or NOMEM) with a message; both entry points agree; the
 * captures come strictly increasing with finite frequencies (captures[0]'s is the info's),
 * annotations have sample ranges below 2^53 and finite edges; the
 * datatype parser accepts exactly the four names polyrx reads and round-trips them; the format
 * name parser accepts exactly cf32, ci16, ci8, cu8 and cf16 in any case. */
#include "fuzz.h"

#include "io/io_internal.h"

#include <strings.h>

static int readable(prx_format f) {
  return f == PRX_CF32 || f == PRX_CI16 || f == PRX_CI8 || f == PRX_CU8;
}

/* field by field: struct padding is not copied reliably */
static int same_info(const prx_iq_info *a, const prx_iq_info *b) {
  return a->format == b->format && !memcmp(&a->sample_rate, &b->sample_rate, sizeof(double)) &&
         !memcmp(&a->center_freq, &b->center_freq, sizeof(double)) && a->is_sigmf == b->is_sigmf;
}

static void check_datatype(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return;
  memcpy(s, data, size);
  s[size] = '\0';
  prx_format f = (prx_format)-1;
  fuzz_clear_error();
  prx_status st = prx_sigmf_parse_datatype(s, &f);
  int known =
      !strcmp(s, "cf32_le") || !strcmp(s, "ci16_le") || !strcmp(s, "ci8") || !strcmp(s, "cu8");
  if (st == PRX_OK) {
    FUZZ_CHECK(known && readable(f), "datatype \"%s\" accepted as format %d", s, (int)f);
    const char *name = prx_sigmf_datatype_name(f);
    FUZZ_CHECK(name && !strcmp(name, s), "datatype \"%s\" read as %s", s, name ? name : "NULL");
  } else {
    FUZZ_CHECK(!known, "datatype \"%s\" rejected: %s", s, prx_last_error());
    FUZZ_CHECK(st == PRX_ERR_FORMAT || st == PRX_ERR_UNSUPPORTED, "datatype status %d", (int)st);
    FUZZ_CHECK_ERROR(st, "prx_sigmf_parse_datatype");
  }

  /* the sample format names of -F: cf32, ci16, ci8, cu8, cf16 in any case */
  static const prx_format all[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8, PRX_CF16};
  int want = -1;
  for (int i = 0; i < 5; i++)
    if (!strcasecmp(s, prx_format_name(all[i]))) want = i;
  f = (prx_format)-1;
  fuzz_clear_error();
  st = prx_format_parse(s, &f);
  if (want >= 0) {
    FUZZ_CHECK(st == PRX_OK && f == all[want], "format \"%s\": status %d, format %d", s, (int)st,
               (int)f);
  } else {
    FUZZ_CHECK(st == PRX_ERR_INVALID, "format \"%s\" gave status %d", s, (int)st);
    FUZZ_CHECK_ERROR(st, "prx_format_parse");
  }
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;

  prx_sigmf_read_meta m;
  fuzz_clear_error();
  prx_status st = prx_sigmf_parse_meta_full(text, size, &m);
  if (st == PRX_OK) {
    FUZZ_CHECK(readable(m.info.format), "format %d", (int)m.info.format);
    FUZZ_CHECK(m.info.sample_rate == 0 || (m.info.sample_rate > 0 && isfinite(m.info.sample_rate)),
               "sample rate %g", m.info.sample_rate);
    FUZZ_CHECK(isfinite(m.info.center_freq), "centre frequency %g", m.info.center_freq);
    FUZZ_CHECK(m.info.is_sigmf == 1, "is_sigmf %d", m.info.is_sigmf);
    FUZZ_CHECK(m.header_bytes <= (uint64_t)1e15, "header bytes %llu",
               (unsigned long long)m.header_bytes);
    if (m.dataset) FUZZ_CHECK(m.dataset[0] && !strchr(m.dataset, '/'), "dataset \"%s\"", m.dataset);
    const prx_sigmf_recording *rec = m.rec;
    FUZZ_CHECK(rec && rec->n_captures >= 1 && rec->captures, "no capture list");
    for (size_t i = 1; rec && i < rec->n_captures; i++)
      FUZZ_CHECK(rec->captures[i].sample_start > rec->captures[i - 1].sample_start,
                 "captures %zu and %zu out of order", i - 1, i);
    for (size_t i = 0; rec && i < rec->n_captures; i++)
      FUZZ_CHECK(isfinite(rec->captures[i].frequency) &&
                     (rec->captures[i].has_frequency || rec->captures[i].frequency == 0),
                 "capture %zu frequency %g", i, rec->captures[i].frequency);
    FUZZ_CHECK(rec && rec->captures[0].frequency == m.info.center_freq,
               "info.center_freq is not captures[0]'s frequency");
    for (size_t i = 0; rec && i < rec->n_annotations; i++) {
      const prx_sigmf_annotation *a = &rec->annotations[i];
      FUZZ_CHECK(a->sample_start < ((uint64_t)1 << 53) && a->sample_count < ((uint64_t)1 << 53),
                 "annotation %zu sample range", i);
      FUZZ_CHECK(!a->has_freq || (isfinite(a->freq_lower_edge) && isfinite(a->freq_upper_edge)),
                 "annotation %zu edges", i);
    }
  } else {
    FUZZ_CHECK(st == PRX_ERR_FORMAT || st == PRX_ERR_UNSUPPORTED || st == PRX_ERR_NOMEM,
               "status %d (%s): %s", (int)st, prx_strerror(st), prx_last_error());
    FUZZ_CHECK_ERROR(st, "prx_sigmf_parse_meta_full");
    FUZZ_CHECK(m.dataset == NULL && m.rec == NULL, "metadata left allocated after a failure");
  }

  /* the public entry point must agree */
  prx_iq_info info;
  memset(&info, 0xa5, sizeof info);
  prx_iq_info before = info;
  fuzz_clear_error();
  prx_status st2 = prx_sigmf_parse_meta(text, size, &info);
  /* (a datatype the reader converts has no prx_format: the public parser refuses it) */
  const prx_status want = st == PRX_OK && m.conv_channels ? PRX_ERR_UNSUPPORTED : st;
  FUZZ_CHECK(st2 == want, "prx_sigmf_parse_meta gave %d, the full parser %d", (int)st2, (int)st);
  if (st2 == PRX_OK)
    FUZZ_CHECK(same_info(&info, &m.info), "the two parsers read different fields");
  else
    FUZZ_CHECK(same_info(&info, &before), "a failed parse wrote the caller's info");
  if (st == PRX_OK && m.conv_channels)
    FUZZ_CHECK(m.info.format == PRX_CF32 && (m.conv_channels == 1 || m.conv_channels == 2),
               "a converted datatype read as format %d, %d channels", (int)m.info.format,
               m.conv_channels);
  prx_sigmf_read_meta_clear(&m);

  check_datatype(data, size);
  return 0;
}
