/* polyrx channelize's writers: each appends its channels' kept outputs of a slot to their
 * recordings (or interleaves them onto standard output), with their power sums, and ends its
 * channels' data files after the last slot. The per-block path is all here, so that it is compiled
 * as one. */

#include "chan_run.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsp/pack.h"
#include "io/io_internal.h"

#define HOLD_BYTES ((size_t)4 << 20) /* a writer's room for rows of recordings not yet created */

/* Converts k outputs to the output format into dst; returns its bytes. */
static size_t pack_row(run_state *r, writer_state *ws, const prx_cf32 *y, size_t k, void *dst) {
  switch (r->o.outf) {
  case PRX_CF16: prx_pack_cf16(y, k, dst); return 4 * k;
  case PRX_CI16: ws->saturated += prx_pack_ci16(y, k, PRX_CI16_SCALE, dst); return 4 * k;
  default: memcpy(dst, y, 8 * k); return 8 * k;
  }
}

/* Ends the power sums' group of writer w's channels (chan_power_end into r->energy). */
static void end_power(run_state *r, int w) {
  writer_state *ws = &r->ws[w];
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; i < n; i++, s += part_step(r, W))
    r->energy[s] += chan_power_end(&r->power[s], &ws->group);
  chan_power_restart(&ws->group);
}

/* Marks output s failed (its recording is removed at close); the first failure of the run prints
 * its error line. Returns non-zero when every output has failed. */
static int output_failed(run_state *r, size_t s, prx_status st) {
  r->failed[s] = 1;
  size_t before = atomic_fetch_add(&r->n_failed, 1);
  if (before == 0) cli_status_error(CMD, "output", st);
  return before + 1 == r->n_sel;
}

/* Keeps output s's row of k outputs (y, in the slot) in writer w's hold, packed as it will be
 * written, while its recording is still being created: the writer goes on with its other
 * channels and the slot is freed for compute instead of waiting for the opener (with 8 openers
 * creating 1024 recordings the writers waited 2-12 ms for them on the 16-core GPU host, and
 * compute, 3 slots ahead at most, with them). 0 where there is no room (the caller waits). */
static int hold_row(run_state *r, int w, size_t s, const unsigned char *y, size_t k, int packed) {
  writer_state *ws = &r->ws[w];
  size_t W = (size_t)r->n_writers, i = part_index(r, s, W), osz = prx_format_size(r->o.outf);
  if (!ws->hold) {
    size_t n_local = part_count(r, (size_t)w, W);
    /* each channel's room 64-byte aligned: the packers store 2- and 4-byte values into it */
    ws->region = HOLD_BYTES / n_local / 64 * 64;
    ws->held = calloc(n_local, sizeof *ws->held);
    ws->hold = ws->held ? malloc(ws->region * n_local) : NULL;
    if (!ws->hold) {
      free(ws->held);
      ws->held = NULL;
      ws->region = 0;
      return 0;
    }
  }
  if (k * osz > ws->region - ws->held[i]) return 0;
  unsigned char *dst = ws->hold + i * ws->region + ws->held[i];
  if (packed)
    memcpy(dst, y, k * osz);
  else
    pack_row(r, ws, (const prx_cf32 *)y, k, dst);
  ws->held[i] += k * osz;
  ws->rows_held++;
  return 1;
}

/* Appends what writer w held of output s (hold_row) to its recording, which exists. */
static prx_status write_held(run_state *r, int w, size_t s) {
  writer_state *ws = &r->ws[w];
  size_t i = part_index(r, s, (size_t)r->n_writers);
  if (!ws->held || !ws->held[i]) return PRX_OK;
  size_t n = ws->held[i] / prx_format_size(r->o.outf);
  ws->held[i] = 0;
  return prx_sigmf_write(r->w[s], ws->hold + i * ws->region, n);
}

/* Before writer w's last slot: every row it holds written, waiting for the openers as needed;
 * 0, or an error reported. */
static prx_status write_all_held(run_state *r, int w) {
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; r->ws[w].held && i < n; i++, s += part_step(r, W)) {
    if (r->failed[s] || !r->ws[w].held[i]) continue;
    if (chan_wait_opened(r, s)) return PRX_ERR_IO; /* reported */
    prx_status st = write_held(r, w, s);
    if (st && output_failed(r, s, st)) return st;
  }
  return PRX_OK;
}

/* After the last slot: a writer flushes and closes its channels' data files (the rest of each
 * recording, the metadata, follows in last_slot_written), several writers at once, newest file
 * first (glibc's fclose walks its list of open FILEs from the newest: oldest first, 1024 files
 * cost 15 ms of list walking on the 2-core VM). */
static prx_status end_data(run_state *r, int w) {
  size_t W = (size_t)r->n_writers;
  if (r->o.to_stdout) return PRX_OK;
  for (size_t i = part_count(r, (size_t)w, W); i-- > 0;) {
    size_t s = part_first(r, (size_t)w, W) + i * part_step(r, W);
    if (!r->ws[w].ready && chan_wait_opened(r, s)) return PRX_ERR_IO; /* reported */
    prx_status st = r->failed[s] ? PRX_OK : prx_sigmf_writer_end_data(r->w[s]);
    if (st && output_failed(r, s, st)) return st;
  }
  return PRX_OK;
}

/* After a writer's last slot: its channels' data files ended (end_data), then their recordings
 * finished (close_one: metadata, its hash), the writers side by side and the finishers with
 * them, off the main thread's path after the stream (1024 recordings: 30-50 ms of one thread on
 * the GPU host's CPU). Not when an opener failed: that run leaves no recordings (cleanup). */
static prx_status last_slot_written(run_state *r, int w) {
  writer_state *ws = &r->ws[w];
  double t = tick(r);
  prx_status st = end_data(r, w);
  ws->t_ended = tick(r);
  ws->ms_end += ws->t_ended - t;
  if (!st && !r->o.to_stdout && !chan_wait_all_opened(r)) {
    atomic_store(&ws->fin_state, 1);
    chan_finish_claimed(r, w, &ws->n_complete, &ws->ms_close);
  } else {
    atomic_store(&ws->fin_state, -1);
  }
  ws->t_done = tick(r);
  if (r->tm.on) chan_take_use(&ws->use, RUSAGE_THREAD);
  return st;
}

/* Where writer w finds output s's kept outputs of a slot: its row in the slot, or with the frames
 * layout its row of the writer's gathered rows (gather_frames). */
static unsigned char *slot_row(const run_state *r, int w, const void *slot, size_t s) {
  const slot_head *head = slot;
  if (r->frames)
    return (unsigned char *)(r->ws[w].rows + part_index(r, s, (size_t)r->n_writers) * r->stride);
  return (unsigned char *)slot + SLOT_ROWS + (s * r->stride + head->skip) * r->row_osz;
}

/* The frames layout: writer w's channels (one contiguous range of each frame) of the slot's kept
 * outputs gathered into rows of `stride` outputs, in the writer's own buffer, so that the power
 * sums, the packing and the appends run on rows as with the rows layout; the writer reads only
 * the lines of its range, once. */
static void gather_frames(run_state *r, int w, const void *slot) {
  const slot_head *head = slot;
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), k = (size_t)head->keep;
  const prx_cf32 *f = (const prx_cf32 *)((const unsigned char *)slot + SLOT_ROWS) +
                      head->skip * r->n_sel + part_first(r, (size_t)w, W);
  prx_cf32 *rows = r->ws[w].rows;
  for (size_t j = 0; j < k; j++, f += r->n_sel)
    for (size_t i = 0; i < n; i++) rows[i * r->stride + j] = f[i];
}

/* Writer w's channels' power sums of a slot: the device's sums of its block (dev_post), or the
 * kept cf32 outputs summed here in groups of blocks (chan_power.h; the flush's outputs are a
 * group of their own, after the stream's last one), their non-finite outputs zeroed before they
 * are written. */
static void add_power(run_state *r, int w, const void *slot) {
  writer_state *ws = &r->ws[w];
  const slot_head *head = slot;
  size_t k = (size_t)head->keep, W = (size_t)r->n_writers, n_local = part_count(r, (size_t)w, W);
  size_t first = part_first(r, (size_t)w, W), step = part_step(r, W);
  if (r->dev_post) {
    const double *sums = slot_sums(r, slot);
    for (size_t i = 0; i < n_local; i++) r->energy[first + i * step] += sums[first + i * step];
    return;
  }
  if (head->last) end_power(r, w);
  for (size_t i = 0; k && i < n_local; i += CHAN_POWER_ROWS) {
    chan_power *ps[CHAN_POWER_ROWS];
    prx_cf32 *ys[CHAN_POWER_ROWS];
    size_t n = 0;
    for (; i + n < n_local && n < CHAN_POWER_ROWS; n++) {
      size_t t = first + (i + n) * step;
      ps[n] = &r->power[t];
      ys[n] = (prx_cf32 *)slot_row(r, w, slot, t);
    }
    chan_power_add(ps, ys, n, k, &ws->group, &ws->nonfinite_out);
  }
  chan_power_next(&ws->group, k);
  if (head->group_end) end_power(r, w);
}

/* A writer: appends its channels' kept outputs to their recordings (or, to standard output, the
 * channels interleaved). A channel whose write fails loses its recording; the others go on; when
 * every channel has failed, the run stops. */
prx_status chan_write(void *ctx, int w, const void *out, size_t out_n, uint64_t block) {
  run_state *r = ctx;
  writer_state *ws = &r->ws[w];
  (void)out_n;
  (void)block;
  const slot_head *head = out;
  size_t k = (size_t)head->keep, W = (size_t)r->n_writers;
  double t_power = tick(r);
  if (head->last) ws->t_last = t_power;
  if (r->frames && k) gather_frames(r, w, out);
  add_power(r, w, out);
  ws->ms_energy += tick(r) - t_power;
  /* the recordings end with this slot, which may keep no output (no lead and whole outputs:
   * the loop below then does not run): the rows held are written first */
  if (head->last && !ws->ready && !r->o.to_stdout) {
    prx_status st = write_all_held(r, w);
    if (st) return st;
  }
  if (!k) return head->last ? last_slot_written(r, w) : PRX_OK;
  int held = 0; /* rows of this slot kept back (hold_row) */
  size_t osz = prx_format_size(r->o.outf);
  const int packed = r->dev_post || r->o.outf == PRX_CF32; /* the rows are in the output format */
  size_t n_local = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; i < n_local; i++, s += part_step(r, W)) {
    const unsigned char *yb = slot_row(r, w, out, s);
    const prx_cf32 *y = (const prx_cf32 *)yb;
    if (r->o.to_stdout) {
      /* interleaved: sample j of every channel, in selection order (cf32 copied as it is) */
      unsigned char *dst = (unsigned char *)ws->pack + s * osz;
      size_t step = r->n_sel * osz;
      const unsigned char *src = yb;
      if (!packed) { /* the row packed at once (the vector paths), then spread */
        pack_row(r, ws, y, k, ws->row);
        src = ws->row;
      }
      for (size_t j = 0; j < k; j++) memcpy(dst + j * step, src + j * osz, osz);
      continue;
    }
    if (r->failed[s]) continue;
    /* a channel whose recording the opener has not yet created: its row is kept back while
     * there is room (not at the last slot, nor once an opener failed: the run ends then), else
     * the writer waits for the recording */
    if (!ws->ready && !head->last && !r->open_failed && !is_opened(r, s) &&
        hold_row(r, w, s, yb, k, packed)) {
      held = 1;
      continue;
    }
    /* POLYRX_TIMING reads the clock around the wait only where the recording is not yet
     * created: two reads around every row cost a writer 5-7 ms on the GPU host (1024 slots of
     * 128 rows), which showed as a wait for the openers where there was none */
    double t1 = tick(r);
    if (!ws->ready && !is_opened(r, s)) {
      if (chan_wait_opened(r, s)) return PRX_ERR_IO; /* reported */
      double t = tick(r);
      ws->ms_wait += t - t1;
      t1 = t;
    }
    prx_status st = ws->ready ? PRX_OK : write_held(r, w, s); /* its earlier rows first */
    const void *data = yb;
    if (!st && !packed) {
      pack_row(r, ws, y, k, ws->pack);
      data = ws->pack;
    }
    if (!st) st = prx_sigmf_write(r->w[s], data, k);
    ws->ms_write += tick(r) - t1;
    /* the first failure is reported; the writer keeps its error for close */
    if (st && output_failed(r, s, st)) return st;
  }
  if (r->o.to_stdout) {
    size_t bytes = k * r->n_sel * osz;
    if (fwrite(ws->pack, 1, bytes, stdout) != bytes) {
      cli_error(CMD, "cannot write standard output: %s", strerror(errno));
      atomic_store(&r->n_failed, r->n_sel);
      return PRX_ERR_IO;
    }
  }
  ws->ready = !held;
  return head->last ? last_slot_written(r, w) : PRX_OK;
}
