/* A persistent worker pool: threads are made once and woken for each parallel loop, so an
 * execute call neither creates threads nor allocates. Tasks are handed out by an atomic counter.
 *
 * The workers are started by a thread of the pool's own (starter), so that prx_pool_create
 * returns after one thread's start instead of all of them (13 on the 16-core GPU host, on the
 * path of every object's making): the caller goes on making its object meanwhile. A run takes
 * the workers started by then (each counts itself in, under the lock, with the generation it
 * has seen: it joins the runs begun after that, never the one in progress); the caller drains
 * the tasks with them, so a run before any worker has started is the caller's alone, the same
 * result. Where a worker cannot be started the pool runs with those that were. */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct prx_pool {
  int n_threads; /* asked for, including the caller */
  pthread_t *workers;
  pthread_t starter;
  int has_starter;
  int n_created; /* workers the starter made (read after it is joined) */
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  unsigned long generation; /* bumped for each run, so workers know there is new work */
  int n_joined;             /* workers counted in for the runs (under mu) */
  int busy;                 /* workers still inside the current run */
  int quit;
  prx_task_fn fn;
  void *ctx;
  size_t n_tasks;
  atomic_size_t next;
};

int prx_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static void drain(prx_pool *p) {
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n_tasks) break;
    p->fn(p->ctx, i);
  }
}

static void *worker(void *arg) {
  prx_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  unsigned long seen = p->generation; /* the run in progress, if any, is not this worker's */
  p->n_joined++;
  for (;;) {
    while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->quit) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    drain(p);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void *starter_main(void *arg) {
  prx_pool *p = arg;
  for (int i = 0; i < p->n_threads - 1; i++) {
    pthread_mutex_lock(&p->mu);
    int quit = p->quit;
    pthread_mutex_unlock(&p->mu);
    if (quit || pthread_create(&p->workers[i], NULL, worker, p) != 0) break;
    p->n_created = i + 1;
  }
  return NULL;
}

prx_status prx_pool_create(int threads, prx_pool **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_pool_create: NULL output pointer");
  *out = NULL;
  if (threads <= 0) threads = prx_cpu_count();
  if (threads > 1024)
    return prx_fail(PRX_ERR_INVALID, "thread count %d is absurd (max 1024)", threads);
  prx_pool *p = calloc(1, sizeof *p);
  if (!p) return prx_fail(PRX_ERR_NOMEM, "cannot allocate a thread pool");
  p->n_threads = threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (threads > 1) {
    p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
    if (!p->workers) {
      prx_pool_destroy(p);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate a thread pool");
    }
    if (pthread_create(&p->starter, NULL, starter_main, p) != 0) {
      prx_pool_destroy(p);
      return prx_fail(PRX_ERR_NOMEM, "cannot start the thread pool's %d workers", threads - 1);
    }
    p->has_starter = 1;
  }
  *out = p;
  return PRX_OK;
}

void prx_pool_destroy(prx_pool *p) {
  if (!p) return;
  if (p->workers) {
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    if (p->has_starter) pthread_join(p->starter, NULL); /* it makes no worker after quit */
    /* the workers made after the broadcast see quit when they take the lock */
    for (int i = 0; i < p->n_created; i++) pthread_join(p->workers[i], NULL);
    free(p->workers);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  free(p);
}

int prx_pool_threads(const prx_pool *p) { return p ? p->n_threads : 1; }

void prx_pool_run(prx_pool *p, prx_task_fn fn, void *ctx, size_t n_tasks) {
  if (n_tasks == 0) return;
  if (!p || p->n_threads == 1 || n_tasks == 1) {
    for (size_t i = 0; i < n_tasks; i++) fn(ctx, i);
    return;
  }
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n_tasks = n_tasks;
  atomic_store(&p->next, 0);
  p->busy = p->n_joined; /* the workers started by now; those starting later skip this run */
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  drain(p);
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static pthread_mutex_t fftw_mu = PTHREAD_MUTEX_INITIALIZER;
void prx_fftw_lock(void) { pthread_mutex_lock(&fftw_mu); }
void prx_fftw_unlock(void) { pthread_mutex_unlock(&fftw_mu); }
