/* SigMF collections (.sigmf-collection): a file tying recordings together, each named by its
 * base name (relative to the collection's directory) with the SHA-512 of its metadata file, as
 * the SigMF 1.0 specification's collection core:streams requires. */
#include "io_internal.h"

#include "../core/internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

prx_status prx_sigmf_collection_write(const char *path, const char *const *names, size_t n,
                                      const char *description) {
  return prx_sigmf_collection_write_hashed(path, names, NULL, n, description);
}

prx_status prx_sigmf_collection_write_hashed(const char *path, const char *const *names,
                                             const char *const *hashes, size_t n,
                                             const char *description) {
  if (!path || !path[0] || (n && !names))
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_collection_write: no path or names");
  size_t plen = strlen(path);
  const char *ext = ".sigmf-collection";
  if (plen < strlen(ext) || strcmp(path + plen - strlen(ext), ext))
    return prx_fail(PRX_ERR_INVALID, "SigMF collection '%s' must end in %s", path, ext);
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  cJSON *root = cJSON_CreateObject(), *coll = cJSON_CreateObject(), *streams = cJSON_CreateArray();
  if (!root || !coll || !streams) {
    cJSON_Delete(root);
    cJSON_Delete(coll);
    cJSON_Delete(streams);
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  cJSON_AddItemToObject(root, "collection", coll);
  int ok = cJSON_AddStringToObject(coll, "core:version", "1.0.0") != NULL;
  if (ok && description)
    ok = cJSON_AddStringToObject(coll, "core:description", description) != NULL;
  cJSON_AddItemToObject(coll, "core:streams", streams);
  prx_status st = ok ? PRX_OK : prx_fail(PRX_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    if (!names[i] || !names[i][0] || names[i][0] == '/') {
      st = prx_fail(PRX_ERR_INVALID, "SigMF collection: stream %zu needs a relative base name", i);
      break;
    }
    char hex[129];
    if (hashes && hashes[i] && strlen(hashes[i]) == 128) {
      memcpy(hex, hashes[i], sizeof hex);
    } else {
      size_t nlen = strlen(names[i]);
      char *meta = malloc(dir_len + nlen + sizeof ".sigmf-meta");
      if (!meta) {
        st = prx_fail(PRX_ERR_NOMEM, "out of memory");
        break;
      }
      memcpy(meta, path, dir_len);
      memcpy(meta + dir_len, names[i], nlen);
      memcpy(meta + dir_len + nlen, ".sigmf-meta", sizeof ".sigmf-meta");
      st = prx_sha512_file(meta, hex);
      free(meta);
      if (st) break;
    }
    cJSON *s = cJSON_CreateObject();
    if (!s || !cJSON_AddStringToObject(s, "name", names[i]) ||
        !cJSON_AddStringToObject(s, "hash", hex)) {
      cJSON_Delete(s);
      st = prx_fail(PRX_ERR_NOMEM, "out of memory");
      break;
    }
    cJSON_AddItemToArray(streams, s);
  }
  char *text = st ? NULL : cJSON_Print(root);
  cJSON_Delete(root);
  if (st) return st;
  if (!text) return prx_fail(PRX_ERR_NOMEM, "out of memory");
  size_t len = strlen(text);
  char *t = realloc(text, len + 2);
  if (!t) {
    free(text);
    return prx_fail(PRX_ERR_NOMEM, "out of memory");
  }
  t[len] = '\n';
  t[len + 1] = '\0';
  st = prx_io_write_file_atomic(path, t, len + 1);
  free(t);
  return st;
}
