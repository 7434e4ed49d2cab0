/* src/io/json_text.c against cJSON itself: random documents (nested objects and arrays, empty
 * ones, strings with every byte that needs an escape and bytes above 127, numbers whole and
 * fractional, at the int range's edges, very large and small, -0, NaN and infinities, raw text,
 * true, false, null) printed by prx_json_item must be cJSON_Print's text byte for byte, since the
 * SigMF writer's metadata is printed by it instead of cJSON_Print. */
#include "io/json_text.h"
#include "testutil.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t pick(test_rng *r, size_t n) { return (size_t)(test_rng_u64(r) % n); }

static void random_text(test_rng *r, char *s, size_t cap) {
  static const char special[] = "\"\\\b\f\n\r\t\x01\x1f /:{}[],";
  size_t n = pick(r, cap - 1);
  for (size_t i = 0; i < n; i++) {
    size_t k = pick(r, 4);
    s[i] = k == 0   ? special[pick(r, sizeof special - 1)]
           : k == 1 ? (char)(128 + pick(r, 128)) /* UTF-8's bytes pass as they are */
                    : (char)('a' + pick(r, 26));
  }
  s[n] = '\0';
}

static double random_number(test_rng *r) {
  static const double edges[] = {
      0.0,          -0.0,          1.0,           -1.0,         0.5,   195312.5,       8.1915e-05,
      97656.25,     1e-7,          1e-300,        1e300,        -1e15, 123456789012.0, 2147483647.0,
      2147483648.0, -2147483648.0, -2147483649.0, 2147483646.5, 0.1,   1.0 / 3.0,      DBL_MAX,
      DBL_MIN,      4.9e-324};
  switch (pick(r, 6)) {
  case 0: return edges[pick(r, sizeof edges / sizeof edges[0])];
  case 1: return (double)(int64_t)(test_rng_u64(r) >> pick(r, 64)) * (pick(r, 2) ? 1 : -1);
  case 2: return test_rng_gauss(r) * pow(10.0, (double)pick(r, 40) - 20);
  case 3: return (double)pick(r, 100000) / 64.0;
  case 4: return pick(r, 3) == 0 ? NAN : pick(r, 2) ? INFINITY : -INFINITY;
  default: return test_rng_uniform(r) * 1e6 - 5e5;
  }
}

static cJSON *random_item(test_rng *r, int depth) {
  char s[40];
  size_t kind = pick(r, depth < 4 ? 9 : 7);
  switch (kind) {
  case 0: return cJSON_CreateFalse();
  case 1: return cJSON_CreateTrue();
  case 2: return cJSON_CreateNull();
  case 3:
  case 4: return cJSON_CreateNumber(random_number(r));
  case 5: random_text(r, s, sizeof s); return cJSON_CreateString(s);
  case 6: return cJSON_CreateRaw(pick(r, 2) ? "12.5e3" : "{\"a\":[1,2]}");
  case 7: {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0, n = pick(r, 5); i < n; i++)
      cJSON_AddItemToArray(a, random_item(r, depth + 1));
    return a;
  }
  default: {
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0, n = pick(r, 6); i < n; i++) {
      random_text(r, s, sizeof s);
      cJSON_AddItemToObject(o, s, random_item(r, depth + 1));
    }
    return o;
  }
  }
}

int main(void) {
  test_rng r;
  test_rng_seed(&r, 20261203);
  size_t bytes = 0;
  for (int doc = 0; doc < 3000; doc++) {
    cJSON *root = doc % 3 ? cJSON_CreateObject() : random_item(&r, 0);
    for (size_t i = 0, n = doc % 3 ? pick(&r, 8) : 0; i < n; i++) {
      char key[40];
      random_text(&r, key, sizeof key);
      cJSON_AddItemToObject(root, key, random_item(&r, 1));
    }
    char *want = cJSON_Print(root);
    prx_json_text t;
    char small[300];
    size_t cap = pick(&r, sizeof small); /* small rooms too: the growth out of the caller's */
    prx_json_text_init(&t, doc % 2 ? small : NULL, cap);
    prx_json_item(&t, root, 0);
    char *got = prx_json_text_end(&t) ? NULL : t.p;
    size_t wl = want ? strlen(want) : 0;
    int same = want && got && strlen(got) == wl + 1 && !memcmp(got, want, wl) && got[wl] == '\n';
    CHECK(same, "document %d: prx_json_item's text differs from cJSON_Print's", doc);
    if (!same && want && got) {
      size_t k = 0;
      while (got[k] && got[k] == want[k]) k++;
      fprintf(stderr, "first difference at byte %zu:\n cJSON: %.60s\n ours:  %.60s\n", k, want + k,
              got + k);
      free(want);
      prx_json_text_free(&t);
      cJSON_Delete(root);
      break;
    }
    bytes += wl;
    free(want);
    prx_json_text_free(&t);
    cJSON_Delete(root);
  }
  fprintf(stderr, "test_json_text: %zu bytes of documents compared\n", bytes);
  return test_finish("test_json_text");
}
