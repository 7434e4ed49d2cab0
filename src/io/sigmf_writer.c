/* Streaming SigMF writer (SigMF specification v1.0.0). A recording is complete or absent:
 *
 * - open removes BASE.sigmf-meta and BASE.sigmf-data of an earlier run (metadata first), so no
 *   old metadata ever sits beside new data, then creates a temporary data file beside them
 *   (BASE.sigmf-data.tmp-PID-N, a name no other writer uses);
 * - samples go to the temporary file as they come, through a FILE buffer;
 * - close checks every byte written, renames the data into place, then writes the metadata last
 *   (an unnamed file linked into place once whole, else a temporary file and a rename): a
 *   .sigmf-meta exists only beside the whole data it describes; the unnamed file may be made
 *   at the start (prx_sigmf_writer_prepare_meta) and held open until then;
 *   prx_sigmf_writer_end_data does close's first step (flush and close the data file, errors
 *   kept) earlier, on the caller's thread of choice (a writer thread that has written its last
 *   samples);
 * - after any error (a write, the close, the rename, the metadata) the recording is removed:
 *   no metadata, no data file; the first error is kept and returned by every later call and by
 *   close, so a full disk is never silent.
 *
 * A process killed mid-write leaves at most its temporary files (never a .sigmf-meta).
 *
 * Archive mode (a base ending in .sigmf): the temporary file is the tar archive itself, built
 * as the samples come: a directory header B/, a placeholder header for B/B.sigmf-data, the
 * samples; close pads the data member, appends B/B.sigmf-meta and the end marker, writes the
 * data member's real header over the placeholder (its size is known only then) and renames
 * the archive into place. The samples are written once, never copied. */
#include "io_internal.h"

#include "../core/internal.h"
#include "json_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One capture segment as written. */
typedef struct {
  uint64_t start;
  double frequency;
  char *datetime;
} capture;

struct prx_sigmf_writer {
  FILE *data;
  char *base, *data_path, *meta_path;
  char *tmp_path;      /* the data file while it is written */
  prx_sigmf_meta meta; /* strings point at copies owned here */
  char *strings[4];
  cJSON *fields;      /* global fields set by the caller, in the order set */
  cJSON *extensions;  /* core:extensions */
  cJSON *annotations; /* sorted by core:sample_start */
  capture *captures;  /* [0] from the meta, then by increasing start */
  size_t n_captures, cap_captures;
  int archive;  /* 1: base is a .sigmf archive being built in tmp_path */
  char *member; /* archive mode: B, the recording's name inside the archive */
  uint64_t samples;
  size_t sample_size;
  int meta_fd;    /* the metadata's unnamed file made ahead (prepare_meta), else -1 */
  char *buf;      /* the data file's buffer where the caller sized it (set_buffer), else NULL */
  int direct;     /* the files under their own names at once (prx_sigmf_writer_open_direct) */
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
  free(w->buf); /* after the file that used it is closed */
  /* a direct writer's metadata file made ahead and never completed is no recording's */
  if (w->direct && w->meta_fd >= 0) unlink(w->meta_path);
  for (size_t i = 0; i < 4; i++) free(w->strings[i]);
  cJSON_Delete(w->fields);
  cJSON_Delete(w->extensions);
  cJSON_Delete(w->annotations);
  for (size_t i = 0; i < w->n_captures; i++) free(w->captures[i].datetime);
  free(w->captures);
  free(w->member);
  free(w->base);
  free(w->data_path);
  free(w->meta_path);
  free(w->tmp_path);
  if (w->meta_fd >= 0) close(w->meta_fd); /* an unnamed file never linked vanishes */
  free(w);
}

/* Removes a file of an earlier run; a missing file is fine, anything else (a directory, no
 * permission) is an error. */
static prx_status remove_stale(const char *path) {
  if (unlink(path) == 0 || errno == ENOENT) return PRX_OK;
  return prx_fail(PRX_ERR_IO, "cannot remove '%s' of an earlier run: %s", path, strerror(errno));
}

prx_status prx_io_create_temp(const char *path, const char *mode, FILE **f, char **tmp) {
  *f = NULL;
  *tmp = NULL;
  size_t cap = strlen(path) + 48;
  char *name = malloc(cap);
  if (!name) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  for (unsigned attempt = 0;; attempt++) {
    snprintf(name, cap, "%s.tmp-%ld-%u", path, (long)getpid(), attempt);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *f = fdopen(fd, mode);
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

/* The data file of a direct writer, created under its own name (none may be there). */
static prx_status create_direct(prx_sigmf_writer *w) {
  int fd = open(w->data_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return prx_fail(PRX_ERR_IO, "cannot create '%s': %s", w->data_path, strerror(errno));
  FILE *f = fdopen(fd, "wb");
  char *name = f ? strdup(w->data_path) : NULL;
  if (!name) {
    if (f)
      fclose(f);
    else
      close(fd);
    unlink(w->data_path);
    return prx_fail(PRX_ERR_NOMEM, "cannot open '%s'", w->data_path);
  }
  w->data = f;
  w->tmp_path = name; /* what a failure removes */
  return PRX_OK;
}

/* How open_writer treats the base's files: an earlier run's removed first (prx_sigmf_writer_open),
 * none there (a directory the caller made: prx_sigmf_writer_open_new), or the files made under
 * their own names at once (prx_sigmf_writer_open_direct). */
enum { OPEN_REPLACE, OPEN_NEW, OPEN_DIRECT };

static prx_status open_writer(const char *base, const prx_sigmf_meta *meta, int how,
                              prx_sigmf_writer **out) {
  int remove_old = how == OPEN_REPLACE;
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_open: NULL output pointer");
  *out = NULL;
  if (!base || !base[0] || !meta)
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_open: no base path or metadata");
  if (meta->format != PRX_CF32 && meta->format != PRX_CI16 && meta->format != PRX_CI8 &&
      meta->format != PRX_CU8 && meta->format != PRX_CF16)
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF writer: format must be cf32, cf16, ci16, ci8 or cu8 (got %d)",
                    (int)meta->format);
  if (!(meta->sample_rate > 0 && isfinite(meta->sample_rate)))
    return prx_fail(PRX_ERR_INVALID, "SigMF writer: sample rate must be positive, got %g",
                    meta->sample_rate);
  if (!isfinite(meta->center_freq))
    return prx_fail(PRX_ERR_INVALID, "SigMF writer: centre frequency must be finite");
  prx_sigmf_writer *w = calloc(1, sizeof *w);
  if (!w) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a SigMF writer");
  w->meta_fd = -1;
  w->meta = *meta;
  w->direct = how == OPEN_DIRECT;
  w->sample_size = prx_format_size(meta->format);
  const char *src[4] = {meta->description, meta->author, meta->hw, meta->datetime};
  int nomem = 0;
  for (size_t i = 0; i < 4; i++)
    if (src[i] && !(w->strings[i] = strdup(src[i]))) nomem = 1;
  w->meta.description = w->strings[0];
  w->meta.author = w->strings[1];
  w->meta.hw = w->strings[2];
  w->meta.datetime = w->strings[3];
  size_t blen = strlen(base);
  w->archive = blen > 6 && !strcmp(base + blen - 6, ".sigmf");
  w->base = strdup(base);
  if (w->archive) {
    /* the archive itself is "the data file" of the messages; the member names go inside */
    const char *slash = strrchr(base, '/');
    const char *leaf = slash ? slash + 1 : base;
    w->member = strndup(leaf, strlen(leaf) - 6);
    w->data_path = strdup(base);
    w->meta_path = strdup(base);
  } else {
    w->data_path = concat2(base, ".sigmf-data");
    w->meta_path = concat2(base, ".sigmf-meta");
  }
  w->fields = cJSON_CreateObject();
  w->extensions = cJSON_CreateArray();
  w->annotations = cJSON_CreateArray();
  w->cap_captures = 4;
  w->captures = calloc(w->cap_captures, sizeof *w->captures);
  if (nomem || !w->base || !w->data_path || !w->meta_path || !w->fields || !w->extensions ||
      !w->annotations || !w->captures || (w->archive && !w->member)) {
    free_writer(w);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate a SigMF writer");
  }
  w->n_captures = 1;
  w->captures[0].frequency = meta->center_freq;
  if (meta->datetime && !(w->captures[0].datetime = strdup(meta->datetime))) {
    free_writer(w);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate a SigMF writer");
  }
  prx_status st = PRX_OK;
  if (w->archive) {
    if (!w->member[0] || strlen(w->member) > 80)
      st =
          prx_fail(PRX_ERR_INVALID,
                   "SigMF archive name '%s' must have a name of 1 to 80 bytes before .sigmf", base);
    if (!st && remove_old) st = remove_stale(w->data_path);
    if (!st) st = prx_io_create_temp(w->data_path, "wb", &w->data, &w->tmp_path);
    if (!st) {
      /* the directory B/ and a placeholder for the data member's header (completed at close) */
      unsigned char hdr[2 * PRX_TAR_BLOCK];
      char name[128];
      snprintf(name, sizeof name, "%s/", w->member);
      prx_tar_header(hdr, name, 0, '5', 0755, (int64_t)time(NULL));
      memset(hdr + PRX_TAR_BLOCK, 0, PRX_TAR_BLOCK);
      if (fwrite(hdr, 1, sizeof hdr, w->data) != sizeof hdr) {
        st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->tmp_path, strerror(errno));
        fclose(w->data);
        w->data = NULL;
        unlink(w->tmp_path);
      }
    }
  } else {
    /* the earlier run's metadata goes first: from here on no metadata describes this base */
    if (remove_old) st = remove_stale(w->meta_path);
    if (!st && remove_old) st = remove_stale(w->data_path);
    if (!st)
      st = w->direct ? create_direct(w)
                     : prx_io_create_temp(w->data_path, "wb", &w->data, &w->tmp_path);
  }
  if (st) {
    free_writer(w);
    return st;
  }
  *out = w;
  return PRX_OK;
}

prx_status prx_sigmf_writer_open(const char *base, const prx_sigmf_meta *meta,
                                 prx_sigmf_writer **out) {
  return open_writer(base, meta, OPEN_REPLACE, out);
}

prx_status prx_sigmf_writer_open_new(const char *base, const prx_sigmf_meta *meta,
                                     prx_sigmf_writer **out) {
  return open_writer(base, meta, OPEN_NEW, out);
}

prx_status prx_sigmf_writer_open_direct(const char *base, const prx_sigmf_meta *meta,
                                        prx_sigmf_writer **out) {
  size_t n = base ? strlen(base) : 0;
  if (n > 6 && !strcmp(base + n - 6, ".sigmf"))
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_open_direct: '%s' is an archive", base);
  return open_writer(base, meta, OPEN_DIRECT, out);
}

prx_status prx_sigmf_writer_add_capture(prx_sigmf_writer *w, uint64_t sample_start,
                                        double frequency, const char *datetime) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_add_capture: NULL writer");
  if (!isfinite(frequency))
    return prx_fail(PRX_ERR_INVALID, "SigMF capture at sample %llu: frequency must be finite",
                    (unsigned long long)sample_start);
  if (sample_start >= ((uint64_t)1 << 53))
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF capture: sample start must be below 2^53 (a JSON number)");
  capture *last = &w->captures[w->n_captures - 1];
  if (sample_start < last->start)
    return prx_fail(PRX_ERR_INVALID,
                    "SigMF capture at sample %llu is before the last capture's start %llu "
                    "(captures are added in sample order)",
                    (unsigned long long)sample_start, (unsigned long long)last->start);
  char *dt = datetime ? strdup(datetime) : NULL;
  if (datetime && !dt) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  if (sample_start == last->start) { /* replaces the capture that starts there */
    free(last->datetime);
    last->frequency = frequency;
    last->datetime = dt;
    return PRX_OK;
  }
  if (w->n_captures == w->cap_captures) {
    capture *nc = realloc(w->captures, 2 * w->cap_captures * sizeof *nc);
    if (!nc) {
      free(dt);
      return prx_fail(PRX_ERR_NOMEM, "out of memory");
    }
    w->captures = nc;
    w->cap_captures *= 2;
  }
  w->captures[w->n_captures++] = (capture){sample_start, frequency, dt};
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
  if (!w->data)
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_write: the data of '%s' was ended", w->data_path);
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

#define META_BUF 4096 /* the metadata's text printed on the stack up to this size */

/* The metadata text (with a final newline) into *t, starting in buf (prx_json_text_free frees
 * what it grew into); PRX_OK or out of memory. Printed straight from the writer's state in
 * cJSON_Print's layout (json_text.h): the global object (the writer's fields, a caller's field of
 * the same name in their place, then the caller's others in the order set), the captures (the
 * first, then every later one that starts inside the recording), the annotations. */
static prx_status meta_text(const prx_sigmf_writer *w, prx_json_text *t, char buf[META_BUF]) {
  prx_json_text_init(t, buf, META_BUF);
  prx_json_open_object(t);
  prx_json_key(t, "global", 1, 1);
  prx_json_open_object(t);
  /* the writer's own fields: a string, or the number where `number` is set; absent where
   * neither (an optional string not given) */
  const struct {
    const char *key, *str;
    int number;
    double num;
  } own[] = {{"core:datatype", prx_sigmf_datatype_name(w->meta.format), 0, 0},
             {"core:sample_rate", NULL, 1, w->meta.sample_rate},
             {"core:version", "1.0.0", 0, 0},
             {"core:recorder", "polyrx", 0, 0},
             {"core:description", w->meta.description, 0, 0},
             {"core:author", w->meta.author, 0, 0},
             {"core:hw", w->meta.hw, 0, 0}};
  const size_t n_own = sizeof own / sizeof own[0];
  int first = 1;
  for (size_t i = 0; i < n_own; i++) {
    if (!own[i].str && !own[i].number) continue;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(w->fields, own[i].key);
    prx_json_key(t, own[i].key, 2, first);
    first = 0;
    if (f)
      prx_json_item(t, f, 2);
    else if (own[i].str)
      prx_json_string(t, own[i].str);
    else
      prx_json_number(t, own[i].num);
  }
  if (cJSON_GetArraySize(w->extensions) > 0) {
    prx_json_key(t, "core:extensions", 2, 0);
    prx_json_item(t, w->extensions, 2);
  }
  for (const cJSON *f = w->fields->child; f; f = f->next) {
    int placed = 0; /* printed above in its own field's place */
    for (size_t i = 0; i < n_own && !placed; i++)
      placed = (own[i].str || own[i].number) && !strcmp(f->string, own[i].key);
    if (placed) continue;
    prx_json_key(t, f->string, 2, 0);
    prx_json_item(t, f, 2);
  }
  prx_json_close_object(t, 1, 1);
  prx_json_key(t, "captures", 1, 0);
  prx_json_open_array(t);
  for (size_t i = 0; i < w->n_captures; i++) {
    const capture *c = &w->captures[i];
    if (i > 0 && c->start >= w->samples) break;
    if (i > 0) prx_json_array_next(t);
    prx_json_open_object(t);
    prx_json_key(t, "core:sample_start", 3, 1);
    prx_json_number(t, (double)c->start);
    prx_json_key(t, "core:frequency", 3, 0);
    prx_json_number(t, c->frequency);
    if (c->datetime) {
      prx_json_key(t, "core:datetime", 3, 0);
      prx_json_string(t, c->datetime);
    }
    prx_json_close_object(t, 2, 1);
  }
  prx_json_close_array(t);
  prx_json_key(t, "annotations", 1, 0);
  prx_json_item(t, w->annotations, 1);
  prx_json_close_object(t, 0, 1);
  if (prx_json_text_end(t)) {
    prx_json_text_free(t);
    return prx_fail(PRX_ERR_NOMEM, "out of memory building the SigMF metadata");
  }
  return PRX_OK;
}

prx_status prx_io_write_file_atomic(const char *path, const char *text, size_t len) {
  FILE *f = NULL;
  char *tmp = NULL;
  prx_status st = prx_io_create_temp(path, "wb", &f, &tmp);
  if (!st) {
    errno = 0;
    int bad = fwrite(text, 1, len, f) != len || fflush(f) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
      bad = 1;
      e = errno;
    }
    if (bad) {
      st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
      unlink(tmp);
    } else if (rename(tmp, path) != 0) {
      st = prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
      unlink(tmp);
    }
  }
  free(tmp);
  return st;
}

/* Links the unnamed file fd (O_TMPFILE) at path: through the descriptor (AT_EMPTY_PATH: root, or
 * Linux 6.10 and later), else through /proc/self/fd; fails with EEXIST where path exists. */
static int link_unnamed(int fd, const char *path) {
  if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0) return 0;
  if (errno == EEXIST) return -1;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
}

/* An unnamed file (O_TMPFILE) in the directory of path, opened for writing; -1 where the file
 * system has none (EOPNOTSUPP, EISDIR) or it cannot be made (errno set). */
static int open_unnamed(const char *path) {
#ifdef O_TMPFILE
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return -1;
  int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  free(dir);
  return fd;
#else
  (void)path;
  errno = EOPNOTSUPP;
  return -1;
#endif
}

/* Writes text's len bytes to fd, retrying after interruptions; the bytes written (len unless an
 * error stopped it, its errno then in *err, else 0 there). */
static size_t write_whole(int fd, const char *text, size_t len, int *err) {
  size_t done = 0;
  errno = 0;
  while (done < len) {
    ssize_t k = write(fd, text + done, len - done);
    if (k <= 0 && errno != EINTR) break;
    if (k > 0) done += (size_t)k;
  }
  *err = done < len ? errno : 0;
  return done;
}

/* prx_io_write_file_new with its unnamed file fd already made (or -1: none); closes fd. */
static prx_status write_file_new_fd(int fd, const char *path, const char *text, size_t len) {
  if (fd >= 0) {
    int e = 0;
    if (write_whole(fd, text, len, &e) < len) {
      close(fd);
      return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
    }
    int linked = link_unnamed(fd, path) == 0;
    close(fd);
    if (linked) return PRX_OK;
  }
  /* no unnamed files here (EOPNOTSUPP, EISDIR), or path exists: a temporary name and a rename */
  return prx_io_write_file_atomic(path, text, len);
}

prx_status prx_io_write_file_new(const char *path, const char *text, size_t len) {
  return write_file_new_fd(open_unnamed(path), path, text, len);
}

prx_status prx_sigmf_writer_prepare_meta(prx_sigmf_writer *w) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_prepare_meta: NULL writer");
  if (w->archive || w->meta_fd >= 0) return PRX_OK;
  if (w->direct) { /* the named file, empty until close writes it (none: close makes it) */
    w->meta_fd = open(w->meta_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    return PRX_OK;
  }
  w->meta_fd = open_unnamed(w->meta_path); /* none: close makes its file as without */
  return PRX_OK;
}

/* A direct writer's metadata: text into its named file (fd, made ahead, or -1: made now), which
 * is removed if it cannot be written whole; closes fd. */
static prx_status write_direct(int fd, const char *path, const char *text, size_t len) {
  if (fd < 0 && (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0)
    return prx_fail(PRX_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
  int e = 0;
  size_t done = write_whole(fd, text, len, &e);
  if (close(fd) != 0 && done == len) {
    e = errno;
    done = 0;
  }
  if (done == len) return PRX_OK;
  unlink(path);
  return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
}

/* Writes the metadata whole into place (prx_io_write_file_new: an unnamed file linked there, one
 * directory operation where a temporary file's create and rename are two, and the directory's
 * lock is what several writers finishing their recordings at once wait for); its SHA-512 into
 * hex (when not NULL). */
static prx_status write_meta(prx_sigmf_writer *w, char *hex) {
  char buf[META_BUF];
  prx_json_text t;
  prx_status st = meta_text(w, &t, buf);
  if (st) return st;
  int fd = w->meta_fd;
  w->meta_fd = -1; /* closed by write_file_new_fd or write_direct */
  st = w->direct ? write_direct(fd, w->meta_path, t.p, t.n)
       : fd >= 0 ? write_file_new_fd(fd, w->meta_path, t.p, t.n)
                 : prx_io_write_file_new(w->meta_path, t.p, t.n);
  if (!st && hex) prx_sha512_hex(t.p, t.n, hex);
  prx_json_text_free(&t);
  return st;
}

/* Archive mode: completes the tar stream in w->data (still open): pads the data member,
 * appends the metadata member and the end marker, then writes the data member's header over
 * its placeholder. */
static prx_status finish_archive(prx_sigmf_writer *w) {
  char buf[META_BUF];
  prx_json_text t;
  prx_status st = meta_text(w, &t, buf);
  if (st) return st;
  const char *text = t.p;
  size_t mlen = t.n;
  uint64_t dbytes = w->samples * w->sample_size;
  static const unsigned char zeros[2 * PRX_TAR_BLOCK];
  unsigned char hdr[PRX_TAR_BLOCK];
  char name[160];
  int64_t now = (int64_t)time(NULL);
  FILE *f = w->data;
  errno = 0;
  size_t pad = (size_t)((PRX_TAR_BLOCK - dbytes % PRX_TAR_BLOCK) % PRX_TAR_BLOCK);
  int bad = fwrite(zeros, 1, pad, f) != pad;
  snprintf(name, sizeof name, "%s/%s.sigmf-meta", w->member, w->member);
  prx_tar_header(hdr, name, mlen, '0', 0644, now);
  bad = bad || fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr || fwrite(text, 1, mlen, f) != mlen;
  pad = (PRX_TAR_BLOCK - mlen % PRX_TAR_BLOCK) % PRX_TAR_BLOCK;
  bad = bad || fwrite(zeros, 1, pad, f) != pad || fwrite(zeros, 1, sizeof zeros, f) != sizeof zeros;
  prx_json_text_free(&t);
  snprintf(name, sizeof name, "%s/%s.sigmf-data", w->member, w->member);
  prx_tar_header(hdr, name, dbytes, '0', 0644, now);
  bad = bad || fflush(f) != 0 || fseeko(f, PRX_TAR_BLOCK, SEEK_SET) != 0 ||
        fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr || fflush(f) != 0;
  if (bad)
    return prx_fail(PRX_ERR_IO, "cannot write '%s': %s", w->tmp_path,
                    strerror(errno ? errno : EIO));
  return PRX_OK;
}

/* Flushes and closes the data file, if still open: every buffered byte is written and checked
 * before the file is called finished (an error is kept). */
static void end_data(prx_sigmf_writer *w) {
  FILE *f = w->data;
  if (!f) return;
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
}

prx_status prx_sigmf_writer_set_buffer(prx_sigmf_writer *w, size_t bytes) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_set_buffer: NULL writer");
  if (w->archive || !w->data || w->samples || w->buf || !bytes) return PRX_OK;
  /* glibc sizes a buffer it makes itself from the file system's block whatever size is asked:
   * the writer makes it */
  char *b = malloc(bytes);
  if (!b) return PRX_OK;
  if (setvbuf(w->data, b, _IOFBF, bytes) != 0) {
    free(b);
    return PRX_OK;
  }
  w->buf = b;
  return PRX_OK;
}

prx_status prx_sigmf_writer_end_data(prx_sigmf_writer *w) {
  if (!w) return prx_fail(PRX_ERR_INVALID, "prx_sigmf_writer_end_data: NULL writer");
  if (!w->archive) end_data(w); /* an archive's file stays open: close appends the metadata */
  return w->err ? raise_kept(w) : PRX_OK;
}

prx_status prx_sigmf_writer_close(prx_sigmf_writer *w) {
  return prx_sigmf_writer_close_hash(w, NULL);
}

prx_status prx_sigmf_writer_close_hash(prx_sigmf_writer *w, char hex[129]) {
  if (hex) hex[0] = '\0';
  if (!w) return PRX_OK;
  if (w->archive && !w->err) {
    prx_status st = finish_archive(w);
    if (st) keep(w, st);
  }
  end_data(w);
  if (w->err) {
    unlink(w->tmp_path); /* data that is not all there is no recording */
  } else if (!w->direct && rename(w->tmp_path, w->data_path) != 0) {
    keep(w, prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", w->tmp_path, w->data_path,
                     strerror(errno)));
    unlink(w->tmp_path);
  } else if (!w->archive) {
    /* the metadata last: it exists only beside the whole data */
    prx_status st = write_meta(w, hex);
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
  if (w->data) fclose(w->data);
  w->data = NULL;
  unlink(w->tmp_path);
  free_writer(w);
}
