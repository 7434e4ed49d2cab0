/* polyrx channelize's stream: the pipeline (src/pipeline) set up with its stages (chan_compute.c,
 * chan_write.c) and its buffers, and run. */

#include "chan_run.h"

#include <pthread.h>
#include <stdio.h>

#define OUT_DEPTH_SMALL 6 /* output slots in flight with CPU blocks under SMALL_BLOCK */

/* The pipeline's buffers, timed for POLYRX_TIMING: page-locked with the CUDA backend; on the
 * CPU plain aligned memory; neither cleared (prx_pipe_host_alloc): the pages are first touched
 * by the reader's and the channelizer's writes, on their threads, instead of being cleared
 * before the stream starts (20 MiB with all 1024 channels: 8-11 ms on the 2-core VM). */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER; /* several readers make theirs */

static int pinned_buffers(const run_state *r) {
  return prx_chan_backend(r->chan) == PRX_BACKEND_CUDA;
}

static void *timed_alloc(void *ctx, size_t bytes) {
  run_state *r = ctx;
  double t = cli_seconds();
  void *p = prx_pipe_host_alloc(bytes, pinned_buffers(r));
  pthread_mutex_lock(&alloc_lock);
  r->ms_alloc += (cli_seconds() - t) * 1e3;
  pthread_mutex_unlock(&alloc_lock);
  return p;
}

/* Whether the CUDA objects and page-locked buffers are left to the process's end: only where it
 * follows (cli_exit_frees_skipped) behind the command (cli_exit_detach_wanted), whose child then
 * releases them with the context. Left to an end in the command's own process, the runtime's
 * teardown took longer than the frees save (the H200 host: all 1024 channels cf16, held, 4
 * rounds: 415.9 / 416.3 ms best / median against 401.3 / 403.8 freed; bench/RESULTS.md,
 * "fifteenth session"). */
int chan_cuda_left_to_exit(void) { return cli_exit_frees_skipped() && cli_exit_detach_wanted(); }

static void timed_free(void *ctx, void *p) {
  run_state *r = ctx;
  double t = cli_seconds();
  if (!pinned_buffers(r) || !chan_cuda_left_to_exit()) prx_pipe_host_free(p);
  r->ms_free += (cli_seconds() - t) * 1e3;
}

/* Reads, channelizes and writes until the input ends (the tail included); returns -1 at a clean
 * end, else an exit code. A write error of some channels does not stop the others; one of every
 * channel does. */
int chan_stream(run_state *r) {
  prx_pipe_config c;
  cli_pipe_setup(&c, r->reader, &r->in, r->o.block);
  c.read = chan_read;
  c.read_ctx = r;
  c.compute = chan_compute_timed;
  c.write = chan_write;
  c.ctx = r;
  c.n_writers = r->n_writers;
  /* Where the CPU's blocks are small (2^14 with one worker and all 1024 channels) a writer's 128
   * appends to its recordings' files come in bursts that take a few blocks' compute, so compute
   * needs more slots of slack than OUT_DEPTH: OUT_DEPTH_SMALL, although 6 such slots and the
   * channelizer's own state pass a core's 2 MiB L2 (with the staggered buffers, data_buffer, 3
   * slots left compute waiting for a slot 180 times a run on a busy host, 6 slots 24 times:
   * bench/RESULTS.md, "fourteenth session"). The block is chosen for OUT_DEPTH slots
   * (choose_block). POLYRX_OUT_DEPTH=N (2..16) sets the slots, for measurements. */
  int depth = prx_chan_backend(r->chan) == PRX_BACKEND_CPU && r->o.block < SMALL_BLOCK
                  ? OUT_DEPTH_SMALL
                  : OUT_DEPTH;
  c.out_depth = cli_env_int("POLYRX_OUT_DEPTH", 2, 16, depth);
  c.out_bytes = SLOT_ROWS + slot_rows_bytes(r) + (r->dev_post ? r->n_sel * sizeof(double) : 0);
  /* page-locked buffers where the CUDA backend copies them to the device (timed_alloc) */
  c.alloc = timed_alloc;
  c.free = timed_free;
  c.alloc_ctx = r;
  /* a file read by several threads while the GPU computes */
  r->n_readers = cli_pipe_readers(&c, r->reader, prx_chan_backend(r->chan) == PRX_BACKEND_CUDA);
  if (r->n_readers > 1 || r->map) c.read_at = chan_read_at;
  /* a file in place: its blocks are not read (an integer format: nothing to zero, chan_read_at
   * counts no non-finite sample) */
  cli_pipe_use_map(&c, r->reader, r->map);
  prx_pipe_result res;
  chan_start_finishers(r);
  r->t_stream = tick(r);
  int rc = cli_pipe_run(CMD, &c, NULL, &res);
  if (r->t_exec_end > 0) r->ms_after_exec = tick(r) - r->t_exec_end;
  chan_end_finishers(r); /* every recording a writer or a finisher took is finished */
  r->pipe_res = res;
  for (int w = 0; w < r->n_writers; w++) {
    r->nonfinite_out += r->ws[w].nonfinite_out;
    r->saturated += r->ws[w].saturated;
  }
  if (r->stop_seen && rc < 0) { /* (cli_pipe_run said so where it saw the stop itself) */
    rc = 130;
    fprintf(stderr, "polyrx %s: interrupted: stopping after %llu input samples\n", CMD,
            (unsigned long long)r->n_in);
  }
  if (res.failed == PRX_PIPE_WRITE) r->fatal = 1;
  if (rc < 0 && r->n_failed) rc = 1;
  return rc;
}
