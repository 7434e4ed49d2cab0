/* What the pipeline tests (test_pipeline*.c) share: the running hash they push through
 * src/pipeline, whose word i depends on every earlier sample and on its stream position, so that
 * a lost, repeated or reordered block, a wrong position or a torn buffer changes every later
 * output; the input as files (raw ci16, a SigMF recording, a SigMF archive) for the
 * prx_iq_reader sources and a pipeline over such a reader; and a counting allocation hook. */
#ifndef PRX_PIPE_TEST_H
#define PRX_PIPE_TEST_H

#include "testutil.h"

#include "pipeline/pipeline.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The words the flush (compute called with no input) appends after the stream's last sample. */
#define PIPE_FLUSH_WORDS 5

/* Hashes x[0..n-1], the samples at stream positions pos.., into y[0..n-1], carrying *state. */
void pipe_hash_block(uint32_t *state, const uint32_t *x, size_t n, uint64_t pos, uint32_t *y);
/* Appends the PIPE_FLUSH_WORDS flush words of a stream that ends at position pos to y. */
void pipe_hash_flush(uint32_t *state, uint64_t pos, uint32_t *y);
/* The serial reference: the whole of x[0..n-1] in one loop from state 1, then the flush words.
 * Returns n + PIPE_FLUSH_WORDS. */
size_t pipe_hash_reference(const uint32_t *x, size_t n, uint32_t *y);
/* The tests' input: n random words from seed into x, and their serial reference
 * (pipe_hash_reference) into ref, n + PIPE_FLUSH_WORDS words. */
void pipe_test_input(uint64_t seed, uint32_t *x, size_t n, uint32_t *ref);
/* 1 when y starts with the output of the first m samples of x, the reference of x[0..m-1] (with
 * its flush words when flushed). */
int pipe_hash_prefix_ok(const uint32_t *x, const uint32_t *y, size_t m, int flushed);

/* A fresh temporary folder holding n samples x as a raw ci16 file (a ci16 sample is 4 bytes: the
 * words are the samples), a SigMF recording (meta + data) and a SigMF archive. */
typedef struct {
  char dir[64], raw[128], meta[160], data[160], archive[160];
} pipe_files;
/* Makes them (failures are CHECKed); returns 0 when the folder could not be made. */
int pipe_files_make(pipe_files *f, const char *name, const uint32_t *x, size_t n);
/* Removes the files and the folder. */
void pipe_files_remove(const pipe_files *f);
/* Writes bytes from p to path, replacing it (a failure is CHECKed). */
void pipe_write_file(const char *path, const void *p, size_t bytes);

/* A pipeline over a prx_iq_reader (pipe_iq_config) whose compute stage hashes each block into y
 * as pipe_hash_block does (the flush adds nothing), counts the samples and notes a block at the
 * wrong stream position; pause_us pauses each call (a file cut then lands mid-stream). */
typedef struct {
  uint32_t state;
  uint64_t pos;
  uint32_t *y;
  size_t n;
  int bad_pos;
  unsigned pause_us;
} pipe_iq_sink;
/* The configuration: rd's 4-byte samples in blocks of block samples, read by `readers` positional
 * readers (in_depth readers + 3), into sink s (made fresh, hashing into y); nothing written. */
prx_pipe_config pipe_iq_config(prx_iq_reader *rd, size_t block, int readers, pipe_iq_sink *s,
                               uint32_t *y);
/* Runs c (from pipe_iq_config); *n the samples computed (0 after a position error). */
prx_status pipe_iq_run(const prx_pipe_config *c, prx_pipe_result *r, size_t *n);
/* A write stage that writes nothing (compute stages that keep their output themselves). */
prx_status pipe_no_write(void *ctx, int w, const void *out, size_t n, uint64_t block);

/* An allocation hook (prx_pipe_config's alloc and free, alloc_ctx a pipe_alloc_count) that counts
 * its calls and fails the fail_at-th allocation (1-based; 0 never). */
typedef struct {
  atomic_int allocs, frees, fail_at;
} pipe_alloc_count;
void *pipe_count_alloc(void *ctx, size_t bytes);
void pipe_count_free(void *ctx, void *p);

#endif
