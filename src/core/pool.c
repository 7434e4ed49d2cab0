/* A persistent worker pool: threads are made once and woken for each parallel loop, so an
 * execute call neither creates threads nor allocates. Tasks are handed out by an atomic counter. */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct prx_pool {
  int n_threads; /* including the caller */
  pthread_t *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  unsigned long generation; /* bumped for each run, so workers know there is new work */
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
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
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

prx_status prx_pool_create(int threads, prx_pool **out) {
  if (!out) return prx_fail(PRX_ERR_INVALID, "prx_pool_create: NULL output pointer");
  *out = NULL;
  if (threads <= 0) threads = prx_cpu_count();
  if (threads > 1024) return prx_fail(PRX_ERR_INVALID, "thread count %d is absurd (max 1024)", threads);
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
    for (int i = 0; i < threads - 1; i++) {
      if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
        p->n_threads = i + 1; /* destroy joins the ones that started */
        prx_pool_destroy(p);
        return prx_fail(PRX_ERR_NOMEM, "cannot start worker thread %d of %d", i + 1, threads - 1);
      }
    }
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
    for (int i = 0; i < p->n_threads - 1; i++) pthread_join(p->workers[i], NULL);
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
  p->busy = p->n_threads - 1;
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
