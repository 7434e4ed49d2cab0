/* What polyrx channelize writes about its recordings beside them: the collection (channels.sigmf-
 * collection), and the summary that --report and --occupancy are made from (chan_summary.c). */

#include "chan_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_internal.h"

/* --report and --occupancy, after the recordings are closed. */
int chan_write_summaries(run_state *r, double elapsed, int exit_status) {
  if (!r->o.report && !r->o.occupancy) return -1;
  size_t n = r->n_sel, cap = strlen(r->o.outdir) + 48;
  unsigned *index = calloc(n ? n : 1, sizeof *index);
  double *freq = calloc(n ? n : 1, sizeof *freq), *db = calloc(n ? n : 1, sizeof *db);
  char **files = calloc(n ? n : 1, sizeof *files);
  unsigned char *ok = calloc(n ? n : 1, 1);
  int rc = -1;
  if (!index || !freq || !db || !files || !ok) rc = cli_error(CMD, "out of memory");
  for (size_t s = 0; s < n && rc < 0; s++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, s, &ch);
    index[s] = ch.index;
    freq[s] = ch.center_freq;
    double p = r->n_out ? r->energy[s] / (double)r->n_out : 0;
    db[s] = p > 0 ? 10 * log10(p) : -INFINITY;
    ok[s] = !r->o.to_stdout && !r->failed[s] && !r->chan_error;
    if (!(files[s] = malloc(cap))) {
      rc = cli_error(CMD, "out of memory");
      break;
    }
    chan_output_base(r, s, files[s], cap);
    if (r->o.archive) { /* a member name inside the archive */
      size_t dir_len = strlen(r->o.outdir) + 1;
      memmove(files[s], files[s] + dir_len, strlen(files[s] + dir_len) + 1);
    }
  }
  size_t M = 0;
  prx_chan_taps(r->chan, &M);
  cli_chan_summary sum = {r->o.input,
                          &r->in,
                          r->carry,
                          r->n_in,
                          r->nonfinite_in,
                          prx_chan_channels(r->chan),
                          prx_chan_decimation(r->chan),
                          M,
                          r->offset,
                          prx_backend_name(prx_chan_backend(r->chan)),
                          n,
                          index,
                          freq,
                          db,
                          (const char *const *)files,
                          ok,
                          r->n_out,
                          elapsed,
                          exit_status,
                          r->o.archive,
                          r->o.swap_iq,
                          prx_iq_reader_is_real(r->reader),
                          prx_iq_reader_window_start(r->reader)};
  if (rc < 0 && r->o.report) rc = cli_chan_write_report(CMD, r->o.report, &sum);
  if (rc < 0 && r->o.occupancy) rc = cli_chan_write_occupancy(CMD, r->o.occupancy, &sum);
  for (size_t s = 0; files && s < n; s++) free(files[s]);
  free(files);
  free(index);
  free(freq);
  free(db);
  free(ok);
  return rc;
}

/* DIR/channels.sigmf-collection ties the run's complete recordings (SigMF core:streams, each
 * with the SHA-512 of its metadata); a run without any removes an earlier run's collection. */
int chan_write_collection(run_state *r) {
  size_t cap = strlen(r->o.outdir) + 40;
  char *path = malloc(cap), **names = calloc(r->n_sel ? r->n_sel : 1, sizeof *names);
  const char **hashes = calloc(r->n_sel ? r->n_sel : 1, sizeof *hashes);
  int rc = -1;
  if (!path || !names || !hashes) rc = cli_error(CMD, "out of memory");
  size_t n = 0, dir_len = strlen(r->o.outdir) + 1;
  for (size_t s = 0; rc < 0 && s < r->n_sel; s++) {
    if (r->failed[s] || r->chan_error) continue;
    char *base = malloc(cap);
    if (!base) {
      rc = cli_error(CMD, "out of memory");
      break;
    }
    chan_output_base(r, s, base, cap);
    memmove(base, base + dir_len, strlen(base + dir_len) + 1); /* relative to DIR */
    hashes[n] = r->hash[s]; /* its metadata's, from close_one: the files are not read back */
    names[n++] = base;
  }
  if (rc < 0) {
    snprintf(path, cap, "%s/channels.sigmf-collection", r->o.outdir);
    char desc[96];
    snprintf(desc, sizeof desc, "polyrx channelize: %zu channels of %u", n,
             prx_chan_channels(r->chan));
    prx_status st =
        n ? prx_sigmf_collection_write_hashed(path, (const char *const *)names, hashes, n, desc)
          : PRX_OK;
    if (!n) unlink(path);
    if (st) rc = cli_status_error(CMD, "collection", st);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  free(hashes);
  free(path);
  return rc;
}
