/* The host pipeline: a reader thread, the compute stage on the caller's thread and writer
 * threads, joined by two rings under one mutex (pipeline.h has the contract). Blocks are large
 * (milliseconds of work each), so one lock and three condition variables cost nothing that
 * shows; the sequence counters below say everything about which buffer is whose. */
#include "pipeline.h"

#include "../core/internal.h"
#include "../io/io_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MSG_SIZE 512
#define BLOCK_NO_BUFFER 2 /* in_stop: the block's buffer could not be made (a set-up error) */

typedef struct {
  const prx_pipe_config *cfg;
  int in_depth, out_depth, n_writers, n_readers;
  int multi; /* the reader threads of read_at (several, or one with view_at) */
  pthread_mutex_t mu;
  pthread_cond_t cv_read;  /* the reader waits for a free input block */
  pthread_cond_t cv_comp;  /* compute waits for an input block or a free output slot */
  pthread_cond_t cv_write; /* the writers wait for an output slot */
  unsigned char **in, **out;
  const void **in_view; /* view_at: the block in place (NULL: read into in[]) */
  size_t *in_n, *out_n;
  uint64_t *in_pos;
  /* several readers (read_at): a block's read is complete (ready) before it is handed over in
   * stream order; its status and stop flag go with it */
  unsigned char *in_ready, *in_stop;
  prx_status *in_st;
  char *in_msg;       /* MSG_SIZE bytes per block: a failed read's message, from its reader */
  uint64_t claim_seq; /* the next block a reader takes */
  /* Sequence counters: input block i lives in in[i % in_depth], output slot j in
   * out[j % out_depth]. The reader owns blocks [c_seq, ...) that it has not published,
   * compute owns block c_seq and slot o_seq, writer w owns slot w_seq[w]. */
  uint64_t r_seq, c_seq, o_seq, *w_seq;
  int reader_done, compute_done;
  int stop_read; /* a compute or write error: the reader stops */
  int stop_all;  /* a write error: compute and the writers stop too */
  uint64_t flush_seq;
  int has_flush;
  prx_pipe_result res;
  char msg[MSG_SIZE]; /* the first error's text, from the thread that raised it */
} pipe_state;

prx_pipe_config prx_pipe_config_default(void) {
  prx_pipe_config c;
  memset(&c, 0, sizeof c);
  c.in_depth = 4;
  c.out_depth = 3;
  c.n_writers = 1;
  return c;
}

prx_status prx_pipe_iq_read(void *reader, void *buf, size_t max, size_t *n) {
  return prx_iq_read((prx_iq_reader *)reader, buf, max, n);
}

prx_status prx_pipe_iq_read_at(void *reader, void *buf, size_t max, uint64_t first, size_t *n) {
  prx_iq_reader *r = reader;
  return prx_iq_read_at(r, buf, prx_iq_reader_samples(r) + first, max, n);
}

/* Records the first error with its message (called with the lock held). */
static void record_error_msg(pipe_state *p, prx_pipe_stage stage, prx_status st, const char *msg) {
  if (p->res.failed != PRX_PIPE_NONE) return;
  p->res.failed = stage;
  p->res.status = st;
  snprintf(p->msg, sizeof p->msg, "%s", msg);
}

/* Records the first error (called with the lock held, on the thread that met it). */
static void record_error(pipe_state *p, prx_pipe_stage stage, prx_status st) {
  record_error_msg(p, stage, st, prx_last_error());
}

static void wake_all(pipe_state *p) {
  pthread_cond_broadcast(&p->cv_read);
  pthread_cond_broadcast(&p->cv_comp);
  pthread_cond_broadcast(&p->cv_write);
}

static uint64_t slowest_writer(const pipe_state *p) {
  uint64_t m = p->w_seq[0];
  for (int w = 1; w < p->n_writers; w++)
    if (p->w_seq[w] < m) m = p->w_seq[w];
  return m;
}

static int stop_requested(const prx_pipe_config *c) {
  return c->should_stop && c->should_stop(c->ctx);
}

/* ---- the stages ---- */

/* SIGINT and SIGTERM, the signals stop_signals routes to the reader. */
static void stop_signal_set(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
}

/* With stop_signals, lets the stop signals reach the calling thread: they interrupt its blocking
 * read (or the flush) there. */
static void take_stop_signals(const prx_pipe_config *c) {
  if (!c->stop_signals) return;
  sigset_t set;
  stop_signal_set(&set);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* A read callback's status, checked for a count beyond the block (a bug in the callback: nothing
 * of the block is kept). */
static prx_status checked_count(const prx_pipe_config *c, prx_status st, size_t *n) {
  if (*n <= c->block_samples) return st;
  *n = 0;
  return prx_fail(PRX_ERR_INTERNAL, "pipeline: the read callback returned more than asked");
}

static void *reader_main(void *arg) {
  pipe_state *p = arg;
  const prx_pipe_config *c = p->cfg;
  take_stop_signals(c);
  uint64_t pos = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop_read && p->r_seq - p->c_seq >= (uint64_t)p->in_depth)
      pthread_cond_wait(&p->cv_read, &p->mu);
    if (p->stop_read) break;
    size_t slot = (size_t)(p->r_seq % (uint64_t)p->in_depth);
    pthread_mutex_unlock(&p->mu);
    int stop = stop_requested(c);
    size_t n = 0;
    prx_status st = PRX_OK;
    if (!stop) {
      st = checked_count(c, c->read(c->read_ctx, p->in[slot], c->block_samples, &n), &n);
      /* a read cut short by a stop signal is the stop, not an error */
      if (st && stop_requested(c)) stop = 1;
    }
    pthread_mutex_lock(&p->mu);
    if (n > 0) {
      p->in_n[slot] = n;
      p->in_pos[slot] = pos;
      pos += n;
      p->res.samples_read += n;
      p->res.blocks_read++;
      p->r_seq++;
      pthread_cond_signal(&p->cv_comp);
    }
    if (stop) {
      p->res.stopped = 1;
      break;
    }
    if (st) {
      record_error(p, PRX_PIPE_READ, st); /* not fatal: what was read is computed and flushed */
      break;
    }
    if (n == 0) {
      p->res.end_of_stream = 1;
      break;
    }
  }
  p->reader_done = 1;
  pthread_cond_broadcast(&p->cv_comp);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void *buf_alloc(const prx_pipe_config *c, size_t bytes);

/* Several readers: hands the blocks whose reads are complete to compute, in stream order, up to
 * the block that ends the stream (short, failed or stopped); called with the lock held. */
static void publish_ready(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  while (!p->reader_done && !p->stop_read) {
    size_t slot = (size_t)(p->r_seq % (uint64_t)p->in_depth);
    if (!p->in_ready[slot]) break;
    p->in_ready[slot] = 0;
    size_t n = p->in_n[slot];
    if (n > 0) {
      p->in_pos[slot] = p->res.samples_read; /* the samples handed over before this block */
      p->res.samples_read += n;
      p->res.blocks_read++;
      p->r_seq++;
      pthread_cond_signal(&p->cv_comp);
    }
    int end = 1;
    if (p->in_stop[slot] == BLOCK_NO_BUFFER)
      record_error_msg(p, PRX_PIPE_SETUP, p->in_st[slot], p->in_msg + slot * MSG_SIZE);
    else if (p->in_stop[slot])
      p->res.stopped = 1;
    else if (p->in_st[slot]) /* what was read is computed and flushed */
      record_error_msg(p, PRX_PIPE_READ, p->in_st[slot], p->in_msg + slot * MSG_SIZE);
    else if (n < c->block_samples)
      p->res.end_of_stream = 1;
    else
      end = 0;
    if (end) {
      p->reader_done = 1; /* the blocks the other readers still read are dropped */
      pthread_cond_broadcast(&p->cv_comp);
      pthread_cond_broadcast(&p->cv_read);
    }
  }
}

/* One of several readers (read_at): takes the next block while fewer than in_depth blocks are
 * ahead of compute, reads it without the lock, then hands over what is complete in order. A
 * block b + in_depth is taken only once compute has taken block b, so a reader never writes
 * into a block compute may still read. */
static void *multi_reader_main(void *arg) {
  pipe_state *p = arg;
  const prx_pipe_config *c = p->cfg;
  take_stop_signals(c);
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop_read && !p->reader_done && p->claim_seq - p->c_seq >= (uint64_t)p->in_depth)
      pthread_cond_wait(&p->cv_read, &p->mu);
    if (p->stop_read || p->reader_done) break;
    uint64_t b = p->claim_seq++;
    size_t slot = (size_t)(b % (uint64_t)p->in_depth);
    pthread_mutex_unlock(&p->mu);
    int stop = stop_requested(c);
    size_t n = 0;
    prx_status st = PRX_OK;
    /* the block in place (view_at), else read into the slot's buffer */
    const void *view = NULL;
    if (!stop && c->view_at) {
      st = checked_count(
          c, c->view_at(c->view_ctx, b * c->block_samples, c->block_samples, &view, &n), &n);
      if (st) stop = stop_requested(c);
    }
    p->in_view[slot] = view;
    /* the block's buffer is made on its first use, by its reader: with page-locked memory
     * (0.1-0.5 ms per MiB) the making overlaps the reads and computes of the blocks before */
    if (!stop && !st && !view && !p->in[slot] &&
        !(p->in[slot] = buf_alloc(c, c->block_samples * c->sample_size))) {
      st = prx_fail(PRX_ERR_NOMEM, "pipeline: cannot allocate an input block of %zu bytes",
                    c->block_samples * c->sample_size);
      stop = BLOCK_NO_BUFFER;
    }
    if (!stop && !st && !view) {
      st = checked_count(
          c, c->read_at(c->read_ctx, p->in[slot], c->block_samples, b * c->block_samples, &n), &n);
      if (st && stop_requested(c)) stop = 1;
    }
    if (st) snprintf(p->in_msg + slot * MSG_SIZE, MSG_SIZE, "%s", prx_last_error());
    pthread_mutex_lock(&p->mu);
    p->in_n[slot] = n;
    p->in_st[slot] = st;
    p->in_stop[slot] = (unsigned char)stop;
    p->in_ready[slot] = 1;
    publish_ready(p);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* The compute stage, on the caller's thread. */
static void compute_loop(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  uint64_t pos_end = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop_all && p->c_seq == p->r_seq && !p->reader_done)
      pthread_cond_wait(&p->cv_comp, &p->mu);
    if (p->stop_all) break;
    int last = p->c_seq == p->r_seq; /* the reader is done and every block was taken */
    while (!p->stop_all && p->o_seq - slowest_writer(p) >= (uint64_t)p->out_depth)
      pthread_cond_wait(&p->cv_comp, &p->mu);
    if (p->stop_all) break;
    size_t is = (size_t)(p->c_seq % (uint64_t)p->in_depth);
    size_t os = (size_t)(p->o_seq % (uint64_t)p->out_depth);
    if (last) /* the reader is gone: the flush (a long filter tail) takes the stop signals now */
      take_stop_signals(c);
    const void *in = last ? NULL : p->in_view[is] ? p->in_view[is] : p->in[is];
    size_t n = last ? 0 : p->in_n[is];
    uint64_t pos = last ? pos_end : p->in_pos[is];
    pthread_mutex_unlock(&p->mu);
    size_t out_n = 0;
    prx_status st = c->compute(c->ctx, in, n, pos, p->out[os], &out_n);
    pthread_mutex_lock(&p->mu);
    if (st) {
      record_error(p, PRX_PIPE_COMPUTE, st);
      p->stop_read = 1; /* the writers still write every block computed before this one */
      wake_all(p);
      break;
    }
    p->res.blocks_computed++;
    if (!last) {
      p->res.samples_computed += n;
      pos_end = pos + n;
      p->c_seq++;
      pthread_cond_broadcast(&p->cv_read); /* several readers may wait */
      if (c->view_at && c->view_done) {
        pthread_mutex_unlock(&p->mu); /* compute is done with the samples before pos_end */
        c->view_done(c->view_ctx, pos_end);
        pthread_mutex_lock(&p->mu);
      }
    }
    p->out_n[os] = out_n;
    if (last) {
      p->flush_seq = p->o_seq;
      p->has_flush = 1;
    }
    p->o_seq++;
    pthread_cond_broadcast(&p->cv_write);
    if (last) break;
  }
  p->compute_done = 1;
  pthread_cond_broadcast(&p->cv_write);
  pthread_mutex_unlock(&p->mu);
}

typedef struct {
  pipe_state *p;
  int w;
} writer_arg;

static void *writer_main(void *arg) {
  pipe_state *p = ((writer_arg *)arg)->p;
  int w = ((writer_arg *)arg)->w;
  const prx_pipe_config *c = p->cfg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop_all && p->w_seq[w] == p->o_seq && !p->compute_done)
      pthread_cond_wait(&p->cv_write, &p->mu);
    if (p->stop_all || p->w_seq[w] == p->o_seq) break;
    uint64_t seq = p->w_seq[w];
    size_t os = (size_t)(seq % (uint64_t)p->out_depth);
    size_t out_n = p->out_n[os];
    pthread_mutex_unlock(&p->mu);
    prx_status st = c->write(c->ctx, w, p->out[os], out_n, seq);
    pthread_mutex_lock(&p->mu);
    if (st) {
      record_error(p, PRX_PIPE_WRITE, st);
      p->stop_read = p->stop_all = 1;
      wake_all(p);
      break;
    }
    p->w_seq[w]++;
    pthread_cond_broadcast(&p->cv_comp);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* One compute call and its writes, in the serial mode; 0 on success. */
static int serial_step(pipe_state *p, const void *in, size_t n, uint64_t pos) {
  const prx_pipe_config *c = p->cfg;
  size_t out_n = 0;
  prx_status st = c->compute(c->ctx, in, n, pos, p->out[0], &out_n);
  if (st) {
    record_error(p, PRX_PIPE_COMPUTE, st);
    return -1;
  }
  p->res.blocks_computed++;
  p->res.samples_computed += n;
  for (int w = 0; w < p->n_writers; w++) {
    if ((st = c->write(c->ctx, w, p->out[0], out_n, p->res.blocks_written))) {
      record_error(p, PRX_PIPE_WRITE, st);
      return -1;
    }
  }
  p->res.blocks_written++;
  return 0;
}

/* read -> compute -> write in one loop: the same callbacks and stream, no threads. */
static void run_serial(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  uint64_t pos = 0;
  for (;;) {
    size_t n = 0;
    int end = 1;
    if (stop_requested(c)) {
      p->res.stopped = 1;
    } else {
      prx_status st = checked_count(c, c->read(c->read_ctx, p->in[0], c->block_samples, &n), &n);
      if (st && stop_requested(c))
        p->res.stopped = 1;
      else if (st)
        record_error(p, PRX_PIPE_READ, st);
      else if (n == 0)
        p->res.end_of_stream = 1;
      else
        end = 0;
    }
    if (n) {
      p->res.samples_read += n;
      p->res.blocks_read++;
      if (serial_step(p, p->in[0], n, pos)) return;
      pos += n;
    }
    if (end) {
      if (serial_step(p, NULL, 0, pos) == 0) p->res.flushed = 1;
      return;
    }
  }
}

/* ---- set-up ---- */

static void *buf_alloc(const prx_pipe_config *c, size_t bytes) {
  return c->alloc ? c->alloc(c->alloc_ctx, bytes) : prx_pipe_host_alloc(bytes, c->pinned);
}

static void buf_free(const prx_pipe_config *c, void *b) {
  if (!b) return;
  if (c->alloc)
    c->free(c->alloc_ctx, b);
  else
    prx_pipe_host_free(b);
}

static void free_state(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  if (p->in)
    for (int i = 0; i < p->in_depth; i++) buf_free(c, p->in[i]);
  if (p->out)
    for (int i = 0; i < p->out_depth; i++) buf_free(c, p->out[i]);
  prx_free(p->in);
  prx_free((void *)p->in_view);
  prx_free(p->out);
  prx_free(p->in_n);
  prx_free(p->out_n);
  prx_free(p->in_pos);
  prx_free(p->in_ready);
  prx_free(p->in_stop);
  prx_free(p->in_st);
  prx_free(p->in_msg);
  prx_free(p->w_seq);
}

static prx_status check_config(const prx_pipe_config *c) {
  if (!c) return prx_fail(PRX_ERR_INVALID, "pipeline: NULL configuration");
  if (!c->read || !c->compute || !c->write)
    return prx_fail(PRX_ERR_INVALID, "pipeline: the read, compute and write callbacks are needed");
  if (!c->block_samples || !c->sample_size || !c->out_bytes)
    return prx_fail(PRX_ERR_INVALID,
                    "pipeline: block size, sample size and output size must be > 0");
  if (c->block_samples > SIZE_MAX / c->sample_size)
    return prx_fail(PRX_ERR_INVALID, "pipeline: a block of %zu samples is too large",
                    c->block_samples);
  if ((c->in_depth && c->in_depth < 3) || c->in_depth > 1024)
    return prx_fail(PRX_ERR_INVALID, "pipeline: input depth %d is not in 3..1024", c->in_depth);
  if ((c->out_depth && c->out_depth < 2) || c->out_depth > 1024)
    return prx_fail(PRX_ERR_INVALID, "pipeline: output depth %d is not in 2..1024", c->out_depth);
  if (c->n_writers < 0 || c->n_writers > 256)
    return prx_fail(PRX_ERR_INVALID, "pipeline: %d writers is not in 1..256", c->n_writers);
  if (c->n_readers < 0 || c->n_readers > 64)
    return prx_fail(PRX_ERR_INVALID, "pipeline: %d readers is not in 1..64", c->n_readers);
  if (!c->alloc != !c->free)
    return prx_fail(PRX_ERR_INVALID, "pipeline: give both alloc and free hooks, or neither");
  return PRX_OK;
}

prx_status prx_pipe_run(const prx_pipe_config *cfg, prx_pipe_result *res) {
  pipe_state s;
  memset(&s, 0, sizeof s);
  if (res) memset(res, 0, sizeof *res);
  prx_status st = check_config(cfg);
  if (st) {
    if (res) res->failed = PRX_PIPE_SETUP, res->status = st;
    return st;
  }
  s.cfg = cfg;
  s.in_depth = cfg->serial ? 1 : cfg->in_depth ? cfg->in_depth : 4;
  s.out_depth = cfg->serial ? 1 : cfg->out_depth ? cfg->out_depth : 3;
  s.n_writers = cfg->n_writers ? cfg->n_writers : 1;
  /* several readers only with positional reads; in_depth >= 3 leaves each of them a block */
  s.multi = cfg->read_at && !cfg->serial && (cfg->n_readers > 1 || cfg->view_at);
  s.n_readers = s.multi && cfg->n_readers > 1 ? cfg->n_readers : 1;
  s.in = prx_alloc((size_t)s.in_depth, sizeof *s.in);
  s.in_view = prx_alloc((size_t)s.in_depth, sizeof *s.in_view);
  s.out = prx_alloc((size_t)s.out_depth, sizeof *s.out);
  s.in_n = prx_alloc((size_t)s.in_depth, sizeof *s.in_n);
  s.in_pos = prx_alloc((size_t)s.in_depth, sizeof *s.in_pos);
  s.out_n = prx_alloc((size_t)s.out_depth, sizeof *s.out_n);
  s.w_seq = prx_alloc((size_t)s.n_writers, sizeof *s.w_seq);
  s.in_ready = prx_alloc((size_t)s.in_depth, 1);
  s.in_stop = prx_alloc((size_t)s.in_depth, 1);
  s.in_st = prx_alloc((size_t)s.in_depth, sizeof *s.in_st);
  s.in_msg = prx_alloc((size_t)s.in_depth, MSG_SIZE);
  int ok = s.in && s.in_view && s.out && s.in_n && s.in_pos && s.out_n && s.w_seq && s.in_ready &&
           s.in_stop && s.in_st && s.in_msg;
  for (int i = 0; ok && i < s.in_depth; i++)
    ok = s.multi || /* the reader threads of read_at make the input blocks on first use */
         (s.in[i] = buf_alloc(cfg, cfg->block_samples * cfg->sample_size)) != NULL;
  for (int i = 0; ok && i < s.out_depth; i++)
    ok = (s.out[i] = buf_alloc(cfg, cfg->out_bytes)) != NULL;
  if (!ok) {
    free_state(&s);
    st = prx_fail(PRX_ERR_NOMEM, "pipeline: cannot allocate %d blocks of %zu bytes and %d of %zu",
                  s.in_depth, cfg->block_samples * cfg->sample_size, s.out_depth, cfg->out_bytes);
    if (res) res->failed = PRX_PIPE_SETUP, res->status = st;
    return st;
  }

  if (s.multi && cfg->view_at && cfg->view_start) cfg->view_start(cfg->view_ctx);
  sigset_t stop_sigs, old_mask;
  stop_signal_set(&stop_sigs);
  if (cfg->serial) {
    if (cfg->stop_signals) pthread_sigmask(SIG_UNBLOCK, &stop_sigs, &old_mask);
    run_serial(&s);
    if (cfg->stop_signals) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  } else {
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv_read, NULL);
    pthread_cond_init(&s.cv_comp, NULL);
    pthread_cond_init(&s.cv_write, NULL);
    writer_arg *wa = prx_alloc((size_t)s.n_writers, sizeof *wa);
    pthread_t *wt = prx_alloc((size_t)s.n_writers, sizeof *wt);
    pthread_t *rt = prx_alloc((size_t)s.n_readers, sizeof *rt);
    int readers_started = 0, writers_started = 0;
    /* with stop_signals the caller's thread and the writers (created with its mask) block the
     * stop signals and the reader unblocks them, so that they interrupt its blocking read */
    if (cfg->stop_signals) pthread_sigmask(SIG_BLOCK, &stop_sigs, &old_mask);
    void *(*reader_fn)(void *) = s.multi ? multi_reader_main : reader_main;
    for (; wa && wt && rt && readers_started < s.n_readers; readers_started++)
      if (pthread_create(&rt[readers_started], NULL, reader_fn, &s)) break;
    int reader_started = rt && readers_started == s.n_readers;
    for (; reader_started && writers_started < s.n_writers; writers_started++) {
      wa[writers_started].p = &s;
      wa[writers_started].w = writers_started;
      if (pthread_create(&wt[writers_started], NULL, writer_main, &wa[writers_started])) break;
    }
    if (!reader_started || writers_started < s.n_writers) {
      pthread_mutex_lock(&s.mu);
      prx_fail(PRX_ERR_NOMEM, "pipeline: cannot start its threads");
      record_error(&s, PRX_PIPE_SETUP, PRX_ERR_NOMEM);
      s.stop_read = s.stop_all = 1;
      s.compute_done = 1;
      wake_all(&s);
      pthread_mutex_unlock(&s.mu);
    } else {
      compute_loop(&s);
    }
    for (int i = 0; i < readers_started; i++) pthread_join(rt[i], NULL);
    for (int w = 0; w < writers_started; w++) pthread_join(wt[w], NULL);
    if (cfg->stop_signals) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    prx_free(wa);
    prx_free(wt);
    prx_free(rt);
    s.res.blocks_written = slowest_writer(&s);
    s.res.flushed = s.has_flush && s.res.blocks_written > s.flush_seq;
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv_read);
    pthread_cond_destroy(&s.cv_comp);
    pthread_cond_destroy(&s.cv_write);
  }
  free_state(&s);
  if (res) *res = s.res;
  if (s.res.failed != PRX_PIPE_NONE) return prx_fail(s.res.status, "%s", s.msg);
  return PRX_OK;
}
