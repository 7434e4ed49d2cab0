/* polyrx channelize -o NAME.sigmf: the recordings, written into a temporary directory beside the
 * archive, packed into it at the end; the directory removed. */

#include "chan_run.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -o NAME.sigmf: the collection and every complete recording packed into the archive (replacing
 * an earlier run's), then the temporary directory removed. */
int chan_pack_archive(run_state *r) {
  size_t n = 0, cap = strlen(r->o.outdir) + 48, dir_len = strlen(r->o.outdir) + 1;
  char **names = calloc(2 * r->n_sel + 1, sizeof *names);
  int rc = names ? -1 : cli_error(CMD, "out of memory");
  if (rc < 0 && r->n_complete && !(names[n++] = strdup("channels.sigmf-collection")))
    rc = cli_error(CMD, "out of memory");
  for (size_t s = 0; rc < 0 && s < r->n_sel; s++) {
    if (r->failed[s] || r->chan_error) continue;
    for (int k = 0; k < 2 && rc < 0; k++) {
      char *name = malloc(cap);
      if (!name) {
        rc = cli_error(CMD, "out of memory");
        break;
      }
      chan_output_base(r, s, name, cap);
      memmove(name, name + dir_len, strlen(name + dir_len) + 1);
      strcat(name, k ? ".sigmf-data" : ".sigmf-meta");
      names[n++] = name;
    }
  }
  if (rc < 0 && n) {
    prx_status st =
        prx_sigmf_archive_pack(r->o.archive, r->o.outdir, (const char *const *)names, n);
    if (st) rc = cli_status_error(CMD, "-o", st);
  }
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
  return rc;
}

/* Removes the temporary directory of -o NAME.sigmf and what it holds (only the names this run
 * writes there). */
void chan_remove_tmpdir(run_state *r) {
  DIR *d = opendir(r->o.tmpdir);
  if (d) {
    struct dirent *e;
    size_t cap = strlen(r->o.tmpdir) + 300;
    char *path = malloc(cap);
    while (path && (e = readdir(d))) {
      if (strncmp(e->d_name, "ch", 2) && strncmp(e->d_name, "channels.", 9)) continue;
      snprintf(path, cap, "%s/%s", r->o.tmpdir, e->d_name);
      unlink(path);
    }
    free(path);
    closedir(d);
  }
  rmdir(r->o.tmpdir);
}
