/* The input in place (pipeline.h, "the input in place"): a regular file's data mapped read-only,
 * populated and pinned for DMA in chunks by the map's threads, handed to the compute stage where
 * it lies. Chunk c holds the data bytes [c * chunk, (c + 1) * chunk) of the mapping, which starts
 * at the data's first byte (a page boundary); its state goes EMPTY -> PINNED or FAILED -> DONE
 * (unpinned and unmapped once compute is past it). The threads take, in this order: a chunk to
 * unpin (behind compute), the next chunk to pin (one pin at a time: the driver serializes them;
 * the first one waits for the device's context, the other threads populate meanwhile), the next
 * chunk to populate; pinning and populating stop window_bytes ahead of compute. Nothing here reads
 * the mapping on the CPU: the kernel populates it, the driver pins it, the GPU reads it. */
#include "pipeline.h"

#include "../core/cuda_module.h"
#include "../core/internal.h"
#include "../io/io_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

#define MAP_MAX_THREADS 16
#define MAP_POPULATE_STEP ((size_t)4 << 20) /* bytes populated per call */

enum { CHUNK_EMPTY = 0, CHUNK_PINNED, CHUNK_FAILED, CHUNK_DONE };

struct prx_pipe_map {
  prx_pipe_map_config cfg;
  prx_iq_reader *reader;
  int fd;
  size_t sample_size;
  uint64_t base;  /* the data's first byte in the file (page-aligned) */
  uint64_t bytes; /* the data mapped: up to the file's end (or the SigMF member's) at open */
  unsigned char *addr;
  size_t chunk;
  size_t n_chunks;
  unsigned char *state;
  unsigned char *populating; /* per chunk: a thread populates it (not unmapped meanwhile) */
  pthread_t thread[MAP_MAX_THREADS];
  int n_threads;
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* the threads wait for work */
  pthread_cond_t cv_pin; /* the readers wait for a chunk's pin */
  size_t next_pin, next_populate, next_unpin;
  int started, pinning, closing; /* pins allowed (prx_pipe_map_start); a pin under way */
  uint64_t held;                 /* bytes pinned, or being pinned, and not yet unpinned */
  uint64_t done_bytes;           /* compute is done with the mapping's bytes before this */
  double t_open;
  prx_pipe_map_stats st;
};

prx_pipe_map_config prx_pipe_map_config_default(void) {
  prx_pipe_map_config c;
  memset(&c, 0, sizeof c);
  c.threads = 4;
  c.chunk_bytes = (size_t)64 << 20;
  c.window_bytes = (size_t)1 << 30;
  return c;
}

/* The default pinning: the CUDA module's, read-only (it waits for the device's context). */
static prx_status module_pin(void *ctx, void *p, size_t bytes) {
  (void)ctx;
  const prx_cuda_module *m = prx_cuda_module_get();
  if (!m || !m->host_register)
    return prx_fail(PRX_ERR_NODEVICE, "no CUDA module to pin the input with: %s",
                    prx_cuda_module_why());
  return m->host_register(p, bytes);
}

static void module_unpin(void *ctx, void *p) {
  (void)ctx;
  const prx_cuda_module *m = prx_cuda_module_get();
  if (m && m->host_unregister) m->host_unregister(p);
}

static size_t chunk_len(const prx_pipe_map *m, size_t c) {
  uint64_t start = (uint64_t)c * m->chunk;
  return m->bytes - start < m->chunk ? (size_t)(m->bytes - start) : m->chunk;
}

/* whether chunk c ends within the window ahead of compute (called with the lock held); the pins
 * also keep what is pinned (held) within window + chunk, the chunk compute is in */
static int in_window(const prx_pipe_map *m, size_t c) {
  return (uint64_t)c * m->chunk + chunk_len(m, c) <= m->done_bytes + m->cfg.window_bytes;
}

/* whether a chunk compute is done with is still to unpin (called with the lock held) */
static int unpin_due(const prx_pipe_map *m) {
  return m->next_unpin < m->next_pin &&
         (uint64_t)m->next_unpin * m->chunk + chunk_len(m, m->next_unpin) <= m->done_bytes;
}

static void *map_thread(void *arg) {
  prx_pipe_map *m = arg;
  pthread_mutex_lock(&m->mu);
  while (!m->closing) {
    size_t c;
    if (unpin_due(m) && m->state[m->next_unpin] != CHUNK_EMPTY && !m->populating[m->next_unpin]) {
      c = m->next_unpin++;
      int pinned = m->state[c] == CHUNK_PINNED;
      m->state[c] = CHUNK_DONE;
      pthread_mutex_unlock(&m->mu);
      /* unpinned and unmapped behind compute, off the end's path */
      if (pinned) m->cfg.unpin(m->cfg.pin_ctx, m->addr + (size_t)c * m->chunk);
      munmap(m->addr + (size_t)c * m->chunk, chunk_len(m, c));
      pthread_mutex_lock(&m->mu);
      if (pinned) m->held -= chunk_len(m, c);
      pthread_cond_broadcast(&m->cv); /* a pin may wait for it */
      continue;
    }
    if (m->started && !m->pinning && m->next_pin < m->n_chunks && in_window(m, m->next_pin) &&
        m->held + chunk_len(m, m->next_pin) <= m->cfg.window_bytes + m->chunk) {
      int first = m->next_pin == 0;
      m->pinning = 1;
      c = m->next_pin++;
      m->held += chunk_len(m, c);
      if (m->next_populate < m->next_pin) m->next_populate = m->next_pin;
      pthread_mutex_unlock(&m->mu);
      double t0 = prx_now();
      prx_status st = m->cfg.pin(m->cfg.pin_ctx, m->addr + (size_t)c * m->chunk, chunk_len(m, c));
      double t1 = prx_now();
      pthread_mutex_lock(&m->mu);
      m->pinning = 0;
      if (st) m->held -= chunk_len(m, c);
      m->state[c] = st ? CHUNK_FAILED : CHUNK_PINNED;
      m->st.chunks++;
      if (st) {
        m->st.chunks_failed++;
        if (!m->st.why[0]) snprintf(m->st.why, sizeof m->st.why, "%s", prx_last_error());
      } else {
        m->st.pinned_bytes += chunk_len(m, c);
      }
      if (first) m->st.ms_first_pin = (t1 - m->t_open) * 1e3;
      m->st.ms_pin += (t1 - t0) * 1e3;
      pthread_cond_broadcast(&m->cv); /* another may pin now */
      pthread_cond_broadcast(&m->cv_pin);
      continue;
    }
    if (m->next_populate < m->n_chunks && in_window(m, m->next_populate)) {
      c = m->next_populate++;
      m->populating[c] = 1;
      pthread_mutex_unlock(&m->mu);
      double t0 = prx_now();
      /* errors (a file cut meanwhile: EFAULT; a kernel without it: EINVAL) only cost speed:
       * the pin faults the pages in, or fails and the block is read */
      /* in pieces: each call holds the process's mapping lock (for reading), which the CUDA
       * runtime's own mappings, made meanwhile, wait for */
      for (size_t o = 0, len = chunk_len(m, c); o < len; o += MAP_POPULATE_STEP)
        madvise(m->addr + (size_t)c * m->chunk + o,
                len - o < MAP_POPULATE_STEP ? len - o : MAP_POPULATE_STEP, MADV_POPULATE_READ);
      double t1 = prx_now();
      pthread_mutex_lock(&m->mu);
      m->populating[c] = 0;
      m->st.ms_populate += (t1 - t0) * 1e3;
      pthread_cond_broadcast(&m->cv); /* its unmapping may wait for it */
      continue;
    }
    pthread_cond_wait(&m->cv, &m->mu);
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

prx_status prx_pipe_map_open(prx_iq_reader *r, const prx_pipe_map_config *cfg, prx_pipe_map **out) {
  *out = NULL;
  const prx_pipe_map_config d = prx_pipe_map_config_default(); /* in place of zeros */
  prx_pipe_map_config c = cfg ? *cfg : d;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  if (!c.threads) c.threads = d.threads;
  if (!c.chunk_bytes) c.chunk_bytes = d.chunk_bytes;
  if (!c.window_bytes) c.window_bytes = d.window_bytes;
  if (c.threads < 1 || c.threads > MAP_MAX_THREADS || c.chunk_bytes % (size_t)page ||
      c.window_bytes < 2 * c.chunk_bytes || !c.pin != !c.unpin)
    return prx_fail(PRX_ERR_INVALID, "input map: %d threads, chunks of %zu bytes, window %zu",
                    c.threads, c.chunk_bytes, c.window_bytes);
  if (!c.pin) {
    c.pin = module_pin;
    c.unpin = module_unpin;
  }
  int fd;
  uint64_t base, limit;
  struct stat sb;
  if (!prx_iq_reader_file(r, &fd, &base, &limit) || fstat(fd, &sb) || !S_ISREG(sb.st_mode))
    return prx_fail(PRX_ERR_UNSUPPORTED, "input map: the input is no regular file");
  size_t ss = prx_format_size(prx_iq_reader_info(r)->format);
  uint64_t first = base + prx_iq_reader_samples(r) * ss;
  if (first % (uint64_t)page || base % (uint64_t)page)
    return prx_fail(PRX_ERR_UNSUPPORTED, "input map: the data does not start on a page");
  uint64_t size = (uint64_t)sb.st_size;
  uint64_t bytes = size > base ? size - base : 0;
  if (limit != UINT64_MAX && bytes > limit) bytes = limit;
  if (bytes == 0 || bytes > SIZE_MAX / 2)
    return prx_fail(PRX_ERR_UNSUPPORTED, "input map: %llu bytes of data",
                    (unsigned long long)bytes);
  prx_pipe_map *m = calloc(1, sizeof *m);
  if (!m) return prx_fail(PRX_ERR_NOMEM, "input map: out of memory");
  m->cfg = c;
  m->reader = r;
  m->fd = fd;
  m->sample_size = ss;
  m->base = base;
  m->bytes = bytes;
  m->chunk = c.chunk_bytes;
  m->n_chunks = (size_t)((bytes + m->chunk - 1) / m->chunk);
  m->st.bytes = bytes;
  m->t_open = prx_now();
  m->state = calloc(m->n_chunks, 1);
  m->populating = calloc(m->n_chunks, 1);
  m->addr = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, fd, (off_t)base);
  if (!m->state || !m->populating || m->addr == MAP_FAILED) {
    int e = errno;
    if (m->addr == MAP_FAILED) m->addr = NULL;
    prx_pipe_map_close(m);
    return prx_fail(PRX_ERR_UNSUPPORTED, "input map: cannot map the input: %s", strerror(e));
  }
  m->started = !c.gated;
  pthread_mutex_init(&m->mu, NULL);
  pthread_cond_init(&m->cv, NULL);
  pthread_cond_init(&m->cv_pin, NULL);
  for (; m->n_threads < c.threads; m->n_threads++)
    if (pthread_create(&m->thread[m->n_threads], NULL, map_thread, m)) break;
  if (m->n_threads == 0) {
    prx_pipe_map_close(m);
    return prx_fail(PRX_ERR_NOMEM, "input map: cannot start its threads");
  }
  *out = m;
  return PRX_OK;
}

/* Counts a block left to the read (called without the lock). */
static prx_status left_to_read(prx_pipe_map *m) {
  pthread_mutex_lock(&m->mu);
  m->st.reads++;
  pthread_mutex_unlock(&m->mu);
  return PRX_OK;
}

prx_status prx_pipe_map_view_at(void *map, uint64_t first, size_t max, const void **p, size_t *n) {
  prx_pipe_map *m = map;
  *p = NULL;
  *n = 0;
  const uint64_t ss = m->sample_size;
  uint64_t s0 = prx_iq_reader_samples(m->reader); /* a look-ahead's samples come first */
  if (first > (UINT64_MAX / ss) - s0 - 1 || max == 0) return left_to_read(m);
  uint64_t off = (s0 + first) * ss;
  uint64_t want = (uint64_t)max * ss;
  uint64_t have = off >= m->bytes ? 0 : m->bytes - off < want ? m->bytes - off : want;
  if (have % ss) return left_to_read(m); /* a partial sample at the end: the read says so */
  struct stat sb;
  /* the file as it is now: cut or grown since the open, the read decides */
  if (fstat(m->fd, &sb) || (uint64_t)sb.st_size != m->base + m->bytes) return left_to_read(m);
  if (have == 0) { /* the data's end, exactly */
    *p = m->addr;
    return PRX_OK;
  }
  size_t c = (size_t)(off / m->chunk);
  if ((off + have - 1) / m->chunk != c) return left_to_read(m); /* across two chunks */
  double t0 = prx_now();
  pthread_mutex_lock(&m->mu);
  /* a chunk outside the window is never waited for (compute lags beyond the window) */
  while (!m->closing && m->started && m->state[c] == CHUNK_EMPTY &&
         (c < m->next_pin || in_window(m, c)))
    pthread_cond_wait(&m->cv_pin, &m->mu);
  int pinned = m->state[c] == CHUNK_PINNED;
  m->st.ms_view_wait += (prx_now() - t0) * 1e3;
  pthread_mutex_unlock(&m->mu);
  /* the pinned pages are the file's as it was at the pin; a file cut since then is read */
  if (!pinned || fstat(m->fd, &sb) || (uint64_t)sb.st_size != m->base + m->bytes)
    return left_to_read(m);
  pthread_mutex_lock(&m->mu);
  m->st.views++;
  pthread_mutex_unlock(&m->mu);
  *p = m->addr + off;
  *n = (size_t)(have / ss);
  return PRX_OK;
}

void prx_pipe_map_start(void *map) {
  prx_pipe_map *m = map;
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  m->started = 1;
  pthread_cond_broadcast(&m->cv);
  pthread_mutex_unlock(&m->mu);
}

void prx_pipe_map_view_done(void *map, uint64_t end) {
  prx_pipe_map *m = map;
  uint64_t s0 = prx_iq_reader_samples(m->reader);
  uint64_t b = (s0 + end) * m->sample_size;
  pthread_mutex_lock(&m->mu);
  if (b > m->done_bytes) {
    m->done_bytes = b;
    pthread_cond_broadcast(&m->cv);
  }
  pthread_mutex_unlock(&m->mu);
}

void prx_pipe_map_get_stats(const prx_pipe_map *m, prx_pipe_map_stats *s) {
  if (!m) {
    memset(s, 0, sizeof *s);
    return;
  }
  pthread_mutex_lock((pthread_mutex_t *)&m->mu);
  *s = m->st;
  pthread_mutex_unlock((pthread_mutex_t *)&m->mu);
}

void prx_pipe_map_close(prx_pipe_map *m) {
  if (!m) return;
  if (m->n_threads) {
    pthread_mutex_lock(&m->mu);
    m->closing = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_cond_broadcast(&m->cv_pin);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->n_threads; i++) pthread_join(m->thread[i], NULL);
  }
  for (size_t c = 0; m->addr && c < m->n_chunks; c++) {
    if (m->state && m->state[c] == CHUNK_PINNED)
      m->cfg.unpin(m->cfg.pin_ctx, m->addr + c * m->chunk);
    if (!m->state || m->state[c] != CHUNK_DONE) munmap(m->addr + c * m->chunk, chunk_len(m, c));
  }
  if (m->n_threads) {
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    pthread_cond_destroy(&m->cv_pin);
  }
  free(m->state);
  free(m->populating);
  free(m);
}
