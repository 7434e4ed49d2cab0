/* Internal helpers shared by every part of the library (not installed). */
#ifndef PRX_INTERNAL_H
#define PRX_INTERNAL_H

#include "polyrx/core.h"

#include <stddef.h>

#if defined(__GNUC__)
#define PRX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PRX_PRINTF(a, b)
#endif

/* Records a formatted message as this thread's last error and returns status, so that a
 * check reads: if (k % 2) return prx_fail(PRX_ERR_INVALID, "channels must be even, got %u", k); */
prx_status prx_fail(prx_status status, const char *fmt, ...) PRX_PRINTF(2, 3);

/* 64-byte aligned allocation (cache line, AVX-512 safe), zero-filled; NULL on failure or 0 bytes.
 * Checks n * size for overflow. */
void *prx_alloc(size_t n, size_t size);
void prx_free(void *p); /* accepts NULL */

/* A fixed set of worker threads made once (in an object's _create) and reused by every execute:
 * prx_pool_run calls fn(ctx, i) for i in [0, n_tasks) spread over the threads (the caller's
 * thread works too) and returns when all are done. A pool of 1 thread runs inline. */
typedef struct prx_pool prx_pool;
typedef void (*prx_task_fn)(void *ctx, size_t task);
prx_status prx_pool_create(int threads, prx_pool **out); /* threads <= 0: all cores */
void prx_pool_destroy(prx_pool *p);                       /* accepts NULL */
int prx_pool_threads(const prx_pool *p);
void prx_pool_run(prx_pool *p, prx_task_fn fn, void *ctx, size_t n_tasks);

/* FFTW's planner is not thread-safe: every plan/destroy in the library goes through this lock. */
void prx_fftw_lock(void);
void prx_fftw_unlock(void);

#endif
