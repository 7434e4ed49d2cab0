/* polyrx channelize's output directory: made (mkdir -p), or made hidden beside DIR to be published
 * whole at the end (chan_publish.c); and what it holds that the run did not write. */

#include "chan_run.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p; *created says whether this call made the whole path (it was not there) */
int chan_make_dirs(const char *path, int *created) {
  char *p = strdup(path);
  *created = 0;
  if (!p) return -1;
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char keep = *s;
      *s = '\0';
      *created = mkdir(p, 0777) == 0; /* the last call's: the whole path made now */
      if (!*created && errno != EEXIST) rc = -1;
      *s = keep;
      if (rc || !keep) break;
    }
  }
  free(p);
  struct stat st;
  if (rc == 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
    if (errno == 0 || !S_ISDIR(st.st_mode)) errno = ENOTDIR;
    rc = -1;
  }
  return rc;
}

/* dir without its trailing slashes (malloc'd; NULL out of memory), in *leaf its last component
 * within it (the name the hidden directories beside it are made from) and in *slash the slash
 * before that (NULL where there is none). */
static char *dir_and_leaf(const char *dir, char **leaf, char **slash) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  char *path = strndup(dir, n);
  if (!path) return NULL;
  *slash = strrchr(path, '/');
  *leaf = *slash ? *slash + 1 : path;
  return path;
}

/* Where DIR does not exist (and no other path is given: --report, --occupancy and -o NAME.sigmf
 * keep the directory made at once), the recordings are written into a hidden directory beside it
 * on the same file system (.LEAF.tmp-PID-N), each file under its own name, and the directory is
 * renamed to DIR once every recording is finished: a reader of DIR sees all of them or none, and
 * finishing a recording takes no directory operation (1024 recordings: 2048 renames and links
 * serialized on the directory's lock otherwise). 0 with o.outdir set to the hidden directory;
 * -1 where the run keeps the directory made at once (DIR there, even as a dangling link; a name
 * without a leaf; a parent that cannot be made: chan_make_dirs then reports). POLYRX_PUBLISH=0
 * keeps it always (the A/B). */
int chan_make_hidden_dir(run_state *r) {
  const options *o = &r->o;
  const char *how = getenv("POLYRX_PUBLISH");
  struct stat sb;
  if ((how && !strcmp(how, "0")) || o->report || o->occupancy || o->archive ||
      lstat(o->outdir, &sb) == 0 || errno != ENOENT)
    return -1;
  char *leaf, *slash;
  char *final = dir_and_leaf(o->outdir, &leaf, &slash);
  if (!final) return -1;
  size_t cap = strlen(final) + 64;
  char *tmp = malloc(cap);
  int fresh, rc = -1;
  if (!tmp || !leaf[0] || !strcmp(leaf, ".") || !strcmp(leaf, "..")) goto out;
  if (slash && slash > final) { /* the parent made as -o's is (mkdir -p) */
    *slash = '\0';
    int bad = chan_make_dirs(final, &fresh);
    *slash = '/';
    if (bad) goto out;
  }
  for (unsigned k = 0; k < 1000; k++) {
    snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)(leaf - final), final, leaf, (long)getpid(), k);
    if (mkdir(tmp, 0777) == 0) {
      rc = 0;
      break;
    }
    if (errno != EEXIST) break;
  }
out:
  if (rc) {
    free(final);
    free(tmp);
    return -1;
  }
  r->pub_given = o->outdir;
  r->pub_final = final;
  r->pub_tmp = tmp;
  r->o.outdir = tmp;
  return 0;
}

/* The output directory as the user named it (the hidden one's name is the run's own). */
const char *chan_shown_dir(const run_state *r) { return r->pub_given ? r->pub_given : r->o.outdir; }

/* Counts chNNNN.sigmf-* files in dir that this run did not write (left by an earlier run with
 * another K or channel list), and temporary files of a run that was killed
 * (chNNNN.sigmf-*.tmp-*), so the user is told rather than misled. */
static size_t count_stale(const char *dir, const unsigned char *written, unsigned K, int width,
                          size_t *temporary) {
  *temporary = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t stale = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *name = e->d_name;
    if (strncmp(name, "ch", 2)) continue;
    const char *p = name + 2, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    if (q == p) continue;
    if ((!strncmp(q, ".sigmf-meta.tmp-", 16) || !strncmp(q, ".sigmf-data.tmp-", 16))) {
      (*temporary)++;
      continue;
    }
    if (strcmp(q, ".sigmf-meta") && strcmp(q, ".sigmf-data")) continue;
    unsigned long k = strtoul(p, NULL, 10);
    if (q - p != width || k >= K || !written[k]) stale++;
  }
  closedir(d);
  return stale;
}

/* Counts the hidden directories beside dir that runs killed while writing it left
 * (.LEAF.tmp-*: chan_make_hidden_dir); 0 where there are none or the parent cannot be read. */
static size_t count_hidden(const char *dir) {
  char *leaf, *slash;
  size_t found = 0;
  char *path = dir_and_leaf(dir, &leaf, &slash);
  if (!path) return 0;
  size_t cap = strlen(leaf) + 8;
  char *prefix = malloc(cap);
  if (prefix) snprintf(prefix, cap, ".%s.tmp-", leaf);
  if (slash) slash[slash == path] = '\0'; /* the parent ("/" kept) */
  DIR *d = prefix ? opendir(slash ? path : ".") : NULL;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (!strncmp(e->d_name, prefix, strlen(prefix))) found++;
    closedir(d);
  }
  free(prefix);
  free(path);
  return found;
}

/* The notes after the summary: files in the output directory that this run did not write (an
 * earlier run's, a killed run's temporary ones) and hidden directories beside it that killed runs
 * left. */
void chan_note_leftovers(const run_state *r) {
  unsigned K = prx_chan_channels(r->chan);
  unsigned char *written = calloc(K, 1);
  if (written) {
    for (size_t s = 0; s < r->n_sel; s++) {
      prx_chan_channel ch;
      prx_chan_channel_info(r->chan, s, &ch);
      written[ch.index] = 1;
    }
    int width = chan_name_width(K);
    size_t temporary, stale = count_stale(r->o.outdir, written, K, width, &temporary);
    if (stale)
      fprintf(stderr,
              "polyrx %s: note: %s/ also holds %zu ch*.sigmf-* file(s) this run did not "
              "write (an earlier run?)\n",
              CMD, r->o.outdir, stale);
    if (temporary)
      fprintf(stderr,
              "polyrx %s: note: %s/ holds %zu temporary file(s) of a run that was killed "
              "(ch*.sigmf-*.tmp-*): they are no recordings and can be removed\n",
              CMD, r->o.outdir, temporary);
    size_t hidden = r->pub_tmp ? count_hidden(r->o.outdir) : 0;
    if (hidden)
      fprintf(stderr,
              "polyrx %s: note: %zu hidden director(ies) beside %s/ (.NAME.tmp-*) are what "
              "runs killed while writing it left: they were never published and can be "
              "removed\n",
              CMD, hidden, r->o.outdir);
    free(written);
  }
}
