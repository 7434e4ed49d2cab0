/* The host streaming engine every command shares (internal, not installed):
 *
 *   reader thread ──► ring of input blocks ──► compute (the caller's thread) ──► ring of output
 *   (read callback)   (depth >= 3)             (compute callback)                slots ──► writer
 *                                                                                 thread(s)
 *
 * The reader fills input blocks of block_samples samples while the compute stage works on an
 * earlier block and the writers drain the outputs of a still earlier one; bounded queues (the
 * rings) keep at most in_depth input blocks and out_depth output slots in flight, so memory is
 * fixed whatever the stream's length. Blocks go through every stage in stream order, each once.
 *
 * Compute runs on the thread that calls prx_pipe_run (a GPU context, an object used by one
 * thread at a time, callbacks into the caller stay there). Each of the n_writers writer threads
 * sees every output slot in order (writer w writes its share, e.g. the channels s with
 * s % n_writers == w); a slot is reused when every writer is done with it.
 *
 * End of stream: the reader hands over the last, short block; once compute has taken every
 * block it is called once more with in == NULL, n == 0 (the flush: the filter tails), and the
 * writers write that slot too. The same happens after a read error (a read error, a truncated
 * stream) and after a stop request: every sample read is computed and written, then the run
 * returns the read error (or reports the stop). A compute or write error ends the run at once
 * (no flush: what is written is the output of the blocks before the failed one) and every stage
 * stops at its next block boundary. Every count in prx_pipe_result is exact.
 *
 * Several readers (read_at, n_readers > 1): a file in the page cache is read by one thread at
 * 5-7 GB/s, slower than a GPU takes it (55 GB/s over PCIe), so reader threads fill successive
 * input blocks at once with positional reads; each claims the next block while fewer than
 * in_depth blocks are ahead of compute, and the blocks are handed to compute in stream order, so
 * compute and the writers see the same stream, block for block, as with one reader. Their
 * input blocks are made on first use by the reader that fills them (page-locked memory costs
 * 0.1-0.5 ms per MiB to make: the making overlaps the earlier blocks' reads and computes); one
 * that cannot be made ends the stream there as a PRX_PIPE_SETUP error, what was read before it
 * computed and flushed.
 *
 * Blocks in place (view_at, with read_at): each reader asks first whether its block is already
 * in memory where compute can take it (a file mapped and pinned for the GPU: prx_pipe_map below)
 * and reads only the blocks that are not; compute sees the same stream either way.
 *
 * Stop requests: should_stop is polled by the reader before each read and after a read that
 * failed (a read cut short by a signal is a stop, not an error); the run then ends after at most
 * in_depth + 1 further blocks. With stop_signals set, SIGINT and SIGTERM go to the reader, so
 * that they interrupt a read blocked on a quiet pipe (the caller's handler, installed without
 * SA_RESTART, sets the flag should_stop reads): they are blocked on the calling thread and the
 * writers while the run lasts and unblocked on the reader, then on the calling thread for the
 * flush, once the reader has ended (in the serial mode, on the calling thread throughout). A
 * process-directed signal goes to any thread that does not block it, so a caller that has other
 * threads (worker pools) blocks the two signals before creating them; the calling thread's mask is
 * restored before prx_pipe_run returns. */
#ifndef PRX_PIPELINE_H
#define PRX_PIPELINE_H

#include "polyrx/core.h"
#include "polyrx/io.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Reads up to max samples into buf; *n = 0 and PRX_OK only at the end of the stream. A call may
 * return samples and an error together: the samples are kept, then the error ends the reading. */
typedef prx_status (*prx_pipe_read_fn)(void *ctx, void *buf, size_t max, size_t *n);
/* Reads up to max samples of the stream from sample `first` on into buf (a positional read: a
 * regular file read with pread(2)); *n < max only where the stream ends there (or with an
 * error, the samples kept as with read). Called by several reader threads at once, on different
 * blocks. */
typedef prx_status (*prx_pipe_read_at_fn)(void *ctx, void *buf, size_t max, uint64_t first,
                                          size_t *n);
/* Computes one input block: in holds n samples, the first at stream position pos (samples since
 * the start); in == NULL, n == 0 is the final call (the flush). Writes into out (out_bytes bytes,
 * reused after the writers are done with it) and sets *out_n to what the writers are to see (a
 * count whose meaning the caller defines). Runs on the thread that called prx_pipe_run. */
typedef prx_status (*prx_pipe_compute_fn)(void *ctx, const void *in, size_t n, uint64_t pos,
                                          void *out, size_t *out_n);
/* Writes one output slot (writer `writer` of n_writers; block is the slot's sequence number, the
 * flush slot last). Runs on a writer thread; different writers run concurrently. */
typedef prx_status (*prx_pipe_write_fn)(void *ctx, int writer, const void *out, size_t out_n,
                                        uint64_t block);
/* The block of max samples from stream sample `first` on, in place: *p points at it where its
 * samples are in memory the compute stage can use as they are (a mapped file's pages pinned for
 * the GPU's DMA: prx_pipe_map_view_at) and stay there until view_done has passed them, *n is their
 * count (< max only where the stream ends there); *p = NULL: not in place, the block is read with
 * read_at into an input buffer instead. An error ends the reading as a read error does. Called by
 * the reader threads. */
typedef prx_status (*prx_pipe_view_at_fn)(void *ctx, uint64_t first, size_t max, const void **p,
                                          size_t *n);
/* Called on the compute thread once compute is done with every sample before stream position
 * end (their views may be unpinned). */
typedef void (*prx_pipe_view_done_fn)(void *ctx, uint64_t end);
/* Called once the run's own buffers are made, before its threads start (a map starts pinning
 * then: pinning holds the driver, which page-locked allocations wait for). */
typedef void (*prx_pipe_view_start_fn)(void *ctx);
/* Polled by the reader: non-zero ends the stream as if it had ended there. */
typedef int (*prx_pipe_stop_fn)(void *ctx);
/* Buffer allocation hook (NULL: prx_pipe_host_alloc with the config's pinned flag). */
typedef void *(*prx_pipe_alloc_fn)(void *ctx, size_t bytes);
typedef void (*prx_pipe_free_fn)(void *ctx, void *p);

typedef struct {
  size_t block_samples; /* samples per input block (> 0): large for the GPU */
  size_t sample_size;   /* bytes per input sample (> 0) */
  size_t out_bytes;     /* bytes per output slot (> 0) */
  int in_depth;         /* input blocks in flight, >= 3 (0: 4) */
  int out_depth;        /* output slots in flight, >= 2 (0: 3) */
  int n_writers;        /* writer threads, >= 1 (0: 1) */
  int serial;           /* 1: no threads, read -> compute -> write in a loop on the caller's
                           thread (the same callbacks, the same results) */
  int pinned;           /* 1: page-locked buffers when a CUDA device is usable (for DMA) */
  int stop_signals;     /* 1: SIGINT and SIGTERM interrupt the reader (see above) */
  /* > 0: the one reader (read, not read_at) and the first writer wait for their next buffer by
   * looking every poll_us microseconds instead of sleeping until woken, so that compute hands a
   * block over without a system call (a futex wake each, on a KVM guest an interrupt through the
   * hypervisor to the sleeper's vCPU); the pollers' timer wakes are on their own cores. For a
   * compute stage of one thread and small blocks, where those wakes are a share of its time.
   * 0: they sleep until woken. */
  unsigned poll_us;
  /* > 1: compute wakes the first writer only once that many slots wait for it (and at the end,
   * or before compute itself sleeps for input or a slot), so that a writer much faster than compute
   * (a few kilobytes a block) is woken once for every wake_batch blocks instead of after each: each
   * wake a futex call on compute's thread (on a KVM guest ~30 us with the interrupt to the
   * sleeper's vCPU). At most out_depth (a larger value is out_depth). 0 or 1: every slot. */
  int wake_batch;
  prx_pipe_read_fn read;
  /* optional: the stream's first block, read before the run (beside the caller's set-up):
   * first_samples samples (1..block_samples) in first_block, a buffer of block_samples samples
   * made by prx_pipe_host_alloc. The run takes the buffer over (it is freed in every case, a
   * failed set-up included) as its first input block: compute starts on it at once and the
   * reader reads on from the stream's next sample. Not with read_at or the alloc hooks. */
  void *first_block;
  size_t first_samples;
  /* optional: with n_readers > 1, that many reader threads fill the input blocks at once with
   * positional reads (block b holds samples from b * block_samples on); the stream ends at the
   * first block shorter than block_samples (or with an error, or a stop), the blocks read beyond
   * it are dropped. Used in place of read except in the serial mode. */
  prx_pipe_read_at_fn read_at;
  int n_readers; /* reader threads with read_at, 1..64 (0: 1, i.e. read alone) */
  /* optional, with read_at: each reader asks view_at for its block first and reads it only where
   * the block is not in place; input blocks are then made only for the blocks read (with one
   * reader too). Not in the serial mode. */
  prx_pipe_view_at_fn view_at;
  prx_pipe_view_done_fn view_done;   /* may be NULL */
  prx_pipe_view_start_fn view_start; /* may be NULL */
  void *view_ctx;                    /* passed to view_at and view_done */
  prx_pipe_compute_fn compute;
  prx_pipe_write_fn write;
  prx_pipe_stop_fn should_stop; /* may be NULL */
  void *read_ctx;               /* passed to read (e.g. a prx_iq_reader) */
  void *ctx;                    /* passed to compute, write and should_stop */
  prx_pipe_alloc_fn alloc;      /* NULL: default; else both alloc and free */
  prx_pipe_free_fn free;
  void *alloc_ctx;
} prx_pipe_config;

prx_pipe_config prx_pipe_config_default(void);

/* The bytes of output slots in flight that one compute worker's core is to keep in its own
 * cache: half the 2 MiB L2 of the GPU host's cores, the rest left to the input blocks and the
 * compute stage's own state, so that the worker does not fetch its output lines back to write
 * them again. The measurements behind it, and how far they hold on that host: bench/RESULTS.md,
 * "channelize on 16 cores" (seventh to tenth sessions). */
#define PRX_PIPE_CACHE_BYTES ((size_t)1 << 20)

/* The largest block, max_block halved down to min_block at most, whose out_depth output slots
 * (out_bytes_per_sample bytes of output per input sample), shared among `workers` compute
 * workers, fit PRX_PIPE_CACHE_BYTES per worker; max_block where they fit already. */
size_t prx_pipe_cache_block(size_t max_block, size_t min_block, double out_bytes_per_sample,
                            int out_depth, int workers);

/* The CPU channelizer's block (K channels, D input samples an output, n_sel of them written as
 * cf32) where the pipeline's stages have cores of their own: prx_pipe_cache_block from max_block
 * down to a whole FFT batch of the channelizer's CPU path (at least 4096 samples). The channelize
 * command's rule (cli/chan_setup.c, choose_block), and its benchmark's. */
size_t prx_pipe_chan_cpu_block(size_t max_block, size_t K, size_t D, size_t n_sel, int out_depth,
                               int workers);

typedef enum {
  PRX_PIPE_NONE = 0, /* no error */
  PRX_PIPE_READ,
  PRX_PIPE_COMPUTE,
  PRX_PIPE_WRITE,
  PRX_PIPE_SETUP /* buffers or threads could not be made */
} prx_pipe_stage;

typedef struct {
  uint64_t samples_read;     /* samples the reader handed over (all of them computed unless a
                                compute or write error came first) */
  uint64_t samples_computed; /* samples given to compute with success */
  uint64_t blocks_read;      /* input blocks with samples */
  uint64_t blocks_computed;  /* compute calls that succeeded, the flush included */
  uint64_t blocks_written;   /* output slots every writer wrote with success */
  int flushed;               /* the final compute call ran and every writer wrote it */
  int stopped;               /* should_stop ended the reading */
  int end_of_stream;         /* the reader met the end of the stream */
  prx_pipe_stage failed;     /* the stage of the first error, or NONE */
  prx_status status;         /* the first error (PRX_OK if none) */
  /* the compute stage's sleeps (it found no input block, or no free output slot) and their
   * wall time in ms (the clock is read only around a sleep) */
  uint64_t compute_waits_in, compute_waits_out;
  double ms_compute_wait_in, ms_compute_wait_out;
  /* wall ms from the compute stage's end to the last writer's (a command's recordings finished
   * after their last slot) */
  double ms_writers_after;
} prx_pipe_result;

/* Runs the pipeline to its end (see the top of this file). Returns the first error (its
 * message, raised on whichever thread, is this thread's prx_last_error()), PRX_OK after a clean
 * end of stream or a stop. *res (may be NULL) gets the counts in every case. */
prx_status prx_pipe_run(const prx_pipe_config *cfg, prx_pipe_result *res);

/* prx_pipe_read_fn over a prx_iq_reader (ctx is the reader): files, standard input, SigMF. */
prx_status prx_pipe_iq_read(void *reader, void *buf, size_t max, size_t *n);
/* prx_pipe_read_at_fn over a prx_iq_reader whose prx_iq_reader_positional() is set: sample
 * `first` of the stream is the reader's sample prx_iq_reader_samples() + first (the samples it
 * handed out before, e.g. a detection's look-ahead, are not read again). */
prx_status prx_pipe_iq_read_at(void *reader, void *buf, size_t max, uint64_t first, size_t *n);

/* The attributes of a stage thread's (the pipeline's readers and writers, and the threads a
 * command runs beside them): a 1 MiB stack instead of the C library's default (8 MiB), so that
 * glibc keeps joined threads' stacks in its cache for the next ones rather than unmapping each at
 * the join (a TLB shoot-down on every core the process ran on). Returns attr set up, or NULL
 * (the default attributes) where that fails; the caller destroys a non-NULL one. */
pthread_attr_t *prx_pipe_stage_attr(pthread_attr_t *attr);

/* Host buffers for data that crosses to a GPU: page-locked (cudaHostAlloc in the CUDA module)
 * when pinned is non-zero and the CUDA module is loaded with a usable device; otherwise plain
 * memory, 64-byte aligned. Neither is cleared: every byte a stage reads, the stage before it
 * wrote (a pipeline's blocks and slots), so the pages are first touched where they are written.
 * Free with prx_pipe_host_free, which knows which one it was. NULL on failure. */
void *prx_pipe_host_alloc(size_t bytes, int pinned);
void prx_pipe_host_free(void *p);
/* A process-wide cache of freed page-locked buffers, for a process that runs many commands
 * (polyrx serve): prx_pipe_host_free keeps a page-locked buffer (up to max_bytes in all, the
 * oldest freed first when full) and prx_pipe_host_alloc hands it out again for the same size,
 * instead of pinning and unpinning the same memory for every run. 0 (the default) turns it off
 * and frees what it holds. The figures: buffers and bytes held, allocations it served. */
void prx_pipe_host_cache(size_t max_bytes);
void prx_pipe_host_cache_stats(size_t *buffers, size_t *bytes, unsigned long long *hits);

/* ---- the input in place (pipe_map.c) ----
 *
 * A regular file's data mapped read-only and handed to the compute stage where it lies, for a
 * GPU that copies it by DMA: no read copy and no page-locked input blocks. Threads of the map
 * populate the mapping (MADV_POPULATE_READ: the page cache's pages, or the disk's reads, taken
 * while the CUDA runtime starts) and pin it for DMA in chunks, one at a time (the CUDA module's
 * host_register, read-only; it waits for the device's context), in stream order, at most
 * window_bytes ahead of what compute is done with; chunks compute is done with are unpinned.
 * prx_pipe_map_view_at is the pipeline's view_at: a block inside one pinned chunk and inside the
 * file as it is now (fstat) is handed over in place; every other block (a chunk that could not be
 * pinned, a file cut or grown since it was opened, a partial sample at the end, a block across two
 * chunks) is read with the reader's pread, so the stream, its end and its errors are those of the
 * readers.
 *
 * The CPU never reads the mapping (a page of a file cut while mapped raises SIGBUS on a CPU's
 * touch; the pinned pages stay valid for DMA whatever happens to the file): its views are for
 * compute stages that only copy the samples to the GPU (the integer formats; a cf32 input's
 * non-finite samples are zeroed on the CPU, so it takes the readers). */
typedef prx_status (*prx_pipe_pin_fn)(void *ctx, void *p, size_t bytes);
typedef void (*prx_pipe_unpin_fn)(void *ctx, void *p);

typedef struct {
  int threads;         /* populating and pinning threads, 1..16 (0: 4) */
  size_t chunk_bytes;  /* bytes pinned per call, a multiple of the page size (0: 64 MiB) */
  size_t window_bytes; /* bytes pinned ahead of compute, besides the chunk compute is in, at
                          most; >= 2 chunks (0: 1 GiB) */
  int gated;           /* 1: no pinning before prx_pipe_map_start */
  /* the pinning (NULL: the CUDA module's host_register / host_unregister; tests give others) */
  prx_pipe_pin_fn pin;
  prx_pipe_unpin_fn unpin;
  void *pin_ctx;
} prx_pipe_map_config;

prx_pipe_map_config prx_pipe_map_config_default(void);

typedef struct prx_pipe_map prx_pipe_map;

/* Maps the data of reader r (a positional reader whose next sample lies on a page boundary of the
 * file: raw files and SigMF data files; not a SigMF archive's member) and starts the map's
 * threads. PRX_ERR_UNSUPPORTED where the input cannot be mapped so (the caller keeps its
 * readers). r must outlive the map; its sequential reads may go on until the pipeline starts (a
 * detection's look-ahead: the views start at the samples it has handed out). */
prx_status prx_pipe_map_open(prx_iq_reader *r, const prx_pipe_map_config *c, prx_pipe_map **out);
/* Lets a gated map pin (accepts NULL; the pipeline's view_start over a map): once the caller's
 * CUDA objects and page-locked buffers are made, since pinning holds the driver, which making
 * them waits for (measured on the H200 host: a channelizer's making 3 -> 60-90 ms, 3 MiB of
 * page-locked output slots 4 -> 45-55 ms with the pinning beside them). */
void prx_pipe_map_start(void *map);
/* prx_pipe_view_at_fn and prx_pipe_view_done_fn over a map (ctx is the map); a gated map's views
 * before its start are left to the reads. */
prx_status prx_pipe_map_view_at(void *map, uint64_t first, size_t max, const void **p, size_t *n);
void prx_pipe_map_view_done(void *map, uint64_t end);

typedef struct {
  uint64_t bytes;        /* the data mapped */
  uint64_t pinned_bytes; /* pinned with success, over the run */
  unsigned chunks, chunks_failed;
  uint64_t views, reads; /* blocks handed over in place; blocks left to read */
  double ms_first_pin;   /* from open to the first chunk pinned (the device's context) */
  double ms_populate;    /* summed over the threads */
  double ms_pin;         /* summed over the chunks, the first one's wait for the context
                            included */
  double ms_view_wait;   /* the readers' waits for a chunk, summed */
  char why[160];         /* the first pin failure's message ("" none) */
} prx_pipe_map_stats;

void prx_pipe_map_get_stats(const prx_pipe_map *m, prx_pipe_map_stats *s);
/* Stops the threads, unpins and unmaps (accepts NULL). */
void prx_pipe_map_close(prx_pipe_map *m);

#endif
