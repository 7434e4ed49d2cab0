/* The receiver's device-resident path on the CUDA backend (rx_gpu.c). Not installed.
 *
 * Each block of input crosses PCIe once (from the caller's buffer: a DMA where it is pinned),
 * the channelizer appends the selected channels' outputs to device rows that gather several
 * blocks (a batch: about one CFO span of samples per row), each demodulator bank reads its
 * group's rows there once per batch (the group delay dropped by offsetting the row pointers),
 * and only the bits (and the LLRs when asked) come back, into pinned host rows, beside the next
 * batch's banks; the channel samples come back only for on_channel (then a batch is one block).
 * Within one call the copies and the channelizer run up to a batch ahead of the banks (four
 * streams ordered by events; the host waits only in the banks and for the bits of the batch
 * before), so the copy engine keeps going while the banks run. Every bit the banks complete from
 * a call's blocks is delivered before the call returns, as on the CPU; a call's last batch whose
 * bank call would complete none joins the next bank call (the next call's, or the flush's: the
 * stream's end is one bank call per group). */
#ifndef PRX_RX_GPU_H
#define PRX_RX_GPU_H

#include "polyrx/rx.h"

struct rx_gpu;

/* Creates rx->gpu for a receiver whose channelizer and banks run on the CUDA backend (rx->chan,
 * the banks and rx->stride made). */
prx_status rx_gpu_create(prx_rx *rx);
void rx_gpu_destroy(struct rx_gpu *gpu); /* waits for its streams; accepts NULL */
/* Waits for its streams and forgets the batches in flight and the bits not yet delivered. */
void rx_gpu_reset(prx_rx *rx);
/* Every bit the banks complete from the call's blocks delivered before it returns (its last
 * batch, where its bank call would complete none, left to the next call or the flush); on an
 * error its streams are waited for and the undelivered bits dropped. */
prx_status rx_gpu_execute(prx_rx *rx, const void *in, size_t n);
/* The stream's end, its bits delivered; an error may leave work queued, which prx_rx_flush's
 * reset of the stream (rx_gpu_reset) waits for. */
prx_status rx_gpu_flush(prx_rx *rx);

/* For the benchmarks: serial 1 waits for each stage before the next (no overlap), so that the
 * times below split a block's cost between the input copy, the channelizer and the demodulators
 * (banks and the bits' copies back); with overlap (the default) the copy and channelizer time
 * counts their queueing and the wait at the call's end, and the demodulators' the waits for the
 * copies and channelizer in flight before their bits came back. Seconds since create or reset,
 * host clock. */
void prx_rx_gpu_set_serial(prx_rx *rx, int serial);
void prx_rx_gpu_get_times(const prx_rx *rx, double *copy_s, double *chan_s, double *demod_s);
/* The receiver's set-up, seconds, in the order it runs (`polyrx rx` prints them with
 * POLYRX_TIMING): the demodulator banks (on CUDA their first call into the device waits for the
 * device's context, after their CPU part), the prototype and the channelizer, the host rows, and
 * on the GPU path its streams and events, its input slots and row window (gpu_ring), the
 * flush's zeros and the output buffers. */
typedef struct {
  double banks, chan, rows, gpu_streams, gpu_ring, gpu_zero, gpu_outputs;
} prx_rx_setup_times;
void prx_rx_get_setup_times(const prx_rx *rx, prx_rx_setup_times *t);
/* The input slots (groups of blocks whose copies may be in flight); 0 off the GPU path. */
size_t prx_rx_gpu_ring_slots(const prx_rx *rx);
/* The blocks a bank call takes at most (a batch); 0 off the GPU path. */
size_t prx_rx_gpu_batch_blocks(const prx_rx *rx);
/* The consecutive blocks of a batch that one input copy and one channelizer call take, at most
 * (default: as many as make 2^24 samples, 1 with on_channel: fewer host launches for small
 * blocks, fewer channelizer calls, each of which pays its last wave of blocks). For the tests only
 * (test_rx_cuda: 1 reuses the input slots block by block): set between calls, within that default.
 * Returns the value in use; 0 off the GPU path. */
size_t prx_rx_gpu_set_merge(prx_rx *rx, size_t blocks);
/* The flushes' wall time since create or reset, seconds, host clock: t[0] the channelizer's
 * tail queued (and the last execute's deferred bank call where it could not join the flush's),
 * t[1] the banks' call for the stream's end (the last batch where execute deferred it, the tail,
 * the flush: its waits for the device, its serial passes), t[2] the bits back, the banks' reports
 * of the last spans settled beside that copy, and the bits delivered; t[3], t[4]: the banks'
 * waits for the device and serial passes in t[1] and t[2]. */
void prx_rx_gpu_get_flush_times(const prx_rx *rx, double t[5]);
/* The channel samples per row of the last execute's last batch that wait in the row window for
 * the next bank call (execute deferred its bank call: it would complete no symbols); 0 where none
 * or off the GPU path. Until that call the carriers' stats (prx_rx_get_stats: demod.samples)
 * count these samples out: the CPU path's figure less this. */
size_t prx_rx_gpu_deferred_samples(const prx_rx *rx);
/* The row window's moves to its start since create (the banks' history moved, every few
 * batches); 0 off the GPU path. */
size_t prx_rx_gpu_window_moves(const prx_rx *rx);
/* The serial mode's wall time of those moves, each waited for (part of the channelizer's time of
 * prx_rx_gpu_get_times), seconds since create or reset; 0 with overlap or off the GPU path. */
double prx_rx_gpu_move_seconds(const prx_rx *rx);

/* For the benchmarks: one record per bank call of execute, i.e. per batch of blocks (host clock,
 * seconds): when its first block's copy and channelizer were queued, its blocks and the blocks
 * queued beyond them when its banks were called, when they were called and returned, when the
 * host went on (the batch before delivered where this one completed symbols, this one's copy
 * back queued), the banks' own waits for the device and serial passes (their driver's timing),
 * the symbols it completed (> 0: a CFO span ended) and the output buffers it had to grow (create
 * sizes them for every call: a buffer grown in a call waits for the device). */
typedef struct {
  double t_queue, t_demod, t_banks, t_back;
  double bank_wait, bank_serial;
  unsigned ahead, blocks, grows;
  size_t symbols;
} prx_rx_gpu_trace;
/* Records the next cap batches into rec (NULL or 0: off); the count so far. */
void prx_rx_gpu_set_trace(prx_rx *rx, prx_rx_gpu_trace *rec, size_t cap);
size_t prx_rx_gpu_trace_count(const prx_rx *rx);

#endif
