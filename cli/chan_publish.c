/* polyrx channelize's hidden directory published as DIR once the recordings are finished (or, where
 * another process made DIR meanwhile, the recordings moved into it one by one). */

#include "chan_run.h"

#include <errno.h>
#include <fcntl.h> /* AT_FDCWD */
#include <stdio.h> /* renameat2, RENAME_NOREPLACE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Moves the file NAME (relative) of the hidden directory into DIR; an error reported. */
static int move_in(const run_state *r, const char *name, char *from, char *to, size_t cap) {
  snprintf(from, cap, "%s/%s", r->pub_tmp, name);
  snprintf(to, cap, "%s/%s", r->pub_final, name);
  if (rename(from, to) == 0) return 0;
  cli_error(CMD, "cannot move '%s' to '%s': %s", from, to, strerror(errno));
  unlink(from);
  return -1;
}

/* DIR was made by another process while this run wrote (a directory: the rename does not
 * replace it): each finished recording is moved into it as a run into an existing directory
 * writes it, an earlier run's metadata removed first, the data, then the metadata (a .sigmf-meta
 * only beside its whole data), then the collection; the hidden directory removed. Returns -1, or
 * 1 where a file could not be moved (that recording is then absent: its files removed). */
static int move_each(run_state *r) {
  int fresh, rc = -1;
  if (chan_make_dirs(r->pub_final, &fresh) != 0) {
    cli_error(CMD, "cannot create output directory '%s': %s", r->pub_final, strerror(errno));
    return 1;
  }
  size_t cap = strlen(r->pub_tmp) + strlen(r->pub_final) + 64, dir_len = strlen(r->pub_tmp) + 1;
  char *base = malloc(cap), *name = malloc(cap), *from = malloc(cap), *to = malloc(cap);
  if (!base || !name || !from || !to) {
    rc = cli_error(CMD, "out of memory");
    goto out;
  }
  for (size_t s = 0; s < r->n_sel; s++) {
    chan_output_base(r, s, base, cap); /* in the hidden directory (o.outdir) */
    const char *leaf = base + dir_len;
    int stale = 0;
    for (int k = 0; k < 2 && !stale; k++) { /* an earlier run's pair, its metadata first */
      snprintf(to, cap, "%s/%s.sigmf-%s", r->pub_final, leaf, k ? "data" : "meta");
      stale = unlink(to) != 0 && errno != ENOENT;
    }
    if (stale) {
      rc = cli_error(CMD, "cannot remove '%s' of an earlier run: %s", to, strerror(errno));
      continue;
    }
    snprintf(from, cap, "%s.sigmf-meta", base);
    if (access(from, F_OK) != 0) continue; /* no recording: it failed */
    snprintf(name, cap, "%s.sigmf-data", leaf);
    if (move_in(r, name, from, to, cap) == 0) {
      snprintf(name, cap, "%s.sigmf-meta", leaf);
      if (move_in(r, name, from, to, cap) == 0) continue;
      snprintf(to, cap, "%s/%s.sigmf-data", r->pub_final, leaf);
      unlink(to);
    }
    snprintf(from, cap, "%s.sigmf-meta", base);
    unlink(from);
    rc = 1;
  }
  snprintf(from, cap, "%s/channels.sigmf-collection", r->pub_tmp);
  if (access(from, F_OK) == 0 && move_in(r, "channels.sigmf-collection", from, to, cap)) rc = 1;
  /* what no recording kept (failed ones' files are removed as they fail) */
  for (size_t s = 0; s < r->n_sel; s++) {
    chan_output_base(r, s, base, cap);
    snprintf(from, cap, "%s.sigmf-data", base);
    unlink(from);
  }
out:
  if (rmdir(r->pub_tmp) != 0 && rc < 0)
    rc = cli_error(CMD, "cannot remove '%s': %s", r->pub_tmp, strerror(errno));
  free(base);
  free(name);
  free(from);
  free(to);
  return rc;
}

/* Publishes the hidden directory as DIR (chan_make_hidden_dir), once every recording in it is
 * finished or removed: one rename that never replaces (renameat2's RENAME_NOREPLACE), so that a DIR
 * another process made meanwhile is kept and the recordings are moved into it one by one
 * (move_each). Returns -1, or 1 where something could not be published (reported). Once per run. */
int chan_publish_outputs(run_state *r) {
  if (!r->pub_tmp || r->published) return -1;
  r->published = 1;
  const char *how = getenv("POLYRX_PUBLISH");
  if (how && !strcmp(how, "race")) { /* the tests': DIR made by another process just now */
    mkdir(r->pub_final, 0777);
    char *p = malloc(strlen(r->pub_final) + 16);
    if (p) {
      sprintf(p, "%s/other", r->pub_final);
      FILE *f = fopen(p, "w");
      if (f) fclose(f);
      free(p);
    }
  }
  int rc = -1;
#ifdef RENAME_NOREPLACE
  if (renameat2(AT_FDCWD, r->pub_tmp, AT_FDCWD, r->pub_final, RENAME_NOREPLACE) != 0)
    rc = move_each(r);
#else
  /* without renameat2: a directory made here, empty, is replaced; one that holds files is not */
  if (mkdir(r->pub_final, 0777) != 0 || rename(r->pub_tmp, r->pub_final) != 0) rc = move_each(r);
#endif
  r->o.outdir = r->pub_given;
  return rc;
}
