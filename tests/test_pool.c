/* The worker pool (src/core/pool.c), whose workers a thread of its own starts while its maker
 * goes on: runs begun at once after the making (before any worker, or some, have started), runs
 * while workers are still starting (tasks long enough for them to join mid-run), many runs in a
 * row, and a pool made and ended without a run. Every task of every run is done exactly once and
 * before the run returns; the pool ends cleanly whatever its workers' state. */
#include "testutil.h"

#include "core/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TASKS 97

typedef struct {
  atomic_int done[MAX_TASKS];
  long spin_ns; /* each task's duration: workers join while a run is going on */
} job;

static void spin(long ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void task(void *ctx, size_t i) {
  job *j = ctx;
  if (j->spin_ns) spin(j->spin_ns);
  atomic_fetch_add(&j->done[i], 1);
}

/* One run of n tasks on p: each done exactly once when the run returns; 0 when so. */
static int run_once(prx_pool *p, size_t n, long spin_ns) {
  static job j;
  for (size_t i = 0; i < MAX_TASKS; i++) atomic_store(&j.done[i], 0);
  j.spin_ns = spin_ns;
  prx_pool_run(p, task, &j, n);
  for (size_t i = 0; i < MAX_TASKS; i++)
    if (atomic_load(&j.done[i]) != (i < n ? 1 : 0)) return 1;
  return 0;
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 20261203);
  const int threads[] = {2, 3, 8, 17};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    int bad = 0, made = 0;
    for (int it = 0; it < 150; it++) {
      prx_pool *p = NULL;
      if (prx_pool_create(threads[t], &p) != PRX_OK || !p) {
        CHECK(0, "%d threads: the pool is not made: %s", threads[t], prx_last_error());
        break;
      }
      made++;
      CHECK(prx_pool_threads(p) == threads[t], "%d threads asked, %d said", threads[t],
            prx_pool_threads(p));
      int runs = (int)(test_rng_u64(&rng) % 6); /* 0: made and ended without a run */
      for (int r = 0; r < runs; r++) {
        size_t n = 1 + (size_t)(test_rng_u64(&rng) % MAX_TASKS);
        long spin_ns = r == 0 && it % 3 == 0 ? 20000 : 0;
        bad += run_once(p, n, spin_ns);
      }
      prx_pool_destroy(p);
    }
    CHECK(bad == 0 && made == 150, "%d threads: %d run(s) with a task not done exactly once",
          threads[t], bad);
  }
  /* a pool whose workers have all started: many short runs in a row */
  prx_pool *p = NULL;
  CHECK(prx_pool_create(8, &p) == PRX_OK, "an 8-thread pool");
  if (p) {
    spin(20000000); /* 20 ms: every worker in */
    int bad = 0;
    for (int r = 0; r < 2000; r++) bad += run_once(p, 1 + (size_t)(r % MAX_TASKS), 0);
    CHECK(bad == 0, "%d of 2000 runs with a task not done exactly once", bad);
    prx_pool_destroy(p);
  }
  prx_pool_destroy(NULL);
  CHECK(prx_pool_create(2, NULL) == PRX_ERR_INVALID, "a NULL output is refused");
  return test_finish("test_pool");
}
