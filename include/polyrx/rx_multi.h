/* polyrx receiver across several workers: the stream cut into segments dealt to W receivers
 * (polyrx/rx.h), each on its own thread and its own GPU (CUDA device ordinals, a device may be
 * listed twice) or on the CPU, and their outputs stitched back into each carrier's one stream.
 *
 * Segments: the input is cut at multiples of segment_samples; segment g is received by worker
 * g mod W as a stream of its own that starts on the single run's grid (a multiple of K input
 * samples and of every carrier's CFO span: docs/ARCHITECTURE.md) at least lead_samples before
 * the segment (the channelizer's prototype and the demodulator's estimates, which reach back
 * over blocks and up to 4 CFO spans, settle there) and ends tail_samples after it (the span
 * that holds the seam is estimated whole, and the filters' tails lie beyond the seam). Up to W
 * segments run at once; the call that completes them returns when they are stitched.
 *
 * Stitching (per carrier): with the grid, a worker's spans, blocks and samples past its first
 * four spans are the single run's, so its estimates and bits are too (its NCO and mixer phases
 * start at its own start: the LLRs agree to float rounding); its symbol count and timing's
 * integer part start at its own start, and without differential or pilot decisions its
 * quarter-turn. The stitcher finds the symbol shift and the turn by matching the last symbols
 * before the seam in the new worker's bits against the previous worker's (the shift searched
 * within the clock offsets supported, +-5000 ppm): it keeps the previous worker's symbols up to
 * the seam and the new worker's from the seam on, each symbol once. A worker whose run does not
 * match (its stream started in a gap: a wrong pilot frame, a timing from noise) while the
 * carrier has a signal in it is run again from up to two grid steps earlier. A seam still without a
 * match is cut where the symbol rates predict, so a symbol may be lost or repeated there
 * (prx_rx_multi_seams counts them). The demodulator's timing locks only with blocks of 512 symbols
 * or more: with shorter blocks it depends on where a stream starts, and the workers' bits differ
 * from the single run's at low Es/N0 (docs/ARCHITECTURE.md).
 *
 * Output: on_output as for prx_rx, from the thread that calls execute or flush, each carrier's
 * symbols in stream order. on_channel is not supported.
 */
#ifndef POLYRX_RX_MULTI_H
#define POLYRX_RX_MULTI_H

#include "polyrx/rx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PRX_RX_MULTI_MAX_WORKERS 64

typedef struct {
  prx_rx_config rx;       /* every worker's receiver; rx.device is replaced per worker, and
                             rx.threads (0: all cores) is shared among the workers */
  const int *devices;     /* CUDA device ordinals, one per worker (repeats allowed: several
                             workers on one GPU); NULL: CPU workers */
  size_t n_devices;       /* 1 .. PRX_RX_MULTI_MAX_WORKERS when devices is set */
  unsigned cpu_workers;   /* without devices: the worker count (1 .. 64, default 2) */
  size_t segment_samples; /* input samples per segment (0: 2^24, at least 4 lead-ins) */
  size_t lead_samples;    /* least lead-in before each segment (0: derived from the carriers);
                             the start is then rounded down to the grid */
  size_t tail_samples;    /* run-out after each segment (0: derived from the carriers) */
} prx_rx_multi_config;

prx_rx_multi_config prx_rx_multi_config_default(void);

typedef struct prx_rx_multi prx_rx_multi;

/* Validates (as prx_rx_create, plus the workers), creates every worker's receiver on its own
 * thread (pinned to the CPUs of its GPU's NUMA node where the host has several). Errors as
 * prx_rx_create; PRX_ERR_UNSUPPORTED for on_channel. */
prx_status prx_rx_multi_create(const prx_rx_multi_config *cfg, prx_rx_multi **out);
void prx_rx_multi_destroy(prx_rx_multi *m); /* accepts NULL */

/* Feeds n samples (rx.in_format); the segments completed go to the workers and their stitched
 * output to on_output before the call returns. */
prx_status prx_rx_multi_execute(prx_rx_multi *m, const void *in, size_t n);
/* Ends the stream: the remaining segments are received and every carrier's remaining symbols
 * go to on_output; a new stream can start. */
prx_status prx_rx_multi_flush(prx_rx_multi *m);

size_t prx_rx_multi_n_workers(const prx_rx_multi *m);
/* The segment, the longest lead-in (the least, then rounded down to the grid) and the run-out
 * in use (input samples). */
void prx_rx_multi_get_layout(const prx_rx_multi *m, size_t *segment, size_t *lead, size_t *tail);
/* Carrier c's stats from the worker that received the latest segment (its symbols, Es/N0, CFO
 * and clock over that segment's stream), as prx_rx_get_stats. */
prx_status prx_rx_multi_get_stats(const prx_rx_multi *m, size_t c, prx_rx_stats *out);
/* Worker w's receiver (its backend, groups, taps, channel rate), for reports; NULL beyond W. */
const prx_rx *prx_rx_multi_worker(const prx_rx_multi *m, size_t w);
/* The receiver of the worker that received the latest segment (its stats and times are that
 * segment's stream's; the first worker's before any segment). */
const prx_rx *prx_rx_multi_latest(const prx_rx_multi *m);
/* The CUDA devices for a list of every GPU: NVIDIA's GPUs on the PCI bus (the length of
 * CUDA_VISIBLE_DEVICES's list where it is set), 0 where prx_cuda_available() says none. */
size_t prx_rx_multi_gpu_count(void);
/* Carrier c's seams since create, and those without a match (no signal there, or fewer symbols
 * than the window): cut at the index the workers' symbol rates predict, so a symbol may be
 * lost or repeated there. */
void prx_rx_multi_seams(const prx_rx_multi *m, size_t c, uint64_t *seams, uint64_t *unmatched);
/* Segments received again since create: a worker whose run did not match at its seam (its
 * stream started where a carrier had no signal) starts up to two grid steps earlier. */
uint64_t prx_rx_multi_retries(const prx_rx_multi *m);
/* Symbols of carrier c emitted since create. */
uint64_t prx_rx_multi_symbols(const prx_rx_multi *m, size_t c);

#ifdef __cplusplus
}
#endif
#endif
