/* Shared test helpers: seeded random numbers, float64 error measures, checks, skipping. */
#ifndef PRX_TESTUTIL_H
#define PRX_TESTUTIL_H

#include "polyrx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ctest treats this exit code as "skipped" (SKIP_RETURN_CODE 77). */
#define TEST_SKIP 77

/* Deterministic generator (xoshiro256**), seeded by splitmix64: fresh inputs, fixed seeds. */
typedef struct {
  uint64_t s[4];
} test_rng;
void test_rng_seed(test_rng *r, uint64_t seed);
uint64_t test_rng_u64(test_rng *r);
double test_rng_uniform(test_rng *r); /* [0, 1) */
double test_rng_gauss(test_rng *r);   /* N(0, 1) */
/* complex N(0, sigma^2) per component */
void test_fill_cf32(test_rng *r, prx_cf32 *x, size_t n, double sigma);

/* FNV-1a of n bytes at p continued from h (TEST_FNV_BASIS to start): a fingerprint of outputs
 * that two builds must produce bit for bit. */
#define TEST_FNV_BASIS 0xcbf29ce484222325ull
uint64_t test_fnv1a(uint64_t h, const void *p, size_t n);

/* ||a - b|| / ||b|| computed in float64; b is the reference. */
double test_rel_l2_cf32(const prx_cf32 *a, const prx_cf32 *b, size_t n);
typedef struct {
  double re, im;
} test_cf64;
double test_rel_l2_vs_cf64(const prx_cf32 *a, const test_cf64 *ref, size_t n);

/* Failure count of this test program; CHECK prints and counts, never aborts. */
extern int test_failures;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      test_failures++;                                                                             \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)
/* Asserts that a call succeeded, printing prx_last_error() otherwise. */
#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    prx_status st_ = (call);                                                                       \
    CHECK(st_ == PRX_OK, "%s -> %s: %s", #call, prx_strerror(st_), prx_last_error());              \
  } while (0)
/* Prints a summary line and returns the exit code for main. */
int test_finish(const char *name);

/* Makes a fresh directory $TMPDIR/polyrx-test-NAME-XXXXXX (/tmp without TMPDIR) in dir (n
 * bytes): 0, or -1 after printing why. */
int test_tmpdir(char *dir, size_t n, const char *name);
/* dir/name in one of 4 static buffers used in turn (so up to 4 paths can be in use at once). */
char *test_path(const char *dir, const char *name);
/* Removes a directory test_tmpdir made, with everything in it (a failure is printed). */
void test_tmpdir_remove(const char *dir);
/* The whole file at path, malloc'd with a 0 byte after it (*len its bytes where len is not
 * NULL); NULL if it cannot be read or out of memory. */
char *test_slurp(const char *path, size_t *len);
/* Descriptors open in this process now (entries of /proc/self/fd); -1 where it cannot be read. */
int test_open_fds(void);
/* Entries of directory dir whose names start with prefix. */
int test_files_named(const char *dir, const char *prefix);

/* Standard input replaced by a pipe that a child process fills with the n bytes at p in pieces
 * of 1..max_piece bytes (their sizes from seed): short reads that split samples.
 * test_stdin_feed_stop gives standard input back and ends the child (stopped where it still
 * writes: a reader that stopped early). */
typedef struct {
  int saved; /* the original standard input */
  long pid;  /* the child */
} test_stdin_feed;
void test_stdin_feed_start(test_stdin_feed *f, const void *p, size_t n, uint64_t seed,
                           size_t max_piece);
void test_stdin_feed_stop(test_stdin_feed *f);

#endif
