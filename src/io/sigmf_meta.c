/* SigMF metadata reading: core:datatype names and the fields of a .sigmf-meta that polyrx
 * needs (SigMF specification v1.0.0). Parsing goes through cJSON; every way a file can be
 * wrong gives a message that names the field. */
#include "io_internal.h"

#include "../core/internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *prx_sigmf_datatype_name(prx_format f) {
  switch (f) {
  case PRX_CF32: return "cf32_le";
  case PRX_CI16: return "ci16_le";
  case PRX_CI8: return "ci8";
  case PRX_CU8: return "cu8";
  case PRX_CF16: return "cf16_le"; /* written only (polyrx channelize --out-format cf16) */
  }
  return NULL;
}

/* 1 if name is a dataset format of the SigMF 1.0 grammar:
 * (r|c) ((f64|f32|f16|i32|i16|u32|u16) (_le|_be) | i8 | u8) (f16: SigMF 1.2). */
static int valid_datatype(const char *name) {
  if (name[0] != 'r' && name[0] != 'c') return 0;
  const char *t = name + 1;
  if (!strcmp(t, "i8") || !strcmp(t, "u8")) return 1;
  static const char *const types[] = {"f64", "f32", "f16", "i32", "i16", "u32", "u16"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strncmp(t, types[i], 3)) return !strcmp(t + 3, "_le") || !strcmp(t + 3, "_be");
  return 0;
}

prx_status prx_sigmf_parse_datatype(const char *name, prx_format *out) {
  if (!name || !out) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_parse_datatype: NULL argument");
  static const prx_format readable[] = {PRX_CF32, PRX_CI16, PRX_CI8, PRX_CU8};
  for (size_t i = 0; i < sizeof readable / sizeof readable[0]; i++) {
    if (!strcmp(name, prx_sigmf_datatype_name(readable[i]))) {
      *out = readable[i];
      return PRX_OK;
    }
  }
  if (!valid_datatype(name))
    return prx_fail(PRX_ERR_FORMAT,
                    "core:datatype \"%s\" is not a SigMF dataset format (expected e.g. cf32_le, "
                    "ci16_le, ci8, cu8)",
                    name);
  /* (the reader converts more of them as it reads: prx_sigmf_read_meta.conv) */
  return prx_fail(PRX_ERR_UNSUPPORTED,
                  "core:datatype \"%s\" is not read by polyrx (it reads cf32_le, ci16_le, ci8 "
                  "and cu8 as they are; cf64_le, ci32_le, the real ri8, ru8, ri16_le, ri32_le, "
                  "rf32_le, rf64_le and the big-endian cf32_be, cf64_be, ci32_be, ci16_be, "
                  "rf32_be, rf64_be, ri32_be, ri16_be converted as it reads)",
                  name);
}

/* The datatypes the reader converts as it reads (prx_sigmf_read_meta.conv): 1 and the type. */
static int converted_datatype(const char *name, prx_stored *t, int *channels,
                              const char **static_name) {
  static const struct {
    const char *name;
    prx_stored t;
    int channels;
  } types[] = {{"cf64_le", {64, 1, 0, 0, 0}, 2},
               {"ci32_le", {32, 0, 0, 0, 0}, 2},
               {"ri8", {8, 0, 0, 0, 0}, 1},
               {"ru8", {8, 0, 1, 0, 0}, 1},
               {"ri16_le", {16, 0, 0, 0, 0}, 1},
               {"ri32_le", {32, 0, 0, 0, 0}, 1},
               {"rf32_le", {32, 1, 0, 0, 0}, 1},
               {"rf64_le", {64, 1, 0, 0, 0}, 1},
               /* big-endian (a VITA-49 stream's samples, say) */
               {"cf32_be", {32, 1, 0, 1, 0}, 2},
               {"cf64_be", {64, 1, 0, 1, 0}, 2},
               {"ci32_be", {32, 0, 0, 1, 0}, 2},
               {"ci16_be", {16, 0, 0, 1, 0}, 2},
               {"rf32_be", {32, 1, 0, 1, 0}, 1},
               {"rf64_be", {64, 1, 0, 1, 0}, 1},
               {"ri32_be", {32, 0, 0, 1, 0}, 1},
               {"ri16_be", {16, 0, 0, 1, 0}, 1}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(name, types[i].name)) {
      *t = types[i].t;
      *channels = types[i].channels;
      *static_name = types[i].name;
      return 1;
    }
  return 0;
}

/* A number field that must be finite and non-negative when present; *present says whether it
 * was there. */
static prx_status get_number(const cJSON *obj, const char *where, const char *key, double *v,
                             int *present) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  *present = it != NULL;
  if (!it) return PRX_OK;
  if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s \"%s\" must be a number", where, key);
  *v = it->valuedouble;
  return PRX_OK;
}

static prx_status parse_global(const cJSON *g, prx_sigmf_read_meta *m) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(g, "core:datatype");
  if (!dt) return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: global has no \"core:datatype\"");
  if (!cJSON_IsString(dt))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: global \"core:datatype\" must be a string");
  prx_status st = prx_sigmf_parse_datatype(dt->valuestring, &m->info.format);
  if (st == PRX_ERR_UNSUPPORTED &&
      converted_datatype(dt->valuestring, &m->conv, &m->conv_channels, &m->conv_name)) {
    m->info.format = PRX_CF32;
    st = PRX_OK;
  }
  if (st) return st;

  double v = 0;
  int present;
  if ((st = get_number(g, "global", "core:sample_rate", &v, &present))) return st;
  if (present && !(v > 0))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: core:sample_rate must be positive, got %g", v);
  m->info.sample_rate = present ? v : 0;

  if ((st = get_number(g, "global", "core:num_channels", &v, &present))) return st;
  if (present && v != 1)
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "SigMF metadata: core:num_channels is %g; polyrx reads single-channel "
                    "recordings only",
                    v);

  const cJSON *mo = cJSON_GetObjectItemCaseSensitive(g, "core:metadata_only");
  if (mo && cJSON_IsTrue(mo))
    return prx_fail(PRX_ERR_UNSUPPORTED,
                    "SigMF metadata: core:metadata_only is true: the recording has no samples");

  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(g, "core:version");
  if (ver && !cJSON_IsString(ver))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: global \"core:version\" must be a string");

  const cJSON *ds = cJSON_GetObjectItemCaseSensitive(g, "core:dataset");
  if (ds) {
    if (!cJSON_IsString(ds) || !ds->valuestring[0] || strchr(ds->valuestring, '/'))
      return prx_fail(PRX_ERR_FORMAT,
                      "SigMF metadata: \"core:dataset\" must be a file name beside the metadata");
    m->dataset = strdup(ds->valuestring);
    if (!m->dataset) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  return PRX_OK;
}

/* A string field: *out is a malloc'd copy, NULL when absent. */
static prx_status get_string(const cJSON *obj, const char *where, const char *key, char **out) {
  *out = NULL;
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!it) return PRX_OK;
  if (!cJSON_IsString(it))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s \"%s\" must be a string", where, key);
  if (!(*out = strdup(it->valuestring))) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  return PRX_OK;
}

/* A sample index field (a non-negative integer below 2^53). */
static prx_status get_index(const cJSON *obj, const char *where, const char *key, uint64_t *v,
                            int *present) {
  double d = 0;
  prx_status st = get_number(obj, where, key, &d, present);
  if (st) return st;
  if (*present && (d < 0 || d != floor(d) || d >= 9007199254740992.0))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s %s must be a sample index", where, key);
  *v = *present ? (uint64_t)d : 0;
  return PRX_OK;
}

void prx_sigmf_recording_free(prx_sigmf_recording *rec) {
  if (!rec) return;
  for (size_t i = 0; i < rec->n_captures; i++) free((char *)rec->captures[i].datetime);
  for (size_t i = 0; i < rec->n_annotations; i++) {
    const prx_sigmf_annotation *a = &rec->annotations[i];
    free((char *)a->label);
    free((char *)a->comment);
    free((char *)a->generator);
  }
  free((void *)rec->captures);
  free((void *)rec->annotations);
  free((char *)rec->description);
  free((char *)rec->author);
  free((char *)rec->hw);
  free((char *)rec->recorder);
  free(rec);
}

static prx_status parse_captures(const cJSON *caps, prx_sigmf_read_meta *m) {
  int n = cJSON_GetArraySize(caps);
  prx_sigmf_capture *out = calloc(n > 0 ? (size_t)n : 1, sizeof *out);
  if (!out) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  m->rec->captures = out;
  m->rec->n_captures = n > 0 ? (size_t)n : 1; /* none: one at sample 0, frequency unknown */
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, caps) {
    if (!cJSON_IsObject(c))
      return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: captures[%d] is not an object", i);
    char where[32];
    snprintf(where, sizeof where, "captures[%d]", i);
    double v = 0;
    int present;
    prx_status st = get_index(c, where, "core:sample_start", &out[i].sample_start, &present);
    if (st) return st;
    if ((st = get_number(c, where, "core:header_bytes", &v, &present))) return st;
    if (present && (v < 0 || v != floor(v) || v > 1e15))
      return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s core:header_bytes must be a byte count",
                      where);
    if (present && v > 0 && i > 0)
      return prx_fail(PRX_ERR_UNSUPPORTED,
                      "SigMF metadata: %s has core:header_bytes (headers inside the data file) "
                      "which polyrx does not read",
                      where);
    if (i > 0 && out[i].sample_start <= out[i - 1].sample_start)
      return prx_fail(PRX_ERR_FORMAT,
                      "SigMF metadata: %s core:sample_start %llu is not after the previous "
                      "capture's %llu (captures must be in increasing sample order)",
                      where, (unsigned long long)out[i].sample_start,
                      (unsigned long long)out[i - 1].sample_start);
    if (i == 0) m->header_bytes = present ? (uint64_t)v : 0;
    if ((st = get_number(c, where, "core:frequency", &v, &present))) return st;
    out[i].has_frequency = present;
    out[i].frequency = present ? v : 0;
    char *dt;
    if ((st = get_string(c, where, "core:datetime", &dt))) return st;
    out[i].datetime = dt;
    i++;
  }
  m->info.center_freq = out[0].frequency;
  return PRX_OK;
}

static prx_status parse_annotations(const cJSON *anns, prx_sigmf_read_meta *m) {
  if (!anns) return PRX_OK;
  if (!cJSON_IsArray(anns))
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: \"annotations\" must be an array");
  int n = cJSON_GetArraySize(anns);
  prx_sigmf_annotation *out = calloc(n > 0 ? (size_t)n : 1, sizeof *out);
  if (!out) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  m->rec->annotations = out;
  int i = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, anns) {
    char where[40];
    snprintf(where, sizeof where, "annotations[%d]", i);
    if (!cJSON_IsObject(a))
      return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s is not an object", where);
    m->rec->n_annotations = (size_t)i + 1; /* what is there is freed on failure */
    int present, lo_present, hi_present;
    prx_status st = get_index(a, where, "core:sample_start", &out[i].sample_start, &present);
    if (st) return st;
    if (!present)
      return prx_fail(PRX_ERR_FORMAT, "SigMF metadata: %s has no core:sample_start", where);
    if ((st = get_index(a, where, "core:sample_count", &out[i].sample_count, &present))) return st;
    if ((st = get_number(a, where, "core:freq_lower_edge", &out[i].freq_lower_edge, &lo_present)))
      return st;
    if ((st = get_number(a, where, "core:freq_upper_edge", &out[i].freq_upper_edge, &hi_present)))
      return st;
    out[i].has_freq = lo_present && hi_present;
    if (!out[i].has_freq) out[i].freq_lower_edge = out[i].freq_upper_edge = 0;
    char *label, *comment, *generator;
    if ((st = get_string(a, where, "core:label", &label))) return st;
    out[i].label = label;
    if ((st = get_string(a, where, "core:comment", &comment))) return st;
    out[i].comment = comment;
    if ((st = get_string(a, where, "core:generator", &generator))) return st;
    out[i].generator = generator;
    i++;
  }
  return PRX_OK;
}

static prx_status parse_global_text(const cJSON *g, prx_sigmf_recording *rec) {
  char *s[4] = {NULL, NULL, NULL, NULL};
  static const char *const keys[4] = {"core:description", "core:author", "core:hw",
                                      "core:recorder"};
  prx_status st = PRX_OK;
  for (int i = 0; i < 4 && !st; i++) st = get_string(g, "global", keys[i], &s[i]);
  rec->description = s[0];
  rec->author = s[1];
  rec->hw = s[2];
  rec->recorder = s[3];
  return st;
}

/* A polyrx channel recording's passband (polyrx:cutoff spacings of polyrx:channel_spacing Hz);
 * values that are not positive numbers leave it 0 (the extension is optional). */
static void parse_global_polyrx(const cJSON *g, prx_sigmf_recording *rec) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(g, "polyrx:cutoff"),
              *s = cJSON_GetObjectItemCaseSensitive(g, "polyrx:channel_spacing");
  if (cJSON_IsNumber(c) && cJSON_IsNumber(s) && c->valuedouble > 0 && s->valuedouble > 0 &&
      isfinite(c->valuedouble * s->valuedouble))
    rec->channel_passband_hz = c->valuedouble * s->valuedouble;
}

void prx_sigmf_read_meta_clear(prx_sigmf_read_meta *m) {
  if (!m) return;
  free(m->dataset);
  m->dataset = NULL;
  prx_sigmf_recording_free(m->rec);
  m->rec = NULL;
}

prx_status prx_sigmf_parse_meta_full(const char *text, size_t len, prx_sigmf_read_meta *m) {
  if (!m) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_parse_meta: NULL output");
  memset(m, 0, sizeof *m);
  if (!text) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_parse_meta: NULL text");
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!root) {
    const char *at = end; /* cJSON points it at the error (thread-safe, unlike GetErrorPtr) */
    size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : len;
    /* line number of the error, for a human fixing the file */
    size_t line = 1;
    for (size_t i = 0; i < off; i++) line += text[i] == '\n';
    return prx_fail(PRX_ERR_FORMAT, "SigMF metadata is not valid JSON (near byte %zu, line %zu)",
                    off, line);
  }
  /* only white space may follow the top-level object */
  for (const char *p = end; p && p < text + len; p++) {
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
      cJSON_Delete(root);
      return prx_fail(PRX_ERR_FORMAT,
                      "SigMF metadata has trailing text after the JSON object "
                      "(byte %zu)",
                      (size_t)(p - text));
    }
  }
  prx_status st = PRX_OK;
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "global");
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive(root, "captures");
  if (!cJSON_IsObject(root))
    st = prx_fail(PRX_ERR_FORMAT, "SigMF metadata must be a JSON object");
  else if (!g)
    st = prx_fail(PRX_ERR_FORMAT, "SigMF metadata has no \"global\" object");
  else if (!cJSON_IsObject(g))
    st = prx_fail(PRX_ERR_FORMAT, "SigMF metadata: \"global\" must be an object");
  else if (!caps)
    st = prx_fail(PRX_ERR_FORMAT, "SigMF metadata has no \"captures\" array");
  else if (!cJSON_IsArray(caps))
    st = prx_fail(PRX_ERR_FORMAT, "SigMF metadata: \"captures\" must be an array");
  if (!st && !(m->rec = calloc(1, sizeof *m->rec))) st = prx_fail(PRX_ERR_NOMEM, "out of memory");
  if (!st) st = parse_global(g, m);
  if (!st) st = parse_global_text(g, m->rec);
  if (!st) parse_global_polyrx(g, m->rec);
  if (!st) st = parse_captures(caps, m);
  if (!st) st = parse_annotations(cJSON_GetObjectItemCaseSensitive(root, "annotations"), m);
  m->info.is_sigmf = 1;
  cJSON_Delete(root);
  if (st) prx_sigmf_read_meta_clear(m);
  return st;
}

/* The public parsers give a prx_format: a datatype only the reader converts has none. */
static prx_status converted_only(void) {
  return prx_fail(PRX_ERR_UNSUPPORTED,
                  "the recording's core:datatype has no prx_format: prx_iq_open reads it "
                  "(converted to cf32 as it reads)");
}

prx_status prx_sigmf_parse_meta(const char *text, size_t len, prx_iq_info *info) {
  if (!info) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_parse_meta: NULL output");
  prx_sigmf_read_meta m;
  prx_status st = prx_sigmf_parse_meta_full(text, len, &m);
  const int converted = !st && m.conv_channels;
  prx_sigmf_read_meta_clear(&m);
  if (converted) return converted_only();
  if (!st) *info = m.info;
  return st;
}

prx_status prx_sigmf_recording_parse(const char *text, size_t len, prx_iq_info *info,
                                     prx_sigmf_recording **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_recording_parse: NULL output");
  *out = NULL;
  prx_sigmf_read_meta m;
  prx_status st = prx_sigmf_parse_meta_full(text, len, &m);
  if (!st && m.conv_channels) {
    prx_sigmf_read_meta_clear(&m);
    return converted_only();
  }
  if (st) return st;
  if (info) *info = m.info;
  free(m.dataset);
  *out = m.rec;
  return PRX_OK;
}
