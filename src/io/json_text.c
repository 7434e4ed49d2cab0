/* JSON text in cJSON_Print's formatted layout (json_text.h). */
#include "json_text.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prx_json_text_init(prx_json_text *t, char *buf, size_t cap) {
  t->n = 0;
  t->own = !buf || cap == 0;
  t->cap = t->own ? (cap < 64 ? 64 : cap) : cap;
  t->p = t->own ? malloc(t->cap) : buf;
  t->nomem = !t->p;
  if (t->p) t->p[0] = '\0';
}

void prx_json_text_free(prx_json_text *t) {
  if (t->own) free(t->p);
  t->p = NULL;
  t->n = t->cap = 0;
}

/* Room for k more bytes and the NUL; 0 where it cannot be made (nomem set). */
static int room(prx_json_text *t, size_t k) {
  if (t->nomem) return 0;
  if (t->n + k + 1 <= t->cap) return 1;
  size_t cap = t->cap;
  while (cap < t->n + k + 1) cap *= 2;
  char *p = t->own ? realloc(t->p, cap) : malloc(cap); /* the caller's buffer left as it is */
  if (!p) {
    t->nomem = 1;
    return 0;
  }
  if (!t->own) memcpy(p, t->p, t->n + 1);
  t->p = p;
  t->cap = cap;
  t->own = 1;
  return 1;
}

static void put(prx_json_text *t, const char *s, size_t k) {
  if (!room(t, k)) return;
  memcpy(t->p + t->n, s, k);
  t->n += k;
  t->p[t->n] = '\0';
}

static void put_c(prx_json_text *t, char c) { put(t, &c, 1); }

static void tabs(prx_json_text *t, int depth) {
  for (int i = 0; i < depth; i++) put_c(t, '\t');
}

int prx_json_text_end(prx_json_text *t) {
  put_c(t, '\n');
  return t->nomem ? -1 : 0;
}

void prx_json_open_object(prx_json_text *t) { put(t, "{\n", 2); }

/* cJSON ends every member with its comma (not the last) and a newline: the member's writer
 * puts its comma before the next key instead, so a member is "\n"-terminated by that key */
void prx_json_key(prx_json_text *t, const char *key, int depth, int first) {
  if (!first) put(t, ",\n", 2);
  tabs(t, depth);
  prx_json_string(t, key);
  put(t, ":\t", 2);
}

void prx_json_close_object(prx_json_text *t, int depth, int members) {
  if (members) put_c(t, '\n'); /* the last member's; an empty object is "{\n" and the tabs */
  tabs(t, depth);
  put_c(t, '}');
}

void prx_json_open_array(prx_json_text *t) { put_c(t, '['); }
void prx_json_array_next(prx_json_text *t) { put(t, ", ", 2); }
void prx_json_close_array(prx_json_text *t) { put_c(t, ']'); }

void prx_json_string(prx_json_text *t, const char *s) {
  if (!s) {
    put(t, "\"\"", 2);
    return;
  }
  put_c(t, '"');
  const unsigned char *u = (const unsigned char *)s;
  for (;;) {
    /* the run of bytes that need no escape, at once */
    size_t k = 0;
    while (u[k] >= 32 && u[k] != '"' && u[k] != '\\') k++;
    put(t, (const char *)u, k);
    u += k;
    if (!*u) break;
    char esc[8];
    switch (*u) {
    case '"': put(t, "\\\"", 2); break;
    case '\\': put(t, "\\\\", 2); break;
    case '\b': put(t, "\\b", 2); break;
    case '\f': put(t, "\\f", 2); break;
    case '\n': put(t, "\\n", 2); break;
    case '\r': put(t, "\\r", 2); break;
    case '\t': put(t, "\\t", 2); break;
    default: put(t, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", *u)); break;
    }
    u++;
  }
  put_c(t, '"');
}

/* A number's text as cJSON 1.7.15 prints a number item: "%1.15g" where it reads back within a
 * relative DBL_EPSILON, else "%1.17g" (NaN and infinities: null). A whole number under 10^15 is
 * its digits in both (printed here as an integer); a fractional value repeated from one document
 * to the next (the sample rate, the channel spacing, ... of 1024 channels' metadata) is printed
 * once per thread: "%1.15g" and its check by sscanf cost 0.5-1 us each. */
#define NUMBER_CACHE 64
static _Thread_local struct {
  double v;
  char text[32];
} number_cache[NUMBER_CACHE];

void prx_json_number(prx_json_text *t, double v) {
  char buf[32];
  if (isnan(v) || isinf(v)) {
    put(t, "null", 4);
    return;
  }
  if (v == floor(v) && fabs(v) < 1e15) { /* the digits from the last, then the sign */
    char *e = buf + sizeof buf, *d = e;
    uint64_t u = (uint64_t)fabs(v);
    do {
      *--d = (char)('0' + u % 10);
      u /= 10;
    } while (u);
    if (signbit(v)) *--d = '-';
    put(t, d, (size_t)(e - d));
    return;
  }
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  size_t i = (size_t)((bits * 0x9e3779b97f4a7c15ull) >> 58); /* 6 bits: NUMBER_CACHE */
  if (number_cache[i].text[0] && !memcmp(&number_cache[i].v, &v, sizeof v)) {
    put(t, number_cache[i].text, strlen(number_cache[i].text));
    return;
  }
  /* 15 digits where they read back within a relative DBL_EPSILON, else 17 */
  int len = snprintf(buf, sizeof buf, "%1.15g", v);
  double back = 0;
  if (sscanf(buf, "%lg", &back) != 1 ||
      !(fabs(back - v) <= fmax(fabs(back), fabs(v)) * DBL_EPSILON))
    len = snprintf(buf, sizeof buf, "%1.17g", v);
  if (len > 0 && (size_t)len < sizeof number_cache[i].text) {
    number_cache[i].v = v;
    memcpy(number_cache[i].text, buf, (size_t)len + 1);
  }
  put(t, buf, len > 0 ? (size_t)len : 0);
}

void prx_json_item(prx_json_text *t, const cJSON *item, int depth) {
  if (!item) return;
  if (cJSON_IsFalse(item)) {
    put(t, "false", 5);
  } else if (cJSON_IsTrue(item)) {
    put(t, "true", 4);
  } else if (cJSON_IsNull(item)) {
    put(t, "null", 4);
  } else if (cJSON_IsNumber(item)) {
    prx_json_number(t, item->valuedouble);
  } else if (cJSON_IsString(item)) {
    prx_json_string(t, item->valuestring);
  } else if (cJSON_IsRaw(item)) {
    if (item->valuestring) put(t, item->valuestring, strlen(item->valuestring)); /* as it is */
  } else if (cJSON_IsArray(item)) {
    prx_json_open_array(t);
    for (const cJSON *e = item->child; e; e = e->next) {
      prx_json_item(t, e, depth + 1);
      if (e->next) prx_json_array_next(t);
    }
    prx_json_close_array(t);
  } else if (cJSON_IsObject(item)) {
    prx_json_open_object(t);
    for (const cJSON *m = item->child; m; m = m->next) {
      prx_json_key(t, m->string, depth + 1, m == item->child);
      prx_json_item(t, m, depth + 1);
    }
    prx_json_close_object(t, depth, item->child != NULL);
  }
}
