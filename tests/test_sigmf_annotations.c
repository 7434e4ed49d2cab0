/* The SigMF writer's annotations and core-field overrides: annotations added out of order come
 * out sorted by core:sample_start (equal starts in the order added) with exactly the fields given;
 * bad frequency edges and out-of-range sample numbers are refused; a core field set by the
 * caller (core:recorder) replaces the writer's default. The metadata is read back with cJSON. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static cJSON *read_json(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  return cJSON_Parse(text);
}

int main(void) {
  char dir[] = "/tmp/prx_sigmf_annXXXXXX", base[64], meta_path[80], data_path[80];
  if (!mkdtemp(dir)) {
    fprintf(stderr, "cannot create a temporary directory\n");
    return 1;
  }
  snprintf(base, sizeof base, "%s/rec", dir);
  snprintf(meta_path, sizeof meta_path, "%s.sigmf-meta", base);
  snprintf(data_path, sizeof data_path, "%s.sigmf-data", base);
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.sample_rate = 48000;
  prx_sigmf_writer *w = NULL;
  CHECK_OK(prx_sigmf_writer_open(base, &meta, &w));
  if (!w) return test_finish("test_sigmf_annotations");
  /* starts 500, 0, 500, 100: sorted 0, 100, 500 (first added), 500 (second added) */
  prx_sigmf_annotation a[4] = {
      {500, 10, 0, 0, 0, "third", NULL, NULL},
      {0, 0, 1, -1200.5, 1200.5, "first", "a carrier", "test"},
      {500, 20, 0, 0, 0, "fourth", NULL, NULL},
      {100, 5, 1, 7, 7, NULL, NULL, NULL},
  };
  for (int i = 0; i < 4; i++) CHECK_OK(prx_sigmf_writer_add_annotation(w, &a[i]));
  prx_sigmf_annotation bad = {0, 1, 1, 10, 5, NULL, NULL, NULL};
  CHECK(prx_sigmf_writer_add_annotation(w, &bad) == PRX_ERR_INVALID &&
            strstr(prx_last_error(), "lower <= upper"),
        "edges 10 > 5 accepted (%s)", prx_last_error());
  bad.freq_upper_edge = NAN;
  CHECK(prx_sigmf_writer_add_annotation(w, &bad) == PRX_ERR_INVALID, "NaN edge accepted");
  bad = (prx_sigmf_annotation){(uint64_t)1 << 53, 1, 0, 0, 0, NULL, NULL, NULL};
  CHECK(prx_sigmf_writer_add_annotation(w, &bad) == PRX_ERR_INVALID, "start 2^53 accepted");
  CHECK(prx_sigmf_writer_add_annotation(w, NULL) == PRX_ERR_INVALID, "NULL annotation accepted");
  CHECK_OK(prx_sigmf_writer_set_string(w, "core:recorder", "a test recorder"));
  prx_cf32 x[3] = {{1, 2}, {3, 4}, {5, 6}};
  CHECK_OK(prx_sigmf_write(w, x, 3));
  CHECK_OK(prx_sigmf_writer_close(w));

  cJSON *root = read_json(meta_path);
  CHECK(root != NULL, "cannot read back %s", meta_path);
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "global");
  const cJSON *rec = cJSON_GetObjectItemCaseSensitive(g, "core:recorder");
  CHECK(cJSON_IsString(rec) && !strcmp(rec->valuestring, "a test recorder"),
        "core:recorder is not the caller's");
  int recorders = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, g) recorders += !strcmp(e->string, "core:recorder");
  CHECK(recorders == 1, "%d core:recorder fields", recorders);
  const cJSON *ann = cJSON_GetObjectItemCaseSensitive(root, "annotations");
  CHECK(cJSON_GetArraySize(ann) == 4, "%d annotations, expected 4", cJSON_GetArraySize(ann));
  static const double starts[4] = {0, 100, 500, 500};
  static const char *labels[4] = {"first", NULL, "third", "fourth"};
  static const int n_fields[4] = {6, 4, 3, 3};
  int i = 0;
  cJSON_ArrayForEach(e, ann) {
    if (i >= 4) break;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "core:sample_start"),
                *l = cJSON_GetObjectItemCaseSensitive(e, "core:label");
    CHECK(cJSON_IsNumber(s) && s->valuedouble == starts[i], "annotation %d: start", i);
    CHECK(labels[i] ? cJSON_IsString(l) && !strcmp(l->valuestring, labels[i]) : l == NULL,
          "annotation %d: label", i);
    CHECK(cJSON_GetArraySize(e) == n_fields[i], "annotation %d: %d fields, expected %d", i,
          cJSON_GetArraySize(e), n_fields[i]);
    i++;
  }
  const cJSON *first = cJSON_GetArrayItem(ann, 0);
  CHECK(cJSON_GetObjectItemCaseSensitive(first, "core:sample_count") == NULL,
        "a sample count of 0 is written");
  CHECK(cJSON_GetObjectItemCaseSensitive(first, "core:freq_lower_edge")->valuedouble == -1200.5 &&
            cJSON_GetObjectItemCaseSensitive(first, "core:freq_upper_edge")->valuedouble == 1200.5,
        "frequency edges");
  cJSON_Delete(root);
  remove(meta_path);
  remove(data_path);
  rmdir(dir);
  return test_finish("test_sigmf_annotations");
}
