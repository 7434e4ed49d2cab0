/* JSON text written straight into a growing buffer, in cJSON_Print's formatted layout (tabs for
 * depth, ":\t" after a key, ", " between array elements), byte for byte what cJSON_Print makes of
 * the same document, so that a document can be printed without first being built as a cJSON
 * tree: the SigMF writer's metadata (1024 recordings finished at a stream's end: the tree's
 * making, printing and freeing were ~70 % of each recording's finish). Not installed. */
#ifndef PRX_JSON_TEXT_H
#define PRX_JSON_TEXT_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct {
  char *p;       /* NUL-terminated text */
  size_t n, cap; /* its length and room */
  int own;       /* p is malloc'd here (else the caller's buffer, until it grows) */
  int nomem;     /* a growth failed: the text is incomplete */
} prx_json_text;

/* An empty text in the caller's buffer of cap bytes (NULL: one malloc'd here), moved to a
 * malloc'd one where it outgrows it: a document of a few KiB printed without an allocation (a
 * malloc of that size after many small frees consolidates glibc's fast bins). */
void prx_json_text_init(prx_json_text *t, char *buf, size_t cap);
/* Ends the document with a newline; non-zero where a growth failed (the text is incomplete). */
int prx_json_text_end(prx_json_text *t);
/* Frees what the text allocated (not the caller's buffer). */
void prx_json_text_free(prx_json_text *t);

/* Pieces of the formatted layout. An object's members are written at depth d + 1 (the top
 * object's at 1): prx_json_open_object, then per member prx_json_key (its depth, its comma from
 * `first`) and its value, then prx_json_close_object(d, whether it had members). Arrays likewise,
 * their elements separated by prx_json_array_next. */
void prx_json_open_object(prx_json_text *t);
void prx_json_close_object(prx_json_text *t, int depth, int members);
void prx_json_key(prx_json_text *t, const char *key, int depth, int first);
void prx_json_open_array(prx_json_text *t);
void prx_json_array_next(prx_json_text *t);
void prx_json_close_array(prx_json_text *t);

/* Values: a string (escaped as cJSON escapes), a number (printed as cJSON 1.7.15 prints a number
 * item: "%1.15g" where it reads back, else "%1.17g"), and any cJSON item (raw ones as they are,
 * members at depth + 1). */
void prx_json_string(prx_json_text *t, const char *s);
void prx_json_number(prx_json_text *t, double v);
void prx_json_item(prx_json_text *t, const cJSON *item, int depth);

#endif
