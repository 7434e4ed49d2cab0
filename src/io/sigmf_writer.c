/* Streaming SigMF writer (SigMF specification v1.0.0). A recording is complete or absent:
 *
 * - open removes BASE.sigmf-meta and BASE.sigmf-data of an earlier run (metadata first), so no
 *   old metadata ever sits beside new data, then creates a temporary data file beside them
 *   (BASE.sigmf-data.tmp-PID-N, a name no other writer uses);
 * - samples go to the temporary file as they come, through a FILE buffer;
 * - close checks every byte written, renames the data into place, then writes the metadata to a
 *   temporary file and renames it into place last: a .sigmf-meta exists only beside the whole
 *   data it describes;
 * - after any error (a write, the close, the rename, the metadata) the recording is removed:
 *   no metadata, no data file; the first error is kept and returned by every later call and by
 *   close, so a full disk is never silent.
 *
 * A process killed mid-write leaves at most its temporary files (never a .sigmf-meta). */
#include "io_internal.h"

#include "../core/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct prx_sigmf_writer {
  FILE *data;
  char *base, *data_path, *meta_path;
  char *tmp_path;      /* the data file while it is written */
  prx_sigmf_meta meta; /* strings point at copies owned here */
  char *strings[4];
  cJSON *fields;      /* global fields set by the caller, in the order set */
  cJSON *extensions;  /* core:extensions */
  cJSON *annotations; /* sorted by core:sample_start */
  uint64_t samples;
  size_t sample_size;
  prx_status err; /* first error, sticky */
  char err_msg[600];
};

prx_sigmf_meta prx_sigmf_meta_default(void) {
  prx_sigmf_meta m;
  memset(&m, 0, sizeof m);
  m.format = PRX_CF32;
  return m;
}

static char *concat2(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = malloc(na + nb + 1);
  if (!s) return NULL;
  memcpy(s, a, na);
  memcpy(s + na, b, nb + 1);
  return s;
}

/* Records the writer's first error (and raises it as this thread's error). */
static prx_status keep(prx_sigmf_writer *w, prx_status st) {
  if (!w->err) {
    w->err = st;
    snprintf(w->err_msg, sizeof w->err_msg, "%s", prx_last_error());
  }
  return st;
}

static prx_status raise_kept(const prx_sigmf_writer *w) {
  return prx_fail(w->err, "%s", w->err_msg);
}

static void free_writer(prx_sigmf_writer *w) {
  if (w->data) fclose(w->data);
  for (size_t i = 0; i < 4; i++) free(w->strings[i]);
  cJSON_Delete(w->fields);
  cJSON_Delete(w->extensions);
  cJSON_Delete(w->annotations);
  free(w->base);
  free(w->data_path);
  free(w->meta_path);
  free(w->tmp_path);
  free(w);
}

/* Removes a file of an earlier run; a missing file is fine, anything else (a directory, no
 * permission) is an error. */
static prx_status remove_stale(const char *path) {
  if (unlink(path) == 0 || errno == ENOENT) return PRX_OK;
  return prx_fail(PRX_ERR_IO, "cannot remove '%s' of an earlier run: %s", path, strerror(errno));
}

/* Creates a new file "PATH.tmp-PID-N" (O_EXCL: never one of another writer or process) for
 * writing; *tmp receives its malloc'd name. */
static prx_status create_temp(const char *path, FILE **f, char **tmp) {
  *f = NULL;
  *tmp = NULL;
  size_t cap = strlen(path) + 48;
  char *name = malloc(cap);
  if (!name) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  for (unsigned attempt = 0;; attempt++) {
    snprintf(name, cap, "%s.tmp-%ld-%u", path, (long)getpid(), attempt);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *f = fdopen(fd, "wb");
      if (!*f) {
        int e = errno;
        close(fd);
        unlink(name);
        free(name);
        return prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(e));
      }
      *tmp = name;
      return PRX_OK;
    }
    if (errno != EEXIST || attempt >= 1000) {
      prx_status st = prx_fail(PRX_ERR_IO, "cannot create '%s': %s", name, strerror(errno));
      free(name);
      return st;
    }
  }
}

prx_status prx_sigmf_writer_open(const char *base, const prx_sigmf_meta *meta,
                                 prx_sigmf_writer **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_open: NULL output pointer");
  *out = NULL;
  if (!base || !base[0] || !meta)
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_open: no base path or metadata");
  if (meta->format != PRX_CF32 && meta->format != PRX_CI16 && meta->format != PRX_CI8 &&
      meta->format != PRX_CU8)
    return prx_fail(PRX_ERR_INVALID, "SigMF writer: format must be cf32, ci16, ci8 or cu8 (got %d)",
                    (int)meta->format);
  if (!(meta->sample_rate > 0 && isfinite(meta->sample_rate)))
    return prx_fail(PRX_ERR_INVALID, "SigMF writer: sample rate must be positive, got %g",
                    meta->sample_rate);
  if (!isfinite(meta->center_freq))
    return prx_fail(PRX_ERR_INVALID, "SigMF writer: centre frequency must be finite");
  prx_sigmf_writer *w = calloc(1, sizeof *w);
  if (!w) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a SigMF writer");
  w->meta = *meta;
  w->sample_size = prx_format_size(meta->format);
  const char *src[4] = {meta->description, meta->author, meta->hw, meta->datetime};
  int nomem = 0;
  for (size_t i = 0; i < 4; i++)
    if (src[i] && !(w->strings[i] = strdup(src[i]))) nomem = 1;
  w->meta.description = w->strings[0];
  w->meta.author = w->strings[1];
  w->meta.hw = w->strings[2];
  w->meta.datetime = w->strings[3];
  w->base = strdup(base);
  w->data_path = concat2(base, ".sigmf-data");
  w->meta_path = concat2(base, ".sigmf-meta");
  w->fields = cJSON_CreateObject();
  w->extensions = cJSON_CreateArray();
  w->annotations = cJSON_CreateArray();
  if (nomem || !w->base || !w->data_path || !w->meta_path || !w->fields || !w->extensions ||
      !w->annotations) {
    free_writer(w);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate a SigMF writer");
  }
  /* the earlier run's metadata goes first: from here on no metadata describes this base */
  prx_status st = remove_stale(w->meta_path);
  if (!st) st = remove_stale(w->data_path);
  if (!st) st = create_temp(w->data_path, &w->data, &w->tmp_path);
  if (st) {
    free_writer(w);
    return st;
  }
  *out = w;
  return PRX_OK;
}

prx_status prx_sigmf_writer_add_extension(prx_sigmf_writer *w, const char *name,
                                          const char *version, int optional) {
  if (!w || !name || !version)
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_add_extension: NULL argument");
  if (!name[0] || strchr(name, ':') || !strcmp(name, "core") || !version[0])
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF extension name must be a non-empty namespace without ':' (not core), "
                    "with a version: got '%s' '%s'",
                    name, version);
  cJSON *e = cJSON_CreateObject();
  if (!e || !cJSON_AddStringToObject(e, "name", name) ||
      !cJSON_AddStringToObject(e, "version", version) ||
      !cJSON_AddBoolToObject(e, "optional", optional != 0)) {
    cJSON_Delete(e);
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  /* declared again: the new declaration replaces the old one */
  int i = 0;
  const cJSON *old;
  cJSON_ArrayForEach(old, w->extensions) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(old, "name");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) {
      cJSON_ReplaceItemInArray(w->extensions, i, e);
      return PRX_OK;
    }
    i++;
  }
  cJSON_AddItemToArray(w->extensions, e);
  return PRX_OK;
}

/* A key the caller may set: "namespace:name" with core or a declared namespace, and not one
 * of the fields the writer owns. */
static prx_status check_key(const prx_sigmf_writer *w, const char *key) {
  const char *colon = key ? strchr(key, ':') : NULL;
  if (!colon || colon == key || !colon[1] || strchr(colon + 1, ':'))
    return prx_fail(PRX_ERR_INVALID, "SigMF field name must be \"namespace:name\", got '%s'",
                    key ? key : "(null)");
  size_t ns_len = (size_t)(colon - key);
  if (ns_len == 4 && !strncmp(key, "core", 4)) {
    static const char *const owned[] = {"datatype", "sample_rate", "version", "extensions"};
    for (size_t i = 0; i < 4; i++)
      if (!strcmp(colon + 1, owned[i]))
        return prx_fail(PRX_ERR_INVALID, "SigMF field %s is written by the writer itself", key);
    return PRX_OK;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, w->extensions) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (strlen(n->valuestring) == ns_len && !strncmp(n->valuestring, key, ns_len)) return PRX_OK;
  }
  return prx_fail(
      PRX_ERR_INVALID,
      "SigMF field %s: namespace '%.*s' is not declared (prx_sigmf_writer_add_extension)", key,
      (int)ns_len, key);
}

static prx_status set_field(prx_sigmf_writer *w, const char *key, cJSON *value) {
  if (!value) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  prx_status st = check_key(w, key);
  if (st) {
    cJSON_Delete(value);
    return st;
  }
  if (cJSON_GetObjectItemCaseSensitive(w->fields, key))
    cJSON_ReplaceItemInObjectCaseSensitive(w->fields, key, value);
  else
    cJSON_AddItemToObject(w->fields, key, value);
  return PRX_OK;
}

prx_status prx_sigmf_writer_set_number(prx_sigmf_writer *w, const char *key, double value) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_set_number: NULL writer");
  if (!isfinite(value))
    return prx_fail(PRX_ERR_INVALID, "SigMF field %s: %g is not a JSON number", key ? key : "?",
                    value);
  return set_field(w, key, cJSON_CreateNumber(value));
}

prx_status prx_sigmf_writer_set_string(prx_sigmf_writer *w, const char *key, const char *value) {
  if (!w || !value) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_set_string: NULL argument");
  return set_field(w, key, cJSON_CreateString(value));
}

prx_status prx_sigmf_writer_add_annotation(prx_sigmf_writer *w, const prx_sigmf_annotation *a) {
  if (!w || !a) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_add_annotation: NULL argument");
  if (a->has_freq && !(isfinite(a->freq_lower_edge) && isfinite(a->freq_upper_edge) &&
                       a->freq_lower_edge <= a->freq_upper_edge))
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF annotation at sample %llu: frequency edges must be finite with lower <= "
                    "upper, got %g and %g",
                    (unsigned long long)a->sample_start, a->freq_lower_edge, a->freq_upper_edge);
  if (a->sample_start >= ((uint64_t)1 << 53) || a->sample_count >= ((uint64_t)1 << 53))
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF annotation: sample start and count must be below 2^53 (JSON numbers)");
  cJSON *o = cJSON_CreateObject();
  int ok = o && cJSON_AddNumberToObject(o, "core:sample_start", (double)a->sample_start);
  if (ok && a->sample_count)
    ok = cJSON_AddNumberToObject(o, "core:sample_count", (double)a->sample_count) != NULL;
  if (ok && a->has_freq)
    ok = cJSON_AddNumberToObject(o, "core:freq_lower_edge", a->freq_lower_edge) &&
         cJSON_AddNumberToObject(o, "core:freq_upper_edge", a->freq_upper_edge);
  if (ok && a->label) ok = cJSON_AddStringToObject(o, "core:label", a->label) != NULL;
  if (ok && a->comment) ok = cJSON_AddStringToObject(o, "core:comment", a->comment) != NULL;
  if (ok && a->generator) ok = cJSON_AddStringToObject(o, "core:generator", a->generator) != NULL;
  if (!ok) {
    cJSON_Delete(o);
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  /* after the last annotation that starts at or before this one */
  int at = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, w->annotations) {
    if (cJSON_GetObjectItemCaseSensitive(e, "core:sample_start")->valuedouble >
        (double)a->sample_start)
      break;
    at++;
  }
  /* the later ones moved behind it (cJSON 1.7.15's cJSON_InsertItemInArray loses items) */
  cJSON *later = w->annotations->child;
  for (int i = 0; i < at; i++) later = later->next;
  cJSON_AddItemToArray(w->annotations, o);
  while (later && later != o) {
    cJSON *next = later->next;
    cJSON_AddItemToArray(w->annotations, cJSON_DetachItemViaPointer(w->annotations, later));
    later = next;
  }
  return PRX_OK;
}

prx_status prx_sigmf_write(prx_sigmf_writer *w, const void *samples, size_t n) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_write: NULL writer");
  if (w->err) return raise_kept(w);
  if (n == 0) return PRX_OK;
  if (!samples) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_write: NULL samples");
  const unsigned char *p = samples;
  size_t done = 0;
  if (PRX_HOST_BIG_ENDIAN && w->sample_size > 2) {
    /* stored little-endian: swap through a small bounce buffer */
    unsigned char tmp[4096];
    size_t per = sizeof tmp / w->sample_size;
    while (done < n) {
      size_t k = n - done < per ? n - done : per;
      memcpy(tmp, p + done * w->sample_size, k * w->sample_size);
      prx_io_swap_samples(w->meta.format, tmp, k);
      if (fwrite(tmp, w->sample_size, k, w->data) != k) break;
      done += k;
    }
  } else {
    done = fwrite(p, w->sample_size, n, w->data);
  }
  if (done != n)
    return keep(w, prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->data_path,
                            strerror(errno ? errno : EIO)));
  w->samples += n;
  return PRX_OK;
}

uint64_t prx_sigmf_writer_samples(const prx_sigmf_writer *w) { return w ? w->samples : 0; }

/* The metadata document. */
static cJSON *build_meta(prx_sigmf_writer *w) {
  cJSON *root = cJSON_CreateObject(), *g = cJSON_CreateObject(), *caps = cJSON_CreateArray(),
        *cap = cJSON_CreateObject(), *ann = cJSON_CreateArray();
  if (!root || !g || !caps || !cap || !ann) {
    cJSON_Delete(root);
    cJSON_Delete(g);
    cJSON_Delete(caps);
    cJSON_Delete(cap);
    cJSON_Delete(ann);
    return NULL;
  }
  cJSON_AddItemToObject(root, "global", g);
  cJSON_AddItemToObject(root, "captures", caps);
  cJSON_AddItemToArray(caps, cap);
  cJSON_AddItemToObject(root, "annotations", ann);
  while (w->annotations->child) /* moved over, in order */
    cJSON_AddItemToArray(ann, cJSON_DetachItemViaPointer(w->annotations, w->annotations->child));
  int ok = cJSON_AddStringToObject(g, "core:datatype", prx_sigmf_datatype_name(w->meta.format)) &&
           cJSON_AddNumberToObject(g, "core:sample_rate", w->meta.sample_rate) &&
           cJSON_AddStringToObject(g, "core:version", "1.0.0") &&
           cJSON_AddStringToObject(g, "core:recorder", "polyrx");
  if (ok && w->meta.description)
    ok = cJSON_AddStringToObject(g, "core:description", w->meta.description) != NULL;
  if (ok && w->meta.author) ok = cJSON_AddStringToObject(g, "core:author", w->meta.author) != NULL;
  if (ok && w->meta.hw) ok = cJSON_AddStringToObject(g, "core:hw", w->meta.hw) != NULL;
  if (ok && cJSON_GetArraySize(w->extensions) > 0) {
    cJSON_AddItemToObject(g, "core:extensions", w->extensions);
    w->extensions = NULL;
  }
  /* the caller's fields, moved over (a core field set by the caller replaces the default) */
  while (ok && w->fields->child) {
    cJSON *f = cJSON_DetachItemViaPointer(w->fields, w->fields->child);
    /* replaced via the pointer: cJSON_ReplaceItemInObject would free f->string, the key it is
     * given, before copying it */
    cJSON *old = cJSON_GetObjectItemCaseSensitive(g, f->string);
    if (old)
      cJSON_ReplaceItemViaPointer(g, old, f);
    else
      cJSON_AddItemToObject(g, f->string, f);
  }
  if (ok)
    ok = cJSON_AddNumberToObject(cap, "core:sample_start", 0) &&
         cJSON_AddNumberToObject(cap, "core:frequency", w->meta.center_freq);
  if (ok && w->meta.datetime)
    ok = cJSON_AddStringToObject(cap, "core:datetime", w->meta.datetime) != NULL;
  if (!ok) {
    cJSON_Delete(root);
    return NULL;
  }
  return root;
}

/* Writes the metadata to a temporary file and renames it into place. */
static prx_status write_meta(prx_sigmf_writer *w) {
  cJSON *root = build_meta(w);
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) return prx_fail(PRX_ERR_NOMEM, "out of memory building the SigMF metadata");
  FILE *f = NULL;
  char *tmp = NULL;
  prx_status st = create_temp(w->meta_path, &f, &tmp);
  if (!st) {
    size_t len = strlen(text);
    errno = 0;
    int bad = fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF || fflush(f) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
      bad = 1;
      e = errno;
    }
    if (bad) {
      st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->meta_path, strerror(e ? e : EIO));
      unlink(tmp);
    } else if (rename(tmp, w->meta_path) != 0) {
      st = prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, w->meta_path,
                    strerror(errno));
      unlink(tmp);
    }
  }
  free(text);
  free(tmp);
  return st;
}

prx_status prx_sigmf_writer_close(prx_sigmf_writer *w) {
  if (!w) return PRX_OK;
  /* every buffered byte is written and checked before the file is called finished */
  FILE *f = w->data;
  w->data = NULL;
  errno = 0;
  int bad = fflush(f) != 0 || ferror(f);
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  if (bad)
    keep(w, prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->data_path, strerror(e ? e : EIO)));
  if (w->err) {
    unlink(w->tmp_path); /* data that is not all there is no recording */
  } else if (rename(w->tmp_path, w->data_path) != 0) {
    keep(w, prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp_path, w->data_path,
                     strerror(errno)));
    unlink(w->tmp_path);
  } else {
    /* the metadata last: it exists only beside the whole data */
    prx_status st = write_meta(w);
    if (st) {
      keep(w, st);
      unlink(w->data_path);
    }
  }
  prx_status st = w->err ? raise_kept(w) : PRX_OK;
  free_writer(w);
  return st;
}

void prx_sigmf_writer_discard(prx_sigmf_writer *w) {
  if (!w) return;
  fclose(w->data);
  w->data = NULL;
  unlink(w->tmp_path);
  free_writer(w);
}
