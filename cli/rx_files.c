/* polyrx rx's files: every carrier's bits, LLRs and truth (and --iq recording) named, checked
 * against the input and each other, created and closed on several threads; the report's file. */

#include "rx_run.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the carriers' files, opened and closed on several threads ----
 *
 * Creating and closing a file costs a few tens of microseconds of the kernel's time (the
 * directory, the inode, the page cache's truncation): 1024 carriers' files take tens of ms on one
 * thread, which the stream does not overlap. The openers (threads of the command, each the
 * carriers c with c % n == i) share it; the errors are reported afterwards in carrier order: the
 * first failure's line, the one a single thread would meet first. */
typedef struct {
  run_state *r;
  void (*fn)(run_state *r, size_t c);
  size_t i, n;
} carrier_job;

static void *carrier_job_run(void *arg) {
  carrier_job *j = arg;
  for (size_t c = j->i; c < j->r->n_car; c += j->n) j->fn(j->r, c);
  return NULL;
}

/* fn(r, c) for every carrier, on up to 4 threads where there are cores for them and 16 carriers
 * each (cli_thread_start: threads that take no signal). */
void rx_for_each_carrier(run_state *r, void (*fn)(run_state *r, size_t c)) {
  int cores = prx_cpu_count();
  size_t n = cores >= 8 ? 4 : 1, started = 0;
  if (n > r->n_car / 16) n = r->n_car >= 32 ? r->n_car / 16 : 1;
  /* POLYRX_OPENERS=N (1..4): the tests' way to several threads on a small machine */
  n = (size_t)cli_env_int("POLYRX_OPENERS", 1, 4, (int)n);
  if (n > r->n_car) n = r->n_car ? r->n_car : 1;
  carrier_job job[4];
  pthread_t t[4];
  for (size_t i = 1; i < n; i++) {
    job[i] = (carrier_job){r, fn, i, n};
    if (cli_thread_start(&t[i], carrier_job_run, &job[i]) != 0) break;
    started = i;
  }
  /* this thread takes share 0, and the shares of the threads that could not start */
  for (size_t i = 0; i < n; i++) {
    if (i && i <= started) continue;
    job[i] = (carrier_job){r, fn, i, n};
    carrier_job_run(&job[i]);
  }
  for (size_t i = 1; i <= started; i++) pthread_join(t[i], NULL);
}

static void open_carrier(run_state *r, size_t c) {
  carrier_out *k = &r->out[c];
  const options *o = &r->o;
  if (o->truth && !(k->truth = fopen(k->truth_name, "rb")))
    k->open_which = 1;
  else if (!(k->bits = fopen(k->bits_name, "wb")))
    k->open_which = 2;
  else if (o->llr && !(k->llr = fopen(k->llr_name, "wb")))
    k->open_which = 3;
  if (k->open_which) k->open_err = errno;
}

static void flush_carrier(run_state *r, size_t c) {
  carrier_out *k = &r->out[c];
  errno = 0;
  if (cli_flush_output(k->bits, &k->bits_bytes) && !k->bits_bad) {
    k->bits_bad = 1;
    k->close_err = errno;
  }
  errno = 0;
  if (cli_flush_output(k->llr, &k->llr_bytes) && !k->llr_bad) {
    k->llr_bad = 1;
    if (!k->close_err) k->close_err = errno;
  }
}

static void close_carrier(run_state *r, size_t c) {
  carrier_out *k = &r->out[c];
  errno = 0;
  int was_bad = k->bits_bad || k->llr_bad; /* said by rx_flush_files */
  if (k->bits) k->bits_bad |= ferror(k->bits) | fclose(k->bits);
  if (k->bits_bad && !was_bad) k->close_err = errno;
  errno = 0;
  if (k->llr) k->llr_bad |= ferror(k->llr) | fclose(k->llr);
  if (k->llr_bad && !k->close_err) k->close_err = errno;
  if (k->truth) fclose(k->truth);
  k->bits = k->llr = k->truth = NULL;
}

/* The descriptors the outputs of n carriers hold at once, beside those open now: each carrier's
 * bits, LLRs, truth and IQ recording (its metadata written at the close), and a margin for the
 * report, the readers' and what opens later (a GPU driver's few dozen where it has not started). */
size_t rx_descriptors_for(const options *o, size_t n, size_t margin) {
  return cli_open_descriptors() + n * (1 + !!o->llr + !!o->truth + 2 * !!o->iq) + margin;
}

/* The carriers' files created (and the truth files opened): -1, or the exit code after the first
 * failure's line in carrier order. */
static int open_files(run_state *r) {
  rx_for_each_carrier(r, open_carrier);
  for (size_t c = 0; c < r->n_car; c++) {
    const carrier_out *k = &r->out[c];
    const char *e = strerror(k->open_err);
    if (k->open_which == 1) return cli_error(CMD, "--truth: cannot open %s: %s", k->truth_name, e);
    if (k->open_which == 2) return cli_error(CMD, "cannot create %s: %s", k->bits_name, e);
    if (k->open_which == 3) return cli_error(CMD, "cannot create %s: %s", k->llr_name, e);
  }
  return -1;
}

/* the first failed carrier's line in carrier order, where rc is still -1 */
static int first_failure(run_state *r, int rc) {
  for (size_t c = 0; c < r->n_car && rc < 0; c++) {
    const carrier_out *k = &r->out[c];
    if (k->bits_bad || k->llr_bad)
      rc = cli_error(CMD, "cannot write %s: %s", k->bits_bad ? k->bits_name : k->llr_name,
                     strerror(k->close_err));
  }
  return rc;
}

int rx_flush_files(run_state *r, int rc) {
  rx_for_each_carrier(r, flush_carrier);
  return first_failure(r, rc);
}

int rx_close_files(run_state *r, int rc) {
  rx_for_each_carrier(r, close_carrier);
  return first_failure(r, rc);
}

int rx_open_outputs(run_state *r) {
  options *o = &r->o;
  if (mkdir(o->output, 0777) != 0 && errno != EEXIST)
    return cli_error(CMD, "cannot make the directory %s: %s", o->output, strerror(errno));
  size_t n = r->n_car;
  for (size_t c = 0; c < n; c++) {
    carrier_out *k = &r->out[c];
    k->bits_name = cli_format("%s/c%zu.bits", o->output, c);
    if (o->llr) k->llr_name = cli_format("%s/c%zu.llr", o->output, c);
    if (o->truth) k->truth_name = cli_format("%s%zu.bits", o->truth, c);
    if (o->iq) k->iq_base = cli_format("%s/c%zu", o->output, c);
    if (!k->bits_name || (o->llr && !k->llr_name) || (o->truth && !k->truth_name) ||
        (o->iq && !k->iq_base))
      return cli_error(CMD, "out of memory");
  }
  /* every output a file of its own, none the input or a truth file */
  cli_path *p = calloc(5 * n + 2, sizeof *p);
  char **iq_names = calloc(2 * n + 1, sizeof *iq_names);
  if (!p || !iq_names) {
    free(p);
    free(iq_names);
    return cli_error(CMD, "out of memory");
  }
  size_t m = 0;
  if (strcmp(o->input, "-")) p[m++] = (cli_path){"-i", prx_iq_reader_name(r->reader), 1};
  if (o->report) p[m++] = (cli_path){"--report", o->report, 0};
  for (size_t c = 0; c < n; c++) {
    p[m++] = (cli_path){"bits", r->out[c].bits_name, 0};
    if (o->llr) p[m++] = (cli_path){"LLRs", r->out[c].llr_name, 0};
    if (o->truth) p[m++] = (cli_path){"--truth", r->out[c].truth_name, 1};
    for (int e = 0; o->iq && e < 2; e++) {
      const char *ext = e ? ".sigmf-meta" : ".sigmf-data";
      iq_names[2 * c + e] = cli_format("%s%s", r->out[c].iq_base, ext);
      p[m++] = (cli_path){"--iq", iq_names[2 * c + e] ? iq_names[2 * c + e] : "", 0};
    }
  }
  int rc = cli_outputs_distinct(CMD, p, m);
  free(p);
  for (size_t i = 0; i < 2 * n; i++) free(iq_names[i]);
  free(iq_names);
  if (rc >= 0) return rc;
  unsigned long long cur = 0, max = 0;
  size_t need = rx_descriptors_for(o, n, 16);
  if (cli_raise_open_files(need, &cur, &max))
    return cli_error(CMD,
                     "receiving %zu carriers needs %zu open files, but the limit is %llu (hard "
                     "limit %llu): receive fewer carriers at once, or raise the hard limit "
                     "(ulimit -Hn)",
                     n, need, cur, max);
  if ((rc = open_files(r)) >= 0) return rc;
  for (size_t c = 0; o->iq && c < n; c++) {
    carrier_out *k = &r->out[c];
    prx_rx_stats st;
    prx_rx_get_stats(r->rx, c, &st);
    char desc[200];
    snprintf(desc, sizeof desc,
             "polyrx rx: channel %u of %u (D = %u), the channel of carrier %zu (%s, %+.1f Hz "
             "off the channel's centre)",
             st.channel, r->rc.channels, r->rc.channels / 2, c, r->spec[c], st.mix_hz);
    prx_sigmf_meta meta = prx_sigmf_meta_default();
    meta.format = PRX_CF32;
    meta.sample_rate = 2 * r->in.sample_rate / r->rc.channels;
    meta.center_freq = r->in.center_freq + st.channel_freq;
    meta.description = desc;
    /* channel sample j is the input's instant j K/2 (the prototype's delay P D is compensated
     * whole: docs/FORMATS.md) */
    cli_alignment al = {r->rc.channels / 2, 0, r->in.sample_rate};
    char datetime[48];
    double centre = meta.center_freq;
    prx_status s2 = cli_carry_first_capture(r->carry, &al, r->in.center_freq,
                                            centre - r->in.center_freq, &meta, datetime);
    if (!s2) s2 = prx_sigmf_writer_open(k->iq_base, &meta, &k->iq);
    if (s2) return cli_status_error(CMD, "--iq", s2);
  }
  if (o->report && !(r->rep_f = strcmp(o->report, "-") ? fopen(o->report, "w") : stdout))
    return cli_error(CMD, "cannot create %s: %s", o->report, strerror(errno));
  return -1;
}
