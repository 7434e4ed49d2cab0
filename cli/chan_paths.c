/* The names of polyrx channelize's recordings (DIR/chNNNN.sigmf-*), and the check that no output
 * path is the input or another output. */

#include "chan_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int digits(unsigned long v) {
  int d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}

/* The digits of the channel numbers in the recordings' names: those of K - 1, at least 4. */
int chan_name_width(unsigned K) { return digits(K - 1) < 4 ? 4 : digits(K - 1); }

/* DIR/chNNNN (the base of output s's recording) into buf. */
void chan_output_base(const run_state *r, size_t s, char *buf, size_t cap) {
  unsigned K = prx_chan_channels(r->chan);
  int width = chan_name_width(K);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  snprintf(buf, cap, "%s/ch%0*u", r->o.outdir, width, ch.index);
}

/* No output file is the input (which the writers would remove as an earlier run's file): the
 * input as given, its data file, and a recording's metadata beside it. */
int chan_check_paths(run_state *r) {
  size_t n = 2 * r->n_sel + 6, m = 0, cap = strlen(r->o.outdir) + 32;
  cli_path *paths = calloc(n, sizeof *paths);
  char *names = malloc(n * (cap + 16)), *roles = malloc(n * 32);
  int rc = -1;
  if (!paths || !names || !roles) {
    rc = cli_error(CMD, "out of memory");
    goto out;
  }
  const char *data = prx_iq_reader_name(r->reader);
  paths[m++] = (cli_path){"-i", r->o.input, 1};
  if (strcmp(r->o.input, "-")) paths[m++] = (cli_path){"its data file", data, 1};
  size_t len = strlen(data);
  char meta[4096];
  if (r->in.is_sigmf && len > 11 && len < sizeof meta && !strcmp(data + len - 11, ".sigmf-data")) {
    snprintf(meta, sizeof meta, "%.*s.sigmf-meta", (int)(len - 11), data);
    paths[m++] = (cli_path){"its metadata", meta, 1};
  }
  for (size_t s = 0; s < r->n_sel; s++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, s, &ch);
    for (int k = 0; k < 2; k++) {
      char *name = names + m * (cap + 16), *role = roles + m * 32;
      chan_output_base(r, s, name, cap);
      strcat(name, k ? ".sigmf-meta" : ".sigmf-data");
      snprintf(role, 32, "output %s", k ? "metadata" : "data");
      paths[m++] = (cli_path){role, name, 0};
    }
  }
  char coll[4096];
  snprintf(coll, sizeof coll, "%s/channels.sigmf-collection", r->o.outdir);
  paths[m++] = (cli_path){"the collection", coll, 0};
  if (r->o.report) paths[m++] = (cli_path){"--report", r->o.report, 0};
  if (r->o.archive) paths[m++] = (cli_path){"-o", r->o.archive, 0};
  if (r->o.occupancy) paths[m++] = (cli_path){"--occupancy", r->o.occupancy, 0};
  rc = cli_outputs_distinct(CMD, paths, m);
out:
  free(paths);
  free(names);
  free(roles);
  return rc;
}
