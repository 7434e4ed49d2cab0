/* The host pipeline: a reader thread, the compute stage on the caller's thread and writer
 * threads, joined by two rings (pipeline.h has the contract). The sequence counters below say
 * everything about which buffer is whose; they are atomics, so a stage that finds its next
 * buffer ready takes it without a lock. A stage that must wait sleeps on its own parker (a mutex,
 * a condition variable and a flag saying it sleeps), and a stage that moves a counter wakes only
 * the parkers whose flag is set: no thread waits for a lock another stage holds, and a slot wakes
 * no writer that is still busy with an earlier one. The compute thread wakes the first writer;
 * each writer, taking a slot, wakes the next two (a tree of depth log2 writers), so the compute
 * stage's path holds one wake per slot at most, not one per writer (on a KVM guest a wake of an
 * idle vCPU is an interrupt through the hypervisor).
 *
 * The flags and counters are sequentially consistent: a stage stores its counter, then loads
 * the waiter's flag; a waiter stores its flag, then loads the counter; so at least one of the
 * two sees the other, and a wake is never lost. The mutex mu guards what is not a counter: the
 * readers' claims and hand-over (several readers) and the first error. */
#include "pipeline.h"

#include "../chan/chan_internal.h"
#include "../core/internal.h"
#include "../io/io_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MSG_SIZE 512
/* The stages' threads' stack (prx_pipe_stage_attr): glibc keeps up to 40 MiB of joined threads'
 * stacks for the next threads and unmaps the rest at the join, each unmap a TLB shoot-down on every
 * core the process ran on (an interrupt through the hypervisor on a KVM guest); a reader and 8
 * writers at 1 MiB stay in that cache. The stages' callbacks (reading, packing, stdio and the
 * SigMF writers' metadata) use a few tens of KiB. */
#define STAGE_STACK ((size_t)1 << 20)
#define BLOCK_NO_BUFFER 2 /* in_stop: the block's buffer could not be made (a set-up error) */

/* A thread's place to sleep: waiting is set while it sleeps (or is about to). A parker with
 * poll_us looks every poll_us microseconds instead and never sets waiting: nobody wakes it. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_int waiting;
  unsigned poll_us;
} parker;

/* One writer's counter and parker, a cache line (or more) of its own: the writers move their
 * counters at once. */
typedef struct {
  _Alignas(64) _Atomic uint64_t seq; /* the next slot this writer writes */
  parker park;
} writer_slot;

typedef struct {
  _Alignas(64) parker park;
} reader_slot;

typedef struct {
  const prx_pipe_config *cfg;
  int in_depth, out_depth, n_writers, n_readers;
  int wake_batch; /* compute wakes the first writer once this many slots wait (1: each slot) */
  int multi;      /* the reader threads of read_at (several, or one with view_at) */
  pthread_mutex_t mu;
  unsigned char **in, **out;
  const void **in_view; /* view_at: the block in place (NULL: read into in[]) */
  size_t *in_n, *out_n;
  uint64_t *in_pos;
  /* several readers (read_at): a block's read is complete (ready) before it is handed over in
   * stream order; its status and stop flag go with it (guarded by mu) */
  unsigned char *in_ready, *in_stop;
  prx_status *in_st;
  char *in_msg; /* MSG_SIZE bytes per block: a failed read's message, from its reader */
  _Atomic uint64_t claim_seq; /* the next block a reader takes (moved under mu) */
  /* Sequence counters: input block i lives in in[i % in_depth], output slot j in
   * out[j % out_depth]. The reader owns blocks [c_seq, ...) that it has not published,
   * compute owns block c_seq and slot o_seq, writer w owns slot w[w].seq. */
  _Alignas(64) _Atomic uint64_t r_seq;
  _Alignas(64) _Atomic uint64_t c_seq;
  _Alignas(64) _Atomic uint64_t o_seq;
  _Alignas(64) atomic_int reader_done;
  atomic_int compute_done;
  atomic_int stop_read; /* a compute or write error: the reader stops */
  atomic_int stop_all;  /* a write error: compute and the writers stop too */
  parker comp;          /* compute waits for an input block or a free output slot */
  reader_slot *rd;      /* the readers wait for a free input block */
  writer_slot *w;       /* the writers wait for an output slot */
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

size_t prx_pipe_cache_block(size_t max_block, size_t min_block, double out_bytes_per_sample,
                            int out_depth, int workers) {
  double per_worker = out_bytes_per_sample * (out_depth > 0 ? out_depth : 1) /
                      (workers > 0 ? workers : 1); /* bytes per sample of a block */
  size_t b = max_block;
  while (b / 2 >= min_block && (double)b * per_worker > (double)PRX_PIPE_CACHE_BYTES) b /= 2;
  return b;
}

size_t prx_pipe_chan_cpu_block(size_t max_block, size_t K, size_t D, size_t n_sel, int out_depth,
                               int workers) {
  size_t least = prx_chan_cpu_batch_outputs(K) * D; /* whole FFT batches per call */
  return prx_pipe_cache_block(max_block, least < 4096 ? 4096 : least,
                              8.0 * (double)n_sel / (double)D, out_depth, workers);
}

prx_status prx_pipe_iq_read(void *reader, void *buf, size_t max, size_t *n) {
  return prx_iq_read((prx_iq_reader *)reader, buf, max, n);
}

prx_status prx_pipe_iq_read_at(void *reader, void *buf, size_t max, uint64_t first, size_t *n) {
  prx_iq_reader *r = reader;
  return prx_iq_read_at(r, buf, prx_iq_reader_samples(r) + first, max, n);
}

/* Records the first error with its message (called with mu held). */
static void record_error_msg(pipe_state *p, prx_pipe_stage stage, prx_status st, const char *msg) {
  if (p->res.failed != PRX_PIPE_NONE) return;
  p->res.failed = stage;
  p->res.status = st;
  snprintf(p->msg, sizeof p->msg, "%s", msg);
}

/* Records the first error (called with mu held, on the thread that met it). */
static void record_error(pipe_state *p, prx_pipe_stage stage, prx_status st) {
  record_error_msg(p, stage, st, prx_last_error());
}

/* record_error, taking mu. */
static void record_error_locked(pipe_state *p, prx_pipe_stage stage, prx_status st) {
  pthread_mutex_lock(&p->mu);
  record_error(p, stage, st);
  pthread_mutex_unlock(&p->mu);
}

/* ---- the parkers ---- */

static void parker_init(parker *k) {
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  atomic_init(&k->waiting, 0);
  k->poll_us = 0;
}

/* A polling thread's timers without the default 50 us of slack (Linux: per thread), so that its
 * looks come every poll_us. */
static void poll_timers(const parker *k) {
#ifdef PR_SET_TIMERSLACK
  if (k->poll_us) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#else
  (void)k;
#endif
}

static void parker_destroy(parker *k) {
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->cv);
}

typedef int (*ready_fn)(pipe_state *p, int who);

/* Returns once ready(p, who) holds, sleeping on k meanwhile (or polling: k->poll_us). */
static void wait_until(pipe_state *p, parker *k, ready_fn ready, int who) {
  if (ready(p, who)) return;
  if (k->poll_us) {
    struct timespec ts = {0, (long)k->poll_us * 1000};
    while (!ready(p, who)) nanosleep(&ts, NULL);
    return;
  }
  pthread_mutex_lock(&k->mu);
  atomic_store(&k->waiting, 1);
  while (!ready(p, who)) pthread_cond_wait(&k->cv, &k->mu);
  atomic_store(&k->waiting, 0);
  pthread_mutex_unlock(&k->mu);
}

/* Wakes k's thread if it sleeps (called after the counter it waits on has moved). */
static void wake(parker *k) {
  if (!atomic_load(&k->waiting)) return;
  pthread_mutex_lock(&k->mu);
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

static void wake_readers(pipe_state *p) {
  for (int i = 0; i < p->n_readers; i++) wake(&p->rd[i].park);
}

static void wake_writers(pipe_state *p) {
  for (int w = 0; w < p->n_writers; w++) wake(&p->w[w].park);
}

static void wake_all(pipe_state *p) {
  wake(&p->comp);
  wake_readers(p);
  wake_writers(p);
}

static uint64_t slowest_writer(pipe_state *p) {
  uint64_t m = atomic_load(&p->w[0].seq);
  for (int w = 1; w < p->n_writers; w++) {
    uint64_t s = atomic_load(&p->w[w].seq);
    if (s < m) m = s;
  }
  return m;
}

/* The stages' waits. */
static int reader_ready(pipe_state *p, int who) {
  (void)who;
  return atomic_load(&p->stop_read) ||
         atomic_load(&p->r_seq) - atomic_load(&p->c_seq) < (uint64_t)p->in_depth;
}

/* The one reader, once it found the ring full: it sleeps until half the ring (at least one
 * block) is free, then reads those blocks one after the other, so that compute wakes it once for
 * every in_depth / 2 blocks instead of after every block (each wake a futex call on compute's
 * thread, and on a KVM guest an interrupt through the hypervisor to the reader's vCPU). Compute
 * keeps the other half of the ring to work on meanwhile. */
static uint64_t reader_batch(const pipe_state *p) {
  return p->in_depth / 2 > 1 ? (uint64_t)(p->in_depth / 2) : 1;
}

static int reader_batch_ready(pipe_state *p, int who) {
  (void)who;
  return atomic_load(&p->stop_read) ||
         atomic_load(&p->r_seq) - atomic_load(&p->c_seq) + reader_batch(p) <= (uint64_t)p->in_depth;
}

static int multi_reader_ready(pipe_state *p, int who) {
  (void)who;
  return atomic_load(&p->stop_read) || atomic_load(&p->reader_done) ||
         atomic_load(&p->claim_seq) - atomic_load(&p->c_seq) < (uint64_t)p->in_depth;
}

static int input_ready(pipe_state *p, int who) {
  (void)who;
  return atomic_load(&p->stop_all) || atomic_load(&p->reader_done) ||
         atomic_load(&p->r_seq) != atomic_load(&p->c_seq);
}

static int slot_free(pipe_state *p, int who) {
  (void)who;
  return atomic_load(&p->stop_all) ||
         atomic_load(&p->o_seq) - slowest_writer(p) < (uint64_t)p->out_depth;
}

static int slot_ready(pipe_state *p, int w) {
  return atomic_load(&p->stop_all) || atomic_load(&p->compute_done) ||
         atomic_load(&p->w[w].seq) != atomic_load(&p->o_seq);
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
  poll_timers(&p->rd[0].park);
  uint64_t pos = p->res.samples_read; /* after the first block given with the configuration */
  for (;;) {
    if (!reader_ready(p, 0)) wait_until(p, &p->rd[0].park, reader_batch_ready, 0);
    if (atomic_load(&p->stop_read)) break;
    uint64_t rs = atomic_load(&p->r_seq); /* this thread alone moves it */
    size_t slot = (size_t)(rs % (uint64_t)p->in_depth);
    int stop = stop_requested(c);
    size_t n = 0;
    prx_status st = PRX_OK;
    if (!stop) {
      st = checked_count(c, c->read(c->read_ctx, p->in[slot], c->block_samples, &n), &n);
      /* a read cut short by a stop signal is the stop, not an error */
      if (st && stop_requested(c)) stop = 1;
    }
    if (n > 0) {
      p->in_n[slot] = n;
      p->in_pos[slot] = pos;
      pos += n;
      p->res.samples_read += n;
      p->res.blocks_read++;
      atomic_store(&p->r_seq, rs + 1);
      wake(&p->comp);
    }
    if (stop) {
      p->res.stopped = 1;
      break;
    }
    if (st) {
      record_error_locked(p, PRX_PIPE_READ, st); /* not fatal: what was read is computed */
      break;
    }
    if (n == 0) {
      p->res.end_of_stream = 1;
      break;
    }
  }
  atomic_store(&p->reader_done, 1); /* after every r_seq it moved: compute reads them in turn */
  wake(&p->comp);
  return NULL;
}

static void *buf_alloc(const prx_pipe_config *c, size_t bytes);

/* Several readers: hands the blocks whose reads are complete to compute, in stream order, up to
 * the block that ends the stream (short, failed or stopped); called with mu held. */
static void publish_ready(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  while (!atomic_load(&p->reader_done) && !atomic_load(&p->stop_read)) {
    uint64_t rs = atomic_load(&p->r_seq);
    size_t slot = (size_t)(rs % (uint64_t)p->in_depth);
    if (!p->in_ready[slot]) break;
    p->in_ready[slot] = 0;
    size_t n = p->in_n[slot];
    if (n > 0) {
      p->in_pos[slot] = p->res.samples_read; /* the samples handed over before this block */
      p->res.samples_read += n;
      p->res.blocks_read++;
      atomic_store(&p->r_seq, rs + 1);
      wake(&p->comp);
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
      atomic_store(&p->reader_done, 1); /* the blocks the other readers still read are dropped */
      wake(&p->comp);
      wake_readers(p);
    }
  }
}

/* One of several readers (read_at): takes the next block while fewer than in_depth blocks are
 * ahead of compute, reads it without the lock, then hands over what is complete in order. A
 * block b + in_depth is taken only once compute has taken block b, so a reader never writes
 * into a block compute may still read. */
typedef struct {
  pipe_state *p;
  int i;
} thread_arg;

static void *multi_reader_main(void *arg) {
  pipe_state *p = ((thread_arg *)arg)->p;
  int me = ((thread_arg *)arg)->i;
  const prx_pipe_config *c = p->cfg;
  take_stop_signals(c);
  for (;;) {
    wait_until(p, &p->rd[me].park, multi_reader_ready, me);
    pthread_mutex_lock(&p->mu);
    if (atomic_load(&p->stop_read) || atomic_load(&p->reader_done)) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    uint64_t b = atomic_load(&p->claim_seq);
    if (b - atomic_load(&p->c_seq) >= (uint64_t)p->in_depth) { /* another reader took it */
      pthread_mutex_unlock(&p->mu);
      continue;
    }
    atomic_store(&p->claim_seq, b + 1);
    pthread_mutex_unlock(&p->mu);
    size_t slot = (size_t)(b % (uint64_t)p->in_depth);
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
    pthread_mutex_unlock(&p->mu);
  }
  return NULL;
}

/* Compute's wait for ready: counted and timed where it sleeps (the clock read only then). */
static void compute_wait(pipe_state *p, ready_fn ready, uint64_t *count, double *ms) {
  if (ready(p, 0)) return;
  double t = prx_now();
  wait_until(p, &p->comp, ready, 0);
  *ms += (prx_now() - t) * 1e3;
  (*count)++;
}

/* The compute stage, on the caller's thread. */
static void compute_loop(pipe_state *p) {
  const prx_pipe_config *c = p->cfg;
  uint64_t pos_end = 0;
  for (;;) {
    /* the slots waiting for a sleeping first writer are not held back while compute sleeps for
     * input (a live stream's output) */
    if (p->wake_batch > 1 && !input_ready(p, 0)) wake(&p->w[0].park);
    compute_wait(p, input_ready, &p->res.compute_waits_in, &p->res.ms_compute_wait_in);
    if (atomic_load(&p->stop_all)) break;
    uint64_t cs = atomic_load(&p->c_seq), os_seq = atomic_load(&p->o_seq); /* compute's own */
    /* reader_done is read before r_seq: it is set after the reader's last r_seq */
    int done = atomic_load(&p->reader_done);
    int last = done && atomic_load(&p->r_seq) == cs; /* every block was taken */
    /* the first writer may sleep with fewer than wake_batch slots waiting: woken before
     * compute sleeps for one of them */
    if (p->wake_batch > 1 && !slot_free(p, 0)) wake(&p->w[0].park);
    compute_wait(p, slot_free, &p->res.compute_waits_out, &p->res.ms_compute_wait_out);
    if (atomic_load(&p->stop_all)) break;
    size_t is = (size_t)(cs % (uint64_t)p->in_depth);
    size_t os = (size_t)(os_seq % (uint64_t)p->out_depth);
    if (last) /* the reader is gone: the flush (a long filter tail) takes the stop signals now */
      take_stop_signals(c);
    const void *in = last ? NULL : p->in_view[is] ? p->in_view[is] : p->in[is];
    size_t n = last ? 0 : p->in_n[is];
    uint64_t pos = last ? pos_end : p->in_pos[is];
    size_t out_n = 0;
    prx_status st = c->compute(c->ctx, in, n, pos, p->out[os], &out_n);
    if (st) {
      record_error_locked(p, PRX_PIPE_COMPUTE, st);
      atomic_store(&p->stop_read, 1); /* the writers still write every block computed before */
      wake_all(p);
      break;
    }
    p->res.blocks_computed++;
    if (!last) {
      p->res.samples_computed += n;
      pos_end = pos + n;
      atomic_store(&p->c_seq, cs + 1);
      /* the one reader is woken once its batch is free (reader_batch_ready): compute's c_seq
       * is the new one, r_seq does not move while the reader sleeps */
      if (p->multi || reader_batch_ready(p, 0)) wake_readers(p);
      /* compute is done with the samples before pos_end */
      if (c->view_at && c->view_done) c->view_done(c->view_ctx, pos_end);
    }
    p->out_n[os] = out_n;
    if (last) {
      p->flush_seq = os_seq;
      p->has_flush = 1;
    }
    atomic_store(&p->o_seq, os_seq + 1);
    /* the writers wake each other (writer_main); the first is woken once wake_batch slots wait
     * for it (a writer that is awake finds them without a wake) */
    if (last || os_seq + 1 - atomic_load(&p->w[0].seq) >= (uint64_t)p->wake_batch)
      wake(&p->w[0].park);
    if (last) break;
  }
  atomic_store(&p->compute_done, 1);
  wake_writers(p);
}

static void *writer_main(void *arg) {
  pipe_state *p = ((thread_arg *)arg)->p;
  int w = ((thread_arg *)arg)->i;
  const prx_pipe_config *c = p->cfg;
  writer_slot *me = &p->w[w];
  poll_timers(&me->park);
  for (;;) {
    wait_until(p, &me->park, slot_ready, w);
    if (atomic_load(&p->stop_all)) break;
    /* compute_done is read before o_seq: it is set after compute's last o_seq */
    int done = atomic_load(&p->compute_done);
    uint64_t seq = atomic_load(&me->seq); /* this writer's own */
    if (seq == atomic_load(&p->o_seq)) {
      if (done) break;
      continue;
    }
    /* the next two writers of the tree: they take this slot too (a busy one finds it later
     * and wakes its own two then) */
    for (int k = 2 * w + 1; k <= 2 * w + 2 && k < p->n_writers; k++) wake(&p->w[k].park);
    size_t os = (size_t)(seq % (uint64_t)p->out_depth);
    prx_status st = c->write(c->ctx, w, p->out[os], p->out_n[os], seq);
    if (st) {
      record_error_locked(p, PRX_PIPE_WRITE, st);
      atomic_store(&p->stop_read, 1);
      atomic_store(&p->stop_all, 1);
      wake_all(p);
      break;
    }
    atomic_store(&me->seq, seq + 1);
    /* compute waits for the slowest writer: wake it only once the slot is free */
    if (slot_free(p, 0)) wake(&p->comp);
  }
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
  if (c->first_block) { /* (read and counted: prx_pipe_run) */
    if (serial_step(p, p->in[0], c->first_samples, 0)) return;
    pos = c->first_samples;
  }
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

pthread_attr_t *prx_pipe_stage_attr(pthread_attr_t *attr) {
  if (pthread_attr_init(attr) != 0) return NULL;
  if (pthread_attr_setstacksize(attr, STAGE_STACK) == 0) return attr;
  pthread_attr_destroy(attr);
  return NULL;
}

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
  prx_free(p->w);
  prx_free(p->rd);
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
  if (c->wake_batch < 0)
    return prx_fail(PRX_ERR_INVALID, "pipeline: wake batch %d is negative", c->wake_batch);
  if (c->n_readers < 0 || c->n_readers > 64)
    return prx_fail(PRX_ERR_INVALID, "pipeline: %d readers is not in 1..64", c->n_readers);
  if (!c->alloc != !c->free)
    return prx_fail(PRX_ERR_INVALID, "pipeline: give both alloc and free hooks, or neither");
  if (c->first_block &&
      (c->read_at || c->alloc || !c->first_samples || c->first_samples > c->block_samples))
    return prx_fail(PRX_ERR_INVALID,
                    "pipeline: a first block of %zu samples (blocks of %zu) needs 1..block "
                    "samples, one reader and no alloc hooks",
                    c->first_samples, c->block_samples);
  return PRX_OK;
}

prx_status prx_pipe_run(const prx_pipe_config *cfg, prx_pipe_result *res) {
  pipe_state s;
  memset(&s, 0, sizeof s);
  if (res) memset(res, 0, sizeof *res);
  prx_status st = check_config(cfg);
  if (st) {
    if (cfg) prx_pipe_host_free(cfg->first_block); /* taken over in every case */
    if (res) res->failed = PRX_PIPE_SETUP, res->status = st;
    return st;
  }
  s.cfg = cfg;
  s.in_depth = cfg->serial ? 1 : cfg->in_depth ? cfg->in_depth : 4;
  s.out_depth = cfg->serial ? 1 : cfg->out_depth ? cfg->out_depth : 3;
  s.n_writers = cfg->n_writers ? cfg->n_writers : 1;
  s.wake_batch = cfg->wake_batch < 1             ? 1
                 : cfg->wake_batch > s.out_depth ? s.out_depth
                                                 : cfg->wake_batch;
  /* several readers only with positional reads; in_depth >= 3 leaves each of them a block */
  s.multi = cfg->read_at && !cfg->serial && (cfg->n_readers > 1 || cfg->view_at);
  s.n_readers = s.multi && cfg->n_readers > 1 ? cfg->n_readers : 1;
  s.in = prx_alloc((size_t)s.in_depth, sizeof *s.in);
  s.in_view = prx_alloc((size_t)s.in_depth, sizeof *s.in_view);
  s.out = prx_alloc((size_t)s.out_depth, sizeof *s.out);
  s.in_n = prx_alloc((size_t)s.in_depth, sizeof *s.in_n);
  s.in_pos = prx_alloc((size_t)s.in_depth, sizeof *s.in_pos);
  s.out_n = prx_alloc((size_t)s.out_depth, sizeof *s.out_n);
  s.w = prx_alloc((size_t)s.n_writers, sizeof *s.w);
  s.rd = prx_alloc((size_t)s.n_readers, sizeof *s.rd);
  s.in_ready = prx_alloc((size_t)s.in_depth, 1);
  s.in_stop = prx_alloc((size_t)s.in_depth, 1);
  s.in_st = prx_alloc((size_t)s.in_depth, sizeof *s.in_st);
  s.in_msg = prx_alloc((size_t)s.in_depth, MSG_SIZE);
  int ok = s.in && s.in_view && s.out && s.in_n && s.in_pos && s.out_n && s.w && s.rd &&
           s.in_ready && s.in_stop && s.in_st && s.in_msg;
  void *first = cfg->first_block;
  if (first && s.in) {
    s.in[0] = first; /* freed with the others from here on */
    first = NULL;
  }
  for (int i = 0; ok && i < s.in_depth; i++)
    ok = s.multi || /* the reader threads of read_at make the input blocks on first use */
         s.in[i] || (s.in[i] = buf_alloc(cfg, cfg->block_samples * cfg->sample_size)) != NULL;
  for (int i = 0; ok && i < s.out_depth; i++)
    ok = (s.out[i] = buf_alloc(cfg, cfg->out_bytes)) != NULL;
  if (!ok) {
    prx_pipe_host_free(first);
    free_state(&s);
    st = prx_fail(PRX_ERR_NOMEM, "pipeline: cannot allocate %d blocks of %zu bytes and %d of %zu",
                  s.in_depth, cfg->block_samples * cfg->sample_size, s.out_depth, cfg->out_bytes);
    if (res) res->failed = PRX_PIPE_SETUP, res->status = st;
    return st;
  }

  if (s.multi && cfg->view_at && cfg->view_start) cfg->view_start(cfg->view_ctx);
  if (cfg->first_block) { /* the stream's first block, read before the run: in[0] */
    s.in_n[0] = cfg->first_samples;
    s.in_pos[0] = 0;
    s.res.samples_read = cfg->first_samples;
    s.res.blocks_read = 1;
  }
  sigset_t stop_sigs, old_mask;
  stop_signal_set(&stop_sigs);
  if (cfg->serial) {
    if (cfg->stop_signals) pthread_sigmask(SIG_UNBLOCK, &stop_sigs, &old_mask);
    run_serial(&s);
    if (cfg->stop_signals) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  } else {
    pthread_mutex_init(&s.mu, NULL);
    parker_init(&s.comp);
    for (int i = 0; i < s.n_readers; i++) parker_init(&s.rd[i].park);
    for (int w = 0; w < s.n_writers; w++) parker_init(&s.w[w].park);
    if (!s.multi) s.rd[0].park.poll_us = cfg->poll_us; /* the one reader, and writer 0 */
    if (cfg->first_block)
      atomic_store(&s.r_seq, 1); /* handed to compute before the reader starts */
    s.w[0].park.poll_us = cfg->poll_us;
    thread_arg *wa = prx_alloc((size_t)s.n_writers, sizeof *wa);
    thread_arg *ra = prx_alloc((size_t)s.n_readers, sizeof *ra);
    pthread_t *wt = prx_alloc((size_t)s.n_writers, sizeof *wt);
    pthread_t *rt = prx_alloc((size_t)s.n_readers, sizeof *rt);
    int readers_started = 0, writers_started = 0;
    /* with stop_signals the caller's thread and the writers (created with its mask) block the
     * stop signals and the reader unblocks them, so that they interrupt its blocking read */
    if (cfg->stop_signals) pthread_sigmask(SIG_BLOCK, &stop_sigs, &old_mask);
    void *(*reader_fn)(void *) = s.multi ? multi_reader_main : reader_main;
    pthread_attr_t attr;
    pthread_attr_t *ap = prx_pipe_stage_attr(&attr);
    for (; wa && ra && wt && rt && readers_started < s.n_readers; readers_started++) {
      ra[readers_started].p = &s;
      ra[readers_started].i = readers_started;
      void *arg = s.multi ? (void *)&ra[readers_started] : (void *)&s;
      if (pthread_create(&rt[readers_started], ap, reader_fn, arg)) break;
    }
    int reader_started = rt && readers_started == s.n_readers;
    for (; reader_started && writers_started < s.n_writers; writers_started++) {
      wa[writers_started].p = &s;
      wa[writers_started].i = writers_started;
      if (pthread_create(&wt[writers_started], ap, writer_main, &wa[writers_started])) break;
    }
    if (ap) pthread_attr_destroy(ap);
    if (!reader_started || writers_started < s.n_writers) {
      pthread_mutex_lock(&s.mu);
      prx_fail(PRX_ERR_NOMEM, "pipeline: cannot start its threads");
      record_error(&s, PRX_PIPE_SETUP, PRX_ERR_NOMEM);
      pthread_mutex_unlock(&s.mu);
      atomic_store(&s.stop_read, 1);
      atomic_store(&s.stop_all, 1);
      atomic_store(&s.compute_done, 1);
      wake_all(&s);
    } else {
      compute_loop(&s);
    }
    double t_computed = prx_now();
    for (int i = 0; i < readers_started; i++) pthread_join(rt[i], NULL);
    /* compute and the readers are done with the input blocks: they are freed while the writers
     * finish their last slots (a command's recordings, at the stream's end) */
    for (int i = 0; i < s.in_depth; i++) {
      buf_free(cfg, s.in[i]);
      s.in[i] = NULL;
    }
    for (int w = 0; w < writers_started; w++) pthread_join(wt[w], NULL);
    s.res.ms_writers_after = (prx_now() - t_computed) * 1e3;
    if (cfg->stop_signals) pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    prx_free(wa);
    prx_free(ra);
    prx_free(wt);
    prx_free(rt);
    s.res.blocks_written = slowest_writer(&s);
    s.res.flushed = s.has_flush && s.res.blocks_written > s.flush_seq;
    pthread_mutex_destroy(&s.mu);
    parker_destroy(&s.comp);
    for (int i = 0; i < s.n_readers; i++) parker_destroy(&s.rd[i].park);
    for (int w = 0; w < s.n_writers; w++) parker_destroy(&s.w[w].park);
  }
  free_state(&s);
  if (res) *res = s.res;
  if (s.res.failed != PRX_PIPE_NONE) return prx_fail(s.res.status, "%s", s.msg);
  return PRX_OK;
}
