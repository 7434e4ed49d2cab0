/* polyrx channelize's reader and compute stages of the pipeline: the blocks read, their non-finite
 * samples zeroed and counted; each block channelized into an output slot, whose head says which
 * outputs the writers keep (the alignment), then the tail. */

#include "chan_run.h"

#include "dsp/finite.h"

#define STOP_TAIL_SECONDS 0.5 /* after a stop signal, the tail gets this long, then is cut */

/* Channelizes n samples (in == NULL: the tail) into the slot's rows, appending. */
static prx_status run_chan(run_state *r, const void *in, size_t k, unsigned char *rows,
                           size_t *filled, const char *what) {
  size_t n_out = 0;
  double t = tick(r), c = r->tm.on ? chan_cpu_ms(RUSAGE_THREAD) : 0;
  if (r->tm.on && r->ms_first_exec == 0) r->ms_first_exec = t - r->t_stream;
  /* the next outputs: further along the rows, or the next frames (n_sel outputs each) */
  size_t pitch = r->frames ? r->n_sel : r->stride;
  unsigned char *at = rows + *filled * (r->frames ? r->n_sel : 1) * r->row_osz;
  prx_status st = in ? prx_chan_execute(r->chan, in, k, at, pitch, &n_out)
                     : prx_chan_execute_zeros(r->chan, k, at, pitch, &n_out);
  r->t_exec_end = tick(r);
  r->ms_exec += r->t_exec_end - t;
  if (r->tm.on) r->ms_exec_cpu += chan_cpu_ms(RUSAGE_THREAD) - c;
  if (st) {
    r->fatal = r->chan_error = 1;
    cli_status_error(CMD, what, st);
    return st;
  }
  r->fed += k;
  *filled += n_out;
  return PRX_OK;
}

/* A block just read, for cf32 input: its non-finite samples replaced by 0; returns their count. */
static size_t zero_nonfinite_read(const run_state *r, void *buf, size_t n) {
  return r->in.format == PRX_CF32 ? prx_cf32_zero_nonfinite(buf, n) : 0;
}

/* The reader's stage: reads a block and, for cf32 input, replaces its non-finite samples by 0
 * there, off the compute stage's path (a pass over the input: 5-10 % of the channelizer's time
 * with a few channels selected); their count goes to compute with the block, in read order. */
prx_status chan_read(void *ctx, void *buf, size_t max, size_t *n) {
  run_state *r = ctx;
  prx_status st = prx_pipe_iq_read(r->reader, buf, max, n);
  if (*n) r->nf_count[r->nf_read++ % NF_RING] = zero_nonfinite_read(r, buf, *n);
  if (r->tm.on) chan_take_use(&r->use_reader, RUSAGE_THREAD);
  return st;
}

/* chan_read for several readers (positional reads, src/pipeline): block `first / block` counts
 * its non-finite samples into its own place of the ring, which compute takes in stream order. */
prx_status chan_read_at(void *ctx, void *buf, size_t max, uint64_t first, size_t *n) {
  run_state *r = ctx;
  prx_status st = prx_pipe_iq_read_at(r->reader, buf, max, first, n);
  if (*n) r->nf_count[(first / max) % NF_RING] = zero_nonfinite_read(r, buf, *n);
  return st;
}

/* Compute (on this thread): channelizes a block in pieces of r->chunk, so that a stop signal is
 * seen within one piece (the rest of the input is then not channelized); the final call feeds the
 * tail the alignment needs (after a stop signal for STOP_TAIL_SECONDS at most). The slot's head
 * says which of its outputs the writers keep. */
static prx_status chan_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                               size_t *out_n) {
  run_state *r = ctx;
  (void)pos;
  slot_head *head = out;
  unsigned char *rows = (unsigned char *)out + SLOT_ROWS;
  size_t filled = 0, ss = prx_format_size(r->in.format);
  uint64_t keep = UINT64_MAX;
  prx_status st = PRX_OK;
  if (in) r->nf_taken++;
  if (in && !r->stop_seen) {
    /* the reader zeroed its non-finite samples (chan_read) */
    r->nonfinite_in += r->nf_count[(r->nf_taken - 1) % NF_RING];
    for (size_t off = 0; off < n && !st;) {
      size_t k = n - off < r->chunk ? n - off : r->chunk;
      st = run_chan(r, (const unsigned char *)in + off * ss, k, rows, &filled, "channelizer");
      r->n_in += k;
      cli_progress_update(&r->progress, r->n_in);
      off += k;
      if (off < n && cli_interrupted()) r->stop_seen = 1;
      if (r->stop_seen) break;
    }
  } else if (!in && r->n_in) {
    r->t_flush = tick(r);
    chan_signal_finishers(r, 0); /* the writers' last slot follows this one */
    unsigned D = prx_chan_decimation(r->chan);
    r->target = (r->n_in + D - 1) / D;
    uint64_t last = r->lead + r->target - 1; /* the last library output needed */
    if (r->dev_post) prx_chan_power_window(r->chan, r->lead, last + 1);
    while (r->lib_out + filled <= last && !st) {
      if (cli_interrupted() && cli_seconds_since_stop() > STOP_TAIL_SECONDS) {
        r->tail_cut = 1;
        break;
      }
      /* zeros up to input sample last * D (the one output `last` belongs to), in chunks */
      uint64_t need = last * D + 1 - r->fed;
      size_t k = need < r->chunk ? (size_t)need : r->chunk;
      st = run_chan(r, NULL, k, rows, &filled, "channelizer tail");
    }
    keep = r->target - r->n_out;
  }
  if (st) return st;
  if (r->dev_post) { /* the block's sums, of the outputs the writers keep (the window) */
    uint64_t nf = 0, sat = 0;
    prx_chan_power_take(r->chan, slot_sums(r, out), &nf, &sat);
    r->nonfinite_out += nf;
    r->saturated += sat;
  }
  /* the alignment: the first `lead` library outputs of the stream are dropped */
  uint64_t skip = r->lib_out >= r->lead ? 0 : r->lead - r->lib_out;
  if (skip > filled) skip = filled;
  r->lib_out += filled;
  uint64_t k = filled - skip;
  if (k > keep) k = keep;
  head->skip = skip;
  head->keep = k;
  head->last = in == NULL;
  /* a group of power sums ends every power_group input samples, with the input (a short block)
   * and with the flush */
  head->group_end = !in || n < r->o.block || r->n_in % r->power_group == 0;
  r->n_out += k;
  *out_n = filled;
  return PRX_OK;
}

/* Compute, with its first call timed (POLYRX_TIMING: a GPU's first launch loads its kernels). */
prx_status chan_compute_timed(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                              size_t *out_n) {
  run_state *r = ctx;
  if (r->computed) return chan_compute(ctx, in, n, pos, out, out_n);
  r->computed = 1;
  double t = cli_seconds();
  prx_status st = chan_compute(ctx, in, n, pos, out, out_n);
  r->ms_first = (cli_seconds() - t) * 1e3;
  return st;
}
