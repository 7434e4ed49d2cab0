/* The receiver's device-resident path on the CUDA backend (rx_gpu.c). Not installed.
 *
 * Each block of input crosses PCIe once (from the caller's buffer: a DMA where it is pinned),
 * the channelizer writes the selected channels' rows into device memory, each demodulator bank
 * reads its group's rows there (the group delay dropped by offsetting the row pointers), and only
 * the bits (and the LLRs when asked) come back; the channel samples come back only for
 * on_channel. Two streams overlap the work of consecutive blocks of one call: the copy and the
 * channelizer of block i + 1 run on one while the banks demodulate block i on the other. Every
 * block of a call is delivered before the call returns, as on the CPU. */
#ifndef PRX_RX_GPU_H
#define PRX_RX_GPU_H

#include "polyrx/rx.h"

struct rx_gpu;

/* Creates rx->gpu for a receiver whose channelizer and banks run on the CUDA backend (rx->chan,
 * the banks and rx->stride made). */
prx_status rx_gpu_create(prx_rx *rx);
void rx_gpu_destroy(struct rx_gpu *gpu); /* waits for its streams; accepts NULL */
void rx_gpu_reset(prx_rx *rx);           /* waits for its streams, forgets the block in flight */
prx_status rx_gpu_execute(prx_rx *rx, const void *in, size_t n);
prx_status rx_gpu_flush(prx_rx *rx);

/* For the benchmarks: serial 1 waits for each stage before the next (no overlap), so that the
 * times below split a block's cost between the input copy, the channelizer and the demodulators
 * (banks and the bits' copies back); with overlap (the default) the copy and channelizer time
 * counts only what the demodulators did not hide. Seconds since create or reset, host clock. */
void prx_rx_gpu_set_serial(prx_rx *rx, int serial);
void prx_rx_gpu_get_times(const prx_rx *rx, double *copy_s, double *chan_s, double *demod_s);

#endif
